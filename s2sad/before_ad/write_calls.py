"""Calls that write into an array they are given, as the element assignments they stand
for, so that the passes after this one follow the write as they follow `y[i] = v`
(versions of the array, what its views see, and the adjoint of what was overwritten):

- a NumPy call given `out=y` (`np.multiply(a, b, out=y)`, `np.sum(x, axis=0, out=y)`,
  or `y` by position where NumPy takes it so: `np.multiply(a, b, y)`) is
  `y[...] = np.multiply(a, b)`; bound to a name (`z = np.add(a, b, out=y)`), that
  name is then `y`, as NumPy returns `out`;
- `np.copyto(y, v)` is `y[...] = v`, and with `where=m`, `y[...] = np.where(m, v, y)`;
- `np.fill_diagonal(y, v)` is `y[np.diag_indices(min(y.shape), y.ndim)] = v`, the
  elements NumPy fills when it does not wrap;
- `y.fill(v)`, on a name that is certainly an array (an array parameter, or a name every
  assignment binds to what a NumPy function returns), is `y[...] = v`;
- `setattr(obj, "name", v)`, the name a string written in the call, is `obj.name = v`
  (before_ad.attribute_writes follows that; another `setattr` that is given a
  differentiated value, before_ad.lost_derivatives refuses).

`y` is a name, or an element or slice of one (`out=y[1:]`: `y[1:][...]` is `y[1:]`).
A call whose other arguments this pass cannot carry over (a ufunc's `where=`, `out=` a
tuple, `np.copyto`'s `casting=`) is left as it is, and before_ad.lost_derivatives
refuses it if a differentiated value reaches it.

>>> print(show("write_calls", '''
... def f(x):
...     y = np.zeros(3)
...     np.multiply(x, x, out=y)
...     np.copyto(y, 2.0 * x, where=x > 1.0)
...     m = np.outer(x, y)
...     np.fill_diagonal(m, 0.0)
...     m.fill(1.0)
...     return m.sum()
... ''', arrays=True))
def f(x):
    y = np.zeros(3)
    y[...] = np.multiply(x, x)
    y[...] = np.where(x > 1.0, 2.0 * x, y)
    m = np.outer(x, y)
    m[np.diag_indices(min(m.shape), m.ndim)] = 0.0
    m[...] = 1.0
    return m.sum()
"""
import functools
import inspect

import gast
import numpy as np

from .. import marks, syntax
from ..rules import snapshots
from ..frontend.source import MISSING


#: NumPy as s2sad found it (rules/snapshots.py): `np.copyto` patched is not NumPy's.
_NP = snapshots.of(np)


def run(fn, ctx):
    """The pass (nothing to do without a call given arguments)."""
    if any(isinstance(n, gast.Call) and (n.args or n.keywords) for n in syntax.walk(fn)):
        WriteCalls(ctx, fn).run(fn)
    return fn


