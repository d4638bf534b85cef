"""Batching rules (`vmap`, ad/batching.py) and the runtime helpers batched code calls.

A batched value carries its batch axis first. Elementwise primitives and reductions
batch without a rule of their own (the transform pads the batched operands' axes, or
shifts the axis of a reduction); the others declare one here, keyed by the primitive, as
a template over its parameters and `PARAM_axis` (0 where the argument is batched, None
where it is not): `batching(np.dot, "a, b", "_s2s_batch_dot(a, a_axis, b, b_axis)")`.
A primitive without one is batched by a loop over the batch (`loop`), which the
transform says in a comment and a warning.

>>> import numpy as np
>>> batch_pad(np.zeros((4, 3)), 2).shape         # a batch of 4 vectors, met by matrices
(4, 1, 3)
>>> batch_axis(-1, np.zeros((4, 3))), batch_axis(None, np.zeros((4, 3, 2)))
(-1, (1, 2))
"""
import math
import operator
import weakref

import numpy as np

from ..errors import S2SADError
from . import pytrees
from .products import dot_lhs, dot_rhs, matmul_lhs, matmul_rhs
from .pytrees import from_array
from .reductions import unbroadcast, unreduce
from .runtime import cumsum as cumsum_adjoint, extremum, unindex
from .tangents import broadcast_like
from .runtime import seed
from .registry import METHODS, batching, helpers
from .runtime import _basic
from .writes import setitem, take, zero_at

ns = {"np": np, "operator": operator, "float": float}


def batch_size(x):
    """The size of the batch that `x`, a batched value, holds (the first axis of its first
    leaf that is an array: a number in a batched structure is a zero, see `_item`)."""
    if type(x) is np.ndarray:
        return len(x)
    leaves, _ = pytrees.flatten(x)
    return len(next((v for v in leaves if np.ndim(v)), leaves[0]))


def mark_units(units):
    """Mark `units`, a read-only batch of the unit vectors of its length (the identity,
    `np.eye(n)`, the tangents a Jacobian's batched pass is called with), for
    `batch_matmul`: the product of a matrix and each unit vector is a column of the
    matrix, no product to compute. The mark goes with the array."""
    _UNITS[id(units)] = weakref.ref(units, lambda _, key=id(units): _UNITS.pop(key, None))


def _units(x):
    """Whether `x` is an array `mark_units` marked (as it is: not a copy or a view)."""
    ref = _UNITS.get(id(x))
    return ref is not None and ref() is x


_UNITS = {}     # id(units) -> weakref to units (see mark_units)


def _read_only(x):
    """A read-only view of `x` (of a user's array: a batched pass that would write into
    it raises, and the Jacobian takes one pass per direction)."""
    view = x.view()
    view.flags.writeable = False
    return view


def batch_like(x, n):
    """`x`, which carries no batch axis, with one of length `n` in front (a view with
    stride 0: every item of the batch is `x`, which `vmap` reads as a result the batch
    shares), leaf by leaf."""
    if type(x) is np.ndarray:
        if x.flags.c_contiguous and x.dtype.kind in "biufc":
            # (the view np.broadcast_to makes, in a fourth of its time)
            view = np.ndarray((n,) + x.shape, x.dtype, x, 0, (0,) + x.strides)
            view.flags.writeable = False
            return view
        return np.broadcast_to(x, (n,) + x.shape)
    return pytrees.map(lambda v: np.broadcast_to(v, (n,) + np.shape(v)), x)


def batch_pad(x, rank):
    """The batched array `x` with new axes after its batch axis, so that each item has at
    least `rank` axes: it then broadcasts, batch axis first, against arrays of up to
    `rank` axes (a batch of vectors times a matrix)."""
    missing = rank - (np.ndim(x) - 1)
    if missing <= 0:
        return x
    x = np.asarray(x)
    return x.reshape(x.shape[:1] + (1,) * missing + x.shape[1:])


def batch_axis(axis, x):
    """The axis (an int, a tuple or None) of one item of the batched array `x` as an axis
    of `x`: an axis counted from the front moves back by one, None is every axis but the
    batch axis."""
    if axis is None:
        return tuple(range(1, np.ndim(x)))
    if isinstance(axis, tuple):
        return tuple(batch_axis(a, x) for a in axis)
    return axis + 1 if axis >= 0 else axis


