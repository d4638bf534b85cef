"""Loops as programs write them (#19): tuple targets, enumerate, zip, reversed, dict
items, and iteration directly over differentiated lists, tuples, dicts and arrays, also
in comprehensions. before_ad.desugar writes each as a loop over indexes. Every form is
checked in reverse mode (grad), forward mode (jvp) and, for a number, second order
(hessian), against central differences."""
import numpy as np
import pytest

import s2sad
from numpy_cases import fd_array_grad

X = np.array([[0.3, -0.5, 0.8], [1.1, 0.2, -0.4]])
P = {"a": 0.7, "b": -1.2, "c": 0.4}


# -- the forms: a number, an array or a dict in, a number out ------------------------------
def enumerate_coefficients(x):
    s = 0.0
    for i, c in enumerate([1.0, 2.0, 3.0]):
        s = s + c * x ** i
    return s


def enumerate_from_one(x):
    s = 0.0
    for k, v in enumerate([x, x * x, 2.0], 1):
        s = s + k * v
    return s


def enumerate_a_differentiated_list(x):
    terms = [np.sin(x), x * x, 3.0 * x]
    s = 0.0
    for i, t in enumerate(terms):
        s = s + (i + 1.0) * t * t
    return s


def zip_two(x):
    s = 0.0
    for a, b in zip([1.0, 2.0, 5.0], [x, x * x]):
        s = s + a * b
    return s


def zip_three_with_nested_target(x):
    s = 0.0
    for i, (a, b) in enumerate(zip([x, 2.0 * x], [np.cos(x), x])):
        s = s + i * a * b + a
    return s


def layers(x):
    stack = [(x, 1.0), (2.0 * x, 0.5), (0.3, x)]
    h = 1.0
    for w, b in stack:
        h = np.tanh(w * h + b)
    return h


def reversed_differentiated(x):
    coeffs = [x, 2.0, x * x]
    acc = 0.0
    for c in reversed(coeffs):
        acc = acc * x + c
    return acc


def enumerate_reversed(x):
    s = 0.0
    for i, c in enumerate(reversed([x, x * x, 1.0])):
        s = s + i * c
    return s


def loop_with_break(x):
    s = 0.0
    for v in [x, 2.0 * x, 3.0 * x]:
        if s > 2.0:
            break
        s = s + v * v
    return s


def loop_with_else(x):
    vals = [x, x * x]
    s = 1.0
    for v in vals:
        s = s * v
    else:
        s = s + x
    return s


def sequence_name_rebound_in_body(x):
    vals = [x, 2.0 * x]
    s = 0.0
    for v in vals:
        vals = vals + [v]     # the loop goes on over the list it started with
        s = s + v * vals[-1]
    return s


def list_comprehension_of_pairs(x):
    return sum([a * b for a, b in zip([1.0, 2.0], [x, x * x])])


def generator_enumerate(x):
    return sum(c * x ** i for i, c in enumerate([1.0, 2.0, 3.0]))


def nested_comprehension_targets(x):
    pairs = [(x, 1.0), (x * x, 2.0)]
    return sum([k * a * w for k, (a, w) in enumerate(pairs)])


def rows(X):
    s = 0.0
    for row in X:
        s = s + np.sum(row ** 2) * row[0]
    return s


def rows_enumerated(X):
    s = 0.0
    for i, row in enumerate(X):
        s = s + (i + 1.0) * np.sum(np.sin(row))
    return s


def rows_zipped_with_weights(X):
    s = 0.0
    for w, row in zip([0.5, 2.0], X):
        s = s + w * np.sum(row * row)
    return s


def dict_items(p):
    s = 0.0
    for k, v in p.items():
        s = s + v * v * len(k)
    return s


def dict_keys_in_loop(p):
    s = 0.0
    for k in p:
        s = s + np.sin(p[k])
    return s


def dict_values(p):
    s = 1.0
    for v in p.values():
        s = s * (1.0 + v)
    return s


def dict_keys_method(p):
    s = 0.0
    for k in p.keys():
        s = s + p[k] ** 3
    return s


def dict_items_enumerated(p):
    s = 0.0
    for i, (k, v) in enumerate(p.items()):
        s = s + i * v * v
    return s


