"""The functional forms of writes: `a[index] = v` is `a = setitem(a, index, v)` and
`lst.append(v)` is `lst = append(lst, v)` to AD, with the adjoints and tangents of each,
declared beside the helpers (see registry.helper): the runtime helpers of element
assignment (before_ad.wengert writes them; rules/runtime.py finds them by name)."""
import numpy as np

from .arrays import asarray, is_array
from .pytrees import is_zero as _is_zero, zeros_like
from .reductions import unbroadcast
from .registry import define, helper, helper_adjoint, helpers
from .runtime import _basic     # (whether an index is basic: a view)


@helper(numba=True)
def setitem(a, index, v):
    """`a` with `a[index] = v`, as a new value (what `a[index] = v` means to AD)."""
    out = a.copy()
    out[index] = v
    return out


define(setitem, "a, index, v", a="_s2s_zero_at(g, index)",
       v="_s2s_unbroadcast(_s2s_take(g, index), v)", linear="a, v", returns="first")


def added_at(a, index, v):
    """`a` after `np.add.at(a, index, v)`, as a new value: `v` (broadcast as NumPy does)
    added at `index`, an index repeated adding as often as it repeats."""
    out = asarray(a).copy()
    np.add.at(out, index, v)
    return out


# (the adjoint of v: g gathered at the index, a repeated position read as often)
define(added_at, "a, index, v", a="g", v="_s2s_unbroadcast(_s2s_rebroadcast(g, a)[index], v)",
       linear="a, v", returns="array")


def multiplied_at(a, index, v):
    """`a` after `np.multiply.at(a, index, v)`, as a new value: the elements at `index`
    multiplied by `v` (broadcast as NumPy does), an index repeated multiplying as often
    as it repeats."""
    out = asarray(a).copy()
    np.multiply.at(out, index, v)
    return out


# Each element of the result is `a` times the product of the values that went into it:
# `at_slots` lays those values out along a new last axis (ones fill the rest), so that the
# product and the products of the others (`prod_others`, which divides by nothing: a
# zero among them is fine) are those of `np.prod`, to any order.
_SLOTS = "_s2s_at_slots(a, index, v, 1.0)"
define(multiplied_at, "a, index, v", namespace={"np": np},
       a=f"g * np.prod({_SLOTS}, -1)",
       v=f"_s2s_at_unslot(np.expand_dims(_s2s_rebroadcast(g, a) * a, -1) * "
         f"_s2s_prod_others({_SLOTS}, -1), a, index, v)",
       tangent={"a": f"t * np.prod({_SLOTS}, -1)",
                "v": f"a * np.sum(_s2s_prod_others({_SLOTS}, -1) * "
                     "_s2s_at_slots(a, index, t, 0.0), -1)"},
       returns="array")


def _slot_places(shape, index):
    """Where each value written at `index` into an array of `shape` goes among the slots
    of `at_slots`: its flat position, the count of values before it (in C order) that go
    to the same position, both shaped like the indexed array, and the number of slots."""
    position = np.arange(int(np.prod(shape)), dtype=np.intp).reshape(shape)[index]
    flat = np.ravel(position)
    order = np.argsort(flat, kind="stable")
    ranked = flat[order]
    first = np.searchsorted(ranked, ranked)         # where each position's run begins
    rank = np.empty_like(flat)
    rank[order] = np.arange(flat.size) - first
    slots = int(rank.max()) + 1 if flat.size else 1
    return position, rank.reshape(np.shape(position)), slots


@helper(shape_only=(0,), tangent={"v": "_s2s_at_slots(a, index, t, 0.0)"},
        adjoint={"zero": "index, fill", "v": "_s2s_at_unslot(ans_bar, a, index, v)"})
def at_slots(a, index, v, fill):
    """The values `v` (broadcast to `a[index]`) that `np.multiply.at(a, index, v)` would
    multiply each element of `a` by, along a new last axis, one slot for each time the
    element's position is written at most, `fill` in the slots left over."""
    a = asarray(a)
    position, rank, slots = _slot_places(a.shape, index)
    out = np.full(a.shape + (slots,), fill, dtype=np.result_type(a, v, np.float32))
    out.reshape(-1, slots)[position, rank] = np.broadcast_to(v, np.shape(position))
    return out


@helper(result="of_adjoint", shape_only=(1, 3), linear="g",
        adjoint={"zero": "index", "g": "_s2s_at_slots(a, index, ans_bar, 0.0)"})
def at_unslot(g, a, index, v):
    """The adjoint of `v` in `at_slots(a, index, v, fill)` from the adjoint `g` of its
    result: the entry of each value's slot, summed down to `v`'s shape."""
    if _is_zero(g):
        return g
    position, rank, slots = _slot_places(np.shape(a), index)
    return unbroadcast(np.reshape(g, (-1, slots))[position, rank], v)


