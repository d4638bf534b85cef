"""Forward mode's part of the rules: the helpers forward code calls, and the forward rules
of the helpers reverse-mode code calls.

The forward rules of the libraries' primitives are declared with their reverse rules, in
one statement each (rules/numpy.py, math.py, ...); an elementwise rule needs none, as
its reverse template, linear in `g`, gives the tangent with `t` for `g`. What is here
is forward mode's own: the tangents of NumPy functions too long for a template
(`extremum_dot`, ...), `broadcast_like`, and, so that forward mode applies to the code
reverse mode generates (forward over reverse: `hessian`), the forward rules of the
runtime helpers that code calls, one statement each: `linear(prim, params, *groups)`
(the helper is linear in each group of parameters) or `jvp(prim, params, ...)`
(templates over `t`, the tangent of that parameter, and `ans`, the result).
"""
import numpy as np

from ..errors import MissingRuleError
from . import runtime as R
from .registry import define, helper, helpers, jvp, linear

ns = {"np": np}


@helper(numba=True)
def value_and_tangent(result, rule):
    """`result`, what `rule`, the rule of a custom_jvp, returned, once it is seen to be a
    value and a tangent of the value's structure and shape (see `containers.misfit`; no
    None where the value varies); else a CustomRuleError that names `rule`."""
    if isinstance(result, (tuple, list)) and len(result) == 2:
        value, tangent = result
        if R.plainly_fits(tangent, value):
            return result
        if tangent is None:
            found = "None" if R.carries_derivative(value) else None
        else:
            found = R.misfit(tangent, value)
        if found is None:
            return result
        if found == "None":
            found = "None where a tangent was expected"
        raise R.custom_rule_error(
            rule, "the rule of a custom_jvp", f"returned as the tangent of its value "
            f"{found}. Return a tangent in the structure and shape "
            "of the value (np.zeros_like(value), or 0.0 for a number, where it does not vary)")
    raise R.custom_rule_error(
        rule, "the rule of a custom_jvp", f"returned {R.described(result)}; it returns a "
        "pair (value, tangent): `return y, y_dot`")


# -- tangents of NumPy functions (rules/numpy.py) ----------------------------------------
def extremum_dot(t, a, ans, axis=None, keepdims=False):
    """The tangent of max/min: the mean of `t` over the elements that attain it."""
    weights = R.extremum(np.ones_like(ans), a, ans, axis, keepdims)
    return np.sum(weights * t, axis=axis, keepdims=keepdims)


def variance_dot(t, a, axis=None, ddof=0, keepdims=False):
    """The tangent of var(a): 2 <a - mean(a), t> / (n - ddof) over `axis`."""
    a = np.asarray(a)
    centred = a - a.mean(axis=axis, keepdims=True)
    return 2 * np.sum(centred * t, axis=axis, keepdims=keepdims) / (R.count(a, axis) - ddof)


def nanvariance_dot(t, a, axis=None, ddof=0, keepdims=False):
    """The tangent of nanvar(a): `variance_dot` over the values that are not NaN."""
    a = np.asarray(a)
    present = ~np.isnan(a)
    centred = np.where(present, a - np.nanmean(a, axis=axis, keepdims=True), 0.0)
    n = (np.sum(present, axis=axis, keepdims=keepdims) - ddof).astype(centred.dtype)
    return 2 * np.sum(centred * t, axis=axis, keepdims=keepdims) / np.where(n > 0, n, np.inf)


def norm_dot(t, x, ans, ord=None, axis=None, keepdims=False):
    """The tangent of np.linalg.norm: vector p-norms (and inf), and the Frobenius norm:
    the adjoint's contraction with `t` (the same derivative, read the other way)."""
    x = np.asarray(x)
    vector = axis is not None and np.ndim(axis) == 0 or (axis is None and x.ndim == 1)
    if ord in (None, "fro") or (ord == 2 and vector):
        return np.sum(x * t, axis=axis, keepdims=keepdims) / np.where(ans == 0, 1, ans)
    if not vector:
        pair = (0, 1) if axis is None else tuple(axis)
        return np.sum(R.matrix_norm_slope(x, ord, pair) * t, axis=pair, keepdims=keepdims)
    grad = R.norm(np.ones_like(ans), x, ans, ord, axis, keepdims)
    return np.sum(grad * t, axis=axis, keepdims=keepdims)


