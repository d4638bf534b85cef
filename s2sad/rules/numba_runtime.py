"""The runtime helpers the numba backend's code may call, for Numba: each one an
overload (numba.extending.overload) of the helper in rules/runtime.py that picks, from
the Numba types of the arguments, the plain NumPy code for them.

`NATIVE` names the helpers that have one; passes/native_check.py refuses a call of any
other. The overloads cover numbers and arrays of up to two axes; a case outside them
(a broadcast of three axes, a sum along an axis) is a typing error that names the
helper and the case. `register()` imports Numba and registers them, once.
"""
from . import runtime, tangents

#: The helpers with an overload here.
NATIVE = frozenset({"unbroadcast", "unindex", "zeros_like", "take", "own", "snapshot",
                    "like", "unreduce", "seed", "matmul_lhs", "matmul_rhs", "setitem"})
#: The helpers of forward mode (rules/tangents.py) with an overload here.
NATIVE_TANGENTS = frozenset({"broadcast_like"})

_registered = []


def register():
    """Register the overloads with Numba (imported here: an optional dependency)."""
    if _registered:
        return
    from numba import types
    from numba.core.errors import TypingError
    from numba.extending import overload
    import numpy as np

    def number(t):
        return isinstance(t, (types.Number, types.Boolean))

    def array(t, most=2):
        if isinstance(t, types.Array) and t.ndim > most:
            raise TypingError(f"s2sad's numba backend handles arrays of up to {most} axes "
                              f"here, got {t}")
        return isinstance(t, types.Array)

    @overload(runtime.unbroadcast)
    def unbroadcast(g, x):
        if number(x):
            if number(g):
                return lambda g, x: g
            if array(g):
                return lambda g, x: np.sum(g)
        if array(x) and number(g):
            return lambda g, x: np.full(x.shape, g)
        if array(x) and array(g) and g.ndim == x.ndim == 1:
            def one(g, x):
                if g.shape[0] == x.shape[0]:
                    return g
                return np.full(x.shape, np.sum(g))
            return one
        if array(x) and array(g) and g.ndim == 2 and x.ndim == 1:
            def rows(g, x):
                s = np.sum(g, axis=0)
                return s if s.shape[0] == x.shape[0] else np.full(x.shape, np.sum(s))
            return rows
        if array(x) and array(g) and g.ndim == x.ndim == 2:
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
    def unindex(g, x, index):
        if array(x, 3):
            def put(g, x, index):
                out = np.zeros(x.shape)
                out[index] += g
                return out
            return put
        raise TypingError(f"no native adjoint of indexing {x}")

    @overload(runtime.zeros_like)
    def zeros_like(x):
        if number(x):
            return lambda x: 0.0
        if array(x, 3):
            return lambda x: np.zeros(x.shape)
        raise TypingError(f"no native zeros of {x}")

    @overload(runtime.take)
    def take(g, index):
        if array(g, 3):
            if isinstance(index, types.Integer) and g.ndim == 1:
                return lambda g, index: g[index]
            return lambda g, index: g[index].copy()
        raise TypingError(f"no native part of {g}")

    @overload(runtime.own)
    def own(g, x):
        if array(x, 3):
            if number(g):
                return lambda g, x: np.full(x.shape, g)
            if array(g, 3) and g.ndim == x.ndim:
                return lambda g, x: g.astype(np.float64)
        raise TypingError(f"no native copy of {g} shaped like {x}")

    @overload(runtime.snapshot)
    def snapshot(v):
        if array(v, 3):
            return lambda v: v.copy()
        return lambda v: v

    @overload(runtime.like)
    def like(x):
        return lambda x: x

    @overload(runtime.unreduce)
    def unreduce(g, x, axis=None, keepdims=False):
        if (array(x, 3) and number(g) and isinstance(axis, (types.NoneType, types.Omitted))):
            return lambda g, x, axis=None, keepdims=False: np.full(x.shape, g)
        raise TypingError(f"no native adjoint of a sum of {x} along an axis ({axis})")

    @overload(runtime.seed)
    def seed(y, name):
        if number(y):
            return lambda y, name: 1.0
        raise TypingError(f"grad needs a function with a scalar output; it returns {y}. "
                          "Use s2sad.vjp (Python backend) for non-scalar outputs")

    def product(which):
        def typed(g, a, b):
            if not (array(a) and array(b)):
                raise TypingError(f"no native adjoint of {a} @ {b}")
            if a.ndim == 2 and b.ndim == 1:
                return ((lambda g, a, b: np.outer(g, b)) if which == 0 else
                        (lambda g, a, b: np.ascontiguousarray(a.T) @ g))
            if a.ndim == 2 and b.ndim == 2:
                return ((lambda g, a, b: g @ np.ascontiguousarray(b.T)) if which == 0 else
                        (lambda g, a, b: np.ascontiguousarray(a.T) @ g))
            if a.ndim == 1 and b.ndim == 2:
                return ((lambda g, a, b: b @ g) if which == 0 else
                        (lambda g, a, b: np.outer(a, g)))
            return (lambda g, a, b: g * b) if which == 0 else (lambda g, a, b: g * a)
        return typed

    overload(runtime.matmul_lhs)(product(0))
    overload(runtime.matmul_rhs)(product(1))

    @overload(runtime.setitem)
    def setitem(a, index, v):
        if array(a, 3):
            def put(a, index, v):
                out = a.copy()
                out[index] = v
                return out
            return put
        raise TypingError(f"no native copy of {a} with an element written")

    @overload(tangents.broadcast_like)
    def broadcast_like(t, y):
        if number(y):
            return lambda t, y: t
        if array(y, 3) and number(t):
            return lambda t, y: np.full(y.shape, t)
        if array(y, 3) and array(t, 3):
            return lambda t, y: np.broadcast_to(t, y.shape)
        raise TypingError(f"no native broadcast of {t} to {y}")
    _registered.append(True)
