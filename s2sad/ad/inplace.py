"""In-place writes: element assignments and appends (`a_1 = setitem(a, i, v)` in Wengert
form) emitted in place (`a[i] = v`) when the array or list belongs to the function and
the pullback never reads a state they overwrite, otherwise on a copy, so that inputs are
never mutated and recorded states stay intact.
"""
import gast

from .. import marks
from .. import syntax
from ..analysis import operations
from ..frontend.source import MISSING
from ..rules import registry, runtime
from .tapes import is_range, loops_in


class InPlaceWrites:
    """Element assignments and appends: functional in Wengert form (`a_1 =
    setitem(a, i, v)`), emitted in place (`a[i] = v`) when the array or list belongs to
    the function and the pullback never reads a state it overwrites; otherwise on a copy,
    so that inputs are never mutated and recorded states stay intact."""

    def __init__(self, body, src, pullback, rev):
        self.prims = (runtime.setitem, runtime.append)
        self.statements = [n for s in body for n in syntax.statements(s)]
        self.stmts = [n for n in self.statements if self.is_update(n)]
        self.old = {id(s): s.value.args[0].id for s in self.stmts}
        self.owned = owned_names(body, src, self.prims)
        self.in_place = {}
        self.rev = rev
        self.pullback = syntax.if_(syntax.const(True), pullback)
        self.loop_of = {}
        self.updates_in = {}        # {id(loop): the ids of the updates inside it}
        self.around = {}            # {id(update): the loops around it, outermost first}
        for loop in loops_in(body):
            for n in syntax.statements(loop):
                if self.is_update(n):
                    self.loop_of[id(n)] = loop     # walk order: the innermost wins
                    self.updates_in.setdefault(id(loop), set()).add(id(n))
                    self.around.setdefault(id(n), []).append(loop)
        self.classes = _alias_classes(body, self.stmts, src, rev.kinds)
        self.order = {}
        for i, n in enumerate(n for b in body for n in syntax.statements(b)):
            if isinstance(n, gast.Assign) and isinstance(n.targets[0], gast.Name):
                self.order.setdefault(n.targets[0].id, i)
            if self.is_update(n):
                self.order[id(n)] = i

    def final(self, n):
        """The name `n` has once each in-place result is named after the object it
        updates (see `finish`)."""
        return n

    def safe(self, s):
        """Whether writing in place cannot change a state the pullback reads."""
        old = self.old[id(s)]
        if old not in self.owned:
            return False
        loop = self.loop_of.get(id(s))
        info = self.rev.loops.get(loop) if loop is not None else None
        aliases = self.classes.get(old, {old})
        earlier = {n for n in aliases if self.order.get(n, -1) < self.order[id(s)]}
        # an element write keeps the shape a shape-only read sees; an append does not
        shaped = marks.PRIM.of(s.value.func) is runtime.setitem
        if info is None:
            return not self.value_loads(self.pullback, self.holders(earlier | {old}), shaped)
        # in a loop: nor may the pullback read a state from before the loop (the value
        # of `np.tanh` that its own pullback reads, before `a[0] += ...` in the loop),
        # nor one that a loop around it binds after it: the next iteration of that loop
        # writes into it (`a_2 = np.tanh(a)` after the inner loop, `a = a_2`)
        around = {n for other in self.around[id(s)] if other is not loop
                  for n in getattr(self.rev.loops.get(other), "defined_inside", ())}
        before = {n for n in aliases if n not in info.defined_inside
                  and (n in earlier or n in around)}
        if self.value_loads(self.pullback, self.holders(before), shaped):
            return False
        # (an element read back from the final value is no state the writes change)
        reads = [s for s in info.reversed.body if not marks.READ_BACK.of(s)]
        read = {n for n in aliases if self.value_loads(reads, self.holders({n}), shaped)}
        kept = self.kept_apart(loop, info, aliases, read)
        if kept is None:
            return False
        info.snapshots.update(kept)
        return True

    def kept_apart(self, loop, info, aliases, read):
        """The elements of the array that the reversed loop reads (`read`, names bound in
        the loop to `a[i + c]`, `i` the loop's counter) when each is certainly apart from
        every element the loop writes (`a[i + d]`, `d != c`): recorded as copies at the
        end of the iteration (`_s2s_snapshot`, which copies an array and leaves a number
        as it is), they let the loop write the array in place. None when another value
        of the array is read."""
        if not (read and isinstance(loop, gast.For) and is_range(loop, self.rev.src)
                and isinstance(loop.target, gast.Name)):
            return None if read else set()
        counter = loop.target.id
        defs = {}
        for n in syntax.statements(loop):
            if isinstance(n, gast.Assign) and isinstance(n.targets[0], gast.Name):
                defs.setdefault(n.targets[0].id, []).append(n.value)

        def offset(e):
            return syntax.counter_offset(e, counter, defs)
        inside = self.updates_in.get(id(loop), set())
        written = [offset(w.value.args[1]) for w in self.stmts
                   if id(w) in inside and self.old[id(w)] in aliases]
        args = loop.iter.args
        start = 0 if len(args) == 1 else getattr(args[0], "value", None)
        if (None in written or counter in self.assigned_in(loop) or len(args) > 2
                or type(start) is not int):
            return None
        for n in read:
            value = defs.get(n, [None])
            if not (n in info.record and len(value) == 1 and isinstance(value[0], gast.Subscript)
                    and isinstance(value[0].value, gast.Name) and value[0].value.id in aliases):
                return None
            at = offset(value[0].slice)
            # no index below 0: `a[i - 1]` at i = 0 would be the last element
            if at is None or at in written or start + min([at] + written) < 0:
                return None
        return read

    def assigned_in(self, loop):
        return set(syntax.names_stored(syntax.if_(syntax.const(True), loop.body)))

    def holders(self, names):
        """`names`, and the pullbacks of the calls of the user's functions passed one of
        them: a pullback reads its arguments when it runs (`x, mul_pullback = mul_vjp(t,
        t_1)` of rows `t = h[0]`, then `h[0] = x`: written in place, the pullback would
        read the new row)."""
        out, calls = set(names), self.rev.user_calls
        for s in self.statements:
            if s not in calls:
                continue
            pullback, call = calls[s][0], getattr(s, "value", None)
            if isinstance(call, gast.Call) and any(
                    isinstance(a, gast.Name) and a.id in names
                    for a in call.args + [k.value for k in call.keywords]):
                out.add(pullback)
        return out

    def value_loads(self, node, names, shaped=True):
        """Loads of `names` in `node`, but (with `shaped`) as shape-only helper
        arguments."""
        skip = {id(a) for _, a in self.rev.ctx.shape_only_args(node)} if shaped else set()
        return any(isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)
                   and n.id in names and id(n) not in skip
                   for n in syntax.walk(node if isinstance(node, gast.AST)
                                        else syntax.if_(syntax.const(True), node)))

    def is_update(self, s):
        return (isinstance(s, gast.Assign) and isinstance(s.value, gast.Call)
                and marks.PRIM.of(s.value.func) in self.prims)

    def expand(self, s):
        new, call = s.targets[0].id, s.value
        old = call.args[0].id
        self.in_place[id(s)] = in_place = self.safe(s)
        target = old if in_place else new
        out = [] if in_place else [syntax.assign(new, syntax.call(syntax.attribute(old, "copy")))]
        if len(call.args) == 3:       # setitem(a, i, v); append(a, v)
            index = operations.index_syntax(call.args[1])
            write = syntax.assign(gast.Subscript(value=syntax.name(target), slice=index,
                                                ctx=gast.Store()), call.args[2])
        else:
            write = syntax.expr_stmt(syntax.call(syntax.attribute(target, "append"),
                                               [call.args[1]]))
        marks.DEFINES.put(write, new)         # the name the write stands for (renamed later)
        return [syntax.located(x, s) for x in out + [write]]

    def finish(self, vjp, loops):
        """Name each in-place result after the object it updates, where that is the object
        the name holds on every path: each assignment of the name writes into it or copies
        it. A name some path binds otherwise (the join of branches that write into
        different arrays, or make a new one) keeps its name, bound to the object after each
        write into it, so that no path leaves it unbound or holding another array."""
        olds = {}           # {result: the names of the objects written in place for it}
        for s in self.stmts:
            if self.in_place.get(id(s)):
                olds.setdefault(s.targets[0].id, set()).add(self.old[id(s)])
        if not olds:
            return
        others = {}         # {result: the statements of the forward pass that bind it}
        forward = [s for s in vjp.body if not isinstance(s, (gast.FunctionDef, gast.Return))]
        for s in syntax.statements(syntax.if_(syntax.const(True), forward)):
            targets = s.targets if isinstance(s, gast.Assign) else [getattr(s, "target", None)]
            for name in {n for t in targets if t is not None for n in syntax.names_stored(t)}:
                if name in olds:
                    others.setdefault(name, []).append(s)
        renames = {new: min(o) for new, o in olds.items()}

        def final(n):
            while n in renames:
                n = renames[n]
            return n

        def holds(new):
            """Whether every path binds `new` to the one object its writes update: each
            other assignment of it copies that object, or is an initialisation
            before a loop."""
            objects = {final(o) for o in olds[new]}
            return len(objects) == 1 and all(
                marks.INIT.of(s) or (
                    isinstance(s, gast.Assign) and isinstance(s.value, gast.Name)
                    and final(s.value.id) in objects) for s in others.get(new, []))
        dropped = True
        while dropped:
            dropped = [new for new in renames if not holds(new)]
            for new in dropped:
                del renames[new]
        self.final = final
        # `p_2 = None` binds, before a loop, a result some paths of the loop make; named
        # `p`, it must not unbind the `p` the loop updates
        inits = {id(s) for s in syntax.walk(vjp) if marks.INIT.of(s)
                 and syntax.is_name(s.targets[0]) and s.targets[0].id in renames}
        for n in syntax.walk(vjp):
            if isinstance(n, gast.Name) and n.id in renames:
                n.id = final(n.id)
        params = {a.id for a in vjp.args.posonlyargs + vjp.args.args + vjp.args.kwonlyargs}
        for block in syntax.blocks(vjp.body):
            kept, bound = [], set(params)
            for s in block:
                if isinstance(s, gast.Assign) and isinstance(s.value, gast.Name) and \
                        syntax.is_name(s.targets[0], s.value.id):
                    continue
                if id(s) in inits and s.targets[0].id in bound:
                    continue
                kept.append(s)
                new = marks.DEFINES.of(s)
                if new in olds and new not in renames and _updated(s) != new:
                    kept.append(syntax.located(syntax.assign(new, syntax.name(_updated(s))), s))
                    bound.add(new)      # (an initialisation renamed to it must not unbind it)
                if isinstance(s, gast.Assign):
                    bound.update(syntax.names_stored(s))
            block[:] = kept


