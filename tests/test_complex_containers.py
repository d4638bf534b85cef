"""Containers of complex values as arguments to differentiate (docs/complex.md): lists,
tuples, dicts, dataclasses, named tuples and registered classes holding complex numbers
and arrays among real ones. The code is specialised on which leaves are complex (the
guard tests them: a leaf that turns complex, or real, compiles another version); each
leaf's gradient is that of a bare argument of its kind (`df/dx - i df/dy` of a complex
one), checked against central differences in float64 along the real and the imaginary
direction of each element, in grad, value_and_grad, vjp, jvp and hvp."""
import collections
import dataclasses

import numpy as np
import pytest

import s2sad
from s2sad.errors import ComplexValueError

H = 1e-6


# -- central differences over the leaves of a structure -----------------------------------
def leaves(x):
    """[(getter, setter-free path)] the float64 oracle walks: the paths of the leaves."""
    if isinstance(x, dict):
        return [((k,) + p, v) for k, c in x.items() for p, v in leaves(c)]
    if dataclasses.is_dataclass(x):
        return [((f.name,) + p, v) for f in dataclasses.fields(x)
                for p, v in leaves(getattr(x, f.name))]
    if isinstance(x, (list, tuple)):
        return [((i,) + p, v) for i, c in enumerate(x) for p, v in leaves(c)]
    if isinstance(x, Modes):
        return [((name,), getattr(x, name)) for name in ("modes", "weights")]
    return [((), x)]


def replaced(x, path, value):
    if not path:
        return value
    step, rest = path[0], path[1:]
    if isinstance(x, dict):
        return {**x, step: replaced(x[step], rest, value)}
    if dataclasses.is_dataclass(x):
        return dataclasses.replace(x, **{step: replaced(getattr(x, step), rest, value)})
    if isinstance(x, Modes):
        return Modes(*[replaced(getattr(x, n), rest, value) if n == step else getattr(x, n)
                       for n in ("modes", "weights")])
    items = [replaced(c, rest, value) if i == step else c for i, c in enumerate(x)]
    return type(x)(*items) if hasattr(x, "_fields") else type(x)(items)


def get(x, path):
    for step in path:
        x = getattr(x, step) if isinstance(step, str) and not isinstance(x, dict) else x[step]
    return x


def central(f, x):
    """{path: the gradient of the leaf} by central differences: `df/dx - i df/dy` of
    each element of a complex leaf, `df/dx` of a real one."""
    out = {}
    for path, leaf in leaves(x):
        a = np.asarray(leaf)
        g = np.zeros(a.shape, dtype=a.dtype if np.iscomplexobj(a) else float)
        for idx in np.ndindex(a.shape):
            for direction in ((1.0, 1j) if np.iscomplexobj(a) else (1.0,)):
                e = np.zeros(a.shape, dtype=a.dtype)
                e[idx] = direction
                step = (lambda s: a + s * e) if a.ndim else (lambda s: type(leaf)(a + s * e))
                d = (f(replaced(x, path, step(H))) - f(replaced(x, path, step(-H)))) / (2 * H)
                g[idx] += d if direction == 1.0 else -1j * d
        out[path] = g
    return out


def check(gradient, expected, rtol=1e-6):
    for path, e in expected.items():
        g = get(gradient, path)
        assert np.iscomplexobj(g) == np.iscomplexobj(e), (path, g)
        scale = max(1.0, float(np.max(np.abs(e))))
        assert np.shape(g) == np.shape(e) and np.max(np.abs(g - e)) <= rtol * scale, (
            path, g, e)


# -- the functions --------------------------------------------------------------------------
FIELD = np.array([1.0 + 0.5j, -0.3 + 0.2j, 0.1 - 0.4j])
MEASURED = np.array([4.0, 1.0, 2.5])


def mixed_list(p):
    field, gain, c = p[0], p[1], p[2]
    return (np.sum((np.abs(np.fft.fft(field * gain)) ** 2 - MEASURED) ** 2)
            + np.real(c * 1j * gain[0]) + np.abs(c) ** 3)


def dict_of_arrays(p):
    overlap = np.sum(np.conj(p["psi"]) * p["phi"])
    return np.sum(np.abs(p["psi"]) ** 2 * p["potential"]) + np.real(overlap * (1 - 2j))


def over_a_tuple(zs):
    total = 0.0
    for z in zs:
        total = total + np.sum(np.abs(z * z - 1.0) ** 2)
    return total


@dataclasses.dataclass
class Wave:
    amplitude: np.ndarray
    wavenumber: float
    phase: complex


