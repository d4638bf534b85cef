"""Tapes: how a loop's forward pass records what its pullback reads, and how the pullback
runs the loop backwards.

A `LoopPlan` is made for each loop whose adjoint needs something: with the values the
reversed body reads of an iteration (`record`), it picks the cheapest recording. A `for`
over `range` whose reversed body reads only the index is reversed as
`reversed(range(...))` (mode "range"); a loop that needs nothing from its iterations
counts its trips ("trips"); otherwise each iteration appends the values to a list, at the
start of the iteration when they are all carried in ("start"), else at each path's end
("end"), and the pullback iterates the list in reverse. A carried name that a loop nested
in the body changes is read after that loop at the value it leaves: it is recorded at the
end (see `LoopPlan.plan`).

What an iteration records is chosen by `rematerialized`, a minimum cut over the step's
data flow (as JAX's remat policies and the min-cut partitioners of deep-learning
compilers choose): an array the reversed body reads is either taped or computed again
at the top of the reversed body from values that are taped anyway, when the operations
between are cheap (`+ - * /`, views, `np.sum`), whichever keeps fewer elements per
step; and the value a carried name ends an iteration with is not taped when the
iteration's start value is: the reversed loop takes it from the iteration after.
"""
import gast
import numpy as np

from .. import marks
from .. import syntax
from ..analysis.names import exposed, store_counts
from ..analysis.value_kinds import ARRAY, SCALAR
from ..rules import runtime


