"""SciPy's minimisers called in differentiated code (`minimize`, `minimize_scalar`,
`least_squares`): their Takers (frontend/callables.py) and the kinds of `ImplicitRoot`
(s2sad/implicit.py) that stand for their calls, declared with SciPy's
other Takers (s2sad/scipy_calls.py).

A minimiser x* of f(x, theta) is a root of the optimality condition grad_x f(x, theta) = 0,
so its derivative is the implicit function theorem's with that residual: the Jacobian of
the residual in x is f's Hessian (s2sad's forward mode over its reverse mode), and the
residual's vjp or jvp along theta are second derivatives of f. `least_squares` minimises
0.5 sum r(x, theta)^2: its residual is J^T r. The fields of the result that are functions
of (x*, theta) (`fun`, `cost`) are differentiated as such (the chain rule through x*).
In reverse mode, a minimiser of a few unknowns takes one forward-over-reverse sweep of the
objective per unknown, which gives the Hessian and the mixed second derivatives at once
(`Minimum.adjoint_by_columns`).
The iterations are never differentiated; a call that did not succeed, or whose minimiser
sits on a bound, is refused at run time (its result is no stationary point).
"""
import inspect

import numpy as np
from scipy import optimize

from . import api, implicit
from .frontend.callables import TAKERS, Taker
from .frontend.source import function_from_source, identifier
from .rules import pytrees
from .scipy_solvers import _CALLBACK, _field, _result_tangent


class Gradient(implicit.Function):
    """The gradient in x of the function `objective` (an `implicit.Function`), a Function
    of the same arguments: the residual whose roots are the objective's stationary points."""

    def __init__(self, objective):
        self.fn = objective.fn
        self._paired = {}
        params = ", ".join(inspect.signature(objective.at).parameters)
        self.at = function_from_source(
            f"def {identifier(objective.fn)}_gradient({params}):\n"
            f"    return _s2s_grad({params})\n",
            {"_s2s_grad": api.grad(objective.at, wrt=0)})
        self.at.__module__ = objective.at.__module__


