"""custom_vjp, stop_gradient and defvjp on user code, against independent oracles."""
import math

import numpy as np
import pytest

import s2sad
import corpus_custom as c


def test_custom_rule_is_used_inside_grad():
    x, y = 3.0, 4.0
    assert s2sad.grad(c.uses_norm, wrt=(0, 1))(x, y) == pytest.approx(
        (2 * x / 5 + 1, 2 * y / 5))


def test_custom_rule_gives_finite_gradient_where_naive_is_nan():
    with pytest.raises(ZeroDivisionError):       # naive: 0 / (2 * sqrt(0))
        s2sad.grad(c.naive_norm, wrt=(0, 1))(0.0, 0.0)
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
