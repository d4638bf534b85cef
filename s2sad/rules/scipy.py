"""Rules for SciPy, keyed by the SciPy functions themselves; registered when SciPy imports
(rules/__init__.py), so that s2sad needs only NumPy.

As in rules/numpy.py, each function is declared in one statement (see registry.define):
`scipy.special`'s ufuncs are elementwise (their reverse templates give their tangents),
the others give a forward rule (`tangent=`). The distributions of `scipy.stats` are
objects whose methods are SciPy code s2sad cannot read (`*args`, `**kwds`): a rule is keyed
by the bound method (`stats.norm.logpdf`), which equals every later reading of it, so
`norm.logpdf(x, mu, s)` and `stats.norm.logpdf(x, scale=s)` find it. A frozen distribution
(`norm(mu, s).logpdf(x)`) made in the function is read as that method with its parameters
(before_ad/resolve_calls.py, which names them as the method's rule does).

Where a derivative does not exist, the rules give what JAX gives: `logit` at 0 and 1 has
slope inf; `xlogy(x, y)` has d/dx = log(y) and d/dy = x / y, so at x = y = 0 they are -inf
and nan. Matrices read only in part (a triangle for `solve_triangular`, `cholesky` and the
symmetric kinds of `solve`) get adjoints on the entries read: the derivative of what
SciPy computes (JAX differentiates the symmetric part of `cholesky`'s argument instead).
The helpers these rules call are in rules/solves.py, each with its forward rule. `logm` and
`sqrtm` give complex values for some real matrices: what they return is checked at run
time where it is computed with (before_ad/complex_values.py, `LINALG_CHECKED`).
"""
import numpy as np
import scipy
from scipy import integrate, linalg, special, stats

from . import distances  # noqa: F401  (scipy.spatial.distance's cdist and pdist)
from . import distributions  # noqa: F401  (the other distributions of scipy.stats)
from . import numpy as numpy_rules
from . import solves  # noqa: F401  (the helpers these rules call, _s2s_NAME)
from .registry import define

ns = dict(numpy_rules.ns, linalg=linalg, norm=stats.norm)    # (solves' helpers: HELPERS)


def rule(prim, params, *adjoints, **kw):
    kw.setdefault("elementwise", isinstance(prim, np.ufunc))
    define(prim, params, *adjoints, namespace=ns, **kw)


def ufunc(prim, params, *adjoints, **kw):
    rule(prim, params, *adjoints, returns="array", broadcast="," in params, **kw)


# scipy.special
ufunc(special.expit, "x", "g * ans * (1 - ans)")
ufunc(special.logit, "x", "g / np.multiply(x, 1 - x)")          # inf at 0 and 1, as JAX
ufunc(special.log_expit, "x", "g * -np.expm1(ans)")             # 1 - expit(x), stably
ufunc(special.erfinv, "x", "g * (np.sqrt(np.pi) / 2) * np.exp(ans * ans)")
ufunc(special.erfcinv, "x", "g * -(np.sqrt(np.pi) / 2) * np.exp(ans * ans)")
ufunc(special.ndtri, "x", "g * np.sqrt(2 * np.pi) * np.exp(0.5 * ans * ans)")
ufunc(special.gammaln, "x", "g * _s2s_polygamma(0, x)")      # log|Γ|: digamma for x < 0 too
ufunc(special.digamma, "x", "g * _s2s_polygamma(1, x)")      # (special.psi)
ufunc(special.erf, "x", "g * (2 / np.sqrt(np.pi)) * np.exp(-x * x)")
ufunc(special.erfc, "x", "-g * (2 / np.sqrt(np.pi)) * np.exp(-x * x)")
ufunc(special.erfcx, "x", "g * (2 * x * ans - 2 / np.sqrt(np.pi))")    # exp(x^2) erfc(x)
ufunc(special.ndtr, "x", "g * np.exp(-0.5 * x * x) / np.sqrt(2 * np.pi)")
# (phi(x) / Phi(x), as exp(-x^2 / 2 - log Phi(x)): finite far into the lower tail)
ufunc(special.log_ndtr, "x", "g * np.exp(-0.5 * x * x - ans) / np.sqrt(2 * np.pi)")
rule(special.polygamma, "n, x", None, "g * _s2s_polygamma(n + 1, x)", broadcast=True,
     returns="array")