class Minimum(implicit.ImplicitRoot):
    """A call that minimises the user's function: x* is a root of the gradient of the
    objective (`objective_of(fn, n, names)`, a Function of x and theta, by default the
    user's function); the fields of the result in `fields` ({field: Function}) are
    differentiated as functions of (x*, theta), those `UNKNOWN` carry no derivative s2sad
    knows, and the others are constant (`jac`, the gradient, is zero at every minimiser).
    """

    #: the fields of the result that carry no derivative s2sad knows (an adjoint reaching
    #: one is refused, their tangents are NaN)
    UNKNOWN = ("hess_inv", "hess")

    def __init__(self, layout):
        super().__init__(layout)
        _, fn, names = layout.functions[0]
        self.objective = self.objective_of(fn, layout.n_args, names)
        self.residual = Gradient(self.objective)
        self.fields = {"fun": self.objective}

    def objective_of(self, fn, n, names):
        return implicit.Function(fn, n, names)

    def solve(self, given, extra, bound):
        if given.get("jac") is True:
            raise self.refuse("jac=True (the function returns its gradient too): s2sad "
                              "differentiates a function that returns its value alone; pass "
                              "jac as a function of its own, or leave it out")
        result = self.call(given, extra, bound)
        if not result.success:
            raise self.refuse(f"the minimisation did not succeed ({result.message}), so its "
                              "result is no minimiser and has no derivative; tighten or "
                              "loosen its tolerances, or start nearer the minimum")
        self.check_bounds(given.get("bounds"), result.x)
        return result, result.x

    def check_bounds(self, bounds, x):
        """Refuse a minimiser that sits on one of `bounds`: there the gradient is not zero
        and the optimality condition differentiated does not hold."""
        if bounds is None:
            return
        if isinstance(bounds, optimize.Bounds):
            lower, upper = bounds.lb, bounds.ub
        else:
            pairs = np.reshape(np.array(bounds, dtype=object), (-1, 2))
            lower = np.array([-np.inf if v is None else v for v in pairs[:, 0]], float)
            upper = np.array([np.inf if v is None else v for v in pairs[:, 1]], float)
        x = np.ravel(x)
        room = 1e-8 * np.maximum(1.0, np.abs(x))
        on = (np.abs(x - np.broadcast_to(lower, x.shape)) <= room) | (
            np.abs(np.broadcast_to(upper, x.shape) - x) <= room)
        if np.any(on):
            raise self.refuse(f"the minimiser found sits on a bound (at the positions "
                              f"{np.flatnonzero(on).tolist()}), where the gradient is not "
                              "zero; s2sad differentiates a minimiser inside the bounds")

    def solution_adjoint(self, g, value):
        return _field(g, "x")

    #: the field of the result that is the objective's value at x* (`adjoint`'s)
    objective_field = "fun"

    def adjoint(self, point, g, given, extra, bound):
        x, value = point
        self.check_unknown(g)
        theta = self.theta(extra, bound)
        wrt = implicit.carried(theta)
        if np.size(x) <= _BY_COLUMN and all(isinstance(
                theta[k], (float, np.floating, np.ndarray)) for k in wrt):
            return self.adjoint_by_columns(x, value, g, theta, wrt, extra)
        gx = _field(g, "x")
        gx = pytrees.zeros_like(x) if gx is None else gx
        out = [None] * len(theta)
        for fn, w in self.field_adjoints(g, value):    # (f(x*, theta): through x*, theta)
            adjoints = fn.pullback((x,) + tuple(theta), [0] + [1 + k for k in wrt], w)
            gx = gx + adjoints[0]
            for k, a in zip(wrt, adjoints[1:]):
                out[k] = a if out[k] is None else out[k] + a
        if _nonzero(gx):
            for k, a in enumerate(implicit.root_adjoint(self.residual, x, theta, gx)):
                if a is not None:
                    out[k] = a if out[k] is None else out[k] + a
        keys = [("extra", k) for k in range(len(extra))] + [(self.param, n)
                                                               for n in self.names]
        return dict(zip(keys, out))

    def adjoint_by_columns(self, x, value, g, theta, wrt, extra):
        """`adjoint` for a minimiser x* of a few unknowns and values theta that are
        numbers or arrays: one forward-over-reverse sweep of the objective f per unknown
        (x_dot a unit vector e_i) gives the Hessian's column H e_i, the mixed column
        d(grad_theta f)/dx e_i and grad f itself, so that with w = -H^-1 g_x, the
        adjoint of theta is g_f grad_theta f + sum_i w_i d(grad_theta f)/dx e_i (the
        adjoint of g_f through x* is g_f grad_x f, zero at the minimiser): no Jacobian
        by jacfwd and no reverse-over-reverse vjp of the gradient, each dearer than the
        n sweeps for n up to `_BY_COLUMN`."""
        gx = _field(g, "x")
        gx = np.zeros(np.shape(x)) if gx is None else np.asarray(gx, dtype=float)
        out = [None] * len(theta)

        def add(k, a):
            out[k] = a if out[k] is None else out[k] + a
        for fn, w in self.other_field_adjoints(g, value):   # (f(x*, theta): through both)
            adjoints = fn.pullback((x,) + tuple(theta), [0] + [1 + k for k in wrt], w)
            gx = gx + adjoints[0]
            for k, a in zip(wrt, adjoints[1:]):
                add(k, a)
        g_f = _field(g, self.objective_field)
        g_f = float(g_f) if g_f is not None and _nonzero(g_f) else 0.0
        keys = self.keys(extra)
        if not wrt or (not g_f and not _nonzero(gx)):
            return dict(zip(keys, out))
        n = np.size(x)
        args = (x,) + tuple(theta)
        positions = [0] + [1 + k for k in wrt]
        fixed = (None,) * len(theta)
        columns = []
        for i in range(n):
            e = np.zeros(n)
            e[i] = 1.0
            e = e.reshape(np.shape(x)) if np.ndim(x) else 1.0
            values, tangents = self.objective.pullback_tangent(args, positions, 1.0,
                                                               (e,) + fixed)
            columns.append(tangents)
        hessian = np.array([np.ravel(c[0]) for c in columns]).T
        gx = np.ravel(gx + g_f * np.asarray(values[0]))
        w = -np.linalg.solve(hessian.T, gx)
        for j, k in enumerate(wrt):
            a = g_f * values[1 + j]
            for i in range(n):
                a = a + w[i] * columns[i][1 + j]
            add(k, float(a) if np.ndim(theta[k]) == 0 else np.asarray(a))
        return dict(zip(keys, out))

    def other_field_adjoints(self, g, value):
        """[(Function, its adjoint)] of the fields of the result `value` but the
        objective's that `g`, its adjoint, reaches."""
        found = [(fn, _field(g, name)) for name, fn in self.fields.items()
                 if name != self.objective_field]
        return [(fn, w) for fn, w in found if w is not None and _nonzero(w)]

    def field_adjoints(self, g, value):
        """[(Function, its adjoint)] of the fields of the result `value` that `g`, its
        adjoint, reaches (the fields are functions of (x*, theta))."""
        found = [(fn, _field(g, name)) for name, fn in self.fields.items()]
        return [(fn, w) for fn, w in found if w is not None and _nonzero(w)]

    def adjoint_and_tangent(self, point, point_dot, g, g_dot, given, extra, bound, dots):
        (x, _), (x_dot, _) = point, point_dot
        self.check_unknown(g)
        theta = self.theta(extra, bound)
        theta_dots = self.theta_dots(theta, dots)
        wrt = implicit.carried(theta)
        gx, gx_dot = _field(g, "x"), _field(g_dot, "x")
        gx = pytrees.zeros_like(x) if gx is None else gx
        gx_dot = pytrees.zeros_like(x) if gx_dot is None else gx_dot
        out, out_dots = [None] * len(theta), [None] * len(theta)

        def add(k, a, a_dot):
            out[k], out_dots[k] = pytrees.add(out[k], a), pytrees.add(out_dots[k], a_dot)
        for name, fn in self.fields.items():     # (fun = f(x*, theta): through x* and theta)
            w = _field(g, name)
            if w is None or not _nonzero(w):
                continue
            adjoints, tangents = fn.pullback_tangent(
                (x,) + tuple(theta), [0] + [1 + k for k in wrt], w, (x_dot,) + theta_dots,
                _field(g_dot, name))
            gx, gx_dot = gx + adjoints[0], gx_dot + tangents[0]
            for k, a, a_dot in zip(wrt, adjoints[1:], tangents[1:]):
                add(k, a, a_dot)
        if _nonzero(gx) or _nonzero(gx_dot):
            adjoints, tangents = implicit.root_adjoint_tangent(
                self.residual, x, theta, gx, x_dot, theta_dots, gx_dot)
            for k in wrt:
                add(k, adjoints[k], tangents[k])
        keys = self.keys(extra)
        return dict(zip(keys, out)), dict(zip(keys, out_dots))

    def check_unknown(self, g):
        for name in self.UNKNOWN:
            if _nonzero(_field(g, name)):
                raise self.refuse(f"the result's field {name} has no derivative s2sad "
                                  "knows; read x and the fields " + ", ".join(self.fields)
                                  + " only")

    def tangent(self, point, value, given, extra, bound, dots):
        x, value = point
        _, extra_dots, bound_dots = dots
        theta = self.theta(extra, bound)
        theta_dots = tuple(d if pytrees.carries_derivative(v) else None for v, d in zip(
            theta, tuple(extra_dots) + tuple(bound_dots[self.param].values())))
        x_dot = implicit.root_tangent(self.residual, x, theta, theta_dots)
        out = _result_tangent(value, "x", x_dot)
        for name, fn in self.fields.items():
            if all(d is None for d in theta_dots):
                break
            dict.__setitem__(out, name, fn.tangent((x,) + tuple(theta),
                                                   (x_dot,) + theta_dots))
        for name in self.UNKNOWN:
            if isinstance(value.get(name), (float, np.ndarray)):
                dict.__setitem__(out, name, np.full_like(value[name], np.nan, dtype=float))
        return out


