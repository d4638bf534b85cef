"""Desugar: rewrite syntactic sugar into a smaller language.

Takes a fenced and lifted function and leaves one where

- a list comprehension or generator expression is a loop that appends to a new list,
  before the statement that uses it (a generator expression only where it is consumed
  whole: as the argument of `sum`, `list`, `tuple`, `min`, `max`, ... or a loop's
  iterable),
- augmented and annotated assignments are plain assignments (`x += y` is `x = x + y`),
- an assignment has one target (`a = b = e` is `a = e; b = a`),
- a `for` over a tuple or list display is unrolled (without `break` or `continue` in
  it), and any other `for` but one over `range` is a loop over indexes that binds its
  target first (`for i, (w, b) in enumerate(zip(ws, bs))`, `for k, v in d.items()`,
  `for row in X`; see `Desugar.indexed`),
- `for ... else` and `while ... else` use a flag,
- `break`, `continue`, `raise` and the jumps of early returns stand only at the end of a
  block, with the statements after them moved into the other branch (or guarded by a
  flag when a jump hides inside a branch), and the function has one `return`, last.

>>> from s2sad.passes.desugar import Desugar
>>> print(show(Desugar, '''
... def f(x):
...     if x > 0:
...         return x
...     x *= 2
...     return sum(x * i for i in range(4) if i != 2)
... '''))
def f(x):
    if x > 0:
        y = x
    else:
        x = x * 2
        items = []
        for i in range(4):
            if i != 2:
                items.append(x * i)
        y = sum(items)
    return y
"""

import builtins

import gast
import numpy as np

from .. import syntax
from ..frontend import source
from ..frontend.source import MISSING
from ..rules import runtime

JUMPS = (gast.Break, gast.Continue)


def run(fn, ctx):
    """The pass."""
    return Desugar(ctx).run(fn)


