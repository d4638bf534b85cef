"""Helpers of the SciPy rules for the derivatives of distribution functions in their shape
parameters: the regularized incomplete gamma function P(a, x) in `a` (`gamma`'s cdf,
`special.gammainc`), the regularized incomplete beta function I_x(a, b) in `a` and `b`
(`beta`'s cdf, `special.betainc`), and Student's t cdf in `df`. SciPy gives none of them.

Each is an integral of the density: with `s(t)` the derivative of the log density in the
parameter (its score), d/da cdf(x) = ∫_lo^x s(t) pdf(t) dt; and as the score has mean
zero, it is also -∫_x^hi s(t) pdf(t) dt. The integral is taken over the tail that `x`
cuts off (below the mean, or above it), where it is small, so that it keeps its relative
accuracy far in either tail, with the density scaled by about its largest value there,
so that the ratio to the tail's probability (the derivative of `logcdf` or `logsf`) does
not underflow. `scipy.integrate.quad` evaluates it, one element at a time; where the
density has a pole (a shape parameter below 1, at the end 0) the variable is changed to
u = t^a, which takes the pole away; Student's t beyond sqrt(df) is integrated in
w = df / (df + t^2), a Beta(df / 2, 1 / 2) variable, in which its heavy tail is a finite
interval.

Second derivatives are integrals of the same kind, of s_i s_j + ds_i/da_j
(`shape_cdf2`), and in `x` the density times the score at `x` (`shape_cdf_dx`). Third
derivatives have no rule: the reverse rules of those two declare none of their
parameters, so a differentiated value reaching them is refused when s2sad compiles
(before_ad/lost_derivatives.py). The module needs SciPy; only rules/distributions.py
imports it.
"""
import math

import numpy as np
from scipy import integrate, special

from ..errors import MissingRuleError
from .registry import define, helper, helper_adjoint, helpers

_QUAD = dict(epsrel=1e-11, limit=200)


def _quad(f, lo, hi, peak=None):
    """∫_lo^hi f, to about 1e-11 relative (or 1e-14 of the interval's length, where the
    scaled density, at most about 1, changes sign with the score), split at `peak` (where
    f is largest) if it is inside."""
    if peak is not None and lo < peak < hi:
        return _quad(f, lo, peak) + _quad(f, peak, hi)
    small = 1e-14 * (hi - lo) if math.isfinite(hi - lo) else 0.0
    return integrate.quad(f, lo, hi, epsabs=small, **_QUAD)[0]


# -- the tails: (lower, shift, integral) with integral(w) = ∫ w(t, ln t, ln(1 - t))
#    times the density times exp(-shift), over the tail x cuts off (below x if lower)
def _gamma_tail(x, a):
    lg = special.gammaln(a)
    lower = x < a
    if lower and a < 1:     # (u = t^a: the density is e^(-t) du / Γ(a + 1))
        shift, hi = -special.gammaln(a + 1), math.exp(a * math.log(x))

        def integral(w):
            def f(u):
                if u <= 0:
                    return 0.0
                lt = math.log(u) / a
                return w(math.exp(lt), lt, None) * math.exp(-math.exp(lt))
            return _quad(f, 0.0, hi)
        return lower, shift, integral
    mode = max(a - 1, 0.0)
    peak = min(mode, x) if lower else max(mode, x)
    shift = (a - 1) * math.log(peak) - peak - lg if peak > 0 else -lg

    def integral(w):
        def f(t):
            if t <= 0:
                return 0.0
            lt = math.log(t)
            return w(t, lt, None) * math.exp((a - 1) * lt - t - lg - shift)
        if lower:
            return _quad(f, 0.0, x, mode)
        far = max(x, a) + 60 * math.sqrt(a) + 60
        return _quad(f, x, far, mode) + _quad(f, far, math.inf)
    return lower, shift, integral


