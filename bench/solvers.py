"""The solvers group (issue #38): gradients of functions that call SciPy's solvers, each
derivative by the implicit function theorem (s2sad/implicit.py), timed against the
function itself (whose time is the solve's, nearly all of it).

    python bench/solvers.py [--quick] [--jax-python PATH]   # this group alone (about 1 min)
    python bench/run.py --group solvers     # the same, through the harness

Workloads:
- `calibration_brentq`: a decay rate calibrated by `brentq` to a target mean of 200
  observation times, then a least-squares misfit to 200 observations; the gradient with
  respect to the observations and the target (201 values).
- `bilevel_minimize`: a ridge regression (8 coefficients, 100 rows) fitted by `minimize`
  (BFGS with its gradient as `jac=`) inside a validation loss; the gradient with respect
  to the penalty (the hyperparameter of a bilevel problem).
- `fit_least_squares`: an exponential fitted by `least_squares` (2 parameters, 50
  observations, Levenberg-Marquardt with its Jacobian as `jac=`); the gradient of a function of the fit with respect to the observations.
- `integral_quad`: `quad` of a parameterised integrand; the gradient with respect to its
  3 parameters and the upper limit (Leibniz's rule).
- `lotka_volterra_fit`: a Lotka-Volterra `solve_ivp` (RK45, rtol 1e-6) fitted to 200
  observations (`t_eval`); the gradient with respect to its 4 parameters (the adjoint of
  the solver's steps). Its goal: at most 4x the forward solve. Compared (`ode_comparison`)
  with s2sad's gradient of a hand-written RK4 of the same accuracy (one step per
  observation, 7e-6 relative like the solve's) and with JAX's
  `jax.experimental.ode.odeint` (rtol 1e-6, jitted), steady state and first call, where
  JAX is installed (here, or in the interpreter `--jax-python PATH` names). Its memory
  (`memory`): the peak memory (tracemalloc) of the gradient over the fit's span and over
  one 10 times longer (about 9 times the steps), which must stay flat (`MEMORY_GOAL`).

A third table (`second`) times Hessian-vector products (`s2sad.hvp`: forward mode over the
reverse-mode rules) of the functions in `SECOND`, each checked against central differences
of s2sad's gradient along the direction first: the root of a cubic by `brentq`, the
least-squares fit, quad's integral in its 3 parameters, and the Lotka-Volterra fit (forward
over the continuous adjoint).

Each gradient is checked against central differences of the whole function first.
The goal of the issue: the implicit derivative of a root or a minimiser costs at most 2x
the solve, that is the gradient (solve and derivative) at most 3x the function.
"""
import json
import os
import subprocess
import sys
import time
import timeit

import numpy as np
from scipy import integrate, optimize

GOAL = 3.0      # gradient / function (the solve, then a derivative of at most 2 solves)
ODE_GOAL = 4.0  # the Lotka-Volterra fit's gradient / its forward solve

T = np.linspace(0.1, 5.0, 200)
Y = np.exp(-0.8 * T) + 0.01 * np.sin(13 * T)


def calibration_brentq(y, target):
    rate = optimize.brentq(lambda r: np.mean(np.exp(-r * T)) - target, 1e-3, 10.0,
                           xtol=1e-14)
    return np.sum((np.exp(-rate * T) - y) ** 2)


RNG = np.random.default_rng(0)
A = RNG.standard_normal((100, 8))
B = A @ RNG.standard_normal(8) + 0.1 * RNG.standard_normal(100)
A_VALID = RNG.standard_normal((40, 8))
B_VALID = A_VALID @ RNG.standard_normal(8)


def ridge(w, lam):
    r = A @ w - B
    return 0.5 * r @ r + 0.5 * lam * w @ w


def ridge_jac(w, lam):
    return A.T @ (A @ w - B) + lam * w


def bilevel_minimize(lam):
    w = optimize.minimize(ridge, np.zeros(8), args=(lam,), jac=ridge_jac, method="BFGS",
                          tol=1e-10).x
    r = A_VALID @ w - B_VALID
    return r @ r


T50 = np.linspace(0.0, 4.0, 50)
Y50 = 2.0 * np.exp(-0.6 * T50) + 0.02 * np.cos(9 * T50)


def decay(x, y):
    return x[0] * np.exp(-x[1] * T50) - y


def decay_jac(x, y):
    e = np.exp(-x[1] * T50)
    return np.stack([e, -x[0] * T50 * e], axis=1)


