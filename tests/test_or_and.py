"""`a or b` and `a and b` as values: Python's value (`a` if it decides, else `b`), `b`
evaluated only when `a` does not decide, and the derivative of the operand that is the
value. Each derivative is compared with central finite differences (tests/oracle.py) or
an analytic formula, in every mode: grad, value_and_grad (and its value), vjp, jvp,
hessian and hvp, the numba backend and exported modules."""
import importlib.util
import math

import numpy as np
import pytest

import s2sad
from s2sad import pipeline
from oracle import assert_close, fd_grad


def second_difference(f, args, i, h=1e-3):
    """d2f/dargs[i]2 by the five-point central difference, error O(h**4)."""
    def at(s):
        moved = list(args)
        moved[i] = args[i] + s
        return f(*moved)
    return (-at(2 * h) + 16 * at(h) - 30 * at(0.0) + 16 * at(-h) - at(-2 * h)) / (12 * h * h)


def check_all_modes(f, args, expected=None):
    """grad, value_and_grad, vjp, jvp with each unit tangent of `f` of floats `args`,
    against `f` and finite differences of `f`, and the hessian's diagonal against second
    differences; or, where an operand is exactly 0.0 (a jump of `f`), against the
    `expected` gradient of the operations Python runs there."""
    wrt = tuple(range(len(args)))
    if expected is None:
        expected = fd_grad(f, args, wrt)
        for i in wrt:
            assert_close(s2sad.hessian(f, wrt=i)(*args), second_difference(f, args, i),
                         rtol=1e-5, atol=1e-6)
    assert_close(s2sad.grad(f, wrt=wrt)(*args), expected, rtol=1e-6)
    value, gradient = s2sad.value_and_grad(f, wrt=wrt)(*args)
    assert value == f(*args)
    assert_close(gradient, expected, rtol=1e-6)
    value, pullback = s2sad.vjp(f, *args)
    assert value == f(*args)
    assert_close(pullback(1.0), expected, rtol=1e-6)
    for i in wrt:
        value, tangent = s2sad.jvp(f, args, tuple(float(i == k) for k in wrt))
        assert value == f(*args)
        assert_close(tangent, expected[i], rtol=1e-6)


def default_scale(x, scale=0.0):
    scale = scale or 1.0
    return x * scale


def zero_or(x):
    return 0.0 or 2 * x


def and_value(x, y):
    return x and y


def chains(x, y):
    return (x or y or x * y) + (x and y and math.sin(x * y))


def mixed_chain(x, y):
    return (x * 0.0 and y) or 0.0 or x * y


def inside_expressions(x, y):
    z = math.sin(x) * (y or x) + (x and y * y)
    return z * (z or 1.0) - math.exp(min(x, 0.0) or y)


def in_a_loop(x, y):
    acc = 0.0
    for i in range(4):
        acc = acc or x * i
        acc = acc * (y and 0.5) + (max(x - i, 0.0) or y * i)
    return acc


def in_a_conditional_expression(x, y):
    return (x or y) if x > 1.0 else (y and x * x)


def in_a_comprehension(x, y):
    return sum([(v or x) * (y and v) for v in (0.0, x, y, 0.0)])


def walrus_in_the_right_operand(x):
    y = 2.0
    z = x or (y := x * 3.0)
    return z * y


def in_tests(x, y):
    n = 0
    while (x or 1.0) * n < 3.0:
        n += 1
    if x and y:
        return x * y * n
    return (x + y) * n


#: points where no operand is exactly 0.0: compared with finite differences
POINTS = {
    default_scale: [(1.5, 2.5)],
    zero_or: [(0.7,), (0.0,)],
    and_value: [(3.0, 2.0), (3.0, 0.0)],
    chains: [(0.7, 1.5)],
    mixed_chain: [(0.7, 1.5), (0.0, 0.0)],     # x * 0.0 is always falsy
    inside_expressions: [(0.7, 1.5), (-0.5, 0.8)],
    in_a_loop: [(0.7, 1.5), (2.5, 0.3), (1.2, 0.8)],
    in_a_conditional_expression: [(0.5, 2.0), (1.5, 2.0)],
    in_a_comprehension: [(0.7, 1.5), (0.0, 1.5)],
    in_tests: [(0.7, 1.5)],
}

_Z = math.sin(0.7) * 0.7     # inside_expressions' z at (0.7, 0.0)

#: points where an operand is 0.0, where `f` jumps: (point, the gradient of what
#: Python computes there)
JUMPS = {
    default_scale: [((1.5, 0.0), (1.0, 0.0))],                  # x * 1.0
    and_value: [((0.0, 2.0), (1.0, 0.0))],                      # x
    chains: [((0.0, 0.0), (1.0, 0.0)),                          # x * y + x
             ((0.0, 1.5), (1.0, 1.0)), ((1.5, 0.0), (1.0, 1.0))],   # y + x, x + y
    # z = sin(x) * y + x, z - exp(y); z = sin(x) * x + y * y, z * z - exp(y)
    inside_expressions: [((0.0, 1.5), (2.5, -math.exp(1.5))),
                         ((0.7, 0.0), (2 * _Z * (math.cos(0.7) * 0.7 + math.sin(0.7)), -1.0))],
    in_a_conditional_expression: [((0.5, 0.0), (0.0, 1.0))],    # y
    in_a_comprehension: [((0.7, 0.0), (0.0, 2.8))],             # 4 x y
    in_tests: [((0.0, 1.5), (3.0, 3.0))],                       # (x + y) * 3
}


