"""Export: a derivative written as a Python module of its own, which runs without s2sad.

`export(f, path)` writes the derivatives of `f` (`f_vjp`, `f_grad` and
`f_value_and_grad` in reverse mode, `f_jvp` in forward mode) to a module, with the
derivatives of the functions they call, the functions of yours they call, the imports
and constants they read, and copies of the runtime helpers of s2sad they use (see
`export_pieces`), under a header that says what it was made from and how to make it
again. The code is specialised on the types of `args`, as `grad` specialises it (by
default on floats; for a function that uses NumPy, by default the kinds of the
parameters are left open, so that each may be a number or an array); a call with
arguments of other types raises `TypeError`.

>>> import importlib.util, math, os, tempfile
>>> import s2sad
>>> def f(x, y):
...     return math.sin(x) * y
>>> path = os.path.join(tempfile.mkdtemp(), "f_derivatives.py")
>>> text = s2sad.export(f, path, wrt=(0, 1))
>>> print(text[text.index("def f_grad"):text.index("def f_value_and_grad")].strip())
def f_grad(x, y):
    if x.__class__ is not float or y.__class__ is not float:
        return _s2s_respecialize(x, y)
    # reverse mode of f() with respect to x, y
    # the pullback reads: t, x, y
    # rules: math.sin, *
    t = math.sin(x)
    # grad of: return math.sin(x) * y
    y_bar = t
    x_bar = y * cos(x)
    return (x_bar, y_bar)
>>> spec = importlib.util.spec_from_file_location("f_derivatives", path)
>>> exported = importlib.util.module_from_spec(spec)
>>> spec.loader.exec_module(exported)
>>> exported.f_grad(0.5, 2.0) == s2sad.grad(f, wrt=(0, 1))(0.5, 2.0)
True
>>> exported.f_grad(1, 2.0)
Traceback (most recent call last):
    ...
TypeError: f_grad() was exported for x (float), y (float); it was called with x (int), ...
"""
from __future__ import annotations

import ast
import builtins
import importlib.metadata
import inspect
import os
import shlex
import sys
from typing import Callable

import numpy as np

from . import backends, driver, emit
from .analysis.value_kinds import guarded
from .compilation import (Wrt, arg_types_of, complex_key, default_arg_types, parameters,
                          patterns_of, refuse_complex, wrt_names)
from .errors import ExportError, InternalError, warn_unconnected
from .export_pieces import Piece, Pieces
from .frontend import source
from .frontend.source import MISSING
from .options import Options, Variant
from .rules import numba_runtime, pytrees, runtime

#: The derivatives each mode exports, by default all of them.
KINDS = {"reverse": ("vjp", "grad", "value_and_grad"), "forward": ("jvp",)}

#: The code an exported module is written in: Python, or Python that numba.njit
#: compiles (the numba backend's `grad` and `value_and_grad`, see docs/numba.md).
BACKENDS = ("python", "numba")

#: What the numba backend exports: the fused gradients (`f_vjp` returns a closure, its
#: pullback, which Numba cannot compile; forward mode has no numba backend yet).
NUMBA_KINDS = ("grad", "value_and_grad")

#: The order of an exported module.
SECTIONS = ("import", "value", "derivative", "function", "helper")

_SECTION_TITLES = {
    "function": "# Your functions that the derivatives call, copied from their modules.",
    "helper": "# The runtime helpers of s2sad {version} that the derivatives call, copied "
              "from its source.",
}


