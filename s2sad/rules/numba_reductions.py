"""The Numba versions of the runtime helpers that loops over small arrays meet: NumPy's
products, reductions and writes (`np.dot` of two rows, `np.prod`, `np.var` and `np.std`
with `ddof`, `np.linalg.norm`, `y[y < 0] = 0.0`, `x.T`), Python's `sum`, `min`, `max` and
`sorted` with a key, loops over lists and the lists they build; and the parts of NumPy's
functions Numba lacks (`ddof=`, `axis=`). As in rules/numba_overloads.py, `numba_NAME` is
the overload of the helper `NAME`, `numpy_NAME` of NumPy's function, each picking from
the Numba types the plain NumPy code for them, or a TypingError that says what it takes.
(`np.linalg.norm(x, "fro")` is refused before Numba sees it, by after_ad/native_check.py:
Numba's own takes any string, and raises when it runs.)
"""
import numpy as np
from numba import types
from numba.core.errors import TypingError
from numba.extending import overload

from . import (containers, products, pytrees, reductions, runtime, tangents,
               writes)
from .numba_overloads import (_around_axis, _axis_of, _made, array_type, axis_type, no_axis,
                              numeric_type)


# -- np.dot of numbers, vectors and matrices -----------------------------------------------
def _dot_shape(a, b):
    """The shape of np.dot of arrays of the Numba types `a`, `b` (of one or two axes), as
    code; None for a number."""
    return {(1, 1): None, (2, 1): "(a.shape[0],)", (1, 2): "(b.shape[1],)",
            (2, 2): "(a.shape[0], b.shape[1])"}[a.ndim, b.ndim]


def _dot_adjoint(g, a, b, which):
    """The adjoint of `a` (which=0, `matmul_lhs`) or `b` (`matmul_rhs`) in np.dot(a, b):
    a product with a number is a scaling; of arrays, that of `a @ b`, the adjoint spread
    over the product's shape where it is a number (a zero a loop reset)."""
    this, other = ("a", "b") if which == 0 else ("b", "a")
    if numeric_type(a) or numeric_type(b):
        return _made("def dot_adjoint(g, a, b):",
                     f"    return unbroadcast(g * {other}, {this})",
                     unbroadcast=runtime.unbroadcast)
    if not (array_type(a) and array_type(b)):
        raise TypingError(f"no native adjoint of np.dot of {a} and {b}")
    shape = _dot_shape(a, b)
    spread = f"np.full({shape}, g)" if numeric_type(g) and shape else "g"
    return _made("def dot_adjoint(g, a, b):",
                 f"    return adjoint({spread}, a, b)", np=np,
                 adjoint=runtime.matmul_lhs if which == 0 else runtime.matmul_rhs)


@overload(products.dot_lhs)
def numba_dot_lhs(g, a, b):
    return _dot_adjoint(g, a, b, 0)


@overload(products.dot_rhs)
def numba_dot_rhs(g, a, b):
    return _dot_adjoint(g, a, b, 1)


# -- writes: `y[index] = v` ----------------------------------------------------------------
@overload(writes.zero_at)
def numba_zero_at(g, index):
    # (`g` without the elements `index` overwrote, in a copy; a number for an array is the
    # zero a loop reset)
    if numeric_type(g):
        def zero(g, index):
            if g != 0:
                raise ValueError("s2sad: a number as the adjoint of an array written in place")
            return g
        return zero
    if array_type(g, 3):
        def put(g, index):
            out = g.astype(np.float64)
            out[index] = 0.0
            return out
        return put
    raise TypingError(f"no native adjoint of a write into {g} at {index}")


