"""s2sad.vmap: each batched function against a loop of the function over the items (and,
for a gradient, that loop against central differences)."""
import math
import warnings

import numpy as np
import pytest

import s2sad
from numpy_cases import fd_array_grad
from s2sad.errors import BatchingLoopWarning

rng = np.random.default_rng(7)
B = 5


def looped(f, in_axes, args):
    """The oracle: `f` called on each item, results stacked along axis 0."""
    n = next(np.shape(a)[ax] for a, ax in zip(args, in_axes) if ax is not None)
    outs = [f(*[a if ax is None else np.take(a, b, axis=ax) for a, ax in zip(args, in_axes)])
            for b in range(n)]
    if isinstance(outs[0], tuple):
        return tuple(np.stack([o[k] for o in outs]) for k in range(len(outs[0])))
    return np.stack(outs)


# -- the table: one function per batching rule, over a batch of vectors ---------------------
def ew_ufunc(x, w):
    return np.tanh(x) * w + np.exp(-x) / (1.0 + w * w)


def ew_broadcast(x, m):          # a batch of vectors against a matrix: padded
    return x * m


def ew_scalar_math(s, w):        # math on numbers: NumPy on a batch of them
    return math.sin(s) * w + math.exp(s)


def reduce_axis(x, m):
    return np.sum(m * x, axis=0) + np.max(m * x, axis=1) + x.mean()


def reduce_method(x, m):
    return (m * x).sum(axis=-1) + (x * x).sum()


def mat_vec(x, m):
    return m @ x + np.dot(x, m)


def vec_vec(x, w):
    return np.dot(x, w) * x


def index_const(x, m):
    return x[0] * m[1] + x[1:3].sum() + m[:, 0] * x[-1]


def reshape_transpose(x, m):
    return (x.reshape((2, 2)).T @ m[:2, :2]).reshape(-1) + np.transpose(m)[0]


def write_element(x, w):
    u = np.zeros(4)
    u[1] = x[0] * w[1]
    u[2:] = x[2:]
    return u


def helper(a, b):
    return a * b + np.sin(a)


def user_call(x, w):
    return helper(x, w) + helper(w, 2.0)


def loop_carried(x, w):
    s = 0.0
    for i in range(3):
        s = s + x[i] * w[i]
    return s


def comparison(x, w):
    return np.where(x > w, x, w)


def stack_and_cumsum(x, w):
    return np.cumsum(x * w) + np.array([x[0], x[1] * w[0], 1.0, x[3]])


TABLE = [stack_and_cumsum, ew_ufunc, ew_broadcast, ew_scalar_math, reduce_axis, reduce_method, mat_vec,
         vec_vec, index_const, reshape_transpose, write_element, user_call, loop_carried,
         comparison]


def arguments(f):
    second = np.arange(16.0).reshape(4, 4) / 10 if f in (
        ew_broadcast, reduce_axis, reduce_method, mat_vec, index_const,
        reshape_transpose) else rng.normal(size=4)
    first = rng.normal(size=B) if f is ew_scalar_math else rng.normal(size=(B, 4))
    return first, second


@pytest.mark.parametrize("f", TABLE, ids=lambda f: f.__name__)
def test_table_against_a_loop(f):
    xs, other = arguments(f)
    with warnings.catch_warnings():
        warnings.simplefilter("error", BatchingLoopWarning)    # each has a rule
        got = s2sad.vmap(f, in_axes=(0, None))(xs, other)
    np.testing.assert_allclose(got, looped(f, (0, None), (xs, other)), rtol=1e-12)


@pytest.mark.parametrize("f", [ew_ufunc, mat_vec, user_call, vec_vec],
                         ids=lambda f: f.__name__)
