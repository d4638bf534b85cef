"""Loops over small arrays through helper functions (issue 37): the adjoints of tuples of
known items written as displays (after_ad/tuple_adjoints.py), callees specialised on the
items of the tuples their callers pass (analysis/value_kinds.py's `items_key`), and the
runtime helpers' fast paths. Each derivative against central differences, for arguments of
shapes (3,), (1,), a number and (2, 3) in turn: one derivative object called with each, so
that what one call specialised on never serves another wrongly."""
import numpy as np
import pytest

import s2sad
from s2sad.rules import pytrees, reductions, runtime


def central(f, args, i, h=1e-6):
    """Central differences of scalar `f` along each element of `args[i]`."""
    x = args[i]
    if not isinstance(x, np.ndarray):
        up, down = list(args), list(args)
        up[i], down[i] = x + h, x - h
        return (f(*up) - f(*down)) / (2 * h)
    out = np.zeros(x.shape)
    for k in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[k] += h
        down[k] -= h
        out[k] = (f(*args[:i], up, *args[i + 1:]) - f(*args[:i], down, *args[i + 1:])) / (2 * h)
    return out


def check(f, args, wrt, g=None):
    got = (g or s2sad.grad(f, wrt=wrt))(*args)
    for i, d in zip(wrt, got):
        np.testing.assert_allclose(d, central(f, args, i), rtol=1e-6, atol=1e-8)
        assert np.shape(d) == np.shape(args[i])


def accel(pos, vel, k, c):
    return -k * np.sin(pos) - c * vel


def deriv(state, k, c):
    pos, vel = state
    return vel, accel(pos, vel, k, c)


def axpy(state, h, d):
    return state[0] + h * d[0], state[1] + h * d[1]


def step(state, h, k, c):
    k1 = deriv(state, k, c)
    k2 = deriv(axpy(state, h / 2, k1), k, c)
    k3 = deriv(axpy(state, h / 2, k2), k, c)
    k4 = deriv(axpy(state, h, k3), k, c)
    pos = state[0] + h / 6 * (k1[0] + 2 * k2[0] + 2 * k3[0] + k4[0])
    vel = state[1] + h / 6 * (k1[1] + 2 * k2[1] + 2 * k3[1] + k4[1])
    return pos, vel


def rk4(pos0, vel0, k, c):
    state = (pos0, vel0)
    for i in range(5):
        state = step(state, 0.1, k, c)
    pos, vel = state
    return np.sum(pos * pos) + 0.5 * np.sum(vel * vel)


def value(ops, leaves, i):
    op = ops[i]
    if op == 0:
        return leaves[i]
    a = value(ops, leaves, 2 * i + 1)
    b = value(ops, leaves, 2 * i + 2)
    if op == 1:
        return a + b
    if op == 2:
        return a * b
    return np.tanh(a) * b


def tree(leaves, w, ops):
    return np.sum(w * value(ops, leaves, 0))


SHAPES = [(3,), (1,), (), (2, 3)]


def sample(shape, rng, offset=0.0):
    return offset + (rng.normal(size=shape) if shape else float(rng.normal()))


def test_rk4_on_tuple_state_through_helpers_for_each_shape_in_turn():
    rng = np.random.default_rng(0)
    g = s2sad.grad(rk4, wrt=(0, 1, 2, 3))
    for shape in SHAPES:
        args = (sample(shape, rng), sample(shape, rng), sample(shape, rng, 1.5), 0.3)
        check(rk4, args, (0, 1, 2, 3), g)


def test_rk4_with_parameters_broadcast_against_the_state():
    # k of shape (3,) against a state of shape (2, 3), c of shape (2, 1): each summed back
    rng = np.random.default_rng(1)
    args = (rng.normal(size=(2, 3)), rng.normal(size=(2, 3)), 1.5 + rng.random(3),
            rng.random((2, 1)))
    check(rk4, args, (0, 1, 2, 3))


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_recursive_tree_with_array_leaves(shape):
    rng = np.random.default_rng(2)
    ops = [3, 1, 2, 2, 3, 1, 3] + [0] * 8
    leaves = rng.normal(size=(15,) + shape)
    check(tree, (leaves, sample(shape, rng), ops), (0, 1))


def pair(x, y):
    return x * 2.0, np.sum(y) + x