# -- np.prod -------------------------------------------------------------------------------
def _others(x, axis, dual):
    """The code of `prod_others(x, axis)` (each element's product of the others, by the
    products before it and after it: no division, so that zeros are exact), or where
    `dual` its tangent along `t`, `prod_others_dot(x, t, axis)` (the same products of dual
    numbers); of the whole array or one axis."""
    if numeric_type(x) and no_axis(axis):
        return (lambda x, t, axis=None: 0.0) if dual else (lambda x, axis=None: 1.0)
    if not (array_type(x, 3) and (no_axis(axis) or axis_type(axis))):
        raise TypingError(f"no native derivative of np.prod of {x} along {axis} (s2sad's "
                          "takes the whole array or one axis)")
    n = x.ndim
    where = (["    before, after, m, k = 1, 1, x.size, 0"] if no_axis(axis) else
             [*_axis_of(n), *[line.replace("a.", "x.") for line in _around_axis(n)]])
    step = ["                acc, dacc = acc * b[i, r, j], dacc * b[i, r, j] + acc * c[i, r, j]"]
    return _made(
        f"def others(x, {'t, ' if dual else ''}axis=None):",
        *where,
        "    b = np.ascontiguousarray(x).reshape((before, m, after))",
        "    c = np.ascontiguousarray(t).reshape((before, m, after))" if dual else
        "    c = b",
        "    out = np.empty((before, m, after))",
        "    dout = np.empty((before, m, after))",
        "    for i in range(before):",
        "        for j in range(after):",
        "            acc, dacc = 1.0, 0.0",
        "            for r in range(m):",
        "                out[i, r, j], dout[i, r, j] = acc, dacc",
        *step,
        "            acc, dacc = 1.0, 0.0",
        "            for r in range(m - 1, -1, -1):",
        "                dout[i, r, j] = dout[i, r, j] * acc + out[i, r, j] * dacc",
        "                out[i, r, j] = out[i, r, j] * acc",
        *step,
        f"    return {'dout' if dual else 'out'}.reshape(x.shape)", np=np)


@overload(reductions.prod_others)
def numba_prod_others(x, axis=None):
    return _others(x, axis, dual=False)


@overload(reductions.prod_others_dot)
def numba_prod_others_dot(x, t, axis=None):
    if not (numeric_type(t) and numeric_type(x) or array_type(t, 3)):
        raise TypingError(f"no native tangent of np.prod's derivative along {t}")
    return _others(x, axis, dual=True)


@overload(np.prod)
def numpy_prod(a, axis=None):
    # (along one axis, an integer known when it runs, which Numba's np.prod does not take)
    if not (isinstance(a, types.Array) and isinstance(a.dtype, types.Float)
            and axis_type(axis)):
        return None
    n = a.ndim
    shape = "".join(f"a.shape[{j}] if {j} < k else a.shape[{j + 1}], " for j in range(n - 1))
    return _made(
        "def prod(a, axis=None):", *_axis_of(n), *_around_axis(n),
        "    b = np.ascontiguousarray(a).reshape((before, m, after))",
        "    out = np.ones((before, after))",
        "    for i in range(before):",
        "        for r in range(m):",
        "            for j in range(after):",
        "                out[i, j] = out[i, j] * b[i, r, j]",
        f"    return out.reshape(({shape}))" if n > 1 else "    return out[0, 0]", np=np)


# -- np.var and np.std with ddof -----------------------------------------------------------
def _centred(x, axis):
    """Lines of a made function: `centred`, `x` less its mean over `axis` (None or one
    axis, an integer known when it runs), and `m`, the count of that mean."""
    if no_axis(axis) or x.ndim == 1:
        return ["    m = x.size", "    centred = x - np.sum(x) / m"]
    return [*_axis_of(x.ndim), "    m = x.shape[k]",
            "    centred = x - np.expand_dims(np.sum(x, axis=k) / m, k)"]


def _count_type(ddof):
    """Whether `ddof` is a number: its Numba type, or its default (0) left out."""
    return isinstance(ddof, (int, float, types.Integer, types.Float)) or no_axis(ddof)


def _variance_kinds(x, axis, ddof, what):
    if not (array_type(x, 3) and isinstance(x.dtype, (types.Float, types.Integer))
            and (no_axis(axis) or axis_type(axis))
            and _count_type(ddof)):
        raise TypingError(f"no native {what} of np.var or np.std of {x} along {axis} "
                          "(s2sad's takes the whole array or one axis)")


@overload(runtime.variance)
def numba_variance(g, x, axis=None, ddof=0, keepdims=False):
    _variance_kinds(x, axis, ddof, "adjoint")
    return _made("def variance(g, x, axis=None, ddof=0, keepdims=False):",
                 *_centred(x, axis),
                 "    return unreduce(g, x, axis, keepdims) * (2.0 * centred / (m - ddof))",
                 np=np, unreduce=runtime.unreduce)


