"""The derivatives of distribution functions in their shape parameters (rules/incomplete.py):
the cdf, sf, logcdf and logsf of `stats.gamma` (in `a`), `stats.beta` (`a`, `b`) and
`stats.t` (`df`), and `special.gammainc`, `gammaincc`, `betainc`; and the samples of
dimension 1 of `multivariate_normal` and `multivariate_t`. Every derivative is checked
against central differences in float64 of the function as SciPy computes it: grad at
points from small to large shape parameters, from x near 0 to far in the upper tail;
vjp and jvp with arrays, `loc` and `scale`; hessians by differences of differences.
"""
import numpy as np
import pytest

from optional import require

scipy = require("scipy", "scipy")
from scipy import special, stats  # noqa: E402

from numpy_cases import check_hessian, check_jvp, check_vjp, params  # noqa: E402

import s2sad  # noqa: E402
from s2sad.errors import MissingRuleError  # noqa: E402

# (quad meets the tolerance it is asked for: a warning that it does not fails a test)
pytestmark = pytest.mark.filterwarnings("error::scipy.integrate.IntegrationWarning")


# -- one point each: the shape parameters first, then x --------------------------------
def gamma_cdf(a, x):
    return stats.gamma.cdf(x, a)


def gamma_sf(a, x):
    return stats.gamma.sf(x, a)


def gamma_logcdf(a, x):
    return stats.gamma.logcdf(x, a)


def gamma_logsf(a, x):
    return stats.gamma.logsf(x, a)


def beta_cdf(a, b, x):
    return stats.beta.cdf(x, a, b)


def beta_sf(a, b, x):
    return stats.beta.sf(x, a, b)


def beta_logcdf(a, b, x):
    return stats.beta.logcdf(x, a, b)


def beta_logsf(a, b, x):
    return stats.beta.logsf(x, a, b)


def t_cdf(df, x):
    return stats.t.cdf(x, df)


def t_sf(df, x):
    return stats.t.sf(x, df)


def t_logcdf(df, x):
    return stats.t.logcdf(x, df)


def t_logsf(df, x):
    return stats.t.logsf(x, df)


def gammainc(a, x):
    return special.gammainc(a, x)


def gammaincc(a, x):
    return special.gammaincc(a, x)


def betainc(a, b, x):
    return special.betainc(a, b, x)


_GAMMA = [(0.05, 1e-5), (0.3, 0.01), (0.3, 2.0), (1.0, 1e-3), (2.5, 0.5), (2.5, 8.0),
          (5.0, 60.0), (50.0, 30.0), (50.0, 70.0), (1000.0, 1100.0), (50.0, 1e-3)]
_BETA = [(0.05, 0.05, 1e-6), (0.05, 0.05, 1 - 1e-6), (0.3, 0.4, 0.01), (0.3, 0.4, 0.99),
         (2.5, 3.0, 0.1), (2.5, 3.0, 0.9), (0.5, 5.0, 0.3), (5.0, 0.5, 0.7), (1.0, 1.0, 0.3),
         (200.0, 300.0, 0.3), (200.0, 300.0, 0.45), (20.0, 30.0, 1e-3), (20.0, 30.0, 0.995)]
_T = [(0.5, -3.0), (0.5, 40.0), (3.0, 0.5), (3.0, -8.0), (100.0, 2.0), (2.5, -30.0),
      (1e4, -5.0), (3.0, -1e3), (0.5, 1e6)]
POINTS = [pytest.param(f, p, id=f"{f.__name__}{p}") for fns, points in (
    ((gamma_cdf, gamma_sf, gamma_logcdf, gamma_logsf, gammainc, gammaincc), _GAMMA),
    ((beta_cdf, beta_sf, beta_logcdf, beta_logsf, betainc), _BETA),
    ((t_cdf, t_sf, t_logcdf, t_logsf), _T)) for f in fns for p in points]


def central(f, args, i):
    """d f / d args[i] by a central difference of relative step 1e-6 (of 1 - x for an x
    of a beta distribution near 1)."""
    v = args[i]
    h = 1e-6 * (min(v, 1 - v) if f in (beta_cdf, beta_sf, beta_logcdf, beta_logsf, betainc)
                and i == 2 else abs(v) if v else 1.0)
    up, down = list(args), list(args)
    up[i] += h
    down[i] -= h
    return (f(*up) - f(*down)) / (up[i] - down[i])        # (the step as rounded)


@pytest.mark.parametrize("fn, point", POINTS)
def test_grad_in_the_shape_parameters_and_x(fn, point):
    args = point
    grads = s2sad.grad(fn, wrt=tuple(range(len(args))))(*args)
    scale = max(1.0, abs(fn(*args)))
    for i, g in enumerate(grads):
        # (a difference of a value near 1 loses digits: 1e-9 of the value, absolutely)
        np.testing.assert_allclose(g, central(fn, args, i), rtol=1e-6, atol=1e-9 * scale,
                                   err_msg=f"argument {i}")


