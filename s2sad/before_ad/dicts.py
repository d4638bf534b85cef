"""Dicts for before_ad.desugar: every dict a function builds becomes a dict display with
constant keys, which the engine differentiates like a tuple display (its values are
the container's leaves, the adjoint of one is the display's adjoint at its key), or a
call of the runtime helper `dict_of(keys, values)`, whose rule gives each value the
adjoint at its key:

- `{"a": x, "b": y}` stays as it is; a display whose keys are computed, or repeat, is
  `_s2s_dict_of([k1, k2], [v1, v2])`;
- `dict(a=x, b=y)` is `{"a": x, "b": y}`, `dict()` is `{}`, and `dict(zip(ks, vs))` is
  `_s2s_dict_of(ks, vs)` (`dict(d)`, a copy, has a rule of its own);
- a dict comprehension is a loop that appends its keys and values to two lists (see
  `Desugar.dict_comprehension`), then `_s2s_dict_of(keys, values)`;
- `d[k] = v` into a name the function binds only to dicts it builds is
  `d = _s2s_dict_set(d, k, v)`, a new dict, whose adjoint has the old dict's keys (the
  element write `a[i] = v` that other names keep zeroes the key of a dict's adjoint,
  which is right where the key was there before; `d[k] += v` stays one, so that
  before_ad.aliasing follows it where it changes an array in place);
- `f(**d)` passes the keywords one by one, `f(a=d["a"], b=d["b"])`, where `d` is a dict
  display or a name bound once to one, whose keys are then known.

>>> from s2sad.before_ad.desugar import Desugar
>>> print(show(Desugar, '''
... def f(x, names):
...     d = dict(a=x, b=2 * x)
...     e = {k: d[k] * x for k in names}
...     return g(**d) + e["a"]
... '''))
def f(x, names):
    d = {'a': x, 'b': 2 * x}
    keys = []
    values = []
    seq = _s2s_sequence(names)
    for i in range(len(seq)):
        k = seq[i]
        keys.append(k)
        values.append(d[k] * x)
    e = _s2s_dict_of(keys, values)
    return g(a=d['a'], b=d['b']) + e['a']
"""
import gast

from .. import marks, syntax
from ..rules import runtime


class Dicts(gast.NodeTransformer):
    """Rewrites the dicts of the expressions of one function (see the module docstring);
    `fn` is the function, whose names bound once to a dict display `f(**name)` reads."""

    def __init__(self, ctx, fn, active=True):
        self.ctx = ctx
        self.src = ctx.src
        # `active`: whether `fn` has a node `is_dict_node` (most functions build no dict)
        self.active = active
        self.displays = _displays(fn, self.src) if active else {}
        self.built = _built(fn, self.src) if active else set()

    def needed(self, node):
        """Whether `node` has anything this rewrites."""
        return any(is_dict_node(n) for n in syntax.walk(node))

    def visit_Dict(self, node):
        self.generic_visit(node)
        if constant_keys(node.keys):
            return node
        return self.dict_of(gast.List(elts=node.keys, ctx=gast.Load()),
                            gast.List(elts=node.values, ctx=gast.Load()), node)

    def visit_Call(self, node):
        self.generic_visit(node)
        if any(k.arg is None for k in node.keywords):
            node.keywords = [out for k in node.keywords for out in self.unpacked(k, node)]
        if self.src.resolve(node.func) is not dict:
            return node
        if not node.args:
            return syntax.located(gast.Dict(keys=[syntax.const(k.arg) for k in node.keywords],
                                            values=[k.value for k in node.keywords]), node)
        if len(node.args) == 1 and not node.keywords and not isinstance(
                node.args[0], gast.Starred):
            arg = node.args[0]
            if (isinstance(arg, gast.Call) and self.src.resolve(arg.func) is zip
                    and len(arg.args) == 2 and not arg.keywords
                    and not any(isinstance(a, gast.Starred) for a in arg.args)):
                return self.dict_of(arg.args[0], arg.args[1], node)
            return node         # `dict(d)`: a copy (rules/builtins.py)
        raise self.src.syntax_error(node, (
            "this call of dict() is not supported; build the dict with a display "
            "({'a': x, 'b': y}), dict(a=x, b=y), dict(zip(keys, values)) or a dict "
            "comprehension"))

    def unpacked(self, keyword, call):
        """The keywords `**d` passes in `call`: `d`'s keys, where they are known."""
        if keyword.arg is not None:
            return [keyword]
        d = keyword.value
        if isinstance(d, gast.Dict) and constant_keys(d.keys) and all(
                isinstance(k.value, str) for k in d.keys):
            return [gast.keyword(arg=k.value, value=v) for k, v in zip(d.keys, d.values)]
        if isinstance(d, gast.Name) and d.id in self.displays:
            return [gast.keyword(arg=k, value=gast.Subscript(
                value=syntax.name(d.id), slice=syntax.const(k), ctx=gast.Load()))
                for k in self.displays[d.id]]
        raise self.src.syntax_error(keyword.value, (
            "**d in a call is supported where d is a dict display, or a name the function "
            "binds once to a dict display with string keys and does not change, whose "
            "keys are then known; here pass the keyword arguments by name (f(a=d['a'], "
            "b=d['b']))"))

    def element_write(self, s):
        """`d = _s2s_dict_set(d, key, v)` for `s`, `d[key] = v` into a dict the function
        builds (a new value, whose keys may be more than the old one's); else None."""
        if not self.built:
            return None
        target = s.targets[0] if isinstance(s, gast.Assign) and len(s.targets) == 1 else None
        if not (isinstance(target, gast.Subscript) and isinstance(target.value, gast.Name)
                and target.value.id in self.built
                and not isinstance(target.slice, (gast.Slice, gast.Tuple))):
            return None
        func = syntax.name(self.ctx.runtime("dict_set"))
        marks.PRIM.put(func, runtime.dict_set)
        call = syntax.call(func, [syntax.name(target.value.id), target.slice, s.value])
        return syntax.located(syntax.assign(target.value.id, call), s)

    def dict_of(self, keys, values, node):
        func = syntax.name(self.ctx.runtime("dict_of"))
        marks.PRIM.put(func, runtime.dict_of)
        return syntax.located(syntax.call(func, [keys, values]), node)


