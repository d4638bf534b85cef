"""Functions that call themselves, whose result's shape depends on the path they take
(a leaf's row, or a sum or product of two calls of themselves): the pattern such a
function returns is guessed and checked (analysis/returned_shapes.py), each derivative
against central differences, also where the guess is wrong, where the patterns change
from call to call, and through two functions calling each other."""
import numpy as np
import pytest

import s2sad
from numpy_cases import (check_hessian, check_jvp, check_vjp, fd_array_grad,
                         gradient_failures)
from s2sad import cache
from s2sad.rules import runtime


def node_value(ops, leaves, i):
    op = ops[i]
    if op == 0:
        return leaves[i]
    a = node_value(ops, leaves, 2 * i + 1)
    b = node_value(ops, leaves, 2 * i + 2)
    if op == 1:
        return a + b
    if op == 2:
        return a * b
    return np.tanh(a) * b


def tree(leaves, w, ops):
    return np.sum(w * node_value(ops, leaves, 0))


OPS = [3, 1, 2, 0, 0, 0, 0]     # tanh(l3 + l4) * (l5 * l6)
W = np.array([0.5, -1.5, 2.0])


def fixed_tree(leaves, w):
    return tree(leaves, w, OPS)


def tree_of_leaves(leaves):
    return tree(leaves, W, OPS)


def _check_grad(f, args, wrt):
    got = s2sad.grad(f, wrt)(*args)
    got = got if isinstance(got, tuple) else (got,)
    failures = gradient_failures(got, [args[i] for i in wrt], lambda *a: f(*_put(args, wrt, a)))
    assert not failures, "\n".join(failures)


def _put(args, wrt, values):
    out = list(args)
    for i, v in zip(wrt, values):
        out[i] = v
    return tuple(out)


def _vjp_sources(fn):
    return [d.source for d in cache._cache.get(fn, {}).values()]


@pytest.mark.parametrize("shapes", [((7, 3), (3,)), ((7, 1), (3,)), ((7, 3), (1,)),
                                    ((7, 3), ())])
def test_a_tree_against_central_differences(shapes):
    rng = np.random.default_rng(0)
    leaves, w = rng.normal(size=shapes[0]), rng.normal(size=shapes[1])
    _check_grad(tree, (leaves, w, OPS), (0, 1))
    check_vjp(fixed_tree, (leaves, w))
    check_jvp(fixed_tree, (leaves, w))


def test_a_trees_callee_is_settled_by_the_guess():
    # every node's value has the pattern of a row of `leaves`: its vjp sums no adjoint
    # back to a shape at run time
    cache.clear()
    rng = np.random.default_rng(1)
    _check_grad(tree, (rng.normal(size=(7, 3)), rng.normal(size=3), OPS), (0, 1))
    sources = _vjp_sources(node_value)
    assert sources and all("_s2s_unbroadcast" not in s for s in sources), sources


def test_a_trees_hessian():
    rng = np.random.default_rng(2)
    check_hessian(tree_of_leaves, rng.normal(size=(7, 3)) * 0.5)


def test_value_and_grad_of_a_tree():
    rng = np.random.default_rng(3)
    leaves, w = rng.normal(size=(7, 3)), rng.normal(size=3)
    value, (gl, gw) = s2sad.value_and_grad(tree, (0, 1))(leaves, w, OPS)
    assert np.isclose(value, tree(leaves, w, OPS))
    np.testing.assert_allclose(gl, fd_array_grad(fixed_tree, (leaves, w), 0), rtol=1e-6)
    np.testing.assert_allclose(gw, fd_array_grad(fixed_tree, (leaves, w), 1), rtol=1e-6)


def test_later_calls_with_other_shapes_and_trees():
    # one gradient object: other patterns compile the caller (and its callee's vjp)
    # again; other operations take other paths through the same code
    rng = np.random.default_rng(4)
    g = s2sad.grad(tree, (0, 1))
    for shape, ops in [((7, 3), OPS), ((7, 1), OPS), ((7, 3), [1, 0, 3, 0, 0, 0, 0]),
                       ((3, 2), [2, 0, 0]), ((1, 4), [0]), ((7, 3), OPS)]:
        args = (rng.normal(size=shape), rng.normal(size=shape[1:]), ops)
        got = g(*args)
        for i in (0, 1):
            expected = fd_array_grad(lambda a, b: tree(a, b, ops), args[:2], i)
            assert np.shape(got[i]) == np.shape(expected), (shape, ops, i)
            np.testing.assert_allclose(got[i], expected, rtol=1e-6, atol=1e-8)


def by_depth(x, y, n):
    if n == 0:
        return x
    return np.sum(by_depth(x, y, n - 1) * y, keepdims=True)


def through_by_depth(x, y):
    return np.sum(by_depth(x, y, 3) * x)


