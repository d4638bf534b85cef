"""Golden tests of forward mode: the exact generated `f_jvp` source of representative
functions (tests/golden/forward.<name>.txt), and its tangents against finite differences.
Also forward mode of their gradients (forward over reverse, what `hvp` runs and what
`s2sad.source(s2sad.grad(f), mode="forward")` prints; tests/golden/forward.grad.<name>.txt),
its tangent of the gradient against second differences of `f`.

To accept a deliberate change, regenerate with
`S2SAD_UPDATE_GOLDEN=1 pytest tests/test_golden_forward.py` and read the diff.
"""
import os

import numpy as np
import pytest

import s2sad
from s2sad import api, compilation, driver, forward_api
from s2sad.options import Options, Variant

from golden import functions, functions_numpy
from test_golden import _point, central_difference

HERE = os.path.join(os.path.dirname(__file__), "golden")
CASES = {
    "straight_line": (0, 1),
    "if_else": (0, 1),
    "nested_for": (0,),
    "break_loop": (0,),
    "early_return": (0,),
    "numpy.logistic_loss": (0,),
    "numpy.mlp_loss": (0, 1, 2, 3),
    "numpy.append_loop": (0,),
    "comprehension": (0,),
    "nested_closure": (0, 1),
}


def function(name):
    module, _, fname = name.rpartition(".")
    return getattr(functions_numpy if module else functions, fname)


@pytest.mark.parametrize("name", sorted(CASES))
def test_generated_source(name):
    text = api._with_lifted(driver.build(function(name), CASES[name],
                                         options=Options(Variant.JVP, guard=False)), "forward")
    path = os.path.join(HERE, f"forward.{name}.txt")
    if os.environ.get("S2SAD_UPDATE_GOLDEN"):
        with open(path, "w") as f:
            f.write(text)
    with open(path) as f:
        assert text == f.read()


@pytest.mark.parametrize("name", sorted(CASES))
def test_tangent_matches_finite_differences(name):
    f, wrt, point = function(name), CASES[name], _point(name)
    rng = np.random.default_rng(5)
    tangents = [rng.normal(size=np.shape(point[i])) for i in wrt]
    tangents = [t if np.ndim(t) else float(t) for t in tangents]
    d = driver.build(f, wrt, compilation.arg_types_of(f, point), Options(Variant.JVP,
                                                                        guard=False))
    _, y_dot = d.fn(*point, **dict(zip(d.tangent_names, tangents)))
    expected = sum(np.sum(central_difference(f, point, i) * t) for i, t in zip(wrt, tangents))
    assert y_dot == pytest.approx(expected, rel=1e-6, abs=1e-8)


# name: (the parameters of the gradient, the parameters with tangents)
GRADIENT_CASES = {
    "straight_line": ((0, 1), (0, 1)),
    "if_else": ((0, 1), (0, 1)),
    "for_loop": (0, (0,)),
    "numpy.rosenbrock": (0, (0,)),
}


@pytest.mark.parametrize("name", sorted(GRADIENT_CASES))
def test_gradient_forward_source(name):
    grad_wrt, wrt = GRADIENT_CASES[name]
    df = s2sad.grad(function(name), wrt=grad_wrt)
    text = s2sad.source(df, mode="forward", wrt=wrt, at=_point(name))
    path = os.path.join(HERE, f"forward.grad.{name}.txt")
    if os.environ.get("S2SAD_UPDATE_GOLDEN"):
        with open(path, "w") as f:
            f.write(text)
    with open(path) as f:
        assert text == f.read()
    assert s2sad.source(df, mode="forward", wrt=wrt, at=_point(name)) == text  # determinism


@pytest.mark.parametrize("name", sorted(GRADIENT_CASES))
def test_gradient_tangent_is_hessian_times_tangent(name):
    """The generated code's tangent of the gradient is H v: against second central
    differences of f itself (no s2sad gradient involved)."""
    f, (grad_wrt, wrt), point = function(name), GRADIENT_CASES[name], _point(name)
    rng = np.random.default_rng(11)
    tangents = [rng.normal(size=np.shape(point[i])) for i in wrt]
    tangents = [t if np.ndim(t) else float(t) for t in tangents]
    d = forward_api._gradient_jvp(f, grad_wrt, wrt, compilation.arg_types_of(f, point))
    g_dot = d.fn(*point, **dict(zip(d.tangent_names, tangents)))     # the tangent alone
    many = isinstance(grad_wrt, tuple)
    for i, gi_dot in zip(grad_wrt if many else (grad_wrt,), g_dot if many else (g_dot,)):
        want = sum(_second_difference(f, point, i, j, t) for j, t in zip(wrt, tangents))
        np.testing.assert_allclose(gi_dot, want, rtol=1e-5, atol=1e-6)


def _second_difference(f, point, i, j, t):
    """d/dx_i of (d f / d x_j . t), one element of x_i at a time, by central differences."""
    xi, h = np.asarray(point[i], dtype=float), 1e-4

    def shifted(args, k, step):
        args = list(args)
        x = np.asarray(args[k], dtype=float)
        args[k] = x + step if x.shape else float(x + step)
        return args

    def along_t(args):      # central difference of f along t in argument j
        return (f(*shifted(args, j, h * np.asarray(t))) -
                f(*shifted(args, j, -h * np.asarray(t)))) / (2 * h)
    out = np.zeros_like(xi)
    for idx in np.ndindex(xi.shape):
        e = np.zeros_like(xi)
        e[idx] = h
        out[idx] = (along_t(shifted(point, i, e)) - along_t(shifted(point, i, -e))) / (2 * h)
    return out if xi.shape else float(out)
