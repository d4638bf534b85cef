"""Functions s2sad must refuse, each with a located, documented error (tests/test_errors.py).
Line numbers matter: tests look lines up by their text, not by number."""
import math
import statistics

import numpy as np

def uses_try(x):
    try:
        return x * 2
    finally:
        x = 0.0

def apply(f, x):
    return f(x)

def uses_lambda(x):
    fs = [lambda z: z * 2]
    return apply(fs[0], x)

def helper(x):
    return x * x

def calls_helper(x):
    return helper(x) + 1.0

def uses_ldexp(x):
    return math.ldexp(x, 3)

def array_out(x):
    return np.array([x, x])

def tuple_out(x):
    return (x, x * 2)

def subscript(p):
    return p[0] * p[1]

def method(x):
    return x.as_integer_ratio()[0] * x

def star(x):
    first = lambda *args: args[0] * x        # noqa: E731
    return first(x)

def with_global(x):
    global G
    G = x
    return x

def stored_generator(x):
    terms = (x * i for i in range(3))
    return sum(terms)

def set_comp(x):
    return sum({x * i for i in range(3)})

def uses_yield(x):
    yield x

def string_out(x):
    return "a"

def nested_def(x):
    def inner(y):
        return y * 2
    return inner(x) + len([inner])

def with_nonlocal(x):
    total = 0.0
    def add(v):
        nonlocal total
        total = total + v
    add(x)
    return total

def nested_default(x):
    scaled = lambda v, k=2.0: v * k
    return _twice(scaled, x)


def _twice(f, v):
    return f(f(v))

def called_before_def(x):
    y = early(x)
    def early(v):
        return v * 2
    return y

def defined_twice(x):
    twice = lambda v: v * 2
    def twice(v):
        return v * 3
    return twice(x)

def comp_in_while(x):
    while sum([x * i for i in range(2)]) < 10.0:
        x = x * 2
    return x

def comp_unpacking(x):
    return sum([i * v[0] for i, *v in enumerate([x, x])])

def nested_appends(x):
    terms = []
    def add(v):
        terms.append(v * v)
    add(x)
    return sum(terms)

def comp_in_ifexp(x):
    return sum([x for i in range(2)]) if x > 0 else 0.0

def setitem(x):
    a = [0.0, 0.0]
    a[0] = x
    return a[0]

def nested_setitem(x):
    a = [[0.0, 0.0]]
    a[0][1] = x
    return a[0][1]


def div_zero(x):
    return x / 0.0


def opaque(x):
    return x ** 3


def uses_opaque(x):
    return opaque(x) + x


SEEN = []
TABLE = [0.0, 0.0]


def appends_to_a_module_list(x):
    SEEN.append(x)
    return x * x


def writes_into_a_module_list(x):
    TABLE[0] += x
    return x * x

def uses_unwrap(x):
    return np.sum(np.unwrap(x) * x)

class Holder:
    def __init__(self, a):
        self.a = float(a)       # (an __init__ that computes: refused)

def builds_a_plain_object(x):
    h = Holder(x)
    return h.a * 2.0

def uses_library_fmean(x):
    return statistics.fmean([x, 2.0 * x]) * x

def uses_library_mean(x):
    return statistics.mean([x, 2.0 * x]) * x
