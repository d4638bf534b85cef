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
computed, so that `g`'s buffer is free for what follows.

>>> import numpy as np
>>> from s2sad import pipeline
>>> def f(x):
...     return np.sum(np.exp(x[1:] - x[:-1]) ** 2)
>>> print(pipeline.reverse(f, fused="grad", release=True).source.rstrip())
def f_grad(x):
    if type(x) is not ndarray or x.dtype.kind != 'f':
        raise _s2s_Respecialize
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
    x_bar[:-1] -= t_2_bar
    x_bar[1:] += t_2_bar
    del t_2_bar
    return x_bar
"""
import copy
import itertools
from typing import NamedTuple

import gast
import numpy as np

from ..analysis.kinds import ARRAY, SCALAR
from ..analysis.shapes import trims
from ..codegen import nodes

ND, NDARRAY, NUMBER, INTS = "nd", "ndarray", "number", "ints"
EMPTY = frozenset()
_OPERATORS = {gast.Add: np.add, gast.Sub: np.subtract, gast.Mult: np.multiply,
              gast.Div: np.divide, gast.Pow: np.power, gast.USub: np.negative}
_COMMUTE = (gast.Add, gast.Mult)


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

    def run(self, fn):
        params = {}
        for p in (a.id for a in fn.args.posonlyargs + fn.args.args):
            kind, typ = self.rev.param_kinds.get(p), self.rev.types.get(p)
            if kind == ARRAY:
                params[p] = Fact(frozenset([("param", p)]), frozenset([p]), NDARRAY,
                                 frozenset([p]))
                if p in self.rev.wrt:
                    self.floating.add(p)    # grad refuses other arrays
            elif kind == SCALAR and typ in (float, int):
                params[p] = Fact(EMPTY, EMPTY, NUMBER)
            else:
                params[p] = Fact(buffers=frozenset([p]))
        facts = self.analyse(fn.body, params)
        fn.body = self.hoisted(fn.body, facts)
        facts = self.analyse(fn.body, params)
        live = [set() for _ in fn.body] + [set()]
        for i in range(len(fn.body) - 1, -1, -1):
            live[i] = live[i + 1] | self.loaded(fn.body[i], facts[i])
        out = []
        for i, s in enumerate(fn.body):
            out.extend(self.rewritten(s, facts[i], live[i + 1]))
        fn.body = out
        return fn

    # -- facts ------------------------------------------------------------------------
    def analyse(self, body, params):
        """The facts of each name before each statement of `body`."""
        facts, out = dict(params), []
        for s in body:
            out.append(facts)
            facts = dict(facts)
            if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name):
                facts[s.targets[0].id] = self.fact(s.value, facts)
            elif isinstance(s, gast.Delete):
                for t in s.targets:
                    facts.pop(getattr(t, "id", None), None)
            elif self.writes_array(s, facts) or isinstance(s, gast.Return):
                pass        # an element write copies the values into the array
            else:
                # anything else may store any of the values it reads in any of them
                shared = self.loaded(s, facts) | {self.new()}
                for n in set(nodes.names_loaded(s)) | set(nodes.names_stored(s)):
                    old = facts.get(n, Fact())
                    facts[n] = Fact(buffers=frozenset(shared)) if nodes.stores(s, n) else \
                        old._replace(buffers=old.buffers | shared)
        return out

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
            out |= facts.get(n, Fact(buffers=frozenset([n]))).buffers
        return out

    def unknown(self, e, facts):
        return Fact(buffers=frozenset(self.loaded(e, facts) | {self.new()}))

    def fact(self, e, facts):
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
            return self.helper_result(e, facts) or self.unknown(e, facts)
        return self.unknown(e, facts)

    def result(self, operands):
        """The fact of a new value that operands of `operands` broadcast and promote to."""
        fresh = self.new(owned=True)
        known = all(f.kind is not None for f in operands)
        shape = None if any(f.shape is None for f in operands) else frozenset().union(
            *(f.shape for f in operands))
        dtype = None if any(f.dtype is None for f in operands) else frozenset().union(
            *(f.dtype for f in operands))
        if dtype is not None and not dtype & self.floating:
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
        if helper is runtime.zeros_like and args[0].kind in (ND, NDARRAY):
            fresh = self.new(owned=True)
            self.floating.add(("zeros", fresh))
            return Fact(args[0].shape, frozenset([("zeros", fresh)]),
                        args[0].kind, frozenset([fresh]))
        if helper is runtime.unreduce and args[1].kind in (ND, NDARRAY):
            made = self.result(args[:2])
            return Fact(args[1].shape, made.dtype, args[1].kind, made.buffers)
        if (helper is runtime.unbroadcast and args[0].kind in (ND, NDARRAY)
                and args[1].kind == ND and self.is_float(args[0].dtype)):
            return Fact(args[1].shape, args[0].dtype, ND,
                        args[0].buffers | {self.new(owned=True)})
        return None

    def is_float(self, dtype):
        return dtype is not None and bool(dtype & self.floating)

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
        uses = {}
        for n in nodes.names_loaded(s.value):
            for b in facts.get(n, Fact()).buffers:
                uses[b] = uses.get(b, 0) + 1
        free = {n for n, f in facts.items() if f.buffers and f.buffers <= self.owned
                and f.kind in (ND, NDARRAY)
                and all(b not in live and uses.get(b) == 1 for b in f.buffers)}
        steps = self.plan(s.value, facts, free)
        if not steps or steps[0][0] == "bind" and len(steps) == 1:
            return [s]
        target = s.targets[0].id
        return [nodes.located(x, s) for x in (self.spelled(step, target) for step in steps)]

    def plan(self, e, facts, free):
        """Steps that compute `e` in one buffer: ("bind", e) allocates it, ("out", e, i)
        writes into operand i, ("update", e, i) computes e over the buffer holding its
        operand i; None when `e` is not certainly an array of known shape and float
        dtype."""
        operation = self.elementwise(e)
        if operation is None:
            return None
        operands, _ = operation
        mine = self.fact(e, facts)
        if mine.shape is None or not self.is_float(mine.dtype):
            return None

        def fits(f):
            return f.shape == mine.shape and f.dtype == mine.dtype
        for i, a in enumerate(operands):
            inner = self.plan(a, facts, free)
            if inner is not None and fits(self.fact(a, facts)):
                return inner + [("update", e, i)]
        for i, a in enumerate(operands):
            if isinstance(a, gast.Name) and a.id in free and fits(facts[a.id]):
                return [("out", e, i)]
        return [("bind", e)] if mine.kind == ND else None

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
        func = copy.deepcopy(e.func) if isinstance(e, gast.Call) else nodes.attribute(
            self.rev.helper("np", obj=np), ufunc.__name__)
        call = nodes.call(func, args, [gast.keyword(arg="out", value=copy.deepcopy(buffer))])
        return nodes.expr_stmt(call) if kind == "update" else nodes.assign(target, call)

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
