"""Calls that write into an array they are given (`out=`, `np.copyto`, `np.fill_diagonal`,
`y.fill(v)`), and `setattr(obj, "name", v)`, differentiated as the element assignments they stand for
(before_ad/write_calls.py): grad, value_and_grad's value, vjp, jvp and hessian against
central differences of the function as it is (float64); what stays refused is refused at
the user's line."""
import logging
import operator

import numpy as np
import pytest

import s2sad
from numpy_cases import fd_array_grad, fd_hessian

X = np.array([0.7, -1.3, 1.9])


def ufunc_out(x):
    y = np.zeros(3)
    np.multiply(x, np.sin(x), out=y)
    return np.sum(y * x)


def bound_result(x):
    y = np.ones(3)
    z = np.add(x, 2.0 * x, out=y)      # z is y
    return np.sum(z * y) + y[0]


def out_slice(x):
    y = np.zeros(4)
    np.exp(x[:2], out=y[1:3])
    return np.sum(y ** 2) + y[2] * x[2]


def reduction_out(x):
    m = np.outer(x, x)
    y = np.zeros(3)
    np.sum(m, axis=0, out=y)
    return np.sum(np.tanh(y))


def out_into_own_input(x):
    y = x * 1.5
    np.subtract(y, np.cos(y), out=y)
    return np.sum(y * y)


def copyto(x):
    y = np.zeros(3)
    np.copyto(y, x ** 2)
    return np.sum(y * x)


def copyto_where(x):
    y = x * 3.0
    np.copyto(y, np.sin(x), where=x > 0.0)
    return np.sum(y ** 2)


def copyto_where_positional(x):
    y = -x
    np.copyto(y, x * x, "same_kind", x < 1.0)
    return np.sum(y * np.exp(x))


def fill_diagonal(x):
    m = np.outer(x, x)
    np.fill_diagonal(m, x[0] * 2.0)
    return np.sum(m * m)


def fill_diagonal_wide(x):
    m = np.outer(x[:2], x) + 1.0      # 2 x 3: fills (0, 0) and (1, 1)
    np.fill_diagonal(m, np.sin(x[:2]))
    return np.sum(m ** 3)


def fill(x):
    y = np.zeros(3)
    y.fill(x[1] ** 2)
    return np.sum(y * x)


def fill_in_loop(x):
    y = np.empty(3)
    total = 0.0
    for i in range(3):
        y.fill(x[i])
        total = total + np.sum(y * x) * (i + 1)
    return total


def out_through_view(x):
    y = np.zeros(4)
    v = y[1:]
    np.multiply(x, x, out=v)     # writes into y too
    return np.sum(y * np.arange(4.0))


class Box:
    def put(self, v):
        setattr(self, "w", v * 2.0)

    def put_named(self, name, v):
        setattr(self, name, v * 2.0)


def set_attribute(x):
    # (its gradient was zero: setattr was not followed)
    box = Box()
    box.w = 0.0
    setattr(box, "w", x * np.sin(x))
    return np.sum(box.w ** 2)


def set_attribute_in_a_method(x):
    box = Box()
    box.put(x ** 2)
    return np.sum(box.w * x)


CASES = [ufunc_out, bound_result, out_slice, reduction_out, out_into_own_input, copyto,
         copyto_where, copyto_where_positional, fill_diagonal, fill_diagonal_wide, fill,
         fill_in_loop, set_attribute, set_attribute_in_a_method]


def assert_close(actual, expected, rtol=1e-6, atol=1e-8):
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol)


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_grad_and_value(f):
    value, g = s2sad.value_and_grad(f)(X.copy())
    assert_close(value, f(X.copy()))
    assert_close(g, fd_array_grad(f, (X.copy(),), 0))
    assert_close(s2sad.grad(f)(X.copy()), fd_array_grad(f, (X.copy(),), 0))


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_vjp_and_jvp(f):
    expected = fd_array_grad(f, (X.copy(),), 0)
    value, pullback = s2sad.vjp(f, X.copy())
    assert_close(value, f(X.copy()))
    (g,) = pullback(2.0)
    assert_close(g, 2.0 * expected)
    t = np.array([0.3, -0.5, 1.1])
    value, tangent = s2sad.jvp(f, (X.copy(),), (t,))
    assert_close(value, f(X.copy()))
    assert_close(tangent, expected @ t)


