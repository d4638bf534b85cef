"""s2sad.trace: evaluation traces (values, tangents, adjoints) and `s2sad trace`."""
import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

import s2sad
from s2sad.errors import S2SADError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SEEDS = os.path.join("examples", "seed_functions.py")
BABY = os.path.join("examples", "babysqrt.py")
FORWARD = callable(getattr(s2sad, "jvp", None))
needs_forward = pytest.mark.skipif(not FORWARD, reason="forward mode (s2sad.jvp) is absent")


def f(x1, x2):
    return math.log(x1) + x1 * x2 - math.sin(x2)


def g(x1, x2):
    return x1 * x2 + math.log(x1 ** 2)


def babysqrt(x):
    t = (1 + x) / 2
    for i in range(10):
        t = (t + x / t) / 2
    return t


def cube(n):
    c = 1.0
    for i in range(3):
        c *= n
    return c


def nested(x):
    s = 0.0
    for i in range(2):
        for j in range(3):
            s += x * j + i
    return s


def halve(x):
    while x > 1.0:
        x = x / 2
    return x


def clipped(x, c):
    s = 0.0
    for i in range(1, 4):
        term = math.sin(x * i) / i
        if term > c:
            term = c
        s += term
    return s * x


def first_big(x):
    for i in range(5):
        for j in range(5):
            if i * j * x > 3:
                return x * i + j
    return x


def layer(w, x):
    return np.tanh(w * x).sum()


def vector_out(x):
    return np.sin(x) * 2


def close(a, b):
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)


# -- golden tables ----------------------------------------------------------------------
F_TABLE = """\
f(x1=2.0, x2=5.0) = 11.65207146
reverse mode: adjoint = d y / d variable, seeded with y_bar = 1.0
variable  operation           value          adjoint
--------  ------------------  -------------  -----------
x1        input               2.0            5.5
x2        input               5.0            1.716337815
t         t = math.log(x1)    0.6931471806   1.0
t_1       t_1 = x1 * x2       10.0           1.0
t_2       t_2 = t + t_1       10.69314718    1.0
t_3       t_3 = math.sin(x2)  -0.9589242747  -1.0
y         y = t_2 - t_3       11.65207146    1.0"""

G_TABLE = """\
g(x1=3.0, x2=5.0) = 17.19722458
reverse mode: adjoint = d y / d variable, seeded with y_bar = 1.0
variable  operation            value        adjoint
--------  -------------------  -----------  ------------
x1        input                3.0          5.666666667
x2        input                5.0          3.0
t         t = x1 * x2          15.0         1.0
t_1       t_1 = x1 ** 2        9.0          0.1111111111
t_2       t_2 = math.log(t_1)  2.197224577  1.0
y         y = t + t_2          17.19722458  1.0"""


def test_golden_table_f():
    assert str(s2sad.trace(f, 2.0, 5.0, tangents=False)) == F_TABLE


def test_golden_table_g():
    assert str(s2sad.trace(g, 3.0, 5.0, tangents=False)) == G_TABLE


def test_f_values_by_hand_and_adjoints_analytic():
    t = s2sad.trace(f, 2.0, 5.0)
    values = {r.variable: r.value for r in t}
    assert values["x1"] == 2.0 and values["x2"] == 5.0
    assert close(values["t"], math.log(2))
    assert values["t_1"] == 10.0
    assert close(values["t_2"], math.log(2) + 10)
    assert close(values["t_3"], math.sin(5))
    assert close(values["y"], math.log(2) + 10 - math.sin(5))
    assert close(t.value, math.log(2) + 10 - math.sin(5))
    adj = {r.variable: r.adjoint for r in t}
    assert close(adj["x1"], 1 / 2 + 5) and close(adj["x2"], 2 - math.cos(5))
    assert adj["y"] == adj["t_2"] == adj["t"] == adj["t_1"] == 1.0
    assert adj["t_3"] == -1.0
    assert t.gradient == s2sad.grad(f, wrt=(0, 1))(2.0, 5.0)
    assert t.output == "y" and t.wrt == ("x1", "x2") and t.seed == 1.0


def test_g_values_by_hand_and_adjoints_analytic():
    t = s2sad.trace(g, 3.0, 5.0)
    values = {r.variable: r.value for r in t}
    assert values["t"] == 15.0 and values["t_1"] == 9.0
    assert close(values["t_2"], math.log(9)) and close(t.value, 15 + math.log(9))
    adj = {r.variable: r.adjoint for r in t}
    assert close(adj["x1"], 5 + 2 / 3) and adj["x2"] == 3.0
    assert close(adj["t_1"], 1 / 9)          # d log(t_1) / d t_1


