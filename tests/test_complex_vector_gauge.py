"""The eigenvectors (`np.linalg.eigh`) and singular vectors (`np.linalg.svd`) of complex
matrices in the phases NumPy picks (s2sad/rules/complex_linalg.py): s2sad differentiates
the function NumPy computes, so functions of the phases have a derivative too. Checked
in each mode against central differences in float64 of the function as it is (second
derivatives: against central second differences, extrapolated), for functions that do
not depend on the phases and for functions that do; and the refusal where NumPy's phase
is ill-defined, at the user's line."""
import inspect

import numpy as np
import pytest

import s2sad
from s2sad.errors import ComplexValueError

H = 1e-6
RNG = np.random.default_rng(43)
WEIGHTS = RNG.normal(size=(4, 4)) + 1j * RNG.normal(size=(4, 4))


def random_complex(shape, rng):
    return rng.normal(size=shape) + 1j * rng.normal(size=shape)


def close(actual, expected, rtol=1e-6):
    scale = max(1.0, float(np.max(np.abs(expected))))
    assert np.shape(actual) == np.shape(expected)
    assert np.max(np.abs(np.asarray(actual) - expected)) <= rtol * scale, (actual, expected)


def along(f, x, d, h=H):
    """The derivative of `f` at `x` along `d` by central differences."""
    return (np.asarray(f(x + h * d)) - np.asarray(f(x - h * d))) / (2 * h)


def central(f, x):
    """The gradient of the real `f` at the complex array `x`: `df/dx - i df/dy` of each
    element (docs/complex.md)."""
    out = np.zeros(x.shape, dtype=complex)
    for idx in np.ndindex(x.shape):
        e = np.zeros(x.shape)
        e[idx] = 1.0
        out[idx] = along(f, x, e) - 1j * along(f, x, 1j * e)
    return out


def second(f, x):
    """The Hessian of the real `f` at the real vector `x`: central second differences,
    Richardson-extrapolated from the steps 1e-3 and 2e-3, which must agree (NumPy's
    vectors change sign where a Householder reflection's sign does: not near `x`)."""
    def at(h):
        n = x.size
        e = np.eye(n) * h
        out = np.zeros((n, n))
        for i in range(n):
            for j in range(i, n):
                out[i, j] = out[j, i] = (f(x + e[i] + e[j]) - f(x + e[i] - e[j]) - f(
                    x - e[i] + e[j]) + f(x - e[i] - e[j])) / (4 * h * h)
        return out
    fine, coarse = at(1e-3), at(2e-3)
    assert np.max(np.abs(fine - coarse)) < 1e-2 * max(1.0, np.max(np.abs(fine)))
    return (4 * fine - coarse) / 3


def line_of(f, text):
    lines, first = inspect.getsourcelines(f)
    return first + next(i for i, line in enumerate(lines) if text in line)


# -- the phases NumPy picks --------------------------------------------------------------
@pytest.mark.parametrize("n", range(1, 9))
def test_the_entries_numpy_keeps_real(n):
    """What the rules assume of LAPACK (zheevd, zgesdd), on many random matrices: the
    first row of eigh's eigenvectors is real (UPLO "L"; the last, "U"); of svd's, the
    first column of vh (at least as many rows as columns) or the first row of U (fewer;
    up to rounding, where it first factors a = L Q)."""
    rng = np.random.default_rng(n)
    for _ in range(40):
        a = random_complex((n, n), rng) * 10.0 ** rng.uniform(-3, 3)
        h = a + np.conj(a.T)
        assert np.all(np.linalg.eigh(h)[1][0].imag == 0)
        assert np.all(np.linalg.eigh(h, "U")[1][-1].imag == 0)
        for m in range(1, 9):
            b = random_complex((m, n), rng)
            u, s, vh = np.linalg.svd(b, full_matrices=m == n)
            if m >= n:
                assert np.all(vh[:, 0].imag == 0)
            else:
                assert np.all(np.abs(u[0].imag) <= 1e-12 * np.abs(u[0]))