# -- arrays, loc and scale, in reverse and forward mode -------------------------------
X4 = np.array([0.2, 1.1, 3.5, 9.0])
U4 = np.array([0.05, 0.3, 0.6, 0.97])
W4 = np.array([0.7, -1.3, 0.4, 1.1])


def v_gamma(a, loc, scale):
    return (stats.gamma.cdf(X4, a, loc, scale) + stats.gamma.sf(X4[::-1], 1.1 * a, scale=scale)
            + stats.gamma.logcdf(X4, 2.0 * a, loc=loc) + stats.gamma.logsf(X4, a, loc, scale))


def v_beta(a, b, x):
    return (stats.beta.cdf(x, a, b) + stats.beta.sf(x, a, b[0]) + stats.beta.logcdf(x, a, b)
            + stats.beta.logsf(x[:, None] * 0.9, a, b))


def v_t(df, x, scale):
    return (stats.t.cdf(x, df, 0.3, scale) + stats.t.sf(x, df[0]) + stats.t.logcdf(x, df)
            + stats.t.logsf(x[:, None], df, scale=scale))


def v_tails(x, loc, scale):
    return (stats.expon.sf(x, loc, scale) + stats.expon.logsf(x, loc=loc, scale=scale)
            + stats.norm.sf(x, loc, scale) + stats.norm.logsf(4 * x, loc, scale=scale))


def v_frozen(a, s):
    # (a frozen distribution's sf and logsf are its distribution's)
    d = stats.gamma(a, scale=s)
    return d.sf(X4) + d.logsf(3.0 * X4) + stats.beta(a, 2.0).logsf(U4)


def v_special(a, b, x):
    return (special.gammainc(a, 3 * x) + special.gammaincc(a[:, None], 3 * x)
            + special.betainc(a, b, x))


ARRAYS = {
    "gamma": (v_gamma, {"vec": (np.array([0.4, 1.5, 3.0, 12.0]), 0.05, 1.3),
                        "py": (2.5, 0.05, 1.3)}),
    "beta": (v_beta, {"vec": (np.array([0.3, 1.5, 4.0, 2.0]), np.array([0.7, 2.0, 1.2, 9.0]),
                              U4)}),
    "t": (v_t, {"vec": (np.array([0.8, 2.5, 5.0, 40.0]), np.array([-6.0, -0.4, 1.2, 25.0]),
                        1.7)}),
    "tails": (v_tails, {"vec": (X4 + 0.5, np.array([0.1, 0.2, 0.0, 0.3]), 1.4)}),
    "frozen": (v_frozen, {"vec": (np.array([0.4, 1.5, 3.0, 12.0]), 1.3), "py": (2.5, 0.7)}),
    "special": (v_special, {"vec": (np.array([0.3, 1.5, 4.0, 2.0]),
                                    np.array([0.7, 2.0, 1.2, 9.0]), U4)}),
}


@pytest.mark.parametrize("fn, args", params(ARRAYS))
def test_vjp_with_arrays_matches_finite_differences(fn, args):
    check_vjp(fn, args)


@pytest.mark.parametrize("fn, args", params(ARRAYS))
def test_jvp_with_arrays_matches_finite_differences(fn, args):
    check_jvp(fn, args)


# -- second derivatives -----------------------------------------------------------------
def h_gamma(x):
    a = np.exp(x)
    return np.sum(stats.gamma.cdf(np.array([0.3, 2.0, 9.0]), a)
                  + stats.gamma.logsf(np.array([0.3, 2.0, 9.0]) * (1 + x[::-1] ** 2), a, 0.1, 1.2))


def h_beta(x):
    a, b = 0.5 + x[:2] ** 2, 1.5 + x[1:]
    return np.sum(stats.beta.logcdf(np.array([0.2, 0.7]), a, b)
                  + stats.beta.sf(np.array([0.1, 0.8]), b, a)
                  + special.betainc(a, b, 0.4 + 0.1 * x[:2]))


def h_t(x):
    return np.sum(stats.t.cdf(np.array([-2.0, 0.5, 3.0]) + x, 1.0 + x * x)
                  + stats.t.logsf(x, 3.0 + x[::-1]) + stats.t.logcdf(4 * x, 0.7 + x * x))


def h_gammainc(x):
    return np.sum(special.gammainc(1 + x * x, 2 * x + 3)
                  * special.gammaincc(0.5 + x * x, np.array([0.1, 1.0, 5.0])))


