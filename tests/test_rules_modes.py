"""The rules added for issue #20 in every mode, against central differences in float64.

Each case is a function with an array (or number) result and sample arguments. For each,
against central differences of the function itself (never s2sad against itself):

* vjp: the pullback of a fixed random cotangent `u` is the gradient of <u, f(args)>;
* jvp: the tangent along fixed random directions is the directional derivative of f;
* hessian: for the elementwise rules and the factorizations, `HESSIANS`, the Hessian of
  a scalar function of one argument, by differences of differences.

`grad` of the same rules is checked in tests/test_rules_numpy.py and
tests/test_rules_scalar.py, which also fail for a rule without a check.
"""
import math
import warnings

import numpy as np
import pytest

from numpy_cases import (Samples, check_hessian, check_jvp, check_vjp, params,
                         unsmooth_points)

S = Samples(20261127)
R = S.real
_WRNG = np.random.default_rng(77)
W4, W34 = _WRNG.standard_normal(4), _WRNG.standard_normal((3, 4))
NAN34 = np.where(_WRNG.uniform(size=(3, 4)) < 0.25, np.nan, 0.0)   # added: NaN at a quarter
NAN34[:, 0] = 0.0                                   # (no row or column of NaN only)
NAN34[0] = 0.0
ZEROS34 = S.uniform((3, 4), 0.5, 1.5) * (np.arange(12).reshape(3, 4) % 5 != 2)


def POS(shape):
    return S.uniform(shape, 0.3, 2.5)


def AWAY(shape):
    return S.away(shape)


def AROUND(shape):
    """Values on both sides of -0.5 and 0.5 (the bounds of the clip checks), away from them."""
    x = S.uniform(shape, 0.05, 0.45) * S.rng.choice([-1.0, 1.0], shape)
    return x + np.sign(x) * S.rng.choice([0.0, 0.5], shape)


def _mod_pair(sx, sy):
    y = AWAY(sy)
    k = S.rng.integers(-3, 3, sx) + S.uniform(sx, 0.2, 0.8)
    return y * k, y


# -- math -------------------------------------------------------------------------------
def m_gamma(x):
    return math.gamma(x)


def m_lgamma(x):
    return math.lgamma(x)


def m_erf(x):
    return math.erf(x) * math.erfc(0.5 * x)


def m_expm1_log1p(x):
    return math.expm1(x) + math.log1p(x * x)


def m_hypot_atan2(x, y):
    return math.hypot(x, y) * math.atan2(y, x)


def m_copysign_fmod(x, y):
    return math.copysign(x, y) + math.fmod(x, y)


def m_remainder(x, y):
    return math.remainder(x, y)


def m_dist(a, b, c, d):
    return math.dist((a, b), (c, d))


def m_dist3(a, b):
    return math.dist([a, b, a * b], [0.5, -0.2, 1.0])


def m_prod(a, b):
    return math.prod([a, b, a * b], start=1.5)


def m_prod_tuple(a, b):
    return math.prod((a, b, 2.0))


def m_fsum(a, b):
    return math.fsum([a, b * b, a * b])


# -- NumPy elementwise ------------------------------------------------------------------
def e_sinc(x):
    return np.sinc(x)


def e_degrees_radians(x):
    return np.degrees(x) * np.radians(x)


def e_nan_to_num(x):
    return np.nan_to_num(x * x, nan=1.0)


def e_float64(x):
    return np.float64(x) * x


def e_logaddexp2(x, y):
    return np.logaddexp2(x, y)


def e_remainder(x, y):
    return np.remainder(x, y) + np.mod(x, y)


def e_fmod(x, y):
    return np.fmod(x, y)


def e_item(x):
    return x.item() * x


def e_clip_min(x):
    return x.clip(min=-0.5)


def e_clip_min_max(x):
    return np.clip(x, min=-0.5, max=0.5)


# -- NumPy reductions and scans ---------------------------------------------------------
def r_nansum(x):
    return np.nansum(x + NAN34, axis=0)


def r_nansum_all(x):
    return np.nansum(x + NAN34)


def r_nanmean(x):
    return np.nanmean(x + NAN34, axis=1, keepdims=True)


def r_nanmax(x):
    return np.nanmax(x + NAN34, axis=0)


def r_nanmin(x):
    return np.nanmin(x + NAN34)


def r_ptp(x):
    return np.ptp(x, axis=1)


def r_ptp_all(x):
    return np.ptp(x)


def r_diff(x):
    return np.diff(x)


def r_diff_n2_axis0(x):
    return np.diff(x, n=2, axis=0)


def r_average(x):
    return np.average(x, axis=0)


def r_average_weights(x, w):
    return np.average(x, axis=1, weights=w)


def r_average_full_weights(x, w):
    return np.average(x, weights=w)


def r_average_keepdims(x, w):
    return np.average(x, axis=0, weights=w, keepdims=True)


def r_trapezoid(y):
    return np.trapezoid(y)


def r_trapezoid_x(y, x):
    return np.trapezoid(y, x)


def r_trapezoid_rows(y, x):
    return np.trapezoid(y, x, axis=1)


def r_trapezoid_dx(y, dx):
    return np.trapezoid(y, dx=dx, axis=0)


def r_cumprod(x):
    return np.cumprod(x, axis=1)


def r_cumprod_flat(x):
    return np.cumprod(x)


def r_polyval(p, x):
    return np.polyval(p, x)


def r_convolve(a, v):
    return np.convolve(a, v)


def r_convolve_same(a, v):
    return np.convolve(a, v, mode="same")


def r_convolve_valid(a, v):
    return np.convolve(a, v, "valid")


