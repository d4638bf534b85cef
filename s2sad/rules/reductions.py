"""Sums of adjoints down to a shape: `unbroadcast` (the adjoint of broadcasting) and
`unreduce` (of a sum over axes), and what a fused gradient calls instead where it can,
`unbroadcast_product` (a product summed down to a shape, as one matrix product) and
`unreduce_view` (`unreduce` as a view). `summed` is a sum over axes, as a product with
a vector of ones where NumPy's reduction is slow. `unouter` sums the adjoint of an
operand of a ufunc's `outer` (broadcast by `lead`) over the other operand's axes.
`prod_others` is the derivative of `np.prod`, with its own derivatives."""
import math

import numpy as np

from ..errors import MissingRuleError
from .arrays import asarray, broadcast_shapes, full, is_array, is_duck_array, number, zeros
from .registry import helper, helper_adjoint, helpers, linear

ns = {"np": np}

_NUMBERS = frozenset([float, int, np.float64])
_PYTHON_NUMBERS = frozenset([float, int])


@helper(shape_only=(1,), result="of_adjoint", numba=True, linear="g")
def unbroadcast(g, x):
    """`g` summed down to the shape of `x`: the adjoint of broadcasting `x`."""
    if type(g) in _NUMBERS and type(x) in _NUMBERS:     # numbers: the common case, fast
        return g
    if type(g) is np.ndarray and g.ndim and type(x) in _PYTHON_NUMBERS:   # also fast
        return number(summed(g, tuple(range(g.ndim))).reshape(()))
    try:
        if g.shape == x.shape:
            return g
    except AttributeError:
        pass
    if isinstance(x, (tuple, list)) and isinstance(g, (tuple, list)) and len(g) != len(x):
        raise MissingRuleError(
            f"a list or tuple of {len(x)} values was joined to others with + (or repeated "
            "with *) where s2sad could not tell it was one, so the derivative cannot be "
            "split back; build the list with a display ([a, b]) or append() instead")
    if isinstance(x, (tuple, list, dict)) or x is None:
        return g
    shape = np.shape(x)
    if np.shape(g) == shape and (is_array(x) or not is_array(g)):
        return g
    g = asarray(g)
    if g.ndim == 0 and is_array(x):
        # a scalar adjoint (a symbolic zero, or one value for every entry) of an array
        return full(shape, g, x.dtype if x.dtype.kind in "fc" else float, x)
    wide = broadcast_shapes(g.shape, shape)
    if wide != g.shape:
        # g stands for an array of a larger shape: a scalar adjoint (one value for every
        # entry) times a smaller operand; spread it out first
        g = np.broadcast_to(g, wide).copy()
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, n in enumerate(shape)
                                       if n == 1 and g.shape[lead + i] != 1)
    out = summed(g, axes).reshape(shape) if axes else g.reshape(shape)
    if not isinstance(x, (np.ndarray, np.generic)):
        return number(out)
    return out


helper_adjoint(unbroadcast, g="_s2s_rebroadcast(ans_bar, g)")


def rebroadcast(a, like):
    """`a` broadcast to the shape of `like`, or summed down to it: the adjoint of `g` in
    `unbroadcast(g, x)` from the adjoint `a` of its result (shaped like `x`, or 0-d for
    the same value everywhere); `a` itself for a structure."""
    if isinstance(like, (tuple, list, dict)) or like is None:
        return a
    shape = np.shape(like)
    if np.shape(a) == shape:
        return a
    return unbroadcast(np.broadcast_to(a, broadcast_shapes(np.shape(a), shape)), like)


linear(rebroadcast, "a, like", "a")
helper_adjoint(rebroadcast, zero="like", a="_s2s_rebroadcast(ans_bar, a)")


def summed(a, axes):
    """`a.sum(axis=axes)`, as a product with a vector of ones where NumPy's reduction is
    slow: over the last axes when they are short (a reduction of 3 numbers at a time), or
    over middle axes followed by a short axis (`(n, n, 3)` summed over its second axis),
    which a matrix product does many times faster."""
    if (type(a) is not np.ndarray or a.dtype.kind not in "fc" or a.size < _SUMMED_BY_PRODUCT
            or not a.flags.c_contiguous or not axes):
        return a.sum(axis=axes)
    first, last = min(axes), max(axes) + 1
    if first == 0 or len(axes) != last - first:
        return a.sum(axis=axes)        # NumPy adds rows fast; several blocks: not here
    outer, inner = a.shape[:first], a.shape[last:]
    size, after = math.prod(a.shape[first:last]), math.prod(inner)
    if size == 1 or after >= _SHORT_AXIS or (not inner and size >= _SHORT_AXIS):
        return a.sum(axis=axes)
    ones = np.ones(size, a.dtype)
    if not inner:
        return (a.reshape(-1, size) @ ones).reshape(outer)
    return (ones @ a.reshape(-1, size, after)).reshape(outer + inner)