def test_both_batched_and_the_other_one(f):
    xs, other = arguments(f)
    others = np.stack([other * (1 + b) for b in range(B)])
    np.testing.assert_allclose(s2sad.vmap(f)(xs, others), looped(f, (0, 0), (xs, others)),
                               rtol=1e-12)
    np.testing.assert_allclose(s2sad.vmap(f, in_axes=(None, 0))(xs[0], others),
                               looped(f, (None, 0), (xs[0], others)), rtol=1e-12)


def test_in_axes_and_out_axes_other_than_0():
    xs = rng.normal(size=(4, B))        # the batch along axis 1
    m = rng.normal(size=(4, 4))

    def outer(x, m):
        return np.outer(x, np.tanh(m @ x))
    got = s2sad.vmap(outer, in_axes=(1, None), out_axes=2)(xs, m)
    want = np.moveaxis(looped(outer, (1, None), (xs, m)), 0, 2)
    assert got.shape == (4, 4, B)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_out_axes_none_for_a_shared_result_and_refused_for_a_batched_one():
    def pair(x, w):
        return x * w, w * 2.0
    xs, w = rng.normal(size=(B, 3)), rng.normal(size=3)
    ys, shared = s2sad.vmap(pair, in_axes=(0, None), out_axes=(0, None))(xs, w)
    np.testing.assert_allclose(ys, xs * w)
    np.testing.assert_allclose(shared, w * 2.0)
    with pytest.raises(s2sad.S2SADError, match="differs across the batch"):
        s2sad.vmap(pair, in_axes=(0, None), out_axes=None)(xs, w)


def test_pytrees_of_axes():
    def model(p, x):
        return np.tanh(p["W"] @ x + p["b"]) * p["scale"]
    W, b = rng.normal(size=(B, 3, 4)), rng.normal(size=3)
    xs = rng.normal(size=(B, 4))
    p = {"W": W, "b": b, "scale": 2.0}
    got = s2sad.vmap(model, in_axes=({"W": 0, "b": None, "scale": None}, 0))(p, xs)
    want = [model({"W": W[i], "b": b, "scale": 2.0}, xs[i]) for i in range(B)]
    np.testing.assert_allclose(got, np.stack(want), rtol=1e-12)


def logistic(w, x, y):
    p = 1.0 / (1.0 + np.exp(-np.dot(x, w)))
    return -(y * np.log(p) + (1.0 - y) * np.log(1.0 - p))


def test_per_example_gradients_against_a_loop_of_grad_and_central_differences():
    D = 6
    w, X = rng.normal(size=D), rng.normal(size=(B, D))
    y = (rng.random(B) > 0.5).astype(float)
    per_example = s2sad.vmap(s2sad.grad(logistic), in_axes=(None, 0, 0))(w, X, y)
    g = s2sad.grad(logistic)
    loop = np.stack([g(w, X[i], float(y[i])) for i in range(B)])
    np.testing.assert_allclose(per_example, loop, rtol=1e-12)
    fd = np.stack([fd_array_grad(lambda v: logistic(v, X[i], y[i]), (w,), 0) for i in range(B)])
    np.testing.assert_allclose(loop, fd, rtol=1e-5, atol=1e-8)


def test_value_and_grad_per_example():
    def loss(w, x):
        return np.sum(np.tanh(w * x) ** 2)
    w, X = rng.normal(size=3), rng.normal(size=(B, 3))
    values, grads = s2sad.vmap(s2sad.value_and_grad(loss), in_axes=(None, 0))(w, X)
    np.testing.assert_allclose(values, [loss(w, x) for x in X], rtol=1e-12)
    fd = np.stack([fd_array_grad(lambda v: loss(v, x), (w,), 0) for x in X])
    np.testing.assert_allclose(grads, fd, rtol=1e-5, atol=1e-8)