def r_correlate(a, v):
    return np.correlate(a, v)


def r_correlate_same(a, v):
    return np.correlate(a, v, mode="same")


def r_correlate_full(a, v):
    return np.correlate(a, v, mode="full")


# -- NumPy shapes and layout -----------------------------------------------------------
IDX33 = np.array([[0, 2, 2], [1, 0, 3], [3, 3, 0]])


def s_split(x):
    a, b = np.split(x, 2, axis=1)
    return np.concatenate([a * b, 2.0 * a], axis=0)


def s_array_split(x):
    p = np.array_split(x, 3)
    return np.concatenate([p[0], p[2] * p[2], p[1]])


def s_hsplit_vsplit(x):
    a, b = np.hsplit(x, [1])
    c, d, e = np.vsplit(x, 3)
    return np.concatenate([a.ravel(), b[0] * c[0, 1:], d[0], e[0] * 2.0])


def s_split_unordered(x):
    # (cuts out of order: NumPy's parts x[:4] and x[2:] overlap, the middle one is empty;
    # their adjoints were joined as if they tiled x)
    a, b, c = np.split(x, [4, 2])
    d, e, f = np.hsplit(x, [-2, 2])
    return np.concatenate([a * a, b, 3.0 * c, np.sin(d), e, f ** 3])


def s_multi_dot(a, b):
    return np.linalg.multi_dot([a, b, b.T, np.sin(a.T)])


def s_append(x, y):
    return np.append(x, y) * 2.0 + np.append(x, x[:1], axis=0).sum()


def s_flips(x):
    return np.flipud(x) + 2.0 * np.fliplr(x) + np.roll(x, (1, -2), axis=(0, 1))


def s_rot90(x):
    return np.rot90(x) * 1.5 + np.rot90(x, -1)


def s_rot90_3d(x):
    return np.rot90(x, 3, axes=(1, 2))


def s_pad(x, c):
    return np.pad(x, ((1, 2), (0, 1)), constant_values=c)


def s_pad_modes(x):
    return np.concatenate([np.pad(x, 2, "edge").ravel(), np.pad(x, 1, mode="reflect").ravel(),
                           np.pad(x, (1, 2), "wrap").ravel(),
                           np.pad(x, 1, mode="symmetric").ravel()])


def s_column_stack(a, b):
    return np.column_stack((a, b))


def s_atleast(x, v):
    return np.atleast_2d(v) * np.atleast_1d(x) + np.atleast_3d(v)[0, :, 0]


def s_diagonal(x):
    return np.diagonal(x, 1) + x.diagonal()[:3]


def s_diagonal_3d(x):
    return np.diagonal(x, offset=-1, axis1=0, axis2=2)


def s_diag_k(x, v):
    return np.diag(x, k=1) + np.diag(v, -1)[1:, :3].sum()


def s_tril_triu(x):
    return np.tril(x, -1) * 2.0 + np.triu(x, k=1)


def s_kron(a, b):
    return np.kron(a, b)


def s_cross(a, b):
    return np.cross(a, b)


def s_cross_axis(a, b):
    return np.cross(a, b, axis=0)


def s_take_along_axis(x):
    return np.take_along_axis(x, IDX33, axis=1) + np.take_along_axis(x, IDX33[:1], 1)


def s_take_along_axis_flat(x):
    return np.take_along_axis(x, IDX33[0], axis=None)


def s_moveaxis_broadcast(x):
    return np.moveaxis(x, 0, -1) + np.broadcast_to(x[0, :, 1], (3, 4, 3))


# -- factorizations and powers (of the vectors, what does not depend on their signs) ----
def l_eigh(a):
    w, v = np.linalg.eigh(a + np.swapaxes(a, -1, -2))
    return np.concatenate([w.ravel(), (v * v).ravel()])


def l_eigvalsh(a):
    return np.linalg.eigvalsh(a @ np.swapaxes(a, -1, -2), UPLO="U")


def l_svd(a):
    u, s, vt = np.linalg.svd(a, full_matrices=False)
    return np.concatenate([s.ravel(), (u * u).ravel(), (vt * vt).ravel(),
                           (u[..., :, :1] * vt[..., :1, :]).ravel()])


def l_svd_values(a):
    return np.linalg.svd(a, compute_uv=False)


def l_pinv(a):
    return np.linalg.pinv(a)


def l_lstsq(a, b):
    x, res, rank, s = np.linalg.lstsq(a, b)
    return np.concatenate([np.ravel(x), res, s])


def l_qr(a):
    q, r = np.linalg.qr(a)
    return np.concatenate([q.ravel(), r.ravel()])


def l_matrix_power(a):
    return np.linalg.matrix_power(a, 3) + np.linalg.matrix_power(a, -1) * 0.5


def l_slogdet(a):
    return np.linalg.slogdet(a)[1]


# -- order statistics, the other nan* functions, np.gradient, np.interp, and the functions
# of real arrays that are complex in general ----------------------------------------------
XP5 = np.array([-1.5, -0.5, 0.0, 0.7, 1.6])
X7 = np.array([-2.0, -1.2, -0.3, 0.2, 0.5, 1.1, 2.3])   # two outside [XP5[0], XP5[-1]]


def o_median(x):
    return np.median(x, axis=1)


def o_median_all(x):
    return np.median(x)


def o_quantile(x, q):
    return np.quantile(x, q, axis=0, keepdims=True)


def o_quantile_methods(x):
    return (np.quantile(x, [0.3, 0.6], axis=1, method="midpoint")
            + np.quantile(x, [0.2, 0.7], axis=1, method="nearest"))


def o_percentile(x, q):
    return np.percentile(x, q, axis=(0, 1))


