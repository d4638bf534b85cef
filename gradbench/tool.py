"""s2sad's GradBench tool: reads the eval's messages (JSON lines) on stdin and answers on
stdout, as GradBench's CONTRIBUTING.md specifies.

    python -m gradbench.tool [--numba EVAL ...]

`define` loads the eval's module and builds its functions (s2sad transforms at the first
call); `evaluate` prepares the input, calls the function once, timed as `warmup` (s2sad's
transform, and Numba's compile on that backend), then at least `min_runs` times and at least
`min_seconds`, one `evaluate` timing per run. A function s2sad refuses answers
`success: false` with s2sad's message, so the eval is reported failed, not skipped.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from typing import Any, Callable, Iterable

from gradbench import evals


def _error(exc: BaseException) -> str:
    return "".join(traceback.format_exception_only(type(exc), exc)).strip()


class Tool:
    """The tool's state across one session: the functions of each defined module."""

    def __init__(self, numba: Iterable[str] = ()):
        self.numba = set(numba)
        self.modules: dict[str, dict[str, evals.Function]] = {}

    def backend(self, module: str) -> str:
        return "numba" if module in self.numba or "all" in self.numba else "python"

    def define(self, module: str) -> dict:
        try:
            mod = evals.load(module)
        except KeyError:
            return {"success": False, "error": f"s2sad's tool has no eval {module!r}"}
        backend = self.backend(module)
        if backend not in mod.BACKENDS:
            return {"success": False,
                    "error": f"eval {module!r} offers the backends {mod.BACKENDS}, not {backend!r}"}
        start = time.perf_counter_ns()
        try:
            self.modules[module] = mod.functions(backend)
        except Exception as exc:
            return {"success": False, "error": _error(exc)}
        return {"success": True,
                "timings": [{"name": "define", "nanoseconds": time.perf_counter_ns() - start}]}

    def evaluate(self, module: str, function: str, input: Any) -> dict:
        fn = self.modules.get(module, {}).get(function)
        if fn is None:
            return {"success": False, "error": f"eval {module!r} has no function {function!r}"}
        try:
            return {"success": True, **run(fn, input)}
        except Exception as exc:
            return {"success": False, "error": _error(exc)}

    def answer(self, message: dict) -> dict:
        response = {"id": message["id"]}
        kind = message["kind"]
        if kind == "start":
            response.update(tool="s2sad", config={"numba": sorted(self.numba)})
        elif kind == "define":
            response.update(self.define(message["module"]))
        elif kind == "evaluate":
            response.update(self.evaluate(message["module"], message["function"],
                                          message["input"]))
        return response


def run(fn: evals.Function, input: Any) -> dict:
    """`fn` on `input`: its output and timings (the first call as `warmup`, then one
    `evaluate` per run, as the input's `min_runs` and `min_seconds` ask)."""
    args = fn.prepare(input)
    start = time.perf_counter_ns()
    output = fn.run(*args)
    timings = [{"name": "warmup", "nanoseconds": time.perf_counter_ns() - start}]
    min_runs = input.get("min_runs", 1) if isinstance(input, dict) else 1
    min_seconds = input.get("min_seconds", 0) if isinstance(input, dict) else 0
    elapsed = 0
    runs = 0
    while runs < min_runs or elapsed < min_seconds * 1e9:
        start = time.perf_counter_ns()
        output = fn.run(*args)
        took = time.perf_counter_ns() - start
        timings.append({"name": "evaluate", "nanoseconds": took})
        elapsed += took
        runs += 1
    return {"output": fn.encode(output), "timings": timings}


def serve(lines: Iterable[str], write: Callable[[str], None], tool: Tool) -> None:
    """Answer each message of `lines` through `write`, until the input ends or the eval
    sends `end` (which wants no answer)."""
    for line in lines:
        if not line.strip():
            continue
        message = json.loads(line)
        if message.get("kind") == "end":
            return
        write(json.dumps(tool.answer(message)))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m gradbench.tool", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--numba", nargs="*", default=[], metavar="EVAL",
                        help="evals whose functions s2sad compiles with its numba backend "
                             "('all' for every eval that offers it)")
    args = parser.parse_args(argv)

    def write(text: str) -> None:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()

    serve(sys.stdin, write, Tool(args.numba))


if __name__ == "__main__":
    main()
