"""The rules of constructors, made on a class's first lookup (registry.primitive, `constructed_by`): a
dataclass's and a named tuple's called with their fields, and a plain class's whose
`__init__` only stores its parameters (rules/plain_classes.py). Each is linear in what it
stores; the adjoint of a field is that field of the object's adjoint (`_s2s_field`)."""
import dataclasses
import inspect

from .plain_classes import plain, stored_parameters
from .registry import PRIMITIVES, REQUIRED, constructed_by, define


def constructor(cls):
    """The record of the constructor of the dataclass or named tuple `cls` called with its
    fields (by position or name): the adjoint of a field is that field of the record's
    adjoint, and the record is linear in its fields. None for other classes, and for
    fields s2sad cannot pass (keyword-only, or with a default that is not a literal)."""
    if issubclass(cls, tuple) and hasattr(cls, "_fields"):
        defaults = getattr(cls, "_field_defaults", {})
        fields = [(f, defaults.get(f, REQUIRED)) for f in cls._fields]
    elif dataclasses.is_dataclass(cls):
        fields = []
        for f in dataclasses.fields(cls):
            if not f.init:
                continue
            if getattr(f, "kw_only", False) or f.default_factory is not dataclasses.MISSING:
                return None
            fields.append((f.name, REQUIRED if f.default is dataclasses.MISSING
                           else f.default))
    else:
        return _plain(cls)
    if any(d is not REQUIRED and not isinstance(d, (int, float, bool, str, type(None)))
           for _, d in fields):
        return None
    params = ", ".join(n if d is REQUIRED else f"{n}={d!r}" for n, d in fields)
    define(cls, params, quiet=True,                     # (_s2s_field: containers.field)
           linear=", ".join(n for n, _ in fields),
           **{n: f"_s2s_field(g, {n!r})" for n, _ in fields})
    return PRIMITIVES.get(cls)


def _plain(cls):
    """The record of the constructor of the plain class `cls` (see pytrees.plain) whose
    `__init__` only stores: each statement (but a docstring) is `self.a = p` (or `self.a,
    self.b = p, q`), storing a parameter `p` as it is, or `self.a = c` for a constant `c`
    that carries no derivative (an int, a string, None); each parameter stored at most
    once, each attribute once.
    The adjoint of a parameter stored is that attribute of the object's adjoint, and the
    object is linear in them (as a dataclass's constructor is in its fields). A
    parameter it does not store has no rule, so a differentiated value passed to it is
    refused. None for other classes (an `__init__` that computes, calls or branches),
    found once per class."""
    if cls in _NOT_CONSTRUCTORS or not plain(cls):
        return None
    stored = stored_parameters(cls)
    if stored is None:
        _NOT_CONSTRUCTORS.add(cls)
        return None
    params = []
    for p in list(inspect.signature(cls.__init__).parameters.values())[1:]:
        default = p.default
        if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            _NOT_CONSTRUCTORS.add(cls)
            return None
        if default is inspect.Parameter.empty:
            params.append(p.name)
        else:       # (a default no template reads: a function, an object, a literal)
            literal = isinstance(default, (int, float, bool, str, type(None)))
            params.append(f"{p.name}={default!r}" if literal else f"{p.name}=None")
    linear = [p for p in stored if p in {q.split("=")[0] for q in params}]
    define(cls, ", ".join(params), quiet=True,           # (_s2s_field: containers.field)
           linear=", ".join(linear) if linear else None,
           **{p: f"_s2s_field(g, {a!r})" for p, a in stored.items()})
    return PRIMITIVES.get(cls)


_NOT_CONSTRUCTORS = set()   # (weak in effect: a class made in a loop is rare)


constructed_by(constructor)
