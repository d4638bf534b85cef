"""Forward mode: jvp, defjvp, and what the Jacobians and Hessians share (the forward mode
of the gradient code, `source`; jacobian_api.py and hessian_api.py build on it)."""
from __future__ import annotations

import copy
import inspect
import types
import weakref
from typing import Any, Callable, Sequence

import numpy as np

from . import driver, numba_api, variadic
from .compilation import arg_types_of, default_arg_types, refuse_complex, wrt_indices
from .errors import S2SADError, defined_at, warn_unconnected
from .options import Options, Variant
from .rules import pytrees, registry, runtime

_target = driver.target


def compiled(fn, wrt, arg_types=None, guard=False):
    """The compiled `f_jvp` of `fn` for `wrt` (a tuple of indices or names), specialised
    on `arg_types` (see compilation.arg_types_of), through the cache; with `guard`, the
    version that checks its arguments and frees each array after its last use
    (`release`)."""
    return driver.derivative(fn, tuple(wrt), arg_types, Options(
        Variant.JVP, guard=guard, release=guard, complex_output=True))


def _call(d, args, kwargs, tangents):
    return d.fn(*args, **kwargs, **dict(zip(d.tangent_names, tangents)))


def _by_position(f, args, kwargs):
    """(args, kwargs) of a call of `f`, its arguments for parameters that may be passed
    by position passed so (with the defaults of those the call leaves before them):
    what the Hessians and Jacobians index and specialise on."""
    if not kwargs:
        return args, kwargs
    bound = inspect.signature(f).bind(*args, **kwargs)
    bound.apply_defaults()
    return bound.args, bound.kwargs


def _as_one_call(fn, products):
    """[product() for product in `products`], each run on the default values `fn` holds
    before the first: a default object (list, dict, array) that `fn` changes in place,
    which Python keeps from call to call, is given its contents of then again before
    each product, so that they are the derivatives of one call of `fn`, whose change it
    keeps once (see before_ad.desugar's `keep_defaults`)."""
    try:
        defaults = [p.default for p in inspect.signature(fn).parameters.values()
                    if isinstance(p.default, (list, dict, np.ndarray))]
    except (TypeError, ValueError):
        defaults = []
    saved = [copy.deepcopy(d) for d in defaults]
    out = []
    for k, product in enumerate(products):
        for default, contents in zip(defaults, saved) if k else ():
            runtime.keep_default(default, copy.deepcopy(contents))
        out.append(product())
    return out


def jvp(f: Callable, primals: Sequence, tangents: Sequence, *, backend: str | None = None,
        has_aux: bool = False, **kwargs: Any) -> tuple[Any, Any]:
    """`(f(*primals), y_dot)`: the value of `f` and its directional derivative along
    `tangents`, one per positional argument (like `jax.jvp`), in one forward pass.

    >>> import math, s2sad
    >>> def f(x, y):
    ...     return x * y + math.sin(x)
    >>> s2sad.jvp(f, (0.0, 2.0), (1.0, 0.0))        # d/dx at (0, 2)
    (0.0, 3.0)

    The tangent's structure is the output's: an array for an array output, a tuple for
    a tuple. A tangent of a dataclass or named tuple is an instance of the same type.
    A tangent `None` leaves its argument out (a model object, a count); keyword
    arguments are passed through, never differentiated.

    >>> s2sad.jvp(f, (3.0, 2.0), (None, 1.0))       # d/dy, x held fixed
    (6.141120008059867, 3.0)

    For `f` a gradient made by `grad` (`grad(g)`, `grad(grad(g))`, `elementwise_grad(g)`),
    the tangent is forward mode over its gradient code (a Hessian-vector product, as
    `hvp`), which gives the gradient too: both come from one pass.

    >>> s2sad.jvp(s2sad.grad(f), (3.0, 2.0), (1.0, 0.0))      # d2f/dx2 = -sin x
    (1.0100075033995546, -0.1411200080598672)

    With `has_aux=True`, `f` returns `(output, aux)` and jvp returns `(output,
    output_dot, aux)`, as JAX's: `aux` is not differentiated.

    >>> def f_and_count(x, y):
    ...     return x * y, "counted"
    >>> s2sad.jvp(f_and_count, (3.0, 2.0), (1.0, 0.0), has_aux=True)
    (6.0, 2.0, 'counted')

    With `backend="numba"`, `f_jvp` is compiled by `numba.njit` (see docs/numba.md); that
    is the default for a `@numba.njit` function `f` (`backend="python"` for Python).
    """
    if has_aux:
        pair, pair_dot = jvp(f, primals, tangents, backend=backend, **kwargs)
        out, aux = split_aux(f, pair, "jvp")
        return out, pair_dot[0], aux
    # the fast path: the f_jvp of f's last call, for n primals and n tangents, which
    # checks their types (and that no tangent is None) itself, raising Respecialize (only
    # calls on the Python backend set it, and only such calls take it)
    ref, version, n, fn = _last
    try:
        fast = (ref() is f and version == registry.version and backend in (None, "python")
                and len(primals) == n == len(tangents))
    except TypeError:       # primals without a length (a generator)
        fast = False
    if fast:
        try:
            return fn(*primals, *tangents, **kwargs) if kwargs else fn(*primals, *tangents)
        except runtime.Respecialize:
            pass
    if numba_api.default_backend(f, backend) == "numba":
        return numba_api.jvp(f, primals, tangents, kwargs)
    return _jvp(f, primals, tangents, kwargs)


