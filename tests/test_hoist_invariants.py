"""Arithmetic a loop repeats with the same operands, computed once before it
(before_ad/hoist_invariants.py): where it moves, where it must stay, and gradients
against central differences, in both modes and for second derivatives."""
import numpy as np
import pytest

import s2sad
from s2sad import pipeline
from s2sad.compilation import arg_types_of

from numpy_cases import fd_array_grad
from oracle import assert_close, fd_grad

SCALE = 0.5


def damped(v, dt, drag, n):
    for i in range(n):
        v = v - dt * drag * v * v
    return v


def rebound_in_branch(v, c):
    k = c
    for i in range(4):
        if v > 0.0:
            k = k * 0.5          # k changes: c * k is not invariant
        v = v + c * k * v
    return v


def nested(x, c):
    s = x
    for i in range(3):
        for j in range(2):
            w = c * x            # invariant in both loops
            s = s * w + SCALE * c
    return s


def while_loop(x, c):
    s = x
    while s < 10.0:
        s = s + c * c + s * 0.5
    return s


def divides(x, c, n):
    for i in range(n):
        x = x * (c / 2.0) + c / x    # c / x stays: x changes (and could be 0)
    return x


def _loop_bodies(f, args):
    """The statements before and inside the loops of `f` after hoist_invariants."""
    return pipeline.stage_source(f, "hoist_invariants", arg_types=arg_types_of(f, args))


def test_product_of_parameters_moves_before_the_loop():
    text = _loop_bodies(damped, (1.0, 0.1, 0.3, 5))
    before, inside = text.split("for i in range(n):")
    assert "dt * drag" in before and "dt * drag" not in inside


def test_a_value_the_loop_changes_stays():
    text = _loop_bodies(rebound_in_branch, (0.5, 0.3))
    assert "c * k" in text.split("for i in range(4):")[1]


def test_invariant_of_both_loops_moves_out_of_both():
    text = _loop_bodies(nested, (0.5, 0.3))
    assert "c * x" in text.split("for i in range(3):")[0]
    assert "SCALE * c" in text.split("for i in range(3):")[0]   # a module-level number


def test_only_division_by_a_nonzero_constant_moves():
    text = _loop_bodies(divides, (0.5, 0.3, 3))
    before, inside = text.split("for i in range(n):")
    assert "c / 2.0" in before and "c / x" in inside


@pytest.mark.parametrize("f, args, wrt", [
    (damped, (1.0, 0.1, 0.3, 5), (0, 1, 2)),
    (damped, (1.0, 0.1, 0.3, 0), (0, 1, 2)),       # the loop runs zero times
    (rebound_in_branch, (0.5, 0.3), (0, 1)),
    (rebound_in_branch, (-0.5, 0.3), (0, 1)),
    (nested, (0.5, 0.3), (0, 1)),
    (while_loop, (0.5, 0.3), (0, 1)),
    (divides, (0.5, 0.3, 3), (0, 1)),
])
def test_gradients_match_central_differences(f, args, wrt):
    assert_close(s2sad.grad(f, wrt=wrt)(*args), fd_grad(f, args, wrt), rtol=1e-6)


@pytest.mark.parametrize("f, args", [
    (damped, (1.0, 0.1, 0.3, 5)),
    (nested, (0.5, 0.3)),
    (while_loop, (0.5, 0.3)),
])
def test_forward_mode_and_second_derivatives(f, args):
    x = args[0]
    _, tangent = s2sad.jvp(f, args, (1.0,) + (0.0,) * (len(args) - 1))
    assert_close(tangent, fd_grad(f, args, 0), rtol=1e-6)

    def second(x0):         # d2f/dx2 by central differences of f itself
        h = 1e-4
        return (f(x0 + h, *args[1:]) - 2 * f(x0, *args[1:]) + f(x0 - h, *args[1:])) / h ** 2
    assert_close(s2sad.hessian(f)(*args), second(x), rtol=1e-5, atol=1e-6)


def test_gradient_tapes_no_invariant():
    g = s2sad.grad(damped, wrt=(0, 1, 2))
    g(1.0, 0.1, 0.3, 5)
    forward = g.source.split("_s2s_tape = []")[1].split("reversed(")[0]
    assert "dt * drag" not in forward
    assert np.isfinite(g(1.0, 0.1, 0.3, 5)).all()


def weighted(x, m):
    s = x
    for i in range(3):
        s = s * np.sum(m[None, :] * s[:, None], axis=1)    # m[None, :] is a view
    return np.sum(s)


def shifted(x, m):
    s = 0.0
    for i in range(3):
        s = s + np.sum(m[1:] * x[:-1]) * s + x[i]        # x[i]: an index, not a slice
    return s


def test_view_of_an_array_the_loop_does_not_bind_moves():
    args = (np.array([0.3, -0.2]), np.array([0.5, 1.5]))
    before, inside = _loop_bodies(weighted, args).split("for i in range(3):")
    assert "m[None, :]" in before and "s[:, None]" in inside
    before, inside = _loop_bodies(shifted, args).split("for i in range(3):")
    assert "m[1:]" in before and "x[:-1]" in before and "x[i]" in inside


@pytest.mark.parametrize("f", [weighted, shifted])
def test_gradients_through_hoisted_views(f):
    args = (np.array([0.3, -0.2, 0.4]), np.array([0.5, 1.5, 0.7]))
    expected = (fd_array_grad(f, args, 0), fd_array_grad(f, args, 1))
    for got, want in zip(s2sad.grad(f, wrt=(0, 1))(*args), expected):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9)
    _, tangent = s2sad.jvp(f, args, (np.ones(3), np.zeros(3)))
    np.testing.assert_allclose(tangent, np.sum(expected[0]), rtol=1e-6)
