"""Buffers inside loop bodies (#21): the release passes compute elementwise results into
dead buffers, sum adjoints in place and delete dead arrays inside loops too. A buffer the
tape, the next iteration or the code after the loop still reads must never be written:
each gradient here is checked against central differences, for loops where the reuse
applies and where it must not (taped values, carried values, views, aliases)."""
import math

import numpy as np
import pytest

import s2sad


def central_difference(f, point, i, h=1e-6):
    x = np.asarray(point[i], dtype=float)
    out = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        step = h * max(1.0, abs(float(x[idx])))
        hi, lo = x.copy(), x.copy()
        hi[idx] += step
        lo[idx] -= step
        args_hi, args_lo = list(point), list(point)
        args_hi[i] = hi if x.shape else float(hi)
        args_lo[i] = lo if x.shape else float(lo)
        out[idx] = (f(*args_hi) - f(*args_lo)) / (2 * step)
    return out


def check(f, point, wrt):
    before = [np.copy(a) for a in point]
    grad = s2sad.grad(f, wrt=wrt)
    got = grad(*point)
    got = got if isinstance(wrt, tuple) else (got,)
    for i, g in zip(wrt if isinstance(wrt, tuple) else (wrt,), got):
        expected = central_difference(f, point, i)
        np.testing.assert_allclose(np.asarray(g, dtype=float), expected, rtol=1e-6,
                                   atol=1e-8 + 1e-7 * np.max(np.abs(expected), initial=0.0))
    for a, b in zip(point, before):       # the arguments are never written
        np.testing.assert_array_equal(a, b)
    return grad.source


# -- where the reuse applies --------------------------------------------------------------
def heat(u0, kappa, steps):
    u = u0
    for i in range(steps):
        lap = np.roll(u, 1) - 2.0 * u + np.roll(u, -1)
        u = u + kappa * lap
    return np.sum(u * u)


def test_heat_computes_in_buffers_and_sums_its_adjoint_in_place():
    rng = np.random.default_rng(0)
    source = check(heat, (rng.normal(size=7), 0.2, 4), (0, 1))
    forward, backward = source.split("reversed(")
    assert "out=t" in forward and "del t" in forward      # dead temporaries reused, freed
    assert "u_bar += " in backward and "u_bar -= " in backward
    assert "np.vdot(u_bar, lap_1)" in backward             # kappa's adjoint: no product array
    assert "_s2s_unbroadcast" not in backward


def test_heat_of_matrices():
    rng = np.random.default_rng(1)
    check(heat, (rng.normal(size=(3, 4)), 0.1, 3), (0, 1))


def test_heat_that_runs_no_step():
    rng = np.random.default_rng(2)
    u0 = rng.normal(size=5)
    g = s2sad.grad(heat, wrt=(0, 1))
    g(u0, 0.2, 3)
    u_bar, kappa_bar = g(u0, 0.2, 0)
    np.testing.assert_allclose(u_bar, 2 * u0)
    assert kappa_bar == 0.0


def jacobi(b, d, omega, tol):
    x = np.zeros_like(b)
    err = math.inf
    while err > tol:
        y = (b - 0.1 * np.roll(x, 1)) / d
        dx = omega * (y - x)
        x = x + dx
        err = np.max(np.abs(dx))
    return np.sum(x * x)


def test_while_loop_with_a_data_dependent_stop():
    rng = np.random.default_rng(3)
    check(jacobi, (rng.normal(size=6), rng.uniform(2, 3, 6), 0.8, 1e-12), (0, 1))


# -- where it must not --------------------------------------------------------------------
def tanh_loop(u0, w):
    # the tape holds each u (tanh's adjoint reads its output): the next step's `u * w`
    # must not be computed into it
    u = u0 * 1.0
    for i in range(4):
        u = np.tanh(u * w + 0.1)
    return np.sum(u * u)


def test_taped_state_is_not_overwritten():
    rng = np.random.default_rng(4)
    source = check(tanh_loop, (rng.normal(size=5), 0.9), (0, 1))
    assert "out=u)" not in source


def exp_loop(x, w):
    # `a` is taped (exp's adjoint reads it); `b` could be computed in its buffer
    s = 0.0
    for i in range(3):
        a = np.exp(x * w)
        b = a * 2.0 + 1.0
        s = s + np.sum(b * b)
        x = x + 0.1 * a
    return s


