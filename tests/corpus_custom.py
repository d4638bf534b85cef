"""Functions with custom rules (tests/test_custom_rules.py)."""
import math

import numpy as np

import s2sad


@s2sad.custom_vjp
def safe_norm(x, y):
    return math.sqrt(x * x + y * y)


def safe_norm_fwd(x, y):
    r = safe_norm(x, y)
    return r, (x, y, r)


def safe_norm_bwd(res, g):
    x, y, r = res
    if r == 0.0:
        return (0.0, 0.0)      # a subgradient where the naive derivative is 0/0
    return (g * x / r, g * y / r)


safe_norm.defvjp(safe_norm_fwd, safe_norm_bwd)


def naive_norm(x, y):
    return math.sqrt(x * x + y * y)


def uses_norm(x, y):
    return safe_norm(x, y) * 2.0 + x


def loop_norm(x):
    s = 0.0
    for i in range(3):
        s = s + safe_norm(x * i, 1.0)
    return s


@s2sad.custom_vjp
def clipped_identity(x):
    return x


def clipped_fwd(x):
    return x, None


def clipped_bwd(res, g):
    return (np.clip(g, -1.0, 1.0),)      # gradient clipping, a classic custom rule


clipped_identity.defvjp(clipped_fwd, clipped_bwd)


def clipped_loss(w):
    return np.sum(clipped_identity(w) * 10.0)


def with_stop(x):
    return x * s2sad.stop_gradient(x * x)


# -- custom_jvp ---------------------------------------------------------------------------
@s2sad.custom_jvp
def safe_sqrt(x):
    return math.sqrt(x)


@safe_sqrt.defjvp
def safe_sqrt_jvp(primals, tangents):
    (x,), (x_dot,) = primals, tangents
    y = math.sqrt(x)
    if y == 0.0:
        return y, 0.0          # the naive tangent x_dot / (2 sqrt(x)) divides by zero
    return y, x_dot / (2.0 * y)


def radius(x, y):
    return safe_sqrt(x * x + y * y)


def naive_radius(x, y):
    return math.sqrt(x * x + y * y)


@s2sad.custom_jvp
def softplus(x):
    return np.log1p(np.exp(x))


@softplus.defjvp
def softplus_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return softplus(x), t / (1.0 + np.exp(-x))


def softplus_layer(w):
    return softplus(2.0 * w) * w


@s2sad.custom_jvp
def scaled(x, c):
    return c * x * x


@scaled.defjvp
def scaled_jvp(primals, tangents):
    (x, c), (x_dot, c_dot) = primals, tangents
    return c * x * x, 2.0 * c * x * x_dot + x * x * c_dot


def uses_scaled(x, c):
    return scaled(x, c) + x


@s2sad.custom_jvp
def no_rule(x):
    return x * x


def calls_no_rule(x):
    return no_rule(x) + 1.0


# -- custom_vjp whose bwd says "no gradient" with None -------------------------------------
@s2sad.custom_vjp
def scale_by(x, k):
    return x * k


def scale_by_fwd(x, k):
    return x * k, k


def scale_by_bwd(k, g):
    return (g * k, None)       # k is a hyperparameter: no cotangent, statically


scale_by.defvjp(scale_by_fwd, scale_by_bwd)


def uses_scale_by(x, k):
    return scale_by(x, k) * k


@s2sad.custom_vjp
def gated(x, y):
    return x * y


def gated_fwd(x, y):
    return x * y, (x, y)


def gated_bwd(res, g):
    x, y = res
    if y > 0:
        return (g * y, g * x)
    return (g * y, None)       # None at run time only: becomes zeros


gated.defvjp(gated_fwd, gated_bwd)


def uses_gated(x, y):
    return gated(x, y) + y * y
