"""Plain classes (issue #36): instances of the user's classes that are neither dataclasses
nor registered, taken apart by their attributes as equinox or PyTorch modules are (the
values of `__dict__` that carry derivatives are the leaves, the others constants), as
arguments differentiated (grad, value_and_grad, vjp, jvp, jacfwd, hessian) and built in
the function by an `__init__` that only stores; and what is refused. Each derivative
against central differences over the objects' attributes (the oracle below, which does
not use s2sad) or an analytic formula."""
import copy

import numpy as np
import pytest

import s2sad
from numpy_cases import fd_array_grad
from oracle import assert_close, fd_grad

H = 1e-6


# -- the oracle: central differences over an object's attributes -------------------------
def fd_attributes(f, obj, names, *rest):
    """{attribute: d f(obj, *rest) / d obj.attribute} by central differences, for the
    float or array attributes `names` of `obj` (an attribute path "a.b" reads deeper)."""
    out = {}
    for name in names:
        value = _get(obj, name)
        arr = np.array(value, dtype=float)
        g = np.zeros_like(arr)
        for i in range(arr.size):
            lo, hi = arr.copy(), arr.copy()
            lo.flat[i] -= H
            hi.flat[i] += H
            g.flat[i] = (f(_with(obj, name, hi), *rest) - f(_with(obj, name, lo), *rest)) / (
                2 * H)
        out[name] = g if np.ndim(value) else float(g)
    return out


def _get(obj, path):
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def _with(obj, path, value):
    obj = copy.deepcopy(obj)
    *head, last = path.split(".")
    inner = obj
    for part in head:
        inner = getattr(inner, part)
    setattr(inner, last, value if np.ndim(value) else float(value))
    return obj


# -- classes --------------------------------------------------------------------------------
INITS = []


class Params:
    """Two numbers differentiated, an int, a string and a function that are constants."""

    def __init__(self, w, b):
        INITS.append(1)
        self.w, self.b = w, b
        self.n, self.label, self.act = 2, "params", np.tanh


class Dense:
    def __init__(self, W, b):
        self.W = W
        self.b = b

    def __call__(self, x):
        return np.tanh(self.W @ x + self.b)


class Model:
    """A module of modules: a list of layers, a scale, and a name."""

    def __init__(self, layers, scale):
        self.layers = layers
        self.scale = scale
        self.name = "mlp"

    def __call__(self, x):
        h = x
        for i in range(len(self.layers)):
            h = Dense.__call__(self.layers[i], h)
        return self.scale * np.sum(h ** 2)


class Point:
    """Only stores (a constant too): built inside a differentiated function."""

    def __init__(self, x, y, tag="p"):
        self.x = x
        self.y = y
        self.tag = tag
        self.kind = 1


class Equal:
    """Defines __eq__ (and so no __hash__): still taken apart by its attributes."""

    def __init__(self, v):
        self.v = v

    def __eq__(self, other):
        return type(other) is Equal and self.v == other.v

    __hash__ = None


class Slotted:
    __slots__ = ("w",)

    def __init__(self, w):
        self.w = w


class Computes:
    def __init__(self, w):
        self.w = 2.0 * w


def params_loss(p, x):
    return p.w * x + p.b ** p.n


def model_loss(model, x):
    return model(x)


def model():
    rng = np.random.default_rng(0)
    return Model([Dense(rng.normal(size=(4, 3)) * 0.5, rng.normal(size=4) * 0.1),
                  Dense(rng.normal(size=(2, 4)) * 0.5, rng.normal(size=2) * 0.1)], 0.7)


X = np.array([0.3, -0.2, 0.5])


# -- arguments ------------------------------------------------------------------------------
def test_grad_is_an_object_of_the_class_built_without_init():
    p = Params(2.0, 3.0)
    INITS.clear()
    g = s2sad.grad(params_loss)(p, 1.5)
    assert type(g) is Params and not INITS
    expected = fd_attributes(params_loss, p, ["w", "b"], 1.5)
    assert_close((g.w, g.b), (expected["w"], expected["b"]))
    assert (g.n, g.label, g.act) == (2, "params", np.tanh)      # constants, as they were


