"""Functions for test_inline.py (their source must be in a file)."""
import math

import numpy as np

def euler(a, u):
    for i in range(5):
        du = a * u - u * u * 0.5
        u = u + 0.1 * du
    return u


def with_abs(x):
    return abs(x * 2.0) + x * x * math.exp(x)


def with_array_temporary(x):
    return np.sum(x * 2.0 + 1.0)


def read_by_the_pullback(x):
    return math.sin(x * 3.0)
