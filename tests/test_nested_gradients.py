"""Gradients called inside differentiated functions (issue #34, item 8): each spelling of
`grad` or `value_and_grad` called there, differentiated in every mode against an oracle
that computes the inner gradient by its closed form (never by s2sad), through central
differences of the whole function; and the refusals of the other derivatives, located
at the user's line.

The classic mistake is perturbation confusion: in `x * grad(lambda y: x * y)(2.0)`, the
inner gradient is `x`, and it depends on the outer `x`; a derivative that takes it for a
constant gives `x` instead of `2 x`.
"""
import dataclasses
import functools
import importlib.util
import inspect
import math

import numpy as np
import pytest

import s2sad
from numpy_cases import fd_array_grad
from oracle import assert_close, fd_grad

numba_missing = pytest.mark.skipif(importlib.util.find_spec("numba") is None,
                                   reason="numba is not installed")


def second_difference(f, x, h=1e-3):
    """d2f/dx2 at float x: the five-point central difference, error O(h**4)."""
    return (-f(x + 2 * h) + 16 * f(x + h) - 30 * f(x) + 16 * f(x - h) - f(x - 2 * h)) / (
        12 * h * h)


def line_of(fn, text):
    """The absolute line in this file of the first line of `fn` that contains `text`."""
    lines, first = inspect.getsourcelines(fn)
    return first + next(k for k, line in enumerate(lines) if text in line)


# -- the functions whose gradients are called ---------------------------------------------
def h(y, x):
    return x * y * y


gh = s2sad.grad(h, wrt=0)
gh_named = s2sad.grad(h, wrt="y")
vg = s2sad.value_and_grad(h, wrt=1)


def waves(y, x):
    s = 0.0
    for i in range(3):
        s = s + math.sin(x * y * i)
    return s


dwaves = s2sad.grad(waves)


def calls_gh(y, x):
    return x * gh(y, x) * y


dcalls = s2sad.grad(calls_gh)


def quartic(y):
    return y ** 4


dquartic = s2sad.grad(quartic)
dsin = s2sad.grad(math.sin)


class Spring:
    def __init__(self, k):
        self.k = k

    def energy(self, y):
        return 0.5 * self.k * y ** 2


SPRING = Spring(3.0)
dspring = s2sad.grad(SPRING.energy)


@dataclasses.dataclass
class Model:
    a: float

    def energy(self, y):
        return self.a * math.sin(y)


dmodel = s2sad.grad(Model.energy, wrt=1)


def apply(fn, a, b):
    return fn(a, b)


# -- the spellings, each with its closed form -----------------------------------------------
def stored(x):
    return x * gh(2.0, x)           # the gradient is not taken with respect to x


def in_place(x):
    return x * s2sad.grad(h, wrt=0)(2.0, x)


def by_name_and_keywords(x):
    return gh_named(y=2.0, x=x) * x


def lambda_closure(x):
    return x * s2sad.grad(lambda y: x * y)(2.0)


def siskind_pearlmutter(x):
    return x * s2sad.grad(lambda y: x + y)(1.0)


def nested_def(x):
    def inner(y):
        return math.sin(x * y)
    return x * s2sad.grad(inner)(x)


def nested_helpers(x):
    def scale(t):
        return t * x

    def inner(y):
        return scale(y) * y
    return s2sad.grad(inner)(3.0) * x


def stored_without_closure(x):
    dg = s2sad.grad(lambda y: y * y * y)
    return dg(x) * x


def value_and_grad_in_place(x):
    v, g = s2sad.value_and_grad(h)(2.0, x)
    return v * g + v


def stored_value_and_grad(x):
    v, g = vg(x, x)
    return v * g


def tuple_wrt(x):
    gy, gx = s2sad.grad(h, wrt=(0, 1))(2.0, x)
    return gy * gx * x


def bound_method(x):
    return dspring(x) * x


def bound_method_in_place(x):
    return s2sad.grad(SPRING.energy)(x) * x


def method_of_an_object_made_here(x):
    m = Model(x)
    return dmodel(m, x) * x


def passed_as_a_value(x):
    return apply(gh, x, x) * x


def partial_of_a_gradient(x):
    g = functools.partial(gh, 2.0)
    return g(x) * x


def in_a_loop(x):
    s = 0.0
    for i in range(1, 4):
        s = s + gh(x * i, x)
    return s


def in_a_comprehension(x):
    return sum([gh(x * i, x) for i in range(1, 4)])


def gradient_with_a_loop(x):
    return x * dwaves(2.0, x)


