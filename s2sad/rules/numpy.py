"""Rules for NumPy, keyed by the NumPy functions (and ufuncs) themselves.

Each function is declared in one statement (see registry.define): its parameters, the
adjoint templates, its forward rule where it is not elementwise (`tangent=` templates
over `t`, or `linear=`, the groups of parameters it is linear in), and what else s2sad
needs to know: what it returns (an array unless said), whether it is a `reduction` or
a `view`, and the array methods (`x.sum()`) and attributes (`x.T`) that mean it.
Broadcasting binary ufuncs say `broadcast=True`: the engine sums their adjoints back to
each argument's shape, once, where shapes may differ. Ufuncs are elementwise: their
reverse templates give their tangents.
"""
import ast
import copy

import gast
import numpy as np

from . import registry
from . import runtime, tangents  # noqa: F401 - the helpers its templates call, declared
from .operators import POW_X
from ..errors import MissingRuleError
from .registry import define, helper

ns = {"np": np}        # (and the runtime helpers, `_s2s_NAME`: see registry.HELPERS)


def rule(prim, params, *adjoints, **kw):
    kw.setdefault("elementwise", isinstance(prim, np.ufunc) and prim.signature is None)
    kw.setdefault("returns", None if kw.get("reduction") else "array")
    define(prim, params, *adjoints, namespace=ns, **kw)


def ufunc2(prim, dx, dy, **kw):
    rule(prim, "x, y", dx, dy, broadcast=True, **kw)


# elementwise, one argument
rule(np.negative, "x", "-g")
rule(np.positive, "x", "g")
rule(np.abs, "x", "g * np.sign(x)")
rule(np.fabs, "x", "g * np.sign(x)")
rule(np.sqrt, "x", "g / (2 * ans)")
rule(np.cbrt, "x", "g / (3 * ans * ans)")
rule(np.square, "x", "g * 2 * x")
rule(np.reciprocal, "x", "-g * ans * ans")
rule(np.exp, "x", "g * ans")
rule(np.expm1, "x", "g * (ans + 1)")
rule(np.exp2, "x", "g * ans * np.log(2.0)")
# where NumPy gives inf at a number (np.log(0.0)), its derivative divides by NumPy's zero
# too, not by Python's, which raises (`d or np.float64(d)`: the arrays' is `d`)
rule(np.log, "x", "g / (x or np.float64(x))")
rule(np.log1p, "x", "g / (1 + x or np.float64(0.0))")
rule(np.log2, "x", "g / (x * np.log(2.0))")
rule(np.log10, "x", "g / (x * np.log(10.0))")
rule(np.sin, "x", "g * np.cos(x)")
rule(np.cos, "x", "-g * np.sin(x)")
rule(np.tan, "x", "g * (1 + ans * ans)")
rule(np.arcsin, "x", "g / np.sqrt(1 - x * x)")
rule(np.arccos, "x", "-g / np.sqrt(1 - x * x)")
rule(np.arctan, "x", "g / (1 + x * x)")
rule(np.sinh, "x", "g * np.cosh(x)")
rule(np.cosh, "x", "g * np.sinh(x)")
rule(np.tanh, "x", "g * (1 - ans * ans)")
rule(np.arcsinh, "x", "g / np.sqrt(x * x + 1)")
rule(np.arccosh, "x", "g / np.sqrt(x * x - 1)")
rule(np.arctanh, "x", "g / (1 - x * x or np.float64(0.0))")
rule(np.deg2rad, "x", "g * (np.pi / 180)")
rule(np.rad2deg, "x", "g * (180 / np.pi)")
rule(np.radians, "x", "g * (np.pi / 180)")
rule(np.degrees, "x", "g * (180 / np.pi)")


# np.sinc: its derivative is a helper of its own, and the helper's derivative is its next
# (hessians of np.sinc differentiate the helper in forward mode)
@helper(tangent={"x": "t * _s2s_sinc_slope(x, n + 1)"}, elementwise="x")
def sinc_slope(x, n=1):
    """The `n`-th derivative (1 or 2) of `np.sinc` at `x`: by its Taylor series where
    π|x| < 0.1 (the closed forms divide 0 by 0 at 0), else the closed forms."""
    if n not in (1, 2):
        raise MissingRuleError(f"s2sad has no rule for the derivative {n} of np.sinc")
    array = isinstance(x, (np.ndarray, np.generic))
    u = np.pi * np.asarray(x, dtype=np.result_type(x, np.float32) if array else np.float64)
    small = np.abs(u) < 0.1
    v = np.where(small, 1.0, u)
    u2 = u * u
    if n == 1:
        series = u * (-1 / 3 + u2 * (1 / 30 + u2 * (-1 / 840 + u2 / 45360)))
        closed = (v * np.cos(v) - np.sin(v)) / (v * v)
    else:
        series = -1 / 3 + u2 * (1 / 10 + u2 * (-1 / 168 + u2 / 6480))
        closed = ((2 - v * v) * np.sin(v) - 2 * v * np.cos(v)) / (v * v * v)
    out = np.pi ** n * np.where(small, series, closed)
    return out.astype(u.dtype, copy=False) if array else float(out)


rule(np.sinc, "x", "g * _s2s_sinc_slope(x, 1)", elementwise=True)
# 0 where x is not finite: the value there is a constant (as in JAX)
rule(np.nan_to_num, "x, copy=True, nan=0.0, posinf=None, neginf=None", x="g * np.isfinite(x)",
     elementwise=True, view="x", copies=("copy", True))
rule(np.float64, "x", "g", elementwise=True, returns="args")
# the other floating types (np.float32 is np.single, ...): the tangent in the result's type
# and the adjoint in the argument's
for _cast in {np.float32, np.longdouble} - {np.float64}:
    rule(_cast, "x", "np.asarray(g, dtype=np.result_type(x))[()]", elementwise=True,
         returns="args", tangent=f"np.{_cast.__name__}(t)")
# the integer and boolean types: piecewise constant
for _cast in {np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
              np.uint64, np.intp, np.bool_}:
    define(_cast, nondiff=True, returns="args")
