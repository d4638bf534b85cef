"""JAX's and SciPy's conventions in s2sad's API: `has_aux=True` (grad, value_and_grad, vjp,
jvp, jacfwd, jacrev), `argnums=` for `wrt=`, `hessp` in SciPy's order of arguments (with
`scipy.optimize.minimize(..., args=...)`), and derivatives of `@numba.njit` functions
compiled by Numba by default. Derivatives are checked against central finite differences
or analytic values.
"""
import numpy as np
import pytest

import s2sad
from s2sad.errors import S2SADError


def assert_close(actual, expected, rtol=1e-7, atol=1e-9):
    """Numbers, arrays, or tuples of them, close elementwise."""
    if isinstance(expected, tuple):
        assert isinstance(actual, tuple) and len(actual) == len(expected), actual
        for a, e in zip(actual, expected):
            assert_close(a, e, rtol, atol)
        return
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol)


def central_difference(f, x, h=1e-6):
    """The gradient of scalar function `f` at array `x`, by central differences."""
    g = np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e.flat[i] = h
        g.flat[i] = (f(x + e) - f(x - e)) / (2 * h)
    return g


# -- has_aux ------------------------------------------------------------------------------
def loss_with_stats(w, x, stats):
    residual = np.tanh(w * x) - 0.5
    loss = np.sum(residual ** 2)
    stats["calls"] = stats["calls"] + 1.0       # a dict passed through
    return loss, (residual, [np.max(residual), 3], "note", stats)


def scalar_with_aux(x, y):
    return x * x * y + np.sin(x), (x * y, (y, 2 * x))


W = np.array([0.3, -0.7, 1.1])
X = np.array([1.0, 2.0, -0.5])


def test_grad_has_aux_is_the_gradient_of_the_output_and_this_calls_aux():
    stats = {"calls": 0.0}
    g, aux = s2sad.grad(loss_with_stats, has_aux=True)(W, X, stats)
    assert_close(g, central_difference(lambda w: loss_with_stats(w, X, {"calls": 0.0})[0], W),
                 rtol=1e-6)
    residual, (largest, three), note, passed = aux
    assert_close(residual, np.tanh(W * X) - 0.5)
    assert largest == np.max(residual) and three == 3 and note == "note"
    assert passed["calls"] == 1.0
    # another call: its own aux, the first one's unchanged
    g2, aux2 = s2sad.grad(loss_with_stats, has_aux=True)(2 * W, X, {"calls": 5.0})
    assert_close(aux2[0], np.tanh(2 * W * X) - 0.5)
    assert aux2[3]["calls"] == 6.0
    assert_close(aux[0], np.tanh(W * X) - 0.5)


def test_value_and_grad_has_aux_with_a_tuple_wrt_and_argnums():
    (value, aux), (gx, gy) = s2sad.value_and_grad(scalar_with_aux, wrt=(0, 1),
                                                  has_aux=True)(1.5, -2.0)
    assert value == scalar_with_aux(1.5, -2.0)[0]
    assert aux == (-3.0, (-2.0, 3.0))
    assert_close(gx, 2 * 1.5 * -2.0 + np.cos(1.5))
    assert_close(gy, 1.5 ** 2)
    (_, aux1), g1 = s2sad.value_and_grad(scalar_with_aux, argnums=1, has_aux=True)(1.5, 4.0)
    assert aux1 == (6.0, (4.0, 3.0)) and g1 == 1.5 ** 2


def test_has_aux_as_a_decorator_and_on_a_method():
    @s2sad.grad(has_aux=True)
    def dsquare(x):
        return x * x, x + 1.0
    assert dsquare(3.0) == (6.0, 4.0)

    class Model:
        def __init__(self, scale):
            self.scale = scale

        def loss(self, x):
            return self.scale * x ** 3, self.scale
    model = Model(2.0)
    assert s2sad.grad(model.loss, has_aux=True)(2.0) == (24.0, 2.0)


def test_has_aux_with_a_dict_display():
    def f(x):
        return x * x, {"x": x, "double": 2 * x}
    g, aux = s2sad.grad(f, has_aux=True)(3.0)
    assert g == 6.0 and aux == {"x": 3.0, "double": 6.0}


