"""The driver: the derivatives the passes make, compiled, linked, guarded and cached.

A derivative that calls other Python functions calls their derivatives (`g_vjp`,
`g_adjoint`, `g_jvp`). A transform does not compile them: it names them in the generated
code and lists them as the context's `callees`. The driver compiles each one it does not
have yet from a worklist, as a compiler walks its call graph, then links every
derivative of the build to those it calls. Recursion needs nothing special: a function
that calls itself is one more entry of the worklist, linked to itself. The passes each
derivative runs are the lists of `s2sad.pipeline`.
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import gc
import inspect
import math
import os
import threading
import weakref
from typing import Callable

import gast
import numpy as np

from . import cache, emit, errors, helper_orders, marks, syntax
from .compilation import Callee, Wrt, arg_types_key, default_arg_types, wrt_key
from .errors import MissingRuleError, S2SADError, UnsupportedSyntaxError
from .errors import InternalError
from .frontend import gradients, guards, source
from .options import Options, Variant
from .backends import PYTHON, Backend
from .pipeline import compilation, reported
from .rules import registry

# -- derivatives -------------------------------------------------------------------------
class CompiledDerivative:
    """A compiled derivative: the callable and its source."""

    def __init__(self, fn, source_text, filename, ctx, backend):
        self.fn = fn
        self.source = source_text
        self.filename = filename
        self.lifted = ctx.lifted    # (function, wrt, arg_types) of the lifted functions it calls
        # (the function named by its name and place, not held: a derivative cached for a
        # function must not keep it alive, see cache.py)
        self.unconnected = (errors.Place(ctx.src.name, ctx.src.filename,
                                         ctx.src.first_line),
                            ctx.reverse.unconnected if ctx.reverse else [])
        self.tangent_names = ctx.forward.tangent_names if ctx.forward else None
        # {name: its tangent's name} (numba_directions reads which names are tangents)
        self.tangent_of = dict(ctx.forward.dots) if ctx.forward else None
        self.batching = getattr(ctx, "batching", None)   # (ad/batching.py's BatchingResult)
        self.assumed_real = ctx.assumed_real     # (see before_ad/complex_values.py)
        self.callees = ctx.callees    # [(name in its code, Callee)]: linked by the driver
        # what it resolved (frontend/guards.py); the driver adds its callees' (`guards`)
        # and makes the checker of them all (see `holds`)
        self.own_guards = ctx.guards
        self.guards = None
        self.check = None
        self.callee_guards = ctx.callee_guards
        # (the name in its code, held, stale) that an assignment to a function's code
        # or defaults makes stale (see guards.watch, after_ad/guard_bindings.py)
        self.code_changed = ctx.code_changed
        self.warned = False
        self.backend, self.jit = backend, dict(ctx.options.jit)
        # the user's Python functions the code calls, which the backend compiles too
        self.native_calls = backend.calls(ctx)
        # a gradient called (see frontend.gradients): the backend's gradient code, for
        # the types of the arguments its derivative is called with
        self.native_gradients = {}
        for name, obj in list(self.native_calls.items()):
            arg_types = [c.arg_types for _, c in ctx.callees if c.fn is obj]
            if getattr(obj, "s2s_gradient", None) is not None and arg_types and all(
                    k == arg_types[0] for k in arg_types):
                self.native_gradients[name] = (obj.s2s_gradient, arg_types[0])
                del self.native_calls[name]
        self._native = None
        self.linked = {}        # {name in its code: the derivative it calls} (_Build.run)

    def holds(self):
        """Whether all its guards (and those of the derivatives it calls) still hold; if
        they do, its code's test that an assignment to a function's code or defaults
        makes fail (guards.watch) passes again until the next one."""
        if self.code_changed is not None:
            name, held, _ = self.code_changed
            emit.bind_late(self.fn, name, held)
        if self.check():
            return True
        self.code_changed_now()
        return False

    def code_changed_now(self):
        """Make its code's test fail (see guards.watch): its next call checks all guards."""
        if self.code_changed is not None:
            name, _, stale = self.code_changed
            emit.bind_late(self.fn, name, stale)

    @property
    def native(self):
        """The backend's compiled form of `fn` (a Numba dispatcher; None for code that runs
        as Python), made on first use (Numba compiles it at its first call)."""
        if self._native is None:
            for name, ((primal, wrt, kind), arg_types) in self.native_gradients.items():
                gradient = derivative(target(primal), wrt, arg_types, self.backend.recomputed(
                    Variant(kind), tuple(sorted(self.jit.items()))), self.backend)
                emit.bind_late(self.fn, name, gradient.native)
            self._native = self.backend.compile(self.fn, self.native_calls, self.jit,
                                                late=self.native_late())
        return self._native

    def native_late(self):
        """{name: the derivative its code calls by that name} of the names the driver
        binds late (None for a gradient called, made apart: see `native`)."""
        late = {name: self.linked.get(name) for name, _ in self.callees}
        late.update(dict.fromkeys(self.native_gradients))
        return late


