"""Arrays made in the shape of another (analysis/shapes.py, `_made_like`):
`np.zeros_like(a)` (ones, empty, full) and `np.zeros(a.shape)` have the shape of `a`, so
that sums with them need no adjoint summed down to a shape (`_s2s_unbroadcast`), also for
a loop's carried state that starts as one. Each gradient against central differences,
also where another operand broadcasts (a (1,) array, a row) so that a shape wrongly
taken as one would give a wrongly shaped or wrong adjoint."""
import numpy as np
import pytest

import s2sad
from numpy_cases import fd_array_grad
from s2sad import pipeline
from s2sad.options import Options


def like_sum(x, b):
    y = np.zeros_like(x)
    z = y + x * 2 + b
    return np.sum(z * x)


def of_shape(x, b):
    y = np.ones(x.shape) * 0.5
    z = y * x + np.full_like(x, 3.0) + b
    return np.sum(z * z)


def carried(x, b, s):
    y = np.zeros_like(x)
    for _ in range(s):
        y = y + x * y + x + b
    return np.sum(y)


def carried_alone(x, s):
    y = np.zeros_like(x)
    for _ in range(s):
        y = y + x * y + x
    return np.sum(y)


def other_shape(x, b):
    y = np.zeros_like(x, shape=(3,))       # (a shape of its own)
    return np.sum((y + b) * x)


CASES = [(like_sum, 2), (of_shape, 2), (carried, 3), (other_shape, 2)]


@pytest.mark.parametrize("f, nargs", CASES, ids=lambda c: getattr(c, "__name__", ""))
@pytest.mark.parametrize("b_shape", [(3,), (1,), ()], ids=["same", "one", "number"])
def test_gradient(f, nargs, b_shape):
    rng = np.random.default_rng(3)
    x = rng.normal(size=3)
    b = rng.normal(size=b_shape) if b_shape else 0.7
    args = (x, b, 4)[:nargs]
    for wrt in (0, 1):
        if wrt == 1 and not b_shape:
            continue
        got = s2sad.grad(f, wrt)(*args)
        expected = fd_array_grad(f, args, wrt)
        assert np.shape(got) == np.shape(args[wrt])
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-9)


def shapes_of(f):
    arg_types = {"x": np.ndarray, "b": np.ndarray, "s": int}     # (no shape patterns)
    names = f.__code__.co_varnames[:f.__code__.co_argcount]
    ctx, _ = pipeline.compilation(f, arg_types={n: arg_types[n] for n in names},
                                  options=Options(), until="wengert")
    return ctx.shapes


def test_the_classes():
    assert shapes_of(like_sum).same("y", "x")
    assert shapes_of(of_shape).same("y", "x")      # (ones(x.shape), times a number)
    assert shapes_of(carried_alone).same("y", "x")
    assert not shapes_of(other_shape).same("y", "x")


def test_no_adjoint_summed_down_in_a_loop():
    x = np.arange(3.0)
    g = s2sad.grad(carried_alone)
    np.testing.assert_allclose(g(x, 3), fd_array_grad(carried_alone, (x, 3), 0), rtol=1e-6)
    assert "_s2s_unbroadcast(" not in g.source and "_s2s_like(" not in g.source
