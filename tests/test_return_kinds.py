"""What the user's own functions return (analysis/value_kinds.py, `returns`): a call of a
Python function s2sad reads has the kind its summary finds for what the function returns
under the call's argument kinds, so scalar code that calls its helpers is compiled as
scalar code (no `_s2s_unbroadcast`, `_s2s_add`, `_s2s_check_real`). Derivatives against
central differences (tests/oracle.py), where the kind is a number, an array, a tuple, a
join of branches, of a recursion, and where the callee changes between calls."""
import math

import numpy as np
import pytest

import s2sad
from numpy_cases import fd_array_grad
from oracle import assert_close, fd_grad

HELPERS = ("_s2s_unbroadcast", "_s2s_add", "_s2s_check_real", "_s2s_unindex")


def sq(v):
    return v * v


def two(v):
    return v * 2.0, v + 1.0


def calls_twice(x, y):
    a = sq(x) + y
    return math.sin(a) * x


def nested_calls(x, y):
    a = sq(x)
    b = sq(a) * y
    c = a * b + x
    return c * a


def unpacks(x, y):
    u, v = two(x)
    return u * v * y


def through_a_helper(v):
    return math.cos(sq(v)) + v


def calls_a_caller(x):
    return through_a_helper(x) * x


def loop_state(x):
    s = x
    for _ in range(3):
        s = sq(s) * 0.5 + x
    return s


SCALAR_CASES = [(calls_twice, (2.0, 3.0)), (nested_calls, (0.7, 1.3)),
                (unpacks, (0.6, 1.1)), (calls_a_caller, (0.4,)), (loop_state, (0.3,))]


@pytest.mark.parametrize("f, args", SCALAR_CASES, ids=lambda c: getattr(c, "__name__", ""))
def test_scalar_code_calling_its_helpers_has_no_shape_helpers(f, args):
    for mode in ("reverse", "forward"):
        text = s2sad.source(f, mode=mode, at=args)
        # (a tuple's adjoint is the display of its items' adjoints: after_ad/tuple_adjoints)
        assert not [h for h in HELPERS if h in text], text
    wrt = tuple(range(len(args)))
    assert_close(s2sad.grad(f, wrt=wrt)(*args), fd_grad(f, args, wrt), rtol=1e-7)
    value, tangent = s2sad.jvp(f, args, (1.0,) + (0.0,) * (len(args) - 1))
    assert_close(tangent, fd_grad(f, args, 0), rtol=1e-7)


def test_one_version_of_a_helper_for_its_calls_of_one_kind():
    # sq(x) and sq(sq(x)): both calls pass a number, so one derivative serves both
    text = s2sad.source(nested_calls, at=(0.7, 1.3))
    assert "sq_vjp(x)" in text and "sq_vjp(a)" in text and "sq_vjp_1" not in text


def mixed_sites(x, a):
    return np.sum(sq(a) * x) + sq(x) * np.sum(a)


def test_a_helper_returning_an_array_at_one_call_and_a_number_at_another():
    x, a = 0.7, np.array([0.3, -1.2, 2.0])
    g = s2sad.grad(mixed_sites, wrt=(0, 1))(x, a)
    assert_close(g[0], fd_grad(mixed_sites, (x, a), 0))
    np.testing.assert_allclose(g[1], fd_array_grad(mixed_sites, (x, a), 1), rtol=1e-7)
    text = s2sad.source(mixed_sites, wrt=(0, 1), at=(x, a))
    assert "sq_vjp_1(a)" in text and "sq_vjp(x)" in text    # a version per kind


def split(v):
    return v * 2.0, np.sum(v)


def unpacks_an_array_and_a_number(x):
    a, s = split(x)
    return np.sum(a * s)


def test_a_tuple_of_an_array_and_a_number():
    x = np.array([0.5, -0.25, 1.5])
    g = s2sad.grad(unpacks_an_array_and_a_number)(x)
    np.testing.assert_allclose(g, fd_array_grad(unpacks_an_array_and_a_number, (x,), 0),
                               rtol=1e-7)


def power(v, n):
    if n == 0:
        return 1.0
    return v * power(v, n - 1)


def calls_recursion(x):
    return power(x, 3) * x


