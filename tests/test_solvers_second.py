"""Second derivatives through SciPy's root finders and minimisers and through
`custom_root` / `fixed_point` (s2sad/implicit.py: forward mode over the implicit rule):
`hessian`, `hvp` and `jacfwd(grad(...))` against the analytic second derivatives of the
root of a cubic, of a quadratic's minimiser and of a least-squares fit in closed form, and
against central differences of s2sad's gradient (itself checked against central
differences of the function in tests/test_solvers.py) with tight tolerances. What is not
differentiable twice (reverse mode over the rules, forward over their forward rules) is
refused at the user's call.
"""
import numpy as np
import pytest

from optional import require

optimize = require("scipy.optimize", "scipy")
integrate = require("scipy.integrate", "scipy")

import s2sad  # noqa: E402
from s2sad.errors import S2SADError  # noqa: E402


def cubic(x, p):
    return x ** 3 + p * x - 2.0


def cubic_root_derivatives(p):
    """x, x' and x'' of the root x(p) of x^3 + p x - 2 = 0: with D = 3 x^2 + p,
    x' = -x / D and x'' = -(x' D - x D') / D^2, D' = 6 x x' + 1."""
    x = optimize.brentq(cubic, 0.0, 5.0, args=(p,), xtol=1e-15)
    d = 3 * x * x + p
    x1 = -x / d
    x2 = -(x1 * d - x * (6 * x * x1 + 1)) / d ** 2
    return x, x1, x2


@s2sad.custom_root(cubic)
def hand_newton(x0, p):
    x = x0
    for _ in range(60):
        x = x - cubic(x, p) / (3 * x ** 2 + p)
    return x


def by_brentq(p):
    return optimize.brentq(cubic, 0.0, 5.0, args=(p,), xtol=1e-15) * p


def by_lambda(p):
    return optimize.brentq(lambda x: x ** 3 + p * x - 2.0, 0.0, 5.0, xtol=1e-15) * p


def by_newton(p):
    return optimize.newton(cubic, 1.0, args=(p,), tol=1e-15) * p


def by_root_scalar(p):
    return optimize.root_scalar(cubic, args=(p,), bracket=(0.0, 5.0), xtol=1e-15).root * p


def by_custom_root(p):
    return hand_newton(1.0, p) * p


@pytest.mark.parametrize("f", [by_brentq, by_lambda, by_newton, by_root_scalar,
                               by_custom_root])
def test_the_root_of_a_cubic_against_its_analytic_second_derivative(f):
    p = 1.3
    x, x1, x2 = cubic_root_derivatives(p)
    expected = 2 * x1 + p * x2          # (x p)''
    assert abs(s2sad.hessian(f)(p) - expected) < 1e-11
    assert abs(s2sad.hvp(f)(p, 2.0) - 2.0 * expected) < 1e-11
    assert abs(s2sad.jacfwd(s2sad.grad(f))(p) - expected) < 1e-11


M0 = np.array([[3.0, 1.0], [1.0, 2.0]])
B = np.array([1.0, -2.0])


def energy(x, a, b):
    return 0.5 * x @ (M0 + a * np.eye(2)) @ x - b @ x


def minimised(a, b):
    res = optimize.minimize(energy, np.zeros(2), args=(a, b), jac=s2sad.grad(energy),
                            method="BFGS", tol=1e-12)
    return res.x[0] + res.fun


def test_a_quadratics_minimiser_against_its_analytic_second_derivatives():
    # x* = M^-1 b, M = M0 + a I: d2x*/da2 = 2 M^-2 x*; fun = -b M^-1 b / 2, whose second
    # derivative in a is -x* M^-1 x* and in b is -M^-1
    a = 0.5
    m = M0 + a * np.eye(2)
    x = np.linalg.solve(m, B)
    inv = np.linalg.inv(m)
    d2a = 2 * (inv @ inv @ x)[0] - x @ inv @ x
    assert abs(s2sad.hessian(minimised)(a, B) - d2a) < 1e-8
    assert np.allclose(s2sad.hessian(minimised, wrt=1)(a, B), -inv, atol=1e-8)
    # the mixed block: the a-gradient is -(M^-1 x*)_0 + x*.x*/2, whose derivative in b
    # is -(M^-2)_0 + M^-1 x*
    mixed = s2sad.jacfwd(s2sad.grad(minimised, wrt=0), wrt=1)(a, B)
    expected = -(inv @ inv)[0] + inv @ x
    assert np.allclose(mixed, expected, atol=1e-8)


def mean_of_exponentials(x, p):
    return np.exp(x) - p


def fitted(p):
    fit = optimize.least_squares(mean_of_exponentials, np.array([0.0]), args=(p,),
                                 method="lm", xtol=1e-15, ftol=1e-15, gtol=1e-15)
    return fit.x[0] + fit.cost