def tanh_energy(x):
    t = np.tanh(x)
    u = t * 2.0
    return np.sum(u * t), {"t": t, "parts": [u, t[:2]], "n": 3, "none": None}


def test_has_aux_arrays_the_gradient_code_would_reuse_stay_as_computed():
    """The fused gradient computes into the buffers of dead temporaries and deletes them:
    the arrays in aux (`t`, `u`, a view of `t`) are returned as `f` computed them, and
    its code has no adjoint of aux (the pair is built where the compiler sees it)."""
    x = np.array([0.3, -1.2, 0.8, 2.0])
    for made in (s2sad.grad, s2sad.value_and_grad):
        d = made(tanh_energy, has_aux=True)
        first = d(x)
        aux = first[1] if made is s2sad.grad else first[0][1]
        g = first[0] if made is s2sad.grad else first[1]
        assert_close(g, central_difference(lambda v: tanh_energy(v)[0], x))
        t = np.tanh(x)
        assert_close(aux["t"], t) and assert_close(aux["parts"][0], 2 * t)
        assert_close(aux["parts"][1], t[:2])
        assert (aux["n"], aux["none"]) == (3, None)
        assert "aux_seed" not in d.source and "t_bar" in d.source


def test_has_aux_of_a_pair_returned_in_branches_and_of_a_redefined_helper():
    """A pair the compiler does not see built (a return in each branch) is seeded at run
    time; a helper redefined between calls is the one differentiated."""
    def scale(v):
        return v * 2.0

    def f(x):
        if x > 0:
            return scale(x) ** 2, "right"
        return np.sin(x), "left"
    d = s2sad.grad(f, has_aux=True)
    assert d(1.5) == (pytest.approx(8 * 1.5), "right")
    assert d(-0.5) == (pytest.approx(np.cos(-0.5)), "left")
    assert "aux_seed" in d.source

    def scale(v):                                   # noqa: F811 - redefined, as a notebook does
        return v * 3.0
    assert d(1.5) == (pytest.approx(18 * 1.5), "right")


def test_vjp_has_aux_and_an_aux_changed_in_place():
    def f(x):
        y = np.sin(x)
        return y * y, y
    x = np.array([0.2, 1.3])
    out, pullback, aux = s2sad.vjp(f, x, has_aux=True)
    assert_close(out, np.sin(x) ** 2)
    assert_close(aux, np.sin(x))
    aux[:] = 100.0                      # the user's copy: the pullback reads its own
    (x_bar,) = pullback(np.array([1.0, -2.0]))
    assert_close(x_bar, 2 * np.sin(x) * np.cos(x) * np.array([1.0, -2.0]))


def test_jvp_jacfwd_jacrev_has_aux():
    def f(p):
        return np.array([p[0] * p[1], np.exp(p[1])]), (p[0] + 1.0, "kept")
    p = np.array([1.5, 0.5])
    expected = np.array([[p[1], p[0]], [0.0, np.exp(p[1])]])
    for jacobian in (s2sad.jacfwd, s2sad.jacrev):
        J, aux = jacobian(f, has_aux=True)(p)
        assert_close(J, expected)
        assert aux == (2.5, "kept")
    out, out_dot, aux = s2sad.jvp(f, (p,), (np.array([0.0, 1.0]),), has_aux=True)
    assert_close(out, f(p)[0])
    assert_close(out_dot, expected[:, 1])
    assert aux == (2.5, "kept")


def test_jacobians_has_aux_with_argnums():
    def f(x, y):
        return np.array([x * y, x + y ** 2]), x - y
    for jacobian in (s2sad.jacfwd, s2sad.jacrev):
        (jx, jy), aux = jacobian(f, argnums=(0, 1), has_aux=True)(2.0, 3.0)
        assert_close(jx, np.array([3.0, 1.0]))
        assert_close(jy, np.array([2.0, 6.0]))
        assert aux == -1.0


def not_a_pair(x):
    return x * x


