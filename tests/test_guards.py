"""The derivative of the function as it is now (issue #34, item 1).

A derivative is compiled once, with the names its function reads resolved to objects;
when one of them changes (a helper redefined in a notebook, a module global or closure
value rebound, defaults, a method or the code replaced, a module attribute patched, a
NumPy alias rebound), the next call must differentiate the function as Python would run
it now. Each test changes one binding between two calls, in the way a user would, and
checks every derivative against central differences of the function at that moment
(tests/oracle.py), never against s2sad itself: `grad` (a derivative made before the
change, and one made after), `value_and_grad` (the value too), `vjp`, `jvp`, `hessian`.

The functions live in "notebooks": modules whose cells run with `exec`, their source
registered in `linecache` as IPython registers each cell's, so that s2sad reads it.
"""
import functools
import itertools
import linecache
import math
import types

import numpy as np
import pytest

import s2sad
from numpy_cases import fd_array_grad
from oracle import assert_close, fd_grad

_cells = itertools.count()


def close(actual, expected):
    np.testing.assert_allclose(actual, expected, rtol=1e-6, atol=1e-8)


class Notebook:
    """A module whose code runs a cell at a time, as in Jupyter (`__main__`'s globals)."""

    def __init__(self, **names):
        self.ns = {"__name__": "__main__", "np": np, "math": math, "s2sad": s2sad, **names}

    def run(self, text):
        filename = f"<notebook-cell-{next(_cells)}>"
        linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
        exec(compile(text, filename, "exec"), self.ns)
        return self

    def __getitem__(self, name):
        return self.ns[name]


def every_mode_agrees(f, x, g=None):
    """Every derivative of scalar `f` at the float `x` equals the central difference of
    `f` as it is now: `g` (a gradient made earlier, if given), a new `grad`,
    `value_and_grad` (and its value), `vjp`, `jvp` and the second derivative."""
    slope = fd_grad(f, (x,), 0)
    value = f(x)
    if g is not None:
        assert_close(g(x), slope)
    assert_close(s2sad.grad(f)(x), slope)
    v, d = s2sad.value_and_grad(f)(x)
    assert_close(v, value)
    assert_close(d, slope)
    y, pullback = s2sad.vjp(f, x)
    assert_close(y, value)
    assert_close(pullback(1.0)[0], slope)
    y, y_dot = s2sad.jvp(f, (x,), (1.0,))
    assert_close(y, value)
    assert_close(y_dot, slope)
    h = 1e-4
    curvature = (fd_grad(f, (x + h,), 0) - fd_grad(f, (x - h,), 0)) / (2 * h)
    assert_close(s2sad.hessian(f)(x), curvature, rtol=1e-5, atol=1e-6)


def test_a_redefined_helper_is_differentiated_as_it_is_now():
    nb = Notebook().run("def h(x):\n    return x * x\n").run(
        "def f(x):\n    return h(x) + 1.0\n")
    g = s2sad.grad(nb["f"])
    every_mode_agrees(nb["f"], 3.0, g)
    nb.run("def h(x):\n    return x ** 3\n")          # the user fixes h: slope 27 at 3
    assert_close(g(3.0), 27.0)
    every_mode_agrees(nb["f"], 3.0, g)


def test_a_helper_of_a_helper_redefined():
    nb = Notebook().run("def inner(x):\n    return math.sin(x)\n").run(
        "def outer(x):\n    return inner(x) * x\n").run(
        "def f(x):\n    return outer(x) + outer(2.0 * x)\n")
    g = s2sad.grad(nb["f"])
    every_mode_agrees(nb["f"], 0.7, g)
    nb.run("def inner(x):\n    return math.cos(x) * x\n")
    every_mode_agrees(nb["f"], 0.7, g)


def test_a_rebound_module_level_object():
    nb = Notebook().run(
        "class Model:\n"
        "    def __init__(self, k):\n"
        "        self.k = k\n"
        "    def predict(self, x):\n"
        "        return self.k * x * x\n"
        "model = Model(3.0)\n"
        "def f(x):\n"
        "    return model.predict(x)\n")
    g = s2sad.grad(nb["f"])
    every_mode_agrees(nb["f"], 2.0, g)
    nb.run("model = Model(5.0)\n")
    assert_close(g(2.0), 20.0)
    every_mode_agrees(nb["f"], 2.0, g)


