"""The adjoints of broadcasting and of matrix products written as plain NumPy when the
code is specialised on shape patterns (after_ad/inline_helpers.py), and the adjoint of max/min.

Gradients are checked against central differences (inputs unchanged, a second call
the same); the generated source is checked to spell what it should and to leave the
helpers where it cannot; a call with other shape patterns gets a version of its own.
The adjoint of a max with ties is checked against the rule written out by hand."""
import re

import numpy as np
import pytest

import s2sad

from numpy_cases import check_fused, compare, fd_array_grad


def dense(W, b, X):
    return np.sum(np.tanh(X @ W + b) ** 2)


def column(x, c):
    return np.sum(np.exp(x - c) * x)


def matvec(A, v):
    return np.sum(np.sin(A @ v))


def vecmat(u, B):
    return np.sum(np.sin(u @ B))


def dotted(A, B):
    return np.sum(np.cos(np.dot(A, B)))


def softmax_loss(Z, Y):
    S = Z - np.max(Z, axis=1, keepdims=True)
    lse = np.log(np.sum(np.exp(S), axis=1, keepdims=True))
    return -np.sum(Y * (S - lse))


def outer_sum(a, c):
    return np.sum(np.tanh(a + c) * 3.0)     # (4, 1) + (1, 3): neither has the sum's shape


def batch_bias(T, b):
    return np.sum(np.tanh(T + b))      # b of shape (1, m) against (k, n, m)


rng = np.random.default_rng(7)
CASES = {
    "dense": (dense, (rng.standard_normal((3, 4)), rng.standard_normal(4),
                      rng.standard_normal((5, 3))), (0, 1)),
    "column": (column, (rng.standard_normal((4, 3)), rng.standard_normal((4, 1))), (0, 1)),
    "matvec": (matvec, (rng.standard_normal((4, 3)), rng.standard_normal(3)), (0, 1)),
    "vecmat": (vecmat, (rng.standard_normal(3), rng.standard_normal((3, 4))), (0, 1)),
    "dotted": (dotted, (rng.standard_normal((2, 3)), rng.standard_normal((3, 4))), (0, 1)),
    "softmax_loss": (softmax_loss, (rng.standard_normal((5, 3)),
                                    np.eye(3)[rng.integers(0, 3, 5)]), 0),
    "outer_sum": (outer_sum, (rng.standard_normal((4, 1)), rng.standard_normal((1, 3))),
                  (0, 1)),
    "batch_bias": (batch_bias, (rng.standard_normal((2, 3, 4)),
                                rng.standard_normal((1, 4))), (0, 1)),
}

#: What each gradient's source has, and what it must not call.
SPELLED = {
    "dense": ["b_bar = np.sum(", ", axis=0)", "W_bar = X.T @ "],
    "column": ["np.sum(", "axis=1, keepdims=True)"],
    "matvec": ["np.outer(", " @ A"],
    "vecmat": ["B @ ", "np.outer(u, "],
    "dotted": [" @ B.T", "A.T @ "],
    "softmax_loss": ["np.sum(", "axis=1, keepdims=True)"],
    "outer_sum": ["axis=0, keepdims=True)", "axis=1, keepdims=True)"],
}
HELPERS = ["_s2s_unbroadcast", "_s2s_matmul_lhs", "_s2s_matmul_rhs", "_s2s_dot_lhs",
           "_s2s_dot_rhs"]


def source_of(f, args, wrt):
    g = s2sad.grad(f, wrt)
    g(*args)
    return g.source


