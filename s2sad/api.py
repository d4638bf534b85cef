"""The public API: grad, value_and_grad, vjp, source, check_grad, and rule registration."""
from __future__ import annotations

import dataclasses
import functools
import inspect
import types
import weakref
from typing import Any, Callable

import numpy as np

from . import driver, forward_api, hessian_api, marks, numba_api, variadic
from .compilation import (Wrt, arg_types_key, arg_types_of, check_inputs, patterns_of,
                          wrt_indices, wrt_or_argnums)
from .errors import GradientCheckError, S2SADError, defined_at, warn_unconnected
from .before_ad import callee_effects
from .frontend import gradients, guards
from .options import Options, Variant
from .rules import pytrees, registry, runtime
from .rules.schedules import checked_budget, checkpointed

_target = driver.target


def _compiled(fn, wrt, arg_types=None, options=Options()):
    """The compiled derivative of `fn` for `wrt`, specialised on `arg_types` (see
    compilation.arg_types_of; without them, those `source(f)` assumes), made with
    `options` (s2sad.options). The first time, an `UnconnectedInputWarning` names each
    input the output does not depend on."""
    return warn_unconnected(driver.derivative(fn, wrt, arg_types, options))


class _DerivativeFunction:
    """Base of the callables `grad` and `value_and_grad` return."""

    s2s_derivative = True
    s2s_forward_over_reverse = True     # its forward mode differentiates its code
    variant = Variant.VALUE_AND_GRAD     # which compiled variant it runs

    holomorphic = False     # differentiates a complex output (grad(f, holomorphic=True))

    def __init__(self, fn, wrt, memory=None, holomorphic=False):
        functools.update_wrapper(self, fn)
        self.primal = fn
        self.wrt = wrt
        self.memory = memory
        self.holomorphic = holomorphic
        self._fn = self._compile_and_call
        self._version = -1
        self._arg_types = None
        self._patterns = None
        # a class of its own, whose __call__ becomes a function with the primal's
        # parameters (see _install)
        self.__class__ = type(type(self).__name__, (type(self),), {})

    def _compile_and_call(self, *args, **kwargs):
        """Compile for the types of `args` (or fetch that version), then call it."""
        target = _target(self.primal)
        self._arg_types = arg_types_of(target, args, kwargs)
        self._patterns = patterns_of(target, args, kwargs)
        fn = _compiled(self.primal, self.wrt, self._arg_types, self._options()).fn
        check_inputs(self.primal, _target(self.primal), self.wrt, args, kwargs,
                     self.holomorphic)
        self._fn = fn
        self._version = registry.version
        self._install(fn)
        return self._fn(*args, **kwargs)

    def _install(self, fn):
        """Make calls go straight to a copy of `fn` (a class attribute `__call__`, a
        static method: no bound method to make, no frame of s2sad's own per call) whose
        guard, on arguments of other types, compiles another version and calls it. A
        change of the rules removes it (see registry.bump), and calls go through
        `_DerivativeFunction.__call__` again."""
        closure = fn.__closure__ or ()
        if not any(c.cell_contents is runtime.respecialize for c in closure) or isinstance(
                self.primal, functools.partial):
            # (not for a partial: the copy would pass on to its fallback the values the
            # partial bound by keyword, as defaults it filled in, and the partial's
            # `keywords` may have changed: its guards fail, see driver.target)
            return
        own = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__,
                                 tuple(types.CellType(self._compile_and_call)
                                       if c.cell_contents is runtime.respecialize else c
                                       for c in closure))
        if fn.__kwdefaults__:
            guards.set_quietly(own, "__kwdefaults__", fn.__kwdefaults__)
        own.__qualname__ = fn.__qualname__
        type(self).__call__ = staticmethod(own)
        _installed.add(self)

    def _uninstall(self):
        """Calls go through `_DerivativeFunction.__call__` again (the rules changed)."""
        if "__call__" in type(self).__dict__:
            delattr(type(self), "__call__")

    def __call__(self, *args, **kwargs):
        # the compiled code checks its arguments' types; for others, its fallback raises
        # Respecialize
        if self._version == registry.version:
            try:
                return self._fn(*args, **kwargs) if kwargs else self._fn(*args)
            except runtime.Respecialize:
                pass
        return self._compile_and_call(*args, **kwargs)

    @property
    def source(self):
        """The generated source this derivative runs (`f_grad` or `f_value_and_grad`),
        for the argument types of its last call."""
        return _compiled(self.primal, self.wrt, self._arg_types, self._options()).source

    def _options(self):
        return Options(self.variant, release=True, patterns=self._patterns,
                       memory=self.memory, complex_output=self.holomorphic)

    def __repr__(self):
        return f"<{type(self).__name__} of {self.primal.__qualname__} wrt={self.wrt!r}>"

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)


#: The derivatives whose calls go straight to compiled code (see `_install`).
_installed = weakref.WeakSet()