def o_nanmedian(x):
    return np.nanmedian(x + NAN34, axis=0)


def o_nanquantile(x, q):
    return np.nanquantile(x + NAN34, q, axis=1)


def o_nanpercentile(x):
    return np.nanpercentile(x + NAN34, 30.0)


def o_partition(x):
    return np.partition(x, 2, axis=1) * W34


def o_partition_flat(x):
    return np.partition(x, (1, 7), axis=None)


def r_nanprod(x):
    return np.nanprod(x + NAN34, axis=1)


def r_nanvar(x):
    return np.nanvar(x + NAN34, axis=0, ddof=1)


def r_nanstd(x):
    return np.nanstd(x + NAN34, axis=1, keepdims=True)


def r_nancumsum(x):
    return np.nancumsum(x + NAN34, axis=0)


def r_nancumprod(x):
    return np.nancumprod(x + NAN34, axis=1)


def r_gradient(f):
    gy, gx = np.gradient(f)
    return gy * W34[:len(f)] + gx * gx


def r_gradient_coordinates(f):
    return np.gradient(f, XP5, axis=0, edge_order=2)


def r_gradient_axis(f):
    return np.gradient(f, 0.3, axis=0)


def r_interp(x, fp):
    return np.interp(x, XP5, fp)


def r_interp_left_right(x, fp, left, right):
    return np.interp(x, XP5, fp, left=left, right=right)


def s_dsplit(x):
    a, b = np.dsplit(x, 2)
    return a * b


def s_meshgrid(x, y):
    gx, gy = np.meshgrid(x, y)
    return gx * gy + gy


def s_meshgrid_ij(x, y, z):
    a, b, c = np.meshgrid(x, y, z, indexing="ij")
    return a * b - c


def e_conj_imag_angle(x):
    return np.conj(x) * x + np.imag(x) + np.angle(x) + x.conjugate()


# -- matrix norms, ufunc methods, the interleaved einsum, sorted() -----------------------
def l_matrix_norms(x):
    return np.stack([np.linalg.norm(x, "nuc"), np.linalg.norm(x, 2), np.linalg.norm(x, -2),
                     np.linalg.norm(x, 1), np.linalg.norm(x, -1), np.linalg.norm(x, np.inf),
                     np.linalg.norm(x, -np.inf)])


def l_matrix_norm_axes(x):
    return (np.linalg.norm(x, "nuc", axis=(2, 1)) + np.linalg.norm(x, 2, axis=(1, 2))
            + np.linalg.norm(x, -np.inf, axis=(-2, -1), keepdims=True).ravel())


def u_outer(x, y):
    return (np.add.outer(x, y) * np.multiply.outer(x, y) - np.subtract.outer(y, x).T
            + np.logaddexp.outer(x, y) + np.maximum.outer(x, y) * np.hypot.outer(x, y))


def u_reduce(a):
    return (np.logaddexp.reduce(a, axis=0) + np.add.reduce(a) * np.maximum.reduce(a)
            + np.multiply.reduce(a, axis=0, keepdims=True)[0] + np.logaddexp2.reduce(a))


def u_accumulate(a):
    return np.add.accumulate(a, axis=1) * np.multiply.accumulate(a)


# (distinct values, apart from the samples drawn in order above and below)
DISTINCT34 = (np.random.default_rng(40).permutation(12).reshape(3, 4) - 5.5) * 0.37


def u_accumulate_extrema(a):
    return (np.maximum.accumulate(a, axis=1) * np.minimum.accumulate(a)
            + np.fmax.accumulate(a) - np.fmin.accumulate(a, 1))


def e_interleaved(a, b):
    return np.einsum(a, [0, 1], b, [0, 2], [1, 2]) + np.einsum(a, [2, 1], b, [2, 0]).T


def e_optimize(a, b):
    return np.einsum("ij,ik->jk", a, b, optimize=True) + np.einsum(a, [0, 1], b, [0, 2],
                                                                   optimize="greedy")


def b_sorted(x):
    s = sorted([x[0], x[1] * x[2], np.sin(x[2]), x[3]])
    r = sorted((x[0], x[1], x[3] * x[3]), reverse=True)
    return np.array(s) * W4 + np.sum(np.array(r) * W4[:3])


_BINARY = {"mat-mat": ((3, 4), (3, 4)), "mat-row": ((3, 4), (4,)), "col-row": ((3, 1), (4,)),
           "mat-py": ((3, 4), None), "py-py": (None, None)}
_PAIRS = {"4-3": ((4,), (3,)), "3-5": ((3,), (5,)), "5-2": ((5,), (2,)), "2-6": ((2,), (6,))}

