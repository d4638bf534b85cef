"""Kind analysis: which names are certainly scalars, arrays, or containers.

Adjoints of broadcasting operations must be summed back to their argument's shape. The
engine emits that only where it may be needed: two scalars never broadcast, nor does an
array with a scalar. The kinds of the parameters come from the arguments of the call
the derivative is compiled for (the generated code checks them, like JAX specialises on
shapes); everything else follows from the code. SCALAR means "has shape ()": Python
numbers, and NumPy results of full reductions.
"""
import numbers

import gast
import numpy as np

from .. import syntax
from ..frontend.source import MISSING
from ..rules import registry
from ..rules.arrays import is_duck_array_type

SCALAR, ARRAY, CONTAINER, UNKNOWN = "scalar", "array", "container", "unknown"
SCALARS = "scalars"     # a container of scalars, such as an array's shape
# An instance of a class of the user's (see `user_class`) has that class as its kind: its
# methods are found through it (passes/resolve_calls.py).


def join(a, b):
    if a is None:
        return b
    return a if a == b or b is None else UNKNOWN


def combine(kinds):
    """The kind of an arithmetic result over operands of `kinds`."""
    kinds = [k for k in kinds if k is not None]
    if ARRAY in kinds:
        return ARRAY
    if kinds and all(k == SCALAR for k in kinds):
        return SCALAR
    return UNKNOWN


def guarded(params, types):
    """The names in `types` ({parameter or "p.field": type}) whose types specialised code
    checks, in order: the parameters `params`, then their fields."""
    fields = sorted(k for k in types if k not in params and k.split(".")[0] in params)
    return [p for p in params if p in types] + fields


class ValueKinds:
    def __init__(self, fn, src, params=None):
        self.src = src
        self.kind = {a.id: UNKNOWN for a in fn.args.args + fn.args.posonlyargs
                     + fn.args.kwonlyargs}
        self.kind.update(params or {})
        # in source order: a kind is joined from its definitions round by round, and
        # one found from an operand not yet known would be joined in too early (`a =
        # 0.5 * t` seen before the branches that define `t` took `a` for a number)
        statements = [fn, *syntax.in_order(fn.body, functions=True)]
        defs = [(n.targets[0].id, n.value) for n in statements
                if isinstance(n, gast.Assign) and isinstance(n.targets[0], gast.Name)]
        defs += [(n.target.id, _target_kind(n, src)) for n in statements
                 if isinstance(n, gast.For)]
        self.assigned = {t for t, _ in defs}
        self.local = self.assigned | set(self.kind)
        changed = True
        while changed:
            changed = False
            for target, value in defs:
                k = join(self.kind.get(target), self.of(value))
                if k != self.kind.get(target):
                    self.kind[target] = k
                    changed = True

    def __getitem__(self, atom):
        return self.of(atom)

    def of(self, e):
        if e is None or isinstance(e, str):
            return e or UNKNOWN
        if isinstance(e, gast.Constant):
            return SCALAR if isinstance(e.value, (int, float, bool)) else None
        if isinstance(e, gast.Name):
            if e.id in self.local or self.src.is_local(e.id):
                return self.kind.get(e.id)
            return _kind_of_object(self.src.resolve(e))
        if isinstance(e, gast.Attribute) and not _is_local_ref(e, self.src):
            return _kind_of_object(self.src.resolve(e))
        if isinstance(e, gast.BinOp):
            if isinstance(e.op, gast.MatMult):
                return ARRAY
            kinds = [self.of(e.left), self.of(e.right)]
            if isinstance(e.op, (gast.Add, gast.Mult)) and CONTAINER in kinds:
                return CONTAINER        # lists or tuples joined or repeated
            return combine(kinds)
        if isinstance(e, gast.UnaryOp):
            return combine([self.of(e.operand)])
        if isinstance(e, (gast.Tuple, gast.List)):
            return CONTAINER
        if isinstance(e, gast.Call):
            prim = getattr(e.func, "s2s_prim", None) or self.src.resolve(e.func)
            if isinstance(prim, type) and user_class(prim):
                return prim         # an instance built here: `m = Model(3.0)`
            method = prim is MISSING and isinstance(e.func, gast.Attribute)
            if method:
                prim = registry.METHODS.get(e.func.attr, MISSING)
            record = registry.primitive(prim)
            state = getattr(getattr(prim, "s2s_lifted", None), "state", None)
            if state is not None and len(state) == 1:   # a checkpointed loop's step
                return self.of(e.args[1])               # (its state, changed)
            if record is None:
                return UNKNOWN
            if record.reduction:        # a full reduction has shape ()
                partial = any(k.arg in ("axis", "keepdims") for k in e.keywords) or (
                    len(e.args) > (0 if method else 1))
                return ARRAY if partial else SCALAR
            if record.returns == "args":
                return combine([self.of(a) for a in e.args])
            if record.returns == "first":       # an element write: the array or list written
                return self.of(e.args[0]) if e.args else UNKNOWN
            if (isinstance(prim, np.ufunc) and e.args and not e.keywords
                    and all(self.of(a) == SCALAR for a in e.args)):
                return SCALAR       # a ufunc of numbers gives a NumPy scalar (shape ())
            return record.returns or UNKNOWN
        if isinstance(e, gast.Attribute):
            field = _field_key(e)
            if field in self.kind and e.value.id not in self.assigned:
                return self.kind[field]     # a field of a dataclass or named tuple argument
            record = registry.primitive(registry.ATTRIBUTES.get(e.attr))
            return (record.returns if record else None) or UNKNOWN
        if isinstance(e, gast.Subscript):
            base = self.of(e.value)
            if base == CONTAINER and isinstance(e.slice, gast.Slice):
                return CONTAINER            # a slice of a list or tuple
            return {ARRAY: ARRAY, SCALARS: SCALAR}.get(base, UNKNOWN)
        if isinstance(e, gast.Compare):       # elementwise on arrays
            return combine([self.of(e.left)] + [self.of(c) for c in e.comparators])
        if isinstance(e, gast.BoolOp):
            return combine([self.of(v) for v in e.values])
        return SCALAR


