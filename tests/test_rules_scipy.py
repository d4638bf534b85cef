"""The SciPy rules (s2sad/rules/scipy.py) in every mode, against central differences in
float64 (never s2sad against itself), as tests/test_rules_modes.py checks NumPy's:

* grad: `s2sad.grad` of each case with a scalar value, with respect to every argument;
* vjp: the pullback of a fixed random cotangent `u` is the gradient of <u, f(args)>;
* jvp: the tangent along fixed random directions is the directional derivative of f;
* hessian: `HESSIANS`, scalar functions of one array, by differences of differences.

`test_every_scipy_rule_is_checked` fails for a registered SciPy primitive that no case
calls. SciPy is optional: without it this module is skipped.
"""
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

from optional import require

scipy = require("scipy", "scipy")
from scipy import integrate, linalg, special, stats  # noqa: E402
from scipy.stats import norm  # noqa: E402

from numpy_cases import (Samples, check_hessian, check_jvp, check_vjp, fd_array_grad,  # noqa: E402
                         gradient_failures, params, unsmooth_points)

import s2sad  # noqa: E402
from s2sad.errors import MissingRuleError  # noqa: E402
from s2sad.rules import registry  # noqa: E402

S = Samples(20261128)
R = S.real
_WRNG = np.random.default_rng(78)
W4, W34 = _WRNG.standard_normal(4), _WRNG.standard_normal((3, 4))
I3 = np.eye(3)


def POS(shape):
    return S.uniform(shape, 0.3, 2.5)


def UNIT(shape):
    return S.uniform(shape, 0.05, 0.95)


def MAT(n=3):
    """A well-conditioned general matrix."""
    return R((n, n)) + 3 * np.eye(n)


# -- scipy.special ----------------------------------------------------------------------
def s_expit(x):
    return special.expit(x)


def s_logit(x):
    return special.logit(x)


def s_gammaln_digamma(x):
    return special.gammaln(x) * special.digamma(x) + special.psi(2.0 * x)


def s_erf(x):
    return special.erf(x) * special.erfc(0.5 * x)


def s_normal_tails(x):
    return special.erfcx(x) + special.ndtr(x) * special.log_ndtr(2.0 * x - 1.0)


def s_inverses(x):
    return special.log_expit(3.0 * x) + special.erfinv(x) * special.ndtri(0.5 + 0.4 * x) + (
        special.erfcinv(1.0 + 0.9 * x))


def s_log_expit_tails(x):
    return special.log_expit(x)


def s_log_ndtr(x):
    return special.log_ndtr(x)


def s_polygamma(x):
    return special.polygamma(1, x) + special.polygamma(2, x + 1.0) * x


def s_xlogy(x, y):
    return special.xlogy(x, y)


def s_xlog1py(x, y):
    return special.xlog1py(x, y)


def s_betaln(a, b):
    return special.betaln(a, b)


def s_logsumexp(a):
    return special.logsumexp(a)


def s_logsumexp_axis(a):
    return special.logsumexp(a, axis=1)


def s_logsumexp_keepdims(a):
    return special.logsumexp(a, axis=0, keepdims=True) * special.logsumexp(a, -1)[:, None]


def s_logsumexp_b(a, b):
    return special.logsumexp(a, b=b)


def s_logsumexp_b_axis(a, b):
    return special.logsumexp(a, axis=-1, b=b, keepdims=True)


def s_softmax(x):
    return special.softmax(x)


def s_softmax_axis(x):
    return special.softmax(x, axis=1) * special.softmax(x, 0)


def s_log_softmax(x):
    return special.log_softmax(x)


def s_log_softmax_axis(x):
    return special.log_softmax(x, axis=0) * special.log_softmax(x, axis=-1)


# -- scipy.linalg -----------------------------------------------------------------------
def spd(m):
    return m @ m.T + I3


def l_det_inv(a):
    return linalg.det(a) * linalg.inv(a)


def l_det(a):
    return linalg.det(a)


def l_expm(a):
    return linalg.expm(a)


def l_cholesky(m):
    return linalg.cholesky(spd(m))


def l_cholesky_lower(m):
    return linalg.cholesky(spd(m), lower=True)


def l_cho_solve(m, b):
    cf = linalg.cho_factor(spd(m))
    return linalg.cho_solve(cf, b)


def l_cho_solve_lower(m, b):
    c, low = linalg.cho_factor(spd(m), lower=True)
    return linalg.cho_solve((c, low), b)


def l_cho_factor(m):
    c, low = linalg.cho_factor(spd(m))
    return c


def l_gp(m, y):
    k = spd(m)
    cf = linalg.cho_factor(k, lower=True)
    alpha = linalg.cho_solve(cf, y)
    return 0.5 * (y @ alpha) + np.sum(np.log(np.diag(cf[0])))


def l_solve_triangular(a, b):
    return linalg.solve_triangular(a, b)


def l_solve_triangular_lower(a, b):
    return linalg.solve_triangular(a, b, lower=True, trans=1)


def l_solve_triangular_unit(a, b):
    return linalg.solve_triangular(a, b, trans="T", unit_diagonal=True)


def l_solve(a, b):
    return linalg.solve(a, b)


def l_solve_transposed(a, b):
    return linalg.solve(a, b, transposed=True)


def l_solve_sym(m, b):
    return linalg.solve(spd(m), b, assume_a="sym") + linalg.solve(spd(m), b, assume_a="pos",
                                                                   lower=True)