def test_per_example_gradients_of_a_loss_whose_auxiliary_output_is_dropped():
    """`loss(...)[0]` of a loss returning (value, {aux}): the unused dict's adjoint is a
    batch of zeros, batched by its rule, not item by item."""
    def with_aux(w, x):
        p = np.tanh(np.dot(x, w))
        return (p - 0.5) ** 2, {"p": p, "scale": 2.0 * p}

    def loss(w, x):
        return with_aux(w, x)[0]
    w, X = rng.normal(size=3), rng.normal(size=(B, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("error", BatchingLoopWarning)
        got = s2sad.vmap(s2sad.grad(loss), in_axes=(None, 0))(w, X)
    fd = np.stack([fd_array_grad(lambda v: loss(v, x), (w,), 0) for x in X])
    np.testing.assert_allclose(got, fd, rtol=1e-5, atol=1e-8)


def draws_from(x, gen):
    z = gen.normal(size=np.shape(x))
    return np.sum(x * z) + gen.uniform() * x[0]


_shared = np.random.default_rng(11)


def jitters(x):
    return np.tanh(x) + _shared.normal(size=np.shape(x)) * np.random.uniform()


def test_a_function_drawing_from_a_generator_argument_is_a_loop_of_it_and_says_so():
    """A batched call would draw once for the whole batch; f of each item in turn draws
    anew for each: vmap gives the loop's numbers (and advances the generator as it)."""
    X = rng.normal(size=(B, 3))
    for f in (draws_from, s2sad.grad(draws_from)):
        gen, copy = np.random.default_rng(4), np.random.default_rng(4)
        with pytest.warns(BatchingLoopWarning, match=r"vmap runs draws_from item by "
                          r"item.*argument 'gen' is a random generator") as caught:
            got = s2sad.vmap(f, in_axes=(0, None))(X, gen)
        assert caught[0].filename == __file__       # (the line of the call)
        want = []
        for x in X:         # each item's draws, in turn, as a loop of f makes them
            state = copy.bit_generator.state
            want.append(draws_from(x, copy) if f is draws_from else fd_array_grad(
                lambda v: draws_from(v, _seeded(state)), (x,), 0))
            if f is not draws_from:
                draws_from(x, copy)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)
        assert gen.bit_generator.state == copy.bit_generator.state


def _seeded(state):
    gen = np.random.default_rng()
    gen.bit_generator.state = state
    return gen


def test_a_function_drawing_from_a_global_generator_is_a_loop_of_it():
    X = rng.normal(size=(B, 2))
    state, np_state = _shared.bit_generator.state, np.random.get_state()
    with pytest.warns(BatchingLoopWarning, match=r"vmap runs jitters item by item.*"
                      r"test_vmap.py:\d+: it draws from a random generator") as caught:
        got = s2sad.vmap(jitters)(X)
    assert caught[0].filename == __file__
    _shared.bit_generator.state = state
    np.random.set_state(np_state)
    np.testing.assert_allclose(got, [jitters(x) for x in X], rtol=1e-14)


def _noise_like(x):
    return np.random.normal(size=np.shape(x))


def _offset():
    return np.random.uniform()


def noisy_through_helpers(x):
    return x * _noise_like(x) + _offset()      # a batched call, and an unbatched one


def test_a_function_whose_helpers_draw_is_a_loop_of_it():
    X = rng.normal(size=(B, 2))
    state = np.random.get_state()
    with pytest.warns(BatchingLoopWarning, match=r"vmap runs noisy_through_helpers item "
                      r"by item.*test_vmap.py:\d+: it draws"):
        got = s2sad.vmap(noisy_through_helpers)(X)
    np.random.set_state(state)
    np.testing.assert_allclose(got, [noisy_through_helpers(x) for x in X], rtol=1e-14)
    def no_batched_helper(x):
        return x + _offset()
    np.random.set_state(state)
    with pytest.warns(BatchingLoopWarning, match=r"test_vmap.py:\d+: it draws"):
        got = s2sad.vmap(no_batched_helper)(X[:, 0])
    np.random.set_state(state)
    np.testing.assert_allclose(got, [no_batched_helper(x) for x in X[:, 0]], rtol=1e-14)


def test_vmap_of_vmap():
    def f(x, y):
        return np.sum(x * y) + x[0]
    xs, ys = rng.normal(size=(3, 3)), rng.normal(size=(B, 3))     # all pairs
    got = s2sad.vmap(s2sad.vmap(f, in_axes=(None, 0)), in_axes=(0, None))(xs, ys)
    want = np.array([[f(x, y) for y in ys] for x in xs])
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_a_primitive_without_a_rule_runs_item_by_item_and_says_so():
    def det(m):
        return np.linalg.det(m) + 1.0
    ms = rng.normal(size=(B, 3, 3))
    with pytest.warns(BatchingLoopWarning, match=r"test_vmap.py:\d+: vmap applies"):
        got = s2sad.vmap(det)(ms)
    np.testing.assert_allclose(got, [det(m) for m in ms], rtol=1e-12)


def test_an_if_on_a_batched_test_runs_both_branches_and_selects():
    def relu(x, w):
        if x > 0.0:
            y = x * w
        else:
            y = 0.1 * x * w
        return y
    xs = rng.normal(size=B)
    w = rng.normal(size=3)
    np.testing.assert_allclose(s2sad.vmap(relu, in_axes=(0, None))(xs, w),
                               looped(relu, (0, None), (xs, w)), rtol=1e-12)
    # and per-example gradients through it, against central differences
    g = s2sad.vmap(s2sad.grad(lambda w, x: np.sum(relu(x, w) ** 2)), in_axes=(None, 0))(w, xs)
    fd = np.stack([fd_array_grad(lambda v: np.sum(relu(x, v) ** 2), (w,), 0) for x in xs])
    np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-8)


