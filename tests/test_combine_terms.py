"""Collecting the additions into one slice of an adjoint (after_ad/combine_terms.py).

The written polynomial is checked against the polynomial itself at random points, and
its operations counted. The gradients of functions whose adjoints are collected are
checked against central differences, with inputs unchanged; the generated code is
checked to compute the collected sum in the slice, and to leave alone what it must."""
import itertools
import math
import random
import tracemalloc

import gast
import numpy as np
import pytest

import s2sad
from s2sad import compilation, driver
from s2sad.options import Options, Variant
from s2sad import emit
from s2sad.after_ad.combine_terms import best, operations

from numpy_cases import check_fused, compare, fd_array_grad


# -- the algebra ------------------------------------------------------------------------

def value(p, env):
    """The polynomial `p` at the point `env`, term by term."""
    return sum(c * np.prod([env[v] for v in m]) for m, c in p.items())


def written(expr, env):
    return eval(emit.to_source(gast.Expression(body=expr)).strip(), {}, dict(env))


def test_rosenbrock_terms_take_four_operations():
    # -2 (1 - a) - 2 a d, with a = x[:-1]: three terms, one pass each would be five
    p = {(): -2, ("a",): 2, ("a", "d"): -2}
    cost, expr = best(p, {})
    assert cost == 4 == operations(expr)
    env = {"a": 0.7, "d": -1.3}
    assert written(expr, env) == pytest.approx(value(p, env), rel=1e-14)


def test_common_factors_are_taken_out():
    cost, expr = best({("a", "b"): 3.0, ("a", "c"): 3.0}, {})
    assert cost == 3                    # (b + c) * a * 3.0, or an order of it
    cost, expr = best({("a",): -1, ("b",): -1}, {})
    assert cost == 2                    # -(a + b) or -a - b


def test_written_polynomials_are_the_polynomials():
    rng = random.Random(3)
    names = ["a", "b", "c"]
    monomials = [()] + [m for k in (1, 2, 3) for m in
                        itertools.combinations_with_replacement(names, k)]
    written_ones = 0
    for _ in range(300):
        p = {m: rng.choice([-3, -2, -1, 1, 2, 0.5, -0.25, 3.0])
             for m in rng.sample(monomials, rng.randint(1, 5))}
        if not any(p):
            continue
        cost, expr = best(p, {})
        if expr is None:        # a * b + c * c: no step combines one name with the rest
            assert cost == math.inf
            continue
        written_ones += 1
        assert cost == operations(expr)
        naive = sum(max(len(m) - 1, 0) + (c != 1) for m, c in p.items()) + len(p) - 1
        assert cost <= naive
        for _ in range(3):
            env = {v: rng.uniform(-2, 2) for v in names}
            assert written(expr, env) == pytest.approx(value(p, env), rel=1e-12, abs=1e-12)
    assert written_ones > 100


# -- in generated code ------------------------------------------------------------------

def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def three_terms(x):
    return np.sum(x[:-1] ** 3 - (1 - x[:-1]) ** 2 + 2.0 * x[:-1] * x[1:])


def columns(X):
    # the terms of X_bar[:, :-1] are collected; X_bar[:, 1:] is added
    return np.sum((X[:, 1:] - X[:, :-1] ** 2) ** 2 + (2.0 - X[:, :-1]) ** 2)


def scaled_by_a_number(x, s):
    return np.sum(s * (1 - x[:-1]) ** 2 + s * x[:-1] * x[1:])


def scaled_by_an_array(x, w):
    # the terms of x_bar[:-1], t_6_bar * x[1:] and t_2_bar * 2 * (1 - x[:-1]), have no
    # name in common: each needs an array of its own, so they are left as they are
    return np.sum(w * (1 - x[:-1]) ** 2 + x[:-1] * x[1:] * w)


def broadcast_term(x, w):
    # a term has the shape of a broadcast: the sum is not computed in x_bar
    return np.sum(np.sin(x[None, 1:] * w)) + np.sum(x[1:] ** 2)


def inside_a_loop(x):
    # the terms are added in a loop's pullback: left as they are
    s = 0.0
    for i in range(2):
        s = s + np.sum((1 - x[:-1]) ** 2 + x[:-1] * x[1:])
    return s


