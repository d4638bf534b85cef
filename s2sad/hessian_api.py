"""Second derivatives: hvp, hessian, hessp and grad(grad(f)), forward mode over the
generated gradient code (forward over reverse)."""
from __future__ import annotations

import inspect
from typing import Callable

import numpy as np

from . import numba_api, variadic
from .compilation import Wrt, arg_types_of, refuse_complex, wrt_indices, wrt_or_argnums
from .errors import NonScalarOutputError, S2SADError
from .forward_api import (_as_one_call, _bound_to, _by_position, _call, _gradient_jvp,
                          _indices, _mark_gradient, _of_method, _target)
from . import batched_jacobians as batched
from .jacobian_api import (_assemble, _basis, _batched_forward, _forward_plan, _is_scalar,
                           _template)
from .rules import registry


def second_derivative(df, wrt):
    """`grad(grad(f, i), j)`: forward mode over the generated gradient of `f` (forward
    over reverse), for a scalar derivative df/dx_i.

    >>> import s2sad
    >>> def f(x, y):
    ...     return x ** 3 * y
    >>> s2sad.grad(s2sad.grad(f))(2.0, 5.0)          # d2f/dx2 = 6 x y
    60.0
    >>> s2sad.grad(s2sad.grad(f), wrt=1)(2.0, 5.0)   # d2f/dx dy = 3 x^2
    12.0

    A third derivative, `grad(grad(grad(f)))`, is forward mode over the reverse mode of
    the gradient code (see api.py's `_as_gradient`), and so on for higher ones:

    >>> s2sad.grad(s2sad.grad(s2sad.grad(f)))(2.0, 5.0)     # 6 y
    30.0
    """
    if isinstance(df.wrt, (tuple, list)) or isinstance(wrt, (tuple, list)):
        raise S2SADError("grad(grad(f)) takes one parameter at each level; use "
                         "s2sad.hessian for all second derivatives at once")

    def second(*args, **kwargs):
        args, kwargs = _by_position(df.primal, args, kwargs)
        target = _target(df.primal)
        i = wrt_indices(target, df.wrt)[0]
        j = wrt_indices(target, wrt)[0]
        _check_scalar_gradient(target, i, args[i])
        refuse_complex(target, [i, j], args)
        d = _gradient_jvp(df.primal, i, (j,), arg_types_of(target, args))
        if _is_scalar(args[j]):
            return _call(d, args, kwargs, (1.0,))
        like = _template(args[j])
        return _assemble(_as_one_call(target, [lambda e=e: _call(d, args, kwargs, (e,))
                                               for e in _basis(like)]), 0.0, like)
    return _mark_gradient(second, df.primal, df.wrt, "grad_grad", tangents=wrt)


def _check_scalar_gradient(target, i, x):
    """Refuse `grad(grad(f))` where the inner gradient, like argument `i`, is not a
    number: the outer `grad` needs a scalar."""
    if _is_scalar(x):
        return
    name = target.__qualname__
    found = (f"an array of shape {np.shape(x)}" if isinstance(x, np.ndarray) else
             f"a {type(x).__name__}")
    parameter = list(inspect.signature(target).parameters)[i]
    raise NonScalarOutputError(
        f"grad(grad({name})): the inner gradient, like argument {parameter!r}, is {found}, "
        f"not a scalar, and grad needs a scalar output; use s2sad.hessian({name}) or "
        f"s2sad.jacfwd(s2sad.grad({name})) for its derivatives")


def hvp(f: Callable, wrt: Wrt | None = None, *, backend: str | None = None,
        argnums: int | tuple | None = None) -> Callable:
    """The Hessian-vector product of scalar function `f`: `hvp(f)(*args, v)` is the
    Hessian of `f` with respect to argument `wrt`, at `args`, times `v`. Exact: forward
    mode applied to the generated gradient code (forward over reverse), at the cost of
    a few gradients, without forming the Hessian.

    >>> import s2sad
    >>> def f(x, y):
    ...     return x ** 3 * y
    >>> s2sad.hvp(f)(2.0, 5.0, 1.0)                # d2f/dx2 = 6 x y
    60.0

    With `backend="numba"`, the forward mode of the numba backend's gradient code,
    compiled by `numba.njit` (see docs/numba.md); that is the default for a
    `@numba.njit` function `f`. `argnums` may stand for `wrt`, as in `grad`. For SciPy's
    order of arguments, `(x, v, *args)`, see `hessp`. Of a complex number or array `z`
    (the Python backend), it is the derivative of the gradient along the complex
    direction `v`, `jvp(grad(f), (z,), (v,))` (docs/complex.md).
    """
    if variadic.takes_varargs(f):
        return variadic.Derivative(
            f, lambda g: hvp(g, wrt, backend=backend, argnums=argnums), extra=1)
    wrt = wrt_or_argnums(wrt, argnums)
    if _bound_to(f) is not None:
        return _of_method(hvp, f, wrt, backend=backend)
    backend = numba_api.default_backend(f, backend)
    compiled_for = {}   # (argument types, registry version) -> the compiled code

    def product(*args, **kwargs):
        *args, v = args
        args, kwargs = _by_position(f, args, kwargs)
        # (complex arrays are of a kind of their own: see compilation.arg_types_of)
        key = (tuple(map(type, args)), registry.version,
               tuple(getattr(getattr(a, "dtype", None), "kind", None) == "c" for a in args))
        d = compiled_for.get(key)
        if d is not None and not all(type(a) in (float, int, np.ndarray) for a in args):
            arg_types_of(_target(f), args)      # (refuses an attribute hiding a method)
        if d is None or not d.holds():      # (made before a binding it resolved changed)
            if len(compiled_for) > 16:
                compiled_for.clear()
            d = compiled_for[key] = _product(f, wrt, args, backend)
        return d(*args, v, **kwargs)
    return _mark_gradient(product, f, wrt, "hvp")


