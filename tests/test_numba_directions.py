"""`jacfwd(f, backend="numba")` along all the directions of an array argument in one pass
(s2sad/numba_directions.py: the primal once, the tangent statements in loops over the
directions): functions with loops, element writes, a branch, a `while`, a helper of the
user's called in a loop, numbers and arrays, several arguments; the fallback to one
`f_jvp` a column where the rewrite refuses the code (recursion); ht's model; the test of
a tangent zero along a direction before the products it reaches (a direction that
reaches nothing, one that reaches everything, a sum written into after it). Checked against central differences of the functions as they are
(tests/oracle.py), and that the pass along all directions is the one that ran.
"""
import numpy as np
import pytest

from optional import require

numba = require("numba", "numba")

import s2sad  # noqa: E402
from s2sad import numba_api, numba_directions  # noqa: E402
from test_numba_forward import chained, fd_jacobian, posed, written_argument  # noqa: E402


def rotated(v, angle):
    # a helper of the user's, whose forward mode the loop below calls: its tangents pass
    # as lists, one per direction
    R = np.eye(2)
    R[0, 0] = np.cos(angle)
    R[0, 1] = -np.sin(angle)
    R[1, 0] = np.sin(angle)
    R[1, 1] = np.cos(angle)
    return R @ v


def walked(theta, start, scale):
    # a loop carrying an array and a number, a helper called in it, an element written
    # in one branch, a `while` on primal values
    v = start * 1.0
    total = 0.0
    out = np.zeros(theta.shape[0] + 1)
    for i in range(theta.shape[0]):
        v = rotated(v, theta[i] * scale)
        total = total + v[0] * v[1]
        if i % 2 == 0:
            out[i] = total
        else:
            out[i] = v[0] - theta[i]
    k = 0
    while total > -10.0 and k < 3:
        total = total - 0.5 * np.sin(total)
        k += 1
    out[-1] = total
    return out


def tower(x, n):
    # recursion: the rewrite refuses it, and jacfwd takes one pass a column
    if n == 0:
        return x
    return np.sin(tower(x, n - 1)) * x


def _along_all(f, args, i):
    """The pass along all the directions of argument `i`, or None where it falls back."""
    return numba_api.NumbaJvp(f, args, (i,), {}).columns(args, args[i], {})


THETA = np.array([0.3, -0.7, 1.1, 0.2, -0.4])
START = np.array([0.6, -0.2])


