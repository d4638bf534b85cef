"""Shape analysis: which names certainly have the same shape.

The adjoint of a broadcasting operation is summed back to each argument's shape unless
the shapes are known to be equal. The shape of a name is known as the broadcast of a set
of shapes: a parameter's own, or that of an index of an array by constant slices that
trim as many elements from each axis (`x[1:]` and `x[:-1]` have the same shape), or of
the array another is made like (`np.zeros_like(a)`, `np.ones(a.shape)`). An
elementwise operation (`2 * x`, `np.tanh(x)`, `x + y`) has the broadcast of the sets of
its array operands, so that `y * z` and `(y * z) - np.exp(z)` have the same shape. An
index by an int removes an axis: a constant, the counter of a `for` over `range` (in
the loop's body, where a copy before the loop binds it too: Wengert form's `j_1 = j` for
a loop that may run no iteration), a name the kind analysis knows an int (sums and
products of ints, a parameter specialised on `int`), or the counter plus or minus an int
(`x[i]`, `x[j]` and `x[i - 1]` have one shape). Only names assigned once are classified
(Wengert form's `a = None` on a path that does not bind `a` is no binding: the user's
code never reads it there); a name assigned in several places (a loop-carried value)
has a shape of its own, unless it only ever holds versions of an array written element
by element (`a[i] = v`), which have that array's shape. An item of a tuple read by a
constant index (`state[0]`) has the class of the item: of a display's, of what a call
of a function of the user's returns (a new shape of the pattern its summary gives,
analysis/returned_shapes.py), of a tuple parameter whose caller gave its items'
patterns, or of a tuple a loop carries that keeps its items' patterns.

>>> import numpy as np
>>> from s2sad import pipeline
>>> from s2sad.options import Options
>>> def same_shape_in(f, patterns=None):    # the Shapes of f's Wengert form
...     arg_types = {p: np.ndarray for p in f.__code__.co_varnames[:f.__code__.co_argcount]}
...     options = Options(patterns=patterns)
...     ctx, _ = pipeline.compilation(f, arg_types=arg_types, options=options, until="wengert")
...     return ctx.shapes
>>> def f(x):
...     a = x[1:]
...     b = x[:-1]
...     c = a * b
...     d = 2.0 * c
...     return d
>>> shapes = same_shape_in(f)
>>> shapes.same("d", "a"), shapes.same("d", "x")
(True, False)

A gradient with a guard (`grad`, `value_and_grad`) may be specialised on the shape
patterns of its array arguments: how many axes each has and which have length 1
(`pattern`). Arrays that broadcast together and have the pattern of the result have its
shape (two axes of more than one element broadcast only if they are equal), so the
other members of the set are dropped, and the shapes of those arrays are one when the
statement that broadcast them surely ran. In `y * X @ w` with `y` of shape (n,) and
`X` of shape (n, d), `y` and the product have one shape, and the adjoint of a mean of
it stays a number. The patterns of matrix products are inferred from their operands'.
An operand whose pattern is that of the broadcast of all of them has the shape of the
result (`result_shaped`), also where the result's name is bound in several places (`y =
a + b` on one path of several).
The guard then tests the patterns the classes depend on (`used`, `pattern_tests`).

>>> def g(w, X, y):
...     z = X @ w
...     a = y * z
...     return a
>>> vector, matrix = ("<f8", (0,)), ("<f8", (0, 0))
>>> shapes = same_shape_in(g, {"w": vector, "X": matrix, "y": vector})
>>> shapes.same("a", "z"), shapes.same("y", "z"), sorted(shapes.used)
(True, True, ['X', 'w', 'y'])
>>> shapes = same_shape_in(g, {"w": vector, "X": matrix, "y": ("<f8", (1,))})
>>> shapes.same("a", "z"), shapes.same("y", "z")
(True, False)
"""
import operator

import gast
import numpy as np

from .. import marks, syntax
from ..rules import registry, runtime
from .operations import USER
from .value_kinds import ARRAY, CONTAINER, SCALAR, sequence_operands


