"""Lists of the user's objects and functions stored in fields, as arguments and globals
(#36): `for layer in layers: h = layer.forward(h)`, `self.act(z)`, `for layer in
self.layers` in a model's `__call__`. The code is specialised on the structure (the
items' classes, the lists' lengths, the functions stored), and the guard tests it:
checked against central differences of the function as it is at each call."""
import numpy as np
import pytest

import s2sad

H = 1e-6


def assert_close(actual, expected, rtol=1e-6, atol=1e-8):
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol)


class Dense:
    def __init__(self, w, b, act=np.tanh):
        self.w = w
        self.b = b
        self.act = act

    def forward(self, x):
        return self.act(self.w @ x + self.b)


class Relu:
    def forward(self, x):
        return np.maximum(x, 0.0)


class Model:
    def __init__(self, layers):
        self.layers = layers

    def __call__(self, x):
        for layer in self.layers:
            x = layer.forward(x)
        return x


class Stack:
    """Blocks of layers: `model.blocks[i].layers`."""

    def __init__(self, blocks, scale):
        self.blocks = blocks
        self.scale = scale

    def __call__(self, x):
        for block in self.blocks:
            x = block(x)
        return self.scale * x


def loss_layers(layers, x):
    h = x
    for layer in layers:
        h = layer.forward(h)
    return np.sum(h ** 2)


def loss_model(model, x):
    return np.sum(model(x) ** 2)


def loss_dense(layer, x):
    return np.sum(layer.forward(x))


def layers_of(seed, last=lambda z: z):
    rng = np.random.default_rng(seed)
    return [Dense(rng.normal(size=(4, 3)), rng.normal(size=4)),
            Dense(rng.normal(size=(2, 4)), rng.normal(size=2), act=last)]


X = np.array([0.3, -0.7, 0.5])


def fd_grad(f, args):
    """d f(x) / d x by central differences, for `args` = (x,), x a number or an array."""
    x = np.asarray(args[0], dtype=float)
    g = np.zeros_like(x)
    for i in range(x.size):
        hi, lo = x.copy(), x.copy()
        hi.flat[i] += H
        lo.flat[i] -= H
        g.flat[i] = (np.asarray(f(hi)) - np.asarray(f(lo))).sum() / (2 * H) if np.ndim(
            f(hi)) else (f(hi) - f(lo)) / (2 * H)
    return g if x.ndim else float(g)


def fd_fields(f, objects, x):
    """[{field: d f / d field}] for the array fields w and b of each layer of `objects`
    that has them, by central differences of `f(objects, x)`."""
    out = []
    for layer in objects:
        found = {}
        for name in ("w", "b") if hasattr(layer, "w") else ():
            value = getattr(layer, name)
            g = np.zeros_like(value)
            for i in range(value.size):
                for sign in (1, -1):
                    moved = value.copy()
                    moved.flat[i] += sign * H
                    setattr(layer, name, moved)
                    g.flat[i] += sign * f(objects, x) / (2 * H)
                setattr(layer, name, value)
            found[name] = g
        out.append(found)
    return out


def check_gradient(g, objects, expected):
    assert type(g) is type(objects) and len(g) == len(objects)
    for got, layer, want in zip(g, objects, expected):
        assert type(got) is type(layer)
        for name, value in want.items():
            assert_close(getattr(got, name), value, rtol=1e-5, atol=1e-7)
        if isinstance(layer, Dense):
            assert got.act is layer.act      # (a function stored is static, not a leaf)


def test_a_list_of_layer_objects_differentiated():
    layers = layers_of(0)
    g = s2sad.grad(loss_layers)(layers, X)
    check_gradient(g, layers, fd_fields(loss_layers, layers, X))
    gx = s2sad.grad(loss_layers, 1)(layers, X)
    assert_close(gx, fd_grad(lambda x: loss_layers(layers, x), (X,)), rtol=1e-5)


def test_forward_and_second_order_through_a_list_of_layers():
    layers = layers_of(1)
    v = np.array([1.0, 0.5, -2.0])
    f = lambda x: loss_layers(layers, x)            # noqa: E731
    _, t = s2sad.jvp(loss_layers, (layers, X), (None, v))
    assert_close(t, fd_grad(f, (X,)) @ v, rtol=1e-5)
    hv = s2sad.hvp(f)(X, v)
    assert_close(hv, fd_grad(lambda x: s2sad.grad(f)(x) @ v, (X,)), rtol=1e-4, atol=1e-6)


def test_a_tuple_of_layers_with_a_layer_without_fields():
    layers = (layers_of(2)[0], Relu(), layers_of(3)[1])
    g = s2sad.grad(loss_layers)(layers, X)
    check_gradient(g, layers, fd_fields(loss_layers, layers, X))


def test_a_model_holding_its_layers():
    model = Model(layers_of(4))
    g = s2sad.grad(loss_model)(model, X)
    assert type(g) is Model
    check_gradient(g.layers, model.layers,
                   fd_fields(lambda ls, x: loss_model(Model(ls), x), model.layers, X))
    gx = s2sad.grad(loss_model, 1)(model, X)
    assert_close(gx, fd_grad(lambda x: loss_model(model, x), (X,)), rtol=1e-5)


