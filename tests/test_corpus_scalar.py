"""s2sad.grad / value_and_grad / vjp on the scalar corpus.

Every gradient is compared with an independent oracle: the hand-derived
analytic gradient when the case has one, otherwise central finite differences
(tests/oracle.py).  Nothing is ever compared with s2sad's own output.
"""

import math
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from corpus_scalar import CORPUS  # noqa: E402
from oracle import assert_close, fd_grad, fd_partial, resolve_wrt  # noqa: E402
from warned import allowing_unconnected  # noqa: E402

import s2sad  # noqa: E402

VALUE_RTOL = 1e-12
VALUE_ATOL = 1e-14


def _case_id(case):
    return case.name + ("-kw" if case.kwargs else "")


def _params(cases):
    params = []
    for case in cases:
        for k, point in enumerate(case.points):
            params.append(pytest.param(case, point, id=f"{_case_id(case)}-p{k}"))
    return params


ALL = _params(CORPUS)
POSITIONAL_ONLY = _params([c for c in CORPUS if not c.kwargs])


def expected_grad(case, point):
    if case.analytic is not None:
        return case.analytic(*point, **case.kwargs)
    return fd_grad(case.f, point, case.wrt, kwargs=case.kwargs)


def _expected_partial(case, point, i):
    """Expected adjoint of positional argument i (for vjp)."""
    if case.analytic is not None:
        single, indices = resolve_wrt(case.f, case.wrt, len(point))
        if i in indices:
            g = case.analytic(*point, **case.kwargs)
            return g if single else g[indices.index(i)]
    return fd_partial(case.f, point, i, kwargs=case.kwargs)


# ---------------------------------------------------------------------------
# Oracle self-checks (no s2sad): make sure the corpus itself is sound.
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("case, point", ALL)
def test_oracle_analytic_matches_fd(case, point):
    """The hand-written analytic gradients agree with finite differences."""
    if case.analytic is None:
        pytest.skip("no analytic gradient")
    fd = fd_grad(case.f, point, case.wrt, kwargs=case.kwargs)
    assert_close(case.analytic(*point, **case.kwargs), fd, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("case, point", ALL)
def test_oracle_point_is_smooth(case, point):
    """FD with two very different step sizes agree: no kink/branch nearby."""
    richardson = fd_grad(case.f, point, case.wrt, kwargs=case.kwargs)
    small_step = fd_grad(case.f, point, case.wrt, kwargs=case.kwargs,
                         method="central", h=1e-7)
    assert_close(small_step, richardson, rtol=1e-4, atol=1e-6)


def test_corpus_size():
    assert len({c.f for c in CORPUS}) >= 45


# ---------------------------------------------------------------------------
# s2sad against the oracle
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("case, point", ALL)
def test_grad(case, point):
    with allowing_unconnected(case.f):
        g = s2sad.grad(case.f, wrt=case.wrt)(*point, **case.kwargs)
    assert_close(g, expected_grad(case, point), rtol=case.rtol, atol=case.atol)


@pytest.mark.parametrize("case, point", ALL)
def test_value_and_grad(case, point):
    with allowing_unconnected(case.f):
        value, g = s2sad.value_and_grad(case.f, wrt=case.wrt)(*point, **case.kwargs)
    assert_close(value, case.f(*point, **case.kwargs), rtol=VALUE_RTOL, atol=VALUE_ATOL)
    assert_close(g, expected_grad(case, point), rtol=case.rtol, atol=case.atol)


@pytest.mark.parametrize("case, point", POSITIONAL_ONLY)
def test_vjp(case, point):
    with allowing_unconnected(case.f):
        y, pullback = s2sad.vjp(case.f, *point)
    assert_close(y, case.f(*point), rtol=VALUE_RTOL, atol=VALUE_ATOL)
    adjoints = pullback(1.0)
    assert isinstance(adjoints, tuple), f"pullback returned {type(adjoints).__name__}"
    assert len(adjoints) == len(point), (
        f"pullback returned {len(adjoints)} adjoints for {len(point)} arguments")
    expected = tuple(_expected_partial(case, point, i) for i in range(len(point)))
    assert_close(adjoints, expected, rtol=case.rtol, atol=case.atol)


@pytest.mark.parametrize("case, point", POSITIONAL_ONLY)
def test_vjp_is_linear_in_cotangent(case, point):
    """pullback(2.5) is 2.5 * the true gradient (checked against the oracle)."""
    with allowing_unconnected(case.f):
        _, pullback = s2sad.vjp(case.f, *point)
    adjoints = pullback(2.5)
    expected = tuple(2.5 * _expected_partial(case, point, i) for i in range(len(point)))
    assert_close(adjoints, expected, rtol=case.rtol, atol=2.5 * case.atol)


# ---------------------------------------------------------------------------
# Calling-convention details
# ---------------------------------------------------------------------------

def _by_name(name):
    for case in CORPUS:
        if case.name == name:
            return case.f
    raise KeyError(name)


def test_grad_int_input_returns_float():
    cube = _by_name("cube_loop")
    g = s2sad.grad(cube)(2)
    assert isinstance(g, float) and not isinstance(g, bool), type(g)
    assert g == pytest.approx(12.0, rel=1e-12)

    add_mul = _by_name("add_mul")
    gx, gy = s2sad.grad(add_mul, wrt=(0, 1))(3, 2)
    assert isinstance(gx, float) and isinstance(gy, float), (type(gx), type(gy))
    assert (gx, gy) == pytest.approx((3.0, 2.0), rel=1e-12)


def test_grad_scalar_vs_tuple_wrt():
    log_sin = _by_name("log_sin")
    g0 = s2sad.grad(log_sin, wrt=0)(1.5, 2.0)
    g_name = s2sad.grad(log_sin, wrt="x2")(1.5, 2.0)
    g_tuple = s2sad.grad(log_sin, wrt=(1,))(1.5, 2.0)
    g_mixed = s2sad.grad(log_sin, wrt=("x2", 0))(1.5, 2.0)
    assert_close(g0, 1 / 1.5 + 2.0)
    assert_close(g_name, 1.5 - math.cos(2.0))
    assert_close(g_tuple, (1.5 - math.cos(2.0),))
    assert_close(g_mixed, (1.5 - math.cos(2.0), 1 / 1.5 + 2.0))


def test_default_wrt_is_first_argument():
    log_sin = _by_name("log_sin")
    assert_close(s2sad.grad(log_sin)(1.5, 2.0), 1 / 1.5 + 2.0)


def test_keyword_argument_is_not_differentiated():
    proj = _by_name("projectile_range")
    # g passed by keyword changes the value but is never a wrt target.
    g = s2sad.grad(proj, wrt=(0, 1))(10.0, 0.3, g=1.62)
    assert_close(g, (2 * 10.0 * math.sin(0.6) / 1.62, 2 * 100.0 * math.cos(0.6) / 1.62))