def final_element_reads(loop, rev):
    """The statements of `loop`'s body (a `for` over `range` at the top of the function,
    counter `i`) that read an element of an array, `t = a[i + c]`, that no write changes
    after the iteration reads it: `a` is the array the loop carries, bound in the loop
    only through its element writes, or one nothing writes; each element write into
    its memory is in the loop at `i + d` with `d > c` (none through a view, none after
    the loop). The reversed loop reads such an element back from the
    array's final value instead of a tape, as a hand-written adjoint reads `u[i]`.
    (Only statements that run on every path, before any jump.)"""
    fn, src, kinds = rev.wengert, rev.src, rev.kinds
    if not (isinstance(loop, gast.For) and isinstance(loop.target, gast.Name)
            and is_range(loop, rev.src) and 1 <= len(loop.iter.args) <= 2
            and any(s is loop for s in fn.body)):
        return []
    args = loop.iter.args
    start = 0 if len(args) == 1 else getattr(args[0], "value", None)
    counter = loop.target.id
    inside = list(syntax.statements(loop))
    defs = {}
    for n in inside:
        if isinstance(n, gast.Assign) and isinstance(n.targets[0], gast.Name):
            defs.setdefault(n.targets[0].id, []).append(n.value)
    if type(start) is not int or counter in defs:
        return []
    carried = {s.targets[0].id for s in loop.body if marks.PHI.of(s)}
    updates = [n for n in syntax.statements(fn) if isinstance(n, gast.Assign)
               and isinstance(n.value, gast.Call) and n.value.args
               and isinstance(n.value.args[0], gast.Name)
               and marks.PRIM.of(n.value.func) is runtime.setitem]
    classes = _alias_classes(fn.body, updates, src, kinds)
    # (a write through a view indexes another array: its class is left alone)
    written = {id(w) for w in updates}
    views = {n.targets[0].id for n in syntax.statements(fn) if isinstance(n, gast.Assign)
             and isinstance(n.targets[0], gast.Name) and not isinstance(n.value, gast.Name)
             and id(n) not in written and view_of(n.value, src) is not None}
    within = {id(n) for n in inside}
    after = {id(n) for s in fn.body[next(i for i, s in enumerate(fn.body) if s is loop) + 1:]
             for n in syntax.statements(s)}
    out = []
    for d in loop.body:
        if any(isinstance(x, (gast.Break, gast.Continue, gast.Return))
               or marks.MARKER.of(x) == "path_end" for x in syntax.statements(d)):
            break           # the statements after it do not run on every path
        v = d.value if isinstance(d, gast.Assign) else None
        if not (isinstance(v, gast.Subscript) and isinstance(v.value, gast.Name)
                and isinstance(d.targets[0], gast.Name) and kinds.ndim_of(v) == 0):
            continue
        at = syntax.counter_offset(v.slice, counter, defs)
        array = v.value.id
        members = classes.get(array, {array})
        writes = [w for w in updates if w.value.args[0].id in members]
        if at is None or start + at < 0 or (writes and (array not in carried or any(
                w.value.args[0].id in views for w in writes))):
            continue
        # bound in the loop only as the array it carries, its element writes and copies
        # of those (`x = x * k` makes a new array each iteration: not read back)
        if (array in defs and array not in carried) or any(
                not (isinstance(value, gast.Name) and value.id in members)
                and not (isinstance(value, gast.Call) and value.args
                         and marks.PRIM.of(value.func) is runtime.setitem
                         and isinstance(value.args[0], gast.Name)
                         and value.args[0].id in members)
                for name in members for value in defs.get(name, [])):
            continue
        offsets = [syntax.counter_offset(w.value.args[1], counter, defs)
                   for w in writes if id(w) in within]
        if any(id(w) in after for w in writes) or any(
                o is None or o <= at or start + o < 0 for o in offsets):
            continue
        out.append(d)
    return out


