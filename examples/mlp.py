"""A small neural network trained on three interleaved spirals, with gradients from s2sad.

The model is a multilayer perceptron with one tanh hidden layer and a softmax output,
written in plain NumPy. The loss is the mean softmax cross-entropy, computed with a
max-shifted log-sum-exp so that large logits do not overflow. One call to s2sad.grad
gives the gradient with respect to all four parameter arrays. Training is full-batch
gradient descent with momentum.

Run it: python examples/mlp.py
Show the generated derivative: s2sad show examples/mlp.py:loss --wrt W1,b1,W2,b2
"""
import time

import numpy as np

import s2sad

CLASSES, PER_CLASS, HIDDEN = 3, 100, 32
STEPS, LEARNING_RATE, MOMENTUM = 2000, 0.1, 0.9
PRINT_EVERY = 200
PARAMS = ("W1", "b1", "W2", "b2")


def loss(W1, b1, W2, b2, X, labels):
    """Mean cross-entropy of softmax(tanh(X @ W1 + b1) @ W2 + b2) against `labels`."""
    H = np.tanh(X @ W1 + b1)
    logits = H @ W2 + b2
    m = np.max(logits, axis=1, keepdims=True)
    shifted = logits - m
    log_probs = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
    return -np.mean(log_probs[np.arange(X.shape[0]), labels])


dloss = s2sad.grad(loss, wrt=PARAMS)    # a tuple: (dW1, db1, dW2, db2)


def predict(W1, b1, W2, b2, X):
    return np.argmax(np.tanh(X @ W1 + b1) @ W2 + b2, axis=1)


def spirals(rng):
    """CLASSES arms of a spiral in the plane, with a little noise; labels 0..CLASSES-1."""
    X, labels = [], []
    for k in range(CLASSES):
        r = np.linspace(0.05, 1.0, PER_CLASS)
        theta = np.linspace(0.0, 6.0, PER_CLASS) + 2 * np.pi * k / CLASSES
        theta = theta + 0.2 * rng.normal(size=PER_CLASS)
        X.append(np.stack([r * np.sin(theta), r * np.cos(theta)], axis=1))
        labels.append(np.full(PER_CLASS, k))
    return np.concatenate(X), np.concatenate(labels)


def main():
    rng = np.random.default_rng(0)
    X, labels = spirals(rng)
    params = [rng.normal(size=(2, HIDDEN)), np.zeros(HIDDEN),
              rng.normal(size=(HIDDEN, CLASSES)) / np.sqrt(HIDDEN), np.zeros(CLASSES)]
    print(f"data: {len(X)} points in {CLASSES} spirals; "
          f"model: 2 -> {HIDDEN} (tanh) -> {CLASSES} (softmax)")

    # Compare with central finite differences on a subset of the data first.
    s2sad.check_grad(loss, *params, X[::10], labels[::10], wrt=PARAMS, rtol=1e-4)
    print("gradient agrees with finite differences\n")

    velocity = [np.zeros_like(p) for p in params]
    first = loss(*params, X, labels)
    start = time.perf_counter()
    print(f"{'step':>5} {'loss':>9} {'accuracy':>9}")
    for step in range(STEPS + 1):
        if step % PRINT_EVERY == 0:
            acc = np.mean(predict(*params, X) == labels)
            print(f"{step:5d} {loss(*params, X, labels):9.5f} {acc:9.3f}")
        if step == STEPS:
            break
        grads = dloss(*params, X, labels)
        velocity = [MOMENTUM * v - LEARNING_RATE * g for v, g in zip(velocity, grads)]
        params = [p + v for p, v in zip(params, velocity)]
    elapsed = time.perf_counter() - start

    final = loss(*params, X, labels)
    acc = np.mean(predict(*params, X) == labels)
    print(f"\n{STEPS} steps in {elapsed:.2f} s ({1e3 * elapsed / STEPS:.2f} ms a step); "
          f"loss {first:.3f} -> {final:.3f}, training accuracy {acc:.3f}")
    assert final < 0.5 * first, (first, final)
    assert acc > 0.9, acc


if __name__ == "__main__":
    main()
