"""Nested differentiation in every combination (issue #37): each inner derivative of
s2sad (grad, value_and_grad, jvp, vjp, jacfwd, jacrev, hvp, hessian; with has_aux=True, a
tuple wrt, keyword arguments to the function and a function's default values) called
inside a function differentiated by each outer one (grad, value_and_grad, jvp, jacfwd,
jacrev, hessian), on a closure over the outer argument and a function-valued parameter. Each
oracle is the function as written with the inner derivative in its closed form (never
by s2sad), differentiated by central differences (twice for the hessian).
"""
import numpy as np
import pytest

import s2sad
from oracle import assert_close, fd_grad
from test_nested_forward import second_difference

C = np.array([1.0, 0.5])
W = np.array([[1.0, -2.0], [0.5, 3.0]])
X0 = np.array([0.3, -0.7])


def vec(x, y):          # the function passed: R^2 -> R^2, its Jacobian not symmetric
    return np.sin(x * y) * x + x[0] * x[1] * y


def start(y):
    return X0 * y + 0.2


def inner_grad(y, f):
    g = s2sad.grad(lambda x: np.sum(f(x, y) * C))(start(y))
    return np.sum(g * C[::-1]) * y


def inner_value_and_grad(y, f):
    v, g = s2sad.value_and_grad(lambda x: np.sum(f(x, y) * C))(start(y))
    return v * np.sum(g * C[::-1])


def inner_jvp(y, f):
    v, t = s2sad.jvp(lambda x: f(x, y), (start(y),), (C * y,))
    return np.sum(v * t)


def inner_vjp(y, f):
    v, pullback = s2sad.vjp(lambda x: f(x, y), start(y))
    (x_bar,) = pullback(C * y)
    return np.sum(x_bar * v)


def inner_jacfwd(y, f):
    return np.sum(s2sad.jacfwd(lambda x: f(x, y))(start(y)) * W) * y


def inner_jacrev(y, f):
    return np.sum(s2sad.jacrev(lambda x: f(x, y))(start(y)) * W) * y


def inner_hvp(y, f):
    return np.sum(s2sad.hvp(lambda x: np.sum(f(x, y) * C))(start(y), C * y) * C[::-1])


def inner_hessian(y, f):
    return np.sum(s2sad.hessian(lambda x: np.sum(f(x, y) * C))(start(y)) * W) * y


# the forms of the calls beyond the plainest: has_aux, a tuple wrt, keyword arguments to
# the function, a function with a default value

def inner_grad_aux(y, f):
    g, aux = s2sad.grad(lambda x: (np.sum(f(x, y) * C), f(x, y) * y), has_aux=True)(start(y))
    return np.sum(g * C[::-1]) * y + np.sum(aux * W[0])


def inner_jvp_aux(y, f):
    v, t, aux = s2sad.jvp(lambda x: (f(x, y), np.sum(x) * y), (start(y),), (C * y,),
                          has_aux=True)
    return np.sum(v * t) * aux


def inner_vjp_aux(y, f):
    v, pullback, aux = s2sad.vjp(lambda x: (f(x, y), x * y), start(y), has_aux=True)
    (x_bar,) = pullback(C * y)
    return np.sum(x_bar * v * aux)


def inner_jacfwd_pair(y, f):
    a, b = s2sad.jacfwd(lambda x, z: f(x, y) * z, wrt=(0, 1))(start(y), y)
    return np.sum(a * W) + np.sum(b * C)


def inner_jacrev_pair(y, f):
    a, b = s2sad.jacrev(lambda x, z: f(x, y) * z, wrt=(0, 1))(start(y), y)
    return np.sum(a * W) + np.sum(b * C)


def inner_hessian_pair(y, f):
    H = s2sad.hessian(lambda x, z: np.sum(f(x, y) * C) * z, wrt=(0, 1))(start(y), y)
    return (np.sum(H[0][0] * W) + np.sum(H[0][1] * C) + np.sum(H[1][0] * C[::-1])
            + H[1][1])


def inner_keywords(y, f):
    v, t = s2sad.jvp(lambda x, z: f(x, y) * z, (start(y),), (C * y,), z=y)
    v_2, pullback = s2sad.vjp(lambda x, z: f(x, y) * z, start(y), z=y)
    (x_bar,) = pullback(C)
    jac = s2sad.jacfwd(lambda x, z: f(x, y) * z)(start(y), z=y)
    return np.sum(v * t) + np.sum(x_bar * C[::-1]) + np.sum(jac * W)