def test_taped_temporary_is_not_overwritten():
    rng = np.random.default_rng(5)
    check(exp_loop, (0.3 * rng.normal(size=5), 0.7), (0, 1))


def carried_alias(u0):
    # v holds the previous state: that buffer is read by the next iteration through v
    u = u0 * 1.0
    v = u0 * 0.5
    for i in range(4):
        t = u * 0.5 + v
        v = u
        u = np.sin(t)
    return np.sum(u * v)


def test_carried_aliases():
    rng = np.random.default_rng(6)
    check(carried_alias, (rng.normal(size=5),), 0)


def swap(u0, v0):
    u = u0 * 1.0
    v = v0 * 1.0
    for i in range(5):
        u, v = v, u * 0.5 + v * v
    return np.sum(u * v)


def test_carried_values_swapped():
    rng = np.random.default_rng(7)
    check(swap, (0.5 * rng.normal(size=4), 0.5 * rng.normal(size=4)), (0, 1))


def view_loop(u0):
    # r is a view of the state; the new state must not be computed into the old one
    u = u0 * 1.0
    for i in range(4):
        r = u[::-1]
        u = u * 0.5 + 1.0
        u = u + r * r
    return np.sum(u)


def test_views_of_the_carried_state():
    rng = np.random.default_rng(8)
    check(view_loop, (0.3 * rng.normal(size=6),), 0)


def argument_state(u, c):
    # the state starts as the argument: the first step must not write into it
    for i in range(3):
        u = u * c + np.roll(u, 1)
    return np.sum(u * u)


def test_the_argument_is_not_written():
    rng = np.random.default_rng(9)
    check(argument_state, (rng.normal(size=5), 0.6), (0, 1))


def read_after(u0):
    # the last step's temporary is read after the loop
    u = u0 * 1.0
    t = u0 * 0.0
    for i in range(3):
        t = u * 2.0
        u = np.cos(t) + u
    return np.sum(u * t)


def test_temporary_read_after_the_loop():
    rng = np.random.default_rng(10)
    check(read_after, (rng.normal(size=5),), 0)


@pytest.mark.parametrize("n", [1, 2, 5])
def test_sum_into_a_list_of_states(n):
    def states(u0, k):
        u = u0
        total = 0.0
        for i in range(k):
            w = u * 1.5
            u = np.sin(w) + w
            total = total + np.sum(w * u)
        return total
    rng = np.random.default_rng(11)
    check(states, (rng.normal(size=4), n), 0)


# -- random loop bodies -------------------------------------------------------------------
_UNARY = ["np.sin({})", "np.tanh({})", "np.exp(0.3 * {})", "{} * 0.7", "np.roll({}, 1)",
          "{}[::-1]", "-{}", "np.cos({}) * 0.5"]
_BINARY = ["{} + {}", "{} * {}", "{} - 0.5 * {}"]


def _program(rng, steps):
    """A function of two arrays whose loop body is random straight-line code over two
    carried states (`u`, `v`) and temporaries, some of them views or aliases."""
    names, body = ["u", "v"], []
    for k in range(int(rng.integers(3, 7))):
        if rng.random() < 0.5:
            e = _UNARY[rng.integers(len(_UNARY))].format(rng.choice(names))
        else:
            e = _BINARY[rng.integers(len(_BINARY))].format(*rng.choice(names, 2))
        target = rng.choice(["u", "v", f"t{k}", f"t{k}"])
        if rng.random() < 0.15:
            e = rng.choice(names)                       # an alias
        body.append(f"        {target} = {e}")
        if target not in names:
            names.append(target)
    lines = ["def f(u0, v0):", "    u = u0 * 1.0", "    v = v0 + 0.0",
             f"    for i in range({steps}):", *body, "    return np.sum(u * v)"]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("seed", range(24))
def test_random_loop_bodies(seed, tmp_path, monkeypatch):
    rng = np.random.default_rng(100 + seed)
    source = "import numpy as np\n\n\n" + _program(rng, int(rng.integers(1, 4)))
    (tmp_path / f"loop_body_{seed}.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    module = __import__(f"loop_body_{seed}")
    point = (0.5 * rng.normal(size=5), 0.5 * rng.normal(size=5))
    check(module.f, point, (0, 1))
