"""Attribute writes, and calls of functions that change the objects they are given.

`obj.x = v` in a function s2sad reads is a new version of the object, `obj =
_s2s_attr_set(obj, "x", v)` (rules/attributes.py: a shallow copy with the attribute
replaced), which the derivative follows like any value, and which before_ad.aliasing
follows as a write into the object's memory: another name for the object read after it
is refused, as after an element write; so is a change of an object the differentiated
function is given (its derivative never changes the objects it is given).

A call of a Python function that changes attributes of objects it is given (a method
changing `self`: `p.step(dt)`) is a call of a version of that function that also
returns them, rebound where it is called:

    p.step(dt)          ->  p = step(p, dt)[0]        (step returns (self, its result))
    r = h(a, b)         ->  a, r = h(a, b)            (h returns (a, its result))

The pass (after resolve_calls, which knows each call's function) finds such calls by the
callee's summary (before_ad/callee_effects.py: each write into an argument is an
attribute write of a parameter), and has the passes run again from the start
(`Restart`), desugar rewriting the calls found (`rebinding`) into code Wengert form
then versions as it versions any name.

>>> from s2sad import pipeline
>>> class Particle:
...     def __init__(self, pos, vel):
...         self.pos, self.vel = pos, vel
...     def step(self, dt):
...         self.pos = self.pos + dt * self.vel
>>> def energy(x):
...     p = Particle(x, 2.0)
...     for _ in range(3):
...         p.step(0.1)
...     return p.pos ** 2
>>> print(pipeline.stage_source(energy, "attribute_writes", arg_types={"x": float}))
... # (step_1: the version, its names after those of the passes' first run)
def energy(x):
    p = Particle(x, 2.0)
    for _ in range(3):
        t_1 = step_1(p, 0.1)
        p_1 = t_1[0]
        # path end
        p = p_1
    t_2 = p.pos
    y_1 = t_2 ** 2
    return y_1
<BLANKLINE>
"""
import copy
import inspect
import weakref

import gast

from .. import emit, marks, syntax
from ..frontend import guards, source
from ..rules import runtime
from . import callee_effects
from .alias_errors import augmented_attribute
from .aliasing import summary
from .callee_effects import Returning, returns_its_writes


class Restart(Exception):
    """The passes run again from the first (pipeline.compilation), desugar rewriting the
    calls `ctx.rebound` holds."""


def run(fn, ctx):
    """The pass: the calls of `fn` of functions that change attributes of the objects
    they are given, new ones in `ctx.rebound` ({(line, column) of the statement: (function,
    its parameters changed)}), and a `Restart` if there are new ones."""
    new = {}
    for s in syntax.statements(fn):
        call = s.value if isinstance(s, (gast.Assign, gast.Expr)) else None
        if isinstance(call, gast.Call) and hasattr(s, "lineno"):
            key = (s.lineno, s.col_offset)
            if key not in ctx.rebound:
                found = _changed(call, ctx)
                if found is not None:
                    new[key] = found
    if not new:
        return fn
    ctx.rebound.update(new)
    raise Restart


def _changed(call, ctx):
    """(function, its parameters changed) if `call` calls a Python function that writes
    into its arguments only by assigning attributes of its parameters, each passed a
    name; else None."""
    callee = callee_effects.python_callee(call, ctx)
    if (callee is None or returns_its_writes(callee[0])
            or not callee_effects.may_write(callee, ctx)
            or any(isinstance(a, gast.Starred) for a in call.args)):
        return None
    fn, params = callee
    args = dict(zip(params, call.args))
    args.update({k.arg: k.value for k in call.keywords if k.arg in params})
    kinds = {p: k for p, a in args.items() for k in [ctx.value_kinds[a]] if k is not None}
    found = summary(fn, kinds, ctx)
    if not found.writes or not all(w.rebinds and w.term == ("arg", w.param)
                                   for w in found.writes):
        return None
    written = tuple(p for p in params if any(w.param == p for w in found.writes))
    if not all(isinstance(args.get(p), gast.Name) for p in written):
        return None
    return fn, written


def rebinding(s, ctx):
    """The statements for `s`, a call `ctx.rebound` holds (`p.step(dt)`, `r =
    h(a, b)`): the call of the version of its function that returns what it changes,
    then the names passed for those rebound, then the result's; else None."""
    call = s.value if isinstance(s, gast.Expr) or (
        isinstance(s, gast.Assign) and len(s.targets) == 1) else None
    if not (ctx.rebound and isinstance(call, gast.Call) and hasattr(s, "lineno")):
        return None
    found = ctx.rebound.get((s.lineno, s.col_offset))
    if found is None:
        return None
    fn, written = found
    target = ctx.src.resolve(call.func)
    method = target is source.MISSING and isinstance(call.func, gast.Attribute) and (
        call.func.attr == fn.__name__)
    if not method and target is not fn:
        return None     # (left as it is: before_ad.aliasing refuses it)
    args = ([call.func.value] if method else []) + list(call.args)
    passed = dict(zip(inspect.signature(fn).parameters, args))
    if any(not isinstance(passed.get(p), gast.Name) for p in written):
        return None
    version = returning(fn, written)
    func = syntax.located(syntax.name(ctx.bind(fn.__name__, obj=version)), call)
    marks.PRIM.put(func, version)
    value = syntax.call(func, args, call.keywords)
    targets = [syntax.name(passed[p].id, store=True) for p in written]
    if isinstance(s, gast.Expr) and len(targets) == 1:
        return [syntax.located(syntax.assign(targets[0], _item(value, 0)), s)]
    # (the result bound last, as the version returns it: `p = p.step(dt)` binds it)
    targets.append(s.targets[0] if isinstance(s, gast.Assign) else
                   syntax.name(ctx.namer.fresh("returned"), store=True))
    out = [syntax.assign(gast.Tuple(elts=targets, ctx=gast.Store()), value)]
    return [syntax.located(o, s) for o in out]


