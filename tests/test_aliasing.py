"""One model of memory for both modes (before_ad.aliasing, #34 item 5): what shares memory
(views of NumPy functions by their records, the list of views np.split returns, a list
holding an array, what a Python function returns) and what writes into it (element
writes, `+=`, a list's element changed in place, a called function that writes into its
argument). Each form is differentiated right in every mode, against central differences,
or refused in every mode with an error that names this file, the line that reads, the
line that writes, and the line that made the other name."""
import importlib.util
import math

import numpy as np
import pytest

import s2sad
from numpy_cases import check_hessian, fd_array_grad
from oracle import fd_grad
from warned import allowing_unconnected

X = np.array([0.7, -0.4, 1.3, 0.9])
T = np.array([0.3, -1.1, 0.6, 0.8])         # a direction for jvp


# -- helpers the functions below call ------------------------------------------------------
def scale(a):
    a *= 2.0


def scale_the_tail(a):
    b = a[1:]
    b *= 3.0


def scale_through_a_call(a):
    scale(a)


def scaled(a):
    a *= 2.0
    return a


def squares_in_new_array(v):
    out = np.zeros_like(v)
    out[0] = v[0] ** 2
    return out


def tail_view(v):
    return v[1:]


def add_into_the_first(lst):
    lst[0] += 1.0


def doubled(v):
    return v * 2.0


def halved(a):
    a *= 0.5
    return a


# -- NumPy sees the write through the other name: refused in both modes --------------------
def list_element_added_then_array_read(x):
    y = np.sin(x)
    lst = [y]
    lst[0] += x * x
    return np.sum(y * x)


def array_added_then_list_read(x):
    y = np.sin(x)
    lst = [y]
    y *= x
    return np.sum(lst[0] * x)


def split_part_written_then_array_read(x):
    y = np.sin(x)
    a, b = np.split(y, 2)
    a[0] = x[1] ** 2
    return np.sum(y * x)


def array_written_then_array_split_read(x):
    y = np.sin(x)
    parts = np.array_split(y, 2)
    y[0] = x[1] ** 2
    return np.sum(parts[0] * x[:2])


def hsplit_part_scaled_then_array_read(x):
    y = np.sin(x)
    a, b = np.hsplit(y, 2)
    b *= x[0]
    return np.sum(y * x)


def vsplit_part_written_then_matrix_read(x):
    y = np.outer(x, np.cos(x))
    top, bottom = np.vsplit(y, 2)
    top[0, 1] = x[2] ** 2
    return np.sum(y * y)


def split_part_written_then_its_other_name_read(x):
    y = np.sin(x)
    a, b = np.split(y, [1])
    c = b
    b[0] = 5.0 * x[0]
    return np.sum(c * x[1:]) + np.sum(a)


def split_part_written_then_the_list_read(x):
    y = np.sin(x)
    parts = np.split(y, 2)
    b = parts[1]
    b[0] = 5.0 * x[0]
    return np.sum(parts[0] * x[:2])


def split_part_taken_twice(x):
    y = np.sin(x)
    parts = np.split(y, 2)
    a, b = parts[1], parts[1]
    b[0] = 5.0 * x[0]
    return np.sum(a * x[:2])


def split_cut_out_of_order(x):
    # (`[2, 1]` makes y[:2], y[1:1] and y[1:]: a and b share y[1])
    y = np.sin(x)
    a, e, b = np.split(y, [2, 1])
    b[0] = 5.0 * x[0]
    return np.sum(a * x[:2])


def split_part_named_in_branches_then_written(x):
    y = np.cos(x)
    a, b = np.split(y, 2)
    if x[0] > 0:
        c = a
    else:
        c = b
    b[1] = x[2] ** 2
    return np.sum(c * x[:2])


def split_part_read_after_the_array_is_written(x):
    y = np.sin(x)
    a, b = np.split(y, 2)
    y[0] = x[1] ** 2
    return np.sum(a * x[:2]) + np.sum(b)