_SUMMED_BY_PRODUCT = 4096   # elements below which NumPy's sum is as fast
_SHORT_AXIS = 16            # inner sizes below which NumPy's reduction is slow


@helper(shape_only=(2,))
def unbroadcast_product(a, b, x):
    """`unbroadcast(a * b, x)`: the product summed down to the shape of `x`, as one
    contraction (a matrix product) of float arrays, without the product's array. The
    axes along which an operand is broadcast (of length 1, or of stride 0 in a view
    from `unreduce_view`) are not in its matrix."""
    if not (type(a) is np.ndarray and type(b) is np.ndarray and type(x) is np.ndarray
            and a.dtype.kind in "fc" and b.dtype.kind in "fc"):
        return unbroadcast(a * b, x)
    shape = x.shape
    if a.shape == shape and b.shape == shape:       # elementwise: the common case, fast
        return a * b
    wide = np.broadcast_shapes(a.shape, b.shape)
    if len(shape) > len(wide) or np.broadcast_shapes(wide, shape) != wide:
        return unbroadcast(a * b, x)
    a, b = _compact(a, len(wide)), _compact(b, len(wide))
    lead = len(wide) - len(shape)
    kept = [i >= lead and shape[i - lead] != 1 for i in range(len(wide))]
    # the axes along which both operands were views of stride 0: the result is the same
    # along those `x` keeps (spread out at the end), and summed along the others
    narrow = np.broadcast_shapes(a.shape, b.shape)
    spread = any(kept[i] and narrow[i] == 1 != wide[i] for i in range(len(wide)))
    repeats = math.prod(wide[i] for i in range(len(wide)) if not kept[i] and narrow[i] == 1)
    kept = [k and n != 1 for k, n in zip(kept, narrow)]
    core = _contracted(a, b, narrow, kept).reshape(
        [narrow[i] if kept[i] else 1 for i in range(lead, len(wide))])
    if repeats != 1:
        core = core * repeats
    return np.broadcast_to(core, shape).copy() if spread else core


def _contracted(a, b, wide, kept):
    """The product of `a` and `b` (of the same number of axes, broadcasting to `wide`)
    summed over the axes not `kept`: its axes are the kept ones of length more than 1."""
    summed_axes = [i for i in range(len(wide)) if not kept[i] and wide[i] != 1]
    only_a = tuple(i for i in summed_axes if b.shape[i] == 1)
    only_b = tuple(i for i in summed_axes if a.shape[i] == 1)
    a, b = _summed_keeping(a, only_a), _summed_keeping(b, only_b)   # their own axes first

    def axes(in_a, in_b, keep):
        return [i for i in range(len(wide)) if kept[i] == keep and wide[i] != 1
                and (a.shape[i] != 1) == in_a and (b.shape[i] != 1) == in_b]
    batch, rows, columns = axes(True, True, True), axes(True, False, True), axes(False, True, True)
    inner = axes(True, True, False)
    if not inner and not (rows and columns):
        return a * b        # an elementwise product: no matrices in it
    if rows and columns and max(rows) > max(columns):
        a, b, rows, columns = b, a, columns, rows   # the last axis of x stays the last

    def matrices(c, first, second):
        # c (of length 1 along all other axes) as a stack of matrices: batch, first, second
        order = batch + first + second
        c = c.transpose(order + [i for i in range(c.ndim) if i not in order])
        return c.reshape([math.prod(wide[i] for i in group) for group in (batch, first, second)])

    product = matrices(a, rows, inner) @ matrices(b, inner, columns)
    order = batch + rows + columns
    product = product.reshape([wide[i] for i in order])
    return product.transpose(np.argsort(order))


def _summed_keeping(c, axes):
    """`c` summed over `axes`, which it keeps, of length 1."""
    if not axes:
        return c
    return summed(c, axes).reshape([1 if i in axes else n for i, n in enumerate(c.shape)])


def _compact(c, ndim):
    """`c` with `ndim` axes, of length 1 along those of stride 0 (a broadcast view)."""
    c = c.reshape((1,) * (ndim - c.ndim) + c.shape)
    if any(s == 0 and n > 1 for s, n in zip(c.strides, c.shape)):
        c = c[tuple(slice(0, 1) if s == 0 and n > 1 else slice(None)
                    for s, n in zip(c.strides, c.shape))]
    return c


