"""ht: hand tracking (ADBench's): a skinned hand model posed by 26 angles theta, and the
errors between observed points and their corresponding model vertices (`simple`) or points on
model triangles at barycentric coordinates us (`complicated`); the Jacobian of the errors with
respect to theta (and us), in forward mode: 26 columns (and 2, each error depending on its
own point's u only), against thousands of rows. The numerics follow GradBench's C++
reference, which its validator uses.

The Python backend differentiates `objective`, vectorised NumPy (the bones' transforms
stacked, one matrix product of three axes); the numba backend `objective_by_bone`, the
same model as a Numba user writes it (a loop over the bones, rotations written element by
element), with `jacfwd(..., backend="numba")` and `jvp(..., backend="numba")`."""
import numpy as np
import s2sad

from gradbench.evals import Function, floats, primal

BACKENDS = ("python", "numba")


def angle_axis_to_rotation_matrix(angle_axis):
    norm = np.sqrt(np.sum(angle_axis * angle_axis))
    if norm < 0.0001:
        return np.eye(3)
    x = angle_axis[0] / norm
    y = angle_axis[1] / norm
    z = angle_axis[2] / norm
    s = np.sin(norm)
    c = np.cos(norm)
    return np.array([[x * x + (1 - x * x) * c, x * y * (1 - c) - z * s, x * z * (1 - c) + y * s],
                     [x * y * (1 - c) + z * s, y * y + (1 - y * y) * c, y * z * (1 - c) - x * s],
                     [x * z * (1 - c) - y * s, z * y * (1 - c) + x * s, z * z + (1 - z * z) * c]])


def euler_angles_to_rotation_matrix(xzy):
    tx, ty, tz = xzy[0], xzy[2], xzy[1]
    Rx = np.array([[1.0, 0.0, 0.0], [0.0, np.cos(tx), -np.sin(tx)], [0.0, np.sin(tx), np.cos(tx)]])
    Ry = np.array([[np.cos(ty), 0.0, np.sin(ty)], [0.0, 1.0, 0.0], [-np.sin(ty), 0.0, np.cos(ty)]])
    Rz = np.array([[np.cos(tz), -np.sin(tz), 0.0], [np.sin(tz), np.cos(tz), 0.0], [0.0, 0.0, 1.0]])
    return Rz @ Ry @ Rx


def to_pose_params(theta, bones):
    """theta's 26 values as a 3×(bones + 3) matrix: global rotation, scale, translation, then
    one column of Euler angles per bone (three joints a finger)."""
    pose = np.zeros((3, bones + 3))
    pose[:, 0] = theta[0:3]
    pose[:, 1] = 1.0
    pose[:, 2] = theta[3:6]
    i_theta = 6
    i_pose = 5
    for finger in range(5):
        for joint in range(2, 5):
            pose[0, i_pose] = theta[i_theta]
            i_theta += 1
            if joint == 2:
                pose[1, i_pose] = theta[i_theta]
                i_theta += 1
            i_pose += 1
        i_pose += 1
    return pose


def skinned_vertex_positions(pose, parents, base_relatives, inverse_base_absolutes,
                             base_positions, weights, is_mirrored):
    absolutes = []
    for i in range(len(parents)):
        posed = np.eye(4)
        posed[:3, :3] = euler_angles_to_rotation_matrix(pose[:, i + 3])
        relative = base_relatives[i] @ posed
        if parents[i] == -1:
            absolutes.append(relative)
        else:
            absolutes.append(absolutes[parents[i]] @ relative)
    transforms = np.stack(absolutes) @ inverse_base_absolutes                # (bones, 4, 4)
    moved = transforms @ base_positions                                     # (bones, 4, verts)
    positions = np.sum(moved[:, :3, :] * weights[:, None, :], axis=0)      # (3, verts)
    if is_mirrored:
        positions = positions * np.array([[-1.0], [1.0], [1.0]])
    rotation = angle_axis_to_rotation_matrix(pose[:, 0]) * pose[:, 1]
    return rotation @ positions + pose[:, 2:3]


def objective(theta, us, points, correspondences, triangles, parents, base_relatives,
              inverse_base_absolutes, base_positions, weights, is_mirrored):
    pose = to_pose_params(theta, len(parents))
    vertices = skinned_vertex_positions(pose, parents, base_relatives, inverse_base_absolutes,
                                        base_positions, weights, is_mirrored)
    if us.shape[0] == 0:
        return (points - vertices[:, correspondences].T).ravel()
    corners = triangles[correspondences]                                    # (points, 3)
    on_triangle = (us[:, 0] * vertices[:, corners[:, 0]]
                   + us[:, 1] * vertices[:, corners[:, 1]]
                   + (1 - us[:, 0] - us[:, 1]) * vertices[:, corners[:, 2]])
    return (points - on_triangle.T).ravel()


# -- the numba backend's: the same model as a Numba user writes it, loops over small
# arrays and element writes (Numba has no `np.stack` of a list, no `@` of arrays of three
# axes, no `np.array` of a nested list of values computed in the function)