def test_rows_in_execution_order_with_operations():
    t = s2sad.trace(f, 2.0, 5.0)
    assert [r.variable for r in t] == ["x1", "x2", "t", "t_1", "t_2", "t_3", "y"]
    assert [r.operation for r in t][2:] == ["t = math.log(x1)", "t_1 = x1 * x2",
                                            "t_2 = t + t_1", "t_3 = math.sin(x2)",
                                            "y = t_2 - t_3"]
    assert [r.kind for r in t][:2] == ["input", "input"]
    assert all(r.iteration == () for r in t)


# -- loops --------------------------------------------------------------------------------
def test_babysqrt_unrolled_with_iterations():
    t = s2sad.trace(babysqrt, 2.0)
    its = [r.iteration for r in t.find("t_4")]
    assert its == [(k,) for k in range(10)]
    assert [r.value for r in t.find("i")] == list(range(10))
    # the values are Heron's iterates
    guess = 1.5
    assert t.get("t", ()).value == guess   # before the loop
    for k in range(10):
        guess = (guess + 2.0 / guess) / 2
        assert close(t.get("t_4", k).value, guess)
        row = t.get("t", k)
        assert row.kind == "carried" and close(row.value, guess)
    assert close(t.value, math.sqrt(2))
    assert math.isclose(t.get("x").adjoint, 1 / (2 * math.sqrt(2)), rel_tol=1e-9)
    assert t.get("t", 9).adjoint == 1.0 and t.get("t_4", 9).adjoint == 1.0
    assert t.get("t_3", 9).adjoint == 0.5
    # Newton forgets its starting point: the result barely depends on early iterates
    assert abs(t.get("t", ()).adjoint) < 1e-100
    text = str(t)
    assert text.splitlines()[2 + FORWARD].split()[0] == "iteration"
    assert "t = t_4  (carried)" in text


def test_cube_adjoints_accumulate_over_iterations():
    t = s2sad.trace(cube, 2.0)
    assert [r.value for r in t.find("c_1")] == [2.0, 4.0, 8.0]
    assert [r.adjoint for r in t.find("c_1")] == [4.0, 2.0, 1.0]   # n ** (2 - k)
    assert t.get("n").adjoint == 12.0 == 3 * 2.0 ** 2
    assert t.get("c", ()).adjoint == 8.0                          # d c_final / d c_0
    assert [r.operation for r in t.find("c_1")] == ["c_1 = c * n"] * 3


def test_nested_loops_show_one_count_per_loop():
    t = s2sad.trace(nested, 3.0)
    its = [r.iteration for r in t.find("s_1")]
    assert its == [(i, j) for i in range(2) for j in range(3)]
    assert [r.value for r in t.find("s_1")] == [0.0, 3.0, 9.0, 10.0, 14.0, 21.0]
    assert all(r.adjoint == 1.0 for r in t.find("s_1"))
    assert t.get("x").adjoint == s2sad.grad(nested)(3.0) == 6.0
    assert len(t.loops) == 2 and t.loops[0] == "for i in range(2)"
    assert "0,2" in str(t)


def test_return_from_nested_loops_stops_the_trace():
    t = s2sad.trace(first_big, 0.7)
    tests = t.find("t")
    assert [r.value for r in tests].count(True) == 1 and tests[-1].value is True
    assert tests[-1].iteration == (2, 3)          # 2 * 3 * 0.7 > 3
    assert t.value == 0.7 * 2 + 3 and t.get("x").adjoint == 2.0


def test_while_loop_iterations():
    t = s2sad.trace(halve, 3.0)
    assert [(r.iteration, r.value, r.adjoint) for r in t.find("x_1")] == [
        ((0,), 1.5, 0.5), ((1,), 0.75, 1.0)]
    assert t.get("x", ()).adjoint == 0.25 and t.get("x", ()).kind == "input"


def test_branch_in_loop_matches_grad():
    t = s2sad.trace(clipped, 0.7, 0.3)
    assert t.gradient == s2sad.grad(clipped, wrt=(0, 1))(0.7, 0.3)
    assert [r.value for r in t.find("t_2")] == [True, True, False]
    assert [r.adjoint for r in t.find("t_2")] == [None] * 3     # a test has no adjoint
    # where the term is clipped, sin(x * i) does not reach the output
    assert [r.adjoint for r in t.find("term_1")][:2] == [0.0, 0.0]


