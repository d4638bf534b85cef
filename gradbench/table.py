"""GradBench's evals side by side: each eval at one size, run by each tool in turn (s2sad on
its Python backend, s2sad on its numba backend where the eval offers it, and GradBench's
hand-written C++ `manual`, `jax` and `pytorch` tools), one Markdown line per derivative.

    python -m gradbench.table --gradbench /tmp/gradbench --python /tmp/gbvenv/bin/python \\
        --peer-python /tmp/gbpeers/bin/python [EVAL ...]

Each cell is the fastest `evaluate` time of the derivative (ms) over the tool's runs and the
table's rounds; `n/i` where the tool does not implement the eval, `failed` where the tool
answered `success: false` (or the session crashed), `invalid` where the eval found an answer
wrong, `timeout` past `--timeout`. The tools run one after another on each eval (interleaved,
so the shared machine's load falls on all alike), each in its own session through
`gradbench.run.relay`, single-threaded and pinned to one CPU, GradBench's jax tool timed to
completion (see peer_shim.py). The last two columns: s2sad's time over the faster of JAX and
PyTorch, and s2sad numba's over manual's.
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import shlex
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from gradbench import run

# each eval's size in the table (its eval program's arguments): one of GradBench's sizes at
# which s2sad's tool and manual answer within seconds on a 2-core shared machine (PyTorch's
# ba and ht, Python loops over points, take minutes there)
SIZES = {
    "hello": [],
    "lse": ["-n", "160000"],
    "llsq": ["-m", "128", "-n", "1024"],
    "ode": ["-n", "1000", "-s", "10"],
    "kmeans": ["-k", "100", "-n", "1000", "-d", "8"],
    "gmm": ["-d", "10", "-k", "25"],
    "det": ["-l", "7"],
    "lstm": ["-l", "2", "-c", "1024"],
    "ba": ["--min", "1", "--max", "1"],
    "ht": ["--min", "1", "--max", "1"],
    "particle": [],
    "saddle": [],
}
# the functions whose times the table shows: each eval's derivatives
DERIVATIVES = {"hello": ["double"], "kmeans": ["dir"], "gmm": ["jacobian"],
               "lstm": ["jacobian"], "ba": ["jacobian"], "ht": ["jacobian"],
               "particle": ["rr", "fr", "rf", "ff"], "saddle": ["rr", "fr", "rf", "ff"]}
HEADINGS = {"s2sad": "s2sad", "s2sad-numba": "s2sad numba", "manual": "manual",
            "jax": "JAX", "pytorch": "PyTorch"}


def cells(session: list[dict], functions: list[str]) -> dict[str, float | str]:
    """Each derivative function's cell from one session: its fastest time in ms, or what
    went wrong."""
    rows = run.evaluations(session)
    out = {}
    for function in functions:
        mine = [r for r in rows if r["function"] == function]
        if not mine or any(not r.get("success") for r in mine):
            out[function] = "failed"
        elif any(r["valid"] is False for r in mine):
            out[function] = "invalid"
        else:
            out[function] = min(r["min_ms"] for r in mine)
    return out


def errors(session: list[dict]) -> list[str]:
    """One line for each distinct error a session met: a refusal (a failed `define` or
    `evaluate`: the traceback's last line, or the message's first) or a wrong answer."""
    found = []
    for line in session:
        text = None
        if line.get("message", {}).get("kind") == "analysis" and \
                line["message"].get("valid") is False:
            text = "invalid: " + (line["message"].get("error") or "").strip()
        elif line.get("response", {}).get("success") is False:
            text = line["response"].get("error", "").strip()
        if text is None:
            continue
        lines = text.splitlines() or [""]
        text = lines[-1] if lines[0].startswith("Traceback") else lines[0]
        text = text if len(text) <= 300 else text[:300] + "..."
        if text not in found:
            found.append(text)
    return found


def better(old: float | str | None, new: float | str) -> float | str:
    """The cell of two rounds: the faster time, or the first round's failure."""
    if old is None:
        return new
    if isinstance(old, float) and isinstance(new, float):
        return min(old, new)
    return old if not isinstance(old, float) else new


def significant(x: float) -> str:
    """`x` to three significant digits, without an exponent."""
    return np.format_float_positional(x, precision=3, unique=False, fractional=False,
                                      trim="-")


def ratio(a, b) -> str:
    return significant(a / b) if isinstance(a, float) and isinstance(b, float) and b > 0 \
        else ""


def show(cell) -> str:
    if cell is None:
        return "n/i"
    return significant(cell) if isinstance(cell, float) else cell


def line(name: str, function: str, row: dict, tools: list[str]) -> str:
    faster_peer = min((row[t] for t in ("jax", "pytorch") if isinstance(row.get(t), float)),
                      default=None)
    label = name if len(DERIVATIVES.get(name, ["gradient"])) == 1 else f"{name} {function}"
    size = " ".join(SIZES.get(name, [])) or "default"
    return (f"| {label} | {size} | " + " | ".join(show(row.get(t)) for t in tools)
            + f" | {ratio(row.get('s2sad'), faster_peer)} | "
            f"{ratio(row.get('s2sad-numba'), row.get('manual'))} |")


