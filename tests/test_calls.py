"""Calls as users write them (issue #19): methods, functools.partial, keywords,
keyword-only parameters, defaults, *args and **kwargs, lambdas and nested functions
passed as values. Gradients (grad, vjp), tangents (jvp) and second derivatives
(hessian) against central finite differences in float64; the errors of what stays
refused."""
import copy
import functools
import itertools
import math

import numpy as np
import pytest

import s2sad
import corpus_calls_values as c
from numpy_cases import fd_array_grad
from oracle import fd_grad
from s2sad import MissingRuleError, UnsupportedSyntaxError

X = np.array([0.2, -0.4, 0.9])

# (function, arguments, the argument differentiated)
CASES = [
    (c.method_of_global, (0.7,), 0),
    (c.method_of_argument, (c.MODEL, 0.7), 1),
    (c.method_of_local, (0.7,), 0),
    (c.inherited_method, (0.7,), 0),
    (c.static_and_class_methods, (0.7,), 0),
    (c.method_on_arrays, (X,), 0),
    (c.method_as_value, (0.7,), 0),
    (c.partial_of_constants, (0.7,), 0),
    (c.partial_of_differentiated, (0.7,), 0),
    (c.partial_positional, (0.7, 1.2), 0),
    (c.partial_positional, (0.7, 1.2), 1),
    (c.partial_of_partial, (0.7,), 0),
    (c.partial_to_helper, (0.7,), 0),
    (c.by_keyword, (0.7,), 0),
    (c.keyword_only, (0.7,), 0),
    (c.default_in_between, (0.7,), 0),
    (c.star_args, (0.7,), 0),
    (c.star_kwargs, (0.7,), 0),
    (c.lambda_capturing, (0.7,), 0),
    (c.nested_as_value, (0.7,), 0),
    (c.nested_capturing, (0.7, 1.3), 0),
    (c.nested_capturing, (0.7, 1.3), 1),
    (c.lambda_two_levels, (0.7,), 0),
    (c.global_function_as_value, (0.7,), 0),
    (c.lambda_by_keyword, (0.7,), 0),
    (c.lambda_to_a_library_call, (0.7,), 0),
    (c.partial_made_in_a_branch, (0.7,), 0),
    (c.partial_made_in_a_branch, (-0.4,), 0),
    (c.partial_made_in_a_loop, (0.7,), 0),
    (c.partial_made_on_two_paths, (0.7,), 0),
    (c.partial_made_on_two_paths, (-0.4,), 0),
    (c.partial_called_after_its_loop, (0.7,), 0),
    (c.partial_of_the_previous_iteration, (0.7,), 0),
    (c.partial_of_the_previous_iteration_first_made_in_the_loop, (0.7,), 0),
    (c.lambda_reads_a_name_set_in_a_loop, (0.7,), 0),
    (c.lambda_reads_a_name_set_in_a_branch, (0.7,), 0),
    (c.lambda_reads_a_name_set_in_a_branch, (-0.4,), 0),
    (c.lambda_in_the_loop_that_sets_its_name, (0.7,), 0),
    (c.keyword_call_of_a_keyword_call, (0.7,), 0),
    (c.keyword_call_in_a_loop_over_a_display, (0.7,), 0),
    (c.module_level_lambda, (0.7,), 0),          # its derivative's names are lambda_...
    (c.partial_of_a_module_level_lambda, (0.7,), 0),
]
IDS = [f"{f.__name__}-{i}" for f, _, i in CASES]
SCALAR_CASES = [case for case in CASES if not isinstance(case[1][case[2]], np.ndarray)]
SCALAR_IDS = [f"{f.__name__}-{i}" for f, _, i in SCALAR_CASES]


def _expected(f, args, i):
    return fd_array_grad(f, args, i)