ufunc(special.xlogy, "x, y", "g * np.log(y)", "g * np.divide(x, y)")
ufunc(special.xlog1py, "x, y", "g * np.log1p(y)", "g * np.divide(x, 1 + y)")
ufunc(special.betaln, "a, b", "g * (_s2s_polygamma(0, a) - _s2s_polygamma(0, a + b))",
      "g * (_s2s_polygamma(0, b) - _s2s_polygamma(0, a + b))")
_W = "np.exp(a - _s2s_unreduce(ans, a, axis, keepdims))"      # exp(a) / sum(b exp(a))
_WB = f"({_W} * b if b is not None else {_W})"
rule(special.logsumexp, "a, axis=None, b=None, keepdims=False",
     a=f"_s2s_unbroadcast(_s2s_unreduce(g, a, axis, keepdims) * {_WB}, a)",
     b=f"_s2s_unbroadcast(_s2s_unreduce(g, a, axis, keepdims) * {_W}, b)",
     tangent={"a": f"np.sum({_WB} * t, axis, keepdims=keepdims)",
              "b": f"np.sum({_W} * t, axis, keepdims=keepdims)"},
     reduction=True)
rule(special.softmax, "x, axis=None", x="ans * (g - np.sum(g * ans, axis, keepdims=True))",
     tangent={"x": "ans * (t - np.sum(t * ans, axis, keepdims=True))"})
rule(special.log_softmax, "x, axis=None",
     x="g - np.exp(ans) * np.sum(g, axis, keepdims=True)",
     tangent={"x": "t - np.sum(np.exp(ans) * t, axis, keepdims=True)"})

# scipy.integrate: the trapezoidal rule as NumPy's; Simpson's rule is linear in the
# samples, weighted by the spacing (a derivative with respect to `x` or `dx` is refused:
# the rule has none)
if np.lib.NumpyVersion(scipy.__version__) >= "1.11.0":     # (the even count's correction)
    rule(integrate.simpson, "y, x=None, *, dx=1.0, axis=-1",
         y="_s2s_unreduce(g, y, axis) * _s2s_simpson_weights(y, x, dx, axis)", linear="y")
rule(integrate.trapezoid, "y, x=None, dx=1.0, axis=-1", **numpy_rules.TRAPEZOID)

# scipy.linalg
_GX = "_s2s_spread(g, ans)"
_T = "np.swapaxes({}, -1, -2)"
rule(linalg.det, "a, overwrite_a=False, check_finite=True",
     a="np.asarray(g)[..., None, None] * _s2s_cofactors(a, ans)",
     tangent={"a": "np.sum(_s2s_cofactors(a, ans) * t, axis=(-2, -1))"})
rule(linalg.inv, "a, overwrite_a=False, check_finite=True", a="_s2s_inv(g, ans)",
     tangent={"a": "-ans @ t @ ans"}, returns="array")
rule(linalg.expm, "A", f"_s2s_frechet({_T.format('A')}, {_GX})", tangent="_s2s_frechet(A, t)",
     returns="array")
# logm's Fréchet derivative L(A, E) is the upper right block of logm([[A, E], [0, A]]), and
# its adjoint L(A^T, G); sqrtm's solves S X + X S = E (S = sqrtm(A)), Sylvester's equation
_N = "np.shape(A)[-1]"
_BLOCK = "np.concatenate((np.concatenate(({0}, {1}), -1), np.concatenate((0 * {0}, {0}), -1)), -2)"
_LOGM = f"linalg.logm({_BLOCK})[..., :{_N}, {_N}:]"
rule(linalg.logm, "A", _LOGM.format(_T.format("A"), _GX), tangent=_LOGM.format("A", "t"),
     returns="array")