def wave_loss(w):
    x = np.linspace(0.0, 1.0, 3)
    u = w.amplitude * np.exp(1j * w.wavenumber * x) * w.phase
    return np.sum(np.abs(u - FIELD) ** 2)


Pair = collections.namedtuple("Pair", "z r")


def named(p):
    return np.sum(np.real(p.z * np.conj(p.z)) * p.r) + np.sum(np.imag(p.z) ** 3)


def nested(p):
    (a, b), c = p
    return np.sum(np.abs(a * b) ** 2) + np.sum(np.abs(c["z"][1:]) * c["w"])


class Modes:
    """A class registered with s2sad.register_pytree: its children are its modes and
    weights."""

    def __init__(self, modes, weights):
        self.modes, self.weights = modes, weights


s2sad.register_pytree(Modes, lambda m: ((m.modes, m.weights), None),
                      lambda aux, children: Modes(*children))


def registered(m):
    return np.sum(np.abs(m.modes) ** 2 * m.weights) + np.sum(np.real(m.modes) * m.weights)


def stacked(zs):
    return np.sum(np.abs(np.array(zs) * np.array([1.0, 2.0, 3.0])) ** 2) + np.sum(
        np.real(np.stack([zs[0], zs[2]]) * (1 + 1j)))


CASES = [
    (mixed_list, [FIELD, np.array([1.0, 0.5, 2.0]), 0.3 - 0.2j]),
    (dict_of_arrays, {"psi": FIELD, "potential": np.array([1.0, 2.0, 0.5]),
                      "phi": FIELD[::-1] * 1j}),
    (over_a_tuple, (FIELD, FIELD[:2] + 1.0, np.array([0.5j]))),
    (wave_loss, Wave(np.array([1.0, 0.8, 1.2]), 2.0, 0.7 + 0.7j)),
    (named, Pair(FIELD, np.array([0.5, 1.0, 2.0]))),
    (nested, ((FIELD, np.array([2.0, 1.0, 0.5])), {"z": FIELD * 2, "w": 0.3})),
    (registered, Modes(FIELD, np.array([1.0, 2.0, 3.0]))),
    (stacked, [1.0 + 2.0j, 0.5, -0.3 + 0.1j]),
]
IDS = [f.__name__ for f, _ in CASES]


@pytest.mark.parametrize("f, x", CASES, ids=IDS)
def test_reverse_mode(f, x):
    expected = central(f, x)
    check(s2sad.grad(f)(x), expected)
    value, g = s2sad.value_and_grad(f)(x)
    assert value == pytest.approx(f(x))
    check(g, expected)
    value, pullback = s2sad.vjp(f, x)
    check(pullback(1.0)[0], expected)


def direction_like(x, seed):
    """A tangent of the structure of `x`: complex where `x` is."""
    rng = np.random.default_rng(seed)
    out = x
    for path, leaf in leaves(x):
        a = np.asarray(leaf)
        d = rng.normal(size=a.shape) + (1j * rng.normal(size=a.shape) if np.iscomplexobj(a)
                                        else 0.0)
        out = replaced(out, path, d if a.ndim else type(leaf)(d))
    return out


def along(x, v, s):
    out = x
    for path, leaf in leaves(x):
        out = replaced(out, path, leaf + s * get(v, path))
    return out


@pytest.mark.parametrize("f, x", CASES, ids=IDS)
def test_forward_mode(f, x):
    """jvp along a complex direction: the derivative along it, `Re(sum(g * v))`."""
    v = direction_like(x, 1)
    expected = (f(along(x, v, H)) - f(along(x, v, -H))) / (2 * H)
    value, tangent = s2sad.jvp(f, (x,), (v,))
    assert value == pytest.approx(f(x))
    assert tangent == pytest.approx(expected, rel=1e-6, abs=1e-6)


@pytest.mark.parametrize("f, x", CASES, ids=IDS)
def test_second_order(f, x):
    """hvp: the derivative of the gradient along a complex direction, against central
    differences of the gradient (each checked against central differences above)."""
    v = direction_like(x, 2)
    g = s2sad.grad(f)
    plus, minus = g(along(x, v, 1e-5)), g(along(x, v, -1e-5))
    hv = s2sad.hvp(f)(x, v)
    for path, _ in leaves(x):
        expected = (np.asarray(get(plus, path)) - get(minus, path)) / 2e-5
        assert np.allclose(get(hv, path), expected, rtol=1e-5, atol=1e-5), path


