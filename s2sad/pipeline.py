"""The compiler on one screen: the passes, in order, from a function to its derivative.

    capture   read the source, remember file and absolute lines, resolve free names
    fence     reject unsupported syntax with a located message
    lift      nested functions and lambdas become functions of their own
    desugar   comprehensions, augmented and multiple assignment, loop else, early
              returns, jumps
    wengert   one primitive operation per statement, SSA names
    reverse   forward pass with per-loop tapes, and the pullback closure
    forward   (forward mode, instead of reverse) each statement, then its tangent
    optimize  coalesce copies, propagate adjoint copies, fuse accumulations; then
              the forward pass's temporaries of numbers go back into their one use
    elements  a reversed loop updates the adjoints of arrays it reads or writes
              element by element in place
    fuse      (grad, value_and_grad) forward pass and pullback in one function
    spell     (fused, run by reuse) the adjoints of broadcasting and matrix products
              as plain NumPy where the shape patterns are known
    collect   (fused, run by reuse) the terms added into one slice of an adjoint as
              one polynomial, written with the fewest operations
    reuse     (fused) compute elementwise results into the buffers of dead temporaries,
              and the first contribution to a slice of zeros in that slice
    release   (fused) delete each array after its last use
    emit      gast -> ast -> ast.unparse, compiled with the user's globals, live
"""
import inspect

import numpy as np

from .ad.forward import Forward, prepare
from .ad.reverse import Reverse, fuse, guard_patterns, shapes_from_earliest
from .analysis.shapes import pattern
from .codegen import emit, nodes
from .errors import InternalError, S2SADError
from .frontend import fence, source
from .naming import Namer
from .passes.desugar import Desugar
from .passes.elements import Elements
from .passes.lift import Lift
from .passes.optimize import Optimize, distinct_results, inline_temporaries
from .passes.release import Release
from .passes.reuse import Reuse
from .passes.wengert import Wengert

STAGES = ("lift", "desugar", "wengert", "reverse", "optimize", "forward")


class Derivative:
    """A compiled derivative: the callable and its source."""

    def __init__(self, fn, source_text, filename):
        self.fn = fn
        self.source = source_text
        self.filename = filename
        self.lifted = []    # (function, wrt, kinds) of the lifted functions it calls
        self.unconnected = (None, [])   # (source, differentiated inputs with no effect)


def wrt_names(src, wrt):
    """Parameter names for `wrt` (an index, a name, or a tuple of them)."""
    params = [a.id for a in src.node.args.posonlyargs + src.node.args.args]
    items = wrt if isinstance(wrt, (tuple, list)) else (wrt,)
    out = []
    for w in items:
        if isinstance(w, bool) or not isinstance(w, (int, str)):
            raise S2SADError(f"wrt must be a parameter index or name, got {w!r}")
        if isinstance(w, int):
            if not -len(params) <= w < len(params):
                raise S2SADError(
                    f"wrt={w} is out of range: {src.name}() has {len(params)} positional "
                    f"parameter(s) {params}")
            out.append(params[w])
        elif w in params:
            out.append(w)
        else:
            kwonly = [a.id for a in src.node.args.kwonlyargs]
            hint = " (keyword-only parameters are never differentiated)" if w in kwonly else ""
            raise S2SADError(f"wrt={w!r} is not a positional parameter of {src.name}(); "
                             f"its parameters are {params}{hint}")
    return out


def wrt_indices(fn, wrt):
    """Positional indices of the parameters `wrt` names."""
    src = source.capture(fn)
    params = [a.id for a in src.node.args.posonlyargs + src.node.args.args]
    return [params.index(n) for n in wrt_names(src, wrt)]


def _guarded(run):
    """Report anything but an `S2SADError` escaping the compiler as an `InternalError`."""
    def guarded(fn, *args, **kwargs):
        try:
            return run(fn, *args, **kwargs)
        except S2SADError:
            raise
        except Exception as exc:
            raise _internal(fn, exc) from exc
    guarded.__doc__ = run.__doc__
    guarded.__name__ = run.__name__
    return guarded


def _internal(fn, exc):
    import traceback
    frames = traceback.extract_tb(exc.__traceback__)
    frame = ([f for f in frames if "/s2sad/" in f.filename] or frames)[-1]
    where = getattr(fn, "__code__", None)
    origin = f" ({where.co_filename}:{where.co_firstlineno})" if where else ""
    return InternalError(
        f"s2sad failed inside {frame.filename.split('s2sad')[-1]}:{frame.lineno} while "
        f"differentiating {getattr(fn, '__qualname__', fn)}{origin}: "
        f"{type(exc).__name__}: {exc}. This is a bug in s2sad; please report it with "
        "the function.")


_SPECIALISED = (float, int, np.ndarray)