@helper(shape_only=(1,))
def unreduce_view(g, x, axis=None, keepdims=False):
    """`unreduce(g, x, axis, keepdims)` as a read-only view of `g` (stride 0 along the
    summed axes), for an operand of `unbroadcast_product`, which never writes into it."""
    if type(g) is not np.ndarray or not isinstance(x, np.ndarray):
        return unreduce(g, x, axis, keepdims)
    shape = x.shape
    if not keepdims and g.ndim:
        g = np.expand_dims(g, axes_of(axis, len(shape)))
    if g.ndim > len(shape) and not any(n != 1 for n in g.shape[:g.ndim - len(shape)]):
        # (a `g` that is already of x's shape, as `unreduce` takes it: `out[...] = g`
        # drops the leading axes of length 1 that `broadcast_to` refuses)
        g = g.reshape(g.shape[g.ndim - len(shape):])
    return np.broadcast_to(g.astype(np.result_type(g, x), copy=False), shape)


def axes_of(axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    axis = axis if isinstance(axis, tuple) else (axis,)
    return tuple(a % ndim for a in axis)


@helper(shape_only=(1,), result="fresh", numba=True, linear="g")
def unreduce(g, x, axis=None, keepdims=False):
    """The adjoint of a sum of `x` over `axis`: `g` broadcast back to `x`'s shape (an
    array also for a list of numbers, `np.sum([a, b])`, whose entries it then holds)."""
    if isinstance(x, (list, tuple)):
        x = np.asarray(x)
    shape = np.shape(x)
    dtype = np.result_type(g, x)        # before asarray: a Python float stays weak
    g = asarray(g)
    if not keepdims and g.ndim:     # a 0-d g stands for the same value everywhere
        g = np.expand_dims(g, axes_of(axis, len(shape))) if shape else g
    if is_duck_array(x) or is_duck_array(g):
        return zeros(shape, dtype, x, g) + g
    out = np.empty(shape, dtype=dtype)
    out[...] = g
    return out


helper_adjoint(unreduce, namespace=ns,
               g="_s2s_rebroadcast(np.sum(ans_bar, axis=axis, keepdims=keepdims), g)")


@helper(linear="x")
def lead(x, y):
    """`x` with an axis of length 1 after its own for each axis of `y`: the operand of a
    ufunc's `outer(x, y)` as the ufunc broadcasts it (`np.add.outer(x, y)` is
    `np.add(lead(x, y), y)`)."""
    return np.reshape(x, np.shape(x) + (1,) * np.ndim(y))


helper_adjoint(lead, zero="y", x="_s2s_reshape_like(ans_bar, x)")


@helper(linear="d")
def unouter(d, x, y, which):
    """The adjoint of `x` (which=0) or `y` (which=1) of a ufunc's `outer(x, y)` from `d`,
    the ufunc's adjoint of that operand as broadcast by `lead`: summed over the axes of
    the other operand."""
    nx, ny = np.ndim(x), np.ndim(y)
    d = np.broadcast_to(d, np.shape(x) + np.shape(y))
    if which == 0:
        return np.sum(d, axis=tuple(range(nx, nx + ny))) if ny else d.copy()
    return np.sum(d, axis=tuple(range(nx))) if nx else d.copy()


# (a sum over the axes of the other operand: `ans_bar` spread over them again)
helper_adjoint(unouter, namespace=ns, zero="x, y", d=(
    "_s2s_rebroadcast(np.broadcast_to(_s2s_lead(_s2s_rebroadcast(ans_bar, x), y) if which == 0 "
    "else _s2s_rebroadcast(ans_bar, y), np.shape(x) + np.shape(y)), d)"))


def outer_dot(d, ans):
    """A tangent `d` of a ufunc's `outer`, broadcast to the shape of its result `ans`."""
    return d if np.shape(d) == np.shape(ans) else np.broadcast_to(d, np.shape(ans)).copy()


# -- the adjoint of np.prod -----------------------------------------------------------
def _along_last(fn, axis, x, *more):
    """`fn` applied with the reduced axes of `x` (for `np.prod(x, axis)`) flattened into
    the last one, its result put back in `x`'s shape; `more` arrays move alike."""
    x = asarray(x)
    axes = axes_of(axis, x.ndim)
    last = range(x.ndim - len(axes), x.ndim)
    moved = [np.moveaxis(asarray(a), axes, last) for a in (x, *more)]
    flat = [m.reshape(m.shape[:x.ndim - len(axes)] + (-1,)) for m in moved]
    return np.moveaxis(fn(*flat).reshape(moved[0].shape), last, axes)


@helper(result="fresh", numba=True, tangent="_s2s_prod_others_dot(x, t, axis)")
def prod_others(x, axis=None):
    """For each entry of `x`, the product of the other entries it is multiplied with by
    `np.prod(x, axis)`: the derivative of the product, also where an entry is zero."""
    if np.ndim(x) == 0:
        return np.ones_like(x, dtype=np.result_type(x, np.float32))

    def before(a):       # exclusive cumulative product along the last axis
        out = np.ones_like(a, dtype=np.result_type(a, np.float32))
        out[..., 1:] = np.cumprod(a[..., :-1], axis=-1)
        return out
    return _along_last(lambda a: before(a) * before(a[..., ::-1])[..., ::-1], axis, x)



# (the Jacobian of `prod_others` is the Hessian of the product: symmetric, its own transpose)
helper_adjoint(prod_others, x="_s2s_prod_others_dot(x, _s2s_rebroadcast(ans_bar, x), axis)")


@helper(params="x, u, axis=None", numba=True,
        tangent=("_s2s_prod_others_dot2(x, u, t, axis)", "_s2s_prod_others_dot(x, t, axis)"),
        # (the third derivatives of the product are symmetric: `prod_others_dot2` is
        # symmetric in its two tangents, and `prod_others_dot` its own transpose in `u`)
        adjoint=dict(params="x, u, axis=None",
                     x="_s2s_prod_others_dot2(x, u, _s2s_rebroadcast(ans_bar, x), axis)",
                     u="_s2s_prod_others_dot(x, _s2s_rebroadcast(ans_bar, x), axis)"))
def prod_others_dot(x, t, axis=None):
    """The tangent of `prod_others(x, axis)` along `t` (products of dual numbers, so
    that zero entries need no division)."""
    if np.ndim(x) == 0:
        return np.zeros_like(x, dtype=np.result_type(x, np.float32))

    def before(a, da):      # exclusive cumulative products and their tangents
        p = np.ones_like(a, dtype=np.result_type(a, np.float32))
        dp = np.zeros_like(p)
        for k in range(1, a.shape[-1]):
            p[..., k] = p[..., k - 1] * a[..., k - 1]
            dp[..., k] = dp[..., k - 1] * a[..., k - 1] + p[..., k - 1] * da[..., k - 1]
        return p, dp

    def dot(a, da):
        (b, db), (r, dr) = before(a, da), before(a[..., ::-1], da[..., ::-1])
        return db * r[..., ::-1] + b * dr[..., ::-1]
    return _along_last(dot, axis, x, t)


@helper(params="x, u, v, axis=None",
        tangent=('_s2s_no_second_derivative("np.prod\'s third derivative")',) * 3)
def prod_others_dot2(x, t, s, axis=None):
    """The tangent of `prod_others_dot(x, t, axis)` along `s`, the tangent of `x`: the
    part in e1 e2 of the products of the other entries of `x + e1 t + e2 s`, numbers with
    two infinitesimals (e1 * e1 = e2 * e2 = 0), so that zero entries need no division."""
    if np.ndim(x) == 0:
        return np.zeros_like(x, dtype=np.result_type(x, np.float32))

    def before(a, da, ea):      # exclusive cumulative products: their 1, e1, e2, e1 e2 parts
        p = [np.ones_like(a, dtype=np.result_type(a, np.float32))] + [
            np.zeros(a.shape, np.result_type(a, np.float32)) for _ in range(3)]
        for k in range(1, a.shape[-1]):
            b, db, eb = a[..., k - 1], da[..., k - 1], ea[..., k - 1]
            p0, p1, p2, p3 = (q[..., k - 1] for q in p)
            for q, v in zip(p, (p0 * b, p0 * db + p1 * b, p0 * eb + p2 * b,
                                p1 * eb + p2 * db + p3 * b)):
                q[..., k] = v
        return p

    def second(a, da, ea):
        b = before(a, da, ea)
        r = [q[..., ::-1] for q in before(a[..., ::-1], da[..., ::-1], ea[..., ::-1])]
        return b[0] * r[3] + b[1] * r[2] + b[2] * r[1] + b[3] * r[0]
    return _along_last(second, axis, x, t, s)


helpers(__name__)