def _updated(write):
    """The name of the object an element write (`a[i] = v`) or an append writes into."""
    target = write.targets[0] if isinstance(write, gast.Assign) else write.value.func
    return target.value.id


def _alias_classes(body, updates, src, kinds):
    """{name: the names that may hold the same object or share its memory}, through
    updates, copies and views (indexing, reshapes, transposes; not an element of an
    array, a number)."""
    parent = {}

    def find(n):
        while parent.get(n, n) != n:
            n = parent[n]
        return n
    for s in updates:
        parent[find(s.targets[0].id)] = find(s.value.args[0].id)
    for s in (n for b in body for n in syntax.statements(b)):
        if not (isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name)):
            continue
        source = view_of(s.value, src)
        if source is not None and not (isinstance(s.value, gast.Subscript)
                                       and kinds.ndim_of(s.value) == 0):
            parent[find(s.targets[0].id)] = find(source)
    classes = {}
    for n in list(parent) + [find(n) for n in parent]:
        classes.setdefault(find(n), set()).add(n)
    return {n: members for members in classes.values() for n in members}


def view_of(v, src):
    """The name `v` may share memory with: a copy, an index, a reshape, a transpose."""
    if isinstance(v, gast.Name):
        return v.id
    if isinstance(v, gast.Subscript) and isinstance(v.value, gast.Name):
        return v.value.id
    if isinstance(v, gast.Attribute) and isinstance(v.value, gast.Name):
        return v.value.id if _is_view(registry.ATTRIBUTES.get(v.attr)) else None
    if isinstance(v, gast.Call) and marks.VIEW.has(v):
        return marks.VIEW.of(v)       # a Python function's result (see before_ad/aliasing.py)
    if isinstance(v, gast.Call) and v.args and isinstance(v.args[0], gast.Name):
        prim = src.resolve(v.func)
        if _is_view(prim):
            return v.args[0].id
    if (isinstance(v, gast.Call) and isinstance(v.func, gast.Attribute)
            and isinstance(v.func.value, gast.Name)
            and _is_view(registry.METHODS.get(v.func.attr))):
        return v.func.value.id
    return None