def astype_without_copy_written(x):
    y = np.sin(x)
    z = y.astype(float, copy=False)
    z[0] = x[1] ** 2
    return np.sum(y * x)


def callee_scales_its_argument(x):
    y = np.sin(x)
    scale(y)
    return np.sum(y * x)


def callee_scales_through_a_view(x):
    y = np.sin(x)
    scale_the_tail(y)
    return np.sum(y * x)


def callee_scales_through_a_callee(x):
    y = np.sin(x)
    scale_through_a_call(y)
    return np.sum(y * x)


def callee_adds_into_an_array_of_its_list(x):
    y = np.sin(x)
    lst = [y]
    add_into_the_first(lst)
    return np.sum(y * x)


def helper_result_named_twice_then_scaled(x):
    z = doubled(x)
    w = z
    z *= x[0]
    return np.sum(w * x)


def row_added_into_then_read(x):
    y = np.zeros((2, 4))
    y[1] = x
    r = y[1]
    y[1] += x[1]
    return np.sum(r * x)


def array_twice_in_a_list_added_into(x):
    y = np.sin(x)
    lst = [y, y]
    lst[0] += x
    return np.sum(lst[1] * x)


def array_appended_in_a_loop_added_into(x):
    y = np.sin(x)
    lst = [x]
    for i in range(2):
        lst.append(y)
    lst[1] += x
    return np.sum(lst[2] * x)


def joined_lists_added_into(x):
    y = np.sin(x)
    lst = [x * 2.0] + [y]
    lst[1] += x
    return np.sum(y * x)


def callee_returns_a_view_then_written(x):
    y = np.sin(x)
    z = tail_view(y)
    z[0] = x[0] ** 2
    return np.sum(y * x)


def row_appended_then_filled(x):
    m = []
    for i in range(3):
        row = []
        m.append(row)
        for j in range(4):
            row.append(x[i] * x[j])
    return sum(sum(r) for r in m)


def list_of_the_iteration_before_appended_to(x):
    m, prev = [], [0.0]
    for i in range(3):
        cur = []
        prev.append(x[i])       # (from the second iteration on, a list m holds)
        m.append(cur)
        cur.append(x[i] * 2.0)
        prev = cur
    return sum(sum(r) for r in m) + sum(prev)


def first_buffer_kept_then_written(x):
    keep = x
    for k in range(2):
        buf = np.sin(x) * (k + 1.0)
        keep = buf if k == 0 else keep
        buf[0] = x[1] ** 2
        s = np.sum(keep * x)
    return s


def buffer_of_this_iteration_named_twice(x):
    u = np.sin(x)
    for k in range(2):
        un = u.copy()
        v = un
        un[0] = x[1] * k
        u = v * x
    return np.sum(u)


def buffers_swapped_into_one(x):
    u, un = np.sin(x), np.cos(x)
    for k in range(2):
        un[0] = x[1] * (k + 1.0)
        s = np.sum(u * x)
        u, un = un, un
    return s


#: (function, line of the read, line of the write, line that made the other name), as
#: offsets from the `def` line
REFUSED = [
    (list_element_added_then_array_read, 4, 3, 2),
    (array_added_then_list_read, 4, 3, 2),
    (split_part_written_then_array_read, 4, 3, 2),
    (array_written_then_array_split_read, 4, 3, 2),
    (hsplit_part_scaled_then_array_read, 4, 3, 2),
    (vsplit_part_written_then_matrix_read, 4, 3, 2),
    (astype_without_copy_written, 4, 3, 2),
    (callee_scales_its_argument, 3, 2, None),
    (callee_scales_through_a_view, 3, 2, None),
    (callee_scales_through_a_callee, 3, 2, None),
    (callee_adds_into_an_array_of_its_list, 4, 3, None),
    (helper_result_named_twice_then_scaled, 4, 3, 2),
    (row_added_into_then_read, 5, 4, 3),
    (array_twice_in_a_list_added_into, 4, 3, 2),
    (joined_lists_added_into, 4, 3, 2),
    (callee_returns_a_view_then_written, 4, 3, 2),
    (row_appended_then_filled, 4, 6, 4),
    (list_of_the_iteration_before_appended_to, 5, 4, 5),
    (first_buffer_kept_then_written, 6, 5, 4),
    (buffer_of_this_iteration_named_twice, 6, 5, 4),
    (buffers_swapped_into_one, 4, 3, 5),
    (split_part_written_then_its_other_name_read, 5, 4, 2),
    (split_part_written_then_the_list_read, 5, 4, 2),
    (split_part_taken_twice, 5, 4, 3),
    (split_cut_out_of_order, 5, 4, 3),
    (split_part_read_after_the_array_is_written, 4, 3, 2),
    (split_part_named_in_branches_then_written, 8, 7, 2),
]


