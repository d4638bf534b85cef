"""The recording behind `s2sad.trace`: instrument a function (its Wengert form, its
pullback or its forward-mode `f_jvp`) so that it reports every value it assigns, with
the loop counters, to a `Recorder`; and compile the instrumented function.

`Forward` instruments the Wengert form (one row per assignment), `Backward` the
pullback (the `_bar` adjoints, and those bound when each reversed iteration starts),
`Tangents` the forward-mode derivative (the `_dot` tangents). Matching what is recorded
to the rows of the table is left to `s2sad.trace`, and rendering to `s2sad.trace_tables`;
this module imports neither.
"""
import copy
import itertools

import gast
import numpy as np

from . import emit, marks, syntax
from .rules import runtime

__all__ = ["Recorder", "Forward", "Backward", "Tangents", "snapshot", "loops_preorder",
           "fresh_name", "closure_values", "wengert_bindings", "compile_instrumented"]

_filenames = itertools.count()


def snapshot(v):
    """A copy of `v` that later in-place changes cannot reach."""
    if isinstance(v, np.ndarray):
        return v.copy()
    if isinstance(v, (list, dict, set)):
        try:
            return copy.deepcopy(v)
        except Exception:
            return copy.copy(v)
    return v


class Recorder:
    """Called from instrumented code: loop counters and recorded values."""

    def __init__(self):
        self.path = []
        self.events = []          # values: (row id, path, value)
        self.starts = {}          # adjoints: path -> {name: value} at a reversed iteration
        self.nudge = None         # (row id, path, h): add h to that value (for checks)

    def key(self):
        return tuple((loop, k) for loop, k in self.path)

    def enter(self, loop):
        self.path.append([loop, -1])

    def step(self):
        self.path[-1][1] += 1

    def leave(self):
        self.path.pop()

    def value(self, row, v):
        key = self.key()
        self.events.append((row, key, snapshot(v)))
        if self.nudge is not None and self.nudge[:2] == (row, key):
            return v + self.nudge[2]
        return v

    def reversed_loop(self, loop, iterable):
        """Iterate a pullback loop, numbering each trip by the forward iteration it
        reverses (the last one first)."""
        items = list(iterable)
        self.path.append([loop, None])
        for k, item in enumerate(items):
            self.path[-1][1] = len(items) - 1 - k
            yield item
        self.path.pop()

    def start(self, scope, names):
        """At the start of a reversed iteration: the adjoints bound so far."""
        self.starts[self.key()] = {primal: snapshot(scope[bar]) for bar, primal in
                                   names.items() if bar in scope}


def _call(recorder, method, *args):
    return syntax.expr_stmt(syntax.call(syntax.attribute(recorder, method), list(args)))


def _stmt_source(s):
    return emit.to_source(s).strip()


def _op_source(s):
    """The operation of Wengert statement `s`, in source form."""
    call = s.value
    prim = marks.PRIM.of(getattr(call, "func", None))
    name = getattr(prim, "__name__", None)
    target = _stmt_source(s.targets[0])
    args = [_stmt_source(a) for a in getattr(call, "args", [])]
    if name == "setitem" and len(args) == 3:
        index = _stmt_source(marks.INDEX.of(call)) if marks.INDEX.has(call) else args[1]
        return f"{target} = {args[0]} with [{index}] = {args[2]}"
    if name == "append" and len(args) == 2:
        return f"{target} = {args[0]} + [{args[1]}]"
    return _stmt_source(s)


def _loop_header(s):
    if isinstance(s, gast.For):
        return f"for {_stmt_source(s.target)} in {_stmt_source(s.iter)}"
    return f"while {_stmt_source(s.test)}"


def loops_preorder(stmts, out=None):
    out = [] if out is None else out
    for s in stmts:
        if isinstance(s, (gast.For, gast.While)):
            out.append(s)
        if isinstance(s, (gast.For, gast.While, gast.If)):
            loops_preorder(s.body, out)
            loops_preorder(s.orelse, out)
    return out


class Forward:
    """Instrument a Wengert function: record every assignment and count iterations."""

    def __init__(self, recorder):
        self.rec = recorder
        self.rows = []            # (variable, operation, kind)
        self.loops = []           # headers

    def row(self, variable, operation, kind):
        self.rows.append((variable, operation, kind))
        return len(self.rows) - 1

    def record(self, variable, operation, kind):
        """`v = recorder.value(row, v)`: records `v` (and lets a check perturb it)."""
        call = syntax.call(syntax.attribute(self.rec, "value"), [
            syntax.const(self.row(variable, operation, kind)), syntax.name(variable)])
        return syntax.assign(variable, call)

    def run(self, fn):
        params = [a.id for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs]
        head = [self.record(p, "input", "input") for p in params]
        fn.body = head + self.block(fn.body)
        return fn

    def block(self, stmts):
        out = []
        for s in stmts:
            if marks.MARKER.of(s):
                continue      # a path-end marker: it would print as a lone comment
            if isinstance(s, gast.Assign):
                out.append(s)
                kind = "carried" if marks.PHI.of(s) else "op"
                op = _op_source(s)
                for n in syntax.names_stored(gast.Module(body=s.targets, type_ignores=[])):
                    out.append(self.record(n, op, kind))
            elif isinstance(s, gast.If):
                s.body = self.block(s.body)
                s.orelse = self.block(s.orelse)
                out.append(s)
            elif isinstance(s, (gast.For, gast.While)):
                loop = len(self.loops)
                self.loops.append(_loop_header(s))
                body = [_call(self.rec, "step")]
                if isinstance(s, gast.For):
                    header = self.loops[-1]
                    body += [self.record(n, header, "loop") for n in syntax.names_stored(s.target)]
                s.body = body + self.block(s.body)
                s.orelse = self.block(s.orelse)
                out += [_call(self.rec, "enter", syntax.const(loop)), s, _call(self.rec, "leave")]
            else:
                out.append(s)
        return out


