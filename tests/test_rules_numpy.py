"""Numerical check of every NumPy rule in the registry against finite differences.

For each differentiable NumPy primitive (``s2sad/rules/numpy.py``), and for
``operator.matmul`` / ``operator.getitem`` on arrays and the array method and
attribute spellings (``registry.METHODS`` / ``registry.ATTRIBUTES``), there
are tiny module-level functions here that apply it and reduce the result to a
scalar with a fixed random weight (``W34`` is a module-level (3, 4) array,
``W_`` a Python float, ...).  ``s2sad.grad(fn, wrt=<every argument>)`` is
compared, for every element of every input, with central finite differences
in float64 (``numpy_cases.fd_array_grad`` on top of ``oracle.fd_partial``);
s2sad is never compared with itself.

* ``CASES`` lists (function, claimed primitives/spellings, sample arguments by
  label).  ``COVERS`` (primitive or spelling -> check ids) is built from the
  claims, ``test_claims_appear_in_source`` verifies each claim against the
  function's AST, and ``test_every_numpy_rule_is_covered`` fails listing any
  differentiable NumPy primitive, method or attribute without a check.
* ``F32_CASES``: float32 inputs must give float32 gradients (looser values).
* ``test_inputs_unchanged``: no gradient call modifies its input arrays.
* ``test_sample_points_are_smooth``: without s2sad, two finite-difference
  schemes agree at every sample point (no kinks, ties or domain edges nearby).
* ``test_gradients_are_writable`` / ``test_gradients_do_not_share_memory``:
  returned gradient arrays can be updated in place without side effects.

Checks that fail because of s2sad are marked ``xfail(strict=True)`` with the
error, so the bug stays visible and the mark must go once it is fixed.
"""

import ast
import inspect
import operator
import textwrap
import warnings
from collections import namedtuple

import numpy as np
import pytest

from numpy_cases import (Samples, check_hessian, compare, fd_array_grad, fd_array_grad_central,
                         same_value)

import s2sad
from s2sad.rules import registry

RTOL = 1e-6
ATOL = 1e-8
F32_RTOL = 2e-3
F32_ATOL = 1e-4

_WRNG = np.random.default_rng(1234)


def _w(*shape):
    """A fixed random weight of the given shape (a Python float for no shape)."""
    if not shape:
        return float(_WRNG.uniform(0.5, 1.5))
    return _WRNG.standard_normal(shape)


# Weights, named by shape: W34 has shape (3, 4), W_ is a Python float.
W_ = _w()
W2, W3, W4, W5, W7, W8, W12, W24_ = (_w(n) for n in (2, 3, 4, 5, 7, 8, 12, 24))
W11, W14, W31, W22, W23, W24, W25, W26, W28 = (
    _w(*s) for s in ((1, 1), (1, 4), (3, 1), (2, 2), (2, 3), (2, 4), (2, 5), (2, 6), (2, 8)))
W32, W33, W34, W35, W36, W38, W43, W44, W45 = (
    _w(*s) for s in ((3, 2), (3, 3), (3, 4), (3, 5), (3, 6), (3, 8), (4, 3), (4, 4), (4, 5)))
W46, W54, W56, W64, W74 = (_w(*s) for s in ((4, 6), (5, 4), (5, 6), (6, 4), (7, 4)))
W134, W214, W232, W233, W234, W235 = (
    _w(*s) for s in ((1, 3, 4), (2, 1, 4), (2, 3, 2), (2, 3, 3), (2, 3, 4), (2, 3, 5)))
W243, W314, W324, W325, W342, W423, W432 = (
    _w(*s) for s in ((2, 4, 3), (3, 1, 4), (3, 2, 4), (3, 2, 5), (3, 4, 2), (4, 2, 3), (4, 3, 2)))
W1232, W1314, W2352 = _w(1, 2, 3, 2), _w(1, 3, 1, 4), _w(2, 3, 5, 2)
# float32 weights for the float32 checks
W_f = np.float32(W_)
(W2f, W3f, W4f, W7f, W8f, W12f, W24f, W26f, W33f, W34f, W35f, W43f, W44f) = (
    a.astype(np.float32) for a in (W2, W3, W4, W7, W8, W12, W24, W26, W33, W34, W35, W43, W44))

# Constant (non-differentiated) indices and masks.
IDX = np.array([0, 2, 0, 1])               # repeated index 0
IDX_R = np.array([0, 2, 2, 1])
IDX_C = np.array([1, 3, 3, 0])             # (2, 3) appears twice in zip(IDX_R, IDX_C)
MASK34 = _WRNG.uniform(size=(3, 4)) > 0.4
REPS = np.array([1, 2, 0])
IDX33 = np.array([[0, 2, 2], [1, 0, 3], [3, 3, 0]])      # along axis 1 of a (3, 4) array
LO34 = _WRNG.uniform(-0.9, -0.3, (3, 4))  # lower bounds that broadcast x (4,) up to (3, 4)
NAN34 = np.where(_WRNG.uniform(size=(3, 4)) < 0.3, np.nan, 0.0)    # NaN added at some entries
NAN34[0] = NAN34[:, 0] = 0.0                # (no row or column of NaN only)
INF34 = np.where(_WRNG.uniform(size=(3, 4)) < 0.3, np.inf, 0.0) * np.sign(_WRNG.uniform(
    -1, 1, (3, 4)))                         # -inf or inf added at some entries


# -- elementwise, one argument ----------------------------------------------------------
def u_negative(x):
    return np.sum(np.negative(x) * W34)


def u_positive(x):
    return np.sum(np.positive(x) * W34)


def u_abs(x):
    return np.sum(np.abs(x) * W34)


def u_sqrt(x):
    return np.sum(np.sqrt(x) * W34)


def u_cbrt(x):
    return np.sum(np.cbrt(x) * W34)


def u_square(x):
    return np.sum(np.square(x) * W34)


def u_reciprocal(x):
    return np.sum(np.reciprocal(x) * W34)


def u_exp(x):
    return np.sum(np.exp(x) * W34)


def u_expm1(x):
    return np.sum(np.expm1(x) * W34)


def u_exp2(x):
    return np.sum(np.exp2(x) * W34)


def u_log(x):
    return np.sum(np.log(x) * W34)


def u_log1p(x):
    return np.sum(np.log1p(x) * W34)


def u_log2(x):
    return np.sum(np.log2(x) * W34)


def u_log10(x):
    return np.sum(np.log10(x) * W34)


def u_sin(x):
    return np.sum(np.sin(x) * W34)


def u_cos(x):
    return np.sum(np.cos(x) * W34)


def u_tan(x):
    return np.sum(np.tan(x) * W34)


def u_arcsin(x):
    return np.sum(np.arcsin(x) * W34)


def u_arccos(x):
    return np.sum(np.arccos(x) * W34)


def u_arctan(x):
    return np.sum(np.arctan(x) * W34)


def u_sinh(x):
    return np.sum(np.sinh(x) * W34)


def u_cosh(x):
    return np.sum(np.cosh(x) * W34)


def u_tanh(x):
    return np.sum(np.tanh(x) * W34)


def u_arcsinh(x):
    return np.sum(np.arcsinh(x) * W34)


def u_arccosh(x):
    return np.sum(np.arccosh(x) * W34)


def u_arctanh(x):
    return np.sum(np.arctanh(x) * W34)


def u_deg2rad(x):
    return np.sum(np.deg2rad(x) * W34)


def u_rad2deg(x):
    return np.sum(np.rad2deg(x) * W34)


# -- elementwise, two arguments (broadcasting) ------------------------------------------
def b_add(x, y):
    return np.sum(np.add(x, y) * W34)


def b_subtract(x, y):
    return np.sum(np.subtract(x, y) * W34)


def b_multiply(x, y):
    return np.sum(np.multiply(x, y) * W34)


def b_divide(x, y):
    return np.sum(np.divide(x, y) * W34)


def b_power(x, y):
    return np.sum(np.power(x, y) * W34)


def b_maximum(x, y):
    return np.sum(np.maximum(x, y) * W34)


def b_minimum(x, y):
    return np.sum(np.minimum(x, y) * W34)


def b_fmax(x, y):
    return np.sum(np.fmax(x, y) * W34)


def b_fmin(x, y):
    return np.sum(np.fmin(x, y) * W34)


def b_logaddexp(x, y):
    return np.sum(np.logaddexp(x, y) * W34)


def b_hypot(x, y):
    return np.sum(np.hypot(x, y) * W34)


def b_arctan2(x, y):
    return np.sum(np.arctan2(x, y) * W34)


# -- reductions, each with axis None, 0, 1, (0, 1), -1, (0, 2) and keepdims -------------
def sum_all(x):
    return np.sum(x) * W_


def sum_ax0(x):
    return np.sum(np.sum(x, axis=0) * W4)


def sum_ax1(x):
    return np.sum(np.sum(x, axis=1) * W3)


def sum_ax01(x):
    return np.sum(x, axis=(0, 1)) * W_


def sum_ax0_keep(x):
    return np.sum(np.sum(x, axis=0, keepdims=True) * W14)


def sum_ax1_keep(x):
    return np.sum(np.sum(x, axis=1, keepdims=True) * W31)


def sum_all_keep(x):
    return np.sum(np.sum(x, keepdims=True) * W11)


def sum_axneg1_pos(x):
    return np.sum(np.sum(x, -1) * W3)


def sum_3d_ax02(x):
    return np.sum(np.sum(x, axis=(0, 2)) * W3)


def sum_3d_ax1_keep(x):
    return np.sum(np.sum(x, axis=1, keepdims=True) * W214)


def mean_all(x):
    return np.mean(x) * W_


def mean_ax0(x):
    return np.sum(np.mean(x, axis=0) * W4)


def mean_ax1(x):
    return np.sum(np.mean(x, axis=1) * W3)


def mean_ax01(x):
    return np.mean(x, axis=(0, 1)) * W_


def mean_ax0_keep(x):
    return np.sum(np.mean(x, axis=0, keepdims=True) * W14)


def mean_ax1_keep(x):
    return np.sum(np.mean(x, axis=1, keepdims=True) * W31)


def mean_all_keep(x):
    return np.sum(np.mean(x, keepdims=True) * W11)


def mean_axneg1_pos(x):
    return np.sum(np.mean(x, -1) * W3)


def mean_3d_ax02(x):
    return np.sum(np.mean(x, axis=(0, 2)) * W3)


def mean_3d_ax1_keep(x):
    return np.sum(np.mean(x, axis=1, keepdims=True) * W214)


def prod_all(x):
    return np.prod(x) * W_


def prod_ax0(x):
    return np.sum(np.prod(x, axis=0) * W4)


def prod_ax1(x):
    return np.sum(np.prod(x, axis=1) * W3)


def prod_ax01(x):
    return np.prod(x, axis=(0, 1)) * W_


def prod_ax0_keep(x):
    return np.sum(np.prod(x, axis=0, keepdims=True) * W14)


def prod_ax1_keep(x):
    return np.sum(np.prod(x, axis=1, keepdims=True) * W31)


def prod_all_keep(x):
    return np.sum(np.prod(x, keepdims=True) * W11)


def prod_axneg1_pos(x):
    return np.sum(np.prod(x, -1) * W3)


def prod_3d_ax02(x):
    return np.sum(np.prod(x, axis=(0, 2)) * W3)


def prod_3d_ax1_keep(x):
    return np.sum(np.prod(x, axis=1, keepdims=True) * W214)


def max_all(x):
    return np.max(x) * W_


def max_ax0(x):
    return np.sum(np.max(x, axis=0) * W4)


def max_ax1(x):
    return np.sum(np.max(x, axis=1) * W3)


def max_ax01(x):
    return np.max(x, axis=(0, 1)) * W_


def max_ax0_keep(x):
    return np.sum(np.max(x, axis=0, keepdims=True) * W14)


def max_ax1_keep(x):
    return np.sum(np.max(x, axis=1, keepdims=True) * W31)


def max_all_keep(x):
    return np.sum(np.max(x, keepdims=True) * W11)


def max_axneg1_pos(x):
    return np.sum(np.max(x, -1) * W3)


def max_3d_ax02(x):
    return np.sum(np.max(x, axis=(0, 2)) * W3)


def max_3d_ax1_keep(x):
    return np.sum(np.max(x, axis=1, keepdims=True) * W214)


def min_all(x):
    return np.min(x) * W_


def min_ax0(x):
    return np.sum(np.min(x, axis=0) * W4)


def min_ax1(x):
    return np.sum(np.min(x, axis=1) * W3)


def min_ax01(x):
    return np.min(x, axis=(0, 1)) * W_


def min_ax0_keep(x):
    return np.sum(np.min(x, axis=0, keepdims=True) * W14)


def min_ax1_keep(x):
    return np.sum(np.min(x, axis=1, keepdims=True) * W31)


def min_all_keep(x):
    return np.sum(np.min(x, keepdims=True) * W11)


def min_axneg1_pos(x):
    return np.sum(np.min(x, -1) * W3)


def min_3d_ax02(x):
    return np.sum(np.min(x, axis=(0, 2)) * W3)


def min_3d_ax1_keep(x):
    return np.sum(np.min(x, axis=1, keepdims=True) * W214)


def amax_all(x):
    return np.amax(x) * W_


def amax_ax0(x):
    return np.sum(np.amax(x, axis=0) * W4)


def amax_ax1(x):
    return np.sum(np.amax(x, axis=1) * W3)


def amax_ax01(x):
    return np.amax(x, axis=(0, 1)) * W_


def amax_ax0_keep(x):
    return np.sum(np.amax(x, axis=0, keepdims=True) * W14)


def amax_ax1_keep(x):
    return np.sum(np.amax(x, axis=1, keepdims=True) * W31)


def amax_all_keep(x):
    return np.sum(np.amax(x, keepdims=True) * W11)


def amax_axneg1_pos(x):
    return np.sum(np.amax(x, -1) * W3)


def amax_3d_ax02(x):
    return np.sum(np.amax(x, axis=(0, 2)) * W3)


def amax_3d_ax1_keep(x):
    return np.sum(np.amax(x, axis=1, keepdims=True) * W214)


def amin_all(x):
    return np.amin(x) * W_


def amin_ax0(x):
    return np.sum(np.amin(x, axis=0) * W4)


def amin_ax1(x):
    return np.sum(np.amin(x, axis=1) * W3)


def amin_ax01(x):
    return np.amin(x, axis=(0, 1)) * W_


def amin_ax0_keep(x):
    return np.sum(np.amin(x, axis=0, keepdims=True) * W14)


def amin_ax1_keep(x):
    return np.sum(np.amin(x, axis=1, keepdims=True) * W31)


def amin_all_keep(x):
    return np.sum(np.amin(x, keepdims=True) * W11)


def amin_axneg1_pos(x):
    return np.sum(np.amin(x, -1) * W3)


def amin_3d_ax02(x):
    return np.sum(np.amin(x, axis=(0, 2)) * W3)


def amin_3d_ax1_keep(x):
    return np.sum(np.amin(x, axis=1, keepdims=True) * W214)


def var_all(x):
    return np.var(x) * W_


def var_ax0(x):
    return np.sum(np.var(x, axis=0) * W4)


def var_ax1(x):
    return np.sum(np.var(x, axis=1) * W3)


def var_ax01(x):
    return np.var(x, axis=(0, 1)) * W_


def var_ax0_keep(x):
    return np.sum(np.var(x, axis=0, keepdims=True) * W14)


def var_ax1_keep(x):
    return np.sum(np.var(x, axis=1, keepdims=True) * W31)


def var_all_keep(x):
    return np.sum(np.var(x, keepdims=True) * W11)


def var_axneg1_pos(x):
    return np.sum(np.var(x, -1) * W3)


def var_3d_ax02(x):
    return np.sum(np.var(x, axis=(0, 2)) * W3)


def var_3d_ax1_keep(x):
    return np.sum(np.var(x, axis=1, keepdims=True) * W214)


def std_all(x):
    return np.std(x) * W_


def std_ax0(x):
    return np.sum(np.std(x, axis=0) * W4)


def std_ax1(x):
    return np.sum(np.std(x, axis=1) * W3)


def std_ax01(x):
    return np.std(x, axis=(0, 1)) * W_


def std_ax0_keep(x):
    return np.sum(np.std(x, axis=0, keepdims=True) * W14)


def std_ax1_keep(x):
    return np.sum(np.std(x, axis=1, keepdims=True) * W31)


def std_all_keep(x):
    return np.sum(np.std(x, keepdims=True) * W11)


def std_axneg1_pos(x):
    return np.sum(np.std(x, -1) * W3)


def std_3d_ax02(x):
    return np.sum(np.std(x, axis=(0, 2)) * W3)


def std_3d_ax1_keep(x):
    return np.sum(np.std(x, axis=1, keepdims=True) * W214)


# -- np.real, np.where, np.clip ---------------------------------------------------------
def real_fn(x):
    return np.sum(np.real(x) * W34)


def real_attr(x):
    return np.sum(x.real * W34)


def where_gt0(x, y):
    return np.sum(np.where(x > 0, x * 2.0, y) * W34)


def where_mask(x, y):
    return np.sum(np.where(MASK34, x, y) * W34)


