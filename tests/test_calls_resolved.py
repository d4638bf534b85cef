"""Calls s2sad resolves since issue #36: methods of the objects of a list outside the
function (`for layer in layers: x = layer.forward(x)`, the loop unrolled, the list's
items' classes guarded), `super().m(x)`, and functions decorated with a wrapper that only
forwards (`functools.wraps`) or memoises (`functools.cache`, `lru_cache`), `grad` of a `functools.partial`, and functions passed as
arguments or left as defaults (`def f(x, nonlinearity=np.tanh)`). Gradients (grad), tangents (jvp) and second derivatives
(hessian) against central differences in float64 (tests/oracle.py, and
numpy_cases.fd_array_grad for arrays)."""
import dataclasses
import functools

import numpy as np
import pytest

import s2sad
from numpy_cases import fd_array_grad
from oracle import assert_close, fd_grad

X = np.array([0.3, -0.4, 0.8, 0.1, -0.6])


def assert_array_close(actual, expected, rtol=1e-6, atol=1e-8):
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol)


# -- a CNN-ish stack of layers of different classes ------------------------------------------
class Conv1D:
    """A 1-d convolution of width 3, without padding."""

    def __init__(self, kernel, bias):
        self.kernel, self.bias = kernel, bias

    def forward(self, x):
        k = self.kernel
        return k[0] * x[:-2] + k[1] * x[1:-1] + k[2] * x[2:] + self.bias


class Tanh:
    def forward(self, x):
        return np.tanh(x)


class Dense:
    def __init__(self, W, b):
        self.W, self.b = W, b

    def forward(self, x):
        return self.W @ x + self.b


class Scale:
    def __init__(self, s):
        self.s = s

    def forward(self, x):
        return self.s * x


rng = np.random.default_rng(3)
LAYERS = [Conv1D(rng.normal(size=3), 0.1), Tanh(), Dense(rng.normal(size=(2, 3)) * 0.5,
                                                         rng.normal(size=2)), Tanh()]


def network(x):
    for layer in LAYERS:
        x = layer.forward(x)
    return np.sum(x ** 2)


def test_a_loop_over_a_module_level_list_of_layers_of_several_classes():
    assert_array_close(s2sad.grad(network)(X), fd_array_grad(network, (X,), 0), rtol=1e-5)
    v = np.array([1.0, -0.5, 0.2, 0.0, 0.3])
    value, tangent = s2sad.jvp(network, (X,), (v,))
    assert_close(value, network(X))
    assert_close(tangent, float(fd_array_grad(network, (X,), 0) @ v), rtol=1e-5)
    hessian = s2sad.hessian(network)(X)
    columns = [fd_array_grad(lambda x: s2sad.grad(network)(x)[i], (X,), 0) for i in range(X.size)]
    assert_array_close(hessian, np.array(columns), rtol=1e-4, atol=1e-6)


def test_the_list_changed_recompiles_and_an_item_changed_in_place_is_read():
    layers = [Scale(2.0), Tanh()]

    def f(x):
        for layer in layers:
            x = layer.forward(x)
        return x * x

    def expected(x):
        return fd_grad(f, (x,))

    g = s2sad.grad(f)
    assert_close(g(0.3), expected(0.3))
    layers[0].s = 0.5                   # an attribute: read when the derivative runs
    assert_close(g(0.3), expected(0.3))
    layers[1] = Scale(3.0)              # an item of another class: compiled again
    assert_close(g(0.3), expected(0.3))
    layers.append(Tanh())               # one more item: compiled again
    assert_close(g(0.3), expected(0.3))
    del layers[0]
    assert_close(g(0.3), expected(0.3))
    assert_close(s2sad.jvp(f, (0.3,), (1.0,))[1], expected(0.3))


def test_a_list_an_object_holds_and_items_read_by_index():
    class Stack:
        def __init__(self, layers):
            self.layers = layers
    stack = Stack([Scale(1.5), Tanh(), Scale(-2.0)])

    def f(x):
        for layer in stack.layers:
            x = layer.forward(x)
        return stack.layers[0].forward(x) * x

    assert_close(s2sad.grad(f)(0.4), fd_grad(f, (0.4,)))
    stack.layers[0] = Tanh()
    assert_close(s2sad.grad(f)(0.4), fd_grad(f, (0.4,)))