#: {id: (function, {label: args})}
CASES = {
    "gamma": (m_gamma, {"0.3": (0.3,), "1.7": (1.7,), "-1.5": (-1.5,), "12.5": (12.5,)}),
    "lgamma": (m_lgamma, {"0.3": (0.3,), "4.2": (4.2,), "-2.5": (-2.5,)}),
    "erf": (m_erf, {"a": (0.4,), "b": (-1.3,)}),
    "expm1_log1p": (m_expm1_log1p, {"a": (0.4,), "b": (-0.7,)}),
    "hypot_atan2": (m_hypot_atan2, {"a": (0.4, 1.3), "b": (-1.2, -0.5)}),
    "copysign_fmod": (m_copysign_fmod, {"a": (5.3, 2.0), "b": (-5.3, -1.5)}),
    "remainder": (m_remainder, {"a": (5.3, 2.0), "b": (-5.3, 2.0), "c": (7.1, -2.5)}),
    "dist": (m_dist, {"a": (0.3, 0.7, 1.0, -0.5), "b": (-1.5, 2.0, 0.5, 0.5)}),
    "dist3": (m_dist3, {"a": (0.3, 0.7)}),
    "prod": (m_prod, {"a": (0.3, 0.7), "b": (-1.5, 2.0)}),
    "prod_tuple": (m_prod_tuple, {"a": (0.3, 0.7)}),
    "fsum": (m_fsum, {"a": (0.3, 0.7)}),
    "sinc": (e_sinc, {"py": (R(None),), "0": (0.0,), "vec": (R((4,)),),
                      "small": (np.array([0.0, 0.01, -0.02, 0.5]),), "mat": (R((3, 4)),)}),
    "degrees_radians": (e_degrees_radians, {"py": (R(None),), "mat": (R((3, 4)),)}),
    "nan_to_num": (e_nan_to_num, {"py": (R(None),), "mat": (R((3, 4)),)}),
    "float64": (e_float64, {"py": (R(None),), "vec": (R((4,)),)}),
    "logaddexp2": (e_logaddexp2, {k: (R(a), R(b)) for k, (a, b) in _BINARY.items()}),
    "remainder_np": (e_remainder, {k: _mod_pair(a, b) for k, (a, b) in _BINARY.items()
                                   if a is not None and a[-1] != 1}),
    "fmod_np": (e_fmod, {k: _mod_pair(a, b) for k, (a, b) in _BINARY.items()
                         if a is not None and a[-1] != 1}),
    "item": (e_item, {"1": (R((1,)),), "1x1": (R((1, 1)),)}),
    "clip_min": (e_clip_min, {"mat": (AROUND((3, 4)),)}),
    "clip_min_max": (e_clip_min_max, {"mat": (AROUND((3, 4)),)}),
    "nansum": (r_nansum, {"mat": (R((3, 4)),)}),
    "nansum_all": (r_nansum_all, {"mat": (R((3, 4)),)}),
    "nanmean": (r_nanmean, {"mat": (R((3, 4)),)}),
    "nanmax": (r_nanmax, {"mat": (S.distinct((3, 4)),)}),
    "nanmin": (r_nanmin, {"mat": (S.distinct((3, 4)),)}),
    "ptp": (r_ptp, {"mat": (S.distinct((3, 4)),)}),
    "ptp_all": (r_ptp_all, {"vec": (S.distinct((5,)),), "mat": (S.distinct((3, 4)),)}),
    "diff": (r_diff, {"vec": (R((5,)),), "mat": (R((3, 4)),)}),
    "diff_n2_axis0": (r_diff_n2_axis0, {"mat": (R((4, 3)),)}),
    "average": (r_average, {"mat": (R((3, 4)),)}),
    "average_weights": (r_average_weights, {"mat": (R((3, 4)), POS((4,)))}),
    "average_full_weights": (r_average_full_weights, {"mat": (R((3, 4)), POS((3, 4)))}),
    "average_keepdims": (r_average_keepdims, {"mat": (R((3, 4)), POS((3,)))}),
    "trapezoid": (r_trapezoid, {"vec": (R((5,)),), "mat": (R((3, 4)),)}),
    "trapezoid_x": (r_trapezoid_x, {"vec": (R((5,)), np.sort(R((5,)))),
                                    "mat-vec": (R((3, 4)), np.sort(R((4,)))),
                                    "mat-mat": (R((3, 4)), R((3, 4)))}),
    "trapezoid_rows": (r_trapezoid_rows, {"mat": (R((3, 4)), R((4,)))}),
    "trapezoid_dx": (r_trapezoid_dx, {"py": (R((3, 4)), 0.7)}),
    "cumprod": (r_cumprod, {"mat": (R((3, 4)),), "zeros": (ZEROS34,)}),
    "cumprod_flat": (r_cumprod_flat, {"zeros": (ZEROS34,), "vec": (np.array([0.0, 1.3, 0.0]),)}),
    "polyval": (r_polyval, {"vec": (R((3,)), R((4,))), "py": (R((4,)), R(None)),
                            "mat": (R((2,)), R((3, 4)))}),
    "convolve": (r_convolve, {k: (R(a), R(b)) for k, (a, b) in _PAIRS.items()}),
    "convolve_same": (r_convolve_same, {k: (R(a), R(b)) for k, (a, b) in _PAIRS.items()}),
    "convolve_valid": (r_convolve_valid, {k: (R(a), R(b)) for k, (a, b) in _PAIRS.items()}),
    "correlate": (r_correlate, {k: (R(a), R(b)) for k, (a, b) in _PAIRS.items()}),
    "correlate_same": (r_correlate_same, {k: (R(a), R(b)) for k, (a, b) in _PAIRS.items()}),
    "correlate_full": (r_correlate_full, {k: (R(a), R(b)) for k, (a, b) in _PAIRS.items()}),
    "split": (s_split, {"mat": (R((3, 4)),)}),
    "array_split": (s_array_split, {"vec": (R((5,)),)}),
    "hsplit_vsplit": (s_hsplit_vsplit, {"mat": (R((3, 4)),)}),
    "split_unordered": (s_split_unordered, {"vec": (R((6,)),)}),
    "multi_dot": (s_multi_dot, {"mats": (R((2, 3)), R((3, 4)))}),
    "append": (s_append, {"mat-vec": (R((2, 3)), R((4,))), "mat-py": (R((2, 3)), R(None))}),
    "flips": (s_flips, {"mat": (R((3, 4)),)}),
    "rot90": (s_rot90, {"mat": (R((3, 4)),)}),
    "rot90_3d": (s_rot90_3d, {"3d": (R((2, 3, 4)),)}),
    "pad": (s_pad, {"py": (R((3, 4)), R(None)), "0d": (R((3, 4)), R(()))}),
    "pad_modes": (s_pad_modes, {"mat": (R((3, 4)),)}),
    "column_stack": (s_column_stack, {"vec-mat": (R((3,)), R((3, 2)))}),
    "atleast": (s_atleast, {"py-vec": (R(None), R((4,)))}),
    "diagonal": (s_diagonal, {"mat": (R((3, 4)),)}),
    "diagonal_3d": (s_diagonal_3d, {"3d": (R((3, 2, 4)),)}),
    "diag_k": (s_diag_k, {"mat-vec": (R((3, 4)), R((3,)))}),
    "tril_triu": (s_tril_triu, {"mat": (R((3, 4)),)}),
    "kron": (s_kron, {"vec-vec": (R((2,)), R((3,))), "mat-mat": (R((2, 3)), R((2, 2))),
                      "vec-mat": (R((2,)), R((3, 2))), "3d-mat": (R((2, 1, 2)), R((2, 3)))}),
    "cross": (s_cross, {"vec-vec": (R((3,)), R((3,))), "mat-vec": (R((4, 3)), R((3,)))}),
    "cross_axis": (s_cross_axis, {"mat-mat": (R((3, 4)), R((3, 4)))}),
    "take_along_axis": (s_take_along_axis, {"mat": (R((3, 4)),)}),
    "take_along_axis_flat": (s_take_along_axis_flat, {"mat": (R((3, 4)),)}),
    "moveaxis_broadcast": (s_moveaxis_broadcast, {"3d": (R((3, 3, 4)),)}),
    "eigh": (l_eigh, {"mat": (R((3, 3)),), "batch": (R((2, 3, 3)),)}),
    "eigvalsh": (l_eigvalsh, {"mat": (R((3, 3)),), "batch": (R((2, 3, 3)),)}),
    "svd": (l_svd, {"tall": (R((4, 3)),), "wide": (R((2, 4)),), "batch": (R((2, 3, 3)),)}),
    "svd_values": (l_svd_values, {"tall": (R((4, 3)),), "batch": (R((2, 2, 3)),)}),
    "pinv": (l_pinv, {"tall": (R((4, 3)),), "wide": (R((2, 4)),), "batch": (R((2, 3, 2)),)}),
    "lstsq": (l_lstsq, {"vec": (R((4, 3)), R((4,))), "mat": (R((4, 2)), R((4, 3))),
                        "square": (R((3, 3)) + 2 * np.eye(3), R((3,)))}),
    "qr": (l_qr, {"tall": (R((4, 3)),), "batch": (R((2, 3, 3)),)}),
    "matrix_power": (l_matrix_power, {"mat": (R((3, 3)) + 2 * np.eye(3),)}),
    "slogdet": (l_slogdet, {"batch": (R((2, 3, 3)) + 3 * np.eye(3),)}),
    "median": (o_median, {"odd": (S.distinct((4, 3)),), "even": (S.distinct((3, 4)),)}),
    "median_all": (o_median_all, {"even": (S.distinct((3, 4)),), "odd": (S.distinct((5,)),)}),
    "quantile": (o_quantile, {"py": (S.distinct((3, 4)), 0.3),
                              "vec": (S.distinct((5, 2)), np.array([0.1, 0.45, 0.9]))}),
    "quantile_methods": (o_quantile_methods, {"mat": (S.distinct((3, 4)),)}),
    "percentile": (o_percentile, {"py": (S.distinct((3, 4)), 37.0)}),
    "nanmedian": (o_nanmedian, {"mat": (S.distinct((3, 4)),)}),
    "nanquantile": (o_nanquantile, {"vec": (S.distinct((3, 4)), np.array([0.2, 0.6]))}),
    "nanpercentile": (o_nanpercentile, {"mat": (S.distinct((3, 4)),)}),
    "partition": (o_partition, {"mat": (S.distinct((3, 4)),)}),
    "partition_flat": (o_partition_flat, {"mat": (S.distinct((3, 4)),)}),
    "nanprod": (r_nanprod, {"mat": (R((3, 4)),)}),
    "nanvar": (r_nanvar, {"mat": (R((3, 4)),)}),
    "nanstd": (r_nanstd, {"mat": (R((3, 4)),)}),
    "nancumsum": (r_nancumsum, {"mat": (R((3, 4)),)}),
    "nancumprod": (r_nancumprod, {"mat": (R((3, 4)),)}),
    "gradient": (r_gradient, {"3x4": (R((3, 4)),), "2x4": (R((2, 4)),)}),
    "gradient_coordinates": (r_gradient_coordinates, {"vec": (R((5,)),), "mat": (R((5, 2)),)}),
    "gradient_axis": (r_gradient_axis, {"mat": (R((4, 3)),)}),
    "interp": (r_interp, {"vec": (X7, R((5,))), "py": (0.4, R((5,)))}),
    "interp_left_right": (r_interp_left_right, {"vec": (X7, R((5,)), R(None), R(None))}),
    "dsplit": (s_dsplit, {"3d": (R((2, 3, 4)),)}),
    "meshgrid": (s_meshgrid, {"vec": (R((4,)), R((3,)))}),
    "meshgrid_ij": (s_meshgrid_ij, {"vec": (R((2,)), R((3,)), R((4,)))}),
    "conj_imag_angle": (e_conj_imag_angle, {"py": (R(None),), "mat": (AWAY((3, 4)),)}),
    "matrix_norms": (l_matrix_norms, {"3x4": (AWAY((3, 4)),), "4x2": (AWAY((4, 2)),)}),
    "matrix_norm_axes": (l_matrix_norm_axes, {"3d": (AWAY((2, 3, 4)),)}),
    "ufunc_outer": (u_outer, {"vec": S.distinct((3,), (4,)), "mat-vec": S.distinct((2, 2),
                                                                                      (3,))}),
    "ufunc_reduce": (u_reduce, {"mat": (S.distinct((3, 4)),)}),
    "ufunc_accumulate": (u_accumulate, {"mat": (R((3, 4)),)}),
    "ufunc_accumulate_extrema": (u_accumulate_extrema, {"mat": (DISTINCT34,)}),
    "einsum_interleaved": (e_interleaved, {"mat": (R((3, 4)), R((3, 2)))}),
    "einsum_optimize": (e_optimize, {"mat": (R((3, 4)), R((3, 2)))}),
    "sorted": (b_sorted, {"vec": (S.distinct((4,)),)}),
}


