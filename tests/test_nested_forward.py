"""Forward mode called inside differentiated functions (issue #37): `jvp(f, primals,
tangents)`, `jacfwd(f)(x)` and `hvp(f)(x, v)` inside a function differentiated by `grad`
(reverse over forward), by `jvp` (forward over forward) and twice (`hessian`), of a
module-level function, a nested function or a lambda closing over the outer variables.
Each oracle is the function as written with the inner derivative in its closed form
(never by s2sad), differentiated by central differences.
"""
import numpy as np
import pytest

import s2sad
from oracle import assert_close, fd_grad


def second_difference(f, x, h=1e-3):
    """d2f/dx2 at float x: the five-point central difference, error O(h**4)."""
    return (-f(x + 2 * h) + 16 * f(x + h) - 30 * f(x) + 16 * f(x - h) - f(x - 2 * h)) / (
        12 * h * h)


def f2(x, y):
    return np.sin(x) * y + x ** 3


def f2_x(x, y):         # d f2 / dx
    return np.cos(x) * y + 3 * x ** 2


def f2_xx(x, y):
    return -np.sin(x) * y + 6 * x


def jvp_of_a_function(x):           # a tangent None: y held fixed
    y, t = s2sad.jvp(f2, (x, 2.0 * x), (1.0, None))
    return t * x + y


def jvp_of_a_function_oracle(x):
    return f2_x(x, 2.0 * x) * x + f2(x, 2.0 * x)


def jvp_along_both(x):
    return s2sad.jvp(f2, (x, x * x), (x, 1.0))[1]


def jvp_along_both_oracle(x):
    return f2_x(x, x * x) * x + np.sin(x)


def jvp_of_a_closure(x):            # the lambda reads x: no perturbation confusion
    y, t = s2sad.jvp(lambda z: np.sin(z * x), (x,), (1.0,))
    return t


def jvp_of_a_closure_oracle(x):
    return np.cos(x * x) * x


def jvp_of_a_gradient(x):           # jvp(grad(f)): forward over reverse, inside
    g, t = s2sad.jvp(s2sad.grad(f2), (x, 1.0), (1.0, 0.0))
    return t * g


def jvp_of_a_gradient_oracle(x):
    return f2_xx(x, 1.0) * f2_x(x, 1.0)


def hvp_inside(x):
    return s2sad.hvp(f2)(x, 1.5, 2.0) * x


def hvp_inside_oracle(x):
    return f2_xx(x, 1.5) * 2.0 * x


def jacfwd_of_an_array_closure(x):
    z = np.array([0.3, 0.5]) * x
    return np.sum(s2sad.jacfwd(lambda z: np.sin(z) * z * x)(z) ** 2)


def jacfwd_of_an_array_closure_oracle(x):
    z = np.array([0.3, 0.5]) * x
    return np.sum(((np.cos(z) * z + np.sin(z)) * x) ** 2)    # (the Jacobian is diagonal)


def jacfwd_of_a_nested_function(x):
    def inner(z):
        return z ** 3 * x
    return s2sad.jacfwd(inner)(x)


def jacfwd_of_a_nested_function_oracle(x):
    return 3 * x ** 2 * x


def jacfwd_of_a_matrix_function(x):
    v = np.array([x, 2.0 * x, 0.5])
    J = s2sad.jacfwd(lambda v: np.outer(v, v)[:, :2] * x)(v)        # shape (3, 2, 3)
    return np.sum(J * np.arange(18.0).reshape(3, 2, 3))


def jacfwd_of_a_matrix_function_oracle(x):
    v = np.array([x, 2.0 * x, 0.5])
    J = np.zeros((3, 2, 3))
    for i in range(3):
        for j in range(2):
            J[i, j, i] += v[j] * x
            J[i, j, j] += v[i] * x
    return np.sum(J * np.arange(18.0).reshape(3, 2, 3))


def hessian_inside(x):             # hessian(f) is jacfwd(grad(f)): here of a number
    return s2sad.hessian(f2)(x, x * x) * x


def hessian_inside_oracle(x):
    return f2_xx(x, x * x) * x


def quartic(y):
    return np.sum(y ** 4) + y[0] * y[1]


WEIGHTS = np.array([[1.0, 2.0], [3.0, 4.0]])


def hessian_of_an_array(x):
    return np.sum(s2sad.hessian(quartic)(np.array([x, 2.0 * x])) * WEIGHTS)


def jacfwd_of_a_gradient(x):
    return np.sum(s2sad.jacfwd(s2sad.grad(quartic))(np.array([x, 2.0 * x])) * WEIGHTS)


def hessian_of_an_array_oracle(x):
    y = np.array([x, 2.0 * x])
    return np.sum((np.diag(12 * y ** 2) + np.array([[0.0, 1.0], [1.0, 0.0]])) * WEIGHTS)


def hvp_and_hessian_of_closures(x):
    return (s2sad.hvp(lambda z: np.sin(z * x) * z)(0.4, 2.0)
            + s2sad.hessian(lambda z: z ** 3 * x)(x))


