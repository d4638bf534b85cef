"""The header of reverse-mode code tells the truth: what it says the pullback reads of the
forward pass is what the code emitted reads (#35).

`claimed` reads the header; `read` reads the code, with Python's own parser and a walk
of its own (nothing of s2sad): of a vjp, the names its pullback closure reads before
binding them that the forward pass (or a parameter) binds; of a fused gradient, the
same of its reverse sweep, the statements from the first one that assigns an adjoint
(`*_bar`) or follows a `# grad of:` comment, without the seed's reading of the value
and the value `f_value_and_grad` returns. A loop's tape: the values it records whose
names the reversed loop reads (the numba backend's arrays: the values written to a
column that the reversed loop reads back into a name it reads). Checked over the golden
files, the functions the docs print, and a corpus of functions in every form.
"""
import ast
import glob
import io
import os
import re
import tokenize
import warnings

import numpy as np
import pytest

import s2sad
from s2sad import api, compilation, driver, pipeline
from s2sad import backends
from s2sad.options import Options, Variant

from corpus_scalar import CORPUS
from example_functions import EXAMPLES
from golden import functions as golden_functions, functions_numpy as golden_numpy

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# -- the checker ---------------------------------------------------------------------------
def claimed(text, fn):
    """(names, [per-iteration name sets]) the header of `fn` (an ast.FunctionDef of
    `text`) says the pullback reads; None without a header."""
    lines = text.splitlines()[fn.lineno:fn.end_lineno]
    joined, inside = [], False
    for line in lines:
        s = line.strip()
        inside = inside or s.startswith("# reverse mode of")
        if not inside:
            continue
        if not s.startswith("#"):
            break
        if s.startswith("#     ") and joined:
            joined[-1] += " " + s[1:].strip()
        else:
            joined.append(s[1:].strip())
    said = next((line for line in joined if line.startswith("the pullback reads")), None)
    if said is None:
        return None
    if said.startswith("the pullback reads nothing"):
        return set(), []
    parts = said[len("the pullback reads: "):].split("; ")
    names = set()
    if " of " not in parts[0]:
        names = {n.strip() for n in parts[0].split(",")}
        parts = parts[1:]
    loops = []
    for part in parts:
        found = re.fullmatch(r"(.*) of each iteration of the loop at line \d+", part)
        if found:
            listed = found.group(1).replace("the shapes of ", "").replace(" and ", ", ")
            loops.append({n.strip() for n in listed.split(",")})
    return names, loops


def read(text, fn):
    """(names, [per-iteration name sets]) the code of `fn` reads of its forward pass."""
    params = [a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs]
    if fn.name.endswith("_adjoint"):
        params = params[1:]                 # (the seed)
    body = [s for s in fn.body if not _is_guard(s)]
    pullback = next((s for s in body if isinstance(s, ast.FunctionDef)), None)
    if pullback is not None:
        forward = [s for s in body if s is not pullback]
        sweep, bound = pullback.body, {a.arg for a in pullback.args.args}
    else:
        after_comment = _lines_after_grad_of(text)
        at = next((i for i, s in enumerate(body) if s.lineno in after_comment or any(
            n.endswith("_bar") for n in _stored(s))), len(body))
        forward, sweep, bound = body[:at], list(body[at:]), set()
        first = sweep[0] if sweep else None
        if isinstance(first, ast.Assign) and "_s2s_seed" in _loaded(first.value):
            sweep[0] = ast.Assign(targets=first.targets, value=ast.Constant(1.0))
        last = sweep[-1] if sweep else None
        if (fn.name.endswith("_value_and_grad") and isinstance(last, ast.Return)
                and isinstance(last.value, ast.Tuple)):
            sweep[-1] = ast.Return(value=last.value.elts[1])
    made = set(params).union(*[_stored(s) for s in forward])
    names = {n for n in _exposed(sweep, bound) & made if not n.startswith("_s2s_")}
    return names, _per_iteration(fn)


def _is_guard(s):
    return (isinstance(s, ast.If) and len(s.body) == 1 and isinstance(s.body[0], ast.Return)
            and "_s2s_respecialize" in _loaded(s.body[0]))


def _lines_after_grad_of(text):
    """The numbers of the lines of code that follow a `# grad of:` comment."""
    out, pending = set(), False
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.COMMENT:
            pending = pending or tok.string.startswith("# grad of:")
        elif pending and tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT,
                                          tokenize.DEDENT):
            out.add(tok.start[0])
            pending = False
    return out


def _loaded(node):
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)
            and isinstance(n.ctx, ast.Load)}


def _stored(node):
    return ({n.id for n in ast.walk(node) if isinstance(n, ast.Name)
             and isinstance(n.ctx, ast.Store)}
            | {n.name for n in ast.walk(node) if isinstance(n, ast.FunctionDef)})


