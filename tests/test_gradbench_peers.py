"""The runner's part for GradBench's own tools (gradbench/run.py, peer_shim.py, table.py):
starting a tool in its folder without this repository on PYTHONPATH and pinned to one CPU,
ending a session that hangs, the shim's two adjustments (JAX timed to completion, the C++
binaries not rebuilt), and the table from sessions. Fake tools, fake evals and a fake
GradBench package stand in: neither GradBench, JAX nor PyTorch is needed."""
import datetime
import itertools
import json
import os
import subprocess
import sys
import textwrap

import pytest

from gradbench import run, table

SHIM = os.path.join(run.REPOSITORY, "gradbench", "peer_shim.py")

# a tool that answers hello as a peer would, and tells where and how it was started
FAKE_TOOL = r"""
import json, os, sys, time
for line in sys.stdin:
    message = json.loads(line)
    response = {"id": message["id"]}
    if message["kind"] == "start":
        response.update(tool="fake", cwd=os.getcwd(),
                        pythonpath=os.environ.get("PYTHONPATH"),
                        cpus=sorted(os.sched_getaffinity(0)))
    elif message["kind"] == "define":
        response["success"] = True
    elif message["kind"] == "evaluate":
        x = message["input"]
        if x == "hang":
            time.sleep(600)
        output = x * x if message["function"] == "square" else 2 * x
        response.update(success=True, output=output,
                        timings=[{"name": "evaluate", "nanoseconds": 2000}])
    print(json.dumps(response), flush=True)
"""

# a hello eval in miniature (as tests/test_gradbench_tool.py's)
MINI_EVAL = r"""
import json, sys
def send(message):
    print(json.dumps(message), flush=True)
    return json.loads(sys.stdin.readline())
send({"id": 0, "kind": "start", "eval": "hello"})
assert send({"id": 1, "kind": "define", "module": "hello"})["success"]
inputs = [float(a) if a != "hang" else a for a in sys.argv[1:]] or [1.0, 2.5]
for i, x in enumerate(inputs):
    for j, function in enumerate(["square", "double"]):
        id = 2 + 4 * i + 2 * j
        answer = send({"id": id, "kind": "evaluate", "module": "hello", "function": function,
                       "input": x, "description": f"x={x}"})
        expected = x * x if function == "square" else 2 * x
        send({"id": id + 1, "kind": "analysis", "of": id,
              "valid": answer.get("output") == expected})
"""


@pytest.fixture
def fake_tool(tmp_path):
    path = tmp_path / "fake_tool.py"
    path.write_text(FAKE_TOOL)
    return path


def test_a_peer_runs_in_its_folder_without_pythonpath_on_one_cpu(tmp_path, fake_tool,
                                                                  monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(run.REPOSITORY))
    cpu = min(os.sched_getaffinity(0))
    command = run.ToolCommand([sys.executable, str(fake_tool)], cwd=tmp_path,
                              keep_pythonpath=False)
    session, status = run.relay([sys.executable, "-c", MINI_EVAL], command, run.REPOSITORY,
                                cpu=cpu)
    assert status == 0
    started = session[1]["response"]
    assert started["cwd"] == str(tmp_path) and started["pythonpath"] is None
    assert started["cpus"] == [cpu]
    rows = run.evaluations(session)
    assert [(r["function"], r["valid"]) for r in rows] == [("square", True), ("double", True)] * 2


def test_a_session_that_hangs_is_ended(fake_tool):
    command = run.ToolCommand([sys.executable, str(fake_tool)])
    with pytest.raises(TimeoutError, match="more than 3 s"):
        run.relay([sys.executable, "-c", MINI_EVAL, "hang"], command, run.REPOSITORY,
                  timeout=3)


def test_which_tool_implements_which_eval(tmp_path):
    (tmp_path / "tools" / "manual").mkdir(parents=True)
    (tmp_path / "tools" / "manual" / "evals.txt").write_text("hello\nlse\n")
    jax = tmp_path / "python" / "gradbench" / "gradbench" / "tools" / "jax"
    jax.mkdir(parents=True)
    (jax / "ode.py").write_text("")
    assert run.implements("manual", "lse", tmp_path)
    assert not run.implements("manual", "ode", tmp_path)
    assert run.implements("jax", "ode", tmp_path)
    assert not run.implements("jax", "lse", tmp_path)
    assert not run.implements("pytorch", "ode", tmp_path)
    assert run.implements("s2sad", "saddle", tmp_path)
    assert not run.implements("s2sad", "nothing", tmp_path)
    assert run.implements("s2sad-numba", "hello", tmp_path)
    command = run.tool_command("jax", "ode", tmp_path, "/peer/python")
    assert command.argv == ["/peer/python", SHIM, "jax", str(jax / "run.py")]
    assert command.cwd == tmp_path and not command.keep_pythonpath
    assert run.tool_command("s2sad-numba", "llsq", tmp_path, "p").argv[-2:] == ["--numba",
                                                                                "llsq"]
    with pytest.raises(ValueError, match="no tool 'enzyme'"):
        run.tool_command("enzyme", "ode", tmp_path, "p")


