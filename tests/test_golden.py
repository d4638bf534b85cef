"""Golden tests: the exact generated source of representative functions.

A change that alters generated code shows up here as a diff to review. To accept a
deliberate change, regenerate with `S2SAD_UPDATE_GOLDEN=1 pytest tests/test_golden.py`
and read the diff before committing.
"""
import os

import pytest

from s2sad import pipeline

from golden import functions

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
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_generated_source(name):
    text = pipeline.reverse(getattr(functions, name), CASES[name]).source
    path = os.path.join(HERE, f"{name}.txt")
    if os.environ.get("S2SAD_UPDATE_GOLDEN"):
        with open(path, "w") as f:
            f.write(text)
    with open(path) as f:
        assert text == f.read()


@pytest.mark.parametrize("name", sorted(CASES))
def test_regeneration_is_deterministic(name):
    f = getattr(functions, name)
    assert pipeline.reverse(f, CASES[name]).source == pipeline.reverse(f, CASES[name]).source
