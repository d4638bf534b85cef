"""The numba backend on the NumPy and Python a scientist writes in loops over small
arrays: np.dot of two rows, a masked write (`y[y < 0] = 0.0`), np.linalg.norm, np.prod,
np.std and np.var with ddof (and along an axis), loops over zip/enumerate of slices,
functools.reduce, `a, *rest = x`, the builtin sum, min and max, sorted with a key, a
list built by a comprehension read as an array. grad and jvp compiled by Numba, checked
against central differences of the functions as they are.
"""
import functools
import math

import numpy as np
import pytest

from optional import require

numba = require("numba", "numba")

import s2sad  # noqa: E402
from s2sad.errors import NativeBackendError  # noqa: E402
from numpy_cases import fd_array_grad  # noqa: E402


def dot_rows(x):
    out = np.empty(3)
    for i in range(3):
        out[i] = np.dot(x[i], x[(i + 1) % 3])
    return out.sum()


def dot_matrix_vector(a, v):
    return np.sum(np.dot(a, v) ** 2) + np.dot(v, v) * 2.0 + np.sum(np.dot(a.T, a))


def masked(x):
    y = x.copy()
    y[y < 0] = 0.0
    y[::2] *= 3.0
    return np.sum(y ** 2)


def deviations(x):
    return np.std(x, ddof=1) + np.var(x) * 0.5 + np.var(x, ddof=2)


def deviations_along(x):
    return (np.sum(np.var(x, axis=0, ddof=1)) + np.sum(np.std(x, axis=1))
            + np.sum(np.std(x, axis=-1, keepdims=True) * x))


def norms(x):
    return np.linalg.norm(x @ x) + np.linalg.norm(x) + np.linalg.norm(x[0], 2)


def products(x):
    return (np.prod(x) + np.prod(x[1:] * 2.0) + np.sum(np.prod(x.reshape(2, 2), axis=0))
            + np.sum(np.prod(x.reshape(2, 2), axis=-1) ** 2))


def product(x):
    return np.prod(x)


def rows_loop(x):
    total = 0.0
    for i in range(x.shape[0]):
        total += np.linalg.norm(x[i]) * np.prod(x[i]) + np.std(x[i], ddof=1)
    return total


def pair_products(x):
    s = [x[i] * x[j] for i in range(3) for j in range(i, 3)]
    return np.prod(np.array(s))


def multiply(a, b):
    return a * b


def reduced(x):
    return functools.reduce(multiply, x)


def reduced_by_lambda(x):
    return functools.reduce(lambda a, b: a * b + 0.5, x)


def neighbours(x):
    total = 0.0
    for i, (a, b) in enumerate(zip(x, x[1:])):
        total += (i + 1) * math.atan2(a, b)
    return total


def first_and_rest(x):
    a, *rest = x
    return a * sum(rest)


def builtins_of_items(x):
    return sum(xi ** 2 for xi in x) + max(x[0], x[1]) * min(x) + max(x) ** 2


def negated(v):
    return -v


def ordered(x):
    y = sorted(x, key=negated)
    return y[0] * 2 + y[-1] + sorted(x, key=abs, reverse=True)[1] * 3


rng = np.random.default_rng(45)
CASES = [
    (dot_rows, (rng.normal(size=(3, 2)),)),
    (dot_matrix_vector, (rng.normal(size=(3, 2)), rng.normal(size=2))),
    (masked, (rng.normal(size=6),)),
    (deviations, (rng.normal(size=7),)),
    (deviations_along, (rng.normal(size=(3, 4)),)),
    (norms, (rng.normal(size=(3, 3)),)),
    (products, (rng.normal(size=4),)),
    (rows_loop, (rng.normal(size=(4, 3)),)),
    (pair_products, (rng.normal(size=3) + 2.0,)),
    (reduced, (rng.normal(size=4),)),
    (reduced_by_lambda, (rng.normal(size=4),)),
    (neighbours, (rng.normal(size=5),)),
    (first_and_rest, (rng.normal(size=4),)),
    (builtins_of_items, (rng.normal(size=4),)),
    (ordered, (np.array([0.3, -1.2, 2.5, 0.9]),)),
]
IDS = [f.__name__ for f, _ in CASES]


@pytest.mark.parametrize("fn, args", CASES, ids=IDS)
def test_grad_on_numba(fn, args):
    for wrt in range(len(args)):
        expected = fd_array_grad(fn, args, wrt)
        got = s2sad.grad(fn, wrt=wrt, backend="numba")(*args)
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("fn, args", CASES, ids=IDS)
def test_jvp_on_numba(fn, args):
    direction = np.linspace(0.3, 1.1, args[0].size).reshape(args[0].shape)
    value, tangent = s2sad.jvp(fn, args, (direction,) + (None,) * (len(args) - 1),
                               backend="numba")
    assert value == pytest.approx(fn(*args), rel=1e-12)
    expected = np.sum(fd_array_grad(fn, args, 0) * direction)
    assert tangent == pytest.approx(expected, rel=1e-6, abs=1e-8)


