"""Derivatives at the points where their formula divides by zero (`math.sqrt` at 0,
`x ** 0.5` at 0, `math.atan2(0, 0)`, `math.hypot(0, 0)`, `np.log(0.0)`, ...): what NumPy's
float64 arithmetic gives for the formula (inf, -inf or nan; JAX's rules give the same
there), never Python's ZeroDivisionError, in every mode and backend. The expected values
are the formulas evaluated in float64 by hand, next to each case."""
import importlib.util
import math
import warnings

import numpy as np
import pytest

import s2sad

INF, NAN = math.inf, math.nan

#: (name, function, point, its gradient there as NumPy evaluates the formula)
CASES = [
    ("sqrt", lambda x: math.sqrt(x), (0.0,), (INF,)),                 # 1 / (2 * 0)
    ("sqrt of -0.0", lambda x: math.sqrt(x), (-0.0,), (-INF,)),       # 1 / (2 * -0.0)
    ("power 0.5", lambda x: x ** 0.5, (0.0,), (INF,)),                # 0.5 * 0 ** -0.5
    ("power 0.25", lambda x: 3.0 * x ** 0.25, (0.0,), (INF,)),
    ("power 1.5", lambda x: x ** 1.5, (0.0,), (0.0,)),                # 1.5 * 0 ** 0.5
    ("variable power", lambda x, y: x ** y, (0.0, 0.5), (INF, 0.0)),  # (y x^(y-1), 0)
    ("builtin pow", lambda x: pow(x, 0.5), (0.0,), (INF,)),
    ("math.pow", lambda x: math.pow(x, 0.5), (0.0,), (INF,)),
    ("np.power", lambda x: np.power(x, 0.5), (0.0,), (INF,)),
    ("asin at 1", lambda x: math.asin(x), (1.0,), (INF,)),            # 1 / sqrt(0)
    ("asin at -1", lambda x: math.asin(x), (-1.0,), (INF,)),
    ("acos at -1", lambda x: math.acos(x), (-1.0,), (-INF,)),
    ("acosh at 1", lambda x: math.acosh(x), (1.0,), (INF,)),
    ("atan2", lambda y, x: math.atan2(y, x), (0.0, 0.0), (NAN, NAN)),  # 0 / 0
    ("hypot", lambda x, y: math.hypot(x, y), (0.0, 0.0), (NAN, NAN)),  # 0 / 0
    ("hypot of three", lambda x, y: math.hypot(x, y, 0.0), (0.0, 0.0), (NAN, NAN)),
    ("cbrt", lambda x: math.cbrt(x), (0.0,), (INF,)),                 # 1 / (3 * 0 * 0)
    ("np.arctan2", lambda y, x: np.arctan2(y, x), (0.0, 0.0), (NAN, NAN)),
    ("np.log", lambda x: np.log(x), (0.0,), (INF,)),                  # 1 / 0
    ("np.log of -0.0", lambda x: np.log(x), (-0.0,), (-INF,)),
    ("np.log1p", lambda x: np.log1p(x), (-1.0,), (INF,)),
    ("np.arctanh", lambda x: np.arctanh(x), (1.0,), (INF,)),          # 1 / (1 - 1)
    ("np.divide", lambda x, y: np.divide(x, y), (1.0, 0.0), (INF, -INF)),   # 1/0, -1/0
    ("np.divide 0/0", lambda x, y: np.divide(x, y), (0.0, 0.0), (INF, NAN)),
    ("np.fmod", lambda x, y: np.fmod(x, y), (1.0, 0.0), (1.0, -INF)),      # -trunc(1/0)
    ("abs", lambda x: abs(x), (0.0,), (1.0,)),                        # copysign(1, 0), JAX's
    ("fabs", lambda x: math.fabs(x), (0.0,), (1.0,)),
]


def same(got, want):
    got = got if isinstance(got, tuple) else (got,)
    assert len(got) == len(want), (got, want)
    for g, w in zip(got, want):
        g = float(g)
        assert (math.isnan(g) and math.isnan(w)) or g == w, (got, want)


@pytest.fixture(autouse=True)
def _quiet():
    # NumPy warns of a division by zero; that is its answer too
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


