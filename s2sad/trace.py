"""Show the work: the evaluation trace of one call, with values, tangents and adjoints.

`s2sad.trace(f, *args)` runs `f` once in Wengert form (one primitive operation per
statement), and once through each of its derivatives, and returns a `Trace`: one row
per Wengert variable, in execution order, loops unrolled (the `iteration` column
counts from 0; nested loops show one count per loop), with the operation that defined
the variable, its value, its tangent (forward mode: its derivative along the input
tangents, by default 1 for the first differentiated input and 0 for the others) and its
adjoint (reverse mode: the derivative of the output with respect to the variable,
seeded with 1.0 at the output).

>>> import math, s2sad
>>> def f(x1, x2):
...     return math.log(x1) + x1 * x2 - math.sin(x2)
>>> print(s2sad.trace(f, 2.0, 5.0))
f(x1=2.0, x2=5.0) = 11.65207146
reverse mode: adjoint = d y / d variable, seeded with y_bar = 1.0
forward mode: tangent = derivative along x1_dot = 1.0, x2_dot = 0.0
variable  operation           value          tangent  adjoint
--------  ------------------  -------------  -------  -----------
x1        input               2.0            1.0      5.5
x2        input               5.0            0.0      1.716337815
t         t = math.log(x1)    0.6931471806   0.5      1.0
t_1       t_1 = x1 * x2       10.0           5.0      1.0
t_2       t_2 = t + t_1       10.69314718    5.5      1.0
t_3       t_3 = math.sin(x2)  -0.9589242747  0.0      -1.0
y         y = t_2 - t_3       11.65207146    5.5      1.0

How it works: the Wengert form is instrumented (a call recording name, value and loop
counters after every assignment) and compiled with the user's globals. Adjoints come
from the unoptimized pullback (the `reverse` stage, which still names the adjoint of
every variable), instrumented the same way: the adjoint of a variable is the last value
its `_bar` name takes in the matching reversed iteration; the adjoint of a loop-carried
variable assigned at the end of an iteration is its `_bar` value when the reversed
iteration starts; the adjoint of an input is what the pullback returns. A blank adjoint
means s2sad computes none: the value does not depend on the differentiated inputs, or
does not reach the output (a symbolic zero). Tangents come from the forward-mode
`f_jvp`, instrumented the same way (and its output tangent is checked against
`s2sad.jvp`). `f` runs once per pass, so it must be deterministic.
"""
import copy
import html
import inspect
import itertools
import json
import math
import numbers

import gast
import numpy as np

from . import forward_api, pipeline
from . import emit, syntax
from .compilation import kinds_of, wrt_names
from .errors import S2SADError
from .frontend import source
from .rules import runtime

__all__ = ["trace", "Trace", "Row"]

_filenames = itertools.count()


class Row:
    """One execution of one Wengert assignment.

    `variable` and `operation` (source form); `value`, `tangent` and `adjoint` (copies
    of the objects; a tangent or adjoint is None where s2sad computes none); `kind`
    ("input", "op", "carried" for the copy of a loop-carried variable at the end of an
    iteration, "loop" for a loop's target); `iteration` (one 0-based count per
    enclosing loop) and `loops` (the index in `Trace.loops` of each enclosing loop).
    """

    __slots__ = ("variable", "operation", "kind", "value", "adjoint", "iteration", "loops",
                 "tangent")

    def __init__(self, variable, operation, kind, value, iteration=(), loops=(),
                 adjoint=None, tangent=None):
        self.variable, self.operation, self.kind = variable, operation, kind
        self.value, self.adjoint, self.tangent = value, adjoint, tangent
        self.iteration, self.loops = tuple(iteration), tuple(loops)

    def __repr__(self):
        it = f" iteration={self.iteration}" if self.iteration else ""
        parts = [f"value={_show(self.value)}"]
        parts += [f"{k}={_show(v)}" for k, v in (("tangent", self.tangent),
                                                  ("adjoint", self.adjoint)) if v is not None]
        return f"<Row {self.variable}{it}: {self.operation} {' '.join(parts)}>"