rule(np.real, "val", "g", linear="val", view="val", attribute="real")
# (of real arrays: a complex argument to differentiate is refused)
rule(np.conjugate, "x", "g", method=("conj", "conjugate"))      # (np.conj)

# elementwise, two arguments (broadcasting)
ufunc2(np.add, "g", "g")
ufunc2(np.subtract, "g", "-g")
ufunc2(np.multiply, "g * y", "g * x")
ufunc2(np.divide, "g / (y or np.float64(y))", "-g * x / (y * y or np.float64(0.0))")
ufunc2(np.power, POW_X, "_s2s_exponent_term(g * ans, x)")
ufunc2(np.maximum, "g * (x >= y)", "g * (x < y)")
ufunc2(np.minimum, "g * (x <= y)", "g * (x > y)")
ufunc2(np.fmax, "g * (x >= y)", "g * (x < y)")
ufunc2(np.fmin, "g * (x <= y)", "g * (x > y)")
# The reverse rule does without `ans`, so that `grad` may skip computing it; a tangent is
# computed next to the value, and reuses it.
ufunc2(np.logaddexp, "g / (1 + np.exp(y - x))", "g / (1 + np.exp(x - y))",
       tangent=("t * np.exp(x - ans)", "t * np.exp(y - ans)"))
ufunc2(np.logaddexp2, "g / (1 + np.exp2(y - x))", "g / (1 + np.exp2(x - y))",
       tangent=("t * np.exp2(x - ans)", "t * np.exp2(y - ans)"))
ufunc2(np.hypot, "g * x / ans", "g * y / ans")
ufunc2(np.remainder, "g", "-g * np.floor_divide(x, y)")        # (np.mod)
ufunc2(np.fmod, "g", "-g * np.trunc(x / (y or np.float64(y)))")
ufunc2(np.arctan2, "g * y / (x * x + y * y or np.float64(0.0))",
       "-g * x / (x * x + y * y or np.float64(0.0))")
rule(np.where, "condition, x, y", None, "np.where(condition, g, 0.0)",
     "np.where(condition, 0.0, g)", broadcast=True, zero="condition")
rule(np.clip, "a, a_min, a_max", "g * _s2s_clip_mask(a, a_min, a_max)",
     "g * (a < a_min)", "g * (a > a_max)", broadcast=True,
     tangent="t * _s2s_clip_mask(a, a_min, a_max)", method="clip")
rule(np.clip, "a, min=None, max=None", "g * _s2s_clip_mask(a, min, max)", "g * (a < min)",
     "g * (a > max)", broadcast=True, tangent="t * _s2s_clip_mask(a, min, max)")

# reductions
REDUCTION = "a, axis=None, dtype=None, out=None, keepdims=False"
rule(np.sum, REDUCTION, a="_s2s_unreduce(g, a, axis, keepdims)", uniform="g", linear="a",
     reduction=True, method="sum")
rule(np.mean, REDUCTION, a="_s2s_unreduce(g, a, axis, keepdims) / _s2s_count(a, axis)",
     uniform="g / _s2s_count(a)", linear="a", reduction=True, method="mean")
rule(np.prod, REDUCTION, a="_s2s_unreduce(g, a, axis, keepdims) * _s2s_prod_others(a, axis)",
     tangent={"a": "np.sum(_s2s_prod_others(a, axis) * t, axis, keepdims=keepdims)"},
     reduction=True, method="prod")
for _f, _method in ((np.max, "max"), (np.min, "min"), (np.amax, ()), (np.amin, ())):
    rule(_f, "a, axis=None, out=None, keepdims=False",
         a="_s2s_extremum(g, a, ans, axis, keepdims)",
         tangent={"a": "_s2s_extremum_dot(t, a, ans, axis, keepdims)"}, reduction=True,
         method=_method)
rule(np.var, "a, axis=None, dtype=None, out=None, ddof=0, keepdims=False",
     a="_s2s_variance(g, a, axis, ddof, keepdims)",
     tangent={"a": "_s2s_variance_dot(t, a, axis, ddof, keepdims)"}, reduction=True,
     method="var")
rule(np.std, "a, axis=None, dtype=None, out=None, ddof=0, keepdims=False",
     a="_s2s_variance(_s2s_safe_divide(g, 2 * ans), a, axis, ddof, keepdims)",
     tangent={"a": "_s2s_safe_divide(_s2s_variance_dot(t, a, axis, ddof, keepdims), "
                   "2 * ans)"},
     reduction=True, method="std")
# NaN never equals the extremum: the NaN-ignoring ones share the rules of max and min
for _f in (np.nanmax, np.nanmin):
    rule(_f, "a, axis=None, out=None, keepdims=False",
         a="_s2s_extremum(g, a, ans, axis, keepdims)",
         tangent={"a": "_s2s_extremum_dot(t, a, ans, axis, keepdims)"}, reduction=True)
_PRESENT = "np.logical_not(np.isnan(a))"
rule(np.nansum, REDUCTION, a=f"_s2s_unreduce(g, a, axis, keepdims) * {_PRESENT}",
     tangent={"a": "np.sum(np.where(np.isnan(a), 0.0, t), axis, keepdims=keepdims)"},
     reduction=True)
rule(np.nanmean, REDUCTION,
     a=f"_s2s_unreduce(g, a, axis, keepdims) * {_PRESENT} / np.maximum(np.sum({_PRESENT}, "
       "axis, keepdims=True), 1)",
     tangent={"a": "np.sum(np.where(np.isnan(a), 0.0, t), axis, keepdims=keepdims) / "
                   f"np.maximum(np.sum({_PRESENT}, axis, keepdims=keepdims), 1)"},
     reduction=True)
rule(np.nanprod, REDUCTION,
     a=f"_s2s_unreduce(g, a, axis, keepdims) * _s2s_prod_others(np.where(np.isnan(a), 1.0, a), "
       f"axis) * {_PRESENT}",
     tangent={"a": "np.sum(_s2s_prod_others(np.where(np.isnan(a), 1.0, a), axis) * "
                   "np.where(np.isnan(a), 0.0, t), axis, keepdims=keepdims)"},
     reduction=True)
