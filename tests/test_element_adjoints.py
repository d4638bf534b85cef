"""Loops that read or write arrays element by element (after_ad/element_adjoints.py): the reversed
loop updates the adjoints in place instead of making an array of the whole size per
element.

Gradients are checked against central differences (inputs unchanged, for `grad` and
`value_and_grad`); the generated source is checked to update in place where it may and
to leave alone what it must; Hessians, which differentiate the generated code again,
are checked against differences of the gradient."""
import re

import numpy as np
import pytest

import s2sad
from s2sad import compilation, driver

from numpy_cases import check_fused, compare, fd_array_grad


def smooth(x):
    y = x.copy()
    for i in range(1, len(x) - 1):
        y[i] = 0.5 * x[i] + 0.25 * (x[i - 1] + x[i + 1])
    return np.sum(y * y)


def neighbours(x):
    s = 0.0
    for i in range(1, len(x)):
        s = s + x[i] * x[i - 1]
    return s


def weighted(x, w):
    y = np.zeros(len(x))
    for i in range(len(x)):
        y[i] = np.sin(x[i]) * w[i]
    return np.dot(y, w)             # y's adjoint comes from a helper: made its own first


def grid(a):
    total = 0.0
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            total = total + a[i, j] ** 2 * (i + 1)
    return total


def windows(x):
    s = 0.0
    for i in range(len(x) - 1):
        s = s + np.sum(np.exp(x[i:i + 2]))
    return s


def branchy(x):
    y = x.copy()
    for i in range(len(x)):
        if x[i] > 0:
            y[i] = x[i] ** 2
    return np.sum(y * x)


def recurrence(x):
    y = x.copy()
    for i in range(1, len(x)):
        y[i] = y[i - 1] * x[i]      # reads an element the loop wrote before
    return np.sum(y)


def decay(r):
    u = np.zeros(len(r) + 1)
    u[0] = 1.0
    for i in range(len(r)):
        u[i + 1] = u[i] - 0.1 * r[i] * u[i] ** 2     # explicit Euler, stored
    return np.sum(u * u)


def misfit(r, observed):
    u = np.zeros(len(observed))
    u[0] = 1.0
    for i in range(len(observed) - 1):
        u[i + 1] = u[i] - 0.1 * r[i] * u[i] ** 2
    return np.sum((u - observed) ** 2)    # u's adjoint from a helper: made its own first


def until(x):
    y = x.copy()
    i = 0
    while i < len(x) - 1 and y[i] < 3.0:    # a while loop: its pullback updates in place
        y[i + 1] = y[i] * x[i + 1] + 0.1
        i = i + 1
    return np.sum(y * y)


def columns(a):
    s = 0.0
    for j in range(a.shape[1]):
        s = s + np.sum(np.sin(a[:, j]) * (j + 1))
    return s


def rows(a):
    y = a.copy()
    for i in range(1, a.shape[0]):
        y[i] = np.tanh(y[i - 1]) * a[i]     # y[i - 1] is a row: a view, recorded as a copy
    return np.sum(y ** 2)


def same_rows(a):
    y = a.copy()
    for i in range(a.shape[0]):
        y[i] = y[i] ** 2 + a[i]     # reads the row it writes: the loop writes a copy
    return np.sum(y * a)


def picked(x, idx):
    s = 0.0
    for k in range(3):
        s = s + np.sum(x[idx] * (k + 1))    # an index array may repeat: left alone
    return s


def pairs(x):
    e = 0.0
    for i in range(x.shape[0]):
        for j in range(i + 1, x.shape[0]):
            d = x[i] - x[j]                 # a row of each pair, read a number at a time
            e = e + 1.0 / (d[0] ** 2 + d[1] * d[0] + d[1] ** 2 + 1.0)
    return e


def corners(m):
    s = 0.0
    for k in range(3):
        c = m * (k + 1.0)
        s = s + c[0, 1] * c[1, 0] + c[0, 1]     # one element twice: the adds accumulate
    return s


