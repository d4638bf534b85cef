"""The numba backend's calls of functions that return a number (`graded_calls`): the
forward sweep calls the callee's `value_and_grad`, the pullback scales that gradient by
the result's adjoint, so a recursion no longer runs its forward sweep again at every
level; the kinds a recursion returns; np.cumprod along an axis, which s2sad gives Numba;
the adjoint of a matrix-vector product's vector; a graded gradient added into its
caller's adjoints scaled, without the product's array (`_s2s_add_scaled`). Checked
against analytic formulas, central differences of the functions as they are, and NumPy.
"""
import numpy as np
import pytest

from optional import require

numba = require("numba", "numba")

import s2sad  # noqa: E402
from s2sad.compilation import arg_types_of  # noqa: E402
from s2sad.errors import NativeBackendError  # noqa: E402
from numpy_cases import fd_array_grad  # noqa: E402
from test_numba import det_flat, det_minors  # noqa: E402


def weighted(u, s):
    return np.sum(u * u) * s + np.sin(s)


def two_arguments(x, s):
    total = 0.0
    for i in range(3):
        u = x * (i + 1.0)
        c = s * x[i]
        total = total + weighted(u, c) * weighted(x, s)
    return total


def twice(u):
    return u * 2.0


def through_an_array(x):
    return np.sum(twice(x) ** 2) + weighted(x, 0.5)


def powers(x, n):
    t = -1.0 + np.arange(n) * 2.0 / (n - 1)
    p = np.cumprod(np.broadcast_to(t[:, None], (n, x.shape[0] - 1)), axis=1)
    r = np.sign(t) - x[0] - p @ x[1:]
    return 0.5 * np.sum(r * r)


def matrix_vector(A, x):
    return np.sum(np.sin(A @ x))


@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_a_recursion_by_minors_is_the_cofactor_matrix(n):
    rng = np.random.default_rng(n)
    a = rng.normal(size=(n, n))
    # d det(A) / dA = det(A) A^-T, the cofactor matrix
    cofactors = np.linalg.det(a) * np.linalg.inv(a).T
    np.testing.assert_allclose(s2sad.grad(det_minors, backend="numba")(a), cofactors,
                               rtol=1e-12, atol=1e-12)
    value, grad = s2sad.value_and_grad(det_minors, backend="numba")(a)
    assert value == pytest.approx(np.linalg.det(a), rel=1e-12, abs=1e-12)
    np.testing.assert_allclose(grad, cofactors, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(s2sad.grad(det_flat, backend="numba")(a.ravel(), n),
                               cofactors.ravel(), rtol=1e-12, atol=1e-12)


def sources(derivative, seen=None):
    """The source of `derivative` and of the derivatives it calls."""
    seen = set() if seen is None else seen
    if id(derivative) in seen:
        return []
    seen.add(id(derivative))
    out = [derivative.source]
    for callee in getattr(derivative, "linked", {}).values():
        if hasattr(callee, "source"):
            out += sources(callee, seen)
    return out


def test_the_recursion_calls_its_value_and_grad_once_a_minor():
    a = (np.arange(9.0) ** 1.5).reshape(3, 3)
    g = s2sad.grad(det_flat, backend="numba")
    g(a.ravel(), 3)
    code = "\n".join(sources(g.derivative(arg_types_of(g._target, (a.ravel(), 3)),
                                          {"a": 1})))
    # each minor's gradient from the forward sweep, scaled in the pullback: no
    # det_minors_adjoint, which ran the minor's forward sweep again at every level
    assert "det_minors_value_and_grad(t)" in code
    assert "det_minors_value_and_grad(minor)" in code
    assert "det_minors_adjoint" not in code and "= det_minors(" not in code


@pytest.mark.parametrize("wrt", [0, 1, (0, 1)])
def test_a_call_graded_along_two_arguments(wrt):
    x, s = np.array([0.3, -1.2, 0.7]), 0.4
    got = s2sad.grad(two_arguments, wrt, backend="numba")(x, s)
    want = tuple(fd_array_grad(two_arguments, (x, s), i) for i in
                 (wrt if isinstance(wrt, tuple) else (wrt,)))
    if not isinstance(wrt, tuple):
        got = (got,)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-7, atol=1e-9)