def _uninstall_all():
    """A rule changed: every derivative checks the registry's version again."""
    for derivative in list(_installed):
        derivative._uninstall()
    _installed.clear()


registry.on_change(_uninstall_all)


class _CodeChanges:
    """A function's code or defaults were assigned (see frontend/guards.watch): every
    derivative's calls go through `_DerivativeFunction.__call__` again, which has the
    arguments as given (the copy installed would pass on to its fallback the defaults it
    filled in, which may be those the function no longer has), until it is called and
    installed again."""

    def code_changed(self):
        _uninstall_all()


_code_changes = _CodeChanges()
guards.watch(_code_changes)


class GradientFunction(_DerivativeFunction):
    """The gradient of a scalar function; call it like the function."""

    variant = Variant.GRAD
    s2s_made_by = "grad"


class ValueAndGradientFunction(_DerivativeFunction):
    """Returns `(f(*args), gradient)` from one forward pass."""

    s2s_made_by = "value_and_grad"


def _decorator(cls, f, wrt, backend=None, jit=None, memory=None, has_aux=False,
               holomorphic=False):
    if f is None:
        return lambda g: _decorator(cls, g, wrt, backend, jit, memory, has_aux, holomorphic)
    if holomorphic and (has_aux or backend == "numba" or variadic.takes_varargs(f)
                        or inspect.ismethod(f) or isinstance(f, _DerivativeFunction)):
        raise S2SADError(
            f"{cls.s2s_made_by}(..., holomorphic=True) differentiates a Python function of "
            "fixed arguments, with the Python backend, without has_aux (docs/complex.md)")
    if holomorphic:
        return cls(f, wrt, memory, holomorphic=True)
    if not callable(f):
        raise S2SADError(f"s2sad differentiates functions; got {type(f).__name__} {f!r}")
    if variadic.takes_varargs(f):
        return variadic.Derivative(f, lambda g: _decorator(cls, g, wrt, backend, jit, memory,
                                                           has_aux))
    backend = numba_api.default_backend(f, backend, jit, has_aux or memory is not None)
    if memory is not None:
        checked_budget(memory)
        if backend == "numba":
            raise S2SADError('memory= sets the snapshots of checkpointed loops, which the '
                             'numba backend does not keep; use the Python backend')
    if backend == "numba" and has_aux:
        raise S2SADError(
            f'{defined_at(_target(f))}{cls.s2s_made_by}({_target(f).__name__}, has_aux=True, '
            'backend="numba"): the numba backend returns no aux; use the Python backend '
            '(backend="python"), or return the aux values from a function of their own')
    if backend == "numba" and inspect.ismethod(f):
        # a bound method: its function, with the instance passed first (as below)
        derivative = numba_api.NativeDerivative(f.__func__, _shift(wrt), cls.variant, jit)
        return _BoundDerivative(derivative, f.__self__, f)
    if backend == "numba":
        return numba_api.NativeDerivative(f, wrt, cls.variant, jit)
    if jit is not None:
        raise S2SADError('jit= sets the options of numba.njit: it needs backend="numba"')
    if has_aux:
        if inspect.ismethod(f):
            derivative = AuxDerivative(f.__func__, _shift(wrt), cls, memory)
            return _BoundDerivative(derivative, f.__self__, f)
        return AuxDerivative(f, wrt, cls, memory)
    if getattr(f, "s2s_made_by", None) == "grad_grad" and cls is GradientFunction:
        f = f.s2s_as_gradient()             # a third derivative, or higher
    if cls is GradientFunction and (isinstance(f, GradientFunction) or isinstance(
            f, numba_api.NativeDerivative) and f.variant is Variant.GRAD):
        # (of a gradient compiled by Numba too: forward over its Python gradient code)
        second = hessian_api.second_derivative(f, wrt)
        second.s2s_as_gradient = lambda: _as_gradient(second)
        return second
    if inspect.ismethod(f):
        # a bound method: differentiate its function, with the instance passed first
        derivative = cls(f.__func__, _shift(wrt), memory)
        return _BoundDerivative(derivative, f.__self__, f)
    return cls(f, wrt, memory)


class AuxDerivative(_DerivativeFunction):
    """`grad(f, has_aux=True)` (`kind` GradientFunction) or `value_and_grad(f,
    has_aux=True)`: `f` returns `(output, aux)`; the gradient is that of `output`, and
    `aux`, any value, is returned as this call of `f` computed it, not differentiated.
    It runs the fused `f_value_and_grad` made with the option `aux` (its seed is 1 for
    the output and zeros for `aux`), which returns `((output, aux), gradient)`."""

    def __init__(self, fn, wrt, kind, memory=None):
        super().__init__(fn, wrt, memory)
        self.kind = kind
        self.s2s_made_by = kind.s2s_made_by + "_has_aux"

    def _install(self, fn):
        """(Calls go through `__call__`, which rearranges the result for `grad`.)"""

    def __call__(self, *args, **kwargs):
        try:
            pair, g = super().__call__(*args, **kwargs)
        except runtime.NotAPair as exc:
            forward_api.split_aux(self.primal, exc.args[0], self.kind.s2s_made_by)
            raise                                   # (split_aux raised: not reached)
        return (pair, g) if self.kind is ValueAndGradientFunction else (g, pair[1])

    def _options(self):
        return dataclasses.replace(super()._options(), aux=True)

    def __repr__(self):
        return (f"<{self.kind.__name__} of {self.primal.__qualname__} wrt={self.wrt!r}, "
                "has_aux>")