def three_levels(x):
    return x * dcalls(2.0, x)


def second_derivative_in_place(x):
    return s2sad.grad(s2sad.grad(quartic))(x) * x


def gradient_of_a_stored_gradient(x):
    return s2sad.grad(dquartic)(x) * x


def of_a_ufunc(x):
    return s2sad.grad(np.tanh)(x) * x


def of_math_sin(x):
    return dsin(x) * x


shadowed = 5.0      # a module variable that a comprehension's variable shadows


def lambda_in_a_comprehension(x):
    return sum([s2sad.grad(lambda y: x * y * shadowed)(1.0) for shadowed in range(3)]) * x


def lambda_reads_a_loop_variable(x):
    s = 0.0
    for j in range(3):
        s = s + s2sad.grad(lambda y: x * y * j)(1.0)
    return s * x


def lambda_in_a_nested_def(x):
    def k(z):
        return s2sad.grad(lambda y: z * y * y)(1.0)
    return k(x) * x


def lambda_calling_a_function(x):
    return s2sad.grad(lambda y: h(y, x))(2.0) * x


def nested_def_with_wrt(x):
    a = x * x

    def inner(y, b):
        return a * y * b
    return s2sad.grad(inner, wrt=(0, 1))(x, 2.0)[1] + s2sad.grad(inner, wrt=-1)(x, 2.0)


def _waves_gradient(y, x):
    return sum(x * i * math.cos(x * y * i) for i in range(3))


#: (function, the same with the inner gradient written out)
SCALAR = [
    (stored, lambda x: 4 * x * x),
    (in_place, lambda x: 4 * x * x),
    (by_name_and_keywords, lambda x: 4 * x * x),
    (lambda_closure, lambda x: x * x),
    (siskind_pearlmutter, lambda x: x),
    (nested_def, lambda x: x * x * math.cos(x * x)),
    (nested_helpers, lambda x: 6 * x * x),
    (stored_without_closure, lambda x: 3 * x ** 3),
    (value_and_grad_in_place, lambda x: 16 * x * x + 4 * x),
    (stored_value_and_grad, lambda x: x ** 5),
    (tuple_wrt, lambda x: 16 * x * x),
    (bound_method, lambda x: 3 * x * x),
    (bound_method_in_place, lambda x: 3 * x * x),
    (method_of_an_object_made_here, lambda x: x * x * math.cos(x)),
    (passed_as_a_value, lambda x: 2 * x ** 3),
    (partial_of_a_gradient, lambda x: 4 * x * x),
    (in_a_loop, lambda x: 12 * x * x),
    (in_a_comprehension, lambda x: 12 * x * x),
    (gradient_with_a_loop, lambda x: x * _waves_gradient(2.0, x)),
    (three_levels, lambda x: 8 * x ** 3),
    (second_derivative_in_place, lambda x: 12 * x ** 3),
    (gradient_of_a_stored_gradient, lambda x: 12 * x ** 3),
    (of_a_ufunc, lambda x: (1 - math.tanh(x) ** 2) * x),
    (of_math_sin, lambda x: math.cos(x) * x),
    (lambda_in_a_comprehension, lambda x: 3 * x * x),
    (lambda_reads_a_loop_variable, lambda x: 3 * x * x),
    (lambda_in_a_nested_def, lambda x: 2 * x * x),
    (nested_def_with_wrt, lambda x: 2 * x ** 3),
    (lambda_calling_a_function, lambda x: 4 * x * x),
]
POINTS = (0.7, -1.3)


