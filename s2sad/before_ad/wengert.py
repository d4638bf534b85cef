"""Wengert form: one primitive operation per statement, straight-line code in SSA.

Takes desugared code and leaves a function where every statement is
`name = prim(atoms)` (atoms are names, constants and module-level references such as
`math.pi`), `if` tests on a name, and each name is assigned once on every path, except

- the join name of an `if`, assigned at the end of each branch, and
- the carried names of a loop, assigned at the loop's path ends ("phi copies", after a
  path-end marker) and read, inside the body, as their value on entry to the iteration.

Comparisons, boolean operators and `while` tests are not differentiable; they stay whole.
A name bound only on some paths is bound to None on the others, where a join or a loop
reads it (`x_1 = None` before a loop that binds it first, `ii = None` before a `for` that
may run no iteration when a join after it copies `ii`).

>>> from s2sad.before_ad.wengert import Wengert
>>> print(show(Wengert, '''
... def f(x):
...     t = (1 + x) / 2
...     for i in range(3):
...         t = (t + x / t) / 2
...     return t
... '''))
def f(x):
    t_1 = 1 + x
    t = t_1 / 2
    for i in range(3):
        t_2 = x / t
        t_3 = t + t_2
        t_4 = t_3 / 2
        # path end
        t = t_4
    return t
"""

import gast
import numpy as np

from .. import marks
from ..analysis import operations
from .. import syntax
from ..rules import layout, runtime, writes


def run(fn, ctx):
    """The pass; the analyses of the context (`ctx.ops`, ...) read its result."""
    ctx.wengert = Wengert(ctx.src, ctx.namer).run(fn)
    for name in {n.id for n in syntax.name_nodes(ctx.wengert)} & {
            "_s2s_added_at", "_s2s_multiplied_at", "_s2s_as_column"}:  # (np.add.at, np.c_)
        ctx.runtime(name.removeprefix("_s2s_"))
    return ctx.wengert


