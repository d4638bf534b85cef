"""What a custom rule returns is checked against the function it is for, at each call: a
`custom_vjp`'s backward function one cotangent per positional argument (a tuple, each
None or of the argument's structure and shape), a `custom_jvp`'s rule a value and a
tangent of the value's structure and shape. Anything else is a CustomRuleError that names
the rule's file and line, what it returned and what was expected, in every mode and with
the numba backend; rules that fit give the derivatives of central differences.
"""
import dataclasses
import re

import numpy as np
import pytest

import s2sad
from numpy_cases import compare, directional, fd_array_grad, fd_hessian


def located(rule):
    """The start of the message of an error in `rule`: its file, line and name."""
    code = rule.__code__
    return re.escape(f"{code.co_filename}:{code.co_firstlineno}: {rule.__qualname__}, ")


# -- custom_vjp -----------------------------------------------------------------------------
@s2sad.custom_vjp
def affine(x, k):
    return x * k


def affine_fwd(x, k):
    return x * k, (x, k)


def fits(res, g):
    return (g * res[1], np.sum(g * res[0]))


def bare_array(res, g):
    return g * res[1]


def too_few(res, g):
    return (g * res[1],)


def too_many(res, g):
    return (g * res[1], np.sum(g * res[0]), 0.0)


def number_for_array(res, g):
    return (np.sum(g * res[1]), np.sum(g * res[0]))


def wrong_shape(res, g):
    return ((g * res[1])[:2], np.sum(g * res[0]))


def array_for_number(res, g):
    return (g * res[1], g * res[0])


def complex_for_real(res, g):
    return (g * res[1] + 0j, np.sum(g * res[0]))


def text(res, g):
    return ("g", None)


def zero_and_none(res, g):
    return (0.0, None)          # fits: zero for the array, no cotangent for k


def uses_affine(x, k):
    return np.sum(np.sin(affine(x, k))) + k * k


def affine_in_a_loop(x, k):
    for i in range(3):
        x = np.tanh(affine(x, k)) + 0.5
    return np.sum(x * x)


X, K = np.array([0.3, -0.8, 1.1]), 1.7
REFUSED = [
    (bare_array, r"returned an array of shape \(3,\) \(float64\) for a call with 2 positional "
                 r"arguments; it returns a tuple of 2 cotangents, one per argument"),
    (too_few, r"returned a tuple of 1 for a call with 2 positional arguments"),
    (too_many, r"returned a tuple of 3 for a call with 2 positional arguments"),
    (number_for_array, r"returned as the cotangent of argument 0 the number .* where an "
                       r"array of shape \(3,\) was expected \(a number there only as a "
                       r"zero\)\. Return each cotangent in the structure and shape of its "
                       r"argument"),
    (wrong_shape, r"returned as the cotangent of argument 0 an array of shape \(2,\) "
                  r"\(float64\) where an array of shape \(3,\) was expected"),
    (array_for_number, r"returned as the cotangent of argument 1 an array of shape \(3,\) "
                       r"\(float64\) where a number was expected"),
    (complex_for_real, r"returned as the cotangent of argument 0 an array of shape \(3,\) "
                       r"\(complex128\), complex, where an array of shape \(3,\) of real "
                       r"numbers was expected"),
    (text, r"returned as the cotangent of argument 0 str 'g' where an array of shape \(3,\) "
           r"was expected"),
]


@pytest.mark.parametrize("bwd, message", REFUSED, ids=[b.__name__ for b, _ in REFUSED])
@pytest.mark.parametrize("mode", ["grad", "value_and_grad", "vjp", "loop"])
def test_custom_vjp_results_that_do_not_fit_are_refused(bwd, message, mode):
    affine.defvjp(affine_fwd, bwd)
    with pytest.raises(s2sad.CustomRuleError, match=located(bwd) + "the backward function of "
                       "a custom_vjp, " + message):
        if mode == "grad":
            s2sad.grad(uses_affine, wrt=(0, 1))(X, K)
        elif mode == "value_and_grad":
            s2sad.value_and_grad(uses_affine, wrt=(0, 1))(X, K)
        elif mode == "vjp":
            s2sad.vjp(uses_affine, X, K)[1](1.0)
        else:
            s2sad.grad(affine_in_a_loop, wrt=(0, 1))(X, K)