class WriteCalls:
    """See the module docstring."""

    def __init__(self, ctx, fn):
        self.ctx = ctx
        self.src = ctx.src
        self.fn = fn
        self._arrays = None

    def arrays(self):
        """The names certainly arrays (found at the first `fill`: most functions have
        none)."""
        if self._arrays is None:
            self._arrays = _certain_arrays(self.fn, self.ctx)
        return self._arrays

    def run(self, fn):
        fn.body = self.block(fn.body)
        return fn

    def block(self, stmts):
        out = []
        for s in stmts:
            for field in ("body", "orelse", "finalbody"):
                if isinstance(getattr(s, field, None), list):
                    setattr(s, field, self.block(getattr(s, field)))
            if isinstance(s, gast.Try):
                for h in s.handlers:
                    h.body = self.block(h.body)
            made = self.statement(s)
            for new in made:
                gast.copy_location(new, s)
                gast.fix_missing_locations(new)
            out.extend(made)
        return out

    def statement(self, s):
        """`s` as the statements it stands for (`[s]` if this pass leaves it)."""
        if isinstance(s, gast.Expr) and isinstance(s.value, gast.Call):
            write = self.write(s.value)
            return [write] if write is not None else [s]
        if (isinstance(s, gast.Assign) and len(s.targets) == 1 and isinstance(
                s.targets[0], gast.Name) and isinstance(s.value, gast.Call)):
            out = out_argument(s.value, self.resolve(s.value.func))
            write = self.write(s.value) if out is not None else None
            if write is not None:      # `z = np.add(a, b, out=y)`: z is y
                return [write, syntax.assign(s.targets[0].id, _load(out))]
        return [s]

    def write(self, call):
        """The element assignment `call` stands for, or None."""
        func = call.func
        if any(isinstance(a, gast.Starred) for a in call.args) or any(
                k.arg is None for k in call.keywords):
            return None
        obj = self.resolve(func)
        out = out_argument(call, obj)
        if out is not None:
            method = isinstance(func, gast.Attribute) and not _numpy(obj)
            if method and not (isinstance(func.value, gast.Name) and func.value.id in
                               self.arrays()):
                return None
            if not (method or _numpy(obj)) or not _target(out) or isinstance(obj, np.ufunc) and (
                    obj.nout != 1 or _keyword(call, "where") is not None) or (
                    call.args and call.args[-1] is not out and out in call.args):
                return None     # (np.take(a, i, 0, y, "clip"): an argument after out)
            return _element(out, gast.Call(func=func, args=[a for a in call.args if a is not out],
                                           keywords=[k for k in call.keywords if k.arg != "out"]))
        if obj is _NP.copyto:
            # np.copyto(dst, src, casting="same_kind", where=True): casting only decides
            # whether NumPy raises
            named = dict(zip(("dst", "src", "casting", "where"), call.args))
            named.update((k.arg, k.value) for k in call.keywords)
            if set(named) - {"dst", "src", "casting", "where"} or not {"dst", "src"} <= set(
                    named) or not _target(named["dst"]) or not isinstance(named.get(
                    "casting", syntax.const("")), gast.Constant):
                return None
            self.src.resolve(func)      # (guarded: the code no longer calls it)
            dst, value = named["dst"], named["src"]
            if "where" in named:
                value = syntax.call(self.numpy("where"), [named["where"], value, _load(dst)])
            return _element(dst, value)
        if (obj is _NP.fill_diagonal and len(call.args) == 2 and not call.keywords
                and isinstance(call.args[0], gast.Name)):
            self.src.resolve(func)      # (guarded: the code no longer calls it)
            y = call.args[0].id
            index = syntax.call(self.numpy("diag_indices"), [
                syntax.call(self.ctx.bind("min"), [_attr(y, "shape")]), _attr(y, "ndim")])
            return syntax.assign(gast.Subscript(value=syntax.name(y), slice=index,
                                                ctx=gast.Store()), call.args[1])
        if (obj is setattr and len(call.args) == 3 and not call.keywords and isinstance(
                call.args[0], gast.Name) and isinstance(call.args[1], gast.Constant)
                and isinstance(call.args[1].value, str) and call.args[1].value.isidentifier()):
            self.src.resolve(func)      # (guarded: the code no longer calls it)
            return syntax.assign(gast.Attribute(value=syntax.name(call.args[0].id), attr=(
                call.args[1].value), ctx=gast.Store()), call.args[2])
        if (isinstance(func, gast.Attribute) and func.attr == "fill" and isinstance(
                func.value, gast.Name) and len(call.args) == 1 and not call.keywords
                and func.value.id in self.arrays()):
            return _element(func.value, call.args[0])
        return None

    def resolve(self, func):
        return _peek(self.src, func)

    def numpy(self, attr):
        """`np.<attr>` in generated code (`np` the user's name for NumPy if it has one)."""
        module = syntax.name(self.ctx.bind("np", obj=np))
        marks.PRIM.put(module, np)
        return gast.Attribute(value=module, attr=attr, ctx=gast.Load())


