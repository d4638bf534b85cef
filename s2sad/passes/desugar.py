"""Desugar: rewrite syntactic sugar into a smaller language.

Takes a fenced function and leaves one where

- augmented and annotated assignments are plain assignments (`x += y` is `x = x + y`),
- an assignment has one target (`a = b = e` is `a = e; b = a`),
- a `for` over a tuple or list display is unrolled,
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
...     return x
... '''))
def f(x):
    if x > 0:
        y = x
    else:
        x = x * 2
        y = x
    return y
"""
import copy

import gast

from ..codegen import nodes

JUMPS = (gast.Break, gast.Continue)


class Desugar:
    """See the module docstring."""

    def __init__(self, src, namer):
        self.src = src
        self.namer = namer
        self.ret_name = None
        self.ret_flag = None

    def run(self, fn):
        body = [s for stmt in fn.body for s in self.stmt(stmt)]
        body = _drop_docstring(body)
        returns = [n for s in body for n in gast.walk(s) if isinstance(n, gast.Return)]
        if not (len(returns) == 1 and body and body[-1] is returns[0]):
            body = self.single_exit(body)
        else:
            body, _, _ = self.jumps(body)
        fn.body = body
        return fn

    # -- sugar ------------------------------------------------------------------------
    def stmt(self, s):
        if isinstance(s, gast.AugAssign):
            value = gast.BinOp(left=_load(s.target), op=s.op, right=s.value)
            return [nodes.located(nodes.assign(_store(s.target), value), s)]
        if isinstance(s, gast.AnnAssign):
            return [nodes.located(nodes.assign(s.target, s.value), s)]
        if isinstance(s, gast.Assign) and len(s.targets) > 1:
            first = nodes.located(nodes.assign(s.targets[0], s.value), s)
            rest = [nodes.located(nodes.assign(t, _load(s.targets[0])), s)
                    for t in s.targets[1:]]
            return [first] + rest
        if isinstance(s, gast.If):
            s.body = self.block(s.body)
            s.orelse = self.block(s.orelse)
        elif isinstance(s, (gast.For, gast.While)):
            s.body = self.block(s.body)
            s.orelse = self.block(s.orelse)
            if isinstance(s, gast.For) and isinstance(s.iter, (gast.Tuple, gast.List)):
                return self.unroll(s)
            if s.orelse:
                return self.loop_else(s)
        return [s]

    def block(self, stmts):
        return [out for s in stmts for out in self.stmt(s)]

    def unroll(self, loop):
        if any(isinstance(n, (gast.Break, gast.Continue)) for s in loop.body
               for n in gast.walk(s)):
            raise self.src.syntax_error(
                loop, "break/continue in a for loop over a tuple or list display is not "
                      "supported; loop over range(len(...)) instead")
        out, elts = [], list(loop.iter.elts)
        changed = {n.id for s in loop.body for n in gast.walk(s)
                   if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}
        if any(isinstance(n, gast.Name) and n.id in changed for e in elts for n in gast.walk(e)):
            # the tuple is built before the loop runs: keep its values
            for k, elt in enumerate(elts):
                held = self.namer.fresh(f"{loop.target.id}_{k}")
                out.append(nodes.located(nodes.assign(held, elt), loop))
                elts[k] = nodes.name(held)
        for elt in elts:
            out.append(nodes.located(nodes.assign(loop.target.id, copy.deepcopy(elt)), loop))
            out.extend(copy.deepcopy(loop.body))
        return out + loop.orelse

    def loop_else(self, loop):
        flag = self.namer.fresh("broke")
        loop.body = _flag_breaks(loop.body, flag)
        orelse, loop.orelse = loop.orelse, []
        init = nodes.located(nodes.assign(flag, nodes.const(False)), loop)
        guard = nodes.located(nodes.if_(nodes.not_(nodes.name(flag)), orelse), loop)
        return [init, loop, guard]

    # -- jumps ------------------------------------------------------------------------
    def single_exit(self, body):
        self.ret_name = self.namer.fresh("y")
        if not body or not _always_exits(body[-1]):
            body = body + [nodes.ret(nodes.const(None))]
        body, _, _ = self.jumps(self.returns_to_jumps(body))
        body = _strip_return_jumps(body)
        if self.ret_flag:
            body.insert(0, nodes.assign(self.ret_flag, nodes.const(False)))
        return body + [nodes.ret(nodes.name(self.ret_name))]

    def returns_to_jumps(self, stmts):
        out = []
        for s in stmts:
            if isinstance(s, gast.Return):
                value = s.value if s.value is not None else nodes.const(None)
                out.append(nodes.located(nodes.assign(self.ret_name, value), s))
                out.append(nodes.located(_return_jump(), s))
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
                        nodes.assign(flag, nodes.const(True)), gast.Break()])
                    guard = nodes.located(nodes.if_(nodes.name(flag), [_return_jump()]), s)
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
                out.append(nodes.located(nodes.assign(flag, nodes.const(False)), s))
            s.body = _replace_jumps(s.body, kind, lambda f=flag: [
                nodes.assign(f, nodes.const(True))])
            s.orelse = _replace_jumps(s.orelse, kind, lambda f=flag: [
                nodes.assign(f, nodes.const(True))])
            guards.append((flag, kind))
        out.append(s)
        chain = rest
        for flag, kind in reversed(guards):
            chain = [nodes.located(nodes.if_(nodes.name(flag), [_jump(kind)], chain), s)]
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
            out.append(nodes.assign(flag, nodes.const(True)))
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


def _load(target):
    t = copy.deepcopy(target)
    for n in gast.walk(t):
        if hasattr(n, "ctx"):
            n.ctx = gast.Load()
    return t


def _store(target):
    t = copy.deepcopy(target)
    t.ctx = gast.Store()
    for n in gast.walk(t.value if isinstance(t, gast.Subscript) else t):
        if hasattr(n, "ctx") and n is not t:
            n.ctx = gast.Load()
    return t
