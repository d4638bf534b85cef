"""np.fft (s2sad/rules/fft.py): real losses of each transform against central
differences, in reverse and forward mode and to second order.

Autograd's tests/test_fft.py, rewritten: the same transforms, keywords and shapes
(`n=` smaller and bigger than the length, `s=` and `axes=`, `norm=`, rfft and irfft of
even and odd lengths, the shifts), each inside a real loss that weighs every bin
differently (`|y + c| ** 3`), so that a wrong adjoint of any one bin shows. The
complex arguments of the inverse transforms of real data (irfft's Hermitian half) are
made from real parameters, `x[..., :k] + 1j * x[..., k:]`. Second order: the Hessian
times a direction (forward over reverse) against central differences of the
finite-difference gradient.
"""
import importlib.util
import inspect

import numpy as np
import pytest

import s2sad
from numpy_cases import compare, fd_array_grad, fd_hessian

C = 0.3 + 0.2j       # (an offset: |y + C| ** 3 is smooth where y is not 0)


def loss_fft(x):
    return np.sum(np.abs(np.fft.fft(x) + C) ** 3)


def loss_fft_ortho(x):
    return np.sum(np.abs(np.fft.fft(x, norm="ortho") + C) ** 3)


def loss_fft_forward(x):
    return np.sum(np.abs(np.fft.fft(x, norm="forward") + C) ** 3)


def loss_fft_axis(x):
    return np.sum(np.abs(np.fft.fft(x, axis=0) + C) ** 3)


def loss_fft_n_smaller(x):
    return np.sum(np.abs(np.fft.fft(x, 3) + C) ** 3)


def loss_fft_n_bigger(x):
    return np.sum(np.abs(np.fft.fft(x, 7) + C) ** 3)


def loss_ifft(x):
    return np.sum(np.abs(np.fft.ifft(x) + C) ** 3)


def loss_ifft_ortho(x):
    return np.sum(np.abs(np.fft.ifft(x, norm="ortho") + C) ** 3)


def loss_ifft_n_smaller(x):
    return np.sum(np.abs(np.fft.ifft(x, 3) + C) ** 3)


def loss_ifft_n_bigger(x):
    return np.sum(np.abs(np.fft.ifft(x, 7, axis=0, norm="forward") + C) ** 3)


def loss_fft_of_complex(x):
    return np.sum(np.abs(np.fft.fft(x[:, :3] * np.exp(1j * x[:, 3:])) + C) ** 3)


def loss_rfft(x):
    return np.sum(np.abs(np.fft.rfft(x) + C) ** 3)


def loss_rfft_ortho(x):
    return np.sum(np.abs(np.fft.rfft(x, norm="ortho") + C) ** 3)


def loss_rfft_axis(x):
    return np.sum(np.abs(np.fft.rfft(x, axis=0, norm="forward") + C) ** 3)


def loss_rfft_n_smaller(x):
    return np.sum(np.abs(np.fft.rfft(x, 2) + C) ** 3)


def loss_rfft_n_bigger(x):
    return np.sum(np.abs(np.fft.rfft(x, 6) + C) ** 3)


def loss_rfft_n_odd(x):
    return np.sum(np.abs(np.fft.rfft(x, 5) + C) ** 3)


def loss_irfft(x):
    return np.sum((np.fft.irfft(x[:, :3] + 1j * x[:, 3:]) + 0.3) ** 3)


def loss_irfft_ortho(x):
    return np.sum((np.fft.irfft(x[:, :3] + 1j * x[:, 3:], norm="ortho") + 0.3) ** 3)


def loss_irfft_n_smaller(x):
    return np.sum((np.fft.irfft(x[:, :3] + 1j * x[:, 3:], 2) + 0.3) ** 3)


def loss_irfft_n_bigger(x):
    return np.sum((np.fft.irfft(x[:, :3] + 1j * x[:, 3:], 6) + 0.3) ** 3)


def loss_irfft_n_odd(x):
    return np.sum((np.fft.irfft(x[:, :3] + 1j * x[:, 3:], 5, norm="forward") + 0.3) ** 3)


def loss_irfft_n_odd_smaller(x):
    return np.sum((np.fft.irfft(x[:, :3] + 1j * x[:, 3:], 3, axis=0) + 0.3) ** 3)


def loss_irfft_vector(x):
    return np.sum((np.fft.irfft(x[:3] + 1j * x[3:]) + 0.3) ** 3)


def loss_irfft_vector_odd(x):
    return np.sum((np.fft.irfft(x[:3] + 1j * x[3:], 5) + 0.3) ** 3)


def loss_irfft_of_real(x):
    return np.sum((np.fft.irfft(x, 7) + 0.3) ** 3)


def loss_round_trip(x):
    return np.sum((np.fft.irfft(np.fft.rfft(x) * np.exp(-0.5j * np.arange(3.0)), 4)) ** 4)