class Trace:
    """The evaluation trace of one call: `rows` (a list of `Row`), `value` (the
    function's result), `gradient` (the adjoints of the `wrt` inputs, in order), `loops`
    (the header of each loop), `output` (the name of the result in Wengert form, None
    if the function returns a constant), `seed` (the output's adjoint), `tangents`
    (the input tangents, as (name, tangent) pairs; None without a tangent column) and
    `notes`.

    Print it for a text table; `to_markdown()`, `to_json()` and, in Jupyter, an HTML
    table are the other renderings.
    """

    #: significant digits of numbers in the text, markdown and HTML tables
    precision = 10

    def __init__(self, function, arguments, wrt, rows, value, output, seed, gradient,
                 loops, notes=(), tangents=None):
        self.function = function
        self.arguments = arguments
        self.wrt = tuple(wrt)
        self.rows = rows
        self.value = value
        self.output = output
        self.seed = seed
        self.gradient = gradient
        self.loops = loops
        self.notes = list(notes)
        self.tangents = tangents

    # -- access -----------------------------------------------------------------------
    def __len__(self):
        return len(self.rows)

    def __iter__(self):
        return iter(self.rows)

    def find(self, variable):
        """The rows of `variable`, in execution order."""
        return [r for r in self.rows if r.variable == variable]

    def get(self, variable, iteration=None):
        """The row of `variable` (at `iteration`, an int or a tuple of ints, inside
        loops); a `KeyError` names the choices when there is none or several."""
        rows = self.find(variable)
        if iteration is not None:
            want = (iteration,) if isinstance(iteration, int) else tuple(iteration)
            rows = [r for r in rows if r.iteration == want]
        if len(rows) != 1:
            where = [r.iteration for r in self.find(variable)]
            raise KeyError(f"{variable!r} at iteration {iteration!r}: "
                           f"{'no row' if not rows else 'several rows'}; it has rows at "
                           f"iterations {where}")
        return rows[0]

    # -- renderings -------------------------------------------------------------------
    def _call(self):
        args = ", ".join(f"{k}={_show(v, self.precision)}" for k, v in self.arguments)
        return f"{self.function}({args})"

    def title(self):
        """The heading lines: the call and its value, and what the adjoints are."""
        lines = [f"{self._call()} = {_show(self.value, self.precision)}"]
        if self.wrt:
            out = self.output or "output"
            lines.append(f"reverse mode: adjoint = d {out} / d variable, seeded with "
                         f"{out}_bar = {_show(self.seed, self.precision)}")
        if self.tangents is not None:
            dots = ", ".join(f"{n}_dot = {_show(v, self.precision)}"
                             for n, v in self.tangents)
            lines.append(f"forward mode: tangent = derivative along {dots}")
        return lines

    def _columns(self):
        cols = []
        if any(r.iteration for r in self.rows):
            cols.append(("iteration", lambda r: ",".join(str(k) for k in r.iteration)))
        p = self.precision
        cols += [("variable", lambda r: r.variable),
                 ("operation", lambda r: r.operation + ("  (carried)" if r.kind == "carried"
                                                        else "")),
                 ("value", lambda r: _show(r.value, p))]
        if self.tangents is not None:
            cols.append(("tangent", lambda r: "" if r.tangent is None else _show(r.tangent, p)))
        if self.wrt:
            cols.append(("adjoint", lambda r: "" if r.adjoint is None else _show(r.adjoint, p)))
        return cols

    def table(self):
        """The table as (header, rows of cell strings)."""
        cols = self._columns()
        return [c[0] for c in cols], [[c[1](r) for c in cols] for r in self.rows]

    def __str__(self):
        header, cells = self.table()
        widths = [max([len(h)] + [len(row[i]) for row in cells]) for i, h in enumerate(header)]

        def line(parts):
            return "  ".join(p.ljust(w) for p, w in zip(parts, widths)).rstrip()
        out = self.title() + [line(header), line(["-" * w for w in widths])]
        out += [line(row) for row in cells]
        out += [f"note: {n}" for n in self.notes]
        return "\n".join(out)

    def __repr__(self):
        return f"<Trace of {self._call()}: {len(self.rows)} rows>"

    def to_markdown(self, title=True):
        """A GitHub-flavoured markdown table (code in backticks), with the heading as a
        paragraph above it unless `title` is false."""
        header, cells = self.table()
        code = {"variable", "operation"}

        def cell(name, text):
            if not text:
                return ""
            text = text.replace("|", "\\|")
            return f"`{text}`" if name in code else text
        out = []
        if title:
            out += ["<br>\n".join(f"`{t}`" for t in self.title()), ""]
        out.append("| " + " | ".join(header) + " |")
        out.append("|" + "|".join("---" for _ in header) + "|")
        for row in cells:
            out.append("| " + " | ".join(cell(h, c) for h, c in zip(header, row)) + " |")
        if self.notes:
            out += [""] + [f"Note: {_md_escape(n)}" for n in self.notes]
        return "\n".join(out) + "\n"

    def to_dict(self):
        """The trace as plain data (what `to_json` writes)."""
        rows = []
        for r in self.rows:
            row = {"iteration": list(r.iteration), "loops": list(r.loops),
                   "variable": r.variable, "operation": r.operation, "kind": r.kind,
                   "value": _json_value(r.value)}
            if self.tangents is not None:
                row["tangent"] = None if r.tangent is None else _json_value(r.tangent)
            if self.wrt:
                row["adjoint"] = None if r.adjoint is None else _json_value(r.adjoint)
            rows.append(row)
        out = {"function": self.function,
               "arguments": {k: _json_value(v) for k, v in self.arguments},
               "value": _json_value(self.value),
               "output": self.output,
               "wrt": list(self.wrt),
               "seed": _json_value(self.seed) if self.wrt else None,
               "gradient": [_json_value(g) for g in self.gradient],
               "loops": list(self.loops),
               "rows": rows,
               "notes": self.notes}
        if self.tangents is not None:
            out["tangents"] = {n: _json_value(v) for n, v in self.tangents}
        return out

    def to_json(self, indent=2):
        """The trace as JSON text. Numbers are numbers; arrays and other objects are
        summaries (`{"shape": [3], "dtype": "float64", "mean": 0.42, "text": ...}`)."""
        return json.dumps(self.to_dict(), indent=indent)

    def _repr_html_(self):
        header, cells = self.table()
        esc = html.escape
        out = ["<div class=\"s2sad-trace\">"]
        out += [f"<p><code>{esc(t)}</code></p>" for t in self.title()]
        out.append("<table>")
        out.append("<thead><tr>" + "".join(f"<th>{esc(h)}</th>" for h in header)
                   + "</tr></thead><tbody>")
        for row in cells:
            out.append("<tr>" + "".join(
                f"<td><code>{esc(c)}</code></td>" if h in ("variable", "operation")
                else f"<td style=\"text-align:right\">{esc(c)}</td>"
                for h, c in zip(header, row)) + "</tr>")
        out.append("</tbody></table>")
        out += [f"<p>note: {esc(n)}</p>" for n in self.notes]
        out.append("</div>")
        return "\n".join(out)