@overload(tangents.variance_dot)
def numba_variance_dot(t, a, axis=None, ddof=0, keepdims=False):
    _variance_kinds(a, axis, ddof, "tangent")
    if not no_axis(axis) and a.ndim > 1:
        kept = getattr(keepdims, "literal_value", getattr(keepdims, "value", keepdims))
        if not isinstance(kept, bool):
            raise TypingError("s2sad's tangent of np.var along an axis for Numba takes "
                              "keepdims as a constant")
        total = "np.sum(centred * t, axis=k)"
        total = f"np.expand_dims({total}, k)" if kept else total
    else:
        total = "np.sum(centred * t)"
    return _made("def variance_dot(t, a, axis=None, ddof=0, keepdims=False):",
                 "    x = a", *_centred(a, axis),
                 f"    return 2.0 * {total} / (m - ddof)", np=np)


@overload(runtime.safe_divide)
def numba_safe_divide(n, d):
    # (`n / d`, 0 where `d` is 0)
    if numeric_type(n) and numeric_type(d):
        return lambda n, d: n / d if d != 0 else 0.0 * n
    if (numeric_type(n) or array_type(n, 3)) and (numeric_type(d) or array_type(d, 3)):
        return lambda n, d: np.where(d == 0, 0.0, n / np.where(d == 0, 1.0, d))
    raise TypingError(f"no native quotient of {n} by {d}")


def _var_of(a, axis, ddof, keepdims, root):
    """np.var (np.std where `root`) of array type `a` over the whole array or one axis,
    with `ddof` (Numba's own takes neither); None where it does not apply."""
    if not (isinstance(a, types.Array) and isinstance(a.dtype, (types.Float, types.Integer))
            and (no_axis(axis) or axis_type(axis))
            and _count_type(ddof)):
        return None
    kept = getattr(keepdims, "literal_value", getattr(keepdims, "value", keepdims))
    if not isinstance(kept, bool):
        return None
    along = not no_axis(axis) and a.ndim > 1
    total = "np.sum(centred * centred, axis=k)" if along else "np.sum(centred * centred)"
    value = f"np.sqrt({total} / (m - ddof))" if root else f"{total} / (m - ddof)"
    if kept:
        value = (f"np.expand_dims({value}, k)" if along
                 else f"np.full(({'1, ' * a.ndim}), {value})")
    return _made("def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):",
                 "    x = a", *_centred(a, axis), f"    return {value}", np=np)


@overload(np.var, prefer_literal=True)
def numpy_var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    return _var_of(a, axis, ddof, keepdims, root=False)


@overload(np.std, prefer_literal=True)
def numpy_std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    return _var_of(a, axis, ddof, keepdims, root=True)


# -- np.linalg.norm: the 2-norm of a vector, the Frobenius norm ----------------------------
def _two_norm(x, ord, axis, what):
    """Whether np.linalg.norm(x, ord, axis) is a square root of a sum of squares s2sad's
    Numba versions take: of a whole vector (`ord` None or 2) or array (None, "fro")."""
    given = getattr(ord, "literal_value", None)
    vector = array_type(x, 3) and x.ndim == 1
    if (array_type(x, 3) and no_axis(axis) and (no_axis(ord) or given == "fro" and x.ndim == 2
                                                  or given == 2 and vector)):
        return True
    raise TypingError(f"no native {what} of np.linalg.norm of {x} with ord={ord}, axis={axis} "
                      "(s2sad's numba backend takes the 2-norm of a vector and the Frobenius "
                      "norm of a matrix, without an axis)")


@overload(runtime.norm)
def numba_norm(g, x, ans, ord=None, axis=None, keepdims=False):
    _two_norm(x, ord, axis, "adjoint")
    return lambda g, x, ans, ord=None, axis=None, keepdims=False: (
        g / (ans if ans != 0 else 1.0)) * x


@overload(runtime.norm_adjoint_dot, prefer_literal=True)
def numba_norm_adjoint_dot(g, x, n, t, which, ord=None, axis=None, keepdims=False):
    # (the tangent of `norm`'s adjoint along `x` (which=0), or along the norm `n`)
    _two_norm(x, ord, axis, "second derivative")
    along = getattr(which, "literal_value", None)
    if along == 0:
        return lambda g, x, n, t, which, ord=None, axis=None, keepdims=False: (
            g / (n if n != 0 else 1.0)) * t
    if along == 1:
        return lambda g, x, n, t, which, ord=None, axis=None, keepdims=False: (
            -g * t / n / (n if n != 0 else 1.0)) * x
    raise TypingError("s2sad's second derivative of np.linalg.norm for Numba takes which as "
                      "a constant")


