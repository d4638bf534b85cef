"""s2sad's GradBench tool (gradbench/): each eval's functions on small inputs, the
derivatives against central differences of the eval's primal, the primals against the
formulas of GradBench's READMEs written out here, and the protocol loop on a hand-written
exchange. GradBench itself is not needed."""
import io
import json
import math

import numpy as np
import pytest

import s2sad
from gradbench import evals, tool


def fd(f, x, h=1e-5):
    """Richardson-extrapolated central differences of scalar `f` at each element of array
    `x` (an array of x's shape)."""
    x = np.array(x, dtype=float)
    out = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        step = h * max(1.0, abs(x[i]))

        def central(s):
            xp, xm = x.copy(), x.copy()
            xp[i] += s
            xm[i] -= s
            return (f(xp) - f(xm)) / (2 * s)
        out[i] = (4 * central(step / 2) - central(step)) / 3
    return out


def call(module, function, input, backend="python"):
    """The tool's answer to an `evaluate` of `function` on `input`, after `define`."""
    t = tool.Tool(["all"] if backend == "numba" else [])
    assert t.define(module)["success"]
    response = t.evaluate(module, function, {"min_runs": 1, "min_seconds": 0, **input}
                          if isinstance(input, dict) else input)
    assert response["success"], response.get("error")
    assert [t["name"] for t in response["timings"]] == ["warmup", "evaluate"]
    return response["output"]


def test_hello():
    assert call("hello", "square", 3.0) == 9.0
    assert call("hello", "double", 3.0) == 6.0