class Desugar:
    """See the module docstring."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.src = ctx.src
        self.namer = ctx.namer
        self.ret_name = None
        self.ret_flag = None

    def run(self, fn):
        self.outside = set(_names_outside_comprehensions(fn)) | set(self.src.free_values())
        self.comprehension_vars = set()
        self.generated = source.is_generated(self.src)
        self.indexable = _indexable(fn, self.ctx.types)
        body = [s for stmt in fn.body for s in self.stmt(stmt)]
        body = _drop_docstring(body)
        returns = [n for s in body for n in syntax.walk(s) if isinstance(n, gast.Return)]
        if not (len(returns) == 1 and body and body[-1] is returns[0]):
            body = self.single_exit(body)
        else:
            body, _, _ = self.jumps(body)
        fn.body = body
        return fn

    # -- sugar ------------------------------------------------------------------------
    def stmt(self, s):
        prelude, s = self.comprehensions(s)
        if prelude:
            return self.block(prelude) + (self.stmt(s) if s is not None else [])
        if isinstance(s, gast.AugAssign):
            value = gast.BinOp(left=_load(s.target), op=s.op, right=s.value)
            plain = syntax.located(syntax.assign(_store(s.target), value), s)
            # NumPy does `x += y` in place on an array: passes.aliasing needs to know
            plain.s2s_augmented = isinstance(s.target, gast.Name)
            return [plain]
        if isinstance(s, gast.AnnAssign):
            return [syntax.located(syntax.assign(s.target, s.value), s)]
        if isinstance(s, gast.Assign) and len(s.targets) > 1:
            first = syntax.located(syntax.assign(s.targets[0], s.value), s)
            rest = [syntax.located(syntax.assign(t, _load(s.targets[0])), s)
                    for t in s.targets[1:]]
            return [first] + rest
        if isinstance(s, gast.If):
            s.body = self.block(s.body)
            s.orelse = self.block(s.orelse)
        elif isinstance(s, (gast.For, gast.While)):
            s.body = self.block(s.body)
            s.orelse = self.block(s.orelse)
            if isinstance(s, gast.For) and isinstance(s.iter, (gast.Tuple, gast.List)) and not any(
                    isinstance(n, JUMPS) for b in s.body for n in syntax.walk(b)):
                return self.unroll(s)
            prelude = []
            if isinstance(s, gast.For) and not self.generated and not self.is_range(s.iter):
                prelude = self.indexed(s)
            if s.orelse:
                return prelude + self.loop_else(s)
            return prelude + [s]
        return [s]

    def block(self, stmts):
        return [out for s in stmts for out in self.stmt(s)]

    def unroll(self, loop):
        """`for v in (a, b)`: the body once for each element (without jumps in it)."""
        out, elts = [], list(loop.iter.elts)
        changed = {n.id for s in loop.body for n in syntax.walk(s)
                   if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}
        if any(isinstance(n, gast.Name) and n.id in changed for e in elts for n in syntax.walk(e)):
            # the tuple is built before the loop runs: keep its values
            for k, elt in enumerate(elts):
                held = self.namer.fresh(f"{loop.target.id}_{k}")
                out.append(syntax.located(syntax.assign(held, elt), loop))
                elts[k] = syntax.name(held)
        for elt in elts:
            out.append(syntax.located(syntax.assign(_store(loop.target), syntax.copied(elt)),
                                      loop))
            out.extend(syntax.copied(loop.body))
        return out + loop.orelse

    # -- loops over sequences, dicts and iterables ----------------------------------------
    def is_range(self, e):
        return isinstance(e, gast.Call) and self.src.resolve(e.func) is range

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
        loop.iter = self.call("range", [length])
        loop.target = syntax.name(index, store=True)
        loop.body = [syntax.located(b, loop) for b in binds] + loop.body
        return [syntax.located(p, loop) for p in prelude]

    def parts(self, e, loop, prelude):
        """(the number of items the iterable `e` gives, a function from an index to the
        item: an expression, or a tuple of them for zip and enumerate), with the
        statements that bind what they read appended to `prelude`."""
        called = self.src.resolve(e.func) if isinstance(e, gast.Call) else None
        plain = isinstance(e, gast.Call) and not e.keywords and not any(
            isinstance(a, gast.Starred) for a in e.args)
        if called is enumerate and plain and len(e.args) in (1, 2):
            length, item = self.parts(e.args[0], loop, prelude)
            start = self.held(e.args[1], "start", loop, prelude) if len(e.args) == 2 else None
            counter = (lambda i: i) if start is None else (
                lambda i: syntax.binop(i, gast.Add(), syntax.copied(start)))
            return length, lambda i: (counter(i), item(i))
        if called is zip and plain and e.args:
            zipped = [self.parts(a, loop, prelude) for a in e.args]
            length = zipped[0][0] if len(zipped) == 1 else self.call("min", [n for n, _ in zipped])
            return length, lambda i: tuple(item(i) for _, item in zipped)
        if called is reversed and plain and len(e.args) == 1:
            length, item = self.parts(e.args[0], loop, prelude)
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
        if isinstance(e, gast.Name) and e.id in self.indexable or isinstance(
                e, (gast.List, gast.Tuple)):
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
        this one know (`s2s_prim`) whatever the user's names."""
        func = syntax.name(self.ctx.bind(name) if helper is None else self.ctx.runtime(name))
        func.s2s_prim = getattr(builtins, name) if helper is None else helper
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
        return [syntax.assign(_store(target), item)]

    def loop_else(self, loop):
        flag = self.namer.fresh("broke")
        loop.body = _flag_breaks(loop.body, flag)
        orelse, loop.orelse = loop.orelse, []
        init = syntax.located(syntax.assign(flag, syntax.const(False)), loop)
        guard = syntax.located(syntax.if_(syntax.not_(syntax.name(flag)), orelse), loop)
        return [init, loop, guard]

    # -- comprehensions ---------------------------------------------------------------
    def comprehensions(self, s):
        """(loops building the lists of the comprehensions in `s`'s own expressions,
        `s` reading those lists instead, or None when the loops replace `s`)."""
        if isinstance(s, gast.While) and _comprehension_in(s.test):
            raise self.src.syntax_error(
                _comprehension_in(s.test), "a comprehension in a while condition is not "
                "supported; compute it before the loop and at the end of its body")
        if (isinstance(s, gast.Assign) and len(s.targets) == 1
                and isinstance(s.targets[0], gast.Name) and isinstance(s.value, gast.ListComp)
                and s.targets[0].id not in syntax.names_loaded(s.value)):
            return self.expand(s.value, s.targets[0].id), None
        if isinstance(s, gast.For) and isinstance(s.iter, gast.GeneratorExp):
            if len(s.iter.generators) == 1 or not _breaks(s.body):
                return [self.merged(s)], None
            s.iter.s2s_consumed = True
        prelude = []
        hoist = _Hoist(self, prelude)
        for field, value in gast.iter_fields(s):
            if field in ("body", "orelse"):
                continue
            if isinstance(value, list):
                setattr(s, field, [hoist.visit(v) for v in value])
            elif isinstance(value, gast.AST):
                setattr(s, field, hoist.visit(value))
        return prelude, s

    def merged(self, loop):
        """`for v in (e for k in it)`, its body run as the generator yields: `for k in
        it: v = e` followed by the body."""
        [outer] = self.expand(loop.iter, "items", lambda element: [
            syntax.located(syntax.assign(_store(loop.target), element), loop)] + loop.body)[1:]
        outer.orelse = loop.orelse
        return outer

    def expand(self, comp, items, innermost=None):
        """`items = []` and the loops of `comp` appending its elements to `items`."""
        renames, loops = {}, []
        for gen in comp.generators:
            iter_ = _renamed(gen.iter, renames)
            for t in syntax.name_nodes(gen.target):     # fenced: names, maybe in tuples
                renames[t.id] = self.loop_var(t.id)
            loops.append((_renamed(gen.target, renames), iter_,
                          [_renamed(c, renames) for c in gen.ifs]))
        element = _renamed(comp.elt, renames)
        if innermost is not None:
            inner = innermost(element)
        else:
            inner = [syntax.expr_stmt(syntax.call(syntax.attribute(items, "append"),
                                                [element]))]
        for var, iter_, ifs in reversed(loops):
            for test in reversed(ifs):
                inner = [syntax.if_(test, inner)]
            inner = [syntax.for_(var, iter_, inner)]
        out = [syntax.assign(items, gast.List(elts=[], ctx=gast.Load()))] + inner
        for block in syntax.blocks(out):
            for stmt in block:
                if not hasattr(stmt, "lineno"):
                    syntax.located(stmt, comp)
        return out

    def loop_var(self, var):
        """The name of a comprehension's loop variable in the loop that replaces it:
        its own, unless the function, a global it reads or another comprehension uses
        it."""
        if var in self.outside or var in self.comprehension_vars:
            var = self.namer.fresh(var)
        self.comprehension_vars.add(var)
        return var

    # -- jumps ------------------------------------------------------------------------
    def single_exit(self, body):
        self.ret_name = self.namer.fresh("y")
        if not body or not _always_exits(body[-1]):
            body = body + [syntax.ret(syntax.const(None))]
        body, _, _ = self.jumps(self.returns_to_jumps(body))
        body = _strip_return_jumps(body)
        if self.ret_flag:
            body.insert(0, syntax.assign(self.ret_flag, syntax.const(False)))
        return body + [syntax.ret(syntax.name(self.ret_name))]

    def returns_to_jumps(self, stmts):
        out = []
        for s in stmts:
            if isinstance(s, gast.Return):
                value = s.value if s.value is not None else syntax.const(None)
                out.append(syntax.located(syntax.assign(self.ret_name, value), s))
                out.append(syntax.located(_return_jump(), s))
                continue
            for field in ("body", "orelse"):
                if hasattr(s, field):
                    setattr(s, field, self.returns_to_jumps(getattr(s, field)))
            out.append(s)
        return out

    def jumps(self, stmts):
        """Normalise `stmts` so jumps end blocks. Returns (block, kinds that may escape
        it, whether every path through it jumps)."""
        out = []
        for i, s in enumerate(stmts):
            rest = stmts[i + 1:]
            if isinstance(s, gast.Raise):
                return out + [s], set(), True
            if isinstance(s, JUMPS) or _is_return_jump(s):
                out.append(s)
                return out, {_kind(s)}, True
            if isinstance(s, (gast.For, gast.While)):
                s.body, kinds, _ = self.jumps(s.body)
                if "return" in kinds:
                    flag = self.return_flag()
                    s.body = _replace_jumps(s.body, "return", lambda: [
                        syntax.assign(flag, syntax.const(True)), gast.Break()])
                    guard = syntax.located(syntax.if_(syntax.name(flag), [_return_jump()]), s)
                    block, kinds, always = self.jumps([guard] + rest)
                    return out + [s] + block, kinds, always
                out.append(s)
                continue
            if not isinstance(s, gast.If):
                out.append(s)
                continue
            s.body, k_body, a_body = self.jumps(s.body)
            s.orelse, k_else, a_else = self.jumps(s.orelse)
            if not k_body and not k_else:
                out.append(s)
            elif a_body and a_else:
                out.append(s)
                return out, k_body | k_else, True
            elif a_body:     # the rest runs only where the else branch falls through
                s.orelse, kinds, always = self.jumps(s.orelse + rest)
                return out + [s], k_body | kinds, always
            elif a_else:
                s.body, kinds, always = self.jumps(s.body + rest)
                return out + [s], k_else | kinds, always
            else:
                return self.flagged(out, s, k_body | k_else, rest)
        return out, set(), False

    def flagged(self, out, s, kinds, rest):
        """A jump hides inside a branch of `s`: set a flag there, jump after `s`."""
        guards = []
        for kind in sorted(kinds):
            flag = self.return_flag() if kind == "return" else self.namer.fresh(
                {"break": "broke", "continue": "skipped"}[kind])
            if kind != "return":
                out.append(syntax.located(syntax.assign(flag, syntax.const(False)), s))
            s.body = _replace_jumps(s.body, kind, lambda f=flag: [
                syntax.assign(f, syntax.const(True))])
            s.orelse = _replace_jumps(s.orelse, kind, lambda f=flag: [
                syntax.assign(f, syntax.const(True))])
            guards.append((flag, kind))
        out.append(s)
        chain = rest
        for flag, kind in reversed(guards):
            chain = [syntax.located(syntax.if_(syntax.name(flag), [_jump(kind)], chain), s)]
        block, more, always = self.jumps(chain)
        return out + block, more, always

    def return_flag(self):
        if self.ret_flag is None:
            self.ret_flag = self.namer.fresh("returned")
        return self.ret_flag


