"""Names in code: how often each name is loaded and assigned in a tree, kept current as
passes change it (optimize, reverse's renaming of tape unpacks); and which names are
live, so that dead assignments can be dropped (forward mode, the fused gradient); and an
expression of Wengert form as the user wrote it, for messages (`as_written`).
"""
import bisect
import difflib
import re
import types
from collections import Counter

import gast

from .. import marks, syntax


def store_counts(tree):
    """How often each name is bound in `tree`, a node or a list of statements."""
    items = tree if isinstance(tree, list) else [tree]
    return Counter(n for t in items for n in syntax.names_stored(t))


def name_counts(tree):
    """(how often each name is loaded, how often bound) in `tree`, in one walk."""
    loads, stores = Counter(), Counter()
    for n in syntax.name_nodes(tree):
        kind = type(n.ctx)
        if kind is gast.Load:
            loads[n.id] += 1
        elif kind is gast.Store or kind is gast.Param:
            stores[n.id] += 1
    return loads, stores


def user_name(name, src):
    """`name` as the user wrote it in the function `src` reads (Wengert form numbers
    versions: `y_1`)."""
    base = re.sub(r"_\d+$", "", name)
    used = {n.id for n in syntax.name_nodes(src.node)}
    return base if name not in used and base in used else name


def as_written(e, fn, src, depth=8):
    """The source of the expression `e` of `fn` (in Wengert form) as the user wrote it
    in the function `src` reads: each temporary of Wengert form in it replaced by what it
    holds (`t_5(x)` is `self.layers[-1](x)`), each version by its name (`f_1` is `f`),
    for messages."""
    held = {s.targets[0].id: s.value for s in syntax.statements(fn)
            if isinstance(s, gast.Assign) and len(s.targets) == 1
            and isinstance(s.targets[0], gast.Name) and marks.TEMPORARY.of(s)}

    def spelled(node, left):
        if isinstance(node, gast.Name) and node.id in held and left:
            return spelled(syntax.copied(held[node.id]), left - 1)
        if isinstance(node, gast.Name):
            node.id = user_name(node.id, src)
        for field, value in gast.iter_fields(node):
            if isinstance(value, gast.AST):
                setattr(node, field, spelled(value, left))
            elif isinstance(value, list):
                value[:] = [spelled(v, left) if isinstance(v, gast.AST) else v for v in value]
        return node
    return syntax.unparse(spelled(syntax.copied(e), depth))


def unresolved_call(func, spelled, src):
    """For a call of the parameter `func` (`act(x)`) whose value the code is not
    specialised on, what to say instead of "cannot resolve": which values it is compiled
    for, and what to write for the others; None for any other call."""
    params = src.node.args
    if not isinstance(func, gast.Name) or func.id not in {
            a.id for a in params.posonlyargs + params.args + params.kwonlyargs}:
        return None
    return (f"the call {spelled}() of the parameter {func.id!r}, whose value (given, or "
            "its default) is neither a Python function, a builtin, a NumPy ufunc nor an "
            "object of a class of yours (whose __call__ is differentiated): for a "
            "functools.partial or a bound method, pass a lambda or a def that calls it "
            f"({func.id}=lambda x: power(x, p=3.0)); such a call")


def not_in_module(func, src):
    """For a call of `func` (`np.trapz`), an attribute of a module that has no such
    attribute (one a newer version removed), what to say instead of "no rule", or None."""
    if not isinstance(func, gast.Attribute):
        return None
    module = src.resolve(func.value)
    if not isinstance(module, types.ModuleType) or hasattr(module, func.attr):
        return None
    spelled = syntax.unparse(func.value)
    close = difflib.get_close_matches(func.attr, [n for n in dir(module)
                                                  if not n.startswith("_")], n=1)
    return (f"{spelled}.{func.attr} does not exist: module {module.__name__!r} has no "
            f"attribute {func.attr!r}" + (f" (did you mean {spelled}.{close[0]}?)"
                                          if close else "")
            + "; Python raises AttributeError at this line")


def number_names(fn, stored=None):
    """{name: number} of the names `fn` binds once, to a number constant (`stored`, the
    `store_counts` of `fn` if known)."""
    stored = store_counts(fn) if stored is None else stored
    return {s.targets[0].id: s.value.value for s in fn.body
            if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name)
            and isinstance(s.value, gast.Constant) and type(s.value.value) in (int, float)
            and stored[s.targets[0].id] == 1}


