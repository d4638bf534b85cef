"""Two classic reverse-mode examples, differentiated by s2sad and checked by hand.

    f(x1, x2) = log(x1) + x1 * x2 - sin(x2)    grad f = (1/x1 + x2, x1 - cos(x2))
    g(x1, x2) = x1 * x2 + log(x1 ** 2)         grad g = (x2 + 2/x1, x1)

Run it: python examples/seed_functions.py
Show a generated derivative: s2sad show examples/seed_functions.py:f --wrt x1,x2
"""
import math

import s2sad


def f(x1, x2):
    return math.log(x1) + x1 * x2 - math.sin(x2)


def g(x1, x2):
    return x1 * x2 + math.log(x1 ** 2)


def grad_f(x1, x2):
    """The gradient of f, derived by hand."""
    return (1 / x1 + x2, x1 - math.cos(x2))


def grad_g(x1, x2):
    """The gradient of g, derived by hand."""
    return (x2 + 2 / x1, x1)


def main():
    points = [(2.0, 5.0), (3.0, 5.0)]
    for fn, exact in ((f, grad_f), (g, grad_g)):
        dfn = s2sad.grad(fn, wrt=(0, 1))
        for x1, x2 in points:
            got = dfn(x1, x2)
            want = exact(x1, x2)
            print(f"grad {fn.__name__}({x1}, {x2}) = ({got[0]:.12f}, {got[1]:.12f})"
                  f"   analytic ({want[0]:.12f}, {want[1]:.12f})")
            for a, b in zip(got, want):
                assert math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12), (fn, got, want)
    for fn in (f, g):
        print(f"\nGenerated derivative of {fn.__name__}:\n")
        print(s2sad.source(fn, wrt=(0, 1)), end="")


if __name__ == "__main__":
    main()
