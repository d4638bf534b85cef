"""Benchmark workloads for s2sad, each with a hand-written reverse-mode gradient
(and, for the scalar ones, a hand-written forward-mode tangent).

Four groups.  The scalar workloads are plain Python functions on floats
(``math`` and loops only).  Next to each is the gradient a careful person
would write by hand: a forward sweep that records what the backward sweep
needs in a list, then a reversed loop that accumulates adjoints.

The NumPy workloads are vectorised losses on float64 arrays.  Their hand
gradients are what a careful NumPy programmer would write: one forward pass
whose intermediates are reused (and overwritten in place once they are no
longer needed), no allocation that is not needed, and no computation of the
loss value when the gradient does not need it.

A hand gradient returns what ``s2sad.grad(f, wrt)`` returns: a float or an
array for a single ``wrt``, a tuple of them for a tuple ``wrt``.  A hand
tangent ``f_jvp_hand(*primals, *tangents)`` returns what
``s2sad.jvp(f, primals, tangents)`` returns: ``(value, tangent)``, computed
dual-number style, each tangent next to its value.

The array-loop workloads (issue #21) are loops over NumPy state: a heat
equation, a recurrent network, a damped Jacobi iteration stopped by a
``while`` test, and an n-body simulation.  Their hand gradients tape only
what their pullback needs (written next to each, in ``hand_tape``), in
buffers allocated once where they can be.

The mixed workloads (issue #20) are scalar code on Python floats that calls
NumPy's functions (``np.log``, ``np.sqrt``, ``np.tanh``, ...): logsin spelled
with NumPy, a projectile with drag (with float parameters that have defaults,
then with its parameters in a dataclass), and a damped oscillator; and two loop
programs on small arrays (issue #37): classic Runge-Kutta on a state that is a tuple of
arrays, stepping through helper functions, and a recursive evaluation of a small binary
expression tree with array leaves.

The Dask workload (issue #23) is the logistic regression above on data held in
chunks on a ``dask.distributed`` cluster, against the gradient dask-glm writes by
hand, ``X.T @ (sigmoid(X @ w) - y) / n``; it exists only when Dask is importable.

Also here: a hand Hessian-vector product of Rosenbrock (``hvp``), and the
Lotka-Volterra model over 10^5 steps (the memory of a long gradient tape).
"""

import dataclasses
import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

try:
    from s2sad import checkpoint, checkpointed
except ImportError:         # the plain functions run without s2sad
    def checkpointed(steps, snapshots):
        return steps

    def checkpoint(fn):
        return fn

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


def _babysqrt_jvp_hand(x, x_dot, n):
    # Tangents ride along with the values (dual numbers), nothing is stored:
    # d(x/t) = (x_dot - (x/t) t_dot) / t.
    t = (1 + x) / 2
    t_dot = x_dot / 2
    for i in range(n):
        q = x / t
        q_dot = (x_dot - q * t_dot) / t
        t = (t + q) / 2
        t_dot = (t_dot + q_dot) / 2
    return t, t_dot


def babysqrt10_jvp_hand(x, x_dot):
    return _babysqrt_jvp_hand(x, x_dot, 10)


def babysqrt1000_jvp_hand(x, x_dot):
    return _babysqrt_jvp_hand(x, x_dot, 1000)


# ---------------------------------------------------------------------------
# 2. A small closed-form expression, gradient w.r.t. both arguments.


def logsin(x1, x2):
    return math.log(x1) + x1 * x2 - math.sin(x2)


def logsin_hand(x1, x2):
    # No loop, so nothing to record: the adjoints of the three terms.
    x1_bar = 1.0 / x1 + x2
    x2_bar = x1 - math.cos(x2)
    return x1_bar, x2_bar


def logsin_jvp_hand(x1, x2, x1_dot, x2_dot):
    y = math.log(x1) + x1 * x2 - math.sin(x2)
    y_dot = x1_dot * (1.0 / x1 + x2) + x2_dot * (x1 - math.cos(x2))
    return y, y_dot


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


def _lotka_volterra_hand(a, b, c, d, steps, h):
    # Forward: remember the state entering every step.
    u = 1.0
    v = 1.0
    states = []
    for i in range(steps):
        states.append((u, v))
        du = a * u - b * u * v
        dv = -c * v + d * u * v
        u = u + h * du
        v = v + h * dv
    # Backward: adjoints of (u, v) after the step -> before the step.
    u_bar = 1.0
    v_bar = 0.0
    a_bar = b_bar = c_bar = d_bar = 0.0
    for u, v in reversed(states):
        du_bar = h * u_bar
        dv_bar = h * v_bar
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


def lotka_volterra_hand(a, b, c, d):
    return _lotka_volterra_hand(a, b, c, d, LV_STEPS, LV_H)


def lotka_volterra_jvp_hand(a, b, c, d, a_dot, b_dot, c_dot, d_dot):
    # The state's tangents (u_dot, v_dot) are carried through every step.
    u = 1.0
    v = 1.0
    u_dot = 0.0
    v_dot = 0.0
    for i in range(LV_STEPS):
        uv = u * v
        uv_dot = u_dot * v + u * v_dot
        du = a * u - b * uv
        du_dot = a_dot * u + a * u_dot - b_dot * uv - b * uv_dot
        dv = d * uv - c * v
        dv_dot = d_dot * uv + d * uv_dot - c_dot * v - c * v_dot
        u = u + LV_H * du
        u_dot = u_dot + LV_H * du_dot
        v = v + LV_H * dv
        v_dot = v_dot + LV_H * dv_dot
    return u, u_dot


# The same model over 10^5 steps, for the memory of the gradient (its tape
# grows with the number of steps).  h = 0.01 would blow up over that many
# explicit Euler steps; h = 0.001 stays on the orbit.

LV_LONG_STEPS = 10 ** 5
LV_LONG_H = 0.001


def lotka_volterra_1e5(a, b, c, d):
    u = 1.0
    v = 1.0
    for i in range(LV_LONG_STEPS):
        du = a * u - b * u * v
        dv = -c * v + d * u * v
        u = u + LV_LONG_H * du
        v = v + LV_LONG_H * dv
    return u


def lotka_volterra_1e5_hand(a, b, c, d):
    return _lotka_volterra_hand(a, b, c, d, LV_LONG_STEPS, LV_LONG_H)