def header(tools: list[str]) -> str:
    return ("| eval | size | " + " | ".join(f"{HEADINGS[t]} ms" for t in tools)
            + " | s2sad / faster of JAX, PyTorch | s2sad numba / manual |\n"
            + "| --- " * (len(tools) + 4) + "|")


def versions(peer_python: str) -> list[str]:
    """The machine's and the tools' versions, for the record."""
    cpu = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo")
                if ln.startswith("model name")), platform.processor())
    try:
        import numba
        numba_version = numba.__version__
    except ImportError:
        numba_version = "absent"
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=run.REPOSITORY,
                            capture_output=True, text=True).stdout.strip()
    peers = subprocess.run(
        [peer_python, "-c", "import importlib.metadata as m\n"
         "for p in ('jax', 'jaxlib', 'torch', 'numpy'):\n"
         "    try: print(p, m.version(p))\n"
         "    except m.PackageNotFoundError: print(p, 'absent')"],
        capture_output=True, text=True, cwd="/").stdout.split("\n")
    return [f"{datetime.date.today()}, {cpu}, {os.cpu_count()} "
            f"CPUs; Python {platform.python_version()}",
            f"s2sad {commit}: NumPy {np.__version__}, Numba {numba_version}",
            "peers: " + ", ".join(p for p in peers if p)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gradbench.table", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("evals", nargs="*", default=list(SIZES),
                        help="the evals (all twelve by default)")
    parser.add_argument("--gradbench", type=Path, required=True,
                        help="a GradBench checkout, with tools/manual built")
    parser.add_argument("--python", required=True,
                        help="the Python that runs the evals (with GradBench's python package)")
    parser.add_argument("--peer-python", required=True,
                        help="the Python that runs GradBench's tools (jax, torch, GradBench)")
    parser.add_argument("--tools", default=",".join(run.TOOLS),
                        help="the tools, comma-separated (default: all five)")
    parser.add_argument("--size", action="append", default=[], metavar="EVAL=ARGS",
                        help="another size for an eval, e.g. lse='-n 2500'")
    parser.add_argument("--min-runs", type=int, default=3)
    parser.add_argument("--min-seconds", type=float, default=0.5)
    parser.add_argument("--rounds", type=int, default=1,
                        help="run the tools this many times over on each eval; the fastest")
    parser.add_argument("--cpu", type=int, default=0, help="the CPU every tool runs on")
    parser.add_argument("--timeout", type=float, default=600,
                        help="seconds one session may take")
    parser.add_argument("--log-dir", type=Path, help="keep each session's lines here")
    args = parser.parse_args(argv)
    for given in args.size:
        name, _, sizes = given.partition("=")
        SIZES[name] = shlex.split(sizes)
    tools = args.tools.split(",")
    unknown = [t for t in tools if t not in run.TOOLS]
    if unknown:
        parser.error(f"no tool {', '.join(unknown)}: the tools are {', '.join(run.TOOLS)}")
    if args.log_dir:
        args.log_dir.mkdir(parents=True, exist_ok=True)
    print("\n".join(versions(args.peer_python)))
    print("python -m gradbench.table " + " ".join(shlex.quote(a) for a in (
        sys.argv[1:] if argv is None else argv)))
    print()
    print(header(tools), flush=True)
    notes = []
    for name in args.evals:
        functions = DERIVATIVES.get(name, ["gradient"])
        eval_args = SIZES[name] + ([] if name == "hello" else
                                   ["--min-runs", str(args.min_runs),
                                    "--min-seconds", str(args.min_seconds)])
        eval_cmd = [args.python, f"python/gradbench/gradbench/evals/{name}/run.py", *eval_args]
        rows = {f: {} for f in functions}
        for round in range(args.rounds):
            for tool in tools:
                if not run.implements(tool, name, args.gradbench):
                    continue
                command = run.tool_command(tool, name, args.gradbench, args.peer_python)
                log = (open(args.log_dir / f"{name}-{tool}-{round}.jsonl", "w")
                       if args.log_dir else None)
                print(f"{time.strftime('%H:%M:%S')} {name}: {tool} (round {round + 1})",
                      file=sys.stderr, flush=True)
                try:
                    session, _ = run.relay(eval_cmd, command, args.gradbench, log,
                                           cpu=args.cpu, timeout=args.timeout)
                    got = cells(session, functions)
                    problems = errors(session)
                except TimeoutError:
                    got, problems = dict.fromkeys(functions, "timeout"), []
                except (RuntimeError, BrokenPipeError, ValueError) as exc:
                    got, problems = dict.fromkeys(functions, "failed"), [str(exc)]
                finally:
                    if log is not None:
                        log.close()
                for function in functions:
                    rows[function][tool] = better(rows[function].get(tool), got[function])
                notes += [f"{name}, {tool}: {p}" for p in problems
                          if f"{name}, {tool}: {p}" not in notes]
        for function in functions:
            print(line(name, function, rows[function], tools), flush=True)
    if notes:
        print()
        print("\n".join(f"- {n}" for n in notes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