# (weakref to f, registry version, number of primals, f_jvp): jvp's fast path, for the
# function of the last call of jvp, if that call gave every tangent, by position (and f
# is a function, not a method). (Not a dict keyed by id(f): a call of id() is reported to
# audit hooks, and s2sad has one, see frontend/guards.py.)
_last = (lambda: None, None, None, None)

# weakref(f) -> {(first, registry version, *argument types, *tangent types): (f_jvp, names,
# skip)}: jvp's general path, two dict lookups per call instead of reading f's signature
# (which costs more than a small jvp); an entry goes when its function does.
_jvp_calls = {}


def _jvp(f, primals, tangents, kwargs):
    """jvp's general path: the first call, methods, tangents left out, other types."""
    primals, tangents = tuple(primals), tuple(tangents)
    f = variadic.for_call(f, primals, kwargs)
    if len(primals) != len(tangents):
        raise S2SADError(f"jvp needs one tangent per primal: got {len(primals)} primal(s) "
                         f"and {len(tangents)} tangent(s)")
    if getattr(f, "s2s_made_by", None) == "grad_grad":
        f = f.s2s_as_gradient()
    if _gradient(f) is not None:
        return _gradient_tangent(f, primals, tangents, kwargs)
    first = 0
    if type(f) is types.MethodType:   # differentiate the function, not the instance
        f, primals, first = f.__func__, (f.__self__,) + primals, 1
    # the types of the tangents tell which are None (arguments left out)
    key = (first, registry.version, *map(type, primals), *map(type, tangents))
    if kwargs:
        key += tuple(sorted((k, type(v)) for k, v in kwargs.items()))
    per_fn = _calls_of(f)
    entry = per_fn.get(key)
    if entry is None:
        if any(k[1] != registry.version for k in per_fn):
            per_fn.clear()
        entry = per_fn[key] = _jvp_entry(f, primals, tangents, first, kwargs)
    _remember(f, first, primals, entry)
    try:
        return _run(entry, primals, tangents, kwargs)
    except runtime.Respecialize:
        # a field of a dataclass argument changed type, which the key does not see
        entry = per_fn[key] = _jvp_entry(f, primals, tangents, first, kwargs)
        _remember(f, first, primals, entry)
        return _run(entry, primals, tangents, kwargs)


def _gradient_tangent(f, primals, tangents, kwargs):
    """`jvp(f, primals, tangents)` for a gradient `f`, `grad(g, i)`: its value, and
    forward mode over the gradient code of `g` (forward over reverse, as `hvp`) along
    the tangents that are not None."""
    primal, grad_wrt = gradient_of(f)
    target = _target(primal)
    wrt = tuple(k for k, t in enumerate(tangents) if t is not None)
    if not wrt:
        raise S2SADError("jvp needs at least one tangent that is not None")
    refuse_complex(target, wrt, primals, numbers=True)
    arg_types = arg_types_of(target, primals, kwargs)
    tangents = [tangents[k] for k in wrt]
    if getattr(f, "holomorphic", False):     # (its value is not the gradient code's)
        return f(*primals, **kwargs), _call(_gradient_jvp(primal, grad_wrt, wrt, arg_types),
                                            primals, kwargs, tangents)
    # the gradient and its tangent from one pass of forward mode over the gradient code
    return _call(_gradient_jvp(primal, grad_wrt, wrt, arg_types, value=True), primals,
                 kwargs, tangents)


def _run(entry, primals, tangents, kwargs):
    fn, names, skip = entry
    if skip:
        tangents = tuple(t for t in tangents if t is not None)
    if names is None:
        return fn(*primals, *tangents, **kwargs)
    return fn(*primals, **kwargs, **dict(zip(names, tangents)))


def _calls_of(f):
    try:
        return _jvp_calls[weakref.ref(f)]
    except KeyError:
        return _jvp_calls.setdefault(weakref.ref(f, _forget), {})
    except TypeError:   # f is not weakly referable: no cache
        return {}


