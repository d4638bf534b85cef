"""gmm: the log posterior of a Gaussian mixture with a Wishart prior on its precision
matrices Qₖᵀ Qₖ (ADBench's GMM with GradBench's three fixes), in the README's simplified form,
and its gradient with respect to alpha, mu, q and l."""
import math

import numpy as np
import s2sad

from gradbench.evals import Function, floats, primal

BACKENDS = ("python", "numba")


def logsumexp(v, axis):
    top = np.max(v, axis=axis, keepdims=True)
    return np.log(np.sum(np.exp(v - top), axis=axis)) + np.squeeze(top, axis=axis)


def log_multigamma(a, d):
    # (a loop, not `sum(... for j in ...)`: Numba cannot compile a generator expression)
    total = 0.25 * d * (d - 1) * math.log(math.pi)
    for j in range(1, d + 1):
        total = total + math.lgamma(a + 0.5 * (1 - j))
    return total


def lower_columns(d):
    """The rows and columns of a d×d matrix's strictly lower part, column by column."""
    rows = [i for j in range(d) for i in range(j + 1, d)]
    cols = [j for j in range(d) for i in range(j + 1, d)]
    return np.array(rows, dtype=int), np.array(cols, dtype=int)


def objective(alpha, mu, q, strict, x, m, gamma, rows, cols):
    """`strict` is the README's l: each component's strictly lower part, column by column.
    The components lead the axes, so that Qₖ(xᵢ - μₖ) for all i is one matrix product per
    component (GradBench's JAX and PyTorch tools write it as an einsum over (n, k, d))."""
    n, d = x.shape
    Q = precision_factors(q, strict, rows, cols)
    centred = x[None, :, :] - mu[:, None, :]                        # (k, n, d)
    Qx = centred @ np.transpose(Q, (0, 2, 1))                       # (k, n, d)
    sum_q = np.sum(q, axis=1)
    beta = (alpha + sum_q)[:, None] - 0.5 * np.sum(Qx * Qx, axis=2)     # (k, n)
    likelihood = (-n * (0.5 * d * math.log(2 * math.pi) + logsumexp(alpha, 0))
                  + np.sum(logsumexp(beta, 0)))
    return likelihood + wishart_prior(Q, sum_q, m, gamma)


def objective_einsum(alpha, mu, q, strict, x, m, gamma, rows, cols):
    """As first written (the numba backend's: Numba's matmul takes no stacks of
    matrices): the points lead the axes, and Qₖ(xᵢ - μₖ) is NumPy's `einsum` over
    (n, k, d), which makes no matrix product of it (about twice `objective`'s CPU time
    at d = 10, k = 25, n = 1,000, and its gradient's)."""
    n, d = x.shape
    Q = precision_factors(q, strict, rows, cols)
    centred = x[:, None, :] - mu[None, :, :]                       # (n, k, d)
    Qx = np.einsum("kij,nkj->nki", Q, centred)
    sum_q = np.sum(q, axis=1)
    beta = alpha + sum_q - 0.5 * np.sum(Qx * Qx, axis=2)            # (n, k)
    likelihood = (-n * (0.5 * d * math.log(2 * math.pi) + logsumexp(alpha, 0))
                  + np.sum(logsumexp(beta, 1)))
    return likelihood + wishart_prior(Q, sum_q, m, gamma)


def precision_factors(q, strict, rows, cols):
    """Each component's Q: exp(q) on the diagonal, `strict` below it, column by column."""
    k, d = q.shape
    lower = np.zeros((k, d, d))
    lower[:, rows, cols] = strict
    return lower + np.exp(q)[:, :, None] * np.eye(d)


def wishart_prior(Q, sum_q, m, gamma):
    """The README's Wishart prior on the components' precision factors `Q`."""
    k, d = Q.shape[0], Q.shape[1]
    dof = d + m + 1
    return (k * (dof * d * math.log(gamma / math.sqrt(2)) - log_multigamma(0.5 * dof, d))
            - 0.5 * gamma * gamma * np.sum(Q * Q) + m * np.sum(sum_q))


def _input(input):
    d, k = int(input["d"]), int(input["k"])
    rows, cols = lower_columns(d)
    return (np.array(input["alpha"], dtype=float), np.array(input["mu"], dtype=float),
            np.array(input["q"], dtype=float),
            np.array(input["l"], dtype=float).reshape(k, d * (d - 1) // 2),
            np.array(input["x"], dtype=float), int(input["m"]), float(input["gamma"]),
            rows, cols)


def _jacobian(parts):
    alpha, mu, q, strict = parts
    return {"alpha": floats(alpha), "mu": floats(mu), "q": floats(q), "l": floats(strict)}


def functions(backend):
    f = objective if backend == "python" else objective_einsum
    return {"objective": Function(_input, primal(f, backend), float),
            "jacobian": Function(_input, s2sad.grad(f, wrt=(0, 1, 2, 3),
                                                    backend=backend), _jacobian)}
