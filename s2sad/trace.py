"""Show the work: the evaluation trace of one call, with values, tangents and adjoints.

`s2sad.trace(f, *args)` runs `f` once in Wengert form (one primitive operation per
statement), and once through each of its derivatives, and returns a `Trace`: one row
per Wengert variable, in execution order, loops unrolled (the `iteration` column
counts from 0; nested loops show one count per loop), with the operation that defined
the variable, its value, its tangent (forward mode: its derivative along the input
tangents, by default 1 for the first differentiated input and 0 for the others) and its
adjoint (reverse mode: the derivative of the output with respect to the variable,
seeded with 1.0 at the output).

>>> import math, s2sad
>>> def f(x1, x2):
...     return math.log(x1) + x1 * x2 - math.sin(x2)
>>> print(s2sad.trace(f, 2.0, 5.0))
f(x1=2.0, x2=5.0) = 11.65207146
reverse mode: adjoint = d y / d variable, seeded with y_bar = 1.0
forward mode: tangent = derivative along x1_dot = 1.0, x2_dot = 0.0
variable  operation           value          tangent  adjoint
--------  ------------------  -------------  -------  -----------
x1        input               2.0            1.0      5.5
x2        input               5.0            0.0      1.716337815
t         t = math.log(x1)    0.6931471806   0.5      1.0
t_1       t_1 = x1 * x2       10.0           5.0      1.0
t_2       t_2 = t + t_1       10.69314718    5.5      1.0
t_3       t_3 = math.sin(x2)  -0.9589242747  0.0      -1.0
y         y = t_2 - t_3       11.65207146    5.5      1.0

How it works: the Wengert form is instrumented (a call recording name, value and loop
counters after every assignment) and compiled with the user's globals. Adjoints come
from the unoptimized pullback (the `reverse` stage, which still names the adjoint of
every variable), instrumented the same way: the adjoint of a variable is the last value
its `_bar` name takes in the matching reversed iteration; the adjoint of a loop-carried
variable assigned at the end of an iteration is its `_bar` value when the reversed
iteration starts; the adjoint of an input is what the pullback returns. A blank adjoint
means s2sad computes none: the value does not depend on the differentiated inputs, or
does not reach the output (a symbolic zero). Tangents come from the forward-mode
`f_jvp`, instrumented the same way (and its output tangent is checked against
`s2sad.jvp`). `f` runs once per pass, so it must be deterministic.

This module runs the passes and matches what they record to the rows; the
instrumentation is in `s2sad.trace_recording`, the table and its renderings in
`s2sad.trace_tables`.
"""
from __future__ import annotations

import inspect
import numbers
from typing import Any, Callable

import gast
import numpy as np

from . import driver, forward_api, pipeline
from .compilation import Wrt, arg_types_of, wrt_names
from .errors import S2SADError
from .options import Options, Variant
from .frontend import source
from .rules import runtime
from .trace_recording import (Backward, Forward, Recorder, Tangents, closure_values,
                              compile_instrumented, fresh_name, loops_preorder, snapshot,
                              wengert_bindings)
from .trace_tables import Row, Trace, show_value

__all__ = ["trace", "Trace", "Row"]


def _differentiable(v):
    if isinstance(v, (bool, np.bool_)):
        return False
    if isinstance(v, (numbers.Real, list, tuple, dict)):
        return True
    if isinstance(v, np.ndarray):
        return v.dtype.kind == "f"
    return False


def _seed(y):
    if isinstance(y, (bool, np.bool_)):
        return None
    if isinstance(y, np.ndarray):
        return np.ones_like(y, dtype=float) if y.dtype.kind in "biuf" else None
    if isinstance(y, np.floating):
        return type(y)(1.0)
    if isinstance(y, numbers.Real):
        return 1.0
    return None


def _same(a, b):
    try:
        return bool(np.all(np.asarray(a) == np.asarray(b))) or bool(np.allclose(a, b,
                                                                                 equal_nan=True))
    except Exception:
        return True


