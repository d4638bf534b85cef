"""Gradients over Dask arrays, on a `dask.distributed` cluster of two worker processes.

NumPy's functions hand a Dask array to Dask (NEP 18), so the generated gradient, NumPy
code, builds one lazy Dask graph when data or parameters are Dask arrays. These tests
check that the gradients equal the NumPy path's (rtol 1e-10) and an independent oracle
(an analytic gradient, or central differences), that building the gradient computes
nothing (no `compute`, no `np.asarray` of a Dask array, no NumPy fallback for a
function Dask lacks), and that the gradient of a parameter held in chunks has its
chunks. The same code path serves any array type that implements NumPy's dispatch
protocols: `Wrapped` below is one, an ndarray behind `__array_function__` and
`__array_ufunc__` that refuses to be converted to an ndarray.
"""
import warnings

import numpy as np
import numpy.lib.mixins
import pytest

import s2sad
from numpy_cases import fd_array_grad
from optional import require

da = require("dask.array", "dask")
distributed = require("distributed", "dask")
import dask  # noqa: E402


@pytest.fixture(scope="module")
def client():
    """A cluster of two worker processes of one thread each, started once."""
    with distributed.LocalCluster(processes=True, n_workers=2, threads_per_worker=1,
                                  dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:
            yield client


class Materialised(AssertionError):
    """Building the gradient computed a Dask array."""


def _refuse(*args, **kwargs):
    raise Materialised("the gradient computed Dask data while it was built")


def lazily(call, *args):
    """`call(*args)`, failing if it computes any Dask array or converts one to NumPy,
    or if Dask falls back to NumPy for a function it lacks (a FutureWarning)."""
    original = da.Array.__array__
    da.Array.__array__ = _refuse
    try:
        with dask.config.set(scheduler=_refuse), warnings.catch_warnings():
            warnings.simplefilter("error", FutureWarning)
            return call(*args)
    finally:
        da.Array.__array__ = original


def computed(value):
    return dask.compute(*value) if isinstance(value, tuple) else dask.compute(value)[0]


def assert_close(actual, expected, rtol, atol=1e-12):
    pairs = zip(actual, expected) if isinstance(expected, tuple) else [(actual, expected)]
    for a, e in pairs:
        np.testing.assert_allclose(a, e, rtol=rtol, atol=atol)


def fd_grad(f, args, wrt):
    """Central differences (Richardson-extrapolated) of `f` in float64, for `wrt`."""
    if isinstance(wrt, tuple):
        return tuple(fd_array_grad(f, args, i) for i in wrt)
    return fd_array_grad(f, args, wrt)


def numpy_args(args):
    return tuple(a.compute() if isinstance(a, da.Array) else a for a in args)


# -- the functions ------------------------------------------------------------------------
def logistic(w, X, y):
    return np.mean(np.log1p(np.exp(-y * (X @ w))))


def logistic_gradient(w, X, y):
    """The analytic gradient of `logistic`."""
    margin = y * (X @ w)
    return X.T @ (-y / (1.0 + np.exp(margin))) / len(y)


def mlp(W1, b1, W2, b2, X, y):
    h = np.tanh(X @ W1 + b1)
    out = h @ W2 + b2
    return np.mean((out - y) ** 2)


def mlp_gradient(W1, b1, W2, b2, X, y):
    """The analytic gradient of `mlp` (backpropagation by hand)."""
    h = np.tanh(X @ W1 + b1)
    r = 2.0 * (h @ W2 + b2 - y) / len(y)
    dh = np.outer(r, W2) * (1.0 - h * h)
    return X.T @ dh, dh.sum(axis=0), h.T @ r, r.sum()


def standardized(w, X):
    Z = (X - np.mean(X, axis=0)) / np.std(X, axis=0)
    return np.sum((Z @ w) ** 2)


def softmax_cross_entropy(W, X, labels):
    z = X @ W
    m = np.max(z, axis=1, keepdims=True)
    return np.mean(np.log(np.sum(np.exp(z - m), axis=1)) + m[:, 0] - z[:, 0] * labels)


def reductions(w, X):
    return (np.sum(X * w) + np.mean(np.abs(X - w)) + np.var(X @ w)
            + np.max(X, axis=0) @ w + np.linalg.norm(X @ w))


def layout(w, X):
    Z = np.concatenate([X, X ** 2], axis=1)
    return (np.sum(np.clip(Z @ np.concatenate([w, w]), -1.0, 1.0) ** 2)
            + np.sum(X[:, 1:] * w[1:]) + np.sum(np.where(X > 0, X, 0.1 * X) @ w))


def layers(W, X):
    h = X
    for _ in range(3):
        h = np.tanh(h @ W)
    return np.mean(h ** 2)


def layer(W, h):
    return np.tanh(h @ W)


def two_layers(W, X):
    return np.mean(layer(W, layer(W, X)) ** 2)


def chunked(W, X):
    return np.sum(np.sin(W) * W) + np.sum((X @ W) ** 2)


@pytest.fixture
def data():
    """(a random generator, X, y, and X and y as Dask arrays in three chunks)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 4))
    y = np.sign(rng.normal(size=60))
    return rng, X, y, da.from_array(X, chunks=(20, 4)), da.from_array(y, chunks=20)


def check(client, f, args, wrt, oracle=None, rtol=1e-6):
    """The gradient of `f` at the Dask `args`, built lazily, equals the NumPy path's
    (rtol 1e-10) and `oracle` (by default central differences, at `rtol`)."""
    gradient = s2sad.grad(f, wrt=wrt)
    got = lazily(gradient, *args)
    for g in got if isinstance(wrt, tuple) else (got,):
        assert isinstance(g, da.Array), type(g)
    # nothing written in place: `out=` or `+=` would not update a Dask array's views
    assert "out=" not in gradient.source and "+=" not in gradient.source
    values = computed(got)
    plain = numpy_args(args)
    assert_close(values, s2sad.grad(f, wrt=wrt)(*plain), rtol=1e-10, atol=1e-12)
    expected = oracle(*plain) if oracle else fd_grad(f, plain, wrt)
    assert_close(values, expected, rtol=rtol, atol=1e-8)
    return got


def test_logistic_regression(client, data):
    rng, _, _, X, y = data
    w = rng.normal(size=4)
    check(client, logistic, (w, X, y), 0, logistic_gradient, rtol=1e-12)


def test_mlp(client, data):
    rng, _, _, X, y = data
    args = (rng.normal(size=(4, 3)), rng.normal(size=3), rng.normal(size=3), 0.3, X, y)
    check(client, mlp, args, (0, 1, 2, 3), mlp_gradient, rtol=1e-12)


@pytest.mark.parametrize("f", [standardized, softmax_cross_entropy, reductions, layout],
                         ids=lambda f: f.__name__)
def test_reductions_and_broadcasts(client, data, f):
    rng, _, y01, X, y = data
    if f is softmax_cross_entropy:
        check(client, f, (rng.normal(size=(4, 3)), X, (y > 0) * 1.0), 0)
    else:
        check(client, f, (rng.normal(size=4), X), (0, 1))


def test_loop_over_layers(client, data):
    rng, _, _, X, _ = data
    check(client, layers, (0.5 * rng.normal(size=(4, 4)), X), 0)


def test_calls_and_forward_mode(client, data):
    """A function that calls another one (its vjp compiled as a callee), and jvp."""
    rng, Xn, yn, X, y = data
    check(client, two_layers, (0.5 * rng.normal(size=(4, 4)), X), 0)
    w, v = rng.normal(size=4), rng.normal(size=4)
    zeros = (da.zeros_like(X), da.zeros_like(y))
    value, tangent = lazily(s2sad.jvp, logistic, (w, X, y), (v, *zeros))
    assert isinstance(tangent, da.Array)
    assert_close(computed(tangent), logistic_gradient(w, Xn, yn) @ v, rtol=1e-12)


def test_differentiated_chunked_parameter(client, data):
    rng, _, _, X, _ = data
    W = da.from_array(rng.normal(size=(4, 5)), chunks=(3, 2))
    got = check(client, chunked, (W, X), 0)
    assert got.chunks == W.chunks
    w = da.from_array(rng.normal(size=4), chunks=3)
    got = check(client, logistic, (w, X, data[4]), 0, logistic_gradient)
    assert got.chunks == w.chunks


def test_value_and_grad_and_vjp_stay_lazy(client, data):
    rng, Xn, yn, X, y = data
    w = rng.normal(size=4)
    value, grad = lazily(s2sad.value_and_grad(logistic), w, X, y)
    assert isinstance(value, da.Array) and isinstance(grad, da.Array)
    assert_close(computed(value), logistic(w, Xn, yn), rtol=1e-12)
    out, pullback = lazily(s2sad.vjp, lambda w, X: np.tanh(X @ w), w, X)
    w_bar, X_bar = lazily(pullback, da.from_array(np.ones(60), chunks=20))
    slope = 1 - np.tanh(Xn @ w) ** 2
    assert_close(computed((w_bar, X_bar)), (Xn.T @ slope, np.outer(slope, w)), rtol=1e-12)


def test_the_data_stays_on_the_cluster(client, data):
    """Nothing of X reaches the client until the test computes the gradient: the
    gradient is a graph, and `lazily` refuses any computation while it is built."""
    rng, _, _, X, y = data
    grad = lazily(s2sad.grad(mlp, wrt=(0, 1, 2, 3)), rng.normal(size=(4, 3)),
                  rng.normal(size=3), rng.normal(size=3), 0.3, X, y)
    assert all(isinstance(g, da.Array) for g in grad)
    with pytest.raises(Materialised):     # the check itself catches a computation
        lazily(lambda: float(X.sum()))


def masked(w, X):
    Z = X[X[:, 0] > 0]          # chunks of sizes unknown until computed
    return (np.sum(Z * w) + np.mean((Z - np.mean(Z, axis=0)) ** 2)
            + np.mean(np.log1p(np.exp(Z @ w))))


def test_unknown_chunk_sizes(client, data):
    rng, _, _, X, _ = data
    check(client, masked, (rng.normal(size=4), X), 0)


def gather(w, X):
    return np.sum(X[[0, 3, 2]] @ w) + np.sum(X @ w[np.array([3, 1, 2, 0])])


def gather_twice(w, X):
    return np.sum(X[[0, 2, 2]] @ w)


def test_integer_array_indexes(client, data):
    """Dask has no `np.add.at`: the adjoint of an index that selects each element once
    is an assignment; one that may select an element twice is refused, clearly."""
    rng, _, _, X, _ = data
    w = rng.normal(size=4)
    check(client, gather, (w, X), (0, 1))
    with pytest.raises(s2sad.MissingRuleError, match="np.add.at"):
        s2sad.grad(gather_twice, wrt=(0, 1))(w, X)


# -- any array type with NumPy's dispatch protocols -------------------------------------
class Wrapped(numpy.lib.mixins.NDArrayOperatorsMixin):
    """An array of another library, as NumPy sees one: an ndarray behind
    `__array_function__` and `__array_ufunc__` (NEP 18, NEP 13), which refuses to become
    an ndarray (as a GPU array would refuse an implicit copy to the host)."""

    def __init__(self, a):
        self.a = np.asarray(a)

    shape = property(lambda self: self.a.shape)
    dtype = property(lambda self: self.a.dtype)
    ndim = property(lambda self: self.a.ndim)
    T = property(lambda self: Wrapped(self.a.T))

    def __array__(self, *args, **kwargs):
        raise Materialised("a Wrapped array was converted to an ndarray")

    def __getitem__(self, index):
        return Wrapped(self.a[_unwrapped(index)])

    def __setitem__(self, index, value):
        self.a[_unwrapped(index)] = _unwrapped(value)

    def __len__(self):
        return len(self.a)

    def copy(self):
        return Wrapped(self.a.copy())

    def sum(self, *args, **kwargs):
        return np.sum(self, *args, **kwargs)

    def reshape(self, *shape):
        return np.reshape(self, shape[0] if len(shape) == 1 else shape)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        result = getattr(ufunc, method)(*_unwrapped(inputs), **_unwrapped(kwargs))
        return _wrapped(result)

    def __array_function__(self, func, types, args, kwargs):
        return _wrapped(func(*_unwrapped(args), **_unwrapped(kwargs)))


def _unwrapped(x):
    if isinstance(x, Wrapped):
        return x.a
    if isinstance(x, (tuple, list)):
        return type(x)(_unwrapped(v) for v in x)
    if isinstance(x, dict):
        return {k: _unwrapped(v) for k, v in x.items()}
    return x


def _wrapped(x):
    if isinstance(x, np.ndarray):
        return Wrapped(x)
    if isinstance(x, (tuple, list)):
        return type(x)(_wrapped(v) for v in x)
    return x


def test_any_array_with_numpys_dispatch_protocols(data):
    rng, Xn, yn, _, _ = data
    X, y = Wrapped(Xn), Wrapped(yn)
    w = rng.normal(size=4)
    got = s2sad.grad(logistic)(w, X, y)
    assert isinstance(got, Wrapped)
    assert_close(got.a, logistic_gradient(w, Xn, yn), rtol=1e-12)
    args = (rng.normal(size=(4, 3)), rng.normal(size=3), rng.normal(size=3), 0.3, X, y)
    got = s2sad.grad(mlp, wrt=(0, 1, 2, 3))(*args)
    expected = mlp_gradient(*args[:4], Xn, yn)
    assert_close(tuple(_unwrapped(got)), expected, rtol=1e-12)
    W = Wrapped(rng.normal(size=(4, 5)))        # a differentiated one
    got = s2sad.grad(chunked)(W, X)
    assert isinstance(got, Wrapped)
    assert_close(got.a, fd_grad(chunked, (W.a, Xn), 0), rtol=1e-6)


def test_cupy(data):
    cupy = pytest.importorskip("cupy", reason="CuPy (and a GPU) is not available")
    rng, Xn, yn, _, _ = data
    w = rng.normal(size=4)
    got = s2sad.grad(logistic)(cupy.asarray(w), cupy.asarray(Xn), cupy.asarray(yn))
    assert isinstance(got, cupy.ndarray)
    assert_close(cupy.asnumpy(got), logistic_gradient(w, Xn, yn), rtol=1e-12)