# -- functions of a complex matrix argument -------------------------------------------
def eigh_entry(z):                        # depends on the phases
    w, v = np.linalg.eigh(z)
    return np.real(v[1, 0] * (1.0 - 2.0j)) + np.imag(v[2, 1])


def eigh_upper_weighted(z):               # depends on the phases; UPLO "U"
    w, v = np.linalg.eigh(z, UPLO="U")
    return np.real(np.sum(v * WEIGHTS[:3, :3])) + w[0] * w[2]


def eigh_moduli(z):                       # does not
    w, v = np.linalg.eigh(z)
    return np.sum(np.abs(v) ** 3 * np.abs(WEIGHTS[:3, :3])) + np.sum(w ** 2)


def eigh_stacked(z):                      # a stack of matrices
    w, v = np.linalg.eigh(np.stack([z, z * (0.5 + 1j), np.conj(z.T)]))
    return np.sum(np.real(v[:, 1, :]) * np.arange(3.0)) + np.sum(w[:, -1])


def svd_entries(a):                       # depends on the phases
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    return (np.real(np.sum(u * WEIGHTS[:u.shape[0], :u.shape[1]]))
            + np.imag(np.sum(vh * WEIGHTS[:vh.shape[0], :vh.shape[1]])) + s[0])


def svd_product(a):                       # does not (u_k and vh[k] turn together)
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    return np.real(np.sum((u * s[0]) @ vh * np.conj(WEIGHTS[:a.shape[0], :a.shape[1]])))


def svd_moduli(a):                        # does not
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    return np.sum(np.abs(u) ** 3) + np.sum(np.abs(vh[0]) ** 4) + np.sum(s ** 2)


def svd_stacked(a):                      # a stack of matrices
    u, s, vh = np.linalg.svd(np.stack([a, a.T * 1j, a + 1.0]), full_matrices=False)
    return np.sum(np.real(u[:, 1, :]) * np.imag(vh[:, :, 2])) + np.sum(s[:, 0])


CASES = [(f, (3, 3)) for f in (eigh_entry, eigh_upper_weighted, eigh_moduli, eigh_stacked,
                               svd_stacked)]
CASES += [(f, shape) for f in (svd_entries, svd_product, svd_moduli)
          for shape in ((3, 3), (4, 2), (2, 4), (1, 3))]
IDS = [f"{f.__name__}-{shape[0]}x{shape[1]}" for f, shape in CASES]


@pytest.mark.parametrize("f, shape", CASES, ids=IDS)
def test_a_complex_matrix_argument(f, shape):
    """jvp along a complex direction, grad and value_and_grad."""
    rng = np.random.default_rng(sum(shape) + len(f.__name__))
    z, d = random_complex(shape, rng), random_complex(shape, rng)
    value, tangent = s2sad.jvp(f, (z,), (d,))
    assert value == pytest.approx(f(z))
    close(tangent, along(f, z, d))
    expected = central(f, z)
    close(s2sad.grad(f)(z), expected)
    close(s2sad.value_and_grad(f)(z)[1], expected)


@pytest.mark.parametrize("f, shape", CASES, ids=IDS)
def test_hvp_along_a_complex_direction(f, shape):
    """The derivative of the gradient `df/dx - i df/dy` along `v = a + ib` is `(Hxx a +
    Hxy b) - i (Hyx a + Hyy b)`, H the Hessian of `f(x + iy)` in the real x and y."""
    rng = np.random.default_rng(8)
    z, v = random_complex(shape, rng), random_complex(shape, rng)
    size = z.size

    def of_parts(x):
        return f(np.reshape(x[:size] + 1j * x[size:], shape))
    hessian = second(of_parts, np.concatenate([z.real.ravel(), z.imag.ravel()]))
    moved = hessian @ np.concatenate([v.real.ravel(), v.imag.ravel()])
    expected = np.reshape(moved[:size] - 1j * moved[size:], shape)
    close(s2sad.hvp(f)(z, v), expected, rtol=1e-5)


