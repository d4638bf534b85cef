"""tests/optional.py: an optional library that is missing skips its tests; one that is
installed but broken fails them with a clear message, and the other tests still run."""
import os
import subprocess
import sys
import textwrap

import pytest

from optional import BrokenDependency, require

TESTS = os.path.dirname(os.path.abspath(__file__))


def _package(tmp_path, name, body):
    (tmp_path / name).mkdir()
    (tmp_path / name / "__init__.py").write_text(body)


def test_missing_library_skips(monkeypatch):
    with pytest.raises(pytest.skip.Exception, match=r'not installed \(pip install -e "\.\[extra\]"\)'):
        require("s2sad_no_such_library.sub", "extra")


def test_broken_library_is_named_with_its_repair(tmp_path, monkeypatch):
    _package(tmp_path, "s2sad_broken_lib", "from math import no_such_name\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(BrokenDependency) as caught:
        require("s2sad_broken_lib", "dask")
    message = str(caught.value)
    assert "s2sad_broken_lib is installed but fails to import" in message
    assert "no_such_name" in message and 'pip install -e ".[dask]"' in message


def test_broken_library_fails_its_module_and_the_suite_runs_on(tmp_path):
    _package(tmp_path, "s2sad_broken_lib", "from math import no_such_name\n")
    (tmp_path / "test_uses_broken.py").write_text(textwrap.dedent("""\
        from optional import require
        lib = require("s2sad_broken_lib", "dask")

        def test_never_runs():
            pass
        """))
    (tmp_path / "test_fine.py").write_text("def test_runs():\n    assert 1 + 1 == 2\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([TESTS, str(tmp_path)]))
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "conftest", "-p", "no:cacheprovider",
         "-o", "addopts=", "-rf", str(tmp_path)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    out = run.stdout
    assert run.returncode == 1, out + run.stderr
    assert "1 failed, 1 passed" in out, out
    assert "errors during collection" not in out and "error" not in out.splitlines()[-1], out
    assert "FAILED" in out and "test_uses_broken.py::optional_dependency" in out, out
    assert "s2sad_broken_lib is installed but fails to import" in out, out
