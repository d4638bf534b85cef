"""The adjoints of a function's own lists, for the code Numba compiles (`backend="numba"`;
after_ad/native_tapes.py calls it last).

A list the function makes (`hidden = []` and its appends, `[state[i] for i in ...]`
desugared so) and replaces elements of (`hidden[i] = h`, in Wengert form a copy
`hidden_3 = hidden_2.copy()` and an element write) is a list Numba types from what is
appended to it. Its adjoint, which the Python backend builds with container helpers
(`_s2s_add`, `_s2s_zero_at`, `_s2s_unindex`) from a number zero, is here a list of the
same length:

- its initialisation (`hidden_2_bar = 0.0`) a list of zeros like the list's elements
  (`[np.zeros_like(_s2s_e) for _s2s_e in hidden_2]`, `0.0` for a list of numbers), and the adjoint of one element
  read (`_s2s_unindex(g, hidden_2, i)`) such a list with `g` at `i`;
- the adjoint of an element read (`_s2s_take(hidden_2_bar, i)`) that element, and
  those of an append (`_s2s_last(a_bar)`, `_s2s_head(a_bar)`) its last element and the
  list without it (`a_bar[-1]`, `a_bar[:-1]`);
- the adjoint of an element written and read, `_s2s_add(_s2s_zero_at(a_bar, i),
  _s2s_unindex(g, a, i))`, a copy of the list with `g` at `i` (a sum of more
  `_s2s_unindex(g, a, j)`, of a list's adjoint, with each `g` added at its `j`).
  The copy goes where no other name can see the list (`_in_place`): `a_bar[i] = g`.

What other helper meets such a list is left as it is: native_check or Numba's typing
refuses it, naming the user's line or function. (In forward mode, such a list and its
tangent are appended to in place: `appended`, which native_tapes reads; the zero
tangent of such a list is a list of zeros: `zeros`.)
"""
import gast
import numpy as np

from .. import syntax
from ..analysis.number_types import BOOL, FLOAT, INT

#: The comprehension's variable of a list of zeros (native_check allows its ListComp).
ELEMENT = "_s2s_e"


def rewrite(fn, ctx, helper, types):
    """Rewrite `fn` (a gast function) in place; `helper(e)`: the name of the runtime
    helper call `e` calls, or None; `types`: analysis.number_types of `fn`."""
    lists = _lists(fn)
    if not lists or ctx.reverse is None:
        return fn
    adjoints = {a: p for p, a in ctx.reverse.adjoints.items() if p in lists}
    if not adjoints:
        return fn
    np_name = ctx.bind("np", obj=np)
    zero = _zero(fn, lists, types, np_name)
    renamed = True      # (and the names the reversed code binds to them: `a_1_bar = a_bar`)
    while renamed:
        renamed = False
        for s in syntax.statements(fn):
            if (isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name)
                    and s.targets[0].id not in adjoints and syntax.is_name(s.value)
                    and s.value.id in adjoints):
                adjoints[s.targets[0].id] = adjoints[s.value.id]
                renamed = True
    for block in syntax.blocks(fn.body):
        block[:] = [new for s in block for new in _statement(s, adjoints, helper, zero)]
    for s in syntax.statements(fn):
        for field in ("value", "test"):
            part = getattr(s, field, None)
            if isinstance(part, gast.AST):
                setattr(s, field, _takes(part, adjoints, helper))
    _in_place(fn, set(adjoints))
    return fn