# -- Hermitian matrices and complex matrices built from real parameters ----------------
def ground_state(theta):                  # depends on the phases: a vector of them
    c = theta[1] * np.exp(1j * theta[2])
    h = np.array([[theta[0], c, 0.2j + theta[4]], [np.conj(c), -theta[0], theta[3]],
                  [-0.2j + theta[4], theta[3], 0.5]])
    w, v = np.linalg.eigh(h)
    return np.concatenate([np.real(v[:, 0]), np.imag(v[:, 1]), w])


def ground_state_energy_and_phase(theta):
    c = theta[1] * np.exp(1j * theta[2])
    h = np.array([[theta[0], c, 0.2j + theta[4]], [np.conj(c), -theta[0], theta[3]],
                  [-0.2j + theta[4], theta[3], 0.5]])
    w, v = np.linalg.eigh(h, UPLO="U")
    return w[0] + np.real(v[2, 0] * np.conj(v[1, 1])) + np.abs(v[1, 2]) ** 2


def singular_pairs(theta):
    u, s, vh = np.linalg.svd(np.reshape(theta[:6] + 1j * theta[6:], (2, 3)),
                             full_matrices=False)
    return np.concatenate([np.imag(u[1]), np.real(vh[:, 2]), s])


def singular_loss(theta):
    u, s, vh = np.linalg.svd(np.reshape(theta[:6] + 1j * theta[6:], (3, 2)),
                             full_matrices=False)
    return np.real(u[2, 0] * vh[1, 1]) + s[1] ** 2 + np.imag(u[0, 1])


def full_square(theta):                   # full_matrices=True of a square matrix
    u, s, vh = np.linalg.svd(np.reshape(theta[:9] + 1j * theta[9:], (3, 3)))
    return np.real(u[1, 2] * (1.0 - 1.0j)) + np.imag(vh[2, 1]) + s[2]


def columns(f, x):
    return np.stack([along(f, x, e) for e in np.eye(x.size)], axis=-1)


@pytest.mark.parametrize("f, size", [(ground_state, 5), (singular_pairs, 12)])
def test_jacfwd_and_jacrev_of_real_parameters(f, size):
    theta = np.random.default_rng(size).normal(size=size)
    expected = columns(f, theta)
    close(s2sad.jacfwd(f)(theta), expected)
    close(s2sad.jacrev(f)(theta), expected)


@pytest.mark.parametrize("f, size", [(ground_state_energy_and_phase, 5), (singular_loss, 12),
                                     (full_square, 18)])
def test_hessian_and_hvp_of_real_parameters(f, size):
    theta = np.random.default_rng(size + 1).normal(size=size)
    expected = second(f, theta)
    close(s2sad.hessian(f)(theta), expected, rtol=1e-6)
    v = np.linspace(-1.0, 1.0, size)
    close(s2sad.hvp(f)(theta, v), expected @ v, rtol=1e-6)
    close(s2sad.grad(f)(theta), columns(f, theta))


def test_single_precision():
    """complex64: the tolerances are those of the dtype."""
    rng = np.random.default_rng(2)
    z, d = random_complex((3, 3), rng), random_complex((3, 3), rng)
    expected = along(eigh_entry, z, d)
    tangent = s2sad.jvp(eigh_entry, (z.astype(np.complex64),), (d.astype(np.complex64),))[1]
    close(tangent, expected, rtol=1e-3)


def test_the_arguments_are_left_as_they_were():
    rng = np.random.default_rng(0)
    z, d = random_complex((3, 3), rng), random_complex((3, 3), rng)
    before = z.copy(), d.copy()
    s2sad.jvp(eigh_entry, (z,), (d,))
    s2sad.hvp(svd_entries)(z, d)
    assert np.array_equal(z, before[0]) and np.array_equal(d, before[1])


