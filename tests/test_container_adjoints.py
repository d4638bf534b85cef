"""Adjoints of lists, tuples, dicts, named tuples and dataclasses add leaf by leaf (issue
#34): a container read in several places (two loops over it, two helpers it is passed to,
a comprehension and a loop, a NumPy function and an index) gets one gradient of its own
structure, whose leaves are the sums of the contributions. Before, list adjoints were
joined with `+` (`[2, 4, 1, 1]` for `[3, 5]`), dict adjoints raised `TypeError`, and a list
read by NumPy got an array gradient.

Every derivative is compared with central differences (fourth order, float64) of the
function over the float leaves of its arguments (test_pytrees' oracle), or with an
analytic formula; the structure of each gradient is walked here, without s2sad.
"""
import collections
import copy
import dataclasses
import math
import pickle
import subprocess
import sys

import numpy as np
import pytest

import s2sad
from s2sad import cli
from s2sad.errors import InternalError
from s2sad.rules import registry, runtime

from test_pytrees import fd_jacobian, get, paths, replaced

RTOL, ATOL = 1e-6, 1e-8


# -- functions --------------------------------------------------------------------------
def twice(params):
    """The issue's example: two loops over one list."""
    s = 0.0
    for p in params:
        s = s + p * p
    for p in params:
        s = s + p
    return s


X = np.array([0.3, -0.2, 0.5])


def predict(params, x):
    h = x
    for W, b in params:
        h = np.tanh(W @ h + b)
    return np.sum(h)


def weight_decay(params):
    s = 0.0
    for W, b in params:
        s = s + np.sum(W * W)
    return s


def regularized(params):
    """A list of (W, b) layers passed to two helpers that each loop over it."""
    return predict(params, X) + 0.1 * weight_decay(params)


def by_key(d):
    return d["w"] * d["b"] + np.sum(d["v"] ** 2) * d["w"]


def by_items(d):
    s = 0.0
    for k, v in d.items():
        s = s + np.sum(np.sin(v))
    return s


def dict_two_helpers(d):
    return by_key(d) + by_items(d) + d["b"]


def dict_values_and_keys(d):
    s = 0.0
    for v in d.values():
        s = s + np.sum(v * v)
    for k in d:
        s = s + np.sum(np.cos(d[k]))
    return s * d["w"]


def pair(t):
    return t[0] * math.sin(t[1])


def dict_of_tuples(d):
    a, b = d["p"]
    return a * d["q"][1] + pair(d["p"]) + pair(d["q"]) + pair(d["p"]) * b


Point = collections.namedtuple("Point", "a b")


def point_energy(q):
    return q.a ** 2 + math.sin(q.b)


def named_twice(q):
    return point_energy(q) + q.a * q.b + point_energy(q) * q[1]


@dataclasses.dataclass
class Layer:
    W: np.ndarray
    c: float


def layer_scale(p):
    return np.sum(p.W * p.c)


def layer_norm(p):
    return np.sum(np.tanh(p.W)) + p.c ** 2


def dataclass_two_helpers(p):
    return layer_scale(p) + layer_norm(p) * p.c


def comprehension_and_loop(xs):
    s = sum([x * x for x in xs])
    for x in xs:
        s = s + math.sin(x)
    return s


def nested_lists(xss):
    s = 0.0
    for xs in xss:
        for x in xs:
            s = s + x * x
    for xs in xss:
        s = s + xs[0] * np.sum(xs)     # NumPy reads the inner list as an array
    return s


def tuple_of_arrays(t):
    a, b = t
    return np.sum(a * b) + np.sum(t[0] ** 2) + np.sum(np.stack(t) ** 3)


def appended(xs):
    return np.sum(np.append(xs, 1.0) ** 2)


def appended_and_indexed(xs):
    return np.sum(np.append(xs, 1.0) ** 2) + xs[0] * xs[1]


def concatenated(xs):
    return np.sum(np.concatenate(xs) ** 2) + np.sum(xs[0])


def stacked(xs):
    return np.sum(np.stack(xs) ** 3) + np.sum(xs[1] * xs[0])


def numpy_of_list(xs):
    return np.sum(np.exp(xs)) + np.sum(xs) * xs[0]


