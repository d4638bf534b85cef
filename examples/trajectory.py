"""Fitting a decay rate through a trajectory stored in an array, element by element.

An explicit Euler method writes each state into an array, `u[i + 1] = u[i] + h * f(u[i])`,
and the loss compares the whole trajectory with observations. s2sad writes the array in
place in the forward loop and records nothing: the reversed loop runs over
`reversed(range(...))`, reads each state back from the array (no later step changes it)
and updates the adjoint in place. Time and memory are those of a hand-written adjoint
(bench/: within 1.1x), in proportion to the number of steps; forward mode (`jvp`) too.

Run it: python examples/trajectory.py
Show the generated gradient: s2sad show examples/trajectory.py:loss
"""
import time
import tracemalloc

import numpy as np

import s2sad

H = 0.01


def loss(k, observed):
    """Squared misfit of the Euler trajectory of u' = -k u^2, u(0) = 1, with `observed`."""
    n = len(observed)
    u = np.zeros(n)
    u[0] = 1.0
    for i in range(n - 1):
        u[i + 1] = u[i] - H * k * u[i] ** 2
    return np.sum((u - observed) ** 2)


dloss = s2sad.value_and_grad(loss)


def main():
    t = H * np.arange(2001)
    observed = 1.0 / (1.0 + 0.7 * t)          # the exact solution for k = 0.7
    k = 1.5
    for step in range(100):                     # gradient descent on k
        value, g = dloss(k, observed)
        k -= 0.01 * g
    print(f"fitted k = {k:.4f} (data made with k = 0.7), loss {value:.2e}")
    assert abs(k - 0.7) < 0.01, k

    # the gradient against a central difference
    h = 1e-6
    fd = (loss(1.3 + h, observed) - loss(1.3 - h, observed)) / (2 * h)
    _, g = dloss(1.3, observed)
    print(f"d loss / dk at 1.3: s2sad {g:.10f}, central difference {fd:.10f}")
    assert abs(g - fd) <= 1e-6 * max(1.0, abs(fd)), (g, fd)

    # time and memory grow with the steps, not with their square
    print(f"\n{'steps':>7} {'gradient ms':>12} {'peak MB':>9}")
    for n in (1000, 4000, 16000):
        data = 1.0 / (1.0 + 0.7 * H * np.arange(n))
        dloss(1.0, data)
        start = time.perf_counter()
        dloss(1.0, data)
        ms = 1e3 * (time.perf_counter() - start)
        tracemalloc.start()
        dloss(1.0, data)
        peak = tracemalloc.get_traced_memory()[1] / 1e6
        tracemalloc.stop()
        print(f"{n:7d} {ms:12.1f} {peak:9.2f}")
    print("\nThe gradient that ran (the code for these argument types):\n")
    print(dloss.source)


if __name__ == "__main__":
    main()
