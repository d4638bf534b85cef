"""Forward mode: jvp, jacfwd, jacrev, hvp and hessian against independent oracles.

* jvp on the scalar and control-flow corpora against finite differences;
* the dot-product test: <J v, u> from forward mode equals <v, J^T u> from reverse mode;
* jacfwd == jacrev == finite differences on vector-valued NumPy functions that use
  every kind of NumPy rule (elementwise, reductions, linear algebra, shapes);
* hessian (forward over reverse) against analytic Hessians and finite differences of
  the gradient, also through loops, branches and in-place updates;
* every reverse rule has a forward rule, and so does every runtime helper that
  reverse-mode code calls (what forward over reverse needs).
"""
import inspect
import math
import re
import warnings

import gast

import numpy as np
import pytest

import corpus_calls
import corpus_control_flow
import s2sad
from corpus_scalar import CORPUS
from numpy_cases import identity as _identity
from oracle import fd_partial, resolve_wrt
from s2sad.rules import registry, runtime
from test_control_flow import CASES as CONTROL_FLOW
from warned import allowing_unconnected

SCALAR = [pytest.param(c.f, p, c.kwargs, id=f"{c.name}-p{k}{'-kw' if c.kwargs else ''}")
          for c in CORPUS for k, p in enumerate(c.points)]
FLOW = [pytest.param(f, p, {}, id=f"{f.__name__}-p{k}")
        for f, points in CONTROL_FLOW for k, p in enumerate(points)]


def _tangents(point, seed):
    rng = np.random.default_rng(seed)
    return tuple(float(rng.uniform(-1, 1)) for _ in point)


def _directional_fd(f, point, v, kwargs):
    return sum(vi * fd_partial(f, point, i, kwargs=kwargs) for i, vi in enumerate(v))


# -- jvp against finite differences ------------------------------------------------------
@pytest.mark.parametrize("f, point, kwargs", SCALAR + FLOW)
def test_jvp_matches_finite_differences(f, point, kwargs):
    v = _tangents(point, 0)
    y, y_dot = s2sad.jvp(f, point, v, **kwargs)
    assert y == pytest.approx(f(*point, **kwargs), rel=1e-12, abs=1e-14)
    expected = _directional_fd(f, point, v, kwargs)
    assert y_dot == pytest.approx(expected, rel=1e-6, abs=1e-8)


@pytest.mark.parametrize("f, point, kwargs", SCALAR + FLOW)
def test_dot_product_forward_reverse(f, point, kwargs):
    """<J v, u> == <v, J^T u> for random u, v: forward and reverse mode agree."""
    if kwargs:
        pytest.skip("vjp differentiates every positional argument; kwargs tested above")
    v = _tangents(point, 1)
    u = float(np.random.default_rng(2).uniform(0.5, 1.5))
    with allowing_unconnected(f):
        _, y_dot = s2sad.jvp(f, point, v)
        _, pullback = s2sad.vjp(f, *point)
    adjoints = pullback(u)
    assert u * y_dot == pytest.approx(sum(a * b for a, b in zip(v, adjoints)),
                                      rel=1e-10, abs=1e-12)


def test_jvp_with_respect_to_some_arguments():
    case = next(c for c in CORPUS if c.name == "gaussian_pdf")
    point = case.points[0]
    _, indices = resolve_wrt(case.f, case.wrt, len(point))
    for i in indices:
        v = tuple(1.0 if j == i else 0.0 for j in range(len(point)))
        _, y_dot = s2sad.jvp(case.f, point, v)
        assert y_dot == pytest.approx(fd_partial(case.f, point, i), rel=1e-6)


def test_zero_tangent_at_the_output():
    def constant(x):
        return 3.0
    assert s2sad.jvp(_module_level(constant), (2.0,), (1.0,)) == (3.0, 0.0)


def test_keyword_only_tangents_after_defaults():
    text = s2sad.source(corpus_control_flow.zero_trip, mode="forward")
    assert "def zero_trip_jvp(x, n=0, *, x_dot):" in text
    assert s2sad.jvp(corpus_control_flow.zero_trip, (1.5,), (2.0,)) == (2.25, 6.0)
    assert s2sad.jvp(corpus_control_flow.kw, (0.7,), (1.0,), scale=3.0, n=2)[1] == 13.0


def test_jvp_errors():
    with pytest.raises(s2sad.S2SADError, match="one tangent per primal"):
        s2sad.jvp(corpus_control_flow.conflict, (1.0,), (1.0, 2.0))


def test_jvp_fast_path_follows_types_rules_tangent_count_and_methods():
    # jvp caches the compiled f_jvp per argument types and registry version: each of these
    # repeated calls must still see what changed since the first.
    def cube(x):
        return x ** 3
    f = _module_level(None, {"cube": cube}, "def g(x, n=2):\n    return cube(x) * n\n")
    assert s2sad.jvp(f, (2.0,), (1.0,)) == (16.0, 24.0)           # 2 * 3 x^2
    assert s2sad.jvp(f, (2.0,), (1.0,)) == (16.0, 24.0)           # cached
    assert s2sad.jvp(f, (2.0, 3.0), (1.0, 1.0)) == (24.0, 44.0)   # n is differentiated too
    x = np.array([1.0, 2.0])
    y, y_dot = s2sad.jvp(f, (x,), (np.array([1.0, 0.0]),))        # another kind: arrays
    assert np.array_equal(y, 2 * x ** 3) and np.array_equal(y_dot, [6.0, 0.0])
    s2sad.defjvp(cube, "x", "t * 5.0")                            # a wrong rule, on purpose
    try:
        assert s2sad.jvp(f, (2.0,), (1.0,)) == (16.0, 10.0)
    finally:
        registry.JVPS.pop(cube)
        registry.bump()
    assert s2sad.jvp(f, (2.0,), (1.0,)) == (16.0, 24.0)
    with pytest.raises(s2sad.S2SADError, match="one tangent per primal"):
        s2sad.jvp(f, (2.0,), (1.0, 1.0))
    # None tangents leave arguments out; each pattern is its own entry of the cache
    assert s2sad.jvp(f, (2.0, 3.0), (None, 1.0)) == (24.0, 8.0)      # x^3
    assert s2sad.jvp(f, (2.0, 3.0), (1.0, None)) == (24.0, 36.0)     # 3 x^2 n
    assert s2sad.jvp(f, (2.0, 3.0), (None, 1.0)) == (24.0, 8.0)
    with pytest.raises(s2sad.S2SADError, match="at least one tangent"):
        s2sad.jvp(f, (2.0, 3.0), (None, None))

    class Scaled:
        def __init__(self, k):
            self.k = k

        def apply(self, x):
            return self.k * x * x
    for k in (1.0, 3.0):   # one compiled f_jvp, each call with its own instance
        assert s2sad.jvp(Scaled(k).apply, (2.0,), (1.0,)) == (4.0 * k, 4.0 * k)


