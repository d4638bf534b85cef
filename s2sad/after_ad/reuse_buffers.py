"""ReuseBuffers: compute an elementwise result into the buffer of a temporary nothing reads
any more, instead of allocating a new array.

Takes the fused gradient (`f_grad`, `f_value_and_grad`) before `insert_dels`. A top-level
statement `t = a OP b` (an arithmetic operator, or a NumPy ufunc with float loops)
writes its result into `a` (`np.subtract(a, b, out=a)`, or `t += b` when `a` is `t`'s
old value) when `a` is an array the function allocated itself (never an argument or
a view of one), nothing reads it or shares its memory after the statement, and the
result certainly has `a`'s shape and dtype: the shapes of the operands are known to
broadcast to `a`'s (see analysis/shapes.py), their dtypes are among those `a`
was promoted from, `a`'s dtype is floating, and `a` is an ndarray (a 0-d operation
gives a NumPy scalar, which has no buffer). A chain inside one statement,
`t = a * -2 * b`, is computed into one buffer: `t = a * -2` then `t *= b`. In-place
additions into slices of an adjoint (`x_bar[1:] += g`) move up to where `g` is
computed, so that `g`'s buffer is free for what follows. The first addition into a
slice of an array of zeros computes its value in that slice instead (`into_zeros`).
The peephole pass then tidies what this leaves (named views for the additions into
slices, below). The same rewrites run inside the body of a top-level loop of
straight-line code, with the facts of the loop (analysis/buffers.py): a buffer that the
next iteration, the loop's tape or the code after the loop may read is never written, so
a temporary is computed into one that died in the same iteration, and an adjoint the loop
carries is summed in place (`u_bar += g`, when its buffers are the function's own).

>>> import numpy as np
>>> from s2sad import driver
>>> from s2sad.options import Options, Variant
>>> def f(x):
...     return np.sum(np.exp(x[1:] - x[:-1]) ** 2)
>>> print(driver.build(f, options=Options(Variant.GRAD, release=True)).source.rstrip())
def f_grad(x):
    if x.__class__ is not ndarray or x.dtype.kind != 'f':
        return _s2s_respecialize(x)
    if (_s2s_globals['np'] is not _s2s_np or _s2s_np_dict['sum'] is not _s2s_sum
            or _s2s_np_dict['exp'] is not _s2s_exp):
        return _s2s_respecialize(x)
    # reverse mode of f() with respect to x
    # the pullback reads: t_3, x
    # rules: [], -, np.exp, **, np.sum
    t = x[1:]
    t_1 = x[:-1]
    t_2 = t - t_1
    t_3 = np.exp(t_2, out=t_2)
    del t_2
    # grad of: return np.sum(np.exp(x[1:] - x[:-1]) ** 2)
    t_3_bar = 2.0 * t_3
    t_2_bar = np.multiply(t_3_bar, t_3, out=t_3_bar)
    del t_3, t_3_bar
    x_bar = _s2s_zeros_like(x)
    x_bar_view = x_bar[:-1]
    x_bar_view -= t_2_bar
    x_bar_view_1 = x_bar[1:]
    x_bar_view_1 += t_2_bar
    del t_2_bar
    return x_bar
"""
import collections

import gast
import numpy as np

from .. import syntax
from ..analysis.buffers import ND, NDARRAY, NUMBER, Fact, straight_loop
from ..analysis.names import exposed, number_names, number_value

_COMMUTE = (gast.Add, gast.Mult)


def run(fn, ctx):
    """The pass (with the option `release`, after inline_helpers and combine_terms)."""
    return ReuseBuffers(ctx).run(fn)