@pytest.mark.parametrize("f, args, i", CASES, ids=IDS)
def test_grad_matches_finite_differences(f, args, i):
    got = s2sad.grad(f, wrt=i)(*args)
    np.testing.assert_allclose(got, _expected(f, args, i), rtol=1e-6, atol=1e-9)


NUMERIC_CASES = [case for case in CASES
                 if all(isinstance(a, (float, np.ndarray)) for a in case[1])]


@pytest.mark.parametrize("f, args, i", NUMERIC_CASES,
                         ids=[f"{f.__name__}-{i}" for f, _, i in NUMERIC_CASES])
def test_vjp_matches_finite_differences(f, args, i):
    """vjp differentiates every argument (a model object is left out with grad)."""
    y, pullback = s2sad.vjp(f, *args)
    assert y == pytest.approx(f(*args), rel=1e-12)
    got = pullback(1.0)
    got = got[i] if isinstance(got, tuple) else got
    np.testing.assert_allclose(got, _expected(f, args, i), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("f, args, i", CASES, ids=IDS)
def test_jvp_matches_finite_differences(f, args, i):
    direction = np.array([0.3, -1.0, 0.5]) if isinstance(args[i], np.ndarray) else 0.7
    tangents = tuple(direction if k == i else None for k in range(len(args)))
    y, y_dot = s2sad.jvp(f, args, tangents)
    assert y == pytest.approx(f(*args), rel=1e-12)
    expected = np.sum(_expected(f, args, i) * direction)
    assert y_dot == pytest.approx(expected, rel=1e-6, abs=1e-9)


def _second_difference(f, args, i, h=1e-4):
    def at(t):
        shifted = list(args)
        shifted[i] = args[i] + t
        return f(*shifted)
    return (at(h) - 2 * at(0.0) + at(-h)) / (h * h)


@pytest.mark.parametrize("f, args, i", SCALAR_CASES, ids=SCALAR_IDS)
def test_hessian_matches_second_differences(f, args, i):
    got = s2sad.hessian(f, wrt=i)(*args)
    assert float(got) == pytest.approx(_second_difference(f, args, i), rel=1e-4, abs=1e-5)


def test_hessian_of_a_method_on_arrays():
    got = s2sad.hessian(c.method_on_arrays)(X)
    # central differences of the finite-difference gradient, column by column
    expected = np.empty((3, 3))
    for k in range(3):
        e = np.zeros(3)
        e[k] = 1e-4
        expected[:, k] = (fd_array_grad(c.method_on_arrays, (X + e,), 0)
                          - fd_array_grad(c.method_on_arrays, (X - e,), 0)) / 2e-4
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-7)


def test_analytic_values():
    """A few against formulas written out, not only against differences."""
    x = 0.7
    # MODEL.loss(x) = (w sin x + b)^2 + b x, with w = 1.5, b = 0.3
    p = 1.5 * math.sin(x) + 0.3
    assert s2sad.grad(c.method_of_global)(x) == pytest.approx(2 * p * 1.5 * math.cos(x) + 0.3)
    # the midpoint rule of x t^2 on [0, 1] with 10 steps is 0.3325 x
    assert s2sad.grad(c.lambda_capturing)(x) == pytest.approx(0.3325)
    assert s2sad.hessian(c.lambda_capturing)(x) == pytest.approx(0.0, abs=1e-12)
    # sq(sq(x)) = x^4
    assert s2sad.grad(c.nested_as_value)(x) == pytest.approx(4 * x ** 3)
    assert s2sad.hessian(c.nested_as_value)(x) == pytest.approx(12 * x ** 2)
    # loglik(1.0, mu=x, sigma=1 + x^2) = -(1 - x)^2 / (2 s^2) - log s
    s = 1 + x * x
    expected = (1 - x) / s ** 2 + (1 - x) ** 2 * 2 * x / s ** 3 - 2 * x / s
    assert s2sad.grad(c.by_keyword)(x) == pytest.approx(expected)