def test_jvp_fast_path_checks_what_it_skips():
    # after a call with every tangent, jvp calls that f_jvp directly: the generated code
    # checks the argument types and that no tangent is None, jvp the number of tangents
    import dataclasses
    from s2sad import forward_api
    f = _module_level(None, {}, "def g(x, y, *, k=1.0):\n    return k * x * x * y\n")
    assert s2sad.jvp(f, (2.0, 3.0), (1.0, 0.0)) == (12.0, 12.0)
    assert forward_api._last[0]() is f
    x = np.array([1.0, 2.0])
    y, y_dot = s2sad.jvp(f, (x, 3.0), (np.ones(2), 0.0))         # arrays: respecialised
    assert np.array_equal(y, 3 * x * x) and np.array_equal(y_dot, 6 * x)
    assert s2sad.jvp(f, (2.0, 3.0), (1.0, 0.0)) == (12.0, 12.0)  # and back
    assert s2sad.jvp(f, (2.0, 3), (1.0, 1.0)) == (12.0, 16.0)    # an int
    assert s2sad.jvp(f, (2.0, 3.0), (None, 1.0)) == (12.0, 4.0)  # a tangent left out
    assert s2sad.jvp(f, (2.0, 3.0), (1.0, 0.0), k=2.0) == (24.0, 24.0)
    assert s2sad.jvp(f, iter((2.0, 3.0)), [1.0, 0.0]) == (12.0, 12.0)  # any iterables
    for primals, tangents in (((2.0, 3.0, 4.0), (1.0,)), ((2.0,), (1.0, 0.0, 1.0)),
                              ((2.0,), (1.0,))):
        s2sad.jvp(f, (2.0, 3.0), (1.0, 0.0))
        with pytest.raises((s2sad.S2SADError, TypeError), match="tangent per primal|argument"):
            s2sad.jvp(f, primals, tangents)
    # an error of the function itself is raised once, as it is
    calls = []
    note = calls.append
    s2sad.nondiff(note)
    boom = _module_level(None, {"note": note},
                         "def boom(x):\n    note(x)\n    return x + 'a'\n")
    try:
        for _ in range(2):
            with pytest.raises(TypeError, match="unsupported operand"):
                s2sad.jvp(boom, (1.0,), (1.0,))
    finally:
        registry.RULES.pop(note)
        registry.bump()
    assert len(calls) == 2

    @dataclasses.dataclass
    class Box:
        w: object
    h = _module_level(None, {}, "def h(b, x):\n    return b.w * x\n")
    assert s2sad.jvp(h, (Box(2.0), 3.0), (Box(1.0), 0.0)) == (6.0, 3.0)
    y, y_dot = s2sad.jvp(h, (Box(x), 3.0), (Box(np.ones(2)), 0.0))   # a field's type
    assert np.array_equal(y, 3 * x) and np.array_equal(y_dot, [3.0, 3.0])
    s2sad.jvp(f, (2.0, 3.0), (1.0, 0.0))
    assert forward_api._last[0]() is f and f not in forward_api._last   # (f held weakly)


def test_missing_forward_rule_is_reported():
    def opaque(x):
        return x
    opaque_prim = np.frompyfunc(lambda x: x, 1, 1)
    f = _module_level(opaque, {"opaque_prim": opaque_prim},
                      "def g(x):\n    return opaque_prim(x) * 2.0\n")
    with pytest.raises(s2sad.MissingRuleError, match="no forward-mode rule"):
        s2sad.jvp(f, (1.0,), (1.0,))


def test_calls_to_python_functions_use_their_jvp():
    f = _module_level(None, {}, "def helper(a, b):\n    return a * b + b\n\n"
                      "def g(x, y):\n    return helper(x, 2.0) * helper(y, x)\n")
    text = s2sad.source(f, wrt=(0, 1), mode="forward")
    assert "helper_jvp(x, 2.0, x_dot)" in text and "helper_jvp_1(y, x, y_dot, x_dot)" in text
    v = (0.3, -0.7)
    _, y_dot = s2sad.jvp(f, (1.2, 0.4), v)
    assert y_dot == pytest.approx(_directional_fd(f, (1.2, 0.4), v, {}), rel=1e-7)


def test_recursion():
    f = _module_level(None, {}, "def power(x, n):\n    if n == 0:\n        return 1.0\n"
                      "    return x * power(x, n - 1)\n")
    assert s2sad.jvp(f, (1.5, 4), (1.0, 0.0))[1] == pytest.approx(4 * 1.5 ** 3)


def test_defjvp():
    def cube(x):
        return x ** 3
    f = _module_level(None, {"cube": cube}, "def g(x):\n    return cube(x) + x\n")
    s2sad.defjvp(cube, "x", "t * 3 * x * x")
    try:
        assert "3 * x" in s2sad.source(f, mode="forward").replace("t_dot", "")
        assert s2sad.jvp(f, (2.0,), (1.0,)) == (10.0, 13.0)
    finally:
        registry.JVPS.pop(cube)
        registry.bump()


def test_a_forward_rule_without_a_template_for_a_differentiated_argument_is_refused():
    # `None` in defjvp, as in defvjp, is "no derivative": a differentiated value passed
    # there lost its tangent without a word (the check read the reverse rule only, which
    # these functions have none of)
    def hyp(a, b):
        return a * a + b
    f = _module_level(None, {"hyp": hyp}, "def f(x):\n    return hyp(x, 3.0 * x)\n")
    g = _module_level(None, {"hyp": hyp}, "def g(x):\n    return hyp(x, 3.0)\n")
    power = _module_level(None, {"np": np},
                          "def power(x):\n    return np.float_power(2.0, x) + x\n")
    cube = _module_level(None, {"np": np},
                         "def cube(x):\n    return np.float_power(x, 3.0)\n")
    s2sad.defjvp(hyp, "a, b", "2 * a * t", None)
    s2sad.defjvp(np.float_power, "x1, x2", "t * x2 * np.float_power(x1, x2 - 1)", None,
                 namespace={"np": np})
    try:
        for fn in (f, power):
            with pytest.raises(s2sad.MissingRuleError, match=r":2: .*parameter "
                               r"'(b|x2)'.*s2sad.defjvp"):
                s2sad.jvp(fn, (0.7,), (1.0,))
        for fn in (g, cube):     # (passed where the rule differentiates: its tangent)
            value, tangent = s2sad.jvp(fn, (0.7,), (1.0,))
            assert value == pytest.approx(fn(0.7), rel=1e-12)
            assert tangent == pytest.approx(fd_partial(fn, (0.7,), 0), rel=1e-7)
        # (reverse mode reads hyp's source, which has no rule of that mode)
        assert s2sad.grad(f)(0.7) == pytest.approx(fd_partial(f, (0.7,), 0), rel=1e-7)
    finally:
        registry.JVPS.pop(hyp)
        registry.PRIMITIVES.pop(np.float_power)
        registry.bump()