S, AXES = [7, 3], [0, 2]       # (autograd's: the first axis padded, the last cropped)


def loss_fft2(x):
    return np.sum(np.abs(np.fft.fft2(x) + C) ** 3)


def loss_fft2_s(x):
    return np.sum(np.abs(np.fft.fft2(x, s=S, axes=AXES) + C) ** 3)


def loss_ifft2(x):
    return np.sum(np.abs(np.fft.ifft2(x, norm="ortho") + C) ** 3)


def loss_ifft2_s(x):
    return np.sum(np.abs(np.fft.ifft2(x, s=S, axes=AXES) + C) ** 3)


def loss_fftn(x):
    return np.sum(np.abs(np.fft.fftn(x) + C) ** 3)


def loss_fftn_s(x):
    return np.sum(np.abs(np.fft.fftn(x, s=S, axes=AXES, norm="forward") + C) ** 3)


def loss_ifftn(x):
    return np.sum(np.abs(np.fft.ifftn(x) + C) ** 3)


def loss_ifftn_s(x):
    return np.sum(np.abs(np.fft.ifftn(x, s=S, axes=AXES) + C) ** 3)


def loss_fftn_repeated_axis(x):
    return np.sum(np.abs(np.fft.fftn(x, s=[7, 3], axes=[0, 0]) + C) ** 3)


def loss_rfft2(x):
    return np.sum(np.abs(np.fft.rfft2(x) + C) ** 3)


def loss_rfft2_s(x):
    return np.sum(np.abs(np.fft.rfft2(x, s=[6, 3], axes=AXES) + C) ** 3)


def loss_rfftn(x):
    return np.sum(np.abs(np.fft.rfftn(x) + C) ** 3)


def loss_rfftn_odd(x):
    return np.sum(np.abs(np.fft.rfftn(x) + C) ** 3)


def loss_rfftn_axes(x):
    return np.sum(np.abs(np.fft.rfftn(x, axes=(0, 2)) + C) ** 3)


def loss_rfftn_subset(x):
    return np.sum(np.abs(np.fft.rfftn(x)[(0, 1, 0), (3, 3, 2)] + C) ** 3)


def loss_irfft2(x):
    return np.sum((np.fft.irfft2(x[:, :, :3] + 1j * x[:, :, 3:]) + 0.3) ** 3)


def loss_irfft2_s(x):
    return np.sum((np.fft.irfft2(x[:, :, :3] + 1j * x[:, :, 3:], s=[6, 5], axes=AXES)
                   + 0.3) ** 3)


def loss_irfftn(x):
    return np.sum((np.fft.irfftn(x[:, :, :3] + 1j * x[:, :, 3:]) + 0.3) ** 3)


def loss_irfftn_subset(x):
    return np.sum((np.fft.irfftn(x[:, :, :3] + 1j * x[:, :, 3:])[(0, 1, 0), (3, 3, 2)]
                   + 0.3) ** 3)


def loss_fftshift(x):
    return np.sum(np.fft.fftshift(x) * np.arange(x.size).reshape(x.shape) + x ** 3)


def loss_fftshift_axes(x):
    return np.sum(np.fft.fftshift(x, axes=1) * np.arange(x.size).reshape(x.shape))


def loss_ifftshift(x):
    return np.sum(np.fft.ifftshift(x) * np.arange(x.size).reshape(x.shape) + x ** 3)


def loss_ifftshift_axes(x):
    return np.sum(np.fft.ifftshift(x, axes=1) * np.arange(x.size).reshape(x.shape))


def loss_shifted_spectrum(x):
    return np.sum(np.abs(np.fft.fftshift(np.fft.fft(x)) * np.arange(x.size) + C) ** 3)