def l_lu(a, b):
    lu = linalg.lu_factor(a)
    return linalg.lu_solve(lu, b)


def l_lu_trans(a, b):
    lu, piv = linalg.lu_factor(a)
    return linalg.lu_solve((lu, piv), b, trans=1)


def l_lu_factor(a):
    lu, piv = linalg.lu_factor(a)
    return lu


def l_logm(a):
    return linalg.logm(a)


def l_sqrtm(a):
    return linalg.sqrtm(a)


def l_sylvester(a, b, q):
    return linalg.solve_sylvester(a, b, q)


def l_lyapunov(a, q):
    return linalg.solve_continuous_lyapunov(a, q)


# -- scipy.stats ------------------------------------------------------------------------
def t_logpdf(x, mu, s):
    return norm.logpdf(x, mu, s)


def t_logpdf_kw(x, mu, s):
    return stats.norm.logpdf(x, loc=mu, scale=s) + norm.logpdf(x, scale=s)


def t_logpdf_std(x):
    return norm.logpdf(x)


def t_pdf(x, mu, s):
    return norm.pdf(x, mu, scale=s)


def t_cdf(x, mu, s):
    return norm.cdf(x, loc=mu, scale=s)


def t_logcdf(x, mu, s):
    return norm.logcdf(x, mu, s)


def t_mvn(x, mean, m):
    return stats.multivariate_normal.logpdf(x, mean, spd(m))


def t_mvn_kw(x, m):
    return stats.multivariate_normal.logpdf(x, cov=spd(m))


def t_mvn_diagonal(x, mean, v):
    return stats.multivariate_normal.logpdf(x, mean=mean, cov=v * v + 0.5)


# the other distributions (rules/distributions.py)
def t_t(x, df, mu, s):
    return stats.t.logpdf(x, df, mu, s) + stats.t.pdf(x, df, loc=mu, scale=s)


def t_t_cdf(x, mu, s):
    return stats.t.cdf(x, 3.0, mu, s) + stats.t.logcdf(x, 2.5, loc=mu, scale=s)


def t_gamma(x, a, mu, s):
    return stats.gamma.logpdf(x, a, mu, s) + stats.gamma.pdf(x, a, loc=mu, scale=s)


def t_gamma_cdf(x, mu, s):
    return stats.gamma.cdf(x, 3.0, mu, s) + stats.gamma.logcdf(x, 2.5, loc=mu, scale=s)


def t_beta(x, a, b):
    return stats.beta.logpdf(x, a, b) + stats.beta.pdf(x, a, b, scale=1.2)


def t_beta_cdf(x, mu, s):
    return stats.beta.cdf(x, 2.0, 3.0, mu, s) + stats.beta.logcdf(x, 2.5, 1.5, loc=mu, scale=s)


def t_expon(x, mu, s):
    return (stats.expon.logpdf(x, mu, s) + stats.expon.pdf(x, loc=mu, scale=s)
            + stats.expon.cdf(x, mu, s) + stats.expon.logcdf(x, scale=s))


K3 = np.array([0.0, 2.0, 5.0])


def t_poisson(mu):
    return (stats.poisson.logpmf(K3, mu) + stats.poisson.pmf(K3, mu) + stats.poisson.cdf(K3, mu)
            + stats.poisson.logcdf(K3 + 1.5, mu, loc=1))


def t_binom(p):
    return (stats.binom.logpmf(K3, 7, p) + stats.binom.pmf(K3, 7, p) + stats.binom.cdf(K3, 7, p)
            + stats.binom.logcdf(K3, 6, p, loc=-1))


def t_dirichlet(u, alpha):
    # (x on the simplex: SciPy refuses a point off it, as a finite difference of x is)
    x = np.exp(u) / np.sum(np.exp(u), 0)
    return stats.dirichlet.logpdf(x, alpha) + stats.dirichlet.pdf(x, alpha)


def t_mvt(x, loc, m, df):
    return (stats.multivariate_t.logpdf(x, loc, spd(m), df)
            + stats.multivariate_t.pdf(x, loc=loc, shape=spd(m), df=df))


def t_mvt_shapes(x, v):
    return (stats.multivariate_t.logpdf(x, np.zeros(3), v * v + 0.5, 2.5)
            + stats.multivariate_t.logpdf(x, W4[:3], shape=v[0] ** 2 + 1.0))


# -- scalar losses, for grad ------------------------------------------------------------
def g_special(x, y):
    return np.sum(W34 * (special.expit(x) + special.logit(special.expit(x)) * special.erf(x)
                         + special.erfc(x) * special.gammaln(y) + special.digamma(y)
                         + special.xlogy(x, y) + special.xlog1py(x, y)
                         + special.betaln(y, special.expit(x) + 0.5)))


def g_softmax(x, b):
    return (np.sum(W34 * special.softmax(x, axis=1)) + np.sum(W34 * special.log_softmax(x, 0))
            + np.sum(W34[:, 0] * special.logsumexp(x, axis=1, b=b)) + special.logsumexp(x))


def g_linalg(m, b):
    a = m + 3.0 * I3
    k = spd(m)
    return (linalg.det(a) + np.sum(W34[:, :3] * linalg.inv(a)) + np.sum(W34[:, 1:]
                                                                        * linalg.expm(0.3 * m))
            + b @ linalg.solve(a, b) + b @ linalg.solve_triangular(a, b, lower=True)
            + b @ linalg.cho_solve(linalg.cho_factor(k), b)
            + b @ linalg.lu_solve(linalg.lu_factor(a), b, trans=1)
            + np.sum(W34[:, :3] * linalg.cholesky(k)))


