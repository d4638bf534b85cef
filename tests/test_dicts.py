"""Dicts and the container builtins in differentiated code (issue #36): dict displays,
dict comprehensions, `dict(...)`, `d.get(k, default)`, `list(...)`, `tuple(...)`,
`f(**d)`, dicts returned and passed to helpers, `enumerate(xs, start=...)`.

Each function is differentiated in reverse mode (grad, vjp), forward mode (jvp) and to
second order (hessian, hvp), and each derivative is compared with central differences
of the function itself (fourth order for first derivatives, a second-order stencil for
the Hessian); the refusals are located at the user's line.
"""
import numpy as np
import pytest

import s2sad
from s2sad.errors import MissingRuleError, UnsupportedSyntaxError

X = np.array([0.3, -0.7, 1.1])


def fd_grad(f, x):
    x = np.asarray(x, dtype=float)
    g = np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        h = 1e-4 * max(1.0, abs(x.flat[i]))
        e.flat[i] = h
        g.flat[i] = (8 * (f(x + e) - f(x - e)) - (f(x + 2 * e) - f(x - 2 * e))) / (12 * h)
    return g


def fd_hessian(f, x, h=1e-4):
    n = x.size
    out = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            ei, ej = np.eye(n)[i] * h, np.eye(n)[j] * h
            out[i, j] = (f(x + ei + ej) - f(x + ei - ej) - f(x - ei + ej)
                         + f(x - ei - ej)) / (4 * h * h)
    return out


# -- functions of an array x -----------------------------------------------------------
def display(x):
    d = {"a": x[0], "b": 2.0 * x[1], 3: np.sin(x)}
    return d["a"] * d["b"] + np.sum(d[3] * x)


def comprehension(x):
    p = {"w": x, "b": x[0] * x[1]}
    q = {k: v * 2.0 for k, v in p.items()}
    r = {k: np.tanh(q[k]) for k in q.keys() if k != "b"}
    return np.sum(r["w"] * q["b"]) + sum(v for v in {0: x[2], 1: x[0]}.values())


def computed_keys(x):
    names = ["u", "v", "u"]         # a repeated key keeps the last value
    d = {n: x[i] * (i + 1.0) for i, n in enumerate(names)}
    e = {names[1]: x[0], names[0]: x[1] ** 2}
    return d["u"] * d["v"] + e["u"] * e["v"]


def get_with_default(x):
    d = {"a": x[0] * x[1], "b": x}
    return d.get("a", 1.0) * d.get("c", x[2] ** 2) + np.sum(d.get("b") * x)


def dict_calls(x):
    d = dict(a=x[0], b=x[1] * x[2])
    e = dict(d)
    z = dict(zip(["u", "v"], [x[0] ** 2, np.cos(x[2])]))
    return d["a"] * e["b"] + z["u"] * z["v"] + len(dict())


def sequence_calls(x):
    t = tuple([x[0], 2.0 * x[1]])
    lst = list(t)
    rows = list(x)
    gen = tuple(v * v for v in x)
    return lst[0] * lst[1] + rows[2] * rows[0] + gen[1] * t[1]


def _product(a, b, c=1.0):
    return a * b * c


def star_star(x):
    d = {"a": x[0], "b": np.exp(x[1])}
    return _product(**d) * d.get("a") + _product(**{"a": x[2], "b": x[0]}, c=x[1])


def star_star_nested(x):
    t = x * 0.5

    def model(a, b):
        return a * np.exp(-b * t) + t[0]          # (t from the enclosing function)
    params = {"a": x[0], "b": x[1]}
    scaled = lambda a, b: a * b * x[2]  # noqa: E731 - (a lambda called with **d)
    return np.sum(model(**params) ** 2) + scaled(x[0], **{"b": x[1]})


def _loss(p, x):
    return np.sum(p["w"] * x) + p["b"] ** 2


def dict_to_helper(x):
    p = {"w": np.sin(x), "b": np.sum(x)}
    return _loss(p, x)


def dict_in_loop(x):
    d = {"a": x}
    s = 0.0
    for i in range(3):
        d = {"a": d["a"] * 1.5 + np.sin(d["a"]), "i": i}
        s = s + np.sum(d["a"]) * d["i"]
    return s + np.sum(d["a"])


def enumerate_start(x):
    s = 0.0
    for i, v in enumerate(x, start=1):
        s = s + i * v * v
    return s


def element_writes(x):
    q = {}
    q["a"] = x[0] * 3.0
    q["b"] = x * 1.0            # (`+=` below changes the array in place)
    q["a"] = q["a"] * x[1]      # overwritten: the old value gets no adjoint
    q["b"] += np.sin(x)
    for i in range(2):
        q[i] = x[i] * q["a"]
    return q["a"] * np.sum(q["b"]) + q[0] * q[1]


def _made(x):
    return {"a": x[0], "b": x}


def element_write_of_a_helpers_dict(x):
    d = _made(x)
    d["c"] = x[2] * 2.0
    d["a"] = d["a"] * d["c"]
    return d["a"] * np.sum(d["b"])


