"""NativeCheck: refuse, before Numba sees it, generated code that Numba cannot compile
(`backend="numba"`), with a `NativeBackendError` naming the user's line.

Takes the gradient as after_ad/native_tapes.py leaves it and leaves it unchanged, or
refuses it: a call of one of s2sad's runtime helpers that has no overload for Numba
(rules/numba_runtime.py), a list of values written out (an empty one, which Numba
types from what is appended to it, is compiled), a dict or set, a `with` or `try`
block, a nested function, a call of another Python function's derivative whose backend is not
native, or of a Python function that is neither a Numba function nor one Numba knows.
A Numba typing error would name generated code; this names the user's.

>>> from s2sad import pipeline
>>> from s2sad.errors import NativeBackendError
>>> def f(x):
...     xs = [x, 2.0 * x]
...     return xs[0] * xs[1]
>>> try:
...     pipeline.stage_source(f, "native_check", arg_types={"x": float})
... except NativeBackendError as exc:
...     print(exc)
<doctest s2sad.after_ad.native_check[2]>:2: the numba backend cannot compile a list ([x, 2.0 * x]); differentiate this function with the Python backend (the default), or rewrite the line
    xs = [x, 2.0 * x]
"""
import inspect
import types

import gast
import numpy as np

from .. import syntax
from ..errors import NativeBackendError
from ..rules.registry import helper_facts
from . import native_lists

_CONTAINERS = (gast.List, gast.Dict, gast.Set, gast.ListComp, gast.DictComp, gast.SetComp,
               gast.GeneratorExp, gast.Lambda, gast.Starred, gast.Yield, gast.Await)
_BLOCKS = (gast.With, gast.Try, gast.FunctionDef, gast.ClassDef, gast.Global,
           gast.Nonlocal)
#: Builtins the numba backend's generated code may call.
_BUILTINS = {abs, min, max, len, range, float, int, bool, round, reversed, enumerate, zip,
             print, isinstance, sum}


def run(fn, ctx):
    """The pass (the numba backend's)."""
    # the names of the derivatives it calls; those bound to a tuple (the axes of a
    # reduction along several)
    names = ({name for name, _ in ctx.callees},
             {s.targets[0].id for s in syntax.statements(fn) if isinstance(s, gast.Assign)
              and isinstance(s.targets[0], gast.Name) and isinstance(s.value, gast.Tuple)})
    for top in fn.body:
        for s in syntax.statements(top) if not isinstance(top, _BLOCKS) else [top]:
            reason = _reason(s, ctx, names)
            if reason is not None:
                raise NativeBackendError(
                    f"{ctx.src.where(s)}: the numba backend cannot compile {reason}; "
                    "differentiate this function with the Python backend (the default), "
                    f"or rewrite the line\n    {ctx.src.line_text(s).strip()}")
    return fn


def _reason(s, ctx, names):
    """Why Numba cannot compile statement `s` (its own parts, not nested statements), or
    None."""
    if isinstance(s, _BLOCKS):
        kind = {gast.With: "a with block", gast.Try: "a try block",
                gast.FunctionDef: "a nested function"}.get(type(s), type(s).__name__)
        return f"{kind} in the generated code"
    for field in ("value", "test", "iter", "targets", "target"):
        part = getattr(s, field, None)
        for n in [m for p in (part if isinstance(part, list) else [part])
                  if isinstance(p, gast.AST) for m in syntax.walk(p)]:
            if isinstance(n, _CONTAINERS) and not _tape_list(s, n):
                return f"a {type(n).__name__.lower()} ({syntax.unparse(n)}){_constants(n)}"
            if isinstance(n, gast.Call):
                reason = _call_reason(n, ctx, names)
                if reason is not None:
                    return reason
    return None


def _constants(n):
    """What to write for a list of numbers written out (`[0.0, 0.5, 1.0]`), else ""."""
    if isinstance(n, (gast.List, gast.Tuple)) and n.elts and all(
            isinstance(e, gast.Constant) and isinstance(e.value, (int, float))
            and not isinstance(e.value, bool) for e in n.elts):
        return (" (an array of these numbers, a global of the module such as XS = "
                f"np.array({syntax.unparse(n)}), compiles: Numba reads it as a constant)")
    return ""


def _tape_list(s, n):
    """Whether `n` is the `[]` statement `s` binds to a name (`_s2s_tape = []`, a loop's
    tape of arrays; `hidden = []`, a list of the function's), which Numba types from
    what is appended to it, or the zeros of a list's adjoint (after_ad/native_lists.py)."""
    if isinstance(n, gast.ListComp):
        return (isinstance(s, gast.Assign) and s.value is n
                and syntax.is_name(n.generators[0].target, native_lists.ELEMENT))
    return (isinstance(n, gast.List) and not n.elts and isinstance(s, gast.Assign)
            and s.value is n and isinstance(s.targets[0], gast.Name))


def _call_reason(call, ctx, names):
    callees, tuples = names
    func = call.func
    if isinstance(func, gast.Name) and func.id in callees:
        return None
    obj = ctx.resolve(func)
    name = syntax.unparse(func)
    helper = getattr(obj, "__name__", "")
    facts = helper_facts(obj)
    if facts is not None and helper in ("own_default", "keep_default"):
        return ("a change in place of a parameter's default value, which Python keeps "
                "from call to call and a Numba function cannot change (pass the value, or "
                "use a default of None)")
    if facts is not None and facts.numba:
        if helper in ("unreduce", "extremum") and any(
                isinstance(a, gast.Tuple) or isinstance(a, gast.Name) and a.id in tuples
                for a in call.args[2:] + [k.value for k in call.keywords]):
            return ("the adjoint of a reduction along several axes (s2sad's runtime helper "
                    f"{name}() has a Numba version for full reductions and reductions along "
                    "one axis)")
        return None         # rules/numba_runtime.py gives Numba its NumPy code
    if facts is not None:
        return (f"s2sad's runtime helper {name}() (Python code for what the types do not "
                "settle: a broadcast of shapes s2sad cannot tell, a reduction along an axis, "
                "a container), in the derivative of this line")
    if isinstance(func, gast.Name) and inspect.isfunction(ctx.bindings.get(func.id)):
        return None         # the user's function, compiled with numba.njit by the driver
    if obj is None:
        return None if isinstance(func, gast.Attribute) else f"a call of {name}()"
    if obj is np.linalg.norm and any(isinstance(a, gast.Constant) and isinstance(a.value, str)
                                     for a in call.args + [k.value for k in call.keywords]):
        return ("np.linalg.norm with ord a string, which Numba's takes as an error (write "
                "np.linalg.norm(x) for the Frobenius norm of a matrix)")
    if (getattr(obj, "targetoptions", None) is not None or obj in _BUILTINS
            or isinstance(obj, (np.ufunc, type)) and obj is not object):
        return None
    module = getattr(obj, "__module__", None) or ""
    if module == "math" or module.startswith("numpy") or isinstance(obj, np.dtype):
        return None
    if inspect.isfunction(obj) or isinstance(obj, (types.MethodType, types.BuiltinFunctionType)):
        return f"a call of the Python function {name}(), which is not a Numba function"
    return None

