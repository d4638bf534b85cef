"""The forward pass reads like the user's code: temporaries of numbers go back into
their one use (after_ad/optimize.py, inline_temporaries), where that changes nothing."""
import math

import numpy as np

import s2sad
from s2sad import compilation, driver
from oracle import assert_close, fd_grad
import inline_functions as m


def _code(f, *args):
    arg_types = compilation.arg_types_of(f, args) if args else None
    return [line.strip() for line in driver.build(f, arg_types=arg_types).source.splitlines()
            if not line.strip().startswith("#")]


def test_loop_body_reads_as_written():
    code = _code(m.euler, 0.7, 1.3)
    assert "du = a * u - u * u * 0.5" in code and "u = u + 0.1 * du" in code
    for wrt in (0, 1):
        assert_close(s2sad.grad(m.euler, wrt=wrt)(0.7, 1.3),
                     fd_grad(m.euler, (0.7, 1.3), wrt=wrt))


def test_only_arithmetic_and_math_functions_move():
    # abs stays a statement of its own, and so do the values the pullback reads (the
    # argument of abs, the factors of the product); the product goes into the sum
    code = _code(m.with_abs, 0.4)
    assert "t = x * 2.0" in code and "t_1 = abs(t)" in code
    assert "t_2 = x * x" in code and "t_3 = math.exp(x)" in code
    assert "y = t_1 + t_2 * t_3" in code
    for x in (0.4, -0.3):
        assert_close(s2sad.grad(m.with_abs)(x), fd_grad(m.with_abs, (x,)))


def test_array_temporaries_stay_named():
    # an array's temporary keeps its buffer for the reuse of grad
    x = np.linspace(-1.0, 1.0, 5)
    code = _code(m.with_array_temporary, x)
    assert "t = x * 2.0" in code
    np.testing.assert_allclose(s2sad.grad(m.with_array_temporary)(x), np.full(5, 2.0))


def test_a_value_the_pullback_reads_stays_named():
    code = _code(m.read_by_the_pullback, 0.3)
    assert "t = x * 3.0" in code
    assert_close(s2sad.grad(m.read_by_the_pullback)(0.3), 3.0 * math.cos(0.9))
