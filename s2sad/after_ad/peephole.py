"""Peephole: small rewrites of the fused gradient once buffers are reused, each of which
saves an allocation, a copy or a pass over an array.

Takes the fused gradient after `reuse_buffers`, whose facts about the arrays
(`ctx.array_facts.statement_facts`) it reads: these rewrites change no fact of the
names they read.

- a second name for the same view of an array (`t_6 = x[:-1]` after `t_1 = x[:-1]`) is
  read as the first;
- an in-place multiplication of a float array by 1 (the seed `y_bar = 1.0` that did
  not fold into a constant) goes, and a multiplication by 1 into a slice is a copy into
  it; `1.0 * a` inside an expression is `a`;
- `t = ufunc(..., out=...)` is `ufunc(..., out=...)` when nothing reads `t`;
- an addition into a slice of an array, `x_bar[1:] += g`, goes through a named view,
  `x_bar_view += g` after `x_bar_view = x_bar[1:]`: the same update in place, without
  `__setitem__` copying the view onto itself;
- a returned gradient loses the copy that kept it apart from the others when it
  certainly shares no memory with them; an array's gradient is cast to its
  parameter's dtype when it certainly has another; `_s2s_zeros_like(x)` of a
  parameter of known dtype is `np.zeros(x.shape)`;
- a name bound once to `e / (2 * d)` and read only as `2 * n` (a square root's adjoint
  read by the doubled terms of a sum of squares) is `e / d`, read as `n`
  (`ad.simplify.halves_cancelled`);
- a float bound once to a negation (`t_bar = -vy_bar`) is not computed: the sums its
  reads are terms of flip instead, and a name that then holds a negated value is
  called `minus_...` (`ad.simplify.negations_pushed`);
- a product summed down to a shape, `_s2s_unbroadcast(a * b, x)`, is one contraction
  `_s2s_unbroadcast_product(a, b, x)` (a matrix product, without the product's array);
  a product, or a sum of products of one shape, bound to a name read only summed down,
  is summed down by each reader (`distributed`); and an adjoint
  `_s2s_unreduce(g, x, axis, keepdims)` read only by contractions is
  `_s2s_unreduce_view(...)`, a view of `g`. For `np.sum(d * c, axis=1)` with `d` of
  shape (n, n, 3), the adjoint of `c` is `_s2s_unbroadcast_product(t_bar, d, c)` after
  `t_bar = _s2s_unreduce_view(a_bar, t, 1, False)`, not an (n, n, 3) product summed.

What is certainly a float (`float_names`) is the greatest set of names every binding
of which gives a float, the numbers a loop tapes included.

>>> print(show("reuse_buffers", '''
... def f(x):
...     return np.sum(np.exp(x[1:] - x[:-1]) ** 2)
... ''', arrays=True).split("    x_bar =")[1])
 _s2s_zeros_like(x)
    x_bar[:-1] -= t_2_bar
    x_bar[1:] += t_2_bar
    return x_bar
>>> print(show("peephole", '''
... def f(x):
...     return np.sum(np.exp(x[1:] - x[:-1]) ** 2)
... ''', arrays=True).split("    x_bar =")[1])
 _s2s_zeros_like(x)
    x_bar_view = x_bar[:-1]
    x_bar_view -= t_2_bar
    x_bar_view_1 = x_bar[1:]
    x_bar_view_1 += t_2_bar
    return x_bar
"""
import bisect
import collections
import operator

import gast
import numpy as np

from .. import syntax
from ..analysis.buffers import ND, NDARRAY, Fact
from ..analysis.names import number_names, number_value, store_counts
from ..analysis.shapes import trims
from ..ad.simplify import halves_cancelled, negations_pushed
from ..options import Variant
from ..rules import registry, runtime

_ARITHMETIC = {gast.Add: operator.add, gast.Sub: operator.sub, gast.Mult: operator.mul}


def run(fn, ctx):
    """The pass (with the option `release`, after reuse_buffers)."""
    return Peephole(ctx).run(fn)