def _is_view(prim):
    """Whether the result of `prim` may share memory with an argument (a NumPy view)."""
    return getattr(registry.primitive(prim), "view", False)


def owned_names(body, src, updates, resolve=None):
    """Names whose value is an array or list the function created itself (so writing
    into it cannot change an input or a value held elsewhere); `resolve` finds what a
    call's function is (by default `src.resolve`; MISSING or None when it cannot tell)."""
    resolve = resolve or src.resolve
    defs = {}
    for s in (n for b in body for n in syntax.statements(b)):
        if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name):
            defs.setdefault(s.targets[0].id, []).append(s.value)

    def creates(v):
        if isinstance(v, (gast.BinOp, gast.UnaryOp, gast.List, gast.Tuple, gast.Dict)):
            return True
        if isinstance(v, gast.Call) and marks.VIEW.has(v):
            return marks.VIEW.of(v) is None   # a Python function's result (before_ad/aliasing.py)
        if isinstance(v, gast.Call):
            prim = marks.PRIM.of(v.func) or resolve(v.func)
            if prim in updates:
                # a write into a value made in place (`setitem(zeros_like(x), i, v)`)
                return "old" if isinstance(v.args[0], gast.Name) else creates(v.args[0])
            if prim is None:
                prim = MISSING
            if prim is MISSING and isinstance(v.func, gast.Attribute):
                prim = registry.METHODS.get(v.func.attr, MISSING)
            return prim is not MISSING and not _is_view(prim)
        if isinstance(v, gast.Constant) and v.value is None:
            return True     # a name bound before a loop that may run no iteration
        return isinstance(v, gast.Name) and "copy"
    owned = set(defs)
    changed = True
    while changed:
        changed = False
        for name in list(owned):
            for v in defs[name]:
                kind = creates(v)
                if kind is False or (kind == "old" and v.args[0].id not in owned) or (
                        kind == "copy" and v.id not in owned):
                    owned.discard(name)
                    changed = True
                    break
    return owned