def kinds_of(fn, args):
    """{parameter: type} for the positional arguments whose exact type s2sad specialises
    on (float, int, ndarray), and {"p.a": type} for such fields of dataclass and named
    tuple arguments; other arguments are of unknown kind."""
    params = list(inspect.signature(fn).parameters)
    kinds = {p: type(a) for p, a in zip(params, args) if type(a) in _SPECIALISED}
    for p, a in zip(params, args):
        for field in _record_fields(a):
            value = getattr(a, field)
            if type(value) in _SPECIALISED:
                kinds[f"{p}.{field}"] = type(value)
    return kinds


def patterns_of(fn, args):
    """{parameter: (dtype, shape pattern)} of the array arguments (see
    analysis.shapes.pattern): each one's dtype, how many axes it has and which have
    length 1, which broadcasting depends on."""
    params = list(inspect.signature(fn).parameters)
    return {p: pattern(a) for p, a in zip(params, args) if type(a) is np.ndarray}


def _patterns_key(patterns):
    return tuple(sorted((patterns or {}).items()))


def _record_fields(x):
    import dataclasses
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return x._fields
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return [f.name for f in dataclasses.fields(x)]
    return ()


def default_kinds(fn):
    """The kinds `source(f)` assumes without arguments: floats, or arrays when the
    function uses NumPy."""
    src = source.capture(fn)
    uses_numpy = any(getattr(v, "__name__", "") == "numpy" or
                     getattr(v, "__module__", "") and str(getattr(v, "__module__", ""))
                     .startswith("numpy") for v in src.free_values().values())
    params = [a.id for a in src.node.args.posonlyargs + src.node.args.args]
    return {p: np.ndarray if uses_numpy else float for p in params}


def _wrt_key(wrt):
    return tuple(wrt) if isinstance(wrt, (tuple, list)) else wrt


def _kinds_key(kinds):
    return tuple(sorted((p, getattr(k, "__name__", k)) for p, k in (kinds or {}).items()))


@_guarded
def stages(fn, wrt=0, stop=None, kinds=None, recompute=False, patterns=None):
    """Run the passes on `fn` up to and including `stop`; return (src, node, reverse).
    `kinds` gives parameters' types (float, int, ndarray) or kinds ("scalar", ...);
    `recompute` is that of Reverse; `patterns` the shape patterns of array parameters
    (see patterns_of) that code with a guard may be specialised on."""
    kinds = default_kinds(fn) if kinds is None else kinds
    src = source.capture(fn)
    if stop == "forward":
        prepare(src)
    fence.check(src)
    namer = Namer.for_function(src)
    as_tuple = isinstance(wrt, (tuple, list))
    wrt = wrt_names(src, wrt)
    node = nodes.copied(src.node)
    lift = Lift(src, namer)
    node = lift.run(node)
    if stop == "lift":
        return src, node, lift
    node = Desugar(src, namer).run(node)
    if stop == "desugar":
        return src, node, None
    node = Wengert(src, namer).run(node)
    if stop == "wengert":
        return src, node, None
    if stop == "forward":
        fwd = Forward(src, namer, wrt, kinds)
        return src, fwd.run(node), fwd
    rev = Reverse(src, namer, wrt, as_tuple, kinds, recompute, patterns)
    node = rev.run(node)
    if stop != "reverse":
        loops = list(getattr(node, "s2s_loops", ()))
        node = Optimize(src, namer).run(node)
        Elements(rev).run(node.s2s_pullback)
        for info in loops:      # what the in-place updates no longer read
            info.prune()
        node = shapes_from_earliest(node, rev)
        distinct_results(node.s2s_pullback, rev.array_positions())
        node.body[:0] = rev.header(node)
        inline_temporaries(node, rev.scalar_names(), rev.helpers, src)
    return src, node, rev


@_guarded
def reverse(fn, wrt=0, fused=False, kinds=None, release=False, guard=True, recompute=False,
            patterns=None):
    """Compile the reverse-mode derivative `f_vjp` of `fn` (with `fused`, the
    `f_value_and_grad` that `value_and_grad` runs; with `fused="grad"`, the `f_grad`
    that `grad` runs; with `fused="adjoint"`, `f_adjoint(y_bar, ...)`, see
    `adjoint_of`), specialised on `kinds` (by default, those of `default_kinds`).
    A fused function starts by checking its arguments' types unless `guard` is false;
    with `release`, it reuses dead temporaries' buffers and deletes each array after
    its last use. With `recompute`, calls to other Python functions go through their
    `g_adjoint` (see Reverse), not `g_vjp`: code that forward mode can differentiate
    (forward over reverse). `patterns` (see patterns_of) serve a guarded fused function.
    """
    kinds = default_kinds(fn) if kinds is None else kinds
    if not (fused in (True, "grad") and guard):
        patterns = None
    src, node, rev = stages(fn, wrt, kinds=kinds, recompute=recompute, patterns=patterns)
    if fused:
        node = fuse(node, rev, value={"grad": False, "adjoint": "adjoint"}.get(fused, True),
                    guard=guard)
        dtypes = ()
        if release:
            reuse = Reuse(rev)
            node = reuse.run(node)
            dtypes = reuse.used_dtypes
            node = Release(rev.array_names()).run(node)
            rev.refresh_header(node)
        if guard and patterns:
            node = guard_patterns(node, rev, dtypes)
    return _compiled(src, node, rev)


