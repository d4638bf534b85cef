"""Derivatives of calls that take a user's function, and of roots by the implicit function
theorem: the objects that stand for such calls in differentiated code
(frontend/callables.py), the run-time derivatives of the user's function they read, and
`custom_root` and `fixed_point`.

An object that stands for a call (`Standing`) is a custom rule in both modes: `fwd` runs
the call and keeps what `bwd` needs, `bwd` gives one cotangent per argument of the call
that stands for it, `rule` the value and its tangent. A root x* of r(x, theta) = 0 has
dx*/dtheta = -(dr/dx)^-1 dr/dtheta (`ImplicitRoot`): its rules compute the Jacobian dr/dx
(s2sad's jacfwd), solve one linear system, and take one vjp or jvp of r along theta
(s2sad's own derivatives of r, compiled once and cached like any other). The iterations of
the solver are never differentiated. Second derivatives are forward mode over that rule
(`root_adjoint_tangent`): the tangent of the adjoint, with the linear solve differentiated
and s2sad's second derivatives of r (forward over reverse).
"""
from __future__ import annotations

import functools
import inspect
import weakref
from typing import Any, Callable

import numpy as np

from . import driver, forward_api, jacobian_api
from .compilation import arg_types_of
from .errors import S2SADError, UnsupportedSyntaxError
from .frontend import callables
from .frontend.source import function_from_source, identifier
from .rules import pytrees


class Function:
    """The user's function `fn` as s2sad differentiates it at run time: `at` is a Python
    function of the point `x` and the values `theta` (the extra arguments, then the values
    bound to `names`), which calls `fn(x, *extra, **bound)`, a value whose name is a
    number k passed before x, as a `partial`'s k-th positional one; `around` is what `at` returns
    of that call's value `{}` (`"{} - x"`, whose roots are fn's fixed points), `role` the
    end of its name and `namespace` the names `around` reads."""

    def __init__(self, fn, n_extra, names=(), gap=False, around="{}", role="at",
                 namespace=None):
        self.fn = fn
        self._paired = {}           # {wrt: pullback_tangent's function}
        own = ["x"]
        extra = [f"a{k}" for k in range(n_extra)]
        bound = [f"b{k}" for k in range(len(names))]
        # (a name that is a number is a positional argument of a partial: before x)
        call = ", ".join([b for n, b in zip(names, bound) if isinstance(n, int)] + own
                         + extra + [f"{n}={b}" for n, b in zip(names, bound)
                                    if not isinstance(n, int)])
        if gap:         # (the function's fixed points are roots)
            around, role = "{} - x", "gap"
        self.at = function_from_source(
            f"def {identifier(fn)}_{role}({', '.join(own + extra + bound)}):\n"
            f"    return {around.format(f'_s2s_fn({call})')}\n",
            dict(namespace or {}, _s2s_fn=fn))
        self.at.__module__ = getattr(fn, "__module__", None) or "__main__"

    def __call__(self, *args):
        return self.at(*args)

    def jacobian(self, x, theta):
        """dr/dx at (x, theta), as a matrix of r's size by x's (a number for numbers)."""
        if np.ndim(x) == 0 and isinstance(x, (float, np.floating)):    # (one jvp)
            jac = self.tangent((x,) + tuple(theta), (1.0,) + (None,) * len(theta))
            if np.ndim(jac) == 0:
                return jac
        if getattr(self, "_jacfwd", None) is None:
            self._jacfwd = jacobian_api.jacfwd(self.at, 0)
        jac = self._jacfwd(x, *theta)
        return jac if np.ndim(x) == 0 and np.ndim(jac) == 0 else np.reshape(
            jac, (-1, np.size(x)))

    def pullback(self, args, wrt, w):
        """The adjoints of the arguments `wrt` (positions in `args`) of `at(*args)` for the
        adjoint `w` of its result."""
        if not wrt:
            return ()
        return self.pullbacks(args, wrt)(args, w)

    def pullbacks(self, like, wrt):
        """A function `(args, w) -> the adjoints of the arguments wrt` (as `pullback`),
        for arguments of the types of `like`: compiled once, for many calls (quad's)."""
        fn = driver.derivative(self.at, tuple(wrt), arg_types_of(self.at, like)).fn
        many = len(wrt) > 1

        def adjoints(args, w):
            out = fn(*args)[1](w)
            return tuple(out) if many else (out[0] if isinstance(out, tuple) else out,)
        return adjoints

    def tangent(self, args, dots):
        """The tangent of `at(*args)` along `dots` (None for an argument held fixed)."""
        return forward_api.jvp(self.at, args, dots)[1]

    def pullback_tangent(self, args, wrt, w, dots, w_dot=None):
        """`pullback(args, wrt, w)` and its tangent along the tangents `dots` of `args`
        (None where fixed) and `w_dot` of `w` (see `Paired`)."""
        key = tuple(wrt)
        if key not in self._paired:
            self._paired[key] = Paired(self.at, key)
        return self._paired[key](args, w, dots, w_dot)


