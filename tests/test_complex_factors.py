"""The eigenvectors (`np.linalg.eigh`) and singular vectors (`np.linalg.svd`) of complex
matrices (s2sad/rules/complex_linalg.py), in reverse mode, against central differences
along the real and the imaginary direction of each element (the gradient of a real `f`
of a complex `z` is `df/dx - i df/dy`, docs/complex.md): functions that do not depend on
the phases of the vectors, and functions that do, differentiated in the phases NumPy
picks (forward mode and second order: tests/test_complex_vector_gauge.py)."""
import numpy as np
import pytest

import s2sad
from s2sad.errors import ComplexValueError

H = 1e-6


def central(f, x):
    """The gradient of the real `f` at the real or complex array `x` by central
    differences in float64: `df/dx - i df/dy` of each element of a complex `x`."""
    out = np.zeros(x.shape, dtype=x.dtype)
    for idx in np.ndindex(x.shape):
        e = np.zeros(x.shape, dtype=x.dtype)
        e[idx] = 1.0
        out[idx] = (f(x + H * e) - f(x - H * e)) / (2 * H)
        if np.iscomplexobj(x):
            out[idx] -= 1j * (f(x + 1j * H * e) - f(x - 1j * H * e)) / (2 * H)
    return out


def close(actual, expected, rtol=1e-6):
    scale = max(1.0, float(np.max(np.abs(expected))))
    assert np.shape(actual) == np.shape(expected)
    assert np.max(np.abs(np.asarray(actual) - expected)) <= rtol * scale, (actual, expected)


RNG = np.random.default_rng(42)
Z3 = RNG.normal(size=(3, 3)) + 1j * RNG.normal(size=(3, 3))
WEIGHTS = np.array([[1.0, 2.0 - 1j, 0.5j], [0.3, -1.0, 2.0], [1j, 0.7, -0.4 + 0.2j]])


# -- eigh of a Hermitian matrix: functions of the eigenvectors the phases leave alone ----
def moduli(z):
    w, v = np.linalg.eigh(z)
    return np.sum(np.abs(v) ** 3 * np.abs(WEIGHTS)) + np.sum(w * np.array([0.3, -0.2, 0.5]))


def projector(z):
    w, v = np.linalg.eigh(z, UPLO="U")
    p = np.outer(v[:, 1], np.conj(v[:, 1]))
    return np.real(np.sum(p * WEIGHTS))


def overlap(z):
    v = np.linalg.eigh(z)[1]
    return np.abs(np.conj(v[:, 0]) @ np.array([1.0, 1j, -0.5])) ** 2 + np.linalg.eigh(z)[0][2]


def reconstruction(z):
    w, v = np.linalg.eigh(z)
    back = (v * w) @ np.conj(v.T)
    return np.sum(np.abs(back - WEIGHTS) ** 2)


def stacked(z):
    a = np.stack([z, z * (0.5 + 1j), np.conj(z.T)])
    w, v = np.linalg.eigh(a)
    return np.sum(np.abs(v[:, :, 0]) ** 4) + np.sum(w[:, -1] ** 2)


@pytest.mark.parametrize("f", [moduli, projector, overlap, reconstruction, stacked])
def test_eigh_of_a_complex_matrix_argument(f):
    """grad and value_and_grad with respect to the complex matrix; eigh reads one
    triangle (the imaginary part of its diagonal not at all)."""
    expected = central(f, Z3)
    close(s2sad.grad(f)(Z3), expected)
    value, g = s2sad.value_and_grad(f)(Z3)
    assert value == pytest.approx(f(Z3))
    close(g, expected)


def ground_state_density(theta):
    c = theta[1] * np.exp(1j * theta[2])
    h = np.array([[theta[0], c, 0.2j], [np.conj(c), -theta[0], theta[3]],
                  [-0.2j, theta[3], 0.5]])
    w, v = np.linalg.eigh(h)
    return np.sum(np.abs(v[:, 0]) ** 2 * np.array([1.0, 2.0, 3.0]))


def test_eigh_of_a_hamiltonian_of_real_parameters():
    """A real loss of real parameters through the complex eigenvectors: grad and vjp."""
    theta = np.array([0.3, 0.8, 0.5, -0.4])
    expected = central(ground_state_density, theta)
    close(s2sad.grad(ground_state_density)(theta), expected)
    value, pullback = s2sad.vjp(ground_state_density, theta)
    assert value == pytest.approx(ground_state_density(theta))
    close(pullback(2.0)[0], 2.0 * expected)


# -- svd: functions of the pairs of singular vectors the phases leave alone ------------
def singular_moduli(a):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    return np.sum(np.abs(u) ** 3) + np.sum(np.abs(vh[0]) ** 4) + np.sum(s ** 2)


