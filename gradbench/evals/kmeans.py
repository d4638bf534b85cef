"""kmeans: the k-means cost Σᵢ minⱼ |Cⱼ - Pᵢ|², and Newton's direction J H⁻¹ for the
centroids C, where J is the cost's gradient and H its Hessian, which is diagonal: H times a
vector of ones is that diagonal (forward over reverse, `s2sad.hvp`)."""
import numpy as np
import s2sad

from gradbench.evals import Function, floats, primal

BACKENDS = ("python", "numba")


def cost(centroids, points):
    distances = np.sum((points[:, None, :] - centroids[None, :, :]) ** 2, axis=2)
    return np.sum(np.min(distances, axis=1))


def _points_centroids(input):
    return (np.array(input["centroids"], dtype=float), np.array(input["points"], dtype=float))


def functions(backend):
    gradient = s2sad.grad(cost, backend=backend)
    hessian_times = s2sad.hvp(cost, backend=backend)

    def direction(centroids, points):
        return gradient(centroids, points) / hessian_times(centroids, points,
                                                           np.ones_like(centroids))

    return {"cost": Function(_points_centroids, primal(cost, backend), float),
            "dir": Function(_points_centroids, direction, floats)}
