"""The numba backend's fused loops (after_ad/native_fuse.py): a run of elementwise
statements computed as one loop over the elements, where Numba's types (float64 arrays of
one number of axes) and the shapes at run time (equal) fit; the statements themselves
otherwise. Each derivative is checked against central differences of the function as it
is (float64), or an analytic formula, on the shapes that take the loop and on those that
do not; and the loop is looked for in the generated code.
"""
import numpy as np
import pytest

from optional import require

numba = require("numba", "numba")

import s2sad  # noqa: E402

LOOP = "one loop over the elements"


def central(f, args, i, h=1e-6):
    """d f(*args) / d args[i] by central differences, element by element (an array of
    the shape of args[i], or a number)."""
    x = np.array(args[i], dtype=float)
    out = np.zeros_like(x)
    for k in np.ndindex(x.shape):
        step = h * max(1.0, abs(x[k]))
        up, down = x.copy(), x.copy()
        up[k] += step
        down[k] -= step
        at = lambda v: f(*args[:i], v if x.ndim else float(v), *args[i + 1:])  # noqa: E731
        out[k] = (at(up) - at(down)) / (up[k] - down[k])
    return out if x.ndim else float(out)


def check_grad(f, args, wrt, rtol=1e-6, atol=1e-8):
    """The numba gradient of `f` (its source read after a call), checked."""
    gradient = s2sad.grad(f, wrt=wrt, backend="numba")
    grads = gradient(*args)
    for i, g in zip(wrt, grads):
        np.testing.assert_allclose(g, central(f, args, i), rtol=rtol, atol=atol)
    return grads, gradient.source


def gates(x, y, c):
    t = x * y + c
    u = np.tanh(t) / (1.0 + np.exp(-y))
    v = u * u - t
    w = np.sqrt(v * v + 1.0) * c
    return np.sum(w) + np.sum(t) * c        # (t, a temporary of the run, read after it)


def sigmoid(z):
    return 1 / (1 + np.exp(-z))


def cell(w, b, h, x):
    n = h.shape[0]
    f = sigmoid(x * w[:n] + b[:n])
    g = np.tanh(h * w[n:] + b[n:])
    return f * g + h


def calls_cell(w, b, h, x):
    return np.sum(cell(w, b, h, x) * x)


def halves(w, x):
    n = x.shape[0]
    a = x * w[:n]
    b = np.tanh(a) * w[n:]
    return np.sum(b * x)


def recurrence(x, y):
    u = np.zeros(x.shape[0])
    for i in range(1, x.shape[0]):
        u[i] = u[i - 1] * 0.5 + x[i]       # (u written in place)
    v = u * y
    w = np.tanh(v) + u
    return np.sum(w * w)


def quotient(x, y):
    t = y / x
    u = t * y
    return np.sum(u)


rng = np.random.default_rng(37)


@pytest.mark.parametrize("shape", [(5,), (3, 4)])
def test_a_run_of_elementwise_statements_is_one_loop(shape):
    x, y = rng.normal(size=shape), rng.normal(size=shape)
    grads, source = check_grad(gates, (x, y, 0.7), (0, 1, 2))
    assert isinstance(grads[2], float)
    assert LOOP in source and "_s2s_fusable((" in source
    loop = source[source.index(LOOP):source.index("    else:", source.index(LOOP))]
    assert "np.tanh(" in loop and "np.exp(" in loop
    # (t_3 = -y, t_6 = u * u, ... are read only in the run: numbers, not arrays)
    assert "t_3 = np.empty" not in loop and "t_3_k = -_s2s_at(y, _s2s_k)" in loop
    assert loop.count("np.empty") < loop.count("_k = ")


def test_shapes_that_differ_take_the_statements():
    # y broadcast along x: the shapes differ at run time, the statements run
    x, y = rng.normal(size=(4, 3)), rng.normal(size=(1, 3))
    check_grad(gates, (x, y, 0.3), (0, 1, 2))
    x, y = rng.normal(size=6), rng.normal(size=1)
    check_grad(gates, (x, y, 1.3), (0, 1))


def test_types_that_do_not_fit_take_the_statements():
    # an int array (its run is not compiled as a loop); 1-D with 2-D
    x = rng.normal(size=4)
    y = np.array([1, 2, 3, 4])
    grad = s2sad.grad(gates, wrt=0, backend="numba")
    np.testing.assert_allclose(grad(x, y, 0.5), central(gates, (x, y, 0.5), 0), rtol=1e-6,
                               atol=1e-8)
    x, y = rng.normal(size=(2, 4)), rng.normal(size=4)
    check_grad(gates, (x, y, 0.5), (0, 1))


def test_a_callee_of_one_expression_and_its_adjoint_are_in_the_loop():
    w, b = rng.normal(size=8), rng.normal(size=8)
    h, x = rng.normal(size=4), rng.normal(size=4)
    check_grad(calls_cell, (w, b, h, x), (0, 1, 2, 3))
    h, x = rng.normal(size=3), rng.normal(size=3)      # (w[:n] of 3 of 8: other shapes)
    w, b = rng.normal(size=6), rng.normal(size=6)
    check_grad(calls_cell, (w, b, h, x), (0, 1, 2, 3))


