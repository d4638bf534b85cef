"""Sums of broadcast products as contractions (after_ad/peephole.py `contractions`, and
rules/runtime.py `unbroadcast_product`, `unreduce_view`, `summed`): the adjoint of a product
summed down to a shape is one matrix product, a sum of such products read only summed
down is summed term by term, and an `_s2s_unreduce` read only by them is a view.

Gradients are checked against central differences (float64) in reverse mode (`grad`,
`value_and_grad`, whose code has the rewrites) and forward mode (`jvp`), over shapes
that broadcast along leading, middle and trailing axes; the runtime helpers against
NumPy's own products and sums."""
import numpy as np
import pytest

import s2sad
from s2sad.rules import runtime

from numpy_cases import check_fused, compare, fd_array_grad


def pairs(x, m):
    # n-body accelerations: differences by broadcasting, sums over pairs and coordinates
    d = x[:, None, :] - x[None, :, :]
    r2 = np.sum(d * d, axis=2) + 0.1
    w = r2 ** -1.5
    a = -np.sum(d * (m[None, :, None] * w[:, :, None]), axis=1)
    return np.sum(a * a) + np.sum(np.sin(a))


def steps(x, v, m):
    for i in range(3):
        d = x[:, None, :] - x[None, :, :]
        r2 = np.sum(d * d, axis=2) + 0.1
        a = -np.sum(d * (m[None, :, None] * r2[:, :, None] ** -1.5), axis=1)
        v = v + 0.01 * a
        x = x + 0.01 * v
    return np.sum(x * x) + np.sum(v * v)


def outer_sum(x, y):
    # x (k, 3), y (n, 3): a (k, n) matrix of dot products, by broadcasting
    return np.sum(np.sum(x[:, None, :] * y[None, :, :], axis=2) ** 2)


def leading(a, b):
    # b (4,) broadcast along a's two leading axes, summed over them
    s = np.sum(a * b, axis=(0, 1))
    return np.sum(np.tanh(s))


def middle(a, b):
    # a (3, 5, 2) times b (3, 1, 2): b broadcast along the middle axis
    return np.sum(np.cos(np.sum(a * b, axis=2)))


def kept(x, y):
    return np.sum(np.exp(np.sum(x * y, axis=1, keepdims=True)) * x)


def difference_squared(x, w):
    # the adjoint of d sums two products of d's shape, each read summed down twice
    d = x[:, None, :] - x[None, :, :]
    return np.sum(d * d * w[:, :, None]) + np.sum(np.sum(d * w[:, :, None], axis=1) ** 2)


def field(x, q):
    # the adjoint of d, one product, read summed down twice: never formed
    d = x[:, None, :] - x[None, :, :]
    return np.sum(np.sum(d * q[None, :, None], axis=1) ** 2)


def mixed_shapes(x, y, z):
    t = x * y + z
    return np.sum(np.sum(t * x, axis=0) ** 2)


def unknown_shape(x, w):
    # a term of d's adjoint, `t_bar * np.cos(d)`, of a shape the pass does not know
    d = x[:, None, :] - x[None, :, :]
    t = np.sin(d) * w[:, :, None] + d * d * w[:, :, None]
    return np.sum(np.sum(t, axis=1) ** 2)


def rng_args(*shapes, seed=0):
    rng = np.random.default_rng(seed)
    return tuple(rng.uniform(0.5, 1.5, s) for s in shapes)


CASES = [
    (pairs, rng_args((5, 3), (5,)), (0, 1)),
    (steps, rng_args((4, 3), (4, 3), (4,)), (0, 1, 2)),
    (outer_sum, rng_args((4, 3), (6, 3)), (0, 1)),
    (outer_sum, rng_args((1, 3), (6, 3)), (0, 1)),
    (leading, rng_args((2, 3, 4), (4,)), (0, 1)),
    (leading, rng_args((2, 3, 4), (1, 3, 1)), (0, 1)),
    (middle, rng_args((3, 5, 2), (3, 1, 2)), (0, 1)),
    (middle, rng_args((3, 5, 2), (2,)), (0, 1)),
    (kept, rng_args((3, 4), (4,)), (0, 1)),
    (kept, rng_args((3, 4), (3, 1)), (0, 1)),
    (difference_squared, rng_args((5, 3), (5, 5)), (0, 1)),
    (difference_squared, rng_args((5, 3), (1, 5)), (0, 1)),
    (field, rng_args((4, 3), (4,)), (0, 1)),
    (field, rng_args((4, 1), (4,)), (0, 1)),
    (mixed_shapes, rng_args((3, 4), (4,), (3, 1)), (0, 1, 2)),
    (mixed_shapes, rng_args((3, 4), (3, 4), (1,)), (0, 1, 2)),
    (unknown_shape, rng_args((5, 3), (5, 5)), (0, 1)),
]
IDS = [f"{f.__name__}-{'-'.join('x'.join(map(str, a.shape)) for a in args)}"
       for f, args, _ in CASES]