def number_value(e, numbers):
    """The number `e` certainly is (a constant, or a name of `numbers`, see
    `number_names`), or None."""
    if isinstance(e, gast.Constant) and type(e.value) in (int, float):
        return e.value
    return numbers.get(e.id) if isinstance(e, gast.Name) else None


class NameCounts:
    """How often each name is loaded, and assigned with `=`, in a tree: counted once,
    then kept current by the passes, which `drop` a statement before changing or
    deleting it and `add` it back after (counting by walking the whole tree for each
    name made these passes quadratic in the size of the pullback)."""

    def __init__(self, tree):
        self.loads = Counter()
        self.assigns = Counter()
        self.add(tree)

    def add(self, node, sign=1):
        for n in syntax.name_nodes(node):
            if isinstance(n.ctx, gast.Load):
                self.loads[n.id] += sign
        for block in syntax.blocks([node]):
            for s in block:
                if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name):
                    self.assigns[s.targets[0].id] += sign

    def drop(self, node):
        self.add(node, -1)


#: Statements that hold blocks of statements.
_COMPOUND = {kind: True for kind in (gast.If, gast.For, gast.While, gast.FunctionDef,
                                     gast.Try, gast.With, gast.AsyncFor, gast.AsyncWith,
                                     gast.AsyncFunctionDef, gast.ClassDef)}


class StatementNames:
    """The names each statement of one block loads (how often) and binds, found once per
    statement while the block is scanned; a statement that changes is `forget`ten.
    Those of simple statements (not `if` or loops, whose blocks other scans change) go
    in `shared` when given, a `syntax.NodeMap` the scans of a pass share while each
    forgets what it changes."""

    def __init__(self, shared=None):
        self.found = syntax.NodeMap()
        self.shared = shared

    def loads(self, s, name):
        return self.names(s)[0][name]

    def stores(self, s, name):
        return name in self.names(s)[1]

    def names(self, s):
        found = self.found if self.shared is None or _COMPOUND.get(type(s), False) \
            else self.shared
        entry = found.get(s)
        if entry is None:
            loads, stores = Counter(), set()
            for n in syntax.name_nodes(s):
                if isinstance(n.ctx, gast.Load):
                    loads[n.id] += 1
                else:
                    stores.add(n.id)
            entry = found[s] = (loads, stores)
        return entry

    def forget(self, s):
        """`s` changed (also the statements inside it)."""
        self.found[s] = None
        if self.shared is not None:
            for t in syntax.statements(s):
                self.shared[t] = None

    def reads_more(self, s, counts):
        """`s` now reads each name of `counts` (a mapping) that many times more (or
        fewer, for a negative count)."""
        loads = self.names(s)[0]
        for n, k in counts.items():
            loads[n] += k
            if loads[n] <= 0:
                del loads[n]

    def renamed(self, s, old, new):
        """Every name `old` of `s` (read or bound) is now `new` (see `rename`)."""
        loads, stores = self.names(s)
        if old in loads:
            loads[new] += loads.pop(old)
        if old in stores:
            stores.discard(old)
            stores.add(new)


class BlockNames:
    """Where each name is bound and read in one block: the positions (in the block as it
    was when this was made) of the statements that bind it, and of those that read it,
    so that a pass finds the statements between two that mention a name by bisection,
    not by scanning them. A pass may then only remove statements and change them, each
    between `drop(k)` and `add(k)` (`k`, its position), or rename a name in one
    (`renamed`)."""

    def __init__(self, block):
        self.statements = list(block)
        self.position = {id(s): k for k, s in enumerate(self.statements)}
        self.known = StatementNames()
        self.stores, self.loads = {}, {}
        for k in range(len(self.statements)):
            self.add(k)

    def binding(self, name, start, stop):
        """The positions of the statements after `start` and before `stop` that bind
        `name`."""
        return _between(self.stores.get(name, []), start, stop)

    def reading(self, name, start, stop):
        """The positions of the statements after `start` and before `stop` that read
        `name`."""
        return _between(self.loads.get(name, []), start, stop)

    def drop(self, k):
        loads, stores = self.known.names(self.statements[k])
        for index, names in ((self.loads, loads), (self.stores, stores)):
            for n in names:
                positions = index[n]
                del positions[bisect.bisect_left(positions, k)]

    def renamed(self, k, old, new):
        """Statement `k` was passed to `rename(statement, old, new)`."""
        loads, stores = self.known.names(self.statements[k])
        for index, names in ((self.loads, loads), (self.stores, stores)):
            if old in names:
                positions = index[old]
                del positions[bisect.bisect_left(positions, k)]
                if new not in names:
                    bisect.insort(index.setdefault(new, []), k)
        self.known.renamed(self.statements[k], old, new)

    def add(self, k):
        self.known.forget(self.statements[k])
        loads, stores = self.known.names(self.statements[k])
        for index, names in ((self.loads, loads), (self.stores, stores)):
            for n in names:
                bisect.insort(index.setdefault(n, []), k)


