"""Checkpointed loops: the body of `for i in s2sad.checkpointed(range(n), snapshots=k):`
becomes a step function of the loop state, as lift.py lifts nested functions.

Takes a lifted function and leaves one where each such loop (recognised by the object
`s2sad.checkpointed` its head calls, not by its spelling) has one statement in its body,
`state = f_step(i, state, reads)`. The state is what the body carries from one step to
the next: the names it assigns that it or the code after the loop may read before
assigning them. The step function is the body with `continue` as a return of the state;
reverse mode (ad/checkpointed.py) runs it plainly to advance the state and calls its own
`f_step_vjp` for the one step it reverses. A body with a `break` of its own (a loop over
`itertools.count()` that stops when it is done, the form of a `while` loop) makes a step
that also returns whether it stopped, `state, stop = f_step(i, state, reads)`, followed
by `if stop: break`; its gradient follows an online schedule. Forward mode and second
derivatives run the loop over its range as it is.

>>> import math, s2sad
>>> from s2sad import pipeline
>>> def f(x, c):
...     s = 0.0
...     for i in s2sad.checkpointed(range(4), snapshots=2):
...         t = x * c
...         x = math.sin(t) + x
...         s = s + t
...     return s * x
>>> print(pipeline.stage_source(f, "checkpointed_loops", wrt=(0, 1)).rstrip())
def f(x, c):
    s = 0.0
    for i in s2sad.checkpointed(range(4), 2):
        x, s = f_step(i, x, s, c)
    return s * x

A loop that stops at a `break`:

>>> import itertools
>>> def g(x, tol):
...     for i in s2sad.checkpointed(itertools.count(), snapshots=2):
...         x = math.sin(x)
...         if x < tol:
...             break
...     return x
>>> print(pipeline.stage_source(g, "checkpointed_loops", wrt=0).rstrip())
def g(x, tol):
    for i in s2sad.checkpointed(itertools.count(), 2):
        x, stop = g_step(i, x, tol)
        if stop:
            break
    return x
"""
import itertools
import weakref

import gast

from .. import emit, marks, syntax
from ..frontend import deferred
from ..analysis.names import exposed
from ..rules.schedules import checkpointed
from .lift import MUTATORS, Lifted

#: user function -> {(line, column) of a checkpointed loop: its step function}
_steps = weakref.WeakKeyDictionary()


def run(fn, ctx):
    """The pass."""
    return CheckpointedLoops(ctx).run(fn)


def is_checkpointed(e, src):
    """Whether `e` is a call of `s2sad.checkpointed`."""
    return isinstance(e, gast.Call) and src.resolve(e.func) is checkpointed