def batch_index(i):
    """The index `i` of one item as an index of the batch: all of the batch axis first."""
    return (slice(None),) + (i if isinstance(i, tuple) else (i,))


def batch_getitem(x, i):
    """`x[i]` for each item of the batch `x`, whose kind is not known when it compiles:
    an item of a container (whose items carry the batch axis) or of an array."""
    if isinstance(x, (tuple, list, dict)):
        return x[i]
    return x[batch_index(i)]


def batch_loop(fn, n, args, axes, kwargs=None, kw_axes=None):
    """`fn` applied to each item of the batch (length `n`) and the results stacked, batch
    axis first: the arguments whose axis is 0 give their item, the others are passed as
    they are. Correct for any function; a Python loop."""
    kwargs, kw_axes = kwargs or {}, kw_axes or {}
    results = []
    for b in range(n):
        given = [_item(a, b) if ax is not None else a for a, ax in zip(args, axes)]
        named = {k: _item(v, b) if kw_axes.get(k) is not None else v
                 for k, v in kwargs.items()}
        results.append(fn(*given, **named))
    return batch_stack(results)


def _item(x, b):
    """Item `b` of the batched value `x`: of each leaf that is an array (a number in a
    batched structure is a zero the transform left as it is, the same for every item)."""
    return pytrees.map(lambda v: v[b] if np.ndim(v) else v, x)


def batch_stack(results):
    """The results of the items of a batch as one batched value, leaf by leaf."""
    parts = [pytrees.flatten(r) for r in results]
    structure = parts[0][1]
    columns = zip(*[leaves for leaves, _ in parts])
    return pytrees.unflatten(structure, [np.stack([np.asarray(v) for v in column])
                                         for column in columns])


def batch_matmul(a, a_axis, b, b_axis):
    """`a @ b` of each item, where `a` or `b` (or both) is batched."""
    per_a, per_b = np.ndim(a) - (a_axis is not None), np.ndim(b) - (b_axis is not None)
    if a_axis is not None and b_axis is not None:
        if per_a == 1 and per_b == 1:
            return np.einsum("bi,bi->b", a, b)
        if per_a == 1 and per_b == 2:
            return np.matmul(a[:, None, :], b)[:, 0]
        if per_a == 2 and per_b == 1:
            return np.matmul(a, b[..., None])[..., 0]
        if per_a == per_b:
            return np.matmul(a, b)
    elif a_axis is not None:
        if per_a == 1 and per_b == 2 and _units(a):     # e_k @ b: the rows of b
            return _read_only(np.asarray(b))
        if per_b <= 2 or per_a == per_b:    # the batch axis a stacked matrix's
            return np.matmul(a, b)
    elif per_b == 1:                        # one matrix (or vector) times a batch of vectors
        if per_a == 2 and _units(b):        # a @ e_k: the columns of a
            return _read_only(np.transpose(a))
        return np.matmul(b, np.transpose(a)) if per_a == 2 else np.matmul(b, a)
    elif per_a <= 2 or per_a == per_b:
        return np.matmul(a, b)
    return batch_loop(np.matmul, batch_size(a if a_axis is not None else b), (a, b),
                      (a_axis, b_axis))


def batch_dot(a, a_axis, b, b_axis):
    """`np.dot(a, b)` of each item, where `a` or `b` (or both) is batched."""
    per_a = np.ndim(a) - (a_axis is not None)
    per_b = np.ndim(b) - (b_axis is not None)
    if per_a == 0 or per_b == 0:
        return batch_pad(a, per_b) * batch_pad(b, per_a) if a_axis is not None and b_axis is not None \
            else (batch_pad(a, per_b) * b if a_axis is not None else a * batch_pad(b, per_a))
    if per_a <= 2 and per_b <= 2:
        return batch_matmul(a, a_axis, b, b_axis)
    n = batch_size(a if a_axis is not None else b)
    return batch_loop(np.dot, n, (a, b), (a_axis, b_axis))