def _beta_lower(x, a, b):
    """(shift, integral) of the Beta(a, b) density's tail below x."""
    lb = special.betaln(a, b)
    if a < 1:               # (u = t^a: the density is (1 - t)^(b - 1) du / (a B(a, b)))
        lead = -lb - math.log(a)
        shift = lead + max(0.0, (b - 1) * math.log1p(-x))
        hi = math.exp(a * math.log(x))

        def integral(w):
            def f(u):
                if u <= 0:
                    return 0.0
                lt = math.log(u) / a
                t = math.exp(lt)
                l1t = math.log1p(-t)
                return w(t, lt, l1t) * math.exp((b - 1) * l1t + lead - shift)
            return _quad(f, 0.0, hi)
        return shift, integral

    def logd(t):
        return (a - 1) * math.log(t) + (b - 1) * math.log1p(-t) - lb if t > 0 else (
            -lb if a == 1 else -math.inf)
    mode = min(max((a - 1) / (a + b - 2) if a + b > 2 else 0.0, 0.0), x)
    shift = max(logd(x), logd(mode))

    def integral(w):
        def f(t):
            if t <= 0:
                return 0.0
            lt, l1t = math.log(t), math.log1p(-t)
            return w(t, lt, l1t) * math.exp((a - 1) * lt + (b - 1) * l1t - lb - shift)
        return _quad(f, 0.0, x, mode)
    return shift, integral


def _beta_tail(x, a, b):
    lower = x < a / (a + b)
    if lower:
        shift, integral = _beta_lower(x, a, b)
        return lower, shift, integral
    shift, swapped = _beta_lower(1 - x, b, a)      # (t -> 1 - t: Beta(b, a))
    return lower, shift, lambda w: swapped(lambda s, ls, l1s: w(1 - s, l1s, ls))


def _t_point(t, df):
    """(w, ln w, ln(1 - w)) of w = df / (df + t^2), in which the t density's score is
    written (a Beta(df / 2, 1 / 2) variable: far in the tails, w is small)."""
    q = t * t / df
    return 1 / (1 + q), -math.log1p(q), (math.log(q) - math.log1p(q)) if q > 0 else -math.inf


def _t_tail(x, df):
    # (density and score are even in t: the tail beyond |x|; up to c = max(|x|, sqrt(df))
    # in t, beyond it in w, where the heavy tail is a finite interval)
    lc = special.gammaln(0.5 * (df + 1)) - special.gammaln(0.5 * df) - 0.5 * math.log(
        math.pi * df)

    def logd(t):
        return lc - 0.5 * (df + 1) * math.log1p(t * t / df)
    lower, shift, x = x < 0, logd(x), abs(x)     # (the density is largest at x in its tail)
    c = max(x, math.sqrt(df))
    shift_w, far = _beta_lower(df / (df + c * c), 0.5 * df, 0.5)
    scale_w = math.exp(min(shift_w + math.log(0.5) - shift, 700.0))

    def integral(w):
        near = _quad(lambda t: w(*_t_point(t, df)) * math.exp(logd(t) - shift), x, c) \
            if c > x else 0.0
        return near + (far(w) * scale_w if scale_w > 0 else 0.0)
    return lower, shift, integral


# -- the scores (the derivatives of the log density in a shape parameter) and their
#    derivatives: (scores, {(i, j): d score_i / d shape_j}) at t, given ln t, ln(1 - t)
def _gamma_scores(a, b=None):
    psi, tri = special.digamma(a), special.polygamma(1, a)
    return (lambda t, lt, l1t: (lt - psi,)), {(0, 0): -tri}


def _beta_scores(a, b):
    pa, pb, pab = special.digamma(a), special.digamma(b), special.digamma(a + b)
    ta, tb, tab = (special.polygamma(1, v) for v in (a, b, a + b))
    return (lambda t, lt, l1t: (lt - pa + pab, l1t - pb + pab)), {
        (0, 0): tab - ta, (1, 1): tab - tb, (0, 1): tab, (1, 0): tab}


def _t_scores(df, b=None):
    lead = 0.5 * (special.digamma(0.5 * (df + 1)) - special.digamma(0.5 * df)) - 0.5 / df
    dlead = 0.25 * (special.polygamma(1, 0.5 * (df + 1)) - special.polygamma(1, 0.5 * df)
                    ) + 0.5 / (df * df)

    def score(w, lw, l1w):                    # (at t, w = df / (df + t^2): `_t_point`)
        return (lead + 0.5 * lw + 0.5 * (df + 1) * (1 - w) / df,)

    def dscore(w, lw, l1w):
        return dlead + 0.5 * (1 - w) / df + 0.5 * (1 - w) * (df - (df + 1) * (1 + w)) / (
            df * df)
    return score, {(0, 0): dscore}


_DISTS = {"gamma": (_gamma_tail, _gamma_scores, 1), "beta": (_beta_tail, _beta_scores, 2),
          "t": (_t_tail, _t_scores, 1)}