# -- where NumPy's phase is ill-defined: the entry it keeps real is 0 ------------------
BLOCKS = np.array([[1.0, 0.0, 0.0], [0.0, 2.0, 1.0j], [0.0, -1.0j, 3.0]])
SVD_BLOCKS = np.array([[1.0, 0.0, 0.0], [0.0, 2.0, 1.0j], [0.0, 0.5, 3.0]])


def blocks_moduli(z):
    w, v = np.linalg.eigh(z)
    return np.sum(np.abs(v) ** 4 * np.abs(WEIGHTS[:3, :3])) + w[1]


def blocks_phase(z):
    w, v = np.linalg.eigh(z)
    return np.real(v[1, 1] * (1.0 + 1.0j))


def svd_blocks_moduli(a):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    return np.sum(np.abs(u[:, 1]) ** 4) + np.sum(np.abs(vh[-1]) ** 3)


def svd_blocks_phase(a):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    return np.real(u[2, 1] * (1.0 + 1.0j))


@pytest.mark.parametrize("f, a, text", [
    (blocks_moduli, BLOCKS, "np.linalg.eigh"), (blocks_phase, BLOCKS, "np.linalg.eigh"),
    (svd_blocks_moduli, SVD_BLOCKS, "np.linalg.svd"),
    (svd_blocks_phase, SVD_BLOCKS, "np.linalg.svd"),
    (svd_blocks_moduli, SVD_BLOCKS.T[:2], "np.linalg.svd")])
def test_forward_mode_is_refused_where_the_phase_is_ill_defined(f, a, text):
    """Forward mode cannot tell whether the function reads the phase: refused, naming the
    line of the factorization, whether it reads it or not."""
    a = a + 0j
    with pytest.raises(ComplexValueError, match="ill-defined") as caught:
        s2sad.jvp(f, (a,), (np.ones(a.shape) + 0.5j,))
    message = str(caught.value)
    assert f"{__file__}:{line_of(f, text)}:" in message and "reverse mode" in message
    with pytest.raises(ComplexValueError, match="ill-defined"):
        s2sad.hvp(f)(a, np.ones(a.shape) + 0j)


@pytest.mark.parametrize("f, a", [(blocks_moduli, BLOCKS), (svd_blocks_moduli, SVD_BLOCKS)])
def test_reverse_mode_where_the_phase_is_ill_defined_and_not_read(f, a):
    a = a + 0j
    close(s2sad.grad(f)(a), central(f, a))


@pytest.mark.parametrize("f, text", [(blocks_phase, "np.linalg.eigh"),
                                     (svd_blocks_phase, "np.linalg.svd")])
def test_reverse_mode_is_refused_where_the_phase_is_ill_defined_and_read(f, text):
    a = (BLOCKS if f is blocks_phase else SVD_BLOCKS) + 0j
    with pytest.raises(ComplexValueError, match="depends on that phase") as caught:
        s2sad.grad(f)(a)
    assert f"{__file__}:{line_of(f, text)}:" in str(caught.value)


# -- autograd's tests/test_linalg.py, complex eigh and svd, in every mode ----------------
# (autograd checks them in reverse mode; each returns a tuple, here weighed by fixed
# random arrays into a real loss; eigh reads one triangle of a matrix that is not
# Hermitian)
def projected(parts, seed=0):
    rng = np.random.default_rng(seed)
    return sum(np.sum(p * rng.normal(size=np.shape(p))) for p in parts)


def eigvalh_lower_complex(x):
    w, v = np.linalg.eigh(x)
    return projected((w, np.abs(v)))


def eigvalh_upper_complex(x):
    w, v = np.linalg.eigh(x, "U")
    return projected((w, np.abs(v)))


def svd_complex(x):
    u, s, v = np.linalg.svd(x, full_matrices=False)
    return projected((np.abs(u), s, np.abs(v)))


AUTOGRAD = [(eigvalh_lower_complex, (6, 6)), (eigvalh_upper_complex, (6, 6))] + [
    (svd_complex, shape) for shape in ((3, 5), (4, 3, 5), (4, 4), (3, 4, 4), (5, 3),
                                       (4, 5, 3))]


