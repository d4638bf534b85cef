"""SciPy's root finders called in differentiated code (s2sad/implicit.py,
s2sad/scipy_solvers.py): the derivative of the root by the implicit function theorem,
against central differences of the whole function (the solver run again at p +- h, with
tight tolerances) and against the analytic derivative of the root of a cubic. SciPy is
optional: without it this module is skipped.
"""
import functools

import numpy as np
import pytest

from optional import require

optimize = require("scipy.optimize", "scipy")

import s2sad  # noqa: E402
from s2sad.errors import S2SADError, UnsupportedSyntaxError  # noqa: E402


def cubic(x, p):
    return x ** 3 + p * x - 2.0


def root_slope(p):
    """d/dp of the root x of x^3 + p x - 2 = 0: -x / (3 x^2 + p)."""
    x = optimize.brentq(cubic, 0.0, 5.0, args=(p,), xtol=1e-15)
    return -x / (3 * x * x + p)


def central(f, p, h=1e-6):
    return (f(p + h) - f(p - h)) / (2 * h)


def brentq_args(p):
    return optimize.brentq(cubic, 0.0, 5.0, args=(p,), xtol=1e-14)


def brentq_lambda(p):
    return optimize.brentq(lambda x: x ** 3 + p * x - 2.0, 0.0, 5.0, xtol=1e-14)


def bisect_nested(p):
    def r(x):
        return cubic(x, p)
    return optimize.bisect(r, 0.0, 5.0, xtol=1e-14)


def brentq_partial(p):
    return optimize.brentq(functools.partial(cubic, p=p), 0.0, 5.0, xtol=1e-14)


def newton_secant(p):
    return optimize.newton(cubic, 1.0, args=(p,), tol=1e-14)


def newton_fprime(p):
    return optimize.newton(cubic, 1.0, fprime=lambda x, q: 3 * x * x + q, args=(p,),
                           tol=1e-14)


def root_scalar_bracket(p):
    return optimize.root_scalar(cubic, args=(p,), bracket=(0.0, 5.0), xtol=1e-14).root


def brentq_full_output(p):
    x, info = optimize.brentq(cubic, 0.0, 5.0, args=(p,), xtol=1e-14, full_output=True)
    return x


ROOTS = [brentq_args, brentq_lambda, bisect_nested, brentq_partial, newton_secant,
         newton_fprime, root_scalar_bracket, brentq_full_output]


