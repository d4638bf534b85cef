"""Helpers of the rules for special functions, differences, integrals, polynomials,
convolutions, order statistics (quantiles), `np.gradient` and `np.interp`: derivatives
too long for a template (`polygamma`, `interp_slope`) and adjoints
(`undiff`, `rediff`, `unpolyval`, `unconvolve`, `unquantile`, ...), and the exponent's
term in the derivative of a power (`exponent_term`). Generated code reaches them through
`runtime`, which imports them; each helper's forward rule is above its `def`."""
import math

import numpy as np

from ..errors import MissingRuleError
from .pytrees import rebuild
from .registry import helper, helper_adjoint, helpers

ns = {"np": np}


#: B_2, B_4, ..., B_16, the Bernoulli numbers of the asymptotic series of polygamma.
_BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510)


@helper(tangent=(None, "t * _s2s_polygamma(n + 1, x)"), elementwise="x")
def polygamma(n, x):
    """The `n`-th derivative of the digamma function at `x` (a number or an array, not
    at a pole 0, -1, -2, ...); `n` = 0 is digamma, the derivative of log Γ. The
    recurrence ψ⁽ⁿ⁾(x) = ψ⁽ⁿ⁾(x + 1) - (-1)ⁿ n! / xⁿ⁺¹ moves x up to 10 or more, where
    the asymptotic series is exact to rounding."""
    dtype = np.result_type(x, np.float32) if isinstance(x, np.ndarray) else None
    x = np.array(x, dtype=np.float64)
    out = np.zeros_like(x)
    sign, factorial = (-1.0) ** n, math.factorial(n)
    low = x < 10
    while low.any():
        out -= np.where(low, sign * factorial / np.where(low, x, 1.0) ** (n + 1), 0.0)
        x = np.where(low, x + 1, x)
        low = x < 10
    inv = 1.0 / x
    if n == 0:
        series = np.log(x) - 0.5 * inv
        for k, b in enumerate(_BERNOULLI, 1):
            series = series - b / (2 * k) * inv ** (2 * k)
    else:
        series = math.factorial(n - 1) * inv ** n + 0.5 * factorial * inv ** (n + 1)
        for k, b in enumerate(_BERNOULLI, 1):
            series = series + (b * math.factorial(2 * k + n - 1) / math.factorial(2 * k)
                               * inv ** (2 * k + n))
        series = -sign * series
    out = out + series
    return float(out) if dtype is None else out.astype(dtype)


helper_adjoint(polygamma, zero="n", x="ans_bar * _s2s_polygamma(n + 1, x)")


@helper(linear="values")
def shaped_as(seq, values):
    """The array `values` in the container type of `seq` (a list, tuple or array of
    numbers): the adjoint of `seq` in a function of its numbers (`math.dist`)."""
    if isinstance(seq, np.ndarray) or np.ndim(values) == 0:
        return values                               # (a 0-d zero, see `products.spread_to`)
    return rebuild(seq, [float(v) for v in values]) if isinstance(seq, (tuple, list)) \
        else list(values)


helper_adjoint(shaped_as, namespace=ns, zero="seq",
               values="_s2s_rebroadcast(np.asarray(ans_bar), values)")


@helper(linear="g")
def undiff(g, n=1, axis=-1):
    """The adjoint of `np.diff(a, n, axis)`: the adjoint of a first difference, `n` times."""
    if np.ndim(g) == 0:
        return g                                    # the zero (see `products.spread_to`)
    for _ in range(n):
        g = -np.diff(g, axis=axis, prepend=0.0, append=0.0)
    return g


@helper(shape_only=(1,), linear="b")
def rediff(b, g, n=1, axis=-1):
    """The adjoint of `undiff(g, n, axis)` from the adjoint `b` of its result: `np.diff`
    again (a first difference and its adjoint are each other's transposes)."""
    if np.ndim(g) == 0:
        return b                                    # (undiff passed its zero through)
    if np.ndim(b) == 0:
        return np.zeros(np.shape(g))                # (the differences of a constant)
    return np.diff(b, n, axis)


helper_adjoint(undiff, g="_s2s_rediff(ans_bar, g, n, axis)")
helper_adjoint(rediff, b="_s2s_undiff(ans_bar, n, axis)")


@helper(linear="w")
def weights_like(a, w, axis=None):
    """The weights `w` of an average of `a` over `axis`, shaped to broadcast against `a`:
    ones for None, a 1-D `w` along `axis`."""
    if w is None:
        return np.ones(np.shape(a))
    w = np.asarray(w)
    if w.ndim == 1 and np.ndim(a) > 1 and axis is not None and np.ndim(axis) == 0:
        shape = [1] * np.ndim(a)
        shape[axis] = w.size
        w = w.reshape(shape)
    return w


helper_adjoint(weights_like, zero="a", w="_s2s_reshape_like(ans_bar, w)")


@helper(linear="y")
def midpoints(y, axis=-1):
    """The means of neighbours of `y` along `axis` (the heights of the trapezoids)."""
    y = np.asarray(y)
    n = y.shape[axis]
    return 0.5 * (np.take(y, range(1, n), axis) + np.take(y, range(n - 1), axis))