def g_norm(x, mu, s):
    return np.sum(W34 * (norm.logpdf(x, mu, s) + norm.pdf(x, loc=mu, scale=s)
                         + norm.cdf(x, mu) + norm.logcdf(x, scale=s)))


def g_logistic(w, x, y):
    """A logistic regression's negative log-likelihood, written with expit and xlogy."""
    p = special.expit(x @ w)
    return -np.sum(special.xlogy(y, p) + special.xlogy(1.0 - y, 1.0 - p))


_BINARY = {"mat-mat": ((3, 4), (3, 4)), "mat-row": ((3, 4), (4,)), "col-row": ((3, 1), (4,)),
           "mat-py": ((3, 4), None), "py-py": (None, None)}
_NORM = {"mat-mat-mat": ((3, 4), (3, 4), (3, 4)), "mat-row-py": ((3, 4), (4,), None),
         "col-row-mat": ((3, 1), (4,), (3, 4)), "py": (None, None, None)}
_GAMMA = {"py": (2.3,), "neg": (np.array([-1.3, -0.3, 0.7, 3.2]),), "mat": (POS((3, 4)),)}

#: {id: (function, {label: args})}
CASES = {
    "expit": (s_expit, {"py": (R(None),), "vec": (R((4,)),), "mat": (R((3, 4)),)}),
    "logit": (s_logit, {"py": (UNIT(None),), "mat": (UNIT((3, 4)),)}),
    "gammaln_digamma": (s_gammaln_digamma, _GAMMA),
    "erf": (s_erf, {"py": (R(None),), "mat": (R((3, 4)),)}),
    "normal_tails": (s_normal_tails, {"py": (R(None),), "mat": (R((3, 4)),)}),
    "inverses": (s_inverses, {"py": (0.3,), "mat": (S.uniform((3, 4), -0.9, 0.9),)}),
    "log_expit_tails": (s_log_expit_tails, {"tails": (np.array([-40.0, -3.0, 0.5, 40.0]),)}),
    "log_ndtr_tail": (s_log_ndtr, {"tail": (np.array([-30.0, -8.0, 0.5, 6.0]),)}),
    "polygamma": (s_polygamma, {"py": (2.3,), "mat": (POS((3, 4)),)}),
    "xlogy": (s_xlogy, {k: (R(a), POS(b)) for k, (a, b) in _BINARY.items()}),
    "xlog1py": (s_xlog1py, {k: (R(a), S.uniform(b, -0.5, 2.0)) for k, (a, b) in
                            _BINARY.items()}),
    "betaln": (s_betaln, {k: (POS(a), POS(b)) for k, (a, b) in _BINARY.items()}),
    "logsumexp": (s_logsumexp, {"vec": (R((4,)),), "mat": (R((3, 4)),)}),
    "logsumexp_axis": (s_logsumexp_axis, {"mat": (R((3, 4)),), "3d": (R((2, 3, 4)),)}),
    "logsumexp_keepdims": (s_logsumexp_keepdims, {"mat": (R((3, 4)),)}),
    "logsumexp_b": (s_logsumexp_b, {"mat": (R((3, 4)), POS((3, 4))),
                                    "row": (R((3, 4)), POS((4,)))}),
    "logsumexp_b_axis": (s_logsumexp_b_axis, {"mat": (R((3, 4)), POS((3, 4))),
                                              "row": (R((3, 4)), POS((4,)))}),
    "softmax": (s_softmax, {"vec": (R((4,)),), "mat": (R((3, 4)),)}),
    "softmax_axis": (s_softmax_axis, {"mat": (R((3, 4)),)}),
    "log_softmax": (s_log_softmax, {"vec": (R((4,)),), "mat": (R((3, 4)),)}),
    "log_softmax_axis": (s_log_softmax_axis, {"mat": (R((3, 4)),)}),
    "det_inv": (l_det_inv, {"mat": (MAT(),)}),
    "det": (l_det, {"mat": (MAT(),), "4": (MAT(4),)}),
    "expm": (l_expm, {"mat": (0.5 * R((3, 3)),), "batch": (0.5 * R((2, 3, 3)),)}),
    # (near the identity: real logarithms and square roots)
    "logm": (l_logm, {"mat": (0.3 * R((3, 3)) + 2 * I3,), "batch": (0.3 * R((2, 3, 3)) + 2 * I3,)}),
    "sqrtm": (l_sqrtm, {"mat": (0.3 * R((3, 3)) + 2 * I3,),
                        "batch": (0.3 * R((2, 3, 3)) + 2 * I3,)}),
    "sylvester": (l_sylvester, {"mat": (MAT(), MAT(), R((3, 3))),
                                "rect": (MAT(), MAT(2), R((3, 2)))}),
    "lyapunov": (l_lyapunov, {"mat": (MAT(), R((3, 3)))}),
    "cholesky": (l_cholesky, {"mat": (R((3, 3)),)}),
    "cholesky_lower": (l_cholesky_lower, {"mat": (R((3, 3)),)}),
    "cho_solve": (l_cho_solve, {"vec": (R((3, 3)), R((3,))), "mat": (R((3, 3)), R((3, 2)))}),
    "cho_solve_lower": (l_cho_solve_lower, {"vec": (R((3, 3)), R((3,))),
                                            "mat": (R((3, 3)), R((3, 2)))}),
    "cho_factor": (l_cho_factor, {"mat": (R((3, 3)),)}),
    "gp": (l_gp, {"vec": (R((3, 3)), R((3,)))}),
    "solve_triangular": (l_solve_triangular, {"vec": (MAT(), R((3,))),
                                              "mat": (MAT(), R((3, 2)))}),
    "solve_triangular_lower": (l_solve_triangular_lower, {"vec": (MAT(), R((3,))),
                                                          "mat": (MAT(), R((3, 2)))}),
    "solve_triangular_unit": (l_solve_triangular_unit, {"vec": (MAT(), R((3,)))}),
    "solve": (l_solve, {"vec": (MAT(), R((3,))), "mat": (MAT(), R((3, 2)))}),
    "solve_transposed": (l_solve_transposed, {"vec": (MAT(), R((3,)))}),
    "solve_sym": (l_solve_sym, {"vec": (R((3, 3)), R((3,))), "mat": (R((3, 3)), R((3, 2)))}),
    "lu": (l_lu, {"vec": (MAT(), R((3,))), "mat": (MAT(4), R((4, 2)))}),
    "lu_trans": (l_lu_trans, {"vec": (MAT(), R((3,)))}),
    "lu_factor": (l_lu_factor, {"mat": (R((3, 3)),), "4": (R((4, 4)),)}),
    "norm_logpdf": (t_logpdf, {k: (R(a), R(b), POS(c)) for k, (a, b, c) in _NORM.items()}),
    "norm_logpdf_kw": (t_logpdf_kw, {k: (R(a), R(b), POS(c)) for k, (a, b, c) in
                                     _NORM.items()}),
    "norm_logpdf_std": (t_logpdf_std, {"py": (R(None),), "mat": (R((3, 4)),)}),
    "norm_pdf": (t_pdf, {k: (R(a), R(b), POS(c)) for k, (a, b, c) in _NORM.items()}),
    "norm_cdf": (t_cdf, {k: (R(a), R(b), POS(c)) for k, (a, b, c) in _NORM.items()}),
    "norm_logcdf": (t_logcdf, {k: (R(a), R(b), POS(c)) for k, (a, b, c) in _NORM.items()}
                    | {"tail": (np.array([-30.0, -8.0, 0.5, 6.0]), 0.2, 1.3)}),
    "mvn": (t_mvn, {"vec": (R((3,)), R((3,)), R((3, 3))),
                    "samples": (R((4, 3)), R((3,)), R((3, 3)))}),
    "mvn_kw": (t_mvn_kw, {"samples": (R((4, 3)), R((3, 3)))}),
    "mvn_diagonal": (t_mvn_diagonal, {"vec": (R((4, 3)), R((3,)), R((3,))),
                                      "number": (R((4, 3)), R((3,)), R(None))}),
    "t": (t_t, {"mat-py": (R((3, 4)), 3.5, R(None), POS(None)),
                "mat-row": (R((3, 4)), POS((4,)) + 2.0, R((4,)), POS((3, 1)))}),
    "t_cdf": (t_t_cdf, {k: (R(a), R(b), POS(c)) for k, (a, b, c) in _NORM.items()}),
    "gamma": (t_gamma, {"py": (2.4, 2.3, 0.1, 1.3),
                        "mat-row": (POS((3, 4)) + 1.0, POS((4,)) + 1.0, S.uniform((4,), 0.0, 0.5),
                                    POS((3, 1)))}),
    "gamma_cdf": (t_gamma_cdf, {"mat-row": (POS((3, 4)) + 1.0, S.uniform((4,), 0.0, 0.5),
                                            POS((3, 1)))}),
    "beta": (t_beta, {"py": (0.4, 2.3, 1.7), "mat-row": (UNIT((3, 4)), POS((4,)) + 1.0,
                                                         POS((3, 1)) + 1.0)}),
    "beta_cdf": (t_beta_cdf, {"mat": (UNIT((3, 4)) + 0.5, S.uniform(None, 0.3, 0.4),
                                      S.uniform(None, 1.5, 1.6))}),
    "expon": (t_expon, {"mat-row-py": (POS((3, 4)) + 0.5, S.uniform((4,), 0.0, 0.5), 1.3),
                        "py": (2.0, 0.5, 1.7)}),
    "poisson": (t_poisson, {"py": (2.3,), "vec": (POS((3,)) + 1.0,)}),
    "binom": (t_binom, {"py": (0.4,), "vec": (UNIT((3,)),)}),
    "dirichlet": (t_dirichlet, {"vec": (R((3,)), POS((3,)) + 1.0),
                                "samples": (R((3, 4)), POS((3,)) + 1.0)}),
    "mvt": (t_mvt, {"vec": (R((3,)), R((3,)), R((3, 3)), 3.5),
                    "samples": (R((4, 3)), R((3,)), R((3, 3)), 2.5)}),
    "mvt_shapes": (t_mvt_shapes, {"samples": (R((4, 3)), R((3,)))}),
    "g_special": (g_special, {"mat-row": (R((3, 4)), POS((4,))),
                              "mat-mat": (R((3, 4)), POS((3, 4)))}),
    "g_softmax": (g_softmax, {"mat-row": (R((3, 4)), POS((4,)))}),
    "g_linalg": (g_linalg, {"mat-vec": (R((3, 3)), R((3,)))}),
    "g_norm": (g_norm, {"mat-row-py": (R((3, 4)), R((4,)), 1.3),
                        "mat-col-mat": (R((3, 4)), R((3, 1)), POS((3, 4)))}),
    "g_logistic": (g_logistic, {"data": (R((3,)), R((5, 3)),
                                         np.array([0.0, 1.0, 1.0, 0.0, 1.0]))}),
}


