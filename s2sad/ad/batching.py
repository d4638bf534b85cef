"""Batching (`vmap`): Wengert form to `f_batched(x, ...)`, the function over a batch.

The parameters in `wrt` carry a batch axis, first; a value computed from one does too,
and every other value stays as it is. Each statement on a batched value applies its
primitive's batching rule (rules/batching.py): an elementwise primitive pads the
batched operands' axes where another operand may have more (`_s2s_batch_pad`), a
reduction counts its axis past the batch axis, an index selects all of the batch first,
a call of another Python function calls that function's own batched version, a runtime
helper declared `elementwise` is called on the batch, and a primitive (or a helper)
without a rule is applied item by item (`_s2s_batch_loop`, said in a comment and a
warning). A value that carries no batch axis where its name does elsewhere (a
loop's start value) gets one (`_s2s_batch_like`), and so does every output: each
result of `f_batched` has the batch axis first. An `if` whose test is batched runs
both branches and chooses item by item, where both may run (`select`); a `while` whose
test is batched runs until every item is done, keeping the values of the finished ones
(`masked`); other such `if`s and `while`s, and a `for` over a batched sequence, are
refused. A batched value times values the batch shares is kept as its scale, computed
batched only where something else reads it, and its sum is a matrix product
(ad/batch_scaling.py).

>>> from s2sad.ad.batching import Batching
>>> print(show(Batching, '''
... def f(x, w):
...     return np.sum(np.tanh(x * w), axis=0) + x[0]
... ''', wrt=(0,), arrays=True))
def f_batched(x, w):
    t = _s2s_batch_pad(x, np.ndim(w)) * w
    t_1 = np.tanh(t)
    t_2 = np.sum(t_1, axis=1)
    t_3 = x[:, 0]
    y = _s2s_batch_pad(t_2, np.ndim(t_3) - 1) + _s2s_batch_pad(t_3, np.ndim(t_2) - 1)
    return y

(The pads are no-ops where the items' ranks agree, which the kinds of values do not
tell here.)
"""
import collections
import dataclasses
import operator
import random
import warnings

import gast
import numpy as np

from .. import marks, syntax
from ..analysis import operations
from ..analysis.activity import closure, definitions
from ..analysis.operations import COPY, CUSTOM, NONDIFF, PACK, USER
from ..analysis.value_kinds import ARRAY, CONTAINER, SCALAR, UNKNOWN
from ..compilation import Callee
from ..errors import BatchingLoopWarning, InternalError, S2SADError, outside_stacklevel
from ..frontend import source
from ..options import Variant
from ..rules import registry, runtime
from . import batch_scaling
from .simplify import template_name


def run(fn, ctx):
    """The pass: `f_batched` for the function `fn` in Wengert form; the transform's
    result is `ctx.batching`."""
    return Batching(ctx).run(fn)


@dataclasses.dataclass
class BatchingResult:
    """What the batching transform made: the names that carry a batch axis, and the
    lines of the statements it applies item by item (`_s2s_batch_loop`), and whether
    every batched value is a number or an array, and no `try` or `with` block holds
    them (`plain`: what the Jacobians built on batching trust; a batched list, tuple or
    dict, a tape, or a block whose exceptions or warnings are per direction, makes them
    loop instead), and the lines that draw from a random generator s2sad resolved
    (`np.random.normal()`, `rng.normal()` of a global `rng`): a batch of directions
    shares the draw, as one call of the function makes it; `vmap`'s items do not."""
    batched: set
    looped: list
    plain: bool = True
    draws: list = dataclasses.field(default_factory=list)


