"""Calls as users write them (issue #19): methods of objects, functools.partial,
keywords, keyword-only parameters, defaults, *args and **kwargs, and lambdas and nested
functions passed to the user's own helpers (tests/test_calls.py)."""
import dataclasses
import functools
import math

import numpy as np


# -- methods ------------------------------------------------------------------------------
class Model:
    def __init__(self, w, b):
        self.w = w
        self.b = b

    def predict(self, x):
        return self.w * math.sin(x) + self.b

    def loss(self, x):
        return self.predict(x) ** 2 + self.b * x


class Shifted(Model):
    def predict(self, x):          # loss, inherited, must call this one
        return Model.predict(self, x) * x


class Poly:
    def __init__(self, c):
        self.c = c

    @staticmethod
    def square(x):
        return x * x

    @classmethod
    def unit(cls, x):
        return Poly.square(x) + 1.0

    def value(self, x):
        return self.square(x) * self.c + self.unit(x)


class Linear:
    def __init__(self, W):
        self.W = W

    def predict(self, x):
        return np.tanh(self.W @ x)

    def loss(self, x):
        return np.sum(self.predict(x) ** 2)


@dataclasses.dataclass
class Params:
    w: float
    b: float

    def predict(self, x):
        return self.w * x + self.b

    def loss(self, x, y):
        return (self.predict(x) - y) ** 2


MODEL = Model(1.5, 0.3)
LINEAR = Linear(np.array([[0.5, -0.2, 0.1], [0.3, 0.8, -0.6]]))


def method_of_global(x):
    return MODEL.loss(x)


def method_of_argument(model, x):
    return model.loss(x)


def method_of_local(x):
    m = Model(2.0, -0.5)
    return m.loss(x) + m.predict(x * x)


def inherited_method(x):
    m = Shifted(1.5, 0.3)
    return m.loss(x)


def static_and_class_methods(x):
    p = Poly(3.0)
    return p.value(x) + Poly.square(x)


def method_on_arrays(x):
    return LINEAR.loss(x) + Linear(LINEAR.W * 2.0).loss(x)


def method_of_differentiated_record(params, x, y):
    return params.loss(x, y) + params.predict(y)


def method_as_value(x):
    m = Model(0.5, 1.0)
    return apply_twice(m.predict, x)


# -- functools.partial ----------------------------------------------------------------------
def loglik(y, mu=0.0, sigma=1.0):
    return -0.5 * ((y - mu) / sigma) ** 2 - math.log(sigma)


def partial_of_constants(y):
    g = functools.partial(loglik, sigma=2.0, mu=0.5)
    return g(y)


def partial_of_differentiated(mu):
    g = functools.partial(loglik, mu=mu * 2.0)
    return g(1.5) + g(0.5)


def partial_positional(x, s):
    g = functools.partial(loglik, x)
    return g(0.3, s * s + 1.0)


def partial_of_partial(x):
    g = functools.partial(loglik, mu=x)
    h = functools.partial(g, sigma=x * x + 1.0)
    return h(2.0)


def partial_to_helper(mu):
    return integrate(functools.partial(loglik, mu=mu), 0.0, 2.0)


# -- keywords, keyword-only parameters, defaults ------------------------------------------------
def scaled(x, *, scale, shift=0.0):
    return scale * x + shift


def poly(x, a=1.0, b=2.0):
    return a * x + b * x * x


def by_keyword(x):
    return loglik(1.0, sigma=1.0 + x * x, mu=x)


def keyword_only(x):
    return scaled(x * x, scale=x) + scaled(x, shift=x, scale=2.0)


def default_in_between(x):
    return poly(x, b=x)


# -- *args and **kwargs ---------------------------------------------------------------------
def total(*terms):
    s = 0.0
    for t in terms:
        s = s + t
    return s


def mean(*xs):
    return sum(xs) / len(xs)


def doubled_total(*args):
    return total(*args) * 2.0


def shifted(x, **kwargs):
    return kwargs.get("scale", 1.0) * x + kwargs["shift"]


def forwards_kwargs(x, **kw):
    return shifted(x, **kw) * x


def star_args(x):
    return total(x, x * x, math.sin(x)) + mean(x, 3.0) + doubled_total(x, 1.0)


