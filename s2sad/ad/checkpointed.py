"""Checkpointed loops in reverse mode: a loop over `s2sad.checkpointed(steps, k)`, whose
body before_ad/checkpointed_loops.py made one call of a step function of the loop state,
keeps at most k snapshots of that state instead of a tape, on the binomial schedule
(`_s2s_Revolve`, rules/schedules.py), or, for a loop that stops at a `break` (its step
returns a flag), on the online schedule (`_s2s_Online`), which learns the number of
steps when the loop stops.

The forward sweep is the loop as it is, saving the state before the steps the schedule
names. The pullback's reverse sweep takes the steps from the last: it restores a
snapshot, advances the state to the step with the step's primal code (saving snapshots
again where the schedule says), runs that one step through its `vjp`, and then the
step's pullback. A state the step changes in place (`a[i] = v`) is copied after it is
saved and after it is restored, so that no snapshot changes.

>>> import numpy as np, s2sad
>>> def heat(u, kappa, n):
...     for i in s2sad.checkpointed(range(n), snapshots=3):
...         u = u + kappa * (np.roll(u, 1) - 2.0 * u + np.roll(u, -1))
...     return np.sum(u * u)
>>> print(s2sad.source(heat, wrt=(0, 1)).split("# heat_step")[0].rstrip())
def heat_vjp(u, kappa, n):
    # reverse mode of heat() with respect to u, kappa
    # the pullback reads: kappa, u; the snapshots of u of the checkpointed loop at line 2
    # rules: heat_step, *, np.sum
    t = range(n)
    _s2s_schedule = _s2s_Revolve(t, 3)
    for i in t:
        if _s2s_schedule.snapshot_before(i):
            _s2s_schedule.save(i, u)
        u = heat_step(i, u, kappa)
    t_1 = u * u
    y = np.sum(t_1)
<BLANKLINE>
    def heat_pullback(y_bar):
        # grad of: return np.sum(u * u)
        u_bar = 2 * y_bar * u
        kappa_bar_1 = _s2s_zeros_like(kappa)
        # grad of: for i in s2sad.checkpointed(range(n), snapshots=3):
        for _s2s_step, _s2s_start in _s2s_schedule.reverse_sweep():
            # the state before the step, from a snapshot
            u_2 = _s2s_schedule.restore(_s2s_start)
            for i in _s2s_schedule.advance(_s2s_start, _s2s_step):
                if _s2s_schedule.snapshot_before(i):
                    _s2s_schedule.save(i, u_2)
                u_2 = heat_step(i, u_2, kappa)
            # the step again, taped, and its pullback
            u_bar, kappa_bar = heat_step_adjoint(u_bar, _s2s_step, u_2, kappa)
            kappa_bar_1 = kappa_bar_1 + kappa_bar
        return (u_bar, kappa_bar_1)
    return (y, heat_pullback)
"""
import gast
import numpy as np

from .. import marks
from .. import syntax
from ..compilation import Callee
from ..options import Variant
from ..analysis.names import NameCounts, rename
from ..before_ad.checkpointed_loops import LoopBody, is_checkpointed
from .tapes import LoopPlan


def checkpointed(loop, rev):
    """Whether `loop` is a checkpointed loop that reverse mode keeps snapshots of."""
    return (isinstance(loop, gast.For) and is_checkpointed(loop.iter, rev.src)
            and not rev.recompute and _step_call(loop) is not None)


def _step_call(loop):
    """The statement of `loop`'s body that calls its step function."""
    for s in loop.body:
        if isinstance(s, gast.Assign) and isinstance(s.value, gast.Call) and isinstance(
                marks.RECORD.of(marks.PRIM.of(s.value.func)),
                LoopBody):
            return s
    return None