def export(f: Callable, path: str | os.PathLike | None = None, mode: str = "reverse",
           wrt: Wrt = 0, kind: str | tuple | None = None, args: tuple | None = None,
           backend: str = "python", command: str | None = None,
           command_without_at: str | None = None) -> str:
    """Write the derivatives of `f` as a module of their own, which runs without s2sad,
    to `path` (unless it is None), and return its source.

    In reverse mode (`mode`), the module has `f_vjp(*args) -> (value, pullback)` (as
    `s2sad.vjp` runs it), `f_grad` (`s2sad.grad`) and `f_value_and_grad`
    (`s2sad.value_and_grad`), or those named in `kind`; in forward mode, `f_jvp(*args,
    *tangents) -> (value, tangent)`, as `s2sad.jvp` runs it. `wrt` is what they
    differentiate, as for `grad`. The code is specialised on the types of `args`
    (example arguments; for arrays, their dtype and which axes have length 1); called
    with others, the exported functions raise `TypeError`. Without `args`, it is
    specialised on floats, or, when `f` uses NumPy, written for numbers and arrays alike
    (the kinds of the parameters left open: each argument may be a number or a real
    array, a float array for those differentiated). `backend` is the code written:
    "python", or "numba" (without `args`, specialised on arrays, which Numba compiles
    for floats too):
    `f_grad` and `f_value_and_grad` as `grad(f, backend="numba")` makes them, each
    function of the module decorated with `numba.njit` (callable from Python and from
    your own `@numba.njit` functions; Numba compiles them for the types of each call),
    and the Numba versions of the runtime helpers they use; the module imports Numba.
    `command` is the command the header says makes the module again (by default, the
    `s2sad export` command that does). Called with arguments of other types, the
    exported functions' `TypeError` gives the command that exports them for those:
    `command_without_at` (by default, when `command` is not given, the `s2sad export`
    command without `--at`) with the arguments' `--at` (numbers as they are, arrays as
    lists of zeros of their dtype and shape pattern), or `command` for arguments a
    command line cannot write (for the code written for numbers and arrays alike, the
    call of `s2sad.export` with the arguments of the call).

    What the module cannot have (a lambda or closure it would have to copy, an object
    that is not a constant, s2sad itself at run time) raises `ExportError`, which says
    where it is read and how to do without it.
    """
    _refuse_options(f, mode, backend)
    wanted = _kinds_wanted(mode, kind, backend)
    if getattr(f, "s2s_derivative", False):
        f = f.primal
    target = driver.target(f)
    src = source.capture(target, copy=False)
    params, names = parameters(src), wrt_names(src, wrt)
    if args is not None:
        refuse_complex(target, [params.index(n) for n in names], args)
        _refuse_registered(target, [params.index(n) for n in names], args)
    arg_types = default_arg_types(target) if args is None else arg_types_of(target, args)
    open_kinds = args is None and backend == "python" and np.ndarray in arg_types.values()
    if open_kinds:      # numbers or arrays: the code for kinds left open
        arg_types = {}
    patterns = None if args is None or backend == "numba" else patterns_of(target, args)
    command_at = command_without_at if command else _command(src, path, mode, names, kind,
                                                              None, backend)
    if not os.path.isfile(src.filename):
        command_at = None       # (the sentence that says how to export it again)
    command = command or _command(src, path, mode, names, kind, args, backend)
    refused = command
    if open_kinds:      # what it refuses, a command line cannot write
        command_at, refused = None, _export_call(src, path, mode, wrt, kind, params)
    entries = _entries(f, mode, wrt, arg_types, patterns, wanted, backend)
    pieces = _pieces(src, entries, params, arg_types, patterns, names, mode, refused,
                     _native(backend), command_at, open_kinds)
    text = _header(src, mode, names, params, arg_types, patterns, entries, pieces, command,
                   isinstance(wrt, (tuple, list)), backend, open_kinds)
    text += _body(pieces)
    _check(text)
    if path is not None:
        with open(path, "w") as out:
            out.write(text)
    return text


def _refuse_registered(target, indices, args):
    """Refuse an argument differentiated (at `indices`) that is or holds an instance of
    a class registered with s2sad.register_pytree, or of a plain class (see
    rules/pytrees.py): the exported module has no registry."""
    for i in indices:
        cls = _registered_in(args[i]) if i < len(args) else None
        if cls is not None:
            how = ("registered with s2sad.register_pytree" if pytrees.registered(cls) else
                   "a plain class, which s2sad takes apart by its attributes")
            raise ExportError(
                f"argument {i} of {target.__qualname__} is or holds a {cls.__qualname__}, "
                f"which is {how}, and an exported module runs without s2sad's registry of "
                "pytrees; make the class a dataclass to export its derivatives")


def _registered_in(x):
    if pytrees.by_attributes(type(x)):
        return type(x)
    return next((c for c in map(_registered_in, pytrees.children(x)) if c is not None), None)


def _refuse_options(f, mode, backend):
    if mode not in KINDS:
        raise ExportError(f"mode={mode!r}: the mode is 'reverse' or 'forward'")
    if backend not in BACKENDS:
        raise ExportError(f"backend={backend!r}: the exported code is Python "
                          "(backend='python') or Python that Numba compiles (backend='numba')")
    if backend == "numba" and mode != "reverse":
        raise ExportError(f"mode={mode!r} with backend='numba': the numba backend exports "
                          "the gradient (f_grad, f_value_and_grad), in reverse mode; export "
                          "forward mode's f_jvp with backend='python'")
    if inspect.ismethod(f):
        raise ExportError(f"{f.__qualname__} is a bound method: export the function "
                          f"({f.__qualname__}) and pass the instance as its first argument "
                          "(in args, an instance of the class)")


