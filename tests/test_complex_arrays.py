"""Complex ndarray arguments (issue #40): `grad`, `value_and_grad`, `vjp`, `jvp`, `hvp`,
and `grad`, `jacfwd`, `jacrev` with `holomorphic=True`, each against central
differences.

The oracle of a real `f` of a complex array `z` is `fd_grad`: for each element k,
`df/dx_k - i df/dy_k`, central differences of `f(z + h e_k)` and `f(z + i h e_k)`
(autograd's convention, docs/complex.md, elementwise). `jvp` along a complex direction
`v` is `(f(z + hv) - f(z - hv)) / 2h`; second order is the derivative of the gradient
along `v` (`hvp`, and `jvp` over `grad`), against central differences of `fd_grad`.

Autograd's own complex tests, rewritten with complex ARRAY inputs: tests/test_complex.py
(the type of the gradient, np.angle and np.abs to second order), tests/numpy_utils.py's
complex cases (unary and binary ufuncs, statistics with axis and keepdims),
tests/test_graphs.py's two complex tests, tests/test_linalg.py's complex norms, and
tests/test_fft.py's transforms (reusing tests/test_fft.py's losses, now of complex
arrays).
"""
import importlib.util
import inspect
import operator

import numpy as np
import pytest

import s2sad
from s2sad import ComplexValueError
import test_fft as fft_cases

HAS_NUMBA = importlib.util.find_spec("numba") is not None
C = 0.3 + 0.2j      # (an offset: |w + C| ** 3 is smooth where w is not 0)


def point(shape, seed=0, scale=0.5):
    """A complex array of `shape`, no element near 0 in either part by chance alone."""
    rng = np.random.default_rng(seed)
    return scale * (rng.normal(size=shape) + 1j * rng.normal(size=shape))


def fd_grad(f, z, h=1e-6):
    """`df/dx - i df/dy`, elementwise, of a real `f` at the complex array `z`, by central
    differences along the real and the imaginary direction of each element."""
    out = np.empty(z.shape, dtype=complex)
    for k in np.ndindex(z.shape):
        e = np.zeros(z.shape)
        e[k] = 1.0
        dx = (f(z + h * e) - f(z - h * e)) / (2 * h)
        dy = (f(z + 1j * h * e) - f(z - 1j * h * e)) / (2 * h)
        out[k] = dx - 1j * dy
    return out


def fd_along(f, z, v, h=1e-6):
    """The derivative of `f` at `z` along the direction `v`, by central differences."""
    return (f(z + h * v) - f(z - h * v)) / (2 * h)


def close(actual, expected, rtol=1e-6, atol=1e-8):
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    assert np.allclose(actual, expected, rtol=rtol, atol=atol), (actual, expected)


def check(f, z, second=True, rtol=1e-6, atol=1e-8):
    """Real `f` of the complex array `z`: grad, value_and_grad, vjp, and jvp along a
    complex direction against central differences; with `second`, the derivative of the
    gradient along complex directions (hvp, and jvp over grad) against central
    differences of the oracle."""
    expected = fd_grad(f, z)
    got = s2sad.grad(f)(z)
    assert got.dtype == z.dtype, got.dtype
    close(got, expected, rtol, atol)
    value, g = s2sad.value_and_grad(f)(z)
    close(value, f(z))
    close(g, expected, rtol, atol)
    close(s2sad.vjp(f, z)[1](1.0)[0], expected, rtol, atol)
    v = point(z.shape, seed=1)
    y, t = s2sad.jvp(f, (z,), (v,))
    close(y, f(z))
    close(t, fd_along(f, z, v), rtol, atol)
    close(t, np.sum(np.real(expected * v)), rtol, atol)
    if second:
        for v in (point(z.shape, seed=2), np.ones(z.shape) * 1j):
            hv = fd_along(lambda u: fd_grad(f, u, 1e-5), z, v, 1e-4)
            tol = dict(rtol=1e-4, atol=1e-6 * max(1.0, np.max(np.abs(hv))))
            close(s2sad.hvp(f)(z, v), hv, **tol)
            close(s2sad.jvp(s2sad.grad(f), (z,), (v,))[1], hv, **tol)


# -- autograd's tests/test_complex.py, of complex arrays -----------------------------------
def real_sum(x):
    return np.sum(np.real(x))


