"""Lean NumPy gradients: same shapes without unbroadcasting, scalar adjoints of full
reductions, slice adjoints added in place, arrays released after their last use, and
`grad` without the forward statements only the value needs. Every gradient is checked
against central differences; generated code never mutates or aliases the inputs."""
import dataclasses
import math
import re

import numpy as np
import pytest

import s2sad
from s2sad import compilation, driver, pipeline
from s2sad.options import Options, Variant

from numpy_cases import compare, fd_array_grad


def same_shape_in(f, patterns=None):
    """The shape analysis of `f`'s Wengert form, its parameters arrays, with the shape
    `patterns` ({parameter: (dtype, shape pattern)}) of some."""
    arg_types = {p: np.ndarray for p in f.__code__.co_varnames[:f.__code__.co_argcount]}
    ctx, _ = pipeline.compilation(f, arg_types=arg_types, options=Options(patterns=patterns),
                                  until="wengert")
    return ctx.shapes


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def mean_of_product(x, b):
    return np.mean(x * b)


def sum_of_sum(x, b):
    return np.sum(x + b)


def slices(x):
    return np.sum(x[1:] * x[:-1]) + np.sum(x[2:]) + np.sum(x[:-2] ** 2)


def through_copy(x):
    y = x
    return np.sum(y)


def two_sums(x, y):
    return np.sum(x) + 2.0 * np.sum(y)


def reduction_in_loop(x):
    s = 0.0
    for i in range(3):
        s = s + np.sum(x * i)
    return s


def reduction_in_branch(x, c):
    if c > 0:
        s = np.sum(np.sin(x))
    else:
        s = np.mean(x * x)
    return s


def then_matmul(x, W):
    return np.sum(np.tanh(x @ W))


def reshaped(x):
    return np.sum(np.reshape(x * 2.0, (-1,)))


def kept_value(x):
    y = np.sum(x * x)
    return y * y


def indexed_by_array(x, i):
    return np.sum(x[i] * 3.0)


def two_dims(x):
    return np.sum(x[1:, :-1] * x[:-1, 1:])


def logistic(w, X, y):
    z = X @ w
    return np.mean(np.logaddexp(0.0, z) - y * z)


def broadcast_sets(x, b):
    a = x * b
    return np.sum(np.tanh(a) * np.exp(b) - a * a)


def updated_in_place(x):
    y = x * 2.0
    y[0] = 0.0
    return np.sum(y * y)


def updated_copy(x):
    x[0] = 0.0
    return np.sum(x * x)


RNG = np.random.default_rng(7)
CASES = [
    (rosenbrock, (RNG.uniform(-1.5, 1.5, 6),), 0),
    (rosenbrock, (RNG.uniform(-1.5, 1.5, 2),), 0),
    (rosenbrock, (RNG.uniform(-1.5, 1.5, 1),), 0),
    (mean_of_product, (RNG.normal(size=(3, 4)), RNG.normal(size=4)), (0, 1)),
    (mean_of_product, (RNG.normal(size=4), RNG.normal(size=(3, 4))), (0, 1)),
    (sum_of_sum, (RNG.normal(size=(3, 4)), RNG.normal(size=(3, 1))), (0, 1)),
    (slices, (RNG.normal(size=7),), 0),
    (through_copy, (RNG.normal(size=(2, 3)),), 0),
    (two_sums, (RNG.normal(size=3), RNG.normal(size=(2, 2))), (0, 1)),
    (reduction_in_loop, (RNG.normal(size=4),), 0),
    (reduction_in_branch, (RNG.normal(size=4), 1.0), 0),
    (reduction_in_branch, (RNG.normal(size=4), -1.0), 0),
    (then_matmul, (RNG.normal(size=(2, 3)), RNG.normal(size=(3, 4))), (0, 1)),
    (reshaped, (RNG.normal(size=(2, 3)),), 0),
    (kept_value, (RNG.normal(size=3),), 0),
    (indexed_by_array, (RNG.normal(size=5), np.array([0, 2, 2, 4])), 0),
    (two_dims, (RNG.normal(size=(3, 4)),), 0),
    (logistic, (RNG.normal(size=3), RNG.normal(size=(5, 3)), RNG.random(5)), 0),
    (logistic, (RNG.normal(size=3), RNG.normal(size=(5, 3)), 0.5), 0),
    (broadcast_sets, (RNG.normal(size=(2, 3)), RNG.normal(size=3)), (0, 1)),
    (updated_in_place, (RNG.normal(size=4),), 0),
    (updated_copy, (RNG.normal(size=4),), 0),
]