def _as_gradient(second):
    """`grad(grad(f, i), j)` (`second`) as a gradient `grad(g, j)`, where `g` stands for
    `grad(f, i)` (frontend/gradients.py): a Python function that calls it, which reverse
    mode differentiates as it does a gradient called in a differentiated function,
    through the gradient code of `f`. Its second derivative (forward over reverse over
    reverse) is `grad(grad(grad(f, i), j), k)`, and so on."""
    standing = gradients.gradient_function(second.primal, second.wrt, "grad",
                                           GradientFunction(second.primal, second.wrt))
    return GradientFunction(standing, second.s2s_tangents)


def _shift(wrt):
    if isinstance(wrt, (tuple, list)):
        return tuple(_shift(w) for w in wrt)
    return wrt + 1 if isinstance(wrt, int) and wrt >= 0 else wrt


class _BoundDerivative:
    """The derivative of a bound method: the instance is passed, not differentiated."""

    def __init__(self, derivative, instance, method):
        self._derivative = derivative
        self._instance = instance
        self.primal = method
        functools.update_wrapper(self, method)
        self.s2s_made_by = derivative.s2s_made_by
        self.s2s_bound = (derivative, instance)     # (see frontend.gradients)

    def __call__(self, *args, **kwargs):
        return self._derivative(self._instance, *args, **kwargs)

    @property
    def source(self):
        return self._derivative.source


def grad(f: Callable | None = None, wrt: Wrt | None = None, backend: str | None = None,
         jit: dict | None = None, memory: float | None = None, *,
         argnums: int | tuple | None = None, has_aux: bool = False,
         holomorphic: bool = False) -> GradientFunction:
    """The gradient of scalar function `f` with respect to parameter(s) `wrt` (by
    default the first).

    `wrt` is a positional parameter's index or name, or a tuple of them (then the
    gradient is a tuple); it may be passed by keyword. `argnums`, JAX's spelling, may
    stand for it (positions only). Keyword-only arguments are passed through, never
    differentiated.
    With `backend="numba"`, the gradient is compiled by `numba.njit` (with the options
    `jit`, by default those of `f` if it is a Numba function) and can be called from
    `@numba.njit` code too (see docs/numba.md). `f` may be a `@numba.njit` function:
    s2sad reads its Python source (`py_func`), and its gradient is compiled by Numba
    unless `backend="python"` (the default for other functions, and with `has_aux` or
    `memory`, which only the Python backend has). With `memory` (bytes), each loop of `f`
    over `s2sad.checkpointed(...)` keeps as many snapshots as fit in that many bytes (at
    least one), whatever its `snapshots` says: the state's size is read when the loop
    saves its first snapshot (see docs/loops.md).

    >>> import math, s2sad
    >>> def f(x1, x2):
    ...     return math.log(x1) + x1 * x2 - math.sin(x2)
    >>> s2sad.grad(f)(2.0, 5.0)
    5.5
    >>> s2sad.grad(f, wrt=(0, "x2"))(2.0, 5.0)
    (5.5, 1.7163378145367738)

    As a decorator, bare or with options:

    >>> @s2sad.grad(wrt="x")
    ... def dcube(x, n=3):
    ...     return x ** n
    >>> dcube(2.0)
    12.0

    With `has_aux=True`, as in JAX, `f` returns a pair `(output, aux)`: the gradient is
    that of `output`, and `aux` (any value: numbers, arrays, containers of them) comes
    back beside it as this call computed it, not differentiated:

    >>> def loss(w, x):
    ...     residual = w * x - 1.0
    ...     return residual ** 2, (residual, [x, 2 * x])
    >>> s2sad.grad(loss, has_aux=True)(3.0, 0.5)
    (0.5, (0.5, [0.5, 1.0]))
    >>> s2sad.grad(loss, argnums=(0, 1), has_aux=True)(3.0, 0.5)[0]     # (d/dw, d/dx)
    (0.5, 3.0)

    (It runs `f_vjp` and its pullback, see `vjp`, not the fused `f_grad`.)

    With respect to a complex number `z = x + iy`, or a complex array (element by
    element), the gradient of a real `f` is autograd's (and JAX's) `df/dx - i df/dy`:
    conjugate it to step downhill (see docs/complex.md). With `holomorphic=True`, `f`
    may return a complex number, and the gradient is its derivative `f'(z)`, as JAX's:

    >>> def wave(z):
    ...     return z * z
    >>> s2sad.grad(wave, holomorphic=True)(1.0 + 2.0j)
    (2+4j)
    """
    return _decorator(GradientFunction, f, wrt_or_argnums(wrt, argnums), backend, jit,
                      memory, has_aux, holomorphic)