def test_gradients_with_respect_to_the_object_and_a_number():
    p = Params(2.0, 1.5)
    value, (gp, gx) = s2sad.value_and_grad(params_loss, wrt=(0, 1))(p, 0.7)
    assert_close(value, params_loss(p, 0.7))
    assert_close(gx, fd_grad(lambda x: params_loss(p, x), (0.7,)))
    assert_close(gp.b, fd_attributes(params_loss, p, ["b"], 0.7)["b"])


def test_a_model_of_layers_with_call_and_a_list_attribute():
    m = model()
    g = s2sad.grad(model_loss)(m, X)
    names = ["layers.0.W", "layers.0.b", "layers.1.W", "layers.1.b", "scale"]
    m_paths = _with_list_paths(m)
    expected = fd_attributes(lambda mm, x: model_loss(_from_paths(mm), x), m_paths, names, X)
    assert type(g) is Model and type(g.layers) is list and g.name == "mlp"
    for name in names:
        np.testing.assert_allclose(_get(_with_list_paths(g), name), expected[name], rtol=1e-5,
                                   atol=1e-7)


def test_jvp_along_an_object_of_the_class():
    m = model()
    t = copy.deepcopy(m)
    rng = np.random.default_rng(1)
    for layer in t.layers:
        layer.W, layer.b = rng.normal(size=layer.W.shape), rng.normal(size=layer.b.shape)
    t.scale = 0.3
    value, tangent = s2sad.jvp(model_loss, (m, X), (t, np.zeros(3)))
    along = (model_loss(_moved(m, t, H), X) - model_loss(_moved(m, t, -H), X)) / (2 * H)
    assert_close(value, model_loss(m, X))
    assert_close(tangent, along, rtol=1e-5, atol=1e-7)


def test_hessian_is_nested_like_the_class():
    def f(p):
        return p.w ** 3 * p.b ** p.n
    H_ = s2sad.hessian(f)(Params(2.0, 3.0))
    w, b = 2.0, 3.0
    assert_close([[H_.w.w, H_.w.b], [H_.b.w, H_.b.b]],
                 [[6 * w * b * b, 6 * w * w * b], [6 * w * w * b, 2 * w ** 3]])


def test_jacfwd_of_a_number():
    def f(p):
        return np.sin(p.w) * p.b
    J = s2sad.jacfwd(f)(Params(0.4, 1.5))
    assert_close((J.w, J.b), (np.cos(0.4) * 1.5, np.sin(0.4)))


def test_nested_objects_and_an_object_with_eq():
    class Outer:
        def __init__(self, inner, c):
            self.inner, self.c = inner, c

    def f(o):
        return np.sin(o.inner.v) * o.c
    o = Outer(Equal(0.5), 2.0)
    g = s2sad.grad(f)(o)
    assert type(g.inner) is Equal
    assert_close((g.inner.v, g.c), (2.0 * np.cos(0.5), np.sin(0.5)))


class Box:
    """A property computed from its attributes, and a class attribute."""

    margin = 0.5

    def __init__(self, w, h):
        self.w, self.h = w, h

    @property
    def area(self):
        return self.w * self.h


def box_loss(b):
    return b.area * b.w + b.margin


def test_a_property_read_is_a_call_of_its_getter():
    b = Box(3.0, 2.0)
    g = s2sad.grad(box_loss)(b)
    expected = fd_attributes(box_loss, b, ["w", "h"])
    assert_close((g.w, g.h), (expected["w"], expected["h"]))
    t = s2sad.jvp(box_loss, (b,), (Box(1.0, 0.0),))[1]
    assert_close(t, expected["w"])
    H_ = s2sad.hessian(box_loss)(b)
    assert_close([[H_.w.w, H_.w.h], [H_.h.w, H_.h.h]], [[2 * 2.0, 2 * 3.0], [2 * 3.0, 0.0]])


