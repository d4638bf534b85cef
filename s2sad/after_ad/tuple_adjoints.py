"""TupleAdjoints: the adjoint of a tuple whose items the code knows, made from the
adjoints of its items, written as a tuple display.

Takes reverse-mode code after Optimize, which has fused the contributions to each
adjoint into one expression. Reading `t[i]` gives `t` the contribution
`_s2s_unindex(g, t, i)` (zeros in the structure of `t`, `g` at `i`), and its
contributions add with `_s2s_add`, leaf by leaf: at each call, both walk the structure.
Where `t` is a tuple of known items (analysis/value_kinds.py's `items`: a display, or
what a function of the user's returns) and its adjoint adds such contributions at
distinct constant positions, it is the display of the items' adjoints
(`_s2s_unbroadcast(g, t[i])`, which is `g` when the shapes agree, as `unindex` gives),
zeros (`_s2s_zeros_like(t[j])`) where nothing contributes (for an item that is a number,
`g` itself and 0.0; for an array of a known shape pattern, in code whose adjoints have
their values' shapes, `Compilation.adjoints_shaped`, `g` itself); other contributions (the
adjoint a call's pullback gives) are still added with `_s2s_add`.

>>> import numpy as np
>>> from s2sad import pipeline
>>> def two(x):
...     return np.sin(x), np.cos(x)
>>> def f(x):
...     t = two(x)
...     return np.sum(t[0] * t[1])
>>> code = pipeline.stage_source(f, "tuple_adjoints", arg_types={"x": np.ndarray})
>>> print(code[code.index("    def"):code.index("    return (y")].rstrip())
    def f_pullback(y_bar):
        # grad of: return np.sum(t[0] * t[1])
        t_3_bar = _s2s_unreduce(y_bar, t_3)
        t_1_bar = _s2s_unbroadcast(t_3_bar * t_2, t_1)
        t_2_bar = _s2s_unbroadcast(t_3_bar * t_1, t_2)
        t_bar = (_s2s_unbroadcast(t_1_bar, t[0]), _s2s_unbroadcast(t_2_bar, t[1]))
        # grad of: t = two(x)
        x_bar = two_pullback(t_bar)
        return x_bar
"""
import gast

from .. import syntax
from ..analysis.value_kinds import SCALAR


def run(fn, ctx):
    """The pass."""
    TupleAdjoints(ctx).visit(fn)
    return fn


class TupleAdjoints(gast.NodeVisitor):
    """See the module docstring."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.items = ctx.value_kinds.items

    def visit_Assign(self, s):
        s.value = self.displayed(s.value)

    def displayed(self, e):
        """`e`, a sum of contributions to an adjoint, with those of the items of one tuple
        of known items as its display."""
        if not (self.ctx.is_runtime_call(e, "add") or self.ctx.is_runtime_call(e, "unindex")):
            return e
        terms = self.terms(e)
        tuples = {t.args[1].id for t in terms if self.at_item(t)}
        if len(tuples) != 1:
            return e
        name = tuples.pop()
        at = {}
        for t in terms:
            if self.at_item(t) and t.args[1].id == name:
                i = t.args[2].value % len(self.items[name])
                if i in at:
                    return e        # (two contributions at one position: left as they are)
                at[i] = t.args[0]
        out = syntax.tuple_([self.adjoint(name, i, at.get(i))
                             for i in range(len(self.items[name]))])
        for t in terms:
            if not (self.at_item(t) and t.args[1].id == name):
                out = syntax.call(self.ctx.runtime("add"), [out, t])
        return out

    def adjoint(self, name, i, g):
        """The adjoint of item `i` of the tuple `name` from the contribution `g` (None:
        none), as `unindex` makes it: `g` in the item's shape, or its zero."""
        if self.items[name][i] == SCALAR:       # (numbers: no shape to give)
            return syntax.const(0.0) if g is None else g
        if g is not None and self.shaped(name, i):
            return g
        helper = "zeros_like" if g is None else "unbroadcast"
        return syntax.call(self.ctx.runtime(helper), ([] if g is None else [g])
                           + [self.item(name, i)])

    def shaped(self, name, i):
        """Whether the contribution to item `i` of the tuple `name` has its shape already:
        an array of a known shape pattern in code whose adjoints have their values'
        shapes (`Compilation.adjoints_shaped`), the contribution being the adjoint of
        that item read."""
        if not self.ctx.adjoints_shaped:
            return False
        shapes = self.ctx.shapes
        items = shapes.items.get(name)
        key = items[i] if items is not None and -len(items) <= i < len(items) else None
        if not shapes.class_pattern(key):
            return False
        shapes.rely_on(key)
        return True

    def terms(self, e):
        """The terms of the sum `e` (nested calls of `_s2s_add`)."""
        if self.ctx.is_runtime_call(e, "add") and len(e.args) == 2 and not e.keywords:
            return self.terms(e.args[0]) + self.terms(e.args[1])
        return [e]

    def at_item(self, e):
        """Whether `e` is `_s2s_unindex(g, t, i)` for a tuple `t` of known items and a
        constant position `i` among them."""
        if not (self.ctx.is_runtime_call(e, "unindex") and len(e.args) == 3
                and not e.keywords and isinstance(e.args[1], gast.Name)):
            return False
        items, index = self.items.get(e.args[1].id), e.args[2]
        return (bool(items) and isinstance(index, gast.Constant) and type(index.value) is int
                and -len(items) <= index.value < len(items))

    @staticmethod
    def item(name, i):
        return gast.Subscript(value=syntax.name(name), slice=syntax.const(i), ctx=gast.Load())