class CheckpointedLoop(LoopPlan):
    """The plan of one checkpointed loop (see the module docstring): its `tape` is the
    schedule, which holds the snapshots."""

    mode = "revolve"

    def __init__(self, loop, rev):
        super().__init__(loop, rev)
        call = _step_call(loop).value
        body = marks.RECORD.of(marks.PRIM.of(call.func))
        self.steps, self.snapshots = loop.iter.args
        self.state = [a.id for a in call.args[1:1 + len(body.state)]]
        self.mutated = [n for n, p in zip(self.state, body.state) if p in body.mutated]
        self.target = loop.target.id
        self.stop = body.stop
        self.online = body.stop is not None
        self.prelude = []       # statements before the reverse sweep
        self.advancing = None   # the name of the step as the sweeps run it, if not its own

    def plan(self):
        self.tape = self.rev.namer.fresh("_s2s_schedule")
        self.created = [self.tape]
        self.rev.primal_names.add(self.tape)

    def prune(self, ctx):
        pass

    def forward_sweep(self):
        """The statements that run the loop forwards, saving snapshots."""
        loop = self.loop
        runtime = self.rev.ctx.runtime
        schedule = runtime("Online" if self.online else "Revolve")
        memory = self.rev.ctx.options.memory
        budget = [] if memory is None else [gast.keyword(arg="memory",
                                                         value=syntax.const(memory))]
        made = syntax.assign(self.tape, syntax.call(schedule, [
            syntax.copied(self.steps), syntax.copied(self.snapshots)], budget))
        loop.iter = syntax.copied(self.steps)
        loop.body = [self.saving()] + _advancing(_single_exit(_primal(loop.body)),
                                                 self.advancing)
        return [syntax.located(made, loop), loop]

    def saving(self):
        """`if schedule.snapshot_before(i): schedule.save(i, state)`."""
        target = syntax.name(self.target)
        value = (syntax.name(self.state[0]) if len(self.state) == 1
                 else syntax.tuple_([syntax.name(n) for n in self.state]))
        save = syntax.expr_stmt(syntax.call(syntax.attribute(self.tape, "save"),
                                            [target, value]))
        test = syntax.call(syntax.attribute(self.tape, "snapshot_before"),
                           [syntax.name(self.target)])
        return syntax.located(syntax.if_(test, [save] + self.copies()), self.loop)

    def copies(self):
        """`a = _s2s_copied(a)` for each state `a` the step changes in place."""
        copied = self.rev.ctx.runtime("copied")
        return [syntax.located(syntax.assign(n, syntax.call(copied, [syntax.name(n)])), self.loop)
                for n in self.mutated]

    def reversed_loop(self, body):
        """The reverse sweep, with `body`, the reversed body, after the taped step."""
        namer = self.rev.namer
        step, start = namer.fresh("_s2s_step"), namer.fresh("_s2s_start")
        state = (syntax.name(self.state[0], store=True) if len(self.state) == 1 else
                 syntax.tuple_([syntax.name(n, store=True) for n in self.state], store=True))
        restore = syntax.assign(state, syntax.call(syntax.attribute(self.tape, "restore"),
                                                   [syntax.name(start)]))
        copies = self.copies()
        advance = syntax.for_(self.target, syntax.call(
            syntax.attribute(self.tape, "advance"), [syntax.name(start), syntax.name(step)]),
            [self.saving()] + [_unlocated(s) for s in _without_stop(_primal(self.loop.body),
                                                                    self.stop)])
        taped = self.taped(body, step)
        advance.body = _advancing(advance.body, self.advancing)
        for made in [restore, advance] + copies + advance.body + advance.body[0].body:
            marks.UNCOMMENTED.put(syntax.located(made, self.loop), True)
        sweep = syntax.for_(syntax.tuple_([syntax.name(step, store=True),
                                           syntax.name(start, store=True)], store=True),
                            syntax.call(syntax.attribute(self.tape, "reverse_sweep")),
                            [syntax.comment("the state before the step, from a snapshot")]
                            + [restore] + copies + [advance]
                            + [syntax.comment("the step again, taped, and its pullback")]
                            + taped)
        self.reversed = sweep
        return sweep

    def taped(self, body, step):
        """The reversed body `body` with the step's pullback a call of the step's adjoint
        (its forward pass and its pullback in one function, which keeps no more than the
        one step needs), and the stand-in of the step's result where `body` reads it."""
        ctx = self.rev.ctx
        call = _step_call(self.loop)
        found = self.rev.user_calls.get(call)
        if found is None:
            return body
        pullback, vjp = found
        callee = next(c for name, c in ctx.callees if name == vjp)
        ctx.callees[:] = [(name, c) for name, c in ctx.callees if name != vjp]
        arg_types, patterns = self.specialised(call.value, callee.arg_types)
        adjoint = ctx.call(Callee(callee.fn, Variant.STEP, callee.wrt, arg_types,
                                  patterns=patterns),
                           f"{callee.fn.__name__}_adjoint")
        if patterns is not None:
            # the sweeps run the step specialised the same way, with its temporaries
            # computed into dead ones
            self.advancing = ctx.call(Callee(callee.fn, Variant.ADVANCE, callee.wrt,
                                             arg_types, patterns=patterns),
                                      f"{callee.fn.__name__}_advance")
        args = [syntax.name(step) if syntax.is_name(a, self.target) else syntax.copied(a)
                for a in call.value.args]
        calls = []
        for n in syntax.walk(syntax.if_(syntax.const(True), body)):
            if isinstance(n, gast.Call) and syntax.is_name(n.func, pullback):
                n.func, n.args = syntax.name(adjoint), n.args + args
                calls.append(n)
        result = call.targets[0].id
        if self.online:
            body = _one_path(body)
            if len(self.state) == 1:
                body = _state_seed(body, calls, result)
        seeds = [n.args[0].id for n in calls if isinstance(n.args[0], gast.Name)]
        if patterns is not None and len(self.state) == 1 and seeds:
            # the adjoint specialised on the state's pattern sums into its seed, which
            # must then be an array that nothing else holds: a copy of the first; those
            # after it are the arrays the step's adjoint returned
            seed = self.rev.adj(self.state[0])
            copy = syntax.assign(seed, syntax.call(ctx.runtime("copied"),
                                                   [syntax.name(seed)]))
            marks.UNCOMMENTED.put(copy, True)
            self.prelude = [syntax.comment("the step's adjoint sums into the state's "
                                           "adjoint: a copy of its own"),
                            syntax.located(copy, self.loop)]
        for s in body:
            marks.UNCOMMENTED.put(s, True)    # (under the comment of the sweep's own)
        out = []
        if result in syntax.names_loaded(syntax.if_(syntax.const(True), body)):
            # (the structure of the state, which the adjoint of unpacking it reads)
            stand_in = syntax.tuple_([syntax.name(n) for n in self.state]
                                     + [syntax.const(False)] * self.online)
            out.append(syntax.located(syntax.assign(result, stand_in), self.loop))
            marks.UNCOMMENTED.put(out[-1], True)
            # (tuples of the step's state and of its adjoint: released, not held
            # through the next step's advance)
            body.append(syntax.located(syntax.delete([result] + seeds), self.loop))
            marks.UNCOMMENTED.put(body[-1], True)
        return out + body

    def specialised(self, call, arg_types):
        """(arg_types, patterns) that the step's adjoint is specialised on, under a guard of
        its own (fused.step_guard): the types and the shape patterns ({parameter of the
        step: (dtype, pattern)}) of the arguments whose value before the loop is a
        parameter of the function that the gradient is specialised on (the state keeps
        the pattern of its first value in most loops; where it does not, the guard calls
        the step's adjoint made for any shapes). `arg_types` and None when the state's
        pattern is not known."""
        ctx = self.rev.ctx
        if not ctx.patterns or ctx.variant not in (Variant.VALUE_AND_GRAD, Variant.GRAD):
            return arg_types, None
        step = marks.RECORD.of(marks.PRIM.of(call.func))
        types, found = dict(arg_types), {}
        for p, a in zip(step.params, call.args):
            origin = _origin(a, ctx.wengert, ctx.src) if isinstance(a, gast.Name) else None
            if origin in ctx.patterns:
                found[p] = ctx.patterns[origin]
            if origin in ctx.types and ctx.types[origin] in (float, int, np.ndarray):
                types[p] = ctx.types[origin]
        if not all(s in found for s in step.state):
            return arg_types, None
        return types, found


