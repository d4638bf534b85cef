"""What a value shares memory with, for the aliasing pass (before_ad/aliasing.py, whose
`Aliasing` sets `ctx`, `src`, `kinds`, `params`, `values`, `ndim`, `patterned`, `maybe`
and `views`): the names a value of Wengert form is the same object as, a view, an
element or a part of, or a new container holding; the indexes that certainly copy; and
the parts of one array split (`a, b = np.split(y, [1])`), which share no memory with
each other (`split_parts`)."""
import gast
import numpy as np

from .. import marks
from .. import syntax
from ..analysis.value_kinds import ARRAY, CONTAINER, SCALAR, user_class
from ..rules import registry, runtime
from .callee_effects import FRESH, FRESH_METHODS, REGROUPING

#: Functions whose result is bools, or arrays of ints, or a tuple of arrays: an index by
#: it copies (`y[np.isnan(y)]`, `y[np.argsort(y)]`), whatever the number of axes.
INDEX_ARRAYS = (np.argsort, np.nonzero, np.flatnonzero, np.argwhere, np.arange,
                np.logical_and, np.logical_or, np.logical_not, np.logical_xor, np.isnan,
                np.isinf, np.isfinite, np.isclose, np.less, np.less_equal, np.greater,
                np.greater_equal, np.equal, np.not_equal)


