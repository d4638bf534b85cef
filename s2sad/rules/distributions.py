"""Rules for the distributions of `scipy.stats`, keyed by their bound methods; loaded with
rules/scipy.py (whose docstring says why a rule is keyed so), which holds the normal's.

A distribution with `loc` and `scale` has its log density at `z = (x - loc) / scale`, less
`log(scale)`: given `D`, the derivative of the log density in `z`, and the derivatives in
its shape parameters, `located` declares `logpdf`, `pdf`, `cdf` and `logcdf` in one
statement. The derivative of `cdf` in `x`, `loc` and `scale` is the density's; in a shape
parameter (`a` of `gamma`, `a` and `b` of `beta`, `df` of `t`) it is the derivative of an
incomplete gamma or beta function in its parameter, which SciPy does not give: those have
no rule, and a differentiated value there raises a located `MissingRuleError` (pass it
through `s2sad.stop_gradient`, or write the function with a rule of your own). The
discrete distributions (`poisson`, `binom`) have derivatives in their continuous
parameters (`mu`, `p`); the number counted `k`, `n` and `loc` are integers: no rule.
Each formula holds inside the support, where the density is positive.
"""
from scipy import special, stats

from . import numpy as numpy_rules
from . import incomplete, solves  # noqa: F401  (helpers of these rules: _s2s_cov_matrix, ...)
from .registry import define

ns = dict(numpy_rules.ns, stats=stats)


def rule(prim, params, *adjoints, **kw):
    define(prim, params, *adjoints, namespace=ns, **kw)


_Z = "((x - loc) / scale)"


def located(name, shapes, dz, **by_shape):
    """The rules of `stats.NAME`'s `logpdf`, `pdf`, `cdf`, `logcdf`, `sf` and `logsf`, each
    called as `(x, *shapes, loc=0.0, scale=1.0)`: `dz`, the derivative of the log density
    in `z`, and `by_shape`, its derivative in each shape parameter (templates over `z`,
    written `Z`, and the parameters). Those of the cdf and sf in a shape parameter are
    integrals (rules/incomplete.py)."""
    dist = getattr(stats, name)
    params = "x, " + "".join(f"{s}, " for s in shapes) + "loc=0.0, scale=1.0"
    args = "x, " + "".join(f"{s}, " for s in shapes) + "loc, scale"
    d = f"({dz.replace('Z', _Z)})"
    for method, g in (("logpdf", "g"), ("pdf", "(g * ans)")):
        rule(getattr(dist, method), params, x=f"{g} * {d} / scale",
             loc=f"-{g} * {d} / scale", scale=f"-{g} * (1 + {_Z} * {d}) / scale",
             **{s: f"{g} * ({by_shape[s].replace('Z', _Z)})" for s in shapes},
             broadcast=True)
    pdf = f"stats.{name}.pdf({args})"
    ratio = f"np.exp(stats.{name}.logpdf({args}) - ans)"     # pdf / cdf, without underflow
    given = ", ".join(shapes)
    for method, p in (("cdf", pdf), ("logcdf", ratio), ("sf", f"-{pdf}"),
                      ("logsf", f"-{ratio}")):
        rule(getattr(dist, method), params, x=f"g * {p}", loc=f"-g * {p}",
             scale=f"-g * {p} * {_Z}", broadcast=True,
             **{s: f"g * _s2s_shape_cdf({name!r}, {method!r}, {i}, {_Z}, {given})"
                for i, s in enumerate(shapes)})


_PSI = "_s2s_polygamma(0, {})"
located("t", ["df"], "-(df + 1) * Z / (df + Z * Z)",
        df=f"0.5 * ({_PSI.format('0.5 * (df + 1)')} - {_PSI.format('0.5 * df')} - 1 / df - "
           "np.log1p(Z * Z / df) + (df + 1) * Z * Z / (df * (df + Z * Z)))")
located("gamma", ["a"], "(a - 1) / Z - 1", a=f"np.log(Z) - {_PSI.format('a')}")
located("beta", ["a", "b"], "(a - 1) / Z - (b - 1) / (1 - Z)",
        a=f"np.log(Z) - {_PSI.format('a')} + {_PSI.format('a + b')}",
        b=f"np.log1p(-Z) - {_PSI.format('b')} + {_PSI.format('a + b')}")
located("expon", [], "-1.0")


def counted(name, shapes, param, d, dcdf):
    """The rules of the discrete `stats.NAME`'s `logpmf`, `pmf`, `cdf` and `logcdf`, called
    as `(k, *shapes, loc=0)`, in the one continuous parameter `param`: `d` the derivative
    of the log pmf, `dcdf` that of the cdf (templates over `K`, `k - loc`)."""
    dist = getattr(stats, name)
    params = "k, " + "".join(f"{s}, " for s in shapes) + "loc=0"
    d, dcdf = d.replace("K", "(k - loc)"), dcdf.replace("K", "(k - loc)")
    rule(dist.logpmf, params, **{param: f"g * ({d})"}, broadcast=True)
    rule(dist.pmf, params, **{param: f"g * ans * ({d})"}, broadcast=True)
    rule(dist.cdf, params, **{param: f"g * ({dcdf})"}, broadcast=True)
    rule(dist.logcdf, params, **{param: f"g * ({dcdf}) / np.exp(ans)"}, broadcast=True)