def test_a_branch_that_calls_a_function_on_a_batched_test_is_refused_with_its_line():
    def logged(x):
        if x > 0.0:
            print("positive")
            return x
        return 0.0
    with pytest.raises(s2sad.S2SADError, match=r"test_vmap.py:\d+: vmap cannot batch an if"):
        s2sad.vmap(logged)(rng.normal(size=B))


def halvings(x):
    n = 0.0
    while x > 1.0:
        x = x / 2.0
        n = n + 1.0
    return n * 10.0 + x


def newton_sqrt(a, tol):
    x = a
    step = 1.0
    while step > tol:
        new = 0.5 * (x + a / x)
        step = np.abs(new - x)
        x = new
    return x


def test_a_while_on_a_batched_test_runs_until_every_item_is_done():
    # items that take no pass, one, and many (each item's loop, as Python runs it, is
    # the oracle: what vmap gives an item must not depend on the others)
    xs = np.array([0.5, 1.0, 1.5, 3.0, 17.0, 1000.0])
    np.testing.assert_array_equal(s2sad.vmap(halvings)(xs), [halvings(x) for x in xs])
    np.testing.assert_array_equal(s2sad.vmap(halvings)(xs[::-1]),
                                  [halvings(x) for x in xs[::-1]])
    a = np.array([0.25, 2.0, 9.0, 1e6])
    got = s2sad.vmap(newton_sqrt, in_axes=(0, None))(a, 1e-12)
    np.testing.assert_array_equal(got, [newton_sqrt(v, 1e-12) for v in a])
    np.testing.assert_allclose(got, np.sqrt(a), rtol=1e-12)
    tols = np.array([1e-1, 1e-6, 1e-12, 1e-3])       # the test's other side batched
    np.testing.assert_array_equal(s2sad.vmap(newton_sqrt)(a, tols),
                                  [newton_sqrt(v, t) for v, t in zip(a, tols)])