class SharedMemory:
    """`shares` and what it asks, and `split_parts` (see the module docstring)."""

    def split_parts(self, fn):
        """{id of `b = parts[j]`: (the names bound since to other parts of the same split,
        `a = parts[k]`, k != j, and not bound again; the name of the array split, if not
        bound again since, or None)}, after each `parts = np.split(y, ...)` (a primitive
        whose record says `disjoint`). Wengert form unpacks `a, b = np.split(y, [1])`
        so. The parts of one array share no memory with each other: a write into one
        leaves the others as they are."""
        out = {}
        for block in syntax.blocks(fn.body, functions=False):
            for i, s in enumerate(block):
                split = self.split_of(s)
                if split is False:
                    continue
                parts, base, bound = s.targets[0].id, split, {}
                for later in block[i + 1:]:
                    k = _part_index(later, parts)
                    if k is not None:
                        target = later.targets[0].id
                        out[id(later)] = ([n for n, j in bound.items() if j != k and n != target],
                                          base)
                    stored = syntax.names_stored(later)
                    if parts in stored:
                        break
                    for n in stored:
                        bound.pop(n, None)
                    base = None if base in stored else base
                    if k is not None:
                        bound[target] = k
        return out

    def split_of(self, s):
        """The name of the array `s` splits into parts that share no memory (None when
        not a name), or False: `s` is no such split. The parts share none where the
        array is cut in a number of parts, or at indexes in order (`[1, 3]`; `[3, 1]`
        makes parts `y[:3]` and `y[1:]`)."""
        if not (isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name)
                and isinstance(s.value, gast.Call)):
            return False
        record = registry.primitive(self.ctx.resolve(s.value.func))
        if record is None or record.disjoint is None or len(s.value.args) <= record.disjoint \
                or not self.in_order(s.value.args[record.disjoint]):
            return False
        keywords = {k.arg: k.value for k in s.value.keywords if k.arg is not None}
        viewed = self.held(registry.viewed(record, s.value.args, keywords))
        return viewed[0] if len(viewed) == 1 else None

    def in_order(self, cuts):
        """Whether `cuts`, where an array is split, is a number (of parts) or indexes in
        order, all from the start or all from the end."""
        if isinstance(cuts, gast.Constant) or (isinstance(cuts, gast.Name)
                                               and self.kinds.kind.get(cuts.id) == SCALAR):
            return isinstance(cuts, gast.Name) or type(cuts.value) is int
        values = self.values.get(cuts.id, []) if isinstance(cuts, gast.Name) else [cuts]
        if len(values) != 1 or not isinstance(values[0], (gast.List, gast.Tuple)):
            return False
        at = [_number(e) for e in values[0].elts]
        return all(type(k) is int for k in at) and at == sorted(at) and (
            not at or (at[0] >= 0) == (at[-1] >= 0))

    def split_arrays(self):
        """The names bound only to parts of arrays split (`split_parts`), or to versions of
        them written into (`b_1 = setitem(b, 0, v)`): certainly arrays."""
        looped = {s.target.id for s in self.statement.values() if isinstance(s, gast.For)
                  and isinstance(s.target, gast.Name)}
        out = set()
        while True:
            more = {n for n, defs in self.defs.items() if n not in out | looped and all(
                id(d) in self.parts or isinstance(d.value, gast.Call) and marks.PRIM.of(
                    d.value.func) is runtime.setitem and isinstance(d.value.args[0], gast.Name)
                and d.value.args[0].id in out for d in defs)}
            if not more:
                return out
            out |= more

    def certain_array(self, name):
        """Whether `name` certainly holds an array (whose memory may be apart from
        another's)."""
        return self.kinds.kind.get(name) == ARRAY or name in self.split

    def shares(self, target, v, s=None):
        """[(name, relation)]: the names whose memory the value `v` of `target` shares:
        the same object ("version"), a view of it ("same"), an element of it
        ("element"), a part of a value that may be an array or a list ("part"), or a new
        container holding it ("holds") or what it holds ("elements"). None: new memory."""
        if isinstance(v, gast.Subscript) and isinstance(v.value, gast.Name):
            if not self.local(v.value) or self.copies(v.value.id, v.slice) or (
                    s is not None and self.may_copy(s, v.value.id, v.slice)):
                return []
            if isinstance(v.slice, gast.Slice) and self.kinds.kind.get(v.value.id) == CONTAINER:
                return [(v.value.id, "elements")]   # (a slice of a list: a new list of them)
            return [(v.value.id, self.part(v.value.id))]
        if isinstance(v, gast.Attribute) and isinstance(v.value, gast.Name):
            if not self.local(v.value):
                return []
            record = registry.primitive(registry.ATTRIBUTES.get(v.attr))
            return [(v.value.id, "same")] if record is None or record.view else []
        if isinstance(v, (gast.Tuple, gast.List, gast.Dict)):
            return [(n, "holds") for n in self.held(
                v.values if isinstance(v, gast.Dict) else v.elts)]
        if isinstance(v, gast.BinOp) and self.kinds.of(v) == CONTAINER:   # `a + b`, `a * 2`
            return [(n, "elements") for n in self.held([v.left, v.right])
                    for _ in range(1 if isinstance(v.op, gast.Add) else 2)]
        if isinstance(v, gast.Call):
            return self.returned(v)
        return []

    def returned(self, call):
        func = call.func
        out = next((k.value for k in call.keywords if k.arg == "out"), None)
        if isinstance(out, gast.Name) and self.local(out):
            return [(out.id, "same")]       # `b = np.exp(a, out=a)`: b is a
        if marks.PRIM.of(func) in (runtime.setitem, runtime.append, runtime.attr_set):
            held = self.held(call.args[1:]) if marks.PRIM.of(func) is runtime.append else []
            return [(call.args[0].id, "version")] + [(n, "holds") for n in held]
        if isinstance(func, gast.Attribute) and self.local(func.value):
            record = registry.primitive(registry.METHODS.get(func.attr))
            if record is not None:
                return self.viewing(record, [func.value] + call.args, call)
            if func.attr in FRESH_METHODS:
                return []
            return [(n, "same") for n in [func.value.id] + self.held(call.args)]
        prim = self.ctx.resolve(func)
        if any(prim is f for f in FRESH):
            return []
        if isinstance(prim, type) and user_class(prim):     # an object holds its fields
            return [(n, "holds") for n in self.held(call.args + [k.value for k in call.keywords])]
        if any(prim is f for f in REGROUPING):
            return [(n, r) for n in self.held(call.args[:1]) for r in (
                ["holds"] if self.kinds.kind.get(n) == ARRAY else ["elements"]
                if self.kinds.kind.get(n) == CONTAINER else ["holds", "elements"])]
        record = registry.primitive(prim)
        if record is not None:
            return self.viewing(record, call.args, call)
        return [(n, "same") for n in self.held(call.args + [k.value for k in call.keywords])]

    def viewing(self, record, args, call):
        """The relations of a call of a primitive whose record is `record`, given `args`:
        the views of arguments its record says (a list of them: `np.split`)."""
        keywords = {k.arg: k.value for k in call.keywords if k.arg is not None}
        relation = "holds" if record.returns == "container" else "same"
        return [(n, relation) for n in self.held(registry.viewed(record, args, keywords))]

    def iterated(self, it):
        if isinstance(it, gast.Call):
            if self.ctx.resolve(it.func) is range:
                return []
            return [(n, self.part(n)) for n in self.held(it.args)]
        return [(n, self.part(n)) for n in self.held([it])]

    def part(self, container):
        """How an element or a loop variable of `container` relates to it: a list's
        element is held by it, an index of an array is a view, and of a value of unknown
        kind either."""
        kind = self.kinds.kind.get(container)
        return "element" if kind == CONTAINER else "same" if kind == ARRAY else "part"

    def held(self, values):
        return [v.id for v in values if isinstance(v, gast.Name) and self.local(v)
                and self.kinds.kind.get(v.id) != SCALAR]

    def local(self, e):
        return isinstance(e, gast.Name) and (self.src.is_local(e.id) or e.id in self.params)

    def copies(self, base, index):
        """Whether `base[index]` is certainly not a view: one element of an array of
        known number of axes, or an index by an array of bools or ints or by a list."""
        parts = index.elts if isinstance(index, gast.Tuple) else [index]
        if any(isinstance(p, gast.List) or (isinstance(p, gast.Name) and (self.ndim.get(
                p.id, 0) > 0 and p.id not in self.patterned or self.index_array(p.id)))
               for p in parts):
            return True
        return _ints(parts, self.kinds) and self.ndim.get(base) == len(parts) and (
            base not in self.patterned)

    def index_array(self, name, seen=()):
        """Whether `name`, as an index, is certainly bools or an array of ints, or a tuple
        of them (which copies): bound only to a comparison (`t = y > 0`), `not` or `~` of
        one, a function of `INDEX_ARRAYS`, a list display (`t = [-1, 0]`, which Wengert
        form names), or `np.array`/`np.asarray` of one."""
        values = self.values.get(name)
        if not values or name in seen:
            return False
        seen = seen + (name,)

        def copying(v):
            if isinstance(v, (gast.List, gast.Compare)) or (
                    isinstance(v, gast.UnaryOp) and isinstance(v.op, gast.Not)):
                return True
            if isinstance(v, gast.UnaryOp) and isinstance(v.op, gast.Invert):
                return isinstance(v.operand, gast.Name) and all(
                    isinstance(w, gast.Compare) for w in self.values.get(v.operand.id, [None]))
            if not isinstance(v, gast.Call) or v.keywords:
                return False
            prim = self.ctx.resolve(v.func)
            if any(prim is f for f in INDEX_ARRAYS):
                return True
            return (any(prim is f for f in (np.array, np.asarray)) and len(v.args) == 1
                    and isinstance(v.args[0], gast.Name) and all(
                        isinstance(w, gast.List) for w in self.values.get(v.args[0].id, [None])))
        return all(copying(v) for v in values)

    def may_copy(self, s, base, index):
        """Whether `s`, `r = base[index]` by ints, is taken as a number in this run,
        where `base`'s number of axes is not known, or known only from the shape
        patterns `grad` is specialised on (see `check`)."""
        parts = index.elts if isinstance(index, gast.Tuple) else [index]
        if not _ints(parts, self.kinds) or self.kinds.kind.get(base) == CONTAINER or (
                base in self.ndim and (base not in self.patterned
                                       or self.ndim[base] != len(parts))):
            return False
        if id(s) not in self.maybe:
            self.maybe[id(s)] = (self.patterned.get(base), self.src.syntax_error(s, (
                f"{self.src.line_text(s).strip()} is a view (the array has more axes than "
                "it is indexed with), and the function reads it after a write into the "
                "array, which s2sad follows only through the name written. Make the copy "
                "explicit (.copy()), or index the array again after the write")))
        return id(s) not in self.views


def _ints(parts, kinds):
    return all(isinstance(p, gast.Constant) and type(p.value) is int or (
        isinstance(p, gast.Name) and kinds.kind.get(p.id) == SCALAR) for p in parts)


def _part_index(s, parts):
    """k, where `s` is `a = parts[k]`, k a constant not below 0; else None."""
    v = s.value if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name) else None
    if (isinstance(v, gast.Subscript) and isinstance(v.value, gast.Name) and v.value.id == parts
            and isinstance(v.slice, gast.Constant) and type(v.slice.value) is int
            and v.slice.value >= 0):
        return v.slice.value
    return None


def _number(e):
    """The number the constant `e` is (`-1` too), or None."""
    if isinstance(e, gast.UnaryOp) and isinstance(e.op, gast.USub):
        inner = _number(e.operand)
        return None if inner is None else -inner
    return e.value if isinstance(e, gast.Constant) and type(e.value) is int else None