def _ids(case):
    return f"{case[0].__name__}-{'x'.join(map(str, np.shape(case[1][0])))}"


@pytest.mark.filterwarnings("ignore:.*the output does not depend")
@pytest.mark.parametrize("f, args, wrt", CASES, ids=[_ids(c) for c in CASES])
@pytest.mark.parametrize("which", ["grad", "value_and_grad", "vjp"])
def test_gradient_matches_finite_differences(f, args, wrt, which):
    before = [np.copy(a) for a in args]
    if which == "grad":
        got = s2sad.grad(f, wrt)(*args)
    elif which == "value_and_grad":
        value, got = s2sad.value_and_grad(f, wrt)(*args)
        fresh = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        assert value == pytest.approx(f(*fresh), rel=1e-12)
    else:
        if any(getattr(a, "dtype", float) != np.float64 for a in args):
            pytest.skip("vjp differentiates every argument")
        value, pullback = s2sad.vjp(f, *args)
        got = pullback(1.0)
        got = got[wrt] if isinstance(wrt, int) else tuple(got[i] for i in wrt)
    single = not isinstance(wrt, tuple)
    got = (got,) if single else got
    for i, g in zip((wrt,) if single else wrt, got):
        error = compare(g, fd_array_grad(f, args, i), 1e-6, 1e-8, f"d{f.__name__}/d{i}")
        assert error is None, error
        assert np.shape(g) == np.shape(args[i])
        for a in args:
            assert not (isinstance(a, np.ndarray) and np.shares_memory(g, a))
    for a, b in zip(args, before):
        assert np.array_equal(a, b)          # inputs untouched
    for j, g in enumerate(got):              # gradients do not share memory
        assert not any(np.shares_memory(g, h) for h in got[j + 1:])


def test_repeated_calls_give_fresh_gradients():
    x = RNG.normal(size=6)
    df = s2sad.grad(slices)
    first = df(x)
    kept = first.copy()
    second = df(x)
    assert first is not second and np.array_equal(first, kept)


def test_float32_gradient_stays_float32():
    x = np.linspace(-1, 1, 6, dtype=np.float32)
    for f in (rosenbrock, slices, through_copy):
        g = s2sad.grad(f)(x)
        assert g.dtype == np.float32, f.__name__


def _grad_source(f, *args, wrt=0):
    return driver.build(f, wrt, compilation.arg_types_of(f, args),
                        Options(Variant.GRAD, release=True)).source


def test_rosenbrock_gradient_is_lean():
    text = _grad_source(rosenbrock, np.ones(4))
    assert "_s2s_unbroadcast" not in text      # x[1:] and x[:-1] have the same shape
    assert "_s2s_unreduce" not in text          # the sum's adjoint stays the scalar y_bar
    assert "= np.sum(" not in text              # grad does not compute the value
    # the two terms of x_bar[:-1] are computed in that slice, as one expression (see
    # after_ad/combine_terms.py); x_bar[1:] is added in place, through a view of x_bar
    assert text.count("out=x_bar[:-1])") == 1 and "x_bar_view_1" not in text
    assert "x_bar_view = x_bar[1:]" in text and "x_bar_view += " in text
    assert "del t_3" in text


def test_value_and_grad_keeps_the_value():
    text = s2sad.value_and_grad(rosenbrock)
    text(np.ones(4))
    assert "y = np.sum(t_9)" in text.source


def test_unknown_shapes_are_still_unbroadcast():
    text = _grad_source(mean_of_product, np.ones((2, 3)), np.ones(3), wrt=(0, 1))
    assert "_s2s_unbroadcast" in text


def test_grad_does_not_compute_what_only_the_value_needs():
    text = _grad_source(logistic, np.ones(3), np.ones((5, 3)), np.ones(5))
    assert "= np.logaddexp(" not in text        # its derivative does not need it


