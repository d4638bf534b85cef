"""Factorizations whose vectors are not read (before_ad/unread_factors.py): `w, v =
np.linalg.eigh(h)` with `v` unread, `u, s, vh = np.linalg.svd(a)` with `s` alone, are
differentiated as their values alone, so a repeated eigenvalue (whose eigenvectors have no
derivative) or a complex matrix whose phases NumPy picks ill-definedly does not spoil the
derivative of the values. Checked against central differences of the functions as they
are, in every mode."""
import numpy as np
import pytest

import s2sad

H = 1e-6
REPEATED = np.diag([1.0, 1.0, 2.0])
BLOCKS = np.array([[2.0, 1j, 0.0], [-1j, 2.0, 0.0], [0.0, 0.0, 5.0]])   # eigenvalues 1, 3, 5
EQUAL_ON_PAIR = np.array([1.0, 1.0, 3.0])     # weighs the repeated pair alike
WEIGHTS = np.array([1.0, 2.0, 3.0])


def weighted(h):
    w, v = np.linalg.eigh(h)
    return np.sum(w * EQUAL_ON_PAIR)


def trace_of_exp(h):
    w, v = np.linalg.eigh(h)
    return np.sum(np.exp(w))


def distinct(h):
    w, v = np.linalg.eigh(h)
    return np.sum(w * WEIGHTS)


def squares(a):
    u, s, vh = np.linalg.svd(a)
    return np.sum(s * s)


def largest(a):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    return s[0] + np.sum(s)


def central_grad(f, x):
    out = np.zeros(x.shape, dtype=x.dtype)
    for idx in np.ndindex(x.shape):
        e = np.zeros(x.shape, dtype=x.dtype)
        e[idx] = H
        out[idx] = (f(x + e) - f(x - e)) / (2 * H)
        if np.iscomplexobj(x):
            out[idx] -= 1j * (f(x + 1j * e) - f(x - 1j * e)) / (2 * H)
    return out


def central_dir(f, x, d):
    return (f(x + H * d) - f(x - H * d)) / (2 * H)


def close(actual, expected, tol=1e-6):
    assert np.shape(actual) == np.shape(expected)
    assert np.allclose(actual, expected, rtol=tol, atol=tol), (actual, expected)


DIRECTION = np.array([[0.3, -1.0, 0.5], [0.7, 0.2, -0.4], [1.1, 0.6, -0.8]])


@pytest.mark.parametrize("f", [weighted, trace_of_exp])
def test_repeated_eigenvalue_reverse_and_forward(f):
    close(s2sad.grad(f)(REPEATED), central_grad(f, REPEATED))
    value, tangent = s2sad.jvp(f, (REPEATED,), (DIRECTION,))
    assert value == f(REPEATED)
    close(tangent, central_dir(f, REPEATED, DIRECTION))
    close(s2sad.jacfwd(f)(REPEATED), central_grad(f, REPEATED))
    _, vjp = s2sad.vjp(f, REPEATED)
    close(vjp(1.0)[0], central_grad(f, REPEATED))


def test_no_eigenvector_derivative_in_the_code():
    assert "_s2s_eigh_values(h)" in s2sad.source(weighted)
    assert "eigen_gaps" not in s2sad.source(weighted)
    assert "eigen_gaps" not in s2sad.source(weighted, mode="forward")


def test_vectors_read_keep_the_factorization():
    def f(h):
        w, v = np.linalg.eigh(h)
        return np.sum(w) + v[0, 0] ** 2
    assert "np.linalg.eigh(h)" in s2sad.source(f)
    h = np.array([[2.0, 0.3, 0.1], [0.3, 1.0, 0.2], [0.1, 0.2, 4.0]])
    close(s2sad.grad(f)(h), central_grad(f, h))