def test_writes_in_place_wait_for_the_loop_or_stop_it():
    # the adjoint's accumulations into w_bar's halves, an array only it sees, come after
    # the loop; statements reading u, or binding u_bar, which are written in place, are
    # not fused (the loop's arrays are new, where theirs may share memory)
    w, x = rng.normal(size=8), rng.normal(size=4)
    _, source = check_grad(halves, (w, x), (0, 1))
    assert source.count(LOOP) == 2
    last = source.rindex("    else:")
    assert source.index("    w_bar[n:] += t_3_bar") > last
    assert source.index("    w_bar[:n] += t_1_bar") > last
    w, x = rng.normal(size=5), rng.normal(size=1)     # (w[n:] of 4: shapes that differ)
    check_grad(halves, (w, x), (0, 1))
    x, y = rng.normal(size=5), rng.normal(size=5)
    _, source = check_grad(recurrence, (x, y), (0, 1))
    assert "\n    v = u * y\n" in source             # (outside any loop of the pass)
    assert "u_bar = np.empty" not in source


def test_vjp_and_jvp():
    x, y = rng.normal(size=6), rng.normal(size=6)
    value, pullback = s2sad.vjp(gates, x, y, 0.4, backend="numba")
    assert value == pytest.approx(gates(x, y, 0.4), rel=1e-12)
    gx, gy, gc = pullback(2.0)
    np.testing.assert_allclose(gx, 2.0 * central(gates, (x, y, 0.4), 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gy, 2.0 * central(gates, (x, y, 0.4), 1), rtol=1e-6, atol=1e-8)
    assert gc == pytest.approx(2.0 * central(gates, (x, y, 0.4), 2), rel=1e-6)
    tx, ty = rng.normal(size=6), rng.normal(size=6)
    value, tangent = s2sad.jvp(gates, (x, y, 0.4), (tx, ty, 0.0), backend="numba")
    h = 1e-6
    expected = (gates(x + h * tx, y + h * ty, 0.4) - gates(x - h * tx, y - h * ty, 0.4)) / (2 * h)
    assert value == pytest.approx(gates(x, y, 0.4), rel=1e-12)
    assert tangent == pytest.approx(expected, rel=1e-6)


def test_inf_and_nan_as_numpy_gives_them():
    # d/dx sum(y * y / x) = -y**2 / x**2, d/dy = 2 y / x: at x = 0, -inf and +-inf
    x, y = np.array([0.0, 2.0, -1.0]), np.array([3.0, -1.0, 0.5])
    gradient = s2sad.grad(quotient, wrt=(0, 1), backend="numba")
    with np.errstate(divide="ignore", invalid="ignore"):
        gx, gy = gradient(x, y)
        np.testing.assert_array_equal(gx, -y ** 2 / x ** 2)
        np.testing.assert_array_equal(gy, 2 * y / x)
    assert LOOP in gradient.source


def test_the_python_backend_has_no_loop():
    gradient = s2sad.grad(gates, wrt=(0, 1))
    gradient(np.ones(3), np.ones(3), 0.5)
    assert LOOP not in gradient.source


def test_hvp_differentiates_the_statements():
    # forward mode over the numba gradient's code reads each fused loop as its statements;
    # the Hessian of sum(exp(x) * y * x) along v: (exp(x) * y * (x + 2)) * v
    def f(x, y):
        t = np.exp(x) * y
        return np.sum(t * x)
    x, y, v = rng.normal(size=5), rng.normal(size=5), rng.normal(size=5)
    np.testing.assert_allclose(s2sad.hvp(f, backend="numba")(x, y, v),
                               np.exp(x) * y * (x + 2) * v, rtol=1e-12)


def soft(x):
    return np.log1p(np.exp(x))


def soft_loss(w, v):
    # `soft` of a number and of an array: its adjoint for the number has no loop (no
    # operand known to be an array: Numba would never compile it), that for the array has
    return soft(3.0 * w) * w + np.sum(soft(v * w))


def _with_callees(d, seen):
    """The sources of the derivative `d` and of the derivatives it calls."""
    if id(d) in seen:
        return []
    seen.add(id(d))
    return [d.source] + [text for linked in d.linked.values() if hasattr(linked, "source")
                         for text in _with_callees(linked, seen)]


def test_a_run_of_numbers_alone_is_not_fused():
    args = (0.5, np.array([0.2, -0.4, 1.0]))
    gradient = s2sad.grad(soft_loss, wrt=(0, 1), backend="numba")
    grads = gradient(*args)
    w, v = args
    sig = 1 / (1 + np.exp(-3 * w))
    sigs = 1 / (1 + np.exp(-v * w))
    np.testing.assert_allclose(grads[0], 3 * w * sig + np.log1p(np.exp(3 * w)) + np.sum(
        v * sigs), rtol=1e-12)
    np.testing.assert_allclose(grads[1], w * sigs, rtol=1e-12)
    seen = set()
    texts = [text for d in gradient._compiled for text in _with_callees(d, seen)]
    # (the array v * w's adjoint, fused; the number 3 w's call graded, not fused)
    adjoints = [t for t in texts if t.startswith("def soft_adjoint")]
    graded = [t for t in texts if t.startswith("def soft_value_and_grad")]
    assert [LOOP in t for t in adjoints] == [True], adjoints
    assert graded and not any(LOOP in t for t in graded), graded