def test_advanced_index_is_not_added_in_place():
    text = _grad_source(indexed_by_array, np.ones(5), np.array([0, 2, 2]))
    assert "+=" not in text


def test_release_leaves_returned_and_conditional_names():
    text = _grad_source(reduction_in_branch, np.ones(3), 1.0)
    assert "del s" not in text and "del x" not in text


def test_shapes_of_slices():
    def f(x):
        a = x[1:]
        b = x[:-1]
        c = x[2:]
        d = x[1:-1]
        e = a * b
        g = np.tanh(e) + 1.0
        return np.sum(g + c + d)
    shapes = same_shape_in(f)
    assert shapes.same("a", "b") and shapes.same("g", "a") and shapes.same("c", "d")
    assert not shapes.same("a", "c") and not shapes.same("a", "x")


def test_shapes_are_broadcasts_of_sets():
    def f(y, z):
        a = y * z
        b = np.exp(z)
        c = a - b
        d = b * 2.0
        return np.sum(c + d)
    shapes = same_shape_in(f)
    assert shapes.same("c", "a") and shapes.same("d", "b") and shapes.same("d", "z")
    assert not shapes.same("c", "b") and not shapes.same("a", "y")


def test_shapes_of_loop_carried_names_are_unknown():
    def f(x):
        s = x
        for i in range(3):
            s = s[1:] * 2.0
        return np.sum(s)
    shapes = same_shape_in(f)
    assert not shapes.same("s", "x")


def test_a_loop_carried_array_keeps_the_shape_of_its_first_value():
    def heat(u0, kappa):
        u = u0
        for i in range(4):
            lap = np.roll(u, 1) - 2.0 * u + np.roll(u, -1)
            u = u + kappa * lap
        return np.sum(u * u)
    arg_types = {"u0": np.ndarray, "kappa": float}
    ctx, _ = pipeline.compilation(heat, arg_types=arg_types, until="wengert")
    assert ctx.shapes.same("u", "u0") and ctx.shapes.same("lap", "u0")

    def grows(u0, w):          # u * w broadcasts past u0's shape: no class holds
        u = u0
        for i in range(2):
            u = u * w
        return np.sum(u)
    ctx, _ = pipeline.compilation(grows, arg_types={"u0": np.ndarray, "w": np.ndarray},
                                  until="wengert")
    assert ctx.shapes.of("u") is None and not ctx.shapes.same("u", "u0")


def rnn(W, U, b, x, h0):
    h = h0
    for t in range(x.shape[0]):
        h = np.tanh(W @ h + U @ x[t] + b)
    return np.sum(h * h)


def test_a_loop_tapes_stand_ins_for_values_read_only_for_their_shapes():
    # the sums of `W @ h + U @ x[t]` are read back only to unbroadcast their adjoints:
    # the tape keeps data-less stand-ins of them, and the states h (as hand-written)
    rng = np.random.default_rng(3)
    args = (rng.normal(size=(5, 5)) * 0.4, rng.normal(size=(5, 2)), rng.normal(size=(5, 1)),
            rng.normal(size=(4, 2, 3)), rng.normal(size=(5, 3)))
    g = s2sad.grad(rnn, wrt=(0, 1, 2, 4))
    got = g(*args)
    assert "and the shapes of t_3, t_5, t_6 of each iteration" in " ".join(
        line.strip("# ") for line in g.source.splitlines())
    for i, (a, e) in enumerate(zip(got, (fd_array_grad(rnn, args, i) for i in (0, 1, 2, 4)))):
        np.testing.assert_allclose(a, e, rtol=1e-6, atol=1e-9)
    _, pullback = s2sad.vjp(rnn, *args)
    np.testing.assert_allclose(pullback(1.0)[0], fd_array_grad(rnn, args, 0), rtol=1e-6)


def test_a_stand_in_holds_no_data():
    from s2sad.rules import runtime
    x = np.arange(12.0).reshape(3, 4)
    s = runtime.like(x)
    assert s.shape == x.shape and s.dtype == x.dtype and type(s) is np.ndarray
    assert not s.flags.writeable and s.strides == (0, 0) and not np.shares_memory(s, x)
    g = np.ones((2, 3, 4))
    np.testing.assert_array_equal(runtime.unbroadcast(g, s), runtime.unbroadcast(g, x))
    assert runtime.like(2.5) == 2.5 and runtime.like([x])[0] is x


