"""Tapes: how a loop's forward pass records what its pullback reads, and how the pullback
runs the loop backwards.

A `LoopPlan` is made for each loop whose adjoint needs something: with the values the
reversed body reads of an iteration (`record`), it picks the cheapest recording. A `for`
over `range` whose reversed body reads only the index is reversed as
`reversed(range(...))` (mode "range"); a loop that needs nothing from its iterations
counts its trips ("trips"); otherwise each iteration appends the values to a list, at the
start of the iteration when they are all carried in ("start"), else at each path's end
("end"), and the pullback iterates the list in reverse.
"""
import gast

from .. import syntax
from ..analysis.names import exposed
from ..analysis.value_kinds import SCALAR


class LoopPlan:
    """What one loop's pullback needs, and how the forward loop records it."""

    def __init__(self, loop, rev):
        self.loop = loop
        self.rev = rev
        self.carried = {s.targets[0].id for s in own_statements(loop.body)
                        if getattr(s, "s2s_phi", False)}
        # a name a nested loop carries is carried by this one too if an iteration may
        # read the value the previous one left (its adjoint flows between iterations)
        self.carried_within = self.carried | ({
            s.targets[0].id for s in syntax.walk(loop) if getattr(s, "s2s_phi", False)}
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
        if (isinstance(loop, gast.For) and set(record) <= {target} and is_range(loop, self.rev)
                and not breaks(loop.body)):
            self.range_args = loop.iter.args
            self.mode = "range"
            self.record = record
        elif not record:
            self.mode = "trips"
            self.tape = namer.fresh("_s2s_trips")
        else:
            self.tape = namer.fresh("_s2s_tape")
            starts = self.carried | ({target} if target else set())
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
            bounds = syntax.call(range_, syntax.copied(self.range_args))
            if self.record:
                return syntax.for_(self.record[0], syntax.call(reversed_, [bounds]), body)
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
            init.s2s_init = True
        return inits + before

    def push(self):
        vals = [syntax.call(self.rev.ctx.runtime("snapshot"), [syntax.name(n)])
                if n in self.snapshots else syntax.name(n) for n in self.record]
        value = vals[0] if len(vals) == 1 else syntax.tuple_(vals)
        stmt = syntax.expr_stmt(syntax.call(syntax.attribute(self.tape, "append"), [value]))
        self.pushes.append(stmt.value)
        return stmt

    def prune(self):
        """Drop recorded values the (optimized) reversed loop no longer reads, and record
        a stand-in without data (`_s2s_like`) for an array it reads only for its shape."""
        if self.mode not in ("start", "end"):
            return
        self._shapes_only()
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

    def _shapes_only(self):
        """Record `_s2s_like(v)` for each value `v` the reversed loop reads only as the
        argument whose type, shape and dtype a runtime helper reads (`x` of
        `_s2s_unbroadcast(g, x)`): no copy of its data stays alive on the tape."""
        ctx = self.rev.ctx
        body = syntax.if_(syntax.const(True), self.reversed.body)
        shape_args = {id(a) for _, a in ctx.shape_only_args(body)}
        other = {n.id for n in syntax.name_nodes(body)
                 if isinstance(n.ctx, gast.Load) and id(n) not in shape_args}
        unpacked = syntax.names_stored(self.reversed.target)
        kinds, shapes = self.rev.kinds.kind, self.rev.shapes
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

def loops_in(stmts):
    return [n for s in stmts for n in syntax.statements(s)
            if isinstance(n, (gast.For, gast.While))]

def breaks(stmts):
    return any(isinstance(s, gast.Break) for s in own_statements(stmts))

def is_range(loop, rev):
    it = loop.iter
    return (isinstance(it, gast.Call) and not it.keywords
            and rev.src.resolve(it.func) is range)

def _at_path_ends(stmts, push, defined, record, partial):
    """Replace this loop's path-end markers by `push()`; add to `partial` the recorded
    names that are not defined on every path reaching a marker."""
    defined = set(defined)
    out = []
    for s in stmts:
        if getattr(s, "s2s_marker", None) == "path_end":
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
        n.s2s_defines for n in syntax.walk(tree) if hasattr(n, "s2s_defines")}
