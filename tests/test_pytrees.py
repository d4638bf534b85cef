"""jacfwd, jacrev, hessian, jacfwd(grad(f)) and grad(grad(f)) on arguments and outputs
that are dicts, lists, tuples, named tuples and dataclasses (JAX's pytrees).

The layout is JAX's: the output's structure outside, the input's inside, and at each pair
of leaves a block of shape `out_leaf.shape + in_leaf.shape`. Every block is compared with
an oracle that does not use s2sad: central differences (fourth order, float64) of the
function for Jacobians, of a hand-written NumPy gradient for Hessians, or an analytic
formula. The structures are walked here with helpers of this file, not s2sad's.
"""
import collections
import dataclasses
import math

import numpy as np
import pytest

import s2sad

RTOL, ATOL = 1e-6, 1e-8


# -- functions and their hand-written gradients ------------------------------------------
def dict_loss(p):
    return np.sum(np.sin(p["w"]) * p["w"]) * p["b"] + p["b"] ** 3 + np.sum(p["w"]) ** 2


def dict_loss_grad(p):
    w, b = p["w"], p["b"]
    return {"w": (np.cos(w) * w + np.sin(w)) * b + 2 * np.sum(w),
            "b": np.sum(np.sin(w) * w) + 3 * b ** 2}


def scalars(p):
    return p["x"] ** 2 * p["y"] + math.exp(p["x"] * p["y"])


def scalars_grad(p):
    x, y = p["x"], p["y"]
    return {"x": 2 * x * y + y * math.exp(x * y), "y": x * x + x * math.exp(x * y)}


def listed(ws):
    return np.sum(ws[0] * ws[1][0]) * ws[1][1] + np.sum(ws[0] ** 3)


def listed_grad(ws):
    a, (c, s) = ws
    return [c * s + 3 * a ** 2, (a * s, float(np.sum(a * c)))]


X = np.array([0.5, -1.0, 2.0])


def nested(p):
    layer = p["layer"]
    return p["scale"] * np.sum(np.tanh(layer["W"] @ X + layer["b"]))


def nested_grad(p):
    W, b, scale = p["layer"]["W"], p["layer"]["b"], p["scale"]
    s = np.tanh(W @ X + b)
    g_u = scale * (1 - s * s)
    return {"layer": {"W": np.outer(g_u, X), "b": g_u}, "scale": float(np.sum(s))}


@dataclasses.dataclass
class Params:
    w: np.ndarray
    c: float
    n: int
    name: str


def record_loss(p):
    return np.sum(p.w ** 3) * p.c * p.n + p.c ** 2


def record_loss_grad(p):
    return Params(3 * p.w ** 2 * p.c * p.n, float(np.sum(p.w ** 3)) * p.n + 2 * p.c, None, None)


Pair = collections.namedtuple("Pair", "a b")


def pair_loss(q):
    return q.a ** 2 * math.sin(q.b) + q.b ** 3


def pair_loss_grad(q):
    return Pair(2 * q.a * math.sin(q.b), q.a ** 2 * math.cos(q.b) + 3 * q.b ** 2)


def floats_loss(xs):
    return xs[0] * xs[1] ** 2 + math.cos(xs[0])


def floats_loss_grad(xs):
    return [xs[1] ** 2 - math.sin(xs[0]), 2 * xs[0] * xs[1]]


def params():
    return Params(np.array([0.4, -0.7]), 1.3, 2, "p")


SCALAR_CASES = [
    (dict_loss, dict_loss_grad, lambda: {"w": np.array([0.3, -0.8, 1.1]), "b": 0.7}),
    (scalars, scalars_grad, lambda: {"x": 0.6, "y": -0.4}),
    (listed, listed_grad, lambda: [np.array([0.2, 0.9]), (np.array([-1.1, 0.4]), 0.8)]),
    (nested, nested_grad, lambda: {"layer": {"W": np.array([[0.1, -0.3, 0.2], [0.4, 0.1, -0.2]]),
                                             "b": np.array([0.05, -0.1])}, "scale": 1.3}),
    (record_loss, record_loss_grad, params),
    (pair_loss, pair_loss_grad, lambda: Pair(0.9, -0.6)),
    (floats_loss, floats_loss_grad, lambda: [0.8, -1.2]),
]
SCALAR_IDS = [f.__name__ for f, _, _ in SCALAR_CASES]


def features(p):
    return np.tanh(p["w"] * p["b"]) + p["w"] ** 2


def split(p):
    return p["w"] * p["b"], [np.sum(p["w"]) * p["b"] ** 2, p["b"]]


def of_list(xs):
    return np.array([xs[0] * xs[1][0], np.sum(xs[1] * xs[1]) * xs[0]])


def two_arguments(p, v):
    return (p["w"] * np.sum(v), np.sum(p["w"] * v) * p["b"])


def record_vector(p):
    return p.w * p.c + p.c ** 2