def fit_least_squares(y):
    fit = optimize.least_squares(decay, np.array([1.0, 1.0]), args=(y,), jac=decay_jac,
                                 method="lm", xtol=1e-15, ftol=1e-15, gtol=1e-15)
    return fit.x[0] / fit.x[1] + fit.cost


def integral_quad(p, b):
    return integrate.quad(lambda t: np.exp(-p[0] * t) * np.cos(p[1] * t) / (1 + p[2] * t * t),
                          0.0, b, epsabs=1e-12, epsrel=1e-12)[0]


LV_T = np.linspace(0.0, 15.0, 201)[1:]
LV_Y0 = np.array([10.0, 5.0])
LV_P = np.array([1.0, 0.45, 0.12, 0.35])


def lv_rhs(t, y, alpha, beta, delta, gamma):
    prey, predator = y[0], y[1]
    return np.array([alpha * prey - beta * prey * predator,
                     delta * prey * predator - gamma * predator])


#: observations: the solution at (1.1, 0.4, 0.1, 0.4), 2% off
LV_OBS = integrate.solve_ivp(lv_rhs, (0.0, 15.0), LV_Y0, args=(1.1, 0.4, 0.1, 0.4),
                             t_eval=LV_T, rtol=1e-10, atol=1e-12).y * (
    1 + 0.02 * np.sin(np.arange(200.0)))


def lotka_volterra_fit(p):
    sol = integrate.solve_ivp(lv_rhs, (0.0, 15.0), LV_Y0, args=(p[0], p[1], p[2], p[3]),
                              t_eval=LV_T, rtol=1e-6, atol=1e-9)
    return np.sum((sol.y - LV_OBS) ** 2)


def lotka_volterra_rk4(p):
    """The same fit, by a hand-written RK4 of one step per observation (its error, 7e-6
    relative at the observations, is the solve's)."""
    h = 15.0 / 200
    y = LV_Y0
    t = 0.0
    loss = 0.0
    for k in range(200):
        k1 = lv_rhs(t, y, p[0], p[1], p[2], p[3])
        k2 = lv_rhs(t + h / 2, y + h / 2 * k1, p[0], p[1], p[2], p[3])
        k3 = lv_rhs(t + h / 2, y + h / 2 * k2, p[0], p[1], p[2], p[3])
        k4 = lv_rhs(t + h, y + h * k3, p[0], p[1], p[2], p[3])
        y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        t = t + h
        loss = loss + np.sum((y - LV_OBS[:, k]) ** 2)
    return loss


#: the workloads whose derivative is implicit (the goal's: not quad's)
IMPLICIT = ("calibration_brentq", "bilevel_minimize", "fit_least_squares")

#: (name, function, arguments, wrt)
WORKLOADS = [
    ("calibration_brentq", calibration_brentq, (Y, 0.4), (0, 1)),
    ("bilevel_minimize", bilevel_minimize, (0.7,), 0),
    ("fit_least_squares", fit_least_squares, (Y50,), 0),
    ("integral_quad", integral_quad, (np.array([0.5, 2.0, 0.3]), 3.0), (0, 1)),
    ("lotka_volterra_fit", lotka_volterra_fit, (LV_P,), 0),
]

#: the step of the central differences of a workload (1e-5 unless here): the ODE's
#: solve at rtol 1e-6 is smooth in its parameters to about that
STEPS = {"lotka_volterra_fit": 1e-4}


def root_cubic(p):
    """The root of x^3 + p0 x - 2 (brentq), times p1."""
    return optimize.brentq(lambda x: x ** 3 + p[0] * x - 2.0, 0.0, 5.0, xtol=1e-15) * p[1]


def integral_params(p):
    return integral_quad(p, 3.0)


#: (name, function of one array, the point, the direction) of the hvp table
SECOND = [
    ("root_cubic", root_cubic, np.array([1.3, 0.7]), np.array([1.0, -0.5])),
    ("fit_least_squares", fit_least_squares, Y50, np.cos(T50)),
    ("integral_quad", integral_params, np.array([0.5, 2.0, 0.3]), np.array([1.0, -0.5, 2.0])),
    ("lotka_volterra_fit", lotka_volterra_fit, LV_P, np.array([1.0, -0.5, 0.2, 0.3])),
]


def check_hvp(name, hvp, f, x, v, s2sad, h=1e-5):
    """Exit with a message unless the hvp agrees with central differences of s2sad's
    gradient along `v` (to 1e-4 relative)."""
    g = s2sad.grad(f)
    want = (g(x + h * v) - g(x - h * v)) / (2 * h)
    got = hvp(x, v)
    if not np.allclose(got, want, rtol=1e-4, atol=1e-4 * np.max(np.abs(want))):
        raise SystemExit(f"{name}: s2sad's hvp {got} disagrees with central differences "
                         f"of its gradient {want}")


