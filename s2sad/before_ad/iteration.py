"""Loops over sequences for before_ad.desugar: every `for` but one over `range` becomes a
loop over indexes that binds its target at the top of the body, so that reverse mode
tapes an index and the adjoint of each element goes to its place in the sequence.

- `for row in X` is `for i in range(len(X)): row = X[i]` where `X` is certainly a list,
  tuple or array (an array parameter, a name bound only to displays, a slice of one:
  `x[1:]`); otherwise the loop indexes `_s2s_sequence(X)`, which is `X` itself for those
  and a list of the items of anything else (a dict's keys);
- `enumerate`, `zip` and `reversed` (nested as they like) read their sequences at the
  same index; `d.items()`, `d.keys()` and `d.values()` index `_s2s_keys(d)` and read
  `d[k]` with the key just bound;
- a tuple target is bound part by part (`for i, (w, b) in enumerate(layers)`);
- a loop over `itertools.count()` (alone, or in `enumerate` or `zip`) that `zip` does
  not end is a `while True` that counts, which stops at a `break` or a `return`.
"""
import builtins
import itertools

import gast
import numpy as np

from .. import marks, syntax
from ..analysis.value_kinds import user_class
from ..frontend import structure
from ..frontend.source import MISSING
from ..rules import runtime


class Iteration:
    """Rewrites the loops of one function; `ctx` is its `Compilation`, `fn` the function
    (whose names bound to displays `Iteration` indexes directly)."""

    def __init__(self, ctx, fn):
        self.ctx = ctx
        self.src = ctx.src
        self.namer = ctx.namer
        self.indexable = _indexable(fn, ctx.types)

    def is_range(self, e):
        return isinstance(e, gast.Call) and self.src.resolve(e.func) is range

    def unrolled_items(self, loop, fn):
        """The tuple display of the items a `for` `loop` of `fn` is unrolled over, else
        None: those of a list or tuple of the user's objects outside the function
        (`object_items`) or read from a parameter (`argument_items`), or a constant
        slice of one, `(layers[0], layers[1])`; or over `zip` or `enumerate` of one (see
        `zipped_items`)."""
        whole, part = constant_slice(loop.iter)
        items = object_items(self.src, whole) or argument_items(self.ctx, fn, loop, whole)
        if not items:
            return self.zipped_items(loop, fn)
        return gast.Tuple(elts=[
            gast.Subscript(value=syntax.copied(whole), slice=syntax.const(k),
                           ctx=gast.Load())
            for k in range(len(items))[part or slice(None)]], ctx=gast.Load())

    def zipped_items(self, loop, fn):
        """For `for layer, p in zip(layers, params)` or `for k, layer in
        enumerate(layers)` whose first sequence is a list of the user's objects a loop
        over it is unrolled over (`object_items`, `argument_items`), so that each item's
        class is known: the tuple display of the items of each iteration, `((layers[0],
        params[0]), (layers[1], params[1]))`, as many as that list has (zip stops there;
        a shorter `params` raises its IndexError); else None."""
        call = loop.iter
        if not (isinstance(call, gast.Call) and call.args and not call.keywords
                and not any(isinstance(a, gast.Starred) for a in call.args)):
            return None
        kind = self.src.resolve(call.func)
        if not (kind is zip or (kind is enumerate and len(call.args) == 1)):
            return None
        found = _unrolled_items(self.ctx, fn, loop, call.args[0])
        if found is None:
            return None
        whole, indexes = found
        others = [syntax.copied(a) for a in call.args[1:]]
        if any(isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)
               and n.id in syntax.names_loaded(syntax.tuple_(others))
               for s in loop.body for n in syntax.walk(s)):
            return None     # (a sequence the body rebinds: zip read it before the loop)

        def item(seq, k):
            return gast.Subscript(value=syntax.copied(seq), slice=syntax.const(k),
                                  ctx=gast.Load())
        rows = []
        for k, index in enumerate(indexes):
            first = item(whole, index)
            row = ([syntax.const(k), first] if kind is enumerate
                   else [first] + [item(o, k) for o in others])
            rows.append(syntax.tuple_(row))
        return syntax.located(syntax.tuple_(rows), call)

    def indexed(self, loop):
        """Rewrite `loop`, a `for` over anything but a range, as a loop over indexes
        that binds its target at the top of the body (`for row in X` is `for i in
        range(len(X)): row = X[i]`; `for k, v in d.items()` reads `d[k]`); returns the
        statements that must run before it. Reverse mode then tapes an index, and the
        adjoint of each element goes to its place in the sequence."""
        prelude = []
        length, element = self.parts(loop.iter, loop, prelude)
        index = self.namer.fresh("i")
        binds = self.bind(loop.target, element(syntax.name(index)), loop)
        if length is None:
            # `itertools.count()`: without an end, a `while True` that counts (up front,
            # so that `continue` counts too); it stops at a break or a return
            prelude.append(syntax.assign(index, syntax.const(-1)))
            binds.insert(0, syntax.assign(index, syntax.binop(
                syntax.name(index), gast.Add(), syntax.const(1))))
            loop = syntax.located(gast.While(test=syntax.const(True), body=[
                syntax.located(b, loop) for b in binds] + loop.body, orelse=loop.orelse), loop)
            return [syntax.located(p, loop) for p in prelude], loop
        loop.iter = self.call("range", [length])
        loop.target = syntax.name(index, store=True)
        loop.body = [syntax.located(b, loop) for b in binds] + loop.body
        return [syntax.located(p, loop) for p in prelude], loop

    def parts(self, e, loop, prelude):
        """(the number of items the iterable `e` gives, a function from an index to the
        item: an expression, or a tuple of them for zip and enumerate), with the
        statements that bind what they read appended to `prelude`."""
        called = self.src.resolve(e.func) if isinstance(e, gast.Call) else None
        plain = isinstance(e, gast.Call) and not e.keywords and not any(
            isinstance(a, gast.Starred) for a in e.args)
        if called is enumerate and _enumerate_call(e):
            length, item = self.parts(e.args[0], loop, prelude)
            given = e.args[1:] + [k.value for k in e.keywords]      # (the start)
            start = self.held(given[0], "start", loop, prelude) if given else None
            counter = (lambda i: i) if start is None else (
                lambda i: syntax.binop(i, gast.Add(), syntax.copied(start)))
            return length, lambda i: (counter(i), item(i))
        if called is zip and plain and e.args:
            zipped = [self.parts(a, loop, prelude) for a in e.args]
            ends = [n for n, _ in zipped if n is not None]
            length = None if not ends else ends[0] if len(ends) == 1 else self.call("min", ends)
            return length, lambda i: tuple(item(i) for _, item in zipped)
        if called is itertools.count and isinstance(e, gast.Call) and len(e.args) <= 2 and not any(
                isinstance(a, gast.Starred) for a in e.args) and all(
                k.arg in ("start", "step") for k in e.keywords):
            # (None: no end)
            given = dict(zip(("start", "step"), e.args), **{k.arg: k.value for k in e.keywords})
            start = self.held(given.get("start", syntax.const(0)), "start", loop, prelude)
            step = self.held(given.get("step", syntax.const(1)), "step", loop, prelude)

            def counted(i):
                if not (isinstance(step, gast.Constant) and step.value == 1):
                    i = syntax.binop(i, gast.Mult(), syntax.copied(step))
                if not (isinstance(start, gast.Constant) and start.value == 0):
                    i = syntax.binop(syntax.copied(start), gast.Add(), i)
                return i
            return None, counted
        if called is reversed and plain and len(e.args) == 1:
            length, item = self.parts(e.args[0], loop, prelude)
            if length is None:
                raise self.src.syntax_error(loop, "reversed() of a sequence without an end "
                                            "(itertools.count()) is an error in Python too")
            n = self.held(length, "n", loop, prelude)
            return n, lambda i: item(syntax.binop(
                syntax.binop(syntax.copied(n), gast.Sub(), syntax.const(1)), gast.Sub(), i))
        if (isinstance(e, gast.Call) and isinstance(e.func, gast.Attribute) and not e.args
                and not e.keywords and e.func.attr in ("items", "keys", "values")
                and _mapping(self.src.resolve(e.func.value))):
            d = self.held(e.func.value, "d", loop, prelude)
            keys = self.namer.fresh("keys")
            prelude.append(syntax.assign(keys, self.call("keys", [syntax.copied(d)], runtime.keys)))
            length = self.call("len", [syntax.name(keys)])

            def key(i):
                return gast.Subscript(value=syntax.name(keys), slice=i, ctx=gast.Load())

            def value(k):
                return gast.Subscript(value=syntax.copied(d), slice=k, ctx=gast.Load())
            return length, {"items": lambda i: (key(i), _Keyed(value)), "keys": key,
                            "values": lambda i: value(key(i))}[e.func.attr]
        if certainly_indexable(e, self.indexable):
            seq = self.held(e, "seq", loop, prelude)
        else:
            seq = self.namer.fresh("seq")
            prelude.append(syntax.assign(seq, self.call("sequence", [e], runtime.sequence)))
            seq = syntax.name(seq)
        length = self.call("len", [syntax.copied(seq)])
        return length, lambda i: gast.Subscript(value=syntax.copied(seq), slice=i,
                                                ctx=gast.Load())

    def call(self, name, args, helper=None):
        """A call of the builtin `name`, or of the runtime `helper`, that the passes after
        this one know (`marks.PRIM`) whatever the user's names."""
        func = syntax.name(self.ctx.bind(name) if helper is None else self.ctx.runtime(name))
        marks.PRIM.put(func, getattr(builtins, name) if helper is None else helper)
        return syntax.call(func, args)

    def held(self, e, base, loop, prelude):
        """`e` as an atom the loop can read on every iteration: a constant, a name the
        loop does not assign, or a new name bound to it in `prelude`."""
        if isinstance(e, gast.Constant):
            return e
        changed = {n.id for st in loop.body for n in syntax.name_nodes(st)
                   if isinstance(n.ctx, gast.Store)}
        if isinstance(e, gast.Name) and e.id not in changed:
            return e
        held = self.namer.fresh(base)
        prelude.append(syntax.assign(held, e))
        return syntax.name(held)

    def bind(self, target, item, loop):
        """The assignments binding the loop target `target` to `item` (see `parts`)."""
        if isinstance(item, tuple):
            if isinstance(target, (gast.Tuple, gast.List)):
                if len(target.elts) != len(item):
                    raise self.src.syntax_error(loop, (
                        f"this loop gives {len(item)} values at a time, and its target "
                        f"unpacks {len(target.elts)}"))
                out, previous = [], None
                for t, v in zip(target.elts, item):
                    if isinstance(v, _Keyed):   # a dict's value, read with the key just bound
                        v = v(syntax.name(previous.id) if isinstance(previous, gast.Name)
                              else syntax.copied(item[0]))
                    out.extend(self.bind(t, v, loop))
                    previous = t
                return out
            item = syntax.tuple_([v(syntax.copied(item[0])) if isinstance(v, _Keyed) else v
                                  for v in item])
        return [syntax.assign(syntax.as_store(target), item)]


def _indexable(fn, types):
    """The names that certainly hold a list, tuple or array wherever they are read: array
    parameters, and names every assignment binds to a list or tuple display or a list
    comprehension. A loop indexes them directly."""
    out = {p for p, t in types.items() if t is np.ndarray}
    displays = {}
    params = {a.id for a in fn.args.args + fn.args.posonlyargs + fn.args.kwonlyargs}
    for n in syntax.walk(fn):
        if isinstance(n, gast.Assign) and len(n.targets) == 1 and isinstance(
                n.targets[0], gast.Name):
            ok = isinstance(n.value, (gast.List, gast.Tuple, gast.ListComp))
            displays[n.targets[0].id] = displays.get(n.targets[0].id, True) and ok
        elif isinstance(n, (gast.Assign, gast.For, gast.AugAssign, gast.AnnAssign,
                            gast.NamedExpr, gast.comprehension)):
            for target in (n.targets if isinstance(n, gast.Assign) else [n.target]):
                for t in syntax.name_nodes(target):
                    if isinstance(t.ctx, gast.Store) and not (
                            isinstance(n, gast.AugAssign) and displays.get(t.id)):
                        displays[t.id] = False
    return out | {k for k, ok in displays.items() if ok and k not in params}


def certainly_indexable(e, indexable):
    """Whether the expression `e` certainly holds a list, tuple or array: a display, a
    name of `indexable` (`_indexable`), or a slice of one (`x[1:]`)."""
    while isinstance(e, gast.Subscript) and isinstance(e.slice, gast.Slice):
        e = e.value
    return (isinstance(e, gast.Name) and e.id in indexable
            or isinstance(e, (gast.List, gast.Tuple, gast.ListComp)))


