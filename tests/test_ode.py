"""SciPy's ODE solvers called in differentiated code (s2sad/scipy_odes.py): `solve_ivp` and
`odeint` as users call them, through `s2sad.grad` (the adjoint method) and `s2sad.jvp`
(forward sensitivities), against central differences of the whole function (solved again
at p +- h with tight tolerances) and against the exponential decay's analytic solution.
SciPy is optional: without it this module is skipped.
"""
import numpy as np
import pytest

from optional import require

integrate = require("scipy.integrate", "scipy")
from scipy.integrate import odeint, solve_ivp  # noqa: E402

import s2sad  # noqa: E402
from s2sad.errors import S2SADError, UnsupportedSyntaxError  # noqa: E402
from s2sad.rules import odes  # noqa: E402

TIMES = np.array([0.5, 1.0, 2.0, 4.0, 6.0, 9.0])


def central(f, args, k, h=1e-3):
    """d f / d args[k] (a number or an array) by central differences of fourth order."""
    x = np.asarray(args[k], dtype=float)
    out = np.zeros(x.shape)
    for i in np.ndindex(x.shape):
        step = h * max(1.0, abs(x[i]))

        def at(d):
            moved = x.copy()
            moved[i] += d
            return f(*args[:k], moved if x.ndim else float(moved), *args[k + 1:])
        out[i] = (8 * (at(step) - at(-step)) - (at(2 * step) - at(-2 * step))) / (12 * step)
    return out if x.ndim else float(out)


def assert_derivatives(f, args, rtol=1e-6):
    """grad (every argument) and jvp (along each) against central differences."""
    wrt = tuple(range(len(args)))
    grads = s2sad.grad(f, wrt=wrt)(*args)
    for k in wrt:
        expected = central(f, args, k)
        assert np.allclose(grads[k], expected, rtol=rtol, atol=rtol * np.max(np.abs(expected)))
        along = [np.zeros_like(np.asarray(a, dtype=float)) for a in args]
        along[k] = np.ones_like(along[k])
        along = [a if a.ndim else float(a) for a in along]
        assert np.isclose(s2sad.jvp(f, args, tuple(along))[1], np.sum(expected), rtol=rtol,
                          atol=rtol * np.max(np.abs(expected)))


# -- a pharmacokinetic fit: one compartment, oral dose ------------------------------------
def absorption(t, amounts, ka, ke):
    gut, blood = amounts[0], amounts[1]
    return np.array([-ka * gut, ka * gut - ke * blood])


OBSERVED = np.array([3.9, 5.6, 6.1, 4.5, 3.0, 1.7])


def pk_loss(ka, ke, volume):
    sol = solve_ivp(absorption, (0.0, 10.0), np.array([100.0, 0.0]), args=(ka, ke),
                    t_eval=TIMES, method="LSODA", rtol=1e-10, atol=1e-12)
    concentration = sol.y[1] / volume
    return np.sum((concentration - OBSERVED) ** 2)


def pk_closed_form(ka, ke, volume):
    blood = 100.0 * ka / (ka - ke) * (np.exp(-ke * TIMES) - np.exp(-ka * TIMES))
    return np.sum((blood / volume - OBSERVED) ** 2)


def test_pharmacokinetic_fit_in_both_modes():
    args = (1.2, 0.25, 15.0)
    assert np.isclose(pk_loss(*args), pk_closed_form(*args), rtol=1e-8)
    assert_derivatives(pk_loss, args)
    # and against the derivative of the closed-form solution
    for k in range(3):
        assert np.isclose(s2sad.grad(pk_loss, wrt=k)(*args), central(pk_closed_form, args, k),
                          rtol=1e-6)


SYNTHETIC = 100.0 * 1.2 / (1.2 - 0.25) * (np.exp(-0.25 * TIMES) - np.exp(-1.2 * TIMES)) / 15.0


def pk_fit_loss(ka, ke, volume):
    sol = solve_ivp(absorption, (0.0, 10.0), np.array([100.0, 0.0]), args=(ka, ke),
                    t_eval=TIMES, method="LSODA", rtol=1e-10, atol=1e-12)
    return np.sum((sol.y[1] / volume - SYNTHETIC) ** 2)