def test_a_rebound_closure_cell():
    nb = Notebook().run(
        "def make(k):\n"
        "    def f(x):\n"
        "        return k * math.sin(x)\n"
        "    def set_k(value):\n"
        "        nonlocal k\n"
        "        k = value\n"
        "    return f, set_k\n"
        "f, set_k = make(2.0)\n")
    f, set_k = nb["f"], nb["set_k"]
    g = s2sad.grad(f)
    every_mode_agrees(f, 0.3, g)
    set_k(5.0)
    assert_close(g(0.3), 5.0 * math.cos(0.3))
    every_mode_agrees(f, 0.3, g)


def test_a_closure_over_a_function_rebound():
    nb = Notebook().run(
        "def make(act):\n"
        "    def f(x):\n"
        "        return act(x) * x\n"
        "    def set_act(value):\n"
        "        nonlocal act\n"
        "        act = value\n"
        "    return f, set_act\n"
        "f, set_act = make(np.tanh)\n")
    f, set_act = nb["f"], nb["set_act"]
    g = s2sad.grad(f)
    every_mode_agrees(f, 0.4, g)
    set_act(np.sin)
    every_mode_agrees(f, 0.4, g)


def test_changed_defaults_and_keyword_defaults():
    nb = Notebook().run("def f(x, k=2.0, *, p=2):\n    return k * x ** p\n")
    f = nb["f"]
    g = s2sad.grad(f)
    every_mode_agrees(f, 1.5, g)
    f.__defaults__ = (3.0,)
    assert_close(g(1.5), 3.0 * 2 * 1.5)
    every_mode_agrees(f, 1.5, g)
    f.__kwdefaults__ = {"p": 3}
    assert_close(g(1.5), 3.0 * 3 * 1.5 ** 2)
    every_mode_agrees(f, 1.5, g)


def test_keyword_defaults_changed_in_place():
    # `__kwdefaults__` is a dict: an item set in it is no assignment to the function,
    # which the audit hook would report; its values are compiled in
    nb = Notebook().run("def f(x, *, p=2.0):\n    return x ** p\n").run(
        "def helper(x, *, k=2.0):\n    return k * x * x\n"
        "def fh(x):\n    return helper(x) + x\n")
    for f, kw in [(nb["f"], nb["f"].__kwdefaults__), (nb["fh"], nb["helper"].__kwdefaults__)]:
        g = s2sad.grad(f)
        every_mode_agrees(f, 1.5, g)
        kw[next(iter(kw))] = 3.0
        every_mode_agrees(f, 1.5, g)


def test_defaults_of_a_called_helper_changed():
    nb = Notebook().run("def scaled(x, k=2.0):\n    return k * x * x\n").run(
        "def f(x):\n    return scaled(x) + 1.0\n")
    g = s2sad.grad(nb["f"])
    every_mode_agrees(nb["f"], 1.5, g)
    nb["scaled"].__defaults__ = (7.0,)
    every_mode_agrees(nb["f"], 1.5, g)


def test_a_method_replaced_on_the_class():
    nb = Notebook().run(
        "class Model:\n"
        "    def predict(self, x):\n"
        "        return x * x\n"
        "    def loss(self, x):\n"
        "        return self.predict(x) + 1.0\n"
        "model = Model()\n"
        "def f(x):\n"
        "    return model.loss(x)\n")
    g = s2sad.grad(nb["f"])
    every_mode_agrees(nb["f"], 1.2, g)
    nb.run("def cubic(self, x):\n    return x ** 3\nModel.predict = cubic\n")
    assert_close(g(1.2), 3 * 1.2 ** 2)
    every_mode_agrees(nb["f"], 1.2, g)


def test_a_method_replaced_on_the_class_by_a_lambda():
    nb = Notebook().run(
        "class Model:\n"
        "    def predict(self, x):\n"
        "        return x * x\n"
        "model = Model()\n"
        "def f(x):\n"
        "    return model.predict(x)\n")
    g = s2sad.grad(nb["f"])
    every_mode_agrees(nb["f"], 1.2, g)
    nb.run("Model.predict = lambda self, x: x ** 4\n")     # (guarded as a `<lambda>`)
    assert_close(g(1.2), 4 * 1.2 ** 3)
    every_mode_agrees(nb["f"], 1.2, g)