def out_argument(call, obj):
    """The array a call of `obj` writes its result into (given as `out=`, or by position
    where NumPy takes it so: `np.multiply(a, b, y)`, `x.clip(0.0, 1.0, y)` on an array
    `x`, `obj` then None or `x`'s bound method), or None."""
    out = _keyword(call, "out")
    if out is not None:
        return out
    if _numpy(obj):
        at = _out_position(obj)
    elif isinstance(call.func, gast.Attribute) and (obj is None or isinstance(
            getattr(obj, "__self__", None), np.ndarray)):
        at = _method_out_position(call.func.attr)
    else:
        return None
    return call.args[at] if at is not None and len(call.args) > at else None


@functools.lru_cache(maxsize=None)
def _method_out_position(name):
    """The position of `out` among the arguments of the ndarray method `name` (that of
    the NumPy function of the same name, less its array: `x.clip(lo, hi, y)`), or None."""
    f = getattr(np, name, None)
    if not hasattr(np.ndarray, name) or not _numpy(f) or isinstance(f, np.ufunc):
        return None
    at = _out_position(f)
    return at - 1 if at else None


@functools.lru_cache(maxsize=1024)
def _out_position(obj):
    if isinstance(obj, np.ufunc):
        return obj.nin
    try:
        params = list(inspect.signature(obj).parameters.values())
    except (TypeError, ValueError):
        return None
    return next((i for i, p in enumerate(params) if p.name == "out" and p.kind in (
        p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)), None)


def _keyword(call, name):
    return next((k.value for k in call.keywords if k.arg == name), None)


def _numpy(obj):
    """Whether `obj` is a function of NumPy's (whose `out=` is where it writes)."""
    return isinstance(obj, np.ufunc) or callable(obj) and (
        getattr(obj, "__module__", None) or "").split(".")[0] == "numpy"


def _target(e):
    """Whether `e` is a name, or an element or slice of one (`y`, `y[1:]`, `y[i, :]`)."""
    return isinstance(e, gast.Name) or isinstance(e, gast.Subscript) and isinstance(
        e.value, gast.Name)


def _load(e):
    return syntax.copied(e) if not isinstance(e, gast.Name) else syntax.name(e.id)


def _store(e):
    e = _load(e)
    e.ctx = gast.Store()
    return e


def _element(target, value):
    """`target[...] = value`, or `y[i] = value` for a target `y[i]` (what NumPy's write
    into the view `y[i]` changes)."""
    if isinstance(target, gast.Subscript):
        return syntax.assign(_store(target), value)
    return syntax.assign(gast.Subscript(value=syntax.name(target.id), slice=syntax.const(
        Ellipsis), ctx=gast.Store()), value)


def _attr(name, attr):
    return gast.Attribute(value=syntax.name(name), attr=attr, ctx=gast.Load())


def _certain_arrays(fn, ctx):
    """The names that certainly hold an ndarray where read: array parameters, and names
    that every assignment binds to what a NumPy function returns (not an object of the
    user's, whose `fill` may be its own)."""
    out = {p for p, t in ctx.types.items() if t is np.ndarray}
    made = {}
    for n in syntax.walk(fn):
        if isinstance(n, gast.Assign) and len(n.targets) == 1 and isinstance(
                n.targets[0], gast.Name):
            value = n.value
            ok = isinstance(value, gast.Call) and _numpy(_peek(ctx.src, value.func))
            made[n.targets[0].id] = made.get(n.targets[0].id, True) and ok
        elif isinstance(n, (gast.Assign, gast.For, gast.AugAssign, gast.AnnAssign,
                            gast.NamedExpr, gast.comprehension)):
            for target in (n.targets if isinstance(n, gast.Assign) else [n.target]):
                for t in syntax.name_nodes(target):
                    if isinstance(t.ctx, gast.Store) and not isinstance(n, gast.AugAssign):
                        made[t.id] = False
    params = {a.id for a in fn.args.args + fn.args.posonlyargs + fn.args.kwonlyargs}
    return out | {k for k, ok in made.items() if ok and k not in params}


def _peek(src, func):
    """What `func` denotes (None if nothing outside the function), without making it one of
    the bindings the derivative's guard tests: the passes after this one resolve what the
    code still calls, in its order; what this pass rewrites away it resolves again."""
    known = len(src.resolved)
    obj = src.resolve(func)
    while len(src.resolved) > known:
        src.resolved.popitem()
    return None if obj is MISSING else obj
