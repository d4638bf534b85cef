"""Star forms (before_ad/star_forms.py): starred assignment targets, `*xs` in calls and
displays, `**d` in calls. Derivatives against central differences of the function
(grad, vjp, jvp with each unit tangent, hessian), and Python's own values and errors."""
import numpy as np
import pytest

import s2sad
from s2sad.errors import UnsupportedSyntaxError
from test_builtin_calls import check


def product(a, b):
    return a * b


def weighted(a, b=1.0, c=0.5):
    return a * b + c * a * a


def test_call_with_a_starred_tuple():
    def f(x):
        args = (x[0], 2.0 * x[1])
        return product(*args) + max(*args) * x[0]
    check(f, [0.3, 1.2])
    check(f, [1.5, -0.2])


def test_star_of_a_display_and_in_displays():
    def f(x):
        xs = [x[0], x[1]]
        ys = (*xs, x[0] * x[1])
        zs = [*xs, *ys, 3.0]
        return product(*[x[1], x[0]]) + sum(zs) * ys[2]
    check(f, [0.3, 1.2])


def test_zip_of_starred_pairs_transposes():
    def f(x):
        pairs = [(x[0], 1.0), (x[1], 3.0), (x[0] * x[1], -1.0)]
        firsts, seconds = zip(*pairs)
        return sum(a * b for a, b in zip(firsts, seconds)) + firsts[2] * x[1]
    check(f, [0.3, 1.2])


def test_starred_targets():
    def f(x):
        xs = [x[0], x[1], x[2], x[0] * x[2]]
        first, *rest = xs
        *init, last = xs
        a, *mid, b = xs
        (p, *q), r = (xs[:3], x[1])
        return first * sum(rest) + sum(init) * last + a * b * sum(mid) + p * q[1] * r
    check(f, [0.3, 1.2, -0.7])


def test_starred_rest_is_a_list_as_in_python():
    def f(x):
        first, *rest = (x, 2.0 * x, 3.0 * x)
        rest.append(first)           # a list: Python makes it one from a tuple too
        return sum(rest) * first
    assert f(2.0) == (4.0 + 6.0 + 2.0) * 2.0
    assert s2sad.grad(f)(2.0) == pytest.approx(2 * 6.0 * 2.0)


def test_unpacking_too_short_raises_as_python_does():
    def f(xs):
        a, *mid, b = xs
        return a * b
    with pytest.raises(ValueError):
        f([1.0])
    with pytest.raises(ValueError, match="not enough values to unpack"):
        s2sad.grad(f)([1.0])
    assert s2sad.grad(f)([2.0, 3.0]) == [3.0, 2.0]


def test_elements_in_a_tuple_target_are_assigned_in_turn_after_the_values():
    def swapped(x):
        a = x * 1.0
        a[0], a[2] = a[2], a[0] * a[1]        # both values read before either write
        return np.sum(a * x)

    def lists(x):
        xs = [x[0], x[1], x[2]]
        xs[0], xs[1] = xs[1] * xs[0], xs[0]
        b, xs[2] = xs[2], xs[0] * x[1]        # a name and an element
        return xs[0] * 3.0 + xs[1] ** 2 + xs[2] * b

    def bubble_sorted(x):
        a = x.copy()
        for i in range(len(a)):
            for j in range(len(a) - 1 - i):
                if a[j] > a[j + 1]:
                    a[j], a[j + 1] = a[j + 1], a[j]
        return a[0] + 2.0 * a[1] + 3.0 * a[2] * a[0]

    for f in (swapped, lists, bubble_sorted):
        check(f, [0.3, 1.2, -0.7])
        check(f, [-1.1, 0.4, 0.9])


def test_elements_in_a_tuple_target_unpack_a_pair_as_python_does():
    def f(x):
        a = np.zeros(2)
        a[0], a[1] = divmod(x[0] * 7.0, 2.0)
        return a[1] * x[1]
    check(f, [0.3, 1.2], second=False)

    def g(x):
        a = np.zeros(2)
        a[0], a[1] = x
        return a[0]
    with pytest.raises(ValueError):
        g(np.ones(3))
    with pytest.raises(ValueError, match="cannot unpack into 2 targets"):
        s2sad.grad(g)(np.ones(3))


def test_double_star_of_a_dict_display():
    def f(x):
        return weighted(**{"a": x, "c": 2.0}) + weighted(x, **{"b": x})
    # f = x + 2 x^2 + x^2 + 0.5 x^2: f' = 1 + 7 x
    assert s2sad.grad(f)(1.5) == pytest.approx(1.0 + 7.0 * 1.5)
    y, dot = s2sad.jvp(f, (1.5,), (1.0,))
    assert y == f(1.5) and dot == pytest.approx(1.0 + 7.0 * 1.5)


def test_a_length_s2sad_does_not_know_is_refused_with_the_fix():
    def f(x, xs):
        return product(*xs) * x

    def g(x):
        args = [x, 2.0]
        args.append(3.0)            # a list that changes: its length is not the display's
        return product(*args) + sum(args)

    def h(x, d):
        return weighted(**d) * x
    for fn, args in ((f, (1.0, [2.0, 3.0])), (g, (1.0,)), (h, (1.0, {"a": 2.0}))):
        with pytest.raises(UnsupportedSyntaxError) as err:
            s2sad.grad(fn)(*args)
        message = str(err.value)
        assert "test_star_forms.py" in message and "one by one" in message or (
            "by name" in message), message