def test_pharmacokinetic_fit_by_minimize():
    """minimize(jac=s2sad.grad(loss)) finds the rates the data were made with."""
    from scipy.optimize import minimize
    gradient = s2sad.grad(pk_fit_loss, wrt=(0, 1, 2))
    result = minimize(lambda p: pk_fit_loss(*p), np.array([1.0, 0.3, 12.0]),
                      jac=lambda p: np.array(gradient(*p)), method="BFGS",
                      options={"gtol": 1e-9})
    assert np.allclose(result.x, [1.2, 0.25, 15.0], rtol=1e-5)


# -- Lotka-Volterra -----------------------------------------------------------------------
def lotka_volterra(t, y, alpha, beta, delta, gamma):
    prey, predator = y[0], y[1]
    return np.array([alpha * prey - beta * prey * predator,
                     delta * prey * predator - gamma * predator])


WEIGHTS = np.linspace(-1.0, 1.0, 12).reshape(2, 6)


def lv_args(alpha, beta, y0):
    sol = solve_ivp(lotka_volterra, (0.0, 10.0), y0, args=(alpha, beta, 0.1, 0.4),
                    t_eval=TIMES, method="DOP853", rtol=1e-10, atol=1e-12)
    return np.sum(WEIGHTS * sol.y)


def lv_closure(alpha, beta, y0):
    def rhs(t, y):
        return lotka_volterra(t, y, alpha, beta, 0.1, 0.4)
    sol = solve_ivp(rhs, (0.0, 10.0), y0, t_eval=TIMES, rtol=1e-10, atol=1e-12)
    return np.sum(WEIGHTS * sol.y)


def lv_lambda_list(alpha, beta, y0):
    sol = solve_ivp(lambda t, y: [alpha * y[0] - beta * y[0] * y[1],
                                  0.1 * y[0] * y[1] - 0.4 * y[1]],
                    (0.0, 10.0), y0, t_eval=TIMES, rtol=1e-10, atol=1e-12)
    return np.sum(WEIGHTS * sol.y)


@pytest.mark.parametrize("f", [lv_args, lv_closure, lv_lambda_list],
                         ids=lambda f: f.__name__)
def test_lotka_volterra_in_both_modes(f):
    assert_derivatives(f, (1.1, 0.4, np.array([10.0, 5.0])))


def lv_times(t_end, times):
    sol = solve_ivp(lotka_volterra, (0.0, t_end), np.array([10.0, 5.0]),
                    args=(1.1, 0.4, 0.1, 0.4), t_eval=times, rtol=1e-10, atol=1e-12)
    return np.sum(WEIGHTS * sol.y) + np.sum(sol.t ** 2)


def test_derivatives_with_respect_to_the_times():
    assert_derivatives(lv_times, (10.0, TIMES.copy()))


def lv_start(t0):
    sol = solve_ivp(lotka_volterra, (t0, 10.0), np.array([10.0, 5.0]),
                    args=(1.1, 0.4, 0.1, 0.4), t_eval=TIMES, rtol=1e-10, atol=1e-12)
    return np.sum(WEIGHTS * sol.y)


def test_derivative_with_respect_to_the_start_time():
    assert_derivatives(lv_start, (0.2,))


def lv_final_state(alpha, t_end):
    sol = solve_ivp(lotka_volterra, (0.0, t_end), np.array([10.0, 5.0]),
                    args=(alpha, 0.4, 0.1, 0.4), rtol=1e-10, atol=1e-12)
    return sol.y[0, -1] + 2.0 * sol.y[1, -1] + sol.t[-1]


def test_the_final_state_of_the_solvers_own_steps():
    assert_derivatives(lv_final_state, (1.1, 7.0))


def lv_inner_step(alpha):
    sol = solve_ivp(lotka_volterra, (0.0, 5.0), np.array([10.0, 5.0]),
                    args=(alpha, 0.4, 0.1, 0.4))
    return np.sum(sol.y)


def test_a_step_the_solver_chose_is_refused_in_reverse_mode_and_nan_in_forward():
    with pytest.raises(odes.InnerStepError, match=r"test_ode.py:\d+: solve_ivp\(\) of .*t_eval="):
        s2sad.grad(lv_inner_step)(1.1)
    assert np.isnan(s2sad.jvp(lv_inner_step, (1.1,), (1.0,))[1])


# -- a stiff problem ----------------------------------------------------------------------
def robertson(t, y, k1, k2, k3):
    return np.array([-k1 * y[0] + k2 * y[1] * y[2],
                     k1 * y[0] - k2 * y[1] * y[2] - k3 * y[1] ** 2,
                     k3 * y[1] ** 2])