@pytest.mark.parametrize("which", ["grad", "value_and_grad"])
@pytest.mark.parametrize("f, args, wrt", CASES, ids=IDS)
def test_reverse_mode_matches_finite_differences(f, args, wrt, which):
    check_fused(f, args, wrt, which)


@pytest.mark.parametrize("f, args, wrt", CASES, ids=IDS)
def test_forward_mode_matches_finite_differences(f, args, wrt):
    rng = np.random.default_rng(1)
    tangents = tuple(rng.standard_normal(a.shape) for a in args)
    _, got = s2sad.jvp(f, args, tangents)
    want = sum(np.sum(fd_array_grad(f, args, i) * t) for i, t in enumerate(tangents))
    assert compare(got, want, 1e-6, 1e-8, f"jvp of {f.__name__}") is None


def source_of(f, args, wrt):
    g = s2sad.grad(f, wrt)
    g(*args)
    return g.source


def test_the_sums_over_pairs_are_contractions():
    text = source_of(pairs, *CASES[0][1:])
    assert "_s2s_unbroadcast_product(" in text
    assert "_s2s_unreduce_view(" in text
    # the adjoint of d, a sum of two products of its (n, n, 3) shape, is not formed:
    # each is summed down to x[:, None, :] and x[None, :, :] in one contraction
    assert "d_bar =" not in text
    assert "_s2s_unbroadcast(d_bar" not in text
    assert text.count("_s2s_unbroadcast_product(") >= 6


def test_a_product_read_only_summed_down_is_not_formed():
    text = source_of(*next(c for c in CASES if c[0] is field))
    assert "d_bar" not in text
    assert "t_bar = _s2s_unbroadcast_product(t_3_bar, t_2, t)" in text
    assert "t_1_bar = -_s2s_unbroadcast_product(t_3_bar, t_2, t_1)" in text


def test_a_sum_with_a_term_of_unknown_shape_is_formed():
    # summing it term by term is right only for terms of the sum's shape
    text = source_of(*CASES[-1])
    assert "d_bar = 2 * t_6_bar * d + t_3_bar * np.cos(d)" in text
    assert "_s2s_unbroadcast(d_bar, t_1)" in text


def test_a_number_factor_is_no_contraction():
    def scaled(x, c):
        return np.sum(np.sum(x * c, axis=0) ** 2)
    text = source_of(scaled, (np.ones((3, 2)), 2.0), 0)
    assert "_s2s_unbroadcast_product" not in text


# -- the runtime helpers ----------------------------------------------------------------
SHAPES = [((4, 1, 3), (1, 5, 3), (4, 5, 1)), ((4, 1, 3), (1, 5, 3), (1, 5, 3)),
          ((4, 1, 3), (1, 5, 3), (4, 1, 3)), ((4, 1, 3), (1, 5, 3), (3,)),
          ((4, 1, 3), (1, 5, 3), ()), ((4, 1, 3), (1, 5, 3), (4, 5, 3)),
          ((2, 3, 4), (4,), (4,)), ((2, 3, 4), (4,), (3, 1)), ((6,), (6,), ()),
          ((5, 1), (1, 7), (5, 7)), ((5, 1), (1, 7), (1, 1)), ((1,), (), ()),
          ((3, 4, 5, 2), (3, 1, 5, 2), (4, 1, 1)), ((3, 4, 5, 2), (3, 1, 5, 2), (5, 1)),
          ((3, 4, 5, 2), (1, 4, 1, 1), (5, 2)), ((3, 1), (3, 3), (1, 3)),
          ((3, 1), (1, 1), (3, 1)), ((1, 4), (3, 1), (4,))]