def test_logistic_gradient_is_written_like_by_hand():
    """Specialised on its arguments' shape patterns and dtypes, the gradient of a mean
    loss keeps the mean's adjoint a number and computes in the buffer of `X @ w`."""
    w, X, y = RNG.normal(size=3), RNG.normal(size=(50, 3)), RNG.random(50)
    df = s2sad.grad(logistic)
    got = df(w, X, y)
    assert compare(got, fd_array_grad(logistic, (w, X, y), 0), 1e-6, 1e-8, "dw") is None
    text = df.source
    assert "_s2s_unreduce" not in text and "_s2s_unbroadcast" not in text
    assert "z_bar -= y" in text and "* y" not in text    # no temporary for y * g
    assert "X.ndim != 2" in text and "y.dtype != float64" in text    # the guard


@pytest.mark.parametrize("y", [RNG.random((50,)), RNG.random((1,)), RNG.random(()),
                               RNG.random((50, 1)), RNG.random(50).astype(np.float32)],
                         ids=["same", "one", "0d", "column", "float32"])
def test_specialised_gradient_respecialises(y):
    """One gradient object called with arguments of other shape patterns and dtypes
    compiles another version each time, and each is right."""
    w, X = RNG.normal(size=3), RNG.normal(size=(50, 3))
    df = s2sad.grad(logistic)
    df(w, X, RNG.random(50))                 # first specialised on (50,) float64
    got = df(w, X, y)
    expected = fd_array_grad(logistic, (w, X, y), 0)
    assert compare(got, expected, 1e-6, 1e-8, "dw") is None
    x1 = RNG.normal(size=(1, 3))             # a batch of one: an axis of length 1
    got = df(w, x1, y[:1] if y.ndim else y)
    expected = fd_array_grad(logistic, (w, x1, y[:1] if y.ndim else y), 0)
    assert compare(got, expected, 1e-6, 1e-8, "dw") is None


def test_matrix_products_are_not_elementwise():
    """np.matmul is a ufunc, but not an elementwise one (it has a signature)."""
    def f(a, b):
        t = np.matmul(a, b)
        return t
    matrix = ("<f8", (0, 0))
    shapes = same_shape_in(f, {"a": matrix, "b": matrix})
    assert not shapes.same("t", "a") and not shapes.same("a", "b")


@pytest.mark.parametrize("which", ["grad", "value_and_grad"])
def test_float32_parameter_with_float64_data(which):
    """The gradient of a float32 parameter is float32 when float64 data promotes its
    adjoint (as JAX casts a cotangent to its primal's dtype)."""
    w = RNG.normal(size=3).astype(np.float32)
    X, y = RNG.normal(size=(20, 3)), RNG.random(20)
    if which == "grad":
        got = s2sad.grad(logistic)(w, X, y)
    else:
        _, got = s2sad.value_and_grad(logistic)(w, X, y)
    assert got.dtype == np.float32
    expected = fd_array_grad(logistic, (w.astype(np.float64), X, y), 0)
    assert compare(got, expected, 1e-5, 1e-6, "dw") is None


def test_patterns_of_reductions_along_constant_axes():
    def f(Z, v, u):
        m = np.max(Z, axis=1, keepdims=True)
        S = Z - m
        s = np.sum(Z, axis=0)
        t = s * v
        w = np.sum(Z, axis=0, keepdims=True)
        r = u * w
        return S, t, r
    matrix, vector = ("<f8", (0, 0)), ("<f8", (0,))
    shapes = same_shape_in(f, {"Z": matrix, "v": vector, "u": vector})
    assert shapes.same("S", "Z") and shapes.same("t", "s") and shapes.same("t", "v")
    assert shapes.pattern_of("m") == (0, 1) and shapes.pattern_of("w") == (1, 0)
    assert shapes.same("r", "w") and not shapes.same("r", "u")  # (n,) * (1, n): (1, n)


def _rosenbrock_gradient(x):
    """The analytic gradient of rosenbrock, in float64."""
    x = x.astype(np.float64)
    g = np.zeros_like(x)
    d = x[1:] - x[:-1] ** 2
    g[1:] += 200.0 * d
    g[:-1] += -400.0 * d * x[:-1] - 2.0 * (1.0 - x[:-1])
    return g


