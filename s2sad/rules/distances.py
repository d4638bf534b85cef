"""Rules for `scipy.spatial.distance.cdist` and `pdist`, and the helpers they call; loaded
with rules/scipy.py.

Each distance is a function of one pair of rows, `u` of the first array and `v` of the
second (`cdist`: every row of `XA` with every row of `XB`; `pdist`: the pairs `i < j` of
rows of `X`, in SciPy's order). `distance_slope` gives its derivative in `u` or `v`, one
row per pair, for the metrics euclidean, sqeuclidean, cityblock, chebyshev, minkowski (with
`p`) and cosine, the metric read when the derivative runs (another raises a
`MissingRuleError` naming it). Where a distance has no derivative, the slope is a
subgradient: at `u == v`, 0 for euclidean and minkowski (JAX and autograd give NaN for
`sqrt(sum(d ** 2))` there, `0 * inf`; 0 lies in the norm's subdifferential, the unit
ball, and is the derivative of `cdist(X, X)`'s diagonal, constantly 0); `sign(d)`, 0 at
0, for cityblock (as `np.abs`'s rule); chebyshev's shared equally among the coordinates
that attain the maximum (as `np.max`'s). `distance_curvature`, the derivative of the slope
(the Hessian of the distance along a direction), gives second derivatives; it is a
number's derivative only where the distance is smooth (minkowski with `p < 2` has an
infinite one where a coordinate of `u - v` is 0, and gives inf or NaN there).
"""
import numpy as np
from scipy.spatial import distance

from ..errors import MissingRuleError
from . import numpy as numpy_rules
from .registry import define, helper, helper_adjoint, helpers

ns = dict(numpy_rules.ns)

METRICS = ("euclidean", "sqeuclidean", "cityblock", "chebyshev", "minkowski", "cosine")


def _metric(metric, p):
    """The metric the formulas below compute for SciPy's `metric` and `p`: minkowski with
    `p` 1, 2 or inf is cityblock, euclidean or chebyshev."""
    if not isinstance(metric, str) or metric not in METRICS:
        raise MissingRuleError(
            f"s2sad has no derivative of scipy.spatial.distance.cdist or pdist with "
            f"metric={metric!r}: the metrics with one are {', '.join(METRICS)}")
    if metric == "minkowski":
        p = 2.0 if p is None else float(p)
        return {1.0: "cityblock", 2.0: "euclidean", np.inf: "chebyshev"}.get(p, metric), p
    return metric, p


def _positive(r):
    """`r` where positive, 1 elsewhere (a divisor that divides nothing where `r` is 0)."""
    return np.where(r > 0, r, 1.0)


@helper(tangent={"u": "_s2s_distance_curvature(u, v, t, 0.0, metric, p, which)",
                 "v": "_s2s_distance_curvature(u, v, 0.0, t, metric, p, which)"},
        adjoint={x: (f"_s2s_unbroadcast(_s2s_distance_curvature(u, v, ans_bar if which == 0 "
                     f"else 0.0, ans_bar if which == 1 else 0.0, metric, p, {i}), {x})")
                 for i, x in enumerate("uv")})
def distance_slope(u, v, metric="euclidean", p=None, which=0):
    """The derivative of the distances between the rows `u` and `v` (broadcast against
    each other along all but the last axis) in `u` (`which` 0) or `v` (1): one row per
    pair (see the module docstring for the subgradients)."""
    metric, p = _metric(metric, p)
    u, v = np.asarray(u, float), np.asarray(v, float)
    if metric == "cosine":
        return _cosine_slope(u, v)[which]
    d = u - v
    r = _length(d, metric, p)
    if metric == "euclidean":
        s = np.where(r > 0, d / _positive(r), 0.0)
    elif metric == "sqeuclidean":
        s = 2 * d
    elif metric == "cityblock":
        s = np.sign(d)
    elif metric == "chebyshev":
        top = np.abs(d) == r
        s = np.sign(d) * top / np.sum(top, -1, keepdims=True)
    else:
        s = np.where(r > 0, np.sign(d) * (np.abs(d) / _positive(r)) ** (p - 1), 0.0)
    return s if which == 0 else -s


def _cosine_slope(u, v):
    """The derivatives of `1 - cos(u, v)` in `u` and in `v`, and what their tangents
    read: `u` and `v` over their norms, the cosine and the norms."""
    a = np.linalg.norm(u, axis=-1, keepdims=True)
    b = np.linalg.norm(v, axis=-1, keepdims=True)
    uh, vh = u / a, v / b
    c = np.sum(uh * vh, -1, keepdims=True)
    return (c * uh - vh) / a, (c * vh - uh) / b, (uh, vh, c, a, b)


