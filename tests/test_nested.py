"""Comprehensions, lambdas and nested functions (issue #5): gradients (grad, vjp) and
tangents (jvp) against central finite differences, the generated source, and the
errors of what stays refused."""
import inspect
import math

import numpy as np
import pytest

import s2sad
import corpus_nested as c
from numpy_cases import fd_array_grad
from oracle import assert_close as assert_close_scalars
from s2sad import MissingRuleError

X = np.array([0.3, -1.2, 0.8])

CASES = [
    (c.comp_filter, (0.7,)),
    (c.comp_two_fors, (0.7, -0.4)),
    (c.comp_nested, (0.9,)),
    (c.comp_numpy, (X,)),
    (c.gen_sum, (0.6,)),
    (c.gen_for, (1.3,)),
    (c.comp_indexed, (0.8,)),
    (c.comp_shadowing, (1.1,)),
    (c.comp_over_tuple, (0.5, 1.5)),
    (c.comp_reads_outer_list, (0.7,)),
    (c.lambda_simple, (0.7,)),
    (c.lambda_in_loop, (0.4,)),
    (c.nested_reads_changing, (0.7, 0.4)),
    (c.nested_calls_module_function, (1.3,)),
    (c.nested_calls_sibling, (0.7, -1.1)),
    (c.nested_two_levels, (0.6,)),
    (c.nested_branches, (0.5,)),
    (c.nested_branches, (1.5,)),
    (c.nested_keyword_call, (0.7, 1.9)),
    (c.nested_recursive, (1.3,)),
    (c.nested_defaults, (0.7, 0.4)),
    (c.lambda_defaults_in_loop, (0.6,)),
    (c.lambda_in_comprehension, (0.4,)),
    (c.lambda_reads_global_not_comprehension_var, (0.4,)),
    (c.comprehension_var_named_like_a_global, (0.4,)),
    (c.nested_with_comprehension, (0.8,)),
    (c.nested_numpy, (X,)),
    (c.closure_f, (0.9,)),
]
IDS = [f"{f.__name__}-{args[0]!r}" if isinstance(args[0], float) else f.__name__
       for f, args in CASES]


def all_wrt(args):
    return tuple(range(len(args)))


def assert_close(actual, expected):
    if isinstance(expected, tuple):
        assert isinstance(actual, tuple) and len(actual) == len(expected)
        for a, e in zip(actual, expected):
            assert_close(a, e)
    elif np.ndim(expected):
        np.testing.assert_allclose(actual, expected, rtol=1e-6, atol=1e-8)
    else:
        assert_close_scalars(actual, expected)


def fd_grad(f, args, wrt):
    """Central differences (tests/oracle.py), for scalar and array arguments."""
    if isinstance(wrt, int):
        return fd_array_grad(f, args, wrt)
    return tuple(fd_array_grad(f, args, i) for i in wrt)


@pytest.mark.parametrize("f, args", CASES, ids=IDS)
def test_grad_matches_finite_differences(f, args):
    wrt = all_wrt(args)
    assert_close(s2sad.grad(f, wrt=wrt)(*args), fd_grad(f, args, wrt))


@pytest.mark.parametrize("f, args", CASES, ids=IDS)
def test_vjp_matches_finite_differences(f, args):
    y, pullback = s2sad.vjp(f, *args)
    assert_close(y, f(*args))
    assert_close(pullback(2.0), tuple(2.0 * np.asarray(g) for g in
                                      fd_grad(f, args, all_wrt(args))))


@pytest.mark.parametrize("f, args", CASES, ids=IDS)
def test_jvp_matches_finite_differences(f, args):
    rng = np.random.default_rng(3)
    tangents = tuple(rng.normal(size=np.shape(a)) if np.shape(a) else float(rng.normal())
                     for a in args)
    y, y_dot = s2sad.jvp(f, args, tangents)
    grads = fd_grad(f, args, all_wrt(args))
    expected = sum(float(np.sum(np.asarray(g) * t)) for g, t in zip(grads, tangents))
    assert_close(y, f(*args))
    assert_close(float(y_dot), expected)


def test_lifted_function_reads_the_value_at_each_call():
    # g reads x after x changed: d/dx of sum_i g(s + i) with x scaled by 1.5 each time
    x, y = 0.7, 0.4
    assert_close(c.nested_reads_changing(x, y), _by_hand_changing(x, y))
    assert_close(s2sad.grad(c.nested_reads_changing)(x, y),
                 fd_grad(_by_hand_changing, (x, y), 0))


def _by_hand_changing(x, y):
    s = 0.0
    for i in range(3):
        t = s + i
        s = s + math.sin(t) * t * x + y
        x = x * 1.5
    return s


