"""Benchmark s2sad gradients against hand-written ones (and optional peers).

Run from the repository root:

    python bench/run.py                       # full run, about 2 minutes
    python bench/run.py --quick               # smoke run, seconds
    python bench/run.py --only mlp,logreg     # selected workloads
    python bench/run.py --group array-loops   # one group (scalar, numpy, array-loops, mixed,
                                              # dask, native, solvers, batching)
    python bench/run.py --json results.json

Peers (autograd, JAX, PyTorch) are used only when they are importable.
"""

import argparse
import dataclasses
import functools
import gc
import importlib.metadata
import json
import math
import os
import platform
import re
import sys
import time
import timeit
import traceback
import tracemalloc
import types


def _early_threads(argv):
    """The value of --threads, which must act before NumPy loads its BLAS."""
    for i, a in enumerate(argv):
        if a == "--threads" and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith("--threads="):
            return a.partition("=")[2]
    return None


THREADS = _early_threads(sys.argv[1:])
if THREADS and THREADS.isdigit() and int(THREADS) > 0:
    for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[_var] = THREADS
    if THREADS == "1":  # JAX (XLA on CPU): one thread for its Eigen kernels
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                                   " --xla_cpu_multi_thread_eigen=false"
                                   " intra_op_parallelism_threads=1").strip()
# The numba backend's compile column times Numba's compile: without its disk cache, which
# would load the code of a function timed before (bench/numba_first_call.py times both)
os.environ["S2SAD_CACHE_DIR"] = ""

import numpy as np  # noqa: E402  (after --threads)

BENCH = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(BENCH))  # the repository's s2sad first
import native  # noqa: E402  (bench/native.py)
import workloads as wl  # noqa: E402
from workloads import ident, workloads  # noqa: E402

FD_RTOL = 1e-6      # hand gradient vs central finite differences
S2SAD_RTOL = 1e-9   # s2sad vs hand gradient (both exact up to rounding)
PEER_RTOL = 1e-6    # peers vs hand gradient
TIME_GOAL = 1.15    # the goal for NumPy workloads: s2sad / hand time
MEMORY_GOAL = 1.2   # ... and s2sad / hand peak memory
LOOP_TIME_GOAL = 1.3     # issue #21, array loops: s2sad / hand time
LOOP_MEMORY_GOAL = 1.15  # ... and s2sad / hand peak memory
CHECKPOINT_TIME_GOAL = 3.0  # a checkpointed loop: s2sad / hand time (the hand tapes all)
CHECKPOINT_STATES = 4       # ... and peak memory k + 4 states (k snapshots)
MIXED_TIME_GOAL = 1.3    # issue #20, NumPy functions on floats: s2sad / hand time
DASK_TIME_GOAL = 1.3     # issue #23, Dask data on a cluster: s2sad / hand time
GROUPS = ("scalar", "numpy", "array-loops", "mixed", "dask", "native", "solvers", "batching")
JVP_GOAL = 1.5      # s2sad.jvp / hand tangent time (scalar workloads)
HVP_GOAL = 5.0      # s2sad.hvp / s2sad.grad time (Rosenbrock 1e3)
TRANSFORM_GOAL = 0.050  # seconds to transform and compile one workload
CLOCK = time.perf_counter  # per-call timings; --cpu-time: time.process_time


# ---------------------------------------------------------------------------
# Helpers


def fresh(f, **extra_globals):
    """A new function object with f's code (s2sad caches per function object).

    Extra globals rebind names, e.g. ``math`` for peers that need their own
    ``log``/``sin``.
    """
    g = {**f.__globals__, **extra_globals} if extra_globals else f.__globals__
    return types.FunctionType(f.__code__, g, f.__name__, f.__defaults__,
                              f.__closure__)


def to_numpy(c):
    """A float64 NumPy array (0-d for a number) from a float, a NumPy, JAX or
    torch array."""
    if hasattr(c, "detach"):  # a torch tensor
        c = c.detach().cpu().numpy()
    return np.asarray(c, dtype=np.float64)


def as_tuple(g, wrt):
    """The gradient's components, one float64 array (0-d for a float) each; the
    fields of a dataclass one array of shape (1,) each, so that `close` judges each
    field on its own scale (a dataclass gathers parameters of unlike sizes)."""
    out = []
    for c in ((g,) if isinstance(wrt, int) else g):
        if dataclasses.is_dataclass(c) and not isinstance(c, type):
            out += [to_numpy(getattr(c, f.name)).reshape(1)
                    for f in dataclasses.fields(c) if getattr(c, f.name) is not None]
        else:
            out.append(to_numpy(c))
    return tuple(out)


def wrt_indices(wrt):
    return (wrt,) if isinstance(wrt, int) else tuple(wrt)


def close(got, want, rtol):
    """Elementwise, each error within rtol times a scale.

    For scalar gradients the scale is the gradient's largest entry; for array
    gradients it is the largest entry of the same component (so that a small
    bias gradient is not judged on the scale of a large weight gradient).
    """
    if len(got) != len(want) or any(g.shape != w.shape
                                     for g, w in zip(got, want)):
        return False
    if all(w.ndim == 0 for w in want):
        scales = [max(abs(float(w)) for w in want) or 1.0] * len(want)
    else:
        scales = [float(np.max(np.abs(w), initial=0.0)) or 1.0 for w in want]
    return all(bool(np.all(np.abs(g - w) <= rtol * np.maximum(np.abs(w), s)))
               for g, w, s in zip(got, want, scales))


def show(g):
    """A gradient for a message: its floats, or a summary of large arrays."""
    if all(c.ndim == 0 for c in g):
        return str(tuple(float(c) for c in g))
    return "(" + ", ".join(
        f"array{c.shape} {np.array2string(c.ravel()[:3], precision=6)[:-1]} ...]"
        if c.size > 3 else np.array2string(c, precision=6) for c in g) + ")"


def worst(got, want):
    """Where two gradients differ most, per component, for a message."""
    parts = []
    for i, (g, w) in enumerate(zip(got, want)):
        if g.shape != w.shape:
            parts.append(f"component {i}: shape {g.shape}, expected {w.shape}")
            continue
        err = np.abs(g - w)
        if not err.size:
            continue
        k = tuple(int(j) for j in np.unravel_index(np.argmax(err), err.shape))
        parts.append(f"component {i}: largest difference {float(err[k]):.3g} "
                     f"at index {k} (got {float(g[k]):.17g}, expected "
                     f"{float(w[k]):.17g}; scale {float(np.max(np.abs(w))):.3g})")
    return "\n  ".join(parts)


def central_fd(f, args, wrt):
    """Central differences, one element at a time (arrays: use small ones)."""
    out = []
    for i in wrt_indices(wrt):
        a = args[i]
        if isinstance(a, np.ndarray):
            g = np.empty(a.shape)
            for k in np.ndindex(a.shape):
                h = 1e-5 * max(1.0, abs(a[k]))
                hi, lo = a.copy(), a.copy()
                hi[k] += h
                lo[k] -= h
                g[k] = (f(*args[:i], hi, *args[i + 1:])
                        - f(*args[:i], lo, *args[i + 1:])) / (2 * h)
            out.append(g)
            continue
        if dataclasses.is_dataclass(a):
            out += fields_fd(lambda p: f(*args[:i], p, *args[i + 1:]), a)
            continue
        h = 1e-5 * max(1.0, abs(a))
        hi, lo = list(args), list(args)
        hi[i] += h
        lo[i] -= h
        out.append(to_numpy((f(*hi) - f(*lo)) / (2 * h)))
    return tuple(out)


def fields_fd(f, p):
    """Central differences along each float field of dataclass `p` (shape (1,) each,
    as in `as_tuple`), with a step relative to the field: a time step of 1e-3 over
    1000 steps needs one much smaller than 1e-5."""
    out = []
    for field in dataclasses.fields(p):
        a = getattr(p, field.name)
        if not isinstance(a, float):
            continue
        h = 1e-6 * (abs(a) or 1.0)
        hi = dataclasses.replace(p, **{field.name: a + h})
        lo = dataclasses.replace(p, **{field.name: a - h})
        out.append(to_numpy((f(hi) - f(lo)) / (2 * h)).reshape(1))
    return out