def test_a_method_set_on_a_module_level_instance():
    nb = Notebook().run(
        "class Model:\n"
        "    def predict(self, x):\n"
        "        return x * x\n"
        "model = Model()\n"
        "def f(x):\n"
        "    return model.predict(x)\n")
    g = s2sad.grad(nb["f"])
    every_mode_agrees(nb["f"], 1.2, g)
    nb.run("def sine(x):\n    return math.sin(x)\nmodel.predict = sine\n")
    assert_close(g(1.2), math.cos(1.2))
    every_mode_agrees(nb["f"], 1.2, g)


@pytest.mark.parametrize("call", ["model(x)", "model.loss(x)"])
def test_a_function_set_on_a_module_level_instance_over_a_method_its_methods_call(call):
    # `self.predict` in `loss` is the instance's function, which hides the class's
    # method: s2sad found it through the class (x * x where Python ran sin), before the
    # derivative was made and after
    nb = Notebook().run(
        "class Model:\n"
        "    def predict(self, x):\n"
        "        return x * x\n"
        "    def loss(self, x):\n"
        "        return self.predict(x) + 1.0\n"
        "    def __call__(self, x):\n"
        "        return self.loss(x)\n"
        "model = Model()\n"
        "def f(x):\n"
        f"    return {call}\n")
    g = s2sad.grad(nb["f"])
    every_mode_agrees(nb["f"], 1.2, g)
    nb["model"].predict = math.sin
    assert nb["f"](1.2) == math.sin(1.2) + 1.0
    for derivative in (g, s2sad.grad(nb["f"]), lambda x: s2sad.jvp(nb["f"], (x,), (1.0,))):
        with pytest.raises(s2sad.UnsupportedSyntaxError, match="hides the method") as info:
            derivative(1.2)
        assert info.value.filename.startswith("<notebook-cell-") and call in info.value.text
    del nb["model"].predict
    every_mode_agrees(nb["f"], 1.2, g)


def test_swapped_code():
    nb = Notebook().run("def f(x):\n    return x * x\n").run(
        "def f3(x):\n    return x * x * x\n")
    f = nb["f"]
    g = s2sad.grad(f)
    every_mode_agrees(f, 2.0, g)
    f.__code__ = nb["f3"].__code__          # what IPython's autoreload does
    assert_close(g(2.0), 12.0)
    every_mode_agrees(f, 2.0, g)


def test_a_patched_module_attribute():
    physics = types.ModuleType("physics")
    exec("def drag(v):\n    return 0.1 * v * v\n", physics.__dict__)
    nb = Notebook(physics=physics).run("def f(v):\n    return physics.drag(v) * 2.0\n")
    g = s2sad.grad(nb["f"])
    with pytest.raises(s2sad.S2SADError):   # (physics.drag has no source)
        g(3.0)
    nb.run("def drag(v):\n    return 0.1 * v * v\nphysics.drag = drag\n")
    every_mode_agrees(nb["f"], 3.0, g)
    nb.run("def drag2(v):\n    return 0.3 * v ** 3\nphysics.drag = drag2\n")
    assert_close(g(3.0), 2.0 * 0.9 * 9.0)
    every_mode_agrees(nb["f"], 3.0, g)


def test_a_rebound_numpy_alias():
    nb = Notebook().run("act = np.tanh\n").run(
        "def f(x):\n    return np.sum(act(x) * x)\n")
    f = nb["f"]
    x = np.array([0.3, -0.7, 1.1])
    g = s2sad.grad(f)
    close(g(x), fd_array_grad(f, (x,), 0))
    nb.run("act = np.sin\n")
    close(g(x), fd_array_grad(f, (x,), 0))
    close(s2sad.grad(f)(x), fd_array_grad(f, (x,), 0))
    y, pullback = s2sad.vjp(f, x)
    close(y, f(x))
    close(pullback(1.0)[0], fd_array_grad(f, (x,), 0))
    t = np.array([1.0, 0.5, -2.0])
    y, y_dot = s2sad.jvp(f, (x,), (t,))
    close(y_dot, fd_array_grad(f, (x,), 0) @ t)