class Shapes:
    """See the module docstring; `ops` are the statements' `Op`s, `kinds` their `ValueKinds`,
    `patterns` the shape patterns of array parameters the code is specialised on (see
    `pattern`)."""

    def __init__(self, fn, ops, kinds, patterns=None, items=None, returns=None):
        assigned = {}
        statements = syntax.statements(fn)
        for n in statements:
            if _unbound(n):
                continue        # (the user's code never reads the name on that path)
            if isinstance(n, gast.Assign) and isinstance(n.targets[0], gast.Name):
                assigned.setdefault(n.targets[0].id, []).append(n)
            elif isinstance(n, (gast.For, gast.AugAssign)):
                for t in syntax.name_nodes(n.target):
                    assigned.setdefault(t.id, []).extend([None, None])
        self.kinds = kinds
        self._bindings, self._ops = assigned, ops
        self.cls = {}
        self.many = {n for n, defs in assigned.items() if len(defs) > 1}
        self.ints = _ints(statements, kinds, assigned) | {
            n for n, known in kinds.ints.items() if known is True}
        # {id(statement): the counters certainly ints there}: in the body of a `for`
        # over `range`, its counter, though a copy before the loop binds it too (the
        # value it keeps where the loop runs no iteration: `j_1 = j`)
        self.body_ints = _body_ints(statements, kinds)
        # the versions of an array written element by element have its shape
        self.versions = _versions(statements, kinds, assigned, self.many)
        self.many -= set(self.versions)
        self._patterns = patterns or {}
        # {tuple parameter: the patterns of its items (None: unknown)}, given by a caller
        # that knew them; `returns(op, arg_patterns)`: what a call of a Python function of
        # the user's returns (see `_returned`)
        self._items = {p: v for p, v in (items or {}).items() if p not in assigned}
        self._returns = returns
        # Names bound in several places (a loop's carried state), and parameters bound
        # again, are guessed to keep one shape class: that of their first value (`u =
        # u0`), else their own. A guess holds when every binding has that class, given
        # the guesses; the classes are built again without the guesses that fail.
        args = fn.args
        params = {a.id for a in [*args.posonlyargs, *args.args, *args.kwonlyargs,
                                 args.vararg, args.kwarg] if isinstance(a, gast.Name)}
        # (only names a loop assigns: a join of branches rarely keeps one class, and
        # each guess that fails costs a pass over the function)
        in_loops = {n for s in statements if isinstance(s, (gast.For, gast.While))
                    for n in syntax.names_stored(syntax.if_(syntax.const(True), s.body))}
        # A tuple a loop carries keeps the patterns of its first value's items when every
        # binding has them, given that guess (its items are new shapes of those patterns).
        self._carried = {n: [d.value for d in defs] for n, defs in assigned.items()
                         if n in self.many and n in in_loops and n not in params
                         and kinds.kind.get(n) == CONTAINER and (patterns or items)
                         and all(d is not None for d in defs)} if returns else {}
        guesses = {n: [d for d in defs if not _is_none(d.value)]
                   for n, defs in assigned.items()
                   if (n in self.many or n in params) and n in in_loops
                   and n not in self.versions and all(d is not None for d in defs)
                   and kinds.kind.get(n) != SCALAR      # (a number has no class)
                   and n not in self._carried}
        own = {n for n in guesses if n in params or not guesses[n]}
        sure = _surely_run(fn) if patterns or items else set()
        assigns = [n for n in statements if isinstance(n, gast.Assign) and not _unbound(n)]
        many = self.many | set(guesses)     # (a wrong guess is a name of unknown shape)
        self._carried_sources = {}
        while True:
            self.many = many - set(guesses)
            self._classify(assigns, ops, sure, guesses, own)
            if self._carried_wrong():
                continue
            wrong = [n for n, defs in guesses.items()
                     if not all(self._holds(n, d, ops) for d in defs)]
            if not wrong:
                break
            for n in wrong:
                if n in own:
                    del guesses[n]
                else:
                    own.add(n)

    def _classify(self, assigns, ops, sure, guesses, own):
        """The classes of the names assigned once, and of the `guesses` (those in `own`
        keep their own), given the guesses."""
        self.pattern = {("name", p): v[1] for p, v in self._patterns.items()}
        self.sources = {("name", p): {p} for p in self._patterns}
        self.cls = {}
        self.parent = {}
        self.used = set()       # parameters whose patterns the classes depend on
        self._known = None      # {key: its canonical key}, once the classes are built
        self.items = {}         # {name of a tuple: the shape classes of its items (or None)}
        for p, pats in self._items.items():
            self.items[p] = tuple(self._base(("name", f"{p}[{i}]"), pat[1], {f"{p}[{i}]"})
                                  if pat is not None else None for i, pat in enumerate(pats))
        for s in assigns:
            target = s.targets[0]
            values = self._carried.get(getattr(target, "id", None))
            if values is not None and s.value is values[0]:
                first = self._item_patterns(values[0]) or ()
                self.items[target.id] = tuple(
                    None if pat is None else self._base(
                        ("carried", target.id, i), pat,
                        self._carried_sources.get((target.id, i), set()))
                    for i, pat in enumerate(first))
            if isinstance(target, gast.Name) and target.id not in self.many:
                name = target.id
                guessed = name in guesses
                op = ops.get(s)
                # (a name bound once, not a guess: `state[0]` is then one value's item)
                items = None if guessed or name in self._items else self._tuple_items(
                    name, s.value, op)
                if items is not None:
                    self.items[name] = items
                key = self._key(s.value, op, self.body_ints.get(id(s)))
                if key is not None:
                    if not guessed or (name not in own and name not in self.cls
                                       and s is guesses[name][0]):
                        self.cls[name] = key
                    if id(s) in sure:
                        self._join(key)
                elif (self._patterns or self._items) and not guessed:
                    self._infer(("name", name), op)
        self._known = {}

    # -- tuples: the shape classes of their items ----------------------------------------
    def _base(self, base, pat, sources):
        """The class of one new shape `base` of pattern `pat`, which relies on the patterns
        of the parameters `sources`."""
        self.pattern[base] = pat
        self.sources[base] = set(sources)
        return frozenset([base])

    def _tuple_items(self, name, value, op):
        """The classes of the items of the tuple `name = value` binds (None: not a tuple
        whose items are known): a display, another such tuple, or what a call of a
        function of the user's returns (by its summary, see `_returned`)."""
        if isinstance(value, gast.Tuple):
            return tuple(self.of(e.id) if isinstance(e, gast.Name)
                         and self.kinds.kind.get(e.id) not in (SCALAR, CONTAINER) else None
                         for e in value.elts)
        if isinstance(value, gast.Name):
            return self.items.get(value.id)
        if op is None or op.form != USER or self._returns is None:
            return None
        found = self._returned(op)
        if not isinstance(found, list):
            return None
        sources = self._sources_of(op)
        return tuple(None if pat is None else self._base(("result", name, i), pat, sources)
                     for i, pat in enumerate(found))

    def _returned(self, op):
        """The patterns of what the call `op` returns for the patterns of its arguments
        (`returns`): a pattern for an array, a list of patterns (or None) for a tuple's
        items, or None when unknown."""
        return self._returns(op, [self.argument_pattern(a) for a in op.args])

    def argument_pattern(self, atom):
        """The pattern of the atom `atom` a call passes: an array's pattern, a tuple of
        those (or None) for a tuple of known items; None when unknown."""
        if not isinstance(atom, gast.Name):
            return None
        if atom.id in self.items:
            found = tuple(self.class_pattern(k) for k in self.items[atom.id])
            return found if any(p is not None for p in found) else None
        if self.kinds.kind.get(atom.id) in (SCALAR, CONTAINER):
            return None
        return self.pattern_of(atom.id)

    def rely_on_argument(self, atom):
        """Record that generated code relies on `argument_pattern(atom)`."""
        if atom.id in self.items:
            for k in self.items[atom.id]:
                if k is not None:
                    self.rely_on(k)
        else:
            self.rely_on(self.of(atom.id))

    def _sources_of(self, op):
        """The parameters whose patterns those of the arguments of `op` come from."""
        out = set()
        for a in op.args:
            if isinstance(a, gast.Name):
                keys = self.items.get(a.id) or [self.of(a.id)]
                for k in keys:
                    for m in k or ():
                        out |= self._sources_deep(m)
        return out

    def _sources_deep(self, base):
        base = self._find(base)
        out = set(self.sources.get(base, set()))
        if base[0] == "index":
            for m in base[1]:
                out |= self._sources_deep(m)
        return out

    def _item_patterns(self, value):
        """The patterns of the items of the tuple `value` (a display or a name), or None."""
        if isinstance(value, gast.Tuple):
            return [None if not isinstance(e, gast.Name) or self.kinds.kind.get(e.id) in (
                SCALAR, CONTAINER) else self.pattern_of(e.id) for e in value.elts]
        if isinstance(value, gast.Name) and value.id in self.items:
            return [self.class_pattern(k) for k in self.items[value.id]]
        return None

    def _carried_wrong(self):
        """Whether a guess of `_carried` failed (it is then dropped) or the sources of its
        items grew (then kept): the classes are to be built again."""
        again = False
        for n, values in list(self._carried.items()):
            found = [self._item_patterns(v) for v in values]
            if any(f is None or f != found[0] for f in found):
                del self._carried[n]
                again = True
                continue
            for i in range(len(found[0])):
                sources = set(self._carried_sources.get((n, i), set()))
                for v in values:
                    k = self.items.get(v.id)[i] if isinstance(v, gast.Name) else (
                        self.of(v.elts[i].id) if isinstance(v.elts[i], gast.Name) else None)
                    for m in k or ():
                        sources |= self._sources_deep(m)
                if sources != self._carried_sources.get((n, i), set()):
                    self._carried_sources[(n, i)] = sources
                    again = True
        return again

    def _holds(self, name, s, ops):
        """Whether assignment `s` binds `name` to a value of the class guessed for it."""
        key = self._key(s.value, ops.get(s), self.body_ints.get(id(s)))
        return key is not None and self.canonical(key) == self.of(name)

    def of(self, name):
        """A set of shapes whose broadcast is the shape of `name` (None for unknown)."""
        name = self.versions.get(name, name)
        if name in self.many:
            return None
        return self.canonical(self.cls.get(name, frozenset([("name", name)])))

    def same(self, a, b):
        """Whether names (or name nodes) `a` and `b` certainly have the same shape."""
        a, b = (getattr(v, "id", v) for v in (a, b))
        if not (isinstance(a, str) and isinstance(b, str)):
            return False
        ka, kb = self.of(a), self.of(b)
        return a == b or (ka is not None and ka == kb)

    def pattern_of(self, name):
        """The shape pattern of `name` (see `pattern`), or None when unknown."""
        key = self.of(name)
        return None if key is None else _broadcast([self._pattern(b) for b in key])

    def bound_patterns(self, name):
        """The patterns of the arrays `name` is bound to, one per binding (None where
        unknown): that of its class for a name bound once."""
        if name not in self.many:
            return [self.pattern_of(name)]
        out = []
        for s in self._bindings.get(name, [None]):
            op = None if s is None else self._ops.get(s)
            if op is not None and op.form == USER and self._returns is not None:
                found = self._returned(op)
                out.append(found if isinstance(found, tuple) else None)
                continue
            key = None if s is None else self._key(s.value, op, self.body_ints.get(id(s)))
            out.append(self.class_pattern(None if key is None else self.canonical(key)))
        return out

    def result_shaped(self, mine, operands):
        """Whether the atom `mine`, one of the array `operands` of a broadcasting operation,
        has the shape of its result: its pattern is their broadcast's (two axes of more
        than one element broadcast only if equal). Code that relies on it relies on their
        patterns."""
        if not self.pattern or not all(isinstance(a, gast.Name) for a in operands) or not any(
                a is mine for a in operands):
            return False
        keys = [self.of(a.id) for a in operands]
        pats = [self.class_pattern(k) for k in keys]
        if None in pats or self.class_pattern(self.of(mine.id)) != _broadcast(pats):
            return False
        for k in keys:
            self.rely_on(k)
        return True

    def class_pattern(self, key):
        """The shape pattern of the arrays of shape class `key` (a value of `of`), or None
        when unknown. Code that relies on it calls `rely_on(key)`."""
        return None if key is None else _broadcast([self._pattern(b) for b in key])

    def rely_on(self, key):
        """Record that generated code relies on the pattern of class `key`: the guard
        tests the patterns of the parameters it comes from."""
        self._depends(key)

    # -- shape patterns: the number of axes, and which have length 1 ---------------------
    def _find(self, base):
        while base in self.parent:
            base = self.parent[base]
        return base

    def _pattern(self, base):
        base = self._find(base)
        if base in self.pattern:
            return self.pattern[base]
        if base[0] == "index":
            whole = _broadcast([self._pattern(b) for b in self.canonical(base[1])])
            if whole is None or len(base[2]) > len(whole):
                return None
            kept = [d for d, trim in zip(whole, base[2]) if trim != "int"]
            if any(trim not in ("int", 0) for trim in base[2]):
                return None         # a trimmed axis may be left with one element
            return tuple(kept) + whole[len(base[2]):]
        return None

    def _full(self, key):
        """The members of `key` whose shape is the broadcast of all of them (given that
        they broadcast together), or None when a pattern is unknown."""
        patterns = [self._pattern(b) for b in key]
        whole = _broadcast(patterns)
        if whole is None:
            return None
        return [b for b, p in zip(key, patterns) if p == whole]

    def _depends(self, key):
        for b in key:
            self.used |= self.sources.get(self._find(b), set())
            if b[0] == "index":
                self._depends(b[1])

    def canonical(self, key):
        """`key` with its members' classes, reduced to one member of the broadcast's
        shape when there is one: the others have ones or fewer axes where it has more
        (they broadcast together, or the value would not exist)."""
        if self._known is not None and key in self._known:
            return self._known[key]
        out = found = frozenset(self._find(b) for b in key)
        full = self._full(found) if len(found) > 1 and self.pattern else None
        if full:
            self._depends(found)
            out = frozenset([min(full, key=repr)])
        if self._known is not None:
            self._known[key] = out
        return out

    def _join(self, key):
        """Record that the members of `key` of the broadcast's shape have one shape: the
        statement that broadcast them together surely ran."""
        key = frozenset(self._find(b) for b in key)
        full = self._full(key) if len(key) > 1 and self.pattern else None
        if full and len(full) > 1:
            self._depends(key)
            # the least nested member leads, so that an index never leads the class of
            # the array it indexes (`t = e[:]; u = t + e`), which would be a cycle
            first = min(full, key=lambda b: (_depth(b), repr(b)))
            for b in full:
                if b != first:
                    self.parent[b] = first

    def _infer(self, base, op):
        """The pattern of the result of a matrix product or a reduction along constant
        axes, from its operands'."""
        if op is not None and getattr(registry.primitive(op.prim), "reduction", False):
            return self._reduced(base, op)
        if op is not None and op.form == USER and self._returns is not None:
            found = self._returned(op)
            if isinstance(found, tuple):
                self._base(base, found, self._sources_of(op))
            return
        if op is None or op.prim not in (operator.matmul, np.matmul, np.dot) or not all(
                isinstance(a, gast.Name) for a in op.args) or len(op.args) != 2:
            return
        self.product(base, *[self.of(a.id) for a in op.args], dot=op.prim is np.dot)

    def product(self, base, *keys, dot=False):
        """Give the class `base` the pattern of the matrix product of arrays of the classes
        `keys` (two), when theirs are known (`np.dot` with `dot`)."""
        if None in keys:
            return
        a, b = (_broadcast([self._pattern(m) for m in k]) for k in keys)
        if a is None or b is None or (dot and max(len(a), len(b)) > 2):
            return
        if not a or not b:
            return
        if len(a) == 1 and len(b) == 1:
            out = ()
        elif len(a) == 1:
            out = b[:-2] + b[-1:]
        elif len(b) == 1:
            out = a[:-1]
        else:
            batch = _broadcast([a[:-2], b[:-2]])
            out = batch + (a[-2], b[-1])
        self.pattern[base] = out
        self.sources[base] = set()
        for k in keys:
            for m in k:
                self.sources[base] |= self.sources.get(self._find(m), set())


    def _key(self, value, op, ints=None):
        if isinstance(value, gast.Name):
            return self.of(value.id)
        if (isinstance(value, gast.Subscript) and isinstance(value.value, gast.Name)
                and value.value.id in self.items and isinstance(value.slice, gast.Constant)
                and type(value.slice.value) is int):
            items, i = self.items[value.value.id], value.slice.value
            key = items[i] if -len(items) <= i < len(items) else None
            if key is not None and len(key) == 1 and next(iter(key))[0] == "carried":
                # (an item of a tuple a loop carries: each read is a shape of its own, of
                # the pattern all its bindings share, not one shape for all of them)
                base = next(iter(key))
                return self._base(("read",) + base[1:] + (id(value),), self.pattern[base],
                                  self.sources[base])
            return key
        if (isinstance(value, gast.Subscript) and isinstance(value.value, gast.Name)
                and self.kinds[value.value] == ARRAY):
            index = trims(value.slice, self.ints | ints if ints else self.ints)
            base = self.of(value.value.id)
            return None if index is None or base is None else frozenset(
                [("index", base, index)])
        made = self._made_like(value, op)
        if made is not None:
            return made
        variant = getattr(op, "variant", None)
        like = getattr(registry.primitive(op.prim), "shaped", None) if op else None
        if like is not None and op.bound and isinstance(op.bound.get(like), gast.Name):
            return self.of(op.bound[like].id)      # `np.roll(a, 1)` has the shape of `a`
        if variant is None or not variant.elementwise or sequence_operands(op, self.kinds):
            return None     # (`+` joining lists and `*` repeating one change the length)
        shaped = [a for a in op.bound.values() if self.kinds[a] != SCALAR]
        if not shaped or not all(isinstance(a, gast.Name) for a in shaped):
            return None
        keys = [self.of(a.id) for a in shaped]
        return None if None in keys else frozenset().union(*keys)

    def _made_like(self, value, op):
        """The class of an array made in the shape of another: `np.zeros_like(a)` (and
        `ones_like`, `empty_like`, `full_like(a, v)`) without a `shape`, and
        `np.zeros(s)` (`ones`, `empty`, `full(s, v)`) of `s = a.shape`: that of `a`."""
        if op is None or not isinstance(value, gast.Call) or not value.args:
            return None
        first = value.args[0]
        if not isinstance(first, gast.Name) or any(
                k.arg not in ("dtype", "order", "fill_value") for k in value.keywords):
            return None
        try:
            like, of_shape = _MADE_LIKE.get(op.prim), _MADE_OF_SHAPE.get(op.prim)
        except TypeError:       # (an object called that cannot be hashed: a dataclass's)
            return None
        if like is not None and len(value.args) <= like:
            return self.of(first.id) if self.kinds.kind.get(first.id) == ARRAY else None
        if of_shape is not None and len(value.args) <= of_shape:
            defs = self._bindings.get(first.id, [])
            shape = defs[0].value if len(defs) == 1 and defs[0] is not None else None
            if (isinstance(shape, gast.Attribute) and shape.attr == "shape"
                    and isinstance(shape.value, gast.Name)
                    and self.kinds.kind.get(shape.value.id) == ARRAY):
                return self.of(shape.value.id)
        return None

    def _reduced(self, base, op):
        if op.bound is None:        # a call the rule does not cover (`where=`)
            return
        a = op.bound.get("a")
        if not isinstance(a, gast.Name) or self.of(a.id) is None:
            return
        key = self.of(a.id)
        whole = _broadcast([self._pattern(m) for m in key])
        axis, keepdims = op.bound.get("axis"), op.bound.get("keepdims")
        if whole is None or not _constant(axis) or not _constant(keepdims):
            return
        axis = None if axis is None else axis.value if isinstance(axis, gast.Constant) \
            else tuple(e.value for e in axis.elts)
        if axis is None:
            axes = set(range(len(whole)))
        else:
            axes = {i % len(whole) for i in ((axis,) if isinstance(axis, int) else axis)} \
                if whole else set()
        kept = keepdims is not None and keepdims.value
        self.pattern[base] = tuple(1 if i in axes else d for i, d in enumerate(whole)) \
            if kept else tuple(d for i, d in enumerate(whole) if i not in axes)
        self.sources[base] = set()
        for m in key:
            self.sources[base] |= self.sources.get(self._find(m), set())


