"""Fuzz how s2sad adds the adjoints of lists, tuples and dicts with random programs over
container parameters (generator: container_programs.py; issue #34).

Usage
-----
    python -m pytest tests/fuzz/test_fuzz_containers.py -q -p no:cacheprovider   # "fast"
    python -m pytest tests/fuzz/test_fuzz_containers.py --hypothesis-profile=long

The profiles are those of tests/fuzz/conftest.py; each test takes a share of the
profile's `max_examples` (SHARES below; fast: 100 and 50 programs, about 40 s on 2 cores).

Properties
----------
1. `test_gradient_matches_finite_differences`: the gradient with respect to every
   parameter, through `grad`, `value_and_grad` or `vjp` and its pullback, has the
   structure of its argument (a list of its length, a tuple, a dict with its keys,
   arrays of their shapes, floats) and agrees leaf by leaf with fourth-order central
   differences of `f` (rtol 1e-5, atol 1e-7); the value agrees with `f`'s, and the
   arguments are unchanged. The programs are smooth, so every leaf is compared.
2. `test_forward_mode_matches`: `s2sad.jvp(f, primals, tangents)` with random tangents of
   the arguments' structure returns `f`'s value and the directional derivative of
   central differences, and agrees with `<gradient, tangent>` (the dot-product test).

Any exception from s2sad fails the test and prints the (shrunk) program's source.
"""
import copy

import numpy as np
import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st

import s2sad
from test_container_adjoints import assert_structure

from .container_programs import container_programs, example_arguments, forget

pytestmark = [pytest.mark.fuzz, pytest.mark.filterwarnings("ignore:.*does not depend on")]

SHARES = {"gradient": 0.1, "forward": 0.05}
MAX_STATEMENTS = 8 if settings.get_current_profile_name() == "long" else 4
RTOL, ATOL = 1e-5, 1e-7


def fuzz_settings(share):
    return settings(max_examples=max(2, int(round(settings.default.max_examples
                                                  * SHARES[share]))))


# -- the structures, walked without s2sad -------------------------------------------------
def leaves(x, path=()):
    """[(path, leaf)] of the floats and float arrays of `x`, in order."""
    if isinstance(x, dict):
        return [e for k, v in x.items() for e in leaves(v, path + (k,))]
    if isinstance(x, (list, tuple)):
        return [e for k, v in enumerate(x) for e in leaves(v, path + (k,))]
    return [(path, x)]


def at(x, path):
    for key in path:
        x = x[key]
    return x


def with_leaf(x, path, value):
    if not path:
        return value
    key, rest = path[0], path[1:]
    if isinstance(x, dict):
        return {**x, key: with_leaf(x[key], rest, value)}
    items = list(x)
    items[key] = with_leaf(x[key], rest, value)
    return type(x)(items)


def moved(args, tangent, h):
    out = list(args)
    for path, leaf in leaves(tuple(args)):
        step = np.asarray(leaf) + h * np.asarray(at(tangent, path))
        out = list(with_leaf(tuple(out), path, step if np.ndim(leaf) else float(step)))
    return out


def directional(f, args, tangent, h=1e-4):
    """d/dh f(args + h tangent) at 0 (fourth-order central differences)."""
    values = [f(*moved(args, tangent, s * h)) for s in (1, -1, 2, -2)]
    return (8 * (values[0] - values[1]) - (values[2] - values[3])) / (12 * h)


def fd_leaf_gradient(f, args, path, h=1e-4):
    """d f / d leaf at `path`, entry by entry (an array of the leaf's shape)."""
    leaf = np.asarray(at(tuple(args), path), dtype=np.float64)
    out = np.zeros(leaf.shape)
    for idx in np.ndindex(leaf.shape):
        unit = np.zeros(leaf.shape)
        unit[idx] = 1.0
        tangent = with_leaf(_zeros_like(tuple(args)), path, unit if leaf.shape else 1.0)
        out[idx] = directional(f, args, tangent, h * max(1.0, abs(float(leaf[idx]))))
    return out


def _zeros_like(x):
    out = x
    for path, leaf in leaves(x):
        out = with_leaf(out, path, np.zeros(np.shape(leaf)) if np.ndim(leaf) else 0.0)
    return out


def random_tangent(args, data):
    out = tuple(args)
    for path, leaf in leaves(out):
        n = int(np.size(leaf))
        ks = data.draw(st.lists(st.integers(-8, 8), min_size=n, max_size=n), label="tangent")
        value = np.array([k / 8 for k in ks]).reshape(np.shape(leaf))
        out = with_leaf(out, path, value if np.ndim(leaf) else float(value))
    return out


def leaf_dot(a, b):
    return sum(float(np.sum(np.asarray(at(a, p)) * np.asarray(v))) for p, v in leaves(b))


def assert_unchanged(args, before):
    for (p, leaf), (_, old) in zip(leaves(tuple(args)), leaves(tuple(before))):
        np.testing.assert_array_equal(leaf, old, err_msg=f"argument leaf {p} was changed")


# -- the properties ---------------------------------------------------------------------
@fuzz_settings("gradient")
@given(program=container_programs(max_statements=MAX_STATEMENTS),
       mode=st.sampled_from(["grad", "value_and_grad", "vjp"]),
       seed=st.integers(0, 3))
def test_gradient_matches_finite_differences(program, mode, seed):
    note(repr(program))
    f = program.load()
    try:
        args = example_arguments(program, seed)
        before = copy.deepcopy(args)
        wrt = tuple(range(len(args)))
        if mode == "grad":
            grads = s2sad.grad(f, wrt=wrt)(*args)
        elif mode == "value_and_grad":
            value, grads = s2sad.value_and_grad(f, wrt=wrt)(*args)
            assert value == pytest.approx(f(*before), rel=1e-12, abs=1e-12)
        else:
            value, pullback = s2sad.vjp(f, *args)
            assert value == pytest.approx(f(*before), rel=1e-12, abs=1e-12)
            grads = pullback(1.0)
        assert_unchanged(args, before)
        assert isinstance(grads, tuple) and len(grads) == len(args)
        for i, (g, x) in enumerate(zip(grads, args)):
            assert_structure(g, x, f"gradient of {program.params[i]}")
        for path, _ in leaves(tuple(args)):
            np.testing.assert_allclose(at(grads, path), fd_leaf_gradient(f, args, path),
                                       rtol=RTOL, atol=ATOL, err_msg=f"leaf {path}")
    finally:
        forget(f)


@fuzz_settings("forward")
@given(program=container_programs(max_statements=MAX_STATEMENTS), seed=st.integers(0, 3),
       data=st.data())
def test_forward_mode_matches(program, seed, data):
    note(repr(program))
    f = program.load()
    try:
        args = example_arguments(program, seed)
        tangent = random_tangent(args, data)
        value, t = s2sad.jvp(f, tuple(args), tangent)
        assert value == pytest.approx(f(*args), rel=1e-12, abs=1e-12)
        assert t == pytest.approx(directional(f, args, tangent), rel=RTOL, abs=ATOL)
        grads = s2sad.grad(f, wrt=tuple(range(len(args))))(*args)
        assert t == pytest.approx(leaf_dot(grads, tangent), rel=1e-9, abs=1e-11)
    finally:
        forget(f)
