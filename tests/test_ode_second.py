"""Second derivatives through SciPy's ODE solvers (s2sad/scipy_odes.py, rules/odes.py's
`adjoint_tangent`: forward mode over the adjoint of the steps taken, for RK45 and RK23 at
tight tolerances, else over the continuous adjoint), `hessian`, `hvp` and
`jacfwd(grad(...))` of functions that call `solve_ivp` and `odeint`, against the analytic
second derivatives of an exponential decay and of a linear system and against central
differences of s2sad's gradient (itself checked against central differences of the
function in tests/test_ode.py). Second derivatives with respect to the times are refused
where the user's code calls the solver.
"""
import numpy as np
import pytest

from optional import require

integrate = require("scipy.integrate", "scipy")
from scipy.integrate import odeint, solve_ivp  # noqa: E402

import s2sad  # noqa: E402
from s2sad.errors import S2SADError  # noqa: E402

TIMES = np.array([0.5, 1.0, 2.0, 3.0])


def central_jacobian(g, x, h=1e-5):
    """The Jacobian of `g` (a gradient) at `x` by central differences."""
    x = np.asarray(x, dtype=float)
    cols = []
    for k in range(x.size):
        e = np.zeros(x.size)
        e[k] = h
        cols.append((np.asarray(g(x + e)) - np.asarray(g(x - e))) / (2 * h))
    return np.stack(cols, axis=-1)


def decay(t, y, k):
    return -k * y


def decay_loss(x):
    """sum over TIMES of y(t)^2, y' = -k y, y(0) = y0, at x = (k, y0)."""
    sol = solve_ivp(decay, (0.0, 3.0), np.array([x[1]]), args=(x[0],), t_eval=TIMES,
                    rtol=1e-10, atol=1e-12)
    return np.sum(sol.y[0] ** 2)


def decay_by_odeint(x):
    ys = odeint(decay, np.array([x[1]]), np.concatenate([[0.0], TIMES]), args=(x[0],),
                tfirst=True, rtol=1e-11, atol=1e-12)
    return np.sum(ys[1:, 0] ** 2)


def decay_hessian(k, y0):
    """f = y0^2 S, S = sum exp(-2 k t): f_kk = y0^2 sum 4 t^2 e, f_ky0 = -4 y0 sum t e,
    f_y0y0 = 2 S (e = exp(-2 k t))."""
    e = np.exp(-2 * k * TIMES)
    return np.array([[y0 * y0 * np.sum(4 * TIMES ** 2 * e), -4 * y0 * np.sum(TIMES * e)],
                     [-4 * y0 * np.sum(TIMES * e), 2 * np.sum(e)]])


@pytest.mark.parametrize("f", [decay_loss, decay_by_odeint])
def test_exponential_decay_against_its_analytic_second_derivatives(f):
    x = np.array([0.7, 1.3])
    expected = decay_hessian(*x)
    assert np.allclose(s2sad.hessian(f)(x), expected, rtol=1e-7, atol=1e-9)
    v = np.array([0.4, -1.0])
    assert np.allclose(s2sad.hvp(f)(x, v), expected @ v, rtol=1e-7, atol=1e-9)
    assert np.allclose(s2sad.jacfwd(s2sad.grad(f))(x), expected, rtol=1e-7, atol=1e-9)


def linear(t, y, a):
    return np.array([[-a, 1.0], [0.0, -a]]) @ y


def linear_loss(x):
    """|y(T)|^2 for y' = A y, A = [[-a, 1], [0, -a]], y(0) = (x1, x2), at x = (a, x1, x2):
    y(T) = exp(-a T) M y0 with M = [[1, T], [0, 1]]."""
    sol = solve_ivp(linear, (0.0, 1.5), x[1:], args=(x[0],), t_eval=np.array([1.5]),
                    method="DOP853", rtol=1e-11, atol=1e-12)
    return np.sum(sol.y[:, -1] ** 2)