@pytest.mark.parametrize("f, closed", SCALAR, ids=[f.__name__ for f, _ in SCALAR])
def test_reverse_modes(f, closed):
    for x in POINTS:
        assert_close(f(x), closed(x), rtol=1e-12)
        expected = fd_grad(closed, (x,), 0)
        assert_close(s2sad.grad(f)(x), expected, rtol=1e-7, atol=1e-9)
        value, gradient = s2sad.value_and_grad(f)(x)
        assert_close(value, closed(x), rtol=1e-12)
        assert_close(gradient, expected, rtol=1e-7, atol=1e-9)
        y, pullback = s2sad.vjp(f, x)
        assert_close(y, closed(x), rtol=1e-12)
        assert_close(pullback(2.0), (2.0 * expected,), rtol=1e-7, atol=1e-9)
        assert_close(s2sad.jacrev(f)(x), expected, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("f, closed", SCALAR, ids=[f.__name__ for f, _ in SCALAR])
def test_forward_modes(f, closed):
    for x in POINTS:
        expected = fd_grad(closed, (x,), 0)
        value, tangent = s2sad.jvp(f, (x,), (1.0,))
        assert_close(value, closed(x), rtol=1e-12)
        assert_close(tangent, expected, rtol=1e-7, atol=1e-9)
        assert_close(s2sad.jacfwd(f)(x), expected, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("f, closed", SCALAR, ids=[f.__name__ for f, _ in SCALAR])
def test_second_derivatives(f, closed):
    for x in POINTS:
        expected = second_difference(closed, x)
        assert_close(s2sad.hessian(f)(x), expected, rtol=1e-6, atol=1e-6)
        assert_close(s2sad.hvp(f)(x, 0.5), 0.5 * expected, rtol=1e-6, atol=1e-6)
        assert_close(s2sad.grad(s2sad.grad(f))(x), expected, rtol=1e-6, atol=1e-6)


NUMBA = [stored, in_place, lambda_closure, nested_def, gradient_with_a_loop,
         second_derivative_in_place, of_a_ufunc, nested_helpers, tuple_wrt, in_a_loop,
         stored_value_and_grad, value_and_grad_in_place]
#: what the numba backend refuses in reverse mode (Numba cannot compile a helper or a
#: type the gradient code needs), at a line of this file
NUMBA_REFUSED = [bound_method, three_levels, passed_as_a_value]


@numba_missing
@pytest.mark.parametrize("f", NUMBA, ids=[f.__name__ for f in NUMBA])
def test_numba_backend(f):
    closed = dict(SCALAR)[f]
    x = POINTS[0]
    expected = fd_grad(closed, (x,), 0)
    assert_close(s2sad.grad(f, backend="numba")(x), expected, rtol=1e-7, atol=1e-9)
    value, gradient = s2sad.value_and_grad(f, backend="numba")(x)
    assert_close((value, gradient), (closed(x), expected), rtol=1e-7, atol=1e-9)
    assert_close(s2sad.jvp(f, (x,), (1.0,), backend="numba"),
                 (closed(x), expected), rtol=1e-7, atol=1e-9)


@numba_missing
@pytest.mark.parametrize("f", NUMBA_REFUSED, ids=[f.__name__ for f in NUMBA_REFUSED])
def test_numba_backend_refusals(f):
    with pytest.raises(s2sad.S2SADError) as info:
        s2sad.grad(f, backend="numba")(POINTS[0])
    first = str(info.value).splitlines()[0]
    assert __file__ in first and "s2sad/" not in first.replace(__file__, "")


EXPORTED = [stored, lambda_closure, nested_def, value_and_grad_in_place,
            gradient_with_a_loop]


@pytest.mark.parametrize("f", EXPORTED, ids=[f.__name__ for f in EXPORTED])
def test_export(f):
    closed = dict(SCALAR)[f]
    x = POINTS[1]
    expected = fd_grad(closed, (x,), 0)
    for mode in ("reverse", "forward"):
        text = s2sad.export(f, mode=mode)
        assert "import s2sad" not in text
        module = {"__name__": f"exported_{f.__name__}"}
        exec(compile(text, f"<exported {f.__name__}>", "exec"), module)
        if mode == "reverse":
            assert_close(module[f"{f.__name__}_grad"](x), expected, rtol=1e-7, atol=1e-9)
            y, pullback = module[f"{f.__name__}_vjp"](x)
            assert_close((y, pullback(1.0)), (closed(x), expected), rtol=1e-7, atol=1e-9)
        else:
            assert_close(module[f"{f.__name__}_jvp"](x, 1.0), (closed(x), expected),
                         rtol=1e-7, atol=1e-9)


# -- arrays ---------------------------------------------------------------------------------
def ha(w, c):
    return np.sum(c * np.sin(w) ** 2)


gha = s2sad.grad(ha)
W0 = np.array([0.3, -0.8, 1.1])


def array_constant_argument(c):
    return np.sum(gha(W0, c) * c)


def array_argument(w):
    return np.sum(gha(w, 1.5) * w)


def lambda_over_arrays(w):
    c = np.sum(w)
    return np.sum(s2sad.grad(lambda u: np.sum(c * u ** 3))(w) * w)


def test_arrays():
    # d/dw ha = c sin(2 w)
    c = 0.8
    closed = lambda c: c * c * np.sum(np.sin(2 * W0))           # noqa: E731
    assert_close(array_constant_argument(c), closed(c), rtol=1e-12)
    expected = fd_grad(closed, (c,), 0)
    assert_close(s2sad.grad(array_constant_argument)(c), expected, rtol=1e-7)
    assert_close(s2sad.jvp(array_constant_argument, (c,), (1.0,))[1], expected, rtol=1e-7)
    assert_close(s2sad.hessian(array_constant_argument)(c), second_difference(closed, c),
                 rtol=1e-6)
    w = np.array([0.4, -0.9, 1.3])
    for f, closed in ((array_argument, lambda w: 1.5 * np.sum(np.sin(2 * w) * w)),
                      (lambda_over_arrays, lambda w: 3 * np.sum(w) * np.sum(w ** 3))):
        assert_close(f(w), closed(w), rtol=1e-12)
        expected = fd_array_grad(closed, (w,), 0)
        np.testing.assert_allclose(s2sad.grad(f)(w), expected, rtol=1e-7)
        value, gradient = s2sad.value_and_grad(f)(w)
        assert_close(value, closed(w), rtol=1e-12)
        np.testing.assert_allclose(gradient, expected, rtol=1e-7)
        np.testing.assert_allclose(s2sad.vjp(f, w)[1](1.0)[0], expected, rtol=1e-7)
        v = np.array([1.0, -0.5, 2.0])
        assert_close(s2sad.jvp(f, (w,), (v,))[1], float(np.dot(expected, v)), rtol=1e-7)
        step = 1e-4
        second = np.array([(fd_array_grad(closed, (w + step * e,), 0)
                            - fd_array_grad(closed, (w - step * e,), 0)) / (2 * step)
                           for e in np.eye(3)])
        np.testing.assert_allclose(s2sad.hessian(f)(w), second, rtol=1e-5, atol=1e-6)


def apply_one(fn, v):
    return fn(v)


def passes_a_lambda_in_a_comprehension(x):
    return sum([apply_one(lambda y: x * y * shadowed, 1.0) for shadowed in range(3)])


def test_a_lambda_in_a_comprehension_reads_its_variable():
    # (not the module variable of the same name: it gave 15 x for 3 x)
    for x in POINTS:
        assert_close(passes_a_lambda_in_a_comprehension(x), 3 * x, rtol=1e-12)
        assert_close(s2sad.grad(passes_a_lambda_in_a_comprehension)(x), 3.0, rtol=1e-12)
        assert_close(s2sad.jvp(passes_a_lambda_in_a_comprehension, (x,), (1.0,))[1], 3.0,
                     rtol=1e-12)


def test_the_inner_gradient_sees_the_outer_changes():
    # the nested function reads x when it is called: the gradient is made and called
    # after x changes
    def rebinds(x):
        x = x * x
        return s2sad.grad(lambda y: x * y * y)(1.0)       # 2 x^2
    for x in POINTS:
        assert_close(s2sad.grad(rebinds)(x), 4 * x, rtol=1e-12)
        assert_close(s2sad.jvp(rebinds, (x,), (1.0,))[1], 4 * x, rtol=1e-12)


# -- refusals ---------------------------------------------------------------------------------
def uses_vjp(x):
    y, pullback = s2sad.vjp(h, 2.0, x)
    return pullback(1.0)[0] * x


def uses_jacrev(x):
    return s2sad.jacrev(quartic)(x) * x


@pytest.mark.parametrize("f, expected", [
    (uses_vjp, lambda x: 8 * x),                # pullback(1.0)[0] * x is 4 x**2
    (uses_jacrev, lambda x: 16 * x ** 3),       # jacrev(quartic)(x) * x is 4 x**4
])
def test_vjp_and_jacrev_inside(f, expected):
    assert_close(s2sad.grad(f)(1.5), expected(1.5), rtol=1e-12)
    assert_close(s2sad.jvp(f, (1.5,), (1.0,))[1], expected(1.5), rtol=1e-12)


def uses_check_grad(x):
    return s2sad.check_grad(quartic, x) * x


HQ = s2sad.hessian(quartic)
JQ = s2sad.jacfwd(quartic)


def stored_hessian(x):
    return HQ(x) * x


def passes_a_jacobian(x):
    return apply(JQ, x, x) * x


def stores_a_gradient_of_a_closure(x):
    dg = s2sad.grad(lambda y: x * y)
    return dg(2.0) * x


def hk(y, *, x):
    return x * y * y


ghk = s2sad.grad(hk)


def keyword_only(x):
    return ghk(2.0, x=x) * x


def wrt_of_the_enclosing_function(x):
    return s2sad.grad(lambda y: x * y, wrt=1)(2.0)


def wrt_by_the_enclosing_name(x):
    return s2sad.grad(lambda y: x * y, wrt="x")(2.0)


def method_of_a_local_object(x):
    b = Spring(x)
    return s2sad.grad(b.energy)(x)


def gradient_of_a_partial(x):
    return s2sad.grad(functools.partial(h, x=x))(2.0)


def point_passed_to_the_maker(x):
    return s2sad.hvp(lambda y: x * y ** 3, np.array([x]), np.ones(1))[0]


def gradient_of_a_parameter(f, x):
    return s2sad.grad(f)(x) * x


@pytest.mark.parametrize("f, line, message", [
    (uses_check_grad, "s2sad.check_grad", r"check_grad\(\) .*outside the differentiated"),
    (stored_hessian, "HQ(x)", r"hessian\(\) called inside.* s2sad.hessian\(f\)\(x\) or "
     r"s2sad.jacfwd\(s2sad.grad\(f\)\)\(x\) called where it is made"),
    (passes_a_jacobian, "fn(a, b)", r"jacfwd\(\) called inside"),      # (where it is called)
    (stores_a_gradient_of_a_closure, "s2sad.grad(lambda", r"grad\(\) of a nested function "
     "or lambda that reads x of the enclosing function is made here and stored"),
    (keyword_only, "ghk(", r"passes x=, which is not one of its positional parameters "
     r"\(y\)"),
    (wrt_of_the_enclosing_function, "wrt=1", r"wrt=1 is not a parameter of the nested "
     r"function lam\(\) \(its parameters: y\)"),
    (wrt_by_the_enclosing_name, "wrt=", r"wrt='x' is not a parameter"),
    (method_of_a_local_object, "b.energy", r"s2sad.grad\(ClassName.energy, wrt=1\)\(b, "),
    (gradient_of_a_partial, "functools.partial", r"for a functools.partial, .*"
     r"s2sad.grad\(lambda y: h\(x, y\)\)\(y\)"),
    (point_passed_to_the_maker, "s2sad.hvp(", r"s2sad\.hvp\(f, wrt\) takes the function and "
     r"which argument .* call that with the point, s2sad\.hvp\(f\)\(x, \.\.\.\)"),
])
def test_refusals(f, line, message):
    for derivative in (lambda: s2sad.grad(f)(1.5), lambda: s2sad.jvp(f, (1.5,), (1.0,)),
                       lambda: s2sad.hessian(f)(1.5)):
        with pytest.raises(s2sad.UnsupportedSyntaxError, match=message) as info:
            derivative()
        assert info.value.filename == __file__
        assert info.value.lineno == line_of(apply if f is passes_a_jacobian else f, line)


def test_a_gradient_of_a_parameter_stays_refused():
    with pytest.raises(s2sad.UnsupportedSyntaxError, match="must take a function defined "
                       "outside it") as info:
        s2sad.grad(gradient_of_a_parameter, wrt=1)(quartic, 1.5)
    assert info.value.filename == __file__


# -- what the outer function changes, the inner one reads ----------------------------------
SETTINGS = {"a": 1.0}


class Box:
    pass


BOX = Box()
BOX.a = 1.0


def reads_settings(y):
    return SETTINGS["a"] * y * y


def reads_box(y):
    return BOX.a * y * y


def updates_a_module_dict(x):
    SETTINGS.update(a=x)
    return x * s2sad.grad(reads_settings)(2.0)


def sets_an_attribute_of_a_module_object(x):
    setattr(BOX, "a", x)
    return x * s2sad.grad(reads_box)(2.0)


@pytest.mark.parametrize("f, line, message", [
    (updates_a_module_dict, "SETTINGS.update", r"calls update\(\) of 'SETTINGS', which is "
     r"not one of its variables: .*mine = dict\(SETTINGS\)"),
    (sets_an_attribute_of_a_module_object, "setattr", r"calls setattr\(\) on 'BOX', which "
     "is not one of its variables: .*keep the new value in a local variable"),
])
def test_changes_the_inner_function_would_read_are_refused(f, line, message):
    # the derivative would run without the change: the inner gradient would read the old
    # value (d/dx of x * 4 x gave 4 x, without the inner gradient's own dependence on x)
    for derivative in (lambda: s2sad.grad(f)(1.5), lambda: s2sad.jvp(f, (1.5,), (1.0,))):
        with pytest.raises(s2sad.UnsupportedSyntaxError, match=message) as info:
            derivative()
        assert (info.value.filename, info.value.lineno) == (__file__, line_of(f, line))