def elements_and_helper(xs):
    return xs[0] * xs[1] + twice(xs)


def zipped_with_itself(xs):
    s = 0.0
    for a, b in zip(xs, xs):
        s = s + a * b
    for i, a in enumerate(xs):
        s = s + a * xs[i] * i
    return s


def list_of_dicts(ps):
    s = 0.0
    for p in ps:
        s = s + p["a"] * p["b"]
    for p in ps:
        s = s + math.exp(p["a"])
    return s


def two_arguments(xs, d):
    return twice(xs) * d["w"] + by_items(d) + xs[0] * np.sum(d["v"])


RNG = np.random.default_rng(34)

#: (function, arguments): every argument is differentiated.
CASES = [
    (twice, ([1.0, 2.0],)),
    (regularized, ([(RNG.normal(size=(3, 3)), RNG.normal(size=3)) for _ in range(2)],)),
    (dict_two_helpers, ({"w": 0.7, "b": -1.2, "v": RNG.normal(size=3)},)),
    (dict_values_and_keys, ({"w": 0.7, "v": RNG.normal(size=2)},)),
    (dict_of_tuples, ({"p": (1.5, 0.4), "q": (0.5, -1.0)},)),
    (named_twice, (Point(0.7, 1.2),)),
    (dataclass_two_helpers, (Layer(RNG.normal(size=(2, 2)), 0.8),)),
    (comprehension_and_loop, ([0.5, 1.0, -2.0],)),
    (nested_lists, ([[0.5, 1.0], [2.0, -3.0, 1.0]],)),
    (tuple_of_arrays, ((RNG.normal(size=3), RNG.normal(size=3)),)),
    (appended, ([1.0, -2.0],)),
    (appended_and_indexed, ([1.0, -2.0],)),
    (concatenated, ([RNG.normal(size=2), RNG.normal(size=3)],)),
    (stacked, ([RNG.normal(size=2), RNG.normal(size=2)],)),
    (numpy_of_list, ([0.3, -0.4, 0.9],)),
    (elements_and_helper, ([1.0, 2.0],)),
    (zipped_with_itself, ([1.0, 2.0, -0.5],)),
    (list_of_dicts, ([{"a": 1.0, "b": 2.0}, {"a": -0.3, "b": 0.5}],)),
    (two_arguments, ([1.0, 2.0], {"w": 0.7, "v": RNG.normal(size=3)})),
]
IDS = [f.__name__ for f, _ in CASES]
CASE = {f.__name__: (f, args) for f, args in CASES}


# -- an oracle without s2sad --------------------------------------------------------------
def fd_gradient(f, args):
    """{(argument index, leaf path): d f / d leaf} by central differences."""
    blocks = fd_jacobian(lambda a: f(*a), tuple(args))
    return {po_pi[1]: block for po_pi, block in blocks.items()}


def assert_structure(g, x, where="gradient"):
    """`g` has the structure of `x`: the same container types (list, tuple, named tuple,
    dict with the same keys, dataclass), the same lengths, arrays of `x`'s shapes, numbers
    for numbers, None for fields without a derivative (ints, strings)."""
    if isinstance(x, dict):
        assert type(g) is dict and list(g) == list(x), (where, g)
        for k in x:
            assert_structure(g[k], x[k], f"{where}[{k!r}]")
    elif dataclasses.is_dataclass(x):
        assert type(g) is type(x), (where, g)
        for f in dataclasses.fields(x):
            assert_structure(getattr(g, f.name), getattr(x, f.name), f"{where}.{f.name}")
    elif isinstance(x, (list, tuple)):
        assert type(g) is type(x) and len(g) == len(x), (where, g)
        for k, (u, v) in enumerate(zip(g, x)):
            assert_structure(u, v, f"{where}[{k}]")
    elif isinstance(x, np.ndarray):
        assert isinstance(g, np.ndarray) and g.shape == x.shape, (where, g)
    elif isinstance(x, float):
        assert isinstance(g, (float, np.floating)) and np.ndim(g) == 0, (where, g)
    else:
        assert g is None, (where, g)


