"""Number types: which names of generated code certainly hold a `bool`, an `int` or a
`float`, or an array, for the code Numba compiles (after_ad/native_tapes.py types each
column of a tape by it).

The types of the parameters come from the arguments the derivative is compiled for;
everything else follows from the code, as Python's arithmetic gives it: `/` and the
`math` functions give floats, a comparison a bool, `int + int` an int. A name bound to
values of two types has the wider (`bool < int < float`); a name of unknown type, or
bound to a number and to something else, has none. An array indexed by ints is an
element, unless it has more axes than ints, whose index is an array (a row of a
matrix): a parameter's number of axes Numba's types give (`ndims`); a local array's, the
code settles where it makes the array (`M = np.zeros((n, 3))`, `M = x.reshape(n, 3)`,
arithmetic, copies and basic indexes of such arrays: `local_ndims`). A number's adjoint
summed down to a number (`_s2s_unbroadcast(g, x)`, both numbers) is `g`, however long
the chain of adjoints that leads to it.

>>> import gast, math
>>> from s2sad import syntax
>>> fn = syntax.parse('''
... def f(x, n):
...     s = 0
...     for i in range(n):
...         t = i % 2 == 0
...         s = s + math.sin(x) / n
...     return s
... ''').body[0]
>>> def resolve(e):          # what a name or attribute of the module denotes
...     return eval(syntax.unparse(e), {"math": math, "range": range})
>>> types = NumberTypes(fn, {"x": float, "n": int}, resolve)
>>> [types.of_name(v) for v in ("i", "t", "s", "x")]
['int', 'bool', 'float', 'float']
"""
import math
import numbers

import inspect
import weakref

import gast
import numpy as np

from .. import syntax
from ..frontend import source
from ..rules import reductions

BOOL, INT, FLOAT, ARRAY = "bool", "int", "float", "array"
PENDING = "pending"     # of a name no binding has given a type yet
_ORDER = [BOOL, INT, FLOAT]

#: Functions of numbers that give an int, and those that keep their argument's type.
_INTS = {math.floor, math.ceil, math.trunc, int, len, round, math.factorial, math.gcd,
         math.isqrt, math.comb, math.perm}
_SAME = {abs, min, max}
_BOOLS = {bool, math.isnan, math.isinf, math.isfinite, isinstance}
_MAKES_ARRAYS = {np.zeros, np.ones, np.empty, np.full, np.zeros_like, np.ones_like,
                 np.empty_like, np.full_like, np.array, np.asarray, np.arange,
                 np.linspace, np.copy}


def join(a, b):
    """The type of a name bound to values of types `a` and `b` (None: unknown)."""
    if a is None or b is None:
        return None
    if a == b:
        return a
    if a in _ORDER and b in _ORDER:
        return _ORDER[max(_ORDER.index(a), _ORDER.index(b))]
    return None