# -- values ---------------------------------------------------------------------------
def _float(v, precision):
    text = format(v, f".{precision}g")
    if math.isfinite(v) and not any(c in text for c in ".e"):
        text += ".0"
    return text


def _show(v, precision=10):
    """A short text for a value: numbers in full up to `precision` significant digits,
    arrays by shape and mean."""
    if isinstance(v, bool) or v is None or isinstance(v, np.bool_):
        return str(bool(v)) if v is not None else "None"
    if isinstance(v, numbers.Integral):
        return str(int(v))
    if isinstance(v, numbers.Real):
        return _float(float(v), precision)
    if isinstance(v, numbers.Complex):
        return f"({_float(v.real, precision)}{'+' if v.imag >= 0 else '-'}" \
               f"{_float(abs(v.imag), precision)}j)"
    if isinstance(v, np.ndarray):
        shape = "(" + ", ".join(str(n) for n in v.shape) + ("," if v.ndim == 1 else "") + ")"
        if v.ndim == 0:
            return _show(v.item(), precision)
        text = f"array{shape}"
        if v.size and v.dtype.kind in "biuf":
            text += f" mean={_show(float(np.mean(v)), min(precision, 4))}"
        elif v.dtype.kind not in "biuf":
            text += f" {v.dtype}"
        return text
    if isinstance(v, (list, tuple)):
        inner = ", ".join(_show(x, min(precision, 4)) for x in v)
        text = f"[{inner}]" if isinstance(v, list) else f"({inner}{',' if len(v) == 1 else ''})"
        if len(text) <= 40:
            return text
        return f"{type(v).__name__}({len(v)})"
    if isinstance(v, dict):
        return f"dict({len(v)}: {', '.join(map(str, list(v)[:4]))}" \
               f"{', ...' if len(v) > 4 else ''})"
    text = repr(v)
    return text if len(text) <= 40 and " at 0x" not in text else f"{type(v).__name__} object"


def _json_value(v):
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if v is None or isinstance(v, str):
        return v
    if isinstance(v, numbers.Integral):
        return int(v)
    if isinstance(v, numbers.Real):
        f = float(v)
        return f if math.isfinite(f) else str(f)
    if isinstance(v, np.ndarray) and v.ndim == 0:
        return _json_value(v.item())
    if isinstance(v, np.ndarray):
        out = {"shape": list(v.shape), "dtype": str(v.dtype)}
        if v.size and v.dtype.kind in "biuf":
            out["mean"] = _json_value(float(np.mean(v)))
            out["min"] = _json_value(v.min().item())
            out["max"] = _json_value(v.max().item())
        out["text"] = _show(v)
        return out
    if isinstance(v, (list, tuple)) and len(v) <= 16:
        return [_json_value(x) for x in v]
    return {"type": type(v).__name__, "text": _show(v)}


def _md_escape(text):
    return text.replace("_", "\\_").replace("*", "\\*")


def _snapshot(v):
    """A copy of `v` that later in-place changes cannot reach."""
    if isinstance(v, np.ndarray):
        return v.copy()
    if isinstance(v, (list, dict, set)):
        try:
            return copy.deepcopy(v)
        except Exception:
            return copy.copy(v)
    return v


# -- recording ------------------------------------------------------------------------
class _Recorder:
    """Called from instrumented code: loop counters and recorded values."""

    def __init__(self):
        self.path = []
        self.events = []          # values: (row id, path, value)
        self.starts = {}          # adjoints: path -> {name: value} at a reversed iteration
        self.nudge = None         # (row id, path, h): add h to that value (for checks)

    def key(self):
        return tuple((loop, k) for loop, k in self.path)

    def enter(self, loop):
        self.path.append([loop, -1])

    def step(self):
        self.path[-1][1] += 1

    def leave(self):
        self.path.pop()

    def value(self, row, v):
        key = self.key()
        self.events.append((row, key, _snapshot(v)))
        if self.nudge is not None and self.nudge[:2] == (row, key):
            return v + self.nudge[2]
        return v

    def reversed_loop(self, loop, iterable):
        """Iterate a pullback loop, numbering each trip by the forward iteration it
        reverses (the last one first)."""
        items = list(iterable)
        self.path.append([loop, None])
        for k, item in enumerate(items):
            self.path[-1][1] = len(items) - 1 - k
            yield item
        self.path.pop()

    def start(self, scope, names):
        """At the start of a reversed iteration: the adjoints bound so far."""
        self.starts[self.key()] = {primal: _snapshot(scope[bar]) for bar, primal in
                                   names.items() if bar in scope}


def _call(recorder, method, *args):
    return syntax.expr_stmt(syntax.call(syntax.attribute(recorder, method), list(args)))


def _stmt_source(s):
    return emit.to_source(s).strip()


def _op_source(s):
    """The operation of Wengert statement `s`, in source form."""
    call = s.value
    prim = getattr(getattr(call, "func", None), "s2s_prim", None)
    name = getattr(prim, "__name__", None)
    target = _stmt_source(s.targets[0])
    args = [_stmt_source(a) for a in getattr(call, "args", [])]
    if name == "setitem" and len(args) == 3:
        index = _stmt_source(call.s2s_index) if hasattr(call, "s2s_index") else args[1]
        return f"{target} = {args[0]} with [{index}] = {args[2]}"
    if name == "append" and len(args) == 2:
        return f"{target} = {args[0]} + [{args[1]}]"
    return _stmt_source(s)


def _loop_header(s):
    if isinstance(s, gast.For):
        return f"for {_stmt_source(s.target)} in {_stmt_source(s.iter)}"
    return f"while {_stmt_source(s.test)}"


def _loops_preorder(stmts, out=None):
    out = [] if out is None else out
    for s in stmts:
        if isinstance(s, (gast.For, gast.While)):
            out.append(s)
        if isinstance(s, (gast.For, gast.While, gast.If)):
            _loops_preorder(s.body, out)
            _loops_preorder(s.orelse, out)
    return out


class _Forward:
    """Instrument a Wengert function: record every assignment and count iterations."""

    def __init__(self, recorder):
        self.rec = recorder
        self.rows = []            # (variable, operation, kind)
        self.loops = []           # headers

    def row(self, variable, operation, kind):
        self.rows.append((variable, operation, kind))
        return len(self.rows) - 1

    def record(self, variable, operation, kind):
        """`v = recorder.value(row, v)`: records `v` (and lets a check perturb it)."""
        call = syntax.call(syntax.attribute(self.rec, "value"), [
            syntax.const(self.row(variable, operation, kind)), syntax.name(variable)])
        return syntax.assign(variable, call)

    def run(self, fn):
        params = [a.id for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs]
        head = [self.record(p, "input", "input") for p in params]
        fn.body = head + self.block(fn.body)
        return fn

    def block(self, stmts):
        out = []
        for s in stmts:
            if getattr(s, "s2s_marker", None):
                continue      # a path-end marker: it would print as a lone comment
            if isinstance(s, gast.Assign):
                out.append(s)
                kind = "carried" if getattr(s, "s2s_phi", False) else "op"
                op = _op_source(s)
                for n in syntax.names_stored(gast.Module(body=s.targets, type_ignores=[])):
                    out.append(self.record(n, op, kind))
            elif isinstance(s, gast.If):
                s.body = self.block(s.body)
                s.orelse = self.block(s.orelse)
                out.append(s)
            elif isinstance(s, (gast.For, gast.While)):
                loop = len(self.loops)
                self.loops.append(_loop_header(s))
                body = [_call(self.rec, "step")]
                if isinstance(s, gast.For):
                    header = self.loops[-1]
                    body += [self.record(n, header, "loop") for n in syntax.names_stored(s.target)]
                s.body = body + self.block(s.body)
                s.orelse = self.block(s.orelse)
                out += [_call(self.rec, "enter", syntax.const(loop)), s, _call(self.rec, "leave")]
            else:
                out.append(s)
        return out