# GradBench's python package in miniature: its `wrap` decorators, as the tools use them
FAKE_WRAP = """
import time
from dataclasses import dataclass

@dataclass
class Wrapped:
    function: object
    wrapped: object

    def __call__(self, *args):
        return self.function(*args)

def multiple_runs(*, pre, post):
    def decorator(function):
        def wrapped(input):
            x = pre(input)
            start = time.perf_counter_ns()
            output = function(x)
            took = time.perf_counter_ns() - start
            return {"output": post(output),
                    "timings": [{"name": "evaluate", "nanoseconds": took}]}
        return Wrapped(function, wrapped)
    return decorator

function = multiple_runs
"""
# `jax.block_until_ready` waits for the computation: here 0.3 s, and it marks the result;
# the first call compiles: 0.5 s more
FAKE_JAX = """
import time
calls = []
def block_until_ready(x):
    calls.append(x)
    time.sleep(0.3 + 0.5 * (len(calls) == 1))
    return ("ready", x)
"""
# a jax tool: its run.py imports the eval's module from its own folder
FAKE_JAX_TOOL = """
import json, sys
from importlib import import_module
module = import_module(sys.argv[1])
print(json.dumps({"args": sys.argv[1:], "answer": module.gradient.wrapped(3.0),
                  "unwrapped": module.gradient(3.0)}))
"""
FAKE_JAX_MODULE = """
from gradbench import wrap

@wrap.multiple_runs(pre=float, post=list)
def gradient(x):
    return [2 * x]
"""


def test_the_shim_times_jax_to_completion(tmp_path):
    site = tmp_path / "site"
    (site / "gradbench").mkdir(parents=True)
    (site / "gradbench" / "__init__.py").write_text("")
    (site / "gradbench" / "wrap.py").write_text(FAKE_WRAP)
    (site / "jax.py").write_text(FAKE_JAX)
    tool = tmp_path / "tools" / "jax"
    tool.mkdir(parents=True)
    (tool / "run.py").write_text(FAKE_JAX_TOOL)
    (tool / "sq.py").write_text(FAKE_JAX_MODULE)
    env = {**os.environ, "PYTHONPATH": str(site)}
    out = subprocess.run([sys.executable, SHIM, "jax", str(tool / "run.py"), "sq"], env=env,
                         cwd=tmp_path, capture_output=True, text=True, check=True).stdout
    got = json.loads(out)
    assert got["args"] == ["sq"]
    assert got["answer"]["output"] == ["ready", [6.0]]   # post() got the waited-for result
    warmup, timed = got["answer"]["timings"]            # compiled in an untimed first call,
    assert warmup["name"] == "warmup" and warmup["nanoseconds"] >= 0.8e9
    assert timed["name"] == "evaluate"                  # then timed with the wait
    assert 0.3e9 <= timed["nanoseconds"] < 0.8e9
    assert got["unwrapped"] == [6.0]                     # the function itself is unchanged


# GradBench's C++ driver in miniature: `define` rebuilds, `main` answers one define a module
FAKE_CPP = """
import sys
def define(*, args, module):
    return {"success": False, "error": f"rebuilt {module}"}
class Args:
    tool = "manual"
def main():
    for module in sys.argv[2:]:
        print(module, define(args=Args(), module=module))
"""


