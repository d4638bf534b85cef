"""The runtime helpers of the loops into which the numba backend fuses a run of
elementwise statements (after_ad/native_fuse.py). Only that backend's code calls them,
and Numba's versions (rules/numba_overloads.py) are what runs: `fusable` is settled when
Numba compiles the code, from the types of the arrays and numbers the run reads, so that
the fused loop is compiled only for float64 arrays of one number of axes, and `at` and
`put` read and write an element by its position in the elements' order (C order). The
Python versions here say the same for NumPy values. `add_scaled(out, c, g)` is `out += c
* g` without the product's array, into an array or a view of one
(after_ad/native_scaled.py).

>>> import numpy as np
>>> fusable((np.ones(3), np.zeros(3)), (2.0,)), fusable((np.ones(3, dtype=int),), ())
(0.0, 0)
>>> same_shape((np.ones((2, 3)), np.zeros((2, 3)))), same_shape((np.ones(3), np.ones(4)))
(True, False)
>>> m = np.zeros((2, 3)); put(m, 4, 7.0); float(at(m, 4)), at(2.5, 4)
(7.0, 2.5)
>>> add_scaled(m[:, 1:], 2.0, np.ones((2, 2))); m
array([[0., 2., 2.],
       [0., 9., 2.]])
"""
import numpy as np

from .registry import helper

_NUMBERS = (float, int, np.floating, np.integer)


@helper(numba=True)
def fusable(arrays, numbers):
    """0.0, a float, when `arrays` are float64 arrays of one number of axes (one or two)
    and `numbers` are numbers (not bools); else 0, an int. The fused code tests
    `isinstance(_s2s_fusable(...), float)`, which Numba settles as it compiles: a loop
    that does not apply to the types is not compiled at all."""
    ok = bool(arrays) and all(
        isinstance(a, np.ndarray) and a.dtype == np.float64 and a.ndim in (1, 2)
        and a.ndim == arrays[0].ndim for a in arrays) and all(
        isinstance(n, _NUMBERS) and not isinstance(n, (bool, np.bool_)) for n in numbers)
    return 0.0 if ok else 0


@helper(numba=True)
def same_shape(arrays):
    """Whether the arrays `arrays` have one shape."""
    return all(np.shape(a) == np.shape(arrays[0]) for a in arrays)


@helper(numba=True)
def at(x, k):
    """The element `k` of the array `x` in C order; a number `x` itself."""
    return x.flat[k] if isinstance(x, np.ndarray) else x


@helper(numba=True, writes=(0,))
def put(x, k, v):
    """Write `v` at the element `k` of the array `x` in C order."""
    x.flat[k] = v


@helper(numba=True, writes=(0,))
def add_scaled(out, c, g):
    """`out += c * g`: `out` an array or a view of one (a basic slice), `c` a number."""
    out += c * g
