"""The compiler's passes in order: the lists below are the whole compiler.

Every pass is `run(fn, ctx) -> fn` over a gast function and the `Compilation` context
(s2sad.compilation). `s2sad show --stage NAME` stops after any pass of these lists, and
`--stage list` prints them; `compilation` runs a list, which the driver
(s2sad.driver) does for each derivative it compiles.

>>> from s2sad import pipeline
>>> [p.name for p in pipeline.FORWARD_MODE]  # doctest: +NORMALIZE_WHITESPACE
['star_forms', 'array_namespaces', 'builtin_calls', 'lift', 'checkpointed_loops', 'write_calls', 'desugar',
 'wengert',
 'resolve_calls', 'record_fields', 'attribute_writes', 'aliasing', 'complex_values',
 'unread_factors', 'lost_derivatives', 'common_subexpressions', 'hoist_invariants', 'forward', 'tangent_only',
 'inline_temporaries', 'write_in_place', 'tangents_late', 'insert_dels', 'guard',
 'guard_bindings', 'enclose']
"""
from __future__ import annotations

import dataclasses
import functools
import traceback
from typing import Callable

import gast

from . import emit, syntax
from .ad import (
    batching, forward_mode, fused, header, prune_tapes, reverse_mode, shape_stand_ins, tangent_only,
    write_in_place)
from .compilation import Compilation, Pass, Wrt
from .options import Options, Variant
from .errors import InternalError, S2SADError
from .frontend import deferred, source
from .backends import BY_NAME, NUMBA, PYTHON, Backend
from .before_ad import (
    aliasing, array_namespaces, attribute_writes, builtin_calls, callee_effects, checkpointed_loops, common_subexpressions,
    complex_values, desugar, hoist_invariants, lift, lost_derivatives, record_fields,
    resolve_calls, star_forms, unread_factors, wengert, write_calls)
from .after_ad import (
    combine_terms, distinct_results, element_adjoints, enclose, guard, guard_bindings,
    guard_patterns, inline_helpers, inline_temporaries, insert_dels, optimize, peephole,
    reuse_buffers, tangents_late, tuple_adjoints)


# -- when a pass runs (see Pass.when) ----------------------------------------------------
def release(ctx):
    """The code reuses memory (`grad`, `value_and_grad`, `jvp`, a checkpointed loop's
    step)."""
    return ctx.options.release


def fused_variant(ctx):
    """The derivative is a fused gradient."""
    return ctx.variant.fused


def shape_guarded(ctx):
    """A fused gradient whose guard tests the shape patterns it is specialised on."""
    return ctx.variant.fused and ctx.options.guard and bool(ctx.patterns)


def guarded(ctx):
    """The derivative starts by checking the types of its arguments."""
    return ctx.options.guard


def bindings_guarded(ctx):
    """The API calls the derivative itself, and its guard tests what the compilation
    resolved too."""
    return ctx.options.guard and ctx.options.guard_bindings and ctx.variant.called


def tangent_alone(ctx):
    """The forward mode returns the tangent alone (`hvp`)."""
    return ctx.variant is Variant.TANGENT


def users_code(ctx):
    """The function is the user's, not s2sad's own code differentiated again (which
    writes in place only where no other name sees the write)."""
    return not source.is_generated(ctx.src)


def subexpressions_kept(ctx):
    """The compiler of the code keeps common subexpressions (Numba's, LLVM, merges them
    itself: the terms a reversed loop adds into an array's element stay apart for
    native_tapes)."""
    return not ctx.can.merges_subexpressions


def ndarrays(ctx):
    """The array arguments are NumPy's (not a library's that NumPy dispatches to, see
    Compilation.duck_arrays)."""
    return not ctx.duck_arrays


