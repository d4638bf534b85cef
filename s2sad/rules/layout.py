"""Adjoints of the NumPy functions that split, join, pad and rearrange arrays: each one
puts the adjoint of the result back where the elements of an argument went. A 0-d
adjoint `g` is the zero of an array rebound in a loop (see `products.spread_to`), returned
as it is. Generated code reaches them through `runtime`, which imports them; each is
linear in `g`, its forward rule (`@helper(linear="g")`, above its `def`)."""
import numpy as np

from ..errors import MissingRuleError
from .arrays import asarray
from .reductions import unbroadcast
from .registry import define, helper, helper_adjoint, helpers

ns = {"np": np}


def _dtype(x):
    return np.result_type(x, np.float32)


@helper(linear="g", shape_only=(4,))
def unsplit(g, pieces, axis=0, cuts=None, ary=None):
    """The adjoint of `np.split(ary, cuts, axis)` (and `array_split`, `vsplit`; `hsplit`
    with `axis` None), whose result is `pieces`: the adjoints of the pieces joined again
    (a number for a zero). Cuts out of order (`[4, 2]`) make pieces that overlap (`ary[:4]`
    and `ary[2:]`) and one that is empty: their adjoints are added where they overlap."""
    if not isinstance(g, (list, tuple)) and np.ndim(g) == 0:
        return g
    if axis is None:
        axis = 1 if np.ndim(pieces[0]) > 1 else 0
    parts = [np.broadcast_to(d, np.shape(p)) for d, p in zip(g, pieces)]
    if ary is None or sum(np.shape(p)[axis] for p in pieces) == np.shape(ary)[axis]:
        return np.concatenate(parts, axis=axis)
    out = np.zeros(np.shape(ary), np.result_type(*parts))
    ends = [0, *np.ravel(cuts).tolist(), np.shape(ary)[axis]]
    at = [slice(None)] * np.ndim(ary)
    for start, stop, part in zip(ends, ends[1:], parts):
        at[axis] = slice(start, stop)
        out[tuple(at)] += part
    return out


def _ids(shape, fill=None):
    """An int array of `shape` numbering its elements in C order, or all `fill`."""
    n = int(np.prod(shape, dtype=np.int64))
    return np.full(shape, fill, np.intp) if fill is not None else \
        np.arange(n, dtype=np.intp).reshape(shape)


@helper(shape_only=(1,), linear="g", adjoint=dict(g="np.delete(ans_bar, obj, axis)"))
def undelete(g, arr, obj, axis=None):
    """The adjoint of `arr` in `np.delete(arr, obj, axis)`: `g` where the elements kept
    came from, zero where they were deleted."""
    shape = np.shape(arr)
    out = np.zeros(int(np.prod(shape, dtype=np.int64)), _dtype(g))
    out[np.ravel(np.delete(_ids(shape), obj, axis))] = np.ravel(
        np.broadcast_to(g, np.shape(np.delete(_ids(shape), obj, axis))))
    return out.reshape(shape)


@helper(shape_only=(1, 3), linear="g", adjoint=dict(g="np.insert(ans_bar, obj, 0.0, axis)"))
def uninsert(g, arr, obj, values, axis=None):
    """The adjoint of `arr` in `np.insert(arr, obj, values, axis)`: `g` where the
    elements of `arr` went."""
    shape = np.shape(arr)
    came = np.ravel(np.insert(_ids(shape), obj, -1, axis))
    kept = came >= 0
    out = np.zeros(int(np.prod(shape, dtype=np.int64)), _dtype(g))
    out[came[kept]] = np.ravel(np.broadcast_to(g, np.shape(came)))[kept] if np.ndim(g) == 0 \
        else np.ravel(g)[kept]
    return out.reshape(shape)


@helper(shape_only=(1, 3), linear="g",
        adjoint=dict(g="np.insert(np.zeros(np.shape(arr)), obj, ans_bar, axis)"))
def uninsert_values(g, arr, obj, values, axis=None):
    """The adjoint of `values` in `np.insert(arr, obj, values, axis)`: `g` added up from
    the places each element of `values` went (NumPy broadcasts `values` to them)."""
    came = np.ravel(np.insert(_ids(np.shape(arr), -1), obj, _ids(np.shape(values)), axis))
    put = came >= 0
    flat = np.ravel(np.broadcast_to(g, np.shape(came)) if np.ndim(g) == 0 else g)
    return np.bincount(came[put], weights=flat[put], minlength=int(np.size(values))).reshape(
        np.shape(values)).astype(_dtype(g))


