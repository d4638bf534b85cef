"""Gradients with respect to containers, dtypes, and inputs s2sad refuses."""
import numpy as np
import pytest

import s2sad
import corpus_containers as c


def fd(f, x, eps=1e-6):
    return (f(x + eps) - f(x - eps)) / (2 * eps)


def test_tuple_argument_gradient_has_its_structure():
    g = s2sad.grad(c.tup)((2.0, 3.0))          # a*b + a
    assert g == (4.0, 2.0) and isinstance(g, tuple)


def test_list_argument():
    g = s2sad.grad(c.lst)([1.0, 2.0, 3.0], 0.5)   # d/dw_i sum w_i x^i = x^i
    assert g == [1.0, 0.5, 0.25] and isinstance(g, list)


def test_dict_of_arrays_argument():
    rng = np.random.default_rng(0)
    params = {"W": rng.normal(size=(3, 2)), "b": rng.normal(size=2)}
    x = rng.normal(size=(4, 3))
    g = s2sad.grad(c.dct)(params, x)
    assert set(g) == {"W", "b"}
    for key in params:
        assert g[key].shape == params[key].shape
        for idx in np.ndindex(params[key].shape):
            def along(t, key=key, idx=idx):
                p = {k: v.copy() for k, v in params.items()}
                p[key][idx] += t
                return c.dct(p, x)
            assert g[key][idx] == pytest.approx(fd(along, 0.0), rel=1e-6, abs=1e-9)


def test_float32_stays_float32():
    x = np.linspace(-1, 1, 5, dtype=np.float32)
    g = s2sad.grad(c.f32)(x)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, 2 * (1 - np.tanh(x) ** 2), rtol=1e-6)


@pytest.mark.parametrize("bad, message", [
    (np.array([1 + 2j]), "complex"), (1 + 2j, "complex"), (np.array([1, 2]), "int64"),
    (np.array([True]), "bool")])
def test_refused_inputs(bad, message):
    with pytest.raises(s2sad.S2SADError, match=message):
        s2sad.grad(c.f32)(bad)


def test_vjp_of_tuple_output():
    y, pullback = s2sad.vjp(c.two, 2.0, 3.0)
    assert y == (6.0, 5.0)
    # cotangent (1, 2): x_bar = 1*y + 2*1, y_bar = 1*x + 2*1
    assert pullback((1.0, 2.0)) == (5.0, 4.0)