# -- second derivatives -----------------------------------------------------------------
def h_special(x):
    return np.sum(W4 * (special.expit(x) + special.logit(0.3 + 0.1 * x * x) + special.erf(x)
                        * special.erfc(x) + special.xlogy(x, 2.0 + x * x)
                        + special.xlog1py(x * x, 1.0 + x * x)))


def h_gamma(x):
    return np.sum(W4 * (special.gammaln(x) * special.digamma(x)
                        + special.betaln(x * x, 1.5 + x * x) + special.polygamma(1, 1.0 + x * x)
                        + special.erfcx(x) * special.ndtr(x) + special.log_ndtr(x - 1.0)
                        + special.log_expit(x) + special.erfinv(0.2 * x)
                        + special.ndtri(0.5 + 0.1 * x) + special.erfcinv(1.0 + 0.1 * x)))


def h_softmax(x):
    a = x.reshape(2, 2)
    return (special.logsumexp(x) + np.sum(special.softmax(a, axis=1) * W34[:2, :2])
            + np.sum(special.log_softmax(x) * W4) + special.logsumexp(a, b=x[2:] ** 2))


def h_norm(x):
    return np.sum(W4 * (norm.logpdf(x, 0.3, 1.2) + norm.pdf(x, x[::-1], 1.5 + x * x)
                        + norm.cdf(x, scale=2.0) + norm.logcdf(x, x * 0.5, 1.1)))


