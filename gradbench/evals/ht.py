"""ht: hand tracking (ADBench's): a skinned hand model posed by 26 angles theta, and the
errors between observed points and their corresponding model vertices (`simple`) or points on
model triangles at barycentric coordinates us (`complicated`); the Jacobian of the errors with
respect to theta (and us), in forward mode: 26 columns (and 2, each error depending on its
own point's u only), against thousands of rows. The numerics follow GradBench's C++
reference, which its validator uses."""
import numpy as np
import s2sad

from gradbench.evals import Function, floats

BACKENDS = ("python",)


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


def jacobian(theta, us, *data):
    """Columns d/du₀ and d/du₁ (complicated variant: each a jvp with a tangent of ones, as
    each error depends on its own point's u alone), then d/dθ by forward mode."""
    d_theta = s2sad.jacfwd(objective)(theta, us, *data)
    if us.shape[0] == 0:
        return d_theta
    columns = []
    for k in (0, 1):
        tangent = np.zeros_like(us)
        tangent[:, k] = 1.0
        _, d_u = s2sad.jvp(objective, (theta, us, *data),
                           (None, tangent) + (None,) * len(data))
        columns.append(d_u[:, None])
    return np.concatenate(columns + [d_theta], axis=1)


def _input(input):
    data, model = input["data"], input["data"]["model"]
    us = np.array(input["us"], dtype=float).reshape(-1, 2)
    return (np.array(input["theta"], dtype=float), us,
            np.array(data["points"], dtype=float).reshape(-1, 3),
            np.array(data["correspondences"], dtype=int),
            np.array(model["triangles"], dtype=int).reshape(-1, 3), list(model["parents"]),
            np.array(model["base_relatives"], dtype=float),
            np.array(model["inverse_base_absolutes"], dtype=float),
            np.array(model["base_positions"], dtype=float).T,
            np.array(model["weights"], dtype=float).T, bool(model["is_mirrored"]))


def functions(backend):
    return {"objective": Function(_input, objective, floats),
            "jacobian": Function(_input, jacobian, floats)}
