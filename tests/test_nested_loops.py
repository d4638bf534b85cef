"""A loop nested in a loop that changes a name the outer loop carries (#34): the outer
loop's pullback reads, after the inner loop, the value the inner loop left, not the one
its iteration started with (it read the start value, silently wrong, until that was
refused). The outer loop records such a name at the end of its iteration; a name read
before the inner loop too has a copy of its own there (Wengert form), recorded apart.

Every form is checked against central differences of the function (or of its central
differences, for second derivatives): grad, value_and_grad's value, vjp, jvp, hvp and
hessian, the numba backend, and inside checkpointed loops and checkpoints."""
import numpy as np
import pytest

import s2sad
from numpy_cases import check_jvp, check_vjp, fd_array_grad

ARGS = (0.7, 0.3)


# -- the forms: two numbers in, a number out ----------------------------------------------
def inner_steps_then_square(x, h):
    for t in range(3):
        for k in range(2):
            x = x * 0.9 + h          # (linear: the inner loop records nothing)
        x = x * x
    return x


def inner_swaps_then_square(a, b):
    for i in range(2):
        for k in range(3):
            a, b = b, a
        a = a * a
    return b + 0.5 * a


def while_outer(x, h):
    t = 0
    while t < 3:
        for k in range(2):
            x = x * 0.9 + h
        x = x * x
        t += 1
    return x


def while_inner(x, h):
    for t in range(3):
        k = 0
        while k < 2 and x < 10.0:
            x = x * 0.9 + h
            k += 1
        x = x * x
    return x


def two_inner_loops(x, h):
    for t in range(2):
        for k in range(2):
            x = x * 0.9 + h
        x = x * x
        for k in range(3):
            x = x * 0.8 - h
        x = x * x + h
    return x


def three_levels(x, h):
    for t in range(2):
        for s in range(2):
            for k in range(2):
                x = x * 0.9 + h
            x = x * x * 0.5
        x = x * x + h
    return x


def read_before_and_after(x, h):
    for t in range(3):
        y = x * x
        for k in range(2):
            x = x * 0.9 + h
        x = x * y * 0.5 + x * x
    return x


def inner_steps_on_a_name_of_their_own(x, h):
    for t in range(3):
        y = x
        for k in range(2):
            y = y * 0.9 + h
        x = y * y
    return x


def inner_loop_in_an_if(x, h):
    for t in range(3):
        if t != 1:
            for k in range(2):
                x = x * 0.9 + h
        x = x * x
    return x


def inner_loop_in_an_if_on_the_value(x, h):
    for t in range(3):
        if x < 0.8:
            for k in range(2):
                x = x * 0.9 + h
        x = x * x
    return x


# the inner loop records its own tape (a nonlinear step inside it)
def inner_nonlinear_steps(x, h):
    for t in range(3):
        for k in range(2):
            x = x + h * np.sin(x)
        x = x * x * 0.5
    return x


def inner_nonlinear_swaps(a, b):
    for i in range(2):
        for k in range(2):
            a, b = b * np.cos(a), a
        a = a * a
    return a + b


def while_outer_nonlinear_three_levels(x, h):
    t = 0
    while t < 2:
        for s in range(2):
            k = 0
            while k < 2:
                x = x + h * np.tanh(x)
                k += 1
            x = np.sin(x) * x
        y = x * h
        for k in range(2):
            x = x * np.cos(y)
        x = x * y + x
        t += 1
    return x


FORMS = [inner_steps_then_square, inner_swaps_then_square, while_outer, while_inner,
         two_inner_loops, three_levels, read_before_and_after,
         inner_steps_on_a_name_of_their_own, inner_loop_in_an_if,
         inner_loop_in_an_if_on_the_value, inner_nonlinear_steps, inner_nonlinear_swaps,
         while_outer_nonlinear_three_levels]
ids = pytest.mark.parametrize("f", FORMS, ids=lambda f: f.__name__)


def fd_grad(f, args=ARGS):
    return [fd_array_grad(f, args, i) for i in range(len(args))]


@ids
def test_grad(f):
    got = s2sad.grad(f, wrt=(0, 1))(*ARGS)
    np.testing.assert_allclose(got, fd_grad(f), rtol=1e-6, atol=1e-9)


@ids
def test_value_and_grad(f):
    value, got = s2sad.value_and_grad(f, wrt=(0, 1))(*ARGS)
    assert value == f(*ARGS)
    np.testing.assert_allclose(got, fd_grad(f), rtol=1e-6, atol=1e-9)