def hvp_and_hessian_of_closures_oracle(x):
    z = 0.4
    return (-np.sin(z * x) * x * x * z + 2 * np.cos(z * x) * x) * 2.0 + 6 * x * x


def on_a_branch(x, forward):        # the branch not taken compiles too
    if forward:
        return s2sad.jvp(f2, (x, 1.0), (1.0, 0.0))[1]
    return s2sad.grad(f2)(x, 1.0)


CASES = [(jvp_of_a_function, jvp_of_a_function_oracle),
         (jvp_along_both, jvp_along_both_oracle),
         (jvp_of_a_closure, jvp_of_a_closure_oracle),
         (jvp_of_a_gradient, jvp_of_a_gradient_oracle),
         (hvp_inside, hvp_inside_oracle),
         (jacfwd_of_an_array_closure, jacfwd_of_an_array_closure_oracle),
         (jacfwd_of_a_nested_function, jacfwd_of_a_nested_function_oracle),
         (jacfwd_of_a_matrix_function, jacfwd_of_a_matrix_function_oracle),
         (hessian_inside, hessian_inside_oracle),
         (hessian_of_an_array, hessian_of_an_array_oracle),
         (jacfwd_of_a_gradient, hessian_of_an_array_oracle),
         (hvp_and_hessian_of_closures, hvp_and_hessian_of_closures_oracle)]