def _between(positions, start, stop):
    return positions[bisect.bisect_right(positions, start):bisect.bisect_left(positions, stop)]


def count_loads(node, name):
    return sum(1 for n in syntax.name_nodes(node) if n.id == name
               and isinstance(n.ctx, gast.Load))


def rename(node, old, new):
    for n in syntax.name_nodes(node):
        if n.id == old:
            n.id = new


def exposed(stmts, bound, binds=None):
    """The names `stmts` may read before assigning them. `bound`: the names assigned on
    every path so far (updated); `binds(s)`: the names the simple statement `s` assigns
    (by default those it stores)."""
    out = set()
    for s in stmts:
        if isinstance(s, gast.If):
            out |= set(syntax.names_loaded(s.test)) - bound
            branches = []
            for body in (s.body, s.orelse):
                b = set(bound)
                out |= exposed(body, b, binds)
                branches.append(b)
            bound |= branches[0] & branches[1]
        elif isinstance(s, (gast.For, gast.While)):
            head = s.iter if isinstance(s, gast.For) else s.test
            out |= set(syntax.names_loaded(head)) - bound
            inner = set(bound)
            if isinstance(s, gast.For):
                inner |= set(syntax.names_stored(s.target))
            # (what the loop assigns may not happen: `bound` stays as it is)
            out |= exposed(s.body + s.orelse, inner, binds)
        elif binds is None:     # (what it reads and stores, in one walk)
            found = syntax.name_nodes(s)
            out |= {n.id for n in found if type(n.ctx) is gast.Load} - bound
            bound |= {n.id for n in found if type(n.ctx) in (gast.Store, gast.Param)}
        else:
            out |= set(syntax.names_loaded(s)) - bound
            bound |= binds(s)
    return out


def live_names(stmts, live, loop=None, delete=False, dead=None, memo=None):
    """The names live before `stmts`, given those live after: backward liveness over
    structured code (`loop` is (live after, live at the head) of the enclosing loop).
    An assignment `name = ...` whose name is not live and for which `dead(statement,
    name)` is true is dead: it reads nothing, and with `delete` it is removed. `memo`
    ({id(statement): (names it binds, names it reads)}, filled here) may be passed from
    one analysis to the next of the same statements, unchanged."""
    memo = {} if memo is None else memo     # (loops are walked until their liveness
    keep = []                               # settles)
    live = set(live)                        # (changed in place below)
    for s in reversed(stmts):
        if isinstance(s, gast.Break):
            live = set(loop[0])
        elif isinstance(s, gast.Continue):
            live = set(loop[1])
        elif isinstance(s, (gast.Return, gast.Raise)):
            live = set(syntax.names_loaded(s))
        elif isinstance(s, gast.If):
            live = (live_names(s.body, live, loop, delete, dead, memo)
                    | live_names(s.orelse, live, loop, delete, dead, memo)
                    | set(syntax.names_loaded(s.test)))
        elif isinstance(s, (gast.For, gast.While)):
            live = _live_in_loop(s, live, delete, dead, memo)
        elif (dead is not None and isinstance(s, gast.Assign)
              and isinstance(s.targets[0], gast.Name) and s.targets[0].id not in live
              and dead(s, s.targets[0].id)):
            continue
        else:
            names = memo.get(id(s))
            if names is None:
                found = syntax.name_nodes(s)    # (one walk for what it binds and reads)
                names = memo[id(s)] = (
                    {n.id for n in found if type(n.ctx) in (gast.Store, gast.Param)},
                    {n.id for n in found if type(n.ctx) is gast.Load})
            live -= names[0]
            live |= names[1]
        keep.append(s)
    if delete:
        stmts[:] = keep[::-1]
    return live


def _live_in_loop(loop, after, delete, dead, memo):
    is_for = isinstance(loop, gast.For)
    head = set(after) | set(syntax.names_loaded(loop.iter if is_for else loop.test))
    while True:
        body = live_names(loop.body, head, (after, head), False, dead, memo)
        if is_for:
            body -= set(syntax.names_stored(loop.target))
        if body <= head:
            break
        head |= body
    if delete:
        live_names(loop.body, head, (after, head), True, dead, memo)
    return head