def ones_power(v, n):
    if n == 0:
        return np.ones(3) * v
    return ones_power(v, n - 1) * v


def calls_array_recursion(x):
    return np.sum(ones_power(x, 2) * x)


@pytest.mark.parametrize("f", [calls_recursion, calls_array_recursion],
                         ids=lambda f: f.__name__)
def test_a_recursive_helper(f):
    assert_close(s2sad.grad(f)(0.8), fd_grad(f, (0.8,), 0), rtol=1e-7)


def spread(v, flag):
    if flag > 0:
        return np.full(3, v)
    return v


def uses_spread(x, flag):
    return np.sum(spread(x, flag) * x)


def maybe_array(v, flag):
    if flag > 0:
        return np.array([v, 2.0 * v])
    return v


def uses_maybe_array(x, y, flag):
    return np.sum(maybe_array(x, flag) * y) * x


@pytest.mark.parametrize("flag", [1, 0])
def test_a_kind_that_depends_on_a_branch_is_not_a_number(flag):
    assert_close(s2sad.grad(uses_spread)(0.7, flag), fd_grad(uses_spread, (0.7, flag), 0))
    g = s2sad.grad(uses_maybe_array, wrt=(0, 1))(0.7, 1.3, flag)
    assert_close(g, fd_grad(uses_maybe_array, (0.7, 1.3, flag), (0, 1)), rtol=1e-7)
    # the sum of y's adjoint back to its shape stays: y meets an array or a number
    assert "_s2s_unbroadcast" in s2sad.source(uses_maybe_array, wrt=1, at=(0.7, 1.3, flag))


def rotate(v):
    return v * 1j


def rotates(x):
    return (rotate(x) * x).real


def phase(v):
    return 0.5 + 1j * v


def uses_a_complex_constant(x):
    return x * phase(0.5)


def test_a_helper_returning_a_complex_number():
    with pytest.raises(s2sad.ComplexValueError):
        s2sad.grad(rotates)(0.7)
    with pytest.raises(s2sad.ComplexValueError):    # checked when it runs
        s2sad.grad(uses_a_complex_constant)(0.7)


def _number_part(v):
    return v * v


def _array_part(v):
    return np.full(3, v)


part = _number_part


def calls_part(x):
    return np.sum(part(x) * x)


def test_a_helper_redefined_between_calls():
    global part
    df = s2sad.grad(calls_part)
    assert_close(df(0.7), 3 * 0.7 ** 2)
    try:
        part = _array_part
        assert_close(df(0.7), 6 * 0.7)
    finally:
        part = _number_part
    assert_close(df(0.7), 3 * 0.7 ** 2)


def _code_part(v):
    return v * v


def calls_code_part(x):
    return np.sum(_code_part(x) * x)


def test_a_helper_whose_code_is_replaced_between_calls():
    df = s2sad.grad(calls_code_part)
    assert_close(df(0.7), 3 * 0.7 ** 2)
    old = _code_part.__code__
    try:
        _code_part.__code__ = _array_part.__code__
        assert_close(df(0.7), 6 * 0.7)
    finally:
        _code_part.__code__ = old
    assert_close(df(0.7), 3 * 0.7 ** 2)


def pair_list(v):
    return [v, v * v]


def extends_a_returned_list(x):
    values = pair_list(x)
    values.append(x * 3.0)
    return values[0] * values[1] * values[2]


def test_a_helper_returning_a_list_the_caller_extends():
    assert_close(s2sad.grad(extends_a_returned_list)(0.7),
                 fd_grad(extends_a_returned_list, (0.7,), 0), rtol=1e-7)


factor = 2.0


def scaled_by_a_global(v):
    return v * factor


def calls_a_constant_helper(x):
    c = scaled_by_a_global(1.0)     # not differentiated: runs as it is
    return np.sum(c * x)


def test_a_helper_reading_a_global_that_becomes_an_array():
    global factor
    df = s2sad.grad(calls_a_constant_helper)
    assert_close(df(0.7), 2.0)
    try:
        factor = np.array([1.0, 2.0, 3.0])
        assert_close(df(0.7), 6.0)
    finally:
        factor = 2.0
    assert_close(df(0.7), 2.0)