class Paired:
    """The adjoints of the arguments `wrt` (positions) of `at(*args)` for an adjoint `w`
    of its value, and their tangents along tangents of `args` and of `w`: forward mode
    over s2sad's gradient of w . at(*args) (the second derivatives of `at` a second
    derivative through a solver reads)."""

    def __init__(self, at, wrt):
        from . import api
        self.wrt = tuple(wrt)
        params = list(inspect.signature(at).parameters)
        names = ", ".join(params + ["_s2s_w"])
        paired = function_from_source(
            f"def {at.__name__}_paired({names}):\n"
            f"    return _s2s_sum(_s2s_w * _s2s_at({', '.join(params)}))\n",
            {"_s2s_sum": np.sum, "_s2s_at": at})
        paired.__module__ = at.__module__
        self.pulled = function_from_source(
            f"def {at.__name__}_pulled({names}):\n"
            f"    return _s2s_grad({names})\n",
            {"_s2s_grad": api.grad(paired, wrt=self.wrt if len(self.wrt) > 1
                                   else self.wrt[0])})
        self.pulled.__module__ = at.__module__

    def __call__(self, args, w, dots, w_dot=None):
        """(the adjoints, their tangents), tuples in the order of `wrt`: `dots` the
        tangents of `args` (None where fixed), `w_dot` of `w` (None for zero)."""
        dots = tuple(pytrees.zeros_like(a) if d is None else d for a, d in zip(args, dots))
        w_dot = pytrees.zeros_like(w) if w_dot is None else w_dot
        value, tangent = forward_api.jvp(self.pulled, tuple(args) + (w,), dots + (w_dot,))
        if len(self.wrt) == 1:
            return (value,), (tangent,)
        return tuple(value), tuple(tangent)


def carried(theta):
    """The positions of the values of `theta` that carry derivatives."""
    return [k for k, v in enumerate(theta) if pytrees.carries_derivative(v)]


def root_adjoint(r, x, theta, g):
    """The adjoints of `theta` (None where none) of the root x* = x of r(., theta) = 0, for
    the adjoint `g` of x*: -(dr/dtheta)^T (dr/dx)^-T g."""
    wrt = carried(theta)
    if not wrt:
        return (None,) * len(theta)
    jac = r.jacobian(x, theta)
    if np.ndim(jac) == 0:
        w = -np.asarray(g) / jac
        w = w if np.ndim(x) else float(w)
    else:
        w = -np.linalg.solve(np.transpose(jac), np.ravel(g)).reshape(np.shape(x))
    adjoints = r.pullback((x,) + tuple(theta), [1 + k for k in wrt], w)
    out = [None] * len(theta)
    for k, a in zip(wrt, adjoints):
        out[k] = a
    return tuple(out)


