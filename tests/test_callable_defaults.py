"""A callable left as a parameter's default (`act=np.tanh`, `model=Model()` called through
its `__call__`): the derivative is compiled for it, as for an argument, and a default
assigned since (`f.__defaults__`, `f.__kwdefaults__`) compiles it again. Checked against
central differences of the function as it is at each call."""
import functools

import numpy as np
import pytest

import s2sad
from s2sad.errors import MissingRuleError


class Model:
    def __init__(self, w):
        self.w = w

    def __call__(self, x):
        return np.tanh(self.w * x)


class Cubic:
    def __call__(self, x):
        return x ** 3


def power(x, p):
    return x ** p


def with_model(x, model=Model(2.0)):
    return model(x) + x * model.w


def with_act(x, act=np.tanh):
    return act(x) * x


def with_keyword_model(x, *, model=Model(0.5)):
    return model(x) * x


def with_partial(x, act=functools.partial(power, p=3.0)):
    return act(x)


X = 0.4


def central(f, x, h=1e-6):
    return (f(x + h) - f(x - h)) / (2 * h)


def second(f, x, h=1e-4):
    return (f(x + h) - 2 * f(x) + f(x - h)) / (h * h)


def check(g, f):
    assert g(X) == pytest.approx(central(f, X), rel=1e-6)


@pytest.mark.parametrize("f", [with_model, with_act, with_keyword_model])
def test_each_mode_against_central_differences(f):
    check(s2sad.grad(f), f)
    value, slope = s2sad.value_and_grad(f)(X)
    assert (value, slope) == pytest.approx((f(X), central(f, X)), rel=1e-6)
    assert s2sad.vjp(f, X)[1](1.0)[0] == pytest.approx(central(f, X), rel=1e-6)
    assert s2sad.jvp(f, (X,), (1.0,))[1] == pytest.approx(central(f, X), rel=1e-6)
    assert s2sad.hessian(f)(X) == pytest.approx(second(f, X), rel=1e-4)


def test_the_default_objects_fields_are_read_at_each_call():
    g = s2sad.grad(with_model)
    check(g, with_model)
    model = with_model.__defaults__[0]
    old, model.w = model.w, 3.0
    try:
        check(g, with_model)
    finally:
        model.w = old


def test_a_default_assigned_compiles_again():
    g = s2sad.grad(with_model)
    check(g, with_model)
    defaults = with_model.__defaults__
    try:
        with_model.__defaults__ = (Model(-1.5),)
        check(g, with_model)
        with_model.__defaults__ = (Cubic(),)        # another class: `Cubic.w` is missing
        with pytest.raises(AttributeError):
            g(X)
    finally:
        with_model.__defaults__ = defaults
    check(g, with_model)


def test_a_function_default_assigned_compiles_again():
    g = s2sad.grad(with_act)
    check(g, with_act)
    try:
        with_act.__defaults__ = (np.sin,)
        check(g, with_act)
        with_act.__defaults__ = (Cubic(),)
        check(g, with_act)
    finally:
        with_act.__defaults__ = (np.tanh,)
    check(g, with_act)


def test_a_keyword_default_assigned_compiles_again():
    g = s2sad.grad(with_keyword_model)
    check(g, with_keyword_model)
    try:
        with_keyword_model.__kwdefaults__ = {"model": Cubic()}
        check(g, with_keyword_model)
    finally:
        with_keyword_model.__kwdefaults__ = {"model": Model(0.5)}
    check(g, with_keyword_model)


def test_the_default_given_explicitly_and_another_object():
    g = s2sad.grad(with_act)
    assert g(X, Cubic()) == pytest.approx(central(lambda x: with_act(x, Cubic()), X), rel=1e-6)
    check(g, with_act)


def test_a_partial_default_is_refused_saying_what_to_write():
    with pytest.raises(MissingRuleError) as raised:
        s2sad.grad(with_partial)(X)
    message = str(raised.value)
    assert "test_callable_defaults.py:" in message and "parameter 'act'" in message
    assert "lambda" in message