@pytest.mark.parametrize("name, f, point, want", CASES, ids=[c[0] for c in CASES])
def test_every_mode_gives_numpys_value(name, f, point, want):
    wrt = tuple(range(len(point)))
    same(s2sad.grad(f, wrt=wrt)(*point), want)
    value, gradient = s2sad.value_and_grad(f, wrt=wrt)(*point)
    same(gradient, want)
    same(value, (f(*point),))
    value, pullback = s2sad.vjp(f, *point)
    same(pullback(1.0), want)
    for i in wrt:
        value, tangent = s2sad.jvp(f, point, tuple(float(i == k) for k in wrt))
        same(tangent, (_dot(want, i),))
        same(value, (f(*point),))


def _dot(gradient, i):
    """The gradient times the unit tangent along argument i, in IEEE arithmetic: a
    zero tangent times an infinite partial is nan, as NumPy's (and JAX's) gives."""
    return sum(float(i == k) * g for k, g in enumerate(gradient))


#: (variable powers, `pow`, `math.hypot` of three and `math.cbrt` Numba does not
#: compile, nor these NumPy functions of numbers)
NUMBA = [c for c in CASES if not c[0].startswith((
    "np.divide", "np.fmod", "np.log1p", "np.arctanh", "np.log", "variable power",
    "builtin pow", "hypot of three", "cbrt"))]


@pytest.mark.parametrize("name, f, point, want", NUMBA, ids=[c[0] for c in NUMBA])
def test_the_numba_backend_gives_numpys_value(name, f, point, want):
    pytest.importorskip("numba", reason="backend='numba' needs Numba")
    wrt = tuple(range(len(point)))
    same(s2sad.grad(f, wrt=wrt, backend="numba")(*point), want)
    same(s2sad.jvp(f, point, (1.0,) + (0.0,) * (len(point) - 1), backend="numba")[1],
         (_dot(want, 0),))


def test_second_derivatives_at_and_next_to_the_singular_point():
    # d2/dx2 sqrt(x) = -1 / (4 x^1.5): -inf at 0, and the formula next to it
    assert s2sad.hessian(lambda x: math.sqrt(x))(0.0) == -INF
    assert s2sad.hessian(lambda x: math.sqrt(x))(0.25) == pytest.approx(-2.0, rel=1e-15)
    assert s2sad.hessian(lambda x: x ** 0.5)(0.0) == -INF
    assert s2sad.hvp(lambda x: math.sqrt(x))(0.0, 1.0) == -INF


def test_numba_second_derivatives_at_the_singular_point():
    pytest.importorskip("numba", reason="backend='numba' needs Numba")
    assert s2sad.hessian(lambda x: math.sqrt(x), backend="numba")(0.0) == -INF
    assert s2sad.hessian(lambda x: math.sqrt(x), backend="numba")(0.25) == pytest.approx(-2.0)


def test_arrays_keep_numpys_division():
    x = np.array([0.0, 4.0])
    np.testing.assert_array_equal(s2sad.grad(lambda a: np.sum(np.sqrt(a)))(x), [INF, 0.25])
    np.testing.assert_array_equal(s2sad.grad(lambda a: np.sum(a ** 0.5))(x), [INF, 0.25])
    np.testing.assert_array_equal(s2sad.grad(lambda a: np.sum(np.log(a)))(x), [INF, 0.25])


def norm(x, y):
    return math.sqrt(x * x + y * y)


def test_the_fast_path_divides_python_floats():
    # away from 0 the derivative is Python's float division, behind a test of truth
    gradient = s2sad.grad(norm, wrt=(0, 1))
    assert gradient(3.0, 4.0) == pytest.approx((0.6, 0.8), rel=1e-15)
    assert "t_2_bar = 1.0 / (y_1 or np.float64(y_1))" in gradient.source
    same(gradient(0.0, 0.0), (NAN, NAN))            # 0 * inf


MODULE = '''\
import math


def norm(x, y):
    return math.sqrt(x * x + y * y)
'''


@pytest.mark.parametrize("backend", ["python", "numba"])
def test_exported_modules(tmp_path, backend):
    if backend == "numba":
        pytest.importorskip("numba", reason="backend='numba' needs Numba")
    (tmp_path / "norm_model.py").write_text(MODULE)
    spec = importlib.util.spec_from_file_location("norm_model", tmp_path / "norm_model.py")
    model = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(model)
    path = tmp_path / f"norm_{backend}.py"
    s2sad.export(model.norm, path, wrt=(0, 1), args=(3.0, 4.0), backend=backend)
    spec = importlib.util.spec_from_file_location(f"norm_{backend}", path)
    exported = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(exported)
    assert exported.norm_grad(3.0, 4.0) == pytest.approx((0.6, 0.8), rel=1e-15)
    same(exported.norm_grad(0.0, 0.0), (NAN, NAN))
    same(exported.norm_value_and_grad(0.0, 0.0)[1], (NAN, NAN))


