"""llsq: the linear least squares objective of cmpad's llsq_obj, and its gradient:
y(x) = ½ Σᵢ (sᵢ - Σⱼ xⱼ tᵢʲ)², tᵢ = -1 + 2i/(n-1), sᵢ = sign(tᵢ)."""
import numpy as np
import s2sad

from gradbench.evals import Function, floats, primal

BACKENDS = ("python", "numba")


def llsq(x, n):
    t = -1.0 + np.arange(n) * 2.0 / (n - 1)
    powers = t[:, None] ** np.arange(x.shape[0])[None, :]
    residual = np.sign(t) - powers @ x
    return 0.5 * np.sum(residual * residual)


def _x_n(input):
    return np.array(input["x"], dtype=float), int(input["n"])


def functions(backend):
    return {"primal": Function(_x_n, primal(llsq, backend), float),
            "gradient": Function(_x_n, s2sad.grad(llsq, backend=backend), floats)}