def mixed(f, z, v, u):
    """The second derivative of `f` at `z` along `v` and `u` by central differences,
    Richardson-extrapolated from the steps 1e-3 and 2e-3."""
    def at(h):
        return (f(z + h * (v + u)) - f(z + h * (v - u)) - f(z - h * (v - u))
                + f(z - h * (v + u))) / (4 * h * h)
    return (4 * at(1e-3) - at(2e-3)) / 3


@pytest.mark.parametrize("f, shape", AUTOGRAD,
                         ids=[f"{f.__name__}-{'x'.join(map(str, s))}" for f, s in AUTOGRAD])
def test_autograds_complex_eigh_and_svd(f, shape):
    """grad, jvp along a complex direction, and hvp: `Re(sum(hvp(z, v) * u))` is the
    second derivative along `v` and `u` (the gradient `df/dx - i df/dy` gives the
    derivative along `u` as `Re(sum(g * u))`)."""
    rng = np.random.default_rng(42)
    z = random_complex(shape, rng)
    v = random_complex(shape, rng)
    close(s2sad.grad(f)(z), central(f, z))
    close(s2sad.jvp(f, (z,), (v,))[1], along(f, z, v))
    moved = s2sad.hvp(f)(z, v)
    for _ in range(3):
        u = random_complex(shape, rng)
        close(np.real(np.sum(moved * u)), mixed(f, z, v, u), rtol=1e-5)


# -- a NumPy whose LAPACK picks the phases otherwise ------------------------------------
class _Turned:
    """numpy, but for `linalg.eigh` and `linalg.svd`, whose vectors it turns by fixed
    phases: the entries NumPy's LAPACK keeps real are not."""

    def __init__(self, module):
        self._module = module

    def __getattr__(self, name):
        return getattr(self._module, name)


@pytest.fixture
def another_lapack(monkeypatch):
    from s2sad.rules import complex_linalg
    linalg = _Turned(np.linalg)

    def eigh(a, UPLO="L"):
        out = np.linalg.eigh(a, UPLO)
        turn = np.exp(1j * np.arange(1.0, 1.0 + out[0].shape[-1]))
        return type(out)(out[0], out[1] * turn)

    def svd(a, full_matrices=True, compute_uv=True, hermitian=False):
        out = np.linalg.svd(a, full_matrices, compute_uv, hermitian)
        if not compute_uv:
            return out
        turn = np.exp(1j * np.arange(1.0, 1.0 + out[1].shape[-1]))
        u, vh = out[0].copy(), out[2].copy()
        k = turn.shape[-1]
        u[..., :k] *= turn
        vh[..., :k, :] *= np.conj(turn)[:, None]
        return type(out)(u, out[1], vh)
    linalg.eigh, linalg.svd = eigh, svd
    fake = _Turned(np)
    fake.linalg = linalg
    monkeypatch.setattr(complex_linalg, "np", fake)


@pytest.mark.parametrize("f, text", [(eigh_entry, "np.linalg.eigh"),
                                     (svd_entries, "np.linalg.svd")])
def test_phases_picked_otherwise_are_refused(another_lapack, f, text):
    """Where the entry NumPy's LAPACK keeps real is not (another LAPACK), forward mode
    refuses, and reverse mode where the function depends on the phases; reverse mode
    differentiates the functions that do not."""
    z = random_complex((3, 3), np.random.default_rng(1))
    with pytest.raises(ComplexValueError, match="is not known") as caught:
        s2sad.jvp(f, (z,), (z,))
    assert f"{__file__}:{line_of(f, text)}:" in str(caught.value)
    with pytest.raises(ComplexValueError, match="is not known.*depends on that phase"):
        s2sad.grad(f)(z)


@pytest.mark.parametrize("f", [eigh_moduli, svd_moduli])
def test_phases_picked_otherwise_and_not_read(another_lapack, f):
    z = random_complex((3, 3), np.random.default_rng(1))
    close(s2sad.grad(f)(z), central(f, z))
