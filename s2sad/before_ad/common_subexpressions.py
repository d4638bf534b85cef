"""Common subexpressions: a number computed twice from the same values is computed once.

Takes and leaves Wengert form. `u[i] - h * k * u[i] ** 2` reads `u[i]` twice, which
Wengert form names twice (`t_2 = u[i]`, `t_4 = u[i]`); a temporary whose value is an
index, arithmetic or comparison of atoms that an earlier statement computed from the
same names, not bound again since, is that statement's name instead (`t_4` is `t_2`):
the forward pass computes it once, and a loop records or reads back one value.

Only numbers (the kind analysis's scalars) are merged: a number is immutable, so two
names for it share nothing an element write could change. An earlier statement counts
where it surely ran: before, in the same block or one enclosing it. A loop's body
forgets what reads a name the loop binds, and a statement that calls a function not
known to leave its arguments alone (a method, a function without a rule, one that
writes into an argument) forgets everything.

>>> import numpy as np
>>> from s2sad import pipeline
>>> from s2sad.frontend.source import function_from_source
>>> f = function_from_source('''
... def f(x, k):
...     u = k * np.ones(len(x))
...     return u[0] - k * u[0] ** 2
... ''', {"np": np})
>>> print(pipeline.stage_source(f, "common_subexpressions", arg_types={"x": np.ndarray,
...                                                                 "k": float}))
def f(x, k):
    t = len(x)
    t_1 = np.ones(t)
    u = k * t_1
    t_2 = u[0]
    t_4 = t_2 ** 2
    t_5 = k * t_4
    y = t_2 - t_5
    return y
<BLANKLINE>
"""
import gast

from .. import marks
from .. import syntax
from ..analysis.names import store_counts
from ..analysis.value_kinds import SCALAR
from ..rules import registry


def run(fn, ctx):
    """The pass (not where the compiler merges them itself, `ctx.can.merges_subexpressions`:
    Numba's LLVM, for which the terms a reversed loop adds into an array's element stay
    apart for `native_tapes`)."""
    merged = {}
    _Merge(ctx, store_counts(fn), merged).block(fn.body, {})
    if not merged:
        return fn
    for block in syntax.blocks(fn.body):
        block[:] = [s for s in block if not (
            isinstance(s, gast.Assign) and id(s) in merged)]
    names = {s.targets[0].id: name for s, name in merged.values()}
    for n in syntax.name_nodes(fn):
        if isinstance(n.ctx, gast.Load) and n.id in names:
            n.id = names[n.id]
    ctx.rewrote = True
    return fn