# -- second derivatives of the elementwise rules ----------------------------------------
def h_gamma(x):
    return math.gamma(x)


def h_lgamma(x):
    return math.lgamma(x)


def h_erf(x):
    return math.erf(x) + math.erfc(x * x)


def h_expm1_log1p(x):
    return math.expm1(x) * math.log1p(x)


def h_two(v):
    return (math.hypot(v[0], v[1]) + math.atan2(v[1], v[0]) + math.fmod(v[2], v[3])
            + math.remainder(v[2], v[1]) + math.copysign(v[0], v[3]))


def h_sequences(v):
    return (math.dist((v[0], v[1]), (v[2], v[3])) * math.prod((v[0], v[1], v[2]))
            + math.fsum([v[0] * v[3], v[1]]))


def h_sinc(x):
    return np.sum(W4 * np.sinc(x))


def h_degrees_radians(x):
    return np.sum(W4 * np.degrees(x) * np.radians(x * x))


def h_nan_to_num(x):
    return np.sum(W4 * np.nan_to_num(x * x * x))


def h_logaddexp2(x):
    return np.sum(W4 * np.logaddexp2(x, x[::-1] * 2.0))


def h_mod(x):
    return np.sum(W4 * (np.remainder(x * x, 0.7) + np.fmod(x, x[::-1] + 3.0)))


