"""Facts about the arrays of a fused gradient: their shapes, dtypes, and the buffers
they may share memory with; and how an elementwise expression can be computed in one
buffer (`plan`). InlineHelpers, CombineTerms and ReuseBuffers rewrite the fused
gradient with these facts.

A `Fact` says what is known of one value before one statement; `analyse` gives the facts
of every name before each statement of a block, starting from the parameters'. Shapes
are the classes of analysis/shapes.py (which knows more when the code is specialised on
the shape patterns of its array parameters); dtypes are sets of origins (parameters, or
new dtypes) whose promotion the value has; buffers are the parameters and the arrays the
function allocated (numbered) that the value may share memory with, a set of bits (an
int: a value computed from many others may share memory with thousands of buffers,
which sets would copy at each statement).

A value computed from an array of another library that NumPy dispatches to (a Dask or
CuPy array, see rules/arrays.py), a duck array, is of kind DUCK, whatever else it is
computed from: it has no buffer of its own to write into (a Dask array is a lazy graph,
which `out=` and writes into views do not change as they change an ndarray), so no
rewrite computes it in place.

A loop whose body is straight-line code (`ArrayFacts.loop`) has facts inside it too:
those of each name at the start of an iteration are the join of its facts before the
loop and at the end of the body, where the buffers the body allocated are one buffer per
group of names that may share them at the end (a carried buffer: owned when all the
buffers of its group are). The facts after the loop are those at the start of an
iteration. What is live at the end of the body is what the names the next iteration or
the code after the loop read hold then, and what the loop's iterator holds (a tape):
a buffer the tape holds, or the next iteration reads, is never free.
"""
import bisect
import collections
import contextlib
import itertools
from typing import NamedTuple

import gast
import numpy as np

from .. import marks
from .. import syntax
from ..rules import registry, runtime
from ..rules.arrays import is_duck_array_type
from .names import exposed
from .value_kinds import ARRAY, SCALAR
from .shapes import trims

ND, NDARRAY, NUMBER, INTS, DUCK = "nd", "ndarray", "number", "ints", "duck"
EMPTY = frozenset()
OPERATORS = {gast.Add: np.add, gast.Sub: np.subtract, gast.Mult: np.multiply,
             gast.Div: np.divide, gast.Pow: np.power, gast.USub: np.negative}


class Fact(NamedTuple):
    """What is known of a value: `shape`, a set of shapes it is the broadcast of;
    `dtype`, a set of origins it is the promotion of (weak Python numbers are none);
    `kind`: ND (an ndarray of one or more dimensions), NDARRAY, NUMBER (shape ()),
    INTS (a shape), DUCK (a duck array, or computed from one) or None; `buffers`, the buffers it may share memory with (bit `b`
    for buffer `b`, see `ArrayFacts.new` and `ArrayFacts.buffer_of`). None is unknown."""
    shape: frozenset = None
    dtype: frozenset = None
    kind: str = None
    buffers: int = 0


class LoopFacts(NamedTuple):
    """The facts of a loop with a straight-line body (`ArrayFacts.loop`): `entry`, of the
    names the loop changes at the start of each iteration (and after the loop); `body`,
    before each statement of the body (`Before`s); `end`, after its last statement;
    `held`, the buffers the iterator holds (a tape's values)."""
    entry: dict
    body: list
    end: dict
    held: int