_ST = _T.format("ans")
rule(linalg.sqrtm, "A", f"linalg.solve_sylvester({_ST}, {_ST}, {_GX})",
     tangent="linalg.solve_sylvester(ans, ans, t)", returns="array")
# X solves a X + X b = q: with Y solving a^T Y + Y b^T = G (G, the adjoint of X), q's adjoint
# is Y, a's -Y X^T and b's -X^T Y
_Y = f"linalg.solve_sylvester({_T.format('a')}, {_T.format('b')}, {_GX})"
rule(linalg.solve_sylvester, "a, b, q", a=f"-{_Y} @ {_ST}", b=f"-{_ST} @ {_Y}", q=_Y,
     tangent={"a": "linalg.solve_sylvester(a, b, -t @ ans)",
              "b": "linalg.solve_sylvester(a, b, -ans @ t)",
              "q": "linalg.solve_sylvester(a, b, t)"}, returns="array")
# X solves a X + X a^T = q (real matrices): Sylvester's with b = a^T
_YL = f"linalg.solve_continuous_lyapunov({_T.format('a')}, {_GX})"
rule(linalg.solve_continuous_lyapunov, "a, q",
     a=f"-({_YL} @ {_ST} + {_T.format(_YL)} @ ans)", q=_YL,
     tangent={"a": f"linalg.solve_continuous_lyapunov(a, -(t @ ans + ans @ {_T.format('t')}))",
              "q": "linalg.solve_continuous_lyapunov(a, t)"}, returns="array")
_CHOL_T = "_s2s_cholesky_dot(_s2s_mirrored(t, lower), {})"
rule(linalg.cholesky, "a, lower=False, overwrite_a=False, check_finite=True",
     a=f"_s2s_mirrored_adjoint(_s2s_cholesky({_GX}, ans) if lower else "
       f"_s2s_cholesky({_T.format(_GX)}, {_T.format('ans')}), lower)",
     tangent={"a": f"{_CHOL_T.format('ans')} if lower else "
                   f"{_T.format(_CHOL_T.format(_T.format('ans')))}"},
     returns="array")


def _cho_factor_keeps_a():
    """Whether this SciPy's cho_factor leaves a's entries in the triangle its factor does
    not fill (before 1.18), rather than zeros (1.18 on)."""
    c, _ = linalg.cho_factor(np.array([[4.0, 2.0], [1.0, 4.0]]))
    return bool(c[1, 0] == 1.0)


# cho_factor's c holds the factor in one triangle, and in the other a's entries or zeros
_C, _GC = "ans[0]", "_s2s_structured(g, ans)[0]"
_LOW, _UP = f"np.tril({_C})", _T.format(f"np.triu({_C})")
_KEEPS = _cho_factor_keeps_a()
_KEPT = [f" + np.{t}({x}, {k})" if _KEEPS else "" for t, x, k in (
    ("triu", _GC, 1), ("tril", _GC, -1), ("triu", "t", 1), ("tril", "t", -1))]
rule(linalg.cho_factor, "a, lower=False, overwrite_a=False, check_finite=True",
     a=f"_s2s_mirrored_adjoint(_s2s_cholesky(np.tril({_GC}), {_LOW}), True){_KEPT[0]} "
       f"if lower else _s2s_mirrored_adjoint(_s2s_cholesky("
       f"{_T.format(f'np.triu({_GC})')}, {_UP}), False){_KEPT[1]}",
     tangent={"a": f"(np.tril({_CHOL_T.format(_LOW)}){_KEPT[2]} if lower else "
                   f"np.triu({_T.format(_CHOL_T.format(_UP))}){_KEPT[3]}, "
                   "_s2s_zeros_like(ans[1]))"},
     returns="container")
