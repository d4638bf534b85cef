"""The numba backend's derivatives: `grad(f, backend="numba")`, `value_and_grad(f,
backend="numba")`, `jvp(f, primals, tangents, backend="numba")` (its code, `NumbaJvp`,
kept by the arguments' kinds, also runs the columns of `jacfwd(f, backend="numba")`),
`vjp(f, *args,
backend="numba")` (its pullback runs `f_adjoint`, forward and reverse sweeps, compiled by
Numba), and the second derivatives
`hvp(f, backend="numba")` and `hessian(f, backend="numba")` (see docs/numba.md).

The derivative is the fused gradient as code Numba compiles (the pass list
`pipeline.NUMBA_GRADIENT`), compiled by `numba.njit`. One `NativeDerivative` stands for
every specialisation: called from a `@numba.njit` function, Numba types the call through
an overload (numba.extending.overload), which gives it the Python source of the
specialisation for the Numba types of the arguments, so the derivative is compiled into
the calling function. Called from Python, it calls a small `@numba.njit` function that
calls it, so that Numba's dispatcher, not Python, picks the specialisation; arguments
Numba cannot type, fewer arguments than parameters, or a derivative s2sad or Numba
refuses take the Python path, which compiles for the types of the arguments
(compilation.arg_types_of) and calls that dispatcher, or raises the error that says why.

Numba is imported when such a derivative is made, not before: the core install has
only gast and NumPy.
"""
from __future__ import annotations

import dataclasses
import functools
import inspect
import re
import types
import weakref

import numpy as np

from . import backends, batched_jacobians, driver, native_cache, numba_directions, pipeline
from .backends import NUMBA
from .compilation import arg_types_of, refuse_complex, wrt_indices
from .errors import (CustomRuleError, NativeBackendError, NonScalarOutputError, S2SADError,
                     warn_unconnected)
from .frontend.source import function_from_source, numba_function
from .options import Variant
from .rules import numba_runtime


def _numba():
    try:
        import numba
        import numba.extending
    except ImportError:
        raise S2SADError('backend="numba" needs Numba: pip install "s2sad[numba]"') from None
    return numba


