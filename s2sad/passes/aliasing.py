"""Aliasing: refuse, before differentiating, a read of a value after a write through
another name for its memory.

Takes the function in Wengert form and changes nothing but adding run-time checks
(below). NumPy arrays and lists are objects: `z = y`, `r = y[0]`, `v = y.T`,
`v = y.reshape(-1)`, `for row in y` and a list holding `y` give the memory of `y`
another name, and a write through one name (`z[0] = v`, `v *= 2`, `lst.append(v)`)
changes what every other one holds. Wengert form writes functionally: `z_1 =
setitem(z, 0, v)` is a new version of `z`, which the derivative, and the value
computed with it, follow; the other names keep the old value. So a name bound, before
a write, to memory the write may change, and read after it, would hold the old value
where NumPy reads the new one. This pass finds such reads (a forward data flow of the
objects each name may share memory with, to a fixed point over loops) and stops with
a located `UnsupportedSyntaxError` that names the write and the alias and says what
to write.

A view is assumed wherever NumPy may make one: an index of an array, unless it
certainly picks one element (a number, which is a copy) or is an index array or a
list (named or not: `x[[-1, 0]]` copies); the functions and methods whose record says
`view`, and methods without a record; a list or tuple holding the array; a loop over
it; what a Python function returns. A write is an element assignment, an append, and
an augmented assignment (`v *= 2`) to a value that may be an array or a list (NumPy
and Python do those in place).

>>> from s2sad import UnsupportedSyntaxError
>>> try:
...     show("aliasing", '''
... def f(a):
...     y = np.zeros((2, 2))
...     r = y[0]
...     y[0, 0] = a
...     return np.sum(r * a)
... ''')
... except UnsupportedSyntaxError as exc:
...     print(exc.lineno, exc.reason)
6 r is read after line 5 (y[0, 0] = a) writes into the array it shares memory with (line 4: r = y[0]); NumPy shows the write through r, but s2sad follows a write only through the name written, so the value and the derivative would use the old r. Make the copy explicit where the other name is made (.copy()), or read the array written again after the write

Where the number of axes of the array is not known, `r = y[0]` may be a number (a
copy) or a row (a view): the pass then adds a check, which raises that error at run
time if it is a view.

>>> print(show("aliasing", '''
... def f(a):
...     y = a * 1.0
...     r = y[0]
...     y[0] = 5.0
...     return np.sum(r * a)
... ''', arrays=True))
def f(a):
    y = a * 1.0
    r = y[0]
    _s2s_refuse_view(r, _s2s_view_error)
    y_1 = _s2s_setitem(y, 0, 5.0)
    t = r * a
    y_2 = np.sum(t)
    return y_2
"""
import dataclasses
import re

import gast
import numpy as np

from .. import syntax
from ..analysis.value_kinds import ARRAY, CONTAINER, SCALAR, UNKNOWN
from ..frontend import source
from ..rules import registry, runtime

#: Python functions whose result holds no memory of their arguments.
FRESH = (len, int, float, bool, complex, str, repr, isinstance, type, id, hash, range,
         print, round, abs, sum, divmod, pow, sorted, runtime.snapshot)

#: Methods that always copy, whatever their records say.
COPYING_METHODS = {"flatten", "copy", "tolist", "item", "astype"}

#: NumPy functions that make an array of a given shape (the first argument).
_CONSTRUCTORS = ("zeros", "ones", "empty", "full")
_LIKE = ("zeros_like", "ones_like", "empty_like", "full_like", "copy", "array")


def run(fn, ctx):
    """The pass: check `fn`. s2sad's own derivatives (differentiated again) write in
    place only where no other name sees the write."""
    if not source.is_generated(ctx.src) and _writes(fn):
        Aliasing(fn, ctx).check(fn)
    return fn


