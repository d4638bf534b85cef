"""Functions behind bugs found in review; tests/test_regressions.py keeps them fixed."""
import functools, math
import numpy as np

def g(x):
    return np.sin(x).sum()

def h(x):
    if x < 0:
        raise ValueError("negative")
    return x * x

class C:
    def __init__(self):
        self.k = 3.0
    def m(self, x):
        return self.k * x * x

def d(p):
    return p["a"] * 2.0 + p["b"]


def doubled(fn):
    @functools.wraps(fn)
    def wrapper(x):
        return 2 * fn(x)
    return wrapper


@doubled
def decorated(x):
    return x * x


def scale(x, w):
    return x * w