def _in_place(fn, adjoints):
    """`fn` without the copies `a_bar = a_bar.copy()` before an element of the adjoint
    `a_bar` is replaced, when no other name can see the list: each binding of `a_bar` is
    a list of zeros or such a copy, and it is read only by its elements (`a_bar[i]`,
    which a replacement leaves as they were) and by those copies."""
    def copy_of_itself(s):
        v = s.value if isinstance(s, gast.Assign) else None
        return (isinstance(v, gast.Call) and not v.args and isinstance(v.func, gast.Attribute)
                and v.func.attr == "copy" and isinstance(s.targets[0], gast.Name)
                and syntax.is_name(v.func.value, s.targets[0].id))
    allowed = set()
    for s in syntax.statements(fn):
        for node in syntax.walk(s):
            if isinstance(node, gast.Subscript) and isinstance(node.value, gast.Name):
                allowed.add(id(node.value))
        if copy_of_itself(s):
            allowed.add(id(s.value.func.value))
    owned = set(adjoints)
    for s in syntax.statements(fn):
        for node in syntax.walk(s):
            if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Load) and \
                    id(node) not in allowed:
                owned.discard(node.id)
        for name in _targets(s):
            if name in owned and not (copy_of_itself(s) or isinstance(
                    s, gast.Assign) and isinstance(s.value, gast.ListComp)):
                owned.discard(name)
    for block in syntax.blocks(fn.body):
        block[:] = [s for s in block if not (copy_of_itself(s)
                                              and s.targets[0].id in owned)]


def zeros(fn, ctx, helper, types):
    """Rewrite `fn` in place: each zero of a list of the function's (`_s2s_zeros_like(a)`,
    the tangent of a list no tangent reaches, in forward mode) as a list of zeros like
    its elements."""
    lists = _lists(fn)
    if not lists:
        return fn
    zero = _zero(fn, lists, types, ctx.bind("np", obj=np))
    for s in syntax.statements(fn):
        if (isinstance(s, gast.Assign) and helper(s.value) == "zeros_like"
                and len(s.value.args) == 1 and syntax.is_name(s.value.args[0])
                and s.value.args[0].id in lists):
            s.value = _zeros(s.value.args[0].id, zero)
    return fn


def appended(fn, helper):
    """The names of `fn` bound to an empty list and otherwise only to that list with a
    value appended (`a = _s2s_append(a, v)`), which no other name is bound to: appends
    in place are the same (forward mode's lists and their tangents)."""
    bindings = {}
    for s in syntax.statements(fn):
        for target in _targets(s):
            bindings.setdefault(target, []).append(s.value if isinstance(s, gast.Assign)
                                                   else None)
    aliased = {s.value.id for s in syntax.statements(fn) if isinstance(s, gast.Assign)
               and syntax.is_name(s.value)}
    return {name for name, values in bindings.items() if name not in aliased
            and any(isinstance(v, gast.List) and not v.elts for v in values)
            and all(isinstance(v, gast.List) and not v.elts or helper(v) == "append"
                    and syntax.is_name(v.args[0], name) for v in values)}


def _targets(s):
    """The names statement `s` binds."""
    if isinstance(s, (gast.Assign, gast.AugAssign, gast.AnnAssign, gast.For)):
        targets = s.targets if isinstance(s, gast.Assign) else [s.target]
        return [n.id for t in targets for n in syntax.name_nodes(t)
                if isinstance(n.ctx, gast.Store)]
    return []


def _lists(fn):
    """The names bound to a list the function makes, and to its copies and renamings."""
    found = set()
    bindings = [(s.targets[0].id, s.value) for s in syntax.statements(fn)
                if isinstance(s, gast.Assign) and len(s.targets) == 1
                and isinstance(s.targets[0], gast.Name)]
    changed = True
    while changed:
        changed = False
        for target, value in bindings:
            if target in found or target.startswith("_s2s_"):
                continue
            if (isinstance(value, gast.List) and not value.elts
                    or syntax.is_name(value) and value.id in found
                    or isinstance(value, gast.Call) and not value.args
                    and isinstance(value.func, gast.Attribute) and value.func.attr == "copy"
                    and syntax.is_name(value.func.value) and value.func.value.id in found):
                found.add(target)
                changed = True
    return found


