"""The structure of an object that a derivative is specialised on: the classes of the
user's objects it holds, the lengths of its lists of them, and the functions stored in
them (`for layer in model.layers: x = layer.forward(x)`, `self.act(z)`).

It is a dict of keys that name a place by the Python expression that reads it, from a
root (a parameter, or `self` in a method): `"layers[0]": Dense`, the class of an item;
`"len(layers)": 2`, the length of a list or tuple of objects of the user's classes (up
to `MAX_ITEMS` of them); `"model.layers[1].act()": np.tanh`, a function stored in a
field; `"model.layers": list`, the class of a field holding such a list or an object.
`compilation.arg_types_of` adds it to an argument's type, the guard of the derivative
tests it, and a call passes the part an argument holds to the callee's version.

>>> class Dense:
...     def __init__(self, w, act):
...         self.w, self.act = w, act
>>> import math
>>> found = of("layers", [Dense(1.0, math.tanh), Dense(2.0, abs)])
>>> [(k, getattr(v, "__name__", v)) for k, v in found.items()]
[('len(layers)', 2), ('layers[0]', 'Dense'), ('layers[0].act()', 'tanh'), ('layers[1]', 'Dense'), ('layers[1].act()', 'abs')]
>>> rerooted(found, "layers[1]", "self")
{'self.act()': <built-in function abs>}
"""
import numbers
import re
import types

import gast
import numpy as np

from .. import syntax
from ..rules.arrays import is_duck_array_type

#: The most items of a list or tuple whose structure a derivative is specialised on
MAX_ITEMS = 32
#: How many objects deep the structure of an argument is followed (`model.blocks[0]
#: .layers[1].act` is three: the model, a block, a layer)
DEPTH = 4


def user_class(cls):
    """Whether `cls` is a class of the user's, defined in Python, whose instances s2sad
    resolves methods through: not a number, array, container, function or module type,
    nor a named tuple (a record, read by field), nor an array of another library that
    NumPy dispatches to (a Dask or CuPy array, see rules/arrays.py)."""
    return (isinstance(cls, type) and cls.__module__ not in _NOT_USER
            and not cls.__module__.startswith("numpy") and not is_duck_array_type(cls)
            and not issubclass(cls, (tuple, list, dict, set, numbers.Number, np.ndarray,
                                     np.generic, BaseException)))


_NOT_USER = {"builtins", "functools", "types", "collections", "typing", "abc"}


def function_value(a):
    """Whether the argument `a` is a function whose identity the code is specialised on
    (a Python function, a builtin, a NumPy ufunc): calls of the parameter are calls of
    it (before_ad/resolve_calls.py), and the guard tests that the argument is it."""
    return isinstance(a, (types.FunctionType, types.BuiltinFunctionType, np.ufunc))


def objects(value):
    """Whether `value` is a list or tuple of 1 to `MAX_ITEMS` objects of the user's
    classes."""
    return (type(value) in (list, tuple) and 0 < len(value) <= MAX_ITEMS
            and all(user_class(type(v)) for v in value))


def of(path, obj, depth=DEPTH):
    """The structure of `obj` read through the expression `path` (see the module
    docstring): of a list or tuple of objects, or of an object of the user's classes
    (not of s2sad's own: a gradient `grad` made, a custom rule, are values of their own)."""
    out = {}
    if type(obj).__module__.partition(".")[0] != "s2sad":
        _walk(path, obj, depth, out)
    return out


def _walk(path, obj, depth, out):
    if depth == 0:
        return
    if objects(obj):
        out[f"len({path})"] = len(obj)
        for k, item in enumerate(obj):
            out[f"{path}[{k}]"] = type(item)
            _walk(f"{path}[{k}]", item, depth, out)
    elif user_class(type(obj)):
        for name, value in getattr(obj, "__dict__", {}).items():
            if not isinstance(name, str) or not name.isidentifier():
                continue
            if function_value(value):
                out[f"{path}.{name}()"] = value
            elif objects(value) or (user_class(type(value))
                                    and type(value).__module__.partition(".")[0] != "s2sad"):
                out[f"{path}.{name}"] = type(value)
                _walk(f"{path}.{name}", value, depth - 1, out)


def key(obj):
    """What a guard compares of `obj`'s structure (see `of`)."""
    return tuple(of("", obj).items())


_STEP = re.compile(r"\.(\w+)|\[(\d+)\]")


def place(k):
    """(the expression a structure key reads, its kind: "class", "len" or "function")."""
    if k.startswith("len(") and k.endswith(")"):
        return k[4:-1], "len"
    if k.endswith("()"):
        return k[:-2], "function"
    return k, "class"


def steps(expr):
    """The root and the steps of an expression of a structure key: `"m.layers[1].act"`
    is ("m", ("layers", 1, "act"))."""
    root = re.match(r"\w+", expr).group(0)
    return root, tuple(a if a else int(i) for a, i in _STEP.findall(expr, len(root)))


def order(k):
    """A sort key putting the tests of a structure in an order that can run: a list's
    class before its length, its length before its items."""
    expr, kind = place(k)
    root, path = steps(expr)
    return (root, path, ("class", "len", "function").index(kind))


def structural(k):
    """Whether `k`, a key of a derivative's argument types, is one of a structure
    (a function in a field, or deeper than a parameter's own field `"p.a"`, see
    compilation.arg_types_of)."""
    if "(" not in k and "[" not in k:      # (asked at each read of a context's types)
        return k.count(".") > 1
    return k.startswith("len(") or "[" in k or "." in k


def rerooted(structure, path, root):
    """The part of `structure` below the expression `path`, read from `root` instead."""
    out = {}
    for k, v in structure.items():
        expr, kind = place(k)
        if expr.startswith(path) and expr[len(path):len(path) + 1] in (".", "["):
            new = root + expr[len(path):]
            out[f"len({new})" if kind == "len" else new + "()" if kind == "function"
                else new] = v
        elif expr == path and kind == "len":
            out[f"len({root})"] = v
        elif expr == path and kind == "function":
            out[f"{root}()"] = v
    return out


def handed_on(fn, root, structure, skip=None):
    """Whether the function `fn` hands the parameter `root`, or an object it reads
    through fields (`root.a.b`), to code that may change its structure: passed to a call
    (but the call `skip`, a loop's `zip(...)` that only reads it), or a method called on
    it (but a function stored in a field called, `self.act(z)`, one of `structure`). The
    structure known when the derivative was called may then not hold where the function
    reads it."""
    for n in syntax.walk(fn):
        if not isinstance(n, gast.Call) or n is skip:
            continue
        func = dotted(n.func)
        if func is not None and "." in func and func.split(".")[0] == root and (
                f"{func}()" not in structure):
            return True
        if any(dotted(a) is not None and dotted(a).split(".")[0] == root
               for a in n.args + [k.value for k in n.keywords]):
            return True
    return False


def dotted(e):
    """"a.b.c" for a name or an attribute chain of one, else None."""
    if isinstance(e, gast.Name):
        return e.id
    if isinstance(e, gast.Attribute):
        base = dotted(e.value)
        return None if base is None else f"{base}.{e.attr}"
    return None
