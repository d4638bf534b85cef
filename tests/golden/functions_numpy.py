"""Representative NumPy functions whose generated derivative source is pinned."""
import numpy as np


def logistic_loss(w, X, y):
    z = X @ w
    return np.mean(np.logaddexp(0.0, z) - y * z)


def mlp_loss(W1, b1, W2, b2, X, Y):
    h = np.tanh(X @ W1 + b1)
    logits = h @ W2 + b2
    m = logits.max(axis=1, keepdims=True)
    lse = m + np.log(np.exp(logits - m).sum(axis=1, keepdims=True))
    return -(Y * (logits - lse)).sum() / X.shape[0]


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def smooth_in_place(x):
    y = x.copy()
    for i in range(1, len(x) - 1):
        y[i] = 0.5 * x[i] + 0.25 * (x[i - 1] + x[i + 1])
    return np.sum(y * y)


def append_loop(x, n=4):
    terms = []
    p = 1.0
    for k in range(n):
        p = p * x / (k + 1)
        terms.append(p)
    return np.sum(np.array(terms))


def heat(u0, kappa, steps=5):
    # loop-carried array state: every temporary has the shape of u0, so the tape holds
    # `lap` alone (what kappa's adjoint reads), as a hand-written gradient does
    u = u0
    for i in range(steps):
        lap = np.roll(u, 1) - 2.0 * u + np.roll(u, -1)
        u = u + kappa * lap
    return np.sum(u * u)


def relax(b, d, omega=0.8, tol=1e-10):
    # a `while` loop with a data-dependent stop: in the reversed loop the adjoints are
    # summed in place, and the body's dead arrays are deleted after their last use
    x = np.zeros_like(b)
    err = np.inf
    while err > tol:
        y = (b - 0.1 * np.roll(x, 1)) / d
        dx = omega * (y - x)
        x = x + dx
        err = np.max(np.abs(dx))
    return np.sum(x * x)


def tanh_steps(u0, w, steps=4):
    # the tape holds each state (tanh's adjoint reads its output): no step writes into it
    u = u0 * 1.0
    for i in range(steps):
        u = np.tanh(u * w + 0.1)
    return np.sum(u * u)