def reads_a_pair(x, y):
    t = pair(x, y)
    u = pair(t[1], y)           # an item summed down where it broadcast
    return np.sum(u[0] * y) + np.sum(t[0])


def test_a_pair_of_an_array_and_a_broadcast_value_for_each_shape_in_turn():
    # the items' adjoints are summed down to their shapes, and a uniform adjoint (of
    # np.sum(t[0])) is spread over its item's shape
    rng = np.random.default_rng(3)
    g = s2sad.grad(reads_a_pair, wrt=(0, 1))
    for shape in SHAPES:
        check(reads_a_pair, (sample(shape, rng), rng.normal(size=(2, 3))), (0, 1), g)


def first_only(state, w):
    return state[0] * w


def reads_one_item(x, w):
    return np.sum(first_only((x, 2.0 * x, 3.0), w))


def test_an_item_nothing_reads_gets_zeros_of_its_shape():
    rng = np.random.default_rng(4)
    for shape in SHAPES:
        check(reads_one_item, (sample(shape, rng), sample(shape, rng)), (0, 1))


def test_the_adjoint_of_a_tuple_of_known_items_is_a_display():
    text = s2sad.source(rk4, at=(np.ones(3), np.ones(3), np.ones(3), 0.3))
    assert "_s2s_unindex" not in text and "_s2s_add" not in text, text


def test_fast_paths_give_what_the_general_paths_give():
    rng = np.random.default_rng(5)
    a, b, x = rng.normal(size=3), rng.normal(size=3), rng.normal(size=3)
    np.testing.assert_array_equal(reductions.unbroadcast_product(a, b, x), a * b)
    np.testing.assert_allclose(reductions.unbroadcast_product(a, b[:1], x[:1]),
                               [np.sum(a * b[0])])
    out = runtime.unindex(a, (x, 2.0, [x]), 0)
    assert type(out) is tuple and out[1] == 0.0
    np.testing.assert_array_equal(out[0], a)
    np.testing.assert_array_equal(out[2][0], np.zeros(3))
    assert type(runtime.unindex(1.0, [2.0, 3.0], -1)) is list
    assert runtime.unindex(1.0, [2.0, 3.0], -1) == [0.0, 1.0]
    pieces = runtime.split_like(np.arange(6.0).reshape(2, 3), [np.ones((2, 1)),
                                                                np.ones((2, 2))], 1)
    np.testing.assert_array_equal(pieces[1], [[1.0, 2.0], [4.0, 5.0]])
    assert pytrees.add((a, 1.0), (b, 2.0))[1] == 3.0
    with pytest.raises(Exception):
        pytrees.add((a, 1.0), (b, 2.0, 3.0))
    assert pytrees.from_array((a, b), (x, x))[0] is a
    total = reductions.unbroadcast(np.arange(6.0).reshape(2, 3), 2.0)
    assert type(total) is float and total == 15.0
    assert type(reductions.unbroadcast(np.ones(3), 1)) is float
    rows = runtime.unindex(a, np.zeros((2, 3), np.float32), -1)
    assert rows.dtype == np.float32
    np.testing.assert_array_equal(rows, [[0.0] * 3, a.astype(np.float32)])
    np.testing.assert_array_equal(runtime.unindex(2.0, np.zeros((2, 3), int), 0),
                                  [[2.0] * 3, [0.0] * 3])


def pair_energy(x, k):
    e = 0.0
    n = x.shape[0]
    for i in range(n):
        for j in range(i + 1, n):      # no iteration at the last i: `j` copied out as it was
            d = x[i] - x[j]
            r2 = d[0] ** 2 + d[1] ** 2 + 1e-3
            e += k / r2 ** 3 - 1.0 / r2
    return e


@pytest.mark.parametrize("n", [1, 2, 5])
def test_rows_indexed_by_the_counters_of_nested_loops_are_known_rows(n):
    """The counter of an inner `for` over range is an int in the loop's body, though Wengert
    form binds it before the loop too (`j_1 = j`, for a loop of no iteration): `x[i]`
    and `x[j]` are rows of one shape and `d[0]` a number, so no adjoint is summed back to
    a shape at run time (40 times the function's time before, on 20 rows)."""
    x = np.random.default_rng(n).normal(size=(n, 2))
    g = s2sad.grad(pair_energy, wrt=(0, 1))
    check(pair_energy, (x, 0.01), (0, 1), g)
    assert "_s2s_unbroadcast" not in g.source     # (of the last call)