def h_linalg(x):
    a = x.reshape(3, 3) + 3 * I3
    b = W34[:, 0]
    return (linalg.det(a) + np.sum(linalg.inv(a) * W34[:, :3]) + np.sum(linalg.expm(0.3 * a)
                                                                         * W34[:, 1:])
            + np.sum(linalg.solve(a, b) * W4[:3]) + np.sum(linalg.solve_triangular(a, b) * b))


def h_matrix_functions(x):
    a = x.reshape(2, 2) + 2 * I3[:2, :2]
    q = W34[:2, :2]
    return (np.sum(linalg.sqrtm(a) ** 2 * q) + np.sum(linalg.solve_sylvester(a, a.T @ a, q) * q.T)
            + np.sum(linalg.solve_continuous_lyapunov(a, q + a) ** 2))


def h_logm(x):
    # (two inputs: SciPy's logm is slow, and the differences of differences call it often)
    return np.sum(linalg.logm(np.array([[2.0 + x[0], 0.3], [x[1], 1.8 + x[0] * x[1]]])) * W4[:2])


def h_factors(x):
    m = x.reshape(3, 3)
    a = m @ m.T + I3
    cf = linalg.cho_factor(a)
    lu = linalg.lu_factor(m + 3 * I3)
    return (np.sum(linalg.cho_solve(cf, W4[:3]) * W34[0, :3])
            + np.sum(linalg.lu_solve(lu, W34[:, 0]) * W4[1:])
            + np.sum(linalg.cholesky(a, lower=True) * W34[:, 1:]))


def h_mvn(x):
    m = x[:9].reshape(3, 3)
    return np.sum(stats.multivariate_normal.logpdf(W34.T[:, :3] * x[9:], x[9:], m @ m.T + I3))


def h_distributions(x):
    p, q = 1.5 + x * x, 0.2 + 0.6 * special.expit(x)
    u = np.exp(x[:3]) / np.sum(np.exp(x[:3]))
    m = np.outer(x[1:], x[1:]) + I3
    return np.sum(W4 * (stats.t.logpdf(x, p, x[::-1], p) + stats.t.cdf(x, 2.5, 0.1, p)
                        + stats.gamma.logpdf(p, p[::-1], 0.1, 1.3) + stats.gamma.cdf(p, 2.0, x)
                        + stats.beta.logpdf(q, p, p[::-1]) + stats.beta.logcdf(q, 2.0, 1.5)
                        + stats.expon.pdf(p, 0.2, p[::-1]) + stats.expon.logcdf(p, scale=p)
                        + stats.poisson.logpmf(K3[0], p) + stats.poisson.cdf(K3[1], p)
                        + stats.binom.pmf(K3[1], 5, q) + stats.binom.logcdf(K3[1], 5, q))) + (
        stats.dirichlet.logpdf(u, p[1:]) + stats.multivariate_t.logpdf(x[:3], x[1:], m, p[0]))


HESSIANS = {
    "special": (h_special, [R((4,))]), "gamma": (h_gamma, [POS((4,))]),
    "softmax": (h_softmax, [R((4,))]), "norm": (h_norm, [R((4,))]),
    "linalg": (h_linalg, [R((9,))]), "factors": (h_factors, [R((9,))]),
    "mvn": (h_mvn, [R((12,))]), "matrix_functions": (h_matrix_functions, [0.3 * R((4,))]),
    "logm": (h_logm, [0.3 * R((2,))]), "distributions": (h_distributions, [R((4,))]),
}


# -- cholesky and cho_factor read one triangle of the matrix (the upper unless lower=True):
# the derivative of what SciPy computes is zero on the other one (own samples) ---------
PARTS = Samples(20250435)


def spd_plus(m, junk):
    """A positive definite matrix plus `junk` in every entry off the diagonal, which
    neither triangle of it is symmetric to."""
    return m @ m.T + I3 + junk - np.diag(np.diag(junk))


