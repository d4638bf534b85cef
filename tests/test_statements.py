"""Statements beyond the core: `del`, `:=`, `global` reads, `with`, `try`, lambdas given
to `grad`, and derivatives called inside differentiated functions. Every derivative is
compared with central finite differences (tests/oracle.py) or an analytic formula, in
reverse mode (grad), forward mode (jvp) and second order (hessian)."""
import math
import warnings

import numpy as np
import pytest

import s2sad
from oracle import assert_close, fd_grad

SCALE = 3.0


def second_difference(f, x, h=1e-3):
    """d2f/dx2 at float x: the five-point central difference, error O(h**4)."""
    return (-f(x + 2 * h) + 16 * f(x + h) - 30 * f(x) + 16 * f(x - h) - f(x - 2 * h)) / (
        12 * h * h)


def check_all_orders(f, points, second=True):
    """grad, jvp and (with `second`) hessian of scalar `f` at each point, against finite
    differences of `f` itself."""
    for x in points:
        expected = fd_grad(f, (x,), 0)
        assert_close(s2sad.grad(f)(x), expected, rtol=1e-6)
        value, tangent = s2sad.jvp(f, (x,), (1.0,))
        assert_close(value, f(x), rtol=1e-12)
        assert_close(tangent, expected, rtol=1e-6)
        if second:
            assert_close(s2sad.hessian(f)(x), second_difference(f, x), rtol=1e-5, atol=1e-6)


def line_of(fn, text):
    """The absolute line in this file of the first line of `fn` that contains `text`."""
    import inspect
    lines, first = inspect.getsourcelines(fn)
    return first + next(k for k, line in enumerate(lines) if text in line)


def refused(fn, *args, match):
    """The UnsupportedSyntaxError `grad(fn)` raises; it names this file."""
    with pytest.raises(s2sad.UnsupportedSyntaxError, match=match) as info:
        s2sad.grad(fn)(*args)
    assert info.value.filename == __file__
    return info.value


# -- del ---------------------------------------------------------------------------------
def del_temporary(x):
    t = x * x
    u = math.sin(t) + x
    del t
    return u * x


def del_then_rebind(x):
    t = x * 2.0
    s = t * t
    del t
    t = s + x
    return t * x


def del_in_branch(x):
    t = x * 3.0
    if x > 1.0:
        u = t * t
        del t
        t = u
    return t * x


def test_del_of_a_name_is_dropped():
    for f in (del_temporary, del_then_rebind, del_in_branch):
        check_all_orders(f, [0.7, 1.6])


def reads_deleted(x):
    t = x * x
    del t
    return t * x


def reads_deleted_in_loop(x):
    t = x
    s = 0.0
    for i in range(3):
        s = s + t * i
        del t
    return s


def del_element(x):
    lst = [x, 2.0 * x, x * x]
    del lst[1]
    return lst[0] * lst[1]


def del_array_element(a):
    b = a * 2.0
    del b[0]
    return np.sum(b)


def test_read_after_del_is_refused():
    err = refused(reads_deleted, 1.0, match="read here after 'del t'")
    assert err.lineno == line_of(reads_deleted, "return t * x")
    assert f"line {line_of(reads_deleted, 'del t')}" in str(err)
    err = refused(reads_deleted_in_loop, 1.0, match="after 'del t'")
    assert err.lineno == line_of(reads_deleted_in_loop, "s = s + t * i")


def test_del_of_an_element_is_refused_with_a_rewrite_that_works():
    err = refused(del_element, 1.5, match="build a new one without the element")
    assert err.lineno == line_of(del_element, "del lst[1]")
    assert "lst = [lst[j] for j in range(len(lst)) if j != i]" in str(err)
    assert "np.concatenate([a[:i], a[i + 1:]])" in str(err)
    refused(del_array_element, np.ones(3), match="build a new one")

    def advised(x):      # the advice for a list, followed
        lst = [x, 2.0 * x, x * x]
        i = 1
        lst = [lst[j] for j in range(len(lst)) if j != i]
        return lst[0] * lst[1]
    check_all_orders(advised, [1.5])
    assert_close(s2sad.grad(advised)(1.5), 3 * 1.5 ** 2)

    def advised_array(a):
        i = 0
        b = a * 2.0
        b = np.concatenate([b[:i], b[i + 1:]])
        return np.sum(b * b)
    a = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(s2sad.grad(advised_array)(a), [0.0, 16.0, 24.0])