def where_const_branch(x):
    return np.sum(np.where(x > 0, x, 0.0) * W34)


def where_scalar_branch(x, s):
    return np.sum(np.where(x > 0, s, x) * W34)


def clip_fn(x):
    return np.sum(np.clip(x, -0.5, 0.5) * W34)


def clip_kw(x):
    return np.sum(np.clip(x, a_min=-0.5, a_max=0.5) * W34)


def clip_upper_only(x):
    return np.sum(np.clip(x, None, 0.5) * W34)


def clip_method(x):
    return np.sum(x.clip(-0.5, 0.5) * W34)


def clip_array_bounds(x, lo, hi):
    return np.sum(np.clip(x, lo, hi) * W34)


def clip_x_broadcast(x):
    return np.sum(np.clip(x, LO34, 0.5) * W34)


def relu(x):
    return np.sum(np.maximum(x, 0.0) * W34)


# -- operators on arrays (broadcasting) -------------------------------------------------
def o_add(x, y):
    return np.sum((x + y) * W34)


def o_sub(x, y):
    return np.sum((x - y) * W34)


def o_mul(x, y):
    return np.sum((x * y) * W34)


def o_truediv(x, y):
    return np.sum((x / y) * W34)


def o_pow(x, y):
    return np.sum((x ** y) * W34)


def o_mod(x, y):
    return np.sum((x % y) * W34)


def o_neg(x):
    return np.sum(-x * W34)


def o_pos(x):
    return np.sum(+x * W34)


def o_pow_const(x):
    return np.sum(x ** 3 * W34)


def o_square_const(x):
    return np.sum(x ** 2.0 * W34)


def power_const_exponent(x):
    return np.sum(np.power(x, 3.0) * W34)


def power_const_base(y):
    return np.sum(np.power(2.5, y) * W34)


# -- more reductions --------------------------------------------------------------------
def sum_pos_axis(x):
    return np.sum(np.sum(x, 0) * W4)


def sum_dtype(x):
    return np.sum(np.sum(x, axis=0, dtype=np.float64) * W4)


def mean_dtype(x):
    return np.sum(np.mean(x, axis=1, dtype=np.float64) * W3)


def var_ddof1(x):
    return np.var(x, ddof=1) * W_


def var_ax0_ddof1(x):
    return np.sum(np.var(x, axis=0, ddof=1) * W4)


def var_ax1_keep_ddof2(x):
    return np.sum(np.var(x, axis=1, ddof=2, keepdims=True) * W31)


def std_ddof1(x):
    return np.std(x, ddof=1) * W_


def std_ax0_ddof1(x):
    return np.sum(np.std(x, axis=0, ddof=1) * W4)


def std_ax1_keep_ddof2(x):
    return np.sum(np.std(x, axis=1, ddof=2, keepdims=True) * W31)


def cumsum_flat(x):
    return np.sum(np.cumsum(x) * W12)


def cumsum_ax0(x):
    return np.sum(np.cumsum(x, axis=0) * W34)


def cumsum_ax1(x):
    return np.sum(np.cumsum(x, axis=1) * W34)


def cumsum_vec(x):
    return np.sum(np.cumsum(x) * W4)


def cumulative_sum_ax0(x):
    return np.sum(np.cumulative_sum(x, axis=0) * W34)


def cumulative_sum_vec(x):
    return np.sum(np.cumulative_sum(x) * W4)


def astype_function(x):
    return np.sum(np.astype(x, np.float64, copy=True) * W34) + np.sum(np.astype(x, float) ** 2)


def cumprod_flat(x):
    return np.sum(np.cumprod(x) * W12)


def cumprod_ax0(x):
    return np.sum(np.cumprod(x, axis=0) * W34)


def cumprod_ax1(x):
    return np.sum(np.cumprod(x, axis=1) * W34)


def cumprod_vec(x):
    return np.sum(np.cumprod(x) * W4)


# -- array method spellings of reductions -----------------------------------------------
def m_sum(x):
    return x.sum() * W_


def m_sum_ax1(x):
    return np.sum(x.sum(axis=1) * W3)


def m_sum_expr(x):
    return (x * W34).sum()


def m_mean(x):
    return x.mean() * W_


def m_mean_ax0_keep(x):
    return np.sum(x.mean(axis=0, keepdims=True) * W14)


def m_prod(x):
    return x.prod() * W_


def m_prod_ax1(x):
    return np.sum(x.prod(axis=1) * W3)


def m_max_ax0(x):
    return np.sum(x.max(axis=0) * W4)


def m_max(x):
    return x.max() * W_


def m_min(x):
    return x.min() * W_


def m_min_ax1(x):
    return np.sum(x.min(axis=1) * W3)


def m_var(x):
    return x.var() * W_


def m_var_ddof1_ax0(x):
    return np.sum(x.var(axis=0, ddof=1) * W4)


def m_std(x):
    return x.std() * W_


def m_std_ax1(x):
    return np.sum(x.std(axis=1) * W3)


def m_cumsum(x):
    return np.sum(x.cumsum(axis=1) * W34)


def m_cumsum_flat(x):
    return np.sum(x.cumsum() * W12)


def m_cumprod(x):
    return np.sum(x.cumprod() * W12)


def m_cumprod_ax0(x):
    return np.sum(x.cumprod(axis=0) * W34)


def m_trace(x):
    return x.trace() * W_


def m_clip(x):
    return np.sum(x.clip(-0.5, 0.5) * W34)


def m_copy(x):
    return np.sum(x.copy() * W34)


def m_astype(x):
    return np.sum(x.astype(np.float64) * W34)


def m_astype_builtin(x):
    return np.sum(x.astype(float) * W34)


def m_astype_str(x):
    return np.sum(x.astype("float64") * W34)


def m_astype_int(x):
    return np.sum(x.astype(np.int64) * W34)


def m_repeat(x):
    return np.sum(x.repeat(2, axis=1) * W38)


def m_repeat_flat(x):
    return np.sum(x.repeat(3) * W12)


# -- linear algebra ---------------------------------------------------------------------
def matmul_mm(a, b):
    return np.sum((a @ b) * W35)


def matmul_vm(a, b):
    return np.sum((a @ b) * W5)


def matmul_mv(a, b):
    return np.sum((a @ b) * W3)


def matmul_vv(a, b):
    return (a @ b) * W_


def matmul_batch_m(a, b):
    return np.sum((a @ b) * W235)


def matmul_batch_batch(a, b):
    return np.sum((a @ b) * W235)


def matmul_v_batch(a, b):
    return np.sum((a @ b) * W25)


def matmul_batch_v(a, b):
    return np.sum((a @ b) * W23)


def np_matmul_mm(a, b):
    return np.sum(np.matmul(a, b) * W35)


def np_matmul_mv(a, b):
    return np.sum(np.matmul(a, b) * W3)


def np_matmul_batch(a, b):
    return np.sum(np.matmul(a, b) * W235)


def dot_vv(a, b):
    return np.dot(a, b) * W_


def dot_mv(a, b):
    return np.sum(np.dot(a, b) * W3)


def dot_vm(a, b):
    return np.sum(np.dot(a, b) * W5)


def dot_mm(a, b):
    return np.sum(np.dot(a, b) * W35)


def dot_3d_v(a, b):
    return np.sum(np.dot(a, b) * W23)


def dot_3d_m(a, b):
    return np.sum(np.dot(a, b) * W235)


def dot_3d_3d(a, b):
    return np.sum(np.dot(a, b) * W2352)


def dot_m_3d(a, b):
    return np.sum(np.dot(a, b) * W325)


def dot_v_3d(a, b):
    return np.sum(np.dot(a, b) * W25)


def dot_scalar(a, b):
    return np.sum(np.dot(a, b) * W34)


def m_dot(a, b):
    return np.sum(a.dot(b) * W35)


def m_dot_chain(a, b):
    return np.sum(a.T.dot(b) * W45)


def inner_vv(a, b):
    return np.inner(a, b) * W_


def inner_mv(a, b):
    return np.sum(np.inner(a, b) * W3)


def inner_mm(a, b):
    return np.sum(np.inner(a, b) * W32)


def inner_3d(a, b):
    return np.sum(np.inner(a, b) * W235)


def outer_vv(a, b):
    return np.sum(np.outer(a, b) * W34)


def outer_mv(a, b):
    return np.sum(np.outer(a, b) * W43)


def tensordot_ax1(a, b):
    return np.sum(np.tensordot(a, b, axes=1) * W35)


def tensordot_ax2(a, b):
    return np.sum(np.tensordot(a, b, axes=2) * W25)


def tensordot_default(a, b):
    return np.sum(np.tensordot(a, b) * W25)


def tensordot_pairs(a, b):
    return np.sum(np.tensordot(a, b, axes=([0, 1], [1, 0])) * W25)


def tensordot_ax0(a, b):
    return np.sum(np.tensordot(a, b, 0) * W34)


def tensordot_neg_axes(a, b):
    return np.sum(np.tensordot(a, b, axes=([-1], [0])) * W35)


def einsum_ij_jk(a, b):
    return np.sum(np.einsum("ij,jk->ik", a, b) * W35)


def einsum_ij_i(a):
    return np.sum(np.einsum("ij->i", a) * W3)


def einsum_i_i(a, b):
    return np.einsum("i,i->", a, b) * W_


def einsum_transpose(a):
    return np.sum(np.einsum("ij->ji", a) * W43)


def einsum_implicit(a, b):
    return np.sum(np.einsum("ij,jk", a, b) * W35)


def einsum_batch(a, b):
    return np.sum(np.einsum("bij,bjk->bik", a, b) * W235)


def einsum_three(a, b, c):
    return np.einsum("i,ij,j->", a, b, c) * W_


def einsum_outer(a, b):
    return np.sum(np.einsum("i,j->ij", a, b) * W34)


def einsum_diag(a):
    return np.sum(np.einsum("ii->i", a) * W3)


def einsum_ellipsis(a, b):
    return np.sum(np.einsum("...ij,jk->...ik", a, b) * W235)


def einsum_trace(a):
    return np.einsum("ii->", a) * W_


def einsum_diagonal_times(a, b):
    # a repeated subscript and a second operand: sum_i a[i, i, j] b[j]
    return np.sum(np.einsum("iij,j->i", a, b) * W3)


def einsum_broadcast_ellipsis(a, b):
    # a's leading 1 is broadcast against b's 2: its adjoint is summed back
    return np.sum(np.einsum("...ij,...jk->...ik", a, b) * W235)


def einsum_implicit_ellipsis(a, b):
    return np.sum(np.einsum("...i,i", a, b) * W23)


def trace_sq(x):
    return np.trace(x) * W_


def trace_offset(x):
    return np.trace(x, offset=1) * W_


def trace_neg_offset(x):
    return np.trace(x, -1) * W_


def trace_3d_leading(x):
    return np.sum(np.trace(x) * W2)


def trace_3d_axes(x):
    return np.sum(np.trace(x, axis1=1, axis2=2) * W2)


def trace_axes_swapped(x):
    return np.sum(np.trace(x, axis1=2, axis2=0) * W2)


def trace_axes_swapped_offset(x):
    return np.sum(np.trace(x, offset=1, axis1=2, axis2=0) * W2)


def diag_v2m(v):
    return np.sum(np.diag(v) * W44)


def diag_v2m_k1(v):
    return np.sum(np.diag(v, 1) * W44)


def diag_v2m_km1(v):
    return np.sum(np.diag(v, k=-1) * W44)


def diag_m2v(x):
    return np.sum(np.diag(x) * W3)


def diag_m2v_k1(x):
    return np.sum(np.diag(x, 1) * W3)


def diag_m2v_km1(x):
    return np.sum(np.diag(x, k=-1) * W2)


def norm_vec(x):
    return np.linalg.norm(x) * W_


def norm_vec_ord2(x):
    return np.linalg.norm(x, 2) * W_


def norm_fro_default(x):
    return np.linalg.norm(x) * W_


def norm_fro(x):
    return np.linalg.norm(x, "fro") * W_


def norm_rows(x):
    return np.sum(np.linalg.norm(x, axis=1) * W3)


def norm_cols_keep(x):
    return np.sum(np.linalg.norm(x, axis=0, keepdims=True) * W14)


def norm_vec_ord1(x):
    return np.linalg.norm(x, 1) * W_


def norm_vec_ord3(x):
    return np.linalg.norm(x, 3) * W_


def norm_vec_inf(x):
    return np.linalg.norm(x, np.inf) * W_


def norm_vec_neg_inf(x):
    return np.linalg.norm(x, -np.inf) * W_


def norm_rows_ord1(x):
    return np.sum(np.linalg.norm(x, 1, axis=1) * W3)


def solve_vec(a, b):
    return np.sum(np.linalg.solve(a, b) * W3)


def solve_mat(a, b):
    return np.sum(np.linalg.solve(a, b) * W32)


def solve_batch(a, b):
    return np.sum(np.linalg.solve(a, b) * W232)


def solve_broadcast(a, b):
    return np.sum(np.linalg.solve(a, b) * W232)


def inv_fn(a):
    return np.sum(np.linalg.inv(a) * W33)


def inv_batch(a):
    return np.sum(np.linalg.inv(a) * W233)


def det_fn(a):
    return np.linalg.det(a) * W_


def det_batch(a):
    return np.sum(np.linalg.det(a) * W2)


def slogdet_unpack(a):
    sign, logdet = np.linalg.slogdet(a)
    return logdet


def slogdet_index(a):
    return np.linalg.slogdet(a)[1] * W_


def cholesky_fn(a):
    S = a @ a.T + 3 * np.eye(3)
    L = np.linalg.cholesky(S)
    return np.sum(L * W33)


def cholesky_logdet(a):
    S = a @ a.T + 3 * np.eye(3)
    L = np.linalg.cholesky(S)
    return 2 * np.sum(np.log(np.diag(L)))


def cholesky_batch(a):
    S = a @ np.swapaxes(a, -1, -2) + 3 * np.eye(3)
    return np.sum(np.linalg.cholesky(S) * W233)


# -- shapes -----------------------------------------------------------------------------
def reshape_fn(x):
    return np.sum(np.reshape(x, (2, 6)) * W26)


def reshape_fn_flat(x):
    return np.sum(np.reshape(x, -1) * W12)


def reshape_fn_shape_kw(x):
    return np.sum(np.reshape(x, shape=(2, 6)) * W26)


def m_reshape_args(x):
    return np.sum(x.reshape(2, 6) * W26)


def m_reshape_tuple(x):
    return np.sum(x.reshape((2, 6)) * W26)


def m_reshape_flat(x):
    return np.sum(x.reshape(-1) * W12)


def m_reshape_3(x):
    return np.sum(x.reshape(2, 3, 2) * W232)


def m_reshape_4(x):
    return np.sum(x.reshape(1, 2, 3, 2) * W1232)


def ravel_fn(x):
    return np.sum(np.ravel(x) * W12)


def m_ravel(x):
    return np.sum(x.ravel() * W12)


def m_flatten(x):
    return np.sum(x.flatten() * W12)


def m_view(x):
    return np.sum(x.view() * W34)


def squeeze_fn(x):
    return np.sum(np.squeeze(x) * W34)


def squeeze_axis(x):
    return np.sum(np.squeeze(x, axis=1) * W34)


def m_squeeze(x):
    return np.sum(x.squeeze() * W34)


def expand_dims_0(x):
    return np.sum(np.expand_dims(x, 0) * W14)


def expand_dims_tuple(x):
    return np.sum(np.expand_dims(x, axis=(0, 2)) * W1314)


def transpose_fn(x):
    return np.sum(np.transpose(x) * W43)


def transpose_axes(x):
    return np.sum(np.transpose(x, (1, 0, 2)) * W324)


def transpose_axes_kw(x):
    return np.sum(np.transpose(x, axes=(2, 0, 1)) * W423)


def transpose_neg_axes(x):
    return np.sum(np.transpose(x, (0, -1, 1)) * W243)


def attr_T(x):
    return np.sum(x.T * W43)


def attr_T_3d(x):
    return np.sum(x.T * W432)


def m_transpose(x):
    return np.sum(x.transpose() * W43)


def m_transpose_2(x):
    return np.sum(x.transpose(1, 0) * W43)


def m_transpose_3(x):
    return np.sum(x.transpose(1, 2, 0) * W342)


def m_transpose_tuple(x):
    return np.sum(x.transpose((2, 0, 1)) * W423)


def m_transpose_4(x):
    return np.sum(x.transpose(3, 2, 0, 1) * W1232)


def m_transpose_neg(x):
    return np.sum(x.transpose(0, -1, 1) * W243)


def swapaxes_fn(x):
    return np.sum(np.swapaxes(x, 0, 2) * W432)


def m_swapaxes(x):
    return np.sum(x.swapaxes(1, 2) * W243)


def moveaxis_fn(x):
    return np.sum(np.moveaxis(x, 0, -1) * W342)


def moveaxis_lists(x):
    return np.sum(np.moveaxis(x, [0, 1], [2, 0]) * W342)


def broadcast_to_row(x):
    return np.sum(np.broadcast_to(x, (3, 4)) * W34)