def sequence_operands(op, kinds):
    """The operand nodes of `op` if it is a `+` that joins lists or tuples or a `*` that
    repeats one (an operand is one), else None."""
    node = op.node
    if (isinstance(node, gast.BinOp) and isinstance(node.op, (gast.Add, gast.Mult))
            and CONTAINER in (kinds[node.left], kinds[node.right])):
        return [node.left, node.right]
    return None


def _field_key(e):
    """"p.a" for the attribute read `p.a` of a name, else None."""
    return f"{e.value.id}.{e.attr}" if isinstance(e.value, gast.Name) else None


def _target_kind(loop, src):
    """The kind of a for loop's target: a scalar over range(...)."""
    it = loop.iter
    if isinstance(it, gast.Call) and src.resolve(it.func) is range:
        return SCALAR
    return UNKNOWN


def _is_local_ref(e, src):
    while isinstance(e, gast.Attribute):
        e = e.value
    return isinstance(e, gast.Name) and src.is_local(e.id)


def user_class(cls):
    """Whether `cls` is a class of the user's, defined in Python, whose instances s2sad
    resolves methods through: not a number, array, container, function or module type,
    nor a named tuple (a record, read by field), nor an array of another library that
    NumPy dispatches to (a Dask or CuPy array, see rules/arrays.py)."""
    return (isinstance(cls, type) and cls.__module__ not in _NOT_USER
            and not cls.__module__.startswith("numpy") and not is_duck_array_type(cls)
            and not issubclass(cls, (tuple, list, dict, set, numbers.Number, np.ndarray,
                                     np.generic, BaseException)))


_NOT_USER = {"builtins", "functools", "types", "collections", "typing", "abc"}


def _kind_of_object(obj):
    if user_class(type(obj)):
        return type(obj)
    if isinstance(obj, np.ndarray):
        return ARRAY
    if isinstance(obj, (numbers.Number, np.generic)):
        return SCALAR
    if isinstance(obj, (tuple, list)):
        return CONTAINER
    return UNKNOWN