VECTOR_CASES = [
    (features, lambda: ({"w": np.array([0.3, -0.8, 1.1]), "b": 0.7},)),
    (split, lambda: ({"w": np.array([0.3, -0.8]), "b": 0.7},)),
    (of_list, lambda: ([0.6, np.array([0.2, -0.5, 1.5])],)),
    (record_vector, lambda: (params(),)),
    (dict_loss, lambda: ({"w": np.array([0.3, -0.8, 1.1]), "b": 0.7},)),
]
VECTOR_IDS = [f.__name__ for f, _ in VECTOR_CASES]


# -- an oracle for structures, without s2sad -------------------------------------------------
def _is_float(leaf):
    if isinstance(leaf, np.ndarray):
        return leaf.dtype.kind == "f"
    return isinstance(leaf, (float, np.floating))


def paths(x, prefix=()):
    """`(path, leaf)` for each float or float array in `x`, in order: the keys, indices
    and field names that lead to it. Ints, strings and None are left out."""
    if isinstance(x, dict):
        items = x.items()
    elif dataclasses.is_dataclass(x):
        items = [(f.name, getattr(x, f.name)) for f in dataclasses.fields(x)]
    elif isinstance(x, tuple) and hasattr(x, "_fields"):
        items = zip(x._fields, x)
    elif isinstance(x, (tuple, list)):
        items = enumerate(x)
    else:
        return [(prefix, x)] if _is_float(x) else []
    return [entry for key, item in items for entry in paths(item, prefix + (key,))]


def get(x, path):
    for key in path:
        x = x[key] if isinstance(x, (dict, list)) or isinstance(key, int) else getattr(x, key)
    return x


def replaced(x, path, value):
    """`x` with the leaf at `path` replaced by `value` (the containers copied)."""
    if not path:
        return value
    key, rest = path[0], path[1:]
    if isinstance(x, dict):
        return {**x, key: replaced(x[key], rest, value)}
    if dataclasses.is_dataclass(x):
        return dataclasses.replace(x, **{key: replaced(getattr(x, key), rest, value)})
    if hasattr(x, "_fields"):
        return x._replace(**{key: replaced(getattr(x, key), rest, value)})
    items = list(x)
    items[key] = replaced(x[key], rest, value)
    return type(x)(items)


def fd_jacobian(g, x):
    """`{(output path, input path): block}`: the Jacobian of `g` at `x` by fourth-order
    central differences in float64, one block per pair of float leaves."""
    outs = paths(g(x))
    blocks = {}
    for pi, leaf in paths(x):
        a = np.asarray(leaf, dtype=np.float64)
        columns = []
        for idx in np.ndindex(a.shape):
            h = 1e-4 * max(1.0, abs(a[idx]))

            def at(step):
                moved = a.copy()
                moved[idx] += step
                y = g(replaced(x, pi, moved if a.shape else float(moved)))
                return [np.asarray(v, dtype=np.float64) for _, v in paths(y)]
            p1, m1, p2, m2 = at(h), at(-h), at(2 * h), at(-2 * h)
            columns.append([(8 * (p1[o] - m1[o]) - (p2[o] - m2[o])) / (12 * h)
                            for o in range(len(outs))])
        for o, (po, y) in enumerate(outs):
            blocks[po, pi] = np.stack([c[o] for c in columns], axis=-1).reshape(
                np.shape(y) + a.shape)
    return blocks


def check(jac, expected, out, arg):
    """Every block of `jac` (s2sad's) against `expected` (an oracle's), with its shape,
    and the containers: `out`'s outside (if it is one), `arg`'s inside."""
    out_is_a_leaf = [path for path, _ in paths(out)] == [()]
    assert type(jac) is type(arg if out_is_a_leaf else out)
    for (po, pi), block in expected.items():
        row = get(jac, po)
        assert type(row) is type(arg), (po, type(row))
        got = get(row, pi)
        assert np.shape(got) == block.shape, (po, pi, np.shape(got), block.shape)
        np.testing.assert_allclose(got, block, rtol=RTOL, atol=ATOL, err_msg=f"{po} {pi}")
    assert len(expected) == len(paths(out)) * len(paths(arg))


# -- Jacobians ----------------------------------------------------------------------------
@pytest.mark.parametrize("f, point", VECTOR_CASES, ids=VECTOR_IDS)
@pytest.mark.parametrize("jacobian", [s2sad.jacfwd, s2sad.jacrev], ids=["jacfwd", "jacrev"])
def test_jacobian_of_structures(jacobian, f, point):
    (arg,) = point()
    expected = fd_jacobian(f, arg)
    check(jacobian(f)(arg), expected, f(arg), arg)