class NativeDerivative:
    """`grad(f, wrt, backend="numba")` (`Variant.GRAD`) or `value_and_grad`
    (`Variant.VALUE_AND_GRAD`): callable from Python and from `@numba.njit` functions.
    Its derivatives (`grad(grad(f))`, `jacfwd`, `hessian`'s forward over reverse) are
    those of the Python backend's gradient code of `f`."""

    s2s_derivative = True
    s2s_forward_over_reverse = True     # its forward mode differentiates its code

    def __init__(self, f, wrt, variant, jit=None):
        numba = _numba()
        functools.update_wrapper(self, f)
        self.primal = f
        self.wrt = wrt
        self.variant = variant
        self.s2s_made_by = variant.value
        self.jit = tuple(sorted((jit or {}).items())) if jit is not None else (
            backends.jit_of(f))
        self._arg_types = None
        self._ndims = {}
        self._read_target()
        params = self._params
        # an overload whose parameters are the primal's, as Numba requires
        self._typing = function_from_source(f"def typing({', '.join(params)}):\n"
                                            f"    return _s2s_typed({', '.join(params)})\n",
                                            {"_s2s_typed": self._typed})
        numba.extending.overload(self, jit_options=dict(self.jit))(self._typing)
        self._typing_error = numba.core.errors.TypingError
        self._entry_anew()

    def _read_target(self):
        """The function compiled for the primal (driver.target: for a partial, one made
        again when the values it binds change), its parameters and their defaults (the
        entry takes them all: a partial binds by keyword keyword-only ones, which Numba's
        dispatcher cannot fill in)."""
        self._target = driver.target(self.primal)
        self._signature = inspect.signature(self._target)
        self._params = list(self._signature.parameters)
        self._defaults = [p.default for p in self._signature.parameters.values()]

    def _entry_anew(self):
        """Called from Python with every argument, the derivative runs through a Numba
        function that calls it: Numba's dispatcher picks the specialisation by the
        arguments' types, which costs less than doing it in Python. Numba holds what it
        compiled, so when the guards of the derivatives it compiled fail (a function
        redefined, a global rebound: frontend/guards.py), it is made anew, with a stand-in
        of its own for this derivative, overloaded as this one is."""
        numba = _numba()
        stand_in = _StandIn()
        numba.extending.overload(stand_in, jit_options=dict(self.jit))(self._typing)
        entry = function_from_source(f"def entry({', '.join(self._params)}):\n"
                                     f"    return _s2s_d({', '.join(self._params)})\n",
                                     {"_s2s_d": stand_in})
        self._entry = numba.njit(**{k: v for k, v in self.jit if k != "cache"})(entry)
        self._by_types = {}
        self._compiled = []         # the derivatives the entry's specialisations compiled
        # (with the disk cache, each call from Python calls the dispatcher of its types,
        # which Numba loads from disk: the entry is compiled anew in each process)
        self._through_entry = native_cache.directory() is None

    def derivative(self, arg_types, ndims=None):
        """The compiled derivative for arguments of `arg_types` (see
        compilation.arg_types_of) and the arrays' numbers of axes `ndims` ({parameter:
        ndim}; by default those of the last specialisation compiled)."""
        _refuse_containers(self._target, self.wrt, arg_types)
        ndims = self._ndims if ndims is None else ndims
        options = dataclasses.replace(NUMBA.options(self.variant, self.jit),
                                      ndims=tuple(sorted(ndims.items())))
        d = driver.derivative(self._target, self.wrt, arg_types, options, NUMBA)
        return warn_unconnected(d)

    def __call__(self, *args, **kwargs):
        if self._compiled and not all(d.holds() for d in self._compiled):
            self._read_target()
            self._entry_anew()
        if kwargs or len(args) < len(self._params):
            args = self._all(args, kwargs)
        if len(args) == len(self._params) and self._through_entry:
            try:
                return self._entry(*args)
            except self._typing_error:
                pass        # arguments Numba cannot type, or a refusal: said below
        key = tuple(map(type, args))
        native = self._by_types.get(key)
        if native is not None:
            return native(*args)
        _refuse_containers(self._target, self.wrt, {p: type(a) for p, a in zip(
            self._params, args)})
        refuse_complex(self._target, wrt_indices(self._target, self.wrt), args)
        self._arg_types = arg_types_of(self._target, args)
        self._ndims = {p: a.ndim for p, a in zip(self._params, args)
                       if isinstance(a, np.ndarray)}
        d = self.derivative(self._arg_types)
        self._compiled.append(d)
        native = d.native
        try:
            out = native(*args)         # Numba compiles it
        except _numba().core.errors.TypingError as exc:
            raise _not_compiled(self._target, exc, f"{self.__class__.__name__}.source "
                                "for the code") from exc
        self._by_types[key] = native
        return out

    def _all(self, args, kwargs):
        """The arguments of every parameter, in order: `args`, `kwargs` and the defaults
        of those left out."""
        if not kwargs and all(d is not inspect.Parameter.empty
                              for d in self._defaults[len(args):]):
            return args + tuple(self._defaults[len(args):])
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise TypeError(f"{self._target.__qualname__}(): {exc}") from None
        bound.apply_defaults()
        return tuple(bound.arguments.values())

    def _typed(self, *types):
        """The Python source of the specialisation for Numba `types` (an overload's
        implementation)."""
        _refuse_containers(self._target, self.wrt, {
            p: _container_of(t) for p, t in zip(self._params, types)})
        arg_types = {}
        for i in wrt_indices(self._target, self.wrt):
            t = types[i] if i < len(types) else None
            if isinstance(getattr(t, "dtype", t), _numba().types.Complex):
                # (called from Python, __call__ then refuses it with the argument's value)
                raise self._typing_error(f"argument {i} of {self._target.__qualname__} is "
                                         f"complex ({t}); complex numbers are not supported "
                                         "yet")
        for p, t in zip(self._params, types):
            kind = _kind_of(t)
            if kind is not None:
                arg_types[p] = kind
        ndims = {p: t.ndim for p, t in zip(self._params, types)
                 if isinstance(t, _numba().types.Array)}
        d = self.derivative(arg_types, ndims)
        native = d.native       # (which binds the functions it calls to Numba's)
        self._arg_types, self._ndims = arg_types, ndims
        self._compiled.append(d)
        if native.py_func is not d.fn:      # a copy Numba keeps on disk: call it
            return function_from_source(f"def call({', '.join(self._params)}):\n"
                                        f"    return _s2s_native({', '.join(self._params)})\n",
                                        {"_s2s_native": native})
        return d.fn

    def dispatcher(self, *args):
        """The Numba dispatcher of the specialisation for `args`."""
        return self.derivative(arg_types_of(self._target, args), {
            p: a.ndim for p, a in zip(self._params, args) if isinstance(a, np.ndarray)}).native

    @property
    def source(self):
        """The generated source for the argument types of the last specialisation
        compiled (before any, for floats, or arrays if the function uses NumPy)."""
        return self.derivative(self._arg_types).source

    def __repr__(self):
        return (f"<s2sad {self.variant.value} of {self._target.__qualname__} "
                f"wrt={self.wrt!r}, numba>")


class _StandIn:
    """What a derivative's entry (see NativeDerivative._entry_anew) calls, overloaded.
    Numba types a global of a class of its own through an overload only if it is
    callable: without `__call__`, the entry's typing failed, and each call from Python
    paid for the failure (about a millisecond) before taking the Python path."""

    def __call__(self, *args):
        raise TypeError("a stand-in for Numba code, not called from Python")


def jvp(f, primals, tangents, kwargs):
    """`jvp(f, primals, tangents, backend="numba")`: `(f(*primals), y_dot)` from `f_jvp`
    compiled by `numba.njit` (with the options of `f` if it is a `@numba.njit` function);
    a tangent None leaves its argument out, as with the Python backend."""
    primals, tangents = tuple(primals), tuple(tangents)
    if len(primals) != len(tangents):
        raise S2SADError(f"jvp needs one tangent per primal: got {len(primals)} primal(s) "
                         f"and {len(tangents)} tangent(s)")
    wrt = tuple(i for i, t in enumerate(tangents) if t is not None)
    if not wrt:
        raise S2SADError("jvp needs at least one tangent that is not None")
    given = [t for t in tangents if t is not None]
    return jvp_code(f, primals, wrt, kwargs)(primals, given, kwargs)


def jvp_code(f, primals, wrt, kwargs):
    """The `NumbaJvp` of `f` along the arguments `wrt` (indices) for arguments of the
    kind of `primals` and `kwargs` (compilation.call_key), kept per function while its
    guards hold (what `jvp` and `jacfwd(f, backend="numba")`, one call per column, run,
    without reading the arguments' types again at each call)."""
    if not (isinstance(f, types.FunctionType) or numba_function(f) is not None):
        return NumbaJvp(f, primals, wrt, kwargs)    # (a partial: its values may change)
    try:
        per_wrt = _jvp_codes.setdefault(f, {})
    except TypeError:
        return NumbaJvp(f, primals, wrt, kwargs)
    plans = per_wrt.get(wrt)
    if plans is None:
        plans = per_wrt[wrt] = batched_jacobians.Plans(
            lambda args, kw: NumbaJvp(f, args, wrt, kw))
    code = plans.get(primals, kwargs)
    return NumbaJvp(f, primals, wrt, kwargs) if code is None else code


_jvp_codes = weakref.WeakKeyDictionary()


#: The most directions `jacfwd(f, backend="numba")` runs in one pass (each tangent that
#: lives beyond a loop over them holds one value per direction); more take several.
DIRECTIONS = 64


class NumbaJvp:
    """`f_jvp` of `f` along the arguments `wrt` (indices), compiled by `numba.njit` (with
    the options of `f` if it is a `@numba.njit` function) for the types of `primals`:
    `code(primals, tangents, kwargs)` is `(f(*primals), y_dot)`, one tangent per `wrt`."""

    def __init__(self, f, primals, wrt, kwargs):
        self.typing_error = _numba().core.errors.TypingError
        target = self.target = driver.target(f)
        refuse_complex(target, wrt, primals)
        jit = backends.jit_of(f)
        arg_types = arg_types_of(target, primals)
        _refuse_containers(target, wrt, arg_types)
        options = dataclasses.replace(NUMBA.options(Variant.JVP, jit),
                                      ndims=_ndims(target, primals))
        d = self.d = warn_unconnected(driver.derivative(target, wrt, arg_types, options,
                                                        NUMBA))
        code = d.fn.__code__
        self.by_position = code.co_varnames[len(primals):code.co_argcount] == tuple(
            d.tangent_names)

    def holds(self):
        return self.d.holds()

    def columns(self, primals, like, kwargs, stacked=False):
        """`(f(*primals), [y_dot along each unit tangent of the array like `like`])` in one
        pass, the primal once (numba_directions), or None where that code is refused,
        Numba cannot compile it, or it raises: the caller then loops over the columns.
        With `stacked`, where y and the y_dots are arrays of float64 of one shape, the
        Jacobian (y's axes, then like's) in place of the list, the columns written into
        it in Numba code (numba_directions.stacked)."""
        passes = self._passes(primals, like, kwargs)
        if passes is None:
            return None
        y, lists = passes
        jac = numba_directions.stacked(y, lists) if stacked else None
        if jac is not None:
            return y, jac.reshape(np.shape(y) + np.shape(like))
        return y, [c for cols in lists for c in cols]

    def _passes(self, primals, like, kwargs):
        """`(f(*primals), [the typed list of y_dots of each pass])`, or None (`columns`)."""
        if kwargs or not self.by_position or np.ndim(like) == 0 or np.size(like) < 2:
            return None
        if self._directions is None:
            try:
                self._directions = numba_directions.compiled(self.d)
            except numba_directions.Refused:
                self._directions = False
        if self._directions is False:
            return None
        n, out = np.size(like), []
        for start in range(0, n, DIRECTIONS):   # (at most DIRECTIONS at once: memory)
            units = np.zeros((min(DIRECTIONS, n - start), n))
            units[:, start:start + len(units)] = np.eye(len(units))
            try:
                y, cols = numba_directions.call(self._directions, primals, [
                    units.reshape((len(units),) + np.shape(like))])
            except Exception:   # (the columns one by one raise it, located, or compile)
                self._directions = False
                return None
            out.append(cols)
        return y, out

    _directions = None      # (its dispatcher, False where refused)

    def __call__(self, primals, tangents, kwargs):
        kwargs = {**(self.d.fn.__kwdefaults__ or {}), **kwargs}    # (Numba needs them given)
        try:
            if self.by_position:
                return self.d.native(*primals, *tangents, **kwargs)
            return self.d.native(*primals, **kwargs, **dict(zip(self.d.tangent_names,
                                                               tangents)))
        except self.typing_error as exc:
            raise _not_compiled(self.target, exc, "s2sad.source(f, mode='forward') for "
                                "the code") from exc