def broadcast_to_0d(x):
    return np.sum(np.broadcast_to(x, (2, 3)) * W23)


def flip_all(x):
    return np.sum(np.flip(x) * W34)


def flip_0(x):
    return np.sum(np.flip(x, 0) * W34)


def flip_axis1(x):
    return np.sum(np.flip(x, axis=1) * W34)


def flip_3d(x):
    return np.sum(np.flip(x, (0, 2)) * W234)


def roll_vec(x):
    return np.sum(np.roll(x, 1) * W4)


def roll_axis(x):
    return np.sum(np.roll(x, -1, axis=1) * W34)


def roll_flat(x):
    return np.sum(np.roll(x, 2) * W34)


def roll_tuple(x):
    return np.sum(np.roll(x, (1, 2), axis=(0, 1)) * W34)


def tile_vec(x):
    return np.sum(np.tile(x, 2) * W8)


def tile_rows(x):
    return np.sum(np.tile(x, (2, 1)) * W64)


def tile_vec_2d(x):
    return np.sum(np.tile(x, (2, 2)) * W28)


def tile_short_reps(x):
    return np.sum(np.tile(x, 2) * W38)


def repeat_flat(x):
    return np.sum(np.repeat(x, 2) * W24_)


def repeat_axis0(x):
    return np.sum(np.repeat(x, 2, axis=0) * W64)


def repeat_array(x):
    return np.sum(np.repeat(x, REPS, axis=0) * W34)


def repeat_0d(x):
    return np.sum(np.repeat(x, 3) * W3)


def pad_int(x):
    return np.sum(np.pad(x, 1) * W56)


def pad_pairs(x):
    return np.sum(np.pad(x, ((1, 0), (0, 2))) * W46)


def pad_vec(x):
    return np.sum(np.pad(x, (2, 1)) * W7)


def triu_fn(x):
    return np.sum(np.triu(x) * W34)


def triu_k1(x):
    return np.sum(np.triu(x, 1) * W34)


def triu_km1(x):
    return np.sum(np.triu(x, k=-1) * W34)


def tril_fn(x):
    return np.sum(np.tril(x) * W34)


def tril_k1(x):
    return np.sum(np.tril(x, 1) * W34)


def tril_km1(x):
    return np.sum(np.tril(x, k=-1) * W34)


def sort_last(x):
    return np.sum(np.sort(x) * W34)


def sort_axis0(x):
    return np.sum(np.sort(x, axis=0) * W34)


def sort_flat(x):
    return np.sum(np.sort(x, axis=None) * W12)


def sort_vec(x):
    return np.sum(np.sort(x) * W4)


# -- building arrays --------------------------------------------------------------------
def concat_vec(a, b):
    return np.sum(np.concatenate([a, b * 2]) * W7)


def concat_axis1(a, b):
    return np.sum(np.concatenate([a, b], axis=1) * W36)


def concat_tuple_repeat(a, b):
    return np.sum(np.concatenate((a, b, a)) * W74)


def concat_neg_axis(a, b):
    return np.sum(np.concatenate([a, b], axis=-1) * W25)


def concat_flat(a, b):
    return np.sum(np.concatenate([a, b], axis=None) * W12)


def stack_fn(a, b):
    return np.sum(np.stack([a, b]) * W24)


def stack_axis1(a, b):
    return np.sum(np.stack([a, b * 2], axis=1) * W324)


def stack_tuple_neg(a, b):
    return np.sum(np.stack((a, b, a), axis=-1) * W43)


def hstack_vec(a, b):
    return np.sum(np.hstack([a, b]) * W7)


def hstack_mat(a, b):
    return np.sum(np.hstack([a, b]) * W36)


def hstack_scalars(a, b):
    return np.sum(np.hstack([a, b]) * W2)


def vstack_vec(a, b):
    return np.sum(np.vstack([a, b]) * W24)


def row_stack_fn(a, b):
    with warnings.catch_warnings():     # (deprecated by NumPy 2.0)
        warnings.simplefilter("ignore", DeprecationWarning)
        return np.sum(np.row_stack([a, b * 2]) * W54)


def vstack_mat(a, b):
    return np.sum(np.vstack([a, b * 2]) * W54)


def array_scalars(x0, x1):
    return np.sum(np.array([x0, x1]) * W2)


def array_exprs(x0, x1):
    return np.sum(np.array([x0, x1 * 2, x0 * x1]) * W3)


def array_nested(x0, x1):
    return np.sum(np.array([[x0, x1], [x1, x0]]) * W22)


def array_dtype(x0, x1):
    return np.sum(np.array([x0, x1], dtype=np.float64) * W2)


def array_vectors(a, b):
    return np.sum(np.array([a, b]) * W24)


def array_with_const(x0, x1):
    return np.sum(np.array([x0, 1.5, x1]) * W3)


def array_copy(a):
    return np.sum(np.array(a) * W34)


def asarray_fn(a):
    return np.sum(np.asarray(a) * W34)


def asarray_list(x0, x1):
    return np.sum(np.asarray([x0, x1]) * W2)


def copy_fn(a):
    return np.sum(np.copy(a) * W34)


# -- indexing ---------------------------------------------------------------------------
def ix_slice(x):
    return np.sum(x[1:] * W24)


def ix_column(x):
    return np.sum(x[:, 0] * W3)


def ix_row(x):
    return np.sum(x[1] * W4)


def ix_int_slice(x):
    return np.sum(x[-1, 1:3] * W2)


def ix_step(x):
    return np.sum(x[::2] * W24)


def ix_elements(x):
    return x[0, 1] * x[2, 3] + x[1, 1]


def ix_vec_element(x):
    return x[-1] * W_ + x[0] * x[1]


def ix_repeated(x):
    return np.sum(x[IDX] * W44)


def ix_repeated_cols(x):
    return np.sum(x[:, IDX] * W34)


def ix_pairs(x):
    return np.sum(x[IDX_R, IDX_C] * W4)


def ix_list(x):
    return np.sum(x[[0, 0, 2]] * W34)


def ix_slice_and_array(x):
    return np.sum(x[1:, IDX] * W24)


def ix_bool(x):
    m = x > 0
    return np.sum(x[m] * W34[m])


def ix_bool_inline(x):
    return np.sum(x[x > 0] ** 2)


def ix_mask_const(x):
    return np.sum(x[MASK34] * W34[MASK34])


def ix_none(x):
    return np.sum(x[None, :] * W134)


def ix_none_mid(x):
    return np.sum(x[:, None, :] * W314)


def ix_ellipsis(x):
    return np.sum(x[..., 1] * W23)


def ix_0d(x):
    return x[()] * W_


def ix_argmax(x):
    return x[np.argmax(x)] * W_


def ix_where_one_arg(x):
    return np.sum(x[np.where(x > 0)] ** 2)


def ix_reverse(x):
    return np.sum(x[::-1, ::-2] * W32)


# -- more elementwise functions, reductions and scans -----------------------------------
def u_degrees(x):
    return np.sum(np.degrees(x) * W34)


def u_radians(x):
    return np.sum(np.radians(x) * W34)


def u_sinc(x):
    return np.sum(np.sinc(x) * W34)


def u_nan_to_num(x):
    return np.sum(np.nan_to_num(x) * W34)


def nan_to_num_kw(x):
    return np.sum(np.nan_to_num(x + INF34 + NAN34, posinf=9.0, neginf=-9.0) * W34)


def float64_fn(x):
    return np.sum(np.float64(x) * W4)


def real_if_close_fn(x):
    return np.sum(np.real_if_close(x) * W4)


def complex128_fn(x):   # (of real values: tests/test_complex_rules.py has complex ones)
    return np.sum(np.abs(np.complex128(x) + 0.5j) ** 2 * W4)


def float32_fn(x):
    return np.sum(np.float32(x) * W4)


def longdouble_fn(x):
    return np.sum(np.float64(np.longdouble(x) * W4))


def b_logaddexp2(x, y):
    return np.sum(np.logaddexp2(x, y) * W34)


def b_remainder(x, y):
    return np.sum(np.remainder(x, y) * W34)


def b_fmod(x, y):
    return np.sum(np.fmod(x, y) * W34)


def m_clip_min(x):
    return np.sum(x.clip(min=-0.5) * W34)


def clip_min_max_kw(x):
    return np.sum(np.clip(x, min=-0.5, max=0.5) * W34)


def m_item(x):
    return x.item() * W_


def nansum_ax0(x):
    return np.sum(np.nansum(x + NAN34, axis=0) * W4)


def nansum_all(x):
    return np.nansum(x + NAN34) * W_


def nanmean_ax1_keep(x):
    return np.sum(np.nanmean(x + NAN34, axis=1, keepdims=True) * W31)


def nanmean_all(x):
    return np.nanmean(x + NAN34) * W_


def nanmax_ax0(x):
    return np.sum(np.nanmax(x + NAN34, axis=0) * W4)


def nanmin_all(x):
    return np.nanmin(x + NAN34) * W_


def ptp_ax1(x):
    return np.sum(np.ptp(x, axis=1) * W3)


def ptp_all(x):
    return np.ptp(x) * W_


def diff_fn(x):
    return np.sum(np.diff(x) * W33)


def diff_n2_ax0(x):
    return np.sum(np.diff(x, n=2, axis=0) * W14)


def average_ax0(x):
    return np.sum(np.average(x, axis=0) * W4)


def average_weights(x, w):
    return np.sum(np.average(x, axis=1, weights=w) * W3)


def average_full_weights(x, w):
    return np.average(x, weights=w) * W_


def trapezoid_fn(y):
    return np.sum(np.trapezoid(y) * W3)


def trapezoid_x(y, x):
    return np.sum(np.trapezoid(y, x) * W3)


def trapezoid_dx(y, dx):
    return np.sum(np.trapezoid(y, dx=dx, axis=0) * W4)


def polyval_fn(p, x):
    return np.sum(np.polyval(p, x) * W34)


def convolve_fn(a, v):
    return np.sum(np.convolve(a, v) * W7)


def convolve_same(a, v):
    return np.sum(np.convolve(a, v, mode="same") * W4)


def correlate_fn(a, v):
    return np.sum(np.correlate(a, v, "full") * W7)


def correlate_valid(a, v):
    return np.sum(np.correlate(a, v) * W2)


# -- order statistics, the other nan* functions, np.gradient and np.interp -------------
XP5 = np.array([-1.5, -0.5, 0.0, 0.7, 1.6])     # sample points of the np.interp checks
FP5 = np.array([0.3, 1.1, -0.4, 0.9, 2.0])
X7 = np.array([-2.0, -1.2, -0.3, 0.2, 0.5, 1.1, 2.3])   # two outside [XP5[0], XP5[-1]]


def median_all(x):
    return np.median(x) * W_


def median_ax1_keep(x):
    return np.sum(np.median(x, axis=1, keepdims=True) * W31)


def median_ax0(x):
    return np.sum(np.median(x, axis=0) * W4)


def quantile_q(x, q):
    return np.quantile(x, q) * W_


def quantile_vector_q(x, q):
    return np.sum(np.quantile(x, q, axis=1) * W23)


def quantile_methods(x):
    return (np.sum(np.quantile(x, [0.3, 0.8], axis=0, method="lower") * W24)
            + np.sum(np.quantile(x, 0.4, axis=(0, 1), method="higher", keepdims=True) * W11)
            + np.sum(np.quantile(x, [0.2, 0.45], axis=1, method="nearest") * W23)
            + np.sum(np.quantile(x, 0.7, axis=0, method="midpoint") * W4))


def percentile_fn(x, q):
    return np.sum(np.percentile(x, q, axis=0) * W4)


def nanmedian_ax1(x):
    return np.sum(np.nanmedian(x + NAN34, axis=1) * W3)


def nanquantile_fn(x, q):
    return np.sum(np.nanquantile(x + NAN34, q, axis=0, keepdims=True) * W14)


def nanpercentile_fn(x):
    return np.sum(np.nanpercentile(x + NAN34, [20.0, 65.0], axis=1) * W23)


def nanprod_ax0(x):
    return np.sum(np.nanprod(x + NAN34, axis=0) * W4)


def nanprod_all(x):
    return np.nanprod(x + NAN34) * W_


def nanvar_ax1_ddof(x):
    return np.sum(np.nanvar(x + NAN34, axis=1, ddof=1) * W3)


def nanvar_all(x):
    return np.nanvar(x + NAN34) * W_


def nanstd_ax0_keep(x):
    return np.sum(np.nanstd(x + NAN34, axis=0, keepdims=True) * W14)


def nancumsum_fn(x):
    return np.sum(np.nancumsum(x + NAN34, axis=1) * W34)


def nancumprod_fn(x):
    return np.sum(np.nancumprod(x + NAN34, axis=0) * W34)


def nancumprod_flat(x):
    return np.sum(np.nancumprod(x + NAN34) * W12)


def gradient_fn(f):
    gy, gx = np.gradient(f)
    return np.sum(gy * W34[:len(f), :len(f[0])]) + np.sum(gx * gx)


def gradient_spacing(f):
    return np.sum(np.gradient(f, 0.3, axis=1, edge_order=2) * W34)


def gradient_coordinates(f):
    return np.sum(np.gradient(f, XP5, edge_order=2) * W5) + np.sum(np.gradient(f, XP5) ** 2)


def gradient_two_spacings(f):
    gy, gx = np.gradient(f, 0.5, XP5[:4])
    return np.sum(gy * W34) + np.sum(gx * W34 * W34)


def interp_fn(x, fp):
    return np.sum(np.interp(x, XP5, fp) * W7)


def interp_left_right(x, fp, left, right):
    return np.sum(np.interp(x, XP5, fp, left, right) * W7)


def interp_scalar(x, fp):
    return np.interp(x, XP5, fp, right=-1.0) * W_


def conjugate_fn(x):
    return np.sum(np.conj(x) * W34) + np.sum(np.conjugate(x) * x)


def m_conj(x):
    return np.sum(x.conj() * W34) + np.sum(x.conjugate() * x)


def partition_fn(x):
    return np.sum(np.partition(x, 1) * W34)


def partition_axis0(x):
    return np.sum(np.partition(x, (0, 2), axis=0) * W34)


def partition_flat(x):
    return np.sum(np.partition(x, 5, axis=None) * W12)


def dsplit_fn(x):
    a, b = np.dsplit(x, [1])
    return np.sum(np.sin(a)) + np.sum(b * b * W233)


def meshgrid_xy(x, y):
    gx, gy = np.meshgrid(x, y)
    return np.sum(gx * W34) + np.sum(gy * gy * W34)


def meshgrid_ij_sparse(x, y, z):
    a, b, c = np.meshgrid(x, y, z, indexing="ij", sparse=True)
    return np.sum(a * b * c * W234)


def meshgrid_one(x):
    (a,) = np.meshgrid(x)
    return np.sum(a * a * W4)


# -- matrix norms, ufunc methods, the interleaved einsum and optimize= --------------------
def norm_nuc(x):
    return np.linalg.norm(x, "nuc") * W_


def norm_mat_2(x):
    return np.linalg.norm(x, 2) * W_ + np.linalg.norm(x, -2) ** 2


def norm_mat_1_inf(x):
    return (np.linalg.norm(x, 1) * W_ + np.linalg.norm(x, -1) ** 2 + np.linalg.norm(x, np.inf)
            - np.linalg.norm(x, -np.inf) * W_)


def norm_mat_axes(x):
    return (np.sum(np.linalg.norm(x, "nuc", axis=(2, 1)) * W2)
            + np.sum(np.linalg.norm(x, 2, axis=(0, 2), keepdims=True) * W3.reshape(1, 3, 1))
            + np.sum(np.linalg.norm(x, np.inf, axis=(1, 0)) * W4)
            + np.sum(np.linalg.norm(x, -1, axis=(-1, -2), keepdims=True) ** 2))


def outer_arith(x, y):
    return np.sum(np.sin(np.add.outer(x, y)) + np.subtract.outer(x, y) ** 2
                  + np.cos(np.multiply.outer(x, y)) + np.divide.outer(x, y))


def outer_power(x, y):
    return np.sum(np.sin(np.power.outer(x, y)))


def outer_extrema(x, y):
    return np.sum(np.sin(np.maximum.outer(x, y)) + np.minimum.outer(x, y) ** 2
                  + np.cos(np.fmax.outer(x, y)) + np.fmin.outer(x, y) ** 3)


def outer_smooth(x, y):
    return np.sum(np.sin(np.logaddexp.outer(x, y)) + np.logaddexp2.outer(x, y) ** 2
                  + np.cos(np.hypot.outer(x, y)) + np.arctan2.outer(x, y) ** 3)


def outer_remainders(x, y):
    return np.sum(np.sin(np.remainder.outer(x, y)) + np.fmod.outer(x, y) ** 2)


def ureduce_sums(a):
    return (np.sum(np.sin(np.add.reduce(a)) * W4) + np.multiply.reduce(a, axis=1) @ W3
            + np.add.reduce(a, axis=None) ** 2
            + np.sum(np.add.reduce(a, 1, keepdims=True) ** 2))


def ureduce_extrema(a):
    return (np.sum(np.maximum.reduce(a) * W4) + np.sum(np.minimum.reduce(a, axis=1) ** 2)
            + np.fmax.reduce(a, axis=None) * W_
            + np.sum(np.fmin.reduce(a, keepdims=True) * W14))