def _exposed(stmts, bound):
    """The names `stmts` may read before binding them; `bound` (updated): the names bound
    on every path so far."""
    out = set()
    for s in stmts:
        if isinstance(s, ast.If):
            out |= _loaded(s.test) - bound
            paths = [set(bound), set(bound)]
            out |= _exposed(s.body, paths[0]) | _exposed(s.orelse, paths[1])
            bound |= paths[0] & paths[1]
        elif isinstance(s, (ast.For, ast.While)):
            out |= _loaded(s.iter if isinstance(s, ast.For) else s.test) - bound
            inner = set(bound) | (_stored(s.target) if isinstance(s, ast.For) else set())
            out |= _exposed(s.body + s.orelse, inner)
        elif isinstance(s, ast.With):
            out |= set().union(*[_loaded(i) for i in s.items]) - bound
            out |= _exposed(s.body, bound)
        elif isinstance(s, ast.Try):
            out |= _exposed(s.body + s.orelse + s.finalbody, bound)
        elif isinstance(s, ast.AugAssign):
            out |= (_loaded(s) | _stored(s.target)) - bound
        else:
            value = s.value if isinstance(s, ast.Assign) else s
            out |= (_loaded(value) | (set().union(*[_loaded(t) for t in s.targets])
                                      if isinstance(s, ast.Assign) else set())) - bound
            bound |= _stored(s)
    return out


def _per_iteration(fn):
    """[names]: of each tape of `fn`, the values it records that its reversed loop reads."""
    out = []
    for loop in ast.walk(fn):
        if not isinstance(loop, ast.For):
            continue
        it = loop.iter
        if (isinstance(it, ast.Call) and getattr(it.func, "id", None) == "reversed"
                and isinstance(it.args[0], ast.Name) and it.args[0].id.startswith("_s2s_tape")):
            pushed = [c.args[0] for c in ast.walk(fn) if isinstance(c, ast.Call)
                      and isinstance(c.func, ast.Attribute) and c.func.attr == "append"
                      and getattr(c.func.value, "id", None) == it.args[0].id]
            items = pushed[0].elts if isinstance(pushed[0], ast.Tuple) else [pushed[0]]
            targets = loop.target.elts if isinstance(loop.target, ast.Tuple) else [loop.target]
            body_reads = set().union(*[_loaded(s) for s in loop.body])
            out.append({_value_name(v) for v, t in zip(items, targets) if t.id in body_reads})
        elif isinstance(loop.target, ast.Name) and loop.target.id.startswith("_s2s_row"):
            columns = {}        # (tape, column): the name written there
            for s in ast.walk(fn):
                if (isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Subscript)
                        and getattr(s.targets[0].value, "id", "").startswith("_s2s_tape")):
                    columns[_cell(s.targets[0])] = _value_name(s.value)
            # (the numba backend's list of the arrays of each iteration: one tuple a row)
            appended = {c.func.value.id: c.args[0] for c in ast.walk(fn)
                        if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute)
                        and c.func.attr == "append"
                        and getattr(c.func.value, "id", "").startswith("_s2s_tape")}
            names = set()
            for k, s in enumerate(loop.body):
                later = set().union(*[_loaded(t) for t in loop.body[k + 1:]])
                if (isinstance(s, ast.Assign) and isinstance(s.value, ast.Subscript)
                        and getattr(s.value.value, "id", None) in appended):
                    item = appended[s.value.value.id]
                    items = item.elts if isinstance(item, ast.Tuple) else [item]
                    targets = (s.targets[0].elts if isinstance(s.targets[0], ast.Tuple)
                               else [s.targets[0]])
                    names |= {_value_name(v) for v, t in zip(items, targets) if t.id in later}
                elif (isinstance(s, ast.Assign) and isinstance(s.value, ast.Subscript)
                        and _cell(s.value) in columns and s.targets[0].id in later):
                    names.add(columns[_cell(s.value)])
                elif (isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name)
                        and loop.target.id in _loaded(s.value) and s.targets[0].id in later
                        and not isinstance(s.value, ast.Subscript)):
                    names.add(s.targets[0].id)      # (the loop's index, from the row)
            out.append(names)
    return [names for names in out if names]


def _cell(subscript):
    index = subscript.slice
    column = index.elts[1].value if isinstance(index, ast.Tuple) else 0
    return subscript.value.id, column


def _value_name(v):
    return v.args[0].id if isinstance(v, ast.Call) else ast.unparse(v)


def problems(text):
    """What the headers in `text` (generated source) say that its code does not do."""
    out = []
    for fn in ast.parse(text).body:
        if not isinstance(fn, ast.FunctionDef):
            continue
        said = claimed(text, fn)
        if said is None:
            continue
        names, loops = read(text, fn)
        if said[0] != names:
            out.append(f"{fn.name}: the header says the pullback reads {sorted(said[0])}, "
                       f"it reads {sorted(names)}")
        if sorted(map(sorted, said[1])) != sorted(map(sorted, loops)):
            out.append(f"{fn.name}: the header says the loops record {said[1]}, "
                       f"their reversed loops read {loops}")
    return out