RNG = np.random.default_rng(5)
CASES = [
    (rosenbrock, (RNG.uniform(-1.5, 1.5, 7),), 0),
    (three_terms, (RNG.normal(size=6),), 0),
    (columns, (RNG.normal(size=(3, 5)),), 0),
    (scaled_by_a_number, (RNG.normal(size=6), 1.7), (0, 1)),
    (scaled_by_an_array, (RNG.normal(size=6), RNG.normal(size=5)), (0, 1)),
    (broadcast_term, (RNG.normal(size=5), RNG.normal(size=(2, 4))), (0, 1)),
    (inside_a_loop, (RNG.normal(size=6),), 0),
]


@pytest.mark.parametrize("f, args, wrt", CASES, ids=[c[0].__name__ for c in CASES])
@pytest.mark.parametrize("which", ["grad", "value_and_grad"])
def test_gradient_matches_finite_differences(f, args, wrt, which):
    check_fused(f, args, wrt, which)


def _source(f, *args, wrt=0, fused="grad"):
    variant = Variant.GRAD if fused == "grad" else Variant.VALUE_AND_GRAD
    return driver.build(f, wrt, compilation.arg_types_of(f, args), Options(
        variant, release=True, patterns=compilation.patterns_of(f, args))).source


@pytest.mark.parametrize("fused", ["grad", True])
def test_the_sum_is_computed_in_the_slice(fused):
    # the first slice of x_bar written: the sum is computed in it, nothing is added
    for f, args, wrt, sliced in [
            (rosenbrock, (np.ones(5),), 0, "x_bar[:-1]"),
            (columns, (np.ones((3, 4)),), 0, "X_bar[:, :-1]")]:
        text = _source(f, *args, wrt=wrt, fused=fused)
        assert text.count(f"out={sliced})") == 1, (f.__name__, text)
        assert f"= {sliced}\n" not in text and f"{sliced} +=" not in text, text


@pytest.mark.parametrize("fused", ["grad", True])
def test_a_sum_into_a_slice_written_before_is_added_once(fused):
    # x_bar[1:] is written first; the terms of x_bar[:-1] make one array, computed in
    # place, added once
    for f, args, wrt in [(three_terms, (np.ones(5),), 0),
                         (scaled_by_a_number, (np.ones(5), 2.0), (0, 1))]:
        text = _source(f, *args, wrt=wrt, fused=fused)
        assert "out=x_bar[1:])" in text
        assert text.count("x_bar[:-1]") == 1 and text.count("x_bar_view += ") == 1, text
    text = _source(three_terms, np.ones(5), fused=fused)
    assert text.count(" = t * t\n") == 1 and "y_bar" not in text, text


def test_rosenbrock_has_the_passes_of_the_hand_gradient():
    text = _source(rosenbrock, np.ones(5))
    arithmetic = [line.strip() for line in text.splitlines() if "#" not in line and any(
        op in line for op in (" ** ", "np.subtract(", "np.multiply(", " -= ", " += ", " *= "))]
    # x[1:] - x[:-1]**2 (two), times 200 (one), the terms of x_bar[:-1] (four), the
    # addition into x_bar[1:] (one): the eight of bench/workloads.py's rosenbrock_hand
    assert len(arithmetic) == 8, arithmetic


def test_left_alone():
    text = _source(broadcast_term, np.ones(5), np.ones((2, 4)), wrt=(0, 1))
    assert "x_bar[None, 1:] += " in text
    text = _source(inside_a_loop, np.ones(5))
    assert "out=x_bar" not in text


@pytest.mark.parametrize("f", [rosenbrock, three_terms])
def test_one_array_besides_the_gradient(f):
    # the terms have no arrays of their own: the sum is computed in the slice, or in
    # one array added into it
    n = 200_000
    x = RNG.uniform(-1.5, 1.5, n)
    df = s2sad.grad(f)
    df(x)
    tracemalloc.start()
    g = df(x)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 2.2 * g.nbytes


@pytest.mark.parametrize("f, shape", [(three_terms, 9), (columns, (3, 5))])
def test_float32_stays_float32(f, shape):
    x = RNG.uniform(-1.5, 1.5, shape).astype(np.float32)
    g = s2sad.grad(f)(x)
    assert g.dtype == np.float32
    error = compare(g, fd_array_grad(f, (x,), 0), 1e-3, 1e-3, f.__name__)
    assert error is None, error