def root_adjoint_tangent(r, x, theta, g, x_dot, theta_dots, g_dot):
    """`root_adjoint(r, x, theta, g)` and its tangent along the tangents `x_dot` of the
    root, `theta_dots` of theta (None where fixed) and `g_dot` of g: with A = dr/dx and
    w = -A^-T g, the adjoint w . dr/dtheta moves through its second derivatives along
    (x_dot, theta_dots) at w fixed (h), and through w_dot = -A^-T (g_dot + h_x)."""
    wrt = carried(theta)
    if not wrt:
        return (None,) * len(theta), (None,) * len(theta)
    jac = r.jacobian(x, theta)
    w = _solved(jac, -np.asarray(g, dtype=float), x, transpose=True)
    args = (x,) + tuple(theta)
    adjoints, h = r.pullback_tangent(args, [0] + [1 + k for k in wrt], w,
                                     (x_dot,) + tuple(theta_dots))
    g_dot = np.zeros(np.shape(g)) if g_dot is None else np.asarray(g_dot, dtype=float)
    w_dot = _solved(jac, -(g_dot + h[0]), x, transpose=True)
    more = r.pullback(args, [1 + k for k in wrt], w_dot)
    out, dots = [None] * len(theta), [None] * len(theta)
    for j, k in enumerate(wrt):
        out[k], dots[k] = adjoints[1 + j], pytrees.add(h[1 + j], more[j])
    return tuple(out), tuple(dots)


def _solved(jac, b, x, transpose=False):
    """The solution of jac z = b (jac^T z = b with `transpose`), of x's shape."""
    if np.ndim(jac) == 0:
        z = b / jac
        return z if np.ndim(x) else float(z)
    return np.linalg.solve(np.transpose(jac) if transpose else jac,
                           np.ravel(b)).reshape(np.shape(x))


def root_tangent(r, x, theta, dots):
    """The tangent of the root x* = x of r(., theta) = 0 along the tangents `dots` of
    `theta` (None or zeros where none): -(dr/dx)^-1 (dr/dtheta) dots."""
    dots = [d if pytrees.carries_derivative(v) else None for v, d in zip(theta, dots)]
    if all(d is None for d in dots):
        return pytrees.zeros_like(x)
    r_dot = r.tangent((x,) + tuple(theta), (None,) + tuple(dots))
    jac = r.jacobian(x, theta)
    if np.ndim(jac) == 0:
        return -r_dot / jac
    return -np.linalg.solve(jac, np.ravel(r_dot)).reshape(np.shape(x))


