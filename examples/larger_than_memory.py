"""Logistic regression fitted to a dataset larger than memory, with Dask.

The dataset (by default 20 GB: 25 million samples of 100 features) is never stored
anywhere: `dask.array.random` describes it, chunk by chunk, and each epoch the workers
of a local Dask cluster generate the chunks again, compute their part of the loss and
of the gradient, and drop them. The loss is plain NumPy; `s2sad.value_and_grad` turns
it into NumPy code that, called with Dask arrays, builds one lazy Dask graph for the
loss and its gradient. The client (this process) only ever holds the weights.

Run it: python examples/larger_than_memory.py              # 20 GB, some minutes
        python examples/larger_than_memory.py --gb 0.01    # 10 MB, seconds
Show the generated derivative: s2sad show examples/larger_than_memory.py:loss --wrt w,b
See docs/larger_than_memory.md.
"""
import argparse
import math
import time

import dask
import dask.array as da
import distributed
import numpy as np

import s2sad

N_FEATURES, CHUNK_ROWS = 100, 100_000        # a chunk of X: 80 MB
LEARNING_RATE, L2 = 2.0, 1e-4


def loss(w, b, X, y):
    """Mean log-loss of p = sigmoid(X @ w + b) against labels y in {0, 1}, plus an L2
    penalty; log(1 + e^z) is written `np.logaddexp(0, z)`, which cannot overflow."""
    z = X @ w + b
    return np.mean(np.logaddexp(0.0, z) - y * z) + 0.5 * L2 * np.sum(w * w)


loss_and_gradient = s2sad.value_and_grad(loss, wrt=("w", "b"))


def make_data(gigabytes, seed=0):
    """X (float64, `gigabytes` of it) and labels y drawn from a logistic model with known
    weights, both lazy Dask arrays; and those weights."""
    n = max(4, int(gigabytes * 1e9 / (8 * N_FEATURES)))
    rows = min(CHUNK_ROWS, math.ceil(n / 4))
    state = da.random.RandomState(seed)
    X = state.standard_normal((n, N_FEATURES), chunks=(rows, N_FEATURES))
    w_true = np.random.default_rng(seed).normal(size=N_FEATURES) / np.sqrt(N_FEATURES)
    p = 1.0 / (1.0 + np.exp(-(X @ w_true + 0.5)))
    y = (state.random_sample(n, chunks=rows) < p) * 1.0
    return X, y, w_true


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gb", type=float, default=20.0,
                        help="size of the dataset in GB (default %(default)s)")
    parser.add_argument("--epochs", type=int, default=8, help="default %(default)s")
    parser.add_argument("--workers", type=int, default=2, help="default %(default)s")
    opts = parser.parse_args()

    X, y, w_true = make_data(opts.gb)
    print(f"X: {X.shape[0]:,} x {X.shape[1]} float64, {X.nbytes / 1e9:.3g} GB in "
          f"{X.numblocks[0]} chunks, generated lazily by the workers each epoch")
    w, b = np.zeros(N_FEATURES), 0.0
    with distributed.LocalCluster(n_workers=opts.workers, threads_per_worker=1,
                                  processes=True, dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        for epoch in range(1, opts.epochs + 1):
            start = time.perf_counter()
            value, (w_bar, b_bar) = loss_and_gradient(w, b, X, y)   # a graph, not values
            futures = client.compute([value, w_bar, b_bar])
            distributed.progress(futures)                           # a progress bar
            value, w_bar, b_bar = client.gather(futures)
            w, b = w - LEARNING_RATE * w_bar, b - LEARNING_RATE * b_bar
            print(f"\nepoch {epoch}: loss {value:.6f} ({time.perf_counter() - start:.1f} s)")
    error = np.linalg.norm(w - w_true) / np.linalg.norm(w_true)
    print(f"relative distance of the fitted weights to the true ones: {error:.3f}; "
          f"bias {b:.3f} (true: 0.5)")
    assert np.isfinite(value) and dask.is_dask_collection(X)


if __name__ == "__main__":
    main()