# -- super() --------------------------------------------------------------------------------
class Base:
    def __init__(self, w):
        self.w = w

    def energy(self, x):
        return self.w * x * x

    def factor(self, k=2.0):
        return k


class Damped(Base):
    def energy(self, x):
        return super().energy(x) + np.sin(x)


class Scaled(Damped):
    def energy(self, x):
        return super().energy(x) * super().factor(k=3.0)


SCALED = Scaled(1.5)


def energy_of_global(x):
    return SCALED.energy(x)


def energy_of_argument(model, x):
    return model.energy(x)


def test_super_method_calls_two_levels_up():
    for x in (0.7, -1.2):
        expected = fd_grad(energy_of_global, (x,))
        assert_close(s2sad.grad(energy_of_global)(x), expected)
        assert_close(s2sad.jvp(energy_of_global, (x,), (1.0,))[1], expected)
        assert_close(s2sad.hessian(energy_of_global)(x),
                     fd_grad(lambda v: float(s2sad.grad(energy_of_global)(v)), (x,)),
                     rtol=1e-5)


def test_super_in_the_methods_of_an_argument_differentiated():
    g = s2sad.grad(energy_of_argument, wrt=(0, 1))(Scaled(1.5), 0.7)
    assert type(g[0]) is Scaled
    assert_close(g[0].w, fd_grad(lambda w: energy_of_argument(Scaled(w), 0.7), (1.5,)))
    assert_close(g[1], fd_grad(lambda x: energy_of_argument(Scaled(1.5), x), (0.7,)))


def test_super_resolved_again_when_the_parent_method_changes():
    class A:
        def m(self, x):
            return x * x

    class B(A):
        def m(self, x):
            return super().m(x) * 2.0
    b = B()

    def f(x):
        return b.m(x)
    assert_close(s2sad.grad(f)(3.0), 12.0)
    A.m = lambda self, x: x * x * x
    assert_close(s2sad.grad(f)(3.0), 54.0)


