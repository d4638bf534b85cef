"""Desugar: rewrite syntactic sugar into a smaller language.

Takes a fenced and lifted function and leaves one where

- a list comprehension or generator expression is a loop that appends to a new list,
  before the statement that uses it (a generator expression only where it is consumed
  whole: as the argument of `sum`, `list`, `tuple`, `min`, `max`, ... or a loop's
  iterable),
- augmented and annotated assignments are plain assignments (`x += y` is `x = x + y`),
- an assignment expression `(n := e)` is an assignment `n = e` before the statement, in
  an `if` where Python evaluates it only on some paths (`a and (n := e)`), and again at
  the end of a `while` loop's body when it is in the loop's test,
- an `a or b` (`a and b`) whose value, not only its truth, is read is `t = a` and
  `if not t: t = b` (`if t:`) before the statement, which reads `t`: the operand that
  is the value carries the derivative, and `b` is evaluated only where Python evaluates
  it (`scale = scale or 1.0` is `if not scale: scale = 1.0`),
- `del name` and `global` (of names the function only reads) are gone, a `with` block
  is its body, and a `try` statement the path on which nothing raises: its body, `else`
  and `finally` (after_ad.enclose puts the blocks back around the derivative's code),
- an assignment has one target (`a = b = e` is `a = e; b = a`),
- a `for` over a tuple or list display is unrolled (without `break` or `continue` in
  it), and any other `for` but one over `range` is a loop over indexes that binds its
  target first (`for i, (w, b) in enumerate(zip(ws, bs))`, `for k, v in d.items()`,
  `for row in X`; see before_ad.iteration),
- `for ... else` and `while ... else` use a flag,
- `break`, `continue`, `raise` and the jumps of early returns stand only at the end of a
  block, with the statements after them moved into the other branch (or guarded by a
  flag when a jump hides inside a branch), and the function has one `return`, last,
- a parameter whose default object (a list, dict or array) the function changes in
  place works, when the call leaves it at its default, on a copy, whose contents the
  default gets before the `return` (see before_ad.defaults).

>>> from s2sad.before_ad.desugar import Desugar
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

import gast

from .. import marks
from .. import syntax
from ..frontend import source
from . import checkpointed_loops, defaults, gradient_calls
from .attribute_writes import attribute_write, in_place, rebinding
from .dicts import Dicts, is_dict_node
from .iteration import Iteration

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
        self.fn = fn
        self.deletions(fn.body, {})
        gradient_calls.run(fn, self.ctx)
        changed = defaults.changed(fn, self.src)
        lifted, dicts = [], False
        for n in syntax.walk(fn):
            if isinstance(n, (gast.NamedExpr, gast.BoolOp)):
                lifted.append(n)
            elif not dicts and is_dict_node(n):
                dicts = True
        walruses = [n for n in lifted if isinstance(n, gast.NamedExpr)]
        self.lifts = bool(lifted)       # (else no statement is searched for one)
        self.outside = (set(_names_outside_comprehensions(fn)) | set(self.src.free_values())
                        | {n.target.id for n in walruses})
        self.comprehension_vars = set()
        # forward mode reads generated code's loops over tapes as they are
        self.generated = source.is_generated(self.src) and self.ctx.variant.forward
        self.iteration = Iteration(self.ctx, fn)
        self.dicts = Dicts(self.ctx, fn, dicts)
        body = [s for stmt in fn.body for s in self.stmt(stmt)]
        body = _drop_docstring(body)
        returns = [n for s in body for n in syntax.walk(s) if isinstance(n, gast.Return)]
        if not (len(returns) == 1 and body and body[-1] is returns[0]):
            body = self.single_exit(body)
        else:
            body, _, _ = self.jumps(body)
        fn.body = body
        if changed:
            defaults.keep(fn, changed, self.ctx)
        return fn

    # -- sugar ------------------------------------------------------------------------
    def stmt(self, s):
        if isinstance(s, (gast.Delete, gast.Global)):
            return []       # see `deletions`; the fence let only reads of globals through
        if isinstance(s, gast.With):
            return self.block(s.body)       # after_ad.enclose puts the context back
        if isinstance(s, gast.Try):
            # the path on which nothing raises; after_ad.enclose reports the others
            return self.block(s.body + s.orelse + s.finalbody)
        if self.lifts and _lifted_in(s):
            return self.lifted(s)
        return self.sugar(s)

    def sugar(self, s):
        rebound = rebinding(s, self.ctx)      # (`p.step(dt)` changing p: see the module)
        if rebound is not None:
            return rebound
        self.rewrite_dicts(s)
        prelude, s = self.comprehensions(s)
        if prelude:
            return self.block(prelude) + (self.stmt(s) if s is not None else [])
        if isinstance(s, gast.AugAssign):
            # (`d[k] += v` on an array changes it in place, which before_ad.aliasing
            # follows through the element write it stays)
            return [attribute_write(a, self.ctx) for a in in_place(s, self.ctx, _augmented)]
        s = attribute_write(s, self.ctx)
        written = self.dicts.element_write(s)
        if written is not None:
            return [written]
        if isinstance(s, gast.AnnAssign):
            return [syntax.located(syntax.assign(s.target, s.value), s)]
        if isinstance(s, gast.Assign) and len(s.targets) > 1:
            first = syntax.located(syntax.assign(s.targets[0], s.value), s)
            rest = [syntax.located(syntax.assign(t, syntax.loaded(s.targets[0])), s)
                    for t in s.targets[1:]]
            return [first] + rest
        if isinstance(s, gast.If):
            s.body = self.block(s.body)
            s.orelse = self.block(s.orelse)
        elif isinstance(s, (gast.For, gast.While)):
            s.body = self.block(s.body)
            s.orelse = self.block(s.orelse)
            jumps = any(isinstance(n, JUMPS) for b in s.body for n in syntax.walk(b))
            items = (self.iteration.unrolled_items(s, self.fn)
                     if isinstance(s, gast.For) and not jumps else None)
            if items is not None:
                s.iter = items
            if isinstance(s, gast.For) and isinstance(s.iter, (gast.Tuple, gast.List)) and (
                    not jumps):
                return self.unroll(s)
            prelude = []
            if (isinstance(s, gast.For) and not self.generated
                    and not self.iteration.is_range(s.iter)
                    and not checkpointed_loops.is_checkpointed(s.iter, self.src)):
                prelude, s = self.iteration.indexed(s)
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
            out.append(syntax.located(syntax.assign(syntax.as_store(loop.target), syntax.copied(elt)),
                                      loop))
            out.extend(syntax.copied(loop.body))
        return out + loop.orelse

    def loop_else(self, loop):
        flag = self.namer.fresh("broke")
        loop.body = _flag_breaks(loop.body, flag)
        orelse, loop.orelse = loop.orelse, []
        init = syntax.located(syntax.assign(flag, syntax.const(False)), loop)
        guard = syntax.located(syntax.if_(syntax.not_(syntax.name(flag)), orelse), loop)
        return [init, loop, guard]

    def rewrite_dicts(self, s):
        """`s`'s own expressions with their dicts rewritten (see before_ad.dicts)."""
        if not self.dicts.active:
            return
        for field, value in gast.iter_fields(s):
            if field in ("body", "orelse"):
                continue
            for i, v in enumerate(value if isinstance(value, list) else [value]):
                if isinstance(v, gast.AST) and self.dicts.needed(v):
                    new = self.dicts.visit(v)
                    if isinstance(value, list):
                        value[i] = new
                    else:
                        setattr(s, field, new)

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
            marks.CONSUMED.put(s.iter, True)
        prelude = []
        own = [(field, value) for field, value in gast.iter_fields(s)
               if field not in ("body", "orelse")]
        if not any(_comprehension_in(v) for _, value in own
                   for v in (value if isinstance(value, list) else [value])
                   if isinstance(v, gast.AST)):
            return prelude, s       # (what the hoisting visit would leave as it is)
        hoist = _Hoist(self, prelude)
        for field, value in own:
            if isinstance(value, list):
                setattr(s, field, [hoist.visit(v) for v in value])
            elif isinstance(value, gast.AST):
                setattr(s, field, hoist.visit(value))
        return prelude, s

    def merged(self, loop):
        """`for v in (e for k in it)`, its body run as the generator yields: `for k in
        it: v = e` followed by the body."""
        [outer] = self.expand(loop.iter, "items", lambda element: [
            syntax.located(syntax.assign(syntax.as_store(loop.target), element), loop)] + loop.body)[1:]
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

    def dict_comprehension(self, comp, keys, values):
        """`keys = []`, `values = []` and the loops of the dict comprehension `comp`
        appending its keys and values to them."""
        pairs = syntax.located(gast.ListComp(elt=syntax.tuple_([comp.key, comp.value]),
                                             generators=comp.generators), comp)

        def appended(pair):
            return [syntax.expr_stmt(syntax.call(syntax.attribute(name, "append"), [e]))
                    for name, e in zip((keys, values), pair.elts)]
        out = self.expand(pairs, keys, appended)
        return out[:1] + [syntax.located(syntax.assign(values, gast.List(
            elts=[], ctx=gast.Load())), comp)] + out[1:]

    def loop_var(self, var):
        """The name of a comprehension's loop variable in the loop that replaces it:
        its own, unless the function, a global it reads or another comprehension uses
        it."""
        if var in self.outside or var in self.comprehension_vars:
            var = self.namer.fresh(var)
        self.comprehension_vars.add(var)
        return var

    # -- assignment expressions, and/or values ----------------------------------------
    def lifted(self, s):
        """`s` after the assignments its `:=` expressions make, and the `if` statements
        its `and`/`or` values are (see `_Lift`), each where Python evaluates it; a
        `while` test's again at the end of the body and before each `continue`."""
        if isinstance(s, gast.AugAssign):
            s = _augmented(s)
        fields = {gast.Assign: ["value"], gast.AnnAssign: ["value"], gast.Return: ["value"],
                  gast.Expr: ["value"], gast.If: ["test"], gast.For: ["iter"],
                  gast.While: ["test"], gast.Raise: ["exc", "cause"]}.get(type(s))
        stored = [getattr(s, f) for f in ("targets", "target") if hasattr(s, f)]
        if fields is None or _walrus_in(stored):
            if not _walrus_in(s):
                return self.sugar(s)    # an and/or value in a target or an assert: as it is
            raise self.src.syntax_error(s, "an assignment expression (:=) is not supported "
                                           "here; assign the value on a line of its own first")
        lifter = _Lift(self, s)
        if _assigns_or(s):      # `y = a or b`: `y = a` and `if not y: y = b`
            lifter.bool_op(s.value, into=s.targets[0].id)
            return self.block(lifter.out)
        for field in fields:
            setattr(s, field, lifter.lift(getattr(s, field), tested=field == "test"))
        if isinstance(s, gast.While) and lifter.out:
            again = lambda: syntax.copied(lifter.out)   # noqa: E731
            s.body = _before_continues(s.body, again) + again()
        return self.block(lifter.out) + self.sugar(s)

    # -- del ----------------------------------------------------------------------------
    def deletions(self, stmts, gone):
        """Refuse a read of a name a `del` may have unbound (Python raises NameError
        there; the derivative, which drops `del name`, would read the old value). `gone`:
        {name: its `del`} on entry; returns the same after `stmts`."""
        for s in stmts:
            if isinstance(s, gast.Delete):
                self.reads_deleted(s, gone)
                gone = {**gone, **{t.id: s for t in s.targets}}
            elif isinstance(s, gast.If):
                self.reads_deleted(s.test, gone)
                gone = {**self.deletions(s.body, gone), **self.deletions(s.orelse, gone)}
            elif isinstance(s, (gast.For, gast.While)):
                head = s.iter if isinstance(s, gast.For) else s.test
                bound = syntax.names_stored(s.target) if isinstance(s, gast.For) else set()
                after = dict(gone)
                for _ in range(2):      # the second iteration starts where the first ends
                    self.reads_deleted(head, after)
                    after = {**after, **self.deletions(s.body, _without(after, bound))}
                gone = self.deletions(s.orelse, after)
            elif isinstance(s, gast.With):
                for item in s.items:
                    self.reads_deleted(item, gone)
                gone = self.deletions(s.body, gone)
            elif isinstance(s, gast.Try):
                body = self.deletions(s.body, gone)
                ends = [self.deletions(s.orelse, body)]
                for handler in s.handlers:
                    ends.append(self.deletions(handler.body, {**gone, **body}))
                gone = self.deletions(s.finalbody, {k: v for e in ends for k, v in e.items()})
            else:
                self.reads_deleted(s, gone)
                gone = _without(gone, syntax.names_stored(s))
        return gone

    def reads_deleted(self, node, gone):
        if not gone:
            return
        for n in syntax.name_nodes(node):
            if isinstance(n.ctx, gast.Load) and n.id in gone:
                raise self.src.syntax_error(n, (
                    f"{n.id!r} is read here after 'del {n.id}' at line "
                    f"{self.src.lineno(gone[n.id])}, where Python raises NameError; assign "
                    f"{n.id} again before this read, or remove the 'del'"))

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


