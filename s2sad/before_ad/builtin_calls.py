"""Builtin calls as the Python they stand for, so that the rest of the compiler sees
loops, indexing and arithmetic it differentiates:

- `map(f, xs)` and `filter(p, xs)`, where their items are consumed whole (the argument
  of `sum`, `list`, `sorted`, ... or a loop's iterable), are generator expressions
  (`(f(x) for x in xs)`, `(x for x in xs if p(x))`; `map` over several sequences
  zips them);
- `max(xs)` and `min(xs)` of one sequence, and `max`, `min` and `sorted` with a `key=`,
  index the sequence (`seq = _s2s_sequence(xs)` unless `xs` is certainly a list, tuple
  or array: the items of a dict are its keys) with
  the position that Python's call picks (`seq[_s2s_best_index(keys, ...)]`,
  `[seq[i] for i in _s2s_key_order(keys, ...)]`, the keys being `[key(x) for x in
  seq]`): the derivative goes to the items picked, and none to the key (a choice is
  piecewise constant);
- `list(...)` of a generator is a list comprehension, `d.values()` (`.keys()`,
  `.items()`) and `reversed(xs)` read whole by a consumer (`sum(d.values())`,
  `list(reversed(xs))`) a generator over it, and `divmod(a, b)` is `(a // b, a % b)`;
- `functools.reduce(f, xs, init)` is the loop it stands for, before the statement (`acc =
  init`, `for x in xs: acc = f(acc, x)`; without `init`, from the first item over the
  others, raising Python's TypeError for no items), and the call is `acc`.
- a call of `np.vectorize(f)` (made in the function, of a name or a lambda, which is
  named before the statement, or an object made outside it) of a Python function `f` is
  the loop NumPy runs: `f` called on each element of the arguments broadcast together (`shape = np.broadcast_shapes(np.shape(x), np.shape(y))`,
  then `values = [f(a, b) for a, b in zip(np.ravel(np.broadcast_to(x, shape)), ...)]`
  and `np.reshape(np.array(values, dtype=...), shape)`, of NumPy's dtype: `otypes`, else
  that of the first output, `_s2s_vectorized_dtype(values, ...)`, which refuses several
  outputs at the line); the object's `pyfunc` and `otypes` are guarded. `signature=`,
  `excluded=`, several `otypes` and keyword arguments are refused at the line.

A sequence, a key function or an operand that is not a name is evaluated once, into a
name bound before the statement (a lambda given as `key=` becomes a named one, which
before_ad.lift lifts). Where that is impossible (in a `while` test, or inside a
comprehension) the call is left as it is, and refused later if it is differentiated.

>>> print(show("builtin_calls", '''   # (for arrays xs and ys)
... def f(xs, ys):
...     a = sum(map(abs, xs))
...     b, c = divmod(a, 2.0)
...     return max(xs, key=lambda v: v * v) + min(ys) + c
... ''', arrays=True))
def f(xs, ys):
    a = sum((abs(x) for x in xs))
    b, c = (a // 2.0, a % 2.0)
    key = lambda v: v * v
    return xs[_s2s_best_index([key(x_1) for x_1 in xs], True)] + ys[_s2s_best_index(ys, False)] + c
"""
import builtins
import functools

import gast
import numpy as np

from .. import marks, syntax
from ..rules.registry import HELPERS
from .desugar import CONSUMERS     # (what consumes an iterable whole)
from .iteration import _indexable, certainly_indexable

#: The builtins this pass rewrites, by name.
NAMES = {f.__name__ for f in (map, filter, divmod, zip, enumerate, reversed, *CONSUMERS)}
# the statements whose own expressions run once, before anything in their bodies
SIMPLE = (gast.Assign, gast.AugAssign, gast.AnnAssign, gast.Expr, gast.Return, gast.If,
          gast.For)