def test_second_order_at_distinct_eigenvalues_of_a_block_diagonal_matrix():
    h = np.array([[2.0, 0.5, 0.0], [0.5, 1.0, 0.0], [0.0, 0.0, 4.0]])
    direction = DIRECTION + DIRECTION.T
    g = s2sad.grad(distinct)
    close(s2sad.hvp(distinct)(h, direction),
          (g(h + H * direction) - g(h - H * direction)) / (2 * H), 1e-5)
    hess = s2sad.hessian(distinct)(h)
    close(np.tensordot(hess, direction, 2),
          (g(h + H * direction) - g(h - H * direction)) / (2 * H), 1e-5)


def test_complex_block_diagonal_forward_mode():
    """The phases NumPy picks for the eigenvectors of BLOCKS are ill-defined (an entry it
    keeps real is 0): with the eigenvectors unread, forward mode has nothing to refuse."""
    d = np.array([[0.4, 0.3 - 0.2j, 0.1j], [0.3 + 0.2j, -0.5, 0.6], [-0.1j, 0.6, 0.9]])
    value, tangent = s2sad.jvp(distinct, (BLOCKS,), (d,))
    assert value == distinct(BLOCKS)
    close(tangent, central_dir(distinct, BLOCKS, d))
    close(s2sad.grad(distinct)(BLOCKS), central_grad(distinct, BLOCKS))


@pytest.mark.parametrize("f", [squares, largest])
def test_svd_values_alone(f):
    a = np.array([[3.0, 0.2], [0.1, 1.0], [0.4, -0.5]])
    direction = DIRECTION[:, :2]
    close(s2sad.grad(f)(a), central_grad(f, a))
    close(s2sad.jvp(f, (a,), (direction,))[1], central_dir(f, a, direction))
    g = s2sad.grad(f)
    close(s2sad.hvp(f)(a, direction),
          (g(a + H * direction) - g(a - H * direction)) / (2 * H), 1e-5)


def test_svd_repeated_singular_values():
    a = 2.0 * np.eye(3)[:, :2]
    close(s2sad.grad(squares)(a), 2 * a)           # the gradient of |a|^2
    close(s2sad.jvp(squares, (a,), (DIRECTION[:, :2],))[1],
          central_dir(squares, a, DIRECTION[:, :2]))


def full_vectors(a):
    u, s, vt = np.linalg.svd(a)             # full_matrices=True, NumPy's default
    return np.sum(u[:, :2] * vt[:2, :2].T[:1]) + np.sum(s)


def full_q(a):
    q, r = np.linalg.qr(a, mode="complete")
    return np.sum(q) + np.sum(r)


@pytest.mark.parametrize("f, line", [(full_vectors, 1), (full_q, 1)])
def test_the_full_factors_of_a_non_square_matrix_are_refused_at_the_users_line(f, line):
    """Which factors are the full ones shows in their shapes, when the derivative runs:
    the refusal names the user's line (the rules' templates read it as `where`)."""
    a = np.random.default_rng(3).normal(size=(4, 3))
    at = rf"test_unread_factors.py:{f.__code__.co_firstlineno + line}: s2sad differentiates"
    with pytest.raises(s2sad.S2SADError, match=at):
        s2sad.grad(f)(a)
    with pytest.raises(s2sad.S2SADError, match=at):
        s2sad.jvp(f, (a,), (a,))
    square = a[:3]                          # a square matrix's full factors are the thin ones
    g = s2sad.grad(f)(square)
    fd = np.zeros_like(square)
    for idx in np.ndindex(square.shape):
        e = np.zeros_like(square)
        e[idx] = H
        fd[idx] = (f(square + e) - f(square - e)) / (2 * H)
    np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-7)


def masked_total(x, where):
    return np.sum(x * where)


def test_a_rule_parameter_named_where_is_the_calls_argument():
    """(Templates read `where` as the call's line only where no parameter is so named.)"""
    from s2sad.rules.registry import define
    define(masked_total, "x, where", "g * where", namespace={})
    mask = np.array([1.0, 0.0, 2.0])

    def f(x):
        return masked_total(x, mask)
    np.testing.assert_array_equal(s2sad.grad(f)(np.ones(3)), mask)
    assert s2sad.jvp(f, (np.ones(3),), (np.ones(3),))[1] == 3.0