class LoopPlan:
    """What one loop's pullback needs, and how the forward loop records it. The reverse
    transform (`rev`) plans it; once the transform ends the plan lets go of it
    (`rev` is None) and is plain data, which the passes after it read (header,
    native_tapes) and prune with the context they are given (`prune`, `as_range`)."""

    def __init__(self, loop, rev):
        self.loop = loop
        self.rev = rev
        self.carried = {s.targets[0].id for s in own_statements(loop.body)
                        if marks.PHI.of(s)}
        # a name a nested loop carries is carried by this one too if an iteration may
        # read the value the previous one left (its adjoint flows between iterations)
        self.carried_within = self.carried | ({
            s.targets[0].id for s in syntax.walk(loop) if marks.PHI.of(s)}
            & exposed(loop.body, set()))
        stored = set(syntax.names_stored(syntax.if_(syntax.const(True), loop.body)))
        if isinstance(loop, gast.For):
            stored.add(loop.target.id)
        self.defined_inside = stored
        loaded = set(syntax.names_loaded(syntax.if_(syntax.const(True), loop.body)))
        self.read_outside = loaded - stored
        self.created = []
        self.pushes = []
        self.snapshots = set()      # recorded as copies (see InPlaceWrites.kept_apart)

    def add_inner(self):
        """Count the tapes of the loops nested in this one (known once they are
        reversed) as defined inside it."""
        for inner in loops_in(self.loop.body):
            info = self.rev.loops.get(inner)
            if info is not None:
                self.defined_inside.update(info.created)

    def plan(self, record):
        loop, namer = self.loop, self.rev.namer
        self.record = record
        target = loop.target.id if isinstance(loop, gast.For) else None
        self.range_args = None
        if (isinstance(loop, gast.For) and set(record) <= {target} and is_range(loop, self.rev.src)
                and not breaks(loop.body)):
            self.range_args = loop.iter.args
            self.mode = "range"
            self.record = record
        elif not record:
            self.mode = "trips"
            self.tape = namer.fresh("_s2s_trips")
        else:
            self.tape = namer.fresh("_s2s_tape")
            # a carried name that a loop nested in the body changes is read, after that
            # loop, at the value it leaves there (and nowhere before it: Wengert form gives
            # the nested loop a copy of its own of a name read before): recorded at the end
            starts = (self.carried | ({target} if target else set())) - nested_stores(loop)
            self.mode = "start" if set(record) <= starts else "end"
        if self.mode != "range":
            self.created = [self.tape]
            self.rev.primal_names.add(self.tape)

    def reversed_loop(self, body):
        self.reversed = self._reversed_loop(body)
        return self.reversed

    def _reversed_loop(self, body):
        reversed_, range_ = self.rev.ctx.bind("reversed"), self.rev.ctx.bind("range")
        if self.mode == "range":
            # its own copy of the bounds: the forward loop's get renamed by coalescing
            if self.record:
                return syntax.for_(self.record[0], self.backwards(self.range_args, self.rev.ctx),
                                   body)
            bounds = syntax.call(range_, syntax.copied(self.range_args))
            return syntax.for_(self.rev.namer.fresh("_"), bounds, body)
        if self.mode == "trips":
            return syntax.for_(self.rev.namer.fresh("_"), syntax.call(range_, [
                syntax.name(self.tape)]), body)
        target = (syntax.name(self.record[0], store=True) if len(self.record) == 1
                  else syntax.tuple_([syntax.name(n, store=True) for n in self.record],
                                    store=True))
        return syntax.for_(target, syntax.call(reversed_, [syntax.name(self.tape)]), body)

    def instrument(self):
        """Statements before the loop; the loop body gets its recording in place."""
        loop = self.loop
        if self.mode == "range":
            return []
        if self.mode == "trips":
            loop.body.insert(0, gast.AugAssign(target=syntax.name(self.tape, store=True),
                                               op=gast.Add(), value=syntax.const(1)))
            return [syntax.assign(self.tape, syntax.const(0))]
        before = [syntax.assign(self.tape, gast.List(elts=[], ctx=gast.Load()))]
        if self.mode == "start":
            loop.body.insert(0, self.push())
            return before
        target = {loop.target.id} if isinstance(loop, gast.For) else set()
        at_start = (set(self.record) - self.defined_inside) | self.carried | target
        partial = set()
        loop.body = _at_path_ends(loop.body, self.push, at_start, self.record, partial)
        # A value defined on some paths only is read back only on those paths; before
        # the first iteration it still needs a binding to be recorded.
        inits = [syntax.assign(n, syntax.const(None))
                 for n in sorted(partial - self.rev.bound_before.get(loop, set()))]
        for init in inits:
            marks.INIT.put(init, True)
        return inits + before

    def push(self):
        vals = [syntax.call(self.rev.ctx.runtime("snapshot"), [syntax.name(n)])
                if n in self.snapshots else syntax.name(n) for n in self.record]
        value = vals[0] if len(vals) == 1 else syntax.tuple_(vals)
        stmt = syntax.expr_stmt(syntax.call(syntax.attribute(self.tape, "append"), [value]))
        self.pushes.append(stmt.value)
        return stmt

    def prune(self, ctx):
        """Drop the values computed again at the top of the (optimized) reversed loop
        that it no longer reads, then the recorded values it no longer reads, and record
        a stand-in without data (`_s2s_like`) for an array it reads only for its shape."""
        if not hasattr(self, "reversed"):
            return
        body = self.reversed.body
        while True:
            read = set(syntax.names_loaded(syntax.if_(syntax.const(True), body)))
            dead = [s for s in body if marks.RECOMPUTED.of(s)
                    and isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name)
                    and s.targets[0].id not in read]
            if not dead:
                break
            body[:] = [s for s in body if not any(s is d for d in dead)]
        self._offsets_inlined()
        if self.mode not in ("start", "end"):
            return
        self._shapes_only(ctx)
        if len(self.record) < 2:
            return
        loop = self.reversed
        read = set(syntax.names_loaded(syntax.if_(syntax.const(True), loop.body)))
        unpacked = syntax.names_stored(loop.target)
        keep = [i for i, n in enumerate(unpacked) if n in read] or [0]
        if len(keep) == len(unpacked):
            return
        names = [unpacked[i] for i in keep]
        loop.target = (syntax.name(names[0], store=True) if len(names) == 1 else
                       syntax.tuple_([syntax.name(n, store=True) for n in names], store=True))
        for call in self.pushes:
            vals = [call.args[0].elts[i] for i in keep]
            call.args[0] = vals[0] if len(vals) == 1 else syntax.tuple_(vals)

    def backwards(self, bounds, ctx):
        """`reversed(range(*bounds))`; for code that cannot call `reversed` (Numba's),
        `range(stop - 1, start - 1, -1)` (of one or two bounds), and with a step the range
        that runs the same numbers backwards (the reversed loop of a gradient's code
        that is differentiated again runs backwards already)."""
        bounds = syntax.copied(bounds)
        if ctx.can.reversed:
            return syntax.call(ctx.bind("reversed"), [syntax.call(ctx.bind("range"), bounds)])
        range_ = ctx.bind("range")
        if len(bounds) == 3:
            if all(isinstance(b, gast.Constant) and type(b.value) is int for b in bounds):
                back = range(*(b.value for b in bounds))[::-1]
                return syntax.call(range_, [syntax.const(back.start), syntax.const(back.stop),
                                            syntax.const(back.step)])
            start, stop, step = bounds
            count = syntax.call(ctx.bind("len"), [syntax.call(range_, syntax.copied(bounds))])
            last = gast.BinOp(left=syntax.copied(start), op=gast.Add(), right=gast.BinOp(
                left=_minus_one(count), op=gast.Mult(), right=syntax.copied(step)))
            return syntax.call(range_, [
                last, gast.BinOp(left=syntax.copied(start), op=gast.Sub(),
                                 right=syntax.copied(step)),
                gast.UnaryOp(op=gast.USub(), operand=syntax.copied(step))])
        start, stop = bounds if len(bounds) == 2 else (syntax.const(0), bounds[0])
        return syntax.call(range_, [_minus_one(stop), _minus_one(start), syntax.const(-1)])

    def _offsets_inlined(self):
        """An offset of the counter computed again at the top of the reversed loop
        (`t_4 = i - 1`) is written where it is read (`x_bar[i - 1] += ...`)."""
        body = self.reversed.body
        counters = set(syntax.names_stored(self.reversed.target))
        stored = store_counts(body)
        offsets = {s.targets[0].id: s for s in body if marks.RECOMPUTED.of(s)
                   and isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name)
                   and stored[s.targets[0].id] == 1 and _offset_of(s.value, counters)
                   and not stored[s.value.left.id]}
        if not offsets:
            return
        body[:] = [s for s in body if not (isinstance(s, gast.Assign) and any(
            s is d for d in offsets.values()))]
        for name, s in offsets.items():
            for stmt in body:
                syntax.replace_loads(stmt, name, lambda s=s: syntax.copied(s.value))

    def as_range(self, vjp, ctx):
        """Once the reversed loop reads nothing of an iteration but the counter of a
        `for` over `range` at the top of `vjp` (the values it read otherwise pruned or
        read back from arrays), run it as `reversed(range(...))` without a tape."""
        loop = self.loop
        if not (self.mode in ("start", "end") and isinstance(loop, gast.For)
                and is_range(loop, ctx.src) and not breaks(loop.body)
                and any(s is loop for s in vjp.body)
                and isinstance(self.reversed.target, gast.Name) and self.pushes
                and all(syntax.is_name(c.args[0], loop.target.id) for c in self.pushes)):
            return
        pushes = {id(c) for c in self.pushes}
        bounds = loop.iter.args
        if not ctx.can.reversed and len(bounds) > 2:
            return          # (without reversed(), a step is left to the tape)
        assigned = store_counts(vjp)
        if not all(isinstance(b, gast.Constant) or (isinstance(b, gast.Name)
                                                    and assigned.get(b.id, 0) <= 1)
                   for b in bounds):
            return
        for block in syntax.blocks(vjp.body):
            block[:] = [s for s in block if not (
                isinstance(s, gast.Expr) and id(s.value) in pushes) and not (
                isinstance(s, gast.Assign) and syntax.is_name(s.targets[0], self.tape))]
        self.reversed.iter = self.backwards(bounds, ctx)
        self.mode, self.range_args, self.created, self.pushes = "range", bounds, [], []

    def _shapes_only(self, ctx):
        """Record `_s2s_like(v)` for each value `v` the reversed loop reads only as the
        argument whose type, shape and dtype a runtime helper reads (`x` of
        `_s2s_unbroadcast(g, x)`): no copy of its data stays alive on the tape."""
        body = syntax.if_(syntax.const(True), self.reversed.body)
        shape_args = {id(a) for _, a in ctx.shape_only_args(body)}
        other = {n.id for n in syntax.name_nodes(body)
                 if isinstance(n.ctx, gast.Load) and id(n) not in shape_args}
        unpacked = syntax.names_stored(self.reversed.target)
        kinds, shapes = ctx.value_kinds.kind, ctx.shapes
        like = [i for i, n in enumerate(unpacked) if n not in other   # (not for numbers)
                and kinds.get(self.record[i]) != SCALAR
                and shapes.pattern_of(self.record[i]) != ()]
        if not like:
            return
        for call in self.pushes:
            vals = call.args[0].elts if len(unpacked) > 1 else [call.args[0]]
            for i in like:
                value = vals[i].args[0] if isinstance(vals[i], gast.Call) else vals[i]
                vals[i] = syntax.call(ctx.runtime("like"), [value])
            if len(unpacked) == 1:
                call.args[0] = vals[0]