def test_a_least_squares_fit_against_its_analytic_second_derivatives():
    # exp(x) fitted to p0 and p1: x* = log((p0 + p1) / 2), cost (p0 - p1)^2 / 4
    p = np.array([1.5, 2.5])
    s = p.sum()
    expected = -np.ones((2, 2)) / s ** 2 + 0.5 * np.array([[1.0, -1.0], [-1.0, 1.0]])
    assert np.allclose(s2sad.hessian(fitted)(p), expected, atol=1e-8)


def central_jacobian(g, x, h=1e-5):
    """The Jacobian of `g` (a gradient) at `x` by central differences."""
    x = np.asarray(x, dtype=float)
    cols = []
    for k in range(x.size):
        e = np.zeros(x.size)
        e[k] = h
        cols.append((np.asarray(g(x + e)) - np.asarray(g(x - e))) / (2 * h))
    return np.stack(cols, axis=-1)


def system(x, p):
    return np.array([x[0] ** 3 + p[0] * x[1] - 1.0, x[1] ** 3 + p[1] * x[0] ** 2 - 2.0])


def by_fsolve(p):
    x = optimize.fsolve(system, np.array([1.0, 1.0]), args=(p,), xtol=1e-13)
    return x[0] * x[1] + np.sum(p * x)


def by_root(p):
    return np.sum(optimize.root(system, np.array([1.0, 1.0]), args=(p,), tol=1e-13).x ** 2)


def by_newton_array(p):
    return np.sum(optimize.newton(lambda x: x ** 3 + p * x - 2.0, np.ones(2), tol=1e-14) ** 2)


def by_fixed_point(a):
    return s2sad.fixed_point(lambda x: np.cos(a[0] * x) * a[1], 1.0, tol=1e-15)


def by_scipy_fixed_point(a):
    return optimize.fixed_point(lambda x, a: np.cos(a[0] * x) * a[1], 1.0, args=(a,),
                                xtol=1e-14)


def by_minimize_scalar(p):
    res = optimize.minimize_scalar(lambda x: np.cosh(x - p[0]) + p[1] * x, tol=1e-14)
    return res.x + res.fun


def test_minimize_scalar_against_its_analytic_second_derivatives():
    # cosh(x - p0) + p1 x is least at x* = p0 - asinh(p1), where it is
    # sqrt(1 + p1^2) + p1 x*; Brent's method stops near 1e-8 relative in x
    p = np.array([0.3, 0.4])
    q = 1 + p[1] ** 2
    expected = np.array([[0.0, 1.0], [1.0, p[1] / q ** 1.5 - 1 / np.sqrt(q)]])
    assert np.allclose(s2sad.hessian(by_minimize_scalar)(p), expected, atol=1e-6)


def quartic(x, b):
    return 0.5 * x @ M0 @ x - b @ x + 0.1 * np.sum(x ** 4) + 0.05 * np.sum(b * x ** 3)


def by_minimize(b):
    res = optimize.minimize(quartic, np.zeros(2), args=(b,), jac=s2sad.grad(quartic),
                            method="BFGS", tol=1e-9)
    return res.x[0] ** 2 + res.fun


@pytest.mark.parametrize("f, x", [
    (by_fsolve, [0.5, 0.7]), (by_root, [0.5, 0.7]), (by_newton_array, [0.5, 2.0]),
    (by_fixed_point, [0.5, 0.9]), (by_scipy_fixed_point, [0.5, 0.9]),
    (by_minimize, [1.0, -2.0])])
def test_hessians_against_central_differences_of_the_gradient(f, x):
    x = np.array(x)
    expected = central_jacobian(s2sad.grad(f), x)
    assert np.allclose(s2sad.hessian(f)(x), expected, rtol=1e-6, atol=1e-7)


def test_what_is_not_differentiated_twice_is_refused_at_the_users_call():
    def area(p):
        return integrate.quad(lambda t: np.exp(-p * t), 0.0, 1.0)[0]
    line = area.__code__.co_firstlineno + 1
    with pytest.raises(S2SADError, match="forward mode over its reverse") as caught:
        s2sad.jacfwd(lambda p: s2sad.jvp(area, (p,), (1.0,))[1])(0.5)
    assert (caught.value.filename, caught.value.lineno) == (__file__, line)

    def forward_twice(p):
        return optimize.brentq(cubic, 0.0, 5.0, args=(p,), xtol=1e-15)
    line = forward_twice.__code__.co_firstlineno + 1
    with pytest.raises(S2SADError, match="forward mode over its reverse") as caught:
        s2sad.jacfwd(lambda p: s2sad.jvp(forward_twice, (p,), (1.0,))[1])(1.3)
    assert (caught.value.filename, caught.value.lineno) == (__file__, line)

    gradient = s2sad.grad(lambda p: by_brentq(p[0]) * p[1])

    def reverse_twice(p):
        return np.sum(gradient(p) ** 2)
    with pytest.raises(S2SADError, match="reverse mode over it"):
        s2sad.grad(reverse_twice)(np.array([1.3, 0.5]))
