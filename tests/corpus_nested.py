"""Comprehensions, lambdas and nested functions inside differentiated functions
(tests/test_nested.py). Line numbers matter: tests look lines up by their text."""
import math

import numpy as np


def helper(u):
    return math.sin(u) * u


# -- comprehensions ---------------------------------------------------------------------
def comp_filter(x):
    return sum([x ** i for i in range(6) if i % 2 == 1])


def comp_two_fors(x, y):
    return sum([x * i + y * j * x for i in range(4) for j in range(i) if i != j + 2])


def comp_nested(x):
    return sum([sum([math.sin(x * i) * j for j in range(3)]) for i in range(3)])


def comp_numpy(x):
    s = np.array([np.sin(x[i]) * x[i] for i in range(len(x))])
    return np.sum(s * s)


def gen_sum(x):
    return sum(math.exp(x / k) for k in range(1, 5))


def gen_for(x):
    total = 0.0
    for v in (x * k for k in range(3)):
        total = total + v * v
    return total


def comp_indexed(x):
    ys = [x * i + 1.0 for i in range(4)]
    return ys[1] * ys[3] - ys[2]


def comp_shadowing(x):
    i = 2.0
    ys = [x * i for i in range(3)]
    return sum(ys) * i + sum([sum([x * i * j for j in range(2)]) for i in range(3)])


def comp_over_tuple(x, y):
    return sum([v * v * y for v in (x, y, x * y)])


def comp_reads_outer_list(x):
    ws = [x, 2.0 * x, x * x]
    return sum([ws[k] * ws[2 - k] for k in range(3)])


# -- lambdas and nested functions ---------------------------------------------------------
def lambda_simple(x):
    square = lambda t: t * t
    return square(x) + square(2.0)


def lambda_in_loop(x):
    step = lambda s, k: s * math.cos(s) + k * x
    s = x
    for k in range(4):
        s = step(s, k)
    return s


def nested_reads_changing(x, y):
    def g(t):
        return helper(t) * x + y
    s = 0.0
    for i in range(3):
        s = s + g(s + i)
        x = x * 1.5
    return s


def nested_calls_module_function(x):
    def g(t):
        return helper(t * x) + math.log(t)
    return g(x) * g(2.0)


def nested_calls_sibling(x, y):
    def inner(t):
        return t * y
    def outer(t):
        return inner(t) * x + inner(x)
    return outer(y) + inner(2.0)


def nested_two_levels(x):
    def outer(t):
        def inner(u):
            return u * x * t
        return inner(t) + inner(x)
    return outer(x * 2.0)


def nested_branches(x):
    def clip(t):
        if t > 1.0:
            return 1.0 + math.log(t)
        return t
    return clip(x) * clip(x * 3.0)


def nested_keyword_call(x, y):
    def scaled(t, k):
        return t * k
    return scaled(k=y, t=x) + scaled(x, k=2.0)


def nested_recursive(x):
    def power(n):
        if n == 0:
            return 1.0
        return x * power(n - 1)
    return power(3)


def lambda_in_comprehension(x):
    g = lambda t: math.sin(t) * x
    return sum([g(x + i) for i in range(3)])


RATE = 10.0


def lambda_reads_global_not_comprehension_var(x):
    g = lambda t: t * RATE       # RATE is the global, not the comprehension's RATE
    return sum([g(x) * RATE for RATE in range(3)])


def comprehension_var_named_like_a_global(x):
    scaled = sum([x * RATE for k in range(2)])
    return scaled + sum([x * RATE for RATE in range(3)])


def nested_with_comprehension(x):
    def poly(t):
        return sum([t ** k / (k + 1) for k in range(4)])
    return poly(x) * x


def nested_numpy(w):
    act = lambda z: np.tanh(z) * w
    return np.sum(act(w * 2.0))


def make_closure(scale):
    def f(x):
        g = lambda t: t * scale * x
        return g(x)
    return f


closure_f = make_closure(3.0)


# -- errors inside a lifted function ------------------------------------------------------
opaque = math.ulp        # a C function without a rule (nor Python source)


def nested_missing_rule(x):
    def g(t):
        return opaque(t) * 2.0
    return g(x)


def comp_variable_and_user_name(x):
    k = 3.0
    total = sum(x * k for k in range(5)) * k
    return total + k


def nested_defaults(x, y):
    def decay(t, a, rate=2.0 * y, *, offset=0.0):     # (computed here, where defined)
        return a * math.exp(-rate * t) + offset
    first = decay(0.5, x)
    y = y * 3.0                                        # (the default keeps the old y)
    return first + decay(0.25, x, y) + decay(1.0, y, offset=x * x)


def lambda_defaults_in_loop(x):
    total = 0.0
    for k in range(3):
        power = lambda v, p=k + 1: v ** p
        total = total + power(x) + power(x, 2)
    return total