# ---------------------------------------------------------------------------
# NumPy workloads.  Each has a ``*_torch`` twin: the same loss written with
# ``torch`` functions (the harness binds the name ``torch`` when it uses
# them, so this module never imports torch).  autograd and JAX run the NumPy
# function itself with ``np`` rebound to ``autograd.numpy`` / ``jax.numpy``.
#

torch = None  # the *_torch twins run with this name bound to the torch module

# 4. Rosenbrock, vectorised: sum over i of 100 (x[i+1] - x[i]^2)^2 + (1 - x[i])^2.


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def rosenbrock_hand(x):
    # With d = x[1:] - x[:-1]**2:
    #   df/dx[1:]  += 200 d
    #   df/dx[:-1] += -400 d x[:-1] - 2 (1 - x[:-1]) = 2 (x[:-1] (1 - 200 d) - 1)
    # Two arrays are allocated: d and the gradient; everything else is in place.
    xa = x[:-1]                       # a view
    d = xa * xa
    np.subtract(x[1:], d, out=d)
    d *= 200.0                        # d is now df/dx[1:]
    g = np.empty_like(x)
    ga = g[:-1]                       # a view: written in place
    np.subtract(1.0, d, out=ga)
    ga *= xa
    ga -= 1.0
    ga *= 2.0
    g[-1] = 0.0
    g[1:] += d
    return g


def rosenbrock_hvp_hand(x, v):
    # The tangent of rosenbrock_hand's gradient along v.  With a = x[:-1],
    # d = x[1:] - a^2 and d_dot = v[1:] - 2 a v[:-1]:
    #   (H v)[:-1] = 2 (v[:-1] (1 - 200 d) - 200 a d_dot)
    #   (H v)[1:] += 200 d_dot
    a, va = x[:-1], v[:-1]
    d = a * a
    np.subtract(x[1:], d, out=d)
    d_dot = a * va
    d_dot *= -2.0
    d_dot += v[1:]
    hv = np.empty_like(x)
    out = hv[:-1]                     # a view: written in place
    np.multiply(d, -200.0, out=out)
    out += 1.0
    out *= va
    np.multiply(a, d_dot, out=d)      # d is not needed any more: -200 a d_dot
    d *= -200.0
    out += d
    out *= 2.0
    hv[-1] = 0.0
    d_dot *= 200.0
    hv[1:] += d_dot
    return hv


def rosenbrock_torch(x):
    return torch.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def rosenbrock_args(n, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.uniform(-1.5, 1.5, n),)


# ---------------------------------------------------------------------------
# 5. Two-layer perceptron: tanh hidden layer, softmax cross-entropy (with a
#    max-shifted log-sum-exp), mean over the batch.  Gradient w.r.t. the
#    weights and biases; the data X and the one-hot labels Y are fixed.


def mlp(W1, b1, W2, b2, X, Y):
    H = np.tanh(X @ W1 + b1)
    Z = H @ W2 + b2
    S = Z - np.max(Z, axis=1, keepdims=True)
    lse = np.log(np.sum(np.exp(S), axis=1, keepdims=True))
    return -np.sum(Y * (S - lse)) / X.shape[0]


def mlp_hand(W1, b1, W2, b2, X, Y):
    # Forward, overwriting in place: H holds tanh(X W1 + b1), P the softmax.
    n = X.shape[0]
    H = X @ W1
    H += b1
    np.tanh(H, out=H)
    P = H @ W2
    P += b2
    P -= P.max(axis=1, keepdims=True)
    np.exp(P, out=P)
    P /= P.sum(axis=1, keepdims=True)
    # dL/dZ = (softmax - Y) / n, because every row of the one-hot Y sums to 1
    # (the max shift has no effect on the gradient).
    P -= Y
    P /= n
    W2_bar = H.T @ P
    b2_bar = P.sum(axis=0)
    A_bar = P @ W2.T                  # dL/dH, then dL/d(X W1 + b1)
    H *= H
    np.subtract(1.0, H, out=H)        # tanh' = 1 - tanh^2, over H
    A_bar *= H
    W1_bar = X.T @ A_bar
    b1_bar = A_bar.sum(axis=0)
    return W1_bar, b1_bar, W2_bar, b2_bar


def mlp_torch(W1, b1, W2, b2, X, Y):
    H = torch.tanh(X @ W1 + b1)
    Z = H @ W2 + b2
    S = Z - torch.amax(Z, dim=1, keepdim=True)
    lse = torch.log(torch.sum(torch.exp(S), dim=1, keepdim=True))
    return -torch.sum(Y * (S - lse)) / X.shape[0]


def mlp_args(batch, n_in, n_hidden, n_out, seed=0):
    rng = np.random.default_rng(seed)
    W1 = rng.standard_normal((n_in, n_hidden)) / np.sqrt(n_in)
    b1 = 0.1 * rng.standard_normal(n_hidden)
    W2 = rng.standard_normal((n_hidden, n_out)) / np.sqrt(n_hidden)
    b2 = 0.1 * rng.standard_normal(n_out)
    X = rng.standard_normal((batch, n_in))
    Y = np.eye(n_out)[rng.integers(0, n_out, batch)]
    return W1, b1, W2, b2, X, Y


# ---------------------------------------------------------------------------
# 6. Logistic regression: mean log-loss of sigmoid(X w) against labels y in
#    {0, 1}.  -y log s(z) - (1 - y) log(1 - s(z)) = log(1 + e^z) - y z, with
#    log(1 + e^z) = logaddexp(0, z) so that no exp overflows.  Gradient w.r.t. w.


def logreg(w, X, y):
    z = X @ w
    return np.mean(np.logaddexp(0.0, z) - y * z)


def logreg_hand(w, X, y):
    # dL/dz = (sigmoid(z) - y) / n, with sigmoid(z) = (1 + tanh(z/2)) / 2,
    # which cannot overflow.  One array of n is allocated, z, then reused.
    z = X @ w
    z *= 0.5
    np.tanh(z, out=z)
    z += 1.0
    z *= 0.5
    z -= y
    g = z @ X                         # X.T @ z
    g /= X.shape[0]
    return g


def logreg_torch(w, X, y):
    z = X @ w
    return torch.mean(torch.logaddexp(z.new_zeros(()), z) - y * z)