rule(np.nanvar, "a, axis=None, dtype=None, out=None, ddof=0, keepdims=False",
     a="_s2s_nanvariance(g, a, axis, ddof, keepdims)",
     tangent={"a": "_s2s_nanvariance_dot(t, a, axis, ddof, keepdims)"}, reduction=True)
rule(np.nanstd, "a, axis=None, dtype=None, out=None, ddof=0, keepdims=False",
     a="_s2s_nanvariance(_s2s_safe_divide(g, 2 * ans), a, axis, ddof, keepdims)",
     tangent={"a": "_s2s_safe_divide(_s2s_nanvariance_dot(t, a, axis, ddof, keepdims), "
                   "2 * ans)"},
     reduction=True)
rule(np.nancumsum, "a, axis=None", a=f"_s2s_cumsum(g, a, axis) * {_PRESENT}",
     tangent={"a": "np.cumsum(np.where(np.isnan(a), 0.0, t), axis)"})
rule(np.nancumprod, "a, axis=None",
     a=f"_s2s_cumprod(g, np.where(np.isnan(a), 1.0, a), ans, axis) * {_PRESENT}",
     tangent={"a": "_s2s_cumprod_dot(np.where(np.isnan(a), 0.0, t), np.where(np.isnan(a), "
                   "1.0, a), ans, axis)"})
# Quantiles: weights on the sorted values (calculus.quantile_weights), put back where
# each came from; at a sample point, all to that sample, so the median of an even count
# splits 1/2 and 1/2 between the middle two (as JAX). The nan* forms skip the NaNs.
_MEDIAN = "a, axis=None, out=None, overwrite_input=False, keepdims=False"
for _f, _nan in ((np.median, False), (np.nanmedian, True)):
    rule(_f, _MEDIAN, a=f"_s2s_unquantile(g, a, 0.5, axis, 'linear', keepdims, {_nan})",
         tangent={"a": f"_s2s_quantile_dot(t, a, 0.5, axis, 'linear', keepdims, {_nan})"},
         reduction=True)
_QUANTILE = ("a, q, axis=None, out=None, overwrite_input=False, method='linear', "
             "keepdims=False")
for _f, _nan, _scale in ((np.quantile, False, 1), (np.nanquantile, True, 1),
                         (np.percentile, False, 100), (np.nanpercentile, True, 100)):
    _q = "q" if _scale == 1 else f"np.divide(q, {_scale})"
    _args = f"a, {_q}, axis, method, keepdims, {_nan}"
    rule(_f, _QUANTILE, a=f"_s2s_unquantile(g, {_args})",
         q=f"_s2s_unquantile_q(g, a, q, axis, method, keepdims, {_nan}, {_scale})",
         tangent={"a": f"_s2s_quantile_dot(t, {_args})",
                  "q": f"_s2s_quantile_q_dot(t, a, q, axis, method, keepdims, {_nan}, {_scale})"},
         returns=None)
_RANGE = ("_s2s_extremum{0}({1}, a, np.max(a, axis, keepdims=keepdims), axis, keepdims) - "
          "_s2s_extremum{0}({1}, a, np.min(a, axis, keepdims=keepdims), axis, keepdims)")
rule(np.ptp, "a, axis=None, out=None, keepdims=False", a=_RANGE.format("", "g"),
     tangent={"a": _RANGE.format("_dot", "t")}, reduction=True)
_W = "_s2s_weights_like(a, weights, axis)"
rule(np.average, "a, axis=None, weights=None, *, keepdims=False",
     a=f"_s2s_unreduce(g, a, axis, keepdims) * {_W} / np.sum({_W}, axis, keepdims=True)",
     weights=f"_s2s_reshape_like(_s2s_unbroadcast((a - _s2s_unreduce(ans, a, axis, keepdims))"
             f" * _s2s_unreduce(g, a, axis, keepdims) / np.sum({_W}, axis, keepdims=True), "
             f"{_W}), weights)",
     tangent={"a": "np.average(t, axis, weights, keepdims=keepdims)",
              "weights": "np.sum((a - _s2s_unreduce(ans, a, axis, keepdims)) * "
                         f"_s2s_weights_like(a, t, axis), axis, keepdims=keepdims) / "
                         f"np.sum({_W}, axis, keepdims=keepdims)"},
     reduction=True)
rule(np.diff, "a, n=1, axis=-1", a="_s2s_undiff(g, n, axis)", linear="a")
#: np.trapezoid's rule, scipy.integrate.trapezoid's too (rules/scipy.py)
TRAPEZOID = dict(
    y="_s2s_unreduce(g, y, axis) * _s2s_trapezoid_weights(y, x, dx, axis)",
    x="_s2s_reshape_like(_s2s_unbroadcast(_s2s_undiff(_s2s_unreduce(g, _s2s_midpoints(y, "
      "axis), axis) * _s2s_midpoints(y, axis), 1, axis), _s2s_weights_like(y, x, axis)), x)",
    dx="_s2s_unbroadcast(g * np.trapezoid(y, None, 1.0, axis), dx)",
    tangent={"y": "np.trapezoid(t, x, dx, axis)",
             "x": "np.sum(_s2s_midpoints(y, axis) * np.diff(_s2s_weights_like(y, t, axis), "
                  "axis=axis), axis)",
             # (np.trapezoid reads dx only without x: then it is linear in dx)
             "dx": "np.trapezoid(y, x, t, axis) - np.trapezoid(y, x, 0.0, axis)"})
rule(np.trapezoid, "y, x=None, dx=1.0, axis=-1", **TRAPEZOID)
# np.gradient(f, *spacing): with respect to `f` (spacings, at most 3, are constants)
for _n in (3, 2, 1, 0):
    _spacing = [f"d{i}" for i in range(_n)]
    _tuple = "(" + ", ".join(_spacing) + ("," if _n == 1 else "") + ")"
    rule(np.gradient, ", ".join(["f"] + _spacing + ["axis=None", "edge_order=1"]),
         f=f"_s2s_ungradient(g, f, {_tuple}, axis, edge_order)", linear="f", returns=None)