@pytest.mark.parametrize("jacobian", [s2sad.jacfwd, s2sad.jacrev], ids=["jacfwd", "jacrev"])
def test_jacobian_of_two_arguments_has_their_tuple_inside(jacobian):
    p, v = {"w": np.array([0.3, -0.8]), "b": 0.7}, np.array([1.5, -0.5])
    expected = fd_jacobian(lambda args: two_arguments(*args), (p, v))
    check(jacobian(two_arguments, wrt=(0, 1))(p, v), expected, two_arguments(p, v), (p, v))


@pytest.mark.parametrize("jacobian", [s2sad.jacfwd, s2sad.jacrev], ids=["jacfwd", "jacrev"])
def test_jacobian_gives_none_for_fields_without_a_derivative(jacobian):
    p = params()
    jac = jacobian(record_vector)(p)
    assert type(jac) is Params and jac.n is None and jac.name is None
    assert jac.w.shape == (2, 2) and jac.c.shape == (2,)


def test_jacobian_of_a_scalar_function_of_scalars_is_floats():
    p = {"x": 0.6, "y": -0.4}
    for jacobian in (s2sad.jacfwd, s2sad.jacrev):
        jac = jacobian(scalars)(p)
        assert type(jac["x"]) is float and type(jac["y"]) is float
        assert jac == pytest.approx(scalars_grad(p), rel=1e-12)


# -- Hessians -----------------------------------------------------------------------------
@pytest.mark.parametrize("f, gradient, point", SCALAR_CASES, ids=SCALAR_IDS)
def test_hessian_of_structures(f, gradient, point):
    """hessian(f)[k1][k2], of shape x[k1].shape + x[k2].shape, against central
    differences of the hand-written gradient."""
    arg = point()
    expected = fd_jacobian(gradient, arg)
    check(s2sad.hessian(f)(arg), expected, arg, arg)


@pytest.mark.parametrize("f, gradient, point", SCALAR_CASES, ids=SCALAR_IDS)
def test_jacfwd_of_grad_of_structures(f, gradient, point):
    arg = point()
    expected = fd_jacobian(gradient, arg)
    check(s2sad.jacfwd(s2sad.grad(f))(arg), expected, arg, arg)


def test_hessian_of_a_dict_is_the_analytic_one():
    def energy(p):
        return np.sum(p["w"] ** 2) * p["b"] + p["b"] ** 3
    w, b = np.array([1.0, 2.0]), 0.5
    H = s2sad.hessian(energy)({"w": w, "b": b})
    assert list(H) == ["w", "b"] and list(H["w"]) == ["w", "b"]
    np.testing.assert_allclose(H["w"]["w"], 2 * b * np.eye(2), rtol=1e-14)
    np.testing.assert_allclose(H["w"]["b"], 2 * w, rtol=1e-14)
    np.testing.assert_allclose(H["b"]["w"], 2 * w, rtol=1e-14)
    assert H["b"]["b"] == pytest.approx(6 * b, rel=1e-14) and type(H["b"]["b"]) is float


def test_hessian_gives_none_for_fields_without_a_derivative():
    H = s2sad.hessian(record_loss)(params())
    assert type(H) is Params and H.n is None and H.name is None
    assert type(H.w) is Params and H.w.n is None and H.c.name is None
    assert H.w.w.shape == (2, 2) and H.w.c.shape == (2,) and np.shape(H.c.c) == ()


def test_mixed_second_derivatives_with_respect_to_a_dict():
    """grad(grad(f, 0), 1) and jacfwd(grad(f), 1) where argument 1 is a dict:
    d/dp of df/dx, against the analytic derivative."""
    def mixed(x, p):
        return x ** 2 * np.sum(p["w"] ** 2) * p["b"]
    x, p = 1.5, {"w": np.array([0.3, -0.8]), "b": 0.7}
    expected = {"w": 4 * x * p["w"] * p["b"], "b": 2 * x * np.sum(p["w"] ** 2)}
    for second in (s2sad.grad(s2sad.grad(mixed), wrt=1), s2sad.jacfwd(s2sad.grad(mixed), wrt=1)):
        got = second(x, p)
        assert list(got) == ["w", "b"]
        np.testing.assert_allclose(got["w"], expected["w"], rtol=1e-12)
        assert got["b"] == pytest.approx(expected["b"], rel=1e-12)


# -- grad(grad(f)) needs a scalar inner gradient --------------------------------------------
@pytest.mark.parametrize("f, point", [(dict_loss, SCALAR_CASES[0][2]),
                                      (listed, SCALAR_CASES[2][2]),
                                      (record_loss, params)], ids=["dict", "list", "dataclass"])
def test_grad_of_grad_of_a_structure_says_what_to_use(f, point):
    with pytest.raises(s2sad.NonScalarOutputError) as info:
        s2sad.grad(s2sad.grad(f))(point())
    message = str(info.value)
    assert f"grad(grad({f.__name__}))" in message and type(point()).__name__ in message
    assert f"s2sad.hessian({f.__name__})" in message
    assert f"s2sad.jacfwd(s2sad.grad({f.__name__}))" in message