@helper(linear="b")
def unmidpoints(b, axis=-1):
    """The adjoint of `midpoints(y, axis)` from the adjoint `b` of its result: half of
    each entry of `b` to each of the two neighbours it is the mean of."""
    b = np.asarray(b)
    width = [(0, 0)] * b.ndim
    width[axis] = (1, 0)
    shifted = np.pad(b, width)
    width[axis] = (0, 1)
    return 0.5 * (shifted + np.pad(b, width))


helper_adjoint(midpoints, y="_s2s_unmidpoints(_s2s_spread(ans_bar, ans), axis)")
helper_adjoint(unmidpoints, b="_s2s_midpoints(_s2s_spread(ans_bar, ans), axis)")


@helper(tangent=(
    None, "_s2s_trapezoid_weights(y, t, dx, axis)",
    # (the weights read dx only without x: then they are linear in dx)
    "_s2s_trapezoid_weights(y, x, t, axis) - _s2s_trapezoid_weights(y, x, 0.0, axis)"))
def trapezoid_weights(y, x=None, dx=1.0, axis=-1):
    """What each sample of `y` is multiplied by in `np.trapezoid(y, x, dx, axis)`: half
    the widths of the intervals on either side of it."""
    y = np.asarray(y)
    if x is None:
        d = np.full(np.shape(np.take(y, range(y.shape[axis] - 1), axis)), 1.0) * dx
    else:
        d = np.diff(weights_like(y, x, axis), axis=axis)
    return 0.5 * (_pad(d, axis, 1, 0) + _pad(d, axis, 0, 1))


# (linear in the coordinates `x`: through their differences and the midpoints of those;
# and in `dx` where there are no coordinates)
helper_adjoint(trapezoid_weights, zero="y", x=(
    "_s2s_reshape_like(_s2s_undiff(_s2s_midpoints(_s2s_rebroadcast(ans_bar, ans), axis), 1, "
    "axis), x)"), dx=(
    "_s2s_rebroadcast(ans_bar * (_s2s_trapezoid_weights(y, x, 1.0, axis) "
    "- _s2s_trapezoid_weights(y, x, 0.0, axis)), dx)"))


# (constant in the samples; the rules that call it have no derivative in x and dx)
@helper(shape_only=(0,), result="fresh", tangent=(None,), adjoint={})
def simpson_weights(y, x=None, dx=1.0, axis=-1):
    """What each sample of `y` is multiplied by in `scipy.integrate.simpson(y, x=x, dx=dx,
    axis=axis)`, shaped to broadcast against `y`: Simpson's rule on pairs of intervals
    (for uneven spacing, the parabola through three samples), and with an even number of
    samples the last interval's correction (Cartwright's) as SciPy since 1.11 computes it."""
    n = np.shape(y)[axis]
    if x is None:
        h = np.full(max(n - 1, 0), float(dx))
    else:
        x = np.asarray(x, dtype=float)
        h = np.moveaxis(np.diff(x, axis=axis if x.ndim > 1 else -1), axis if x.ndim > 1
                        else -1, -1)
    w = np.zeros(h.shape[:-1] + (n,))
    if n % 2 == 0 and n == 2:
        w[..., :] = 0.5 * h[..., -1:]
    else:
        stop = n - 2 if n % 2 else n - 3
        h0, h1 = h[..., 0:stop:2], h[..., 1:stop + 1:2]
        hsum, hprod = h0 + h1, h0 * h1
        ratio = _quotient(h0, h1)
        w[..., 0:stop:2] += hsum / 6.0 * (2.0 - _quotient(1.0, ratio))
        w[..., 1:stop + 1:2] += hsum / 6.0 * (hsum * _quotient(hsum, hprod))
        w[..., 2:stop + 2:2] += hsum / 6.0 * (2.0 - ratio)
        if n % 2 == 0:
            a, b = h[..., -2], h[..., -1]
            w[..., -1] += _quotient(2 * b ** 2 + 3 * a * b, 6 * (b + a))
            w[..., -2] += _quotient(b ** 2 + 3.0 * a * b, 6 * a)
            w[..., -3] -= _quotient(b ** 3, 6 * a * (a + b))
    if w.ndim == 1:
        shape = [1] * np.ndim(y)
        shape[axis] = n
        return w.reshape(shape)
    return np.moveaxis(w, -1, axis)


def _quotient(a, b):
    """a / b, and 0 where b is 0 (as SciPy's simpson divides)."""
    a, b = np.broadcast_arrays(np.asarray(a, dtype=float), np.asarray(b, dtype=float))
    return np.divide(a, b, out=np.zeros(b.shape), where=b != 0)


def _pad(d, axis, before, after):
    width = [(0, 0)] * np.ndim(d)
    width[axis] = (before, after)
    return np.pad(d, width)


@helper(tangent=("_s2s_polyder_value(t, x, m)", "t * _s2s_polyder_value(p, x, m + 1)"))
def polyder_value(p, x, m=1):
    """The `m`-th derivative at `x` of the polynomial with coefficients `p` (highest
    power first), as `np.polyval` reads them."""
    p = np.asarray(p)
    return np.polyval(np.polyder(p, m), x) if m < len(p) else 0.0 * np.asarray(x)