# -- the checker finds what it looks for ---------------------------------------------------
VJP = '''def f_vjp(x, w):
    # reverse mode of f() with respect to x
    # the pullback reads: t, x; u of each iteration of the loop at line 3
    # rules: np.sin, *
    t = np.sin(x)
    u = t
    _s2s_tape = []
    for i in range(3):
        _s2s_tape.append((u, _s2s_like(t)))
        u = u * w
    y = np.sum(u)

    def f_pullback(y_bar):
        u_bar = y_bar
        for u, t_1 in reversed(_s2s_tape):
            u_bar = u_bar * u
        x_bar = u_bar * np.cos(x) * t
        return x_bar
    return (y, f_pullback)
'''


def test_the_checker_finds_a_name_said_but_not_read_and_one_read_but_not_said():
    assert problems(VJP) == []
    assert problems(VJP.replace("reads: t, x;", "reads: t, w, x;")) == [
        "f_vjp: the header says the pullback reads ['t', 'w', 'x'], it reads ['t', 'x']"]
    assert problems(VJP.replace("reads: t, x;", "reads: x;")) == [
        "f_vjp: the header says the pullback reads ['x'], it reads ['t', 'x']"]
    # a value the tape records that the reversed loop does not read
    assert len(problems(VJP.replace("reads: t, x; u of", "reads: t, x; u and the shapes "
                                    "of t of"))) == 1
    # a fused gradient: what the forward pass deletes is not read after it
    fused = ('def f_grad(x):\n'
             '    # reverse mode of f() with respect to x\n'
             '    # the pullback reads: t, x\n'
             '    t = np.sin(x)\n    t_1 = t * 2.0\n    del t\n'
             '    # grad of: return np.sum(np.sin(x) * 2.0)\n'
             '    x_bar = np.cos(x) * 2.0\n    return x_bar\n')
    assert problems(fused) == [
        "f_grad: the header says the pullback reads ['t', 'x'], it reads ['x']"]


# -- golden files, docs --------------------------------------------------------------------
GOLDEN = sorted(p for p in glob.glob(os.path.join(ROOT, "tests", "golden", "*.txt"))
                if not os.path.basename(p).startswith("forward."))


@pytest.mark.parametrize("path", GOLDEN, ids=os.path.basename)
def test_golden_headers_are_true(path):
    with open(path) as f:
        assert problems(f.read()) == []


def printed_functions(path):
    """The generated functions with a header that `path` (markdown) prints, as text."""
    lines = open(path).read().replace("<BLANKLINE>", "").splitlines()
    out = []
    for k, line in enumerate(lines):
        found = re.match(r"(\s*)def \w+\(", line)
        if not (found and any("# reverse mode of" in more for more in lines[k + 1:k + 14])):
            continue        # (a header, after a guard of up to 12 lines)
        indent = len(found.group(1))
        block = [line[indent:]]
        for more in lines[k + 1:]:
            if more.strip() and (len(more) - len(more.lstrip()) <= indent
                                 or more.lstrip().startswith((">>>", "```"))):
                break
            block.append(more[indent:])
        text = "\n".join(block).rstrip() + "\n"
        try:
            ast.parse(text)
        except SyntaxError:
            continue        # (a header printed alone)
        out.append(text)
    return out


DOCS = [(os.path.relpath(path, ROOT), k, text)
        for path in sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))
        + [os.path.join(ROOT, "README.md")]
        for k, text in enumerate(printed_functions(path))]


def test_the_docs_print_derivatives_with_headers():
    assert len(DOCS) >= 25


@pytest.mark.parametrize("where, k, text", DOCS, ids=[f"{w}-{k}" for w, k, _ in DOCS])
def test_headers_the_docs_print_are_true(where, k, text):
    assert problems(text) == []


# -- a corpus ------------------------------------------------------------------------------
def _forms(f, wrt, point):
    """The reverse-mode code of `f` in each form: the vjp for arguments like `point` and
    for the kinds s2sad.source assumes, and the fused gradients grad and value_and_grad
    run."""
    arg_types = compilation.arg_types_of(f, point)
    yield api._with_lifted(driver.build(f, wrt, arg_types, Options(Variant.VJP)), "reverse")
    yield s2sad.source(f, wrt=wrt)
    for make in (s2sad.grad, s2sad.value_and_grad):
        derivative = make(f, wrt=wrt)
        derivative(*point)
        yield derivative.source


SCALAR = [(case.f, case.wrt, case.points[0]) for case in CORPUS if not case.kwargs]