# {function: how many positional arguments it may take with the shape made as its
# first's}: of an array (`_like`), of a shape (`np.zeros(a.shape)`)
_MADE_LIKE = {np.zeros_like: 2, np.ones_like: 2, np.empty_like: 2, np.full_like: 3}
_MADE_OF_SHAPE = {np.zeros: 2, np.ones: 2, np.empty: 2, np.full: 3}


def pattern(array):
    """The pattern of `array` that generated code may be specialised on: its dtype (as
    `dtype.str`), and its shape pattern: per axis, 1 if it has length 1, else 0
    (broadcasting depends on nothing else)."""
    return array.dtype.str, tuple(1 if n == 1 else 0 for n in array.shape)


def pattern_tests(name, pat):
    """The tests, in generated code, that array `name` does not have shape pattern `pat`
    (the second item of a `pattern`)."""
    tests = [f"{name}.ndim != {len(pat)}"]
    if pat and not any(pat):
        return tests + [f"1 in {name}.shape"]
    return tests + [f"{name}.shape[{i}] {'!=' if one else '=='} 1" for i, one in enumerate(pat)]


def _is_none(value):
    """Whether `value` is the constant None (a name bound before a loop that may run no
    iteration): it has no shape to keep."""
    return isinstance(value, gast.Constant) and value.value is None