@pytest.mark.parametrize("f", ROOTS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("p", [0.5, 1.0, 3.0])
def test_the_root_of_a_cubic_in_both_modes(f, p):
    expected = root_slope(p)
    assert abs(central(f, p) - expected) < 1e-7
    assert abs(s2sad.grad(f)(p) - expected) < 1e-10
    assert abs(s2sad.jvp(f, (p,), (1.0,))[1] - expected) < 1e-10


def loss_of_root(p, q):
    x = optimize.brentq(lambda x: x ** 3 + p * x - q, 0.0, 5.0, xtol=1e-14)
    return np.sin(x) * q


def test_two_parameters_and_the_function_of_the_root():
    for wrt in (0, 1):
        def along(h, wrt=wrt):
            return loss_of_root(*[v + (h if k == wrt else 0.0)
                                  for k, v in enumerate((1.0, 2.0))])
        d = s2sad.grad(loss_of_root, wrt=wrt)(1.0, 2.0)
        assert abs(d - central(along, 0.0)) < 1e-7


def fsolve_system(p):
    def r(x):
        return np.array([x[0] ** 2 + p * x[1] - 3.0, x[0] - p * x[1] ** 3])
    return np.sum(optimize.fsolve(r, np.array([1.0, 1.0]), xtol=1e-13) * np.array([1.0, 2.0]))


def root_system(p):
    res = optimize.root(lambda x, a: np.array([x[0] ** 2 + a * x[1] - 3.0,
                                                x[0] - a * x[1] ** 3]),
                        np.array([1.0, 1.0]), args=(p,), tol=1e-13)
    return res.x[0] - 3.0 * res.x[1]


@pytest.mark.parametrize("f", [fsolve_system, root_system], ids=lambda f: f.__name__)
def test_systems_in_both_modes(f):
    expected = central(f, 1.3)
    assert abs(s2sad.grad(f)(1.3) - expected) < 1e-7
    assert abs(s2sad.jvp(f, (1.3,), (1.0,))[1] - expected) < 1e-7


def test_an_array_of_parameters():
    def f(w):
        x = optimize.fsolve(lambda x: x ** 3 + w * x - 2.0, np.ones(3), xtol=1e-13)
        return np.sum(x * x)
    w = np.array([0.5, 1.0, 2.0])
    g = s2sad.grad(f)(w)
    for k in range(3):
        e = np.zeros(3)
        e[k] = 1.0
        assert abs(g[k] - central(lambda h: f(w + h * e), 0.0)) < 1e-7


def test_a_solve_that_does_not_converge_is_refused_at_run_time():
    def f(p):
        return optimize.brentq(cubic, 0.0, 5.0, args=(p,), maxiter=2, disp=False)
    with pytest.raises(S2SADError, match="did not converge"):
        s2sad.grad(f)(1.0)

    def g(p):
        return optimize.root(lambda x: x ** 2 + p, np.array([1.0])).x[0]
    with pytest.raises(S2SADError, match="did not succeed"):
        s2sad.grad(g)(1.0)


def test_a_callback_and_a_count_of_args_unknown_are_refused_where_called():
    def f(p):
        return optimize.root(cubic, np.array([1.0]), args=(p,), callback=print).x[0]
    with pytest.raises(UnsupportedSyntaxError, match="callback"):
        s2sad.grad(f)(1.0)

    def g(p, extra):
        return optimize.brentq(cubic, 0.0, 5.0, args=extra)
    with pytest.raises(UnsupportedSyntaxError, match="as a tuple"):
        s2sad.grad(g)(1.0, (1.0,))


def test_a_constant_call_is_the_solver_itself():
    def f(p):
        return p * optimize.brentq(cubic, 0.0, 5.0, args=(1.0,))
    x = optimize.brentq(cubic, 0.0, 5.0, args=(1.0,))
    assert s2sad.grad(f)(2.0) == x


def test_scipy_fixed_point_and_s2sad_fixed_point():
    def with_scipy(a):
        return optimize.fixed_point(lambda x: np.cos(a * x), 1.0, xtol=1e-14)

    def with_s2sad(a):
        return s2sad.fixed_point(lambda x, b: np.cos(b * x), 1.0, args=(a,), tol=1e-14)
    for f in (with_scipy, with_s2sad):
        x = f(0.5)
        expected = -x * np.sin(0.5 * x) / (1 + 0.5 * np.sin(0.5 * x))
        assert abs(central(f, 0.5) - expected) < 1e-7
        assert abs(s2sad.grad(f)(0.5) - expected) < 1e-10
        assert abs(s2sad.jvp(f, (0.5,), (1.0,))[1] - expected) < 1e-10


def test_fixed_point_not_reached():
    with pytest.raises(S2SADError, match="no fixed point"):
        s2sad.fixed_point(lambda x: x + 1.0, 0.0, maxiter=5)


def halley_residual(x, w):
    return x ** 3 + w * x - 2.0


@s2sad.custom_root(halley_residual)
def hand_newton(x0, w):
    x = x0
    for _ in range(60):
        x = x - halley_residual(x, w) / (3 * x ** 2 + w)
    return x


@s2sad.custom_root(halley_residual)
def stops_early(x0, w):
    return x0 - halley_residual(x0, w) / (3 * x0 ** 2 + w)


def test_custom_root_on_arrays_in_both_modes():
    def f(w):
        return np.sum(np.sin(hand_newton(np.ones(3), w)))
    w = np.array([0.5, 1.0, 2.0])
    g = s2sad.grad(f)(w)
    t = np.array([0.3, -1.0, 2.0])
    for k in range(3):
        e = np.zeros(3)
        e[k] = 1.0
        assert abs(g[k] - central(lambda h: f(w + h * e), 0.0)) < 1e-7
    assert abs(s2sad.jvp(f, (w,), (t,))[1] - g @ t) < 1e-10
    assert abs(s2sad.grad(lambda p: hand_newton(1.0, p))(1.0) - root_slope(1.0)) < 1e-10


def test_custom_root_refuses_a_value_that_is_no_root():
    with pytest.raises(S2SADError, match="no root"):
        s2sad.grad(lambda p: stops_early(3.0, p))(1.0)