def value_and_grad(f: Callable | None = None, wrt: Wrt | None = None,
                   backend: str | None = None, jit: dict | None = None,
                   memory: float | None = None, *, argnums: int | tuple | None = None,
                   has_aux: bool = False,
                   holomorphic: bool = False) -> ValueAndGradientFunction:
    """Like `grad`, but returns `(f(*args), gradient)`, running `f` once; `backend`,
    `jit`, `memory`, `argnums`, `has_aux` and `holomorphic` are those of `grad`.

    >>> import s2sad
    >>> def sq(x):
    ...     return x * x
    >>> s2sad.value_and_grad(sq)(3.0)
    (9.0, 6.0)

    With `has_aux=True`, `f` returns `(output, aux)` and the result is `((output, aux),
    gradient)`, as JAX's:

    >>> def sq_and_cube(x):
    ...     return x * x, x ** 3
    >>> s2sad.value_and_grad(sq_and_cube, has_aux=True)(3.0)
    ((9.0, 27.0), 6.0)
    """
    return _decorator(ValueAndGradientFunction, f, wrt_or_argnums(wrt, argnums), backend,
                      jit, memory, has_aux, holomorphic)


def vjp(f: Callable, *args: Any, backend: str = "python", has_aux: bool = False,
        **kwargs: Any) -> tuple[Any, Callable]:
    """`(f(*args), pullback)`: `pullback(y_bar)` returns one adjoint per positional arg.

    >>> import s2sad
    >>> def mul(x, y):
    ...     return x * y
    >>> y, pullback = s2sad.vjp(mul, 2.0, 3.0)
    >>> y, pullback(1.0)
    (6.0, (3.0, 2.0))

    With `has_aux=True`, `f` returns `(output, aux)` and vjp returns `(output, pullback,
    aux)`, as JAX's: `pullback` takes the adjoint of `output` alone, and `aux` is not
    differentiated (a copy: changing it changes nothing the pullback reads).

    >>> def mul_and_ratio(x, y):
    ...     return x * y, x / y
    >>> y, pullback, ratio = s2sad.vjp(mul_and_ratio, 2.0, 4.0, has_aux=True)
    >>> y, pullback(1.0), ratio
    (8.0, (4.0, 2.0), 0.5)

    With `backend="numba"`, `f` and its adjoint `f_adjoint(y_bar, *args)` are compiled by
    Numba, and each call of the pullback (a Python function) runs the adjoint: the forward
    sweep again, then the reverse one (Numba code has no closure to keep the first).
    """
    if not args:
        raise S2SADError("vjp needs the positional arguments to differentiate at")
    if numba_api.check_backend(backend) == "numba":
        if has_aux:
            raise S2SADError('vjp(f, ..., backend="numba") does not take has_aux=True; '
                             "use the Python backend (the default)")
        return numba_api.vjp(f, args, kwargs)
    f = variadic.for_call(f, args, kwargs)
    wrt = tuple(range(len(args)))
    fn = getattr(f, "__func__", f)
    check_inputs(fn, _target(fn), _shift(wrt) if inspect.ismethod(f) else wrt,
                 ((f.__self__,) if inspect.ismethod(f) else ()) + args)
    if inspect.ismethod(f):
        f, args, wrt = f.__func__, (f.__self__,) + args, _shift(wrt)
    arg_types = arg_types_of(_target(f), args, kwargs)
    out, pullback = _compiled(f, wrt, arg_types).fn(*args, **kwargs)
    if not has_aux:
        return out, pullback
    out, aux = forward_api.split_aux(f, out, "vjp")
    aux_bar = pytrees.zeros_like(aux)

    def pullback_of_output(out_bar):
        return pullback((out_bar, aux_bar))
    pullback_of_output.__name__ = pullback_of_output.__qualname__ = pullback.__name__
    return out, pullback_of_output, forward_api.fresh_aux(aux)


