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
slice of an array of zeros computes its value in that slice instead (`into_zeros`), and
additions into slices go through named views (`x_bar_view += g`), which spares NumPy
copying the slice onto itself.

>>> import numpy as np
>>> from s2sad import pipeline
>>> def f(x):
...     return np.sum(np.exp(x[1:] - x[:-1]) ** 2)
>>> print(pipeline.reverse(f, fused="grad", release=True).source.rstrip())
def f_grad(x):
    if x.__class__ is not ndarray or x.dtype.kind != 'f':
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
import operator

import gast
import numpy as np

from ..analysis.buffers import ND, NDARRAY, NUMBER, Fact
from ..analysis.names import store_counts
from ..analysis.shapes import trims
from .. import syntax
from ..rules import registry

_COMMUTE = (gast.Add, gast.Mult)
_ARITHMETIC = {gast.Add: operator.add, gast.Sub: operator.sub, gast.Mult: operator.mul}


def run(fn, ctx):
    """The pass (with `ctx.release`, after spell and collect)."""
    return ReuseBuffers(ctx).run(fn) if ctx.release else fn


class ReuseBuffers:
    """See the module docstring; the facts are `ctx.array_facts`, which InlineHelpers and
    CombineTerms used before it."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.known = ctx.array_facts

    def run(self, fn):
        params = self.known.parameters(fn)
        facts = self.known.analyse(fn.body, params)
        fn.body = self.hoisted(fn.body, facts)
        facts = self.known.analyse(fn.body, params)
        live = self.known.live(fn.body, facts)
        out = []
        for i, s in enumerate(fn.body):
            out.extend(self.rewritten(s, facts[i], live[i + 1]))
        stored = store_counts(fn)
        self.numbers = {s.targets[0].id: s.value.value for s in fn.body
                        if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name)
                        and isinstance(s.value, gast.Constant)
                        and type(s.value.value) in (int, float)
                        and stored[s.targets[0].id] == 1}
        self.floats = self.float_names(fn)
        body, facts = self.into_zeros(out, params)
        # the clean-ups below change no fact of the names they read: one analysis serves
        before = {id(s): f for s, f in zip(body, facts)}
        body = self.without_unit_factors(self.shared_views(body, before), before)
        fn.body = self.viewed(self.unnamed(body), before)
        self.uncopied_results(fn, before)
        self.cast_results(fn, before)
        self.plain_zeros(fn)
        return fn

    def uncopied_results(self, fn, before):
        """Return a gradient without the copy that keeps it apart from the others
        (optimize.distinct_results) when it certainly shares no memory with them: an
        array the function allocated, `np.sum(g, axis=0)` where code without the shapes
        may have returned `g` itself."""
        ret = fn.body[-1] if fn.body else None
        if not isinstance(ret, gast.Return) or id(ret) not in before:
            return
        facts = before[id(ret)]
        grads = ret.value.elts[1] if self.ctx.fused is True else ret.value
        if not isinstance(grads, gast.Tuple):
            return
        memory = [self.known.loaded(e, facts) for e in grads.elts]
        for i, e in enumerate(grads.elts):
            if not (isinstance(e, gast.Call) and isinstance(e.func, gast.Attribute)
                    and e.func.attr == "copy" and syntax.is_name(e.func.value, "np")
                    and len(e.args) == 1 and isinstance(e.args[0], gast.Name)):
                continue
            mine = facts.get(e.args[0].id, Fact())
            others = set().union(*(m for j, m in enumerate(memory) if j != i))
            if (mine.kind in (ND, NDARRAY) and mine.buffers and mine.buffers <= self.known.owned
                    and not mine.buffers & others):
                grads.elts[i] = e.args[0]
                memory[i] = set(mine.buffers)

    def plain_zeros(self, fn):
        """`np.zeros(x.shape)` for `_s2s_zeros_like(x)`, `x` an ndarray parameter never
        bound again whose dtype the code is specialised on (`np.zeros(x.shape, float32)`
        for float32): half the time of the helper, which checks its argument."""
        stored = store_counts(fn)
        for s in syntax.walk(fn):
            value = getattr(s, "value", None)
            if not (isinstance(s, gast.Assign) and self.known.is_zeros(s) and len(value.args) == 1):
                continue
            x = value.args[0].id
            if (x not in self.known.dtypes or stored[x] != 1
                    or self.ctx.types.get(x) is not np.ndarray):
                continue
            dtype = self.known.dtypes[x]
            if dtype.kind != "f" or dtype.itemsize < 4:
                dtype = np.result_type(dtype, np.float32)
            self.known.used_dtypes.add(x)
            args = [syntax.attribute(x, "shape")] + ([] if dtype == np.float64 else [
                syntax.name(self.ctx.bind(dtype.name, obj=dtype))])
            s.value = syntax.call(syntax.attribute(self.ctx.bind("np", obj=np), "zeros"), args)

    def cast_results(self, fn, before):
        """Return each gradient of an array in its parameter's dtype when it certainly has
        another: a float32 parameter meeting float64 data gives float64 adjoints."""
        ret = fn.body[-1] if fn.body else None
        if not isinstance(ret, gast.Return) or id(ret) not in before:
            return
        facts = before[id(ret)]

        def cast(e, p):
            origins = facts.get(getattr(e, "id", None), Fact()).dtype
            have = self.known.concrete(origins)
            if p not in self.known.dtypes or have is None or have == self.known.dtypes[p]:
                return e
            self.known.used_dtypes |= origins | {p}
            dtype = self.known.dtypes[p]
            return syntax.call(syntax.attribute(e, "astype"),
                              [syntax.name(self.ctx.bind(dtype.name, obj=dtype))])
        value = self.ctx.fused is True     # returns (value, gradients)
        grads = ret.value.elts[1] if value else ret.value
        if self.ctx.as_tuple:
            grads.elts = [cast(e, p) for e, p in zip(grads.elts, self.ctx.wrt)]
        elif value:
            ret.value.elts[1] = cast(grads, self.ctx.wrt[0])
        else:
            ret.value = cast(grads, self.ctx.wrt[0])

    def facts_of(self, body, before):
        """The facts before each statement of `body`, from `before` ({id(statement):
        facts}), a new statement taking those of the statement before it."""
        out, known = [], {}
        for s in body:
            known = before.get(id(s), known)
            out.append(known)
        return out

    def shared_views(self, body, before):
        """`body` without `t_6 = x[:-1]` when `t_1 = x[:-1]` is bound to the same view
        of the same array: `t_6` reads are `t_1`."""
        facts, out, seen, renamed = self.facts_of(body, before), [], {}, {}

        class Rename(gast.NodeTransformer):
            def visit_Name(self, node):
                if isinstance(node.ctx, gast.Load) and node.id in renamed:
                    return syntax.name(renamed[node.id])
                return node
        stored = store_counts(body)
        for s, known in zip(body, facts):
            if renamed and set(syntax.names_loaded(s)) & renamed.keys():
                s = Rename().visit(s)
            for n in syntax.names_stored(s):
                seen = {k: v for k, v in seen.items() if n not in (k[0], v)}
            value = getattr(s, "value", None)
            if (isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name)
                    and stored[s.targets[0].id] == 1 and isinstance(value, gast.Subscript)
                    and isinstance(value.value, gast.Name)
                    and known.get(value.value.id, Fact()).kind in (ND, NDARRAY)
                    and trims(value.slice) is not None
                    and not all(i == "int" for i in trims(value.slice))):
                key = (value.value.id, gast.dump(value.slice))
                if key in seen:
                    renamed[s.targets[0].id] = seen[key]
                    continue
                seen[key] = s.targets[0].id
            out.append(s)
        return out

    def viewed(self, body, before):
        """`body` where `x_bar[1:] += g` on an array is `x_bar_view += g` after
        `x_bar_view = x_bar[1:]`: the same update in place, without `__setitem__`
        copying the view onto itself (half a microsecond a statement). A view serves
        every update of the same slice until the array is bound again."""
        facts, out, views = self.facts_of(body, before), [], {}
        for s, known in zip(body, facts):
            for n in syntax.names_stored(s):
                views = {k: v for k, v in views.items() if n not in (k[0], v)}
            target = getattr(s, "target", None)
            index = trims(target.slice) if isinstance(s, gast.AugAssign) and isinstance(
                target, gast.Subscript) and isinstance(target.value, gast.Name) else None
            if (index is None or all(i == "int" for i in index)
                    or known.get(target.value.id, Fact()).kind not in (ND, NDARRAY)):
                out.append(s)
                continue
            key = (target.value.id, gast.dump(target.slice))
            if key not in views:
                views[key] = self.ctx.namer.fresh(f"{target.value.id}_view")
                target = syntax.copied(target)
                target.ctx = gast.Load()
                out.append(syntax.located(syntax.assign(views[key], target), s))
            s.target = syntax.name(views[key], store=True)
            out.append(s)
        return out

    def without_unit_products(self, s, facts):
        """`s` with `1.0 * a` inside it read as `a` for a float array `a` (not as the whole
        value of an assignment, which would then share `a`'s memory)."""
        reuse = self

        class Drop(gast.NodeTransformer):
            def visit_BinOp(self, node):
                self.generic_visit(node)
                numbers = [x.value for x in (node.left, node.right) if isinstance(
                    x, gast.Constant) and type(x.value) in (int, float)]
                if len(numbers) == 2 and isinstance(node.op, (gast.Add, gast.Sub, gast.Mult)):
                    # `100.0 * 2` once the seed of `y_bar * 100.0 * 2` is left out
                    return syntax.const(_ARITHMETIC[type(node.op)](*numbers))
                if isinstance(node.op, gast.Div) and reuse.number(node.left) is not None \
                        and isinstance(node.left, gast.Name):
                    node.left = syntax.const(reuse.number(node.left))  # `1.0 / x`, not `y_bar / x`
                if isinstance(node.op, gast.Mult):
                    for one, other in ((node.left, node.right), (node.right, node.left)):
                        fact = facts.get(getattr(other, "id", None), Fact())
                        if reuse.number(one) == 1 and isinstance(other, gast.Name) and \
                                fact.kind in (ND, NDARRAY) and reuse.known.is_float(fact.dtype):
                            return other
                        if reuse.number(one) == 1 and reuse.certainly_float(other,
                                                                            reuse.floats):
                            return other        # a Python float: no memory to share
                return node
        if isinstance(s, gast.Assign) and isinstance(s.value, gast.BinOp) and any(
                reuse.number(x) == 1 and not reuse.certainly_float(y, reuse.floats)
                for x, y in ((s.value.left, s.value.right), (s.value.right, s.value.left))):
            s.value.left, s.value.right = (Drop().visit(s.value.left),
                                           Drop().visit(s.value.right))
            return s
        return Drop().visit(s)

    def float_names(self, fn):
        """Names certainly bound to a Python float: parameters the code is specialised on
        as floats, and names assigned once from a float expression (`certainly_float`)."""
        floats = {p for p, t in self.ctx.types.items() if t is float}
        stored = store_counts(fn)
        assigns = [s for s in syntax.walk(fn) if isinstance(s, gast.Assign)
                   and isinstance(s.targets[0], gast.Name) and stored[s.targets[0].id] == 1]
        changed = True
        while changed:
            changed = False
            for s in assigns:
                if s.targets[0].id not in floats and self.certainly_float(s.value, floats):
                    floats.add(s.targets[0].id)
                    changed = True
        return floats

    def certainly_float(self, e, floats):
        """Whether `e` is certainly a Python float: a float constant or name, a function
        whose record says it gives floats for numbers (`math.sin`) called on numbers, or
        arithmetic on numbers with a float operand (or `/`)."""
        if isinstance(e, gast.Constant):
            return type(e.value) is float
        if isinstance(e, gast.Name):
            return e.id in floats
        if isinstance(e, gast.UnaryOp) and isinstance(e.op, (gast.USub, gast.UAdd)):
            return self.certainly_float(e.operand, floats)
        if isinstance(e, gast.BinOp) and type(e.op) in (gast.Add, gast.Sub, gast.Mult,
                                                         gast.Div, gast.Pow):
            numbers = [self.certainly_float(x, floats) or self.is_int(x) for x in
                       (e.left, e.right)]
            floating = [self.certainly_float(x, floats) for x in (e.left, e.right)]
            return all(numbers) and (any(floating) or isinstance(e.op, gast.Div))
        if isinstance(e, gast.Call) and not e.keywords:
            f = self.known.resolve(e.func)
            return getattr(registry.primitive(f), "floats", False) and all(
                self.certainly_float(a, floats) or self.is_int(a) for a in e.args)
        return False

    def is_int(self, e):
        return (isinstance(e, gast.Constant) and type(e.value) is int) or (
            isinstance(e, gast.Name) and self.ctx.types.get(e.id) is int)

    def number(self, e):
        """The number `e` certainly is (a constant, or a name bound once to one), or None."""
        if isinstance(e, gast.Constant) and type(e.value) in (int, float):
            return e.value
        return self.numbers.get(e.id) if isinstance(e, gast.Name) else None

    def without_unit_factors(self, body, before):
        """`body` without the in-place multiplications of float arrays by 1 (the seed
        `y_bar = 1.0` that did not fold into a constant), and with a multiplication by 1
        into a slice as a copy into it."""
        facts, out = self.facts_of(body, before), []
        loaded = self.names_read(body)
        for s, known in zip(body, facts):
            if isinstance(s, gast.AugAssign) and isinstance(s.op, gast.Mult) and \
                    self.known.in_place(s, known) and self.number(s.value) == 1 and \
                    self.known.is_float(known[s.target.id].dtype):
                continue
            call = s.value if isinstance(s, (gast.Assign, gast.Expr)) else None
            into = call is not None and self.known.out_of(call, known)
            if into and self.known.resolve(call.func) is np.multiply and self.known.is_float(
                    known[into].dtype) and len(call.args) == 2 and any(
                    syntax.is_name(a, into) for a in call.args) and any(
                    self.number(a) == 1 for a in call.args):
                if isinstance(s, gast.Assign) and s.targets[0].id in loaded:
                    out.append(syntax.located(syntax.assign(s.targets[0].id,
                                                          syntax.name(into)), s))
                continue
            copied = call is not None and self.copy_into_slice(call)
            if copied:
                target, value = copied
                out.append(syntax.located(syntax.assign(target, value), s))
                if isinstance(s, gast.Assign) and s.targets[0].id in loaded:
                    view = syntax.copied(target)
                    view.ctx = gast.Load()
                    out.append(syntax.located(syntax.assign(s.targets[0].id, view), s))
                continue
            out.append(self.without_unit_products(s, known))
        read = self.names_read(out)
        return [s for s in out if not (isinstance(s, gast.Assign) and isinstance(
            s.targets[0], gast.Name) and s.targets[0].id in self.numbers
            and s.targets[0].id not in read)]

    def copy_into_slice(self, call):
        """(`a[i]`, `g`) when `call` is `np.multiply(1.0, g, out=a[i])`, which copies `g`
        into the slice as `a[i] = g` does; else None."""
        if not (isinstance(call, gast.Call) and len(call.args) == 2 and len(call.keywords) == 1
                and call.keywords[0].arg == "out"
                and isinstance(call.keywords[0].value, gast.Subscript)
                and self.known.resolve(call.func) is np.multiply):
            return None
        ones = [i for i, a in enumerate(call.args) if self.number(a) == 1]
        if not ones:
            return None
        target = syntax.copied(call.keywords[0].value)
        target.ctx = gast.Store()
        return target, call.args[1 - ones[0]]

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
    def rewritten(self, s, facts, live):
        if not (isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name)):
            return [s]
        free = {n for n, f in facts.items() if f.buffers and f.buffers <= self.known.owned
                and f.kind in (ND, NDARRAY) and not f.buffers & live}
        value = self.factored(s.value, facts)
        steps = self.known.plan(value, facts, free)
        if value is not s.value and (not steps or steps[0][0] == "bind"):
            steps = self.known.plan(s.value, facts, free)     # factoring allocates anyway
        if not steps or steps[0][0] == "bind" and len(steps) == 1:
            return [s]
        target = s.targets[0].id
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
            names = [(set(syntax.names_loaded(s)), set(syntax.names_stored(s))) for s in body]
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

    def names_read(self, body):
        """The names statements of `body` read (an augmented assignment reads its target)."""
        return {n for s in body for n in syntax.names_loaded(s)} | {
            s.target.id for s in body
            if isinstance(s, gast.AugAssign) and isinstance(s.target, gast.Name)}

    def unnamed(self, body):
        """`body` where `t = ufunc(..., out=...)` is `ufunc(..., out=...)` when nothing
        reads `t`."""
        loaded = self.names_read(body)
        return [syntax.located(syntax.expr_stmt(s.value), s)
                if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name)
                and s.targets[0].id not in loaded and isinstance(s.value, gast.Call)
                and any(k.arg == "out" for k in s.value.keywords) else s for s in body]

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
        if len(g.buffers) != 1 or not g.buffers <= self.known.owned or g.buffers & live[a + 1]:
            return None
        buffer, = g.buffers
        r = next((i for i in range(a) if isinstance(body[i], gast.Assign)
                  and buffer in self.fact_after(body[i], facts[i + 1]).buffers), None)
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
            if self.number(x) is not None:
                negative = gast.Constant(value=-self.number(x), kind=None)
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
