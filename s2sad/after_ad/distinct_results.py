"""DistinctResults: gradients that could share memory are returned as copies (`x + y`
gives both operands the same adjoint, and updating one returned gradient in place must
leave the other alone)."""
import gast

from .. import syntax
from ..analysis.value_kinds import ARRAY
from ..rules.registry import helper_facts


def run(vjp, ctx):
    """The pass: see `copied_results`, for the gradients of arrays."""
    kinds = ctx.value_kinds.kind
    copied_results(ctx.reverse.pullback,
                   {i for i, p in enumerate(ctx.wrt) if kinds.get(p) == ARRAY})
    return vjp


#: NumPy functions (besides ufuncs) whose result is a new array.
_FRESH_NUMPY = {"sum", "mean", "prod", "dot", "matmul", "einsum", "outer", "where",
                "zeros", "ones", "empty", "full", "zeros_like", "ones_like", "empty_like",
                "full_like", "copy",
                "array", "cumsum", "cumprod", "clip", "tensordot", "inner"}


def _sources(e):
    """The names whose memory the value of `e` may share (none for a new array)."""
    if isinstance(e, (gast.BinOp, gast.UnaryOp, gast.Compare, gast.Constant)):
        return set()
    if isinstance(e, gast.Name):
        return {e.id}
    if isinstance(e, gast.Subscript):
        return _sources(e.value)
    if isinstance(e, gast.IfExp):
        return _sources(e.body) | _sources(e.orelse)
    if isinstance(e, gast.Call):
        f = e.func
        facts = helper_facts(f.id) if isinstance(f, gast.Name) else None
        if facts is not None and facts.result == "fresh":
            return set()
        if facts is not None and facts.result == "of_adjoint" and e.args:
            return _sources(e.args[0])
        if (isinstance(f, gast.Attribute) and isinstance(f.value, gast.Name)
                and f.value.id in ("np", "numpy")):
            import numpy as np
            if isinstance(getattr(np, f.attr, None), np.ufunc) or f.attr in _FRESH_NUMPY:
                return set()
        return set().union(*(_sources(a) for a in e.args),
                           *(_sources(k.value) for k in e.keywords))
    return set(syntax.names_loaded(e))


def copied_results(pullback, arrays):
    """Copy a returned gradient (at the positions `arrays` of the returned tuple) that
    may share memory with another one: `x + y` gives both operands the same adjoint,
    and updating one returned gradient in place must leave the other alone."""
    ret = pullback.body[-1]
    if not (isinstance(ret, gast.Return) and isinstance(ret.value, gast.Tuple)):
        return
    sources = {}
    for s in syntax.statements(pullback):
        if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name):
            sources.setdefault(s.targets[0].id, set()).update(_sources(s.value))
        elif isinstance(s, (gast.Assign, gast.For)):
            for n in syntax.names_stored(s.targets[0] if isinstance(s, gast.Assign)
                                        else s.target):
                sources.setdefault(n, set()).add(n)

    def roots(name):
        seen, todo = set(), [name]
        while todo:
            n = todo.pop()
            if n not in seen:
                seen.add(n)
                todo.extend(sources.get(n, ()))
        return {n for n in seen if not sources.get(n) or n in sources[n]}

    taken = set()
    for i, e in enumerate(ret.value.elts):
        if i not in arrays or not isinstance(e, gast.Name):
            continue
        mine = roots(e.id)
        if mine & taken:
            ret.value.elts[i] = syntax.call(syntax.attribute(syntax.name("np"), "copy"), [e])
        taken |= mine
