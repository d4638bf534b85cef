"""Statements beyond the core: `del`, `:=`, `global` reads, `with`, `try`, lambdas given
to `grad`, and derivatives called inside differentiated functions. Every derivative is
compared with central finite differences (tests/oracle.py) or an analytic formula, in
reverse mode (grad), forward mode (jvp) and second order (hessian)."""
import math
import sys
import warnings

import numpy as np
import pytest

import s2sad
from numpy_cases import fd_array_grad
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
    return t * x  # noqa: F821 - t was deleted: Python raises NameError


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


def walrus_in_a_slice(a):
    n = 1
    return np.sum(a[abs(n):(m := 3)] ** 2) * m


def test_walrus_in_an_index():
    a = np.array([1.0, 2.0, 3.0, 4.0])
    np.testing.assert_allclose(s2sad.grad(walrus_in_a_slice)(a), [0.0, 12.0, 18.0, 0.0])
    np.testing.assert_allclose(s2sad.jvp(walrus_in_a_slice, (a,), (np.ones(4),))[1], 30.0)
    np.testing.assert_allclose(s2sad.hessian(walrus_in_a_slice)(a), np.diag([0, 6, 6, 0.0]))


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


# -- with --------------------------------------------------------------------------------
def with_errstate(x):
    y = x * 2.0
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.log(y) * x
    return z + x * x


def with_catch_warnings(x):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        z = np.log(x)
    return np.sum(z * z)


def without_catch_warnings(x):
    z = np.log(x)
    return np.sum(z * z)


def with_errstate_raise(x):
    with np.errstate(divide="raise"):
        z = np.log(x)
    return np.sum(z)


def test_with_a_context_that_changes_no_value():
    check_all_orders(with_errstate, [0.7, 1.6])
    x = np.array([0.5, 2.0])
    expected = 2 * np.log(x) / x          # d/dx sum(log(x)^2)
    np.testing.assert_allclose(s2sad.grad(with_catch_warnings)(x), expected, rtol=1e-12)
    np.testing.assert_allclose(s2sad.jvp(with_catch_warnings, (x,), (np.ones(2),))[1],
                               np.sum(expected), rtol=1e-12)
    np.testing.assert_allclose(s2sad.hessian(with_catch_warnings)(x),
                               np.diag((2 - 2 * np.log(x)) / x ** 2), rtol=1e-12)


def test_derivative_code_runs_in_the_context_of_its_line():
    x = np.array([0.0, 2.0])        # log(0): the primal and the derivative warn
    before = list(warnings.filters)
    for derivative in (lambda f: s2sad.grad(f)(x), lambda f: s2sad.vjp(f, x)[1](1.0),
                       lambda f: s2sad.jvp(f, (x,), (np.ones(2),)),
                       lambda f: s2sad.hessian(f)(x)):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            derivative(with_catch_warnings)         # no warning escapes
            with pytest.raises(RuntimeWarning):     # (the same code without the block)
                derivative(without_catch_warnings)
    assert warnings.filters == before       # the block's filter did not leak
    gradient = s2sad.grad(with_catch_warnings)
    gradient(np.array([1.0, 2.0]))
    assert gradient.source.endswith(
        "    with warnings.catch_warnings():\n"
        "        warnings.simplefilter('ignore')\n"
        "        # grad of: z = np.log(x)\n"
        "        x_bar = np.divide(z_bar, x, out=z_bar)\n"
        "    del z_bar\n"
        "    return x_bar\n")
    # np.errstate(divide="raise"): the primal raises at 0, so does its derivative
    with pytest.raises(FloatingPointError):
        with_errstate_raise(x)
    for derivative in (s2sad.grad(with_errstate_raise), s2sad.hessian(with_errstate_raise)):
        with pytest.raises(FloatingPointError):
            derivative(x)
    np.testing.assert_allclose(s2sad.grad(with_errstate_raise)(np.array([0.5, 2.0])),
                               [2.0, 0.5])


def with_suppress(x):
    import contextlib    # noqa: F401 (refused before it runs)
    return x


def with_open(x):
    with open(__file__):
        y = x * 2.0
    return y


def with_as(x):
    with np.errstate(divide="ignore") as state:
        y = x * 2.0
    return y + float(state is None)


def with_local_argument(x, mode):
    with np.errstate(divide=mode):
        y = np.log(x)
    return y


