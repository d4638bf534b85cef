"""The adjoint of the steps of a long solve (rules/odes.py's `Record`): the solve keeps a
checkpoint every `HELD` steps and the stages of at most two segments, and the adjoint
takes the earlier steps again from the checkpoints. The steps taken again are the solve's,
bit for bit, so the derivative is the one of the steps all kept, wherever the segments
end; it agrees with central differences and with an exponential decay's analytic
derivatives; and the memory of a gradient does not grow with the number of steps."""

import gc
import tracemalloc

import numpy as np
import pytest

scipy = pytest.importorskip("scipy")
from scipy.integrate import solve_ivp  # noqa: E402

import s2sad  # noqa: E402
from s2sad.rules import odes  # noqa: E402
from test_ode_adjoint import central, lotka_volterra, rhs_of  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::s2sad.UnconnectedInputWarning")

ARGS = (1.1, 0.4, 0.1, 0.4)
Y0 = np.array([10.0, 5.0])
ALL = 10 ** 9       # (a segment longer than any solve: every step kept as computed)


def recorded(method, held, monkeypatch, t_end=10.0):
    monkeypatch.setattr(odes, "HELD", held)
    solver, record = odes.recording(method)
    sol = solve_ivp(lotka_volterra, (0.0, t_end), Y0, args=ARGS, method=solver,
                    rtol=1e-8, atol=1e-10, t_eval=np.linspace(0.5, t_end, 20))
    assert sol.success
    return sol, record


@pytest.mark.parametrize("method", ["RK45", "RK23"])
def test_the_steps_taken_again_are_the_solves(method, monkeypatch):
    sol, every = recorded(method, ALL, monkeypatch)
    _, record = recorded(method, 4, monkeypatch)
    assert len(record) == len(every) > 40
    assert len(record.kept) <= 8 and len(record.checkpoints) == -(-len(record) // 4)
    fun = rhs_of(lotka_volterra, ARGS).fun
    taken = list(record.backwards(fun))
    assert [i for i, _ in taken] == list(range(len(record) - 1, -1, -1))
    for (i, step), (j, kept) in zip(taken, every.backwards(fun)):
        assert i == j
        t, h, y, K = step
        assert (t, h) == kept[:2]
        assert np.array_equal(y, kept[2]) and np.array_equal(K, kept[3])


def decay(t, y, k):
    return -k * y


def decay_outputs(x, t_end, max_step):
    """sum_j w_j y(t_j), y' = -k y, y(0) = y0, at x = (k, y0)."""
    times = np.linspace(t_end / 5, t_end, 5)
    sol = solve_ivp(decay, (0.0, t_end), np.array([x[1]]), args=(x[0],), t_eval=times,
                    rtol=1e-6, atol=1e-12, max_step=max_step)
    return np.sum(np.cos(times) * sol.y[0])


def expected_decay(x, t_end):
    times = np.linspace(t_end / 5, t_end, 5)
    e = np.cos(times) * np.exp(-x[0] * times)
    return np.array([-x[1] * np.sum(times * e), np.sum(e)])


@pytest.mark.parametrize("steps", [3, 4 + 1, 3 * 4 + 5])
def test_segment_boundaries_change_nothing(steps, monkeypatch):
    """Solves of 3 steps (all kept), K + 1 and 3 K + 5 (taken again across segments of
    K = 4): the same derivative as with every step kept, the analytic one."""
    x, t_end = np.array([0.7, 1.3]), 0.05
    lengths = []
    recording = odes.recording

    def spied(method):
        solver, record = recording(method)
        lengths.append(record)
        return solver, record
    monkeypatch.setattr(odes, "recording", spied)
    grads = {}
    for held in (ALL, 4):
        monkeypatch.setattr(odes, "HELD", held)
        grads[held] = s2sad.grad(decay_outputs)(x, t_end, t_end / steps * (1 + 1e-9))
    assert [len(r) for r in lengths] == [steps, steps]
    assert lengths[1].first == {3: 0, 5: 0, 17: 12}[steps]   # (the first step kept)
    assert np.array_equal(grads[4], grads[ALL])
    assert np.allclose(grads[4], expected_decay(x, t_end), rtol=1e-8, atol=0)


def fit(p):
    times = np.linspace(0.5, 10.0, 40)
    sol = solve_ivp(lotka_volterra, (0.0, 10.0), Y0, args=(p[0], p[1], p[2], p[3]),
                    t_eval=times, rtol=1e-10, atol=1e-12)
    return np.sum(np.sin(times) * sol.y)


def test_a_long_solve_against_central_differences(monkeypatch):
    monkeypatch.setattr(odes, "HELD", 8)
    p = np.array(ARGS)
    got = s2sad.grad(fit)(p)
    assert np.allclose(got, central(fit, p, 1e-5), rtol=1e-6)
    monkeypatch.setattr(odes, "HELD", ALL)
    assert np.array_equal(got, s2sad.grad(fit)(p))


def decay_long(x):
    return decay_outputs(x, 0.2, 0.2 / 23)     # (23 steps)


def test_second_derivatives_across_segments(monkeypatch):
    """Forward over the adjoint of the steps: the system of the state and its sensitivity
    stepped again with checkpoints of its own, the same as with every step kept."""
    x, v = np.array([0.7, 1.3]), np.array([1.0, -0.5])
    hvps = {}
    for held in (ALL, 4):
        monkeypatch.setattr(odes, "HELD", held)
        hvps[held] = s2sad.hvp(decay_long)(x, v)
    assert np.array_equal(hvps[4], hvps[ALL])
    h = 1e-5
    want = (expected_decay(x + h * v, 0.2) - expected_decay(x - h * v, 0.2)) / (2 * h)
    assert np.allclose(hvps[4], want, rtol=1e-6)


def span_fit(t_end):
    times = np.linspace(t_end / 200, t_end, 200)

    def loss(p):
        sol = solve_ivp(lotka_volterra, (0.0, t_end), Y0, args=(p[0], p[1], p[2], p[3]),
                        t_eval=times, rtol=1e-6, atol=1e-9)
        return np.sum(sol.y ** 2)
    return loss


def test_memory_does_not_grow_with_the_number_of_steps(monkeypatch):
    """The peak memory of the gradient of a Lotka-Volterra fit whose span (and number of
    steps) grows 40 times: the stages of at most three segments, a checkpoint a segment
    and one float a step (every step kept, the peak grew 10 times)."""
    records = []
    recording = odes.recording
    monkeypatch.setattr(odes, "recording",
                        lambda method: records.append(recording(method)) or records[-1])
    peaks = []
    for t_end in (15.0, 600.0):
        grad = s2sad.grad(span_fit(t_end))
        grad(np.array(ARGS))           # (compiled first)
        gc.collect()
        tracemalloc.start()
        grad(np.array(ARGS))
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
        record = records[-1][1]
        assert len(record.kept) <= 2 * odes.HELD
    assert len(records[-1][1]) > 30 * len(records[0][1])
    assert peaks[1] < 2.5 * peaks[0]