class Standing:
    """What stands for a call of a library function that takes a user's function (its
    `Layout`, see frontend/callables.py): called with the call's values by position, and a
    custom rule in both modes. A kind of call says how it runs (`run(given, extra, bound)
    -> (value, point)`, `point` what its rules read) and gives the adjoints
    (`adjoint(point, g, given, extra, bound) -> {(kind, key): adjoint}`, kind "given",
    "extra" or the function's parameter) and the tangent (`tangent(point, value, given,
    extra, bound, dots)`, `dots` split as the values), and, for second derivatives, the
    tangents of its value and point (`tangents`) and of its adjoints
    (`adjoint_and_tangent`): forward mode over reverse-mode code that calls its `fwd` and
    `bwd` (hessian, hvp) differentiates them by those (`Differentiated`)."""

    s2s_custom = ("vjp", "jvp")

    def __init__(self, layout: callables.Layout):
        self.layout = layout
        base = f"{identifier(layout.library)}_{identifier(layout.function)}"
        self.__name__ = self.__qualname__ = base
        self.__module__ = getattr(layout.function, "__module__", None) or "__main__"

        def fwd(*values):
            value, point = self.run(*layout.split(values))
            return value, (values, point)

        def bwd(residuals, g):
            values, point = residuals
            given, extra, bound = layout.split(values)
            return self.ordered(self.adjoint(point, g, given, extra, bound), values)

        def rule(primals, tangents):
            value, point = self.run(*layout.split(primals))
            dots = layout.split(tangents)
            return value, self.tangent(point, value, *layout.split(primals), dots)
        why = (f"second derivatives through {identifier(layout.library)}() are forward "
               "mode over its reverse mode rule (hessian, hvp, jacfwd(grad(...))); reverse "
               "mode over it (grad of a function that calls grad) and forward mode over "
               "its forward rule are not supported yet: use one of those")
        #: [(the calling function's "file:line", (file, line, column, text))] of the
        #: calls of this object (the user's lines a refusal of their second derivatives
        #: names: resolve_calls)
        self.s2s_sites = []
        for helper, role in ((fwd, "fwd"), (bwd, "bwd"), (rule, "jvp")):
            helper.__name__ = helper.__qualname__ = f"{base}_{role}"
            helper.s2s_not_differentiable = why
            helper.s2s_sites = self.s2s_sites
        # (forward mode over the reverse-mode code: hessian, hvp)
        self.fwd = Differentiated(fwd, self.fwd_rule)
        self.bwd = Differentiated(bwd, self.bwd_rule)
        self.rule = rule

    def ordered(self, found, values):
        """The tuple of the adjoints (or their tangents) `found` ({(kind, key): adjoint})
        of the call's `values`, in their order (None where none)."""
        given, extra, bound = self.layout.split(values)
        out = [found.get(("given", k)) for k in given]
        out += [found.get(("extra", k)) for k in range(len(extra))]
        for param, names in bound.items():
            out += [found.get((param, n)) for n in names]
        return tuple(out)

    def fwd_rule(self, values, dots):
        """The forward rule of `fwd`: its value `(value, residuals)` and the tangent."""
        split = self.layout.split(values)
        value, point = self.run(*split)
        value_dot, point_dot = self.tangents(point, value, *split, self.layout.split(dots))
        return (value, (values, point)), (value_dot, (tuple(dots), point_dot))

    def bwd_rule(self, primals, tangents):
        """The forward rule of `bwd`: the adjoints and their tangents."""
        (residuals, g), (residuals_dot, g_dot) = primals, tangents
        (values, point), (values_dot, point_dot) = residuals, residuals_dot
        found, dots = self.adjoint_and_tangent(point, point_dot, g, g_dot,
                                               *self.layout.split(values),
                                               self.layout.split(values_dot))
        return self.ordered(found, values), self.ordered(dots, values)

    def __call__(self, *values):
        return self.run(*self.layout.split(values))[0]

    def refuse(self, why):
        """The error for a call that ran but whose derivative does not exist (a solve that
        did not converge): located at the user's call when s2sad saw one call of this kind
        (`s2s_sites`), else at the user's function (a lambda's is s2sad's lifted copy)."""
        fn = self.layout.function
        places = self.places()
        if len(places) == 1:
            where, line = next(iter(places))[:2]
        else:
            where = getattr(getattr(fn, "__code__", None), "co_filename", "?")
            line = getattr(getattr(fn, "__code__", None), "co_firstlineno", "?")
        return S2SADError(f"{where}:{line}: {identifier(self.layout.library)}() of "
                          f"{identifier(fn)}(): {why}")

    def places(self):
        """The places of the user's calls of this kind that s2sad saw (not those in
        derivatives' code)."""
        return {place for _, place in self.s2s_sites if not str(place[0]).startswith("<s2sad:")}

    def refuse_where_called(self, why):
        """`refuse(why)`, located at the user's call when s2sad saw one call of this kind
        (`s2s_sites`), for what is refused of how the call is differentiated."""
        places = self.places()
        if len(places) != 1:
            return self.refuse(why)
        return UnsupportedSyntaxError(
            f"{identifier(self.layout.library)}() of {identifier(self.layout.function)}(): "
            f"{why}", *places.pop())

    def run(self, given, extra, bound):
        raise NotImplementedError

    def adjoint(self, point, g, given, extra, bound):
        raise NotImplementedError

    def tangent(self, point, value, given, extra, bound, dots):
        raise NotImplementedError

    def tangents(self, point, value, given, extra, bound, dots):
        raise NotImplementedError

    def adjoint_and_tangent(self, point, point_dot, g, g_dot, given, extra, bound, dots):
        raise NotImplementedError