class _Watcher:
    """Makes the test of the code of a derivative (weakly held) fail when a function's
    code or defaults are assigned (see guards.watch); it lives as long as that code."""

    def __init__(self, derivative):
        self.derivative = weakref.ref(derivative)
        derivative.fn.s2s_watcher = self

    def code_changed(self):
        derivative = self.derivative()
        if derivative is not None:
            derivative.code_changed_now()


def _compiled(ctx, node, backend):
    """Compile the generated function `node` with the context's bindings and the user
    function's closure values, under a file name that says where it came from; the
    callees stay unbound until `_link`."""
    bindings = dict(ctx.bindings)
    for name, _ in ctx.callees:
        bindings[name] = None
    src = ctx.src
    code = src.fn.__code__
    for var, cell in zip(code.co_freevars, src.fn.__closure__ or ()):
        bindings.setdefault(var, cell.cell_contents)
    filename = f"<s2sad: {node.name}, from {src.filename}:{src.first_line}>"
    compiled, text = emit.compile_function(node, bindings, src.fn, filename)
    _share_defaults(compiled, src.fn)
    made = CompiledDerivative(compiled, text, compiled.__code__.co_filename, ctx, backend)
    if backend.can.frozen_globals:
        # (Numba holds the value of each global its code reads, and of those the
        # functions it compiles with it read: rebound, it must compile again)
        made.own_guards = guards.unique(made.own_guards + source.frozen_reads(
            [compiled, *made.native_calls.values()]))
    return made


