"""Optimize: make generated derivative code as lean as a careful hand-written one.

Takes the output of `reverse` and, to a fixed point,

- in the forward pass, renames a loop body's last definition of a carried variable to
  the carried name when the entry value is not needed after it, dropping the copy
  (`s_1 = s + t; s = s_1` becomes `s = s + t`), and drops copies nobody reads;
- in the pullback, propagates adjoint copies (`t_2_bar = t_1_bar`), fuses a first
  contribution with the next accumulation (`a = e1; ...; a = a + e2` becomes
  `a = e1 + e2`) or rebinding (`a = e; a = f(a)` becomes `a = f(e)`), writes `a + -b`
  as `a - b`, and removes adjoints nobody reads.

Later passes finish the work: `inline_temporaries` puts each temporary number of the
forward pass back into the one statement that reads it (after the header, which names
the rules of the statements it removes), and `distinct_results` copies a returned
gradient that may share memory with another.

>>> from s2sad.after_ad.optimize import Optimize
>>> print(show(Optimize, '''
... def f(x):
...     s = 0.0
...     for i in range(3):
...         s += x * i
...     return s
... '''))
def f_vjp(x):
    s = 0.0
    for i in range(3):
        t = x * i
        s = s + t
<BLANKLINE>
    def f_pullback(s_bar):
        x_bar = 0.0
        # grad of: for i in range(3):
        for i in reversed(range(3)):
            # grad of: s += x * i
            x_bar = x_bar + s_bar * i
        return x_bar
    return (s, f_pullback)
"""
from collections import Counter

import gast

from .. import marks
from ..ad.simplify import fold_negation, negated
from ..analysis.names import (BlockNames, NameCounts, StatementNames, count_loads,
                              rename)
from .. import syntax


def run(vjp, ctx):
    """The pass."""
    return Optimize(ctx.src, ctx.namer, lambda e: ctx.is_runtime_call(e, "add")).run(
        vjp, ctx)


class Optimize:
    """See the module docstring; `adds(e)`, whether `e` calls runtime.add (the
    accumulation of adjoints that may be containers)."""

    def __init__(self, src, namer, adds=lambda e: False):
        self.src = src
        self.namer = namer
        self.adds = adds

    def run(self, fn, ctx):
        """`fn`, the vjp the reverse transform made (its ReverseResult `ctx.reverse`)."""
        result = ctx.reverse
        pullback = result.pullback
        forward = fn.body        # the clean-ups below skip the nested pullback
        changed = True
        names = NameCounts(pullback)     # (counted once: each clean-up keeps it current)
        # the names of each simple statement, found once for all the scans below: each
        # forgets the statements it changes
        seen = syntax.NodeMap()
        while changed:
            locals_ = _adjoint_names(pullback)
            changed = _hoist_equal_branches(pullback.body, names)
            changed |= _propagate_copies(pullback, locals_, names, seen)
            changed |= _inline_single_use(pullback, locals_, names, seen)
            changed |= _fuse_accumulations(pullback.body, names, seen, self.adds)
            changed |= _merge_rebinds(pullback.body, names, seen)
            changed |= _drop_dead_adjoints(pullback, locals_, names)
        for loop in result.loops:
            loop.prune(ctx)
        coalesced = _coalesce_loops(forward)
        if coalesced:       # (the names later passes ask `renamed` for: element_adjoints)
            written = result.renamed

            def renamed(n):
                n = written(n)
                while n in coalesced:
                    n = coalesced[n]
                return n
            result.renamed = renamed
        _drop_needless_inits(forward)
        _drop_dead_copies(fn, forward)
        pullback.body[:-1] = annotate(pullback.body[:-1], self.src)
        for s in syntax.statements(pullback):
            if isinstance(s, gast.Assign):
                s.value = as_subtractions(fold_negation(s.value))
            elif isinstance(s, gast.AugAssign) and isinstance(s.op, gast.Add):
                s.value = fold_negation(s.value)
                if negated(s.value) is not None:
                    s.op, s.value = gast.Sub(), negated(s.value)
        return fn


def _copy_parts(s):
    if (isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name)
            and isinstance(s.value, gast.Name)):
        return s.targets[0].id, s.value.id
    return None


# -- forward --------------------------------------------------------------------------
def _coalesce_loops(stmts):
    """Coalesce the copies of carried names in each loop; {name: the carried name it
    now has}."""
    renames = {}
    for block in syntax.blocks(stmts, functions=False):
        for s in block:
            if isinstance(s, (gast.For, gast.While)):
                for body in syntax.blocks(s.body, functions=False):
                    _coalesce_block(body, renames)
    return renames


