"""The tables of `s2sad.trace`: a `Trace` (one `Row` per execution of a Wengert
assignment) and its renderings: a text table, GitHub markdown, JSON and HTML, with
numbers written to a fixed number of significant digits and arrays summarized.

This module only formats what the recording found; it computes nothing and imports
nothing from s2sad (`s2sad.trace` fills in the rows).
"""
import html
import json
import math
import numbers

import numpy as np

__all__ = ["Trace", "Row", "show_value"]


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
        parts = [f"value={show_value(self.value)}"]
        parts += [f"{k}={show_value(v)}" for k, v in (("tangent", self.tangent),
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
        args = ", ".join(f"{k}={show_value(v, self.precision)}" for k, v in self.arguments)
        return f"{self.function}({args})"

    def title(self):
        """The heading lines: the call and its value, and what the adjoints are."""
        lines = [f"{self._call()} = {show_value(self.value, self.precision)}"]
        if self.wrt:
            out = self.output or "output"
            lines.append(f"reverse mode: adjoint = d {out} / d variable, seeded with "
                         f"{out}_bar = {show_value(self.seed, self.precision)}")
        if self.tangents is not None:
            dots = ", ".join(f"{n}_dot = {show_value(v, self.precision)}"
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
                 ("value", lambda r: show_value(r.value, p))]
        if self.tangents is not None:
            cols.append(("tangent", lambda r: "" if r.tangent is None
                         else show_value(r.tangent, p)))
        if self.wrt:
            cols.append(("adjoint", lambda r: "" if r.adjoint is None
                         else show_value(r.adjoint, p)))
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


def show_value(v, precision=10):
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
            return show_value(v.item(), precision)
        text = f"array{shape}"
        if v.size and v.dtype.kind in "biuf":
            text += f" mean={show_value(float(np.mean(v)), min(precision, 4))}"
        elif v.dtype.kind not in "biuf":
            text += f" {v.dtype}"
        return text
    if isinstance(v, (list, tuple)):
        inner = ", ".join(show_value(x, min(precision, 4)) for x in v)
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
        out["text"] = show_value(v)
        return out
    if isinstance(v, (list, tuple)) and len(v) <= 16:
        return [_json_value(x) for x in v]
    return {"type": type(v).__name__, "text": show_value(v)}


def _md_escape(text):
    return text.replace("_", "\\_").replace("*", "\\*")