def test_wrt_subset_leaves_other_inputs_blank():
    t = s2sad.trace(f, 2.0, 5.0, wrt="x2", tangents=False)
    assert t.get("x1").adjoint is None and close(t.get("x2").adjoint, 2 - math.cos(5))
    assert t.get("t").adjoint is None        # log(x1) does not depend on x2
    line = next(ln for ln in str(t).splitlines() if ln.startswith("x1 "))
    assert line.split() == ["x1", "input", "2.0"]


# -- every adjoint and tangent, checked by finite differences -----------------------------
FIXED_PATHS = [(f, (2.0, 5.0)), (g, (3.0, 5.0)), (babysqrt, (2.0,)), (cube, (2.0,)),
               (nested, (3.0,)), (halve, (3.0,)), (clipped, (0.7, 0.3)),
               (first_big, (0.7,))]


@pytest.mark.parametrize("fn, args", FIXED_PATHS, ids=lambda v: getattr(v, "__name__", ""))
def test_every_adjoint_is_a_derivative_of_the_output(fn, args):
    """Perturb each value where it is computed, rerun the rest: the change of the output
    is the adjoint (central differences; these functions' control flow does not move)."""
    from s2sad.trace import _nudged_output
    t = s2sad.trace(fn, *args)
    checked = 0
    for k, r in enumerate(t.rows):
        if r.adjoint is None or type(r.value) is not float:
            continue
        h = 1e-6 * max(1.0, abs(r.value))
        fd = (_nudged_output(t, k, h) - _nudged_output(t, k, -h)) / (2 * h)
        assert math.isclose(fd, r.adjoint, rel_tol=1e-5, abs_tol=1e-6), (r, fd)
        checked += 1
    assert checked >= 4


@needs_forward
@pytest.mark.parametrize("fn, args", FIXED_PATHS, ids=lambda v: getattr(v, "__name__", ""))
def test_every_tangent_is_a_derivative_wrt_the_first_input(fn, args):
    t = s2sad.trace(fn, *args)
    h = 1e-6 * max(1.0, abs(args[0]))
    up = s2sad.trace(fn, args[0] + h, *args[1:], adjoints=False)
    down = s2sad.trace(fn, args[0] - h, *args[1:], adjoints=False)
    assert len(up) == len(down) == len(t)
    for r, a, b in zip(t.rows, up.rows, down.rows):
        if r.tangent is None or type(r.value) is not float:
            continue
        assert math.isclose((a.value - b.value) / (2 * h), r.tangent, rel_tol=1e-5,
                            abs_tol=1e-6), r


# -- arrays ---------------------------------------------------------------------------------
def test_arrays_summarized():
    w, x = np.array([0.5, -1.0, 2.0]), np.array([0.1, 0.2, 0.3])
    t = s2sad.trace(layer, w, x)
    assert isinstance(t.get("w").value, np.ndarray)
    text = str(t)
    assert "array(3,) mean=0.5" in text and "array(3,) mean=0.2" in text
    gw, gx = s2sad.grad(layer, wrt=(0, 1))(w, x)
    np.testing.assert_allclose(t.get("w").adjoint, gw)
    np.testing.assert_allclose(t.get("x").adjoint, gx)
    data = json.loads(t.to_json())
    assert data["rows"][0]["value"]["shape"] == [3]
    assert data["rows"][0]["value"]["text"] == "array(3,) mean=0.5"
    assert math.isclose(data["rows"][0]["value"]["mean"], 0.5)


def test_array_output_is_seeded_with_ones():
    t = s2sad.trace(vector_out, np.array([0.1, 0.2]))
    np.testing.assert_allclose(t.get("x").adjoint, 2 * np.cos([0.1, 0.2]))
    assert "seeded with y_bar = array(2,) mean=1.0" in str(t)


def test_values_are_snapshots():
    t = s2sad.trace(layer, np.ones(2), np.ones(2))
    t.get("w").value[0] = 99.0
    assert t.get("t").value[0] != 99.0


