"""s2sad.register_pytree: plain classes whose instances hold the differentiated values
(as equinox or PyTorch modules hold their parameters), in grad, value_and_grad, vjp,
jvp, jacfwd and hessian, each against central differences of the function (or of a
gradient written by hand, for Hessians); and the attributes s2sad refuses to guess.

The oracle perturbs the objects' attributes with helpers of this file, not s2sad's."""
import copy

import numpy as np
import pytest

import s2sad

RTOL, ATOL = 1e-6, 1e-8
H = 1e-5


class Linear:
    """A layer: W and b are differentiated; `name` is aux data."""

    def __init__(self, W, b, name="layer"):
        self.W, self.b, self.name = W, b, name

    def apply(self, x):
        return np.tanh(self.W @ x + self.b)


class MLP:
    """A list of layers and an output scale, both children; `offset` a constant."""

    offset = 0.5

    def __init__(self, layers, scale):
        self.layers, self.scale = layers, scale

    def apply(self, x):
        for layer in self.layers:       # (the class of an item of a list is not known)
            x = Linear.apply(layer, x)
        return self.scale * x + self.offset


class Spring:
    """Numbers only, one of them an int child (a count), which carries no derivative."""

    def __init__(self, k, rest, n):
        self.k, self.rest, self.n = k, rest, n


class Scaled:
    """W is a child; `factor` is aux: a constant of the structure, not differentiated."""

    def __init__(self, W, factor):
        self.W, self.factor = W, factor

    @property
    def weight(self):             # computed from a child: refused
        return self.W * self.factor


class Flat:
    """Its flatten gives the items of the list `layers`, not the list: reading
    `.layers` is refused."""

    def __init__(self, layers):
        self.layers = list(layers)


def _bare(cls, **attributes):
    obj = object.__new__(cls)
    obj.__dict__.update(attributes)
    return obj


s2sad.register_pytree(Linear, lambda m: ((m.W, m.b), m.name),
                      lambda name, children: Linear(*children, name))
s2sad.register_pytree(MLP, lambda m: ((m.layers, m.scale), None),
                      lambda _, children: MLP(*children))
s2sad.register_pytree(Spring, lambda s: ((s.k, s.rest, s.n), None),
                      lambda _, children: Spring(*children))
s2sad.register_pytree(Scaled, lambda s: ((s.W,), s.factor),
                      lambda factor, children: _bare(Scaled, W=children[0], factor=factor))
s2sad.register_pytree(Flat, lambda f: (tuple(f.layers), None),
                      lambda _, children: Flat(children))

RNG = np.random.default_rng(35)
X = RNG.normal(size=3)


def linear():
    return Linear(RNG.normal(size=(2, 3)), RNG.normal(size=2))


def mlp():
    return MLP([Linear(RNG.normal(size=(4, 3)), RNG.normal(size=4), "in"),
                Linear(RNG.normal(size=(2, 4)), RNG.normal(size=2), "out")], 1.5)


# -- the functions differentiated ----------------------------------------------------------
def linear_loss(m, x):
    return np.sum(m.apply(x) ** 2)


def linear_loss_grad(W, b, x):
    """d linear_loss / d (W, b), by hand."""
    y = np.tanh(W @ x + b)
    g = 2 * y * (1 - y * y)
    return np.outer(g, x), g


def linear_out(m, x):
    return m.apply(x)


def mlp_loss(m, x):
    return np.sum(m.apply(x) ** 2) + m.scale ** 2


def spring_energy(s):
    return 0.5 * s.k * (s.rest - 1.0) ** 2 * s.n + s.k ** 3


def scaled_loss(s):
    return s.factor * np.sum(s.W ** 2)


def by_property(s):
    return np.sum(s.weight ** 2)


def by_list(f, x):
    return np.sum(f.layers[0].W @ x)


# -- the oracle: central differences over the objects' attributes -------------------------
# A path is a tuple of attribute names and list indexes, from the argument to an array or
# a float.
def get(obj, path):
    for p in path:
        obj = obj[p] if isinstance(p, int) else getattr(obj, p)
    return obj