@pytest.mark.parametrize("g, oracle", CASES, ids=[g.__name__ for g, _ in CASES])
@pytest.mark.parametrize("x", [0.7, -1.3])
def test_first_order(g, oracle, x):
    assert_close(g(x), oracle(x), rtol=1e-12, atol=1e-12)     # the oracle is the function
    expected = fd_grad(oracle, (x,))
    assert_close(s2sad.grad(g)(x), expected, rtol=1e-7, atol=1e-9)
    assert_close(s2sad.value_and_grad(g)(x)[1], expected, rtol=1e-7, atol=1e-9)
    assert_close(s2sad.jvp(g, (x,), (1.0,))[1], expected, rtol=1e-7, atol=1e-9)
    assert_close(s2sad.vjp(g, x)[1](2.0)[0], 2.0 * expected, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("g, oracle", CASES[:5] + CASES[6:7],
                         ids=[g.__name__ for g, _ in CASES[:5] + CASES[6:7]])
def test_second_order(g, oracle):
    x = 0.7
    expected = second_difference(oracle, x)
    assert_close(s2sad.hessian(g)(x), expected, rtol=1e-6, atol=1e-7)
    assert_close(s2sad.grad(s2sad.grad(g))(x), expected, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("forward", [True, False])
def test_a_branch_not_taken(forward):
    expected = f2_x(0.7, 1.0) if forward else f2_x(0.7, 1.0)
    assert_close(on_a_branch(0.7, forward), expected, rtol=1e-12)
    assert_close(s2sad.grad(on_a_branch)(0.7, forward), f2_xx(0.7, 1.0), rtol=1e-9)


# GradBench's saddle, small: the inner argmin's gradient by reverse (r) or forward (f)
# mode, the outer derivative by reverse or forward mode

def argmin(f, x0, mode):
    x = x0
    for i in range(40):
        if mode == "r":
            step = s2sad.grad(f)(x)
        else:
            step = s2sad.jvp(f, (x,), (1.0,))[1]
        x = x - 0.2 * step
    return x


def cost(x, y):
    return (x - y) ** 2 + 0.1 * x ** 4 + 0.5 * np.sin(x * y)


def cost_x(x, y):
    return 2 * (x - y) + 0.4 * x ** 3 + 0.5 * np.cos(x * y) * y


def saddle(y, mode):
    x = argmin(lambda x: cost(x, y), 0.0, mode)
    return x * y + x ** 2


def saddle_oracle(y):
    x = 0.0
    for i in range(40):
        x = x - 0.2 * cost_x(x, y)
    return x * y + x ** 2


@pytest.mark.parametrize("inner", ["r", "f"])
@pytest.mark.parametrize("outer", ["r", "f"])
def test_saddle(inner, outer):
    y = 0.8
    assert_close(saddle(y, inner), saddle_oracle(y), rtol=1e-12)
    expected = fd_grad(saddle_oracle, (y,))
    got = (s2sad.grad(saddle)(y, inner) if outer == "r"
           else s2sad.jvp(saddle, (y, inner), (1.0, None))[1])
    assert_close(got, expected, rtol=1e-7, atol=1e-9)


def passes_keywords(x):
    return s2sad.jvp(f2, (x, 1.0), (1.0, 0.0), y=2.0)[1]


def jvp_of_a_list(x):
    primals = (x, 1.0)
    return s2sad.jvp(f2, primals, (1.0, 0.0))[1]


def with_aux(x):
    return s2sad.jvp(f2, (x, 1.0), (1.0, 0.0), has_aux=x > 0)[1]


def too_few_primals(x):
    return s2sad.jvp(f2, (x,), (1.0,))[1]


def hvp_of_two(x):
    return s2sad.hvp(f2, wrt=(0, 1))(x, 1.0, (1.0, 1.0))


@pytest.mark.parametrize("g, message", [
    (passes_keywords, r"passes y=, which is not a positional parameter of f2\(\) after "
                      r"those it gives by position"),
    (jvp_of_a_list, r"does not give its primals and tangents as two tuples"),
    (with_aux, r"has a has_aux other than True or False"),
    (too_few_primals, r"gives 1 primal\(s\) for the 2 positional parameter\(s\) of f2\(\)"),
    (hvp_of_two, r"wrt=\(0, 1\): give the index of one argument"),
])
def test_refusals(g, message):
    with pytest.raises(s2sad.UnsupportedSyntaxError, match=message) as info:
        s2sad.grad(g)(0.7)
    assert info.value.filename == __file__
    assert "s2sad." in info.value.text


# A lambda closing over a function-valued parameter: argmax(f) is argmin(lambda x:
# -f(x)), so the version of argmin specialised on that lambda binds a function value
# (f) that is a function value itself (a lambda reading y)

def argmax(f, x0, mode):
    return argmin(lambda x: -f(x), x0, mode)


def payoff(x, y):
    return -cost(x, y)


def saddle_max(y, mode):
    x = argmax(lambda x: payoff(x, y), 0.0, mode)
    return x * y + x ** 2


@pytest.mark.parametrize("inner", ["r", "f"])
@pytest.mark.parametrize("outer", ["r", "f"])
def test_argmax_of_a_function_passed(inner, outer):
    y = 0.8
    assert_close(saddle_max(y, inner), saddle_oracle(y), rtol=1e-12)
    expected = fd_grad(saddle_oracle, (y,))
    got = (s2sad.grad(saddle_max)(y, inner) if outer == "r"
           else s2sad.jvp(saddle_max, (y, inner), (1.0, None))[1])
    assert_close(got, expected, rtol=1e-7, atol=1e-9)
    assert_close(s2sad.hessian(saddle_max)(y, inner), second_difference(saddle_oracle, y),
                 rtol=1e-5, atol=1e-7)


def f(x):       # (a global that the closure's `f` below hides)
    return 10.0 * x


def negated(f, x):
    return s2sad.grad(lambda z: -f(z))(x)


def test_a_closure_hiding_a_global_of_a_callee():
    # the guard of the gradient of the lambda tests the global `f` that the callee
    # `lambda z: f(z) ** 2` reads, under a name the closure does not hide
    assert_close(negated(lambda z: f(z) ** 2, 0.3), -200.0 * 0.3, rtol=1e-12)
    assert_close(negated(lambda z: f(z) ** 2, 0.5), -200.0 * 0.5, rtol=1e-12)


def argmin_of_arrays(f, x0, mode):
    x = x0
    for i in range(30):
        if mode == "r":
            g = s2sad.grad(f)(x)
        else:
            g = s2sad.jacfwd(f)(x)      # (of a number: the gradient)
        x = x - 0.1 * g
    return x


def cost_of_arrays(p, q):
    return (np.sum(p * p) + np.sum(q * q) - 0.5 * np.sum((p - q) * (p - q))
            + np.sum(np.sin(p) * q))


def saddle_of_arrays(q, mode):
    p = argmin_of_arrays(lambda p: cost_of_arrays(p, q), np.array([1.0, 1.0]), mode)
    return np.sum(p * q) + np.sum(q ** 2)


def saddle_of_arrays_oracle(q):
    p = np.array([1.0, 1.0])
    for i in range(30):
        p = p - 0.1 * (2 * p - (p - q) + np.cos(p) * q)
    return np.sum(p * q) + np.sum(q ** 2)


@pytest.mark.parametrize("inner", ["r", "f"])
def test_saddle_of_arrays(inner):
    q = np.array([0.3, -0.4])
    assert_close(saddle_of_arrays(q, inner), saddle_of_arrays_oracle(q), rtol=1e-12)
    expected = np.array([(saddle_of_arrays_oracle(q + 1e-6 * e)
                          - saddle_of_arrays_oracle(q - 1e-6 * e)) / 2e-6 for e in np.eye(2)])
    np.testing.assert_allclose(s2sad.grad(saddle_of_arrays)(q, inner), expected, rtol=1e-6)
    np.testing.assert_allclose(s2sad.jacfwd(saddle_of_arrays)(q, inner), expected, rtol=1e-6)


def powered(x, n=2):
    return x ** n


def through_a_default(x):      # f's f_jvp calls powered's, whose tangent is keyword-only
    return np.sin(powered(x)) * x


def jvp_through_a_default(x):
    return s2sad.jvp(through_a_default, (x,), (1.0,))[1] * x


def jvp_through_a_default_oracle(x):
    return (np.cos(x * x) * 2 * x * x + np.sin(x * x)) * x


def test_a_callee_with_a_default():
    x = 0.7
    expected = fd_grad(jvp_through_a_default_oracle, (x,))
    assert_close(s2sad.grad(jvp_through_a_default)(x), expected, rtol=1e-7)
    assert_close(s2sad.jvp(jvp_through_a_default, (x,), (1.0,))[1], expected, rtol=1e-7)