def test_a_differentiated_record_with_methods():
    params = c.Params(0.5, -0.2)
    x, y = 0.7, 1.3
    g = s2sad.grad(c.method_of_differentiated_record)(params, x, y)
    assert isinstance(g, c.Params)
    r = params.w * x + params.b - y     # loss = r^2 + w y + b
    assert (g.w, g.b) == pytest.approx((2 * r * x + y, 2 * r + 1.0))

    def along(t):
        return c.method_of_differentiated_record(c.Params(0.5 + 0.3 * t, -0.2 - t), x, y)
    _, y_dot = s2sad.jvp(c.method_of_differentiated_record, (params, x, y),
                         (c.Params(0.3, -1.0), None, None))
    assert y_dot == pytest.approx(fd_grad(along, (0.0,)), rel=1e-7)


def test_user_inputs_are_not_mutated():
    model = c.Model(1.5, 0.3)
    before = copy.deepcopy(model.__dict__)
    s2sad.grad(c.method_of_argument, wrt=1)(model, 0.7)
    s2sad.jvp(c.method_of_argument, (model, 0.7), (None, 1.0))
    s2sad.hessian(c.method_of_argument, wrt=1)(model, 0.7)
    assert model.__dict__ == before
    x, W = X.copy(), c.LINEAR.W.copy()
    s2sad.grad(c.method_on_arrays)(x)
    s2sad.hessian(c.method_on_arrays)(x)
    np.testing.assert_array_equal(x, X)
    np.testing.assert_array_equal(c.LINEAR.W, W)
    params = c.Params(0.5, -0.2)
    s2sad.grad(c.method_of_differentiated_record)(params, 0.7, 1.3)
    assert params == c.Params(0.5, -0.2)


def test_another_class_is_another_specialisation():
    """The code made for one class is not run for an instance of another: the guard
    checks the class, and methods are found through the instance's class."""
    x = 0.7
    g = s2sad.grad(c.method_of_argument, wrt=1)
    shifted = c.Shifted(1.5, 0.3)
    assert g(c.MODEL, x) == pytest.approx(fd_grad(c.method_of_argument, (c.MODEL, x), 1))
    assert g(shifted, x) == pytest.approx(fd_grad(c.method_of_argument, (shifted, x), 1))
    assert g(c.MODEL, x) != pytest.approx(g(shifted, x))


def test_a_nested_function_reads_the_value_at_the_call():
    def f(x):
        k = x
        def scale(y):
            return k * y
        k = x * x           # the closure, called inside apply_twice, reads this k
        return c.apply_twice(scale, 1.5)
    assert f(0.7) == pytest.approx(0.7 ** 4 * 1.5)
    assert s2sad.grad(f)(0.7) == pytest.approx(fd_grad(f, (0.7,)), rel=1e-7)


def test_generated_code_calls_the_method_and_the_version():
    text = s2sad.source(c.method_of_local, at=(0.7,))
    assert "loss_vjp(m, x)" in text
    text = s2sad.source(c.lambda_capturing, at=(0.7,))
    assert "# integrate: line" in text and "specialised for the call (f=lam)" in text
    assert "def integrate_vjp(f_x, a, b):" in text
    assert "# lam: nested in lambda_capturing" in text
    text = s2sad.source(c.star_args, at=(0.7,))
    assert "def total_vjp(terms_0, terms_1, terms_2):" in text


def test_versions_are_made_once():
    from s2sad import pipeline
    first = pipeline.compilation(c.lambda_capturing, until="resolve_calls")[0]
    second = pipeline.compilation(c.lambda_capturing, until="resolve_calls")[0]
    assert first.bindings["integrate_1"] is second.bindings["integrate_1"]


# -- what stays refused ---------------------------------------------------------------------
def _line(fn, text):
    import inspect
    lines, start = inspect.getsourcelines(fn)
    return start + next(k for k, line in enumerate(lines) if text in line)


class WithClassMethod:
    @classmethod
    def square(cls, x):
        return x * x

    @classmethod
    def twice(cls, x):
        return cls.square(x) * 2.0


