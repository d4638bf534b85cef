"""Custom derivative rules: numerical stability, and functions without Python source.

1. softplus(x) = log(1 + exp(x)). Differentiated as written, exp(x) overflows for large x
   and the gradient is inf/inf = nan. A `custom_vjp` gives the stable derivative, the
   logistic function, and the generated code calls its `fwd` and `bwd` by name.
2. |x| written as sqrt(x * x). At 0 the chain rule gives 0 / (2 sqrt(0)): nan, as NumPy's
   float64 division gives it. A `custom_jvp` gives forward mode the subgradient 0 there.
3. math.ldexp(x, i) = x * 2**i is a C function: s2sad cannot read its source and refuses
   it with a MissingRuleError until `defvjp` and `defjvp` give its rules, which are then
   inlined into the generated code as plain arithmetic.

Run: python examples/custom_rules.py
"""
import math
import warnings

import numpy as np

import s2sad


# -- 1. a numerically stable softplus ---------------------------------------------------
def naive_softplus_loss(w, x):
    return np.sum(np.log1p(np.exp(w * x)))


@s2sad.custom_vjp
def softplus(z):
    return np.logaddexp(0.0, z)          # log(1 + exp(z)) without overflow


def softplus_fwd(z):
    return softplus(z), z


def softplus_bwd(z, g):
    sigmoid = np.exp(-np.logaddexp(0.0, -z))      # 1 / (1 + exp(-z)), stable both ways
    return (g * sigmoid,)


softplus.defvjp(softplus_fwd, softplus_bwd)


def softplus_loss(w, x):
    return np.sum(softplus(w * x))


# -- 2. sqrt(x * x) at 0 ------------------------------------------------------------------
@s2sad.custom_jvp
def smooth_abs(x):
    return math.sqrt(x * x)


@smooth_abs.defjvp
def smooth_abs_jvp(primals, tangents):
    (x,), (x_dot,) = primals, tangents
    y = math.sqrt(x * x)
    if y == 0.0:
        return y, 0.0                    # a subgradient; the formula divides by zero
    return y, x_dot * x / y


def naive_abs_energy(x):
    return math.sqrt(x * x) + 0.5 * x


def abs_energy(x):
    return smooth_abs(x) + 0.5 * x


# -- 3. a function without Python source --------------------------------------------------
def scaled(x, k):
    return math.ldexp(x * x, k)          # x**2 * 2**k


def main():
    x = np.array([1.0, 2.0, -3.0])
    w = 400.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)     # exp overflows
        naive = s2sad.grad(naive_softplus_loss)(w, x)
    stable = s2sad.grad(softplus_loss)(w, x)
    print(f"1. d/dw softplus loss at w={w}: naive {naive}, custom_vjp {stable}")
    assert math.isnan(naive) and stable == 1.0 + 2.0
    print(s2sad.source(softplus_loss, at=(w, x)))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)     # 0 / 0
        naive = s2sad.jvp(naive_abs_energy, (0.0,), (1.0,))[1]
    print(f"2. naive d/dx sqrt(x*x) at 0: {naive} (2 x / (2 sqrt(x*x)) is 0 / 0)")
    assert math.isnan(naive)
    value, slope = s2sad.jvp(abs_energy, (0.0,), (1.0,))
    print(f"   custom_jvp at 0: value {value}, slope {slope}")
    assert (value, slope) == (0.0, 0.5)
    assert s2sad.jvp(abs_energy, (-2.0,), (1.0,))[1] == -0.5
    print(s2sad.source(abs_energy, mode="forward"))

    try:
        s2sad.grad(scaled)(1.5, 3)
        raise AssertionError("math.ldexp has no rule yet")
    except s2sad.MissingRuleError as exc:
        print("3. before the rule:", str(exc).splitlines()[0][:100], "...")
    s2sad.defvjp(math.ldexp, "x, i", "g * 2.0 ** i", None)      # i is an integer
    s2sad.defjvp(math.ldexp, "x, i", "t * 2.0 ** i", None)
    g = s2sad.grad(scaled)(1.5, 3)
    _, d = s2sad.jvp(scaled, (1.5, 3), (1.0, None))
    print(f"   after: grad {g}, jvp {d} (2 x 2**k = {2 * 1.5 * 8})")
    assert g == d == 24.0
    print(s2sad.source(scaled, at=(1.5, 3)))


if __name__ == "__main__":
    main()