class _Merge:
    def __init__(self, ctx, stored, merged):
        self.kinds, self.src, self.stored, self.merged = ctx.value_kinds, ctx.src, stored, merged
        self.same = {}      # {merged name: the name it is}, so that merges chain
        self.reads = {}     # {key: the names it reads}
        self.keys_of = {}   # {name: the keys that read it or were its value}

    def block(self, stmts, known):
        """Merge in `stmts` given `known` ({value key: name}, changed in place)."""
        for s in stmts:
            if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name):
                target = s.targets[0].id
                key = (_key(s.value, self.same) if self.kinds.kind.get(target) == SCALAR
                       else None)
                if self.impure(s.value):
                    known.clear()
                elif key is not None and key in known and marks.TEMPORARY.of(s) \
                        and self.stored[target] == 1:
                    self.merged[id(s)] = (s, known[key])
                    self.same[target] = known[key]
                    continue
                self.forget(known, {target})
                if key is not None and self.stored[target] == 1 \
                        and target not in self.names(key):
                    known[key] = target
                    self.keys_of.setdefault(target, set()).add(key)
                continue
            if isinstance(s, (gast.If, gast.For, gast.While, gast.Try, gast.With)):
                if isinstance(s, (gast.For, gast.While)):
                    self.forget(known, set(syntax.names_stored(s)))
                if any(self.impure(e) for e in _heads(s)):
                    known.clear()
                for field in ("body", "orelse", "finalbody"):
                    inner = getattr(s, field, None)
                    if isinstance(inner, list) and inner:
                        self.block(inner, dict(known))
                for handler in getattr(s, "handlers", []):
                    self.block(handler.body, dict(known))
                self.forget(known, set(syntax.names_stored(s)))
                if any(self.impure(x) for x in syntax.walk(s) if isinstance(x, gast.Call)):
                    known.clear()
                continue
            if self.impure(s) or not isinstance(s, (gast.Return, gast.Pass, gast.Expr)):
                known.clear()
            else:
                self.forget(known, set(syntax.names_stored(s)))

    def names(self, key):
        """The names `key` reads (found once per key)."""
        out = self.reads.get(key)
        if out is None:
            out = self.reads[key] = _names(key)
            for name in out:
                self.keys_of.setdefault(name, set()).add(key)
        return out

    def forget(self, known, names):
        """Drop from `known` the values that read one of `names` or are one of them."""
        if not names or not known:
            return
        for name in names:
            for key in self.keys_of.get(name, ()):
                if key in known and (known[key] in names or self.reads[key] & names):
                    del known[key]

    def impure(self, node):
        """Whether `node` calls something that may write into its arguments."""
        for c in syntax.walk(node):
            if not isinstance(c, gast.Call):
                continue
            # (a method, `x.copy()`, resolves to no object: not known to be pure)
            if not registry.writes_nothing(marks.PRIM.of(c.func)
                                           or self.src.resolve(c.func)):
                return True
        return False


def _heads(s):
    """The expressions a compound statement evaluates itself (a test, an iterable)."""
    return [e for e in (getattr(s, "test", None), getattr(s, "iter", None)) if e is not None]


def _key(e, same):
    """A hashable key of the value `e` when it is an index, arithmetic or a comparison
    of atoms, else None; a name of `same` stands for the name it is."""
    if isinstance(e, gast.Name):
        return ("name", same.get(e.id, e.id))
    if isinstance(e, gast.Constant):
        return ("const", type(e.value).__name__, repr(e.value))
    if isinstance(e, gast.BinOp) and syntax.is_atom(e.left) and syntax.is_atom(e.right):
        return ("bin", type(e.op).__name__, _key(e.left, same), _key(e.right, same))
    if isinstance(e, gast.UnaryOp) and syntax.is_atom(e.operand):
        return ("unary", type(e.op).__name__, _key(e.operand, same))
    if isinstance(e, gast.Compare) and len(e.ops) == 1 and syntax.is_atom(e.left) \
            and syntax.is_atom(e.comparators[0]):
        return ("compare", type(e.ops[0]).__name__, _key(e.left, same),
                _key(e.comparators[0], same))
    if isinstance(e, gast.Subscript) and isinstance(e.value, gast.Name):
        index = _index_key(e.slice, same)
        return None if index is None else ("index", same.get(e.value.id, e.value.id), index)
    return None


def _index_key(e, same):
    if isinstance(e, gast.Tuple):
        parts = [_index_key(x, same) for x in e.elts]
        return None if None in parts else ("tuple",) + tuple(parts)
    if isinstance(e, gast.Slice):
        parts = [None if b is None else _key(b, same) if syntax.is_atom(b) else False
                 for b in (e.lower, e.upper, e.step)]
        return None if False in parts else ("slice",) + tuple(parts)
    return _key(e, same) if syntax.is_atom(e) else None


def _names(key):
    """The names a key reads."""
    out = set()
    todo = [key]
    while todo:
        k = todo.pop()
        if isinstance(k, tuple):
            if len(k) == 2 and k[0] == "name":
                out.add(k[1])
            elif k and k[0] == "index":
                out.add(k[1])
                todo.extend(k[2:])
            else:
                todo.extend(k[1:])
    return out