@pytest.mark.parametrize("fn", [uses_affine, affine_in_a_loop])
def test_custom_vjp_results_that_fit(fn):
    affine.defvjp(affine_fwd, fits)
    got = s2sad.grad(fn, wrt=(0, 1))(X, K)
    value, again = s2sad.value_and_grad(fn, wrt=(0, 1))(X, K)
    assert value == pytest.approx(fn(X, K), rel=1e-14)
    for g in (got, again, s2sad.vjp(fn, X, K)[1](1.0)):
        for i, gi in enumerate(g):
            error = compare(gi, fd_array_grad(fn, (X, K), i), 1e-6, 1e-8, f"d/d arg{i}")
            assert error is None, error
    # second order: forward mode over the generated code, through fwd and bwd
    hessian = fd_hessian(lambda x: fn(x, K), X)
    error = compare(s2sad.hessian(fn)(X, K), hessian, 1e-5, 2e-5, "hessian")
    assert error is None, error


def test_a_zero_for_an_array_and_none_fit():
    affine.defvjp(affine_fwd, zero_and_none)
    gx, gk = s2sad.grad(uses_affine, wrt=(0, 1))(X, K)
    assert isinstance(gx, np.ndarray) and gx.shape == X.shape and not gx.any()
    assert gk == pytest.approx(2 * K)           # from `k * k` alone: None is no cotangent


def test_the_check_reads_only_the_shapes_of_arrays_in_loops():
    affine.defvjp(affine_fwd, fits)
    code = s2sad.source(affine_in_a_loop, wrt=(0, 1), at=(X, K))
    assert "_s2s_like(x)" in code and "_s2s_cotangents(fits(affine_residuals, " in code


# -- structures ----------------------------------------------------------------------------
@dataclasses.dataclass
class Line:
    w: float
    b: float


@s2sad.custom_vjp
def evaluate(p, pair, line, x):
    return p["w"] * x + p["b"] + pair[0] * pair[1] + line.w * x + line.b


def evaluate_fwd(p, pair, line, x):
    return evaluate(p, pair, line, x), (p, pair, line, x)


def structures_fit(res, g):
    p, pair, line, x = res
    s = np.sum(g)
    return ({"w": np.sum(g * x), "b": s}, (s * pair[1], s * pair[0]),
            Line(np.sum(g * x), s), g * (p["w"] + line.w))


def missing_key(res, g):
    out = structures_fit(res, g)
    return ({"w": out[0]["w"]},) + out[1:]


def short_pair(res, g):
    out = structures_fit(res, g)
    return (out[0], out[1][:1]) + out[2:]


def other_record(res, g):
    out = structures_fit(res, g)
    return out[:2] + ({"w": 0.0, "b": 0.0},) + out[3:]


def array_in_a_field(res, g):
    out = structures_fit(res, g)
    return out[:2] + (Line(g, 0.0),) + out[3:]


def uses_evaluate(p, pair, line, x):
    return np.sum(np.sin(evaluate(p, pair, line, x)))


P, PAIR, LINE = {"w": 0.4, "b": -0.3}, (1.2, -0.7), Line(0.9, 0.2)


@pytest.mark.parametrize("bwd, message", [
    (missing_key, r"argument 0 a dict of 1 where a dict with the keys \['b', 'w'\] was "
                  r"expected"),
    (short_pair, r"argument 1 a tuple of 1 where a tuple of 2 was expected"),
    (other_record, r"argument 2 a dict of 2 where a Line was expected"),
    (array_in_a_field, r"argument 2 at 'w': an array of shape \(3,\) \(float64\) where a "
                       r"number was expected")], ids=["dict", "tuple", "record", "field"])
def test_cotangents_of_structures_that_do_not_fit(bwd, message):
    evaluate.defvjp(evaluate_fwd, bwd)
    with pytest.raises(s2sad.CustomRuleError, match=located(bwd) + ".*" + message):
        s2sad.grad(uses_evaluate, wrt=(0, 1, 2, 3))(P, PAIR, LINE, X)


def test_cotangents_of_structures_that_fit():
    evaluate.defvjp(evaluate_fwd, structures_fit)
    gp, gpair, gline, gx = s2sad.grad(uses_evaluate, wrt=(0, 1, 2, 3))(P, PAIR, LINE, X)

    def at(w, b, a, c, lw, lb):
        return uses_evaluate({"w": w, "b": b}, (a, c), Line(lw, lb), X)
    flat = (P["w"], P["b"], *PAIR, LINE.w, LINE.b)
    expected = [fd_array_grad(at, flat, i) for i in range(6)]
    got = [gp["w"], gp["b"], *gpair, gline.w, gline.b]
    assert got == pytest.approx(expected, rel=1e-7)
    error = compare(gx, fd_array_grad(lambda x: uses_evaluate(P, PAIR, LINE, x), (X,), 0),
                    1e-6, 1e-8, "d/dx")
    assert error is None, error