def _augmented(s):
    """`x += y` as `x = x + y`."""
    value = gast.BinOp(left=syntax.loaded(s.target), op=s.op, right=s.value)
    plain = syntax.located(syntax.assign(syntax.as_store(s.target), value), s)
    # NumPy does `x += y` in place on an array, and `a[i] += y` on the element when it is
    # an array (of a list): before_ad.aliasing needs to know
    marks.AUGMENTED.put(plain, isinstance(s.target, gast.Name))
    marks.AUGMENTED_ELEMENT.put(plain, isinstance(s.target, gast.Subscript))
    return plain


def _without(gone, names):
    return {k: v for k, v in gone.items() if k not in names}


def _walrus_in(node):
    """Whether `node` (a statement: its own expressions, not its body) holds a `:=`."""
    if isinstance(node, list):
        return any(_walrus_in(n) for n in node)
    if isinstance(node, gast.stmt):
        return any(_walrus_in(v) for f, v in gast.iter_fields(node)
                   if f not in ("body", "orelse", "handlers", "finalbody")
                   and isinstance(v, (gast.AST, list)))
    return any(isinstance(n, gast.NamedExpr) for n in _walked(node))


def _lifted_in(s):
    """Whether statement `s`'s own expressions hold what `_Lift` takes out of them."""
    return any(_lifted(v, tested=f == "test") for f, v in gast.iter_fields(s)
               if f not in ("body", "orelse", "handlers", "finalbody")
               and isinstance(v, (gast.AST, list)))