def real_if_close_sum(x):
    return np.sum(np.real(np.real_if_close(x)))


@pytest.mark.parametrize("f", [real_sum, real_if_close_sum])
def test_real_type(f):
    """The gradient with respect to a real array is real, with respect to a complex one
    complex (autograd's test_real_type and test_real_if_close_type)."""
    df = s2sad.grad(f)
    assert df(np.array([2.0, 1.0])).dtype == np.float64
    got = df(np.array([1.0j, 2.0 + 1.0j]))
    assert got.dtype == np.complex128
    close(got, np.ones(2))


def angles(x):
    return np.sum(np.angle(x) * np.arange(1.0, x.size + 1).reshape(x.shape))


def moduli(x):
    return np.sum(np.abs(x) * np.arange(1.0, x.size + 1).reshape(x.shape))


@pytest.mark.parametrize("f", [angles, moduli])
def test_angle_and_abs_of_complex(f):
    """np.angle and np.abs of complex arrays, to second order (autograd's
    test_angle_complex and test_abs_complex)."""
    check(f, point((2, 3)))


# -- autograd's tests/test_graphs.py -----------------------------------------------------
def separate_parts(a):
    r, i = np.real(a), np.imag(a)
    a = np.abs(r) ** 1.4 + np.abs(i) ** 1.3
    return np.sum(np.sin(a))


def from_indexing(a):
    b = a + 1.0j
    c = b[0] + 1.5
    d = a + b
    e = d + c
    return np.sum(np.sin(np.real(e) * np.imag(e)))


@pytest.mark.parametrize("f", [separate_parts, from_indexing])
def test_graphs(f):
    """autograd's test_complex_separate_real_and_imaginary (a 5x3 complex array) and
    test_complex_mutating_outgrad_from_indexing (of a complex array here)."""
    check(f, point((5, 3), seed=3))


# -- autograd's unary and binary ufunc checks, complex cases ------------------------------
UNARY = {
    "exp": np.exp, "log": np.log, "sqrt": np.sqrt, "square": np.square, "sin": np.sin,
    "cos": np.cos, "tan": np.tan, "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh,
    "conj": np.conj, "negative": np.negative, "real": np.real, "imag": np.imag,
    "abs": np.abs, "angle": np.angle,
}


@pytest.mark.parametrize("name", list(UNARY))
def test_unary(name):
    """Each elementwise function of a complex 3x2 array, in a real loss that weighs each
    element differently."""
    fn = UNARY[name]

    def loss(z):
        return np.sum(np.abs(fn(z) + C) ** 3)
    check(loss, point((3, 2), seed=4) + 0.8)


BINARY = [operator.add, operator.sub, operator.mul, operator.truediv, operator.pow,
          np.subtract, np.multiply]
OTHERS = {"complex number": 0.6 + 0.3j, "real array": np.array([[0.4, 0.9]]),
          "complex array": point((3, 2), seed=5) + 1.0}


@pytest.mark.parametrize("other", list(OTHERS))
@pytest.mark.parametrize("op", BINARY, ids=[f.__name__ for f in BINARY])
def test_binary(op, other):
    """Each binary operation of a complex 3x2 array with a complex number, a real array
    that broadcasts, and another complex array, on either side."""
    b = OTHERS[other]
    z = point((3, 2), seed=6) + 1.0
    check(lambda a: np.sum(np.abs(op(a, b) + C) ** 3), z)
    check(lambda a: np.sum(np.abs(op(b, a) + C) ** 3), z)


def test_two_complex_arguments():
    """The gradient with respect to two complex arrays at once."""
    def f(a, b):
        return np.sum(np.abs(a * b - a / b) ** 2)
    a, b = point((3,), seed=7) + 1.0, point((3,), seed=8) + 1.0
    ga, gb = s2sad.grad(f, wrt=(0, 1))(a, b)
    close(ga, fd_grad(lambda u: f(u, b), a))
    close(gb, fd_grad(lambda u: f(a, u), b))


def stat_sum(e):
    return np.abs(np.sum(e) + C) ** 3


def stat_mean(e):
    return np.abs(np.mean(e) + C) ** 3


def stat_sum_axis(e):
    return np.sum(np.abs(np.sum(e, axis=0) + C) ** 3)


def stat_mean_axis(e):
    return np.sum(np.abs(np.mean(e, axis=1) + C) ** 3)


