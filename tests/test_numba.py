"""The numba backend (`backend="numba"`): gradients compiled by numba.njit, checked against
central finite differences and against the Python backend, called from Python and from
`@numba.njit` code; gradients of `@numba.njit` functions; what it refuses, and where.

Numba compiles each function in about a second: the gradients are made once, at module
level, and each test calls them.
"""
import functools
import math
import types

import numpy as np
import pytest

from optional import require

numba = require("numba", "numba")

import s2sad  # noqa: E402
from s2sad.errors import NativeBackendError  # noqa: E402
from oracle import assert_close, fd_grad  # noqa: E402


def babysqrt(x):
    t = (1 + x) / 2
    for i in range(1000):
        t = (t + x / t) / 2
    return t


def lotka_volterra(a, b, c, d):
    u = 1.0
    v = 1.0
    for i in range(1000):
        du = a * u - b * u * v
        dv = -c * v + d * u * v
        u = u + 0.01 * du
        v = v + 0.01 * dv
    return u


def shrink(x):
    # a while loop whose trip count depends on x: more than the first tape's 16 rows
    y = x
    while y > 1.0:
        y = y / 1.1 + 0.01 * math.sin(y)
    return y * x


def decay(k, n):
    # the states stored element by element in a preallocated array
    u = np.zeros(n)
    u[0] = 1.0
    for i in range(n - 1):
        u[i + 1] = u[i] - 0.01 * k * u[i] * u[i]
    return u[n - 1]