class Peephole:
    """See the module docstring."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.known = ctx.array_facts
        self.types = ctx.types      # (a dict made at each access)
        # {statement: (the names it reads, those it binds)}, found once: a statement
        # that changes is forgotten (`changed`)
        self.names = syntax.NodeMap()

    def run(self, fn):
        before = self.known.statement_facts
        if before is None or any(id(s) not in before for s in fn.body):
            facts = self.known.analyse(fn.body, self.known.parameters(fn))
            before = {id(s): f for s, f in zip(fn.body, facts)}
        self.before = before
        self.stored = stored = store_counts(fn)     # upper bounds: no rewrite binds more
        self.numbers = number_names(fn, stored)
        self.floats = self.float_names(fn)
        body = self.without_unit_factors(self.shared_views(fn.body, before), before)
        fn.body = self.viewed(self.unnamed(body), before)
        if self.ctx.variant is not Variant.ADVANCE:     # (which returns the step's result)
            self.uncopied_results(fn, before)
            self.cast_results(fn, before)
        self.plain_zeros(fn)
        self.contractions(fn)
        fn = halves_cancelled(fn, lambda s: self.names_of(s)[0], self.stored)
        return negations_pushed(fn, self.floats, self.stored, lambda s: self.names_of(s)[0],
                                self.ctx.namer.fresh)

    def contractions(self, fn):
        """`_s2s_unbroadcast(a * b, x)` as `_s2s_unbroadcast_product(a, b, x)` throughout
        `fn` (not for a number operand: a number times the sum is as fast); a sum of such
        products read only summed down to shapes, summed term by term
        (`distributed`); then an `_s2s_unreduce` bound to a name read only as their
        operand as `_s2s_unreduce_view`."""
        helper, unbroadcast = self.ctx.bindings.get, runtime.unbroadcast
        products, reads, loaded = [], {}, []
        for n in syntax.values(fn):  # (one walk: the products, and what `distributed` reads)
            kind = type(n)
            if kind is gast.Name:
                if type(n.ctx) is gast.Load:
                    loaded.append(n.id)
                continue
            if not (kind is gast.Call and type(n.func) is gast.Name
                    and helper(n.func.id) is unbroadcast and len(n.args) == 2):
                continue
            if (not n.keywords and isinstance(n.args[0], gast.BinOp)
                    and isinstance(n.args[0].op, gast.Mult)
                    and not any(self.maybe_number(e) for e in (
                        n.args[0].left, n.args[0].right, n.args[1]))):
                n.func = syntax.name(self.ctx.runtime("unbroadcast_product"))
                n.args = [n.args[0].left, n.args[0].right, n.args[1]]
                self.names[n] = None
                products.append(n)
                continue
            g = n.args[0]
            g = g.operand if isinstance(g, gast.UnaryOp) and isinstance(g.op, gast.USub) else g
            if isinstance(g, gast.Name):
                reads.setdefault(g.id, []).append(n)
        if not products:
            return
        self.distributed(fn, reads, collections.Counter(loaded))
        # (one walk: the names, in the order of `name_nodes`, and the operands of products)
        helper, product = self.ctx.bindings.get, runtime.unbroadcast_product
        operands, names = set(), []
        for n in syntax.values(fn):
            kind = type(n)
            if kind is gast.Name:
                names.append(n)
            elif kind is gast.Call and type(n.func) is gast.Name and helper(
                    n.func.id) is product:
                operands.update(id(a) for a in n.args[:2] if isinstance(a, gast.Name))
        loads = {}
        for n in names:
            loads.setdefault(n.id, []).append(id(n) in operands and type(n.ctx) is gast.Load)
        for body in syntax.blocks(fn.body):
            mentions = None     # {name: the positions of the statements reading or binding it}
            for i, s in enumerate(body):
                if not (isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name)
                        and self.is_helper(s.value, "unreduce")
                        and self.stored[s.targets[0].id] == 1
                        and all(loads[s.targets[0].id][1:]) and len(loads[s.targets[0].id]) > 1):
                    continue
                # a view of the adjoint `g`: read only while nothing writes in place
                # (into `g`'s memory, through any name) after it
                name, fresh = s.targets[0].id, isinstance(s.value.args[0], _NEW_VALUES)
                if mentions is None:    # (found once per block: a rewrite here changes
                    mentions = {}       # only the helper a statement calls)
                    for j, t in enumerate(body):
                        for n in set().union(*self.names_of(t)):
                            mentions.setdefault(n, []).append(j)
                at = mentions.get(name, [])
                last = at[-1] if at and at[-1] > i else None
                if last is not None and (fresh or self.left_alone(
                        body, i, last, _operands(s.value.args[0]))):
                    s.value.func = syntax.name(self.ctx.runtime("unreduce_view"))
                    self.changed(s)

    def is_helper(self, n, name):
        return (isinstance(n, gast.Call) and isinstance(n.func, gast.Name)
                and self.ctx.bindings.get(n.func.id) is getattr(runtime, name))

    def distributed(self, fn, reads, loaded):
        """`fn` where a name bound once to a product of arrays, or a sum of products of
        one shape (`_s2s_unbroadcast_product(a, b, y) + 2 * c * y`), read only summed down
        to other shapes (`_s2s_unbroadcast(d, x)`, `_s2s_unbroadcast(-d, x)`, at most twice, in
        the same block), is not bound: each read sums each product down (one contraction
        each, `_s2s_unbroadcast_product(a, b, x) + 2 * _s2s_unbroadcast_product(c, y,
        x)`), which no array of the sum's size needs. (`reads`: {name: the
        `_s2s_unbroadcast` calls of it or of its negation}, and `loaded`, how often each
        name is read: found in the walk of `contractions`.)"""
        stored, dropped = self.stored, set()
        for body in list(syntax.blocks(fn.body)):
            classes = None          # (made for a block with a candidate only)
            for i, s in enumerate(body):
                if not (isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name)
                        and stored[s.targets[0].id] == 1):
                    continue
                d = s.targets[0].id
                uses = reads.get(d, [])
                terms = self.product_terms(s.value)
                if not 0 < len(uses) <= 2 or len(uses) != loaded[d] or terms is None:
                    continue
                if classes is None:
                    classes = ShapeClasses(body, stored, self.maybe_number, self.is_helper,
                                           self.stores_of)
                shape = {classes.of(t, i) for _, t in terms}
                if (len(shape) != 1 or shape & {None, "number"}
                        or any(classes.of(u.args[1], i) in shape for u in uses)):
                    continue    # (summed down to its own shape: each product made again)
                places = self.places(body, i, uses, _operands(s.value))
                if places is None:
                    continue
                for j in places:
                    body[j] = self.changed(self.summed_terms(body[j], uses, terms))
                dropped.add(id(s))
        for body in syntax.blocks(fn.body):
            body[:] = [s for s in body if id(s) not in dropped]

    def product_terms(self, e, sign=1):
        """[(sign, term)] of `e`, a product of arrays or a sum of them (each a product of
        two or more names of arrays, and numbers, or an `_s2s_unbroadcast_product`), or
        None."""
        if self.is_sum(e):
            left = self.product_terms(e.left, sign)
            right = self.product_terms(e.right, sign if isinstance(e.op, gast.Add) else -sign)
            return None if left is None or right is None else left + right
        if isinstance(e, gast.UnaryOp) and isinstance(e.op, gast.USub):
            return self.product_terms(e.operand, -sign)
        return [(sign, e)] if self.factors(e) else None

    def is_sum(self, e):
        return isinstance(e, gast.BinOp) and isinstance(e.op, (gast.Add, gast.Sub))

    def factors(self, e):
        """(numbers, arrays): the factors of the product `e` (two or more names of
        arrays), or None."""
        if self.is_helper(e, "unbroadcast_product"):
            return ([], [e]) if all(isinstance(a, gast.Name) for a in e.args) else None
        if not (isinstance(e, gast.BinOp) and isinstance(e.op, gast.Mult)):
            return None
        found = []
        todo = [e]
        while todo:
            n = todo.pop()
            if isinstance(n, gast.BinOp) and isinstance(n.op, gast.Mult):
                todo += [n.right, n.left]
            else:
                found.append(n)
        numbers = [f for f in found if self.maybe_number(f)]
        arrays = [f for f in found if not self.maybe_number(f)]
        if len(arrays) < 2 or not all(isinstance(a, gast.Name) for a in arrays):
            return None     # (a factor computed, once for each read, would be computed again)
        return numbers, arrays

    def places(self, body, i, uses, names):
        """The indices in `body` of the statements after `body[i]` that hold `uses`, when
        they are simple statements and those between `body[i]` and the last of them
        leave the arrays `names` as they are; else None."""
        where = []
        for u in uses:
            j = next((j for j in range(i + 1, len(body))
                      if any(n is u for n in syntax.values(body[j]))), None)
            if j is None or not isinstance(body[j], (gast.Assign, gast.AugAssign, gast.Expr)):
                return None
            where.append(j)
        last = max(where)
        if any(syntax.stores(body[j], n) for j in range(i + 1, last) for n in names):
            return None
        return sorted(set(where)) if self.left_alone(body, i, last, names) else None

    def left_alone(self, body, i, last, names):
        """Whether the statements after `body[i]` up to `body[last]`, which reads them,
        certainly write into no memory of the arrays `names` (by the buffer facts)."""
        for j in range(i + 1, last + 1):
            written = _written(body[j], j == last)
            if written is None:
                return False
            if not written:
                continue
            known = self.before.get(id(body[j]))
            if known is None:
                return False
            for w in written:
                into = known.get(w)
                for n in names:
                    fact = known.get(n)
                    if (into is None or fact is None or not into.buffers or not fact.buffers
                            or into.buffers & fact.buffers):
                        return False
        return True

    def summed_terms(self, s, uses, terms):
        """`s` where each `_s2s_unbroadcast(d, x)` of `uses` is the sum of `terms` summed
        down to `x` term by term."""
        found = {id(u): u for u in uses}
        for n in list(syntax.walk(s)):
            for field, value in gast.iter_fields(n):
                if type(value) is list:
                    value[:] = [self.summed_use(v, terms) if id(v) in found else v
                                for v in value]
                elif id(value) in found:
                    setattr(n, field, self.summed_use(value, terms))
        return s

    def summed_use(self, use, terms):
        """`_s2s_unbroadcast(d, x)` (or of `-d`) as the sum of `terms` summed down to `x`."""
        out = None
        for sign, term in terms:
            t = self.term_summed(term, use.args[1])
            if out is None:
                out = t if sign > 0 else syntax.unary(gast.USub(), t)
            else:
                out = syntax.binop(out, gast.Add() if sign > 0 else gast.Sub(), t)
        return syntax.unary(gast.USub(), out) if isinstance(use.args[0], gast.UnaryOp) else out

    def term_summed(self, term, x):
        """The product `term` summed down to the shape of `x`, one contraction."""
        if self.is_helper(term, "unbroadcast_product"):
            return syntax.call(term.func, [syntax.copied(a) for a in term.args[:2]] +
                               [syntax.copied(x)])
        numbers, arrays = self.factors(term)
        left = arrays[0]
        for a in arrays[1:-1]:
            left = syntax.binop(left, gast.Mult(), a)
        out = syntax.call(syntax.name(self.ctx.runtime("unbroadcast_product")),
                          [syntax.copied(left), syntax.copied(arrays[-1]), syntax.copied(x)])
        for k in reversed(numbers):
            out = syntax.binop(syntax.copied(k), gast.Mult(), out)
        return out

    def maybe_number(self, e):
        """Whether `e` is a constant, or a name bound to a number or to a Python float."""
        return isinstance(e, gast.Constant) or (isinstance(e, gast.Name) and (
            e.id in self.numbers or e.id in self.floats or self.is_int(e)))

    def number(self, e):
        """The number `e` certainly is (a constant, or a name bound once to one), or None."""
        return number_value(e, self.numbers)

    def uncopied_results(self, fn, before):
        """Return a gradient without the copy that keeps it apart from the others
        (after_ad/distinct_results.py) when it certainly shares no memory with them: an
        array the function allocated, `np.sum(g, axis=0)` where code without the shapes
        may have returned `g` itself."""
        ret = fn.body[-1] if fn.body else None
        if not isinstance(ret, gast.Return) or id(ret) not in before:
            return
        facts = before[id(ret)]
        grads = ret.value.elts[1] if self.ctx.variant is Variant.VALUE_AND_GRAD else ret.value
        if not isinstance(grads, gast.Tuple):
            return
        memory = [self.known.loaded(e, facts) for e in grads.elts]
        for i, e in enumerate(grads.elts):
            if not (isinstance(e, gast.Call) and isinstance(e.func, gast.Attribute)
                    and e.func.attr == "copy" and syntax.is_name(e.func.value, "np")
                    and len(e.args) == 1 and isinstance(e.args[0], gast.Name)):
                continue
            mine = facts.get(e.args[0].id, Fact())
            others = 0
            for j, m in enumerate(memory):
                others |= m if j != i else 0
            if (mine.kind in (ND, NDARRAY) and mine.buffers
                    and not mine.buffers & ~self.known.owned and not mine.buffers & others):
                grads.elts[i] = e.args[0]
                memory[i] = mine.buffers

    def plain_zeros(self, fn):
        """`np.zeros(x.shape)` for `_s2s_zeros_like(x)`, `x` an ndarray parameter never
        bound again whose dtype the code is specialised on (`np.zeros(x.shape, float32)`
        for float32): half the time of the helper, which checks its argument."""
        stored = self.stored
        for s in syntax.statements(fn):
            value = getattr(s, "value", None)
            if not (isinstance(s, gast.Assign) and self.known.is_zeros(s) and len(value.args) == 1):
                continue
            x = value.args[0].id
            if (x not in self.known.dtypes or stored[x] != 1
                    or self.types.get(x) is not np.ndarray):
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
        value = self.ctx.variant is Variant.VALUE_AND_GRAD     # returns (value, gradients)
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
        stored = self.stored
        for s, known in zip(body, facts):
            if renamed and self.names_of(s)[0] & renamed.keys():
                s = self.changed(Rename().visit(s))
            for n in self.names_of(s)[1]:
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
            for n in self.names_of(s)[1]:
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
            out.append(self.changed(s))
        return out

    def without_unit_products(self, s, facts):
        """`s` with `1.0 * a` inside it read as `a` for a float array `a` (not as the whole
        value of an assignment, which would then share `a`'s memory: nor once its other
        operand folds to 1, `2 * (y_bar * 0.5) * w`)."""
        if isinstance(s, gast.Assign) and isinstance(s.value, gast.BinOp) and any(
                self.number(x) == 1 and not self.certainly_float(y, self.floats)
                for x, y in ((s.value.left, s.value.right), (s.value.right, s.value.left))):
            s.value.left = self.dropped(s.value.left, facts, [])
            s.value.right = self.dropped(s.value.right, facts, [])
            return self.changed(s)
        if isinstance(s, gast.Assign) and isinstance(s.value, gast.BinOp):
            found = []
            value = s.value
            value.left = self.dropped(value.left, facts, found)
            value.right = self.dropped(value.right, facts, found)
            if self.number(value.left) is not None or self.number(value.right) is not None:
                found.append(value)
                folded = self.operation_dropped(value, facts)
                if not isinstance(folded, gast.Name) or self.certainly_float(folded,
                                                                             self.floats):
                    s.value = folded
            return self.changed(s) if found else s
        if isinstance(s, (gast.For, gast.While, gast.If)):
            # (each statement of the bodies as one here: `yn = y * 1.0` in a loop, then
            # written into in place, must not become `yn = y`)
            for field in ("body", "orelse"):
                setattr(s, field, [self.without_unit_products(t, facts)
                                   for t in getattr(s, field)])
            header = "iter" if isinstance(s, gast.For) else "test"
            setattr(s, header, self.dropped(getattr(s, header), facts, []))
            return self.changed(s)
        found = []
        s = self.dropped(s, facts, found)
        return self.changed(s) if found else s

    def dropped(self, node, facts, found):
        """`node` with the products by 1 inside it dropped (`without_unit_products`), in
        place; `found` gets an entry for each operation with a number operand (no other
        changes: an operation folds only once one of its operands is a number, which a
        folded operand was made of)."""
        syntax.rebuilt(node, lambda child: self.dropped(child, facts, found),
                       values_only=True)
        if type(node) is not gast.BinOp:
            return node
        if self.number(node.left) is not None or self.number(node.right) is not None:
            found.append(node)
            return self.operation_dropped(node, facts)
        return node

    def operation_dropped(self, node, facts):
        """The operation `node` (its operands done) folded, or its operand for a product
        by 1 of a float array or a Python float (see `without_unit_products`)."""
        numbers = [self.number(x) for x in (node.left, node.right)]
        if None not in numbers and isinstance(node.op, (gast.Add, gast.Sub, gast.Mult)):
            # `100.0 * 2` once the seed of `y_bar * 100.0 * 2` is left out; `2 * y_bar`
            return syntax.const(_ARITHMETIC[type(node.op)](*numbers))
        if isinstance(node.op, gast.Div) and self.number(node.left) is not None \
                and isinstance(node.left, gast.Name):
            # `1.0 / x`, not `y_bar / x`
            node.left = syntax.const(self.number(node.left))
        if isinstance(node.op, gast.Mult):
            for one, other in ((node.left, node.right), (node.right, node.left)):
                fact = facts.get(getattr(other, "id", None), Fact())
                if self.number(one) == 1 and isinstance(other, gast.Name) and \
                        fact.kind in (ND, NDARRAY) and self.known.is_float(fact.dtype):
                    return other
                if self.number(one) == 1 and self.certainly_float(other, self.floats):
                    return other        # a Python float: no memory to share
        return node

    def float_names(self, fn):
        """Names certainly bound to a Python float: the greatest set of names each of
        whose bindings gives a float, given that the others in the set hold floats
        (`certainly_float`): a parameter the code is specialised on as a float, an
        assignment of a float expression, or the element of a tape that every push
        gives a float (`tape_elements`). A name with a binding of another form (a loop
        over `range`, an unpacked tuple) is none."""
        types = self.types
        floats = {p for p, t in types.items() if t is float and "." in p}
        bindings = {p: [] for p, t in types.items() if t is float and "." not in p}
        reads = {}      # {name: the names each of its bindings reads}
        statements = syntax.statements(fn)
        for s in statements:
            if isinstance(s, gast.Assign) and len(s.targets) == 1 and \
                    isinstance(s.targets[0], gast.Name):
                bindings.setdefault(s.targets[0].id, []).append(s.value)
                reads.setdefault(s.targets[0].id, []).append(self.names_of(s)[0])
        for target, values in self.tape_elements(fn, statements):
            bindings.setdefault(target, []).extend(values)
            reads.setdefault(target, []).extend(syntax.names_loaded(v) for v in values)
        # a name bound in another way too is none (a parameter is bound once more)
        params = set(syntax.names_stored(fn.args))
        candidates = {n for n, values in bindings.items()
                      if self.stored[n] == len(values) + (n in params)
                      and (n not in params or types.get(n) is float)}
        floats |= candidates
        readers = {}                    # {name: the candidates a binding of reads it}
        for n in candidates:
            for names in reads.get(n, ()):
                for m in names:
                    readers.setdefault(m, set()).add(n)
        todo = list(candidates)
        while todo:
            n = todo.pop()
            if n in floats and not all(self.certainly_float(v, floats)
                                       for v in bindings[n]):
                floats.discard(n)
                todo.extend(readers.get(n, ()))
        return floats

    def tape_elements(self, fn, statements):
        """[(name, the values pushed where it is unpacked)] for the names a loop over a
        tape binds (`for a, b in reversed(_s2s_tape)`), where the tape is bound once, to
        `[]`, and read only by `append` statements and such loops (`statements`, those
        of `fn`)."""
        tapes = {s.targets[0].id for s in statements
                 if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name)
                 and isinstance(s.value, gast.List) and not s.value.elts
                 and self.stored[s.targets[0].id] == 1}
        if not tapes:
            return []
        pushes, loops, other = {}, {}, set()     # other: tapes read some other way
        for s in statements:
            if s is fn:
                continue
            call = s.value if isinstance(s, gast.Expr) else None
            if (isinstance(call, gast.Call) and isinstance(call.func, gast.Attribute)
                    and call.func.attr == "append" and syntax.is_name(call.func.value)
                    and call.func.value.id in tapes and len(call.args) == 1
                    and not call.keywords):
                pushes.setdefault(call.func.value.id, []).append(call.args[0])
                other.update(tapes.intersection(syntax.names_loaded(call.args[0])))
            elif isinstance(s, gast.For):
                it = s.iter
                if (isinstance(it, gast.Call) and syntax.is_name(it.func, "reversed")
                        and len(it.args) == 1):
                    it = it.args[0]
                if syntax.is_name(it) and it.id in tapes:
                    loops.setdefault(it.id, []).append(s)
                else:
                    other.update(tapes.intersection(syntax.names_loaded(s.iter)))
            elif isinstance(s, (gast.If, gast.While)):
                other.update(tapes.intersection(syntax.names_loaded(s.test)))
            else:       # a simple statement, or one whose nested reads count too
                other.update(tapes & self.names_of(s)[0])
        out = []
        for tape in tapes - other:
            for loop in loops.get(tape, ()):
                unpacked = isinstance(loop.target, gast.Tuple)
                targets = loop.target.elts if unpacked else [loop.target]
                if not all(isinstance(t, gast.Name) for t in targets):
                    continue
                values = [[] for _ in targets]
                for pushed in pushes.get(tape, ()):
                    elts = pushed.elts if isinstance(pushed, gast.Tuple) else None
                    elts = elts if unpacked else [pushed]
                    if elts is None or len(elts) != len(targets) or any(
                            isinstance(e, gast.Starred) for e in elts):
                        values = None
                        break
                    for k, e in enumerate(elts):
                        values[k].append(e)
                if values is not None:
                    out.extend((t.id, v) for t, v in zip(targets, values))
        return out

    def certainly_float(self, e, floats):
        """Whether `e` is certainly a Python float: a float constant or name, a function
        whose record says it gives floats for numbers (`math.sin`) called on numbers, or
        arithmetic on numbers with a float operand (or `/`)."""
        if isinstance(e, gast.Constant):
            return type(e.value) is float
        if isinstance(e, gast.Name):
            return e.id in floats
        if isinstance(e, gast.Attribute) and isinstance(e.value, gast.Name):
            # a field of a record parameter (bound only as one) the guard checks (`p.dt`)
            return f"{e.value.id}.{e.attr}" in floats and self.stored[e.value.id] <= 1
        if isinstance(e, gast.UnaryOp) and isinstance(e.op, (gast.USub, gast.UAdd)):
            return self.certainly_float(e.operand, floats)
        if isinstance(e, gast.BoolOp):      # a rule's denominator `d or np.float64(d)`
            return all(self.certainly_float(v, floats) for v in e.values)
        if isinstance(e, gast.BinOp) and type(e.op) in (gast.Add, gast.Sub, gast.Mult,
                                                         gast.Div, gast.Pow):
            floating = [self.certainly_float(x, floats) for x in (e.left, e.right)]
            numbers = [f or self.is_int(x) for f, x in zip(floating, (e.left, e.right))]
            return all(numbers) and (any(floating) or isinstance(e.op, gast.Div))
        if isinstance(e, gast.Call) and not e.keywords:
            f = self.known.resolve(e.func)
            floating = [self.certainly_float(a, floats) for a in e.args]
            numbers = all(f or self.is_int(a) for f, a in zip(floating, e.args))
            if _float_ufunc(f, len(e.args)) or f is np.float64:
                # `np.cos(x)` of a float is a np.float64: a float, and immutable
                return numbers and any(floating)
            return getattr(registry.primitive(f), "floats", False) and numbers
        return False

    def is_int(self, e):
        return (isinstance(e, gast.Constant) and type(e.value) is int) or (
            isinstance(e, gast.Name) and self.types.get(e.id) is int)

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

    def names_read(self, body):
        """The names statements of `body` read (an augmented assignment reads its target)."""
        read = set()
        for s in body:
            read |= self.names_of(s)[0]
        return read

    def names_of(self, s):
        """(the names `s` reads, those it binds)."""
        found = self.names.get(s)
        if found is None:
            nodes = syntax.name_nodes(s)
            read = {n.id for n in nodes if type(n.ctx) is gast.Load}
            if isinstance(s, gast.AugAssign) and isinstance(s.target, gast.Name):
                read.add(s.target.id)
            found = self.names[s] = (read, {n.id for n in nodes if type(n.ctx) in (
                gast.Store, gast.Param)})
        return found

    def stores_of(self, s):
        """The names `s` binds or deletes."""
        if type(s) in (gast.Assign, gast.AugAssign, gast.Expr):     # (no `del` inside)
            return self.names_of(s)[1]
        return {n.id for n in syntax.name_nodes(s) if type(n.ctx) is not gast.Load}

    def changed(self, s):
        """`s`, whose names are found again when next asked for."""
        self.names[s] = None
        return s

    def unnamed(self, body):
        """`body` where `t = ufunc(..., out=...)` is `ufunc(..., out=...)` when nothing
        reads `t`."""
        loaded = self.names_read(body)
        return [syntax.located(syntax.expr_stmt(s.value), s)
                if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name)
                and s.targets[0].id not in loaded and isinstance(s.value, gast.Call)
                and any(k.arg == "out" for k in s.value.keywords) else s for s in body]


#: Expressions whose value is a new array (or a number), no other name's memory.
_NEW_VALUES = (gast.BinOp, gast.UnaryOp, gast.Constant)
#: Methods that write into their array (or an argument).
_WRITING = {"at", "fill", "put", "sort", "copyto", "place", "putmask", "fill_diagonal",
            "resize", "itemset", "partition"}


def _written(s, last=False):
    """The names of the arrays statement `s` may write into in place (an augmented
    assignment to a name evaluates its value first: not when `s` is the `last` reader),
    or None when not known."""
    out = set()
    if syntax.is_comment(s):
        return out
    if isinstance(s, gast.AugAssign):
        if not (last and isinstance(s.target, gast.Name)):
            out.add(_root(s.target))
    elif isinstance(s, gast.Assign):
        out |= {_root(t) for t in s.targets if not isinstance(t, gast.Name)}
    elif not isinstance(s, gast.Expr):
        return None
    for n in syntax.values(s):
        if isinstance(n, gast.keyword) and n.arg == "out":
            out.add(_root(n.value))
        elif (isinstance(n, gast.Call) and isinstance(n.func, gast.Attribute)
                and n.func.attr in _WRITING):
            out |= {_root(n.func.value)} | ({_root(n.args[0])} if n.args and not isinstance(
                n.args[0], gast.Constant) else set())     # a.fill(0.0); np.copyto(a, b)
    return None if None in out else out


def _operands(e):
    """The names of the values expression `e` reads (not those of functions it calls or
    of modules whose attributes it reads)."""
    found = syntax.values(e)
    skip = {id(n.func) for n in found if isinstance(n, gast.Call)} | {
        id(n.value) for n in found if isinstance(n, gast.Attribute)}
    return {n.id for n in syntax.name_nodes(e)
            if type(n.ctx) is gast.Load and id(n) not in skip}


def _root(e):
    """The name `e` (`a`, `a[i]`, `a.b[i]`) reads, or None."""
    while isinstance(e, (gast.Subscript, gast.Attribute)):
        e = e.value
    return e.id if isinstance(e, gast.Name) else None


class ShapeClasses:
    """The shape classes of expressions in a block of statements (`of`): two
    expressions of one class have one shape. A name is of the class of the value it was
    last bound to in the block (a class of its own when that is unknown, or it was bound
    by another kind of statement), or of one of its own when it is bound once and not in
    the block; a number goes with any shape (None is unknown)."""

    def __init__(self, body, stored, is_number, is_helper, stores_of):
        self.body, self.stored = body, stored
        self.is_number, self.is_helper = is_number, is_helper
        self.found = {}
        self.binding = {}   # {name: the positions of the statements binding it}, in order
        for j, s in enumerate(body):
            for n in stores_of(s):
                self.binding.setdefault(n, []).append(j)

    def of(self, e, at):
        """The class of `e` evaluated before `self.body[at]`."""
        if self.is_number(e):
            return "number"
        if isinstance(e, gast.Name):
            return self.name(e.id, at)
        for helper, i in (("unbroadcast", 1), ("unbroadcast_product", 2), ("unreduce", 1),
                          ("unreduce_view", 1)):
            if self.is_helper(e, helper) and len(e.args) > i:
                return self.of(e.args[i], at)
        if isinstance(e, gast.UnaryOp) and isinstance(e.op, gast.USub):
            return self.of(e.operand, at)
        if isinstance(e, gast.BinOp) and isinstance(e.op, (gast.Add, gast.Sub, gast.Mult)):
            found = {self.of(e.left, at), self.of(e.right, at)} - {"number"}
            if not found:
                return "number"
            return found.pop() if len(found) == 1 and None not in found else None
        return None

    def name(self, id, at):
        positions = self.binding.get(id, ())
        k = bisect.bisect_left(positions, at)
        j = positions[k - 1] if k else None
        if j is None:
            return ("name", id) if self.stored[id] == 1 else None
        key = (id, j)
        if key not in self.found:
            self.found[key] = ("name", id, j)     # (while its value's is found)
            s = self.body[j]
            if (isinstance(s, gast.Assign) and len(s.targets) == 1
                    and syntax.is_name(s.targets[0], id)):
                found = self.of(s.value, j)
                if found not in (None, "number"):
                    self.found[key] = found
        return self.found[key]


def _float_ufunc(f, nargs):
    """Whether `f` is a NumPy ufunc of `nargs` inputs whose loop for floats gives a float
    (`np.cos`, `np.add`; not `np.isnan`, whose result is a bool)."""
    return (isinstance(f, np.ufunc) and f.nin == nargs and f.nout == 1
            and "d" * nargs + "->d" in f.types)