def batch_dot_rhs(g, g_axis, a, a_axis, b, b_axis, fn=dot_rhs):
    """`fn(g, a, b)` of each item; by default `dot_rhs`, the adjoint of `b` in `np.dot(a, b)`
    (`matmul_rhs` for `a @ b`)."""
    return _product_adjoint(fn, False, g, g_axis, a, a_axis, b, b_axis)


def batch_dot_lhs(g, g_axis, a, a_axis, b, b_axis, fn=dot_lhs):
    """`fn(g, a, b)` of each item; by default `dot_lhs`, the adjoint of `a` in `np.dot(a, b)`
    (`matmul_lhs` for `a @ b`)."""
    return _product_adjoint(fn, True, g, g_axis, a, a_axis, b, b_axis)


def _product_adjoint(fn, lhs, g, g_axis, a, a_axis, b, b_axis):
    """The adjoint of `a` (`lhs`) or of `b` in the product of `a` and `b` (a vector or a
    matrix each) of each item, with the batch axis as matmul's stacked axis: an operand
    that is not batched has a stacked axis of length 1 and broadcasts. Other shapes
    (a number, more axes, a 0-d adjoint that stands for an array) loop over the batch."""
    mine, other, other_axis = (a, b, b_axis) if lhs else (b, a, a_axis)
    if (g_axis is None and isinstance(g, float) and other_axis is not None
            and type(mine) is np.ndarray and mine.ndim == 1 and type(other) is np.ndarray
            and other.ndim == 2 and other.shape[1] == len(mine)):
        return g * other        # (of two vectors: the number g times the other vector)
    n = batch_size(g if g_axis is not None else a if a_axis is not None else b)
    per_g, per_a, per_b = (np.ndim(v) - (ax is not None) for v, ax in (
        (g, g_axis), (a, a_axis), (b, b_axis)))
    if per_a in (1, 2) and per_b in (1, 2) and per_g == (per_a - 1) + (per_b - 1):
        G, A, B = (np.asarray(v) if ax is not None else np.asarray(v)[None]
                   for v, ax in ((g, g_axis), (a, a_axis), (b, b_axis)))
        if lhs:
            if per_b == 1:
                out = G[:, :, None] * B[:, None, :] if per_a == 2 else G[:, None] * B
            elif per_a == 1:      # (one matrix b: one product for the whole batch)
                out = G @ np.swapaxes(b, -1, -2) if b_axis is None else np.matmul(
                    B, G[..., None])[..., 0]
            else:
                out = np.matmul(G, np.swapaxes(B, -1, -2))
        elif per_a == 1:
            out = A[:, :, None] * G[:, None, :] if per_b == 2 else G[:, None] * A
        elif per_b == 1:          # (one matrix a: one product for the whole batch)
            out = G @ np.asarray(a) if a_axis is None else np.matmul(G[:, None, :], A)[:, 0]
        else:
            out = np.matmul(np.swapaxes(A, -1, -2), G)
        return out if len(out) == n else np.broadcast_to(out, (n,) + out.shape[1:]).copy()
    return batch_loop(fn, n, (g, a, b), (g_axis, a_axis, b_axis))


def batch_unbroadcast(g, g_axis, x, x_axis):
    """`unbroadcast(g, x)` of each item (`g` summed down to the shape of `x`)."""
    n = batch_size(g if g_axis is not None else x)
    if g_axis is None:      # the same for every item
        return batch_like(unbroadcast(g, x[0] if x_axis is not None else x), n)
    shape = np.shape(x)[1:] if x_axis is not None else np.shape(x)
    g = np.asarray(g)
    if g.shape[1:] == shape:
        return g
    extra = g.ndim - 1 - len(shape)
    if extra < 0:           # (a number for an array: the same value everywhere)
        return np.broadcast_to(batch_pad(g, len(shape)), (n,) + shape).copy()
    if extra:
        g = g.sum(axis=tuple(range(1, 1 + extra)))
    ones = tuple(1 + i for i, d in enumerate(shape) if d == 1 and g.shape[1 + i] != 1)
    return g.sum(axis=ones, keepdims=True) if ones else g