class NumberTypes:
    """The types of the names of `fn` (a gast function), given `params` ({parameter:
    type}) and `resolve(name node or attribute) -> object or None`; the names the
    targets of the loops `skip` bind, as they are bound elsewhere."""

    def __init__(self, fn, params, resolve, dtypes=None, skip=(), ndims=None):
        self.resolve = resolve
        self.skip = {id(s) for s in skip}   # loops whose targets' bindings are left out
        self.dtypes = dtypes or {}           # {array parameter: dtype}
        self.ndims = dict(ndims or {})       # {array parameter: number of axes}
        self.types = {}
        for p, t in params.items():
            self.types[p] = t if isinstance(t, str) else (
                ARRAY if t is np.ndarray else {bool: BOOL, int: INT, float: FLOAT}.get(t))
        self.known = set(self.types)
        bindings = list(self._bindings(fn))
        self.known |= {target for target, _ in bindings}
        # the names bound once, to a tuple or list display (the arrays np.concatenate joins)
        bound = [target for target, _ in bindings]
        for name in bound:      # (a parameter bound again may hold another array)
            self.ndims.pop(name, None)
        self.displays = {target: value for target, value in bindings
                         if isinstance(value, (gast.Tuple, gast.List))
                         and bound.count(target) == 1}
        self._settle(bindings)
        local = self.local_ndims(bindings, set(params))
        if local:       # (the rows of local matrices: the types again, knowing them)
            self.ndims.update(local)
            self.types = {p: t for p, t in self.types.items() if p in params}
            self._settle(bindings)

    def _settle(self, bindings):
        changed = True
        while changed:
            changed = False
            for target, value in bindings:
                t = value if isinstance(value, str) or value is None else self.of(value)
                if t == PENDING:
                    continue
                new = t if target not in self.types else join(self.types[target], t)
                if target not in self.types or new != self.types[target]:
                    self.types[target] = new
                    changed = True

    def local_ndims(self, bindings, params):
        """{name: number of axes} of the arrays bound here (not parameters) whose every
        binding settles it: an allocation with a shape of known length (`np.zeros((n,
        3))`, `t = (n, 3)` then `np.empty(t)`), a reshape (`x.reshape(n, 3)`), a copy,
        `*_like`, arithmetic, a ufunc or a basic index of arrays whose number is known."""
        values = {}
        for target, value in bindings:
            if target not in params:
                values.setdefault(target, []).append(value)
        out = {}
        for _ in range(len(values) + 1):    # (each round knows more names, or it is done)
            found = {}
            for target, vs in values.items():
                ds = {None if isinstance(v, str) or v is None else self._ndim(v, out)
                      for v in vs}
                if len(ds) == 1 and None not in ds:
                    found[target] = ds.pop()
            if found == out:
                break
            out = found
        return out

    def _ndim(self, e, local):
        """The number of axes of what `e` computes, with `local` the numbers of the
        names known so far, or None."""
        if isinstance(e, gast.Constant):
            return 0 if type(e.value) in (int, float, bool) else None
        if isinstance(e, gast.Name):
            return local.get(e.id, self.ndims.get(e.id))
        if isinstance(e, gast.BinOp) and not isinstance(e.op, gast.MatMult):
            ds = [self._ndim(e.left, local), self._ndim(e.right, local)]
            return None if None in ds else max(ds)
        if isinstance(e, gast.UnaryOp) and not isinstance(e.op, gast.Not):
            return self._ndim(e.operand, local)
        if isinstance(e, gast.Subscript):
            d = self._ndim(e.value, local)
            parts = e.slice.elts if isinstance(e.slice, gast.Tuple) else [e.slice]
            if d is None or not all(isinstance(p, gast.Slice) or _is_none(p)
                                    or self.of(p) == INT for p in parts):
                return None
            ints = sum(1 for p in parts if not isinstance(p, gast.Slice) and not _is_none(p))
            return d - ints + sum(map(_is_none, parts)) if ints <= d else None
        if not isinstance(e, gast.Call) or any(isinstance(a, gast.Starred) for a in e.args):
            return None
        fn = self.resolve(e.func)
        if isinstance(e.func, gast.Attribute) and fn is None:      # a method of an array
            if e.keywords:
                return None
            if e.func.attr == "copy" and not e.args:
                return self._ndim(e.func.value, local)
            if e.func.attr == "reshape" and e.args:
                return len(e.args) if len(e.args) > 1 else self._length(e.args[0])
            return None
        keywords = {k.arg for k in e.keywords}
        if fn in (np.zeros, np.ones, np.empty, np.full) and e.args and keywords <= {"dtype"}:
            return self._length(e.args[0])
        if fn is np.reshape and len(e.args) == 2 and not keywords:
            return self._length(e.args[1])
        if fn in (np.zeros_like, np.ones_like, np.empty_like, np.full_like, np.copy) and \
                e.args and keywords <= {"dtype"}:
            return self._ndim(e.args[0], local)
        if isinstance(fn, np.ufunc) and len(e.args) == fn.nin and not keywords:
            ds = [self._ndim(a, local) for a in e.args]
            return None if None in ds else max(ds)
        return None

    def _length(self, shape):
        """The length of the shape `shape` (a tuple display, a name bound once to one, or
        an int), or None."""
        shape = self.displays.get(getattr(shape, "id", None), shape)
        if isinstance(shape, (gast.Tuple, gast.List)):
            return len(shape.elts) if not any(
                isinstance(e, gast.Starred) for e in shape.elts) else None
        return 1 if self.of(shape) == INT else None

    def _bindings(self, fn):
        """(name, value expression or type) of each binding of a name in `fn`."""
        for s in syntax.statements(fn):
            if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name):
                if not (isinstance(s.value, gast.Constant) and s.value.value is None):
                    yield s.targets[0].id, s.value
            elif isinstance(s, gast.AugAssign) and isinstance(s.target, gast.Name):
                yield s.target.id, gast.BinOp(left=syntax.name(s.target.id), op=s.op,
                                              right=s.value)
            elif isinstance(s, gast.For) and isinstance(s.target, gast.Name) and \
                    id(s) not in self.skip:
                it = s.iter
                if isinstance(it, gast.Call) and self.resolve(it.func) in (range, reversed):
                    yield s.target.id, INT if self.resolve(it.func) is range else None
                else:
                    yield s.target.id, None

    def of_name(self, name):
        return self.types.get(name)

    def of(self, e):
        """The type of expression `e`, or None (PENDING while a name it reads has none
        yet)."""
        if isinstance(e, gast.Name):
            if e.id in self.known:
                return self.types.get(e.id, PENDING)
            return _of_value(self.resolve(e))
        if any(self.of(n) == PENDING for n in syntax.name_nodes(e)
               if n is not e and n.id in self.known and isinstance(n.ctx, gast.Load)):
            return PENDING
        return self._of(e)

    def _of(self, e):
        if isinstance(e, gast.Constant):
            v = e.value
            return (BOOL if isinstance(v, bool) else INT if isinstance(v, int)
                    else FLOAT if isinstance(v, float) else None)
        if isinstance(e, gast.BinOp):
            a, b = self.of(e.left), self.of(e.right)
            if ARRAY in (a, b):
                return ARRAY
            if a is None or b is None:
                return None
            if isinstance(e.op, gast.Div):
                return FLOAT
            return join(join(a, b), INT)
        if isinstance(e, gast.UnaryOp):
            if isinstance(e.op, gast.Not):
                return BOOL
            t = self.of(e.operand)
            return join(t, INT) if t is not None and t != ARRAY else t
        if isinstance(e, gast.Compare):
            return None if ARRAY in map(self.of, [e.left, *e.comparators]) else BOOL
        if isinstance(e, gast.BoolOp):
            types = [self.of(v) for v in e.values]
            out = types[0]
            for t in types[1:]:
                out = out if out == t else None
            return out
        if isinstance(e, gast.IfExp):
            return join(self.of(e.body), self.of(e.orelse))
        if isinstance(e, gast.Subscript):
            base = self.of(e.value)
            index = e.slice.elts if isinstance(e.slice, gast.Tuple) else [e.slice]
            rows = self.ndims.get(getattr(e.value, "id", None), len(index)) > len(index)
            if base == ARRAY and all(self.of(i) in (INT, BOOL) for i in index) and not rows:
                dtype = self.dtypes.get(getattr(e.value, "id", None), np.float64)
                return _of_dtype(dtype)
            return None if base != ARRAY else ARRAY
        if isinstance(e, gast.Call):
            return self._call(e)
        return None

    def _call(self, e):
        fn = self.resolve(e.func)
        args = [self.of(a) for a in e.args]
        if fn in _MAKES_ARRAYS:
            return ARRAY
        if fn is reductions.unbroadcast and len(args) == 2 and args[0] in _ORDER \
                and args[1] in _ORDER:
            return args[0]      # (a number's adjoint summed to a number: itself)
        # (a function of the user's: what its source returns; NumPy's, s2sad's helpers:
        # an array for an array)
        python = source.numba_function(fn) or (fn if inspect.isfunction(fn) and (
            getattr(fn, "__module__", None) or "").split(".")[0] not in ("numpy", "s2sad")
            else None)
        if ARRAY in args and python is None:
            return ARRAY if getattr(fn, "__module__", None) != "math" else None
        if (getattr(fn, "__module__", None) or "").startswith("numpy") and any(
                self.of(v) == ARRAY for a in e.args
                for v in getattr(self.displays.get(getattr(a, "id", None), a), "elts", ())):
            return ARRAY        # (np.concatenate((a, b)), np.stack([a, b]))
        if fn in _BOOLS:
            return BOOL
        if fn in _INTS:
            return INT if fn is not round or len(e.args) == 1 else FLOAT
        if fn is float:
            return FLOAT
        if fn in _SAME:
            out = args[0] if args else None
            for t in args[1:]:
                out = join(out, t)
            return out
        module = getattr(fn, "__module__", None) or ""
        if module == "math" or (isinstance(fn, np.ufunc) and None not in args):
            return FLOAT
        if python is not None and not e.keywords and None not in args:
            return returned(python, tuple(args))
        return None