def table_filled_in_a_loop(x):
    # a Romberg-like table, read as it grows (scipy.integrate.romb's): the adjoints of its
    # versions have different keys, which second derivatives added (an InternalError)
    r = {}
    r[(0, 0)] = x[0] * x[-1]
    for i in range(1, 3):
        r[(i, 0)] = 0.5 * (r[(i - 1, 0)] * x[i])
        for j in range(1, i + 1):
            prev = r[(i, j - 1)]
            r[(i, j)] = prev * prev + (prev - r[(i - 1, j - 1)]) / 3.0
    return r[(2, 2)]


CASES = [display, comprehension, computed_keys, get_with_default, dict_calls,
         sequence_calls, star_star, star_star_nested, dict_to_helper, dict_in_loop, enumerate_start,
         element_writes, element_write_of_a_helpers_dict, table_filled_in_a_loop]


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_grad_and_vjp(f):
    expected = fd_grad(f, X)
    np.testing.assert_allclose(s2sad.grad(f)(X), expected, rtol=1e-6, atol=1e-8)
    y, pullback = s2sad.vjp(f, X)
    np.testing.assert_allclose(y, f(X))
    np.testing.assert_allclose(pullback(2.0)[0], 2.0 * expected, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_jvp(f):
    v = np.array([0.5, -1.0, 0.25])
    y, tangent = s2sad.jvp(f, (X,), (v,))
    np.testing.assert_allclose(y, f(X))
    np.testing.assert_allclose(tangent, fd_grad(f, X) @ v, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_hessian_and_hvp(f):
    expected = fd_hessian(f, X)
    np.testing.assert_allclose(s2sad.hessian(f)(X), expected, rtol=1e-5, atol=1e-5)
    v = np.array([0.5, -1.0, 0.25])
    np.testing.assert_allclose(s2sad.hvp(f)(X, v), expected @ v, rtol=1e-5, atol=1e-5)


def test_scalar_functions():
    """The issue's examples, of a number."""
    def f(x):
        d = {"x": x, "y": 2 * x}
        return d["x"] * d["y"]

    def g(x):
        d = dict(a=x, b=x * x)
        return d["a"] + d["b"]
    for fn, slope, curvature in [(f, 4 * 1.5, 4.0), (g, 1 + 2 * 1.5, 2.0)]:
        assert s2sad.grad(fn)(1.5) == pytest.approx(slope, rel=1e-12)
        assert s2sad.jvp(fn, (1.5,), (1.0,))[1] == pytest.approx(slope, rel=1e-12)
        assert s2sad.hessian(fn)(1.5) == pytest.approx(curvature, rel=1e-12)


def test_list_of_reversed_in_forward_mode():
    def f(xs):
        r = list(reversed(xs))
        return r[0] * 2.0 + r[1] * r[1]
    for t, expected in [([1.0, 0.0], 2.0 * 1.0), ([0.0, 1.0], 2.0)]:
        assert s2sad.jvp(f, ([1.0, 2.0],), (t,))[1] == pytest.approx(expected, rel=1e-12)


# -- dicts as arguments and results ------------------------------------------------------
def of_params(p):
    q = {k: v * 2.0 for k, v in p.items()}
    return q["a"] * np.sum(q["b"]) + p.get("a", 1.0) * p.get("c", 2.0)


def test_dict_argument():
    p = {"a": 0.7, "b": np.array([0.2, -0.4])}
    g = s2sad.grad(of_params)(p)
    assert set(g) == {"a", "b"}
    fa = fd_grad(lambda a: of_params({"a": float(a[0]), "b": p["b"]}), np.array([p["a"]]))
    fb = fd_grad(lambda b: of_params({"a": p["a"], "b": b}), p["b"])
    assert g["a"] == pytest.approx(fa[0], rel=1e-6)
    np.testing.assert_allclose(g["b"], fb, rtol=1e-6)
    t = {"a": 0.3, "b": np.array([1.0, -2.0])}
    _, tangent = s2sad.jvp(of_params, (p,), (t,))
    assert tangent == pytest.approx(fa[0] * t["a"] + fb @ t["b"], rel=1e-6)


def to_dict(x):
    return {"s": np.sin(x), "c": {"twice": x * 2.0, "sum": np.sum(x * x)}}


def test_dict_result():
    y, pullback = s2sad.vjp(to_dict, X)
    assert set(y) == {"s", "c"} and set(y["c"]) == {"twice", "sum"}
    y_bar = {"s": np.array([1.0, 0.5, -1.0]), "c": {"twice": np.ones(3), "sum": 0.5}}
    [x_bar] = pullback(y_bar)

    def scalarised(x):
        out = to_dict(x)
        return (out["s"] @ y_bar["s"] + out["c"]["twice"] @ y_bar["c"]["twice"]
                + out["c"]["sum"] * y_bar["c"]["sum"])
    np.testing.assert_allclose(x_bar, fd_grad(scalarised, X), rtol=1e-6)
    v = np.array([0.5, -1.0, 0.25])
    y2, tangent = s2sad.jvp(to_dict, (X,), (v,))
    assert set(tangent) == {"s", "c"}
    np.testing.assert_allclose(tangent["s"], np.cos(X) * v, rtol=1e-12)
    np.testing.assert_allclose(tangent["c"]["twice"], 2 * v, rtol=1e-12)
    assert tangent["c"]["sum"] == pytest.approx(2 * X @ v, rel=1e-12)


def test_an_augmented_write_into_an_array_in_a_dict_is_followed():
    """`q["b"] += v` changes the array `q["b"]` in place, here the argument itself."""
    def f(x):
        q = {}
        q["b"] = x
        q["b"] += np.sin(x)
        return np.sum(q["b"] * x)
    with pytest.raises(UnsupportedSyntaxError, match="writes into the array q holds") as e:
        s2sad.grad(f)(X)
    assert e.value.lineno == f.__code__.co_firstlineno + 4      # the read


def test_a_write_through_a_dict_is_refused_like_one_through_a_list():
    """A dict display holds its values: an array written after it is put in one is read
    through it, which s2sad follows only through the name written."""
    def f(x):
        a = x * 2.0
        d = {"a": a, "b": x}
        a[0] = 5.0
        return np.sum(d["a"] * d["b"])
    with pytest.raises(UnsupportedSyntaxError, match="writes into the array it shares") as e:
        s2sad.grad(f)(X)
    assert e.value.lineno == f.__code__.co_firstlineno + 4


# -- refusals ----------------------------------------------------------------------------
def _line_of(f, text):
    import inspect
    lines, first = inspect.getsourcelines(f)
    return first + next(i for i, line in enumerate(lines) if text in line)


def unpacked_display(x):
    d = {"a": x}
    return np.sum({**d, "b": x}["b"])


def star_star_of_parameter(x, p):
    return _product(**p) * x


def map_call(x):
    m = map(np.sin, [x, 2 * x])      # an iterator kept: s2sad does not follow it
    return sum(m)


def float16_call(x):
    return np.float16(x) * x


def dict_of_pairs(x):
    return dict([("a", x)], b=x)["a"]


@pytest.mark.parametrize("f, args, error, text, message", [
    (unpacked_display, (1.0,), UnsupportedSyntaxError, "{**d",
     r"\*\* in a dict display is not supported; write the keys out"),
    (star_star_of_parameter, (1.0, {"a": 1.0, "b": 2.0}), UnsupportedSyntaxError, "**p",
     r"\*\*d in a call is supported where d is a dict display.*f\(a=d\['a'\]"),
    (map_call, (1.0,), MissingRuleError, "map(",
     r"map\(\.\.\.\) makes an object of the type map .* or a list comprehension"),
    (float16_call, (1.0,), MissingRuleError, "np.float16(",
     r"write np\.asarray\(x, dtype=np\.float16\)"),
    (dict_of_pairs, (1.0,), UnsupportedSyntaxError, "dict([",
     r"this call of dict\(\) is not supported; build the dict with a display"),
], ids=lambda v: getattr(v, "__name__", None))
def test_refusals_are_located(f, args, error, text, message):
    for make in (lambda: s2sad.grad(f)(*args), lambda: s2sad.jvp(f, args, args)):
        with pytest.raises(error, match=message) as e:
            make()
        assert "your class" not in str(e.value)
        line = _line_of(f, text)
        where = getattr(e.value, "lineno", None)
        assert where == line or f"test_dicts.py:{line}" in str(e.value)


def test_a_library_class_is_not_called_yours_in_forward_mode():
    with pytest.raises(MissingRuleError) as e:
        s2sad.jvp(map_call, (1.0,), (1.0,))
    assert "your class" not in str(e.value) and "list comprehension" in str(e.value)


def test_get_of_a_class_of_yours_is_its_method():
    """`.get` is the dict's rule only where s2sad does not know the class of the object:
    an argument of a class of yours has its own method differentiated."""
    class Table:
        def get(self, key, default=None):
            return 2.0 * default

    def f(x, t):
        return t.get("a", x) * x
    assert s2sad.grad(f)(1.5, Table()) == pytest.approx(6.0, rel=1e-12)


def numba_display(x):
    d = {"a": x, "b": 2.0 * x}
    return d["a"] * d["b"]


def numba_comprehension(x):
    d = {k: x * i for i, k in enumerate(["a", "b"])}
    return d["a"] + d["b"]


@pytest.mark.parametrize("f", [numba_display, numba_comprehension], ids=lambda f: f.__name__)
def test_the_numba_backend_refuses_a_dict_at_its_line(f):
    pytest.importorskip("numba")
    from s2sad.errors import NativeBackendError
    with pytest.raises(NativeBackendError, match="the numba backend cannot compile") as e:
        s2sad.grad(f, backend="numba")(1.5)
    assert f"test_dicts.py:{f.__code__.co_firstlineno + 1}:" in str(e.value)