def test_a_patched_numpy_function_is_seen():
    f = Notebook().run("def f(x):\n    return np.sum(np.tanh(x))\n")["f"]
    x = np.array([0.3, -0.7])
    g = s2sad.grad(f)
    close(g(x), fd_array_grad(f, (x,), 0))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(np, "tanh", np.sin)
        close(g(x), np.cos(x))
    close(g(x), 1 - np.tanh(x) ** 2)


def test_a_rebound_global_of_another_kind():
    nb = Notebook().run("scale = 2.0\n").run("def f(x):\n    return np.sum(scale * x)\n")
    f = nb["f"]
    g = s2sad.grad(f)
    x = np.array([1.0, 2.0])
    close(g(x), fd_array_grad(f, (x,), 0))
    nb.run("scale = 3.0\n")             # a new value of the same kind: read as it is
    close(g(x), fd_array_grad(f, (x,), 0))
    nb.run("scale = np.array([1.0, -4.0])\n")       # now an array
    close(g(x), fd_array_grad(f, (x,), 0))


def test_a_new_value_of_a_global_of_the_same_kind_does_not_recompile():
    nb = Notebook().run("scale = 2.0\n").run("def f(x):\n    return scale * math.sin(x)\n")
    g = s2sad.grad(nb["f"])
    g(0.5)
    code = type(g).__call__
    for k in range(5):
        nb.run(f"scale = {k}.5\n")
        assert_close(g(0.5), (k + 0.5) * math.cos(0.5))
    assert type(g).__call__ is code     # the same compiled code throughout


def test_a_derivative_made_before_is_not_reused_for_other_bindings():
    nb = Notebook().run("def h(x):\n    return 2.0 * x\n").run(
        "def f(x):\n    return h(x) * x\n")
    f = nb["f"]
    assert_close(s2sad.grad(f)(1.0), 4.0)
    nb.run("def h(x):\n    return 5.0 * x\n")
    assert_close(s2sad.grad(f)(1.0), 10.0)      # a new grad(f): compiled for the new h
    assert_close(s2sad.jacfwd(f)(1.0), 10.0)
    assert_close(s2sad.jacrev(f)(1.0), 10.0)
    assert_close(s2sad.hvp(f)(1.0, 1.0), 10.0)


def test_a_rebound_helper_of_a_gradient_called_in_a_loop():
    nb = Notebook().run("def step(x):\n    return x - 0.1 * x ** 3\n").run(
        "def f(x):\n"
        "    for i in range(5):\n"
        "        x = step(x)\n"
        "    return x\n")
    f = nb["f"]
    g = s2sad.grad(f)
    every_mode_agrees(f, 0.8, g)
    nb.run("def step(x):\n    return x - 0.2 * math.sin(x)\n")
    every_mode_agrees(f, 0.8, g)


def test_the_numba_backend_sees_a_redefined_helper():
    pytest.importorskip("numba")
    nb = Notebook().run("def h(x):\n    return x * x\n").run(
        "def f(x):\n    return h(x) + 1.0\n")
    g = s2sad.grad(nb["f"], backend="numba")
    assert_close(g(3.0), 6.0)
    nb.run("def h(x):\n    return x ** 3\n")
    assert_close(g(3.0), fd_grad(nb["f"], (3.0,), 0))
    v, d = s2sad.value_and_grad(nb["f"], backend="numba")(3.0)
    assert_close(v, 28.0)
    assert_close(d, 27.0)


