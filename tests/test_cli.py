"""The command line, run as a user would: in a subprocess."""
import importlib.util
import math
import os
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BABY = os.path.join("examples", "babysqrt.py")
ERRORS = os.path.join("tests", "corpus_errors.py")
GOLDEN = os.path.join("tests", "golden", "functions.py")


def run(*args):
    return subprocess.run([sys.executable, "-m", "s2sad", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


def test_show_prints_the_numba_backends_gradient():
    out = run("show", f"{BABY}:babysqrt", "--backend", "numba")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("def babysqrt_grad(x):")
    assert "_s2s_tape = np.empty(len(range(10)))" in out.stdout
    assert "append" not in out.stdout and "respecialize" not in out.stdout
    tapes = run("show", f"{BABY}:babysqrt", "--backend", "numba", "--stage", "fuse")
    assert tapes.returncode == 0 and "_s2s_tape.append(t)" in tapes.stdout
    forward = run("show", f"{BABY}:babysqrt", "--backend", "numba", "--mode", "forward")
    assert forward.returncode == 0, forward.stderr
    assert forward.stdout.startswith("def babysqrt_jvp(x, x_dot):\n    t = ")   # no guard


def test_show_prints_the_numba_backends_hvp(tmp_path):
    mod = tmp_path / "hvps.py"
    mod.write_text(GRADIENTS + "hx = s2sad.hvp(f, backend='numba')\n"
                   "hy = s2sad.hessian(f, wrt=1, backend='numba')\n")
    out = run("show", f"{mod}:hx", "--backend", "numba", "--mode", "forward")
    assert out.returncode == 0, out.stderr
    # forward mode over the numba gradient code, along x
    assert out.stdout.startswith("def f_grad_jvp(x, y, x_dot):")
    assert out.stdout.endswith("return x_bar_dot\n")
    hy = run("show", f"{mod}:hy", "--backend", "numba", "--mode", "forward")
    # along y, in which f is linear
    assert hy.stdout == ("def f_grad_jvp(x, y, y_dot):\n    t = x * x\n    y_1_bar = 1.0\n"
                         "    y_bar = y_1_bar * t\n    return 0.0\n"), hy.stderr
    stage = run("show", f"{mod}:hx", "--backend", "numba", "--mode", "forward", "--stage",
                "forward")
    assert stage.returncode == 0 and stage.stdout.startswith("def f_grad_jvp("), stage.stderr


def test_show_prints_the_derivative():
    out = run("show", f"{BABY}:babysqrt")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("def babysqrt_vjp(x):")
    assert "def babysqrt_pullback(t_bar):" in out.stdout
    assert "for t in reversed(_s2s_tape):" in out.stdout
    compile(out.stdout, "shown", "exec")


def test_show_prints_the_batched_function_vmap_runs(tmp_path):
    path = tmp_path / "per_example.py"
    path.write_text("import numpy as np\n\n\ndef loss(w, x, y):\n"
                    "    return (np.dot(x, w) - y) ** 2\n")
    out = run("show", f"{path}:loss", "--mode", "batched", "--wrt", "x,y")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("def loss_batched(w, x, y):"), out.stdout
    assert "_s2s_batch_dot(x, 0, w, None)" in out.stdout, out.stdout
    compile(out.stdout, "shown", "exec")
    staged = run("show", f"{path}:loss", "--mode", "batched", "--stage", "wengert")
    assert staged.returncode == 0 and "t = np.dot(x, w)" in staged.stdout, staged.stderr


def test_show_wengert_stage():
    out = run("show", f"{BABY}:babysqrt", "--stage", "wengert")
    assert out.returncode == 0, out.stderr
    assert "t_1 = 1 + x" in out.stdout and "_vjp" not in out.stdout


def test_show_wrt_names():
    out = run("show", f"{GOLDEN}:straight_line", "--wrt", "x1,x2")
    assert out.returncode == 0, out.stderr
    assert "return (x1_bar, x2_bar)" in out.stdout


GRADIENTS = """\
import math
import s2sad


def f(x, y):
    return x * x * y + math.sin(x)


df = s2sad.grad(f)
both = s2sad.value_and_grad(f, wrt=(0, 1))
hv = s2sad.hvp(f, wrt=1)
d2 = s2sad.grad(s2sad.grad(f), wrt=1)
d3 = s2sad.grad(d2)
"""


def test_show_forward_of_a_gradient_is_forward_over_reverse(tmp_path):
    mod = tmp_path / "grads.py"
    mod.write_text(GRADIENTS)
    out = run("show", f"{mod}:df", "--mode", "forward")
    assert out.returncode == 0, out.stderr
    # the tangent of the gradient code, not the function's own f_jvp
    assert out.stdout.startswith("def f_grad_jvp(x, y, x_dot):")
    assert "x_bar_dot = " in out.stdout and "return x_bar_dot" in out.stdout
    assert "y_1_dot" not in out.stdout           # no tangent of the value, which is dropped
    assert "x_bar = " not in out.stdout          # nor the gradient: only its tangent
    assert "Respecialize" not in out.stdout      # no argument-type guard to read through
    namespace = {}
    exec(compile(out.stdout, "shown", "exec"), {"math": math, "cos": math.cos,
                                                "sin": math.sin}, namespace)
    g_dot = namespace["f_grad_jvp"](0.5, 3.0, 1.0)
    # f = x^2 y + sin x: d2f/dx2 = 2 y - sin x
    assert g_dot == pytest.approx(2 * 3.0 - math.sin(0.5), rel=1e-12)
    # the same text as s2sad.source(df, mode="forward"); tangents picked with --wrt
    both = run("show", f"{mod}:both", "--mode", "forward", "--wrt", "x,y")
    assert both.returncode == 0, both.stderr
    assert both.stdout.startswith("def f_grad_jvp(x, y, x_dot, y_dot):")
    assert "(x_bar_dot, y_bar_dot)" in both.stdout   # the Hessian times (x_dot, y_dot)
    # hvp(f, wrt=1) and grad(grad(f), wrt=1): tangents along y, without --wrt
    hv = run("show", f"{mod}:hv", "--mode", "forward")
    assert hv.stdout.startswith("def f_grad_jvp(x, y, y_dot):"), hv.stderr
    d2 = run("show", f"{mod}:d2", "--mode", "forward")
    assert d2.stdout.startswith("def f_grad_jvp(x, y, y_dot):"), d2.stderr  # d/dy of df/dx
    assert d2.stdout.endswith("return x_bar_dot\n")
    # a third derivative: forward mode over the reverse mode of the gradient code of
    # `f_grad`, which stands for grad(f) (d/dx of d/dy of df/dx = 2)
    d3 = run("show", f"{mod}:d3", "--mode", "forward")
    assert d3.stdout.startswith("def f_grad_grad_jvp(x, y, x_dot):"), d3.stderr
    exec(compile(d3.stdout, "shown", "exec"), {}, namespace)
    assert namespace["f_grad_grad_jvp"](0.5, 3.0, 1.0) == 2.0
    # reverse mode and stages: the gradient code's own stages, the function's reverse mode
    stage = run("show", f"{mod}:df", "--mode", "forward", "--stage", "wengert")
    assert stage.stdout.startswith("def f_grad(x, y):"), stage.stderr
    assert run("show", f"{mod}:df").stdout.startswith("def f_vjp(x, y):")
    bad = run("show", f"{mod}:df", "--mode", "forward", "--stage", "optimize")
    assert bad.returncode == 2 and "not a pass of forward mode" in bad.stderr


ODE = os.path.join("examples", "numba_ode_fit.py")


def test_show_at_prints_the_numba_example_its_docstring_names():
    # loss(a, b, c, d, observed) uses no NumPy function: without --at, s2sad.source's
    # default (five floats) makes observed[i] of unknown type, which goes on the list tape
    with open(os.path.join(ROOT, ODE)) as f:
        doc = f.read()
    shown = doc[doc.index("Show the gradient Numba compiles"):].split("\n")
    command = (shown[1] + shown[2]).replace("\\", " ").split()
    assert command[:2] == ["s2sad", "show"] and command[-2:] == ["'[1.0,", "1.0]'"]
    out = run(*command[1:-2], "[1.0, 1.0]")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("def loss_grad(a, b, c, d, observed):")
    assert "_s2s_tape = np.empty((len(range(t)), 4))" in out.stdout
    without = run("show", f"{ODE}:loss", "--wrt", "a,b,c,d", "--backend", "numba")
    assert without.returncode == 0, without.stderr
    assert "_s2s_tape_objects.append((r, t_11, total))" in without.stdout
    # the code dloss, the example's grad(loss, backend="numba"), runs for such arguments
    if importlib.util.find_spec("numba") is not None:
        code = ("import sys, numpy as np; sys.path.insert(0, 'examples'); import numba_ode_fit"
                " as m; m.dloss(1.0, 1.0, 1.0, 1.0, np.ones(2)); print(m.dloss.source, end='')")
        runs = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                              text=True, timeout=300)
        assert runs.returncode == 0 and runs.stdout == out.stdout, runs.stderr
    with open(os.path.join(ROOT, "docs", "cli.md")) as f:
        cli = f.read()
    at = cli.index("$ s2sad show examples/numba_ode_fit.py:loss")
    assert cli[cli.index("\n", at) + 1:cli.index("```", at)] == out.stdout


def test_show_at_compiles_for_the_types_and_shapes_of_the_arguments(tmp_path):
    mod = tmp_path / "loss.py"
    mod.write_text("import numpy as np\n\ndef loss(w, X):\n    return np.sum((X @ w) ** 2)\n")
    w, X = "[1.0, -2.0]", "[[1.0, 0.5], [0.2, 3.0]]"
    out = run("show", f"{mod}:loss", "--stage", "inline_helpers", "--at", w, X)
    assert out.returncode == 0, out.stderr
    # grad's code for a vector and a matrix: the adjoint of X @ w as a product
    assert "w_bar = t_bar @ X" in out.stdout
    assumed = run("show", f"{mod}:loss", "--stage", "inline_helpers")
    assert "_s2s_matmul_rhs(t_bar, X, w)" in assumed.stdout, assumed.stderr
    namespace = {}
    exec(out.stdout, {"np": np, "ndarray": np.ndarray}, namespace)
    w, X = np.array([1.0, -2.0]), np.array([[1.0, 0.5], [0.2, 3.0]])
    np.testing.assert_allclose(namespace["loss_grad"](w, X), 2 * X.T @ X @ w, rtol=1e-14)
    # --args is the same option; too many values are refused
    same = run("show", f"{mod}:loss", "--stage", "inline_helpers", "--args",
               "[1.0, -2.0]", "[[1.0, 0.5], [0.2, 3.0]]")
    assert same.stdout == out.stdout, same.stderr
    bad = run("show", f"{mod}:loss", "--at", "1.0", "2.0", "3.0")
    assert bad.returncode == 2 and "takes at most 2 positional value(s)" in bad.stderr


def test_show_at_of_a_gradient_in_forward_mode(tmp_path):
    mod = tmp_path / "grads.py"
    mod.write_text(GRADIENTS)
    out = run("show", f"{mod}:df", "--mode", "forward", "--at", "0.5", "3.0")
    assert out.returncode == 0, out.stderr
    namespace = {}
    exec(compile(out.stdout, "shown", "exec"), {"math": math, "cos": math.cos,
                                                "sin": math.sin}, namespace)
    # f = x^2 y + sin x: d2f/dx2 = 2 y - sin x
    assert namespace["f_grad_jvp"](0.5, 3.0, 1.0) == pytest.approx(2 * 3.0 - math.sin(0.5))


def test_check_and_trace_take_args_as_at():
    out = run("check", f"{GOLDEN}:straight_line", "--args", "2.0", "5.0")
    assert out.returncode == 0 and "d/dx1 = 5.5" in out.stdout, out.stderr
    at = run("trace", f"{GOLDEN}:straight_line", "--at", "2.0", "5.0")
    args = run("trace", f"{GOLDEN}:straight_line", "--args", "2.0", "5.0")
    assert at.returncode == 0 and args.stdout == at.stdout, args.stderr


def test_check_passes():
    out = run("check", f"{GOLDEN}:straight_line", "--at", "2.0", "5.0")
    assert out.returncode == 0, out.stderr
    assert "OK" in out.stdout and "d/dx1 = 5.5" in out.stdout


def test_check_takes_arrays_as_lists(tmp_path):
    mod = tmp_path / "loss.py"
    mod.write_text("import numpy as np\n\ndef loss(w, X):\n    return np.sum((X @ w) ** 2)\n")
    out = run("check", f"{mod}:loss", "--at", "[1.0, -2.0]", "[[1.0, 0.5], [0.2, 3.0]]")
    assert out.returncode == 0, out.stderr
    # d/dw = 2 X^T X w, d/dX = 2 (X w) w^T
    w, X = np.array([1.0, -2.0]), np.array([[1.0, 0.5], [0.2, 3.0]])
    assert f"d/dw = {2 * X.T @ X @ w!r}" in out.stdout
    assert "OK: the gradient of loss at ([1.0, -2.0], [[1.0, 0.5], [0.2, 3.0]])" in out.stdout
    numbers = run("check", f"{mod}:loss", "--at", "1.0", "2.0")
    assert numbers.returncode == 2
    assert "if it takes arrays, write them as lists in quotes: --at '[1.0, 2.0]'" in (
        numbers.stderr)
    bad = run("check", f"{mod}:loss", "--at", "[1.0, 2.0]", "abc")
    assert bad.returncode == 2 and "arrays written as lists in quotes" in bad.stderr


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
    (("show", f"{BABY}:babysqrt", "--at", "one"), "--at takes numbers"),
    (("trace", f"{BABY}:babysqrt", "--args", "1", "2"), "takes 1 positional value"),
    (("show", f"{ERRORS}:uses_try"), "corpus_errors.py:"),
    (("show", f"{ERRORS}:uses_ldexp"), "math.ldexp"),
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


def test_cli_docs_show_the_real_forward_over_reverse_source(tmp_path):
    with open(os.path.join(ROOT, "docs", "cli.md")) as f:
        doc = f.read()
    start = doc.index("```python\n", doc.index("Here `quad.py` holds:")) + len("```python\n")
    (tmp_path / "quad.py").write_text(doc[start:doc.index("```", start)])
    command = "$ s2sad show quad.py:df --mode forward\n"
    start = doc.index(command) + len(command)
    shown = run("show", f"{tmp_path / 'quad.py'}:df", "--mode", "forward")
    assert shown.returncode == 0, shown.stderr
    assert doc[start:doc.index("```", start)] == shown.stdout


def test_cli_docs_list_the_passes_as_the_command_does():
    with open(os.path.join(ROOT, "docs", "cli.md")) as f:
        doc = f.read()
    command = "$ s2sad show --stage list\n"
    start = doc.index(command) + len(command)
    shown = run("show", "--stage", "list")
    assert shown.returncode == 0, shown.stderr
    assert doc[start:doc.index("```", start)] == shown.stdout