class Wengert:
    """See the module docstring."""

    def __init__(self, src, namer):
        self.src = src
        self.namer = namer
        self.read = set()
        self.defined = set()
        self.loops = []
        # {a for loop's variable that nothing bound before the loop: (the block, the
        # loop)}: a loop that runs no iteration leaves it unbound (see `bind_before`)
        self.unbound = {}

    def run(self, fn):
        for n in syntax.walk(fn):       # (np.add.at: an element write, before anything)
            for field in ("body", "orelse", "finalbody"):
                block = getattr(n, field, None)
                if isinstance(block, list):
                    block[:] = [self.accumulated(s) or s for s in block]
        params = [a.id for a in fn.args.args + fn.args.kwonlyargs + fn.args.posonlyargs]
        self.locals = set(params) | _assigned(fn.body)
        self.defined = set(params)
        env = {p: p for p in params}
        fn.body, _ = self.block(fn.body, env)
        if not isinstance(fn.body[-1], gast.Return):
            # every other path raises: the one return can stand last
            ret = _take_return(fn.body)
            if ret is not None:
                fn.body.append(ret)
        return fn

    # -- helpers ----------------------------------------------------------------------
    def version(self, var):
        if var not in self.defined:
            self.defined.add(var)
            self.namer.taken.add(var)
            return var
        return self.namer.fresh(var)

    def emit(self, out, stmt, origin):
        syntax.located(stmt, origin)
        self.read.update(syntax.names_loaded(stmt))
        if isinstance(stmt, gast.Assign) and _reads_result(stmt.value, self.src):
            # its adjoint reads the value it assigns: a loop must not overwrite that name
            self.read.add(stmt.targets[0].id)
        out.append(stmt)
        return stmt

    def rename(self, expr, env):
        expr = syntax.copied(expr)
        for n in syntax.name_nodes(expr):
            if isinstance(n.ctx, gast.Load) and n.id in env:
                n.id = env[n.id]
        return expr

    def is_global_ref(self, e):
        while isinstance(e, gast.Attribute):
            e = e.value
        return isinstance(e, gast.Name) and e.id not in self.locals

    # -- expressions ------------------------------------------------------------------
    def flatten(self, e, env, out, origin, into=None):
        """Emit statements computing `e`; return an atom holding its value."""
        if (isinstance(e, gast.UnaryOp) and isinstance(e.op, gast.USub)
                and isinstance(e.operand, gast.Constant)
                and type(e.operand.value) in (int, float)):
            e = syntax.const(-e.operand.value)
        if isinstance(e, (gast.Name, gast.Constant)) or self.is_global_ref(e):
            atom = self.rename(e, env)
            if into is None:
                return atom
            self.emit(out, syntax.assign(_named(into), atom), origin)
            return syntax.name(_named(into))
        if isinstance(e, gast.IfExp):
            cond = self.flatten(e.test, env, out, origin)
            target = _named(into) if into else self.namer.fresh("t")
            then, orelse = [], []
            self.flatten(e.body, env, then, origin, into=target)
            self.flatten(e.orelse, env, orelse, origin, into=target)
            self.emit(out, syntax.if_(cond, then, orelse), origin)
            return syntax.name(target)
        value = self.prim(e, env, out, origin)
        target = _named(into) if into else self.namer.fresh("t")
        marks.TEMPORARY.put(self.emit(out, syntax.assign(target, value), origin), into is None)
        return syntax.name(target)

    def prim(self, e, env, out, origin):
        """`e` as one primitive operation over atoms."""
        flat = lambda x: self.flatten(x, env, out, origin)  # noqa: E731
        if isinstance(e, gast.BinOp):
            return syntax.binop(flat(e.left), e.op, flat(e.right))
        if isinstance(e, gast.UnaryOp) and not isinstance(e.op, gast.Not):
            return syntax.unary(e.op, flat(e.operand))
        if isinstance(e, gast.Call):
            func = e.func
            if isinstance(func, gast.Attribute) and not self.is_global_ref(func):
                func = syntax.attribute(flat(func.value), func.attr)
            elif not isinstance(func, (gast.Name, gast.Attribute)):
                func = flat(func)       # `Model(w)(x)`, `layers[0](x)`: a value called
            else:
                func = self.rename(func, env)
            keywords = [gast.keyword(arg=k.arg, value=flat(k.value)) for k in e.keywords]
            return syntax.call(func, [flat(a) for a in e.args], keywords)
        if isinstance(e, gast.Attribute):
            return syntax.attribute(flat(e.value), e.attr)
        if isinstance(e, gast.Subscript):
            joined = self.concatenation(e)
            if joined is not None:
                return self.prim(joined, env, out, origin)
            return gast.Subscript(value=flat(e.value), slice=self.index(e.slice, env, out,
                                                                       origin),
                                  ctx=gast.Load())
        if isinstance(e, (gast.Tuple, gast.List)):
            return type(e)(elts=[flat(x) for x in e.elts], ctx=gast.Load())
        if isinstance(e, gast.Dict):        # (with constant keys: see before_ad.desugar)
            return gast.Dict(keys=e.keys, values=[flat(x) for x in e.values])
        return self.rename(e, env)

    def index(self, s, env, out, origin):
        if isinstance(s, gast.Slice):
            part = lambda x: None if x is None else self.flatten(x, env, out, origin)  # noqa
            return gast.Slice(lower=part(s.lower), upper=part(s.upper), step=part(s.step))
        if isinstance(s, gast.Tuple):
            return syntax.tuple_([self.index(x, env, out, origin) for x in s.elts])
        return self.flatten(s, env, out, origin)

    # -- statements -------------------------------------------------------------------
    def block(self, stmts, env, last_into=None):
        """Translate `stmts`; return (statements, tail): `tail` is the list where control
        falling off the end continues (inside the one branch of an `if` that does not
        jump), or None when every path jumps."""
        out = tail = []
        last = _last_assignments(stmts, last_into or {})
        for i, s in enumerate(stmts):
            if isinstance(s, gast.Assign):
                self.assign(s, env, tail, into=last.get(i))
            elif isinstance(s, gast.If):
                tail = self.if_(s, env, tail)
                if tail is None:
                    return out, None
            elif isinstance(s, (gast.For, gast.While)):
                self.loop(s, env, tail)
            elif isinstance(s, (gast.Break, gast.Continue)):
                self.path_end(tail, env, s)
                self.emit(tail, s, s)
                return out, None
            elif isinstance(s, gast.Return):
                value = s.value if s.value is not None else syntax.const(None)
                into = None if syntax.is_atom(value) else (
                    self.version("y") if "y" in self.locals else self.namer.fresh("y"))
                self.emit(tail, syntax.ret(self.flatten(value, env, tail, s, into=into)), s)
                return out, None
            elif isinstance(s, gast.Raise):
                self.emit(tail, self.rename(s, env), s)
                return out, None
            elif _appended(s):
                call = s.value
                v = self.flatten(call.args[0], env, tail, s)
                self.update(call.func.value.id, runtime.append, [v], env, tail, s)
            elif not isinstance(s, gast.Pass):
                self.emit(tail, self.rename(s, env), s)
        return out, tail

    def concatenation(self, e):
        """`np.concatenate([np.atleast_1d(a), ...])` for `np.r_[a, ...]` and
        `np.concatenate([_s2s_as_column(a), ...], axis=-1)` for `np.c_[a, ...]` of values
        (no slices or directives), where `np.r_` is read from a module; else None."""
        joiner = {"r_": "concatenate", "c_": "c_"}.get(getattr(e.value, "attr", ""))
        items = e.slice.elts if isinstance(e.slice, gast.Tuple) else [e.slice]
        if joiner is None or not isinstance(e.value.value, gast.Name) or any(
                isinstance(x, gast.Slice) or isinstance(getattr(x, "value", None), str)
                for x in items) or self.src.resolve(e.value) is not getattr(np, e.value.attr):
            return None
        module = e.value.value.id
        if joiner == "concatenate":
            items = [syntax.call(syntax.attribute(syntax.name(module), "atleast_1d"), [x])
                     for x in items]
            return syntax.call(syntax.attribute(syntax.name(module), joiner),
                               [gast.List(elts=items, ctx=gast.Load())])
        columns = []
        for x in items:
            columns.append(syntax.call("_s2s_as_column", [x]))
            marks.PRIM.put(columns[-1].func, layout.as_column)
        return syntax.call(syntax.attribute(syntax.name(module), "concatenate"),
                           [gast.List(elts=columns, ctx=gast.Load())],
                           [gast.keyword(arg="axis", value=syntax.const(-1))])

    def accumulated(self, s):
        """`a[...] = _s2s_added_at(a, index, v)` (`-v` for subtract, `_s2s_multiplied_at`
        for multiply) for the statement `np.add.at(a, index, v)`, `np.subtract.at(...)` or
        `np.multiply.at(...)` into a local array `a`, an element write of the whole array
        (what before_ad.aliasing and ad/inplace follow), or None for any other statement."""
        call = s.value if isinstance(s, gast.Expr) else None
        if not (isinstance(call, gast.Call) and isinstance(call.func, gast.Attribute)
                and call.func.attr == "at" and len(call.args) == 3 and not call.keywords
                and isinstance(call.args[0], gast.Name)):
            return None
        ufunc = self.src.resolve(call.func.value)
        if ufunc is not np.add and ufunc is not np.subtract and ufunc is not np.multiply:
            return None
        a, index, v = call.args
        if ufunc is np.subtract:
            v = gast.UnaryOp(op=gast.USub(), operand=v)
        helper = writes.multiplied_at if ufunc is np.multiply else writes.added_at
        added = syntax.call(f"_s2s_{helper.__name__}", [syntax.name(a.id), index, v])
        marks.PRIM.put(added.func, helper)
        whole = gast.Subscript(value=syntax.name(a.id), slice=syntax.const(Ellipsis),
                               ctx=gast.Store())
        return syntax.located(syntax.assign(whole, added), s)

    def assign(self, s, env, out, into=None):
        target, value = s.targets[0], s.value
        if isinstance(target, gast.Subscript):
            base = target.value.id
            index = self.index(target.slice, env, out, s)
            v = self.flatten(value, env, out, s)
            old = out[-1] if out and marks.AUGMENTED_ELEMENT.of(s) else None
            marks.INDEX.put(self.update(base, runtime.setitem, [operations.index_value(index), v],
                                        env, out, s), index)
            if (isinstance(old, gast.Assign) and syntax.is_name(v)
                    and syntax.is_name(old.targets[0], v.id)
                    and isinstance(old.value, gast.BinOp) and syntax.is_name(old.value.left)):
                # `a[i] += v`: the element it read (`t = a[i]`), which NumPy changes in
                # place when it is an array (before_ad.aliasing)
                marks.ELEMENT.put(out[-1], old.value.left.id)
            return
        if isinstance(target, gast.Name):
            new = syntax.is_atom(value) and (into or self.version(target.id))
            env[target.id] = self.flatten(value, env, out, s, into=new or _Deferred(
                lambda: into or self.version(target.id))).id
            if marks.AUGMENTED.of(s):
                marks.AUGMENTED.put(out[-1], marks.AUGMENTED.of(s))  # the last `x = x + t`
            return
        if isinstance(value, (gast.Tuple, gast.List)) and len(value.elts) == len(target.elts):
            pairs = list(zip(target.elts, value.elts))
        else:
            whole = self.flatten(value, env, out, s)
            pairs = [(t, gast.Subscript(value=whole, slice=syntax.const(i), ctx=gast.Load()))
                     for i, t in enumerate(target.elts)]
        bound = {}
        for t, v in pairs:
            if isinstance(t, gast.Name):
                bound[t.id] = self.version(t.id)
                self.flatten(v, env, out, s, into=bound[t.id])
            else:
                sub_env = dict(env)
                self.assign(syntax.located(syntax.assign(t, v), s), sub_env, out)
                bound.update({k: sub_env[k] for k in _assigned([syntax.assign(t, v)])})
        env.update(bound)

    def update(self, base, prim, args, env, out, origin):
        """`base = prim(base, *args)`: a mutation, as a new SSA version of `base`."""
        call = syntax.call("_s2s_" + prim.__name__, [syntax.name(env.get(base, base))] + args)
        marks.PRIM.put(call.func, prim)
        new = self.version(base)
        self.emit(out, syntax.assign(new, call), origin)
        env[base] = new
        return call

    def if_(self, s, env, out):
        cond = self.flatten(s.test, env, out, s)
        # the test is read before the branches run: a loop in a branch must not keep
        # changing the name it reads (its value is recorded at the end of an iteration)
        self.read.update(n.id for n in syntax.walk(cond) if isinstance(n, gast.Name))
        assigned = sorted(_assigned(s.body) | _assigned(s.orelse))
        joins = {v: self.version(v) for v in assigned}
        branches = []
        for stmts in (s.body, s.orelse):
            benv = dict(env)
            block, tail = self.block(stmts, benv, joins)
            branches.append((block, benv, tail))
        live = [b for b in branches if b[2] is not None]
        if len(live) == 2:
            for block, benv, tail in live:
                for v, j in joins.items():
                    if v not in benv and any(v in b[1] for b in live):
                        # bound on the other branch only: the join must not fail here
                        init = self.emit(tail, syntax.assign(j, syntax.const(None)), s)
                        marks.INIT.put(init, True)
                    elif v in benv and benv[v] != j:
                        # rename only a name the branch binds first (not one that also
                        # holds the value from before the branch, like a carried name)
                        if benv[v] != env.get(v) and _coalesce(block, benv[v], j):
                            if benv[v] in self.unbound:     # (the loop's variable is j now)
                                self.unbound[j] = self.unbound.pop(benv[v])
                        else:
                            self.bind_before(benv[v])
                            self.emit(tail, syntax.assign(j, syntax.name(benv[v])), s)
        self.emit(out, syntax.if_(cond, branches[0][0], branches[1][0]), s)
        if len(live) == 1:
            env.update(live[0][1])
            # after an arm that raises, what follows goes on after the `if` (no `else`
            # to hold it: a loop's copies then end its body, as on a path with no raise)
            dead = branches[0] if live[0] is branches[1] else branches[1]
            return out if syntax.always_raises(dead[0]) else live[0][2]
        if live:
            env.update({v: j for v, j in joins.items() if any(v in b[1] for b in live)})
            return out
        return None

    def loop(self, s, env, out):
        is_for = isinstance(s, gast.For)
        iter_ = self.iterable(s.iter, env, out, s) if is_for else None
        target = s.target.id if is_for else None
        carried = {}
        for v in sorted(_assigned(s.body) - {target}):
            p = env.get(v)
            if p is None:
                # first bound inside the loop: the copies that carry it must not fail
                # on the paths that have not bound it yet
                carried[v] = self.version(v)
                init = self.emit(out, syntax.assign(carried[v], syntax.const(None)), s)
                marks.INIT.put(init, True)
            elif p not in self.read:
                carried[v] = p
            else:
                carried[v] = self.namer.fresh(v)
                self.emit(out, syntax.assign(carried[v], syntax.name(p)), s)
        benv = dict(env)
        benv.update(carried)
        target_init = None
        if is_for:
            benv[target] = variable = self.version(target)
            if env.get(target) is not None:
                # a loop that runs no iteration leaves its variable's old value
                target_init = self.emit(
                    out, syntax.assign(benv[target], syntax.name(env[target])), s)
                marks.INIT.put(target_init, True)
        test = None if is_for else self.rename(s.test, benv)
        self.loops.append(carried)
        body, tail = self.block(s.body, benv)
        if tail is not None:
            self.path_end(tail, benv, s)
        self.loops.pop()
        if is_for:
            node = syntax.for_(variable, iter_, body)    # the body may write a version
            if target_init is not None:
                marks.LOOP.put(target_init, node)      # only reads after the loop need it
        else:
            node = syntax.while_(test, body)
        self.emit(out, node, s)
        env.update(carried)
        if is_for:
            env[target] = benv[target]
            if target_init is None:
                self.unbound[variable] = (out, node)

    def bind_before(self, name):
        """Bind `name`, the variable of a loop that nothing bound before it, to None
        before that loop, where a join copies it (`ii_1 = ii` after a branch that loops
        over `ii` again): the loop may run no iteration, and the user's code never read
        the name on that path, so the copy must not fail."""
        if name not in self.unbound:
            return
        out, loop = self.unbound.pop(name)
        init = syntax.located(syntax.assign(name, syntax.const(None)), loop)
        marks.INIT.put(init, True)
        marks.LOOP.put(init, loop)      # only reads after the loop need it
        out.insert(next(i for i, s in enumerate(out) if s is loop), init)

    def iterable(self, e, env, out, origin):
        if isinstance(e, gast.Call):
            return syntax.call(self.rename(e.func, env),
                              [self.flatten(a, env, out, origin) for a in e.args])
        return self.flatten(e, env, out, origin)

    def path_end(self, out, env, origin):
        out.append(syntax.located(syntax.marker("path_end"), origin))
        for v, c in self.loops[-1].items():
            if v in env and env[v] != c:
                copy_ = self.emit(out, syntax.assign(c, syntax.name(env[v])), origin)
                marks.PHI.put(copy_, True)


