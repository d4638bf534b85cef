"""The native group (issue #22): gradients compiled by Numba, s2sad's numba backend
(`s2sad.grad(f, backend="numba")`) against a gradient written by hand in Numba.

Four scalar loops: the Babylonian square root (1,000 iterations), Lotka-Volterra
(1,000 Euler steps, gradient in the 4 rates), a data-dependent `while` loop and a loop
that stores its states element by element in a preallocated array. Next to each, its
hand gradient for Numba: a forward loop that keeps what the backward loop needs in an
array allocated once (or, for the `while` loop, grown by doubling), then the reversed
loop. The hand gradients are plain Python here; `workloads()` compiles them with
`numba.njit`, and is empty where Numba is not installed.

The peers are Numba's own compiled primal, the hand gradient, s2sad's Python backend
(for scale), and `jax.jit(jax.grad(f))` when JAX is installed. Also measured: the time
of the first call of a fresh `s2sad.grad(f, backend="numba")` (s2sad's transform and
Numba's compilation).
"""
import math
from typing import Callable, NamedTuple

import numpy as np

import workloads as wl

TIME_GOAL = 1.5         # s2sad-numba / hand-numba time
JAX_GOAL = 10.0         # jax.jit steady state / s2sad-numba time, at least
COMPILE_GOAL = 2.0      # seconds: transform + Numba compile, per function

SHRINK_X = 1000.0       # the while loop runs 74 iterations from here
DECAY_N = 1000


def shrink(x):
    y = x
    while y > 1.0:
        y = y / 1.1 + 0.01 * math.sin(y)
    return y * x


def shrink_hand(x):
    ys = np.empty(16)
    n = 0
    y = x
    while y > 1.0:
        if n == len(ys):
            bigger = np.empty(2 * n)
            bigger[:n] = ys
            ys = bigger
        ys[n] = y
        n += 1
        y = y / 1.1 + 0.01 * math.sin(y)
    x_bar = y
    y_bar = x
    for k in range(n - 1, -1, -1):
        y_bar = y_bar * (1 / 1.1 + 0.01 * math.cos(ys[k]))
    return x_bar + y_bar


def decay(k, n):
    u = np.zeros(n)
    u[0] = 1.0
    for i in range(n - 1):
        u[i + 1] = u[i] - 0.01 * k * u[i] * u[i]
    return u[n - 1]


def decay_hand(k, n):
    # the states array is the tape: u[i] is what the step from i needs
    u = np.zeros(n)
    u[0] = 1.0
    for i in range(n - 1):
        u[i + 1] = u[i] - 0.01 * k * u[i] * u[i]
    k_bar = 0.0
    u_bar = 1.0
    for i in range(n - 2, -1, -1):
        k_bar -= 0.01 * u_bar * u[i] * u[i]
        u_bar = u_bar * (1.0 - 0.02 * k * u[i])
    return k_bar


def babysqrt_hand(x):
    ts = np.empty(1000)
    t = (1 + x) / 2
    for i in range(1000):
        ts[i] = t
        t = (t + x / t) / 2
    t_bar = 1.0
    x_bar = 0.0
    for i in range(999, -1, -1):
        t = ts[i]
        x_bar += t_bar / (2 * t)
        t_bar = t_bar * (1 - x / (t * t)) / 2
    return x_bar + t_bar / 2


def lotka_volterra_hand(a, b, c, d):
    states = np.empty((wl.LV_STEPS, 2))
    u = 1.0
    v = 1.0
    h = wl.LV_H
    for i in range(wl.LV_STEPS):
        states[i, 0] = u
        states[i, 1] = v
        du = a * u - b * u * v
        dv = -c * v + d * u * v
        u = u + h * du
        v = v + h * dv
    u_bar = 1.0
    v_bar = 0.0
    a_bar = b_bar = c_bar = d_bar = 0.0
    for i in range(wl.LV_STEPS - 1, -1, -1):
        u = states[i, 0]
        v = states[i, 1]
        du_bar = h * u_bar
        dv_bar = h * v_bar
        uv = u * v
        a_bar += du_bar * u
        b_bar -= du_bar * uv
        c_bar -= dv_bar * v
        d_bar += dv_bar * uv
        u_bar, v_bar = (u_bar + du_bar * (a - b * v) + dv_bar * (d * v),
                        v_bar - du_bar * (b * u) + dv_bar * (d * u - c))
    return a_bar, b_bar, c_bar, d_bar


class Native(NamedTuple):
    name: str
    f: Callable             # plain Python: s2sad differentiates it
    hand: Callable          # the hand gradient, compiled by Numba
    primal: Callable        # f compiled by Numba
    args: tuple
    wrt: object
    numpy: bool = False     # the peers' harness asks (jax.jit: device arrays); numbers here


def workloads():
    """The native group, its functions compiled by Numba; [] without Numba."""
    try:
        import numba
    except ImportError:
        return []
    return [Native(name, f, numba.njit(hand), numba.njit(f), args, wrt)
            for name, f, hand, args, wrt in (
                ("babysqrt1000", wl.babysqrt1000, babysqrt_hand, (2.0,), 0),
                ("lotka_volterra", wl.lotka_volterra, lotka_volterra_hand,
                 (1.5, 1.0, 3.0, 1.0), (0, 1, 2, 3)),
                ("while_loop", shrink, shrink_hand, (SHRINK_X,), 0),
                ("element_store", decay, decay_hand, (0.3, DECAY_N), 0))]