def per_calls(calls, target, repeat, budget):
    """{name: minimum seconds per call} for `calls` ({name: (fn, args)}), each over
    up to `repeat` measurements of ~`target` s, taken in turns (one measurement of
    each, then the next round): a machine that slows down for a while slows all of
    them, so their ratios stay steady."""
    timers, plans, best = {}, {}, {}
    for name, (fn, args) in calls.items():
        timer = timers[name] = timeit.Timer("fn(*args)", globals={"fn": fn, "args": args},
                                            timer=CLOCK)
        number, dt = 1, timer.timeit(1)
        if dt >= budget:  # very slow: one call is all we can afford
            best[name] = dt
            continue
        while dt < target / 10:
            number *= 10
            dt = timer.timeit(number)
        one = dt / number
        number = max(1, round(target / one))
        plans[name] = (number, max(1, min(repeat, int(budget / (number * one)))))
        best[name] = math.inf
    for round_ in range(max((r for _, r in plans.values()), default=0)):
        for name, (number, rounds) in plans.items():
            if round_ < rounds:
                best[name] = min(best[name], timers[name].timeit(number) / number)
    return best


def first_call(make, args, times):
    """Minimum over `times` of: build a fresh gradient and call it once (in CPU time
    with --cpu-time: the transform is single-threaded Python)."""
    best = math.inf
    for _ in range(times):
        t0 = CLOCK()
        make()(*args)
        best = min(best, CLOCK() - t0)
    return best


def peak_memory(fn, args, times):
    """Minimum over `times` of the peak bytes tracemalloc sees during one call.

    Only what is allocated during the call counts (the arguments are not), and
    the result, alive at the end, does.  NumPy reports its array buffers to
    tracemalloc, so this is the peak of temporaries plus the result.
    """
    fn(*args)  # warm: compile, caches
    best = math.inf
    for _ in range(times):
        gc.collect()
        tracemalloc.start()
        try:
            out = fn(*args)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        del out
        best = min(best, peak)
    return best


# ---------------------------------------------------------------------------
# Peers: each maps (workload, args) to (gradient function, its arguments).
# The scalar workloads call ``math.log`` etc.; for peers ``math`` is rebound
# to the peer's own functions of the same names, the code itself is
# unchanged.  The NumPy workloads run with ``np`` rebound to
# ``autograd.numpy`` or ``jax.numpy``; torch runs the workload's ``torch_f``
# twin.  Array arguments are converted to the peer's arrays once, outside
# the timing.


def math_for(lib):
    return types.SimpleNamespace(**{n: getattr(lib, n) for n in
                                    ("log", "sin", "cos", "exp", "sqrt")})


class Skip(Exception):
    """A peer declines a workload (reported, not an error)."""


def dataclass_argument(w):
    """The name of the class of `w`'s first dataclass argument, or None."""
    return next((type(a).__name__ for a in w.args
                 if dataclasses.is_dataclass(a) and not isinstance(a, type)), None)


def load_peers(wanted, jit_max_eqns, threads=None):
    peers, versions = {}, {}

    def want(name):
        return wanted == "all" or name in wanted.split(",")

    if want("autograd"):
        try:
            import autograd
            import autograd.numpy as anp

            def autograd_grad(w, args):
                if dataclass_argument(w):
                    raise Skip(f"autograd does not differentiate a dataclass "
                               f"({dataclass_argument(w)})")
                f = fresh(w.f, math=math_for(anp), np=anp)
                return autograd.grad(f, w.wrt), args

            peers["autograd"] = autograd_grad
            versions["autograd"] = importlib.metadata.version("autograd")
        except Exception:
            pass

    if want("jax"):
        try:
            import jax
            import jax.numpy as jnp
            jax.config.update("jax_enable_x64", True)  # float64 like the rest

            def jax_grad(w, args, jit=False):
                for a in args:  # a dataclass argument: a pytree of its fields
                    if dataclasses.is_dataclass(a) and not isinstance(a, type):
                        register_dataclass(type(a))
                f = fresh(w.f, math=math_for(jnp), np=jnp)
                g = jax.grad(f, argnums=w.wrt)
                if w.numpy:  # device arrays, once, outside the timing
                    args = tuple(jnp.asarray(a) for a in args)
                if jit:  # Python loops unroll: the XLA compile can explode
                    traced = jax.jit(g).trace(*args)
                    n = len(traced.jaxpr.eqns)
                    if n > jit_max_eqns:
                        raise Skip(f"{n} equations once unrolled, over "
                                   f"--jit-max-eqns {jit_max_eqns}")
                    g = traced.lower().compile()
                return (lambda *a: jax.block_until_ready(g(*a))), args

            @functools.cache
            def register_dataclass(cls):
                jax.tree_util.register_dataclass(
                    cls, data_fields=[f.name for f in dataclasses.fields(cls)],
                    meta_fields=[])

            peers["jax"] = jax_grad
            peers["jax.jit"] = lambda w, args: jax_grad(w, args, jit=True)
            versions["jax"] = jax.__version__
        except Exception:
            pass

    if want("torch"):
        try:
            import torch
            if threads:
                torch.set_num_threads(threads)

            def torch_grad(w, args):
                wrt, idx = w.wrt, wrt_indices(w.wrt)
                if w.numpy:
                    return torch_array_grad(w, args)
                if w.group == "mixed":
                    raise Skip("its NumPy functions of floats have no torch twin")
                g = fresh(w.f, math=math_for(torch))

                def grad_fn(*args):
                    xs = [torch.tensor(a, dtype=torch.float64,
                                       requires_grad=i in idx)
                          for i, a in enumerate(args)]
                    gs = torch.autograd.grad(g(*xs), [xs[i] for i in idx])
                    gs = tuple(x.item() for x in gs)
                    return gs[0] if isinstance(wrt, int) else gs
                return grad_fn, args

            def torch_array_grad(w, args):
                if w.torch_f is None:
                    raise Skip("no torch version of this workload")
                g = fresh(w.torch_f, torch=torch)
                idx = wrt_indices(w.wrt)
                xs = tuple(torch.from_numpy(a).requires_grad_(i in idx)
                           if isinstance(a, np.ndarray) else a
                           for i, a in enumerate(args))

                def grad_fn(*xs):
                    gs = torch.autograd.grad(g(*xs), [xs[i] for i in idx])
                    return gs[0] if isinstance(w.wrt, int) else gs
                return grad_fn, xs

            peers["torch"] = torch_grad
            versions["torch"] = torch.__version__
        except Exception:
            pass

    return peers, versions


def load_s2sad():
    """(module, None) or (None, reason) when s2sad is not usable yet."""
    try:
        import s2sad
        s2sad.grad  # noqa: B018  (the API may not exist yet)
        return s2sad, None
    except Exception as e:  # ImportError, AttributeError, ...
        return None, f"{type(e).__name__}: {e}"


# ---------------------------------------------------------------------------
# Checks (once, before any timing)


def fail(msg):
    sys.exit(f"\nbench/run.py: CHECK FAILED\n{msg}")


def check(w, s2sad, peers):
    """Validate the hand gradient, s2sad and peers on workload `w`.

    Returns {peer: (gradient function, its arguments, seconds to build it and
    call it once)} for the peers that agree with the hand gradient.
    """
    name, f, hand, args, wrt = w.name, w.f, w.hand, w.args, w.wrt
    if w.mode == "forward":
        check_forward_loop(w, s2sad)
        return {}
    want = as_tuple(hand(*args), wrt)
    # Finite differences: on the instance itself for scalars, on a small
    # instance for arrays (one pair of calls per element).
    fd_args = w.small if w.numpy else args
    fd_want = as_tuple(hand(*fd_args), wrt) if w.numpy else want
    fd = central_fd(f, fd_args, wrt)
    where = "on the small instance " if w.numpy else f"at args {args} "
    if not close(fd_want, fd, FD_RTOL):
        fail(f"{name}: hand-written gradient {show(fd_want)} disagrees with "
             f"central finite differences {show(fd)} {where}(rtol {FD_RTOL}):"
             f"\n  {worst(fd_want, fd)}")
    if s2sad is not None:
        instances = [("the small instance", fd_args, fd_want)] if w.numpy else []
        instances.append(("the benchmark instance" if w.numpy else
                          f"args {args}", args, want))
        call = f"s2sad.grad({f.__name__}, wrt={wrt})"
        for label, a, ref in instances:
            try:
                got = as_tuple(s2sad.grad(f, wrt=wrt)(*a), wrt)
            except Exception:
                fail(f"{name}: {call} raised on {label}:\n"
                     f"{traceback.format_exc()}")
            if not close(got, ref, S2SAD_RTOL):
                fail(f"{name}: {call} on {label} = {show(got)}, but the "
                     f"hand-written gradient is {show(ref)} (rtol "
                     f"{S2SAD_RTOL}):\n  {worst(got, ref)}")
        call = f"s2sad.value_and_grad({f.__name__}, wrt={wrt})"
        try:
            value, got = s2sad.value_and_grad(f, wrt=wrt)(*args)
        except Exception:
            fail(f"{name}: {call} raised:\n{traceback.format_exc()}")
        got, value_want = as_tuple(got, wrt), f(*args)
        if not (close(as_tuple(value, 0), as_tuple(value_want, 0), S2SAD_RTOL)
                and close(got, want, S2SAD_RTOL)):
            fail(f"{name}: {call} = {(value, show(got))}, expected "
                 f"{(value_want, show(want))}")
    ok = {}
    for peer, make in peers.items():
        try:
            t0 = time.perf_counter()
            gf, peer_args = make(w, args)
            got = as_tuple(gf(*peer_args), wrt)
            first = time.perf_counter() - t0
        except Skip as e:
            print(f"note: {peer} skipped on {name}: {e}")
            continue
        except Exception as e:
            print(f"warning: {peer} fails on {name} ({type(e).__name__}: "
                  f"{e}); peer dropped for this workload")
            continue
        if close(got, want, PEER_RTOL):
            ok[peer] = (gf, peer_args, first)
        else:
            print(f"warning: {peer} on {name} gives {show(got)}, expected "
                  f"{show(want)}; peer dropped for this workload:\n  "
                  f"{worst(got, want)}")
    return ok


