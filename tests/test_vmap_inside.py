"""`s2sad.vmap(g, in_axes, out_axes)(x, ...)` called inside a differentiated function, in
every mode, against central differences of the function as it is (which runs s2sad's
own vmap) or an analytic formula."""
import inspect

import numpy as np
import pytest

import s2sad
from numpy_cases import fd_array_grad, fd_hessian

X = np.array([[0.3, -0.7, 1.1], [0.5, 0.2, -0.4]])
W = np.array([0.4, -0.3, 0.8])
TOL = dict(rtol=1e-6, atol=1e-9)


def row_energy(r, w):
    return np.tanh(np.dot(r, w)) * np.sum(r * r)


def by_rows(x, w):
    return np.sum(s2sad.vmap(row_energy, in_axes=(0, None))(x, w) ** 2)


def by_columns(x, w):
    return np.sum(s2sad.vmap(row_energy, in_axes=(1, None))(x.T, w) * np.array([1.0, -2.0]))


def lambda_of_rows(x):
    return np.sum(s2sad.vmap(lambda r: np.sum(r * r))(x))


def closing_over(x, c):
    scaled = s2sad.vmap(lambda r: np.sin(c * r) * r, out_axes=1)(x)
    return np.sum(scaled * np.arange(6.0).reshape(3, 2))


def nested_def(x, c):
    def item(r):
        return np.exp(c * r[0]) + r[1] * r[2]
    return np.sum(np.log1p(s2sad.vmap(item)(x) ** 2))


def two_results(x, w):
    def halves(r):
        return np.sum(r * w), r[1:] * r[0]
    s, p = s2sad.vmap(halves, out_axes=(0, 1))(x)
    return np.sum(np.sin(s)) + np.sum(p * np.array([[1.0, 2.0], [3.0, -1.0]]))


def loss(w, x, y):
    return (np.dot(x, w) - y) ** 2


def clipped_loss(w, xs, ys):
    per_example = s2sad.vmap(s2sad.grad(loss), in_axes=(None, 0, 0))(w, xs, ys)
    return np.sum(np.tanh(per_example) ** 2)


batched_energy = s2sad.vmap(row_energy, in_axes=(0, None))


def stored_outside(x, w):
    return np.sum(np.cos(batched_energy(x, w)))


@pytest.mark.parametrize("f, args", [
    (by_rows, (X, W)), (by_columns, (X, W)), (lambda_of_rows, (X,)),
    (closing_over, (X, 0.7)), (nested_def, (X, 0.4)), (two_results, (X, W)),
    (stored_outside, (X, W))], ids=lambda v: getattr(v, "__name__", ""))
def test_grad_and_value_and_grad_match_central_differences(f, args):
    wrt = tuple(range(len(args)))
    grads = s2sad.grad(f, wrt=wrt)(*args)
    value, again = s2sad.value_and_grad(f, wrt=wrt)(*args)
    assert value == pytest.approx(f(*args), rel=1e-12)
    for i, a in enumerate(args):
        expected = fd_array_grad(f, args, i)
        np.testing.assert_allclose(grads[i], expected, **TOL)
        np.testing.assert_allclose(again[i], expected, **TOL)


def test_the_closed_over_value_carries_its_derivative():
    # d/dc of sum_k sum_j m_kj sin(c x_kj) x_kj is sum m x^2 cos(c x): no perturbation
    # confusion (c taken for a constant inside the batch would give 0)
    m = np.arange(6.0).reshape(3, 2).T
    expected = np.sum(m * X ** 2 * np.cos(0.7 * X))
    assert s2sad.grad(closing_over, wrt=1)(X, 0.7) == pytest.approx(expected, rel=1e-12)


def batch_of_energies(x, w):
    return s2sad.vmap(row_energy, in_axes=(0, None))(x, w)


def test_vjp_matches_central_differences():
    y_bar = np.array([0.7, -1.3])
    y, pullback = s2sad.vjp(batch_of_energies, X, W)
    np.testing.assert_allclose(y, [row_energy(r, W) for r in X], rtol=1e-14)
    x_bar, w_bar = pullback(y_bar)

    def projected(x, w):
        return np.dot(batch_of_energies(x, w), y_bar)
    np.testing.assert_allclose(x_bar, fd_array_grad(projected, (X, W), 0), **TOL)
    np.testing.assert_allclose(w_bar, fd_array_grad(projected, (X, W), 1), **TOL)


