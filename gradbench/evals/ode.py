"""ode: cmpad's an_ode, y' = f(x, y) with y₀' = x₀, yᵢ' = xᵢ yᵢ₋₁, y(0) = 0, solved on [0, 2]
by s steps of classic Runge-Kutta; the gradient is that of the last element of y(2) with
respect to x."""
import numpy as np
import s2sad

from gradbench.evals import Function, floats, primal

BACKENDS = ("python", "numba")


def ode_fun(x, y):
    return np.concatenate((x[:1], x[1:] * y[:-1]))


def solve(x, s):
    h = 2.0 / s
    y = np.zeros(x.shape[0])
    for _ in range(s):
        k1 = ode_fun(x, y)
        k2 = ode_fun(x, y + h * k1 / 2)
        k3 = ode_fun(x, y + h * k2 / 2)
        k4 = ode_fun(x, y + h * k3)
        y = y + h * (k1 + 2 * k2 + 2 * k3 + k4) / 6
    return y


def last(x, s):
    return solve(x, s)[-1]


def _x_s(input):
    return np.array(input["x"], dtype=float), int(input["s"])


def functions(backend):
    return {"primal": Function(_x_s, primal(solve, backend), floats),
            "gradient": Function(_x_s, s2sad.grad(last, backend=backend), floats)}
