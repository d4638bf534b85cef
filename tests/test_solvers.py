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
    with pytest.raises(S2SADError, match="did not succeed") as caught:
        s2sad.grad(g)(1.0)
    # located at the user's call (a lambda's own place is s2sad's lifted copy of it)
    line = g.__code__.co_firstlineno + 1
    assert str(caught.value).startswith(f"{__file__}:{line}: root() of "), caught.value


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


# -- minimisers: implicit differentiation of grad f = 0 -----------------------------------

def bowl(x, p):
    return np.sum((x - p) ** 2 * np.cosh(x)) + p[0] * x[0] ** 4


def central_grad(f, p, h=1e-5):
    out = np.zeros(len(p))
    for k in range(len(p)):
        e = np.zeros(len(p))
        e[k] = h
        out[k] = (f(p + e) - f(p - e)) / (2 * h)
    return out


WEIGHTS = np.array([1.0, 3.0])


def minimize_args_jac(p):
    res = optimize.minimize(bowl, np.zeros(2), args=(p,), jac=s2sad.grad(bowl), tol=1e-10)
    return np.sum(res.x * WEIGHTS) + res.fun


def minimize_lambda(p):
    res = optimize.minimize(lambda x: np.sum((x - p) ** 2 * (1 + x ** 2)), np.zeros(2),
                            jac=lambda x: 2 * (x - p) * (1 + x ** 2) + 2 * x * (x - p) ** 2,
                            method="BFGS", tol=1e-10)
    return np.sum(res.x * WEIGHTS) + res.fun


def minimize_newton_cg(p):
    res = optimize.minimize(bowl, np.zeros(2), args=(p,), method="Newton-CG",
                            jac=s2sad.grad(bowl), hess=s2sad.hessian(bowl), tol=1e-12)
    return np.sum(res.x * WEIGHTS) * res.fun


def minimize_bounded_inside(p):
    res = optimize.minimize(bowl, np.zeros(2), args=(p,), method="L-BFGS-B",
                            jac=s2sad.grad(bowl), bounds=[(-5.0, 5.0), (None, 4.0)],
                            options={"gtol": 1e-12, "ftol": 1e-15})
    return np.sum(res.x * WEIGHTS)


MINIMIZERS = [minimize_args_jac, minimize_lambda, minimize_newton_cg,
              minimize_bounded_inside]


@pytest.mark.parametrize("f", MINIMIZERS, ids=lambda f: f.__name__)
def test_minimize_in_both_modes(f):
    p = np.array([0.5, 0.8])
    expected = central_grad(f, p)
    assert np.allclose(s2sad.grad(f)(p), expected, atol=1e-6, rtol=0)
    t = np.array([0.3, -1.0])
    assert abs(s2sad.jvp(f, (p,), (t,))[1] - expected @ t) < 1e-6


def test_the_minimiser_of_a_quadratic_is_analytic():
    a = np.array([[3.0, 1.0], [1.0, 2.0]])

    def f(b):      # argmin 0.5 x^T A x - b^T x = A^-1 b; the minimum -0.5 b^T A^-1 b
        res = optimize.minimize(lambda x: 0.5 * x @ a @ x - b @ x, np.zeros(2),
                                method="BFGS", jac=lambda x: a @ x - b, tol=1e-12)
        return res.x[0] + res.fun
    b = np.array([1.0, -2.0])
    inv = np.linalg.inv(a)
    expected = inv[0] - inv @ b
    assert np.allclose(s2sad.grad(f)(b), expected, atol=1e-9, rtol=0)
    assert np.allclose(s2sad.jacfwd(f)(b), expected, atol=1e-9, rtol=0)


def test_minimize_scalar_against_the_analytic_minimiser():
    def f(p):       # argmin (x - p)^2 + p x^4 ... of x^2 - 2 p x + c: x = p
        res = optimize.minimize_scalar(lambda x: (x - p) ** 2 + 0.1 * x ** 4,
                                       options={"xtol": 1e-14})
        return res.x * 2.0 + res.fun

    def bounded(p):
        return optimize.minimize_scalar(lambda x, q: (x - q) ** 2 * (1 + x * x), args=(p,),
                                        bounds=(-3.0, 3.0), method="bounded",
                                        options={"xatol": 1e-12}).x
    for p in (0.3, 1.2):
        x = optimize.minimize_scalar(lambda x: (x - p) ** 2 + 0.1 * x ** 4,
                                     options={"xtol": 1e-14}).x
        dx = 2.0 / (2.0 + 1.2 * x * x)      # from 2 (x - p) + 0.4 x^3 = 0
        expected = 2.0 * dx - 2.0 * (x - p)  # + d fun/dp at x (grad_x f = 0)
        assert abs(s2sad.grad(f)(p) - expected) < 1e-6
        assert abs(s2sad.jvp(f, (p,), (1.0,))[1] - expected) < 1e-6
        assert abs(s2sad.grad(bounded)(p) - 1.0) < 1e-6      # x* = p


