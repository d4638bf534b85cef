"""The backends: what makes the passes' code run. A backend is an object that owns the
passes it adds after a pass list's, the options it makes derivatives with, what its code
can do (`can`, the `Capabilities` the passes read from the context: `ctx.can`), its
runtime helpers, and its compile and link steps. The passes never ask a backend's name.

`PYTHON` compiles the code as Python (the default); `NUMBA` compiles it with
`numba.njit` (`backend="numba"`, see docs/numba.md): it runs the passes of
`NUMBA.passes` last, makes the fused gradient without a guard or memory reuse, and
holds the Numba dispatchers it made.

>>> from s2sad import backends
>>> from s2sad.options import Variant
>>> backends.NUMBA.can.reversed, backends.PYTHON.can.reversed
(False, True)
>>> [p.name for p in backends.NUMBA.passes]
['native_tapes', 'native_globals', 'native_check', 'native_fuse', 'native_scaled']
>>> backends.NUMBA.options(Variant.GRAD).guard
False
"""
from __future__ import annotations

import dataclasses
import functools
import inspect
import numbers
import types
import weakref

import numpy as np

from . import emit, native_cache
from .compilation import Callee, Compilation, Pass
from .errors import NativeBackendError, S2SADError
from .frontend.source import function_from_source, is_library, numba_function
from .options import Capabilities, Options, Variant
from .after_ad import (native_check, native_fuse, native_globals, native_scaled,
                       native_tapes)
from .rules import numba_runtime


class Backend:
    """What every backend declares (see the module docstring)."""
    name: str
    #: what its code can do, which the passes ask (`ctx.can`)
    can: Capabilities = Capabilities()
    #: the passes it runs after those of a pass list (s2sad.pipeline)
    passes: tuple[Pass, ...] = ()

    def options(self, variant: Variant, jit: tuple = ()) -> Options:
        """The options of a derivative of `variant` as the API makes it (`jit`, the
        compiler's options as (name, value) pairs)."""
        raise NotImplementedError

    def recomputed(self, variant: Variant, jit: tuple = ()) -> Options:
        """The options of a fused gradient's code that is differentiated again (forward
        over reverse, a gradient called inside differentiated code): no guard, calls of
        other functions through their `g_adjoint`."""
        return Options(variant, guard=False, recompute=True, jit=jit)

    def callee_options(self, callee: Callee, jit: tuple = ()) -> Options:
        """The options of the derivative that code of this backend calls for `callee`
        (`jit`: the calling derivative's compiler options)."""
        raise NotImplementedError

    def calls(self, ctx: Compilation) -> dict:
        """{name: function} of the user's Python functions its code calls that it
        compiles too (none but Numba's)."""
        return {}

    def compile(self, fn, calls: dict, jit: dict, late=None):
        """The compiled form of the generated function `fn`, its names `calls` bound to
        the compiled forms of what they name, its names `late` bound by the driver after
        (`{name: the derivative it calls}`, None for one made otherwise) (None for code
        that runs as Python)."""
        return None

    def link(self, callee: Callee, derivative):
        """What generated code calls for `callee`, given its compiled derivative."""
        raise NotImplementedError

    def __repr__(self):
        return f"<s2sad backend {self.name}>"


class PythonBackend(Backend):
    """The code runs as Python."""
    name = "python"

    def options(self, variant, jit=()):
        return Options(variant, release=variant in (Variant.GRAD, Variant.VALUE_AND_GRAD))

    def callee_options(self, callee, jit=()):
        return {
            Variant.JVP: Options(Variant.JVP, guard=False),
            Variant.BATCHED: Options(Variant.BATCHED, guard=False),
            Variant.ADJOINT: Options(Variant.ADJOINT, guard=False, recompute=True),
            Variant.STEP: Options(Variant.STEP, guard=callee.patterns is not None,
                                  release=True, patterns=callee.patterns),
            Variant.ADVANCE: Options(Variant.ADVANCE, release=True, patterns=callee.patterns),
        }.get(callee.variant, Options(patterns=callee.patterns))

    def link(self, callee, derivative):
        if callee.variant is Variant.JVP:
            # (code s2sad reads, so that the calling code can be differentiated again)
            return derivative.fn if _by_position(callee, derivative) else _jvp_call(
                callee, derivative)
        if callee.args or callee.kwargs:
            return functools.partial(derivative.fn, *callee.args, **callee.kwargs)
        return derivative.fn


