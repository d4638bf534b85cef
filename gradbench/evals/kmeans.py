"""kmeans: the k-means cost Σᵢ minⱼ |Cⱼ - Pᵢ|², and Newton's direction J H⁻¹ for the
centroids C, where J is the cost's gradient and H its Hessian, which is diagonal: H times a
vector of ones is that diagonal (forward over reverse: `s2sad.jvp` of the gradient, which
gives the gradient and that product from one pass, as GradBench's JAX tool computes it, on
either backend)."""
import numpy as np
import s2sad

from gradbench.evals import Function, floats, primal

BACKENDS = ("python", "numba")


def cost(centroids, points):
    """The squared distances as GradBench's JAX and PyTorch tools compute them,
    |P|² + |C|² - 2 P·C, the products one matrix product (n×k, no n×k×d temporary)."""
    distances = (np.sum(points * points, axis=1)[:, None]
                 + np.sum(centroids * centroids, axis=1)[None, :]
                 - 2 * (points @ centroids.T))
    return np.sum(np.min(distances, axis=1))


def cost_broadcast(centroids, points):
    """As first written: the differences broadcast to an n×k×d array (15 times `cost`'s
    CPU time at k = 100, n = 1,000, d = 8)."""
    distances = np.sum((points[:, None, :] - centroids[None, :, :]) ** 2, axis=2)
    return np.sum(np.min(distances, axis=1))


def _points_centroids(input):
    return (np.array(input["centroids"], dtype=float), np.array(input["points"], dtype=float))


def functions(backend):
    gradient = s2sad.grad(cost, backend=backend)

    def direction(centroids, points):
        g, h = s2sad.jvp(gradient, (centroids, points), (np.ones_like(centroids), None),
                         backend=backend)
        return g / h

    return {"cost": Function(_points_centroids, primal(cost, backend), float),
            "dir": Function(_points_centroids, direction, floats)}