# -- functools.wraps ------------------------------------------------------------------------
def forwarding(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        """Only forwards."""
        return fn(*args, **kwargs)
    return wrapper


def counting(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        wrapper.calls += 1
        return fn(*args, **kwargs)
    wrapper.calls = 0
    return wrapper


@forwarding
def wrapped_energy(x, k=2.0):
    return k * np.sin(x) * x


def positional_forwarding(fn):
    @functools.wraps(fn)
    def wrapper(*args):
        return fn(*args)
    return wrapper


def binding_forwarding(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        result = fn(*args, **kwargs)
        return result
    return wrapper


def dropping_keywords(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args)
    return wrapper


@positional_forwarding
def cubed(x):
    return x ** 3


@binding_forwarding
def damped(x, k=0.5):
    return np.exp(-k * x) * x


@dropping_keywords
def scaled(x, k=2.0):
    return k * x * x


@counting
def counted_energy(x):
    return x * x


@functools.lru_cache(maxsize=None)
def cached_factor(n):
    return n * 2.0


def calls_wrapped(x):
    return wrapped_energy(x, k=3.0) + x * cached_factor(3)


def calls_counted(x):
    return counted_energy(x) + 1.0


def test_a_wrapper_that_only_forwards_is_seen_through():
    for x in (0.4, -1.3):
        expected = fd_grad(calls_wrapped, (x,))
        assert_close(s2sad.grad(calls_wrapped)(x), expected)
        assert_close(s2sad.jvp(calls_wrapped, (x,), (1.0,))[1], expected)
        assert_close(s2sad.grad(wrapped_energy)(x), fd_grad(wrapped_energy, (x,)))
        assert_close(s2sad.hessian(wrapped_energy)(x),
                     fd_grad(lambda v: float(s2sad.grad(wrapped_energy)(v)), (x,)), rtol=1e-5)


def test_wrappers_forwarding_positional_arguments_or_binding_the_result_are_seen_through():
    """`def w(*args): return fn(*args)` and `r = fn(*args, **kwargs); return r` run the
    function they wrap: s2sad differentiates it; a wrapper that drops its keywords does
    more than forward (its `k=` never reaches `scaled`), and is refused at its def."""
    def uses(x):
        return cubed(x) + damped(x, k=x)
    for x in (0.4, -1.3):
        assert_close(s2sad.grad(uses)(x), fd_grad(uses, (x,)))
        assert_close(s2sad.jvp(uses, (x,), (1.0,))[1], fd_grad(uses, (x,)))
        assert_close(s2sad.grad(damped)(x), fd_grad(damped, (x,)))
    line = dropping_keywords.__code__.co_firstlineno + 1
    with pytest.raises(s2sad.SourceUnavailableError,
                       match=rf"test_calls_resolved\.py:{line}: 'scaled' is wrapped"):
        s2sad.grad(scaled)(0.5)


@functools.cache
def cached_energy(x, k=2.0):
    return k * np.sin(x) * x


def calls_cached(x):
    return cached_energy(x, k=x) + cached_energy(x * x)


def test_a_function_memoised_by_functools_cache_is_its_function():
    """(a memoised function returns its function's values: s2sad differentiates that)"""
    for x in (0.4, -1.3):
        expected = fd_grad(calls_cached, (x,))
        assert_close(s2sad.grad(calls_cached)(x), expected)
        assert_close(s2sad.jvp(calls_cached, (x,), (1.0,))[1], expected)
        assert_close(s2sad.grad(cached_energy)(x), fd_grad(cached_energy, (x,)))
        assert_close(s2sad.hessian(calls_cached)(x),
                     fd_grad(lambda v: float(s2sad.grad(calls_cached)(v)), (x,)), rtol=1e-5)


@pytest.mark.parametrize("fn", [counted_energy, calls_counted], ids=["itself", "called"])
def test_a_wrapper_that_does_more_is_refused_at_its_def(fn):
    line = counting.__code__.co_firstlineno + 1       # (the line of @functools.wraps)
    with pytest.raises(s2sad.SourceUnavailableError,
                       match=rf"test_calls_resolved\.py:{line}: 'counted_energy' "
                             r"is wrapped by a decorator .* does more than call"):
        s2sad.grad(fn)(0.5)


# -- grad of functools.partial --------------------------------------------------------------
def loglik(x, mu, s=1.0):
    return -(x - mu) ** 2 / (2 * s * s) + np.sin(mu * x)


def test_a_partial_is_differentiated_with_respect_to_the_parameters_it_leaves():
    by_keyword = functools.partial(loglik, mu=0.4)
    by_position = functools.partial(loglik, 0.7)          # x bound: wrt 0 is mu
    for g, f_of in ((by_keyword, lambda v: loglik(v, 0.4)),
                    (by_position, lambda v: loglik(0.7, v))):
        assert_close(s2sad.grad(g)(1.3), fd_grad(f_of, (1.3,)))
        assert_close(s2sad.jvp(g, (1.3,), (1.0,))[1], fd_grad(f_of, (1.3,)))
        assert_close(s2sad.hessian(g)(1.3),
                     fd_grad(lambda v: float(s2sad.grad(g)(v)), (1.3,)), rtol=1e-5)
    value, grads = s2sad.value_and_grad(by_position, wrt=(0, 1))(0.2, 2.0)
    assert_close(value, loglik(0.7, 0.2, 2.0))
    assert_close(grads, fd_grad(lambda mu, s: loglik(0.7, mu, s), (0.2, 2.0), wrt=(0, 1)))


def test_a_partial_leaving_a_keyword_only_parameter_is_refused():
    def f(x, a, b):
        return x * a * b
    with pytest.raises(s2sad.S2SADError, match=r"leaves the parameter 'b' of f\(\) "
                                               r"keyword-only.*bind 'b' in the partial"):
        s2sad.grad(functools.partial(f, a=2.0))(1.0, b=3.0)


# -- a partial of a NumPy function, and an object with __eq__ called -----------------------
two_to = functools.partial(np.power, 2.0)
column_sums = functools.partial(np.sum, axis=0)


def powers_and_sums(x):
    return np.sum(two_to(x)) + np.sum(column_sums(np.outer(x, x)) ** 2)


def test_a_partial_of_a_numpy_function_called_inside_is_that_function_with_what_it_binds():
    global two_to
    saved = two_to
    g = s2sad.grad(powers_and_sums)
    try:
        assert_array_close(g(X), fd_array_grad(powers_and_sums, (X,), 0))
        assert_array_close(s2sad.jvp(powers_and_sums, (X,), (np.ones_like(X),))[1],
                           fd_array_grad(powers_and_sums, (X,), 0).sum())
        two_to = functools.partial(np.power, 3.0)         # rebound: recompiled
        assert_array_close(g(X), fd_array_grad(powers_and_sums, (X,), 0))
    finally:
        two_to = saved


@dataclasses.dataclass
class Squash:
    """A dataclass (so `__eq__` and no `__hash__`) whose instances are called."""
    w: np.ndarray

    def __call__(self, x):
        return np.tanh(self.w * x)


squash = Squash(np.array([0.5, -1.0, 2.0, 0.3, 1.5]))


def squashed(x):
    return np.sum(squash(x) ** 2)


def test_an_unhashable_object_called_is_its_class_call():
    g = s2sad.grad(squashed)
    assert_array_close(g(X), fd_array_grad(squashed, (X,), 0))
    squash.w = squash.w * 2.0                               # a field changed: read anew
    assert_array_close(g(X), fd_array_grad(squashed, (X,), 0))


def squashed_by(x, act):
    for _ in range(2):
        x = act(x)
    return np.sum(x ** 2)


def squashed_twice(x):
    return squashed_by(x, squash)


def test_an_unhashable_object_passed_as_a_function_value():
    """The version of `squashed_by` specialised on `act` is keyed by the object's identity."""
    assert_array_close(s2sad.grad(squashed_twice)(X), fd_array_grad(squashed_twice, (X,), 0))
    assert_array_close(s2sad.jvp(squashed_twice, (X,), (np.ones_like(X),))[1],
                       fd_array_grad(squashed_twice, (X,), 0).sum())
    h, eye = 1e-4, np.eye(len(X))
    hessian = np.array([[(squashed_twice(X + h * a + h * b) - squashed_twice(X + h * a - h * b)
                          - squashed_twice(X - h * a + h * b)
                          + squashed_twice(X - h * a - h * b)) / (4 * h * h)
                         for b in eye] for a in eye])
    assert_array_close(s2sad.hessian(squashed_twice)(X), hessian, rtol=1e-5, atol=1e-6)


# -- a function as a parameter's default, or passed -----------------------------------------
def activated(x, nonlinearity=np.tanh):
    return nonlinearity(x) * x


def conv(x, w):
    return w[0] * x[:-1] + w[1] * x[1:]


def conv_layer(x, w, op=conv):
    return np.sum(op(x, w) ** 2)


def two_layers(x):
    return activated(x[0], nonlinearity=np.sin) + activated(x[1]) + conv_layer(x, x[:2])


def test_a_function_default_and_a_function_passed_in_its_place():
    g = s2sad.grad(activated)
    for fn in (None, np.sin, np.cos, np.exp):
        args = (0.5,) if fn is None else (0.5, fn)
        expected = fd_grad(activated, args, wrt=0)
        assert_close(g(*args), expected)
        tangents = (1.0,) + (None,) * (len(args) - 1)       # (no tangent for a function)
        assert_close(s2sad.jvp(activated, args, tangents)[1], expected)
    assert_close(g(0.5, nonlinearity=np.sin), fd_grad(lambda x: activated(x, np.sin), (0.5,)))
    assert_close(s2sad.hessian(activated)(0.5),
                 fd_grad(lambda v: float(s2sad.grad(activated)(v)), (0.5,)), rtol=1e-5)


def test_a_user_function_default_in_functions_called():
    x = np.array([0.3, -0.7, 1.1])
    assert_array_close(s2sad.grad(two_layers)(x), fd_array_grad(two_layers, (x,), 0),
                       rtol=1e-5)
    w = np.array([0.5, -2.0])
    assert_array_close(s2sad.grad(conv_layer)(x, w), fd_array_grad(conv_layer, (x, w), 0),
                       rtol=1e-5)


def test_a_default_changed_compiles_again():
    def f(x, act=np.tanh):
        return act(x) * 2.0
    g = s2sad.grad(f)
    assert_close(g(0.3), fd_grad(f, (0.3,)))
    f.__defaults__ = (np.sin,)
    assert_close(g(0.3), 2.0 * np.cos(0.3))