def _unbound(s):
    """Whether `s` is Wengert form's `x = None` for a name a path has not bound
    (marks.INIT), which the user's code never reads on that path: no binding of it."""
    return (isinstance(s, gast.Assign) and marks.INIT.of(s) and _is_none(s.value))


def _depth(base):
    """How deep `base` nests indexes: 0 for a name, 1 + its array's for an index."""
    return 0 if base[0] != "index" else 1 + max((_depth(b) for b in base[1]), default=0)


def _constant(e):
    """Whether `e` is absent or a constant (an int, a bool, None, or a tuple of ints)."""
    return e is None or (isinstance(e, gast.Constant) and type(e.value) in (
        int, bool, type(None))) or (isinstance(e, gast.Tuple) and all(
            isinstance(x, gast.Constant) and type(x.value) is int for x in e.elts))


def _broadcast(patterns):
    """The pattern of the broadcast of arrays of `patterns` (None if one is unknown)."""
    if any(p is None for p in patterns):
        return None
    ndim = max((len(p) for p in patterns), default=0)
    padded = [(1,) * (ndim - len(p)) + tuple(p) for p in patterns]
    return tuple(min(axis) if axis else 1 for axis in zip(*padded)) if padded else ()


def _surely_run(fn):
    """The ids of the assignments at the top of `fn`'s body that run whenever it
    returns: those before any statement that may return early."""
    out = set()
    for s in fn.body:
        if not isinstance(s, gast.Assign) and any(
                isinstance(n, (gast.Return, gast.Raise)) for n in syntax.walk(s)):
            break
        if isinstance(s, gast.Assign):
            out.add(id(s))
    return out