def stat_sum_keepdims(e):
    return np.sum(np.abs(np.sum(e, axis=0, keepdims=True) + C) ** 3)


def stat_mean_keepdims(e):
    return np.sum(np.abs(np.mean(e, axis=None, keepdims=True) + C) ** 3)


def stat_trace(e):
    return np.abs(np.trace(e) + C) ** 3


def product_transpose(e):
    return np.sum(np.abs(np.transpose(e) @ e + C) ** 3)


def product_dot(e):
    return np.abs(np.dot(e[0], e[1]) + C) ** 3


def product_inner(e):
    return np.sum(np.abs(np.inner(e, e) + C) ** 3)


def product_outer(e):
    return np.sum(np.abs(np.outer(e[0], e[1]) + C) ** 3)


def product_matmul(e):
    return np.sum(np.abs(np.matmul(e.T, e) + C) ** 3)


STATS = [stat_sum, stat_mean, stat_sum_axis, stat_mean_axis, stat_sum_keepdims,
         stat_mean_keepdims, stat_trace, product_transpose, product_dot, product_inner,
         product_outer, product_matmul]


@pytest.mark.parametrize("f", STATS, ids=[f.__name__ for f in STATS])
def test_statistics_and_products(f):
    """Reductions with axis and keepdims (autograd's stat_check, its complex 2x3 array),
    and products of complex arrays."""
    check(f, point((2, 3), seed=9))


# -- moves, sums and products of complex arrays -------------------------------------------
def move_copy(z):
    return np.sum(np.abs(np.copy(z) + z.copy() + C) ** 3)


def move_where(z):
    return np.sum(np.abs(np.where(np.abs(z) > 0.6, z, 2 * z) + C) ** 3)


def move_cumsum(z):
    return np.sum(np.abs(np.cumsum(z, axis=0) + np.cumsum(z).reshape(z.shape) + C) ** 3)


def move_cumprod(z):
    return np.sum(np.abs(np.cumprod(z, axis=1) + C) ** 3)


def move_prod(z):
    return np.sum(np.abs(np.prod(z, axis=0) + C) ** 3) + np.abs(np.prod(z) + C) ** 3


def move_reciprocal(z):
    return np.sum(np.abs(np.reciprocal(z) + C) ** 3)


def move_diff(z):
    return np.sum(np.abs(np.diff(z, axis=1) + C) ** 3)


def move_flip(z):
    return np.sum(np.abs(np.flip(z, 0) * np.fliplr(z) * np.rot90(z, 2) + C) ** 3)


def move_roll(z):
    return np.sum(np.abs(np.roll(z, 1, axis=1) * z + C) ** 3)


def move_axes(z):
    w = np.moveaxis(np.expand_dims(z, 0), 0, 2)
    return np.sum(np.abs(np.squeeze(w) + np.atleast_2d(z[0]) + C) ** 3)


def move_diagonals(z):
    return np.sum(np.abs(np.diag(z[:, :3]) * np.diag(np.diag(z[:, :3]))[0]
                         + np.diagonal(z) + C) ** 3)


def move_tiles(z):
    return np.sum(np.abs(np.tile(z, (2, 1)) + np.repeat(z, 2, axis=0)
                         + np.broadcast_to(z[0], (6, 4)) + C) ** 3)


def move_triangles(z):
    return np.sum(np.abs(np.triu(z) + 2 * np.tril(z, -1) + C) ** 3)


def move_stacks(z):
    return np.sum(np.abs(np.hstack([z, 2 * z]) + np.vstack([z, z * z]).reshape(3, 8)
                         + np.append(z, z).reshape(3, 8) + C) ** 3)


def move_methods(z):
    return np.sum(np.abs(z.reshape(4, 3).transpose().flatten() + z.transpose(1, 0).ravel()
                         + C) ** 3)


def move_pad(z):
    return np.sum(np.abs(np.pad(z, 1) + C) ** 3)


def product_einsum(z):
    return np.sum(np.abs(np.einsum("ij,kj->ik", z, z) + np.tensordot(z, z, axes=([1], [1]))
                         + C) ** 3)


def product_kron(z):
    return np.sum(np.abs(np.kron(z, z[:1]) + C) ** 3)


MOVES = [move_copy, move_where, move_cumsum, move_cumprod, move_prod, move_reciprocal,
         move_diff, move_flip, move_roll, move_axes, move_diagonals, move_tiles,
         move_triangles, move_stacks, move_methods, move_pad, product_einsum, product_kron]


