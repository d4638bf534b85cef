"""Write in place (forward mode): an element write into an array the function made,
`a = _s2s_setitem(a, i, v)` in Wengert form, emitted as `a[i] = v`, without a copy of
the array per write; with the Numba backend also one that Wengert form names anew, as
`b = a; b[i] = v`. (Reverse mode's writes in place are the transform's own: see
ad/inplace.py's `InPlaceWrites`, whose `owned_names` this reads.)"""
import gast

from .. import syntax
from ..analysis import operations
from ..analysis.activity import closure
from ..rules import runtime
from .inplace import owned_names


def run(jvp, ctx):
    """The pass (forward mode): an element write into an array the function made,
    `a = _s2s_setitem(a, i, v)` (the name kept: a loop's carried array, or its
    tangent), as `a[i] = v`. The user's code writes in place, and the aliasing pass
    refused every read of a state such a write changes, so this is what the function
    means, without a copy of the array per write (which made a loop of element writes
    quadratic)."""
    writes = [s for s in syntax.statements(jvp) if isinstance(s, gast.Assign)
              and syntax.is_name(s.targets[0]) and ctx.is_runtime_call(s.value, "setitem")
              and syntax.is_name(s.value.args[0], s.targets[0].id)]
    # where tapes are arrays (Numba's code): also a write under a new name (`b = _s2s_setitem(a, i, v)`, Wengert
    # form's next version of an array written twice in a step, or of a new array), into
    # an array the function made: `b = a; b[i] = v` (a tape's rows, forward over reverse)
    renamed = [s for s in syntax.statements(jvp) if ctx.can.tape_arrays
               and isinstance(s, gast.Assign) and syntax.is_name(s.targets[0])
               and ctx.is_runtime_call(s.value, "setitem") and all(s is not w for w in writes)]
    if not writes and not renamed:
        return jvp
    owned = owned_names([jvp], ctx.src, (runtime.setitem,), ctx.resolve) - _aliases(jvp)
    owned |= _copied_once(jvp, {s.targets[0].id for s in writes} - owned)
    in_place = {id(s) for s in writes + renamed if s.targets[0].id in owned}
    # where tapes are arrays (Numba's code), a write that cannot be in place is a copy,
    # then the write into it (`b = a.copy(); b[:, 2] = v`): what `_s2s_setitem` does,
    # written with the index as syntax, which Numba compiles (a `slice(...)` it does not)
    copied = {id(s) for s in writes + renamed if ctx.can.tape_arrays} - in_place

    def rewritten(s):
        if id(s) not in in_place and id(s) not in copied:
            return [s]
        call, name = s.value, s.targets[0].id
        # (the index of the call as it is now: an earlier pass may have put a
        # temporary's expression into it)
        index = operations.index_syntax(call.args[1])
        before = []
        if id(s) in copied:
            before = [syntax.located(syntax.assign(name, syntax.call(
                syntax.attribute(call.args[0], "copy"), [])), s)]
        elif not syntax.is_name(call.args[0], name):
            before = [syntax.located(syntax.assign(name, call.args[0]), s)]
        target = gast.Subscript(value=syntax.name(name), slice=syntax.copied(index),
                                ctx=gast.Store())
        return before + [syntax.located(syntax.assign(target, call.args[2]), s)]
    for block in syntax.blocks(jvp.body):
        block[:] = [new for s in block for new in rewritten(s)]
    return jvp


def _aliases(jvp):
    """The names bound somewhere to another name that is read elsewhere too, and that
    name: writing into one in place would write into the other (`yn_1_dot = y_dot`, the
    tangent of `yn_1 = y * 1.0`, whose product by 1 folded away, then `yn_1_dot[i] = v`
    while the loop still reads `y_dot[i - 1]`)."""
    reads = {}
    for n in syntax.walk(jvp):
        if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load):
            reads[n.id] = reads.get(n.id, 0) + 1
    copies = [s for s in syntax.statements(jvp) if isinstance(s, gast.Assign)
              and syntax.is_name(s.targets[0]) and isinstance(s.value, gast.Name)]
    other = _read_in_the_other_branch(jvp)
    # (and a copy of such a copy: `yn_2_dot = yn_1_dot`)
    return closure({n for s in copies if reads.get(s.value.id, 0) - other.get(id(s), 0) > 1
                    for n in (s.targets[0].id, s.value.id)},
                   [(s.value.id, s.targets[0].id) for s in copies])


def _read_in_the_other_branch(jvp):
    """{id of a copy `a = b` in a branch of an `if`: the reads of `b` in its other
    branch}, for a `b` bound in the block of the `if`, before it: the copy and those
    reads never both see that value (`pose_5 = pose_4` in the `else` of an `if` whose
    body writes `pose_5 = _s2s_setitem(pose_4, i, v)`, a write in one branch of a loop
    over an array), so they do not make `a` another name for memory read elsewhere."""
    other = {}
    for block in syntax.blocks(jvp.body):
        bound = set()
        for s in block:
            if isinstance(s, gast.If):
                for here, there in ((s.body, s.orelse), (s.orelse, s.body)):
                    for c in here:
                        if (isinstance(c, gast.Assign) and syntax.is_name(c.targets[0])
                                and isinstance(c.value, gast.Name) and c.value.id in bound):
                            other[id(c)] = sum(
                                1 for t in there for n in syntax.walk(t)
                                if isinstance(n, gast.Name) and n.id == c.value.id
                                and isinstance(n.ctx, gast.Load))
            if isinstance(s, gast.Assign):
                bound |= {t.id for t in s.targets if isinstance(t, gast.Name)}
    return other


def _copied_once(jvp, names):
    """The `names` (written element by element, of an input or a value the function did
    not make) whose every binding but the writes copies a name (`u_1 = u`, before a
    loop), made a copy of it (`u_1 = u.copy()`), once, so that the writes after it can
    be in place: one copy, not one per write. A parameter written so is copied first."""
    params = {a.id for a in jvp.args.posonlyargs + jvp.args.args}
    binds = {}
    for s in syntax.statements(jvp):
        if isinstance(s, gast.Assign) and syntax.is_name(s.targets[0]) \
                and s.targets[0].id in names and not (
                    isinstance(s.value, gast.Call) and s.value.args
                    and syntax.is_name(s.value.args[0], s.targets[0].id)):
            binds.setdefault(s.targets[0].id, []).append(s)
    copied = {n for n in names if n not in params and binds.get(n) and all(
        isinstance(b.value, gast.Name) for b in binds[n])}
    for n in copied:
        for b in binds[n]:
            b.value = syntax.call(syntax.attribute(b.value.id, "copy"), [])
    first = [syntax.assign(p, syntax.call(syntax.attribute(p, "copy"), []))
             for p in sorted(names & params) if p not in binds]
    jvp.body[:0] = first
    return copied | {s.targets[0].id for s in first}
