"""ba: bundle adjustment (ADBench's): reprojection errors of p observations of m points by n
cameras (Rodrigues rotation, radial distortion) and weight errors 1 - w², and the Jacobian,
block-sparse: each observation's two errors depend only on its camera's 11 parameters, its
point's 3 coordinates and its weight. The inputs are one camera, point, weight and feature
repeated (GradBench's duplication, not exploited here), and the outputs are encoded as GradBench's
C++ reference encodes them, which its validator checks: the errors' first elements and counts,
and the CSR Jacobian's first 30 entries and last one.

On the numba backend the eval is the loop over observations its README describes ("mostly a
bunch of scalar control flow") and ADBench's implementations write: each observation's error
computed a coordinate at a time (`observation_error`), its Jacobian's two rows two gradients
of it, in a loop compiled by Numba (`jacobian_loops`). The vectorised form above is the one
for NumPy (the Python backend)."""
import functools
import math

import numpy as np
import s2sad

from gradbench.evals import Function, floats, primal

BACKENDS = ("python", "numba")
CAMERA = 11


def rotate(rot, X):
    """Rodrigues' rotation of each row of X by the axis-angle rows of rot."""
    sqtheta = np.sum(rot * rot, axis=1, keepdims=True)
    nonzero = sqtheta != 0
    theta = np.sqrt(np.where(nonzero, sqtheta, 1.0))
    w = rot / theta
    cos = np.cos(theta)
    rotated = (X * cos + np.cross(w, X) * np.sin(theta)
               + w * np.sum(w * X, axis=1, keepdims=True) * (1 - cos))
    return np.where(nonzero, rotated, X + np.cross(rot, X))


def project(cams, X):
    Xcam = rotate(cams[:, 0:3], X - cams[:, 3:6])
    proj = Xcam[:, 0:2] / Xcam[:, 2:3]
    rsq = np.sum(proj * proj, axis=1, keepdims=True)
    distortion = 1 + cams[:, 9:10] * rsq + cams[:, 10:11] * rsq * rsq
    return proj * distortion * cams[:, 6:7] + cams[:, 7:9]


def reprojection_error(cams, X, w, feats):
    """The two errors of each observation, of its own camera, point and weight rows."""
    return w[:, None] * (project(cams, X) - feats)


def objective(cams, X, w, feats, obs):
    return (reprojection_error(cams[obs[:, 0]], X[obs[:, 1]], w, feats), 1 - w * w)


def jacobian(cams, X, w, feats, obs, backend="python"):
    """The Jacobian of (reprojection errors, weight errors) with respect to (cams, X, w) in
    CSR form (row pointers, columns, values), rows ordered as the errors, each observation's
    block from two pullbacks of one vjp over all observations (s2sad's `backend`)."""
    n, m, p = cams.shape[0], X.shape[0], w.shape[0]
    _, pullback = s2sad.vjp(reprojection_error, cams[obs[:, 0]], X[obs[:, 1]], w, feats,
                            backend=backend)
    blocks = []
    for row in (0, 1):
        unit = np.zeros((p, 2))
        unit[:, row] = 1.0
        d_cams, d_X, d_w, _ = pullback(unit)
        blocks.append(np.concatenate((d_cams, d_X, d_w[:, None]), axis=1))
    values = np.concatenate((np.stack(blocks, axis=1).ravel(), -2 * w))
    block_cols = np.concatenate((CAMERA * obs[:, :1] + np.arange(CAMERA),
                                 CAMERA * n + 3 * obs[:, 1:2] + np.arange(3),
                                 CAMERA * n + 3 * m + np.arange(p)[:, None]), axis=1)
    cols = np.concatenate((np.repeat(block_cols, 2, axis=0).ravel(),
                           CAMERA * n + 3 * m + np.arange(p)))
    rows = np.concatenate((np.arange(2 * p + 1) * (CAMERA + 4),
                           2 * p * (CAMERA + 4) + np.arange(1, p + 1)))
    return rows, cols, values