def row_products(m):
    s = 0.0
    for k in range(2):
        c = np.tanh(m + k)
        s = s + np.sum(c[0] * c[1])     # rows, not numbers: their adjoints stay as they are
    return s


rng = np.random.default_rng(11)
CASES = {
    "pairs": (pairs, (rng.standard_normal((4, 2)),), 0),
    "corners": (corners, (rng.standard_normal((2, 3)),), 0),
    "row_products": (row_products, (rng.standard_normal((2, 3)),), 0),
    "smooth": (smooth, (rng.standard_normal(7),), 0),
    "neighbours": (neighbours, (rng.standard_normal(6),), 0),
    "weighted": (weighted, (rng.standard_normal(5), rng.standard_normal(5)), (0, 1)),
    "grid": (grid, (rng.standard_normal((3, 4)),), 0),
    "windows": (windows, (rng.standard_normal(5),), 0),
    "branchy": (branchy, (rng.standard_normal(6),), 0),
    "recurrence": (recurrence, (rng.uniform(0.5, 1.5, 6),), 0),
    "picked": (picked, (rng.standard_normal(5), np.array([0, 2, 2, 4])), 0),
    "decay": (decay, (rng.uniform(0.5, 1.5, 6),), 0),
    "rows": (rows, (rng.standard_normal((4, 3)),), 0),
    "until": (until, (np.array([0.5, 1.2, 1.3, 0.9, 1.1]),), 0),
    "columns": (columns, (rng.standard_normal((3, 4)),), 0),
    "misfit": (misfit, (rng.uniform(0.5, 1.5, 5), rng.uniform(0.5, 1.0, 6)), (0, 1)),
    "same_rows": (same_rows, (rng.standard_normal((4, 3)),), 0),
}
#: What the reversed loop of each case does to the adjoints in place.
UPDATED = {
    "smooth": ["x_bar[i + 1] += ", "x_bar[i - 1] += ", "y_bar[i] = 0.0"],
    "neighbours": ["x_bar[i] += ", "x_bar[i - 1] += "],
    "weighted": ["y_bar = _s2s_own(y_bar, y)", "y_bar[i] = 0.0", "x_bar[i] += "],
    "grid": ["a_bar[i, j"],
    "windows": ["x_bar[i:i + 2] += "],
    "branchy": ["x_bar[i] += "],     # y's adjoint goes through a copy per branch
    "recurrence": ["y_bar[i] = 0.0", "y_bar[i - 1] += "],
    "decay": ["u_1_bar[i + 1] = 0.0", "u_1_bar[i] += ", "r_bar[i] += "],
    "rows": ["y_bar[i] = 0.0", "y_bar[i - 1] += "],
    "misfit": ["_s2s_own(", "r_bar[i] += "],
    "until": ["x_bar[i + 1] += ", "y_bar[i] += "],
    "columns": ["a_bar[:, j] += "],
}


