"""Aliasing: refuse, before differentiating, a read of a value after a write through
another name for its memory; one model of memory for reverse and forward mode.

Takes the function in Wengert form and changes nothing but adding run-time checks
(below). NumPy arrays and lists are objects: `z = y`, `r = y[0]`, `v = y.T`,
`v = y.reshape(-1)`, `a, b = np.split(y, 2)`, `for row in y`, a list or an object of your
class holding `y` give the memory of `y` another name, and a write through one name (`z[0] = v`,
`v *= 2`, `lst.append(v)`, `lst[0] += v`, a method's `self.a[0] = v`) changes what every other one
holds. Wengert form writes functionally: `z_1 = setitem(z, 0, v)` is a new version of
`z`, which the derivative, and the value computed with it, follow; the other names keep
the old value. So a name bound, before a write, to memory the write may change, and
read after it, would hold the old value where NumPy reads the new one. This pass finds
such reads (a forward data flow of the objects each name may share memory with, to a
fixed point over loops) and stops with a located `UnsupportedSyntaxError` that names
the write and the alias and says what to write.

What shares memory is what NumPy may make share it: an index of an array, unless it
certainly picks one element (a number, which is a copy) or indexes by an array of
bools or ints or a list (named or not: `y[y > 0]`, `x[[-1, 0]]` copy); the arguments
a primitive's record names in `view` (`np.reshape`, `x.T`, `np.split`'s list of views,
`x.astype(float, copy=False)`: `registry.viewed`), and every argument of a method or a
function s2sad knows nothing of; a list or tuple holding the array; a loop over it.
The parts of one split (`a, b = np.split(y, [1])`, cut in order) share the memory of
`y` but not each other's: a write into `b` leaves `a` as it was (`split_parts`).
A Python function s2sad reads is analysed for what it returns and writes into
(before_ad/callee_effects.py): its write into an argument (`def scale(a): a *= 2.0`) is
followed only through what it returns. In reverse mode, a call that changes in place
memory read before it (such a function's, `y.sort()`, `out=`) is refused too: the
derivative would read the changed values afterwards.

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

import gast

from .. import marks
from .. import syntax
from ..analysis.names import user_name
from ..analysis.value_kinds import ARRAY, CONTAINER, SCALAR, user_class
from ..rules import runtime
from . import callee_effects, certain_axes
from .alias_errors import AliasErrors
from .callee_effects import Written, params_in, returns_its_writes, root
from .shared_memory import SharedMemory


def run(fn, ctx):
    """The pass: check `fn` (not s2sad's own derivatives differentiated again, which
    write in place only where no other name sees the write)."""
    if _writes(fn) or _calls_writing(fn, ctx):
        Aliasing(fn, ctx).check(fn)
    return fn


def _writes(fn):
    """Whether `fn` may write into memory (an element write, an append, an augmented
    assignment): without one, no name can hold an old value."""
    return any(isinstance(s, gast.Assign) and (marks.AUGMENTED.of(s) or (
        isinstance(s.value, gast.Call) and marks.PRIM.of(s.value.func) in (
            runtime.setitem, runtime.append, runtime.attr_set))) for s in syntax.statements(fn))


def _calls_writing(fn, ctx):
    """Whether `fn` calls a Python function that may write into its arguments, or (in
    reverse mode) changes an array or a list in place with a call (`y.sort()`)."""
    return any(isinstance(s, (gast.Assign, gast.Expr)) and isinstance(s.value, gast.Call)
               and (callee_effects.may_write(callee_effects.effects_callee(s.value, ctx), ctx)
                    or not ctx.variant.forward
                    and callee_effects.changed_in_place(s.value, ctx) is not None)
               for s in syntax.statements(fn))


#: How deep the objects inside objects go (`("in", ("in", y))`, an element of an element
#: of y); deeper ones are taken as the same object, which may alias more, never less,
#: so that the data flow over a loop that takes an element of what it carries settles.
NESTING = 3


def _inside(o):
    """The object held inside the object `o`."""
    depth, x = 0, o
    while isinstance(x, tuple) and x[:1] == ("in",):
        depth, x = depth + 1, x[1]
    return o if depth >= NESTING else ("in", o)


@dataclasses.dataclass(frozen=True)
class Held:
    """What a name holds at a point: the objects whose memory it may share, the frames
    its indices count in (a view has its own), the statement that made it share
    another name's memory (None for an object of its own), and the names of arrays that
    certainly hold other memory (`apart`, kept on both sides: a new array is apart from
    every other, a copy, version or view of one is apart from what it is apart from; so
    `u, un = un, u` of two arrays, which makes each name hold either object, keeps
    them apart)."""
    objects: frozenset = frozenset()
    frames: frozenset = frozenset()
    made: object = None
    apart: frozenset = frozenset()      # names of arrays certainly of other memory

    def join(self, other):
        return Held(self.objects | other.objects, self.frames | other.frames,
                    self.made or other.made, self.apart & other.apart)


class Aliasing(AliasErrors, SharedMemory):
    """See the module docstring. With `summarising`, the data flow of a called function
    (`summary`): nothing is refused, what it returns and writes into is recorded."""

    def __init__(self, fn, ctx, summarising=False):
        self.ctx, self.src, self.kinds = ctx, ctx.src, ctx.value_kinds
        params = [a.id for a in fn.args.args + fn.args.posonlyargs + fn.args.kwonlyargs]
        self.params = set(params)
        self.entry = {p: Held(frozenset([p]), frozenset([p])) for p in params
                      if self.kinds.kind.get(p) != SCALAR}
        self.summarising = summarising
        self.returns, self.wrote, self.returned_kinds = set(), {}, set()
        self.conditional = set()    # writes taken as such for a parameter of unknown kind
        # in reverse mode, a call that writes into memory read before it is refused
        self.before = not ctx.variant.forward and not summarising
        self.contents = {}      # {container object: the objects it may hold}, per `run`
        declared = ctx.param_kinds      # {object: kind} (a parameter: of its argument)
        self.made_kind = {p: declared.get(p) if declared.get(p) in (ARRAY, CONTAINER, SCALAR)
                          else self.kinds.kind.get(p) for p in params}
        self.maybe = {}         # {id of `r = y[i]` that may be a view: (the parameters
        #                          whose patterns tell, the error if it is a view)}
        self.effects = {}       # {id of a call: its `effect`}
        self.attribute_checks = {}      # (see AliasErrors.attribute_added)
        self.defs, self.loop_of, self.statement, self.within = {}, {}, {}, {}
        self.tops = {}          # (see `made_after`)
        for s in syntax.statements(fn):
            self.statement[id(s)] = s
            if isinstance(s, (gast.For, gast.While)):
                for inner in syntax.statements(syntax.if_(syntax.const(True), s.body)):
                    self.loop_of[id(inner)] = s         # walk order: the innermost wins
                    self.within.setdefault(id(s), set()).add(id(inner))
            if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name):
                self.defs.setdefault(s.targets[0].id, []).append(s)
        self.values = {n: [d.value for d in ds] for n, ds in self.defs.items()}
        self.ndim, self.patterned = certain_axes.ndims(self.values, ctx)
        self.arrays = self.mutable()
        self.parts = self.split_parts(fn)
        self.split = self.split_arrays()

    def check(self, fn):
        """Raise at the first read of an old value, if there is one whatever the indexes
        whose result may be a number or a view (`maybe`: of an array whose number of
        axes is not known) turn out to be. Otherwise, if such an index being a view
        would make one, check after it, at run time, that it is not (`refuse_view`)."""
        self.run(fn, raising=True)
        self.check_attributes(fn)
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
        self.views, self.reading, self.contents, self.puts = set(views), None, {}, {}
        while True:
            before = {k: set(v) for k, v in self.contents.items()}
            self.flow(fn.body, self.start())
            if self.contents == before:
                break
        if self.summarising:
            self.reading = "summary"
            self.flow(fn.body, self.start())
            return False
        self.reading = "raise" if raising else "ask"
        try:
            self.flow(fn.body, self.start())
        except _Found:
            return True
        return False

    def start(self):
        """The state at the top of the function: ({name: Held}, {name: `Stale`} of the
        names holding an old value, {object: the ids of the statements that read it})."""
        return dict(self.entry), {}, {}

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
        """The state after `stmts` (see `start`)."""
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
                names, stale, _ = state
                if isinstance(v, gast.Name):        # a copy carries an old value along
                    if v.id in stale:
                        stale[target] = stale[v.id]
                    else:
                        stale.pop(target, None)
                    held = names.get(v.id, Held())      # (made by this copy, for the error)
                    self.place(names, target, held if held.made or not held.objects else Held(
                        held.objects, held.frames, s), held.apart)
                    continue
                self.reads(v, state, s)
                base = self.written(s, names)
                effect = self.effect(v) if isinstance(v, gast.Call) else None
                if isinstance(v, gast.Call):
                    self.in_place(v, s, state)
                if effect is not None:      # (its writes into what an earlier iteration's
                    self.call_writes(target, effect, s, state)      # result was read for)
                    self.bind_call(target, effect, s, state)
                else:
                    self.bind(target, self.shares(target, v, s), s, state)
                    if id(s) in self.parts:
                        self.keep_parts_apart(target, s, names)
                if base is not None:
                    # `lst[i] += v` writes into the element too, when it may be an array
                    objects = names.get(base, Held()).objects
                    if self.reading == "raise" and self.given(v, objects):
                        raise self.argument_changed(s, user_name(base, self.src))
                    inner = frozenset(o for o in names.get(marks.ELEMENT.of(s),
                                                           Held()).objects
                                      if o not in objects and self.may_be_array(o))
                    # (the new list holds the old array, too, where it holds it twice)
                    twice = any(self.twice(c, o) for c in objects for o in inner)
                    self.mark(None if twice else target, objects | inner, s, state, base=base,
                              inner=inner)
            elif isinstance(s, gast.Expr) and isinstance(s.value, gast.Call):
                self.reads(s, state, s)
                self.in_place(s.value, s, state)
                effect = self.effect(s.value)
                if effect is not None:
                    self.call_writes(None, effect, s, state)
            else:
                self.reads(s, state, s)
                if (self.reading == "summary" and isinstance(s, gast.Return)
                        and isinstance(s.value, gast.Name)):
                    held = state[0].get(s.value.id, Held())
                    self.returns |= {t for o in held.objects for t in self.terms(o)}
                    self.returned_kinds.add(self.kinds.kind.get(s.value.id))
        return state

    def bind(self, target, relations, s, state):
        """Bind `target` (by `s`) to what `relations` ([(name, relation)], see
        `shares`) say it holds."""
        names, stale, seen = state
        stale.pop(target, None)
        if self.kinds.kind.get(target) == SCALAR:
            self.place(names, target, Held(), ())
            return
        if not relations:
            self.place(names, target, self.new(target, s, state), names)    # apart from all
            return
        held, new = Held(), None
        for slot, (other, relation) in enumerate(relations):
            h = names.get(other, Held(frozenset([other]), frozenset([other])))
            if relation in ("version", "same", "element", "part"):
                held = held.join(self.related(h, relation, s))
            else:                           # "holds" it, or its "elements"
                new = new or self.new(target, s, state).objects
                inner = {x for o in h.objects for x in self.contents.get(o, ())}
                slots = h.objects if relation == "holds" else inner | {
                    _inside(o) for o in h.objects}
                self.hold(new, slots | inner, slots, (id(s), slot))
                held = held.join(Held(new, new, s))
        if any(r == "version" for _, r in relations) and new is not None:
            for o in held.objects - new:    # an append: the list holds it
                for n in new:
                    self.hold([o], self.contents[n], [x for c, x in self.puts if c == n],
                              (id(s), 0))
            held = Held(held.objects - new, held.frames - new, held.made)
        (other, relation), = relations if len(relations) == 1 else [(None, None)]
        self.place(names, target, held, names[other].apart if relation in (
            "version", "same") and other in names and new is None else ())

    def place(self, names, target, held, apart):
        """Bind `target` to `held`, apart from the arrays named in `apart` (where it is
        an array itself): no name is apart from an earlier binding of `target` any more."""
        for n, h in names.items():
            if target in h.apart:
                names[n] = dataclasses.replace(h, apart=h.apart - {target})
        apart = frozenset(n for n in apart if n != target and n in names and self.certain_array(
            n)) if self.certain_array(target) else frozenset()
        names[target] = dataclasses.replace(held, apart=apart)
        for n in apart:
            names[n] = dataclasses.replace(names[n], apart=names[n].apart | {target})

    def keep_parts_apart(self, target, s, names):
        """`target`, bound by `s` to a part of an array split (`b = parts[1]`), is apart
        from the names of its other parts (`a = parts[0]`) and from what the array split
        is apart from (see `split_parts`)."""
        siblings, base = self.parts[id(s)]
        apart = {n for n in siblings if n in names} | (names[base].apart if base in names
                                                        else frozenset())
        self.place(names, target, names[target], names[target].apart | apart)

    def related(self, h, relation, s):
        """What a value made by `s` holds, that is the "version", a view ("same"), an
        "element" or a "part" (see `shares`) of a value that holds `h`."""
        if relation == "version":
            return h
        if relation == "same":
            return Held(h.objects, frozenset([id(s)]), s)
        inside = frozenset(x for o in h.objects
                           for x in self.contents.get(o, set()) | {_inside(o)})
        if relation == "part":      # of a value that may be an array or a list
            inside |= h.objects
        return Held(inside, frozenset([id(s)]), s)

    def new(self, target, s, state, kind=None):
        """A new object, made by `s` (its last instance; an index this run takes for a
        number is one), of the kind of the value (or `kind`, what a called function
        returns). What earlier iterations made there is another object, `-id(s)`: the
        names, containers and reads of those instances move to it, so that a write into
        this one does not make them old (`un = u.copy()`, writes into `un`, `u = un`)."""
        names, _, seen = state
        old = -id(s)
        for n, held in names.items():
            if id(s) in held.objects or id(s) in held.frames:
                names[n] = Held(_older(held.objects, id(s)), _older(held.frames, id(s)),
                                held.made, held.apart)
        for c, inside in list(self.contents.items()):
            if id(s) in inside:
                self.hold([c], {old})
                self.puts.setdefault((c, old), set()).update(self.puts.get((c, id(s)), ()))
        if id(s) in self.contents:
            self.hold([old], self.contents[id(s)])
        if id(s) in seen:
            seen[old] = seen.get(old, frozenset()) | seen.pop(id(s))
        made = self.kinds.of(s.value) if isinstance(s, gast.Assign) and not isinstance(
            s.value, gast.Subscript) else None     # (an index's number of axes: the guard's)
        self.made_kind[id(s)] = SCALAR if id(s) in self.maybe and id(s) not in self.views \
            else next((k for k in (kind, made) if k in (ARRAY, CONTAINER)),
                      self.kinds.kind.get(target))
        self.made_kind[old] = self.made_kind[id(s)]
        return Held(frozenset([id(s)]), frozenset([id(s)]))

    def unknown_param(self, o):
        """Whether `o` is a parameter of a called function of unknown kind."""
        return self.summarising and o in self.params and self.made_kind.get(o) not in (
            ARRAY, CONTAINER, SCALAR)

    def may_be_array(self, o):
        """Whether the object `o` may be an array or a list: one made so, or an element
        of a parameter (a list of the caller's, whose elements may be arrays)."""
        if isinstance(o, tuple):
            while isinstance(o, tuple):
                o = o[1]
            return o in self.params and self.kinds.kind.get(o) != ARRAY
        return self.made_kind.get(o) in (ARRAY, CONTAINER)

    def hold(self, containers, objects, slots=(), put=None):
        """The `containers` hold `objects`, and `slots` of them by the statement `put`
        (its id, and which of its places)."""
        for c in containers:
            self.contents.setdefault(c, set()).update(objects)
            for o in slots:
                self.puts.setdefault((c, o), set()).add(put)

    def twice(self, c, o):
        """Whether the container `c` may hold `o` in two places (`[y, y]`, or appended
        twice: by two statements, or in a loop that does not make it anew)."""
        puts = self.puts.get((c, o), ())
        loop = id(self.loop_of[next(iter(puts))[0]]) if len(puts) == 1 and \
            next(iter(puts))[0] in self.loop_of else None
        return len(puts) > 1 or loop is not None and _made_by(o) not in self.within[loop]

    def mark(self, exempt, written, write, state, base=None, callee=None, inner=frozenset()):
        """After `write` into the objects `written` (through `base`, now `exempt`, and
        into the objects `inner` of the element it changes; or by the function `callee`
        calls, a `Written`): the other names of that memory, and of the containers
        holding it, hold old values."""
        names, stale, _ = state
        if self.reading == "summary":       # (not into a list it made, holding one)
            for t in {t for o in written for t in self.terms(o) if root(t) is not None}:
                self.wrote.setdefault(t, callee or write)
        written = set(written)
        changed = True
        while changed:          # the containers that hold what is written
            changed = False
            for o, inside in self.contents.items():
                if o not in written and any(x in written and not self.made_after(
                        o, x, write, base) for x in inside):
                    written.add(o)
                    changed = True
        link = names.get(base, Held()).made if base is not None else write
        for n, held in names.items():
            if n != exempt and held.objects & written and (base is None or not (
                    base in held.apart or self.apart(n, write, base, names))):
                stale[n] = Stale(write, held.made or link, callee,
                                 not held.objects & (written - inner))

    def made_after(self, c, o, write, base):
        """Whether the container `c` holds only instances of the object `o` that earlier
        iterations of a loop made when `write` writes through `base` into the one this
        iteration made: `o` is made at the top level of the loop's body, every put of it
        into `c` comes after the write there, and `base` is bound in between, to the new
        object and its versions only (`row = []`, `for j: row.append(v)`, then
        `m.append(row)`: a comprehension inside a comprehension)."""
        alloc, loop = self.statement.get(_made_by(o)), self.loop_of.get(_made_by(o))
        if base is None or loop is None or not any(alloc is t for t in loop.body):
            return False
        tops = self.tops.get(id(loop))
        if tops is None:    # {id of a statement in the loop: the index of its top one}
            tops = self.tops[id(loop)] = {id(x): k for k, t in enumerate(loop.body)
                                          for x in syntax.statements(t)}
        made, wrote = tops[id(alloc)], tops.get(id(write))
        puts = self.puts.get((c, o), ())
        if wrote is None or not puts or any(tops.get(p) is None or tops[p] <= wrote
                                            for p, _ in puts):
            return False
        todo, seen = [base], set()
        while todo:
            n = todo.pop()
            seen.add(n)
            for d in self.defs.get(n, ()):
                if d is alloc:
                    continue
                v = d.value
                if not made < tops.get(id(d), -1) <= wrote:
                    return False
                if isinstance(v, gast.Call) and marks.PRIM.of(v.func) in (
                        runtime.setitem, runtime.append, runtime.attr_set):
                    v = v.args[0]
                if not isinstance(v, gast.Name):
                    return False
                todo += [v.id] if v.id not in seen else []
        return True

    def reads(self, node, state, s):
        names, stale, seen = state
        if self.before and not isinstance(node, (gast.List, gast.Tuple, gast.Dict)):
            # (an index, a write into an array, a list: no values the derivative reads)
            skip = node.value if isinstance(node, gast.Subscript) else node.args[0] if (
                isinstance(node, gast.Call) and marks.PRIM.of(node.func) in (
                    runtime.setitem, runtime.append, runtime.attr_set)) else None
            for n in syntax.name_nodes(node):
                if n is not skip and isinstance(n.ctx, gast.Load):
                    for o in names.get(n.id, Held()).objects:
                        seen[o] = seen.get(o, frozenset()) | {id(s)}
        if self.reading not in ("raise", "ask"):
            return
        for n in syntax.name_nodes(node):
            if isinstance(n.ctx, gast.Load) and n.id in stale:
                raise self.refusal(n.id, stale[n.id], s) if self.reading == "raise" \
                    else _Found()

    def written(self, s, names=None):
        """The name whose memory the assignment `s` writes into, or None."""
        v = s.value
        if isinstance(v, gast.Call) and marks.PRIM.of(v.func) in (
                runtime.setitem, runtime.append, runtime.attr_set):
            return v.args[0].id
        # `x += y` writes in place only into an array or a list (of that kind, or sharing
        # the memory of one); of unknown kind (the result of a Python function) it is
        # taken as a number, not to refuse scalar code
        if not (marks.AUGMENTED.of(s) and isinstance(v, gast.BinOp)
                and isinstance(v.left, gast.Name)):
            return None
        objects = names.get(v.left.id, Held()).objects if names is not None else ()
        if marks.AUGMENTED.of(s) == "attribute" and self.kinds.kind.get(v.left.id) != SCALAR:
            return self.attribute_added(s, v.left.id)
        if v.left.id in self.arrays or any(self.may_be_array(o) for o in objects):
            return v.left.id
        if self.summarising and any(self.unknown_param(o) for o in objects):
            self.conditional.add(id(s))     # (a write where the caller passes an array)
            return v.left.id
        return None

    def in_place(self, call, s, state):
        """A call that changes an array or a list in place as it runs (`y.sort()`,
        `np.copyto(y, v)`, `out=y`, `np.add.at(y, i, v)`), which Wengert form does not
        follow: a write, in a called function (`summary`); in reverse mode, refused when
        it changes memory read before it, whose old values the derivative may read."""
        changed = callee_effects.changed_in_place(call, self.ctx)
        if changed is None or not (self.src.is_local(changed) or changed in self.params):
            return
        written = state[0].get(changed, Held()).objects
        if self.reading == "summary":
            self.mark(None, written, s, state)
        readers = {r for o in written for r in state[2].get(o, ()) if r != id(s)}
        if readers and self.reading == "raise" and self.before:
            reader = self.statement[min(readers, key=lambda r: self.src.lineno(
                self.statement[r]))]
            raise self.src.syntax_error(s, (
                f"{self.src.line_text(s).strip()} changes {user_name(changed, self.src)} "
                f"in place, memory that line {self.src.lineno(reader)} "
                f"({self.src.line_text(reader).strip()}) reads before; the gradient reads "
                "the values from before, which the call changes. Compute a new array or "
                "list instead of changing it in place (y = np.sort(y), y = lst + [v], ...), "
                "or change a copy"))

    # -- calls of Python functions ---------------------------------------------------
    def effect(self, call):
        """(its Summary, {parameter: argument}) of a call of a Python function s2sad reads
        (see `summary`), or None."""
        if id(call) not in self.effects:
            self.effects[id(call)] = self._effect(call)
        return self.effects[id(call)]

    def _effect(self, call):
        callee = callee_effects.effects_callee(call, self.ctx)
        if callee is None or any(isinstance(a, gast.Starred) for a in call.args):
            return None
        fn, params = callee
        args = dict(zip(params, call.args))
        args.update({k.arg: k.value for k in call.keywords if k.arg in params})
        kinds = {p: k for p, a in args.items() for k in [self.kinds[a]] if k is not None}
        found = summary(fn, kinds, self.ctx)
        if callee_effects.checkpoint_call(call, self.ctx):      # (no version rebinds them)
            found = dataclasses.replace(found, writes=tuple(
                dataclasses.replace(w, rebinds=False) for w in found.writes))
        # an argument whose memory the result may share, for ad/inplace.py (None: new)
        shared = [args[p].id for t in sorted(found.returns, key=repr) for p in params_in(t)
                  if isinstance(args.get(p), gast.Name)]
        marks.VIEW.put(call, shared[0] if shared else None)
        return found, args

    def arguments(self, args, state, s):
        """{parameter: the `Held` of its argument} of a call (by `s`): a name, or an index
        of one (`_bump(parts[0], v)`: the array the list holds)."""
        out = {p: state[0][a.id] for p, a in args.items()
               if isinstance(a, gast.Name) and a.id in state[0]}
        for p, a in args.items():
            if isinstance(a, gast.Subscript) and isinstance(a.value, gast.Name):
                for other, relation in self.shares(None, a):    # (an index that may be a
                    out[p] = out.get(p, Held()).join(self.related(   # view is taken as one)
                        state[0].get(other, Held(frozenset([other]), frozenset([other]))),
                        relation, s))
        return out

    def bind_call(self, target, effect, s, state):
        """Bind `target` to the result of the call `s` has the `effect` of."""
        names, stale, seen = state
        stale.pop(target, None)
        found, args = effect
        if self.kinds.kind.get(target) == SCALAR:
            self.place(names, target, Held(), ())
            return
        held = self.arguments(args, state, s)
        objects = frozenset(o for t in found.returns for o in self.objects(t, held, s))
        self.place(names, target, Held(objects, frozenset([id(s)]), s) if objects else
                   self.new(target, s, state, found.kind), ())

    def call_writes(self, target, effect, s, state):
        """After the call `s`, of a function that writes into the memory of its arguments:
        every name for that memory holds an old value (`mark`); in reverse mode, refuse
        the call if that memory was read before it."""
        found, args = effect
        if not found.writes:
            return
        held = self.arguments(args, state, s)
        for w in found.writes:
            rebound = w.rebinds and returns_its_writes(marks.PRIM.of(s.value.func))
            written = self.objects(w.term, held, s)
            written |= {x for o in written if not rebound and user_class(self.made_kind.get(
                o)) for x in self.contents.get(o, ())}      # (through an attribute: what it holds)
            if not written or w.array_only and not any(
                    self.may_be_array(o) or self.unknown_param(o) for o in written):
                continue
            readers = {r for o in written for r in state[2].get(o, ()) if r != id(s)}
            if w.rebinds and self.reading == "raise":
                self.check_rebound(w, found, args, held, written, s, rebound)
            if readers and self.reading == "raise" and self.before and not rebound:
                raise self.read_before(w, found, args, s, self.statement[min(
                    readers, key=lambda r: self.src.lineno(self.statement[r]))])
            self.mark(target, written, s, state, callee=(found, w, args))

    def objects(self, term, held, s):
        """The objects here that a term of a callee's summary means, for a call (by `s`)
        whose arguments hold `held` ({parameter: Held})."""
        kind = term[0]
        if kind == "arg":
            return set(held.get(term[1], Held()).objects)
        if kind == "in":
            return {x for o in self.objects(term[1], held, s)
                    for x in self.contents.get(o, set()) | {_inside(o)}}
        inner = {o for t in term[1] for o in self.objects(t, held, s)}     # "holds"
        self.hold([id(s)], inner | {x for o in inner for x in self.contents.get(o, ())})
        self.made_kind[id(s)] = CONTAINER
        return {id(s)}

    def terms(self, o, depth=0):
        """The terms (see callee_effects.Summary) of the object `o` of a called
        function."""
        if isinstance(o, str) and o in self.params:
            return {("arg", o)}
        if isinstance(o, tuple) and o[:1] == ("in",):
            return {("in", t) for t in self.terms(o[1], depth)}
        if o in self.contents and depth < NESTING:
            inner = frozenset(t for x in self.contents[o] for t in self.terms(x, depth + 1))
            return {("holds", inner)} if inner else set()
        return set()

    def apart(self, n, write, base, names):
        """Whether `write` into `base` certainly misses the memory of `n`: in one
        iteration of a `for` over `range`, `n = b[i + c]` is bound before the write
        (at the top of the loop's body) and the write is into `b[i + d]`, `d != c`, `b`
        and `base` indexed alike, and no index below 0 (which counts from the end)."""
        defs = self.defs.get(n, [])
        index = marks.INDEX.of(write.value)
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


@dataclasses.dataclass(frozen=True)
class Stale:
    """Why a name holds an old value: the write, the statement that made the name share
    the memory written (or None), (Summary, Written, arguments) for a write by a
    called function, and whether the name shares only the memory of the element an
    element write changes in place (`lst[0] += v`, an array of the list)."""
    write: object
    link: object = None
    callee: object = None
    element: bool = False


class _Found(Exception):
    """A read of an old value, in a run that only asks whether there is one."""


def _older(objects, o):
    """`objects` with the object `o` made by an earlier iteration (`-o`, see `new`)."""
    return objects - {o} | {-o} if o in objects else objects


def _made_by(o):
    """The id of the statement that made the object `o` (also one an earlier iteration
    made, `-id`)."""
    return -o if isinstance(o, int) and o < 0 else o


def _copy(state):
    return dict(state[0]), dict(state[1]), dict(state[2])


def _join(a, b):
    names = dict(a[0])
    for n, held in b[0].items():
        names[n] = names[n].join(held) if n in names else held
    seen = dict(a[2])
    for o, readers in b[2].items():
        seen[o] = seen.get(o, frozenset()) | readers
    return names, {**b[1], **a[1]}, seen


def _first(index):
    return index.elts[0] if isinstance(index, gast.Tuple) and index.elts else index


def summary(fn, kinds, ctx, ndims=None):
    """What the Python function `fn` does with its arguments' memory, called with
    arguments of `kinds` (and of the numbers of axes `ndims`, {parameter: number}, if
    given) (a callee_effects.Summary): this pass's data flow over its Wengert form."""
    return callee_effects.summary(fn, kinds, ctx, _effects, ndims)


def _effects(node, ctx):
    """(the terms the result of the function `node` may share memory with, the
    `Written` into its arguments' memory, the kind of its result)."""
    flow = Aliasing(node, ctx, summarising=True)
    flow.run(node)
    writes = []
    for term, w in flow.wrote.items():
        if isinstance(w, tuple):        # by a function it calls: where that writes
            w = dataclasses.replace(w[1], term=term, param=root(term))
        else:
            w = Written(term, root(term), ctx.src.where(w), ctx.src.line_text(w).strip(),
                        id(w) in flow.conditional, term[0] == "arg" and marks.PRIM.of(
                            getattr(w.value, "func", None)) in (runtime.attr_set,
                                                               runtime.setitem))
        writes.append(w)
    kinds = flow.returned_kinds
    return flow.returns, writes, kinds.pop() if len(kinds) == 1 else None