def _native(backend):
    """What export_pieces.Pieces takes as `native`: for the numba backend, the Numba
    versions of the runtime helpers (which imports Numba), else None."""
    if backend != "numba":
        return None
    try:
        return numba_runtime.versions()
    except ImportError:
        raise ExportError("backend='numba' needs Numba: pip install \"s2sad[numba]\"") from None


def _pieces(src, entries, params, arg_types, patterns, wrt, mode, command, native=None,
            command_at=None, open_kinds=False):
    """The pieces of the module (see export_pieces), found from the derivatives in
    `entries` and named; `_s2s_respecialize`, which the guards call, is this module's
    own: it raises TypeError, whose message is `command` or, for arguments a command line
    can write, `command_at` (the command without `--at`, or None) with their `--at`.
    `native`: see `_native`. `open_kinds`: the code was compiled with the kinds of the
    parameters left open, and each function starts with `_open_guard`'s test."""
    exported_for = {d.fn.__name__: _exported_for(
        params, arg_types, patterns if kind in ("grad", "value_and_grad") else None, mode,
        wrt if open_kinds else None)
        for d, kind in entries}
    special = Piece("helper", _RESPECIALIZE, _special_env(exported_for, command, command_at,
                                                          len(params)), "export",
                    {"_s2s_respecialize": ("special", "respecialize")})
    pieces = Pieces(special=[(runtime.respecialize, special)], native=native)
    for derivative, kind in entries:
        guard = (_open_guard(params, wrt, derivative) if open_kinds else
                 _vjp_guard(params, arg_types, wrt, derivative) if kind == "vjp" else None)
        pieces.add_derivative(derivative, guard, f"{src.filename}:{src.first_line}")
    pieces.collect()
    pieces.allocate()
    for derivative, _ in entries:
        if pieces.name_of[("derivative", id(derivative))] != derivative.fn.__name__:
            raise InternalError(f"export: {derivative.fn.__name__} was renamed")
    return pieces


def _kinds_wanted(mode, kind, backend="python"):
    available = NUMBA_KINDS if backend == "numba" else KINDS[mode]
    wanted = available if kind is None else (
        tuple(k.strip() for k in kind.split(",")) if isinstance(kind, str) else tuple(kind))
    if backend == "numba" and "vjp" in wanted:
        raise ExportError(f"kind={kind!r} with backend='numba': f_vjp returns its pullback, "
                          "a closure, which Numba cannot compile; export "
                          f"{' or '.join(NUMBA_KINDS)} with backend='numba', or f_vjp with "
                          "backend='python'")
    unknown = [k for k in wanted if k not in available]
    if unknown or not wanted:
        raise ExportError(f"kind={kind!r}: {mode} mode exports "
                          f"{', '.join(available)} (one or several)"
                          + (" with backend='numba'" if backend == "numba" else ""))
    return wanted


def _entries(f, mode, wrt, arg_types, patterns, wanted, backend="python"):
    """[(compiled derivative, kind)]: what `grad`, `value_and_grad`, `vjp` and `jvp` run
    (with `backend`)."""
    if mode == "forward":
        wrt = tuple(wrt) if isinstance(wrt, (tuple, list)) else (wrt,)
        return [(driver.derivative(f, wrt, arg_types, Options(
            Variant.JVP, guard_bindings=False)), "jvp")]
    # (an exported module is a snapshot: it copies what the derivative reads, and its
    # guards test only the types of the arguments)
    options = {kind: Options(Variant(kind), release=True, patterns=patterns,
                             guard_bindings=False) for kind in ("grad", "value_and_grad")}
    options = {"vjp": Options(), **options}
    if backend == "numba":      # as numba_api.NativeDerivative makes them
        jit = backends.jit_of(f)
        options = {kind: backends.NUMBA.options(Variant(kind), jit)
                   for kind in ("grad", "value_and_grad")}
    out = []
    for kind in options:
        if kind in wanted:
            derivative = driver.derivative(f, wrt, arg_types, options[kind],
                                           backends.named(backend))
            out.append((warn_unconnected(derivative), kind))
    return out