@pytest.mark.parametrize("method", ["BDF", "LSODA", "Radau"])
def test_a_stiff_problem(method):
    def f(k1, k3):
        sol = solve_ivp(robertson, (0.0, 5.0), np.array([1.0, 0.0, 0.0]),
                        args=(k1, 1e3, k3), t_eval=np.array([1.0, 5.0]), method=method,
                        rtol=1e-10, atol=1e-12)
        return sol.y[0, 1] + 10.0 * sol.y[1, 0]
    assert_derivatives(f, (0.04, 3e3), rtol=1e-5)


# -- odeint -------------------------------------------------------------------------------
def lv_odeint(alpha, y0):
    ys = odeint(lambda y, t, a: lotka_volterra(t, y, a, 0.4, 0.1, 0.4), y0,
                np.r_[0.0, TIMES], args=(alpha,), rtol=1e-11, atol=1e-12)
    return np.sum(WEIGHTS * ys[1:].T) + ys[0, 0]


def lv_odeint_tfirst(alpha, times):
    ys = odeint(lotka_volterra, np.array([10.0, 5.0]), times, args=(alpha, 0.4, 0.1, 0.4),
                tfirst=True, rtol=1e-11, atol=1e-12)
    return np.sum(WEIGHTS * ys.T)


def test_odeint_in_both_modes():
    assert_derivatives(lv_odeint, (1.1, np.array([10.0, 5.0])))
    assert_derivatives(lv_odeint_tfirst, (1.1, TIMES.copy()))


def decay(k):
    return odeint(lambda y, t: -k * y, np.array([2.0]), np.array([0.0, 1.0, 3.0]))[2, 0]


def test_odeint_exponential_decay_at_its_default_tolerances():
    # y = 2 exp(-k t): dy(3)/dk = -6 exp(-3 k), to odeint's tolerances (1.5e-8)
    assert np.isclose(s2sad.grad(decay)(0.5), -6.0 * np.exp(-1.5), rtol=1e-6)


# -- refused ------------------------------------------------------------------------------
def test_events_and_dense_output_are_refused_where_called():
    def with_events(k):
        return solve_ivp(absorption, (0.0, 5.0), np.array([1.0, 0.0]), args=(k, 0.1),
                         events=lambda t, y, ka, ke: y[0] - 0.5).y[0, -1]
    with pytest.raises(UnsupportedSyntaxError, match="events"):
        s2sad.grad(with_events)(1.0)

    def with_dense_output(k):
        return solve_ivp(absorption, (0.0, 5.0), np.array([1.0, 0.0]), args=(k, 0.1),
                         dense_output=True).sol(2.0)[0]
    with pytest.raises(UnsupportedSyntaxError, match="t_eval="):
        s2sad.grad(with_dense_output)(1.0)


def blowing_up(k):
    sol = solve_ivp(lambda t, y: k * y ** 2, (0.0, 2.0), np.array([1.0]))
    return sol.y[0, -1]


def test_a_failed_solve_is_refused_at_run_time():
    with pytest.raises(S2SADError, match=r"test_ode.py:\d+.*the solve failed"):
        s2sad.grad(blowing_up)(1.0)


def test_second_derivatives_with_respect_to_the_start_time_are_refused():
    with pytest.raises(S2SADError, match="second derivatives with respect to the times"):
        s2sad.hessian(lv_start)(0.2)


def lists_and_a_jacobian(k, y0):
    sol = solve_ivp(lambda t, y: [-k * y[0] + y[1], -2.0 * y[1]], [0.0, 3.0], [y0, 1.0],
                    method="BDF", t_eval=[1.0, 2.0, 3.0],
                    jac=lambda t, y: np.array([[-k, 1.0], [0.0, -2.0]]),
                    rtol=1e-10, atol=1e-12)
    return np.sum(sol.y[0])


def test_lists_and_a_jacobian_of_the_users():
    assert_derivatives(lists_and_a_jacobian, (0.7, 2.0))


def rates_and_scale(t, y, rates, scale):
    return -rates[0] * y + scale["s"] * rates[1]


def structured_args(a, b, s):
    sol = solve_ivp(rates_and_scale, (0.0, 1.0), np.array([1.0, 2.0]),
                    args=((a, np.array([b, 2 * b])), {"s": s}), t_eval=[0.5, 1.0],
                    rtol=1e-10, atol=1e-12)
    return np.sum(sol.y ** 2)


def test_arguments_in_containers():
    assert_derivatives(structured_args, (0.7, 0.3, 1.5))