def test_generated_source_is_deterministic():
    from s2sad import driver
    from s2sad.options import Options, Variant
    for f, _ in CONTROL_FLOW:
        jvp = Options(Variant.JVP, guard=False)
        assert driver.build(f, 0, options=jvp).source == driver.build(f, 0, options=jvp).source


# -- Jacobians of vector-valued NumPy functions --------------------------------------------
A = np.array([[2.0, 0.5, -0.3], [0.4, 1.5, 0.2], [-0.1, 0.3, 1.8]])


def polar(p):
    return np.array([p[0] * np.cos(p[1]), p[0] * np.sin(p[1])])


def elementwise(x):
    return np.tanh(x) * np.exp(-x * x) + np.sqrt(x * x + 1.0) / (2.0 + np.sin(x))


def reductions(x):
    m = x.reshape(2, 3)
    return np.concatenate([m.sum(axis=0), np.mean(m, axis=1), [np.prod(x), np.max(x)],
                           np.std(m, axis=0), np.cumsum(x)[1:3], np.cumprod(x[:3])])


def linear_algebra(x):
    m = np.reshape(x[:9], (3, 3)) + 3.0 * np.eye(3)
    v = x[9:]
    return np.concatenate([m @ v, np.linalg.solve(m, v), np.linalg.inv(m)[0],
                           [np.linalg.det(m), np.linalg.norm(v), np.trace(m @ A)],
                           np.dot(A, v), np.einsum("ij,j->i", m, v), np.outer(v, v)[1]])


def cholesky_slogdet(x):
    b = np.reshape(x, (3, 3))
    spd = b @ b.T + 3.0 * np.eye(3)
    sign, logdet = np.linalg.slogdet(spd)
    return np.concatenate([np.linalg.cholesky(spd).ravel(), [logdet]])


def shapes(x):
    m = x.reshape(2, 3)
    parts = [m.T.ravel(), np.flip(x), np.roll(x, 2), np.tile(x[:2], 2),
             np.repeat(x[:2], 2), np.pad(x[:2], 1), np.triu(m).ravel(),
             np.stack([x[:3], x[3:]], axis=1).ravel(), np.swapaxes(m, 0, 1)[0],
             np.where(x > 0.0, x, 2.0 * x), np.clip(x, -0.5, 0.5), np.maximum(x, 0.1)]
    return np.concatenate(parts)


def branches_and_loops(x):
    out = x.copy()
    for i in range(1, len(x)):
        if x[i] > x[i - 1]:
            out[i] = out[i - 1] * x[i]
        else:
            out[i] = out[i - 1] + np.sin(x[i])
    acc = []
    k = 0
    while k < 3:
        acc.append(out[k] * out[k + 1])
        k += 1
    return np.concatenate([out, np.array(acc)])


def more_linear_algebra(x):
    m = x[:9].reshape((3, 3))
    t = np.tensordot(m, A, axes=1)
    e3 = np.einsum("ij,jk,k->i", m, A, x[:3])
    return np.concatenate([np.inner(x[:3], A), t[0], np.diag(m), np.diag(x[:2]).ravel(),
                           e3, [np.einsum("ij->", m), np.trace(m)], np.var(m, axis=1),
                           np.amax(m, axis=0), np.amin(m, axis=1), [np.min(x)],
                           np.cumprod(m, axis=1)[1], np.tril(m, -1)[2], np.sort(x[:4])])


def more_shapes(x):
    m = x.reshape(2, 3)
    col = np.expand_dims(x[:3], 1)
    parts = [np.squeeze(col, axis=1), np.moveaxis(m, 0, 1).ravel(),
             np.broadcast_to(x[:3], (2, 3)).ravel(), np.hstack([x[:2], x[4:]]),
             np.vstack([x[:3], x[3:]]).ravel(), np.asarray(x[::2]), x.astype(float),
             np.real(x), np.transpose(m, (1, 0))[0], m.transpose(1, 0)[1], np.copy(x),
             np.reshape(x, (3, 2))[1], np.array([x[0] * x[1], 2.0, x[2]]),
             np.fmax(x, 0.0) + np.fmin(x, 0.0), np.logaddexp(x, 0.5),
             np.arctan2(x, 1.5) + np.hypot(x, 2.0), m.T.flatten(), x.view()]
    return np.concatenate(parts)


def python_builtins(x):
    items = []
    for v in reversed([x[0], x[1], x[2]]):
        items.append(pow(v, 3) + max(v, 0.2) * min(v, 0.3))
    total = sum(items, 1.0)
    m = np.zeros(3)
    m[1] = total * x[0]
    m[2] = x @ x + np.matmul(x, x)
    return m


def broadcasting(x, w):
    return (np.outer(x, np.ones(2)) * w + w).ravel()


def construction(x):
    """Arrays built from differentiated values: fills, ends, start and step."""
    parts = [np.full(3, x[0]), np.full_like(x, x[1]) * x, np.linspace(x[0], x[2], 4),
             np.linspace(x[1], x[2], 3, endpoint=False), np.arange(x[0], 2.0, x[2]),
             np.arange(x[1] + 3.0), np.linspace(x[0], x[1], 3, dtype=np.float64)]
    return np.concatenate(parts)


def row_stacked(x):
    with warnings.catch_warnings():     # (np.vstack's alias, deprecated by NumPy 2.0)
        warnings.simplefilter("ignore", DeprecationWarning)
        return np.row_stack([x, x * x]).ravel()


NAN6 = np.array([0.0, np.nan, 0.0, 0.0, 0.0, np.nan])


