"""Reuse: compute an elementwise result into the buffer of a temporary nothing reads
any more, instead of allocating a new array.

Takes the fused gradient (`f_grad`, `f_value_and_grad`) before `release`. A top-level
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
import collections
import itertools
import operator
from typing import NamedTuple

import gast
import numpy as np

from ..analysis.kinds import ARRAY, SCALAR
from ..analysis.shapes import REDUCTIONS, trims
from ..codegen import nodes
from .collect import Collect
from .spell import Spell

ND, NDARRAY, NUMBER, INTS = "nd", "ndarray", "number", "ints"
EMPTY = frozenset()
_OPERATORS = {gast.Add: np.add, gast.Sub: np.subtract, gast.Mult: np.multiply,
              gast.Div: np.divide, gast.Pow: np.power, gast.USub: np.negative}
_COMMUTE = (gast.Add, gast.Mult)
_METHODS = ("sum", "max", "min", "mean", "prod")
_ARITHMETIC = {gast.Add: operator.add, gast.Sub: operator.sub, gast.Mult: operator.mul}
#: `math` functions whose value is a float for number arguments.
_MATH_FLOATS = {"sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh",
                "tanh", "asinh", "acosh", "atanh", "exp", "expm1", "exp2", "log", "log1p",
                "log2", "log10", "sqrt", "cbrt", "pow", "hypot", "erf", "erfc", "fabs",
                "copysign", "degrees", "radians", "gamma", "lgamma", "fmod"}


class Fact(NamedTuple):
    """What is known of a value: `shape`, a set of shapes it is the broadcast of;
    `dtype`, a set of origins it is the promotion of (weak Python numbers are none);
    `kind`: ND (an ndarray of one or more dimensions), NDARRAY, NUMBER (shape ()),
    INTS (a shape) or None; `buffers`, the buffers it may share memory with. None is
    unknown."""
    shape: frozenset = None
    dtype: frozenset = None
    kind: str = None
    buffers: frozenset = EMPTY


class Reuse:
    """See the module docstring; `rev` is the `Reverse` that made the function."""

    def __init__(self, rev):
        self.rev = rev
        self.ids = itertools.count()
        self.owned = set()          # buffers the function allocated
        self.floating = set()       # dtype origins certainly floating
        # the dtypes of the array parameters the code is specialised on (see
        # pipeline.patterns_of), and those the rewriting relied on (the guard tests them)
        self.dtypes = {p: np.dtype(v[0]) for p, v in (rev.patterns or {}).items()}
        self.used_dtypes = set()

    def run(self, fn):
        params = {}
        for p in (a.id for a in fn.args.posonlyargs + fn.args.args):
            kind, typ = self.rev.param_kinds.get(p), self.rev.types.get(p)
            if kind == ARRAY:
                params[p] = Fact(self.canonical(frozenset([("name", p)])), frozenset([p]), NDARRAY,
                                 frozenset([p]))
                if p in self.rev.wrt:
                    self.floating.add(p)    # grad refuses other arrays
            elif kind == SCALAR and typ in (float, int):
                params[p] = Fact(EMPTY, EMPTY, NUMBER)
            else:
                params[p] = Fact(buffers=frozenset([p]))
        fn.body = Spell(self).run(fn.body, params)
        fn.body = Collect(self).run(fn.body, params)
        facts = self.analyse(fn.body, params)
        fn.body = self.hoisted(fn.body, facts)
        facts = self.analyse(fn.body, params)
        live = self.live(fn.body, facts)
        out = []
        for i, s in enumerate(fn.body):
            out.extend(self.rewritten(s, facts[i], live[i + 1]))
        stored = collections.Counter(nodes.names_stored(fn))
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
        grads = ret.value.elts[1] if getattr(fn, "s2s_value", False) else ret.value
        if not isinstance(grads, gast.Tuple):
            return
        memory = [self.loaded(e, facts) for e in grads.elts]
        for i, e in enumerate(grads.elts):
            if not (isinstance(e, gast.Call) and isinstance(e.func, gast.Attribute)
                    and e.func.attr == "copy" and nodes.is_name(e.func.value, "np")
                    and len(e.args) == 1 and isinstance(e.args[0], gast.Name)):
                continue
            mine = facts.get(e.args[0].id, Fact())
            others = set().union(*(m for j, m in enumerate(memory) if j != i))
            if (mine.kind in (ND, NDARRAY) and mine.buffers and mine.buffers <= self.owned
                    and not mine.buffers & others):
                grads.elts[i] = e.args[0]
                memory[i] = set(mine.buffers)

    def plain_zeros(self, fn):
        """`np.zeros(x.shape)` for `_s2s_zeros_like(x)`, `x` an ndarray parameter never
        bound again whose dtype the code is specialised on (`np.zeros(x.shape, float32)`
        for float32): half the time of the helper, which checks its argument."""
        stored = collections.Counter(nodes.names_stored(fn))
        for s in nodes.walk(fn):
            value = getattr(s, "value", None)
            if not (isinstance(s, gast.Assign) and self.is_zeros(s) and len(value.args) == 1):
                continue
            x = value.args[0].id
            if x not in self.dtypes or stored[x] != 1 or self.rev.types.get(x) is not np.ndarray:
                continue
            dtype = self.dtypes[x]
            if dtype.kind != "f" or dtype.itemsize < 4:
                dtype = np.result_type(dtype, np.float32)
            self.used_dtypes.add(x)
            args = [nodes.attribute(x, "shape")] + ([] if dtype == np.float64 else [
                nodes.name(self.rev.helper(dtype.name, obj=dtype))])
            s.value = nodes.call(nodes.attribute(self.rev.helper("np", obj=np), "zeros"), args)

    def cast_results(self, fn, before):
        """Return each gradient of an array in its parameter's dtype when it certainly has
        another: a float32 parameter meeting float64 data gives float64 adjoints."""
        ret = fn.body[-1] if fn.body else None
        if not isinstance(ret, gast.Return) or id(ret) not in before:
            return
        facts = before[id(ret)]

        def cast(e, p):
            origins = facts.get(getattr(e, "id", None), Fact()).dtype
            have = self.concrete(origins)
            if p not in self.dtypes or have is None or have == self.dtypes[p]:
                return e
            self.used_dtypes |= origins | {p}
            dtype = self.dtypes[p]
            return nodes.call(nodes.attribute(e, "astype"),
                              [nodes.name(self.rev.helper(dtype.name, obj=dtype))])
        value = getattr(fn, "s2s_value", False)     # returns (value, gradients)
        grads = ret.value.elts[1] if value else ret.value
        if self.rev.as_tuple:
            grads.elts = [cast(e, p) for e, p in zip(grads.elts, self.rev.wrt)]
        elif value:
            ret.value.elts[1] = cast(grads, self.rev.wrt[0])
        else:
            ret.value = cast(grads, self.rev.wrt[0])

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
                    return nodes.name(renamed[node.id])
                return node
        stored = collections.Counter(n for s in body for n in nodes.names_stored(s))
        for s, known in zip(body, facts):
            if renamed and set(nodes.names_loaded(s)) & renamed.keys():
                s = Rename().visit(s)
            for n in nodes.names_stored(s):
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
            for n in nodes.names_stored(s):
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
                views[key] = self.rev.namer.fresh(f"{target.value.id}_view")
                target = nodes.copied(target)
                target.ctx = gast.Load()
                out.append(nodes.located(nodes.assign(views[key], target), s))
            s.target = nodes.name(views[key], store=True)
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
                    return nodes.const(_ARITHMETIC[type(node.op)](*numbers))
                if isinstance(node.op, gast.Div) and reuse.number(node.left) is not None \
                        and isinstance(node.left, gast.Name):
                    node.left = nodes.const(reuse.number(node.left))  # `1.0 / x`, not `y_bar / x`
                if isinstance(node.op, gast.Mult):
                    for one, other in ((node.left, node.right), (node.right, node.left)):
                        fact = facts.get(getattr(other, "id", None), Fact())
                        if reuse.number(one) == 1 and isinstance(other, gast.Name) and \
                                fact.kind in (ND, NDARRAY) and reuse.is_float(fact.dtype):
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
        floats = {p for p, t in self.rev.types.items() if t is float}
        stored = collections.Counter(nodes.names_stored(fn))
        assigns = [s for s in nodes.walk(fn) if isinstance(s, gast.Assign)
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
        """Whether `e` is certainly a Python float: a float constant or name, a `math`
        function of floats, or arithmetic on numbers with a float operand (or `/`)."""
        import math
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
            f = self.resolve(e.func)
            return (getattr(f, "__module__", None) == "math" or f in vars(math).values()) and \
                getattr(f, "__name__", "") in _MATH_FLOATS and all(
                    self.certainly_float(a, floats) or self.is_int(a) for a in e.args)
        return False

    def is_int(self, e):
        return (isinstance(e, gast.Constant) and type(e.value) is int) or (
            isinstance(e, gast.Name) and self.rev.types.get(e.id) is int)

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
                    self.in_place(s, known) and self.number(s.value) == 1 and \
                    self.is_float(known[s.target.id].dtype):
                continue
            call = s.value if isinstance(s, (gast.Assign, gast.Expr)) else None
            into = call is not None and self.out_of(call, known)
            if into and self.resolve(call.func) is np.multiply and self.is_float(
                    known[into].dtype) and len(call.args) == 2 and any(
                    nodes.is_name(a, into) for a in call.args) and any(
                    self.number(a) == 1 for a in call.args):
                if isinstance(s, gast.Assign) and s.targets[0].id in loaded:
                    out.append(nodes.located(nodes.assign(s.targets[0].id,
                                                          nodes.name(into)), s))
                continue
            copied = call is not None and self.copy_into_slice(call)
            if copied:
                target, value = copied
                out.append(nodes.located(nodes.assign(target, value), s))
                if isinstance(s, gast.Assign) and s.targets[0].id in loaded:
                    view = nodes.copied(target)
                    view.ctx = gast.Load()
                    out.append(nodes.located(nodes.assign(s.targets[0].id, view), s))
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
                and self.resolve(call.func) is np.multiply):
            return None
        ones = [i for i, a in enumerate(call.args) if self.number(a) == 1]
        if not ones:
            return None
        target = nodes.copied(call.keywords[0].value)
        target.ctx = gast.Store()
        return target, call.args[1 - ones[0]]

    def live(self, body, facts):
        """For each statement of `body` and the end, the buffers read from there on."""
        live = [set() for _ in body] + [set()]
        for i in range(len(body) - 1, -1, -1):
            live[i] = live[i + 1] | self.loaded(body[i], facts[i])
        return live

    # -- facts ------------------------------------------------------------------------
    def analyse(self, body, params):
        """The facts of each name before each statement of `body`."""
        facts, out = dict(params), []
        for s in body:
            out.append(facts)
            facts = self.step(s, facts)
        return out

    def step(self, s, facts):
        """The facts after statement `s`, from those before it."""
        facts = dict(facts)
        if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name):
            facts[s.targets[0].id] = self.named(s.targets[0].id, self.fact(s.value, facts))
        elif self.in_place(s, facts):
            pass        # an array updated in place keeps its shape, dtype and memory
        elif isinstance(s, gast.Delete):
            for t in s.targets:
                facts.pop(getattr(t, "id", None), None)
        elif self.writes_array(s, facts) or isinstance(s, gast.Return):
            pass        # an element write copies the values into the array
        else:
            # anything else may store any of the values it reads in any of them
            shared = self.loaded(s, facts) | {self.new()}
            names = [(n.id, type(n.ctx)) for n in nodes.name_nodes(s)]
            written = {n for n, ctx in names if ctx is not gast.Load}
            for n in {n for n, ctx in names if ctx is not gast.Del}:
                old = facts.get(n, Fact())
                facts[n] = Fact(buffers=frozenset(shared)) if n in written else \
                    old._replace(buffers=old.buffers | shared)
        return facts

    def in_place(self, s, facts):
        """Whether `s` is `t op= a` or `ufunc(..., out=t)` on an array `t` (what this
        pass writes), which changes no fact."""
        if isinstance(s, gast.AugAssign) and isinstance(s.target, gast.Name):
            return (type(s.op) in _OPERATORS
                    and facts.get(s.target.id, Fact()).kind in (ND, NDARRAY))
        return isinstance(s, gast.Expr) and self.out_of(s.value, facts) is not None

    def out_of(self, e, facts):
        """`t` when `e` is an elementwise `ufunc(..., out=t)` into an array `t`."""
        if not (isinstance(e, gast.Call) and len(e.keywords) == 1
                and e.keywords[0].arg == "out" and isinstance(e.keywords[0].value, gast.Name)):
            return None
        bare = gast.Call(func=e.func, args=e.args, keywords=[])
        t = e.keywords[0].value.id
        if self.elementwise(bare) is None or facts.get(t, Fact()).kind not in (ND, NDARRAY):
            return None
        return t

    def writes_array(self, s, facts):
        target = getattr(s, "target", None) or getattr(s, "targets", [None])[0]
        return (isinstance(s, (gast.Assign, gast.AugAssign))
                and isinstance(target, gast.Subscript) and isinstance(target.value, gast.Name)
                and facts.get(target.value.id, Fact()).kind in (ND, NDARRAY))

    def new(self, owned=False):
        b = next(self.ids)
        if owned:
            self.owned.add(b)
        return b

    def loaded(self, node, facts):
        """The buffers the names `node` reads may share memory with."""
        out = set()
        for n in nodes.names_loaded(node):
            fact = facts.get(n)
            out |= {n} if fact is None else fact.buffers
        return out

    def unknown(self, e, facts):
        return Fact(buffers=frozenset(self.loaded(e, facts) | {self.new()}))

    def fact(self, e, facts):
        like = getattr(e, "s2s_like", None)
        if like is not None:        # a new array, of the fact Spell wrote it for
            return like._replace(buffers=frozenset([self.new(owned=True)]))
        if isinstance(e, gast.Constant):
            weak = type(e.value) in (bool, int, float)
            return Fact(EMPTY, EMPTY, NUMBER) if weak else Fact()
        if isinstance(e, gast.Name):
            return facts.get(e.id) or Fact(buffers=frozenset([e.id]))
        operation = self.elementwise(e)
        if operation is not None:
            return self.result([self.fact(a, facts) for a in operation[0]])
        if isinstance(e, gast.BinOp) and isinstance(e.op, gast.MatMult):
            fresh = self.new(owned=True)
            made = self.result([self.fact(a, facts) for a in (e.left, e.right)])
            return Fact(frozenset([("value", fresh)]), made.dtype, None, made.buffers)
        if isinstance(e, gast.Attribute) and e.attr in ("shape", "ndim", "size"):
            return Fact(None, EMPTY, INTS)
        if isinstance(e, gast.Subscript):
            return self.indexed(e, self.fact(e.value, facts), facts)
        if isinstance(e, gast.Call):
            into = self.out_of(e, facts)
            if into is not None:
                return facts[into]
            if (len(e.keywords) == 1 and e.keywords[0].arg == "out"
                    and isinstance(e.keywords[0].value, gast.Subscript)
                    and self.elementwise(gast.Call(func=e.func, args=e.args, keywords=[]))):
                return self.fact(e.keywords[0].value, facts)   # into a slice (into_zeros)
            return (self.helper_result(e, facts) or self.reduction(e, facts)
                    or self.unknown(e, facts))
        return self.unknown(e, facts)

    def reduction(self, e, facts):
        """The fact of `np.sum(x, axis, keepdims=...)` or `x.sum(axis, keepdims=...)`
        (max, min, mean, prod; var and std as functions) of a float array `x`: a new
        value of `x`'s dtype (an array, or a NumPy scalar for all axes)."""
        if not all(k.arg in ("axis", "keepdims") for k in e.keywords):
            return None
        if isinstance(e.func, gast.Attribute) and e.func.attr in _METHODS and len(e.args) <= 1:
            of = self.fact(e.func.value, facts)
            if of.kind not in (ND, NDARRAY):
                return None
        elif e.args and self.resolve(e.func) in REDUCTIONS and len(e.args) <= 2:
            of = self.fact(e.args[0], facts)
        else:
            return None
        if not self.is_float(of.dtype):
            return None
        return Fact(None, of.dtype, None, frozenset([self.new(owned=True)]))

    def canonical(self, shape):
        """`shape` in the classes of the reverse pass's shape analysis, which knows more
        when the code is specialised on shape patterns (see analysis/shapes.py)."""
        return None if shape is None else self.rev.shapes._canonical(shape)

    def named(self, name, fact):
        """`fact` of the value assigned to `name`, with the shape class of the analysis
        when `name` is a value of the function the analysis classified."""
        if (name in self.rev.primal_names and name in self.rev.straight
                and self.rev.shapes.of(name) is not None):
            if fact.kind in (ND, NDARRAY):
                return fact._replace(shape=self.rev.shapes.of(name))
            if fact.kind is None and self.rev.shapes.pattern_of(name):
                # an array of one or more axes, by the patterns of the parameters
                return fact._replace(shape=self.rev.shapes.of(name), kind=ND)
        return fact

    def result(self, operands):
        """The fact of a new value that operands of `operands` broadcast and promote to."""
        fresh = self.new(owned=True)
        known = all(f.kind is not None for f in operands)
        shape = None if any(f.shape is None for f in operands) else self.canonical(
            frozenset().union(*(f.shape for f in operands)))
        dtype = None if any(f.dtype is None for f in operands) else frozenset().union(
            *(f.dtype for f in operands))
        if dtype and not self.is_float(dtype):
            dtype = frozenset([fresh])      # promotion rules differ off floats: a new dtype
        kind = (ND if any(f.kind == ND for f in operands) else
                NUMBER if all(f.kind == NUMBER for f in operands) else None)
        buffers = {fresh} | (set() if known else set().union(*(f.buffers for f in operands)))
        return Fact(shape, dtype, kind, frozenset(buffers))

    def indexed(self, e, base, facts):
        if base.kind == INTS:
            return Fact(EMPTY, EMPTY, NUMBER)
        if base.kind not in (ND, NDARRAY):
            return self.unknown(e, facts)
        index = trims(e.slice)
        if index is None or base.shape is None:     # a view or a copy
            return Fact(None, base.dtype, None, frozenset(self.loaded(e, facts)))
        kind = ND if any(i != "int" for i in index) else None
        return Fact(frozenset([("index", base.shape, index)]), base.dtype, kind, base.buffers)

    def helper_result(self, e, facts):
        from ..rules import runtime
        helper = self.rev.helpers.get(getattr(e.func, "id", None))
        args = [self.fact(a, facts) for a in e.args]
        if helper is runtime.count:
            return Fact(EMPTY, EMPTY, NUMBER)
        if helper in (runtime.matmul_lhs, runtime.matmul_rhs, runtime.dot_lhs,
                      runtime.dot_rhs) and all(a.kind in (ND, NDARRAY) for a in args):
            # a new array, in the promotion of the adjoint's and the operands' dtypes
            made = self.result(args)
            return Fact(None, made.dtype, None, frozenset([self.new(owned=True)]))
        if helper is runtime.zeros_like and args[0].kind in (ND, NDARRAY):
            fresh = self.new(owned=True)
            self.floating.add(("zeros", fresh))
            return Fact(args[0].shape, frozenset([("zeros", fresh)]),
                        args[0].kind, frozenset([fresh]))
        if helper in (runtime.unreduce, runtime.extremum) and args[1].kind in (ND, NDARRAY):
            made = self.result(args[:2])
            return Fact(args[1].shape, made.dtype, args[1].kind, made.buffers)
        if (helper is runtime.unbroadcast and args[0].kind in (ND, NDARRAY)
                and args[1].kind == ND and self.is_float(args[0].dtype)):
            return Fact(args[1].shape, args[0].dtype, ND,
                        args[0].buffers | {self.new(owned=True)})
        return None

    def is_float(self, dtype):
        if dtype is not None and dtype & self.floating:
            return True
        known = self.concrete(dtype)
        if known is not None and known.kind == "f":
            self.used_dtypes |= dtype
            return True
        return False

    def concrete(self, dtype):
        """The dtype the origins `dtype` promote to, when each is a parameter whose dtype
        the code is specialised on; else None."""
        if not dtype or not all(o in self.dtypes for o in dtype):
            return None
        return np.result_type(*(self.dtypes[o] for o in dtype))

    def same_dtype(self, a, b):
        """Whether the origins `a` and `b` certainly promote to one dtype."""
        if a == b:
            return True
        known, other = self.concrete(a), self.concrete(b)
        # (not `known == other` alone: a dtype equals None, read as float64)
        if known is not None and other is not None and known == other:
            self.used_dtypes |= a | b
            return True
        return False

    def factored(self, e, facts):
        """`(a - b) * s` for `s * a - s * b` (`+` alike; `s / a` is `s * (1.0 / a)`), `s`
        a number and the result an array: one multiplication after the sum instead of
        one per term, and every step computed in one buffer (`s * b` would need one of
        its own when `b` is an argument)."""
        if not (isinstance(e, gast.BinOp) and isinstance(e.op, (gast.Add, gast.Sub))):
            return e
        left = self.factored(e.left, facts)
        terms = [self.scaled(left, facts), self.scaled(e.right, facts)]
        if None in terms or terms[0][0] != terms[1][0] or self.fact(e, facts).kind != ND:
            return e
        (s, a), (_, b) = terms
        return gast.BinOp(left=gast.BinOp(left=a, op=type(e.op)(), right=b), op=gast.Mult(),
                          right=nodes.name(s))

    def scaled(self, e, facts):
        """(`s`, `a`) when `e` is `s * a`, `a * s` or `s / a` (`a` is then `1.0 / a`) with
        `s` the name of a number."""
        if not (isinstance(e, gast.BinOp) and isinstance(e.op, (gast.Mult, gast.Div))):
            return None

        def number(x):
            return isinstance(x, gast.Name) and facts.get(x.id, Fact()).kind == NUMBER
        if number(e.left):
            rest = e.right if isinstance(e.op, gast.Mult) else gast.BinOp(
                left=nodes.const(1.0), op=gast.Div(), right=e.right)
            return e.left.id, rest
        if isinstance(e.op, gast.Mult) and number(e.right):
            return e.right.id, e.left
        return None

    def elementwise(self, e):
        """(operands, ufunc) of an elementwise operation whose dtype is its operands'
        promotion for floats, or None."""
        if isinstance(e, gast.BinOp) and type(e.op) in _OPERATORS:
            return [e.left, e.right], _OPERATORS[type(e.op)]
        if isinstance(e, gast.UnaryOp) and isinstance(e.op, gast.USub):
            return [e.operand], np.negative
        if isinstance(e, gast.Call) and not e.keywords:
            f = self.resolve(e.func)
            if (isinstance(f, np.ufunc) and f.nout == 1 and f.nin == len(e.args)
                    and not any(isinstance(a, gast.Starred) for a in e.args)
                    and all(f"{c * f.nin}->{c}" in f.types for c in "efd")):
                return list(e.args), f
        return None

    def resolve(self, func):
        from ..frontend.source import MISSING
        if isinstance(func, gast.Name) and func.id in self.rev.helpers:
            return self.rev.helpers[func.id]
        obj = self.rev.src.resolve(func)
        return None if obj is MISSING else obj

    # -- rewriting --------------------------------------------------------------------
    def rewritten(self, s, facts, live):
        if not (isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name)):
            return [s]
        free = {n for n, f in facts.items() if f.buffers and f.buffers <= self.owned
                and f.kind in (ND, NDARRAY) and not f.buffers & live}
        value = self.factored(s.value, facts)
        steps = self.plan(value, facts, free)
        if value is not s.value and (not steps or steps[0][0] == "bind"):
            steps = self.plan(s.value, facts, free)     # factoring allocates anyway
        if not steps or steps[0][0] == "bind" and len(steps) == 1:
            return [s]
        target = s.targets[0].id
        return [nodes.located(x, s) for x in (self.spelled(step, target) for step in steps)]

    def plan(self, e, facts, free, reads=None):
        """Steps that compute `e` in one buffer: ("bind", e) allocates it, ("out", e, i)
        writes into operand i, ("update", e, i) computes e over the buffer holding its
        operand i; None when `e` is not certainly an array of known shape and float
        dtype. Operand i may be written when it is `free` (nothing reads its buffer
        after the statement) and this operation is all that reads it (`H * H` may be
        computed in `H`): it is the first step."""
        operation = self.elementwise(e)
        if operation is None:
            return None
        operands, _ = operation
        mine = self.fact(e, facts)
        if mine.shape is None or not self.is_float(mine.dtype):
            return None
        reads = self.reads(e, facts) if reads is None else reads

        def fits(f):
            return f.shape == mine.shape and self.same_dtype(f.dtype, mine.dtype)
        for i, a in enumerate(operands):
            inner = self.plan(a, facts, free, reads)
            if inner is not None and fits(self.fact(a, facts)):
                return inner + [("update", e, i)]
        here = self.reads(e, facts)
        for i, a in enumerate(operands):
            if isinstance(a, gast.Name) and a.id in free and fits(facts[a.id]) and all(
                    here[b] == reads[b] for b in facts[a.id].buffers):
                return [("out", e, i)]
        return [("bind", e)] if mine.kind == ND else None

    def reads(self, e, facts):
        """How many times `e` reads each buffer."""
        return collections.Counter(b for n in nodes.names_loaded(e)
                                   for b in facts.get(n, Fact()).buffers)

    def spelled(self, step, target):
        """The statement for one step of a plan, computing into `target`."""
        kind, e, *i = step
        if kind == "bind":
            return nodes.assign(target, e)
        operands, ufunc = self.elementwise(e)
        i = i[0]
        buffer = operands[i] if kind == "out" else nodes.name(target)
        if nodes.is_name(buffer, target) and isinstance(e, gast.BinOp) and (
                i == 0 or isinstance(e.op, _COMMUTE)):
            return gast.AugAssign(target=nodes.name(target, store=True), op=e.op,
                                  value=operands[1 - i])
        args = [buffer if j == i else a for j, a in enumerate(operands)]
        func = nodes.copied(e.func) if isinstance(e, gast.Call) else nodes.attribute(
            self.rev.helper("np", obj=np), ufunc.__name__)
        call = nodes.call(func, args, [gast.keyword(arg="out", value=nodes.copied(buffer))])
        return nodes.expr_stmt(call) if kind == "update" else nodes.assign(target, call)

    def is_zeros(self, s):
        """Whether `s` is `a = _s2s_zeros_like(x)`."""
        from ..rules import runtime
        return (isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name)
                and isinstance(s.value, gast.Call)
                and self.rev.helpers.get(getattr(s.value.func, "id", None)) is runtime.zeros_like
                and all(nodes.is_name(x) for x in s.value.args))

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
            facts = self.analyse(body, params)
            if not any(self.is_addition(s) for s in body):
                return body, facts
            live = self.live(body, facts)
            names = [(set(nodes.names_loaded(s)), set(nodes.names_stored(s))) for s in body]
            found = next((found for a in range(len(body)) if self.is_addition(body[a])
                          for found in [self.zeros_slice(body, a, facts, live, names)]
                          if found), None)
            if found is None:
                return body, facts
            z, r, a = found
            addition = body[a]
            if r is None:       # name the added expression, computed in one buffer
                g = self.rev.namer.fresh("t")
                named = nodes.located(nodes.assign(g, addition.value), addition)
                addition.value = nodes.name(g)
                body[a:a + 1] = self.rewritten(named, facts[a], live[a + 1]) + [addition]
                continue
            target = nodes.copied(addition.target)
            target.ctx = gast.Load()
            operands, ufunc = self.elementwise(body[r].value)
            call = body[r].value if isinstance(body[r].value, gast.Call) else nodes.call(
                nodes.attribute(self.rev.helper("np", obj=np), ufunc.__name__), operands)
            call.keywords = [gast.keyword(arg="out", value=target)]
            body[r] = nodes.located(nodes.assign(body[r].targets[0].id, call), body[r])
            body[a] = None
            if isinstance(addition.op, gast.Sub):
                body[a] = self.negated(body, r, a, addition.value.id, facts)
            if z > r:
                body = body[:r] + [body[z]] + body[r:z] + body[z + 1:]
            body = [s for s in body if s is not None]

    def names_read(self, body):
        """The names statements of `body` read (an augmented assignment reads its target)."""
        return {n for s in body for n in nodes.names_loaded(s)} | {
            s.target.id for s in body
            if isinstance(s, gast.AugAssign) and isinstance(s.target, gast.Name)}

    def unnamed(self, body):
        """`body` where `t = ufunc(..., out=...)` is `ufunc(..., out=...)` when nothing
        reads `t`."""
        loaded = self.names_read(body)
        return [nodes.located(nodes.expr_stmt(s.value), s)
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
        if not (self.is_addition(s) and not nodes.names_loaded(s.target.slice)):
            return None
        array = s.target.value.id
        mentions = [i for i in range(a) if array in names[i][0] or array in names[i][1]]
        if not mentions:
            return None
        z = mentions[-1]
        made = body[z]
        if not (self.is_zeros(made) and nodes.is_name(made.targets[0], array)):
            return None
        sliced = self.indexed(s.target, facts[a].get(array, Fact()), facts[a])
        g = self.fact(s.value, facts[a])
        if (g.kind != ND or g.shape is None or g.shape != sliced.shape
                or not self.is_float(g.dtype)):
            return None
        if not isinstance(s.value, gast.Name):
            return (z, None, a) if self.elementwise(s.value) is not None else None
        if len(g.buffers) != 1 or not g.buffers <= self.owned or g.buffers & live[a + 1]:
            return None
        buffer, = g.buffers
        r = next((i for i in range(a) if isinstance(body[i], gast.Assign)
                  and buffer in self.fact_after(body[i], facts[i + 1]).buffers), None)
        if (r is None or self.fact_after(body[r], facts[r + 1]).shape != g.shape
                or self.elementwise(body[r].value) is None
                or getattr(body[r].value, "keywords", None)
                or any(names[i][1] & set(nodes.names_loaded(made.value)) for i in range(r, z))
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
            return g in nodes.names_stored(s) or (
                isinstance(s, gast.Expr) and self.out_of(s.value, facts[i]) == g)
        last = body[next(i for i in range(a - 1, r - 1, -1) if writes(body[i], i))]
        factors = []
        if isinstance(last, gast.AugAssign) and isinstance(last.op, gast.Mult):
            factors = [(last, "value")]
        elif isinstance(last, (gast.Assign, gast.Expr)) and isinstance(last.value, gast.Call) \
                and self.resolve(last.value.func) is np.multiply:
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
        return nodes.expr_stmt(nodes.call(
            nodes.attribute(self.rev.helper("np", obj=np), "negative"),
            [nodes.name(g)], [gast.keyword(arg="out", value=nodes.name(g))]))

    # -- moving in-place additions up -------------------------------------------------
    def hoisted(self, body, facts):
        """`body` with each `a[index] += g` moved up past the statements it does not
        depend on (two such additions into one array commute)."""
        out, at = [], {id(s): i for i, s in enumerate(body)}
        for i, s in enumerate(body):
            j = len(out)
            if self.is_addition(s):
                while j > 0 and self.commutes(out[j - 1], facts[at[id(out[j - 1])]],
                                              s, facts[i]):
                    j -= 1
                if all(self.is_addition(t) for t in out[j:]):
                    j = len(out)        # nothing to gain: keep the order of additions
            out.insert(j, s)
        return out

    def is_addition(self, s):
        return (isinstance(s, gast.AugAssign) and isinstance(s.op, (gast.Add, gast.Sub))
                and isinstance(s.target, gast.Subscript)
                and isinstance(s.target.value, gast.Name))

    def commutes(self, earlier, before, s, facts):
        """Whether the addition `s` may run before the statement `earlier`."""
        written = facts[s.target.value.id].buffers if s.target.value.id in facts else None
        if written is None:
            return False
        read = self.loaded(s.value, facts) | self.loaded(s.target.slice, facts)
        if written & read:
            return False
        if self.is_addition(earlier):
            other = before.get(earlier.target.value.id, Fact()).buffers
            other_read = self.loaded(earlier.value, before) | self.loaded(
                earlier.target.slice, before)
            return not (other & read or written & other_read) and (
                other == written or not other & written)
        if not (isinstance(earlier, gast.Assign) and isinstance(earlier.targets[0], gast.Name)):
            return False
        return (earlier.targets[0].id not in nodes.names_loaded(s)
                and not written & self.loaded(earlier.value, before))