def rank_one(a):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    best = s[0] * np.outer(u[:, 0], vh[0])
    return np.real(np.sum(best * np.conj(a[:2, :2].sum() + 1j))) + np.sum(np.abs(best))


def singular_overlap(a):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    x = np.arange(1.0, 1.0 + u.shape[0]) * (1.0 - 0.5j)
    return np.sum(np.abs(np.conj(u.T) @ x) * s)


@pytest.mark.parametrize("shape", [(3, 3), (4, 2), (2, 4)], ids=["square", "tall", "wide"])
@pytest.mark.parametrize("f", [singular_moduli, rank_one, singular_overlap])
def test_svd_of_a_complex_matrix_argument(f, shape):
    rng = np.random.default_rng(sum(shape))
    a = rng.normal(size=shape) + 1j * rng.normal(size=shape)
    close(s2sad.grad(f)(a), central(f, a))


def stacked_svd(a):
    u, s, vh = np.linalg.svd(np.stack([a, a.T * 1j, a + 1.0]), full_matrices=False)
    return np.sum(np.abs(u[:, :, 0]) ** 3) + np.sum(s[:, 0]) + np.sum(np.abs(
        (u * s[:, None, :]) @ vh) * np.abs(WEIGHTS))


def test_svd_of_a_stack_of_complex_matrices():
    close(s2sad.grad(stacked_svd)(Z3), central(stacked_svd, Z3))


def test_single_precision():
    """The check's tolerance is that of the dtype: a function of complex64 eigenvectors
    that does not depend on their phases is not refused for its rounding."""
    z = Z3.astype(np.complex64)
    close(s2sad.grad(moduli)(z), central(moduli, Z3), rtol=1e-3)


def full_square(x):
    a = np.reshape(x[:9], (3, 3)) + 1j * np.reshape(x[9:], (3, 3))
    u, s, vh = np.linalg.svd(a)            # (full_matrices=True: of a square matrix, thin)
    return np.sum(np.abs(u @ vh) ** 2 * np.abs(WEIGHTS)) + s[1]


def test_svd_of_real_parameters_full_matrices_of_a_square_matrix():
    x = np.random.default_rng(5).normal(size=18)
    close(s2sad.grad(full_square)(x), central(full_square, x))


# -- functions of the phases: the derivative of the function NumPy computes -------------
def phase_of_eigenvector(z):
    w, v = np.linalg.eigh(z)
    return np.real(v[1, 0])


def phase_of_singular_vector(a):
    u, s, vh = np.linalg.svd(a)
    return np.real(u[1, 0] * vh[1, 1])     # (u[:, 0] and vh[0] would turn together)


def line_of(f, text):
    import inspect
    lines, first = inspect.getsourcelines(f)
    return first + next(i for i, line in enumerate(lines) if text in line)


@pytest.mark.parametrize("f", [phase_of_eigenvector, phase_of_singular_vector])
def test_a_function_of_the_phases(f):
    expected = central(f, Z3)
    close(s2sad.grad(f)(Z3), expected)
    close(s2sad.vjp(f, Z3)[1](2.0)[0], 2.0 * expected)


def test_the_entry_numpy_keeps_real():
    """numpy's first row of eigenvectors is real (the Householder reflections leave it):
    `Re(v[0, 0])` does not move with the phase at the point, so its derivative is the
    same, whether the phase the rule keeps is NumPy's or not."""
    def first_entry(z):
        w, v = np.linalg.eigh(z)
        return np.real(v[0, 0])
    close(s2sad.grad(first_entry)(Z3), central(first_entry, Z3))


def test_a_phase_pair_that_turns_together():
    """`u_k` and the row `vh[k]` turn by opposite phases: a product of the two does not
    depend on them."""
    def pair(a):
        u, s, vh = np.linalg.svd(a)
        return np.real(u[0, 0] * vh[0, 1] * 1j)
    close(s2sad.grad(pair)(Z3), central(pair, Z3))


def test_the_argument_is_left_as_it_was():
    z = Z3.copy()
    s2sad.grad(reconstruction)(z)
    s2sad.grad(rank_one)(z)
    assert np.array_equal(z, Z3)


def slope(theta):
    return np.sum(s2sad.grad(ground_state_density)(theta) ** 2)


def test_reverse_over_reverse_is_refused_at_its_line():
    with pytest.raises(ComplexValueError, match="np.linalg.eigh's adjoint") as caught:
        s2sad.grad(slope)(np.array([0.3, 0.8, 0.5, -0.4]))
    assert f"{__file__}:{line_of(ground_state_density, 'np.linalg.eigh')}:" in str(
        caught.value)