def more_reductions(x):
    """Reductions, scans and sequences of numbers with forward rules of their own."""
    m = x.reshape(2, 3)
    y = x + NAN6
    parts = [[math.dist((x[0], x[1]), (x[2], 0.5)), math.prod([x[0], x[3], 2.0], start=1.5),
              math.fsum([x[1], x[2] * x[4]]), np.nansum(y), np.nanmax(y), np.nanmin(y),
              np.ptp(x), np.average(x, weights=x * x + 1.0), x[:1].item()],
             np.nanmean(y.reshape(2, 3), axis=0), np.ptp(m, axis=1), np.diff(x, 2),
             np.average(m, axis=1, weights=np.array([1.0, 2.0, 0.5])),
             np.trapezoid(m, x[:3] * 2.0), [np.trapezoid(x, dx=x[0])],
             np.polyval(x[:3], x[3:]), np.convolve(x[:4], x[4:], "same"),
             np.correlate(x[:2], x[2:], "full"), np.logaddexp2(x, 0.3),
             np.clip(x, min=-0.5), np.cumulative_sum(m, axis=1).ravel(),
             np.astype(x, np.float64) * x]
    return np.concatenate(parts)


def more_shapes_and_layout(x):
    """Splitting, joining, padding and rearranging, with forward rules of their own."""
    m = x.reshape(2, 3)
    a, b = np.split(x, 2)
    c = np.array_split(x, 4)
    d, e = np.hsplit(m, [1])
    f, h = np.vsplit(m, 2)
    parts = [a * b, c[3], d[:, 0], e.ravel(), f[0] * h[0], np.append(a, x[:2]),
             np.delete(m, 1, axis=1).ravel(), np.insert(x[:4], [1, 3], x[4:]),
             np.insert(m, 1, x[3], axis=0).ravel(),
             np.flipud(m).ravel(), np.fliplr(m).ravel(), np.rot90(m).ravel(),
             np.pad(x[:2], 1, constant_values=x[2]), np.pad(x[:3], 1, "reflect"),
             np.column_stack([x[:2], x[2:4]]).ravel(), np.atleast_1d(x[0]),
             np.atleast_2d(x)[0], np.atleast_3d(m).ravel(), np.diagonal(m, 1),
             np.kron(x[:2], x[2:4]), np.cross(x[:3], x[3:]),
             np.take_along_axis(m, np.array([[2, 0], [1, 1]]), axis=1).ravel(),
             np.rollaxis(m[None], 2).ravel(), np.cross(m.T, x[3:], 0, axisc=0).ravel(),
             np.select([x > 0, x < -0.5], [x * x, m.ravel() * x], x[0]),
             np.bincount([0, 2, 0, 1, 1, 3], weights=x * x[0], minlength=5)]
    return np.concatenate(parts)


def decompositions(x):
    """Factorizations and powers, with forward rules of their own (of the vectors, what
    does not depend on their signs)."""
    m = x.reshape(4, 3)
    w, v = np.linalg.eigh(m.T @ m)
    u, s, vt = np.linalg.svd(m, full_matrices=False)
    q, r = np.linalg.qr(m)
    sol, res, rank, sv = np.linalg.lstsq(m, x[:4])
    parts = [w, (v * v).ravel(), np.linalg.eigvalsh(m[:3] + m[:3].T), s, (u * u).ravel(),
             np.linalg.svd(m, compute_uv=False), np.linalg.pinv(m).ravel(), q.ravel(),
             r.ravel(), sol, res, sv, np.linalg.matrix_power(m[:3] + 2 * np.eye(3), 2).ravel(),
             np.linalg.matrix_power(m[1:] + 2 * np.eye(3), -1).ravel(),
             np.linalg.multi_dot([x[:4], m, m.T, np.sin(x[4:8])]).ravel()]
    return np.concatenate(parts)


XP4 = np.array([-1.0, 0.0, 0.5, 2.0])
NAN24 = np.array([[0.0, np.nan, 0.0, 0.0], [0.0, 0.0, 0.0, np.nan]])


def order_statistics_and_sampling(x):
    """Quantiles, partitions, the other nan* reductions and scans, np.gradient, np.interp,
    np.meshgrid and np.dsplit, with forward rules of their own."""
    m = x.reshape(2, 4)
    y = m + NAN24
    gx, gy = np.meshgrid(x[:2], x[2:5])
    a, b = np.dsplit(x.reshape(1, 2, 4), 2)
    parts = [[np.median(x), np.quantile(x, 0.3), np.percentile(m, 60.0), np.nanprod(y),
              np.nanvar(y), np.nanpercentile(y, 45.0), np.quantile(x[0] * x, x[4])],
             np.nanmedian(y, axis=0), np.nanquantile(y, [0.2, 0.7], axis=1).ravel(),
             np.nanstd(y, axis=1), np.nancumsum(y, axis=1).ravel(), np.nancumprod(y).ravel(),
             np.partition(x, 3), np.gradient(x, 0.5), np.gradient(m, XP4, axis=1).ravel(),
             np.interp(x, XP4, x[:4] * x[4:]), (gx * gy).ravel(), (a * b).ravel()]
    return np.concatenate(parts)


def matrix_norms_and_ufunc_methods(x):
    """Matrix norms, ufunc methods, the interleaved einsum and sorted(), with forward
    rules of their own."""
    m = x.reshape(2, 4)
    n = [np.linalg.norm(m, o) for o in ("nuc", 2, -2, 1, -1, np.inf, -np.inf)]
    a, b = x[:2], x[2:5]
    outers = [np.add.outer(a, b), np.subtract.outer(a, b), np.multiply.outer(a, b),
              np.divide.outer(a, b), np.maximum.outer(a, b), np.minimum.outer(a, b),
              np.fmax.outer(a, b), np.fmin.outer(a, b), np.logaddexp.outer(a, b),
              np.logaddexp2.outer(a, b), np.hypot.outer(a, b), np.arctan2.outer(a, b)]
    parts = [n, np.power.outer(x[:2] * x[:2] + 0.5, x[2:4]).ravel(),
             np.remainder.outer(x[:2], np.array([2.7, -3.1])).ravel(),
             np.fmod.outer(x[:2], np.array([2.7, -3.1])).ravel(),
             np.add.reduce(m), np.multiply.reduce(m, axis=1), np.maximum.reduce(m),
             np.minimum.reduce(m, axis=1), np.fmax.reduce(m), np.fmin.reduce(m, axis=1),
             np.logaddexp.reduce(m), np.logaddexp2.reduce(m, axis=1),
             np.add.accumulate(m).ravel(), np.multiply.accumulate(m, axis=1).ravel(),
             np.maximum.accumulate(m, axis=1).ravel(), np.minimum.accumulate(m).ravel(),
             np.fmax.accumulate(m).ravel(), np.fmin.accumulate(m, axis=1).ravel(),
             np.einsum(m, [0, 1], m, [0, 2], [1, 2]).ravel(),
             np.einsum("ij,ik->jk", m, m, optimize=True).ravel(),
             sorted([x[0], x[1] * x[2], x[3]], reverse=True)] + [o.ravel() for o in outers]
    return np.concatenate(parts)


