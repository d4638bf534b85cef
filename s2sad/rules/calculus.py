"""Helpers of the rules for special functions and for differences, integrals, polynomials
and convolutions: derivatives too long for a template (`polygamma`, `sinc_slope`) and
adjoints (`undiff`, `unpolyval`, `unconvolve`, ...). Generated code reaches them through
`runtime`, which imports them; rules/tangents.py gives their forward rules."""
import math

import numpy as np

from ..errors import MissingRuleError
from .containers import rebuild


#: B_2, B_4, ..., B_16, the Bernoulli numbers of the asymptotic series of polygamma.
_BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510)


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


def shaped_as(seq, values):
    """The array `values` in the container type of `seq` (a list, tuple or array of
    numbers): the adjoint of `seq` in a function of its numbers (`math.dist`)."""
    if isinstance(seq, np.ndarray) or np.ndim(values) == 0:
        return values                               # (a 0-d zero, see `_spread`)
    return rebuild(seq, [float(v) for v in values]) if isinstance(seq, (tuple, list)) \
        else list(values)


def undiff(g, n=1, axis=-1):
    """The adjoint of `np.diff(a, n, axis)`: the adjoint of a first difference, `n` times."""
    if np.ndim(g) == 0:
        return g                                    # the zero (see `_spread`)
    for _ in range(n):
        g = -np.diff(g, axis=axis, prepend=0.0, append=0.0)
    return g


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


def midpoints(y, axis=-1):
    """The means of neighbours of `y` along `axis` (the heights of the trapezoids)."""
    y = np.asarray(y)
    n = y.shape[axis]
    return 0.5 * (np.take(y, range(1, n), axis) + np.take(y, range(n - 1), axis))


def trapezoid_weights(y, x=None, dx=1.0, axis=-1):
    """What each sample of `y` is multiplied by in `np.trapezoid(y, x, dx, axis)`: half
    the widths of the intervals on either side of it."""
    y = np.asarray(y)
    if x is None:
        d = np.full(np.shape(np.take(y, range(y.shape[axis] - 1), axis)), 1.0) * dx
    else:
        d = np.diff(weights_like(y, x, axis), axis=axis)
    return 0.5 * (_pad(d, axis, 1, 0) + _pad(d, axis, 0, 1))


def _pad(d, axis, before, after):
    width = [(0, 0)] * np.ndim(d)
    width[axis] = (before, after)
    return np.pad(d, width)


def polyder_value(p, x, m=1):
    """The `m`-th derivative at `x` of the polynomial with coefficients `p` (highest
    power first), as `np.polyval` reads them."""
    p = np.asarray(p)
    return np.polyval(np.polyder(p, m), x) if m < len(p) else 0.0 * np.asarray(x)


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


def _full_adjoint(g, n, m, mode, correlate):
    """The adjoint of `g`, the result of a convolution in `mode` of lengths `n` and `m`,
    as the full convolution's adjoint (zeros where `mode` leaves it out)."""
    full = np.zeros(n + m - 1, dtype=np.result_type(g, np.float32))
    k = min(n, m)
    start = {"full": 0, "valid": k - 1,
             "same": k // 2 if correlate and n < m else (k - 1) // 2}[mode]
    full[start:start + len(g)] = g
    return full


def unconvolve(g, a, v, mode="full", which=0):
    """The adjoint of `a` (`which` 0) or `v` (1) in `np.convolve(a, v, mode)`."""
    if np.ndim(g) == 0:
        return g                                    # the zero (see `_spread`)
    full = _full_adjoint(g, np.size(a), np.size(v), mode, False)
    return np.correlate(full, v if which == 0 else a, "valid")


def uncorrelate(g, a, v, mode="valid", which=0):
    """The adjoint of `a` (`which` 0) or `v` (1) in `np.correlate(a, v, mode)`, which is
    `np.convolve(a, v[::-1])` in full."""
    if np.ndim(g) == 0:
        return g                                    # the zero (see `_spread`)
    full = _full_adjoint(g, np.size(a), np.size(v), mode, True)
    if which == 0:
        return np.correlate(full, np.asarray(v)[::-1], "valid")
    return np.correlate(full, a, "valid")[::-1]


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
