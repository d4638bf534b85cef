"""InlineHelpers: the adjoints of broadcasting and of matrix products written as plain NumPy when
the code is specialised on the shapes of the arrays involved.

Takes the fused gradient before CombineTerms and ReuseBuffers. Where the array facts
(analysis/shapes.py's classes, with the shape patterns of the parameters) give the
number of axes of an adjoint `g` and of the operands, and which have length 1:

- `_s2s_unbroadcast(g, b)` is `np.sum(g, axis=0)` for `b` of one axis fewer,
  `np.sum(g, axis=1, keepdims=True)` for `b` of length 1 along axis 1, or `g` when the
  shapes are the same (`-np.sum(h, ...)` for `g = -h`: the negation on the smaller
  array);
- `_s2s_matmul_lhs(g, a, b)` is `g @ b.T`, and `_s2s_matmul_rhs(g, a, b)` is `a.T @ g`,
  for matrices (`np.outer` or a product with the vector for one of them), and likewise
  for `np.dot`.

That is what a hand gradient has, without the helpers' tests of their arguments. Each
new value is marked with its fact (`s2s_like`: the shape class and dtype of the array
it is) so that ReuseBuffers computes what follows in its buffer; the guard then also tests
the patterns the rewrite relied on.

>>> import numpy as np
>>> from s2sad import compilation, driver
>>> from s2sad.options import Options, Variant
>>> def f(X, w, b):
...     return np.sum(np.tanh(X @ w + b))
>>> X, w, b = np.ones((4, 3)), np.ones((3, 2)), np.ones(2)
>>> args = (X, w, b)
>>> code = driver.build(f, (1, 2), compilation.arg_types_of(f, args), Options(
...     Variant.GRAD, release=True, patterns=compilation.patterns_of(f, args))).source
>>> print(code[code.index("    # grad of"):].rstrip())
    # grad of: return np.sum(np.tanh(X @ w + b))
    t_1_bar = np.multiply(t_2, t_2, out=t_2)
    del t_2
    np.subtract(1, t_1_bar, out=t_1_bar)
    b_bar = np.sum(t_1_bar, axis=0)
    w_bar = X.T @ t_1_bar
    del t_1_bar
    return (w_bar, b_bar)
"""
import gast
import numpy as np

from .. import marks
from ..analysis.buffers import DUCK, ND, NDARRAY, NUMBER, straight_loop
from .. import syntax
from ..rules import runtime

#: The helpers of the adjoints of matrix products, by the operand they give.
_PRODUCTS = {"matmul_lhs": 0, "matmul_rhs": 1, "dot_lhs": 0, "dot_rhs": 1}


def run(fn, ctx):
    """The pass (with the option `release`, before combine_terms and reuse_buffers)."""
    fn.body = InlineHelpers(ctx).run(fn.body, ctx.array_facts.parameters(fn))
    return fn