def _lifted(e, tested=False):
    """Whether expression `e` (or list) holds a `:=`, or an `and`/`or` whose value, not
    only its truth, may carry a derivative: one outside a test (of an `if`, a `while`, a
    conditional expression), a `not` and a comparison, unless a `:=` there binds it, and
    that is not a bool (of comparisons and `not` alone)."""
    if isinstance(e, list):
        return any(_lifted(v, tested) for v in e)
    if isinstance(e, gast.NamedExpr):
        return True
    if isinstance(e, gast.BoolOp) and not tested and not _boolean(e):
        return True
    if isinstance(e, COMPREHENSIONS + (gast.Lambda,)):
        return _walrus_in(e)    # (a comprehension's and/or: in the loops that replace it)
    return any(_lifted(child, tested or _tests(e, child)) for child in syntax.children(e))


def _assigns_or(s):
    """Whether `s` assigns an `and`/`or` value to a name its other operands than the
    first do not read or bind."""
    if not (isinstance(s, gast.Assign) and len(s.targets) == 1
            and isinstance(s.targets[0], gast.Name) and isinstance(s.value, gast.BoolOp)
            and _lifted(s.value)):
        return False
    target = s.targets[0].id
    return not any(isinstance(n, gast.Name) and n.id == target
                   for v in s.value.values[1:] for n in _walked(v))