def calls_through_cls(x):
    return WithClassMethod.twice(x)


def test_a_method_of_an_unknown_class_says_what_to_write():
    with pytest.raises(MissingRuleError) as info:
        s2sad.grad(calls_through_cls)(0.7)
    text = str(info.value)
    assert f"test_calls.py:{_line(WithClassMethod.twice, 'cls.square')}:" in text
    assert "ClassName.method(obj, ...)" in text
    with pytest.raises(s2sad.S2SADError, match="cls.square"):
        s2sad.jvp(calls_through_cls, (0.7,), (1.0,))


def stores_a_lambda(x):
    fs = [lambda t: t * x]
    return fs[0](x)


def returns_a_nested_function(x):
    def g(t):
        return t * x
    h = g
    return h(x)


def reads_kwargs_otherwise(x, **kw):
    s = 0.0
    for k in kw:
        s = s + kw[k]
    return s * x


def passes_kwargs_read_otherwise(x):
    return reads_kwargs_otherwise(x, a=x)


def partials_binding_other_parameters(x):
    if x > 0:
        g = functools.partial(c.loglik, mu=x)
    else:
        g = functools.partial(c.loglik, sigma=-x)
    return g(1.0)


@pytest.mark.parametrize("f, error, message, construct", [
    (stores_a_lambda, UnsupportedSyntaxError, "lambda is supported where it is passed",
     "fs = [lambda"),
    (returns_a_nested_function, UnsupportedSyntaxError, "'g' is used as a value here",
     "h = g"),
    (passes_kwargs_read_otherwise, UnsupportedSyntaxError,
     r"kw\['key'\], kw.get\('key', default\)", None),
    (partials_binding_other_parameters, MissingRuleError,
     "Make it the same way on every path, or call the function it wraps", "return g(1.0)"),
])
def test_refused_with_a_located_message(f, error, message, construct):
    with pytest.raises(error, match=message) as info:
        s2sad.grad(f)(0.7)
    if construct is not None:
        assert f"test_calls.py:{_line(f, construct)}" in str(info.value)
    else:   # located in the callee
        assert f"test_calls.py:{_line(reads_kwargs_otherwise, 'for k in kw')}" in str(
            info.value)


def top_level_star(*xs):
    return xs[0] * xs[1]


def test_star_args_of_the_differentiated_function_itself():
    # differentiated call by call (s2sad/variadic.py; tests/test_variadic.py)
    assert s2sad.grad(top_level_star, wrt=(0, 1))(0.7, 1.2) == pytest.approx(
        fd_grad(top_level_star, (0.7, 1.2), (0, 1)))


def maps_a_lambda(x):
    return sum(map(lambda v: v * x, [1.0, 2.0]))


def reduces_with_a_lambda(x):
    return functools.reduce(lambda a, v: a * v * x, [1.0, 2.0], 1.0)


def starmaps_a_lambda(x):
    return sum(itertools.starmap(lambda a, v: a * v * x, [(1.0, 2.0), (x, 3.0)]))


def test_a_lambda_given_to_library_code_with_differentiated_values():
    # map(...) and functools.reduce(...) are the loops they stand for
    # (before_ad/builtin_calls.py)
    assert s2sad.grad(maps_a_lambda)(0.7) == pytest.approx(fd_grad(maps_a_lambda, (0.7,)))
    assert s2sad.grad(reduces_with_a_lambda)(0.7) == pytest.approx(
        fd_grad(reduces_with_a_lambda, (0.7,)))
    with pytest.raises(MissingRuleError, match=r"starmap\(\) is given a nested function") as info:
        s2sad.grad(starmaps_a_lambda)(0.7)
    assert f"test_calls.py:{_line(starmaps_a_lambda, 'starmap(')}" in str(info.value)
    assert "[f(a, v) for v in xs]" in str(info.value)
