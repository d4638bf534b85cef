"""`scipy.spatial.distance.cdist` and `pdist` (s2sad/rules/distances.py) in every mode,
against central differences in float64 (never s2sad against itself), as
tests/test_rules_scipy.py checks the other SciPy rules: grad, vjp, jvp and the Hessian of
every metric with a rule, with respect to both arrays; the subgradient at equal rows; the
metrics without a rule refused. SciPy is optional: without it this module is skipped."""
import warnings

import numpy as np
import pytest

from optional import require

require("scipy", "scipy")
from scipy.spatial import distance  # noqa: E402
from scipy.spatial.distance import cdist, pdist  # noqa: E402

from numpy_cases import (Samples, check_hessian, check_jvp, check_vjp,  # noqa: E402
                         gradient_failures, params, unsmooth_points)

import s2sad  # noqa: E402
from s2sad.errors import MissingRuleError  # noqa: E402

S = Samples(20261207)
R = S.real
_WRNG = np.random.default_rng(79)
W32, W3 = _WRNG.standard_normal((3, 2)), _WRNG.standard_normal(3)


def d_euclidean(a, b):
    return cdist(a, b) * W32 + np.sum(pdist(a, "euclidean"))


def d_sqeuclidean(a, b):
    return cdist(a, b, "sqeuclidean") + np.sum(pdist(a, metric="sqeuclidean") * W3)


def d_cityblock(a, b):
    return cdist(a, b, metric="cityblock") * W32 + pdist(b, "cityblock")


def d_chebyshev(a, b):
    return cdist(a, b, "chebyshev") + np.sum(pdist(a, "chebyshev") * W3)


def d_minkowski(a, b):
    return (cdist(a, b, "minkowski", p=3) * W32 + cdist(a, b, "minkowski", p=1.5)
            + np.sum(pdist(a, "minkowski", p=2.5) * W3) + cdist(a, b, "minkowski"))


def d_cosine(a, b):
    return cdist(a, b, "cosine") * W32 + np.sum(pdist(a, "cosine") * W3)


def d_scalar(a, b):
    return np.sum(cdist(a, b) ** 2 * W32) + np.sum(np.sin(pdist(a, "cosine")) * W3)


# (rows apart, and no two coordinates of a difference alike in size: chebyshev's maximum
# and cityblock's signs are smooth there)
CASES = {name: (fn, {"3x4-2x4": (R((3, 4)), R((2, 4))), "3x2-2x2": (R((3, 2)), R((2, 2)))})
         for name, fn in [("euclidean", d_euclidean), ("sqeuclidean", d_sqeuclidean),
                          ("cityblock", d_cityblock), ("chebyshev", d_chebyshev),
                          ("minkowski", d_minkowski), ("cosine", d_cosine),
                          ("scalar", d_scalar)]}


def h_metrics(x):
    a, b = x[:9].reshape(3, 3), x[9:].reshape(2, 3)
    return (np.sum(cdist(a, b) ** 2 * W32) + np.sum(np.sin(pdist(a, "sqeuclidean")) * W3)
            + np.sum(cdist(a, b, "minkowski", p=3) * W32) + np.sum(pdist(b, "cosine") ** 2)
            + np.sum(np.cos(pdist(a, "cityblock"))) + np.sum(cdist(b, a, "chebyshev") ** 2))


HESSIANS = {"metrics": (h_metrics, [R((15,))])}


@pytest.mark.parametrize("fn, args", params(CASES))
def test_grad_matches_finite_differences(fn, args):
    if np.ndim(fn(*args)) != 0:
        pytest.skip("an array value: the vjp check covers it")
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        grads = s2sad.grad(fn, wrt=(0, 1))(*args)
    failures = gradient_failures(grads, args, lambda *a: float(fn(*a)))
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("fn, args", params(CASES))
def test_vjp_matches_finite_differences(fn, args):
    check_vjp(fn, args)


@pytest.mark.parametrize("fn, args", params(CASES))
def test_jvp_matches_finite_differences(fn, args):
    check_jvp(fn, args)


def test_sample_points_are_smooth():
    bad = unsmooth_points([(p.id, *p.values) for p in params(CASES)])
    assert not bad, ", ".join(bad)


@pytest.mark.parametrize("fn, x", params({k: (f, dict(enumerate(p)))
                                           for k, (f, p) in HESSIANS.items()}))
def test_hessian_matches_finite_differences(fn, x):
    check_hessian(fn, x)


def self_distances(x, w):
    return np.sum(cdist(x, x) * w) + np.sum(cdist(x, x, "minkowski", p=3) * w)


def repeated_rows(x):
    return np.sum(pdist(x) * np.arange(1.0, 4.0))


def test_equal_rows_take_the_subgradient_zero():
    """The distance of a row to itself (cdist(X, X)'s diagonal, constantly 0) and of two
    equal rows has slope 0, where JAX's `sqrt(sum(d ** 2))` gives NaN: finite, and for
    the diagonal the derivative of the function. Off the diagonal, and for the pair of
    distinct rows, central differences."""
    x = np.array([[0.3, -1.2], [1.1, 0.4], [-0.7, 0.9]])
    w = np.array([[5.0, 1.0, -2.0], [0.5, 7.0, 1.5], [-1.0, 2.5, 3.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        g = s2sad.grad(self_distances)(x, w)
    off = w * (1 - np.eye(3))           # the diagonal changes nothing: 0 there
    np.testing.assert_allclose(g, s2sad.grad(self_distances)(x, off), rtol=1e-12)
    assert not gradient_failures((g,), (x, w), lambda *a: float(self_distances(*a)))
    same = np.array([[0.5, 1.0], [0.5, 1.0], [2.0, -1.0]])      # rows 0 and 1 equal
    g = s2sad.grad(repeated_rows)(same)
    # pairs (0, 1), (0, 2), (1, 2) weighted 1, 2, 3; the first contributes 0
    u02 = (same[0] - same[2]) / np.linalg.norm(same[0] - same[2])
    np.testing.assert_allclose(g, [2 * u02, 3 * u02, -5 * u02], rtol=1e-12)


def weighted_metric(a, b):
    return np.sum(cdist(a, b, "seuclidean", V=np.ones(2)))


def canberra(a, b):
    return np.sum(cdist(a, b, "canberra"))


def test_a_metric_without_a_rule_is_refused():
    a, b = R((3, 2)), R((2, 2))
    with pytest.raises(MissingRuleError, match="cdist"):
        s2sad.grad(weighted_metric)(a, b)
    with pytest.raises(MissingRuleError, match="metric='canberra'"):
        s2sad.grad(canberra)(a, b)


def test_cdist_and_pdist_have_rules():
    from s2sad.rules import registry
    assert registry.lookup(distance.cdist) is not None
    assert registry.lookup(distance.pdist) is not None
