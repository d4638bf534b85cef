"""Builtins that stand for other Python (before_ad/builtin_calls.py, and `enumerate`'s
`start=` in before_ad/iteration.py): `map` and `filter` where consumed, `max`, `min` and
`sorted` with `key=` and of one sequence, `divmod`. Each derivative is compared with
central differences of the function (grad, vjp, jvp with each unit tangent, hessian
against differences of the gradient's differences), and Python's own value."""
import math

import numpy as np
import pytest

import s2sad
from s2sad.errors import S2SADError


def fd_gradient(f, x, h=1e-6):
    x = np.asarray(x, dtype=float)
    g = np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = h
        g[i] = (f(x + e) - f(x - e)) / (2 * h)
    return g


def fd_hessian(f, x, h=1e-4):
    x = np.asarray(x, dtype=float)
    n = x.size
    H = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            ei, ej = np.zeros(n), np.zeros(n)
            ei[i], ej[j] = h, h
            H[i, j] = (f(x + ei + ej) - f(x + ei - ej) - f(x - ei + ej)
                       + f(x - ei - ej)) / (4 * h * h)
    return H


def check(f, x, second=True):
    """grad, value_and_grad's value, vjp, jvp and (with `second`) hessian of `f` of the
    vector `x`, against `f` and central differences."""
    x = np.asarray(x, dtype=float)
    expected = fd_gradient(f, x)
    np.testing.assert_allclose(s2sad.grad(f)(x), expected, rtol=1e-6, atol=1e-7)
    value, gradient = s2sad.value_and_grad(f)(x)
    assert value == f(x)
    np.testing.assert_allclose(gradient, expected, rtol=1e-6, atol=1e-7)
    y, pullback = s2sad.vjp(f, x)
    assert y == f(x)
    (bar,) = pullback(1.0)
    np.testing.assert_allclose(bar, expected, rtol=1e-6, atol=1e-7)
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = 1.0
        y, dot = s2sad.jvp(f, (x,), (e,))
        assert y == f(x)
        np.testing.assert_allclose(dot, expected[i], rtol=1e-6, atol=1e-7)
    if second:
        np.testing.assert_allclose(s2sad.hessian(f)(x), fd_hessian(f, x), rtol=1e-4,
                                   atol=1e-5)


def square(v):
    return v * v


def scaled(v, w):
    return v * w


def positive(v):
    return v > 0


def test_sum_of_map():
    def f(x):
        xs = [x[0], x[1], x[2]]
        return sum(map(square, xs)) + x[0] * sum(map(math.sin, xs))
    check(f, [0.3, -1.2, 2.0])


def test_map_over_two_sequences_and_list_of_map():
    def f(x):
        xs = [x[0], x[1]]
        ws = [x[2], 2.0]
        products = list(map(scaled, xs, ws))
        return products[0] * products[1] + sum(map(scaled, ws, xs))
    check(f, [0.3, -1.2, 2.0])


def test_loop_over_map_and_filter():
    def f(x):
        xs = [x[0], x[1], x[2]]
        total = 0.0
        for s in map(square, xs):
            total = total + s * x[0]
        return total + sum(filter(positive, xs)) * x[1]
    check(f, [0.3, -1.2, 2.0])
    check(f, [-0.3, 1.2, 2.0])


def test_max_and_min_of_one_sequence():
    def f(x):
        xs = [x[0] * x[1], x[1], math.exp(x[2])]
        return max(xs) * 2.0 + min(xs) ** 2 + max(v * x[0] for v in xs)
    check(f, [0.3, -1.2, 2.0])
    check(f, [1.5, 2.0, -3.0])


def test_max_min_and_sorted_with_a_key():
    def f(x):
        xs = [x[0], x[1], x[2]]
        far = max(xs, key=lambda v: v * v)
        near = min(xs, key=abs)
        ranked = sorted(xs, key=lambda v: -v)
        return far * 3.0 + near ** 3 + ranked[0] * ranked[1] - ranked[2]
    check(f, [0.3, -1.2, 2.0])
    check(f, [-2.5, 0.7, 1.1])


def test_sorted_with_key_and_reverse_keeps_ties_in_order():
    # equal keys: Python's sort is stable, and so are the derivatives' picks
    def f(x):
        xs = [x[0], x[1], x[2], x[3]]
        ranked = sorted(xs, key=lambda v: round(v), reverse=True)
        return ranked[0] * 1.0 + ranked[1] * 10.0 + ranked[2] * 100.0 + ranked[3] * 1000.0
    x = np.array([1.1, 0.9, 2.2, 0.1])
    # Python orders 2.2 (key 2), then 1.1 and 0.9 (key 1, in their order), then 0.1
    np.testing.assert_allclose(s2sad.grad(f)(x), [10.0, 100.0, 1.0, 1000.0])
    check(f, x)


def test_max_of_several_arguments_with_a_key_picks_the_first():
    def f(x):
        return max(x[0], x[1], -x[0], key=abs) * 5.0
    # |x0| == |-x0|: Python returns x0, the first
    np.testing.assert_allclose(s2sad.grad(f)(np.array([2.0, 1.0])), [5.0, 0.0])
    check(f, [2.0, 1.0])
    check(f, [0.5, 1.0])


def test_divmod():
    def f(x):
        q, r = divmod(x[0] * 3.0, x[1])
        return r * r + q * x[0]
    check(f, [1.3, 0.7])
    check(f, [-1.3, 0.7])
    check(f, [2.3, -0.6])