def _enumerate_call(e):
    """Whether `e`, a call of `enumerate`, is `enumerate(xs)`, `enumerate(xs, n)` or
    `enumerate(xs, start=n)`."""
    return (1 <= len(e.args) <= 2 and len(e.args) + len(e.keywords) <= 2
            and not any(isinstance(a, gast.Starred) for a in e.args)
            and all(k.arg == "start" for k in e.keywords))


class _Keyed:
    """The value of a dict's item, as a function of the expression of its key (see
    `Desugar.bind`: the key the loop binds is read once)."""

    def __init__(self, value):
        self.value = value

    def __call__(self, key):
        return self.value(key)


def _mapping(obj):
    """Whether `obj`, what a receiver of `.items()` resolves to, may be a dict: a local
    value, or a module's dict."""
    return obj is MISSING or isinstance(obj, dict)


def flat_targets(target):
    if isinstance(target, (gast.Tuple, gast.List)):
        for elt in target.elts:
            yield from flat_targets(elt)
    else:
        yield target


def _unrolled_items(ctx, fn, loop, e):
    """(the list, the indexes of its items) of `e` (a list or tuple of the user's objects,
    or a constant slice of one), the first sequence of the `zip` or `enumerate` a loop
    goes over, that the loop is unrolled over (see `object_items`, `argument_items`),
    else None."""
    whole, part = constant_slice(e)
    items = object_items(ctx.src, whole) or argument_items(ctx, fn, loop, whole, loop.iter)
    return None if not items else (whole, list(range(len(items)))[part or slice(None)])


