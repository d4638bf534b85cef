"""Golden tests of forward mode: the exact generated `f_jvp` source of representative
functions (tests/golden/forward.<name>.txt), and its tangents against finite differences.

To accept a deliberate change, regenerate with
`S2SAD_UPDATE_GOLDEN=1 pytest tests/test_golden_forward.py` and read the diff.
"""
import os

import numpy as np
import pytest

from s2sad import api, pipeline

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
    text = api._with_lifted(pipeline.forward(function(name), CASES[name]), "forward")
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
    d = pipeline.forward(f, wrt, pipeline.kinds_of(f, point))
    _, y_dot = d.fn(*point, **dict(zip(d.tangent_names, tangents)))
    expected = sum(np.sum(central_difference(f, point, i) * t) for i, t in zip(wrt, tangents))
    assert y_dot == pytest.approx(expected, rel=1e-6, abs=1e-8)