def vec_default(x, y, z=2.0):
    return vec(x, y) * z


def inner_defaults(y, f):
    v, t = s2sad.jvp(vec_default, (start(y), y), (C * y, None))
    v_2, pullback = s2sad.vjp(vec_default, start(y), y)
    (x_bar, _) = pullback(C)
    return np.sum(s2sad.jacrev(vec_default)(start(y), y) * W) * y + np.sum(v * t) + np.sum(
        x_bar * C[::-1])


# the closed forms: vec's Jacobian J[i, j] and second derivatives H[i, j, k] at x

def jacobian(x, y):
    return np.diag(np.cos(x * y) * y * x + np.sin(x * y)) + y * x[::-1][None, :]


def second(x, y):
    H = np.zeros((2, 2, 2))
    for i in range(2):
        H[i, i, i] = -np.sin(x[i] * y) * y * y * x[i] + 2 * np.cos(x[i] * y) * y
        H[i, 0, 1] += y
        H[i, 1, 0] += y
    return H


ORACLES = {
    "grad": lambda x, y: np.sum(C @ jacobian(x, y) * C[::-1]) * y,
    "value_and_grad": lambda x, y: np.sum(vec(x, y) * C) * np.sum(C @ jacobian(x, y)
                                                                  * C[::-1]),
    "jvp": lambda x, y: np.sum(vec(x, y) * (jacobian(x, y) @ (C * y))),
    "vjp": lambda x, y: np.sum(((C * y) @ jacobian(x, y)) * vec(x, y)),
    "jacfwd": lambda x, y: np.sum(jacobian(x, y) * W) * y,
    "jacrev": lambda x, y: np.sum(jacobian(x, y) * W) * y,
    "hvp": lambda x, y: np.sum(np.einsum("i,ijk->jk", C, second(x, y)) @ (C * y) * C[::-1]),
    "hessian": lambda x, y: np.sum(np.einsum("i,ijk->jk", C, second(x, y)) * W) * y,
    "grad_aux": lambda x, y: (np.sum(C @ jacobian(x, y) * C[::-1]) * y
                              + np.sum(vec(x, y) * y * W[0])),
    "jvp_aux": lambda x, y: np.sum(vec(x, y) * (jacobian(x, y) @ (C * y))) * np.sum(x) * y,
    "vjp_aux": lambda x, y: np.sum(((C * y) @ jacobian(x, y)) * vec(x, y) * x * y),
    "jacfwd_pair": lambda x, y: np.sum(jacobian(x, y) * y * W) + np.sum(vec(x, y) * C),
    "jacrev_pair": lambda x, y: np.sum(jacobian(x, y) * y * W) + np.sum(vec(x, y) * C),
    "hessian_pair": lambda x, y: (np.sum(y * np.einsum("i,ijk->jk", C, second(x, y)) * W)
                                  + np.sum(C @ jacobian(x, y) * C)
                                  + np.sum(C @ jacobian(x, y) * C[::-1])),
    "keywords": lambda x, y: (np.sum(vec(x, y) * y * (jacobian(x, y) @ (C * y)) * y)
                              + np.sum(C @ jacobian(x, y) * y * C[::-1])
                              + np.sum(jacobian(x, y) * y * W)),
    "defaults": lambda x, y: (np.sum(2 * jacobian(x, y) * W) * y
                              + np.sum(2 * vec(x, y) * (2 * jacobian(x, y) @ (C * y)))
                              + np.sum(2 * C @ jacobian(x, y) * C[::-1])),
}
INNER = {"grad": inner_grad, "value_and_grad": inner_value_and_grad, "jvp": inner_jvp,
         "vjp": inner_vjp, "jacfwd": inner_jacfwd, "jacrev": inner_jacrev,
         "hvp": inner_hvp, "hessian": inner_hessian, "grad_aux": inner_grad_aux,
         "jvp_aux": inner_jvp_aux, "vjp_aux": inner_vjp_aux,
         "jacfwd_pair": inner_jacfwd_pair, "jacrev_pair": inner_jacrev_pair,
         "hessian_pair": inner_hessian_pair, "keywords": inner_keywords,
         "defaults": inner_defaults}


def oracle(inner):
    return lambda y: ORACLES[inner](start(y), y)