def norm_adjoint_dot(g, x, n, t, which, ord=None, axis=None, keepdims=False):
    """The tangent of `norm(g, x, n, ord, axis, keepdims)` (the adjoint of `n =
    np.linalg.norm(x, ord, axis, keepdims)`) along `x` (which=0) or `n` (which=1): for
    the 2-norm and the Frobenius norm, the vector p-norms, and 0 where the adjoint is
    piecewise constant (the vector 1, inf and -inf norms, the matrix 1, -1, inf and -inf
    norms). The matrix norms of singular values have no second derivative rule."""
    x = np.asarray(x)
    vector = axis is not None and np.ndim(axis) == 0 or (axis is None and x.ndim == 1)
    if ord in (None, "fro") or (ord == 2 and vector):
        if which == 0:
            return R.norm(g, t, n, ord, axis, keepdims)
        return R.norm(-g * t / n, x, n, ord, axis, keepdims)
    if ord in (1, np.inf, -np.inf) or (not vector and ord == -1):
        return np.zeros(x.shape, np.result_type(x, np.float32))
    if not vector:
        raise MissingRuleError(f"s2sad has no second derivative rule for the matrix norm "
                               f"ord={ord!r} (forward over reverse); the Frobenius norm and "
                               "the matrix 1, -1, inf and -inf norms have one")
    p = float(ord)
    if which == 1:           # the adjoint is proportional to n ** (1 - p)
        return R.norm(g * (1 - p) * t / np.where(n == 0, 1, n), x, n, ord, axis, keepdims)
    scale = R.unreduce(np.asarray(g) / np.where(n == 0, 1, n) ** (p - 1), x, axis, keepdims)
    return scale * (p - 1) * np.abs(x) ** (p - 2) * t


def _t(m):
    return np.swapaxes(m, -1, -2)


def _phi(m):
    """The lower triangle of `m`, with half its diagonal."""
    return np.tril(m) - 0.5 * np.eye(np.shape(m)[-1]) * m


def cholesky_dot(t, ans):
    """The tangent of `L = cholesky(a)`: `L phi(L^-1 a_dot L^-T)`."""
    inv = np.linalg.inv(ans)
    return ans @ _phi(inv @ t @ _t(inv))


helpers(__name__)     # (the forward rules below call them)


# -- helpers of reverse-mode code (for forward over reverse) -----------------------------
def log_base_dot(t, x):
    """The tangent of `log_base`: `t / x`, and 0 where x == 0."""
    if isinstance(x, np.ndarray):
        return np.where(x == 0, 0.0, t / np.where(x == 0, 1.0, x))
    return t / x if x != 0 else 0.0 * t


def cholesky_adjoint_dot(g, L, t):
    """The tangent of `cholesky(g, L)` (the adjoint of a Cholesky factor) along `L`."""
    inv = np.linalg.inv(L)
    inv_dot = -inv @ t @ inv
    g = R.spread_to(g, np.shape(L))
    phi = _phi(np.tril(_t(L) @ g))
    s_dot = (_t(inv_dot) @ phi @ inv + _t(inv) @ _phi(np.tril(_t(t) @ g)) @ inv
             + _t(inv) @ phi @ inv_dot)
    return 0.5 * (s_dot + _t(s_dot))


def inv_adjoint_dot(g, ans, t):
    """The tangent of `inv(g, ans)` (the adjoint of an inverse `ans`) along `ans`."""
    g = R.spread_to(g, np.shape(ans))
    return -(_t(t) @ g @ _t(ans) + _t(ans) @ g @ _t(t))