def test_a_property_of_an_item_of_a_list_argument_is_a_call_of_its_getter():
    def f(boxes):       # (the derivative is specialised on the classes of the items)
        return boxes[0].area * boxes[1].w
    g = s2sad.grad(f)([Box(3.0, 2.0), Box(1.0, 1.0)])
    assert_close([g[0].w, g[0].h, g[1].w, g[1].h], [2.0, 3.0, 6.0, 0.0])


def test_a_property_of_an_object_of_unknown_class_is_refused():
    def f(boxes):
        return boxes["a"].area * boxes["b"].w
    with pytest.raises(s2sad.S2SADError, match=r"reading \.area of a differentiated Box: "
                                               r"\.area is a property"):
        s2sad.grad(f)({"a": Box(3.0, 2.0), "b": Box(1.0, 1.0)})


# -- built in the function ------------------------------------------------------------------
def built(x):
    p = Point(np.sin(x), x * x)
    return p.x * p.y + p.kind


def test_an_object_built_from_differentiated_values():
    for x in (0.3, 1.7):
        assert_close(s2sad.grad(built)(x), fd_grad(built, (x,)))
        assert_close(s2sad.jvp(built, (x,), (1.0,))[1], fd_grad(built, (x,)))
        assert_close(s2sad.hessian(built)(x),
                     fd_grad(lambda v: float(s2sad.grad(built)(v)), (x,)), rtol=1e-5)


def test_an_object_built_and_returned():
    def f(x):
        return Point(x * x, 3.0 * x, tag="q")
    y, pullback = s2sad.vjp(f, 1.5)
    assert type(y) is Point and (y.x, y.y, y.tag) == (2.25, 4.5, "q")
    (gx,) = pullback(Point(1.0, 2.0))
    assert_close(gx, 2 * 1.5 * 1.0 + 3.0 * 2.0)
    value, tangent = s2sad.jvp(f, (1.5,), (1.0,))
    assert type(tangent) is Point and (tangent.x, tangent.y) == (3.0, 3.0)


# -- refused --------------------------------------------------------------------------------
def test_a_class_with_slots_is_refused_naming_register_pytree():
    with pytest.raises(s2sad.S2SADError, match=r"holds a Slotted object.*__slots__.*"
                                               r"register_pytree"):
        s2sad.grad(lambda s: s.w * 2.0)(Slotted(1.0))


@pytest.mark.parametrize("run", [lambda f, n: s2sad.grad(f)(n),
                                 lambda f, n: s2sad.hessian(f)(n)], ids=["grad", "hessian"])
def test_an_object_that_holds_itself_is_refused(run):
    class Node:
        def __init__(self, w):
            self.w = w
    a, b = Node(1.0), Node(2.0)
    a.next, b.previous = b, a
    with pytest.raises(s2sad.S2SADError, match=r"Node (object )?that holds itself.*"
                                               r"register_pytree"):
        run(lambda n: n.w * 2.0, a)


def test_an_init_that_computes_is_refused_where_it_is_called():
    def f(x):
        return Computes(x).w
    with pytest.raises(s2sad.MissingRuleError,
                       match=r"test_plain_classes\.py:\d+: Computes\(\.\.\.\) builds an "
                             r"object.*__init__ only stores"):
        s2sad.grad(f)(1.0)


# -- helpers of the oracle: a model's list of layers as attributes "0", "1" ------------------
class _Layers:
    pass


def _with_list_paths(m):
    out = copy.deepcopy(m)
    layers = _Layers()
    for i, layer in enumerate(out.layers):
        setattr(layers, str(i), layer)
    out.layers = layers
    return out


def _from_paths(m):
    out = copy.copy(m)
    out.layers = [getattr(m.layers, str(i)) for i in range(len(vars(m.layers)))]
    return out


def _moved(m, t, h):
    out = copy.deepcopy(m)
    for layer, d in zip(out.layers, t.layers):
        layer.W, layer.b = layer.W + h * d.W, layer.b + h * d.b
    out.scale = m.scale + h * t.scale
    return out