def _return_jump():
    node = gast.Return(value=None)
    node.s2s_jump = True
    return node


def _is_return_jump(s):
    return isinstance(s, gast.Return) and getattr(s, "s2s_jump", False)


def _kind(s):
    if isinstance(s, gast.Break):
        return "break"
    return "continue" if isinstance(s, gast.Continue) else "return"


def _jump(kind):
    return {"break": gast.Break, "continue": gast.Continue}.get(kind, _return_jump)()


def _replace_jumps(stmts, kind, make):
    """Replace the jumps of `kind` that escape `stmts` by `make()`."""
    out = []
    for s in stmts:
        if (isinstance(s, JUMPS) or _is_return_jump(s)) and _kind(s) == kind:
            out.extend(make())
            continue
        if isinstance(s, gast.If):
            s.body = _replace_jumps(s.body, kind, make)
            s.orelse = _replace_jumps(s.orelse, kind, make)
        elif isinstance(s, (gast.For, gast.While)) and kind == "return":
            s.body = _replace_jumps(s.body, kind, make)
        out.append(s)
    return out


def _strip_return_jumps(stmts):
    out = []
    for s in stmts:
        if _is_return_jump(s):
            continue
        for field in ("body", "orelse"):
            if hasattr(s, field) and isinstance(getattr(s, field), list):
                setattr(s, field, _strip_return_jumps(getattr(s, field)))
        if isinstance(s, gast.If) and not s.body:
            s.body = [gast.Pass()]
        out.append(s)
    return out