def _origin(name, fn, src):
    """The parameter of `fn` whose value `name` holds before the checkpointed loops that
    change it: `name` itself, or the parameter it is a copy of (`u = u0`), when no other
    statement outside those loops assigns it; else None."""
    params = {a.id for a in fn.args.posonlyargs + fn.args.args}
    inside = {id(n) for loop in syntax.walk(fn) if isinstance(loop, gast.For)
              and is_checkpointed(loop.iter, src) for n in syntax.walk(loop)}
    seen = set()
    while name.id not in seen:
        seen.add(name.id)
        copies = []
        for s in syntax.walk(fn):
            if id(s) in inside:
                continue
            if isinstance(s, gast.Assign) and len(s.targets) == 1 and syntax.is_name(
                    s.targets[0], name.id) and isinstance(s.value, gast.Name):
                copies.append(s.value)
            elif isinstance(s, (gast.Assign, gast.AugAssign, gast.AnnAssign, gast.For)) and any(
                    syntax.is_name(n, name.id) for t in (s.targets if isinstance(s, gast.Assign)
                                                         else [s.target])
                    for n in syntax.walk(t)):
                return None
        if not copies:
            return name.id if name.id in params else None
        if len(copies) > 1:
            return None
        name = copies[0]
    return None


def _state_seed(stmts, calls, result):
    """`stmts`, the reversed body of a checkpointed loop whose step returns its one state
    and whether it stopped, passing the step's adjoint (`calls`) the state's adjoint, as
    it takes it (see fused.state_seed), where they built the adjoint of the pair
    (`t_bar = _s2s_unindex(u_bar, t, 0)`, for `t` the step's `result`); else the first
    item of what they pass."""
    for c in calls:
        seed = c.args[0]
        made = next((s for s in stmts if isinstance(s, gast.Assign) and syntax.is_name(
            s.targets[0], getattr(seed, "id", None)) and isinstance(s.value, gast.Call)
            and getattr(s.value.func, "id", "").endswith("unindex")
            and len(s.value.args) == 3 and isinstance(s.value.args[0], gast.Name)
            and syntax.is_name(s.value.args[1], result)
            and isinstance(s.value.args[2], gast.Constant) and s.value.args[2].value == 0),
            None)
        if made is not None and list(syntax.names_loaded(syntax.if_(
                syntax.const(True), stmts))).count(seed.id) == 1:
            c.args[0] = made.value.args[0]
            stmts = [s for s in stmts if s is not made]
        else:
            c.args[0] = gast.Subscript(value=seed, slice=syntax.const(0), ctx=gast.Load())
    return stmts