def h_linalg(x):
    a = x.reshape(4, 3)
    w, v = np.linalg.eigh(a.T @ a)
    u, s, vt = np.linalg.svd(a, full_matrices=False)
    q, r = np.linalg.qr(a)
    return (np.sum(w * W4[:3]) + np.sum(v * v * W34[:, :3]) + np.sum(s * W4[1:])
            + np.sum(u * u * W34.T) + np.sum(q * W34.T) + np.sum(r * W34[:, :3])
            + np.sum(np.linalg.pinv(a) * W34) + np.sum(np.linalg.svd(a, compute_uv=False))
            + np.sum(np.linalg.eigvalsh(a[:3] + a[:3].T) * W4[:3]))


def h_cumprod(x):
    return np.sum(np.cumprod(x.reshape(2, 3), axis=1) * W34[:2, :3]) + np.sum(np.cumprod(x) * W4[0])


def h_matrix_power(x):
    a = x.reshape(3, 3)
    return np.sum(np.linalg.matrix_power(a, 3) * W34[:, :3]) + np.sum(
        np.linalg.matrix_power(a, -2) * W34[:, 1:])


def h_conj(x):
    return np.sum(W4 * np.conj(x) * np.sin(x.conj()) + np.imag(x) * x + np.angle(x))


def h_nan(x):
    y = x.reshape(3, 4) + NAN34
    return (np.sum(np.nanvar(y, axis=1) * W4[:3]) + np.sum(np.nanstd(y, axis=0) * W4)
            + np.sum(np.nanprod(y, axis=0) * W4) + np.sum(np.nancumprod(y, axis=1) * W34)
            + np.sum(np.nancumsum(y * y, axis=1) * W34))


def h_order(x):
    y = x.reshape(3, 4)
    return (np.sum(np.median(y, axis=1) * y[:, 0]) + np.sum(np.quantile(y, 0.3, axis=0) ** 2)
            + np.nanpercentile(y + NAN34, 70.0) * np.sum(y) + np.sum(np.partition(y, 1) ** 3))


def h_gradient_interp(x):
    y = x.reshape(3, 4)
    return (np.sum(np.gradient(y)[1] ** 2 * W34) + np.sum(np.gradient(y, 1.5, axis=0) ** 2)
            + np.sum(np.interp(X7, XP5, x[:5]) ** 2)
            + np.sum(np.interp(x, XP5, XP5 ** 2) * x))


def h_interp_x_and_fp(x):
    return np.sum(np.interp(x[:3], XP5, x * x - x[::-1]) * W4[:3])


def h_matrix_norms(x):
    m = x.reshape(3, 4)
    return (np.linalg.norm(m, 1) * np.sum(x * x) + np.linalg.norm(m, -np.inf) * x[0] ** 2
            + np.linalg.norm(x, 3) ** 2 + np.linalg.norm(x, -1) + np.linalg.norm(x, 1) * x[1])


def h_ufunc_methods(x):
    m = x.reshape(3, 4)
    return (np.sum(np.sin(np.add.outer(x[:3], x[3:7])) * m)
            + np.sum(np.logaddexp.reduce(m, axis=0) ** 2)
            + np.sum(np.multiply.outer(x[:3], x[3:5]) ** 2)
            + np.sum(np.multiply.accumulate(m, axis=1) * W34)
            + np.sum(np.maximum.outer(x[:4], W4) ** 2) + np.sum(np.add.accumulate(m) ** 2)
            + np.sum(np.maximum.accumulate(m, axis=1) ** 3) + np.sum(np.minimum.accumulate(m) ** 3))


