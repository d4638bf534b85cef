"""SciPy's `quad` called in differentiated code: its Taker (frontend/callables.py) and what
stands for its calls (`implicit.Standing`), declared with SciPy's
other Takers (s2sad/scipy_calls.py).

The derivative of I = quad(f, a, b, args=theta)[0] is Leibniz's rule,

    dI = quad(df/dtheta . dtheta) + f(b) db - f(a) da,

the integrand's derivative along the values theta (s2sad's vjp of f in reverse mode, its
jvp in forward mode) integrated by quad itself (item by item for the adjoints of several
values, by `quad_vec` for many), with the call's tolerances and break points. A limit at
infinity has no derivative: its tangent in forward mode is refused, its adjoint is none.

Second derivatives (hessian, hvp, jacfwd(grad)) are forward mode over the reverse-mode
rule (`adjoint_and_tangent`): Leibniz's rule differentiated again, the tangent of the
integrand's adjoint g df/dtheta (s2sad's forward mode over its gradient of g f: g's
tangent times df/dtheta, and g times the second derivatives of f along theta's tangent)
integrated by quad beside the adjoint itself, plus the limits' terms.
"""
import numpy as np
from scipy import integrate

from . import implicit
from .frontend.callables import TAKERS, Taker
from .rules import pytrees

#: the parameters of quad the integrals of the derivative are taken with
_SETTINGS = ("epsabs", "epsrel", "limit", "points")
#: the most values whose adjoints are integrated one by one by quad (see Quad.integral)
_BY_ITEM = 16


