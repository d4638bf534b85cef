"""The public API as a user meets it."""
import inspect
import math
import traceback

import numpy as np
import pytest

import s2sad
import api_functions as m
from oracle import assert_close


def test_grad_wrt_forms():
    g = 2 - math.cos(5.0)
    assert s2sad.grad(m.f)(2.0, 5.0) == 5.5
    assert s2sad.grad(m.f, wrt=1)(2.0, 5.0) == pytest.approx(g, rel=1e-15)
    assert s2sad.grad(m.f, wrt="x2")(2.0, 5.0) == pytest.approx(g, rel=1e-15)
    assert s2sad.grad(m.f, wrt=(0, "x2"))(2.0, 5.0) == pytest.approx((5.5, g), rel=1e-15)
    assert s2sad.grad(m.f, wrt=("x1",))(2.0, 5.0) == (5.5,)


def test_decorator_forms():
    bare = s2sad.grad(m.scaled)
    with_options = s2sad.grad(wrt="x")(m.scaled)
    assert bare(3.0) == with_options(3.0) == 2 * m.SCALE * 3.0


def test_value_and_grad_runs_once():
    value, grad = s2sad.value_and_grad(m.f, wrt="x2")(2.0, 5.0)
    assert value == m.f(2.0, 5.0)
    assert grad == pytest.approx(2 - math.cos(5.0), rel=1e-15)


def test_vjp_returns_one_adjoint_per_argument():
    y, pullback = s2sad.vjp(m.f, 2.0, 5.0)
    assert y == m.f(2.0, 5.0)
    assert_close(pullback(1.0), (5.5, 2 - math.cos(5.0)))
    assert_close(pullback(-2.0), (-11.0, -2 * (2 - math.cos(5.0))))
    y, pullback = s2sad.vjp(m.scaled, 3.0)
    assert pullback(1.0) == (2 * m.SCALE * 3.0,)


def test_keyword_arguments_are_never_differentiated():
    g = s2sad.grad(m.with_kwonly)
    # d/dx (x y)^p = p x^(p-1) y^p
    assert g(2.0, 3.0, power=3) == pytest.approx(3 * 2.0 ** 2 * 3.0 ** 3)
    assert g(2.0, y=3.0) == pytest.approx(2 * 2.0 * 9.0)
    with pytest.raises(s2sad.S2SADError, match="keyword-only"):
        s2sad.grad(m.with_kwonly, wrt="power")(2.0)


def test_int_inputs_give_float_gradients():
    g = s2sad.grad(m.with_kwonly, wrt=(0, 1))(2, 3)
    assert g == (36.0, 24.0) and all(type(v) is float for v in g)


def test_source_and_attributes():
    df = s2sad.grad(m.f, wrt=(0, 1))
    assert df.primal is m.f
    assert df.__name__ == "f" and df.__doc__ == m.f.__doc__
    assert df.source.startswith("def f_grad(x1, x2):")
    assert s2sad.value_and_grad(m.f).source.startswith("def f_value_and_grad(x1, x2):")
    assert s2sad.source(m.f).startswith("def f_vjp(x1, x2):")
    with pytest.raises(s2sad.S2SADError, match="mode="):
        s2sad.source(m.f, mode="sideways")


def test_generated_code_is_inspectable_and_shows_in_tracebacks():
    compiled = s2sad.driver.build(m.f, 0)
    assert inspect.getsource(compiled.fn) == compiled.source
    # another version of the same function (other parameters) keeps its own lines
    other = s2sad.driver.build(m.f, 1)
    assert other.filename != compiled.filename
    assert inspect.getsource(other.fn) == other.source != compiled.source
    assert inspect.getsource(compiled.fn) == compiled.source
    with pytest.raises(ZeroDivisionError) as info:
        s2sad.value_and_grad(m.fails_in_forward)(1.0)
    frames = traceback.extract_tb(info.value.__traceback__)
    generated = [fr for fr in frames if fr.filename.startswith("<s2sad:")]
    assert generated and generated[-1].line == "y = t / t_1"
    # grad does not compute the value; its derivative divides by zero too
    with pytest.raises(ZeroDivisionError) as info:
        s2sad.grad(m.fails_in_forward)(1.0)
    frames = traceback.extract_tb(info.value.__traceback__)
    generated = [fr for fr in frames if fr.filename.startswith("<s2sad:")]
    assert generated and generated[-1].line == "t_1_bar = -y_bar * t / (t_1 * t_1)"