def h_einsum_sorted(x):
    m = x.reshape(3, 4)
    s = sorted([x[0] * x[1], x[2], np.sin(x[3])], reverse=True)
    return (np.sum(np.einsum(m, [0, 1], m, [0, 2], [1, 2]) ** 2)
            + np.einsum(m, [0, 1], W34, [0, 1]) ** 2
            + np.sum(np.einsum("ij,ik->jk", m, m, optimize=True)) ** 2
            + s[0] * s[1] + s[2] ** 2)


HESSIANS = {
    "gamma": (h_gamma, [0.3, 1.7, -1.5]), "lgamma": (h_lgamma, [0.3, 4.2, -2.5]),
    "erf": (h_erf, [0.4, -1.1]), "expm1_log1p": (h_expm1_log1p, [0.4, 1.3]),
    "two": (h_two, [np.array([0.4, 1.3, 5.3, 2.0])]),
    "sequences": (h_sequences, [np.array([0.3, 1.2, -0.4, 0.8])]),
    "sinc": (h_sinc, [R((4,)), np.array([0.0, 0.03, -0.05, 1.2])]),
    "degrees_radians": (h_degrees_radians, [R((4,))]),
    "nan_to_num": (h_nan_to_num, [R((4,))]),
    "logaddexp2": (h_logaddexp2, [R((4,))]),
    "mod": (h_mod, [np.array([0.5, 1.3, -0.8, 2.2])]),
    "linalg": (h_linalg, [R((12,))]),
    "cumprod": (h_cumprod, [R((6,)), np.array([0.5, 0.0, 1.2, -0.7, 0.0, 0.0])]),
    "matrix_power": (h_matrix_power, [R((9,)) + 2 * np.eye(3).ravel()]),
    "conj": (h_conj, [AWAY((4,))]),
    "nan": (h_nan, [R((12,))]),
    "order": (h_order, [S.distinct((12,))]),
    "gradient_interp": (h_gradient_interp, [np.array([-1.3, -0.7, -0.2, 0.4, 0.9, 1.2, 0.1, -0.4,
                                                      2.1, 1.9, -1.8, 0.6])]),
    "interp_x_and_fp": (h_interp_x_and_fp, [np.array([-1.3, -0.2, 0.4, 1.1, 0.9])]),
    "matrix_norms": (h_matrix_norms, [AWAY((12,))]),
    "ufunc_methods": (h_ufunc_methods, [S.distinct((12,))]),
    "einsum_sorted": (h_einsum_sorted, [S.distinct((12,))]),
}


# -- element writes where an index repeats a position (only the last write stays), and the
# rules that read part of an argument: np.kron of 0-d values, and one triangle of the
# matrix for eigh, eigvalsh, cholesky (NumPy's and SciPy's, and cho_factor), and svd and
# pinv with hermitian=True (their own samples, so that the cases above keep theirs) ------
PARTS = Samples(20250434)
IDX_R, IDX_C = np.array([0, 2, 2, 1]), np.array([1, 3, 3, 0])    # (2, 3) twice
IDX22 = np.array([[0, 2], [0, 0]])


def w_repeated(x, v):
    y = np.sin(x)
    y[[0, 0, 2]] = v * v
    y[[1, -2, 1], 1:3] += x[0, :2]
    y[IDX_R, IDX_C] = y[IDX_C - 1, IDX_R] * 2.0
    return y


def w_repeated_2d_index(x, v):
    y = x * x
    y[IDX22] = v
    y[np.minimum(np.arange(4), 2)] = y[[2, 1, 0, 0]] * x[0]      # rows found at run time
    return y


def w_repeated_in_loop(x):
    y = x * 1.0
    for i in range(3):
        y[[0, 0, 2]] = np.sin(y[[1, 2, 1]]) * x[i]
    return y


def t_kron_0d(a, b):
    return np.kron(a, b) * np.kron(b, a)


def t_one_triangle(a):
    w, v = np.linalg.eigh(a)
    wu, vu = np.linalg.eigh(a, UPLO="U")
    return np.concatenate([w, (v * v).ravel(), wu, (vu * vu).ravel(), np.linalg.eigvalsh(a),
                           np.linalg.eigvalsh(a, "U")])


def t_hermitian(a):
    u, s, vt = np.linalg.svd(a, hermitian=True)
    return np.concatenate([s, (u * u).ravel(), np.linalg.pinv(a, hermitian=True).ravel(),
                           np.linalg.svd(a, compute_uv=False, hermitian=True)])


def t_cholesky(a):
    return np.linalg.cholesky(a)


def _spd(shape):
    """Positive definite matrices plus something in their upper triangle."""
    a = PARTS.real(shape)
    return a @ np.swapaxes(a, -1, -2) + 3 * np.eye(shape[-1]) + np.triu(PARTS.real(shape), 1)


CASES.update({
    "write_repeated": (w_repeated, {"rows": (PARTS.real((3, 4)), PARTS.real((3, 4))),
                                    "row": (PARTS.real((3, 4)), PARTS.real((4,))),
                                    "py": (PARTS.real((3, 4)), PARTS.real(None))}),
    "write_repeated_2d_index": (w_repeated_2d_index, {"3d": (PARTS.real((3, 4)),
                                                             PARTS.real((2, 2, 4)))}),
    "write_repeated_in_loop": (w_repeated_in_loop, {"mat": (PARTS.real((3, 4)),)}),
    "kron_0d": (t_kron_0d, {"0d-0d": (PARTS.real(()), PARTS.real(())),
                            "0d-mat": (PARTS.real(()), PARTS.real((2, 3)))}),
    "one_triangle": (t_one_triangle, {"mat": (PARTS.real((3, 3)),)}),
    "hermitian": (t_hermitian, {"mat": (PARTS.real((3, 3)) + np.diag([2.5, -1.0, 4.0]),)}),
    "cholesky_one_triangle": (t_cholesky, {"mat": (_spd((3, 3)),), "batch": (_spd((2, 3, 3)),)}),
})