def check_gradient(f, args, grads):
    """`grads` (one per argument) against central differences, structure and values."""
    assert isinstance(grads, tuple) and len(grads) == len(args)
    for i, (g, x) in enumerate(zip(grads, args)):
        assert_structure(g, x, f"gradient of argument {i}")
    for path, expected in fd_gradient(f, args).items():
        np.testing.assert_allclose(get(grads, path), expected, rtol=RTOL, atol=ATOL,
                                   err_msg=str(path))


def direction(args, seed):
    """Arguments of the structure of `args` with random leaves: a tangent."""
    rng = np.random.default_rng(seed)
    out = tuple(args)
    for path, leaf in paths(out):
        value = rng.normal(size=np.shape(leaf))
        out = replaced(out, path, value if np.shape(leaf) else float(value))
    return out


def moved(args, v, h):
    out = tuple(args)
    for path, leaf in paths(out):
        step = np.asarray(leaf) + h * np.asarray(get(v, path))
        out = replaced(out, path, step if np.shape(leaf) else float(step))
    return out


def fd_directional(f, args, v, h=1e-4):
    """d/dh f(args + h v) at 0, by a fourth-order central difference."""
    at = [f(*moved(args, v, s * h)) for s in (1, -1, 2, -2)]
    return (8 * (at[0] - at[1]) - (at[2] - at[3])) / (12 * h)


def leaf_dot(a, b):
    return sum(float(np.sum(np.asarray(get(a, path)) * np.asarray(leaf)))
               for path, leaf in paths(b))


# -- reverse mode ------------------------------------------------------------------------
def assert_unchanged(args, before):
    """Derivative code never mutates the user's data."""
    assert [p for p, _ in paths(tuple(args))] == [p for p, _ in paths(tuple(before))]
    for (path, leaf), (_, old) in zip(paths(tuple(args)), paths(tuple(before))):
        np.testing.assert_array_equal(leaf, old, err_msg=str(path))


@pytest.mark.parametrize("f, args", CASES, ids=IDS)
def test_grad(f, args):
    before = copy.deepcopy(args)
    check_gradient(f, args, s2sad.grad(f, wrt=tuple(range(len(args))))(*args))
    assert_unchanged(args, before)


@pytest.mark.parametrize("f, args", CASES, ids=IDS)
def test_value_and_grad(f, args):
    value, grads = s2sad.value_and_grad(f, wrt=tuple(range(len(args))))(*args)
    assert value == pytest.approx(f(*args), rel=1e-12)
    check_gradient(f, args, grads)


@pytest.mark.parametrize("f, args", CASES, ids=IDS)
def test_vjp(f, args):
    before = copy.deepcopy(args)
    value, pullback = s2sad.vjp(f, *args)
    assert value == pytest.approx(f(*args), rel=1e-12)
    check_gradient(f, args, pullback(1.0))
    assert_unchanged(args, before)


def test_the_issue_example_is_the_analytic_gradient():
    # d/dp of sum(p * p + p) is 2 p + 1, a list of the list's length
    assert s2sad.grad(twice)([1.0, 2.0]) == [3.0, 5.0]
    assert s2sad.grad(twice)((1.0, 2.0, -4.0)) == (3.0, 5.0, -7.0)


def test_regularized_training_sees_both_helpers():
    """The gradient of predict + weight decay is the sum of the two gradients (the
    helpers' own gradients, each against central differences), layer by layer."""
    (params,) = CASE["regularized"][1]
    got = s2sad.grad(regularized)(params)
    decay = s2sad.grad(weight_decay)(params)
    fit = s2sad.grad(predict)(params, X)
    check_gradient(weight_decay, (params,), (decay,))
    check_gradient(lambda p: predict(p, X), (params,), (fit,))
    assert len(got) == len(params) == 2
    for (W, b), (dW, db), (fW, fb) in zip(got, decay, fit):
        np.testing.assert_allclose(W, fW + 0.1 * dW, rtol=1e-12)
        np.testing.assert_allclose(b, fb + 0.1 * db, rtol=1e-12)


def test_generated_code_adds_container_adjoints_with_the_one_rule():
    g = s2sad.grad(twice)
    g([1.0, 2.0])
    text = g.source
    assert "params.__class__ is not list" in text          # specialised on lists
    assert "params_bar = _s2s_add(" in text                 # not `+`, which joins lists
    assert text.rstrip().endswith("return _s2s_from_array(params_bar, params)")


