"""grad(grad(f)): forward mode over the generated gradient, against analytic values."""
import math

import numpy as np
import pytest

import s2sad
import corpus_control_flow as c
from golden import functions as g


def test_second_derivative_through_a_loop():
    x = 2.0
    assert s2sad.grad(s2sad.grad(g.for_loop))(x) == pytest.approx(-0.25 * x ** -1.5,
                                                                  rel=1e-12)


def test_mixed_partials_of_the_seed_function():
    d2 = s2sad.grad(s2sad.grad(g.straight_line, wrt=0), wrt=1)
    assert d2(2.0, 5.0) == pytest.approx(1.0)                      # d2/dx1 dx2 = 1
    d11 = s2sad.grad(s2sad.grad(g.straight_line, wrt="x1"), wrt="x1")
    assert d11(2.0, 5.0) == pytest.approx(-1 / 4.0)                # -1/x1^2
    d22 = s2sad.grad(s2sad.grad(g.straight_line, wrt=1), wrt=1)
    assert d22(2.0, 5.0) == pytest.approx(math.sin(5.0))           # sin(x2)


def test_second_derivative_with_branches():
    f = c.ifexp                                                   # x*x (x > 0) ...
    assert s2sad.grad(s2sad.grad(f))(2.0) == pytest.approx(2.0)


def test_array_inner_gradient_points_to_hessian():
    with pytest.raises(s2sad.NonScalarOutputError, match="hessian"):
        s2sad.grad(s2sad.grad(g.for_loop))(np.array([1.0, 2.0]))