def second(s2sad, quick=False):
    """One row per function of `SECOND`: the function's, its gradient's and its hvp's
    seconds per call (CPU time)."""
    rows = []
    target = 0.02 if quick else 0.2
    for name, f, x, v in SECOND:
        print(f"timing {name} (second derivatives) ...", file=sys.stderr, flush=True)
        g, hvp = s2sad.grad(f), s2sad.hvp(f)
        check_hvp(name, hvp, f, x, v, s2sad, STEPS.get(name, 1e-5))
        rows.append({"workload": name, "function": best(f, (x,), target),
                     "gradient": best(g, (x,), target), "hvp": best(hvp, (x, v), target)})
    return rows


def second_report(rows):
    """The hvp table (times in us)."""
    head = ("workload", "function us", "grad us", "hvp us", "hvp/function")
    body = [(r["workload"], f"{r['function'] * 1e6:.0f}", f"{r['gradient'] * 1e6:.0f}",
             f"{r['hvp'] * 1e6:.0f}", f"{r['hvp'] / r['function']:.1f}") for r in rows]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *body)]
    lines = ["Second derivatives through the solvers: s2sad.hvp (forward over the reverse-"
             "mode rules), in us of CPU time per call", ""]
    lines += ["  ".join(str(x).rjust(w) for x, w in zip(line, widths))
              for line in (head, *body)]
    return "\n".join(lines)


def central(f, args, wrt, h=1e-5):
    """The gradient of `f` with respect to the arguments `wrt`, by central differences."""
    out = []
    for i in (wrt if isinstance(wrt, tuple) else (wrt,)):
        x = np.asarray(args[i], dtype=float)
        g = np.zeros(x.shape)
        for k in np.ndindex(x.shape):
            e = np.zeros(x.shape)
            e[k] = h
            step = [a for a in args]
            step[i] = x + e if x.ndim else float(x + h)
            up = f(*step)
            step[i] = x - e if x.ndim else float(x - h)
            g[k] = (up - f(*step)) / (2 * h)
        out.append(g)
    return tuple(out) if isinstance(wrt, tuple) else out[0]


def best(fn, args, target):
    """Minimum seconds per call of `fn(*args)` over a few measurements of ~`target` s, in
    process CPU time (steadier on a shared machine; the solvers are single-threaded)."""
    timer = timeit.Timer(lambda: fn(*args), timer=time.process_time)
    number = 1
    while timer.timeit(number) < target / 10:
        number *= 10
    return min(timer.repeat(7, number)) / number


def check(name, g, f, args, wrt):
    """Exit with a message unless the gradient `g` of `f` agrees with central differences
    (to 1e-4 relative: the solves stop near 1e-10)."""
    got, want = g(*args), central(f, args, wrt, STEPS.get(name, 1e-5))
    for a, b in zip(got if isinstance(wrt, tuple) else (got,),
                    want if isinstance(wrt, tuple) else (want,)):
        if not np.allclose(a, b, rtol=1e-4, atol=1e-5):
            raise SystemExit(f"{name}: s2sad's gradient {a} disagrees with central "
                             f"differences {b}")


def bench(s2sad, quick=False):
    """One row per workload: the function's and s2sad's gradient's seconds per call, the
    first gradient call (transform and the run-time derivatives compiled)."""
    rows = []
    target = 0.02 if quick else 0.2
    for name, f, args, wrt in WORKLOADS:
        print(f"timing {name} (solvers) ...", file=sys.stderr, flush=True)
        t0 = time.perf_counter()
        g = s2sad.grad(f, wrt=wrt)
        g(*args)
        first = time.perf_counter() - t0
        check(name, g, f, args, wrt)
        rows.append({"workload": name, "function": best(f, args, target),
                     "gradient": best(g, args, target), "first": first})
    return rows