def _vjp_guard(params, arg_types, wrt, derivative):
    """The first lines of an exported `f_vjp`, which s2sad's has not (s2sad.vjp compiles
    it for the types of its arguments): the test that they are those it was made for,
    as `grad`'s guard tests them. With the objects the names in them denote."""
    types = {p: k for p, k in arg_types.items() if isinstance(k, type)}
    overlay = {"_s2s_respecialize": runtime.respecialize}
    tests = []
    for p in guarded(params, types):
        name = "ndarray" if types[p] is np.ndarray else types[p].__name__
        overlay[name] = types[p]
        tests.append(f"{p}.__class__ is not {name}")
    tests += [f"{p}.dtype.kind != 'c'" for p in guarded(params, types)
              if arg_types.get(complex_key(p))]
    tests += [f"{p}.dtype.kind != 'f'" for p in wrt if types.get(p) is np.ndarray]
    tests += [f"{p}.dtype.kind == 'c'" for p in guarded(params, types)
              if p in derivative.assumed_real]
    if not tests:
        return None
    return _guard_lines(tests, derivative), overlay


def _open_guard(params, wrt, derivative):
    """The first lines of an exported function compiled with the kinds of its
    parameters left open (see `export`): the test that each argument is a number or a
    real array (a float array for those differentiated), which that code computes with.
    With the objects the names in them denote."""
    overlay = {"_s2s_respecialize": runtime.respecialize,
               "_s2s_number_or_float_array": number_or_float_array,
               "_s2s_number_or_real_array": number_or_real_array}
    tests = [f"not _s2s_number_or_{'float' if p in wrt else 'real'}_array({p})"
             for p in params]
    return _guard_lines(tests, derivative), overlay


def number_or_float_array(x):
    """Whether `x` is a number (int or float) or a NumPy array of floats."""
    return x.__class__ in (float, int, np.float64) or (
        x.__class__ is np.ndarray and x.dtype.kind == "f")


def number_or_real_array(x):
    """Whether `x` is a number (int or float) or a NumPy array of real numbers."""
    return x.__class__ in (float, int, np.float64) or (
        x.__class__ is np.ndarray and x.dtype.kind in "biuf")


def _guard_lines(tests, derivative):
    """`if <any of tests>: return _s2s_respecialize(<the parameters>)`, as lines."""
    signature = ast.parse(derivative.source.split("\n", 1)[0] + " pass").body[0].args
    passed = [a.arg for a in signature.posonlyargs + signature.args]
    passed += [f"*{signature.vararg.arg}"] if signature.vararg else []
    passed += [f"{a.arg}={a.arg}" for a in signature.kwonlyargs]
    passed += [f"**{signature.kwarg.arg}"] if signature.kwarg else []
    lines = emit.if_any("", tests, width=96).split("\n")
    return lines + [f"    return _s2s_respecialize({', '.join(passed)})"]


# -- what the header says --------------------------------------------------------------
def _exported_for(params, arg_types, patterns, mode, open_wrt=None):
    """The arguments the code is specialised on, as `_s2s_respecialize` reports them;
    for code compiled with the kinds left open, those its guard takes (`open_wrt`: the
    parameters differentiated)."""
    if open_wrt is not None:
        return ", ".join(f"{p} (a number or {'float' if p in open_wrt else 'real'} array)"
                         for p in params) + (
            " and tangents that are not None" if mode == "forward" else "")
    parts = []
    for p in params + sorted(k for k in arg_types if "." in k):
        kind = arg_types.get(p)
        if not isinstance(kind, type):
            continue
        if kind is np.ndarray and patterns and p in patterns:
            dtype, pattern = patterns[p]
            shape = ", ".join("1" if one else "*" for one in pattern)
            shape += "," if len(pattern) == 1 else ""
            parts.append(f"{p} ({np.dtype(dtype).name} array of shape ({shape}))")
        elif kind is np.ndarray:
            parts.append(f"{p} (complex array)" if arg_types.get(complex_key(p)) else
                         f"{p} (array)")
        elif kind.__module__ == "builtins":
            parts.append(f"{p} ({kind.__name__})")
        else:       # a class of the user's, which the module has a copy of
            parts.append(f"{p} ({kind.__name__} of this module)")
    text = ", ".join(parts) or "any arguments"
    return text + (" and tangents that are not None" if mode == "forward" else "")


