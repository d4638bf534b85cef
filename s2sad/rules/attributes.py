"""Attribute assignment as a new version of the object: `obj.name = v` in differentiated
code is `obj = _s2s_attr_set(obj, "name", v)` (before_ad.desugar), a shallow copy of
`obj` with the attribute replaced, so that the value the pullback reads of the old
`obj` stays as it was (as `d[k] = v` on a dict is `dict_set`, rules/containers.py).
Taken for an instance of a plain class or a dataclass (see rules/pytrees.py's nodes),
whose adjoint is an instance of its class with adjoints in its fields. Generated code
reaches these helpers through `runtime`, which imports them."""
import dataclasses

from ..errors import S2SADError
from .plain_classes import plain
from .pytrees import carries_derivative, is_zero, node_of, zeros_like
from .registry import define, helper, helper_adjoint, helpers


def attr_set(obj, name, v):
    """A new instance of `obj`'s class holding `obj`'s attributes, with `name` set to `v`
    (`obj` itself unchanged)."""
    cls = type(obj)
    if not _by_dict(cls):
        raise S2SADError(
            f"assigning .{name} of a {cls.__qualname__}: s2sad differentiates an attribute "
            "assignment (obj.x = v) on instances of plain classes and dataclasses, whose "
            f"attributes are their __dict__; keep the value of .{name} in a local variable")
    out = cls.__new__(cls)
    out.__dict__.update(obj.__dict__)
    out.__dict__[name] = v
    return out


define(attr_set, "obj, name, v", obj="_s2s_unattr_set(g, obj, name)",
       v="_s2s_attr_set_value(g, obj, name)", zero="name", view="obj, v", returns="first",
       tangent={"obj": "_s2s_attr_set_dot(t, obj, name, v)",
                "v": "_s2s_attr_set_dot_value(t, obj, name, v)"})


def _by_dict(cls):
    """Whether the instances of `cls` keep their attributes in their `__dict__`, and
    s2sad takes them apart by it (a plain class, or a dataclass without slots that does
    not define `__setattr__`)."""
    if dataclasses.is_dataclass(cls):
        return "__slots__" not in cls.__dict__ and not any(
            "__setattr__" in c.__dict__ for c in cls.__mro__[:-1])
    return plain(cls)


@helper(linear="g")
def unattr_set(g, obj, name):
    """The adjoint of `obj` in `attr_set(obj, name, v)`, `g` the new object's: `g` in
    the attributes of `obj`, zero in `name` (overwritten)."""
    if is_zero(g):
        return g
    node = node_of(type(obj))
    parts, aux = node.flatten(obj)
    record = dataclasses.is_dataclass(obj)      # (a plain class's aux names its children)
    names = [f.name for f in dataclasses.fields(obj)] if record else aux[0][1]
    out = [_zero(p, record) if k == name or not carries_derivative(p) else getattr(g, k)
           for k, p in zip(names, parts)]
    return node.unflatten(aux, out)


# (a projection of `g` onto the attributes of `obj` but `name`)
helper_adjoint(unattr_set, zero="obj, name", g="_s2s_unattr_set(ans_bar, obj, name)")


@helper(linear="g")
def attr_set_value(g, obj, name):
    """The adjoint of `v` in `attr_set(obj, name, v)`: `g`'s attribute `name`."""
    return g if is_zero(g) else getattr(g, name)


helper_adjoint(attr_set_value, zero="obj, name",
               g="_s2s_attr_set_value_back(ans_bar, g, name)")


@helper(linear="g")
def attr_set_value_back(a, g, name):
    """The adjoint of `g` in `attr_set_value(g, obj, name)` (`g` an adjoint of the new
    object, `a` its attribute's): zeros of `g`'s structure with `a` in `name`."""
    if is_zero(g):
        return g
    return attr_set(zeros_like(g), name, a)


helper_adjoint(attr_set_value_back, zero="g, name",
               a="_s2s_attr_set_value(ans_bar, g, name)")


@helper(linear="t")
def attr_set_dot(t, obj, name, v):
    """The tangent of `attr_set(obj, name, v)` from that of `obj`: `t` in the new
    object's structure, zero in `name`; or zero."""
    if t is None or is_zero(t):
        return 0.0
    return attr_set(t, name, _zero(v, dataclasses.is_dataclass(t)))


@helper(linear="t")
def attr_set_dot_value(t, obj, name, v):
    """The tangent of `attr_set(obj, name, v)` from that of `v`: zeros of the new
    object's structure with `t` in `name`; or zero."""
    if t is None or is_zero(t) or not carries_derivative(v):
        return 0.0
    return attr_set(zeros_like(attr_set(obj, name, v)), name, t)


def _zero(v, record=False):
    """What an adjoint or tangent of an object holds in an attribute holding `v`: a zero,
    or where it carries no derivative, `v` itself (a constant of a plain class's
    structure), None in a dataclass's field."""
    return zeros_like(v) if carries_derivative(v) else None if record else v


helpers(__name__)