def _modes(f):
    """Each mode's call of `f` at X."""
    return {"grad": lambda: s2sad.grad(f)(X.copy()),
            "value_and_grad": lambda: s2sad.value_and_grad(f)(X.copy()),
            "vjp": lambda: s2sad.vjp(f, X.copy())[1](1.0),
            "jvp": lambda: s2sad.jvp(f, (X.copy(),), (T,)),
            "jacfwd": lambda: s2sad.jacfwd(f)(X.copy()),
            "hessian": lambda: s2sad.hessian(f)(X.copy())}


@pytest.mark.parametrize("f, read, write, made", REFUSED, ids=lambda v: getattr(v, "__name__", ""))
@pytest.mark.parametrize("mode", ["grad", "value_and_grad", "vjp", "jvp", "jacfwd", "hessian"])
def test_a_write_another_name_sees_is_refused_in_every_mode(f, read, write, made, mode):
    first = f.__code__.co_firstlineno
    with pytest.raises(s2sad.UnsupportedSyntaxError) as info:
        _modes(f)[mode]()
    error = info.value
    assert error.filename == __file__ and error.lineno == first + read, error
    assert f"is read after line {first + write} (" in error.reason, error.reason
    if made is not None:
        assert f"(line {first + made}: " in error.reason, error.reason


@pytest.mark.parametrize("mode", ["grad", "vjp", "jvp", "hessian"])
def test_an_array_appended_in_a_loop_then_added_into_is_refused(mode):
    # (the list's elements are of unknown kind here: `lst[1]` may be a number or an array,
    # which a check finds when the code runs)
    with pytest.raises(s2sad.UnsupportedSyntaxError) as info:
        _modes(array_appended_in_a_loop_added_into)[mode]()
    first = array_appended_in_a_loop_added_into.__code__.co_firstlineno
    assert info.value.filename == __file__ and info.value.lineno in (first + 5, first + 6)


def test_a_callee_s_write_is_named_with_its_own_line_and_the_fix():
    first = scale.__code__.co_firstlineno
    with pytest.raises(s2sad.UnsupportedSyntaxError) as info:
        s2sad.jvp(callee_scales_its_argument, (X.copy(),), (T,))
    reason = info.value.reason
    assert (f"where scale() writes into its argument 'a' in place ({__file__}:{first + 1}: "
            "a *= 2.0), the memory of y") in reason, reason
    assert "y.copy()" in reason and "y = scale(...)" in reason
    # through a view in the callee, and through a callee of the callee: the line that writes
    first = scale_the_tail.__code__.co_firstlineno
    with pytest.raises(s2sad.UnsupportedSyntaxError, match=f":{first + 2}: b \\*= 3.0"):
        s2sad.grad(callee_scales_through_a_view)(X.copy())
    first = scale.__code__.co_firstlineno
    with pytest.raises(s2sad.UnsupportedSyntaxError,
                       match=f"scale_through_a_call\\(\\) writes .*:{first + 1}: a \\*= 2.0"):
        s2sad.grad(callee_scales_through_a_callee)(X.copy())


