"""Calls of `np.vectorize` objects of Python functions: the loop NumPy runs, differentiated
(before_ad/builtin_calls.py). Checked against central differences of the function as it
is at the call (after the object or its function changes too)."""
import math

import numpy as np
import pytest

import s2sad


def piecewise(a):
    if a > 0.5:
        return math.sin(a) * a
    return a * a


def blend(a, b):
    return a * math.exp(-b * b) if a > b else a - b


v_piecewise = np.vectorize(piecewise)
v_blend = np.vectorize(blend)


def made_outside(x):
    return np.sum(v_piecewise(x) * 2.0)


def made_inside(x, y):
    return np.sum(np.vectorize(blend)(x, y) ** 2)


def broadcast(x, y):
    return np.sum(np.sin(v_blend(x[:, None], y)))


def numeric(f, args, i, h=1e-6):
    args = [np.asarray(a, float) for a in args]
    out = np.zeros_like(args[i])
    for k in np.ndindex(args[i].shape):
        e = np.zeros_like(args[i])
        e[k] = h
        plus, minus = list(args), list(args)
        plus[i], minus[i] = args[i] + e, args[i] - e
        out[k] = (f(*plus) - f(*minus)) / (2 * h)
    return out


X = np.array([0.3, 0.7, 1.1, -0.4])
Y = np.array([0.2, 0.9, -0.5, 0.6])


@pytest.mark.parametrize("f, args", [(made_outside, (X,)), (made_inside, (X, Y)),
                                     (broadcast, (X, Y[:3]))])
def test_the_gradient_of_a_vectorized_function(f, args):
    got = s2sad.grad(f, wrt=tuple(range(len(args))))(*args)
    for i, g in enumerate(got):
        np.testing.assert_allclose(g, numeric(f, args, i), rtol=1e-6, atol=1e-9)
    direction = [np.linspace(-1.0, 1.0, np.size(a)).reshape(np.shape(a)) for a in args]
    _, tangent = s2sad.jvp(f, args, tuple(direction))
    expected = sum(np.sum(numeric(f, args, i) * d) for i, d in enumerate(direction))
    assert tangent == pytest.approx(expected, rel=1e-6)


def test_the_hessian_of_a_vectorized_function():
    grad = s2sad.grad(made_outside)
    expected = np.array([numeric(lambda z: grad(z)[k], (X,), 0) for k in range(X.size)])
    np.testing.assert_allclose(s2sad.hessian(made_outside)(X), expected, rtol=1e-5, atol=1e-7)


def test_a_new_function_on_the_object_or_a_new_object_is_taken_up():
    global v_piecewise
    g = s2sad.grad(made_outside)
    g(X)
    saved = v_piecewise
    try:
        v_piecewise.pyfunc = lambda a: a ** 3
        np.testing.assert_allclose(g(X), 6 * X ** 2, rtol=1e-12)
        v_piecewise = np.vectorize(lambda a: math.cos(a))
        np.testing.assert_allclose(g(X), -2 * np.sin(X), rtol=1e-12)
    finally:
        saved.pyfunc = piecewise
        v_piecewise = saved


def with_signature(x):
    return np.sum(np.vectorize(piecewise, excluded={1})(x))


def by_keyword(x):
    return np.sum(v_blend(x, b=0.5))


@pytest.mark.parametrize("f, what", [(with_signature, "excluded="),
                                     (by_keyword, "by position")])
def test_what_is_not_differentiated_is_refused_at_the_line(f, what):
    with pytest.raises(s2sad.UnsupportedSyntaxError, match=what) as info:
        s2sad.grad(f)(X)
    assert info.value.filename == __file__
    assert "vectorize" in info.value.text or "v_blend" in info.value.text


def ramp(a):
    return 2.0 * a if a > 1.0 else 0        # (an int where the ramp is flat)


v_ramp = np.vectorize(ramp)
v_ramp_int = np.vectorize(ramp, otypes=[int])


def ramped(x):
    return np.sum(v_ramp(x) * x)


def ramped_int(x):
    return np.sum(v_ramp_int(x) * x)


@pytest.mark.parametrize("f, x", [
    (ramped, np.array([0.5, 1.6, 2.7])),        # the first output 0: all truncated to ints
    (ramped, np.array([1.6, 0.5, 2.7])),        # the first output a float: floats
    (ramped_int, np.array([1.6, 0.5, 2.7]))])   # otypes=[int]
def test_the_array_has_the_dtype_numpy_gives_it(f, x):
    expected = numeric(f, (x,), 0)
    value, g = s2sad.value_and_grad(f)(x)
    assert value == f(x)
    np.testing.assert_allclose(g, expected, rtol=1e-6, atol=1e-9)
    direction = np.array([0.3, -0.2, 0.5])
    assert s2sad.jvp(f, (x,), (direction,))[1] == pytest.approx(expected @ direction, rel=1e-6)
    hessian = np.array([numeric(lambda z: numeric(f, (z,), 0)[k], (x,), 0, h=1e-4)
                        for k in range(x.size)])
    np.testing.assert_allclose(s2sad.hessian(f)(x), hessian, atol=1e-4)   # (wrong: 4s)


def polar(a):
    return a * a, math.sin(a)


v_polar = np.vectorize(polar)
v_polar_typed = np.vectorize(polar, otypes=[float, float])


def both_parts(x):
    r, s = v_polar(x)
    return np.sum(r * s)


def both_parts_typed(x):
    r, s = v_polar_typed(x)
    return np.sum(r * s)


@pytest.mark.parametrize("f", [both_parts, both_parts_typed])
def test_several_outputs_are_refused_at_the_line(f):
    for derivative in (s2sad.grad(f), lambda x: s2sad.jvp(f, (x,), (x,))):
        with pytest.raises(s2sad.UnsupportedSyntaxError, match="several values") as info:
            derivative(X)
        assert info.value.filename == __file__
        assert "v_polar" in info.value.text


def relu_made_here(x):
    return np.sum(np.vectorize(lambda a: a if a > 0 else 0)(x) * x)


def powers_in_a_loop(x):
    s = 0.0
    for k in range(3):
        s = s + np.sum(np.vectorize(lambda a: a ** (k + 1))(x))
    return s


@pytest.mark.parametrize("f, x", [(relu_made_here, np.array([-0.5, 0.6, 2.7])),
                                  (relu_made_here, np.array([0.5, -0.6, 2.7])),
                                  (powers_in_a_loop, np.array([0.5, -0.6, 2.7]))])
def test_a_lambda_vectorized_in_the_function(f, x):
    # (refused before: a lambda is named before the statement, and lifted; the dtype of
    # each loop's array, read back from the tape, has no derivative in the hessian)
    expected = numeric(f, (x,), 0)
    np.testing.assert_allclose(s2sad.grad(f)(x), expected, rtol=1e-6, atol=1e-9)
    direction = np.array([0.3, -0.2, 0.5])
    assert s2sad.jvp(f, (x,), (direction,))[1] == pytest.approx(expected @ direction, rel=1e-6)
    hessian = np.array([numeric(lambda z: numeric(f, (z,), 0)[k], (x,), 0, h=1e-4)
                        for k in range(x.size)])
    np.testing.assert_allclose(s2sad.hessian(f)(x), hessian, atol=1e-4)