@pytest.mark.parametrize("dtype, spelled", [(np.float64, "np.zeros(x.shape)\n"),
                                            (np.float32, "np.zeros(x.shape, float32)\n")])
def test_gradient_of_a_specialised_dtype_starts_from_np_zeros(dtype, spelled):
    # the dtype is known from the specialisation: no helper checks the argument
    x = RNG.uniform(-1.5, 1.5, 9).astype(dtype)
    df = s2sad.grad(rosenbrock)
    g = df(x)
    assert g.dtype == dtype
    np.testing.assert_allclose(g, _rosenbrock_gradient(x),
                               rtol=1e-10 if dtype == np.float64 else 2e-4, atol=1e-3 * (
                                   dtype == np.float32))
    assert "x_bar = " + spelled in df.source and "_s2s_zeros_like" not in df.source
    assert f"x.dtype != {np.dtype(dtype).name}" in df.source


def logsin(x1, x2):
    return np.log(x1) + x1 * x2 - np.sin(x2)


def projectile(v0, angle, drag=0.05, dt=1e-2):
    vx, vy, x = v0 * np.cos(angle), v0 * np.sin(angle), 0.0
    for i in range(20):
        speed = np.sqrt(vx * vx + vy * vy)
        vx = vx - dt * drag * speed * vx
        vy = vy - dt * (9.81 + drag * speed * vy)
        x = x + dt * vx
    return x


def test_numpy_functions_of_floats_are_numbers():
    # np.log of a float is a NumPy scalar: no adjoint is summed back to a shape
    g = s2sad.grad(logsin, wrt=(0, 1))
    got = g(2.0, 5.0)
    assert got == pytest.approx((1 / 2.0 + 5.0, 2.0 - np.cos(5.0)), rel=1e-12)
    assert "_s2s_unbroadcast" not in g.source and "_s2s_like" not in g.source
    # np.cos of a float is a float: the seed 1.0 does not multiply it
    assert "x2_bar = x1 - np.cos(x2)" in g.source


def test_a_ufunc_whose_result_is_not_a_float_keeps_the_seed_product():
    # np.isnan(x) is a bool: y_bar * np.isnan(x) is a float, np.isnan(x) alone is not
    def f(x):
        return x * np.isnan(x)
    g = s2sad.grad(f)
    assert g(2.0) == 0.0 and type(g(2.0)) is not np.bool_


def speed_loss(vx, vy):
    speed = np.sqrt(vx * vx + vy * vy)
    return speed * vx


def test_the_halves_of_a_square_roots_adjoint_cancel_the_doubled_terms():
    # d/dv sqrt(vx^2 + vy^2) = v / speed: `t_bar = s_bar / (2 * speed)` read only as
    # `2 * t_bar * vx` is `s_bar / speed`, read as `t_bar * vx`
    g = s2sad.grad(speed_loss, wrt=(0, 1))
    vx, vy = 3.0, -4.0
    speed = 5.0
    assert g(vx, vy) == pytest.approx((speed + vx * vx / speed, vx * vy / speed), rel=1e-12)
    assert "/ speed" in g.source and "2 * " not in g.source


def test_defaults_are_specialised_on_like_arguments():
    # drag and dt take their defaults: floats, which the guard checks; given as a 0-d
    # array later, the gradient is compiled again for it
    g = s2sad.grad(projectile, wrt=(0, 1))
    h = 1e-6
    for extra in ((), (0.1,), (np.array(0.1),), (0.1, np.array(0.02))):
        got = g(10.0, 0.7, *extra)
        expected = (projectile(10.0 + h, 0.7, *extra) - projectile(10.0 - h, 0.7, *extra)) / (2 * h)
        assert float(got[0]) == pytest.approx(float(expected), rel=1e-6)
    g = s2sad.grad(projectile, wrt=(0, 1))
    g(10.0, 0.7)
    assert "drag.__class__ is not float" in g.source
    assert "_s2s_unbroadcast" not in g.source
    # `dt * drag` does not change in the loop: computed again, not taped
    assert "    #     speed, vx, vy of each iteration of the loop" in g.source


