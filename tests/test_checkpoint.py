"""s2sad.checkpoint: a call whose intermediate values the gradient does not keep; its
pullback computes them again. Gradients are checked against central differences, and
the memory saved is measured (tracemalloc), not assumed."""
import tracemalloc

import numpy as np
import pytest

import s2sad
from numpy_cases import fd_array_grad


def step(u, kappa):
    lap = np.roll(u, 1) - 2.0 * u + np.roll(u, -1)
    return u + kappa * np.tanh(lap) * np.exp(-u * u)


checkpointed_step = s2sad.checkpoint(step)


def plain(u0, kappa):
    u = u0
    for i in range(12):
        u = step(u, kappa)
    return np.sum(u * u)


def checkpointed(u0, kappa):
    u = u0
    for i in range(12):
        u = checkpointed_step(u, kappa)
    return np.sum(u * u)


@s2sad.checkpoint
def branchy_step(x, c, n):
    # a branch, an inner loop and an int argument inside the checkpoint
    for k in range(n):
        if np.sum(x) > 0.0:
            x = np.sin(x) * c
        else:
            x = x * x + c
    return x


def with_branches(x, c):
    s = 0.0
    for i in range(3):
        x = branchy_step(x, c, 2)
        s = s + np.sum(x ** 3)
    return s


@pytest.mark.parametrize("f", [checkpointed, with_branches])
def test_gradient_matches_finite_differences(f):
    x = np.linspace(-0.6, 0.9, 7)
    args = (x, 0.3)
    expected = [fd_array_grad(f, args, i) for i in (0, 1)]
    got = s2sad.grad(f, wrt=(0, 1))(*args)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-9)
    _, pullback = s2sad.vjp(f, *args)
    for g, e in zip(pullback(1.0), expected):
        np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-9)
    _, tangent = s2sad.jvp(f, args, (np.zeros(7), 1.0))
    assert tangent == pytest.approx(float(expected[1]), rel=1e-6)


def test_the_checkpointed_loop_tapes_the_arguments_alone():
    g = s2sad.grad(checkpointed, wrt=(0, 1))
    g(np.linspace(0.0, 1.0, 5), 0.1)
    lines = g.source.splitlines()
    start = next(i for i, line in enumerate(lines) if "# reverse mode" in line)
    header = " ".join(line.strip("# ") for line in lines[start:start + 5])
    assert "step_residuals and the shapes of u of each iteration" in header
    assert "step_checkpoint_fwd(u, kappa)" in g.source


def test_the_checkpoint_keeps_less_memory():
    u0 = np.linspace(0.0, 1.0, 20000)
    peaks = []
    for f in (plain, checkpointed):
        g = s2sad.grad(f, wrt=(0, 1))
        g(u0, 0.1)
        tracemalloc.start()
        g(u0, 0.1)
        peaks.append(tracemalloc.get_traced_memory()[1] / u0.nbytes)
        tracemalloc.stop()
    # plain keeps several arrays of each of the 12 steps; the checkpoint one, plus
    # what the recomputation of one step holds
    assert peaks[1] < 0.5 * peaks[0], peaks
    assert peaks[1] < 12 + 20, peaks


def test_second_derivatives_through_a_checkpoint_say_so():
    with pytest.raises(s2sad.S2SADError, match=r"second derivatives through "
                       r"s2sad.checkpoint\(step\) are not supported yet"):
        s2sad.hessian(checkpointed, wrt=1)(np.linspace(0.0, 1.0, 5), 0.1)


def test_a_checkpoint_runs_as_the_function():
    x = np.linspace(0.0, 1.0, 5)
    np.testing.assert_array_equal(checkpointed_step(x, 0.2), step(x, 0.2))
    assert checkpointed_step.__name__ == "step"


# -- a checkpoint called in a checkpointed loop's step ------------------------------------
@s2sad.checkpoint
def heat_step(u, kappa):
    lap = np.roll(u, 1) - 2.0 * u + np.roll(u, -1)
    return u + kappa * lap


def heat_call(u0, kappa, n, k):
    u = u0
    for i in s2sad.checkpointed(range(n), snapshots=k):
        u = heat_step(u, kappa)
    return np.sum(u * u)


def heat_inline(u0, kappa, n, k):
    u = u0
    for i in range(n):
        u = u + kappa * (np.roll(u, 1) - 2.0 * u + np.roll(u, -1))
    return np.sum(u * u)


def test_a_checkpoint_in_a_checkpointed_loop_matches_finite_differences():
    u0 = np.linspace(-0.6, 0.9, 7)
    expected = [fd_array_grad(heat_inline, (u0, 0.2, 9, 3), i) for i in (0, 1)]
    got = s2sad.grad(heat_call, wrt=(0, 1))(u0, 0.2, 9, 3)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-9)


def test_a_checkpoint_in_a_checkpointed_loop_keeps_what_the_inline_step_keeps():
    """The step's adjoint differentiates the checkpoint by its own adjoint of that kind
    (which reuses memory), not by its vjp and a pullback closure: one state more than
    the inline loop's k + 4 at most (k + 8 before), measured."""
    n, k = 60, 5
    u0 = np.random.default_rng(0).standard_normal(10 ** 5)
    g = s2sad.grad(heat_call, wrt=(0, 1))
    g(u0, 0.1, n, k)
    tracemalloc.start()
    g(u0, 0.1, n, k)
    states = tracemalloc.get_traced_memory()[1] / u0.nbytes
    tracemalloc.stop()
    assert states < k + 5.5, states
    text = s2sad.source(heat_call, wrt=(0, 1))
    step = text[text.index("def heat_call_step_adjoint"):]
    assert "heat_step_adjoint(" in step and "heat_step_pullback" not in step, step