def _share_defaults(compiled, fn):
    """Give the parameters of `compiled` that `fn` has, with a default in both, the
    objects `fn` holds as defaults: Python evaluates a default once, when `def` runs,
    and a call that leaves it reads that object as it is now (a list the function
    appended to, an array changed since), not a new value of the expression."""
    theirs = dict(inspect.signature(fn).parameters)
    mine = inspect.signature(compiled).parameters.values()
    shared = {p.name: theirs[p.name].default for p in mine
              if p.default is not p.empty and p.name in theirs
              and theirs[p.name].default is not p.empty}
    if not shared:
        return
    if compiled.__defaults__:
        positional = [p.name for p in mine
                      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        named = positional[len(positional) - len(compiled.__defaults__):]
        guards.set_quietly(compiled, "__defaults__", tuple(
            shared.get(n, d) for n, d in zip(named, compiled.__defaults__)))
    if compiled.__kwdefaults__:
        kw = {n: shared.get(n, d) for n, d in compiled.__kwdefaults__.items()}
        theirs = fn.__kwdefaults__ or {}
        if kw.keys() == theirs.keys() and all(v is theirs[n] for n, v in kw.items()):
            kw = theirs     # (the dict itself, which the user may change in place)
        guards.set_quietly(compiled, "__kwdefaults__", kw)


@reported
def build(fn: Callable, wrt: Wrt = 0, arg_types: dict | None = None,
          options: Options = Options(), backend: Backend = PYTHON) -> CompiledDerivative:
    """Compile, without the cache, the derivative of `fn` that `options` describe (its
    `variant`: `f_vjp`, `f_grad`, `f_jvp`, ..., see s2sad.options), with respect to `wrt`,
    specialised on `arg_types` (by default, those of `default_arg_types`), and the
    derivatives it calls that the cache does not hold; its `tangent_names`, for forward
    mode (also of s2sad's own reverse-mode code: forward over reverse), are the
    parameters that take the tangents of `wrt`."""
    return _Build().run(_request(fn, wrt, arg_types, options, backend))


def derivative(fn: Callable, wrt: Wrt = 0, arg_types: dict | None = None,
               options: Options = Options(), backend: Backend = PYTHON) -> CompiledDerivative:
    """The compiled derivative of `fn` that `build` makes, through the cache."""
    request = _request(fn, wrt, arg_types, options, backend)
    return cache.get(request.fn, request.key, lambda: _Build().run(request))


@dataclasses.dataclass
class _Request:
    fn: Callable
    wrt: object
    arg_types: dict
    options: Options
    backend: Backend

    @property
    def key(self):
        return (wrt_key(self.wrt), arg_types_key(self.arg_types), self.options.key,
                self.backend.name)


def gradient_code(primal: Callable, wrt: Wrt = 0, arg_types: dict | None = None,
                  variant: Variant = Variant.GRAD):
    """The compiled code of `grad(primal, wrt)` that is differentiated again: without its
    argument-type guard, calling other Python functions through their `h_adjoint` (see
    `build`), for arguments of `arg_types`. Forward mode over it makes `grad(grad(f))`,
    `hvp` and `hessian`; a call of `grad(f)` inside differentiated code is a call of it
    (of `value_and_grad(f)`, with `Variant.VALUE_AND_GRAD`, a call of the code that
    returns both)."""
    return derivative(target(primal), wrt, arg_types, PYTHON.recomputed(variant))


def _request(fn, wrt, arg_types, options, backend=PYTHON):
    fn = target(fn)
    arg_types = default_arg_types(fn) if arg_types is None else arg_types
    gradient = getattr(fn, "s2s_gradient", None)
    if gradient is not None:        # grad(f) called by code being differentiated
        primal, grad_wrt, kind = gradient
        fn = derivative(target(primal), grad_wrt, arg_types,   # (see gradient_code)
                        backend.recomputed(Variant(kind), options.jit), backend).fn
    if options.patterns is not None and not (options.variant.fused and options.guard
                                             or options.variant is Variant.VJP):
        options = dataclasses.replace(options, patterns=None)
    return _Request(fn, wrt, arg_types, options, backend)


class _Build:
    """One derivative and the derivatives of the functions it calls that the cache does
    not hold: compiled from a worklist, then linked."""

    def __init__(self):
        self.made = {}          # (id(fn), key) -> (request, CompiledDerivative), in this build

    def run(self, request):
        with _no_collection():
            top = self.make(request)
            queue = [(top, None, None, (request.fn,))]
            while queue:
                derivative, within, entry, path = queue.pop()
                for _, callee in derivative.callees:
                    # (reverse mode of the gradient code of `grad(f)` called in a function)
                    gradient = getattr(callee.fn, "s2s_gradient", None)
                    inside = within or (
                        gradient if callee.variant is not Variant.JVP else None)
                    # the library function the user's code calls, this callee or above it
                    into = entry or ((callee.fn, derivative) if source.is_library(callee.fn)
                                     else None)
                    try:
                        new = self.callee(callee, inside, into, derivative.request)
                    except S2SADError as exc:
                        # (s2sad's own helper, met at a higher order: the user's line)
                        located = helper_orders.located(
                            path + (callee.fn,), callee.variant, exc)
                        if located is None:
                            raise
                        raise located from exc
                    if new is not None:
                        queue.append((new, inside, into, path + (callee.fn,)))
        for request, derivative in self.made.values():
            # (before any is linked: the backend may compile one, which reads them)
            derivative.linked = {name: self.compiled(callee, derivative.request)
                                 for name, callee in derivative.callees}
        for request, derivative in self.made.values():
            self.link(derivative)
        self.guard()
        if not top.check():
            broken = [g for g in top.guards if not guards.holds([g])]
            raise InternalError(f"guards of {request.fn.__qualname__}'s derivative fail as "
                                f"soon as it is compiled: {broken}")
        for request, derivative in self.made.values():
            if derivative is not top:
                cache.put(request.fn, request.key, derivative)
            # (what the derivatives it calls are compiled with, not the function: a
            # derivative cached for a function must not keep it alive)
            derivative.request = dataclasses.replace(request, fn=None)
        return top

    def guard(self):
        """Give each derivative of the build its guards and those of the derivatives it
        calls (through calls of calls, recursion included), the checker of them all
        (`holds`, which the cache asks), and its code the checker of its callees'."""
        made = [d for _, d in self.made.values()]

        def called(d):
            return [self.compiled(c, d.request) for _, c in d.callees]
        for d in made:
            seen, todo, found = {id(d)}, [d], []
            while todo:
                e = todo.pop()
                if e.guards is not None and e is not d:     # (from the cache: complete)
                    found += e.guards
                    continue
                found += e.own_guards
                for c in called(e):
                    if id(c) not in seen:
                        seen.add(id(c))
                        todo.append(c)
            d.transitive = guards.unique(found)
        for d in made:
            d.guards = d.transitive
            d.check = guards.checker(d.guards)
            d.fn.s2s_guards = d.guards
            if d.callee_guards is not None:
                # (those the code does not test itself: its own, and those EPOCH counts)
                own = {g.identity for g in d.own_guards}
                emit.bind_late(d.fn, d.callee_guards, guards.checker(
                    [g for g in d.guards if g.identity not in own and not guards.counted(g)]))
            if d.code_changed is not None:
                emit.bind_late(d.fn, d.code_changed[0], d.code_changed[1])
                guards.watch(_Watcher(d))

    def make(self, request):
        ctx, node = compilation(request.fn, request.wrt, request.arg_types, request.options,
                                backend=request.backend)
        derivative = _compiled(ctx, node, request.backend)
        ctx.compiled()
        derivative.request = request
        self.made[(id(request.fn), request.key)] = (request, derivative)
        return derivative

    def callee(self, callee, within=None, library=None, caller=None):
        """Compile `callee` unless the cache or this build has it; the new derivative,
        or None. `within`: the `(f, wrt)` whose gradient code is differentiated in reverse
        mode for this callee, if any; `library`: (the library function the user's code
        calls, the derivative calling it) when the callee is that function or in it;
        `caller`: the request of the derivative that calls it."""
        request = _callee_request(callee, caller)
        if cache.peek(request.fn, request.key) is not None or (
                (id(request.fn), request.key) in self.made):
            return None
        try:
            return self.make(request)
        except S2SADError as exc:
            if within is None and library is not None:
                entry, caller = library
                fn = next((r.fn for r, d in self.made.values() if d is caller), None)
                raise _library_needs_a_rule(entry, exc, fn) from exc
            gradient = within
            if gradient is None:
                if (callee.variant is not Variant.JVP
                        or not isinstance(exc, UnsupportedSyntaxError)
                        or not str(exc.filename).startswith("<s2sad:")):
                    raise
                # forward over reverse met generated code with a closure (a `g_vjp`)
                name = callee.fn.__name__.removesuffix("_vjp")
                raise S2SADError(
                    f"second derivatives need the forward mode of {name}(), generated "
                    "reverse-mode code with a pullback closure, which forward mode cannot "
                    "read; make it a primitive with s2sad.defvjp and s2sad.defjvp.") from None
            name = getattr(gradient[0], "__name__", "f")
            code = getattr(gradient[0], "__code__", None)
            lifted = marks.RECORD.of(gradient[0])
            where = (f" ({lifted.src.where(lifted.node)})" if hasattr(lifted, "node") else
                     f" ({code.co_filename}:{code.co_firstlineno})" if code else "")
            why = str(exc).splitlines()[0]
            if registry.helper_facts(callee.fn) is not None:
                why = (f"its code calls s2sad's runtime helper {callee.fn.__name__}() "
                       f"({callee.fn.__module__}), which has no reverse rule yet "
                       "(registry.helper_adjoint) and whose source reverse mode cannot "
                       "differentiate")
            elif os.path.dirname(__file__) in why:    # (not the user's line to fix)
                why = ("its code calls a runtime helper of s2sad's that reverse mode does "
                       "not differentiate")
            at, line = self.call_site(gradient)
            raise S2SADError(
                f"{at}a call of grad({name}) inside a function differentiated in reverse mode "
                f"(grad, vjp, hessian) needs the reverse mode of the gradient code of "
                f"{name}(){where}, which s2sad cannot make ({type(exc).__name__}: "
                f"{why}). Differentiate the calling function in "
                "forward mode (s2sad.jvp, s2sad.jacfwd), which differentiates that gradient "
                f"code as grad(grad(f)) does{line}") from exc

    def call_site(self, gradient):
        """('file:line: ', '\\n    the line') of the call, in the user's code, of the
        gradient that `gradient` (`(primal, wrt, kind)`, see frontend.gradients) stands
        for; empty strings if it is not found."""
        def stands_for(obj):
            standing = getattr(obj, "s2s_gradient", None)
            if standing is None and gradients.made_by(obj) is not None:
                called = gradients.called_gradient(obj)
                standing = called and getattr(called[0], "s2s_gradient", None)
            return standing is not None and standing[0] is gradient[0]
        for request, derivative in list(self.made.values()):
            if not any(stands_for(c.fn) for _, c in derivative.callees):
                continue
            try:
                src = source.capture(request.fn, copy=False)
            except Exception:       # noqa: BLE001 - generated code: look further
                continue
            for n in syntax.walk(src.node):
                if not isinstance(n, gast.Call):
                    continue
                func = n.func.func if isinstance(n.func, gast.Call) else n.func
                made = src.resolve(func)
                if stands_for(made) or (isinstance(n.func, gast.Call) and n.func.args
                                        and gradients.api_function(made) is not None
                                        and src.resolve(n.func.args[0]) is gradient[0]):
                    return f"{src.where(n)}: ", f"\n    {src.line_text(n).strip()}"
        return "", ""

    def compiled(self, callee, caller=None):
        request = _callee_request(callee, caller)
        found = self.made.get((id(request.fn), request.key))
        return found[1] if found else cache.peek(request.fn, request.key)

    def link(self, derivative):
        """Bind the names `derivative`'s code calls other derivatives by."""
        for name, callee in derivative.callees:
            emit.bind_late(derivative.fn, name, _linked(
                callee, self.compiled(callee, derivative.request)))


def _library_needs_a_rule(fn, exc, caller):
    """The error for library code (scipy's, the standard library's) whose source s2sad
    cannot differentiate: a rule is what it needs, not a change to the library. It names
    the line of `caller` (the user's function) that calls it, where it can be found."""
    name = f"{fn.__module__}.{fn.__qualname__}"
    reason = str(exc).splitlines()[0].split("; ")[0]   # what failed, not its advice
    where, code = "", ""
    try:
        src = source.capture(caller, copy=False)
        call = next(n for n in syntax.walk(src.node) if isinstance(n, gast.Call)
                    and _calls(src.resolve(n.func), fn))
        where, code = f"{src.where(call)}: ", f"\n    {src.line_text(call).strip()}"
    except Exception:       # noqa: BLE001 - the call is not found: the message without it
        pass
    return MissingRuleError(
        f"{where}s2sad has no derivative rule for {name}, and its source, which s2sad reads in "
        f"its place, is not code it can differentiate ({type(exc).__name__} at {reason}). "
        "Library code is not yours to change: give the function a rule with "
        f"s2sad.defvjp({fn.__qualname__}, ...) (one template per argument) or wrap its call "
        "in an @s2sad.custom_vjp function of your own (see docs/rules.md), or compute the "
        f"value with NumPy in your function{code}")


def _calls(made, fn):
    """Whether calling `made` runs the function `fn`: it is `fn`, a method bound to it, or
    an object whose class's `__call__` it is."""
    return made is fn or getattr(made, "__func__", None) is fn or (
        not isinstance(made, type) and getattr(type(made), "__call__", None) is fn)


_builds = threading.Lock()
_building = {"count": 0, "collecting": False}


@contextlib.contextmanager
def _no_collection():
    """No cyclic garbage collection while derivatives are compiled: the passes make
    hundreds of thousands of syntax nodes that live until the build ends, and each full
    collection walks all of them (for a function of 800 statements, a fifth of its
    transform, and more the longer the function). The collector is on again (if it was)
    when the last build running ends, and collects what they left."""
    with _builds:
        if _building["count"] == 0:
            _building["collecting"] = gc.isenabled()
            gc.disable()
        _building["count"] += 1
    try:
        yield
    finally:
        with _builds:
            _building["count"] -= 1
            if _building["count"] == 0 and _building["collecting"]:
                gc.enable()


def _callee_request(callee, caller=None):
    """The request of the derivative that the code of `caller` (a request, None for the
    Python backend's) calls for `callee`: made by the caller's backend."""
    backend = caller.backend if caller is not None else PYTHON
    options = backend.callee_options(callee, caller.options.jit if caller else ())
    return _request(callee.fn, callee.wrt, callee.arg_types, options, backend)


def callee_bindings(ctx):
    """{name: object} for the callees of `ctx`, each compiled and linked (for code that
    the driver does not compile itself, such as the tables of `s2sad.trace`)."""
    return {name: _linked(callee, compiled_callee(callee)) for name, callee in ctx.callees}


def compiled_callee(callee: Callee, caller: _Request | None = None) -> CompiledDerivative:
    """The compiled derivative that generated code calls for `callee`, through the cache
    (what `s2sad.export` writes out with the code that calls it); `caller`, the request
    of the derivative that calls it (the numba backend's calls the numba backend's)."""
    request = _callee_request(callee, caller)
    return derivative(request.fn, request.wrt, request.arg_types, request.options,
                      request.backend)


def _linked(callee, derivative):
    """What generated code calls for `callee`, given its compiled derivative (its
    backend links it)."""
    return derivative.backend.link(callee, derivative)


def _partial_target(p):
    """The function that stands for the partial object `p`: the positional parameters
    `p` leaves (with their defaults), which `wrt` counts as JAX does, passed on to
    `p.func` with the values `p` binds (`partial(f, a=2.0)` is `def f(x, *, a=2.0):
    return f(x, a=a)`, the values bound by keyword keyword-only parameters with those
    defaults, as `inspect.signature` sees the partial). A parameter `p` makes
    keyword-only without a default is refused."""
    try:
        signature = inspect.signature(p)
    except (TypeError, ValueError) as exc:
        raise S2SADError(f"{p!r}: s2sad cannot read the parameters this partial leaves "
                         f"({exc})") from None
    names = getattr(p.func, "__name__", "partial")
    ns = {"_s2s_func": p.func}
    params, passed, keyword_only = [], [], []
    for k, v in enumerate(p.args):
        ns[f"_s2s_arg{k}"] = v
        passed.append(f"_s2s_arg{k}")
    for param in signature.parameters.values():
        if param.kind in (param.POSITIONAL_ONLY, param.POSITIONAL_OR_KEYWORD):
            if param.default is param.empty:
                params.append(param.name)
            else:
                ns[f"_s2s_default_{param.name}"] = param.default
                params.append(f"{param.name}=_s2s_default_{param.name}")
            passed.append(param.name)
        elif param.kind is param.KEYWORD_ONLY and param.default is not param.empty:
            ns[f"_s2s_default_{param.name}"] = param.default     # (bound, or a default)
            keyword_only.append(f"{param.name}=_s2s_default_{param.name}")
            passed.append(f"{param.name}={param.name}")
        else:
            raise S2SADError(
                f"{p!r} leaves the parameter {param.name!r} of {names}() "
                f"{'keyword-only' if param.kind is param.KEYWORD_ONLY else 'variadic'}; "
                "s2sad differentiates a partial with respect to the positional parameters "
                f"it leaves: bind {param.name!r} in the partial too, or write a function "
                f"that calls {names}()")
    params += ["*"] + keyword_only if keyword_only else []
    return source.function_from_source(
        f"def {names}({', '.join(params)}):\n    return _s2s_func({', '.join(passed)})\n",
        ns)


_partial_targets = weakref.WeakKeyDictionary()    # {partial object: its `target`}


#: {primitive: the function that only calls it}, for `target`.
_primitive_targets = {}


def target(fn):
    """The Python function s2sad compiles for `fn`: for a `custom_vjp` or `custom_jvp`,
    or a primitive with a rule (`np.sin`), a function that only calls it (so its
    derivative uses the rule); for a `functools.partial`, a function of the parameters
    it leaves (see `_partial_target`)."""
    if isinstance(fn, functools.partial):
        made = _partial_targets.get(fn)
        if made is None or not guards.same_binding(fn, made.s2s_partial_binds):
            # (made again when its keywords changed in place: `p.keywords["a"] = 3.0`)
            made = _partial_targets[fn] = _partial_target(fn)
            made.s2s_partial = weakref.ref(fn)      # (its derivatives guard `fn`'s values)
            made.s2s_partial_binds = guards.bound_by(fn)
        return made
    record = registry.primitive(fn) if not inspect.isfunction(fn) else None
    if record is not None and record.vjp is not None and record.vjp.variants:
        if fn not in _primitive_targets:
            names = ", ".join(p for p, default in record.vjp.variants[0].params
                              if default is registry.REQUIRED)
            module = {"numpy": "np"}.get(str(getattr(fn, "__module__", None)), "math")
            spelled = f"{module}.{fn.__name__}" if getattr(
                {"np": np, "math": math}[module], fn.__name__, None) is fn else "_s2s_primitive"
            _primitive_targets[fn] = source.function_from_source(
                f"def {fn.__name__}({names}):\n    return {spelled}({names})\n",
                {"_s2s_primitive": fn, "np": np})
        return _primitive_targets[fn]
    if not getattr(fn, "s2s_custom", False):
        return source.unwrap(fn)
    if getattr(fn, "_wrapper", None) is None:
        params = [p for p in inspect.signature(fn.primal).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        names = ", ".join(p.name for p in params)
        fn._wrapper = source.function_from_source(
            f"def {fn.__name__}({names}):\n    return _s2s_custom({names})\n",
            {"_s2s_custom": fn})
    return fn._wrapper
