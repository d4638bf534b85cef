"""The realistic programs of corpus_realistic.py, differentiated in reverse mode (and
forward mode, and second order for numbers) against central differences."""
import numpy as np
import pytest

import corpus_realistic as r
import s2sad
from numpy_cases import fd_array_grad

RNG = np.random.default_rng(7)
X = RNG.normal(size=(5, 2))
Y = RNG.normal(size=5)


def _fd(f, args, i, h=1e-6):
    """d f / d args[i], for a number, an array, or a dict of arrays (central, float64)."""
    a = args[i]
    if isinstance(a, dict):
        out = {}
        for k, v in a.items():
            if isinstance(v, list):
                out[k] = [_fd(lambda w, k=k, j=j: f(*args[:i], {**a, k: [
                    w if jj == j else vv for jj, vv in enumerate(a[k])]}, *args[i + 1:]),
                    (v[j],), 0) for j in range(len(v))]
            else:
                out[k] = _fd(lambda w, k=k: f(*args[:i], {**a, k: w}, *args[i + 1:]),
                             (v,), 0)
        return out
    if isinstance(a, np.ndarray):
        return fd_array_grad(f, args, i)
    return (f(*args[:i], a + h, *args[i + 1:]) - f(*args[:i], a - h, *args[i + 1:])) / (2 * h)


def _close(got, want, rtol=1e-5, atol=1e-7):
    if isinstance(want, dict):
        assert set(got) == set(want)
        for k in want:
            _close(got[k], want[k], rtol, atol)
    elif isinstance(want, list):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _close(g, w, rtol, atol)
    else:
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


def test_mlp_with_dict_parameters():
    params = {"W": [RNG.normal(size=(2, 4)) * 0.5, RNG.normal(size=(4, 1)) * 0.5],
              "b": [np.zeros(4) + 0.1, np.zeros(1)]}
    got = s2sad.grad(r.mlp_loss)(params, X, Y)
    _close(got, _fd(r.mlp_loss, (params, X, Y), 0))


def test_a_model_class_with_methods():
    w = np.array([0.4, -0.3])
    y = (Y > 0).astype(float)
    want = fd_array_grad(r.logistic_objective, (w, X, y), 0)
    np.testing.assert_allclose(s2sad.grad(r.logistic_objective)(w, X, y), want, rtol=1e-6)
    _, tangent = s2sad.jvp(r.logistic_objective, (w, X, y), (np.array([1.0, 2.0]),
                                                              np.zeros_like(X), np.zeros(5)))
    assert tangent == pytest.approx(want @ np.array([1.0, 2.0]), rel=1e-6)


@pytest.mark.parametrize("f, point", [
    (r.gaussian_fit, (0.4, -0.2)),
    (r.expected_energy, (1.3, 2.0)),
    (r.lotka_volterra, (1.1, 0.9)),
    (r.poly_objective, (0.9, 0.6, 0.4)),
])
def test_programs_of_numbers(f, point):
    n = len(point)
    got = s2sad.grad(f, wrt=tuple(range(n)))(*point)
    want = [_fd(f, point, i) for i in range(n)]
    _close(list(got), want)
    for i in range(n):
        tangent = tuple(1.0 if j == i else 0.0 for j in range(n))
        assert s2sad.jvp(f, point, tangent)[1] == pytest.approx(want[i], rel=1e-5, abs=1e-8)
    # the second derivative in the first argument, against differences of the gradient
    step = 1e-4
    g = s2sad.grad(f)
    second = (g(point[0] + step, *point[1:]) - g(point[0] - step, *point[1:])) / (2 * step)
    assert s2sad.hessian(f)(*point) == pytest.approx(second, rel=1e-4, abs=1e-6)


def test_softmax_with_context_managers_and_a_try():
    W = RNG.normal(size=(2, 3))
    labels = [0, 2, 1, 1, 0]
    got = s2sad.grad(r.softmax_batch)(W, X, labels)
    np.testing.assert_allclose(got, fd_array_grad(r.softmax_batch, (W, X, labels), 0),
                               rtol=1e-6, atol=1e-9)


def test_a_recurrent_cell_over_the_rows_of_a_sequence():
    params = {"Wh": RNG.normal(size=(3, 3)) * 0.4, "Wx": RNG.normal(size=(3, 2)) * 0.4,
              "b": np.full(3, 0.1)}
    xs = RNG.normal(size=(6, 2))
    got = s2sad.grad(r.rnn_final)(params, xs)
    _close(got, _fd(r.rnn_final, (params, xs), 0))
    np.testing.assert_allclose(s2sad.grad(r.rnn_final, wrt=1)(params, xs),
                               fd_array_grad(r.rnn_final, (params, xs), 1), rtol=1e-6)


def test_records_built_from_differentiated_values():
    # a dataclass and a named tuple made inside the function: d/da (a^2 b + 3 a) etc.
    def f(a, b):
        return r.energy(r.Spring(a, b), r.Point(b, a))
    got = s2sad.grad(f, wrt=(0, 1))(0.7, 1.3)
    want = (_fd(f, (0.7, 1.3), 0), _fd(f, (0.7, 1.3), 1))
    _close(list(got), list(want))
    assert s2sad.jvp(f, (0.7, 1.3), (1.0, 0.0))[1] == pytest.approx(want[0], rel=1e-6)
    second = (s2sad.grad(f)(0.7 + 1e-4, 1.3) - s2sad.grad(f)(0.7 - 1e-4, 1.3)) / 2e-4
    assert s2sad.hessian(f)(0.7, 1.3) == pytest.approx(second, rel=1e-5)