class ImplicitRoot(Standing):
    """A call that finds a root x* of the user's function r(x, *extra, **bound) (the one
    differentiated): its value's derivative is x*'s by the implicit function theorem. A
    kind says how it runs (`solve(given, extra, bound) -> (value, x*)`, refusing a solve
    that did not converge), where x* sits in the value (`solution_adjoint(g, value)`, the
    adjoint of x* in the adjoint of the value; `with_tangent(value, x_dot)`, the value's
    tangent), and what function is zero at x* (`residual`, by default the user's)."""

    #: whether the roots are the fixed points of the user's function (x = f(x, theta))
    gap = False

    def __init__(self, layout):
        super().__init__(layout)
        param, fn, names = layout.functions[0]
        self.param, self.names = param, names
        self.residual = Function(fn, layout.n_args, names, gap=self.gap)

    def theta(self, extra, bound):
        return tuple(extra) + tuple(bound[self.param].values())

    def run(self, given, extra, bound):
        value, x = self.solve(given, extra, bound)
        return value, (x, value)

    def theta_dots(self, theta, dots):
        """The tangents of `theta` in the tangents `dots` of the call's values, split as
        they are (None where a value carries none)."""
        _, extra_dots, bound_dots = dots
        return tuple(d if pytrees.carries_derivative(v) else None for v, d in zip(
            theta, tuple(extra_dots) + tuple(bound_dots[self.param].values())))

    def keys(self, extra):
        return [("extra", k) for k in range(len(extra))] + [(self.param, n)
                                                            for n in self.names]

    def tangents(self, point, value, given, extra, bound, dots):
        """The tangents of the value and of `point` (`fwd_rule`'s)."""
        value_dot = self.tangent(point, value, given, extra, bound, dots)
        x_dot = self.solution_adjoint(value_dot, value)
        return value_dot, (pytrees.zeros_like(point[0]) if x_dot is None else x_dot,
                           value_dot)

    def adjoint_and_tangent(self, point, point_dot, g, g_dot, given, extra, bound, dots):
        """`adjoint(point, g, given, extra, bound)` and its tangent ({(kind, key):
        tangent}) along `point_dot`, `g_dot` and the tangents `dots` of the values."""
        (x, value), (x_dot, _) = point, point_dot
        gx = self.solution_adjoint(g, value)
        if gx is None:
            return {}, {}
        gx_dot = None if g_dot is None else self.solution_adjoint(g_dot, value)
        theta = self.theta(extra, bound)
        adjoints, tangents = root_adjoint_tangent(self.residual, x, theta, gx, x_dot,
                                                  self.theta_dots(theta, dots), gx_dot)
        keys = self.keys(extra)
        return dict(zip(keys, adjoints)), dict(zip(keys, tangents))

    def adjoint(self, point, g, given, extra, bound):
        x, value = point
        g = self.solution_adjoint(g, value)
        if g is None:
            return {}
        theta = self.theta(extra, bound)
        adjoints = root_adjoint(self.residual, x, theta, g)
        keys = [("extra", k) for k in range(len(extra))] + [(self.param, n)
                                                               for n in self.names]
        return dict(zip(keys, adjoints))

    def tangent(self, point, value, given, extra, bound, dots):
        x, value = point
        _, extra_dots, bound_dots = dots
        theta_dots = tuple(extra_dots) + tuple(bound_dots[self.param].values())
        return self.with_tangent(value, root_tangent(self.residual, x,
                                                     self.theta(extra, bound), theta_dots))

    def solution_adjoint(self, g, value):
        return g

    def with_tangent(self, value, x_dot):
        return x_dot

    def call(self, given, extra, bound, **changed):
        """The library function called with the user's arguments (`changed` replacing
        some), its functions with the values bound to them."""
        kwargs = dict(given, **changed)
        for param, fn, _ in self.layout.functions:
            kwargs[param] = _bound(fn, bound[param])
        if extra or "args" in changed:
            kwargs.setdefault("args", tuple(extra))
        return self.layout.library(**kwargs)