def _tests(e, child):
    """Whether expression `e` reads only the truth of operand `child`, or compares it."""
    return (isinstance(e, gast.Compare) or (isinstance(e, gast.IfExp) and child is e.test)
            or (isinstance(e, gast.UnaryOp) and isinstance(e.op, gast.Not)))


def _boolean(e):
    """Whether `e` is surely a bool: a comparison, a `not`, a bool constant, or `and`/`or`
    of them."""
    if isinstance(e, gast.BoolOp):
        return all(_boolean(v) for v in e.values)
    return (isinstance(e, gast.Compare) or (isinstance(e, gast.UnaryOp)
                                            and isinstance(e.op, gast.Not))
            or (isinstance(e, gast.Constant) and isinstance(e.value, bool)))


def _walked(node):
    """The nodes of expression `node`, not those of the lambdas in it (their `:=` bind
    their own names)."""
    todo = [node]
    while todo:
        n = todo.pop()
        yield n
        if not isinstance(n, gast.Lambda):
            todo.extend(syntax.children(n))


def _before_continues(stmts, make):
    """`stmts` with `make()` before each `continue` of the loop they are the body of."""
    out = []
    for s in stmts:
        if isinstance(s, gast.Continue):
            out.extend(syntax.located(c, s) for c in make())
        elif isinstance(s, (gast.If, gast.With, gast.Try)):
            for field in ("body", "orelse", "finalbody"):
                if hasattr(s, field):
                    setattr(s, field, _before_continues(getattr(s, field), make))
            for handler in getattr(s, "handlers", []):
                handler.body = _before_continues(handler.body, make)
        out.append(s)
    return out