class NumbaBackend(Backend):
    """The code is compiled by `numba.njit`: its loops' tapes are arrays, it has no
    `reversed`, no closures and no containers, and LLVM merges common subexpressions."""
    name = "numba"
    can = Capabilities(reversed=False, tape_arrays=True, merges_subexpressions=True,
                       frozen_globals=True, built_derivatives=False,
                       graded_calls=True)
    passes = (
        Pass("native_tapes", native_tapes.run, "(numba) tapes as arrays, one column per "
             "value, helpers of numbers as numbers"),
        Pass("native_globals", native_globals.run, "(numba) a number or an array read "
             "from a global dict or SimpleNamespace (CFG['lr'], cfg.scale) as a constant, "
             "guarded"),
        Pass("native_check", native_check.run, "(numba) refuse what Numba cannot compile, "
             "naming the user's line"),
        Pass("native_fuse", native_fuse.run, "(numba) a run of elementwise statements as "
             "one loop over the elements, where the types and shapes fit"),
        Pass("native_scaled", native_scaled.run, "(numba) the gradient of a graded call "
             "added scaled into its caller's adjoints, without the product's array"),
    )

    def __init__(self):
        #: {Python function: {njit options: its Numba dispatcher}}
        self.dispatchers = weakref.WeakKeyDictionary()

    def options(self, variant, jit=()):
        """No guard (Numba dispatches on types); for a fused gradient, no buffer reuse or
        `del` (Numba manages its arrays), and calls of other functions through their
        `g_adjoint`, which has no closure."""
        if variant.forward:
            return Options(variant, guard=False, jit=tuple(sorted(jit)))
        return Options(variant, release=False, guard=False, recompute=True,
                       jit=tuple(sorted(jit)))

    recomputed = options

    def callee_options(self, callee, jit=()):
        """A callee's `g_jvp`, or its `g_adjoint` (no closure), with the options of its
        function's if it is a Numba function, else the caller's."""
        variant = callee.variant if callee.variant in (
            Variant.JVP, Variant.VALUE_AND_GRAD) else Variant.ADJOINT
        options = self.options(variant, jit_of(callee.fn, jit))
        return dataclasses.replace(options, ndims=callee.ndims, axes=callee.ndims) if (
            callee.ndims) else options

    def calls(self, ctx):
        # (not a library's Python function, `np.ones` bound as `ones`: Numba has its own)
        return {name: obj for name, obj in ctx.bindings.items()
                if inspect.isfunction(obj) and not obj.__module__.startswith("s2sad.")
                and not is_library(obj)}

    def compile(self, fn, calls, jit, late=None):
        """`fn` compiled by `numba.njit`, from a module of the disk cache (see
        native_cache) when its digest can follow all it reads and calls; else as it is."""
        for name, obj in calls.items():
            emit.bind_late(fn, name, self.njit_user(obj, jit))
        copy = native_cache.cached_copy(fn, jit, calls, late)
        if copy is not None:
            return self.njit(copy, {**jit, "cache": True})
        return self.njit(fn, jit)

    def njit_user(self, fn, options):
        """`numba.njit(**options)(fn)` for a Python function of the user's that the code
        calls, the functions of the user's it calls by global name compiled so too
        (Numba compiles a call of a Numba function, not of a Python one): a copy of `fn`
        whose globals are its module's with those bound to their Numba versions. Made
        again when a value Numba holds as a constant of the code (`_frozen`) changed."""
        made = self.dispatchers.setdefault(fn, {})
        key = ("calls",) + tuple(sorted(options.items()))
        frozen = _frozen(fn)
        if key not in made or made[key][0] != frozen:
            callees = {n: fn.__globals__[n] for n in native_cache.global_names(fn.__code__)
                       if _users_function(fn.__globals__.get(n))}
            copy = types.FunctionType(fn.__code__, dict(fn.__globals__), fn.__name__,
                                      fn.__defaults__, fn.__closure__)
            functools.update_wrapper(copy, fn)
            del copy.__wrapped__
            made[key] = (frozen, self.njit(copy, options))
            for n, obj in callees.items():      # (after: a recursion finds it made)
                copy.__globals__[n] = self.njit_user(obj, options)
        return made[key][1]

    def njit(self, fn, options):
        """`numba.njit(**options)(fn)`, made once per function and options."""
        try:
            import numba
        except ImportError:
            raise S2SADError('backend="numba" needs Numba: pip install "s2sad[numba]"') from None
        numba_runtime.register()
        made = self.dispatchers.setdefault(fn, {})
        key = tuple(sorted(options.items()))
        if key not in made:
            made[key] = numba.njit(**options)(fn)
        return made[key]

    def link(self, callee, derivative):
        if callee.args or callee.kwargs:
            raise NativeBackendError(
                f"the numba backend cannot call the derivative of {callee.fn.__qualname__}() "
                "with arguments bound to it (a method, a functools.partial); call the "
                "function itself, or differentiate with the Python backend (the default)")
        code = derivative.fn.__code__
        given = code.co_varnames[callee.nargs:code.co_argcount]
        if callee.variant is Variant.JVP and given != tuple(derivative.tangent_names):
            raise NativeBackendError(
                f"the numba backend calls the forward mode of {callee.fn.__qualname__}() "
                "with every argument given by position; pass the ones it leaves to "
                "defaults, or differentiate with the Python backend (the default)")
        return derivative.native