# (d/dmu of the cdf at k, the regularized upper incomplete gamma Q(k + 1, mu), is minus
# the pmf at k; d/dp of binom's is -n times the pmf at k of binom(n - 1, p))
counted("poisson", ["mu"], "mu", "np.divide(K, mu) - 1",
        "-stats.poisson.pmf(np.floor(K), mu)")
counted("binom", ["n", "p"], "p", "np.divide(K, p) - np.divide(n - K, 1 - p)",
        "-n * stats.binom.pmf(np.floor(K), n - 1, p)")

# dirichlet: x holds the components along its first axis (one sample, or one per column)
_A = "np.reshape(alpha, np.shape(alpha) + (1,) * (np.ndim(x) - 1))"
_DA = f"({_PSI.format('np.sum(alpha)')} - {_PSI.format(_A)} + np.log(x))"
for _method, _g in (("logpdf", "g"), ("pdf", "(g * ans)")):
    rule(getattr(stats.dirichlet, _method), "x, alpha", x=f"{_g} * ({_A} - 1) / x",
         alpha=f"np.sum(np.reshape({_g} * {_DA}, (np.shape(x)[0], -1)), -1)",
         tangent={"x": f"np.sum(t * ({_A} - 1) / x, 0)" + ("" if _g == "g" else " * ans"),
                  "alpha": f"np.sum(np.reshape(t, np.shape({_A})) * {_DA}, 0)"
                           + ("" if _g == "g" else " * ans")})

# multivariate_t: shape a matrix (SciPy reads its lower triangle, as multivariate_normal's
# cov), a vector (its diagonal) or a number; x one sample or a batch
_X = "_s2s_samples(x, loc, shape)"        # (a vector may be samples of dimension 1)
_SHAPE = f"_s2s_cov_matrix(shape, {_X})"
_R = f"({_X} - loc if loc is not None else {_X})"
_S = f"({_R} @ np.linalg.inv({_SHAPE}))"                  # shape^-1 (x - loc), by sample
_M = f"np.sum({_S} * {_R}, -1)"                             # the Mahalanobis distances
_P = f"np.shape({_X})[-1]"
_C = f"((df + {_P}) / (df + {_M}))"
_CS = f"np.expand_dims({_C}, -1) * {_S}"
_FLAT = "np.reshape({}, (-1, %s))" % _P
_DDF = (f"0.5 * ({_PSI.format(f'0.5 * (df + {_P})')} - {_PSI.format('0.5 * df')} - {_P} / df "
        f"- np.log1p({_M} / df) + (df + {_P}) * {_M} / (df * (df + {_M})))")
_T = "np.swapaxes({}, -1, -2)"
for _method, _g in (("logpdf", "g"), ("pdf", "(g * ans)")):
    _GCS = f"np.expand_dims({_g}, -1) * {_CS}"
    _times = "" if _g == "g" else " * ans"
    rule(getattr(stats.multivariate_t, _method), "x, loc=None, shape=1, df=1",
         x=f"-np.reshape(_s2s_unbroadcast({_GCS}, {_X}), np.shape(x))",
         loc=f"_s2s_unbroadcast({_GCS}, loc)",
         shape=f"_s2s_cov_adjoint(-0.5 * (np.sum({_g}) * np.linalg.inv({_SHAPE}) - "
               f"{_T.format(_FLAT.format(_GCS))} @ {_FLAT.format(_S)}), shape)",
         df=f"_s2s_unbroadcast({_g} * {_DDF}, df)",
         tangent={"x": f"-np.sum(_s2s_samples(t, loc, shape) * {_CS}, -1){_times}",
                  "loc": f"np.sum(t * {_CS}, -1){_times}",
                  "shape": f"0.5 * (np.sum({_S} @ _s2s_cov_matrix(t, {_X}) * {_CS}, -1) - "
                           f"np.trace(np.linalg.solve({_SHAPE}, _s2s_cov_matrix(t, {_X})), 0, "
                           f"-2, -1)){_times}",
                  "df": f"t * {_DDF}{_times}"})

# scipy.special's regularized incomplete gamma and beta functions, the cdfs of gamma and beta
rule(special.gammainc, "a, x", "g * _s2s_shape_cdf('gamma', 'cdf', 0, x, a)",
     "g * stats.gamma.pdf(x, a)", broadcast=True, elementwise=True, returns="array")
rule(special.gammaincc, "a, x", "g * _s2s_shape_cdf('gamma', 'sf', 0, x, a)",
     "-g * stats.gamma.pdf(x, a)", broadcast=True, elementwise=True, returns="array")
rule(special.betainc, "a, b, x", "g * _s2s_shape_cdf('beta', 'cdf', 0, x, a, b)",
     "g * _s2s_shape_cdf('beta', 'cdf', 1, x, a, b)", "g * stats.beta.pdf(x, a, b)",
     broadcast=True, elementwise=True, returns="array")
