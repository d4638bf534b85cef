"""Buffer reuse (after_ad/reuse_buffers.py): elementwise results computed into the buffers of
dead temporaries. Gradients are checked against central differences, inputs must be
unchanged, dtypes kept, and the cases where reuse would be wrong must not reuse."""
import math
import re
import tracemalloc

import numpy as np
import pytest

import s2sad
from s2sad import compilation, driver
from s2sad.options import Options, Variant

from numpy_cases import check_fused, compare, fd_array_grad


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def chain(x):
    return np.sum(np.exp(x[1:] - x[:-1]) ** 2 * np.tanh(x[1:]))


def through_views(x):
    # arguments reach elementwise operations through views: never written into
    a = x[1:]
    b = np.reshape(x, (2, -1))
    c = b.T
    return np.sum(np.sin(a) * a) + np.sum(np.cos(c) * c)


def grows(x, M):
    a = x * 2.0                 # x: (n,), M: (k, n): a * M is larger than a
    return np.sum(np.tanh(a * M))


def read_later(x):
    a = x[1:] * 2.0
    b = a * 3.0
    return np.sum(b * a)


def on_a_tape(x):
    a = x[1:] * 2.0
    s = 0.0
    for i in range(3):
        b = np.sin(a)
        s = s + np.sum(b * a)
        a = a * 1.5
    return s


def zero_dimensional(x):
    return np.sum(np.exp(x * 2.0) * x)


def with_ints(x, n):
    return np.sum(x[1:] * (n[1:] / 2) + np.exp(x[:-1] * n[:-1]))


def mixed_precision(x, c):
    t = x[1:] * 3.0
    return np.sum(t * c[1:])


def into_columns(X):
    # the first contribution goes into a non-contiguous slice, X_bar[:, :-1]
    return np.sum(np.tanh(X[:, 1:]) * 3.0) + np.sum(X[:, :-1] ** 2)


def subtracted(x):
    # x_bar[:-1] -= g first, where g's last update is not a multiplication by a constant
    return np.sum(np.log(1.5 - x[:-1] * 0.1))


def subtracted_seed(x):
    # x_bar[:-1] -= g first, where g's last update multiplies by the seed y_bar = 1.0
    return np.sum(np.sin(1.5 - x[:-1]))


def first_read_again(x):
    # the first contribution to x_bar is read again afterwards: not computed in x_bar
    a = np.exp(x[1:])
    return np.sum(a) + np.sum(a * x[:-1])


def first_broadcast(x, w):
    # the first contribution has the shape of a broadcast: not computed in x_bar
    return np.sum(np.sin(x[None, 1:] * w))


def valley_cubed(x):
    # x_bar[1:] is written first: x_bar[:-1] gets t_1_bar added, not computed in it
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + x[1:] ** 3)


def ends(x):
    # x_bar[:-1] is written first, with one term
    return np.sum(x[1:] ** 3 + (1 - x[:-1]) ** 2)


def exp_and_valley(x):
    # the seed y_bar stays named (np.exp's term does not fold it): left out of
    # y_bar * 100.0 * 2, it leaves a product of numbers, folded
    return np.sum(np.exp(x[:-1]) + 100.0 * (x[1:] - x[:-1] ** 2) ** 2)


def weight_decay(w, X):
    # 2 * (y_bar * 0.5) * w folds to 1.0 * w, which must stay a copy of w: the gradient's
    # other term is added into it in place
    z = np.tanh(X * w)
    return np.mean(z * z) + 0.5 * np.sum(w * w)


def halved(w):
    return np.sum(np.sin(w)) + np.sum(w * w) / 2


RNG = np.random.default_rng(11)
CASES = [
    (rosenbrock, (RNG.uniform(-1.5, 1.5, 7),), 0),
    (chain, (RNG.normal(size=6),), 0),
    (through_views, (RNG.normal(size=6),), 0),
    (grows, (RNG.normal(size=4), RNG.normal(size=(3, 4))), (0, 1)),
    (read_later, (RNG.normal(size=5),), 0),
    (on_a_tape, (RNG.normal(size=5),), 0),
    (zero_dimensional, (np.array(0.3),), 0),
    (with_ints, (RNG.normal(size=5), np.arange(1, 6)), 0),
    (mixed_precision, (RNG.normal(size=5), RNG.normal(size=5)), 0),
    (into_columns, (RNG.normal(size=(3, 4)),), 0),
    (subtracted, (RNG.normal(size=6),), 0),
    (subtracted_seed, (RNG.normal(size=6),), 0),
    (first_read_again, (RNG.normal(size=5),), 0),
    (first_broadcast, (RNG.normal(size=5), RNG.normal(size=(2, 4))), (0, 1)),
    (valley_cubed, (RNG.normal(size=6),), 0),
    (ends, (RNG.normal(size=6),), 0),
    (exp_and_valley, (RNG.normal(size=6),), 0),
    (weight_decay, (RNG.normal(size=3), RNG.normal(size=(4, 3))), 0),
    (halved, (RNG.normal(size=5),), 0),
]