@pytest.mark.parametrize("f, wrt, point", SCALAR, ids=[c[0].__name__ for c in SCALAR])
def test_headers_of_the_scalar_corpus_are_true(f, wrt, point):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", s2sad.UnconnectedInputWarning)
        for text in _forms(f, wrt, point):
            assert problems(text) == [], text


RNG = np.random.default_rng(3)
ARRAYS = [
    (golden_numpy.logistic_loss, 0, (RNG.normal(size=3), RNG.normal(size=(8, 3)),
                                     (RNG.random(8) > 0.5) * 1.0)),
    (golden_numpy.mlp_loss, (0, 1, 2, 3),
     (RNG.normal(size=(4, 5)), RNG.normal(size=5), RNG.normal(size=(5, 3)),
      RNG.normal(size=3), RNG.normal(size=(6, 4)), np.eye(3)[RNG.integers(0, 3, 6)])),
    (golden_numpy.relax, (0, 1), (RNG.normal(size=5), RNG.uniform(2.0, 3.0, 5))),
    (golden_numpy.heat, (0, 1), (RNG.normal(size=6), 0.2)),
    (golden_numpy.smooth_in_place, 0, (RNG.normal(size=6),)),
    (golden_numpy.append_loop, 0, (0.7,)),
    (golden_functions.projectile, (0, 1), (20.0, 0.8)),
    (golden_functions.lambda_loop, 0, (0.7,)),
    (golden_functions.nested_closure, (0, 1), (2.0, 5.0)),
]


@pytest.mark.parametrize("f, wrt, point", ARRAYS, ids=[c[0].__name__ for c in ARRAYS])
def test_headers_of_numpy_functions_are_true(f, wrt, point):
    for text in _forms(f, wrt, point):
        assert problems(text) == [], text


@pytest.mark.parametrize("name, f", EXAMPLES, ids=[n for n, _ in EXAMPLES])
def test_headers_of_the_examples_are_true(name, f):
    # for the arguments s2sad.source assumes: the vjp, the fused gradient, and (for
    # numbers) the numba backend's gradient
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for stage, backend in (("enclose", backends.PYTHON), (None, backends.PYTHON),
                               (None, backends.NUMBA)):
            try:
                text = pipeline.stage_source(f, stage, backend=backend)
            except s2sad.S2SADError:
                continue        # (not differentiable so, or not by Numba)
            assert problems(text) == [], text


NUMBA = [(golden_functions.lotka_volterra, (0, 1, 2, 3)), (golden_functions.projectile, (0, 1)),
         (golden_functions.while_loop, 0), (golden_functions.nested_for, 0),
         (golden_functions.break_loop, 0)]


@pytest.mark.parametrize("f, wrt", NUMBA, ids=[f.__name__ for f, _ in NUMBA])
def test_headers_of_the_numba_backend_are_true(f, wrt):
    # (printing the code does not need Numba)
    text = pipeline.stage_source(f, None, wrt, backend=backends.NUMBA)
    assert problems(text) == [], text
    assert f is not golden_functions.lotka_volterra or "_s2s_row" in text   # (the arrays)


def test_a_fused_header_names_what_the_reverse_sweep_reads_not_what_was_deleted():
    # the case (examples/logistic_regression.py): the forward pass deletes `t_1`
    # and `t_8` before the reverse sweep, which reads `t_10` only for a shape
    loss = dict(EXAMPLES)["logistic_regression.loss"]
    text = pipeline.stage_source(loss, None)
    said = claimed(text, ast.parse(text).body[0])[0]
    assert "del t_1\n" in text and "t_1" not in said and "t_8" not in said
    assert "_s2s_unbroadcast_product(t_11_bar, t_7, t_10)" in text and "t_10" in said


class _Particle:
    def __init__(self, pos, vel):
        self.pos, self.vel = pos, vel

    def step(self, dt):
        self.pos = self.pos + dt * self.vel


def _nudge(q, dt):
    q.vel = q.vel * dt
    return q.pos


def _moved(x):
    p = _Particle(x, 2.0)
    for _ in range(3):
        p.step(0.1)
    r = _nudge(p, 0.5)
    return p.pos ** 2 + r


def test_the_rules_line_names_a_function_that_changes_its_arguments_as_it_is_called():
    # (s2sad differentiates the version of step and of _nudge that returns what it changes,
    # bound under a name of its own, `step_1`: the rules line says what the code calls)
    g = s2sad.grad(_moved)
    rules = next(line.strip() for line in g.source.splitlines() if "# rules:" in line)
    assert rules == "# rules: _Particle, .step(), [], _nudge, .pos, **, +", rules
    # p.pos is x + 0.6, r is x + 0.6 too (pos read before vel changes): 2 (x + 0.6) + 1
    assert g(1.5) == pytest.approx(2 * (1.5 + 0.6) + 1, rel=1e-14)