# with respect to `x` (the slope of its segment: to the right of a sample point, as JAX),
# `fp`, `left` and `right`; not `xp`
rule(np.interp, "x, xp, fp, left=None, right=None, period=None",
     x="g * _s2s_interp_slope(x, xp, fp, period)",
     fp="_s2s_uninterp(g, x, xp, fp, left, right, period)",
     left="_s2s_interp_outside(g, x, xp, 0)", right="_s2s_interp_outside(g, x, xp, 1)",
     tangent={"x": "t * _s2s_interp_slope(x, xp, fp, period)",
              "fp": "np.interp(x, xp, t, None if left is None else 0.0, "
                    "None if right is None else 0.0, period)",
              "left": "np.interp(x, xp, np.zeros(np.shape(fp)), t, 0.0)",
              "right": "np.interp(x, xp, np.zeros(np.shape(fp)), 0.0, t)"}, returns=None)
rule(np.cumsum, "a, axis=None", a="_s2s_cumsum(g, a, axis)", linear="a", method="cumsum")
rule(np.cumprod, "a, axis=None", a="_s2s_cumprod(g, a, ans, axis)",
     tangent={"a": "_s2s_cumprod_dot(t, a, ans, axis)"}, method="cumprod")

# linear algebra
rule(np.matmul, "a, b", "_s2s_matmul_lhs(g, a, b)", "_s2s_matmul_rhs(g, a, b)",
     linear=("a", "b"))
rule(np.dot, "a, b", "_s2s_dot_lhs(g, a, b)", "_s2s_dot_rhs(g, a, b)", linear=("a", "b"),
     method="dot")
rule(np.inner, "a, b", "_s2s_inner(g, a, b, 0)", "_s2s_inner(g, a, b, 1)", linear=("a", "b"))
rule(np.outer, "a, b", "_s2s_outer(g, a, b, 0)", "_s2s_outer(g, a, b, 1)", linear=("a", "b"))
rule(np.tensordot, "a, b, axes=2", "_s2s_tensordot(g, a, b, axes, 0)",
     "_s2s_tensordot(g, a, b, axes, 1)", linear=("a", "b"))
# np.einsum("ij,jk->ik", a, b) and its interleaved form np.einsum(a, [0, 1], b, [1, 2],
# [0, 2]), whose operands and sublists bind to the same parameters: runtime.einsum turns
# the interleaved form into subscripts (the template of `subscripts` is the one of the
# first operand there). `optimize=` changes only the order of the contractions.
_EINSUM = ["subscripts", "a", "b", "c", "d", "e", "f"]
for _n in range(2, len(_EINSUM) + 1):
    _operands = ", ".join(_EINSUM[1:_n])
    rule(np.einsum, ", ".join(_EINSUM[:_n]) + ", *, optimize=False",
         *[f"_s2s_einsum(g, subscripts, {k}, {_operands})" for k in range(-1, _n - 1)],
         linear=tuple(_EINSUM[:_n]))
rule(np.trace, "a, offset=0, axis1=0, axis2=1", a="_s2s_trace(g, a, offset, axis1, axis2)",
     linear="a", method="trace")
rule(np.diag, "v, k=0", v="_s2s_diag(g, v, k)", linear="v", view="v")   # (of a matrix)
rule(np.polyval, "p, x", "_s2s_unpolyval(g, p, x, 0)", "g * _s2s_polyder_value(p, x, 1)",
     tangent=("np.polyval(t, x)", "t * _s2s_polyder_value(p, x, 1)"))
rule(np.convolve, "a, v, mode='full'", "_s2s_unconvolve(g, a, v, mode, 0)",
     "_s2s_unconvolve(g, a, v, mode, 1)", linear=("a", "v"))
rule(np.correlate, "a, v, mode='valid'", "_s2s_uncorrelate(g, a, v, mode, 0)",
     "_s2s_uncorrelate(g, a, v, mode, 1)", linear=("a", "v"))
rule(np.kron, "a, b", "_s2s_unkron(g, a, b, 0)", "_s2s_unkron(g, a, b, 1)", linear=("a", "b"))
rule(np.cross, "a, b, axisa=-1, axisb=-1, axisc=-1, axis=None",
     "_s2s_uncross(g, a, b, ans, 0, axisa, axisb, axisc, axis)",
     "_s2s_uncross(g, a, b, ans, 1, axisa, axisb, axisc, axis)", linear=("a", "b"))
rule(np.linalg.norm, "x, ord=None, axis=None, keepdims=False",
     x="_s2s_norm(g, x, ans, ord, axis, keepdims)",
     tangent={"x": "_s2s_norm_dot(t, x, ans, ord, axis, keepdims)"})
rule(np.linalg.solve, "a, b", "_s2s_solve(g, a, b, ans, 0)", "_s2s_solve(g, a, b, ans, 1)",
     tangent=("-np.linalg.solve(a, t @ ans)", "np.linalg.solve(a, t)"))
rule(np.linalg.inv, "a", "_s2s_inv(g, ans)", tangent="-ans @ t @ ans")
rule(np.linalg.multi_dot, "arrays, *, out=None", arrays="_s2s_unmulti_dot(g, arrays)",
     tangent={"arrays": "_s2s_multi_dot_dot(t, arrays)"})
# the cofactors, not det * inv(a).T: singular matrices have them too (see cofactors)
rule(np.linalg.det, "a", "np.asarray(g)[..., None, None] * _s2s_cofactors(a, ans)",
     tangent="np.sum(_s2s_cofactors(a, ans) * t, axis=(-2, -1))", returns="scalar")
rule(np.linalg.slogdet, "a",
     "np.asarray(g[1])[..., None, None] * np.swapaxes(np.linalg.inv(a), -1, -2)",
     tangent="(_s2s_zeros_like(ans[0]), np.trace(np.linalg.solve(a, t), 0, -2, -1))",
     returns="container")
