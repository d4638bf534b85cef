"""Forward mode's own runtime helpers: those only forward code calls.

The forward rules of the libraries' primitives are declared with their reverse rules, in
one statement each (rules/numpy.py, math.py, ...); an elementwise rule needs none, as
its reverse template, linear in `g`, gives the tangent with `t` for `g`. A runtime helper
that reverse-mode code calls has its forward rule (so that forward mode applies to that
code: `hessian`, forward over reverse) beside it, in its own module (`@helper(linear=...)`
or `@helper(tangent=...)` above its `def`). What is here is forward mode's own: the
tangents of NumPy functions too long for a template (`extremum_dot`, `norm_dot`, ...),
`broadcast_like`, which a broadcasting operation's tangent reads, and
`value_and_tangent`, which checks what a custom_jvp's rule returns.
"""
import numpy as np

from ..errors import MissingRuleError
from . import factorizations as F, runtime as R
from .registry import define, helper, helpers


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
@helper(numba=True)
def extremum_dot(t, a, ans, axis=None, keepdims=False):
    """The tangent of max/min: the mean of `t` over the elements that attain it."""
    weights = R.extremum(np.ones_like(ans), a, ans, axis, keepdims)
    return np.sum(weights * t, axis=axis, keepdims=keepdims)


@helper(numba=True)
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


# (`norm_dot(u, x, n)` is the sum along the reduced axes of `norm(1, x, n) * u`: linear in
# `u`, and along `x` and `n` the tangents of `norm`, the adjoint, contracted with `u`)
@helper(params="u, x, n, ord=None, axis=None, keepdims=False", numba=True, tangent=(
    "_s2s_norm_dot(t, x, n, ord, axis, keepdims)",
    "np.sum(_s2s_norm_adjoint_dot(1.0, x, n, t, 0, ord, axis, keepdims) * u, axis=axis, "
    "keepdims=keepdims)",
    "np.sum(_s2s_norm_adjoint_dot(1.0, x, n, t, 1, ord, axis, keepdims) * u, axis=axis, "
    "keepdims=keepdims)"), adjoint=dict(
    params="u, x, n, ord=None, axis=None, keepdims=False",
    u="_s2s_norm(ans_bar, x, n, ord, axis, keepdims)",
    x="_s2s_norm_adjoint_dot(ans_bar, x, n, u, 0, ord, axis, keepdims)",
    n=("_s2s_rebroadcast(np.sum(u * _s2s_norm_adjoint_dot(ans_bar, x, n, 1.0, 1, ord, axis, "
       "keepdims), axis=axis, keepdims=keepdims), n)")))
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


def cholesky_dot(t, ans):
    """The tangent of `L = cholesky(a)`: `L phi(L^-1 a_dot L^-T)`."""
    inv = np.linalg.inv(ans)
    return ans @ F.lower_half(inv @ t @ np.swapaxes(inv, -1, -2))


@helper(linear="t", numba=True)
def sort_dot(t, a, axis=-1):
    """The tangent of `np.sort(a, axis)`: `t` in the order that sorts `a`."""
    return np.take_along_axis(t, np.argsort(a, axis), axis)


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
