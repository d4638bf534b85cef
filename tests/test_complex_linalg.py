"""np.linalg of complex matrices (s2sad/rules/complex_linalg.py): real losses of complex
matrices made from real parameters, against central differences, in reverse and forward
mode and, where s2sad has it, to second order (the Hessian times a direction, against
central differences of the finite-difference gradient)."""
import numpy as np
import pytest

import s2sad
from s2sad.errors import MissingRuleError
from numpy_cases import compare, fd_array_grad

H = np.array([[1.0, 0.5 - 0.2j, 0.1j], [0.5 + 0.2j, -1.0, 0.3], [-0.1j, 0.3, 2.0]])


def solve(x):
    a = np.reshape(x[:9], (3, 3)) + 1j * np.reshape(x[9:18], (3, 3)) + 3.0 * np.eye(3)
    return np.sum(np.abs(np.linalg.solve(a, H[0] * x[18])) ** 2)


def solve_matrix(x):
    a = np.reshape(x[:9], (3, 3)) + 1j * np.reshape(x[9:18], (3, 3)) + 3.0 * np.eye(3)
    return np.sum(np.real(np.linalg.solve(a, H * x[18]) * (0.3 - 1j)) ** 3)


def inverse(x):
    a = np.reshape(x[:9], (3, 3)) + 1j * np.reshape(x[9:18], (3, 3)) + 3.0 * np.eye(3)
    return np.sum(np.real(np.linalg.inv(a) @ H) ** 3)


def determinant(x):
    a = np.reshape(x[:9], (3, 3)) + 1j * np.reshape(x[9:18], (3, 3))
    d = np.linalg.det(a)
    return np.abs(d) ** 2 + np.angle(d) + np.imag(d)


def log_determinant(x):
    a = np.reshape(x[:9], (3, 3)) + 1j * np.reshape(x[9:18], (3, 3))
    sign, logdet = np.linalg.slogdet(a)
    return 2.0 * logdet + np.real(sign * (0.3 + 0.4j))


def eigenvalues(x):
    a = np.reshape(x[:9], (3, 3)) + 1j * np.reshape(x[9:18], (3, 3))
    w = np.linalg.eigvalsh(a + np.conj(np.transpose(a)))
    return 2.0 * w[0] + w[2] ** 2


def eigenvalues_upper(x):
    a = np.reshape(x[:9], (3, 3)) + 1j * np.reshape(x[9:18], (3, 3))
    w = np.linalg.eigvalsh(a, "U")        # (reads the upper triangle alone)
    return np.sum(w * np.array([1.0, -2.0, 0.5])) + w[1] ** 2


def singular_values(x):
    a = np.reshape(x[:6], (2, 3)) + 1j * np.reshape(x[6:12], (2, 3))
    s = np.linalg.svd(a, compute_uv=False)
    return 2.0 * s[0] + s[1] ** 2


def singular_values_tall(x):
    a = np.reshape(x[:6], (3, 2)) + 1j * np.reshape(x[6:12], (3, 2))
    s = np.linalg.svd(a, compute_uv=False)
    return s[0] * s[1] + np.sum(s ** 3)


def norms(x):
    a = np.reshape(x[:6], (2, 3)) + 1j * np.reshape(x[6:12], (2, 3))
    return (np.linalg.norm(a) + np.sum(np.linalg.norm(a, axis=1) ** 3)
            + np.linalg.norm(a, 1) + np.linalg.norm(a[0], 3) + np.linalg.norm(a[1], np.inf))


#: (loss, its number of parameters, whether s2sad has its second derivative)
CASES = [(solve, 19, True), (solve_matrix, 19, True), (inverse, 18, True),
         (determinant, 18, True), (log_determinant, 18, True), (eigenvalues, 18, True),
         (eigenvalues_upper, 18, True), (singular_values, 12, True),
         (singular_values_tall, 12, True), (norms, 12, True)]


def assert_close(actual, expected, rtol=1e-6, atol=1e-8):
    assert not np.iscomplexobj(actual), actual
    problem = compare(actual, expected, rtol, atol, "derivative")
    assert problem is None, problem


@pytest.mark.parametrize("f, size, second", CASES, ids=[c[0].__name__ for c in CASES])
def test_complex_matrices(f, size, second):
    rng = np.random.default_rng(5)
    x, v = rng.normal(size=size), rng.normal(size=size)
    expected = fd_array_grad(f, (x,), 0)
    assert_close(s2sad.grad(f)(x), expected)
    value, g = s2sad.value_and_grad(f)(x)
    assert_close(value, f(x))
    assert_close(g, expected)
    y, t = s2sad.jvp(f, (x,), (v,))
    assert_close(y, f(x))
    assert_close(t, expected @ v)
    if not second:
        with pytest.raises(s2sad.S2SADError, match="(rule has|second) (no )?derivative"):
            s2sad.hvp(f)(x, v)
        return
    h = 1e-4
    along = (fd_array_grad(f, (x + h * v,), 0) - fd_array_grad(f, (x - h * v,), 0)) / (2 * h)
    assert_close(s2sad.hvp(f)(x, v), along, rtol=1e-5,
                 atol=1e-6 * max(1.0, np.max(np.abs(along))))


def singular_determinant(x):
    a = np.outer(x[:3] + 1j * x[3:6], x[6:9] - 0.5j * x[:3])     # (rank 1)
    return np.real(np.linalg.det(a + np.diag([0.0, 0.0, 1.0 + 1j])) * (1.0 - 2.0j))


def test_determinant_of_a_singular_complex_matrix():
    """The cofactors of a singular complex matrix, from its SVD (where it has no
    inverse), in reverse and forward mode."""
    x = np.random.default_rng(2).normal(size=9)
    expected = fd_array_grad(singular_determinant, (x,), 0)
    assert_close(s2sad.grad(singular_determinant)(x), expected)
    assert_close(s2sad.jvp(singular_determinant, (x,), (np.ones(9),))[1], np.sum(expected))


def spectral_norm(x):
    a = np.reshape(x[:4], (2, 2)) + 1j * np.reshape(x[4:], (2, 2))
    return np.linalg.norm(a, 2)


def hermitian_factors(x):
    a = np.reshape(x[:4], (2, 2)) + 1j * np.reshape(x[4:], (2, 2))
    return np.sum(np.abs(np.linalg.svd(a, hermitian=True)[0]) ** 2)


# (the factors of svd: tests/test_complex_factors.py)
@pytest.mark.parametrize("f, message", [(spectral_norm, "matrix norm ord=2 of a complex"),
                                        (hermitian_factors, "without hermitian=True")])
def test_refused(f, message):
    with pytest.raises(MissingRuleError, match=message):
        s2sad.grad(f)(np.linspace(0.1, 0.8, 8))
