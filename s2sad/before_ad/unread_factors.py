"""Unread factors: a factorization whose vectors are not read gives its values alone.

Takes and leaves Wengert form. Where `t = np.linalg.eigh(a)` (or `np.linalg.svd(a)` with
its factors, or their complex versions, `complex_values`) is read only as its values,
`w = t[0]` (`s = t[1]`), and its other items are bound to names nothing reads, the call
becomes one of the primitive that returns the values of the same call
(`factorizations.eigh_values`, `svd_values`, ...), bound to `w`, and the items go. Its rules are
those of `eigvalsh` (of `svd(a, compute_uv=False)`), which derive no vectors: the
derivative of eigenvectors is undefined where eigenvalues repeat (the inverse gaps are
infinite) and, of a complex matrix, depends on the phases NumPy picks, while that of the
eigenvalues is not, so a derivative that reads only the values neither computes the
vectors' (which a 0 adjoint would turn into NaN at a repeated eigenvalue) nor checks
their phases.

>>> from s2sad import pipeline
>>> from s2sad.frontend.source import function_from_source
>>> import numpy as np
>>> f = function_from_source('''
... def f(h):
...     w, v = np.linalg.eigh(h)
...     return np.sum(w)
... ''', {"np": np})
>>> print(pipeline.stage_source(f, "unread_factors", arg_types={"h": np.ndarray}))
def f(h):
    w = _s2s_eigh_values(h)
    y = np.sum(w)
    return y
<BLANKLINE>
"""
import gast
import numpy as np

from .. import marks, syntax
from ..analysis.names import name_counts
from ..rules import complex_linalg, factorizations

#: The factorizations: (the number of items of the tuple, the position of the values,
#: the primitive of the values alone, the position of `compute_uv` or None).
FACTORS = {
    np.linalg.eigh: (2, 0, factorizations.eigh_values, None),
    complex_linalg.hermitian_eigh: (2, 0, complex_linalg.hermitian_eigh_values, None),
    np.linalg.svd: (3, 1, factorizations.svd_values, 2),
    complex_linalg.complex_svd: (3, 1, complex_linalg.complex_svd_values, 2),
}


def run(fn, ctx):
    """The pass."""
    loads, stores = name_counts(fn)
    items = {}          # tuple name -> [(statement, position)]
    for s in syntax.statements(fn):
        if _single(s) and isinstance(s.value, gast.Subscript) and syntax.is_name(
                s.value.value) and isinstance(s.value.slice, gast.Constant) and type(
                s.value.slice.value) is int:
            items.setdefault(s.value.value.id, []).append(s)
    dropped = set()
    for s in syntax.statements(fn):
        factor = _factor(s, ctx)
        if factor is None:
            continue
        length, position, values, _ = factor
        t = s.targets[0].id
        reads = items.get(t, [])
        if stores[t] != 1 or loads[t] != len(reads) or not reads:
            continue
        kept = [r for r in reads if r.value.slice.value % length == position]
        if any(r.value.slice.value not in range(-length, length) for r in reads) or any(
                loads[r.targets[0].id] for r in reads if r not in kept):
            continue
        func = syntax.name(ctx.runtime(values.__name__))
        marks.PRIM.put(func, values)
        s.value = syntax.located(syntax.call(func, s.value.args, s.value.keywords), s.value)
        if len(kept) == 1 and stores[kept[0].targets[0].id] == 1:
            s.targets = [syntax.name(kept[0].targets[0].id, store=True)]
            kept = []
        for r in kept:
            r.value = syntax.located(syntax.name(t), r.value)
        dropped.update(id(r) for r in reads if r not in kept)
        ctx.rewrote = True
    if dropped:
        for block in syntax.blocks(fn.body):
            block[:] = [s for s in block if id(s) not in dropped]
    return fn


def _single(s):
    return isinstance(s, gast.Assign) and len(s.targets) == 1 and syntax.is_name(s.targets[0])


def _factor(s, ctx):
    """The entry of `FACTORS` of statement `s` if it calls one with its vectors."""
    if not (_single(s) and isinstance(s.value, gast.Call)) or s not in ctx.ops:
        return None
    prim = ctx.ops[s].prim
    try:
        factor = FACTORS.get(prim)
    except TypeError:       # (an object that cannot be hashed)
        return None
    if factor is None or factor[3] is None:
        return factor
    at = factor[3]
    given = [k.value for k in s.value.keywords if k.arg == "compute_uv"] + s.value.args[at:at + 1]
    vectors = all(isinstance(g, gast.Constant) and g.value is True for g in given)
    return factor if vectors else None
