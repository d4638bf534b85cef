"""Pytrees (after JAX's): the values s2sad differentiates are leaves (numbers, arrays,
None, any other object) and structures that hold values: tuples, lists, dicts, named
tuples, dataclass instances, instances of the classes registered with `register`, and
instances of plain classes (`plain`), whose attributes that carry derivatives are their
children.
`flatten` gives a value's leaves, in order, and its structure, from which `unflatten`
builds a value of that structure holding other leaves; `map` applies a function leaf by
leaf; `zeros_like` is the zero adjoint of a value, and `add` the sum of two adjoints of
one value, the one rule every adjoint accumulation follows. The transforms, the
Jacobians (jacobian_api) and the runtime helpers generated code calls all walk values
with these. A child of a record (a named tuple, a dataclass, a registered class) that
carries no derivative (an int, a string, None) has the adjoint None.

>>> import collections
>>> Point = collections.namedtuple("Point", "x y")
>>> leaves, structure = flatten({"p": Point(1.0, 2.0), "w": [3.0, None]})
>>> leaves
[1.0, 2.0, 3.0, None]
>>> unflatten(structure, [10.0, 20.0, 30.0, None])
{'p': Point(x=10.0, y=20.0), 'w': [30.0, None]}
>>> add({"a": (1.0, 2.0)}, {"a": (0.5, 0.5)})
{'a': (1.5, 2.5)}
"""
import builtins
import copy
import dataclasses
import inspect
import numbers
import types

import numpy as np

from ..errors import InternalError, S2SADError
from .arrays import asarray, is_array
from .plain_classes import plain
from .registry import define, helper, helper_adjoint, helpers


# -- how structures are taken apart and put together --------------------------------------
class Node:
    """How the structures of one type are taken apart, `flatten(x) -> (children, aux)`,
    and put together, `unflatten(aux, children)`; `children_as(x, aux)`: the children of
    `x` in the places of those of the structure `aux` describes, or None if `x` is not
    of that structure. `record`: a child that carries no derivative has the adjoint None
    (not zero). `mapped` and `zipped` (`zeros_like` and `add` call them) are the
    structure with `f` applied to each child, or to the children of two structures in
    the same places (None if `b` is not of the structure of `a`); the built-in nodes
    make them without the lists between."""

    record = False

    def mapped(self, x, f):
        children, aux = self.flatten(x)
        return self.unflatten(aux, [f(c) for c in children])

    def zipped(self, a, b, f):
        children, aux = self.flatten(a)
        others = self.children_as(b, aux)
        if others is None:
            return None
        return self.unflatten(aux, [f(u, v) for u, v in zip(children, others)])


class _Sequence(Node):
    """Tuples and lists (and their subclasses but named tuples): their items."""

    def flatten(self, x):
        return x, (type(x), len(x))

    def unflatten(self, aux, children):
        return aux[0](children)

    def children_as(self, x, aux):
        return x if type(x) is aux[0] and len(x) == aux[1] else None

    def mapped(self, x, f):
        items = [f(v) for v in x]
        return items if type(x) is list else self.unflatten((type(x),), items)

    def zipped(self, a, b, f):
        if type(b) is not type(a) or len(a) != len(b):
            return None
        items = [f(u, v) for u, v in zip(a, b)]
        return items if type(a) is list else self.unflatten((type(a),), items)


class _NamedTuple(_Sequence):
    record = True

    def unflatten(self, aux, children):
        return aux[0](*children)