def test_the_element_of_a_list_is_named_in_the_message():
    with pytest.raises(s2sad.UnsupportedSyntaxError,
                       match=r"lst\[0\] \+= x \* x\) writes into the array lst holds, which it "
                             "shares memory with"):
        s2sad.grad(list_element_added_then_array_read)(X.copy())


def dict_written_through_another_name(x):
    d = {}
    for i, k in enumerate("ab"):
        d[k] = x[i]
    other = d
    other["a"] = other["a"] * 10
    return d["a"] + d["b"] ** 2


def test_a_dict_written_through_another_name_is_called_a_dict():
    with pytest.raises(s2sad.UnsupportedSyntaxError,
                       match=r'other\["a"\] \* 10\) writes into the dict it shares memory with'):
        s2sad.grad(dict_written_through_another_name)(X.copy())


# -- reverse mode: a write in place into memory the gradient reads from before --------------
def constant_scaled_after_use(x):
    y = np.linspace(1.0, 2.0, 4)
    s = np.sum(y * x * x)
    scale(y)
    return s


def constant_sorted_after_use(x):
    y = np.array([3.0, 1.0, 2.0, 0.5])
    s = np.sum(y * x * x)
    y.sort()
    return s


@pytest.mark.parametrize("f, call, what", [
    (constant_scaled_after_use, "scale(y)", "scale\\(\\) writes into its argument 'a'"),
    (constant_sorted_after_use, "y.sort()", "y.sort\\(\\) changes y in place")])
def test_reverse_mode_refuses_a_write_in_place_into_values_read_before(f, call, what):
    # the gradient (2 y x) would read y after the call changed it (NumPy runs it as it is)
    first = f.__code__.co_firstlineno
    for run in (lambda: s2sad.grad(f)(X.copy()), lambda: s2sad.vjp(f, X.copy())):
        with pytest.raises(s2sad.UnsupportedSyntaxError, match=what) as info:
            run()
        assert info.value.filename == __file__ and info.value.lineno == first + 3
        assert f"memory that line {first + 2} (s = np.sum(y * x * x)) reads before" in \
            info.value.reason
    # forward mode computes each tangent where its value is: right
    want = fd_array_grad(f, (X,), 0)
    value, tangent = s2sad.jvp(f, (X.copy(),), (T,))
    assert value == pytest.approx(f(X.copy()), rel=1e-14)
    assert tangent == pytest.approx(np.sum(want * T), rel=1e-7)


def constant_halved_in_a_loop(x):
    u = np.linspace(1.0, 2.0, 4)
    s = 0.0
    for i in range(3):
        u = halved(u)
        s = s + np.sum(u * x * x)
    return s


def test_reverse_mode_refuses_a_write_into_what_an_earlier_iteration_read():
    # the gradient reads u of each iteration, which the next call of halved() changes
    f = constant_halved_in_a_loop
    first = f.__code__.co_firstlineno
    with pytest.raises(s2sad.UnsupportedSyntaxError,
                       match=f"memory that line {first + 5} .* reads before the call") as info:
        s2sad.grad(f)(X.copy())
    assert info.value.lineno == first + 4
    want = fd_array_grad(f, (X,), 0)
    assert s2sad.jvp(f, (X.copy(),), (T,))[1] == pytest.approx(np.sum(want * T), rel=1e-7)


def test_the_messages_say_which_memory():
    with pytest.raises(s2sad.UnsupportedSyntaxError,
                       match=r"y\[1\] \+= x\[1\]\) writes into the array it shares memory "
                             r"with \(line \d+: r = y\[1\]\)"):
        s2sad.grad(row_added_into_then_read)(X.copy())
    with pytest.raises(s2sad.UnsupportedSyntaxError, match=r"\(line \d+: w = z\)"):
        s2sad.grad(helper_result_named_twice_then_scaled)(X.copy())