def _ints(statements, kinds, assigned):
    """The names certainly bound to ints: the counter of a `for` over `range` assigned
    nowhere else, and names assigned once to a sum or difference of those and ints."""
    out = set()
    for n in statements:
        if (isinstance(n, gast.For) and isinstance(n.target, gast.Name)
                and len(assigned.get(n.target.id, ())) == 2 and isinstance(n.iter, gast.Call)
                and kinds.src.resolve(n.iter.func) is range):
            out.add(n.target.id)
    once = [n for n in statements if isinstance(n, gast.Assign)
            and isinstance(n.targets[0], gast.Name) and len(assigned[n.targets[0].id]) == 1
            and isinstance(n.value, gast.BinOp) and isinstance(n.value.op, (gast.Add, gast.Sub))]
    changed = True
    while changed:
        changed = False
        for n in once:
            if n.targets[0].id not in out and all(
                    _int(x) is not None or (isinstance(x, gast.Name) and x.id in out)
                    for x in (n.value.left, n.value.right)):
                out.add(n.targets[0].id)
                changed = True
    return out


def _body_ints(statements, kinds):
    """{id(statement): counters}: each statement in the body of a `for` over `range`
    whose counter (a name) the body does not bind, with that counter."""
    out = {}
    for n in statements:
        if not (isinstance(n, gast.For) and isinstance(n.target, gast.Name)
                and isinstance(n.iter, gast.Call) and kinds.src.resolve(n.iter.func) is range):
            continue
        body = syntax.statements(syntax.if_(syntax.const(True), n.body))
        if n.target.id in {t for s in body for t in syntax.names_stored(s)}:
            continue
        for s in body:
            out[id(s)] = out.get(id(s), frozenset()) | {n.target.id}
    return out


