"""Containers, dtypes and complex inputs (tests/test_numpy_api.py)."""
import numpy as np

def tup(p):
    a, b = p
    return a * b + p[0]

def lst(ws, x):
    s = 0.0
    for i in range(len(ws)):
        s = s + ws[i] * x ** i
    return s

def dct(params, x):
    return np.sum(np.tanh(x @ params["W"] + params["b"]))

def f32(x):
    return np.sum(np.tanh(x) * 2.0)

def cplx(z):
    return (z * z).real


def two(x, y):
    return x * y, x + y