# -- tangents -------------------------------------------------------------------------------
@needs_forward
def test_tangents_forward_mode_classic_table():
    t = s2sad.trace(f, 2.0, 5.0)
    assert [r.tangent for r in t] == [1.0, 0.0, 0.5, 5.0, 5.5, 0.0, 5.5]
    assert t.get("y").tangent == t.get("x1").adjoint     # both are df/dx1
    assert "forward mode: tangent = derivative along x1_dot = 1.0, x2_dot = 0.0" in str(t)
    t2 = s2sad.trace(f, 2.0, 5.0, tangents=(0.0, 1.0))
    assert close(t2.get("y").tangent, 2 - math.cos(5))


@needs_forward
def test_tangents_in_loops():
    t = s2sad.trace(babysqrt, 2.0)
    assert math.isclose(t.get("t", 9).tangent, 1 / (2 * math.sqrt(2)), rel_tol=1e-12)
    assert all(r.tangent is not None for r in t.find("t_4"))
    t = s2sad.trace(cube, 2.0)
    assert [r.tangent for r in t.find("c_1")] == [1.0, 4.0, 12.0]    # k n ** (k - 1)


@needs_forward
def test_tangents_false_leaves_the_column_out():
    t = s2sad.trace(f, 2.0, 5.0, tangents=False)
    assert "tangent" not in str(t) and all(r.tangent is None for r in t)


# -- renderings -----------------------------------------------------------------------------
def test_markdown():
    md = s2sad.trace(f, 2.0, 5.0, tangents=False).to_markdown()
    lines = md.strip().splitlines()
    assert lines[0] == "`f(x1=2.0, x2=5.0) = 11.65207146`<br>"
    table = [ln for ln in lines if ln.startswith("|")]
    assert table[0] == "| variable | operation | value | adjoint |"
    assert table[1] == "|---|---|---|---|"
    assert table[3] == "| `x2` | `input` | 5.0 | 1.716337815 |"
    assert len(table) == 2 + 7
    assert all(ln.count("|") == 5 for ln in table)


def either(x, y):
    if (x > 0) | (y > 0):
        return x * y
    return x


def test_markdown_escapes_pipes():
    md = s2sad.trace(either, 2.0, 3.0).to_markdown()
    assert "| `t_2` | `t_2 = t \\| t_1` | True |" in md
    table = [ln for ln in md.splitlines() if ln.startswith("|")]
    assert len({ln.replace("\\|", "").count("|") for ln in table}) == 1


def test_json_round_trip():
    t = s2sad.trace(babysqrt, 2.0)
    data = json.loads(t.to_json())
    assert data["function"] == "babysqrt" and data["arguments"] == {"x": 2.0}
    assert data["output"] == "t" and data["wrt"] == ["x"] and data["seed"] == 1.0
    assert len(data["rows"]) == len(t) == 3 + 10 * 5
    row = data["rows"][-1]
    assert row["iteration"] == [9] and row["loops"] == [0] and row["kind"] == "carried"
    assert row["adjoint"] == 1.0
    assert data["loops"] == ["for i in range(10)"]
    assert math.isclose(data["gradient"][0], 1 / (2 * math.sqrt(2)), rel_tol=1e-9)


def test_html():
    page = s2sad.trace(clipped, 0.7, 0.3)._repr_html_()
    assert page.count("<tr>") == 1 + len(s2sad.trace(clipped, 0.7, 0.3))
    assert "<code>t_2 = term_1 &gt; c</code>" in page
    assert page.startswith("<div") and page.rstrip().endswith("</div>")


def test_get_names_the_choices():
    t = s2sad.trace(babysqrt, 2.0)
    with pytest.raises(KeyError, match="several rows"):
        t.get("t_4")
    with pytest.raises(KeyError, match="no row"):
        t.get("t_4", 10)
    assert repr(t) == f"<Trace of babysqrt(x=2.0): {len(t)} rows>"


# -- options and errors ---------------------------------------------------------------------
def test_adjoints_false_traces_values_only():
    t = s2sad.trace(cube, 2.0, adjoints=False)
    assert t.wrt == () and all(r.adjoint is None for r in t)
    assert "adjoint" not in str(t) and t.value == 8.0


def intout(n):
    return n > 2


def test_non_numeric_output_needs_a_seed():
    with pytest.raises(S2SADError, match="seed="):
        s2sad.trace(intout, 3.0)
    assert s2sad.trace(intout, 3.0, adjoints=False).value is True


def test_user_exceptions_propagate():
    with pytest.raises(ValueError):
        s2sad.trace(f, -1.0, 5.0)


