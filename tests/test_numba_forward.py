"""Forward mode on the numba backend: `jvp(..., backend="numba")` and `jacfwd(f,
backend="numba")` of functions with loops, slices written in a loop and in a branch, and
arrays written where they cannot be written in place; `hvp(..., backend="numba")` of such
code. Checked against central differences of the functions as they are (tests/oracle.py);
what Numba cannot compile is refused with a NativeBackendError naming the user's line.

Numba compiles each derivative in seconds: the tests keep to a few functions.
"""
import numpy as np
import pytest

from optional import require

numba = require("numba", "numba")

import s2sad  # noqa: E402
from s2sad.errors import NativeBackendError, S2SADError  # noqa: E402
from oracle import fd_grad  # noqa: E402


def fd_jacobian(f, args, i):
    """The Jacobian of `f` (a number or an array) with respect to argument `i` (a number
    or an array), by central differences, laid out as jacfwd's: output axes, then input
    axes."""
    x = np.asarray(args[i], dtype=float)
    y = np.asarray(f(*args), dtype=float)
    jac = np.zeros(y.shape + x.shape)
    for k in np.ndindex(y.shape):
        def element(*a, k=k):
            return float(np.asarray(f(*a), dtype=float)[k])
        if x.ndim == 0:
            jac[k] = fd_grad(element, args, i)
        else:
            for j in np.ndindex(x.shape):
                def along(t, j=j):
                    moved = list(args)
                    moved[i] = x.copy()
                    moved[i][j] = t
                    return element(*moved)
                jac[k + j] = fd_grad(along, (float(x[j]),), 0)
    return jac


def spiral(x, k):
    # a number through a loop: the state a number, then an element of an array
    r = x
    for i in range(20):
        r = r + 0.05 * np.sin(k * r)
    return r * r


def posed(theta, bones):
    # ht's to_pose_params in miniature: slices written, then elements written in a loop,
    # one of them in one branch of an `if` (the array's versions meet at the loop's end)
    pose = np.zeros((3, bones + 2))
    pose[:, 0] = theta[0:3]
    pose[:, 1] = 1.0
    i = 3
    for b in range(bones):
        pose[0, b + 2] = theta[i]
        i += 1
        if b % 2 == 0:
            pose[1, b + 2] = theta[i] * theta[0]
            i += 1
    return np.sin(pose) * pose[:, 0:1]


def chained(theta):
    # a product of rotations down a chain, written into an array of matrices (as ht's
    # skinning writes absolutes[i]), read back element by element
    n = theta.shape[0]
    frames = np.zeros((n, 2, 2))
    out = np.zeros(n)
    for i in range(n):
        R = np.eye(2)
        R[0, 0] = np.cos(theta[i])
        R[0, 1] = -np.sin(theta[i])
        R[1, 0] = np.sin(theta[i])
        R[1, 1] = np.cos(theta[i])
        if i == 0:
            frames[i] = R
        else:
            frames[i] = frames[i - 1] @ R
        out[i] = frames[i][0, 0] + 2.0 * frames[i][1, 0]
    return out


def kept_then_written(x):
    # yn is y * 1.0, whose tangent is y's (the product by 1 folds): a slice of it written
    # in a loop that still reads y cannot be written in place, nor into y's tangent
    y = np.sin(x)
    yn = y * 1.0
    for i in range(1, 3):
        yn[i:i + 2] = y[i - 1:i + 1] * x[i] + 0.2 * y[i]
    return yn * yn + y


def smoothed(x):
    # a scalar of a loop with a slice written: for hvp
    u = x * 1.0
    for k in range(3):
        u[1:-1] = 0.5 * u[1:-1] + 0.25 * (u[:-2] + u[2:])
    return np.sum(u * u * x)