def _length(d, metric, p):
    """The distance of each pair whose difference is a row of `d` (a last axis of one)."""
    if metric == "euclidean":
        return np.linalg.norm(d, axis=-1, keepdims=True)
    if metric == "chebyshev":
        return np.max(np.abs(d), -1, keepdims=True)
    if metric == "minkowski":
        return np.sum(np.abs(d) ** p, -1, keepdims=True) ** (1 / p)
    return None


def _dot(x, y):
    return np.sum(x * y, -1, keepdims=True)


@helper(tangent={"tu": "_s2s_distance_curvature(u, v, t, 0.0, metric, p, which)",
                 "tv": "_s2s_distance_curvature(u, v, 0.0, t, metric, p, which)",
                 "u": "_s2s_no_second_derivative('scipy.spatial.distance.cdist and pdist')",
                 "v": "_s2s_no_second_derivative('scipy.spatial.distance.cdist and pdist')"})
def distance_curvature(u, v, tu, tv, metric="euclidean", p=None, which=0):
    """The tangent of `distance_slope(u, v, metric, p, which)` along the tangents `tu`
    of `u` and `tv` of `v` (the Hessian of the distance along them; see the module
    docstring where it does not exist)."""
    metric, p = _metric(metric, p)
    u, v = np.asarray(u, float), np.asarray(v, float)
    tu, tv = np.asarray(tu, float), np.asarray(tv, float)
    if metric == "cosine":
        _, _, (uh, vh, c, a, b) = _cosine_slope(u, v)
        duh = (tu - uh * _dot(uh, tu)) / a
        dvh = (tv - vh * _dot(vh, tv)) / b
        dc = _dot(duh, vh) + _dot(uh, dvh)
        if which == 0:
            return (dc * uh + c * duh - dvh) / a - (c * uh - vh) * _dot(uh, tu) / (a * a)
        return (dc * vh + c * dvh - duh) / b - (c * vh - uh) * _dot(vh, tv) / (b * b)
    d, td = u - v, tu - tv
    d, td = np.broadcast_arrays(d, td)
    if metric in ("cityblock", "chebyshev"):
        out = np.zeros(d.shape)
    elif metric == "sqeuclidean":
        out = 2.0 * td
    else:
        r = _length(d, metric, p)
        s = distance_slope(u, v, metric, p)
        q = 2.0 if metric == "euclidean" else p
        with np.errstate(divide="ignore", invalid="ignore"):
            bend = 1.0 if q == 2 else (np.abs(d) / _positive(r)) ** (q - 2)
            out = np.where(r > 0, (q - 1) * (bend * td - s * _dot(s, td)) / _positive(r), 0.0)
    return out if which == 0 else -out


@helper(tangent=())
def pair_rows(x, which):
    """The rows of `x` whose distances `pdist(x)` holds, in its order: the first (`which`
    0) or the second (1) of each pair `i < j`."""
    return np.triu_indices(np.shape(x)[0], 1)[which]


helper_adjoint(pair_rows, zero="x")     # (indices: no derivative)

# (cdist: the pairs are XA[i] and XB[j]; pdist: x[i] and x[j] for i < j)
_CD = "_s2s_distance_slope(XA[:, None, :], XB[None, :, :], metric, p, {})"
define(distance.cdist, "XA, XB, metric='euclidean', *, p=None", namespace=ns,
       XA=f"np.sum(np.expand_dims(g, -1) * {_CD.format(0)}, 1)",
       XB=f"np.sum(np.expand_dims(g, -1) * {_CD.format(1)}, 0)",
       tangent={"XA": f"np.sum({_CD.format(0)} * t[:, None, :], -1)",
                "XB": f"np.sum({_CD.format(1)} * t[None, :, :], -1)"}, returns="array")
_I, _J = "_s2s_pair_rows(X, 0)", "_s2s_pair_rows(X, 1)"
_PD = f"_s2s_distance_slope(X[{_I}], X[{_J}], metric, p, {{}})"
define(distance.pdist, "X, metric='euclidean', *, p=None", namespace=ns,
       X=f"_s2s_unindex(np.expand_dims(g, -1) * {_PD.format(0)}, X, {_I}) + "
         f"_s2s_unindex(np.expand_dims(g, -1) * {_PD.format(1)}, X, {_J})",
       tangent={"X": f"np.sum({_PD.format(0)} * t[{_I}] + {_PD.format(1)} * t[{_J}], -1)"},
       returns="array")


helpers(__name__)