class Pair:
    def __init__(self, w, b, name="pair"): self.b, self.w, self.name = b, w, name    # noqa: E704


def built_pair(x):
    p = Pair(x, 3.0 * x)
    return p.w * p.w * p.b


def test_an_init_that_stores_with_a_tuple_assignment():
    # (w, b) = (x, 3x): w^2 b = 3 x^3, whose derivative is 9 x^2
    for x in (0.4, -1.3):
        assert_close(s2sad.grad(built_pair)(x), 9.0 * x * x)
        assert_close(s2sad.jvp(built_pair, (x,), (1.0,))[1], 9.0 * x * x)
        assert_close(s2sad.hessian(built_pair)(x), 18.0 * x, rtol=1e-6)


# -- constructors that call their base's, or inherit it (as torch.nn.Module subclasses do) --
class Module:
    def __init__(self):
        super().__init__()
        self.training = True


class Affine(Module):
    def __init__(self, w, scale=2):
        super().__init__()
        self.w = w
        self.scale = scale

    def __call__(self, x):
        return np.tanh(self.w * x) * self.scale


class Shifted(Affine):
    def __init__(self, w, b):
        super().__init__(w)
        self.b = b

    def __call__(self, x):
        return super().__call__(x) + self.b * x


class Scaled(Affine):
    def __init__(self, b, w):
        Affine.__init__(self, w=w, scale=3)
        self.b = b


class Inherits(Affine):
    def __call__(self, x):
        return self.w * x ** 2


class ComputesBelow(Affine):
    def __init__(self, w):
        super().__init__(w * 2.0)


def shifted(x):
    return Shifted(x, x * x)(0.3)


def scaled(x):
    m = Scaled(x * 0.5, x)
    return m(0.3) * m.b + m.scale


def inherits(x):
    return Inherits(np.sin(x))(0.3)


@pytest.mark.parametrize("f", [shifted, scaled, inherits])
def test_an_init_that_calls_its_bases_or_inherits_it(f):
    for x in (0.7, -1.2):
        assert_close(s2sad.grad(f)(x), fd_grad(f, (x,)))
        assert_close(s2sad.jvp(f, (x,), (1.0,))[1], fd_grad(f, (x,)))
        assert_close(s2sad.hessian(f)(x),
                     fd_grad(lambda v: float(s2sad.grad(f)(v)), (x,)), rtol=1e-5)


def test_the_gradient_of_a_subclass_argument_is_of_its_class():
    m = Shifted(0.7, 0.2)
    g = s2sad.grad(lambda m: m(0.3))(m)
    assert type(g) is Shifted
    assert_close(g.w, fd_grad(lambda w: Shifted(w, 0.2)(0.3), (0.7,)))
    assert_close(g.b, 0.3)


def test_an_init_whose_base_is_given_a_computed_value_is_refused():
    with pytest.raises(s2sad.MissingRuleError, match=r"ComputesBelow\(\.\.\.\) builds an"):
        s2sad.grad(lambda x: ComputesBelow(x)(0.3))(1.0)


# -- methods that return a new instance (`s = s.step(dt)`) ----------------------------------
class Oscillator:
    """Immutable style: `step` returns the next state, a new instance of the class."""

    def __init__(self, k, pos, vel):
        self.k, self.pos, self.vel = k, pos, vel

    def step(self, dt):
        return Oscillator(self.k, self.pos + dt * self.vel, self.vel - dt * self.k * self.pos)

    def energy(self):
        return 0.5 * np.sum(self.vel ** 2) + 0.5 * np.sum(self.k * self.pos ** 2)

    def itself(self):
        return self

    def step_and_energy(self, dt):
        after = self.step(dt)
        return after, after.energy()


def chained(k):
    s = Oscillator(k, np.ones(2), np.zeros(2))
    s = s.step(0.1)
    s = s.step(0.2).itself()
    return s.energy()