NUMBER_FORMS = [enumerate_coefficients, enumerate_from_one, enumerate_a_differentiated_list,
                zip_two, zip_three_with_nested_target, layers, reversed_differentiated,
                enumerate_reversed, loop_with_break, loop_with_else,
                sequence_name_rebound_in_body, list_comprehension_of_pairs,
                generator_enumerate, nested_comprehension_targets]
ARRAY_FORMS = [rows, rows_enumerated, rows_zipped_with_weights]
DICT_FORMS = [dict_items, dict_keys_in_loop, dict_values, dict_keys_method,
              dict_items_enumerated]


def _fd(f, x, h=1e-6):
    return (f(x + h) - f(x - h)) / (2 * h)


@pytest.mark.parametrize("f", NUMBER_FORMS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("x", [0.6, 1.3])
def test_loops_over_numbers(f, x):
    want = _fd(f, x)
    assert s2sad.grad(f)(x) == pytest.approx(want, rel=1e-6, abs=1e-8)
    assert s2sad.jvp(f, (x,), (1.0,)) == pytest.approx((f(x), want), rel=1e-6, abs=1e-8)
    # the second derivative, against central differences of the first
    second = _fd(lambda v: _fd(f, v, 1e-5), x, 1e-3)
    assert s2sad.hessian(f)(x) == pytest.approx(second, rel=1e-4, abs=1e-6)


@pytest.mark.parametrize("f", ARRAY_FORMS, ids=lambda f: f.__name__)
def test_loops_over_the_rows_of_an_array(f):
    x = X.copy()
    want = fd_array_grad(f, (X,), 0)
    np.testing.assert_allclose(s2sad.grad(f)(x), want, rtol=1e-6, atol=1e-9)
    direction = np.linspace(-1.0, 1.0, X.size).reshape(X.shape)
    _, tangent = s2sad.jvp(f, (x,), (direction,))
    assert tangent == pytest.approx(np.sum(want * direction), rel=1e-6)
    np.testing.assert_array_equal(x, X)            # the input is as it was


@pytest.mark.parametrize("f", DICT_FORMS, ids=lambda f: f.__name__)
def test_loops_over_a_dict(f):
    p = dict(P)
    got = s2sad.grad(f)(p)
    assert list(got) == list(P)                    # the gradient has the dict's keys
    for k in P:
        want = _fd(lambda v: f({**P, k: v}), P[k])
        assert got[k] == pytest.approx(want, rel=1e-6, abs=1e-9), k
    direction = {"a": 0.5, "b": -1.0, "c": 2.0}
    _, tangent = s2sad.jvp(f, (p,), (direction,))
    assert tangent == pytest.approx(sum(got[k] * direction[k] for k in P), rel=1e-6)
    assert p == P


def test_a_loop_over_an_iterator_that_is_not_differentiated():
    def f(x):
        s = 0.0
        for idx in np.ndindex(2, 2):
            s = s + x ** (idx[0] + idx[1])
        return s
    from s2sad.frontend.source import function_from_source
    import inspect
    import textwrap
    g = function_from_source(textwrap.dedent(inspect.getsource(f)), {"np": np})
    # 1 + 2x + x^2: 2 + 2x
    assert s2sad.grad(g)(0.5) == pytest.approx(3.0, rel=1e-15)
    assert s2sad.jvp(g, (0.5,), (1.0,))[1] == pytest.approx(3.0, rel=1e-15)


def test_the_generated_loop_reads_like_a_hand_written_one():
    text = s2sad.source(rows, at=(X,))
    assert "for i in range(t):" in text and "row = X[i]" in text
    assert "X_bar[i] += " in text                 # the adjoint is updated in place
    text = s2sad.source(dict_items, at=(P,))
    assert "keys = _s2s_keys(p)" in text and "k = keys[i]" in text and "v = p[k]" in text


def starred_target(x):
    s = 0.0
    for a, *rest in [(x, 1.0, 2.0)]:
        s = s + a
    return s


def too_many_names(x):
    s = 0.0
    for a, b, c in zip([x], [x]):
        s = s + a * b
    return s


@pytest.mark.parametrize("f, message", [
    (starred_target, "this for target is not supported; unpack into names"),
    (too_many_names, "gives 2 values at a time, and its target unpacks 3"),
])
def test_what_stays_refused_says_where_and_why(f, message):
    with pytest.raises(s2sad.UnsupportedSyntaxError, match=message) as info:
        s2sad.grad(f)(1.0)
    assert info.value.filename == __file__
    assert info.value.lineno == f.__code__.co_firstlineno + 2