helpers(__name__)     # (the forward rules below call them)

define(R.zeros_like, "x", None, zero=("x",), tangent=())    # a constant: no derivative
# rules/arrays.py: the dispatching conversions and allocations of the helpers above,
# which reverse mode reads through (gradient code differentiated again)
for _f in (R.is_duck_array, R.is_array, R.broadcast_shapes):
    define(_f, nondiff=True)
define(R.zeros, nondiff=True, returns="array")
define(R.asarray, "x", "_s2s_from_array(g, x)", linear="x", view="x", namespace=ns)
define(R.full, "shape, value, dtype, like", None, "_s2s_unbroadcast(g, value)", None, None,
       linear="value", zero=("like",), returns="array", namespace=ns)
define(R.number, "x", "_s2s_reshape_like(g, x)", linear="x", namespace=ns)
# the adjoint 1 of a scalar output: a constant, in reverse mode too (gradient code
# differentiated again in reverse mode, `grad(f)` called in a function)
define(R.seed, "y, name", None, None, zero=("y", "name"), tangent=(), returns="scalar")
jvp(R.count, "x, axis=None")
for _n in range(3, 9):                      # 0 or 1: no tangent
    jvp(R.first, "ans, i, " + ", ".join(f"x{k}" for k in range(_n)))
jvp(R.clip_mask, "x, lo, hi")
jvp(R.prod_others, "x, axis=None", "_s2s_prod_others_dot(x, t, axis)", namespace=ns)
jvp(R.log_base, "x", "_s2s_log_base_dot(t, x)", namespace=ns)
# (the sum of adjoints: gradient code differentiated again in reverse mode reads it too)
define(R.add, "a, b", "g", "g", linear="a, b")
linear(R.unbroadcast, "g, x", "g")
linear(R.unindex, "g, x, index", "g")
linear(R.own, "g, x", "g")
linear(R.blocks_like, "g, x", "g")
linear(R.snapshot, "v", "v")
define(R.like, "x", None, zero=("x",), tangent=())          # only its shape is read
jvp(R.partition_order, "a, ans, axis=-1")                   # integers: no tangent
linear(R.unattr, "g, obj, name", "g")
linear(R.attr_dot, "t, obj, name", "t")
linear(R.cotangent, "c, x", "c")
jvp(R.cotangents, "c, bwd, args", "t")
linear(R.unreduce, "g, x, axis=None, keepdims=False", "g")
linear(R.extremum, "g, x, m, axis=None, keepdims=False", "g")
linear(R.variance, "g, x, axis=None, ddof=0, keepdims=False", "g", "x")
jvp(R.nanvariance, "g, x, axis=None, ddof=0, keepdims=False",
    "_s2s_nanvariance(t, x, axis, ddof, keepdims)",
    "_s2s_nanvariance(g, np.where(np.isnan(x), np.nan, t), axis, ddof, keepdims)", namespace=ns)
# (the weights of the sorted values are constant where `a` has no ties; in `q`, they
# move along the segments)
_Q = "g, a, q, axis=None, method='linear', keepdims=False, nan=False"
_NO_SECOND = "_s2s_no_second_derivative('np.quantile with respect to q')"
jvp(R.unquantile, _Q, "_s2s_unquantile(t, a, q, axis, method, keepdims, nan)", None,
    _NO_SECOND, namespace=ns)
jvp(R.quantile_dot, "t_a, a, q, axis=None, method='linear', keepdims=False, nan=False",
    "_s2s_quantile_dot(t, a, q, axis, method, keepdims, nan)", None, _NO_SECOND,
    namespace=ns)
jvp(R.unquantile_q, _Q + ", scale=1",
    "_s2s_unquantile_q(t, a, q, axis, method, keepdims, nan, scale)",
    _NO_SECOND, _NO_SECOND, namespace=ns)