def logaddexp_reduce(a):
    return (np.sum(np.logaddexp.reduce(a, axis=0) * W4)
            + np.sum(np.logaddexp2.reduce(a, axis=1, keepdims=True) ** 2)
            + np.logaddexp.reduce(a, axis=None) * W_)


def uaccumulate(a):
    return (np.sum(np.sin(np.add.accumulate(a)) * W34)
            + np.sum(np.multiply.accumulate(a, axis=1) * W34))


# (distinct values, apart from the samples drawn in order above and below)
DISTINCT34 = (np.random.default_rng(40).permutation(12).reshape(3, 4) - 5.5) * 0.37


def uaccumulate_extrema(a):
    return (np.sum(np.maximum.accumulate(a) * W34) + np.sum(np.minimum.accumulate(a, axis=1) ** 2)
            + np.sum(np.fmax.accumulate(a[0]) * W4) + np.sum(np.fmin.accumulate(a, 1) * W34))


def einsum_interleaved(a, b):
    return np.sum(np.sin(np.einsum(a, [0, 1], b, [0, 2], [1, 2])) * W45)


def einsum_interleaved_implicit(a, b):
    return np.sum(np.einsum(a, [1, 0], b, [0, 2]) * W35)


def einsum_interleaved_one(a):
    return (np.sum(np.einsum(a, [0, 1], [1, 0]) * W33) + np.einsum(a, [0, 0]) * W_
            + np.sum(np.einsum(a, [Ellipsis, 1], W3, [1], [Ellipsis]) ** 2))


def einsum_interleaved_three(a, b, c):
    return np.einsum(a, [0], b, [0, 1], c, [1], []) * W_


def einsum_optimize(a, b, c):
    return (np.einsum("i,ij,j->", a, b, c, optimize=True) * W_
            + np.einsum("i,ij,j->", a, b, c, optimize="greedy") ** 2
            + np.sum(np.einsum("ij,j->i", b, c, optimize=False) * W3)
            + np.einsum(a, [0], b, [0, 1], c, [1], optimize=True))


def einsum_four(a, b, c):
    return np.einsum("i,ij,jk,k->", a, b, b.T, a) * W_ + np.sum(np.einsum("ij->j", c) ** 2)


# -- more shape and layout functions ----------------------------------------------------
def split_halves(x):
    a, b = np.split(x, 2, axis=1)
    return np.sum(np.sin(a) * b)


def split_at(x):
    p = np.split(x, [1, 3])
    return np.sum(np.sin(p[0])) + np.sum(p[2] * W_) + np.sum(p[1] ** 2)


def multi_dot_chain(a, b, c):
    return np.sum(np.linalg.multi_dot([a, b, c]) * W25)


def multi_dot_vectors(v, a, w):
    # (a 1-D first operand is a row, a 1-D last one a column: a number)
    return np.linalg.multi_dot([v, a, a.T, w]) * W_


def split_unordered(x):
    # (cuts out of order: the parts x[:4] and x[2:] overlap)
    a, b, c = np.split(x, [4, 2])
    return np.sum(np.sin(a) * W_) + np.sum(b) + np.sum(c ** 3)


def array_split_fn(x):
    p = np.array_split(x, 3)
    return np.sum(np.sin(p[0])) + np.sum(p[2] * 3.0)


def hsplit_fn(x):
    a, b = np.hsplit(x, 2)
    return np.sum(np.sin(a) * b)


def vsplit_fn(x):
    a, b = np.vsplit(x, [1])
    return np.sum(np.sin(a)) + np.sum(b * b)


def append_flat(x, y):
    return np.sum(np.sin(np.append(x, y)))


def append_axis0(x, y):
    return np.sum(np.sin(np.append(x, y, axis=0)))


def delete_flat(x):
    return np.sum(np.sin(np.delete(x, [0, 3])) * np.arange(4.0))


def delete_axis(x):
    return np.sum(np.sin(np.delete(x, 1, axis=1)))


def minor_det(x):       # (the cofactor expansion of a determinant, as det's eval writes it)
    return np.linalg.det(np.delete(np.delete(x, 0, axis=0), 1, axis=1))


def insert_flat(x, y):
    return np.sum(np.cos(np.insert(x, [1, 1], y)) * np.arange(np.size(x) + 2.0))


def insert_row(x, y):
    return np.sum(np.sin(np.insert(x, 1, y, axis=0)))


def flipud_fn(x):
    return np.sum(np.flipud(x) * W34)


def fliplr_fn(x):
    return np.sum(np.fliplr(x) * W34)


def rot90_fn(x):
    return np.sum(np.rot90(x) * W43)


def rot90_k2_axes(x):
    return np.sum(np.rot90(x, 2, axes=(1, 2)) * W234)


def roll_axes(x):
    return np.sum(np.roll(x, (1, -2), axis=(0, 1)) * W34)


def pad_constant(x, c):
    return np.sum(np.sin(np.pad(x, 1, constant_values=c)))


def pad_modes(x):
    return (np.sum(np.sin(np.pad(x, ((1, 2), (0, 1)), "edge")))
            + np.sum(np.sin(np.pad(x, 2, mode="reflect")))
            + np.sum(np.sin(np.pad(x, (1, 3), "wrap")))
            + np.sum(np.sin(np.pad(x, 1, mode="symmetric"))))


def column_stack_fn(a, b):
    return np.sum(np.column_stack([a, b]) * W33)


def atleast_fn(x, v, m):
    return (np.sum(np.atleast_1d(x) * W_) + np.sum(np.atleast_2d(v) * W14)
            + np.sum(np.atleast_3d(m) * W_))


def diagonal_fn(x):
    return np.sum(np.diagonal(x) * W3)


def diagonal_offset(x):
    return np.sum(np.diagonal(x, 1) * W3)


def diagonal_3d(x):
    return np.sum(np.diagonal(x, offset=-1, axis1=1, axis2=2) * W22)


def m_diagonal(x):
    return np.sum(x.diagonal() * W3)


def kron_fn(a, b):
    return np.sum(np.sin(np.kron(a, b)))


def cross_fn(a, b):
    return np.sum(np.cross(a, b) * W43)


def cross_axis(a, b):
    return np.sum(np.cross(a, b, axis=0) * W34)


def fabs_fn(x):
    return np.sum(np.fabs(x) * W3)


def rollaxis_fn(x):
    return np.sum(np.rollaxis(x[None], 2) * W43[:, None, :]) + np.sum(
        np.rollaxis(x, 1, -1).T * W43)


def select_fn(x, y):
    """The value of the first condition that holds (ties: the first), else `default`."""
    return np.sum(np.select([x > 0.5, x < y[0], x > -0.2], [x * x, np.sin(x), y], y[1]) * W3)


def bincount_fn(x):
    return np.sum(np.bincount([2, 0, 2, 1, 4, 2], weights=x.ravel() ** 2, minlength=6) * W3.repeat(2))


def linspace_axis(a, b):
    return np.sum(np.linspace(a, b, 4, endpoint=False, axis=1) ** 2) + np.sum(
        np.linspace(a[0], b, num=3, axis=-1) * W3[:3])


def cross_axes(a, b):
    """The third positional argument is `axisa` (b's vectors stay on its last axis), and
    the result's vectors are put where `axisc` says."""
    return np.sum(np.cross(a, b, 0) * W43) + np.sum(np.cross(a.T, b.T, axisb=0, axisc=0) * W34)


def _crosses_2_vectors():
    """Whether this NumPy takes 2-vectors in np.cross (deprecated by 2.0, refused by 2.5)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            np.cross(np.ones(2), np.ones(2))
    except ValueError:
        return False
    return True


PLANAR_CROSS = _crosses_2_vectors()


def cross_planar(a, b):
    """2-vectors: their cross product is the z component alone (with a 3-vector, the
    2-vector is taken in the plane z = 0)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)   # (NumPy 2 deprecates 2-vectors)
        return np.sum(np.cross(a[:, :2], b[:2]) * W43[:, 0]) + np.sum(
            np.cross(a[:, :2], b) * W43)


def take_along_axis_fn(x):
    return np.sum(np.sin(np.take_along_axis(x, IDX33, axis=1)))


def take_along_axis_flat(x):
    return np.sum(np.sin(np.take_along_axis(x, IDX, axis=None)))


# -- factorizations and powers (eigh and eigvalsh of a symmetric matrix; functions of
# the vectors that do not depend on their signs) ---------------------------------------
def eigh_fn(a):
    w, v = np.linalg.eigh(a + a.T)
    return np.sum(w * W3) + np.sum(v * v * W33)


def eigh_batch(a):
    w, v = np.linalg.eigh(a + np.swapaxes(a, -1, -2), UPLO="U")
    return np.sum(w * W23) + np.sum(v[..., 0] * v[..., 1] * W23)


def eigvalsh_fn(a):
    return np.sum(np.linalg.eigvalsh(a + a.T) * W3)


def svd_fn(a):
    u, s, vt = np.linalg.svd(a, full_matrices=False)
    return np.sum(s * W3) + np.sum(u * u * W43) + np.sum(np.outer(u[:, 1], vt[1]) * W43)


def svd_wide(a):
    u, s, vt = np.linalg.svd(a, full_matrices=False)
    return np.sum(s * W3) + np.sum(vt * vt * W34) + np.sum(u[:, 0] * u[:, 2] * W3)


def svd_square_full(a):
    u, s, vt = np.linalg.svd(a)
    return np.sum(s * W3) + np.sum(u * u * W33) + np.sum(vt * vt * W33)


def svd_values(a):
    return np.sum(np.linalg.svd(a, compute_uv=False) * W3)


def svd_batch(a):
    r = np.linalg.svd(a, full_matrices=False)
    return np.sum(r.S * W23) + np.sum(r.U * r.U * W243)


def pinv_fn(a):
    return np.sum(np.linalg.pinv(a) * W34)


def pinv_batch(a):
    return np.sum(np.linalg.pinv(a) * W243)


def lstsq_vec(a, b):
    x, res, rank, s = np.linalg.lstsq(a, b)
    return np.sum(x * W3) + np.sum(res) * W_ + np.sum(s * W3)


def lstsq_mat(a, b):
    x, res, rank, s = np.linalg.lstsq(a, b)
    return np.sum(x * W32) + np.sum(res * W2)


def qr_fn(a):
    q, r = np.linalg.qr(a)
    return np.sum(q * W43) + np.sum(r * W33)


def qr_square_batch(a):
    q, r = np.linalg.qr(a)
    return np.sum(q * W233) + np.sum(r * W233)


def matrix_power_fn(a):
    return np.sum(np.linalg.matrix_power(a, 3) * W33)


def matrix_power_neg(a):
    return np.sum(np.linalg.matrix_power(a, -2) * W33) + np.sum(np.linalg.matrix_power(a, 1))


def slogdet_batch(a):
    sign, logdet = np.linalg.slogdet(a)
    return np.sum(logdet * W2)


# -- a few compositions -----------------------------------------------------------------
def logsumexp(x):
    m = np.max(x, axis=1, keepdims=True)
    return np.sum((m[:, 0] + np.log(np.sum(np.exp(x - m), axis=1))) * W3)


def softmax_xent(x):
    z = x - np.max(x, axis=1, keepdims=True)
    p = np.exp(z) / np.sum(np.exp(z), axis=1, keepdims=True)
    return -np.sum(W34 * np.log(p))


def mlp(w1, b1, w2, x):
    h = np.tanh(x @ w1 + b1)
    y = h @ w2
    return np.mean((y - 1.0) ** 2)


def gaussian_nll(a, x):
    S = a @ a.T + 3 * np.eye(3)
    L = np.linalg.cholesky(S)
    z = np.linalg.solve(L, x)
    return 0.5 * np.dot(z, z) + np.sum(np.log(np.diag(L)))


def uses_shape(x):
    n, m = x.shape
    return np.sum(x * W34) / n + x.size * np.sum(x[:, m - 1]) / x.ndim


# -- float32 ----------------------------------------------------------------------------
def f32_tanh(x):
    return np.sum(np.tanh(x) * W34f)


def f32_exp(x):
    return np.sum(np.exp(x) * W34f)


def f32_log(x):
    return np.sum(np.log(x) * W34f)


def f32_sum(x):
    return np.sum(x)


def f32_sum_ax0(x):
    return np.sum(np.sum(x, axis=0) * W4f)


def f32_mean_ax1(x):
    return np.sum(np.mean(x, axis=1) * W3f)


def f32_var(x):
    return np.var(x) * W_f


def f32_max_ax0(x):
    return np.sum(np.max(x, axis=0) * W4f)


def f32_m_sum(x):
    return (x * W34f).sum()


def f32_matmul(a, b):
    return np.sum((a @ b) * W35f)


def f32_dot(a, b):
    return np.sum(np.dot(a, b) * W35f)


def f32_T(x):
    return np.sum(x.T * W43f)


def f32_index(x):
    return np.sum(x[IDX] * W44f)


def f32_relu(x):
    return np.sum(np.maximum(x, 0.0) * W34f)


def f32_mul_py(x):
    return np.sum(x * 2.5 * W34f)


def f32_add_broadcast(x, y):
    return np.sum(np.add(x, y) * W34f)


def f32_reshape(x):
    return np.sum(x.reshape(2, 6) * W26f)


def f32_where(x):
    return np.sum(np.where(x > 0, x, 0.5 * x) * W34f)


def f32_astype64(x):
    return np.sum(x.astype(np.float64) * W34)


def f64_astype32(x):
    return np.sum(x.astype(np.float32) * W34)


def f32_min(x):
    return x.min() * W_f


def f32_prod_ax1(x):
    return np.sum(np.prod(x, axis=1) * W3f)


def f32_std_ax0(x):
    return np.sum(np.std(x, axis=0) * W4f)


def f32_cumsum(x):
    return np.sum(np.cumsum(x, axis=1) * W34f)


def f32_cumprod(x):
    return np.sum(np.cumprod(x) * W12f)


def f32_norm(x):
    return np.linalg.norm(x) * W_f


def f32_clip(x):
    return np.sum(np.clip(x, -0.5, 0.5) * W34f)


def f32_concat(a, b):
    return np.sum(np.concatenate([a, b]) * W7f)


def f32_stack(a, b):
    return np.sum(np.stack([a, b]) * W24f)


def f32_einsum(a, b):
    return np.sum(np.einsum("ij,jk->ik", a, b) * W35f)


def f32_tensordot(a, b):
    return np.sum(np.tensordot(a, b, axes=1) * W35f)


def f32_trace(x):
    return np.trace(x) * W_f


def f32_diag(v):
    return np.sum(np.diag(v) * W44f)


def f32_outer(a, b):
    return np.sum(np.outer(a, b) * W34f)


def f32_tile(x):
    return np.sum(np.tile(x, 2) * W8f)


def f32_repeat(x):
    return np.sum(np.repeat(x, 2) * W8f)


def f32_pad(x):
    return np.sum(np.pad(x, (2, 1)) * W7f)


def f32_inv(a):
    return np.sum(np.linalg.inv(a) * W33f)


def f32_det(a):
    return np.linalg.det(a) * W_f


def f32_solve(a, b):
    return np.sum(np.linalg.solve(a, b) * W3f)


def f32_cholesky(a):
    S = a @ a.T + 3 * np.eye(3, dtype=np.float32)
    return np.sum(np.linalg.cholesky(S) * W33f)


def f32_logaddexp(x, y):
    return np.sum(np.logaddexp(x, y) * W34f)


def f32_power(x, y):
    return np.sum(np.power(x, y) * W34f)


def f32_order_statistics(x):
    return (np.sum(np.median(x, axis=0) * W4f)
            + np.sum(np.quantile(x, [0.3, 0.6], axis=1) * W33f[:2])
            + np.sum(np.partition(x, 1) * W34f) + np.nanvar(x))


def f32_gradient(x):
    return np.sum(np.gradient(x, axis=1) * W34f) + np.sum(np.nancumprod(x, axis=0) * W34f)


def f32_bool_index(x):
    return np.sum(x[x > 0] ** 2)


def f32_array_of_0d(x0, x1):
    return np.sum(np.array([x0, x1]) * W2f)


# =======================================================================================
# Sample points
# =======================================================================================
S = Samples(20240607)
R = S.real
AWAY = S.away


def POS(shape):
    return S.uniform(shape, 0.3, 2.5)


def UNIT(shape):
    return S.uniform(shape, -0.8, 0.8)


def GT1(shape):
    return S.uniform(shape, 1.3, 3.0)


def TAN(shape):
    return S.uniform(shape, -1.2, 1.2)


def LOG1P(shape):
    return S.uniform(shape, -0.6, 2.0)


def NEAR1(shape):
    return S.away(shape, 0.5, 1.5)


def distinct_abs(shape):
    """Values whose absolute values are pairwise separated (for inf-norms)."""
    return S.distinct(shape, lo=0.3, hi=2.0) * S.rng.choice([-1.0, 1.0], shape)