#: {function: {argument types: the type it returns}}, for the calls of Python functions.
_returned = weakref.WeakKeyDictionary()


def returned(fn, args):
    """The type of what the Python function `fn` returns for arguments of types `args`,
    read from its source (None if it cannot be told, or it calls itself)."""
    known = _returned.setdefault(fn, {})
    if args not in known:
        known[args] = None
        try:
            src = source.capture(fn, copy=False)
        except Exception:   # noqa: BLE001 - no source: the type cannot be told
            return None
        params = [a.id for a in src.node.args.posonlyargs + src.node.args.args]

        def resolve(e):
            obj = src.resolve(e)
            return None if obj is source.MISSING else obj
        types = NumberTypes(src.node, dict(zip(params, args)), resolve)
        out = PENDING
        for s in syntax.statements(src.node):
            if isinstance(s, gast.Return):
                t = types.of(s.value) if s.value is not None else None
                out = t if out == PENDING else join(out, t)
        known[args] = None if out == PENDING else out
    return known[args]


def _is_none(e):
    return isinstance(e, gast.Constant) and e.value is None


def _of_value(obj):
    if isinstance(obj, bool):
        return BOOL
    if isinstance(obj, numbers.Integral):
        return INT
    if isinstance(obj, numbers.Real):
        return FLOAT
    if isinstance(obj, np.ndarray):
        return ARRAY
    return None


def _of_dtype(dtype):
    kind = np.dtype(dtype).kind
    return {"b": BOOL, "i": INT, "u": INT, "f": FLOAT}.get(kind)