def test_a_while_on_a_batched_test_is_refused_with_its_line_where_it_cannot_be_masked():
    def halve_inline(x):
        while np.abs(x) > 1.0:          # (a test that is not a comparison of two names)
            x = x / 2
        return x

    def halve_logged(x):
        while x > 1.0:
            print(x)                    # (a call that does more than compute)
            x = x / 2
        return x

    def halve_collected(x):
        seen = []
        while x > 1.0:
            seen.append(x)              # (a list the loop appends to)
            x = x / 2
        return x + len(seen)
    for f in (halve_inline, halve_logged, halve_collected):
        with pytest.raises(s2sad.S2SADError,
                           match=r"test_vmap.py:\d+: vmap cannot batch this while loop"):
            s2sad.vmap(f)(rng.random(B) * 8)


SCALE = 2.0


def scaled_by_a_global(x):
    return x * SCALE


def test_a_call_reuses_the_compiled_code_for_arguments_of_the_same_kind_only():
    global SCALE
    batched = s2sad.vmap(scaled_by_a_global)
    xs = rng.normal(size=(B, 3))
    np.testing.assert_allclose(batched(xs), xs * 2.0)
    np.testing.assert_allclose(batched(xs[:, 0]), xs[:, 0] * 2.0)     # items are numbers
    np.testing.assert_allclose(batched(xs.astype(np.float32)), xs.astype(np.float32) * 2.0,
                               rtol=1e-6)
    SCALE = 3.0         # the code read the global: it is compiled again
    try:
        np.testing.assert_allclose(batched(xs), xs * 3.0)
    finally:
        SCALE = 2.0
    with pytest.raises(s2sad.S2SADError, match="batches of different sizes"):
        s2sad.vmap(ew_ufunc)(xs, rng.normal(size=(B + 1, 3)))


def mlp_loss(p, x, y):
    h = np.tanh(p["W1"] @ x + p["b1"])
    z = p["W2"] @ h + p["b2"]
    z = z - np.max(z)
    return -(z[y] - np.log(np.sum(np.exp(z))))


def test_per_example_gradients_of_an_mlp_with_dict_parameters():
    p = {"W1": rng.normal(size=(4, 5)), "b1": rng.normal(size=4),
         "W2": rng.normal(size=(3, 4)), "b2": rng.normal(size=3)}
    X, Y = rng.normal(size=(B, 5)), rng.integers(0, 3, size=B)
    with warnings.catch_warnings():
        warnings.simplefilter("error", BatchingLoopWarning)    # every statement batched
        got = s2sad.vmap(s2sad.grad(mlp_loss), in_axes=(None, 0, 0))(p, X, Y)
    g = s2sad.grad(mlp_loss)
    for i in range(B):
        want = g(p, X[i], int(Y[i]))
        for k in p:
            np.testing.assert_allclose(got[k][i], want[k], rtol=1e-12, atol=1e-14)
    for k in p:         # the loop of grad against central differences, for one item
        def along(v, k=k):
            return mlp_loss({**p, k: v}, X[0], int(Y[0]))
        np.testing.assert_allclose(g(p, X[0], int(Y[0]))[k], fd_array_grad(along, (p[k],), 0),
                                   rtol=1e-5, atol=1e-8)


def rows_written(x):
    y = np.ones((2, 4))
    y[1, 1:3] = x[:2] * x[1:3]       # a slice of a row
    y[0, 3] = x[0] ** 2              # one element
    y[...] = y * np.sin(x)           # the whole array
    return np.sum(y * x)


def test_per_example_gradients_through_element_writes_have_a_rule():
    # the adjoint of `y[index] = v` (take) batches with a basic index: no loop, and each
    # item's gradient is that of the function, by central differences
    xs = rng.normal(size=(B, 4))
    with warnings.catch_warnings():
        warnings.simplefilter("error", BatchingLoopWarning)
        got = s2sad.vmap(s2sad.grad(rows_written))(xs)
    expected = np.stack([fd_array_grad(rows_written, (x,), 0) for x in xs])
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-8)


