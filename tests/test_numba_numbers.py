"""The numba backend on code of numbers read from arrays (a coordinate at a time, as
GradBench's ba is written for Numba): the adjoints of numbers are numbers however long the
chain between them (no `_s2s_unbroadcast` left), and the numbers added at ints of an array's
adjoint are added in place (`c_bar[3] += g`), not as one array of zeros a number. Each
gradient is checked against central differences of the function as it is."""
import math

import numpy as np
import pytest

from optional import require

numba = require("numba", "numba")

import s2sad  # noqa: E402


def central(f, args, i, h=1e-6):
    """Central differences of the number `f(*args)` along each element of array args[i]."""
    x = np.array(args[i], dtype=float)
    out = np.zeros_like(x)
    for k in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[k] += h
        down[k] -= h
        out[k] = (f(*args[:i], up, *args[i + 1:]) - f(*args[:i], down, *args[i + 1:])) / (2 * h)
    return out


def rotated_error(cam, X, w, row):
    """A chain of numbers (a rotation about an axis, a division, a distortion) read from
    `cam` and `X` element by element, a branch on the angle and one on `row`."""
    x0 = X[0] - cam[3]
    x1 = X[1] - cam[4]
    x2 = X[2] - cam[5]
    sq = cam[0] * cam[0] + cam[1] * cam[1] + cam[2] * cam[2]
    if sq != 0:
        theta = math.sqrt(sq)
        a0 = cam[0] / theta
        a1 = cam[1] / theta
        a2 = cam[2] / theta
        tmp = (a0 * x0 + a1 * x1 + a2 * x2) * (1 - math.cos(theta))
        y0 = x0 * math.cos(theta) + (a1 * x2 - a2 * x1) * math.sin(theta) + a0 * tmp
        y2 = x2 * math.cos(theta) + (a0 * x1 - a1 * x0) * math.sin(theta) + a2 * tmp
    else:
        y0 = x0 + (cam[1] * x2 - cam[2] * x1)
        y2 = x2 + (cam[0] * x1 - cam[1] * x0)
    p = y0 / y2
    distortion = 1 + cam[6] * p * p + cam[7] * p ** 4
    if row == 0:
        return w * (p * distortion * cam[8] - 0.3)
    return w * (p * distortion + cam[9])


d_rotated = s2sad.grad(rotated_error, wrt=(0, 1, 2), backend="numba")


@pytest.mark.parametrize("angle", [0.4, 0.0])
@pytest.mark.parametrize("row", [0, 1])
def test_element_chains(angle, row):
    rng = np.random.default_rng(3)
    cam = np.concatenate(([angle, -0.5 * angle, 0.3 * angle], rng.normal(size=3) * 0.1,
                          [0.01, 0.002, 1.3, 0.2]))
    X = np.array([0.4, -0.3, 5.0])
    w = 1.2
    d_cam, d_X, d_w = d_rotated(cam, X, w, row)
    np.testing.assert_allclose(d_cam, central(rotated_error, (cam, X, w, row), 0),
                               rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(d_X, central(rotated_error, (cam, X, w, row), 1),
                               rtol=1e-6, atol=1e-9)
    h = 1e-6
    assert d_w == pytest.approx((rotated_error(cam, X, w + h, row)
                                 - rotated_error(cam, X, w - h, row)) / (2 * h), rel=1e-6)
    code = d_rotated.source
    assert "_s2s_unbroadcast" not in code and "_s2s_unindex" not in code
    # (one array: made in each branch, the numbers then added in place; no copy, as no
    # other name sees it)
    assert "cam_bar[7] += " in code and "np.copy" not in code


def test_element_chains_from_numba():
    """Called from a loop compiled by Numba (as GradBench's ba Jacobian calls it)."""
    @numba.njit
    def rows(cams, X, w):
        out = np.empty((cams.shape[0], 14))
        for i in range(cams.shape[0]):
            d_cam, d_X, d_w = d_rotated(cams[i], X, w, i % 2)
            out[i, :10] = d_cam
            out[i, 10:13] = d_X
            out[i, 13] = d_w
        return out
    rng = np.random.default_rng(4)
    cams = np.concatenate((rng.normal(size=(4, 3)) * 0.3, rng.normal(size=(4, 3)) * 0.1,
                           np.tile([0.01, 0.002, 1.3, 0.2], (4, 1))), axis=1)
    cams[2, :3] = 0.0
    X = np.array([0.4, -0.3, 5.0])
    out = rows(cams, X, 0.9)
    for i in range(4):
        np.testing.assert_allclose(out[i, :10], central(rotated_error, (cams[i], X, 0.9, i % 2), 0),
                                   rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(out[i, 10:13],
                                   central(rotated_error, (cams[i], X, 0.9, i % 2), 1),
                                   rtol=1e-6, atol=1e-9)


def mixed_terms(v, u):
    """Numbers read from `v` and a whole-array term in one sum."""
    return v[0] * v[1] + np.sum(v * u) + math.sin(v[2])


def shared_adjoint(v, k):
    """The adjoint of `w = v` is `v`'s too: numbers added at ints of one must not show in
    the other."""
    w = v
    s = 0.0
    for i in range(k):
        s = s + w[i % 3] * v[(i + 1) % 3] + np.sum(w * w)
    return s


def test_not_only_numbers():
    v, u = np.array([0.3, -1.2, 0.7]), np.array([2.0, 0.5, -1.0])
    g = s2sad.grad(mixed_terms, backend="numba")
    np.testing.assert_allclose(g(v, u), central(mixed_terms, (v, u), 0), rtol=1e-6)
    h = s2sad.grad(shared_adjoint, backend="numba")
    np.testing.assert_allclose(h(v, 5), central(shared_adjoint, (v, 5), 0), rtol=1e-6)


def relayer(w, state, steps):
    """lstm's layers in small: a list of arrays whose elements a loop in a loop replaces."""
    hidden = [state[i] for i in range(2)]
    total = 0.0
    for t in range(steps):
        x = w[2] * t
        for i in range(2):
            x = np.tanh(w[i] * x + hidden[i])
            hidden[i] = x
        total = total + np.sum(x * x)
    return total


def test_list_adjoint_in_place_and_tape_without_the_lists():
    rng = np.random.default_rng(5)
    w, state = rng.normal(size=(3, 4)) * 0.5, rng.normal(size=(2, 4))
    g = s2sad.grad(relayer, backend="numba")
    np.testing.assert_allclose(g(w, state, 4), central(relayer, (w, state, 4), 0),
                               rtol=1e-6, atol=1e-9)
    code = g.source
    # (the list's adjoint written in place; the tape holds no list: nothing reads it back)
    assert "_bar.copy()" not in code
    pushes = [line for line in code.splitlines() if ".append((" in line]
    assert pushes and not any("hidden" in line for line in pushes)