# ---------------------------------------------------------------------------
# Forward mode: s2sad.jvp against the hand-written tangents of the scalar
# workloads (dual-number style, next to each workload).


def direction(n):
    """The tangent of the jvp benchmarks: (1, -1/2, 1/3, -1/4)[:n]."""
    return tuple((-1) ** k / (k + 1) for k in range(n))


def directional_fd(f, args, tangents):
    """Central difference of scalar f along `tangents`."""
    h = 1e-5 * max(1.0, max(abs(a) for a in args))
    hi = [a + h * t for a, t in zip(args, tangents)]
    lo = [a - h * t for a, t in zip(args, tangents)]
    return (f(*hi) - f(*lo)) / (2 * h)


def load_jvp_peers(loaded):
    """{peer: make(w, args, tangents) -> (jvp function, its arguments)} for the
    peers in `loaded` (those load_peers imported); each jvp function returns
    (value, tangent), like s2sad.jvp."""
    peers = {}
    if "autograd" in loaded:
        import autograd
        import autograd.numpy as anp

        def autograd_jvp(w, args, tangents):
            f, n = fresh(w.f, math=math_for(anp)), len(args)
            idx = tuple(range(n))
            return (lambda *a: autograd.make_jvp(f, idx)(*a[:n])(a[n:])), args + tangents
        peers["autograd"] = autograd_jvp
    if "jax" in loaded:
        import jax
        import jax.numpy as jnp

        def jax_jvp(w, args, tangents):
            f = fresh(w.f, math=math_for(jnp))
            return (lambda p, t: jax.block_until_ready(jax.jvp(f, p, t))), (args, tangents)
        peers["jax"] = jax_jvp
    if "torch" in loaded:
        import torch
        import torch.func

        def torch_jvp(w, args, tangents):
            f = fresh(w.f, math=math_for(torch))

            def jvp(p, t):  # float64 scalar tensors built in each call, like grad
                p = tuple(torch.tensor(a, dtype=torch.float64) for a in p)
                t = tuple(torch.tensor(a, dtype=torch.float64) for a in t)
                y, y_dot = torch.func.jvp(f, p, t)
                return y.item(), y_dot.item()
            return jvp, (args, tangents)
        peers["torch"] = torch_jvp
    return peers


def check_jvp(w, s2sad, peers):
    """Validate the hand tangent (finite differences), s2sad.jvp and peers (the
    hand tangent) on scalar workload `w`.  Returns (tangents, {peer: (jvp
    function, its arguments, seconds to build it and call it once)})."""
    name, f, args = w.name, w.f, w.args
    tangents = direction(len(args))
    value, tangent = (float(c) for c in w.jvp_hand(*args, *tangents))
    fd = directional_fd(f, args, tangents)
    where = f"at args {args}, tangents {tangents}"
    if not close((np.asarray(value),), (np.asarray(f(*args)),), S2SAD_RTOL):
        fail(f"{name}: the hand tangent's value {value} is not f{args} = {f(*args)}")
    # The tangent sums the partials times the tangents, and may cancel: judge it on
    # the scale of those terms (finite differences, one argument at a time).
    scale = sum(abs(float(g) * t) for g, t in zip(central_fd(f, args, w.wrt), tangents))
    if not abs(tangent - fd) <= FD_RTOL * max(scale, abs(fd)):
        fail(f"{name}: hand-written tangent {tangent!r} disagrees with central finite "
             f"differences {fd!r} {where} (rtol {FD_RTOL} of {scale:.3g})")

    def agree(got, rtol):
        return (len(got) == 2 and
                close((to_numpy(got[0]),), (np.asarray(value),), rtol) and
                close((to_numpy(got[1]),), (np.asarray(tangent),), rtol))
    if s2sad is not None:
        call = f"s2sad.jvp({f.__name__}, {args}, {tangents})"
        try:
            got = s2sad.jvp(f, args, tangents)
        except Exception:
            fail(f"{name}: {call} raised:\n{traceback.format_exc()}")
        if not agree(got, S2SAD_RTOL):
            fail(f"{name}: {call} = {got}, but the hand-written tangent gives "
                 f"{(value, tangent)} (rtol {S2SAD_RTOL})")
    ok = {}
    for peer, make in peers.items():
        try:
            t0 = time.perf_counter()
            fn, peer_args = make(w, args, tangents)
            got = fn(*peer_args)
            first = time.perf_counter() - t0
        except Exception as e:
            print(f"warning: {peer} jvp fails on {name} ({type(e).__name__}: {e}); "
                  "peer dropped for this workload")
            continue
        if agree(got, PEER_RTOL):
            ok[peer] = (fn, peer_args, first)
        else:
            print(f"warning: {peer} jvp on {name} gives {got}, expected "
                  f"{(value, tangent)}; peer dropped for this workload")
    return tangents, ok


def time_jvp(w, tangents, ok_peers, s2sad, plain, timing, transforms):
    """One row of the jvp table."""
    args = w.args
    calls = {"hand": (w.jvp_hand, args + tangents)}
    transform = None
    if s2sad is not None:
        calls["s2sad"] = (s2sad.jvp, (w.f, args, tangents))
        # the generated f_jvp itself, called without the API (for its overhead)
        wrt = tuple(range(len(args)))
        f_jvp = s2sad.forward_api.compiled(
            w.f, wrt, s2sad.compilation.arg_types_of(w.f, args)).fn
        calls["f_jvp"] = (f_jvp, args + tangents)
        transform = first_call(lambda: functools.partial(s2sad.jvp, fresh(w.f)),
                               (args, tangents), transforms)
    for peer, (fn, peer_args, _) in ok_peers.items():
        calls[peer] = (fn, peer_args)
    times = {"plain": plain, **per_calls(calls, *timing)}
    return {"workload": w.name, "tangents": tangents, "times": times,
            "s2sad_transform": transform}


# ---------------------------------------------------------------------------
# Hessian-vector product of Rosenbrock (10^3): s2sad.hvp against s2sad.grad
# and against the hand-written product.


def hvp_bench(s2sad, timing, transforms):
    f, grad_hand, hvp_hand = wl.rosenbrock, wl.rosenbrock_hand, wl.rosenbrock_hvp_hand
    rng = np.random.default_rng(2)
    small, = wl.rosenbrock_args(8, seed=1)
    x, = wl.rosenbrock_args(10 ** 3)
    instances = [("the small instance", small, rng.standard_normal(small.size)),
                 ("the benchmark instance", x, rng.standard_normal(x.size))]
    for label, xs, vs in instances:
        want = hvp_hand(xs, vs)
        h = 1e-6
        fd = (grad_hand(xs + h * vs) - grad_hand(xs - h * vs)) / (2 * h)
        if not close((want,), (fd,), FD_RTOL):
            fail(f"rosenbrock hvp: the hand-written Hessian-vector product disagrees "
                 f"with finite differences of the hand gradient on {label}:\n  "
                 f"{worst((want,), (fd,))}")
        if s2sad is not None:
            got = np.asarray(s2sad.hvp(f)(xs, vs))
            if not close((got,), (want,), S2SAD_RTOL):
                fail(f"rosenbrock hvp: s2sad.hvp(rosenbrock) disagrees with the "
                     f"hand-written product on {label}:\n  {worst((got,), (want,))}")
    v = instances[1][2]
    calls = {"hand_grad": (grad_hand, (x,)), "hand_hvp": (hvp_hand, (x, v))}
    transform = None
    if s2sad is not None:
        calls["s2sad_grad"] = (s2sad.grad(f), (x,))
        calls["s2sad_hvp"] = (s2sad.hvp(f), (x, v))
        transform = first_call(lambda: s2sad.hvp(fresh(f)), (x, v), transforms)
    times = per_calls(calls, *timing)
    return {"workload": "rosenbrock_1e3", "times": times, "s2sad_transform": transform}