def _versions(statements, kinds, assigned, many):
    """{name: the array it is a version of}: the results of element writes
    (`a_1 = _s2s_setitem(a, i, v)`), and the names a loop carries that are only ever
    such results or other versions (`a_1 = a_2` at the end of an iteration), back to
    the array first written, which is assigned once."""
    written = {n.targets[0].id: n.value.args[0].id for n in statements
               if isinstance(n, gast.Assign) and isinstance(n.targets[0], gast.Name)
               and isinstance(n.value, gast.Call)
               and marks.PRIM.of(n.value.func) is runtime.setitem
               and n.value.args and isinstance(n.value.args[0], gast.Name)}

    def root(n, seen):
        if n in seen:
            return None         # around a loop: the other definitions decide
        seen = seen | {n}
        if n not in many:
            return root(written[n], seen) if n in written else n
        found = set()
        for d in assigned[n]:
            v = getattr(d, "value", None)
            if isinstance(v, gast.Name):
                r = root(v.id, seen)
            elif isinstance(v, gast.Call) and marks.PRIM.of(v.func) is \
                    runtime.setitem and v.args and isinstance(v.args[0], gast.Name):
                r = root(v.args[0].id, seen)
            else:
                return None     # bound to another value
            if r is not None:
                found.add(r)
        return found.pop() if len(found) == 1 else None
    out = {}
    for n in set(written) | {n for n in many if any(
            isinstance(getattr(d, "value", None), gast.Name) for d in assigned[n])}:
        r = root(n, frozenset())
        if r is not None and r != n and r not in many and kinds.kind.get(r) == ARRAY:
            out[n] = r
    root = None     # (a function calling itself is a cycle, which would keep `assigned`)
    return out


def trims(index, ints=()):
    """A key for a constant basic index that determines the shape it selects from an
    array of a given shape: per axis, an int (a constant, or a name in `ints`) removes
    it, and a slice `a:-b` keeps `max(n - a - b, 0)` of `n` elements."""
    items = index.elts if isinstance(index, gast.Tuple) else [index]
    out = []
    for item in items:
        if _int(item) is not None or (isinstance(item, gast.Name) and item.id in ints):
            out.append("int")
            continue
        if not isinstance(item, gast.Slice) or item.step is not None:
            return None
        lower = 0 if item.lower is None else _int(item.lower)
        upper = 0 if item.upper is None else _int(item.upper)
        if lower is None or upper is None or lower < 0 or upper > 0 or (
                item.upper is not None and upper == 0):
            return None
        out.append(lower - upper)
    return tuple(out)


def _int(e):
    if isinstance(e, gast.Constant) and type(e.value) is int:
        return e.value
    if (isinstance(e, gast.UnaryOp) and isinstance(e.op, gast.USub)
            and isinstance(e.operand, gast.Constant) and type(e.operand.value) is int):
        return -e.operand.value
    return None