def trace(f: Callable, *args: Any, wrt: Wrt | None = None, seed: Any = None,
          adjoints: bool = True, tangents: Any = None, **kwargs: Any) -> Trace:
    """The evaluation trace of `f(*args, **kwargs)`: every Wengert variable with its
    operation, value, tangent and adjoint, in execution order (see the module
    docstring).

    `wrt` (an index, a parameter name, or a tuple of them) chooses the differentiated
    inputs; by default, every positional argument that is a number, a float array or a
    container. `seed` is the adjoint of the output (default 1.0, or ones for an array
    output: then the adjoints are those of the sum of the output). `adjoints=False`
    leaves out the adjoints.

    Where forward mode is available, the tangent column shows each variable's
    derivative (forward mode, `s2sad.jvp`) along `tangents`: a tuple with one tangent
    per `wrt` input, a dict by name, or one tangent for one input. By default it is 1
    (ones) for the first `wrt` input and 0 for the others, so that a tangent is the
    derivative with respect to the first input. `tangents=False` leaves the column
    out; by default it is also left out with `adjoints=False`.

    >>> import s2sad
    >>> def cube(x):
    ...     c = 1.0
    ...     for i in range(3):
    ...         c *= x
    ...     return c
    >>> t = s2sad.trace(cube, 2.0)
    >>> t.value, t.gradient
    (8.0, (12.0,))
    >>> for r in t.find("c_1"):
    ...     print(r.iteration, r.operation, r.value, r.adjoint)
    (0,) c_1 = c * x 2.0 4.0
    (1,) c_1 = c * x 4.0 2.0
    (2,) c_1 = c * x 8.0 1.0
    """
    bound_self = ()
    if inspect.ismethod(f):
        bound_self, f = (f.__self__,), f.__func__
    fn = driver.target(f)
    call_args = bound_self + args
    src = source.capture(fn)
    params = [a.id for a in src.node.args.posonlyargs + src.node.args.args]
    if wrt is None:
        wrt = tuple(params[i + len(bound_self)] for i, a in enumerate(args)
                    if i + len(bound_self) < len(params) and _differentiable(a))
    elif bound_self:
        wrt = tuple(w + 1 if isinstance(w, int) and w >= 0 else w
                    for w in (wrt if isinstance(wrt, (tuple, list)) else (wrt,)))
    differentiated = tuple(wrt_names(src, wrt if isinstance(wrt, (tuple, list))
                                              else (wrt,)))
    names = differentiated if adjoints else ()
    wanted = tangents is not None and tangents is not False

    # values: the instrumented Wengert form
    ctx, node = pipeline.compilation(fn, names, until="wengert")
    src = ctx.src
    taken = {n.id for n in gast.walk(node) if isinstance(n, gast.Name)}
    taken |= set(src.free_values())
    rec_name = fresh_name("_s2s_trace", taken)
    recorder = Recorder()
    forward = Forward(rec_name)
    node = forward.run(node)
    bindings = wengert_bindings(src, node)
    bindings[rec_name] = recorder
    primal = compile_instrumented(node, bindings, src, "values")
    value = primal(*call_args, **kwargs)
    events = list(recorder.events)
    rows = []
    for row_id, path, v in events:
        variable, operation, kind = forward.rows[row_id]
        rows.append(Row(variable, operation, kind, v, iteration=[k for _, k in path],
                        loops=[loop for loop, _ in path]))
    ret = node.body[-1]
    output = ret.value.id if isinstance(ret, gast.Return) and isinstance(
        ret.value, gast.Name) else None
    arguments = list(_arguments(src.fn, call_args, kwargs))
    if bound_self:
        arguments = arguments[1:]

    notes, gradient = [], ()
    if names:
        seed = _seed(value) if seed is None else seed
        if seed is None:
            raise S2SADError(
                f"trace seeds the adjoint of the output with 1.0, but "
                f"{src.name}() returned {type(value).__name__} {show_value(value)}; pass "
                "seed= (an adjoint shaped like the output) or adjoints=False")
        gradient, notes = _adjoints(fn, src, names, call_args, kwargs, seed, rows, value,
                                    forward.loops)
    seeds = None
    if differentiated and (wanted or (tangents is None and names)):
        try:
            seeds = _tangents(fn, differentiated, call_args, kwargs, tangents, rows, value,
                              len(forward.loops), notes)
        except Exception as exc:  # forward mode cannot do this function: say so
            if wanted:
                raise
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            notes.append(f"no tangents: {type(exc).__name__}: {first}")
    result = Trace(src.name, arguments, names, rows, value, output, seed, gradient,
                   forward.loops, notes, seeds)
    result._rerun = (primal, recorder, [(row_id, path) for row_id, path, _ in events],
                     call_args, kwargs)
    return result