def _forget(ref, calls=_jvp_calls):
    calls.pop(ref, None)


def _remember(f, first, primals, entry):
    """Make `entry` jvp's fast path for `f` if it can be (see `_last`), else leave none."""
    fn, names, skip = entry
    global _last
    if first or names is not None or skip:
        _last = (lambda: None, None, None, None)
        return
    try:
        _last = (weakref.ref(f), registry.version, len(primals), fn)
    except TypeError:
        pass


def _jvp_entry(f, primals, tangents, first, kwargs):
    """`(f_jvp, names, skip)`: the compiled `f_jvp` for the arguments `primals` (the
    version that checks them), the first `first` of them not differentiated (a method's
    instance), nor those whose tangent is None (then `skip`); `names` are the names of its
    tangent parameters if they must be passed by name, None if by position."""
    if len(primals) == first:
        raise S2SADError("jvp needs the positional arguments to differentiate at")
    wrt = tuple(i for i in range(first, len(primals)) if tangents[i - first] is not None)
    if not wrt:
        raise S2SADError("jvp needs at least one tangent that is not None")
    refuse_complex(f, wrt, primals, numbers=True)
    d = compiled(f, wrt, arg_types_of(_target(f), primals, kwargs), guard=True)
    code = getattr(d.fn, "__code__", None)
    by_position = (code is not None and
                   code.co_varnames[len(primals):code.co_argcount] == tuple(d.tangent_names))
    return d.fn, None if by_position else d.tangent_names, len(wrt) < len(primals) - first


def _wrt(target, wrt):
    many = isinstance(wrt, (tuple, list))
    return many, _indices(target, tuple(wrt) if many else wrt)


def _bound_to(f):
    """`(function, instance)` for a bound method `f` of a Python function, or for the
    derivative of one (`grad(model.loss)`); else None."""
    if type(f) is types.MethodType and inspect.isfunction(f.__func__):
        return f.__func__, f.__self__
    bound = getattr(f, "s2s_bound", None)
    if bound is not None and not inspect.isfunction(f):
        return bound
    return None


def _of_method(transform, f, wrt, **options):
    """`transform(f, wrt, **options)` for a bound method `f` (see `_bound_to`): the
    transform of its function with respect to the parameters after the instance (`wrt`
    counted from the first of them), called with the instance first, as `grad` does."""
    fn, instance = _bound_to(f)
    if wrt is None:
        wrt = 0
    shifted = (tuple(w + 1 if isinstance(w, int) and w >= 0 else w for w in wrt)
               if isinstance(wrt, (tuple, list)) else
               wrt + 1 if isinstance(wrt, int) and wrt >= 0 else wrt)
    derivative = transform(fn, shifted, **options)

    def of_method(*args, **kwargs):
        return derivative(instance, *args, **kwargs)
    of_method.__name__ = getattr(f, "__name__", "method")
    of_method.__qualname__ = getattr(f, "__qualname__", of_method.__name__)
    of_method.__doc__ = getattr(f, "__doc__", None)
    return of_method


def _indices(fn, wrt):
    """The positional indices `wrt` names (reading the source once per function; the
    cache does not keep the function alive)."""
    try:
        per_fn = _indices_of.setdefault(fn, {})
    except TypeError:       # (not weakly referable)
        return wrt_indices(fn, wrt)
    if wrt not in per_fn:
        per_fn[wrt] = wrt_indices(fn, wrt)
    return per_fn[wrt]


_indices_of = weakref.WeakKeyDictionary()


def split_aux(fn, pair, made_by):
    """`(output, aux)`, the result `pair` of `fn` differentiated with `has_aux=True` (by
    `made_by`, the API function's name); a located error if it is not a pair."""
    if type(pair) is tuple and len(pair) == 2:
        return pair
    target = _target(getattr(fn, "__func__", fn))
    found = (f"a tuple of {len(pair)}" if isinstance(pair, tuple) else
             f"a {type(pair).__name__}")
    raise S2SADError(f"{defined_at(target)}{made_by}({target.__name__}, has_aux=True) needs "
                     f"{target.__name__}() to return a pair (output, aux), as JAX does; it "
                     f"returned {found}")


def fresh_aux(aux):
    """`aux` as a value of its own: its containers rebuilt and its arrays copied, so that
    changing it cannot change what a pullback reads."""
    return pytrees.map(lambda leaf: leaf.copy() if isinstance(leaf, np.ndarray) else leaf,
                       aux)