@pytest.mark.parametrize("f", [ufunc_out, out_slice, copyto_where, fill_diagonal, fill,
                               set_attribute],
                         ids=lambda f: f.__name__)
def test_hessian(f):
    assert_close(s2sad.hessian(f)(X.copy()), fd_hessian(f, X.copy()), rtol=1e-4, atol=1e-5)


def test_the_argument_is_not_changed():
    x = X.copy()
    s2sad.grad(out_into_own_input)(x)
    s2sad.jvp(fill, (x,), (x,))
    assert np.array_equal(x, X)


class Canvas:
    """An object of the user's with a `fill` method of its own: not an array's."""

    def __init__(self):
        self.level = 0.0

    def fill(self, v):
        self.level = v * 3.0


def own_fill(x):
    c = Canvas()
    c.fill(x[0] * x[1])
    return c.level + x[2]


def test_an_objects_own_fill_is_its_method():
    assert_close(s2sad.grad(own_fill)(X.copy()), fd_array_grad(own_fill, (X.copy(),), 0))


def divide_where(x):
    y = np.zeros(3)
    np.divide(1.0, x, out=y, where=x > 0.0)
    return np.sum(y)


def out_into_argument(x, y):
    np.multiply(x, x, out=y)
    return np.sum(y)


def test_a_write_into_an_argument_leaves_the_callers_array_alone():
    # the derivative writes into its own copy: right, and the caller's arrays unchanged
    x, y = X.copy(), np.array([5.0, 6.0, 7.0])
    for wrt in (0, 1):
        assert_close(s2sad.grad(out_into_argument, wrt=wrt)(x, y),
                     fd_array_grad(out_into_argument, (X.copy(), y.copy()), wrt))
    value, tangent = s2sad.jvp(out_into_argument, (x, y), (X, X))
    assert_close(tangent, 2.0 * X @ X)
    assert np.array_equal(x, X) and np.array_equal(y, [5.0, 6.0, 7.0])


def test_what_stays_refused_is_located():
    # a ufunc's where= with out= is not rewritten (np.where would differentiate the
    # unselected quotient): refused at the user's line, as before
    with pytest.raises(s2sad.S2SADError) as err:
        s2sad.grad(divide_where)(X.copy())
    assert "test_write_calls.py" in str(err.value) and "out=y" in str(err.value)
    # a write through a view, the base read after it: refused as `v[...] = ...` is
    with pytest.raises(s2sad.S2SADError) as err:
        s2sad.grad(out_through_view)(X.copy())
    assert "test_write_calls.py" in str(err.value) and "y is read after" in str(err.value)


def set_attribute_by_a_name(x):
    box, name = Box(), "w"
    setattr(box, name, x * 2.0)
    return np.sum(box.w ** 2)


def set_attribute_through_object(x):
    box = Box()
    object.__setattr__(box, "w", x * 2.0)
    return np.sum(box.w ** 2)


def set_item_by_operator(x):
    y = np.zeros(3)
    operator.setitem(y, 0, x[1] ** 2)
    return np.sum(y) + x[0]


def add_in_place_by_operator(x):
    y = x * 1.0
    operator.iadd(y, x)
    return np.sum(y ** 2)


def update_vars(x):
    box = Box()
    vars(box).update(w=x * 2.0)
    return np.sum(box.w ** 2)


def set_attribute_by_a_name_in_a_method(x):
    # (the method's change of its object was lost: its summary did not see setattr)
    box = Box()
    box.put_named("w", x * x)
    return np.sum(box.w * x)


def delete_attribute(x):
    box = Box()
    box.put(x)
    delattr(box, "w")
    return np.sum(x) + 1.0


@pytest.mark.parametrize("f", [set_attribute_by_a_name, set_attribute_through_object,
                               set_item_by_operator, add_in_place_by_operator, update_vars,
                               delete_attribute, set_attribute_by_a_name_in_a_method],
                         ids=lambda f: f.__name__)