def test_a_global_model_read_inside():
    model = Model(layers_of(5))

    def loss_x(x):
        return np.sum(model(x) ** 2)
    g = s2sad.grad(loss_x)
    assert_close(g(X), fd_grad(loss_x, (X,)), rtol=1e-5)
    model.layers[0].act = np.sin                # a field rebound between two calls
    assert_close(g(X), fd_grad(loss_x, (X,)), rtol=1e-5)
    model.layers.append(Relu())                 # an item added
    assert_close(g(X), fd_grad(loss_x, (X,)), rtol=1e-5)
    model.layers = model.layers[:1]             # the list rebound
    assert_close(g(X), fd_grad(loss_x, (X,)), rtol=1e-5)


def test_nested_blocks_of_layers():
    blocks = [Model(layers_of(6, last=np.tanh)),
              Model([Relu(), Dense(np.array([[1.0, -0.5], [0.3, 0.8]]), np.array([0.1, -0.2]))])]
    stack = Stack(blocks, 0.5)
    g = s2sad.grad(loss_model)(stack, X)
    assert type(g) is Stack and type(g.blocks[1].layers[1]) is Dense
    assert_close(g.scale, fd_grad(lambda s: loss_model(Stack(blocks, s), X), (0.5,)),
                 rtol=1e-5)
    expected = fd_fields(lambda ls, x: loss_model(Stack(blocks, 0.5), x),
                         blocks[1].layers, X)
    check_gradient(g.blocks[1].layers, blocks[1].layers, expected)
    gx = s2sad.grad(loss_model, 1)(stack, X)
    assert_close(gx, fd_grad(lambda x: loss_model(stack, x), (X,)), rtol=1e-5)


def test_a_function_stored_in_a_field_of_an_argument():
    layer = Dense(np.eye(3), np.zeros(3), act=np.sin)
    g = s2sad.grad(loss_dense, 1)
    assert_close(g(layer, X), np.cos(X))
    layer.act = np.tanh                                         # rebound between calls
    assert_close(g(layer, X), 1 - np.tanh(X) ** 2)
    assert_close(g(Dense(np.eye(3), np.zeros(3), act=lambda z: z * z), X), 2 * X)


def test_the_list_changed_between_calls_compiles_again():
    layers = layers_of(8)
    dx = s2sad.grad(loss_layers, 1)
    for change in (lambda: layers.append(Dense(np.eye(2), np.ones(2), act=np.cos)),
                   lambda: layers.__setitem__(2, Relu()),
                   lambda: setattr(layers[0], "act", np.arctan),
                   lambda: layers.pop()):
        change()
        assert_close(dx(layers, X), fd_grad(lambda x: loss_layers(layers, x), (X,)),
                     rtol=1e-5)


def changed_inside(layers, x):
    layers.append(Relu())
    h = x
    for layer in layers:
        h = layer.forward(h)
    return np.sum(h)


def handed_on(layers, x):
    more = layers
    h = x
    for layer in more:
        h = layer.forward(h)
    return np.sum(h)


class Growing(Model):
    def grow(self):
        self.layers.append(Relu())

    def __call__(self, x):
        self.grow()         # (what a method does to self.layers is not followed)
        for layer in self.layers:
            x = layer.forward(x)
        return x


class Switching(Dense):
    def use_sin(self):
        self.act = np.sin

    def forward(self, x):
        self.use_sin()      # (nor what it stores in self.act)
        return self.act(self.w @ x + self.b)


@pytest.mark.parametrize("f, make", [
    (changed_inside, layers_of), (handed_on, layers_of),
    (loss_model, lambda seed: Growing(layers_of(seed))),
    (loss_layers, lambda seed: [Switching(np.eye(3), np.zeros(3))])])
def test_a_structure_the_function_may_change_is_refused_located(f, make):
    with pytest.raises(s2sad.S2SADError, match=r"test_layer_lists\.py:\d+: the "):
        s2sad.grad(f, 1)(make(9), X)


def test_more_items_than_followed_is_refused_located():
    many = [Relu()] * 40
    with pytest.raises(s2sad.S2SADError, match=r"test_layer_lists\.py:\d+: the method call"):
        s2sad.grad(loss_layers, 1)(many, X)


def test_jvp_with_a_list_of_layers_as_the_tangent():
    layers = layers_of(10)
    tangent = [Dense(np.ones((4, 3)), np.ones(4)),
               Dense(np.full((2, 4), 0.5), -np.ones(2), act=layers[1].act)]

    def along(s):
        moved = [Dense(a.w + s * d.w, a.b + s * d.b, act=a.act)
                 for a, d in zip(layers, tangent)]
        return loss_layers(moved, X)
    _, t = s2sad.jvp(loss_layers, (layers, X), (tangent, np.zeros(3)))
    assert_close(t, (along(H) - along(-H)) / (2 * H), rtol=1e-5)


def run_layers(layers, x):
    for layer in layers:
        x = layer.forward(x)
    return x