# -- what shares no memory: differentiated (these were refused) ----------------------------
def helper_makes_a_new_array(x):
    y = np.sin(x)
    z = squares_in_new_array(y)
    z[1] = x[0] * x[2]
    return np.sum(y * z) + np.sum(z * x)


def boolean_mask_copies(x):
    y = np.sin(x)
    z = y[y > 0.2]
    z *= x[0]
    return np.sum(y * x) + np.sum(z * z)


def negated_mask_copies(x):
    y = np.sin(x)
    z = y[~(y > 0.2)]
    z[0] = x[2] ** 2
    return np.sum(y * x) + np.sum(z * z)


def index_array_copies(x):
    y = np.sin(x)
    z = y[np.argsort(x)]
    z[0] = x[1] ** 2
    return np.sum(y * x) + np.sum(z * x)


def callee_writes_and_returns_the_new_value(x):
    y = np.sin(x)
    y = scaled(y)
    return np.sum(y * x)


def split_part_written_and_read(x):
    y = np.sin(x)
    a, b = np.split(y, 2)
    s = np.sum(b * x[2:])
    a[0] = x[1] ** 2
    return np.sum(a * a) + s


# the parts of one split share memory with the array split, not with each other: a write
# into one part leaves the others as they were
def split_part_written_other_part_read(x):
    y = np.sin(x)
    a, b = np.split(y, [1])
    b[0] = 5.0 * x[0] * x[2]
    return np.sum(a * x[0]) + np.sum(b * b)


def split_in_sections_written_other_part_read(x):
    y = np.sin(x)
    a, b = np.split(y, 2)
    a[1] = x[3] ** 2
    return np.sum(b * x[:2]) + np.sum(a * a)


def array_split_parts_written_in_turn(x):
    y = np.cos(x)
    a, b, c = np.array_split(y, 3)
    c[0] = x[0] * x[1]
    b[0] = a[0] * x[3]
    return np.sum(a * b) + np.sum(c * b)


def hsplit_part_scaled_other_part_read(x):
    y = np.sin(x)
    a, b = np.hsplit(y, 2)
    b *= x[0]
    return np.sum(a * x[2:]) + np.sum(b)


def vsplit_part_written_twice_other_part_read(x):
    y = np.outer(x, np.cos(x))
    top, bottom = np.vsplit(y, 2)
    top[0, 1] = x[2] ** 2
    top[1, 0] = x[1] * x[0]
    return np.sum(bottom * bottom) + np.sum(top * x)


def split_parts_named_from_the_list(x):
    y = np.sin(x)
    parts = np.split(y, [1, 3])
    a = parts[0]
    s = np.sum(a)
    c = parts[2]
    c[0] = s * x[1]
    return np.sum(a * x[0]) + np.sum(c) + s


def split_of_a_split_part(x):
    y = np.sin(x)
    a, b = np.split(y, 2)
    c, d = np.split(a, 2)
    d[0] = x[0] * x[3]
    return np.sum(c * b) + np.sum(d)


def split_in_a_loop(x):
    y = np.sin(x)
    s = 0.0
    for k in range(3):
        z = y * (k + 1.0)
        a, b = np.split(z, [2])
        b[1] = x[k] ** 2
        s = s + np.sum(a * b[1])
    return s


def split_part_written_after_the_array_is_read(x):
    # (the gradient reads y, read before: the write into b is made on a copy)
    y = np.sin(x)
    s = np.sum(y * y * x)
    a, b = np.split(y, [2])
    t = np.sum(a * b)
    b[0] = x[0] * x[3]
    b *= x[1]
    return s + np.sum(a * x[:2]) + np.sum(b * b) + t


def split_parts_written_in_branches(x):
    y = np.cos(x)
    a, b = np.split(y, 2)
    if x[0] > 0:
        b[1] = x[2] ** 2
    else:
        a[0] = x[1] ** 3
    return np.sum(a * b * x[:2])


def split_argument_written(x):
    # (f writes into its argument; its derivatives do not)
    a, b = np.split(x, [2])
    b[0] = a[0] * a[1]
    return np.sum(a * b)


