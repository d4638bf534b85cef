"""DistinctResults: gradients that could share memory are returned as copies (`x + y`
gives both operands the same adjoint, and updating one returned gradient in place must
leave the other alone)."""
import gast

from .. import syntax
from ..analysis.value_kinds import ARRAY


def run(vjp, ctx):
    """The pass: see `copied_results`, for the gradients of arrays."""
    kinds = ctx.value_kinds.kind
    copied_results(ctx.reverse.pullback,
                   {i for i, p in enumerate(ctx.wrt) if kinds.get(p) == ARRAY})
    return vjp


#: Runtime helpers whose result is a new array (never `g` itself or a view of an argument).
_FRESH_HELPERS = {"_s2s_" + n for n in (
    "unindex", "zeros_like", "unreduce", "matmul_lhs", "matmul_rhs", "dot_lhs", "dot_rhs",
    "einsum", "tensordot", "inner", "trace", "solve", "cholesky", "inv", "norm",
    "extremum", "variance", "cumprod", "unsort", "prod_others")}


#: Runtime helpers whose result may be their adjoint argument `g` or a view of it.
_OF_ADJOINT = {"_s2s_" + n: 0 for n in (
    "unbroadcast", "reshape_like", "untranspose", "cotangent", "cast_like", "from_array",
    "take", "head", "last", "split_like", "unstack", "hstack", "vstack", "unpad", "untile",
    "unrepeat", "cumsum", "diag", "outer", "zero_at", "unattr", "unsum", "swapaxes",
    "moveaxis", "flip", "roll", "triu", "tril")}


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
        if isinstance(f, gast.Name) and f.id in _FRESH_HELPERS:
            return set()
        if isinstance(f, gast.Name) and f.id in _OF_ADJOINT and len(e.args) > _OF_ADJOINT[f.id]:
            return _sources(e.args[_OF_ADJOINT[f.id]])
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