#: Before differentiation: from the user's function to Wengert form. (The front end,
#: which reads the source and refuses unsupported syntax, makes the `Compilation`.)
FRONT = [
    Pass("star_forms", star_forms.run, "starred targets as items and slices, elements in "
         "tuple targets one by one, *xs in calls and displays as its items where their "
         "number is known"),
    Pass("array_namespaces", array_namespaces.run, "SciPy's array-API calls `xp.f(...)` of "
         "`xp = array_namespace(...)` as NumPy's `np.f(...)`, the namespace checked"),
    Pass("builtin_calls", builtin_calls.run, "map and filter where consumed as generator "
         "expressions, max/min/sorted with key= and of one sequence as indexing, divmod as "
         "a pair, functools.reduce as a loop, np.vectorize calls as the loop NumPy runs"),
    Pass("lift", lift.run, "nested functions and lambdas become functions of their own"),
    Pass("checkpointed_loops", checkpointed_loops.run, "the body of a loop over "
         "s2sad.checkpointed(...) a step function of the loop state"),
    Pass("write_calls", write_calls.run, "calls that write into an array they are given "
         "(out=, np.copyto, np.fill_diagonal, y.fill) as element assignments, "
         "setattr(obj, 'name', v) as obj.name = v"),
    Pass("desugar", desugar.run, "comprehensions, augmented and multiple assignment, "
         ":=, and/or values as ifs, loops over sequences as loops over indexes, loop "
         "else, early returns, jumps; del and global dropped, the bodies of with and try "
         "kept"),
    Pass("wengert", wengert.run, "one primitive operation per statement, SSA names"),
    Pass("resolve_calls", resolve_calls.run, "calls of methods, partials and function "
         "values made direct, arguments by position", invalidates=True),
    Pass("record_fields", record_fields.run, "the fields a dataclass parameter is only "
         "read for, read once at the top", invalidates=True),
    Pass("attribute_writes", attribute_writes.run, "calls of functions that change "
         "attributes of the objects they are given as calls of versions that return them, "
         "rebound (the passes run again from the first)"),
    Pass("aliasing", aliasing.run, "refuse a read, after a write, of another name for "
         "the memory written (a view, an alias)", when=users_code),
    Pass("complex_values", complex_values.run, "complex values meeting differentiated "
         "ones through the rules that take them, refused at others; those of unknown type "
         "checked at run time", invalidates=True),
    Pass("unread_factors", unread_factors.run, "a factorization whose vectors are not "
         "read (`w, v = np.linalg.eigh(a)`, v unread) computes its values alone, whose "
         "rules derive no vectors", invalidates=True),
    Pass("lost_derivatives", lost_derivatives.run, "refuse writes into arrays through "
         "calls, calls of library functions without a rule that may change what they are "
         "given, and differentiated values passed where a rule has no derivative"),
    Pass("common_subexpressions", common_subexpressions.run, "a number computed again "
         "from the same values (`u[i]` twice) computed once", when=subexpressions_kept,
         invalidates=True),
    Pass("hoist_invariants", hoist_invariants.run, "arithmetic on numbers, and views "
         "of arrays, that a loop does not change, computed once before it"),
]

#: Last in each list (before the header): the code from a `with` or `try` body enclosed in
#: it again.
ENCLOSE = Pass("enclose", enclose.run, "the code from the body of a with or try block "
               "runs in that block again (a try reports the exception path)")

#: Last of a reverse-mode derivative, after the backend's passes too: the header, written
#: from what the code as it is reads.
HEADER = Pass("header", header.run, "comments: what is differentiated, what the pullback "
              "reads, which rules")

#: In the derivatives the API calls directly: the guard also tests that what the
#: compilation resolved is unchanged.
GUARD_BINDINGS = Pass("guard_bindings", guard_bindings.run, "the guard also tests the "
                      "globals, attributes, code, defaults and closure values the "
                      "compilation resolved", when=bindings_guarded)

#: Reverse mode: `f_vjp(x) -> (y, f_pullback)`, what `vjp` runs.
REVERSE_MODE = FRONT + [
    Pass("reverse", reverse_mode.run, "forward pass with per-loop tapes, and the "
         "pullback closure"),
    Pass("optimize", optimize.run, "coalesce copies, propagate adjoint copies, fuse "
         "accumulations, `# grad of:` comments"),
    Pass("tuple_adjoints", tuple_adjoints.run, "the adjoint of a tuple of known items "
         "summed from its items' adjoints written as a tuple display"),
    Pass("element_adjoints", element_adjoints.run, "a reversed loop updates in place "
         "the adjoints of arrays it reads or writes element by element", when=ndarrays),
    Pass("prune_tapes", prune_tapes.run, "tapes drop what the reversed loops "
         "no longer read"),
    Pass("shape_stand_ins", shape_stand_ins.run, "a helper that needs only a value's "
         "shape reads a parameter of that shape the pullback reads anyway"),
    Pass("distinct_results", distinct_results.run, "gradients that could share "
         "memory are returned as copies"),
    Pass("inline_temporaries", inline_temporaries.run, "the forward pass's "
         "temporaries of numbers go back into their one use"),
    ENCLOSE,
    HEADER,
]

