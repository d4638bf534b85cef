"""Helpers for the values s2sad differentiates through that are not arrays: the zero
adjoint of a number, array, tuple, list, dict or dataclass, the one rule that adds
adjoints (`add`, leaf by leaf over them), an adjoint in the structure of its value
(`from_array`), and what a loop over a sequence or a dict indexes (`sequence`, `keys`).
Generated code reaches them through `runtime`, which imports them."""
import copy
import dataclasses

import numpy as np

from ..errors import InternalError
from .arrays import asarray, is_array


def zeros_like(x):
    """The zero adjoint of `x`: 0.0 for a number, a float zero array for an array."""
    if is_array(x):
        dtype = x.dtype
        if dtype.kind != "f" or dtype.itemsize < 4:     # float32 at least
            dtype = np.result_type(dtype, np.float32)
        # np.zeros is about three times as fast as np.zeros_like (which keeps subclasses,
        # and the library of a duck array)
        return np.zeros(x.shape, dtype) if type(x) is np.ndarray else np.zeros_like(
            x, dtype=dtype)
    if is_named_tuple(x):
        return rebuild(x, [field_zero(v) for v in x])
    if isinstance(x, (tuple, list)):
        return rebuild(x, [zeros_like(v) for v in x])
    if isinstance(x, dict):
        return {k: zeros_like(v) for k, v in x.items()}
    if is_record(x):
        return replace(x, {f: field_zero(getattr(x, f)) for f in fields(x)})
    return 0.0


def is_record(x):
    """Whether `x` is a dataclass instance (a named tuple is a tuple)."""
    return dataclasses.is_dataclass(x) and not isinstance(x, type)


def is_named_tuple(x):
    return isinstance(x, tuple) and hasattr(x, "_fields")


def fields(x):
    return [f.name for f in dataclasses.fields(x)]


def replace(x, values):
    """A shallow copy of dataclass instance `x` with fields `values`, made without
    calling `__init__` or `__post_init__` (an adjoint is not a validated value)."""
    out = copy.copy(x)
    for name, value in values.items():
        object.__setattr__(out, name, value)
    return out


def carries_derivative(v):
    """Whether a field holding `v` gets an adjoint: floats, float arrays, and containers
    and dataclasses; not ints, bools, strings, None, integer arrays or other objects
    (their adjoint is None, like JAX's float0 or PyTorch's None)."""
    if isinstance(v, (bool, np.bool_)):
        return False
    if isinstance(v, (float, complex, np.floating, np.complexfloating)):
        return True
    if is_array(v):
        return np.issubdtype(v.dtype, np.inexact)
    return isinstance(v, (tuple, list, dict)) or is_record(v)


def field_zero(v):
    return zeros_like(v) if carries_derivative(v) else None


def add(a, b):
    """The sum of two adjoints of one value, the one rule every adjoint accumulation
    follows (the pytree sum): numbers and arrays add; two tuples, lists, dicts or
    dataclass instances have the structure of the value and add leaf by leaf; None (no
    adjoint) and a zero count as zero. An array with a list or tuple is the adjoint of
    the sequence read as an array by NumPy (`np.sum(xs)`): its rows are the adjoints of
    the entries (see `from_array`). Adjoints of other structures are an InternalError."""
    if type(a) is type(b) and type(a) in _LEAVES:      # the common case, fast
        return a + b
    if a is None or is_zero(a):
        return b
    if b is None or is_zero(b):
        return a
    if not (_is_structure(a) or _is_structure(b)):
        return a + b
    like = a if _is_structure(a) else b
    if type(a) is not type(like):
        a = from_array(a, like)
    if type(b) is not type(like):
        b = from_array(b, like)
    if isinstance(like, (tuple, list)):
        if len(a) != len(b):
            raise _mismatch(a, b)
        return rebuild(like, [add(u, v) for u, v in zip(a, b)])
    if isinstance(like, dict):
        if a.keys() != b.keys():
            raise _mismatch(a, b)
        return {k: add(a[k], b[k]) for k in a}
    return replace(like, {f: add(getattr(a, f), getattr(b, f)) for f in fields(like)})


_LEAVES = frozenset({float, np.ndarray})


def _is_structure(x):
    return isinstance(x, (tuple, list, dict)) or is_record(x)


