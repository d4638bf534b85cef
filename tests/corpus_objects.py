"""User objects: dataclasses, named tuples and plain classes (tests/test_objects.py)."""
import collections
import dataclasses
import math

import numpy as np


@dataclasses.dataclass
class Point:
    a: float
    b: float


Pair = collections.namedtuple("Pair", "a b")


@dataclasses.dataclass(frozen=True)
class Frozen:
    a: float
    b: float

    def __post_init__(self):
        if self.a < 0:
            raise ValueError("a must be non-negative")


@dataclasses.dataclass
class Layer:
    w: np.ndarray
    b: np.ndarray


@dataclasses.dataclass
class Model:
    layers: list
    scale: float
    n: int
    name: str
    unused: float = 1.0
    mask: np.ndarray = None


class Plain:
    def __init__(self, w, scale):
        self.w = w
        self.scale = scale

    def __call__(self, x):
        return self.w * math.sin(x)

    def apply(self, x):
        return self.scale * x * x


@dataclasses.dataclass
class WithMethod:
    a: float
    b: float

    def norm2(self):
        return self.a * self.a + self.b * self.b


plain = Plain(2.0, 3.0)


def product(p):
    return p.a * p.b + math.sin(p.a)


def reads_twice(p):
    s = p.a * p.a
    return s + p.a * p.b


def builtin_getattr(p):
    return getattr(p, "a") * p.b


def mlp(m, x):
    h = x
    for i in range(len(m.layers)):
        layer = m.layers[i]
        h = np.tanh(layer.w @ h + layer.b)
    return m.scale * np.sum(h * h) + m.n


def pairs(ps, x):
    s = 0.0
    for i in range(len(ps)):
        s = s + ps[i].a * x + ps[i].b ** 2
    return s


def in_dict(d):
    return d["p"].a * d["q"].b


def loop_reads(p, n):
    s = 0.0
    for i in range(n):
        s = s + p.a * i + p.b
    return s


def uses_global_object(x):
    return plain.scale * x * plain.w


def uses_object_argument(obj, x):
    return obj.scale * x + obj.w * x * x


def calls_objects(x):
    return plain(x) + plain.apply(x)


def calls_method_by_class(p):
    return WithMethod.norm2(p) * p.a


def calls_method_on_value(p):
    return p.norm2()


def first_plus(x):
    return x.flat[0] + np.sum(x)


def summed(p):
    return np.sum(p.a * p.b) + np.sum(p.a)


def scaled_sample(s):
    return s.x * s.x * s.count