def append(a, v):
    """`a` with `v` appended, as a new value (what `a.append(v)` means to AD)."""
    return a + [v]


define(append, "a, v", a="_s2s_head(g)", v="_s2s_last(g)", linear="a, v")


@helper(result="of_adjoint", numba=True, linear="g")
def zero_at(g, index):
    """The adjoint of the array or list written by `a[index] = v`: `g` without the
    overwritten elements."""
    if _is_zero(g):
        return g
    if isinstance(g, (list, dict)):     # (a dict the function does not build: its key is
        out = type(g)(g)                # zero, and the keys stay the new dict's)
        out[index] = zeros_like(out[index])
        return out
    out = asarray(g).astype(np.result_type(g, np.float32))     # a copy
    out[index] = 0
    return out


# (a projection: its own transpose)
helper_adjoint(zero_at, zero="index", g="_s2s_rebroadcast(_s2s_zero_at(ans_bar, index), g)")


@helper(result="of_adjoint", numba=True, linear="g")
def take(g, index):
    """The adjoint of the values `v` written by `a[index] = v`, of which `g` is the
    adjoint of the result: `g[index]` (on a copy where that would be a view), with zeros
    where an index array repeats a position for the writes NumPy overwrites: the last
    write, in C order of the index, is the one that stays."""
    if _is_zero(g):
        return g
    part = g[index]
    if not is_array(part):
        return part
    if _basic(index) or not is_array(g) or not _may_repeat(index):
        return part.copy()
    return np.where(last_writes(np.shape(g), index), part, 0)


# (`g[index]`, zero where a later write overwrites: `ans_bar` put back at `index`, through
# the same zeros, `take` of ones)
helper_adjoint(take, namespace={"np": np}, zero="index", g=(
    "_s2s_unindex(_s2s_rebroadcast(ans_bar, ans) * _s2s_take(np.ones(np.shape(g)), index), "
    "g, index)"))


def last_writes(shape, index):
    """Where `a[index] = v`, for `a` of `shape`, writes a value that stays: a boolean
    array shaped like `a[index]`, False for each write that a later one (in C order of
    the index, as NumPy writes C-contiguous values) overwrites. The position of each
    write is read through `index` from views of the coordinates that hold no data."""
    position = 0
    for axis, n in enumerate(shape):
        coordinate = np.arange(n, dtype=np.intp).reshape((n,) + (1,) * (len(shape) - axis - 1))
        position = position * n + np.broadcast_to(coordinate, shape)[index]
    flat = np.ravel(position)
    _, last = np.unique(flat[::-1], return_index=True)
    stays = np.zeros(flat.size, bool)
    stays[flat.size - 1 - last] = True
    return stays.reshape(np.shape(position))


def _may_repeat(index):
    """Whether `index` (not basic) holds an array or list of integers, which may select a
    position more than once (a boolean mask selects each at most once)."""
    items = index if isinstance(index, tuple) else (index,)
    return any(isinstance(i, list) and np.asarray(i).dtype != bool
               or is_array(i) and i.dtype != bool for i in items)


@helper(result="of_adjoint", linear="g")
def head(g):
    """The adjoint of the list `a` in `a.append(v)`: all of `g` but its last entry."""
    return g if _is_zero(g) else g[:-1]


@helper(result="of_adjoint", linear="g")
def last(g):
    """The adjoint of `v` in `a.append(v)`: the last entry of `g`."""
    return g if _is_zero(g) else g[-1]


# (`head` and `last` take `append`'s adjoint apart: their transposes put it together)
@helper(linear="b")
def unhead(b, g):
    """The adjoint of the list `g` in `head(g)` from the adjoint `b` of its result: `b`
    and a zero for the last entry (the zero for a zero `g`)."""
    return 0.0 if _is_zero(g) or _is_zero(b) else list(b) + [0.0]


@helper(linear="b")
def unlast(b, g):
    """The adjoint of the list `g` in `last(g)` from the adjoint `b` of its result: zeros
    but `b` last (the zero for a zero `g`)."""
    return 0.0 if _is_zero(g) or _is_zero(b) else [0.0] * (len(g) - 1) + [b]


helper_adjoint(head, g="_s2s_unhead(ans_bar, g)")
helper_adjoint(last, g="_s2s_unlast(ans_bar, g)")
helper_adjoint(unhead, zero="g", b="_s2s_head(ans_bar)")
helper_adjoint(unlast, zero="g", b="_s2s_last(ans_bar)")


helpers(__name__)