def _statement(s, adjoints, helper, zero):
    if not (isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name)):
        return [s]
    target, call = s.targets[0].id, s.value
    if target in adjoints and isinstance(call, gast.Constant):     # (its zero)
        s.value = _zeros(adjoints[target], zero)
        return [s]
    if (target in adjoints and helper(call) == "unindex" and len(call.args) == 3
            and syntax.is_name(call.args[1], adjoints[target])):
        g, _, index = call.args
        put = syntax.assign(gast.Subscript(value=syntax.name(target), slice=index,
                                           ctx=gast.Store()), g)
        return [syntax.located(syntax.assign(target, _zeros(adjoints[target], zero)), s),
                syntax.located(put, s)]
    if helper(call) != "add":
        return [s]
    terms = _terms(call, helper)
    bases = [t for t in terms if helper(t) != "unindex"]
    adds = [t for t in terms if helper(t) == "unindex" and len(t.args) == 3]
    if len(bases) != 1 or len(adds) != len(terms) - 1:
        return [s]
    base = bases[0]
    zeroed = None
    if (helper(base) == "zero_at" and len(base.args) == 2 and syntax.is_name(base.args[0])
            and base.args[0].id in adjoints):
        base, zeroed = base.args
    if not (syntax.is_name(base) and base.id in adjoints):
        return [s]

    def element(index, ctx=gast.Load()):
        return gast.Subscript(value=syntax.name(target), slice=index, ctx=ctx)
    out = [syntax.assign(target, syntax.call(syntax.attribute(base, "copy"), []))]
    if zeroed is not None and syntax.unparse(zeroed) == syntax.unparse(adds[0].args[2]):
        g, _, index = adds.pop(0).args     # (its element replaced: `a_bar[i] = g`)
        out.append(syntax.assign(element(index, gast.Store()), g))
    elif zeroed is not None:
        out.append(syntax.assign(element(zeroed, gast.Store()), zero(element(zeroed))))
    for g, _, index in (a.args for a in adds):
        out.append(syntax.assign(element(index, gast.Store()), gast.BinOp(
            left=element(index), op=gast.Add(), right=g)))
    return [syntax.located(n, s) for n in out]


def _terms(e, helper):
    """The terms of a sum of `_s2s_add` calls."""
    if helper(e) == "add" and len(e.args) == 2:
        return [t for a in e.args for t in _terms(a, helper)]
    return [e]


def _zero(fn, lists, types, np_name):
    """`zero(e)`: the zero like element `e` of the lists: `0.0` when a value put in them
    is a number (Numba's list holds values of one type), else `np.zeros_like(e)`."""
    put = [s.value.args[0] for s in syntax.statements(fn) if isinstance(s, gast.Expr)
           and isinstance(s.value, gast.Call) and isinstance(s.value.func, gast.Attribute)
           and s.value.func.attr == "append" and syntax.is_name(s.value.func.value)
           and s.value.func.value.id in lists and len(s.value.args) == 1]
    put += [s.value for s in syntax.statements(fn) if isinstance(s, gast.Assign)
            and isinstance(s.targets[0], gast.Subscript)
            and syntax.is_name(s.targets[0].value) and s.targets[0].value.id in lists]
    if any(types.of(v) in (FLOAT, INT, BOOL) for v in put):    # (a Numba list: one type)
        return lambda e: syntax.const(0.0)
    return lambda e: syntax.call(syntax.attribute(syntax.name(np_name), "zeros_like"), [e])


def _zeros(name, zero):
    """`[zero(_s2s_e) for _s2s_e in name]`."""
    return gast.ListComp(elt=zero(syntax.name(ELEMENT)), generators=[gast.comprehension(
        target=syntax.name(ELEMENT, store=True), iter=syntax.name(name), ifs=[],
        is_async=0)])


def _takes(e, adjoints, helper):
    """`e` with each `_s2s_take(a_bar, i)` of a list's adjoint as `a_bar[i]`, and
    `_s2s_last(a_bar)` and `_s2s_head(a_bar)` (the adjoint of an append) as `a_bar[-1]`
    and `a_bar[:-1]`."""
    def visit(n):
        n = syntax.rebuilt(n, visit)
        kind = helper(n)
        if kind not in ("take", "last", "head") or not (
                syntax.is_name(n.args[0]) and n.args[0].id in adjoints):
            return n
        if kind == "take" and len(n.args) == 2:
            index = n.args[1]
        elif kind == "last" and len(n.args) == 1:
            index = syntax.const(-1)
        elif kind == "head" and len(n.args) == 1:
            index = gast.Slice(lower=None, upper=syntax.const(-1), step=None)
        else:
            return n
        return gast.Subscript(value=n.args[0], slice=index, ctx=gast.Load())
    return visit(e)