def t_cholesky(m):
    return linalg.cholesky(m) + linalg.cholesky(m.T, lower=True)


def t_cho_factor(m):
    return linalg.cho_factor(m)[0] + linalg.cho_factor(m, lower=True)[0]


def t_cho_solve(m, b):
    return linalg.cho_solve(linalg.cho_factor(m), b) + linalg.cho_solve(
        linalg.cho_factor(m.T, lower=True), b)


def t_mvn_cov(x, m):
    return stats.multivariate_normal.logpdf(x, cov=m) + stats.multivariate_normal.logpdf(
        x[0], W4[:3], m)


_NOT_SYMMETRIC = spd_plus(PARTS.real((3, 3)), PARTS.real((3, 3)))
CASES.update({
    "cholesky_one_triangle": (t_cholesky, {"mat": (_NOT_SYMMETRIC,)}),
    "cho_factor_one_triangle": (t_cho_factor, {"mat": (_NOT_SYMMETRIC,)}),
    "cho_solve_one_triangle": (t_cho_solve, {"vec": (_NOT_SYMMETRIC, PARTS.real((3,)))}),
    # (multivariate_normal reads the lower triangle of cov)
    "mvn_cov_one_triangle": (t_mvn_cov, {"mat": (PARTS.real((4, 3)), spd_plus(
        PARTS.real((3, 3)), np.triu(PARTS.real((3, 3)), 1))
        + 0.2 * np.tril(PARTS.real((3, 3)), -1))}),
})


def h_one_triangle(x):
    a = spd_plus(x.reshape(3, 3), np.triu(x.reshape(3, 3), 1) * 0.3)
    return (np.sum(linalg.cholesky(a) * W34[:, :3]) + np.sum(linalg.cho_factor(a)[0] ** 2)
            + np.sum(linalg.cho_solve(linalg.cho_factor(a.T, lower=True), W4[:3]) * W4[1:])
            + stats.multivariate_normal.logpdf(W4[1:], cov=a))


HESSIANS.update({"one_triangle": (h_one_triangle, [PARTS.real((9,))])})


# -- frozen distributions: `norm(mu, s).logpdf(x)` is `norm.logpdf(x, mu, s)`, also bound to
# a name, in a branch or a loop (own samples) -------------------------------------------
FROZEN = Samples(20261207)


def f_frozen(x, mu, s):
    d = norm(mu, s)
    e = stats.t(3.5, loc=mu, scale=s)
    return (d.logpdf(x) + d.pdf(x) + norm(mu, scale=s).cdf(x) + d.logcdf(x) * e.logpdf(x)
            + stats.t(4.0, mu, s).pdf(x) + stats.expon(mu - 3.0, s).logpdf(x))


def f_frozen_shapes(x, a, b):
    g = stats.gamma(a, scale=b)
    c = stats.gamma(2.0, scale=b)       # (the cdf in a shape parameter has no rule)
    return (g.logpdf(x) + stats.beta(a, b).logpdf(x / (1 + x)) + stats.gamma(a).pdf(x) * c.cdf(x)
            + stats.poisson(a * b).logpmf(K3[:, None]).sum(0) + stats.binom(7, 0.4 / a).pmf(2.0))


def f_frozen_multivariate(x, m, alpha):
    mvn = stats.multivariate_normal(m[0], spd(m))
    u = np.exp(x[0]) / np.sum(np.exp(x[0]))
    return mvn.logpdf(x) + stats.dirichlet(alpha).logpdf(u) + stats.multivariate_t(
        m[1], spd(m), df=3.0).logpdf(x)


def f_frozen_branch(x, mu, s):
    if mu > 0:
        d = norm(mu, s)
    else:
        d = norm(-mu, 2 * s)
    total = 0.0
    for k in range(3):
        e = norm(mu * k, s)
        total = total + e.logpdf(x) * d.cdf(x)
    return total + d.logpdf(x)


CASES.update({
    "frozen": (f_frozen, {"row-py": (FROZEN.real((4,)), FROZEN.real(None),
                                     FROZEN.uniform(None, 0.5, 2.0)),
                          "mat-row": (FROZEN.real((3, 4)), FROZEN.real((4,)),
                                      FROZEN.uniform((4,), 0.5, 2.0))}),
    "frozen_shapes": (f_frozen_shapes, {"row-py": (FROZEN.uniform((4,), 0.3, 2.0),
                                                   FROZEN.uniform(None, 1.5, 2.5),
                                                   FROZEN.uniform(None, 1.5, 2.5))}),
    "frozen_multivariate": (f_frozen_multivariate, {"samples": (
        FROZEN.real((4, 3)), FROZEN.real((3, 3)), FROZEN.uniform((3,), 1.5, 2.5))}),
    "frozen_branch": (f_frozen_branch, {"pos": (FROZEN.real((4,)), 0.7, 1.3),
                                        "neg": (FROZEN.real((4,)), -0.6, 0.8)}),
})


def h_frozen(x):
    d = norm(x[0], 1.0 + x[1] ** 2)
    return np.sum(d.logpdf(x) * W4) + np.sum(stats.t(3.0 + x[2] ** 2, x[3]).logpdf(x)) + np.sum(
        stats.gamma(2.0 + x[0] ** 2).logpdf(1.0 + x ** 2))


HESSIANS.update({"frozen": (h_frozen, [FROZEN.real((4,))])})


