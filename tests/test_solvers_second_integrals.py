"""Second derivatives through SciPy's `quad` (s2sad/scipy_quadrature.py: forward mode over
Leibniz's rule), `hessian`, `hvp` and `jacfwd(grad(...))`, against the analytic second
derivatives of closed-form integrals and against central differences of s2sad's gradient
(itself checked against central differences of the function in tests/test_solvers.py).
"""
import numpy as np
import pytest

from optional import require

integrate = require("scipy.integrate", "scipy")

import s2sad  # noqa: E402
from s2sad.errors import S2SADError  # noqa: E402



def central_jacobian(g, x, h=1e-5):
    """The Jacobian of `g` (a gradient) at `x` by central differences."""
    x = np.asarray(x, dtype=float)
    cols = []
    for k in range(x.size):
        e = np.zeros(x.size)
        e[k] = h
        cols.append((np.asarray(g(x + e)) - np.asarray(g(x - e))) / (2 * h))
    return np.stack(cols, axis=-1)


def decay(x):
    """The integral of exp(-p t) from 0 to b, (1 - exp(-p b)) / p, at x = (p, b)."""
    p, b = x[0], x[1]
    return integrate.quad(lambda t: np.exp(-p * t), 0.0, b, epsabs=1e-13, epsrel=1e-12)[0]


def decay_hessian(p, b):
    """Its Hessian: I_pp = int t^2 exp(-p t) = (2 - exp(-p b) (p^2 b^2 + 2 p b + 2)) / p^3,
    I_pb = -b exp(-p b), I_bb = -p exp(-p b)."""
    e = np.exp(-p * b)
    pp = (2 - e * (p * p * b * b + 2 * p * b + 2)) / p ** 3
    return np.array([[pp, -b * e], [-b * e, -p * e]])


def test_a_closed_form_integral_against_its_analytic_second_derivatives():
    x = np.array([0.7, 2.5])
    expected = decay_hessian(*x)
    assert np.allclose(s2sad.hessian(decay)(x), expected, rtol=1e-10, atol=1e-12)
    v = np.array([0.3, -1.1])
    assert np.allclose(s2sad.hvp(decay)(x, v), expected @ v, rtol=1e-10, atol=1e-12)
    assert np.allclose(s2sad.jacfwd(s2sad.grad(decay))(x), expected, rtol=1e-10,
                       atol=1e-12)


def test_a_number_parameter_and_its_own_second_derivative():
    def area(p):
        return integrate.quad(lambda t: np.exp(-p * t), 0.0, 2.5, epsabs=1e-13, epsrel=1e-12)[0] * p
    p = 0.7
    # (p I)'' = 2 I_p + p I_pp
    e = np.exp(-p * 2.5)
    i_p = (p * 2.5 * e - (1 - e)) / p ** 2
    assert abs(s2sad.hessian(area)(p) - (2 * i_p + p * decay_hessian(p, 2.5)[0, 0])) < 1e-11


def shifted(x):
    """exp(-p t) from a to b: both limits move, and the parameter reaches quad by args=."""
    return integrate.quad(lambda t, p: np.exp(-p * t) * np.sin(t), x[1], x[2],
                          args=(x[0],), epsabs=1e-13, epsrel=1e-12)[0] ** 2


def weighted(c):
    """An array the integrand reads through its closure, and its number beside it."""
    return integrate.quad(lambda t: np.exp(-c[0] * t) * (c[1:] @ t ** np.arange(
        c.size - 1)), 0.0, 1.5, epsabs=1e-13, epsrel=1e-12)[0] ** 2


@pytest.mark.parametrize("f, x", [
    (shifted, [0.7, 0.3, 2.0]),
    (weighted, [0.5, 1.0, -0.5, 0.25]),
    (weighted, np.linspace(0.3, 1.2, 12)),        # (its 24 adjoints by quad_vec)
])
def test_hessians_against_central_differences_of_the_gradient(f, x):
    x = np.array(x)
    expected = central_jacobian(s2sad.grad(f), x)
    assert np.allclose(s2sad.hessian(f)(x), expected, rtol=1e-6, atol=1e-8)


def test_an_infinite_limit_is_a_constant_and_its_tangent_is_refused():
    def moment(p):          # int t exp(-p t) from 0 to inf = 1 / p^2
        return integrate.quad(lambda t: t * np.exp(-p * t), 0.0, np.inf, epsabs=1e-13, epsrel=1e-12)[0]
    assert abs(s2sad.hessian(moment)(0.8) - 6 / 0.8 ** 4) < 1e-8

    def upto(x):
        return integrate.quad(lambda t: np.exp(-x[0] * t), 0.0, x[1])[0]
    with pytest.raises(S2SADError, match="infinite"):
        s2sad.hessian(upto)(np.array([0.8, np.inf]))


def test_an_integrand_without_parameters_has_its_limits_second_derivatives():
    def cube(x):            # x[0] times the integral of t^2 from 0 to x[1]: x0 x1^3 / 3
        return integrate.quad(lambda t: t ** 2, 0.0, x[1])[0] * x[0]
    x0, x1 = 2.0, 1.5
    expected = np.array([[0.0, x1 ** 2], [x1 ** 2, 2 * x0 * x1]])
    assert np.allclose(s2sad.hessian(cube)(np.array([x0, x1])), expected, atol=1e-12)