class _Lift:
    """Take the `:=` and the `and`/`or` values (see `_lifted`) out of an expression.
    Each `(n := e)` becomes `n = e` in `out`, before the statement, and reads `n`. An
    `a or b` value becomes `t = a` and `if not t: t = b` (`if t:` for `and`), and reads
    `t`: `b` is evaluated only where Python evaluates it, and `a` once; a chain's next
    operand nests in the `if`. What Python evaluates before it stays before it: an
    operand with a call, or that reads a name a later `:=` binds, is held in a temporary
    first. A `:=` that Python evaluates only on some paths (in the right operand of
    `and`/`or`, a branch of a conditional expression) is assigned in an `if` on the same
    condition. `tested`: only the truth of the expression is read."""

    def __init__(self, desugar, origin):
        self.desugar, self.origin, self.out = desugar, origin, []

    def emit(self, stmt):
        self.out.append(syntax.located(stmt, self.origin))

    def temporary(self, value):
        t = self.desugar.namer.fresh("t")
        self.emit(syntax.assign(t, value))
        return syntax.name(t)

    def lift(self, e, tested=False):
        if e is None or not _lifted(e, tested):
            return e
        if isinstance(e, gast.NamedExpr):
            value = self.lift(e.value)
            self.emit(syntax.assign(e.target.id, value))
            return syntax.located(syntax.name(e.target.id), e)
        if isinstance(e, gast.BoolOp):
            return self.tested_bool_op(e) if tested else self.bool_op(e)
        if isinstance(e, gast.IfExp):
            return self.if_exp(e, tested)
        if isinstance(e, COMPREHENSIONS):
            return e        # its loops assign in their own statements (see `expand`)
        if isinstance(e, gast.Compare) and _walrus_in(e.comparators[1:]):
            raise self.desugar.src.syntax_error(
                e, "an assignment expression (:=) after the first comparison of a chained "
                   "comparison is not supported; split it with and: a < (b := e) and b < c")
        slots = _operands(e)
        tests = [tested or _tests(e, child) for child, _ in slots]
        last = max(k for k, (child, _) in enumerate(slots) if _lifted(child, tests[k]))
        for k, (child, put) in enumerate(slots):
            if k < last:
                later = {n.target.id for c, _ in slots[k + 1:] for n in _walked(c)
                         if isinstance(n, gast.NamedExpr)}
                child = self.held(self.lift(child, tests[k]), later)
            elif k == last:
                child = self.lift(child, tests[k])
            put(child)
        return e

    def held(self, e, later):
        """`e`, or a temporary holding its value now if computing it later could give
        another value (it calls a function, or reads a name bound in `later`)."""
        if isinstance(e, (gast.Starred, gast.Slice)):      # not values of their own
            for child, put in _operands(e):
                put(self.held(child, later))
            return e
        if any(isinstance(n, (gast.Call, gast.NamedExpr) + COMPREHENSIONS)
               or (isinstance(n, gast.Name) and n.id in later) for n in _walked(e)):
            return self.temporary(e)
        return e

    def bool_op(self, e, into=None):
        """`t` (or `into`), the value of `e`, computed in `out`."""
        first = self.lift(e.values[0])
        if into is None and isinstance(e.values[0], gast.BoolOp) and syntax.is_name(first):
            t = first       # (the temporary of `a and b` in `a and b or c`)
        elif into is None:
            t = self.temporary(first)
        else:
            t = syntax.name(into)
            if not syntax.is_name(first, into):
                self.emit(syntax.assign(into, first))
        out = self.out
        for operand in e.values[1:]:
            inner = _Lift(self.desugar, self.origin)
            inner.emit(syntax.assign(t.id, inner.lift(operand)))
            test = syntax.name(t.id)
            out.append(syntax.located(syntax.if_(
                test if isinstance(e.op, gast.And) else syntax.not_(test), inner.out),
                self.origin))
            out = inner.out
        return syntax.name(t.id)

    def tested_bool_op(self, e):
        """`e` whose truth is the same, its `:=` in `out`."""
        first = next(k for k, v in enumerate(e.values) if _walrus_in(v))
        if first == 0 and not _walrus_in(e.values[1:]):
            e.values[0] = self.lift(e.values[0], tested=True)
            return e
        first = max(first, 1)
        head = e.values[0] if first == 1 else gast.BoolOp(op=e.op, values=e.values[:first])
        t = self.temporary(self.lift(head, tested=True))
        for operand in e.values[first:]:
            inner = _Lift(self.desugar, self.origin)
            value = inner.lift(operand, tested=True)
            inner.emit(syntax.assign(t.id, value))
            test = syntax.name(t.id)
            self.emit(syntax.if_(test if isinstance(e.op, gast.And) else syntax.not_(test),
                                 inner.out))
        return syntax.name(t.id)

    def if_exp(self, e, tested):
        test = self.lift(e.test, tested=True)
        if not _lifted([e.body, e.orelse], tested):
            e.test = test
            return e
        t = self.desugar.namer.fresh("t")
        branches = []
        for branch in (e.body, e.orelse):
            inner = _Lift(self.desugar, self.origin)
            inner.emit(syntax.assign(t, inner.lift(branch, tested)))
            branches.append(inner.out)
        self.emit(syntax.if_(test, *branches))
        return syntax.name(t)