@pytest.mark.parametrize("f, args, wrt", CASES, ids=[c[0].__name__ for c in CASES])
@pytest.mark.parametrize("which", ["grad", "value_and_grad"])
def test_gradient_matches_finite_differences(f, args, wrt, which):
    check_fused(f, args, wrt, which)


def _source(f, *args, wrt=0):
    return driver.build(f, wrt, compilation.arg_types_of(f, args),
                        Options(Variant.GRAD, release=True)).source


def _outs(text):
    return [line.strip() for line in text.splitlines() if "out=" in line or " *= " in line
            or " += " in line and "[" not in line.split("+=")[0]]


def test_dead_temporaries_are_reused():
    text = _source(valley_cubed, np.ones(5))
    assert "t_3 = np.subtract(t, t_2, out=t_2)" in text
    assert "t_1_bar = np.multiply(t_3_bar, -2, out=t_3_bar)" in text
    assert "t_1_bar *= t_1" in text
    # the addition of t_3_bar moved up, so that its buffer is free for t_1_bar
    assert text.index("x_bar_view += t_3_bar") < text.index("t_1_bar = ")
    # the second x[:-1] of rosenbrock is the same view as the first: t_1 serves both
    text = _source(rosenbrock, np.ones(5))
    code = [line for line in text.splitlines() if not line.strip().startswith("#")]
    assert sum("= x[:-1]" in line for line in code) == 1


def two_updates_of_one_slice(x):
    # the first contribution to x_bar[1:] is computed in it, the next two are added
    # through one view of it
    return (np.sum(np.sin(x[1:]) * x[:-1]) + np.sum(np.cos(x[1:]) * x[:-1])
            + np.sum(np.exp(x[1:])))


def test_one_view_serves_every_update_of_a_slice():
    text = _source(two_updates_of_one_slice, np.ones(5))
    assert text.count("= x_bar[1:]") == 1 and text.count("x_bar_view += ") == 3
    g = s2sad.grad(two_updates_of_one_slice)(np.linspace(0.1, 0.5, 5))
    error = compare(g, fd_array_grad(two_updates_of_one_slice, (np.linspace(0.1, 0.5, 5),), 0),
                    1e-6, 1e-8, "two_updates_of_one_slice")
    assert error is None, error


def test_views_of_arguments_are_never_written():
    text = _source(through_views, np.ones(6))
    for line in _outs(text):
        assert not any(f"out={v})" in line for v in ("a", "b", "c", "x")), line


def test_no_reuse_when_broadcasting_grows_the_result():
    text = _source(grows, np.ones(4), np.ones((3, 4)), wrt=(0, 1))
    assert not any("out=a)" in line or line.startswith("a *=") for line in _outs(text))


def test_no_reuse_of_a_value_read_later():
    text = _source(read_later, np.ones(5))
    assert "b = a * 3.0" in text


def test_no_reuse_of_zero_dimensional_values():
    # x * 2.0 on a 0-d array is a NumPy scalar: no buffer to write into
    assert _outs(_source(zero_dimensional, np.array(0.3))) == []


def test_no_reuse_across_dtypes():
    # t is float32 (from x), c float64: t * c is float64 and must not go into t
    x, c = np.linspace(0.1, 1, 5, dtype=np.float32), np.linspace(1, 2, 5)
    assert "out=t)" not in _source(mixed_precision, x, c)
    value, g = s2sad.value_and_grad(mixed_precision)(x, c)
    assert value.dtype == np.float64 and g.dtype == np.float32


def test_float32_stays_float32():
    x = np.linspace(-1, 1, 7, dtype=np.float32)
    for f in (rosenbrock, chain):
        g = s2sad.grad(f)(x)
        assert g.dtype == np.float32, f.__name__
        error = compare(g, fd_array_grad(f, (x,), 0), 1e-3, 1e-3, f.__name__)
        assert error is None, error


def test_rosenbrock_peak_memory():
    n = 200_000
    x = RNG.uniform(-1.5, 1.5, n)
    df = s2sad.grad(rosenbrock)
    df(x)
    tracemalloc.start()
    df(x)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 2.2 * 8 * n     # the gradient and one temporary, as by hand


def test_numbers_left_by_the_seed_are_folded():
    text = _source(exp_and_valley, np.ones(5))
    assert "np.multiply(200.0, t_5, out=t_5)" in text and "100.0 * 2" not in text


