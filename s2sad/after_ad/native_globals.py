"""NativeGlobals: a number or an array read from a module global dict (`CFG["lr"]`) or
`types.SimpleNamespace` (`cfg.scale`), which Numba cannot type, read as a constant of
the code (`backend="numba"`).

Takes the numba backend's code after differentiation and leaves it with each such read,
a constant key or attribute of a global the function does not bind, replaced by a name
bound to the value read (`_s2s_CFG_lr`), as Numba holds any global's value. The guards
recompile the derivative when the value changes (frontend/guards.py): the dict's keys
and values by identity (`keywords`), the namespace's attribute by identity, and an array
by its contents (a write into it, `CFG["w"][0] = 2.0`). A read of anything
else (a string, a list, a key not there) is left to Numba, which refuses it, located.

>>> import types
>>> import numpy as np
>>> from s2sad import pipeline
>>> from s2sad.frontend.source import function_from_source
>>> f = function_from_source('''
... def f(x):
...     return x * CFG["lr"] + cfg.shift
... ''', {"CFG": {"lr": 0.1}, "cfg": types.SimpleNamespace(shift=2.0), "np": np})
>>> print(pipeline.stage_source(f, "native_globals", arg_types={"x": float}))
def f_grad(x):
    t = _s2s_CFG_lr
    t_1 = x * t
    y = t_1 + _s2s_cfg_shift
    y_bar = _s2s_seed(y, 'f')
    # grad of: return x * CFG["lr"] + cfg.shift
    x_bar = _s2s_unbroadcast(y_bar * t, x)
    return x_bar
<BLANKLINE>
"""
import numbers
import types

import gast
import numpy as np

from .. import syntax
from ..frontend import guards


def run(fn, ctx):
    """The pass (the numba backend's)."""
    space = ctx.src.fn.__globals__
    cells = set(ctx.src.fn.__code__.co_freevars)
    found = []

    def constant(node):
        base = node.value
        if not (isinstance(base, gast.Name) and isinstance(base.ctx, gast.Load)) or (
                ctx.src.is_local(base.id) or base.id in cells or base.id not in space):
            return node
        holder = space[base.id]
        if type(holder) is dict and isinstance(node, gast.Subscript) and isinstance(
                node.slice, gast.Constant) and _key(node.slice.value) in holder:
            key = _key(node.slice.value)
            value, suffix = holder[key], str(key)
            guard = guards.Guard(("global", space, base.id), (), dict(holder), "keywords")
        elif type(holder) is types.SimpleNamespace and isinstance(node, gast.Attribute) and (
                node.attr in vars(holder)):
            value, suffix = getattr(holder, node.attr), node.attr
            guard = guards.Guard(("global", space, base.id), (node.attr,), value, "is")
        else:
            return node
        if not _held(value):
            return node
        found.append(guard)
        if guards.contents(("object", value), (), value) is not None:
            found.append(guards.contents(("object", value), (), value))
        name = ctx.constant(value, f"{base.id}_{suffix}")
        return syntax.located(syntax.name(name), node)

    def deep(node):
        if isinstance(node, (gast.Subscript, gast.Attribute)) and isinstance(
                node.ctx, gast.Load):
            new = constant(node)
            if new is not node:
                return new
        return syntax.rebuilt(node, deep) if isinstance(node, gast.expr) else node

    for s in syntax.statements(fn):
        syntax.rebuilt(s, lambda c: deep(c) if isinstance(c, gast.expr) else c)
    if found:
        ctx.assume(found)
    return fn


def _key(key):
    return key if isinstance(key, (str, int)) and not isinstance(key, bool) else object()


def _held(value):
    """Whether Numba can hold `value` as a constant of the code: a number or an array of
    numbers."""
    if isinstance(value, (numbers.Number, np.number, np.bool_)) and not isinstance(
            value, complex):
        return True
    return type(value) is np.ndarray and value.dtype.kind in "biuf"