def batch_set_at(a, a_axis, i, v, v_axis):
    """`setitem(a, i, v)` of each item (`a` with `a[i] = v`, as a new value), where `a` or
    `v` is batched and the index `i` is not."""
    n = batch_size(a if a_axis is not None else v)
    if isinstance(a, (dict, list)):      # a container, whose items carry the batch axis
        out = (dict if isinstance(a, dict) else list)(a if a_axis is not None else
                                                       batch_like(a, n))
        out[i] = v if v_axis is not None else batch_like(v, n)
        return out
    if not isinstance(a, np.ndarray) and a_axis is not None:     # (another structure)
        return batch_loop(setitem, n, (a, i, v), (a_axis, None, v_axis))
    out = np.array(a if a_axis is not None else batch_like(a, n))
    target = out[batch_index(i)]
    out[batch_index(i)] = batch_pad(v, np.ndim(target) - 1) if v_axis is not None else v
    return out


def batch_take_written(g, g_axis, index, index_axis):
    """`take(g, index)` of each item (the adjoint of the values `a[index] = v` wrote):
    `g[:, index]` of a batched array `g` and a basic index the batch shares (a copy, as
    `take` gives); item by item otherwise (an index array may repeat a position, whose
    earlier writes `take` zeroes, and mixing arrays with slices moves axes)."""
    if type(g) is np.ndarray and g_axis is not None and index_axis is None and _basic(
            index):
        return g[batch_index(index)].copy()
    n = batch_size(g if g_axis is not None else index)
    return batch_loop(take, n, (g, index), (g_axis, index_axis))


def batch_zero_at(g, g_axis, index, index_axis):
    """`zero_at(g, index)` of each item: a copy of the batched `g` with zeros at `index`,
    which the batch shares (a zero goes to every position the index names, in whatever
    order NumPy takes them); item by item where the index is batched."""
    if type(g) is np.ndarray and g_axis is not None and index_axis is None:
        out = g.astype(np.result_type(g, np.float32))
        out[batch_index(index)] = 0
        return out
    n = batch_size(g if g_axis is not None else index)
    return batch_loop(zero_at, n, (g, index), (g_axis, index_axis))


def batch_sum_scaled(x, scale, axis=None):
    """`np.sum(x * scale, axis)` of each item, the batched array `x` scaled by `scale`,
    which the batch shares (ad/batch_scaling.py), summed over every axis of an item
    (`axis` None, or the one axis of a vector): a batch of vectors and a vector is one
    matrix product."""
    if (type(x) is np.ndarray and type(scale) is np.ndarray and x.ndim == 2
            and scale.ndim == 1 and axis in (None, 0, -1) and len(scale) == x.shape[1]
            and x.dtype.kind in "fc" and scale.dtype.kind in "fc"):
        return x @ scale
    product = batch_pad(x, np.ndim(scale)) * scale
    return np.sum(product, axis=batch_axis(axis, product))


def batch_reshape(a, *shape):
    """`np.reshape` of each item of the batched array `a` to `shape` (`x.reshape(3, 4)`
    or `x.reshape((3, 4))`; Nones, which no shape holds, left out)."""
    return np.reshape(a, np.shape(a)[:1] + _dims(shape))


def _dims(given):
    given = tuple(d for d in given if d is not None)
    if len(given) == 1 and isinstance(given[0], (tuple, list)):
        return tuple(given[0])
    return given


def batch_transpose(a, *axes):
    """`np.transpose` of each item of the batched array `a` (by `axes`, or reversed)."""
    axes = _dims(axes) or tuple(range(np.ndim(a) - 2, -1, -1))
    return np.transpose(a, (0,) + tuple(ax % (np.ndim(a) - 1) + 1 for ax in axes))


def batch_broadcast_like(t, t_axis, y, y_axis):
    """`broadcast_like(t, y)` of each item (the tangent `t` spread to the shape of `y`)."""
    n = batch_size(t if t_axis is not None else y)
    if t_axis is None:
        return batch_like(broadcast_like(t, y[0]), n)
    shape = np.shape(y)[1:] if y_axis is not None else np.shape(y)
    if type(t) is np.ndarray and t.shape[1:] == shape:
        return t
    return np.broadcast_to(batch_pad(t, len(shape)), (n,) + shape)