def _minus_one(e):
    """`e - 1`, folded for a constant."""
    if isinstance(e, gast.Constant) and type(e.value) is int:
        return syntax.const(e.value - 1)
    return gast.BinOp(left=e, op=gast.Sub(), right=syntax.const(1))


def _offset_of(value, counters):
    """Whether `value` is a counter of `counters` plus or minus an int (`i - 1`)."""
    return isinstance(value, gast.BinOp) and any(
        syntax.counter_offset(value, c, {}) is not None for c in counters)


def bound_before_loops(fn):
    """{loop: the names certainly bound when it starts}: the parameters and the names the
    top-level statements before it assign."""
    bound = {a.id for a in fn.args.args + fn.args.posonlyargs + fn.args.kwonlyargs}
    out = syntax.NodeMap()
    for s in fn.body:
        for loop in loops_in([s]):
            out[loop] = frozenset(bound)
        if isinstance(s, gast.Assign):
            bound.update(syntax.names_stored(s))
    return out



def own_statements(stmts):
    """Statements of `stmts` and of ifs nested in it, not of nested loops."""
    for s in stmts:
        yield s
        if isinstance(s, gast.If):
            yield from own_statements(s.body)
            yield from own_statements(s.orelse)

def nested_stores(loop):
    """The names the loops nested in `loop`'s body assign."""
    return {n for inner in loops_in(loop.body) for n in syntax.names_stored(inner)}