# -- scipy.integrate's rules on samples: simpson (an odd and an even number of samples,
# even and uneven spacing, along an axis of a matrix, x as 1-D or the samples' shape) and
# trapezoid as NumPy's (own samples) --------------------------------------------------
QUAD = Samples(20261208)
_XS = np.sort(QUAD.uniform((6,), 0.0, 3.0))
_X2 = np.sort(QUAD.uniform((3, 5), 0.0, 2.0), axis=1)


def q_simpson(y):
    return (integrate.simpson(np.sin(y) * y, x=_XS[:y.shape[-1]])
            + integrate.simpson(y ** 2, dx=0.3))


def q_simpson_axis(y):
    return integrate.simpson(np.exp(0.3 * y), x=_X2[:, :y.shape[-1]], axis=-1)


def q_simpson_axis0(y):
    return integrate.simpson(y * y, x=_XS[:y.shape[0]], axis=0)


def q_trapezoid(y):
    return integrate.trapezoid(np.cos(y), _XS[:y.shape[-1]]) + integrate.trapezoid(y, dx=0.5)


CASES.update({
    "simpson_odd": (q_simpson, {"vec5": (QUAD.real((5,)),)}),
    "simpson_even": (q_simpson, {"vec6": (QUAD.real((6,)),), "vec2": (QUAD.real((2,)),),
                                 "vec4": (QUAD.real((4,)),)}),
    "simpson_axis": (q_simpson_axis, {"mat5": (QUAD.real((3, 5)),),
                                      "mat4": (QUAD.real((3, 4)),)}),
    "simpson_axis0": (q_simpson_axis0, {"mat": (QUAD.real((4, 3)),)}),
    "trapezoid": (q_trapezoid, {"vec": (QUAD.real((6,)),), "mat": (QUAD.real((2, 6)),)}),
})


def h_quadrature(x):
    return integrate.simpson(np.sin(x) * x, x=_XS[:5]) + integrate.trapezoid(x ** 3, _XS[:5])


HESSIANS.update({"quadrature": (h_quadrature, [QUAD.real((5,))])})


def test_simpson_refuses_a_derivative_through_its_coordinates():
    def f(s):
        return integrate.simpson(np.ones(5), x=_XS[:5] * s)
    with pytest.raises(MissingRuleError, match="simpson.*'x'") as info:
        s2sad.grad(f)(1.5)
    assert f"{__file__}:{f.__code__.co_firstlineno + 1}" in str(info.value)


# -- the oracle -------------------------------------------------------------------------
@pytest.mark.parametrize("fn, args", params(CASES))
def test_grad_matches_finite_differences(fn, args):
    if np.ndim(fn(*args)) != 0:
        pytest.skip("an array value: the vjp check covers it")
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        grads = s2sad.grad(fn, wrt=tuple(range(len(args))))(*args)
    failures = gradient_failures(grads, args, lambda *a: float(fn(*a)))
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("fn, args", params(CASES))
def test_vjp_matches_finite_differences(fn, args):
    check_vjp(fn, args)


@pytest.mark.parametrize("fn, args", params(CASES))
def test_jvp_matches_finite_differences(fn, args):
    check_jvp(fn, args)


def test_sample_points_are_smooth():
    """Without s2sad: two difference schemes agree at every sample point (no pivot of an
    LU factorization changes nearby)."""
    bad = unsmooth_points([(p.id, *p.values) for p in params(CASES)])
    assert not bad, ", ".join(bad)


@pytest.mark.parametrize("fn, x", params({k: (f, dict(enumerate(p)))
                                           for k, (f, p) in HESSIANS.items()}))
def test_hessian_matches_finite_differences(fn, x):
    check_hessian(fn, x)


# -- what is not covered ----------------------------------------------------------------
def frozen_in(d, x):
    return np.sum(d.logpdf(x))


def frozen_elsewhere(x):
    # (a frozen distribution passed to a function of the user's: its methods there have no
    # rule)
    return frozen_in(norm(0.5 * x[0], 2.0), x)


def signed(x):
    return special.logsumexp(x, return_sign=True)[0]


@pytest.mark.parametrize("fn, message", [(frozen_elsewhere, "logpdf()"),
                                         (signed, "return_sign=")])
def test_uncovered_calls_raise_missing_rule_error(fn, message):
    with pytest.raises(MissingRuleError, match=message.replace("(", r"\(").replace(")", r"\)")):
        s2sad.grad(fn)(np.ones(3))


def pmf_in_k(k):
    return np.sum(stats.poisson.logpmf(k, 2.0))


def test_a_count_is_refused_located():
    # (a count is an integer; the cdfs in their shape parameters: test_rules_shape_cdfs.py)
    with pytest.raises(MissingRuleError, match=r"test_rules_scipy.py:\d+: k depends on "
                                               "the differentiated inputs"):
        s2sad.grad(pmf_in_k)(3.0)


def logm_sum(a):
    return np.sum(np.real(linalg.logm(a)))


def sqrtm_of(a):
    return linalg.sqrtm(a)


def test_a_complex_logm_or_sqrtm_is_refused_located():
    # (their rules are for real values; a matrix with a negative eigenvalue has a complex
    # logarithm and square root, which their results are checked for at run time)
    a = np.array([[-2.0, 0.3], [0.1, 1.5]])
    with pytest.raises(s2sad.ComplexValueError, match=r"test_rules_scipy.py:\d+: a complex128"):
        s2sad.grad(logm_sum)(a)
    with pytest.raises(s2sad.ComplexValueError, match=r"test_rules_scipy.py:\d+: a complex128"):
        s2sad.jvp(sqrtm_of, (a,), (a,))
    b = np.array([[2.0, 0.3], [0.1, 1.5]])
    np.testing.assert_allclose(s2sad.grad(logm_sum)(b), fd_array_grad(logm_sum, (b,), 0),
                               rtol=1e-6, atol=1e-8)


