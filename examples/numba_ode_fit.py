"""Fitting the four rates of a Lotka-Volterra model to observations, with an optimiser
loop written in Numba that calls a gradient s2sad compiled with Numba.

The model is integrated with 400 explicit Euler steps; the loss is the squared
distance of the prey population to the observations at every step. The gradient with
respect to the four rates, `dloss`, is `s2sad.grad(loss, backend="numba")`: a Numba
function, so `fit` (an Adam loop under `@numba.njit`) calls it without ever returning
to Python.

Run it: python examples/numba_ode_fit.py
Show the gradient Numba compiles, for four floats and an array of observations:
    s2sad show examples/numba_ode_fit.py:loss --wrt a,b,c,d --backend numba \
        --at 1.0 1.0 1.0 1.0 '[1.0, 1.0]'
"""
import time

import numba
import numpy as np

import s2sad

STEPS = 400
H = 0.025


def loss(a, b, c, d, observed):
    """The squared error of the prey population u against `observed`, step by step."""
    u = 1.0
    v = 1.0
    total = 0.0
    for i in range(len(observed)):
        du = a * u - b * u * v
        dv = -c * v + d * u * v
        u = u + H * du
        v = v + H * dv
        r = u - observed[i]
        total = total + r * r
    return total


dloss = s2sad.grad(loss, wrt=(0, 1, 2, 3), backend="numba")
loss_jit = numba.njit(loss)


@numba.njit
def fit(rates, observed, iterations, rate):
    """Adam on the four rates, from `rates`; returns the rates and the final loss."""
    p = rates.copy()
    m = np.zeros(4)
    s = np.zeros(4)
    g = np.zeros(4)
    for k in range(1, iterations + 1):
        g[0], g[1], g[2], g[3] = dloss(p[0], p[1], p[2], p[3], observed)
        m = 0.9 * m + 0.1 * g
        s = 0.999 * s + 0.001 * g * g
        p = p - rate * (m / (1 - 0.9 ** k)) / (np.sqrt(s / (1 - 0.999 ** k)) + 1e-12)
    return p, loss_jit(p[0], p[1], p[2], p[3], observed)


def observations(a, b, c, d):
    """The prey population of the model at each step (what `loss` compares with)."""
    u, v, out = 1.0, 1.0, np.empty(STEPS)
    for i in range(STEPS):
        u, v = u + H * (a * u - b * u * v), v + H * (-c * v + d * u * v)
        out[i] = u
    return out


def main():
    truth = np.array([1.1, 0.4, 0.4, 0.1])
    observed = observations(*truth)
    start = np.array([0.8, 0.6, 0.3, 0.15])

    t0 = time.perf_counter()
    rates, final = fit(start, observed, 3000, 0.01)
    t1 = time.perf_counter()
    print(f"fitted rates {np.round(rates, 4)} (true {truth}), loss {final:.2e}")
    print(f"first call (s2sad transform, Numba compile, 3000 Adam steps): {t1 - t0:.2f} s")
    t0 = time.perf_counter()
    fit(start, observed, 3000, 0.01)
    print(f"again (3000 gradients of {STEPS} Euler steps each): {time.perf_counter() - t0:.3f} s")

    # the gradient Numba runs agrees with the Python backend's and with finite differences
    point = (0.9, 0.5, 0.35, 0.12)
    native = dloss(*point, observed)
    python = s2sad.grad(loss, wrt=(0, 1, 2, 3))(*point, observed)
    h = 1e-6
    for k in range(4):
        up, down = list(point), list(point)
        up[k] += h
        down[k] -= h
        fd = (loss_jit(*up, observed) - loss_jit(*down, observed)) / (2 * h)
        assert abs(native[k] - python[k]) <= 1e-12 * abs(python[k]), (native, python)
        assert abs(native[k] - fd) <= 1e-6 * max(1.0, abs(fd)), (native[k], fd)
    assert np.allclose(rates, truth, atol=1e-3), rates


if __name__ == "__main__":
    main()
