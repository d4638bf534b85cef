"""SciPy's root finders called in differentiated code: their Takers (frontend/callables.py)
and the kinds of `ImplicitRoot` (s2sad/implicit.py) that stand for their calls. Loaded the
first time a lookup misses after the user's code imported SciPy (`declare`, called by
s2sad/scipy_calls.py), so that `import s2sad` imports no SciPy.

Each call runs as the user wrote it, checks that the solve converged (a call that did not
is refused at run time: its result has no derivative), and differentiates the root it
found by the implicit function theorem with s2sad's derivatives of the user's function.
"""
import numpy as np
from scipy import optimize

from . import implicit
from .frontend.callables import TAKERS, Taker
from .rules import pytrees

_CALLBACK = "a callback sees the solver's iterations, which s2sad does not differentiate; " \
            "call the solver without it"


class Bracketed(implicit.ImplicitRoot):
    """brentq, brenth, bisect, ridder, toms748: a scalar root in a bracket [a, b]; with
    full_output=True, the value is (root, RootResults)."""

    def solve(self, given, extra, bound):
        full = given.get("full_output", False)
        x, info = self.call(given, extra, bound, full_output=True, disp=False)
        if not info.converged:
            raise self.refuse(f"the solve did not converge ({info.flag}), so its root has "
                              "no derivative; widen the bracket or raise maxiter")
        return ((x, info) if full else x), x

    def solution_adjoint(self, g, value):
        return g[0] if isinstance(value, tuple) else g

    def with_tangent(self, value, x_dot):
        return (x_dot, None) if isinstance(value, tuple) else x_dot


class Newton(implicit.ImplicitRoot):
    """newton (the secant method without fprime, Halley's with fprime2), for a number or
    an array of independent roots."""

    def solve(self, given, extra, bound):
        full = given.get("full_output", False)
        out = self.call(given, extra, bound, full_output=True, disp=False)
        if np.ndim(given.get("x0", 0.0)) == 0:
            x, info = out
            converged = info.converged
        else:
            x, converged = out[0], np.all(out[1])
        if not converged:
            raise self.refuse("the solve did not converge, so its root has no derivative; "
                              "start nearer the root or raise maxiter")
        return (out if full else x), x

    def solution_adjoint(self, g, value):
        return g[0] if isinstance(value, tuple) else g

    def with_tangent(self, value, x_dot):
        return (x_dot,) + (None,) * (len(value) - 1) if isinstance(value, tuple) else x_dot


class RootScalar(implicit.ImplicitRoot):
    """root_scalar: its value is a RootResults, whose `.root` is the root."""

    def solve(self, given, extra, bound):
        info = self.call(given, extra, bound)
        if not info.converged:
            raise self.refuse(f"the solve did not converge ({info.flag}), so its root has "
                              "no derivative")
        return info, info.root

    def solution_adjoint(self, g, value):
        return _field(g, "root")

    def with_tangent(self, value, x_dot):
        return _result_tangent(value, "root", x_dot)


class Fsolve(implicit.ImplicitRoot):
    """fsolve: an array root; with full_output=True, (x, infodict, ier, mesg)."""

    def solve(self, given, extra, bound):
        full = given.get("full_output", False)
        out = self.call(given, extra, bound, full_output=True)
        if out[2] != 1:
            raise self.refuse(f"the solve did not converge ({out[3]}), so its root has no "
                              "derivative")
        return (out if full else out[0]), out[0]

    def solution_adjoint(self, g, value):
        return g[0] if isinstance(value, tuple) else g

    def with_tangent(self, value, x_dot):
        return (x_dot, None, None, None) if isinstance(value, tuple) else x_dot


class Root(implicit.ImplicitRoot):
    """root: its value is an OptimizeResult, whose `.x` is the root."""

    def solve(self, given, extra, bound):
        if given.get("jac") is True:
            raise self.refuse("jac=True (the function returns its Jacobian too): s2sad "
                              "differentiates a function that returns its value alone; pass "
                              "jac as a function of its own, or leave it out")
        result = self.call(given, extra, bound)
        if not result.success:
            raise self.refuse(f"the solve did not succeed ({result.message}), so its root "
                              "has no derivative")
        return result, result.x

    def solution_adjoint(self, g, value):
        return _field(g, "x")

    def with_tangent(self, value, x_dot):
        return _result_tangent(value, "x", x_dot)


def _field(g, name):
    """The adjoint of the field `name` in `g`, the adjoint of an OptimizeResult (a dict,
    as s2sad takes a dict's subclass apart; None where no adjoint reached it)."""
    return g.get(name) if isinstance(g, dict) else getattr(g, name, None)


def _result_tangent(value, field, x_dot):
    """The tangent of an OptimizeResult (or RootResults, its subclass) `value` whose
    `field` has the tangent `x_dot`: of its type, zero or None in its other fields."""
    out = type(value).__new__(type(value))
    dict.update(out, pytrees.zeros_like(dict(value)), **{field: x_dot})
    return out


def declare():
    """Declare the Takers of SciPy's root finders."""
    for fn in (optimize.brentq, optimize.brenth, optimize.bisect, optimize.ridder,
               optimize.toms748):
        TAKERS[fn] = Taker("f", implicit.standing(Bracketed))
    TAKERS[optimize.newton] = Taker("func", implicit.standing(Newton),
                                    functions=("fprime", "fprime2"))
    TAKERS[optimize.root_scalar] = Taker("f", implicit.standing(RootScalar),
                                         functions=("fprime", "fprime2"))
    TAKERS[optimize.fsolve] = Taker("func", implicit.standing(Fsolve), functions=("fprime",))
    TAKERS[optimize.fixed_point] = Taker("func", implicit.standing(implicit.FixedPoint))
    TAKERS[optimize.root] = Taker("fun", implicit.standing(Root), functions=("jac",),
                                  refused={"callback": _CALLBACK})
