"""Checkpointed loops, `for i in s2sad.checkpointed(range(n), snapshots=k):`: the gradient
keeps at most k snapshots of the loop state and computes the other states again on the
binomial (revolve) schedule. Gradients are checked against central differences and
against the same loop without the checkpoint; the number of steps computed again is
counted by running the body, and the memory is measured (tracemalloc)."""
import functools
import itertools
import math
import tracemalloc

import numpy as np
import pytest

import s2sad
from numpy_cases import fd_array_grad, fd_array_grad_central
from s2sad.rules.schedules import Online, Revolve, online_steps, revolve_steps


def heat(u0, kappa, n, k):
    u = u0
    for i in s2sad.checkpointed(range(n), snapshots=k):
        lap = np.roll(u, 1) - 2.0 * u + np.roll(u, -1)
        u = u + kappa * np.tanh(lap)
    return np.sum(u * u)


def heat_plain(u0, kappa, n, k):
    u = u0
    for i in range(n):
        lap = np.roll(u, 1) - 2.0 * u + np.roll(u, -1)
        u = u + kappa * np.tanh(lap)
    return np.sum(u * u)


def branchy(x, c, n, k):
    # a branch, a nested loop, a number and an array carried, `continue`
    s = 0.0
    for i in s2sad.checkpointed(range(n), snapshots=k):
        if np.sum(x) > 0.0:
            x = np.sin(x) * c
        else:
            x = x * x + c
        for j in range(2):
            x = x + 0.1 * j * np.cos(x)
        s = s + np.sum(x) * c
        if i % 3 == 1:
            continue
        s = s * 0.9
    return s + np.sum(x ** 2)


def branchy_plain(x, c, n, k):
    s = 0.0
    for i in range(n):
        if np.sum(x) > 0.0:
            x = np.sin(x) * c
        else:
            x = x * x + c
        for j in range(2):
            x = x + 0.1 * j * np.cos(x)
        s = s + np.sum(x) * c
        if i % 3 == 1:
            continue
        s = s * 0.9
    return s + np.sum(x ** 2)


def trajectory(x0, c, n, k):
    # element writes into an array the loop carries
    x = np.zeros(n + 1)
    x[0] = np.sum(x0)
    for i in s2sad.checkpointed(range(n), snapshots=k):
        x[i + 1] = x[i] + 0.1 * np.sin(c * x[i])
    return np.sum(x * x)


def trajectory_plain(x0, c, n, k):
    x = np.zeros(n + 1)
    x[0] = np.sum(x0)
    for i in range(n):
        x[i + 1] = x[i] + 0.1 * np.sin(c * x[i])
    return np.sum(x * x)


def in_place(u0, c, n, k):
    # the state changed in place by the step (an argument: never changed by the gradient)
    u = u0
    for i in s2sad.checkpointed(range(1, 2 * n + 1, 2), snapshots=k):
        u[i % 3] = u[(i + 1) % 3] * c + np.sin(u[i % 3])
    return np.sum(u * u)


def in_place_plain(u0, c, n, k):
    u = u0.copy()
    for i in range(1, 2 * n + 1, 2):
        u[i % 3] = u[(i + 1) % 3] * c + np.sin(u[i % 3])
    return np.sum(u * u)



def outer(x, c):
    total = 0.0
    for e in range(3):
        u = x * (e + 1)
        for i in s2sad.checkpointed(range(6), snapshots=2):
            u = np.sin(u) * c + u
        total = total + np.sum(u)
    return total
def outer_plain(x, c):
    total = 0.0
    for e in range(3):
        u = x * (e + 1)
        for i in range(6):
            u = np.sin(u) * c + u
        total = total + np.sum(u)
    return total
def nested_fn(x, c):
    def f(v):
        return np.tanh(v * c)
    u = x
    for i in s2sad.checkpointed(range(7), snapshots=3):
        buf = np.zeros(3)
        buf[0] = np.sum(u)
        u = f(u) + buf[0] * 0.1
    return np.sum(u * u) + i