def replaced(obj, path, value):
    """A copy of `obj` with `value` at `path` (the objects on the way copied)."""
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(head, int):
        out = list(obj)
        out[head] = replaced(obj[head], rest, value)
        return out
    out = copy.copy(obj)
    setattr(out, head, replaced(getattr(obj, head), rest, value))
    return out


LINEAR_PATHS = [("W",), ("b",)]
MLP_PATHS = [("layers", i, a) for i in range(2) for a in ("W", "b")] + [("scale",)]


def fd_grad(f, obj, path, *rest):
    """d f(obj, *rest) / d obj.<path>, by central differences."""
    x = get(obj, path)
    if isinstance(x, float):
        return (f(replaced(obj, path, x + H), *rest)
                - f(replaced(obj, path, x - H), *rest)) / (2 * H)
    out = np.zeros(np.shape(f(obj, *rest)) + x.shape)
    for idx in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[idx] += H
        down[idx] -= H
        out[(...,) + idx] = (f(replaced(obj, path, up), *rest)
                             - f(replaced(obj, path, down), *rest)) / (2 * H)
    return out


def fd_directional(f, obj, tangent, paths, *rest):
    """d/de f(obj + e * tangent, *rest) at 0, the tangent given at `paths`."""
    def moved(e):
        out = obj
        for p in paths:
            out = replaced(out, p, get(obj, p) + e * get(tangent, p))
        return out
    return (f(moved(H), *rest) - f(moved(-H), *rest)) / (2 * H)


def close(a, b):
    np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL)


# -- grad, value_and_grad, vjp --------------------------------------------------------------
def test_grad_with_respect_to_a_registered_object_is_an_object_of_its_class():
    m = linear()
    g = s2sad.grad(linear_loss)(m, X)
    assert type(g) is Linear and g.name == "layer"
    for path in LINEAR_PATHS:
        close(get(g, path), fd_grad(linear_loss, m, path, X))


def test_value_and_grad_of_a_module_holding_a_list_of_modules():
    m = mlp()
    value, g = s2sad.value_and_grad(mlp_loss)(m, X)
    close(value, mlp_loss(m, X))
    assert type(g) is MLP and [layer.name for layer in g.layers] == ["in", "out"]
    for path in MLP_PATHS:
        close(get(g, path), fd_grad(mlp_loss, m, path, X))


def test_gradients_with_respect_to_the_object_and_another_argument():
    m = mlp()
    g_m, g_x = s2sad.grad(mlp_loss, wrt=(0, 1))(m, X)
    close(g_x, fd_grad(lambda x, m: mlp_loss(m, x), X, (), m))
    for path in MLP_PATHS:
        close(get(g_m, path), fd_grad(mlp_loss, m, path, X))


def test_vjp_of_a_vector_output():
    m, y_bar = linear(), np.array([0.3, -1.2])
    y, pullback = s2sad.vjp(linear_out, m, X)
    close(y, linear_out(m, X))
    m_bar, x_bar = pullback(y_bar)
    assert type(m_bar) is Linear
    for path in LINEAR_PATHS:
        close(get(m_bar, path), np.tensordot(y_bar, fd_grad(linear_out, m, path, X), 1))
    close(x_bar, y_bar @ fd_grad(lambda x, m: linear_out(m, x), X, (), m))


def test_a_child_that_carries_no_derivative_gets_none():
    s = Spring(2.0, 1.5, 3)
    g = s2sad.grad(spring_energy)(s)
    assert type(g) is Spring and g.n is None
    close(g.k, fd_grad(spring_energy, s, ("k",)))
    close(g.rest, fd_grad(spring_energy, s, ("rest",)))