@dataclasses.dataclass
class Launch:
    v0: float
    angle: float
    drag: float
    dt: float


def projectile_of_a_record(p):
    vx, vy, x = p.v0 * np.cos(p.angle), p.v0 * np.sin(p.angle), 0.0
    for i in range(20):
        speed = np.sqrt(vx * vx + vy * vy)
        vx = vx - p.dt * p.drag * speed * vx
        vy = vy - p.dt * (9.81 + p.drag * speed * vy)
        x = x + p.dt * vx
    return x


def assert_record_gradient(got, p):
    """`got`, the gradient of projectile_of_a_record at `p`, field by field against
    central differences."""
    h = 1e-6
    for field in ("v0", "angle", "drag", "dt"):
        up = dataclasses.replace(p, **{field: getattr(p, field) + h})
        down = dataclasses.replace(p, **{field: getattr(p, field) - h})
        expected = (projectile_of_a_record(up) - projectile_of_a_record(down)) / (2 * h)
        assert getattr(got, field) == pytest.approx(expected, rel=1e-6)


def test_fields_of_a_record_the_loop_does_not_change_are_read_again():
    # p.dt and p.drag (and their product) are not taped in every iteration
    p = Launch(10.0, 0.7, 0.05, 0.01)
    g = s2sad.grad(projectile_of_a_record)
    got = g(p)
    # (vx_1, the next iteration's vx, is carried by the reversed loop: see test_tapes)
    assert "    #     speed, t_18, vx, vy of each iteration" in g.source
    assert_record_gradient(got, p)


def test_the_seed_of_a_loops_number_output_is_one_and_folds():
    # x, a sum of numbers over the loop, is a number: its adjoint is 1.0 (no run-time
    # test of its type), and `x_bar * p.dt` is `p.dt`'s name (a float field the guard
    # checks)
    p = Launch(10.0, 0.7, 0.05, 0.01)
    g = s2sad.grad(projectile_of_a_record)
    g(p)
    # (x_bar = 1.0 goes once every product by it has folded)
    assert "_s2s_seed" not in g.source
    assert all(line.strip() == "x_bar = 1.0" for line in g.source.splitlines()
               if line.strip().startswith("x_bar ="))
    dt = next(line.split(" = ")[0].strip() for line in g.source.splitlines()
              if line.strip().endswith("= p.dt"))
    assert f"x_bar * {dt}" not in g.source and f"vx_bar + {dt}" in g.source
    d = s2sad.grad(projectile, wrt=(0, 1))
    got = d(20.0, 0.8)
    assert "_s2s_seed" not in d.source
    h = 1e-6
    assert got[0] == pytest.approx((projectile(20.0 + h, 0.8) - projectile(20.0 - h, 0.8))
                                   / (2 * h), rel=1e-6)


def test_grad_does_not_compute_a_loop_value_only_the_output_needs():
    # x = x + dt * vx in the loop feeds only the output, which grad does not return:
    # grad computes neither it nor x = 0.0 (value_and_grad does)
    p = Launch(10.0, 0.7, 0.05, 0.01)
    g = s2sad.grad(projectile_of_a_record)
    got = g(p)
    loop = g.source.split("for i in range(20):")[1].split("_s2s_tape.append")[0]
    assert "x = " not in loop and "x = 0.0" not in g.source
    assert_record_gradient(got, p)
    v = s2sad.value_and_grad(projectile_of_a_record)
    assert v(p)[0] == pytest.approx(projectile_of_a_record(p), rel=1e-15)
    assert "x = x + " in v.source


def unused_loops(x, n=4):
    acc = 0.0
    for i in range(n):
        acc = acc + 1.0 / (x - i)       # nothing reads acc
    s = x
    for i in range(n):
        s = s * x
    return s


def test_a_loop_only_dead_values_need_goes():
    g = s2sad.grad(unused_loops)
    x = 1.7
    assert g(x) == pytest.approx(5 * x ** 4, rel=1e-12)
    loops = [line for line in g.source.splitlines() if line.lstrip().startswith("for ")]
    assert "acc" not in g.source and len(loops) == 2        # s's loop, and reversed