# factorizations (the helpers are in rules/factorizations.py). eigh, eigvalsh, cholesky
# and, with hermitian=True, svd and pinv read one triangle of their argument (the lower
# one unless told): the derivative of what they compute is zero on the other one, and an
# entry off the diagonal of the triangle read counts for both places it is mirrored to
# (`_s2s_mirrored_adjoint`; JAX gives the symmetric part instead)
_G = "_s2s_structured(g, ans)"
_VT = "np.swapaxes(ans[1], -1, -2)"
rule(np.linalg.eigh, "a, UPLO='L'",
     a=f"_s2s_mirrored_adjoint((ans[1] * np.expand_dims({_G}[0], -2)) @ {_VT} + ans[1] @ "
       f"(_s2s_eigen_gaps(ans[0]) * ({_VT} @ {_G}[1])) @ {_VT}, UPLO)",
     tangent={"a": "_s2s_eigh_dot(_s2s_mirrored(t, UPLO), ans)"}, returns="container")
rule(np.linalg.eigvalsh, "a, UPLO='L'",
     a="_s2s_mirrored_adjoint(_s2s_eigvalsh_adjoint(g, a, UPLO), UPLO)",
     tangent={"a": "_s2s_eigvals_dot(_s2s_mirrored(t, UPLO), np.linalg.eigh(a, UPLO)[1])"})
_H = "('L' if hermitian else None)"          # the triangle svd and pinv read, if one
_AH = f"_s2s_mirrored(a, {_H})"
_U, _S, _SVT = (f"_s2s_thin(ans, 'svd', where)[{i}]" for i in range(3))
_UT, _SV = f"np.swapaxes({_U}, -1, -2)", f"np.swapaxes({_SVT}, -1, -2)"
_F = f"_s2s_eigen_gaps({_S} * {_S})"
_DS = (f"(_s2s_diag_embed({_G}[1]) + 2 * _s2s_symmetrize({_F} * ({_UT} @ {_G}[0])) * "
       f"np.expand_dims({_S}, -2) + np.expand_dims({_S}, -1) * 2 * _s2s_symmetrize({_F} * "
       f"({_SVT} @ np.swapaxes({_G}[2], -1, -2))))")
_SVD = (f"{_U} @ {_DS} @ {_SVT} + _s2s_safe_divide({_G}[0] - {_U} @ ({_UT} @ {_G}[0]), "
        f"np.expand_dims({_S}, -2)) @ {_SVT} + {_U} @ _s2s_safe_divide({_G}[2] - ({_G}[2] @ "
        f"{_SV}) @ {_SVT}, np.expand_dims({_S}, -1))")
rule(np.linalg.svd, "a, full_matrices=True, compute_uv=True, hermitian=False",
     a=f"_s2s_mirrored_adjoint({_SVD} if compute_uv else _s2s_svd_values_adjoint(g, {_AH}), "
       f"{_H})",
     tangent={"a": f"_s2s_svd_dot(_s2s_mirrored(t, {_H}), {_AH}, ans, compute_uv, where)"},
     returns=None)
_PT, _PG = "np.swapaxes(ans, -1, -2)", "_s2s_spread(g, ans)"
_X = f"(np.swapaxes({_PG}, -1, -2) @ ans @ {_PT})"
_Y = f"({_PT} @ ans @ np.swapaxes({_PG}, -1, -2))"
# where the rank of `a` does not change (as JAX)
rule(np.linalg.pinv, "a, rcond=None, hermitian=False",
     a=f"_s2s_mirrored_adjoint(-{_PT} @ {_PG} @ {_PT} + {_X} - {_AH} @ (ans @ {_X}) + {_Y} - "
       f"({_Y} @ ans) @ {_AH}, {_H})",
     tangent={"a": f"_s2s_pinv_dot(_s2s_mirrored(t, {_H}), {_AH}, ans)"})
rule(np.linalg.lstsq, "a, b, rcond=None", "_s2s_lstsq_adjoint(g, a, b, ans, 0)",
     "_s2s_lstsq_adjoint(g, a, b, ans, 1)",
     tangent=("_s2s_lstsq_dot(t, a, b, ans, 0)", "_s2s_lstsq_dot(t, a, b, ans, 1)"),
     returns="container")
_Q, _R = "_s2s_thin(ans, 'qr', where)[0]", "_s2s_thin(ans, 'qr', where)[1]"
_M = f"(np.swapaxes({_Q}, -1, -2) @ {_G}[0] - {_G}[1] @ np.swapaxes({_R}, -1, -2))"
_XB = f"({_G}[0] + {_Q} @ (np.tril({_M} - np.swapaxes({_M}, -1, -2), -1) - {_M}))"
rule(np.linalg.qr, "a, mode='reduced'",
     a=f"np.swapaxes(np.linalg.solve({_R}, np.swapaxes({_XB}, -1, -2)), -1, -2)",
     tangent={"a": "_s2s_qr_dot(t, ans, where)"}, returns="container")
_INVT = "np.swapaxes(np.linalg.inv(a), -1, -2)"
rule(np.linalg.matrix_power, "a, n",
     a=f"_s2s_power_dot(g, np.swapaxes(a, -1, -2), n) if n >= 0 else "
       f"-{_INVT} @ _s2s_power_dot(g, {_INVT}, -n) @ {_INVT}",
     tangent={"a": "_s2s_power_dot(t, a, n) if n >= 0 else _s2s_power_dot(-np.linalg.inv(a) "
                   "@ t @ np.linalg.inv(a), np.linalg.inv(a), -n)"})
_UT, _GT = "np.swapaxes(ans, -1, -2)", "np.swapaxes(_s2s_spread(g, ans), -1, -2)"   # upper=True
rule(np.linalg.cholesky, "a, upper=False",
     a=f"_s2s_mirrored_adjoint(_s2s_cholesky(g, ans), True) if not upper else "
       f"_s2s_mirrored_adjoint(_s2s_cholesky({_GT}, {_UT}), False)",
     tangent={"a": "_s2s_cholesky_dot(_s2s_mirrored(t, True), ans) if not upper else "
                   f"np.swapaxes(_s2s_cholesky_dot(_s2s_mirrored(t, False), {_UT}), -1, -2)"})