@pytest.mark.parametrize("f", MOVES, ids=[f.__name__ for f in MOVES])
def test_moves_sums_and_products(f):
    """The rules of moves, cumulative sums and products, and contractions, whose
    adjoints are transposes (or holomorphic): complex arrays as arguments reach them."""
    check(f, point((3, 4), seed=21) + 0.4, rtol=1e-5, atol=1e-7)


# -- autograd's tests/test_linalg.py: complex norms ----------------------------------------
NORMS = {
    "vector 2-norm": (lambda x: np.linalg.norm(x), (6,)),
    "frobenius": (lambda x: np.linalg.norm(x), (6, 5)),
    "frobenius axis": (lambda x: np.sum(np.linalg.norm(x, axis=(0, 1)) ** 2), (4, 3, 2)),
    "ord 3": (lambda x: np.linalg.norm(x, ord=3), (6,)),
    "ord 4": (lambda x: np.linalg.norm(x, ord=4), (6,)),
    "axis 1": (lambda x: np.sum(np.linalg.norm(x, axis=1) ** 3), (4, 3, 2)),
    "matrix 1": (lambda x: np.linalg.norm(x, ord=1), (3, 3)),
}


@pytest.mark.parametrize("name", list(NORMS))
def test_norms(name):
    f, shape = NORMS[name]
    check(f, point(shape, seed=10))


# -- autograd's tests/test_fft.py, of complex arrays ---------------------------------------
FFT = [fft_cases.loss_fft, fft_cases.loss_fft_ortho, fft_cases.loss_fft_axis,
       fft_cases.loss_fft_n_smaller, fft_cases.loss_fft_n_bigger, fft_cases.loss_ifft,
       fft_cases.loss_ifft_n_bigger, fft_cases.loss_fft2, fft_cases.loss_ifft2,
       fft_cases.loss_fftn, fft_cases.loss_ifftn, fft_cases.loss_shifted_spectrum]


@pytest.mark.parametrize("f", FFT, ids=[f.__name__[5:] for f in FFT])
def test_fft_of_complex_arrays(f):
    """tests/test_fft.py's losses of the complex transforms, of complex arrays."""
    shape = (6,) if f is fft_cases.loss_shifted_spectrum else (4, 4)
    check(f, point(shape, seed=11), atol=1e-7)


# -- linear algebra of complex matrices ----------------------------------------------------
A = point((3, 3), seed=12) + 2.0 * np.eye(3)


def solve(a):
    return np.sum(np.abs(np.linalg.solve(a, np.array([1.0, 2j, -0.5]))) ** 2)


def solve_b(b):
    return np.sum(np.abs(np.linalg.solve(A, b)) ** 2)


def inverse(a):
    return np.sum(np.abs(np.linalg.inv(a) + C) ** 3)


def determinant(a):
    return np.abs(np.linalg.det(a)) ** 2


def log_determinant(a):
    sign, logdet = np.linalg.slogdet(a)
    return logdet + np.real(sign) * 0.5


def lowest_energy(a):
    return np.linalg.eigvalsh(a + np.conj(a.T))[0]


def singular_values(a):
    return np.sum(np.linalg.svd(a, compute_uv=False) ** 2 * np.array([1.0, 2.0, 3.0]))


@pytest.mark.parametrize("f", [solve, inverse, determinant, log_determinant])
def test_linalg(f):
    check(f, A, rtol=1e-5, atol=1e-7)


def test_solve_right_hand_side():
    check(solve_b, point((3,), seed=13))


@pytest.mark.parametrize("f", [lowest_energy, singular_values])
def test_real_spectra(f):
    """eigvalsh of a Hermitian matrix and the singular values, of a complex matrix to
    differentiate: first order (their second derivatives of complex matrices are not
    there yet, docs/complex.md)."""
    check(f, A, second=False, rtol=1e-5, atol=1e-7)


# -- holomorphic functions of complex arrays ----------------------------------------------
def cubes(z):
    return np.sum(z ** 3 + np.exp(z) * z)


def elementwise(z):
    return np.sin(z) * z + 1.0 / (z + 2.0)


M = point((3, 4), seed=14)


def linear_map(z):
    return M @ z + z[0] * z[:3]


