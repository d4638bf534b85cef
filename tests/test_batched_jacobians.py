"""jacfwd, hessian and jacfwd(grad) in one batched pass (s2sad/batched_jacobians.py):
against central differences and analytic formulas, and a Hessian of a function that
draws from a np.random.Generator, which must see one draw."""
import itertools
import linecache
import warnings

import numpy as np
import pytest

import s2sad

rng = np.random.default_rng(39)


def central_jacobian(f, x, eps=1e-6):
    """Central differences of `f` (array to array) at `x`: shape f(x).shape + x.shape."""
    cols = []
    for k in range(x.size):
        e = np.zeros_like(x)
        e.flat[k] = eps
        cols.append((np.asarray(f(x + e)) - np.asarray(f(x - e))) / (2 * eps))
    return np.stack(cols, -1).reshape(np.shape(f(x)) + x.shape)


def arm(q, lengths):          # a planar arm: 5 joint angles to the hand's (x, y, angle)
    angles = np.cumsum(q)
    return np.array([np.sum(lengths * np.cos(angles)), np.sum(lengths * np.sin(angles)),
                     angles[-1]])


def mixing(x, A):
    return np.tanh(A @ x) * x[0] + np.sin(x) ** 2


@pytest.mark.parametrize("jac", [s2sad.jacfwd, s2sad.jacrev], ids=["jacfwd", "jacrev"])
def test_jacobians_against_central_differences(jac):
    q, lengths = rng.normal(size=5), np.array([1.0, 0.8, 0.6, 0.4, 0.2])
    np.testing.assert_allclose(jac(arm)(q, lengths),
                               central_jacobian(lambda v: arm(v, lengths), q),
                               rtol=1e-6, atol=1e-8)
    x, A = rng.normal(size=6), rng.normal(size=(6, 6))
    np.testing.assert_allclose(jac(mixing)(x, A), central_jacobian(lambda v: mixing(v, A), x),
                               rtol=1e-6, atol=1e-8)


def test_jacfwd_with_respect_to_two_arguments():
    x, A = rng.normal(size=3), rng.normal(size=(3, 3))
    Jx, JA = s2sad.jacfwd(mixing, wrt=(0, 1))(x, A)
    np.testing.assert_allclose(Jx, central_jacobian(lambda v: mixing(v, A), x), rtol=1e-6,
                               atol=1e-8)
    np.testing.assert_allclose(JA, central_jacobian(lambda M: mixing(x, M), A), rtol=1e-6,
                               atol=1e-8)


def logistic_loss(w, X, y):
    z = X @ w
    return np.sum(np.log1p(np.exp(z)) - y * z) + 0.5 * np.dot(w, w)


def test_hessian_of_a_logistic_loss_against_its_formula():
    D = 12
    w, X = rng.normal(size=D) * 0.3, rng.normal(size=(20, D))
    y = (rng.random(20) > 0.5).astype(float)
    p = 1.0 / (1.0 + np.exp(-X @ w))
    want = X.T @ (X * (p * (1 - p))[:, None]) + np.eye(D)      # X' diag(p(1-p)) X + I
    np.testing.assert_allclose(s2sad.hessian(logistic_loss)(w, X, y), want, rtol=1e-10)
    np.testing.assert_allclose(s2sad.jacfwd(s2sad.grad(logistic_loss))(w, X, y), want,
                               rtol=1e-10)


def test_hessian_of_two_arguments_against_central_differences():
    def f(x, s):
        return np.sum(np.sin(x) * s) + s ** 3 * x[0]
    x, s = rng.normal(size=3), 0.7
    (Hxx, Hxs), (Hsx, Hss) = s2sad.hessian(f, wrt=(0, 1))(x, s)
    gx = s2sad.grad(f, wrt=0)
    np.testing.assert_allclose(Hxx, central_jacobian(lambda v: gx(v, s), x), rtol=1e-6,
                               atol=1e-8)
    np.testing.assert_allclose(Hxs, np.sin(x) * 0 + np.cos(x) + 3 * s ** 2 * np.eye(3)[0])
    np.testing.assert_allclose(Hsx, Hxs)
    assert Hss == pytest.approx(6 * s * x[0])


def noisy(x, gen):
    z = gen.normal(size=x.shape)
    c = gen.normal()
    return np.sum(x ** 2 * z) + c * x[0] * x[1]


