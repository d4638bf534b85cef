"""The pieces of an exported module, and the names they read.

`s2sad.export` writes a derivative as a module of its own. The derivative's code reads
module-level names: the runtime helpers and rule functions s2sad bound for it, the
derivatives of the functions it calls, and the user's globals. `Pieces` follows every
such name to the object it denotes and to the source that makes that object, a piece:

- a module or a library's function or class: an `import`;
- a constant (a number, a string, a tuple of them, a NumPy dtype or small array): an
  assignment of its value as written by `literal`;
- a function or class of the user's: a copy of its source (without s2sad's decorators);
- one of s2sad's runtime helpers, constants or exception classes: a copy of the
  statement of s2sad's source that defines it;
- a derivative s2sad compiled: its generated source.

For the numba backend (`native`), the derivatives and your functions are written
decorated with `numba.njit` (with the options the backend compiled them with), and each
runtime helper copied brings its Numba version along (rules/numba_overloads.py), which
registers itself for the copy.

Each piece's own source is read in turn, so a helper that calls another helper, or reads
a module constant, brings it along. Then every object gets one name in the module (the
name the generated code uses where it can) and each piece is written with its names
renamed accordingly (`export_names.renamed`). What has no source to copy (a lambda, a
closure, an object that is not a constant, s2sad itself at run time) is an
`ExportError` that says where it is read.
"""
from __future__ import annotations

import ast
import builtins
import collections
import dataclasses
import importlib
import importlib.util
import inspect
import os
import re
import sys
import textwrap
import types
from typing import Callable

import numpy as np

from . import driver
from .errors import ExportError, InternalError, UnsupportedSyntaxError
from .export_names import column, identifiers, module_names, renamed
from .frontend import deferred
from .frontend.source import MISSING, is_library, numba_function
from .options import Variant
from .rules import registry, runtime

#: The largest array a constant is written out for, in elements.
LARGEST_ARRAY = 10_000


@dataclasses.dataclass(eq=False)
class Piece:
    """Some module-level source of the exported module: its `section` (see
    `export.SECTIONS`), its `text`, `env(name)`, the object a module-level name of the
    text denotes (MISSING if none), `where` it comes from (for errors), the names it
    binds (`defines`, {name: key}), and the module its text comes from (for an s2sad
    helper: where its other names are found)."""
    section: str
    text: str
    env: Callable
    where: str
    defines: dict = dataclasses.field(default_factory=dict)
    module: str | None = None
    edits: list = dataclasses.field(default_factory=list)     # [(line, start, end, text)]
    spans: list = dataclasses.field(default_factory=list)     # [(line, start, end, key)]
    reads: dict = dataclasses.field(default_factory=dict)     # {name: key}
    imported: tuple | None = None     # (module path, attribute or None) of an import
    key: tuple | None = None
    title: str = "the code"           # what it is, for errors
    needs_now: list = dataclasses.field(default_factory=list)  # when its statement runs
    jit: tuple = ()                   # numba.njit's options, for the numba backend


class Pieces:
    """The pieces that make an exported module, found from its derivatives: see the
    module docstring. `add_derivative` gives a derivative to write; `collect` follows
    every name; `name_of` is then each object's name in the module, and `written(piece)`
    a piece's text with those names. `native`, for the numba backend: {runtime helper:
    its Numba version} (see numba_runtime.versions), else None."""

    def __init__(self, special=(), native=None):
        self.pieces = []
        self.provider = {}          # key -> the piece that defines it
        self.preferred = {}         # key -> the name it would like, in order of need
        self.alive = list(special)  # objects whose id() is in a key
        self.builtins = set()       # builtin names the code reads
        self.special = {id(obj): piece for obj, piece in special}   # written by export
        self._derivatives = collections.deque()
        self._others = collections.deque()
        self.name_of = {}
        self.native = native

    # -- finding pieces ------------------------------------------------------------------
    def add_derivative(self, derivative, guard=None, where=""):
        """The piece of the compiled `derivative` (once); `guard`: lines to put first in
        its body, with an env for the names they read."""
        key = ("derivative", id(derivative))
        if key in self.provider:
            return key
        self.alive.append(derivative)
        text, overlay = derivative.source, {}
        if guard is not None:
            lines, overlay = guard
            body = text.split("\n", 1)
            text = body[0] + "\n" + "".join("    " + line + "\n" for line in lines) + body[1]
        name = derivative.fn.__name__
        jit = tuple(sorted(derivative.jit.items()))
        if self.native is not None:
            text, overlay = _njit_line(jit) + text, {**overlay, "numba": sys.modules["numba"]}
        piece = Piece("derivative", text, _DerivativeEnv(derivative, overlay),
                      where or _origin(derivative), {name: key},
                      title=f"the derivative of {derivative.unconnected[0].name}()", jit=jit)
        self._add(piece, key, name)
        return key

    def collect(self):
        """Read every piece found, and those they need, derivatives first (so that the
        names generated code uses are the names objects get)."""
        while self._derivatives or self._others:
            piece = (self._derivatives or self._others).popleft()
            self._read(piece)

    def _add(self, piece, key, name):
        piece.key = key
        self.pieces.append(piece)
        for defined, k in piece.defines.items():
            self.provider[k] = piece
            self.preferred.setdefault(k, defined)
        self.provider[key] = piece
        self.preferred[key] = name
        (self._derivatives if piece.section == "derivative" else self._others).append(piece)

    def _read(self, piece):
        found = module_names(piece.text)
        if piece.section == "derivative":
            self._keywords_of_jvp_calls(piece, found.tree)
        now = _run_at_import(found.tree)
        through = self._attributes_of_s2sad_modules(piece, found)
        for node in found.reads + found.writes:
            name = node.id
            if name in piece.defines or name in piece.reads or name in through:
                continue
            obj = piece.env(name)
            if obj is MISSING:      # read but defined nowhere: left as the code has it
                continue
            key = self.need(obj, name, piece)
            if key is not None:
                piece.reads[name] = key
            provider = self.provider.get(key)
            if provider is not None and provider not in piece.needs_now and id(node) in now:
                piece.needs_now.append(provider)

    def need(self, obj, name, piece):
        """The key of `obj`, which `piece` reads as `name`, after finding the piece that
        defines it (None for a builtin read under its own name)."""
        if getattr(builtins, name, MISSING) is obj:
            self.builtins.add(name)
            return None
        special = self.special.get(id(obj))
        if special is not None:
            key = special.defines[next(iter(special.defines))]
            if key not in self.provider:
                self._add(special, key, next(iter(special.defines)))
            return key
        if isinstance(obj, driver.CompiledDerivative):
            return self.add_derivative(obj)
        if isinstance(obj, type) and issubclass(obj, deferred.Refused):
            return self._refused(obj, name, piece)
        if isinstance(obj, BaseException):
            return self._error(obj, name, piece)
        if isinstance(obj, types.ModuleType):
            return self._module(obj, name, piece)
        if numba_function(obj) is not None and not _library(numba_function(obj)):
            return self._user(numba_function(obj), name, piece)
        plain = _plain(obj)
        if _in_s2sad(plain) and piece.section == "function":
            raise ExportError(
                f"{piece.where}: {piece.title} reads {name!r}, "
                f"{getattr(plain, '__qualname__', type(plain).__name__)} of s2sad, which "
                "works by running s2sad, and an exported module runs without it. Export a "
                "function whose code (and the code of the functions it calls) does not call "
                "s2sad when it runs: in a custom_vjp's rules, write the derivative they need")
        if _in_s2sad(plain) or (piece.module and _located(piece.module, name)):
            return self._helper(plain, name, piece)
        if (inspect.isfunction(plain) or inspect.isclass(plain)) and not _library(plain):
            return self._user(plain, name, piece)
        imported = _importable(obj)
        if imported is not None:
            key = ("import",) + imported
            if key not in self.provider:
                self._add(Piece("import", "", _no_env, piece.where, imported=imported), key,
                          name)
            return key
        value = literal(obj)
        if value is None:
            raise ExportError(
                f"{piece.where}: {piece.title} reads {name!r}, {_a(obj)}, which an "
                "exported module cannot write as source: it copies numbers, strings, "
                "tuples, lists and dicts of them, NumPy dtypes and arrays of up to "
                f"{LARGEST_ARRAY} numbers, modules, and the functions and classes "
                "defined at the top level of a module. Pass the object to the function "
                "as an argument instead of reading it as a global")
        key = ("value", name, value)
        if key not in self.provider:
            if len(value) > 80 and type(obj) is dict:
                value = "{\n" + "".join(f"    {literal(k)}: {_string(v)},\n"
                                         for k, v in obj.items()) + "}"
            section = "helper" if piece.section == "helper" else "value"
            self._add(Piece(section, f"{name} = {value}", _value_env, piece.where,
                            {name: key}), key, name)
        return key

    def _module(self, module, name, piece):
        if module.__name__.split(".")[0] == "s2sad":
            raise ExportError(
                f"{piece.where}: {piece.title} reads {name!r}, the module "
                f"{module.__name__}, and an exported module runs without s2sad. Keep "
                "s2sad out of the code that is exported (a function decorated with "
                "s2sad.custom_vjp is copied without its decorator)")
        key = ("import", module.__name__, None)
        if key not in self.provider:
            self._add(Piece("import", "", _no_env, piece.where,
                            imported=(module.__name__, None)), key, name)
        return key

    def _user(self, obj, name, piece):
        key = ("user", id(obj))
        if key in self.provider:
            return key
        where = _defined_at(obj)
        lam = obj.__name__ == "<lambda>"
        nested = "<locals>" in obj.__qualname__
        if lam or nested or getattr(obj, "__closure__", None):
            what = "a lambda" if lam else "a function nested in another" if nested else (
                "a closure")
            raise ExportError(
                f"{piece.where}: {piece.title} reads {name!r}, {what} ({where}), which an "
                "exported module cannot copy: it copies the functions defined with def at "
                "the top level of a module. Define it so" + (
                    "" if lam and not nested else ", passing what it reads from the "
                    "enclosing function as arguments"))
        try:
            text = textwrap.dedent(inspect.getsource(obj))
        except (OSError, TypeError) as exc:
            raise ExportError(f"{where}: the source of {obj.__qualname__}, which "
                              f"{piece.title} reads, cannot be read ({exc})") from None
        env = _globals_env(_globals(obj))
        text = _without_s2sad_decorators(text, env)
        if (self.native is not None and inspect.isfunction(obj)
                and not _numba_decorated(text, env)):     # Numba code calls it
            text, env = _njit_line(piece.jit) + text, _with_numba(env)
        self.alive.append(obj)
        line = where.rpartition(":")[2]
        text = f"# from {os.path.basename(where.rpartition(':')[0])}, line {line}\n" + text
        self._add(Piece("function", text, env, where, {obj.__name__: key},
                        title=f"your function {obj.__name__}()", jit=piece.jit),
                  key, obj.__name__)
        return key

    def _refused(self, obj, name, piece):
        """The class that makes the errors of the refusals the code defers to run time
        (frontend/deferred.py), written out with their messages."""
        errors, env = obj.errors, {"Exception": Exception}
        key = ("refused", tuple((line, type(e), str(e)) for line, e in sorted(errors.items())))
        if key not in self.provider:
            made = []
            for line, exc in sorted(errors.items()):
                env[type(exc).__name__] = type(exc)
                made.append(f"            {line}: {_made(exc)},\n")
            text = (f"class {name}(Exception):\n"
                    '    """The error s2sad refused the statement at `line` with: the code\n'
                    '    raises it where it reaches that statement (docs/errors.md)."""\n'
                    "    def __new__(cls, line):\n"
                    "        return {\n" + "".join(made) + "        }[line]\n")
            self._add(Piece("helper", text, env.get, piece.where, {name: key},
                            title="the refusals deferred"), key, name)
        return key

    def _error(self, exc, name, piece):
        """An error the code raises where a check it makes when it runs fails (that
        SciPy's namespace is NumPy's, that an index is no view, that a batch's branches
        agree in shape), written out as a call of its class, which is copied."""
        key = ("error", name, _made(exc))
        if key not in self.provider:
            self._add(Piece("helper", f"{name} = {_made(exc)}", {
                type(exc).__name__: type(exc)}.get, piece.where, {name: key},
                title=f"the error {name}"), key, name)
        return key

    def _helper(self, obj, name, piece):
        """A piece copied from s2sad's source: the statement that defines `obj`."""
        if obj is runtime.respecialize:
            raise InternalError("export: respecialize has no replacement")
        home = getattr(obj, "__module__", None) if callable(obj) else None
        found = _definition(home, obj) if home else None
        if found is None and piece.module is not None:
            found = _located(piece.module, name)
        if found is None:
            what = getattr(obj, "__qualname__", type(obj).__name__)
            fix = (" Call the function without s2sad.checkpoint in the code you export"
                   if "checkpoint" in what else "")
            raise ExportError(
                f"{piece.where}: {piece.title} reads {name!r}, {what} of s2sad, which "
                "works by running s2sad, and an exported module runs without it." + fix)
        module, index, stmt = found
        key = ("helper", module, _bound_name(stmt, obj, module, name))
        if key in self.provider:
            return key
        first = min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", [])])
        lines = _source(module)[1][first - 1:stmt.end_lineno]
        env = _globals_env(vars(sys.modules[module]))
        for d in getattr(stmt, "decorator_list", []):     # (`@helper(...)` declares it)
            if _evaluated(d.func if isinstance(d, ast.Call) else d, env) is registry.helper:
                lines[d.lineno - first:d.end_lineno - first + 1] = [""] * (
                    d.end_lineno - d.lineno + 1)
        defines = {n: ("helper", module, n) for n in _statement_names(stmt)}
        self.alive.append(obj)
        helper = Piece("helper", "".join(lines), env, f"{module}", defines, module=module,
                       key=key, title=f"s2sad's {', '.join(defines)}")
        self.pieces.append(helper)
        for n, k in defines.items():
            self.provider[k] = helper
            self.preferred.setdefault(k, _helper_name(n, sys.modules[module]))
        if name.startswith("_s2s_"):
            self.preferred[key] = name
        self._others.append(helper)
        version = (self.native or {}).get(obj) if callable(obj) else None
        if version is not None:     # registers itself for the copy of `obj`
            self._helper(version, version.__name__, helper)
        return key

    def _attributes_of_s2sad_modules(self, piece, found):
        """In a helper, `R.count(...)` of a module of s2sad's imported as `R` reads the
        copy of `count`: the names of such modules, whose attributes become spans."""
        if piece.section != "helper":
            return set()
        modules = {n.id for n in found.reads if isinstance(piece.env(n.id), types.ModuleType)
                   and piece.env(n.id).__name__.split(".")[0] == "s2sad"}
        lines = piece.text.splitlines(True)
        for node in ast.walk(found.tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id in modules):
                module = piece.env(node.value.id)
                key = self._helper(getattr(module, node.attr), node.attr,
                                   dataclasses.replace(piece, module=module.__name__))
                piece.spans.append((node.lineno, column(lines, node.lineno, node.col_offset),
                                    column(lines, node.lineno, node.end_col_offset), key))
                if self.provider[key] not in piece.needs_now:
                    piece.needs_now.append(self.provider[key])
        return modules

    def _keywords_of_jvp_calls(self, piece, tree):
        """A call of another function's `g_jvp` passes the tangents by name (as
        backends._jvp_call does): `g_jvp(a, b, a_dot)` is written `g_jvp(a, b, a_dot=a_dot)`."""
        callees = piece.env.callees
        lines = piece.text.splitlines(True)
        for call in ast.walk(tree):
            if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)):
                continue
            callee = callees.get(call.func.id)
            if callee is None or callee.variant is not Variant.JVP:
                continue
            names = driver.compiled_callee(callee, piece.env.request).tangent_names
            for arg, tangent in zip(call.args[callee.nargs:], names):
                at = column(lines, arg.lineno, arg.col_offset)
                piece.edits.append((arg.lineno, at, at, f"{tangent}="))

    # -- names ---------------------------------------------------------------------------
    def allocate(self):
        """One name per object: the one it would like, else that name numbered."""
        used = set()
        for piece in self.pieces:
            if piece.text:
                used |= identifiers(piece.text)
        taken = set(self.builtins)
        for key, name in self.preferred.items():
            new, k = name, 0
            while new in taken or (k and new in used):
                k += 1
                new = f"{name}_{k}"
            self.name_of[key] = new
            taken.add(new)

    def written(self, piece):
        """The text of `piece` with the names of the module."""
        if piece.section == "import":
            return _import_line(piece.imported, self.name_of[piece.key])
        names = {n: self.name_of[k] for n, k in {**piece.reads, **piece.defines}.items()}
        spans = [(line, start, end, self.name_of[key]) for line, start, end, key in piece.spans]
        return renamed(piece.text, names, piece.edits + spans)

    def in_order(self, section):
        """The pieces of `section` in the order found, each after those of the section it
        needs when its statement runs (a base class, a call at module level)."""
        found = [p for p in self.pieces if p.section == section]
        if section == "helper":     # functions, then constants, then classes
            found.sort(key=lambda p: ("def " not in p.text.split("\n", 1)[0],
                                      p.text.startswith("class ")))
        out, seen = [], set()

        def visit(piece):
            if id(piece) in seen:
                return
            seen.add(id(piece))
            for needed in piece.needs_now:
                if needed.section == section:
                    visit(needed)
            out.append(piece)
        for piece in found:
            visit(piece)
        return out


# -- what an object is, and where its source is ----------------------------------------
def _run_at_import(tree):
    """The ids of the nodes of `tree` that run when its statements do: not those in the
    body of a function."""
    later = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            later.update(id(n) for stmt in node.body for n in ast.walk(stmt))
        elif isinstance(node, ast.Lambda):
            later.update(id(n) for n in ast.walk(node.body))
    return {id(n) for n in ast.walk(tree)} - later


def _plain(obj):
    """The Python function behind a `custom_vjp`, `custom_jvp` or `checkpoint` (whose
    decorator the copy leaves out)."""
    return obj.primal if getattr(obj, "s2s_custom", None) else obj


def _value_env(name):
    return np if name == "np" else getattr(builtins, name, MISSING)



def _in_s2sad(obj):
    module = getattr(obj, "__module__", None) if callable(obj) or inspect.isclass(obj) else None
    if module is None:
        module = type(obj).__module__
    return (module or "").split(".")[0] == "s2sad" and obj is not None


def _library(obj):
    module = sys.modules.get(getattr(obj, "__module__", None) or "")
    path = getattr(module, "__file__", None) or ""
    return (is_library(obj) or "site-packages" in path or "dist-packages" in path
            or (getattr(obj, "__module__", "") or "").split(".")[0] in sys.stdlib_module_names)


def _globals(obj):
    if inspect.isclass(obj):
        return vars(sys.modules[obj.__module__])
    return obj.__globals__


def _globals_env(namespace):
    def env(name):
        value = namespace.get(name, MISSING)
        if value is MISSING:
            value = getattr(builtins, name, MISSING)
        return value
    return env


def _no_env(name):
    return MISSING


class _DerivativeEnv:
    """What a name of a derivative's code denotes: a derivative it calls, a binding of
    its compilation (a runtime helper, a rule's function), or a global of the user's."""

    def __init__(self, derivative, overlay):
        fn = derivative.fn
        self.callees = dict(derivative.callees)
        self.request = getattr(derivative, "request", None)
        self.closure = dict(zip(fn.__code__.co_freevars,
                                (c.cell_contents for c in fn.__closure__ or ())))
        self.overlay, self.globals = overlay, fn.__globals__
        self.origin, self.name = _origin(derivative), derivative.unconnected[0].name

    def __call__(self, name):
        if name in self.overlay:
            return self.overlay[name]
        callee = self.callees.get(name)
        if callee is not None:
            if callee.args or callee.kwargs:
                raise ExportError(
                    f"{self.origin}: the derivative of {self.name}() calls that of "
                    f"{callee.fn.__qualname__}() with values bound to it (a method called "
                    "on an object, or a functools.partial), which an exported module "
                    "cannot write; call the function with those values as arguments "
                    "instead")
            return driver.compiled_callee(callee, self.request)
        if name in self.closure:
            return self.closure[name]
        return _globals_env(self.globals)(name)


def _origin(derivative):
    """'file:line' of the function a derivative differentiates."""
    found = re.search(r", from (.*)>$", derivative.filename.split(" #")[0] + ">"
                      if " #" in derivative.filename else derivative.filename)
    return found.group(1) if found else derivative.filename


def _a(obj):
    name = type(obj).__name__
    return f"an {name} object" if name[:1].lower() in "aeio" else f"a {name} object"


def _string(value, width=80):
    """`literal(value)` as an item of a dict written one item a line; a long string as
    adjacent literals over lines of at most `width` characters."""
    text = literal(value)
    if type(value) is not str or len(text) <= width - 30:
        return text
    parts, line = [], ""
    for word in value.split(" "):
        if line and len(repr(line + " " + word)) > width:
            parts.append(line + " ")
            line = word
        else:
            line = f"{line} {word}" if line else word
    return "(\n" + "\n".join(" " * 8 + repr(p) for p in parts + [line]) + ")"


def _defined_at(obj):
    try:
        return f"{inspect.getsourcefile(obj)}:{inspect.getsourcelines(obj)[1]}"
    except (OSError, TypeError):
        return getattr(obj, "__qualname__", repr(obj))


def _without_s2sad_decorators(text, env):
    """`text` (a def) without the lines of its decorators that are s2sad's
    (`@s2sad.custom_vjp`), which the copy of a function does without."""
    node = ast.parse(text).body[0]
    lines = text.splitlines(True)
    for d in getattr(node, "decorator_list", []):
        if _in_s2sad(_evaluated(d.func if isinstance(d, ast.Call) else d, env)):
            for i in range(d.lineno - 1, d.end_lineno):
                lines[i] = ""
    return "".join(lines)


def _numba_decorated(text, env):
    """Whether the def `text` has a decorator of Numba's (`@numba.njit(...)`)."""
    node = ast.parse(text).body[0]
    found = [_evaluated(d.func if isinstance(d, ast.Call) else d, env)
             for d in getattr(node, "decorator_list", [])]
    return any((getattr(obj, "__module__", None) or "").split(".")[0] == "numba"
               for obj in found)


def _njit_line(jit):
    """The decorator that compiles a function as the numba backend does, with numba.njit's
    options `jit` ((name, value) pairs)."""
    options = ", ".join(f"{k}={v!r}" for k, v in jit)
    return f"@numba.njit({options})\n" if options else "@numba.njit\n"


def _with_numba(env):
    """`env`, in which `numba` (of the decorator `_njit_line` writes) is Numba."""
    def with_numba(name):
        return sys.modules["numba"] if name == "numba" else env(name)
    return with_numba


def _evaluated(expr, env):
    if isinstance(expr, ast.Name):
        return env(expr.id)
    if isinstance(expr, ast.Attribute):
        base = _evaluated(expr.value, env)
        return MISSING if base is MISSING else getattr(base, expr.attr, MISSING)
    return MISSING


def _importable(obj):
    """(module, attribute) that `from module import attribute` gives `obj` by, preferring
    a public module (`scipy.special`, not `scipy.special._ufuncs`), or None."""
    name = getattr(obj, "__name__", None)
    module = getattr(obj, "__module__", None)
    if not isinstance(name, str) or module == "__main__" or _in_s2sad(obj):
        return None
    if not isinstance(module, str):     # a ufunc: the public modules that have it
        return next(((m, name) for m in _public_modules()
                     if getattr(sys.modules[m], name, None) is obj), None)
    if not (_library(obj) or inspect.isbuiltin(obj)):
        return None
    parts = module.split(".")
    paths = [".".join(parts[:k]) for k in range(1, len(parts) + 1)]
    public = [p for p in paths if not any(part.startswith("_") for part in p.split("."))]
    for path in public + [module]:
        try:
            if getattr(importlib.import_module(path), name, None) is obj:
                return path, name
        except ImportError:
            continue
    return None


def _public_modules():
    """The modules of libraries imported so far whose names have no part starting with
    `_`: NumPy's and SciPy's first (where ufuncs come from), shortest first (`numpy`
    before `numpy.linalg`)."""
    names = [m for m in list(sys.modules) if not any(p.startswith("_") for p in m.split("."))
             and m.split(".")[0] not in ("s2sad", "__main__") and _library_module(m)]
    return sorted(names, key=lambda m: (m.split(".")[0] not in ("numpy", "scipy"),
                                        m.count("."), m))


def _library_module(name):
    path = getattr(sys.modules.get(name), "__file__", None) or ""
    return (name.split(".")[0] in sys.stdlib_module_names or "site-packages" in path
            or "dist-packages" in path)


def _import_line(imported, name):
    module, attribute = imported
    if attribute is None:
        parent, _, last = module.rpartition(".")
        if name == module:
            return f"import {module}\n"
        if parent and name == last:
            return f"from {parent} import {last}\n"
        return f"import {module} as {name}\n"
    return f"from {module} import {attribute}" + (
        f" as {name}\n" if name != attribute else "\n")


def literal(value, depth=0):
    """Source that makes `value` again (NumPy as `np`), or None when it is not a constant
    an exported module writes out."""
    if depth > 20:
        return None
    kind = type(value)
    if value is None or kind in (bool, int, str, bytes):
        return repr(value)
    if kind is float or kind is complex:
        text = repr(value)
        return text if "inf" not in text and "nan" not in text else f"{kind.__name__}({text!r})"
    if kind in (tuple, list, set, frozenset):
        items = [literal(v, depth + 1) for v in value]
        if None in items:
            return None
        if kind is tuple:
            return f"({', '.join(items)}{',' if len(items) == 1 else ''})"
        if kind is list:
            return f"[{', '.join(items)}]"
        text = "{" + ", ".join(sorted(items)) + "}" if items else "set()"
        return text if kind is set else f"frozenset({text if items else ''})"
    if kind is dict:
        pairs = [(literal(k, depth + 1), literal(v, depth + 1)) for k, v in value.items()]
        if any(k is None or v is None for k, v in pairs):
            return None
        return "{" + ", ".join(f"{k}: {v}" for k, v in pairs) + "}"
    if isinstance(value, np.dtype):
        return f"np.dtype({str(value)!r})" if np.dtype(str(value)) == value else None
    if isinstance(value, np.generic) and value.dtype.kind in "biufc":
        return f"np.{value.dtype.name}({literal(value.item(), depth + 1)})"
    if (kind is np.ndarray and value.dtype.kind in "biufc" and value.size <= LARGEST_ARRAY
            and (value.dtype.kind in "biu" or np.isfinite(value).all())):
        return f"np.array({value.tolist()!r}, dtype=np.{value.dtype.name})"
    return None


# -- s2sad's own source ----------------------------------------------------------------
_sources = {}


def _source(module):
    """(tree, lines) of the s2sad module `module`, read once."""
    if module not in _sources:
        text = inspect.getsource(sys.modules[module])
        _sources[module] = (ast.parse(text), text.splitlines(True))
    return _sources[module]


def _statement_names(stmt):
    """The module-level names `stmt` binds."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [stmt.name]
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
    return [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]


def _made(exc):
    """The source of a call that makes the error `exc` again (its class and arguments)."""
    args = ((exc.reason, exc.filename, exc.lineno, exc.offset, exc.text)
            if isinstance(exc, UnsupportedSyntaxError) else exc.args)
    return f"{type(exc).__name__}({', '.join(literal(a) for a in args)})"


def _located(module, name):
    """(module, index, statement) of the statement of s2sad's `module` that defines
    `name`, through its `from .x import name` imports; None if there is none."""
    tree, _ = _source(module)
    for index, stmt in enumerate(tree.body):
        if isinstance(stmt, ast.ImportFrom) and stmt.level:
            for alias in stmt.names:
                if (alias.asname or alias.name) == name:
                    package = sys.modules[module].__package__
                    source = importlib.util.resolve_name("." * stmt.level + (stmt.module or ""),
                                                         package)
                    return _located(source, alias.name)
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
                               ast.Assign, ast.AnnAssign)):
            if name in _statement_names(stmt):
                return module, index, stmt
    return None


def _definition(module, obj):
    """`_located` for an object of s2sad's `module`, found by what the module calls it."""
    if module not in sys.modules or not module.startswith("s2sad"):
        return None
    names = [k for k, v in vars(sys.modules[module]).items() if v is obj]
    names.sort(key=lambda k: k != getattr(obj, "__name__", None))
    for name in names:
        found = _located(module, name)
        if found is not None:
            return found
    return None


def _bound_name(stmt, obj, module, name):
    """Which of the names `stmt` binds is `obj`."""
    for n in _statement_names(stmt):
        if getattr(sys.modules[module], n, MISSING) is obj:
            return n
    return name


def _helper_name(name, module):
    """The name a copied s2sad definition has in the module: `_s2s_` and its own name
    (as generated code spells runtime helpers), `_S2S_` for a constant; an exception
    class keeps its name."""
    obj = getattr(module, name, None)
    if inspect.isclass(obj):
        return name
    bare = name.lstrip("_")
    return ("_S2S_" if bare.isupper() else "_s2s_") + bare
