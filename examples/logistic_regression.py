"""Logistic regression fitted by gradient descent, with the gradient from s2sad.

The loss is written in plain NumPy: a sigmoid, the mean log-loss, and a small L2
penalty on the weights. s2sad.grad turns it into a function that returns the gradient
with respect to the weights `w` and the bias `b`; nothing is derived by hand except a
check against the closed form at the start.

Run it: python examples/logistic_regression.py
Show the generated derivative: s2sad show examples/logistic_regression.py:loss --wrt w,b
"""
import time

import numpy as np

import s2sad

N_SAMPLES, N_FEATURES = 1000, 5
STEPS, LEARNING_RATE, L2 = 300, 0.5, 1e-3
PRINT_EVERY = 30


def loss(w, b, X, y, lam):
    """Mean log-loss of the logistic model p = sigmoid(X @ w + b), plus lam/2 |w|^2."""
    z = X @ w + b
    p = 1.0 / (1.0 + np.exp(-z))
    eps = 1e-12
    log_likelihood = y * np.log(p + eps) + (1.0 - y) * np.log(1.0 - p + eps)
    return -np.mean(log_likelihood) + 0.5 * lam * np.sum(w * w)


dloss = s2sad.grad(loss, wrt=("w", "b"))    # returns (dloss/dw, dloss/db)


def make_data(rng):
    """Features from a standard normal; labels from a noisy linear rule (separable-ish)."""
    X = rng.normal(size=(N_SAMPLES, N_FEATURES))
    w_true = np.array([2.0, -3.0, 1.5, 0.0, 1.0])
    b_true = 0.5
    noise = 0.5 * rng.normal(size=N_SAMPLES)
    y = (X @ w_true + b_true + noise > 0).astype(np.float64)
    return X, y


def hand_gradient(w, b, X, y, lam):
    """The closed-form gradient, used only to check s2sad's once."""
    p = 1.0 / (1.0 + np.exp(-(X @ w + b)))
    return X.T @ (p - y) / len(y) + lam * w, np.mean(p - y)


def accuracy(w, b, X, y):
    return np.mean(((X @ w + b) > 0) == (y > 0.5))


def main():
    rng = np.random.default_rng(0)
    X, y = make_data(rng)
    print(f"data: {N_SAMPLES} samples, {N_FEATURES} features, "
          f"{int(y.sum())} positive labels")

    # Check the generated gradient twice: against the closed form, and against central
    # finite differences (s2sad.check_grad raises GradientCheckError on a mismatch).
    w_probe, b_probe = 0.1 * rng.normal(size=N_FEATURES), 0.2
    gw, gb = dloss(w_probe, b_probe, X, y, L2)
    hw, hb = hand_gradient(w_probe, b_probe, X, y, L2)
    assert np.allclose(gw, hw, rtol=1e-10, atol=1e-12) and np.isclose(gb, hb), (gw, hw)
    s2sad.check_grad(loss, w_probe, b_probe, X, y, L2, wrt=("w", "b"))
    print("gradient agrees with the closed form and with finite differences\n")

    w, b = np.zeros(N_FEATURES), 0.0
    first = loss(w, b, X, y, L2)
    start = time.perf_counter()
    print(f"{'step':>5} {'loss':>10} {'accuracy':>9}")
    for step in range(STEPS + 1):
        if step % PRINT_EVERY == 0:
            print(f"{step:5d} {loss(w, b, X, y, L2):10.6f} {accuracy(w, b, X, y):9.3f}")
        if step == STEPS:
            break
        gw, gb = dloss(w, b, X, y, L2)
        w = w - LEARNING_RATE * gw
        b = b - LEARNING_RATE * gb
    elapsed = time.perf_counter() - start

    final, acc = loss(w, b, X, y, L2), accuracy(w, b, X, y)
    print(f"\n{STEPS} steps in {elapsed:.2f} s; loss {first:.4f} -> {final:.4f}, "
          f"training accuracy {acc:.3f}")
    print("weights:", np.array2string(w, precision=2), f" bias: {b:.2f}")
    assert final < 0.5 * first, (first, final)
    assert acc > 0.9, acc

    print("\nGenerated gradient source (dloss.source):\n")
    print(dloss.source)


if __name__ == "__main__":
    main()
