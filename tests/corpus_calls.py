"""Functions that call other Python functions, for second derivatives (hessian, hvp,
grad(grad(f))) through calls: forward mode over gradient code that calls each callee's
`g_adjoint`."""
import math

import numpy as np

import s2sad


def square(a):
    return a * a


def inner(a, b):
    return square(a) * math.sin(b)


def nested(x, y):
    return inner(x, y) + inner(y, x) * x


def in_a_loop(x, y):
    s = 0.0
    for i in range(3):
        s = s + inner(x, s + y) * 0.5
    return s


def scaled(x, y, scale=2.0):
    return scale * x * y ** 2


def keywords(x, y):
    return scaled(x, y, scale=3.0) + scaled(y, x)


def power(x, n):
    if n == 0:
        return 1.0
    return x * power(x, n - 1)


def recursive(x, y):
    return power(x, 3) * y + power(y, 2)


class Spring:
    def __init__(self, k):
        self.k = k

    def energy(self, x):
        return 0.5 * self.k * x ** 4


spring = Spring(2.0)


def method(x, y):
    return spring.energy(x * y) + x


@s2sad.custom_vjp
def softplus(x):
    return math.log1p(math.exp(x))


def softplus_fwd(x):
    return softplus(x), x


def softplus_bwd(x, g):
    return (g / (1 + math.exp(-x)),)


softplus.defvjp(softplus_fwd, softplus_bwd)


def soft_times(a):
    return softplus(a) * a


def custom_in_callee(x, y):
    return soft_times(2.0 * x - y) + x * y


def pair_energy(v, w):
    return np.sum(np.tanh(v * w))


def arrays(x):
    return pair_energy(x, x[::-1]) + np.sum(x ** 2) * pair_energy(x, x)


#: (function, point) for the scalar ones
SCALAR = [(nested, (0.7, 1.3)), (in_a_loop, (0.7, 1.3)), (keywords, (0.4, 0.9)),
          (recursive, (1.1, 0.6)), (method, (0.9, 1.2)), (custom_in_callee, (0.3, -0.4))]