class _Backward:
    """Instrument a pullback: record each assignment to an adjoint, and the adjoints
    bound when each reversed iteration starts."""

    def __init__(self, recorder, adjoints, loop_ids, locals_name):
        self.rec = recorder
        self.primal_of = {bar: primal for primal, bar in adjoints.items()}
        self.loop_ids = loop_ids
        self.locals_name = locals_name
        self.names = syntax.const(None)

    def run(self, pullback):
        self.names = gast.Dict(keys=[syntax.const(b) for b in sorted(self.primal_of)],
                               values=[syntax.const(self.primal_of[b])
                                       for b in sorted(self.primal_of)])
        seed = pullback.args.args[0].id
        head = self.records(seed)
        pullback.body = head + self.block(pullback.body)
        return pullback

    def records(self, bar):
        if bar not in self.primal_of:
            return []
        return [_call(self.rec, "value", syntax.const(self.primal_of[bar]), syntax.name(bar))]

    def block(self, stmts):
        out = []
        for s in stmts:
            if isinstance(s, gast.Assign):
                out.append(s)
                for n in syntax.names_stored(gast.Module(body=s.targets, type_ignores=[])):
                    out += self.records(n)
            elif isinstance(s, gast.If):
                s.body = self.block(s.body)
                s.orelse = self.block(s.orelse)
                out.append(s)
            elif isinstance(s, gast.For):
                loop = self.loop_ids.get(id(s), ("unmatched", id(s)))
                s.iter = syntax.call(syntax.attribute(self.rec, "reversed_loop"),
                                    [syntax.const(loop), s.iter])
                start = _call(self.rec, "start", syntax.call(self.locals_name),
                              copy.deepcopy(self.names))
                s.body = [start] + self.block(s.body)
                out.append(s)
            elif isinstance(s, gast.While):
                s.body = self.block(s.body)
                out.append(s)
            else:
                out.append(s)
        return out


class _Tangents:
    """Instrument a forward-mode `f_jvp`: record each assignment to a tangent, with the
    loop counters of the Wengert form (the loops keep their shape)."""

    def __init__(self, recorder, dots):
        self.rec = recorder
        self.primal_of = {dot: primal for primal, dot in dots.items()}
        self.loops = 0

    def records(self, names):
        return [_call(self.rec, "value", syntax.const(self.primal_of[n]), syntax.name(n))
                for n in names if n in self.primal_of]

    def block(self, stmts):
        out = []
        for s in stmts:
            if isinstance(s, gast.Assign):
                out.append(s)
                out += self.records(syntax.names_stored(gast.Module(body=s.targets,
                                                                   type_ignores=[])))
            elif isinstance(s, gast.If):
                s.body = self.block(s.body)
                s.orelse = self.block(s.orelse)
                out.append(s)
            elif isinstance(s, (gast.For, gast.While)):
                loop = self.loops
                self.loops += 1
                head = [_call(self.rec, "step")]
                if isinstance(s, gast.For):
                    head += self.records(syntax.names_stored(s.target))
                s.body = head + self.block(s.body)
                s.orelse = self.block(s.orelse)
                out += [_call(self.rec, "enter", syntax.const(loop)), s, _call(self.rec, "leave")]
            else:
                out.append(s)
        return out


def _fresh(base, taken):
    name, k = base, 0
    while name in taken:
        k += 1
        name = f"{base}_{k}"
    taken.add(name)
    return name


def _closure(src):
    """The values of the user's function's closure cells, by name."""
    out = {}
    code = src.fn.__code__
    for var, cell in zip(code.co_freevars, src.fn.__closure__ or ()):
        try:
            out[var] = cell.cell_contents
        except ValueError:   # a cell not filled yet
            pass
    return out