def source(f: Callable, mode: str = "reverse", wrt: Wrt | None = None,
           at: tuple | None = None) -> str:
    """The generated derivative source of `f`, as a string: the code `vjp` runs for
    arguments like `at` (a tuple), by default floats (arrays if `f` uses NumPy), with
    respect to `wrt` (by default the first parameter; for a second derivative in
    forward mode, the parameter of its tangent).

    >>> import s2sad
    >>> def sq(x):
    ...     return x * x
    >>> print(s2sad.source(sq))
    def sq_vjp(x):
        # reverse mode of sq() with respect to x
        # the pullback reads: x
        # rules: *
        y = x * x
    <BLANKLINE>
        def sq_pullback(y_bar):
            # grad of: return x * x
            x_bar = 2 * y_bar * x
            return x_bar
        return (y, sq_pullback)
    <BLANKLINE>

    With `mode="forward"`, the pushforward `f_jvp` (see `s2sad.jvp`):

    >>> print(s2sad.source(sq, mode="forward"))
    def sq_jvp(x, x_dot):
        y = x * x
        y_dot = 2 * x_dot * x
        return (y, y_dot)
    <BLANKLINE>
    """
    if mode not in ("reverse", "forward"):
        raise S2SADError(f"mode={mode!r}: the mode is 'reverse' or 'forward'")
    if mode == "forward" and forward_api.gradient_of(f) is not None:
        return forward_api.source(f, wrt, at)   # forward over reverse of a gradient
    wrt = 0 if wrt is None else wrt
    arg_types = None if at is None else arg_types_of(_target(f), at)
    return _with_lifted(_derivative(f, mode, wrt, arg_types), mode)


def _derivative(f, mode, wrt, arg_types):
    if mode == "forward":
        wrt = tuple(wrt) if isinstance(wrt, (tuple, list)) else (wrt,)
        return forward_api.compiled(f, wrt, arg_types)
    return _compiled(f, wrt, arg_types)


def _with_lifted(derivative, mode, shown=None):
    """The derivative's source, then that of each nested function (lambda or def) it
    calls, lifted out of the function it was written in."""
    shown = set() if shown is None else shown
    text = derivative.source
    for fn, wrt, arg_types in derivative.lifted:
        key = (fn, wrt, arg_types_key(arg_types))
        if key in shown:
            continue
        shown.add(key)
        text += f"\n# {fn.__name__}: {marks.RECORD.of(fn).describe()}\n"
        if mode == "reverse" and getattr(marks.RECORD.of(fn), "state", None) is not None:
            # a checkpointed loop's step: its adjoint, which the reverse sweep calls
            step = driver.derivative(fn, wrt, arg_types, Options(Variant.STEP, guard=False,
                                                                 release=True))
            text += _with_lifted(step, mode, shown)
            continue
        text += _with_lifted(_derivative(fn, mode, wrt, arg_types), mode, shown)
    return text


def check_grad(f: Callable, *args: Any, wrt: Wrt | None = None, rtol: float = 1e-5,
               atol: float = 1e-7, argnums: int | tuple | None = None, **kwargs: Any) -> Any:
    """Compare `grad(f, wrt)` at `args` with central finite differences (float64);
    `argnums` may stand for `wrt`, as in `grad`.

    Returns the gradient; raises `GradientCheckError` listing the entries that differ.

    >>> import math, s2sad
    >>> def f(x):
    ...     return math.sin(x) * x
    >>> round(s2sad.check_grad(f, 1.0), 6)
    1.381773
    """
    wrt = wrt_or_argnums(wrt, argnums)
    g = grad(f, wrt)(*args, **kwargs)
    index = wrt_indices(f, wrt)
    many = isinstance(wrt, (tuple, list))
    grads = g if many else (g,)
    bad = []
    for k, i, gi in zip(range(len(index)), index, grads):
        fd = _central_difference(f, args, kwargs, i)
        if not np.allclose(gi, fd, rtol=rtol, atol=atol):
            bad.append(f"argument {i}: s2sad gives {gi!r}, finite differences give {fd!r}")
    if bad:
        raise GradientCheckError(f"gradient of {f.__qualname__} at {args!r} disagrees with "
                                 "central finite differences:\n  " + "\n  ".join(bad))
    return g


def _central_difference(f, args, kwargs, i):
    x = np.asarray(args[i], dtype=np.float64)
    out = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        h = 1e-6 * max(1.0, abs(float(x[idx])))
        plus, minus = x.copy(), x.copy()
        plus[idx] += h
        minus[idx] -= h
        a = list(args)
        a[i] = plus if x.shape else float(plus)
        fp = f(*a, **kwargs)
        a[i] = minus if x.shape else float(minus)
        fm = f(*a, **kwargs)
        out[idx] = (fp - fm) / (2 * h)
    return out if x.shape else float(out)


