"""Rules for NumPy, keyed by the NumPy functions (and ufuncs) themselves.

Array methods (`x.sum()`) and attributes (`x.T`) map to the functions with the same
meaning. Broadcasting binary ufuncs say `broadcast=True`: the engine sums their adjoints
back to each argument's shape, once, where shapes may differ.
"""
import numpy as np

from . import runtime
from .operators import POW_X
from .registry import ATTRIBUTES, METHODS, VIEWS, nondiff, returns, vjp

ns = {"np": np}
ns.update({"_s2s_" + k: getattr(runtime, k) for k in dir(runtime) if not k.startswith("_")})


def rule(prim, params, *templates, **kw):
    kw.setdefault("elementwise", isinstance(prim, np.ufunc) and prim.signature is None)
    vjp(prim, params, *templates, namespace=ns, **kw)
    returns("array", prim)


def ufunc2(prim, dx, dy):
    rule(prim, "x, y", dx, dy, broadcast=True)


# elementwise, one argument
rule(np.negative, "x", "-g")
rule(np.positive, "x", "g")
rule(np.abs, "x", "g * np.sign(x)")
rule(np.sqrt, "x", "g / (2 * ans)")
rule(np.cbrt, "x", "g / (3 * ans * ans)")
rule(np.square, "x", "g * 2 * x")
rule(np.reciprocal, "x", "-g * ans * ans")
rule(np.exp, "x", "g * ans")
rule(np.expm1, "x", "g * (ans + 1)")
rule(np.exp2, "x", "g * ans * np.log(2.0)")
rule(np.log, "x", "g / x")
rule(np.log1p, "x", "g / (1 + x)")
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
rule(np.arctanh, "x", "g / (1 - x * x)")
rule(np.deg2rad, "x", "g * (np.pi / 180)")
rule(np.rad2deg, "x", "g * (180 / np.pi)")
rule(np.real, "val", "g")

# elementwise, two arguments (broadcasting)
ufunc2(np.add, "g", "g")
ufunc2(np.subtract, "g", "-g")
ufunc2(np.multiply, "g * y", "g * x")
ufunc2(np.divide, "g / y", "-g * x / (y * y)")
ufunc2(np.power, POW_X, "g * ans * _s2s_log_base(x)")
ufunc2(np.maximum, "g * (x >= y)", "g * (x < y)")
ufunc2(np.minimum, "g * (x <= y)", "g * (x > y)")
ufunc2(np.fmax, "g * (x >= y)", "g * (x < y)")
ufunc2(np.fmin, "g * (x <= y)", "g * (x > y)")
ufunc2(np.logaddexp, "g / (1 + np.exp(y - x))", "g / (1 + np.exp(x - y))")
ufunc2(np.hypot, "g * x / ans", "g * y / ans")
ufunc2(np.arctan2, "g * y / (x * x + y * y)", "-g * x / (x * x + y * y)")
rule(np.where, "condition, x, y", None, "np.where(condition, g, 0.0)",
     "np.where(condition, 0.0, g)", broadcast=True)
rule(np.clip, "a, a_min, a_max", "g * _s2s_clip_mask(a, a_min, a_max)",
     "g * (a < a_min)", "g * (a > a_max)", broadcast=True)

# reductions
rule(np.sum, "a, axis=None, dtype=None, out=None, keepdims=False",
     a="_s2s_unreduce(g, a, axis, keepdims)", uniform="g")
rule(np.mean, "a, axis=None, dtype=None, out=None, keepdims=False",
     a="_s2s_unreduce(g, a, axis, keepdims) / _s2s_count(a, axis)", uniform="g / _s2s_count(a)")
rule(np.prod, "a, axis=None, dtype=None, out=None, keepdims=False",
     a="_s2s_unreduce(g, a, axis, keepdims) * _s2s_prod_others(a, axis)")
for _f in (np.max, np.min, np.amax, np.amin):
    rule(_f, "a, axis=None, out=None, keepdims=False",
         a="_s2s_extremum(g, a, ans, axis, keepdims)")