def test_user_globals_are_live():
    df = s2sad.grad(m.scaled)
    before = df(3.0)
    m.SCALE, old = 5.0, m.SCALE
    try:
        assert df(3.0) == 5.0 * 2 * 3.0 != before
    finally:
        m.SCALE = old


def test_cache_and_rule_invalidation():
    from s2sad import api
    first = api._compiled(m.f, (0, 1))
    assert api._compiled(m.f, (0, 1)) is first
    s2sad.nondiff(lambda x: x)          # any registration invalidates
    assert api._compiled(m.f, (0, 1)) is not first


def test_non_scalar_output():
    with pytest.raises(s2sad.NonScalarOutputError, match=r"shape \(2,\).*vjp"):
        s2sad.grad(m.vector_out)(1.0)


def test_check_grad():
    assert s2sad.check_grad(m.f, 2.0, 5.0, wrt=(0, 1)) == pytest.approx(
        (5.5, 2 - math.cos(5.0)))


def test_no_internal_exception_escapes(monkeypatch):
    from s2sad.before_ad import wengert

    def broken(self, fn):
        raise KeyError("boom")
    monkeypatch.setattr(wengert.Wengert, "run", broken)
    with pytest.raises(s2sad.InternalError, match="bug in s2sad"):
        s2sad.driver.build(m.scaled, 0)


def test_compiling_from_two_threads_at_once_gives_one_cache_entry(monkeypatch):
    import threading
    import time
    from s2sad import cache, driver
    builds = []
    make = driver._Build.make

    def slow_make(self, request):
        builds.append(request.fn)
        time.sleep(0.05)            # widen the window in which a second build could start
        return make(self, request)

    monkeypatch.setattr(driver._Build, "make", slow_make)
    from s2sad.frontend.source import function_from_source
    f = function_from_source(
        "def f(x):\n    t = x\n    for i in range(5):\n        t = t * x + 1.0\n    return t\n", {})
    start = threading.Barrier(8)
    results, failures = [], []

    def work():
        try:
            start.wait()
            results.append(s2sad.grad(f)(0.5))
        except BaseException as exc:       # noqa: BLE001 - reported below
            failures.append(exc)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures
    # after five steps t = x^6 + x^4 + x^3 + x^2 + x + 1
    expected = 6 * 0.5 ** 5 + 4 * 0.5 ** 3 + 3 * 0.5 ** 2 + 2 * 0.5 + 1
    assert results == [pytest.approx(expected)] * 8
    assert len(cache._cache[f]) == 1 and builds == [f]