def _coalesce_block(block, renames):
    index = BlockNames(block)      # (not a scan between each copy and its definition)
    end = len(block)
    for i in range(len(block) - 1, -1, -1):
        s = block[i]
        if not marks.PHI.of(s):
            continue
        carried, w = _copy_parts(s)
        at = index.position[id(s)]
        earlier = index.binding(w, -1, at)
        d = index.statements[earlier[-1]] if earlier else None
        if not (isinstance(d, gast.Assign) and syntax.is_name(d.targets[0], w)):
            continue
        j = earlier[-1]
        if (not index.binding(carried, j, at) and not index.reading(carried, j, at)
                and not index.reading(w, at, end)):
            index.drop(j)
            d.targets[0].id = carried
            index.add(j)
            for k in index.reading(w, j, at):     # (nothing between binds it)
                rename(index.statements[k], w, carried)
                index.renamed(k, w, carried)
            renames[w] = carried
            index.drop(at)
            del block[i]


def _drop_needless_inits(forward):
    """`v = None` before a loop binds a name the loop assigns first; drop it when every
    iteration assigns `v` (at the top level of the body) before anything reads it, and
    nothing after the loop reads it (the loop may run zero times)."""
    everywhere = None
    for block in syntax.blocks(forward, functions=False):
        for i, s in enumerate(block):
            if not isinstance(s, (gast.For, gast.While)):
                continue
            inits = [b for b in block[:i] if marks.INIT.of(b)
                     and isinstance(b.value, gast.Constant) and b.value.value is None]
            if not inits:
                continue
            if everywhere is None:      # (counted once, where a loop has initialisations)
                everywhere = Counter(syntax.names_loaded(_body(forward)))   # no init reads
            inside = Counter(syntax.names_loaded(_body(s.body)))
            first = {}      # name -> the first statement of the body that reads or binds it
            for b in s.body:
                for n in syntax.name_nodes(b):
                    first.setdefault(n.id, b)
            for init in inits:
                name = init.targets[0].id
                found = first.get(name)
                if (isinstance(found, gast.Assign) and syntax.is_name(found.targets[0], name)
                        and not count_loads(found, name)
                        and everywhere[name] == inside[name]):
                    block.remove(init)


def _drop_dead_copies(fn, forward):
    """Drop the copies and initialisations Wengert form adds for loops and joins
    (`x = x_1`, `j_1 = j`, `v = None`) whose value nothing reads, also when they only
    feed each other. An initialisation of a loop variable is read only by reads after
    its loop (inside, the loop binds it)."""
    candidates = [(s, block) for block in syntax.blocks(forward, functions=False)
                  for s in block
                  if marks.PHI.of(s) or marks.INIT.of(s)]
    if not candidates:
        return
    reads = [Counter(syntax.names_loaded(s)) for s, _ in candidates]
    everywhere = Counter(syntax.names_loaded(fn))
    inside = {}         # loop-variable initialisation -> (its loop's loads, candidates in it)
    loops = {}          # {id(loop): what `inside` holds for it}, found once per loop
    for k, (s, _) in enumerate(candidates):
        loop = marks.LOOP.of(s)
        if loop is not None:
            if id(loop) not in loops:
                ids = {id(n) for n in syntax.walk(loop)}
                loops[id(loop)] = (Counter(syntax.names_loaded(_body(loop.body))),
                                   [j for j, (c, _) in enumerate(candidates) if id(c) in ids])
            inside[k] = loops[id(loop)]

    def real(name, loads, among, live):
        """Reads of `name` in `loads` not made by dead candidates (of `among`)."""
        return loads[name] - sum(reads[j][name] for j in among if j not in live)

    live = set()
    changed = True
    while changed:
        changed = False
        for k, (s, _) in enumerate(candidates):
            if k in live:
                continue
            name = s.targets[0].id
            count = real(name, everywhere, range(len(candidates)), live)
            if k in inside:
                count -= real(name, *inside[k], live)
            if count > 0:
                live.add(k)
                changed = True
    for k, (s, block) in enumerate(candidates):
        if k not in live:
            block.remove(s)


# -- pullback -------------------------------------------------------------------------
def _adjoint_names(pullback):
    """Names the pullback assigns with `=` (not loop targets): its adjoints."""
    return {s.targets[0].id for s in syntax.statements(pullback)
            if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name)}