def relax(k, n):
    # element stores whose adjoint terms are multiples of one adjoint: a sine, a quotient
    u = np.zeros(n)
    u[0] = 0.5
    for i in range(n - 1):
        u[i + 1] = u[i] + 0.05 * math.sin(u[i]) / (1.0 + k * u[i]) - 0.01 * u[i] * k
    return u[n - 1] * u[n // 2]


def jumps(x):
    # break, continue and an early return
    if x < -5.0:
        return 0.0
    s = 0.0
    for i in range(20):
        if s > 4.0:
            break
        if i % 3 == 0:
            continue
        s = s + math.exp(x * i) / (i + 1)
    return s * x


def nested(x):
    # an inner loop's tape, one stack for every iteration of the outer loop
    s = 0.0
    for k in range(5):
        t = x
        for i in range(k + 2):
            t = math.sin(t) * x + i
        s = s + t * t
    return s


def tanh_loss(w, x, y):
    # elementwise functions, a matrix product, slicing, a full sum
    h = np.tanh(x @ w)
    r = h[1:] - y[:-1]
    return np.sum(r * r) + 0.1 * np.sum(w * w)


GRADS = {
    "babysqrt": (babysqrt, 0, (2.0,)),
    "lotka_volterra": (lotka_volterra, (0, 1, 2, 3), (1.0, 0.5, 0.5, 0.2)),
    "shrink": (shrink, 0, (30.0,)),
    "decay": (decay, 0, (0.3, 200)),
    "relax": (relax, 0, (0.7, 100)),
    "jumps": (jumps, 0, (0.1,)),
    "nested": (nested, 0, (0.7,)),
}
NATIVE = {name: s2sad.grad(f, wrt=wrt, backend="numba") for name, (f, wrt, _) in GRADS.items()}


@pytest.mark.parametrize("name", sorted(GRADS))
def test_gradients_agree_with_finite_differences_and_the_python_backend(name):
    f, wrt, args = GRADS[name]
    got = NATIVE[name](*args)
    assert_close(got, fd_grad(f, args, wrt), rtol=1e-6, atol=1e-8)
    assert_close(got, s2sad.grad(f, wrt=wrt)(*args), rtol=1e-12, atol=1e-14)


def test_a_while_loop_grows_its_tape_and_counts_other_trips():
    for x in (0.5, 1.5, 200.0):        # no trip, a few, more than the tape's first rows
        assert_close(NATIVE["shrink"](x), fd_grad(shrink, (x,)), rtol=1e-6, atol=1e-8)
    assert "_s2s_bigger" in NATIVE["shrink"].source


def test_tapes_are_arrays_one_column_per_value():
    NATIVE["lotka_volterra"](1.0, 0.5, 0.5, 0.2)
    text = NATIVE["lotka_volterra"].source
    assert "np.empty((len(range(1000)), 2))" in text
    assert "_s2s_tape[_s2s_rows, 1] = v" in text
    assert "append" not in text and "reversed(" not in text and "respecialize" not in text


def test_elements_read_back_leave_no_tape_and_the_loop_runs_backwards_over_range():
    # u[i] is read back from u (no later write changes it): nothing is taped, and the
    # reversed loop counts down with a range Numba compiles (it has no reversed())
    NATIVE["decay"](0.3, 200)
    text = NATIVE["decay"].source
    assert "_s2s_tape" not in text and "for i in range(t - 1, -1, -1):" in text, text
    assert "        t_4 = u[i]\n" in text, text


def test_accumulations_into_an_element_are_one_multiple_of_the_carried_adjoint():
    # three u_1_bar[i] += ... a step would chain the adjoint through three additions
    NATIVE["decay"](0.3, 200)
    text = NATIVE["decay"].source
    assert "        u_1_bar[i] += t_8_bar * (-(t_3 * t_4) - t_6 * t_3 + 1.0)\n" in text
    assert text.count("u_1_bar[i] +=") == 1
    NATIVE["relax"](0.7, 100)
    assert NATIVE["relax"].source.count("u_1_bar[i] +=") == 1


def test_value_and_grad_and_the_arrays_numba_compiles():
    rng = np.random.default_rng(0)
    w, x, y = rng.normal(size=3), rng.normal(size=(6, 3)), rng.normal(size=6)
    vg = s2sad.value_and_grad(tanh_loss, wrt=(0, 1), backend="numba")
    value, (gw, gx) = vg(w, x, y)
    assert value == pytest.approx(tanh_loss(w, x, y), rel=1e-12)
    python = s2sad.grad(tanh_loss, wrt=(0, 1))(w, x, y)
    np.testing.assert_allclose(gw, python[0], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(gx, python[1], rtol=1e-12, atol=1e-14)
    for k in range(3):
        e = np.zeros(3)
        e[k] = 1e-6
        fd = (tanh_loss(w + e, x, y) - tanh_loss(w - e, x, y)) / 2e-6
        assert gw[k] == pytest.approx(fd, rel=1e-6, abs=1e-8)


dbabysqrt = NATIVE["babysqrt"]


@numba.njit
def descend_sqrt_loss(x, target, steps, rate):
    # gradient descent on (babysqrt(x) - target)^2, written entirely in Numba
    for k in range(steps):
        t = (1 + x) / 2
        for i in range(1000):
            t = (t + x / t) / 2
        x = x - rate * 2.0 * (t - target) * dbabysqrt(x)
    return x


def test_the_gradient_is_called_from_inside_numba_code():
    x = descend_sqrt_loss(2.0, 3.0, 100, 9.0)      # the minimum is at sqrt(x) = 3
    assert x == pytest.approx(9.0, rel=1e-8)


@numba.njit(fastmath=True)
def njit_step(x, c):
    return x * x * c + math.sin(x)


@numba.njit
def njit_caller(x):
    return njit_step(x, 2.0) + njit_step(3.0 * x, 0.5)


def test_grad_of_an_njit_function_reads_its_python_source():
    want = 2 * 1.3 * 2.0 + math.cos(1.3)
    assert s2sad.grad(njit_step)(1.3, 2.0) == pytest.approx(want, rel=1e-12)
    native = s2sad.grad(njit_step, backend="numba")
    assert native(1.3, 2.0) == pytest.approx(want, rel=1e-12)
    assert ("fastmath", True) in native.jit        # compiled with the options of njit_step


def test_calls_of_njit_functions_are_differentiated_through_their_python_source():
    native = s2sad.grad(njit_caller, backend="numba")
    got = native(0.7)
    assert_close(got, fd_grad(njit_caller.py_func, (0.7,)), rtol=1e-6, atol=1e-8)
    assert got == pytest.approx(s2sad.grad(njit_caller)(0.7), rel=1e-12)
    # (a call that returns a number: its gradient from the forward sweep, by its
    # value_and_grad, scaled in the pullback)
    assert "njit_step_value_and_grad" in native.source


def test_refusals_name_the_line_before_numba_sees_the_code():
    def listed(x):
        xs = [x, 2.0 * x]
        return xs[0] * xs[1]

    with pytest.raises(NativeBackendError, match=r"test_numba.py:\d+: the numba backend "
                       r"cannot compile a list") as caught:
        s2sad.grad(listed, backend="numba")(1.0)
    assert "xs = [x, 2.0 * x]" in str(caught.value)


def test_what_numba_cannot_type_is_an_s2sad_error():
    def summed_twice(x):
        return np.sum(np.sum(x * x, axis=(0, 1)) ** 2)

    def doubled(x):
        return x * 2.0

    def first(x):
        return np.sum(x[0])

    with pytest.raises(NativeBackendError, match=r"test_numba.py:\d+: the numba backend "
                       r"cannot compile the adjoint of a reduction along several axes"):
        s2sad.grad(summed_twice, backend="numba")(np.ones((2, 3)))
    with pytest.raises(s2sad.NonScalarOutputError, match="doubled.. returns an array"):
        s2sad.grad(doubled, backend="numba")(np.ones(3))
    # an array of four axes: a case of a runtime helper its Numba version does not cover
    with pytest.raises(NativeBackendError, match=r"test_numba.py:\d+: Numba could not "
                       r"compile the derivative of first\(\)"):
        s2sad.grad(first, backend="numba")(np.ones((2, 2, 2, 2)))


def test_the_backend_is_checked():
    with pytest.raises(s2sad.S2SADError, match="the backend is 'python' or 'numba'"):
        s2sad.grad(babysqrt, backend="cuda")


# -- forward mode: jvp(f, primals, tangents, backend="numba") ----------------------------
@pytest.mark.parametrize("name", sorted(GRADS))
def test_jvp_agrees_with_finite_differences_and_the_python_backend(name):
    f, wrt, args = GRADS[name]
    indices = wrt if isinstance(wrt, tuple) else (wrt,)
    direction = {i: 0.5 - 0.75 * k for k, i in enumerate(indices)}
    tangents = tuple(direction.get(i) for i in range(len(args)))
    value, tangent = s2sad.jvp(f, args, tangents, backend="numba")
    partials = fd_grad(f, args, indices)
    want = sum(p * direction[i] for p, i in zip(partials, indices))
    assert value == pytest.approx(f(*args), rel=1e-12)
    assert_close(tangent, want, rtol=1e-6, atol=1e-8)
    python = s2sad.jvp(f, args, tangents)
    assert_close((value, tangent), python, rtol=1e-12, atol=1e-14)


def test_jvp_of_numpy_code_and_its_source():
    rng = np.random.default_rng(1)
    w, x, y = rng.normal(size=3), rng.normal(size=(6, 3)), rng.normal(size=6)
    v = rng.normal(size=3)
    value, tangent = s2sad.jvp(tanh_loss, (w, x, y), (v, None, None), backend="numba")
    fd = (tanh_loss(w + 1e-6 * v, x, y) - tanh_loss(w - 1e-6 * v, x, y)) / 2e-6
    assert tangent == pytest.approx(fd, rel=1e-6, abs=1e-8)
    python = s2sad.jvp(tanh_loss, (w, x, y), (v, None, None))
    assert_close((value, tangent), python, rtol=1e-12, atol=1e-14)
    from s2sad import backends, pipeline
    text = pipeline.stage_source(decay, "native_check", (0,), {"k": float, "n": int},
                                 mode="forward", backend=backends.NUMBA)
    assert text.startswith("def decay_jvp(k, n, k_dot):\n    u = np.zeros(n)\n")
    assert "respecialize" not in text


def test_jvp_of_an_njit_function_and_a_refusal():
    value, tangent = s2sad.jvp(njit_caller, (0.7,), (1.0,), backend="numba")
    assert tangent == pytest.approx(s2sad.grad(njit_caller)(0.7), rel=1e-12)

    def listed(x):
        xs = [x, 2.0 * x]
        return xs[0] * xs[1]

    with pytest.raises(NativeBackendError, match=r"test_numba.py:\d+: the numba backend "
                       r"cannot compile a list"):
        s2sad.jvp(listed, (1.0,), (1.0,), backend="numba")


def rodrigues(rot, X):
    # ba's rotation: np.cross and np.sum(..., keepdims=True) on rows of 3-vectors
    sq = np.sum(rot * rot, axis=1, keepdims=True)
    theta = np.sqrt(sq)
    w = rot / theta
    return (X * np.cos(theta) + np.cross(w, X) * np.sin(theta)
            + w * np.sum(w * X, axis=1, keepdims=True) * (1 - np.cos(theta)))


def test_vjp_pulls_back_through_numbas_adjoint():
    from numpy_cases import fd_array_grad
    rng = np.random.default_rng(3)
    args = (rng.normal(size=(4, 3)), rng.normal(size=(4, 3)))
    y, pullback = s2sad.vjp(rodrigues, *args, backend="numba")
    np.testing.assert_allclose(y, rodrigues(*args), rtol=1e-13)
    for seed in (rng.normal(size=(4, 3)), np.eye(4, 3)):   # (a pullback called twice)
        got = pullback(seed)
        for i in (0, 1):
            expected = fd_array_grad(lambda *a: np.sum(rodrigues(*a) * seed), args, i)
            np.testing.assert_allclose(got[i], expected, rtol=1e-6, atol=1e-8)
    _, pullback = s2sad.vjp(babysqrt, 2.0, backend="numba")
    x_bar, = pullback(1.0)      # (a tuple of one adjoint a positional argument, as on Python)
    assert x_bar == pytest.approx(1 / (2 * math.sqrt(2)), rel=1e-12)
    assert type(pullback(1.0)) is type(s2sad.vjp(babysqrt, 2.0)[1](1.0)) is tuple
    with pytest.raises(s2sad.S2SADError, match="has_aux"):
        s2sad.vjp(babysqrt, 2.0, backend="numba", has_aux=True)
    with pytest.raises(s2sad.S2SADError, match="the backend is 'python' or 'numba'"):
        s2sad.jvp(babysqrt, (2.0,), (1.0,), backend="cuda")


# -- second derivatives: hvp(f, backend="numba"), hessian(f, backend="numba") ------------
def lotka_volterra_rates(p):
    # four rates in one array: a Hessian of 4 x 4
    a, b, c, d = p[0], p[1], p[2], p[3]
    u = 1.0
    v = 1.0
    for i in range(300):
        du = a * u - b * u * v
        dv = -c * v + d * u * v
        u = u + 0.01 * du
        v = v + 0.01 * dv
    return u


def fd_hessian(f, args, i, h=1e-4):
    """Second central differences of `f` with respect to argument `i` (a number or a
    1-d array), in float64: an oracle independent of s2sad."""
    x = np.asarray(args[i], dtype=float)
    n = x.size
    step = h * max(1.0, float(np.max(np.abs(x))))

    def at(dx):
        moved = list(args)
        moved[i] = float(x + dx[0]) if x.ndim == 0 else x + dx
        return f(*moved)
    units = np.eye(n) * step
    hess = np.empty((n, n))
    for j in range(n):
        for k in range(n):
            ej, ek = units[j], units[k]
            hess[j, k] = (at(ej + ek) - at(ej - ek) - at(ek - ej) + at(-ej - ek)) / (
                4 * step * step)
    return hess[0, 0] if x.ndim == 0 else hess


def damped(u, c):
    return u * math.tanh(c * u)


def calls_in_loop(x):
    # a call of a Python function in a loop: its adjoint, then the forward mode of that
    t = x
    for i in range(30):
        t = t - 0.05 * damped(t, x)
    return t


HESSIANS = {
    "babysqrt": (babysqrt, (2.0,)),
    "lotka_volterra_rates": (lotka_volterra_rates, (np.array([1.0, 0.5, 0.5, 0.2]),)),
    "shrink": (shrink, (30.0,)),
    "jumps": (jumps, (0.1,)),
    "nested": (nested, (0.7,)),
    "decay": (decay, (0.3, 200)),
    "relax": (relax, (0.7, 100)),
    "calls_in_loop": (calls_in_loop, (0.8,)),
}
NATIVE_HESSIANS = {name: s2sad.hessian(f, backend="numba") for name, (f, _) in HESSIANS.items()}


@pytest.mark.parametrize("name", sorted(HESSIANS))
def test_hessians_agree_with_second_differences_and_the_python_backend(name):
    f, args = HESSIANS[name]
    got = NATIVE_HESSIANS[name](*args)
    np.testing.assert_allclose(got, fd_hessian(f, args, 0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got, s2sad.hessian(f)(*args), rtol=1e-10, atol=1e-12)


def test_hessians_on_other_paths():
    # no trip of the while loop, more than its tape's first rows (a step of 2e-3 at
    # x = 200); the early return
    for x in (0.5, 1.5, 200.0):
        np.testing.assert_allclose(NATIVE_HESSIANS["shrink"](x),
                                   fd_hessian(shrink, (x,), 0, h=1e-5), rtol=1e-5, atol=1e-6)
    assert NATIVE_HESSIANS["jumps"](-6.0) == 0.0


def test_hvp_is_the_hessian_times_a_vector():
    p, v = np.array([1.0, 0.5, 0.5, 0.2]), np.array([0.3, -1.0, 2.0, 0.5])
    hvp = s2sad.hvp(lotka_volterra_rates, backend="numba")
    want = fd_hessian(lotka_volterra_rates, (p,), 0) @ v
    np.testing.assert_allclose(hvp(p, v), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(hvp(p, v), s2sad.hvp(lotka_volterra_rates)(p, v),
                               rtol=1e-10, atol=1e-12)
    assert s2sad.hvp(decay, backend="numba")(0.3, 200, 1.0) == pytest.approx(
        fd_hessian(decay, (0.3, 200), 0), rel=1e-5)
    # calls of @numba.njit functions, differentiated through their source
    assert s2sad.hvp(njit_caller, backend="numba")(0.7, 1.0) == pytest.approx(
        s2sad.hessian(njit_caller)(0.7), rel=1e-10)


def test_hessian_refusals_name_the_line():
    with pytest.raises(s2sad.S2SADError, match="one argument"):
        s2sad.hessian(babysqrt, wrt=(0, 1), backend="numba")(2.0)
    with pytest.raises(s2sad.S2SADError, match="the backend is 'python' or 'numba'"):
        s2sad.hvp(babysqrt, backend="cuda")


# -- a full sum of a product, whose adjoint spreads a number over an array -------------------
def summed_product(x, y):
    return np.sum(x * y)


def summed_method(x, y):
    return (x * y).sum() * 2.0 + np.sum(np.sin(x))


@pytest.mark.parametrize("f", [summed_product, summed_method], ids=lambda f: f.__name__)
def test_the_adjoint_of_a_full_sum(f):
    from numpy_cases import fd_array_grad
    x, y = np.array([0.3, -1.2, 2.0]), np.array([1.5, 0.5, -0.25])
    want = tuple(fd_array_grad(f, (x, y), i) for i in (0, 1))
    got = s2sad.grad(f, wrt=(0, 1), backend="numba")(x, y)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-7, atol=1e-9)
    value, got = s2sad.value_and_grad(f, wrt=(0, 1), backend="numba")(x, y)
    assert value == pytest.approx(f(x, y), rel=1e-14)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-7, atol=1e-9)


EXPORTED_SUM = '''\
import numpy as np


def summed_product(x, y):
    return np.sum(x * y)
'''


def test_an_exported_numba_module_of_a_full_sum(tmp_path):
    import importlib.util
    from numpy_cases import fd_array_grad
    (tmp_path / "sum_model.py").write_text(EXPORTED_SUM)
    spec = importlib.util.spec_from_file_location("sum_model", tmp_path / "sum_model.py")
    model = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(model)
    x, y = np.array([0.3, -1.2, 2.0]), np.array([1.5, 0.5, -0.25])
    s2sad.export(model.summed_product, tmp_path / "sum_numba.py", wrt=(0, 1), args=(x, y),
                 backend="numba")
    spec = importlib.util.spec_from_file_location("sum_numba", tmp_path / "sum_numba.py")
    exported = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(exported)
    gx, gy = exported.summed_product_grad(x, y)
    np.testing.assert_allclose(gx, fd_array_grad(model.summed_product, (x, y), 0), rtol=1e-7)
    np.testing.assert_allclose(gy, fd_array_grad(model.summed_product, (x, y), 1), rtol=1e-7)
    value, (gx, gy) = exported.summed_product_value_and_grad(x, y)
    assert value == pytest.approx(model.summed_product(x, y), rel=1e-14)
    np.testing.assert_allclose(gx, y)


def _power_sum(x, p):
    return np.sum(x ** p)


def _cubed(x, *, p=3.0):
    return np.sum(x ** p)


def test_the_gradient_of_a_partial_and_of_keyword_only_parameters():
    # (a partial's bound keywords are keyword-only parameters with defaults, which Numba's
    # dispatcher cannot fill in: the derivative did not compile)
    x = np.array([0.5, 1.0, 2.0])
    cube = functools.partial(_power_sum, p=3.0)
    g = s2sad.grad(cube, backend="numba")
    np.testing.assert_allclose(g(x), 3 * x ** 2)
    np.testing.assert_allclose(g(x, p=2.0), 2 * x)
    assert "grad of _power_sum" in repr(g)
    cube.keywords["p"] = 2.0        # (what it binds changed in place: compiled again)
    np.testing.assert_allclose(g(x), 2 * x)
    value, grad = s2sad.value_and_grad(cube, backend="numba")(x)
    np.testing.assert_allclose((value, *grad), (np.sum(x * x), *(2 * x)))
    k = s2sad.grad(_cubed, backend="numba")
    np.testing.assert_allclose(k(x), 3 * x ** 2)
    np.testing.assert_allclose(k(x, p=2.0), 2 * x)


def test_a_product_of_a_0d_array_is_not_refused_as_an_array_output():
    # np.asarray(x[1]) * x[0] is a NumPy scalar: the refusal, if any, says what it is
    # (it said that c() returns an array)
    def c(x):
        return np.asarray(x[1]) * x[0]

    x = np.array([0.5, 1.5])
    try:
        got = s2sad.grad(c, backend="numba")(x)
    except s2sad.S2SADError as exc:
        assert not isinstance(exc, s2sad.NonScalarOutputError), exc
        assert "test_numba.py:" in str(exc)
    else:
        np.testing.assert_allclose(got, [1.5, 0.5])


def test_a_library_function_the_code_calls_by_a_name_of_its_own_is_numbas():
    # (np.ones in a jvp taken inside the function is bound as `ones`: the backend compiled
    # NumPy's Python source of it, and Numba crashed with an IndexError)
    def f(x):
        _, t = s2sad.jvp(lambda y: np.sum(np.sin(y) * x), (x,), (np.ones(4),))
        return t * np.sum(x)

    x = np.array([0.3, -0.7, 1.1, 0.5])
    try:
        got = s2sad.grad(f, backend="numba")(x)
    except s2sad.S2SADError as exc:
        assert "test_numba.py:" in str(exc), exc
    else:
        t = np.sum(np.cos(x) * x)
        np.testing.assert_allclose(got, (np.cos(x) - x * np.sin(x)) * np.sum(x) + t)


# -- loops whose state is an array, or a tuple of arrays: their tapes lists of arrays -------
def state_array(k, u0):
    u = u0
    for i in range(10):
        u = u + k * np.sin(u)
    return np.sum(u * u)


def rk2_pair(k, p0, q0, steps):
    # the state two arrays, through a function of the user's returning a tuple
    p, q = p0, q0
    h = 0.1
    for i in range(steps):
        dp, dq = pair_rate(k, p, q)
        p, q = p + h * dp, q + h * dq
    return np.sum(p * q) + k * np.sum(q)


def pair_rate(k, p, q):
    return -k * q, p * np.cos(p)


def shrinking(x):
    # a `while` loop (its tape grown, not allocated) whose state is an array
    u = x
    while np.sum(u * u) > 0.1:
        u = 0.5 * u + 0.01 * np.tanh(u)
    return np.sum(u)


LOOP_STATES = {
    "state_array": (state_array, (0.3, np.array([1.0, 0.5, 2.0])), (0, 1)),
    "rk2_pair": (rk2_pair, (0.7, np.array([1.0, -0.5]), np.array([0.25, 2.0]), 12), (0, 1, 2)),
    "shrinking": (shrinking, (np.array([1.5, -2.0, 0.3]),), 0),
}


@pytest.mark.parametrize("name", sorted(LOOP_STATES))
def test_a_loop_whose_state_is_arrays(name):
    from numpy_cases import fd_array_grad
    f, args, wrt = LOOP_STATES[name]
    native = s2sad.grad(f, wrt=wrt, backend="numba")
    got = native(*args)
    for i, g in zip(wrt, got) if isinstance(wrt, tuple) else [(wrt, got)]:
        np.testing.assert_allclose(g, fd_array_grad(f, args, i), rtol=1e-6, atol=1e-8)
    assert "_s2s_tape = []" in native.source      # (a list of the arrays of each iteration)


def test_the_hessian_of_a_loop_whose_state_is_an_array():
    args = (0.3, np.array([1.0, 0.5, 2.0]))
    for i in (0, 1):
        got = s2sad.hessian(state_array, wrt=i, backend="numba")(*args)
        np.testing.assert_allclose(got, fd_hessian(state_array, args, i), rtol=1e-5, atol=1e-6)


# -- a local list as loop state (lstm's layers): its adjoint a list of the same length -------
def layer(w, h, c, x):
    c = c * np.tanh(w[0] * x) + np.sin(h * w[1])
    return np.tanh(c) * w[2], c


def layered(w, state, steps):
    # lists of arrays made from rows of a matrix, elements replaced in a loop in a loop
    layers = state.shape[0] // 2
    hidden = [state[2 * i] for i in range(layers)]
    cells = [state[2 * i + 1] for i in range(layers)]
    total = 0.0
    for t in range(steps):
        x = w[3] * t
        for i in range(layers):
            x, c = layer(w[i:i + 3], hidden[i], cells[i], x)
            hidden[i] = x
            cells[i] = c
        total = total + np.sum(x * x)
    return total + np.sum(hidden[0] * cells[-1])


def listed_numbers(x, n):
    xs = []
    for i in range(n):
        xs.append(x * (i + 1.0))
    total = 0.0
    for k in range(3):
        for i in range(n):
            xs[i] = np.sin(xs[i]) + x
            total = total + xs[i] * xs[i]
    return total


@pytest.mark.parametrize("wrt", [0, 1])
def test_a_local_list_of_arrays_as_loop_state(wrt):
    from numpy_cases import fd_array_grad
    rng = np.random.default_rng(1)
    args = (rng.normal(size=(6, 3)) * 0.5, rng.normal(size=(4, 3)), 3)
    native = s2sad.grad(layered, wrt=wrt, backend="numba")
    np.testing.assert_allclose(native(*args), fd_array_grad(layered, args, wrt),
                               rtol=1e-6, atol=1e-8)
    # (the adjoint of the lists: lists of zeros, elements replaced in place where no other
    # name sees them; with respect to `state`, the adjoint of the list the comprehension
    # made is another name for them, `hidden_bar = hidden_2_bar`, and they are copied)
    assert "hidden_2_bar = [np.zeros_like(_s2s_e) for _s2s_e in hidden_2]" in native.source
    assert "hidden_2_bar[i_3] = " in native.source
    assert ("hidden_2_bar = hidden_2_bar.copy()" in native.source) == (wrt == 1)
    # forward mode: the lists and their tangents appended to in place
    tangent = rng.normal(size=args[wrt].shape)
    value, derivative = s2sad.jvp(layered, args, tuple(tangent if i == wrt else None
                                                       for i in range(3)), backend="numba")
    assert value == pytest.approx(layered(*args), rel=1e-12)
    assert derivative == pytest.approx(np.sum(fd_array_grad(layered, args, wrt) * tangent),
                                       rel=1e-6, abs=1e-8)


def test_a_local_list_of_numbers():
    native = s2sad.grad(listed_numbers, backend="numba")
    assert_close(native(0.7, 3), fd_grad(listed_numbers, (0.7, 3)))
    assert "= [0.0 for _s2s_e in " in native.source
    value, derivative = s2sad.jvp(listed_numbers, (0.7, 3), (1.0, None), backend="numba")
    assert value == pytest.approx(listed_numbers(0.7, 3), rel=1e-12)
    assert_close(derivative, fd_grad(listed_numbers, (0.7, 3)))


# -- recursion over minors (np.concatenate's adjoint, a reshape's), extrema, axis sums ----------
def det_minors(a):
    n = a.shape[0]
    if n == 1:
        return a[0, 0]
    total = 0.0
    sign = 1.0
    for j in range(n):
        minor = np.concatenate((a[1:, :j], a[1:, j + 1:]), axis=1)
        total = total + sign * a[0, j] * det_minors(minor)
        sign = -sign
    return total


def det_flat(a, n):
    return det_minors(a.reshape(n, n))


def stacked(x):
    y = np.concatenate((x[:2] * x[1:3], np.sin(x)))
    return np.sum(y * y)


def log_sum_exp(x):
    a = np.max(x)
    return a + np.log(np.sum(np.exp(x - a))) - 0.5 * np.min(x)


def column_sums(x):
    return np.sum(np.sum(x * x, axis=0) ** 2) + np.sum(np.sum(np.sin(x), axis=-1) ** 2)


def nearest(centroids, points):
    # (kmeans: np.min along an axis, which s2sad adds to Numba, and broadcasts of 3 axes)
    distances = np.sum((points[:, None, :] - centroids[None, :, :]) ** 2, axis=2)
    top = np.max(centroids, axis=0, keepdims=True)
    return np.sum(np.min(distances, axis=1)) + np.sum(np.max(centroids - top, axis=-1) ** 2)


ROWS, COLS = np.array([1, 2, 2, 1]), np.array([0, 0, 1, 0])   # (element (1, 0) twice)


def contracted(Q, c):
    # (gmm's forms: np.einsum and np.squeeze, which s2sad adds to Numba, a log-sum-exp
    # along an axis with keepdims, a write at two index arrays, the last write staying)
    y = np.einsum("kij,nkj->nki", Q, c)
    top = np.max(y, axis=2, keepdims=True)
    lse = np.log(np.sum(np.exp(y - top), axis=2)) + np.squeeze(top, axis=2)
    lower = np.zeros((Q.shape[0], 3, 3))
    lower[:, ROWS, COLS] = Q.reshape(Q.shape[0], 9)[:, :4]
    weights = np.arange(9.0).reshape(3, 3)
    return (np.sum(lse ** 2) + np.sum(lower * lower * weights) + np.einsum("ij,ij", Q[0], Q[1])
            + np.squeeze(np.max(Q[0, 0], axis=0, keepdims=True), axis=0))


ARRAY_CASES = {
    "contracted": (contracted, (np.linspace(-1.0, 1.2, 18).reshape(2, 3, 3),
                                np.cos(np.arange(24.0)).reshape(4, 2, 3))),
    "det_flat": (det_flat, (np.array([2.0, -1.0, 0.5, 0.3, 1.5, -2.0, 1.0, 0.7, 0.4]), 3)),
    "stacked": (stacked, (np.array([0.3, -1.2, 2.0, 0.8]),)),
    "log_sum_exp": (log_sum_exp, (np.array([0.3, -1.2, 2.0, 0.8]),)),
    "column_sums": (column_sums, (np.array([[0.3, -1.2, 2.0], [0.8, 0.1, -0.4]]),)),
    "nearest": (nearest, (np.array([[0.3, -1.2], [2.0, 0.8], [-0.5, 0.1]]),
                          np.array([[0.0, 0.1], [1.5, 0.2], [-1.0, -0.3], [0.4, 2.0]]))),
}


@pytest.mark.parametrize("name", sorted(ARRAY_CASES))
def test_recursion_joins_extrema_and_axis_sums(name):
    from numpy_cases import fd_array_grad
    f, args = ARRAY_CASES[name]
    got = s2sad.grad(f, backend="numba")(*args)
    np.testing.assert_allclose(got, fd_array_grad(f, args, 0), rtol=1e-6, atol=1e-8)


def test_a_numpy_number_is_a_scalar_output_and_an_array_is_not():
    def total(x):
        return np.sum(np.exp(x))

    def doubled(x):
        return x * 2.0

    x = np.array([0.3, -1.2])
    np.testing.assert_allclose(s2sad.grad(total, backend="numba")(x), np.exp(x), rtol=1e-14)
    with pytest.raises(s2sad.NonScalarOutputError, match=r"test_numba.py:\d+: grad needs a "
                       r"function with a scalar output, but doubled\(\) returns an array"):
        s2sad.grad(doubled, backend="numba")(x)


@pytest.mark.parametrize("name", ["log_sum_exp", "det_flat", "nearest"])
def test_jvp_and_hvp_through_extrema_and_recursion(name):
    from numpy_cases import fd_array_grad
    f, args = ARRAY_CASES[name]
    shape = args[0].shape
    v = np.linspace(-1.0, 1.0, args[0].size)
    flat = (lambda x, *rest: f(x.reshape(shape), *rest), (args[0].ravel(),) + args[1:])
    _, tangent = s2sad.jvp(f, args, (v.reshape(shape),) + (None,) * (len(args) - 1),
                           backend="numba")
    assert tangent == pytest.approx(fd_array_grad(f, args, 0).ravel() @ v, rel=1e-6)
    np.testing.assert_allclose(s2sad.hvp(f, backend="numba")(*args, v.reshape(shape)).ravel(),
                               fd_hessian(*flat, 0) @ v, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("reduce", [np.min, np.max, np.amin, np.amax])
def test_numpy_extrema_along_an_axis_in_numba_code(reduce):
    # (Numba has np.min and np.max of a whole array only: s2sad adds the axis, which its
    # derivatives and the functions they call use; NaN wins, as in NumPy)
    @numba.njit
    def both(a, axis):
        return reduce(a, axis=axis), reduce(a, axis, True)

    a = np.arange(60.0).reshape(3, 4, 5) % 7
    a[1, 2, 3] = np.nan
    for x in (a, a[:, ::2, :], np.arange(12).reshape(3, 4), np.array([3.0, -1.0, 2.0])):
        for axis in range(-x.ndim, x.ndim):
            for got, kept in zip(both(x, axis), (False, True)):
                want = reduce(x, axis=axis, keepdims=kept)
                assert np.shape(got) == want.shape
                np.testing.assert_array_equal(got, want)
    with pytest.raises(ValueError, match="axis is out of bounds"):
        both(a, 3)


def test_numpy_einsum_and_squeeze_in_numba_code():
    # (Numba has neither: s2sad adds np.einsum of literal subscripts without '...', and
    # np.squeeze along one axis, which its derivatives and the functions they call use)
    s2sad.grad(babysqrt, backend="numba")(2.0)      # (the backend adds them when first used)

    @numba.njit
    def forms(a, b, v):
        return (np.einsum("kij,nkj->nki", a, b), np.einsum("ij,ij", a[0], a[1]),
                np.einsum("ij->i", a[0]), np.einsum("ij,jk", a[0], a[1]),
                np.einsum("i,i", v, v), np.einsum("ji", a[0]))

    @numba.njit
    def squeezed(x, axis):
        return np.squeeze(x, axis=axis)

    rng = np.random.default_rng(7)
    a, b, v = rng.normal(size=(2, 3, 3)), rng.normal(size=(4, 2, 3)), rng.normal(size=3)
    want = (np.einsum("kij,nkj->nki", a, b), np.einsum("ij,ij", a[0], a[1]),
            np.einsum("ij->i", a[0]), np.einsum("ij,jk", a[0], a[1]),
            np.einsum("i,i", v, v), np.einsum("ji", a[0]))
    for got, expected in zip(forms(a, b, v), want):
        np.testing.assert_allclose(got, expected, rtol=1e-13)
    with pytest.raises(ValueError, match="operands of different lengths"):
        forms(a, b[:, :, :2], v)
    x = rng.normal(size=(3, 1, 2))
    assert squeezed(x, 1).shape == (3, 2) and squeezed(x, -2).shape == (3, 2)
    np.testing.assert_array_equal(squeezed(x, 1), np.squeeze(x, axis=1))
    assert squeezed(np.array([2.5]), 0) == 2.5
    with pytest.raises(ValueError, match="size not equal to one"):
        squeezed(x, 0)


def test_a_call_from_python_goes_through_the_entry():
    # (Numba's dispatcher picks the specialisation: the Python path, keyed by the Python
    # types of the arguments, stays empty; its entry failed to compile once, which cost a
    # millisecond a call)
    d = s2sad.grad(babysqrt, backend="numba")
    assert d(2.0) == pytest.approx(0.5 / math.sqrt(2.0), rel=1e-12)
    assert d(2.0) == pytest.approx(0.5 / math.sqrt(2.0), rel=1e-12)
    assert not d._by_types


# -- rows of matrices the function makes: their number of axes settled by the code ----------
def reshaped_rows(x):
    n = len(x) // 3
    m = x.reshape(n, 3)
    s = 0.0
    for i in range(n):
        row = m[i]
        s = s + np.sum(row * row) * row[0]
    return s


def rows_of_zeros_written(x):
    n = len(x)
    m = np.zeros((n, 3))
    for i in range(n):
        m[i, 1] = x[i] ** 2
    s = 0.0
    for i in range(n):
        row = m[i]
        s = s + np.sum(np.sin(row)) * x[i]
    return s


def rows_of_a_shape_named(x):
    shape = (3, 2)
    m = np.ones(shape) * x[0]
    s = 0.0
    for i in range(3):
        r = m[i] + x[2 * i]
        s = s + np.sum(r * r)
    return s


def rows_of_a_sum(x):
    m = np.reshape(x * 2.0, (2, 3)) + np.zeros((2, 3))
    s = 1.0
    for i in range(2):
        r = np.tanh(m[i])
        s = s * 0.5 + np.sum(r * x[:3])
    return s


LOCAL_MATRICES = [reshaped_rows, rows_of_zeros_written, rows_of_a_shape_named, rows_of_a_sum]


@pytest.mark.parametrize("f", LOCAL_MATRICES, ids=lambda f: f.__name__)
def test_rows_of_a_local_matrix_are_arrays(f):
    # (`row = m[i]` was typed a number where `m` is made in the function: Numba refused)
    from numpy_cases import fd_array_grad
    x = np.array([0.7, -0.4, 1.3, 0.9, 0.2, -1.1])
    t = np.array([0.3, -1.1, 0.6, 0.8, -0.2, 0.5])
    want = fd_array_grad(f, (x.copy(),), 0)
    np.testing.assert_allclose(s2sad.grad(f, backend="numba")(x), want, rtol=1e-7, atol=1e-9)
    value, gradient = s2sad.value_and_grad(f, backend="numba")(x)
    assert value == pytest.approx(f(x.copy()), rel=1e-13)
    np.testing.assert_allclose(gradient, want, rtol=1e-7, atol=1e-9)
    value, tangent = s2sad.jvp(f, (x,), (t,), backend="numba")
    assert value == pytest.approx(f(x.copy()), rel=1e-13)
    assert tangent == pytest.approx(np.sum(want * t), rel=1e-7, abs=1e-9)
    np.testing.assert_allclose(s2sad.hessian(f, backend="numba")(x), fd_hessian(f, (x,), 0),
                               rtol=1e-5, atol=1e-6)


def sine_weighted(x):
    return np.sum(np.sin(x) * x)


def test_source_before_the_first_call():
    # (the default argument types, arrays for a function of NumPy: it raised
    # AttributeError before a call had settled them)
    g = s2sad.grad(sine_weighted, backend="numba")
    before = g.source
    assert before.startswith("def sine_weighted_grad(x):") and "np.cos(x)" in before
    x = np.array([0.3, -1.2, 2.0])
    np.testing.assert_allclose(g(x), np.sin(x) + x * np.cos(x), rtol=1e-12)
    assert g.source == before
    assert s2sad.value_and_grad(sine_weighted, backend="numba").source.startswith(
        "def sine_weighted_value_and_grad(x):")


# -- configuration globals: a dict or a SimpleNamespace, whose numbers and arrays the
# -- numba backend reads as constants (after_ad/native_globals.py), guarded
CONFIG = {"lr": 0.1, "w": np.array([1.0, 2.0, 3.0]), "name": "run"}
SETTINGS = types.SimpleNamespace(scale=2.0, w=np.array([0.5, -1.0, 2.0]))


def configured(x):
    return np.sum(np.sin(x) * CONFIG["lr"] * CONFIG["w"])


def set_up(x):
    return np.sum(x * x * SETTINGS.scale + SETTINGS.w * x)


def test_configuration_globals_are_constants_that_recompile_when_changed():
    global CONFIG, SETTINGS
    saved = CONFIG, SETTINGS
    x = np.array([0.3, -0.2, 0.9])
    g, h = s2sad.grad(configured, backend="numba"), s2sad.grad(set_up, backend="numba")
    try:
        for change in (None, lambda: CONFIG.update(lr=0.2),
                       lambda: CONFIG["w"].__setitem__(0, 10.0),
                       lambda: globals().update(CONFIG={"lr": 1.0, "w": np.ones(3)})):
            if change is not None:
                change()
            np.testing.assert_allclose(g(x), np.cos(x) * CONFIG["lr"] * CONFIG["w"],
                                       rtol=1e-13)
        for change in (None, lambda: setattr(SETTINGS, "scale", 3.0),
                       lambda: SETTINGS.w.__setitem__(1, 7.0),
                       lambda: globals().update(SETTINGS=types.SimpleNamespace(
                           scale=-1.0, w=np.zeros(3)))):
            if change is not None:
                change()
            want = 2 * x * SETTINGS.scale + SETTINGS.w
            np.testing.assert_allclose(h(x), want, rtol=1e-13)
            np.testing.assert_allclose(
                s2sad.jvp(set_up, (x,), (np.ones(3),), backend="numba")[1], np.sum(want),
                rtol=1e-13)
    finally:
        CONFIG, SETTINGS = saved


# -- a function of the user's that the derivative calls, reading a global number and a
# -- global array, which Numba compiles into its code: made again when they change
GAIN = 2.0
SHIFT = np.array([0.5, -1.0, 2.0])


def gained(v, i):
    return GAIN * v * v + SHIFT[i] * v


def gained_sum(x):
    s = 0.0
    for i in range(3):
        s = s + gained(x[i], i) * gained(s + 1.0, i)
    return s


def test_a_called_functions_globals_changed_between_calls(monkeypatch, tmp_path):
    global GAIN, SHIFT
    monkeypatch.setenv("S2SAD_CACHE_DIR", str(tmp_path))   # (the disk cache too)
    saved = GAIN, SHIFT.copy()
    x = np.array([0.3, -0.7, 1.1])
    g = s2sad.grad(gained_sum, backend="numba")
    try:
        for change in (None, lambda: globals().update(GAIN=3.0),
                       lambda: SHIFT.__setitem__(1, 4.0),
                       lambda: globals().update(GAIN=2.0)):
            if change is not None:
                change()
            expected = np.array([fd_grad(lambda v: gained_sum(np.where(np.arange(3) == k, v, x)),
                                         (x[k],)) for k in range(3)])
            np.testing.assert_allclose(g(x), expected, rtol=1e-6)
            np.testing.assert_allclose(s2sad.grad(gained_sum, backend="numba")(x), expected,
                                       rtol=1e-6)
    finally:
        GAIN, SHIFT = saved