def loops_in(stmts):
    return [n for s in stmts for n in syntax.statements(s)
            if isinstance(n, (gast.For, gast.While))]

def breaks(stmts):
    return any(isinstance(s, gast.Break) for s in own_statements(stmts))

def is_range(loop, src):
    """Whether `loop` (a `for`) runs over a call of `range`, as `src` resolves it."""
    it = loop.iter
    return (isinstance(it, gast.Call) and not it.keywords
            and src.resolve(it.func) is range)

def _at_path_ends(stmts, push, defined, record, partial):
    """Replace this loop's path-end markers by `push()`; add to `partial` the recorded
    names that are not defined on every path reaching a marker."""
    defined = set(defined)
    out = []
    for s in stmts:
        if marks.MARKER.of(s) == "path_end":
            partial.update(set(record) - defined)
            out.append(syntax.located(push(), s))
            continue
        if isinstance(s, gast.If):
            s.body = _at_path_ends(s.body, push, defined, record, partial)
            s.orelse = _at_path_ends(s.orelse, push, defined, record, partial)
            defined |= (_defs(s.body) & _defs(s.orelse))
        else:
            defined |= _defs([s])
        out.append(s)
    return out

def _defs(stmts):
    """Names `stmts` bind, counting in-place writes as binding the name they stand for."""
    tree = syntax.if_(syntax.const(True), stmts)
    return set(syntax.names_stored(tree)) | {
        marks.DEFINES.of(n) for n in syntax.walk(tree) if marks.DEFINES.has(n)}


# -- what an iteration records: a minimum cut ---------------------------------------------

_AXIS = 1000        # the nominal length of an axis longer than 1: sizes only compare
_INF = float("inf")


def rematerialized(loop, record, rev, body, free=()):
    """(statements for the top of `loop`'s reversed `body` that compute values again,
    {value an iteration ends with: the carried name it becomes}, the values to tape),
    for the values `record` the reversed body reads of an iteration.

    Each array of `record` is taped, or computed again from values taped anyway by cheap
    statements of the body (those `_cheap` accepts, run on every path), whichever keeps
    fewer elements a step: a minimum cut of the step's data flow, each value weighing
    its nominal size (`_Sizes`). Values the reversed body reads only for their shapes
    cost nothing (they are taped as stand-ins, see `LoopPlan.prune`). Then a carried
    value's end of an iteration, `vx_1` of `vx = vx_1`, is the next iteration's `vx`:
    when both are to be taped, the reversed loop keeps `vx_1` from the iteration after
    (and from the final value before the first) instead, unless a nested loop changes
    `vx` (then what the iteration records of `vx` is the value that loop leaves). The
    values `free` are computed again already."""
    step = _Step(loop, rev, record, body, set(free))
    if not step.candidates and not step.carried:
        return [], {}, record
    taped, again, carried = step.cut()
    out = []
    for s in step.statements:
        if s.targets[0].id in again:
            out.append(syntax.assign(s.targets[0].id, syntax.copied(s.value)))
            marks.RECOMPUTED.put(out[-1], True)
    keep = [n for n in record if n in taped or (n in step.shape_only and n not in again
                                                and n not in carried)]
    keep += sorted(n for n in taped if n not in record)
    return out, carried, sorted(set(keep))