def logreg_args(n, dim, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, dim))
    w = rng.standard_normal(dim) / np.sqrt(dim)
    y = (rng.random(n) < 1 / (1 + np.exp(-2 * (X @ w)))).astype(np.float64)
    return 0.5 * w, X, y


# ---------------------------------------------------------------------------
# Array loops (issue #21): loops over NumPy state.  Each hand gradient keeps
# only what its pullback reads (said in the Workload's ``hand_tape``) and
# works in buffers allocated once, in place.
#
# 7. Heat equation, explicit Euler on a periodic 1-D grid:
#    u <- u + kappa L u, with (L u)[i] = u[i-1] - 2 u[i] + u[i+1].
#    Loss sum(u^2) at the end; gradient w.r.t. u0 and kappa.


def heat(u, kappa, steps):
    for i in range(steps):
        lap = np.roll(u, 1) - 2.0 * u + np.roll(u, -1)
        u = u + kappa * lap
    return np.sum(u * u)


def _laplacian(u, out):
    # out = roll(u, 1) - 2 u + roll(u, -1), in place, bit for bit (a - 2u is -2u + a)
    np.multiply(u, -2.0, out=out)
    out[1:] += u[:-1]
    out[0] += u[-1]
    out[:-1] += u[1:]
    out[-1] += u[0]
    return out


def heat_hand(u, kappa, steps):
    # Forward: tape lap of each step (L is linear, so the pullback needs no u).
    u = u.copy()
    laps = []
    step = np.empty_like(u)
    for i in range(steps):
        lap = _laplacian(u, np.empty_like(u))
        laps.append(lap)
        np.multiply(kappa, lap, out=step)
        u += step
    # Backward: L is symmetric, so u_bar <- u_bar + kappa L u_bar, and
    # kappa_bar += <u_bar, lap> with the u_bar after the step.
    u_bar = u
    u_bar *= 2.0
    kappa_bar = 0.0
    while laps:
        lap = laps.pop()              # released as soon as it is read
        kappa_bar += float(np.dot(u_bar, lap))
        _laplacian(u_bar, step)
        step *= kappa
        u_bar += step
    return u_bar, kappa_bar


# 7b. The same over 2,000 steps, checkpointed: the gradient keeps at most 20 snapshots
#     of u (the binomial, "revolve", schedule) instead of 2,000 steps' values, and
#     computes the other states again. Its goal is not the hand gradient's memory but
#     k + 4 arrays of the state's size, in at most 3x the time of the hand gradient,
#     which tapes lap at every step.
HEAT_SNAPSHOTS = 20


def heat_checkpointed(u, kappa, steps):
    for i in checkpointed(range(steps), snapshots=HEAT_SNAPSHOTS):
        lap = np.roll(u, 1) - 2.0 * u + np.roll(u, -1)
        u = u + kappa * lap
    return np.sum(u * u)


@checkpoint
def heat_step(u, kappa):
    lap = np.roll(u, 1) - 2.0 * u + np.roll(u, -1)
    return u + kappa * lap


# 7c. The same loop calling its step, an s2sad.checkpoint: the step of the checkpointed
#     loop computes it again already, so the gradient meets the inline form's goals.
def heat_checkpointed_call(u, kappa, steps):
    for i in checkpointed(range(steps), snapshots=HEAT_SNAPSHOTS):
        u = heat_step(u, kappa)
    return np.sum(u * u)


