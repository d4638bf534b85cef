"""The batching group (issue #39): `vmap` and the Jacobians and Hessians built on it,
each timed against what the issue measures it by.

    python bench/batching.py [--quick]      # this group alone (about 30 s)
    python bench/run.py --group batching    # the same, through the harness

Workloads (each result checked first against an independent one: a hand-written
gradient or Hessian, or a loop of the unbatched derivative):
- `per_example_logistic`: per-example gradients of logistic regression (D=100, batch
  512), `vmap(grad(loss), in_axes=(None, 0, 0))`, against a hand-written batched
  per-example gradient (goal: within 2x) and a Python loop of `grad` (goal: 10x faster).
- `per_example_mlp`: the same for a 2-layer MLP with dict parameters (784-128-10, batch
  256) and a softmax cross-entropy (goal: within 2x of the hand-written one).
- `jacrev_100`: `jacrev` of a 100 -> 100 map (tanh(A x) * x + sin(x)), against one
  `vjp` (goal: at most 10x).
- `hessian_logistic`: `hessian` of a 100-dimensional logistic loss (200 rows), against
  one `grad` (goal: at most 10x).
- `robot_arm`: `jacfwd` of a 5-joint planar arm's (x, y, angle), against the function
  (goal: at most 5x).

Peers (`jax.vmap(jax.grad)`, `torch.func.vmap(torch.func.grad)`) are timed where
installed, for the two per-example rows (not in CI).
"""
import os
import sys
import time
import timeit

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")    # (alone: one BLAS thread, as bench/run.py)
import numpy as np  # noqa: E402

RNG = np.random.default_rng(39)


def logistic(w, x, y):
    p = 1.0 / (1.0 + np.exp(-np.dot(x, w)))
    return -(y * np.log(p) + (1.0 - y) * np.log(1.0 - p))


def logistic_by_hand(w, X, y):
    p = 1.0 / (1.0 + np.exp(-X @ w))
    return (p - y)[:, None] * X


def mlp(p, x, y):
    h = np.tanh(p["W1"] @ x + p["b1"])
    z = p["W2"] @ h + p["b2"]
    z = z - np.max(z)
    return -(z[y] - np.log(np.sum(np.exp(z))))


def mlp_by_hand(p, X, Y):
    H = np.tanh(X @ p["W1"].T + p["b1"])
    Z = H @ p["W2"].T + p["b2"]
    Z = Z - Z.max(axis=1, keepdims=True)
    P = np.exp(Z)
    P /= P.sum(axis=1, keepdims=True)
    P[np.arange(len(Y)), Y] -= 1.0
    A = (P @ p["W2"]) * (1 - H * H)
    return {"W1": A[:, :, None] * X[:, None, :], "b1": A,
            "W2": P[:, :, None] * H[:, None, :], "b2": P}


def mixing(x, M):
    return np.tanh(M @ x) * x + np.sin(x)


def logistic_loss(w, X, y):
    z = X @ w
    return np.sum(np.log1p(np.exp(z)) - y * z) + 0.5 * np.dot(w, w)


def logistic_hessian_by_hand(w, X, y):
    p = 1.0 / (1.0 + np.exp(-X @ w))
    return X.T @ (X * (p * (1 - p))[:, None]) + np.eye(len(w))


def arm(q, lengths):
    angles = np.cumsum(q)
    return np.array([np.sum(lengths * np.cos(angles)), np.sum(lengths * np.sin(angles)),
                     angles[-1]])


def arm_jacobian_by_hand(q, lengths):
    angles = np.cumsum(q)
    # d angles[k] / d q[j] = 1 for j <= k
    dx = -np.cumsum((lengths * np.sin(angles))[::-1])[::-1]
    dy = np.cumsum((lengths * np.cos(angles))[::-1])[::-1]
    return np.stack([dx, dy, np.ones(len(q))])