# shapes and construction
rule(np.reshape, "a, newshape", a="_s2s_reshape_like(g, a)", linear="a", view="a")
rule(np.reshape, "a, shape", a="_s2s_reshape_like(g, a)")
rule(np.ravel, "a", "_s2s_reshape_like(g, a)", linear="a", view="a", method="ravel")
rule(np.ndarray.flatten, "a", "_s2s_reshape_like(g, a)", linear="a", method="flatten")
rule(np.ndarray.view, "self", "g", linear="self", view="self", method="view")  # (no dtype)
rule(np.squeeze, "a, axis=None", a="_s2s_reshape_like(g, a)", linear="a", view="a",
     method="squeeze")
rule(np.expand_dims, "a, axis", a="_s2s_reshape_like(g, a)", linear="a", view="a")
rule(np.transpose, "a, axes=None", a="_s2s_untranspose(g, axes)", linear="a", view="a",
     attribute="T")
rule(np.swapaxes, "a, axis1, axis2", a="_s2s_swapaxes(g, axis1, axis2)", linear="a",
     view="a", method="swapaxes")
rule(np.moveaxis, "a, source, destination", a="_s2s_moveaxis(g, destination, source)",
     linear="a", view="a")
rule(np.rollaxis, "a, axis, start=0", a="_s2s_unrollaxis(g, axis, start)", linear="a",
     view="a")
rule(np.broadcast_to, "array, shape", array="_s2s_unbroadcast(g, array)", linear="array",
     view="array")
rule(np.flip, "m, axis=None", m="_s2s_flip(g, axis)", linear="m", view="m", shaped="m")
rule(np.flipud, "m", "_s2s_flip(g, 0)", linear="m", view="m", shaped="m")
rule(np.fliplr, "m", "_s2s_flip(g, 1)", linear="m", view="m", shaped="m")
rule(np.rot90, "m, k=1, axes=None", m="_s2s_unrot90(g, k, axes)", linear="m", view="m")
rule(np.roll, "a, shift, axis=None", a="_s2s_roll(g, np.negative(shift), axis)", linear="a",
     shaped="a")
rule(np.tile, "A, reps", A="_s2s_untile(g, A, reps)", linear="A")
rule(np.repeat, "a, repeats, axis=None", a="_s2s_unrepeat(g, a, repeats, axis)", linear="a",
     method="repeat")
rule(np.pad, "array, pad_width", array="_s2s_unpad(g, array, pad_width)", linear="array")
rule(np.pad, "array, pad_width, mode='constant', constant_values=0",
     array="_s2s_unpad(g, array, pad_width, mode)",
     constant_values="_s2s_unpad_constant(g, array, pad_width, constant_values)",
     linear="array, constant_values")
rule(np.triu, "m, k=0", m="_s2s_triu(g, k)", linear="m")
rule(np.tril, "m, k=0", m="_s2s_tril(g, k)", linear="m")
rule(np.concatenate, "arrays, axis=0", arrays="_s2s_split_like(g, arrays, axis)",
     linear="arrays")
rule(np.stack, "arrays, axis=0", arrays="_s2s_unstack(g, arrays, axis)", linear="arrays")
rule(np.select, "condlist, choicelist, default=0", None,
     "_s2s_unselect(g, condlist, choicelist, default, 0)",
     "_s2s_unselect(g, condlist, choicelist, default, 1)", linear="choicelist, default")
rule(np.bincount, "x, weights=None, minlength=0", None, "_s2s_rebroadcast(g, ans)[x]", None,
     linear="weights")
rule(np.hstack, "tup", "_s2s_hstack(g, tup)", linear="tup")
rule(np.vstack, "tup", "_s2s_vstack(g, tup)", linear="tup")
if hasattr(np, "row_stack"):     # (np.vstack's alias, deprecated by NumPy 2.0: it warns)
    rule(np.row_stack, "tup", "_s2s_vstack(g, tup)", linear="tup")
rule(np.column_stack, "tup", "_s2s_uncolumn_stack(g, tup)", linear="tup")
rule(np.append, "arr, values, axis=None", "_s2s_unappend(g, arr, values, axis, 0)",
     "_s2s_unappend(g, arr, values, axis, 1)", linear="arr, values")
rule(np.delete, "arr, obj, axis=None", arr="_s2s_undelete(g, arr, obj, axis)", linear="arr")
rule(np.insert, "arr, obj, values, axis=None", arr="_s2s_uninsert(g, arr, obj, values, axis)",
     values="_s2s_uninsert_values(g, arr, obj, values, axis)", linear="arr, values")
_SPLIT = "ary, indices_or_sections, axis=0"
# (lists of views of parts of `ary`, which share no memory where the cuts are in order)
_UNSPLIT = "_s2s_unsplit(g, ans, {}, indices_or_sections, ary)"
rule(np.split, _SPLIT, ary=_UNSPLIT.format("axis"), linear="ary", returns="container",
     view="ary", disjoint=1)
rule(np.array_split, _SPLIT, ary=_UNSPLIT.format("axis"), linear="ary",
     returns="container", view="ary", disjoint=1)
rule(np.hsplit, "ary, indices_or_sections", _UNSPLIT.format(None), linear="ary",
     returns="container", view="ary", disjoint=1)
rule(np.vsplit, "ary, indices_or_sections", _UNSPLIT.format(0), linear="ary",
     returns="container", view="ary", disjoint=1)
rule(np.dsplit, "ary, indices_or_sections", _UNSPLIT.format(2), linear="ary",
     returns="container", view="ary", disjoint=1)
