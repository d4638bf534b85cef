"""Run one GradBench eval against a tool without Docker: start the eval program of a
local GradBench checkout and the tool as two processes, relay the JSON lines between them,
and print each evaluation's validity and timings.

    python -m gradbench.run --gradbench /tmp/gradbench --python /tmp/gbvenv/bin/python \\
        lse -- --min-runs 3
    python -m gradbench.run --gradbench /tmp/gradbench --python /tmp/gbvenv/bin/python \\
        --tool jax --peer-python /tmp/gbpeers/bin/python lse

The tool is s2sad's (`python -m gradbench.tool`, the default), one of GradBench's own
(`--tool manual`, its hand-written C++; `jax` and `pytorch`, run by `--peer-python`, a Python
with jax, torch and GradBench's python package), or any command (`--tool-command`, run from
the current directory). GradBench's tools run through `peer_shim.py`, which times JAX to
completion and does not rebuild the C++ binaries. Arguments after `--` go to the eval program
(its sizes: `-n`, `--min-runs`, ...). Both processes run single-threaded (OpenMP, OpenBLAS,
MKL, Numba and XLA threads 1). The eval validates answers with GradBench's C++ `manual` tool,
which must be built in the checkout (gradbench/README.md says how).
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]

# (primal, derivative) function names of each eval, for the ratio of their times
PAIRS = {"hello": ("square", "double"), "gmm": ("objective", "jacobian"),
         "kmeans": ("cost", "dir"), "lstm": ("objective", "jacobian"),
         "ba": ("objective", "jacobian"), "ht": ("objective", "jacobian")}
SINGLE_THREADED = {**{name: "1" for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                             "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")},
                   "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false"}
TOOLS = ("s2sad", "s2sad-numba", "manual", "jax", "pytorch")
SHIM = Path(__file__).resolve().parent / "peer_shim.py"


@dataclass
class ToolCommand:
    """How to start a tool: its command line, the folder it runs in, and whether it keeps
    this process's PYTHONPATH (GradBench's tools import GradBench's own `gradbench`
    package, which a PYTHONPATH naming this repository would hide)."""
    argv: list[str]
    cwd: Path = REPOSITORY
    keep_pythonpath: bool = True
    env: dict[str, str] = field(default_factory=dict)


def implements(tool: str, name: str, gradbench: Path) -> bool:
    """Whether `tool` (one of TOOLS) has eval `name`: s2sad's tool has each of its evals
    (on the numba backend, those that offer it); GradBench's tools, the modules its checkout
    has for them."""
    if tool in ("s2sad", "s2sad-numba"):
        from gradbench import evals
        try:
            module = evals.load(name)
        except KeyError:
            return False
        return tool == "s2sad" or "numba" in module.BACKENDS
    if tool == "manual":
        listed = gradbench / "tools" / "manual" / "evals.txt"
        return name in listed.read_text().split()
    return (gradbench / "python" / "gradbench" / "gradbench" / "tools" / tool /
            f"{name}.py").exists()


def tool_command(tool: str, name: str, gradbench: Path, peer_python: str,
                 python: str = sys.executable) -> ToolCommand:
    """The command that starts `tool` (one of TOOLS) for eval `name`. s2sad's tool runs in
    `python` (this process's), GradBench's jax and pytorch tools in `peer_python`, its C++
    driver in `peer_python` too (it needs only the standard library)."""
    if tool == "s2sad":
        return ToolCommand([python, "-m", "gradbench.tool"])
    if tool == "s2sad-numba":
        return ToolCommand([python, "-m", "gradbench.tool", "--numba", name])
    tools = gradbench / "python" / "gradbench" / "gradbench" / "tools"
    if tool == "manual":
        argv = [peer_python, str(SHIM), "manual", str(tools.parent / "cpp.py"), "manual"]
    elif tool == "jax":
        argv = [peer_python, str(SHIM), "jax", str(tools / "jax" / "run.py")]
    elif tool == "pytorch":
        argv = [peer_python, str(tools / "pytorch" / "run.py")]
    else:
        raise ValueError(f"no tool {tool!r}: one of {', '.join(TOOLS)}")
    return ToolCommand(argv, cwd=gradbench, keep_pythonpath=False)


def relay(eval_cmd: list[str], tool_cmd: list[str] | ToolCommand, eval_cwd: Path,
          log=None, cpu: int | None = None,
          timeout: float | None = None) -> tuple[list[dict], int]:
    """Run the session; returns its lines as GradBench's log has them (`message` from the
    eval, `response` from the tool) and the eval program's exit status. A bare command line
    for the tool runs in this repository's root. With `cpu`, the tool runs on that CPU only
    (as GradBench's jax tool pins itself to CPU 0: pinning every tool alike keeps the
    comparison even on a shared machine). With `timeout` (seconds), both processes are killed
    when the session takes longer, and TimeoutError is raised."""
    if not isinstance(tool_cmd, ToolCommand):
        tool_cmd = ToolCommand(list(tool_cmd))
    env = {**os.environ, **SINGLE_THREADED}
    # (the eval program imports GradBench's own `gradbench` package: not this folder,
    # whatever PYTHONPATH the tool is run with)
    eval_env = {k: v for k, v in env.items() if k != "PYTHONPATH"}
    tool_env = {**(env if tool_cmd.keep_pythonpath else eval_env), **tool_cmd.env}
    evaluator = subprocess.Popen(eval_cmd, cwd=eval_cwd, env=eval_env, text=True,
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    pin = None if cpu is None else (lambda: os.sched_setaffinity(0, {cpu}))
    tool = subprocess.Popen(tool_cmd.argv, cwd=tool_cmd.cwd, env=tool_env, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, preexec_fn=pin)
    session = []
    killed = []

    def kill():
        killed.append(True)
        for process in (tool, evaluator):
            process.kill()
    timer = threading.Timer(timeout, kill) if timeout is not None else None
    if timer is not None:
        timer.start()

    def record(kind, value):
        session.append({kind: value})
        if log is not None:
            log.write(json.dumps({kind: value}) + "\n")
            log.flush()

    try:
        for line in evaluator.stdout:
            message = json.loads(line)
            record("message", message)
            tool.stdin.write(line)
            tool.stdin.flush()
            if message.get("kind") == "end":
                break
            answer = tool.stdout.readline()
            if not answer:
                raise RuntimeError("the tool ended before answering message "
                                   f"{message['id']}")
            record("response", json.loads(answer))
            evaluator.stdin.write(answer)
            evaluator.stdin.flush()
    except (RuntimeError, BrokenPipeError, json.JSONDecodeError):
        if not killed:
            raise
    finally:
        if timer is not None:
            timer.cancel()
        for process in (tool, evaluator):
            try:
                process.stdin.close()
            except BrokenPipeError:
                pass
        tool.wait()
        evaluator.wait()
    if killed:
        raise TimeoutError(f"the session took more than {timeout:g} s: both processes "
                           "were killed")
    return session, evaluator.returncode


def evaluations(session: list[dict]) -> list[dict]:
    """One row per `evaluate`: its function, description, success, validity and times."""
    rows, by_id = [], {}
    for line in session:
        if "message" in line:
            message = line["message"]
            if message["kind"] == "evaluate":
                row = {"function": message["function"],
                       "description": message.get("description", ""), "valid": None}
                by_id[message["id"]] = row
                rows.append(row)
            elif message["kind"] == "analysis" and message["of"] in by_id:
                by_id[message["of"]]["valid"] = message["valid"]
                by_id[message["of"]]["error"] = message.get("error")
        elif line["response"]["id"] in by_id:
            response, row = line["response"], by_id[line["response"]["id"]]
            row["success"] = response.get("success", False)
            if not row["success"]:
                row["error"] = response.get("error", "")
            times = [t["nanoseconds"] / 1e6 for t in response.get("timings", [])
                     if t["name"] == "evaluate"]
            if times:
                row["min_ms"], row["median_ms"], row["runs"] = (
                    min(times), statistics.median(times), len(times))
    return rows


def report(name: str, session: list[dict]) -> str:
    lines = []
    for line in session:
        response = line.get("response", {})
        if "success" in response and not response["success"] and "error" in response:
            if not any(m.get("message", {}).get("id") == response["id"] and
                       m["message"]["kind"] == "evaluate" for m in session):
                lines.append(f"{name}: define failed: {response['error']}")
    rows = evaluations(session)
    if not rows:
        return "\n".join(lines + [f"{name}: no evaluation"])
    primal, derivative = PAIRS.get(name, ("primal", "gradient"))
    lines.append(f"{'function':<10} {'input':<28} {'valid':<7} {'runs':>4} {'min ms':>11} "
                 f"{'median ms':>11} {'ratio':>7}")
    primal_ms = {}   # description -> the latest primal's fastest time
    for r in rows:
        valid = {True: "yes", False: "NO", None: "-"}[r["valid"]] if r.get("success") else "FAILED"
        ratio = ""
        if r["function"] == primal and "min_ms" in r:
            primal_ms[r["description"]] = r["min_ms"]
        elif r["function"] == derivative and "min_ms" in r and primal_ms.get(r["description"]):
            ratio = f"{r['min_ms'] / primal_ms[r['description']]:.2f}"
        times = (f"{r['runs']:>4} {r['min_ms']:>11.4f} {r['median_ms']:>11.4f}"
                 if "min_ms" in r else f"{'':>4} {'':>11} {'':>11}")
        lines.append(f"{r['function']:<10} {r['description'][:28]:<28} {valid:<7} {times} "
                     f"{ratio:>7}")
        if r.get("error"):
            lines.append("    " + r["error"].strip().replace("\n", "\n    "))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    eval_args = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[:argv.index("--")] if "--" in argv else argv
    parser = argparse.ArgumentParser(prog="python -m gradbench.run", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("eval", help="the eval's name (hello, lse, llsq, gmm, ...)")
    parser.add_argument("--gradbench", type=Path, required=True,
                        help="a GradBench checkout, with tools/manual built")
    parser.add_argument("--python", default=sys.executable,
                        help="the Python that runs the eval (with GradBench's python package)")
    parser.add_argument("--numba", action="store_true",
                        help="differentiate with s2sad's numba backend (--tool s2sad-numba)")
    parser.add_argument("--tool", choices=TOOLS, default="s2sad",
                        help="the tool: s2sad's, or GradBench's manual, jax or pytorch")
    parser.add_argument("--peer-python", default=sys.executable,
                        help="the Python that runs GradBench's tools (with jax, torch and "
                             "GradBench's python package)")
    parser.add_argument("--tool-command", metavar="COMMAND",
                        help="any tool's command line (one string, split as a shell does), "
                             "run from the current directory, in place of --tool")
    parser.add_argument("--cpu", type=int,
                        help="run the tool on this CPU only (GradBench's jax tool pins "
                             "itself to CPU 0)")
    parser.add_argument("--log", type=Path, help="write the session's lines to this file")
    args = parser.parse_args(argv)
    eval_cmd = [args.python, f"python/gradbench/gradbench/evals/{args.eval}/run.py", *eval_args]
    if args.tool_command:
        tool_cmd = ToolCommand(shlex.split(args.tool_command), cwd=Path.cwd())
    else:
        tool = "s2sad-numba" if args.numba else args.tool
        tool_cmd = tool_command(tool, args.eval, args.gradbench, args.peer_python)
    log = open(args.log, "w") if args.log else None
    try:
        session, status = relay(eval_cmd, tool_cmd, args.gradbench, log, args.cpu)
    finally:
        if log is not None:
            log.close()
    print(report(args.eval, session))
    if status != 0:
        print(f"the eval program exited with status {status} (its messages are above)")
    rows = evaluations(session)
    return 0 if status == 0 and rows and all(r.get("success") and r["valid"] is not False for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