class Minimize(Minimum):
    """minimize: its value is an OptimizeResult, whose `.x` and `.fun` carry derivatives."""


class MinimizeScalar(Minimum):
    """minimize_scalar: a scalar minimiser (Brent's, golden-section or bounded)."""

    def solve(self, given, extra, bound):
        result = self.call(given, extra, bound)
        if not result.success:
            raise self.refuse(f"the minimisation did not succeed ({result.message}), so its "
                              "result is no minimiser and has no derivative")
        if given.get("method") == "bounded" or (given.get("method") is None
                                                and given.get("bounds") is not None):
            self.check_bounds([given["bounds"]], result.x)
        return result, result.x


class LeastSquares(Minimum):
    """least_squares: x* minimises the cost 0.5 sum r(x, theta)^2 (the loss "linear"),
    `.x`, `.cost` and `.fun` (the residuals at x*) carry derivatives."""

    UNKNOWN = ("jac",)
    objective_field = "cost"

    def __init__(self, layout):
        super().__init__(layout)
        _, fn, names = layout.functions[0]
        self.fields = {"cost": self.objective,
                       "fun": implicit.Function(fn, layout.n_args, names)}

    def objective_of(self, fn, n, names):
        return implicit.Function(fn, n, names, around="0.5 * _s2s_sum({} ** 2)",
                                 role="cost", namespace={"_s2s_sum": np.sum})

    def field_adjoints(self, g, value):
        # the cost 0.5 sum r^2 and fun = r are functions of r at x*, value.fun: their
        # adjoints are one of r, w_fun + w_cost r (one vjp of the user's function)
        found = dict((name, w) for name, w in ((n, _field(g, n)) for n in self.fields)
                     if w is not None and _nonzero(w))
        if not found:
            return []
        w = found.get("fun", 0.0) + found.get("cost", 0.0) * np.asarray(value.fun)
        return [(self.fields["fun"], w)]

    def solve(self, given, extra, bound):
        if given.get("loss", "linear") != "linear":
            raise self.refuse(f"loss={given['loss']!r}: s2sad differentiates the "
                              "least-squares minimiser of the loss 'linear' only")
        result = self.call(given, extra, bound)
        if not result.success:
            raise self.refuse(f"the fit did not succeed ({result.message}), so its result "
                              "is no minimiser and has no derivative")
        if given.get("bounds") is not None:
            lower, upper = given["bounds"]
            self.check_bounds(optimize.Bounds(lower, upper), result.x)
        return result, result.x