# -- forward mode and second derivatives --------------------------------------------------
@pytest.mark.parametrize("f, args", CASES, ids=IDS)
def test_jvp_with_tangent_containers(f, args):
    v = direction(args, 1)
    value, tangent = s2sad.jvp(f, args, v)
    assert value == pytest.approx(f(*args), rel=1e-12)
    assert tangent == pytest.approx(fd_directional(f, args, v), rel=1e-6, abs=1e-8)


def twice_grad(params):
    """The hand-written gradient of `twice`."""
    return type(params)(2 * p + 1 for p in params)


def dict_energy(d):
    return by_items(d) + by_key(d)


def dict_energy_grad(d):
    """The hand-written gradient of `dict_energy`."""
    w, b, v = d["w"], d["b"], d["v"]
    return {"w": b + np.sum(v ** 2) + math.cos(w), "b": w + math.cos(b),
            "v": 2 * v * w + np.cos(v)}


@pytest.mark.parametrize("f, gradient, point", [
    (twice, twice_grad, [1.0, -2.0, 0.5]),
    (dict_energy, dict_energy_grad, {"w": 0.7, "b": -1.2, "v": np.array([0.3, -0.4])})],
    ids=["list", "dict"])
def test_hvp_and_hessian(f, gradient, point):
    """hvp(f)(x, v) and hessian(f)(x) against central differences of the hand-written
    gradient (along v, and leaf by leaf)."""
    check_gradient(f, (point,), (gradient(point),))      # the hand-written gradient is right
    v = direction((point,), 2)[0]
    hv = s2sad.hvp(f)(point, v)
    assert_structure(hv, point, "hvp")
    h = 1e-4
    grads = [gradient(moved((point,), (v,), s * h)[0]) for s in (1, -1, 2, -2)]
    for path, _ in paths(point):
        at = [np.asarray(get(g, path)) for g in grads]
        expected = (8 * (at[0] - at[1]) - (at[2] - at[3])) / (12 * h)
        np.testing.assert_allclose(get(hv, path), expected, rtol=1e-6, atol=1e-8)
    H = s2sad.hessian(f)(point)
    blocks = fd_jacobian(gradient, point)
    for (row, column), block in blocks.items():
        np.testing.assert_allclose(get(get(H, row), column), block, rtol=1e-6, atol=1e-8)


def polar(r, theta):
    return (r * math.cos(theta), r * math.sin(theta))


def through_polar(r, theta):
    x, y = polar(r, theta)
    return x * y + x


@pytest.fixture
def scratch():
    """Primitives a test gives rules to, forgotten afterwards (the suite checks that each
    registered rule has a check of its own)."""
    made = []
    yield made
    for prim in made:
        registry.PRIMITIVES.pop(prim, None)
    registry.bump()


def test_tangents_of_a_tuple_valued_primitive_add_part_by_part(scratch):
    """A primitive of the user's that returns a tuple, with a forward rule per argument:
    the two tangents of its result add entry by entry (`+` joined them: a tuple of
    four, whose first two entries are the tangent along r alone)."""
    scratch.append(polar)
    s2sad.defjvp(polar, "r, theta", "(t * cos(theta), t * sin(theta))",
                 "(-r * t * sin(theta), r * t * cos(theta))",
                 namespace={"cos": math.cos, "sin": math.sin})
    args, v = (1.3, 0.4), (0.5, -0.7)
    value, tangent = s2sad.jvp(through_polar, args, v)
    assert value == pytest.approx(through_polar(*args), rel=1e-12)
    assert tangent == pytest.approx(fd_directional(through_polar, args, v), rel=1e-8)


def spread_product(a, b):
    return sum(a) * sum(b)


def squared_sum(xs):
    return spread_product(xs, xs)


def test_one_list_given_twice_to_a_rule_gets_both_contributions(scratch):
    """Two equal contributions of one statement to one name are doubled (`2 * g * x` for
    `x * x`), but not a list (`2 * [g, g]` repeats it): they add with `_s2s_add`."""
    scratch.append(spread_product)
    s2sad.defvjp(spread_product, "a, b", "_s2s_test_each(g * sum(b), a)",
                 "_s2s_test_each(g * sum(a), b)",
                 namespace={"_s2s_test_each": lambda g, a: [g] * len(a), "sum": sum})
    check_gradient(squared_sum, ([1.0, 2.0, -0.5],),
                   (s2sad.grad(squared_sum)([1.0, 2.0, -0.5]),))