def test_first_contribution_is_computed_in_the_slice_of_zeros():
    text = _source(ends, np.ones(5))
    # 1 - x[:-1] is computed in x_bar[:-1]; x_bar[:-1] -= 2 (1 - x[:-1]) negates the 2
    assert "t_3 = np.subtract(1, t_2, out=x_bar[:-1])" in text
    assert "np.multiply(-2.0, t_3, out=t_3)" in text
    assert "x_bar[:-1] -=" not in text
    assert text.index("x_bar = _s2s_zeros_like(x)") < text.index("out=x_bar[:-1]")
    # an added expression is computed in the slice directly
    assert "np.multiply(2.0, t_4, out=X_bar[:, :-1])" in _source(into_columns, np.ones((3, 4)))
    # a subtraction without a constant factor to negate, and one with the seed's
    text = _source(subtracted, np.ones(5))
    assert "np.negative(t_" in text and "x_bar[:-1] " not in text
    text = _source(subtracted_seed, np.ones(5))
    assert "t_1_bar *= -1.0" in text and "x_bar[:-1] " not in text


def test_first_contribution_stays_separate_when_it_must():
    # a, the value added first, is read again: it is not computed in the slice
    text = _source(first_read_again, np.ones(5))
    assert "a = np.exp(t)" in text and "x_bar[:-1] = a\n" in text
    text = _source(first_broadcast, np.ones(5), np.ones((2, 4)), wrt=(0, 1))
    assert "x_bar[None, 1:] += t_bar" in text and "out=x_bar" not in text


def logsin(x1, x2):
    return math.log(x1) + x1 * x2 - math.sin(x2)


def times_count(x, n):
    return x * n


def test_unit_seed_folds_into_float_products():
    """`1.0 * v` is `v` for a Python float `v` (a float parameter, a math function of
    numbers): grad writes no multiplication by the seed. Not for an int, whose
    gradient would then be an int."""
    df = s2sad.grad(logsin, wrt=(0, 1))
    assert df(1.5, 0.5) == pytest.approx((1 / 1.5 + 0.5, 1.5 - np.cos(0.5)), rel=1e-15)
    text = df.source
    assert "x2_bar = x1 - cos(x2)" in text and "x1_bar = x2 + 1.0 / x1" in text
    assert "y_bar" not in text
    dn = s2sad.grad(times_count)
    assert dn(2.0, 3) == 3.0 and type(dn(2.0, 3)) is float
    assert "y_bar * n" in dn.source


def _header_reads(text):
    """The names the header says the pullback reads (before any `;` part)."""
    comment = " ".join(line.strip().lstrip("# ") for line in text.splitlines()
                       if line.strip().startswith("#"))
    if "the pullback reads: " not in comment:
        return []
    listed = comment.split("the pullback reads: ")[1].split(" rules:")[0].split(";")[0]
    return [n.strip() for n in listed.split(",")]


@pytest.mark.parametrize("f", [rosenbrock, chain, two_updates_of_one_slice, first_read_again])
def test_header_names_only_values_the_code_has(f):
    # a value computed straight into a slice of the gradient has no name any more
    df = s2sad.grad(f)
    df(np.linspace(0.1, 0.7, 7))
    code = "\n".join(line for line in df.source.splitlines()
                     if not line.strip().startswith("#"))
    names = _header_reads(df.source)
    assert names
    for n in names:
        assert re.search(rf"\b{n}\b", code), (n, df.source)


def slice_of_product(x):
    return np.sum(x[1:] * (x[:-1] - 1.0))


def test_unit_seed_into_a_slice_is_a_copy():
    x = np.linspace(0.1, 0.9, 6)
    df = s2sad.grad(slice_of_product)
    g = df(x)
    expected = np.zeros(6)
    expected[:-1] += x[1:]
    expected[1:] += x[:-1] - 1.0
    np.testing.assert_allclose(g, expected, rtol=1e-12)
    assert "x_bar[:-1] = t\n" in df.source and "y_bar" not in df.source


def vector_products(x, w):
    # np.matmul of two vectors is a number (a gufunc, not elementwise): no buffer to
    # compute `0.25 * ...` into (found by the NumPy fuzzer's long run)
    return 0.25 * np.matmul(w[0], w[0]) + np.sum(x * np.matmul(w, w[1]))


def test_a_matmul_of_vectors_is_no_buffer():
    x = np.array([0.3, -0.7])
    w = np.array([[0.2, -0.4, 0.9], [1.3, 0.5, -0.8]])
    got = s2sad.grad(vector_products, wrt=(0, 1))(x, w)
    for i, g in enumerate(got):
        np.testing.assert_allclose(g, fd_array_grad(vector_products, (x, w), i), rtol=1e-7)