# -- custom_jvp -----------------------------------------------------------------------------
@s2sad.custom_jvp
def cube(x):
    return x ** 3


def cube_fits(primals, tangents):
    (x,), (t,) = primals, tangents
    return x ** 3, 3 * x * x * t


def value_only(primals, tangents):
    return primals[0] ** 3


def three(primals, tangents):
    (x,), (t,) = primals, tangents
    return x ** 3, 3 * x * x * t, 0.0


def short_tangent(primals, tangents):
    (x,), (t,) = primals, tangents
    return x ** 3, (3 * x * x * t)[:2]


def summed_tangent(primals, tangents):
    (x,), (t,) = primals, tangents
    return x ** 3, np.sum(3 * x * x * t)


def no_tangent(primals, tangents):
    return primals[0] ** 3, None


def uses_cube(x):
    return np.sum(np.cos(cube(x)))


JVP_REFUSED = [
    (value_only, r"returned an array of shape \(3,\) \(float64\); it returns a pair \(value, "
                 r"tangent\): `return y, y_dot`"),
    (three, r"returned a tuple of 3; it returns a pair"),
    (short_tangent, r"returned as the tangent of its value an array of shape \(2,\) \(float64\) "
                    r"where an array of shape \(3,\) was expected"),
    (summed_tangent, r"returned as the tangent of its value the number .* where an array of "
                     r"shape \(3,\) was expected"),
    (no_tangent, r"returned as the tangent of its value None where a tangent was expected"),
]


@pytest.mark.parametrize("rule, message", JVP_REFUSED, ids=[r.__name__ for r, _ in JVP_REFUSED])
@pytest.mark.parametrize("mode", ["jvp", "jacfwd"])
def test_custom_jvp_results_that_do_not_fit_are_refused(rule, message, mode):
    cube.defjvp(rule)
    with pytest.raises(s2sad.CustomRuleError, match=located(rule) + "the rule of a custom_jvp, "
                       + message):
        if mode == "jvp":
            s2sad.jvp(uses_cube, (X,), (np.ones(3),))
        else:
            s2sad.jacfwd(uses_cube)(X)


def test_custom_jvp_results_that_fit():
    cube.defjvp(cube_fits)
    v = np.array([0.5, -1.0, 0.25])
    value, tangent = s2sad.jvp(uses_cube, (X,), (v,))
    assert value == pytest.approx(uses_cube(X), rel=1e-14)
    assert tangent == pytest.approx(float(directional(uses_cube, (X,), (v,))), rel=1e-7)
    error = compare(s2sad.jacfwd(uses_cube)(X), fd_array_grad(uses_cube, (X,), 0), 1e-6, 1e-8,
                    "jacfwd")
    assert error is None, error


# -- the numba backend ----------------------------------------------------------------------
def test_numba_backend():
    pytest.importorskip("numba", reason="backend='numba' needs Numba")
    affine.defvjp(affine_fwd, fits)
    got = s2sad.grad(uses_affine, wrt=(0, 1), backend="numba")(X, K)
    for i, gi in enumerate(got):
        error = compare(gi, fd_array_grad(uses_affine, (X, K), i), 1e-6, 1e-8, f"d/d arg{i}")
        assert error is None, error
    for bwd, message in [(too_few, r"returned .* for a call with 2 positional argument"),
                         (number_for_array, r"cotangent of argument 0 a number other than "
                                            r"zero where an array was expected"),
                         (wrong_shape, r"cotangent of argument 0 an array of another shape "
                                       r"than the argument's")]:
        affine.defvjp(affine_fwd, bwd)
        with pytest.raises(s2sad.CustomRuleError, match=located(bwd) + ".*" + message):
            s2sad.grad(uses_affine, wrt=(0, 1), backend="numba")(X, K)
    cube.defjvp(cube_fits)
    v = np.array([0.5, -1.0, 0.25])
    _, tangent = s2sad.jvp(uses_cube, (X,), (v,), backend="numba")
    assert tangent == pytest.approx(float(directional(uses_cube, (X,), (v,))), rel=1e-7)
    for rule, message in [(value_only, r"returned array\(float64, 1d, C\); it returns a pair"),
                          (short_tangent, r"tangent of its value an array of another shape")]:
        cube.defjvp(rule)
        with pytest.raises(s2sad.CustomRuleError, match=located(rule) + ".*" + message):
            s2sad.jvp(uses_cube, (X,), (v,), backend="numba")
