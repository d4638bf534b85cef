"""custom_vjp, stop_gradient and defvjp on user code, against independent oracles."""
import math
import warnings

import numpy as np
import pytest

import s2sad
import corpus_custom as c
from oracle import fd_grad


def test_custom_rule_is_used_inside_grad():
    x, y = 3.0, 4.0
    assert s2sad.grad(c.uses_norm, wrt=(0, 1))(x, y) == pytest.approx(
        (2 * x / 5 + 1, 2 * y / 5))


def test_custom_rule_gives_finite_gradient_where_naive_is_nan():
    # naive: 2 x * 1 / (2 * sqrt(0)) at x = 0, 0 * inf in NumPy's float64 (which warns)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        naive = s2sad.grad(c.naive_norm, wrt=(0, 1))(0.0, 0.0)
    assert {str(w.message) for w in caught} >= {"divide by zero encountered in scalar divide",
                                                  "invalid value encountered in scalar multiply"}
    assert all(math.isnan(g) for g in naive)
    assert s2sad.grad(c.safe_norm, wrt=(0, 1))(0.0, 0.0) == (0.0, 0.0)


def test_custom_rule_in_a_loop_and_in_vjp():
    x = 0.7
    expected = sum(i * (x * i) / math.hypot(x * i, 1.0) for i in range(3))
    assert s2sad.grad(c.loop_norm)(x) == pytest.approx(expected, rel=1e-12)
    y, pullback = s2sad.vjp(c.loop_norm, x)
    assert pullback(2.0) == (pytest.approx(2 * expected, rel=1e-12),)


def test_generated_code_calls_fwd_and_bwd_by_name():
    text = s2sad.source(c.uses_norm, wrt=(0, 1))
    assert "safe_norm_fwd(x, y)" in text and "safe_norm_bwd(safe_norm_residuals" in text


def test_gradient_clipping_rule():
    g = s2sad.grad(c.clipped_loss)(np.array([1.0, -2.0]))
    np.testing.assert_array_equal(g, [1.0, 1.0])     # 10 clipped to 1


def test_stop_gradient():
    assert s2sad.grad(c.with_stop)(3.0) == 9.0       # d/dx x * c with c = x*x held fixed


def test_missing_custom_rule_is_a_clear_error():
    @s2sad.custom_vjp
    def lonely(x):
        return x
    with pytest.raises(s2sad.MissingRuleError, match="defvjp"):
        s2sad.grad(lonely)(1.0)


# -- custom_jvp ---------------------------------------------------------------------------
def test_custom_jvp_is_used_by_jvp_where_naive_divides_by_zero():
    # naive: (x * x_dot + y * y_dot) / (2 sqrt(0)), 0 / 0 in NumPy's float64 (which warns)
    with pytest.warns(RuntimeWarning, match="invalid value"):
        assert math.isnan(s2sad.jvp(c.naive_radius, (0.0, 0.0), (1.0, 1.0))[1])
    assert s2sad.jvp(c.radius, (0.0, 0.0), (1.0, 1.0)) == (0.0, 0.0)
    y, y_dot = s2sad.jvp(c.radius, (3.0, 4.0), (0.5, -1.0))
    assert y == 5.0
    assert y_dot == pytest.approx(fd_grad(lambda t: c.radius(3.0 + 0.5 * t, 4.0 - t), (0.0,)),
                                  rel=1e-8)


def test_custom_jvp_in_jacfwd_and_called_directly():
    w = np.array([0.5, -1.0, 2.0])
    jac = s2sad.jacfwd(c.softplus_layer)(w)
    expected = np.diag([fd_grad(lambda t, i=i: float(c.softplus_layer(
        np.where(np.arange(3) == i, t, w))[i]), (w[i],)) for i in range(3)])
    np.testing.assert_allclose(jac, expected, rtol=1e-7)
    np.testing.assert_allclose(s2sad.jacfwd(c.softplus)(w), np.diag(1 / (1 + np.exp(-w))),
                               rtol=1e-12)