def _bindings(src, tree):
    """Closure values of the user's function, and the runtime helpers the Wengert form
    calls (`_s2s_setitem`, ...)."""
    bindings = _closure(src)
    for n in gast.walk(tree):
        prim = getattr(n, "s2s_prim", None)
        if isinstance(n, gast.Name) and getattr(n, "s2s_lifted", False):
            bindings.setdefault(n.id, prim)
        elif isinstance(n, gast.Name) and n.id.startswith("_s2s_"):
            obj = prim if prim is not None else getattr(runtime, n.id[5:], None)
            if obj is not None:
                bindings.setdefault(n.id, obj)
    return bindings


def _compile(node, bindings, src, what):
    filename = f"<s2sad trace {what} {next(_filenames)}: {node.name}, from " \
               f"{src.filename}:{src.first_line}>"
    fn, _ = emit.compile_function(node, bindings, src.fn, filename)
    return fn


def _differentiable(v):
    if isinstance(v, (bool, np.bool_)):
        return False
    if isinstance(v, (numbers.Real, list, tuple, dict)):
        return True
    if isinstance(v, np.ndarray):
        return v.dtype.kind == "f"
    return False


def _seed(y):
    if isinstance(y, (bool, np.bool_)):
        return None
    if isinstance(y, np.ndarray):
        return np.ones_like(y, dtype=float) if y.dtype.kind in "biuf" else None
    if isinstance(y, np.floating):
        return type(y)(1.0)
    if isinstance(y, numbers.Real):
        return 1.0
    return None


def _same(a, b):
    try:
        return bool(np.all(np.asarray(a) == np.asarray(b))) or bool(np.allclose(a, b,
                                                                                 equal_nan=True))
    except Exception:
        return True


def trace(f, *args, wrt=None, seed=None, adjoints=True, tangents=None, **kwargs):
    """The evaluation trace of `f(*args, **kwargs)`: every Wengert variable with its
    operation, value, tangent and adjoint, in execution order (see the module
    docstring).

    `wrt` (an index, a parameter name, or a tuple of them) chooses the differentiated
    inputs; by default, every positional argument that is a number, a float array or a
    container. `seed` is the adjoint of the output (default 1.0, or ones for an array
    output: then the adjoints are those of the sum of the output). `adjoints=False`
    leaves out the adjoints.

    Where forward mode is available, the tangent column shows each variable's
    derivative (forward mode, `s2sad.jvp`) along `tangents`: a tuple with one tangent
    per `wrt` input, a dict by name, or one tangent for one input. By default it is 1
    (ones) for the first `wrt` input and 0 for the others, so that a tangent is the
    derivative with respect to the first input. `tangents=False` leaves the column
    out; by default it is also left out with `adjoints=False`.

    >>> import s2sad
    >>> def cube(x):
    ...     c = 1.0
    ...     for i in range(3):
    ...         c *= x
    ...     return c
    >>> t = s2sad.trace(cube, 2.0)
    >>> t.value, t.gradient
    (8.0, (12.0,))
    >>> for r in t.find("c_1"):
    ...     print(r.iteration, r.operation, r.value, r.adjoint)
    (0,) c_1 = c * x 2.0 4.0
    (1,) c_1 = c * x 4.0 2.0
    (2,) c_1 = c * x 8.0 1.0
    """
    bound_self = ()
    if inspect.ismethod(f):
        bound_self, f = (f.__self__,), f.__func__
    fn = pipeline.target(f)
    call_args = bound_self + args
    src = source.capture(fn)
    params = [a.id for a in src.node.args.posonlyargs + src.node.args.args]
    if wrt is None:
        wrt = tuple(params[i + len(bound_self)] for i, a in enumerate(args)
                    if i + len(bound_self) < len(params) and _differentiable(a))
    elif bound_self:
        wrt = tuple(w + 1 if isinstance(w, int) and w >= 0 else w
                    for w in (wrt if isinstance(wrt, (tuple, list)) else (wrt,)))
    differentiated = tuple(wrt_names(src, wrt if isinstance(wrt, (tuple, list))
                                              else (wrt,)))
    names = differentiated if adjoints else ()
    wanted = tangents is not None and tangents is not False

    # values: the instrumented Wengert form
    ctx, node = pipeline.compilation(fn, names, until="wengert")
    src = ctx.src
    taken = {n.id for n in gast.walk(node) if isinstance(n, gast.Name)}
    taken |= set(src.free_values())
    rec_name = _fresh("_s2s_trace", taken)
    recorder = _Recorder()
    forward = _Forward(rec_name)
    node = forward.run(node)
    bindings = _bindings(src, node)
    bindings[rec_name] = recorder
    primal = _compile(node, bindings, src, "values")
    value = primal(*call_args, **kwargs)
    events = list(recorder.events)
    rows = []
    for row_id, path, v in events:
        variable, operation, kind = forward.rows[row_id]
        rows.append(Row(variable, operation, kind, v, iteration=[k for _, k in path],
                        loops=[loop for loop, _ in path]))
    ret = node.body[-1]
    output = ret.value.id if isinstance(ret, gast.Return) and isinstance(
        ret.value, gast.Name) else None
    arguments = list(_arguments(src.fn, call_args, kwargs))
    if bound_self:
        arguments = arguments[1:]

    notes, gradient = [], ()
    if names:
        seed = _seed(value) if seed is None else seed
        if seed is None:
            raise S2SADError(
                f"trace seeds the adjoint of the output with 1.0, but "
                f"{src.name}() returned {type(value).__name__} {_show(value)}; pass "
                "seed= (an adjoint shaped like the output) or adjoints=False")
        gradient, notes = _adjoints(fn, src, names, call_args, kwargs, seed, rows, value,
                                    forward.loops)
    seeds = None
    if differentiated and (wanted or (tangents is None and names)):
        try:
            seeds = _tangents(fn, differentiated, call_args, kwargs, tangents, rows, value,
                              len(forward.loops), notes)
        except Exception as exc:  # forward mode cannot do this function: say so
            if wanted:
                raise
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            notes.append(f"no tangents: {type(exc).__name__}: {first}")
    result = Trace(src.name, arguments, names, rows, value, output, seed, gradient,
                   forward.loops, notes, seeds)
    result._rerun = (primal, recorder, [(row_id, path) for row_id, path, _ in events],
                     call_args, kwargs)
    return result


