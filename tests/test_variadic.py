"""Functions with `*args` or `**kwargs` given to s2sad (s2sad/variadic.py): each
transform differentiates them call by call, `wrt` counting the call's positional
arguments. Checked against central differences and analytic derivatives, and against
SciPy's minimiser with `args=`."""
import numpy as np
import pytest

import s2sad
from oracle import assert_close, fd_grad


def product(*xs):
    out = 1.0
    for x in xs:
        out = out * x
    return out


def scaled(x, *rest, scale=1.0, **extra):
    return scale * x * sum(r * r for r in rest) + extra.get("shift", 0.0) * x


def test_grad_of_each_positional_argument_for_each_count():
    for args in [(3.0, 2.0), (3.0, 2.0, 5.0), (1.5,)]:
        wrt = tuple(range(len(args)))
        assert_close(s2sad.grad(product, wrt=wrt)(*args), fd_grad(product, args, wrt))
    g = s2sad.grad(product)
    assert g(3.0, 2.0) == pytest.approx(2.0)
    assert g(3.0, 2.0, 5.0) == pytest.approx(10.0)     # another count, another version
    assert g(3.0, 2.0) == pytest.approx(2.0)


def test_keywords_and_kwargs_pass_through():
    args = (2.0, 3.0, 4.0)
    f = lambda x, a, b: scaled(x, a, b, scale=0.5, shift=1.5)       # noqa: E731
    expected = fd_grad(f, args, (0, 1, 2))
    assert_close(s2sad.grad(scaled, wrt=(0, 1, 2))(*args, scale=0.5, shift=1.5), expected)
    value, gradient = s2sad.value_and_grad(scaled, argnums=(0, 2))(*args, shift=1.5,
                                                                    scale=0.5)
    assert value == scaled(*args, scale=0.5, shift=1.5)
    assert_close(gradient, (expected[0], expected[2]))


def test_vjp_and_jvp_and_second_order():
    args = (2.0, 3.0, 4.0)
    y, pullback = s2sad.vjp(product, *args)
    assert y == 24.0 and pullback(1.0) == (12.0, 8.0, 6.0)
    y, dot = s2sad.jvp(product, args, (1.0, 0.0, 2.0))
    assert y == 24.0 and dot == pytest.approx(12.0 + 2 * 6.0)
    y, dot = s2sad.jvp(scaled, (2.0, 3.0), (0.0, 1.0), scale=2.0)
    assert dot == pytest.approx(2.0 * 2.0 * 2 * 3.0)
    # d2/dx0 dx1 of x0 x1 x2 is x2
    assert s2sad.hessian(product, wrt=0)(*args) == pytest.approx(0.0)
    assert s2sad.jacfwd(product, wrt=1)(*args) == pytest.approx(8.0)
    assert s2sad.jacrev(product, wrt=2)(*args) == pytest.approx(6.0)
    assert s2sad.hvp(scaled, wrt=1)(2.0, 3.0, 1.0, scale=2.0) == pytest.approx(2.0 * 2.0 * 2)


def test_a_scipy_objective_with_star_args():
    optimize = pytest.importorskip("scipy.optimize")

    def loss(theta, *args):
        a, b = args
        return np.sum(a * (theta - b) ** 2) + np.sum(theta ** 4)
    result = optimize.minimize(loss, np.zeros(3), args=(2.0, 1.0), method="trust-ncg",
                               jac=s2sad.grad(loss), hessp=s2sad.hessp(loss))
    # 4 (t - 1) + 4 t^3 = 0: t^3 + t - 1 = 0
    root = np.roots([1.0, 0.0, 1.0, -1.0])
    t = root[np.isreal(root)].real[0]
    assert result.success
    np.testing.assert_allclose(result.x, [t, t, t], rtol=1e-6)
    hess = s2sad.hessian(loss)(result.x, 2.0, 1.0)
    np.testing.assert_allclose(hess, np.diag(4.0 + 12 * result.x ** 2), rtol=1e-10)


def test_a_redefined_callee_is_seen():
    def term(v):
        return v * v

    def total(*xs):
        return sum(term(x) for x in xs)
    g = s2sad.grad(total)
    assert g(3.0, 1.0) == pytest.approx(6.0)

    def term(v):          # noqa: F811 - the user redefines it
        return v ** 3
    assert total(3.0, 1.0) == 28.0
    assert s2sad.grad(total)(3.0, 1.0) == pytest.approx(27.0)


def test_wrong_calls_raise_as_python_does():
    with pytest.raises(TypeError, match="unexpected keyword"):
        s2sad.grad(product)(*(), **{"not a name": 1.0})
    with pytest.raises(s2sad.S2SADError, match="not a Python name"):
        s2sad.grad(scaled)(1.0, **{"not a name": 1.0})
