"""Bugs found in review, each pinned by a test against an independent oracle."""
import os
import subprocess
import sys

import numpy as np
import pytest

import s2sad
import corpus_regressions as r


def test_numpy_template_with_module_reference():
    x = np.array([1.0, 2.0])
    np.testing.assert_allclose(s2sad.grad(r.g)(x), np.cos(x), rtol=1e-15)


def test_raise_on_one_path():
    assert s2sad.grad(r.h)(2.0) == 4.0
    with pytest.raises(ValueError, match="negative"):
        s2sad.grad(r.h)(-2.0)


def test_bound_method_does_not_differentiate_self():
    c = r.C()
    assert s2sad.grad(c.m)(2.0) == 12.0          # d/dx 3 x^2
    assert s2sad.vjp(c.m, 2.0)[1](1.0) == (12.0,)


def test_dict_argument():
    assert s2sad.grad(r.d)({"a": 1.0, "b": 2.0}) == {"a": 2.0, "b": 1.0}


def test_decorated_function_is_refused_clearly():
    with pytest.raises(s2sad.SourceUnavailableError, match="decorator"):
        s2sad.grad(r.decorated)(2.0)


def test_vjp_sums_a_broadcast_argument():
    y, pullback = s2sad.vjp(r.scale, np.array([1.0, 2.0]), 3.0)
    x_bar, w_bar = pullback(np.ones(2))
    np.testing.assert_allclose(x_bar, [3.0, 3.0])
    assert w_bar == 3.0


def test_cli_check_outside_the_domain_is_one_line():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run([sys.executable, "-m", "s2sad", "check",
                          "examples/seed_functions.py:f", "--at", "-1", "5"],
                         cwd=root, capture_output=True, text=True, timeout=120)
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and "math domain error" in out.stderr