jvp(R.quantile_q_dot, "t_q, a, q, axis=None, method='linear', keepdims=False, nan=False, "
    "scale=1", "_s2s_quantile_q_dot(t, a, q, axis, method, keepdims, nan, scale)",
    _NO_SECOND, _NO_SECOND, namespace=ns)
linear(R.ungradient, "g, f, spacing=(), axis=None, edge_order=1", "g")
jvp(R.uninterp, "g, x, xp, fp, left=None, right=None, period=None",
    "_s2s_uninterp(t, x, xp, fp, left, right, period)",
    "_s2s_uninterp_dot(g, t, x, xp, fp, period)", namespace=ns)
linear(R.interp_outside, "g, x, xp, side", "g")
# (piecewise linear in x: its slope is flat in x, and linear in fp)
jvp(R.interp_slope, "x, xp, fp, period=None", None, None,
    "_s2s_interp_slope(x, xp, t, period)", namespace=ns)
linear(R.cumsum, "g, x, axis=None", "g")
linear(R.int_zero, "g, dtype=None", "g")
linear(R.linspace_end, "g, start, stop, num=50, endpoint=True, which=0", "g")
linear(R.arange_part, "g, start, stop=None, step=None, which=0", "g")
jvp(R.safe_divide, "n, d", "_s2s_safe_divide(t, d)", "-_s2s_safe_divide(n * t, d * d)",
    namespace=ns)
# (the tangent along x is the whole derivative: p, the cumulative product of x, varies
# with x and is read only to save work)
jvp(R.cumprod, "g, x, p, axis=None", "_s2s_cumprod(t, x, p, axis)",
    "_s2s_cumprod_adjoint_dot(g, x, t, axis)", namespace=ns)
linear(R.matmul_lhs, "g, a, b", "g", "b")
linear(R.matmul_rhs, "g, a, b", "g", "a")
linear(R.dot_lhs, "g, a, b", "g", "b")
linear(R.dot_rhs, "g, a, b", "g", "a")
# (in the interleaved form, `k` + 1 is the position of the operand among subscripts, a,
# b, ...: runtime.einsum)
_EINSUM = ["subscripts", "a", "b", "c", "d", "e", "f"]


def _swapped(p, args):
    """runtime.einsum's call over `args` with `t` in place of the argument `p`."""
    out = ["t" if q == p else q for q in args]
    return f"_s2s_einsum(g, {out[0]}, k, {', '.join(out[1:])})"


for _n in range(2, len(_EINSUM) + 1):
    _args = _EINSUM[:_n]
    jvp(R.einsum, "g, subscripts, k, " + ", ".join(_args[1:]),
        f"_s2s_einsum(t, subscripts, k, {', '.join(_args[1:])})", namespace=ns,
        **{p: f"{_swapped(p, _args)} if k != {i - 1} else _s2s_zeros_like(ans)"
           for i, p in enumerate(_args)})
jvp(R.tensordot, "g, a, b, axes, which", "_s2s_tensordot(t, a, b, axes, which)",
    "_s2s_tensordot(g, t, b, axes, which) if which == 1 else _s2s_zeros_like(ans)",
    "_s2s_tensordot(g, a, t, axes, which) if which == 0 else _s2s_zeros_like(ans)",
    namespace=ns)
jvp(R.inner, "g, a, b, which", "_s2s_inner(t, a, b, which)",
    "_s2s_inner(g, t, b, which) if which == 1 else _s2s_zeros_like(ans)",
    "_s2s_inner(g, a, t, which) if which == 0 else _s2s_zeros_like(ans)", namespace=ns)
jvp(R.outer, "g, a, b, which", "_s2s_outer(t, a, b, which)",
    "_s2s_outer(g, t, b, which) if which == 1 else _s2s_zeros_like(ans)",
    "_s2s_outer(g, a, t, which) if which == 0 else _s2s_zeros_like(ans)", namespace=ns)
