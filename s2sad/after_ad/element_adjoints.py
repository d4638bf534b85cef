"""ElementAdjoints: the adjoint of an array that a loop reads or writes element by element is
updated in place by the reversed loop.

The adjoint of a read `x[i]` adds `_s2s_unindex(g, x, i)`, zeros shaped like `x` with
`g` at `i`, to `x_bar`; that of a write `y[i] = v` makes `y_bar` a copy with a zero at
`i`. Each makes an array of the whole size, so a loop over the elements would take time
in the square of their number. In a reversed loop where an array's adjoint is only
added to at an index, zeroed at one, and read at one (`_s2s_take`, which copies), the
adjoint is made an array of its own once, before the loop (`_s2s_own`, a copy; not when
it was just made, as zeros or by arithmetic), and the loop updates it in place, as a
hand-written gradient does:

    x_bar[t_6] += t_7_bar           # for x_bar = x_bar + _s2s_unindex(t_7_bar, x, t_6)
    y_bar[i] = 0.0                  # for y_bar = _s2s_zero_at(y_bar, i)

Only indexes that select each element at most once (integers, slices) are rewritten.
Runs on the pullback after Optimize, which gathers the additions into one statement.

The adjoint of an array of which numbers are read (`d[0] ** 2 + d[1] ** 2`), a sum of
`_s2s_unindex` of numbers, one array of zeros each, is likewise zeros with the numbers
added in place (`d_bar = _s2s_zeros_like(d)`, `d_bar[1] += t_2_bar`, `d_bar[0] += t_1_bar`),
in a loop or not.

>>> import numpy as np
>>> from s2sad import driver
>>> def f(x):
...     y = x.copy()
...     for i in range(1, len(x)):
...         y[i] = x[i] * x[i - 1]
...     return np.sum(y * y)
>>> code = driver.build(f, arg_types={"x": np.ndarray}).source
>>> print(code[code.index("    def f_pullback"):code.index("    return (")].rstrip())
    def f_pullback(y_2_bar):
        # grad of: return np.sum(y * y)
        y_bar = 2 * y_2_bar * y
        x_bar = _s2s_zeros_like(x)
        # grad of: for i in range(1, len(x)):
        for i, t_1, t_3, t_4 in reversed(_s2s_tape):
            # grad of: y[i] = x[i] * x[i - 1]
            t_4_bar = _s2s_unbroadcast(_s2s_take(y_bar, i), t_4)
            y_bar[i] = 0.0
            x_bar[i - 1] += t_4_bar * t_1
            x_bar[i] += t_4_bar * t_3
        # grad of: y = x.copy()
        x_bar = x_bar + y_bar
        return x_bar
"""
import gast

from .. import marks
from ..analysis.value_kinds import ARRAY, SCALAR
from ..analysis.operations import index_syntax, is_basic_index
from .. import syntax


def run(vjp, ctx):
    """The pass, on the pullback of `vjp` (not for arrays of other libraries, see
    `Compilation.duck_arrays`)."""
    ElementAdjoints(ctx).run(ctx.reverse.pullback)
    return vjp