def decay(x, t, y):
    return x[0] * np.exp(-x[1] * t) - y


def decay_jacobian(x, t, y):
    e = np.exp(-x[1] * t)
    return np.stack([e, -x[0] * t * e], axis=1)


T = np.linspace(0.0, 3.0, 12)


def least_squares_fit(y):
    res = optimize.least_squares(decay, np.array([1.0, 1.0]), args=(T, y),
                                 jac=decay_jacobian, method="lm", xtol=1e-15, ftol=1e-15,
                                 gtol=1e-15)
    return res.x[0] * 2.0 + res.x[1] + res.cost + np.sum(res.fun)


def test_least_squares_in_both_modes():
    y = 2.0 * np.exp(-0.7 * T) + 0.05 * np.sin(7 * T)
    expected = central_grad(least_squares_fit, y, h=1e-4)     # (the fit stops at ftol:
    g = s2sad.grad(least_squares_fit)(y)                        # its noise is ~1e-10)
    assert np.allclose(g, expected, atol=1e-5, rtol=0)
    t = np.cos(T)
    assert abs(s2sad.jvp(least_squares_fit, (y,), (t,))[1] - g @ t) < 1e-9


def test_a_failed_or_bounded_minimisation_is_refused_at_run_time():
    def f(p):
        return optimize.minimize(bowl, np.zeros(2), args=(p,), options={"maxiter": 2}).x[0]
    with pytest.raises(S2SADError, match="did not succeed"):
        s2sad.grad(f)(np.array([0.5, 0.8]))

    def g(p):
        return optimize.minimize(bowl, np.zeros(2), args=(p,), method="L-BFGS-B",
                                 bounds=[(-1.0, 0.1), (None, None)]).x[0]
    with pytest.raises(S2SADError, match="sits on a bound"):
        s2sad.grad(g)(np.array([0.5, 0.8]))

    def h(p):
        return optimize.minimize(lambda x: (np.sum(x ** 2 - p), 2 * x), np.ones(2),
                                 jac=True).fun
    with pytest.raises(S2SADError, match="jac=True"):
        s2sad.grad(h)(1.0)

    def k(p):
        return optimize.minimize(bowl, np.zeros(2), args=(p,), method="BFGS",
                                 jac=s2sad.grad(bowl)).hess_inv[0, 0]
    with pytest.raises(S2SADError, match="hess_inv"):
        s2sad.grad(k)(np.array([0.5, 0.8]))


def test_constraints_are_refused_where_called():
    def f(p):
        return optimize.minimize(bowl, np.zeros(2), args=(p,),
                                 constraints={"type": "eq", "fun": lambda x: x[0]}).x[0]
    with pytest.raises(UnsupportedSyntaxError, match="constraints"):
        s2sad.grad(f)(np.array([0.5, 0.8]))


# -- quad: Leibniz's rule ------------------------------------------------------------------

integrate = require("scipy.integrate", "scipy")


def decay_integral(p, b):
    """The integral of exp(-p t) from 0 to b: (1 - exp(-p b)) / p."""
    return integrate.quad(lambda t: np.exp(-p * t), 0.0, b, epsabs=1e-13, epsrel=1e-12)[0]


def test_quad_against_a_closed_form_integral_in_both_modes():
    p, b = 0.7, 2.5
    e = np.exp(-p * b)
    d_p = (p * b * e - (1 - e)) / p ** 2
    d_b = e
    assert abs(decay_integral(p, b) - (1 - e) / p) < 1e-13
    assert abs(s2sad.grad(decay_integral, wrt=0)(p, b) - d_p) < 1e-10
    assert abs(s2sad.grad(decay_integral, wrt=1)(p, b) - d_b) < 1e-10
    assert abs(s2sad.jvp(decay_integral, (p, b), (1.0, 2.0))[1] - (d_p + 2 * d_b)) < 1e-10


def gauss_cosine(t, a):
    return np.exp(-a[0] * t * t) * np.cos(a[1] * t)


def quad_to_infinity(w):
    y, err = integrate.quad(gauss_cosine, 0.0, np.inf, args=(w,), epsabs=1e-13, epsrel=1e-12)
    return y * w[1]


def quad_lower_limit(x):
    def integrand(t):
        return np.sin(x * t) / (1 + t * t)
    return integrate.quad(integrand, x, 2.0, epsabs=1e-14, epsrel=1e-13)[0] ** 2


