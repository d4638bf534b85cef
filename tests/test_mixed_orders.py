"""Second and third derivatives taken in mixed orders of modes: a gradient of a jvp
(reverse over forward), a jvp of a jvp (forward over forward), a gradient of a jvp of a
gradient. These differentiate the code of the forward rules, and so the runtime helpers
those call (`norm_dot`, `prod_others_dot`), which have rules of their own; each is
checked against central differences of an analytic lower derivative. Where a helper has
no rule for the mode asked, s2sad refuses at the user's line that calls the primitive
(s2sad/helper_orders.py), never at a line of its own."""
import numpy as np
import pytest

import s2sad

V = np.array([0.7, -1.1, 0.4, 0.9])
X = np.array([0.8, -1.3, 0.6, 1.7])


def central(f, x, h=1e-5):
    """The derivative of `f` (number or array valued) at `x` by central differences,
    its axes the result's then `x`'s."""
    x = np.asarray(x, float)
    columns = []
    for i in range(x.size):
        e = np.zeros_like(x)
        e.flat[i] = h
        columns.append((np.asarray(f(x + e)) - np.asarray(f(x - e))) / (2 * h))
    return np.moveaxis(np.array(columns), 0, -1)


def prod(x):
    return np.prod(x)


def prod_hessian(x):
    """The product's Hessian: the product over x_i x_j off the diagonal, 0 on it."""
    h = np.prod(x) / np.outer(x, x)
    np.fill_diagonal(h, 0.0)
    return h


def norm(x):
    return np.linalg.norm(x)


def norm_hessian(x):
    n = np.linalg.norm(x)
    return (np.eye(len(x)) - np.outer(x, x) / n ** 2) / n


def frobenius_cubed(x):
    return np.linalg.norm(x.reshape(2, 2)) ** 3


def frobenius_cubed_hessian(x):
    n = np.linalg.norm(x)       # (the Frobenius norm of the 2x2 matrix: x's 2-norm)
    return 3 * n * np.eye(len(x)) + 3 * np.outer(x, x) / n


CASES = [(prod, prod_hessian), (norm, norm_hessian),
         (frobenius_cubed, frobenius_cubed_hessian)]


@pytest.mark.parametrize("f, hessian", CASES, ids=lambda c: c.__name__)
def test_a_gradient_of_a_jvp_is_the_hessian_along_the_tangent(f, hessian):
    def along(x):
        return s2sad.jvp(f, (x,), (V,))[1]
    assert np.allclose(s2sad.grad(along)(X), hessian(X) @ V, rtol=1e-10)
    assert np.allclose(s2sad.jacfwd(along)(X), hessian(X) @ V, rtol=1e-10)


@pytest.mark.parametrize("f, hessian", CASES, ids=lambda c: c.__name__)
def test_third_derivatives_through_a_jvp(f, hessian):
    """The gradient of v'H(x)v, by a jvp of a jvp and by a jvp of a gradient, against
    central differences of the analytic Hessian."""
    expected = central(lambda x: V @ hessian(x) @ V, X)

    def twice_along(x):
        return s2sad.jvp(lambda y: s2sad.jvp(f, (y,), (V,))[1], (x,), (V,))[1]

    def gradient_along(x):
        return s2sad.jvp(s2sad.grad(f), (x,), (V,))[1] @ V
    assert np.allclose(s2sad.grad(twice_along)(X), expected, rtol=1e-6, atol=1e-8)
    assert np.allclose(s2sad.grad(gradient_along)(X), expected, rtol=1e-6, atol=1e-8)


def laplacian(x):
    """The Laplacian of `energy` as a user writes it: a jvp of its gradient along each
    axis."""
    total = 0.0
    for i in range(x.shape[0]):
        e = np.zeros(x.shape[0])
        e[i] = 1.0
        total = total + s2sad.jvp(s2sad.grad(energy), (x,), (e,))[1][i]
    return total


def energy(x):
    return np.sum(np.sin(x) * x[::-1]) + np.prod(x[:3])


def energy_laplacian(x):
    # sin(x_i) x_(n-1-i) summed: d2/dx_i2 is -sin(x_i) x_(n-1-i), plus 2 cos(x_i) where
    # i is its own mirror (none for an even length); the product's diagonal is 0
    return -np.sum(np.sin(x) * x[::-1]) + 2 * sum(
        np.cos(x[i]) for i in range(len(x)) if i == len(x) - 1 - i)


def test_the_gradient_of_a_laplacian_made_of_jvps_of_a_gradient():
    assert np.isclose(laplacian(X), energy_laplacian(X))
    assert np.allclose(s2sad.grad(laplacian)(X), central(energy_laplacian, X), rtol=1e-7)


def spread(x):
    return np.median(x) ** 2


def median_along(x):
    return s2sad.jvp(spread, (x,), (V,))[1]


def test_a_helper_without_the_mode_asked_is_refused_at_the_users_line():
    """np.median's tangent calls a helper with no reverse rule: the refusal names the
    line of spread() that calls np.median, and no line of s2sad's."""
    with pytest.raises(s2sad.S2SADError) as info:
        s2sad.grad(median_along)(X)
    message = str(info.value)
    assert message.startswith(f"{__file__}:{spread.__code__.co_firstlineno + 1}: ")
    assert "np.median()" in message and "reverse-mode rule" in message
    assert message.endswith("return np.median(x) ** 2")
    assert "/s2sad/" not in message.replace(__file__, "")