def object_items(src, e):
    """The items of the list or tuple outside the function that `e`, a name or an
    attribute chain of one, denotes, if they are objects of the user's classes (up to 32
    of them): before_ad.desugar unrolls a loop over them (`for layer in layers: x =
    layer.forward(x)`), so that each item's class, which its methods are found through,
    is known; the derivative's guard tests that the items' classes are the same. Else
    None."""
    value = src.resolve(e) if isinstance(e, (gast.Name, gast.Attribute)) else None
    if type(value) not in (list, tuple) or not 0 < len(value) <= 32 or not all(
            user_class(type(v)) for v in value):
        return None
    return src.items_of(e)


def constant_slice(e):
    """(`xs`, the slice) for `e` a slice of constant bounds of `xs` (`layers[:-1]`,
    `self.layers[1:]`), else (`e`, None): a loop over it is unrolled over those items."""
    if not (isinstance(e, gast.Subscript) and isinstance(e.slice, gast.Slice)):
        return e, None
    bounds = []
    for b in (e.slice.lower, e.slice.upper, e.slice.step):
        if isinstance(b, gast.UnaryOp) and isinstance(b.op, gast.USub) and isinstance(
                b.operand, gast.Constant) and type(b.operand.value) is int:
            bounds.append(-b.operand.value)
        elif b is None or isinstance(b, gast.Constant) and type(b.value) is int:
            bounds.append(None if b is None else b.value)
        else:
            return e, None
    return e.value, slice(*bounds)


def argument_items(ctx, fn, loop, iterable=None, head=None):
    """The indexes of the items of the list or tuple of the user's objects that the
    `for` `loop` goes over, if it is read from a parameter (`layers`, `self.layers`)
    whose structure the code is specialised on (see frontend/structure.py: the guard
    tests its length and its items' classes), and `fn` neither rebinds nor changes it
    nor hands it on, nor the parameter it is read from (see structure.handed_on: a
    list it changed, `layers.append(d)`, or `self.grow()` might, is not unrolled); else
    None. before_ad.desugar unrolls the loop, as for `object_items`. `iterable`: what
    the loop goes over, if not `loop.iter` (the list of `layers[:-1]`); `head`, the call
    of `zip` or `enumerate` it is read by, if so."""
    iterable = loop.iter if iterable is None else iterable
    path = structure.dotted(iterable)
    length = ctx.structure.get(f"len({path})") if path else None
    if length is None or path.split(".")[0] not in {
            a.id for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs}:
        return None
    if structure.handed_on(fn, path.split(".")[0], ctx.structure, head):
        return None
    parents = {id(c): n for n in syntax.walk(fn) for c in gast.iter_child_nodes(n)}
    for n in syntax.walk(fn):
        dotted = structure.dotted(n) if isinstance(n, (gast.Name, gast.Attribute)) else None
        if dotted is None or isinstance(n.ctx, gast.Param):
            continue
        if isinstance(n.ctx, (gast.Store, gast.Del)) and (path + ".").startswith(dotted + "."):
            return None     # the parameter, or a field it is read through, rebound
        up = parents.get(id(n))
        if dotted == path and not (n is iterable or (
                isinstance(up, gast.Subscript) and up.value is n
                and isinstance(up.ctx, gast.Load))):
            return None     # changed (`layers.append(d)`, `layers[1] = d`), or handed on
    return range(length)


