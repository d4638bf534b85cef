"""InlineTemporaries: each temporary number of the forward pass goes back into the one
statement that reads it (`t = x * i; s = s + t` becomes `s = s + x * i`), after the
header, which names the rules of the statements this removes."""
import gast

from .. import marks, syntax
from ..analysis.names import StatementNames, name_counts
from ..analysis.value_kinds import SCALAR
from ..ad.simplify import negated
from .optimize import as_subtractions, replace_load


def run(fn, ctx):
    """The pass: see `temporaries_inlined`."""
    scalars = {n for n, k in ctx.value_kinds.kind.items() if k == SCALAR}
    if ctx.forward is not None:     # with their tangents
        scalars |= {ctx.forward.dots[n] for n in scalars if n in ctx.forward.dots}
    temporaries_inlined(fn, scalars, ctx.bindings, ctx.src)
    return fn


def temporaries_inlined(fn, scalars, helpers, src):
    """`fn` (a vjp or a jvp) whose forward pass reads `du = a * u - b * u * v` again for
    `t = a * u; t_1 = b * u; t_2 = t_1 * v; du = t - t_2`: a temporary of Wengert form
    in `scalars` (names of numbers), computed by arithmetic and `math` functions on
    numbers (names of the `helpers` generated code binds, or of the user's `src`) and
    read once, by a later statement of its block, goes back into that statement when
    nothing between binds what it reads (the same operations, in the same order). For
    a vjp, after the header, which names the rules of the statements this removes."""
    def resolve(func):
        if isinstance(func, gast.Name) and func.id in helpers:
            return helpers[func.id]
        return src.resolve(func)
    everywhere, stored = name_counts(fn)
    for block in syntax.blocks(fn.body, functions=False):
        known = StatementNames()
        i = 0
        while i < len(block):
            s = block[i]
            a = s.targets[0].id if marks.TEMPORARY.of(s) and isinstance(
                s, gast.Assign) and isinstance(s.targets[0], gast.Name) else None
            if a is None:
                i += 1
                continue
            reads = set(syntax.names_loaded(s.value))
            # (locals that are numbers, or globals: no statement between changes them in
            # place)
            if (a not in scalars or everywhere[a] != 1 or stored[a] != 1
                    or not _arithmetic(s.value, resolve)
                    or not all(r in scalars or stored[r] == 0 for r in reads)):
                i += 1
                continue
            reads.add(a)
            k = next((k for k in range(i + 1, len(block))
                      for loads, stores in [known.names(block[k])]
                      if a in loads or not reads.isdisjoint(stores)), None)
            use = block[k] if k is not None else None
            if (use is None or not known.loads(use, a)
                    or not isinstance(use, (gast.Assign, gast.Return, gast.Expr))):
                i += 1
                continue
            replace_load(use, a, s.value)
            if isinstance(use, gast.Assign):     # (`t - -u` where `t_1 = -u` went in)
                use.value = _plus(as_subtractions(use.value, swap=False))
            known.forget(use)
            del block[i]


def _arithmetic(e, resolve):
    """Whether `e` is arithmetic and calls of `math` functions on names and constants."""
    if isinstance(e, gast.BinOp):
        return _arithmetic(e.left, resolve) and _arithmetic(e.right, resolve)
    if isinstance(e, gast.UnaryOp):
        return _arithmetic(e.operand, resolve)
    if isinstance(e, gast.Call):
        return (not e.keywords and getattr(resolve(e.func), "__module__", None) == "math"
                and all(_arithmetic(a, resolve) for a in e.args))
    return isinstance(e, (gast.Name, gast.Constant))


def _plus(e):
    """`a - -b` as `a + b`, throughout `e`."""
    for n in syntax.values(e):
        if isinstance(n, gast.BinOp) and isinstance(n.op, gast.Sub):
            inner = negated(n.right)
            if inner is not None:
                n.op, n.right = gast.Add(), inner
    return e