def test_the_shim_builds_only_missing_binaries(tmp_path):
    (tmp_path / "cpp.py").write_text(FAKE_CPP)
    binary = tmp_path / "tools" / "manual" / "bin" / "built"
    binary.parent.mkdir(parents=True)
    binary.write_text("")
    binary.chmod(0o755)
    out = subprocess.run([sys.executable, SHIM, "manual", str(tmp_path / "cpp.py"), "manual",
                          "built", "missing"], cwd=tmp_path, capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert out == ["built {'success': True}",
                   "missing {'success': False, 'error': 'rebuilt missing'}"]


def test_the_shim_names_its_two_kinds():
    out = subprocess.run([sys.executable, SHIM, "tensorflow", "run.py"], capture_output=True,
                         text=True)
    assert out.returncode != 0 and "unknown kind 'tensorflow'" in out.stderr


IDS = itertools.count(2, 2)


def answered(function, description, success=True, valid=True, ms=1.0, error=None):
    """The lines of one evaluation as a session records them (two runs: `ms`, twice `ms`)."""
    id = next(IDS)
    response = {"id": id, "success": success}
    if success:
        response["timings"] = [{"name": "evaluate", "nanoseconds": ms * 1e6},
                               {"name": "evaluate", "nanoseconds": 2 * ms * 1e6}]
    else:
        response["error"] = error
    lines = [{"message": {"id": id, "kind": "evaluate", "function": function,
                          "description": description}},
             {"response": response}]
    if success:
        lines.append({"message": {"id": id + 1, "kind": "analysis", "of": id,
                                  "valid": valid, "error": error}})
    return lines


def test_cells_and_errors_of_a_session():
    session = (answered("primal", "n=1", ms=0.5) + answered("rr", "w=0", ms=3.0)
               + answered("rr", "w=1", ms=2.0)
               + answered("fr", "w=0", valid=False, error="mismatch at [0]\nmore")
               + answered("rf", "w=0", success=False,
                          error="Traceback (most recent call last):\n  ...\nS2SADError: no"))
    got = table.cells(session, ["rr", "fr", "rf", "ff"])
    assert got == {"rr": 2.0, "fr": "invalid", "rf": "failed", "ff": "failed"}
    assert table.errors(session) == ["invalid: mismatch at [0]", "S2SADError: no"]


def split(line):
    """A Markdown table line's cells."""
    return [cell.strip() for cell in line.split("|")[1:-1]]


def test_a_table_line():
    tools = list(run.TOOLS)
    row = {"s2sad": 3.0, "s2sad-numba": 0.5, "manual": 0.25, "jax": 2.0, "pytorch": 1.5}
    assert split(table.line("lse", "gradient", row, tools)) == [
        "lse", "-n 160000", "3", "0.5", "0.25", "2", "1.5", "2", "2"]
    cells = split(table.line("det", "gradient", {"s2sad": 0.00001234, "manual": "failed"},
                             tools))
    assert cells[2:] == ["0.0000123", "n/i", "failed", "n/i", "n/i", "", ""]
    assert table.line("saddle", "rf", {}, tools).startswith("| saddle rf | default |")
    assert table.header(tools).splitlines()[1].count("---") == len(tools) + 4
    assert table.better(None, 2.0) == 2.0 and table.better(3.0, 2.0) == 2.0
    assert table.better("failed", 2.0) == "failed" and table.better(2.0, "failed") == "failed"


def test_the_table_end_to_end(tmp_path, fake_tool, monkeypatch, capsys):
    """A fake checkout (a hello eval program and the manual tool's list), a fake tool for
    each of GradBench's: one line for hello, with every tool's time and both ratios."""
    evals = tmp_path / "python" / "gradbench" / "gradbench" / "evals" / "hello"
    evals.mkdir(parents=True)
    (evals / "run.py").write_text(textwrap.dedent(MINI_EVAL))
    (tmp_path / "tools" / "manual").mkdir(parents=True)
    (tmp_path / "tools" / "manual" / "evals.txt").write_text("hello\n")
    for peer in ("jax", "pytorch"):
        folder = tmp_path / "python" / "gradbench" / "gradbench" / "tools" / peer
        folder.mkdir(parents=True)
        (folder / "hello.py").write_text("")
    real = run.tool_command
    monkeypatch.setattr(run, "tool_command", lambda tool, *a: real(tool, *a) if tool == "s2sad"
                        else run.ToolCommand([sys.executable, str(fake_tool)], cwd=tmp_path))
    assert table.main(["hello", "--gradbench", str(tmp_path), "--python", sys.executable,
                       "--peer-python", sys.executable, "--tools", "s2sad,manual,jax,pytorch",
                       "--rounds", "2"]) == 0
    out = capsys.readouterr().out.splitlines()
    hello = next(ln for ln in out if ln.startswith("| hello"))
    cells = split(hello)
    assert cells[:2] == ["hello", "default"] and len(cells) == 8 and cells[7] == ""
    assert float(cells[2]) > 0 and cells[3:6] == ["0.002"] * 3   # the fake's 2 µs
    assert float(cells[6]) == pytest.approx(float(cells[2]) / 0.002, rel=0.01)
    assert out[0].startswith(str(datetime.date.today()))