# ---------------------------------------------------------------------------
# Memory of a long tape: the Lotka-Volterra gradient over 10^5 Euler steps.


def tape_values(source):
    """(names stored on the tape per iteration, those of them the pullback reads)
    for the first tape of generated source: the tuple appended to the tape in the
    forward loop, and the names of `for ... in reversed(tape)` loaded in its body."""
    import ast
    tree = ast.parse(source)
    for loop in ast.walk(tree):
        if not (isinstance(loop, ast.For) and isinstance(loop.iter, ast.Call)
                and getattr(loop.iter.func, "id", None) == "reversed"):
            continue
        tape = loop.iter.args[0].id
        stored = next(
            [ast.unparse(e) for e in (c.args[0].elts if isinstance(c.args[0], ast.Tuple)
                                      else [c.args[0]])]
            for c in ast.walk(tree)
            if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute)
            and c.func.attr == "append" and getattr(c.func.value, "id", None) == tape)
        loaded = {n.id for stmt in loop.body for n in ast.walk(stmt)
                  if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        targets = ([e.id for e in loop.target.elts] if isinstance(loop.target, ast.Tuple)
                   else [loop.target.id])
        return stored, [t for t in targets if t in loaded]
    return [], []


def loop_tangents(w):
    """The tangents s2sad.jvp gets on forward-mode workload `w`: 1 for the first of
    `wrt`, None for the others."""
    first = wrt_indices(w.wrt)[0]
    return tuple(1.0 if i == first else None for i in range(len(w.args)))


def loop_jvp(s2sad, f, w):
    """A function of `w`'s arguments that runs s2sad.jvp of `f` with `loop_tangents`."""
    tangents = loop_tangents(w)
    return lambda *a: s2sad.jvp(f, a, tangents)


def check_forward_loop(w, s2sad):
    """Validate a forward-mode array-loop workload: the hand tangent against central
    differences on the small instance, s2sad.jvp against the hand tangent on both."""
    first = wrt_indices(w.wrt)[0]
    for label, a in (("the small instance", w.small), ("the benchmark instance", w.args)):
        value, tangent = w.hand(*a)
        if not close((to_numpy(value),), (to_numpy(w.f(*a)),), S2SAD_RTOL):
            fail(f"{w.name}: hand-written value {value} disagrees with the function's "
                 f"{w.f(*a)} on {label}")
        if label == "the small instance":
            fd = central_fd(w.f, a, first)[0]
            if not close((to_numpy(tangent),), (fd,), FD_RTOL):
                fail(f"{w.name}: hand-written tangent {tangent} disagrees with central "
                     f"finite differences {fd} on {label}")
        if s2sad is None:
            continue
        try:
            got_value, got = loop_jvp(s2sad, w.f, w)(*a)
        except Exception:
            fail(f"{w.name}: s2sad.jvp raised on {label}:\n{traceback.format_exc()}")
        if not close((to_numpy(got_value), to_numpy(got)),
                     (to_numpy(value), to_numpy(tangent)), S2SAD_RTOL):
            fail(f"{w.name}: s2sad.jvp on {label} = {(got_value, got)}, but the hand-written "
                 f"tangent gives {(value, tangent)}")


def pullback_reads(source):
    """The header line "the pullback reads: ..." of generated reverse-mode source,
    its wrapped continuation lines joined, without the comment sign ("" if absent)."""
    lines, found = [], False
    for line in source.splitlines():
        text = line.strip()
        if not found:
            found = text.startswith("# the pullback reads")
            if found:
                lines.append(text[1:].strip())
        elif text.startswith("#") and text[1:2].isspace() and text[2:3].isspace():
            lines.append(text[1:].strip())   # a continuation: indented past "# "
        else:
            break
    return " ".join(lines)


def per_iteration(header):
    """[(names, loop)] for each loop the header says is taped per iteration."""
    return [([n.strip() for n in names.split(",")], loop) for names, loop in
            re.findall(r"(?:^|[:;]) *([\w, ]+?) of each iteration of (the loop at line \d+)",
                       header)]


def tape_bench(s2sad, timing, mem_times):
    f, hand = wl.lotka_volterra_1e5, wl.lotka_volterra_1e5_hand
    args, wrt, steps = (1.5, 1.0, 3.0, 1.0), (0, 1, 2, 3), wl.LV_LONG_STEPS
    want = as_tuple(hand(*args), wrt)
    fd = central_fd(f, args, wrt)
    if not close(want, fd, FD_RTOL):
        fail(f"lotka_volterra_1e5: hand-written gradient {show(want)} disagrees with "
             f"central finite differences {show(fd)}:\n  {worst(want, fd)}")
    row = {"workload": "lotka_volterra_1e5", "steps": steps,
           "memory": {"hand": peak_memory(hand, args, mem_times)},
           "hand_values": ["u", "v"]}
    calls = {"hand": (hand, args)}
    if s2sad is not None:
        g = s2sad.grad(f, wrt=wrt)
        got = as_tuple(g(*args), wrt)
        if not close(got, want, S2SAD_RTOL):
            fail(f"lotka_volterra_1e5: s2sad.grad = {show(got)}, but the hand-written "
                 f"gradient is {show(want)}:\n  {worst(got, want)}")
        row["memory"]["s2sad"] = peak_memory(g, args, mem_times)
        calls["s2sad"] = (g, args)
        row["stored"], row["read"] = tape_values(g.source)
    row["times"] = per_calls(calls, *timing)
    return row


# ---------------------------------------------------------------------------
# Report


def fmt_us(s):
    return "-" if s is None else f"{s * 1e6:.3g}"


def fmt_ratio(a, b):
    if a is None or b is None:
        return "-"
    r = a / b
    return f"{r:.2f}" if r < 10 else f"{r:.1f}" if r < 100 else f"{r:.0f}"


def fmt_ms(s):
    return "-" if s is None else f"{s * 1e3:.1f}"


def table(rows, peer_names):
    head = (["workload", "plain us", "hand us", "s2sad us", "s2sad/hand"]
            + [f"{p}/hand" for p in peer_names] + ["transform ms"]
            + (["jit compile ms"] if "jax.jit" in peer_names else []))
    body = []
    for r in rows:
        t = r["times"]
        line = [r["workload"], fmt_us(t["plain"]), fmt_us(t["hand"]),
                fmt_us(t.get("s2sad")), fmt_ratio(t.get("s2sad"), t["hand"])]
        line += [fmt_ratio(t.get(p), t["hand"]) for p in peer_names]
        line.append(fmt_ms(r["s2sad_transform"]))
        if "jax.jit" in peer_names:
            line.append(fmt_ms(r["jax_jit_compile"]))
        body.append(line)
    return render(head, body)


def fmt_mb(b):
    return "-" if b is None else f"{b / 1e6:.3g}"


def memory_table(rows):
    head = ["workload", "plain MB", "hand MB", "s2sad MB", "s2sad/hand"]
    body = [[r["workload"], fmt_mb(m["plain"]), fmt_mb(m["hand"]),
             fmt_mb(m.get("s2sad")), fmt_ratio(m.get("s2sad"), m["hand"])]
            for r in rows if (m := r.get("memory"))]
    return render(head, body) if body else ""


def render(head, body):
    widths = [max(len(x[i]) for x in [head] + body) for i in range(len(head))]

    def show_row(cells):
        return "| " + " | ".join(
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(cells, widths))) + " |"
    sep = "|" + "|".join("-" * (w + 1) + (":" if i else "-")
                         for i, w in enumerate(widths)) + "|"
    return "\n".join([show_row(head), sep] + [show_row(b) for b in body])


def goal_report(rows):
    """One line per NumPy workload that misses the issue's goal."""
    out = []
    for r in rows:
        t, m = r["times"], r.get("memory")
        if not m or t.get("s2sad") is None:
            continue
        tr, mr = t["s2sad"] / t["hand"], m["s2sad"] / m["hand"]
        if tr > TIME_GOAL or mr > MEMORY_GOAL:
            out.append(f"  {r['workload']}: time {tr:.2f}x, memory {mr:.2f}x")
    head = (f"NumPy goal: s2sad within {TIME_GOAL}x of the hand gradient's "
            f"time and {MEMORY_GOAL}x of its peak memory: ")
    if not any(r.get("memory") and r["times"].get("s2sad") for r in rows):
        return ""
    return head + ("met by every NumPy workload" if not out
                   else "missed by\n" + "\n".join(out))


