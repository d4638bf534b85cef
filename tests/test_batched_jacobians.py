"""jacfwd, hessian and jacfwd(grad) in one batched pass (s2sad/batched_jacobians.py):
against central differences and analytic formulas, and a Hessian of a function that
draws from a np.random.Generator, which must see one draw."""
import numpy as np
import pytest

import s2sad

rng = np.random.default_rng(39)


def central_jacobian(f, x, eps=1e-6):
    """Central differences of `f` (array to array) at `x`: shape f(x).shape + x.shape."""
    cols = []
    for k in range(x.size):
        e = np.zeros_like(x)
        e.flat[k] = eps
        cols.append((np.asarray(f(x + e)) - np.asarray(f(x - e))) / (2 * eps))
    return np.stack(cols, -1).reshape(np.shape(f(x)) + x.shape)


def arm(q, lengths):          # a planar arm: 5 joint angles to the hand's (x, y, angle)
    angles = np.cumsum(q)
    return np.array([np.sum(lengths * np.cos(angles)), np.sum(lengths * np.sin(angles)),
                     angles[-1]])


def mixing(x, A):
    return np.tanh(A @ x) * x[0] + np.sin(x) ** 2


@pytest.mark.parametrize("jac", [s2sad.jacfwd, s2sad.jacrev], ids=["jacfwd", "jacrev"])
def test_jacobians_against_central_differences(jac):
    q, lengths = rng.normal(size=5), np.array([1.0, 0.8, 0.6, 0.4, 0.2])
    np.testing.assert_allclose(jac(arm)(q, lengths),
                               central_jacobian(lambda v: arm(v, lengths), q),
                               rtol=1e-6, atol=1e-8)
    x, A = rng.normal(size=6), rng.normal(size=(6, 6))
    np.testing.assert_allclose(jac(mixing)(x, A), central_jacobian(lambda v: mixing(v, A), x),
                               rtol=1e-6, atol=1e-8)


def test_jacfwd_with_respect_to_two_arguments():
    x, A = rng.normal(size=3), rng.normal(size=(3, 3))
    Jx, JA = s2sad.jacfwd(mixing, wrt=(0, 1))(x, A)
    np.testing.assert_allclose(Jx, central_jacobian(lambda v: mixing(v, A), x), rtol=1e-6,
                               atol=1e-8)
    np.testing.assert_allclose(JA, central_jacobian(lambda M: mixing(x, M), A), rtol=1e-6,
                               atol=1e-8)


def logistic_loss(w, X, y):
    z = X @ w
    return np.sum(np.log1p(np.exp(z)) - y * z) + 0.5 * np.dot(w, w)


def test_hessian_of_a_logistic_loss_against_its_formula():
    D = 12
    w, X = rng.normal(size=D) * 0.3, rng.normal(size=(20, D))
    y = (rng.random(20) > 0.5).astype(float)
    p = 1.0 / (1.0 + np.exp(-X @ w))
    want = X.T @ (X * (p * (1 - p))[:, None]) + np.eye(D)      # X' diag(p(1-p)) X + I
    np.testing.assert_allclose(s2sad.hessian(logistic_loss)(w, X, y), want, rtol=1e-10)
    np.testing.assert_allclose(s2sad.jacfwd(s2sad.grad(logistic_loss))(w, X, y), want,
                               rtol=1e-10)


def test_hessian_of_two_arguments_against_central_differences():
    def f(x, s):
        return np.sum(np.sin(x) * s) + s ** 3 * x[0]
    x, s = rng.normal(size=3), 0.7
    (Hxx, Hxs), (Hsx, Hss) = s2sad.hessian(f, wrt=(0, 1))(x, s)
    gx = s2sad.grad(f, wrt=0)
    np.testing.assert_allclose(Hxx, central_jacobian(lambda v: gx(v, s), x), rtol=1e-6,
                               atol=1e-8)
    np.testing.assert_allclose(Hxs, np.sin(x) * 0 + np.cos(x) + 3 * s ** 2 * np.eye(3)[0])
    np.testing.assert_allclose(Hsx, Hxs)
    assert Hss == pytest.approx(6 * s * x[0])


def noisy(x, gen):
    z = gen.normal(size=x.shape)
    c = gen.normal()
    return np.sum(x ** 2 * z) + c * x[0] * x[1]


def test_a_hessian_sees_one_draw_of_a_generator_and_advances_it_as_one_call():
    x = rng.normal(size=3)
    gen = np.random.default_rng(5)
    copy = np.random.default_rng(5)
    z, c = copy.normal(size=3), copy.normal()          # the draw one call of noisy sees
    H = s2sad.hessian(noisy)(x, gen)
    want = np.diag(2 * z)
    want[0, 1] = want[1, 0] = c
    np.testing.assert_allclose(H, want, rtol=1e-12)
    np.testing.assert_allclose(H, H.T)
    assert gen.bit_generator.state == copy.bit_generator.state


def test_a_jacobian_sees_one_draw_of_a_generator():
    def jitter(x, gen):
        return x * gen.normal(size=x.shape)
    x = rng.normal(size=4)
    gen, copy = np.random.default_rng(8), np.random.default_rng(8)
    J = s2sad.jacfwd(jitter)(x, gen)
    np.testing.assert_allclose(J, np.diag(copy.normal(size=4)), rtol=1e-12)
    assert gen.bit_generator.state == copy.bit_generator.state


def test_hvp_over_several_vectors_is_vmap_of_hvp():
    def f(x, a):
        return np.sum(np.sin(x) * a) + np.dot(x, x) ** 2
    x, V = rng.normal(size=4), rng.normal(size=(6, 4))
    got = s2sad.vmap(s2sad.hvp(f), in_axes=(None, None, 0))(x, 2.0, V)
    product = s2sad.hvp(f)
    loop = np.stack([product(x, 2.0, v) for v in V])
    np.testing.assert_allclose(got, loop, rtol=1e-12)
    H = central_jacobian(lambda v: s2sad.grad(f)(v, 2.0), x)      # the loop's oracle
    np.testing.assert_allclose(loop, V @ H.T, rtol=1e-6, atol=1e-8)


def test_vmap_of_a_hessian_is_refused_by_name():
    with pytest.raises(s2sad.S2SADError, match="vmap batches functions, grad, "
                                               "value_and_grad and hvp; 'hessian_noisy'"):
        s2sad.vmap(s2sad.hessian(noisy), in_axes=(0, None))(rng.normal(size=(3, 2)),
                                                            np.random.default_rng(0))