def _operands(e):
    """[(child, setter)] of expression `e`'s operands, in the order Python evaluates them."""
    slots = []
    for field, value in gast.iter_fields(e):
        if isinstance(value, list):
            for k, v in enumerate(value):
                if isinstance(v, gast.keyword):
                    slots.append((v.value, lambda new, v=v: setattr(v, "value", new)))
                elif isinstance(v, (gast.expr, gast.Slice)):
                    slots.append((v, lambda new, value=value, k=k: value.__setitem__(k, new)))
        elif isinstance(value, (gast.expr, gast.Slice)):
            slots.append((value, lambda new, field=field: setattr(e, field, new)))
    if isinstance(e, gast.Dict):      # keys and values alternate
        half = len(slots) // 2
        slots = [s for pair in zip(slots[:half], slots[half:]) for s in pair]
    return slots


def _return_jump():
    node = gast.Return(value=None)
    marks.JUMP.put(node, True)
    return node


def _is_return_jump(s):
    return isinstance(s, gast.Return) and marks.JUMP.of(s)


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


def _drop_docstring(body):
    return [s for s in body if not (isinstance(s, gast.Expr)
                                    and isinstance(s.value, gast.Constant))] or [gast.Pass()]


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
                    marks.CONSUMED.put(a, True)
        return self.generic_visit(node)

    def visit_ListComp(self, node):
        items = self.desugar.namer.fresh("items")
        self.prelude.extend(self.desugar.expand(node, items))
        return syntax.located(syntax.name(items), node)

    def visit_DictComp(self, node):
        keys, values = self.desugar.namer.fresh("keys"), self.desugar.namer.fresh("values")
        self.prelude.extend(self.desugar.dict_comprehension(node, keys, values))
        return self.desugar.dicts.dict_of(syntax.name(keys), syntax.name(values), node)

    def visit_GeneratorExp(self, node):
        if not marks.CONSUMED.of(node):
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
            todo.extend(syntax.children(n))


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