def astype_copies(x):
    y = np.sin(x)
    z = y.astype(float)
    z[0] = x[1] ** 2
    return np.sum(y * x) + np.sum(z * z)


def list_of_numbers_added_to(x):
    lst = [x[0] * x[1], x[2]]
    lst[0] += x[3]
    other = lst[1]
    return lst[0] * other


def list_of_elements_added_to(x):
    # (in forward mode `x[0]` may be a row, when nothing says `x` is a vector: taken as a
    # number, with a check when it runs)
    xs = [x[0], x[1]]
    a = xs[1]
    xs[0] += x[2]
    return a * xs[0]


def list_of_new_arrays_made_in_a_loop(x):
    lst = []
    for i in range(2):
        lst.append(np.sin(x) * (i + 1.0))
    lst[0] += x
    return np.sum(lst[0] * lst[1])


def list_of_arrays_read_through_the_list(x):
    lst = [np.sin(x), x]
    lst[0] += x * x
    return np.sum(lst[0] * lst[1])


def nested_list_comprehension(x):
    m = [[x[i] * x[j] for j in range(4)] for i in range(3)]
    return sum(sum(r) for r in m)


def nested_list_comprehension_with_a_condition(x):
    m = [[x[i] * x[j] for j in range(4) if j != i] for i in range(3)]
    return sum(r[0] * r[1] for r in m) + m[1][2] ** 2


def rows_filled_then_appended(x):
    m = []
    for i in range(3):
        row = []
        for j in range(4):
            row.append(x[i] * x[j])
        m.append(row)
    return sum(r[0] * r[i] for i, r in enumerate(m))


def double_buffered_stencil(x):
    # (`un` is a new copy in each iteration: writing it does not change `u`, the copy
    # of the iteration before, although `u = un` named it so)
    u = x.copy()
    for step in range(3):
        un = u.copy()
        for i in range(1, 3):
            un[i] = u[i] + 0.2 * (u[i - 1] - 2 * u[i] + u[i + 1]) * u[i]
        u = un
    return np.sum(u ** 2)


def buffers_swapped_each_step(x):
    a, b = x * 1.0, x * 0.0
    for step in range(3):
        b = np.zeros(4)
        b[1:] = a[:-1] * a[1:]
        b[0] = a[0]
        a, b = b, a
    return np.sum(a * b)


def jacobi_sweeps_swapping_two_buffers(x):
    # (`u` and `un` each hold either array in turn, never the same one)
    u, un = np.zeros(4), np.zeros(4)
    for sweep in range(3):
        un[1:-1] = 0.5 * (u[:-2] + u[2:]) * u[1:-1] + x[1:-1]
        un[0] = x[0]
        un[-1] = x[-1] * x[0]
        u, un = un, u
    return np.sum(u ** 2) + np.sum(un * x)


ACCEPTED = [jacobi_sweeps_swapping_two_buffers, double_buffered_stencil, buffers_swapped_each_step, nested_list_comprehension, nested_list_comprehension_with_a_condition,
            rows_filled_then_appended, helper_makes_a_new_array, boolean_mask_copies, negated_mask_copies,
            index_array_copies, callee_writes_and_returns_the_new_value,
            split_part_written_and_read, astype_copies, list_of_numbers_added_to,
            list_of_elements_added_to, list_of_new_arrays_made_in_a_loop,
            list_of_arrays_read_through_the_list, split_part_written_other_part_read,
            split_in_sections_written_other_part_read, array_split_parts_written_in_turn,
            hsplit_part_scaled_other_part_read, vsplit_part_written_twice_other_part_read,
            split_parts_named_from_the_list, split_of_a_split_part, split_in_a_loop,
            split_part_written_after_the_array_is_read, split_parts_written_in_branches,
            split_argument_written]