def test_the_numba_backend_sees_a_global_array_written_into():
    # Numba takes a global array into the compiled code as a constant: a write into it
    # compiles the derivative again (the Python backend reads it at each call)
    pytest.importorskip("numba")
    nb = Notebook(w=np.array([1.0, 2.0, 3.0]), ws=(np.ones(3), np.ones(3))).run(
        "def f(x):\n    return np.sum(w * x * x)\n").run(
        "def h(x):\n    return np.sum(ws[0] * x * x) + np.sum(ws[1] * x)\n").run(
        "def make(a):\n"
        "    def g(x):\n"
        "        return np.sum(a * np.sin(x))\n"
        "    return g\n")
    f, g = nb["f"], nb["make"](np.array([1.0, 1.0, 1.0]))
    x, v = np.array([0.5, -1.0, 2.0]), np.array([1.0, 0.5, -0.3])
    grad, vag, hvp = (s2sad.grad(f, backend="numba"), s2sad.value_and_grad(f, backend="numba"),
                      s2sad.hvp(f, backend="numba"))
    grad_g, grad_h = s2sad.grad(g, backend="numba"), s2sad.grad(nb["h"], backend="numba")
    for step in range(2):
        want = fd_array_grad(f, (x,), 0)
        close(grad(x), want)
        close(vag(x)[1], want)
        close(s2sad.jvp(f, (x,), (v,), backend="numba")[1], np.dot(want, v))
        close(hvp(x, v), 2.0 * nb["w"] * v)        # the Hessian is diag(2 w)
        close(grad_g(x), fd_array_grad(g, (x,), 0))
        close(grad_h(x), fd_array_grad(nb["h"], (x,), 0))      # a tuple of arrays
        nb["w"][0] = 10.0
        nb["ws"][1][2] = -3.0
        g.__closure__[0].cell_contents[2] = -4.0


def test_the_numba_backend_sees_a_global_number_rebound_where_the_passes_did_not_look():
    # Numba takes each global its code reads as a constant: a flag read by a branch
    # (`if USE:`, which no pass resolves) and a number read by a helper it compiles gave
    # the derivative of the function as it was, rebound to a value of the same class
    pytest.importorskip("numba")
    nb = Notebook(USE=True, c=2.0).run(
        "def f(x):\n    if USE:\n        return np.sum(np.sin(x))\n"
        "    return np.sum(x ** 2)\n").run(
        "def h(x):\n    return c * x ** 2\n").run(
        "def g(x):\n    return np.sum(h(x))\n")
    x, v = np.array([0.3, -0.7, 1.1]), np.array([1.0, 0.5, -0.3])
    made = [(nb[n], s2sad.grad(nb[n], backend="numba"), s2sad.hvp(nb[n], backend="numba"))
            for n in ("f", "g")]
    for step in range(2):
        # (the Hessians are diagonal: -sin(x) or 2 for f, 2 c for g)
        curvatures = [-np.sin(x) if nb["USE"] else 2.0, 2.0 * nb["c"]]
        for (f, grad, hvp), curvature in zip(made, curvatures):
            close(grad(x), fd_array_grad(f, (x,), 0))
            close(s2sad.jvp(f, (x,), (v,), backend="numba")[1],
                  np.dot(fd_array_grad(f, (x,), 0), v))
            close(hvp(x, v), curvature * v)
        nb.ns["USE"], nb.ns["c"] = False, 3.0


def test_the_numba_backend_with_a_keyword_only_default_changed_in_place():
    # jvp and hvp of the numba backend failed with a TypeError (Numba is given keyword
    # defaults only where they are passed), and grad kept the old value
    pytest.importorskip("numba")
    nb = Notebook().run("def f(x, *, p=2.0):\n    return np.sum(x ** p)\n")
    f, x, v = nb["f"], np.array([0.3, 0.7, 1.1]), np.array([1.0, 0.5, -0.3])
    grad, hvp = s2sad.grad(f, backend="numba"), s2sad.hvp(f, backend="numba")
    for p in (2.0, 3.0):
        close(grad(x), fd_array_grad(f, (x,), 0))
        close(s2sad.jvp(f, (x,), (v,), backend="numba")[1],
              np.dot(fd_array_grad(f, (x,), 0), v))
        close(hvp(x, v), p * (p - 1) * x ** (p - 2) * v)       # (a diagonal Hessian)
        f.__kwdefaults__["p"] = 3.0


def test_the_numba_backend_with_an_array_default_kept_on_disk(monkeypatch, tmp_path):
    # the copy of the derivative kept in the disk cache is a module of its own: its
    # defaults' expressions read the user's names, and its defaults are the user's objects
    pytest.importorskip("numba")
    monkeypatch.setenv("S2SAD_CACHE_DIR", str(tmp_path))
    nb = Notebook().run("def f(x, w=np.array([1.0, 2.0, 3.0])):\n"
                        "    return np.sum(w * x ** 2)\n")
    f, x = nb["f"], np.array([0.3, -0.7, 1.1])
    g = s2sad.grad(f, backend="numba")
    close(g(x), fd_array_grad(f, (x,), 0))
    f.__defaults__[0][0] = 10.0
    close(g(x), fd_array_grad(f, (x,), 0))
    close(s2sad.value_and_grad(f, backend="numba")(x)[1], fd_array_grad(f, (x,), 0))