def test_generated_code_calls_the_lifted_functions_vjp():
    text = s2sad.source(c.nested_reads_changing)
    assert "g_vjp(s + i, x, y)" in text     # the free variables are extra arguments
    text = s2sad.source(c.lambda_simple)
    assert "square_vjp(x)" in text and "square(2.0)" in text    # the inactive call runs g


def test_generated_code_of_a_comprehension_is_a_loop():
    text = s2sad.source(c.comp_filter)
    assert "items.append" in text and "# grad of: return sum([x ** i for i in range(6)" \
        in text


def test_comprehension_variable_keeps_its_name_unless_it_collides():
    from s2sad import pipeline
    desugared = pipeline.stage_source(c.comp_shadowing, "desugar")
    assert "for i_1 in range(3):" in desugared and "i = 2.0" in desugared
    assert "ys = []" in desugared
    assert "for i in range(6)" in pipeline.stage_source(c.comp_filter, "desugar")


def test_lift_stage_shows_the_lifted_functions():
    from s2sad import pipeline
    text = pipeline.stage_source(c.nested_calls_sibling, "lift")
    assert "def inner(t, y):" in text
    assert "def outer(t, x, y):" in text         # y: passed on to inner
    assert "return outer(y, x, y) + inner(2.0, y)" in text


def test_missing_rule_in_a_lifted_function_names_the_users_line():
    with pytest.raises(MissingRuleError) as info:
        s2sad.grad(c.nested_missing_rule)(1.5)
    lines, first = inspect.getsourcelines(c.nested_missing_rule)
    line = first + next(i for i, t in enumerate(lines) if "opaque(t)" in t)
    assert f"{inspect.getsourcefile(c)}:{line}" in str(info.value)
    assert "opaque" in str(info.value)


def test_lifted_functions_are_compiled_once():
    f = c.nested_calls_module_function
    s2sad.grad(f)(1.3)
    from s2sad.before_ad import lift
    first = lift._lifted[f][1]["g"]
    s2sad.grad(f)(0.4)
    s2sad.jvp(f, (0.4,), (1.0,))
    assert lift._lifted[f][1]["g"] is first


def test_user_values_are_not_mutated():
    x = X.copy()
    s2sad.grad(c.nested_numpy)(x)
    s2sad.grad(c.comp_numpy)(x)
    np.testing.assert_array_equal(x, X)


def test_source_shows_the_lifted_functions_derivatives_with_their_line():
    lines, first = inspect.getsourcelines(c.lambda_in_loop)
    line = first + next(i for i, t in enumerate(lines) if "lambda s, k" in t)
    for mode, name in (("reverse", "step_vjp"), ("forward", "step_jvp")):
        text = s2sad.source(c.lambda_in_loop, mode=mode)
        header = f"# step: nested in lambda_in_loop (line {line}), lifted: x passed in"
        assert header in text
        assert f"def {name}(s, k, x" in text.split(header)[1]


def test_cli_shows_the_lift_stage(capsys):
    from s2sad import cli
    assert cli.main(["show", f"{inspect.getsourcefile(c)}:nested_calls_module_function",
                     "--stage", "lift"]) == 0
    out = capsys.readouterr().out
    assert "def g(t, x):" in out and "return g(x, x) * g(2.0, x)" in out


def test_comprehension_variables_do_not_leak_into_user_names():
    # `k` of the comprehension and the user's `k` are different variables
    def by_hand(x):
        k = 3.0
        return sum(x * j for j in range(5)) * k + k
    x = 0.6
    assert_close(c.comp_variable_and_user_name(x), by_hand(x))
    assert_close(s2sad.grad(c.comp_variable_and_user_name)(x), fd_grad(by_hand, (x,), 0))


def test_hessian_through_a_nested_function():
    assert s2sad.hessian(c.lambda_simple)(0.7) == pytest.approx(2.0, rel=1e-12)   # x^2 + 4


def test_hessian_of_a_comprehension():
    x = 0.7        # d2/dx2 of sum_{i odd < 6} x**i = 2*3*x + 4*5*x**3
    assert s2sad.hessian(c.comp_filter)(x) == pytest.approx(6 * x + 20 * x ** 3, rel=1e-12)


def test_hessian_through_nested_functions_with_defaults():
    x = 0.6        # d2/dx2 of sum_k (x**(k+1) + x**2) = 0 + 2 + 6x + 3 * 2
    assert s2sad.hessian(c.lambda_defaults_in_loop)(x) == pytest.approx(8 + 6 * x, rel=1e-12)
