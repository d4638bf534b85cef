"""Programs written the way people write them, not the way s2sad's docs suggest (#19):
dict and dataclass parameters, models as classes, layers as lists of tuples,
integrators that take functions, simulations that store their states, helpers with
keyword arguments. tests/test_realistic.py differentiates each against central
differences."""
import dataclasses
import functools
import math
import typing
import warnings

import numpy as np


# -- a two-layer network with dict parameters, trained on a batch -------------------------
def mlp(params, X):
    h = X
    for i, (W, b) in enumerate(zip(params["W"], params["b"])):
        h = h @ W + b
        if i < len(params["W"]) - 1:
            h = np.tanh(h)
    return h


def mlp_loss(params, X, y):
    pred = mlp(params, X)
    return np.mean((pred[:, 0] - y) ** 2)


# -- a model as a class, with a method that calls another -----------------------------------
class Logistic:
    def __init__(self, l2):
        self.l2 = l2

    def logits(self, w, X):
        return X @ w

    def loss(self, w, X, y):
        z = self.logits(w, X)
        nll = np.mean(np.logaddexp(0.0, z) - y * z)
        return nll + 0.5 * self.l2 * np.sum(w * w)


MODEL = Logistic(0.1)


def logistic_objective(w, X, y):
    return MODEL.loss(w, X, y)


# -- dataclass parameters and a loss with keyword arguments ---------------------------------
@dataclasses.dataclass
class Gaussian:
    mu: float
    log_sigma: float


def nll(params, data, *, jitter=1e-9):
    sigma = math.exp(params.log_sigma) + jitter
    total = 0.0
    for x in data:
        z = (x - params.mu) / sigma
        total = total + 0.5 * z * z + math.log(sigma)
    return total / len(data)


def gaussian_fit(mu, log_sigma):
    data = [0.3, -1.2, 0.8, 2.1]
    return nll(Gaussian(mu, log_sigma), data, jitter=0.0)


# -- an integrator that takes a function ----------------------------------------------------
def simpson(f, a, b, n=8):
    h = (b - a) / n
    s = f(a) + f(b)
    for i in range(1, n):
        weight = 4.0 if i % 2 == 1 else 2.0
        s = s + weight * f(a + i * h)
    return s * h / 3.0


def expected_energy(k, c):
    return simpson(lambda t: k * t * t + math.sin(c * t), 0.0, 1.0)


# -- a simulation that stores its states ----------------------------------------------------
def lotka_volterra(alpha, beta, steps=40, dt=0.05):
    prey, pred = 1.0, 0.5
    states = []
    for _ in range(steps):
        dprey = alpha * prey - beta * prey * pred
        dpred = 0.4 * prey * pred - 0.6 * pred
        prey, pred = prey + dt * dprey, pred + dt * dpred
        states.append((prey, pred))
    return sum(p * q for p, q in states) / len(states)


# -- polynomial features with a partial and a comprehension ---------------------------------
def _feature(x, power, scale=1.0):
    return scale * x ** power


def poly_regression(coeffs, xs, ys):
    features = [functools.partial(_feature, power=k) for k in range(3)]
    err = 0.0
    for x, y in zip(xs, ys):
        pred = sum(c * f(x) for c, f in zip(coeffs, features))
        err = err + (pred - y) ** 2
    return err


def poly_objective(c0, c1, c2):
    return poly_regression([c0, c1, c2], [0.0, 0.5, 1.0, 1.5], [1.0, 1.4, 2.2, 3.1])


# -- a stable softmax cross-entropy with context managers and a try -------------------------
def cross_entropy(logits, label):
    with np.errstate(over="ignore"):
        shifted = logits - np.max(logits)
    try:
        log_z = np.log(np.sum(np.exp(shifted)))
    except FloatingPointError:
        log_z = 0.0
    return log_z - shifted[label]


def softmax_batch(W, X, labels):
    total = 0.0
    for row, label in zip(X, labels):
        total = total + cross_entropy(row @ W, label)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return total / len(labels)


# -- a recurrent cell over a sequence, the state carried in a loop over rows ----------------
def rnn_final(params, xs):
    h = np.zeros(3)
    for x in xs:
        h = np.tanh(params["Wh"] @ h + params["Wx"] @ x + params["b"])
    return np.sum(h * h)


# -- records built inside the function --------------------------------------------------------
@dataclasses.dataclass
class Spring:
    k: float
    rest: float = 1.0


class Point(typing.NamedTuple):
    x: float
    y: float


def energy(spring, p):
    stretch = math.hypot(p.x, p.y) - spring.rest
    return 0.5 * spring.k * stretch * stretch + spring.k * p.x