class ArrayFacts:
    """The facts of one fused gradient's arrays (`ctx.array_facts`): the buffers it
    allocated (`owned`), the dtype origins certainly floating, the dtypes of the array
    parameters it is specialised on, and those a rewrite relied on (`used_dtypes`: the
    guard tests them)."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.ids = itertools.count()
        self.owned = 0              # buffers the function allocated
        self.named_buffers = {}     # the buffer of a parameter, or a name without a fact
        self.floating = set()       # dtype origins certainly floating
        self.dtypes = {p: np.dtype(v[0]) for p, v in (ctx.patterns or {}).items()
                       if not is_duck_array_type(ctx.types.get(p))}   # (written in no place)
        self.used_dtypes = set()
        self.ducks = False          # whether a parameter is a duck array
        # {id(statement): facts before it} of the fused gradient as reuse_buffers left it,
        # which the peephole pass reads
        self.statement_facts = None
        self.loops = {}             # {id(loop): LoopFacts} of the loops `update` went into
        self.taped = {}             # {tape name: [fact of each value of a record]}
        self.in_loop = False        # whether `loop` is analysing a loop's body
        self.rounds = 0             # the blocks analysed so far (a loop's body once a round)
        self.kept = None            # (statements, their facts, `rounds` then): see `keep`

    def parameters(self, fn):
        """The facts of `fn`'s parameters."""
        params = {}
        for p in (a.id for a in fn.args.posonlyargs + fn.args.args):
            kind, typ = self.ctx.param_kinds.get(p), self.ctx.types.get(p)
            if kind == ARRAY:
                duck = is_duck_array_type(typ)
                self.ducks |= duck
                params[p] = Fact(self.canonical(frozenset([("name", p)])), frozenset([p]),
                                 DUCK if duck else NDARRAY, self.buffer_of(p))
                if p in self.ctx.wrt:
                    self.floating.add(p)    # grad refuses other arrays
            elif kind == SCALAR and typ in (float, int):
                params[p] = Fact(EMPTY, EMPTY, NUMBER)
            elif self.ctx.seed and p == self.ctx.seed[0]:
                # the seed of a checkpointed loop's step adjoint, which its guard checks
                # to have the pattern and dtype of the state, the value the step returns,
                # and to own its memory; the caller gives it up (ad/checkpointed.py), so
                # its buffer is the function's own
                _, value, pat = self.ctx.seed
                self.dtypes[p] = np.dtype(self.ctx.patterns[p][0])
                self.floating.add(p)
                shape = self.ctx.shapes.of(value)
                self.owned |= self.buffer_of(p)
                params[p] = Fact(shape, frozenset([p]), ND if shape is not None and pat
                                 else NDARRAY, self.buffer_of(p))
            else:
                params[p] = Fact(buffers=self.buffer_of(p))
        return params

    def live(self, body, facts):
        """For each statement of `body` and the end, the buffers read from there on."""
        live = [0] * (len(body) + 1)
        for i in range(len(body) - 1, -1, -1):
            live[i] = live[i + 1] | self.loaded(body[i], facts[i])
        return live

    def analyse(self, body, params, before=None, after=None):
        """The facts of each name before each statement of `body` (`Before` each: a copy
        of all of them per statement would make this quadratic). `before(s, facts)`, if
        given, runs before the facts go past each statement `s` (and may rewrite `s` in
        place), `after(s)` after."""
        return self._analyse(body, params, before, after)[0]

    def _analyse(self, body, params, before=None, after=None):
        self.rounds += 1
        # (the history of a name the block does not change is its fact in `start`)
        start, facts, history, out = dict(params), dict(params), {}, []
        for i, s in enumerate(body):
            if before is not None:
                before(s, facts)
            out.append(Before(start, history, i))
            for n in self.update(s, facts):
                found = history.get(n)
                if found is None:
                    found = history[n] = ([0], [start[n]]) if n in start else ([], [])
                found[0].append(i + 1)
                found[1].append(facts.get(n))
            if after is not None:
                after(s)
        return out, (start, history)

    def keep(self, body, facts):
        """Keep `facts` of the statements of `body` for the next pass, which `kept_facts`
        gives it if neither the statements nor the facts changed in between (no analysis
        ran since: an analysis numbers buffers anew, and its loops' facts replace these
        in `loops`)."""
        self.kept = (list(body), facts, self.rounds)

    def kept_facts(self, body):
        """The facts `keep` kept of `body`, if its statements are those (the same nodes,
        which the passes between change only by replacing them), no analysis ran since,
        and another analysis would find the same; else None. (One would not when a tape
        records a value whose shape or dtype is one this analysis made up: `record_tapes`
        of the next finds another, and keeps nothing of the tape's values.)"""
        kept, self.kept = self.kept, None
        if kept is None or kept[2] != self.rounds or len(kept[0]) != len(body) or any(
                s is not t for s, t in zip(kept[0], body)) or any(
                _made_up(f) for record in self.taped.values() for f in record):
            return None
        return kept[1]

    # -- loops with a straight-line body ---------------------------------------------
    def loop(self, s, facts):
        """The `LoopFacts` of loop `s` (`straight_loop`), given `facts` before it: the
        facts at the start of an iteration are a fixpoint (each name's buffers there:
        those before the loop, those from outside the body it holds at the end, and the
        carried buffer of its group)."""
        self.loops.pop(id(s), None)
        before = dict(facts)
        held = self.loaded(s.iter, before) if isinstance(s, gast.For) else 0
        start = self.targets(s, before, held)
        block = syntax.if_(syntax.const(True), s.body)
        mentioned = sorted({n.id for n in syntax.name_nodes(block)} | set(start))
        carried = {n: 1 << self.new() for n in mentioned}
        parent = {n: n for n in mentioned}

        def find(n):
            while parent[n] != n:
                n = parent[n]
            return n
        changed = set(syntax.names_stored(block)) | set(start)
        meta = {n: before[n][:3] for n in mentioned if n in before}
        extra = dict.fromkeys(mentioned, 0)
        # each round starts from the same numbering of buffers and the same state: what
        # a round found is dropped (only `extra`, `meta`, the groups go on), and the bits
        # of the buffers the body allocates would otherwise widen every round
        first, kept = next(self.ids), (self.owned, dict(self.named_buffers),
                                       set(self.floating), dict(self.loops), dict(self.taped))
        outside = (1 << first) - 1      # the buffers from outside the body (`~local`)
        for _ in range(10):
            self.ids = itertools.count(first)
            self.owned, named, floating, loops, taped = kept
            self.named_buffers, self.floating = dict(named), set(floating)
            self.loops, self.taped = dict(loops), dict(taped)
            entry = {}
            for n in changed:
                pre = before.get(n)
                bits = (pre.buffers if pre else 0) | extra[n] | carried[find(n)]
                entry[n] = Fact(*meta[n], bits) if n in meta else Fact(buffers=bits)
            within = {**before, **entry, **start}
            local = ~((1 << self.new()) - 1)        # the buffers the body allocates
            with self.inside():
                out, (initial, history) = self._analyse(s.body, within)
            end = Before(initial, history, len(s.body))
            state = (set(changed), dict(meta), dict(extra), dict(parent))
            changed |= {n for n, (at, _) in history.items() if at[-1] > 0}
            owner = {}
            for n in sorted(changed):
                f = end.get(n)
                if f is None:
                    continue
                meta[n] = self.join(meta[n], f[:3]) if n in meta else f[:3]
                extra[n] |= f.buffers & outside
                joined = set()      # (a name joined once is in `n`'s group from then on)
                for b in _positions(f.buffers >> first):    # (the body's: from `first`)
                    other = owner.get(b)
                    if other is None:
                        owner[b] = n
                    elif other not in joined:
                        joined.add(other)
                        if find(other) != find(n):
                            parent[find(n)] = find(other)
            if state == (changed, meta, extra, parent):
                break
        else:
            return None         # (not seen: each round only adds)
        groups = {}
        for n in changed:
            f = end.get(n)
            groups[find(n)] = groups.get(find(n), 0) | (f.buffers & local if f else 0)
        for root, bits in groups.items():
            if not bits & ~self.owned:
                self.owned |= carried[root]
        self.record_tapes(s.body, out)
        found = LoopFacts(entry, out, end, held)
        self.loops[id(s)] = found
        return found

    def join(self, a, b):
        """The (shape, dtype, kind) of a value that is one of values of `a` and `b`."""
        kinds = {a[2], b[2]}
        kind = a[2] if len(kinds) == 1 else NDARRAY if kinds == {ND, NDARRAY} else None
        dtype = a[1] if a[1] is not None and b[1] is not None and self.same_dtype(
            a[1], b[1]) else None
        return (a[0] if a[0] == b[0] else None, dtype, kind)

    @contextlib.contextmanager
    def inside(self):
        """Facts of a loop's body are made inside this: there a value keeps the shape
        class of the shape analysis when its fact has none with a known pattern."""
        self.in_loop, outer = True, self.in_loop
        try:
            yield
        finally:
            self.in_loop = outer

    def targets(self, s, facts, held):
        """The facts of the target of loop `s` at the start of each iteration: the counter
        of a `range`, or the values a tape recorded (`for a, b in reversed(_s2s_tape)`),
        which hold buffers the iterator holds."""
        if not isinstance(s, gast.For):
            return {}
        names = syntax.names_stored(s.target)
        it = s.iter
        if not (isinstance(it, gast.Call) and len(it.args) == 1 and not it.keywords):
            return {n: Fact(buffers=held | 1 << self.new()) for n in names}
        func = self.resolve(it.func)
        if func is range and isinstance(s.target, gast.Name):
            return {names[0]: Fact(EMPTY, EMPTY, NUMBER)}
        tape = it.args[0].id if func is reversed and isinstance(it.args[0], gast.Name) else None
        recorded = self.taped.get(tape)
        if recorded is None or len(recorded) != len(names) or not (
                isinstance(s.target, gast.Tuple) or len(names) == 1):
            recorded = [Fact()] * len(names)
        return {n: f._replace(buffers=held | 1 << self.new()) for n, f in zip(names, recorded)}

    def tape_of(self, s):
        """(tape, values) when `s` records values on a loop's tape (`_s2s_tape...`, which
        only the reversed loop reads): `_s2s_tape.append((a, b))`; else None."""
        call = getattr(s, "value", None)
        if not (isinstance(s, gast.Expr) and isinstance(call, gast.Call) and not call.keywords
                and isinstance(call.func, gast.Attribute) and call.func.attr == "append"
                and isinstance(call.func.value, gast.Name)
                and call.func.value.id.startswith("_s2s_tape") and len(call.args) == 1):
            return None
        v = call.args[0]
        return call.func.value.id, v.elts if isinstance(v, gast.Tuple) else [v]

    def record_tapes(self, body, facts):
        """Keep the facts (shape, dtype, kind) of the values a tape records in `body`."""
        for s, before in zip(body, facts):
            found = self.tape_of(s)
            if found is None:
                continue
            tape, values = found
            recorded = [Fact(*before[x.id][:3]) if isinstance(x, gast.Name) and x.id in before
                        else Fact() for x in map(self.stood_for, values)]
            if self.taped.setdefault(tape, recorded) != recorded:
                self.taped[tape] = [Fact()] * len(recorded)

    def stood_for(self, e):
        """`x` of the stand-in `_s2s_like(x)`, which has its shape and dtype; else `e`."""
        if (isinstance(e, gast.Call) and len(e.args) == 1 and isinstance(e.func, gast.Name)
                and self.ctx.bindings.get(e.func.id) is runtime.like):
            return e.args[0]
        return e

    def loop_live(self, s, after):
        """For each statement of the body of loop `s` (analysed: `self.loops`) and its end,
        the buffers read from there on, given `after`, the names read after the loop: at
        the end, what the names the next iteration reads hold, and the iterator's."""
        found = self.loops[id(s)]
        start = syntax.names_stored(s.target) if isinstance(s, gast.For) else []
        again = exposed(s.body, set(start)) | set(after)
        if isinstance(s, gast.While):
            again |= set(syntax.names_loaded(s.test))
        live = [0] * len(s.body) + [found.held | self.loaded_names(again, found.end)]
        for i in range(len(s.body) - 1, -1, -1):
            t, before = s.body[i], found.body[i]
            taped = self.tape_of(t)
            if taped is not None:       # (a stand-in reads only the shape and dtype)
                t = gast.Tuple(elts=[v for v in taped[1] if self.stood_for(v) is v],
                               ctx=gast.Load())
            live[i] = live[i + 1] | self.loaded(t, before)
        return live

    def update(self, s, facts):
        """Change `facts`, those before statement `s`, to those after it; the names whose
        facts it changed."""
        changed = ()
        if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name):
            facts[s.targets[0].id] = self.named(s.targets[0].id, self.fact(s.value, facts))
            changed = [s.targets[0].id]
        elif self.in_place(s, facts):
            pass        # an array updated in place keeps its shape, dtype and memory
        elif straight_loop(s) and (found := self.loop(s, facts)) is not None:
            changed = list(found.entry)
            facts.update(found.entry)
        elif isinstance(s, gast.Delete):
            changed = [t.id for t in s.targets if isinstance(t, gast.Name)]
            for n in changed:
                facts.pop(n, None)
        elif self.writes_array(s, facts) or isinstance(s, gast.Return):
            pass        # an element write copies the values into the array
        elif isinstance(s, gast.If) and marks.TESTS.of(s.test) is not None:
            pass        # a guard (syntax.guard): when it calls another version, it returns
        elif self.tape_of(s) is not None:
            # a tape holds the values it records (a stand-in holds none), and changes none
            tape, values = self.tape_of(s)
            held = self.loaded_names([v.id for v in values if isinstance(v, gast.Name)], facts)
            if not all(isinstance(v, gast.Name) or self.stood_for(v) is not v for v in values):
                held |= self.loaded(s, facts) | 1 << self.new()
            facts[tape] = Fact(buffers=facts.get(tape, Fact()).buffers | held)
            changed = [tape]
        else:
            # anything else may store any of the values it reads in any of them
            shared = self.loaded(s, facts) | 1 << self.new()
            kind = DUCK if self.reads_duck(s, facts) else None
            names = [(n.id, type(n.ctx)) for n in syntax.name_nodes(s)]
            written = {n for n, ctx in names if ctx is not gast.Load}
            changed = {n for n, ctx in names if ctx is not gast.Del}
            for n in changed:
                old = facts.get(n, Fact())
                facts[n] = Fact(kind=kind, buffers=shared) if n in written else \
                    old._replace(buffers=old.buffers | shared)
        return changed

    def in_place(self, s, facts):
        """Whether `s` is `t op= a` or `ufunc(..., out=t)` on an array `t` (what this
        pass writes), which changes no fact."""
        if isinstance(s, gast.AugAssign) and isinstance(s.target, gast.Name):
            return (type(s.op) in OPERATORS
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
        """A new buffer `b` (its bit is `1 << b`)."""
        b = next(self.ids)
        if owned:
            self.owned |= 1 << b
        return b

    def buffer_of(self, name):
        """The bit of the buffer of a parameter, or of a name read without a fact."""
        b = self.named_buffers.get(name)
        if b is None:
            b = self.named_buffers[name] = self.new()
        return 1 << b

    def loaded(self, node, facts):
        """The buffers the names `node` reads may share memory with."""
        return self.loaded_names(syntax.names_loaded(node), facts)

    def loaded_names(self, names, facts):
        """The buffers `names` may share memory with."""
        out = 0
        for n in names:
            fact = facts.get(n)
            out |= self.buffer_of(n) if fact is None else fact.buffers
        return out

    def unknown(self, e, facts):
        return Fact(buffers=self.loaded(e, facts) | 1 << self.new())

    def reads_duck(self, node, facts):
        """Whether `node` reads a value of kind DUCK."""
        return self.ducks and any(facts.get(n, Fact()).kind == DUCK
                                  for n in syntax.names_loaded(node))

    def fact(self, e, facts):
        """The fact of the value of expression `e`, given `facts` of the names."""
        fact = self.computed(e, facts)
        if self.ducks and fact.kind not in (INTS, DUCK) and self.reads_duck(e, facts):
            return fact._replace(kind=DUCK)
        return fact

    def computed(self, e, facts):
        like = marks.LIKE.of(e)
        if like is not None:        # a new array, of the fact InlineHelpers wrote it for
            return like._replace(buffers=1 << self.new(owned=True))
        if isinstance(e, gast.Constant):
            weak = type(e.value) in (bool, int, float)
            return Fact(EMPTY, EMPTY, NUMBER) if weak else Fact()
        if isinstance(e, gast.Name):
            return facts.get(e.id) or Fact(buffers=self.buffer_of(e.id))
        operation = self.elementwise(e)
        if operation is not None:
            return self.result([self.fact(a, facts) for a in operation[0]])
        if isinstance(e, gast.BinOp) and isinstance(e.op, gast.MatMult):
            fresh = self.new(owned=True)
            operands = [self.fact(a, facts) for a in (e.left, e.right)]
            made = self.result(operands)
            self.ctx.shapes.product(("value", fresh), *(f.shape for f in operands))
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
                    or self.copied(e, facts) or self.unknown(e, facts))
        return self.unknown(e, facts)

    def reduction(self, e, facts):
        """The fact of `np.sum(x, axis, keepdims=...)` or `x.sum(axis, keepdims=...)`
        (a reduction: see registry.Primitive) of a float array `x`: a new value of `x`'s
        dtype (an array, or a NumPy scalar for all axes)."""
        if not all(k.arg in ("axis", "keepdims") for k in e.keywords):
            return None
        prim = self.resolve(e.func)
        if (prim is None and isinstance(e.func, gast.Attribute) and len(e.args) <= 1
                and _reduction(registry.METHODS.get(e.func.attr))):
            of = self.fact(e.func.value, facts)
            if of.kind not in (ND, NDARRAY):
                return None
        elif e.args and _reduction(prim) and len(e.args) <= 2:
            of = self.fact(e.args[0], facts)
        else:
            return None
        if not self.is_float(of.dtype):
            return None
        return Fact(None, of.dtype, None, 1 << self.new(owned=True))

    def copied(self, e, facts):
        """The fact of `float(x)` (a number), or of `np.roll(a, ...)`, `np.zeros_like(a)`
        (`ones_like`, `empty_like`, `copy`) of an ndarray `a`: always a new array of `a`'s
        shape and dtype (also the adjoint helper `_s2s_roll` of an array of one or more
        axes; it passes a 0-d one through)."""
        f = self.resolve(e.func)
        if f is float and len(e.args) == 1 and not e.keywords:
            return Fact(EMPTY, EMPTY, NUMBER) if self.fact(e.args[0], facts).kind != DUCK \
                else None
        fresh = f is np.roll or f is runtime.roll or (
            any(f is g for g in (np.zeros_like, np.ones_like, np.empty_like, np.copy))
            and len(e.args) == 1 and not e.keywords)
        if fresh:
            of = self.fact(e.args[0], facts) if e.args else Fact()
            kind = self.axes(of)
            if kind == ND or (kind == NDARRAY and f is not runtime.roll):
                return Fact(of.shape, of.dtype, kind, 1 << self.new(owned=True))
        return None

    def axes(self, fact):
        """The kind of `fact`: ND also for an ndarray whose shape class has axes by the
        patterns of the parameters (which the guard then tests)."""
        if fact.kind == NDARRAY and fact.shape is not None:
            found = self.ctx.shapes.class_pattern(fact.shape)
            if found:
                self.ctx.shapes.rely_on(fact.shape)
                return ND
        return fact.kind

    def canonical(self, shape):
        """`shape` in the classes of the shape analysis, which knows more
        when the code is specialised on shape patterns (see analysis/shapes.py)."""
        return None if shape is None else self.ctx.shapes.canonical(shape)

    def named(self, name, fact):
        """`fact` of the value assigned to `name`, with the shape class of the analysis
        when `name` is a value of the function the analysis classified."""
        if (name in self.ctx.reverse.primal_names and self.ctx.shapes.of(name) is not None
                and (name in self.ctx.reverse.straight or self.in_loop and (
                    fact.shape is None or not self.ctx.shapes.class_pattern(fact.shape)))):
            if fact.kind in (ND, NDARRAY, DUCK):
                return fact._replace(shape=self.ctx.shapes.of(name))
            if fact.kind is None and self.ctx.shapes.pattern_of(name):
                # an array of one or more axes, by the patterns of the parameters (which
                # the guard then tests: `x[0]` is a number for an `x` of one axis)
                self.ctx.shapes.rely_on(self.ctx.shapes.of(name))
                return fact._replace(shape=self.ctx.shapes.of(name), kind=ND)
        return fact

    def result(self, operands):
        """The fact of a new value that operands of `operands` broadcast and promote to."""
        fresh = self.new(owned=True)
        shapes, dtypes, kinds = [], [], set()
        for f in operands:      # (one look at each operand: thousands of calls)
            shapes.append(f.shape)
            dtypes.append(f.dtype)
            kinds.add(f.kind)
        shape = None if None in shapes else self.canonical(frozenset().union(*shapes))
        dtype = None if None in dtypes else frozenset().union(*dtypes)
        if dtype and not self.is_float(dtype):
            dtype = frozenset([fresh])      # promotion rules differ off floats: a new dtype
        kind = (DUCK if DUCK in kinds else ND if ND in kinds else
                NUMBER if kinds <= {NUMBER} else None)
        if kind is None and kinds <= {NDARRAY, NUMBER}:
            kind = ND if self.axes(Fact(shape, kind=NDARRAY)) == ND else None   # (0-d: a scalar)
        buffers = 1 << fresh
        if None in kinds:       # (else a new value: the operands' buffers, big ints, unread)
            for f in operands:
                buffers |= f.buffers
        return Fact(shape, dtype, kind, buffers)

    def indexed(self, e, base, facts):
        if base.kind == INTS:
            return Fact(EMPTY, EMPTY, NUMBER)
        if base.kind not in (ND, NDARRAY):
            return self.unknown(e, facts)
        index = trims(e.slice)
        if index is None or base.shape is None:     # a view or a copy
            return Fact(None, base.dtype, None, self.loaded(e, facts))
        kind = ND if any(i != "int" for i in index) else None
        return Fact(frozenset([("index", base.shape, index)]), base.dtype, kind, base.buffers)

    def helper_result(self, e, facts):
        helper = self.ctx.bindings.get(getattr(e.func, "id", None))
        args = [self.fact(a, facts) for a in e.args]
        if helper is runtime.count:
            return Fact(EMPTY, EMPTY, NUMBER)
        if helper in (runtime.matmul_lhs, runtime.matmul_rhs, runtime.dot_lhs,
                      runtime.dot_rhs) and all(a.kind in (ND, NDARRAY) for a in args):
            # a new array, in the promotion of the adjoint's and the operands' dtypes
            made = self.result(args)
            return Fact(None, made.dtype, None, 1 << self.new(owned=True))
        if helper is runtime.zeros_like and args[0].kind in (ND, NDARRAY):
            fresh = self.new(owned=True)
            self.floating.add(("zeros", fresh))
            return Fact(args[0].shape, frozenset([("zeros", fresh)]),
                        args[0].kind, 1 << fresh)
        if helper in (runtime.unreduce, runtime.extremum) and args[1].kind in (ND, NDARRAY):
            made = self.result(args[:2])
            return Fact(args[1].shape, made.dtype, args[1].kind, made.buffers)
        if helper is runtime.unbroadcast and args[0].kind in (ND, NDARRAY) and \
                args[1].kind == NUMBER:
            return Fact(EMPTY, EMPTY, NUMBER)       # a float (`number`)
        if (helper is runtime.unbroadcast and args[0].kind in (ND, NDARRAY)
                and args[1].kind == ND and self.is_float(args[0].dtype)):
            return Fact(args[1].shape, args[0].dtype, ND,
                        args[0].buffers | 1 << self.new(owned=True))
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

    def elementwise(self, e):
        """(operands, ufunc) of an elementwise operation whose dtype is its operands'
        promotion for floats, or None."""
        if isinstance(e, gast.BinOp) and type(e.op) in OPERATORS:
            return [e.left, e.right], OPERATORS[type(e.op)]
        if isinstance(e, gast.UnaryOp) and isinstance(e.op, gast.USub):
            return [e.operand], np.negative
        if isinstance(e, gast.Call) and not e.keywords:
            f = self.resolve(e.func)
            if (isinstance(f, np.ufunc) and f.signature is None   # (not np.matmul)
                    and f.nout == 1 and f.nin == len(e.args)
                    and not any(isinstance(a, gast.Starred) for a in e.args)
                    and all(f"{c * f.nin}->{c}" in f.types for c in "efd")):
                return list(e.args), f
        return None

    def resolve(self, func):
        return self.ctx.resolve(func)

    def plan(self, e, facts, free, loads=None):
        """Steps that compute `e` in one buffer: ("bind", e) allocates it, ("out", e, i)
        writes into operand i, ("update", e, i) computes e over the buffer holding its
        operand i; None when `e` is not certainly an array of known shape and float
        dtype. Operand i may be written when it is `free` (nothing reads its buffer
        after the statement) and this operation is all that reads it (`H * H` may be
        computed in `H`): it is the first step. (`loads`: the names the whole expression
        reads, and how often.)"""
        operation = self.elementwise(e)
        if operation is None:
            return None
        operands, _ = operation
        mine = self.fact(e, facts)
        if mine.shape is None or mine.kind == DUCK or not self.is_float(mine.dtype):
            return None
        loads = collections.Counter(syntax.names_loaded(e)) if loads is None else loads

        def fits(f):
            return f.shape == mine.shape and self.same_dtype(f.dtype, mine.dtype)
        for i, a in enumerate(operands):
            inner = self.plan(a, facts, free, loads)
            if inner is not None and fits(self.fact(a, facts)):
                return inner + [("update", e, i)]
        elsewhere = None      # the buffers the whole expression reads outside `e`
        for i, a in enumerate(operands):
            if isinstance(a, gast.Name) and a.id in free and fits(facts[a.id]):
                if elsewhere is None:
                    elsewhere = 0
                    for n in loads - collections.Counter(syntax.names_loaded(e)):
                        elsewhere |= facts.get(n, Fact()).buffers
                if not facts[a.id].buffers & elsewhere:
                    return [("out", e, i)]
        return [("bind", e)] if mine.kind == ND else None

    def is_zeros(self, s):
        """Whether `s` is `a = _s2s_zeros_like(x)`."""
        return (isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name)
                and isinstance(s.value, gast.Call)
                and self.ctx.bindings.get(getattr(s.value.func, "id", None)) is runtime.zeros_like
                and all(syntax.is_name(x) for x in s.value.args))

    def is_addition(self, s):
        return (isinstance(s, gast.AugAssign) and isinstance(s.op, (gast.Add, gast.Sub))
                and isinstance(s.target, gast.Subscript)
                and isinstance(s.target.value, gast.Name))


