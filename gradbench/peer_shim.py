"""Run one of GradBench's own tools with two adjustments, as `gradbench.run` and
`gradbench.table` start them (never imported by s2sad or by this folder's other modules: it
runs in the peers' Python, where `gradbench` is GradBench's package, not this folder):

    python gradbench/peer_shim.py jax <checkout>/python/gradbench/gradbench/tools/jax/run.py
    python gradbench/peer_shim.py manual <checkout>/python/gradbench/gradbench/cpp.py

- `jax`: GradBench's jax tool times each call of a jitted function, which returns as soon as
  JAX has dispatched the computation (an lse gradient of 1.28M elements "takes" 9 µs). The
  shim replaces GradBench's `wrap.function` and `wrap.multiple_runs` decorators before the
  tool imports its modules, so that each timed call ends with `jax.block_until_ready` of its
  result: the time is the computation's. And each evaluation first calls the function once,
  untimed (reported as a `warmup` timing, as s2sad's tool reports its first call): JAX
  compiles there, which GradBench's tool would count as a run, and whose seconds would use
  up the eval's `min_seconds`, leaving as few as `min_runs` - 1 runs after it. Nothing else
  of the tool changes.
- `manual`: GradBench's C++ driver rebuilds a module's binary (`make -B`) at each `define`;
  the shim builds it only when it is missing, so a run does not spend minutes compiling, nor
  replace binaries that another run of the evals is validating against.

The tool's script runs as `__main__` with its own directory first on `sys.path`, as
`python <script>` would run it; arguments after the script go to it.
"""
from __future__ import annotations

import importlib
import os
import runpy
import sys
import time


def blocking(decorator_factory, block):
    """A stand-in for GradBench's decorator factory `decorator_factory`
    (`wrap.multiple_runs` or `wrap.function`): the same decorator, timing
    `block(function(input))` in place of `function(input)`, after one untimed call (JAX
    traces and compiles there; its time is a `warmup` timing, as s2sad's tool reports
    its first call), so that compiling neither counts as a run nor uses up the runs'
    `min_seconds`."""
    def factory(**options):
        decorate, pre = decorator_factory(**options), options["pre"]

        def decorator(function):
            def call(input):
                return block(function(input))
            wrapped = decorate(call)
            timed = wrapped.wrapped

            def warmed(input_raw):
                start = time.perf_counter_ns()
                call(pre(input_raw))
                warmup = {"name": "warmup", "nanoseconds": time.perf_counter_ns() - start}
                result = timed(input_raw)
                return {**result, "timings": [warmup, *result["timings"]]}
            wrapped.function, wrapped.wrapped = function, warmed
            return wrapped
        return decorator
    return factory


def patch_jax() -> None:
    import jax
    from gradbench import wrap
    wrap.multiple_runs = blocking(wrap.multiple_runs, jax.block_until_ready)
    wrap.function = blocking(wrap.function, jax.block_until_ready)


def patch_manual(cpp) -> None:
    """Make `cpp.define` build a module's binary only when it is missing."""
    rebuild = cpp.define

    def define(*, args, module):
        if os.access(os.path.join("tools", args.tool, "bin", module), os.X_OK):
            return {"success": True}
        return rebuild(args=args, module=module)
    cpp.define = define


def main(argv: list[str]) -> None:
    kind, script, *rest = argv
    script = os.path.abspath(script)
    sys.path[0] = os.path.dirname(script)
    sys.argv = [script, *rest]
    if kind == "jax":
        patch_jax()
        runpy.run_path(script, run_name="__main__")
    elif kind == "manual":
        cpp = importlib.import_module(os.path.splitext(os.path.basename(script))[0])
        patch_manual(cpp)
        cpp.main()
    else:
        raise SystemExit(f"peer_shim: unknown kind {kind!r} (jax or manual)")


if __name__ == "__main__":
    main(sys.argv[1:])