class _Step:
    """The data flow of one iteration of `loop`, for `rematerialized`."""

    def __init__(self, loop, rev, record, body, free):
        self.rev, self.record, self.free = rev, record, free
        if rev.assigned is None:
            rev.assigned = store_counts(rev.wengert)
        inside = set(syntax.names_stored(syntax.if_(syntax.const(True), loop.body)))
        if isinstance(loop, gast.For):
            inside.add(loop.target.id)
        self.inside = inside
        self.nested = nested_stores(loop)
        versions = rev.shapes.versions
        self.written = set(versions) | set(versions.values()) | {
            c.args[0].id for c in syntax.walk(rev.wengert) if isinstance(c, gast.Call)
            and marks.PRIM.of(c.func) is runtime.setitem
            and c.args and isinstance(c.args[0], gast.Name)}
        outside = [x for x in rev.wengert.body if x is not loop]
        self.read_after = set(syntax.names_loaded(syntax.if_(syntax.const(True), outside)))
        self.sizes = _Sizes(rev, loop.body)
        # candidates: arrays of a known shape (a number or an element is cheaper taped)
        self.statements, self.candidates = [], {}
        for s in loop.body:
            if any(isinstance(x, (gast.Break, gast.Continue, gast.Return))
                   or marks.MARKER.of(x) == "path_end" for x in own_statements([s])):
                break           # the statements after it do not run on every path
            operands = self.operands(s)
            shape = self.sizes.shape(s.targets[0].id) if operands is not None else None
            if shape is not None and 0 in shape:
                self.statements.append(s)
                self.candidates[s.targets[0].id] = operands
        shape_args = {id(a) for _, a in rev.ctx.shape_only_args(body)}
        data = {n.id for n in syntax.name_nodes(syntax.if_(syntax.const(True), body))
                if isinstance(n.ctx, gast.Load) and id(n) not in shape_args}
        self.shape_only = {n for n in record if n not in data and rev.kinds.kind.get(n) == ARRAY}
        self.sinks = [n for n in record if n not in self.shape_only]
        # (not where tapes are arrays of numbers, where a column costs next to nothing,
        # typed from the forward loop's bindings alone)
        self.carried = (self.carried_ends(loop) if loop in rev.wengert.body
                        and not rev.ctx.can.tape_arrays else {})

    def operands(self, s):
        """The names `s` computes its value from, if it is a cheap array statement whose
        value the reversed body may compute again; else None."""
        rev = self.rev
        if not (isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name)):
            return None
        target = s.targets[0].id
        if (rev.assigned[target] != 1 or rev.kinds.kind.get(target) != ARRAY
                or target in self.read_after or target in self.written):
            return None
        atoms = _cheap(s.value, rev)
        if atoms is None:
            return None
        names = []
        for x in atoms:
            if isinstance(x, gast.Constant):
                continue
            if (not isinstance(x, gast.Name) or x.id in self.nested or x.id in self.written
                    or not rev.src.is_local(x.id)):
                return None
            if x.id in self.inside and x.id not in self.free:
                names.append(x.id)
        return names

    def carried_ends(self, loop):
        """{`vx_1`: `vx`} for the carried names of `loop` copied once, unconditionally,
        from a value the body assigns once (`vx = vx_1`), bound before the loop."""
        if breaks(loop.body) or any(isinstance(x, gast.Continue) for x in own_statements(
                loop.body)):
            return {}
        rev = self.rev
        phis = [s for s in own_statements(loop.body) if marks.PHI.of(s)]
        top = {id(s) for s in loop.body}
        count = {}
        for s in phis:
            count[s.targets[0].id] = count.get(s.targets[0].id, 0) + 1
        bound = rev.bound_before.get(loop, frozenset())
        out = {}
        for s in phis:
            c, v = s.targets[0].id, s.value
            # (not a name a nested loop changes: the iteration records the value that
            # loop leaves, not the one the next iteration starts with)
            if (id(s) in top and count[c] == 1 and isinstance(v, gast.Name)
                    and v.id in self.inside and rev.assigned[v.id] == 1 and c in bound
                    and v.id not in self.nested and c not in self.nested
                    and v.id not in self.read_after
                    and c not in self.written and v.id not in self.written):
                out[v.id] = c
        return out

    def cut(self):
        """(taped names, names computed again, {end value: carried name} kept from the
        iteration after)."""
        graph = {}

        def edge(a, b, capacity):
            graph.setdefault(a, {})
            graph.setdefault(b, {})
            graph[a][b] = graph[a].get(b, 0) + capacity
            graph[b].setdefault(a, 0)

        nodes, todo = set(), list(self.sinks)
        while todo:
            n = todo.pop()
            if n in nodes:
                continue
            nodes.add(n)
            edge(("in", n), ("out", n), self.sizes.weight(n))
            if n in self.candidates:
                for m in self.candidates[n]:
                    edge(("out", m), ("in", n), _INF)
                    todo.append(m)
            else:
                edge("source", ("in", n), _INF)
        for n in self.sinks:
            edge(("out", n), "sink", _INF)
        if "source" not in graph:
            return set(), set(), {}
        _max_flow(graph, "source", "sink")
        # the cut nearest the sink: of two cuts of equal weight, the one computing less
        reach = {"sink"}
        todo = ["sink"]
        while todo:
            b = todo.pop()
            for a in graph[b]:
                if a not in reach and graph[a][b] > 0:
                    reach.add(a)
                    todo.append(a)
        taped = {n for n in nodes if ("in", n) not in reach and ("out", n) in reach}
        again = {n for n in nodes if ("in", n) in reach}
        # (an end value is taped or kept from the iteration after: not a cut's choice)
        carried = {n: c for n, c in self.carried.items() if n in taped and c in taped}
        return taped - set(carried), again, carried