def _nudged_output(trace_, index, h):
    """The output of the traced call with `h` added to the value of row `index` where
    it is computed (the values after it are recomputed): a finite-difference check of
    that row's adjoint, for tests."""
    primal, recorder, keys, args, kwargs = trace_._rerun
    row_id, path = keys[index]
    recorder.events, recorder.nudge = [], (row_id, path, h)
    try:
        return primal(*args, **kwargs)
    finally:
        recorder.nudge = None



def _tangents(fn, names, args, kwargs, tangents, rows, value, nloops, notes):
    """Run the instrumented `f_jvp`; fill in `rows`' tangents; return the seeds as
    ((name, tangent), ...)."""
    node = source.capture(fn).node
    positional = dict(zip([a.id for a in node.args.posonlyargs + node.args.args], args))
    if tangents is None:
        tangents = tuple(_filled(positional.get(n, 0.0), 1.0 if k == 0 else 0.0)
                         for k, n in enumerate(names))
    elif isinstance(tangents, dict):
        missing = [n for n in names if n not in tangents]
        if missing:
            raise S2SADError(f"tangents has no entry for {missing}")
        tangents = tuple(tangents[n] for n in names)
    elif not isinstance(tangents, tuple):
        tangents = (tangents,)
    if len(tangents) != len(names):
        raise S2SADError(f"tangents: expected one per differentiated input {list(names)}, "
                         f"got {len(tangents)}")
    ctx, jvp = pipeline.compilation(fn, names, pipeline.FORWARD_MODE, "forward",
                                    kinds_of(fn, args))
    src, helpers = ctx.src, dict(ctx.bindings, **pipeline.callee_bindings(ctx))
    taken = {n.id for n in gast.walk(jvp) if isinstance(n, gast.Name)}
    taken |= set(src.free_values()) | set(helpers)
    rec_name = _fresh("_s2s_trace", taken)
    recorder = _Recorder()
    instrument = _Tangents(rec_name, ctx.forward.dots)
    jvp.body = instrument.block(jvp.body)
    matched = instrument.loops == nloops
    bindings = dict(_closure(src), **helpers)
    bindings[rec_name] = recorder
    compiled = _compile(jvp, bindings, src, "tangents")
    y, y_dot = compiled(*args, **kwargs, **dict(zip(ctx.forward.tangent_names, tangents)))
    if not _same(y, value):
        notes.append(f"the tangent pass computed the output {_show(y)}, not "
                     f"{_show(value)}: the function is not deterministic")
    found = {}
    for name, path, v in recorder.events:
        found[(name, path if matched else ())] = v
    seeds = dict(zip(names, tangents))
    by_path = {}
    for r in rows:
        path = tuple(zip(r.loops, r.iteration)) if matched else ()
        if r.kind == "input":
            r.tangent = _snapshot(seeds[r.variable]) if r.variable in seeds else found.get(
                (r.variable, ()))
        else:
            r.tangent = found.get((r.variable, path))
        by_path.setdefault(path, {})[r.variable] = r
    # forward mode may merge a copy `v = w` into w's definition: the two share a tangent
    for r in rows:
        if r.kind == "carried" and r.operation.count("=") == 1:
            w = r.operation.split("=")[1].strip()
            other = by_path.get(tuple(zip(r.loops, r.iteration)) if matched else (), {}).get(w)
            if other is not None and other.tangent is None and r.tangent is not None:
                other.tangent = r.tangent
            elif other is not None and r.tangent is None and other.tangent is not None:
                r.tangent = other.tangent
    if not _same(y_dot, _output_tangent(fn, args, kwargs, names, tangents, y_dot)):
        notes.append("the tangents disagree with s2sad.jvp")
    return tuple((n, _snapshot(t)) for n, t in zip(names, tangents))