class _Dict(Node):
    """Dicts (a subclass's structure is a plain dict): their values, in the dict's order."""

    def flatten(self, x):
        return list(x.values()), tuple(x)

    def unflatten(self, aux, children):
        return dict(zip(aux, children))

    def children_as(self, x, aux):
        if not isinstance(x, dict) or len(x) != len(aux) or any(k not in x for k in aux):
            return None
        return [x[k] for k in aux]

    def mapped(self, x, f):
        return {k: f(v) for k, v in x.items()}

    def zipped(self, a, b, f):
        if not isinstance(b, dict):
            return None
        if a.keys() == b.keys():
            return {k: f(v, b[k]) for k, v in a.items()}
        if not (a.keys() <= b.keys() or b.keys() <= a.keys()):
            return None
        # adjoints of one dict at two versions, keys added between them (a table the
        # function fills in a loop, read as it grows): the earlier version has nothing to
        # add at the keys it lacks
        out = {k: f(v, b[k]) if k in b else v for k, v in a.items()}
        out.update((k, v) for k, v in b.items() if k not in a)
        return out


class _Dataclass(Node):
    """The instances of one dataclass: their fields; a structure is built as a copy of
    the instance the structure was taken from (not by `__init__` or `__post_init__`: an
    adjoint is not a validated value)."""

    record = True

    def __init__(self, cls):
        self.fields = tuple(f.name for f in dataclasses.fields(cls))

    def flatten(self, x):
        return [getattr(x, f) for f in self.fields], x

    def unflatten(self, aux, children):
        return replace(aux, dict(zip(self.fields, children)))

    def children_as(self, x, aux):
        return [getattr(x, f) for f in self.fields] if type(x) is type(aux) else None

    def mapped(self, x, f):
        return replace(x, {name: f(getattr(x, name)) for name in self.fields})

    def zipped(self, a, b, f):
        if type(b) is not type(a):
            return None
        return replace(a, {name: f(getattr(a, name), getattr(b, name))
                           for name in self.fields})


class _Registered(Node):
    """The instances of a class registered with `register`: the children and aux its
    `flatten` gives, put together by its `unflatten`."""

    record = True

    def __init__(self, cls, flatten, unflatten):
        self.cls, self._flatten, self._unflatten = cls, flatten, unflatten

    def flatten(self, x):
        children, aux = self._flatten(x)
        children = list(children)
        return children, (aux, len(children))

    def unflatten(self, aux, children):
        return self._unflatten(aux[0], list(children))

    def children_as(self, x, aux):
        if type(x) is not self.cls:
            return None
        children = self.flatten(x)[0]
        return children if len(children) == aux[1] else None


class _Plain(_Registered):
    """The instances of a plain class (see `plain`), taken apart by their attributes as
    equinox or PyTorch modules are: the children are the values of the instance's
    `__dict__` that carry derivatives (numbers, float arrays, structures: see
    `carries_derivative`), in the dict's order; the other attributes (ints, strings,
    functions, other objects) are constants of the structure. A structure is built
    without `__init__` (an adjoint is not a validated value): a new instance
    (`cls.__new__(cls)`) whose `__dict__` is that of the instance the structure was
    taken from, with the children in their places. The aux is `((obj, names), n)`."""

    def __init__(self, cls):
        self.cls = cls

    def flatten(self, x):
        own = x.__dict__
        names = tuple(k for k, v in own.items() if carries_derivative(v))
        return [own[k] for k in names], ((x, names), len(names))

    def unflatten(self, aux, children):
        (like, names), _ = aux
        out = self.cls.__new__(self.cls)
        out.__dict__.update(like.__dict__)
        out.__dict__.update(zip(names, children))
        return out

    def children_as(self, x, aux):
        if type(x) is not self.cls:
            return None
        own = x.__dict__
        return [own.get(k) for k in aux[0][1]]

    def child(self, aux, name):
        """Which child the attribute `name` is (None: a constant of the structure, an
        attribute of the instance or of the class); an S2SADError for an attribute that
        a property or another descriptor computes (from the children, maybe), whose
        derivative s2sad cannot tell here."""
        (like, names), _ = aux
        if name in names:
            return names.index(name)
        if name in like.__dict__:
            return None
        found = inspect.getattr_static(self.cls, name, None)
        if hasattr(type(found), "__get__") and not isinstance(
                found, (types.FunctionType, staticmethod, classmethod)):
            cls = self.cls.__qualname__
            raise S2SADError(
                f"reading .{name} of a differentiated {cls}: .{name} is a "
                f"{type(found).__name__} of {cls}, computed when it is read, whose "
                "derivative s2sad cannot tell here (where the class of the object is not "
                f"known when compiling); read the attributes it is computed from, or call "
                "a method that computes it")
        return None