def test_numbers_a_loop_tapes_are_floats_to_the_peephole_pass():
    # vx_1, the next iteration's vx, comes from the tape: a float, so x_bar * vx_1
    # (x_bar is the seed 1.0) is vx_1
    p = Launch(10.0, 0.7, 0.05, 0.01)
    g = s2sad.grad(projectile_of_a_record)
    g(p)
    assert not re.search(r"\bx_bar \*", g.source)


def rebound_in_a_loop(x, a):
    # x is a float parameter that the loop makes an array: not a float
    for i in range(2):
        x = x * a
    y = 1.0 * x
    y[0] = 0.0
    return np.sum(x * x) + np.sum(y)


def test_a_float_parameter_rebound_to_an_array_is_not_a_float():
    a = np.array([0.5, 1.5, 2.0])
    g = s2sad.grad(rebound_in_a_loop, wrt=(0, 1))
    gx, ga = g(1.3, a)
    fd_x = (rebound_in_a_loop(1.3 + 1e-6, a) - rebound_in_a_loop(1.3 - 1e-6, a)) / 2e-6
    assert gx == pytest.approx(fd_x, rel=1e-6)
    assert ga == pytest.approx(fd_array_grad(rebound_in_a_loop, (1.3, a), 1), rel=1e-6)


def test_a_negated_adjoint_flips_the_sums_it_is_a_term_of():
    # the adjoints of `- dt * drag * speed * vx` start from -vx_bar: no negation is
    # computed; the names that hold the negated values say so
    p = Launch(10.0, 0.7, 0.05, 0.01)
    g = s2sad.grad(projectile_of_a_record)
    got = g(p)
    loop = g.source.split("in reversed(_s2s_tape):")[1].split("\n    #")[0]
    assert not re.search(r"= -|[(+*/-] -", loop) and "minus_" in loop
    assert_record_gradient(got, p)


def negations(x, y):
    t = -x * y           # read in a difference's left term, a quotient, a product
    u = (t - y) / x + t * t
    return u - (-t) * y


def test_negations_pushed_keep_the_values():
    g = s2sad.grad(negations, wrt=(0, 1))
    for x, y in ((1.5, -0.7), (-2.0, 3.0)):
        gx, gy = g(x, y)
        h = 1e-6
        assert gx == pytest.approx((negations(x + h, y) - negations(x - h, y)) / (2 * h), rel=1e-6)
        assert gy == pytest.approx((negations(x, y + h) - negations(x, y - h)) / (2 * h), rel=1e-6)


NEGATED = '''
def f(a, b, c):
    t = -a
    u = t * b
    v = c + u * c
    w = u / c + b
    z = -(u * b)
    q = u - c
    r = q * b + c
    return v, w, z, r
'''


def test_each_way_a_negation_is_pushed_gives_the_same_values():
    # the rewrite against the code it rewrites: a sum's right term (v), left term (w),
    # a negation (z), a difference's left term (q), flipped names (u, q)
    from s2sad import syntax
    from s2sad.ad.simplify import negations_pushed
    from s2sad.analysis.names import store_counts
    fn = syntax.parse(NEGATED).body[0]
    names = {"a", "b", "c", "t", "u", "v", "w", "z", "q", "r"}
    out = negations_pushed(fn, names, store_counts(fn), fresh=lambda n: n + "_")
    text = syntax.unparse(out)
    assert "-a" not in text and "-(" not in text and "minus_u" in text
    before, after = {}, {}
    exec(NEGATED, before)
    exec(text, after)
    rng = np.random.default_rng(0)
    for a, b, c in rng.normal(size=(20, 3)):
        assert after["f"](a, b, c) == before["f"](a, b, c)      # bit for bit


def index_read_after_a_dead_loop(x):
    b = x * x
    for i in range(0, 5, 2):
        w = math.sin(b)  # noqa: F841 - nothing reads w: the loop is kept for i
    if i > 1:
        return b * x
    return x


def test_a_loop_whose_index_is_read_after_it_stays():
    # (found by the fuzzer: the emptied loop went, and i with it)
    g = s2sad.grad(index_read_after_a_dead_loop)
    assert g(0.5) == pytest.approx(3 * 0.5 ** 2, rel=1e-12)
    assert "w = " not in g.source