def test_has_aux_refusals_are_located():
    for made in (s2sad.grad, s2sad.value_and_grad):
        with pytest.raises(S2SADError, match=r"test_jax_conventions\.py:\d+: .*has_aux=True"
                                             r".* return a pair \(output, aux\).*a float"):
            made(not_a_pair, has_aux=True)(2.0)
    with pytest.raises(S2SADError, match=r"test_jax_conventions\.py:\d+: vjp"):
        s2sad.vjp(not_a_pair, 2.0, has_aux=True)
    with pytest.raises(S2SADError, match=r"test_jax_conventions\.py:\d+: .*numba backend "
                                         "returns no aux"):
        s2sad.grad(scalar_with_aux, has_aux=True, backend="numba")


def test_a_gradient_with_aux_called_in_differentiated_code():
    dsq = s2sad.grad(scalar_with_aux, has_aux=True)
    both = s2sad.value_and_grad(scalar_with_aux, wrt=(0, 1), has_aux=True)

    def outer(x):
        g, (xy, (y, twice)) = dsq(x, 2.0)
        (value, aux), (gx, gy) = both(x, x)
        return g * x + xy * twice + value * aux[0] + gx * gy

    def closed(x):      # g = 2 x y + cos x at y = 2; at y = x: gx = 2 x^2 + cos x, gy = x^2
        return ((4 * x + np.cos(x)) * x + 2 * x * 2 * x + (x ** 3 + np.sin(x)) * x * x
                + (2 * x * x + np.cos(x)) * x * x)
    x, h = 1.0, 1e-6
    assert outer(x) == pytest.approx(closed(x), rel=1e-12)
    expected = (closed(x + h) - closed(x - h)) / (2 * h)
    assert s2sad.grad(outer)(x) == pytest.approx(expected, rel=1e-7)
    assert s2sad.jvp(outer, (x,), (1.0,))[1] == pytest.approx(expected, rel=1e-7)


# -- argnums ------------------------------------------------------------------------------
def three(x, y, z):
    return x * y ** 2 * np.sin(z)


def test_argnums_on_every_transform_that_takes_wrt():
    args = (1.5, -0.5, 0.7)
    x, y, z = args
    gx, gz = s2sad.grad(three, argnums=(0, 2))(*args)
    assert_close((gx, gz), (y ** 2 * np.sin(z), x * y ** 2 * np.cos(z)))
    assert_close(s2sad.value_and_grad(three, argnums=1)(*args)[1], 2 * x * y * np.sin(z))
    for jacobian in (s2sad.jacfwd, s2sad.jacrev):
        assert_close(jacobian(three, argnums=2)(*args), x * y ** 2 * np.cos(z))
    assert_close(s2sad.hessian(three, argnums=1)(*args), 2 * x * np.sin(z))
    assert_close(s2sad.hvp(three, argnums=2)(*args, 2.0), -2.0 * x * y ** 2 * np.sin(z))
    assert_close(s2sad.hessp(three, argnums=1)(x, y, 3.0, z), 6.0 * x * np.sin(z))
    assert_close(s2sad.check_grad(three, *args, argnums=(1,)), (2 * x * y * np.sin(z),))


def test_argnums_and_wrt_together_or_argnums_by_name_are_refused():
    with pytest.raises(S2SADError, match="give one of them"):
        s2sad.grad(three, wrt=0, argnums=1)
    with pytest.raises(S2SADError, match="give one of them"):
        s2sad.hessian(three, wrt="x", argnums=0)
    with pytest.raises(S2SADError, match="argnums are positions"):
        s2sad.jacfwd(three, argnums="y")
    with pytest.raises(S2SADError, match="argnums are positions"):
        s2sad.grad(three, argnums=(0, True))


# -- SciPy: hessp in SciPy's order, with args= ----------------------------------------------
def bowl(x, a, c):
    """Convex, with its minimum at x = c whatever a > 0: sum(a cosh(x - c) + (x - c)^4)."""
    d = x - c
    return np.sum(a * np.cosh(d) + d ** 4)


C = np.array([0.5, -1.0, 2.0])


def test_hessp_is_the_hessian_times_p_in_scipys_order():
    x, p = np.array([0.1, 0.4, -0.3]), np.array([1.0, -2.0, 0.5])
    d = x - C
    expected = (2.0 * np.cosh(d) + 12 * d ** 2) * p          # the Hessian is diagonal
    assert_close(s2sad.hessp(bowl)(x, p, 2.0, C), expected)
    assert_close(s2sad.hvp(bowl)(x, 2.0, C, p), expected)


