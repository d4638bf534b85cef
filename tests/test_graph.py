"""s2sad.graph: computational graphs as Graphviz DOT, and `s2sad graph`."""
import math
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

from s2sad import graph
from s2sad.errors import S2SADError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SEEDS = os.path.join("examples", "seed_functions.py")
BABY = os.path.join("examples", "babysqrt.py")
DOT = shutil.which("dot")
needs_dot = pytest.mark.skipif(DOT is None, reason="Graphviz's dot is not installed")


def f(x1, x2):
    return math.log(x1) + x1 * x2 - math.sin(x2)


def babysqrt(x):
    t = (1 + x) / 2
    for i in range(10):
        t = (t + x / t) / 2
    return t


def clipped(x, c):
    s = 0.0
    for i in range(1, 4):
        term = math.sin(x * i) / i
        if term > c:
            term = c
        s += term
    return s * x


def early(x):
    s = x
    for i in range(5):
        if s > 10:
            break
        s = s * x
    return s


def halve(x):
    while x > 1.0:
        x = x / 2
    return x


def nested(x):
    s = 0.0
    for i in range(2):
        for j in range(3):
            s += x * j + i
    return s


def first_big(x):
    for i in range(5):
        for j in range(5):
            if i * j * x > 3:
                return x * i + j
    return x


def arrays(w, x):
    a = np.zeros(3)
    a[0] = w @ x
    return np.tanh(a).sum()


FUNCTIONS = [f, babysqrt, clipped, early, halve, nested, first_big, arrays]

NODE = re.compile(r"^\s*(n\d+) \[label=")
EDGE = re.compile(r"^\s*(n\d+) -> (n\d+) \[label=\"([^\"]*)\"")
QUOTED = re.compile(r'"(?:[^"\\]|\\.)*"')


def parse(text):
    """Check that `text` is well-formed DOT of the shape s2sad writes; return its nodes,
    edges and cluster labels."""
    assert text.startswith("digraph ") and text.endswith("}\n")
    bare = QUOTED.sub('""', text)
    depth = 0
    for ch in bare:
        depth += {"{": 1, "}": -1}.get(ch, 0)
        assert depth >= 0
    assert depth == 0, "unbalanced braces"
    assert bare.count("[") == bare.count("]")
    nodes, edges, clusters = set(), [], []
    for line in text.splitlines():
        m = NODE.match(line)
        if m:
            assert m.group(1) not in nodes, f"node {m.group(1)} declared twice"
            nodes.add(m.group(1))
        m = EDGE.match(line)
        if m:
            edges.append(m.groups())
        if line.strip().startswith("subgraph cluster_"):
            label = next(ln for ln in text.splitlines()[text.splitlines().index(line) + 1:]
                         if "label=" in ln)
            clusters.append(QUOTED.search(label).group(0)[1:-1])
    for a, b, _ in edges:
        assert a in nodes and b in nodes, f"edge {a} -> {b} names an undeclared node"
    return nodes, edges, clusters


def labels(text):
    return dict(re.findall(r"^\s*(n\d+) \[label=\"((?:[^\"\\]|\\.)*)\"", text, re.M))


@pytest.mark.parametrize("fn", FUNCTIONS, ids=lambda fn: fn.__name__)
@pytest.mark.parametrize("pullback", [False, True], ids=["wengert", "pullback"])
def test_dot_is_well_formed(fn, pullback):
    text = graph.dot(fn, pullback=pullback)
    nodes, edges, _ = parse(text)
    assert nodes and edges


def test_straight_line_graph():
    text = graph.dot(f)
    nodes, edges, clusters = parse(text)
    names = labels(text)
    assert sorted(names.values()) == sorted([
        "x1", "x2", "t = math.log(x1)", "t_1 = x1 * x2", "t_2 = t + t_1",
        "t_3 = math.sin(x2)", "y = t_2 - t_3", "return y"])
    by_label = {v: k for k, v in names.items()}
    assert (by_label["x1"], by_label["t_1 = x1 * x2"], "x1") in edges
    assert (by_label["y = t_2 - t_3"], by_label["return y"], "y") in edges
    assert len(edges) == 9 and not clusters


def test_loop_is_a_cluster_with_a_dashed_back_edge():
    text = graph.dot(babysqrt)
    _, edges, clusters = parse(text)
    assert clusters == ["for i in range(10)"]
    by_label = {v: k for k, v in labels(text).items()}
    carried, reader = by_label["t = t_4"], by_label["t_2 = x / t"]
    line = next(ln for ln in text.splitlines() if f"{carried} -> {reader} " in ln)
    assert "style=dashed" in line
    # both the value before the loop and the carried one reach the result
    assert (by_label["t = t_1 / 2"], by_label["return t"], "t") in edges
    assert (carried, by_label["return t"], "t") in edges