def _nudged_output(trace_, index, h):
    """The output of the traced call with `h` added to the value of row `index` where
    it is computed (the values after it are recomputed): a finite-difference check of
    that row's adjoint, for tests."""
    primal, recorder, keys, args, kwargs = trace_._rerun
    row_id, path = keys[index]
    recorder.events, recorder.nudge = [], (row_id, path, h)
    try:
        return primal(*args, **kwargs)
    finally:
        recorder.nudge = None


def _tangents(fn, names, args, kwargs, tangents, rows, value, nloops, notes):
    """Run the instrumented `f_jvp`; fill in `rows`' tangents; return the seeds as
    ((name, tangent), ...)."""
    node = source.capture(fn).node
    positional = dict(zip([a.id for a in node.args.posonlyargs + node.args.args], args))
    if tangents is None:
        tangents = tuple(_filled(positional.get(n, 0.0), 1.0 if k == 0 else 0.0)
                         for k, n in enumerate(names))
    elif isinstance(tangents, dict):
        missing = [n for n in names if n not in tangents]
        if missing:
            raise S2SADError(f"tangents has no entry for {missing}")
        tangents = tuple(tangents[n] for n in names)
    elif not isinstance(tangents, tuple):
        tangents = (tangents,)
    if len(tangents) != len(names):
        raise S2SADError(f"tangents: expected one per differentiated input {list(names)}, "
                         f"got {len(tangents)}")
    ctx, jvp = pipeline.compilation(fn, names, arg_types_of(fn, args), Options(Variant.JVP),
                                    "forward")
    src, helpers = ctx.src, dict(ctx.bindings, **driver.callee_bindings(ctx))
    taken = {n.id for n in gast.walk(jvp) if isinstance(n, gast.Name)}
    taken |= set(src.free_values()) | set(helpers)
    rec_name = fresh_name("_s2s_trace", taken)
    recorder = Recorder()
    instrument = Tangents(rec_name, ctx.forward.dots)
    jvp.body = instrument.block(jvp.body)
    matched = instrument.loops == nloops
    bindings = dict(closure_values(src), **helpers)
    bindings[rec_name] = recorder
    compiled = compile_instrumented(jvp, bindings, src, "tangents")
    y, y_dot = compiled(*args, **kwargs, **dict(zip(ctx.forward.tangent_names, tangents)))
    if not _same(y, value):
        notes.append(f"the tangent pass computed the output {show_value(y)}, not "
                     f"{show_value(value)}: the function is not deterministic")
    found = {}
    for name, path, v in recorder.events:
        found[(name, path if matched else ())] = v
    seeds = dict(zip(names, tangents))
    by_path = {}
    for r in rows:
        path = tuple(zip(r.loops, r.iteration)) if matched else ()
        if r.kind == "input":
            r.tangent = snapshot(seeds[r.variable]) if r.variable in seeds else found.get(
                (r.variable, ()))
        else:
            r.tangent = found.get((r.variable, path))
        by_path.setdefault(path, {})[r.variable] = r
    # forward mode may merge a copy `v = w` into w's definition: the two share a tangent
    for r in rows:
        if r.kind == "carried" and r.operation.count("=") == 1:
            w = r.operation.split("=")[1].strip()
            other = by_path.get(tuple(zip(r.loops, r.iteration)) if matched else (), {}).get(w)
            if other is not None and other.tangent is None and r.tangent is not None:
                other.tangent = r.tangent
            elif other is not None and r.tangent is None and other.tangent is not None:
                r.tangent = other.tangent
    if not _same(y_dot, _output_tangent(fn, args, kwargs, names, tangents, y_dot)):
        notes.append("the tangents disagree with s2sad.jvp")
    return tuple((n, snapshot(t)) for n, t in zip(names, tangents))