def report(rows):
    """The group's table (times in us) and the goal line."""
    head = ("workload", "function us", "s2sad grad us", "grad/function", "first call s")
    body = [(r["workload"], f"{r['function'] * 1e6:.0f}", f"{r['gradient'] * 1e6:.0f}",
             f"{r['gradient'] / r['function']:.2f}", f"{r['first']:.2f}") for r in rows]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *body)]
    lines = ["Solvers: gradients through SciPy's solvers by the implicit function theorem "
             "(Leibniz's rule for quad), in us per call", ""]
    lines += ["  ".join(str(x).rjust(w) for x, w in zip(line, widths))
              for line in (head, *body)]
    ratios = [(r["workload"], r["gradient"] / r["function"]) for r in rows
              if r["workload"] in IMPLICIT]
    missed = [f"{n} {x:.2f}x" for n, x in ratios if not x <= GOAL]
    every = ", ".join(f"{n} {x:.2f}x" for n, x in ratios)
    lines += ["", f"solvers goal (roots and minimisers: the implicit derivative at most 2x "
              f"the solve, the gradient within {GOAL:.0f}x the function): "
              + (f"missed by {', '.join(missed)}" if missed else f"met ({every})")]
    for r in rows:
        if r["workload"] == "lotka_volterra_fit":
            x = r["gradient"] / r["function"]
            lines.append(f"ODE goal (the Lotka-Volterra fit's gradient at most "
                         f"{ODE_GOAL:.0f}x the forward solve): "
                         + ("met" if x <= ODE_GOAL else "missed") + f" ({x:.2f}x)")
    return "\n".join(lines)


#: the spans of the memory table: the fit's, and 10 times longer (about 9 times the steps)
SPANS = (15.0, 150.0)
MEMORY_GOAL = 2.0   # the gradient's peak memory over the longer span / over the fit's


def lotka_volterra_over(t_end):
    """The Lotka-Volterra fit's loss with its 200 observations spread over `(0, t_end)`."""
    times = np.linspace(0.0, t_end, 201)[1:]

    def loss(p):
        sol = integrate.solve_ivp(lv_rhs, (0.0, t_end), LV_Y0, args=(p[0], p[1], p[2], p[3]),
                                  t_eval=times, rtol=1e-6, atol=1e-9)
        return np.sum((sol.y - LV_OBS) ** 2)
    return loss


def peak_memory(fn, args):
    """The peak of the memory Python allocates during `fn(*args)` (tracemalloc), bytes."""
    import gc
    import tracemalloc
    gc.collect()
    tracemalloc.start()
    try:
        fn(*args)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def memory(s2sad, quick=False):
    """One row per span of `SPANS`: the solve's steps, the loss's and the gradient's CPU
    seconds per call and peak memory (bytes, tracemalloc, a call after the first)."""
    rows = []
    target = 0.05 if quick else 0.2
    for t_end in SPANS:
        print(f"timing the memory of the Lotka-Volterra gradient over (0, {t_end:g}) ...",
              file=sys.stderr, flush=True)
        f = lotka_volterra_over(t_end)
        g = s2sad.grad(f)
        g(LV_P)
        steps = len(integrate.solve_ivp(lv_rhs, (0.0, t_end), LV_Y0, args=tuple(LV_P),
                                        rtol=1e-6, atol=1e-9).t) - 1
        rows.append({"span": t_end, "steps": steps, "function": best(f, (LV_P,), target),
                     "gradient": best(g, (LV_P,), target),
                     "function_peak": peak_memory(f, (LV_P,)),
                     "gradient_peak": peak_memory(g, (LV_P,))})
    return rows


def memory_report(rows):
    """The memory table (ms, KB) and the goal line."""
    head = ("span", "steps", "loss ms", "gradient ms", "gradient/loss", "loss peak KB",
            "gradient peak KB")
    body = [(f"(0, {r['span']:g})", r["steps"], f"{r['function'] * 1e3:.2f}",
             f"{r['gradient'] * 1e3:.2f}", f"{r['gradient'] / r['function']:.2f}",
             f"{r['function_peak'] / 1e3:.0f}", f"{r['gradient_peak'] / 1e3:.0f}")
            for r in rows]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *body)]
    lines = ["The Lotka-Volterra fit's gradient over a longer span (its 200 observations "
             "spread over it): CPU time and peak memory (tracemalloc) per call", ""]
    lines += ["  ".join(str(x).rjust(w) for x, w in zip(line, widths))
              for line in (head, *body)]
    growth = rows[-1]["gradient_peak"] / rows[0]["gradient_peak"]
    steps = rows[-1]["steps"] / rows[0]["steps"]
    lines += ["", f"memory goal (the gradient's peak memory flat, at most {MEMORY_GOAL:.0f}x, "
              f"while the steps grow {steps:.1f}x): "
              + ("met" if growth <= MEMORY_GOAL else "missed") + f" ({growth:.2f}x)"]
    return "\n".join(lines)