def fd_jacobian(f, z, h=1e-6):
    """df_i/dz_k of a holomorphic f, central differences along the real axis of each
    element (and checked equal to those along the imaginary axis, divided by i)."""
    columns = []
    for k in np.ndindex(z.shape):
        e = np.zeros(z.shape)
        e[k] = 1.0
        along_x = fd_along(f, z, e, h)
        close(along_x, fd_along(f, z, 1j * e, h) / 1j, rtol=1e-5, atol=1e-7)
        columns.append(along_x)
    return np.stack(columns, axis=-1)


def test_holomorphic_grad():
    """grad(f, holomorphic=True) of a complex f: f'(z), elementwise, as JAX's."""
    z = point((4,), seed=15) + 0.5
    expected = fd_jacobian(cubes, z)
    close(s2sad.grad(cubes, holomorphic=True)(z), expected)
    value, g = s2sad.value_and_grad(cubes, holomorphic=True)(z)
    close(value, cubes(z))
    close(g, expected)
    v = point((4,), seed=16)
    close(s2sad.jvp(cubes, (z,), (v,))[1], expected @ v)


@pytest.mark.parametrize("f", [elementwise, linear_map])
def test_holomorphic_jacobians(f):
    z = point((4,), seed=17) + 0.5
    expected = fd_jacobian(f, z)
    close(s2sad.jacfwd(f, holomorphic=True)(z), expected)
    close(s2sad.jacrev(f, holomorphic=True)(z), expected)
    v = point((4,), seed=18)
    close(s2sad.jvp(f, (z,), (v,))[1], expected @ v)


# -- with real arguments, and the guards ---------------------------------------------------
def mixed(x, c):
    return np.sum(np.abs(np.exp(1j * x) * c + x) ** 2)


def test_real_and_complex_arguments():
    """A real array and a complex one: each gradient in its own type."""
    x, c = np.array([0.3, -0.7, 1.1]), point((3,), seed=19)
    gx, gc = s2sad.grad(mixed, wrt=(0, 1))(x, c)
    assert gx.dtype == np.float64 and gc.dtype == np.complex128
    h = 1e-6
    close(gx, [(mixed(x + h * e, c) - mixed(x - h * e, c)) / (2 * h) for e in np.eye(3)])
    close(gc, fd_grad(lambda u: mixed(x, u), c))


@pytest.mark.parametrize("mode", ["grad", "value_and_grad", "vjp", "jvp", "hvp"])
def test_complex_then_real_then_complex(mode):
    """The code compiled for a complex array is not run for a real one, nor the other way
    round: each call gets the derivative of its own kind."""
    def f(z):
        return np.sum(np.abs(z * z + 1.0) ** 2)
    for z in (point((3,)), np.array([0.3, -0.2, 0.8]), point((3,), seed=1),
              np.array([0.5, 0.1, -0.4])):
        if np.iscomplexobj(z):
            expected = fd_grad(f, z)
        else:
            expected = np.array([fd_along(f, z, e) for e in np.eye(3)])
        v = np.ones(3)
        if mode == "grad":
            got = s2sad.grad(f)(z)
        elif mode == "value_and_grad":
            got = s2sad.value_and_grad(f)(z)[1]
        elif mode == "vjp":
            got = s2sad.vjp(f, z)[1](1.0)[0]
        elif mode == "jvp":
            got, expected = s2sad.jvp(f, (z,), (v,))[1], np.sum(np.real(expected * v))
        else:
            got = s2sad.hvp(f)(z, v)
            expected = fd_along(lambda u: s2sad.grad(f)(u), z, v, 1e-5)
        assert np.iscomplexobj(got) == (np.iscomplexobj(z) and mode != "jvp")
        close(got, expected, rtol=1e-5, atol=1e-7)


def test_single_precision():
    """A complex64 array: its gradient is complex64."""
    def f(z):
        return np.sum(np.abs(z) ** 2)
    z = point((3,)).astype(np.complex64)
    got = s2sad.grad(f)(z)
    assert got.dtype == np.complex64
    close(got, 2 * np.conj(z), rtol=1e-5)


# -- what stays refused --------------------------------------------------------------------
def line_of(fn, text):
    lines, start = inspect.getsourcelines(fn)
    k = next(i for i, line in enumerate(lines) if text in line)
    return f"{inspect.getsourcefile(fn)}:{start + k}"


