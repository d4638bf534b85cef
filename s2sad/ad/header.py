"""The header of reverse-mode code, like Tapenade's: comment lines at the top of `f_vjp`
saying what is differentiated (an input the output does not depend on is marked
`(unconnected)`), what the pullback reads of the forward pass (values it keeps alive,
what each loop records per iteration on its tape, or a loop's trip count), and which
rules the derivative uses, spelled as in the user's code.

>>> print(show("header", '''
... def f(x):
...     return sin(x) * x
... '''))
def f_vjp(x):
    # reverse mode of f() with respect to x
    # the pullback reads: t, x
    # rules: sin, *
    t = sin(x)
    y = t * x
<BLANKLINE>
    def f_pullback(y_bar):
        # grad of: return sin(x) * x
        x_bar = y_bar * t + y_bar * x * cos(x)
        return x_bar
    return (y, f_pullback)
"""
from __future__ import annotations

import dataclasses
import os
import re
import textwrap

import gast

from ..analysis.names import exposed
from ..analysis.operations import CUSTOM, USER
from .. import syntax
from ..syntax import unparse


@dataclasses.dataclass
class Header:
    """The header's parts: first lines, the names the pullback reads from the closure,
    what the loops record, and the rules line; and the comments written for them."""
    first: list
    closure: list
    kept: list
    rules: list
    comments: list = dataclasses.field(default_factory=list)

    def rendered(self, present=None):
        """The comment lines, listing only the values in `present` (all without it)
        among those the pullback reads of the forward pass."""
        closure = [n for n in self.closure if present is None or n in present]
        lines = self.first + ["the pullback reads: " + "; ".join(
            ([", ".join(closure)] if closure else []) + self.kept) if closure or self.kept
            else "the pullback reads nothing of the forward pass"] + self.rules
        return [syntax.comment(part) for line in lines for part in _wrapped(line)]


def run(vjp, ctx):
    """The pass: put the header at the top of `vjp`."""
    ctx.reverse.header = header = _parts(vjp, ctx)
    header.comments = header.rendered()
    vjp.body[:0] = header.comments
    return vjp


def refresh(fn, ctx):
    """Drop from the header of `fn` the values the optimized code no longer names (one
    computed straight into an adjoint's memory)."""
    header = ctx.reverse.header
    present = {n.id for n in syntax.name_nodes(fn)}
    old = header.comments
    at = next((i for i, s in enumerate(fn.body) if s is old[0]), None)
    if at is None or all(n in present for n in header.closure):
        return
    fn.body[at:at + len(old)] = header.comments = header.rendered(present)


def _parts(vjp, ctx):
    result, src = ctx.reverse, ctx.src
    wrt = ", ".join(p if p in result.active else f"{p} (unconnected)" for p in ctx.wrt)
    where = ("" if src.filename.startswith("<") else
             f" ({os.path.basename(src.filename)}:{src.first_line})")
    first = [f"reverse mode of {src.name}(){where} with respect to {wrt}"]
    kept = []
    pullback = result.pullback
    taped = set()
    for info in sorted(result.loops, key=lambda info: src.lineno(info.loop)):
        if info.mode in ("start", "end") and info.pushes:
            taped.add(info.tape)
            pushed = info.pushes[0].args[0]
            pushed = pushed.elts if isinstance(pushed, gast.Tuple) else [pushed]
            names = [(v.args[0].id, ctx.is_runtime_call(v, "like")) if isinstance(v, gast.Call)
                     else (v.id, False) for v in pushed]
            values = ", ".join(n for n, like in names if not like)
            shapes = ", ".join(n for n, like in names if like)
            values = (f"{values} and the shapes of {shapes}" if values and shapes
                      else values or f"the shapes of {shapes}")
            kept.append(f"{values} of each iteration of the loop at line "
                        f"{src.lineno(info.loop)}")
        elif info.mode == "revolve":
            taped.add(info.tape)
            kept.append(f"the snapshots of {', '.join(info.state)} of the checkpointed loop "
                        f"at line {src.lineno(info.loop)}")
        elif info.mode == "trips":
            taped.add(info.tape)
            kept.append(f"the trip count of the loop at line {src.lineno(info.loop)}")
    # (read before the pullback assigns them: a fused gradient's reverse sweep of a
    # checkpointed loop binds the loop's state again, after reading its last value)
    params = {a.id for a in pullback.args.args}
    read = exposed(pullback.body, params)
    closure = sorted({n for n in read
                      if n in result.primal_names and n not in taped
                      and src.is_local(n) and n not in ctx.bindings}, key=_natural)
    rules = []
    for stmt in syntax.in_order(vjp.body):
        op = ctx.ops.get(stmt)
        target = stmt.targets[0] if isinstance(stmt, gast.Assign) else None
        if isinstance(target, gast.Tuple):      # `t, t_pullback = g_vjp(...)`
            target = target.elts[0]
        if op is None or target.id not in result.active or op.form not in (
                "call", USER, CUSTOM):
            continue
        name = _rule_name(op, src)
        if name not in rules:
            rules.append(name)
    return Header(first, closure, kept, ["rules: " + ", ".join(rules)] if rules else [])


def _natural(name):
    """A sort key that puts t_2 before t_12."""
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name)]


def _wrapped(line, width=84):
    """`line` as lines of at most about `width` characters: a long one is broken after
    each of its `;`-separated parts, and between words within a part, with the
    continuation lines indented."""
    if len(line) <= width:
        return [line]
    parts = line.split("; ")
    out = []
    for k, part in enumerate(parts):
        out += textwrap.wrap(part + (";" if k < len(parts) - 1 else ""), width,
                             initial_indent="    " if k else "", subsequent_indent="    ",
                             break_long_words=False, break_on_hyphens=False)
    return out


_SYMBOLS = {gast.Add: "+", gast.Sub: "-", gast.Mult: "*", gast.Div: "/", gast.Pow: "**",
            gast.MatMult: "@", gast.FloorDiv: "//", gast.Mod: "%", gast.USub: "unary -",
            gast.UAdd: "unary +"}


def _rule_name(op, src):
    """How the header names the rule of `op`: as the user spelled the operation."""
    node = op.node
    if isinstance(node, (gast.BinOp, gast.UnaryOp)):
        return _SYMBOLS.get(type(node.op), type(node.op).__name__)
    if isinstance(node, gast.Subscript):
        return "[]"
    if isinstance(node, gast.Attribute):
        return "." + node.attr
    if isinstance(node, gast.Call):
        func = node.func
        root = func
        while isinstance(root, gast.Attribute):
            root = root.value
        if isinstance(func, gast.Attribute) and not (
                isinstance(root, gast.Name) and not src.is_local(root.id)):
            return f".{func.attr}()"        # a method of a local value
        return unparse(func)
    return unparse(node)