def test_an_attribute_that_is_no_child_is_a_constant():
    s = Scaled(RNG.normal(size=(2, 2)), 3.0)
    g = s2sad.grad(scaled_loss)(s)
    close(g.W, fd_grad(scaled_loss, s, ("W",)))
    assert g.factor == 3.0          # aux, as unflatten gives it
    _, t = s2sad.jvp(scaled_loss, (s,), (_bare(Scaled, W=np.ones((2, 2)), factor=100.0),))
    close(t, fd_directional(scaled_loss, s, _bare(Scaled, W=np.ones((2, 2))), [("W",)]))


# -- forward mode and second derivatives ----------------------------------------------------
def test_jvp_along_an_object_of_the_class():
    m = mlp()
    t = mlp()
    value, y_dot = s2sad.jvp(mlp_loss, (m, X), (t, None))
    close(value, mlp_loss(m, X))
    close(y_dot, fd_directional(mlp_loss, m, t, MLP_PATHS, X))


def test_jacfwd_and_jacrev_give_the_blocks_in_the_class():
    m = linear()
    for jacobian in (s2sad.jacfwd(linear_out), s2sad.jacrev(linear_out)):
        J = jacobian(m, X)
        assert type(J) is Linear and J.W.shape == (2, 2, 3) and J.b.shape == (2, 2)
        for path in LINEAR_PATHS:
            close(get(J, path), fd_grad(linear_out, m, path, X))


def test_hessian_is_nested_like_the_class():
    m = linear()
    Hm = s2sad.hessian(linear_loss)(m, X)
    assert type(Hm) is Linear and type(Hm.W) is Linear

    def gradient(m, x, of):        # the hand-written gradient's part `of`
        return linear_loss_grad(m.W, m.b, x)[of]
    for i, outer in enumerate(LINEAR_PATHS):
        for inner in LINEAR_PATHS:
            block = get(get(Hm, outer), inner)
            close(block, fd_grad(gradient, m, inner, X, i))


def test_hessian_of_numbers_in_a_registered_object():
    s = Spring(2.0, 1.5, 3)
    Hs = s2sad.hessian(spring_energy)(s)
    # d2/dk2 = 6 k, d2/dk drest = n (rest - 1), d2/drest2 = k n
    assert Hs.n is None and Hs.k.n is None
    close([[Hs.k.k, Hs.k.rest], [Hs.rest.k, Hs.rest.rest]],
          [[6 * 2.0, 3 * 0.5], [3 * 0.5, 2.0 * 3]])


# -- what is refused --------------------------------------------------------------------------
@pytest.mark.parametrize("run", [
    lambda s: s2sad.grad(by_property)(s),
    lambda s: s2sad.jvp(by_property, (s,), (_bare(Scaled, W=np.ones((2, 2)), factor=1.0),)),
], ids=["grad", "jvp"])
def test_an_attribute_computed_from_the_children_is_refused(run):
    with pytest.raises(s2sad.S2SADError, match=r"reading \.weight of a differentiated Scaled"):
        run(Scaled(np.ones((2, 2)), 2.0))


def test_a_list_attribute_flattened_as_its_items_is_refused():
    f = Flat([linear()])
    with pytest.raises(s2sad.S2SADError, match=r"\.layers.*a list attribute as the list"):
        s2sad.grad(by_list)(f, X)


def test_an_unregistered_class_with_slots_is_refused_with_the_ways_to_differentiate_it():
    # (a plain class, with a __dict__, is taken apart by its attributes: test_plain_classes)
    class Slotted:
        __slots__ = ("layers",)

        def __init__(self, W, b):
            self.layers = [Linear(W, b)]
    with pytest.raises(s2sad.S2SADError, match="register it with s2sad.register_pytree"):
        s2sad.grad(by_list)(Slotted(np.ones((2, 3)), np.ones(2)), X)


def test_export_refuses_a_registered_object_it_differentiates(tmp_path):
    with pytest.raises(s2sad.ExportError, match="registered with s2sad.register_pytree"):
        s2sad.export(linear_loss, tmp_path / "d.py", args=(linear(), X), kind="grad")
    text = s2sad.export(linear_loss, tmp_path / "d.py", wrt=1, args=(linear(), X), kind="grad")
    assert "def linear_loss_grad" in text