@pytest.mark.parametrize("a_shape, b_shape, x_shape", SHAPES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128])
def test_unbroadcast_product_is_the_sum_of_the_product(a_shape, b_shape, x_shape, dtype):
    rng = np.random.default_rng(2)
    a = rng.standard_normal(a_shape).astype(dtype)
    b = rng.standard_normal(b_shape).astype(dtype)
    x = np.zeros(x_shape)
    product = a * b
    lead = product.ndim - len(x_shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, n in enumerate(x_shape)
                                       if n == 1 and product.shape[lead + i] != 1)
    want = np.sum(product, axis=axes).reshape(x_shape)
    got = runtime.unbroadcast_product(a, b, x)
    assert got.shape == x_shape and got.dtype == want.dtype
    rtol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol)
    # broadcast views (stride 0) of the operands, as `unreduce_view` makes, give the same
    wide = np.broadcast_shapes(a_shape, b_shape)
    for a_view, b_view in [(np.broadcast_to(a, wide), b), (a, np.broadcast_to(b, wide)),
                           (np.broadcast_to(a, wide), np.broadcast_to(b, wide))]:
        got = runtime.unbroadcast_product(a_view, b_view, x)
        assert got.shape == x_shape and got.flags.writeable
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol)


def test_unbroadcast_product_of_other_values_is_the_plain_product():
    assert runtime.unbroadcast_product(2.0, 3.0, 1.0) == 6.0
    got = runtime.unbroadcast_product(np.arange(6).reshape(2, 3), np.arange(3), np.zeros(3))
    np.testing.assert_array_equal(got, [0, 5, 14])


def test_unreduce_view_is_a_read_only_view_of_the_adjoint():
    g = np.arange(6.0).reshape(2, 3)
    x = np.zeros((2, 4, 3))
    view = runtime.unreduce_view(g, x, 1, False)
    np.testing.assert_array_equal(view, runtime.unreduce(g, x, 1, False))
    assert np.shares_memory(view, g) and not view.flags.writeable
    np.testing.assert_array_equal(runtime.unreduce_view(g[:, None, :], x, 1, True), view)


@pytest.mark.parametrize("shape, axes", [
    ((40, 50, 3), (1,)), ((40, 50, 3), (2,)), ((40, 50, 3), (1, 2)), ((40, 50, 3), (0,)),
    ((40, 50, 3), (0, 2)), ((8, 9, 10, 3), (1, 2)), ((5000,), (0,)), ((300, 20), (1,)),
    ((70, 70, 1), (2,))])
def test_summed_is_numpys_sum(shape, axes):
    a = np.random.default_rng(3).standard_normal(shape)
    want = a.sum(axis=axes)
    got = runtime.summed(a, axes)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


# -- what the pass takes for a write in place -------------------------------------------
@pytest.mark.parametrize("line, last, written", [
    ("y = a * b", False, set()),
    ("x_bar += g", False, {"x_bar"}),
    ("x_bar += g", True, set()),            # the last reader: its value is computed first
    ("x_bar[1:] += g", True, {"x_bar"}),
    ("x_bar[0] = g", False, {"x_bar"}),
    ("np.multiply(a, b, out=c)", False, {"c", }),
    ("t = np.multiply(a, b, out=c[1:])", False, {"c"}),
    ("np.add.at(a, i, g)", False, {"a", "np"}),
    ("a.fill(0.0)", False, {"a"}),
    ("for i in r:\n    pass", False, None),
    ("np.multiply(a, b, out=(c,))", False, None),
])
def test_writes_in_place_are_found(line, last, written):
    from s2sad import syntax
    from s2sad.after_ad import peephole
    assert peephole._written(syntax.parse(line).body[0], last) == written


def test_unreduce_view_takes_an_adjoint_already_of_the_operands_shape():
    # `np.sum(t * w)`'s adjoint of t may reach it as `unreduce(y_bar * w, t)`, with
    # y_bar * w of t's shape already (np.gradient's case in test_rules_numpy)
    rng = np.random.default_rng(3)
    g, x = rng.normal(size=(3, 4)), rng.normal(size=(3, 4))
    for axis in (None, 0, (0, 1)):
        np.testing.assert_array_equal(runtime.unreduce_view(g, x, axis, False),
                                      runtime.unreduce(g, x, axis, False))