@pytest.mark.parametrize("method, derivative", [
    ("trust-ncg", "hessp"), ("newton-cg", "hessp"), ("trust-krylov", "hessp"),
    ("trust-ncg", "hess"), ("newton-cg", "hess"), ("trust-exact", "hess")])
def test_scipy_minimize_with_args_jac_hess_and_hessp(method, derivative):
    optimize = pytest.importorskip("scipy.optimize")
    extra = ({"hessp": s2sad.hessp(bowl)} if derivative == "hessp" else
             {"hess": s2sad.hessian(bowl)})
    result = optimize.minimize(bowl, np.zeros(3), args=(2.0, C), method=method,
                               jac=s2sad.grad(bowl), **extra)
    assert result.success, result.message
    assert_close(result.x, C, atol=1e-4)


def test_hessp_refuses_a_tuple_wrt_and_too_few_arguments():
    with pytest.raises(S2SADError, match="one argument"):
        s2sad.hessp(three, wrt=(0, 1))
    with pytest.raises(S2SADError, match="SciPy's order"):
        s2sad.hessp(bowl)(np.zeros(3))


# -- @numba.njit functions: Numba-compiled derivatives by default --------------------------
def test_derivatives_of_njit_functions_are_compiled_by_numba_by_default():
    numba = pytest.importorskip("numba")

    @numba.njit
    def cube(x, y):
        return x ** 3 * y

    dcube = s2sad.grad(cube)
    assert isinstance(dcube, s2sad.numba_api.NativeDerivative)
    assert dcube(2.0, 5.0) == 60.0

    @numba.njit
    def twice(x):
        return 2.0 * dcube(x, 1.0)            # callable from njit code
    assert twice(2.0) == 24.0
    assert s2sad.value_and_grad(cube, wrt=1)(2.0, 5.0) == (40.0, 8.0)
    assert s2sad.jvp(cube, (2.0, 5.0), (1.0, 0.0)) == (40.0, 60.0)
    assert s2sad.hvp(cube)(2.0, 5.0, 1.0) == 60.0
    assert s2sad.hessian(cube)(2.0, 5.0) == 60.0
    python = s2sad.grad(cube, backend="python")
    assert isinstance(python, s2sad.api.GradientFunction)
    assert python(2.0, 5.0) == 60.0
    # what only the Python backend has
    assert s2sad.grad(cube, has_aux=False, memory=1e6)(1.0, 2.0) == 6.0


def test_derivatives_of_gradients_of_njit_functions_are_right_or_refused():
    numba = pytest.importorskip("numba")

    @numba.njit
    def quartic(x):
        return x ** 4

    x = 2.5                  # f' = 4 x^3 = 62.5, f'' = 12 x^2 = 75, f''' = 24 x = 60
    for backend in (None, "numba", "python"):
        gradient = s2sad.grad(quartic, backend=backend)
        assert gradient(x) == 62.5
        assert s2sad.grad(gradient)(x) == 75.0
        assert s2sad.grad(gradient, backend="python")(x) == 75.0
        assert s2sad.jacfwd(gradient)(x) == 75.0
        assert s2sad.jvp(gradient, (x,), (1.0,)) == (62.5, 75.0)   # forward over reverse
        for refused in (lambda: s2sad.hessian(gradient)(x),
                        lambda: s2sad.jacrev(gradient)(x),
                        lambda: s2sad.value_and_grad(gradient)(x)):
            with pytest.raises(S2SADError, match="derivative made by s2sad"):
                refused()
    with pytest.raises(S2SADError, match="derivative made by s2sad"):
        s2sad.grad(s2sad.value_and_grad(quartic))(x)
    assert s2sad.hessian(quartic)(x) == 75.0 and s2sad.hvp(quartic)(x, 2.0) == 150.0


def test_has_aux_of_an_njit_function():
    numba = pytest.importorskip("numba")

    @numba.njit
    def with_aux(x):
        return x * x, (x + 1.0, 2.0)
    assert s2sad.grad(with_aux, has_aux=True)(3.0) == (6.0, (4.0, 2.0))
    assert s2sad.jvp(with_aux, (3.0,), (1.0,), has_aux=True) == (9.0, 6.0, (4.0, 2.0))