@pytest.mark.parametrize("f, args, wrt", [
    (spiral, (0.7, 1.3), 0),
    (spiral, (0.7, 1.3), 1),
    (posed, (np.array([0.3, -0.2, 0.5, 0.1, 0.7, -0.4, 0.9, 0.2, -0.5]), 4), 0),
    (chained, (np.array([0.3, -0.7, 1.1, 0.2]),), 0),
    (kept_then_written, (np.array([0.3, -0.2, 0.5, 0.8, -0.6]),), 0),
], ids=["spiral-x", "spiral-k", "posed", "chained", "kept_then_written"])
def test_jvp_and_jacfwd_agree_with_central_differences(f, args, wrt):
    want = fd_jacobian(f, args, wrt)
    before = [np.copy(a) for a in args]
    jac = s2sad.jacfwd(f, wrt, backend="numba")(*args)
    np.testing.assert_allclose(jac, want, rtol=1e-6, atol=1e-8)
    rng = np.random.default_rng(3)
    v = rng.normal(size=np.shape(args[wrt])) if np.ndim(args[wrt]) else 0.6
    tangents = tuple(v if i == wrt else None for i in range(len(args)))
    value, tangent = s2sad.jvp(f, args, tangents, backend="numba")
    np.testing.assert_allclose(value, f(*args), rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(tangent, np.tensordot(want, v, np.ndim(v)) if np.ndim(v)
                               else want * v, rtol=1e-6, atol=1e-8)
    for a, b in zip(args, before):      # the derivative never writes into the arguments
        np.testing.assert_array_equal(a, b)


def test_jacfwd_of_several_arguments_and_again():
    x = np.array([0.3, 0.5, 0.9])
    jac = s2sad.jacfwd(spiral_of_array, wrt=(0, 1), backend="numba")
    for k in (1.3, -0.4):       # (the second call runs the code the first compiled)
        got = jac(x, k)
        assert isinstance(got, tuple) and len(got) == 2
        np.testing.assert_allclose(got[0], fd_jacobian(spiral_of_array, (x, k), 0),
                                   rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(got[1], fd_jacobian(spiral_of_array, (x, k), 1),
                                   rtol=1e-6, atol=1e-8)


def spiral_of_array(x, k):
    y = np.zeros(3)
    for i in range(3):
        y[i] = np.sin(k * x[i]) * x[(i + 1) % 3]
    return y


def test_hvp_of_a_loop_writing_slices():
    x = np.array([0.3, -0.2, 0.5, 0.8, -0.6])
    v = np.array([0.5, 1.0, -0.3, 0.2, 0.7])
    got = s2sad.hvp(smoothed, backend="numba")(x, v)

    def gradient_along(t):     # the gradient by central differences, at x + t v
        return fd_jacobian(smoothed, (x + t * v,), 0)
    h = 1e-3
    want = (4 * (gradient_along(h / 2) - gradient_along(-h / 2)) / h
            - (gradient_along(h) - gradient_along(-h)) / (2 * h)) / 3
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def listed(x):
    d = {"a": x}
    return d["a"] * np.sin(x)


def test_refusals_name_the_users_line():
    with pytest.raises(NativeBackendError, match=r"test_numba_forward\.py:\d+: .*dict"):
        s2sad.jacfwd(listed, backend="numba")(np.array([0.3, 0.4]))
    with pytest.raises(S2SADError, match="has_aux=True is the Python backend's"):
        s2sad.jacfwd(posed, has_aux=True, backend="numba")
    with pytest.raises(NativeBackendError, match="is a tuple, whose derivative would be one too"):
        s2sad.jacfwd(spiral, backend="numba")((0.7, 0.2), 1.3)


SCALE = 2.0


def scaled(x):
    return np.sin(SCALE * x) * x[0]


def test_kept_code_follows_a_rebound_global():
    # jvp and a jacfwd kept across calls hold the code compiled for the arguments' kinds;
    # a global it read rebound makes it again (Numba froze the old value into it)
    global SCALE
    x = np.array([0.3, 0.5, -0.4])
    jac = s2sad.jacfwd(scaled, backend="numba")
    try:
        for value in (2.0, 3.0):
            SCALE = value
            want = fd_jacobian(scaled, (x,), 0)
            np.testing.assert_allclose(jac(x), want, rtol=1e-6, atol=1e-8)
            _, tangent = s2sad.jvp(scaled, (x,), (np.ones(3),), backend="numba")
            np.testing.assert_allclose(tangent, want.sum(axis=1), rtol=1e-6, atol=1e-8)
    finally:
        SCALE = 2.0


def written_argument(x, k):
    # the function writes into its argument, a slice then elements: the derivative
    # writes into a copy of it, never into the caller's array
    x[1:3] = x[0:2] * k
    for i in range(2):
        x[i + 2] = x[i] * x[i + 1]
    return np.sin(x)


def test_a_function_writing_into_its_argument():
    x = np.array([0.3, 0.5, 0.7, 0.9])
    want = fd_jacobian(lambda a, k: written_argument(a.copy(), k), (x, 2.0), 0)
    before = x.copy()
    np.testing.assert_allclose(s2sad.jacfwd(written_argument, backend="numba")(x, 2.0), want,
                               rtol=1e-6, atol=1e-8)
    value, tangent = s2sad.jvp(written_argument, (x, 2.0), (np.ones(4), None),
                               backend="numba")
    np.testing.assert_array_equal(x, before)
    np.testing.assert_allclose(value, written_argument(x.copy(), 2.0), rtol=1e-15)
    np.testing.assert_allclose(tangent, want.sum(axis=1), rtol=1e-6, atol=1e-8)


def nearest(c, p):
    # k-means' cost through a matrix product (`.T`), sums and a min along an axis, plus a
    # smooth term whose Hessian is not diagonal (np.transpose with axes)
    d = (np.sum(p * p, axis=1)[:, None] + np.sum(c * c, axis=1)[None, :]
         - 2 * (p @ c.T))
    return np.sum(np.min(d, axis=1)) + np.sum(np.sin(np.transpose(c, (1, 0)) @ c))


def nearest_broadcast(c, p):
    # the same through arrays of three axes: a sum along the last, a max along one
    d = np.sum((p[:, None, :] - c[None, :, :]) ** 2, axis=2)
    return np.sum(np.min(d, axis=1)) + np.sum(np.max(p[:, None, :] * c[None, :, :], axis=0,
                                                     keepdims=True) ** 2)


@pytest.mark.parametrize("f", [nearest, nearest_broadcast])
def test_jvp_of_a_numba_gradient(f):
    # jvp(grad(f, backend="numba"), backend="numba"): the gradient and its tangent, both
    # from one pass of forward mode over the gradient code, against central differences
    rng = np.random.default_rng(7)
    p = rng.normal(size=(9, 3))
    c = p[[1, 4, 6]] + 0.05 * rng.normal(size=(3, 3))
    v = rng.normal(size=c.shape)
    gradient, tangent = s2sad.jvp(s2sad.grad(f, backend="numba"), (c, p), (v, None),
                                  backend="numba")

    def gradient_along(t):
        return fd_jacobian(f, (c + t * v, p), 0)
    np.testing.assert_allclose(gradient, gradient_along(0.0), rtol=1e-6, atol=1e-8)
    h = 1e-3
    want = (4 * (gradient_along(h / 2) - gradient_along(-h / 2)) / h
            - (gradient_along(h) - gradient_along(-h)) / (2 * h)) / 3
    np.testing.assert_allclose(tangent, want, rtol=1e-5, atol=1e-6)
    # the same code again, along another direction, and hvp's tangent alone agrees
    np.testing.assert_allclose(s2sad.jvp(s2sad.grad(f, backend="numba"), (c, p),
                                         (2 * v, None), backend="numba")[1], 2 * want,
                               rtol=1e-5, atol=1e-6)


def rows_and_columns(a, b):
    # elementwise statements over a C-contiguous array and a transposed view (fused into
    # one loop: the first read through .flat, the second by row and column)
    return np.sum(np.sin(a) * b.T * 3.0 + a * a)


def test_fused_loops_over_arrays_of_two_axes_in_either_order():
    rng = np.random.default_rng(2)
    a, b = rng.normal(size=(4, 5)), rng.normal(size=(5, 4))
    for wrt in (0, 1):
        got = s2sad.grad(rows_and_columns, wrt, backend="numba")(a, b)
        np.testing.assert_allclose(got, fd_jacobian(rows_and_columns, (a, b), wrt),
                                   rtol=1e-6, atol=1e-9)
