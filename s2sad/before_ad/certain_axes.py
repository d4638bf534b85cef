"""The number of axes of the names of a function in Wengert form, where it is certain
(for the aliasing pass: an index of an array that picks one element is a copy, one
that picks a row a view).

Parameters of a known shape pattern or kind, arrays made by `np.zeros(n)`,
`np.zeros((n, m))`, ... and their copies and versions have a certain number of axes;
a name with definitions of different numbers, or of one not known, has none.

>>> import gast
>>> from types import SimpleNamespace
>>> from s2sad.analysis.value_kinds import SCALAR
>>> tree = gast.parse("y = np.zeros((n, 3)); z = y.copy(); w = z + y")
>>> defs = {s.targets[0].id: [s.value] for s in tree.body}
>>> ctx = SimpleNamespace(patterns={}, arg_types={"n": int},
...                       value_kinds=SimpleNamespace(kind={"n": SCALAR}),
...                       resolve=lambda f: np.zeros if getattr(f, "attr", "") == "zeros"
...                       else None)
>>> ndims(defs, ctx)
({'n': 0, 'y': 2, 'z': 2, 'w': 2}, {})
"""
import gast
import numpy as np

from .. import marks
from .. import syntax
from ..analysis.value_kinds import SCALAR, UNKNOWN
from ..rules import runtime

#: NumPy functions that make an array of a given shape (the first argument).
_CONSTRUCTORS = ("zeros", "ones", "empty", "full")
_LIKE = ("zeros_like", "ones_like", "empty_like", "full_like", "copy", "array")


def ndims(defs, ctx):
    """{name: its number of axes}, where certain: parameters of known pattern or kind,
    arrays made by np.zeros(n), np.zeros((n, m)), ..., and their copies and versions;
    and {name: the parameters of known shape pattern that number relies on}."""
    known = {p: len(pat) for p, (_, pat) in (ctx.patterns or {}).items()}
    known.update({p: 0 for p, k in ctx.arg_types.items() if k in (int, float)})
    # optimistic, to a fixed point: a name not yet reached is None, one of no certain
    # number of axes UNKNOWN (a name bound in a loop has several definitions)
    ndim = {p: known.get(p, UNKNOWN) for p in ctx.arg_types if p not in defs}

    def of(v):
        if isinstance(v, gast.Constant):
            return None if v.value is None else 0 if isinstance(v.value, (int, float)) \
                else UNKNOWN
        if isinstance(v, gast.Name):
            return ndim.get(v.id, None if v.id in defs else UNKNOWN)
        if isinstance(v, gast.BinOp):
            return _join_sides([of(v.left), of(v.right)])
        if not isinstance(v, gast.Call):
            return UNKNOWN
        if isinstance(v.func, gast.Attribute) and v.func.attr == "copy" and not v.args:
            return of(v.func.value)
        if not v.args:
            return UNKNOWN
        if marks.PRIM.of(v.func) is runtime.setitem:
            return of(v.args[0])
        prim, first = ctx.resolve(v.func), v.args[0]
        if any(prim is getattr(np, f) for f in _CONSTRUCTORS):
            if isinstance(first, gast.Name) and len(defs.get(first.id, [])) == 1:
                first = defs[first.id][0]           # Wengert form names the shape
            if isinstance(first, gast.Tuple):
                return len(first.elts)
            scalar = isinstance(first, gast.Constant) or (
                isinstance(first, gast.Name) and ctx.value_kinds.kind.get(first.id) == SCALAR)
            return 1 if scalar else UNKNOWN
        if any(prim is getattr(np, f) for f in _LIKE):
            return of(first)
        return UNKNOWN
    changed = True
    while changed:
        changed = False
        for name, values in defs.items():
            found = {of(v) for v in values} - {None}
            value = (found.pop() if len(found) == 1 else UNKNOWN) if found else None
            if value is not None and ndim.get(name) != value:
                ndim[name] = value
                changed = True
    known = {n: d for n, d in ndim.items() if d is not UNKNOWN}
    patterned = set(ctx.patterns or ())
    sources = {}        # {name: the parameters of known pattern its number of axes uses}
    for name in known:
        seen, todo = set(), [name]
        while todo:
            n = todo.pop()
            if n not in seen:
                seen.add(n)
                todo += [m for v in defs.get(n, []) for m in syntax.names_loaded(v)]
        if seen & patterned:
            sources[name] = sorted(seen & patterned)
    return known, sources


def _join_sides(sides):
    if UNKNOWN in sides:
        return UNKNOWN
    return None if None in sides else max(sides)