def test_logit_at_the_bounds_is_infinite_as_in_jax():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        g = s2sad.grad(lambda_free_logit)(np.array([0.0, 0.5, 1.0]))
    assert np.array_equal(g, [np.inf, 4.0, np.inf])


def lambda_free_logit(x):
    return np.sum(special.logit(x))


def scipy_primitives():
    """The SciPy functions and distribution methods with rules."""
    found = [getattr(m, n) for m in (special, linalg) for n in dir(m) if not n.startswith("_")]
    found += [getattr(d, n, None) for d in (stats.norm, stats.multivariate_normal, stats.t,
                                            stats.gamma, stats.beta, stats.expon, stats.poisson,
                                            stats.binom, stats.dirichlet, stats.multivariate_t)
              for n in ("logpdf", "pdf", "logpmf", "pmf", "cdf", "logcdf", "logsf", "sf", "ppf",
                        "rvs")]
    out = []
    for p in found:
        rule = registry.lookup(p)
        numpy_too = getattr(np, getattr(p, "__name__", ""), None) is p     # (special.sinc)
        if rule is not None and not rule.nondiff and p not in out and not numpy_too:
            out.append(p)
    return out


def test_every_scipy_rule_is_checked():
    """Each SciPy primitive with a rule is called by a case above."""
    import ast
    import inspect
    import test_rules_shape_cdfs as shape_cdfs          # (the cdfs in shape parameters)
    called = set()
    for fn, _ in (list(CASES.values()) + list(HESSIANS.values()) + list(shape_cdfs.ARRAYS.values())
                  + list(shape_cdfs.HESSIANS.values())):
        for node in ast.walk(ast.parse(inspect.getsource(fn))):
            if isinstance(node, ast.Call):
                try:
                    called.add(eval(ast.unparse(node.func), fn.__globals__))
                except Exception:
                    pass
    scipy_prims = scipy_primitives()
    assert len(scipy_prims) >= 25
    missing = [repr(p) for p in scipy_prims if p not in called]
    assert not missing, "SciPy rules without a check: " + ", ".join(missing)


def test_every_helper_of_the_reverse_rules_has_a_forward_rule():
    """Forward over reverse (hessian) differentiates the helpers the reverse rules call."""
    import inspect
    helpers = {obj for p in scipy_primitives() for v in registry.lookup(p).variants
               for t in v.templates.values() for obj in t.free.values()
               if inspect.isfunction(obj) and obj.__module__.startswith("s2sad.")}
    assert helpers
    missing = sorted(f.__name__ for f in helpers if f not in registry.JVPS)
    assert not missing, "helpers without a forward rule: " + ", ".join(missing)


def test_s2sad_imports_without_scipy(tmp_path):
    script = tmp_path / "no_scipy.py"
    script.write_text(
        "import sys\nsys.modules['scipy'] = None      # import scipy fails\n"
        "import numpy as np\nimport s2sad\nfrom s2sad.rules import registry\n\n\n"
        "def f(x):\n    return np.sum(np.sin(x))\n\n\n"
        "assert 'scipy' not in sys.modules['s2sad.rules'].__all__\n"
        "print(s2sad.grad(f)(np.zeros(2)))\n")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[1. 1.]"


def test_scipy_rules_load_when_the_code_uses_scipy(tmp_path):
    # `import s2sad` imports no SciPy (a second of import time); the rules load on the
    # first lookup after the user's code imported SciPy
    script = tmp_path / "lazy_scipy.py"
    script.write_text(
        "import sys\nimport numpy as np\nimport s2sad\n"
        "assert 'scipy.stats' not in sys.modules and 'scipy.linalg' not in sys.modules\n"
        "from scipy import special\n\n\n"
        "def f(x):\n    return np.sum(special.expit(x))\n\n\n"
        "x = np.array([0.0, 2.0])\n"
        "g = s2sad.grad(f)(x)\n"
        "e = special.expit(x)\n"
        "assert np.allclose(g, e * (1 - e), rtol=1e-12), g\n"
        "print('ok')\n")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_importing_scipy_itself_loads_no_rules(tmp_path):
    # Numba imports `scipy` (not its modules): the rules of scipy.linalg, special and stats,
    # and the solvers of optimize and integrate, load once the code imported one of those
    script = tmp_path / "scipy_itself.py"
    script.write_text(
        "import sys\nimport numpy as np\nimport scipy\nimport s2sad\n\n\n"
        "def f(x):\n    return np.sum(np.sin(x))\n\n\n"
        "def g(a):\n    return np.sum(linalg.inv(a))\n\n\n"
        "assert np.allclose(s2sad.grad(f)(np.zeros(2)), 1.0)\n"
        "assert not [m for m in ('scipy.stats', 'scipy.linalg', 'scipy.optimize',\n"
        "                        'scipy.integrate') if m in sys.modules]\n"
        "from scipy import linalg\n"
        "a = np.array([[2.0, 1.0], [0.5, 3.0]])\n"
        "inv = np.linalg.inv(a)\n"
        "assert np.allclose(s2sad.grad(g)(a), -(inv.T @ np.ones((2, 2)) @ inv.T),\n"
        "                   rtol=1e-12)\n"
        "print('ok')\n")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=root))      # (this s2sad)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