def by_attributes(cls):
    """Whether the children of the instances of `cls` are read as their attributes: a
    class registered with `register`, or a plain class (see `plain`)."""
    return isinstance(node_of(cls), _Registered)


def register(cls, flatten, unflatten):
    """Make the instances of `cls` pytrees: `flatten(obj)` returns `(children, aux)`, the
    values that are differentiated (a sequence of pytrees) and the rest that rebuilding
    one needs (hashable or not, never differentiated); `unflatten(aux, children)` builds
    an instance from them (JAX's `register_pytree_node`). `unflatten(*flatten(obj))`
    holds the same values as `obj`."""
    if not isinstance(cls, type):
        raise S2SADError(f"register_pytree registers a class; got {cls!r}")
    if not (callable(flatten) and callable(unflatten)):
        raise S2SADError("register_pytree(cls, flatten, unflatten) takes two functions: "
                         "flatten(obj) -> (children, aux) and unflatten(aux, children) -> obj")
    if issubclass(cls, (tuple, list, dict, np.ndarray)) or dataclasses.is_dataclass(cls):
        raise S2SADError(
            f"register_pytree: {cls.__qualname__} is a tuple, list, dict, array or "
            "dataclass, which s2sad takes apart already")
    _REGISTERED[cls] = _Registered(cls, flatten, unflatten)
    _NODES.pop(cls, None)


def registered(cls):
    """Whether `cls` was registered with `register`."""
    return cls in _REGISTERED


_REGISTERED = {}     # class -> its _Registered node
_NODES = {}          # type -> its node, or None for a leaf: node_of's cache
_SEQUENCE, _NAMED_TUPLE, _DICT = _Sequence(), _NamedTuple(), _Dict()


def node_of(cls):
    """The node of the values of type `cls`, None for leaves."""
    try:
        return _NODES[cls]
    except KeyError:
        pass
    if cls in _REGISTERED:
        node = _REGISTERED[cls]
    elif issubclass(cls, tuple) and hasattr(cls, "_fields"):
        node = _NAMED_TUPLE
    elif issubclass(cls, (tuple, list)):
        node = _SEQUENCE
    elif issubclass(cls, dict):
        node = _DICT
    elif dataclasses.is_dataclass(cls):
        node = _Dataclass(cls)
    elif plain(cls):
        node = _Plain(cls)
    else:
        node = None
    if len(_NODES) > 4096:      # (classes made anew, in a loop or per call)
        _NODES.clear()
    _NODES[cls] = node
    return node


def is_structure(x):
    """Whether `x` holds other values (is not a leaf)."""
    return node_of(type(x)) is not None


def children(x):
    """The values `x` holds, in order (none for a leaf)."""
    node = node_of(type(x))
    return () if node is None else node.flatten(x)[0]


# -- flatten, unflatten, map -------------------------------------------------------------
class Structure:
    """What `flatten` gives besides the leaves: the value's nodes, their aux, and their
    children's structures, with `size` leaves (`LEAF` for one leaf)."""

    __slots__ = ("node", "aux", "children", "size")

    def __init__(self, node, aux, children):
        self.node, self.aux, self.children = node, aux, children
        self.size = 1 if node is None else sum(c.size for c in children)

    def __repr__(self):
        if self.node is None:
            return "*"
        parts = ", ".join(builtins.map(repr, self.children))
        if isinstance(self.node, _Dict):
            parts = ", ".join(f"{k!r}: {c!r}" for k, c in zip(self.aux, self.children))
            return "{" + parts + "}"
        if type(self.node) is _Sequence:
            return f"[{parts}]" if issubclass(self.aux[0], list) else f"({parts})"
        kind = self.aux[0] if isinstance(self.node, _NamedTuple) else (
            type(self.aux) if isinstance(self.node, _Dataclass) else self.node.cls)
        return f"{kind.__name__}({parts})"