def dicts_and_sequences(x):
    """Dict displays and comprehensions, dict(d), dict(zip(...)), d.get, list() and
    tuple() (of a list and of an array's rows), with forward rules of their own."""
    d = {"a": x[0], "b": x[1] * x[2]}
    e = dict(d)
    q = {k: v * x[2] for k, v in e.items()}
    z = dict(zip(["u", "v"], [x[0] * x[1], x[2]]))
    t = tuple([x[0], x[1] * x[1]])
    rows = list(x[1:])
    return np.array([q["a"] * q["b"], e.get("b", 0.0) + e.get("c", x[0] ** 2),
                     z["u"] * z["v"], t[0] * t[1], rows[0] * rows[1]])
def casts(x):
    """np.longdouble and the integer types as casts (np.float32's rounding is more than
    differences can see through: test_builtin_calls checks it against its derivative)."""
    return np.concatenate([np.float64(np.longdouble(x) * x[0]), x * np.int64(x[1] * 3.0),
                           [np.float64(x[2]) * np.int32(2.9)], np.real_if_close(x) * x])


JACOBIAN_CASES = [
    (casts, (np.array([0.3, -1.2, 0.8]),)),
    (polar, (np.array([2.0, 0.7]),)),
    (elementwise, (np.array([0.3, -1.2, 0.8]),)),
    (reductions, (np.array([0.6, -1.3, 0.9, 1.1, 0.4, -0.7]),)),
    (linear_algebra, (np.array([0.3, -0.2, 0.5, 0.1, 0.4, -0.6, 0.2, 0.7, 0.1, 1.0, -0.5,
                                0.8]),)),
    (cholesky_slogdet, (np.array([0.5, 0.1, -0.3, 0.2, 0.8, 0.1, -0.4, 0.3, 0.6]),)),
    (shapes, (np.array([0.3, -0.2, 0.9, -1.4, 0.7, 0.25]),)),
    (branches_and_loops, (np.array([0.5, 0.9, 0.2, 1.3, 0.8]),)),
    (more_linear_algebra, (np.array([0.3, -0.2, 0.5, 0.1, 0.4, -0.6, 0.2, 0.7, 0.15]),)),
    (more_shapes, (np.array([0.3, -0.2, 0.9, -1.4, 0.7, 0.25]),)),
    (python_builtins, (np.array([0.6, -0.4, 1.1]),)),
    (construction, (np.array([0.3, -0.4, 0.45]),)),
    (more_reductions, (np.array([0.3, -0.2, 0.9, -1.4, 0.7, 0.25]),)),
    (more_shapes_and_layout, (np.array([0.3, -0.2, 0.9, -1.4, 0.7, 0.25]),)),
    (decompositions, (np.array([0.3, -0.2, 0.9, -1.4, 0.7, 0.25, 1.1, 0.4, -0.6, 0.8, -0.5,
                                0.35]),)),
    (order_statistics_and_sampling, (np.array([0.3, -0.2, 0.9, -1.4, 0.7, 0.25, 1.1,
                                               -0.6]),)),
    (matrix_norms_and_ufunc_methods, (np.array([0.3, -0.2, 0.9, -1.4, 0.7, 0.25, 1.1,
                                                -0.6]),)),
    (dicts_and_sequences, (np.array([0.6, -0.4, 1.1]),)),
    (broadcasting, (np.array([0.5, -1.0, 2.0]), np.array([0.3, 0.7]))),
]
if hasattr(np, "row_stack"):        # (removed by NumPy 2.5)
    JACOBIAN_CASES.append((row_stacked, (np.array([0.3, -0.4, 0.45]),)))


def _fd_jacobian(f, args, i):
    x = np.asarray(args[i], dtype=float)
    cols = []
    for idx in np.ndindex(x.shape):
        def along(s):
            shifted = x.copy()
            shifted[idx] += s
            return np.asarray(f(*args[:i], shifted, *args[i + 1:]), dtype=float)
        h = 1e-5
        cols.append((8 * (along(h) - along(-h)) - (along(2 * h) - along(-2 * h))) / (12 * h))
    return np.stack(cols, axis=-1).reshape(np.shape(f(*args)) + x.shape)


def _ids(v):
    return getattr(v, "__name__", "")