def test_custom_jvp_gets_zero_tangents_for_arguments_that_do_not_vary():
    x, k = 1.5, 2.0
    y, y_dot = s2sad.jvp(c.uses_scaled, (x, k), (1.0, None))
    assert y_dot == pytest.approx(fd_grad(c.uses_scaled, (x, k)), rel=1e-8)
    y, y_dot = s2sad.jvp(c.uses_scaled, (x, k), (0.0, 1.0))
    assert y_dot == pytest.approx(fd_grad(c.uses_scaled, (x, k), wrt=1), rel=1e-8)


def test_forward_source_calls_the_jvp_rule_by_name():
    text = s2sad.source(c.uses_scaled, mode="forward", wrt=0)
    assert ("t, t_dot = _s2s_value_and_tangent(scaled_jvp((x, c), (x_dot, _s2s_zeros_like(c))), "
            "scaled_jvp)") in text


def test_reverse_mode_differentiates_the_source_of_a_custom_jvp():
    assert s2sad.grad(c.radius, wrt=(0, 1))(3.0, 4.0) == pytest.approx((0.6, 0.8))
    assert "safe_sqrt_jvp" not in s2sad.source(c.radius)


def test_custom_jvp_without_rule_is_a_located_error():
    with pytest.raises(s2sad.MissingRuleError, match=r"corpus_custom.py:\d+: no_rule is a "
                                                     r"custom_jvp without its rule.*defjvp"):
        s2sad.jvp(c.calls_no_rule, (1.0,), (1.0,))


def test_hessian_through_a_custom_jvp():
    # forward over reverse: the rule for the value's tangent, the source for the adjoint
    x, y = 3.0, 4.0
    assert s2sad.hessian(c.radius)(x, y) == pytest.approx(y * y / 125.0, rel=1e-12)
    assert s2sad.hvp(c.radius, wrt=1)(x, y, 2.0) == pytest.approx(2 * x * x / 125.0, rel=1e-12)


# -- custom_vjp under every transformation ------------------------------------------------
def test_custom_vjp_under_grad_vjp_jvp_and_hessian():
    x, y = 3.0, 4.0
    expected = fd_grad(c.uses_norm, (x, y), wrt=(0, 1))
    assert s2sad.grad(c.uses_norm, wrt=(0, 1))(x, y) == pytest.approx(expected, rel=1e-8)
    assert s2sad.vjp(c.uses_norm, x, y)[1](1.0) == pytest.approx(expected, rel=1e-8)
    # forward mode differentiates the function's own source (documented)
    assert s2sad.jvp(c.uses_norm, (x, y), (1.0, 0.0))[1] == pytest.approx(expected[0])
    # hessian: forward mode over the generated reverse code, which calls fwd and bwd
    d2 = fd_grad(lambda t: s2sad.grad(c.uses_norm)(t, y), (x,))
    assert s2sad.hessian(c.uses_norm)(x, y) == pytest.approx(d2, rel=1e-7)


def test_bwd_returning_a_literal_none_emits_nothing_for_that_argument():
    x, k = 2.0, 3.0
    gx, gk = s2sad.grad(c.uses_scale_by, wrt=(0, 1))(x, k)
    assert gx == pytest.approx(k * k)
    assert gk == pytest.approx(x * k)        # only through the `* k` outside: None is zero
    text = s2sad.source(c.uses_scale_by, wrt=(0, 1))
    assert ("_s2s_cotangents(scale_by_bwd(scale_by_residuals, y_bar * k), scale_by_bwd, "
            "(x, None))[0]") in text
    assert "[1]" not in text and "_s2s_cotangent(" not in text


def test_bwd_returning_none_at_run_time_is_zero():
    assert s2sad.grad(c.uses_gated, wrt=(0, 1))(2.0, 3.0) == pytest.approx((3.0, 8.0))
    assert s2sad.grad(c.uses_gated, wrt=(0, 1))(2.0, -3.0) == pytest.approx((-3.0, -6.0))
    assert "_s2s_cotangent(gated_cotangents[1], y)" in s2sad.source(c.uses_gated, wrt=(0, 1))
