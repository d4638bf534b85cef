"""Refusals deferred to run time: an untaken branch never makes a function fail.

A statement s2sad refuses (a call without a rule, a call it cannot resolve, a form it
does not take, a construct the numba backend cannot compile) inside an arm of an `if`
(at any depth, a loop in the arm included) does not refuse the whole function: the
statement and those after it in its block are replaced by `raise _s2s_refused(line)`,
which raises the very error (its class, its message naming the user's file and line)
when that code would run, and the function is compiled again (pipeline.compilation).
The function s2sad compiles is then the user's on every path that does not reach the
statement, and raises where it does: no derivative of a path it cannot follow is ever
returned, and the raise comes in the forward pass, before any derivative is computed.

A refusal outside any `if` arm (a loop body that runs whenever the function does
included), in a `try` or `with` block, in a nested function, or of another kind (an
argument the transform does not take, an output `grad` cannot seed) stays a refusal
when compiling: the user learns of it at once.
"""
from __future__ import annotations

import re

import gast

from .. import syntax
from . import source
from ..errors import (MissingRuleError, NativeBackendError, S2SADError,
                      UnsupportedSyntaxError)

#: The refusals a branch defers: those about one statement, located at its line.
DEFERRED = (MissingRuleError, UnsupportedSyntaxError, NativeBackendError)

#: The name the generated code raises a deferred refusal through.
NAME = "_s2s_refused"

_BLOCKS = {gast.If: ("body", "orelse"), gast.For: ("body", "orelse"),
           gast.While: ("body", "orelse")}


def deferred_line(exc: S2SADError, fn, refused: dict) -> int | None:
    """The user's line of the statement `exc` refuses, when the refusal may wait for
    that statement to run: `exc` is of a kind in `DEFERRED`, located in the file of
    `fn`'s source, at a statement in an arm of an `if` of the function (see `_found`),
    and with it and those `refused` before some path through the function still raises
    nothing; else None."""
    if not isinstance(exc, DEFERRED):
        return None
    try:
        src = source.capture(fn, copy=False)
    except S2SADError:
        return None     # (the source itself refused)
    if src.filename.startswith("<s2sad:"):
        return None     # (code s2sad generated, differentiated again: its lines are not the user's)
    line = _line_of(exc, src.filename)
    if line is None or line in refused or _found(src.node, line - src.first_line + 1) is None:
        return None
    node = rewritten(syntax.copied(src.node), {**refused, line: exc}, src.first_line)
    return None if syntax.always_raises(node.body) else line


def rewritten(node: gast.FunctionDef, refused: dict, first_line: int) -> gast.FunctionDef:
    """`node` (changed in place) with each statement at a line of `refused` ({the user's
    line: the error}) and the statements after it in its block replaced by the raise of
    that error."""
    for line in sorted(refused, reverse=True):
        found = _found(node, line - first_line + 1)
        if found is None:
            continue        # (in a block a refusal before it replaced)
        block, k = found
        raised = syntax.located_within(gast.Raise(exc=syntax.call(NAME, [
            syntax.const(line), syntax.const(syntax.COMMENT + _summary(refused[line]))]),
            cause=None), block[k])
        block[k:] = [raised]
    return node


def bindings(src) -> dict:
    """{`NAME`: its class} for code made from `src` that raises the refusals it defers
    (`src.refused`), else {}."""
    return {NAME: raiser(src.refused)} if src.refused else {}


class Refused(S2SADError):
    """What `_s2s_refused` denotes, a subclass (see `raiser`) whose `errors` are {line:
    the error refused there}: called with a line, it gives that error (the numba
    backend's code raises it too: Numba calls an exception class with the constants it
    was given)."""
    errors: dict = {}

    def __new__(cls, line, *comment):
        return cls.errors[line].with_traceback(None)


def raiser(refused: dict) -> type:
    """The `Refused` class of the errors of `refused` ({line: error})."""
    errors = {line: _detached(exc) for line, exc in refused.items()}
    return type(NAME, (Refused,), {"errors": errors, "__module__": __name__})


def _detached(exc):
    exc.__cause__ = exc.__context__ = None
    return exc.with_traceback(None)


def _line_of(exc, filename):
    if isinstance(exc, UnsupportedSyntaxError):
        return exc.lineno if exc.filename == filename else None
    message = str(exc)
    if not message.startswith(filename + ":"):
        return None
    found = re.match(r"(\d+)\b", message[len(filename) + 1:])
    return int(found.group(1)) if found else None


def _found(fn, line):
    """`(block, index)` of the statement of `fn` at `line` (relative to the tree), in a
    block reached through `if`, `for` and `while` statements only, one of them an `if`;
    None if there is none such."""
    block, branched, found = fn.body, False, None
    while True:
        k = next((k for k, s in enumerate(block) if s.lineno <= line <= s.end_lineno), None)
        if k is None:
            return found
        s = block[k]
        if type(s) not in _BLOCKS and line > s.lineno and isinstance(s, COMPOUND):
            return None     # (inside a `with`, a `try`, a nested function)
        found = (block, k) if branched else None
        inner = [getattr(s, f) for f in _BLOCKS.get(type(s), ())]
        inner = [b for b in inner if b and b[0].lineno <= line <= b[-1].end_lineno]
        if not inner:
            return found
        branched = branched or isinstance(s, gast.If)
        block = inner[0]


COMPOUND = (gast.With, gast.Try, gast.FunctionDef, gast.ClassDef, gast.AsyncWith,
            gast.AsyncFor, gast.AsyncFunctionDef, getattr(gast, "TryStar", gast.Try),
            getattr(gast, "Match", gast.Try))


def _summary(exc) -> str:
    """A line that says what `exc` refused: its class and the first clause of its
    message, for the comment beside the raise."""
    first = str(exc).split("\n")[0]
    first = re.sub(r"^.*?:\d+(:\d+)?: ", "", first)
    clause = re.split(r"[;(]", first)[0].strip().rstrip(",.")
    if len(clause) > 70:
        clause = clause[:70].rsplit(" ", 1)[0] + " ..."
    clause = re.sub(r"[^\x20-\x7e]|\\", "", clause).replace('"', "'")
    return f"{type(exc).__name__} when this runs: {clause}"