HESSIANS = {"gamma": (h_gamma, [np.array([0.3, -0.5, 1.2]), np.array([-2.0, 0.1, 3.0])]),
            "beta": (h_beta, [np.array([0.3, -0.5, 0.8])]),
            "t": (h_t, [np.array([0.3, -0.5, 1.2])]),
            "gammainc": (h_gammainc, [np.array([0.3, -0.5, 1.2])])}


@pytest.mark.parametrize("fn, x", params({k: (f, dict(enumerate(p)))
                                           for k, (f, p) in HESSIANS.items()}))
def test_hessian_matches_finite_differences(fn, x):
    check_hessian(fn, x)


def mixed_in_a_and_x(a, b, x):
    return s2sad.grad(beta_logsf)(a, b, x)


def logsf_slope(a, b, x):
    """d/dx of beta's logsf, -pdf / sf, as SciPy computes them."""
    return -np.exp(stats.beta.logpdf(x, a, b) - stats.beta.logsf(x, a, b))


@pytest.mark.parametrize("a, b, x", [(0.128, 0.125, 1e-20), (2.5, 3.0, 0.3), (5.0, 0.5, 0.9),
                                     (0.3, 4.0, 1e-4)])
def test_the_shape_derivative_of_logsf_in_x_far_in_the_lower_tail(a, b, x):
    # (1 - I_x(a, b) where I_x(a, b) is small but 1 - x rounds to 1)
    got = s2sad.grad(mixed_in_a_and_x, wrt=2)(a, b, x)
    expected = central(lambda v: logsf_slope(v, b, x), (a,), 0)
    np.testing.assert_allclose(got, expected, rtol=1e-6)


def cdf_in_a(a):
    return stats.gamma.cdf(0.5, a)


def jvp_in_a(a):
    return s2sad.jvp(cdf_in_a, (a,), (1.0,))[1]


def jvp2_in_a(a):
    return s2sad.jvp(jvp_in_a, (a,), (1.0,))[1]


def second_difference(f, a, h=1e-4):
    return (f(a + h) - 2 * f(a) + f(a - h)) / (h * h)


def test_a_third_derivative_in_a_shape_parameter_is_refused():
    # (the second derivatives are integrals too, in reverse and forward mode; the third
    # have no rule, and are refused where s2sad compiles)
    expected = second_difference(cdf_in_a, 2.5)
    f = s2sad.grad(s2sad.grad(cdf_in_a))
    np.testing.assert_allclose(f(2.5), expected, rtol=1e-5)
    np.testing.assert_allclose(jvp2_in_a(2.5), expected, rtol=1e-5)
    for third in (lambda: s2sad.grad(f)(2.5), lambda: s2sad.jvp(jvp2_in_a, (2.5,), (1.0,))):
        with pytest.raises(MissingRuleError,
                           match=r"test_rules_shape_cdfs.py:\d+.*_s2s_shape_cdf2"):
            third()


# -- multivariate_normal and multivariate_t: samples of dimension 1 --------------------
def m_t(x, df):
    # (no loc, shape 1: SciPy reads the vector x as len(x) samples of dimension 1)
    return np.sum(W4[:np.size(x)] * stats.multivariate_t.logpdf(x, df=df))


def m_t_pdf(x, loc, shape, df):
    return np.sum(stats.multivariate_t.pdf(x, loc, shape, df))


def m_normal(x, cov):
    return np.sum(W4[:np.size(x)] * stats.multivariate_normal.logpdf(x, cov=cov))


def m_normal_mean(x, mean, cov):
    return np.sum(stats.multivariate_normal.logpdf(x, mean, cov))


MULTIVARIATE = {
    "t": (m_t, {"vec": (np.array([0.3, -1.2, 2.0]), 3.0), "py": (0.3, 3.0)}),
    "t_pdf": (m_t_pdf, {"vec": (np.array([0.3, 0.2]), np.array([0.1]), np.array([[1.5]]), 2.5),
                        "py": (np.array([0.3, 0.2]), 0.1, 1.5, 2.5),
                        "2d": (np.array([[0.3, 0.2]]), np.array([0.1, 0.0]), 1.5, 2.5)}),
    "normal": (m_normal, {"vec": (np.array([0.3, -1.2, 2.0]), 1.7), "py": (0.3, 1.7),
                          "2d": (np.array([0.3, 0.2]), np.array([[1.7, 0.2], [0.2, 1.0]]))}),
    "normal_mean": (m_normal_mean, {"vec": (np.array([0.3, 0.2, 0.5]), 0.4, 1.7)}),
}


@pytest.mark.parametrize("fn, args", params(MULTIVARIATE))
def test_samples_of_dimension_one_match_finite_differences(fn, args):
    check_vjp(fn, args)
    check_jvp(fn, args)
