"""What Numba lacks of NumPy, for the numba backend's code (the user's primal compiled by
Numba and the derivatives): np.min and np.max along an axis, np.sum with keepdims,
np.cumprod along an axis and np.squeeze of one axis, as overloads
(numba.extending.overload) that apply where Numba's own do not. rules/numba_runtime.py
registers them with the runtime helpers' Numba versions (rules/numba_overloads.py, whose
made-code pieces they share).
"""
import numpy as np
from numba import types
from numba.core.errors import TypingError
from numba.extending import overload

from . import numba_overloads, numba_reductions  # noqa: F401 - registered first (numba_runtime)
from .numba_overloads import _around_axis, _axis_of, _made, axis_type, no_axis


def extremum_along(a, axis, keepdims, smaller):
    """The code of np.min (`smaller`) or np.max of array type `a` along one axis (an
    integer, known when it runs), with `keepdims` (a literal) or not: the elements are
    viewed as (before, along, after), and NaN wins, as in NumPy."""
    if not (isinstance(a, types.Array) and isinstance(a.dtype, (types.Integer, types.Float))
            and axis_type(axis)):
        return None
    kept = getattr(keepdims, "literal_value", getattr(keepdims, "value", keepdims))
    if not isinstance(kept, bool):
        raise TypingError("s2sad's np.min and np.max along an axis for Numba take keepdims "
                          "as a constant (True or False)")
    n = a.ndim
    if kept:
        shape = [f"1 if k == {j} else a.shape[{j}]" for j in range(n)]
    else:
        shape = [f"a.shape[{j}] if {j} < k else a.shape[{j + 1}]" for j in range(n - 1)]
    result = (f"out.reshape(({''.join(f'{s}, ' for s in shape)}))" if shape
              else "out[0, 0]")
    wins = "v < out[i, j]" if smaller else "v > out[i, j]"
    return _made(
        "def along(a, axis=None, keepdims=False):",
        *_axis_of(n),
        *_around_axis(n),
        "    if m == 0:",
        "        raise ValueError('zero-size array to reduction operation which has no "
        "identity')",
        "    b = np.ascontiguousarray(a).reshape((before, m, after))",
        "    out = b[:, 0, :].copy()",
        "    for i in range(before):",
        "        for r in range(1, m):",
        "            for j in range(after):",
        "                v = b[i, r, j]",
        f"                if ({wins} or v != v) and out[i, j] == out[i, j]:",
        "                    out[i, j] = v",
        f"    return {result}", np=np)


@overload(np.min, prefer_literal=True)
def numpy_min(a, axis=None, keepdims=False):
    return extremum_along(a, axis, keepdims, smaller=True)


@overload(np.max, prefer_literal=True)
def numpy_max(a, axis=None, keepdims=False):
    return extremum_along(a, axis, keepdims, smaller=False)


overload(np.amin, prefer_literal=True)(numpy_min)
overload(np.amax, prefer_literal=True)(numpy_max)


@overload(np.sum, prefer_literal=True)
def numpy_sum(a, axis=None, dtype=None, keepdims=False):
    # (keepdims, which Numba's np.sum does not take, a constant; of the whole array or
    # along one axis, an integer known when it runs)
    kept = getattr(keepdims, "literal_value", getattr(keepdims, "value", None))
    if not (isinstance(a, types.Array) and isinstance(kept, bool) and no_axis(dtype)
            and (no_axis(axis) or axis_type(axis))):
        return None
    n = a.ndim
    if no_axis(axis) or n == 1:
        return _made("def summed(a, axis=None, dtype=None, keepdims=False):",
                     f"    return np.full(({'1, ' * n}), np.sum(a))" if kept else
                     "    return np.sum(a)", np=np)
    shape = "".join(f"1 if k == {j} else a.shape[{j}], " for j in range(n))
    return _made(
        "def summed(a, axis=None, dtype=None, keepdims=False):",
        f"    if not -{n} <= axis < {n}:",
        f"        raise ValueError('axis is out of bounds for an array of {n} axes')",
        f"    k = axis % {n}",
        f"    return np.sum(a, axis=k).reshape(({shape}))" if kept else
        "    return np.sum(a, axis=k)", np=np)


@overload(np.cumprod)
def numpy_cumprod(a, axis=None):
    # (along one axis, an integer known when it runs, which Numba's np.cumprod does not
    # take, in NumPy's order: each element the product of the one before it along the
    # axis and its own. A matrix is read as it is, a running product per row along its
    # rows; another array as (before, along, after), copied first where it is a view,
    # such as np.broadcast_to's)
    if not (isinstance(a, types.Array) and isinstance(a.dtype, (types.Integer, types.Float))
            and axis_type(axis)):
        return None
    n = a.ndim
    dtype = getattr(np, str(a.dtype if isinstance(a.dtype, types.Float) else types.int64))
    head = ["def cumprod(a, axis=None):", *_axis_of(n), "    out = np.empty(a.shape, dtype)"]
    if n == 2:
        return _made(
            *head,
            "    if k == 1:",
            "        for i in range(a.shape[0] if a.shape[1] else 0):",
            "            acc = a[i, 0]",
            "            out[i, 0] = acc",
            "            for r in range(1, a.shape[1]):",
            "                acc = acc * a[i, r]",
            "                out[i, r] = acc",
            "        return out",
            "    for r in range(a.shape[0]):",
            "        for j in range(a.shape[1]):",
            "            out[r, j] = a[r, j] if r == 0 else out[r - 1, j] * a[r, j]",
            "    return out", np=np, dtype=dtype)
    return _made(
        *head,
        *_around_axis(n),
        "    b = np.ascontiguousarray(a).reshape((before, m, after))",
        "    o = out.reshape((before, m, after))",
        "    for i in range(before):",
        "        for r in range(m):",
        "            for j in range(after):",
        "                o[i, r, j] = b[i, r, j] if r == 0 else o[i, r - 1, j] * b[i, r, j]",
        "    return out", np=np, dtype=dtype)


@overload(np.squeeze, prefer_literal=True)
def numpy_squeeze(a, axis=None):
    # (one axis given, an integer known when it runs: the result's axes are known from the
    # types; of an array of one axis, the number itself, as NumPy's arithmetic gives it)
    if not (isinstance(a, types.Array) and axis_type(axis)):
        return None
    n = a.ndim
    shape = "".join(f"a.shape[{j}] if {j} < k else a.shape[{j + 1}], " for j in range(n - 1))
    return _made(
        "def squeeze(a, axis=None):",
        f"    if not -{n} <= axis < {n}:",
        f"        raise ValueError('axis is out of bounds for an array of {n} axes')",
        f"    k = axis % {n}",
        "    if a.shape[k] != 1:",
        "        raise ValueError('cannot select an axis to squeeze out which has size not "
        "equal to one')",
        f"    return np.ascontiguousarray(a).reshape(({shape}))" if n > 1 else
        "    return a[0]", np=np)