@pytest.mark.parametrize("f", ACCEPTED, ids=lambda f: f.__name__)
def test_what_shares_no_memory_is_differentiated_in_every_mode(f):
    want = fd_array_grad(f, (X,), 0)
    x = X.copy()
    np.testing.assert_allclose(s2sad.grad(f)(x), want, rtol=1e-7, atol=1e-9)
    value, gradient = s2sad.value_and_grad(f)(x)
    assert value == pytest.approx(f(X.copy()), rel=1e-14)
    np.testing.assert_allclose(gradient, want, rtol=1e-7, atol=1e-9)
    value, pullback = s2sad.vjp(f, x)
    np.testing.assert_allclose(pullback(1.5)[0], 1.5 * want, rtol=1e-7, atol=1e-9)
    value, tangent = s2sad.jvp(f, (x,), (T,))
    assert value == pytest.approx(f(X.copy()), rel=1e-14)
    assert tangent == pytest.approx(np.sum(want * T), rel=1e-7, abs=1e-9)
    np.testing.assert_allclose(s2sad.jacfwd(f)(x), want, rtol=1e-7, atol=1e-9)
    np.testing.assert_array_equal(x, X)         # the input is as it was


@pytest.mark.parametrize("f", ACCEPTED, ids=lambda f: f.__name__)
def test_their_hessians_agree_with_central_differences(f):
    check_hessian(f, X.copy())


@pytest.mark.skipif(importlib.util.find_spec("numba") is None, reason="numba is not installed")
def test_with_the_numba_backend():
    # (the other forms need runtime helpers Numba does not compile: an element write's
    # adjoint, lists)
    f = boolean_mask_copies
    np.testing.assert_allclose(s2sad.grad(f, backend="numba")(X.copy()),
                               fd_array_grad(f, (X,), 0), rtol=1e-7, atol=1e-9)
    f = split_part_written_then_array_read
    with pytest.raises(s2sad.UnsupportedSyntaxError, match="y is read after line"):
        s2sad.grad(f, backend="numba")(X.copy())


@pytest.mark.parametrize("f", [helper_makes_a_new_array, boolean_mask_copies,
                               split_part_written_other_part_read], ids=lambda f: f.__name__)
def test_exported(f, tmp_path):
    path = tmp_path / f"{f.__name__}_derivatives.py"
    s2sad.export(f, path, args=(X,))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    got = getattr(module, f"{f.__name__}_grad")(X.copy())
    np.testing.assert_allclose(got, fd_array_grad(f, (X,), 0), rtol=1e-7, atol=1e-9)


def test_the_new_value_of_a_helper_that_writes_its_argument_is_followed():
    # `y = scaled(y)`: the write is followed through what scaled() returns; the array
    # passed is not read again, in the function or by its gradient
    f = callee_writes_and_returns_the_new_value
    np.testing.assert_allclose(s2sad.grad(f)(X.copy()), 2 * np.sin(X) + 2 * X * np.cos(X),
                               rtol=1e-14)


def test_a_result_a_helper_shares_with_an_input_is_written_on_a_copy():
    # reverse mode writes into `z` on a copy: z is a view of the caller's x
    def f(x):
        z = tail_view(x)
        z[0] = 2.0 * z[1]
        return np.sum(z * z)
    x = X.copy()
    np.testing.assert_allclose(s2sad.grad(f)(x), fd_array_grad(f, (X.copy(),), 0),
                               rtol=1e-7, atol=1e-9)
    np.testing.assert_array_equal(x, X)
    s2sad.value_and_grad(f)(x)
    np.testing.assert_array_equal(x, X)


# -- found by the scalar fuzzer ---------------------------------------------------------------
def _halved_in_a_branch(a):
    for i in range(3):
        if -0.5 < math.sin(a):
            k = 0
            while 0.5 < a <= 1.5 and k < 3:
                a = 0.5 * a + (0.5 + 0.5)
                k += 1
        elif i == 1:
            a /= 2.0 + math.sin(0.5 + a)
    return a