def from_array(g, like):
    """`g`, an adjoint of a value of the structure of `like` (the value, or another
    adjoint of it), in that structure: the adjoint of `np.array(obj)` for `like=obj`, of
    a list that NumPy read as an array, or of a list argument (`g` its rows, in a list
    of `like`'s length). A number `g` stands for itself in every place (a uniform
    adjoint, or zero); fields that carry no derivative get None. A `g` of another
    structure is an InternalError."""
    if g is None:
        return None
    if isinstance(like, (tuple, list)):
        items = [g] * len(like) if _is_number(g) else g
        if not (is_array(items) or isinstance(items, (tuple, list))) or (
                len(items) != len(like)):
            raise _mismatch(g, like)
        named = is_named_tuple(like)
        return rebuild(like, [None if named and not carries_derivative(v)
                              else from_array(u, v) for u, v in zip(items, like)])
    if isinstance(like, dict):
        if _is_number(g):
            return {k: from_array(g, v) for k, v in like.items()}
        if not isinstance(g, dict) or g.keys() != like.keys():
            raise _mismatch(g, like)
        return {k: from_array(g[k], v) for k, v in like.items()}
    if is_record(like):
        if type(g) is type(like):
            return replace(like, {f: from_array(getattr(g, f), getattr(like, f))
                                  for f in fields(like)})
        if not _is_number(g):
            raise _mismatch(g, like)
        return replace(like, {f: from_array(g, v) if carries_derivative(v) else None
                              for f, v in ((f, getattr(like, f)) for f in fields(like))})
    if isinstance(like, np.ndarray):
        return asarray(g).astype(np.result_type(like.dtype, np.float32), copy=False)
    return float(g) if isinstance(like, (int, float)) and not _is_structure(g) else g


def _is_number(g):
    """Whether `g` is a number or a 0-d array (not a structure, nor an array of axes)."""
    return not _is_structure(g) and np.ndim(g) == 0


def _mismatch(a, b):
    return InternalError(
        f"s2sad's derivative code adds adjoints of one value that have different "
        f"structures ({_structure(a)} and {_structure(b)}); this is a bug in s2sad: "
        "please report it with the function")


def _structure(x):
    if isinstance(x, dict):
        return f"a dict with keys {list(x)}"
    if isinstance(x, (tuple, list)):
        return f"a {type(x).__name__} of {len(x)}"
    if is_array(x):
        return f"an array of shape {np.shape(x)}"
    return f"a {type(x).__name__}"


def rebuild(like, items):
    """A tuple, list or named tuple of the type of `like`, holding `items`."""
    if hasattr(like, "_fields"):
        return type(like)(*items)
    return type(like)(items)


def is_zero(g):
    return isinstance(g, float) and g == 0.0


def joined(x, y):
    return isinstance(x, (list, tuple)) and isinstance(y, (list, tuple))


def repeated(x, y):
    """The list or tuple of `x * y` or `y * x` (a repetition), or None."""
    if isinstance(x, (list, tuple)) and not isinstance(y, (list, tuple)):
        return x
    if isinstance(y, (list, tuple)) and not isinstance(x, (list, tuple)):
        return y
    return None


def sequence(obj):
    """What a loop over `obj` indexes (passes.desugar writes `for v in obj` as a loop
    over indexes): a list, tuple or array itself; the keys of a dict, and the items of
    any other iterable, as a list."""
    return obj if isinstance(obj, (list, tuple)) or is_array(obj) else list(obj)


def unsequence(d, obj, zero):
    """The adjoint or tangent `d` of `sequence(obj)`, for `obj`: `d` where the loop
    indexes `obj` itself, `zero` where it indexes keys, which carry no derivative."""
    return d if isinstance(obj, (list, tuple)) or is_array(obj) else zero


def keys(d):
    """The keys of the dict `d` as a list (a loop over `d.items()`)."""
    return list(d)


def field(g, name):
    """The adjoint of the field `name` of a record whose adjoint is `g` (a record of
    adjoints, or a zero); a field that carries no derivative has none (None): zero."""
    if is_zero(g):
        return g
    value = getattr(g, name)
    return 0.0 if value is None else value


def sorting(items, reverse=False):
    """The positions in `items` of the values `sorted(items, reverse=reverse)` returns,
    in its order: Python's sort is stable, so equal values keep their order (also with
    `reverse=True`)."""
    values = list(items)
    return sorted(range(len(values)), key=values.__getitem__, reverse=reverse)


def unsort_list(g, items, reverse=False):
    """The adjoint of `items` in `sorted(items, reverse=reverse)`: entry `j` of `g` (the
    sorted list's adjoint) goes back to the place the `j`-th value came from."""
    out = [0.0] * len(items)
    if not is_zero(g):
        for j, i in enumerate(sorting(items, reverse)):
            out[i] = 0.0 if g[j] is None else g[j]
    if is_array(items):
        return np.array(out, dtype=np.result_type(items.dtype, np.float32))
    return rebuild(items, out) if isinstance(items, (tuple, list)) else out


def sort_list_dot(t, items, reverse=False):
    """The tangent of `sorted(items, reverse=reverse)`: `t` in the sorted order."""
    if is_zero(t):
        return [0.0] * len(items)
    return [t[i] for i in sorting(items, reverse)]
