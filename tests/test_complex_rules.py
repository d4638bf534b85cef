"""The rules of complex values (s2sad/rules/complex_numbers.py, docs/complex.md), each
against central differences, in reverse and forward mode and to second order.

The convention is autograd's (and JAX's): for a real `f` of a complex `z = x + iy`,
`grad(f)(z)` is `df/dx - i df/dy`, which the oracle `fd_complex_grad` computes by central
differences along the real and the imaginary axis. `jvp(f, (z,), (v,))` is the derivative
along the complex direction `v` (`(f(z + hv) - f(z - hv)) / 2h`), which is
`Re(grad(f)(z) * v)`. Second order: the derivative of the gradient along `v`, forward
mode over the gradient code, against central differences of `fd_complex_grad`. With
`holomorphic=True`, `grad` of a complex `f` is `f'(z)`, the difference quotient along the
real axis. Autograd's own tests/test_complex.py is rewritten at the top.
"""
import cmath
import inspect

import numpy as np
import pytest

import s2sad
from s2sad import ComplexValueError
from numpy_cases import fd_array_grad, fd_hessian


def fd_complex_grad(f, z, h=1e-6):
    """`df/dx - i df/dy` of a real `f` at the complex number `z`, by central differences:
    autograd's convention for the gradient with respect to a complex number."""
    dx = (f(z + h) - f(z - h)) / (2 * h)
    dy = (f(z + 1j * h) - f(z - 1j * h)) / (2 * h)
    return dx - 1j * dy


def fd_along(f, z, v, h=1e-6):
    """The derivative of `f` at `z` along the direction `v`, by central differences."""
    return (f(z + h * v) - f(z - h * v)) / (2 * h)


def close(actual, expected, rtol=1e-6, atol=1e-8):
    assert np.allclose(actual, expected, rtol=rtol, atol=atol), (actual, expected)


def check_complex_argument(f, z, second=True):
    """`f`, real, of the complex number `z`: grad, value_and_grad, vjp and jvp along 1 and
    i against central differences; with `second`, the derivative of the gradient along
    1 and i (forward over reverse) against central differences of the oracle."""
    expected = fd_complex_grad(f, z)
    got = s2sad.grad(f)(z)
    close(got, expected)
    assert np.iscomplexobj(got)
    value, g = s2sad.value_and_grad(f)(z)
    close(value, f(z))
    close(g, expected)
    close(s2sad.vjp(f, z)[1](1.0)[0], expected)
    for v in (1.0 + 0j, 1j, 0.6 - 0.8j):
        y, t = s2sad.jvp(f, (z,), (v,))
        close(y, f(z))
        close(t, fd_along(f, z, v))
        close(t, np.real(expected * v))
    if second:
        for v in (1.0 + 0j, 1j):
            _, t = s2sad.jvp(s2sad.grad(f), (z,), (v,))
            close(t, fd_along(lambda u: fd_complex_grad(f, u, 1e-5), z, v, 1e-4),
                  rtol=1e-4, atol=1e-6)


# -- autograd's tests/test_complex.py, rewritten -------------------------------------------
def real_sum(x):
    return np.sum(np.real(x))


def real_if_close_sum(x):
    return np.sum(np.real(np.real_if_close(x)))


def angle(x):
    return np.angle(x)


def modulus(x):
    return np.abs(x)


@pytest.mark.parametrize("f", [real_sum, real_if_close_sum])
def test_real_type(f):
    """The gradient with respect to a real number is real, with respect to a complex
    number complex (autograd's test_real_type and test_real_if_close_type)."""
    df = s2sad.grad(f)
    assert np.isrealobj(df(2.0)) and df(2.0) == 1.0
    assert np.iscomplexobj(df(1.0j)) and df(1.0j) == 1.0


