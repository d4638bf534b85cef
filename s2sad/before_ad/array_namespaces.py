"""Array namespaces: SciPy's code written for the array API reads NumPy's functions.

Takes and leaves the function as written (before Wengert form). Much of SciPy (since
1.14) finds the library of its arrays first, `xp = array_namespace(y)`, and then calls
`xp.sum(y)`, `xp.reshape(d, shape)`, `xp.cumulative_sum(...)`: for NumPy's arrays `xp` is
SciPy's copy of array_api_compat's NumPy namespace, which is NumPy's functions and, for
the few whose array-API spelling NumPy lacked, small wrappers of them. s2sad knows
NumPy's functions, not the wrappers, nor what `xp` is. So, where a name is bound once,
to `array_namespace(...)` of SciPy's (`scipy._lib._array_api`), and no nested function
reads it:

- the call is checked when it runs: `xp = _s2s_numpy_namespace(array_namespace(y))`
  raises a located `UnsupportedSyntaxError` for arrays of another library (Dask's, whose
  namespace is not NumPy's), and carries no derivative (a namespace is not a value);
- `xp.name` is `np.name` where the namespace's `name` is NumPy's function or one of
  the wrappers `SAME_AS_NUMPY` lists, which take NumPy's arguments for NumPy's arrays
  and compute what NumPy's function of that name computes; any other `xp.name` (`xp.sort`
  and `xp.std`, whose third positional parameter is not NumPy's) is the namespace's own
  function, which s2sad reads as any library code, or refuses.

>>> import pytest
>>> _ = pytest.importorskip("scipy.integrate")      # (which imports SciPy's array API)
>>> from s2sad import pipeline
>>> from s2sad.frontend.source import function_from_source
>>> from s2sad.rules.namespaces import namespace_makers
>>> f = function_from_source('''
... def f(y, dx):
...     xp = array_namespace(y)
...     d = xp.reshape(xp.diff(y), (-1,))
...     return xp.sum(xp.cumulative_sum(d * dx)) + xp.std(y, None, 1)
... ''', {"array_namespace": namespace_makers()[0]})
>>> print(pipeline.stage_source(f, "array_namespaces", arg_types={"y": np.ndarray, "dx": float}))
def f(y, dx):
    xp = _s2s_numpy_namespace(array_namespace(y), _s2s_namespace_error)
    d = np.reshape(np.diff(y), (-1,))
    return np.sum(np.cumulative_sum(d * dx)) + std(y, None, 1)
<BLANKLINE>
"""
import gast
import numpy as np

from .. import marks, syntax
from ..analysis.names import name_counts
from ..rules.namespaces import compat_numpy, namespace_makers

#: The functions of the array-API NumPy namespace that are not NumPy's own objects but
#: compute, for NumPy's arrays and the arguments NumPy's function of the same name
#: takes, what that function computes (their other parameters are keyword-only there).
SAME_AS_NUMPY = frozenset([
    "astype", "reshape", "matmul", "tensordot", "permute_dims", "matrix_transpose",
    "take_along_axis", "cumulative_sum", "cumulative_prod", "nonzero", "count_nonzero",
    "zeros", "ones", "empty", "full", "zeros_like", "ones_like", "empty_like", "full_like",
    "linspace", "arange", "eye", "finfo", "iinfo", "unique_all", "unique_counts",
    "unique_inverse", "unique_values", "asarray"])


def run(fn, ctx):
    """The pass (nothing to do where SciPy's array API module is not imported)."""
    makers = namespace_makers()
    if not makers:
        return fn
    made = [s for s in syntax.statements(fn) if isinstance(s, gast.Assign)
            and len(s.targets) == 1 and isinstance(s.targets[0], gast.Name)
            and isinstance(s.value, gast.Call) and _spelled_maker(s.value.func)
            and any(ctx.resolve(s.value.func) is m for m in makers)]
    if not made:
        return fn
    _, stores = name_counts(fn)
    nested = {n.id for d in syntax.walk(fn) if d is not fn and isinstance(
        d, (gast.FunctionDef, gast.Lambda)) for n in syntax.name_nodes(d)}
    found = {s.targets[0].id: s for s in made
             if stores[s.targets[0].id] == 1 and s.targets[0].id not in nested}
    if not found:
        return fn
    namespace = compat_numpy()
    check = ctx.runtime("numpy_namespace")
    for s in found.values():
        error = ctx.bind("_s2s_namespace_error", obj=ctx.src.syntax_error(s, (
            "the arrays given to this SciPy function are not NumPy's (Dask's, say): s2sad "
            "differentiates SciPy's code through NumPy's functions; give it NumPy arrays")))
        s.value = syntax.located(syntax.call(syntax.name(check), [s.value, syntax.name(
            error)]), s.value)
    numpy = ctx.bind("np", obj=np)
    for node in syntax.walk(fn):
        for field, value in gast.iter_fields(node):
            if isinstance(value, gast.Attribute):
                setattr(node, field, _spelled(value, found, namespace, numpy, ctx))
            elif isinstance(value, list):
                value[:] = [_spelled(v, found, namespace, numpy, ctx)
                            if isinstance(v, gast.Attribute) else v for v in value]
    return fn


def _spelled_maker(func):
    """Whether `func` is spelled `array_namespace` (only such calls are resolved: a
    resolution is a guard of the derivative)."""
    return getattr(func, "id", getattr(func, "attr", None)) == "array_namespace"


def _spelled(e, found, namespace, numpy, ctx):
    """`xp.name` as NumPy's `np.name`, or the namespace's own function."""
    if not (isinstance(e.value, gast.Name) and e.value.id in found
            and isinstance(e.ctx, gast.Load)):
        return e
    own = getattr(namespace, e.attr, None)
    if own is not None and (own is getattr(np, e.attr, None) or (
            e.attr in SAME_AS_NUMPY and hasattr(np, e.attr))):
        base = syntax.name(numpy)
        marks.PRIM.put(base, np)        # (NumPy, where the module's globals may not say so)
        return syntax.located(gast.Attribute(value=base, attr=e.attr, ctx=gast.Load()), e)
    if own is None:
        return e
    return syntax.located(syntax.name(ctx.bind(e.attr, obj=own)), e)