def jvp_table(rows, peer_names):
    head = (["workload", "plain us", "hand us", "s2sad us", "s2sad/hand", "f_jvp us",
             "f_jvp/hand"] + [f"{p}/hand" for p in peer_names] + ["transform ms"])
    body = []
    for r in rows:
        t = r["times"]
        body.append([r["workload"], fmt_us(t["plain"]), fmt_us(t["hand"]),
                     fmt_us(t.get("s2sad")), fmt_ratio(t.get("s2sad"), t["hand"]),
                     fmt_us(t.get("f_jvp")), fmt_ratio(t.get("f_jvp"), t["hand"])]
                    + [fmt_ratio(t.get(p), t["hand"]) for p in peer_names]
                    + [fmt_ms(r["s2sad_transform"])])
    return render(head, body)


def hvp_table(r):
    t = r["times"]
    head = ["workload", "hand grad us", "hand hvp us", "s2sad grad us", "s2sad hvp us",
            "hvp/grad", "hvp/hand hvp", "transform ms"]
    body = [[r["workload"], fmt_us(t["hand_grad"]), fmt_us(t["hand_hvp"]),
             fmt_us(t.get("s2sad_grad")), fmt_us(t.get("s2sad_hvp")),
             fmt_ratio(t.get("s2sad_hvp"), t.get("s2sad_grad")),
             fmt_ratio(t.get("s2sad_hvp"), t["hand_hvp"]),
             fmt_ms(r["s2sad_transform"])]]
    return render(head, body)


def tape_table(r):
    m, t, n = r["memory"], r["times"], r["steps"]
    head = ["gradient", "ms", "peak MB", "bytes/step", "values/step"]
    body = [["hand", fmt_ms(t["hand"]), fmt_mb(m["hand"]), f"{m['hand'] / n:.0f}",
             f"{len(r['hand_values'])} ({', '.join(r['hand_values'])})"]]
    if "s2sad" in m:
        body.append(["s2sad", fmt_ms(t["s2sad"]), fmt_mb(m["s2sad"]),
                     f"{m['s2sad'] / n:.0f}",
                     f"{len(r['stored'])} ({', '.join(r['stored'])})"])
    return render(head, body)


def forward_goals(jvp_rows, hvp_row, tape_row, rows):
    """The goals of issues #4 and #6 for these sections, one line each."""
    out = []
    ratios = [(r["workload"], r["times"]["s2sad"] / r["times"]["hand"])
              for r in jvp_rows if "s2sad" in r["times"]]
    if ratios:
        missed = [f"{n} {x:.2f}x" for n, x in ratios if x > JVP_GOAL]
        out.append(f"jvp goal: s2sad.jvp within {JVP_GOAL}x of the hand tangent: "
                   + (f"missed by {', '.join(missed)}" if missed else
                      f"met ({', '.join(f'{n} {x:.2f}x' for n, x in ratios)})"))
    if hvp_row and "s2sad_hvp" in hvp_row["times"]:
        t = hvp_row["times"]
        x = t["s2sad_hvp"] / t["s2sad_grad"]
        out.append(f"hvp goal: s2sad.hvp under {HVP_GOAL}x of s2sad.grad on "
                   f"rosenbrock_1e3: {'met' if x < HVP_GOAL else 'missed'} ({x:.2f}x)")
    if tape_row and "stored" in tape_row:
        stored, read = tape_row["stored"], tape_row["read"]
        unread = [v for v in stored if v not in read]
        out.append(f"tape goal: the tape holds no more than the values the pullback "
                   f"reads: {'met' if not unread else 'missed'} ({len(stored)} values "
                   f"stored per step, {len(read)} of them read"
                   + (f"; never read: {', '.join(unread)}" if unread else "") + ")")
    compile_ms = []   # the transform's time, minus that of one cached call
    for kind, group in (("grad", rows), ("jvp", jvp_rows)):
        compile_ms += [(f"{r['workload']} ({kind})", r["s2sad_transform"] - r["times"]["s2sad"])
                       for r in group if r.get("s2sad_transform") is not None]
    if hvp_row and hvp_row["s2sad_transform"] is not None:
        compile_ms.append(("rosenbrock_1e3 (hvp)",
                           hvp_row["s2sad_transform"] - hvp_row["times"]["s2sad_hvp"]))
    if compile_ms:
        missed = [f"{n} {s * 1e3:.0f} ms" for n, s in compile_ms if s > TRANSFORM_GOAL]
        out.append(f"transform goal: under {TRANSFORM_GOAL * 1e3:.0f} ms per workload "
                   "(first call minus one cached call): "
                   + (f"missed by {', '.join(missed)}" if missed else "met by all"))
    return "\n".join(out)


def loop_table(rows):
    """The array-loop group: time and peak memory of one gradient, hand and s2sad,
    their ratios, whether they meet #21's goal, and the values taped per step."""
    head = ["workload", "plain ms", "hand ms", "s2sad ms", "time s2sad/hand", "hand MB",
            "s2sad MB", "memory s2sad/hand", "goal", "hand tape/step", "s2sad tape/step",
            "transform ms"]
    body = []
    for r in rows:
        t, m = r["times"], r["memory"]
        tapes = per_iteration(r.get("pullback_reads", ""))
        body.append([r["workload"], fmt_ms(t["plain"]), fmt_ms(t["hand"]),
                     fmt_ms(t.get("s2sad")), fmt_ratio(t.get("s2sad"), t["hand"]),
                     fmt_mb(m["hand"]), fmt_mb(m.get("s2sad")),
                     fmt_ratio(m.get("s2sad"), m["hand"]), loop_goal_met(r),
                     "0" if r["hand_tape"].startswith("nothing") else
                     str(len(r["hand_tape"].split(","))),
                     " + ".join(str(len(names)) for names, _ in tapes) or "-",
                     fmt_ms(r["s2sad_transform"])])
    return render(head, body)


def loop_goal_met(r):
    """"met", "time", "memory", "time, memory" (what misses #21's goal) or "-"."""
    t, m = r["times"], r["memory"]
    if t.get("s2sad") is None:
        return "-"
    if r.get("snapshots"):      # checkpointed: memory in states, time against the hand's
        goals = (("time", t["s2sad"] / t["hand"], CHECKPOINT_TIME_GOAL),
                 ("memory", m["s2sad"] / r["state_bytes"],
                  r["snapshots"] + CHECKPOINT_STATES))
    else:
        goals = (("time", t["s2sad"] / t["hand"], LOOP_TIME_GOAL),
                 ("memory", m["s2sad"] / m["hand"], LOOP_MEMORY_GOAL))
    missed = [what for what, x, goal in goals if x > goal]
    return ", ".join(missed) or "met"


def loop_report(rows):
    """The array-loop table, what each gradient tapes, and the goal line of #21."""
    out = [f"Array loops (#21): one gradient call; goal: s2sad within {LOOP_TIME_GOAL}x "
           f"of the hand gradient's time and {LOOP_MEMORY_GOAL}x of its peak memory "
           "(tracemalloc):", "", loop_table(rows), "", "What each gradient keeps:"]
    for r in rows:
        out.append(f"  {r['workload']}: hand: {r['hand_tape']} of each step; s2sad: "
                   + (r.get("pullback_reads") or "(no s2sad)"))
    for r in rows:
        if r.get("snapshots") and r["memory"].get("s2sad") is not None:
            out.append(f"  {r['workload']} (checkpointed, k = {r['snapshots']}): s2sad's peak is "
                       f"{r['memory']['s2sad'] / r['state_bytes']:.1f} states (goal "
                       f"k + {CHECKPOINT_STATES} = {r['snapshots'] + CHECKPOINT_STATES}), "
                       f"hand's {r['memory']['hand'] / r['state_bytes']:.1f}; time goal "
                       f"{CHECKPOINT_TIME_GOAL}x the hand gradient's")
    measured = [r for r in rows if r["times"].get("s2sad") is not None]
    if measured:
        missed = [f"{r['workload']} (time {r['times']['s2sad'] / r['times']['hand']:.2f}x, "
                  + (f"memory {r['memory']['s2sad'] / r['state_bytes']:.1f} states)"
                     if r.get("snapshots") else
                     f"memory {r['memory']['s2sad'] / r['memory']['hand']:.2f}x)")
                  for r in measured if loop_goal_met(r) != "met"]
        out += ["", "array-loops goal: " + (f"missed by {', '.join(missed)}" if missed
                                            else "met by every workload")]
    return "\n".join(out)