def test_a_linear_system_against_its_analytic_second_derivatives():
    a, y0, T = 0.4, np.array([0.8, -1.2]), 1.5
    m = np.array([[1.0, T], [0.0, 1.0]])
    q = np.sum((m @ y0) ** 2)                 # f = exp(-2 a T) q(y0)
    e = np.exp(-2 * a * T)
    dq = 2 * m.T @ m @ y0
    expected = np.zeros((3, 3))
    expected[0, 0] = 4 * T * T * e * q
    expected[0, 1:] = expected[1:, 0] = -2 * T * e * dq
    expected[1:, 1:] = 2 * e * m.T @ m
    x = np.concatenate([[a], y0])
    assert np.allclose(s2sad.hessian(linear_loss)(x), expected, rtol=1e-7, atol=1e-9)


def lotka_volterra(t, z, alpha, beta, gamma, delta):
    prey, predators = z[0], z[1]
    return [alpha * prey - beta * prey * predators,
            delta * prey * predators - gamma * predators]


def lv_loss(p):
    sol = solve_ivp(lotka_volterra, (0.0, 3.0), np.array([1.0, 0.5]),
                    args=(p[0], p[1], p[2], p[3]), t_eval=TIMES, rtol=1e-10, atol=1e-12)
    return np.sum(sol.y ** 2) + p[4] * np.sum(sol.y[0])


def lv_closure(p):
    def rhs(t, z):
        return np.array([p[0] * z[0] - p[1] * z[0] * z[1], p[3] * z[0] * z[1] - p[2] * z[1]])
    sol = solve_ivp(rhs, (0.0, 3.0), np.array([p[4], 0.5]), t_eval=TIMES, rtol=1e-10,
                    atol=1e-12)
    return np.sum(np.log(sol.y))


def lv_dop853(p):           # (not a recorded method: forward over the continuous adjoint)
    sol = solve_ivp(lotka_volterra, (0.0, 3.0), p[4:], args=(p[0], p[1], p[2], p[3]),
                    t_eval=TIMES, method="DOP853", rtol=1e-10, atol=1e-12)
    return np.sum(sol.y ** 2)


def lv_final(p):            # the solver's own steps: the last column has its derivative
    sol = solve_ivp(lotka_volterra, (0.0, 2.0), p[4:], args=(p[0], p[1], p[2], p[3]),
                    method="RK45", rtol=1e-10, atol=1e-12)
    return sol.y[0, -1] * sol.y[1, -1]


def lv_state_first(z, t, alpha, beta, gamma, delta):       # (odeint's order)
    return lotka_volterra(t, z, alpha, beta, gamma, delta)


def lv_odeint(p):
    ys = odeint(lv_state_first, p[4:], np.array([0.0, 1.0, 2.5]),
                args=(p[0], p[1], p[2], p[3]), rtol=1e-11, atol=1e-12)
    return np.sum(ys[1:] ** 2)


@pytest.mark.parametrize("f, x", [
    (lv_loss, [1.1, 0.4, 0.9, 0.3, 0.5]),
    (lv_closure, [1.1, 0.4, 0.9, 0.3, 1.2]),
    (lv_dop853, [1.1, 0.4, 0.9, 0.3, 1.0, 0.5]),
    (lv_final, [1.1, 0.4, 0.9, 0.3, 1.0, 0.5]),
    (lv_odeint, [1.1, 0.4, 0.9, 0.3, 1.0, 0.5]),
])
def test_hessians_against_central_differences_of_the_gradient(f, x):
    x = np.array(x)
    expected = central_jacobian(s2sad.grad(f), x)
    assert np.allclose(s2sad.hessian(f)(x), expected, rtol=1e-5, atol=1e-7)


def test_second_derivatives_with_respect_to_the_times_are_refused():
    def until(x):
        sol = solve_ivp(decay, (0.0, x[1]), np.array([1.0]), args=(x[0],), rtol=1e-8)
        return sol.y[0, -1]
    with pytest.raises(S2SADError, match="times") as caught:
        s2sad.hessian(until)(np.array([0.7, 2.0]))
    line = until.__code__.co_firstlineno + 1
    assert (caught.value.filename, caught.value.lineno) == (__file__, line)