@helper(linear="g")
def resplit(g, pieces, axis=0, cuts=None):
    """`g` cut into pieces shaped like `pieces` along `axis` (None: as `np.hsplit` cuts), at
    `cuts` where given: the transpose of `unsplit`."""
    if np.ndim(g) == 0:
        return [g] * len(pieces)
    if axis is None:
        axis = 1 if np.ndim(pieces[0]) > 1 else 0
    if cuts is None:
        cuts = np.cumsum([np.shape(p)[axis] for p in pieces])[:-1]
    return np.split(g, cuts, axis=axis)


helper_adjoint(unsplit, zero="pieces, cuts, ary",
               g="_s2s_resplit(_s2s_rebroadcast(ans_bar, ans), pieces, axis, cuts)")
helper_adjoint(resplit, zero="pieces, cuts",
               g="_s2s_rebroadcast(_s2s_unsplit(ans_bar, pieces, axis, cuts, g), g)")


@helper(linear="g")
def unrot90(g, k=1, axes=None):
    """The adjoint of `np.rot90(m, k, axes)`: `g` turned back."""
    return g if np.ndim(g) == 0 else np.rot90(g, -k, (0, 1) if axes is None else axes)


helper_adjoint(unrot90, g="_s2s_rebroadcast(_s2s_unrot90(ans_bar, -k, axes), g)")


@helper(linear="g")
def unappend(g, arr, values, axis=None, which=0):
    """The adjoint of `arr` (`which` 0) or `values` (1) in `np.append(arr, values, axis)`."""
    if np.ndim(g) == 0:
        return g
    arr = np.asarray(arr)
    if axis is None:
        flat = np.ravel(g)
        part = flat[:arr.size] if which == 0 else flat[arr.size:]
        return np.reshape(part, np.shape(arr if which == 0 else values))
    n = arr.shape[axis]
    index = [slice(None)] * np.ndim(g)
    index[axis] = slice(0, n) if which == 0 else slice(n, None)
    return np.reshape(np.asarray(g)[tuple(index)], np.shape(arr if which == 0 else values))


# (a part of `g`: its transpose puts `ans_bar` in that part of zeros)
helper_adjoint(unappend, namespace=ns, zero="arr, values", g=(
    "_s2s_rebroadcast(np.append(_s2s_rebroadcast(ans_bar, arr), np.zeros(np.shape(values)), axis) "
    "if which == 0 else np.append(np.zeros(np.shape(arr)), _s2s_rebroadcast(ans_bar, values), "
    "axis), g)"))


@helper(result="of_adjoint", linear="g")
def unpad(g, x, pad_width, mode="constant"):
    """The adjoint of `x` in `np.pad(x, pad_width, mode)`: the middle of `g` for the
    constant mode; for the modes that copy elements of `x` (edge, reflect, symmetric,
    wrap), `g` added up where each copy came from."""
    if np.ndim(g) == 0:
        return g
    x = np.asarray(x)
    if mode == "constant":
        width = np.broadcast_to(np.asarray(pad_width), (x.ndim, 2))
        return np.asarray(g)[tuple(slice(lo, lo + n) for (lo, _), n in zip(width, x.shape))]
    if mode not in ("edge", "reflect", "symmetric", "wrap"):
        raise MissingRuleError(f"s2sad has no derivative rule for np.pad with mode={mode!r}; "
                               "only the modes constant, edge, reflect, symmetric and wrap")
    source = np.pad(np.arange(x.size).reshape(x.shape), pad_width, mode)
    out = np.zeros(x.size, dtype=_dtype(x))
    np.add.at(out, np.ravel(source), np.ravel(g))
    return out.reshape(x.shape)


# (the middle of `g`, or the copies added up: its transpose pads `ans_bar` alike)
helper_adjoint(unpad, namespace=ns, zero="x, pad_width",
               g="_s2s_rebroadcast(np.pad(_s2s_rebroadcast(ans_bar, x), pad_width, mode), g)")


@helper(linear="g")
def unpad_constant(g, x, pad_width, constant_values=0):
    """The adjoint of the number `constant_values` in `np.pad(x, pad_width,
    constant_values=...)`: the sum of `g` outside the middle."""
    if np.ndim(constant_values) != 0:
        raise MissingRuleError("s2sad differentiates np.pad with respect to one number "
                               "constant_values only, not one for each side")
    if np.ndim(g) == 0:
        return g
    return np.sum(g) - np.sum(unpad(g, x, pad_width))