def test_library_calls_that_change_what_they_are_given_are_refused(f):
    # each gave a zero or partial gradient without a word: a library function without a
    # rule, its result unused, given a differentiated value and something it may change
    for mode in (s2sad.grad, lambda f: lambda x: s2sad.jvp(f, (x,), (x,))):
        with pytest.raises(s2sad.S2SADError) as err:
            mode(f)(X.copy())
        assert "test_write_calls.py:" in str(err.value)


def logged(x):
    y = np.sum(x ** 2)
    logging.debug("y = %s", y)      # numbers only: nothing it could change
    return y


def test_a_library_call_given_only_numbers_is_differentiated():
    assert_close(s2sad.grad(logged)(X.copy()), fd_array_grad(logged, (X.copy(),), 0))


@pytest.mark.parametrize("f", [ufunc_out, copyto, fill], ids=lambda f: f.__name__)
def test_numba_backend(f):
    pytest.importorskip("numba")
    assert_close(s2sad.grad(f, backend="numba")(X.copy()), fd_array_grad(f, (X.copy(),), 0))


def out_by_position(x):
    y = np.zeros(3)
    np.multiply(x, x, y)          # a ufunc's output by position
    s = np.zeros(3)
    np.sum(np.outer(x, y), 0, None, s)  # np.sum(a, axis, dtype, out)
    c = np.zeros(3)
    z = np.clip(s, -1.0, 2.0, c)  # z is c
    return np.sum(y * x) + np.sum(z * x)


def two_outputs(x):
    a = np.zeros(3)
    b = np.zeros(3)
    np.modf(x * 2.5, a, b)        # a ufunc with two outputs: not rewritten
    return np.sum(a * b)


def test_out_by_position():
    f = out_by_position
    expected = fd_array_grad(f, (X.copy(),), 0)
    assert_close(s2sad.grad(f)(X.copy()), expected)
    value, tangent = s2sad.jvp(f, (X.copy(),), (np.ones(3),))
    assert_close(value, f(X.copy()))
    assert_close(tangent, expected.sum())


def test_outputs_by_position_it_cannot_rewrite_are_refused():
    with pytest.raises(s2sad.S2SADError) as err:
        s2sad.grad(two_outputs)(X.copy())
    assert "test_write_calls.py" in str(err.value) and "np.modf" in str(err.value)


def method_out(x):
    y = np.zeros(3)
    x.clip(0.0, 1.0, y)            # the method's out by position
    m = np.outer(x, x)
    s = np.zeros(3)
    m.sum(0, None, s)
    c = np.zeros(3)
    x.cumsum(out=c)
    return np.sum(y * x) + np.sum(s * np.sin(x)) + np.sum(c ** 2)


def test_array_methods_out():
    expected = fd_array_grad(method_out, (X.copy(),), 0)
    assert_close(s2sad.grad(method_out)(X.copy()), expected)
    value, tangent = s2sad.jvp(method_out, (X.copy(),), (np.ones(3),))
    assert_close(value, method_out(X.copy()))
    assert_close(tangent, expected.sum())


def method_out_unknown(x):
    m = [x][0]                     # an array s2sad does not know to be one here
    y = np.zeros(3)
    m.clip(0.0, 1.0, y)
    return np.sum(y * x)


def test_a_method_out_it_cannot_rewrite_is_refused():
    with pytest.raises(s2sad.S2SADError) as err:
        s2sad.grad(method_out_unknown)(X.copy())
    assert "test_write_calls.py" in str(err.value) and "m.clip" in str(err.value)


def test_a_patched_copyto_recompiles(monkeypatch):
    # the derivative stands for what np.copyto does; patched, f changes, and so must it
    x = X.copy()
    s2sad.grad(copyto)(x)
    real = np.copyto

    def doubled(dst, src):
        real(dst, 2.0 * np.asarray(src))

    monkeypatch.setattr(np, "copyto", doubled)
    assert_close(s2sad.grad(copyto)(x), fd_array_grad(copyto, (X.copy(),), 0))