def _advancing(stmts, name):
    """`stmts` calling the step as `name` (see `CheckpointedLoop.advancing`), if given."""
    if name is None:
        return stmts
    for s in stmts:
        for n in syntax.walk(s):
            if isinstance(n, gast.Call) and isinstance(
                    marks.RECORD.of(marks.PRIM.of(n.func)), LoopBody):
                n.func = syntax.name(name)
    return stmts


def _unlocated(s):
    """A copy of the statement `s` for the pullback, without a `# grad of` comment over
    it (it is the primal code of the step)."""
    s = syntax.copied(s)
    marks.UNCOMMENTED.put(s, True)
    return s


def _single_exit(stmts):
    """The statements of a step that stops at a `break` with the state bound once: where
    the loop body copies each value of the state to its name on both paths (`if stop:
    x = x_1; break` / `else: x = x_1`), the value is bound to the name itself, so that
    no second name holds the last state through the reverse sweep."""
    branch = next((s for s in stmts if isinstance(s, gast.If) and s.body
                   and isinstance(s.body[-1], gast.Break)), None)
    if branch is None:
        return stmts
    copies = [_copy(s) for s in _primal(branch.body[:-1])]
    if None in copies or sorted(copies) != sorted(_copy(s) for s in _primal(branch.orelse)):
        return stmts
    sources = {value: name for name, value in copies}
    others = [s for s in stmts if s is not branch]
    if any(n in sources for n in syntax.names_loaded(syntax.if_(syntax.const(True), others))):
        return stmts
    for s in others:
        if isinstance(s, gast.Assign) and len(s.targets) == 1 and isinstance(
                s.targets[0], gast.Name) and s.targets[0].id in sources:
            s.targets[0].id = sources[s.targets[0].id]
    if isinstance(branch.test, gast.Name) and branch.test.id in sources:
        branch.test.id = sources[branch.test.id]
    branch.body, branch.orelse = [branch.body[-1]], []
    return stmts