class Differentiated:
    """`fn`, a helper of a rule (what stands for a solver's call: its `fwd`, `bwd`), as a
    custom_jvp of s2sad's own whose tangent is `rule(primals, tangents)`: forward mode
    over reverse-mode code that calls it (hessian, hvp, jacfwd(grad(f))) calls the rule;
    reverse mode over it is refused where the user's code calls the solver
    (`s2s_not_differentiable`, `s2s_sites`: fn's)."""

    s2s_custom = ("jvp",)

    def __init__(self, fn, rule):
        self.primal = fn
        self.__name__ = self.__qualname__ = fn.__name__
        self.s2s_not_differentiable = fn.s2s_not_differentiable
        self.s2s_sites = fn.s2s_sites

        def jvp(primals, tangents):
            return rule(primals, tangents)
        jvp.__name__ = jvp.__qualname__ = f"{fn.__name__}_jvp"
        self.rule = jvp

    def __call__(self, *args):
        return self.primal(*args)


def _bound(fn, values):
    if not values:
        return fn

    first = [v for k, v in values.items() if isinstance(k, int)]    # (partial(f, a))
    named = {k: v for k, v in values.items() if not isinstance(k, int)}

    def bound(*args):
        return fn(*first, *args, **named)
    return bound


_standing = weakref.WeakValueDictionary()       # {layout: what stands for it}


def standing(kind: Callable[[callables.Layout], Standing]) -> Callable:
    """A Taker's `make`: the object of the class `kind` for a layout, made once."""
    def make(layout):
        key = (kind, layout)
        found = _standing.get(key)
        if found is None:
            found = _standing[key] = kind(layout)
        return found
    return make





def fixed_point(f: Callable, x0: Any, args: tuple = (), tol: float = 1e-10,
                maxiter: int = 1000) -> Any:
    """The fixed point x = f(x, *args) reached by iterating `f` from `x0`, until a step
    changes x by at most `tol` (relative to max(1, |x|)). Inside a differentiated
    function, its derivative is the fixed point's by the implicit function theorem,
    dx/dp = (I - df/dx)^-1 df/dp, with s2sad's derivatives of `f`; the iterations are
    not differentiated (autograd's `fixed_point`, jaxopt's `FixedPointIteration`). `f`
    may read differentiated values through `args` or as a closure:

    >>> import math, s2sad
    >>> def g(a):                    # x = cos(a x): x depends on a
    ...     return s2sad.fixed_point(lambda x: math.cos(a * x), 1.0)
    >>> round(g(0.5), 8)
    0.90036722
    >>> x = g(0.5)                   # dx/da = -x sin(a x) / (1 + a sin(a x))
    >>> expected = -x * math.sin(0.5 * x) / (1 + 0.5 * math.sin(0.5 * x))
    >>> abs(s2sad.grad(g)(0.5) - expected) < 1e-9
    True

    A fixed point not reached in `maxiter` steps raises S2SADError.
    """
    x = x0
    for _ in range(maxiter):
        new = f(x, *args)
        step = np.max(np.abs(np.subtract(new, x)))
        x = new
        if step <= tol * max(1.0, float(np.max(np.abs(x)))):
            return x
    raise S2SADError(f"fixed_point({identifier(f)}, ...): no fixed point reached in "
                     f"{maxiter} steps (the last changed x by {step:g}); start nearer it, "
                     "raise maxiter, or make f a contraction")


class FixedPoint(ImplicitRoot):
    """s2sad.fixed_point (and scipy.optimize.fixed_point): its value is the fixed point."""

    gap = True

    def solve(self, given, extra, bound):
        x = self.call(given, extra, bound)
        return x, x


callables.TAKERS[fixed_point] = callables.Taker("f", standing(FixedPoint))