@pytest.mark.parametrize("which", ["grad", "value_and_grad"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_gradients_match_finite_differences(name, which):
    f, args, wrt = CASES[name]
    if name == "picked":        # the index array is not differentiated
        got = s2sad.grad(f)(*args) if which == "grad" else s2sad.value_and_grad(f)(*args)[1]
        error = compare(got, fd_array_grad(f, args, 0), 1e-6, 1e-8, "dpicked/dx")
        assert error is None, error
        return
    check_fused(f, args, wrt, which)


def loop_of(f, args, wrt):
    """The reversed loop of `f`'s gradient, and what comes before it."""
    g = s2sad.grad(f, wrt)
    g(*args)
    code = g.source
    start = code.index("reversed(")
    return code[:start], code[start:]


@pytest.mark.parametrize("name", sorted(UPDATED))
def test_the_reversed_loop_updates_in_place(name):
    f, args, wrt = CASES[name]
    before, loop = loop_of(f, args, wrt)
    for text in UPDATED[name]:
        assert text in before + loop, before + loop
    assert "_s2s_unindex" not in loop, loop
    if name != "branchy":
        assert "_s2s_zero_at" not in loop, loop


def test_elements_at_the_counter_have_one_shape():
    # x[i], x[i - 1] and x[i + 1] (i counts a for over range, x has one axis) are
    # numbers: no summing back, not even for the write's own rule, and nothing on a tape
    # (the reversed loop needs nothing of an iteration but its counter)
    before, loop = loop_of(*CASES["smooth"])
    assert loop.startswith("reversed(range(1, t_1)):"), loop
    assert "_s2s_unbroadcast" not in loop and "_s2s_take" not in loop, loop
    assert "_s2s_tape" not in before, before


def test_the_adjoint_of_an_array_read_a_number_at_a_time_is_zeros_added_in_place():
    """`d[0] ** 2 + d[1] ** 2`: the adjoint of `d`, zeros with the numbers added where they
    were read (no array per number read, no sum of them); rows are left as they were."""
    for name, want in (("pairs", [r"(d\w*)_bar = _s2s_zeros_like\(\1\)", r"d\w*_bar\[0\] \+= "]),
                       ("corners", [r"(c\w*)_bar = _s2s_zeros_like\(\1\)",
                                    r"c\w*_bar\[0, 1\] \+= "])):
        before, loop = loop_of(*CASES[name])
        for pattern in want:
            assert re.search(pattern, loop), loop
        assert "_s2s_unindex" not in loop, loop
    assert "_s2s_unindex" in loop_of(*CASES["row_products"])[1]


@pytest.mark.parametrize("name", ["pairs", "corners"])
def test_hessian_through_the_numbers_added_in_place(name):
    f, (x,), _ = CASES[name]
    H = s2sad.hessian(f)(x)
    h, units = 1e-4, [u.reshape(x.shape) for u in np.eye(x.size)]
    fd = np.array([[(f(x + h * a + h * b) - f(x + h * a - h * b) - f(x - h * a + h * b)
                     + f(x - h * a - h * b)) / (4 * h * h) for b in units] for a in units])
    np.testing.assert_allclose(H.reshape(x.size, x.size), fd, rtol=1e-5, atol=1e-5)


def test_a_new_adjoint_is_not_copied():
    # y_bar = g * y + g * y is an array of its own already; x_bar was just made zeros
    before, _ = loop_of(smooth, *CASES["smooth"][1:])
    assert "_s2s_own" not in before, before


@pytest.mark.parametrize("name", ["recurrence", "decay", "rows"])
def test_a_loop_reading_elements_it_wrote_before_writes_in_place(name):
    # the numbers the pullback reads are read back from the array's final value (no
    # write changes them after they are read: tests/test_read_back.py), not taped; rows'
    # pullback reads np.tanh of a row, a new array, taped
    before, loop = loop_of(*CASES[name])
    forward = before[before.index("for i in range"):]
    assert ".copy()" not in forward, before
    assert "_s2s_snapshot(" not in forward, before
    assert ("_s2s_tape" in forward) == (name == "rows"), before
    array = {"recurrence": "y", "decay": "u", "rows": "y"}[name]
    if name != "rows":
        assert re.search(rf"= {array}\[i( [+-] 1)?\]", loop), loop     # read back
    # nor is the array itself taped, which the in-place updates no longer read for
    # its shape
    assert f", {array}))" not in forward, before


def test_reading_the_element_written_and_index_arrays_are_left_alone():
    before, _ = loop_of(*CASES["same_rows"])
    assert ".copy()" in before[before.index("for i in range"):], before
    f, args, _ = CASES["picked"]
    arg_types = compilation.arg_types_of(f, args)
    assert "_s2s_unindex" in driver.build(f, arg_types=arg_types).source


def test_the_tape_of_a_stored_recurrence_grows_linearly():
    # a copy of the array per step would take memory in the square of the steps
    import tracemalloc
    g = s2sad.grad(decay)
    peaks = []
    for n in (1000, 8000):
        r = np.full(n, 0.01)
        g(r)
        tracemalloc.start()
        g(r)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    assert peaks[1] < 16 * peaks[0], peaks     # 8 times the steps; 64 times if quadratic
    assert peaks[1] < 8000 * 500, peaks        # bytes per step: a few numbers


@pytest.mark.parametrize("name", ["smooth", "decay", "recurrence"])
def test_hessian_of_the_in_place_gradient(name):
    # forward mode differentiates the generated pullback, element writes included;
    # checked against second central differences of f itself
    f, (x,), _ = CASES[name]
    H = s2sad.hessian(f)(x)
    h, n = 1e-4, len(x)
    E = np.eye(n) * h
    fd = np.array([[(f(x + E[j] + E[k]) - f(x + E[j] - E[k]) - f(x - E[j] + E[k])
                     + f(x - E[j] - E[k])) / (4 * h * h) for k in range(n)]
                   for j in range(n)])
    np.testing.assert_allclose(H, fd, rtol=1e-5, atol=1e-5)


def test_gradient_shares_no_memory_with_the_weights():
    x, w = CASES["weighted"][1]
    w_before = w.copy()
    x_bar, w_bar = s2sad.grad(weighted, (0, 1))(x, w)
    assert np.array_equal(w, w_before)
    assert not np.shares_memory(w_bar, w) and not np.shares_memory(x_bar, w)


def wraps(x):
    y = x.copy()
    for i in range(len(x) - 1):
        y[i + 1] = y[i - 1] * x[i]      # y[-1] at i = 0: the last element, written later
    return np.sum(y)


def nested_write(a):
    y = a.copy()
    for i in range(1, a.shape[0]):
        r = y[i - 1]
        for j in range(a.shape[1]):
            y[i, j] = y[i, j] * 2.0     # an inner loop writes: the row read is left alone
        y[i] = np.sin(r) * y[i]
    return np.sum(y ** 2)


@pytest.mark.parametrize("f, args", [(wraps, (rng.uniform(0.5, 1.5, 2),)),
                                     (wraps, (rng.uniform(0.5, 1.5, 5),)),
                                     (nested_write, (rng.standard_normal((3, 2)),))])
def test_elements_that_may_be_written_in_the_iteration_are_not_recorded_late(f, args):
    check_fused(f, args, 0, "grad")
    before, _ = loop_of(f, args, 0)
    assert "_s2s_snapshot" not in before, before


def euler_zeros(k, observed):
    u = np.zeros(len(observed))
    u[0] = 1.0
    for i in range(len(observed) - 1):
        u[i + 1] = u[i] - 0.01 * k * u[i] ** 2
    return np.sum((u - observed) ** 2)


def euler_empty(k, observed):
    u = np.empty(len(observed))
    u[0] = 1.0
    for i in range(len(observed) - 1):
        u[i + 1] = u[i] - 0.01 * k * u[i] ** 2
    return np.sum((u - observed) ** 2)


def test_states_stored_in_np_empty_are_written_in_place_like_np_zeros():
    # np.empty makes a new array as np.zeros does: the same in-place gradient code
    observed = 1.0 / (1.0 + 0.007 * np.arange(40))
    sources = []
    for f in (euler_zeros, euler_empty):
        g = s2sad.grad(f)
        got = g(1.3, observed)
        h = 1e-6
        assert got == pytest.approx((f(1.3 + h, observed) - f(1.3 - h, observed)) / (2 * h),
                                    rel=1e-6)
        body = g.source.split("    # rules: ", 1)[1].split("\n", 1)[1]   # (after the header)
        sources.append(re.sub(r"line \d+", "line N", body))
    assert sources[0].replace("zeros", "empty") == sources[1]
    assert "copy()" not in sources[1]