def test_branches_are_clusters():
    text = graph.dot(clipped)
    _, _, clusters = parse(text)
    assert clusters == ["for i in range(1, 4)", "if t_2", "then", "else"]
    assert '[label="if t_2", shape=diamond]' in text


def test_break_and_while():
    assert 'label="break"' in graph.dot(early)
    _, _, clusters = parse(graph.dot(halve))
    assert clusters == ["while x > 1.0"]


def test_pullback_graph_reads_the_forward_pass():
    text = graph.dot(f, pullback=True)
    parse(text)
    assert text.startswith('digraph "f_pullback"')
    assert '[label="y_bar", shape=ellipse]' in text
    assert '[label="x1", shape=ellipse, style=dashed]' in text   # from the forward pass
    assert "return (x1_bar, x2_bar)" in text
    only_x2 = graph.dot(f, wrt="x2", pullback=True)
    assert "return x2_bar" in only_x2 and "x1_bar" not in only_x2


def test_labels_are_escaped():
    assert graph._q('a "b" \\ c\nd') == '"a \\"b\\" \\\\ c\\nd"'


def test_render_dot_text(tmp_path):
    out = tmp_path / "f.dot"
    graph.render(graph.dot(f), str(out))
    assert out.read_text() == graph.dot(f)


def test_render_unknown_format(tmp_path):
    with pytest.raises(S2SADError, match="use a file ending in"):
        graph.render(graph.dot(f), str(tmp_path / "f.jpg"))


def test_render_without_dot(tmp_path, monkeypatch):
    monkeypatch.setattr(graph.shutil, "which", lambda name: None)
    with pytest.raises(S2SADError, match="needs Graphviz's `dot` program"):
        graph.render(graph.dot(f), str(tmp_path / "f.svg"))
    assert not (tmp_path / "f.svg").exists()


@needs_dot
@pytest.mark.parametrize("fn", FUNCTIONS, ids=lambda fn: fn.__name__)
def test_dot_renders(fn, tmp_path):
    for pullback in (False, True):
        out = tmp_path / f"g{int(pullback)}.svg"
        graph.render(graph.dot(fn, pullback=pullback), str(out))
        assert "<svg" in out.read_text()


@needs_dot
def test_render_png(tmp_path):
    out = tmp_path / "f.png"
    graph.render(graph.dot(babysqrt), str(out))
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# -- the command line -----------------------------------------------------------------------
def run(*args):
    return subprocess.run([sys.executable, "-m", "s2sad", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


def test_cli_graph_prints_dot():
    out = run("graph", f"{BABY}:babysqrt")
    assert out.returncode == 0, out.stderr
    parse(out.stdout)
    assert 'subgraph cluster_0' in out.stdout


def test_cli_graph_pullback_to_file(tmp_path):
    target = tmp_path / "pb.dot"
    out = run("graph", f"{SEEDS}:f", "--pullback", "--wrt", "x1,x2", "-o", str(target))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"wrote {target}"
    parse(target.read_text())


@needs_dot
def test_cli_graph_svg(tmp_path):
    target = tmp_path / "f.svg"
    out = run("graph", f"{SEEDS}:f", "-o", str(target))
    assert out.returncode == 0, out.stderr
    assert "<svg" in target.read_text()


def test_cli_graph_svg_without_dot(tmp_path):
    # a PATH without dot: the one-line error, exit 2, nothing written
    env = dict(os.environ, PATH=str(tmp_path))
    target = tmp_path / "f.svg"
    out = subprocess.run([sys.executable, "-m", "s2sad", "graph", f"{SEEDS}:f", "-o",
                          str(target)], cwd=ROOT, capture_output=True, text=True,
                         timeout=120, env=env)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "needs Graphviz's `dot` program" in lines[0]
    assert not target.exists()


@pytest.mark.parametrize("args, message", [
    (("graph", f"{SEEDS}:nope"), "has no function 'nope'"),
    (("graph", "missing.py:f"), "no such file"),
    (("graph", f"{SEEDS}:f", "-o", "out.jpg"), "use a file ending in"),
    (("graph", f"{SEEDS}:f", "--wrt", "x1"), "--wrt only matters with --pullback"),
    (("graph", f"{SEEDS}:f", "--pullback", "--wrt", "z"), "not a positional parameter"),
    (("graph", "babysqrt"), "expected FILE.py:FUNC"),
])
def test_cli_graph_errors_are_one_line_with_exit_2(args, message):
    out = run(*args)
    assert out.returncode == 2
    assert out.stdout == ""
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith("s2sad: error:") and message in lines[0]
    assert "Traceback" not in out.stderr