def complex_output(z):
    return np.sum(z * z)


def test_complex_output_needs_holomorphic():
    with pytest.raises(ComplexValueError) as caught:
        s2sad.grad(complex_output)(point((3,)))
    assert str(caught.value).startswith(line_of(complex_output, "return") + ": the function "
                                        "returns a complex value"), caught.value
    assert "holomorphic=True" in str(caught.value)


def test_holomorphic_needs_complex_arguments():
    for transform in (s2sad.grad, s2sad.jacfwd, s2sad.jacrev):
        with pytest.raises(s2sad.S2SADError, match="astype"):
            transform(complex_output, holomorphic=True)(np.array([1.0, 2.0]))


@pytest.mark.parametrize("transform", [s2sad.hessian, s2sad.jacfwd, s2sad.jacrev])
def test_without_holomorphic_refused(transform):
    """A real f of complex arrays has no complex Jacobian or Hessian (as JAX's): refused,
    not computed along the real direction alone."""
    with pytest.raises(ComplexValueError, match="argument 0 of moduli"):
        transform(moduli)(point((3,)))


def rule_for_real_values(z):
    return np.sum(np.abs(np.sort(z)))


def call_with_complex(z):
    return np.sum(np.abs(complex_output(z)))


@pytest.mark.parametrize("f, text", [(rule_for_real_values, "np.sort"),
                                     (call_with_complex, "complex_output(z)")])
def test_refused_where_it_meets(f, text):
    """A rule for real values only, and a Python function called with a complex array:
    refused, naming the line."""
    with pytest.raises(ComplexValueError) as caught:
        s2sad.grad(f)(point((3,)))
    assert str(caught.value).startswith(line_of(f, text) + ": the complex array argument z"
                                        ), caught.value


# (containers of complex arrays: tests/test_complex_containers.py)


@pytest.mark.skipif(not HAS_NUMBA, reason="Numba is not installed")
def test_numba_backend_refuses():
    with pytest.raises(ComplexValueError, match="argument 0 of moduli"):
        s2sad.grad(moduli, backend="numba")(point((3,)))


def tangent_along_i(z):
    return s2sad.jvp(moduli, (z,), (np.ones(z.shape) * 1j,))[1]


def test_vmap_of_a_jvp_of_complex_arrays_runs_item_by_item_and_says_so():
    """The batched code took the complex array as real where it called jvp (np.abs's
    tangent through np.sign: a wrong number); vmap given a complex array now runs the
    function item by item, with a BatchingLoopWarning."""
    Z = point((2, 3), seed=22)
    expected = [fd_along(moduli, z, np.ones(3) * 1j) for z in Z]
    close([tangent_along_i(z) for z in Z], expected)
    with pytest.warns(s2sad.BatchingLoopWarning, match="argument 'z' holds a complex array"):
        close(s2sad.vmap(tangent_along_i)(Z), expected)


def _rows_real_and_complex(theta):
    h = np.array([[theta[0], 0.0], [0.0, 1j * theta[1]]])
    return np.real(np.sum(h * np.conj(h) * np.exp(1j * theta[0]))) + theta[1] ** 3


def _tuple_rows(theta):
    rows = (theta[0], theta[1] * 2.0)
    return np.abs(np.sum(np.array([rows, (1j, theta[0] * 1j)]) ** 2))


@pytest.mark.parametrize("f", [_rows_real_and_complex, _tuple_rows])
def test_an_array_display_of_real_rows_and_complex_rows(f):
    # (a row of real values meeting a complex row went through as_complex as a list:
    # a TypeError from s2sad, list + 0j)
    x, h = np.array([0.4, 1.3]), 1e-6
    expected = np.array([(f(x + h * e) - f(x - h * e)) / (2 * h) for e in np.eye(2)])
    np.testing.assert_allclose(s2sad.grad(f)(x), expected, rtol=1e-6)
    _, tangent = s2sad.jvp(f, (x,), (np.array([1.0, 0.5]),))
    assert tangent == pytest.approx(expected @ [1.0, 0.5], rel=1e-6)
    grad = s2sad.grad(f)
    numeric = np.array([(grad(x + h * e) - grad(x - h * e)) / (2 * h) for e in np.eye(2)])
    np.testing.assert_allclose(s2sad.hessian(f)(x), numeric, rtol=1e-5, atol=1e-6)