def _numbers_in_loops(x, y, z):
    for i in range(0, 5, 2):
        if -0.75 < x + x <= -0.25:
            kk = 0
            while kk < 4:
                x = y / (1.0 + _halved_in_a_branch(y) * _halved_in_a_branch(y))
                z = y * -0.25 / (1.0 + math.hypot(z, 3.0) * math.hypot(z, 3.0))
                kk += 1
            k = 0
            while k < 4 and -0.25 < z <= 1.75:
                k += 1
                x = math.erf(0.0)
        elif z * x >= 0.0:
            y = x * y
        else:
            for l in (-1.5 / (1.0 + z * z), math.asinh(y), y if z <= 0.75 else x):  # noqa: E741
                y = y * -1.5
    return y


def test_a_number_a_helper_divides_is_no_write():
    # `a /= ...` of a parameter of unknown kind writes in place only where the caller
    # passes an array; `y` is a float parameter, whose kind the code left unknown
    point = (-0.2, 0.875, 2.0)
    want = fd_grad(_numbers_in_loops, point, (0, 1, 2))
    tangent = s2sad.jvp(_numbers_in_loops, point, (1.0, 1.0, 1.0))[1]
    assert tangent == pytest.approx(sum(want), rel=1e-7)
    with allowing_unconnected(_numbers_in_loops, ["z"]):
        got = s2sad.grad(_numbers_in_loops, wrt=(0, 1, 2))(*point)
    assert got == pytest.approx(want, rel=1e-7, abs=1e-10)


def rows_of_the_matrix_enumerated_written(x):
    a = np.outer(x, x[:2])
    for i, row in enumerate(a):
        a[i] = row * (i + 1.0)
    return np.sum(a * a)


@pytest.mark.parametrize("mode", ["grad", "jvp"])
def test_a_loop_over_an_array_it_writes_into_names_the_array(mode):
    # (it named `seq`, the name desugar gives the loop's sequence)
    with pytest.raises(s2sad.UnsupportedSyntaxError) as info:
        _modes(rows_of_the_matrix_enumerated_written)[mode]()
    first = rows_of_the_matrix_enumerated_written.__code__.co_firstlineno
    assert info.value.lineno == first + 2
    assert info.value.reason.startswith(
        f"the loop at line {first + 2} (for i, row in enumerate(a):) goes on over a after "
        f"line {first + 3} (a[i] = row * (i + 1.0)) writes into it"), info.value.reason
    assert "seq" not in info.value.reason


def slice_of_a_list_of_an_array_written(x):
    y = list(x)             # numbers (a list of a 2-d array's rows would be views)
    z = y[:]                # a new list: its write is not seen through y
    z[0] = 10.0 * x[1]
    return y[0] * z[0] + z[1]


def slice_of_a_list_then_its_array_written(x):
    rows = [x * 1.0, x * 2.0]
    part = rows[:1]         # a new list holding the same arrays
    r = part[0]             # the array rows[0] holds, written:
    r[0] = 5.0 * x[1]
    return np.sum(rows[0] * x)


@pytest.mark.parametrize("mode", ["grad", "jvp"])
def test_a_slice_of_a_list_is_a_new_list_of_the_same_elements(mode):
    # (a false alarm before: the slice was taken for an element of the list, so the write
    # into it was taken as one into y)
    f = slice_of_a_list_of_an_array_written
    want = fd_array_grad(f, (X,), 0)
    got = s2sad.grad(f)(X.copy()) if mode == "grad" else (
        s2sad.jvp(f, (X.copy(),), (T,))[1])
    np.testing.assert_allclose(got, want if mode == "grad" else want @ T, rtol=1e-6,
                               atol=1e-9)
    with pytest.raises(s2sad.UnsupportedSyntaxError, match=r"rows is read after line \d+ "
                       r"\(r\[0\] = 5\.0 \* x\[1\]\)"):
        _modes(slice_of_a_list_then_its_array_written)[mode]()