def gradient_code(f, arg_types=None):
    """The compiled gradient code (`g_grad`, without its argument-type guard, calling
    other Python functions through their `h_adjoint`, see driver.gradient_code) that
    forward over reverse differentiates for gradient `f` (see `gradient_of`), for
    arguments of `arg_types` (by default, those `source` assumes)."""
    primal, grad_wrt = gradient_of(f)
    return _gradient_code(_target(primal), grad_wrt, arg_types)


def _gradient_code(target, grad_wrt, arg_types=None):
    return warn_unconnected(driver.gradient_code(target, grad_wrt, arg_types))


def _gradient_jvp(f, grad_wrt, wrt, arg_types, value=False):
    """The compiled forward mode, along parameters `wrt` (indices), of the `f_grad` that
    `grad(f, grad_wrt)` runs (forward over reverse), for arguments of `arg_types`, through
    the cache. The gradient code is compiled without its argument-type guard (the
    callers pick the version by the arguments' types) and calls other functions
    through their adjoints (see `gradient_code`). It returns the gradient's tangent
    alone, computing no tangent of the value but those that tangent needs; with `value`,
    the pair (gradient, tangent), both from one pass (what `jvp(grad(f), ...)` returns)."""
    grad = _gradient_code(_target(f), grad_wrt, arg_types)
    return driver.derivative(grad.fn, tuple(wrt), arg_types, Options(
        Variant.JVP if value else Variant.TANGENT, guard=False, complex_output=True))


def gradient_of(f):
    """`(primal, wrt)` if `f` is a gradient made by s2sad whose forward mode is forward
    over reverse (made by `grad`, `value_and_grad`, `hvp` or `hessian`), else None."""
    if getattr(f, "s2s_forward_over_reverse", False):
        return f.primal, f.wrt
    return None


def _gradient(f):
    """`(primal, wrt)` if `f` is `grad(primal, wrt)` (which runs the gradient code,
    `Variant.GRAD`), whose Jacobian is forward mode over that code, else None."""
    return gradient_of(f) if getattr(f, "variant", None) is Variant.GRAD else None


def source(f, wrt=None, at=None):
    """The forward-mode source `s2sad.source(f, mode="forward", wrt=wrt, at=at)` gives:
    `f_jvp` for a function, and for a gradient `grad(g)` (or `value_and_grad`, `hvp`,
    `hessian`, `grad(grad(g))` of `g`) the forward mode of the gradient code it runs,
    `g_grad_jvp`, with tangents for `g`'s parameters `wrt` (by default those
    of the second derivative's tangent, the first parameter for a gradient)."""
    if wrt is None:
        wrt = getattr(f, "s2s_tangents", 0)
    wrt = tuple(wrt) if isinstance(wrt, (tuple, list)) else (wrt,)
    gradient = gradient_of(f)
    if gradient is None:
        arg_types = None if at is None else arg_types_of(_target(f), at)
        return compiled(f, wrt, arg_types).source
    primal, grad_wrt = gradient
    target = _target(primal)
    arg_types = default_arg_types(target) if at is None else arg_types_of(target, at)
    indices = tuple(wrt_indices(target, wrt))
    return _gradient_jvp(primal, grad_wrt, indices, arg_types).source


def _mark_gradient(derivative, f, wrt, kind, tangents=None):
    """Name `derivative` (made by `hvp`, `hessian` or `grad(grad(f))`) and mark it as
    forward over reverse of `f`'s gradient with respect to `wrt`, with tangents along
    `tangents` (by default `wrt`), for `source(derivative, mode="forward")` and the CLI."""
    derivative.__name__ = derivative.__qualname__ = f"{kind}_{getattr(f, '__name__', 'f')}"
    derivative.primal, derivative.wrt = f, wrt
    derivative.s2s_tangents = wrt if tangents is None else tangents
    derivative.s2s_derivative = derivative.s2s_forward_over_reverse = True
    derivative.s2s_made_by = kind
    return derivative


def defjvp(prim: Callable, params: str, *templates: str | None,
           namespace: dict | None = None) -> None:
    """Register the forward-mode rule of `prim` (the counterpart of `defvjp`): for each
    parameter, a Python expression for its contribution to the tangent of the result,
    written over the parameter names, `t` (the tangent of that parameter) and `ans`
    (the result); `None` for no derivative. Other names are looked up in `namespace`.

    >>> import math, s2sad
    >>> def softplus(x):
    ...     return math.log1p(math.exp(x))
    >>> s2sad.defjvp(softplus, "x", "t / (1 + exp(-x))", namespace={"exp": math.exp})
    >>> def loss(w):
    ...     return softplus(3 * w)
    >>> s2sad.jvp(loss, (0.0,), (1.0,))
    (0.6931471805599453, 1.5)
    """
    registry.jvp(prim, params, *templates, namespace=namespace)
