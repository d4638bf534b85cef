"""ba: bundle adjustment (ADBench's): reprojection errors of p observations of m points by n
cameras (Rodrigues rotation, radial distortion) and weight errors 1 - w², and the Jacobian,
block-sparse: each observation's two errors depend only on its camera's 11 parameters, its
point's 3 coordinates and its weight. The inputs are one camera, point, weight and feature
repeated (GradBench's duplication, not exploited here), and the outputs are encoded as GradBench's
C++ reference encodes them, which its validator checks: the errors' first elements and counts,
and the CSR Jacobian's first 30 entries and last one."""
import functools

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
    return {"objective": Function(_input, primal(objective, backend), _errors),
            "jacobian": Function(_input, functools.partial(jacobian, backend=backend),
                                 _sparse)}