def h_repeated_writes(x):
    m = x.reshape(3, 4)
    y = m * m
    y[[0, 0, 2]] = np.sin(m[[1, 2, 1]])
    y[[1, 1], [0, 0]] += m[0, 0] * m[2, 3]
    for i in range(2):
        y[[0, 0]] = y[[2, 1]] * m[i]
    return np.sum(y * y * W34)


def h_one_triangle(x):
    a = x.reshape(3, 3)
    w, v = np.linalg.eigh(a)
    u, s, vt = np.linalg.svd(a, hermitian=True)
    b = a @ a.T + 3 * np.eye(3) + np.triu(a, 1)
    return (np.sum(w * W4[:3]) + np.sum(v * v * W34[:, :3]) + np.sum(np.linalg.eigvalsh(a, "U")
                                                                     ** 2)
            + np.sum(s * W4[1:]) + np.sum(np.linalg.cholesky(b) * W34[:, 1:])
            + np.sum(np.kron(x[0], x[1]) * np.kron(x[2], x[1:3])))


HESSIANS.update({
    "repeated_writes": (h_repeated_writes, [PARTS.real((12,))]),
    "one_triangle": (h_one_triangle, [PARTS.real((9,))]),
})


# -- np.linspace with dtype, np.row_stack (issue #40) --------------------------------------
def c_linspace_dtype(a, b):
    # (integer samples are floored: no derivative)
    return np.linspace(a, b, 5, dtype=np.float64) * 2.0 + np.linspace(
        a, b, 5, endpoint=False, dtype=int) * a


def c_linspace_retstep(a, b):
    # (the step is a float also for an integer dtype, whose samples have no derivative)
    xs, h = np.linspace(a, b, 5, retstep=True)
    ys, k = np.linspace(a * b, b, 4, endpoint=False, retstep=True, dtype=int)
    zs = np.linspace(a, b * b, 3, retstep=False)
    return xs * h + k * np.sin(xs[:, None] if np.ndim(a) else xs) + zs[1] + ys[0] * a


def c_row_stack(a, b):
    with warnings.catch_warnings():     # (deprecated by NumPy 2.0)
        warnings.simplefilter("ignore", DeprecationWarning)
        return np.row_stack([a, b * b])


def h_linspace_row_stack(x):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        m = np.row_stack((x[:2], x[2:] * x[:2]))
    xs, h = np.linspace(x[0] * x[3], x[1:3], 4, axis=1, retstep=True)
    return (np.sum(np.linspace(x[0], x[1:3], 4, axis=1, dtype=np.float64) ** 3) + np.sum(m ** 3)
            + np.sum(np.sin(xs) * h[:, None]) + np.sum(h ** 3))


CASES.update({
    "linspace_dtype": (c_linspace_dtype, {"py": (S.uniform(None, 1.1, 1.4),
                                                 S.uniform(None, 2.3, 2.6)),
                                          "vec": (S.uniform((3,), 1.1, 1.4),
                                                  S.uniform((3,), 2.3, 2.6))}),
    "linspace_retstep": (c_linspace_retstep, {"py": (S.uniform(None, 1.1, 1.4),
                                                     S.uniform(None, 2.3, 2.6)),
                                              "vec": (S.uniform((3,), 1.1, 1.4),
                                                      S.uniform((3,), 2.3, 2.6))}),
})
if hasattr(np, "row_stack"):       # (removed by NumPy 2.5)
    CASES["row_stack"] = (c_row_stack, {"vec": (R((4,)), R((4,))), "mat": (R((2, 4)), R((3, 4)))})
    HESSIANS.update({"linspace_row_stack": (h_linspace_row_stack, [R((4,))])})


def h_split_unordered(x):
    a, b, c = np.split(x, [4, 2])
    return np.sum(np.sin(a) * c) + np.sum(b) + np.sum(np.array_split(x * x, [-1, 1])[2] ** 2)


HESSIANS.update({"split_unordered": (h_split_unordered, [R((6,))])})


def h_multi_dot(x):
    a = x.reshape(2, 3)
    return np.sum(np.linalg.multi_dot([a, a.T, a]) ** 2)


HESSIANS.update({"multi_dot": (h_multi_dot, [R((6,))])})


# -- the oracle -------------------------------------------------------------------------
@pytest.mark.parametrize("fn, args", params(CASES))
def test_vjp_matches_finite_differences(fn, args):
    check_vjp(fn, args)


@pytest.mark.parametrize("fn, args", params(CASES))
def test_jvp_matches_finite_differences(fn, args):
    check_jvp(fn, args)


def test_sample_points_are_smooth():
    """Without s2sad: two difference schemes agree at every sample point (no kink, tie or
    jump of a remainder nearby)."""
    bad = unsmooth_points([(p.id, *p.values) for p in params(CASES)])
    assert not bad, ", ".join(bad)


@pytest.mark.parametrize("fn, x", params({k: (f, dict(enumerate(p)))
                                           for k, (f, p) in HESSIANS.items()}))
def test_hessian_matches_finite_differences(fn, x):
    check_hessian(fn, x)
