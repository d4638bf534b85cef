"""The driver: the pass lists as docs/design.md describes them, every pass run alone,
callees compiled and linked from a worklist, and the package's layering."""
import ast
import dataclasses
import functools
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import s2sad
from s2sad import driver, pipeline, syntax
from s2sad.analysis.activity import definitions
from s2sad.compilation import Pass
from s2sad.frontend.source import function_from_source
from s2sad.options import Options, Variant

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = os.path.join(ROOT, "s2sad")
DESIGN = os.path.join(ROOT, "docs", "design.md")


def _tables(text):
    """{heading line before a table: [rows as lists of cells]} of the markdown `text`."""
    tables, intro, rows = {}, None, None
    for line in text.splitlines():
        if line.startswith("|"):
            if rows is None:
                rows = tables.setdefault(intro, [])
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not set("".join(cells)) <= set("-: "):
                rows.append(cells)
        else:
            rows = None
            if line.strip():
                intro = line.strip()
    return tables


def _design_table(starting):
    tables = _tables(open(DESIGN).read())
    found = [rows for intro, rows in tables.items() if intro and intro.startswith(starting)]
    assert len(found) == 1, f"design.md has no single table after a line {starting!r}"
    return found[0][1:]      # without the header row


def _module_path(fn):
    return fn.__module__.replace("s2sad.", "").replace(".", "/") + ".py"


@pytest.mark.parametrize("intro, passes", [
    ("Reverse mode, the", pipeline.REVERSE_MODE),
    ("memory:", pipeline.FUSED_GRADIENT[len(pipeline.REVERSE_MODE) - 2:]),
    ("and compiles the code with", pipeline.NUMBA_GRADIENT[len(pipeline.FUSED_GRADIENT) - 1:]),
    ("Forward mode, the", pipeline.FORWARD_MODE),
])
def test_design_page_lists_the_passes_in_order(intro, passes):
    rows = _design_table(intro)
    assert [r[0] for r in rows] == [p.name for p in passes]
    assert [r[1].strip("`") for r in rows] == [_module_path(p.run) for p in passes]


def test_every_pass_has_a_description_and_a_name_of_its_own_per_list():
    for passes in pipeline.LISTS.values():
        names = [p.name for p in passes]
        assert len(names) == len(set(names))
        assert all(p.does and p.run.__doc__ for p in passes)


SCALAR = """
def f(x, c):
    s = 0.0
    for i in range(1, 4):
        term = math.sin(x * i) / i
        if term > c:
            term = c
        s += term
    return s * x
"""

ARRAYS = """
def f(x, w):
    y = x.copy()
    for i in range(1, len(x)):
        y[i] = x[i] * x[i - 1]
    return np.sum(np.tanh(y * w) ** 2)
"""


@pytest.mark.parametrize("text", [SCALAR, ARRAYS])
def test_every_pass_can_be_the_last(text):
    fn = function_from_source(text, {"np": np})
    seen = []
    for mode, names in (("reverse", pipeline.stage_names()),
                        ("forward", pipeline.stage_names("forward"))):
        for name in names:
            code = pipeline.stage_source(fn, name, wrt=(0, 1), mode=mode)
            ast.parse(code)         # valid Python
            seen.append(code)
    # a pass that changes nothing on these functions is fine; the lists end where the
    # API's code ends (the fused gradient's last passes, header and enclose, have the
    # names of reverse mode's, whose code a stage of that name shows)
    assert seen[len(pipeline.REVERSE_MODE) - 1] == s2sad.source(fn, wrt=(0, 1))
    fused = driver.build(fn, (0, 1), options=Options(Variant.GRAD, release=True)).source
    assert pipeline.stage_source(fn, None, wrt=(0, 1)) == fused


# -- when passes run, and what they invalidate --------------------------------------------
@dataclasses.dataclass
class Launch:
    v0: float
    dt: float


class Body:
    def __init__(self, m):
        self.m = m

    def energy(self, v):
        return 0.5 * self.m * v * v


REWRITTEN = [       # (text, arg_types): functions each pass before the transform rewrites
    (SCALAR, {"x": float, "c": float}),
    (ARRAYS, {"x": np.ndarray, "w": np.ndarray}),
    ("""
def f(v, dt, drag):
    for i in range(3):
        v = v - dt * drag * v * v
    return v
""", {"v": float, "dt": float, "drag": float}),                  # hoist_invariants
    ("""
def f(x, k):
    u = k * np.ones(len(x))
    for i in range(1, len(x)):
        u[i] = u[i - 1] - k * u[i - 1] ** 2 + x[i]
    return u[0] - k * u[0] ** 2 + np.sum(u)
""", {"x": np.ndarray, "k": float}),                             # common_subexpressions
    ("""
def f(p):
    x = 0.0
    for i in range(3):
        x = x + p.dt * p.v0
    return x * p.dt
""", {"p": Launch, "p.v0": float, "p.dt": float}),               # record_fields
    ("""
def f(x, z):
    return np.sum(np.abs(z) * x)
""", {"x": np.ndarray}),                                         # complex_values
    ("""
def f(b, v):
    g = functools.partial(scaled, k=2.0)
    return b.energy(v) + g(v)
""", {"b": Body, "v": float}),                                   # resolve_calls
]