@pytest.mark.parametrize("f, args", JACOBIAN_CASES, ids=_ids)
def test_jacfwd_matches_finite_differences(f, args):
    for i in range(len(args)):
        np.testing.assert_allclose(s2sad.jacfwd(f, wrt=i)(*args), _fd_jacobian(f, args, i),
                                   rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("f, args", JACOBIAN_CASES, ids=_ids)
def test_jacrev_matches_jacfwd(f, args):
    for i in range(len(args)):
        np.testing.assert_allclose(s2sad.jacrev(f, wrt=i)(*args),
                                   s2sad.jacfwd(f, wrt=i)(*args), rtol=1e-10, atol=1e-12)


def test_jacobian_shapes_and_tuples():
    x, w = next(args for f, args in JACOBIAN_CASES if f is broadcasting)
    jx, jw = s2sad.jacfwd(broadcasting, wrt=(0, 1))(x, w)
    assert jx.shape == (6, 3) and jw.shape == (6, 2)
    rx, rw = s2sad.jacrev(broadcasting, wrt=("x", "w"))(x, w)
    np.testing.assert_allclose(jx, rx)
    np.testing.assert_allclose(jw, rw)
    scalar = s2sad.jacfwd(corpus_control_flow.conflict)(0.7)
    assert isinstance(scalar, float)


# -- Hessians: forward over reverse -----------------------------------------------------
def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def rosenbrock_hessian(x):
    n = len(x)
    h = np.zeros((n, n))
    for i in range(n - 1):
        h[i, i] += 1200 * x[i] ** 2 - 400 * x[i + 1] + 2
        h[i + 1, i + 1] += 200
        h[i, i + 1] = h[i + 1, i] = -400 * x[i]
    return h


def quadratic_form(x, M):
    return x @ M @ x + np.sum(M @ x)


def mlp_loss(w, X, Y):
    W1 = w[:8].reshape(2, 4)
    W2 = w[8:].reshape(4, 1)
    h = np.tanh(X @ W1)
    r = h @ W2 - Y
    return np.mean(r * r) + 0.01 * np.sum(w * w)


def loopy(x):
    s = np.sum(x)
    t = x
    for i in range(3):
        t = np.sin(t) * s
        if np.max(t) > 1.0:
            t = t / np.max(t)
    return np.sum(t * t) + np.var(x) + np.linalg.norm(x)


def _fd_hessian(f, args):
    g = s2sad.grad(f)
    x = np.asarray(args[0], dtype=float)
    cols = []
    for k in range(x.size):
        e = np.zeros_like(x)
        e.flat[k] = 1e-5
        cols.append((g(x + e, *args[1:]) - g(x - e, *args[1:])) / 2e-5)
    return np.stack(cols, axis=-1)


def test_hessian_rosenbrock():
    x = np.array([1.2, 0.8, -0.5, 0.3])
    np.testing.assert_allclose(s2sad.hessian(rosenbrock)(x), rosenbrock_hessian(x),
                               rtol=1e-12, atol=1e-10)


def test_hessian_quadratic_form():
    M = np.array([[2.0, 1.0, 0.0], [0.5, 3.0, -1.0], [0.0, 0.2, 1.0]])
    x = np.array([0.4, -1.1, 2.0])
    np.testing.assert_allclose(s2sad.hessian(quadratic_form)(x, M), M + M.T, atol=1e-12)
    v = np.array([1.0, 2.0, -0.5])
    np.testing.assert_allclose(s2sad.hvp(quadratic_form)(x, M, v), (M + M.T) @ v)


def test_hessian_mlp_loss():
    rng = np.random.default_rng(3)
    w, X, Y = rng.normal(size=12) * 0.5, rng.normal(size=(5, 2)), rng.normal(size=(5, 1))
    h = s2sad.hessian(mlp_loss)(w, X, Y)
    np.testing.assert_allclose(h, h.T, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(h, _fd_hessian(mlp_loss, (w, X, Y)), rtol=1e-5, atol=1e-7)


def test_hessian_through_loops_and_branches():
    x = np.array([0.3, -0.4, 0.5])
    np.testing.assert_allclose(s2sad.hessian(loopy)(x), _fd_hessian(loopy, (x,)),
                               rtol=1e-5, atol=1e-7)


HESSIAN_SCALAR = [pytest.param(c.f, p, id=f"{c.name}-p{k}") for c in CORPUS
                  for k, p in enumerate(c.points[:1]) if not c.kwargs]


@pytest.mark.parametrize("f, point", HESSIAN_SCALAR)
def test_hessian_scalar_corpus(f, point):
    """d2f/dx0^2 by forward over reverse, against central differences of the gradient."""
    g = s2sad.grad(f)
    x, step = point[0], 1e-4 * max(1.0, abs(point[0]))
    with allowing_unconnected(f):
        h = s2sad.hessian(f)(*point)
        fd = (g(x + step, *point[1:]) - g(x - step, *point[1:])) / (2 * step)
    assert h == pytest.approx(fd, rel=1e-5, abs=1e-6)


def test_hvp_matches_hessian():
    x, v = np.array([1.2, 0.8, -0.5]), np.array([0.3, -1.0, 2.0])
    np.testing.assert_allclose(s2sad.hvp(rosenbrock)(x, v), rosenbrock_hessian(x) @ v)


def test_hvp_reused_across_argument_types():
    # one hvp object compiles once per argument types: float, then int, then float again
    def cubic(x, k):
        return k * x ** 3
    f = _module_level(cubic)
    hvp = s2sad.hvp(f)
    assert hvp(2.0, 1.5, 1.0) == pytest.approx(18.0)      # 6 k x v
    assert hvp(2.0, 3, 0.5) == pytest.approx(18.0)
    assert hvp(-1.0, 1.5, 2.0) == pytest.approx(-18.0)


def test_source_of_hvp_and_hessian_is_the_code_they_run():
    # forward mode of the gradient, tangent along the parameter they differentiate
    x, v = np.array([1.2, 0.8, -0.5]), np.array([0.3, -1.0, 2.0])
    text = s2sad.source(s2sad.grad(rosenbrock), mode="forward", at=(x,))
    assert text.startswith("def rosenbrock_grad_jvp(x, x_dot):")
    assert s2sad.source(s2sad.hvp(rosenbrock), mode="forward", at=(x,)) == text
    assert s2sad.source(s2sad.hessian(rosenbrock), mode="forward", at=(x,)) == text
    hvp = s2sad.hvp(rosenbrock)
    assert hvp.__name__ == "hvp_rosenbrock" and hvp.primal is rosenbrock
    np.testing.assert_allclose(hvp(x, v), rosenbrock_hessian(x) @ v)
    with pytest.raises(s2sad.SourceUnavailableError, match="derivative made by s2sad"):
        s2sad.grad(hvp)(x, v)


def test_hvp_takes_one_argument():
    with pytest.raises(s2sad.S2SADError, match="one argument"):
        s2sad.hvp(quadratic_form, wrt=(0, 1))(np.ones(3), np.eye(3), np.ones(3))


# -- every rule has a forward rule ---------------------------------------------------------
def _is_helper(obj):
    """Whether `obj` is a runtime helper generated code calls (registry.HELPERS)."""
    return registry.HELPERS.get("_s2s_" + getattr(obj, "__name__", "")) is obj


#: The built-in rules, before any test registers its own.
BUILT_IN = {prim: list(rule.variants) for prim, rule in registry.RULES.items()}


def test_every_reverse_rule_has_a_forward_rule():
    from s2sad.ad.forward_mode import forward_rule
    missing = []
    for prim, variants in BUILT_IN.items():
        for variant in variants:
            if not variant.templates:
                continue
            args = [gast.Name(id=p, ctx=gast.Load(), annotation=None, type_comment=None)
                    for p, d in variant.params if d is registry.REQUIRED]
            if forward_rule(prim, args, {}) is None:
                missing.append(f"{getattr(prim, '__name__', prim)}"
                               f"({', '.join(p for p, _ in variant.params)})")
    assert not missing, "reverse rules without a forward rule: " + ", ".join(missing)


def test_every_forward_rule_is_checked():
    """Each primitive with a registered forward rule (not derived from an elementwise
    reverse rule) is called by one of the Jacobian checks above (reverse-mode helpers
    are checked by the Hessians)."""
    from s2sad import pipeline
    from s2sad.analysis.activity import definitions
    from s2sad.analysis.operations import classify
    called = set()
    for f, _ in JACOBIAN_CASES:
        ctx, node = pipeline.compilation(f, until="wengert")
        src = ctx.src
        called |= {_identity(classify(s.value, src).prim) for _, s in definitions(node.body)}
        called |= {_identity(src.resolve(loop.iter.func)) for loop in gast.walk(node)
                   if isinstance(loop, gast.For) and isinstance(loop.iter, gast.Call)}
    # fields of objects take dataclass and named-tuple tangents, which jacfwd does not
    # build: tests/test_objects.py checks them against central differences
    called.add(id(getattr))
    # a user's loop over reversed(...) is a loop over indexes (before_ad.desugar); the rule
    # is for forward over reverse, whose tape loops run reversed: the Hessians check it
    called.add(id(reversed))
    # (the constructors of records and plain classes, made on first use by the tests
    # before, are checked by tests/test_objects.py and tests/test_plain_classes.py)
    # float32's rounding hides its derivative from central differences: the analytic
    # derivative checks it (test_builtin_calls.test_numpy_scalar_types_as_casts)
    called.add(id(np.float32))
    unchecked = [getattr(p, "__qualname__", p) for p in registry.JVPS
                 if not _is_helper(p) and _identity(p) not in called
                 and not _scipy_rule(p) and not isinstance(p, type)
                 and getattr(p, "__module__", None) != "numpy.fft"]   # (tests/test_fft.py)
    assert not unchecked, "forward rules without a check: " + ", ".join(map(str, unchecked))


def _scipy_rule(prim):
    """Whether `prim` is one of SciPy's functions or distribution methods, or a helper of
    their rules (rules/solves.py): tests/test_rules_scipy.py checks their forward rules
    (jvp, and forward over reverse through the helpers) against central differences."""
    owner = getattr(prim, "__self__", prim)
    module = getattr(prim, "__module__", None) or getattr(type(owner), "__module__", "")
    return module.startswith("scipy.") or module == "s2sad.rules.solves"


def test_every_runtime_helper_of_reverse_code_has_a_forward_rule():
    """Forward over reverse (hessian) differentiates the helpers reverse code calls."""
    helpers = {obj for variants in BUILT_IN.values() for v in variants
               for t in v.templates.values() for obj in t.free.values()
               if inspect.isfunction(obj) and _is_helper(obj)}
    helpers |= {runtime.unbroadcast, runtime.add, runtime.zeros_like, runtime.seed,
                runtime.setitem, runtime.append, runtime.cotangents}
    missing = sorted(f.__name__ for f in helpers if f not in registry.JVPS)
    assert not missing, "runtime helpers without a forward rule: " + ", ".join(missing)


def _module_level(fn, namespace=None, text=None):
    """The last function of `text` (by default, `fn`'s source, dedented), defined at
    module level with `namespace` as its globals (its source stays readable)."""
    from s2sad.frontend.source import function_from_source
    if text is None:
        text = "\n".join(line[4:] for line in inspect.getsource(fn).splitlines()) + "\n"
    return function_from_source(text, namespace)


def test_cli_show_forward(capsys):
    import os
    from s2sad import cli
    baby = os.path.join(os.path.dirname(os.path.dirname(__file__)), "examples", "babysqrt.py")
    assert cli.main(["show", f"{baby}:babysqrt", "--mode", "forward"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("def babysqrt_jvp(x, x_dot):") and "return (t, t_dot)" in out
    assert cli.main(["show", f"{baby}:babysqrt", "--mode", "forward",
                     "--stage", "optimize"]) == 2
    assert "not a pass of forward mode" in capsys.readouterr().err


def test_hessian_through_custom_vjp_and_error_for_other_calls():
    text = ("import math\nimport s2sad\n\n@s2sad.custom_vjp\ndef softplus(x):\n"
            "    return math.log1p(math.exp(x))\n\ndef fwd(x):\n    return softplus(x), x\n\n"
            "def bwd(x, g):\n    return (g / (1 + math.exp(-x)),)\n\n"
            "softplus.defvjp(fwd, bwd)\n\ndef helper(a):\n    return a * a\n\n"
            "def calls(x):\n    return helper(x) * x\n\ndef loss(w):\n"
            "    return softplus(3.0 * w) * w\n")
    loss = _module_level(None, {}, text)
    sigmoid = 1 / (1 + math.exp(-1.5))
    expected = 6 * sigmoid + 9 * 0.5 * sigmoid * (1 - sigmoid)     # (w softplus(3w))''
    assert s2sad.hessian(loss)(0.5) == pytest.approx(expected, rel=1e-12)
    calls = loss.__globals__["calls"]
    assert s2sad.hessian(calls)(0.5) == pytest.approx(3.0, rel=1e-12)     # (x^3)'' = 6 x


def _fd_second(f, point, i, j, h=1e-4):
    """d2 f / dx_i dx_j at `point`, by central differences of `f` itself (float64)."""
    def at(di, dj):
        p = list(point)
        p[i] += di * h * max(1.0, abs(point[i]))
        p[j] += dj * h * max(1.0, abs(point[j]))
        return f(*p)
    hi, hj = h * max(1.0, abs(point[i])), h * max(1.0, abs(point[j]))
    if i == j:
        p = list(point)
        plus, minus = list(point), list(point)
        plus[i] += hi
        minus[i] -= hi
        return (f(*plus) - 2 * f(*p) + f(*minus)) / (hi * hi)
    return (at(1, 1) - at(1, -1) - at(-1, 1) + at(-1, -1)) / (4 * hi * hj)


@pytest.mark.parametrize("f, point", [pytest.param(f, p, id=f.__name__)
                                      for f, p in corpus_calls.SCALAR])
def test_second_derivatives_through_calls(f, point):
    """hessian, hvp and grad(grad(f)) of functions that call other Python functions
    (nested, in loops, with keywords, recursive, methods, a custom_vjp in the callee),
    against central differences of the function."""
    expected = [[_fd_second(f, point, i, j) for j in range(2)] for i in range(2)]
    for i in range(2):
        assert s2sad.hessian(f, wrt=i)(*point) == pytest.approx(expected[i][i], rel=1e-5)
        v = 0.75
        assert s2sad.hvp(f, wrt=i)(*point, v) == pytest.approx(v * expected[i][i], rel=1e-5)
        for j in range(2):
            second = s2sad.grad(s2sad.grad(f, wrt=i), wrt=j)(*point)
            assert second == pytest.approx(expected[i][j], rel=1e-5, abs=1e-7)


def test_hessian_through_calls_on_arrays():
    x = np.array([0.3, -0.2, 0.5, 0.1])
    h = s2sad.hessian(corpus_calls.arrays)(x)
    fd = np.empty((4, 4))
    for i in range(4):
        for j in range(4):
            def f(a, b):
                y = x.copy()
                y[i] += a
                y[j] += b
                return corpus_calls.arrays(y)
            fd[i, j] = _fd_second(f, (0.0, 0.0), 0, 1 if i != j else 0)
    np.testing.assert_allclose(h, fd, rtol=1e-5, atol=1e-6)


def test_loop_target_reassigned_in_the_body_is_refused():
    f = _module_level(None, {}, "import math\n\ndef f(x):\n    x = math.tanh(x)\n"
                      "    for i in range(3):\n        i = x\n    return i\n")
    with pytest.raises(s2sad.UnsupportedSyntaxError, match="loop variable"):
        s2sad.jvp(f, (0.5,), (1.0,))


# -- element writes: in place into arrays the function made, copies of inputs ------------
def euler_states(k, observed):
    u = np.zeros(len(observed))
    u[0] = 1.0
    for i in range(len(observed) - 1):
        u[i + 1] = u[i] - 0.01 * k * u[i] ** 2
    return np.sum((u - observed) ** 2)


def smooths_its_argument(x):
    for i in range(1, len(x)):
        x[i] = x[i - 1] * 0.5 + x[i]
    return np.sum(x * x)


def smooths_an_alias_of_its_argument(x):
    y = x
    for i in range(1, len(x)):
        y[i] = y[i - 1] * 0.5 + y[i]
    return np.sum(y * y)


def rows_of_a_new_matrix(X):
    Y = np.zeros(X.shape)
    for i in range(1, X.shape[0]):
        Y[i] = Y[i - 1] * 0.5 + X[i]
    return np.sum(Y * Y)


def test_element_writes_into_a_new_array_are_in_place_in_forward_mode():
    # a copy of the array per write made the tangent of a stored trajectory quadratic
    source = s2sad.source(euler_states, wrt=0, mode="forward")
    loop = source[source.index("for i in"):source.index("return")]
    assert "_s2s_setitem" not in loop
    assert re.search(r"u_1\[t_\d+\] = ", loop) and re.search(r"u_1_dot\[t_\d+\] = ", loop)
    observed = 1.0 / (1.0 + 0.007 * np.arange(30))
    h = 1e-6
    _, tangent = s2sad.jvp(euler_states, (1.3, observed), (1.0, np.zeros(30)))
    assert tangent == pytest.approx(
        (euler_states(1.3 + h, observed) - euler_states(1.3 - h, observed)) / (2 * h), rel=1e-6)
    X = np.arange(12.0).reshape(4, 3) / 10
    V = np.linspace(-1.0, 1.0, 12).reshape(4, 3)
    _, tangent = s2sad.jvp(rows_of_a_new_matrix, (X,), (V,))
    assert tangent == pytest.approx((rows_of_a_new_matrix(X + h * V)
                                     - rows_of_a_new_matrix(X - h * V)) / (2 * h), rel=1e-6)


@pytest.mark.parametrize("f", [smooths_its_argument, smooths_an_alias_of_its_argument])
def test_element_writes_into_an_argument_leave_it_unchanged_in_forward_mode(f):
    x, v = np.array([0.3, 0.5, -0.2, 0.9]), np.array([1.0, -0.5, 0.2, 0.3])
    x0, v0 = x.copy(), v.copy()
    value, tangent = s2sad.jvp(f, (x,), (v,))
    np.testing.assert_array_equal(x, x0)
    np.testing.assert_array_equal(v, v0)
    h = 1e-6
    assert value == pytest.approx(f(x0.copy()))
    assert tangent == pytest.approx((f(x0 + h * v0) - f(x0 - h * v0)) / (2 * h), rel=1e-6)



@pytest.mark.parametrize("f", [smooths_its_argument, smooths_an_alias_of_its_argument])
def test_element_writes_into_an_argument_copy_it_once_in_forward_mode(f):
    # a copy per write made the tangent quadratic in the number of writes; the argument
    # and its tangent are copied once, before the loop, and written in place after
    source = s2sad.source(f, wrt=0, mode="forward")
    head, loop = source.split("for i in")
    assert "_s2s_setitem" not in loop
    assert len(re.findall(r"= x\.copy\(\)", head)) == 1
    assert len(re.findall(r"= x_dot\.copy\(\)", head)) == 1


def _written_through_a_broadcast(x, w):
    q = np.prod(0.5 * w, axis=1) * np.ones((2,))
    c = q[:-1] + np.zeros((1, 3))
    for i in range(3):
        c[[0, 0], 1:] -= np.sin(np.broadcast_to(np.sum(x), (1, 2)) * x)
    return np.sum(np.tanh(c))


def test_element_writes_into_an_array_whose_tangent_is_a_broadcast():
    # `c`'s tangent is `q`'s broadcast to c's shape (a read-only view, or q's tangent
    # itself): the loop's element writes into the tangent must not write into it (found by
    # the long fuzz: "assignment destination is read-only")
    f = _written_through_a_broadcast
    x, w = np.array([1.362, -0.303]), np.array([[-1.904, -0.102, 0.229]])
    tx, tw = np.array([1.0, -0.5]), np.array([[0.3, 1.0, -2.0]])
    h = 1e-6
    expected = (f(x + h * tx, w + h * tw) - f(x - h * tx, w - h * tw)) / (2 * h)
    y, y_dot = s2sad.jvp(f, (x, w), (tx, tw))
    assert y == pytest.approx(f(x, w)) and y_dot == pytest.approx(expected, rel=1e-6)
    assert s2sad.jvp(f, (x, w), (None, tw))[1] == pytest.approx(
        (f(x, w + h * tw) - f(x, w - h * tw)) / (2 * h), rel=1e-6)