def test_the_numba_backends_hvp_sees_a_rebound_global():
    pytest.importorskip("numba")
    nb = Notebook(scale=2.0).run("def f(x):\n    return scale * np.sum(x ** 3)\n")
    x, v = np.array([0.5, -1.0]), np.array([1.0, 2.0])
    hvp = s2sad.hvp(nb["f"], backend="numba")
    close(hvp(x, v), 6.0 * 2.0 * x * v)
    nb.ns["scale"] = 3.0
    close(hvp(x, v), 6.0 * 3.0 * x * v)

def test_an_hvp_made_before_a_helper_is_redefined():
    nb = Notebook().run("def h(x):\n    return x ** 3\n").run(
        "def f(x):\n    return h(x) + 1.0\n")
    hvp, hessian = s2sad.hvp(nb["f"]), s2sad.hessian(nb["f"])
    curvature = lambda x: (fd_grad(nb["f"], (x + 1e-4,), 0)     # noqa: E731
                           - fd_grad(nb["f"], (x - 1e-4,), 0)) / 2e-4
    for text in ("def h(x):\n    return x ** 4\n", "def h(x):\n    return math.sin(x)\n"):
        assert_close(hvp(0.7, 2.0), 2.0 * curvature(0.7), rtol=1e-5, atol=1e-6)
        assert_close(hessian(0.7), curvature(0.7), rtol=1e-5, atol=1e-6)
        nb.run(text)


def test_an_object_called_whose_classs_call_is_replaced():
    nb = Notebook().run(
        "class Model:\n"
        "    def __init__(self, w):\n"
        "        self.w = w\n"
        "    def __call__(self, x):\n"
        "        return self.w * math.sin(x)\n"
        "model = Model(3.0)\n"
        "def f(x):\n"
        "    return model(x) * x\n")
    f = nb["f"]
    g = s2sad.grad(f)
    every_mode_agrees(f, 0.7, g)
    nb.run("def call(self, x):\n    return self.w * x ** 3\nModel.__call__ = call\n")
    every_mode_agrees(f, 0.7, g)


def test_second_derivatives_see_an_array_of_an_object_written_into():
    # the forward mode over the gradient code read the object's array through a copy
    # made when compiling (a deep copy of the syntax tree that referred to the object)
    nb = Notebook().run(
        "class Model:\n"
        "    def __init__(self, w):\n"
        "        self.w = w\n"
        "    def __call__(self, x):\n"
        "        return np.sum(self.w * np.sin(x))\n"
        "model = Model(np.array([1.0, 2.0]))\n"
        "def f(x):\n"
        "    return model(x)\n")
    f, x, v = nb["f"], np.array([0.5, 1.0]), np.array([1.0, -2.0])
    hvp = s2sad.hvp(f)
    for step in range(2):
        want = -nb["model"].w * np.sin(x) * v           # the Hessian is diag(-w sin x)
        close(hvp(x, v), want)
        close(s2sad.hessian(f)(x) @ v, want)
        close(s2sad.jacfwd(s2sad.grad(f))(x) @ v, want)
        nb["model"].w[0] = 10.0

def test_a_method_hidden_by_an_attribute_of_an_argument_is_refused():
    nb = Notebook().run(
        "class Model:\n"
        "    def predict(self, x):\n"
        "        return x * x\n"
        "    def loss(self, x):\n"
        "        return self.predict(x) + 1.0\n"
        "def f(model, x):\n"
        "    return model.loss(x)\n")
    model = nb["Model"]()
    g = s2sad.grad(nb["f"], wrt=1)
    hvp = s2sad.hvp(nb["f"], wrt=1)
    assert_close(g(model, 1.5), 3.0)
    assert_close(hvp(model, 1.5, 1.0), 2.0)
    model.predict = lambda x: x ** 3       # Python now calls this one
    with pytest.raises(s2sad.S2SADError, match="hides the method Model.predict"):
        g(model, 1.5)
    with pytest.raises(s2sad.S2SADError, match="hides the method Model.predict"):
        hvp(model, 1.5, 1.0)        # (made before: it gave the old product, 2.0)
    with pytest.raises(s2sad.S2SADError, match="hides the method Model.predict"):
        s2sad.value_and_grad(nb["f"], wrt=1)(model, 1.5)
    with pytest.raises(s2sad.S2SADError, match="hides the method Model.predict"):
        s2sad.jvp(nb["f"], (model, 1.5), (None, 1.0))
    del model.predict
    assert_close(g(model, 1.5), 3.0)