@ids
def test_vjp(f):
    check_vjp(f, ARGS)


@ids
def test_jvp(f):
    check_jvp(f, ARGS)


@ids
def test_hessian_and_hvp(f):
    x, h = ARGS
    want = fd_array_grad(lambda y: fd_array_grad(f, (y, h), 0), (x,), 0)
    np.testing.assert_allclose(s2sad.hessian(f)(x, h), want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(s2sad.hvp(f)(x, h, 2.0), 2.0 * want, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("f", [inner_steps_then_square, inner_swaps_then_square, while_outer,
                               three_levels, read_before_and_after, inner_nonlinear_steps,
                               inner_nonlinear_swaps], ids=lambda f: f.__name__)
def test_numba_backend(f):
    got = s2sad.grad(f, wrt=(0, 1), backend="numba")(*ARGS)
    np.testing.assert_allclose(got, fd_grad(f), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("f", [inner_steps_then_square, inner_nonlinear_swaps],
                         ids=lambda f: f.__name__)
def test_numba_hessian(f):
    x, h = ARGS
    want = fd_array_grad(lambda y: fd_array_grad(f, (y, h), 0), (x,), 0)
    np.testing.assert_allclose(s2sad.hessian(f, backend="numba")(x, h), want, rtol=1e-6)


# -- arrays --------------------------------------------------------------------------------
def inner_steps_then_exp(u, h):
    """The outer loop records `u` after the inner loop and `u_2`, the value its iteration
    ends with: that is not taken from the next iteration's record of `u` (which is not
    the value the next iteration starts with)."""
    for t in range(3):
        for k in range(2):
            u = u * 0.9 + h
        u = np.exp(u * u * 0.5)
    return np.sum(u)


def inner_element_writes(u, h):
    v = u * 1.0
    for t in range(2):
        for i in range(1, 3):
            v[i] = v[i - 1] * h + np.sin(v[i])
        v[0] = v[2] * v[1]
    return np.sum(v * v)


U = np.array([0.3, 0.5, 0.7])


@pytest.mark.parametrize("backend", ["python", "numba"])
@pytest.mark.parametrize("f", [inner_steps_then_exp, inner_element_writes],
                         ids=lambda f: f.__name__)
def test_arrays(f, backend):
    got = s2sad.grad(f, wrt=(0, 1), backend=backend)(U, 0.1)
    for i in (0, 1):
        np.testing.assert_allclose(got[i], fd_array_grad(f, (U, 0.1), i), rtol=1e-6)
    if backend == "python":
        check_vjp(f, (U, 0.1))
        check_jvp(f, (U, 0.1))


# -- checkpointed loops and checkpoints --------------------------------------------------
def checkpointed_outer(x, h):
    for t in s2sad.checkpointed(range(4), snapshots=2):
        for k in range(2):
            x = x + h * np.sin(x)
        x = x * x * 0.5
    return x


def checkpointed_inner(x, h):
    for t in range(3):
        for k in s2sad.checkpointed(range(3), snapshots=2):
            x = x + h * np.sin(x)
        x = x * x * 0.5
    return x


@s2sad.checkpoint
def nested_step(x, h):
    for t in range(2):
        for k in range(2):
            x = x * 0.9 + h
        x = x * x
    return x


def calls_a_checkpoint(x, h):
    for t in range(2):
        x = nested_step(x, h) * 0.5
    return x


@pytest.mark.parametrize("f", [checkpointed_outer, checkpointed_inner, calls_a_checkpoint],
                         ids=lambda f: f.__name__)
def test_checkpointed(f):
    got = s2sad.grad(f, wrt=(0, 1))(*ARGS)
    np.testing.assert_allclose(got, fd_grad(f), rtol=1e-6, atol=1e-9)
    check_jvp(f, ARGS)


def test_the_outer_loop_records_the_value_the_inner_loop_leaves():
    """Recorded at the end of the iteration, after the inner loop changed it (at its
    start, the pullback read the start value where the inner loop had changed it)."""
    lines = s2sad.source(inner_steps_then_square, wrt=(0, 1)).splitlines()
    pushes = [i for i, line in enumerate(lines) if "_s2s_tape.append(x)" in line]
    inner = [i for i, line in enumerate(lines) if "x = x * 0.9 + h" in line]
    assert len(pushes) == 1 and inner[0] < pushes[0]