class ReuseBuffers:
    """See the module docstring; the facts are `ctx.array_facts`, which InlineHelpers and
    CombineTerms used before it."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.known = ctx.array_facts

    def run(self, fn):
        params = self.known.parameters(fn)
        facts = self.known.kept_facts(fn.body)      # (InlineHelpers' when they hold)
        if facts is None:
            facts = self.known.analyse(fn.body, params)
        body = self.hoisted(fn.body, facts)
        if any(s is not t for s, t in zip(body, fn.body)):     # (else the facts hold)
            facts = self.known.analyse(body, params)
        fn.body = body
        live = self.known.live(fn.body, facts)
        out = []
        for i, s in enumerate(fn.body):
            if straight_loop(s) and id(s) in self.known.loops:
                self.in_loop(s, fn.body[i + 1:])
            out.extend(self.rewritten(s, facts[i], live[i + 1]))
        # (read by `negated` only, for a subtraction into a slice of zeros)
        self.numbers = number_names(fn) if any(map(self.known.is_addition, out)) else {}
        fn.body, facts = self.into_zeros(out, params)
        # the peephole pass's clean-ups change no fact of the names they read: these serve
        self.known.statement_facts = {id(s): f for s, f in zip(fn.body, facts)}
        return fn

    def factored(self, e, facts):
        """`(a - b) * s` for `s * a - s * b` (`+` alike; `s / a` is `s * (1.0 / a)`), `s`
        a number and the result an array: one multiplication after the sum instead of
        one per term, and every step computed in one buffer (`s * b` would need one of
        its own when `b` is an argument)."""
        if not (isinstance(e, gast.BinOp) and isinstance(e.op, (gast.Add, gast.Sub))):
            return e
        left = self.factored(e.left, facts)
        terms = [self.scaled(left, facts), self.scaled(e.right, facts)]
        if None in terms or terms[0][0] != terms[1][0] or self.known.fact(e, facts).kind != ND:
            return e
        (s, a), (_, b) = terms
        return gast.BinOp(left=gast.BinOp(left=a, op=type(e.op)(), right=b), op=gast.Mult(),
                          right=syntax.name(s))

    def scaled(self, e, facts):
        """(`s`, `a`) when `e` is `s * a`, `a * s` or `s / a` (`a` is then `1.0 / a`) with
        `s` the name of a number."""
        if not (isinstance(e, gast.BinOp) and isinstance(e.op, (gast.Mult, gast.Div))):
            return None

        def number(x):
            return isinstance(x, gast.Name) and facts.get(x.id, Fact()).kind == NUMBER
        if number(e.left):
            rest = e.right if isinstance(e.op, gast.Mult) else gast.BinOp(
                left=syntax.const(1.0), op=gast.Div(), right=e.right)
            return e.left.id, rest
        if isinstance(e.op, gast.Mult) and number(e.right):
            return e.right.id, e.left
        return None

    # -- rewriting --------------------------------------------------------------------
    def in_loop(self, loop, rest):
        """Rewrite the statements of the body of `loop` (straight-line code; `rest`, the
        statements after it) with the facts inside it: what the next iteration, the code
        after the loop or the tape reads is never written."""
        after = exposed(rest, set())
        found = self.known.loops[id(loop)]
        live = self.known.loop_live(loop, after)
        body = []
        with self.known.inside():
            for j, s in enumerate(loop.body):
                body.extend(self.rewritten(s, found.body[j], live[j + 1]))
        loop.body = body

    def rewritten(self, s, facts, live):
        if not (isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name)):
            return [s]
        loaded = syntax.names_loaded(s.value)
        read = {n: facts[n] for n in loaded if n in facts}
        others = ~self.known.owned      # (a big int: made once a statement)
        free = {n for n, f in read.items() if f.buffers and not f.buffers & others
                and f.kind in (ND, NDARRAY) and not f.buffers & live}
        value, loads = self.factored(s.value, facts), collections.Counter(loaded)
        steps = self.known.plan(value, facts, free, loads if value is s.value else None)
        if value is not s.value and (not steps or steps[0][0] == "bind"):
            steps = self.known.plan(s.value, facts, free, loads)  # factoring allocates anyway
        if not steps or steps[0][0] == "bind" and len(steps) == 1:
            return [s]
        target = s.targets[0].id
        if syntax.names_loaded(steps[0][1]).count(target) != loaded.count(target):
            return [s]      # (in a loop, `u = ... + u`: a later step would read the new u)
        return [syntax.located(x, s) for x in (self.spelled(step, target) for step in steps)]

    def spelled(self, step, target):
        """The statement for one step of a plan, computing into `target`."""
        kind, e, *i = step
        if kind == "bind":
            return syntax.assign(target, e)
        operands, ufunc = self.known.elementwise(e)
        i = i[0]
        buffer = operands[i] if kind == "out" else syntax.name(target)
        if syntax.is_name(buffer, target) and isinstance(e, gast.BinOp) and (
                i == 0 or isinstance(e.op, _COMMUTE)):
            return gast.AugAssign(target=syntax.name(target, store=True), op=e.op,
                                  value=operands[1 - i])
        args = [buffer if j == i else a for j, a in enumerate(operands)]
        func = syntax.copied(e.func) if isinstance(e, gast.Call) else syntax.attribute(
            self.ctx.bind("np", obj=np), ufunc.__name__)
        call = syntax.call(func, args, [gast.keyword(arg="out", value=syntax.copied(buffer))])
        return syntax.expr_stmt(call) if kind == "update" else syntax.assign(target, call)

    # -- computing into a slice of zeros ----------------------------------------------
    def into_zeros(self, body, params):
        """`body` where the first addition into a slice of an array of zeros,
        `x_bar[:-1] -= g`, is dropped and the statement that allocated `g`'s buffer
        computes into that slice instead (`np.subtract(1, t_6, out=x_bar[:-1])`, the
        zeros moved up before it), so that the updates of `g` in place happen in
        `x_bar`; a subtraction negates the constant factor of the last update, or the
        slice. An added expression is computed into the slice the same way. One array
        fewer, and one pass fewer over it."""
        while True:
            facts = self.known.analyse(body, params)
            if not any(self.known.is_addition(s) for s in body):
                return body, facts
            live = self.known.live(body, facts)
            names = [_names(s) for s in body]
            found = next((found for a in range(len(body)) if self.known.is_addition(body[a])
                          for found in [self.zeros_slice(body, a, facts, live, names)]
                          if found), None)
            if found is None:
                return body, facts
            z, r, a = found
            addition = body[a]
            if r is None:       # name the added expression, computed in one buffer
                g = self.ctx.namer.fresh("t")
                named = syntax.located(syntax.assign(g, addition.value), addition)
                addition.value = syntax.name(g)
                body[a:a + 1] = self.rewritten(named, facts[a], live[a + 1]) + [addition]
                continue
            target = syntax.copied(addition.target)
            target.ctx = gast.Load()
            operands, ufunc = self.known.elementwise(body[r].value)
            call = body[r].value if isinstance(body[r].value, gast.Call) else syntax.call(
                syntax.attribute(self.ctx.bind("np", obj=np), ufunc.__name__), operands)
            call.keywords = [gast.keyword(arg="out", value=target)]
            body[r] = syntax.located(syntax.assign(body[r].targets[0].id, call), body[r])
            body[a] = None
            if isinstance(addition.op, gast.Sub):
                body[a] = self.negated(body, r, a, addition.value.id, facts)
            if z > r:
                body = body[:r] + [body[z]] + body[r:z] + body[z + 1:]
            body = [s for s in body if s is not None]

    def zeros_slice(self, body, a, facts, live, names):
        """(z, r, a) when statement `a` is `x_bar[...] += g` or `-=`, the first statement
        to touch `x_bar` since `z`, `x_bar = _s2s_zeros_like(x)`, and `g`'s buffer, which
        has the slice's shape, is allocated by statement `r`, an elementwise operation,
        and read by nothing after `a`; (z, None, a) when `g` is an elementwise expression
        of the slice's shape; else None."""
        s = body[a]
        if not (self.known.is_addition(s) and not syntax.names_loaded(s.target.slice)):
            return None
        array = s.target.value.id
        mentions = [i for i in range(a) if array in names[i][0] or array in names[i][1]]
        if not mentions:
            return None
        z = mentions[-1]
        made = body[z]
        if not (self.known.is_zeros(made) and syntax.is_name(made.targets[0], array)):
            return None
        sliced = self.known.indexed(s.target, facts[a].get(array, Fact()), facts[a])
        g = self.known.fact(s.value, facts[a])
        if (g.kind != ND or g.shape is None or g.shape != sliced.shape
                or not self.known.is_float(g.dtype)):
            return None
        if not isinstance(s.value, gast.Name):
            return (z, None, a) if self.known.elementwise(s.value) is not None else None
        if (g.buffers.bit_count() != 1 or g.buffers & ~self.known.owned
                or g.buffers & live[a + 1]):
            return None
        buffer = g.buffers
        r = next((i for i in range(a) if isinstance(body[i], gast.Assign)
                  and buffer & self.fact_after(body[i], facts[i + 1]).buffers), None)
        if (r is None or self.fact_after(body[r], facts[r + 1]).shape != g.shape
                or self.known.elementwise(body[r].value) is None
                or getattr(body[r].value, "keywords", None)
                or any(names[i][1] & set(syntax.names_loaded(made.value)) for i in range(r, z))
                or any(i != z and (array in names[i][0] or array in names[i][1])
                       for i in range(r, a))):
            return None
        return z, r, a

    def fact_after(self, s, facts):
        return facts.get(s.targets[0].id, Fact()) if isinstance(
            s.targets[0], gast.Name) else Fact()

    def negated(self, body, r, a, g, facts):
        """`g = -g` in place, once `g` has been computed (between statements `r` and
        `a`): by negating the constant of its last update when that multiplies by a
        constant (`t_bar = np.multiply(-2.0, t, out=t)`, `t_bar *= -2.0`), else with
        `np.negative(g, out=g)`."""
        def writes(s, i):
            return g in syntax.names_stored(s) or (
                isinstance(s, gast.Expr) and self.known.out_of(s.value, facts[i]) == g)
        last = body[next(i for i in range(a - 1, r - 1, -1) if writes(body[i], i))]
        factors = []
        if isinstance(last, gast.AugAssign) and isinstance(last.op, gast.Mult):
            factors = [(last, "value")]
        elif isinstance(last, (gast.Assign, gast.Expr)) and isinstance(last.value, gast.Call) \
                and self.known.resolve(last.value.func) is np.multiply:
            factors = [(last.value.args, i) for i in range(len(last.value.args))]
        for holder, key in factors:
            x = holder[key] if isinstance(holder, list) else getattr(holder, key)
            if number_value(x, self.numbers) is not None:
                negative = gast.Constant(value=-number_value(x, self.numbers), kind=None)
                if isinstance(holder, list):
                    holder[key] = negative
                else:
                    setattr(holder, key, negative)
                return None
        return syntax.expr_stmt(syntax.call(
            syntax.attribute(self.ctx.bind("np", obj=np), "negative"),
            [syntax.name(g)], [gast.keyword(arg="out", value=syntax.name(g))]))

    # -- moving in-place additions up -------------------------------------------------
    def hoisted(self, body, facts):
        """`body` with each `a[index] += g` moved up past the statements it does not
        depend on (two such additions into one array commute)."""
        out, at = [], {id(s): i for i, s in enumerate(body)}
        for i, s in enumerate(body):
            j = len(out)
            if self.known.is_addition(s):
                while j > 0 and self.commutes(out[j - 1], facts[at[id(out[j - 1])]],
                                              s, facts[i]):
                    j -= 1
                if all(self.known.is_addition(t) for t in out[j:]):
                    j = len(out)        # nothing to gain: keep the order of additions
            out.insert(j, s)
        return out

    def commutes(self, earlier, before, s, facts):
        """Whether the addition `s` may run before the statement `earlier`."""
        written = facts[s.target.value.id].buffers if s.target.value.id in facts else None
        if written is None:
            return False
        read = self.known.loaded(s.value, facts) | self.known.loaded(s.target.slice, facts)
        if written & read:
            return False
        if self.known.is_addition(earlier):
            other = before.get(earlier.target.value.id, Fact()).buffers
            other_read = self.known.loaded(earlier.value, before) | self.known.loaded(
                earlier.target.slice, before)
            return not (other & read or written & other_read) and (
                other == written or not other & written)
        if not (isinstance(earlier, gast.Assign) and isinstance(earlier.targets[0], gast.Name)):
            return False
        return (earlier.targets[0].id not in syntax.names_loaded(s)
                and not written & self.known.loaded(earlier.value, before))


def _names(s):
    """(the names `s` reads, those it binds), in one walk."""
    found = syntax.name_nodes(s)
    return ({n.id for n in found if type(n.ctx) is gast.Load},
            {n.id for n in found if type(n.ctx) in (gast.Store, gast.Param)})