def with_contextlib_suppress(x):
    import contextlib
    with contextlib.suppress(ValueError):
        x = math.log(x)
    return x


def test_with_refusals():
    err = refused(with_open, 1.0, match="change only how warnings")
    assert err.lineno == line_of(with_open, "with open")
    assert "call the function inside it" in str(err)
    refused(with_as, 1.0, match="'with ... as name' is not supported")
    refused(with_local_argument, 1.0, "ignore", match="must not read the function's variables")
    # an import inside the function is refused first; the manager itself too:
    with pytest.raises(s2sad.UnsupportedSyntaxError):
        s2sad.grad(with_contextlib_suppress)(1.0)


SUPPRESS = __import__("contextlib").suppress


def with_suppress_global(x):
    with SUPPRESS(ValueError):
        x = math.log(x)
    return x


def test_a_context_that_skips_code_is_refused():
    err = refused(with_suppress_global, 2.0, match="could change values or skip code")
    assert err.lineno == line_of(with_suppress_global, "with SUPPRESS")


# -- try ---------------------------------------------------------------------------------
def try_log(x):
    try:
        y = math.log(x)
    except ValueError:
        y = 0.0
    else:
        y = y * 2.0
    finally:
        z = x * x
    return y * x + z


def try_unused(x):
    try:
        y = math.log(x)
    except (ValueError, ZeroDivisionError):
        y = 1.0
    return x * 3.0 + y * 0.0


def try_bare(x):
    s = x * x
    try:
        s = s / math.sqrt(x)
    except:     # noqa: E722
        s = 0.0
    return s


def try_in_loop(x):
    s = 0.0
    for i in range(1, 4):
        try:
            s = s + math.log(x * i)
        except ValueError:
            s = s - 1.0
    return s


def test_try_differentiates_the_path_without_exceptions():
    for f in (try_log, try_unused, try_bare, try_in_loop):
        check_all_orders(f, [0.7, 1.6])
    assert_close(s2sad.grad(try_log)(0.7), 2 * math.log(0.7) + 2.0 + 2 * 0.7)


def test_the_exception_path_is_a_located_error_at_run_time():
    for f in (try_log, try_unused, try_bare, try_in_loop):
        where = f"{__file__}:{line_of(f, 'try:')}"
        for derivative in (lambda: s2sad.grad(f)(-1.0), lambda: s2sad.vjp(f, -1.0),
                           lambda: s2sad.jvp(f, (-1.0,), (1.0,)),
                           lambda: s2sad.hessian(f)(-1.0),
                           lambda: s2sad.value_and_grad(f)(-1.0)):
            with pytest.raises(s2sad.ExceptionPathError) as info:
                derivative()
            assert str(info.value).startswith(where + ": the code from this try block")
            assert "if/else" in str(info.value)


def try_reciprocal(x):
    try:
        y = 1.0 / x
    except ZeroDivisionError:
        y = 0.0
    return y


def test_an_exception_of_the_derivative_code_is_reported_too():
    # the function takes the normal path; the derivative, -1 / (x * x), divides by
    # x * x, which is 0.0 (it underflows), and raises ZeroDivisionError
    assert try_reciprocal(1e-200) == 1e200
    with pytest.raises(s2sad.ExceptionPathError, match="undefined"):
        s2sad.grad(try_reciprocal)(1e-200)


def try_return_finally(x):
    try:
        return math.log(x)
    finally:
        x = 0.0


def try_local_type(x, kind):
    try:
        y = math.log(x)
    except kind:
        y = 0.0
    return y


def test_try_refusals():
    err = refused(try_return_finally, 1.0, match="inside a try with a finally clause")
    assert err.lineno == line_of(try_return_finally, "try:")
    refused(try_local_type, 1.0, ValueError, match="exception classes defined outside")


# -- lambdas given to grad ---------------------------------------------------------------
cubic = lambda x: x * x * x + math.sin(x)     # noqa: E731
pair = (lambda x: x * 2.0), (lambda x: math.exp(x) * x)     # noqa: E731