def looped(k):
    s = Oscillator(k, np.ones(2), np.zeros(2))
    total = 0.0
    for _ in range(4):
        s, e = s.step_and_energy(0.05)
        total = total + e
    return total + s.step(0.1).energy()


@pytest.mark.parametrize("f", [chained, looped])
def test_a_method_returning_a_new_instance_is_followed_to_its_class(f):
    # the class of what `s.step(dt)` returns is the class the method builds, so the next
    # `s.step` is found through it (before: "the method call s.step() is not supported")
    k = np.array([1.5, 0.7])
    expected = fd_array_grad(f, (k,), 0)
    np.testing.assert_allclose(s2sad.grad(f)(k), expected, atol=1e-8)
    value, g = s2sad.value_and_grad(f)(k)
    assert_close(value, f(k))
    np.testing.assert_allclose(g, expected, atol=1e-8)
    direction = np.array([1.0, -2.0])
    np.testing.assert_allclose(s2sad.jvp(f, (k,), (direction,))[1], expected @ direction,
                               atol=1e-8)
    rows = [fd_array_grad(lambda v, i=i: s2sad.grad(f)(v)[i], (k,), 0) for i in range(2)]
    np.testing.assert_allclose(s2sad.hessian(f)(k), np.array(rows), rtol=1e-5, atol=1e-8)


def test_a_method_returning_a_new_instance_in_a_while_loop():
    import dataclasses

    @dataclasses.dataclass
    class State:
        x: np.ndarray
        t: float

        def advance(self, h):
            return State(self.x * np.exp(-h * self.x), self.t + h)

    def decay(x0):
        st = State(x0, 0.0)
        while st.t < 0.35:
            st = st.advance(0.1)
        return np.sum(st.x ** 2)

    x0 = np.array([1.0, 2.0])
    np.testing.assert_allclose(s2sad.grad(decay)(x0), fd_array_grad(decay, (x0,), 0),
                               atol=1e-8)


def test_a_method_replaced_on_the_class_recompiles_what_returned_its_instances():
    class Walker:
        def __init__(self, x):
            self.x = x

        def step(self):
            return Walker(self.x * self.x)

    def walk(x):
        w = Walker(x).step()
        return w.step().x

    g = s2sad.grad(walk)
    assert_close(g(1.1), 4 * 1.1 ** 3)
    Walker.step = lambda self: Walker(3.0 * self.x)
    assert_close(g(1.1), fd_grad(walk, (1.1,)))
    assert_close(g(1.1), 9.0)


def test_a_method_whose_class_depends_on_the_branch_is_refused_located():
    class Other:
        def __init__(self, v):
            self.v = v

        def step(self, dt):
            return Other(self.v * dt)

    def mixed(x):
        s = Oscillator(x, x, x) if x[0] > 0 else Other(x)
        s = s.step(0.1)
        return np.sum(s.pos)

    with pytest.raises(s2sad.S2SADError, match=r"test_plain_classes\.py:\d+: the method call "
                       r"s\.step\(\) is not supported here"):
        s2sad.grad(mixed)(np.array([1.0, 2.0]))


class Stepper:
    def __init__(self, k, pos):
        self.k, self.pos = k, pos

    def step(self, dt):                     # changes its object (tests/test_mutating_calls.py)
        self.pos = self.pos * (1.0 - dt * self.k)

    def stepped(self, dt):                  # what the error says to write instead
        return Stepper(self.k, self.pos * (1.0 - dt * self.k))


def test_a_method_changing_its_object_is_differentiated_where_it_is_called():
    def changing(k):
        s = Stepper(k, 1.0)
        s.step(0.1)
        return s.pos

    def rebinding(k):
        s = Stepper(k, 1.0)
        s = s.stepped(0.1)
        return s.pos

    assert_close(s2sad.grad(changing)(2.0), fd_grad(changing, (2.0,)))
    assert_close(s2sad.grad(rebinding)(2.0), fd_grad(rebinding, (2.0,)))