def _one(name, kind, which, second, x, a, b):
    """d/d shape_which of `kind` at x, or with `second` (a shape's index), the derivative
    of that in shape_second."""
    tail, scores, _ = _DISTS[name]
    if math.isnan(x) or not a > 0 or (b is not None and not b > 0):
        return math.nan
    if name == "t" and (x == 0 or math.isinf(x)) or name != "t" and (
            x <= 0 or name == "beta" and x >= 1 or math.isinf(x)):
        return 0.0                          # (where the cdf is 0 or 1 whatever the shapes)
    lower, shift, integral = tail(x, a, b) if b is not None else tail(x, a)
    score, dscore = scores(a, b)
    den = integral(lambda t, lt, l1t: 1.0)
    n_i = integral(lambda t, lt, l1t: score(t, lt, l1t)[which])
    if second is None:
        return _first(kind, lower, n_i, den, shift)
    n_j = n_i if second == which else integral(lambda t, lt, l1t: score(t, lt, l1t)[second])
    d = dscore.get((which, second), 0.0)
    n_ij = integral(lambda t, lt, l1t: score(t, lt, l1t)[which] * score(t, lt, l1t)[second]
                    + (d(t, lt, l1t) if callable(d) else d))
    return _second(kind, lower, n_i, n_j, n_ij, den, shift)


def _first(kind, lower, n, den, shift):
    """The derivative of `kind` from the tail's integrals of the score times the scaled
    density (`n`) and of that density (`den`)."""
    if kind in ("cdf", "sf"):
        d = n * math.exp(shift)                 # the tail's probability's
        return d if lower == (kind == "cdf") else -d
    if (kind == "logcdf") == lower:             # the log of the tail's probability
        return n / den
    return -n * math.exp(shift) / _rest(den, shift)


def _second(kind, lower, n_i, n_j, n_ij, den, shift):
    if kind in ("cdf", "sf"):
        d = n_ij * math.exp(shift)
        return d if lower == (kind == "cdf") else -d
    if (kind == "logcdf") == lower:
        return n_ij / den - (n_i / den) * (n_j / den)
    rest, scale = _rest(den, shift), math.exp(shift)
    return -n_ij * scale / rest - (n_i * scale / rest) * (n_j * scale / rest)


def _rest(den, shift):
    """1 - the tail's probability, from its scaled integral."""
    return -math.expm1(math.log(den) + shift) if den > 0 else 1.0


def _elementwise(fn, x, a, b):
    args = (x, a) if b is None else (x, a, b)
    if all(np.ndim(v) == 0 for v in args):
        return fn(float(x), float(a), None if b is None else float(b))
    arrays = np.broadcast_arrays(*(np.asarray(v, dtype=np.float64) for v in args))
    out = np.empty(arrays[0].shape)
    for i in np.ndindex(out.shape):
        out[i] = fn(*(float(v[i]) for v in arrays), *(() if b is not None else (None,)))
    return out


def shape_cdf(name, kind, which, x, a, b=None):
    """The derivative of `kind` (cdf, sf, logcdf or logsf) of the standard distribution
    `name` ("gamma", "beta" or "t") at `x`, in its shape parameter `which` (0: `a` or `df`;
    1: `b`), the shape parameters `a` (and `b`): arrays broadcast, a number for numbers."""
    return _elementwise(lambda x, a, b: _one(name, kind, which, None, x, a, b), x, a, b)


def shape_cdf2(name, kind, which, second, x, a, b=None):
    """The derivative of `shape_cdf(name, kind, which, x, a, b)` in the shape parameter
    `second` (0: `a` or `df`; 1: `b`)."""
    return _elementwise(lambda x, a, b: _one(name, kind, which, second, x, a, b), x, a, b)


_LOGPDF = {"gamma": lambda x, a, b: (a - 1) * math.log(x) - x - special.gammaln(a),
           "beta": lambda x, a, b: (a - 1) * math.log(x) + (b - 1) * math.log1p(-x)
           - special.betaln(a, b),
           "t": lambda x, a, b: special.gammaln(0.5 * (a + 1)) - special.gammaln(0.5 * a)
           - 0.5 * math.log(math.pi * a) - 0.5 * (a + 1) * math.log1p(x * x / a)}