class InlineHelpers:
    """See the module docstring; the facts are `ctx.array_facts`."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.known = ctx.array_facts
        self.shapes = ctx.shapes
        self.arrays = (ND, NDARRAY, DUCK)
        self.helpers = {getattr(runtime, name): name
                        for name in ["unbroadcast", *_PRODUCTS]}

    def run(self, body, params):
        """`body` (the top-level statements) with the helpers written out. The facts found
        on the way are those of the new statements, unless a loop's body changed after
        its facts were found: then they are not kept for ReuseBuffers."""
        if not self.shapes.pattern:         # not specialised on shapes
            return body
        self.rewrote = self.stale = False
        facts = self.known.analyse(body, params, self.spell, self.into_loop)
        if not self.stale:
            self.known.keep(body, facts)
        return body

    def spell(self, s, facts):
        if isinstance(s, (gast.Assign, gast.Expr, gast.Return, gast.AugAssign)) \
                and s.value is not None and self.spellable(s.value):
            s.value = self.spelled(s.value, facts)

    def spellable(self, e):
        """Whether `e` holds a helper call or an `a + -b` (`written_out` changes no
        other expression, and reads no fact of one)."""
        for n in syntax.values(e):
            kind = type(n)
            if kind is gast.Call:
                if type(n.func) is gast.Name and not n.keywords and self.helpers.get(
                        self.ctx.bindings.get(n.func.id)) is not None:
                    return True
            elif kind is gast.BinOp and type(n.op) is gast.Add and type(
                    n.right) is gast.UnaryOp and type(n.right.op) is gast.USub:
                return True
        return False

    def into_loop(self, s):
        found = self.known.loops.get(id(s)) if straight_loop(s) else None
        if found is not None and s.body:
            self.rewrote = False
            facts = found.body[0].as_dict()         # (facts of an iteration)
            with self.known.inside():
                for t in s.body:
                    self.spell(t, facts)
                    self.known.update(t, facts)
            self.stale |= self.rewrote

    def spelled(self, e, facts):
        out = self.written_out(e, facts)
        if out is not e:
            self.rewrote = True
        return out

    def written_out(self, e, facts):
        """`e` with the helper calls inside it written out, innermost first."""
        syntax.rebuilt(e, lambda child: self.spelled(child, facts))
        if isinstance(e, gast.BinOp) and isinstance(e.op, gast.Add) and isinstance(
                e.right, gast.UnaryOp) and isinstance(e.right.op, gast.USub):
            return gast.BinOp(left=e.left, op=gast.Sub(), right=e.right.operand)  # a + -b
        if not (isinstance(e, gast.Call) and isinstance(e.func, gast.Name) and not e.keywords):
            return e
        name = self.helpers.get(self.ctx.bindings.get(e.func.id))
        if name == "unbroadcast" and len(e.args) == 2:
            return self.summed(e, *e.args, facts)
        if name in _PRODUCTS and len(e.args) == 3:
            return self.product(e, *e.args, _PRODUCTS[name], facts)
        return e

    def pattern(self, e, facts):
        """(fact, shape pattern) of the array of one or more axes `e`, or None. (A value
        of known shape class with axes is an array: a parameter of that pattern or a
        NumPy operation on one.)"""
        fact = self.known.fact(e, facts)
        if fact.kind not in (*self.arrays, None):
            return None
        found = self.shapes.class_pattern(fact.shape)
        return None if not found else (fact, found)

    def summed(self, call, g, x, facts):
        """`_s2s_unbroadcast(g, x)` as `np.sum(g, axis=...)`, or `g`; for a float `x`,
        `float(np.sum(g))`, or `float(np.vdot(a, b))` for `g = a * b`."""
        if isinstance(x, gast.Name) and self.ctx.types.get(x.id) is float and \
                self.known.fact(x, facts).kind == NUMBER:
            return self.total(call, g, facts)
        known, shape = self.pattern(g, facts), self.pattern(x, facts)
        if known is None or shape is None:
            return call
        (fact, big), (small_fact, small) = known, shape
        lead = len(big) - len(small)
        if lead < 0 or any(s == 0 and b == 1 for s, b in zip(small, big[lead:])):
            return call
        kept = [lead + i for i, (s, b) in enumerate(zip(small, big[lead:])) if s == 1 and b == 0]
        if lead and kept:
            return call         # axes to drop and axes to keep: left to the helper
        self.shapes.rely_on(fact.shape)
        self.shapes.rely_on(small_fact.shape)
        if not lead and not kept:
            return g
        negated = isinstance(g, gast.UnaryOp) and isinstance(g.op, gast.USub)
        axes = list(range(lead)) or kept
        axis = syntax.const(axes[0]) if len(axes) == 1 else gast.Tuple(
            elts=[syntax.const(a) for a in axes], ctx=gast.Load())
        keywords = [gast.keyword(arg="axis", value=axis)]
        if kept:
            keywords.append(gast.keyword(arg="keepdims", value=syntax.const(True)))
        total = syntax.call(syntax.attribute(self.ctx.bind("np", obj=np), "sum"),
                           [g.operand if negated else g], keywords)
        marks.LIKE.put(total, fact._replace(shape=small_fact.shape))
        if not negated:
            return total
        out = gast.UnaryOp(op=gast.USub(), operand=total)
        marks.LIKE.put(out, marks.LIKE.of(total))
        return out

    def total(self, call, g, facts):
        """`float(np.sum(g))` for an ndarray `g` of floats, `float(np.vdot(a, b))` when `g`
        is `a * b` of one shape: the sum of the products without their array."""
        fact = self.known.fact(g, facts)
        if fact.kind != ND or not self.known.is_float(fact.dtype):
            return call
        np_ = self.ctx.bind("np", obj=np)
        total = syntax.call(syntax.attribute(np_, "sum"), [g])
        if isinstance(g, gast.BinOp) and isinstance(g.op, gast.Mult):
            a, b = (self.known.fact(v, facts) for v in (g.left, g.right))
            if (a.kind == b.kind == ND and a.shape is not None and a.shape == b.shape
                    and self.known.is_float(a.dtype) and self.known.is_float(b.dtype)):
                total = syntax.call(syntax.attribute(np_, "vdot"), [g.left, g.right])
        return syntax.call(syntax.name(self.ctx.bind("float")), [total])

    def product(self, call, g, a, b, which, facts):
        """The adjoint of operand `which` (0 or 1) of `a @ b`, `_s2s_matmul_lhs(g, a, b)`
        or `_s2s_matmul_rhs(g, a, b)`, with `@`, `.T` and `np.outer`."""
        found = [self.pattern(v, facts) for v in (g, a, b)]
        if None in found:
            return call
        (fg, pg), (fa, pa), (fb, pb) = found
        if (len(pa), len(pb)) not in ((2, 2), (2, 1), (1, 2)) or pg != pa[:-1] + pb[1:]:
            return call
        for fact in (fg, fa, fb):
            self.shapes.rely_on(fact.shape)

        def t(v):
            return syntax.attribute(v, "T")

        def matmul(x, y):
            return gast.BinOp(left=x, op=gast.MatMult(), right=y)

        def outer(x, y):
            return syntax.call(syntax.attribute(self.ctx.bind("np", obj=np), "outer"),
                              [x, y])
        g, a, b = (syntax.copied(v) for v in (g, a, b))
        if which == 0:          # a_bar
            if len(pa) == 1:
                out = matmul(b, g)          # vector @ matrix
            elif len(pb) == 1:
                out = outer(g, b)           # matrix @ vector
            else:
                out = matmul(g, t(b))
            made = self.known.result([fg, fb])
        else:                   # b_bar
            if len(pb) == 1:
                out = matmul(g, a)
            elif len(pa) == 1:
                out = outer(a, g)
            else:
                out = matmul(t(a), g)
            made = self.known.result([fa, fg])
        marks.LIKE.put(out, made._replace(shape=(fa, fb)[which].shape,
                                          kind=DUCK if made.kind == DUCK else ND))
        return out