def test_a_helper_of_a_helper_that_starts_writing_into_its_argument():
    # what a callee writes into is read from its code (before_ad/aliasing.py): when a helper
    # it calls is redefined to write into its argument, the gradient follows, or refuses
    nb = Notebook().run("def k(a):\n    return a * 2.0\n").run(
        "def h(a):\n    b = k(a)\n    return b\n").run(
        "def f(x):\n    y = x * 1.0\n    z = h(y)\n    return np.sum(z * y)\n")
    f = nb["f"]
    x = np.array([0.5, -1.0, 2.0])
    g = s2sad.grad(f)
    close(g(x), fd_array_grad(f, (x,), 0))
    nb.run("def k(a):\n    a *= 2.0\n    return a\n")      # now writes y through h
    try:
        got = g(x)
    except s2sad.S2SADError as error:
        assert "<notebook-cell-" in str(error)          # refused at the user's line
    else:
        close(got, fd_array_grad(f, (x,), 0))


def test_a_partials_keywords_changed_in_place():
    # the values a partial binds are taken in when compiling: what it binds is guarded
    # (a global, an attribute of a global object, a closure cell)
    nb = Notebook(functools=functools).run(
        "def power(x, p):\n    return x ** p\n"
        "cube = functools.partial(power, p=3.0)\n"
        "def f(x):\n    return cube(x) + x\n"
        "class Cfg:\n    pass\n"
        "cfg = Cfg()\ncfg.act = functools.partial(power, p=3.0)\n"
        "def fa(x):\n    return cfg.act(x) * 2.0\n"
        "def make():\n    c = functools.partial(power, p=3.0)\n"
        "    def fc(x):\n        return c(x) * x\n    return fc, c\n"
        "fc, c = make()\n")
    for f, part in [(nb["f"], nb["cube"]), (nb["fa"], nb["cfg"].act), (nb["fc"], nb["c"])]:
        g, vg, h = s2sad.grad(f), s2sad.value_and_grad(f), s2sad.hessian(f)
        assert_close(g(0.7), fd_grad(f, (0.7,), 0))
        assert_close(vg(0.7)[0], f(0.7))
        assert_close(h(0.7), fd_grad(lambda x: fd_grad(f, (x,), 0, 1e-4), (0.7,), 0, 1e-4),
                     rtol=1e-5)
        part.keywords["p"] = 4.0
        assert_close(g(0.7), fd_grad(f, (0.7,), 0))
        assert_close(vg(0.7), (f(0.7), fd_grad(f, (0.7,), 0)))
        assert_close(s2sad.jvp(f, (0.7,), (1.0,)), (f(0.7), fd_grad(f, (0.7,), 0)))
        assert_close(h(0.7), fd_grad(lambda x: fd_grad(f, (x,), 0, 1e-4), (0.7,), 0, 1e-4),
                     rtol=1e-5)


def test_the_derivative_of_a_partial_whose_keywords_change_in_place():
    # grad(partial) compiles a function of the parameters it leaves, with the values it
    # binds as defaults (driver.target): made again when they change
    def power(x, p):
        return x ** p
    cube = functools.partial(power, p=3.0)
    g, vg = s2sad.grad(cube), s2sad.value_and_grad(cube)
    assert_close(g(0.7), 3 * 0.7 ** 2)
    assert_close(vg(0.7), (0.7 ** 3, 3 * 0.7 ** 2))
    cube.keywords["p"] = 4.0
    assert_close(g(0.7), fd_grad(cube, (0.7,), 0))
    assert_close(vg(0.7), (0.7 ** 4, fd_grad(cube, (0.7,), 0)))
    assert_close(s2sad.jvp(cube, (0.7,), (1.0,)), (0.7 ** 4, fd_grad(cube, (0.7,), 0)))
    assert_close(g(0.7, p=2.0), 1.4)        # (a keyword it binds, passed: still taken)