class _Deferred:
    """A target name chosen only when it is needed, so names number in order."""

    def __init__(self, make):
        self.make = make
        self.value = None


def _named(into):
    if isinstance(into, _Deferred):
        into.value = into.value or into.make()
        return into.value
    return into


def _assigned(stmts):
    """User variables assigned (or mutated) anywhere in `stmts`."""
    out = set()
    for s in stmts:
        out.update(n.id for n in syntax.name_nodes(s) if isinstance(n.ctx, gast.Store))
        for n in syntax.statements(s):
            if isinstance(n, gast.Assign) and isinstance(n.targets[0], gast.Subscript):
                out.add(n.targets[0].value.id)
            elif _appended(n):
                out.add(n.value.func.value.id)
    return out


def _appended(s):
    """Whether `s` is `name.append(value)`."""
    return (isinstance(s, gast.Expr) and isinstance(s.value, gast.Call)
            and isinstance(s.value.func, gast.Attribute) and s.value.func.attr == "append"
            and isinstance(s.value.func.value, gast.Name) and len(s.value.args) == 1
            and not s.value.keywords)


def _last_assignments(stmts, joins):
    """{index: join name} for the last top-level plain assignment of each joined var
    in `stmts` that no later statement of `stmts` assigns again."""
    out, seen = {}, set()
    for i in range(len(stmts) - 1, -1, -1):
        s = stmts[i]
        if (isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name)
                and s.targets[0].id in joins and s.targets[0].id not in seen):
            out[i] = joins[s.targets[0].id]
        seen |= _assigned([s])
    return out


