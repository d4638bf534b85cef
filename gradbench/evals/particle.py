"""particle: Siskind and Pearlmutter's charged particle: the control w that makes a particle,
pushed by two charges (one placed by w) and integrated by Euler steps until it crosses the x
axis, cross it at the origin: an argmin by gradient descent over w of x₀(t_f)², whose
derivative differentiates the Euler loop, itself calling the gradient of the potential
(nested differentiation). The four variants choose forward (f) or reverse (r) mode for the
argmin's derivative and then for the potential's gradient."""
import numpy as np
import s2sad

from gradbench.evals import Function
from gradbench.evals.solver import argmin

BACKENDS = ("python",)


def potential(x, w):
    return (1 / np.sqrt((x[0] - 10) ** 2 + (x[1] - (10 - w)) ** 2)
            + 1 / np.sqrt((x[0] - 10) ** 2 + x[1] ** 2))


grad_potential = s2sad.grad(potential)


def force_reverse(x, w):
    return -grad_potential(x, w)


def force_forward(x, w):
    return -np.array([s2sad.jvp(potential, (x, w), (np.array([1.0, 0.0]), 0.0))[1],
                      s2sad.jvp(potential, (x, w), (np.array([0.0, 1.0]), 0.0))[1]])


def crossing(w, force):
    """x₀² where the particle's path, by Euler steps of 0.1, crosses the x axis."""
    x = np.array([0.0, 8.0])
    xdot = np.array([0.75, 0.0])
    dt = 0.1
    while True:
        xddot = force(x, w)
        x_new = x + dt * xdot
        if x_new[1] <= 0:
            break
        x = x_new
        xdot = xdot + dt * xddot
    x_f = x + (-x[1] / xdot[1]) * xdot
    return x_f[0] * x_f[0]


def crossing_r(w):
    return crossing(w[0], force_reverse)


def crossing_f(w):
    return crossing(w[0], force_forward)


def reverse(f):
    return s2sad.grad(f)


def forward(f):
    def derivative(w):
        return np.array([s2sad.jvp(f, (w,), (np.ones(1),))[1]])
    return derivative


def particle(w0, outer, inner):
    objective = crossing_f if inner == "f" else crossing_r
    gradient = forward(objective) if outer == "f" else reverse(objective)
    return argmin(objective, gradient, np.array([w0]))[0]


def _w(input):
    return (float(input["w"]),)


def functions(backend):
    def variant(outer, inner):
        return Function(_w, lambda w0: particle(w0, outer, inner), float)
    return {name: variant(name[0], name[1]) for name in ("ff", "fr", "rf", "rr")}