def _filled(x, c):
    """A tangent shaped like `x` with every entry `c`."""
    if isinstance(x, np.ndarray):
        return np.full(x.shape, c)
    if isinstance(x, (tuple, list)):
        return type(x)(_filled(v, c) for v in x)
    if isinstance(x, dict):
        return {k: _filled(v, c) for k, v in x.items()}
    return float(c)


def _output_tangent(fn, args, kwargs, names, tangents, fallback):
    """The output tangent `s2sad.jvp` gives (when the inputs are all positional)."""
    node = source.capture(fn).node
    params = [a.id for a in node.args.posonlyargs + node.args.args][:len(args)]
    if set(names) - set(params):
        return fallback
    given = dict(zip(names, tangents))
    full = tuple(given[p] if p in given else runtime.zeros_like(a)
                 for p, a in zip(params, args))
    try:
        return forward_api.jvp(fn, args, full, **kwargs)[1]
    except S2SADError:
        return fallback



def _arguments(fn, args, kwargs):
    try:
        bound = inspect.signature(fn).bind(*args, **kwargs)
        bound.apply_defaults()
        return list(bound.arguments.items())
    except TypeError:
        return [(f"arg{i}", a) for i, a in enumerate(args)] + list(kwargs.items())


def _adjoints(fn, src, names, args, kwargs, seed, rows, value, loops):
    """Run the instrumented pullback; fill in `rows`' adjoints; return the gradient."""
    ctx, vjp = pipeline.compilation(fn, names, until="reverse", kinds=kinds_of(fn, args))
    src, result = ctx.src, ctx.reverse
    helpers = dict(ctx.bindings, **pipeline.callee_bindings(ctx))
    pullback = result.pullback
    forward_body = [s for s in vjp.body if s is not pullback]
    forward_loops = _loops_preorder(forward_body)
    index = {id(loop): i for i, loop in enumerate(forward_loops)}
    loop_ids = {}
    if len(forward_loops) == len(loops):
        for info in result.loops:
            rev_loop = getattr(info, "reversed", None)
            if rev_loop is not None and id(info.loop) in index:
                loop_ids[id(rev_loop)] = index[id(info.loop)]
    taken = {n.id for n in gast.walk(vjp) if isinstance(n, gast.Name)}
    taken |= set(src.free_values()) | set(helpers)
    rec_name = _fresh("_s2s_trace", taken)
    locals_name = _fresh("_s2s_locals", taken)
    recorder = _Recorder()
    _Backward(rec_name, result.adjoints, loop_ids, locals_name).run(pullback)
    bindings = dict(_closure(src), **helpers)
    bindings[rec_name] = recorder
    bindings[locals_name] = locals
    compiled = _compile(vjp, bindings, src, "adjoints")
    y, pull = compiled(*args, **kwargs)
    notes = []
    if not _same(y, value):
        notes.append(f"the adjoint pass computed the output {_show(y)}, not {_show(value)}: "
                     "the function is not deterministic, so the adjoints may not match "
                     "the values")
    grads = pull(seed)
    grads = grads if isinstance(grads, tuple) else (grads,)
    params = [a.id for a in src.node.args.posonlyargs + src.node.args.args]
    positional = dict(zip(params, args))
    gradient = tuple(runtime.unbroadcast(g, positional[n]) if n in positional else g
                     for g, n in zip(grads, names))
    by_input = dict(zip(names, gradient))

    # the last value of each adjoint within each (prefix of an) iteration path
    last = {}
    for name, path, v in recorder.events:
        for j in range(len(path) + 1):
            last[(name, path[:j])] = v
    for r in rows:
        path = tuple(zip(r.loops, r.iteration))
        if r.kind == "input":
            r.adjoint = _snapshot(by_input.get(r.variable))
        elif r.kind == "carried":
            r.adjoint = recorder.starts.get(path, {}).get(r.variable)
        else:
            r.adjoint = last.get((r.variable, path))
    return gradient, notes