class Backward:
    """Instrument a pullback: record each assignment to an adjoint, and the adjoints
    bound when each reversed iteration starts."""

    def __init__(self, recorder, adjoints, loop_ids, locals_name):
        self.rec = recorder
        self.primal_of = {bar: primal for primal, bar in adjoints.items()}
        self.loop_ids = loop_ids
        self.locals_name = locals_name
        self.names = syntax.const(None)

    def run(self, pullback):
        self.names = gast.Dict(keys=[syntax.const(b) for b in sorted(self.primal_of)],
                               values=[syntax.const(self.primal_of[b])
                                       for b in sorted(self.primal_of)])
        seed = pullback.args.args[0].id
        head = self.records(seed)
        pullback.body = head + self.block(pullback.body)
        return pullback

    def records(self, bar):
        if bar not in self.primal_of:
            return []
        return [_call(self.rec, "value", syntax.const(self.primal_of[bar]), syntax.name(bar))]

    def block(self, stmts):
        out = []
        for s in stmts:
            if isinstance(s, gast.Assign):
                out.append(s)
                for n in syntax.names_stored(gast.Module(body=s.targets, type_ignores=[])):
                    out += self.records(n)
            elif isinstance(s, gast.If):
                s.body = self.block(s.body)
                s.orelse = self.block(s.orelse)
                out.append(s)
            elif isinstance(s, gast.For):
                loop = self.loop_ids.get(id(s), ("unmatched", id(s)))
                s.iter = syntax.call(syntax.attribute(self.rec, "reversed_loop"),
                                    [syntax.const(loop), s.iter])
                start = _call(self.rec, "start", syntax.call(self.locals_name),
                              copy.deepcopy(self.names))
                s.body = [start] + self.block(s.body)
                out.append(s)
            elif isinstance(s, gast.While):
                s.body = self.block(s.body)
                out.append(s)
            else:
                out.append(s)
        return out


class Tangents:
    """Instrument a forward-mode `f_jvp`: record each assignment to a tangent, with the
    loop counters of the Wengert form (the loops keep their shape)."""

    def __init__(self, recorder, dots):
        self.rec = recorder
        self.primal_of = {dot: primal for primal, dot in dots.items()}
        self.loops = 0

    def records(self, names):
        return [_call(self.rec, "value", syntax.const(self.primal_of[n]), syntax.name(n))
                for n in names if n in self.primal_of]

    def block(self, stmts):
        out = []
        for s in stmts:
            if isinstance(s, gast.Assign):
                out.append(s)
                out += self.records(syntax.names_stored(gast.Module(body=s.targets,
                                                                   type_ignores=[])))
            elif isinstance(s, gast.If):
                s.body = self.block(s.body)
                s.orelse = self.block(s.orelse)
                out.append(s)
            elif isinstance(s, (gast.For, gast.While)):
                loop = self.loops
                self.loops += 1
                head = [_call(self.rec, "step")]
                if isinstance(s, gast.For):
                    head += self.records(syntax.names_stored(s.target))
                s.body = head + self.block(s.body)
                s.orelse = self.block(s.orelse)
                out += [_call(self.rec, "enter", syntax.const(loop)), s, _call(self.rec, "leave")]
            else:
                out.append(s)
        return out


def fresh_name(base, taken):
    """`base`, or `base_1`, `base_2`, ...: the first not in `taken` (which it joins)."""
    name, k = base, 0
    while name in taken:
        k += 1
        name = f"{base}_{k}"
    taken.add(name)
    return name


def closure_values(src):
    """The values of the user's function's closure cells, by name."""
    out = {}
    code = src.fn.__code__
    for var, cell in zip(code.co_freevars, src.fn.__closure__ or ()):
        try:
            out[var] = cell.cell_contents
        except ValueError:   # a cell not filled yet
            pass
    return out


def wengert_bindings(src, tree):
    """Closure values of the user's function, and the runtime helpers the Wengert form
    calls (`_s2s_setitem`, ...)."""
    bindings = closure_values(src)
    for n in gast.walk(tree):
        prim = marks.PRIM.of(n)
        if isinstance(n, gast.Name) and marks.LIFTED.of(n):
            bindings.setdefault(n.id, prim)
        elif isinstance(n, gast.Name) and n.id.startswith("_s2s_"):
            obj = prim if prim is not None else getattr(runtime, n.id[5:], None)
            if obj is not None:
                bindings.setdefault(n.id, obj)
    return bindings


def compile_instrumented(node, bindings, src, what):
    """The function `node` (instrumented code of `src`, for the pass `what`), compiled
    with the user's globals and `bindings`; its file name says what it is."""
    filename = f"<s2sad trace {what} {next(_filenames)}: {node.name}, from " \
               f"{src.filename}:{src.first_line}>"
    fn, _ = emit.compile_function(node, bindings, src.fn, filename)
    return fn