@pytest.mark.filterwarnings("ignore:.*does not depend on")    # (np.angle: 0 or pi)
@pytest.mark.parametrize("f", [angle, modulus])
def test_of_real(f):
    """np.angle and np.abs of a real number, and their second derivatives (autograd's
    test_angle_real and test_abs_real)."""
    for x in (0.37, 1.1, -2.1):
        close(s2sad.grad(f)(x), (f(x + 1e-6) - f(x - 1e-6)) / 2e-6)
        close(s2sad.hessian(f)(x), 0.0)


@pytest.mark.parametrize("f", [angle, modulus])
def test_of_complex(f):
    """np.angle and np.abs of a complex number, to second order (autograd's
    test_angle_complex and test_abs_complex)."""
    for z in (0.37 + 0.81j, 1.1 + 1.3j, -0.4 - 1.2j):
        check_complex_argument(f, z)


# -- each rule, of a complex argument ------------------------------------------------------
def arithmetic(z):
    w = (z * z - 3.0 * z + 1.0) / (z + 2.0j) - z ** 3 + (-z) * 0.5
    return np.real(w) + 2.0 * np.imag(w)


def conjugates(z):
    return np.real(z * np.conj(z + 1.0) + (z * 1j).conjugate() * 0.3) + np.conjugate(z).imag


def attributes(z):
    return z.real * z.imag + z.real ** 2


def python_abs(z):
    return abs(z * z + 1.0) + abs(z) ** 3


def powers(z):
    return np.real(z ** 2.5) + np.imag(z ** (0.5 + 0.25j)) + abs(2.0 ** z)


def elementwise(z):
    return np.real(np.exp(z) + np.log(z) + np.sqrt(z) + np.square(z)) + np.imag(
        np.sin(z) + np.cos(z) + np.tan(z) + np.sinh(z) + np.cosh(z) + np.tanh(z))


def with_cmath(z):
    w = cmath.exp(z) + cmath.log(z) + cmath.sqrt(z) + cmath.sin(z) * cmath.cos(z)
    return w.real + cmath.tanh(z).imag + cmath.phase(z * z)


def made_from_parts(z):
    w = complex(z.real * 2.0, z.imag - z.real)
    return abs(w) ** 2 + np.angle(np.complex128(w) + 1.0)


RULES = [arithmetic, conjugates, attributes, python_abs, powers, elementwise, with_cmath,
         made_from_parts]


@pytest.mark.parametrize("f", RULES, ids=[f.__name__ for f in RULES])
def test_rules_of_complex_argument(f):
    for z in (0.7 + 0.4j, 1.3 - 0.6j):
        check_complex_argument(f, z)


# -- complex intermediates of real parameters, arrays -------------------------------------
H = np.array([[1.0, 0.5 - 0.2j], [0.5 + 0.2j, -1.0]])


def qubit(theta):
    """The expectation of a Hermitian H in cos(a)|0> + e^(ib) sin(a)|1>."""
    psi = np.array([np.cos(theta[0]), np.exp(1j * theta[1]) * np.sin(theta[0])])
    return np.real(psi.conj() @ H @ psi)


def spectrum(x):
    z = x[:3] + 1j * x[3:]
    w = np.exp(1j * np.arange(3.0)) * z
    return np.sum(np.abs(w) ** 2) + np.real(np.dot(z, w)) + np.imag(np.sum(z * w))


def matrices(x):
    a = np.reshape(x[:4], (2, 2)) + 1j * np.reshape(x[4:], (2, 2))
    b = a @ a.conj().T + np.transpose(a) @ H
    return np.real(np.trace(b)) + np.sum(np.abs(np.matmul(a, H))) + np.mean(np.angle(a))


def wave(x):
    return np.sum(np.abs(np.exp(1j * x) * x + 0.3))


ARRAYS = [(qubit, np.array([0.3, 0.7])), (spectrum, np.array([0.4, -0.3, 1.1, 0.8, 0.5, -0.9])),
          (matrices, np.array([0.3, -0.7, 1.1, 0.2, 0.5, 0.4, -0.6, 0.9])),
          (wave, np.array([0.3, 0.7, 1.1]))]