def batch_cumsum(a, axis=None):
    """`np.cumsum(a, axis)` of each item of the batched array `a` (flattened for None)."""
    if axis is None:
        if type(a) is np.ndarray and a.ndim == 2:
            return a.cumsum(axis=1)
        return np.cumsum(np.reshape(a, (len(a), -1)), axis=1)
    return np.cumsum(a, axis=batch_axis(axis, a))


def batch_array(obj, dtype=None):
    """`np.array(obj, dtype)` of each item: a list or tuple (nested) of batched values
    stacked after the batch axis (a constant, which the transform leaves a number,
    repeated along it), or a batched array copied."""
    if dtype is None and type(obj) in (list, tuple) and obj and all(
            type(v) is float or type(v) is np.ndarray and v.dtype == np.float64 and v.ndim == 1
            for v in obj):      # (batched floats: the items' rows filled in, as np.stack)
        n = {len(v) for v in obj if type(v) is np.ndarray}
        if len(n) == 1:
            out = np.empty((n.pop(), len(obj)))
            for i, v in enumerate(obj):
                out[:, i] = v
            return out
    n = len(next(v for v in pytrees.leaves(obj) if np.ndim(v)))

    def stacked(o):
        if isinstance(o, (list, tuple)):
            return np.stack([stacked(v) for v in o], axis=1)
        return np.asarray(o) if np.ndim(o) else np.full(n, o)
    return np.array(stacked(obj), dtype=dtype)


def _stacked(v, axis):
    """The batched value `v` as it is, or `v` that is not batched with a batch axis of
    length 1 (which broadcasts against the batch)."""
    return np.asarray(v) if axis is not None else np.asarray(v)[None]


def _filled(out, n):
    """`out`, whose batch axis may be of length 1 (no operand batched), of length `n`."""
    return out if len(out) == n else np.broadcast_to(out, (n,) + out.shape[1:]).copy()


def batch_unreduce(g, g_axis, x, x_axis, axis=None, keepdims=False):
    """`unreduce(g, x, axis, keepdims)` of each item (`g`, the adjoint of a sum of `x`
    over `axis`, spread back to the shape of `x`)."""
    n = batch_size(g if g_axis is not None else x)
    if g_axis is None or isinstance(x, (list, tuple)):
        return batch_loop(unreduce, n, (g, x, axis, keepdims), (g_axis, x_axis, None, None))
    shape = np.shape(x)[1:] if x_axis is not None else np.shape(x)
    G = np.asarray(g)
    if not keepdims and G.ndim > 1 and shape:
        G = np.expand_dims(G, tuple(a + 1 for a in _item_axes(axis, len(shape))))
    G = batch_pad(G, len(shape))
    return np.broadcast_to(G, (n,) + shape).astype(np.result_type(G, np.asarray(x).dtype))


