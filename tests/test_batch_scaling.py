"""The batched pass's scaled values (ad/batch_scaling.py): a batched value times values the
batch shares is kept as its scale, computed batched only where something else reads it,
and its sum is a matrix product. Each case against a loop of the unbatched function (a
derivative's loop checked against central differences), and the batched source read
for where the simplification applies and where it must not."""
import numpy as np
import pytest

import s2sad
from numpy_cases import fd_array_grad
from s2sad import pipeline
from s2sad.rules.batching import batch_sum_scaled

rng = np.random.default_rng(41)
B = 4


def batched_source(f, batched):
    params = f.__code__.co_varnames[:f.__code__.co_argcount]
    return pipeline.stage_source(f, None, tuple(params.index(p) for p in batched),
                                 {p: np.ndarray for p in params}, mode="batched")


def looped(f, in_axes, args):
    n = next(len(a) for a, ax in zip(args, in_axes) if ax is not None)
    return np.stack([f(*[a if ax is None else a[b] for a, ax in zip(args, in_axes)])
                     for b in range(n)])


def chain(x, u, v):
    t = x * u
    s = -t / v + t * v
    return np.sum(s)


def read_otherwise(x, u):
    t = x * u
    return np.sum(t * u) + t[0]


def square(x, u):
    t = x * x               # (both operands batched: not a scale)
    return np.sum(t * u)


def reassigned(x, u):
    t = x * u
    u = u * 2.0             # (the scale `u` of t is read before this)
    return np.sum(t * u) + np.sum(t)


def written(x, u):
    w = u * 1.0
    t = x * w
    w[0] = 5.0              # (an element write into the scale after t is made)
    return np.sum(t) + np.sum(w)


def rows(x, m):
    return np.sum(x * m, axis=0) + np.sum(x * m, keepdims=True)


def matrix_items(x, m):     # items of two axes: the sum is not a matrix product
    return np.sum(x[:, None] * m)


CASES = [(chain, ("x",)), (read_otherwise, ("x",)), (square, ("x",)),
         (reassigned, ("x",)), (written, ("x",)), (rows, ("x",)), (matrix_items, ("x",)),
         (chain, ("x", "u")), (read_otherwise, ("x", "u"))]


def arguments(f, batched):
    params = f.__code__.co_varnames[:f.__code__.co_argcount]
    shapes = {"m": (3, 3)}
    args = [rng.normal(size=(B,) * (p in batched) + shapes.get(p, (3,))) + 2.0 for p in params]
    return args, tuple(0 if p in batched else None for p in params)


@pytest.mark.parametrize("f, batched", CASES,
                         ids=lambda c: c.__name__ if callable(c) else "+".join(c))
def test_vmap_of_scaled_values_against_a_loop(f, batched):
    args, in_axes = arguments(f, batched)
    got = s2sad.vmap(f, in_axes=in_axes)(*args)
    np.testing.assert_allclose(got, looped(f, in_axes, args), rtol=1e-12)


def test_a_chain_of_shared_factors_is_computed_on_the_scale_and_summed_by_a_product():
    text = batched_source(chain, ("x",))
    assert "s_scale = " in text and "_s2s_batch_sum_scaled(x, s_scale, None)" in text
    assert "_s2s_batch_pad" not in text        # (no batched product at all)


def test_a_scaled_value_read_otherwise_is_computed_once_where_it_is_assigned():
    text = batched_source(read_otherwise, ("x",))
    assert text.count("t = ") == 1 and "_s2s_batch_sum_scaled(x, " in text


@pytest.mark.parametrize("f, batched", [(chain, ("x", "u")), (square, ("x",))],
                         ids=["batched u", "x * x"])
def test_no_scale_where_the_factor_is_batched(f, batched):
    text = batched_source(f, batched)
    assert "t = " in text and "_s2s_batch_sum_scaled(x, " not in text


def test_a_scale_reassigned_or_written_after_is_read_as_it_was():
    # (Wengert form names the new values apart: `u_1 = u * 2.0`, `w_1 = setitem(w, ...)`)
    assert "_s2s_batch_sum_scaled(x, u, None)" in batched_source(reassigned, ("x",))
    assert "_s2s_batch_sum_scaled(x, w, None)" in batched_source(written, ("x",))


def test_the_sum_of_a_scaled_value_is_the_sum_of_each_item():
    x, v = rng.normal(size=(B, 3)), rng.normal(size=3)
    np.testing.assert_allclose(batch_sum_scaled(x, v), [np.sum(a * v) for a in x])
    m = rng.normal(size=(3, 3))         # (a scale of two axes: each item broadcast)
    np.testing.assert_allclose(batch_sum_scaled(x, m, None), [np.sum(a * m) for a in x])
    np.testing.assert_allclose(batch_sum_scaled(x, m, 0), [np.sum(a * m, axis=0) for a in x])
    ints = np.arange(6).reshape(2, 3)     # (ints: no float product, the sum's own dtype)
    got = batch_sum_scaled(ints, np.array([1, 2, 3]))
    assert got.dtype == np.sum(ints[0] * np.array([1, 2, 3])).dtype
    np.testing.assert_array_equal(got, [8, 26])


def test_vmap_keeps_integer_results_integers():
    def f(x, u):
        t = x * u
        return -t * 2 + np.sum(t)
    xs, u = np.arange(12).reshape(B, 3), np.array([1, 2, 3])
    got = s2sad.vmap(f, in_axes=(0, None))(xs, u)
    want = looped(f, (0, None), (xs, u))
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


# -- derivatives: the scales of forward mode batched along tangents --------------------------
def softplus_loss(w, X, y):
    z = X @ w
    return np.sum(np.log1p(np.exp(z)) - y * z) + 0.5 * np.dot(w, w)


def arm(q, lengths):
    angles = np.cumsum(q)
    return np.array([np.sum(lengths * np.cos(angles)), np.sum(lengths * np.sin(angles)),
                     angles[-1]])


def test_the_hessian_along_the_unit_tangents_against_central_differences():
    w, X = rng.normal(size=5) * 0.3, rng.normal(size=(7, 5))
    y = (rng.random(7) > 0.5).astype(float)
    H = s2sad.hessian(softplus_loss)(w, X, y)
    g = s2sad.grad(softplus_loss)
    fd = np.stack([fd_array_grad(lambda v: g(v, X, y)[k], (w,), 0) for k in range(5)])
    np.testing.assert_allclose(H, fd, rtol=1e-6, atol=1e-8)
    p = 1 / (1 + np.exp(-X @ w))
    np.testing.assert_allclose(H, X.T @ (X * (p * (1 - p))[:, None]) + np.eye(5), rtol=1e-12)


def test_the_jacobian_of_sums_of_scaled_tangents_against_central_differences():
    q, lengths = rng.normal(size=5), np.array([1.0, 0.8, 0.6, 0.4, 0.2])
    J = s2sad.jacfwd(arm)(q, lengths)
    fd = np.stack([fd_array_grad(lambda v: arm(v, lengths)[k], (q,), 0) for k in range(3)])
    np.testing.assert_allclose(J, fd, rtol=1e-6, atol=1e-8)


def test_tangents_that_are_not_the_unit_vectors_against_a_loop_of_jvp():
    q, lengths = rng.normal(size=5), np.array([1.0, 0.8, 0.6, 0.4, 0.2])
    V = rng.normal(size=(B, 5))

    def along(q, v):
        return s2sad.jvp(arm, (q, lengths), (v, np.zeros(5)))[1]
    got = s2sad.vmap(along, in_axes=(None, 0))(q, V)
    loop = np.stack([along(q, v) for v in V])
    np.testing.assert_allclose(got, loop, rtol=1e-12)
    J = np.stack([fd_array_grad(lambda u: arm(u, lengths)[k], (q,), 0) for k in range(3)])
    np.testing.assert_allclose(loop, V @ J.T, rtol=1e-6, atol=1e-8)


def test_a_matrix_that_differs_across_the_batch_against_a_loop_of_grad():
    w, Xs = rng.normal(size=5) * 0.3, rng.normal(size=(B, 7, 5))
    y = (rng.random(7) > 0.5).astype(float)
    g = s2sad.grad(softplus_loss)
    got = s2sad.vmap(g, in_axes=(None, 0, None))(w, Xs, y)
    loop = np.stack([g(w, X, y) for X in Xs])
    np.testing.assert_allclose(got, loop, rtol=1e-12)
    fd = np.stack([fd_array_grad(lambda v: softplus_loss(v, X, y), (w,), 0) for X in Xs])
    np.testing.assert_allclose(loop, fd, rtol=1e-6, atol=1e-8)


def test_a_list_of_batched_floats_is_stacked_as_np_stack_stacks_it():
    from s2sad.rules.batching import batch_array
    a, b = rng.normal(size=B), rng.normal(size=B)
    got = batch_array([a, 2.0, b])
    np.testing.assert_array_equal(got, np.stack([a, np.full(B, 2.0), b], axis=1))
    assert got.dtype == np.float64 and got.flags.writeable
    ints = batch_array([np.arange(B), 1])       # (others: the general path, its dtype)
    assert ints.dtype == np.stack([np.arange(B), np.full(B, 1)], axis=1).dtype