class Quad(implicit.Standing):
    """quad(f, a, b, ...): its value is (the integral, an estimate of its error), the
    integral differentiated by Leibniz's rule."""

    def __init__(self, layout):
        super().__init__(layout)
        param, fn, names = layout.functions[0]
        self.param, self.names = param, names
        self.integrand = implicit.Function(fn, layout.n_args, names)

    def theta(self, extra, bound):
        return tuple(extra) + tuple(bound[self.param].values())

    def run(self, given, extra, bound):
        kwargs = dict(given, **{self.param: implicit._bound(self.layout.function,
                                                            bound[self.param])})
        if extra:
            kwargs["args"] = tuple(extra)
        value = self.layout.library(**kwargs)
        return value, None

    def integral(self, integrand, given, size):
        """The integral from a to b of `integrand` (numbers, or flat arrays of `size`),
        with the call's tolerances: by quad, item by item (the integrand's values kept
        for the points the items share), or by quad_vec for more than `_BY_ITEM` items
        (it costs about 40 us a point, quad 1 us)."""
        settings = {k: given[k] for k in _SETTINGS if given.get(k) is not None}
        a, b = given["a"], given["b"]
        if size > _BY_ITEM:
            settings.pop("limit", None)
            return integrate.quad_vec(integrand, a, b, **settings)[0]
        seen = {}

        def at(t):
            if t not in seen:
                seen[t] = np.ravel(integrand(t))
            return seen[t]
        out = [integrate.quad(lambda t, k=k: float(at(t)[k]), a, b, **settings)[0]
               for k in range(size)]
        return out[0] if size == 1 else np.array(out)

    def adjoint(self, point, g, given, extra, bound):
        g = g[0] if isinstance(g, tuple) else g
        theta = self.theta(extra, bound)
        wrt = implicit.carried(theta)
        out = {}
        if g is None:
            return out
        at = self.integrand
        if wrt:
            shapes = [np.shape(theta[k]) for k in wrt]
            for k in wrt:
                if not isinstance(theta[k], (float, np.floating, np.ndarray)):
                    raise self.refuse("the integrand reads a structure that carries a "
                                      "derivative; pass the values it reads as numbers or "
                                      "arrays")

            pullbacks = at.pullbacks((float(given["a"]),) + theta, [1 + k for k in wrt])

            def adjoints(t):        # (the adjoints of theta along t, one flat vector)
                found = pullbacks((t,) + theta, g)
                return np.concatenate([np.ravel(a) for a in found])
            flat = np.atleast_1d(self.integral(adjoints, given, sum(
                int(np.prod(s)) for s in shapes)))
            keys = [("extra", k) for k in range(len(extra))] + [(self.param, n)
                                                                   for n in self.names]
            k0 = 0
            for k, shape in zip(wrt, shapes):
                n = int(np.prod(shape))
                a = flat[k0:k0 + n].reshape(shape)
                out[keys[k]] = float(a) if shape == () else a
                k0 += n
        for limit, sign in (("a", -1.0), ("b", 1.0)):
            v = given[limit]
            if pytrees.carries_derivative(v) and np.isfinite(v):
                out[("given", limit)] = sign * g * float(at(v, *theta))
        return out

    def tangent(self, point, value, given, extra, bound, dots):
        given_dots, extra_dots, bound_dots = dots
        theta = self.theta(extra, bound)
        theta_dots = tuple(d if pytrees.carries_derivative(v) else None for v, d in zip(
            theta, tuple(extra_dots) + tuple(bound_dots[self.param].values())))
        at = self.integrand
        dot = 0.0
        if any(d is not None for d in theta_dots):
            dot = self.integral(lambda t: at.tangent((t,) + theta, (None,) + theta_dots),
                                given, 1)
        for limit, sign in (("a", -1.0), ("b", 1.0)):
            v, v_dot = given[limit], given_dots.get(limit)
            if v_dot is None or not pytrees.carries_derivative(v) or v_dot == 0:
                continue
            if not np.isfinite(v):
                raise self.refuse(f"the limit {limit} is infinite, and has no derivative")
            dot = dot + sign * v_dot * float(at(v, *theta))
        return (dot, 0.0)

    def tangents(self, point, value, given, extra, bound, dots):
        """The tangents of the value and of `point` (none: `fwd_rule`'s)."""
        return self.tangent(point, value, given, extra, bound, dots), None

    def adjoint_and_tangent(self, point, point_dot, g, g_dot, given, extra, bound, dots):
        """`adjoint(point, g, given, extra, bound)` and its tangent along `g_dot` and the
        tangents `dots` of the values (see `implicit.Standing`): with I' = g f_theta
        integrated and g f(b), -g f(a) the limits' adjoints,

            theta_bar_dot = int (g_dot f_theta + g f_theta,theta theta_dot) dt
                            + g f_theta(b) b_dot - g f_theta(a) a_dot
            b_bar_dot = g_dot f(b) + g (f_t(b) b_dot + f_theta(b) theta_dot)

        (a's with the opposite sign), the integral taken by quad beside the adjoint's."""
        g = g[0] if isinstance(g, tuple) else g
        g_dot = g_dot[0] if isinstance(g_dot, tuple) else g_dot
        if g is None:
            return {}, {}
        g_dot = 0.0 if g_dot is None else float(g_dot)
        given_dots, extra_dots, bound_dots = dots
        theta = self.theta(extra, bound)
        theta_dots = tuple(d if pytrees.carries_derivative(v) else None for v, d in zip(
            theta, tuple(extra_dots) + tuple(bound_dots[self.param].values())))
        limits = {}         # {limit: (sign, value, tangent)}
        for limit, sign in (("a", -1.0), ("b", 1.0)):
            v, v_dot = given[limit], given_dots.get(limit)
            v_dot = 0.0 if v_dot is None or not pytrees.carries_derivative(v) else v_dot
            if v_dot != 0 and not np.isfinite(v):
                raise self.refuse(f"the limit {limit} is infinite, and has no derivative")
            limits[limit] = (sign, v, float(v_dot))
        at = self.integrand
        out, out_dots = {}, {}
        wrt = implicit.carried(theta)
        if wrt:
            for k in wrt:
                if not isinstance(theta[k], (float, np.floating, np.ndarray)):
                    raise self.refuse("the integrand reads a structure that carries a "
                                      "derivative; pass the values it reads as numbers or "
                                      "arrays")
            shapes = [np.shape(theta[k]) for k in wrt]
            sizes = [int(np.prod(s)) for s in shapes]
            positions = [1 + k for k in wrt]
            moving = (0.0,) + theta_dots

            def both(t):        # (the adjoints of theta along t and their tangents)
                found, found_dots = at.pullback_tangent((t,) + theta, positions, g,
                                                        moving, g_dot)
                return np.concatenate([np.ravel(a) for a in found + found_dots])
            flat = np.atleast_1d(self.integral(both, given, 2 * sum(sizes)))
            half = sum(sizes)
            for limit, (sign, v, v_dot) in limits.items():
                if v_dot:           # (the integrand's adjoint at the limit, moved)
                    flat[half:] += sign * v_dot * np.atleast_1d(both(v))[:half]
            keys = self.keys(extra)
            k0 = 0
            for k, shape, n in zip(wrt, shapes, sizes):
                for target, start in ((out, k0), (out_dots, half + k0)):
                    a = flat[start:start + n].reshape(shape)
                    target[keys[k]] = float(a) if shape == () else a
                k0 += n
        for limit, (sign, v, v_dot) in limits.items():
            if pytrees.carries_derivative(v) and np.isfinite(v):
                value = float(at(v, *theta))
                moving = (v_dot or None,) + theta_dots
                moved = 0.0 if all(d is None for d in moving) else float(
                    at.tangent((v,) + theta, moving))
                out[("given", limit)] = sign * g * value
                out_dots[("given", limit)] = sign * (g_dot * value + g * moved)
        return out, out_dots

    def keys(self, extra):
        return [("extra", k) for k in range(len(extra))] + [(self.param, n)
                                                            for n in self.names]


_WHY = "s2sad differentiates quad's integral of a plain integrand; call quad without it"


def declare():
    """Declare the Taker of SciPy's quad."""
    TAKERS[integrate.quad] = Taker(
        "func", implicit.standing(Quad),
        refused={"full_output": _WHY, "weight": _WHY, "wvar": _WHY, "wopts": _WHY,
                 "complex_func": _WHY})
