"""The shapes of what a function of the user's returns (analysis/returned_shapes.py),
and the vjps of callees specialised on the shape patterns their caller knows: each
gradient against central differences, also where the patterns do not settle a shape
(a later call with other shapes, a tuple a loop carries whose items change shape, a
result whose shape depends on the path, a function calling itself)."""
import numpy as np
import pytest

import s2sad
from numpy_cases import fd_array_grad
from s2sad import cache


def axpy(state, h, d):
    return state[0] + h * d[0], state[1] + h * d[1]


def deriv(state, k):
    pos, vel = state
    return vel, -k * np.sin(pos) - 0.3 * vel


def step(state, h, k):
    k1 = deriv(state, k)
    k2 = deriv(axpy(state, h / 2, k1), k)
    pos = state[0] + h / 2 * (k1[0] + k2[0])
    vel = state[1] + h / 2 * (k1[1] + k2[1])
    return pos, vel


def integrate(pos0, vel0, k):
    state = (pos0, vel0)
    for i in range(5):
        state = step(state, 0.1, k)
    pos, vel = state
    return np.sum(pos * pos) + 0.5 * np.sum(vel * vel)


def _check(f, args, wrt):
    got = s2sad.grad(f, wrt)(*args)
    for i, g in zip(wrt, got):
        expected = fd_array_grad(f, args, i)
        assert np.shape(g) == np.shape(expected), (i, np.shape(g), np.shape(expected))
        np.testing.assert_allclose(g, expected, rtol=1e-6, atol=1e-8)


def _sources(f):
    """The generated sources of the derivatives cached for `f`'s callees (by name)."""
    return {fn.__name__: der.source for fn, per in list(cache._cache.items())
            for der in per.values()}


def test_a_tuple_state_through_helpers_needs_no_unbroadcast():
    rng = np.random.default_rng(0)
    args = (rng.normal(size=3), rng.normal(size=3), 1.0 + rng.random(3))
    cache.clear()
    _check(integrate, args, (0, 1, 2))
    sources = _sources(integrate)
    # the callees' vjps are specialised on the patterns the caller knows: the helpers'
    # arrays all have one shape, so no adjoint is summed back to a shape at run time
    for name in ("step", "deriv", "axpy"):
        assert "_s2s_unbroadcast" not in sources[name], sources[name]


@pytest.mark.parametrize("shapes", [
    ((3,), (3,), (3,)),
    ((1,), (3,), (3,)),         # pos0 broadcast against vel0 in the first step
    ((3,), (3,), (1,)),         # k broadcast
    ((2, 3), (3,), (1, 3)),     # more axes
    ((3,), (1,), ()),           # vel0 broadcast; k a 0-d array
])
def test_later_calls_with_other_shapes(shapes):
    rng = np.random.default_rng(1)
    g = s2sad.grad(integrate, (0, 1, 2))
    for shape in [((3,), (3,), (3,)), shapes, ((3,), (3,), (3,))]:
        args = tuple(rng.normal(size=s) + (1.5 if i == 2 else 0.0)
                     for i, s in enumerate(shape))
        got = g(*args)
        for i, gi in enumerate(got):
            expected = fd_array_grad(integrate, args, i)
            assert np.shape(gi) == np.shape(expected)
            np.testing.assert_allclose(gi, expected, rtol=1e-6, atol=1e-8)


def swap_scale(state, s):
    return state[1] * s, state[0]


def carried_changes_shape(x, v):
    state = (x, v)
    for i in range(3):
        state = swap_scale(state, 1.5)      # the items swap: (3,) and (1,) in turn
    a, b = state
    return np.sum(a * b) + np.sum(np.sin(a))


def test_a_carried_tuple_whose_items_change_shape():
    rng = np.random.default_rng(2)
    _check(carried_changes_shape, (rng.normal(size=3), rng.normal(size=1)), (0, 1))
    _check(carried_changes_shape, (rng.normal(size=3), rng.normal(size=3)), (0, 1))


def outer_sum(a, b):
    return a[:, None] + b, a


def broadcast_result(a, b):
    s, t = outer_sum(a, b)
    u = s * np.cos(s)
    return np.sum(u * t[:, None])


def test_a_callee_that_broadcasts():
    rng = np.random.default_rng(3)
    _check(broadcast_result, (rng.normal(size=3), rng.normal(size=4)), (0, 1))
    _check(broadcast_result, (rng.normal(size=1), rng.normal(size=4)), (0, 1))
    _check(broadcast_result, (rng.normal(size=3), rng.normal(size=1)), (0, 1))


def by_path(a, b, flag):
    if flag > 0:
        return a * b
    return a


def path_dependent(a, b, flag):
    t = by_path(a, b, flag)
    return np.sum(t * t) + np.sum(a)


def test_a_result_whose_shape_depends_on_the_path():
    rng = np.random.default_rng(4)
    a, b = rng.normal(size=1), rng.normal(size=3)
    for flag in (1.0, -1.0, 1.0):
        _check(path_dependent, (a, b, flag), (0, 1))


