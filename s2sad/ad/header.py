"""The header of reverse-mode code, like Tapenade's: comment lines at the top of `f_vjp`
(or of a fused gradient, after its guards) saying what is differentiated (an input the
output does not depend on is marked `(unconnected)`), what the pullback reads of the
forward pass (values it keeps alive, what each loop records per iteration on its tape
that its reversed loop reads, or a loop's trip count), and the rules of the operations
the reverse transform differentiated, in the order of the forward pass, spelled as in
the user's code.

The pass runs once no pass after it changes what the pullback reads (before `enclose`,
which only puts `with` and `try` blocks back; for the numba backend, last): what it
says the pullback reads is read from the code as it is, so a comment is true of the
code emitted. Of a fused gradient, the pullback is its reverse sweep, from the first
statement of the pullback inlined (a `# grad of:` comment or an assignment of an
adjoint), without the seed's reading of the value and the value `f_value_and_grad`
returns.

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
from .. import marks, syntax
from ..before_ad.callee_effects import returns_its_writes
from ..compilation import parameters
from ..options import Variant
from ..syntax import unparse


@dataclasses.dataclass
class Header:
    """The header's parts: first lines, the names the pullback reads of the forward pass,
    what the loops record for it, and the rules line."""
    first: list
    closure: list
    kept: list
    rules: list

    def comments(self):
        """The comment lines."""
        closure, kept = self.closure, self.kept
        lines = self.first + ["the pullback reads: " + "; ".join(
            ([", ".join(closure)] if closure else []) + kept) if closure or kept
            else "the pullback reads nothing of the forward pass"] + self.rules
        return [syntax.comment(part) for line in lines for part in _wrapped(line)]


def run(fn, ctx):
    """The pass (last but `enclose`, and for the numba backend last): put the header at
    the top of `fn`, a reverse-mode derivative as the passes before left it (a vjp and its
    pullback, or a fused gradient), after its guards."""
    if ctx.reverse is None or ctx.variant is Variant.ADVANCE:     # (a step alone, no pullback)
        return fn
    ctx.reverse.header = header = _parts(fn, ctx)
    at = 0
    while at < len(fn.body) and marks.TESTS.of(getattr(fn.body[at], "test", None)) is not None:
        at += 1
    fn.body[at:at] = header.comments()
    return fn


def _parts(fn, ctx):
    result, src = ctx.reverse, ctx.src
    wrt = ", ".join(p if p in result.active else f"{p} (unconnected)" for p in ctx.wrt)
    where = ("" if src.filename.startswith("<") else
             f" ({os.path.basename(src.filename)}:{src.first_line})")
    first = [f"reverse mode of {src.name}(){where} with respect to {wrt}"]
    forward, sweep, bound = _sweeps(fn, ctx)
    kept, taped = [], set()
    for info in sorted(result.loops, key=lambda info: src.lineno(info.loop)):
        line = src.lineno(info.loop)
        if info.mode in ("start", "end") and info.pushes:
            taped.add(info.tape)
            items = _read_per_iteration(fn, info, ctx)
            values = ", ".join(n for n, like in items if not like)
            shapes = ", ".join(n for n, like in items if like)
            values = (f"{values} and the shapes of {shapes}" if values and shapes
                      else values or f"the shapes of {shapes}")
            kept.append(f"{values} of each iteration of the loop at line {line}" if items
                        else f"the trip count of the loop at line {line}")
        elif info.mode == "revolve":
            taped.add(info.tape)
            kept.append(f"the snapshots of {', '.join(info.state)} of the checkpointed loop "
                        f"at line {line}")
        elif info.mode == "trips":
            taped.add(info.tape)
            kept.append(f"the trip count of the loop at line {line}")
    # (read before the pullback assigns them: a fused gradient's reverse sweep of a
    # checkpointed loop binds the loop's state again, after reading its last value)
    read = exposed(sweep, bound)
    made = set(parameters(src)) | {n for s in forward for n in syntax.names_stored(s)}
    closure = sorted({n for n in read & made
                      if n in result.primal_names and n not in taped
                      and src.is_local(n) and n not in ctx.bindings}, key=_natural)
    rules = []
    for op in result.differentiated:
        name = _rule_name(op, src)
        if name not in rules:
            rules.append(name)
    return Header(first, closure, kept, ["rules: " + ", ".join(rules)] if rules else [])


def _sweeps(fn, ctx):
    """(forward pass, reverse sweep, the names bound before it) of `fn`: of a vjp, the
    statements but its pullback, the pullback's body and its parameter; of a fused
    gradient, the statements before the first one of the pullback inlined (a `# grad
    of:` comment, or an assignment of an adjoint), then those, without what only the
    seed and the value returned read."""
    body = [s for s in fn.body if marks.TESTS.of(getattr(s, "test", None)) is None]
    pullback = ctx.reverse.pullback
    inner = next((s for s in body if isinstance(s, gast.FunctionDef)
                  and s.name == pullback.name), None)
    if inner is not None:
        return ([s for s in body if s is not inner], inner.body,
                {a.id for a in inner.args.args})
    seed = pullback.args.args[0].id
    adjoints = set(ctx.reverse.adjoints.values()) | {seed}
    at = next((i for i, s in enumerate(body) if any(
        syntax.is_comment(t) and t.value.value.startswith(syntax.COMMENT + "grad of:")
        or isinstance(t, gast.Assign) and adjoints & set(syntax.names_stored(t))
        for t in syntax.in_order([s]))), len(body))
    forward, sweep = body[:at], list(body[at:])
    if sweep and isinstance(sweep[0], gast.Assign) and syntax.is_name(sweep[0].targets[0],
                                                                       seed):
        sweep[0] = syntax.assign(seed, syntax.const(1.0))     # (the seed reads the value)
    ret = sweep[-1] if sweep else None
    if (ctx.variant is Variant.VALUE_AND_GRAD and isinstance(ret, gast.Return)
            and isinstance(ret.value, gast.Tuple)):
        sweep[-1] = syntax.ret(ret.value.elts[1])             # (not the value returned)
    return forward, sweep, set()


def _read_per_iteration(fn, info, ctx):
    """[(name, shape only)]: the values the tape of loop `info` records that its reversed
    loop reads, as `fn` now is (the reversed loop of a list, or of the numba backend's
    arrays, which read the rows back into the names the loop unpacked)."""
    pushed = info.pushes[0].args[0]
    pushed = pushed.elts if isinstance(pushed, gast.Tuple) else [pushed]
    names = [(v.args[0].id, ctx.is_runtime_call(v, "like")) if isinstance(v, gast.Call)
             else (v.id, False) for v in pushed]
    unpacked = syntax.names_stored(info.reversed.target)
    loop = next((s for s in syntax.statements(fn) if isinstance(s, gast.For) and (
        info.tape in syntax.names_loaded(s.iter) or any(
            isinstance(t, gast.Assign) and info.tape in syntax.names_loaded(t.value)
            for t in s.body[:len(unpacked)]))), info.reversed)
    read = set(syntax.names_loaded(syntax.if_(syntax.const(True), loop.body)))
    if len(unpacked) != len(names):
        return names
    return [v for v, n in zip(names, unpacked) if n in read]


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
    """How the header names the rule of `op`: as the user spelled the operation (a call
    of a function that changes the objects it is given, by its name, not that of the
    version s2sad differentiates, which returns them: before_ad/attribute_writes.py)."""
    node = op.node
    if returns_its_writes(op.prim):
        original = marks.RECORD.of(op.prim).original
        steps = original.__qualname__.split(".")
        method = len(steps) > 1 and steps[-2] != "<locals>"    # (defined in a class)
        return f".{original.__name__}()" if method else original.__name__
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
