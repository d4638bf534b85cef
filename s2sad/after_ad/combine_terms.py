"""CombineTerms: the additions into one slice of an adjoint, as one expression computed in
one buffer.

Takes the fused gradient after InlineHelpers, before ReuseBuffers. After
`x_bar = _s2s_zeros_like(x)`
come additions into constant slices of `x_bar` (`x_bar[:-1] -= g`, `x_bar[1:] += h`),
up to the first statement that reads or writes `x_bar` otherwise; additions commute.
The values added into one slice sum to a polynomial in names and numbers, read
through the temporaries that only they read and that are sums, differences, products,
small powers and negations of names and numbers. Names bound once to a number are that
number, and a second name for the same view of an array is the first. A product of two
sums, or a power of one, is not multiplied out: that would lose accuracy. The sum is
written as the expression, of fewest operations found, in which each operation combines
the value so far with one name or number, and added once, in the place of the last
addition:

    -(2.0 * (1 - t_6)) + t_3_bar * -2 * t_1   ->   (t_3_bar * -2 + 2.0) * t_1 - 2.0

ReuseBuffers then computes it step by step in one buffer: in the slice itself when it is the
first to be written (the additions into other slices that came between move after it),
else in an array that is added once. No array of its own for any term, and fewer passes
over the data: the common factors are applied once. The rewrite is kept only when it
has fewer operations than the statements it replaces and ReuseBuffers computes every step in
the one buffer.

>>> import numpy as np
>>> from s2sad import driver
>>> from s2sad.options import Options, Variant
>>> def f(x):
...     return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
>>> print(driver.build(f, options=Options(Variant.GRAD, release=True)).source.rstrip())
def f_grad(x):
    if x.__class__ is not ndarray or x.dtype.kind != 'f':
        return _s2s_respecialize(x)
    if _s2s_globals['np'] is not _s2s_np or _s2s_np_dict['sum'] is not _s2s_sum:
        return _s2s_respecialize(x)
    # reverse mode of f() with respect to x
    # the pullback reads: t_1, t_3, x
    # rules: [], **, -, *, +, np.sum
    t = x[1:]
    t_1 = x[:-1]
    t_2 = t_1 ** 2
    t_3 = np.subtract(t, t_2, out=t_2)
    del t_2
    # grad of: return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
    x_bar = _s2s_zeros_like(x)
    t_3_bar = np.multiply(200.0, t_3, out=t_3)
    del t_3
    t_10 = np.multiply(t_3_bar, -2, out=x_bar[:-1])
    t_10 += 2.0
    t_10 *= t_1
    t_10 -= 2.0
    x_bar_view = x_bar[1:]
    x_bar_view += t_3_bar
    del t_3_bar
    return x_bar
"""
import collections
import functools
import math
from fractions import Fraction

import gast
import numpy as np

from .. import syntax
from ..analysis.names import store_counts
from ..rules import registry

_MAX_TERMS = 8      # larger sums are left as they are: the search grows with them


def run(fn, ctx):
    """The pass (with the option `release`, after inline_helpers, before reuse_buffers)."""
    fn.body = CombineTerms(ctx).run(fn.body, ctx.array_facts.parameters(fn))
    return fn