def _reads_result(value, src):
    """Whether the derivative rule of `value` reads its result (`ans`)."""
    if not isinstance(value, (gast.Call, gast.BinOp, gast.UnaryOp)):
        return False
    variant = operations.classify(value, src).variant
    if variant is None:
        return False
    found = _READS_ANS.get(id(variant))
    if found is None or found[0] is not variant:
        found = _READS_ANS[id(variant)] = (variant, any(
            n.id == "ans" for t in variant.templates.values() for n in syntax.name_nodes(t.tree)))
    return found[1]


#: {id(rule variant): (the variant, whether its templates read `ans`)}: its templates are
#: looked at once, not at each statement (the variant is kept, so its id stays its own)
_READS_ANS = {}


def _take_return(stmts):
    for s in stmts:
        for field in ("body", "orelse"):
            inner = getattr(s, field, None)
            if isinstance(inner, list) and inner:
                if isinstance(inner[-1], gast.Return):
                    return inner.pop()
                found = _take_return(inner)
                if found is not None:
                    return found
    return None


def _coalesce(block, old, new):
    """Rename `old` to `new` throughout `block` if `block` defines `old`; say if done."""
    if old not in _assigned(block):
        return False
    for s in block:
        for n in syntax.name_nodes(s):
            if n.id == old:
                n.id = new
    return True
