"""The exponent's term in the derivatives of `x ** y` at a negative base: nothing where
nothing moves the exponent (an int exponent carried through a tape: hessians NaN, and a
raw math domain error, before `exponent_term`), NaN where something does. Checked
against central differences of the function as it is."""
import math

import numpy as np
import pytest

import s2sad


def fd_grad(f, x, h=1e-6):
    out = np.zeros_like(x)
    for k in range(x.size):
        e = np.zeros_like(x)
        e[k] = h
        with np.errstate(invalid="ignore"):      # (NaN off the integers, as NumPy says)
            out[k] = (f(x + e) - f(x - e)) / (2 * h)
    return out


def fd_hessian(f, x, h=1e-4):
    return np.array([fd_grad(lambda z: fd_grad(f, z)[k], x, h) for k in range(x.size)])


def powers_of_items(x):
    s = 0.0
    for i in range(2):
        s = s + x[i] ** (i + 1)
    return s


def powers_of_parts(x):
    parts = [x[:1], x[1:]]
    return sum(np.sum(p ** (i + 1)) for i, p in enumerate(parts))


@pytest.mark.parametrize("f", [powers_of_items, powers_of_parts])
def test_an_int_exponent_of_a_negative_base_in_a_loop(f):
    x = np.array([0.5, -0.7])
    np.testing.assert_allclose(s2sad.hessian(f)(x), fd_hessian(f, x), atol=1e-5)
    np.testing.assert_allclose(s2sad.grad(f)(x), fd_grad(f, x), rtol=1e-7)


def second_power(x, n):
    return np.sum((x ** n)[1:])        # (the cotangent of x[0] ** n is zero)


def test_a_zero_cotangent_at_a_negative_base_gives_nothing_to_the_exponent():
    x, n = np.array([-0.5, 1.3, 2.0]), 2.0
    got = s2sad.grad(second_power, wrt=1)(x, n)
    expected = fd_grad(lambda m: second_power(x, m[0]), np.array([n]))[0]
    assert got == pytest.approx(expected, rel=1e-7)


def moving_exponent(x):
    return np.sum(np.power(x, 2.0 * x[0]))


def test_the_exponent_moved_at_a_negative_base_is_nan():
    # (NumPy's powers of a negative base are NaN off the integers, and so are its
    # central differences in the exponent; not a raw math domain error, nor a number)
    x = np.array([1.5, -1.0])
    got = s2sad.grad(moving_exponent)(x)
    assert np.isnan(fd_grad(moving_exponent, x)[0]) and np.isnan(got[0])
    assert got[1] == pytest.approx(fd_grad(moving_exponent, x)[1], rel=1e-7)
    assert math.isnan(s2sad.grad(math.pow, wrt=1)(-2.0, 2.0))