def test_a_leaf_that_turns_complex_compiles_another_version():
    """The guard tests which leaves are complex: the real code is never run on a complex
    leaf, nor the complex code on a real one."""
    g = s2sad.grad(mixed_list)
    real = [FIELD.real.copy(), np.array([1.0, 0.5, 2.0]), 0.3]
    complex_ = [FIELD, np.array([1.0, 0.5, 2.0]), 0.3 - 0.2j]
    check(g(real), central(mixed_list, real))
    check(g(complex_), central(mixed_list, complex_))
    check(g(real), central(mixed_list, real))
    turned = [FIELD, np.array([1.0, 0.5, 2.0]) + 0.1j, 0.3 - 0.2j]
    check(g(turned), central(mixed_list, turned))
    assert "_s2s_complex_leaves(p)" in g.source


def test_a_list_of_complex_and_real_values_read_in_a_loop_is_refused_at_its_line():
    """Which item a loop reads is not known when compiling: of a list of complex and real
    values, a complex one is refused where the loop computes with it."""
    def total(zs):
        s = 0.0
        for z in zs:
            s = s + np.sum(z * z)
        return s
    with pytest.raises(ComplexValueError, match="s = s \\+ np.sum"):
        s2sad.grad(total)([np.array([1.0, 2.0]), np.array([1j])])


def test_the_argument_is_left_as_it_was():
    x = [FIELD.copy(), np.array([1.0, 0.5, 2.0]), 0.3 - 0.2j]
    s2sad.grad(mixed_list)(x)
    s2sad.hvp(mixed_list)(x, direction_like(x, 3))
    assert np.array_equal(x[0], FIELD) and x[2] == 0.3 - 0.2j


def test_transforms_without_complex_arguments_refuse_them():
    with pytest.raises(ComplexValueError, match="argument 0 of mixed_list holds"):
        s2sad.jacrev(mixed_list)([FIELD, np.ones(3), 1j])
    with pytest.raises(ComplexValueError, match="argument 0 of mixed_list holds"):
        s2sad.hessian(mixed_list)([FIELD, np.ones(3), 1j])
    with pytest.raises(ComplexValueError, match="argument 0 of mixed_list holds"):
        s2sad.export(mixed_list, None, args=([FIELD, np.ones(3), 1j],))


def test_items_read_from_the_end_and_by_negative_keys():
    def ends(p):
        return np.sum(np.abs(p[0][-1]) ** 2) + np.sum(np.abs(p[1][-1]) ** 2) * p[0][0]
    x = ([0.5, np.array([1.0 + 1j, 2.0])], {-1: np.array([0.5j, 1.0]), 1: 2.0})
    check(s2sad.grad(ends)(x), central(ends, x))
    y = ([0.5, np.array([1.0 + 1j, 2.0])], {-1: np.array([0.5, 1.0]), 1: 2.0 + 1j})
    check(s2sad.grad(ends)(y), central(ends, y))


# -- holomorphic=True: complex functions of structures of complex values -----------------
def squares(p):
    return p["a"] ** 2 * p["b"][::-1] + np.exp(p["b"])


def sum_of_squares(p):
    return np.sum((p["a"] ** 2 * p["b"][::-1] + np.exp(p["b"])) * np.array([1.0, 2.0 - 1j]))


POINT = {"a": np.array([1.0 + 1.0j, 2.0j]), "b": np.array([0.5 + 0.0j, 1.0 - 1.0j])}


def holomorphic_columns(f, x):
    """{key: the complex derivative of `f` with respect to x[key]}, by central
    differences along the real direction (of a holomorphic `f`, its derivative)."""
    out = {}
    for key, leaf in x.items():
        cols = []
        for k in range(leaf.size):
            e = np.zeros(leaf.shape, complex)
            e[k] = H
            cols.append((f({**x, key: leaf + e}) - f({**x, key: leaf - e})) / (2 * H))
        out[key] = np.array(cols).T
    return out


def test_holomorphic_grad_and_jacobians_of_a_dict():
    expected = holomorphic_columns(sum_of_squares, POINT)
    g = s2sad.grad(sum_of_squares, holomorphic=True)(POINT)
    for key in POINT:
        assert np.allclose(g[key], expected[key], atol=1e-6)
    expected = holomorphic_columns(squares, POINT)
    for jacobian in (s2sad.jacfwd, s2sad.jacrev):
        jac = jacobian(squares, holomorphic=True)(POINT)
        for key in POINT:
            assert np.allclose(jac[key], expected[key], atol=1e-6), (jacobian, key)


def test_holomorphic_refuses_a_structure_with_a_real_leaf():
    with pytest.raises(s2sad.S2SADError, match="holomorphic=True"):
        s2sad.grad(sum_of_squares, holomorphic=True)({"a": POINT["a"], "b": np.ones(2)})