helper_adjoint(unpad_constant, namespace=ns, zero="x, pad_width, constant_values", g=(
    "_s2s_rebroadcast(ans_bar * np.pad(np.zeros(np.shape(x)), pad_width, 'constant', "
    "constant_values=1.0), g)"))


@helper(linear="g")
def uncolumn_stack(g, arrays):
    """The adjoint of `np.column_stack(arrays)`: the columns of `g` each array became."""
    if np.ndim(g) == 0:
        return [g] * len(arrays)
    widths = [1 if np.ndim(a) < 2 else np.shape(a)[1] for a in arrays]
    pieces = np.split(g, np.cumsum(widths)[:-1], axis=1)
    return [np.reshape(p, np.shape(a)) for p, a in zip(pieces, arrays)]


helper_adjoint(uncolumn_stack, namespace=ns, zero="arrays",
               g="_s2s_rebroadcast(np.column_stack(ans_bar), g)")


@helper(linear="g")
def undiagonal(g, a, offset=0, axis1=0, axis2=1):
    """The adjoint of `np.diagonal(a, offset, axis1, axis2)`: `g` (the diagonal on its last
    axis) on that diagonal of zeros shaped like `a`."""
    if np.ndim(g) == 0:
        return g
    a = np.asarray(a)
    out = np.zeros(a.shape, dtype=_dtype(a))
    planes = np.moveaxis(out, (axis1, axis2), (-2, -1))     # a view into `out`
    n, m = planes.shape[-2:]
    rows = np.arange(max(0, -offset), min(n, m - offset))
    planes[..., rows, rows + offset] = g
    return out


helper_adjoint(undiagonal, namespace=ns, zero="a", g=(
    "_s2s_rebroadcast(np.diagonal(_s2s_rebroadcast(ans_bar, a), offset, axis1, axis2), g)"))


@helper(tangent=("_s2s_unkron(t, a, b, which)",
                 "_s2s_unkron(g, t, b, which) if which == 1 else _s2s_zeros_like(ans)",
                 "_s2s_unkron(g, a, t, which) if which == 0 else _s2s_zeros_like(ans)"))
def unkron(g, a, b, which):
    """The adjoint of `a` (`which` 0) or `b` (1) in `np.kron(a, b)`."""
    a, b = np.asarray(a), np.asarray(b)
    if np.ndim(g) == 0 and max(a.ndim, b.ndim):
        return g                                    # the zero (see `products.spread_to`)
    nd = max(a.ndim, b.ndim)
    sa, sb = (1,) * (nd - a.ndim) + a.shape, (1,) * (nd - b.ndim) + b.shape
    blocks = np.reshape(g, [n for pair in zip(sa, sb) for n in pair])
    other = range(1 - which, 2 * nd, 2)         # the axes of the operand not wanted
    out = np.tensordot(blocks, np.reshape(b, sb) if which == 0 else np.reshape(a, sa),
                       axes=(list(other), list(range(nd))))
    return np.reshape(out, (a if which == 0 else b).shape)


# (bilinear in `g` and the other operand: <ans_bar, unkron(g, a, b, 0)> = <kron(ans_bar, b), g>
# = <unkron(g, ans_bar, b, 1), b>, and alike for `b`)
helper_adjoint(unkron, namespace=ns, g=(
    "_s2s_rebroadcast(np.kron(_s2s_rebroadcast(ans_bar, a), b) if which == 0 else "
    "np.kron(a, _s2s_rebroadcast(ans_bar, b)), g)"), a=(
    "_s2s_unkron(g, a, _s2s_rebroadcast(ans_bar, b), 0) if which == 1 else "
    "_s2s_rebroadcast(0.0, a)"), b=(
    "_s2s_unkron(g, _s2s_rebroadcast(ans_bar, a), b, 1) if which == 0 else "
    "_s2s_rebroadcast(0.0, b)"))


_AXES = "axisa, axisb, axisc, axis"


@helper(tangent=(f"_s2s_uncross(t, a, b, c, which, {_AXES})",
                 f"_s2s_uncross(g, t, b, c, which, {_AXES}) if which == 1 else "
                 "_s2s_zeros_like(ans)",
                 f"_s2s_uncross(g, a, t, c, which, {_AXES}) if which == 0 else "
                 "_s2s_zeros_like(ans)"), numba=True)