def heat_args(n, steps, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(n), 0.2, steps


# 8. Vanilla RNN, h of shape (hidden, batch), b of shape (hidden, 1), the
#    inputs x of shape (T, input, batch): h <- tanh(W h + U x[t] + b) from h0.
#    Loss sum(h^2) on the final state; gradient w.r.t. W, U, b.


def rnn(W, U, b, x, h):
    for t in range(x.shape[0]):
        h = np.tanh(W @ h + U @ x[t] + b)
    return np.sum(h * h)


def rnn_hand(W, U, b, x, h):
    # Forward: tape every state h_t (the tanh output) in one (T + 1) array.
    T = x.shape[0]
    hs = np.empty((T + 1,) + h.shape)
    hs[0] = h
    tmp = np.empty(h.shape)
    for t in range(T):
        a = hs[t + 1]
        np.matmul(W, hs[t], out=a)
        np.matmul(U, x[t], out=tmp)
        a += tmp
        a += b
        np.tanh(a, out=a)
    # Backward: a_bar = h_bar (1 - h_t^2); W_bar += a_bar h_{t-1}^T,
    # U_bar += a_bar x_t^T, b_bar += row sums of a_bar; h_bar = W^T a_bar.
    h_bar = 2.0 * hs[T]
    W_bar = np.zeros_like(W)
    U_bar = np.zeros_like(U)
    b_bar = np.zeros_like(b)
    a_bar = tmp
    dW = np.empty_like(W)
    dU = np.empty_like(U)
    db = np.empty_like(b)
    for t in range(T - 1, -1, -1):
        np.multiply(hs[t + 1], hs[t + 1], out=a_bar)
        np.subtract(1.0, a_bar, out=a_bar)
        a_bar *= h_bar
        np.matmul(a_bar, hs[t].T, out=dW)
        W_bar += dW
        np.matmul(a_bar, x[t].T, out=dU)
        U_bar += dU
        np.sum(a_bar, axis=1, keepdims=True, out=db)
        b_bar += db
        np.matmul(W.T, a_bar, out=h_bar)
    return W_bar, U_bar, b_bar


def rnn_args(T, batch, hidden, n_in, seed=0):
    rng = np.random.default_rng(seed)
    W = rng.standard_normal((hidden, hidden)) / np.sqrt(hidden)
    U = rng.standard_normal((hidden, n_in)) / np.sqrt(n_in)
    b = 0.1 * rng.standard_normal((hidden, 1))
    x = rng.standard_normal((T, n_in, batch))
    h = np.zeros((hidden, batch))
    return W, U, b, x, h


# 9. Damped Jacobi iteration for (diag(d) + R) x = b, from x = 0, until the
#    largest change of a step is at most tol (a data-dependent `while`).
#    Loss sum(x^2); gradient w.r.t. the right-hand side b and the diagonal d.


def jacobi(b, d, R, omega, tol):
    x = np.zeros_like(b)
    err = math.inf
    while err > tol:
        y = (b - R @ x) / d
        dx = omega * (y - x)
        x = x + dx
        err = np.max(np.abs(dx))
    return np.sum(x * x)


def jacobi_hand(b, d, R, omega, tol):
    # Forward: tape y_k = (b - R x_k) / d of each step (d_bar needs it; the
    # rest of the step is linear in x).  Same operations as `jacobi`, so the
    # same number of steps.
    x = np.zeros_like(b)
    dx = np.empty_like(b)
    ys = []
    err = math.inf
    while err > tol:
        y = R @ x
        np.subtract(b, y, out=y)
        y /= d
        ys.append(y)
        np.subtract(y, x, out=dx)
        dx *= omega
        x += dx
        np.abs(dx, out=dx)
        err = dx.max()
    # Backward: x_{k+1} = (1 - omega) x_k + omega y_k, so with s = omega x_bar / d:
    # b_bar += s, d_bar -= s y_k, x_bar <- (1 - omega) x_bar - R^T s.
    x_bar = x
    x_bar *= 2.0
    b_bar = np.zeros_like(b)
    d_bar = np.zeros_like(d)
    s = dx
    Rs = np.empty_like(b)
    while ys:
        y = ys.pop()
        np.multiply(x_bar, omega, out=s)
        s /= d
        b_bar += s
        y *= s
        d_bar -= y
        np.matmul(s, R, out=Rs)       # R^T s
        x_bar *= 1.0 - omega
        x_bar -= Rs
    return b_bar, d_bar


def jacobi_args(n, seed=0):
    # R off-diagonal, entries of standard deviation 1/sqrt(n): its spectral radius
    # is about 1, and d of 2 to 3 makes the iteration contract by about 0.7 a step.
    rng = np.random.default_rng(seed)
    R = rng.standard_normal((n, n)) / np.sqrt(n)
    np.fill_diagonal(R, 0.0)
    d = rng.uniform(2.0, 3.0, n)
    b = rng.standard_normal(n)
    return b, d, R, 0.8, 1e-8


# 10. N-body, semi-implicit Euler (v first, then x with the new v), softened
#     gravity with G = 1: a_i = -sum_j m_j (x_i - x_j) / (|x_i - x_j|^2 + eps)^1.5,
#     pairwise differences by broadcasting.  Loss sum(x^2) + sum(v^2) at the
#     end; gradient w.r.t. the initial positions and velocities.


def nbody(x, v, m, dt, eps, steps):
    for i in range(steps):
        d = x[:, None, :] - x[None, :, :]
        r2 = np.sum(d * d, axis=2) + eps
        w = r2 ** -1.5
        a = -np.sum(d * (m[None, :, None] * w[:, :, None]), axis=1)
        v = v + dt * a
        x = x + dt * v
    return np.sum(x * x) + np.sum(v * v)


def _pairs(x, eps, d, dd, r2):
    # d = x_i - x_j, r2 = |d|^2 + eps, in the buffers d, dd (n, n, 3) and r2 (n, n)
    np.subtract(x[:, None, :], x[None, :, :], out=d)
    np.multiply(d, d, out=dd)
    np.sum(dd, axis=2, out=r2)
    r2 += eps


def nbody_hand(x, v, m, dt, eps, steps):
    # Forward, the operations of `nbody` in buffers: tape x_k and w_k = r2_k^-1.5
    # of each step (the pullback computes d and r2 again from x_k, cheaper than
    # taping d, three times w's size; w is a power, dearer to compute again).
    n = x.shape[0]
    xs = np.empty((steps + 1, n, 3))
    ws = np.empty((steps, n, n))
    xs[0] = x
    v = v.copy()
    d = np.empty((n, n, 3))
    dd = np.empty((n, n, 3))
    r2 = np.empty((n, n))
    mw = np.empty((n, n))
    a = np.empty((n, 3))
    for k in range(steps):
        _pairs(xs[k], eps, d, dd, r2)
        np.power(r2, -1.5, out=ws[k])
        np.multiply(m, ws[k], out=mw)
        np.multiply(d, mw[:, :, None], out=dd)
        np.sum(dd, axis=1, out=a)
        a *= -dt                      # dt * a
        v += a
        np.multiply(v, dt, out=a)
        np.add(xs[k], a, out=xs[k + 1])
    # Backward.  x_{k+1} = x_k + dt v_{k+1}: v_bar += dt x_bar.  v_{k+1} = v_k
    # + dt a(x_k): x_bar += J_a^T c with c = dt v_bar.  With mw_ij = m_j w_ij and
    # P_ij = 3 mw_ij (c_i . d_ij) / r2_ij, the adjoint of d_ij is
    # G_ij = P_ij d_ij - mw_ij c_i; x_i gets sum_j G_ij and x_j gets -sum_i G_ij.
    # As d_ij = x_i - x_j, these sums are matrix products of (n, n) arrays with
    # x and c: no (n, n, 3) array but for d, to compute r2 again.
    x_bar = 2.0 * xs[steps]
    v_bar = v
    v_bar *= 2.0
    c = a
    P = np.empty((n, n))
    for k in range(steps - 1, -1, -1):
        x = xs[k]
        np.multiply(x_bar, dt, out=c)
        v_bar += c
        np.multiply(v_bar, dt, out=c)
        _pairs(x, eps, d, dd, r2)
        np.matmul(c, x.T, out=P)                   # c_i . x_j
        np.subtract(np.einsum("ij,ij->i", c, x)[:, None], P, out=P)   # c_i . d_ij
        P *= 3.0
        P /= r2
        np.multiply(m, ws[k], out=mw)
        P *= mw
        x_bar += x * (P.sum(axis=1) + P.sum(axis=0))[:, None]
        x_bar -= P @ x
        x_bar -= P.T @ x
        x_bar -= c * mw.sum(axis=1)[:, None]
        x_bar += mw.T @ c
    return x_bar, v_bar


def nbody_args(n, steps, seed=0):
    # n bodies of total mass 1 in the unit cube, small velocities; the softening
    # keeps close pairs tame over steps * dt = 0.5 time units.
    rng = np.random.default_rng(seed)
    x = rng.uniform(-0.5, 0.5, (n, 3))
    v = 0.1 * rng.standard_normal((n, 3))
    m = rng.uniform(0.5, 1.5, n)
    return x, v, m / m.sum(), 0.01, 0.01, steps


# 11. examples/trajectory.py's loss: an explicit Euler method writes each state into
#     an array, u[i + 1] = u[i] - h k u[i]^2, and the loss compares the trajectory
#     with observations.  Gradient w.r.t. the rate k.

TRAJECTORY_H = 0.01


def trajectory(k, observed):
    n = len(observed)
    u = np.zeros(n)
    u[0] = 1.0
    for i in range(n - 1):
        u[i + 1] = u[i] - TRAJECTORY_H * k * u[i] ** 2
    return np.sum((u - observed) ** 2)


def trajectory_hand(k, observed):
    # the forward loop as written; the array u it fills is all the pullback reads:
    # the adjoint of u[i] gains g (1 - 2 h k u[i]) from u[i + 1]'s adjoint g, and k's
    # gains -h u[i]^2 g
    n = len(observed)
    u = np.zeros(n)
    u[0] = 1.0
    for i in range(n - 1):
        u[i + 1] = u[i] - TRAJECTORY_H * k * u[i] ** 2
    u_bar = 2.0 * (u - observed)
    k_bar = 0.0
    hk2 = 2.0 * TRAJECTORY_H * k
    for i in range(n - 2, -1, -1):
        g = u_bar[i + 1]
        ui = u[i]
        k_bar -= TRAJECTORY_H * ui * ui * g
        u_bar[i] += g * (1.0 - hk2 * ui)
    return (k_bar,)


def trajectory_jvp_hand(k, observed):
    # forward mode by hand, the tangent dk = 1 carried beside the state: du[i + 1] =
    # du[i] - h (u[i]^2 + 2 k u[i] du[i]); (value, d value / dk)
    n = len(observed)
    u = np.zeros(n)
    du = np.zeros(n)
    u[0] = 1.0
    for i in range(n - 1):
        ui, dui = u[i], du[i]
        u[i + 1] = ui - TRAJECTORY_H * k * ui ** 2
        du[i + 1] = dui - TRAJECTORY_H * (ui * ui + 2.0 * k * ui * dui)
    r = u - observed
    return np.sum(r ** 2), 2.0 * np.sum(r * du)


def trajectory_args(steps, seed=0):
    # observations of the exact solution for k = 0.7, with noise; k starts at 1.5
    t = TRAJECTORY_H * np.arange(steps + 1)
    noise = 0.01 * np.random.default_rng(seed).standard_normal(steps + 1)
    return 1.5, 1.0 / (1.0 + 0.7 * t) + noise


# ---------------------------------------------------------------------------
# Mixed NumPy and floats (issue #20): scalar code on Python floats that calls
# NumPy's functions (np.log, np.sqrt, np.tanh, ...) where `math` would do.  A
# NumPy function of a float is an np.float64, and so is the arithmetic that
# follows.  The hand gradients call the same NumPy functions on the same values
# as the function (the forward sweep is the function's, operation for operation,
# so its values are the function's to the bit, in np.float64 like them), reuse
# what the forward sweep computed, and call NumPy again only where the
# derivative needs a function the forward sweep did not compute (np.cos for the
# derivative of np.sin).  Their loops tape one tuple of numbers a step, as the
# scalar workloads' do.
#
# 12. logsin with NumPy's functions.


def logsin_np(x1, x2):
    return np.log(x1) + x1 * x2 - np.sin(x2)


def logsin_np_hand(x1, x2):
    return 1.0 / x1 + x2, x1 - np.cos(x2)


# 13. A projectile with quadratic drag, explicit Euler over PROJECTILE_STEPS steps
#     of dt from the origin: v <- v - dt (drag |v| v + (0, g)), x <- x + dt v_x.
#     Returns the horizontal distance; gradient w.r.t. the initial speed and angle.
#     drag and dt are floats with defaults, not differentiated.

PROJECTILE_STEPS = 1000


def projectile(v0, angle, drag=0.05, dt=1e-3):
    vx = v0 * np.cos(angle)
    vy = v0 * np.sin(angle)
    x = 0.0
    for i in range(PROJECTILE_STEPS):
        speed = np.sqrt(vx * vx + vy * vy)
        vx = vx - dt * drag * speed * vx
        vy = vy - dt * (9.81 + drag * speed * vy)
        x = x + dt * vx
    return x


def _projectile_forward(v0, c, s, drag, dt):
    # the forward sweep of projectile from cos(angle) = c, sin(angle) = s, taping
    # (vx, vy, speed) of each step; returns the tape and the final vx
    vx = v0 * c
    vy = v0 * s
    tape = []
    for i in range(PROJECTILE_STEPS):
        speed = np.sqrt(vx * vx + vy * vy)
        tape.append((vx, vy, speed))
        vx = vx - dt * drag * speed * vx
        vy = vy - dt * (9.81 + drag * speed * vy)
    return tape, vx


def projectile_hand(v0, angle, drag=0.05, dt=1e-3):
    # x is a sum of dt vx over the steps (x itself is not needed), so x_bar = 1 and
    # each step adds dt to the adjoint a of its new vx.  With b the adjoint of the
    # new vy, k = dt drag, s = |v| and u = a vx + b vy, the step
    # v <- v - k s v - (0, dt g) has the adjoint
    # (a, b) <- (1 - k s) (a, b) - (k u / s) (vx, vy).
    c, s = np.cos(angle), np.sin(angle)
    tape, _ = _projectile_forward(v0, c, s, drag, dt)
    k = dt * drag
    a = b = 0.0
    for vx, vy, speed in reversed(tape):
        a += dt
        q = -k * (a * vx + b * vy) / speed
        m = 1.0 - k * speed
        a, b = a * m + q * vx, b * m + q * vy
    # vx = v0 cos(angle), vy = v0 sin(angle)
    return a * c + b * s, v0 * (b * c - a * s)


# 14. The same projectile, its parameters in a dataclass.  s2sad differentiates
#     every float field of a dataclass argument, so the gradient w.r.t. a Launch
#     has the adjoints of drag and dt too, and so has the hand gradient.


@dataclasses.dataclass
class Launch:
    v0: float
    angle: float
    drag: float = 0.05
    dt: float = 1e-3


def projectile_dataclass(p):
    vx = p.v0 * np.cos(p.angle)
    vy = p.v0 * np.sin(p.angle)
    x = 0.0
    for i in range(PROJECTILE_STEPS):
        speed = np.sqrt(vx * vx + vy * vy)
        vx = vx - p.dt * p.drag * speed * vx
        vy = vy - p.dt * (9.81 + p.drag * speed * vy)
        x = x + p.dt * vx
    return x


def projectile_dataclass_hand(p):
    # As projectile_hand for (a, b).  Each step also gives dt the adjoint
    # vx_new - drag s u - g b (from x += dt vx_new, and the two velocity updates,
    # with the (a, b) after the step) and drag the adjoint -dt s u: summed over
    # the steps, then scaled once.
    v0, drag, dt = p.v0, p.drag, p.dt
    c, s = np.cos(p.angle), np.sin(p.angle)
    tape, vx_new = _projectile_forward(v0, c, s, drag, dt)
    k = dt * drag
    a = b = 0.0
    sum_vx = sum_su = sum_b = 0.0
    for vx, vy, speed in reversed(tape):
        a += dt
        u = a * vx + b * vy
        sum_vx += vx_new
        sum_su += speed * u
        sum_b += b
        q = -k * u / speed
        m = 1.0 - k * speed
        a, b = a * m + q * vx, b * m + q * vy
        vx_new = vx
    return Launch(a * c + b * s, v0 * (b * c - a * s), -dt * sum_su,
                  sum_vx - drag * sum_su - 9.81 * sum_b)


# 15. A damped oscillator with a saturating spring (force -k tanh(x)) and a damping
#     strongest near the rest position (-c exp(-x^2) v), semi-implicit Euler over
#     OSCILLATOR_STEPS steps of dt from (x0, 0); returns the final energy
#     v^2 / 2 + k log(cosh(x)).  Gradient w.r.t. k, c and x0; dt has a default.

OSCILLATOR_STEPS = 500


def oscillator(k, c, x0, dt=0.01):
    x = x0
    v = 0.0
    for i in range(OSCILLATOR_STEPS):
        acc = -k * np.tanh(x) - c * np.exp(-x * x) * v
        v = v + dt * acc
        x = x + dt * v
    return 0.5 * v * v + k * np.log(np.cosh(x))


def oscillator_hand(k, c, x0, dt=0.01):
    # Forward: tape (x, v, tanh(x), exp(-x^2)) entering each step.
    x = x0
    v = 0.0
    tape = []
    for i in range(OSCILLATOR_STEPS):
        th = np.tanh(x)
        ex = np.exp(-x * x)
        tape.append((x, v, th, ex))
        acc = -k * th - c * ex * v
        v = v + dt * acc
        x = x + dt * v
    # Backward: x_new = x + dt v_new gives v_new its adjoint v_bar + dt x_bar, and
    # acc's adjoint is dt times that; d acc/dx = -k (1 - th^2) + 2 c x ex v,
    # d acc/dv = -c ex, d acc/dk = -th, d acc/dc = -ex v (those two summed, then
    # negated once).
    x_bar = k * np.tanh(x)
    v_bar = v
    k_bar = np.log(np.cosh(x))
    sum_th = sum_exv = 0.0
    for x, v, th, ex in reversed(tape):
        v_bar += dt * x_bar
        acc_bar = dt * v_bar
        exv = ex * v
        sum_th += acc_bar * th
        sum_exv += acc_bar * exv
        x_bar -= acc_bar * (k * (1.0 - th * th) - 2.0 * c * x * exv)
        v_bar -= acc_bar * c * ex
    return k_bar - sum_th, -sum_exv, x_bar


# ---------------------------------------------------------------------------
# 16. A pendulum array (issue #37's realistic loop program): classic Runge-Kutta
#     over RK4_STEPS steps, its state a tuple of arrays (positions, velocities),
#     each step through helper functions that take and return such tuples.

RK4_STEPS = 100
RK4_H = 0.01


def rk4_accel(pos, vel, k, c):
    return -k * np.sin(pos) - c * vel


def rk4_deriv(state, k, c):
    pos, vel = state
    return vel, rk4_accel(pos, vel, k, c)


def rk4_axpy(state, h, d):
    return state[0] + h * d[0], state[1] + h * d[1]


def rk4_step(state, h, k, c):
    k1 = rk4_deriv(state, k, c)
    k2 = rk4_deriv(rk4_axpy(state, h / 2, k1), k, c)
    k3 = rk4_deriv(rk4_axpy(state, h / 2, k2), k, c)
    k4 = rk4_deriv(rk4_axpy(state, h, k3), k, c)
    pos = state[0] + h / 6 * (k1[0] + 2 * k2[0] + 2 * k3[0] + k4[0])
    vel = state[1] + h / 6 * (k1[1] + 2 * k2[1] + 2 * k3[1] + k4[1])
    return pos, vel


def rk4(pos0, vel0, k, c):
    state = (pos0, vel0)
    for i in range(RK4_STEPS):
        state = rk4_step(state, RK4_H, k, c)
    pos, vel = state
    return np.sum(pos * pos) + 0.5 * np.sum(vel * vel)


def rk4_hand(pos0, vel0, k, c):
    # Stage j (0 to 3) reads (p_j, v_j): p_0, v_0 the state, p_j = p + s v_{j-1} and
    # v_j = v + s a_{j-1} after (s = h/2, h/2, h), a_j = -k sin(p_j) - c v_j; the new
    # state adds h/6 (1, 2, 2, 1) weighted sums of the v_j and the a_j. Tape: the
    # stage inputs of each step.
    h, scale, weight = RK4_H, (RK4_H / 2, RK4_H / 2, RK4_H), (1.0, 2.0, 2.0, 1.0)
    p, v = pos0, vel0
    tape = []
    for i in range(RK4_STEPS):
        ps, vs, acc = [p], [v], []
        for j in range(4):
            acc.append(-k * np.sin(ps[j]) - c * vs[j])
            if j < 3:
                ps.append(p + scale[j] * vs[j])
                vs.append(v + scale[j] * acc[j])
        tape.append((ps, vs))
        p = p + h / 6 * (vs[0] + 2 * vs[1] + 2 * vs[2] + vs[3])
        v = v + h / 6 * (acc[0] + 2 * acc[1] + 2 * acc[2] + acc[3])
    p_bar, v_bar = 2 * p, v
    k_bar, c_bar = np.zeros_like(k), 0.0
    for ps, vs in reversed(tape):
        # backwards through the stages: (p_{j+1}, v_{j+1})'s adjoints give v_j and a_j
        # theirs, a_j's gives p_j and v_j (and k, c) theirs
        new_p, new_v = p_bar, v_bar
        next_p = next_v = 0.0
        for j in (3, 2, 1, 0):
            s = scale[j] if j < 3 else 0.0
            a_bar = weight[j] * h / 6 * v_bar + s * next_v
            k_bar = k_bar - np.sin(ps[j]) * a_bar
            c_bar -= float(np.vdot(vs[j], a_bar))
            next_p, next_v = (-k * np.cos(ps[j]) * a_bar,
                              weight[j] * h / 6 * p_bar + s * next_p - c * a_bar)
            new_p, new_v = new_p + next_p, new_v + next_v
        p_bar, v_bar = new_p, new_v
    return p_bar, v_bar, k_bar, c_bar


def rk4_args(n, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=n), rng.normal(size=n), 1.0 + rng.random(n), 0.3


# ---------------------------------------------------------------------------
# 16b. A pairwise energy of 20 points in the plane (a scientist's double loop over pairs,
#      rows of a 2-d array read a number at a time).  Gradient w.r.t. the points and k.
def pair_energy(x, k):
    e = 0.0
    n = x.shape[0]
    for i in range(n):
        for j in range(i + 1, n):
            d = x[i] - x[j]
            r2 = d[0] ** 2 + d[1] ** 2 + 1e-3
            e += k / r2 ** 3 - 1.0 / r2
    return e


def pair_energy_hand(x, k):
    # e = sum over pairs of k r2^-3 - r2^-1: dk = r2^-3, dr2 = -3k r2^-4 + r2^-2, and
    # r2 = |x_i - x_j|^2 + eps gives d(x_i) = 2 dr2 d = -d(x_j).
    n = x.shape[0]
    x_bar, k_bar = np.zeros(x.shape), 0.0
    for i in range(n):
        for j in range(i + 1, n):
            d = x[i] - x[j]
            r2 = d[0] ** 2 + d[1] ** 2 + 1e-3
            k_bar += 1.0 / r2 ** 3
            d_bar = (2.0 * (1.0 / r2 ** 2 - 3.0 * k / r2 ** 4)) * d
            x_bar[i] += d_bar
            x_bar[j] -= d_bar
    return x_bar, k_bar


def pair_energy_args(n, seed=0):
    return np.random.default_rng(seed).normal(size=(n, 2)), 0.01


# ---------------------------------------------------------------------------
# 17. A small binary expression tree (issue #37's realistic recursive program),
#     evaluated recursively: node i (children 2i + 1 and 2i + 2) is a leaf, the row
#     leaves[i], or the sum, product or tanh(left) * right of its children.

TREE_DEPTH = 4


def tree_value(ops, leaves, i):
    op = ops[i]
    if op == 0:
        return leaves[i]
    a = tree_value(ops, leaves, 2 * i + 1)
    b = tree_value(ops, leaves, 2 * i + 2)
    if op == 1:
        return a + b
    if op == 2:
        return a * b
    return np.tanh(a) * b


def tree(leaves, w, ops):
    return np.sum(w * tree_value(ops, leaves, 0))


def tree_hand(leaves, w, ops):
    values = {}

    def forward(i):
        op = ops[i]
        if op == 0:
            values[i] = leaves[i]
        else:
            a, b = forward(2 * i + 1), forward(2 * i + 2)
            values[i] = a + b if op == 1 else a * b if op == 2 else np.tanh(a) * b
        return values[i]
    root = forward(0)
    leaves_bar = np.zeros_like(leaves)

    def backward(i, g):
        op = ops[i]
        if op == 0:
            leaves_bar[i] += g
            return
        a, b = values[2 * i + 1], values[2 * i + 2]
        if op == 1:
            backward(2 * i + 1, g)
            backward(2 * i + 2, g)
        elif op == 2:
            backward(2 * i + 1, g * b)
            backward(2 * i + 2, g * a)
        else:
            t = np.tanh(a)
            backward(2 * i + 1, g * b * (1.0 - t * t))
            backward(2 * i + 2, g * t)
    backward(0, w)
    return leaves_bar, root


def tree_args(n, seed=0):
    """(leaves, w, ops) of a full tree of TREE_DEPTH levels below its root: random
    operations at the inner nodes, leaves of n numbers."""
    rng = np.random.default_rng(seed)
    inner, nodes = 2 ** TREE_DEPTH - 1, 2 ** (TREE_DEPTH + 1) - 1
    ops = [int(op) for op in rng.integers(1, 4, inner)] + [0] * (nodes - inner)
    return rng.normal(size=(nodes, n)), rng.normal(size=n), ops


# ---------------------------------------------------------------------------
# Dask (issue #23): logistic regression (``logreg`` above) on data in chunks on a
# cluster, against dask-glm's hand-written gradient.  Both build a lazy Dask graph;
# bench/run.py computes it on a LocalCluster.


def logreg_dask_hand(w, X, y):
    # what dask-glm writes: X.T @ (sigmoid(X w) - y) / n, lazily, one graph
    z = X @ w
    return X.T @ (1.0 / (1.0 + np.exp(-z)) - y) / X.shape[0]


def logreg_dask_args(n, dim, chunk, seed=0):
    """(w, X, y) of ``logreg_args``'s distribution, with X and y Dask arrays in chunks
    of `chunk` rows, generated lazily (by whichever process computes them)."""
    import dask.array as da
    state = da.random.RandomState(seed)
    X = state.standard_normal((n, dim), chunks=(chunk, dim))
    w = np.random.default_rng(seed).standard_normal(dim) / np.sqrt(dim)
    y = (state.random_sample(n, chunks=chunk) < 1 / (1 + np.exp(-2 * (X @ w)))) * 1.0
    return 0.5 * w, X, y


# ---------------------------------------------------------------------------
# Trivial function used to measure the fixed cost of calling an s2sad gradient.


def ident(x):
    return x


# ---------------------------------------------------------------------------
# The suite.


class Workload(NamedTuple):
    name: str
    f: Callable
    hand: Callable
    args: tuple            # the benchmark instance
    wrt: object            # an index or a tuple of indices, as for s2sad.grad
    small: tuple | None = None       # arrays: a small instance for the
    #                                     finite-difference check
    torch_f: Callable | None = None  # arrays: the loss written for torch
    jvp_hand: Callable | None = None  # scalars: the tangent by hand,
    #                                     (*primals, *tangents) -> (value, tangent)
    group: str = "scalar"  # "scalar", "numpy", "array-loops", "mixed" or "dask"
    hand_tape: str = ""    # array loops: what the hand gradient keeps per step
    snapshots: int = 0     # a checkpointed loop: the snapshots it keeps (its goals are
    #                        memory k + 4 states, time 3x the hand gradient's)
    mode: str = "reverse"  # array loops: "forward" times s2sad.jvp (tangent 1 for the
    #                        first of `wrt`) against `hand`, (*args) -> (value, tangent)

    @property
    def numpy(self):
        return self.small is not None


def workloads():
    """Build the suite (the NumPy instances are generated here, seeded)."""
    return [
        Workload("babysqrt10", babysqrt10, babysqrt10_hand, (2.0,), 0,
                 jvp_hand=babysqrt10_jvp_hand),
        Workload("babysqrt1000", babysqrt1000, babysqrt1000_hand, (2.0,), 0,
                 jvp_hand=babysqrt1000_jvp_hand),
        Workload("logsin", logsin, logsin_hand, (2.0, 5.0), (0, 1),
                 jvp_hand=logsin_jvp_hand),
        Workload("lotka_volterra", lotka_volterra, lotka_volterra_hand,
                 (1.5, 1.0, 3.0, 1.0), (0, 1, 2, 3), jvp_hand=lotka_volterra_jvp_hand),
        Workload("rosenbrock_1e3", rosenbrock, rosenbrock_hand,
                 rosenbrock_args(10 ** 3), 0, small=rosenbrock_args(8, seed=1),
                 torch_f=rosenbrock_torch, group="numpy"),
        Workload("rosenbrock_1e6", rosenbrock, rosenbrock_hand,
                 rosenbrock_args(10 ** 6), 0, small=rosenbrock_args(8, seed=1),
                 torch_f=rosenbrock_torch, group="numpy"),
        Workload("mlp", mlp, mlp_hand, mlp_args(256, 784, 256, 10), (0, 1, 2, 3),
                 small=mlp_args(7, 6, 5, 3, seed=1), torch_f=mlp_torch, group="numpy"),
        Workload("logreg", logreg, logreg_hand, logreg_args(10000, 100), 0,
                 small=logreg_args(20, 4, seed=1), torch_f=logreg_torch, group="numpy"),
        *array_loops(),
        *mixed(),
        *dask_group(),
    ]


def array_loops():
    """The array-loop group (issue #21), instances built here, seeded."""
    return [
        Workload("heat", heat, heat_hand, heat_args(10 ** 5, 100), (0, 1),
                 small=heat_args(8, 5, seed=1), group="array-loops",
                 hand_tape="lap"),
        Workload("heat_checkpointed", heat_checkpointed, heat_hand, heat_args(10 ** 5, 2000),
                 (0, 1), small=heat_args(8, 30, seed=1), group="array-loops",
                 hand_tape="lap", snapshots=HEAT_SNAPSHOTS),
        Workload("heat_checkpointed_call", heat_checkpointed_call, heat_hand,
                 heat_args(10 ** 5, 2000), (0, 1), small=heat_args(8, 30, seed=1),
                 group="array-loops", hand_tape="lap", snapshots=HEAT_SNAPSHOTS),
        Workload("rnn", rnn, rnn_hand, rnn_args(200, 32, 128, 64), (0, 1, 2),
                 small=rnn_args(4, 2, 3, 2, seed=1), group="array-loops",
                 hand_tape="h"),
        Workload("jacobi", jacobi, jacobi_hand, jacobi_args(2000), (0, 1),
                 small=jacobi_args(6, seed=1), group="array-loops",
                 hand_tape="y"),
        Workload("nbody", nbody, nbody_hand, nbody_args(200, 50), (0, 1),
                 small=nbody_args(4, 3, seed=1), group="array-loops",
                 hand_tape="x, w"),
        Workload("trajectory", trajectory, trajectory_hand, trajectory_args(2000), (0,),
                 small=trajectory_args(6, seed=1), group="array-loops",
                 hand_tape="u[i]"),
        Workload("trajectory_jvp", trajectory, trajectory_jvp_hand, trajectory_args(2000),
                 (0,), small=trajectory_args(6, seed=1), group="array-loops",
                 hand_tape="nothing (forward mode)", mode="forward"),
    ]


def mixed():
    """The mixed group (issue #20): NumPy functions on Python floats; loop programs on
    small arrays (issue #37)."""
    return [
        Workload("logsin_np", logsin_np, logsin_np_hand, (2.0, 5.0), (0, 1),
                 group="mixed"),
        Workload("projectile", projectile, projectile_hand, (20.0, 0.8), (0, 1),
                 group="mixed"),
        Workload("projectile_dataclass", projectile_dataclass,
                 projectile_dataclass_hand, (Launch(20.0, 0.8),), 0, group="mixed"),
        Workload("oscillator", oscillator, oscillator_hand, (2.0, 0.5, 1.5),
                 (0, 1, 2), group="mixed"),
        Workload("rk4_tuple_state", rk4, rk4_hand, rk4_args(3), (0, 1, 2, 3),
                 group="mixed"),
        Workload("tree", tree, tree_hand, tree_args(3), (0, 1), group="mixed"),
        Workload("pair_energy", pair_energy, pair_energy_hand, pair_energy_args(20), (0, 1),
                 group="mixed"),
    ]


def dask_group():
    """The Dask group (issue #23): 200k x 50 float64 data (80 MB) in 8 chunks; empty when
    Dask is not installed. `small` is a NumPy instance for the finite differences."""
    try:
        import dask.array  # noqa: F401
        import distributed  # noqa: F401
    except ImportError:
        return []
    return [Workload("logreg_dask", logreg, logreg_dask_hand,
                     logreg_dask_args(200_000, 50, 25_000), 0,
                     small=logreg_args(20, 4, seed=1), group="dask")]