def _propagate_copies(pullback, locals_, names, seen=None):
    changed = False
    defs = Counter(names.assigns)       # as at the start: stale within the sweep
    for block in syntax.blocks(pullback.body, functions=False):
        known = StatementNames(seen)
        # the copies `b = b` of the block, each dropped with a copy `a = b` or `b = a`
        # (renaming makes others only from the statements it renames)
        selves = [t for t in block if _copy_parts(t) and len(set(_copy_parts(t))) == 1]
        i = 0
        while i < len(block):
            parts = _copy_parts(block[i])
            if parts and parts[0] in locals_ and defs.get(parts[0]) == 1:
                a, b = parts
                total = names.loads[a]
                uses, found = [], 0
                for k in range(i + 1, len(block)):
                    if found == total:
                        break
                    n = known.loads(block[k], a)
                    if n:
                        uses.append(k)
                        found += n
                last = block[uses[-1]] if uses else None
                if uses and found == total and not any(
                        known.stores(block[k], b) and _copy_parts(block[k]) != (b, a)
                        for k in range(i + 1, uses[-1])) and not (
                        _loops_over(block, i + 1, uses[-1], b, known)) and not (
                        isinstance(last, (gast.If, gast.For, gast.While))
                        and known.stores(last, b)):
                    for k in uses:
                        names.drop(block[k])
                        rename(block[k], a, b)
                        names.add(block[k])
                        known.forget(block[k])
                    names.drop(block[i])
                    del block[i]
                    dropped = {id(t): t for t in selves + [block[k - 1] for k in uses]
                               if _copy_parts(t) == (b, b)}
                    if dropped:
                        for t in dropped.values():
                            names.drop(t)
                        block[:] = [t for t in block if id(t) not in dropped]
                        selves = [t for t in selves if id(t) not in dropped]
                    changed = True
                    continue
                if not uses and total == 0:
                    names.drop(block[i])
                    del block[i]
                    changed = True
                    continue
            i += 1
    return changed


def _hoist_equal_branches(stmts, names):
    """`if c: A else: A` is `A`."""
    changed = False
    for block in syntax.blocks(stmts, functions=False):
        for i, s in enumerate(block):
            if (isinstance(s, gast.If) and s.orelse and len(s.body) == len(s.orelse)
                    and gast.dump(s.body[0]) == gast.dump(s.orelse[0])   # (most differ)
                    and gast.dump(_body(s.body)) == gast.dump(_body(s.orelse))):
                names.drop(s.test)
                names.drop(_body(s.orelse))
                block[i:i + 1] = s.body
                changed = True
    return changed


def _body(stmts):
    return gast.Module(body=stmts, type_ignores=[])


def _inline_single_use(pullback, locals_, names, seen=None):
    """`a = e; ...; b = a` is `b = e` when `a` is read once and nothing between changes
    what `e` reads; likewise a small `e` (one operation on names) into any one use."""
    changed = False
    for block in syntax.blocks(pullback.body, functions=False):
        known = StatementNames(seen)
        i = 0
        while i < len(block):
            s = block[i]
            if not (isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name)
                    and s.targets[0].id in locals_):
                i += 1
                continue
            a = s.targets[0].id
            if names.loads[a] != 1 or names.assigns[a] != 1:
                i += 1
                continue
            watched = set(syntax.names_loaded(s.value)) | {a}
            for k in range(i + 1, len(block)):
                t = block[k]
                loads, stores = known.names(t)
                if a in loads:
                    parts = _copy_parts(t)
                    if ((parts and parts[1] == a) or _small(s.value)) and not isinstance(
                            t, (gast.For, gast.While, gast.Return)):
                        names.drop(t)
                        replace_load(t, a, s.value)
                        names.add(t)
                        known.forget(t)
                        names.drop(s)
                        del block[i]
                        changed = True
                        i -= 1
                    break
                if not watched.isdisjoint(stores):
                    break
            i += 1
    return changed


def _small(e):
    if syntax.is_atom(e):
        return True
    if isinstance(e, gast.UnaryOp):
        return syntax.is_atom(e.operand)
    return isinstance(e, gast.BinOp) and syntax.is_atom(e.left) and syntax.is_atom(e.right)


def replace_load(node, name, expr):
    if type(node) is gast.Name:
        return syntax.copied(expr) if node.id == name and isinstance(
            node.ctx, gast.Load) else node
    return syntax.replace_loads(node, name, lambda: syntax.copied(expr))


