"""A library patched by the user's code (`np.sin = np.cos`, a test's monkeypatch): the
user's own calls call what they read now (guarded), and the derivatives of the others,
whose rules and runtime helpers read the library too, stay those of the library as s2sad
found it (rules/snapshots.py). Each checked against central differences of the function
as it is with the patch, before and after the derivative is first compiled."""
import math

import numpy as np
import pytest

import s2sad
from s2sad.rules import snapshots


def central(f, x, h=1e-6):
    return (f(x + h) - f(x - h)) / (2 * h)


def second(f, x, h=1e-4):
    return (f(x + h) - 2 * f(x) + f(x - h)) / (h * h)


def reads_cos(x):
    return np.cos(x) * x


def reads_both(x):
    return np.sin(x) * np.cos(x) + np.exp(0.5 * x)


def reads_math(x):
    return math.cos(x) + math.sin(x) * x


def reads_det(a):
    return np.linalg.det(a)


def reads_tanh_sum(v):
    return np.sum(np.tanh(v) * v)


X = 0.7
PATCHES = {"sin as cos": [(np, "sin", np.cos)],
           "exp as sinh": [(np, "exp", np.sinh)],
           "sin as cos, cos as exp": [(np, "sin", np.cos), (np, "cos", np.exp)]}


def patch(monkeypatch, changes):
    for module, name, value in changes:
        monkeypatch.setattr(module, name, value)


def check_modes(f, x):
    """grad, value_and_grad, vjp, jvp and hessian of `f` at `x` against central
    differences of `f` as it is now."""
    slope = central(f, x)
    assert s2sad.grad(f)(x) == pytest.approx(slope, rel=1e-6)
    value, got = s2sad.value_and_grad(f)(x)
    assert (value, got) == pytest.approx((f(x), slope), rel=1e-6)
    assert s2sad.vjp(f, x)[1](1.0)[0] == pytest.approx(slope, rel=1e-6)
    assert s2sad.jvp(f, (x,), (1.0,))[1] == pytest.approx(slope, rel=1e-6)
    assert s2sad.hessian(f)(x) == pytest.approx(second(f, x), rel=1e-4)


@pytest.mark.parametrize("changes", PATCHES.values(), ids=PATCHES)
@pytest.mark.parametrize("f", [reads_cos, reads_both])
def test_numpy_patched_before_the_first_compile(monkeypatch, f, changes):
    patch(monkeypatch, changes)
    check_modes(f, X)


@pytest.mark.parametrize("changes", PATCHES.values(), ids=PATCHES)
@pytest.mark.parametrize("f", [reads_cos, reads_both])
def test_numpy_patched_between_calls(monkeypatch, f, changes):
    grads = [s2sad.grad(f), s2sad.value_and_grad(f)]
    slope = central(f, X)
    assert grads[0](X) == pytest.approx(slope, rel=1e-6)
    assert grads[1](X)[1] == pytest.approx(slope, rel=1e-6)
    patch(monkeypatch, changes)
    slope = central(f, X)
    assert grads[0](X) == pytest.approx(slope, rel=1e-6)
    assert grads[1](X) == pytest.approx((f(X), slope), rel=1e-6)
    check_modes(f, X)
    monkeypatch.undo()
    assert grads[0](X) == pytest.approx(central(f, X), rel=1e-6)


def test_the_rule_of_cos_reads_sin_as_numpy_has_it():
    """The example of the issue: main gave 0.080 for -0.838 (the rule read np.cos)."""
    real = np.sin
    g = s2sad.grad(reads_cos)
    before = g(X)
    np.sin = np.cos
    try:
        assert g(X) == pytest.approx(central(reads_cos, X), rel=1e-6) == before
        assert s2sad.grad(reads_cos)(X) == pytest.approx(before, rel=1e-12)
    finally:
        np.sin = real


def test_math_patched(monkeypatch):
    g = s2sad.grad(reads_math)
    assert g(X) == pytest.approx(central(reads_math, X), rel=1e-6)
    monkeypatch.setattr(math, "sin", math.cos)
    monkeypatch.setattr(math, "cos", math.exp)
    check_modes(reads_math, X)
    assert g(X) == pytest.approx(central(reads_math, X), rel=1e-6)


def test_a_runtime_helper_reads_numpy_as_found(monkeypatch):
    """The adjoint of det calls a helper that inverts (rules/factorizations.py)."""
    a = np.array([[2.0, 0.5], [0.3, 1.5]])
    g = s2sad.grad(reads_det)
    expected = np.linalg.det(a) * np.linalg.inv(a).T
    np.testing.assert_allclose(g(a), expected, rtol=1e-12)
    monkeypatch.setattr(np.linalg, "inv", lambda m: m)
    np.testing.assert_allclose(g(a), expected, rtol=1e-12)
    np.testing.assert_allclose(s2sad.grad(reads_det)(a), expected, rtol=1e-12)


def test_sum_patched(monkeypatch):
    """A patched np.sum is what the user's code sums with; the adjoints of broadcasting
    that s2sad writes (inline_helpers, `np.sum(g, axis=0)`) and the helpers still sum."""
    v = np.array([0.3, -1.2, 2.0])
    monkeypatch.setattr(np, "sum", lambda a, **k: 2.0 * np.add.reduce(a, **k))
    expected = 2.0 * (np.tanh(v) + v / np.cosh(v) ** 2)
    np.testing.assert_allclose(s2sad.grad(reads_tanh_sum)(v), expected, rtol=1e-12)


def test_numba_patched(monkeypatch):
    pytest.importorskip("numba")
    g = s2sad.grad(reads_both, backend="numba")
    assert g(X) == pytest.approx(central(reads_both, X), rel=1e-6)
    monkeypatch.setattr(np, "sin", np.cos)
    assert g(X) == pytest.approx(central(reads_both, X), rel=1e-6)
    assert s2sad.grad(reads_both, backend="numba")(X) == pytest.approx(
        central(reads_both, X), rel=1e-6)


def test_the_generated_code_names_the_snapshot_apart_only_when_patched(monkeypatch):
    g = s2sad.grad(reads_cos)
    g(X)
    assert "np.sin(x)" in g.source
    monkeypatch.setattr(np, "sin", np.cos)
    g = s2sad.grad(reads_both)
    g(X)
    assert "np_1.sin(x)" in g.source and "np.sin(x)" in g.source


def test_snapshot_agrees_and_gains_new_attributes(monkeypatch):
    snap = snapshots.of(np)
    assert snapshots.agrees(snap) and snapshots.live(snap) is np
    monkeypatch.setattr(np, "s2sad_test_added", 1.5, raising=False)
    assert snapshots.agrees(snap) and snap.s2sad_test_added == 1.5
    monkeypatch.setattr(np.linalg, "inv", np.linalg.pinv)
    assert not snapshots.agrees(snap)
    monkeypatch.undo()
    assert snapshots.agrees(snap) and snap.linalg.inv is np.linalg.inv