for _n in (4, 3, 2, 1):     # (the longest first: a shorter one would bind `copy` to x1)
    _xs = [f"x{i}" for i in range(_n)]
    rule(np.meshgrid, ", ".join(_xs) + ", copy=True, sparse=False, indexing='xy'",
         **{x: f"_s2s_unmeshgrid(g, {i}, {x}, indexing)" for i, x in enumerate(_xs)},
         linear=", ".join(_xs), returns="container", view=", ".join(_xs),
         copies=("copy", True))
for _f in (np.atleast_1d, np.atleast_2d, np.atleast_3d):    # of one array
    rule(_f, "ary", "_s2s_reshape_like(g, ary)", linear="ary", view="ary")
rule(np.take_along_axis, "arr, indices, axis", arr="_s2s_untake_along_axis(g, arr, indices, axis)",
     linear="arr", zero="indices")
rule(np.array, "object", object="_s2s_from_array(g, object)", linear="object", view="object",
     copies=("copy", True))
rule(np.array, "object, dtype", object="_s2s_from_array(_s2s_int_zero(g, dtype), object)",
     tangent={"object": "_s2s_cast_tangent(np.array(t), dtype)"})
rule(np.asarray, "a", a="_s2s_from_array(g, a)", linear="a", view="a", copies=("copy", None))
rule(np.asarray, "a, dtype", a="_s2s_from_array(_s2s_int_zero(g, dtype), a)",
     tangent={"a": "_s2s_cast_tangent(np.asarray(t), dtype)"}, view="a")
rule(np.copy, "a", "g", linear="a", method="copy", shaped="a")
rule(np.ndarray.item, "self", "_s2s_reshape_like(g, self)", linear="self", returns="scalar",
     method="item")
rule(np.sort, "a, axis=-1", a="_s2s_unsort(g, a, axis)",
     tangent={"a": "_s2s_sort_dot(t, a, axis)"})
rule(np.partition, "a, kth, axis=-1, kind='introselect'",
     a="_s2s_untake_along_axis(g, a, _s2s_partition_order(a, ans, axis), axis)",
     tangent={"a": "np.take_along_axis(t, _s2s_partition_order(a, ans, axis), axis)"})
for _params in ("self, dtype", "self, dtype, *, copy=True"):
    rule(np.ndarray.astype, _params, self="_s2s_cast_like(g, self, dtype)",
         tangent={"self": "_s2s_cast_tangent(t, dtype)"}, method="astype", view="self",
         copies=("copy", True))
# (NumPy 2.1's array-API spellings, which SciPy's code calls: before_ad/array_namespaces.py)
if hasattr(np, "cumulative_sum"):
    for _params in ("x, dtype", "x, dtype, *, copy=True"):
        rule(np.astype, _params, x="_s2s_cast_like(g, x, dtype)",
             tangent={"x": "_s2s_cast_tangent(t, dtype)"}, view="x", copies=("copy", True))
    rule(np.cumulative_sum, "x, *, axis=None", x="_s2s_cumsum(g, x, axis)", linear="x")
rule(np.diagonal, "a, offset=0, axis1=0, axis2=1",
     a="_s2s_undiagonal(g, a, offset, axis1, axis2)", linear="a", view="a", method="diagonal")


class _Reshape:
    """`x.reshape(3, 4)` and `x.reshape((3, 4))`."""


class _Transpose:
    """`x.transpose()`, `x.transpose(1, 0)` and `x.transpose((1, 0))`."""


for _n in range(5):
    _dims = ", ".join(f"d{i}" for i in range(_n))
    rule(_Reshape, "a" + (", " + _dims if _dims else ""), a="_s2s_reshape_like(g, a)",
         linear="a", view="a", method="reshape")
    rule(_Transpose, "a" + (", " + _dims if _dims else ""),
         a=f"_s2s_untranspose(g, ({_dims}{',' if _n == 1 else ''}))", linear="a", view="a",
         method="transpose")

# construction from values
rule(np.full, "shape, fill_value, dtype=None", None, "_s2s_unbroadcast(g, fill_value)",
     linear="fill_value")
rule(np.full_like, "a, fill_value, dtype=None", None, "_s2s_unbroadcast(g, fill_value)",
     linear="fill_value", zero="a")
# (an integer `dtype` floors the samples: no derivative)
_INEXACT = "np.issubdtype(np.result_type({}), np.inexact)"
_ENDS = [(f"_s2s_linspace_end({{}}, start, stop, num, endpoint, {i}, axis) * {_INEXACT}",
          f"np.linspace({ends}, num, endpoint, axis=axis).astype({{}}.dtype) * {_INEXACT}")
         for i, ends in enumerate(("t, 0.0 * stop", "0.0 * start, t"))]
rule(np.linspace, "start, stop, num=50, endpoint=True, *, dtype=None, axis=0, device=None",
     *[adjoint.format("g", "ans") for adjoint, _ in _ENDS],
     tangent=tuple(tangent.format("ans", "ans") for _, tangent in _ENDS))
# `retstep=True`: the samples and the step, `(stop - start) / d` for `d` intervals, a float
# also for an integer `dtype` (for one sample with the endpoint, NaN: a constant)
_STEP = "_s2s_safe_divide({}, (num - 1 if endpoint else num))"
_G = "_s2s_structured(g, ans)"
rule(np.linspace, "start, stop, num=50, endpoint=True, *, retstep=False, dtype=None, axis=0, "
     "device=None", *[
         f"({adjoint.format(_G + '[0]', 'ans[0]')} {sign} _s2s_unbroadcast("
         f"{_STEP.format(_G + '[1]')}, {end})) if retstep else {adjoint.format('g', 'ans')}"
         for (adjoint, _), sign, end in zip(_ENDS, "-+", ("start", "stop"))],
     tangent=tuple(
         f"({tangent.format('ans[0]', 'ans[0]')}, _s2s_rebroadcast({sign}{_STEP.format('t')}, "
         f"ans[1])) if retstep else {tangent.format('ans', 'ans')}"
         for (_, tangent), sign in zip(_ENDS, "-+")), returns_if=("retstep", "container"))
