"""Element writes `y[idx] = v` where `idx` repeats a position: NumPy keeps the last write,
so only the value written last receives the adjoint (and `y[idx] += v` is
`y[idx] = y[idx] + v`: the positions repeated do not accumulate). Checked against central
differences of the function (never s2sad against itself) in the modes the rule tables
(tests/test_rules_numpy.py, tests/test_rules_modes.py) do not reach: value_and_grad,
hvp, the numba backend; and `runtime.last_writes` against NumPy's own writes.
"""
import numpy as np
import pytest

import s2sad
from numpy_cases import check_fused, compare, fd_array_grad, fd_hessian
from s2sad.rules import runtime

RNG = np.random.default_rng(34)
W = RNG.standard_normal((3, 4))


def rows(x, v):
    y = x * 1.0
    y[[0, 0, 2]] = v
    return np.sum(np.sin(y) * W)


def augmented(x, v):
    y = x * 1.0
    y[[0, 0, 1]] += v * v
    return np.sum(np.sin(y) * W)


def at_run_time(x, idx):
    y = x * 1.0
    y[idx] = x[::-1] ** 2
    return np.sum(np.sin(y) * W)


def in_a_loop(x):
    y = x * 1.0
    for i in range(3):
        y[[0, 0, 2]] = np.sin(y[[1, 2, 1]]) * x[i]
    return np.sum(y * y * W)


def pairs_twice(x):
    y = x * x
    y[[1, 1, 0], [2, 2, 3]] = x[0, :3] * x[2, 1:]
    return np.sum(np.sin(y) * W)


IDX = {"repeats": np.array([0, 0, 2]), "distinct": np.array([2, 0, 1]),
       "negative": np.array([0, -3, 1]), "2-d": np.array([[0, 0, 1], [1, 2, 2]])[:, ::2]}


@pytest.mark.parametrize("which", ["grad", "value_and_grad"])
@pytest.mark.parametrize("fn, args, wrt", [
    (rows, (RNG.standard_normal((3, 4)), RNG.standard_normal((3, 4))), (0, 1)),
    (rows, (RNG.standard_normal((3, 4)), RNG.standard_normal(4)), (0, 1)),
    (augmented, (RNG.standard_normal((3, 4)), RNG.standard_normal((3, 4))), (0, 1)),
    (in_a_loop, (RNG.standard_normal((3, 4)),), 0),
    (pairs_twice, (RNG.standard_normal((3, 4)),), 0)],
    ids=["rows", "one-row", "augmented", "in-a-loop", "pairs-twice"])
def test_fused_gradients(fn, args, wrt, which):
    check_fused(fn, args, wrt, which)


@pytest.mark.parametrize("label", list(IDX))
def test_an_index_array_known_at_run_time(label):
    x = RNG.standard_normal((3, 4))
    idx = IDX[label]
    if idx.ndim == 2:
        def fn(x, idx):
            y = x * 1.0
            y[idx] = np.cos(x[:2, None, :]) * 2.0    # (2, 2, 4) written, row 1 twice
            return np.sum(np.sin(y) * W)
    else:
        fn = at_run_time
    got = s2sad.grad(fn)(x, idx)
    error = compare(got, fd_array_grad(fn, (x, idx), 0), 1e-6, 1e-8, label)
    assert error is None, error


@pytest.mark.parametrize("fn", [augmented, in_a_loop, pairs_twice])
def test_hvp_and_hessian(fn):
    x = RNG.standard_normal((3, 4))
    args = (x, RNG.standard_normal((3, 4))) if fn is augmented else (x,)
    f = (lambda x: fn(x, args[1])) if fn is augmented else fn
    hessian = fd_hessian(f, x)
    v = RNG.standard_normal(x.shape)
    got = s2sad.hvp(fn)(*args, v) if fn is not augmented else s2sad.hvp(f)(x, v)
    error = compare(got, np.tensordot(hessian, v, 2), 1e-5, 2e-5, "hvp")
    assert error is None, error


def reads_twice(x, idx):
    return np.sum(x[idx] ** 2)


def writes_twice(x, idx):
    y = np.zeros(4)
    y[idx] = x[:3] ** 2
    return np.sum(y * y)


@pytest.mark.parametrize("fn", [reads_twice, writes_twice])
@pytest.mark.parametrize("label", ["repeats", "distinct", "negative"])
def test_numba_backend(fn, label):
    pytest.importorskip("numba", reason="backend='numba' needs Numba")
    x, idx = RNG.standard_normal(4), IDX[label] % 4 - (label == "negative") * 4
    got = s2sad.grad(fn, backend="numba")(x, idx)
    error = compare(got, fd_array_grad(fn, (x, idx), 0), 1e-6, 1e-8, label)
    assert error is None, error


def test_the_common_case_stays_a_plain_read():
    """Basic indices select each element once: the adjoint of the values written is the
    adjoint at the index, as before (no test of repeats in the generated code)."""
    def fill(x):
        y = x * 1.0
        for i in range(3):
            y[i] = x[i + 1] * x[i]
        return np.sum(y * y)
    text = s2sad.source(fill)
    assert "_s2s_take(y_bar, i)" in text and "last" not in text


@pytest.mark.parametrize("shape, index", [
    ((3,), np.array([0, 0, 2, -3])), ((3, 4), (np.array([[0, 1], [0, 0]]),)),
    ((3, 4), (slice(None), [3, -1, 0])), ((4, 3, 2), (slice(1, 3), np.array([2, 2, 0]), 1)),
    ((3, 2, 3), (np.array([0, 0]), slice(None), np.array([[1], [1]]))),
    ((3, 3), (Ellipsis, None, np.asfortranarray(np.array([[2, 1], [2, 2]])))),
    ((2, 3, 3), (np.array([True, False]), np.array([1, 1]), slice(0, 2))),
    ((3, 3), ([0, 0, 1], -1))])
def test_last_writes_are_those_numpy_keeps(shape, index):
    """`last_writes` against NumPy's own writes: numbered values written through `index`,
    read back, name the writes that stay."""
    selected = np.empty(shape)[index].shape
    numbers = np.arange(int(np.prod(selected)), dtype=float).reshape(selected)
    out = np.full(shape, -1.0)
    out[index] = numbers
    assert np.array_equal(runtime.last_writes(shape, index), out[index] == numbers)
