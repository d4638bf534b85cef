"""saddle: Siskind and Pearlmutter's saddle point, min over x of max over y of
f(x, y) = (x₀² + x₁²) - (y₀² + y₁²), both by gradient descent from the same start: the argmin's
derivative differentiates the inner argmax, itself a gradient descent calling f's gradient
(nested differentiation). The four variants choose forward (f) or reverse (r) mode for the
outer derivative and then for the inner one; the result is x then y."""
import numpy as np
import s2sad

from gradbench.evals import Function
from gradbench.evals.solver import argmin

BACKENDS = ("python",)


def f(x, y):
    return (x[0] * x[0] + x[1] * x[1]) - (y[0] * y[0] + y[1] * y[1])


grad_f_y = s2sad.grad(f, wrt=1)


def gradient_y_reverse(x, y):
    return grad_f_y(x, y)


def gradient_y_forward(x, y):
    return np.array([s2sad.jvp(f, (x, y), (None, np.array([1.0, 0.0])))[1],
                     s2sad.jvp(f, (x, y), (None, np.array([0.0, 1.0])))[1]])


# (one argmax_y(x, start, gradient_y) for both modes is refused today: a lambda calling a
# function-valued parameter)
def argmax_y_reverse(x, start):
    return argmin(lambda y: -f(x, y), lambda y: -grad_f_y(x, y), start)


def argmax_y_forward(x, start):
    return argmin(lambda y: -f(x, y), lambda y: -gradient_y_forward(x, y), start)


def max_r(x, start):
    return f(x, argmax_y_reverse(x, start))


def max_f(x, start):
    return f(x, argmax_y_forward(x, start))


def reverse(g):
    return s2sad.grad(g)


def forward(g):
    def gradient(x, start):
        return np.array([s2sad.jvp(g, (x, start), (np.array([1.0, 0.0]), None))[1],
                         s2sad.jvp(g, (x, start), (np.array([0.0, 1.0]), None))[1]])
    return gradient


def saddle(start, outer, inner):
    cost = max_f if inner == "f" else max_r
    gradient = forward(cost) if outer == "f" else reverse(cost)
    x = argmin(lambda x: cost(x, start), lambda x: gradient(x, start), start)
    # the argmax at that x, with the outer mode, as the README asks
    argmax_y = argmax_y_forward if outer == "f" else argmax_y_reverse
    return np.concatenate((x, argmax_y(x, start)))


def _start(input):
    return (np.array(input["start"], dtype=float),)


def functions(backend):
    def variant(outer, inner):
        return Function(_start, lambda start: saddle(start, outer, inner),
                        lambda xy: [float(v) for v in xy])
    return {name: variant(name[0], name[1]) for name in ("ff", "fr", "rf", "rr")}