# -- := ----------------------------------------------------------------------------------
def walrus_if(x):
    if (y := x * x) > 1.0:
        return y * x
    return y + x


def walrus_and(x):
    z = 0.0
    if x > 0.0 and (y := math.sin(x)) > 0.5:
        z = y * y
    return z + x


def walrus_or(x):
    y = 2.0
    if x > 1.0 or (y := math.cos(x)) > 0.5:
        return y * x
    return x


def walrus_while(x):
    n = 0
    while (y := x * n) < 3.0:
        n += 1
        if n == 2:
            continue
        x = x * 1.1
    return y * x


def walrus_comprehension(x):
    vals = [y for i in range(4) if (y := x * i) > 1.0]
    return sum(vals) * y


def walrus_return(x):
    return (y := x * 2.0) * y + (z := math.sin(y)) * z


def walrus_assignment(x):
    a = (b := x + 1.0) * math.exp(b)
    return a + b


def walrus_order(x):
    y = x
    return y * (y := x * x)


def walrus_if_expression(x):
    w = (a := x * 3.0) if x > 1.0 else (a := x * 5.0)
    return w * a


def walrus_call_order(x):
    return math.sin(x) * (x := x * 2.0) + x


def test_walrus():
    cases = [walrus_if, walrus_and, walrus_or, walrus_while, walrus_comprehension,
             walrus_return, walrus_assignment, walrus_order, walrus_if_expression,
             walrus_call_order]
    for f in cases:
        check_all_orders(f, [0.7, 1.6])


def test_walrus_in_the_right_operand_binds_only_when_evaluated():
    # x <= 0: `y := sin(x)` is not evaluated, y keeps 2.0 (Python's semantics)
    assert walrus_or(1.5) == 2.0 * 1.5
    assert_close(s2sad.grad(walrus_or)(1.5), 2.0)
    assert_close(s2sad.grad(walrus_or)(0.5), math.cos(0.5) - 0.5 * math.sin(0.5))


def test_walrus_reads_before_binding_keep_the_old_value():
    assert_close(s2sad.grad(walrus_order)(1.5), 3 * 1.5 ** 2)
    # sin(x) reads x before `x := 2x` rebinds it: 2x sin(x) + 2x
    assert_close(s2sad.grad(walrus_call_order)(0.7),
                 2 * math.sin(0.7) + 2 * 0.7 * math.cos(0.7) + 2)


def walrus_chain(x):
    return 1.0 if 0.0 < x < (y := x * 2.0) else y


def walrus_target(x):
    lst = [x, x]
    lst[(i := 1)] = x * 2.0
    return lst[i]


def test_walrus_refused_where_it_cannot_be_ordered():
    err = refused(walrus_chain, 1.0, match="chained comparison")
    assert err.lineno == line_of(walrus_chain, "(y := x * 2.0)")
    refused(walrus_target, 1.0, match="on a line of its own")


def test_walrus_generated_code_reads_like_the_function():
    from s2sad import pipeline
    assert pipeline.stage_source(walrus_and, "desugar") == (
        "def walrus_and(x):\n"
        "    z = 0.0\n"
        "    t = x > 0.0\n"
        "    if t:\n"
        "        y = math.sin(x)\n"
        "        t = y > 0.5\n"
        "    if t:\n"
        "        z = y * y\n"
        "    return z + x\n")


# -- global ------------------------------------------------------------------------------
def reads_global(x):
    global SCALE
    return SCALE * x * x


def assigns_global(x):
    global SCALE
    SCALE = x
    return SCALE * x


def test_global_read():
    check_all_orders(reads_global, [0.7, 1.6])
    assert_close(s2sad.grad(reads_global)(0.7), 2 * SCALE * 0.7)


def test_global_assignment_is_refused():
    err = refused(assigns_global, 1.0, match="declared global and assigned here")
    assert err.lineno == line_of(assigns_global, "SCALE = x")
    assert "return the new value" in str(err)