#: the most unknowns whose minimiser's adjoint is taken by one sweep per unknown
#: (`Minimum.adjoint_by_columns`): more take the Hessian by jacfwd (batched)
_BY_COLUMN = 16


def _nonzero(a):
    """Whether the adjoint `a` is not None nor zero."""
    if a is None or not pytrees.carries_derivative(a):
        return False
    return any(np.any(np.asarray(leaf) != 0) for leaf in _leaves(a))


def _leaves(a):
    if isinstance(a, dict):
        return [v for x in a.values() for v in _leaves(x)]
    if isinstance(a, (tuple, list)):
        return [v for x in a for v in _leaves(x)]
    return [] if a is None else [a]


_CONSTRAINTS = ("constraints are not differentiated yet (their multipliers enter the "
                "derivative); differentiate an unconstrained minimisation, or one inside "
                "its bounds")


def declare():
    """Declare the Takers of SciPy's minimisers."""
    TAKERS[optimize.minimize] = Taker(
        "fun", implicit.standing(Minimize), functions=("jac", "hess", "hessp"),
        refused={"callback": _CALLBACK, "constraints": _CONSTRAINTS})
    TAKERS[optimize.minimize_scalar] = Taker("fun", implicit.standing(MinimizeScalar))
    TAKERS[optimize.least_squares] = Taker(
        "fun", implicit.standing(LeastSquares), functions=("jac",),
        refused={"callback": _CALLBACK,
                 "kwargs": "s2sad passes the function's extra arguments by args=(p, q); "
                           "pass them there, or bind them with a lambda"})