def mixed_report(rows, peer_names):
    """The mixed group's table (times in us, as in the gradient table), with its goal
    column, the gradient's time over the function's (#37's goal for its loop programs:
    within 5x), and the goal line of #20."""
    peer_names = [p for p in peer_names if any(p in r["times"] for r in rows)]
    head = (["workload", "plain us", "hand us", "s2sad us", "s2sad/hand", "goal", "s2sad/plain"]
            + [f"{p}/hand" for p in peer_names] + ["transform ms"]
            + (["jit compile ms"] if "jax.jit" in peer_names else []))
    body = []
    for r in rows:
        t = r["times"]
        met = ("-" if t.get("s2sad") is None else
               "met" if t["s2sad"] / t["hand"] <= MIXED_TIME_GOAL else "missed")
        line = [r["workload"], fmt_us(t["plain"]), fmt_us(t["hand"]), fmt_us(t.get("s2sad")),
                fmt_ratio(t.get("s2sad"), t["hand"]), met, fmt_ratio(t.get("s2sad"), t["plain"])]
        line += [fmt_ratio(t.get(p), t["hand"]) for p in peer_names]
        line.append(fmt_ms(r["s2sad_transform"]))
        if "jax.jit" in peer_names:
            line.append(fmt_ms(r["jax_jit_compile"]))
        body.append(line)
    out = [f"Mixed NumPy and floats (#20): NumPy functions on Python floats; goal: s2sad "
           f"within {MIXED_TIME_GOAL}x of the hand gradient's time, in us per call:", "",
           render(head, body)]
    ratios = [(r["workload"], r["times"]["s2sad"] / r["times"]["hand"])
              for r in rows if r["times"].get("s2sad") is not None]
    if ratios:
        missed = [f"{n} {x:.2f}x" for n, x in ratios if x > MIXED_TIME_GOAL]
        every = ", ".join(f"{n} {x:.2f}x" for n, x in ratios)
        out += ["", "mixed goal: " + (f"missed by {', '.join(missed)}" if missed
                                      else f"met by every workload ({every})")]
    return "\n".join(out)


# ---------------------------------------------------------------------------
# Dask (issue #23): the gradient computed on a LocalCluster, the time of one gradient
# (building the graph and computing it) and the peak memory of the client process.


class ClientPeak:
    """The peak resident memory of this process while the block runs, above what it held
    when the block started (sampled every millisecond, in a thread)."""

    def __enter__(self):
        import threading
        import psutil          # a dependency of distributed
        self.process, self.done = psutil.Process(), threading.Event()
        gc.collect()
        self.start = self.peak = self.process.memory_info().rss
        self.thread = threading.Thread(target=self.sample, daemon=True)
        self.thread.start()
        return self

    def sample(self):
        while not self.done.wait(0.001):
            self.peak = max(self.peak, self.process.memory_info().rss)

    def __exit__(self, *exc):
        self.done.set()
        self.thread.join()
        self.peak = max(self.peak, self.process.memory_info().rss)
        self.grew = self.peak - self.start


#: What a fresh client process runs to measure one Dask gradient's memory: it connects
#: to the cluster, reads the arguments the benchmark published there, calls the
#: gradient once on the small instance as Dask arrays (s2sad compiles it then), and
#: prints the growth of its resident memory while it builds and computes the gradient
#: on the data, with nothing of an earlier call on the data in its allocator.
CLIENT_MEMORY = """
import sys
sys.path.insert(0, sys.argv[4])
import dask.array, distributed, run, workloads
client = distributed.Client(sys.argv[1])
args = client.get_dataset(sys.argv[2])
w = [w for w in workloads.dask_group() if w.name == sys.argv[2]][0]
if sys.argv[3] == "s2sad":
    import s2sad
    fn = s2sad.grad(w.f, wrt=w.wrt)
else:
    fn = w.hand
small = [dask.array.from_array(s, chunks=len(s) // 2) if isinstance(a, dask.array.Array)
         else s for s, a in zip(w.small, args)]
fn(*small).compute()
with run.ClientPeak() as peak:
    out = fn(*args)
    out = out.compute()
print(peak.grew)
"""


def client_memory(address, name, which):
    """The growth of a fresh client process's resident memory during a gradient (`which`:
    "hand" or "s2sad") of the Dask workload `name` (see `CLIENT_MEMORY`)."""
    import subprocess
    done = subprocess.run([sys.executable, "-c", CLIENT_MEMORY, address, name, which,
                           os.path.dirname(os.path.abspath(__file__))],
                          capture_output=True, text=True, check=False)
    if done.returncode:
        fail(f"{name}: measuring the client's memory failed:\n{done.stderr}")
    return int(done.stdout.split()[-1])