#: The fused gradient: `f_grad` (`grad`), `f_value_and_grad` or `f_adjoint`. The passes
#: marked (release) run for `grad` and `value_and_grad`, which reuse memory.
FUSED_GRADIENT = REVERSE_MODE[:-2] + [
    Pass("fuse", fused.run, "forward pass and pullback in one function, the seed "
         "folded in", when=fused_variant),
    Pass("inline_helpers", inline_helpers.run, "(release) the adjoints of broadcasting "
         "and matrix products as plain NumPy where the shape patterns are known",
         when=release),
    Pass("combine_terms", combine_terms.run, "(release) the terms added into one slice "
         "of an adjoint as one polynomial, with the fewest operations", when=release),
    Pass("reuse_buffers", reuse_buffers.run, "(release) elementwise results computed "
         "into the buffers of dead temporaries", when=release),
    Pass("peephole", peephole.run, "(release) one name per view, no products by 1, "
         "slice updates through named views, no needless copies or zeros helpers, "
         "products summed down to a shape as contractions", when=release),
    Pass("insert_dels", insert_dels.run, "(release) each array deleted after its last "
         "use", when=release),
    Pass("guard_patterns", guard_patterns.run, "the guard also tests the shape "
         "patterns and dtypes the code relies on", when=shape_guarded),
    GUARD_BINDINGS,
    ENCLOSE,
    HEADER,
]

#: The fused gradient as code Numba compiles (`backend="numba"`, without the guard): the
#: Numba backend's passes after enclose, then the header.
NUMBA_GRADIENT = FUSED_GRADIENT[:-1] + list(NUMBA.passes) + [HEADER]

#: Forward mode: `f_jvp(x, x_dot) -> (y, y_dot)`.
FORWARD_MODE = FRONT + [
    Pass("forward", forward_mode.run, "each statement, then its tangent"),
    Pass("tangent_only", tangent_only.run, "(for hvp) the tangent alone, "
         "without the statements only the value needs", when=tangent_alone),
    Pass("inline_temporaries", inline_temporaries.run, "the temporaries of numbers "
         "go back into their one use"),
    Pass("write_in_place", write_in_place.run, "element writes into arrays the "
         "function made, in place"),
    Pass("tangents_late", tangents_late.run, "(release) each tangent computed "
         "just before its first use in straight-line code", when=release),
    Pass("insert_dels", insert_dels.run, "(release) each array deleted after its last "
         "use", when=release),
    Pass("guard", guard.run, "(for jvp) check the argument types first",
         when=guarded),
    GUARD_BINDINGS,
    ENCLOSE,
]

#: Forward mode as code Numba compiles (`jvp(..., backend="numba")`, without the guard):
#: there is no tape, so native_tapes only writes the helpers of numbers as numbers. Over the
#: code of NUMBA_GRADIENT (its tapes arrays), it is `hvp` and `hessian` with
#: `backend="numba"` (numba_api.gradient_jvp).
NUMBA_FORWARD = FORWARD_MODE + list(NUMBA.passes)

#: Batching: `f_batched(x, ...)`, the function over a batch of its arguments (`vmap`). The
#: front end's passes but those about derivatives, then the transform.
BATCHED = [p for p in FRONT if p.name not in ("complex_values", "lost_derivatives")] + [
    Pass("batching", batching.run, "each statement on values with a batch axis by its "
         "primitive's batching rule"),
    Pass("inline_temporaries", inline_temporaries.run, "the temporaries of numbers "
         "go back into their one use"),
]

LISTS = {"reverse mode": REVERSE_MODE, "fused gradient": FUSED_GRADIENT,
         "numba gradient": NUMBA_GRADIENT, "forward mode": FORWARD_MODE,
         "numba forward mode": NUMBA_FORWARD, "batched": BATCHED}