def best(fn, target):
    """Minimum seconds per call of `fn()` over a few measurements of ~`target` s, in
    process CPU time."""
    timer = timeit.Timer(fn, timer=time.process_time)
    number = 1
    while timer.timeit(number) < target / 10:
        number *= 10
    return min(timer.repeat(7, number)) / number


def _close(name, got, want, rtol=1e-8):
    for k in (want.keys() if isinstance(want, dict) else [None]):
        a, b = (got[k], want[k]) if k is not None else (got, want)
        if not np.allclose(a, b, rtol=rtol, atol=1e-10):
            raise SystemExit(f"{name}: s2sad's result disagrees with the independent one")


def bench(s2sad, quick=False):
    """One row per workload: s2sad's seconds per call, the reference's, and their goal."""
    target = 0.02 if quick else 0.2
    rows = []

    def row(name, ours, reference, against, goal, extra=None):
        print(f"timing {name} (batching) ...", file=sys.stderr, flush=True)
        r = {"workload": name, "s2sad": best(ours, target), "reference": best(reference, target),
             "against": against, "goal": goal}
        r.update(extra or {})
        rows.append(r)

    w, X = RNG.normal(size=100) * 0.1, RNG.normal(size=(512, 100))
    y = (RNG.random(512) > 0.5).astype(float)
    per_example = s2sad.vmap(s2sad.grad(logistic), in_axes=(None, 0, 0))
    g = s2sad.grad(logistic)
    _close("per_example_logistic", per_example(w, X, y), logistic_by_hand(w, X, y))
    _close("per_example_logistic", np.stack([g(w, X[i], y[i]) for i in range(8)]),
           logistic_by_hand(w, X[:8], y[:8]))
    loop = best(lambda: [g(w, X[i], y[i]) for i in range(512)], target)
    row("per_example_logistic", lambda: per_example(w, X, y),
        lambda: logistic_by_hand(w, X, y), "hand-written batched", 2.0,
        {"loop of grad": loop, "peers": peers("logistic", w, X, y, target)})

    p = {"W1": RNG.normal(size=(128, 784)) * 0.05, "b1": np.zeros(128),
         "W2": RNG.normal(size=(10, 128)) * 0.1, "b2": np.zeros(10)}
    X2, Y2 = RNG.normal(size=(256, 784)), RNG.integers(0, 10, 256)
    per_example_mlp = s2sad.vmap(s2sad.grad(mlp), in_axes=(None, 0, 0))
    _close("per_example_mlp", per_example_mlp(p, X2, Y2), mlp_by_hand(p, X2, Y2))
    row("per_example_mlp", lambda: per_example_mlp(p, X2, Y2),
        lambda: mlp_by_hand(p, X2, Y2), "hand-written batched", 2.0,
        {"peers": peers("mlp", p, X2, Y2, target)})

    x, M = RNG.normal(size=100), RNG.normal(size=(100, 100)) / 10
    jac = s2sad.jacrev(mixing)
    J = jac(x, M)
    _close("jacrev_100", J, s2sad.jacfwd(mixing)(x, M))
    _, pullback = s2sad.vjp(mixing, x, M)
    _close("jacrev_100", pullback(np.eye(100)[3])[0], J[3])
    row("jacrev_100", lambda: jac(x, M), lambda: s2sad.vjp(mixing, x, M)[1](x)[0],
        "one vjp (and its pullback)", 10.0)

    w, X, y = RNG.normal(size=100) * 0.1, RNG.normal(size=(200, 100)), (
        RNG.random(200) > 0.5).astype(float)
    hess, grad = s2sad.hessian(logistic_loss), s2sad.grad(logistic_loss)
    _close("hessian_logistic", hess(w, X, y), logistic_hessian_by_hand(w, X, y))
    row("hessian_logistic", lambda: hess(w, X, y), lambda: grad(w, X, y), "one grad", 10.0)

    q, lengths = RNG.normal(size=5), np.array([1.0, 0.8, 0.6, 0.4, 0.2])
    arm_jac = s2sad.jacfwd(arm)
    _close("robot_arm", arm_jac(q, lengths), arm_jacobian_by_hand(q, lengths))
    row("robot_arm", lambda: arm_jac(q, lengths), lambda: arm(q, lengths), "the function", 5.0)
    return rows