def _max_flow(graph, source, sink):
    """Push a maximum flow through `graph` ({a: {b: residual capacity}}), in place."""
    while True:
        parent, todo = {source: None}, [source]
        while todo and sink not in parent:
            nxt = []
            for a in todo:
                for b, c in graph[a].items():
                    if c > 0 and b not in parent:
                        parent[b] = a
                        nxt.append(b)
            todo = nxt
        if sink not in parent:
            return
        path, b = [], sink
        while parent[b] is not None:
            path.append((parent[b], b))
            b = parent[b]
        flow = min(graph[a][b] for a, b in path)
        if flow == _INF:
            return          # no finite cut (not reached: every value may be taped)
        for a, b in path:
            graph[a][b] -= flow
            graph[b][a] += flow


def _cheap(value, rev):
    """The atoms `value` reads, if it is cheap to compute again (about one pass over its
    operands): `+ - * /` or a sign change of atoms, a view of a name by constant slices,
    new axes and ints (`x[:, None]`, `x[i]`), `np.sum` over a constant axis; else None."""
    if isinstance(value, gast.BinOp) and isinstance(value.op, (gast.Add, gast.Sub, gast.Mult,
                                                               gast.Div)):
        atoms = [value.left, value.right]
    elif isinstance(value, gast.UnaryOp) and isinstance(value.op, (gast.USub, gast.UAdd)):
        atoms = [value.operand]
    elif isinstance(value, gast.Subscript) and isinstance(value.value, gast.Name):
        atoms = _view_index(value.slice)
        if atoms is None:
            return None
        atoms = [value.value] + atoms
    elif (isinstance(value, gast.Call) and rev.src.resolve(value.func) is np.sum
          and len(value.args) == 1 and all(
              k.arg in ("axis", "keepdims") and isinstance(k.value, gast.Constant)
              for k in value.keywords)):
        atoms = [value.args[0]]
    else:
        return None
    return atoms if all(syntax.is_atom(x) for x in atoms) else None


def _view_index(index):
    """The names an index reads, if it takes a view: constant slices, new axes, ints."""
    parts = index.elts if isinstance(index, gast.Tuple) else [index]
    names = []
    for p in parts:
        if isinstance(p, gast.Constant) and (p.value is None or type(p.value) is int):
            continue
        if isinstance(p, gast.Name):
            names.append(p)
        elif isinstance(p, gast.Slice) and all(
                b is None or (isinstance(b, gast.Constant) and type(b.value) is int)
                for b in (p.lower, p.upper, p.step)):
            continue
        else:
            return None
    return names