def test_a_product_with_zeros_has_the_product_of_the_others():
    # d/dx_i of prod(x) is the product of the others: all zero with two zeros
    dproduct = s2sad.grad(product, backend="numba")
    np.testing.assert_array_equal(dproduct(np.array([2.0, 0.0, 3.0, 0.0])), np.zeros(4))
    np.testing.assert_array_equal(dproduct(np.array([2.0, 0.0, 3.0, 4.0])),
                                  [0.0, 24.0, 0.0, 0.0])


def test_hvp_of_deviations_against_differences_of_the_formula():
    x = rng.normal(size=6)
    v = np.linspace(-1.0, 1.0, 6)

    def exact_grad(y):      # d/dy of std(y, ddof=1) + var(y) / 2 + var(y, ddof=2)
        c = y - y.mean()
        return (c / ((len(y) - 1) * np.std(y, ddof=1)) + c / len(y)
                + 2 * c / (len(y) - 2))
    h = 1e-5
    expected = (exact_grad(x + h * v) - exact_grad(x - h * v)) / (2 * h)
    np.testing.assert_allclose(s2sad.hvp(deviations, backend="numba")(x, v), expected,
                               rtol=1e-6, atol=1e-8)


def norm_of_rows(x):
    return np.sum(np.linalg.norm(x, axis=1))


def frobenius(x):
    return np.linalg.norm(x, "fro")


def test_a_string_norm_order_is_refused_at_the_users_line():
    with pytest.raises(NativeBackendError, match=r"small_arrays.py:\d+: .*np.linalg.norm\(x\)"):
        s2sad.grad(frobenius, backend="numba")(np.ones((2, 3)))


def test_what_numba_cannot_take_is_refused_naming_the_function():
    with pytest.raises(NativeBackendError, match="norm_of_rows"):
        s2sad.grad(norm_of_rows, backend="numba")(np.ones((2, 3)))


def test_sorted_keys_with_nan_are_refused_not_sorted():
    with pytest.raises(ValueError, match="NaN"):
        s2sad.grad(ordered, backend="numba")(np.array([0.3, np.nan, 2.5, 0.9]))


def product_of_rows(x):
    return np.sum(np.prod(x, axis=1))


def test_hvp_of_a_product_against_differences_of_the_products_of_the_others():
    def others(y):          # the gradient of np.prod, each element's product of the others
        return np.array([np.prod(np.delete(y, i)) for i in range(len(y))])
    h = 1e-5
    x = np.array([0.7, -1.3, 2.0, 0.0, 1.1])
    v = np.linspace(-1.0, 1.0, 5)
    expected = (others(x + h * v) - others(x - h * v)) / (2 * h)
    np.testing.assert_allclose(s2sad.hvp(product, backend="numba")(x, v), expected,
                               rtol=1e-6, atol=1e-8)
    m, w = x[:4].reshape(2, 2), v[:4].reshape(2, 2)
    expected = (np.array([others(r) for r in m + h * w])
                - np.array([others(r) for r in m - h * w])) / (2 * h)
    np.testing.assert_allclose(s2sad.hvp(product_of_rows, backend="numba")(m, w), expected,
                               rtol=1e-6, atol=1e-8)


def two_norms(x):
    return np.linalg.norm(x) * 2.0 + np.linalg.norm(x[0], 2) ** 3


def test_hvp_of_norms_against_differences_of_their_gradient():
    def exact_grad(y):      # d||y|| = y / ||y||, of the whole matrix and of its first row
        out = 2.0 * y / np.linalg.norm(y)
        out[0] += 3 * np.linalg.norm(y[0]) * y[0]
        return out
    h = 1e-5
    x = rng.normal(size=(2, 3))
    v = np.linspace(-1.0, 1.0, 6).reshape(2, 3)
    expected = (exact_grad(x + h * v) - exact_grad(x - h * v)) / (2 * h)
    np.testing.assert_allclose(s2sad.hvp(two_norms, backend="numba")(x, v), expected,
                               rtol=1e-6, atol=1e-8)


def weights_listed(p):
    return np.sum(np.array([0.5, 1.0, 2.0]) * p ** 2)


WEIGHTS = np.array([0.5, 1.0, 2.0])


def weights_global(p):
    return np.sum(WEIGHTS * p ** 2)


def test_a_list_of_numbers_is_refused_saying_to_write_a_global_array_which_compiles():
    p = np.array([0.3, -0.7, 1.1])
    with pytest.raises(NativeBackendError, match=r"small_arrays.py:\d+: .*XS = np.array"):
        s2sad.grad(weights_listed, backend="numba")(p)
    np.testing.assert_allclose(s2sad.grad(weights_global, backend="numba")(p),
                               fd_array_grad(weights_global, (p,), 0), rtol=1e-6)