def peers(which, a, X, y, target):
    """{peer: seconds} of jax.vmap(jax.grad) and torch.func.vmap(torch.func.grad) of the
    same per-example gradients, where installed."""
    out = {}
    try:
        import jax
        import jax.numpy as jnp
        jax.config.update("jax_enable_x64", True)
        if which == "logistic":
            def loss(w, x, t):
                p = 1.0 / (1.0 + jnp.exp(-jnp.dot(x, w)))
                return -(t * jnp.log(p) + (1.0 - t) * jnp.log(1.0 - p))
        else:
            def loss(p, x, t):
                z = p["W2"] @ jnp.tanh(p["W1"] @ x + p["b1"]) + p["b2"]
                z = z - jnp.max(z)
                return -(z[t] - jnp.log(jnp.sum(jnp.exp(z))))
        fn = jax.jit(jax.vmap(jax.grad(loss), in_axes=(None, 0, 0)))
        fn(a, X, y)
        out["jax"] = best(lambda: jax.block_until_ready(fn(a, X, y)), target)
    except ImportError:
        pass
    try:
        import torch
        from torch.func import grad as tgrad, vmap as tvmap

        def T(v):
            return ({k: torch.tensor(u) for k, u in v.items()} if isinstance(v, dict)
                    else torch.tensor(v))
        if which == "logistic":
            def tloss(w, x, t):
                p = torch.sigmoid(torch.dot(x, w))
                return -(t * torch.log(p) + (1.0 - t) * torch.log(1.0 - p))
        else:
            def tloss(p, x, t):
                z = p["W2"] @ torch.tanh(p["W1"] @ x + p["b1"]) + p["b2"]
                z = z - torch.max(z)
                return -(z[t] - torch.logsumexp(z, 0))
        fn = tvmap(tgrad(tloss), in_dims=(None, 0, 0))
        ta, tX, ty = T(a), T(X), T(y)
        fn(ta, tX, ty)
        out["torch"] = best(lambda: fn(ta, tX, ty), target)
    except ImportError:
        pass
    return out


def report(rows):
    """The group's table (times in us) and the goal line."""
    head = ("workload", "s2sad us", "reference us", "ratio", "goal", "against")
    body = [(r["workload"], f"{r['s2sad'] * 1e6:.0f}", f"{r['reference'] * 1e6:.0f}",
             f"{r['s2sad'] / r['reference']:.2f}", f"<= {r['goal']:.0f}x", r["against"])
            for r in rows]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *body)]
    lines = ["Batching: vmap, and Jacobians and Hessians in one batched pass, in us per call",
             ""]
    lines += ["  ".join(str(x).rjust(w) for x, w in zip(line, widths))
              for line in (head, *body)]
    for r in rows:
        if "loop of grad" in r:
            lines.append(f"{r['workload']}: a Python loop of grad {r['loop of grad'] * 1e6:.0f} "
                         f"us, {r['loop of grad'] / r['s2sad']:.0f}x vmap's time (goal: >= 10x)")
        for peer, t in r.get("peers", {}).items():
            lines.append(f"{r['workload']}: {peer} {t * 1e6:.0f} us")
    missed = [f"{r['workload']} {r['s2sad'] / r['reference']:.2f}x" for r in rows
              if not r["s2sad"] / r["reference"] <= r["goal"]]
    missed += [f"per-example loop only {r['loop of grad'] / r['s2sad']:.1f}x" for r in rows
               if "loop of grad" in r and not r["loop of grad"] / r["s2sad"] >= 10]
    lines += ["", "batching goals: " + (f"missed by {', '.join(missed)}" if missed else "met")]
    return "\n".join(lines)


def main():
    import s2sad
    print(report(bench(s2sad, quick="--quick" in sys.argv)))


if __name__ == "__main__":
    main()