@pytest.mark.parametrize("f, x", ARRAYS, ids=[c[0].__name__ for c in ARRAYS])
def test_complex_intermediates_of_real_arrays(f, x):
    """A real loss through complex arrays made from real parameters: the gradient, the
    tangent and the Hessian."""
    expected = fd_array_grad(f, (x,), 0)
    got = s2sad.grad(f)(x)
    assert np.isrealobj(got)
    close(got, expected)
    v = np.linspace(-1.0, 1.0, x.size)
    close(s2sad.jvp(f, (x,), (v,))[1], expected @ v)
    close(s2sad.hessian(f)(x), fd_hessian(f, x), rtol=1e-4, atol=1e-6)


# -- holomorphic functions ---------------------------------------------------------------
def square_sine(z):
    return z * z + cmath.sin(z) / (z + 1.0)


def exp_log(z):
    return np.exp(z) * np.log(z) - z ** 3


@pytest.mark.parametrize("f", [square_sine, exp_log])
def test_holomorphic(f):
    """grad(f, holomorphic=True) is f'(z) (as JAX's), which for a holomorphic f is the
    difference quotient along the real axis, and along the imaginary one divided by i."""
    for z in (0.7 + 0.4j, -1.3 + 0.6j):
        expected = fd_along(f, z, 1.0)
        close(expected, fd_along(f, z, 1j) / 1j, rtol=1e-5)
        close(s2sad.grad(f, holomorphic=True)(z), expected)
        value, g = s2sad.value_and_grad(f, holomorphic=True)(z)
        close(value, f(z))
        close(g, expected)
        close(s2sad.jvp(f, (z,), (1.0,))[1], expected)
        close(s2sad.jacfwd(f, holomorphic=True)(z), expected)
        close(s2sad.jacrev(f, holomorphic=True)(z), expected)


def several(z):
    return np.array([z * z, np.exp(z) / z, 3.0 * z - 1j])


def test_holomorphic_jacobians():
    """jacfwd and jacrev with holomorphic=True: the derivatives of each output."""
    z = 0.7 + 0.4j
    expected = fd_along(several, z, 1.0)
    close(s2sad.jacfwd(several, holomorphic=True)(z), expected)
    close(s2sad.jacrev(several, holomorphic=True)(z), expected)


def test_complex_output_of_real_argument():
    """The tangent and the forward Jacobian of a complex function of a real number."""
    def phasor(x):
        return np.array([np.exp(1j * x), x * (2.0 - 1j)])
    expected = fd_along(phasor, 0.3, 1.0)
    close(s2sad.jvp(phasor, (0.3,), (1.0,))[1], expected)
    close(s2sad.jacfwd(phasor)(0.3), expected)


def test_complex_output_needs_holomorphic():
    with pytest.raises(ComplexValueError) as caught:
        s2sad.grad(square_sine)(0.7 + 0.4j)
    lines, start = inspect.getsourcelines(square_sine)
    assert str(caught.value).startswith(f"{__file__}:{start + 1}: the function returns a "
                                        "complex value"), caught.value
    assert "holomorphic=True" in str(caught.value)


def test_holomorphic_needs_complex_arguments():
    for transform in (s2sad.grad, s2sad.jacfwd, s2sad.jacrev):
        with pytest.raises(s2sad.S2SADError, match="pass complex"):
            transform(square_sine, holomorphic=True)(0.7)


# -- what stays refused --------------------------------------------------------------------
def test_complex_argument_second_order_refused():
    """hessian, jacfwd and jacrev (without holomorphic=True) of complex numbers and
    arrays are refused, not computed with the real direction alone."""
    for transform in (s2sad.hessian, s2sad.jacfwd, s2sad.jacrev):
        with pytest.raises(ComplexValueError, match="argument 0 of modulus"):
            transform(modulus)(0.3 + 0.4j)
    with pytest.raises(ComplexValueError, match="with holomorphic=True, only"):
        s2sad.hessian(real_sum)(np.array([1.0 + 2.0j]))
