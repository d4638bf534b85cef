"""lse: LogSumExp by the max trick, and its gradient."""
import numpy as np
import s2sad

from gradbench.evals import Function, floats, primal

BACKENDS = ("python", "numba")


def logsumexp(x):
    a = np.max(x)
    return a + np.log(np.sum(np.exp(x - a)))


def _x(input):
    return (np.array(input["x"], dtype=float),)


def functions(backend):
    return {"primal": Function(_x, primal(logsumexp, backend), float),
            "gradient": Function(_x, s2sad.grad(logsumexp, backend=backend), floats)}