# -- the rule itself ----------------------------------------------------------------------
def test_add_adds_leaf_by_leaf():
    a = {"w": [1.0, np.array([1.0, 2.0])], "b": (0.5, None)}
    b = {"w": [0.0, np.array([3.0, 4.0])], "b": (1.5, 2.0)}
    out = runtime.add(a, b)
    assert list(out) == ["w", "b"] and type(out["w"]) is list and type(out["b"]) is tuple
    assert out["w"][0] == 1.0 and out["b"] == (2.0, 2.0)
    np.testing.assert_array_equal(out["w"][1], [4.0, 6.0])
    assert runtime.add(0.0, a) is a and runtime.add(a, None) is a      # zeros
    assert runtime.add(Point(1.0, 2.0), Point(3.0, None)) == Point(4.0, 2.0)
    layer = runtime.add(Layer(np.ones(2), 1.0), Layer(np.ones(2), 2.0))
    assert type(layer) is Layer and layer.c == 3.0


def test_add_reads_an_array_as_the_entries_of_a_list():
    """NumPy reads a list as an array, and the adjoint it gives is an array: its rows
    are the entries' adjoints."""
    out = runtime.add([1.0, 2.0], np.array([10.0, 20.0]))
    assert out == [11.0, 22.0] and all(type(v) is float for v in out)
    out = runtime.add(np.array([[1.0, 1.0], [2.0, 2.0]]), [np.zeros(2), np.ones(2)])
    assert type(out) is list
    np.testing.assert_array_equal(out[1], [3.0, 3.0])


@pytest.mark.parametrize("a, b", [
    ([1.0, 2.0], [1.0, 2.0, 3.0]),
    ((1.0, 2.0), np.array([1.0, 2.0, 3.0])),
    ({"a": 1.0}, {"b": 1.0}),
    ({"a": 1.0}, [1.0]),
    ([{"a": 1.0}], [{"b": 1.0, "c": 2.0}]),
], ids=["lengths", "array_length", "keys", "dict_and_list", "nested_keys"])
def test_add_refuses_structures_that_differ(a, b):
    """Adjoints of one value have its structure: two that differ are a bug of s2sad's,
    refused rather than cut to the shorter one (as zip would)."""
    with pytest.raises(InternalError, match="different structures"):
        runtime.add(a, b)
    with pytest.raises(InternalError, match="different structures"):
        runtime.add(b, a)


def test_add_of_a_dicts_versions_adds_at_the_keys_each_has():
    """A dict filled as the function runs has adjoints of its versions, each with the
    keys it had: the earlier one adds nothing at the keys added later."""
    assert runtime.add({"a": 1.0}, {"a": 2.0, "b": 3.0}) == {"a": 3.0, "b": 3.0}
    assert runtime.add([{"a": 1.0, "b": 3.0}], [{"a": 2.0}]) == [{"a": 3.0, "b": 3.0}]


def test_from_array_gives_the_structure():
    assert runtime.from_array(np.array([1.0, 2.0]), (3.0, 4.0)) == (1.0, 2.0)
    assert runtime.from_array(2.0, [0.0, [1.0, 1.0]]) == [2.0, [2.0, 2.0]]   # uniform
    assert runtime.from_array(np.array([1.0, 2.0]), Point(0.0, 0)) == Point(1.0, None)
    with pytest.raises(InternalError, match="different structures"):
        runtime.from_array(np.array([1.0, 2.0]), [1.0, 2.0, 3.0])


# -- the numba backend has no containers ---------------------------------------------------
@pytest.mark.parametrize("f, args", [
    CASE["twice"], CASE["dict_two_helpers"], CASE["named_twice"],
    CASE["dataclass_two_helpers"], CASE["tuple_of_arrays"]],
    ids=["list", "dict", "named_tuple", "dataclass", "tuple"])