def _item(value, k):
    return gast.Subscript(value=value, slice=syntax.const(k), ctx=gast.Load())


#: {function: {parameters changed: (its stamp, the version returning them)}}
_versions = weakref.WeakKeyDictionary()


def returning(fn, written):
    """The version of `fn` that returns `(*the final values of the parameters written,
    its result)`: s2sad reads it from `fn`'s source with its returns changed
    (lines still the user's), and it runs as `fn` on shallow copies of those
    arguments, so that the objects it is passed are not changed."""
    known = _versions.setdefault(fn, {}).get(written)
    if known is not None and guards.same(known[0], guards.stamp(fn)):
        return known[1]
    src = source.capture(fn)
    node = src.node
    node.decorator_list = []
    for r in [n for n in syntax.walk(node) if isinstance(n, gast.Return)]:
        r.value = _returned(r.value or syntax.const(None), written, r)
    if not node.body or not isinstance(node.body[-1], gast.Return):
        end = node.body[-1] if node.body else node
        node.body.append(syntax.located(gast.Return(value=_returned(
            syntax.const(None), written, end)), end))
    runs = syntax.copied(node)
    runs.body[:0] = [syntax.located(syntax.assign(p, syntax.call(
        syntax.name("_s2s_copied"), [syntax.name(p)])), node) for p in written]
    bindings = {"_s2s_copied": copy.copy, "_s2s_refuse_array": runtime.refuse_view}
    for block in syntax.blocks(runs.body):      # (`self.x += v` of an array: refused, as
        for k in range(len(block) - 1, -1, -1):     # where s2sad differentiates it)
            a = block[k]
            if isinstance(a, gast.AugAssign) and isinstance(a.target, gast.Attribute):
                error = f"_s2s_error_{len(bindings)}"
                bindings[error] = src.syntax_error(a, augmented_attribute(src.line_text(a)))
                read = gast.Attribute(value=a.target.value, attr=a.target.attr,
                                      ctx=gast.Load())
                block.insert(k, syntax.located(syntax.expr_stmt(syntax.call(
                    syntax.name("_s2s_refuse_array"), [read, syntax.name(error)])), a))
    code = fn.__code__
    for var, cell in zip(code.co_freevars, fn.__closure__ or ()):
        try:
            bindings[var] = cell.cell_contents
        except ValueError:
            pass
    filename = (f"<s2sad: {fn.__name__}, returning what it changes, from "
                f"{src.filename}:{src.first_line}>")
    version = emit.compile_functions([runs], bindings, fn, filename)[0]
    version.__qualname__ = fn.__qualname__
    marks.RECORD.put(version, Returning(node, src, fn, written))
    _versions[fn][written] = (guards.stamp(fn), version)
    return version


def _returned(value, written, where):
    return syntax.located(gast.Tuple(elts=[syntax.name(p) for p in written] + [value],
                                     ctx=gast.Load()), where)


def in_place(s, ctx, augmented):
    """The statements for `s`, an augmented assignment, as `augmented` (desugar's) writes
    it: of an attribute, `obj.x += v` is `t = obj.x`, `t += v`, `obj.x = t`, since NumPy
    adds in place into the array the attribute holds: before_ad.aliasing refuses it
    there, unless the attribute is a number."""
    target = s.target
    if not (isinstance(target, gast.Attribute) and isinstance(target.value, gast.Name)):
        return [augmented(s)]
    held = ctx.namer.fresh(target.attr)
    load = gast.Attribute(value=syntax.name(target.value.id), attr=target.attr,
                          ctx=gast.Load())
    add = syntax.located(gast.AugAssign(target=syntax.name(held, store=True), op=s.op,
                                        value=s.value), s)
    store = gast.Attribute(value=syntax.name(target.value.id), attr=target.attr,
                           ctx=gast.Store())
    added = augmented(add)
    marks.AUGMENTED.put(added, "attribute")
    return [syntax.located(syntax.assign(held, load), s), added,
            syntax.located(syntax.assign(store, syntax.name(held)), s)]


def attribute_write(s, ctx):
    """`obj = _s2s_attr_set(obj, "x", v)` for the statement `s`, `obj.x = v` (the fence
    lets only this form through); other statements as they are."""
    target = s.targets[0] if isinstance(s, gast.Assign) and len(s.targets) == 1 else None
    if not (isinstance(target, gast.Attribute) and isinstance(target.value, gast.Name)):
        return s
    func = syntax.name(ctx.runtime("attr_set"))
    marks.PRIM.put(func, runtime.attr_set)
    call = syntax.call(func, [syntax.name(target.value.id), syntax.const(target.attr), s.value])
    return syntax.located(syntax.assign(target.value.id, call), s)