def power_sum(x, n):
    if n == 0:
        return x
    return np.sin(power_sum(x, n - 1)) * x


def recursive(x, y):
    return np.sum(power_sum(x, 3) * y)


def test_a_function_calling_itself():
    rng = np.random.default_rng(5)
    _check(recursive, (rng.normal(size=3), rng.normal(size=3)), (0, 1))
    _check(recursive, (rng.normal(size=1), rng.normal(size=3)), (0, 1))


def pair(x, v):
    return axpy((x, v), 0.5, (v, x))


def test_vjp_seeds_of_a_callees_tuple_are_given_their_shapes():
    # a vjp is not specialised on patterns: a number for an item of an array still
    # comes back in the shape of the argument
    x, v = np.array([1.0, 2.0, 3.0]), np.array([0.5, 0.25, 2.0])
    _, pullback = s2sad.vjp(pair, x, v)
    gx, gv = pullback((1.0, 1.0))
    np.testing.assert_allclose(gx, np.full(3, 1.5))
    np.testing.assert_allclose(gv, np.full(3, 1.5))
    assert gx.shape == gv.shape == (3,)


def value_and_pair(x, v):
    a, b = pair(x, v)
    return np.sum(a * b)


def test_value_and_grad_through_a_pair():
    rng = np.random.default_rng(6)
    args = (rng.normal(size=3), rng.normal(size=3))
    value, got = s2sad.value_and_grad(value_and_pair, (0, 1))(*args)
    assert np.isclose(value, value_and_pair(*args))
    for i, g in enumerate(got):
        np.testing.assert_allclose(g, fd_array_grad(value_and_pair, args, i), rtol=1e-6)


def mul(x, y):
    return x * y


def through_mul(x, y):
    return np.sum(mul(x, y))


def test_the_callers_guard_tests_the_patterns_its_callee_relies_on():
    # the caller computes nothing from its arguments' patterns itself: only its callee's
    # vjp, specialised on them, relies on them (x of shape (1,) needs its adjoint summed)
    rng = np.random.default_rng(7)
    g = s2sad.grad(through_mul, (0, 1))
    for shapes in [((3,), (3,)), ((1,), (3,)), ((3,), (1,)), ((3,), (3,))]:
        args = tuple(rng.normal(size=s) for s in shapes)
        got = g(*args)
        for i, gi in enumerate(got):
            expected = fd_array_grad(through_mul, args, i)
            assert np.shape(gi) == np.shape(expected), (shapes, i)
            np.testing.assert_allclose(gi, expected, rtol=1e-6, atol=1e-8)


def polynomial(coeffs, x):
    return coeffs[0] * x + coeffs[1] * x * x


def weighted(x, coeffs):
    return np.sum(polynomial(coeffs, x))


def test_a_list_of_numbers_is_checked_for_complex_ones():
    # (runtime.check_real's fast path takes a list of ints and floats as real)
    x = np.array([0.5, -1.0, 2.0])
    g = s2sad.grad(weighted)
    np.testing.assert_allclose(g(x, [1.0, 2]), fd_array_grad(weighted, (x, [1.0, 2]), 0),
                               rtol=1e-6)
    with pytest.raises(s2sad.ComplexValueError):
        g(x, [1.0, 2j])
    with pytest.raises(s2sad.ComplexValueError):
        g(x, (1.0, np.complex128(2j)))


def rotate(state, n):
    for i in range(n):
        state = (state[1] * 2.0, np.sin(state[0]))
    return state[0] * state[1] + state[0]


def through_rotate(x, v):
    return np.sum(rotate((x, v), 2)) + np.sum(rotate((x, v), 3))


def test_a_tuple_parameter_bound_again_in_a_loop():
    # the callee's vjp is specialised on the items' patterns as passed: a loop that binds
    # the tuple again swaps them, so `state[0]` is of either shape
    rng = np.random.default_rng(8)
    _check(through_rotate, (rng.normal(size=3), rng.normal(size=1)), (0, 1))
    _check(through_rotate, (rng.normal(size=1), rng.normal(size=3)), (0, 1))
    x, v = rng.normal(size=3), rng.normal(size=1)
    _, pullback = s2sad.vjp(through_rotate, x, v)
    gx, gv = pullback(1.0)
    np.testing.assert_allclose(gx, fd_array_grad(through_rotate, (x, v), 0), rtol=1e-6)
    np.testing.assert_allclose(gv, fd_array_grad(through_rotate, (x, v), 1), rtol=1e-6)


def scaled_sum(x, *rest):
    out = x
    for r in rest:
        out = out * r
    return out


def through_star(x, y, z):
    return np.sum(scaled_sum(x, y, z) * x)


def test_a_callee_with_star_args():
    rng = np.random.default_rng(9)
    _check(through_star, (rng.normal(size=3), rng.normal(size=1), rng.normal(size=3)),
           (0, 1, 2))
    _check(through_star, (rng.normal(size=1), rng.normal(size=3), rng.normal(size=1)),
           (0, 1, 2))
