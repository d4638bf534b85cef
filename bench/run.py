"""Benchmark s2sad gradients against hand-written ones (and optional peers).

Run from the repository root:

    python bench/run.py            # full run, about a minute
    python bench/run.py --quick    # smoke run, seconds
    python bench/run.py --json results.json

Peers (autograd, JAX, PyTorch) are used only when they are importable.
"""

import argparse
import importlib.metadata
import json
import math
import os
import platform
import sys
import time
import timeit
import traceback
import types

BENCH = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(BENCH))  # the repository's s2sad first
from workloads import WORKLOADS, ident  # noqa: E402

FD_RTOL = 1e-6      # hand gradient vs central finite differences
S2SAD_RTOL = 1e-9   # s2sad vs hand gradient (both exact up to rounding)
PEER_RTOL = 1e-6    # peers vs hand gradient


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


def as_tuple(g, wrt):
    return (g,) if isinstance(wrt, int) else tuple(g)


def wrt_indices(wrt):
    return (wrt,) if isinstance(wrt, int) else tuple(wrt)


def close(got, want, rtol):
    """Componentwise, with the gradient's largest entry as the scale."""
    scale = max(abs(w) for w in want) or 1.0
    return len(got) == len(want) and all(
        abs(float(g) - w) <= rtol * max(abs(w), scale) for g, w in zip(got, want))


def central_fd(f, args, wrt):
    out = []
    for i in wrt_indices(wrt):
        h = 1e-5 * max(1.0, abs(args[i]))
        hi, lo = list(args), list(args)
        hi[i] += h
        lo[i] -= h
        out.append((f(*hi) - f(*lo)) / (2 * h))
    return tuple(out)


def per_call(fn, args, target, repeat, budget):
    """Minimum seconds per call over `repeat` measurements of ~`target` s."""
    timer = timeit.Timer("fn(*args)", globals={"fn": fn, "args": args})
    number, dt = 1, timer.timeit(1)
    if dt >= budget:  # very slow: one call is all we can afford
        return dt
    while dt < target / 10:
        number *= 10
        dt = timer.timeit(number)
    one = dt / number
    number = max(1, round(target / one))
    repeat = max(1, min(repeat, int(budget / (number * one))))
    return min(timer.repeat(repeat, number)) / number


def first_call(make, args, times):
    """Minimum over `times` of: build a fresh gradient and call it once."""
    best = math.inf
    for _ in range(times):
        t0 = time.perf_counter()
        make()(*args)
        best = min(best, time.perf_counter() - t0)
    return best


# ---------------------------------------------------------------------------
# Peers: each maps (f, wrt) to a gradient function returning floats.  The
# workloads call ``math.log`` etc.; for peers ``math`` is rebound to the
# peer's own functions of the same names, the code itself is unchanged.


def math_for(lib):
    return types.SimpleNamespace(**{n: getattr(lib, n) for n in
                                    ("log", "sin", "cos", "exp", "sqrt")})


class Skip(Exception):
    """A peer declines a workload (reported, not an error)."""


def load_peers(wanted, jit_max_eqns):
    peers, versions = {}, {}

    def want(name):
        return wanted == "all" or name in wanted.split(",")

    if want("autograd"):
        try:
            import autograd
            import autograd.numpy as anp

            def autograd_grad(f, wrt, args):
                return autograd.grad(fresh(f, math=math_for(anp)), wrt)

            peers["autograd"] = autograd_grad
            versions["autograd"] = importlib.metadata.version("autograd")
        except Exception:
            pass

    if want("jax"):
        try:
            import jax
            import jax.numpy as jnp
            jax.config.update("jax_enable_x64", True)  # float64 like the rest

            def jax_grad(f, wrt, args, jit=False):
                g = jax.grad(fresh(f, math=math_for(jnp)), argnums=wrt)
                if jit:  # Python loops unroll: the XLA compile can explode
                    traced = jax.jit(g).trace(*args)
                    n = len(traced.jaxpr.eqns)
                    if n > jit_max_eqns:
                        raise Skip(f"{n} equations once unrolled, over "
                                   f"--jit-max-eqns {jit_max_eqns}")
                    g = traced.lower().compile()
                return lambda *a: jax.block_until_ready(g(*a))

            peers["jax"] = jax_grad
            peers["jax.jit"] = lambda f, wrt, args: jax_grad(f, wrt, args,
                                                             jit=True)
            versions["jax"] = jax.__version__
        except Exception:
            pass

    if want("torch"):
        try:
            import torch

            def torch_grad(f, wrt, args):
                g = fresh(f, math=math_for(torch))
                idx = wrt_indices(wrt)

                def grad_fn(*args):
                    xs = [torch.tensor(a, dtype=torch.float64,
                                       requires_grad=i in idx)
                          for i, a in enumerate(args)]
                    gs = torch.autograd.grad(g(*xs), [xs[i] for i in idx])
                    gs = tuple(x.item() for x in gs)
                    return gs[0] if isinstance(wrt, int) else gs
                return grad_fn

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