@pytest.mark.parametrize("f", list(POINTS), ids=lambda f: f.__name__)
def test_or_and_values_in_every_mode(f):
    for args in POINTS[f]:
        check_all_modes(f, args)
    for args, expected in JUMPS.get(f, []):
        check_all_modes(f, args, expected)


def test_the_operand_that_is_the_value_has_the_derivative():
    # analytic: d/dscale (x * scale) = x where scale decides, 0 where 1.0 does
    assert s2sad.grad(default_scale, wrt=(0, 1))(1.5, 2.5) == (2.5, 1.5)
    assert s2sad.grad(default_scale, wrt=(0, 1))(1.5, 0.0) == (1.0, 0.0)
    assert s2sad.grad(zero_or)(0.7) == 2.0
    assert s2sad.grad(and_value, wrt=(0, 1))(3.0, 2.0) == (0.0, 1.0)
    assert s2sad.grad(and_value, wrt=(0, 1))(0.0, 2.0) == (1.0, 0.0)
    # x falsy: z = 3 x and y = 3 x, z * y = 9 x^2; else z * y = 2 x
    assert s2sad.grad(walrus_in_the_right_operand)(0.0) == 0.0
    assert s2sad.grad(walrus_in_the_right_operand)(1.0) == 2.0
    assert s2sad.hessian(walrus_in_the_right_operand)(0.0) == 18.0


def right_operand_raises(x):
    return (x or math.log(-1.0)) * x


def test_the_right_operand_is_evaluated_only_when_needed():
    # Python never evaluates math.log(-1.0) where x decides; where it does, it raises
    assert_close(s2sad.grad(right_operand_raises)(1.5), 3.0)
    assert s2sad.value_and_grad(right_operand_raises)(1.5) == (2.25, 3.0)
    assert s2sad.jvp(right_operand_raises, (1.5,), (1.0,)) == (2.25, 3.0)
    with pytest.raises(ValueError, match="math domain error"):
        s2sad.value_and_grad(right_operand_raises)(0.0)
    with pytest.raises(ValueError, match="math domain error"):
        s2sad.jvp(right_operand_raises, (0.0,), (1.0,))


def arrays_or(a, b):
    return np.sum((a or b) * a)


def test_arrays_in_or_raise_as_in_python():
    a, b = np.array([1.0, 2.0, 3.0]), np.array([0.5, 0.25, 2.0])
    with pytest.raises(ValueError, match="truth value of an array"):
        arrays_or(a, b)
    with pytest.raises(ValueError, match="truth value of an array"):
        s2sad.grad(arrays_or)(a, b)
    with pytest.raises(ValueError, match="truth value of an array"):
        s2sad.jvp(arrays_or, (a, b), (np.ones(3), np.ones(3)))
    # an array of one element has a truth value: (a or b) is b where a is [0.0]
    a1, b1 = np.array([0.0]), np.array([2.0])
    da, db = s2sad.grad(arrays_or, wrt=(0, 1))(a1, b1)
    np.testing.assert_allclose(da, b1)
    np.testing.assert_allclose(db, a1)


def test_the_desugared_code_reads_like_the_function():
    assert pipeline.stage_source(default_scale, "desugar") == (
        "def default_scale(x, scale=0.0):\n"
        "    if not scale:\n"
        "        scale = 1.0\n"
        "    return x * scale\n")
    assert pipeline.stage_source(chains, "desugar") == (
        "def chains(x, y):\n"
        "    t = x\n"
        "    if not t:\n"
        "        t = y\n"
        "        if not t:\n"
        "            t = x * y\n"
        "    t_1 = x\n"
        "    if t_1:\n"
        "        t_1 = y\n"
        "        if t_1:\n"
        "            t_1 = math.sin(x * y)\n"
        "    return t + t_1\n")


def booleans(x, y):
    ok = x > 0.0 and y > 0.0 or not x
    return x * y if ok else y


def test_and_or_of_comparisons_stay_as_they_are():
    assert "ok = x > 0.0 and y > 0.0 or not x" in pipeline.stage_source(booleans, "desugar")
    check_all_modes(booleans, (0.7, 1.5))


MODULE = '''\
import math


def model(x, scale):
    scale = scale or 1.0
    return x * scale + (x and math.sin(x))
'''


def _import(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("backend", ["python", "numba"])
def test_numba_backend_and_export(tmp_path, backend):
    if backend == "numba":
        pytest.importorskip("numba", reason="backend='numba' needs Numba")
    (tmp_path / "or_model.py").write_text(MODULE)
    model = _import(tmp_path / "or_model.py", "or_model").model
    text = s2sad.export(model, tmp_path / f"or_{backend}.py", wrt=(0, 1), args=(1.5, 0.0),
                        backend=backend)
    assert "import s2sad" not in text
    exported = _import(tmp_path / f"or_{backend}.py", f"or_{backend}")
    jump = ((1.5, 0.0), (1.0 + math.cos(1.5), 0.0))      # x * 1.0 + sin(x)
    for args, expected in [((1.5, 2.5), None), ((0.0, 2.5), None), jump]:
        expected = expected or fd_grad(model, args, (0, 1))
        native = s2sad.grad(model, wrt=(0, 1), backend=backend)(*args)
        assert_close(native, expected, rtol=1e-6)
        assert_close(exported.model_grad(*args), expected, rtol=1e-6)
        value, gradient = exported.model_value_and_grad(*args)
        assert value == model(*args)
        assert_close(gradient, expected, rtol=1e-6)
    assert_close(s2sad.hvp(model, backend=backend)(1.5, 0.0, 1.0), -math.sin(1.5))
