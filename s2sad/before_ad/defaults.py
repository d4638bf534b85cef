"""Default values changed in place, for before_ad.desugar: Python evaluates a parameter's
default once, when `def` runs, so a function that changes it in place (`acc.append(x)`
of `def f(x, acc=[])`, `buf[0] = v`) finds the change at its next call. The derivative
code changes no object it is given; a call that leaves the parameter at its default
works on a copy, and gives the default the copy's final contents before it returns, as
one call of the function leaves it:

    defaulted = acc is acc_default
    if defaulted:
        acc = _s2s_own_default(acc)
    ...
    if defaulted:
        _s2s_keep_default(acc_default, acc)
    return y

`acc_default` is the object the function holds (the derivative's own default too, so
that an exported module keeps its own); a parameter changed in place and assigned is
refused, since the change could be made to either object.
"""
import inspect

import gast
import numpy as np

from .. import syntax
from ..frontend import source

#: The default objects a function may change in place (Python keeps them between calls).
MUTABLE = (list, dict, np.ndarray)
#: The methods that change a list, dict or array in place.
CHANGING = frozenset({"append", "extend", "insert", "pop", "remove", "reverse", "sort",
                      "clear", "update", "setdefault", "popitem", "fill", "put", "partition",
                      "resize", "itemset", "__setitem__", "__iadd__"})


def changed(fn, src):
    """{parameter: (its default object, the first node that changes it)} of the
    parameters whose default (a list, dict or array) `fn`, of source `src`, changes in
    place."""
    if source.is_generated(src):
        return {}
    try:
        params = inspect.signature(src.fn).parameters.values()
    except (TypeError, ValueError):
        return {}
    mutable = {p.name: p.default for p in params if isinstance(p.default, MUTABLE)}
    if not mutable:
        return {}
    nodes = [n for s in fn.body for n in syntax.walk(s)]
    augmented = {id(n.target) for n in nodes if isinstance(n, gast.AugAssign)}
    found, rebound = {}, {}
    for node in nodes:
        name = _changed_in_place(node)
        if name in mutable:
            found.setdefault(name, node)
        if isinstance(node, gast.Name) and node.id in mutable and isinstance(
                node.ctx, gast.Store) and id(node) not in augmented:
            rebound.setdefault(node.id, node)
    for name, node in found.items():
        if name in rebound:
            raise src.syntax_error(rebound[name], (
                f"{name} is assigned here, and its default value, which Python keeps from "
                f"call to call, is changed in place at line {src.lineno(node)}; s2sad "
                f"cannot tell which of the two the change is made to. Give the new value "
                f"another name, or use a default of None ({name}=None, then "
                f"`if {name} is None: {name} = ...`)"))
    return {name: (mutable[name], found[name]) for name in sorted(found)}


def keep(fn, changed, ctx):
    """`fn` (desugared: its one `return` last) working on copies of the defaults in
    `changed` (see `changed`) that a call leaves, and giving them their final contents
    before the `return` (see the module docstring)."""
    first, last = [], []
    args = fn.args
    positional = [a.id for a in args.posonlyargs + args.args][-len(args.defaults):] if (
        args.defaults) else []
    for name, (default, where) in changed.items():
        bound = ctx.bind(f"{name}_default", obj=default)
        # the derivative's own default is that object too (an exported module's too)
        if name in positional:
            args.defaults[positional.index(name)] = syntax.name(bound)
        else:
            args.kw_defaults[[a.id for a in args.kwonlyargs].index(name)] = syntax.name(bound)
        flag = ctx.namer.fresh("defaulted")
        made = [syntax.assign(flag, gast.Compare(left=syntax.name(name), ops=[gast.Is()],
                                                 comparators=[syntax.name(bound)])),
                syntax.if_(syntax.name(flag), [syntax.assign(name, syntax.call(
                    ctx.runtime("own_default"), [syntax.name(name)]))]),
                syntax.if_(syntax.name(flag), [syntax.expr_stmt(syntax.call(
                    ctx.runtime("keep_default"), [syntax.name(bound), syntax.name(name)]))])]
        for block in syntax.blocks(made):
            for s in block:
                syntax.located(s, where)      # (the line that changes the default)
        first += made[:2]
        last.append(made[2])
    fn.body = first + fn.body[:-1] + last + fn.body[-1:]


def _changed_in_place(node):
    """The name `node` changes in place (`p.append(v)`, `p[i] = v`, `p[i][j] += v`,
    `p += v`), or None."""
    if isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute) and (
            node.func.attr in CHANGING and isinstance(node.func.value, gast.Name)):
        return node.func.value.id
    if isinstance(node, (gast.Assign, gast.AugAssign, gast.AnnAssign)):
        for target in getattr(node, "targets", None) or [node.target]:
            if isinstance(node, gast.AugAssign) and isinstance(target, gast.Name):
                return target.id
            while isinstance(target, gast.Subscript):
                target = target.value
                if isinstance(target, gast.Name):
                    return target.id
    return None