def test_a_hessian_sees_one_draw_of_a_generator_and_advances_it_as_one_call():
    x = rng.normal(size=3)
    gen = np.random.default_rng(5)
    copy = np.random.default_rng(5)
    z, c = copy.normal(size=3), copy.normal()          # the draw one call of noisy sees
    H = s2sad.hessian(noisy)(x, gen)
    want = np.diag(2 * z)
    want[0, 1] = want[1, 0] = c
    np.testing.assert_allclose(H, want, rtol=1e-12)
    np.testing.assert_allclose(H, H.T)
    assert gen.bit_generator.state == copy.bit_generator.state


def test_a_jacobian_sees_one_draw_of_a_generator():
    def jitter(x, gen):
        return x * gen.normal(size=x.shape)
    x = rng.normal(size=4)
    gen, copy = np.random.default_rng(8), np.random.default_rng(8)
    J = s2sad.jacfwd(jitter)(x, gen)
    np.testing.assert_allclose(J, np.diag(copy.normal(size=4)), rtol=1e-12)
    assert gen.bit_generator.state == copy.bit_generator.state


def test_hvp_over_several_vectors_is_vmap_of_hvp():
    def f(x, a):
        return np.sum(np.sin(x) * a) + np.dot(x, x) ** 2
    x, V = rng.normal(size=4), rng.normal(size=(6, 4))
    got = s2sad.vmap(s2sad.hvp(f), in_axes=(None, None, 0))(x, 2.0, V)
    product = s2sad.hvp(f)
    loop = np.stack([product(x, 2.0, v) for v in V])
    np.testing.assert_allclose(got, loop, rtol=1e-12)
    H = central_jacobian(lambda v: s2sad.grad(f)(v, 2.0), x)      # the loop's oracle
    np.testing.assert_allclose(loop, V @ H.T, rtol=1e-6, atol=1e-8)


def energy(x, a):
    return np.sum(np.sin(x) * a) + np.dot(x, x) ** 2