def _loops_over(block, start, stop, name, known):
    return any(known.stores(block[k], name) for k in range(start, stop + 1)
               if isinstance(block[k], (gast.For, gast.While)))


def _fuse_accumulations(stmts, names, seen=None, adds=lambda e: False):
    changed = False
    for block in syntax.blocks(stmts, functions=False):
        known = StatementNames(seen)
        i = 0
        while i < len(block):
            s = block[i]
            if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name):
                a = s.targets[0].id
                read = set(known.names(s)[0])
                for k in range(i + 1, len(block)):
                    t = block[k]
                    loads, stores = known.names(t)
                    term = _accumulated(t, a, adds) if a in loads else None
                    if term is not None:
                        if count_loads(term, a) == 0:
                            # one read and one assignment of `a` fewer (counted so, not
                            # by reading `t` again: each link of a chain would read it)
                            known.reads_more(t, {a: -1})
                            known.reads_more(t, known.names(s)[0])
                            if isinstance(t.value, gast.BinOp):
                                t.value = syntax.binop(s.value, gast.Add(), term)
                            else:
                                t.value.args[0] = s.value
                            names.loads[a] -= 1
                            names.assigns[a] -= 1
                            del block[i]
                            changed = True
                            i -= 1
                        break
                    if a in loads or a in stores or not read.isdisjoint(stores):
                        break
            i += 1
    return changed


def _merge_rebinds(stmts, names, seen=None):
    """`a = e; a = f(a)` is `a = f(e)` when `f(a)` reads `a` once and the line stays
    short (a chain of accumulations stays a chain)."""
    changed = False
    for block in syntax.blocks(stmts, functions=False):
        i = 0
        while i + 1 < len(block):
            s, t = block[i], block[i + 1]
            parts = [x.targets[0].id for x in (s, t) if isinstance(x, gast.Assign)
                     and isinstance(x.targets[0], gast.Name)]
            if len(parts) == 2 and parts[0] == parts[1] and count_loads(t.value, parts[0]) == 1:
                merged = syntax.copied(t)
                replace_load(merged, parts[0], s.value)
                if len(syntax.unparse(merged)) > 72:
                    i += 1
                    continue
                names.drop(t)
                replace_load(t, parts[0], s.value)
                names.add(t)
                if seen is not None:
                    seen[t] = None
                names.drop(s)
                del block[i]
                changed = True
                continue
            i += 1
    return changed


def _accumulated(s, a, adds):
    """The term `e` if `s` is `a = a + e` or `a = _s2s_add(a, e)`, else None."""
    if not (isinstance(s, gast.Assign) and syntax.is_name(s.targets[0], a)):
        return None
    v = s.value
    if isinstance(v, gast.BinOp) and isinstance(v.op, gast.Add) and syntax.is_name(
            v.left, a):
        return v.right
    if adds(v) and len(v.args) == 2 and syntax.is_name(v.args[0], a):
        return v.args[1]
    return None


def _drop_dead_adjoints(pullback, locals_, names):
    changed = False
    for block in syntax.blocks(pullback.body, functions=False):
        for s in list(block):
            if (isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name)
                    and s.targets[0].id in locals_ and names.loads[s.targets[0].id] == 0):
                names.drop(s)
                block.remove(s)
                changed = True
    return changed


def as_subtractions(e, swap=True):
    """`a + -b` as `a - b` throughout `e`, and (with `swap`) `-a + b` as `b - a`."""
    for n in syntax.values(e):
        if isinstance(n, gast.BinOp) and isinstance(n.op, gast.Add):
            inner = negated(n.right)
            if inner is not None:
                n.op, n.right = gast.Sub(), inner
            elif swap and negated(n.left) is not None:
                n.op, n.left, n.right = gast.Sub(), n.right, negated(n.left)
    return e


def annotate(stmts, src, previous=None):
    """Put `# grad of: <line>` over each run of adjoint code from one source line."""
    out = []
    for s in stmts:
        # (not over what a checkpointed loop's reverse sweep comments itself)
        line = None if marks.UNCOMMENTED.of(s) else getattr(s, "lineno", None)
        if line is not None and line != previous:
            out.append(syntax.comment("grad of: " + src.line_text(s).strip()))
            previous = line
        if isinstance(s, (gast.If, gast.For, gast.While)):
            s.body = annotate(s.body, src, line)
            s.orelse = annotate(s.orelse, src, line)
            previous = None
        out.append(s)
    return out