rule(np.var, "a, axis=None, dtype=None, out=None, ddof=0, keepdims=False",
     a="_s2s_variance(g, a, axis, ddof, keepdims)")
rule(np.std, "a, axis=None, dtype=None, out=None, ddof=0, keepdims=False",
     a="_s2s_variance(g / (2 * ans), a, axis, ddof, keepdims)")
rule(np.cumsum, "a, axis=None", a="_s2s_cumsum(g, a, axis)")
rule(np.cumprod, "a, axis=None", a="_s2s_cumprod(g, a, ans, axis)")

# linear algebra
rule(np.matmul, "a, b", "_s2s_matmul_lhs(g, a, b)", "_s2s_matmul_rhs(g, a, b)")
rule(np.dot, "a, b", "_s2s_dot_lhs(g, a, b)", "_s2s_dot_rhs(g, a, b)")
rule(np.inner, "a, b", "_s2s_inner(g, a, b, 0)", "_s2s_inner(g, a, b, 1)")
rule(np.outer, "a, b", "_s2s_outer(g, a, b, 0)", "_s2s_outer(g, a, b, 1)")
rule(np.tensordot, "a, b, axes=2", "_s2s_tensordot(g, a, b, axes, 0)",
     "_s2s_tensordot(g, a, b, axes, 1)")
rule(np.einsum, "subscripts, a", None, "_s2s_einsum(g, subscripts, 0, a)")
rule(np.einsum, "subscripts, a, b", None, "_s2s_einsum(g, subscripts, 0, a, b)",
     "_s2s_einsum(g, subscripts, 1, a, b)")
rule(np.einsum, "subscripts, a, b, c", None, "_s2s_einsum(g, subscripts, 0, a, b, c)",
     "_s2s_einsum(g, subscripts, 1, a, b, c)", "_s2s_einsum(g, subscripts, 2, a, b, c)")
rule(np.trace, "a, offset=0, axis1=0, axis2=1",
     a="_s2s_trace(g, a, offset, axis1, axis2)")
rule(np.diag, "v, k=0", v="_s2s_diag(g, v, k)")
rule(np.linalg.norm, "x, ord=None, axis=None, keepdims=False",
     x="_s2s_norm(g, x, ans, ord, axis, keepdims)")
rule(np.linalg.solve, "a, b", "_s2s_solve(g, a, b, ans, 0)", "_s2s_solve(g, a, b, ans, 1)")
rule(np.linalg.inv, "a", "_s2s_inv(g, ans)")
rule(np.linalg.det, "a",
     "(g * ans)[..., None, None] * np.swapaxes(np.linalg.inv(a), -1, -2)")
rule(np.linalg.slogdet, "a", "g[1][..., None, None] * np.swapaxes(np.linalg.inv(a), -1, -2)")
returns("container", np.linalg.slogdet)
rule(np.linalg.cholesky, "a", "_s2s_cholesky(g, ans)")

# shapes and construction
rule(np.reshape, "a, newshape", a="_s2s_reshape_like(g, a)")
rule(np.reshape, "a, shape", a="_s2s_reshape_like(g, a)")
rule(np.ravel, "a", "_s2s_reshape_like(g, a)")
rule(np.squeeze, "a, axis=None", a="_s2s_reshape_like(g, a)")
rule(np.expand_dims, "a, axis", a="_s2s_reshape_like(g, a)")
rule(np.transpose, "a, axes=None", a="_s2s_untranspose(g, axes)")
rule(np.swapaxes, "a, axis1, axis2", a="_s2s_swapaxes(g, axis1, axis2)")
rule(np.moveaxis, "a, source, destination", a="_s2s_moveaxis(g, destination, source)")
rule(np.broadcast_to, "array, shape", array="_s2s_unbroadcast(g, array)")
rule(np.flip, "m, axis=None", m="_s2s_flip(g, axis)")
rule(np.roll, "a, shift, axis=None", a="_s2s_roll(g, np.negative(shift), axis)")
rule(np.tile, "A, reps", A="_s2s_untile(g, A, reps)")
rule(np.repeat, "a, repeats, axis=None", a="_s2s_unrepeat(g, a, repeats, axis)")
rule(np.pad, "array, pad_width", array="_s2s_unpad(g, array, pad_width)")
rule(np.triu, "m, k=0", m="_s2s_triu(g, k)")
rule(np.tril, "m, k=0", m="_s2s_tril(g, k)")
rule(np.concatenate, "arrays, axis=0", arrays="_s2s_split_like(g, arrays, axis)")
rule(np.stack, "arrays, axis=0", arrays="_s2s_unstack(g, arrays, axis)")
rule(np.hstack, "tup", "_s2s_hstack(g, tup)")
rule(np.vstack, "tup", "_s2s_vstack(g, tup)")
rule(np.array, "object, dtype=None", object="_s2s_from_array(g, object)")
rule(np.asarray, "a, dtype=None", a="_s2s_from_array(g, a)")
rule(np.copy, "a", "g")
rule(np.sort, "a, axis=-1", a="_s2s_unsort(g, a, axis)")
rule(np.ndarray.astype, "self, dtype", self="_s2s_cast_like(g, self, dtype)")