def test_quad_of_arrays_closures_and_limits_against_central_differences():
    w = np.array([0.7, 1.5])
    expected = central_grad(quad_to_infinity, w)
    assert np.allclose(s2sad.grad(quad_to_infinity)(w), expected, atol=1e-8, rtol=0)
    t = np.array([1.0, -0.5])
    assert abs(s2sad.jvp(quad_to_infinity, (w,), (t,))[1] - expected @ t) < 1e-8
    d = central(quad_lower_limit, 0.4)
    assert abs(s2sad.grad(quad_lower_limit)(0.4) - d) < 1e-8
    assert abs(s2sad.jvp(quad_lower_limit, (0.4,), (1.0,))[1] - d) < 1e-8


def test_quad_refusals():
    def weighted(p):
        return integrate.quad(lambda t: p * t, 0.0, 1.0, weight="cos", wvar=2.0)[0]
    with pytest.raises(UnsupportedSyntaxError, match="weight"):
        s2sad.grad(weighted)(1.0)

    def full(p):
        return integrate.quad(lambda t: p * t, 0.0, 1.0, full_output=1)[0]
    with pytest.raises(UnsupportedSyntaxError, match="full_output"):
        s2sad.grad(full)(1.0)

    def to(b):
        return integrate.quad(lambda t: np.exp(-t), 0.0, b)[0]
    with pytest.raises(S2SADError, match="infinite"):
        s2sad.jvp(to, (np.inf,), (1.0,))


def test_reverse_over_reverse_is_refused_at_the_users_call():
    # (hessian, hvp and jacfwd(grad) are forward over reverse: tests/test_solvers_second.py)
    def f(p):
        x = optimize.brentq(cubic, 0.0, 5.0, args=(p[0],), xtol=1e-14)
        return x * p[1]
    gradient = s2sad.grad(f)
    with pytest.raises(S2SADError, match="second derivatives through brentq") as caught:
        s2sad.grad(lambda p: np.sum(gradient(p) ** 2))(np.array([1.0, 2.0]))
    assert f"{__file__}:{f.__code__.co_firstlineno}" in str(caught.value)


EXTRA = (1.5,)


def test_args_as_a_tuple_named_and_partial_by_position():
    def local(p):
        extra = (p,)
        return optimize.brentq(cubic, 0.0, 5.0, args=extra, xtol=1e-14)

    def module_level(p):     # (EXTRA a constant: the root does not depend on p)
        return p * optimize.brentq(cubic, 0.0, 5.0, args=EXTRA, xtol=1e-14)

    def flipped(q, x):
        return cubic(x, q)

    def positional(p):
        return optimize.brentq(functools.partial(flipped, p), 0.0, 5.0, xtol=1e-14)
    for f in (local, positional):
        assert abs(s2sad.grad(f)(1.0) - root_slope(1.0)) < 1e-10
        assert abs(s2sad.jvp(f, (1.0,), (1.0,))[1] - root_slope(1.0)) < 1e-10
    x = optimize.brentq(cubic, 0.0, 5.0, args=EXTRA, xtol=1e-14)
    assert abs(s2sad.grad(module_level)(2.0) - x) < 1e-14

    def quad_args(w):
        extra = (w, 2.0)
        return integrate.quad(lambda t, a, b: np.exp(-a * t) * b, 0.0, 1.0, args=extra,
                              epsabs=1e-13, epsrel=1e-12)[0]
    assert abs(s2sad.grad(quad_args)(0.5) - central(quad_args, 0.5)) < 1e-8


def test_a_parameter_named_like_a_tuple_assigned_later_is_not_counted():
    def f(p, extra):
        x = optimize.brentq(cubic, 0.0, 5.0, args=extra, xtol=1e-14)
        extra = (p,)
        return x + extra[0]
    with pytest.raises(UnsupportedSyntaxError, match="cannot count"):
        s2sad.grad(f)(1.0, (1.0,))


def quadratic_energy(x, a, b):
    return 0.5 * x @ a @ x - b @ x


def energy_hessian(x, a, b):
    return a


@pytest.mark.parametrize("n", [5, 20])     # (a sweep per unknown up to 16; jacfwd beyond)
def test_a_quadratics_minimiser_of_few_or_many_unknowns_against_its_analytic_gradient(n):
    rng = np.random.default_rng(n)
    m = rng.normal(size=(n, n))
    a = m @ m.T / n + np.eye(n)

    def outer(b):
        res = optimize.minimize(quadratic_energy, np.zeros(n), args=(a, b),
                                jac=s2sad.grad(quadratic_energy), hess=energy_hessian,
                                method="trust-exact", tol=1e-12)
        return np.sum(res.x) + res.fun
    b = rng.normal(size=n)
    # x* = A^-1 b, fun = -b A^-1 b / 2: d/db = A^-1 1 - A^-1 b
    expected = np.linalg.solve(a, np.ones(n)) - np.linalg.solve(a, b)
    assert np.allclose(s2sad.grad(outer)(b), expected, atol=1e-8)