def test_jvp_and_jacfwd_match_central_differences():
    v = np.array([[1.0, 0.5, -0.2], [0.3, -1.0, 0.4]])
    value, tangent = s2sad.jvp(closing_over, (X, 0.7), (v, 0.25))
    assert value == pytest.approx(closing_over(X, 0.7), rel=1e-12)
    expected = (np.sum(fd_array_grad(closing_over, (X, 0.7), 0) * v)
                + 0.25 * fd_array_grad(closing_over, (X, 0.7), 1))
    assert tangent == pytest.approx(expected, rel=1e-6)
    J = s2sad.jacfwd(batch_of_energies, wrt=0)(X, W)
    for k in range(2):
        np.testing.assert_allclose(J[k], fd_array_grad(
            lambda x: batch_of_energies(x, W)[k], (X,), 0), **TOL)


def test_hessian_and_hvp_match_an_analytic_formula():
    # closing_over is sum m x sin(c x): d2/dc2 = -sum m x^3 sin(c x), d2/dx2 diagonal
    m = np.arange(6.0).reshape(3, 2).T
    c = 0.7
    assert s2sad.hessian(closing_over, wrt=1)(X, c) == pytest.approx(
        -np.sum(m * X ** 3 * np.sin(c * X)), rel=1e-12)
    diagonal = m * (2 * c * np.cos(c * X) - c * c * X * np.sin(c * X))
    v = np.array([[1.0, 0.5, -0.2], [0.3, -1.0, 0.4]])
    np.testing.assert_allclose(s2sad.hvp(closing_over)(X, c, v), diagonal * v, rtol=1e-12,
                               atol=1e-14)
    H = s2sad.hessian(lambda_of_rows)(X)
    np.testing.assert_allclose(H, 2 * np.eye(6).reshape(2, 3, 2, 3), atol=1e-14)


def test_hessian_of_a_batch_with_shared_weights_matches_central_differences():
    H = s2sad.hessian(by_rows, wrt=1)(X, W)
    np.testing.assert_allclose(H, fd_hessian(lambda w: by_rows(X, w), W), rtol=1e-5,
                               atol=1e-7)


def test_per_example_gradients_inside_a_loss():
    ys = np.array([0.5, -1.0])
    g = s2sad.grad(clipped_loss)(W, X, ys)
    np.testing.assert_allclose(g, fd_array_grad(clipped_loss, (W, X, ys), 0), **TOL)
    gx = s2sad.grad(clipped_loss, wrt=1)(W, X, ys)
    np.testing.assert_allclose(gx, fd_array_grad(clipped_loss, (W, X, ys), 1), **TOL)


def changing(r):
    return np.sum(r ** 3)


def uses_changing(x):
    return np.sum(s2sad.vmap(changing)(x) ** 2)


def _check_each_mode(g, H):
    expected = fd_array_grad(uses_changing, (X,), 0)
    np.testing.assert_allclose(g(X), expected, **TOL)
    v = np.array([[1.0, 0.5, -0.2], [0.3, -1.0, 0.4]])
    assert s2sad.jvp(uses_changing, (X,), (v,))[1] == pytest.approx(np.sum(expected * v),
                                                                      rel=1e-6)
    np.testing.assert_allclose(H(X), fd_hessian(uses_changing, X), rtol=1e-5, atol=1e-6)


def test_a_redefined_function_gives_the_new_derivative():
    global changing
    g, H = s2sad.grad(uses_changing), s2sad.hessian(uses_changing)
    _check_each_mode(g, H)

    def changing(r):        # (a notebook's cell run again)
        return np.sum(np.sin(r))
    _check_each_mode(g, H)


def _at_line_of(info, fn, text):
    """The error `info` begins with this file and the line of `fn` that has `text`."""
    lines, first = inspect.getsourcelines(fn)
    line = first + next(k for k, source in enumerate(lines) if text in source)
    assert str(info.value).startswith(f"{__file__}:{line}: "), str(info.value)