@_guarded
def forward(fn, wrt=0, kinds=None, guard=False, tangent_only=False):
    """Compile the forward-mode derivative `f_jvp` of `fn` (also of s2sad's own
    reverse-mode code: forward over reverse), specialised on `kinds` like `reverse`; its
    `tangent_names` are the parameters that take the tangents of `wrt`. With `guard`, it
    starts by checking its arguments' types and that no tangent is None. With
    `tangent_only`, it returns the tangent alone, and leaves out the statements only
    the value needs (what a Hessian-vector product runs)."""
    kinds = default_kinds(fn) if kinds is None else kinds
    src, node, fwd = stages(fn, wrt, stop="forward", kinds=kinds)
    if tangent_only:
        node.body[-1].value = node.body[-1].value.elts[1]
        node.body = fwd.without_dead_code(node.body)
    inline_temporaries(node, fwd.scalar_names(), fwd.helpers, src)
    if guard:
        node.body.insert(0, fwd.guard(node))
    derivative = _compiled(src, node, fwd)
    derivative.tangent_names = fwd.tangent_names
    return derivative


def _compiled(src, node, transform):
    """Compile the generated function `node` with the helpers `transform` bound and the
    user function's closure values, under a file name that says where it came from."""
    bindings = dict(transform.helpers)
    code = src.fn.__code__
    for var, cell in zip(code.co_freevars, src.fn.__closure__ or ()):
        bindings.setdefault(var, cell.cell_contents)
    filename = f"<s2sad: {node.name}, from {src.filename}:{src.first_line}>"
    compiled, text = emit.compile_function(node, bindings, src.fn, filename)
    derivative = Derivative(compiled, text, compiled.__code__.co_filename)
    derivative.lifted = transform.lifted
    derivative.unconnected = (src, getattr(transform, "unconnected", []))
    return derivative


_compiling = []


class LazyVJP:
    """The vjp of a function still being compiled (a recursive call): compiled on first
    use, then called directly."""

    def __init__(self, fn, wrt, kinds):
        self.fn, self.wrt, self.kinds, self.compiled = fn, wrt, kinds, None

    def __call__(self, *args, **kwargs):
        if self.compiled is None:
            self.compiled = vjp_of(self.fn, self.wrt, self.kinds)
        return self.compiled(*args, **kwargs)

    def __repr__(self):
        return f"<s2sad vjp of {self.fn.__qualname__} (compiled on first call)>"


def vjp_of(fn, wrt, kinds=None):
    """The compiled `f_vjp` of `fn` for `wrt` and argument `kinds`, through the cache."""
    from . import api
    if any(f is fn for f in _compiling):
        return LazyVJP(fn, wrt, kinds)
    _compiling.append(fn)
    try:
        return api._compiled(fn, wrt, kinds=kinds, warn=False).fn
    finally:
        _compiling.pop()


def adjoint_of(fn, wrt, kinds=None):
    """The compiled `f_adjoint(y_bar, *args)` of `fn` for `wrt` and argument `kinds`,
    through the cache: `f`'s pullback at `args`, applied to `y_bar`, recomputing the
    forward pass (no closure: forward mode can differentiate it, for second
    derivatives through calls). A recursive call gets one compiled on first use."""
    from . import api, cache
    fn = api._target(fn)
    kinds = default_kinds(fn) if kinds is None else kinds
    key = ("adjoint", _wrt_key(wrt), _kinds_key(kinds))
    if any(f is fn for f in _compiling):
        return LazyAdjoint(fn, wrt, kinds)
    _compiling.append(fn)
    try:
        return cache.get(fn, key, lambda: reverse(fn, wrt, "adjoint", kinds, guard=False,
                                                  recompute=True)).fn
    finally:
        _compiling.pop()


class LazyAdjoint(LazyVJP):
    """The adjoint of a function still being compiled (a recursive call); forward mode
    differentiates the function it compiles to."""

    def __call__(self, *args, **kwargs):
        return self.s2s_function()(*args, **kwargs)

    def s2s_function(self):
        if self.compiled is None:
            self.compiled = adjoint_of(self.fn, self.wrt, self.kinds)
        return self.compiled


def stage_source(fn, stage, wrt=0, kinds=None):
    """The source of `fn` after `stage` (one of STAGES)."""
    _, node, lift = stages(fn, wrt, stop=stage, kinds=kinds or default_kinds(fn))
    lifted = [f.s2s_lifted.node for f in lift.functions.values()] if stage == "lift" else []
    return "\n".join(emit.to_source(n) for n in lifted + [node])