def run(fn, ctx):
    """The pass (nothing to do without a name of one of the builtins it rewrites)."""
    if any(n.id in NAMES for n in syntax.name_nodes(fn)) or any(     # (a consumer too)
            isinstance(n, gast.Attribute) and n.attr == "reduce" or isinstance(n, gast.Name)
            and n.id == "reduce" for n in syntax.walk(fn)) or _vectorized_calls(fn, ctx.src):
        BuiltinCalls(ctx).run(fn)
    return fn


class BuiltinCalls:
    """See the module docstring."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.src = ctx.src
        self.namer = ctx.namer

    def run(self, fn):
        # names certainly a list, tuple or array where read: indexed as they are
        self.indexable = _indexable(fn, self.ctx.types) | {
            p for p, t in self.ctx.types.items() if t in (list, tuple)}
        fn.body = self.block(fn.body)
        return fn

    def block(self, stmts):
        out = []
        for s in stmts:
            prelude = []
            self.prelude = prelude if isinstance(s, SIMPLE) else None
            for field, value in gast.iter_fields(s):
                if field in ("body", "orelse", "finalbody", "handlers"):
                    continue
                if isinstance(value, gast.AST):
                    # a loop's iterable, and what an assignment unpacks, are consumed whole
                    unpacked = field == "value" and isinstance(s, gast.Assign) and all(
                        isinstance(t, (gast.Tuple, gast.List)) for t in s.targets)
                    made = self.expr(value, consumed=unpacked, in_loop_iter=(
                        field == "iter" and isinstance(s, gast.For)))
                    if unpacked and isinstance(made, gast.GeneratorExp):
                        made = gast.ListComp(elt=made.elt, generators=made.generators)
                    setattr(s, field, made)
                elif isinstance(value, list):
                    setattr(s, field, [self.expr(v) if isinstance(v, gast.expr) else v
                                       for v in value])
            for field in ("body", "orelse", "finalbody"):
                if isinstance(getattr(s, field, None), list):
                    setattr(s, field, self.block(getattr(s, field)))
            for h in getattr(s, "handlers", None) or []:
                h.body = self.block(h.body)
            out.extend(syntax.located_within(p, s) for p in prelude)
            out.append(s)
        return out

    def expr(self, e, in_loop_iter=False, consumed=False, held=True):
        """`e` with the builtin calls in it rewritten; `consumed`: `e` is an argument
        that a consumer takes whole; `held`: names can be bound before the statement
        (not inside a comprehension)."""
        if not isinstance(e, gast.AST):
            return e
        if isinstance(e, (gast.ListComp, gast.GeneratorExp, gast.SetComp, gast.DictComp,
                          gast.Lambda)):
            return self.inner(e)
        if isinstance(e, gast.Call):
            called = self.builtin(e.func)
            takes = called is not None and any(called is c for c in CONSUMERS)
            e.func = self.expr(e.func, held=held)
            e.args = [self.expr(a, consumed=takes and i == 0, held=held)
                      for i, a in enumerate(e.args)]
            for k in e.keywords:
                k.value = self.expr(k.value, held=held)
            made = self.call(e, called, consumed, in_loop_iter, held)
            if made is None and _vectorize_of(e.func, self.src) is not None:
                made = self.vectorized(e, held)
            if made is None and self.is_reduce(e.func):
                made = self.reduced(e, held)
            if made is None and consumed and _view_of_dict(e):
                made = self.viewed(e)
            return e if made is None else syntax.located_within(made, e)
        for field, value in gast.iter_fields(e):
            if isinstance(value, gast.AST):
                setattr(e, field, self.expr(value, held=held))
            elif isinstance(value, list):
                setattr(e, field, [self.expr(v, held=held) if isinstance(v, gast.AST) else v
                                   for v in value])
        return e

    def inner(self, e):
        """A comprehension or lambda: its calls rewritten only where nothing needs holding
        (a generator's first iterable runs once, before the statement)."""
        for node in syntax.walk(e):
            for field, value in gast.iter_fields(node):
                if isinstance(value, gast.Call):
                    made = self.call(value, self.builtin(value.func), False, False, False)
                    if made is not None:
                        setattr(node, field, syntax.located_within(made, value))
                elif isinstance(value, list):
                    for i, v in enumerate(value):
                        if isinstance(v, gast.Call):
                            made = self.call(v, self.builtin(v.func), False, False, False)
                            if made is not None:
                                value[i] = syntax.located_within(made, v)
        return e

    def builtin(self, func):
        """The builtin `func` denotes, else None (a local name, any other object)."""
        if not (isinstance(func, gast.Name) and func.id in NAMES):
            return None     # (resolved only if it may be one: what is resolved is guarded)
        obj = self.src.resolve(func)
        return obj if getattr(builtins, func.id, None) is obj and any(
            obj is b for b in (map, filter, divmod, zip, enumerate, reversed, *CONSUMERS)) \
            else None

    # -- the calls ------------------------------------------------------------------------
    def call(self, e, called, consumed, in_loop_iter, held):
        """What the call `e` of the builtin `called` stands for, or None to keep it;
        `consumed`: a consumer or an unpacking reads it whole; `in_loop_iter`: a loop
        does (which reads zip and enumerate as they are)."""
        star = any(isinstance(a, gast.Starred) for a in e.args) or any(
            k.arg is None for k in e.keywords)
        if called is None or star:
            return None
        keywords = {k.arg: k.value for k in e.keywords}
        if called in (map, filter) and (consumed or in_loop_iter) and not keywords:
            return self.mapped(e, called, held)
        if called in (zip, enumerate) and consumed and e.args and (
                not keywords or called is enumerate and list(keywords) == ["start"]):
            return self.paired(e, called)
        if called is reversed and consumed and len(e.args) == 1 and not keywords:
            return self.viewed(e)       # (`list(reversed(xs))`: the loop reads it)
        if called in (max, min) and set(keywords) <= {"key"} and (
                len(e.args) == 1 or "key" in keywords and e.args):
            # (`max(x, y)` without a key has rules of its own: rules/builtins.py)
            return self.extremum(e, called is max, keywords.get("key"), held)
        if called is sorted and len(e.args) == 1 and set(keywords) <= {"key", "reverse"} \
                and "key" in keywords:
            return self.ordered(e, keywords["key"], keywords.get("reverse"), held)
        if called is list and len(e.args) == 1 and not keywords and isinstance(
                e.args[0], gast.GeneratorExp):
            return gast.ListComp(elt=e.args[0].elt, generators=e.args[0].generators)
        if called is divmod and len(e.args) == 2 and not keywords:
            a, b = (self.atom(x, "a", held) for x in e.args)
            if a is None or b is None:
                return None
            return gast.Tuple(elts=[syntax.binop(a, gast.FloorDiv(), syntax.copied(b)),
                                    syntax.binop(syntax.copied(a), gast.Mod(),
                                                 syntax.copied(b))], ctx=gast.Load())
        return None

    def mapped(self, e, called, held):
        if len(e.args) < 2 or (called is filter and len(e.args) != 2):
            return None
        f = self.atom(e.args[0], "f", held, names_only=True)
        if f is None:
            return None
        targets = [self.namer.fresh("x") for _ in e.args[1:]]
        if len(targets) == 1:
            iterable, target = e.args[1], syntax.name(targets[0], store=True)
        else:
            iterable = syntax.call(self.name("zip", zip), e.args[1:])
            target = gast.Tuple(elts=[syntax.name(t, store=True) for t in targets],
                                ctx=gast.Store())
        items = [syntax.name(t) for t in targets]
        if called is map:
            elt, ifs = syntax.call(f, items), []
        else:
            test = items[0] if _is_none(f) else syntax.call(f, items)
            elt, ifs = syntax.name(targets[0]), [test]
        return gast.GeneratorExp(elt=elt, generators=[gast.comprehension(
            target=target, iter=iterable, ifs=ifs, is_async=0)])

    def vectorized(self, e, held):
        """The call `e` of an `np.vectorize` object as the loop NumPy runs (see the module
        docstring); None where nothing can be bound before the statement."""
        vectorized, f = _vectorize_of(e.func, self.src)
        if vectorized is not None and (vectorized.signature is not None
                                       or vectorized.excluded):
            raise self.src.syntax_error(e, (
                "np.vectorize with signature= or excluded= is not differentiated: call the "
                "function on the elements in a loop or a comprehension"))
        if e.keywords or any(isinstance(a, gast.Starred) for a in e.args) or not e.args:
            raise self.src.syntax_error(e, (
                "a call of an np.vectorize function is differentiated with its arguments "
                "given by position, one by one: write f(x, y), not f(x, k=y) or f(*xs)"))
        otypes = _otypes_of(e.func, vectorized, self.src)
        if otypes is not None and len(otypes) != 1:
            raise self.src.syntax_error(e, (
                "np.vectorize of a function that returns several values is not "
                "differentiated: vectorize a function for each value"))
        if not held or self.prelude is None:
            return None
        f = self.atom(f, "f", held, names_only=True)    # (a lambda named, which lift lifts)
        args = [self.atom(a, "arg", held) for a in e.args]
        if len(args) == 1:
            shape = syntax.call(self.name("shape", np.shape), [args[0]])
            flat = [syntax.call(self.name("ravel", np.ravel), [args[0]])]
        else:
            shape = syntax.name(self.namer.fresh("shape"))
            self.prelude.append(syntax.assign(shape.id, syntax.call(
                self.name("broadcast_shapes", np.broadcast_shapes),
                [syntax.call(self.name("shape", np.shape), [a]) for a in args])))
            flat = [syntax.call(self.name("ravel", np.ravel), [syntax.call(
                self.name("broadcast_to", np.broadcast_to), [a, syntax.name(shape.id)])])
                for a in args]
        items = [self.namer.fresh("x") for _ in args]
        if len(items) == 1:
            target, iterable = syntax.name(items[0], store=True), flat[0]
        else:
            target = gast.Tuple(elts=[syntax.name(t, store=True) for t in items],
                                ctx=gast.Store())
            iterable = syntax.call(self.name("zip", zip), flat)
        values = self.atom(gast.ListComp(
            elt=syntax.call(f, [syntax.name(t) for t in items]),
            generators=[gast.comprehension(target=target, iter=iterable, ifs=[],
                                           is_async=0)]), "values", held)
        # NumPy's dtype: `otypes`, else the first output's (`0` first: all truncated to ints)
        dtype = syntax.const(otypes) if otypes is not None else syntax.call(
            self.helper("vectorized_dtype"), [
                syntax.copied(values), syntax.name(self.ctx.bind(
                    "_s2s_file", obj=self.src.filename)), syntax.const(self.src.lineno(e))])
        return syntax.call(self.name("reshape", np.reshape), [syntax.call(
            self.name("array", np.array), [syntax.copied(values)],
            [gast.keyword(arg="dtype", value=dtype)]), shape])

    def is_reduce(self, func):
        """Whether `func` denotes `functools.reduce` (`reduce` imported, or
        `functools.reduce`; resolved only where it may be: what is resolved is guarded)."""
        spelled = (func.id if isinstance(func, gast.Name) else
                   func.attr if isinstance(func, gast.Attribute) and _chain(func) else None)
        return spelled == "reduce" and self.src.resolve(func) is functools.reduce

    def reduced(self, e, held):
        """`functools.reduce(f, xs, init)` as the loop it stands for, before the statement
        (`acc = init`, `for x in xs: acc = f(acc, x)`; without `init`, from the first item
        over the others); the call is `acc`. None where nothing can be bound before it."""
        if not held or self.prelude is None or not 2 <= len(e.args) <= 3 or e.keywords or (
                any(isinstance(a, gast.Starred) for a in e.args)):
            return None
        f = self.atom(e.args[0], "f", held, names_only=True)
        if f is None:
            return None
        acc, x = self.namer.fresh("acc"), self.namer.fresh("x")
        if len(e.args) == 3:
            items = self.atom(e.args[1], "items", held)
            self.prelude.append(syntax.assign(acc, e.args[2]))
        else:
            seq = self.sequence(e.args[1], held)
            if seq is None:
                return None
            empty = gast.Compare(left=syntax.call(self.name("len", len), [
                syntax.copied(seq)]), ops=[gast.Eq()], comparators=[syntax.const(0)])
            self.prelude.append(syntax.if_(empty, [gast.Raise(exc=syntax.call(
                self.name("TypeError", TypeError), [syntax.const(
                    "reduce() of empty iterable with no initial value")]), cause=None)]))
            self.prelude.append(syntax.assign(acc, gast.Subscript(
                value=seq, slice=syntax.const(0), ctx=gast.Load())))
            items = gast.Subscript(value=syntax.copied(seq), slice=gast.Slice(
                lower=syntax.const(1), upper=None, step=None), ctx=gast.Load())
        self.prelude.append(syntax.for_(x, items, [
            syntax.assign(acc, syntax.call(f, [syntax.name(acc), syntax.name(x)]))]))
        return syntax.name(acc)

    def viewed(self, e):
        """`d.values()` (`.keys()`, `.items()`) read whole by a consumer, `sum(d.values())`,
        as the generator `(v for v in d.values())`, whose loop before_ad.iteration writes
        over the dict's keys; `reversed(xs)` so, `list(reversed(xs))`, over xs's indexes
        backwards."""
        v = self.namer.fresh("v")
        return gast.GeneratorExp(elt=syntax.name(v), generators=[gast.comprehension(
            target=syntax.name(v, store=True), iter=e, ifs=[], is_async=0)])

    def paired(self, e, called):
        """`zip(a, b)` as `((x, x_1) for x, x_1 in zip(a, b))`, `enumerate(xs)` as `((i, x)
        for i, x in enumerate(xs))`: a generator a consumer (or an unpacking) reads whole,
        whose loop before_ad.iteration writes."""
        n = len(e.args) if called is zip else 2
        targets = [self.namer.fresh("i" if called is enumerate and k == 0 else "x")
                   for k in range(n)]
        return gast.GeneratorExp(
            elt=gast.Tuple(elts=[syntax.name(t) for t in targets], ctx=gast.Load()),
            generators=[gast.comprehension(
                target=gast.Tuple(elts=[syntax.name(t, store=True) for t in targets],
                                  ctx=gast.Store()),
                iter=e, ifs=[], is_async=0)])

    def extremum(self, e, largest, key, held):
        seq = self.sequence(e.args[0] if len(e.args) == 1 else gast.Tuple(
            elts=e.args, ctx=gast.Load()), held)
        if seq is None:
            return None
        keys = syntax.copied(seq) if key is None else self.keys(seq, key, held)
        if keys is None:
            return None
        index = syntax.call(self.helper("best_index"), [keys, syntax.const(largest)])
        return gast.Subscript(value=syntax.copied(seq), slice=index, ctx=gast.Load())

    def ordered(self, e, key, reverse, held):
        seq = self.sequence(e.args[0], held)
        keys = None if seq is None else self.keys(seq, key, held)
        if keys is None:
            return None
        reverse = syntax.const(False) if reverse is None else reverse
        i = self.namer.fresh("i")
        order = syntax.call(self.helper("key_order"), [keys, reverse])
        return gast.ListComp(
            elt=gast.Subscript(value=syntax.copied(seq), slice=syntax.name(i),
                               ctx=gast.Load()),
            generators=[gast.comprehension(target=syntax.name(i, store=True), iter=order,
                                           ifs=[], is_async=0)])

    def sequence(self, e, held):
        """A name for the items of the iterable `e` that can be indexed: a list or tuple
        display or a comprehension held as it is, anything else (a name, which may be a
        dict, a zip, a range) as `_s2s_sequence(e)` (a list, tuple or array itself; the
        keys of a dict, the items of any other iterable, as a list); None when it cannot
        be held."""
        if isinstance(e, gast.GeneratorExp):
            e = gast.ListComp(elt=e.elt, generators=e.generators)
        if not certainly_indexable(e, self.indexable):
            e = syntax.call(self.helper("sequence"), [e])
        return self.atom(e, "seq", held)

    def keys(self, seq, key, held):
        """`[key(x) for x in seq]`, or None."""
        key = self.atom(key, "key", held, names_only=True)
        if key is None:
            return None
        x = self.namer.fresh("x")
        return gast.ListComp(elt=syntax.call(key, [syntax.name(x)]), generators=[
            gast.comprehension(target=syntax.name(x, store=True), iter=syntax.copied(seq),
                               ifs=[], is_async=0)])

    # -- names ----------------------------------------------------------------------------
    def atom(self, e, base, held, names_only=False):
        """`e` if reading it again gives the same (a name, a constant, or an attribute
        chain of a name for a function), else a new name bound to it before the
        statement; None when that cannot be."""
        if isinstance(e, gast.Name) or (isinstance(e, gast.Constant) and not names_only):
            return e
        if names_only and _chain(e):
            return e
        if not held or self.prelude is None:
            return None
        name = self.namer.fresh(base)
        self.prelude.append(syntax.assign(name, e))
        return syntax.name(name)

    def helper(self, name):
        func = syntax.name(self.ctx.runtime(name))
        marks.PRIM.put(func, HELPERS["_s2s_" + name])
        return func

    def name(self, name, obj):
        func = syntax.name(self.ctx.bind(name, obj=obj))
        marks.PRIM.put(func, obj)
        return func


def _vectorize_of(func, src):
    """(the np.vectorize object, None where it is made here; the node of its Python
    function) of the called `func`, an `np.vectorize` object (a name or attribute chain
    denoting one, whose `pyfunc` is then resolved, and so guarded) or `np.vectorize(f)`
    (`f` a name, an attribute chain or a lambda), or None."""
    if isinstance(func, gast.Call) and len(func.args) == 1 and not func.keywords and (
            isinstance(func.func, (gast.Name, gast.Attribute)) and _chain(func.func)
            and src.resolve(func.func) is np.vectorize):
        f = func.args[0]
        return (None, f) if isinstance(f, (gast.Name, gast.Attribute, gast.Lambda)) else None
    if not (isinstance(func, (gast.Name, gast.Attribute)) and _chain(func)):
        return None
    obj = src.resolve(func)
    if type(obj) is not np.vectorize:
        return None
    pyfunc = gast.Attribute(value=syntax.copied(func), attr="pyfunc", ctx=gast.Load())
    src.resolve(pyfunc)     # (guarded: a new function set on the object is seen)
    attrs, base = [], pyfunc
    while isinstance(base, gast.Attribute):
        attrs.append(base.attr)
        base = base.value
    src.read_away.add((base.id, *reversed(attrs)))
    return obj, pyfunc


def _otypes_of(func, vectorized, src):
    """The `otypes` of the np.vectorize object `vectorized` (None where it is made here)
    that `func` denotes (resolved, and so guarded), as a string of type codes, or None."""
    if vectorized is None:
        return None
    otypes = src.resolve(gast.Attribute(value=syntax.copied(func), attr="otypes",
                                        ctx=gast.Load()))
    return "".join(np.dtype(t).char for t in otypes) if otypes else None


def _vectorized_calls(fn, src):
    """Whether `fn` calls an `np.vectorize` object (see `_vectorize_of`)."""
    return any(isinstance(n, gast.Call) and _vectorize_of(n.func, src) is not None
               for n in syntax.walk(fn))


def _view_of_dict(e):
    """Whether `e` is `x.values()`, `x.keys()` or `x.items()`."""
    return (isinstance(e.func, gast.Attribute) and e.func.attr in ("values", "keys", "items")
            and not e.args and not e.keywords)


def _chain(e):
    while isinstance(e, gast.Attribute):
        e = e.value
    return isinstance(e, gast.Name)


def _is_none(e):
    return isinstance(e, gast.Constant) and e.value is None
