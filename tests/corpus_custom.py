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