def _writes(fn):
    """Whether `fn` may write into memory (an element write, an append, an augmented
    assignment): without one, no name can hold an old value."""
    return any(isinstance(s, gast.Assign) and (getattr(s, "s2s_augmented", False) or (
        isinstance(s.value, gast.Call) and getattr(s.value.func, "s2s_prim", None) in (
            runtime.setitem, runtime.append))) for s in syntax.statements(fn))


@dataclasses.dataclass(frozen=True)
class Held:
    """What a name holds at a point: the objects whose memory it may share, the frames
    its indices count in (a view has its own), and the statement that made it share
    another name's memory (None for an object of its own)."""
    objects: frozenset = frozenset()
    frames: frozenset = frozenset()
    made: object = None

    def join(self, other):
        return Held(self.objects | other.objects, self.frames | other.frames,
                    self.made or other.made)


class Aliasing:
    """See the module docstring."""

    def __init__(self, fn, ctx):
        self.ctx, self.src, self.kinds = ctx, ctx.src, ctx.value_kinds
        params = [a.id for a in fn.args.args + fn.args.posonlyargs + fn.args.kwonlyargs]
        self.params = set(params)
        self.entry = {p: Held(frozenset([p]), frozenset([p])) for p in params
                      if self.kinds.kind.get(p) != SCALAR}
        self.contents = {}      # {container object: the objects it may hold}, per `run`
        self.maybe = {}         # {id of `r = y[i]` that may be a view: (the parameters
        #                          whose patterns tell, the error if it is a view)}
        self.defs, self.loop_of = {}, {}
        for s in syntax.statements(fn):
            if isinstance(s, (gast.For, gast.While)):
                for inner in syntax.statements(syntax.if_(syntax.const(True), s.body)):
                    self.loop_of[id(inner)] = s         # walk order: the innermost wins
            if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name):
                self.defs.setdefault(s.targets[0].id, []).append(s)
        self.values = {n: [d.value for d in ds] for n, ds in self.defs.items()}
        self.ndim, self.patterned = _ndims(self.values, ctx)
        self.arrays = self.mutable()

    def check(self, fn):
        """Raise at the first read of an old value, if there is one whatever the indexes
        whose result may be a number or a view (`maybe`: of an array whose number of
        axes is not known) turn out to be. Otherwise, if such an index being a view
        would make one, check after it, at run time, that it is not (`refuse_view`)."""
        self.run(fn, raising=True)
        if not self.maybe or not self.run(fn, views=set(self.maybe)):
            return
        suspects = [m for m in self.maybe if self.run(fn, views={m})] or list(self.maybe)
        for m in suspects:
            for p in self.maybe[m][0] or ():        # the guard tests those patterns
                self.ctx.shapes.rely_on(frozenset([("name", p)]))
        suspects = [m for m in suspects if not self.maybe[m][0]]
        check = suspects and self.ctx.runtime("refuse_view")
        for block in syntax.blocks(fn.body):
            for k in range(len(block) - 1, -1, -1):
                s = block[k]
                if id(s) in suspects:
                    error = self.ctx.bind("_s2s_view_error", obj=self.maybe[id(s)][1])
                    block.insert(k + 1, syntax.located(syntax.expr_stmt(syntax.call(
                        check, [syntax.name(s.targets[0].id), syntax.name(error)])), s))

    def run(self, fn, views=(), raising=False):
        """Whether a name holds an old value where it is read, with the indexes of
        `views` taken as views (the others which may be are taken as numbers). What
        containers hold is found first (it only grows, so a few rounds reach it)."""
        self.views, self.reading, self.contents = set(views), None, {}
        while True:
            before = {k: set(v) for k, v in self.contents.items()}
            self.flow(fn.body, (dict(self.entry), {}))
            if self.contents == before:
                break
        self.reading = "raise" if raising else "ask"
        try:
            self.flow(fn.body, (dict(self.entry), {}))
        except _Found:
            return True
        return False

    def mutable(self):
        """The names that may hold an array or a list: of that kind, or a view or a
        version of one (`v = y.view()`)."""
        out = {n for n, k in self.kinds.kind.items() if k in (ARRAY, CONTAINER)}
        changed = True
        while changed:
            changed = False
            for name, defs in self.defs.items():
                if name not in out and any(
                        relation in ("same", "version") and other in out
                        for d in defs for other, relation in self.shares(name, d.value)):
                    out.add(name)
                    changed = True
        return out

    # -- the data flow -----------------------------------------------------------------
    def flow(self, stmts, state):
        """The state after `stmts`: ({name: Held}, {name: (write, link)} of the names
        holding an old value, with the write and the statement that made the alias)."""
        for s in stmts:
            if isinstance(s, gast.If):
                self.reads(s.test, state, s)
                state = _join(self.flow(s.body, _copy(state)), self.flow(s.orelse, _copy(state)))
            elif isinstance(s, (gast.For, gast.While)):
                is_for = isinstance(s, gast.For)
                self.reads(s.iter if is_for else s.test, state, s)
                while True:
                    head = _copy(state)
                    if is_for:
                        self.bind(s.target.id, self.iterated(s.iter), s, head)
                    else:
                        self.reads(s.test, head, s)
                    joined = _join(state, self.flow(s.body, head))
                    if joined == state:
                        break
                    state = joined
            elif isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name):
                target, v = s.targets[0].id, s.value
                names, stale = state
                if isinstance(v, gast.Name):        # a copy carries an old value along
                    if v.id in stale:
                        stale[target] = stale[v.id]
                    else:
                        stale.pop(target, None)
                    names[target] = names.get(v.id, Held())
                    continue
                self.reads(v, state, s)
                base = self.written(s)
                self.bind(target, self.shares(target, v, s), s, state)
                if base is not None:
                    self.mark(target, base, s, state)
            else:
                self.reads(s, state, s)
        return state

    def bind(self, target, relations, s, state):
        """Bind `target` (by `s`) to what `relations` ([(name, relation)], see
        `shares`) say it holds."""
        names, stale = state
        stale.pop(target, None)
        if self.kinds.kind.get(target) == SCALAR:
            names[target] = Held()
            return
        if not relations:
            names[target] = Held(frozenset([id(s)]), frozenset([id(s)]))
            return
        held, new = Held(), None
        for other, relation in relations:
            h = names.get(other, Held(frozenset([other]), frozenset([other])))
            if relation == "version":
                held = held.join(h)
            elif relation == "same":
                held = held.join(Held(h.objects, frozenset([id(s)]), s))
            elif relation == "element":
                inside = frozenset(x for o in h.objects
                                   for x in self.contents.get(o, set()) | {("in", o)})
                held = held.join(Held(inside, frozenset([id(s)]), s))
            else:                                   # "holds"
                new = new or id(s)
                self.contents.setdefault(new, set()).update(h.objects)
                self.contents.setdefault(new, set()).update(
                    x for o in h.objects for x in self.contents.get(o, ()))
                held = held.join(Held(frozenset([new]), frozenset([new]), s))
        if any(r == "version" for _, r in relations) and new is not None:
            for o in held.objects - {new}:          # an append: the list holds it
                self.contents.setdefault(o, set()).update(self.contents[new])
            held = Held(held.objects - {new}, held.frames - {new}, held.made)
        names[target] = held

    def mark(self, target, base, write, state):
        """After `write` into `base` (now `target`): the other names of that memory, and
        of the containers holding it, hold old values."""
        names, stale = state
        written = set(names.get(base, Held()).objects)
        changed = True
        while changed:          # the containers that hold what is written
            changed = False
            for o, inside in self.contents.items():
                if o not in written and inside & written:
                    written.add(o)
                    changed = True
        link = names.get(base, Held()).made
        for n, held in names.items():
            if n != target and held.objects & written and not self.apart(n, write, base, names):
                stale[n] = (write, held.made or link)

    def reads(self, node, state, s):
        if self.reading is None:
            return
        for n in syntax.name_nodes(node):
            if isinstance(n.ctx, gast.Load) and n.id in state[1]:
                raise self.refusal(n.id, *state[1][n.id], s) if self.reading == "raise" \
                    else _Found()

    def written(self, s):
        """The name whose memory the assignment `s` writes into, or None."""
        v = s.value
        if isinstance(v, gast.Call) and getattr(v.func, "s2s_prim", None) in (
                runtime.setitem, runtime.append):
            return v.args[0].id
        # `x += y` writes in place only into an array or a list; of unknown kind (the
        # result of a Python function) it is taken as a number, not to refuse scalar code
        if (getattr(s, "s2s_augmented", False) and isinstance(v, gast.BinOp)
                and isinstance(v.left, gast.Name) and v.left.id in self.arrays):
            return v.left.id
        return None

    # -- what a value shares ---------------------------------------------------------
    def shares(self, target, v, s=None):
        """[(name, relation)]: the names whose memory the value `v` of `target` shares:
        the same object ("version"), a view of it ("same"), an element of it
        ("element"), or a container holding it ("holds"). None: a new object."""
        if isinstance(v, gast.Subscript) and isinstance(v.value, gast.Name):
            if not self.local(v.value) or self.copies(v.value.id, v.slice) or (
                    s is not None and self.may_copy(s, v.value.id, v.slice)):
                return []
            return [(v.value.id, self.part(v.value.id))]
        if isinstance(v, gast.Attribute) and isinstance(v.value, gast.Name):
            if not self.local(v.value):
                return []
            record = registry.primitive(registry.ATTRIBUTES.get(v.attr))
            return [(v.value.id, "same")] if record is None or record.view else []
        if isinstance(v, (gast.Tuple, gast.List)):
            return [(n, "holds") for n in self.held(v.elts)]
        if isinstance(v, gast.Call):
            return self.returned(v)
        return []

    def returned(self, call):
        func = call.func
        out = next((k.value for k in call.keywords if k.arg == "out"), None)
        if isinstance(out, gast.Name) and self.local(out):
            return [(out.id, "same")]       # `b = np.exp(a, out=a)`: b is a
        if getattr(func, "s2s_prim", None) in (runtime.setitem, runtime.append):
            held = self.held(call.args[1:]) if func.s2s_prim is runtime.append else []
            return [(call.args[0].id, "version")] + [(n, "holds") for n in held]
        if isinstance(func, gast.Attribute) and self.local(func.value):
            if func.attr in COPYING_METHODS:
                return []
            record = registry.primitive(registry.METHODS.get(func.attr))
            if record is not None:
                return [(func.value.id, "same")] if record.view else []
            return [(n, "same") for n in [func.value.id] + self.held(call.args)]
        prim = self.ctx.resolve(func)
        if any(prim is f for f in FRESH):
            return []
        record = registry.primitive(prim)
        if record is not None:
            return [(n, "same") for n in self.held(call.args[:1])] if record.view else []
        return [(n, "same") for n in self.held(call.args + [k.value for k in call.keywords])]

    def iterated(self, it):
        if isinstance(it, gast.Call):
            if self.ctx.resolve(it.func) is range:
                return []
            return [(n, self.part(n)) for n in self.held(it.args)]
        return [(n, self.part(n)) for n in self.held([it])]

    def part(self, container):
        """How an element or a loop variable of `container` relates to it: a list's
        element is held by it, an index of an array is a view."""
        return "element" if self.kinds.kind.get(container) == CONTAINER else "same"

    def held(self, values):
        return [v.id for v in values if isinstance(v, gast.Name) and self.local(v)
                and self.kinds.kind.get(v.id) != SCALAR]

    def local(self, e):
        return isinstance(e, gast.Name) and (self.src.is_local(e.id) or e.id in self.params)

    def copies(self, base, index):
        """Whether `base[index]` is certainly not a view: one element of an array of
        known number of axes, or an index by an array or a list."""
        parts = index.elts if isinstance(index, gast.Tuple) else [index]
        if any(isinstance(p, gast.List) or (isinstance(p, gast.Name) and (self.ndim.get(
                p.id, 0) > 0 and p.id not in self.patterned or self.listed(p.id)))
               for p in parts):
            return True
        return _ints(parts, self.kinds) and self.ndim.get(base) == len(parts) and (
            base not in self.patterned)

    def listed(self, name):
        """Whether `name` is only ever bound to a list display (`t = [-1, 0]`, which
        Wengert form names) or to `np.array`/`np.asarray` of one: as an index, an index
        array, which copies."""
        values = self.values.get(name)
        if not values:
            return False
        return all(isinstance(v, gast.List) or (
            isinstance(v, gast.Call) and len(v.args) == 1 and not v.keywords
            and any(self.ctx.resolve(v.func) is f for f in (np.array, np.asarray))
            and isinstance(v.args[0], gast.Name) and v.args[0].id != name
            and all(isinstance(w, gast.List) for w in self.values.get(v.args[0].id, [None])))
            for v in values)

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

    def apart(self, n, write, base, names):
        """Whether `write` into `base` certainly misses the memory of `n`: in one
        iteration of a `for` over `range`, `n = b[i + c]` is bound before the write
        (at the top of the loop's body) and the write is into `b[i + d]`, `d != c`, `b`
        and `base` indexed alike, and no index below 0 (which counts from the end)."""
        defs = self.defs.get(n, [])
        index = getattr(write.value, "s2s_index", None)
        if len(defs) != 1 or not isinstance(defs[0].value, gast.Subscript) or index is None:
            return False
        bound, loop = defs[0], self.loop_of.get(id(defs[0]))
        if not (isinstance(loop, gast.For) and isinstance(loop.target, gast.Name)
                and isinstance(loop.iter, gast.Call) and self.ctx.resolve(loop.iter.func) is range
                and bound in loop.body and isinstance(bound.value.value, gast.Name)):
            return False
        counter, args = loop.target.id, loop.iter.args
        start = 0 if len(args) == 1 else getattr(args[0], "value", None)
        if type(start) is not int or counter in syntax.names_stored(
                syntax.if_(syntax.const(True), loop.body)):
            return False
        after = [t for t in loop.body[loop.body.index(bound) + 1:]
                 if any(x is write for x in syntax.statements(t))]
        frames = [names.get(b, Held()).frames for b in (bound.value.value.id, base)]
        c, d = (self.offset(_first(e), counter) for e in (bound.value.slice, index))
        return (bool(after) and frames[0] == frames[1] and len(frames[0]) == 1
                and None not in (c, d) and c != d and start + min(c, d) >= 0)

    def offset(self, e, counter):
        return syntax.counter_offset(e, counter, self.values)

    # -- the error -------------------------------------------------------------------
    def refusal(self, name, write, link, read):
        line = lambda node: f"line {self.src.lineno(node)}"   # noqa: E731
        shown = _user_name(name, self.src)
        base = self.written(write)
        what = "list" if self.kinds.kind.get(base) == CONTAINER else "array"
        made = f" ({line(link)}: {self.src.line_text(link).strip()})" if link else ""
        return self.src.syntax_error(read, (
            f"{shown} is read after {line(write)} ({self.src.line_text(write).strip()}) "
            f"writes into the {what} it shares memory with{made}; NumPy shows the write "
            f"through {shown}, but s2sad follows a write only through the name written, so "
            f"the value and the derivative would use the old {shown}. Make the copy "
            "explicit where the other name is made (.copy()), or read the array written "
            "again after the write"))


