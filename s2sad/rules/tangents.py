"""Forward rules: the tangents of primitives whose reverse rule is not elementwise.

Rules flagged `elementwise` (scalar math, Python operators, NumPy ufuncs) need no entry:
their reverse templates are linear in `g` and act element by element, so with the
tangent `t` for `g` they give the tangent (`g * cos(x)` becomes `x_dot * cos(x)`).

The others are here, one line per rule. `linear(prim, params, *groups)` says `prim` is
linear in each group of parameters: its tangent is the call itself on the tangents
(`np.sum(x_dot, axis=0)`). `jvp(prim, params, ...)` gives templates over `t`, the
tangent of that parameter, and `ans`, the result. The last block covers the helpers
that reverse-mode code calls, so that forward mode applies to it (`hessian`).
"""
import builtins
import operator

import numpy as np

from . import runtime as R
from .operators import POW_X
from .registry import METHODS, jvp, linear, returns

ns = {"np": np, "_s2s_log": R.log_base, "_s2s_zeros_like": R.zeros_like,
      "_s2s_unreduce": R.unreduce, "_s2s_clip_mask": R.clip_mask,
      "_s2s_prod_others": R.prod_others}


def _helpers(*fns):
    ns.update({"_s2s_" + f.__name__: f for f in fns})
    return fns[0]


# -- Python operators and builtins ------------------------------------------------------
linear(operator.matmul, "a, b", "a", "b")
linear(operator.getitem, "x, index", "x")
linear(builtins.getattr, "obj, name", "obj")
linear(R.setitem, "a, index, v", "a, v")
linear(R.append, "a, v", "a, v")
linear(builtins.reversed, "seq", "seq")
linear(builtins.sum, "iterable, start=0", "iterable, start")
# the quotient rule from the quotient: one multiplication fewer than the reverse rule's
jvp(operator.truediv, "x, y", "t / y", "-t * ans / y")
jvp(builtins.pow, "x, y", POW_X.replace("g", "t"), "t * ans * _s2s_log(x)", namespace=ns)
jvp(builtins.max, "x, y", "t * (x >= y)", "t * (x < y)")
jvp(builtins.min, "x, y", "t * (x <= y)", "t * (x > y)")
for _n in range(3, 9):     # the first argument that attains the result carries it
    _params = ", ".join(f"x{i}" for i in range(_n))
    for _f in (builtins.max, builtins.min):
        jvp(_f, _params, *[f"t * _s2s_first(ans, {i}, {_params})" for i in range(_n)],
            namespace={"_s2s_first": R.first})


# -- NumPy --------------------------------------------------------------------------------
def extremum_dot(t, a, ans, axis=None, keepdims=False):
    """The tangent of max/min: the mean of `t` over the elements that attain it."""
    weights = R.extremum(np.ones_like(ans), a, ans, axis, keepdims)
    return np.sum(weights * t, axis=axis, keepdims=keepdims)


def variance_dot(t, a, axis=None, ddof=0, keepdims=False):
    """The tangent of var(a): 2 <a - mean(a), t> / (n - ddof) over `axis`."""
    a = np.asarray(a)
    centred = a - a.mean(axis=axis, keepdims=True)
    return 2 * np.sum(centred * t, axis=axis, keepdims=keepdims) / (R.count(a, axis) - ddof)


def norm_dot(t, x, ans, ord=None, axis=None, keepdims=False):
    """The tangent of the 2-norm of vectors and the Frobenius norm."""
    if ord not in (None, 2, "fro") or (ord == 2 and axis is None and np.ndim(x) > 1):
        raise NotImplementedError(f"the tangent of norm with ord={ord!r}")
    return np.sum(np.asarray(x) * t, axis=axis, keepdims=keepdims) / np.where(ans == 0, 1, ans)


def _t(m):
    return np.swapaxes(m, -1, -2)


def _phi(m):
    """The lower triangle of `m`, with half its diagonal."""
    return np.tril(m) - 0.5 * np.eye(np.shape(m)[-1]) * m


def cholesky_dot(t, ans):
    """The tangent of `L = cholesky(a)`: `L phi(L^-1 a_dot L^-T)`."""
    inv = np.linalg.inv(ans)
    return ans @ _phi(inv @ t @ _t(inv))


_helpers(extremum_dot, variance_dot, norm_dot, cholesky_dot)

REDUCTION = "a, axis=None, dtype=None, out=None, keepdims=False"
linear(np.real, "val", "val")
jvp(np.clip, "a, a_min, a_max", "t * _s2s_clip_mask(a, a_min, a_max)", namespace=ns)
# The reverse rule does without `ans`, so that `grad` may skip computing it; a tangent is
# computed next to the value, and reuses it.
jvp(np.logaddexp, "x, y", "t * np.exp(x - ans)", "t * np.exp(y - ans)", namespace=ns)
linear(np.sum, REDUCTION, "a")
linear(np.mean, REDUCTION, "a")
jvp(np.prod, REDUCTION,
    a="np.sum(_s2s_prod_others(a, axis) * t, axis, keepdims=keepdims)",
    namespace=ns)