@pytest.mark.parametrize("f, args, wrt", [
    (walked, (THETA, START, 0.8), 0),
    (walked, (THETA, START, 0.8), 1),
    (posed, (np.array([0.3, -0.2, 0.5, 0.1, 0.7, -0.4, 0.9, 0.2, -0.5]), 4), 0),
    (chained, (np.array([0.3, -0.7, 1.1, 0.2]),), 0),
], ids=["walked-theta", "walked-start", "posed", "chained"])
def test_all_directions_in_one_pass_agree_with_central_differences(f, args, wrt):
    before = [np.copy(a) for a in args]
    want = fd_jacobian(f, args, wrt)
    value, columns = _along_all(f, args, wrt)
    assert len(columns) == np.size(args[wrt])
    np.testing.assert_allclose(value, f(*args), rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(np.stack(columns, -1), want.reshape(
        np.shape(value) + (-1,)), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(s2sad.jacfwd(f, wrt, backend="numba")(*args), want,
                               rtol=1e-6, atol=1e-8)
    for a, b in zip(args, before):
        np.testing.assert_array_equal(a, b)


def test_several_arguments_and_a_number():
    jac = s2sad.jacfwd(walked, wrt=(0, 1, 2), backend="numba")
    for scale in (0.8, -1.3):       # (the second call runs the code the first compiled)
        args = (THETA, START, scale)
        got = jac(*args)
        for i in range(3):
            np.testing.assert_allclose(got[i], fd_jacobian(walked, args, i), rtol=1e-6,
                                       atol=1e-8)


def test_the_arguments_are_not_written():
    # the function writes into its argument: the pass along all directions writes into
    # a copy, as the single-direction code does
    x = np.array([0.3, 0.5, 0.7, 0.9])
    before = x.copy()
    assert _along_all(written_argument, (x, 2.0), 0) is not None
    np.testing.assert_array_equal(x, before)
    want = fd_jacobian(lambda a, k: written_argument(a.copy(), k), (x, 2.0), 0)
    np.testing.assert_allclose(s2sad.jacfwd(written_argument, backend="numba")(x, 2.0), want,
                               rtol=1e-6, atol=1e-8)
    np.testing.assert_array_equal(x, before)


def test_the_fallback_to_one_pass_a_column():
    x = np.array([0.3, -0.5, 0.9])
    code = numba_api.NumbaJvp(tower, (x, 3), (0,), {})
    with pytest.raises(numba_directions.Refused, match="recursion"):
        numba_directions.compiled(code.d)
    assert code.columns((x, 3), x, {}) is None
    np.testing.assert_allclose(s2sad.jacfwd(tower, backend="numba")(x, 3),
                               fd_jacobian(tower, (x, 3), 0), rtol=1e-6, atol=1e-8)


def test_ht_model_along_all_directions():
    from gradbench import evals
    from test_gradbench_tool import ht_input
    ht = evals.load("ht")
    args = ht._input(ht_input(True), "numba")
    value, columns = _along_all(ht.objective_by_bone, args, 0)
    np.testing.assert_allclose(value, ht.objective(*ht._input(ht_input(True))), rtol=1e-13)
    want = fd_jacobian(ht.objective_by_bone, args, 0)
    np.testing.assert_allclose(np.stack(columns, -1), want, rtol=1e-6, atol=1e-8)


def test_many_directions_in_several_passes(monkeypatch):
    # at most numba_api.DIRECTIONS directions a pass (memory): 5 directions in 2, 2, 1
    monkeypatch.setattr(numba_api, "DIRECTIONS", 2)
    args = (THETA, START, 0.8)
    value, columns = _along_all(walked, args, 0)
    assert len(columns) == 5
    np.testing.assert_allclose(np.stack(columns, -1), fd_jacobian(walked, args, 0),
                               rtol=1e-6, atol=1e-8)


def posed_chain(theta, points, parents):
    # ht's bones in two dimensions: the angle of bone i moves it and the bones whose chain
    # of parents reaches it; the last angle is read by nothing (a direction that reaches
    # nothing: every tangent along it zero)
    n = parents.shape[0]
    absolutes = np.zeros((n, 2, 2))
    out = np.zeros((2, points.shape[1]))
    for i in range(n):
        R = np.eye(2)
        R[0, 0] = np.cos(theta[i])
        R[0, 1] = -np.sin(theta[i])
        R[1, 0] = np.sin(theta[i])
        R[1, 1] = np.cos(theta[i])
        if parents[i] == -1:
            absolutes[i] = R
        else:
            absolutes[i] = absolutes[parents[i]] @ R
        out = out + (i + 1.0) * (absolutes[i] @ points)
    return out


def spun(x, points):
    # every direction reaches everything (the angle is the sum of the squares), but
    # along the direction of a zero element of x the angle's tangent is 0 exactly
    angle = np.sum(x * x)
    R = np.eye(2)
    R[0, 0] = np.cos(angle)
    R[0, 1] = -np.sin(angle)
    R[1, 0] = np.sin(angle)
    R[1, 1] = np.cos(angle)
    moved = R @ points
    return moved + x[0] * points


def rewritten_sum(theta, points):
    # a sum with a term zero along most directions, then written into, while another
    # name holds the array before the sum (s2sad copies it before the write)
    acc = np.zeros((2, points.shape[1]))
    total = np.zeros((2, points.shape[1]))
    for i in range(theta.shape[0]):
        R = np.eye(2)
        R[0, 0] = np.cos(theta[i])
        R[1, 1] = np.sin(theta[i])
        prev = acc
        acc = acc + R @ points
        acc[0] = acc[0] * 1.5
        total = total + prev
    return acc + total


POINTS = np.array([[0.3, -1.2, 0.8, 0.5], [1.1, 0.4, -0.6, 0.9]])
PARENTS = np.array([-1, 0, 1, -1, 3, 3])


@pytest.mark.parametrize("f, args", [
    (posed_chain, (np.array([0.3, -0.7, 1.1, 0.2, -0.4, 0.9, 0.5]), POINTS, PARENTS)),
    (spun, (np.array([0.4, 0.0, -0.3]), POINTS)),
    (spun, (np.array([0.4, 0.7, -0.3]), POINTS)),
    (rewritten_sum, (np.array([0.3, -0.7, 1.1]), POINTS)),
], ids=["chain-reaching-nothing", "spun-zero-element", "spun-reaching-everything",
        "rewritten-sum"])
def test_zero_tangents_skipped_agree_with_central_differences(f, args):
    code = numba_api.NumbaJvp(f, args, (0,), {})
    source = numba_directions.compiled(code.d).directions_source
    assert "_s2s_nonzero(" in source        # (the test of a zero is in the pass)
    want = fd_jacobian(f, args, 0)
    value, columns = code.columns(args, args[0], {})
    np.testing.assert_allclose(value, f(*args), rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(np.stack(columns, -1), want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(s2sad.jacfwd(f, backend="numba")(*args), want, rtol=1e-6,
                               atol=1e-8)
    if f is posed_chain:        # (the last angle reaches nothing: a column of zeros)
        np.testing.assert_array_equal(columns[-1], 0.0)


def test_a_sum_written_into_is_not_made_its_term():
    # a guard makes `s = a + b` with b zero `s = a` (the same array): so a write into a
    # sum, or into what shares its array, is a write a guard must not alias; a write just
    # after a copy or a product is into a new array
    import ast
    fn = ast.parse("def f_jvp(a, b):\n    p = a\n    s = a + b\n    q = s\n"
                   "    s[0] = 1.0\n    c = b.copy()\n    c[0] = 2.0\n    m = a * b\n"
                   "    m[1] = 0.0\n    return (p, q)\n").body[0]
    assert numba_directions._written(fn) == {"s", "q"}


def test_zero_helpers():
    nonzero, plus_zero = numba_directions._helpers()
    assert not nonzero(0.0) and nonzero(-2.0) and nonzero(np.nan)
    assert not nonzero(np.zeros((3, 2)).T) and nonzero(np.eye(3)[:, 2])
    a = np.ones((2, 1))
    assert numba.njit(lambda a, b: plus_zero(a, b))(a, np.zeros((2, 1))) is a
    np.testing.assert_array_equal(
        numba.njit(lambda a, b: plus_zero(a, b))(a, np.zeros((2, 3))), np.ones((2, 3)))
    np.testing.assert_array_equal(
        numba.njit(lambda a, b: plus_zero(a, b))(np.arange(3.0), np.zeros((2, 3))),
        np.array([[0.0, 1.0, 2.0]] * 2))


# -- orders: np.sort's tangent (tangents.sort_dot: Numba's np.argsort takes no axis),
# -- indexing by np.argsort, np.where, a branch on the values
def sorted_times(x):
    return np.sort(x) * x


def reordered(x):
    order = np.argsort(x)
    return x[order] * np.arange(1.0, x.shape[0] + 1.0)


def chosen(x):
    return np.where(x > 1.5, x * x, -np.sin(x))


def branched(x):
    if x[0] > x[1]:
        y = np.sort(x) * 2.0
    else:
        y = np.cumsum(x * x)
    return y + np.sort(-x)


def rows_sorted(a):
    return np.sort(a) * a


@pytest.mark.parametrize("f, x", [
    (sorted_times, np.array([3.0, 1.0, 2.0])),
    (reordered, np.array([0.4, -1.2, 2.5, 0.9])),
    (chosen, np.array([0.4, 2.2, 1.7, -0.3])),
    (branched, np.array([3.0, 1.0, 2.0])),
    (branched, np.array([1.0, 3.0, 2.0])),
    (rows_sorted, np.array([[0.5, -1.0, 2.0], [3.0, 1.5, -0.5]])),
], ids=["sort", "argsort-index", "where", "branch-sorted", "branch-cumsum", "rows"])
def test_orders_agree_with_central_differences(f, x):
    want = fd_jacobian(f, (x,), 0)
    np.testing.assert_allclose(s2sad.jacfwd(f, backend="numba")(x), want, rtol=1e-6,
                               atol=1e-8)
    value, tangent = s2sad.jvp(f, (x,), (np.ones_like(x),), backend="numba")
    np.testing.assert_allclose(tangent, np.tensordot(want, np.ones_like(x), x.ndim),
                               rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("f, x", [
    (sorted_times, np.array([3.0, 1.0, 2.0])),
    (rows_sorted, np.array([[0.5, -1.0, 2.0], [3.0, 1.5, -0.5]])),
], ids=["vector", "rows"])
def test_sort_in_reverse_mode(f, x):
    # (runtime.unsort's Numba version)
    def total(x):
        return np.sum(f(x) * f(x))
    want = fd_jacobian(total, (x,), 0)
    np.testing.assert_allclose(s2sad.grad(total, backend="numba")(x), want, rtol=1e-6,
                               atol=1e-8)


# -- rules loaded lazily (an optional library's, on the lookup that misses) keep what was
# compiled: the plans of jacfwd and jvp are not made again on the second call


def _counting_builds(monkeypatch):
    from s2sad import driver
    builds, make = [], driver._Build.make

    def counted(self, request):
        builds.append(request.fn)
        return make(self, request)
    monkeypatch.setattr(driver._Build, "make", counted)
    return builds


def _load_lazily(monkeypatch, prim):
    """Register rules for `prim` as an optional library's (loaded at the next lookup that
    misses once its module is imported), import that module, and make a lookup miss."""
    import sys
    import types
    from s2sad.rules import registry
    name = f"s2sad_test_optional_{id(prim)}"
    monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    registry.optional((name,), lambda: registry.define(prim, "x", "g * 3.0"))
    registry.primitive(object())        # (a lookup that misses: the rules load)
    assert registry.primitive(prim) is not None


def spiral(x):
    y = np.zeros(x.shape[0] + 1)
    for i in range(x.shape[0]):
        y[i] = np.sin(x[i]) * x[(i + 1) % x.shape[0]]
    y[-1] = np.sum(x * x)
    return y


def test_rules_loaded_later_keep_the_plans(monkeypatch):
    from s2sad.rules import registry
    x = np.array([0.3, -0.7, 1.1, 0.2])
    jac = s2sad.jacfwd(spiral, backend="numba")
    np.testing.assert_allclose(jac(x), fd_jacobian(spiral, (x,), 0), rtol=1e-6, atol=1e-8)
    tangent = np.array([1.0, 0.0, -2.0, 0.5])
    _, y_dot = s2sad.jvp(spiral, (x,), (tangent,), backend="numba")
    builds, version = _counting_builds(monkeypatch), registry.version

    def never_looked_up(x):
        return 3.0 * x
    _load_lazily(monkeypatch, never_looked_up)
    assert registry.version == version
    for _ in range(2):
        np.testing.assert_allclose(jac(x), fd_jacobian(spiral, (x,), 0), rtol=1e-6,
                                   atol=1e-8)
        _, again = s2sad.jvp(spiral, (x,), (tangent,), backend="numba")
        np.testing.assert_allclose(again, fd_jacobian(spiral, (x,), 0) @ tangent,
                                   rtol=1e-6, atol=1e-8)
    assert builds == []


def test_rules_loaded_later_for_a_function_looked_up_invalidate(monkeypatch):
    # a rule made for a function a lookup has missed (read as the user's code) changes
    # what was compiled: every derivative is made again (and so for a helper's reverse
    # rule made after a lookup found its record)
    from s2sad.rules import registry

    def read_as_code(x):
        return 3.0 * x
    assert registry.primitive(read_as_code) is None and registry.looked_up(read_as_code)
    version = registry.version
    _load_lazily(monkeypatch, read_as_code)
    assert registry.version > version


def squared_rows(a):
    out = np.zeros((a.shape[0], a.shape[0]))
    for i in range(a.shape[0]):
        out[i] = np.sin(a[i]) @ a.T
    return out


def test_columns_written_into_the_jacobian(monkeypatch):
    # y and x of two axes each: the Jacobian (y's axes, then x's) written by Numba code
    a = np.array([[0.3, -0.7, 1.1], [0.2, -0.4, 0.9]])
    written = []
    stacked = numba_directions.stacked

    def spied(y, lists):
        written.append(stacked(y, lists))
        return written[-1]
    monkeypatch.setattr(numba_directions, "stacked", spied)
    got = s2sad.jacfwd(squared_rows, backend="numba")(a)
    assert len(written) == 1 and written[0] is not None
    assert got.shape == (2, 2, 2, 3)
    np.testing.assert_allclose(got, fd_jacobian(squared_rows, (a,), 0), rtol=1e-6,
                               atol=1e-8)
    # a number's tangents are not arrays: the columns are stacked as before
    assert stacked(np.float64(1.0), []) is None
