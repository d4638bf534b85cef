"""Benchmark workloads for s2sad, each with a hand-written reverse-mode gradient.

Every workload is a plain Python function on scalar floats (``math`` and
loops only), so s2sad can read its source.  Next to it is the gradient a
careful person would write by hand: a forward sweep that records what the
backward sweep needs in a list, then a reversed loop that accumulates
adjoints.  A hand gradient returns what ``s2sad.grad(f, wrt)`` returns: a
float for a single ``wrt``, a tuple of floats for a tuple ``wrt``.
"""

import math

# ---------------------------------------------------------------------------
# 1. Babylonian square root: t <- (t + x/t) / 2, started at (1 + x) / 2.


def babysqrt10(x):
    t = (1 + x) / 2
    for i in range(10):
        t = (t + x / t) / 2
    return t


def babysqrt1000(x):
    t = (1 + x) / 2
    for i in range(1000):
        t = (t + x / t) / 2
    return t


def _babysqrt_hand(x, n):
    # Forward: remember every iterate that enters an update.
    t = (1 + x) / 2
    ts = []
    for i in range(n):
        ts.append(t)
        t = (t + x / t) / 2
    # Backward: t_new = (t + x/t)/2, so dt_new/dt = (1 - x/t^2)/2 and
    # dt_new/dx = 1/(2t).
    t_bar = 1.0
    x_bar = 0.0
    for t in reversed(ts):
        x_bar += t_bar / (2 * t)
        t_bar = t_bar * (1 - x / (t * t)) / 2
    # t0 = (1 + x)/2
    return x_bar + t_bar / 2


def babysqrt10_hand(x):
    return _babysqrt_hand(x, 10)


def babysqrt1000_hand(x):
    return _babysqrt_hand(x, 1000)


# ---------------------------------------------------------------------------
# 2. A small closed-form expression, gradient w.r.t. both arguments.


def logsin(x1, x2):
    return math.log(x1) + x1 * x2 - math.sin(x2)


def logsin_hand(x1, x2):
    # No loop, so nothing to record: the adjoints of the three terms.
    x1_bar = 1.0 / x1 + x2
    x2_bar = x1 - math.cos(x2)
    return x1_bar, x2_bar


# ---------------------------------------------------------------------------
# 3. Lotka-Volterra predator-prey, explicit Euler, 1000 steps of h = 0.01,
#    from (u, v) = (1, 1); returns the final prey population u.  Gradient
#    w.r.t. the four rate parameters.

LV_STEPS = 1000
LV_H = 0.01


def lotka_volterra(a, b, c, d):
    u = 1.0
    v = 1.0
    for i in range(LV_STEPS):
        du = a * u - b * u * v
        dv = -c * v + d * u * v
        u = u + LV_H * du
        v = v + LV_H * dv
    return u


def lotka_volterra_hand(a, b, c, d):
    # Forward: remember the state entering every step.
    u = 1.0
    v = 1.0
    states = []
    for i in range(LV_STEPS):
        states.append((u, v))
        du = a * u - b * u * v
        dv = -c * v + d * u * v
        u = u + LV_H * du
        v = v + LV_H * dv
    # Backward: adjoints of (u, v) after the step -> before the step.
    u_bar = 1.0
    v_bar = 0.0
    a_bar = b_bar = c_bar = d_bar = 0.0
    for u, v in reversed(states):
        du_bar = LV_H * u_bar
        dv_bar = LV_H * v_bar
        uv = u * v
        a_bar += du_bar * u
        b_bar -= du_bar * uv
        c_bar -= dv_bar * v
        d_bar += dv_bar * uv
        u_bar, v_bar = (
            u_bar + du_bar * (a - b * v) + dv_bar * (d * v),
            v_bar - du_bar * (b * u) + dv_bar * (d * u - c),
        )
    return a_bar, b_bar, c_bar, d_bar


# ---------------------------------------------------------------------------
# Trivial function used to measure the fixed cost of calling an s2sad gradient.


def ident(x):
    return x


# ---------------------------------------------------------------------------
# The suite: (name, function, hand gradient, arguments, wrt).

WORKLOADS = [
    ("babysqrt10", babysqrt10, babysqrt10_hand, (2.0,), 0),
    ("babysqrt1000", babysqrt1000, babysqrt1000_hand, (2.0,), 0),
    ("logsin", logsin, logsin_hand, (2.0, 5.0), (0, 1)),
    ("lotka_volterra", lotka_volterra, lotka_volterra_hand,
     (1.5, 1.0, 3.0, 1.0), (0, 1, 2, 3)),
]