_CL = "c_and_lower[0], c_and_lower[1]"
_BB = f"linalg.cho_solve(c_and_lower, {_GX})"
rule(linalg.cho_solve, "c_and_lower, b, overwrite_b=False, check_finite=True",
     c_and_lower=f"(_s2s_cho_product_adjoint(-_s2s_rhs_outer({_BB}, ans), {_CL}), None)",
     b=_BB,
     tangent={"c_and_lower": f"-linalg.cho_solve(c_and_lower, _s2s_cho_product(t[0], {_CL}) "
                             "@ ans)",
              "b": "linalg.cho_solve(c_and_lower, t)"},
     returns="array")
_TRI = "trans, lower, unit_diagonal"
_FLIP = "1 - (trans in (1, 2, 'T', 'C')), lower, unit_diagonal"
_BT = f"linalg.solve_triangular(a, {_GX}, {_FLIP})"
_MT = "_s2s_tri_mask(t, lower, unit_diagonal)"
rule(linalg.solve_triangular, "a, b, trans=0, lower=False, unit_diagonal=False, "
     "overwrite_b=False, check_finite=True",
     a=f"-_s2s_tri_mask(_s2s_rhs_outer(ans, {_BT}) if (trans in (1, 2, 'T', 'C')) else "
       f"_s2s_rhs_outer({_BT}, ans), lower, unit_diagonal)",
     b=_BT,
     tangent={"a": f"-linalg.solve_triangular(a, ({_T.format(_MT)} if (trans in (1, 2, 'T', 'C')) "
                   f"else {_MT}) @ ans, {_TRI})",
              "b": f"linalg.solve_triangular(a, t, {_TRI})"},
     returns="array")
_SOLVE = "lower, False, False, check_finite, assume_a"
_BS = f"linalg.solve(a, {_GX}, {_SOLVE}, not transposed)"
_MS = "_s2s_as_read(t, assume_a, lower)"
rule(linalg.solve, "a, b, lower=False, overwrite_a=False, overwrite_b=False, "
     "check_finite=True, assume_a=None, transposed=False",
     a=f"-_s2s_as_read_adjoint(_s2s_rhs_outer(ans, {_BS}) if transposed else "
       f"_s2s_rhs_outer({_BS}, ans), assume_a, lower)",
     b=_BS,
     tangent={"a": f"-linalg.solve(a, ({_T.format(_MS)} if transposed else {_MS}) @ ans, "
                   f"{_SOLVE}, transposed)",
              "b": f"linalg.solve(a, t, {_SOLVE}, transposed)"},
     returns="array")
# a = P L U, packed in lu_factor's lu (L's unit diagonal left out); piv is discrete
_LU, _PIV, _GL = "ans[0]", "ans[1]", "_s2s_structured(g, ans)[0]"
_L, _U = f"_s2s_unit_lower({_LU})", f"np.triu({_LU})"
_M = (f"(np.tril({_T.format(_L)} @ np.tril({_GL}, -1), -1) + np.triu(np.triu({_GL}) @ "
      f"{_T.format(_U)}))")
_XA = f"linalg.solve_triangular({_L}, {_M}, 1, True, True)"      # L^-T M
_Y = f"linalg.solve_triangular({_L}, _s2s_unpivot(t, {_PIV}), 0, True, True)"
_X = _T.format(f"linalg.solve_triangular({_U}, {_T.format(_Y)}, 1)")
rule(linalg.lu_factor, "a, overwrite_a=False, check_finite=True",
     a=f"_s2s_pivot({_T.format(f'linalg.solve_triangular({_U}, {_T.format(_XA)})')}, {_PIV})",
     tangent={"a": f"({_L} @ np.tril({_X}, -1) + np.triu({_X}) @ {_U}, "
                   f"_s2s_zeros_like({_PIV}))"},
     returns="container")