def _one_dx(name, kind, which, x, a, b, first):
    """d/dx of `first`, the derivative of `kind` at x in shape_which: the density at x
    times its score there (of the cdf; minus that, of the sf); of their logarithms, the
    density over the tail's probability times the score less `first`."""
    if math.isnan(x):
        return math.nan
    if math.isinf(x) or (name != "t" and (x <= 0 or name == "beta" and x >= 1)):
        return 0.0
    logpdf = _LOGPDF[name](x, a, b)
    point = _t_point(x, a) if name == "t" else (
        x, math.log(x), math.log1p(-x) if name == "beta" else None)
    s = _DISTS[name][1](a, b)[0](*point)[which]
    if kind in ("cdf", "sf"):
        return math.exp(logpdf) * s * (1 if kind == "cdf" else -1)
    if kind == "logcdf":
        p = (special.betainc(a, b, x) if name == "beta" else special.gammainc(a, x)
             if name == "gamma" else special.stdtr(a, x))
    else:
        p = (_betaincc(a, b, x) if name == "beta" else special.gammaincc(a, x)
             if name == "gamma" else special.stdtr(a, -x))
    ratio = math.exp(logpdf - math.log(p)) if p > 0 else math.inf     # (density / tail)
    return ratio * (s - first) if kind == "logcdf" else ratio * (first - s)


def _betaincc(a, b, x):
    """1 - I_x(a, b), accurate where I_x(a, b) is small too (`special.betaincc` is SciPy
    1.11's: before, 1 - x is exact from x = 0.5 on)."""
    if hasattr(special, "betaincc"):
        return special.betaincc(a, b, x)
    return special.betainc(b, a, 1 - x) if x >= 0.5 else 1 - special.betainc(a, b, x)


def shape_cdf_dx(name, kind, which, x, a, b=None, first=None):
    """The derivative in `x` of `first = shape_cdf(name, kind, which, x, a, b)`."""
    args = np.broadcast_arrays(*(np.asarray(v, dtype=np.float64) for v in (
        x, a, 1.0 if b is None else b, first)))
    if all(np.ndim(v) == 0 for v in (x, a, b, first)):
        return _one_dx(name, kind, which, float(x), float(a), None if b is None else float(b),
                       float(first))
    out = np.empty(args[0].shape)
    for i in np.ndindex(out.shape):
        out[i] = _one_dx(name, kind, which, float(args[0][i]), float(args[1][i]),
                         None if b is None else float(args[2][i]), float(args[3][i]))
    return out


@helper(tangent=())       # (it raises: a constant)
def third_derivative(name):
    """Raise: the third derivatives of `name`'s distribution functions in a shape
    parameter have no rule."""
    raise MissingRuleError(
        f"third derivatives of stats.{name}'s cdf, sf, logcdf or logsf (or of gammainc, "
        "gammaincc, betainc) in a shape parameter have no rule; differentiate twice at "
        "most, or pass the parameter through s2sad.stop_gradient")


helpers(__name__)
define(third_derivative, nondiff=True)
_SECOND = "_s2s_shape_cdf2(name, kind, which, {}, x, a, b)"
_DX = "_s2s_shape_cdf_dx(name, kind, which, x, a, b, ans)"
define(shape_cdf, "name, kind, which, x, a, b=None",
       tangent={"x": f"t * {_DX}", "a": f"t * {_SECOND.format(0)}",
                "b": f"t * {_SECOND.format(1)}"}, namespace={"np": np})
helper_adjoint(shape_cdf, zero="name, kind, which",
               x=f"_s2s_unbroadcast(ans_bar * {_DX}, x)",
               a=f"_s2s_unbroadcast(ans_bar * {_SECOND.format(0)}, a)",
               b=f"_s2s_unbroadcast(ans_bar * {_SECOND.format(1)}, b)")
# (third derivatives have no rule: a differentiated value passed to these is refused where
# s2sad compiles, as their reverse rules declare none of their parameters; their forward
# rules, which that refusal comes before, raise)
helper_adjoint(shape_cdf2, zero="name, kind, which, second")
helper_adjoint(shape_cdf_dx, zero="name, kind, which")
_THIRD = "_s2s_third_derivative(name)"
define(shape_cdf2, "name, kind, which, second, x, a, b=None",
       tangent=dict.fromkeys(("x", "a", "b"), _THIRD))
define(shape_cdf_dx, "name, kind, which, x, a, b=None, first=None",
       tangent=dict.fromkeys(("x", "a", "b", "first"), _THIRD))