def scaled(v, k):
    return k * v


def _analyses(ctx):
    """The analyses of the function in Wengert form, as plain data to compare."""
    kinds, shapes = ctx.value_kinds, ctx.shapes
    names = sorted(kinds.kind)
    classes = {}
    for n in names:
        classes.setdefault(id(shapes.of(n)) if shapes.of(n) is not None else n, []).append(n)
    ops = sorted((syntax.unparse(s), op.form, repr(op.prim), [syntax.unparse(a) for a in op.args])
                 for s, op in ((s, ctx.ops[s]) for _, s in definitions(ctx.wengert.body)))
    return (dict(kinds.kind), dict(kinds.ndim), ctx.varied, ctx.active, ctx.useful, ops,
            sorted(classes.values()), {n: shapes.pattern_of(n) for n in names})


@pytest.mark.parametrize("text, arg_types", REWRITTEN)
def test_a_pass_leaves_the_analyses_true_unless_it_declares_it_invalidates_them(text,
                                                                               arg_types):
    fn = function_from_source(text, {"np": np, "functools": functools, "scaled": scaled})
    passes = pipeline.REVERSE_MODE
    until = [p.name for p in passes].index("reverse")
    rewritten = set()
    ctx, node = pipeline.compilation(fn, 0, arg_types, until="wengert")
    for p in passes[[q.name for q in passes].index("wengert") + 1:until]:
        before = _analyses(ctx)
        ctx.rewrote = False
        node = p.run(node, ctx) if p.when is None or p.when(ctx) else node
        if ctx.rewrote:
            assert p.invalidates, p.name
            rewritten.add(p.name)
            ctx.changed()
            continue
        kept = _analyses(ctx)
        assert kept == before
        ctx.changed()
        assert _analyses(ctx) == kept, f"{p.name} left the analyses stale"
    assert rewritten <= {p.name for p in passes if p.invalidates}


def test_a_pass_that_rewrites_without_declaring_it_is_an_internal_error():
    def rewrites(fn, ctx):
        """Rewrites and says so, without declaring it invalidates the analyses."""
        ctx.rewrote = True
        return fn
    fn = function_from_source(SCALAR)
    passes = pipeline.FRONT + [Pass("rewrites", rewrites, "says it rewrote the function")]
    with pytest.raises(s2sad.InternalError, match="the pass rewrites rewrote"):
        pipeline.compilation(fn, passes=passes)
    declared = passes[:-1] + [Pass("rewrites", rewrites, "rewrites", invalidates=True)]
    ctx, _ = pipeline.compilation(fn, passes=declared)
    assert not ctx._analyses


def test_a_pass_runs_when_its_test_of_the_context_holds():
    ran = []

    def counted(fn, ctx):
        """Counts its runs."""
        ran.append(ctx.options.release)
        return fn
    fn = function_from_source(SCALAR)
    passes = pipeline.FRONT + [Pass("counted", counted, "counts", when=pipeline.release)]
    for release in (False, True):
        pipeline.compilation(fn, options=Options(Variant.GRAD, release=release),
                             passes=passes)
    assert ran == [True]


def test_an_unknown_pass_is_a_clear_error():
    fn = function_from_source(SCALAR)
    with pytest.raises(s2sad.S2SADError, match="no pass is called 'spell'"):
        pipeline.stage_source(fn, "spell")


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "s2sad", *args], capture_output=True,
                          text=True, cwd=ROOT)


def test_cli_lists_the_passes_and_stops_after_any():
    listing = _cli("show", "--stage", "list")
    assert listing.returncode == 0, listing.stderr
    for passes in pipeline.LISTS.values():
        for p in passes:
            assert re.search(rf"^  {p.name} +\S", listing.stdout, re.M), p.name
    target = "examples/babysqrt.py:babysqrt"
    fused = _cli("show", target, "--stage", "reuse_buffers")
    assert fused.returncode == 0 and fused.stdout.startswith("def babysqrt_grad(x):")
    wengert = _cli("show", target, "--stage", "wengert")
    assert wengert.stdout.startswith("def babysqrt(x):") and "_bar" not in wengert.stdout
    wrong = _cli("show", target, "--mode", "forward", "--stage", "reuse_buffers")
    assert wrong.returncode == 2 and "not a pass of forward mode" in wrong.stderr
    missing = _cli("show", "--stage", "optimize")
    assert missing.returncode == 2 and "FILE.py:FUNC" in missing.stderr


# -- callees -----------------------------------------------------------------------------
EVEN_ODD = """
def even(x, n):
    if n == 0:
        return math.cos(x)
    return odd(x * 1.1, n - 1) * x


def odd(x, n):
    if n == 0:
        return math.sin(x)
    return even(x + 0.3, n - 1) + x * x
"""