OUTER = {
    "grad": lambda g, y: s2sad.grad(g)(y, vec),
    "value_and_grad": lambda g, y: s2sad.value_and_grad(g)(y, vec)[1],
    "jvp": lambda g, y: s2sad.jvp(g, (y, vec), (1.0, None))[1],
    "jacfwd": lambda g, y: s2sad.jacfwd(g)(y, vec),
    "jacrev": lambda g, y: s2sad.jacrev(g)(y, vec),
}


@pytest.mark.parametrize("inner", INNER)
def test_the_function_as_written(inner):
    for y in (0.8, -1.1):
        assert_close(INNER[inner](y, vec), oracle(inner)(y), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("inner", INNER)
@pytest.mark.parametrize("outer", OUTER)
def test_first_order(outer, inner):
    y = 0.8
    assert_close(OUTER[outer](INNER[inner], y), fd_grad(oracle(inner), (y,)),
                 rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("inner", INNER)
def test_hessian(inner):
    y = 0.8
    assert_close(s2sad.hessian(INNER[inner])(y, vec), second_difference(oracle(inner), y),
                 rtol=1e-6, atol=1e-7)


def chosen(y, f, kind):     # the branches not taken compile too
    if kind == "grad":
        return inner_grad(y, f)
    if kind == "value_and_grad":
        v, g = s2sad.value_and_grad(lambda x: np.sum(f(x, y) * C))(start(y))
        return v * np.sum(g * C[::-1])
    if kind == "jvp":
        v, t = s2sad.jvp(lambda x: f(x, y), (start(y),), (C * y,))
        return np.sum(v * t)
    if kind == "vjp":
        v, pullback = s2sad.vjp(lambda x: f(x, y), start(y))
        return np.sum(pullback(C * y)[0] * v)
    if kind == "jacfwd":
        return np.sum(s2sad.jacfwd(lambda x: f(x, y))(start(y)) * W) * y
    if kind == "jacrev":
        return np.sum(s2sad.jacrev(lambda x: f(x, y))(start(y)) * W) * y
    if kind == "hvp":
        return np.sum(s2sad.hvp(lambda x: np.sum(f(x, y) * C))(start(y), C * y) * C[::-1])
    if kind == "grad_aux":
        g, aux = s2sad.grad(lambda x: (np.sum(f(x, y) * C), f(x, y) * y),
                            has_aux=True)(start(y))
        return np.sum(g * C[::-1]) * y + np.sum(aux * W[0])
    if kind == "jvp_aux":
        v, t, aux = s2sad.jvp(lambda x: (f(x, y), np.sum(x) * y), (start(y),), (C * y,),
                              has_aux=True)
        return np.sum(v * t) * aux
    if kind == "vjp_aux":
        v, pullback_2, aux = s2sad.vjp(lambda x: (f(x, y), x * y), start(y), has_aux=True)
        return np.sum(pullback_2(C * y)[0] * v * aux)
    if kind == "jacfwd_pair":
        a, b = s2sad.jacfwd(lambda x, z: f(x, y) * z, wrt=(0, 1))(start(y), y)
        return np.sum(a * W) + np.sum(b * C)
    if kind == "jacrev_pair":
        a, b = s2sad.jacrev(lambda x, z: f(x, y) * z, wrt=(0, 1))(start(y), y)
        return np.sum(a * W) + np.sum(b * C)
    if kind == "hessian_pair":
        H = s2sad.hessian(lambda x, z: np.sum(f(x, y) * C) * z, wrt=(0, 1))(start(y), y)
        return (np.sum(H[0][0] * W) + np.sum(H[0][1] * C) + np.sum(H[1][0] * C[::-1])
                + H[1][1])
    if kind == "keywords":
        return inner_keywords(y, f)
    if kind == "defaults":
        return inner_defaults(y, f)
    return np.sum(s2sad.hessian(lambda x: np.sum(f(x, y) * C))(start(y)) * W) * y


@pytest.mark.parametrize("inner", INNER)
def test_one_branch_taken(inner):
    y = 0.8
    expected = fd_grad(oracle(inner), (y,))
    assert_close(chosen(y, vec, inner), oracle(inner)(y), rtol=1e-12, atol=1e-12)
    assert_close(s2sad.grad(chosen)(y, vec, inner), expected, rtol=1e-7, atol=1e-9)
    assert_close(s2sad.jvp(chosen, (y, vec, inner), (1.0, None, None))[1], expected,
                 rtol=1e-7, atol=1e-9)


def vjp_of_two(x):          # the pullback reads the primals as they were at vjp()
    z = x * 2.0
    v, pullback = s2sad.vjp(lambda a, b: a * b * x, z, 3.0)
    z = z + 100.0
    a_bar, b_bar = pullback(z)
    return a_bar + b_bar * x + v


def vjp_of_two_oracle(x):
    return 3 * x * (2 * x + 100) + (2 * x + 100) * 2 * x ** 3 + 6 * x * x


@pytest.mark.parametrize("g, expected", [(vjp_of_two, vjp_of_two_oracle)])
def test_more_reverse_inside(g, expected):
    x = 0.7
    assert_close(g(x), expected(x), rtol=1e-12)
    assert_close(s2sad.grad(g)(x), fd_grad(expected, (x,)), rtol=1e-7, atol=1e-9)
    assert_close(s2sad.jvp(g, (x,), (1.0,))[1], fd_grad(expected, (x,)), rtol=1e-7,
                 atol=1e-9)


def vjp_kept_whole(x):
    out = s2sad.vjp(np.sin, x)
    return out[0]


def pullback_passed(x):
    v, pullback = s2sad.vjp(lambda z: z * x, x)
    pullbacks = [pullback]
    return pullbacks[0](1.0)[0]


def pullback_called_twice_over(x):
    v, pullback = s2sad.vjp(lambda z: z * x, x)
    return pullback(1.0, 2.0)[0]


@pytest.mark.parametrize("g, message", [
    (vjp_kept_whole, r"is not the value of y, pullback = s2sad.vjp\(f, x, ...\)"),
    (pullback_passed, r"has its pullback pullback read other than called"),
    (pullback_called_twice_over, r"pullback called with other than one argument"),
])
def test_refusals(g, message):
    with pytest.raises(s2sad.UnsupportedSyntaxError, match=message) as info:
        s2sad.grad(g)(0.7)
    assert info.value.filename == __file__


def reverse_inside(y):
    v, pullback = s2sad.vjp(vec_default, start(y), y)
    return np.sum(pullback(C)[0] * v) + np.sum(s2sad.jacrev(vec)(start(y), y) * W)


def reverse_inside_oracle(y):
    x = start(y)
    return np.sum(2 * C @ jacobian(x, y) * 2 * vec(x, y)) + np.sum(jacobian(x, y) * W)


def test_the_guard_tests_the_users_names_alone():
    """The functions s2sad writes to stand for a vjp and a jacrev are its own: the guard
    of the derivative that calls them tests the user's names (vec_default, vec), not
    theirs, and still falls back when one of the user's changes."""
    global vec_default
    y = 0.8
    g = s2sad.grad(reverse_inside)
    assert_close(g(y), fd_grad(reverse_inside_oracle, (y,)), rtol=1e-7, atol=1e-9)
    guard = g.source.split("# reverse mode")[0]
    assert "vec_default is not" in guard
    assert "_s2s_gradient" not in guard and "_s2s_primal" not in guard
    assert "_s2s_globals" not in guard, guard
    kept = vec_default
    try:
        def vec_default(x, y, z=3.0):       # noqa: F811 - rebound: the guard falls back
            return vec(x, y) * z
        expected = fd_grad(reverse_inside, (y,))
        assert_close(g(y), expected, rtol=1e-6, atol=1e-8)
        assert abs(expected - fd_grad(reverse_inside_oracle, (y,))) > 0.1
    finally:
        vec_default = kept


@pytest.mark.parametrize("inner", ["vjp", "jacfwd", "jacrev", "hvp", "hessian"])
def test_what_the_numba_backend_refuses_names_the_call(inner):
    """The functions s2sad writes for these derivatives build lists and call Python
    functions, which Numba does not compile: refused at the user's line of the call."""
    with pytest.raises(s2sad.errors.NativeBackendError,
                       match=rf"cannot compile s2sad.{inner}\(\) called in a differentiated "
                             r"function") as info:
        s2sad.grad(INNER[inner], backend="numba")(0.8, vec)
    first = str(info.value).splitlines()[0]
    line = INNER[inner].__code__.co_firstlineno + 1
    assert first.startswith(f"{__file__}:{line}:"), first