class custom_root:
    """`solve`, a function of yours that finds a root x of `residual(x, *args) = 0`
    (Newton's method written by hand, a bisection, a call of a library), differentiated
    by the implicit function theorem instead of through its iterations, as jaxopt's
    `custom_root` and JAX's `lax.custom_root` do: the derivative of the root with respect
    to `args` is -(dr/dx)^-1 dr/dargs, with s2sad's derivatives of `residual`, and none
    with respect to the starting point. Use it as a decorator, `solve(x0, *args)` taking
    the starting point then the arguments `residual` takes after x:

    >>> import s2sad
    >>> def residual(x, p):
    ...     return x ** 3 + p * x - 2.0
    >>> @s2sad.custom_root(residual)
    ... def newton(x0, p):
    ...     x = x0
    ...     for _ in range(50):
    ...         x = x - residual(x, p) / (3 * x ** 2 + p)
    ...     return x
    >>> def loss(p):
    ...     return newton(1.0, p) ** 2
    >>> newton(1.0, 1.0)              # x^3 + x - 2 = 0 at x = 1
    1.0
    >>> s2sad.grad(loss)(1.0)         # 2 x dx/dp, dx/dp = -x / (3 x^2 + p) = -1/4
    -0.5
    >>> s2sad.jvp(loss, (1.0,), (1.0,))
    (1.0, -0.5)

    `solve` is run as it is; a root it returns that is not one (its residual not near
    zero) has no derivative, and raises S2SADError when the derivative is taken.
    Second derivatives (`hessian`, `hvp`, `jacfwd(grad(...))`) are forward mode over the
    implicit rule, with s2sad's second derivatives of `residual`.
    """

    s2s_custom = ("vjp", "jvp")

    def __init__(self, residual: Callable, solve: Callable | None = None) -> None:
        self.residual, self.solve = residual, solve
        self._functions = {}
        if solve is not None:
            functools.update_wrapper(self, solve)
            name = identifier(solve)

            def fwd(x0, *args):
                x = solve(x0, *args)
                return x, (x, args)

            def bwd(residuals, g):
                x, args = residuals
                self._check(x, args)
                return (None,) + root_adjoint(self._function(len(args)), x, args, g)

            def rule(primals, tangents):
                x0, *args = primals
                x = solve(x0, *args)
                self._check(x, args)
                return x, root_tangent(self._function(len(args)), x, tuple(args),
                                       tuple(tangents[1:]))
            def fwd_rule(primals, tangents):     # (forward over reverse: hessian, hvp)
                x, x_dot = rule(primals, tangents)
                return (x, (x, primals[1:])), (x_dot, (x_dot, tuple(tangents[1:])))

            def bwd_rule(primals, tangents):
                ((x, args), g), ((x_dot, args_dot), g_dot) = primals, tangents
                self._check(x, args)
                adjoints, dots = root_adjoint_tangent(self._function(len(args)), x, args, g,
                                                      x_dot, args_dot, g_dot)
                return (None,) + adjoints, (None,) + dots
            why = (f"second derivatives through the custom_root {name} are forward mode "
                   "over its reverse mode rule (hessian, hvp, jacfwd(grad(...))); reverse "
                   "mode over it (grad of a function that calls grad) and forward mode over "
                   "its forward rule are not supported yet: use one of those, or call its "
                   "solver without custom_root there (s2sad then differentiates its "
                   "iterations)")
            self.s2s_sites = []     # (where it is called: see Standing)
            for helper, role in ((fwd, "fwd"), (bwd, "bwd"), (rule, "jvp")):
                helper.__name__ = helper.__qualname__ = f"{name}_{role}"
                helper.s2s_not_differentiable = why
                helper.s2s_sites = self.s2s_sites
            self.fwd, self.bwd = Differentiated(fwd, fwd_rule), Differentiated(bwd, bwd_rule)
            self.rule = rule

    def __call__(self, *args, **kwargs):
        if self.solve is None:          # (as a decorator: @custom_root(residual))
            (solve,) = args
            return custom_root(self.residual, solve)
        return self.solve(*args, **kwargs)

    def _function(self, n):
        if n not in self._functions:
            self._functions[n] = Function(self.residual, n)
        return self._functions[n]

    def _check(self, x, args):
        r = np.max(np.abs(self.residual(x, *args)))
        scale = max(1.0, float(np.max(np.abs(x))))
        if not r <= 1e-6 * scale:
            raise S2SADError(
                f"custom_root {identifier(self.solve)}: the value it returned is no root "
                f"of {identifier(self.residual)} (the residual there is {r:g}), so it has "
                "no derivative by the implicit function theorem; let the solver converge")