def described() -> str:
    """The pass lists as text (what `s2sad show --stage list` prints)."""
    lines = []
    for title, passes in LISTS.items():
        lines.append(f"{title}:")
        new = {"fused gradient": passes[len(REVERSE_MODE) - 2:],
               "numba gradient": passes[len(FUSED_GRADIENT) - 1:],
               "numba forward mode": passes[len(FORWARD_MODE):],
               "batched": passes[-2:]}.get(title, passes)
        if title == "fused gradient":
            lines.append("  (the reverse-mode passes up to inline_temporaries, then)")
        if title == "numba gradient":
            lines.append("  (the fused gradient's passes up to enclose, then)")
        if title == "numba forward mode":
            lines.append("  (the forward-mode passes, then)")
        if title == "batched":
            lines.append("  (the passes before AD but complex_values and lost_derivatives, "
                         "then)")
        lines += [f"  {p.name:<22}{p.does}" for p in new]
    return "\n".join(lines)


def stage_names(mode: str = "reverse") -> list[str]:
    """The names `--stage` takes in `mode`."""
    lists = ([NUMBA_FORWARD] if mode == "forward" else [BATCHED] if mode == "batched" else
             [REVERSE_MODE, FUSED_GRADIENT, NUMBA_GRADIENT])
    return list(dict.fromkeys(p.name for passes in lists for p in passes))


# -- running passes ----------------------------------------------------------------------
def reported(run):
    """Report anything but an `S2SADError` escaping the compiler as an `InternalError`."""
    @functools.wraps(run)
    def reported(fn, *args, **kwargs):
        try:
            return run(fn, *args, **kwargs)
        except S2SADError:
            raise
        except Exception as exc:
            raise _internal(fn, exc) from exc
    return reported


def _internal(fn, exc):
    frames = traceback.extract_tb(exc.__traceback__)
    frame = ([f for f in frames if "/s2sad/" in f.filename] or frames)[-1]
    where = getattr(fn, "__code__", None)
    origin = f" ({where.co_filename}:{where.co_firstlineno})" if where else ""
    return InternalError(
        f"s2sad failed inside {frame.filename.split('s2sad')[-1]}:{frame.lineno} while "
        f"differentiating {getattr(fn, '__qualname__', fn)}{origin}: "
        f"{type(exc).__name__}: {exc}. This is a bug in s2sad; please report it with "
        "the function.")


def passes_for(variant: Variant, backend: Backend = PYTHON) -> list[Pass]:
    """The passes that make a derivative of `variant` with `backend`: those of the list
    of `variant`, then the backend's (before the header, which is written last, from the
    code as it is)."""
    passes = (FORWARD_MODE if variant.forward else FUSED_GRADIENT if variant.fused
              else BATCHED if variant is Variant.BATCHED else REVERSE_MODE)
    if not backend.passes:
        return passes
    if passes[-1] is HEADER:
        return passes[:-1] + list(backend.passes) + [HEADER]
    return passes + list(backend.passes)


@reported
def compilation(fn: Callable, wrt: Wrt = 0, arg_types: dict | None = None,
                options: Options = Options(), until: str | None = None,
                passes: list[Pass] | None = None,
                backend: Backend = PYTHON) -> tuple[Compilation, gast.FunctionDef]:
    """`(ctx, node)`: `fn` through `passes` (by default those of `options.variant`, see
    `passes_for`), up to and including the pass named `until` (all of them without it),
    for `wrt`, specialised on `arg_types` (by default `default_arg_types`), with
    `options`, for `backend` (its capabilities `ctx.can`). A refusal of a statement in
    a branch is deferred to the run time of that statement (frontend/deferred.py): the
    function is compiled again with it raising the error there."""
    passes = passes_for(options.variant, backend) if passes is None else passes
    refused = {}
    while True:
        try:
            return _compiled(fn, wrt, arg_types, options, until, passes, backend, refused)
        except S2SADError as exc:
            line = deferred.deferred_line(exc, fn, refused)
            if line is None and refused and isinstance(exc, InternalError):
                raise next(iter(refused.values())) from None    # (see below)
            if line is None:
                raise
            refused[line] = exc         # (that branch raises it: compiled again)
        except Exception:
            if refused:     # what s2sad cannot compile with a refusal deferred, it refuses
                raise next(iter(refused.values())) from None
            raise