def avoiding(shape, points, lo=-1.5, hi=1.5, margin=0.05):
    """Uniform samples at least `margin` away from every value in `points`
    (scalars, or arrays broadcasting against `shape`)."""
    x = S.uniform(shape, lo, hi)
    for _ in range(1000):
        bad = np.zeros(np.shape(x), dtype=bool)
        for p in points:
            bad = bad | (np.abs(np.asarray(x) - p) < margin)
        if not bad.any():
            return x
        fresh = S.uniform(shape, lo, hi)
        x = fresh if shape is None else np.where(bad, fresh, x)
    raise RuntimeError("could not draw sample points")


def well_conditioned(*shape):
    """Well-conditioned square matrices (non-singular, moderate entries)."""
    return 0.5 * R(shape) + 2.0 * np.eye(shape[-1])


#: xfail: {label: reason} for the labels that fail because of s2sad (filled from XFAIL).
Case = namedtuple("Case", "fn covers argsets rtol atol xfail")
#: Every check: (function, claimed primitives and spellings, {label: args}, ...).
CASES = []
#: float32 checks: gradients must be float32 (compared loosely).
F32_CASES = []


def M(name):
    """The array-method spelling `x.name(...)`."""
    return ("method", name)


def A(name):
    """The array-attribute spelling `x.name`."""
    return ("attr", name)


def case(fn, covers, argsets, rtol=RTOL, atol=ATOL, table=CASES):
    """Register checks of `fn` claiming to cover `covers`; `argsets` is {label: args} or
    one args tuple. Known failures are listed in XFAIL below."""
    if isinstance(argsets, tuple):
        argsets = {"": argsets}
    table.append(Case(fn, tuple(covers), argsets, rtol, atol, {}))


# -- elementwise, one argument: every ufunc at a Python float, 0-d, vector and matrix ---
UNARY_SHAPES = {"py": None, "0d": (), "vec": (4,), "mat": (3, 4)}
for _prim, _fn, _gen in [
        (np.negative, u_negative, R), (np.positive, u_positive, R), (np.abs, u_abs, AWAY),
        (np.sqrt, u_sqrt, POS), (np.cbrt, u_cbrt, AWAY), (np.square, u_square, R),
        (np.reciprocal, u_reciprocal, AWAY), (np.exp, u_exp, R), (np.expm1, u_expm1, R),
        (np.exp2, u_exp2, R), (np.log, u_log, POS), (np.log1p, u_log1p, LOG1P),
        (np.log2, u_log2, POS), (np.log10, u_log10, POS), (np.sin, u_sin, R),
        (np.cos, u_cos, R), (np.tan, u_tan, TAN), (np.arcsin, u_arcsin, UNIT),
        (np.arccos, u_arccos, UNIT), (np.arctan, u_arctan, R), (np.sinh, u_sinh, R),
        (np.cosh, u_cosh, R), (np.tanh, u_tanh, R), (np.arcsinh, u_arcsinh, R),
        (np.arccosh, u_arccosh, GT1), (np.arctanh, u_arctanh, UNIT),
        (np.deg2rad, u_deg2rad, R), (np.rad2deg, u_rad2deg, R),
        (np.real, real_fn, R), (A("real"), real_attr, R),
        (operator.neg, o_neg, R), (operator.pos, o_pos, R)]:
    case(_fn, [_prim], {k: (_gen(s),) for k, s in UNARY_SHAPES.items()})


# -- elementwise, two arguments, with broadcasting --------------------------------------
BINARY_SHAPES = {"mat-mat": ((3, 4), (3, 4)), "mat-row": ((3, 4), (4,)),
                 "col-row": ((3, 1), (1, 4)), "row-mat": ((4,), (3, 4)),
                 "3d-col": ((2, 1, 4), (3, 1)), "mat-py": ((3, 4), None),
                 "py-vec": (None, (4,)), "0d-mat": ((), (3, 4)), "0d-0d": ((), ()),
                 "py-py": (None, None)}


def _binary(gx, gy):
    return {k: (gx(sx), gy(sy)) for k, (sx, sy) in BINARY_SHAPES.items()}


def _binary_distinct():
    return {k: S.distinct(sx, sy) for k, (sx, sy) in BINARY_SHAPES.items()}


for _prim, _fn, _args in [
        (np.add, b_add, _binary(R, R)), (np.subtract, b_subtract, _binary(R, R)),
        (np.multiply, b_multiply, _binary(R, R)), (np.divide, b_divide, _binary(R, AWAY)),
        (np.power, b_power, _binary(POS, R)), (np.maximum, b_maximum, _binary_distinct()),
        (np.minimum, b_minimum, _binary_distinct()), (np.fmax, b_fmax, _binary_distinct()),
        (np.fmin, b_fmin, _binary_distinct()), (np.logaddexp, b_logaddexp, _binary(R, R)),
        (np.hypot, b_hypot, _binary(AWAY, AWAY)),
        (np.arctan2, b_arctan2, _binary(AWAY, AWAY)),
        (operator.add, o_add, _binary(R, R)), (operator.sub, o_sub, _binary(R, R)),
        (operator.mul, o_mul, _binary(R, R)), (operator.truediv, o_truediv, _binary(R, AWAY)),
        (operator.pow, o_pow, _binary(POS, R))]:
    case(_fn, [_prim], _args)


def _mod_args():
    out = {}
    for label, (sx, sy) in {"mat-mat": ((3, 4), (3, 4)), "mat-row": ((3, 4), (4,)),
                            "mat-py": ((3, 4), None)}.items():
        y = AWAY(sy)
        k = S.rng.integers(-3, 3, sx) + S.uniform(sx, 0.2, 0.8)
        out[label] = (y * k, y)
    return out


case(o_mod, [operator.mod], _mod_args())
case(o_pow_const, [operator.pow], {k: (R(s),) for k, s in UNARY_SHAPES.items()})
case(o_square_const, [operator.pow], {k: (R(s),) for k, s in UNARY_SHAPES.items()})
case(power_const_exponent, [np.power], {k: (R(s),) for k, s in UNARY_SHAPES.items()})
case(power_const_base, [np.power], {k: (R(s),) for k, s in UNARY_SHAPES.items()})


# -- where, clip, maximum as relu -------------------------------------------------------
case(where_gt0, [np.where], {"mat-mat": (AWAY((3, 4)), R((3, 4))),
                             "mat-row": (AWAY((3, 4)), R((4,))),
                             "mat-py": (AWAY((3, 4)), R(None))})
case(where_mask, [np.where], {"mat-mat": (R((3, 4)), R((3, 4))),
                              "row-mat": (R((4,)), R((3, 4))),
                              "py-mat": (R(None), R((3, 4))), "0d-col": (R(()), R((3, 1)))})
case(where_const_branch, [np.where], (AWAY((3, 4)),))
case(where_scalar_branch, [np.where], {"py": (AWAY((3, 4)), R(None)),
                                       "0d": (AWAY((3, 4)), R(()))})
_CLIP = avoiding((3, 4), (-0.5, 0.5))
case(clip_fn, [np.clip], {"mat": (_CLIP,), "vec": (avoiding((4,), (-0.5, 0.5)),),
                          "py": (avoiding(None, (-0.5, 0.5)),)})
case(clip_kw, [np.clip], (_CLIP,))
case(clip_upper_only, [np.clip], (_CLIP,))
case(clip_method, [M("clip")], (_CLIP,))
_LO = -0.5 + S.uniform((3, 4), -0.1, 0.1)
_HI = 0.5 + S.uniform((3, 4), -0.1, 0.1)
case(clip_array_bounds, [np.clip], (avoiding((3, 4), (_LO, _HI)), _LO, _HI))
case(clip_x_broadcast, [np.clip], (avoiding((4,), list(LO34) + [0.5], lo=-1.2, hi=1.0),))
case(relu, [np.maximum], (AWAY((3, 4)),))


# -- reductions, each with axis None, 0, 1, (0, 1), -1, (0, 2) and keepdims -------------
_REDUCTIONS = {
    np.sum: ("sum", R), np.mean: ("mean", R), np.prod: ("prod", NEAR1),
    np.max: ("max", S.distinct), np.min: ("min", S.distinct),
    np.amax: ("amax", S.distinct), np.amin: ("amin", S.distinct),
    np.var: ("var", R), np.std: ("std", R)}
for _prim, (_name, _gen) in _REDUCTIONS.items():
    _all = {"vec": (_gen((4,)),), "mat": (_gen((3, 4)),), "3d": (_gen((2, 3, 4)),)}
    if _prim is not np.std:     # std is not differentiable at a single point
        _all.update({"0d": (_gen(()),), "py": (_gen(None),)})
    case(globals()[f"{_name}_all"], [_prim], _all)
    for _suffix in ("ax0", "ax1", "ax01", "ax0_keep", "ax1_keep", "all_keep", "axneg1_pos"):
        case(globals()[f"{_name}_{_suffix}"], [_prim], (_gen((3, 4)),))
    for _suffix in ("3d_ax02", "3d_ax1_keep"):
        case(globals()[f"{_name}_{_suffix}"], [_prim], (_gen((2, 3, 4)),))
case(sum_pos_axis, [np.sum], (R((3, 4)),))
case(sum_dtype, [np.sum], (R((3, 4)),))
case(mean_dtype, [np.mean], (R((3, 4)),))
for _fn in (var_ddof1, var_ax0_ddof1, var_ax1_keep_ddof2):
    case(_fn, [np.var], (R((3, 4)),))
for _fn in (std_ddof1, std_ax0_ddof1, std_ax1_keep_ddof2):
    case(_fn, [np.std], (R((3, 4)),))
for _fn in (cumsum_flat, cumsum_ax0, cumsum_ax1):
    case(_fn, [np.cumsum], (R((3, 4)),))
case(cumsum_vec, [np.cumsum], (R((4,)),))
case(cumulative_sum_ax0, [np.cumulative_sum], (R((3, 4)),))
case(cumulative_sum_vec, [np.cumulative_sum], (R((4,)),))
case(astype_function, [np.astype], (R((3, 4)),))
for _fn in (cumprod_flat, cumprod_ax0, cumprod_ax1):
    case(_fn, [np.cumprod], (S.uniform((3, 4), 0.5, 1.5),))
case(cumprod_vec, [np.cumprod], (S.uniform((4,), 0.5, 1.5),))
# exact zeros: the adjoint divides by nothing
_ZEROS34 = S.uniform((3, 4), 0.5, 1.5) * (np.arange(12).reshape(3, 4) % 5 != 2)
for _fn in (cumprod_flat, cumprod_ax0, cumprod_ax1):
    case(_fn, [np.cumprod], {"zeros": (_ZEROS34,)})
case(cumprod_vec, [np.cumprod], {"zeros": (np.array([0.7, 0.0, 1.2, 0.0]),)})



# -- construction from values: differentiated fills and bounds ---------------------------
def full_fill(v):
    return np.sum(np.full((2, 3), v) * np.arange(1.0, 7.0).reshape(2, 3))


def full_row(v):
    return np.sum(np.full((2, 3), v) ** 2)


def full_like_fill(a, v):
    return np.sum(np.full_like(a, v) * a)


def linspace_ends(a, b):
    return np.sum(np.linspace(a, b, 7) ** 2)


def linspace_open(a, b):
    return np.sum(np.sin(np.linspace(a, b, 5, endpoint=False)))


def linspace_rows(a, b):
    return np.sum(np.linspace(a, b, 4) ** 3)


def linspace_dtype(a, b):
    # (integer samples are floored: no derivative)
    return np.sum(np.linspace(a, b, 5, dtype=np.float64) ** 2) + np.sum(
        np.linspace(a, b, 4, endpoint=False, dtype=int) * a) + np.sum(
        np.linspace(a, b, num=3, axis=-1, dtype=np.float64) * W3)


def arange_start_step(a, b):
    return np.sum(np.arange(a, 4.0, b) ** 2)


case(full_fill, [np.full], {"py": (R(None),), "0d": (R(()),)})
case(full_row, [np.full], (R((3,)),))
case(full_like_fill, [np.full_like], {"py": (R((2, 3)), R(None)), "row": (R((2, 3)), R((3,)))})
case(linspace_ends, [np.linspace], (R(None), R(None)))
case(linspace_open, [np.linspace], (R(None), R(None)))
case(linspace_rows, [np.linspace], (R((3,)), R((3,))))
case(linspace_dtype, [np.linspace], {"py": (S.uniform(None, 1.1, 1.4), S.uniform(None, 2.3, 2.6)), "vec": (S.uniform((3,), 1.1, 1.4), S.uniform((3,), 2.3, 2.6))})
case(arange_start_step, [np.arange], (S.uniform(None, 0.25, 0.3), S.uniform(None, 0.68, 0.72)))

# -- reductions and friends as array methods --------------------------------------------
for _fn, _claim, _gen in [
        (m_sum, "sum", R), (m_sum_ax1, "sum", R), (m_sum_expr, "sum", R),
        (m_mean, "mean", R), (m_mean_ax0_keep, "mean", R), (m_prod, "prod", NEAR1),
        (m_prod_ax1, "prod", NEAR1), (m_max, "max", S.distinct),
        (m_max_ax0, "max", S.distinct), (m_min, "min", S.distinct),
        (m_min_ax1, "min", S.distinct), (m_var, "var", R), (m_var_ddof1_ax0, "var", R),
        (m_std, "std", R), (m_std_ax1, "std", R), (m_cumsum, "cumsum", R),
        (m_cumsum_flat, "cumsum", R), (m_copy, "copy", R), (m_astype, "astype", R),
        (m_astype_builtin, "astype", R), (m_astype_str, "astype", R),
        (m_repeat, "repeat", R)]:
    case(_fn, [M(_claim)], (_gen((3, 4)),))
case(m_cumprod, [M("cumprod")], (S.uniform((3, 4), 0.5, 1.5),))
case(m_cumprod_ax0, [M("cumprod")], (S.uniform((3, 4), 0.5, 1.5),))
case(m_trace, [M("trace")], (R((3, 3)),))
case(m_clip, [M("clip")], (_CLIP,))
case(m_repeat_flat, [M("repeat")], (R((4,)),))
# integer casts are piecewise constant: zero derivative (samples away from integers)
case(m_astype_int, [M("astype")], (S.rng.integers(-3, 3, (3, 4)) + S.uniform((3, 4), 0.2, 0.8),))


# -- linear algebra ---------------------------------------------------------------------
case(matmul_mm, [operator.matmul], (R((3, 4)), R((4, 5))))
case(matmul_vm, [operator.matmul], (R((4,)), R((4, 5))))
case(matmul_mv, [operator.matmul], (R((3, 4)), R((4,))))
case(matmul_vv, [operator.matmul], (R((4,)), R((4,))))
case(matmul_batch_m, [operator.matmul], {"3d@2d": (R((2, 3, 4)), R((4, 5))),
                                         "2d@3d": (R((3, 4)), R((2, 4, 5)))})
case(matmul_batch_batch, [operator.matmul], {"3d@3d": (R((2, 3, 4)), R((2, 4, 5))),
                                             "1x@2x": (R((1, 3, 4)), R((2, 4, 5)))})
case(matmul_v_batch, [operator.matmul], (R((4,)), R((2, 4, 5))))
case(matmul_batch_v, [operator.matmul], (R((2, 3, 4)), R((4,))))
case(np_matmul_mm, [np.matmul], (R((3, 4)), R((4, 5))))
case(np_matmul_mv, [np.matmul], (R((3, 4)), R((4,))))
case(np_matmul_batch, [np.matmul], {"3d@2d": (R((2, 3, 4)), R((4, 5))),
                                    "1x@2x": (R((1, 3, 4)), R((2, 4, 5)))})
case(dot_vv, [np.dot], (R((4,)), R((4,))))
case(dot_mv, [np.dot], (R((3, 4)), R((4,))))
case(dot_vm, [np.dot], (R((4,)), R((4, 5))))
case(dot_mm, [np.dot], (R((3, 4)), R((4, 5))))
case(dot_3d_v, [np.dot], (R((2, 3, 4)), R((4,))))
case(dot_3d_m, [np.dot], (R((2, 3, 4)), R((4, 5))))
case(dot_3d_3d, [np.dot], (R((2, 3, 4)), R((5, 4, 2))))
case(dot_m_3d, [np.dot], (R((3, 4)), R((2, 4, 5))))
case(dot_v_3d, [np.dot], (R((4,)), R((2, 4, 5))))
case(dot_scalar, [np.dot], {"0d-mat": (R(()), R((3, 4))), "py-mat": (R(None), R((3, 4))),
                            "mat-0d": (R((3, 4)), R(()))})