#: (loss, shape of its argument)
CASES = [
    (loss_fft, (5, 5)), (loss_fft_ortho, (5, 5)), (loss_fft_forward, (5, 5)),
    (loss_fft_axis, (5, 5)), (loss_fft_n_smaller, (5, 5)), (loss_fft_n_bigger, (5, 5)),
    (loss_ifft, (5, 5)), (loss_ifft_ortho, (5, 5)), (loss_ifft_n_smaller, (5, 5)),
    (loss_ifft_n_bigger, (5, 5)), (loss_fft_of_complex, (3, 6)),
    (loss_rfft, (4, 4)), (loss_rfft_ortho, (4, 4)), (loss_rfft_axis, (4, 4)),
    (loss_rfft_n_smaller, (4, 4)), (loss_rfft_n_bigger, (4, 4)), (loss_rfft_n_odd, (4, 4)),
    (loss_rfft, (3, 5)),
    (loss_irfft, (4, 6)), (loss_irfft_ortho, (4, 6)), (loss_irfft_n_smaller, (4, 6)),
    (loss_irfft_n_bigger, (4, 6)), (loss_irfft_n_odd, (4, 6)),
    (loss_irfft_n_odd_smaller, (4, 6)), (loss_irfft_vector, (6,)),
    (loss_irfft_vector_odd, (6,)), (loss_irfft_of_real, (3, 4)),
    (loss_round_trip, (4,)),
    (loss_fft2, (5, 5)), (loss_fft2_s, (5, 5, 5)), (loss_ifft2, (5, 5)),
    (loss_ifft2_s, (5, 5, 5)), (loss_fftn, (5, 5)), (loss_fftn_s, (5, 5, 5)),
    (loss_ifftn, (5, 5)), (loss_ifftn_s, (5, 5, 5)), (loss_fftn_repeated_axis, (5, 4)),
    (loss_rfft2, (4, 4)), (loss_rfft2_s, (4, 4, 4)), (loss_rfftn, (4, 4, 4)),
    (loss_rfftn_odd, (5, 5, 5)), (loss_rfftn_axes, (4, 4, 4)), (loss_rfftn_subset, (4, 4, 4)),
    (loss_irfft2, (2, 4, 6)), (loss_irfft2_s, (4, 3, 6)), (loss_irfftn, (4, 4, 6)),
    (loss_irfftn_subset, (4, 4, 6)),
    (loss_fftshift, (5, 5)), (loss_fftshift, (4, 4)), (loss_fftshift_axes, (5, 5)),
    (loss_ifftshift, (5, 5)), (loss_ifftshift, (4, 4)), (loss_ifftshift_axes, (5, 5)),
    (loss_shifted_spectrum, (6,)),
]
IDS = [f"{f.__name__[5:]}-{'x'.join(map(str, shape))}" for f, shape in CASES]


def point(shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape) / 2


def assert_close(actual, expected, rtol=1e-6, atol=1e-8):
    assert not np.iscomplexobj(actual), actual
    problem = compare(actual, expected, rtol, atol, "derivative")
    assert problem is None, problem


@pytest.mark.parametrize("f, shape", CASES, ids=IDS)
def test_reverse_and_forward(f, shape):
    """grad, value_and_grad, vjp and jvp against central differences."""
    x, v = point(shape), point(shape, 1)
    expected = fd_array_grad(f, (x,), 0)
    assert_close(s2sad.grad(f)(x), expected)
    value, g = s2sad.value_and_grad(f)(x)
    assert_close(value, f(x))
    assert_close(g, expected)
    assert_close(s2sad.vjp(f, x)[1](1.0)[0], expected)
    y, t = s2sad.jvp(f, (x,), (v,))
    assert_close(y, f(x))
    assert_close(t, np.sum(expected * v))


@pytest.mark.parametrize("f, shape", CASES, ids=IDS)
def test_second_order(f, shape):
    """The Hessian times a direction (forward over reverse) against central differences
    of the finite-difference gradient along it."""
    x, v = point(shape), point(shape, 1)
    h = 1e-4
    expected = (fd_array_grad(f, (x + h * v,), 0) - fd_array_grad(f, (x - h * v,), 0)) / (2 * h)
    assert_close(s2sad.hvp(f)(x, v), expected, rtol=1e-5,
                 atol=1e-6 * max(1.0, np.max(np.abs(expected))))


@pytest.mark.parametrize("f, shape", [(loss_rfft_n_odd, (5,)), (loss_irfft_vector, (6,)),
                                      (loss_irfft_vector_odd, (6,))])
def test_hessian(f, shape):
    """The whole Hessian of rfft and irfft of vectors, against central differences of
    central differences."""
    x = point(shape)
    assert_close(s2sad.hessian(f)(x), fd_hessian(f, x), rtol=1e-4, atol=1e-6)


grad_rfft = s2sad.grad(loss_rfft_n_odd)
grad_irfft = s2sad.grad(loss_irfft_n_odd)


def step_rfft(x):
    return loss_rfft_n_odd(x - 0.01 * grad_rfft(x))


def step_irfft(x):
    return loss_irfft_n_odd(x - 0.01 * grad_irfft(x))


@pytest.mark.parametrize("f, shape", [(step_rfft, (3, 4)), (step_irfft, (2, 6))],
                         ids=["rfft", "irfft"])
def test_reverse_over_reverse(f, shape):
    """The gradient of a gradient step (reverse mode over the gradient code, through the
    transforms' adjoints and their transposes) against central differences."""
    x = point(shape)
    assert_close(s2sad.grad(f)(x), fd_array_grad(f, (x,), 0), rtol=1e-5, atol=1e-7)


@pytest.mark.skipif(importlib.util.find_spec("numba") is None, reason="Numba is not installed")
def test_numba_backend_refuses():
    """The numba backend compiles no complex code: refused, naming the line."""
    with pytest.raises(s2sad.errors.NativeBackendError) as caught:
        s2sad.grad(loss_fft, backend="numba")(point((5, 5)))
    lines, start = inspect.getsourcelines(loss_fft)
    assert str(caught.value).startswith(f"{__file__}:{start + 1}: "), caught.value
