"""What a loop's tape holds (ad/tapes.py, `rematerialized`): an array the reversed loop
can compute again from values it keeps anyway, by cheap operations (views, `+ - * /`,
`np.sum`), is not taped when that keeps fewer elements; the value a carried name ends an
iteration with is not taped beside the iteration's start value (the reversed loop takes
it from the iteration after). Each case is checked against central differences, in
`grad` (fused) and `vjp` (a closure), and the header says what is taped."""
import re
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import s2sad
from numpy_cases import fd_array_grad

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
import workloads as wl  # noqa: E402


def taped(source):
    """[(real values, stand-ins)] per loop, from the header of generated source."""
    header = " ".join(line.strip().lstrip("#").strip() for line in source.splitlines()
                      if line.strip().startswith("#"))
    header = header[header.index("the pullback reads"):]
    out = []
    for part in re.findall(r"([\w, ]+?) of each iteration of the loop", header):
        part = part.strip()
        if part.startswith("the shapes of "):
            real, shapes = "", part[len("the shapes of "):]
        else:
            real, _, shapes = part.partition(" and the shapes of ")
        out.append(([n.strip() for n in real.split(",") if n.strip()],
                    [n.strip() for n in shapes.split(",") if n.strip()]))
    return out


# -- the functions ----------------------------------------------------------------------
def pairs(x, v, m, dt, steps):
    """nbody's step: pair differences by broadcasting."""
    for i in range(steps):
        d = x[:, None, :] - x[None, :, :]
        r2 = np.sum(d * d, axis=2) + 0.1
        w = r2 ** -1.5
        a = -np.sum(d * (m[None, :, None] * w[:, :, None]), axis=1)
        v = v + dt * a
        x = x + dt * v
    return np.sum(x * x) + np.sum(v * v)


def glide(v0, dt):
    """`v_1`, the next iteration's `v`, is read by the adjoint of `dt`."""
    v = v0
    x = 0.0
    for i in range(40):
        v = v - dt * 0.3 * v * v
        x = x + dt * v
    return x


def glide_for(v0, dt, n):
    """`glide` for `n` steps (none: the carried value is the value before the loop)."""
    v = v0
    x = 0.0
    for i in range(n):
        v = v - dt * 0.3 * v * v
        x = x + dt * v
    return x + v


def recurrent(W, x, h):
    """A view of an input by the counter (`x[t]`), and the state before and after."""
    for t in range(x.shape[0]):
        h = np.tanh(W @ h + x[t])
    return np.sum(h * h)


def stopped(v0, dt):
    """A `break`: the reversed loop does not carry values then."""
    v = v0
    x = 0.0
    for i in range(40):
        v = v - dt * 0.3 * v * v
        x = x + dt * v
        if x > 0.5:
            break
    return x


def nested(x, c):
    """An inner loop's carried array, and views of the outer state."""
    for i in range(3):
        y = x[1:] * x[:-1]
        for j in range(2):
            y = y * c + y[::-1]
        x = x + 0.1 * np.sum(y)
    return np.sum(x * x)


def shrinking(x, c):
    """A `while` loop whose state is an array."""
    k = 0
    while k < 5:
        d = x[:, None] - x[None, :]
        x = x - c * np.sum(d * d, axis=1)
        k = k + 1
    return np.sum(x * x)


RNG = np.random.default_rng(3)
X3 = RNG.uniform(-0.5, 0.5, (4, 3))
V3 = 0.1 * RNG.standard_normal((4, 3))
M = RNG.uniform(0.5, 1.5, 4)
W = 0.3 * RNG.standard_normal((3, 3))
XS = RNG.standard_normal((5, 3, 2))
H0 = RNG.standard_normal((3, 2))
Y = RNG.standard_normal(5)