def observation_error(cam, X, w, feat, row):
    """Error `row` (0: x, 1: y) of the observation of point `X` by camera `cam` (its 11
    parameters), of weight `w` and feature `feat`, as ADBench's C++ (computeReprojError)
    computes it, a coordinate at a time."""
    x0 = X[0] - cam[3]
    x1 = X[1] - cam[4]
    x2 = X[2] - cam[5]
    r0 = cam[0]
    r1 = cam[1]
    r2 = cam[2]
    sqtheta = r0 * r0 + r1 * r1 + r2 * r2
    if sqtheta != 0:
        theta = math.sqrt(sqtheta)
        cos = math.cos(theta)
        sin = math.sin(theta)
        a0 = r0 / theta
        a1 = r1 / theta
        a2 = r2 / theta
        tmp = (a0 * x0 + a1 * x1 + a2 * x2) * (1 - cos)
        y0 = x0 * cos + (a1 * x2 - a2 * x1) * sin + a0 * tmp
        y1 = x1 * cos + (a2 * x0 - a0 * x2) * sin + a1 * tmp
        y2 = x2 * cos + (a0 * x1 - a1 * x0) * sin + a2 * tmp
    else:
        y0 = x0 + (r1 * x2 - r2 * x1)
        y1 = x1 + (r2 * x0 - r0 * x2)
        y2 = x2 + (r0 * x1 - r1 * x0)
    p0 = y0 / y2
    p1 = y1 / y2
    rsq = p0 * p0 + p1 * p1
    distortion = 1 + cam[9] * rsq + cam[10] * rsq * rsq
    if row == 0:
        return w * (p0 * distortion * cam[6] + cam[7] - feat[0])
    return w * (p1 * distortion * cam[6] + cam[8] - feat[1])


def objective_loops(cams, X, w, feats, obs):
    """`objective`, an observation at a time (the numba backend's)."""
    p = w.shape[0]
    reproj = np.empty((p, 2))
    for i in range(p):
        for row in range(2):
            reproj[i, row] = observation_error(cams[obs[i, 0]], X[obs[i, 1]], w[i], feats[i],
                                               row)
    return reproj, 1 - w * w


#: grad(observation_error, wrt=(0, 1, 2), backend="numba"), made by `functions("numba")`
d_observation_error = None


def jacobian_loops(cams, X, w, feats, obs):
    """`jacobian` (rows, columns and values of the CSR Jacobian), an observation at a time:
    its two rows the gradients of its two errors with respect to its camera, point and
    weight (compiled by Numba, which calls `d_observation_error` from it)."""
    n, m, p = cams.shape[0], X.shape[0], w.shape[0]
    # indices of 32 bits, as the C++ reference's (`std::vector<int>`): with 64, the three
    # arrays made at each call (16 MB on ba1) are more than the C library keeps when they
    # are freed, and each call faulted its pages in again (8 of ba1's 18 ms)
    rows = np.empty(3 * p + 1, dtype=np.int32)
    cols = np.empty(2 * p * (CAMERA + 4) + p, dtype=np.int32)
    values = np.empty(2 * p * (CAMERA + 4) + p)
    k = 0
    for i in range(p):
        c = obs[i, 0]
        j = obs[i, 1]
        for row in range(2):
            rows[2 * i + row] = k
            d_cam, d_X, d_w = d_observation_error(cams[c], X[j], w[i], feats[i], row)
            for a in range(CAMERA):
                cols[k] = CAMERA * c + a
                values[k] = d_cam[a]
                k += 1
            for a in range(3):
                cols[k] = CAMERA * n + 3 * j + a
                values[k] = d_X[a]
                k += 1
            cols[k] = CAMERA * n + 3 * m + i
            values[k] = d_w
            k += 1
    for i in range(p):
        rows[2 * p + i] = k
        cols[k] = CAMERA * n + 3 * m + i
        values[k] = -2 * w[i]
        k += 1
    rows[3 * p] = k
    return rows, cols, values


def _input(input):
    n, m, p = int(input["n"]), int(input["m"]), int(input["p"])
    cams = np.tile(np.array(input["cam"], dtype=float), (n, 1))
    X = np.tile(np.array(input["x"], dtype=float), (m, 1))
    w = np.full(p, float(input["w"]))
    feats = np.tile(np.array(input["feat"], dtype=float), (p, 1))
    obs = np.stack((np.arange(p) % n, np.arange(p) % m), axis=1)
    return cams, X, w, feats, obs


def _errors(errors):
    reproj, w_err = errors
    return {"reproj_error": {"elements": floats(reproj[0]), "repeated": int(reproj.shape[0])},
            "w_err": {"element": float(w_err[0]), "repeated": int(w_err.shape[0])}}


def _sparse(csr):
    rows, cols, values = csr
    head = 2 * (CAMERA + 4)
    return {"rows": [int(r) for r in (*rows[:head], rows[-1])],
            "cols": [int(c) for c in (*cols[:head], cols[-1])],
            "vals": floats(np.concatenate((values[:head], values[-1:])))}


def functions(backend):
    if backend == "numba":
        global d_observation_error
        from s2sad.backends import NUMBA
        d_observation_error = s2sad.grad(observation_error, wrt=(0, 1, 2), backend="numba")
        return {"objective": Function(_input, primal(objective_loops, backend), _errors),
                "jacobian": Function(_input, NUMBA.njit_user(jacobian_loops, {}), _sparse)}
    return {"objective": Function(_input, primal(objective, backend), _errors),
            "jacobian": Function(_input, functools.partial(jacobian, backend=backend),
                                 _sparse)}