helper_adjoint(polyder_value, p="_s2s_unpolyval(ans_bar, p, x, m)",
               x="ans_bar * _s2s_polyder_value(p, x, m + 1)")


@helper(tangent=("_s2s_unpolyval(t, p, x, m)", None, "_s2s_unpolyval(g * t, p, x, m + 1)"))
def unpolyval(g, p, x, m=0):
    """The adjoint of the coefficients `p` in `np.polyval(p, x)` (`m` 0), or with the
    `m`-th derivative of each power of `x` (what its tangents need)."""
    n = len(p)
    powers = np.arange(n - 1, -1, -1)
    scale = np.ones(n)
    for j in range(m):                              # falling factorial: d^m x^e
        scale = scale * (powers - j)
    x = np.asarray(x)
    basis = x[..., None] ** np.maximum(powers - m, 0) * scale
    g = np.broadcast_to(g, x.shape)
    return shaped_as(p, np.tensordot(g, basis, axes=g.ndim))


# (`g` onto the powers of `x`: its transpose evaluates the polynomial `ans_bar` there)
helper_adjoint(unpolyval, zero="p", g=(
    "_s2s_rebroadcast(_s2s_polyder_value(ans_bar, x, m), g)"), x=(
    "_s2s_rebroadcast(_s2s_rebroadcast(g, x) * _s2s_polyder_value(ans_bar, x, m + 1), x)"))