def check(name, f, hand, args, wrt, s2sad, peers):
    """Validate the hand gradient, s2sad and peers.

    Returns {peer: (gradient function, seconds to build it and call it once)}
    for the peers that agree with the hand gradient.
    """
    want = as_tuple(hand(*args), wrt)
    fd = central_fd(f, args, wrt)
    if not close(want, fd, FD_RTOL):
        fail(f"{name}: hand-written gradient {want} disagrees with central "
             f"finite differences {fd} (rtol {FD_RTOL}) at args {args}")
    if s2sad is not None:
        try:
            got = as_tuple(s2sad.grad(f, wrt=wrt)(*args), wrt)
        except Exception:
            fail(f"{name}: s2sad.grad({f.__name__}, wrt={wrt})(*{args}) "
                 f"raised:\n{traceback.format_exc()}")
        if not close(got, want, S2SAD_RTOL):
            fail(f"{name}: s2sad.grad({f.__name__}, wrt={wrt})(*{args}) = "
                 f"{got}, but the hand-written gradient is {want} "
                 f"(finite differences: {fd}; rtol {S2SAD_RTOL})")
        try:
            value, got = s2sad.value_and_grad(f, wrt=wrt)(*args)
        except Exception:
            fail(f"{name}: s2sad.value_and_grad({f.__name__}, wrt={wrt})"
                 f"(*{args}) raised:\n{traceback.format_exc()}")
        if not (close((value,), (f(*args),), S2SAD_RTOL)
                and close(as_tuple(got, wrt), want, S2SAD_RTOL)):
            fail(f"{name}: s2sad.value_and_grad({f.__name__}, wrt={wrt})"
                 f"(*{args}) = {(value, got)}, expected {(f(*args), want)}")
    ok = {}
    for peer, make in peers.items():
        try:
            t0 = time.perf_counter()
            gf = make(f, wrt, args)
            got = as_tuple(gf(*args), wrt)
            first = time.perf_counter() - t0
        except Skip as e:
            print(f"note: {peer} skipped on {name}: {e}")
            continue
        except Exception as e:
            print(f"warning: {peer} fails on {name} ({type(e).__name__}: "
                  f"{e}); peer dropped for this workload")
            continue
        if close(got, want, PEER_RTOL):
            ok[peer] = (gf, first)
        else:
            print(f"warning: {peer} on {name} gives {got}, expected "
                  f"{want}; peer dropped for this workload")
    return ok


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
    widths = [max(len(x[i]) for x in [head] + body) for i in range(len(head))]

    def show(cells):
        return "| " + " | ".join(
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(cells, widths))) + " |"
    sep = "|" + "|".join("-" * (w + 1) + (":" if i else "-")
                         for i, w in enumerate(widths)) + "|"
    return "\n".join([show(head), sep] + [show(b) for b in body])


# ---------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true",
                    help="short smoke run (less precise timings)")
    ap.add_argument("--json", metavar="FILE", help="also write raw results")
    ap.add_argument("--peers", help="'all', 'none' or a comma list of "
                    "autograd,jax,torch (default: all; --quick: all but jax)")
    ap.add_argument("--jit-max-eqns", type=int, default=20000,
                    help="skip jax.jit when the unrolled trace is bigger "
                    "(default %(default)s; XLA compile time explodes)")
    ap.add_argument("--no-s2sad", action="store_true",
                    help="skip s2sad (time only plain, hand and peers)")
    opts = ap.parse_args()

    if opts.quick:
        target, repeat, budget, transforms = 0.01, 3, 0.1, 1
    else:
        target, repeat, budget, transforms = 0.2, 5, 2.0, 3

    s2sad, why = (None, "--no-s2sad") if opts.no_s2sad else load_s2sad()
    if s2sad is None:
        print(f"warning: s2sad not benchmarked ({why})")
    wanted = opts.peers or ("autograd,torch" if opts.quick else "all")
    peers, versions = load_peers(wanted, opts.jit_max_eqns)
    print(f"Python {platform.python_version()} on {platform.machine()}, "
          f"peers: {', '.join(f'{k} {v}' for k, v in versions.items()) or 'none'}"
          f"{' (quick run)' if opts.quick else ''}")

    checked = [(w, check(*w, s2sad, peers)) for w in WORKLOADS]
    print("checks passed: hand gradients match finite differences"
          + (", s2sad matches hand" if s2sad else ""))

    rows = []
    for (name, f, hand, args, wrt), ok_peers in checked:
        print(f"timing {name} ...", file=sys.stderr, flush=True)
        times = {"plain": per_call(f, args, target, repeat, budget),
                 "hand": per_call(hand, args, target, repeat, budget)}
        transform = jit_compile = None
        if s2sad is not None:
            times["s2sad"] = per_call(s2sad.grad(f, wrt=wrt), args,
                                      target, repeat, budget)
            transform = first_call(lambda: s2sad.grad(fresh(f), wrt=wrt),
                                   args, transforms)
        for peer, (gf, first) in ok_peers.items():
            if peer == "jax.jit":
                jit_compile = first  # trace + lower + compile + one call
            times[peer] = per_call(gf, args, target, repeat, budget)
        rows.append({"workload": name, "times": times,
                     "s2sad_transform": transform,
                     "jax_jit_compile": jit_compile})

    overhead = None
    if s2sad is not None:
        overhead = {"s2sad_grad_ident": per_call(s2sad.grad(ident), (1.0,),
                                                 target, repeat, budget),
                    "ident": per_call(ident, (1.0,), target, repeat, budget)}

    print()
    print(table(rows, list(peers)))
    print()
    if overhead:
        print(f"s2sad cached call overhead: grad(ident)(1.0) takes "
              f"{fmt_us(overhead['s2sad_grad_ident'])} us "
              f"(ident(1.0) itself: {fmt_us(overhead['ident'])} us)")

    if opts.json:
        with open(opts.json, "w") as fh:
            json.dump({"python": platform.python_version(),
                       "machine": platform.machine(),
                       "quick": opts.quick, "peers": versions,
                       "s2sad": why or "ok", "results": rows,
                       "overhead": overhead}, fh, indent=2)
        print(f"raw results (seconds) written to {opts.json}")


if __name__ == "__main__":
    main()
