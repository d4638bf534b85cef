"""The command line, run as a user would: in a subprocess."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BABY = os.path.join("examples", "babysqrt.py")
ERRORS = os.path.join("tests", "corpus_errors.py")
GOLDEN = os.path.join("tests", "golden", "functions.py")


def run(*args):
    return subprocess.run([sys.executable, "-m", "s2sad", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


def test_show_prints_the_derivative():
    out = run("show", f"{BABY}:babysqrt")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("def babysqrt_vjp(x):")
    assert "def babysqrt_pullback(t_bar):" in out.stdout
    assert "for t in reversed(_s2s_tape):" in out.stdout
    compile(out.stdout, "shown", "exec")


def test_show_wengert_stage():
    out = run("show", f"{BABY}:babysqrt", "--stage", "wengert")
    assert out.returncode == 0, out.stderr
    assert "t_1 = 1 + x" in out.stdout and "_vjp" not in out.stdout


def test_show_wrt_names():
    out = run("show", f"{GOLDEN}:straight_line", "--wrt", "x1,x2")
    assert out.returncode == 0, out.stderr
    assert "return (x1_bar, x2_bar)" in out.stdout


def test_check_passes():
    out = run("check", f"{GOLDEN}:straight_line", "--at", "2.0", "5.0")
    assert out.returncode == 0, out.stderr
    assert "OK" in out.stdout and "d/dx1 = 5.5" in out.stdout


def test_check_fails_with_exit_1(tmp_path):
    mod = tmp_path / "wrongrule.py"
    mod.write_text("import s2sad\n\n"
                   "def cube(x):\n    return x ** 3\n\n"
                   "s2sad.defvjp(cube, 'x', 'g * x')\n\n"
                   "def f(x):\n    return cube(x)\n")
    out = run("check", f"{mod}:f", "--at", "2.0")
    assert out.returncode == 1
    assert "FAIL" in out.stdout


@pytest.mark.parametrize("args, message", [
    (("show", f"{BABY}:nope"), "has no function 'nope'"),
    (("show", "missing.py:f"), "no such file"),
    (("show", "babysqrt"), "expected FILE.py:FUNC"),
    (("check", f"{BABY}:babysqrt", "--at", "1", "2"), "takes 1 positional value"),
    (("check", f"{BABY}:babysqrt", "--at", "one"), "--at takes numbers"),
    (("show", f"{ERRORS}:uses_try"), "corpus_errors.py:"),
    (("show", f"{ERRORS}:uses_gamma"), "math.gamma"),
])
def test_errors_are_one_line_with_exit_2(args, message):
    out = run(*args)
    assert out.returncode == 2
    assert out.stdout == ""
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith("s2sad: error:") and message in lines[0]
    assert "Traceback" not in out.stderr


def test_console_script_is_installed():
    exe = os.path.join(os.path.dirname(sys.executable), "s2sad")
    if not os.path.exists(exe):
        pytest.skip("package not installed as a console script in this environment")
    out = subprocess.run([exe, "show", f"{BABY}:babysqrt"], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0 and "babysqrt_vjp" in out.stdout