def ode_comparison(s2sad, quick=False, jax_python=None):
    """The Lotka-Volterra fit's gradient three ways, in ms of process CPU time per call
    (steady state) and s of wall time for the first call: s2sad's through solve_ivp,
    s2sad's through a hand-written RK4, JAX's odeint (None where JAX is missing)."""
    from s2sad import cache
    target = 0.05 if quick else 0.5
    rows = []
    for name, f in (("s2sad solve_ivp", lotka_volterra_fit),
                    ("s2sad hand RK4", lotka_volterra_rk4)):
        print(f"timing {name} (ode comparison) ...", file=sys.stderr, flush=True)
        cache.clear()       # (the first call compiles, as JAX's does)
        t0 = time.perf_counter()
        g = s2sad.grad(f)
        g(LV_P)
        first = time.perf_counter() - t0
        rows.append({"how": name, "function": best(f, (LV_P,), target),
                     "gradient": best(g, (LV_P,), target), "first": first,
                     "dp": g(LV_P)})
    rows.append(_jax_row(quick, jax_python))
    return rows


def _jax_row(quick, jax_python):
    try:
        import jax  # noqa: F401
    except ImportError:
        if not jax_python:
            return {"how": "jax odeint", "missing": True}
        out = subprocess.run([jax_python, os.path.abspath(__file__), "--jax"]
                             + (["--quick"] if quick else []),
                             capture_output=True, text=True, check=True).stdout
        row = json.loads(out.strip().splitlines()[-1])
        row["dp"] = np.array(row["dp"])
        return row
    return jax_lotka_volterra(quick)


def jax_lotka_volterra(quick=False):
    """JAX's row of `ode_comparison`: `jax.jit` of odeint's loss and of its gradient."""
    import jax
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    from jax.experimental.ode import odeint

    def rhs(y, t, a, b, d, g):
        return jnp.stack([a * y[0] - b * y[0] * y[1], d * y[0] * y[1] - g * y[1]])
    times = jnp.concatenate([jnp.zeros(1), jnp.asarray(LV_T)])
    observed = jnp.asarray(LV_OBS)

    def loss(p):
        ys = odeint(rhs, jnp.asarray(LV_Y0), times, p[0], p[1], p[2], p[3], rtol=1e-6,
                    atol=1e-9)
        return jnp.sum((ys[1:].T - observed) ** 2)
    p = jnp.asarray(LV_P)
    f, g = jax.jit(loss), jax.jit(jax.grad(loss))
    t0 = time.perf_counter()
    g(p).block_until_ready()
    first = time.perf_counter() - t0
    f(p).block_until_ready()
    target = 0.05 if quick else 0.5
    return {"how": "jax odeint", "function": best(lambda q: f(q).block_until_ready(),
                                                  (p,), target),
            "gradient": best(lambda q: g(q).block_until_ready(), (p,), target),
            "first": first, "dp": np.asarray(g(p))}


def ode_report(rows):
    """The comparison's table (ms per call, s for the first call)."""
    head = ("how", "loss ms", "gradient ms", "gradient/loss", "first call s",
            "gradient vs s2sad's")
    ref = rows[0]["dp"]
    body = []
    for r in rows:
        if r.get("missing"):
            body.append((r["how"], "not measured (no JAX)", "", "", "", ""))
            continue
        rel = np.max(np.abs(np.asarray(r["dp"]) - ref) / np.abs(ref))
        body.append((r["how"], f"{r['function'] * 1e3:.2f}", f"{r['gradient'] * 1e3:.2f}",
                     f"{r['gradient'] / r['function']:.2f}", f"{r['first']:.2f}",
                     f"{rel:.1e}"))
    widths = [max(len(str(x)) for x in col) for col in zip(head, *body)]
    lines = ["The Lotka-Volterra fit's gradient (4 parameters, 200 observations), three "
             "ways, in ms of CPU time per call", ""]
    lines += ["  ".join(str(x).rjust(w) for x, w in zip(line, widths))
              for line in (head, *body)]
    return "\n".join(lines)


def main():
    quick = "--quick" in sys.argv
    if "--jax" in sys.argv:         # (in an interpreter that has JAX: ode_comparison's)
        row = jax_lotka_volterra(quick)
        print(json.dumps(dict(row, dp=np.asarray(row["dp"]).tolist())))
        return
    import s2sad
    jax_python = sys.argv[sys.argv.index("--jax-python") + 1] if (
        "--jax-python" in sys.argv) else None
    print(report(bench(s2sad, quick=quick)))
    print()
    print(second_report(second(s2sad, quick=quick)))
    print()
    print(ode_report(ode_comparison(s2sad, quick, jax_python)))
    print()
    print(memory_report(memory(s2sad, quick)))


if __name__ == "__main__":
    main()