def _item_axes(axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    return tuple(a % ndim for a in (axis if isinstance(axis, tuple) else (axis,)))


def batch_extremum(g, g_axis, x, x_axis, ans, ans_axis, axis=None, keepdims=False):
    """`extremum(g, x, ans, axis, keepdims)` of each item (the adjoint of max or min:
    `g` shared among the elements that attain it)."""
    n = batch_size(g if g_axis is not None else x if x_axis is not None else ans)
    X, A, G = _stacked(x, x_axis), _stacked(ans, ans_axis), _stacked(g, g_axis)
    rank = X.ndim - 1
    axes = tuple(a + 1 for a in _item_axes(axis, rank))
    if not keepdims and axis is not None and rank:
        A = np.expand_dims(A, axes)
        G = np.expand_dims(G, axes) if G.ndim > 1 else G
    A, G = batch_pad(A, rank), batch_pad(G, rank)
    mask = X == A
    dtype = np.result_type(X, np.float32)
    return _filled(G * (mask / mask.sum(axis=axes, keepdims=True, dtype=dtype)), n)


def batch_unindex(g, g_axis, x, x_axis, index, index_axis):
    """`unindex(g, x, index)` of each item (zeros shaped like `x` with `g` added at
    `index`), for an array `x` and a basic index the same for every item, or one integer
    per item (a gather's adjoint); other cases loop over the batch."""
    n = batch_size(g if g_axis is not None else x if x_axis is not None else index)
    if (type(x) is dict and x_axis is None and index_axis is None and g_axis is not None
            and isinstance(g, np.ndarray) and isinstance(x.get(index), (np.ndarray, float))):
        out = dict.fromkeys(x, 0.0)     # (the zero adjoint of each other entry)
        out[index] = batch_unbroadcast(g, g_axis, x[index], None)
        return out
    basic = index_axis is None and all(
        isinstance(i, (int, slice, np.integer)) or i is None
        for i in (index if isinstance(index, tuple) else (index,)))
    if isinstance(x, np.ndarray) and (basic or (
            index_axis is not None and np.ndim(index) == 1 and x_axis is not None)):
        shape = x.shape[1:] if x_axis is not None else x.shape
        out = np.zeros((n,) + shape, np.result_type(x.dtype, np.float32))
        where = batch_index(index) if basic else (np.arange(n), index)
        out[where] = batch_pad(_stacked(g, g_axis), out[where].ndim - 1)
        return out
    return batch_loop(unindex, n, (g, x, index), (g_axis, x_axis, index_axis))


def batch_from_array(g, g_axis, like, like_axis):
    """`from_array(g, like)` of each item: the adjoint `g` in the structure of `like`,
    here for a `like` that is the same for every item (an array, a number, or a dict,
    list or tuple of them); others loop over the batch."""
    n = batch_size(g if g_axis is not None else like)
    out = _from_array(g, like, n) if like_axis is None and g_axis is not None else None
    return out if out is not None else batch_loop(from_array, n, (g, like), (g_axis, like_axis))


def _from_array(g, like, n):
    """`batch_from_array` of a batched `g` and a `like` the same for every item, or None."""
    if isinstance(like, dict) and isinstance(g, dict) and g.keys() == like.keys():
        out = {k: _from_array(g[k], like[k], n) for k in like}
        return None if any(v is None for v in out.values()) else out
    if type(like) in (list, tuple) and type(g) in (list, tuple) and len(g) == len(like):
        out = [_from_array(u, v, n) for u, v in zip(g, like)]
        return None if any(v is None for v in out) else type(like)(out)
    if isinstance(like, np.ndarray) and isinstance(g, np.ndarray) and g.dtype.kind in "fciub":
        return g.astype(np.result_type(like.dtype, np.float32), copy=False)
    if isinstance(like, np.ndarray) and np.ndim(g) == 0 and g == 0:    # (a zero)
        return np.zeros((n,) + like.shape, np.result_type(like.dtype, np.float32))
    if isinstance(like, (int, float)) and isinstance(g, np.ndarray) and g.ndim == 1:
        return g.astype(float, copy=False)
    return None


def batch_cumsum_adjoint(g, g_axis, x, x_axis, axis=None):
    """The adjoint of cumsum (`runtime.cumsum`) of each item: a cumulative sum from the
    end."""
    n = batch_size(g if g_axis is not None else x)
    if g_axis is None or np.ndim(g) == 1:
        return batch_loop(cumsum_adjoint, n, (g, x, axis), (g_axis, x_axis, None))
    shape = np.shape(x)[1:] if x_axis is not None else np.shape(x)
    if axis is None:
        flat = np.reshape(g, (n, -1))[:, ::-1]
        return np.cumsum(flat, axis=1)[:, ::-1].reshape((n,) + shape)
    ax = batch_axis(axis, g)
    return np.flip(np.cumsum(np.flip(g, ax), ax), ax)


def batch_select(test, a, b, error=None):
    """`a if test else b` of each item: `test` one truth per item, `a` and `b` batched
    values of one structure, whose items are of one shape; else `error` (a batch holds
    items of one shape, and NumPy would broadcast the two, against their batch axes)."""
    test = np.asarray(test).astype(bool)
    if _placeholder(a) or _placeholder(b):     # (a None the other branch's items never read)
        return b if _placeholder(a) else a
    return pytrees.map(lambda u, v: _chosen(test, u, v, error), a, b)


def _chosen(test, u, v, error):
    if np.shape(u)[1:] != np.shape(v)[1:]:
        raise error or S2SADError("vmap: the branches of an if give items of different "
                                  f"shapes, {np.shape(u)[1:]} and {np.shape(v)[1:]}")
    return np.where(test.reshape(test.shape + (1,) * (np.ndim(u) - 1)), u, v)


def _placeholder(x):
    return x is None or (isinstance(x, np.ndarray) and x.dtype.kind == "O" and x.size
                         and x.flat[0] is None)


def batch_take(x, i):
    """`x[i]` of each item, `x` and `i` (an integer per item) batched."""
    return np.asarray(x)[np.arange(len(i)), i]


def batch_add(a, a_axis, b, b_axis):
    """`pytrees.add(a, b)` of each item (two adjoints of one value, added leaf by leaf),
    for structures of arrays alike; others loop over the batch."""
    n = batch_size(a if a_axis is not None else b)
    A = a if a_axis is not None else batch_like(a, n)
    B = b if b_axis is not None else batch_like(b, n)
    (left, s), (right, t) = pytrees.flatten(A), pytrees.flatten(B)
    sums = [_plus(u, v) for u, v in zip(left, right)] if repr(s) == repr(t) else [None]
    if all(v is not None for v in sums):
        return pytrees.unflatten(s, sums)
    return batch_loop(pytrees.add, n, (a, b), (a_axis, b_axis))


def _plus(u, v):
    """Two batched leaves added: a number 0 (a zero adjoint in a batched structure, the
    same for every item) or None (no adjoint) adds nothing; None for leaves of
    different shapes."""
    if u is None or v is None:
        return v if u is None else u
    arrays = isinstance(u, np.ndarray) and isinstance(v, np.ndarray) and (
        u.dtype.kind in "fciub" and v.dtype.kind in "fciub")
    if not arrays and not (type(u) in (int, float) or type(v) in (int, float)):
        return None
    if np.ndim(u) == 0 and u == 0:
        return v
    if np.ndim(v) == 0 and v == 0:
        return u
    return u + v if arrays and u.shape == v.shape else None


def batch_method(name):
    """A function that calls the method `name` of its first argument with the others
    (what `batch_loop` applies for a method without a batching rule)."""
    return lambda obj, *args, **kwargs: getattr(obj, name)(*args, **kwargs)


def batch_len(x):
    """`len` of one item of the batched value `x`: a batched array's second axis, a
    container's own length (its items carry the batch axis)."""
    return np.shape(x)[1] if isinstance(x, np.ndarray) else len(x)


def batch_element_type(x):
    """The type of one item of the batched value `x` (`type(x)` in the function)."""
    return type(x[0]) if isinstance(x, np.ndarray) else type(x)


def batch_seed(y, name):
    """`runtime.seed` of each item: the adjoint 1 of each scalar output."""
    if np.ndim(y) != 1:
        return batch_loop(lambda v: _seed(v, name), len(y), (y,), (0,))
    return np.ones_like(y, dtype=float) if not np.issubdtype(
        np.asarray(y).dtype, np.floating) else np.ones_like(y)


def jacobian_seed(y):
    """The unit adjoints of the output `y` (a number or an array, or a structure of them),
    one per element of its leaves, as a batch: what `jacrev`'s reverse pass starts
    from, all rows of the Jacobian at once."""
    leaves, structure = pytrees.flatten(y)
    sizes = [int(np.size(v)) for v in leaves]
    n, start, out = sum(sizes), 0, []
    for v, size in zip(leaves, sizes):
        units = np.zeros((n, size))
        units[start:start + size] = np.eye(size)
        out.append(units.reshape((n,) + np.shape(v)))
        start += size
    return pytrees.unflatten(structure, out)


def _seed(y, name):
    return seed(y, name)


helpers(__name__)

# -- the rules --------------------------------------------------------------------------
batching(np.dot, "a, b, out=None", "_s2s_batch_dot(a, a_axis, b, b_axis)")
batching(operator.matmul, "x, y", "_s2s_batch_matmul(x, x_axis, y, y_axis)")
batching(np.matmul, "x1, x2", "_s2s_batch_matmul(x1, x1_axis, x2, x2_axis)")
batching(np.reshape, "a, newshape", "_s2s_batch_reshape(a, newshape)")
batching(np.transpose, "a, axes=None", "_s2s_batch_transpose(a, axes)")
_dims4 = "d0=None, d1=None, d2=None, d3=None"
batching(METHODS["reshape"], "a, " + _dims4, "_s2s_batch_reshape(a, d0, d1, d2, d3)")
batching(METHODS["transpose"], "a, " + _dims4, "_s2s_batch_transpose(a, d0, d1, d2, d3)")
batching(np.shape, "a", "np.shape(a)[1:]", ns, unbatched=True)
batching(np.ndim, "a", "np.ndim(a) - 1", ns, unbatched=True)
batching(len, "obj", "_s2s_batch_len(obj)", unbatched=True)
batching(type, "obj", "_s2s_batch_element_type(obj)", unbatched=True)
batching(setitem, "a, index, v", "_s2s_batch_set_at(a, a_axis, index, v, v_axis)")
batching(np.copy, "a", "np.copy(a)", ns)
batching(zero_at, "g, index", "_s2s_batch_zero_at(g, g_axis, index, index_axis)")
batching(take, "g, index", "_s2s_batch_take_written(g, g_axis, index, index_axis)")
batching(dot_rhs, "g, a, b", "_s2s_batch_dot_rhs(g, g_axis, a, a_axis, b, b_axis)")
batching(dot_lhs, "g, a, b", "_s2s_batch_dot_lhs(g, g_axis, a, a_axis, b, b_axis)")
batching(matmul_rhs, "g, a, b",
         "_s2s_batch_dot_rhs(g, g_axis, a, a_axis, b, b_axis, _s2s_matmul_rhs)")
batching(matmul_lhs, "g, a, b",
         "_s2s_batch_dot_lhs(g, g_axis, a, a_axis, b, b_axis, _s2s_matmul_lhs)")
# the functions of `math` on numbers are NumPy's ufuncs on a batch of them
for _name in ("sin", "cos", "tan", "exp", "log", "sqrt", "tanh", "sinh", "cosh", "atan",
              "asin", "acos", "log1p", "expm1", "fabs", "floor", "ceil"):
    _np = {"atan": "arctan", "asin": "arcsin", "acos": "arccos", "fabs": "abs"}.get(_name, _name)
    batching(getattr(math, _name), "x", f"np.{_np}(x)", ns)
batching(math.pow, "x, y", "np.power(x, y)", ns)
batching(math.atan2, "y, x", "np.arctan2(y, x)", ns)
batching(max, "a, b", "np.maximum(a, b)", ns)
batching(min, "a, b", "np.minimum(a, b)", ns)
batching(float, "x", "np.asarray(x, dtype=float)", ns)
batching(seed, "y, name", "_s2s_batch_seed(y, name)")
batching(broadcast_like, "t, y", "_s2s_batch_broadcast_like(t, t_axis, y, y_axis)")
batching(np.array, "object, dtype=None", "_s2s_batch_array(object, dtype)")
batching(pytrees.add, "a, b", "_s2s_batch_add(a, a_axis, b, b_axis)")
# the zeros of a batch are a batch of zeros (the adjoint of an unused item or output)
batching(pytrees.zeros_like, "x", "zeros_like(x)", {"zeros_like": pytrees.zeros_like})
batching(unreduce, "g, x, axis=None, keepdims=False",
         "_s2s_batch_unreduce(g, g_axis, x, x_axis, axis, keepdims)")
batching(extremum, "g, x, ans, axis=None, keepdims=False",
         "_s2s_batch_extremum(g, g_axis, x, x_axis, ans, ans_axis, axis, keepdims)")
batching(unindex, "g, x, index", "_s2s_batch_unindex(g, g_axis, x, x_axis, index, index_axis)")
batching(from_array, "g, like", "_s2s_batch_from_array(g, g_axis, like, like_axis)")
batching(cumsum_adjoint, "g, x, axis=None",
         "_s2s_batch_cumsum_adjoint(g, g_axis, x, x_axis, axis)")
batching(np.cumsum, "a, axis=None", "_s2s_batch_cumsum(a, axis)")
batching(unbroadcast, "g, x", "_s2s_batch_unbroadcast(g, g_axis, x, x_axis)")