jvp(R.inv, "g, ans", "_s2s_inv(t, ans)", "_s2s_inv_adjoint_dot(g, ans, t)", namespace=ns)
linear(R.reshape_like, "g, x", "g")
jvp(R.polygamma, "n, x", None, "t * _s2s_polygamma(n + 1, x)", namespace=ns)
linear(R.shaped_as, "seq, values", "values")
linear(R.undiff, "g, n=1, axis=-1", "g")
linear(R.weights_like, "a, w, axis=None", "w")
linear(R.midpoints, "y, axis=-1", "y")
jvp(R.trapezoid_weights, "y, x=None, dx=1.0, axis=-1", None,
    "_s2s_trapezoid_weights(y, t, dx, axis)",
    # (the weights read dx only without x: then they are linear in dx)
    "_s2s_trapezoid_weights(y, x, t, axis) - _s2s_trapezoid_weights(y, x, 0.0, axis)",
    namespace=ns)
jvp(R.polyder_value, "p, x, m=1", "_s2s_polyder_value(t, x, m)",
    "t * _s2s_polyder_value(p, x, m + 1)", namespace=ns)
jvp(R.unpolyval, "g, p, x, m=0", "_s2s_unpolyval(t, p, x, m)", None,
    "_s2s_unpolyval(g * t, p, x, m + 1)", namespace=ns)
for _f in (R.unconvolve, R.uncorrelate):
    _n = "_s2s_" + _f.__name__
    jvp(_f, "g, a, v, mode, which", f"{_n}(t, a, v, mode, which)",
        f"{_n}(g, t, v, mode, which) if which == 1 else _s2s_zeros_like(ans)",
        f"{_n}(g, a, t, mode, which) if which == 0 else _s2s_zeros_like(ans)", namespace=ns)
for _f, _params in [(R.swapaxes, "g, axis1, axis2"), (R.moveaxis, "g, source, destination"),
                    (R.flip, "g, axis=None"), (R.roll, "g, shift, axis=None"),
                    (R.unrot90, "g, k=1, axes=None"),
                    (R.triu, "g, k=0"), (R.tril, "g, k=0")]:
    linear(_f, _params, "g")
linear(R.trace, "g, x, offset=0, axis1=0, axis2=1", "g")
linear(R.diag, "g, v, k=0", "g")
jvp(R.norm, "g, x, n, ord=None, axis=None, keepdims=False",
    "_s2s_norm(t, x, n, ord, axis, keepdims)",
    "_s2s_norm_adjoint_dot(g, x, n, t, 0, ord, axis, keepdims)",
    "_s2s_norm_adjoint_dot(g, x, n, t, 1, ord, axis, keepdims)", namespace=ns)
linear(R.lead, "x, y", "x")
linear(R.unouter, "d, x, y, which", "d")
linear(R.unsort_list, "g, items, reverse=False", "g")
jvp(R.solve, "g, a, b, x, which", "_s2s_solve(t, a, b, x, which)",
    "_s2s_solve(-np.swapaxes(t, -1, -2) @ np.linalg.solve(np.swapaxes(a, -1, -2), g), "
    "a, b, x, which)", None,
    "_s2s_solve(g, a, b, t, which) if which == 0 else _s2s_zeros_like(ans)", namespace=ns)
jvp(R.cholesky, "g, L", "_s2s_cholesky(t, L)", "_s2s_cholesky_adjoint_dot(g, L, t)",
    namespace=ns)