def test_a_call_returning_an_array_keeps_its_adjoint():
    x = np.array([0.3, -1.2, 0.7])
    np.testing.assert_allclose(s2sad.grad(through_an_array, backend="numba")(x),
                               fd_array_grad(through_an_array, (x,), 0), rtol=1e-7)


def test_hvp_through_graded_calls():
    x, s = np.array([0.3, -1.2, 0.7]), 0.4
    v = np.array([0.5, -1.0, 2.0])

    def gradient(y):
        return fd_array_grad(two_arguments, (y, s), 0)
    h = 1e-5
    want = (gradient(x + h * v) - gradient(x - h * v)) / (2 * h)
    np.testing.assert_allclose(s2sad.hvp(two_arguments, backend="numba")(x, s, v), want,
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 3, 4), (0, 3), (3, 0)])
def test_cumprod_along_an_axis_in_numba_code(shape):
    @numba.njit
    def along(a, k):
        return np.cumprod(a, axis=k)
    s2sad.grad(matrix_vector, backend="numba")      # (s2sad's overloads registered)
    a = np.random.default_rng(0).normal(size=shape)
    for k in range(-len(shape), len(shape)):
        np.testing.assert_array_equal(along(a, k), np.cumprod(a, axis=k))
    ints = np.arange(1, 13, dtype=np.int32).reshape(3, 4)
    assert along(ints, 1).dtype == np.cumprod(ints, axis=1).dtype
    np.testing.assert_array_equal(along(ints, 0), np.cumprod(ints, axis=0))
    view = np.broadcast_to(np.linspace(0.5, 2.0, 4)[:, None], (4, 6))
    np.testing.assert_array_equal(along(view, 1), np.cumprod(view, axis=1))
    with pytest.raises(ValueError, match="axis is out of bounds"):
        along(a, len(shape))


def test_the_gradient_through_powers_as_cumulative_products():
    x, n = np.array([0.3, -1.2, 0.7, 0.1]), 9
    np.testing.assert_allclose(s2sad.grad(powers, backend="numba")(x, n),
                               fd_array_grad(powers, (x, n), 0), rtol=1e-7, atol=1e-9)


def test_the_adjoint_of_a_matrix_vector_products_vector():
    rng = np.random.default_rng(3)
    A, x = rng.normal(size=(5, 3)), rng.normal(size=3)
    np.testing.assert_allclose(s2sad.grad(matrix_vector, 1, backend="numba")(A, x),
                               np.cos(A @ x) @ A, rtol=1e-12)
    np.testing.assert_allclose(s2sad.grad(matrix_vector, 1, backend="numba")(A.T.copy().T, x),
                               fd_array_grad(matrix_vector, (A, x), 1), rtol=1e-7)


def pair_norm(pair, s):
    return (np.sum(pair[0] * pair[1]) + s) ** 2


def through_a_tuple(x):
    return pair_norm((x, np.sin(x)), x[0])


def test_a_call_differentiated_along_a_tuple_is_no_product():
    # (its adjoint, as before: which the numba backend refuses, naming the callee's line;
    # never a tuple scaled as a gradient)
    x = np.array([0.3, -1.2, 0.7])
    with pytest.raises(NativeBackendError, match=r"test_numba_graded.py:\d+: (the numba "
                       r"backend cannot compile s2sad's runtime helper|Numba could not "
                       r"compile the derivative)"):
        s2sad.grad(through_a_tuple, backend="numba")(x)


def along_slices(x):
    total = 0.0
    for j in range(x.shape[0] - 1):
        total = total + x[j] * weighted(x[j:], 0.5)
    return total