def loss_through_a_helper(layers, x):
    return np.sum(run_layers(layers, x) ** 2)


def test_a_list_handed_to_a_helper_that_loops_over_it():
    layers = layers_of(11)
    g = s2sad.grad(loss_through_a_helper, 1)
    for change in (lambda: None, lambda: setattr(layers[1], "act", np.sin),
                   lambda: layers.insert(1, Relu())):
        change()
        assert_close(g(layers, X), fd_grad(lambda x: loss_through_a_helper(layers, x), (X,)),
                     rtol=1e-5)
    check_gradient(s2sad.grad(loss_through_a_helper)(layers, X), layers,
                   fd_fields(loss_through_a_helper, layers, X))


class Linear:
    def __init__(self, w, b):
        self.w = w
        self.b = b

    def __call__(self, x):
        return self.w @ x + self.b


class MLP:
    """As PyTorch code writes it: tanh between the layers, none after the last."""

    def __init__(self, layers):
        self.layers = layers

    def __call__(self, x):
        for layer in self.layers[:-1]:
            x = np.tanh(layer(x))
        return self.layers[-1](x)


def loss_mlp(model, x):
    return np.sum(model(x) ** 2)


def mlp(seed):
    rng = np.random.default_rng(seed)
    return MLP([Linear(rng.normal(size=(4, 3)), rng.normal(size=4)),
                Linear(rng.normal(size=(4, 4)), rng.normal(size=4)),
                Linear(rng.normal(size=(1, 4)), rng.normal(size=1))])


def test_a_slice_of_the_layers_and_the_last_layer_by_a_negative_index():
    model = mlp(7)
    g = s2sad.grad(loss_mlp)(model, X)
    expected = fd_fields(lambda layers, x: loss_mlp(MLP(layers), x), model.layers, X)
    for got, want in zip(g.layers, expected):
        assert_close(got.w, want["w"], rtol=1e-5, atol=1e-7)
        assert_close(got.b, want["b"], rtol=1e-5, atol=1e-7)
    v = np.array([0.2, -1.0, 0.4])
    _, t = s2sad.jvp(loss_mlp, (model, X), (None, v))
    assert_close(t, fd_grad(lambda x: loss_mlp(model, x), (X,)) @ v, rtol=1e-5)
    model.layers.insert(1, Linear(np.eye(4), np.zeros(4)))      # (a layer more: compiled again)
    gx = s2sad.grad(loss_mlp, 1)(model, X)
    assert_close(gx, fd_grad(lambda x: loss_mlp(model, x), (X,)), rtol=1e-5)


# -- zip and enumerate over the layers: `for layer, p in zip(self.layers, params)` -------
class Scaled:
    """A layer whose parameters are passed beside it, not held."""

    def apply(self, p, x):
        return np.tanh(p * x)


class Shifted:
    def apply(self, p, x):
        return np.sin(x + p)


class Net:
    def __init__(self, layers):
        self.layers = layers

    def loss(self, params, x):
        for layer, p in zip(self.layers, params):
            x = layer.apply(p, x)
        return np.sum(x * x)


def loss_zipped(layers, params, x):
    for layer, p in zip(layers, params):
        x = layer.apply(p, x)
    return np.sum(x * x)


def loss_enumerated(layers, params, x):
    for k, layer in enumerate(layers[1:]):
        x = layer.apply(params[k] * (k + 1.0), x)
    return np.sum(x * x)


def loss_closed(params, x):
    x = np.tanh(params[0] * x)
    x = np.sin(x + params[1])
    return np.sum(x * x)


def loss_enumerated_closed(params, x):
    x = np.sin(x + params[0])
    return np.sum(x * x)


NET = Net([Scaled(), Shifted()])


def loss_of_the_net(params, x):
    return NET.loss(params, x)


@pytest.mark.parametrize("f, layers, extra, closed", [
    (loss_zipped, [Scaled(), Shifted()], [], loss_closed),
    (loss_zipped, [Scaled(), Shifted()], [np.ones(3)], loss_closed),     # zip stops
    (loss_of_the_net, None, [], loss_closed),
    (loss_enumerated, [Scaled(), Shifted()], [], loss_enumerated_closed),
])
def test_a_loop_over_zip_or_enumerate_of_the_layers(f, layers, extra, closed):
    """The loop is unrolled over the layers (the items' classes are known: their
    methods are found), reading the other sequence at the same index: zip stops at the
    layers."""
    params = [np.array([0.5, -0.3, 1.2]), np.array([0.2, 0.4, -0.1])]
    x = np.array([0.3, -0.7, 0.5])
    before = [] if layers is None else [layers]
    g = s2sad.grad(f, wrt=(len(before), len(before) + 1))(*before, params + extra, x)
    for k in range(2):
        assert_close(g[0][k], fd_grad(lambda p: closed(params[:k] + [p] + params[k + 1:], x),
                                      (params[k],)), rtol=1e-5)
    assert_close(g[1], fd_grad(lambda x: closed(params, x), (x,)), rtol=1e-5)