for _f in (np.max, np.min, np.amax, np.amin):
    jvp(_f, "a, axis=None, out=None, keepdims=False",
        a="_s2s_extremum_dot(t, a, ans, axis, keepdims)", namespace=ns)
jvp(np.var, "a, axis=None, dtype=None, out=None, ddof=0, keepdims=False",
    a="_s2s_variance_dot(t, a, axis, ddof, keepdims)", namespace=ns)
jvp(np.std, "a, axis=None, dtype=None, out=None, ddof=0, keepdims=False",
    a="_s2s_variance_dot(t, a, axis, ddof, keepdims) / (2 * ans)", namespace=ns)
linear(np.cumsum, "a, axis=None", "a")
jvp(np.sort, "a, axis=-1", a="np.take_along_axis(t, np.argsort(a, axis), axis)", namespace=ns)
jvp(np.cumprod, "a, axis=None", a="ans * np.cumsum(t / a, axis)", namespace=ns)

linear(np.matmul, "a, b", "a", "b")
linear(np.dot, "a, b", "a", "b")
linear(np.inner, "a, b", "a", "b")
linear(np.outer, "a, b", "a", "b")
linear(np.tensordot, "a, b, axes=2", "a", "b")
linear(np.einsum, "subscripts, a", "a")
linear(np.einsum, "subscripts, a, b", "a", "b")
linear(np.einsum, "subscripts, a, b, c", "a", "b", "c")
linear(np.trace, "a, offset=0, axis1=0, axis2=1", "a")
linear(np.diag, "v, k=0", "v")
jvp(np.linalg.norm, "x, ord=None, axis=None, keepdims=False",
    x="_s2s_norm_dot(t, x, ans, ord, axis, keepdims)", namespace=ns)
jvp(np.linalg.solve, "a, b", "-np.linalg.solve(a, t @ ans)", "np.linalg.solve(a, t)",
    namespace=ns)
jvp(np.linalg.inv, "a", "-ans @ t @ ans")
jvp(np.linalg.det, "a", "ans * np.trace(np.linalg.solve(a, t), 0, -2, -1)", namespace=ns)
jvp(np.linalg.slogdet, "a",
    "(_s2s_zeros_like(ans[0]), np.trace(np.linalg.solve(a, t), 0, -2, -1))", namespace=ns)
jvp(np.linalg.cholesky, "a", "_s2s_cholesky_dot(t, ans)", namespace=ns)

linear(np.reshape, "a, newshape", "a")
linear(np.ravel, "a", "a")
linear(np.squeeze, "a, axis=None", "a")
linear(np.expand_dims, "a, axis", "a")
linear(np.transpose, "a, axes=None", "a")
linear(np.swapaxes, "a, axis1, axis2", "a")
linear(np.moveaxis, "a, source, destination", "a")
linear(np.broadcast_to, "array, shape", "array")
linear(np.flip, "m, axis=None", "m")
linear(np.roll, "a, shift, axis=None", "a")
linear(np.tile, "A, reps", "A")
linear(np.repeat, "a, repeats, axis=None", "a")
linear(np.pad, "array, pad_width", "array")
linear(np.triu, "m, k=0", "m")
linear(np.tril, "m, k=0", "m")
linear(np.concatenate, "arrays, axis=0", "arrays")
linear(np.stack, "arrays, axis=0", "arrays")
linear(np.hstack, "tup", "tup")
linear(np.vstack, "tup", "tup")
linear(np.array, "object, dtype=None", "object")
linear(np.asarray, "a, dtype=None", "a")
linear(np.copy, "a", "a")
linear(np.ndarray.astype, "self, dtype", "self")
for _n in range(5):
    _dims = "".join(f", d{i}" for i in range(_n))
    linear(METHODS["reshape"], "a" + _dims, "a")
    linear(METHODS["transpose"], "a" + _dims, "a")


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
    g = R._spread(g, np.shape(L))
    phi = _phi(np.tril(_t(L) @ g))
    s_dot = (_t(inv_dot) @ phi @ inv + _t(inv) @ _phi(np.tril(_t(t) @ g)) @ inv
             + _t(inv) @ phi @ inv_dot)
    return 0.5 * (s_dot + _t(s_dot))


def inv_adjoint_dot(g, ans, t):
    """The tangent of `inv(g, ans)` (the adjoint of an inverse `ans`) along `ans`."""
    g = R._spread(g, np.shape(ans))
    return -(_t(t) @ g @ _t(ans) + _t(ans) @ g @ _t(t))


_helpers(log_base_dot, cholesky_adjoint_dot, inv_adjoint_dot)
ns.update({"_s2s_" + k: getattr(R, k) for k in ("einsum", "tensordot", "solve", "norm",
                                                  "cumprod", "cholesky", "inner", "outer",
                                                  "inv",
                                                  "prod_others_dot")})