rule(np.arange, "start, stop=None, step=None", "_s2s_arange_part(g, start, stop, step, 0)",
     None, "_s2s_arange_part(g, start, stop, step, 2)", zero="stop",
     tangent={"start": "np.zeros_like(ans) + (0.0 if stop is None else t)",
              "step": "t * np.arange(np.shape(ans)[0])"})

# ufunc methods, keyed by the bound methods (`np.add.outer == np.add.outer`, although
# each attribute read makes a new object). `outer` of every two-argument ufunc with a
# rule: its templates with `x` broadcast as `outer` does (runtime.lead), summed back over
# the other operand's axes; their tangents read `t` for `g`, as an elementwise rule's.
def _substituted(template, names):
    """The source of `template` with each name in `names` replaced by an expression."""
    tree = copy.deepcopy(template.tree)
    for node in gast.walk(tree):
        if isinstance(node, gast.Name) and node.id in names:
            node.id = names[node.id]
    return ast.unparse(gast.gast_to_ast(tree))


def _outer_rules():
    lead = "_s2s_lead(x, y)"
    for prim, record in list(registry.PRIMITIVES.items()):
        if not (isinstance(prim, np.ufunc) and prim.nin == 2 and record.vjp is not None):
            continue
        variant = next((v for v in record.vjp.variants if v.broadcast
                        and [p for p, _ in v.params] == ["x", "y"]), None)
        if variant is None or set(variant.templates) != {"x", "y"}:
            continue
        dx, dy = (_substituted(variant.templates[p], {"x": lead}) for p in ("x", "y"))
        tx = _substituted(variant.templates["x"], {"x": lead, "g": "_s2s_lead(t, y)"})
        ty = _substituted(variant.templates["y"], {"x": lead, "g": "t"})
        define(prim.outer, "x, y", f"_s2s_unouter({dx}, x, y, 0)",
               f"_s2s_unouter({dy}, x, y, 1)", namespace=ns, returns="array",
               tangent=(f"_s2s_outer_dot({tx}, ans)", f"_s2s_outer_dot({ty}, ans)"))


_outer_rules()
# `reduce` and `accumulate` of the ufuncs whose reductions s2sad knows (axis 0 unless
# given, as NumPy's)
_UREDUCE = "a, axis=0, dtype=None, out=None, keepdims=False"
rule(np.add.reduce, _UREDUCE, a="_s2s_unreduce(g, a, axis, keepdims)", linear="a")
rule(np.multiply.reduce, _UREDUCE,
     a="_s2s_unreduce(g, a, axis, keepdims) * _s2s_prod_others(a, axis)",
     tangent={"a": "np.sum(_s2s_prod_others(a, axis) * t, axis, keepdims=keepdims)"})
for _f in (np.maximum.reduce, np.minimum.reduce, np.fmax.reduce, np.fmin.reduce):
    rule(_f, _UREDUCE, a="_s2s_extremum(g, a, ans, axis, keepdims)",
         tangent={"a": "_s2s_extremum_dot(t, a, ans, axis, keepdims)"})
# log-sum-exp along `axis`: the adjoint is g * exp(a - ans) (2 ** (a - ans) for base 2)
for _f, _exp in ((np.logaddexp.reduce, "np.exp"), (np.logaddexp2.reduce, "np.exp2")):
    _share = f"{_exp}(a - _s2s_unreduce(ans, a, axis, keepdims))"
    rule(_f, _UREDUCE, a=f"_s2s_unreduce(g, a, axis, keepdims) * {_share}",
         tangent={"a": f"np.sum({_share} * t, axis, keepdims=keepdims)"})
rule(np.add.accumulate, "array, axis=0", array="_s2s_cumsum(g, array, axis)",
     linear="array")
rule(np.multiply.accumulate, "array, axis=0", array="_s2s_cumprod(g, array, ans, axis)",
     tangent={"array": "_s2s_cumprod_dot(t, array, ans, axis)"})
# (each running extreme is one element of `array`: at a tie, the first that attains it)
for _f in (np.maximum.accumulate, np.minimum.accumulate, np.fmax.accumulate,
           np.fmin.accumulate):
    rule(_f, "array, axis=0",
         array="_s2s_untake_along_axis(g, array, _s2s_running_source(ans, axis), axis)",
         tangent={"array": "np.take_along_axis(t, _s2s_running_source(ans, axis), axis)"})

# functions that write into an argument (before_ad/lost_derivatives.py refuses them on
# differentiated values)
for _f in (np.copyto, np.put, np.place, np.putmask, np.fill_diagonal, np.put_along_axis,
           np.random.shuffle):
    define(_f, writes=0)

# not differentiable
for _f in (np.zeros_like, np.ones_like, np.zeros, np.ones, np.empty_like, np.empty, np.eye,
           np.identity, np.sign, np.floor, np.ceil, np.round):
    define(_f, nondiff=True, returns="array")
# of real arrays, 0 and 0 or pi: constants (a complex argument to differentiate is refused)
define(np.imag, nondiff=True, attribute="imag", view="val")
define(np.angle, nondiff=True)
define(np.shape, nondiff=True, returns="scalars", attribute="shape")
define(np.ndim, nondiff=True, returns="scalar", attribute="ndim")
define(np.size, nondiff=True, returns="scalar", attribute="size")
define(np.result_type, nondiff=True, attribute="dtype")
for _f in (np.argmax, np.argmin, np.argsort, np.any, np.all, np.nonzero):
    define(_f, nondiff=True, method=_f.__name__)
for _f in (np.nanargmax, np.nanargmin):
    define(_f, nondiff=True)
for _f in (np.rint, np.trunc, np.isnan, np.isinf, np.isfinite,
           np.less, np.less_equal, np.greater, np.greater_equal, np.equal, np.not_equal,
           np.logical_and, np.logical_or, np.logical_not, np.floor_divide, np.heaviside,
           np.count_nonzero, np.allclose, np.isclose, np.array_equal, np.isreal,
           np.iscomplex, np.isrealobj, np.iscomplexobj):
    define(_f, nondiff=True)