def test_lse():
    rng = np.random.default_rng(0)
    x = rng.normal(size=7) * 10
    lse = evals.load("lse").logsumexp
    assert call("lse", "primal", {"x": x.tolist()}) == pytest.approx(
        math.log(sum(math.exp(v) for v in x)), rel=1e-12)
    np.testing.assert_allclose(call("lse", "gradient", {"x": x.tolist()}), fd(lse, x),
                               rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("backend", ["python", "numba"])
def test_llsq(backend):
    if backend == "numba":      # (np.cumprod along an axis, which s2sad gives Numba)
        pytest.importorskip("numba")
    rng = np.random.default_rng(1)
    x, n = rng.normal(size=4), 9
    t = [-1 + i * 2 / (n - 1) for i in range(n)]
    y = 0.5 * sum((np.sign(ti) - sum(xj * ti ** j for j, xj in enumerate(x))) ** 2
                  for ti in t)
    given = {"x": x.tolist(), "n": n}
    assert call("llsq", "primal", given, backend) == pytest.approx(y, rel=1e-12)
    module = evals.load("llsq")
    np.testing.assert_allclose(call("llsq", "gradient", given, backend),
                               fd(lambda v: module.llsq(v, n), x), rtol=1e-6)
    # the form first written, elementwise powers
    assert module.llsq_power(x, n) == pytest.approx(y, rel=1e-12)
    np.testing.assert_allclose(s2sad.grad(module.llsq_power)(x, n),
                               fd(lambda v: module.llsq_power(v, n), x), rtol=1e-6)
    # one coefficient: no powers at all
    assert module.llsq(x[:1], n) == pytest.approx(
        0.5 * sum((np.sign(ti) - x[0]) ** 2 for ti in t), rel=1e-12)
    np.testing.assert_allclose(s2sad.grad(module.llsq)(x[:1], n),
                               fd(lambda v: module.llsq(v, n), x[:1]), rtol=1e-6)


def test_ode():
    rng = np.random.default_rng(2)
    x, s = rng.random(4), 3
    ode = evals.load("ode")
    # y(2) for constant x: y0 = x0 t, y1 = x1 x0 t²/2, ...: RK4 is exact on polynomials of
    # degree 4, so with 4 elements it agrees with the closed form to rounding
    closed = [np.prod(x[:i + 1]) * 2.0 ** (i + 1) / math.factorial(i + 1) for i in range(4)]
    np.testing.assert_allclose(call("ode", "primal", {"x": x.tolist(), "s": s}), closed,
                               rtol=1e-12)
    np.testing.assert_allclose(call("ode", "gradient", {"x": x.tolist(), "s": s}),
                               fd(lambda v: ode.solve(v, s)[-1], x), rtol=1e-6)


def exchange(messages, numba=()):
    out = io.StringIO()
    tool.serve([json.dumps(m) + "\n" for m in messages],
               lambda text: out.write(text + "\n"), tool.Tool(numba))
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_protocol_loop():
    x = [0.5, -1.0, 2.0]
    responses = exchange([
        {"id": 0, "kind": "start", "eval": "hello"},
        {"id": 1, "kind": "define", "module": "hello"},
        {"id": 2, "kind": "evaluate", "module": "hello", "function": "double", "input": 1.5},
        {"id": 3, "kind": "analysis", "of": 2, "valid": True},
        {"id": 4, "kind": "define", "module": "lse"},
        {"id": 5, "kind": "evaluate", "module": "lse", "function": "gradient",
         "input": {"x": x, "min_runs": 3, "min_seconds": 0}, "description": "n=3"},
        {"id": 6, "kind": "define", "module": "nosuch"},
        {"id": 7, "kind": "evaluate", "module": "lse", "function": "hessian", "input": {}},
        {"id": 8, "kind": "end"},
        {"id": 9, "kind": "start"},
    ])
    assert [r["id"] for r in responses] == list(range(8))     # nothing after "end"
    assert responses[0]["tool"] == "s2sad"
    assert responses[1]["success"] and responses[4]["success"]
    assert responses[2]["output"] == 3.0
    assert responses[3] == {"id": 3}
    softmax = np.exp(x) / np.sum(np.exp(x))
    np.testing.assert_allclose(responses[5]["output"], softmax, rtol=1e-12)
    assert [t["name"] for t in responses[5]["timings"]] == ["warmup"] + ["evaluate"] * 3
    assert not responses[6]["success"] and "no eval 'nosuch'" in responses[6]["error"]
    assert not responses[7]["success"] and "no function 'hessian'" in responses[7]["error"]


def test_a_refusal_is_a_failed_evaluation():
    t = tool.Tool()
    assert t.define("lse")["success"]
    response = t.evaluate("lse", "gradient", {"x": "not numbers", "min_runs": 1,
                                              "min_seconds": 0})
    assert response["success"] is False and response["error"]


@pytest.mark.parametrize("backend", ["python", "numba"])
def test_kmeans(backend):
    if backend == "numba":
        pytest.importorskip("numba")
    rng = np.random.default_rng(3)
    points = rng.random((12, 3))
    centroids = points[[0, 5, 9]] + 0.01      # each the closest of some point
    km = evals.load("kmeans")
    closest = np.argmin(((points[:, None] - centroids[None]) ** 2).sum(2), axis=1)
    input = {"points": points.tolist(), "centroids": centroids.tolist()}
    assert call("kmeans", "cost", input, backend) == pytest.approx(
        sum(((p - centroids[j]) ** 2).sum() for p, j in zip(points, closest)), rel=1e-12)
    gradient = fd(lambda c: km.cost(c, points), centroids)
    # the Hessian's diagonal, by central differences of the gradient's central differences
    diagonal = np.zeros_like(centroids)
    for i in np.ndindex(centroids.shape):
        def partial(c):
            return fd(lambda v: km.cost(v, points), c)[i]
        diagonal[i] = fd(partial, centroids)[i]
    np.testing.assert_allclose(call("kmeans", "dir", input, backend), gradient / diagonal,
                               rtol=1e-5, atol=1e-8)
    # the form first written, the differences broadcast to n×k×d
    assert km.cost_broadcast(centroids, points) == pytest.approx(km.cost(centroids, points),
                                                                 rel=1e-12)
    g, h = s2sad.jvp(s2sad.grad(km.cost_broadcast, backend=backend), (centroids, points),
                     (np.ones_like(centroids), None), backend=backend)
    np.testing.assert_allclose(g / h, gradient / diagonal, rtol=1e-5, atol=1e-8)


def gmm_input(d, k, n, m, gamma, seed):
    rng = np.random.default_rng(seed)
    return {"d": d, "k": k, "n": n, "x": rng.normal(size=(n, d)).tolist(), "m": m,
            "gamma": gamma, "alpha": rng.normal(size=k).tolist(),
            "mu": rng.random((k, d)).tolist(), "q": (0.3 * rng.normal(size=(k, d))).tolist(),
            "l": (0.3 * rng.normal(size=(k, d * (d - 1) // 2))).tolist()}


def gmm_definition(input):
    """The README's definition, not its simplification: a mixture of multivariate normal
    densities times Wishart densities of the precision matrices (SciPy's)."""
    stats = pytest.importorskip("scipy.stats")
    d, k = input["d"], input["k"]
    alpha, mu = np.array(input["alpha"]), np.array(input["mu"])
    phi = np.exp(alpha) / np.sum(np.exp(alpha))
    precisions = []
    for q, strict in zip(input["q"], input["l"]):
        Q = np.diag(np.exp(q))
        below = iter(strict)
        for j in range(d):                  # the strictly lower part, column by column
            for i in range(j + 1, d):
                Q[i, j] = next(below)
        precisions.append(Q.T @ Q)
    likelihood = sum(np.log(sum(phi[j] * stats.multivariate_normal(
        mu[j], np.linalg.inv(precisions[j])).pdf(x) for j in range(k)))
        for x in np.array(input["x"]))
    gamma, dof = input["gamma"], d + input["m"] + 1
    prior = sum(stats.wishart(df=dof, scale=np.eye(d) / gamma ** 2).logpdf(p)
                for p in precisions)
    return likelihood + prior


@pytest.mark.parametrize("backend", ["python", "numba"])
def test_gmm(backend):
    if backend == "numba":      # (np.einsum, np.squeeze and their adjoints on Numba)
        pytest.importorskip("numba")
    input = gmm_input(d=3, k=2, n=6, m=1, gamma=1.5, seed=4)
    assert call("gmm", "objective", input, backend) == pytest.approx(gmm_definition(input),
                                                                     rel=1e-10)
    gmm = evals.load("gmm")
    args = gmm._input(input)
    jacobian = call("gmm", "jacobian", input, backend)
    # both forms, the first written too (einsum over (n, k, d)), against the definition
    # and central differences
    assert gmm.objective_einsum(*args) == pytest.approx(gmm_definition(input), rel=1e-10)
    first = s2sad.grad(gmm.objective_einsum, wrt=(0, 1, 2, 3), backend=backend)(*args)
    for i, name in enumerate(("alpha", "mu", "q", "l")):
        def f(v):
            return gmm.objective(*args[:i], v, *args[i + 1:])
        expected = fd(f, args[i])
        np.testing.assert_allclose(jacobian[name], expected, rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(first[i], expected, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("backend", ["python", "numba"])
def test_det(backend):
    if backend == "numba":      # (each minor's gradient from its value_and_grad)
        pytest.importorskip("numba")
    rng = np.random.default_rng(5)
    A = rng.normal(size=(4, 4))
    input = {"A": A.ravel().tolist(), "ell": 4}
    assert call("det", "primal", input, backend) == pytest.approx(np.linalg.det(A), rel=1e-12)
    det = evals.load("det").det
    np.testing.assert_allclose(call("det", "gradient", input, backend),
                               fd(lambda v: det(v, 4), A.ravel()), rtol=1e-6, atol=1e-9)
    # the cofactors, det(A) A^-T
    np.testing.assert_allclose(call("det", "gradient", input, backend),
                               (np.linalg.det(A) * np.linalg.inv(A).T).ravel(), rtol=1e-10)


def lstm_scalar(main, extra, state, sequence):
    """GradBench's C++ reference, element by element (its log-sum-exp adds 2)."""
    layers, b = len(main) // 2, len(sequence[0])
    state = [list(row) for row in state]
    sig = lambda v: 1 / (1 + math.exp(-v))      # noqa: E731
    total = 0.0
    for t in range(len(sequence) - 1):
        out = [sequence[t][i] * extra[0][i] for i in range(b)]
        for layer in range(layers):
            w, bias = main[2 * layer], main[2 * layer + 1]
            h, c = state[2 * layer], state[2 * layer + 1]
            for i in range(b):
                f = sig(out[i] * w[i] + bias[i])
                g = sig(h[i] * w[b + i] + bias[b + i])
                o = sig(out[i] * w[2 * b + i] + bias[2 * b + i])
                ch = math.tanh(h[i] * w[3 * b + i] + bias[3 * b + i])
                c[i] = c[i] * f + g * ch
                h[i] = o * math.tanh(c[i])
            out = h
        y = [out[i] * extra[1][i] + extra[2][i] for i in range(b)]
        lse = math.log(sum(math.exp(v) for v in y) + 2)
        total += sum(sequence[t + 1][i] * (y[i] - lse) for i in range(b))
    return -total / ((len(sequence) - 1) * b)


@pytest.mark.parametrize("backend", ["python", "numba"])
def test_lstm(backend):
    if backend == "numba":      # (its state a list of arrays, whose adjoint is one too)
        pytest.importorskip("numba")
    rng = np.random.default_rng(6)
    layers, b, c = 2, 3, 5
    input = {"main_params": rng.random((2 * layers, 4 * b)).tolist(),
             "extra_params": rng.random((3, b)).tolist(),
             "state": rng.random((2 * layers, b)).tolist(),
             "sequence": rng.integers(0, 2, (c, b)).astype(float).tolist()}
    assert call("lstm", "objective", input, backend) == pytest.approx(
        lstm_scalar(input["main_params"], input["extra_params"], input["state"],
                    input["sequence"]), rel=1e-12)
    lstm = evals.load("lstm")
    main, extra, state, sequence = lstm._input(input)
    expected = np.concatenate((fd(lambda v: lstm.objective(v, extra, state, sequence), main),
                               fd(lambda v: lstm.objective(main, v, state, sequence), extra)),
                              axis=None)
    np.testing.assert_allclose(call("lstm", "jacobian", input, backend), expected, rtol=1e-6,
                               atol=1e-10)


def ba_scalar_error(cam, X, w, feat):
    """One observation's reprojection error, element by element as GradBench's C++ reference."""
    rot, C = cam[0:3], cam[3:6]
    Xo = [X[i] - C[i] for i in range(3)]
    sq = sum(r * r for r in rot)
    if sq != 0:
        theta = math.sqrt(sq)
        u = [r / theta for r in rot]
        cross = [u[1] * Xo[2] - u[2] * Xo[1], u[2] * Xo[0] - u[0] * Xo[2],
                 u[0] * Xo[1] - u[1] * Xo[0]]
        tmp = sum(u[i] * Xo[i] for i in range(3)) * (1 - math.cos(theta))
        Xcam = [Xo[i] * math.cos(theta) + cross[i] * math.sin(theta) + u[i] * tmp
                for i in range(3)]
    else:
        Xcam = [Xo[0] + rot[1] * Xo[2] - rot[2] * Xo[1], Xo[1] + rot[2] * Xo[0] - rot[0] * Xo[2],
                Xo[2] + rot[0] * Xo[1] - rot[1] * Xo[0]]
    proj = [Xcam[0] / Xcam[2], Xcam[1] / Xcam[2]]
    rsq = proj[0] ** 2 + proj[1] ** 2
    L = 1 + cam[9] * rsq + cam[10] * rsq * rsq
    return [w * (proj[i] * L * cam[6] + cam[7 + i] - feat[i]) for i in range(2)]


@pytest.mark.parametrize("backend", ["python", "numba"])
def test_ba(backend):
    if backend == "numba":      # (vjp's pullback Numba's f_adjoint; np.cross's adjoint)
        pytest.importorskip("numba")
    sparse = pytest.importorskip("scipy.sparse")
    rng = np.random.default_rng(7)
    n, m, p = 3, 4, 7
    cams = np.concatenate((rng.normal(size=(n, 6)) * 0.3, 1 + rng.random((n, 3)),
                           rng.normal(size=(n, 2)) * 0.01), axis=1)
    cams[1, 0:3] = 0.0                     # no rotation: the small-angle branch
    X = rng.normal(size=(m, 3)) + [0, 0, 5]
    w, feats = 1 + 0.1 * rng.normal(size=p), rng.normal(size=(p, 2))
    obs = np.stack((np.arange(p) % n, (3 * np.arange(p)) % m), axis=1)
    ba = evals.load("ba")
    reproj, w_err = ba.objective(cams, X, w, feats, obs)
    expected = [ba_scalar_error(cams[c], X[j], w[i], feats[i]) for i, (c, j) in enumerate(obs)]
    np.testing.assert_allclose(reproj, expected, rtol=1e-12)
    np.testing.assert_allclose(w_err, 1 - w * w, rtol=1e-12)

    rows, cols, values = ba.jacobian(cams, X, w, feats, obs, backend)
    dense = sparse.csr_matrix((values, cols, rows), shape=(3 * p, 11 * n + 3 * m + p)).toarray()
    flat = np.concatenate((cams.ravel(), X.ravel(), w))
    def output(k):
        def f(v):
            c, x, ww = v[:11 * n].reshape(n, 11), v[11 * n:11 * n + 3 * m].reshape(m, 3), v[-p:]
            return np.concatenate([e.ravel() for e in ba.objective(c, x, ww, feats, obs)])[k]
        return f
    for k in range(3 * p):
        np.testing.assert_allclose(dense[k], fd(output(k), flat), rtol=1e-6, atol=1e-8)

    # the tool's encoding of GradBench's duplicated input: as the C++ reference's
    input = {"n": 2, "m": 3, "p": 16, "cam": cams[0].tolist(), "x": X[0].tolist(), "w": 1.1,
             "feat": [0.3, -0.2]}
    out = call("ba", "objective", input, backend)
    assert out["reproj_error"]["repeated"] == 16 and out["w_err"]["repeated"] == 16
    np.testing.assert_allclose(out["reproj_error"]["elements"],
                               ba_scalar_error(cams[0], X[0], 1.1, [0.3, -0.2]), rtol=1e-12)
    jac = call("ba", "jacobian", input, backend)
    assert jac["rows"] == [15 * i for i in range(30)] + [31 * 16]
    assert jac["cols"][:15] == list(range(11)) + [22, 23, 24, 31] == jac["cols"][15:30]
    assert jac["cols"][-1] == 22 + 9 + 15 and jac["vals"][-1] == pytest.approx(-2.2)


def test_ba_loops():
    """The numba backend's ba: an observation at a time, each Jacobian row a gradient of
    `observation_error` compiled by Numba and called from the loop Numba compiles."""
    pytest.importorskip("numba")
    sparse = pytest.importorskip("scipy.sparse")
    rng = np.random.default_rng(9)
    n, m, p = 3, 4, 7
    cams = np.concatenate((rng.normal(size=(n, 6)) * 0.3, 1 + rng.random((n, 3)),
                           rng.normal(size=(n, 2)) * 0.01), axis=1)
    cams[2, 0:3] = 0.0                     # no rotation: the small-angle branch
    X = rng.normal(size=(m, 3)) + [0, 0, 5]
    w, feats = 1 + 0.1 * rng.normal(size=p), rng.normal(size=(p, 2))
    obs = np.stack((np.arange(p) % n, (3 * np.arange(p)) % m), axis=1)
    ba = evals.load("ba")
    functions = ba.functions("numba")
    reproj, w_err = functions["objective"].run(cams, X, w, feats, obs)
    expected = [ba_scalar_error(cams[c], X[j], w[i], feats[i]) for i, (c, j) in enumerate(obs)]
    np.testing.assert_allclose(reproj, expected, rtol=1e-12)
    np.testing.assert_allclose(w_err, 1 - w * w, rtol=1e-12)
    rows, cols, values = functions["jacobian"].run(cams, X, w, feats, obs)
    dense = sparse.csr_matrix((values, cols, rows), shape=(3 * p, 11 * n + 3 * m + p)).toarray()
    flat = np.concatenate((cams.ravel(), X.ravel(), w))

    def output(k):
        def f(v):
            c, x, ww = v[:11 * n].reshape(n, 11), v[11 * n:11 * n + 3 * m].reshape(m, 3), v[-p:]
            errors = [ba_scalar_error(c[a], x[b], ww[i], feats[i]) for i, (a, b) in enumerate(obs)]
            return np.concatenate((np.ravel(errors), 1 - ww * ww))[k]
        return f
    for k in range(3 * p):
        np.testing.assert_allclose(dense[k], fd(output(k), flat), rtol=1e-6, atol=1e-8)


def ht_input(complicated, seed=8, bones=22, verts=12, points=5):
    rng = np.random.default_rng(seed)

    def rigid():
        m = np.eye(4)
        m[:3, :3] = np.linalg.qr(rng.normal(size=(3, 3)))[0]
        m[:3, 3] = rng.normal(size=3)
        return m.tolist()
    weights = rng.random((verts, bones))
    return {"theta": (0.3 * rng.normal(size=26)).tolist(),
            "us": rng.random((points, 2)).tolist() if complicated else [],
            "data": {"correspondences": rng.integers(0, verts, points).tolist(),
                     "points": rng.normal(size=(points, 3)).tolist(),
                     "model": {"bone_count": bones, "bone_names": [f"b{i}" for i in range(bones)],
                               "parents": [-1] + [int(rng.integers(0, i)) for i in range(1, bones)],
                               "base_relatives": [rigid() for _ in range(bones)],
                               "inverse_base_absolutes": [rigid() for _ in range(bones)],
                               "base_positions": np.concatenate(
                                   (rng.normal(size=(verts, 3)), np.ones((verts, 1))), 1).tolist(),
                               "weights": (weights / weights.sum(1, keepdims=True)).tolist(),
                               "triangles": rng.integers(0, verts, (verts, 3)).tolist(),
                               "is_mirrored": complicated}}}


def test_ht_rotations():
    rotation = pytest.importorskip("scipy.spatial.transform").Rotation
    ht = evals.load("ht")
    v = np.array([0.3, -0.5, 0.2])
    np.testing.assert_allclose(ht.angle_axis_to_rotation_matrix(v),
                               rotation.from_rotvec(v).as_matrix(), atol=1e-14)
    # xzy angles: about x by v[0], then y by v[2], then z by v[1]
    np.testing.assert_allclose(ht.euler_angles_to_rotation_matrix(v),
                               rotation.from_euler("xyz", [v[0], v[2], v[1]]).as_matrix(),
                               atol=1e-14)


@pytest.mark.parametrize("backend", ["python", "numba"])
@pytest.mark.parametrize("complicated", [False, True])
def test_ht(complicated, backend):
    if backend == "numba":      # (the model by bone, loops over small arrays)
        pytest.importorskip("numba")
    input = ht_input(complicated)
    ht = evals.load("ht")
    args = ht._input(input)
    errors = np.array(call("ht", "objective", input, backend))
    np.testing.assert_allclose(errors, ht.objective(*args), rtol=1e-13)
    jacobian = np.array(call("ht", "jacobian", input, backend))
    d_theta = np.stack([fd(lambda v: ht.objective(v, *args[1:])[k], args[0])
                        for k in range(errors.shape[0])])
    np.testing.assert_allclose(jacobian[:, -26:], d_theta, rtol=1e-6, atol=1e-8)
    if complicated:
        us = args[1]
        for k in (0, 1):     # error 3i + j depends on us[i] alone
            def along(t):
                shifted = us.copy()
                shifted[:, k] += t[0]
                return ht.objective(args[0], shifted, *args[2:])
            d_u = np.stack([fd(lambda t: along(t)[row], np.zeros(1))[0]
                            for row in range(errors.shape[0])])
            np.testing.assert_allclose(jacobian[:, k], d_u, rtol=1e-6, atol=1e-8)
    else:
        assert jacobian.shape == (errors.shape[0], 26)


def test_solver():
    from gradbench.evals import solver
    centre = np.array([1.5, -2.0])
    found = solver.argmin(lambda x: np.sum((x - centre) ** 2), lambda x: 2 * (x - centre),
                          np.zeros(2))
    np.testing.assert_allclose(found, centre, atol=1e-4)


def crossing_oracle(w):
    """particle's crossing with the force written out: -∇ of Σ 1/|x - c| is Σ (x - c)/|x - c|³."""
    charges = [np.array([10.0, 10.0 - w]), np.array([10.0, 0.0])]
    x, xdot, dt = np.array([0.0, 8.0]), np.array([0.75, 0.0]), 0.1
    while True:
        xddot = sum((x - c) / np.linalg.norm(x - c) ** 3 for c in charges)
        if x[1] + dt * xdot[1] <= 0:
            break
        x, xdot = x + dt * xdot, xdot + dt * xddot
    return (x[0] - x[1] / xdot[1] * xdot[0]) ** 2


def test_particle_derivative():
    import s2sad
    particle = evals.load("particle")
    for w in (0.0, 0.3):
        assert particle.crossing_r(np.array([w])) == pytest.approx(crossing_oracle(w), rel=1e-12)
        expected = fd(lambda v: crossing_oracle(v[0]), np.array([w]))
        np.testing.assert_allclose(s2sad.grad(particle.crossing_r)(np.array([w])), expected,
                                   rtol=1e-6)
        np.testing.assert_allclose(particle.forward(particle.crossing_r)(np.array([w])),
                                   expected, rtol=1e-6)


def test_particle_forward_inside():
    import s2sad
    particle = evals.load("particle")
    w = np.array([0.3])
    expected = fd(lambda v: crossing_oracle(v[0]), w)
    np.testing.assert_allclose(s2sad.grad(particle.crossing_f)(w), expected, rtol=1e-6)
    np.testing.assert_allclose(particle.forward(particle.crossing_f)(w), expected, rtol=1e-6)


def test_saddle_derivative():
    import s2sad
    saddle = evals.load("saddle")
    x, start = np.array([0.7, -0.4]), np.array([1.0, 1.0])
    # max over y of f(x, y) is |x|², reached at y = 0 whatever x: its gradient is 2x
    assert saddle.max_r(x, start) == pytest.approx(x @ x, abs=1e-8)
    np.testing.assert_allclose(s2sad.grad(saddle.max_r)(x, start), 2 * x, rtol=1e-9)
    np.testing.assert_allclose(saddle.forward(saddle.max_r)(x, start), 2 * x, rtol=1e-9)
    assert saddle.max_f(x, start) == pytest.approx(x @ x, abs=1e-8)     # (inner forward)
    np.testing.assert_allclose(s2sad.grad(saddle.max_f)(x, start), 2 * x, rtol=1e-9)
    np.testing.assert_allclose(saddle.forward(saddle.max_f)(x, start), 2 * x, rtol=1e-9)



def test_numba_backend():
    pytest.importorskip("numba")
    assert call("hello", "double", 3.0, backend="numba") == 6.0
    rng = np.random.default_rng(9)
    x, n = rng.normal(size=4), 9
    llsq = evals.load("llsq").llsq
    np.testing.assert_allclose(call("llsq", "gradient", {"x": x.tolist(), "n": n}, "numba"),
                               fd(lambda v: llsq(v, n), x), rtol=1e-6)
    # np.max's adjoint; a loop whose state is an array; recursion over minors
    x = rng.normal(size=7) * 10
    np.testing.assert_allclose(call("lse", "gradient", {"x": x.tolist()}, "numba"),
                               fd(evals.load("lse").logsumexp, x), rtol=1e-6, atol=1e-9)
    x, s = rng.random(4), 3
    ode = evals.load("ode")
    np.testing.assert_allclose(call("ode", "gradient", {"x": x.tolist(), "s": s}, "numba"),
                               fd(lambda v: ode.solve(v, s)[-1], x), rtol=1e-6)
    A = rng.normal(size=(4, 4))
    input = {"A": A.ravel().tolist(), "ell": 4}
    assert call("det", "primal", input, "numba") == pytest.approx(np.linalg.det(A), rel=1e-12)
    np.testing.assert_allclose(call("det", "gradient", input, "numba"),
                               fd(lambda v: evals.load("det").det(v, 4), A.ravel()),
                               rtol=1e-6, atol=1e-9)
    t = tool.Tool(["saddle"])
    assert "offers the backends ('python',)" in t.define("saddle")["error"]


# an eval program as GradBench's are, in miniature: it asks, reads each answer, judges it
MINI_EVAL = r"""
import json, sys
def send(message):
    print(json.dumps(message), flush=True)
    return json.loads(sys.stdin.readline())
send({"id": 0, "kind": "start", "eval": "hello"})
assert send({"id": 1, "kind": "define", "module": "hello"})["success"]
for i, x in enumerate([1.0, 2.5]):
    for j, function in enumerate(["square", "double"]):
        id = 2 + 4 * i + 2 * j
        answer = send({"id": id, "kind": "evaluate", "module": "hello", "function": function,
                       "input": x, "description": f"x={x}"})
        expected = x * x if function == "square" else 2 * x
        send({"id": id + 1, "kind": "analysis", "of": id, "valid": answer["output"] == expected})
"""


def test_runner_relays_an_eval_and_the_tool():
    import sys
    from gradbench import run
    session, status = run.relay([sys.executable, "-c", MINI_EVAL],
                                [sys.executable, "-m", "gradbench.tool"], run.REPOSITORY)
    assert status == 0
    assert len(session) == 2 * 10
    rows = run.evaluations(session)
    assert [(r["function"], r["description"], r["valid"]) for r in rows] == [
        ("square", "x=1.0", True), ("double", "x=1.0", True),
        ("square", "x=2.5", True), ("double", "x=2.5", True)]
    assert all(r["runs"] == 1 and r["min_ms"] > 0 for r in rows)
    table = run.report("hello", session).splitlines()
    assert table[0].split()[:3] == ["function", "input", "valid"] and len(table) == 5