class _Sizes:
    """The nominal number of elements of the values of a loop body: each axis longer
    than one counts `_AXIS`, the shapes of parameters known from the shape patterns the
    code is specialised on and carried through cheap operations."""

    def __init__(self, rev, body):
        self.rev = rev
        self.defs = {s.targets[0].id: s for s in body if isinstance(s, gast.Assign)
                     and isinstance(s.targets[0], gast.Name)
                     and not marks.PHI.of(s)}
        # a carried name's start value has the shape of the value it ends with
        self.ends = {s.targets[0].id: s.value for s in body if marks.PHI.of(s)}
        self.memo = {}

    def weight(self, name):
        shape = self.shape(name)
        if shape is None:
            return 1 if self.rev.kinds.kind.get(name) == SCALAR else _AXIS ** 2
        return _AXIS ** sum(1 for a in shape if a == 0)

    def shape(self, name):
        """The shape pattern of `name` (per axis 1 if of length 1, else 0), or None."""
        if name not in self.memo:
            self.memo[name] = None      # (around a loop: unknown)
            self.memo[name] = self._shape(name)
        return self.memo[name]

    def _shape(self, name):
        rev = self.rev
        if rev.kinds.kind.get(name) == SCALAR:
            return ()
        patterns = rev.ctx.patterns or {}
        s = self.defs.get(name)
        if s is None and name in patterns:
            return patterns[name][1]
        if s is None:
            return self.atom(self.ends.get(name))
        v = s.value
        if isinstance(v, gast.Name):
            return self.shape(v.id)
        if isinstance(v, gast.UnaryOp):
            return self.atom(v.operand)
        if isinstance(v, gast.BinOp) and not isinstance(v.op, gast.MatMult):
            return _broadcast(self.atom(v.left), self.atom(v.right))
        if isinstance(v, gast.Subscript) and isinstance(v.value, gast.Name):
            return _indexed(self.shape(v.value.id), v.slice)
        if isinstance(v, gast.Call) and rev.src.resolve(v.func) is np.sum and v.args:
            shape = self.atom(v.args[0])
            keys = {k.arg: getattr(k.value, "value", "?") for k in v.keywords}
            axis, keep = keys.get("axis"), keys.get("keepdims", False)
            if shape is None or type(axis) is not int or not -len(shape) <= axis < len(shape):
                return None if axis is not None or shape is None else ()
            axis %= len(shape)
            return shape[:axis] + ((1,) if keep else ()) + shape[axis + 1:]
        return None

    def atom(self, x):
        if isinstance(x, gast.Constant):
            return ()
        return self.shape(x.id) if isinstance(x, gast.Name) else None


def _broadcast(a, b):
    if a is None or b is None:
        return None
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + tuple(a), (1,) * (n - len(b)) + tuple(b)
    return tuple(1 if x == y == 1 else 0 for x, y in zip(a, b))


def _indexed(shape, index):
    """The shape pattern of a view `x[index]` of an `x` of pattern `shape`."""
    if shape is None:
        return None
    parts = index.elts if isinstance(index, gast.Tuple) else [index]
    out, axes = [], list(shape)
    for p in parts:
        if isinstance(p, gast.Constant) and p.value is None:
            out.append(1)
        elif not axes:
            return None
        elif isinstance(p, gast.Slice):
            out.append(axes.pop(0))
        else:
            axes.pop(0)         # an int
    return tuple(out + axes)


def free_loads(stmts, bound):
    """Names `stmts` read that are not bound by an enclosing `for` target among them."""
    out = set()
    for s in stmts:
        if isinstance(s, gast.For):
            out |= set(syntax.names_loaded(s.iter)) - bound
            again = {x.targets[0].id for x in s.body if marks.RECOMPUTED.of(x)}
            out |= free_loads(s.body, bound | set(syntax.names_stored(s.target)) | again)
        elif isinstance(s, (gast.If, gast.While)):
            out |= set(syntax.names_loaded(s.test)) - bound
            out |= free_loads(s.body, bound) | free_loads(s.orelse, bound)
        else:
            out |= set(syntax.names_loaded(s)) - bound
    return out
