"""Module-level functions for tests/test_api.py (s2sad needs real source files)."""
import math

import numpy as np

SCALE = 2.0


def f(x1, x2):
    return math.log(x1) + x1 * x2 - math.sin(x2)


def scaled(x):
    return SCALE * x * x


def with_kwonly(x, y=1.0, *, power=2):
    return (x * y) ** power


def vector_out(x):
    return x * np.ones(2)


def fails_in_forward(x):
    t = x * 2
    return t / (x - x)


def cube(x):
    return x ** 3


def uses_cube(x):
    return cube(x) + x


def named_like_the_fallback(_s2s_respecialize):
    return _s2s_respecialize ** 2