class Before:
    """The facts before one statement of a block `ArrayFacts.analyse` went through, as a
    read-only mapping: each name's fact is its last version before the statement in the
    history of the block's facts (`{name: ([statement index], [fact or None])}`), or its
    fact at the start (`start`) for a name the block does not change."""
    __slots__ = ("start", "history", "at")

    def __init__(self, start, history, at):
        self.start, self.history, self.at = start, history, at

    def get(self, name, default=None):
        found = self.history.get(name)
        if found is None:
            fact = self.start.get(name)
            return default if fact is None else fact
        at, versions = found
        k = bisect.bisect_right(at, self.at)
        fact = versions[k - 1] if k else None
        return default if fact is None else fact

    def __getitem__(self, name):
        fact = self.get(name)
        if fact is None:
            raise KeyError(name)
        return fact

    def __contains__(self, name):
        return self.get(name) is not None

    def as_dict(self):
        """The facts as a dict of their own."""
        names = itertools.chain(self.start, (n for n in self.history if n not in self.start))
        return {n: f for n in names for f in [self.get(n)] if f is not None}


def straight_loop(s):
    """Whether `s` is a loop whose body is straight-line code (`ArrayFacts.loop`)."""
    return (isinstance(s, (gast.For, gast.While)) and not s.orelse and all(
        isinstance(t, (gast.Assign, gast.AugAssign, gast.Expr, gast.Delete)) for t in s.body))


def _made_up(fact):
    """Whether `fact` has a shape class or a dtype origin an analysis made up (numbered)."""
    return (fact.shape is not None and _made_up_shape(fact.shape)
            or fact.dtype is not None and any(not isinstance(o, str) for o in fact.dtype))


def _made_up_shape(shape):
    # (not a closure calling itself: a cycle of references at each call)
    return any(c[0] == "value" or c[0] == "index" and _made_up_shape(c[1]) for c in shape)


def _reduction(prim):
    """Whether `prim` is a reduction (`np.sum`): its record says so."""
    return getattr(registry.primitive(prim), "reduction", False)


def _positions(bits):
    """The positions of the set bits of `bits` (an int of thousands of bits: one pass
    over its digits, where taking the lowest bit off again and again is quadratic)."""
    digits = bin(bits)[:1:-1]
    out, i = [], digits.find("1")
    while i >= 0:
        out.append(i)
        i = digits.find("1", i + 1)
    return out
