"""The Numba versions of the runtime helpers the numba backend's code may call (see
numba_runtime): `numba_NAME` is an overload (numba.extending.overload) of `runtime.NAME`
that picks, from the Numba types of the arguments, the plain NumPy code for them. Each
is a definition of its own, so that `s2sad.export(f, backend="numba")` copies those its
code calls. Importing this module imports Numba and registers them (numba_runtime's
`register` does, when Numba is first used).
"""
import numpy as np
from numba import types
from numba.core.errors import TypingError
from numba.extending import overload

from . import runtime, tangents


def numeric_type(t):
    return isinstance(t, (types.Number, types.Boolean))


def array_type(t, most=2):
    if isinstance(t, types.Array) and t.ndim > most:
        raise TypingError(f"s2sad's numba backend handles arrays of up to {most} axes "
                          f"here, got {t}")
    return isinstance(t, types.Array)


@overload(runtime.unbroadcast)
def numba_unbroadcast(g, x):
    if numeric_type(x):
        if numeric_type(g):
            return lambda g, x: g
        if array_type(g):
            return lambda g, x: np.sum(g)
    if array_type(x) and numeric_type(g):
        return lambda g, x: np.full(x.shape, g)
    if array_type(x) and array_type(g) and g.ndim == x.ndim == 1:
        def one(g, x):
            if g.shape[0] == x.shape[0]:
                return g
            return np.full(x.shape, np.sum(g))
        return one
    if array_type(x) and array_type(g) and g.ndim == 2 and x.ndim == 1:
        def rows(g, x):
            s = np.sum(g, axis=0)
            return s if s.shape[0] == x.shape[0] else np.full(x.shape, np.sum(s))
        return rows
    if array_type(x) and array_type(g) and g.ndim == x.ndim == 2:
        def both(g, x):
            out = np.ascontiguousarray(g)
            if x.shape[0] == 1 and out.shape[0] != 1:
                out = np.sum(out, axis=0).reshape((1, out.shape[1]))
            if x.shape[1] == 1 and out.shape[1] != 1:
                out = np.sum(out, axis=1).reshape((out.shape[0], 1))
            return out
        return both
    raise TypingError(f"no native adjoint of a broadcast of {g} to {x}")


@overload(runtime.unindex)
def numba_unindex(g, x, index):
    if array_type(x, 3):
        def put(g, x, index):
            out = np.zeros(x.shape)
            out[index] += g
            return out
        return put
    raise TypingError(f"no native adjoint of indexing {x}")


@overload(runtime.zeros_like)
def numba_zeros_like(x):
    if numeric_type(x):
        return lambda x: 0.0
    if array_type(x, 3):
        return lambda x: np.zeros(x.shape)
    raise TypingError(f"no native zeros of {x}")


@overload(runtime.take)
def numba_take(g, index):
    if array_type(g, 3):
        if isinstance(index, types.Integer) and g.ndim == 1:
            return lambda g, index: g[index]
        return lambda g, index: g[index].copy()
    raise TypingError(f"no native part of {g}")


@overload(runtime.own)
def numba_own(g, x):
    if array_type(x, 3):
        if numeric_type(g):
            return lambda g, x: np.full(x.shape, g)
        if array_type(g, 3) and g.ndim == x.ndim:
            return lambda g, x: g.astype(np.float64)
    raise TypingError(f"no native copy of {g} shaped like {x}")


@overload(runtime.snapshot)
def numba_snapshot(v):
    if array_type(v, 3):
        return lambda v: v.copy()
    return lambda v: v


@overload(runtime.like)
def numba_like(x):
    return lambda x: x


@overload(runtime.unreduce)
def numba_unreduce(g, x, axis=None, keepdims=False):
    # (an axis left out is its default, None, to the overload; one passed, its type)
    if array_type(x, 3) and numeric_type(g) and (
            axis is None or isinstance(axis, (types.NoneType, types.Omitted))):
        return lambda g, x, axis=None, keepdims=False: np.full(x.shape, g)
    raise TypingError(f"no native adjoint of a sum of {x} along an axis ({axis})")


@overload(runtime.seed)
def numba_seed(y, name):
    if numeric_type(y):
        return lambda y, name: 1.0
    raise TypingError(f"grad needs a function with a scalar output; it returns {y}. "
                      "Use s2sad.vjp (Python backend) for non-scalar outputs")


@overload(runtime.matmul_lhs)
def numba_matmul_lhs(g, a, b):
    if not (array_type(a) and array_type(b)):
        raise TypingError(f"no native adjoint of {a} @ {b}")
    if a.ndim == 2 and b.ndim == 1:
        return lambda g, a, b: np.outer(g, b)
    if a.ndim == 2 and b.ndim == 2:
        return lambda g, a, b: g @ np.ascontiguousarray(b.T)
    if a.ndim == 1 and b.ndim == 2:
        return lambda g, a, b: b @ g
    return lambda g, a, b: g * b


@overload(runtime.matmul_rhs)
def numba_matmul_rhs(g, a, b):
    if not (array_type(a) and array_type(b)):
        raise TypingError(f"no native adjoint of {a} @ {b}")
    if a.ndim == 2 and b.ndim == 1:
        return lambda g, a, b: np.ascontiguousarray(a.T) @ g
    if a.ndim == 2 and b.ndim == 2:
        return lambda g, a, b: np.ascontiguousarray(a.T) @ g
    if a.ndim == 1 and b.ndim == 2:
        return lambda g, a, b: np.outer(a, g)
    return lambda g, a, b: g * a


@overload(runtime.setitem)
def numba_setitem(a, index, v):
    if array_type(a, 3):
        def put(a, index, v):
            out = a.copy()
            out[index] = v
            return out
        return put
    raise TypingError(f"no native copy of {a} with an element written")


@overload(tangents.broadcast_like)
def numba_broadcast_like(t, y):
    if numeric_type(y):
        return lambda t, y: t
    if array_type(y, 3) and numeric_type(t):
        return lambda t, y: np.full(y.shape, t)
    if array_type(y, 3) and array_type(t, 3):
        return lambda t, y: np.broadcast_to(t, y.shape)
    raise TypingError(f"no native broadcast of {t} to {y}")