def star_kwargs(x):
    return shifted(x, shift=x * x, scale=3.0) + shifted(x, shift=1.0) + forwards_kwargs(
        x, shift=x)


# -- lambdas and nested functions as values ---------------------------------------------------
def integrate(f, a, b, n=10):
    h = (b - a) / n
    s = 0.0
    for i in range(n):
        t = a + (i + 0.5) * h
        s = s + f(t) * h
    return s


def apply_twice(f, x):
    return f(f(x))


def integrate_twice(f, a, b):
    return integrate(f, a, b, n=4) + f(b)


def cube(y):
    return y * y * y


def lambda_capturing(x):
    return integrate(lambda t: x * t * t, 0.0, 1.0)


def nested_as_value(x):
    def sq(y):
        return y * y
    return apply_twice(sq, x)


def nested_capturing(x, k):
    def scale(y):
        return k * y + x
    return apply_twice(scale, x)


def lambda_two_levels(x):
    return integrate_twice(lambda t: math.sin(x * t), 0.0, 1.0)


def global_function_as_value(x):
    return apply_twice(cube, x) + apply_twice(math.sin, x)


def lambda_by_keyword(x):
    return integrate(a=0.0, b=x, f=lambda t: t * x)


def lambda_to_a_library_call(x):
    order = sorted([3.0, 1.0, 2.0], key=lambda v: -v)
    return x * order[0]


# -- function values made in branches and loops, keyword calls of keyword calls (found by
# -- tests/fuzz): what is bound is what the function value holds where it is called ------
def _scaled(a, b):
    return a * b


def _square(a):
    return a * a


def partial_made_in_a_branch(x):
    s = 1.0
    if x > 0.0:
        g = functools.partial(_scaled, b=x)
        s = g(x)
    return s


def partial_made_in_a_loop(x):
    s = 0.0
    for i in range(2):
        g = functools.partial(_scaled, b=x)
        s = s + g(x)
    return s


def partial_made_on_two_paths(x):
    if x > 0:
        g = functools.partial(loglik, mu=x)
    else:
        g = functools.partial(loglik, mu=-x)
    return g(1.0)


def partial_called_after_its_loop(x):
    s = x
    for i in range(3):
        g = functools.partial(_scaled, b=s)     # binds s before this iteration's update
        s = s * x
    return g(x) + s


def partial_of_the_previous_iteration(x):
    s = 0.0
    g = functools.partial(_scaled, b=1.0)
    for i in range(3):
        h = g                                   # made in the iteration before
        g = functools.partial(_scaled, b=s + x)
        s = s + h(x)
    return s


def lambda_reads_a_name_set_in_a_loop(x):
    s = x
    for i in range(2):
        s = s * x
    return apply_twice(lambda t: s * t, 1.0)


def lambda_reads_a_name_set_in_a_branch(x):
    s = x
    if x > 0.0:
        s = 2.0 * x
    return apply_twice(lambda t: s * t, 1.0)


def lambda_in_the_loop_that_sets_its_name(x):
    s = x
    total = 0.0
    for i in range(3):
        total = total + integrate(lambda t: s * t * t, 0.0, 1.0)
        s = s * x
    return total


def keyword_call_of_a_keyword_call(z):
    i = _square(a=z)
    return _square(a=i)


def keyword_call_in_a_loop_over_a_display(z):
    for i in [1.0, _square(a=z)]:
        y = _square(a=i)
    return y


def partial_of_the_previous_iteration_first_made_in_the_loop(x):
    s = x
    for i in range(3):
        t = s + x
        if i > 0:
            s = s + g(x)    # noqa: F821 -- the g of the iteration before, bound to its t
        g = functools.partial(_scaled, b=t)
    return s


scale_by_two = lambda v: 2.0 * v                            # noqa: E731 -- a module-level lambda
damped = lambda v, k=0.5: v * math.exp(-k * v)             # noqa: E731


def module_level_lambda(x):
    return scale_by_two(x) * x + damped(x)


def partial_of_a_module_level_lambda(x):
    half = functools.partial(damped, k=0.25)
    return half(x) * scale_by_two(x)