LEAF = Structure(None, None, ())


def flatten(x):
    """`(leaves, structure)`: the leaves of `x`, in order (`[x]` for a leaf), and what
    `unflatten` needs to put other leaves in their places."""
    leaves = []
    try:
        return leaves, _flatten(x, leaves)
    except RecursionError:
        raise cyclic(x) from None


def _flatten(x, leaves):
    node = node_of(type(x))
    if node is None:
        leaves.append(x)
        return LEAF
    parts, aux = node.flatten(x)
    return Structure(node, aux, [_flatten(c, leaves) for c in parts])


def leaves(x):
    """The leaves of `x`, in order (`[x]` for a leaf)."""
    try:
        return _leaves(x)
    except RecursionError:
        raise cyclic(x) from None


def _leaves(x):
    node = node_of(type(x))
    if node is None:
        return [x]
    return [leaf for c in node.flatten(x)[0] for leaf in _leaves(c)]


def cyclic(x):
    return S2SADError(
        f"{_described(x)} that holds itself, or holds values nested too deep to take apart "
        "(an object whose attribute refers back to it?); s2sad takes plain objects apart by "
        "their attributes: register the class with s2sad.register_pytree, with a flatten "
        "that leaves the back reference out of the children")


def unflatten(structure, leaves):
    """The value of `structure` holding `leaves` (any values: a leaf may be a structure
    itself) in the places of the leaves `flatten` gave."""
    if len(leaves) != structure.size:
        raise S2SADError(f"unflatten: a structure of {structure.size} leaves, {structure!r}, "
                         f"given {len(leaves)}")
    return _unflatten(structure, iter(leaves))


def _unflatten(structure, leaves):
    if structure.node is None:
        return next(leaves)
    return structure.node.unflatten(structure.aux, [_unflatten(c, leaves)
                                                    for c in structure.children])


def leaves_as(x, structure):
    """The values of `x` in the places of the leaves of `structure` (whole subtrees
    where `x` goes on deeper); an S2SADError if `x` does not have that structure down
    to them."""
    out = []
    _leaves_as(x, structure, out, ())
    return out


def _leaves_as(x, structure, out, path):
    if structure.node is None:
        out.append(x)
        return
    parts = structure.node.children_as(x, structure.aux)
    if parts is None:
        where = "".join(f"[{p!r}]" for p in path)
        raise S2SADError(f"a value of another structure than {structure!r}: "
                         f"{_described(x)} at x{where}")
    keys = structure.aux if isinstance(structure.node, _Dict) else range(len(parts))
    for key, part, child in zip(keys, parts, structure.children):
        _leaves_as(part, child, out, path + (key,))


def map(f, x, *rest):
    """The value of the structure of `x` holding `f(leaf, *others)` at each leaf of `x`,
    `others` the values in its place in each of `rest` (which have the structure of
    `x`, down to its leaves)."""
    found, structure = flatten(x)
    if structure.node is None:
        return f(x, *rest)
    others = [leaves_as(r, structure) for r in rest]
    return _unflatten(structure, builtins.map(f, found, *others))


def _described(x):
    if isinstance(x, (tuple, list, dict)):
        return f"a {type(x).__name__} of {len(x)}"
    if is_array(x):
        return f"an array of shape {np.shape(x)}"
    return f"a {type(x).__name__}"