def test_direct_call_follows_types_keywords_and_rule_changes():
    # after its first call a gradient calls its compiled code through a __call__ with
    # the primal's parameters; it must still respecialise, take keywords and see rules
    df = s2sad.grad(m.f, wrt=(0, 1))
    expected = (1 / 2.0 + 5.0, 2.0 - math.cos(5.0))     # d/dx1, d/dx2 of m.f
    assert_close(df(2.0, 5.0), expected)
    assert_close(df(x2=5.0, x1=2.0), expected)
    with pytest.raises(TypeError):
        df(2.0)
    # d/dx 2 x^2 = 4 x, for a float, a NumPy float32, an int, then a float again
    ds = s2sad.grad(m.scaled)
    assert_close(ds(1.5), 6.0)
    assert ds(np.float32(1.5)) == np.float32(6.0)
    assert ds(2) == 8.0
    assert_close(ds(1.5), 6.0)
    # a rule registered after the first call is used by the next one
    dc = s2sad.grad(m.uses_cube)
    assert_close(dc(2.0), 3 * 2.0 ** 2 + 1)
    s2sad.defvjp(m.cube, "x", "g * 0.0")                # a rule that ignores x
    assert_close(dc(2.0), 1.0)
    # defaults and keyword-only parameters too: d/dx (x y)^2 = 2 x y^2
    dk = s2sad.grad(m.with_kwonly)
    assert_close(dk(2.0), 4.0)
    assert_close(dk(2.0, 3.0, power=2), 36.0)
    assert_close(dk(2, 3.0, power=2), 36.0)         # an int x: another version
    assert_close(dk(2.0, y=3.0), 36.0)
    assert_close(df(2.0, 5.0), expected)    # the rule change removed the direct call
    assert inspect.signature(type(df).__call__).parameters.keys() == {"x1", "x2"}
    assert inspect.signature(type(dk).__call__) == inspect.signature(m.with_kwonly)
    # a parameter with the fallback's name: the fallback is found by what it is
    dn = s2sad.grad(m.named_like_the_fallback)
    assert_close(dn(3.0), 6.0)
    assert "__call__" in type(dn).__dict__
    assert dn(np.float32(3.0)) == np.float32(6.0) and dn(3) == 6


def test_a_derivative_does_not_keep_its_function_alive():
    # (a closure made per batch, differentiated and dropped: its derivatives go with it)
    import gc
    import weakref

    def make(k):
        def f(x):
            return k * math.sin(x) + helper_for_the_cache(x)
        return f
    refs = []
    for k in range(5):
        f = make(float(k))
        assert s2sad.grad(f)(0.3) == pytest.approx(k * math.cos(0.3) + 2 * 0.3)
        assert s2sad.value_and_grad(f)(0.3)[1] == pytest.approx(k * math.cos(0.3) + 0.6)
        assert s2sad.jvp(f, (0.3,), (1.0,))[1] == pytest.approx(k * math.cos(0.3) + 0.6)
        assert s2sad.hessian(f)(0.3) == pytest.approx(-k * math.sin(0.3) + 2.0)
        refs.append(weakref.ref(f))
        del f
    gc.collect()
    assert [r() for r in refs] == [None] * 5


def helper_for_the_cache(x):
    return x * x


class _Energy:
    def __init__(self, w):
        self.w = w

    def energy(self, x):
        return self.w * np.sum(x ** 3) + np.sum(x) ** 2


def test_second_derivatives_and_jacobians_of_a_bound_method():
    # as grad does, they differentiate with respect to the parameters after self (they
    # took x for self: a refusal that reads .w of a differentiated array, a TypeError)
    e, x, v = _Energy(2.0), np.array([0.5, -1.0]), np.array([1.0, 3.0])
    hessian = np.diag(6.0 * e.w * x) + 2.0          # d2/dx2 of w sum x^3 + (sum x)^2
    gradient = 3.0 * e.w * x ** 2 + 2.0 * np.sum(x)
    np.testing.assert_allclose(s2sad.hessian(e.energy)(x), hessian)
    np.testing.assert_allclose(s2sad.hessian(e.energy, wrt="x")(x), hessian)
    np.testing.assert_allclose(s2sad.hvp(e.energy)(x, v), hessian @ v)
    np.testing.assert_allclose(s2sad.hessp(e.energy)(x, v), hessian @ v)
    np.testing.assert_allclose(s2sad.jacfwd(e.energy)(x), gradient)
    np.testing.assert_allclose(s2sad.jacrev(e.energy)(x), gradient)
    np.testing.assert_allclose(s2sad.jacfwd(s2sad.grad(e.energy))(x), hessian)
    assert_close(s2sad.hessian(_Energy(3.0).energy)(0.5), 6.0 * 3.0 * 0.5 + 2.0)