@pytest.mark.parametrize("which", ["grad", "value_and_grad"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_gradients_match_finite_differences(name, which):
    f, args, wrt = CASES[name]
    check_fused(f, args, wrt, which)


@pytest.mark.parametrize("name", sorted(SPELLED))
def test_adjoints_are_plain_numpy(name):
    f, args, wrt = CASES[name]
    code = source_of(f, args, wrt)
    for text in SPELLED[name]:
        assert text in code, code
    for helper in HELPERS:
        assert helper not in code, code


def test_axes_to_drop_and_to_keep_are_left_to_the_helper():
    f, args, wrt = CASES["batch_bias"]
    assert "_s2s_unbroadcast(" in source_of(f, args, wrt)


def test_a_square_is_computed_in_its_own_buffer():
    # tanh' = 1 - t * t: t is read twice, by the product alone, then by nothing
    f, args, wrt = CASES["dense"]
    code = source_of(f, args, wrt)
    assert re.search(r"np\.multiply\((\w+), \1, out=\1\)", code), code


def test_other_shape_patterns_get_their_own_version():
    # the guard tests the patterns the sums relied on: b of shape (1,) is summed over
    # every axis, not axis 0 alone
    W, b, X = CASES["dense"][1]
    g = s2sad.grad(dense, (0, 1))
    g(W, b, X)
    assert "b.ndim != 1" in g.source
    for b2 in (b[:1].copy(), b.reshape(1, 4).copy()):
        args = (W, b2, X)
        got = g(*args)
        assert got[1].shape == b2.shape
        for i in (0, 1):
            error = compare(got[i], fd_array_grad(dense, args, i), 1e-6, 1e-8, f"d/d{i}")
            assert error is None, error


def test_patterns_only_the_sums_rely_on_are_tested():
    # no operand of a + c has the sum's shape: only the sums of the adjoint rely on
    # their patterns
    a, c = CASES["outer_sum"][1]
    g = s2sad.grad(outer_sum, (0, 1))
    g(a, c)
    for args in [(rng.standard_normal((4, 3)), c), (a, rng.standard_normal(3)),
                 (rng.standard_normal((1, 1)), c)]:
        got = g(*args)
        for i in (0, 1):
            assert got[i].shape == args[i].shape
            error = compare(got[i], fd_array_grad(outer_sum, args, i), 1e-6, 1e-8, f"d/d{i}")
            assert error is None, error


def test_sums_of_one_adjoint_are_returned_without_copies():
    # code without the shapes copies one of them: unbroadcast may return the adjoint
    # itself for both
    a, c = CASES["outer_sum"][1]
    code = source_of(outer_sum, (a, c), (0, 1))
    assert "np.copy" not in code, code
    a_bar, c_bar = s2sad.grad(outer_sum, (0, 1))(a, c)
    assert not np.shares_memory(a_bar, c_bar)


def test_float32_stays_float32():
    W, b, X = (a.astype(np.float32) for a in CASES["dense"][1])
    W_bar, b_bar = s2sad.grad(dense, (0, 1))(W, b, X)
    assert W_bar.dtype == b_bar.dtype == np.float32
    wide = tuple(a.astype(np.float64) for a in (W, b, X))
    np.testing.assert_allclose(W_bar, fd_array_grad(dense, wide, 0), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(b_bar, fd_array_grad(dense, wide, 1), rtol=1e-4, atol=1e-5)


# -- the adjoint of max and min: shared equally among the elements that attain it -----

def by_hand(x, g, axis, reduce=np.max):
    """The rule written out: each maximal element gets g / (number of them)."""
    m = reduce(x, axis=axis, keepdims=True)
    mask = (x == m).astype(float)
    g = np.asarray(g, dtype=float)
    g = g if axis is None else np.expand_dims(g, axis) if g.ndim < x.ndim else g
    return g * mask / mask.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("axis, keepdims", [(None, False), (0, False), (1, False),
                                            (1, True), (None, True)])
@pytest.mark.parametrize("reduce", [np.max, np.min])
def test_ties_share_the_adjoint_equally(axis, keepdims, reduce):
    x = np.array([[1.0, 3.0, 3.0], [2.0, 0.0, 2.0]])
    w = np.arange(1.0, 1.0 + np.size(reduce(x, axis=axis, keepdims=keepdims))).reshape(
        np.shape(reduce(x, axis=axis, keepdims=keepdims)))

    def f(x):
        return np.sum(w * reduce(x, axis=axis, keepdims=keepdims))
    got = s2sad.grad(f)(x)
    np.testing.assert_allclose(got, by_hand(x, w, axis, reduce), rtol=0, atol=1e-15)


def test_max_of_float32_stays_float32():
    x = np.array([[1.0, 3.0, 3.0], [2.0, 0.0, 2.0]], dtype=np.float32)

    def f(x):
        return np.sum(np.max(x, axis=1) * 2.0)
    got = s2sad.grad(f)(x)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, [[0, 1, 1], [1, 0, 1]])