@overload(tangents.norm_dot)
def numba_norm_dot(t, x, ans, ord=None, axis=None, keepdims=False):
    _two_norm(x, ord, axis, "tangent")
    return lambda t, x, ans, ord=None, axis=None, keepdims=False: np.sum(x * t) / (
        ans if ans != 0 else 1.0)


# -- Python's sum, min and max of a list or an array ---------------------------------------
@overload(runtime.unsum)
def numba_unsum(g, items):
    # (`g` for every item: a list of them, or an array of the items' shape)
    if isinstance(items, types.List) and (numeric_type(items.dtype) or array_type(items.dtype, 3)):
        return lambda g, items: [runtime.unbroadcast(g, v) for v in items]
    if array_type(items, 3) and (numeric_type(g) or array_type(g, 3)):
        return lambda g, items: np.broadcast_to(g, items.shape).copy()
    raise TypingError(f"no native adjoint of sum() of {items} (s2sad's numba backend takes "
                      "a list or an array)")


@overload(containers.best_index)
def numba_best_index(keys, largest):
    # (the first item that attains the extremum, as Python's max and min find it)
    if not ((isinstance(keys, types.List) and numeric_type(keys.dtype))
            or array_type(keys) and keys.ndim == 1):
        raise TypingError(f"no native max() or min() of {keys} with a key (s2sad's numba "
                          "backend takes a list of numbers or a vector)")

    def best(keys, largest):
        if len(keys) == 0:
            raise ValueError("max() or min() iterable argument is empty")
        at = 0
        for i in range(1, len(keys)):
            if keys[i] > keys[at] if largest else keys[i] < keys[at]:
                at = i
        return at
    return best


@overload(pytrees.from_array)
def numba_from_array(g, like):
    # (the adjoint of `np.array(items)` of a list of numbers or of arrays: its rows, in a
    # list; a number, the zero or a uniform adjoint, in every place)
    items = like.dtype if isinstance(like, types.List) else None
    if numeric_type(items) and isinstance(g, types.Array) and g.ndim == 1:
        def numbers(g, like):
            if g.shape[0] != len(like):
                raise ValueError("s2sad: the adjoint of a list of another length")
            return [g[i] for i in range(len(like))]
        return numbers
    if array_type(items, 3) and isinstance(g, types.Array) and g.ndim == items.ndim + 1:
        def rows(g, like):
            if g.shape[0] != len(like):
                raise ValueError("s2sad: the adjoint of a list of another length")
            return [g[i].copy() for i in range(len(like))]
        return rows
    if (numeric_type(items) or array_type(items, 3)) and numeric_type(g):
        return lambda g, like: [runtime.unbroadcast(g, v) for v in like]
    if array_type(like, 3) and array_type(g, 3):
        return lambda g, like: g.astype(np.float64)
    raise TypingError(f"no native adjoint of np.array() of {like} (s2sad's numba backend takes "
                      "a list of numbers or of arrays)")


@overload(containers.key_order)
def numba_key_order(keys, reverse=False):
    # (the positions in the order Python's sorted() puts the items, stable, also reversed)
    if not ((isinstance(keys, types.List) and isinstance(keys.dtype, (types.Float,
                                                                      types.Integer)))
            or array_type(keys) and keys.ndim == 1):
        raise TypingError(f"no native sorted() of {keys} with a key (s2sad's numba backend "
                          "takes keys that are numbers)")

    def order(keys, reverse=False):
        k = np.array(keys, np.float64)
        if np.isnan(k).any():
            raise ValueError("s2sad's sorted() for Numba takes keys without NaN (Python's "
                             "order of NaNs is not a sort)")
        return list(np.argsort(-k if reverse else k, kind="mergesort"))
    return order


def _indexed(obj):
    """Whether a loop over the Numba type `obj` indexes it itself: a list, tuple or array."""
    return isinstance(obj, (types.List, types.BaseTuple, types.Array))


@overload(containers.sequence)
def numba_sequence(obj):
    if _indexed(obj):
        return lambda obj: obj
    raise TypingError(f"no native loop over {obj} (s2sad's numba backend loops over lists, "
                      "tuples and arrays)")


@overload(containers.unsequence)
def numba_unsequence(d, obj, zero):
    if _indexed(obj):
        return lambda d, obj, zero: d
    raise TypingError(f"no native adjoint of a loop over {obj}")