def _full_adjoint(g, n, m, mode, correlate):
    """The adjoint of `g`, the result of a convolution in `mode` of lengths `n` and `m`,
    as the full convolution's adjoint (zeros where `mode` leaves it out)."""
    full = np.zeros(n + m - 1, dtype=np.result_type(g, np.float32))
    k = min(n, m)
    start = {"full": 0, "valid": k - 1,
             "same": k // 2 if correlate and n < m else (k - 1) // 2}[mode]
    full[start:start + len(g)] = g
    return full


@helper(tangent=("_s2s_unconvolve(t, a, v, mode, which)",
                 "_s2s_unconvolve(g, t, v, mode, which) if which == 1 else _s2s_zeros_like(ans)",
                 "_s2s_unconvolve(g, a, t, mode, which) if which == 0 else _s2s_zeros_like(ans)"))
def unconvolve(g, a, v, mode="full", which=0):
    """The adjoint of `a` (`which` 0) or `v` (1) in `np.convolve(a, v, mode)`."""
    if np.ndim(g) == 0:
        return g                                    # the zero (see `products.spread_to`)
    full = _full_adjoint(g, np.size(a), np.size(v), mode, False)
    return np.correlate(full, v if which == 0 else a, "valid")


# (bilinear in `g` and the other operand, as `uncorrelate`: the transpose in `g` is the
# convolution itself; <ans_bar, unconvolve(g, a, v, 0)> = <unconvolve(g, ans_bar, v, 1), v>)
helper_adjoint(unconvolve, namespace=ns, g=(
    "_s2s_rebroadcast(np.convolve(_s2s_rebroadcast(ans_bar, a), v, mode) if which == 0 else "
    "np.convolve(a, _s2s_rebroadcast(ans_bar, v), mode), g)"), a=(
    "_s2s_unconvolve(g, a, _s2s_rebroadcast(ans_bar, v), mode, 0) if which == 1 else "
    "_s2s_rebroadcast(0.0, a)"), v=(
    "_s2s_unconvolve(g, _s2s_rebroadcast(ans_bar, a), v, mode, 1) if which == 0 else "
    "_s2s_rebroadcast(0.0, v)"))


@helper(tangent=("_s2s_uncorrelate(t, a, v, mode, which)",
                 "_s2s_uncorrelate(g, t, v, mode, which) if which == 1 else _s2s_zeros_like(ans)",
                 "_s2s_uncorrelate(g, a, t, mode, which) if which == 0 else _s2s_zeros_like(ans)"))
def uncorrelate(g, a, v, mode="valid", which=0):
    """The adjoint of `a` (`which` 0) or `v` (1) in `np.correlate(a, v, mode)`, which is
    `np.convolve(a, v[::-1])` in full."""
    if np.ndim(g) == 0:
        return g                                    # the zero (see `products.spread_to`)
    full = _full_adjoint(g, np.size(a), np.size(v), mode, True)
    if which == 0:
        return np.correlate(full, np.asarray(v)[::-1], "valid")
    return np.correlate(full, a, "valid")[::-1]


helper_adjoint(uncorrelate, namespace=ns, g=(
    "_s2s_rebroadcast(np.correlate(_s2s_rebroadcast(ans_bar, a), v, mode) if which == 0 else "
    "np.correlate(a, _s2s_rebroadcast(ans_bar, v), mode), g)"), a=(
    "_s2s_uncorrelate(g, a, _s2s_rebroadcast(ans_bar, v), mode, 0) if which == 1 else "
    "_s2s_rebroadcast(0.0, a)"), v=(
    "_s2s_uncorrelate(g, _s2s_rebroadcast(ans_bar, a), v, mode, 1) if which == 0 else "
    "_s2s_rebroadcast(0.0, v)"))


def _along(x, axis):
    """`x` with `axis` last (all of `x` flattened for None), and how to put it back."""
    x = np.asarray(x)
    if axis is None:
        return x.reshape(-1), lambda y: np.reshape(y, x.shape)
    return np.moveaxis(x, axis, -1), lambda y: np.moveaxis(y, -1, axis)


def _before(x):
    """The products of the entries before each one along the last axis, without
    dividing (zeros are fine)."""
    out = np.ones(x.shape, dtype=np.result_type(x, np.float32))
    out[..., 1:] = np.cumprod(x[..., :-1], axis=-1)
    return out


def _before_dot(x, t):
    """The tangent of `_before(x)` along `t`."""
    shifted, dt = np.ones_like(x), np.zeros(x.shape, dtype=np.result_type(t, x, np.float32))
    shifted[..., 1:], dt[..., 1:] = x[..., :-1], t[..., :-1]
    return _scan_dot(shifted, dt)


def _scan_dot(x, t):
    """The tangent of `np.cumprod(x, -1)` along `t`: D[j] = D[j - 1] x[j] + P[j - 1] t[j]."""
    out = np.empty(np.broadcast_shapes(np.shape(t), x.shape), dtype=np.result_type(t, x))
    p = _before(x)
    out[..., 0] = t[..., 0]
    for j in range(1, x.shape[-1]):
        out[..., j] = out[..., j - 1] * x[..., j] + p[..., j] * t[..., j]
    return out


def _suffix(g, x):
    """S[k] = g[k] + x[k + 1] S[k + 1]: the sums that the adjoint of a cumulative product
    multiplies by the products before each entry."""
    out = np.array(np.broadcast_to(g, x.shape), dtype=np.result_type(g, x, np.float32))
    for k in range(x.shape[-1] - 2, -1, -1):
        out[..., k] += x[..., k + 1] * out[..., k + 1]
    return out


# (the tangent along x is the whole derivative: p, the cumulative product of x, varies
# with x and is read only to save work)
@helper(result="fresh", params="g, x, p, axis=None",
        tangent=("_s2s_cumprod(t, x, p, axis)", "_s2s_cumprod_adjoint_dot(g, x, t, axis)"))
def cumprod(g, x, ans, axis=None):
    """The adjoint of `ans = np.cumprod(x, axis)`: the cumulative sum from the end of
    g ans, over x; where `x` has zeros, the products before each entry times the sums
    S[k] = g[k] + x[k + 1] S[k + 1], which divide by nothing."""
    x = np.asarray(x)
    xs, back = _along(x, axis)
    gs = _along(np.broadcast_to(g, np.shape(ans)), axis if np.ndim(ans) else None)[0]
    if not np.any(xs == 0):
        ans_s = _along(ans, axis)[0]
        out = np.flip(np.cumsum(np.flip(gs * ans_s, -1), -1), -1) / xs
    else:
        out = _before(xs) * _suffix(gs, xs)
    return back(out)


@helper(params="b, g, x, p, which, axis=None", tangent=(
    "_s2s_cumprod_adjoint(t, g, x, p, which, axis)",
    "_s2s_cumprod_adjoint(b, t, x, p, which, axis) if which else 0.0",
    *["_s2s_no_second_derivative(\"np.cumprod's adjoint\")"] * 2))
def cumprod_adjoint(b, g, x, p, which, axis=None):
    """The adjoint of `g` (`which` 0), `x` (1) or `p` (2) in `cumprod(g, x, p, axis)` from
    the adjoint `b` of its result. `cumprod(g, x, p)` is `J(x)^T g`, J the derivative of
    the cumulative product: the adjoint of `g` is its tangent along `b`. Where `x` has no
    zeros, `cumprod` is `R(g p) / x` (R the cumulative sum from the end), which reads `x`
    and `p` apart; where it has some, it reads `x` alone, and the adjoint of `x` is then
    the Hessian of <g, cumprod(x)> (symmetric) applied to `b`, its tangent along `b`."""
    if which == 0:
        return cumprod_dot(b, x, p, axis)
    xs, back = _along(x, axis)
    bs = _along(np.broadcast_to(b, np.shape(x)), axis)[0]
    if np.any(xs == 0):
        return cumprod_adjoint_dot(g, x, b, axis) if which == 1 else np.zeros(np.shape(p))
    gs = _along(np.broadcast_to(g, np.shape(p)), axis if np.ndim(p) else None)[0]
    if which == 1:
        ps = _along(p, axis)[0]
        return back(-bs * np.flip(np.cumsum(np.flip(gs * ps, -1), -1), -1) / (xs * xs))
    out = gs * np.cumsum(bs / xs, -1)
    return out if axis is None else back(out)


helper_adjoint(cumprod, params="g, x, p, axis=None",
               g="_s2s_rebroadcast(_s2s_cumprod_adjoint(ans_bar, g, x, p, 0, axis), g)",
               x="_s2s_cumprod_adjoint(ans_bar, g, x, p, 1, axis)",
               p="_s2s_cumprod_adjoint(ans_bar, g, x, p, 2, axis)")


def cumprod_dot(t, x, ans, axis=None):
    """The tangent of `ans = np.cumprod(x, axis)` along `t` (zeros in `x` are fine)."""
    xs, back = _along(x, axis)
    ts = _along(np.broadcast_to(t, np.shape(x)), axis)[0]
    if not np.any(xs == 0):
        out = _along(ans, axis)[0] * np.cumsum(ts / xs, -1)
    else:
        out = _scan_dot(xs, ts)
    return out if axis is None else back(out)      # (flat, as the product, for None)


def cumprod_adjoint_dot(g, x, t, axis=None):
    """The tangent of `cumprod(g, x, ans, axis)` along `t`, the tangent of `x` (and of
    `ans` with it)."""
    xs, back = _along(x, axis)
    ts = _along(np.broadcast_to(t, np.shape(x)), axis)[0]
    gs = _along(np.broadcast_to(g, np.shape(x)), axis)[0]
    s = _suffix(gs, xs)
    ds = np.zeros(s.shape, dtype=s.dtype)
    for k in range(xs.shape[-1] - 2, -1, -1):
        ds[..., k] = ts[..., k + 1] * s[..., k + 1] + xs[..., k + 1] * ds[..., k + 1]
    return back(_before_dot(xs, ts) * s + _before(xs) * ds)


# -- order statistics: np.median, np.quantile, np.percentile and their nan* forms -------
#: The quantile methods the rules know: each gives the result as weights on one or two
#: sorted values (numpy.lib._function_base_impl's `_QuantileMethods` with alpha = beta = 1).
QUANTILE_METHODS = ("linear", "lower", "higher", "midpoint", "nearest")


def _sorted_slices(a, axis, nan):
    """`a` with the axes `axis` reduces flattened into a last one, the order that sorts
    it (stably, NaN last), the number of values each slice counts (without the NaNs for
    the nan* functions), and the shape of the rest."""
    a = np.asarray(a)
    if axis is None:
        moved = a.reshape(-1)
    else:
        axes = tuple(x % a.ndim for x in (axis if isinstance(axis, tuple) else (axis,)))
        moved = np.moveaxis(a, axes, range(a.ndim - len(axes), a.ndim))
        moved = moved.reshape(moved.shape[:a.ndim - len(axes)] + (-1,))
    order = np.argsort(moved, axis=-1, kind="stable")
    n = np.sum(~np.isnan(moved), axis=-1) if nan else np.full(moved.shape[:-1],
                                                               moved.shape[-1])
    return moved, order, n


def quantile_weights(q, n, size, method="linear"):
    """What each sorted value is multiplied by in the quantiles `q` (of shape Q) of slices
    of `n` values (shape R): an array (Q + R + (size,)). Where the position q (n - 1)
    falls between two samples, 'linear' weighs them by its distance to each; at a
    sample, all goes to it (JAX's subgradient, and so the median of an even count
    splits 1/2 and 1/2 between the two middle values)."""
    if method not in QUANTILE_METHODS:
        raise MissingRuleError(f"s2sad has no derivative rule for quantiles with "
                               f"method={method!r}; only the methods "
                               f"{', '.join(QUANTILE_METHODS)}")
    q = np.asarray(q, dtype=np.float64)
    n = np.asarray(n)
    at = q.reshape(q.shape + (1,) * n.ndim) * (n - 1)
    low = np.floor(at)
    frac = at - low
    parts = {"linear": ((low, 1 - frac), (low + 1, frac)), "lower": ((low, 1.0),),
             "higher": ((np.ceil(at), 1.0),), "nearest": ((np.around(at), 1.0),),
             "midpoint": ((low, np.where(frac == 0, 1.0, 0.5)),
                          (low + 1, np.where(frac == 0, 0.0, 0.5)))}[method]
    positions = np.arange(size)
    out = np.zeros(at.shape + (size,))
    for index, weight in parts:
        index = np.clip(index, 0, np.maximum(n - 1, 0))
        out += (positions == index[..., None]) * np.asarray(weight)[..., None]
    return out * (n > 0)[..., None]                 # (a slice of NaN only: none)


#: The tangent of a quantile's derivative along `q` (the weights of the sorted values are
#: constant where `a` has no ties; in `q`, they move along the segments).
_NO_SECOND = "_s2s_no_second_derivative('np.quantile with respect to q')"


def _quantile_shape(a, q, axis, keepdims):
    shape = np.shape(a)
    if not keepdims:
        kept = () if axis is None else tuple(
            d for i, d in enumerate(shape)
            if i not in [x % len(shape) for x in (axis if isinstance(axis, tuple) else (axis,))])
        return np.shape(q) + kept
    axes = range(len(shape)) if axis is None else [
        x % len(shape) for x in (axis if isinstance(axis, tuple) else (axis,))]
    return np.shape(q) + tuple(1 if i in axes else d for i, d in enumerate(shape))


@helper(tangent=("_s2s_unquantile(t, a, q, axis, method, keepdims, nan)", None, _NO_SECOND))
def unquantile(g, a, q, axis=None, method="linear", keepdims=False, nan=False):
    """The adjoint of `a` in `np.quantile(a, q, axis, method=method, keepdims=keepdims)`
    (`np.nanquantile` for `nan`): `g` weighted onto the sorted values each quantile
    reads, put back where they came from (ties: as `np.sort`, by a stable sort)."""
    a = np.asarray(a)
    moved, order, n = _sorted_slices(a, axis, nan)
    w = quantile_weights(q, n, moved.shape[-1], method)
    g = np.broadcast_to(g, _quantile_shape(a, q, axis, keepdims)).reshape(w.shape[:-1])
    by_rank = np.sum(g[..., None] * w, axis=tuple(range(np.ndim(q))))
    out = np.zeros(moved.shape, dtype=np.result_type(a, np.float32))
    np.put_along_axis(out, order, by_rank, axis=-1)
    if axis is None:
        return out.reshape(a.shape)
    axes = tuple(x % a.ndim for x in (axis if isinstance(axis, tuple) else (axis,)))
    rest = [d for i, d in enumerate(a.shape) if i not in axes]
    moved_shape = rest + [a.shape[i] for i in axes]
    return np.moveaxis(out.reshape(moved_shape), range(a.ndim - len(axes), a.ndim), axes)


# (the transpose of the quantile's tangent, the same weights on the sorted values, which are
# constant in `a` where it has no ties; in `q` they have no derivative rule)
helper_adjoint(unquantile, zero="a", g=(
    "_s2s_rebroadcast(_s2s_quantile_dot(_s2s_rebroadcast(ans_bar, a), a, q, axis, method, "
    "keepdims, nan), g)"))


@helper(params="t_a, a, q, axis=None, method='linear', keepdims=False, nan=False",
        tangent=("_s2s_quantile_dot(t, a, q, axis, method, keepdims, nan)", None, _NO_SECOND))
def quantile_dot(t, a, q, axis=None, method="linear", keepdims=False, nan=False):
    """The tangent of `np.quantile(a, q, ...)` (`np.nanquantile` for `nan`) along `t`,
    the tangent of `a`: the same weights on the sorted tangents."""
    moved, order, n = _sorted_slices(a, axis, nan)
    t_moved = _sorted_slices(np.broadcast_to(t, np.shape(a)), axis, False)[0]
    w = quantile_weights(q, n, moved.shape[-1], method)
    by_rank = np.take_along_axis(t_moved, order, axis=-1)
    out = np.sum(w * by_rank, axis=-1).astype(np.result_type(by_rank, np.float32), copy=False)
    return out.reshape(_quantile_shape(a, q, axis, keepdims))


def quantile_slope(a, q, axis=None, method="linear", keepdims=False, nan=False):
    """The derivative of `np.quantile(a, q, ...)` with respect to `q`: for 'linear',
    (n - 1) times the difference of the two sorted values q (n - 1) falls between, and
    0 at a sample (where JAX reads the same sample twice); 0 for the other methods,
    which are piecewise constant in `q`."""
    moved, order, n = _sorted_slices(a, axis, nan)
    values = np.take_along_axis(moved, order, axis=-1)
    shape = _quantile_shape(a, q, axis, keepdims)
    if method != "linear":
        quantile_weights(q, n, moved.shape[-1], method)         # (refuses another method)
        return np.zeros(shape)
    at = np.asarray(q, dtype=np.float64)
    at = at.reshape(at.shape + (1,) * n.ndim) * (n - 1)
    top = np.maximum(n - 1, 0)[..., None]
    low = np.clip(np.floor(at)[..., None], 0, top).astype(np.intp)
    high = np.clip(np.ceil(at)[..., None], 0, top).astype(np.intp)
    values = np.broadcast_to(values, at.shape + values.shape[-1:])
    step = (np.take_along_axis(values, high, -1) - np.take_along_axis(values, low, -1))[..., 0]
    return (step * (n - 1) * (n > 0)).reshape(shape)


@helper(tangent=("_s2s_unquantile_q(t, a, q, axis, method, keepdims, nan, scale)",
                 _NO_SECOND, _NO_SECOND))
def unquantile_q(g, a, q, axis=None, method="linear", keepdims=False, nan=False, scale=1):
    """The adjoint of `q` in `np.quantile(a, q / scale, ...)` (`scale` 100 for
    `np.percentile`): `g` times the slope, summed over everything but the axes of `q`."""
    slope = quantile_slope(a, np.divide(q, scale), axis, method, keepdims, nan) / scale
    total = np.sum(np.broadcast_to(g, slope.shape) * slope,
                   axis=tuple(range(np.ndim(q), slope.ndim)))
    return total if isinstance(q, np.ndarray) else shaped_as(q, total) if isinstance(
        q, (list, tuple)) else float(total)


# (`g` times the slope, the tangent along `q` transposed; the slope's own derivatives, in
# `a` and `q`, have no rule)
helper_adjoint(unquantile_q, g=(
    "_s2s_rebroadcast(_s2s_quantile_q_dot(ans_bar, a, q, axis, method, keepdims, nan, scale), g)"))


@helper(params="t_q, a, q, axis=None, method='linear', keepdims=False, nan=False, scale=1",
        tangent=("_s2s_quantile_q_dot(t, a, q, axis, method, keepdims, nan, scale)",
                 _NO_SECOND, _NO_SECOND))
def quantile_q_dot(t, a, q, axis=None, method="linear", keepdims=False, nan=False, scale=1):
    """The tangent of `np.quantile(a, q / scale, ...)` along `t`, the tangent of `q`."""
    slope = quantile_slope(a, np.divide(q, scale), axis, method, keepdims, nan) / scale
    t = np.asarray(t)
    return t.reshape(t.shape + (1,) * (slope.ndim - t.ndim)) * slope


# -- np.gradient and np.interp ---------------------------------------------------------
def _gradient_axes(f, spacing, axis):
    """The axes `np.gradient(f, *spacing, axis=axis)` differentiates along, and the
    spacing along each (a number or the coordinates)."""
    ndim = np.ndim(f)
    axes = list(range(ndim)) if axis is None else [
        x % ndim for x in (axis if isinstance(axis, (tuple, list)) else (axis,))]
    spacing = list(spacing)
    if not spacing:
        spacing = [1.0] * len(axes)
    elif len(spacing) == 1 and np.ndim(spacing[0]) == 0:
        spacing = spacing * len(axes)
    return axes, spacing


def _ungradient_along(d, axis, h, edge_order):
    """The adjoint of `np.gradient(f, h, axis=axis, edge_order=edge_order)` for the
    adjoint `d` of its result. Each result reads three neighbouring samples (the first
    three, the last three at the edges), so the coefficients come from the gradients of
    three 0/1 combs, one per residue modulo 3: read exactly as NumPy computes them, for
    any spacing."""
    d = np.moveaxis(np.asarray(d), axis, 0)
    n = d.shape[0]
    positions = np.arange(n)
    combs = np.array([np.gradient((positions % 3 == r).astype(np.float64), h,
                                  edge_order=edge_order) for r in range(3)])
    start = np.clip(positions - 1, 0, max(n - 3, 0))
    out = np.zeros(d.shape, dtype=np.result_type(d, np.float32))
    for k in range(3):
        source = start + k
        inside = source < n
        coefficient = combs[source % 3, positions][inside]
        np.add.at(out, source[inside],
                  coefficient.reshape((-1,) + (1,) * (d.ndim - 1)) * d[inside])
    return np.moveaxis(out, 0, axis)


@helper(linear="g")
def ungradient(g, f, spacing=(), axis=None, edge_order=1):
    """The adjoint of `f` in `np.gradient(f, *spacing, axis=axis, edge_order=...)`, whose
    result is one array per axis (one array for one axis)."""
    f = np.asarray(f)
    axes, spacing = _gradient_axes(f, spacing, axis)
    parts = list(g) if isinstance(g, (list, tuple)) else [g] * len(axes)
    out = np.zeros(f.shape, dtype=np.result_type(f, np.float32))
    for d, ax, h in zip(parts, axes, spacing):
        out += _ungradient_along(np.broadcast_to(d, f.shape), ax, h, edge_order)
    return out


helper_adjoint(ungradient, namespace=ns, zero="f", g=(
    "_s2s_rebroadcast(np.gradient(_s2s_rebroadcast(ans_bar, f), *spacing, axis=axis, "
    "edge_order=edge_order), g)"))


def _interp_segments(x, xp, period):
    """For each `x`: the index i of the sample to the right of its segment (i - 1 and i
    bound it; to the right of a sample point, as in JAX), its fraction of the way
    along, and whether it is left of `xp[0]` or right of `xp[-1]`."""
    if period is not None:
        raise MissingRuleError("s2sad has no derivative rule for np.interp with period=; "
                               "take x % period and extend xp and fp by a sample at each end")
    x, xp = np.asarray(x, dtype=np.float64), np.asarray(xp, dtype=np.float64)
    i = np.clip(np.searchsorted(xp, x, side="right"), 1, len(xp) - 1)
    width = xp[i] - xp[i - 1]
    fraction = (x - xp[i - 1]) / np.where(width == 0, 1.0, width)
    return i, fraction, x < xp[0], x > xp[-1]


@helper(tangent=(None, None, "_s2s_interp_slope(x, xp, t, period)"))
def interp_slope(x, xp, fp, period=None):
    """The derivative of `np.interp(x, xp, fp)` with respect to `x`: the slope of the
    segment of each `x` (the one to its right at a sample point, the last one at the
    last), 0 outside `xp`."""
    i, _, below, above = _interp_segments(x, xp, period)
    xp, fp = np.asarray(xp, dtype=np.float64), np.asarray(fp)
    width = xp[i] - xp[i - 1]
    slope = (fp[i] - fp[i - 1]) / np.where(width == 0, 1.0, width)
    return np.where(below | above | (width == 0), 0.0, slope)


@helper(linear="b")
def uninterp_slope(b, x, xp, fp, period=None):
    """The adjoint of `fp` in `interp_slope(x, xp, fp)` from the adjoint `b` of its
    result: `b` over the width of each segment, to its right sample, minus to its left."""
    return uninterp_dot(b, 1.0, x, xp, fp, period)


helper_adjoint(uninterp_slope, zero="x, xp, fp", b="_s2s_interp_slope(x, xp, ans_bar, period)")


# (linear in `fp`; piecewise constant in `x` and `xp`)
helper_adjoint(interp_slope, zero="x, xp", fp="_s2s_uninterp_slope(ans_bar, x, xp, fp, period)")


@helper(tangent=("_s2s_uninterp(t, x, xp, fp, left, right, period)",
                 "_s2s_uninterp_dot(g, t, x, xp, fp, period)"))
def uninterp(g, x, xp, fp, left=None, right=None, period=None):
    """The adjoint of `fp` in `np.interp(x, xp, fp, left, right)`: `g` shared between the
    two samples of each segment by the fraction of the way along; left of `xp[0]` (and
    right of `xp[-1]`) to the first (last) sample unless `left` (`right`) is given."""
    i, fraction, below, above = _interp_segments(x, xp, period)
    g = np.broadcast_to(g, np.shape(i))
    inside = ~(below | above)
    out = np.zeros(np.shape(fp), dtype=np.result_type(fp, np.float32))
    np.add.at(out, i - 1, np.where(inside, g * (1 - fraction), 0.0))
    np.add.at(out, i, np.where(inside, g * fraction, 0.0))
    if left is None:
        out[0] += np.sum(np.where(below, g, 0.0))
    if right is None:
        out[-1] += np.sum(np.where(above, g, 0.0))
    return out if isinstance(fp, np.ndarray) else shaped_as(fp, out)


# (`g` shared between the two samples of each segment: its transpose interpolates
# `ans_bar` there, 0 outside where `left` or `right` is given; in `x`, `g` times the
# slope of `ans_bar`, the transpose of `uninterp_dot`)
helper_adjoint(uninterp, namespace=ns, zero="fp, left, right", g=(
    "_s2s_rebroadcast(np.interp(x, xp, ans_bar) - (left is not None) * np.where("
    "np.asarray(x) < xp[0], ans_bar[0], 0.0) - (right is not None) * np.where("
    "np.asarray(x) > xp[-1], ans_bar[-1], 0.0), g)"), x=(
    "_s2s_rebroadcast(g * _s2s_interp_slope(x, xp, ans_bar), x)"))


def uninterp_dot(g, t, x, xp, fp, period=None):
    """The tangent of `uninterp(g, x, xp, fp, ...)` along `t`, the tangent of `x`: the
    fraction of the way along each segment moves by `t` over its width."""
    i, _, below, above = _interp_segments(x, xp, period)
    xp = np.asarray(xp, dtype=np.float64)
    width = xp[i] - xp[i - 1]
    moved = np.where(below | above | (width == 0), 0.0,
                     np.broadcast_to(g, np.shape(i)) * t / np.where(width == 0, 1.0, width))
    out = np.zeros(np.shape(fp), dtype=np.result_type(fp, np.float32))
    np.add.at(out, i - 1, -moved)
    np.add.at(out, i, moved)
    return out if isinstance(fp, np.ndarray) else shaped_as(fp, out)


@helper(linear="g")
def interp_outside(g, x, xp, side):
    """The sum of `g` where `x` is left of `xp[0]` (`side` 0) or right of `xp[-1]` (1):
    the adjoint of `left` or `right` in `np.interp`."""
    _, _, below, above = _interp_segments(x, xp, None)
    return float(np.sum(np.where(above if side else below, g, 0.0)))


helper_adjoint(interp_outside, zero="x, xp", namespace={"np": np}, g=(
    "_s2s_rebroadcast(np.where(np.asarray(x) > np.asarray(xp)[-1] if side else np.asarray(x) < "
    "np.asarray(xp)[0], ans_bar, 0.0), g)"))


@helper(tangent={"u": "_s2s_exponent_term(t, x)", "x": "u * _s2s_log_base_dot(t, x)"},
        elementwise="u, x")
def exponent_term(u, x):
    """`u * log(x)`, the term of the exponent in a derivative of `x ** y` (`u` is `g * ans`
    or `t * ans`): 0 where x == 0 (0 ** y is flat in y); where x < 0 (whose powers NumPy
    makes NaN off the integers), 0 where u == 0 (nothing moves the exponent: `x ** (i + 1)`
    of an int `i`), else NaN."""
    if np.ndim(u) or np.ndim(x):
        logs = u * np.log(np.where(x > 0, x, 1.0))
        return np.where(x > 0, logs, np.where((x == 0) | (u == 0), 0.0 * logs, np.nan))
    return u * math.log(x) if x > 0 else 0.0 * u if x == 0 or u == 0 else math.nan


@helper(elementwise="t, x")
def log_base_dot(t, x):
    """The tangent of log(x) in `exponent_term`: `t / x`, and 0 where x == 0."""
    if isinstance(x, np.ndarray):
        return np.where(x == 0, 0.0, t / np.where(x == 0, 1.0, x))
    return t / x if x != 0 else 0.0 * t


helper_adjoint(exponent_term, u="_s2s_exponent_term(ans_bar, x)",
               x="_s2s_unbroadcast(_s2s_safe_divide(ans_bar * u, x), x)")


helpers(__name__)
