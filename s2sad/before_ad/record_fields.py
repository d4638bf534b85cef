"""Record fields: the fields of a dataclass parameter that the function only reads are
read once, at its top.

In Wengert form each read of a field is a statement of its own, `t = p.dt`. The first
read of each field moves to the top of the function, and the others become reads of its
name: `p.dt` read in a loop is then a number bound before the loop, which the loop
neither tapes nor gives an adjoint record at each step (`_s2s_unattr` per read); the
adjoint of `p` is built once, from one adjoint per field. Done only where it changes
nothing the function means: `p` is a parameter of a dataclass type the code is
specialised on, the function never binds it again and reads nothing of it but its
fields (no method call, no call it is passed to, which could change a field), and the
field is a number or an array of a type the code is specialised on.

>>> import dataclasses
>>> @dataclasses.dataclass
... class Launch:
...     v0: float
...     dt: float
>>> from s2sad import pipeline
>>> from s2sad.frontend.source import function_from_source
>>> f = function_from_source('''
... def f(p):
...     x = 0.0
...     for i in range(3):
...         x = x + p.dt * p.v0
...     return x * p.dt
... ''', {})
>>> arg_types = {"p": Launch, "p.v0": float, "p.dt": float}   # (as arg_types_of gives)
>>> print(pipeline.stage_source(f, "record_fields", arg_types=arg_types))
def f(p):
    t = p.dt
    t_1 = p.v0
    x = 0.0
    for i in range(3):
        t_2 = t * t_1
        x_1 = x + t_2
        # path end
        x = x_1
    y = x * t
    return y
<BLANKLINE>
"""
import collections
import dataclasses

import gast
import numpy as np

from .. import syntax
from ..analysis.names import rename


def run(fn, ctx):
    """The pass."""
    params = [a.id for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs
              if _fields(ctx.types.get(a.id))]
    if not params:
        return fn       # (no dataclass parameter)
    body = syntax.if_(syntax.const(True), fn.body)
    stores = collections.Counter(syntax.names_stored(body))
    loads = collections.Counter(n.id for n in syntax.name_nodes(body)
                                if isinstance(n.ctx, gast.Load))
    reads = {}          # {p: [(statement, attribute node)]}
    for s in syntax.in_order(fn.body):
        own = [v for f, v in gast.iter_fields(s) if f not in ("body", "orelse")]
        for node in (n for v in own for part in (v if isinstance(v, list) else [v])
                     if isinstance(part, gast.AST) for n in syntax.walk(part)):
            if isinstance(node, gast.Attribute) and isinstance(node.value, gast.Name):
                reads.setdefault(node.value.id, []).append((s, node))
    moved, dropped, renames = [], set(), {}
    for p in params:
        fields = _fields(ctx.types.get(p))
        found = reads.get(p, [])
        if (not fields or stores[p] or not found or len(found) != loads[p]
                or not all(isinstance(a.ctx, gast.Load) and a.attr in fields
                           for _, a in found)):
            continue        # a method, a field written, or `p` itself used
        first = {}
        for s, a in found:
            if ctx.arg_types.get(f"{p}.{a.attr}") not in (float, int, np.ndarray):
                continue    # a list's adjoint needs the record's structure: left as it is
            whole = (isinstance(s, gast.Assign) and s.value is a
                     and syntax.is_name(s.targets[0]) and stores[s.targets[0].id] == 1)
            if a.attr not in first:
                if not whole:
                    break   # (Wengert form reads a field in a statement of its own)
                first[a.attr] = s.targets[0].id
                moved.append(s)
            elif whole:
                renames[s.targets[0].id] = first[a.attr]
                dropped.add(id(s))
    if not moved:
        return fn
    ctx.rewrote = True
    gone = {id(s) for s in moved} | dropped
    fn.body = _without(fn.body, gone)
    fn.body[:0] = moved
    for old, new in renames.items():
        rename(fn, old, new)
    return fn


def _without(stmts, gone):
    """`stmts` without the statements whose ids are in `gone`, also in nested blocks."""
    out = []
    for s in stmts:
        if id(s) in gone:
            continue
        if isinstance(s, (gast.For, gast.While, gast.If)):
            s.body = _without(s.body, gone) or [gast.Pass()]
            s.orelse = _without(s.orelse, gone)
        out.append(s)
    return out


def _fields(cls):
    """The field names of a dataclass class, else None."""
    if isinstance(cls, type) and dataclasses.is_dataclass(cls):
        return {f.name for f in dataclasses.fields(cls)}
    return None