def dask_bench(ws, s2sad, repeat=7, processes=True):
    """For each Dask workload: its data generated and kept on a LocalCluster of two
    worker processes (one thread each), the hand gradient and s2sad's checked against
    each other and against finite differences on the small NumPy instance, then the wall
    time of one gradient (the best of `repeat`: building the graph and computing it on
    the cluster) and the growth of a fresh client process's resident memory during its
    first gradient (`client_memory`)."""
    import dask
    import dask.array
    import distributed
    rows = []
    # tcp: the fresh client processes of `client_memory` connect to it
    with distributed.LocalCluster(processes=processes, n_workers=2, threads_per_worker=1,
                                  protocol="tcp://", dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        for w in ws:
            check(w._replace(args=w.small), s2sad, {})
            lazy_args = [i for i, a in enumerate(w.args) if isinstance(a, dask.array.Array)]
            kept = client.persist([w.args[i] for i in lazy_args])
            distributed.wait(kept)
            args = list(w.args)
            for i, a in zip(lazy_args, kept):
                args[i] = a
            X = args[lazy_args[0]]
            client.publish_dataset(**{w.name: tuple(args)})
            calls = {"hand": w.hand}
            if s2sad is not None:
                calls["s2sad"] = s2sad.grad(w.f, wrt=w.wrt)
            got = {k: dask.compute(fn(*args))[0] for k, fn in calls.items()}
            if s2sad is not None and not close((got["s2sad"],), (got["hand"],), S2SAD_RTOL):
                fail(f"{w.name}: s2sad's gradient {show((got['s2sad'],))} disagrees with "
                     f"the hand gradient {show((got['hand'],))} on the cluster")
            times = dict.fromkeys(calls, math.inf)
            for _ in range(repeat):         # in turns, so that both see the same load
                for k, fn in calls.items():
                    t0 = time.perf_counter()
                    dask.compute(fn(*args))
                    times[k] = min(times[k], time.perf_counter() - t0)
            memory = {k: client_memory(cluster.scheduler_address, w.name, k) for k in calls}
            lazy = s2sad is not None and isinstance(calls["s2sad"](*args), type(X))
            rows.append({"workload": w.name, "group": "dask", "times": times,
                         "client_memory": memory, "data_bytes": X.nbytes,
                         "shape": X.shape, "chunks": len(X.chunks[0]), "lazy": lazy})
            client.unpublish_dataset(w.name)
            del X, args, kept
    return rows


def dask_goal_met(r):
    t, m = r["times"], r["client_memory"]
    if t.get("s2sad") is None:
        return "-"
    return ("met" if t["s2sad"] / t["hand"] <= DASK_TIME_GOAL and r["lazy"]
            and m["s2sad"] < r["data_bytes"] else "missed")


def dask_report(rows):
    """The Dask group's table and the goal line of #23."""
    head = ["workload", "X", "chunks", "hand ms", "s2sad ms", "s2sad/hand",
            "client MB hand", "client MB s2sad", "X MB", "goal"]
    body = []
    for r in rows:
        t, m = r["times"], r["client_memory"]
        body.append([r["workload"], "x".join(map(str, r["shape"])), str(r["chunks"]),
                     fmt_ms(t["hand"]), fmt_ms(t.get("s2sad")),
                     fmt_ratio(t.get("s2sad"), t["hand"]), fmt_mb(m["hand"]),
                     fmt_mb(m.get("s2sad")), fmt_mb(r["data_bytes"]), dask_goal_met(r)])
    out = [f"Dask (#23): logistic regression on data in chunks on a LocalCluster (2 worker "
           "processes, 1 thread each), one gradient (graph built and computed), best of "
           "the runs; client MB: growth of a fresh client process's resident memory during "
           "one gradient on the data (after one on a small instance, which compiles it); "
           f"goal: s2sad within {DASK_TIME_GOAL}x of the hand (dask-glm) gradient, a lazy "
           "gradient, and the client's growth below the size of X:", "", render(head, body)]
    measured = [r for r in rows if r["times"].get("s2sad") is not None]
    if measured:
        missed = [r["workload"] for r in measured if dask_goal_met(r) != "met"]
        out += ["", "dask goal: " + (f"missed by {', '.join(missed)}" if missed
                                     else "met by every workload")]
    return "\n".join(out)


# ---------------------------------------------------------------------------
# The native group (issue #22): s2sad's numba backend against hand gradients in Numba.


def check_native(w, s2sad):
    """The hand Numba gradient against central differences, and s2sad's numba backend
    against it and against s2sad's Python backend (to 1e-12); exits on a mismatch."""
    want = as_tuple(w.hand(*w.args), w.wrt)
    fd = central_fd(w.f, w.args, w.wrt)
    if not close(want, fd, FD_RTOL):
        fail(f"{w.name}: hand Numba gradient {show(want)} disagrees with central finite "
             f"differences {show(fd)}:\n  {worst(want, fd)}")
    if s2sad is None:
        return
    got = as_tuple(s2sad.grad(w.f, wrt=w.wrt, backend="numba")(*w.args), w.wrt)
    python = as_tuple(s2sad.grad(w.f, wrt=w.wrt)(*w.args), w.wrt)
    for ref, label in ((want, "the hand gradient"), (python, "the Python backend")):
        if not close(got, ref, 1e-12 if ref is python else S2SAD_RTOL):
            fail(f"{w.name}: s2sad's numba backend gives {show(got)}, {label} "
                 f"{show(ref)}:\n  {worst(got, ref)}")


def native_bench(suite, s2sad, peers, timing, transforms):
    """One row per workload of the native group: seconds per call of Numba's primal,
    the hand gradient, s2sad's numba and Python backends and jax.jit; the first call
    of a fresh numba-backend gradient; jax.jit's compile."""
    rows = []
    for w in suite:
        print(f"timing {w.name} (native) ...", file=sys.stderr, flush=True)
        check_native(w, s2sad)
        calls = {"numba primal": (w.primal, w.args), "hand numba": (w.hand, w.args)}
        compile_time = None
        if s2sad is not None:
            calls["s2sad numba"] = (s2sad.grad(w.f, wrt=w.wrt, backend="numba"), w.args)
            calls["s2sad python"] = (s2sad.grad(w.f, wrt=w.wrt), w.args)
            compile_time = first_call(
                lambda: s2sad.grad(fresh(w.f), wrt=w.wrt, backend="numba"), w.args, transforms)
        jit = peers.get("jax.jit")
        jit_compile = None
        if jit is not None:
            try:
                t0 = time.perf_counter()
                gf, args = jit(w, w.args)
                gf(*args)
                jit_compile = time.perf_counter() - t0
                calls["jax.jit"] = (gf, args)
            except Exception as e:      # noqa: BLE001 - a peer that fails is left out
                print(f"note: jax.jit skipped on {w.name}: {type(e).__name__}: {e}")
        for fn, args in calls.values():     # Numba compiles at the first call
            fn(*args)
        rows.append({"workload": w.name, "times": per_calls(calls, *timing),
                     "compile": compile_time, "jax_jit_compile": jit_compile})
    return rows


def native_report(rows):
    """The native group's table (times in us) and its goals."""
    head = ["workload", "numba primal us", "hand numba us", "s2sad numba us",
            "s2sad/hand", "s2sad python us", "jax.jit us", "s2sad compile s",
            "jax.jit compile s"]
    body = []
    for r in rows:
        t = r["times"]
        body.append([r["workload"], fmt_us(t["numba primal"]), fmt_us(t["hand numba"]),
                     fmt_us(t.get("s2sad numba")),
                     fmt_ratio(t.get("s2sad numba"), t["hand numba"]),
                     fmt_us(t.get("s2sad python")), fmt_us(t.get("jax.jit")),
                     "-" if r["compile"] is None else f"{r['compile']:.2f}",
                     "-" if r["jax_jit_compile"] is None else f"{r['jax_jit_compile']:.1f}"])
    out = ["Native: gradients compiled by Numba (s2sad.grad(f, backend='numba')), in us "
           "per call from Python; s2sad compile: the first call of a fresh gradient "
           "(transform + Numba)", "", render(head, body)]
    timed = [r for r in rows if r["times"].get("s2sad numba") is not None]
    if timed:
        ratios = [(r["workload"], r["times"]["s2sad numba"] / r["times"]["hand numba"])
                  for r in timed]
        missed = [f"{n} {x:.2f}x" for n, x in ratios if x > native.TIME_GOAL]
        every = ", ".join(f"{n} {x:.2f}x" for n, x in ratios)
        out += ["", f"native time goal (s2sad numba within {native.TIME_GOAL}x of hand numba): "
                + (f"missed by {', '.join(missed)}" if missed else f"met ({every})")]
        slow = [f"{r['workload']} {r['compile']:.2f} s" for r in timed
                if r["compile"] > native.COMPILE_GOAL]
        out.append(f"native compile goal (transform + Numba within {native.COMPILE_GOAL} s "
                   "per function): " + (f"missed by {', '.join(slow)}" if slow else "met ("
                   + ", ".join(f"{r['workload']} {r['compile']:.2f} s" for r in timed) + ")"))
        jax = [(r["workload"], r["times"]["jax.jit"] / r["times"]["s2sad numba"])
               for r in timed if r["times"].get("jax.jit") is not None]
        out.append(f"native jax goal (s2sad numba at least {native.JAX_GOAL:.0f}x faster "
                   "than jax.jit): " + (", ".join(f"{n} {x:.1f}x" for n, x in jax)
                                         if jax else "not measured (JAX not installed)"))
    return "\n".join(out)


def select(suite, only=None, groups=None):
    """The workloads named in `only` and in `groups` (comma lists; None: all), or a
    ValueError that says which names are unknown."""
    if groups is not None:
        wanted = [g.strip() for g in groups.split(",") if g.strip()]
        unknown = [g for g in wanted if g not in GROUPS]
        if unknown or not wanted:
            raise ValueError(f"--group: unknown group {', '.join(unknown) or '(none)'};"
                             f" the groups are {', '.join(GROUPS)}")
        suite = [w for w in suite if w.group in wanted]
    if only is not None:
        names = [w.name for w in suite]
        wanted = [n.strip() for n in only.split(",") if n.strip()]
        unknown = [n for n in wanted if n not in names]
        if unknown or not wanted:
            raise ValueError(f"--only: unknown workload {', '.join(unknown) or '(none)'};"
                             f" the workloads are {', '.join(names)}")
        suite = [w for w in suite if w.name in wanted]
    return suite


# ---------------------------------------------------------------------------


def main():
    suite = workloads()
    names = [w.name for w in suite]
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true",
                    help="short smoke run (less precise timings)")
    ap.add_argument("--only", metavar="NAME[,NAME]",
                    help="run only these workloads: " + ", ".join(names))
    ap.add_argument("--group", metavar="GROUP[,GROUP]",
                    help="run only these groups of workloads: " + ", ".join(GROUPS))
    ap.add_argument("--json", metavar="FILE", help="also write raw results")
    ap.add_argument("--peers", help="'all', 'none' or a comma list of "
                    "autograd,jax,torch (default: all; --quick: all but jax)")
    ap.add_argument("--jit-max-eqns", type=int, default=20000,
                    help="skip jax.jit when the unrolled trace is bigger "
                    "(default %(default)s; XLA compile time explodes)")
    ap.add_argument("--no-s2sad", action="store_true",
                    help="skip s2sad (time only plain, hand and peers)")
    ap.add_argument("--cpu-time", action="store_true",
                    help="time calls in process CPU time, not wall time "
                    "(steadier on a busy machine; use with --threads 1)")
    ap.add_argument("--threads", type=int, metavar="N",
                    help="limit NumPy's BLAS, torch (and JAX, for N = 1) to N "
                    "threads (default: the libraries' own defaults)")
    opts = ap.parse_args()
    if opts.threads is not None and opts.threads < 1:
        ap.error("--threads: N must be at least 1")
    if opts.cpu_time:
        global CLOCK
        CLOCK = time.process_time

    try:
        suite = select(suite, opts.only, opts.group)
    except ValueError as e:
        ap.error(str(e))
    native_suite = []
    if opts.only is None and (opts.group is None or "native" in opts.group.split(",")):
        native_suite = native.workloads()
        if not native_suite:
            print("note: the native group needs Numba, which is not installed; skipped")

    if opts.quick:
        target, repeat, budget, transforms, mem_times = 0.01, 3, 0.1, 1, 1
    else:
        target, repeat, budget, transforms, mem_times = 0.15, 7, 2.0, 3, 3

    s2sad, why = (None, "--no-s2sad") if opts.no_s2sad else load_s2sad()
    if s2sad is None:
        print(f"warning: s2sad not benchmarked ({why})")
    wanted = opts.peers or ("autograd,torch" if opts.quick else "all")
    peers, versions = load_peers(wanted, opts.jit_max_eqns, opts.threads)
    cpus = os.cpu_count() or 1
    print(f"Python {platform.python_version()} on {platform.machine()} "
          f"({cpus} CPUs, threads: {opts.threads or 'library defaults'}"
          f"{', CPU time' if opts.cpu_time else ''}), "
          f"numpy {np.__version__}, "
          f"peers: {', '.join(f'{k} {v}' for k, v in versions.items()) or 'none'}"
          f"{' (quick run)' if opts.quick else ''}")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    if load > 0.5 * cpus:
        print(f"warning: the machine is busy (load average {load:.1f} on "
              f"{cpus} CPUs): timings will be noisy, multi-threaded BLAS "
              f"calls most of all (try --threads 1 --cpu-time)")

    # the peers are not run on the array loops (jax.jit cannot trace a data-dependent
    # `while`, and eager peers over hundreds of steps take minutes)
    dask_suite = [w for w in suite if w.group == "dask"]
    suite = [w for w in suite if w.group != "dask"]
    checked = [(w, check(w, s2sad, {} if w.group == "array-loops" else peers))
               for w in suite]
    # peers' jvps on 1000-step loops take seconds: --quick leaves them out unless asked
    jvp_peers = load_jvp_peers(versions) if opts.peers or not opts.quick else {}
    jvp_checked = [(w, *check_jvp(w, s2sad, jvp_peers)) for w in suite if w.jvp_hand]
    print("checks passed: hand gradients and tangents match finite differences"
          + (", s2sad matches hand" if s2sad else ""))

    rows = []
    for w, ok_peers in checked:
        name, f, hand, args, wrt = w.name, w.f, w.hand, w.args, w.wrt
        print(f"timing {name} ...", file=sys.stderr, flush=True)
        calls = {"plain": (f, args), "hand": (hand, args)}
        transform = jit_compile = None
        if s2sad is not None and w.mode == "forward":
            calls["s2sad"] = (loop_jvp(s2sad, f, w), args)
            transform = first_call(lambda: loop_jvp(s2sad, fresh(f), w), args, transforms)
        elif s2sad is not None:
            calls["s2sad"] = (s2sad.grad(f, wrt=wrt), args)
            transform = first_call(lambda: s2sad.grad(fresh(f), wrt=wrt),
                                   args, transforms)
        for peer, (gf, peer_args, first) in ok_peers.items():
            if peer == "jax.jit":
                jit_compile = first  # trace + lower + compile + one call
            calls[peer] = (gf, peer_args)
        times = per_calls(calls, target, repeat, budget)
        row = {"workload": name, "group": w.group, "times": times,
               "s2sad_transform": transform, "jax_jit_compile": jit_compile}
        if w.group == "array-loops":
            row["hand_tape"] = w.hand_tape
            row["snapshots"] = w.snapshots
            row["state_bytes"] = max(np.asarray(a).nbytes for a in w.args)
            if s2sad is not None and w.mode != "forward":
                row["pullback_reads"] = pullback_reads(calls["s2sad"][0].source)
            elif s2sad is not None:
                row["pullback_reads"] = "nothing (forward mode: jvp, no tape)"
        if w.numpy:  # after the timings: tracemalloc slows every allocation
            row["memory"] = {"plain": peak_memory(f, args, mem_times),
                             "hand": peak_memory(hand, args, mem_times)}
            if s2sad is not None:
                row["memory"]["s2sad"] = peak_memory(calls["s2sad"][0], args, mem_times)
        rows.append(row)

    timing = (target, repeat, budget)
    loop_rows = [r for r in rows if r["group"] == "array-loops"]
    mixed_rows = [r for r in rows if r["group"] == "mixed"]
    rows = [r for r in rows if r["group"] not in ("array-loops", "mixed")]
    plain = {r["workload"]: r["times"]["plain"] for r in rows}
    jvp_rows = []
    for w, tangents, ok_peers in jvp_checked:
        print(f"timing {w.name} jvp ...", file=sys.stderr, flush=True)
        jvp_rows.append(time_jvp(w, tangents, ok_peers, s2sad, plain[w.name], timing,
                                 transforms))
    hvp_row = tape_row = None
    if any(w.name == "rosenbrock_1e3" for w in suite):
        print("timing rosenbrock_1e3 hvp ...", file=sys.stderr, flush=True)
        hvp_row = hvp_bench(s2sad, timing, transforms)
    if any(w.name == "lotka_volterra" for w in suite):
        print("timing lotka_volterra_1e5 (memory) ...", file=sys.stderr, flush=True)
        tape_row = tape_bench(s2sad, timing, mem_times)

    overhead = None
    if s2sad is not None:
        overhead = per_calls({"s2sad_grad_ident": (s2sad.grad(ident), (1.0,)),
                              "ident": (ident, (1.0,))}, target, repeat, budget)

    print()
    if rows:
        print(table(rows, list(peers)))
        print()
    memory = memory_table(rows)
    if memory:
        print("Peak memory of one call (tracemalloc), in MB:")
        print()
        print(memory)
        print()
    goal = goal_report(rows)
    if goal:
        print(goal)
    if overhead:
        print(f"s2sad cached call overhead: grad(ident)(1.0) takes "
              f"{fmt_us(overhead['s2sad_grad_ident'])} us "
              f"(ident(1.0) itself: {fmt_us(overhead['ident'])} us)")
    if jvp_rows:
        print()
        print("Forward mode: jvp of the scalar workloads, along tangents "
              "(1, -1/2, 1/3, -1/4)[:n], in us per call:")
        print()
        print(jvp_table(jvp_rows, list(jvp_peers)))
    if hvp_row:
        print()
        print("Hessian-vector product (forward over reverse), in us per call:")
        print()
        print(hvp_table(hvp_row))
    if tape_row:
        print()
        print(f"Gradient of Lotka-Volterra over {tape_row['steps']:.0e} Euler steps: "
              "time, peak memory (tracemalloc) and values kept per step:")
        print()
        print(tape_table(tape_row))
    goals = forward_goals(jvp_rows, hvp_row, tape_row, rows)
    if goals:
        print()
        print(goals)
    if loop_rows:
        print()
        print(loop_report(loop_rows))
    if mixed_rows:
        print()
        print(mixed_report(mixed_rows, list(peers)))
    dask_rows = []
    if dask_suite:
        print("timing the dask group on a LocalCluster ...", file=sys.stderr, flush=True)
        dask_rows = dask_bench(dask_suite, s2sad, repeat=2 if opts.quick else 7)
        print()
        print(dask_report(dask_rows))
    native_rows = native_bench(native_suite, s2sad, peers, timing, transforms)
    if native_rows:
        print()
        print(native_report(native_rows))
    solver_rows = []
    if s2sad is not None and opts.only is None and (
            opts.group is None or "solvers" in opts.group.split(",")):
        try:
            import solvers      # (bench/solvers.py: it needs SciPy)
        except ImportError:
            print("note: the solvers group needs SciPy, which is not installed; skipped")
        else:
            solver_rows = solvers.bench(s2sad, opts.quick)
            print()
            print(solvers.report(solver_rows))
            print()     # (JAX's row where JAX imports here)
            print(solvers.ode_report(solvers.ode_comparison(s2sad, opts.quick)))
            print()
            print(solvers.memory_report(solvers.memory(s2sad, opts.quick)))

    batching_rows = []
    if s2sad is not None and opts.only is None and (
            opts.group is None or "batching" in opts.group.split(",")):
        import batching     # (bench/batching.py)
        batching_rows = batching.bench(s2sad, opts.quick)
        print()
        print(batching.report(batching_rows))

    if opts.json:
        with open(opts.json, "w") as fh:
            json.dump({"python": platform.python_version(),
                       "machine": platform.machine(), "numpy": np.__version__,
                       "threads": opts.threads, "cpu_time": opts.cpu_time,
                       "quick": opts.quick, "peers": versions,
                       "s2sad": why or "ok", "results": rows, "array_loops": loop_rows,
                       "mixed": mixed_rows, "dask": dask_rows, "native": native_rows,
                       "solvers": solver_rows, "batching": batching_rows,
                       "jvp": jvp_rows, "hvp": hvp_row, "tape": tape_row,
                       "overhead": overhead}, fh, indent=2)
        print(f"raw results (seconds, bytes) written to {opts.json}")


if __name__ == "__main__":
    main()