PYTHON = PythonBackend()
NUMBA = NumbaBackend()

#: The backends by the name the API takes (`backend="numba"`).
BY_NAME = {b.name: b for b in (PYTHON, NUMBA)}


def named(name: str) -> Backend:
    """The backend the API's `backend=name` names."""
    if name not in BY_NAME:
        raise S2SADError(f"backend={name!r}: the backend is "
                         + " or ".join(repr(n) for n in BY_NAME))
    return BY_NAME[name]


def jit_options(targetoptions: dict) -> tuple:
    """The (name, value) pairs of a Numba dispatcher's `targetoptions` that its
    derivative is compiled with (fastmath, cache, error_model, boundscheck, ...)."""
    return tuple(sorted((k, v) for k, v in targetoptions.items()
                        if k not in ("nopython", "forceobj", "looplift")
                        and isinstance(v, (bool, int, str, float, type(None)))))


def jit_of(fn, default: tuple = ()) -> tuple:
    """numba.njit's options for the derivative of `fn`: those of `fn` when it is a Numba
    function, else `default`."""
    return jit_options(fn.targetoptions) if numba_function(fn) is not None else default


def _frozen(fn):
    """What Numba compiles into `fn`'s code as constants, as it was when read: the global
    names it reads and the values of its closure's cells, each a number or string by
    value, an array by its contents, anything else (a function, a tuple) by identity."""
    cells = [c.cell_contents for c in fn.__closure__ or () if _filled(c)]
    space = fn.__globals__
    values = [(n, space[n]) for n in sorted(native_cache.global_names(fn.__code__))
              if n in space] + list(enumerate(cells))
    return tuple((n, v.dtype.str, v.shape, v.tobytes()) if isinstance(v, np.ndarray) else
                 (n, type(v), v) if isinstance(v, (numbers.Number, str)) else (n, id(v))
                 for n, v in values)


def _filled(cell):
    try:
        cell.cell_contents
    except ValueError:      # (a cell not bound yet)
        return False
    return True


def _users_function(obj):
    """Whether `obj` is a plain Python function of the user's (not of NumPy, SciPy,
    Numba or s2sad), which Numba code calls compiled."""
    module = getattr(obj, "__module__", None) or ""
    return inspect.isfunction(obj) and module.split(".")[0] not in (
        "numpy", "scipy", "numba", "s2sad", "math")


def _by_position(callee, derivative):
    """Whether the code calling `callee`'s `g_jvp`, which passes the call's `nargs`
    arguments and then the tangents, can call it as it is: it binds nothing and takes
    them all by position."""
    code = getattr(derivative.fn, "__code__", None)
    names = tuple(derivative.tangent_names or ())
    return (code is not None and not callee.args and not callee.kwargs
            and code.co_argcount == callee.nargs + len(names)
            and code.co_varnames[callee.nargs:code.co_argcount] == names)


def _jvp_call(callee, derivative):
    """What forward-mode code calls for a call of `callee` whose `g_jvp` does not take
    the call's arguments and tangents by position as they are passed (a parameter with a
    default before the tangents makes them keyword-only; the values a partial or a
    method binds come first): a Python function that passes them on, whose source s2sad
    reads, `def g_jvp_call(a, t, **kw): return g_jvp(a, **kw, a_dot=t)` (the keywords
    the call passes, not differentiated, passed on)."""
    fn = derivative.fn
    names = list(derivative.tangent_names or ())
    params = [f"_s2s_a{k}" for k in range(callee.nargs)] + [f"_s2s_t{k}" for k in
                                                             range(len(names))]
    passed = ([f"_s2s_b{k}" for k in range(len(callee.args))] + params[:callee.nargs]
              + [f"{k}=_s2s_k{i}" for i, k in enumerate(callee.kwargs)] + ["**_s2s_kw"]
              + [f"{n}={t}" for n, t in zip(names, params[callee.nargs:])])
    namespace = {"_s2s_jvp": fn, **{f"_s2s_b{k}": v for k, v in enumerate(callee.args)},
                 **{f"_s2s_k{i}": v for i, v in enumerate(callee.kwargs.values())}}
    params.append("**_s2s_kw")
    made = function_from_source(f"def {fn.__name__}_call({', '.join(params)}):\n"
                                f"    return _s2s_jvp({', '.join(passed)})\n", namespace)
    made.__module__ = fn.__module__
    return made