def defvjp(prim: Callable, params: str, *templates: str | None,
           namespace: dict | None = None) -> None:
    """Register the reverse-mode rule of `prim`, a function s2sad should not (or cannot)
    read: a builtin, a C extension, or a Python function you want treated as a primitive.

    `params` names `prim`'s positional parameters, comma-separated. Each template is a
    Python expression for the adjoint contribution to one parameter, written over the
    parameter names, `g` (the adjoint of the result) and `ans` (the result); `None`
    means no derivative with respect to that parameter. Other names in a template are
    looked up in `namespace`. Templates are inlined into the generated code, so the
    pullback reads like hand-written derivative code. Registering a rule invalidates
    every derivative compiled before.

    >>> import math, s2sad
    >>> def softplus(x):
    ...     return math.log1p(math.exp(x))
    >>> s2sad.defvjp(softplus, "x", "g / (1 + exp(-x))", namespace={"exp": math.exp})
    >>> def loss(w):
    ...     return softplus(3 * w)
    >>> s2sad.grad(loss)(0.0)
    1.5
    >>> print(s2sad.source(loss))
    def loss_vjp(w):
        # reverse mode of loss() with respect to w
        # the pullback reads: t
        # rules: *, softplus
        t = 3 * w
        y = softplus(t)
    <BLANKLINE>
        def loss_pullback(y_bar):
            # grad of: return softplus(3 * w)
            t_bar = y_bar / (1 + exp(-t))
            w_bar = t_bar * 3
            return w_bar
        return (y, loss_pullback)
    <BLANKLINE>
    """
    registry.vjp(prim, params, *templates, namespace=namespace)


def nondiff(prim: Callable) -> None:
    """Declare `prim` non-differentiable: calls to it carry no derivative, and values
    computed from its result are constants to s2sad (like a stop-gradient).

    >>> import s2sad
    >>> def frozen(x):
    ...     return x
    >>> s2sad.nondiff(frozen)
    >>> def f(x):
    ...     return frozen(x) * x
    >>> s2sad.grad(f)(3.0)
    3.0
    """
    registry.nondiff(prim)


def register_pytree(cls: type, flatten: Callable, unflatten: Callable) -> type:
    """Register your class `cls` as a pytree: its instances hold values s2sad
    differentiates with respect to, as dataclasses do (JAX's `register_pytree_node`).

    `flatten(obj)` returns `(children, aux)`: the values that are differentiated
    (numbers, arrays, and tuples, lists, dicts, dataclasses or registered objects of
    them) and what else rebuilding `obj` needs (never differentiated); `unflatten(aux,
    children)` builds an instance from them. A gradient, tangent or Jacobian with
    respect to an instance is an instance built by `unflatten`, with `None` for a child
    that carries no derivative (an int, a string), as for dataclass fields. In a
    differentiated function, `obj.name` is the child that `unflatten` stores as `name`;
    an attribute that is none of the children is a constant, and one computed from them
    (a property) is refused: an `unflatten` that stores the children as they are fits
    best. Registering invalidates every derivative compiled before; `s2sad.export`
    refuses a differentiated argument that is or holds an instance (an exported module
    has no registry). Returns `cls`.

    >>> import numpy as np, s2sad
    >>> class Linear:                     # a module holding its parameters
    ...     def __init__(self, W, b, name="layer"):
    ...         self.W, self.b, self.name = W, b, name
    ...     def apply(self, x):
    ...         return np.tanh(self.W @ x + self.b)
    >>> _ = s2sad.register_pytree(Linear, lambda m: ((m.W, m.b), m.name),
    ...                           lambda name, children: Linear(*children, name))
    >>> def loss(model, x):
    ...     return np.sum(model.apply(x) ** 2)
    >>> g = s2sad.grad(loss)(Linear(np.eye(2), np.zeros(2)), np.array([1.0, 2.0]))
    >>> type(g).__name__, g.b, g.name
    ('Linear', array([0.63970001, 0.13621869]), 'layer')
    """
    pytrees.register(cls, flatten, unflatten)
    registry.bump()
    return cls



class custom_vjp:
    """A function with a reverse rule written by hand (like `jax.custom_vjp`), for
    numerical stability, speed, or code s2sad cannot see into.

    `fwd(*args)` returns `(value, residuals)`; `bwd(residuals, g)` returns a tuple with
    one cotangent per positional argument, in its structure and shape, or None for an
    argument without one (a literal None emits no code); what it returns is checked at
    each call (`_s2s_cotangents`), and a result that does not fit the arguments is a
    `CustomRuleError` that names `bwd`. Forward mode (`jvp`) differentiates the
    function's own source; `hessian` differentiates `fwd` and `bwd`. Differentiated
    code calls `fwd` and `bwd` by name:

    >>> import math, s2sad
    >>> @s2sad.custom_vjp
    ... def softplus(x):                         # log(1 + exp(x)), without overflow
    ...     return max(x, 0.0) + math.log1p(math.exp(-abs(x)))
    >>> def softplus_fwd(x):
    ...     return softplus(x), x
    >>> def softplus_bwd(x, g):
    ...     return (g / (1 + math.exp(-x)),)     # the logistic function, in one line
    >>> softplus.defvjp(softplus_fwd, softplus_bwd)
    >>> def loss(w):
    ...     return softplus(1000.0 * w)
    >>> s2sad.grad(loss)(1.0)
    1000.0
    >>> print(s2sad.source(loss))
    def loss_vjp(w):
        # reverse mode of loss() with respect to w
        # the pullback reads: softplus_residuals, t
        # rules: *, softplus
        t = 1000.0 * w
        y, softplus_residuals = softplus_fwd(t)
    <BLANKLINE>
        def loss_pullback(y_bar):
            # grad of: return softplus(1000.0 * w)
            t_bar = _s2s_cotangents(softplus_bwd(softplus_residuals, y_bar), softplus_bwd, (t,))[0]
            w_bar = t_bar * 1000.0
            return w_bar
        return (y, loss_pullback)
    <BLANKLINE>
    """

    s2s_custom = ("vjp",)      # (the rules it has: see ad/calls.py)

    def __init__(self, fn: Callable) -> None:
        functools.update_wrapper(self, fn)
        self.primal = fn
        self.fwd = self.bwd = self._wrapper = None

    def defvjp(self, fwd, bwd):
        """Set the forward (`fwd(*args) -> (value, residuals)`) and backward
        (`bwd(residuals, g) -> cotangents`) functions; invalidates compiled code."""
        self.fwd, self.bwd = fwd, bwd
        registry.bump()

    def __call__(self, *args, **kwargs):
        return self.primal(*args, **kwargs)
    __call__.s2s_own_call = True   # (refused where made in a differentiated function)