# -- s2sad.checkpoint(step)(...) written in the function differentiated, as with jax ----
def wrapped_inline(u0, kappa):
    u = u0
    for i in range(6):
        u = s2sad.checkpoint(step)(u, kappa)
    return np.sum(u * u)


def test_a_checkpoint_made_in_the_function_checkpoints_its_step():
    # (it differentiated s2sad's own checkpoint class, and refused at a line of s2sad)
    args = (np.linspace(-0.6, 0.9, 7), 0.3)
    g = s2sad.grad(wrapped_inline, wrt=(0, 1))
    for got, i in zip(g(*args), (0, 1)):
        np.testing.assert_allclose(got, fd_array_grad(wrapped_inline, args, i), rtol=1e-6,
                                   atol=1e-9)
    assert "step_checkpoint_fwd(u, kappa)" in g.source
    _, tangent = s2sad.jvp(wrapped_inline, args, (np.zeros(7), 1.0))
    assert tangent == pytest.approx(float(fd_array_grad(wrapped_inline, args, 1)), rel=1e-6)


def step_now(u, kappa):
    return np.sin(kappa * u)


def inline_model(u0, kappa):
    return np.sum(s2sad.checkpoint(step_now)(u0, kappa) ** 2)


def test_a_checkpoint_made_in_the_function_follows_its_step_redefined():
    global step_now
    args = (np.linspace(-0.6, 0.9, 5), 0.3)
    g = s2sad.grad(inline_model)
    np.testing.assert_allclose(g(*args), fd_array_grad(inline_model, args, 0), rtol=1e-6,
                               atol=1e-9)

    def step_now(u, kappa):         # (a notebook's cell run again)
        return np.exp(kappa * u) * u
    np.testing.assert_allclose(g(*args), fd_array_grad(inline_model, args, 0), rtol=1e-6,
                               atol=1e-9)


def test_a_checkpoint_of_a_closure_is_refused_at_the_users_line():
    def model(u0, kappa):
        return np.sum(s2sad.checkpoint(lambda u: np.sin(kappa * u))(u0))
    with pytest.raises(s2sad.S2SADError, match="define the step at module level") as info:
        s2sad.grad(model)(np.ones(3), 0.5)
    assert info.value.filename == __file__
    assert "s2sad.checkpoint(lambda u" in info.value.text


def test_second_derivatives_through_a_checkpoint_name_the_users_call():
    with pytest.raises(s2sad.S2SADError, match="second derivatives through") as info:
        s2sad.hessian(checkpointed, wrt=1)(np.linspace(0.0, 1.0, 5), 0.1)
    assert info.value.filename == __file__
    assert "u = checkpointed_step(u, kappa)" in info.value.text


def doubling_step(u, kappa):
    u[0] = u[0] * 2.0                  # (writes into the array it is given)
    return u * np.cos(kappa * u)


def shrinking_step(parts, kappa):
    parts[0] = parts[0] * kappa        # (replaces an item of the list it is given)
    return parts[0] + parts[1]


@s2sad.checkpoint
def decaying_step(u, kappa=0.5):
    return u * np.exp(-kappa * u)


def doubling(u0, kappa):
    u = u0 * 1.0
    for i in range(3):
        u = s2sad.checkpoint(doubling_step)(u, kappa)
    return np.sum(u)


def shrinking(u0, kappa):
    return np.sum(s2sad.checkpoint(shrinking_step)([u0, u0 * u0], kappa))


def by_keyword(u0, kappa):
    u = u0
    for i in range(3):
        u = decaying_step(u, kappa=0.3) * kappa + decaying_step(u)
    return np.sum(u)


@pytest.mark.parametrize("f", [doubling, shrinking, by_keyword])
def test_a_step_that_changes_its_arguments_or_takes_keywords(f):
    # the pullback computes the step again from its arguments as they were before it
    # changed them (it computed from the changed ones); a keyword went to fwd, which
    # took none (a raw TypeError)
    x = np.linspace(0.2, 0.9, 4)
    args = (x, 0.3)
    expected = [fd_array_grad(f, args, i) for i in (0, 1)]
    value, got = s2sad.value_and_grad(f, wrt=(0, 1))(*args)
    assert value == pytest.approx(f(*args), rel=1e-12)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-9)
    direction = np.linspace(-1.0, 1.0, 4)
    _, tangent = s2sad.jvp(f, args, (direction, 0.5))
    assert tangent == pytest.approx(expected[0] @ direction + 0.5 * expected[1], rel=1e-6)


def read_after_changed(u0):
    u = u0 * 1.0
    v = s2sad.checkpoint(doubling_step)(u, 0.3)
    return np.sum(u * v)


def test_an_argument_the_step_changed_read_after_it_is_refused_at_the_line():
    # (the derivative took u as it was before the call: a wrong number in grad and jvp)
    for derivative in (s2sad.grad(read_after_changed),
                       lambda x: s2sad.jvp(read_after_changed, (x,), (x,))):
        with pytest.raises(s2sad.UnsupportedSyntaxError, match="writes into its argument") as info:
            derivative(np.linspace(0.2, 0.9, 4))
        assert info.value.filename == __file__
        assert "np.sum(u * v)" in info.value.text and "doubling_step" in str(info.value)