def vjp(f, args, kwargs):
    """`vjp(f, *args, backend="numba")`: `(f(*args), pullback)`, `f` compiled by
    `numba.njit` (with its options if it is a `@numba.njit` function) and `pullback(y_bar)`
    the adjoint of each positional argument, from `f_adjoint(y_bar, *args)` compiled by
    Numba: Numba code has no closure, so each call of the pullback runs the forward
    sweep again, then the reverse one."""
    numba = _numba()
    target = driver.target(f)
    signature = inspect.signature(target)
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError as exc:
        raise TypeError(f"{target.__qualname__}(): {exc}") from None
    bound.apply_defaults()
    values = tuple(bound.arguments.values())
    if len(values) != len(bound.args) + len(bound.kwargs) or bound.kwargs:
        raise S2SADError(f'vjp(f, ..., backend="numba") of {target.__qualname__}(): pass '
                         "each parameter as a positional argument")
    wrt = tuple(range(len(args))) if len(args) > 1 else 0
    refuse_complex(target, wrt_indices(target, wrt), values)
    arg_types = arg_types_of(target, values)
    _refuse_containers(target, wrt, arg_types)
    jit = backends.jit_of(f)
    options = dataclasses.replace(NUMBA.options(Variant.ADJOINT, jit),
                                  ndims=_ndims(target, values))
    d = warn_unconnected(driver.derivative(target, wrt, arg_types, options, NUMBA))
    try:
        out = NUMBA.njit_user(target, dict(jit))(*values)
    except numba.core.errors.TypingError as exc:
        raise _not_compiled(target, exc, "its code") from exc

    def pullback(y_bar):
        try:
            adjoints = d.native(y_bar, *values)
            return (adjoints,) if wrt == 0 else adjoints     # (a tuple, as vjp's on Python)
        except numba.core.errors.TypingError as exc:
            raise _not_compiled(target, exc, "s2sad.source(f) for the code") from exc
    pullback.__name__ = pullback.__qualname__ = f"{target.__name__}_pullback"
    return out, pullback


def gradient_jvp(f, i, args):
    """`product(*args, v, **kwargs)`: the Hessian of `f` with respect to argument `i` at
    `args`, times `v`, by forward mode over the numba backend's gradient code (its tapes
    arrays, its helpers of numbers numbers), both compiled for the types of `args`; the
    forward mode is compiled by `numba.njit` (with the options of `f` if it is a
    `@numba.njit` function)."""
    numba = _numba()
    target = driver.target(f)
    refuse_complex(target, [i], args)
    arg_types = arg_types_of(target, args)
    ndims = _ndims(target, args)
    d = gradient_code_jvp(f, i, (i,), arg_types, ndims=ndims)
    code = d.fn.__code__
    by_position = code.co_varnames[len(args):code.co_argcount] == tuple(d.tangent_names)

    def product(*args_and_v, **kwargs):
        nonlocal d, ndims
        *primals, v = args_and_v
        # (a global rebound, an array it holds written into, or arrays of other numbers
        # of axes, which the code's types may rely on)
        if not d.holds() or _ndims(target, primals) != ndims:
            ndims = _ndims(target, primals)
            d = gradient_code_jvp(f, i, (i,), arg_types, ndims=ndims)
        kwargs = {**(d.fn.__kwdefaults__ or {}), **kwargs}     # (Numba needs them given)
        try:
            if by_position:
                return d.native(*primals, v, **kwargs)
            return d.native(*primals, **kwargs, **{d.tangent_names[0]: v})
        except numba.core.errors.TypingError as exc:
            raise _not_compiled(target, exc, "s2sad.grad(f, backend='numba').source for "
                                "the gradient code it differentiates") from exc
    product.holds = lambda: True        # (it checks its guards itself)
    return product


def gradient_code_jvp(f, i, tangents, arg_types, stage=None, ndims=()):
    """The forward mode, along parameters `tangents` (indices), of the numba backend's
    gradient code of `f` with respect to parameter `i`, for arguments of `arg_types` (and
    arrays of `ndims`, Options.ndims, if given): the tangent alone, through the cache
    (what `hvp(f, backend="numba")` compiles). With `stage`, its source after that pass
    of forward mode (for `s2sad show`)."""
    target = driver.target(f)
    _refuse_containers(target, i, arg_types)
    jit = backends.jit_of(f)
    gradient = warn_unconnected(driver.derivative(target, i, arg_types, dataclasses.replace(
        NUMBA.options(Variant.GRAD, jit), ndims=ndims), NUMBA))
    if stage is not None:
        return pipeline.stage_source(gradient.fn, stage, tangents, arg_types, mode="forward",
                                     backend=NUMBA)
    return warn_unconnected(driver.derivative(
        gradient.fn, tuple(tangents), arg_types, dataclasses.replace(
            NUMBA.options(Variant.TANGENT, jit), ndims=ndims), NUMBA))