def _header(src, mode, wrt, params, arg_types, patterns, entries, pieces, command, as_tuple,
            backend="python", open_kinds=False):
    version = _version()
    lines = [f'"""Derivatives of {src.name}() from {os.path.basename(src.filename)}, '
             f"line {src.first_line}, written by s2sad {version}.", ""]
    for_ = _exported_for(params, arg_types, patterns, mode, wrt if open_kinds else None)
    compiled = ", compiled with Numba" if backend == "numba" else ""
    lines += _wrapped(f"{mode.capitalize()} mode, with respect to {', '.join(wrt)}, for "
                      f"{for_}{compiled}:")
    lines.append("")
    grads = ", ".join(f"{p}_bar" for p in wrt)
    grads = f"({grads})" if as_tuple else grads
    for derivative, kind in entries:
        call = derivative.source.split("\n", 1)[0][len("def "):-1]
        lines.append("    " + call + " -> " + {
            "vjp": f"(value, pullback); pullback(value_bar) -> {grads}",
            "grad": grads, "value_and_grad": f"(value, {grads})",
            "jvp": "(value, value_dot)"}[kind])
    lines.append("")
    star = " (* is any length but 1.)" if "*" in for_ else ""
    classes = sorted({k.__name__ for k in arg_types.values() if isinstance(k, type)
                      and k.__module__ != "builtins" and k is not np.ndarray})
    if classes:
        star += (f" Arguments of your classes ({', '.join(classes)}) are instances of this "
                 "module's copies of them.")
    needs = sorted({p.imported[0].split(".")[0] for p in pieces.pieces
                    if p.section == "import"} - set(sys.stdlib_module_names))
    called = f"Called with arguments of other types, the functions raise TypeError.{star} "
    if open_kinds:
        called = ("The code is written for numbers and arrays alike (runtime helpers do "
                  "what the kinds of the arguments settle); exported with --at, it is "
                  f"specialised on the kinds given, and faster. {called}")
    if backend == "numba":
        called = (f"The functions are numba.njit functions, which your own @numba.njit "
                  "functions can call too; Numba compiles them for the types of each call "
                  "(the code was written for the kinds above: numbers or arrays). "
                  f"{src.name}_vjp is not here: its pullback is a closure, which Numba "
                  "cannot compile (export it with --backend python). ")
    lines += _wrapped(f"{called}"
                      f"This module imports {', '.join(needs) or 'only the standard library'}, "
                      "not s2sad. Do not edit it: make it again with")
    lines += ["", "    " + command.replace("\\", "\\\\"), '"""', ""]
    return "\n".join(lines)


def _wrapped(text, width=88):
    lines, line = [], ""
    for word in text.split(" "):
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return lines + [line]


def _version():
    """The version of the s2sad package running (its `__version__`, else the installed
    distribution's)."""
    version = getattr(sys.modules.get(__package__), "__version__", None)
    if version:
        return version
    try:
        return importlib.metadata.version("s2sad")
    except importlib.metadata.PackageNotFoundError:
        return "(version unknown)"


def _command(src, path, mode, wrt, kind, args, backend="python"):
    """The `s2sad export` command that writes this module again, or a sentence saying
    how to when its arguments cannot be written on a command line."""
    filename = src.filename
    if not os.path.isfile(filename):
        return (f"s2sad.export({src.name}, ...) (the function is not in a file the "
                "command line can read)")
    relative = os.path.relpath(filename)
    filename = relative if not relative.startswith("..") else filename
    words = ["s2sad", "export", f"{filename}:{src.name}"]
    if path is not None:
        words += ["-o", os.fspath(path)]
    if mode != "reverse":
        words += ["--mode", mode]
    words += ["--wrt", ",".join(wrt)]
    if kind is not None:
        words += ["--kind", kind if isinstance(kind, str) else ",".join(kind)]
    if args is not None:
        written = [_argument(a) for a in args]
        if None in written:
            return (f"s2sad.export({src.name}, ..., args=...) with arguments of the types "
                    "above (the command line writes only numbers and arrays of numbers)")
        words += ["--at"] + written
    if backend != "python":
        words += ["--backend", backend]
    return " ".join(shlex.quote(w) for w in words)