case(m_dot, [M("dot")], (R((3, 4)), R((4, 5))))
case(m_dot_chain, [M("dot"), A("T")], (R((3, 4)), R((3, 5))))
case(inner_vv, [np.inner], (R((4,)), R((4,))))
case(inner_mv, [np.inner], (R((3, 4)), R((4,))))
case(inner_mm, [np.inner], (R((3, 4)), R((2, 4))))
case(inner_3d, [np.inner], (R((2, 3, 4)), R((5, 4))))
case(outer_vv, [np.outer], (R((3,)), R((4,))))
case(outer_mv, [np.outer], (R((2, 2)), R((3,))))
case(tensordot_ax1, [np.tensordot], (R((3, 4)), R((4, 5))))
case(tensordot_ax2, [np.tensordot], (R((2, 3, 4)), R((3, 4, 5))))
case(tensordot_default, [np.tensordot], (R((2, 3, 4)), R((3, 4, 5))))
case(tensordot_pairs, [np.tensordot], (R((3, 4, 2)), R((4, 3, 5))))
case(tensordot_ax0, [np.tensordot], (R((3,)), R((4,))))
case(tensordot_neg_axes, [np.tensordot], (R((3, 4)), R((4, 5))))
case(einsum_ij_jk, [np.einsum], (R((3, 4)), R((4, 5))))
case(einsum_ij_i, [np.einsum], (R((3, 4)),))
case(einsum_i_i, [np.einsum], (R((4,)), R((4,))))
case(einsum_transpose, [np.einsum], (R((3, 4)),))
case(einsum_implicit, [np.einsum], (R((3, 4)), R((4, 5))))
case(einsum_batch, [np.einsum], (R((2, 3, 4)), R((2, 4, 5))))
case(einsum_three, [np.einsum], (R((3,)), R((3, 4)), R((4,))))
case(einsum_outer, [np.einsum], (R((3,)), R((4,))))
case(einsum_diag, [np.einsum], (R((3, 3)),))
case(einsum_ellipsis, [np.einsum], (R((2, 3, 4)), R((4, 5))))
case(einsum_trace, [np.einsum], (R((3, 3)),))
case(einsum_diagonal_times, [np.einsum], (R((3, 3, 4)), R((4,))))
case(einsum_broadcast_ellipsis, [np.einsum], (R((1, 3, 4)), R((2, 4, 5))))
case(einsum_implicit_ellipsis, [np.einsum], (R((2, 3, 4)), R((4,))))
case(trace_sq, [np.trace], (R((3, 3)),))
case(trace_offset, [np.trace], (R((3, 4)),))
case(trace_neg_offset, [np.trace], (R((4, 3)),))
case(trace_3d_leading, [np.trace], (R((3, 3, 2)),))
case(trace_3d_axes, [np.trace], (R((2, 3, 3)),))
case(trace_axes_swapped, [np.trace], (R((3, 2, 3)),))
case(trace_axes_swapped_offset, [np.trace], (R((3, 2, 4)),))
case(diag_v2m, [np.diag], (R((4,)),))
case(diag_v2m_k1, [np.diag], (R((3,)),))
case(diag_v2m_km1, [np.diag], (R((3,)),))
case(diag_m2v, [np.diag], {"square": (R((3, 3)),), "wide": (R((3, 4)),)})
case(diag_m2v_k1, [np.diag], (R((3, 4)),))
case(diag_m2v_km1, [np.diag], (R((3, 4)),))
case(norm_vec, [np.linalg.norm], (R((4,)),))
case(norm_vec_ord2, [np.linalg.norm], (R((4,)),))
case(norm_fro_default, [np.linalg.norm], (R((3, 4)),))
case(norm_fro, [np.linalg.norm], (R((3, 4)),))
case(norm_rows, [np.linalg.norm], (R((3, 4)),))
case(norm_cols_keep, [np.linalg.norm], (R((3, 4)),))
case(norm_vec_ord1, [np.linalg.norm], (AWAY((4,)),))
case(norm_vec_ord3, [np.linalg.norm], (AWAY((4,)),))
case(norm_vec_inf, [np.linalg.norm], (distinct_abs((4,)),))
case(norm_vec_neg_inf, [np.linalg.norm], (distinct_abs((4,)),))
case(norm_rows_ord1, [np.linalg.norm], (AWAY((3, 4)),))
case(solve_vec, [np.linalg.solve], (well_conditioned(3, 3), R((3,))))
case(solve_mat, [np.linalg.solve], (well_conditioned(3, 3), R((3, 2))))
case(solve_batch, [np.linalg.solve], (well_conditioned(2, 3, 3), R((2, 3, 2))))
case(solve_broadcast, [np.linalg.solve], (well_conditioned(3, 3), R((2, 3, 2))))
case(inv_fn, [np.linalg.inv], (well_conditioned(3, 3),))
case(inv_batch, [np.linalg.inv], (well_conditioned(2, 3, 3),))
_NEGDET = well_conditioned(3, 3)[[1, 0, 2]]
case(det_fn, [np.linalg.det], {"pos": (well_conditioned(3, 3),), "neg": (_NEGDET,)})
case(det_batch, [np.linalg.det], (well_conditioned(2, 3, 3),))
case(slogdet_unpack, [np.linalg.slogdet], {"pos": (well_conditioned(3, 3),), "neg": (_NEGDET,)})
case(slogdet_index, [np.linalg.slogdet], {"pos": (well_conditioned(3, 3),), "neg": (_NEGDET,)})
case(cholesky_fn, [np.linalg.cholesky], (R((3, 3)),))
case(cholesky_logdet, [np.linalg.cholesky], (R((3, 3)),))
case(cholesky_batch, [np.linalg.cholesky], (R((2, 3, 3)),))


# -- shapes -----------------------------------------------------------------------------
for _fn, _claims, _shape in [
        (reshape_fn, [np.reshape], (3, 4)), (reshape_fn_flat, [np.reshape], (3, 4)),
        (reshape_fn_shape_kw, [np.reshape], (3, 4)),
        (m_reshape_args, [M("reshape")], (3, 4)), (m_reshape_tuple, [M("reshape")], (3, 4)),
        (m_reshape_flat, [M("reshape")], (3, 4)), (m_reshape_3, [M("reshape")], (3, 4)),
        (m_reshape_4, [M("reshape")], (3, 4)),
        (ravel_fn, [np.ravel], (3, 4)), (m_ravel, [M("ravel")], (3, 4)),
        (m_flatten, [M("flatten")], (3, 4)), (m_view, [M("view")], (3, 4)),
        (squeeze_fn, [np.squeeze], (3, 1, 4)), (squeeze_axis, [np.squeeze], (3, 1, 4)),
        (m_squeeze, [M("squeeze")], (3, 1, 4)),
        (expand_dims_0, [np.expand_dims], (4,)),
        (expand_dims_tuple, [np.expand_dims], (3, 4)),
        (transpose_fn, [np.transpose], (3, 4)), (transpose_axes, [np.transpose], (2, 3, 4)),
        (transpose_axes_kw, [np.transpose], (2, 3, 4)),
        (transpose_neg_axes, [np.transpose], (2, 3, 4)),
        (m_transpose_neg, [M("transpose")], (2, 3, 4)),
        (attr_T, [A("T")], (3, 4)), (attr_T_3d, [A("T")], (2, 3, 4)),
        (m_transpose, [M("transpose")], (3, 4)), (m_transpose_2, [M("transpose")], (3, 4)),
        (m_transpose_3, [M("transpose")], (2, 3, 4)),
        (m_transpose_tuple, [M("transpose")], (2, 3, 4)),
        (m_transpose_4, [M("transpose")], (3, 2, 2, 1)),
        (swapaxes_fn, [np.swapaxes], (2, 3, 4)), (m_swapaxes, [M("swapaxes")], (2, 3, 4)),
        (moveaxis_fn, [np.moveaxis], (2, 3, 4)), (moveaxis_lists, [np.moveaxis], (2, 3, 4)),
        (broadcast_to_0d, [np.broadcast_to], ()),
        (flip_all, [np.flip], (3, 4)), (flip_0, [np.flip], (3, 4)),
        (flip_axis1, [np.flip], (3, 4)), (flip_3d, [np.flip], (2, 3, 4)),
        (roll_vec, [np.roll], (4,)), (roll_axis, [np.roll], (3, 4)),
        (roll_flat, [np.roll], (3, 4)), (roll_tuple, [np.roll], (3, 4)),
        (tile_vec, [np.tile], (4,)), (tile_rows, [np.tile], (3, 4)),
        (tile_vec_2d, [np.tile], (4,)), (tile_short_reps, [np.tile], (3, 4)),
        (repeat_flat, [np.repeat], (3, 4)), (repeat_axis0, [np.repeat], (3, 4)),
        (repeat_array, [np.repeat], (3, 4)),
        (pad_int, [np.pad], (3, 4)), (pad_pairs, [np.pad], (3, 4)), (pad_vec, [np.pad], (4,)),
        (triu_fn, [np.triu], (3, 4)), (triu_k1, [np.triu], (3, 4)),
        (triu_km1, [np.triu], (3, 4)), (tril_fn, [np.tril], (3, 4)),
        (tril_k1, [np.tril], (3, 4)), (tril_km1, [np.tril], (3, 4)),
        (array_copy, [np.array], (3, 4)), (asarray_fn, [np.asarray], (3, 4)),
        (copy_fn, [np.copy], (3, 4))]:
    case(_fn, _claims, (R(_shape),))
case(broadcast_to_row, [np.broadcast_to], {"row": (R((4,)),), "col": (R((3, 1)),),
                                           "0d": (R(()),), "py": (R(None),)})
case(repeat_0d, [np.repeat], {"0d": (R(()),), "py": (R(None),)})
# sorting permutes: distinct values, so no step changes the order
case(sort_last, [np.sort], (S.distinct((3, 4)),))
case(sort_axis0, [np.sort], (S.distinct((3, 4)),))
case(sort_flat, [np.sort], (S.distinct((3, 4)),))
case(sort_vec, [np.sort], (S.distinct((4,)),))


# -- building arrays from pieces --------------------------------------------------------
case(concat_vec, [np.concatenate], (R((3,)), R((4,))))
case(concat_axis1, [np.concatenate], (R((3, 2)), R((3, 4))))
case(concat_tuple_repeat, [np.concatenate], (R((2, 4)), R((3, 4))))
case(concat_neg_axis, [np.concatenate], (R((2, 3)), R((2, 2))))
case(concat_flat, [np.concatenate], (R((2, 2)), R((2, 4))))
case(stack_fn, [np.stack], (R((4,)), R((4,))))
case(stack_axis1, [np.stack], (R((3, 4)), R((3, 4))))
case(stack_tuple_neg, [np.stack], (R((4,)), R((4,))))
case(hstack_vec, [np.hstack], (R((3,)), R((4,))))
case(hstack_mat, [np.hstack], (R((3, 2)), R((3, 4))))
case(hstack_scalars, [np.hstack], {"0d": (R(()), R(())), "py": (R(None), R(None))})
case(vstack_vec, [np.vstack], (R((4,)), R((4,))))
case(vstack_mat, [np.vstack], (R((2, 4)), R((3, 4))))
if hasattr(np, "row_stack"):       # (removed by NumPy 2.5)
    case(row_stack_fn, [np.row_stack], (R((2, 4)), R((3, 4))))
_SCALARS = {"py": (R(None), R(None)), "0d": (R(()), R(()))}
case(array_scalars, [np.array], _SCALARS)
case(array_exprs, [np.array], _SCALARS)
case(array_nested, [np.array], _SCALARS)
case(array_dtype, [np.array], _SCALARS)
case(array_vectors, [np.array], (R((4,)), R((4,))))
case(array_with_const, [np.array], _SCALARS)
case(asarray_list, [np.asarray], _SCALARS)


# -- indexing (operator.getitem on arrays) ----------------------------------------------
for _fn, _gen, _shape in [
        (ix_slice, R, (3, 4)), (ix_column, R, (3, 4)), (ix_row, R, (3, 4)),
        (ix_int_slice, R, (3, 4)), (ix_step, R, (3, 4)), (ix_elements, R, (3, 4)),
        (ix_vec_element, R, (4,)), (ix_repeated, R, (3, 4)), (ix_repeated_cols, R, (3, 4)),
        (ix_pairs, R, (3, 4)), (ix_list, R, (3, 4)), (ix_slice_and_array, R, (3, 4)),
        (ix_bool, AWAY, (3, 4)), (ix_bool_inline, AWAY, (3, 4)),
        (ix_mask_const, R, (3, 4)), (ix_none, R, (3, 4)), (ix_none_mid, R, (3, 4)),
        (ix_ellipsis, R, (2, 3, 4)), (ix_0d, R, ()),
        (ix_argmax, S.distinct, (4,)), (ix_where_one_arg, AWAY, (3, 4)),
        (ix_reverse, R, (3, 4))]:
    case(_fn, [operator.getitem], (_gen(_shape),))


# -- more elementwise functions, reductions and scans (tests/test_rules_modes.py checks
# them in vjp, jvp and hessian) ---------------------------------------------------------
for _prim, _fn, _gen in [(np.degrees, u_degrees, R), (np.radians, u_radians, R),
                         (np.sinc, u_sinc, R), (np.nan_to_num, u_nan_to_num, R)]:
    case(_fn, [_prim], {k: (_gen(s),) for k, s in UNARY_SHAPES.items()})
case(nan_to_num_kw, [np.nan_to_num], (R((3, 4)),))
case(float64_fn, [np.float64], {"py": (R(None),), "vec": (R((4,)),)})
case(real_if_close_fn, [np.real_if_close], {"py": (R(None),), "vec": (R((4,)),)})
case(complex128_fn, [np.complex128], {"py": (R(None),), "vec": (R((4,)),)})
# (float32's rounding limits what differences of it can tell)
case(float32_fn, [np.float32], {"py": (R(None),), "vec": (R((4,)),)}, rtol=2e-3, atol=1e-4)
case(longdouble_fn, [np.longdouble, np.float64], {"py": (R(None),), "vec": (R((4,)),)})
case(b_logaddexp2, [np.logaddexp2], _binary(R, R))
case(b_remainder, [np.remainder], _mod_args())
case(b_fmod, [np.fmod], _mod_args())
case(m_clip_min, [M("clip")], (_CLIP,))
case(clip_min_max_kw, [np.clip], (_CLIP,))
case(m_item, [M("item")], {"1": (R((1,)),), "1x1": (R((1, 1)),)})
for _fn in (nansum_ax0, nansum_all):
    case(_fn, [np.nansum], (R((3, 4)),))
for _fn in (nanmean_ax1_keep, nanmean_all):
    case(_fn, [np.nanmean], (R((3, 4)),))
case(nanmax_ax0, [np.nanmax], (S.distinct((3, 4)),))
case(nanmin_all, [np.nanmin], (S.distinct((3, 4)),))
case(ptp_ax1, [np.ptp], (S.distinct((3, 4)),))
case(ptp_all, [np.ptp], {"vec": (S.distinct((4,)),), "mat": (S.distinct((3, 4)),)})
case(diff_fn, [np.diff], (R((3, 4)),))
case(diff_n2_ax0, [np.diff], (R((3, 4)),))
case(average_ax0, [np.average], (R((3, 4)),))
case(average_weights, [np.average], (R((3, 4)), POS((4,))))
case(average_full_weights, [np.average], (R((3, 4)), POS((3, 4))))
case(trapezoid_fn, [np.trapezoid], (R((3, 4)),))
case(trapezoid_x, [np.trapezoid], {"vec": (R((3, 4)), R((4,))), "mat": (R((3, 4)), R((3, 4)))})
case(trapezoid_dx, [np.trapezoid], (R((3, 4)), 0.7))
case(polyval_fn, [np.polyval], {"vec": (R((3,)), R((3, 4))), "py": (R((4,)), R(None))})
case(convolve_fn, [np.convolve], {"4-4": (R((4,)), R((4,))), "3-5": (R((3,)), R((5,)))})
case(convolve_same, [np.convolve], {"4-3": (R((4,)), R((3,))), "2-4": (R((2,)), R((4,)))})
case(correlate_fn, [np.correlate], {"4-4": (R((4,)), R((4,))), "2-6": (R((2,)), R((6,)))})
case(correlate_valid, [np.correlate], (R((4,)), R((3,))))

# -- order statistics (at pairwise distinct values: no ties), the other nan* functions,
# np.gradient and np.interp (tests/test_rules_modes.py checks them in vjp and jvp) ------
case(median_all, [np.median], {"odd": (S.distinct((3, 3)),), "even": (S.distinct((3, 4)),)})
case(median_ax1_keep, [np.median], (S.distinct((3, 4)),))
case(median_ax0, [np.median], {"odd": (S.distinct((3, 4)),), "even": (S.distinct((4, 4)),)})
# (q (n - 1) between two samples: the derivative in q exists)
case(quantile_q, [np.quantile], {"py": (S.distinct((3, 4)), 0.37), "0d": (S.distinct((5,)),
                                                                            np.array(0.6))})