class checkpoint(custom_vjp):
    """`f` as a call whose intermediate values the gradient does not keep: the forward
    pass keeps only its arguments, and the pullback computes `f`'s own forward pass
    again (with its tape) when it needs it, as `jax.checkpoint` does. Memory for time:
    a loop calling a checkpointed step keeps one set of arguments per step instead of
    every temporary of the step. Usable as a decorator or a wrapper; forward mode
    differentiates `f` itself.

    >>> import numpy as np, s2sad
    >>> @s2sad.checkpoint
    ... def step(u, kappa):
    ...     lap = np.roll(u, 1) - 2.0 * u + np.roll(u, -1)
    ...     return u + kappa * np.tanh(lap)
    >>> def simulate(u0, kappa):
    ...     u = u0
    ...     for i in range(50):
    ...         u = step(u, kappa)
    ...     return np.sum(u * u)
    >>> u0 = np.linspace(0.0, 1.0, 8)
    >>> du0, dkappa = s2sad.grad(simulate, wrt=(0, 1))(u0, 0.1)
    >>> h = 1e-6
    >>> bool(abs(dkappa - (simulate(u0, 0.1 + h) - simulate(u0, 0.1 - h)) / (2 * h)) < 1e-6)
    True

    Where `f` may write into an array it is given, the forward pass keeps a copy of it
    as it was before the call, which the pullback computes `f` again from (a name for
    that array read after the call is refused at the line, as for any call that changes
    an argument). Its pullback is `f`'s pullback (`s2sad.vjp`), so second derivatives (`hessian`,
    `hvp`) of a function that calls a checkpoint are not available yet.
    """

    #: (a checkpointed loop's step differentiates a checkpoint it calls as a plain call:
    #: ad/calls.py)
    s2s_checkpoint = True

    def __init__(self, fn: Callable) -> None:
        super().__init__(fn)
        name = getattr(fn, "__name__", "f")

        def fwd(*args, **kwargs):
            # (the arguments as they are before fn runs: copies of the arrays, where fn
            # may write into them, which the pullback computes fn again from)
            kept = pytrees.map(_copied, (args, kwargs)) if callee_effects.may_write(
                (fn, None)) else (args, kwargs)
            return fn(*args, **kwargs), kept

        def bwd(kept, g):
            # the pullback of fn for the arguments that carry derivatives (those given by
            # position: the caller's derivative refuses a differentiated keyword); an
            # argument the output does not depend on is not worth a warning here (the
            # caller's own derivative warns for its inputs)
            args, kwargs = kept
            wrt = tuple(i for i, a in enumerate(args) if runtime.carries_derivative(a))
            if not wrt:
                return (None,) * len(args)
            derivative = driver.derivative(fn, wrt, arg_types_of(fn, args, kwargs))
            adjoints = iter(derivative.fn(*args, **kwargs)[1](g))
            return tuple(next(adjoints) if i in wrt else None for i in range(len(args)))
        self.s2s_sites = []     # (where the user's code calls it: callables.called_at)
        for helper, role in ((fwd, "fwd"), (bwd, "bwd")):
            helper.__name__ = helper.__qualname__ = f"{name}_checkpoint_{role}"
            helper.s2s_sites = self.s2s_sites
            helper.s2s_not_differentiable = (
                f"second derivatives through s2sad.checkpoint({name}) are not supported "
                f"yet (they need the derivative of its recomputation); for hessian, hvp or "
                f"grad(grad(...)), call {name} without the checkpoint")
        # set, not defvjp: no compiled code can name a new checkpoint, nothing to redo
        self.fwd, self.bwd = fwd, bwd

    @classmethod
    def of(cls, fn):
        """The checkpoint of the function `fn` that `s2sad.checkpoint(fn)(...)`, written in
        a differentiated function, calls: one for each function (a new one at each call
        would be a new function value, whose derivative is compiled each time)."""
        made = cls.__dict__.get("_made")
        if made is None:
            made = cls._made = weakref.WeakKeyDictionary()
        if fn not in made:
            made[fn] = cls(fn)
        return made[fn]