def _product(f, wrt, args, backend):
    """`product(*args, v, **kwargs)`: the Hessian of `f` with respect to `wrt` at `args`,
    times `v`, compiled for the types of `args` by `backend`; `product.holds()` tells
    whether the bindings its code resolved are still those it was compiled with."""
    if backend == "numba":
        if isinstance(wrt, (tuple, list)):
            raise S2SADError("hessian and hvp differentiate with respect to one argument; "
                             f"got wrt={wrt!r}")
        return numba_api.gradient_jvp(f, _indices(_target(f), wrt)[0], args)
    d = _grad_jvp(f, wrt, args, complex_too=True)[1]

    def product(*args, **kwargs):
        return _call(d, args[:-1], kwargs, args[-1:])
    product.holds = d.holds
    return product


def hessian(f: Callable, wrt: Wrt | None = None, *, backend: str | None = None,
            argnums: int | tuple | None = None) -> Callable:
    """The Hessian of scalar function `f` with respect to argument `wrt` (shape
    `x.shape + x.shape`), exactly: one Hessian-vector product per element of `x`.

    >>> import numpy as np, s2sad
    >>> def rosenbrock(x):
    ...     return (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2
    >>> s2sad.hessian(rosenbrock)(np.array([1.0, 1.0]))
    array([[ 802., -400.],
           [-400.,  200.]])

    For `x` a tuple, list, dict, named tuple or dataclass, the Hessian is nested like
    JAX's: `H[k1][k2]`, of shape `x[k1].shape + x[k2].shape`, is the block of second
    derivatives with respect to `x[k1]` and `x[k2]` (a float for two numbers):

    >>> def energy(p):
    ...     return np.sum(p["w"] ** 2) * p["b"] + p["b"] ** 3
    >>> H = s2sad.hessian(energy)({"w": np.array([1.0, 2.0]), "b": 0.5})
    >>> H["w"]["w"], H["w"]["b"], H["b"]["b"]       # 2 b I, 2 w, 6 b
    (array([[1., 0.],
           [0., 1.]]), array([2., 4.]), 3.0)

    With a tuple `wrt`, the Hessian with respect to those arguments is nested the same
    way, as JAX's: the tuple of rows `(H[0], H[1], ...)`, `H[k][l]` the block of second
    derivatives with respect to argument `wrt[k]` then `wrt[l]` (`hvp` takes one
    argument):

    >>> def f(x, y):
    ...     return x * x * y
    >>> s2sad.hessian(f, wrt=(0, 1))(2.0, 3.0)     # ((2 y, 2 x), (2 x, 0))
    ((6.0, 4.0), (4.0, 0.0))

    With `backend="numba"`, each product is the numba backend's `hvp` (see
    docs/numba.md), for numbers and arrays; that is the default for a `@numba.njit`
    function `f`. `argnums` may stand for `wrt`, as in `grad`.
    """
    if variadic.takes_varargs(f):
        return variadic.Derivative(
            f, lambda g: hessian(g, wrt, backend=backend, argnums=argnums), extra=0)
    wrt = wrt_or_argnums(wrt, argnums)
    if _bound_to(f) is not None:
        return _of_method(hessian, f, wrt, backend=backend)
    backend = numba_api.default_backend(f, backend)

    def plan(args, kwargs):
        target = _target(f)
        many = isinstance(wrt, (tuple, list))
        indices = tuple(_indices(target, tuple(wrt) if many else wrt))
        refuse_complex(target, indices, args)
        return _forward_plan((f, indices if many else indices[0]), indices, args, kwargs,
                             arg_types_of(target, args), many, True)
    plans = batched.Plans(plan)

    def hess(*args, **kwargs):
        args, kwargs = _by_position(f, args, kwargs)
        known = None if backend == "numba" else plans.get(args, kwargs)
        if known is not None:
            H = known(args, kwargs, [_template(args[i]) for i in known.indices])
            if H is not None:
                return H
        if backend == "numba":
            product = _product(f, wrt, args, backend)      # (refuses a tuple wrt)
            like = _template(args[_indices(_target(f), wrt)[0]])
            return _assemble([product(*args, e, **kwargs) for e in _basis(like)], like, like)
        if isinstance(wrt, (tuple, list)):
            return _blocks(f, wrt, args, kwargs)
        i, d = _grad_jvp(f, wrt, args)
        like = _template(args[i])
        H = _batched_forward((f, i), (i,), [like], args, kwargs, arg_types_of(
            _target(f), args), False, True)
        if H is not None:
            return H
        return _assemble(_as_one_call(_target(f), [lambda e=e: _call(d, args, kwargs, (e,))
                                                   for e in _basis(like)]), like, like)
    return _mark_gradient(hess, f, wrt, "hessian")