class _Found(Exception):
    """A read of an old value, in a run that only asks whether there is one."""


def _copy(state):
    return dict(state[0]), dict(state[1])


def _join(a, b):
    names = dict(a[0])
    for n, held in b[0].items():
        names[n] = names[n].join(held) if n in names else held
    return names, {**b[1], **a[1]}


def _user_name(name, src):
    """`name` as the user wrote it (Wengert form numbers versions: `y_1`)."""
    base = re.sub(r"_\d+$", "", name)
    used = {n.id for n in syntax.name_nodes(src.node)}
    return base if name not in used and base in used else name


def _ints(parts, kinds):
    return all(isinstance(p, gast.Constant) and type(p.value) is int or (
        isinstance(p, gast.Name) and kinds.kind.get(p.id) == SCALAR) for p in parts)


def _first(index):
    return index.elts[0] if isinstance(index, gast.Tuple) and index.elts else index


def _ndims(defs, ctx):
    """{name: its number of axes}, where certain: parameters of known pattern or kind,
    arrays made by np.zeros(n), np.zeros((n, m)), ..., and their copies and versions;
    and {name: the parameters of known shape pattern that number relies on}."""
    known = {p: len(pat) for p, (_, pat) in (ctx.patterns or {}).items()}
    known.update({p: 0 for p, k in ctx.kinds.items() if k in (int, float)})
    # optimistic, to a fixed point: a name not yet reached is None, one of no certain
    # number of axes UNKNOWN (a name bound in a loop has several definitions)
    ndim = {p: known.get(p, UNKNOWN) for p in ctx.kinds if p not in defs}

    def of(v):
        if isinstance(v, gast.Constant):
            return None if v.value is None else 0 if isinstance(v.value, (int, float)) \
                else UNKNOWN
        if isinstance(v, gast.Name):
            return ndim.get(v.id, None if v.id in defs else UNKNOWN)
        if isinstance(v, gast.BinOp):
            return _join_sides([of(v.left), of(v.right)])
        if not isinstance(v, gast.Call):
            return UNKNOWN
        if isinstance(v.func, gast.Attribute) and v.func.attr == "copy" and not v.args:
            return of(v.func.value)
        if not v.args:
            return UNKNOWN
        if getattr(v.func, "s2s_prim", None) is runtime.setitem:
            return of(v.args[0])
        prim, first = ctx.resolve(v.func), v.args[0]
        if any(prim is getattr(np, f) for f in _CONSTRUCTORS):
            if isinstance(first, gast.Name) and len(defs.get(first.id, [])) == 1:
                first = defs[first.id][0]           # Wengert form names the shape
            if isinstance(first, gast.Tuple):
                return len(first.elts)
            scalar = isinstance(first, gast.Constant) or (
                isinstance(first, gast.Name) and ctx.value_kinds.kind.get(first.id) == SCALAR)
            return 1 if scalar else UNKNOWN
        if any(prim is getattr(np, f) for f in _LIKE):
            return of(first)
        return UNKNOWN
    changed = True
    while changed:
        changed = False
        for name, values in defs.items():
            found = {of(v) for v in values} - {None}
            value = (found.pop() if len(found) == 1 else UNKNOWN) if found else None
            if value is not None and ndim.get(name) != value:
                ndim[name] = value
                changed = True
    known = {n: d for n, d in ndim.items() if d is not UNKNOWN}
    patterned = set(ctx.patterns or ())
    sources = {}        # {name: the parameters of known pattern its number of axes uses}
    for name in known:
        seen, todo = set(), [name]
        while todo:
            n = todo.pop()
            if n not in seen:
                seen.add(n)
                todo += [m for v in defs.get(n, []) for m in syntax.names_loaded(v)]
        if seen & patterned:
            sources[name] = sorted(seen & patterned)
    return known, sources


def _join_sides(sides):
    if UNKNOWN in sides:
        return UNKNOWN
    return None if None in sides else max(sides)