for _f, _params in [(R.split_like, "g, arrays, axis=0"), (R.unstack, "g, arrays, axis=0"),
                    (R.hstack, "g, arrays"), (R.vstack, "g, arrays"), (R.from_array, "g, obj"),
                    (R.untranspose, "g, axes=None"), (R.untile, "g, x, reps"),
                    (R.unrepeat, "g, x, repeats, axis=None"),
                    (R.unpad, "g, x, pad_width, mode='constant'"),
                    (R.unpad_constant, "g, x, pad_width, constant_values=0"),
                    (R.unsplit, "g, pieces, axis=0"),
                    (R.unappend, "g, arr, values, axis=None, which=0"),
                    (R.uncolumn_stack, "g, arrays"),
                    (R.undiagonal, "g, a, offset=0, axis1=0, axis2=1"),
                    (R.untake_along_axis, "g, arr, indices, axis"),
                    (R.cast_like, "g, x"), (R.unsum, "g, items"),
                    (R.unsort, "g, x, axis=-1"), (R.zero_at, "g, index"), (R.take, "g, index"),
                    (R.unmeshgrid, "g, which, x, indexing='xy'"),
                    (R.head, "g"), (R.last, "g")]:
    linear(_f, _params, "g")


jvp(R.unkron, "g, a, b, which", "_s2s_unkron(t, a, b, which)",
    "_s2s_unkron(g, t, b, which) if which == 1 else _s2s_zeros_like(ans)",
    "_s2s_unkron(g, a, t, which) if which == 0 else _s2s_zeros_like(ans)", namespace=ns)
jvp(R.uncross, "g, a, b, ans, which, axis=-1", "_s2s_uncross(t, a, b, ans, which, axis)",
    "_s2s_uncross(g, t, b, ans, which, axis) if which == 1 else _s2s_zeros_like(ans)",
    "_s2s_uncross(g, a, t, ans, which, axis) if which == 0 else _s2s_zeros_like(ans)",
    namespace=ns)


# factorizations (rules/factorizations.py)
for _f, _params in [(R.structured, "g, ans"), (R.spread, "g, like"), (R.symmetrize, "m"),
                    (R.mirrored, "m, lower=True"), (R.mirrored_adjoint, "g, lower=True"),
                    (R.diag_embed, "v"), (R.thin, "ans, what")]:
    linear(_f, _params, _params.split(",")[0])
jvp(R.eigen_gaps, "w", "-ans * ans * (t[..., None, :] - t[..., :, None])")
jvp(R.cofactors, "a, d", "_s2s_cofactors_dot(a, d, t)", None, namespace=ns)
jvp(R.eigvalsh_adjoint, "g, a, UPLO='L'", "_s2s_eigvalsh_adjoint(t, a, UPLO)",
    "_s2s_eigvalsh_adjoint_dot(g, a, t, UPLO)", namespace=ns)
jvp(R.svd_values_adjoint, "g, a", "_s2s_svd_values_adjoint(t, a)",
    "_s2s_svd_values_adjoint_dot(g, a, t)", namespace=ns)
jvp(R.power_dot, "d, a, n", "_s2s_power_dot(t, a, n)", "_s2s_power_dot_dot(d, a, n, t)",
    namespace=ns)
jvp(R.lstsq_adjoint, "g, a, b, x, which", "_s2s_lstsq_adjoint(t, a, b, x, which)",
    *["_s2s_no_second_derivative('np.linalg.lstsq')"] * 3, namespace=ns)


@helper(numba=True)
def broadcast_like(t, y):
    """`t` broadcast to the shape of `y`: the tangent of a broadcasting operation whose
    varied operand is smaller than its result."""
    if isinstance(y, (tuple, list)) and isinstance(t, (tuple, list)) and len(t) != len(y):
        raise MissingRuleError(
            f"a list or tuple of {len(t)} values was joined to others with + (or repeated "
            "with *) where s2sad could not tell it was one, so its tangent cannot be "
            "placed; build the list with a display ([a, b]) or append() instead")
    shape = np.shape(y)
    return t if np.shape(t) == shape else np.broadcast_to(t, shape)


# (its result is `t` itself, or a read-only broadcast of it: a view, which forward mode's
# element writes in place must copy first, ad/write_in_place.py)
define(broadcast_like, "t, y", view="t")
helpers(__name__)