def test_batches_of_different_sizes_raise_as_vmap_does():
    def h(x, y):
        return np.sum(s2sad.vmap(lambda a, b: np.sum(a * b))(x, y))
    with pytest.raises(s2sad.S2SADError, match="different sizes"):
        s2sad.grad(h)(X, np.ones((3, 3)))


def test_out_axes_none_is_refused_at_the_users_line():
    def h(x):
        return np.sum(s2sad.vmap(lambda r: np.sum(r), out_axes=None)(x))
    with pytest.raises(s2sad.S2SADError, match="out_axes") as info:
        s2sad.grad(h)(X)
    assert info.value.filename == __file__
    assert "s2sad.vmap(lambda r" in info.value.text


def test_a_tuple_result_needs_a_tuple_of_out_axes():
    def h(x):
        a, b = s2sad.vmap(lambda r: (r[0], r[1]))(x)
        return np.sum(a * b)
    for mode in (s2sad.grad, s2sad.hessian):
        with pytest.raises(s2sad.S2SADError, match="out_axes a tuple") as info:
            mode(h)(X)
        _at_line_of(info, h, "s2sad.vmap(")


def pair_loss(w, r):
    return np.sum(np.tanh(r * w)) ** 2


def one_out_axis(w, x):
    v, g = s2sad.vmap(s2sad.value_and_grad(pair_loss), in_axes=(None, 0))(w, x)
    return np.sum(v) + np.sum(g ** 2)


def test_a_value_and_grad_batched_with_one_out_axis_is_refused_at_the_users_line():
    # (the refusal named no line: it is raised by the loop s2sad writes for the call)
    w = np.array([0.5, -1.2, 0.3])
    for mode in (s2sad.grad, s2sad.jacfwd):
        with pytest.raises(s2sad.S2SADError, match="out_axes a tuple") as info:
            mode(one_out_axis)(w, X)
        _at_line_of(info, one_out_axis, "s2sad.vmap(")


def test_the_numba_backend_refuses_at_the_users_line():
    def h(x):
        return np.sum(s2sad.vmap(lambda r: np.sum(r * r))(x))
    with pytest.raises(s2sad.S2SADError, match="numba backend cannot compile") as info:
        s2sad.grad(h, backend="numba")(X)
    assert f"{__file__}:" in str(info.value)


def test_per_example_gradients_of_a_closure_carry_its_derivative():
    # sum_k |grad_r (c sum r^3)|^2 = sum 9 c^2 r^4: d/dc = 18 c sum r^4, d/dr = 36 c^2 r^3
    def h(x, c):
        return np.sum(s2sad.vmap(s2sad.grad(lambda r: c * np.sum(r ** 3)))(x) ** 2)
    dx, dc = s2sad.grad(h, wrt=(0, 1))(X, 0.5)
    assert dc == pytest.approx(18 * 0.5 * np.sum(X ** 4), rel=1e-12)
    np.testing.assert_allclose(dx, 36 * 0.25 * X ** 3, rtol=1e-12)


def test_a_vmap_of_a_vmap_and_a_negative_axis():
    def h(x):
        return np.sum(s2sad.vmap(s2sad.vmap(lambda t: np.sin(t) * t))(x))
    np.testing.assert_allclose(s2sad.grad(h)(X), np.sin(X) + X * np.cos(X), rtol=1e-12)

    def columns(x):
        return s2sad.vmap(lambda r: np.sum(r * r), in_axes=-1)(x)
    J = s2sad.jacfwd(columns)(X)
    np.testing.assert_allclose(J, np.stack([fd_array_grad(lambda x: columns(x)[k], (X,), 0)
                                            for k in range(3)]), **TOL)


def test_more_arguments_than_the_function_batches_are_refused_at_the_users_line():
    def h(x):
        return np.sum(s2sad.vmap(lambda r: np.sum(r * r))(x, x))
    with pytest.raises(s2sad.S2SADError, match="2 argument") as info:
        s2sad.grad(h)(X)
    assert info.value.filename == __file__


def test_the_pullback_falls_back_to_the_loop_where_the_gradient_does_not_batch(monkeypatch):
    def not_batchable(f, wrt):      # (vmap refuses a derivative other than grad's)
        def made(*args):
            return f(*args)
        made.s2s_made_by = "jacrev"
        return made

    def h(x, c):
        return np.sum(s2sad.vmap(lambda r: np.cos(c * r[0]) * r[1] ** 2)(x) ** 2)
    monkeypatch.setattr(s2sad.api, "grad", not_batchable)
    dx, dc = s2sad.grad(h, wrt=(0, 1))(X, 1.3)
    np.testing.assert_allclose(dx, fd_array_grad(h, (X, 1.3), 0), **TOL)
    assert dc == pytest.approx(fd_array_grad(h, (X, 1.3), 1), rel=1e-6)


def paired(x):
    pair = [x, 2.0 * x]
    return np.sum(s2sad.vmap(lambda d: np.sum(d[0] * np.sin(d[1])))(pair))


def test_a_batched_list_in_jvp_and_refused_by_the_loop():
    # jvp runs vmap's own batched jvp, which batches each array of the list
    value, tangent = s2sad.jvp(paired, (X,), (X,))
    assert value == pytest.approx(paired(X), rel=1e-14)
    assert tangent == pytest.approx(np.sum(fd_array_grad(paired, (X,), 0) * X), rel=1e-6)
    # the loop of second derivatives would index the list itself: refused, at the line
    line = paired.__code__.co_firstlineno + 2
    with pytest.raises(s2sad.S2SADError, match=rf"test_vmap_inside.py:{line}: vmap called "
                       "inside a differentiated function batches arrays along an axis, not "
                       "lists, tuples or dicts"):
        s2sad.hessian(paired)(X)


def test_the_tangent_falls_back_to_the_loop_where_the_jvp_does_not_batch(monkeypatch):
    def not_batchable(f, wrt, jvp):     # (vmap refuses a derivative other than grad's)
        def made(*args):
            return f(*args)
        made.s2s_made_by = "jacrev"
        return made

    def h(x, c):
        return np.sum(s2sad.vmap(lambda r: np.exp(c * r[0]) * r[2] ** 2)(x) ** 2)
    monkeypatch.setattr(s2sad.frontend.gradients, "jvp_function", not_batchable)
    v = np.array([[1.0, 0.5, -0.2], [0.3, -1.0, 0.4]])
    value, tangent = s2sad.jvp(h, (X, 0.6), (v, 0.5))
    expected = (np.sum(fd_array_grad(h, (X, 0.6), 0) * v)
                + 0.5 * fd_array_grad(h, (X, 0.6), 1))
    assert tangent == pytest.approx(expected, rel=1e-6)


def shared_scale(c):
    return np.sum(s2sad.vmap(lambda r, c: np.sum(np.sin(c * r) * r), in_axes=(0, None))(X, c)
                  ** 2)


def test_grad_of_grad_matches_an_analytic_formula():
    # s_k = sum_j sin(c x_kj) x_kj; h = sum_k s_k^2; h'' = 2 sum_k (s_k'^2 + s_k s_k'')
    c = 0.7
    s = np.sum(np.sin(c * X) * X, axis=1)
    s1 = np.sum(np.cos(c * X) * X ** 2, axis=1)
    s2 = -np.sum(np.sin(c * X) * X ** 3, axis=1)
    assert s2sad.grad(shared_scale)(c) == pytest.approx(2 * np.sum(s * s1), rel=1e-12)
    assert s2sad.grad(s2sad.grad(shared_scale))(c) == pytest.approx(
        2 * np.sum(s1 ** 2 + s * s2), rel=1e-12)


def called_in_a_loop(x, c):
    t = 0.0
    for i in range(3):
        t = t + np.sum(batch_of_energies(x * (i + 1), c * W) ** 2)
    return t