def _one_path(stmts):
    """`stmts` with each `if` whose branches are the same (the adjoints of the copies of
    the state on the paths that stop and that go on) as that branch."""
    out = []
    for s in stmts:
        if isinstance(s, gast.If) and [gast.dump(b) for b in s.body] == [
                gast.dump(b) for b in s.orelse]:
            out += s.body
        else:
            out.append(s)
    return out


def _copy(s):
    """(name, value) of `name = value`, a copy of one name to another; else None."""
    if isinstance(s, gast.Assign) and len(s.targets) == 1 and isinstance(
            s.targets[0], gast.Name) and isinstance(s.value, gast.Name):
        return s.targets[0].id, s.value.id
    return None


def _without_stop(stmts, stop):
    """The statements of a step that stops at a `break` for advancing the state to a
    later step (so not the last): the branch that breaks, and its flag `stop`, left
    out."""
    out = []
    for s in stmts:
        if isinstance(s, gast.If) and s.body and isinstance(s.body[-1], gast.Break):
            out += [c for c in _primal(s.orelse) if (_copy(c) or (None,))[0] != stop]
        else:
            out.append(s)
    read = set(syntax.names_loaded(syntax.if_(syntax.const(True), out)))
    return [s for s in out if not (isinstance(s, gast.Assign) and len(s.targets) == 1
                                   and isinstance(s.targets[0], gast.Name)
                                   and s.targets[0].id not in read
                                   and isinstance(s.value, gast.Subscript))]


def _primal(stmts):
    """`stmts` without markers."""
    return [s for s in stmts if not marks.MARKER.of(s)]


def rename_apart(pullback, loops, namer, fused=False):
    """A reverse sweep binds the loop's values again; where the pullback also reads
    those names outside it (the values the forward pass ended with), rename them in the
    sweep. In a `fused` gradient (no closure), only where it reads them after the sweep:
    then the sweep's first state replaces the forward pass's last, which is released."""
    names = None
    for info in loops:
        if not isinstance(info, CheckpointedLoop) or not hasattr(info, "reversed"):
            continue
        if names is None:       # (counted where there are sweeps)
            names = NameCounts(pullback)
        sweep = info.reversed
        inside = NameCounts(sweep)
        after = None
        if fused and any(s is sweep for s in pullback.body):
            at = next(i for i, s in enumerate(pullback.body) if s is sweep)
            after = set(syntax.names_loaded(syntax.if_(syntax.const(True),
                                                       pullback.body[at + 1:])))
        for name in sorted(set(syntax.names_stored(sweep))):
            outside = names.loads[name] > inside.loads[name]
            if after is not None:
                outside = name in after
            if name in info.rev.primal_names and outside:
                new = namer.fresh(name)
                names.drop(sweep)
                rename(sweep, name, new)
                names.add(sweep)
                inside = NameCounts(sweep)