class CombineTerms:
    """See the module docstring; the array facts (`ctx.array_facts`) decide whether a
    sum can be computed in its slice."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.known = ctx.array_facts

    def run(self, body, params):
        """`body` (top-level statements) with the additions into each slice collected."""
        for zeros in [s for s in body if self.known.is_zeros(s)]:
            array, tried = zeros.targets[0].id, set()
            while True:
                z = next(i for i, s in enumerate(body) if s is zeros)
                groups = self.additions(body, z, array)
                key = next((k for k in groups if k not in tried), None)
                if key is None:
                    break
                tried.add(key)
                fresh = groups[key][0] == min(i for g in groups.values() for i in g)
                body = self.collected(body, array, groups[key], fresh, params) or body
        return body

    def additions(self, body, z, array):
        """{slice: indices} of the additions into constant slices of `array` after
        statement `z`, up to the first statement that reads or writes `array` otherwise
        (additions commute)."""
        groups = {}
        for i in range(z + 1, len(body)):
            s = body[i]
            if array not in syntax.names_loaded(s) + syntax.names_stored(s):
                continue
            if not (self.known.is_addition(s) and syntax.is_name(s.target.value, array)
                    and not syntax.names_loaded(s.target.slice)
                    and array not in syntax.names_loaded(s.value)):
                break
            groups.setdefault(gast.dump(s.target.slice), []).append(i)
        return groups

    def collected(self, body, array, group, fresh, params):
        """`body` with the additions `group` (indices) into one slice of `array` made one,
        or None; `fresh` when the first of them is the first to touch `array` (ReuseBuffers
        then computes the sum in the slice), and the additions into other slices among
        them move after it, so that it still is."""
        first, last = group[0], group[-1]
        others = [i for i in range(first, last) if i not in group
                  and self.known.is_addition(body[i])
                  and syntax.is_name(body[i].target.value, array)]
        if not all(self.movable(body, i, last, body[i].value, array) for i in others):
            return None
        loads = collections.Counter(syntax.names_loaded(gast.Module(body=body,
                                                                   type_ignores=[])))
        stores = store_counts(body)
        stored_at = {n: i for i, s in enumerate(body) for n in syntax.names_stored(s)}
        inlined, old = set(), len(group)
        ones = {s.targets[0].id for s in body if isinstance(s, gast.Assign)
                and isinstance(s.targets[0], gast.Name) and stores[s.targets[0].id] == 1
                and isinstance(s.value, gast.Constant) and s.value.value == 1
                and type(s.value.value) in (int, float)}
        views = self.views(body, stores)

        def expanded(name):
            nonlocal old
            i = stored_at.get(name.id)
            if i is None or stores[name.id] != 1 or name.id == array or not (
                    isinstance(body[i], gast.Assign)
                    and isinstance(body[i].targets[0], gast.Name)):
                return {(name.id,): 1}
            value = body[i].value
            if name.id in views:
                return {(views[name.id],): 1}
            if isinstance(value, gast.Constant) and type(value.value) in (int, float):
                if loads[name.id] == 1:
                    inlined.add(i)
                return polynomial(value, expanded)
            if loads[name.id] != 1 or not self.movable(body, i, last, value, array):
                return {(name.id,): 1}
            before = set(inlined), old
            p = polynomial(value, expanded)
            if p is None:
                inlined.intersection_update(before[0])
                old = before[1]
                return {(name.id,): 1}
            inlined.add(i)
            old += operations(value, ones)
            return p
        total = {}
        for i in group:
            s = body[i]
            p = polynomial(s.value, expanded)
            if p is None or not self.movable(body, i, last, s.value, array):
                return None
            old += operations(s.value, ones)
            total = added(total, p, -1 if isinstance(s.op, gast.Sub) else 1)
        if not any(total) or len(total) > _MAX_TERMS:
            return None
        cost, expr = best(total, {})
        if cost + 1 >= old:
            return None
        merged = [syntax.located(gast.AugAssign(target=syntax.copied(body[last].target),
                                               op=gast.Add(), value=expr), body[last])]
        if cost and not fresh:      # named, for ReuseBuffers to compute in one buffer
            g = self.ctx.namer.fresh("t")
            merged[:0] = [syntax.located(syntax.assign(g, expr), body[last])]
            merged[1].value = syntax.name(g)
        dropped = inlined | set(group) | set(others)
        out = [s for i, s in enumerate(body) if i not in dropped or i == last]
        at = next(i for i, s in enumerate(out) if s is body[last])
        out[at:at + 1] = merged + [body[i] for i in others]
        return out if cost == 0 or self.computable(out, at, cost, params) else None

    def views(self, body, stores):
        """{name: the first name bound to the same view}, for names bound once to a
        constant slice of a name bound at most once (`t_6 = x[:-1]` after `t_1 = x[:-1]`)."""
        first, out = {}, {}
        for s in body:
            if (isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name)
                    and stores[s.targets[0].id] == 1 and isinstance(s.value, gast.Subscript)
                    and isinstance(s.value.value, gast.Name)
                    and stores[s.value.value.id] <= 1
                    and not syntax.names_loaded(s.value.slice)):
                key = (s.value.value.id, gast.dump(s.value.slice))
                if key in first:
                    out[s.targets[0].id] = first[key]
                else:
                    first[key] = s.targets[0].id
        return out

    def movable(self, body, i, last, value, array):
        """Whether `value`, computed at statement `i`, may be computed at statement
        `last` instead: what runs between binds none of the names it reads, and is only
        assignments of names (whose calls write no array) and additions into `array`."""
        read = set(syntax.names_loaded(value))
        if array in read:
            return False
        for s in body[i + 1:last]:
            if isinstance(s, gast.Assign) and len(s.targets) == 1 and isinstance(
                    s.targets[0], gast.Name):
                if s.targets[0].id in read or not self.pure(s.value):
                    return False
            elif not (self.known.is_addition(s) and syntax.is_name(s.target.value, array)
                      or syntax.is_comment(s)):
                return False
        return True

    def pure(self, e):
        """Whether the calls in `e` are of NumPy or s2sad's helpers, without `out`, none
        writing into an array it is given (a helper's `writes`, registry.HelperFacts)."""
        for n in syntax.walk(e):
            if isinstance(n, gast.Call):
                f = self.known.resolve(n.func)
                helper = registry.helper_facts(f)
                module = str(getattr(f, "__module__", ""))
                if any(k.arg == "out" for k in n.keywords) or not (
                        isinstance(f, np.ufunc) or helper is not None and not helper.writes
                        or module.startswith("numpy")
                        and getattr(registry.primitive(f), "writes", None) is None):
                    return False
        return True

    def computable(self, body, a, cost, params):
        """Whether ReuseBuffers computes the value `body[a]` names in one buffer (that of the
        slice, when it is the first to touch an array of zeros), one step an operation."""
        facts = self.known.analyse(body, params)
        steps = self.known.plan(body[a].value, facts[a], set())
        return (steps is not None and len(steps) == cost and steps[0][0] == "bind"
                and all(s[0] == "update" for s in steps[1:]))


# -- polynomials: {tuple of names, sorted: coefficient}; () is the constant term --------

def polynomial(e, expanded):
    """The polynomial `e` is, each name read as `expanded(name)` (a polynomial), or None."""
    if isinstance(e, gast.Constant) and type(e.value) in (int, float):
        return {(): e.value} if e.value else {}
    if isinstance(e, gast.Name):
        return expanded(e)
    if isinstance(e, gast.UnaryOp) and isinstance(e.op, (gast.USub, gast.UAdd)):
        p = polynomial(e.operand, expanded)
        return None if p is None else scaled(p, -1 if isinstance(e.op, gast.USub) else 1)
    if (isinstance(e, gast.BinOp) and isinstance(e.op, gast.Pow)
            and isinstance(e.right, gast.Constant) and type(e.right.value) in (int, float)
            and e.right.value in (2, 3, 4)):
        p = polynomial(e.left, expanded)
        return None if p is None or len(p) > 1 else functools.reduce(
            multiplied, [p] * int(e.right.value))
    if isinstance(e, gast.BinOp) and isinstance(e.op, (gast.Add, gast.Sub, gast.Mult)):
        left = polynomial(e.left, expanded)
        right = None if left is None else polynomial(e.right, expanded)
        if right is None:
            return None
        if isinstance(e.op, gast.Mult):
            # a product of two sums is not multiplied out: (a - b) * (a + b) is more
            # accurate than a * a - b * b
            return multiplied(left, right) if min(len(left), len(right)) <= 1 else None
        return added(left, right, -1 if isinstance(e.op, gast.Sub) else 1)
    return None


def added(p, q, sign=1):
    out = dict(p)
    for m, c in q.items():
        out[m] = out.get(m, 0) + sign * c
        if not out[m]:
            del out[m]
    return out


def scaled(p, c):
    return {m: c * v for m, v in p.items() if c * v}


def multiplied(p, q):
    out = {}
    for m, c in p.items():
        out = added(out, {tuple(sorted(m + n)): c * d for n, d in q.items()})
    return out


def operations(e, ones=()):
    """The arithmetic operations of `e`, but for products by 1 (a number, or one of the
    names `ones`), which ReuseBuffers leaves out."""
    def unit(x):
        return (isinstance(x, gast.Constant) and type(x.value) in (int, float)
                and x.value == 1) or (isinstance(x, gast.Name) and x.id in ones)
    return sum(isinstance(n, (gast.BinOp, gast.UnaryOp)) and not (
        isinstance(n, gast.BinOp) and isinstance(n.op, gast.Mult)
        and (unit(n.left) or unit(n.right))) for n in syntax.walk(e))


def best(p, memo):
    """(operations, expression) of fewest operations found for the polynomial `p`, each
    operation combining the value so far with one name or number; of those, one with
    fewest subtractions from a name or number (`1 - t`, which `t -= 1` cannot spell)."""
    (cost, _), expr = _best(p, memo)
    return cost, expr


def _best(p, memo):
    key = frozenset(p.items())
    if key in memo:
        return memo[key]
    memo[key] = ((math.inf, 0), None)       # no way round a cycle
    terms = sorted(m for m in p if m)
    number = p.get((), 0)
    options = []

    def then(rest, combine, reversed_=False):
        (cost, turns), expr = _best(rest, memo)
        if expr is not None:
            options.append(((cost + 1, turns + (reversed_ and cost > 0)), combine(expr)))
    if not terms:
        options.append(((0, 0), syntax.const(number)))
    elif len(p) == 1:
        cost, expr = product(terms[0], p[terms[0]])
        options.append(((cost, 0), expr))
    if terms and number:
        rest = {m: p[m] for m in terms}
        then(rest, lambda e: _plus(e, number))
        then(scaled(rest, -1), lambda e: syntax.binop(syntax.const(number), gast.Sub(), e),
             True)
    for m in terms:
        if len(m) == 1 and p[m] in (1, -1) and len(p) > 1:
            rest = {n: c for n, c in p.items() if n != m}
            op = gast.Add() if p[m] == 1 else gast.Sub()
            then(rest, lambda e: syntax.binop(e, op, syntax.name(m[0])))
            if p[m] == 1:
                then(scaled(rest, -1), lambda e: syntax.binop(syntax.name(m[0]), gast.Sub(), e),
                     True)
    if terms and not number:
        for v in sorted(set(terms[0]).intersection(*terms[1:])):
            then({_without(m, v): c for m, c in p.items()},
                 lambda e: syntax.binop(e, gast.Mult(), syntax.name(v)))
    sizes = sorted({abs(v) for v in p.values()})
    for c in [c for c in sizes if c != 1] + [-c for c in sizes]:
        if all(Fraction(v) / Fraction(c) == Fraction(v / c) for v in p.values()):
            then({m: v / c if type(c) is float or v % c else v // c for m, v in p.items()},
                 lambda e: syntax.binop(e, gast.Mult(), syntax.const(c)))
    memo[key] = min(options, key=lambda o: o[0]) if options else ((math.inf, 0), None)
    return memo[key]


def product(m, c):
    """(operations, expression) of the term `c * m`."""
    expr = syntax.name(m[0])
    for v in m[1:]:
        expr = syntax.binop(expr, gast.Mult(), syntax.name(v))
    cost = len(m) - 1
    if c == -1:
        return cost + 1, syntax.unary(gast.USub(), expr)
    if c != 1:
        return cost + 1, syntax.binop(expr, gast.Mult(), syntax.const(c))
    return cost, expr


def _plus(left, number):
    """`left + number`, or `left - -number` for a negative number."""
    if number < 0:
        return syntax.binop(left, gast.Sub(), syntax.const(-number))
    return syntax.binop(left, gast.Add(), syntax.const(number))


def _without(m, v):
    i = m.index(v)
    return m[:i] + m[i + 1:]
