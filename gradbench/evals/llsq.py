"""llsq: the linear least squares objective of cmpad's llsq_obj, and its gradient:
y(x) = ½ Σᵢ (sᵢ - Σⱼ xⱼ tᵢʲ)², tᵢ = -1 + 2i/(n-1), sᵢ = sign(tᵢ)."""
import numpy as np
import s2sad

from gradbench.evals import Function, floats, primal

BACKENDS = ("python", "numba")


def llsq(x, n):
    """The powers tᵢʲ as GradBench's JAX tool makes them, cumulative products of tᵢ (one
    multiplication each); x₀'s are all 1."""
    t = -1.0 + np.arange(n) * 2.0 / (n - 1)
    powers = np.cumprod(np.broadcast_to(t[:, None], (n, x.shape[0] - 1)), axis=1)
    residual = np.sign(t) - x[0] - powers @ x[1:]
    return 0.5 * np.sum(residual * residual)


def llsq_power(x, n):
    """As first written: NumPy's elementwise `power`, a `pow` call for each of the n×m
    powers (16 times the CPU time of `llsq`'s products at m = 128, n = 1,024)."""
    t = -1.0 + np.arange(n) * 2.0 / (n - 1)
    powers = t[:, None] ** np.arange(x.shape[0])[None, :]
    residual = np.sign(t) - powers @ x
    return 0.5 * np.sum(residual * residual)


def _x_n(input):
    return np.array(input["x"], dtype=float), int(input["n"])


def functions(backend):
    # (on the numba backend too: s2sad gives Numba's np.cumprod an axis)
    return {"primal": Function(_x_n, primal(llsq, backend), float),
            "gradient": Function(_x_n, s2sad.grad(llsq, backend=backend), floats)}