def _export_call(src, path, mode, wrt, kind, params):
    """The call of `s2sad.export` that exports the derivatives again for arguments like
    those of a call (in Python: the command line writes only numbers and arrays)."""
    words = [src.name, repr(os.fspath(path)) if path is not None else "None"]
    words += [f"mode={mode!r}"] if mode != "reverse" else []
    words += [f"wrt={wrt!r}"] if wrt != 0 else []
    words += [f"kind={kind!r}"] if kind is not None else []
    call = f"s2sad.export({', '.join(words)}, args=({', '.join(params)}{',' * (len(params) == 1)}))"
    return f"{call}, with the arguments of that call (in Python)"


def _argument(value):
    """An argument as `--at` takes it: a number, or an array of the same dtype and
    pattern (which axes have length 1) written as a list (of zeros: only its type
    matters)."""
    if type(value) in (int, float):
        return repr(value)
    if type(value) is np.ndarray and value.ndim and value.dtype in (np.float64, np.int64):
        zero = "0.0" if value.dtype == np.float64 else "0"
        text = zero
        for n in reversed(value.shape):
            text = "[" + ", ".join([text] * (1 if n == 1 else 2)) + "]"
        return text
    return None


# -- the body ------------------------------------------------------------------------------
def _body(pieces):
    """The pieces, section by section (see SECTIONS): imports sorted, then constants, one
    line each, then the definitions, each section after its title."""
    chunks = []
    for section in SECTIONS:
        texts = [pieces.written(p).rstrip("\n") + "\n" for p in pieces.in_order(section)]
        if not texts:
            continue
        if section == "import":
            chunks.append("".join(sorted(set(texts), key=lambda t: (t.startswith("from"), t))))
            continue
        if section == "value":
            chunks.append("".join(texts))
            continue
        title = _SECTION_TITLES.get(section)
        if title:
            texts[0] = title.format(version=_version()) + "\n\n\n" + texts[0]
        chunks.append("\n\n".join(texts))
    return "\n\n".join(chunks)


def _check(text):
    """The module is Python, and imports nothing of s2sad."""
    tree = ast.parse(text)
    for node in ast.walk(tree):
        modules = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                   [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
        if any(m.split(".")[0] == "s2sad" for m in modules):
            raise InternalError("export: the exported module imports s2sad")


_RESPECIALIZE = '''\
def _s2s_respecialize(*args, **kwargs):
    """What an exported derivative calls first when its arguments are not of the types
    it was specialised on (for an array, its dtype and which axes have length 1):
    s2sad would compile it again for them; an exported module cannot."""
    caller = sys._getframe(1).f_code
    found = ", ".join(f"{p} ({a.dtype} array of shape {a.shape})" if hasattr(a, "dtype")
                      else f"{p} ({type(a).__name__} of this module)"
                      if type(a).__module__ == __name__ else f"{p} ({type(a).__name__})"
                      if type(a).__module__ == "builtins"
                      else f"{p} ({type(a).__module__}.{type(a).__qualname__})"
                      for p, a in zip(caller.co_varnames, args))
    raise TypeError(f"{caller.co_name}() was exported for "
                    f"{_S2S_EXPORTED_FOR[caller.co_name]}; it was called with {found}. "
                    f"Export it again for such arguments: {_s2s_command_for(args)}")


def _s2s_command_for(args):
    """The command that exports the derivatives again for arguments like `args` (those
    of the function's parameters): `--at` with each a number, or an array written as a
    list of zeros of its dtype and of its axes of length 1, which `_S2S_COMMAND_AT`
    ends with; `_S2S_COMMAND` for arguments a command line cannot write."""
    written = []
    for a in args[:_S2S_PARAMETERS] if _S2S_COMMAND_AT else (None,):
        if type(a) in (int, float):
            written.append(repr(a))
        elif getattr(a, "ndim", 0) and str(getattr(a, "dtype", "")) in ("float64", "int64"):
            text = "0.0" if str(a.dtype) == "float64" else "0"
            for n in reversed(a.shape):
                text = "[" + ", ".join([text] * (1 if n == 1 else 2)) + "]"
            written.append(shlex.quote(text))
        else:
            return _S2S_COMMAND
    return " ".join([_S2S_COMMAND_AT, "--at", *written])
'''


def _special_env(exported_for, command, command_at, parameters):
    values = {"sys": sys, "shlex": shlex, "_S2S_EXPORTED_FOR": exported_for,
              "_S2S_COMMAND": command, "_S2S_COMMAND_AT": command_at,
              "_S2S_PARAMETERS": parameters}

    def env(name):
        value = values.get(name, MISSING)
        return value if value is not MISSING else getattr(builtins, name, MISSING)
    return env