def test_a_callee_that_calls_vmap_in_a_loop():
    args = (X, 0.7)
    g = s2sad.grad(called_in_a_loop, wrt=(0, 1))(*args)
    np.testing.assert_allclose(g[0], fd_array_grad(called_in_a_loop, args, 0), **TOL)
    assert g[1] == pytest.approx(fd_array_grad(called_in_a_loop, args, 1), rel=1e-6)


def test_export_refuses_at_the_users_function():
    with pytest.raises(s2sad.S2SADError, match="runs without it") as info:
        s2sad.export(by_rows, None, args=(X, W))
    assert f"{__file__}:" in str(info.value)


def sine_loss(w, x):
    return np.sin(np.dot(x, w)) ** 2


def values_and_gradients(w):
    v, g = s2sad.vmap(s2sad.value_and_grad(sine_loss), in_axes=(None, 0), out_axes=(0, 0))(
        w, X)
    return np.sum(v) + np.sum(g ** 2)


def test_vmap_of_value_and_grad_in_each_mode():
    np.testing.assert_allclose(s2sad.grad(values_and_gradients)(W),
                               fd_array_grad(values_and_gradients, (W,), 0), **TOL)
    _, tangent = s2sad.jvp(values_and_gradients, (W,), (X[0],))
    assert tangent == pytest.approx(np.dot(fd_array_grad(values_and_gradients, (W,), 0),
                                           X[0]), rel=1e-6)
    np.testing.assert_allclose(s2sad.hessian(values_and_gradients)(W),
                               fd_hessian(values_and_gradients, W), rtol=1e-5, atol=1e-6)


def test_a_hessian_whose_batched_pass_is_refused_tries_it_once(monkeypatch):
    from s2sad import batched_jacobians
    tried = []
    original = batched_jacobians._tried

    def counting(code, wrt, arg_types):
        made = original(code, wrt, arg_types)
        tried.append(made is None)
        return made
    monkeypatch.setattr(batched_jacobians, "_tried", counting)

    def fresh(x, w):        # (of its own: no other test compiled its Hessian)
        return np.sum(s2sad.vmap(row_energy, in_axes=(0, None))(x, w) ** 3)
    H = s2sad.hessian(fresh, wrt=1)
    first = H(X, W)
    count = len(tried)
    again = H(X, W)
    assert True in tried and len(tried) == count       # (refused once, remembered)
    np.testing.assert_allclose(again, first, rtol=1e-15)
    np.testing.assert_allclose(again, fd_hessian(lambda w: fresh(X, w), W), rtol=1e-5,
                               atol=1e-7)


SQUARES_OF_ROWS = s2sad.vmap(lambda r: np.sum(r * r))      # made once, at module level


def through_a_module_level_vmap_of_a_lambda(x):
    return np.sum(SQUARES_OF_ROWS(x) * np.array([1.0, 3.0]))


def test_a_module_level_vmap_of_a_lambda():
    """(Its cotangent function was named after the lambda, `<lambda>_cotangent`: an
    InternalError.) The gradient is 2 x scaled by each row's weight."""
    want = 2 * X * np.array([[1.0], [3.0]])
    np.testing.assert_allclose(s2sad.grad(through_a_module_level_vmap_of_a_lambda)(X), want,
                               rtol=1e-15)
    _, tangent = s2sad.jvp(through_a_module_level_vmap_of_a_lambda, (X,), (X,))
    assert tangent == pytest.approx(np.sum(want * X), rel=1e-14)


def with_its_input(r):
    return np.sum(r * r), r


def sums_of_pairs(x):
    return np.sum(s2sad.vmap(with_its_input)(x)[0])


def test_a_tuple_result_with_one_out_axis_is_refused_at_the_users_line():
    """(When it runs: the loop's check, and the batched rules', named no line.)"""
    line = sums_of_pairs.__code__.co_firstlineno + 1
    at = rf"test_vmap_inside.py:{line}: vmap called inside a differentiated function takes"
    for run in (lambda: s2sad.grad(sums_of_pairs)(X),
                lambda: s2sad.jvp(sums_of_pairs, (X,), (X,)),
                lambda: s2sad.hessian(sums_of_pairs)(X[:1])):
        with pytest.raises(s2sad.S2SADError, match=at):
            run()
