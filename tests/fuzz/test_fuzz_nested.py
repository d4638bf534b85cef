"""Fuzz nested differentiation: random programs that call gradients inside the function
differentiated (generator: nested_programs.py), with the values the outer derivative
flows through captured by closures, passed where the gradient is not taken, changed
between a closure's definition and its call or from one iteration of a loop to the next.

`test_nested_gradient_matches_finite_differences`: the gradient of `f(x, z)` with respect
to both parameters, through `grad`, `value_and_grad` (the value too), `vjp` or `jvp` with
each unit tangent, agrees with fourth-order central differences of the reference
program (where two steps agree), in which every gradient is itself a central difference
(no s2sad); and `f` agrees with the reference. Every generated program is supported:
any exception from s2sad fails the test (but the documented refusal of reverse mode over
the gradient code of a function that calls a gradient, a third derivative). The share of
the profile's programs is `SHARE` (fast: about 100).
"""
import math

import pytest
from hypothesis import event, given, note, settings
from hypothesis import strategies as st

import s2sad

from .nested_programs import nested_programs
from .programs import forget

pytestmark = [pytest.mark.fuzz,
              pytest.mark.filterwarnings("ignore:.*does not depend on")]

SHARE = 0.1
RTOL, ATOL = 1e-5, 1e-6


def _fd(f, point, i, h):
    def at(v):
        return f(*[v if k == i else p for k, p in enumerate(point)])
    v = point[i]
    return (-at(v + 2 * h) + 8 * at(v + h) - 8 * at(v - h) + at(v - 2 * h)) / (12 * h)


def _trusted_fd(f, point, i):
    """d f / d point[i] by central differences, or None where two steps disagree (the
    function turns too fast there for the steps)."""
    coarse, fine = _fd(f, point, i, 2.0 ** -8), _fd(f, point, i, 2.0 ** -10)
    return fine if math.isclose(coarse, fine, rel_tol=RTOL / 10, abs_tol=ATOL / 10) else None


def _close(a, b):
    return math.isclose(a, b, rel_tol=RTOL, abs_tol=ATOL)


@settings(max_examples=max(2, int(round(settings.default.max_examples * SHARE))))
@given(program=nested_programs(), via=st.sampled_from(("grad", "value_and_grad", "vjp",
                                                        "jvp")),
       point=st.tuples(*[st.integers(-1500, 1500).map(lambda k: k / 1000 + 1.3e-7)] * 2))
def test_nested_gradient_matches_finite_differences(program, via, point):
    note(program.source)
    f, reference = program.load(), program.load(reference=True)
    try:
        expected_value = reference(*point)
        expected = tuple(_trusted_fd(reference, point, i) for i in range(2))
        assert _close(f(*point), expected_value), (f(*point), expected_value)
        try:
            got = _derivative(f, via, point)
        except s2sad.S2SADError as exc:
            # reverse mode over the gradient code of a function that calls a gradient
            # (third order) needs reverse rules of runtime helpers some of which have
            # forward rules only: refused, and said where
            if not ("dcalls(" in program.source and via != "jvp"
                    and str(exc).startswith("a call of grad(calls_dinner) inside a "
                                            "function differentiated in reverse mode")):
                raise
            event("third order in reverse mode refused")
            return
        note(f"{via}: {got}, finite differences: {expected}")
        if None in expected:
            event("a partial derivative skipped: finite differences disagree")
        assert all(e is None or _close(g, e) for g, e in zip(got, expected)), (got, expected)
    finally:
        forget(f)
        forget(reference)


def _derivative(f, via, point):
    """The gradient of `f` at `point` through `via`, checking the value it gives."""
    if via == "grad":
        return s2sad.grad(f, wrt=(0, 1))(*point)
    if via == "value_and_grad":
        value, got = s2sad.value_and_grad(f, wrt=(0, 1))(*point)
        assert _close(value, f(*point)), (value, f(*point))
        return got
    if via == "vjp":
        value, pullback = s2sad.vjp(f, *point)
        assert _close(value, f(*point)), (value, f(*point))
        return pullback(1.0)
    return tuple(s2sad.jvp(f, point, tuple(float(k == i) for k in range(2)))[1]
                 for i in range(2))