def check(f, args, wrt):
    """grad and vjp of `f` against central differences."""
    want = [fd_array_grad(f, args, i) for i in wrt]
    got = s2sad.grad(f, wrt=wrt)(*args)
    with warnings.catch_warnings():     # (the counts of steps are not differentiable)
        warnings.simplefilter("ignore", s2sad.UnconnectedInputWarning)
        _, pullback = s2sad.vjp(f, *args)
    adjoints = pullback(1.0)
    for i, w, g in zip(wrt, want, got):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(adjoints[i], w, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("f, args, wrt", [
    (pairs, (X3, V3, M, 0.05, 3), (0, 1)),
    (pairs, (X3, V3, M, 0.05, 0), (0, 1)),
    (glide, (2.0, 0.1), (0, 1)),
    (glide, (2.0, 0.0), (0, 1)),
    (glide_for, (2.0, 0.1, 0), (0, 1)),
    (glide_for, (2.0, 0.1, 3), (0, 1)),
    (recurrent, (W, XS, H0), (0, 1, 2)),
    (stopped, (2.0, 0.1), (0, 1)),
    (stopped, (0.5, 0.01), (0, 1)),
    (nested, (Y, 0.7), (0, 1)),
    (shrinking, (Y, 0.01), (0, 1)),
], ids=["pairs", "pairs-no-steps", "glide", "glide-dt-0", "glide-no-steps",
        "glide-3-steps", "recurrent", "stopped",
        "stopped-never", "nested", "shrinking"])
def test_gradients_match_central_differences(f, args, wrt):
    check(f, args, wrt)


def test_pair_differences_are_computed_again_from_the_positions():
    g = s2sad.grad(pairs, wrt=(0, 1))
    g(X3, V3, M, 0.05, 3)
    [(real, shapes)] = taped(g.source)
    # the hand gradient keeps x and w; d (n x n x 3) and r2 are computed again from x,
    # and w is kept as m * w (n x n, as w)
    assert "x" in real and len(real) == 2
    assert not {"d", "r2"} & set(real + shapes)
    assert re.search(r"\n        d(_\d+)? = t - t_1\n", g.source.split("reversed(_s2s_tape)")[1])


def test_the_nbody_workload_tapes_two_arrays():
    g = s2sad.grad(wl.nbody, wrt=(0, 1))
    g(*wl.nbody_args(6, 2))
    [(real, _)] = taped(g.source)
    assert len(real) == 2 and "x" in real


def test_an_end_value_is_carried_not_taped():
    g = s2sad.grad(glide, wrt=(0, 1))
    g(2.0, 0.1)
    [(real, _)] = taped(g.source)
    assert real == ["v"]
    backward = g.source.split("reversed(_s2s_tape)")[1]
    assert re.search(r"\n        v_1 = v_\d+\n", backward)      # the next iteration's v


def test_projectile_tapes():
    g = s2sad.grad(wl.projectile, wrt=(0, 1))
    g(20.0, 0.8)
    assert taped(g.source) == [(["speed", "vx", "vy"], [])]
    g = s2sad.grad(wl.projectile_dataclass)
    g(wl.Launch(20.0, 0.8))
    [(real, _)] = taped(g.source)
    # vx_1, the next step's vx that the adjoint of dt reads, is carried; `9.81 + drag *
    # speed * vy` stays taped: a number costs a slot, computing it again three NumPy
    # scalar operations
    assert "vx_1" not in real and len(real) == 4


def test_a_view_by_the_counter_is_computed_again():
    g = s2sad.grad(recurrent, wrt=(0, 1, 2))
    g(W, XS, H0)
    [(real, _)] = taped(g.source)
    assert real == ["h", "t"]       # the state after the step is the next one's h


def test_numbers_and_elements_stay_taped():
    def neighbours(x):
        s = 0.0
        for i in range(1, len(x)):
            s = s + x[i] * x[i - 1]
        return s
    g = s2sad.grad(neighbours)
    x = np.linspace(0.1, 1.0, 6)
    np.testing.assert_allclose(g(x), fd_array_grad(neighbours, (x,), 0), rtol=1e-6)
    assert "x[i] for" not in g.source


def test_the_pullback_reads_a_call_the_forward_pass_made():
    def launch(v0, angle):
        vx = v0 * np.cos(angle)
        vy = v0 * np.sin(angle)
        return vx * vy + vx
    g = s2sad.grad(launch, wrt=(0, 1))
    got = g(20.0, 0.8)
    want = [fd_array_grad(launch, (20.0, 0.8), i) for i in (0, 1)]
    np.testing.assert_allclose(got, want, rtol=1e-7)
    # the derivative of np.sin(angle) is the np.cos(angle) already computed, and so on
    code = "\n".join(line for line in g.source.splitlines() if not line.strip().startswith("#"))
    assert code.count("np.cos(angle)") == 1 and code.count("np.sin(angle)") == 1


ORDER = np.array([2, 0, 1])


def gathered(x):
    s = 0.5
    for i in range(3):
        j = ORDER[i]                    # an int the tape holds beside varied values
        s = np.sin(s * x[j]) + x[j] * j
    return s


def gathered_grad(x):               # the oracle's gradient, by hand, backwards
    s, states = 0.5, []
    for i in range(3):
        j = ORDER[i]
        states.append((s, j))
        s = np.sin(s * x[j]) + x[j] * j
    g, s_bar = np.zeros(3), 1.0
    for s, j in reversed(states):
        c = np.cos(s * x[j])
        g[j] += s_bar * (c * s + j)
        s_bar = s_bar * c * x[j]
    return g


def test_an_int_read_back_from_a_tape_gets_no_tangent():
    """Forward mode over the gradient code (`hessian`) gives each position of a tape's
    tuples its own activity: `j` read back is an int that varies with nothing, so no
    tangent is read back for it, nor multiplied into a product (`j_dot * t_bar`)."""
    from s2sad import forward_api
    from s2sad.compilation import arg_types_of
    x = np.array([0.3, -0.7, 1.1])
    code = forward_api._gradient_jvp(gathered, 0, (0,), arg_types_of(gathered, (x,)))
    assert re.search(r"\bj_\d+_dot\b", code.source) is None
    want = np.stack([fd_array_grad(lambda v, k=k: gathered_grad(v)[k], (x,), 0)
                     for k in range(3)])
    np.testing.assert_allclose(s2sad.hessian(gathered)(x), want, rtol=1e-6, atol=1e-8)
    v = np.array([0.2, -1.0, 0.5])
    np.testing.assert_allclose(s2sad.hvp(gathered)(x, v), want @ v, rtol=1e-6, atol=1e-8)