def _ndims(target, args):
    """Options.ndims of `target` called with `args`: (parameter, number of axes) of its
    array arguments."""
    return tuple(sorted((p, a.ndim) for p, a in zip(inspect.signature(target).parameters,
                                                    args) if isinstance(a, np.ndarray)))


def _not_compiled(target, exc, where):
    """The error for a derivative of `target` Numba's typing refused (a case of a runtime
    helper its overload does not cover, a function Numba cannot type); `where`: how to
    see its code. A custom rule's result of types that do not fit is a CustomRuleError."""
    code = target.__code__
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(exc))      # Numba's colours
    custom = re.search(re.escape(numba_runtime.register().CUSTOM_RULE) + r"(.*)", text)
    if custom is not None:          # a custom rule's result that does not fit
        return CustomRuleError(custom.group(1).strip())
    if numba_runtime.register().NON_SCALAR in text:
        return NonScalarOutputError(
            f"{code.co_filename}:{code.co_firstlineno}: grad needs a function with a "
            f"scalar output, but {target.__name__}() returns an array. Use s2sad.vjp "
            "(Python backend) for non-scalar outputs, or reduce the output (e.g. with "
            "np.sum)")
    reason = next((line.strip() for line in text.splitlines()
                   if line.strip() and "Failed in" not in line), "")
    return NativeBackendError(
        f"{code.co_filename}:{code.co_firstlineno}: Numba could not compile the "
        f"derivative of {target.__name__}() ({reason}); see {where}, or differentiate "
        "with the Python backend (the default)")


def _refuse_containers(target, wrt, arg_types):
    """Raise a NativeBackendError if a parameter of `target` in `wrt` is specialised on a
    list, tuple, dict or dataclass (`arg_types`, see compilation.arg_types_of): its
    derivative would be one too, and Numba code has no containers."""
    for i in wrt_indices(target, wrt):
        p = list(inspect.signature(target).parameters)[i]
        kind = (arg_types or {}).get(p)     # (None: the default types, numbers or arrays)
        if isinstance(kind, type) and issubclass(kind, (list, tuple, dict)) or (
                dataclasses.is_dataclass(kind)):
            what = (f"a {kind.__name__}" if kind in (list, tuple, dict) else "a named tuple"
                    if issubclass(kind, tuple) else "a dataclass instance")
            code = target.__code__
            raise NativeBackendError(
                f"{code.co_filename}:{code.co_firstlineno}: the numba backend "
                f"differentiates with respect to numbers and arrays, and {p} of "
                f"{target.__name__}() is "
                f"{what}, whose derivative would be one too (Numba code has no "
                "containers); pass its numbers as an array, or differentiate with the "
                "Python backend (the default)")


def _kind_of(t):
    numba = _numba()
    if isinstance(t, numba.types.Array):    # (of unknown kind if complex: see arg_types_of)
        return None if isinstance(t.dtype, numba.types.Complex) else np.ndarray
    if isinstance(t, numba.types.Boolean):
        return None
    if isinstance(t, numba.types.Integer):
        return int
    if isinstance(t, numba.types.Float):
        return float
    return None


def _container_of(t):
    """The Python type of the container of Numba type `t` (None if it is none)."""
    numba = _numba()
    if isinstance(t, numba.types.BaseNamedTuple):
        return t.instance_class
    for numba_type, python_type in ((numba.types.List, list), (numba.types.DictType, dict),
                                    (numba.types.BaseTuple, tuple)):
        if isinstance(t, numba_type):
            return python_type
    return None


def default_backend(f, backend, jit=None, python_only=False):
    """The backend `backend` names; by default (None), "numba" for a `@numba.njit`
    function `f` or options `jit` of numba.njit, unless the derivative asks for what
    only the Python backend does (`python_only`: has_aux, memory), else "python"."""
    if backend is not None:
        return check_backend(backend)
    if python_only or getattr(f, "s2s_derivative", False):
        return "python"     # (a derivative of a derivative: forward over reverse is Python)
    return "numba" if jit is not None or numba_function(f) is not None else "python"


def check_backend(backend):
    """`backend`, the name of a backend (else an error that says which there are)."""
    return backends.named(backend).name