def _filled(x, c):
    """A tangent shaped like `x` with every entry `c`."""
    if isinstance(x, np.ndarray):
        return np.full(x.shape, c)
    if isinstance(x, (tuple, list)):
        return type(x)(_filled(v, c) for v in x)
    if isinstance(x, dict):
        return {k: _filled(v, c) for k, v in x.items()}
    return float(c)


def _output_tangent(fn, args, kwargs, names, tangents, fallback):
    """The output tangent `s2sad.jvp` gives (when the inputs are all positional)."""
    node = source.capture(fn).node
    params = [a.id for a in node.args.posonlyargs + node.args.args][:len(args)]
    if set(names) - set(params):
        return fallback
    given = dict(zip(names, tangents))
    full = tuple(given[p] if p in given else runtime.zeros_like(a)
                 for p, a in zip(params, args))
    try:
        return forward_api.jvp(fn, args, full, **kwargs)[1]
    except S2SADError:
        return fallback


def _arguments(fn, args, kwargs):
    try:
        bound = inspect.signature(fn).bind(*args, **kwargs)
        bound.apply_defaults()
        return list(bound.arguments.items())
    except TypeError:
        return [(f"arg{i}", a) for i, a in enumerate(args)] + list(kwargs.items())


def _adjoints(fn, src, names, args, kwargs, seed, rows, value, loops):
    """Run the instrumented pullback; fill in `rows`' adjoints; return the gradient."""
    ctx, vjp = pipeline.compilation(fn, names, arg_types_of(fn, args), until="reverse")
    src, result = ctx.src, ctx.reverse
    helpers = dict(ctx.bindings, **driver.callee_bindings(ctx))
    pullback = result.pullback
    forward_body = [s for s in vjp.body if s is not pullback]
    forward_loops = loops_preorder(forward_body)
    index = {id(loop): i for i, loop in enumerate(forward_loops)}
    loop_ids = {}
    if len(forward_loops) == len(loops):
        for info in result.loops:
            rev_loop = getattr(info, "reversed", None)
            if rev_loop is not None and id(info.loop) in index:
                loop_ids[id(rev_loop)] = index[id(info.loop)]
    taken = {n.id for n in gast.walk(vjp) if isinstance(n, gast.Name)}
    taken |= set(src.free_values()) | set(helpers)
    rec_name = fresh_name("_s2s_trace", taken)
    locals_name = fresh_name("_s2s_locals", taken)
    recorder = Recorder()
    Backward(rec_name, result.adjoints, loop_ids, locals_name).run(pullback)
    bindings = dict(closure_values(src), **helpers)
    bindings[rec_name] = recorder
    bindings[locals_name] = locals
    compiled = compile_instrumented(vjp, bindings, src, "adjoints")
    y, pull = compiled(*args, **kwargs)
    notes = []
    if not _same(y, value):
        notes.append(f"the adjoint pass computed the output {show_value(y)}, not "
                     f"{show_value(value)}: the function is not deterministic, so the "
                     "adjoints may not match the values")
    grads = pull(seed)
    grads = grads if isinstance(grads, tuple) else (grads,)
    params = [a.id for a in src.node.args.posonlyargs + src.node.args.args]
    positional = dict(zip(params, args))
    gradient = tuple(runtime.unbroadcast(g, positional[n]) if n in positional else g
                     for g, n in zip(grads, names))
    by_input = dict(zip(names, gradient))

    # the last value of each adjoint within each (prefix of an) iteration path
    last = {}
    for name, path, v in recorder.events:
        for j in range(len(path) + 1):
            last[(name, path[:j])] = v
    for r in rows:
        path = tuple(zip(r.loops, r.iteration))
        if r.kind == "input":
            r.adjoint = snapshot(by_input.get(r.variable))
        elif r.kind == "carried":
            r.adjoint = recorder.starts.get(path, {}).get(r.variable)
        else:
            r.adjoint = last.get((r.variable, path))
    return gradient, notes