def _blocks(f, wrt, args, kwargs):
    """The Hessian of `f` with respect to the arguments `wrt` (a tuple) at `args`, as
    JAX gives it: the tuple of rows, row k the tuple of blocks `H[k][l]`, the second
    derivatives with respect to argument `wrt[k]` then `wrt[l]`, of shape
    `x_k.shape + x_l.shape` (nested for a structure, as `jacfwd`'s). Column l is forward
    mode along argument `wrt[l]` over the gradient code with respect to all of them."""
    target = _target(f)
    indices = _indices(target, tuple(wrt))
    refuse_complex(target, indices, args)
    arg_types = arg_types_of(target, args)
    likes = tuple(_template(args[i]) for i in indices)
    H = _batched_forward((f, tuple(indices)), indices, likes, args, kwargs, arg_types,
                         True, True)
    if H is not None:
        return H
    columns = []
    for i, like in zip(indices, likes):
        d = _gradient_jvp(f, tuple(indices), (i,), arg_types)
        columns += [lambda d=d, e=e: _call(d, args, kwargs, (e,)) for e in _basis(like)]
    # each column is the tuple of the gradient's tangents, one per argument of `wrt`
    return _assemble(_as_one_call(target, columns), likes, likes)


def hessp(f: Callable, wrt: Wrt | None = None, *, backend: str | None = None,
          argnums: int | tuple | None = None) -> Callable:
    """The Hessian-vector product of scalar function `f` in SciPy's order of arguments:
    `hessp(f)(x, p, *args)` is the Hessian of `f(x, *args)` with respect to `x`, times
    `p`, as `scipy.optimize.minimize(f, x0, args=args, hessp=s2sad.hessp(f))` calls it
    (`hvp(f)(x, *args, p)` computes the same). With `wrt` (or `argnums`) the index `k`
    of another parameter, `p` follows that argument: `hessp(f, k)(a0, ..., ak, p, ...)`.
    `backend` is that of `hvp`.

    >>> import numpy as np, s2sad
    >>> from scipy.optimize import minimize
    >>> def f(x, a):
    ...     return np.sum(a * (x - 1.0) ** 2) + x[0] * x[1]
    >>> result = minimize(f, np.zeros(2), args=(2.0,), method="trust-ncg",
    ...                   jac=s2sad.grad(f), hessp=s2sad.hessp(f))
    >>> np.round(result.x, 6)                  # (4 I + [[0, 1], [1, 0]]) x = (4, 4)
    array([0.8, 0.8])
    """
    if variadic.takes_varargs(f):
        return variadic.Derivative(
            f, lambda g: hessp(g, wrt, backend=backend, argnums=argnums), extra=1)
    wrt = wrt_or_argnums(wrt, argnums)
    if isinstance(wrt, (tuple, list)):
        raise S2SADError("hessp differentiates with respect to one argument, as SciPy's x; "
                         f"got wrt={wrt!r}")
    product = hvp(f, wrt, backend=backend)

    def hessp_of(*args, **kwargs):
        k = _indices(_target(f), wrt)[0] + 1        # (the number of arguments before p)
        if len(args) < k + 1:
            raise S2SADError(f"hessp({getattr(f, '__name__', 'f')}) takes the arguments "
                             f"of {getattr(f, '__name__', 'f')} with the vector p after "
                             f"argument {k - 1} (SciPy's order: x, p, *args); got "
                             f"{len(args)} argument(s)")
        return product(*args[:k], *args[k + 1:], args[k], **kwargs)
    return _mark_gradient(hessp_of, f, wrt, "hessp")


def _grad_jvp(f, wrt, args, complex_too=False):
    """`(i, d)`: the index `i` of parameter `wrt` and the compiled forward mode `d`, along
    that parameter, of `f`'s gradient code, for `args`; `d` returns `g_dot`, the
    Hessian times the tangent. With `complex_too` (`hvp`), the argument may be a complex
    number or array: `g_dot` is then the derivative of the gradient along the tangent
    (docs/complex.md), which no complex Hessian matrix gives (`hessian` refuses)."""
    if isinstance(wrt, (tuple, list)):
        raise S2SADError("hvp differentiates with respect to one argument; got "
                         f"wrt={wrt!r} (s2sad.hessian(f, wrt={tuple(wrt)!r}) gives the "
                         "blocks of the Hessian with respect to several)")
    target = _target(f)
    i = _indices(target, wrt)[0]
    refuse_complex(target, [i], args, numbers=complex_too)
    return i, _gradient_jvp(f, i, (i,), arg_types_of(target, args))