def test_lambda_given_to_grad():
    check_all_orders(cubic, [0.7, 1.6])
    assert_close(s2sad.grad(cubic)(0.7), 3 * 0.7 ** 2 + math.cos(0.7))
    assert s2sad.source(cubic).startswith("def cubic_vjp(x):")
    k = 3.0
    g = s2sad.grad(lambda x, y: k * x * y + y * y, wrt=(0, 1))     # reads a closure cell
    assert_close(g(0.5, 2.0), (k * 2.0, k * 0.5 + 4.0))
    assert_close(s2sad.jvp(lambda x: (y := x * x) * y, (1.5,), (1.0,))[1], 4 * 1.5 ** 3)
    assert_close(s2sad.hessian(lambda x: x ** 4)(1.5), 12 * 1.5 ** 2)
    spread = lambda x: (      # noqa: E731
        x * x
        + math.cos(x))
    check_all_orders(spread, [0.7])


@pytest.mark.skipif(sys.version_info < (3, 11), reason="Python 3.10 has no co_positions "
                    "to tell two lambdas of one line apart (it says so: tested below)")
def test_two_lambdas_on_one_line():
    check_all_orders(pair[1], [0.7])           # two lambdas on its line: its code's span
    assert_close(s2sad.grad(pair[0])(0.7), 2.0)
    assert_close(s2sad.grad(lambda x: x * 2.0)(1.0) + s2sad.grad(lambda x: x * x)(3.0),
                 2.0 + 6.0)          # two lambdas on one line, told apart by their spans


@pytest.mark.skipif(sys.version_info >= (3, 11), reason="Python 3.11 and later tell them "
                    "apart (tested above)")
def test_two_lambdas_on_one_line_without_positions_say_why():
    with pytest.raises(s2sad.SourceUnavailableError, match="2 lambdas with parameters x"):
        s2sad.grad(pair[0])(0.7)


def test_lambda_without_source_says_why():
    made = eval("lambda x: x * x")
    with pytest.raises(s2sad.SourceUnavailableError, match="cannot read the source of the "
                       "lambda at <string>:1. Define the function with def"):
        s2sad.grad(made)(1.0)


bad_lambda = lambda x: x + {x}.pop()     # noqa: E731


def test_an_error_in_a_lambda_points_into_it():
    err = refused(bad_lambda, 1.0, match="set displays")
    assert (err.lineno, err.offset) == (line_of(test_an_error_in_a_lambda_points_into_it,
                                                "test_an_error") - 3, 28)


# -- derivatives called inside differentiated functions ----------------------------------
def wave(x):
    return math.sin(x) * x


dwave = s2sad.grad(wave)


def calls_stored_gradient(x):
    return dwave(x) * x


def calls_gradient_in_place(x):
    return s2sad.grad(wave)(x) * x


def test_a_gradient_called_inside():
    # g = x f'(x), f = x sin x: g' = x f'' + f', g'' = x f''' + 2 f''
    d1 = lambda x: math.sin(x) + x * math.cos(x)                # noqa: E731
    d2 = lambda x: 2 * math.cos(x) - x * math.sin(x)            # noqa: E731
    d3 = lambda x: -3 * math.sin(x) - x * math.cos(x)           # noqa: E731
    for g in (calls_stored_gradient, calls_gradient_in_place):
        for x in (0.7, 1.6):
            assert_close(g(x), x * d1(x), rtol=1e-12)
            assert_close(s2sad.grad(g)(x), x * d2(x) + d1(x), rtol=1e-10)
            assert_close(s2sad.jvp(g, (x,), (1.0,))[1], x * d2(x) + d1(x), rtol=1e-10)
            assert_close(s2sad.vjp(g, x)[1](1.0), (x * d2(x) + d1(x),), rtol=1e-10)
            assert_close(s2sad.hessian(g)(x), x * d3(x) + 2 * d2(x), rtol=1e-10)
        check_all_orders(g, [0.7])


def two_args(x, y):
    return x * x * y + math.exp(y)


def calls_partial_gradient(x, y):
    return s2sad.grad(two_args, wrt=1)(x, y) * y


def tanh_energy(w):
    return np.sum(np.tanh(w) ** 2)


def calls_array_gradient(w):
    return np.sum(s2sad.grad(tanh_energy)(w) * w)


