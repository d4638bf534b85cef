"""det: the determinant of an ℓ×ℓ matrix by expansion by minors along the first row
(recursive, O(ℓ!)), and its gradient."""
import numpy as np
import s2sad

from gradbench.evals import Function, floats, primal

BACKENDS = ("python", "numba")


def det_by_minors(A):
    n = A.shape[0]
    if n == 1:
        return A[0, 0]
    total = 0.0
    sign = 1.0
    for j in range(n):
        minor = np.concatenate((A[1:, :j], A[1:, j + 1:]), axis=1)
        total = total + sign * A[0, j] * det_by_minors(minor)
        sign = -sign
    return total


def det(A, ell):
    return det_by_minors(A.reshape(ell, ell))


def _input(input):
    return np.array(input["A"], dtype=float), int(input["ell"])


def functions(backend):
    return {"primal": Function(_input, primal(det, backend), float),
            "gradient": Function(_input, s2sad.grad(det, backend=backend), floats)}