class ElementAdjoints:
    """See the module docstring; `ctx` is the `Compilation`, whose `reverse` made the
    pullback."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.kinds = ctx.value_kinds
        self.bars = {bar: n for n, bar in ctx.reverse.adjoints.items()
                     if self.kinds.kind.get(n) == ARRAY}
        self.numbers = {bar for n, bar in ctx.reverse.adjoints.items()
                        if self.kinds.kind.get(n) == SCALAR}    # (adjoints of numbers)
        self.is_call = ctx.is_runtime_call

    def run(self, pullback):
        if self.bars:
            pullback.body = self.block(pullback.body)
        return pullback

    def block(self, stmts):
        out = []
        for s in stmts:
            if isinstance(s, (gast.For, gast.While)):
                for bar in sorted(self.candidates(s)):
                    self.rewrite(s, bar)
                    if not self.fresh(out, bar):
                        array = self.ctx.reverse.renamed(self.bars[bar])  # written in place?
                        out.append(syntax.located(syntax.assign(bar, syntax.call(
                            self.ctx.runtime("own"), [syntax.name(bar), syntax.name(array)])), s))
                s.body = self.block(s.body)
            elif isinstance(s, gast.If):
                s.body = self.block(s.body)
                s.orelse = self.block(s.orelse)
            elif isinstance(s, gast.Assign):
                made = self.elements(s)
                if made:
                    out += made
                    continue
            out.append(s)
        return out

    def elements(self, s):
        """`bar = _s2s_unindex(g, x, i) + _s2s_unindex(h, x, j) + ...`, the adjoint of an
        array of which only numbers were read (`d[0] ** 2 + d[1] ** 2`), as zeros and the
        numbers added in place, as a hand-written gradient does (each `_s2s_unindex`
        makes an array of zeros; the sum adds them): `bar = _s2s_zeros_like(x)`,
        `bar[i] += g`, `bar[j] += h`. None where `s` is not such a sum of two or more."""
        bar = s.targets[0].id if isinstance(s.targets[0], gast.Name) else None
        if bar not in self.bars:
            return None
        terms, e = [], s.value
        while isinstance(e, gast.BinOp) and isinstance(e.op, gast.Add):
            terms.append(e.right)
            e = e.left
        terms.append(e)
        array = None
        for t in terms:
            if not (self.is_call(t, "unindex") and len(t.args) == 3
                    and isinstance(t.args[1], gast.Name) and self.basic(t.args[2], bar)
                    and self.number(t.args[0])
                    and self.kinds.kind.get(t.args[1].id) == ARRAY
                    and self.kinds.ndim_of(gast.Subscript(
                        value=syntax.name(t.args[1].id), slice=t.args[2],
                        ctx=gast.Load())) == 0):
                return None
            if array is None:
                array = t.args[1].id
            elif t.args[1].id != array:
                return None
        if len(terms) < 2:
            return None
        out = [syntax.located(syntax.assign(bar, syntax.call(
            self.ctx.runtime("zeros_like"), [syntax.name(array)])), s)]
        for t in reversed(terms):
            target = gast.Subscript(value=syntax.name(bar), slice=index_syntax(
                syntax.copied(t.args[2])), ctx=gast.Store())
            out.append(syntax.located(gast.AugAssign(target=target, op=gast.Add(),
                                                     value=t.args[0]), s))
        return out

    def updates(self, s, bar):
        """The (index, value) pairs `s` adds into `bar` at an index, [(index, None)] when
        it zeroes `bar` at `index`, or None when `s` is neither."""
        if not (isinstance(s, gast.Assign) and syntax.is_name(s.targets[0], bar)):
            return None
        if self.is_call(s.value, "zero_at") and len(s.value.args) == 2 and syntax.is_name(
                s.value.args[0], bar):
            index = s.value.args[1]
            return [(index, None)] if self.basic(index, bar) else None
        terms = []
        e = s.value
        while isinstance(e, gast.BinOp) and isinstance(e.op, gast.Add):
            terms.append(e.right)
            e = e.left
        found = []
        if self.is_call(e, "zero_at") and len(e.args) == 2 and syntax.is_name(e.args[0], bar) \
                and self.basic(e.args[1], bar):
            found.append((e.args[1], None))     # a write, then reads of other elements
        elif not syntax.is_name(e, bar):
            return None
        if not terms:
            return None
        for t in reversed(terms):
            # added to the adjoint of its own array (`x` names it, or a version of it)
            if not (self.is_call(t, "unindex") and len(t.args) == 3
                    and isinstance(t.args[1], gast.Name)
                    and self.basic(t.args[2], bar) and bar not in syntax.names_loaded(t.args[0])):
                return None
            found.append((t.args[2], t.args[0]))
        return found

    def number(self, e):
        """Whether `e` is certainly a number: an adjoint of a number, a number of the
        forward pass (`kinds`), a constant, or arithmetic of them."""
        if isinstance(e, gast.Name):
            return e.id in self.numbers or self.kinds.kind.get(e.id) == SCALAR
        if isinstance(e, gast.Constant):
            return isinstance(e.value, (int, float)) and not isinstance(e.value, bool)
        if isinstance(e, gast.BinOp) and isinstance(e.op, (gast.Add, gast.Sub, gast.Mult,
                                                           gast.Div, gast.Pow)):
            return self.number(e.left) and self.number(e.right)
        if isinstance(e, gast.UnaryOp) and isinstance(e.op, (gast.USub, gast.UAdd)):
            return self.number(e.operand)
        return False

    def basic(self, index, bar):
        return bar not in syntax.names_loaded(index) and is_basic_index(index, self.kinds)

    def candidates(self, loop):
        """The adjoints of arrays that `loop` only updates at an index or reads at one."""
        stored = set(syntax.names_stored(loop))
        mentions, allowed, updated = {}, {}, set()
        for n in syntax.walk(loop):
            if isinstance(n, gast.Name) and n.id in self.bars:
                mentions[n.id] = mentions.get(n.id, 0) + 1
            elif self.is_call(n, "take") and n.args and isinstance(n.args[0], gast.Name):
                bar = n.args[0].id
                allowed[bar] = allowed.get(bar, 0) + 1
            elif isinstance(n, gast.Assign) and isinstance(n.targets[0], gast.Name) \
                    and n.targets[0].id in self.bars:
                bar = n.targets[0].id
                if self.updates(n, bar) is not None:
                    allowed[bar] = allowed.get(bar, 0) + 2      # the target, and the read
                    updated.add(bar)
        return {bar for bar in updated if mentions.get(bar) == allowed.get(bar)
                and self.bars[bar] not in stored}

    def rewrite(self, loop, bar):
        """Each update of `bar` inside `loop` in place."""
        for n in list(syntax.walk(loop)):
            for field in ("body", "orelse"):
                stmts = getattr(n, field, None)
                if not isinstance(stmts, list):
                    continue
                out = []
                for s in stmts:
                    pairs = self.updates(s, bar) if isinstance(s, gast.Assign) else None
                    if pairs is None:
                        out.append(s)
                        continue
                    for index, value in pairs:
                        target = gast.Subscript(value=syntax.name(bar), slice=index_syntax(
                            syntax.copied(index)), ctx=gast.Store())
                        out.append(syntax.located(
                            gast.Assign(targets=[target], value=syntax.const(0.0),
                                        type_comment=None) if value is None else
                            gast.AugAssign(target=target, op=gast.Add(), value=value), s))
                setattr(n, field, out)
        array = self.bars[bar]
        syntax.rebuilt(loop, lambda e: self.element(e, bar, array))

    def element(self, e, bar, array):
        """`e`, where `_s2s_take(bar, i)` reads one number of the (now owned) adjoint:
        `bar[i]` (a number is no view, to copy); and `_s2s_unbroadcast(bar[i], v)` of a
        number `v`: `bar[i]`."""
        syntax.rebuilt(e, lambda child: self.element(child, bar, array))
        if (self.is_call(e, "take") and len(e.args) == 2 and syntax.is_name(e.args[0], bar)
                and self.kinds.ndim_of(gast.Subscript(value=syntax.name(array),
                                                      slice=e.args[1], ctx=gast.Load())) == 0):
            out = gast.Subscript(value=e.args[0], slice=index_syntax(e.args[1]),
                                 ctx=gast.Load())
            marks.ELEMENT.put(out, True)
            return out
        if (self.is_call(e, "unbroadcast") and len(e.args) == 2
                and marks.ELEMENT.of(e.args[0])
                and self.kinds.of(e.args[1]) == SCALAR):
            return e.args[0]
        return e

    def fresh(self, before, bar):
        """Whether the last statement of `before` to mention `bar` makes it a new array of
        its own: zeros, or arithmetic with an array (`y_bar = 2 * g * y`)."""
        for s in reversed(before):
            if bar in syntax.names_loaded(s) or bar in syntax.names_stored(s):
                return (isinstance(s, gast.Assign) and syntax.is_name(s.targets[0], bar)
                        and bar not in syntax.names_loaded(s.value)
                        and (self.is_call(s.value, "zeros_like") or (
                            isinstance(s.value, (gast.BinOp, gast.UnaryOp))
                            and self.kinds.of(s.value) == ARRAY)))
        return False