def angle_axis_rotation(angle_axis):
    norm = np.sqrt(angle_axis[0] * angle_axis[0] + angle_axis[1] * angle_axis[1]
                   + angle_axis[2] * angle_axis[2])
    R = np.eye(3)
    if norm < 0.0001:
        return R
    x = angle_axis[0] / norm
    y = angle_axis[1] / norm
    z = angle_axis[2] / norm
    s = np.sin(norm)
    c = np.cos(norm)
    R[0, 0] = x * x + (1 - x * x) * c
    R[0, 1] = x * y * (1 - c) - z * s
    R[0, 2] = x * z * (1 - c) + y * s
    R[1, 0] = x * y * (1 - c) + z * s
    R[1, 1] = y * y + (1 - y * y) * c
    R[1, 2] = y * z * (1 - c) - x * s
    R[2, 0] = x * z * (1 - c) - y * s
    R[2, 1] = z * y * (1 - c) + x * s
    R[2, 2] = z * z + (1 - z * z) * c
    return R


def euler_rotation(xzy):
    tx, ty, tz = xzy[0], xzy[2], xzy[1]
    Rx = np.eye(3)
    Rx[1, 1] = np.cos(tx)
    Rx[1, 2] = -np.sin(tx)
    Rx[2, 1] = np.sin(tx)
    Rx[2, 2] = np.cos(tx)
    Ry = np.eye(3)
    Ry[0, 0] = np.cos(ty)
    Ry[0, 2] = np.sin(ty)
    Ry[2, 0] = -np.sin(ty)
    Ry[2, 2] = np.cos(ty)
    Rz = np.eye(3)
    Rz[0, 0] = np.cos(tz)
    Rz[0, 1] = -np.sin(tz)
    Rz[1, 0] = np.sin(tz)
    Rz[1, 1] = np.cos(tz)
    return Rz @ Ry @ Rx


def skinned_vertices_by_bone(pose, parents, base_relatives, inverse_base_absolutes,
                             base_positions, weights, is_mirrored):
    bones = len(parents)
    absolutes = np.zeros((bones, 4, 4))
    positions = np.zeros((3, base_positions.shape[1]))
    for i in range(bones):
        posed = np.eye(4)
        posed[:3, :3] = euler_rotation(pose[:, i + 3])
        relative = base_relatives[i] @ posed
        if parents[i] == -1:
            absolutes[i] = relative
        else:
            absolutes[i] = absolutes[parents[i]] @ relative
        transform = absolutes[i] @ inverse_base_absolutes[i]
        positions = positions + weights[i] * (transform[:3] @ base_positions)
    if is_mirrored:
        positions[0] = -positions[0]
    rotation = angle_axis_rotation(pose[:, 0]) * pose[:, 1]
    return rotation @ positions + pose[:, 2:3]


def objective_by_bone(theta, us, points, correspondences, triangles, parents, base_relatives,
                      inverse_base_absolutes, base_positions, weights, is_mirrored):
    pose = to_pose_params(theta, len(parents))
    vertices = skinned_vertices_by_bone(pose, parents, base_relatives, inverse_base_absolutes,
                                        base_positions, weights, is_mirrored)
    if us.shape[0] == 0:
        return (points - vertices[:, correspondences].T).ravel()
    corners = triangles[correspondences]
    on_triangle = (us[:, 0] * vertices[:, corners[:, 0]]
                   + us[:, 1] * vertices[:, corners[:, 1]]
                   + (1 - us[:, 0] - us[:, 1]) * vertices[:, corners[:, 2]])
    return (points - on_triangle.T).ravel()


def jacobian_of(objective, backend):
    """The Jacobian of `objective` (complicated variant: columns d/du₀ and d/du₁, each a
    jvp with a tangent of ones, as each error depends on its own point's u alone), then
    d/dθ by forward mode."""
    d_objective = s2sad.jacfwd(objective, backend=backend)

    def jacobian(theta, us, *data):
        d_theta = d_objective(theta, us, *data)
        if us.shape[0] == 0:
            return d_theta
        columns = []
        for k in (0, 1):
            tangent = np.zeros_like(us)
            tangent[:, k] = 1.0
            _, d_u = s2sad.jvp(objective, (theta, us, *data),
                               (None, tangent) + (None,) * len(data), backend=backend)
            columns.append(d_u[:, None])
        return np.concatenate(columns + [d_theta], axis=1)
    return jacobian


def _input(input, backend="python"):
    """The arguments; on the numba backend, `parents` an array and the model's arrays
    contiguous, as Numba code reads them best."""
    data, model = input["data"], input["data"]["model"]
    us = np.array(input["us"], dtype=float).reshape(-1, 2)
    parents = list(model["parents"])
    base_positions = np.array(model["base_positions"], dtype=float).T
    weights = np.array(model["weights"], dtype=float).T
    if backend == "numba":
        parents = np.array(parents, dtype=np.int64)
        base_positions = np.ascontiguousarray(base_positions)
        weights = np.ascontiguousarray(weights)
    return (np.array(input["theta"], dtype=float), us,
            np.array(data["points"], dtype=float).reshape(-1, 3),
            np.array(data["correspondences"], dtype=int),
            np.array(model["triangles"], dtype=int).reshape(-1, 3), parents,
            np.array(model["base_relatives"], dtype=float),
            np.array(model["inverse_base_absolutes"], dtype=float),
            base_positions, weights, bool(model["is_mirrored"]))


def functions(backend):
    objective_of = objective_by_bone if backend == "numba" else objective

    def prepare(input):
        return _input(input, backend)
    return {"objective": Function(prepare, primal(objective_of, backend), floats),
            "jacobian": Function(prepare, jacobian_of(objective_of, backend), floats)}