def nested_fn_plain(x, c):
    def f(v):
        return np.tanh(v * c)
    u = x
    for i in range(7):
        buf = np.zeros(3)
        buf[0] = np.sum(u)
        u = f(u) + buf[0] * 0.1
    return np.sum(u * u) + i


CASES = [(heat, heat_plain, 0.2), (branchy, branchy_plain, 0.7),
         (trajectory, trajectory_plain, 1.3), (in_place, in_place_plain, 0.4)]


@pytest.mark.parametrize("f, plain, c", CASES, ids=[f.__name__ for f, _, _ in CASES])
@pytest.mark.parametrize("n, k", [(1, 1), (7, 1), (9, 2), (13, 3), (10, 20)])
def test_gradients_match_the_plain_loop_and_finite_differences(f, plain, c, n, k):
    x = np.linspace(-0.6, 0.9, 5)
    args = (x, c, n, k)
    expected = [fd_array_grad(plain, args, i) for i in (0, 1)]
    got = s2sad.grad(f, wrt=(0, 1))(*args)
    unckeckpointed = s2sad.grad(plain, wrt=(0, 1))(x.copy(), c, n, k)
    for g, p, e in zip(got, unckeckpointed, expected):
        np.testing.assert_allclose(g, p, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-8)
    value, (gx, gc) = s2sad.value_and_grad(f, wrt=(0, 1))(*args)
    assert value == pytest.approx(plain(x.copy(), c, n, k), rel=1e-12)
    np.testing.assert_allclose(gx, expected[0], rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(x, np.linspace(-0.6, 0.9, 5))     # the argument is unchanged


@pytest.mark.parametrize("f, plain", [(outer, outer_plain), (nested_fn, nested_fn_plain)])
def test_inside_an_outer_loop_and_with_a_nested_function(f, plain):
    # a checkpointed loop run three times by an outer loop; a body that calls a nested
    # function, writes into an array of its own, and a loop index read after the loop
    x = np.linspace(-0.5, 0.7, 4)
    expected = [fd_array_grad(plain, (x, 0.6), i) for i in (0, 1)]
    for got in (s2sad.grad(f, wrt=(0, 1))(x, 0.6), s2sad.vjp(f, x, 0.6)[1](1.0)):
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("f, plain, c", CASES, ids=[f.__name__ for f, _, _ in CASES])
def test_a_pullback_called_twice_gives_the_same_adjoints(f, plain, c):
    x = np.linspace(-0.6, 0.9, 5)
    y, pullback = s2sad.vjp(f, x, c, n=11, k=3)
    assert y == pytest.approx(plain(x.copy(), c, 11, 3), rel=1e-12)
    first = pullback(1.0)
    second = pullback(2.0)
    expected = fd_array_grad(plain, (x, c, 11, 3), 0)
    np.testing.assert_allclose(first[0], expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(second[0], 2.0 * first[0], rtol=1e-12, atol=1e-12)
    assert second[1] == pytest.approx(2.0 * first[1], rel=1e-12)


def test_the_number_of_steps_is_known_at_run_time():
    g = s2sad.grad(heat, wrt=1)
    x = np.linspace(-0.6, 0.9, 5)
    for n in (0, 1, 5, 23):
        assert g(x, 0.2, n, 4) == pytest.approx(fd_array_grad(heat_plain, (x, 0.2, n, 4), 1),
                                                rel=1e-6, abs=1e-9)


# -- the schedule ---------------------------------------------------------------------
@functools.lru_cache(None)
def fewest_steps(n, k):
    """The fewest step evaluations that reverse n steps with k snapshots, by dynamic
    programming over where the next snapshot goes (independent of the closed form)."""
    if n <= 1:
        return 0
    if k == 1:
        return n * (n - 1) // 2
    return min(m + fewest_steps(m, k) + fewest_steps(n - m, k - 1) for m in range(1, n))


@pytest.mark.parametrize("n, k", [(n, k) for n in (1, 2, 5, 17, 40, 64) for k in (1, 2, 3, 5)])
def test_revolve_count_is_the_fewest(n, k):
    assert revolve_steps(n, k) == fewest_steps(n, k)


COUNT = [0]


def tick():
    COUNT[0] += 1


def counted(u0, kappa, n, k):
    u = u0
    for i in s2sad.checkpointed(range(n), snapshots=k):
        tick()
        u = u + kappa * np.sin(u)
    return np.sum(u)


@pytest.mark.parametrize("n, k", [(10, 1), (10, 2), (30, 3), (50, 4), (100, 5), (8, 10)])
def test_the_steps_computed_again_are_revolves_count(n, k):
    g = s2sad.grad(counted, wrt=(0, 1))
    u = np.linspace(0.0, 1.0, 4)
    g(u, 0.1, n, k)
    COUNT[0] = 0
    g(u, 0.1, n, k)
    # the forward sweep runs the n steps (its first n - 1 are revolve's first advance,
    # the last gives the loop's result), the reverse sweep what else revolve advances,
    # and each step once more taped
    assert COUNT[0] == revolve_steps(n, k) + 1 + n
    assert COUNT[0] - 2 * n == revolve_steps(n, k) - (n - 1)


def sweep_back(schedule, n, most):
    """Run `schedule`'s reverse sweep over states that count the steps (the state after
    step i is i + 1); check that it reverses each step once, from the last, from the
    right state; the most snapshots kept at once (from `most` on)."""
    states = []
    for step, start in schedule.reverse_sweep():
        state = schedule.restore(start)
        for i in schedule.advance(start, step):
            if schedule.snapshot_before(i):
                schedule.save(i, state)
            state += 1
            most = max(most, len(schedule.kept))
        assert state == step
        states.append(step)
    assert states == list(range(n - 1, -1, -1))
    return most


@pytest.mark.parametrize("n, k", [(30, 3), (64, 5), (200, 8)])
def test_the_schedule_keeps_at_most_k_snapshots(n, k):
    schedule = Revolve(range(n), k)
    most = 0
    for i in range(n):
        if schedule.snapshot_before(i):
            schedule.save(i, i)
    assert sweep_back(schedule, n, most) <= k
    assert schedule.recomputed == revolve_steps(n, k) - (n - 1)


# -- memory ---------------------------------------------------------------------------
def simulate(u0, kappa, n, k):
    u = u0
    for i in s2sad.checkpointed(range(n), snapshots=k):
        lap = np.roll(u, 1) - 2.0 * u + np.roll(u, -1)
        u = u + kappa * lap
    return np.sum(u * u)


def peak_states(f, n, k):
    """The peak memory of the gradient of `f(u0, kappa, n, k)`, in states of 10^5 floats."""
    u0 = np.random.default_rng(0).standard_normal(10 ** 5)
    g = s2sad.grad(f, wrt=(0, 1))
    g(u0, 0.1, n, k)
    tracemalloc.start()
    g(u0, 0.1, n, k)
    states = tracemalloc.get_traced_memory()[1] / u0.nbytes
    tracemalloc.stop()
    return states


def test_memory_is_k_states_and_a_few_more():
    for n, k in ((60, 5), (120, 10)):
        # k + 4 arrays, and a few kB of other objects (the schedule, frames)
        states = peak_states(simulate, n, k)
        assert states < k + 4.5, (n, k, states)


def simulate_plain(u0, kappa, n, k):
    u = u0
    for i in range(n):
        lap = np.roll(u, 1) - 2.0 * u + np.roll(u, -1)
        u = u + kappa * lap
    return np.sum(u * u)


def test_the_heat_loop_keeps_at_most_k_plus_4_states():
    # #21's goal, as bench/ measures heat_checkpointed (there 2,000 steps): the step's
    # adjoint and the step the sweeps run are specialised on the state's shape pattern,
    # so their temporaries are computed into dead ones and the adjoint is summed into
    # its seed in place
    n, k = 400, 20
    states = peak_states(simulate, n, k)
    assert states <= k + 4, states
    u0 = np.random.default_rng(1).standard_normal(1000)
    du0, dkappa = s2sad.grad(simulate, wrt=(0, 1))(u0, 0.1, n, k)
    plain = s2sad.grad(simulate_plain, wrt=(0, 1))(u0, 0.1, n, k)
    np.testing.assert_allclose(du0, plain[0], rtol=1e-12, atol=1e-12 * np.max(np.abs(du0)))
    assert dkappa == pytest.approx(plain[1], rel=1e-12)
    small = (u0[:6], 0.1, 7, 3)      # (and the plain gradient against differences)
    np.testing.assert_allclose(s2sad.grad(simulate)(*small),
                               fd_array_grad_central(simulate_plain, small, 0), rtol=1e-6)


def flattening(u0, kappa, n, k):
    # the state is a vector before the first step and a 1 x m matrix after it: the
    # step's adjoint and the step specialised on the vector's pattern are not those of
    # the later steps, whose guards call the versions for any shapes
    u = u0
    for i in s2sad.checkpointed(range(n), snapshots=k):
        u = (u * kappa + np.sin(u)).reshape(1, -1)
    return np.sum(u * u)


def flattening_plain(u0, kappa, n, k):
    u = u0
    for i in range(n):
        u = (u * kappa + np.sin(u)).reshape(1, -1)
    return np.sum(u * u)


def test_a_state_of_another_pattern_takes_the_versions_for_any_shapes():
    args = (np.linspace(-0.5, 0.8, 6), 0.3, 7, 3)
    du0, dkappa = s2sad.grad(flattening, wrt=(0, 1))(*args)
    assert du0.shape == (6,)
    fd = fd_array_grad_central(flattening_plain, args, 0)
    np.testing.assert_allclose(du0, fd, rtol=1e-6, atol=1e-6 * np.max(np.abs(fd)))
    assert dkappa == pytest.approx(float(fd_array_grad_central(flattening_plain, args, 1)),
                                   rel=1e-6)


# -- other modes and errors -----------------------------------------------------------
def test_forward_mode_runs_the_loop_as_it_is():
    x = np.linspace(-0.6, 0.9, 5)
    args = (x, 0.7, 9, 2)
    y, tangent = s2sad.jvp(branchy, args, (np.zeros(5), 1.0, 0, 0))
    assert y == pytest.approx(branchy_plain(*args), rel=1e-12)
    assert tangent == pytest.approx(float(fd_array_grad(branchy_plain, args, 1)), rel=1e-6)
    assert "Revolve" not in s2sad.source(branchy, mode="forward", wrt=1)


def scalar_loop(x, n):
    for i in s2sad.checkpointed(range(n), snapshots=2):
        x = math.sin(x) + 0.5 * x
    return x * x


def test_second_derivatives_run_the_loop_without_checkpoints():
    h = 1e-5
    dd = s2sad.hessian(scalar_loop)(0.3, 6)
    g = s2sad.grad(scalar_loop)
    assert dd == pytest.approx((g(0.3 + h, 6) - g(0.3 - h, 6)) / (2 * h), rel=1e-6)


def test_trace_and_jacrev():
    g = s2sad.grad(scalar_loop)(0.3, 6)
    assert s2sad.jacrev(scalar_loop)(0.3, 6) == pytest.approx(g, rel=1e-12)
    table = str(s2sad.trace(scalar_loop, 0.3, 6))
    assert f"{g:.6g}"[:6] in table


def test_the_loop_runs_as_its_range_without_s2sad():
    assert s2sad.checkpointed(range(3), snapshots=2) == range(3)
    with pytest.raises(s2sad.S2SADError, match="snapshots is an int of at least 1"):
        s2sad.checkpointed(range(3), snapshots=0)
    with pytest.raises(s2sad.S2SADError, match="takes a range of steps or itertools.count"):
        s2sad.checkpointed([1, 2], snapshots=2)


def endless(x, k):
    for i in s2sad.checkpointed(itertools.count(), snapshots=k):
        x = x * 0.5
    return x


def test_a_loop_over_count_without_break_is_refused():
    for mode in (s2sad.grad, s2sad.jacfwd):
        with pytest.raises(s2sad.UnsupportedSyntaxError, match="needs a `break` in its body") \
                as info:
            mode(endless)(1.0, 2)
        assert "test_checkpointed.py" in str(info.value)
    with pytest.raises(s2sad.S2SADError, match="needs a `break` in its body"):
        Revolve(itertools.count(), 2)


def returns(x, n):
    for i in s2sad.checkpointed(range(n), snapshots=2):
        x = x * 0.5
        if x < 0.1:
            return x
    return x


def unbound(x, n):
    for i in s2sad.checkpointed(range(n), snapshots=2):
        last = x * 0.5
        x = last + 1.0
    return last


@pytest.mark.parametrize("f, message", [
    (returns, r"`return` in a checkpointed loop is not supported"),
    (unbound, r"'last' is carried by the checkpointed loop .* but has no value before "
              r"the loop")])
def test_what_a_checkpointed_loop_cannot_do_is_a_clear_error(f, message):
    with pytest.raises(s2sad.UnsupportedSyntaxError, match=message) as info:
        s2sad.grad(f)(1.0, 5)
    assert "test_checkpointed.py" in str(info.value)


def test_the_generated_code_shows_the_schedule():
    g = s2sad.grad(heat, wrt=(0, 1))
    g(np.linspace(0.0, 1.0, 5), 0.1, 5, 2)
    text = g.source
    assert "the snapshots of u of the checkpointed loop at line" in text
    for line in ["_s2s_schedule = _s2s_Revolve(t, k)",
                 "if _s2s_schedule.snapshot_before(i):",
                 "for _s2s_step, _s2s_start in _s2s_schedule.reverse_sweep():",
                 "= _s2s_schedule.restore(_s2s_start)",
                 "in _s2s_schedule.advance(_s2s_start, _s2s_step):",
                 "u_bar, kappa_bar = heat_step_adjoint(u_bar, _s2s_step, u, kappa)"]:
        assert line in text, line
    assert "Revolve" not in s2sad.grad(heat_plain, wrt=(0, 1)).primal.__name__


# -- loops that stop at a `break`: the online schedule ----------------------------------
def relax(x, c, tol, k):
    # the form of `while s <= tol:`, with a branch in the body
    s = 0.0
    for i in s2sad.checkpointed(itertools.count(), snapshots=k):
        if s > tol:
            break
        if np.sum(x) > 1.0:
            x = np.sin(x) * c + 0.5 * x
        else:
            x = x * c + 0.3
        s = s + np.sum(x * x)
    return s + np.sum(x)


def relax_plain(x, c, tol, k):
    s = 0.0
    while s <= tol:
        if np.sum(x) > 1.0:
            x = np.sin(x) * c + 0.5 * x
        else:
            x = x * c + 0.3
        s = s + np.sum(x * x)
    return s + np.sum(x)


def climb(x0, c, tol, k):
    # element writes into an array the loop carries; it stops after writing
    x = np.zeros(80)
    x[0] = np.sum(x0)
    for i in s2sad.checkpointed(range(79), snapshots=k):
        x[i + 1] = x[i] + 0.1 * np.sin(c * x[i]) + 0.05
        if x[i + 1] > tol:
            break
    return np.sum(x * x)


def climb_plain(x0, c, tol, k):
    x = np.zeros(80)
    x[0] = np.sum(x0)
    i = 0
    while i < 79:
        x[i + 1] = x[i] + 0.1 * np.sin(c * x[i]) + 0.05
        i = i + 1
        if x[i] > tol:
            break
    return np.sum(x * x)


def _threshold(values, m):
    """A tolerance between the m-th and (m+1)-th of the increasing `values`, so that
    the loop stops after exactly m of them (far from both, for finite differences)."""
    values = [-np.inf] + list(values)
    return -1.0 if m == 0 else 0.5 * (values[m] + values[m + 1])


def _relax_sums(x, c, m):
    s, out = 0.0, []
    for _ in range(m + 1):
        x = np.sin(x) * c + 0.5 * x if np.sum(x) > 1.0 else x * c + 0.3
        s = s + np.sum(x * x)
        out.append(s)
    return out


def _climb_values(x0, c, m):
    v, out = float(np.sum(x0)), []
    for _ in range(m + 1):
        v = v + 0.1 * np.sin(c * v) + 0.05
        out.append(v)
    return out


ONLINE = [(relax, relax_plain, _relax_sums, 0.6), (climb, climb_plain, _climb_values, 1.3)]


@pytest.mark.parametrize("f, plain, values, c", ONLINE, ids=["relax", "climb"])
@pytest.mark.parametrize("m, k", [(0, 3), (1, 3), (3, 3), (4, 3), (40, 3), (5, 1), (30, 2),
                                  (2, 20)])
def test_a_loop_that_stops_at_a_break_matches_the_plain_while_loop(f, plain, values, c, m, k):
    # m steps that change the state before the stop: none, 1, k, k + 1, many
    x = np.linspace(0.1, 0.5, 4)
    tol = _threshold(values(x, c, m), m)
    args = (x, c, tol, k)
    assert f(*args) == plain(*args)
    expected = [fd_array_grad_central(plain, args, i) for i in (0, 1)]
    got = s2sad.grad(f, wrt=(0, 1))(*args)
    unckeckpointed = s2sad.grad(plain, wrt=(0, 1))(*args)
    for g, p, e in zip(got, unckeckpointed, expected):
        np.testing.assert_allclose(g, p, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-7)
    y, pullback = s2sad.vjp(f, *args)
    assert y == pytest.approx(plain(*args), rel=1e-12)
    first, second = pullback(1.0), pullback(2.0)     # the second on the offline schedule
    np.testing.assert_allclose(first[0], expected[0], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(second[0], 2.0 * first[0], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(x, np.linspace(0.1, 0.5, 4))     # the argument is unchanged


def stops(u0, kappa, m, k):
    u = u0
    for i in s2sad.checkpointed(itertools.count(), snapshots=k):
        tick()
        u = u + kappa * np.sin(u)
        if i + 1 == m:
            break
    return np.sum(u)


@pytest.mark.parametrize("n, k", [(1, 2), (2, 2), (10, 1), (10, 2), (30, 3), (50, 4),
                                  (100, 5), (8, 10), (200, 8)])
def test_the_steps_computed_again_are_the_online_schedules_count(n, k):
    g = s2sad.grad(stops, wrt=(0, 1))
    u = np.linspace(0.0, 1.0, 4)
    g(u, 0.1, n, k)
    COUNT[0] = 0
    g(u, 0.1, n, k)
    # the forward sweep runs the n steps, the reverse sweep what the schedule computes
    # again, and each step once more taped
    assert COUNT[0] == 2 * n + online_steps(n, k)


def _online_by_search(n, k):
    """online_steps(n, k) found independently: the snapshots the forward sweep holds
    (simulated), then every choice of the ones the reverse sweep starts parts from."""
    if n <= 1:
        return 0
    held, d = [0], 1
    for p in range(1, n):
        if p % d == 0 and len(held) == k and k > 1:
            d *= 2
            held = held[::2]
        if p % d == 0 and len(held) < k:
            held.append(p)
    held = [p for p in held if p < n - 1]
    best = None
    for mask in range(2 ** (len(held) - 1)):
        used = [0] + [j for j in range(1, len(held)) if mask >> (j - 1) & 1]
        parts = zip(used, used[1:] + [None])
        cost = sum(fewest_steps((held[b] if b else n - 1) - held[a], k - a) for a, b in parts)
        best = cost if best is None else min(best, cost)
    return best


@pytest.mark.parametrize("k", [1, 2, 3, 4, 6])
def test_the_online_count_is_between_revolves_and_one_more_forward_sweep(k):
    for n in list(range(0, 40)) + [57, 64, 65, 100, 129]:
        count = online_steps(n, k)
        if n < 70:
            assert count == _online_by_search(n, k), (n, k)
        assert revolve_steps(n, k) - max(n - 1, 0) <= count <= revolve_steps(max(n - 1, 0), k)


@pytest.mark.parametrize("n, k", [(1, 1), (5, 1), (30, 3), (64, 5), (200, 8), (1000, 4)])
def test_the_online_schedule_keeps_at_most_k_snapshots(n, k):
    schedule = Online(itertools.count(), k)
    most = 0
    state = 0
    for i in itertools.count():
        if schedule.snapshot_before(i):
            schedule.save(i, state)
        most = max(most, len(schedule.kept))
        state += 1
        if i + 1 == n:
            break
    # (the state before the last step besides the snapshots, as revolve's current)
    assert sweep_back(schedule, n, most) <= k
    assert schedule.recomputed == online_steps(n, k)


def simulate_until(u0, kappa, m, k):
    u = u0
    for i in s2sad.checkpointed(itertools.count(), snapshots=k):
        lap = np.roll(u, 1) - 2.0 * u + np.roll(u, -1)
        u = u + kappa * lap
        if i + 1 >= m:
            break
    return np.sum(u * u)


def test_memory_of_the_online_schedule_is_k_states_and_a_few_more():
    for n, k in ((60, 5), (120, 10)):
        # k snapshots, the state before the step running, and what one step holds
        states = peak_states(simulate_until, n, k)
        assert states < k + 4.5, (n, k, states)


def test_the_generated_code_shows_the_online_schedule():
    g = s2sad.grad(relax, wrt=(0, 1))
    g(np.linspace(0.1, 0.5, 4), 0.6, 5.0, 3)
    text = g.source
    for line in ["_s2s_schedule = _s2s_Online(t, k)",
                 "if _s2s_schedule.snapshot_before(i):",
                 "t_1 = relax_step(i, ",
                 "for _s2s_step, _s2s_start in _s2s_schedule.reverse_sweep():",
                 "in _s2s_schedule.advance(_s2s_start, _s2s_step):"]:
        assert line in text, line
    assert "break" not in text.split("reverse_sweep")[1]


def test_the_adjoint_of_a_step_that_stops_takes_the_states_adjoint():
    # not the adjoint of the pair (state, stop) the step returns: no stand-in of the pair
    # in the sweep, no unpacking of it (under `# grad of: break`) in the step's adjoint
    args = (np.sin(np.linspace(0.0, 3.0, 8)), 0.1, 6, 3)
    g = s2sad.grad(simulate_until, wrt=(0, 1))
    du0, dkappa = g(*args)
    sweep = g.source.split("reverse_sweep")[1]
    assert "simulate_until_step_adjoint(u_bar, _s2s_step, u, " in sweep
    assert "False)" not in sweep and "_s2s_unindex" not in sweep
    step = s2sad.source(simulate_until, wrt=(0, 1)).split("def simulate_until_step_adjoint")[1]
    assert "grad of: break" not in step and "[0]" not in step
    fd = fd_array_grad_central(simulate_until, args, 0)
    np.testing.assert_allclose(du0, fd, rtol=1e-6, atol=1e-8 * np.max(np.abs(fd)))
    assert dkappa == pytest.approx(float(fd_array_grad_central(simulate_until, args, 1)),
                                   rel=1e-6)


def halve_until(x, tol, k):
    for i in s2sad.checkpointed(itertools.count(), snapshots=k):
        x = math.sin(x) * 0.5 + 0.1 * x
        if abs(x) < tol:
            break
    return x * x


def test_a_loop_that_stops_in_other_modes():
    # forward mode and second derivatives run the loop as it is, with its break
    x, h = 1.3, 1e-5
    d = s2sad.grad(halve_until)
    assert s2sad.jvp(halve_until, (x, 0.01, 3), (1.0, 0.0, 0))[1] == pytest.approx(
        d(x, 0.01, 3), rel=1e-10)
    assert s2sad.hessian(halve_until)(x, 0.01, 3) == pytest.approx(
        (d(x + h, 0.01, 3) - d(x - h, 0.01, 3)) / (2 * h), rel=1e-6)
    assert s2sad.jacrev(halve_until)(x, 0.01, 3) == pytest.approx(d(x, 0.01, 3), rel=1e-12)
    assert d(x, 0.01, 3) == pytest.approx(fd_array_grad_central(halve_until, (x, 0.01, 3), 0),
                                          rel=1e-6)
    assert f"{d(x, 0.01, 3):.6g}"[:6] in str(s2sad.trace(halve_until, x, 0.01, 3))


def capped(x, c, tol):
    # at most 8 steps; the else clause runs when the loop did not stop at its break
    s = 0.0
    for i in s2sad.checkpointed(range(8), snapshots=2):
        x = np.sin(x) * c + x
        s = s + np.sum(x)
        if s > tol:
            break
    else:
        s = s * 2.0
    return s * np.sum(x)


@pytest.mark.parametrize("tol", [3.0, 1e9], ids=["stops", "runs out"])
def test_a_capped_loop_with_an_else_clause(tol):
    x = np.linspace(0.1, 0.5, 3)
    args = (x, 0.5, tol)
    for g, e in zip(s2sad.grad(capped, wrt=(0, 1))(*args),
                    [fd_array_grad_central(capped, args, i) for i in (0, 1)]):
        np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-8)


# -- a memory budget picks the number of snapshots ----------------------------------------
@pytest.mark.parametrize("f", [simulate, simulate_until])
def test_a_memory_budget_bounds_the_snapshots(f):
    # the loops say 50 snapshots; the budget allows `states` of them
    u0 = np.random.default_rng(0).standard_normal(10 ** 5)
    plain = s2sad.grad(f, wrt=(0, 1))(u0, 0.1, 60, 50)
    for states in (3, 8):
        g = s2sad.grad(f, wrt=(0, 1), memory=states * u0.nbytes + 100)
        got = g(u0, 0.1, 60, 50)
        np.testing.assert_allclose(got[0], plain[0], rtol=1e-12, atol=1e-12)
        assert got[1] == pytest.approx(plain[1], rel=1e-12)
        tracemalloc.start()
        g(u0, 0.1, 60, 50)
        peak = tracemalloc.get_traced_memory()[1] / u0.nbytes
        tracemalloc.stop()
        assert peak < states + 4.5, (states, peak)


@pytest.mark.parametrize("f, count", [
    (counted, lambda n, k: revolve_steps(n, k) + 1 + n),
    (stops, lambda n, k: 2 * n + online_steps(n, k))], ids=["revolve", "online"])
def test_the_budget_picks_k_from_the_size_of_the_state(f, count):
    u = np.linspace(0.0, 1.0, 4)            # 32 bytes a state
    for budget, k in ((32, 1), (100, 3), (5 * 32, 5)):
        g = s2sad.value_and_grad(f, wrt=(0, 1), memory=budget)
        g(u, 0.1, 30, 20)
        COUNT[0] = 0
        g(u, 0.1, 30, 20)
        assert COUNT[0] == count(30, k), (budget, k)


def test_the_budget_is_shown_and_checked():
    g = s2sad.grad(simulate, wrt=(0, 1), memory=10 ** 6)
    g(np.ones(5), 0.1, 4, 2)
    assert "_s2s_schedule = _s2s_Revolve(t, k, memory=1000000)" in g.source
    for bad in (0, -1.0, "1GB", True):
        with pytest.raises(s2sad.S2SADError, match="a positive number of bytes"):
            s2sad.grad(simulate, memory=bad)
    with pytest.raises(s2sad.S2SADError, match="numba backend does not keep"):
        s2sad.grad(simulate, memory=10 ** 6, backend="numba")
