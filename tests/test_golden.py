"""Golden tests: the exact generated source of representative functions.

A change that alters generated code shows up here as a diff to review: the reverse
mode's `f_vjp`, and the fused `f_grad` that `grad` runs (tests/golden/grad.*.txt). To accept a
deliberate change, regenerate with `S2SAD_UPDATE_GOLDEN=1 pytest tests/test_golden.py`
and read the diff before committing.
"""
import os

import numpy as np
import pytest

import s2sad
from s2sad import api, compilation, driver

from golden import functions, functions_numpy

HERE = os.path.join(os.path.dirname(__file__), "golden")
CASES = {
    "straight_line": (0, 1),
    "fan_out": 0,
    "if_else": (0, 1),
    "for_loop": 0,
    "accumulate": 0,
    "nested_for": 0,
    "while_loop": 0,
    "break_loop": 0,
    "early_return": 0,
    "lotka_volterra": (0, 1, 2, 3),
    "loop_invariant": (0, 1),
    "numpy.logistic_loss": 0,
    "numpy.mlp_loss": (0, 1, 2, 3),
    "numpy.rosenbrock": 0,
    "numpy.smooth_in_place": 0,
    "numpy.append_loop": 0,
    "numpy.heat": (0, 1),
    "numpy.relax": (0, 1),
    "numpy.tanh_steps": (0, 1),
    "comprehension": 0,
    "lambda_loop": 0,
    "nested_closure": (0, 1),
    "projectile": (0, 1),
}


def function(name):
    module, _, fname = name.rpartition(".")
    return getattr(functions_numpy if module else functions, fname)


@pytest.mark.parametrize("name", sorted(CASES))
def test_generated_source(name):
    f = function(name)
    derivative = driver.build(f, CASES[name], compilation.arg_types_of(f, _point(name)))
    text = api._with_lifted(derivative, "reverse")     # with nested functions it calls
    path = os.path.join(HERE, f"{name}.txt")
    if os.environ.get("S2SAD_UPDATE_GOLDEN"):
        with open(path, "w") as f:
            f.write(text)
    with open(path) as f:
        assert text == f.read()


#: The fused gradients `grad` runs, specialised on the kinds (and shape patterns) of
#: the case's point: what `s2sad.grad(f).source` shows after a call.
FUSED = ["straight_line", "lotka_volterra", "projectile", "numpy.logistic_loss", "numpy.mlp_loss",
         "numpy.rosenbrock", "numpy.smooth_in_place", "numpy.heat", "numpy.relax",
         "numpy.tanh_steps"]


@pytest.mark.parametrize("name", FUSED)
def test_fused_gradient_source(name):
    f = function(name)
    g = s2sad.grad(f, wrt=CASES[name])
    g(*_point(name))
    path = os.path.join(HERE, f"grad.{name}.txt")
    if os.environ.get("S2SAD_UPDATE_GOLDEN"):
        with open(path, "w") as out:
            out.write(g.source)
    with open(path) as golden:
        assert g.source == golden.read()


@pytest.mark.parametrize("name", sorted(CASES))
def test_regeneration_is_deterministic(name):
    f = function(name)
    assert driver.build(f, CASES[name]).source == driver.build(f, CASES[name]).source


def _point(name):
    rng = np.random.default_rng(7)
    if name == "numpy.mlp_loss":
        return (rng.normal(size=(4, 5)) * 0.5, rng.normal(size=5) * 0.1,
                rng.normal(size=(5, 3)) * 0.5, rng.normal(size=3) * 0.1,
                rng.normal(size=(6, 4)), np.eye(3)[rng.integers(0, 3, 6)])
    if name == "numpy.logistic_loss":
        return (rng.normal(size=3), rng.normal(size=(8, 3)), (rng.random(8) > 0.5) * 1.0)
    if name in ("numpy.rosenbrock", "numpy.smooth_in_place"):
        return (rng.normal(size=6),)
    if name == "numpy.heat":
        return (rng.normal(size=6), 0.2)
    if name == "numpy.relax":
        return (rng.normal(size=5), rng.uniform(2.0, 3.0, 5))
    if name == "numpy.tanh_steps":
        return (rng.normal(size=5), 0.9)
    if name == "lotka_volterra":
        return (1.0, 0.5, 0.7, 0.3)
    if name in ("straight_line", "if_else", "nested_closure"):
        return (2.0, 5.0)
    if name == "loop_invariant":
        return (0.9, 0.6)
    if name == "projectile":
        return (20.0, 0.8)
    return (0.7,)


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradient_matches_finite_differences(name):
    f, wrt = function(name), CASES[name]
    point = _point(name)
    got = s2sad.grad(f, wrt=wrt)(*point)
    got = got if isinstance(wrt, tuple) else (got,)
    for i, g in zip(wrt if isinstance(wrt, tuple) else (wrt,), got):
        np.testing.assert_allclose(np.asarray(g, dtype=float), central_difference(f, point, i),
                                   rtol=1e-5, atol=1e-7)


def central_difference(f, point, i):
    x = np.asarray(point[i], dtype=float)
    out = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        h = 1e-6 * max(1.0, abs(float(x[idx])))
        hi, lo = x.copy(), x.copy()
        hi[idx] += h
        lo[idx] -= h
        args_hi, args_lo = list(point), list(point)
        args_hi[i] = hi if x.shape else float(hi)
        args_lo[i] = lo if x.shape else float(lo)
        out[idx] = (f(*args_hi) - f(*args_lo)) / (2 * h)
    return out