class CheckpointedLoops:
    """See the module docstring; `ctx` is the `Compilation`."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.src = ctx.src
        self.plain = ctx.variant.forward or ctx.options.recompute

    def run(self, fn):
        self.fn = fn
        for block in list(syntax.blocks(fn.body, functions=False)):
            for loop in block:
                if isinstance(loop, gast.For) and is_checkpointed(loop.iter, self.src):
                    self.rewrite(loop, block)
        return fn

    def rewrite(self, loop, block):
        steps, snapshots = self.arguments(loop.iter)
        counting = (isinstance(steps, gast.Call)
                    and self.src.resolve(steps.func) is itertools.count)
        if counting and not any(isinstance(n, gast.Break) for n in _own(loop.body)):
            raise self.src.syntax_error(loop.iter, "a checkpointed loop over "
                                        "itertools.count() needs a `break` in its body: "
                                        "without one it does not end")
        if self.plain:
            # (desugar leaves a loop over the marker as it is, and would make one over
            # a count a list of its items)
            loop.iter = (syntax.located(syntax.call(loop.iter.func, [steps, snapshots]),
                                        loop.iter) if counting else steps)
            return
        if not isinstance(loop.target, gast.Name):
            raise self.src.syntax_error(loop.target, "a checkpointed loop's variable is one "
                                        "name (for i in s2sad.checkpointed(range(n), ...))")
        self.refuse_returns(loop)
        state, reads, mutated = self.state(loop, block)
        if not state:
            loop.iter = steps       # it carries nothing: nothing to keep or compute again
            return
        stop = self.stop_flag(loop)
        step = self.step_function(loop, state, reads, mutated, stop)
        func = syntax.name(step.__name__)
        marks.PRIM.put(func, step)
        marks.LIFTED.put(func)
        args = [syntax.name(loop.target.id)] + [syntax.name(n) for n in state + reads]
        outs = state + ([stop] if stop else [])
        targets = (syntax.name(outs[0], store=True) if len(outs) == 1 else
                   syntax.tuple_([syntax.name(n, store=True) for n in outs], store=True))
        call = syntax.located(syntax.assign(targets, syntax.call(func, args)), loop)
        loop.body = [call]
        if stop:
            loop.body.append(syntax.located(syntax.if_(syntax.name(stop), [gast.Break()]), loop))
        head = loop.iter.func       # as the user spelled it (the code compiled for
        marks.PRIM.put(head, checkpointed)    # `trace` runs it)
        loop.iter = syntax.located(syntax.call(head, [steps, snapshots]), loop.iter)

    def arguments(self, call):
        """The `steps` and `snapshots` of `s2sad.checkpointed(steps, snapshots)`."""
        values = list(call.args) + [None] * (2 - len(call.args))
        for k in call.keywords:
            if k.arg in ("steps", "snapshots"):
                values[("steps", "snapshots").index(k.arg)] = k.value
        if len(call.args) > 2 or any(isinstance(a, gast.Starred) for a in call.args) or (
                any(k.arg not in ("steps", "snapshots") for k in call.keywords)) or (
                None in values):
            raise self.src.syntax_error(call, "write a checkpointed loop as `for i in "
                                        "s2sad.checkpointed(range(n), snapshots=k):`")
        return values

    def refuse_returns(self, loop):
        inside = syntax.walk(syntax.if_(syntax.const(True), loop.body))
        for n in [n for n in inside if isinstance(n, gast.Return)]:
            raise self.src.syntax_error(
                n, "`return` in a checkpointed loop is not supported: the loop's body is "
                   "a step of its state. Set a flag and `break`, and return after the loop")

    def stop_flag(self, loop):
        """The name of the flag the step function returns with its state when the body
        has a `break` of its own (the loop then stops when the step says so, and its
        gradient follows an online schedule); None without."""
        if not any(isinstance(n, gast.Break) for n in _own(loop.body)):
            return None
        taken = set(syntax.names_stored(self.fn)) | set(syntax.names_loaded(self.fn)) | set(
            self.src.free_values())
        return next(c for c in ["stop"] + [f"stop_{k}" for k in range(1, len(taken) + 2)]
                    if c not in taken)

    def state(self, loop, block):
        """(state, reads, mutated): the names the body carries from one step to the next
        or to the code after the loop; the names of the function it only reads; the
        state it changes in place (`a[i] = v`, `a += v`)."""
        body, target = loop.body, loop.target.id
        assigned = _assigned(body)
        after = _exposed(loop.orelse + _continuation(self.fn.body, loop), set())
        exposed = _exposed(body, {target})
        state = [n for n in assigned if n != target and (n in after or n in exposed)]
        local = ({a.id for a in _params(self.fn)}
                 | set(syntax.names_stored(syntax.if_(syntax.const(True), self.fn.body))))
        reads = [n for n in dict.fromkeys(syntax.names_loaded(
            syntax.if_(syntax.const(True), body))) if n in local and n not in assigned
            and n != target]
        before = _bound_before(self.fn, loop)
        for n in state:
            if n not in before:
                node = next(x for x in syntax.walk(syntax.if_(syntax.const(True), body))
                            if isinstance(x, gast.Name) and x.id == n)
                raise self.src.syntax_error(
                    node, f"{n!r} is carried by the checkpointed loop (the loop assigns it, "
                          f"and reads it or the code after the loop does) but has no value "
                          f"before the loop; give it one before the loop")
        return state, reads, [n for n in _mutated(body) if n in state]

    def step_function(self, loop, state, reads, mutated, stop):
        """The body of `loop` as a Python function of its index, state and reads (made
        once per loop of a function); with a `stop` flag, it returns its state and
        whether the step ended with a `break`."""
        made = _steps.setdefault(self.src.fn, {})
        key = (loop.lineno, loop.col_offset, *sorted(self.src.refused))
        if key in made:
            return made[key]
        names = set(syntax.names_stored(self.fn)) | set(self.src.free_values())
        name = next(c for c in [f"{self.src.name}_step"] + [
            f"{self.src.name}_step_{k}" for k in range(1, len(names) + 2)] if c not in names)
        result = (syntax.name(state[0]) if len(state) == 1 and not stop
                  else syntax.tuple_([syntax.name(n) for n in state]))
        if stop:
            broke = syntax.tuple_([syntax.name(n) for n in state] + [syntax.const(True)])
            result.elts.append(syntax.const(False))
        body = _continues_return(syntax.copied(loop.body), result,
                                 broke if stop else None)
        body.append(syntax.located(syntax.ret(syntax.copied(result)), loop))
        node = syntax.located(syntax.function(name, [loop.target.id] + state + reads, body),
                              loop)
        bindings = {}
        code = self.src.fn.__code__
        for var, cell in zip(code.co_freevars, self.src.fn.__closure__ or ()):
            try:
                bindings[var] = cell.cell_contents
            except ValueError:
                pass
        for n in syntax.walk(node):     # the lifted functions it calls
            if isinstance(n, gast.Name) and marks.LIFTED.of(n):
                bindings[n.id] = marks.PRIM.of(n)
        bindings.update(deferred.bindings(self.src))    # (a refusal in its body, deferred)
        filename = (f"<s2sad: {name}, the checkpointed loop at line {self.src.lineno(loop)} "
                    f"of {self.src.fn.__qualname__} in {self.src.filename}>")
        step = emit.compile_functions([syntax.copied(node)], bindings, self.src.fn,
                                      filename)[0]
        step.__qualname__ = f"{self.src.fn.__qualname__}.<locals>.{name}"
        marks.RECORD.put(step, LoopBody(node, self.src, ([loop.target.id] + state + reads, []),
                                        state, mutated, stop))
        made[key] = step
        return step


class LoopBody(Lifted):
    """Where a checkpointed loop's step function comes from (see lift.Lifted); `state`
    are its parameters that it returns, `mutated` those it changes in place, `stop` the
    flag it returns after them when the loop's body has a `break` (or None)."""

    def __init__(self, node, src, signature, state, mutated, stop=None):
        super().__init__(node, src, signature)
        self.state, self.mutated, self.stop = state, mutated, stop

    def describe(self):
        return (f"the body of the checkpointed loop at line {self.src.lineno(self.node)} of "
                f"{self.src.name}, a step of its state ({', '.join(self.state)})")