# -- adjoints ----------------------------------------------------------------------------
@helper(shape_only=(0,), result="fresh", numba=True)
def zeros_like(x):
    """The zero adjoint of `x`: 0.0 for a number, a float zero array for an array, and
    for a structure the structure holding the zeros of its children (None for a child
    of a record that carries no derivative)."""
    if type(x) is np.ndarray and x.dtype is _FLOAT64:      # the common case, fast
        return np.zeros(x.shape)
    if is_array(x):
        dtype = x.dtype
        if dtype.kind != "f" or dtype.itemsize < 4:     # float32 at least
            dtype = np.result_type(dtype, np.float32)
        # np.zeros is about three times as fast as np.zeros_like (which keeps subclasses,
        # and the library of a duck array)
        return np.zeros(x.shape, dtype) if type(x) is np.ndarray else np.zeros_like(
            x, dtype=dtype)
    node = node_of(type(x))
    if node is None:
        return 0.0
    return node.mapped(x, field_zero if node.record else zeros_like)


define(zeros_like, "x", None, zero=("x",), tangent=())    # a constant: no derivative


def field_zero(v):
    return zeros_like(v) if carries_derivative(v) else None


def carries_derivative(v):
    """Whether a field holding `v` gets an adjoint: floats, float arrays, and structures;
    not ints, bools, strings, None, integer arrays or other objects (their adjoint is
    None, like JAX's float0 or PyTorch's None)."""
    if isinstance(v, (bool, np.bool_)):
        return False
    if isinstance(v, (float, complex, np.floating, np.complexfloating)):
        return True
    if is_array(v):
        return np.issubdtype(v.dtype, np.inexact)
    return is_structure(v)


@helper(numba=True)
def add(a, b):
    """The sum of two adjoints of one value, the one rule every adjoint accumulation
    follows (the pytree sum): numbers and arrays add; two structures of the value add
    child by child; None (no adjoint) and a zero count as zero. An array with a list or
    tuple is the adjoint of the sequence read as an array by NumPy (`np.sum(xs)`): its
    rows are the adjoints of the entries (see `from_array`). Adjoints of other
    structures are an InternalError."""
    if type(a) is type(b):          # the common cases, fast
        if type(a) in _LEAVES:
            return a + b
        if type(a) is tuple and len(a) == len(b):      # (leaves of one type inline)
            return tuple([u + v if type(u) is type(v) and type(u) in _LEAVES else add(u, v)
                          for u, v in zip(a, b)])
    if a is None or is_zero(a):
        return b
    if b is None or is_zero(b):
        return a
    node = node_of(type(a))
    like = a
    if node is None:
        node, like = node_of(type(b)), b
        if node is None:
            return a + b
    if type(a) is not type(like):
        a = from_array(a, like)
    if type(b) is not type(like):
        b = from_array(b, like)
    out = node.zipped(a, b, add)
    if out is None:
        raise _mismatch(a, b)
    return out


# (linear: gradient code differentiated again in reverse mode reads it too)
define(add, "a, b", "g", "g", linear="a, b")


_LEAVES = frozenset({float, np.ndarray})
_FLOAT64 = np.dtype(np.float64)
_NUMBERS = frozenset({float, np.float64})


def is_zero(g):
    return isinstance(g, float) and g == 0.0