def test_a_gradient_with_wrt_and_of_arrays():
    x, y = 1.5, 0.4
    # d/dy f = x^2 + e^y; g = y (x^2 + e^y)
    assert_close(s2sad.grad(calls_partial_gradient, wrt=(0, 1))(x, y),
                 (2 * x * y, x * x + math.exp(y) + y * math.exp(y)), rtol=1e-10)
    assert_close(s2sad.grad(calls_partial_gradient, wrt=(0, 1))(x, y),
                 fd_grad(calls_partial_gradient, (x, y), (0, 1)), rtol=1e-6)
    w = np.array([0.3, -0.5])
    th = np.tanh(w)
    # g = sum(w * 2 t (1 - t^2)): dg/dw = 2 t (1 - t^2) + w * 2 (1 - t^2)(1 - 3 t^2)
    expected = 2 * th * (1 - th ** 2) + w * 2 * (1 - th ** 2) * (1 - 3 * th ** 2)
    np.testing.assert_allclose(s2sad.grad(calls_array_gradient)(w), expected, rtol=1e-10)
    np.testing.assert_allclose(
        s2sad.jvp(calls_array_gradient, (w,), (np.array([1.0, 0.0]),))[1], expected[0],
        rtol=1e-10)
    step = 1e-3
    fd_hessian = np.array([(s2sad.grad(calls_array_gradient)(w + step * e)
                            - s2sad.grad(calls_array_gradient)(w - step * e)) / (2 * step)
                           for e in np.eye(2)])
    np.testing.assert_allclose(s2sad.hessian(calls_array_gradient)(w), fd_hessian,
                               rtol=1e-5, atol=1e-8)


def looped(x):
    s = 0.0
    for i in range(3):
        s = s + math.sin(x * i)
    return s


def calls_looped_gradient(x):
    return s2sad.grad(looped)(x) * x


def babysqrt(x):
    t = x / 2.0
    while abs(t * t - x) > 1e-12:
        t = (t + x / t) / 2.0
    return t


def calls_gradient_of_a_while_loop(x):
    return s2sad.grad(babysqrt)(x) * x


def sines(w):
    s = 0.0
    for i in range(len(w)):
        s = s + np.sin(w[i]) * w[i]
    return s


def calls_gradient_of_an_element_loop(w):
    return np.sum(s2sad.grad(sines)(w) * w)


def test_a_gradient_with_loops_called_inside():
    # reverse mode over the gradient code, loops (its tape) included; and forward mode
    for f, x in ((calls_looped_gradient, 0.7), (calls_gradient_of_a_while_loop, 2.0)):
        expected = fd_grad(f, (x,), 0)
        assert_close(s2sad.grad(f)(x), expected, rtol=1e-6)
        assert_close(s2sad.vjp(f, x)[1](1.0), (expected,), rtol=1e-6)
        assert_close(s2sad.jvp(f, (x,), (1.0,))[1], expected, rtol=1e-6)
    w = np.array([0.3, 0.9, -0.4])
    np.testing.assert_allclose(s2sad.grad(calls_gradient_of_an_element_loop)(w),
                               fd_array_grad(calls_gradient_of_an_element_loop, (w,), 0),
                               rtol=1e-6)


def calls_grad_of_a_parameter(f, x):
    return s2sad.grad(f)(x) * x


def test_grad_of_a_local_function_inside_is_refused():
    err = refused(calls_grad_of_a_parameter, wave, 1.0, match="must take a function defined "
                  "outside it")
    assert "df = s2sad.grad(f)" in str(err)


def test_try_generated_code():
    gradient = s2sad.grad(try_log)
    gradient(0.7)
    where = f"{__file__}:{line_of(try_log, 'try:')}"
    first = line_of(try_log, "def try_log")
    assert gradient.source == (
        "def try_log_grad(x):\n"
        "    if x.__class__ is not float:\n"
        "        return _s2s_respecialize(x)\n"
        "    if math.log is not _s2s_log:\n"
        "        return _s2s_respecialize(x)\n"
        f"    # reverse mode of try_log() (test_statements.py:{first}) with respect to x\n"
        "    # the pullback reads: x, y_1\n"
        "    # rules: math.log, *, +\n"
        "    try:\n"
        "        y = math.log(x)\n"
        "    except ValueError as exc:\n"
        f"        raise _s2s_exception_path(exc, {where!r})\n"
        "    y_1 = y * 2.0\n"
        "    # grad of: y = y * 2.0\n"
        "    y_bar = x * 2.0\n"
        "    try:\n"
        "        # grad of: y = math.log(x)\n"
        "        x_bar = y_1 + 2.0 * x + y_bar / x\n"
        "    except ValueError as exc:\n"
        f"        raise _s2s_exception_path(exc, {where!r})\n"
        "    return x_bar\n")