_LP = "lu_and_piv[0], lu_and_piv[1]"
_BL = f"linalg.lu_solve(lu_and_piv, {_GX}, 1 - (trans in (1, 2, 'T', 'C')))"
_DL = f"_s2s_lu_product(t[0], {_LP})"
rule(linalg.lu_solve, "lu_and_piv, b, trans=0, overwrite_b=False, check_finite=True",
     lu_and_piv=f"(_s2s_lu_product_adjoint(-(_s2s_rhs_outer(ans, {_BL}) if "
                f"(trans in (1, 2, 'T', 'C')) else _s2s_rhs_outer({_BL}, ans)), {_LP}), None)",
     b=_BL,
     tangent={"lu_and_piv": f"-linalg.lu_solve(lu_and_piv, ({_T.format(_DL)} if "
                            f"(trans in (1, 2, 'T', 'C')) else {_DL}) @ ans, trans)",
              "b": "linalg.lu_solve(lu_and_piv, t, trans)"},
     returns="array")

# scipy.stats: the methods of the distribution objects, by the bound method
_Z = "((x - loc) / scale)"
_NORM = "x, loc=0.0, scale=1.0"
rule(stats.norm.logpdf, _NORM, f"-g * {_Z} / scale", f"g * {_Z} / scale",
     f"g * ({_Z} * {_Z} - 1) / scale", broadcast=True)
rule(stats.norm.pdf, _NORM, f"-g * ans * {_Z} / scale", f"g * ans * {_Z} / scale",
     f"g * ans * ({_Z} * {_Z} - 1) / scale", broadcast=True)
_P = "norm.pdf(x, loc, scale)"
rule(stats.norm.cdf, _NORM, f"g * {_P}", f"-g * {_P}", f"-g * {_P} * {_Z}", broadcast=True)
_Q = "np.exp(norm.logpdf(x, loc, scale) - ans)"           # pdf / cdf, without underflow
rule(stats.norm.logcdf, _NORM, f"g * {_Q}", f"-g * {_Q}", f"-g * {_Q} * {_Z}",
     broadcast=True)
rule(stats.norm.sf, _NORM, f"-g * {_P}", f"g * {_P}", f"g * {_P} * {_Z}", broadcast=True)
rule(stats.norm.logsf, _NORM, f"-g * {_Q}", f"g * {_Q}", f"g * {_Q} * {_Z}",     # (pdf / sf)
     broadcast=True)
# cov a number, a vector (the diagonal) or a matrix, of which SciPy reads the lower
# triangle: its adjoint is on that triangle (JAX gives the symmetric part)
_X = "_s2s_samples(x, mean, cov)"          # (a vector may be samples of dimension 1)
_COV = f"_s2s_cov_matrix(cov, {_X})"
_R = f"({_X} - mean if mean is not None else {_X})"
_S = f"({_R} @ np.linalg.inv({_COV}))"                     # cov^-1 (x - mean), by sample
_GS = f"np.expand_dims(g, -1) * {_S}"
_FLAT = "np.reshape({}, (-1, np.shape(%s)[-1]))" % _X
rule(stats.multivariate_normal.logpdf, "x, mean=None, cov=1, allow_singular=False",
     x=f"-np.reshape(_s2s_unbroadcast({_GS}, {_X}), np.shape(x))",
     mean=f"_s2s_unbroadcast({_GS}, mean)",
     cov=f"_s2s_cov_adjoint(-0.5 * (np.sum(g) * np.linalg.inv({_COV}) - "
         f"{_T.format(_FLAT.format(_GS))} @ {_FLAT.format(_S)}), cov)",
     tangent={"x": f"-np.sum(_s2s_samples(t, mean, cov) * {_S}, -1)",
              "mean": f"np.sum(t * {_S}, -1)",
              "cov": f"0.5 * (np.sum({_S} @ _s2s_cov_matrix(t, {_X}) * {_S}, -1) - "
                     f"np.trace(np.linalg.solve({_COV}, _s2s_cov_matrix(t, {_X})), 0, -2, -1))"})
