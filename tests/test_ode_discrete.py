"""The adjoint of the steps an explicit Runge-Kutta solve took (rules/odes.py's
`recording` and `discrete_adjoint`, reverse mode's for RK45 and RK23), against central
differences of `solve_ivp` itself at tight tolerances: forwards and backwards in time,
outputs at the start and the end, the solver's own steps. The steps of a long solve are
taken again from checkpoints: tests/test_ode_checkpoints.py."""

import numpy as np
import pytest

scipy = pytest.importorskip("scipy")
from scipy.integrate import solve_ivp  # noqa: E402

import s2sad  # noqa: E402
from s2sad.rules import odes  # noqa: E402
from test_ode_adjoint import PROBLEMS, central, flat, rhs_of, unflat  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::s2sad.UnconnectedInputWarning")

TOLERANCES = {"RK45": dict(rtol=1e-10, atol=1e-12), "RK23": dict(rtol=1e-8, atol=1e-10)}


def solve(f, t_span, y0, args, t_eval, method):
    sol = solve_ivp(f, t_span, y0, args=args, t_eval=t_eval, method=method,
                    **TOLERANCES[method])
    assert sol.success
    return sol


def recorded(f, t_span, y0, args, t_eval, method):
    solver, record = odes.recording(method)
    sol = solve_ivp(f, t_span, y0, args=args, t_eval=t_eval, method=solver,
                    **TOLERANCES[method])
    plain = solve(f, t_span, y0, args, t_eval, method)
    assert np.array_equal(sol.y, plain.y)          # (recording changes nothing)
    return sol, record


def loss_of(f, args, y0, t_span, method, t_eval, weights):
    return np.sum(weights * solve(f, t_span, y0, args, t_eval, method).y)


@pytest.mark.parametrize("method", sorted(TOLERANCES))
@pytest.mark.parametrize("name, backwards", [("linear", False), ("lotka_volterra", False),
                                             ("forced", False), ("lotka_volterra", True)])
def test_discrete_adjoint_against_central_differences(name, backwards, method):
    f, args, y0, t_span, _ = PROBLEMS[name]
    t_eval = np.linspace(t_span[0], t_span[1], 9)     # (the start and the end among them)
    if backwards:
        t_span, t_eval = t_span[::-1], t_eval[::-1]
    weights = np.random.default_rng(0).normal(size=(len(y0), len(t_eval)))
    sol, record = recorded(f, t_span, y0, args, t_eval, method)
    assert len(record)
    t0_bar, y0_bar, p_bar, ts_bar = odes.discrete_adjoint(
        rhs_of(f, args), record, t_span[0], y0, sol.t, sol.y, weights)
    h = 1e-5
    assert np.allclose(y0_bar, central(
        lambda y: loss_of(f, args, y, t_span, method, t_eval, weights), y0, h), rtol=1e-5)
    assert np.allclose(p_bar, central(
        lambda q: loss_of(f, unflat(q, args), y0, t_span, method, t_eval, weights),
        flat(args), h), rtol=1e-5)
    # (the first output is at t0: it moves with t0, so the inner ones only)
    assert np.allclose(ts_bar[1:-1], central(
        lambda ts: loss_of(f, args, y0, t_span, method, np.r_[t_eval[0], ts, t_eval[-1]],
                           weights), t_eval[1:-1], h), rtol=1e-5)


def test_the_solvers_steps_final_state():
    f, args, y0, t_span, _ = PROBLEMS["lotka_volterra"]
    sol, record = recorded(f, t_span, y0, args, None, "RK45")
    w = np.array([1.0, -2.0])
    ys_bar = np.zeros_like(sol.y)
    ys_bar[:, -1] = w
    t0_bar, y0_bar, p_bar, ts_bar = odes.discrete_adjoint(
        rhs_of(f, args), record, t_span[0], y0, sol.t, sol.y, ys_bar, at_steps=True)

    def final(q, y=y0):
        return w @ solve(f, t_span, y, unflat(q, args), None, "RK45").y[:, -1]
    h = 1e-5
    assert np.allclose(p_bar, central(final, flat(args), h), rtol=1e-5)
    assert np.allclose(y0_bar, central(lambda y: final(flat(args), y), y0, h), rtol=1e-5)
    ys_bar[:, 1] = 1.0
    with pytest.raises(odes.InnerStepError):
        odes.discrete_adjoint(rhs_of(f, args), record, t_span[0], y0, sol.t, sol.y, ys_bar,
                              at_steps=True)


def lotka_volterra(t, y, alpha, beta):
    return np.array([alpha * y[0] - beta * y[0] * y[1], 0.1 * y[0] * y[1] - 0.4 * y[1]])


TIMES = np.linspace(0.5, 10.0, 40)


def fit(p):
    sol = solve_ivp(lotka_volterra, (0.0, 10.0), np.array([10.0, 5.0]), args=(p[0], p[1]),
                    t_eval=TIMES, rtol=1e-10, atol=1e-12)
    return np.sum(np.sin(TIMES) * sol.y)


adjoint = odes.adjoint


def test_a_loose_solve_has_the_continuous_adjoint(monkeypatch):
    # (at rtol 1e-3 the derivative of the computed solution is further from the exact
    # one than the continuous adjoint: see odes.DISCRETE_RTOL)
    calls = []
    monkeypatch.setattr(odes, "adjoint", lambda *a, **k: calls.append(1) or adjoint(*a, **k))

    def loose(p):
        sol = solve_ivp(lotka_volterra, (0.0, 10.0), np.array([10.0, 5.0]),
                        args=(p[0], p[1]), t_eval=TIMES, rtol=1e-3)
        return np.sum(np.sin(TIMES) * sol.y)
    p = np.array([1.1, 0.4])
    s2sad.grad(loose)(p)
    assert len(calls) == 1
    s2sad.grad(fit)(p)
    assert len(calls) == 1