jvp(R.zeros_like, "x")                      # constants: no tangent
jvp(R.seed, "y, name")
returns("scalar", R.seed)                   # the adjoint 1 of a scalar output: shape ()
jvp(R.count, "x, axis=None")
for _n in range(3, 9):                      # 0 or 1: no tangent
    jvp(R.first, "ans, i, " + ", ".join(f"x{k}" for k in range(_n)))
jvp(R.clip_mask, "x, lo, hi")
jvp(R.prod_others, "x, axis=None", "_s2s_prod_others_dot(x, t, axis)", namespace=ns)
jvp(R.log_base, "x", "_s2s_log_base_dot(t, x)", namespace=ns)
linear(R.add, "a, b", "a, b")
linear(R.unbroadcast, "g, x", "g")
linear(R.unindex, "g, x, index", "g")
linear(R.own, "g, x", "g")
linear(R.snapshot, "v", "v")
linear(R.unattr, "g, obj, name", "g")
linear(R.cotangent, "c, x", "c")
linear(R.unreduce, "g, x, axis=None, keepdims=False", "g")
linear(R.extremum, "g, x, m, axis=None, keepdims=False", "g")
linear(R.variance, "g, x, axis=None, ddof=0, keepdims=False", "g", "x")
linear(R.cumsum, "g, x, axis=None", "g")
jvp(R.cumprod, "g, x, p, axis=None", "_s2s_cumprod(t, x, p, axis)", "-ans * t / x",
    "_s2s_cumprod(g, x, t, axis)", namespace=ns)
linear(R.matmul_lhs, "g, a, b", "g", "b")
linear(R.matmul_rhs, "g, a, b", "g", "a")
linear(R.dot_lhs, "g, a, b", "g", "b")
linear(R.dot_rhs, "g, a, b", "g", "a")
jvp(R.einsum, "g, subscripts, k, a", "_s2s_einsum(t, subscripts, k, a)", namespace=ns)
jvp(R.einsum, "g, subscripts, k, a, b", "_s2s_einsum(t, subscripts, k, a, b)", None, None,
    "_s2s_einsum(g, subscripts, k, t, b) if k != 0 else _s2s_zeros_like(ans)",
    "_s2s_einsum(g, subscripts, k, a, t) if k != 1 else _s2s_zeros_like(ans)", namespace=ns)
jvp(R.einsum, "g, subscripts, k, a, b, c", "_s2s_einsum(t, subscripts, k, a, b, c)", None,
    None, "_s2s_einsum(g, subscripts, k, t, b, c) if k != 0 else _s2s_zeros_like(ans)",
    "_s2s_einsum(g, subscripts, k, a, t, c) if k != 1 else _s2s_zeros_like(ans)",
    "_s2s_einsum(g, subscripts, k, a, b, t) if k != 2 else _s2s_zeros_like(ans)",
    namespace=ns)
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
for _f, _params in [(R.swapaxes, "g, axis1, axis2"), (R.moveaxis, "g, source, destination"),
                    (R.flip, "g, axis=None"), (R.roll, "g, shift, axis=None"),
                    (R.triu, "g, k=0"), (R.tril, "g, k=0")]:
    linear(_f, _params, "g")
linear(R.trace, "g, x, offset=0, axis1=0, axis2=1", "g")
linear(R.diag, "g, v, k=0", "g")
jvp(R.norm, "g, x, n, ord=None, axis=None, keepdims=False",
    "_s2s_norm(t, x, n, ord, axis, keepdims)", "_s2s_norm(g, t, n, ord, axis, keepdims)",
    "_s2s_norm(-g * t / n, x, n, ord, axis, keepdims)", namespace=ns)
jvp(R.solve, "g, a, b, x, which", "_s2s_solve(t, a, b, x, which)",
    "_s2s_solve(-np.swapaxes(t, -1, -2) @ np.linalg.solve(np.swapaxes(a, -1, -2), g), "
    "a, b, x, which)", None,
    "_s2s_solve(g, a, b, t, which) if which == 0 else _s2s_zeros_like(ans)", namespace=ns)
jvp(R.cholesky, "g, L", "_s2s_cholesky(t, L)", "_s2s_cholesky_adjoint_dot(g, L, t)",
    namespace=ns)
for _f, _params in [(R.split_like, "g, arrays, axis=0"), (R.unstack, "g, arrays, axis=0"),
                    (R.hstack, "g, arrays"), (R.vstack, "g, arrays"), (R.from_array, "g, obj"),
                    (R.untranspose, "g, axes=None"), (R.untile, "g, x, reps"),
                    (R.unrepeat, "g, x, repeats, axis=None"), (R.unpad, "g, x, pad_width"),
                    (R.cast_like, "g, x"), (R.unsum, "g, items"),
                    (R.unsort, "g, x, axis=-1"), (R.zero_at, "g, index"), (R.take, "g, index"),
                    (R.head, "g"), (R.last, "g")]:
    linear(_f, _params, "g")


def broadcast_like(t, y):
    """`t` broadcast to the shape of `y`: the tangent of a broadcasting operation whose
    varied operand is smaller than its result."""
    shape = np.shape(y)
    return t if np.shape(t) == shape else np.broadcast_to(t, shape)