for _f in (np.zeros_like, np.ones_like, np.full_like, np.empty_like, np.zeros, np.ones,
           np.full, np.empty, np.eye, np.identity, np.arange, np.linspace, np.shape,
           np.ndim, np.size, np.result_type, np.sign, np.floor, np.ceil, np.round,
           np.rint, np.trunc, np.argmax, np.argmin, np.argsort, np.nonzero,
           np.isnan, np.isinf, np.isfinite, np.less, np.less_equal, np.greater,
           np.greater_equal, np.equal, np.not_equal, np.logical_and, np.logical_or,
           np.logical_not, np.any, np.all, np.floor_divide, np.heaviside,
           np.count_nonzero, np.allclose, np.isclose, np.array_equal):
    nondiff(_f)
returns("reduction", np.sum, np.mean, np.prod, np.max, np.min, np.amax, np.amin, np.var,
        np.std)
returns("scalar", np.linalg.det)
returns("scalars", np.shape)
returns("scalar", np.ndim, np.size)
returns("array", np.transpose, np.real)
returns("array", np.zeros_like, np.ones_like, np.full_like, np.zeros, np.ones, np.full,
        np.eye, np.identity, np.arange, np.linspace, np.sign, np.floor, np.ceil, np.round)

# methods and attributes of arrays
METHODS.update({
    "sum": np.sum, "mean": np.mean, "prod": np.prod, "max": np.max, "min": np.min,
    "var": np.var, "std": np.std, "cumsum": np.cumsum, "cumprod": np.cumprod,
    "dot": np.dot, "ravel": np.ravel, "flatten": np.ravel, "squeeze": np.squeeze,
    "swapaxes": np.swapaxes, "clip": np.clip, "trace": np.trace, "repeat": np.repeat,
    "copy": np.copy, "astype": np.ndarray.astype, "argmax": np.argmax,
    "argmin": np.argmin, "argsort": np.argsort, "any": np.any, "all": np.all,
    "nonzero": np.nonzero,
})
ATTRIBUTES.update({"T": np.transpose, "shape": np.shape, "ndim": np.ndim, "size": np.size,
                   "dtype": np.result_type, "real": np.real})


class _Reshape:
    """`x.reshape(3, 4)` and `x.reshape((3, 4))`."""


class _Transpose:
    """`x.transpose()`, `x.transpose(1, 0)` and `x.transpose((1, 0))`."""


METHODS["reshape"], METHODS["transpose"] = _Reshape, _Transpose
for n in range(5):
    dims = ", ".join(f"d{i}" for i in range(n))
    rule(_Reshape, "a" + (", " + dims if dims else ""), a="_s2s_reshape_like(g, a)")
    rule(_Transpose, "a" + (", " + dims if dims else ""),
         a=f"_s2s_untranspose(g, ({dims}{',' if n == 1 else ''}))")

VIEWS.update({np.reshape, np.ravel, np.transpose, np.squeeze, np.swapaxes, np.moveaxis,
              np.expand_dims, np.broadcast_to, np.asarray, np.real, np.diagonal,
              _Reshape, _Transpose})