def fill_by_copyto(dst, v):
    np.copyto(dst, v)


def fill_by_out(dst, v):
    np.multiply(v, 1.0, out=dst)


def fill_by_position(dst, v):
    np.multiply(v, 1.0, dst)


def put_first(dst, v):
    np.put(dst, [0], v[0])


def helper_fills(fill_with):
    def f(x):
        y = np.zeros(3)
        fill_with(y, x ** 2)
        return np.sum(y * x)
    return f


@pytest.mark.parametrize("helper", [fill_by_copyto, fill_by_out, fill_by_position],
                         ids=lambda h: h.__name__)
def test_a_helper_writing_into_its_argument_by_a_numpy_call(helper):
    # (it was silently lost before: the helper's source showed no write, so the caller
    # took y as zeros; now the write is an element assignment the caller rebinds)
    f = helper_fills(helper)
    assert_close(s2sad.grad(f)(X.copy()), fd_array_grad(f, (X.copy(),), 0))
    value, tangent = s2sad.jvp(f, (X.copy(),), (np.ones(3),))
    assert_close(tangent, fd_array_grad(f, (X.copy(),), 0).sum())


def test_a_helper_writing_by_a_call_it_cannot_rewrite_is_refused():
    f = helper_fills(put_first)
    with pytest.raises(s2sad.S2SADError) as err:
        s2sad.grad(f)(X.copy())
    assert "test_write_calls.py" in str(err.value)


# -- compiled code s2sad cannot read, called for what it does -----------------------------
def _spline():
    interpolate = pytest.importorskip("scipy.interpolate")
    return interpolate.CubicSpline(np.linspace(0.0, 1.0, 5), np.linspace(0.0, 1.0, 5) ** 2)


def test_a_spline_of_scipy_is_refused_at_the_users_line_not_differentiated_to_zero():
    # (SciPy's PPoly.__call__ fills `out` with compiled code (`_ppoly.evaluate(..., out)`):
    # s2sad read the Python around it and gave a gradient of zeros)
    spline = _spline()

    def through_spline(x):
        return np.sum(spline(x))
    # (SciPy 1.18's PPoly.__call__ calls self._xp.asarray first: refused there, as code
    # s2sad cannot differentiate)
    with pytest.raises(s2sad.MissingRuleError,
                       match="may write into out|is not code it can differentiate") as info:
        s2sad.grad(through_spline)(np.array([0.2, 0.5]))
    assert str(info.value).startswith(f"{__file__}:")


def test_compiled_code_given_an_array_to_fill_is_refused_here_and_in_a_helper():
    _ppoly = pytest.importorskip("scipy.interpolate._ppoly")
    spline = _spline()
    c = spline.c.reshape(spline.c.shape[0], spline.c.shape[1], -1)

    def fill(x, out):
        _ppoly.evaluate(c, spline.x, x, 0, True, out)

    def inline(x):
        out = np.empty((len(x), 1))
        _ppoly.evaluate(c, spline.x, x, 0, True, out)
        return np.sum(out)

    def through_helper(x):
        out = np.empty((len(x), 1))
        fill(x, out)
        return np.sum(out)
    with pytest.raises(s2sad.MissingRuleError, match="what it changes in the arrays") as info:
        s2sad.grad(inline)(np.array([0.2, 0.5]))
    assert str(info.value).startswith(f"{__file__}:") and "_ppoly.evaluate(c" in str(info.value)
    with pytest.raises(s2sad.UnsupportedSyntaxError, match="may write into out") as info:
        s2sad.grad(through_helper)(np.array([0.2, 0.5]))
    assert info.value.filename == __file__ and "fill(x, out)" in info.value.text


def test_calls_that_read_differentiated_arrays_are_not_refused():
    # print, and logging given the arrays themselves (which a library reads)
    import logging

    def logs(x):
        y = np.sin(x)
        print(y.shape)
        logging.getLogger(__name__).debug("%s %s", x, y)
        return np.sum(y)
    np.testing.assert_allclose(s2sad.grad(logs)(X), np.cos(X), rtol=1e-12)