def _compiled(fn, wrt, arg_types, options, until, passes, backend, refused):
    """`(ctx, node)` of `compilation`, the statements of `refused` ({line: error})
    raising their errors (frontend/deferred.py)."""
    ctx = Compilation.of(fn, wrt, arg_types, options, refused, can=backend.can)
    ctx.front_end, ctx.returns = _front_end, _returned_kind
    ctx.adjoint_code = functools.partial(_adjoint_code, backend, options.jit)
    if until is not None and until not in [p.name for p in passes]:
        raise S2SADError(f"no pass is called {until!r}; the passes are "
                         + ", ".join(p.name for p in passes))
    node, k = syntax.copied(ctx.src.node), 0
    while k < len(passes):
        p, k = passes[k], k + 1
        if p.when is None or p.when(ctx):
            ctx.rewrote = False
            try:
                node = p.run(node, ctx)
            except attribute_writes.Restart:    # (ctx.rebound holds calls to rewrite)
                node, k = syntax.copied(ctx.src.node), 0
                ctx.changed()
                continue
            if ctx.rewrote:
                if not p.invalidates:
                    raise InternalError(f"the pass {p.name} rewrote the function in Wengert "
                                        "form, and does not declare that it invalidates "
                                        "its analyses")
                ctx.changed()
        if p.name == until:
            break
    return ctx, node


def _front_end(fn, arg_types, ndims=None):
    """`(ctx, node)`: `fn`, a function another one calls, through the passes before the
    aliasing pass (to `resolve_calls`), specialised on `arg_types` (and on the numbers of
    axes `ndims`, {parameter: number}, if given), for analyses of the call."""
    axes = tuple(sorted((ndims or {}).items()))
    options = Options(ndims=axes, axes=axes) if ndims else Options()
    return compilation(fn, (), arg_types, options, until="resolve_calls", passes=FRONT)


def _adjoint_code(backend, jit, callee):
    """`(ctx, node)`: the adjoint of `callee` that code of `backend` calls (compiled with
    `jit`), through that backend's passes."""
    return compilation(callee.fn, callee.wrt, callee.arg_types,
                       backend.callee_options(callee, jit), backend=backend)


def _returned_kind(call, kinds, ctx, fn=None, ndims=()):
    """The value kind of what `call`, of a Python function (of `fn`, a method's), returns
    when its arguments are of `kinds` (and of the numbers of axes `ndims`, None where not
    known), and the kinds of a tuple's items: what the aliasing pass's summary of the
    function found."""
    return callee_effects.returned_kind(call, kinds, ctx, aliasing.summary, fn, ndims)


def stage_source(fn: Callable, stage: str | None, wrt: Wrt = 0, arg_types: dict | None = None,
                 mode: str = "reverse", backend: Backend = PYTHON,
                 patterns: dict | None = None) -> str:
    """The source of `fn` after the pass `stage` (see `stage_names`; None: after the
    last): of the reverse-mode list, else of the fused gradient `grad` runs (with
    `backend`, or for a pass a backend adds, the one `grad(f, backend=...)` runs with
    it), or (with `mode="forward"`) of forward mode's (with `backend`, the one
    `jvp(f, ..., backend=...)` runs), or (with `mode="batched"`) of the batched function
    `vmap` runs, batched along `wrt`. `patterns` (see compilation.patterns_of) serve the
    fused gradient's passes, as `grad` specialises on them."""
    backend = next((b for b in BY_NAME.values() if stage in [p.name for p in b.passes]),
                   backend)
    if mode == "batched":       # (`wrt`: the parameters that carry a batch axis)
        ctx, node = compilation(fn, wrt, arg_types, Options(Variant.BATCHED, guard=False),
                                stage, backend=backend)
        return emit.to_source(node)
    variant = (Variant.JVP if mode == "forward" else Variant.VJP if not backend.passes
               and stage in [p.name for p in REVERSE_MODE] else Variant.GRAD)
    options = backend.options(variant)
    if variant is Variant.GRAD and options.release and patterns:
        options = dataclasses.replace(options, patterns=patterns)
    ctx, node = compilation(fn, wrt, arg_types, options, stage, backend=backend)
    lifted = ctx.lifted_defs if stage == "lift" else []
    return "\n".join(emit.to_source(n) for n in lifted + [node])