def uncross(g, a, b, c, which, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """The adjoint of `a` (`which` 0) or `b` (1) in `c = np.cross(a, b, axisa, axisb,
    axisc, axis)`: b × g for `a`, g × a for `b`, with the vectors moved last and 2-vectors
    taken as 3-vectors in the plane z = 0 (as np.cross takes them), summed back where
    the operand was broadcast and its vectors moved back to their axis."""
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = np.moveaxis(np.asarray(a), axisa, -1), np.moveaxis(np.asarray(b), axisb, -1)
    g = np.broadcast_to(g, np.shape(c))
    if a.shape[-1] == b.shape[-1] == 2:             # c is the z component alone
        g = np.stack([np.zeros_like(g), np.zeros_like(g), g], axis=-1)
    else:
        g = np.moveaxis(g, axisc, -1)
    a3, b3 = (np.pad(v, [(0, 0)] * (v.ndim - 1) + [(0, 3 - v.shape[-1])]) for v in (a, b))
    x, ax = (a, axisa) if which == 0 else (b, axisb)
    r = (np.cross(b3, g) if which == 0 else np.cross(g, a3))[..., :x.shape[-1]]
    return np.moveaxis(unbroadcast(r, x), -1, ax)


# (bilinear in `g` and the other operand; r . (b x g) = g . (r x b) = b . (g x r), the
# forward np.cross carrying r from the operand's axis to `g`'s)
helper_adjoint(uncross, namespace=ns, zero="c", g=(
    f"_s2s_rebroadcast(np.cross(ans_bar, b, {_AXES}) if which == 0 "
    f"else np.cross(a, ans_bar, {_AXES}), g)"), a=(
    f"_s2s_uncross(g, a, ans_bar, c, 0, {_AXES}) if which == 1 else _s2s_rebroadcast(0.0, a)"),
    b=(f"_s2s_uncross(g, ans_bar, b, c, 1, {_AXES}) if which == 0 "
       "else _s2s_rebroadcast(0.0, b)"))


@helper(linear="g")
def untake_along_axis(g, arr, indices, axis):
    """The adjoint of `np.take_along_axis(arr, indices, axis)`: `g` added where each of
    its elements was taken from (an index taken twice gets both)."""
    if np.ndim(g) == 0:
        return g
    arr, g = np.asarray(arr), np.asarray(g)
    if axis is None:
        out = np.zeros(arr.size, dtype=_dtype(arr))
        np.add.at(out, np.ravel(indices), np.ravel(g))
        return out.reshape(arr.shape)
    axis %= arr.ndim
    grids = np.ix_(*[np.arange(n) if arr.shape[d] == n else np.zeros(n, dtype=int)
                     for d, n in enumerate(g.shape)])
    index = list(grids)
    index[axis] = np.broadcast_to(indices, g.shape)
    out = np.zeros(arr.shape, dtype=_dtype(arr))
    np.add.at(out, tuple(index), g)
    return out


helper_adjoint(untake_along_axis, namespace=ns, zero="arr, indices", g=(
    "_s2s_rebroadcast(np.take_along_axis(_s2s_rebroadcast(ans_bar, arr), indices, axis), g)"))


@helper(linear="g")
def unmeshgrid(g, which, x, indexing="xy"):
    """The adjoint of argument `which`, `x`, of `np.meshgrid(..., indexing=indexing)`:
    the adjoint of its grid, `g[which]`, summed over every axis but the one `x` runs
    along ('xy' swaps the first two)."""
    if not isinstance(g, (list, tuple)):
        return g                                    # the zero (see `products.spread_to`)
    d = g[which]
    if np.ndim(d) == 0:
        return d
    axis = _mesh_axis(which, len(g), indexing)
    others = tuple(i for i in range(np.ndim(d)) if i != axis)
    return np.reshape(np.sum(d, axis=others), np.shape(x))


def _mesh_axis(which, count, indexing):
    """The axis of the grids of `np.meshgrid` that its argument `which` of `count` runs
    along ('xy' swaps the first two)."""
    return 1 - which if indexing == "xy" and count > 1 and which < 2 else which


@helper(linear="d")
def remeshgrid(d, which, grids, indexing="xy"):
    """`d`, the adjoint of argument `which` of `np.meshgrid(..., indexing=indexing)`,
    spread along its axis of the grids `grids`, zeros in the other grids: the transpose
    of `unmeshgrid`."""
    if not isinstance(grids, (list, tuple)):
        return grids                                # the zero (see `products.spread_to`)
    shape = np.shape(grids[which])
    out = [np.zeros(np.shape(grid)) for grid in grids]
    if not shape:
        out[which] = d
        return out
    axis = _mesh_axis(which, len(grids), indexing)
    along = np.reshape(d, [-1 if i == axis else 1 for i in range(len(shape))])
    out[which] = np.broadcast_to(along, shape).copy()
    return out


helper_adjoint(unmeshgrid, zero="x, which", g="_s2s_remeshgrid(_s2s_rebroadcast(ans_bar, x), which, g, indexing)")
helper_adjoint(remeshgrid, zero="grids, which",
               d="_s2s_rebroadcast(_s2s_unmeshgrid(ans_bar, which, d, indexing), d)")


@helper(tangent=())
def partition_order(a, ans, axis=-1):
    """Where each element of `ans = np.partition(a, kth, axis)` came from in `a` (along
    `axis`; in the flattened `a` for None): matched through a stable sort of each, so
    that equal values are matched in order (as `np.sort`'s rule does)."""
    a = np.asarray(a)
    if axis is None:
        a, axis = a.reshape(-1), 0
    from_a = np.argsort(a, axis=axis, kind="stable")
    from_ans = np.argsort(ans, axis=axis, kind="stable")
    out = np.empty_like(from_a)
    np.put_along_axis(out, from_ans, from_a, axis=axis)
    return out


helper_adjoint(partition_order, params="a, p, axis=-1", zero="a, p")     # (indices: no derivative)


@helper(tangent=())
def running_source(running, axis=0):
    """Where each element of `running = np.maximum.accumulate(a, axis)` (or of `minimum`,
    `fmax`, `fmin`) came from in `a` along `axis`: the position where the running extreme
    last changed, so that a tie goes to the first element that attains it."""
    running = np.moveaxis(np.asarray(running), axis, -1)
    changed = np.ones(running.shape, bool)
    changed[..., 1:] = running[..., 1:] != running[..., :-1]
    positions = np.where(changed, np.arange(running.shape[-1]), 0)
    return np.moveaxis(np.maximum.accumulate(positions, axis=-1), -1, axis)


helper_adjoint(running_source, zero="running")     # (indices: no derivative)


@helper(shape_only=(1, 2), linear="b")
def unhstack(b, g, arrays):
    """The adjoint of `g` in `runtime.hstack(g, arrays)` from the adjoints `b` of the
    pieces (None or 0.0 for a zero): the pieces joined as np.hstack joins `arrays`; for a
    0-d `g`, the zero that stands for every piece, the sum of them all."""
    pieces = [np.zeros(np.shape(a)) if p is None else p for p, a in zip(b, arrays)]
    if np.ndim(g) == 0:
        return sum(np.sum(p) for p in pieces)
    flat = [np.atleast_1d(a) for a in arrays]
    axis = 0 if flat[0].ndim == 1 else 1
    return np.concatenate([np.broadcast_to(p, np.shape(a)).reshape(np.shape(f))
                           for p, a, f in zip(pieces, arrays, flat)], axis=axis)


helper_adjoint(unhstack, zero="g, arrays", b="_s2s_hstack(ans_bar, arrays)")


def _axes_given(axes):
    """The axes of `x.transpose(*axes)` or `np.transpose(x, axes)`, None for reversed."""
    if axes is None or axes == ():
        return None
    return axes[0] if len(axes) == 1 and isinstance(axes[0], (tuple, list)) else axes


@helper(result="of_adjoint", numba=True, linear="g")
def untranspose(g, axes=None):
    if np.ndim(g) == 0:
        return g                                    # the zero (see `products.spread_to`)
    axes = _axes_given(axes)
    return np.transpose(g, None if axes is None else np.argsort([a % np.ndim(g) for a in axes]))


@helper(result="of_adjoint", linear="g", numba=True)
def retranspose(g, axes=None):
    """`np.transpose(g, axes)` with `axes` as `untranspose` takes them: the transpose of
    `untranspose`, and its reverse rule's."""
    if np.ndim(g) == 0:
        return g                                    # the zero (see `products.spread_to`)
    return np.transpose(g, _axes_given(axes))


helper_adjoint(untranspose, g="_s2s_rebroadcast(_s2s_retranspose(ans_bar, axes), g)")
helper_adjoint(retranspose, g="_s2s_rebroadcast(_s2s_untranspose(ans_bar, axes), g)")


@helper(result="of_adjoint", linear="g")
def untile(g, x, reps):
    if np.ndim(g) == 0:
        return g                                    # the zero (see `products.spread_to`)
    x = asarray(x)
    reps = (reps,) if np.isscalar(reps) else tuple(reps)
    nd = max(x.ndim, len(reps))
    shape = (1,) * (nd - x.ndim) + x.shape
    reps = (1,) * (nd - len(reps)) + reps
    g = np.reshape(g, [d for pair in zip(reps, shape) for d in pair])
    return g.sum(axis=tuple(range(0, 2 * nd, 2))).reshape(x.shape)


helper_adjoint(untile, namespace=ns, zero="x, reps",     # (`x` is read for its shape)
               g="_s2s_rebroadcast(np.tile(_s2s_rebroadcast(ans_bar, x), reps), g)")


@helper(result="of_adjoint", linear="g")
def unrepeat(g, x, repeats, axis=None):
    if np.ndim(g) == 0:
        return g                                    # the zero (see `products.spread_to`)
    x = asarray(x)
    if axis is None:
        flat = x.ravel()
        idx = np.repeat(np.arange(flat.size), repeats)
        out = np.zeros(flat.size, dtype=np.result_type(x, np.float32))
        np.add.at(out, idx, np.ravel(g))
        return out.reshape(x.shape)
    idx = np.repeat(np.arange(x.shape[axis]), repeats)
    out = np.zeros(x.shape, dtype=np.result_type(x, np.float32))
    np.add.at(np.moveaxis(out, axis, 0), idx, np.moveaxis(g, axis, 0))
    return out


helper_adjoint(unrepeat, namespace=ns, zero="x, repeats",   # (`x` is read for its shape)
               g="_s2s_rebroadcast(np.repeat(_s2s_rebroadcast(ans_bar, x), repeats, axis), g)")


@helper(result="of_adjoint", linear="g")
def unrollaxis(g, axis, start=0):
    """The adjoint of `np.rollaxis(a, axis, start)` (a view of `g`, or `g` itself when
    0-d): the axis NumPy moved to `start` moved back to `axis`."""
    if np.ndim(g) == 0:
        return g
    axis, start = axis % g.ndim, start + g.ndim if start < 0 else start
    return np.moveaxis(g, start - 1 if axis < start else start, axis)


@helper(result="of_adjoint", linear="g")
def rollaxis(g, axis, start=0):
    """`np.rollaxis(g, axis, start)`, or `g` itself when 0-d (a zero): the transpose of
    `unrollaxis`."""
    return g if np.ndim(g) == 0 else np.rollaxis(g, axis, start)


helper_adjoint(unrollaxis, g="_s2s_rollaxis(ans_bar, axis, start)")
helper_adjoint(rollaxis, g="_s2s_unrollaxis(ans_bar, axis, start)")


@helper(linear="g")
def unselect(g, condlist, choicelist, default, which):
    """The adjoints of the `choicelist` (`which` 0, a list) or of `default` (1) in
    `np.select(condlist, choicelist, default)`: `g` where each is the value chosen (its
    condition the first that holds), zero elsewhere, summed back where it was broadcast."""
    n = len(choicelist)
    if np.ndim(g) == 0:
        return [g] * n if which == 0 else g         # the zero (see `products.spread_to`)
    first = np.select(condlist, list(range(n)), n)
    if which == 1:
        return unbroadcast(np.where(first == n, g, 0.0), default)
    return [unbroadcast(np.where(first == i, g, 0.0), c) for i, c in enumerate(choicelist)]


# (the values of `g` chosen by the conditions: put back by np.select itself)
helper_adjoint(unselect, namespace=ns, zero="condlist, choicelist, default", g=(
    "_s2s_rebroadcast(np.select(condlist, ans_bar, 0.0) if which == 0 else "
    "np.select(condlist, _s2s_zeros_like(choicelist), ans_bar), g)"))



def as_column(a):
    """`a` as one item of `np.c_[...]` takes it: a 0-d value as a (1, 1) array, a 1-D one
    as a column, others as they are (what before_ad.wengert writes np.c_ with)."""
    a = np.asarray(a)
    return a.reshape(-1, 1) if a.ndim == 1 else a.reshape(1, 1) if a.ndim == 0 else a


helper_adjoint(as_column, a="_s2s_reshape_like(ans_bar, a)")
define(as_column, "a", linear="a")


helpers(__name__)