def repeated_write(x):
    y = np.zeros(3)
    y[[0, 0, 2]] = x[:3] * x[1:]     # NumPy keeps the last write into y[0]
    return np.sum(y * np.cos(x[:3]))


def test_a_repeated_index_write_is_right():
    # (its adjoint is taken item by item: take zeroes the writes a later one overwrote)
    xs = rng.normal(size=(B, 4))
    got = s2sad.vmap(s2sad.grad(repeated_write))(xs)
    expected = np.stack([fd_array_grad(repeated_write, (x,), 0) for x in xs])
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-8)


def sorted_min(x):
    return np.sort(x)[0] * x[1]


def test_a_loop_warning_names_the_users_call():
    with pytest.warns(BatchingLoopWarning) as caught:
        s2sad.vmap(s2sad.grad(sorted_min))(rng.normal(size=(B, 4)))
    assert [w.filename for w in caught] == [__file__] * len(caught)


# -- the power rule, batched: its branches on the exponent and its helpers -----------------
def power_of_numbers(x, y):
    return math.pow(x, y) + x ** y


def power_of_arrays(x, y):
    return np.sum(np.sin(x) ** y) + np.sum(np.power(x, y[0]))


def test_per_example_gradients_of_a_power_with_a_differentiated_exponent():
    """The adjoint of x in `x ** y` chooses by y (`... if y != 0 else 0.0 * x`, and
    `x or np.float64(x)` inside): both branches run and each item chooses; the adjoint
    of y calls `exponent_term`, which vmap calls on the batch (declared elementwise).
    No item runs alone (a loop would warn), and each gradient is central differences'."""
    xs = rng.uniform(0.5, 2.0, B)
    ys = np.array([0.0, 1.0, 0.5, 2.5, -1.5])       # each branch of the rule
    with warnings.catch_warnings():
        warnings.simplefilter("error", BatchingLoopWarning)
        gx, gy = s2sad.vmap(s2sad.grad(power_of_numbers, argnums=(0, 1)))(xs, ys)
    for i in range(B):
        want = [fd_array_grad(power_of_numbers, (xs[i], ys[i]), k) for k in (0, 1)]
        np.testing.assert_allclose([gx[i], gy[i]], want, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("in_axes", [(0, 0), (None, 0), (0, None)])
def test_per_example_gradients_of_powers_of_arrays(in_axes):
    X, Y = rng.uniform(0.3, 1.5, (B, 3)), rng.uniform(-1.0, 2.0, (B, 3))
    args = [X[0] if in_axes[0] is None else X, Y[0] if in_axes[1] is None else Y]
    with warnings.catch_warnings():
        warnings.simplefilter("error", BatchingLoopWarning)
        got = s2sad.vmap(s2sad.grad(power_of_arrays, argnums=(0, 1)), in_axes=in_axes)(*args)
    for i in range(B):
        item = [a if ax is None else a[i] for a, ax in zip(args, in_axes)]
        for k in (0, 1):
            np.testing.assert_allclose(got[k][i], fd_array_grad(power_of_arrays, item, k),
                                       rtol=1e-6, atol=1e-9)


def powers(z):
    return np.sum(z[:3] ** z[3:])


def powers_grad(z):             # the oracle's gradient, by hand: y x^(y-1), x^y log x
    x, y = z[:3], z[3:]
    return np.concatenate([y * x ** (y - 1), x ** y * np.log(x)])


def norm_and_product(z):
    return np.linalg.norm(z) ** 3 + np.prod(z)


def norm_and_product_grad(z):   # 3 |z| z + prod(z) / z
    return 3 * np.linalg.norm(z) * z + np.prod(z) / z


@pytest.mark.parametrize("f, grad", [(powers, powers_grad),
                                     (norm_and_product, norm_and_product_grad)])
def test_hessians_and_hvps_of_each_item_through_helpers(f, grad):
    """vmap of hessian and hvp run forward mode over the gradient code, whose rules call
    helpers (`log_base_dot`, `norm_dot`, ...): each is batched by its rule, elementwise, or
    item by item, never read as a user's code (which refused at a line of s2sad's). The
    oracle: central differences of the gradient written by hand."""
    Z = rng.uniform(0.4, 1.6, (3, 6))
    V = rng.normal(size=(3, 6))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BatchingLoopWarning)
        H = s2sad.vmap(s2sad.hessian(f))(Z)
        Hv = s2sad.vmap(s2sad.hvp(f))(Z, V)
    for i in range(3):
        want = np.stack([fd_array_grad(lambda z, k=k: grad(z)[k], (Z[i],), 0)
                         for k in range(6)])
        np.testing.assert_allclose(H[i], want, rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(Hv[i], want @ V[i], rtol=1e-6, atol=1e-8)


def ramp(x):
    y = x * 1.0
    if x > 1.0:
        y = 2.0 * x - 1.0
        if x > 2.0:
            y = y * 0.5 + 1.5
    return y


def test_an_if_inside_a_branch_and_a_name_one_branch_leaves_are_chosen_item_by_item():
    xs = np.array([0.5, 1.5, 2.5, 3.0, -1.0])
    np.testing.assert_allclose(s2sad.vmap(ramp)(xs), [ramp(x) for x in xs], rtol=1e-15)
    got = s2sad.vmap(s2sad.grad(ramp))(xs)
    np.testing.assert_allclose(got, [fd_array_grad(ramp, (x,), 0) for x in xs], rtol=1e-7)


W3 = np.array([1.0, 2.0, 3.0])


def scalar_or_vector(x):
    if x > 0.0:
        y = x * W3
    else:
        y = x
    return np.sum(y * W3)


def returns_scalar_or_vector(x):
    if x > 0.0:
        return x
    return W3


def test_branches_giving_items_of_different_shapes_are_refused_at_the_if():
    """Each item holds a number on one branch and a vector on the other: NumPy would
    broadcast the batch of numbers against the vectors' last axis (a batch of 3 gave
    [14, -7, -7] for [14, -6, -12]), and an early return gave a broadcast ValueError."""
    xs = np.array([1.0, -1.0, -2.0])
    for f in (scalar_or_vector, returns_scalar_or_vector):
        line = f.__code__.co_firstlineno + 1
        with pytest.raises(s2sad.S2SADError, match=rf"test_vmap.py:{line}: vmap cannot batch "
                           "this if: a name its branches assign has items of different shapes"):
            s2sad.vmap(f)(xs)


def halved_early(x):
    y = x * 2.0
    if x > 1.0:
        return y * W3
    return np.sin(y) * W3


def sine_after(x):
    y = x * 2.0
    if x > 1.0:
        return y * 1.5
    z = np.sin(y)
    return z


def unbound_on_a_path(x):
    if x > 1.0:
        z = x * 3.0
    return z


@pytest.mark.parametrize("f", [halved_early, sine_after])
def test_an_early_return_on_a_batched_test_is_chosen_item_by_item(f):
    """(A name only the other path binds is bound to None on the returning one, which
    nothing reads there.)"""
    xs = np.array([0.5, 1.5, -2.0, 3.0])
    np.testing.assert_allclose(s2sad.vmap(f)(xs), looped(f, (0,), (xs,)), rtol=1e-15)
    got = s2sad.vmap(s2sad.grad(lambda x: np.sum(f(x))))(xs)
    want = [fd_array_grad(lambda x: np.sum(f(x)), (x,), 0) for x in xs]
    np.testing.assert_allclose(got, want, rtol=1e-7)


def test_a_name_a_path_leaves_unbound_and_reads_is_refused_at_the_if():
    with pytest.raises(s2sad.S2SADError, match=r"test_vmap.py:\d+: vmap cannot batch an if"):
        s2sad.vmap(unbound_on_a_path)(np.array([1.0, 3.0]))