def widened(x, y, n):
    if n == 0:
        return y
    return widened(x, y, n - 1) * x


def through_widened(x, y):
    return np.sum(widened(x, y, 3) * x)


@pytest.mark.parametrize("f", [through_by_depth, through_widened])
def test_a_wrong_guess_gives_the_right_number(f):
    # the first guess, the pattern of the array the path without a call of itself
    # returns, fails (a sum with keepdims, or a product that broadcasts it): the
    # pattern is unknown, and the adjoints are summed back to shapes at run time
    rng = np.random.default_rng(5)
    x, y = rng.normal(size=3), rng.normal(size=1)
    _check_grad(f, (x, y), (0, 1))
    check_vjp(f, (x, y))
    check_jvp(f, (x, y))
    check_hessian(lambda y: f(x, y), y)
    check_hessian(lambda x: f(x, y), x)
    _check_grad(f, (x, rng.normal(size=3)), (0, 1))


def shrink(x, y, n):
    if n == 0:
        return x * y
    return shrink(x[1:] + x[:-1], y, n - 1)


def through_shrink(x, y):
    return np.sum(shrink(x, y, 2) * y)


def test_a_function_calling_itself_on_other_shapes():
    rng = np.random.default_rng(6)
    for size in (3, 4):
        x = rng.normal(size=size)
        for y in (rng.normal(size=1), rng.normal(size=size - 2)):
            _check_grad(through_shrink, (x, y), (0, 1))
            check_jvp(through_shrink, (x, y))


def ping(x, y, n):
    if n == 0:
        return x
    return pong(x, y, n - 1) * y


def pong(x, y, n):
    if n == 0:
        return y
    return ping(x, y, n - 1) + x


def through_ping(x, y):
    return np.sum(ping(x, y, 3))


def through_pong(x, y):
    return np.sum(pong(x, y, 3) * x)


@pytest.mark.parametrize("shapes", [((3,), (3,)), ((3,), (1,)), ((1,), (3,))])
def test_two_functions_calling_each_other(shapes):
    # what is found of pong from a guess of ping's pattern is not kept: pong's own
    # gradient, compiled after, finds it again
    rng = np.random.default_rng(7)
    x, y = rng.normal(size=shapes[0]), rng.normal(size=shapes[1])
    cache.clear()
    _check_grad(through_ping, (x, y), (0, 1))
    _check_grad(through_pong, (x, y), (0, 1))
    check_vjp(through_pong, (x, y))


def test_unindex_of_a_row():
    # (runtime.unindex's fast case: a row of a float array) against NumPy
    rng = np.random.default_rng(8)
    for x, g, i in [(rng.normal(size=(4, 3)), rng.normal(size=3), 2),
                    (rng.normal(size=(4, 3)), rng.normal(size=1), -1),
                    (rng.normal(size=(4, 3)), 2.5, 0),
                    (rng.normal(size=4), np.float64(1.5), 3),
                    (rng.normal(size=(4, 3)).astype(np.float32), rng.normal(size=3), 1),
                    (np.arange(6).reshape(2, 3), rng.normal(size=3), 1)]:
        expected = np.zeros(np.shape(x), np.result_type(np.asarray(x).dtype, np.float32))
        expected[i] = g
        got = runtime.unindex(g, x, i)
        assert got.dtype == expected.dtype and got.shape == expected.shape
        np.testing.assert_array_equal(got, expected)
    # a `g` larger than the row is summed down to its shape
    for x, g, i, row in [(np.zeros(3), np.ones(1) * 2.0, 0, 2.0),
                         (np.zeros((4, 3)), np.arange(6.0).reshape(2, 3), 1, [3.0, 5.0, 7.0]),
                         (np.zeros((4, 1)), np.arange(3.0), 2, [3.0])]:
        expected = np.zeros(x.shape)
        expected[i] = row
        np.testing.assert_array_equal(runtime.unindex(g, x, i), expected)


def tick(x, n):
    if n == 0:
        return x
    a = tick(x, n - 1)
    return np.sum(tock(a, n - 1), keepdims=True)


def tock(x, n):
    if n == 0:
        return x
    return tick(x, n - 1) * 2.0


def through_tick(x):
    return np.sum(tick(x, 3) * x)


def through_tock(x):
    return np.sum(tock(x, 3) * x)


def test_what_is_found_from_a_wrong_guess_is_not_kept():
    # finding tick's pattern, tock's (for the pattern of `a`, known from the guess) is
    # found from the guess that tick returns x's pattern, which fails (tick sums with
    # keepdims): what is found of tock then is not kept for tock's own caller
    rng = np.random.default_rng(9)
    x = rng.normal(size=3)
    cache.clear()
    _check_grad(through_tick, (x,), (0,))
    _check_grad(through_tock, (x,), (0,))