def _central(f, x, *rest, h=1e-6):
    return (f(x + h, *rest) - f(x - h, *rest)) / (2 * h)


def test_mutual_recursion_compiles_from_the_worklist_and_links_every_callee():
    even = function_from_source(EVEN_ODD).__globals__["even"]
    for n in range(6):
        assert s2sad.grad(even)(0.4, n) == pytest.approx(_central(even, 0.4, n), rel=1e-7)
    # forward mode and forward over reverse call the same way
    y, y_dot = s2sad.jvp(even, (0.4, 5), (1.0, None))
    assert y_dot == pytest.approx(_central(even, 0.4, 5), rel=1e-7)
    second = (_central(even, 0.4 + 1e-4, 5) - _central(even, 0.4 - 1e-4, 5)) / 2e-4
    assert s2sad.hessian(even)(0.4, 5) == pytest.approx(second, rel=1e-4)
    # the code of every derivative built binds each derivative it calls
    d = driver.build(even, 0)
    for name, callee in d.callees:
        cell = d.fn.__closure__[d.fn.__code__.co_freevars.index(name)]
        assert callable(cell.cell_contents), name


def test_callees_are_cached_under_their_own_key():
    odd = function_from_source(EVEN_ODD)
    even = odd.__globals__["even"]
    s2sad.grad(even)(0.4, 3)
    from s2sad import cache
    assert cache._cache.get(odd), "odd's vjp was compiled as a callee and cached"


# -- layering ----------------------------------------------------------------------------
def _layers():
    """{module path under s2sad/: layer index, 0 for the top}, from the table of layers
    in docs/design.md (a name without a folder is in the folder of the file named
    before it; `rules/` is the whole package)."""
    rows = _design_table("Imports go down only")
    out = {}
    for depth, row in enumerate(rows):
        folder = ""
        for token in re.findall(r"`([\w/]+(?:\.py)?/?)`", row[1]):
            if token.endswith("/"):
                folder = ""         # a whole package
            elif "/" in token:
                folder = token[:token.rindex("/") + 1]
            else:
                token = folder + token
            out[token] = depth
    return out


def _modules():
    for folder, _, files in os.walk(PACKAGE):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                yield os.path.relpath(path, PACKAGE).replace(os.sep, "/"), path


def _imports(rel, path):
    """(imported module path, line, inside a function) of the package's own imports."""
    tree = ast.parse(open(path).read())
    package = rel.split("/")[:-1]
    functions = {id(n) for f in ast.walk(tree)
                 if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                 for n in ast.walk(f) if n is not f}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[:len(package) - node.level + 1]
            parts = base + (node.module.split(".") if node.module else [])
            targets = [parts + [a.name] for a in node.names] if not node.module else [parts]
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            mod = node.module if isinstance(node, ast.ImportFrom) else None
            names = [mod] if mod else [a.name for a in node.names]
            targets = [n.split(".")[1:] for n in names if n.split(".")[0] == "s2sad"]
        else:
            continue
        for parts in targets:
            yield "/".join(parts), node.lineno, id(node) in functions


def _resolve(parts):
    for candidate in (parts + ".py", parts + "/__init__.py"):
        if os.path.exists(os.path.join(PACKAGE, candidate)):
            return candidate
    return None


def _layer(layers, rel):
    if rel in layers:
        return layers[rel]
    folder = rel.split("/")[0] + "/"
    return layers.get(folder)


def test_imports_go_down_the_layers_and_never_in_a_circle():
    layers = _layers()
    graph, upward, unplaced = {}, [], []
    for rel, path in _modules():
        if rel.endswith("__init__.py") or rel == "__main__.py":
            continue
        if _layer(layers, rel) is None:
            unplaced.append(rel)
            continue
        for target, line, _ in _imports(rel, path):
            target = _resolve(target)
            if target is None or target.endswith("__init__.py"):
                continue
            if _layer(layers, target) is None:
                unplaced.append(target)
                continue
            graph.setdefault(rel, set()).add(target)
            if _layer(layers, target) < _layer(layers, rel):
                upward.append(f"{rel}:{line} imports {target}, a higher layer")
    assert not unplaced, f"modules missing from design.md's table of layers: {unplaced}"
    assert not upward
    state = {}

    def visit(node, trail):
        state[node] = "open"
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                raise AssertionError("import circle: " + " -> ".join(trail + [node, nxt]))
            if nxt not in state:
                visit(nxt, trail + [node])
        state[node] = "done"
    for node in sorted(graph):
        if node not in state:
            visit(node, [])


def test_few_imports_inside_functions_and_no_module_over_900_lines():
    inside = [f"{rel}:{line}" for rel, path in _modules()
              for _, line, nested in _imports(rel, path) if nested]
    assert len(inside) <= 5, inside
    for rel, path in _modules():
        with open(path) as f:
            assert sum(1 for _ in f) <= 900, rel