def test_keyword_arguments_and_defaults():
    def scaled(x, k=2.0):
        return x * k
    t = s2sad.trace(scaled, 3.0)
    assert t.arguments == [("x", 3.0), ("k", 2.0)]
    assert t.get("k").adjoint is None and t.get("x").adjoint == 2.0


def test_trace_is_exported():
    assert "trace" in s2sad.__all__ and s2sad.trace.__module__ == "s2sad.trace"


# -- the command line -----------------------------------------------------------------------
def run(*args):
    return subprocess.run([sys.executable, "-m", "s2sad", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


def test_cli_trace_text():
    out = run("trace", f"{SEEDS}:f", "--at", "2", "5")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "f(x1=2.0, x2=5.0) = 11.65207146"
    assert lines[-1].split()[:4] == ["y", "y", "=", "t_2"]
    assert lines[-1].split()[-1] == "1.0"


def test_cli_trace_markdown_and_wrt():
    out = run("trace", f"{SEEDS}:g", "--at", "3", "5", "--wrt", "x2", "--format", "markdown")
    assert out.returncode == 0, out.stderr
    assert "| `x2` | `input` | 5.0 |" in out.stdout
    assert out.stdout.rstrip().splitlines()[-1].endswith("| 1.0 |")


def test_cli_trace_json():
    out = run("trace", f"{BABY}:babysqrt", "--at", "2", "--format", "json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["function"] == "babysqrt" and len(data["rows"]) == 53


@pytest.mark.parametrize("args, message", [
    (("trace", f"{SEEDS}:f", "--at", "2"), "takes 2 positional value(s), but --at gave 1"),
    (("trace", f"{SEEDS}:f", "--at", "2", "5", "7"), "but --at gave 3"),
    (("trace", f"{SEEDS}:nope", "--at", "2"), "has no function 'nope'"),
    (("trace", f"{SEEDS}:f", "--at", "two", "5"), "--at takes numbers"),
    (("trace", f"{SEEDS}:f", "--at", "-1", "5"), "choose a point in its domain"),
    (("trace", f"{SEEDS}:f", "--at", "2", "5", "--wrt", "z"), "not a positional parameter"),
    (("trace", "missing.py:f", "--at", "1"), "no such file"),
])
def test_cli_trace_errors_are_one_line_with_exit_2(args, message):
    out = run(*args)
    assert out.returncode == 2
    assert out.stdout == ""
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith("s2sad: error:") and message in lines[0]


def test_cli_trace_needs_at():
    out = run("trace", f"{SEEDS}:f")
    assert out.returncode == 2 and "--at" in out.stderr


# -- the plotting example -------------------------------------------------------------------
def test_plot_example_without_matplotlib(tmp_path):
    code = ("import sys, runpy; sys.modules['matplotlib'] = None; "
            f"sys.argv = ['plot_derivatives.py', '--out', {str(tmp_path / 'p.png')!r}]; "
            "runpy.run_path('examples/plot_derivatives.py', run_name='__main__')")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "pip install matplotlib" in out.stdout
    assert not (tmp_path / "p.png").exists()


def test_plot_example_with_matplotlib(tmp_path):
    pytest.importorskip("matplotlib")
    target = tmp_path / "p.png"
    out = subprocess.run([sys.executable, "examples/plot_derivatives.py", "--out",
                          str(target)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert f"saved the plot to {target}" in out.stdout
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def checked(x, y):
    a = x * y
    if a > 10.0:
        raise ValueError("too big")
    b = math.sin(a) + x
    return b * y


def test_adjoints_of_a_function_with_a_raise_in_a_branch_are_analytic():
    """The adjoint code of the branch that raises never runs: what it binds no longer
    makes the other branch reset the output's adjoint after reading it (`y_1_bar = 0.0`,
    which the table showed as the output's adjoint, 0 for 1)."""
    x, y = 0.5, 2.0
    t = s2sad.trace(checked, x, y)
    a, b = x * y, math.sin(x * y) + x
    want = {"a": y * math.cos(a), "t_1": y, "b": y, "y_1": 1.0}
    for name, adjoint in want.items():
        (row,) = t.find(name)
        assert row.adjoint == pytest.approx(adjoint, rel=1e-14), name
    assert t.gradient == pytest.approx((y * math.cos(a) * y + y, b + y * math.cos(a) * x),
                                       rel=1e-14)
    assert "y_1_bar = 0.0" not in s2sad.source(checked, wrt=(0, 1))