case(quantile_vector_q, [np.quantile], (S.distinct((3, 4)), np.array([0.1, 0.55])))
case(quantile_methods, [np.quantile], (S.distinct((3, 4)),))
case(percentile_fn, [np.percentile], (S.distinct((3, 4)), 41.0))
case(nanmedian_ax1, [np.nanmedian], (S.distinct((3, 4)),))
case(nanquantile_fn, [np.nanquantile], (S.distinct((3, 4)), 0.3))
case(nanpercentile_fn, [np.nanpercentile], (S.distinct((3, 4)),))
case(nanprod_ax0, [np.nanprod], (R((3, 4)),))
case(nanprod_all, [np.nanprod], (R((3, 4)),))
case(nanvar_ax1_ddof, [np.nanvar], (R((3, 4)),))
case(nanvar_all, [np.nanvar], (R((3, 4)),))
case(nanstd_ax0_keep, [np.nanstd], (R((3, 4)),))
case(nancumsum_fn, [np.nancumsum], (R((3, 4)),))
case(nancumprod_fn, [np.nancumprod], (R((3, 4)),))
case(nancumprod_flat, [np.nancumprod], (R((3, 4)),))
case(gradient_fn, [np.gradient], {"3x4": (R((3, 4)),), "2x2": (R((2, 2)),)})
case(gradient_spacing, [np.gradient], (R((3, 4)),))
case(gradient_coordinates, [np.gradient], (R((5,)),))
case(gradient_two_spacings, [np.gradient], (R((3, 4)),))
case(interp_fn, [np.interp], (avoiding((7,), XP5, -2.2, 2.2), R((5,))))
case(interp_left_right, [np.interp], (X7, R((5,)), R(None), R(None)))
case(interp_scalar, [np.interp], {"inside": (0.3, R((5,))), "outside": (1.9, R((5,)))})
case(conjugate_fn, [np.conjugate], (R((3, 4)),))
case(m_conj, [M("conj"), M("conjugate")], (R((3, 4)),))
case(partition_fn, [np.partition], (S.distinct((3, 4)),))
case(partition_axis0, [np.partition], (S.distinct((3, 4)),))
case(partition_flat, [np.partition], (S.distinct((3, 4)),))
case(dsplit_fn, [np.dsplit], (R((2, 3, 4)),))
case(meshgrid_xy, [np.meshgrid], (R((4,)), R((3,))))
case(meshgrid_ij_sparse, [np.meshgrid], (R((2,)), R((3,)), R((4,))))
case(meshgrid_one, [np.meshgrid], (R((4,)),))


# -- matrix norms (at distinct singular values and sums), ufunc methods, the interleaved
# einsum and optimize= (tests/test_rules_modes.py checks them in vjp and jvp) ------------
case(norm_nuc, [np.linalg.norm], {"3x4": (R((3, 4)),), "4x2": (R((4, 2)),)})
case(norm_mat_2, [np.linalg.norm], {"3x4": (R((3, 4)),), "3x3": (R((3, 3)),)})
case(norm_mat_1_inf, [np.linalg.norm], (AWAY((3, 4)),))
case(norm_mat_axes, [np.linalg.norm], (AWAY((2, 3, 4)),))
case(outer_arith, [np.add.outer, np.subtract.outer, np.multiply.outer, np.divide.outer],
     {"vec-vec": (R((3,)), AWAY((4,))), "mat-vec": (R((2, 3)), AWAY((2,))),
      "py-vec": (R(None), AWAY((3,)))})
case(outer_power, [np.power.outer], {"vec-vec": (POS((3,)), R((4,))),
                                     "vec-mat": (POS((2,)), R((2, 3)))})
case(outer_extrema, [np.maximum.outer, np.minimum.outer, np.fmax.outer, np.fmin.outer],
     {"vec-vec": S.distinct((3,), (4,)), "mat-vec": S.distinct((2, 2), (3,))})
case(outer_smooth, [np.logaddexp.outer, np.logaddexp2.outer, np.hypot.outer,
                    np.arctan2.outer], {"vec-vec": (AWAY((3,)), AWAY((4,))),
                                        "vec-mat": (AWAY((2,)), AWAY((2, 3)))})
case(outer_remainders, [np.remainder.outer, np.fmod.outer],
     (np.array([0.3, -0.45, 0.8]), np.array([1.7, 2.3, -3.1, 2.9])))
case(ureduce_sums, [np.add.reduce, np.multiply.reduce], (R((3, 4)),))
case(ureduce_extrema, [np.maximum.reduce, np.minimum.reduce, np.fmax.reduce, np.fmin.reduce],
     (S.distinct((3, 4)),))
case(logaddexp_reduce, [np.logaddexp.reduce, np.logaddexp2.reduce], (R((3, 4)),))
case(uaccumulate, [np.add.accumulate, np.multiply.accumulate], (R((3, 4)),))
case(uaccumulate_extrema, [np.maximum.accumulate, np.minimum.accumulate, np.fmax.accumulate,
                          np.fmin.accumulate], (DISTINCT34,))
case(einsum_interleaved, [np.einsum], (R((3, 4)), R((3, 5))))
case(einsum_interleaved_implicit, [np.einsum], (R((3, 4)), R((4, 5))))
case(einsum_interleaved_one, [np.einsum], (R((3, 3)),))
case(einsum_interleaved_three, [np.einsum], (R((3,)), R((3, 4)), R((4,))))
case(einsum_optimize, [np.einsum], (R((3,)), R((3, 4)), R((4,))))
case(einsum_four, [np.einsum], (R((3,)), R((3, 4)), R((2, 5))))

# -- more shape and layout functions (tests/test_rules_modes.py checks them in vjp and jvp)
case(split_halves, [np.split], (R((3, 4)),))
case(split_at, [np.split], (R((5,)),))
case(array_split_fn, [np.array_split], (R((4,)),))
case(split_unordered, [np.split], (R((6,)),))
case(multi_dot_chain, [np.linalg.multi_dot], (R((2, 3)), R((3, 4)), R((4, 5))))
case(multi_dot_vectors, [np.linalg.multi_dot], (R((3,)), R((3, 4)), R((3,))))
case(hsplit_fn, [np.hsplit], {"mat": (R((3, 4)),), "vec": (R((4,)),)})
case(vsplit_fn, [np.vsplit], (R((3, 4)),))
case(append_flat, [np.append], {"mat-vec": (R((2, 3)), R((4,))), "vec-py": (R((3,)), R(None))})
case(append_axis0, [np.append], (R((2, 3)), R((1, 3))))
case(delete_flat, [np.delete], (R((2, 3)),))
case(delete_axis, [np.delete], (R((3, 4)),))
case(minor_det, [np.delete], (R((3, 3)),))
case(insert_flat, [np.insert], {"vec-vec": (R((4,)), R((2,))), "mat-py": (R((2, 3)), R(None))})
case(insert_row, [np.insert], {"row": (R((2, 3)), R((3,))), "number": (R((2, 3)), R(None))})
case(flipud_fn, [np.flipud], (R((3, 4)),))
case(fliplr_fn, [np.fliplr], (R((3, 4)),))
case(rot90_fn, [np.rot90], (R((3, 4)),))
case(rot90_k2_axes, [np.rot90], (R((2, 3, 4)),))
case(roll_axes, [np.roll], (R((3, 4)),))
case(pad_constant, [np.pad], {"py": (R((3, 4)), R(None)), "0d": (R((4,)), R(()))})
case(pad_modes, [np.pad], (R((3, 4)),))
case(column_stack_fn, [np.column_stack], (R((3,)), R((3, 2))))
case(atleast_fn, [np.atleast_1d, np.atleast_2d, np.atleast_3d], (R(None), R((4,)), R((3, 4))))
case(diagonal_fn, [np.diagonal], (R((3, 3)),))
case(diagonal_offset, [np.diagonal], (R((3, 4)),))
case(diagonal_3d, [np.diagonal], (R((2, 3, 3)),))
case(m_diagonal, [M("diagonal")], (R((3, 4)),))
case(kron_fn, [np.kron], {"vec-vec": (R((2,)), R((3,))), "mat-mat": (R((2, 3)), R((2, 2))),
                          "vec-mat": (R((2,)), R((3, 2)))})
case(cross_fn, [np.cross], {"mat-mat": (R((4, 3)), R((4, 3))), "mat-vec": (R((4, 3)), R((3,)))})
case(cross_axis, [np.cross], (R((3, 4)), R((3, 4))))
case(cross_axes, [np.cross], (R((3, 4)), R((4, 3))))
if PLANAR_CROSS:
    case(cross_planar, [np.cross], (R((4, 3)), R((3,))))
case(fabs_fn, [np.fabs], (R((3, 3)),))
case(rollaxis_fn, [np.rollaxis], (R((3, 4)),))
case(select_fn, [np.select], (R((3, 3)), R((3,))))
case(bincount_fn, [np.bincount], (R((2, 3)),))
case(linspace_axis, [np.linspace], (R((3,)), R((3,))))
case(take_along_axis_fn, [np.take_along_axis], (R((3, 4)),))
case(take_along_axis_flat, [np.take_along_axis], (R((3, 4)),))


# -- factorizations and powers (tests/test_rules_modes.py checks them in vjp, jvp and
# hessian) ------------------------------------------------------------------------------
case(eigh_fn, [np.linalg.eigh], (R((3, 3)),))
case(eigh_batch, [np.linalg.eigh], (R((2, 3, 3)),))
case(eigvalsh_fn, [np.linalg.eigvalsh], (R((3, 3)),))
case(svd_fn, [np.linalg.svd], (R((4, 3)),))
case(svd_wide, [np.linalg.svd], (R((3, 4)),))
case(svd_square_full, [np.linalg.svd], (R((3, 3)),))
case(svd_values, [np.linalg.svd], {"tall": (R((4, 3)),), "wide": (R((3, 5)),)})
case(svd_batch, [np.linalg.svd], (R((2, 4, 3)),))
case(pinv_fn, [np.linalg.pinv], (R((4, 3)),))
case(pinv_batch, [np.linalg.pinv], (R((2, 3, 4)),))
case(lstsq_vec, [np.linalg.lstsq], (R((4, 3)), R((4,))))
case(lstsq_mat, [np.linalg.lstsq], {"tall": (R((4, 3)), R((4, 2)))})
case(qr_fn, [np.linalg.qr], (R((4, 3)),))
case(qr_square_batch, [np.linalg.qr], (R((2, 3, 3)),))
case(matrix_power_fn, [np.linalg.matrix_power], (R((3, 3)),))
case(matrix_power_neg, [np.linalg.matrix_power], (well_conditioned(3, 3),))
case(slogdet_batch, [np.linalg.slogdet], (well_conditioned(2, 3, 3),))


# -- compositions (no claims: every primitive in them has its own checks) ---------------
case(logsumexp, [], (R((3, 4)),))
case(softmax_xent, [], (R((3, 4)),))
case(mlp, [], (R((3, 4)), R((4,)), R((4,)), R((5, 3))))
case(gaussian_nll, [], (R((3, 3)), R((3,))))
case(uses_shape, [], (R((3, 4)),))


# -- float32 inputs ---------------------------------------------------------------------
def f32(shape, gen=R):
    return gen(shape).astype(np.float32)


for _fn, _args in [
        (f32_tanh, (f32((3, 4)),)), (f32_exp, (f32((3, 4)),)), (f32_log, (f32((3, 4), POS),)),
        (f32_sum, (f32((3, 4)),)), (f32_sum_ax0, (f32((3, 4)),)),
        (f32_mean_ax1, (f32((3, 4)),)), (f32_var, (f32((3, 4)),)),
        (f32_max_ax0, (f32((3, 4), S.distinct),)), (f32_m_sum, (f32((3, 4)),)),
        (f32_matmul, (f32((3, 4)), f32((4, 5)))), (f32_dot, (f32((3, 4)), f32((4, 5)))),
        (f32_T, (f32((3, 4)),)), (f32_index, (f32((3, 4)),)),
        (f32_relu, (f32((3, 4), AWAY),)), (f32_mul_py, (f32((3, 4)),)),
        (f32_add_broadcast, (f32((3, 4)), f32((4,)))), (f32_reshape, (f32((3, 4)),)),
        (f32_where, (f32((3, 4), AWAY),)), (f32_astype64, (f32((3, 4)),)),
        (f32_min, (f32((3, 4), S.distinct),)), (f32_prod_ax1, (f32((3, 4), NEAR1),)),
        (f32_std_ax0, (f32((3, 4)),)), (f32_cumsum, (f32((3, 4)),)),
        (f32_cumprod, (f32((3, 4), NEAR1),)), (f32_norm, (f32((3, 4)),)),
        (f32_clip, (_CLIP.astype(np.float32),)), (f32_concat, (f32((3,)), f32((4,)))),
        (f32_stack, (f32((4,)), f32((4,)))), (f32_einsum, (f32((3, 4)), f32((4, 5)))),
        (f32_tensordot, (f32((3, 4)), f32((4, 5)))), (f32_trace, (f32((3, 3)),)),
        (f32_diag, (f32((4,)),)), (f32_outer, (f32((3,)), f32((4,)))),
        (f32_tile, (f32((4,)),)), (f32_repeat, (f32((4,)),)), (f32_pad, (f32((4,)),)),
        (f32_inv, (well_conditioned(3, 3).astype(np.float32),)),
        (f32_det, (well_conditioned(3, 3).astype(np.float32),)),
        (f32_solve, (well_conditioned(3, 3).astype(np.float32), f32((3,)))),
        (f32_cholesky, (f32((3, 3)),)),
        (f32_logaddexp, (f32((3, 4)), f32((4,)))), (f32_power, (f32((3, 4), POS), f32((4,)))),
        (f32_bool_index, (f32((3, 4), AWAY),)),
        (f32_array_of_0d, (f32(()), f32(()))),
        (f32_order_statistics, (f32((3, 4), S.distinct),)), (f32_gradient, (f32((3, 4)),))]:
    case(_fn, [], _args, rtol=F32_RTOL, atol=F32_ATOL, table=F32_CASES)
# float64 -> float32 -> float64 rounds every finite-difference step: compare loosely
case(f64_astype32, [], (R((3, 4)),), rtol=1e-2, atol=1e-3, table=F32_CASES)


# -- element writes where an index repeats a position: NumPy keeps the last write, so only
# it receives the adjoint (`y[idx] += v` is `y[idx] = y[idx] + v`: no accumulation) ------
IDX22 = np.array([[0, 2], [0, 0]])         # a 2-d index array of rows, row 0 three times
PARTS = Samples(20250434)                   # (its own samples: the cases above keep theirs)


def w_repeated_list(x, v):
    y = x * 1.0
    y[[0, 0, 2]] = v
    return np.sum(np.sin(y) * W34)


def w_repeated_add(x, v):
    y = x * 1.0
    y[[0, 0, 1]] += v * v
    return np.sum(np.sin(y) * W34)


def w_repeated_array(x, v):
    y = x * 1.0
    y[IDX] = np.sin(v)                     # rows 0, 2, 0, 1
    return np.sum(y * y * W34)


def w_repeated_pairs(x, v):
    y = x * 1.0
    y[IDX_R, IDX_C] = v                    # (2, 3) twice
    return np.sum(np.sin(y) * W34)


def w_repeated_negative(x, v):
    y = x * 1.0
    y[[0, -3, 1], 1:3] = v                 # rows 0 and -3 are one row of three
    return np.sum(np.sin(y) * W34)


def w_repeated_2d_index(x, v):
    y = x * 1.0
    y[IDX22] = v
    return np.sum(np.sin(y) * W34)


def w_repeated_in_loop(x):
    y = x * 1.0
    for i in range(3):
        y[[0, 0, 2]] = y[[1, 2, 1]] * x[i]
    return np.sum(np.sin(y) * W34)


def w_runtime_index(x, v):
    y = x * 1.0
    y[np.minimum(np.arange(4), 2)] = v     # rows 0, 1, 2, 2, found at run time
    z = x * 1.0
    z[np.arange(3)[::-1]] = v[:3]          # rows 2, 1, 0: none twice
    return np.sum((np.sin(y) + z * z) * W34)


# -- rules that read part of an argument: np.kron of 0-d values; eigh, eigvalsh, cholesky,
# and svd and pinv with hermitian=True read one triangle (the lower unless told), so the
# derivative of what NumPy computes is zero on the other one -------------------------
def kron_0d(a, b):
    return np.sum(np.sin(np.kron(a, b)) * W_)


def eigh_lower(a):
    w, v = np.linalg.eigh(a)
    return np.sum((w + v * v) * W33)


def eigh_upper(a):
    w, v = np.linalg.eigh(a, "U")
    return np.sum((w + v[:, 0] * v[:, 1]) * W3)


def eigh_upper_keyword(a):
    w, v = np.linalg.eigh(a, UPLO="U")
    return np.sum((w + v[..., 0] * v[..., 1]) * W23)


def eigvalsh_lower(a):
    return np.sum((np.linalg.eigvalsh(a) ** 2 + np.linalg.eigvalsh(a, "U")) * W3)


def cholesky_lower(a):
    return np.sum(np.linalg.cholesky(a) * W33)


def cholesky_upper(a):
    return np.sum(np.linalg.cholesky(a, upper=True) * W33)


def svd_hermitian(a):
    u, s, vt = np.linalg.svd(a, hermitian=True)
    return np.sum((s + u * u + np.linalg.svd(a, compute_uv=False, hermitian=True) ** 2) * W33)


def pinv_hermitian(a):
    return np.sum(np.linalg.pinv(a, hermitian=True) * W33)


def _spd(shape, rng=PARTS):
    """Positive definite matrices plus something in their upper triangle (which NumPy's
    cholesky does not read)."""
    a = rng.real(shape)
    return a @ np.swapaxes(a, -1, -2) + 3 * np.eye(shape[-1]) + np.triu(rng.real(shape), 1)