def _copied(leaf):
    return leaf.copy() if isinstance(leaf, np.ndarray) else leaf


class custom_jvp:
    """A function with a forward rule written by hand (like `jax.custom_jvp`).

    `rule(primals, tangents)` gets the tuple of positional arguments and the tuple of
    their tangents (zeros for those that do not vary) and returns `(value,
    tangent)`, the tangent in the value's structure and shape (checked at each call:
    a `CustomRuleError` otherwise). Forward-mode code (`jvp`, `jacfwd`) calls it by name:

    >>> import math, s2sad
    >>> @s2sad.custom_jvp
    ... def safe_sqrt(x):
    ...     return math.sqrt(x)
    >>> @safe_sqrt.defjvp
    ... def safe_sqrt_jvp(primals, tangents):
    ...     (x,), (x_dot,) = primals, tangents
    ...     y = math.sqrt(x)
    ...     return y, (x_dot / (2 * y) if y > 0 else 0.0)   # 0 at 0, where 1/(2 sqrt x) is inf
    >>> def f(x):
    ...     return safe_sqrt(x * x)
    >>> s2sad.jvp(f, (0.0,), (1.0,))
    (0.0, 0.0)
    >>> print(s2sad.source(f, mode="forward"))
    def f_jvp(x, x_dot):
        y, y_dot = _s2s_value_and_tangent(safe_sqrt_jvp((x * x,), (2 * x_dot * x,)), safe_sqrt_jvp)
        return (y, y_dot)
    <BLANKLINE>

    Reverse mode (`grad`, `vjp`) differentiates the function's own source, not the
    rule (JAX would transpose the rule); give it a `custom_vjp` as well where that
    matters.
    """

    s2s_custom = ("jvp",)

    def __init__(self, fn: Callable) -> None:
        functools.update_wrapper(self, fn)
        self.primal = fn
        self.rule = self._wrapper = None

    def defjvp(self, rule):
        """Set the forward rule `rule(primals, tangents) -> (value, tangent)`;
        invalidates compiled code. Returns `rule`, so it works as a decorator."""
        self.rule = rule
        registry.bump()
        return rule

    def __call__(self, *args, **kwargs):
        return self.primal(*args, **kwargs)
    __call__.s2s_own_call = True   # (refused where made in a differentiated function)


def stop_gradient(x: Any) -> Any:
    """`x`, as a constant to s2sad: no derivative flows through it.

    >>> import s2sad
    >>> def f(x):
    ...     return x * s2sad.stop_gradient(x)
    >>> s2sad.grad(f)(3.0)
    3.0
    """
    return x


registry.nondiff(stop_gradient)
registry.nondiff(checkpointed)     # (a loop's head: see before_ad/checkpointed_loops.py)


def elementwise_grad(f: Callable, wrt: Wrt = 0) -> GradientFunction:
    """The derivative of each element of `f`'s result with respect to the same element
    of argument `wrt`, for `f` elementwise (a ufunc, or NumPy code that maps each element
    of its array to one of the result): the gradient of `np.sum(f(x))`, as autograd's.
    It is a gradient made by `grad`: nested, it gives higher derivatives (reverse mode
    over the gradient code, see docs/api.md):

    >>> import numpy as np, s2sad
    >>> x = np.array([0.0, 0.5])
    >>> s2sad.elementwise_grad(np.sin)(x)                            # cos x
    array([1.        , 0.87758256])
    >>> s2sad.elementwise_grad(s2sad.elementwise_grad(np.sin))(x)    # -sin x
    array([-0.        , -0.47942554])

    For an `f` that is not elementwise, it is the gradient of the sum of its result
    (the sum of the rows of its Jacobian), not the Jacobian's diagonal.
    """
    from .frontend.source import function_from_source, identifier
    if isinstance(f, np.ufunc):         # (its signature has `out` too)
        params = ["x"] if f.nin == 1 else [f"x{k}" for k in range(f.nin)]
    else:
        params = [p.name for p in inspect.signature(f).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    args = ", ".join(params)
    name = identifier(f) if hasattr(f, "__name__") else "f"
    if name in params or name in ("np", "math"):
        name = "elementwise"
    summed = function_from_source(
        f"def {name}_summed({args}):\n    return np.sum({name}({args}))\n",
        {name: f, "np": np})
    summed.__module__ = getattr(f, "__module__", None) or "__main__"
    return grad(summed, wrt)


gradients.MAKERS.update(grad=grad, value_and_grad=value_and_grad, jvp=forward_api.jvp)