class Batching:
    """See the module docstring; `ctx` is the `Compilation`."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.src = ctx.src
        self.namer = ctx.namer
        self.size = None
        self.looped = []

    def run(self, fn):
        *body, ret = fn.body
        if not isinstance(ret, gast.Return):
            raise InternalError("batching: Wengert form must end with one return")
        self.ops = self.ctx.ops
        self.kinds = self.ctx.value_kinds
        params = [a.id for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs]
        self.first = next((p for p in params if p in self.ctx.wrt), None)
        self.seeds = self.seeded(fn) if self.first is None else {}
        self.definitions = collections.Counter(t for t, _ in definitions(fn.body))
        self.fn, self.params = fn, set(params)
        self.batched = self.analyse(fn)
        returned = set(syntax.names_loaded(ret.value))      # (the pack of the results)
        self.ctx.batching = BatchingResult(self.batched, self.looped, not any(
            self.container(self.kinds.kind.get(n)) and not self.packed(n, fn)
            for n in self.batched - returned)
            and not any(isinstance(n, (gast.Try, gast.With)) for n in syntax.statements(fn)),
            [where for s in syntax.statements(fn) if s in self.ops
             for where in self.drawn(s)])
        self.scaling = batch_scaling.plan(self, body)
        self.bound = set(params)        # (the names with a value where `block` is)
        body = self.block(body)
        body.append(syntax.located(syntax.ret(self.output(ret.value)), ret))
        if self.size is not None and not self.seeds:
            body.insert(0, syntax.assign(self.size, syntax.call(
                self.ctx.runtime("batch_size"), [syntax.name(self.first)])))
        out = syntax.function(self.namer.fresh(f"{fn.name}_batched"), [], body, like=fn)
        for n in syntax.name_nodes(out):
            if marks.LIFTED.of(n):
                self.ctx.bindings[n.id] = marks.PRIM.of(n)
            elif marks.PRIM.of(n) is not None:
                n.id = self.ctx.bind(n.id, obj=marks.PRIM.of(n))
        return out

    def drawn(self, s):
        """Where statement `s` draws from a random generator: its own line, if its call is a
        generator's method, or the lines of a user function it calls (batched or not)
        that draw, read from its source."""
        op = self.ops[s]
        if draws(op.prim):
            return [self.src.where(s)]
        if op.form == USER:
            found = operations.python_function(op.prim)
            return draws_in(found[0], set()) if found else []
        return []

    # -- which names carry a batch axis ------------------------------------------------
    def analyse(self, fn):
        edges = []
        for target, s in definitions(fn.body):
            rule = self.rule_of(self.ops[s])
            if rule is not None and rule.unbatched:
                continue
            edges += [(a, target) for a in self.sources(s.value)]
        for loop in (n for n in syntax.statements(fn) if isinstance(n, gast.For)):
            edges += [(a, loop.target.id) for a in syntax.names_loaded(loop.iter)]
        for branch in (n for n in syntax.statements(fn) if isinstance(n, (gast.If, gast.While))):
            # (an if or a while on a batched test makes what it assigns differ across the
            # batch)
            edges += [(a, t) for a in syntax.names_loaded(branch.test)
                      for t in syntax.names_stored(branch)]
        return closure(set(self.ctx.wrt) | set(self.seeds), edges)

    def seeded(self, fn):
        """Without batched parameters (`wrt` empty), gradient code batched along its seed:
        {the name of the output's adjoint: the output}, which start as the unit adjoints of
        the output (`_s2s_jacobian_seed`), one per element, the batch (what `jacrev` runs:
        all rows of the Jacobian in one reverse pass, after one forward pass)."""
        seeds = {}
        for target, s in definitions(fn.body):
            if self.ops[s].prim is runtime.seed:
                seeds[target] = self.ops[s].bound["y"]
        if not seeds:       # (jacrev then takes one pullback per row)
            raise S2SADError(f"{self.src.where(fn)}: this gradient code has no seed to "
                             "batch the rows of a Jacobian along")
        self.size = self.namer.fresh("batch_size")
        return seeds

    def packed(self, name, fn):
        """Whether the batched container `name` is a list or tuple written out once
        (`[a, b]`, whose items' batching rules are those of its reader) and read only by
        primitives with a batching rule (`np.array(t)`): not a tape that grows, nor a
        value a Python function, a loop over the batch or a test reads."""
        defined = [s for s in syntax.statements(fn)
                   if isinstance(s, gast.Assign) and name in syntax.names_stored(s)]
        if len(defined) != 1 or self.ops[defined[0]].form != PACK:
            return False
        for s in syntax.statements(fn):
            header = (s.test if isinstance(s, (gast.If, gast.While)) else
                      s.iter if isinstance(s, gast.For) else
                      None if isinstance(s, gast.FunctionDef) else s)
            if s is defined[0] or header is None or name not in syntax.names_loaded(header):
                continue
            if not (isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name)
                    and self.rule_of(self.ops[s]) is not None
                    and not self.rule_of(self.ops[s]).unbatched):
                return False
        return True

    @staticmethod
    def container(kind):
        return kind == CONTAINER or (isinstance(kind, type) and not issubclass(
            kind, (float, int, complex, np.ndarray, np.generic)))

    def sources(self, value):
        """The names a value is computed from, but those only asked for their type
        (`type(y) is float`, which the Wengert form keeps in one test)."""
        typed = {id(n) for c in self.type_calls(value) for n in gast.walk(c)}
        return [n.id for n in gast.walk(value) if isinstance(n, gast.Name)
                and isinstance(n.ctx, gast.Load) and id(n) not in typed]

    def type_calls(self, value):
        if not isinstance(value, gast.Compare):
            return []
        return [c for c in gast.walk(value) if isinstance(c, gast.Call)
                and self.src.resolve(c.func) is type and len(c.args) == 1]

    def rule_of(self, op):
        record = registry.primitive(op.prim) if op.prim is not None else None
        return None if record is None else record.batch

    def is_batched(self, atom):
        return isinstance(atom, gast.Name) and atom.id in self.batched

    def any_batched(self, node):
        return any(n in self.batched for n in syntax.names_loaded(node))

    def batch_size(self):
        if self.size is None:
            self.size = self.namer.fresh("batch_size")
        return syntax.name(self.size)

    def like(self, value):
        """`value`, which carries no batch axis, with one."""
        return syntax.call(self.ctx.runtime("batch_like"), [value, self.batch_size()])

    # -- statements ---------------------------------------------------------------------
    def block(self, stmts, top=True):
        out = []
        for s in stmts:
            if top and self.seeds and self.size_after(s):
                out.extend(self.block([s], top=False))
                seed = next(n for n in syntax.names_stored(s) if n in self.seeds)
                out.append(syntax.assign(self.size, syntax.call(
                    self.ctx.runtime("batch_size"), [syntax.name(seed)])))
                continue
            if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name):
                out.extend(self.assign(s))
                self.bound.add(s.targets[0].id)
                continue
            if isinstance(s, gast.If) and self.any_batched(s.test) and self.selectable(
                    s, self.bound):
                out.extend(self.select(s))
                self.bound |= set(syntax.names_stored(s))       # (both branches ran)
                continue
            bound = set(self.bound)     # (a name a branch or loop assigns may be unbound)
            if isinstance(s, gast.While) and self.any_batched(s.test) and self.maskable(s):
                out.extend(self.masked(s))
                self.bound = bound
                continue
            if isinstance(s, gast.If) and self.any_batched(s.test):
                self.refuse(s, "an if whose test differs across the batch",
                            "compute both branches and choose with np.where, or vmap "
                            "a loop over the items")
            if isinstance(s, gast.While) and self.any_batched(s.test):
                self.refuse(s, "this while loop, whose test differs across the batch",
                            "write its test as a comparison of two numbers (`while step > "
                            "tol:`) and its body as assignments of NumPy operations, or "
                            "vmap a loop over the items")
            if isinstance(s, gast.For) and self.any_batched(s.iter):
                self.refuse(s, "a for loop over a sequence that differs across the batch",
                            "loop over a range that is the same for every item")
            if isinstance(s, (gast.If, gast.For, gast.While)):
                s.body = self.block(s.body, top=False)
                self.bound = set(bound)
                s.orelse = self.block(s.orelse, top=False)
            self.bound = bound
            out.append(s)
        return out

    def selectable(self, s, bound):
        """Whether both branches of the if `s` may run for every item, and be chosen
        between: each is statements `name = value` of primitives (no call of a Python
        function, which may do more than compute), or an if of them that is selectable
        too (a rule's `a if p else b`); a name only one of them assigns is a temporary of
        it, or has a value before it (`bound`: the names that do), which the else branch
        reads, and which the item keeps where that branch does not run."""
        branches = [s.body, s.orelse]
        for branch in branches:
            inner = set(bound)
            for t in branch:
                if isinstance(t, gast.If) and self.any_batched(t.test) and self.selectable(
                        t, inner):
                    inner |= set(syntax.names_stored(t))
                    continue
                if not (isinstance(t, gast.Assign) and isinstance(t.targets[0], gast.Name)):
                    return False
                op = self.ops[t]
                if op.form in (USER, CUSTOM) or (op.prim is None and isinstance(
                        t.value, gast.Call)):
                    return False
                inner.add(t.targets[0].id)
        nones = [t for branch in branches for t in branch if isinstance(t, gast.Assign)
                 and isinstance(t.value, gast.Constant) and t.value.value is None]
        read = collections.Counter(syntax.names_loaded(self.fn))
        read.subtract(syntax.names_loaded(s))
        if not source.is_generated(self.src) and any(
                not marks.INIT.of(t) or read[t.targets[0].id] > 0 for t in nones):
            return False        # (a None of the user's, or one a path that runs on reads)
        stored = [{n for t in branch for n in syntax.names_stored(t)} for branch in branches]
        read, assigned = set(), set()      # (what the else branch reads before it assigns)
        for t in s.orelse:
            read |= set(syntax.names_loaded(t)) - assigned
            assigned |= set(syntax.names_stored(t))
        alone = stored[0] ^ stored[1]
        return not read & (stored[0] - bound) and all(
            self.definitions[n] == 1 or n in bound for n in alone)

    def select(self, s):
        """The if `s`, whose test differs across the batch, as both branches, one after
        the other (what the if branch assigns that had a value before put back for the
        else branch), and each name they assign chosen item by item
        (`_s2s_batch_select`)."""
        stored = [{n for t in branch for n in syntax.names_stored(t)}
                  for branch in (s.body, s.orelse)]
        carried = sorted(stored[0] & self.bound)
        names = sorted((stored[0] & stored[1]) | ((stored[0] ^ stored[1]) & self.bound))
        was = {n: self.namer.fresh(f"{n}_was") for n in carried}
        before = set(self.bound)
        out = [syntax.assign(was[n], syntax.name(n)) for n in carried]
        out += self.block(s.body, top=False)
        kept = {n: self.namer.fresh(f"{n}_if") for n in names}
        out += [syntax.assign(kept[n], syntax.name(n)) for n in names]
        out += [syntax.assign(n, syntax.name(was[n])) for n in carried]
        self.bound = before
        out += self.block(s.orelse, top=False)
        error = self.shapes_differ(s, "this if: a name its branches assign has items of "
                                   "different shapes in the two")
        out += [syntax.located(syntax.assign(n, syntax.call(self.ctx.runtime("batch_select"), [
            syntax.copied(s.test), syntax.name(kept[n]), syntax.name(n), syntax.copied(
                error)])), s) for n in names]
        return out

    def shapes_differ(self, s, what):
        """The name of the located error `_s2s_batch_select` raises where the two values it
        chooses between have items of different shapes (a batch holds items of one shape,
        and NumPy would broadcast the two against their batch axes)."""
        return syntax.name(self.ctx.bind("_s2s_shapes_differ", obj=S2SADError(
            f"{self.src.where(s)}: vmap cannot batch {what} (a batch holds items of one "
            "shape); give them values of one shape (np.broadcast_to, or np.where of the "
            f"two), or vmap a loop over the items\n    {self.src.line_text(s).strip()}")))

    def maskable(self, s):
        """Whether the while loop `s`, whose test differs across the batch, may run until
        every item is done, its finished items masked (`masked`): its test compares two
        numbers of each item, and its body is statements `name = value` of primitives
        (as `selectable` asks of branches: they run for the finished items too) on
        numbers and arrays (no list it appends to), whose temporaries (names only it
        assigns) are not read after it."""
        test = s.test
        if s.orelse or not (isinstance(test, gast.Compare) and len(test.ops) == 1):
            return False
        if any(not isinstance(a, gast.Constant) and not (
                isinstance(a, gast.Name) and self.kinds[a] == SCALAR)
               for a in [test.left, *test.comparators]):
            return False
        for t in s.body:
            if isinstance(t, gast.Pass) or (isinstance(t, gast.Expr)
                                            and isinstance(t.value, gast.Constant)):
                continue        # (a comment, a marker)
            if not (isinstance(t, gast.Assign) and isinstance(t.targets[0], gast.Name)):
                return False
            op = self.ops[t]
            if op.form in (USER, CUSTOM) or (op.prim is None and isinstance(t.value, gast.Call)):
                return False
            kind = self.kinds.kind.get(t.targets[0].id)       # (not a tape appended to)
            if kind not in (SCALAR, ARRAY) and not (isinstance(kind, type) and issubclass(
                    kind, (float, int, complex, np.ndarray, np.generic))):
                return False
        inside = collections.Counter(n for t in s.body for n in syntax.names_stored(t))
        temporaries = {n for n, k in inside.items()
                       if self.definitions[n] == k and n not in self.params}
        read = collections.Counter(syntax.names_loaded(self.fn))
        read.subtract(syntax.names_loaded(s))
        return not any(read[n] > 0 for n in temporaries)

    def masked(self, s):
        """The while loop `s`, whose test differs across the batch, run until every item
        is done: each pass runs its body for the whole batch, then keeps, for the items
        already done, the values the names it carries had (`_s2s_batch_select`); an item
        is done from the first pass after which its test is false."""
        active = self.namer.fresh("active")
        inside = collections.Counter(n for t in s.body for n in syntax.names_stored(t))
        carried = sorted(n for n, k in inside.items()
                         if self.definitions[n] > k or n in self.params)
        kept = {n: self.namer.fresh(f"{n}_kept") for n in carried}
        body = [syntax.assign(kept[n], syntax.name(n)) for n in carried]
        body += self.block(s.body, top=False)
        error = self.shapes_differ(s, "this while loop: a name it carries has items of "
                                   "another shape after a pass than before")
        body += [syntax.located(syntax.assign(n, syntax.call(
            self.ctx.runtime("batch_select"), [syntax.name(active), syntax.name(n),
                                               syntax.name(kept[n]), syntax.copied(error)])), s)
                 for n in carried]
        body.append(syntax.assign(active, syntax.call(self.numpy_attr("logical_and"), [
            syntax.name(active), syntax.copied(s.test)])))
        loop = syntax.located(gast.While(test=syntax.call(self.numpy_attr("any"), [
            syntax.name(active)]), body=body, orelse=[]), s)
        start = syntax.located(syntax.assign(active, syntax.call(
            self.numpy_attr("logical_and"), [syntax.copied(s.test), syntax.call(
                self.numpy_attr("ones"), [self.batch_size(), syntax.name(
                    self.ctx.bind("bool", obj=bool))])])), s)
        return [start, loop]

    def size_after(self, s):
        """Whether `s` (a statement of the function's body) gives the seed its value, after
        which the size of the batch is known."""
        return any(n in self.seeds for n in syntax.names_stored(s))

    def refuse(self, s, what, fix):
        raise S2SADError(f"{self.src.where(s)}: vmap cannot batch {what}; {fix}\n    "
                         f"{self.src.line_text(s).strip()}")

    def assign(self, s):
        target = s.targets[0].id
        if target in self.seeds:
            s.value = syntax.call(self.ctx.runtime("jacobian_seed"), [
                syntax.copied(self.seeds[target])])
            return [s]
        step = self.scaling.get(id(s))
        if step is not None:
            return batch_scaling.emit(self, step, s)
        if target not in self.batched:
            op = self.ops[s]
            rule = self.rule_of(op)
            if rule is not None and rule.unbatched and self.any_batched(s.value):
                value = self.by_rule(rule, op)      # (of one item: `np.shape(x)`)
                if value is None:
                    self.refuse(s, f"{self.named(op)} of a batched value here",
                                "pass its arguments by position")
                s.value = value
                return [s]
            for c in self.type_calls(s.value):     # the type of one item
                if self.any_batched(c.args[0]):
                    c.func = syntax.name(self.ctx.runtime("batch_element_type"))
            return [s]
        if not self.any_batched(s.value):
            s.value = self.like(s.value)
            return [s]
        op = self.ops[s]
        value = self.batched_value(op, s)
        if value is None:
            value = self.loop(op, s)
            s = syntax.located(syntax.assign(target, value), s)
            note = syntax.comment(f"batched by a loop: {self.named(op)} has no batching "
                                  "rule")
            return [note, s]
        s.value = value
        return [s]

    def batched_value(self, op, s):
        """The batched value of `s` by its primitive's rule, or None (no rule)."""
        node = s.value
        if op.form == COPY:
            return node
        if op.form == PACK:
            return syntax.replaced(node, {id(a): self.like(a) for a in op.args
                                    if not self.is_batched(a) and not isinstance(
                                        a, gast.Constant)})
        facts = registry.helper_facts(op.prim) if op.prim is not None else None
        if facts is not None:       # (never read as a user's code)
            return self.helper_call(facts, node) if self.rule_of(op) is None else self.by_rule(
                self.rule_of(op), op)
        if op.form == USER and self.rule_of(op) is None:
            return self.user_call(op, node)
        if op.form == NONDIFF and op.prim is None:
            if isinstance(node, gast.Compare) and len(node.ops) == 1:
                return self.elementwise(node, [node.left, node.comparators[0]])
            if isinstance(node, gast.UnaryOp):
                return syntax.call(self.numpy_attr("logical_not"), [node.operand])
            return None
        if op.prim is None:
            return None
        rule = self.rule_of(op)
        if rule is not None:
            return self.by_rule(rule, op)
        if op.prim is operator.getitem:
            return self.index(node)
        record = registry.primitive(op.prim)
        if op.variant is not None and op.variant.elementwise:
            return self.elementwise(node, [a for a in op.bound.values()])
        if record is not None and record.reduction and op.bound is not None:
            return self.reduction(op, node)
        return None

    def helper_call(self, facts, node):
        """A runtime helper's call of a batch: by `elementwise` (`HelperFacts`) where it
        reads each batched argument element by element, else None (item by item)."""
        batched = [i for i, a in enumerate(node.args) if self.is_batched(a)]
        if not isinstance(node, gast.Call) or not batched or any(
                i not in facts.elementwise for i in batched) or any(
                self.is_batched(k.value) for k in node.keywords):
            return None
        return self.elementwise(node, [node.args[i] for i in facts.elementwise
                                       if i < len(node.args)])

    def elementwise(self, node, operands):
        """`node` with each batched operand padded to the axes the others may have."""
        swap = {}
        for x in operands:
            if not self.is_batched(x):
                continue
            others = [o for o in operands if isinstance(o, gast.Name) and o.id != x.id
                      and self.kinds[o] != SCALAR]
            if not others:
                continue
            ranks = [self.rank(o) for o in others]
            rank = ranks[0] if len(ranks) == 1 else syntax.call(
                self.ctx.bind("max", obj=max), ranks)
            swap[id(x)] = syntax.call(self.ctx.runtime("batch_pad"), [
                syntax.copied(x), rank])
        return syntax.replaced(node, swap)

    def rank(self, o):
        ndim = syntax.call(self.numpy_attr("ndim"), [syntax.copied(o)])
        return syntax.binop(ndim, gast.Sub(), syntax.const(1)) if self.is_batched(o) else ndim

    def numpy_attr(self, attr):
        return gast.Attribute(value=syntax.name(self.ctx.bind("np", obj=np)),
                              attr=attr, ctx=gast.Load())

    def reduction(self, op, node):
        bound = op.bound
        if "axis" not in bound or "a" not in bound or not self.is_batched(bound["a"]) or any(
                self.is_batched(v) for p, v in bound.items() if p != "a"):
            return None
        axis = bound["axis"]
        if isinstance(axis, gast.Constant) and isinstance(axis.value, int):
            new = syntax.const(axis.value + 1 if axis.value >= 0 else axis.value)
        else:
            new = syntax.call(self.ctx.runtime("batch_axis"), [syntax.copied(axis),
                                                                syntax.copied(bound["a"])])
        if isinstance(node, gast.Call) and any(a is axis for a in node.args):
            return syntax.replaced(node, {id(axis): new})
        if isinstance(node, gast.Call) and any(k.value is axis for k in node.keywords):
            return syntax.replaced(node, {id(axis): new})
        if not isinstance(node, gast.Call):
            return None
        out = syntax.replaced(node, {})
        out.keywords = list(out.keywords) + [gast.keyword(arg="axis", value=new)]
        return out

    def index(self, node):
        """`x[i]` of each item: `x[:, i]` for a batched array and an index that is the
        same for every item; a batched container's item as it is."""
        x, index = node.value, node.slice
        if self.any_batched(index):
            if (not self.is_batched(x) and self.kinds[x] == ARRAY
                    and isinstance(index, gast.Name)):
                return node     # a gather: one row of x for each item
            if (self.kinds[x] == ARRAY and isinstance(index, gast.Name)
                    and self.kinds[index] in (SCALAR, UNKNOWN)):     # an element of each item
                return syntax.call(self.ctx.runtime("batch_take"), [syntax.copied(x), index])
            return None
        kind = self.kinds[x]
        if kind not in (SCALAR, ARRAY) or (isinstance(index, gast.Constant)
                                           and isinstance(index.value, str)):
            if isinstance(kind, type) and issubclass(kind, (tuple, list, dict)):
                return node
            return syntax.call(self.ctx.runtime("batch_getitem"), [
                syntax.copied(x), operations.index_value(syntax.copied(index))])
        every = gast.Slice(lower=None, upper=None, step=None)
        if isinstance(index, gast.Tuple):
            new = syntax.tuple_([every] + list(index.elts))
        elif isinstance(index, gast.Name) and self.kinds[index] != SCALAR:
            return gast.Subscript(value=x, slice=syntax.call(
                self.ctx.runtime("batch_index"), [index]), ctx=gast.Load())
        else:
            new = syntax.tuple_([every, index])
        return gast.Subscript(value=x, slice=new, ctx=gast.Load())

    def by_rule(self, rule, op):
        args, keywords = operations.call_arguments(op, self.src)
        bound = rule.variant.bind(args, keywords)
        if bound is None:
            return None
        subst = dict(bound)
        for p, a in bound.items():
            subst[f"{p}_axis"] = syntax.const(0 if self.is_batched(a) else None)
        for free, obj in rule.template.free.items():
            subst[free] = template_name(self.ctx.bind(free, obj=obj), obj)
        return syntax.substitute(rule.template.tree, subst)

    def user_call(self, op, node):
        """`g(a, b)`: `g_batched(a, b)`, `g`'s own batched version (along the arguments
        batched here), which gives every result its batch axis."""
        if node.keywords and any(self.is_batched(k.value) for k in node.keywords):
            return None
        fn, args, kwargs = operations.python_function(op.prim)
        batched = [i for i, a in enumerate(node.args) if self.is_batched(a)]
        arg_types = operations.argument_types(op.prim, node.args, self.kinds)
        wrt = tuple(i + len(args) for i in batched)
        callee = Callee(fn, Variant.BATCHED, wrt, arg_types, tuple(args), dict(kwargs),
                        len(node.args))
        name = self.ctx.call(callee, f"{source.identifier(fn)}_batched")
        if marks.RECORD.of(fn) is not None:
            self.ctx.lifted.append((fn, wrt, None))
        return syntax.call(name, [syntax.copied(a) for a in node.args], node.keywords)

    def loop(self, op, s):
        """`_s2s_batch_loop(f, n, args, axes, ...)`: the primitive of `s` item by item."""
        warnings.warn(BatchingLoopWarning(
            f"{self.src.where(s)}: vmap applies {self.named(op)} item by item, in a "
            "Python loop: it has no batching rule (s2sad.rules.registry.batching "
            "declares one)"), stacklevel=outside_stacklevel())
        self.looped.append(self.src.where(s))
        node = s.value
        args, keywords = operations.call_arguments(op, self.src) if op.prim is not None else (None, None)
        if op.prim is not None and isinstance(node, gast.Call) and args[:1] == [
                getattr(node.func, "value", None)]:     # a method
            fn = syntax.call(self.ctx.runtime("batch_method"), [syntax.const(node.func.attr)])
        elif op.prim is not None:
            fn = syntax.name(self.ctx.bind(_identifier(op.prim), obj=op.prim))
        elif isinstance(node, gast.Call):
            fn, args, keywords = node.func, list(node.args), {
                k.arg: k.value for k in node.keywords}
        else:
            self.refuse(s, "this expression", "write it as a function call")
        call = [fn, self.batch_size(),
                syntax.tuple_([syntax.copied(a) for a in args]),
                syntax.tuple_([syntax.const(0 if self.is_batched(a) else None)
                               for a in args])]
        if keywords:
            call += [gast.Dict(keys=[syntax.const(k) for k in keywords],
                               values=[syntax.copied(v) for v in keywords.values()]),
                     gast.Dict(keys=[syntax.const(k) for k in keywords],
                               values=[syntax.const(0 if self.is_batched(v) else None)
                                       for v in keywords.values()])]
        return syntax.call(self.ctx.runtime("batch_loop"), call)

    def named(self, op):
        if op.prim is not None:
            return getattr(op.prim, "__qualname__", None) or repr(op.prim)
        return "this call"

    def output(self, value):
        if isinstance(value, (gast.Tuple, gast.List)):
            return type(value)(elts=[self.output(e) for e in value.elts], ctx=gast.Load())
        if self.is_batched(value):
            return value
        return self.like(value)


#: The random generators whose methods draw (and advance the generator's state).
GENERATORS = (np.random.Generator, np.random.RandomState, random.Random)


def draws(prim):
    """Whether `prim` is a method of a random generator (`np.random.normal` is one of
    NumPy's global `RandomState`), whose each call draws anew."""
    return isinstance(getattr(prim, "__self__", None), GENERATORS)


def draws_in(fn, seen):
    """The lines of user function `fn`, or of a function it calls, that draw from a
    random generator s2sad can resolve (`seen`: the functions already read)."""
    if fn in seen:
        return []
    seen.add(fn)
    try:
        src = source.capture(fn, copy=False)
    except S2SADError:
        return []
    out = []
    for call in (n for n in syntax.walk(src.node) if isinstance(n, gast.Call)):
        prim = src.resolve(call.func)
        if draws(prim):
            out.append(src.where(call))
        elif prim is not source.MISSING and operations.python_function(prim):
            out += draws_in(operations.python_function(prim)[0], seen)
    return out


def _identifier(prim):
    name = getattr(prim, "__name__", None) or type(prim).__name__
    return name if name.isidentifier() else "prim"