def _own(stmts):
    """The nodes of `stmts`, not inside the loops nested in them."""
    todo = list(stmts)
    while todo:
        n = todo.pop()
        yield n
        if isinstance(n, (gast.For, gast.While)):
            todo.extend(n.orelse)
            continue
        todo.extend(gast.iter_child_nodes(n))


def _continues_return(stmts, result, broke=None):
    """`stmts` with each `continue` of theirs (not of a nested loop) a `return result`,
    and each `break` a `return broke`."""
    out = []
    for s in stmts:
        if isinstance(s, gast.Continue):
            s = syntax.located(syntax.ret(syntax.copied(result)), s)
        elif isinstance(s, gast.Break):
            s = syntax.located(syntax.ret(syntax.copied(broke)), s)
        elif not isinstance(s, (gast.For, gast.While)):
            for field in ("body", "orelse", "finalbody"):
                if isinstance(getattr(s, field, None), list):
                    setattr(s, field, _continues_return(getattr(s, field), result, broke))
            for handler in getattr(s, "handlers", []):
                handler.body = _continues_return(handler.body, result, broke)
        out.append(s)
    return out


def _assigned(stmts):
    """The names `stmts` bind or change in place, in order (not comprehension targets)."""
    tree = syntax.if_(syntax.const(True), stmts)
    inner = {id(n) for c in syntax.walk(tree) if isinstance(c, gast.comprehension)
             for n in syntax.walk(c.target)}
    names = [n.id for n in syntax.walk(tree) if isinstance(n, gast.Name)
             and not isinstance(n.ctx, gast.Load) and id(n) not in inner]
    return list(dict.fromkeys(names + _mutated(stmts)))


def _mutated(stmts):
    """The names `stmts` change in place: `a[i] = v`, `a.f = v`, `a += v`, `a.append(v)`."""
    out = []
    for n in syntax.walk(syntax.if_(syntax.const(True), stmts)):
        targets = (n.targets if isinstance(n, gast.Assign) else
                   [n.target] if isinstance(n, (gast.AugAssign, gast.AnnAssign)) else [])
        for t in targets:
            if isinstance(n, gast.AugAssign) and isinstance(t, gast.Name):
                out.append(t.id)
            while isinstance(t, (gast.Subscript, gast.Attribute)):
                t = t.value
                if isinstance(t, gast.Name):
                    out.append(t.id)
        if (isinstance(n, gast.Call) and isinstance(n.func, gast.Attribute)
                and n.func.attr in MUTATORS):
            root = syntax.receiver_root(n.func.value)
            if root:
                out.append(root)
    return list(dict.fromkeys(out))


def _exposed(stmts, bound):
    """The names `stmts` may read before assigning them (`bound`: assigned so far); a
    change in place (`a += v`, `a[i] = v`) is not an assignment."""
    return exposed(stmts, bound, lambda s: set(syntax.names_stored(s)) - set(_mutated([s])))


def _continuation(stmts, loop):
    """The statements that may run after `loop` (in `stmts`), in order; an enclosing
    loop whole (its next iteration)."""
    for i, s in enumerate(stmts):
        if s is loop:
            return stmts[i + 1:]
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(s, field, None)
            if isinstance(inner, list) and any(x is loop for x in syntax.walk(
                    syntax.if_(syntax.const(True), inner))):
                rest = _continuation(inner, loop)
                again = [s] if isinstance(s, (gast.For, gast.While)) else []
                return rest + again + stmts[i + 1:]
    return []


def _bound_before(fn, loop):
    """The names certainly or possibly bound when `loop` starts: the parameters, those
    assigned on a line before it, and those of the loops around it."""
    out = {a.id for a in _params(fn)}
    for s in syntax.walk(fn):
        if isinstance(s, (gast.For, gast.While)) and s is not loop and any(
                x is loop for x in syntax.walk(s)):
            out |= set(syntax.names_stored(s))
        elif isinstance(s, gast.Name) and not isinstance(s.ctx, gast.Load) and (
                getattr(s, "lineno", 0) < loop.lineno):
            out.add(s.id)
    return out


def _params(fn):
    args = fn.args
    return args.posonlyargs + args.args + args.kwonlyargs