@pytest.mark.parametrize("in_axes", [0, (0, None), (None, 0)], ids=["both", "x", "a"])
def test_vmap_of_a_hessian_is_a_loop_of_hessians(in_axes):
    X, A = rng.normal(size=(5, 3)), rng.normal(size=(5, 3))
    args = [X if in_axes in (0, (0, None)) else X[0], A if in_axes in (0, (None, 0)) else 2.0]
    items = [[v[k] if np.ndim(v) == 2 else v for v in args] for k in range(5)]
    hessian = s2sad.hessian(energy)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", s2sad.BatchingLoopWarning)
        got = s2sad.vmap(hessian, in_axes=in_axes)(*args)
    loop = np.stack([hessian(*item) for item in items])
    np.testing.assert_allclose(got, loop, rtol=1e-12, atol=1e-12)
    for item, H in zip(items, loop):        # the loop's oracle
        np.testing.assert_allclose(H, central_jacobian(
            lambda v: s2sad.grad(energy)(v, item[1]), item[0]), rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(s2sad.grad(energy)(*item), central_jacobian(
            lambda v: energy(v, item[1]), item[0]), rtol=1e-6, atol=1e-8)
    out = s2sad.vmap(hessian, in_axes=(0, None), out_axes=2)(X, 2.0)
    np.testing.assert_allclose(out, np.moveaxis(np.stack([hessian(x, 2.0) for x in X]), 0, 2),
                               rtol=1e-12, atol=1e-12)


def test_vmap_of_a_hessian_of_a_function_that_draws_is_a_loop_of_hessians():
    X = rng.normal(size=(4, 3))
    gen, copy = np.random.default_rng(5), np.random.default_rng(5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", s2sad.BatchingLoopWarning)
        got = s2sad.vmap(s2sad.hessian(noisy), in_axes=(0, None))(X, gen)
    want = []
    for x in X:         # each Hessian that of one draw (checked above), in turn
        z, c = copy.normal(size=3), copy.normal()
        H = np.diag(2 * z)
        H[0, 1] = H[1, 0] = c
        want.append(H)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert gen.bit_generator.state == copy.bit_generator.state


def spread(x):
    return np.sin(x) * np.sum(x ** 2)


def tangent_of_spread(x, v):
    return s2sad.jvp(spread, (x,), (v,))


def cotangent_of_spread(x, u):
    _, pullback = s2sad.vjp(spread, x)
    return pullback(u)[0]


def test_vmap_of_functions_that_call_jvp_and_vjp_is_a_loop_of_them():
    X, V = rng.normal(size=(5, 3)), rng.normal(size=(5, 3))
    ys, ys_dot = s2sad.vmap(tangent_of_spread)(X, V)
    bars = s2sad.vmap(cotangent_of_spread)(X, V)
    for x, v, y, y_dot, bar in zip(X, V, ys, ys_dot, bars):
        loop_y, loop_dot = s2sad.jvp(spread, (x,), (v,))
        loop_bar = s2sad.vjp(spread, x)[1](v)[0]
        np.testing.assert_allclose([y, y_dot, bar], [loop_y, loop_dot, loop_bar],
                                   rtol=1e-12, atol=1e-12)
        J = central_jacobian(spread, x)         # the loop's oracle
        np.testing.assert_allclose(loop_dot, J @ v, rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(loop_bar, v @ J, rtol=1e-6, atol=1e-8)


def test_vmap_of_a_jacobian_is_refused_by_name():
    with pytest.raises(s2sad.S2SADError, match="vmap batches functions, grad, "
                                               "value_and_grad, hvp and hessian; "
                                               "'jacfwd_spread'"):
        s2sad.vmap(s2sad.jacfwd(spread))(rng.normal(size=(3, 2)))


def test_a_jacobian_falls_back_to_one_pass_per_direction_where_a_primitive_has_no_rule():
    # np.linalg.solve has no batching rule: the batched pass would apply it item by item,
    # so the Jacobian takes one pass per direction instead, silently; it must be right
    A = rng.normal(size=(4, 4)) + 4 * np.eye(4)

    def f(x):
        return np.linalg.solve(A, x) * np.sin(x)

    def g(x):
        return np.sum(np.linalg.solve(A, x) * x ** 2)
    x = rng.normal(size=4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # (no BatchingLoopWarning, no other)
        for jac in (s2sad.jacfwd, s2sad.jacrev):
            np.testing.assert_allclose(jac(f)(x), central_jacobian(f, x), rtol=1e-6,
                                       atol=1e-8)
            np.testing.assert_allclose(jac(f)(2 * x), central_jacobian(f, 2 * x),
                                       rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(s2sad.hessian(g)(x),
                                   central_jacobian(s2sad.grad(g), x), rtol=1e-6, atol=1e-8)


def test_jacobians_called_again_on_arrays_of_other_shapes():
    # a call looks its batched code up by the arguments' kinds (types, dtypes, numbers
    # of axes); the unit tangents are those of each call's shapes
    jacobians = [s2sad.jacfwd(mixing), s2sad.jacrev(mixing),
                 s2sad.jacfwd(s2sad.grad(logistic_loss)), s2sad.hessian(logistic_loss)]
    for n in (3, 5, 3):
        x, A = rng.normal(size=n), rng.normal(size=(n, n))
        X, y = rng.normal(size=(7, n)), (rng.random(7) > 0.5).astype(float)
        for jac in jacobians[:2]:
            np.testing.assert_allclose(jac(x, A), central_jacobian(lambda v: mixing(v, A), x),
                                       rtol=1e-6, atol=1e-8)
        for hess in jacobians[2:]:
            np.testing.assert_allclose(
                hess(x, X, y), central_jacobian(lambda v: s2sad.grad(logistic_loss)(v, X, y), x),
                rtol=1e-6, atol=1e-8)


_cells = itertools.count()


def run_cell(ns, text):
    """Run `text` in the namespace `ns` as a notebook cell (its source readable)."""
    filename = f"<batched-jacobians-cell-{next(_cells)}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    exec(compile(text, filename, "exec"), ns)


def test_jacobians_made_before_a_helper_is_redefined_see_it_as_it_is_now():
    ns = {"__name__": "__main__", "np": np}
    run_cell(ns, "def h(x):\n    return x ** 3\n")
    run_cell(ns, "def f(x):\n    return np.sum(h(x)) * x\n")
    run_cell(ns, "def s(x):\n    return np.sum(h(x) * x)\n")
    f, s = ns["f"], ns["s"]
    made = [s2sad.jacfwd(f), s2sad.jacrev(f), s2sad.hessian(s), s2sad.jacfwd(s2sad.grad(s))]
    x = rng.normal(size=3)
    for text in ("def h(x):\n    return np.sin(x)\n", "def h(x):\n    return x * x\n", ""):
        for jac in made[:2]:
            np.testing.assert_allclose(jac(x), central_jacobian(f, x), rtol=1e-6, atol=1e-8)
        for hess in made[2:]:
            np.testing.assert_allclose(hess(x), central_jacobian(s2sad.grad(s), x),
                                       rtol=1e-6, atol=1e-8)
            # (and s2sad.grad against the function itself)
            np.testing.assert_allclose(s2sad.grad(s)(x), central_jacobian(s, x), rtol=1e-6,
                                       atol=1e-8)
        run_cell(ns, text)


@pytest.mark.parametrize("adjoint", ["dot_lhs", "dot_rhs", "matmul_lhs", "matmul_rhs"])
@pytest.mark.parametrize("shapes", [((3,), (3, 5), (5,)), ((3, 4), (4,), (3,)),
                                    ((3, 4), (4, 5), (3, 5)), ((3,), (3,), ())],
                         ids=["vec-mat", "mat-vec", "mat-mat", "vec-vec"])
def test_the_batched_adjoints_of_products_are_those_of_each_item(adjoint, shapes):
    # the batching rule of a product's adjoint (rules/batching.py's _product_adjoint), for
    # each operand batched or not, against the adjoint of each item (itself checked
    # against np.dot / matmul by the rules' tests), and one case against the formula
    from s2sad.rules import batching, products
    fn, lhs = getattr(products, adjoint), adjoint.endswith("lhs")
    a_shape, b_shape, g_shape = shapes
    n = 4
    for axes in itertools.product([0, None], repeat=3):
        if axes == (None, None, None):
            continue
        g, a, b = (rng.normal(size=(n,) + s if ax == 0 else s)
                   for s, ax in zip((g_shape, a_shape, b_shape), axes))
        got = batching._product_adjoint(fn, lhs, g, axes[0], a, axes[1], b, axes[2])
        items = [[v[k] if ax == 0 else v for v, ax in zip((g, a, b), axes)]
                 for k in range(n)]
        np.testing.assert_allclose(got, np.stack([fn(*item) for item in items]),
                                   rtol=1e-12, atol=1e-12)
        if shapes == ((3, 4), (4,), (3,)) and not lhs:      # g @ A of each item
            np.testing.assert_allclose(got, [gk @ ak for gk, ak, _ in items], rtol=1e-12)
        if g_shape == () and axes[0] is None:       # (a number g, as gradient code has it)
            got = batching._product_adjoint(fn, lhs, float(g), None, a, axes[1], b, axes[2])
            np.testing.assert_allclose(got, np.stack([fn(*item) for item in items]),
                                       rtol=1e-12, atol=1e-12)


def test_the_parameters_read_once_follow_a_changed_default():
    # compilation.parameters_of keeps a function's parameters while its code and
    # defaults are those it read them with
    from s2sad.compilation import arg_types_of

    def power(x, k=2.0):
        return np.sum(x ** k)
    assert arg_types_of(power, (np.ones(2),))["k"] is float
    power.__defaults__ = (3,)
    assert arg_types_of(power, (np.ones(2),))["k"] is int
    x = rng.normal(size=3)
    np.testing.assert_allclose(s2sad.hessian(power)(x), np.diag(6 * x), rtol=1e-12)


def test_a_jacobian_of_an_array_written_out_item_by_item_sees_one_draw():
    # the tangents of `[a, b, c]` are a batched list that np.array reads (by its batching
    # rule): still one batched pass, so the generator is drawn from once
    def hand(q, gen):
        c = gen.normal()
        return np.array([c * np.sin(q[0]), q[0] * q[1], c])
    q = rng.normal(size=2)
    for jac in (s2sad.jacfwd, s2sad.jacrev):
        gen, copy = np.random.default_rng(3), np.random.default_rng(3)
        J = jac(hand)(q, gen)
        c = copy.normal()
        np.testing.assert_allclose(J, [[c * np.cos(q[0]), 0.0], [q[1], q[0]], [0.0, 0.0]],
                                   rtol=1e-12)
        assert gen.bit_generator.state == copy.bit_generator.state


def test_a_jacobian_that_is_a_matrix_of_the_arguments_is_a_fresh_array():
    # the batched product of a matrix and the unit tangents is the matrix's columns (a
    # read-only view, rules/batching.py's mark_units): the Jacobian must not share
    # memory with the argument, nor with the tangents kept for the next call
    M = rng.normal(size=(3, 4))

    def left(x, M):
        return M @ x

    def right(x, M):
        return x @ M.T

    def same(x, M):
        return x
    x = rng.normal(size=4)
    for jac in (s2sad.jacfwd, s2sad.jacrev):
        for f in (left, right, same):
            J = jac(f)(x, M)
            np.testing.assert_allclose(J, central_jacobian(lambda v: f(v, M), x), rtol=1e-8,
                                       atol=1e-10)
            assert J.flags.writeable and not np.shares_memory(J, M)
            again = jac(f)(x, M)
            assert not np.shares_memory(J, again)
            J[...] = 0.0
            np.testing.assert_allclose(jac(f)(x, M), again)
    H = s2sad.hessian(lambda x, M: np.sum((M @ x) ** 2))(x, M)
    np.testing.assert_allclose(H, 2 * M.T @ M, rtol=1e-12)