def is_dict_node(n):
    """Whether the node `n` is one `Dicts` may rewrite: a dict display or comprehension,
    a call with `**`, or a call of a function named `dict` (`dict(...)`)."""
    kind = n.__class__
    if kind is gast.Dict or kind is gast.DictComp:
        return True
    if kind is not gast.Call:
        return False
    func = n.func
    return (func.__class__ is gast.Name and func.id == "dict") or (
        func.__class__ is gast.Attribute and func.attr == "dict") or any(
        k.arg is None for k in n.keywords)


def constant_keys(keys):
    """Whether `keys`, those of a dict display, are constants, each once (`1` and `True`
    are one key)."""
    if not all(isinstance(k, gast.Constant) for k in keys):
        return False
    try:
        return len({k.value for k in keys}) == len(keys)
    except TypeError:       # (a key that cannot be hashed: Python raises)
        return False


def _displays(fn, src):
    """{name: its keys} for the names of `fn` bound once, to a dict display with string
    keys or `dict(a=..., b=...)`, and never changed (no element written, no method
    called but those that read it, no `del`)."""
    bound, out, changed = {}, {}, set()
    for n in syntax.walk(fn):
        if isinstance(n, gast.Name) and not isinstance(n.ctx, gast.Load):
            bound[n.id] = bound.get(n.id, 0) + 1
        if isinstance(n, (gast.Subscript, gast.Attribute)) and isinstance(
                n.value, gast.Name) and (not isinstance(n.ctx, gast.Load) or (
                    isinstance(n, gast.Attribute) and n.attr not in _READING)):
            changed.add(n.value.id)
        if (isinstance(n, gast.Assign) and len(n.targets) == 1
                and isinstance(n.targets[0], gast.Name)):
            keys = _string_keys(n.value, src)
            if keys is not None:
                out[n.targets[0].id] = keys
    params = {a.id for a in fn.args.args + fn.args.posonlyargs + fn.args.kwonlyargs}
    return {k: v for k, v in out.items()
            if bound[k] == 1 and k not in changed and k not in params}


#: The methods of a dict that leave it as it is.
_READING = {"get", "keys", "values", "items", "copy"}


def _string_keys(e, src):
    """The keys of `e`, a dict display with string keys or `dict(a=..., b=...)`, or None."""
    if isinstance(e, gast.Dict) and constant_keys(e.keys) and all(
            isinstance(k.value, str) for k in e.keys):
        return [k.value for k in e.keys]
    if (isinstance(e, gast.Call) and not e.args and src.resolve(e.func) is dict
            and all(k.arg is not None for k in e.keywords)):
        return [k.arg for k in e.keywords]
    return None


def _built(fn, src):
    """The names of `fn` every assignment binds to a dict it builds (a display, a dict
    comprehension, a call of dict), not parameters: their element writes make new
    dicts (`Dicts.element_write`)."""
    out = {}
    for n in syntax.walk(fn):
        if isinstance(n, gast.Assign) and len(n.targets) == 1 and isinstance(
                n.targets[0], gast.Name):
            v = n.value
            made = isinstance(v, (gast.Dict, gast.DictComp)) or (
                isinstance(v, gast.Call) and src.resolve(v.func) is dict)
            out[n.targets[0].id] = out.get(n.targets[0].id, True) and made
        elif isinstance(n, (gast.For, gast.AugAssign, gast.AnnAssign, gast.NamedExpr,
                            gast.comprehension, gast.Assign)):
            targets = n.targets if isinstance(n, gast.Assign) else [n.target]
            for t in targets:
                for name in syntax.name_nodes(t):
                    if isinstance(name.ctx, gast.Store):
                        out[name.id] = False
    params = {a.id for a in fn.args.args + fn.args.posonlyargs + fn.args.kwonlyargs}
    return {k for k, ok in out.items() if ok and k not in params}