@helper(shape_only=(1,), result="of_adjoint", numba=True, linear="g")
def from_array(g, like):
    """`g`, an adjoint of a value of the structure of `like` (the value, or another
    adjoint of it), in that structure: the adjoint of `np.array(obj)` for `like=obj`, of
    a list that NumPy read as an array, or of a list argument (`g` its rows, in a list
    of `like`'s length). A number `g` stands for itself in every place (a uniform
    adjoint, or zero); children of records that carry no derivative get None. A `g` of
    another structure is an InternalError."""
    if g is None:
        return None
    if type(like) is tuple and type(g) is tuple and len(g) == len(like):     # fast
        return tuple([u if type(u) is np.ndarray and type(v) is np.ndarray
                      and u.dtype is _FLOAT64 and v.dtype is _FLOAT64 else from_array(u, v)
                      for u, v in zip(g, like)])
    if type(g) is np.ndarray and type(like) is np.ndarray and g.dtype is _FLOAT64 \
            and like.dtype is _FLOAT64:
        return g
    if type(like) is list and type(g) is np.ndarray and g.dtype is _FLOAT64 and g.shape == (
            len(like),) and all(type(v) in _NUMBERS for v in like):    # (fast: numbers)
        return g.tolist()
    node = node_of(type(like))
    if node is None:
        # (of a real value, the real part of a complex adjoint: as_complex's adjoint)
        if isinstance(like, np.ndarray):
            g = asarray(g)
            return (np.real(g) if g.dtype.kind == "c" and like.dtype.kind != "c" else g).astype(
                np.result_type(like.dtype, np.float32), copy=False)
        if type(like) is complex and isinstance(g, numbers.Number):
            return complex(g)
        if isinstance(g, (complex, np.complexfloating)):
            return float(g.real) if isinstance(like, (int, float)) else g
        return float(g) if isinstance(like, (int, float)) and not is_structure(g) else g
    parts, aux = node.flatten(like)
    if _is_number(g):
        items = [g] * len(parts)
    elif isinstance(node, _Sequence):       # a sequence, or the rows of an array
        items = g if (is_array(g) or isinstance(g, (tuple, list))) and len(g) == len(
            parts) else None
    else:
        items = node.children_as(g, aux)
    if items is None:
        raise _mismatch(g, like)
    return node.unflatten(aux, [None if node.record and not carries_derivative(v)
                                else from_array(u, v) for u, v in zip(items, parts)])


@helper(shape_only=(1, 2), linear="b")
def to_array(b, g, like):
    """The adjoint of `g` in `from_array(g, like)` from the adjoint `b` of its result (of
    the structure of `like`): `b` in the structure and shape of `g`, its transpose. A
    number `g`, which stands for itself in every place, gets the sum of the adjoints of
    the places; None and the zero (0.0) are zero."""
    if g is None:
        return None
    if b is None or is_zero(b) and (is_structure(like) or is_structure(g)):
        return zeros_like(g)
    node = node_of(type(like))
    if node is None:
        return np.sum(b) if _is_number(g) and np.ndim(b) else b
    parts, aux = node.flatten(like)
    if isinstance(node, _Sequence) and is_array(b) and len(b) == len(parts):
        places = list(b)                    # (the rows of an array)
    else:
        places = node.children_as(b, aux) if is_structure(b) else None
    if places is None:
        raise _mismatch(b, like)
    if _is_number(g):
        total = 0.0
        for u, v in zip(places, parts):
            total = total + to_array(u, g, v)
        return total
    rows = g if (is_array(g) or isinstance(g, (tuple, list))) and len(g) == len(parts) \
        else node.children_as(g, aux)
    if rows is None:
        raise _mismatch(g, like)
    out = [to_array(u, r, v) for u, r, v in zip(places, rows, parts)]
    if is_array(g):
        return np.reshape(np.array(out, dtype=np.result_type(g, np.float32)), np.shape(g))
    return rebuild(g, out) if isinstance(g, (tuple, list)) else node.unflatten(aux, out)


# (each the other's transpose)
helper_adjoint(from_array, g="_s2s_to_array(ans_bar, g, like)")
helper_adjoint(to_array, zero="g, like", b="_s2s_from_array(ans_bar, like)")


def _is_number(g):
    """Whether `g` is a number or a 0-d array (not a structure, nor an array of axes)."""
    return not is_structure(g) and np.ndim(g) == 0


def _mismatch(a, b):
    return InternalError(
        f"s2sad's derivative code adds adjoints of one value that have different "
        f"structures ({_structure(a)} and {_structure(b)}); this is a bug in s2sad: "
        "please report it with the function")


def _structure(x):
    if isinstance(x, dict):
        return f"a dict with keys {list(x)}"
    return _described(x)


# -- records ------------------------------------------------------------------------------
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


def rebuild(like, items):
    """A tuple, list or named tuple of the type of `like`, holding `items`."""
    if hasattr(like, "_fields"):
        return type(like)(*items)
    return type(like)(items)


helpers(__name__)
