"""The exceptions s2sad raises.

Every error a user can meet is an `S2SADError`; each condition has its own class
whose message says what was expected, what was found, where, and how to fix it.
"""
import os
import sys
import warnings
from typing import NamedTuple


class S2SADError(Exception):
    """Base class of every error raised by s2sad."""


class UnsupportedSyntaxError(S2SADError, SyntaxError):
    """The function uses a construct s2sad cannot differentiate.

    It is also a `SyntaxError`: `filename`, `lineno`, `offset` and `text` point at the
    construct in the user's file (absolute line numbers), and the message suggests
    a rewrite.
    """

    def __init__(self, message, filename=None, lineno=None, offset=None, text=None):
        SyntaxError.__init__(self, message, (filename, lineno, offset, text))
        self.reason = message

    def __str__(self):
        return format_located(self.reason, self.filename, self.lineno, self.offset, self.text)


class MissingRuleError(S2SADError):
    """A differentiated value flows into a call that has no derivative rule and no
    Python source s2sad could read. Register a rule with `s2sad.defvjp` or mark the
    function non-differentiable with `s2sad.nondiff`."""


class CustomRuleError(S2SADError):
    """A custom rule returned what does not fit the function it is for: a
    `custom_vjp`'s backward function something other than one cotangent per positional
    argument, each of the argument's structure and shape (or None), or a `custom_jvp`'s
    rule something other than a value and a tangent of the value's structure and shape.
    The message names the rule's file and line, what it returned and what was expected."""


class NonScalarOutputError(S2SADError):
    """`grad` was asked for the gradient of a function whose output is not a scalar.
    Use `vjp` (or `jacrev`) for non-scalar outputs."""


class SourceUnavailableError(S2SADError):
    """The source of the function cannot be read (a builtin, a C extension, or a
    function defined in a REPL or by `exec`)."""


class GradientCheckError(S2SADError):
    """`check_grad` found a gradient that disagrees with central finite differences."""


class ExceptionPathError(S2SADError):
    """At run time, the code from a `try` block of a differentiated function raised an
    exception its `except` clauses catch. s2sad differentiates only the path on which
    the block raises nothing (its body, `else` and `finally`), so it stops instead of
    giving the derivative of a path the function did not take."""


class ExportError(S2SADError):
    """`s2sad.export` cannot write the derivative as a module of its own: the code reads
    something that has no source it can copy into the module (a lambda, a closure, an
    object that is not a constant, s2sad itself at run time), or was asked for an export
    it does not make."""


class NativeBackendError(S2SADError):
    """The function, or its derivative, uses a construct the numba backend
    (`backend="numba"`) cannot compile: a container, a `with` or `try` block, a call of
    s2sad's Python-only runtime helpers (broadcasting of unknown shapes, reductions
    along axes), a loop that records arrays. The message names the user's line; the
    Python backend (the default) differentiates the function."""


class ComplexValueError(S2SADError):
    """A complex value meets a value s2sad differentiates in a function whose rule holds
    for real values only (`np.emath`, `np.sign`, a write into an array; or, found
    at run time, a complex array argument or result of a call the code was compiled to
    take as real), a complex output reaches `grad` without `holomorphic=True`, or a
    complex argument a transform does not take: its derivative would be wrong. The
    message names the user's line and what to write instead (docs/complex.md)."""


class InternalError(S2SADError):
    """A compiler invariant broke. This is a bug in s2sad: please report it with the
    function that triggered it."""


def format_located(message, filename, lineno, offset=None, text=None):
    """`message` followed by the location and, when the line is known, a caret."""
    where = f"{filename}:{lineno}" if lineno else str(filename)
    if offset:
        where += f":{offset}"
    out = f"{where}: {message}"
    if text:
        line = text.rstrip("\n")
        stripped = line.lstrip()
        caret = " " * max((offset or 1) - 1 - (len(line) - len(stripped)), 0) + "^"
        out += f"\n    {stripped}\n    {caret}"
    return out


class BatchingLoopWarning(UserWarning):
    """A statement of a function `vmap` batches is applied item by item, in a Python loop:
    its primitive has no batching rule (correct, slower; see docs/vmap.md)."""


class UnconnectedInputWarning(UserWarning):
    """The output does not depend on a differentiated input; its gradient is zero."""


def defined_at(fn) -> str:
    """`file:line: ` of the `def` of the function `fn`, to begin a message about it; ""
    for an object without Python code."""
    code = getattr(fn, "__code__", None)
    return f"{code.co_filename}:{code.co_firstlineno}: " if code is not None else ""


class Place(NamedTuple):
    """Where a function is: its name, file and first line (for a warning about it)."""
    name: str
    filename: str
    first_line: int


def warn_unconnected(derivative):
    """Warn, the first time a derivative is handed to the user, that its function's
    output does not depend on some differentiated inputs; return `derivative`."""
    if not derivative.warned:
        derivative.warned = True
        src, params = derivative.unconnected
        for p in params:
            warnings.warn_explicit(
                f"{src.name}(): the output does not depend on {p!r} (through "
                "differentiable operations); its gradient is zero. s2sad refuses the code "
                f"that would lose a derivative unseen, so {p!r} reaches the output only "
                "through comparisons, int(), round(), shapes, or not at all (see "
                "docs/errors.md)", UnconnectedInputWarning,
                src.filename, src.first_line)
    return derivative


def outside_stacklevel():
    """The `stacklevel` that gives a warning the line of the first caller outside s2sad
    (the user's call), for the function that calls this one."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    return level


_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep
