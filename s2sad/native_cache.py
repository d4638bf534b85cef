"""The numba backend's derivatives cached on disk, across processes (see docs/numba.md).

Numba keeps a function's machine code on disk (`cache=True`) only for a function defined
in a file, which it keys by that file; the generated code is made by `exec`, its names
bound through closure cells. So the code of a derivative is written to a module of its
own in the cache directory (`$S2SAD_CACHE_DIR`, else `~/.cache/s2sad`; `S2SAD_CACHE_DIR=`
empty turns it off), its names the module's globals, and compiled with `cache=True`. The
module is named by the digest of all that its machine code depends on: the generated
source, the value of each name it reads (Numba compiles a global's value into the code),
Numba's, NumPy's and s2sad's versions, and the source of s2sad's runtime helpers and their
Numba versions. The transform runs in each process as before (the guards hold as they do in memory); what a
later process skips is Numba's compile.

Numba compiles the machine code of what a code calls into its own, and does not look at
it again when it loads that code from disk. So the digest of a derivative that calls other
derivatives (`late`: the driver links them) or functions of the user's (`calls`: the
backend compiles them too) follows them: a derivative called is in it by its own digest
(what it calls included; one that calls a derivative up the chain, recursion, by how many
calls up), a function of the user's by its code, its defaults and closure values and the
values of the globals it reads, the functions among them followed the same way. A change
of any of them is a new digest, and Numba compiles the new entry.
"""
from __future__ import annotations

import builtins
import functools
import hashlib
import importlib.metadata
import importlib.util
import inspect
import linecache
import os
import sys
import types

import numpy as np

from .frontend import guards



#: The modules whose functions and constants the code may read: their versions are in the
#: digest (s2sad's runtime helpers, by their source).
_MODULES = ("numpy", "math", "s2sad")

#: The folder of s2sad's rules, whose runtime helpers' source is in the digest.
_RULES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "rules")


def directory() -> str | None:
    """The cache directory: `$S2SAD_CACHE_DIR`, else `$XDG_CACHE_HOME/s2sad` or
    `~/.cache/s2sad`; None when `S2SAD_CACHE_DIR` is set empty (no disk cache)."""
    given = os.environ.get("S2SAD_CACHE_DIR")
    if given is not None:
        return given or None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "s2sad")


#: Raised when entries an older s2sad wrote may be wrong (2: a function of the user's
#: compiled before a global it reads changed was compiled into the code of the new value's
#: digest, with the old value).
GENERATION = 2


@functools.lru_cache(maxsize=1)
def _versions() -> str:
    """s2sad's, Numba's, NumPy's and Python's versions, and the digest of the source of
    s2sad's runtime helpers and of their Numba versions (which Numba compiles into the
    code)."""
    digest = hashlib.sha256()
    for name in ("runtime.py", "tangents.py", "numba_overloads.py", "numba_reductions.py",
                 "numba_numpy.py"):
        with open(os.path.join(_RULES, name), "rb") as f:
            digest.update(f.read())
    return (f"s2sad {sys.modules[__package__].__version__} ({GENERATION}), numba "
            f"{importlib.metadata.version('numba')}, numpy {np.__version__}, python "
            f"{sys.version.split()[0]}, helpers {digest.hexdigest()[:16]}")


def _described(value) -> str | None:
    """What in `value` the machine code depends on, as text; None for a value whose
    description would not settle it (a function of the user's, a derivative, an object)."""
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
        return f"{type(value).__name__} {value!r}"
    if isinstance(value, tuple):
        items = [_described(v) for v in value]
        return None if None in items else f"tuple ({', '.join(items)})"
    if isinstance(value, np.generic):
        return f"{value.dtype} {value!r}"
    if isinstance(value, np.ndarray):        # (Numba compiles a global array into the code)
        data = hashlib.sha256(np.ascontiguousarray(value).tobytes()).hexdigest()
        return f"array {value.dtype} {value.shape} {data}"
    if isinstance(value, types.ModuleType):
        return f"module {value.__name__}" if value.__name__ in _MODULES else None
    if value is getattr(builtins, getattr(value, "__name__", ""), None):
        return f"builtin {value.__name__}"
    module = getattr(value, "__module__", None) or ""
    if callable(value) and module.split(".")[0] in _MODULES and (
            module.split(".")[0] != "s2sad" or module.startswith("s2sad.rules.")):
        name = getattr(value, "__qualname__", None) or getattr(value, "__name__", None)
        if name is not None and _found(module, name) is value:
            return f"function {module}.{name}"
    return None


def global_names(code):
    """The names `code` and the code nested in it read as globals (with the names of
    attributes, which may be the same)."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= global_names(const)
    return names


def _found(module, qualname):
    """The object `module.qualname` names, or None."""
    obj = sys.modules.get(module)
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
    return obj


def _code_text(code) -> str:
    """A code object as text that is the same in every process for the same code: its
    bytecode, names and constants (the code nested in it likewise)."""
    consts = []
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            consts.append(_code_text(c))
        elif isinstance(c, frozenset):      # (its order changes with string hashing)
            consts.append(f"frozenset {sorted(map(repr, c))}")
        else:
            consts.append(f"{type(c).__name__} {c!r}")
    return (f"code {code.co_name} {code.co_code.hex()} {code.co_argcount} "
            f"{code.co_kwonlyargcount} {code.co_names} {code.co_varnames} "
            f"{code.co_freevars} {code.co_cellvars} [{', '.join(consts)}]")


def _users_text(fn, stack=()) -> str | None:
    """A function of the user's, a Python function or a Numba one, as what its machine
    code depends on: its code, defaults, closure values, and the values of the globals it
    reads, the functions among them followed (one up the chain of calls, recursion, by
    how many calls up); None when a value is one the digest cannot settle."""
    options = ""
    if hasattr(fn, "py_func") and hasattr(fn, "targetoptions"):     # (a Numba dispatcher)
        options, fn = f"numba {sorted(fn.targetoptions.items())!r} ", fn.py_func
    if not inspect.isfunction(fn):
        return None
    for up, seen in enumerate(reversed(stack)):
        if seen is fn:
            return f"{options}function {fn.__qualname__}, {up + 1} calls up"
    values = [("default", v) for v in fn.__defaults__ or ()]
    values += [("default " + k, v) for k, v in sorted((fn.__kwdefaults__ or {}).items())]
    values += [("closure " + n, c.cell_contents)
               for n, c in zip(fn.__code__.co_freevars, fn.__closure__ or ())]
    values += [("global " + n, fn.__globals__[n]) for n in sorted(global_names(fn.__code__))
               if n in fn.__globals__]
    lines = [f"{options}function {fn.__module__}.{fn.__qualname__} "
             f"{_code_text(fn.__code__)}"]
    for what, v in values:
        text = _described(v)
        if text is None and (inspect.isfunction(v) or hasattr(v, "py_func")):
            text = _users_text(v, stack + (fn,))
        if text is None:
            return None
        lines.append(f"  {what} = {text}")
    return "\n".join(lines)


def _key(fn, jit: dict, calls: dict, late: dict, stack=()) -> str | None:
    """What the machine code of the generated function `fn` depends on, as text (see the
    module's docstring); None when the digest cannot settle it. `calls`: {name: function
    of the user's}; `late`: {name: the derivative it calls by that name (its `fn`, `jit`,
    `native_calls` and `native_late()` read), None for one the digest cannot follow}."""
    if fn.__code__.co_freevars and fn.__closure__ is None:
        return None
    bindings = _bindings(fn)
    described = {name: _described(v) for name, v in bindings.items()
                 if name not in calls and name not in late}
    if None in described.values():
        return None
    source = "".join(linecache.getlines(fn.__code__.co_filename))
    if f"def {fn.__name__}(" not in source:
        return None
    lines = [_versions(), repr(sorted(jit.items())), source]
    lines += [f"{n} = {d}" for n, d in sorted(described.items())]
    for name, obj in sorted(calls.items()):
        text = _users_text(obj)
        if text is None:
            return None
        lines.append(f"{name} = {text}")
    for name, d in sorted(late.items()):
        if d is None:
            return None
        up = next((k + 1 for k, f in enumerate(reversed(stack + (fn,))) if f is d.fn), None)
        if up is not None:
            lines.append(f"{name} = the derivative {up} calls up")
            continue
        text = _key(d.fn, d.jit, d.native_calls, d.native_late(), stack + (fn,))
        if text is None:
            return None
        lines.append(f"{name} = derivative {hashlib.sha256(text.encode()).hexdigest()}")
    return "\n".join(lines)


def module_on_disk(name, text, bindings, again=None):
    """The module `name` of s2sad's cache directory, its file written with `text` where
    it is missing (whole, whatever other processes do), run with the globals `bindings`
    (where this process has it already, given `again`, by default `bindings`), so that
    Numba keeps the machine code of its functions on disk; None where the directory
    cannot be written."""
    folder = directory()
    if folder is None:
        return None
    path = os.path.join(folder, name + ".py")
    try:
        if not os.path.exists(path):
            os.makedirs(folder, exist_ok=True)
            temporary = f"{path}.{os.getpid()}.tmp"
            with open(temporary, "w") as f:
                f.write(text)
            os.replace(temporary, path)
    except OSError:
        return None
    module = sys.modules.get(name)
    if module is None:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        module.__dict__.update(bindings)
        spec.loader.exec_module(module)
        sys.modules[name] = module      # (Numba finds the module of its code by its name)
    else:
        module.__dict__.update(bindings if again is None else again)
    return module


def _bindings(fn) -> dict:
    """The values of the names the generated function `fn` reads: its closure's, and the
    globals of the user's module it reads."""
    bindings = dict(zip(fn.__code__.co_freevars,
                        (c.cell_contents for c in fn.__closure__ or ())))
    for name in global_names(fn.__code__):
        if name not in bindings and name in fn.__globals__:
            bindings[name] = fn.__globals__[name]
    return bindings


def cached_copy(fn, jit: dict, calls=None, late=None):
    """A copy of the generated function `fn` defined in a module file of the cache
    directory (its closure values the module's globals), whose Numba machine code Numba
    can keep on disk; None when there is no cache directory, when `fn`'s code reads a
    value (or calls a function or a derivative, `calls` and `late` as `_key` takes them)
    that its digest cannot settle, or when the directory cannot be written. The names
    `late` are bound when the driver links them (emit.bind_late): the module's globals
    follow (`fn.s2s_copy_globals`)."""
    folder = directory()
    calls, late = calls or {}, late or {}
    if folder is None:
        return None
    key = _key(fn, jit, calls, late)
    if key is None:
        return None
    source = "".join(linecache.getlines(fn.__code__.co_filename))
    digest = hashlib.sha256(key.encode()).hexdigest()[:32]
    name = f"s2sad_{fn.__name__}_{digest}"
    bindings = _bindings(fn)
    # (the names the module's own lines read: those of the defaults' expressions, which
    # the copy then takes from `fn`, the objects the user's function holds)
    outer = compile(source, name, "exec").co_names
    bindings.update({n: fn.__globals__[n] for n in outer
                     if n not in bindings and n in fn.__globals__})
    module = module_on_disk(
        name, f"# s2sad: {fn.__name__}, compiled by Numba and kept on disk\n"
        f"# {_versions()}\n{source}", bindings,
        # (the same digest: the same code and values; these derivatives' links)
        again={n: v for n, v in bindings.items() if v is not None})
    if module is None:
        return None
    fn.s2s_copy_globals = module.__dict__
    copy = module.__dict__[fn.__name__]
    copy.__qualname__ = fn.__qualname__
    for part in ("__defaults__", "__kwdefaults__"):
        guards.set_quietly(copy, part, getattr(fn, part))
    return copy