def test_a_graded_gradient_is_added_scaled_into_its_callers_adjoint():
    a = np.random.default_rng(4).normal(size=(4, 4))
    g = s2sad.grad(det_flat, backend="numba")
    np.testing.assert_allclose(g(a.ravel(), 4), (np.linalg.det(a) * np.linalg.inv(a).T).ravel(),
                               rtol=1e-12, atol=1e-12)
    top, *recursion = sources(g.derivative(arg_types_of(g._target, (a.ravel(), 4)),
                                           {"a": 1}))
    code = "\n".join(recursion)
    # (each minor's gradient added into the slices of the caller's adjoint it came from,
    # times its scale, element by element: no array of the product)
    assert "_s2s_add_scaled(a_bar[1:, j + 1:], det_minors_gradient_scale, " in code
    assert "_s2s_split_like(det_minors_gradient, " in code
    assert "* det_minors_gradient" not in code
    x = np.array([0.3, -1.2, 0.7, 1.1, -0.4])
    g = s2sad.grad(along_slices, backend="numba")
    np.testing.assert_allclose(g(x), fd_array_grad(along_slices, (x,), 0), rtol=1e-7,
                               atol=1e-9)
    assert "_s2s_add_scaled(x_bar[j:], " in "\n".join(sources(g.derivative(
        arg_types_of(g._target, (x,)), {"x": 1})))


def test_hvp_over_scaled_additions():
    # (forward mode reads `_s2s_add_scaled(x, c, g)` as `x += c * g`); the oracle: central
    # differences of the cofactor matrix det(A) A^-T along v
    rng = np.random.default_rng(5)
    a, v = rng.normal(size=(4, 4)), rng.normal(size=(4, 4))

    def cofactors(m):
        return np.linalg.det(m) * np.linalg.inv(m).T
    h = 1e-5
    want = (cofactors(a + h * v) - cofactors(a - h * v)) / (2 * h)
    np.testing.assert_allclose(s2sad.hvp(det_minors, backend="numba")(a, v), want,
                               rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("case", ["2-d", "1-d", "broadcast", "number", "overlap",
                                  "reversed", "empty"])
def test_the_scaled_addition_in_numba_code_is_numpys(case):
    from s2sad.rules import fusion, numba_runtime
    numba_runtime.register()

    @numba.njit
    def into_slice(out, c, g):
        fusion.add_scaled(out[1:, :2], c, g)

    @numba.njit
    def into(out, c, g):
        fusion.add_scaled(out, c, g)
    m = np.arange(12.0).reshape(3, 4)
    want = m.copy()
    if case == "2-d":
        g = np.array([[1.0, -2.0], [0.5, 3.0]])
        into_slice(m, 1.5, g)
        want[1:, :2] += 1.5 * g
    elif case == "1-d":
        into(m[1], -2.0, np.array([1.0, 2.0, 3.0, 4.0]))
        want[1] += -2.0 * np.array([1.0, 2.0, 3.0, 4.0])
    elif case == "broadcast":
        into_slice(m, 2.0, np.array([1.0, -1.0]))
        want[1:, :2] += 2.0 * np.array([1.0, -1.0])
    elif case == "number":
        into_slice(m, 2.0, 0.25)
        want[1:, :2] += 2.0 * 0.25
    elif case == "overlap":         # (g a view of out: NumPy makes the product first)
        into_slice(m, 1.0, m[:2, 1:3])
        want[1:, :2] += 1.0 * want[:2, 1:3]
    elif case == "reversed":
        into(m[::-1, :2], 3.0, m[:, 2:])        # (apart)
        want[::-1, :2] += 3.0 * want[:, 2:]
        into(m[::-1, 1:], 3.0, m[:, :3])        # (overlapping)
        want[::-1, 1:] += 3.0 * want[:, :3]
    else:
        into(m[:0], 2.0, np.ones((0, 4)))
    np.testing.assert_array_equal(m, want)