def test_enumerate_with_start_as_keyword():
    def f(x):
        xs = [x[0], x[1], x[2]]
        total = 0.0
        for i, v in enumerate(xs, start=1):
            total = total + i * v * v
        return total + sum(i * v for i, v in enumerate(xs, start=2))
    check(f, [0.3, -1.2, 2.0])


def test_reversed_read_whole():
    def f(x):
        backwards = list(reversed(x))
        ys = [x[0] * x[1], np.sin(x[2])]
        weighted = np.array(tuple(reversed(ys))) * np.array([2.0, 3.0])
        return backwards[0] * x[1] + np.sum(weighted) + sum(reversed([x[0], x[2] ** 2]))
    check(f, [0.3, -1.2, 2.0])


def test_list_parameter_gradient_keeps_its_structure():
    def f(xs):
        return max(xs, key=abs) * sum(map(square, xs))
    g = s2sad.grad(f)([1.0, -3.0, 2.0])
    assert isinstance(g, list)
    # max by |.| is -3.0 and the sum of squares 14: (-3 * 2 * 1, 14 + -3 * 2 * -3, -3 * 2 * 2)
    np.testing.assert_allclose(g, [-6.0, 32.0, -12.0])


def test_a_stored_map_is_not_consumed_twice_silently():
    # a map object is an iterator: read twice, it is empty the second time. s2sad does
    # not stand a list for it; it refuses, located, instead of adding the sum twice.
    def f(x):
        m = map(square, [x, 2.0 * x])
        return sum(m) + sum(m)
    assert f(1.5) == 1.5 ** 2 + 9.0
    with pytest.raises(S2SADError) as err:
        s2sad.grad(f)(1.5)
    assert "test_builtin_calls.py" in str(err.value)


def test_an_empty_sequence_raises_as_python_does():
    def f(x):
        return x * max([], key=abs)
    with pytest.raises(ValueError, match="empty"):
        s2sad.grad(f)(1.0)


def test_names_shadowing_the_builtins_are_left_alone():
    def max(xs, key=None):       # noqa: A001 - the user's own max
        return xs[-1]

    def f(x):
        return max([x, 2.0 * x], key=abs) * x
    assert s2sad.grad(f)(3.0) == pytest.approx(4.0 * 3.0)


def test_numpy_scalar_types_as_casts():
    def f(x):
        return np.float64(x[0]) * 2.0 + np.float32(x[1]) * x[0] + np.int64(x[1]) * x[1]
    x = np.array([1.5, 2.25])
    # float32(2.25) is exact; int64(2.25) == 2 is piecewise constant
    np.testing.assert_allclose(s2sad.grad(f)(x), [2.0 + 2.25, 1.5 + 2.0])
    # (central differences cannot see through float32's rounding: the cast on its own)
    check(lambda x: np.float64(x[0]) * x[1] + np.int64(x[1]) * x[1], [1.5, 2.25])
    y, dot = s2sad.jvp(f, (x,), (np.array([0.0, 1.0]),))
    assert dot == pytest.approx(1.5 + 2.0)


def test_the_values_keys_and_items_of_a_dict_read_whole():
    def f(x):
        err = {k: (x[k] - 0.5 * k) ** 2 for k in range(3)}
        worst = max(err, key=err.get)
        pairs = sorted(err.items(), key=lambda kv: kv[1])
        return sum(err.values()) + err[worst] + pairs[0][1] * 2.0 + float(len(list(err.keys())))
    check(f, [0.3, -1.2, 2.0])


# -- functools.reduce, as the loop it stands for ------------------------------------------
def tanh_layer(h, w):
    return math.tanh(w * h + 0.1)


def test_reduce_with_an_initial_value_and_a_lambda():
    import functools

    def f(x):
        return functools.reduce(lambda a, b: a * b + 1.0, [x[0], x[1], x[2]], x[3])
    check(f, [0.3, 1.2, -0.4, 0.8])


def test_reduce_without_an_initial_value_over_an_array_argument():
    from functools import reduce

    def f(x):
        return reduce(lambda a, b: a * math.sin(b), x) + reduce(scaled, [x[0], x[1]])
    check(f, [0.3, 1.2, -0.4])


def test_reduce_composes_layers_of_a_list():
    from functools import reduce

    def f(x):
        return reduce(tanh_layer, [x[0], x[1], x[2]], x[3])
    check(f, [0.7, -1.1, 0.4, 0.5])


def test_reduce_of_matrices_by_a_numpy_function():
    from functools import reduce

    def f(x):
        a = np.array([[x[0], x[1]], [x[2], x[3]]])
        return np.sum(reduce(np.matmul, [a, a.T, a]))
    check(f, [0.3, 1.2, -0.4, 0.8])


def test_reduce_of_nothing_raises_as_python_does():
    from functools import reduce

    def f(x, xs):
        return x * reduce(scaled, xs)
    with pytest.raises(TypeError, match="reduce\\(\\) of empty iterable with no initial value"):
        s2sad.grad(f)(1.0, [])
    assert s2sad.grad(f)(2.0, [3.0]) == 3.0


def sum_of_abs_squares(x):
    return np.sum(abs(x) ** 2) + np.sum(abs(x * 2.0 - 1.0))


def test_abs_of_an_array_is_numpys():
    # (its rule was math.copysign's, which raised a TypeError in the generated code)
    check(sum_of_abs_squares, [0.3, -0.7, 1.1])