# -- the determinant of a singular matrix ---------------------------------------------------
def det(a):
    return np.linalg.det(a)


def weighted_dets(a):
    return np.sum(np.linalg.det(a) * np.array([1.0, -2.0]))


RANK_2 = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]])    # singular
RANK_1 = np.outer([1.0, -2.0, 0.5], [3.0, 1.0, -1.0])
REGULAR = np.array([[2.0, 1.0, 0.0], [0.5, 3.0, 1.0], [1.0, 0.0, 4.0]])


def cofactor_matrix(a):
    """By hand: (-1)^(i+j) times the minor without row i and column j."""
    n = a.shape[0]
    return np.array([[(-1) ** (i + j) * np.linalg.det(np.delete(np.delete(a, i, 0), j, 1))
                      for j in range(n)] for i in range(n)])


@pytest.mark.parametrize("a", [RANK_2, RANK_1, REGULAR, np.array([[1.0, 2.0], [2.0, 4.0]])],
                         ids=["rank 2 of 3", "rank 1 of 3", "regular", "2 by 2"])
def test_the_gradient_of_det_is_the_cofactor_matrix(a):
    from numpy_cases import check_hessian, check_jvp, fd_array_grad
    want = cofactor_matrix(a)
    np.testing.assert_allclose(want, fd_array_grad(det, (a,), 0), atol=1e-8)
    np.testing.assert_allclose(s2sad.grad(det)(a), want, rtol=1e-12, atol=1e-12)
    value, gradient = s2sad.value_and_grad(det)(a)
    assert value == det(a)
    np.testing.assert_allclose(gradient, want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(s2sad.vjp(det, a)[1](2.0)[0], 2.0 * want, rtol=1e-12,
                               atol=1e-12)
    t = np.arange(a.size, dtype=float).reshape(a.shape) / 7.0 - 0.5
    assert s2sad.jvp(det, (a,), (t,))[1] == pytest.approx(np.sum(want * t), abs=1e-12)
    check_jvp(det, (a,))
    check_hessian(det, a)         # det is a polynomial: its differences are exact enough


def test_a_stack_with_a_singular_matrix():
    from numpy_cases import check_hessian, fd_array_grad
    a = np.stack([RANK_2, REGULAR])
    np.testing.assert_allclose(s2sad.grad(weighted_dets)(a),
                               fd_array_grad(weighted_dets, (a,), 0), rtol=1e-7, atol=1e-8)
    check_hessian(weighted_dets, a)


def test_scipy_det_of_a_singular_matrix():
    linalg = pytest.importorskip("scipy.linalg")

    def scipy_det(a):
        return linalg.det(a)
    np.testing.assert_allclose(s2sad.grad(scipy_det)(RANK_2), cofactor_matrix(RANK_2),
                               atol=1e-12)
    t = np.eye(3)
    assert s2sad.jvp(scipy_det, (RANK_1,), (t,))[1] == pytest.approx(0.0, abs=1e-12)


def test_nearly_singular_and_well_conditioned_cofactors_agree_with_the_minors():
    # the well-conditioned path (det * inv(a).T) and the SVD's, each where it is taken
    from s2sad.rules.factorizations import COFACTORS_BY_INVERSE, cofactors, cofactors_dot
    nearly = RANK_2 + np.diag([0.0, 0.0, 1e-12])
    assert 3 * np.abs(nearly).max() * np.abs(np.linalg.inv(nearly)).max() > COFACTORS_BY_INVERSE
    for a in (nearly, REGULAR, RANK_1):
        np.testing.assert_allclose(cofactors(a, np.linalg.det(a)), cofactor_matrix(a),
                                   rtol=1e-9, atol=1e-9)
        t = np.arange(9.0).reshape(3, 3) / 5.0 - 0.7
        h = 1e-5
        want = (cofactor_matrix(a + h * t) - cofactor_matrix(a - h * t)) / (2 * h)
        np.testing.assert_allclose(cofactors_dot(a, np.linalg.det(a), t), want, rtol=1e-6,
                                   atol=1e-8)