def test_numba_refuses_a_container_argument_at_its_line(f, args):
    pytest.importorskip("numba", reason="backend='numba' needs Numba")
    line = f.__code__.co_firstlineno
    name = list(f.__code__.co_varnames)[0]
    where = rf"test_container_adjoints\.py:{line}: .* {name} of {f.__name__}\(\) is a"
    with pytest.raises(s2sad.NativeBackendError, match=where):
        s2sad.grad(f, backend="numba")(*args)
    with pytest.raises(s2sad.NativeBackendError, match=where):
        s2sad.value_and_grad(f, backend="numba")(*args)
    if f is not dataclass_two_helpers and f is not named_twice:
        # (jvp and hvp see the type of the argument as grad's Python path does)
        with pytest.raises(s2sad.NativeBackendError, match=where):
            s2sad.jvp(f, args, direction(args, 3), backend="numba")
        with pytest.raises(s2sad.NativeBackendError, match=where):
            s2sad.hvp(f, backend="numba")(*args, direction(args, 3)[0])


# -- export --------------------------------------------------------------------------------
MODEL = '''\
import math

import numpy as np


def twice(params):
    s = 0.0
    for p in params:
        s = s + p * p
    for p in params:
        s = s + p
    return s


def by_items(d):
    s = 0.0
    for k, v in d.items():
        s = s + np.sum(np.sin(v))
    return s


def dict_loss(d):
    return by_items(d) + d["w"] * np.sum(d["v"] ** 2) + by_items(d)


def list_of_layers(params):
    h = np.array([0.3, -0.2])
    for W, b in params:
        h = np.tanh(W @ h + b)
    s = np.sum(h)
    for W, b in params:
        s = s + 0.1 * np.sum(W * W)
    return s


def numpy_of_list(xs):
    return np.sum(np.append(xs, 1.0) ** 2) + np.sum(np.exp(xs)) * xs[0]
'''

#: Imports each exported module where importing s2sad fails, and calls its gradient at
#: the arguments (pickled: lists, tuples, dicts and arrays) of jobs.pickle; pickles the
#: gradients to grads.pickle.
CHECKER = """\
import importlib.abc, importlib.util, pickle, sys


class NoS2SAD(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "s2sad" or name.startswith("s2sad."):
            raise ImportError(name)
        return None


sys.meta_path.insert(0, NoS2SAD())
with open("jobs.pickle", "rb") as f:
    jobs = pickle.load(f)
out = {}
for name, (path, args) in jobs.items():
    spec = importlib.util.spec_from_file_location(name + "_derivatives", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out[name] = getattr(module, name + "_grad")(*args)
out["s2sad modules"] = sorted(m for m in sys.modules if m.split(".")[0] == "s2sad")
with open("grads.pickle", "wb") as f:
    pickle.dump(out, f)
"""

EXPORTED = {
    "twice": ((1.0, 2.0, -0.5),),
    "dict_loss": ({"w": 0.7, "v": np.array([0.3, -0.4])},),
    "list_of_layers": ([(RNG.normal(size=(2, 2)), RNG.normal(size=2)) for _ in range(2)],),
    "numpy_of_list": ([0.3, -0.4, 0.9],),
}


def test_exported_gradients_keep_the_structure(tmp_path):
    """s2sad.export's modules (which carry copies of `add` and `from_array`) give
    gradients of the arguments' structure, run where s2sad cannot be imported."""
    (tmp_path / "cmodel.py").write_text(MODEL)
    jobs = {}
    for name, args in EXPORTED.items():
        fn = cli.load(f"{tmp_path / 'cmodel.py'}:{name}")
        path = tmp_path / f"{name}_derivatives.py"
        text = s2sad.export(fn, path, args=args, kind="grad")
        assert "import s2sad" not in text and "_s2s_add" in text
        jobs[name] = (str(path), args)
    (tmp_path / "jobs.pickle").write_bytes(pickle.dumps(jobs))
    run = subprocess.run([sys.executable, "-c", CHECKER], cwd=tmp_path, capture_output=True,
                         text=True, check=False)
    assert run.returncode == 0, run.stderr
    got = pickle.loads((tmp_path / "grads.pickle").read_bytes())
    assert got.pop("s2sad modules") == []
    for name, args in EXPORTED.items():
        fn = cli.load(f"{tmp_path / 'cmodel.py'}:{name}")
        check_gradient(fn, args, (got[name],))