def _flag_breaks(stmts, flag):
    """Set `flag` before each break of this loop (not of loops nested in it)."""
    out = []
    for s in stmts:
        if isinstance(s, gast.Break):
            out.append(syntax.assign(flag, syntax.const(True)))
        elif isinstance(s, gast.If):
            s.body = _flag_breaks(s.body, flag)
            s.orelse = _flag_breaks(s.orelse, flag)
        out.append(s)
    return out


def _always_exits(s):
    if isinstance(s, (gast.Return, gast.Raise)):
        return True
    if isinstance(s, gast.If):
        return bool(s.body and s.orelse and _always_exits(s.body[-1])
                    and _always_exits(s.orelse[-1]))
    return False


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


def _flat_targets(target):
    if isinstance(target, (gast.Tuple, gast.List)):
        for elt in target.elts:
            yield from _flat_targets(elt)
    else:
        yield target


def _drop_docstring(body):
    return [s for s in body if not (isinstance(s, gast.Expr)
                                    and isinstance(s.value, gast.Constant))] or [gast.Pass()]


def _load(target):
    t = syntax.copied(target)
    for n in syntax.walk(t):
        if hasattr(n, "ctx"):
            n.ctx = gast.Load()
    return t


def _store(target):
    t = syntax.copied(target)
    t.ctx = gast.Store()
    for n in syntax.walk(t.value if isinstance(t, gast.Subscript) else t):
        if hasattr(n, "ctx") and n is not t:
            n.ctx = gast.Load()
    return t


# the callables that consume an iterable whole, so a list can stand for a generator
CONSUMERS = (sum, list, tuple, min, max, sorted, any, all)
COMPREHENSIONS = (gast.ListComp, gast.GeneratorExp, gast.SetComp, gast.DictComp)


class _Hoist(gast.NodeTransformer):
    """Replace the comprehensions of an expression by the lists that loops, appended
    to `prelude`, build; not inside the comprehensions (their loops do that)."""

    def __init__(self, desugar, prelude):
        self.desugar, self.prelude = desugar, prelude

    def visit_Call(self, node):
        consumer = self.desugar.src.resolve(node.func)
        if any(consumer is c for c in CONSUMERS):
            for a in node.args:
                if isinstance(a, gast.GeneratorExp):
                    a.s2s_consumed = True
        return self.generic_visit(node)

    def visit_ListComp(self, node):
        items = self.desugar.namer.fresh("items")
        self.prelude.extend(self.desugar.expand(node, items))
        return syntax.located(syntax.name(items), node)

    def visit_GeneratorExp(self, node):
        if not getattr(node, "s2s_consumed", False):
            raise self.desugar.src.syntax_error(
                node, "a generator expression is supported as the argument of sum, "
                      "list, tuple, min, max, sorted, any or all, and as a loop's "
                      "iterable; use a list comprehension [...] here")
        return self.visit_ListComp(node)

    def visit_IfExp(self, node):
        return self.conditional(node)

    def visit_BoolOp(self, node):
        return self.conditional(node)

    def conditional(self, node):
        inner = _comprehension_in(node)
        if inner is not None:
            raise self.desugar.src.syntax_error(
                inner, "a comprehension inside a conditional expression or and/or is not "
                       "supported; compute it on its own line first")
        return node


def _breaks(stmts):
    """Whether a `break` in `stmts` leaves the loop they are the body of."""
    for s in stmts:
        if isinstance(s, gast.Break):
            return True
        if isinstance(s, gast.If) and (_breaks(s.body) or _breaks(s.orelse)):
            return True
    return False


def _comprehension_in(expr):
    return next((n for n in syntax.walk(expr) if isinstance(n, COMPREHENSIONS)), None)


def _names_outside_comprehensions(fn):
    todo = [fn]
    while todo:
        n = todo.pop()
        if isinstance(n, gast.Name):
            yield n.id
        if not isinstance(n, COMPREHENSIONS):
            todo.extend(gast.iter_child_nodes(n))


def _renamed(expr, renames):
    """A copy of `expr` reading `renames[v]` for each name v, except where a
    comprehension inside binds v again."""
    expr = syntax.copied(expr)
    _rename(expr, renames)
    return expr


def _rename(node, renames):
    if not renames:
        return
    if isinstance(node, gast.Name):
        node.id = renames.get(node.id, node.id)
    elif isinstance(node, COMPREHENSIONS):
        inner = dict(renames)
        for gen in node.generators:
            _rename(gen.iter, inner)
            inner = {k: v for k, v in inner.items() if k not in syntax.names_stored(gen.target)}
            for test in gen.ifs:
                _rename(test, inner)
        for part in ("elt", "key", "value"):
            if hasattr(node, part):
                _rename(getattr(node, part), inner)
    else:
        for child in gast.iter_child_nodes(node):
            _rename(child, renames)