P = PARTS.real
for _fn, _args in [
        (w_repeated_list, {"rows": (P((3, 4)), P((3, 4))), "row": (P((3, 4)), P((4,))),
                           "py": (P((3, 4)), P(None))}),
        (w_repeated_add, {"rows": (P((3, 4)), P((3, 4))), "py": (P((3, 4)), P(None))}),
        (w_repeated_array, {"rows": (P((3, 4)), P((4, 4))), "row": (P((3, 4)), P((4,)))}),
        (w_repeated_pairs, {"vec": (P((3, 4)), P((4,))), "py": (P((3, 4)), P(None))}),
        (w_repeated_negative, {"mat": (P((3, 4)), P((3, 2))), "col": (P((3, 4)), P((3, 1)))}),
        (w_repeated_2d_index, {"3d": (P((3, 4)), P((2, 2, 4))), "col": (P((3, 4)), P((2, 1, 1)))}),
        (w_repeated_in_loop, (P((3, 4)),)),
        (w_runtime_index, (P((3, 4)), P((4, 4))))]:
    case(_fn, [operator.getitem], _args)
case(kron_0d, [np.kron], {"0d-0d": (PARTS.real(()), PARTS.real(())),
                          "0d-vec": (PARTS.real(()), PARTS.real((3,))),
                          "mat-0d": (PARTS.real((2, 3)), PARTS.real(())),
                          "py-0d": (PARTS.real(None), PARTS.real(()))})
case(eigh_lower, [np.linalg.eigh], (PARTS.real((3, 3)),))
case(eigh_upper, [np.linalg.eigh], (PARTS.real((3, 3)),))
case(eigh_upper_keyword, [np.linalg.eigh], (PARTS.real((2, 3, 3)),))
case(eigvalsh_lower, [np.linalg.eigvalsh], (PARTS.real((3, 3)),))
case(cholesky_lower, [np.linalg.cholesky], {"mat": (_spd((3, 3)),), "batch": (_spd((2, 3, 3)),)})
if "upper" in inspect.signature(np.linalg.cholesky).parameters:        # NumPy 2
    case(cholesky_upper, [np.linalg.cholesky], (np.swapaxes(_spd((3, 3)), -1, -2),))
case(svd_hermitian, [np.linalg.svd], (PARTS.real((3, 3)),))
case(pinv_hermitian, [np.linalg.pinv], (PARTS.real((3, 3)),))


# =======================================================================================
# Known s2sad bugs: xfail(strict=True) marks, by function name (and label).
# =======================================================================================
XFAIL = {}

for _c in CASES + F32_CASES:
    _x = XFAIL.get(_c.fn.__name__)
    if _x:
        _c.xfail.update(_x if isinstance(_x, dict) else {k: _x for k in _c.argsets})


# =======================================================================================
# Coverage bookkeeping
# =======================================================================================
def _check_id(c, label):
    return f"{c.fn.__name__}[{label}]" if label else c.fn.__name__


#: primitive, ("method", name) or ("attr", name) -> ids of the checks claiming it.
COVERS = {}
for _c in CASES:
    for _claim in _c.covers:
        COVERS.setdefault(_claim, []).extend(_check_id(_c, k) for k in _c.argsets)


def _covered_primitives():
    out = set()
    for claim in COVERS:
        if isinstance(claim, tuple):
            table = registry.METHODS if claim[0] == "method" else registry.ATTRIBUTES
            out.add(table[claim[1]])
        else:
            out.add(claim)
    return out


def _numpyish(prim):
    if isinstance(getattr(prim, "__self__", None), np.ufunc):      # np.add.outer
        return _numpyish(prim.__self__)
    if isinstance(prim, np.ufunc):      # (not SciPy's: tests/test_rules_scipy.py checks them)
        return getattr(np, prim.__name__, None) is prim
    if prim is np.ndarray.astype:
        return True
    module = getattr(prim, "__module__", None) or ""
    return module == "numpy" or module.startswith("numpy.") or module == "s2sad.rules.numpy"


def _differentiable(prim):
    rule = registry.lookup(prim)
    return (rule is not None and not rule.nondiff
            and (rule.each is not None or any(v.templates for v in rule.variants)))


def _name(prim):
    if isinstance(prim, tuple):
        return f"x.{prim[1]}()" if prim[0] == "method" else f"x.{prim[1]}"
    if prim is np.ndarray.astype:
        return "np.ndarray.astype"
    if isinstance(getattr(prim, "__self__", None), np.ufunc):
        return f"{_name(prim.__self__)}.{prim.__name__}"
    module = getattr(prim, "__module__", None) or ""
    name = getattr(prim, "__name__", repr(prim))
    if isinstance(prim, np.ufunc) or module == "numpy":
        return f"np.{name}"
    if module.startswith("numpy."):
        return f"np.{module[6:]}.{name}"
    return f"{module}.{name}"


def required_primitives():
    """Every NumPy-ish primitive with a derivative rule, plus `@` and `[]` on arrays (but
    np.fft's, which tests/test_fft.py checks against central differences)."""
    found = {p for p in registry.RULES if _numpyish(p) and _differentiable(p)
             and getattr(p, "__module__", None) != "numpy.fft"}
    return found | {operator.matmul, operator.getitem}


def required_spellings():
    """Every array method and attribute that maps to a differentiable primitive."""
    return ({M(n) for n, p in registry.METHODS.items() if _differentiable(p)}
            | {A(n) for n, p in registry.ATTRIBUTES.items() if _differentiable(p)})


# =======================================================================================
# The checks
# =======================================================================================
def _params(cases, marked=True):
    """pytest params (case, label, args), with the xfail marks of known bugs if `marked`."""
    out = []
    for c in cases:
        for label, args in c.argsets.items():
            reason = c.xfail.get(label)
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason and marked else []
            out.append(pytest.param(c, label, args, id=_check_id(c, label), marks=marks))
    return out


def _copy(args):
    return tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)


def _kind_error(g, x, dtype, what):
    """Why gradient `g` does not fit argument `x` (shape, dtype), or None."""
    if isinstance(x, np.ndarray):
        if not isinstance(g, (np.ndarray, np.generic)):
            return f"{what}: expected an array of shape {x.shape}, got {type(g).__name__}"
        if np.shape(g) != x.shape:
            return f"{what}: shape {np.shape(g)}, expected {x.shape}"
        if np.result_type(g) != dtype:
            return f"{what}: dtype {np.result_type(g)}, expected {dtype}"
        return None
    if np.ndim(g) != 0:
        return f"{what}: expected a scalar for a Python float, got shape {np.shape(g)}"
    return None


def _grads(fn, args):
    wrt = tuple(range(len(args)))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        grads = s2sad.grad(fn, wrt=wrt)(*_copy(args))
    assert isinstance(grads, tuple) and len(grads) == len(args), grads
    return grads


def _check(case, args, dtypes):
    expected = [fd_array_grad(case.fn, args, i) for i in range(len(args))]
    grads = _grads(case.fn, args)
    failures = []
    for i, (g, x, e, dtype) in enumerate(zip(grads, args, expected, dtypes)):
        what = f"d/d arg{i}"
        kind = _kind_error(g, x, dtype, what)
        value = compare(g, e, case.rtol, case.atol, what) if np.shape(g) == np.shape(e) else None
        failures += [m for m in (kind, value) if m]
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("case, label, args", _params(CASES))
def test_gradient_matches_finite_differences(case, label, args):
    _check(case, args, [np.float64] * len(args))


@pytest.mark.parametrize("case, label, args", _params(F32_CASES))
def test_float32_gradient(case, label, args):
    """The gradient of a float32 (float64) argument is float32 (float64)."""
    _check(case, args, [getattr(a, "dtype", np.float64) for a in args])


@pytest.mark.parametrize("case, label, args", _params(CASES + F32_CASES, marked=False))
def test_inputs_unchanged(case, label, args):
    """A gradient call leaves its argument arrays as they were (values, dtype, shape)."""
    before = _copy(args)
    passed = _copy(args)
    wrt = tuple(range(len(args)))
    try:
        s2sad.grad(case.fn, wrt=wrt)(*passed)
    except Exception:
        if not case.xfail.get(label):
            raise
        # known failure (see test_gradient_matches_finite_differences); still check below
    changed = [i for i, (a, b) in enumerate(zip(passed, before)) if not same_value(a, b)]
    assert not changed, f"arguments {changed} were modified by the gradient call"


def test_sample_points_are_smooth():
    """Without s2sad: two finite-difference schemes agree at every sample point, so no
    sample sits on a kink, a tie or the edge of a domain."""
    bad = []
    for param in _params(CASES + F32_CASES):
        c, label, args = param.values
        loose = c.rtol > 1e-3       # a float32 cast inside: steps are rounded
        for i in range(len(args)):
            a = fd_array_grad(c.fn, args, i)
            b = fd_array_grad_central(c.fn, args, i, h=1e-3 if loose else 1e-6)
            if not np.allclose(a, b, rtol=c.rtol if loose else 1e-4,
                               atol=c.atol if loose else 1e-6):
                bad.append(f"{param.id} arg{i}: {a!r} vs {b!r}")
    assert not bad, "\n".join(bad)


def _returned_gradients():
    """(check id, args, gradients) of every check that runs, for the memory checks."""
    for param in _params(CASES + F32_CASES):
        c, label, args = param.values
        if c.xfail.get(label):
            continue
        passed = _copy(args)
        yield param.id, passed, s2sad.grad(c.fn, wrt=tuple(range(len(args))))(*passed)


def test_gradients_are_writable():
    """A returned gradient array can be updated in place (g *= lr, g[mask] = 0)."""
    readonly = [f"{cid} arg{i}" for cid, _, grads in _returned_gradients()
                for i, g in enumerate(grads)
                if isinstance(g, np.ndarray) and not g.flags.writeable]
    assert not readonly, "read-only gradients: " + ", ".join(readonly)


def test_gradients_do_not_share_memory():
    """Returned gradients share no memory with each other, the arguments, or the module's
    constant arrays (an in-place update of one must not change another)."""
    constants = [v for v in globals().values() if isinstance(v, np.ndarray)]
    shared = []
    for cid, args, grads in _returned_gradients():
        arrays = [g for g in grads if isinstance(g, np.ndarray)]
        for i, g in enumerate(arrays):
            others = arrays[i + 1:] + [a for a in args if isinstance(a, np.ndarray)]
            if any(np.shares_memory(g, o) for o in others + constants):
                shared.append(f"{cid} arg{i}")
    assert not shared, "gradients sharing memory: " + ", ".join(shared)


def _used(fn):
    """Primitives and spellings that appear in `fn`'s source: dotted names resolved in
    its globals (np.linalg.solve), operators, subscripts, methods and attributes."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    missing = object()

    def resolve(node):
        if isinstance(node, ast.Name):
            return fn.__globals__.get(node.id, missing)
        if isinstance(node, ast.Attribute):
            base = resolve(node.value)
            return missing if base is missing else getattr(base, node.attr, missing)
        return missing

    binops = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
              ast.Div: operator.truediv, ast.Pow: operator.pow, ast.Mod: operator.mod,
              ast.MatMult: operator.matmul}
    unops = {ast.USub: operator.neg, ast.UAdd: operator.pos}
    found = set()
    called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            if inspect.ismodule(resolve(node.value)) or isinstance(resolve(node.value),
                                                                  np.ufunc):
                found.add(resolve(node))      # np.linalg.norm, np.add.outer
            else:
                found.add(M(node.attr) if id(node) in called else A(node.attr))
        elif isinstance(node, ast.Subscript):
            found.add(operator.getitem)
        elif isinstance(node, ast.BinOp) and type(node.op) in binops:
            found.add(binops[type(node.op)])
        elif isinstance(node, ast.UnaryOp) and type(node.op) in unops:
            found.add(unops[type(node.op)])
    return found


def test_claims_appear_in_source():
    """Each check really uses what it claims to cover (so COVERS cannot drift)."""
    wrong = []
    for c in CASES:
        used = _used(c.fn)
        wrong += [f"{c.fn.__name__} claims {_name(k)}" for k in c.covers if k not in used]
    assert not wrong, "\n".join(wrong)


def test_xfail_entries_name_checks():
    names = {c.fn.__name__ for c in CASES + F32_CASES}
    assert not set(XFAIL) - names, f"XFAIL names no check: {sorted(set(XFAIL) - names)}"


def test_every_numpy_rule_is_covered():
    covered = _covered_primitives()
    missing = sorted(_name(p) for p in required_primitives() if p not in covered)
    assert not missing, "NumPy rules without a finite-difference check: " + ", ".join(missing)


def test_every_method_and_attribute_spelling_is_covered():
    missing = sorted(_name(s) for s in required_spellings() if s not in COVERS)
    assert not missing, "array spellings without a check: " + ", ".join(missing)


def test_coverage_is_not_vacuous():
    """The registry scan finds the rules this file was written against."""
    required = required_primitives()
    for prim in (np.sum, np.tanh, np.linalg.solve, np.einsum, np.ndarray.astype,
                 registry.METHODS["reshape"], registry.METHODS["transpose"]):
        assert prim in required, _name(prim)
    assert not {np.argmax, np.floor, np.sign} & required
    assert {M("sum"), M("reshape"), A("T")} <= required_spellings()
    assert M("argmax") not in required_spellings()


def test_quantile_weights_give_numpys_quantiles():
    """The weights the quantile rules put on the sorted values give NumPy's quantiles for
    every method they know, also where q (n - 1) falls on a sample or half-way."""
    from s2sad.rules.calculus import QUANTILE_METHODS, quantile_weights
    rng = np.random.default_rng(3)
    for n in (1, 2, 3, 4, 5, 9):
        a = rng.standard_normal(n)
        qs = np.concatenate([np.linspace(0, 1, 4 * n + 1), rng.uniform(size=5)])
        for method in QUANTILE_METHODS:
            mine = quantile_weights(qs, np.array(n), n, method) @ np.sort(a)
            np.testing.assert_allclose(mine, np.quantile(a, qs, method=method), rtol=1e-12,
                                       atol=1e-12, err_msg=f"n={n}, method={method}")


def test_subgradients_at_ties_and_sample_points():
    """Where the derivative does not exist, the documented choice (docs/numpy.md, "Order
    statistics"): an even count's median splits 1/2 and 1/2; ties go by a stable sort;
    the slope in q at a sample is 0; np.interp takes the segment to the right."""
    def median(x):
        return np.median(x)

    def quantile(q, x):
        return np.quantile(x, q)

    def interp(x, fp):
        return np.interp(x, np.array([0.0, 1.0, 3.0]), fp)

    np.testing.assert_array_equal(s2sad.grad(median)(np.array([4.0, 1.0, 3.0, 2.0])),
                                  [0.0, 0.0, 0.5, 0.5])
    np.testing.assert_array_equal(s2sad.grad(median)(np.array([1.0, 3.0, 3.0])), [0, 1, 0])
    gq, gx = s2sad.grad(quantile, wrt=(0, 1))(0.5, np.array([1.0, 2.0, 4.0]))
    assert gq == 0.0
    np.testing.assert_array_equal(gx, [0.0, 1.0, 0.0])
    gx, gfp = s2sad.grad(interp, wrt=(0, 1))(1.0, np.array([0.0, 2.0, 3.0]))
    assert gx == 0.5                                # (3 - 2) / (3 - 1), to the right
    np.testing.assert_array_equal(gfp, [0.0, 1.0, 0.0])
    assert s2sad.grad(interp)(3.0, np.array([0.0, 2.0, 3.0])) == 0.5   # the last segment


def test_imag_and_angle_of_real_arrays_have_zero_derivative():
    def f(x):
        return np.sum(np.imag(x) + np.angle(x) + x.imag + x * W34)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_array_equal(s2sad.grad(f)(R((3, 4))), W34)


def test_the_pullback_of_slogdet_takes_a_float_cotangent():
    # grad seeds with a NumPy scalar; vjp's pullback is given a Python float (1.0), which
    # the rule indexed as an array
    a = well_conditioned(3, 3)
    want = fd_array_grad(slogdet_unpack, (a,), 0)
    for f in (slogdet_unpack, slogdet_index):
        scale = 1.0 if f is slogdet_unpack else W_
        _, pullback = s2sad.vjp(f, a)
        np.testing.assert_allclose(pullback(2.0)[0], 2.0 * scale * want, rtol=1e-6)


def _deleted_and_inserted(x):
    y = np.delete(x, 1)
    z = np.insert(y, 2, x[0] * 3.0)
    return np.sum(z * z * x[:4])


def _deleted_columns(x):
    a = np.outer(x, x)
    return np.sum(np.delete(a, [0, 2], axis=1) ** 2)


def _inserted_rows(x):
    a = x.reshape(2, 2)
    return np.sum(np.insert(a, 1, a[0] * 2.0, axis=0) ** 3)


@pytest.mark.parametrize("f", [_deleted_and_inserted, _deleted_columns, _inserted_rows])
def test_second_derivatives_through_np_delete_and_np_insert(f):
    # (the adjoints of np.delete and np.insert read the array only for its shape: their
    # hessians were refused, "arr depends on the differentiated inputs")
    check_hessian(f, np.array([0.3, -0.7, 1.1, 0.5]))
