"""Hoist invariants: the arithmetic on numbers that a loop repeats with the same operands
is computed once, before the loop.

Takes and leaves Wengert form. A statement at the top of a loop's body (not inside a
branch of it) moves to just before the loop when it is `t = a op b` with `op`
one of `+ - *` (or `/` by a nonzero constant), its operands are constants or numbers the
loop does not bind (parameters, names bound before the loop, module-level numbers), and
`t` is bound nowhere else; or when it is a view `t = m[None, :, None]` of an array the
loop does not bind, by slices of constant bounds and new axes. (A negation `-c` stays:
the derivative code folds it into a subtraction.) Such a statement cannot raise, so running it once even when
the loop runs zero times changes nothing; its value is the same in every iteration.
Inner loops go first, so a value invariant in the outer loop too moves out of both. The
derivative code then neither recomputes it per step nor tapes it, as in a hand-written
gradient: `dt * drag` is `k` once, and its adjoint sums over the steps.

>>> from s2sad import pipeline
>>> from s2sad.frontend.source import function_from_source
>>> f = function_from_source('''
... def f(v, dt, drag):
...     for i in range(3):
...         v = v - dt * drag * v * v
...     return v
... ''', {})
>>> print(pipeline.stage_source(f, "hoist_invariants", arg_types={"v": float, "dt": float,
...                                                           "drag": float}))
def f(v, dt, drag):
    t = dt * drag
    for i in range(3):
        t_1 = t * v
        t_2 = t_1 * v
        v_1 = v - t_2
        # path end
        v = v_1
    return v
<BLANKLINE>
"""
import numbers

import gast

from .. import syntax
from ..analysis.names import store_counts
from ..analysis.value_kinds import ARRAY, SCALAR

_CANNOT_RAISE = (gast.Add, gast.Sub, gast.Mult)


def run(fn, ctx):
    """The pass."""
    HoistInvariants(ctx, store_counts(fn)).block(fn.body)
    return fn


class HoistInvariants:
    def __init__(self, ctx, stored):
        self.kinds, self.src, self.stored = ctx.value_kinds, ctx.src, stored

    def block(self, stmts):
        """`stmts` (a list, changed in place) with each loop's invariants before it."""
        out = []
        for s in stmts:
            for field in ("body", "orelse"):
                inner = getattr(s, field, None)
                if type(inner) is list:
                    self.block(inner)
            if isinstance(s, (gast.For, gast.While)):
                out += self.invariants(s)
            out.append(s)
        stmts[:] = out

    def invariants(self, loop):
        """The statements of `loop`'s body that move before it (taken out of the body)."""
        bound = set(syntax.names_stored(loop))
        moved = []
        for s in list(loop.body):
            if self.invariant(s, bound):
                loop.body.remove(s)
                bound.discard(s.targets[0].id)
                moved.append(s)
        return moved

    def invariant(self, s, bound):
        if not (isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name)
                and self.stored[s.targets[0].id] == 1):
            return False
        v = s.value
        if isinstance(v, gast.Subscript):
            return (isinstance(v.value, gast.Name) and v.value.id not in bound
                    and self.src.is_local(v.value.id) and self.kinds[v.value] == ARRAY
                    and _basic_slicing(v.slice))
        if not (isinstance(v, gast.BinOp) and (
                isinstance(v.op, _CANNOT_RAISE) or isinstance(v.op, gast.Div)
                and _number(v.right) and v.right.value != 0)):
            return False
        return all(_number(x) or self.outside_number(x, bound) for x in (v.left, v.right))

    def outside_number(self, x, bound):
        """Whether `x` names a number the loop does not bind."""
        if not isinstance(x, gast.Name) or x.id in bound or self.kinds[x] != SCALAR:
            return False
        if self.src.is_local(x.id):
            return True
        value = self.src.free_values()[x.id]       # a module-level number
        return isinstance(value, numbers.Number) and not isinstance(value, bool)


def _basic_slicing(index):
    """Whether `index` takes a view with slices of constant bounds and new axes only
    (`[:, None]`, `[1:]`): it raises no IndexError, and the view follows the array's
    writes as the loop's own view would."""
    parts = index.elts if isinstance(index, gast.Tuple) else [index]
    return all(
        (isinstance(p, gast.Constant) and p.value is None) or (
            isinstance(p, gast.Slice) and all(
                b is None or (isinstance(b, gast.Constant) and type(b.value) is int)
                or (isinstance(b, gast.UnaryOp) and isinstance(b.op, gast.USub)
                    and isinstance(b.operand, gast.Constant) and type(b.operand.value) is int)
                for b in (p.lower, p.upper, p.step)))
        for p in parts)


def _number(x):
    return (isinstance(x, gast.Constant) and isinstance(x.value, numbers.Number)
            and not isinstance(x.value, bool))
