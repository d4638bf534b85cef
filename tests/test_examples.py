"""Every script in examples/ runs to completion (exit status 0) from the repository root."""
import importlib.util
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "examples")

#: Modules an example may import that s2sad itself does not depend on; an example that
#: imports one of them is skipped when it is not installed.
OPTIONAL = ("autograd", "jax", "torch", "pygments", "matplotlib", "scipy", "dask",
            "distributed", "numba")

#: The command-line arguments an example runs with here, where its default is large.
ARGUMENTS = {"larger_than_memory.py": ["--gb", "0.01", "--epochs", "2"]}


def _scripts():
    if not os.path.isdir(EXAMPLES):
        return []
    return sorted(name for name in os.listdir(EXAMPLES) if name.endswith(".py"))


def _missing_optional(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    imported = set(re.findall(r"^\s*(?:import|from)\s+([A-Za-z_]\w*)", text, re.MULTILINE))
    return [m for m in OPTIONAL if m in imported and importlib.util.find_spec(m) is None]


@pytest.mark.parametrize("name", _scripts())
def test_example_runs(name):
    path = os.path.join(EXAMPLES, name)
    missing = _missing_optional(path)
    if missing:
        pytest.skip(f"{name} needs {', '.join(missing)}, which is not installed")
    # the checkout under test, not whichever s2sad is installed
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (ROOT, os.environ.get("PYTHONPATH")) if p))
    result = subprocess.run([sys.executable, os.path.join("examples", name),
                             *ARGUMENTS.get(name, [])], cwd=ROOT,
                            capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 0, (
        f"python examples/{name} exited with {result.returncode}\n"
        f"--- stdout ---\n{result.stdout[-4000:]}\n--- stderr ---\n{result.stderr[-4000:]}")


def test_there_are_examples():
    assert _scripts(), "examples/ holds no scripts"
