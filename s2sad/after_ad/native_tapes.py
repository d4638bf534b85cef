"""NativeTapes: the fused gradient as code Numba compiles (`backend="numba"`): tapes of
numbers as arrays, and runtime helpers of numbers as the numbers they give. (In forward
mode, `f_jvp` for `jvp(..., backend="numba")`, only the helpers, and a list tape of the
gradient code it differentiates appended to in place: it has no tape of its own.)

Takes the fused gradient `f_grad` or `f_value_and_grad` (without its guard: Numba
dispatches on types itself) and leaves the same function where

- each loop's tape is one array per type of the values it records (`float64`, `int64`,
  `bool`), one column per value, with a count of the rows written: allocated once before
  a `for` over `range` (its trip count known), else grown by doubling; the arrays it
  records, and values of a type the number types cannot tell, on a list Numba types
  from what is appended to it (one tuple an iteration); the reversed loop reads the rows
  from the last written down;
- a name bound to `None` before a loop so that the tape can record it on a path that
  did not assign it is bound to a zero of its type;
- the helpers of `s2sad.rules.runtime` whose arguments are numbers (or elements and
  arrays of known type) are written as the NumPy they mean (`_s2s_snapshot(t)` is `t`,
  `_s2s_take(g, i)` is `g[i]`), and `_s2s_like(a)`, a stand-in for a shape, is `a`;
- a rule's quotient whose denominator may be a number 0, `n / (d or np.float64(d))`,
  is `np.divide(n, d)`: Numba's `/` raises at 0, as Python's does, and its `np.divide`
  gives inf or nan, as NumPy's does;
- an adjoint times a value divided by another (`g * x / y`, the adjoint of a
  division) is the adjoint times the quotient (`g * (x / y)`): the division leaves the
  chain of adjoints a reversed loop carries from one iteration to the next (the result
  may differ from the Python backend's in the last bits);
- consecutive accumulations into one place whose adjoints are all multiples of one
  adjoint (`u_bar[i] += t_bar * a`, then `u_bar[i] += s_bar * b` with `s_bar = -t_bar
  * c`) are one, the adjoint times the sum of the multiples (`u_bar[i] += t_bar * (a -
  c * b)`): the adjoint a reversed loop carries through an array then passes through
  one multiplication and one addition an iteration, the rest computed beside it;
- the copy of an array the code has just made with NumPy (`np.copy(a)` after
  `a = np.zeros_like(x)`) is left out;
- a call of a Python function of the user's calls it through a binding of the
  derivative, which the driver compiles with `numba.njit` (driver.CompiledDerivative).

The types are those of `analysis.number_types`. What is left that Numba cannot compile
is refused by the next pass (after_ad/native_check.py).

>>> import math
>>> from s2sad import driver, pipeline
>>> def babysqrt(x):
...     t = (1 + x) / 2
...     for i in range(1000):
...         t = (t + x / t) / 2
...     return t
>>> print(pipeline.stage_source(babysqrt, "native_tapes", arg_types={"x": float}))
def babysqrt_grad(x):
    t = (1 + x) / 2
    _s2s_tape = np.empty(len(range(1000)))
    _s2s_rows = 0
    for i in range(1000):
        _s2s_tape[_s2s_rows] = t
        _s2s_rows += 1
        t = (t + x / t) / 2
    t_bar = 1.0
    x_bar = 0.0
    # grad of: for i in range(1000):
    for _s2s_row in range(_s2s_rows - 1, -1, -1):
        t = _s2s_tape[_s2s_row]
        # grad of: t = (t + x / t) / 2
        t_3_bar = t_bar / 2
        x_bar = x_bar + t_3_bar / t
        t_bar = t_3_bar - t_3_bar * (x / (t * t))
    # grad of: t = (1 + x) / 2
    x_bar = x_bar + t_bar / 2
    return x_bar
<BLANKLINE>
"""
import inspect

import gast
import numpy as np

from .. import marks
from .. import syntax
from ..ad.tapes import own_statements
from ..analysis.number_types import ARRAY, BOOL, FLOAT, INT, NumberTypes
from ..errors import NonScalarOutputError
from ..rules import runtime
from . import native_lists

#: The dtype of the tape of each type of value (arrays and unknown types: `OBJECTS`).
_DTYPES = {FLOAT: "float64", INT: "int64", BOOL: "bool_"}
_ZEROS = {FLOAT: 0.0, INT: 0, BOOL: False, None: 0.0}
#: The column type of the values a loop's tape holds as they are (arrays, and values of
#: a type s2sad cannot tell): a list of them, or of tuples of them, which Numba types.
OBJECTS = "objects"
#: The first capacity of a tape whose trip count is not known before its loop.
GROWN_FROM = 16


def run(fn, ctx):
    """The pass (the numba backend's)."""
    _ellipses_as_slices(fn, ctx)
    for _ in range(2):      # a helper's result written natively may type another's argument
        _NativeForms(ctx, number_types(fn, ctx)).rewrite(fn)
    if ctx.reverse is None:     # forward mode: no tape, no adjoint
        return native_lists.zeros(fn, ctx, _NativeForms(ctx, None).helper,
                                  number_types(fn, ctx))
    tapes = [plan.tape for plan in ctx.reverse.loops if plan.mode in ("start", "end")]
    for tape in sorted(tapes, key=lambda t: -_depth(fn, t)):   # inner loops' tapes first
        _Tape(fn, tape, ctx).rewrite()
    types = number_types(fn, ctx)
    adjoints = set(ctx.reverse.adjoints.values())
    factored = False
    for block in syntax.blocks(fn.body):
        factored |= _factor_accumulations(block, adjoints, types, ctx.resolve)
    while factored:     # the adjoints the factored terms no longer read go
        read = set(syntax.names_loaded(fn))
        factored = False
        for block in syntax.blocks(fn.body):
            kept = [s for s in block if not (
                isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name)
                and s.targets[0].id in adjoints and s.targets[0].id not in read)]
            factored |= len(kept) < len(block)
            block[:] = kept
    for s in syntax.statements(fn):
        if (marks.INIT.of(s) or _binds_none(s)) and isinstance(
                s.targets[0], gast.Name):
            s.value = syntax.const(_ZEROS.get(types.of_name(s.targets[0].id), 0.0))
    native_lists.rewrite(fn, ctx, _NativeForms(ctx, types).helper, types)
    _prune_objects(fn)
    return fn


def _prune_objects(fn):
    """`fn` with each value of a tape of objects (`_s2s_tape_objects.append((a, b))`, read
    back by `a, b = _s2s_tape_objects[_s2s_row]`) that no statement which can run after a
    read-back reads left out: the lists whose adjoints the Python backend's helpers built
    from them, which native_lists' lists of the same length do not read."""
    pushes, reads = {}, {}

    def visit(stmts, chain):
        for k, s in enumerate(stmts):
            here = chain + [(stmts, k)]
            v = getattr(s, "value", None)
            if (isinstance(s, gast.Expr) and isinstance(v, gast.Call) and len(v.args) == 1
                    and isinstance(v.func, gast.Attribute) and v.func.attr == "append"
                    and syntax.is_name(v.func.value)):
                pushes.setdefault(v.func.value.id, []).append(v)
            if (isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Tuple)
                    and isinstance(v, gast.Subscript) and syntax.is_name(v.value)
                    and v.value.id.startswith("_s2s_tape")):
                reads.setdefault(v.value.id, []).append((s, here))
            for field in ("body", "orelse"):
                if type(getattr(s, field, None)) is list:
                    visit(getattr(s, field), here)
    visit(fn.body, [])
    for tape, unpacks in reads.items():
        width = len(unpacks[0][0].targets[0].elts)
        calls = pushes.get(tape, [])
        if not calls or any(not isinstance(c.args[0], gast.Tuple) or len(c.args[0].elts)
                            != width for c in calls) or any(
                len(s.targets[0].elts) != width for s, _ in unpacks):
            continue
        unread = set(range(width))
        for s, here in unpacks:
            later = []
            for depth, (stmts, k) in enumerate(here):
                later += stmts[k + 1:]
                if depth < len(here) - 1 and isinstance(stmts[k], (gast.For, gast.While)):
                    later += stmts[k].body + stmts[k].orelse     # (its next iterations)
            loaded = {n.id for t in later for n in syntax.name_nodes(t)
                      if isinstance(n.ctx, gast.Load)}
            unread &= {k for k, e in enumerate(s.targets[0].elts)
                       if isinstance(e, gast.Name) and e.id not in loaded}
        kept = [k for k in range(width) if k not in unread] or [0]
        if len(kept) == width:
            continue
        for c in calls:
            items = [c.args[0].elts[k] for k in kept]
            c.args[0] = items[0] if len(items) == 1 else syntax.tuple_(items)
        for s, _ in unpacks:
            names = [s.targets[0].elts[k] for k in kept]
            s.targets[0] = names[0] if len(names) == 1 else syntax.tuple_(names, store=True)


def _ellipses_as_slices(fn, ctx):
    """`a[...]` as `a[:]`, and an index `...` given to a helper as `slice(None)`: Numba
    has no indexing by Ellipsis, and its arrays have an axis at least (a 0-d value is a
    number there)."""
    for n in syntax.walk(fn):
        if isinstance(n, gast.Subscript) and _is_ellipsis(n.slice):
            n.slice = gast.Slice(lower=None, upper=None, step=None)
        elif isinstance(n, gast.Call):
            n.args = [syntax.call(ctx.bind("slice"), [syntax.const(None)])
                      if _is_ellipsis(a) else a for a in n.args]


def _is_ellipsis(e):
    return isinstance(e, gast.Constant) and e.value is Ellipsis


def _depth(fn, tape):
    """How many loops the statement making `tape` is in."""
    def depth(stmts, d):
        for s in stmts:
            if isinstance(s, gast.Assign) and syntax.is_name(s.targets[0], tape):
                return d
            inner = d + isinstance(s, (gast.For, gast.While))
            for field in ("body", "orelse"):
                found = depth(getattr(s, field, None) or [], inner)
                if found is not None:
                    return found
        return None
    return depth(fn.body, 0) or 0


def number_types(fn, ctx, skip=()):
    dtypes = {p: np.dtype(d) for p, (d, _) in (ctx.patterns or {}).items()}
    return NumberTypes(fn, ctx.types, ctx.resolve, dtypes, skip, dict(ctx.options.ndims))


def _binds_none(s):
    return (isinstance(s, gast.Assign) and isinstance(s.value, gast.Constant)
            and s.value.value is None)


class _NativeForms:
    """The runtime helpers of numbers written as what they give."""

    def __init__(self, ctx, types):
        self.ctx, self.types = ctx, types
        self.adjoints = set(ctx.reverse.adjoints.values()) if ctx.reverse else set()

    def helper(self, e):
        """The name of the runtime helper `e` calls, or None."""
        if not (isinstance(e, gast.Call) and isinstance(e.func, gast.Name)):
            return None
        obj = self.ctx.bindings.get(e.func.id)
        name = getattr(obj, "__name__", None)
        return name if name and getattr(runtime, name, None) is obj else None

    def rewrite(self, fn):
        self.lists = native_lists.appended(fn, self.helper)
        for s in syntax.statements(fn):
            for field in ("value", "test"):
                if isinstance(getattr(s, field, None), gast.AST):
                    setattr(s, field, self.expression(getattr(s, field)))
        self.copies = []    # the copies `puts` makes
        for block in syntax.blocks(fn.body):
            block[:] = [new for s in block for new in self.statement(s)]
            _drop_fresh_copies(block, self.ctx)
        _drop_owned_copies(fn, self.copies, self.ctx)
        return fn

    def statement(self, s):
        """`s`, or the statements that compute a helper's result in its place."""
        if not (isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name)):
            return [s]
        target, call, kind = s.targets[0].id, s.value, self.helper(s.value)
        of = self.types.of
        if kind == "unindex" and len(call.args) == 3 and of(call.args[1]) == ARRAY \
                and of(call.args[0]) in (FLOAT, INT) and of(call.args[2]) == INT:
            g, x, i = call.args
            zeros = syntax.call(syntax.attribute(self.numpy(), "zeros_like"), [x])
            put = syntax.assign(gast.Subscript(value=syntax.name(target), slice=i,
                                               ctx=gast.Store()), g)
            return [syntax.located(syntax.assign(target, zeros), s), syntax.located(put, s)]
        puts = self.puts(target, call)
        if puts is not None:
            return [syntax.located(new, s) for new in puts]
        if kind == "append" and syntax.is_name(call.args[0], target) and (
                target.startswith("_s2s_") or target in self.lists):
            # (forward mode over the numba backend's gradient code: its tape of arrays,
            # a list Numba types from the values appended to it in this function; in
            # forward mode, a list of the function's and its tangent)
            grow = syntax.call(syntax.attribute(syntax.name(target), "append"), [call.args[1]])
            return [syntax.located(gast.Expr(value=grow), s)]
        return [s]

    def puts(self, target, e):
        """`target = a + _s2s_unindex(g, x, i) + _s2s_unindex(h, x, j)` (numbers `g`,
        `h` added at ints `i`, `j` of the adjoint `target` of `x`, `a` that adjoint or
        left out) as a copy of `a` (zeros if left out) and the numbers added in place,
        `target[i] += g`: one array, where each term is one and each sum another. None
        for any other statement."""
        terms, of = [], self.types.of
        while isinstance(e, gast.BinOp) and isinstance(e.op, gast.Add):
            terms.append(e.right)
            e = e.left
        terms.append(e)
        adjoint_of = {a: n for n, a in (self.ctx.reverse.adjoints.items()
                                        if self.ctx.reverse else ())}
        x = adjoint_of.get(target)
        put = [t for t in terms if self.helper(t) == "unindex" and len(t.args) == 3
               and not t.keywords and syntax.is_name(t.args[1], x)
               and of(t.args[0]) in (FLOAT, INT, BOOL) and of(t.args[2]) == INT]
        rest = [t for t in terms if not any(t is u for u in put)]
        if not put or len(terms) < 2 or len(rest) > 1 or of(put[0].args[1]) != ARRAY or (
                rest and not (syntax.is_name(rest[0], target) and of(rest[0]) == ARRAY)):
            return None
        np_ = self.numpy()
        made = (syntax.call(syntax.attribute(np_, "copy"), [rest[0]]) if rest else
                syntax.call(syntax.attribute(np_, "zeros"), [syntax.attribute(
                    syntax.name(x), "shape")]))
        out = [syntax.assign(target, made)]
        if rest:
            self.copies.append(out[0])
        for t in reversed(put):
            g, _, i = t.args
            out.append(gast.AugAssign(target=gast.Subscript(
                value=syntax.name(target), slice=i, ctx=gast.Store()), op=gast.Add(),
                value=g))
        return out

    def numpy(self):
        return syntax.name(self.ctx.bind("np", obj=np))

    def expression(self, e):
        """`e`, its parts first, with each helper of known types as what it gives."""
        return self.native(syntax.rebuilt(e, self.expression))

    def native(self, e):
        if (isinstance(e, gast.BinOp) and isinstance(e.op, gast.Div)
                and any(isinstance(n, gast.BoolOp) for n in syntax.walk(e.right))):
            # a rule's `n / (d or np.float64(d))`: Numba's `/` raises at 0, as Python's
            # does (its error model), its np.divide gives inf or nan, as NumPy's does
            d, n = _first_operand(e.right), e.left
            if (isinstance(n, gast.BinOp) and isinstance(n.op, gast.Mult)
                    and syntax.is_name(n.left) and n.left.id in self.adjoints):
                # (the adjoint off the division, as below)
                return gast.BinOp(left=n.left, op=gast.Mult(), right=syntax.call(
                    syntax.attribute(self.numpy(), "divide"), [n.right, d]))
            return syntax.call(syntax.attribute(self.numpy(), "divide"), [n, d])
        if (isinstance(e, gast.BinOp) and isinstance(e.op, gast.Div)
                and isinstance(e.left, gast.BinOp) and isinstance(e.left.op, gast.Mult)
                and syntax.is_name(e.left.left) and e.left.left.id in self.adjoints
                and not self.adjoints & set(syntax.names_loaded(e.left.right))
                and not self.adjoints & set(syntax.names_loaded(e.right))):
            # g * x / y as g * (x / y): the division off the chain of adjoints, which a
            # reversed loop carries from one iteration to the next
            e = gast.BinOp(left=e.left.left, op=gast.Mult(), right=gast.BinOp(
                left=e.left.right, op=gast.Div(), right=e.right))
        kind, of = self.helper(e), self.types.of
        if isinstance(e, gast.Call) and kind is None:
            fn = self.ctx.resolve(e.func)
            if inspect.isfunction(fn) and not isinstance(e.func, gast.Name) or (
                    isinstance(e.func, gast.Name) and e.func.id not in self.ctx.bindings
                    and inspect.isfunction(fn)):
                e.func = syntax.name(self.ctx.bind(fn.__name__, obj=fn))
            return e
        numbers = (FLOAT, INT, BOOL)
        if kind == "snapshot" and of(e.args[0]) in numbers or kind == "like":
            return e.args[0]        # (`like`'s Numba version is the value itself)
        if kind == "zeros_like" and of(e.args[0]) in numbers:
            return syntax.const(0.0)
        if kind == "zeros_like" and isinstance(e.args[0], gast.Constant) and \
                e.args[0].value is None:
            return syntax.const(None)   # the tangent of a name a path leaves unbound
        if kind == "unbroadcast" and of(e.args[0]) in numbers and of(e.args[1]) in numbers:
            return e.args[0]
        if kind == "take" and of(e.args[0]) == ARRAY and of(e.args[1]) == INT:
            return gast.Subscript(value=e.args[0], slice=e.args[1], ctx=gast.Load())
        if kind == "own" and of(e.args[1]) == ARRAY:
            np_ = self.numpy()
            if of(e.args[0]) == ARRAY:
                return syntax.call(syntax.attribute(np_, "copy"), [e.args[0]])
            if of(e.args[0]) in numbers:
                shape = syntax.attribute(e.args[1], "shape")
                return syntax.call(syntax.attribute(np_, "full"), [shape, e.args[0]])
        if isinstance(e, gast.IfExp) and self.helper(e.orelse) == "seed":
            # the seed of a number, or the helper's overload for Numba's type (which
            # refuses an array of more than one element, and takes a 0-d one)
            y = e.orelse.args[0]
            axes = self.ctx.value_kinds.ndim.get(y.id) if syntax.is_name(y) else None
            if of(y) == ARRAY and type(axes) is int and axes > 0:
                raise NonScalarOutputError(
                    f"{self.ctx.src.where(self.ctx.src.node)}: grad needs a function with a "
                    f"scalar output, but {self.ctx.src.name}() returns an array. Use "
                    "s2sad.vjp (Python backend) for non-scalar outputs, or reduce the "
                    "output (e.g. with np.sum)")
            return syntax.const(1.0) if of(e.orelse.args[0]) in numbers else e.orelse
        return e


def _first_operand(e):
    """`e`, its parts first, with each `a or b` as `a`."""
    e = syntax.rebuilt(e, _first_operand)
    return e.values[0] if isinstance(e, gast.BoolOp) else e


class _Tape:
    """One list tape and the loops that fill and read it, rewritten with arrays."""

    def __init__(self, fn, tape, ctx):
        self.fn, self.tape, self.ctx = fn, tape, ctx
        self.namer = ctx.namer

    def rewrite(self):
        made, pushes, reading = self._find()
        if made is None or reading is None or not pushes:
            return
        # (the types of the values recorded, not of what the reversed loop reads back)
        self.types = number_types(self.fn, self.ctx, skip=[reading[1]])
        block, created, loop = made
        values = _values(pushes[0][1].value.args[0])
        # what the reversed loop no longer reads (a stand-in for a shape, now a number)
        reversed_loop = reading[1]
        read = set(syntax.names_loaded(syntax.if_(syntax.const(True), reversed_loop.body)))
        unpacked = syntax.names_stored(reversed_loop.target)
        kept = [i for i, n in enumerate(unpacked) if n in read] or [0]
        outer = self._outermost_loop(created)
        _reuse_reads(loop.body, self.ctx)
        copies = _copies(self.fn, reversed_loop.target)
        pushed = [[_canonical(values_of(p)[i], copies) for i in kept] for _, p in pushes]
        # a value read back from another column, or the loop's index computed from the row
        index = self._index_from_row(loop) if outer is None else None
        stored, same = [], {}
        for pos in range(len(kept)):
            texts = [syntax.unparse(vals[pos]) for vals in pushed]
            if index is not None and set(texts) == {index[0]}:
                same[pos] = "row"
                continue
            twin = next((q for q in stored
                         if [syntax.unparse(vals[q]) for vals in pushed] == texts), None)
            if twin is not None:
                same[pos] = twin
            else:
                stored.append(pos)
        columns = {}        # the type of each stored value
        for pos in stored:
            v = values[kept[pos]]
            t = self.types.of(v)
            if t in (ARRAY, None) and not isinstance(v, gast.Constant):
                columns[pos] = OBJECTS
            else:
                columns[pos] = t if t in _DTYPES else FLOAT
        groups = {}         # type -> [stored positions], floats first, the list last
        for t in sorted(set(columns.values()), key=[*_DTYPES, OBJECTS].index):
            groups[t] = [pos for pos in stored if columns[pos] == t]
        # a tape made in an iteration of an outer loop is one stack for all of them: its
        # name holds the row the iteration starts at, which the outer tape records
        start = None
        if outer is not None:
            start = self.namer.fresh("_s2s_start")
            for n in syntax.name_nodes(self.fn):
                if n.id == self.tape:
                    n.id = start
        names = {t: self.tape if k == 0 else self.namer.fresh(f"{self.tape}_{t}")
                 for k, t in enumerate(groups)}
        rows = self.namer.fresh("_s2s_rows")
        np_ = self.ctx.bind("np", obj=np)
        known = self._trip_count(loop) if outer is None else None
        before = []
        for t, cols in groups.items():
            if t == OBJECTS:
                before.append(syntax.assign(names[t], gast.List(elts=[], ctx=gast.Load())))
                continue
            length = known if known is not None else str(GROWN_FROM)
            shape = length if len(cols) == 1 else f"({length}, {len(cols)})"
            dtype = "" if t == FLOAT else f", dtype={np_}.{_DTYPES[t]}"
            before.append(syntax.assign(names[t], syntax.parse_expr(
                f"{np_}.empty({shape}{dtype})")))
        before.append(syntax.assign(rows, syntax.const(0)))
        before = [syntax.located(s, created) for s in before]
        i = block.index(created)
        if outer is None:
            block[i:i + 1] = before
        else:
            block[i] = syntax.located(syntax.assign(start, syntax.name(rows)), created)
            j = next(k for k, s in enumerate(self.fn.body) if s is outer)
            self.fn.body[j:j] = before
        for stmts, push in pushes:
            writes = [] if known is not None else self._grow(groups, names, rows, np_)
            values = [values_of(push)[i] for i in kept]
            for t, cols in groups.items():
                if t == OBJECTS:
                    item = [syntax.copied(values[c]) for c in cols]
                    writes.append(gast.Expr(value=syntax.call(
                        syntax.attribute(syntax.name(names[t]), "append"),
                        [item[0] if len(item) == 1 else syntax.tuple_(item)])))
                    continue
                for k, c in enumerate(cols):
                    where = syntax.name(rows) if len(cols) == 1 else syntax.tuple_(
                        [syntax.name(rows), syntax.const(k)])
                    cell = gast.Subscript(value=syntax.name(names[t]), slice=where,
                                          ctx=gast.Store())
                    writes.append(syntax.assign(cell, syntax.copied(values[c])))
            writes.append(gast.AugAssign(target=syntax.name(rows, store=True),
                                         op=gast.Add(), value=syntax.const(1)))
            j = stmts.index(push)
            stmts[j:j + 1] = [syntax.located(s, push) for s in writes]
        self._read_back(reading, groups, names, rows, [unpacked[i] for i in kept], start,
                        same, index)

    def _index_from_row(self, loop):
        """(the index, the expression of it in `row`) of a `for` over `range` whose
        iteration k writes row k (each iteration writes one row, and a break leaves a
        first part of them), when the bounds say it without names: `range(n)`,
        `range(a, b, s)` with numbers for `a` and `s`."""
        it = getattr(loop, "iter", None)
        if not (isinstance(loop, gast.For) and isinstance(loop.target, gast.Name)
                and isinstance(it, gast.Call) and self.ctx.resolve(it.func) is range
                and not it.keywords and 1 <= len(it.args) <= 3):
            return None
        target = loop.target.id
        if target in syntax.names_stored(syntax.if_(syntax.const(True), loop.body)):
            return None
        if len(it.args) == 1:
            return target, "{row}"
        first = it.args[0]
        step = it.args[2] if len(it.args) == 3 else syntax.const(1)
        if not all(isinstance(a, gast.Constant) and type(a.value) is int
                   for a in (first, step)):
            return None
        return target, f"{first.value} + {{row}} * {step.value}"

    def _outermost_loop(self, stmt):
        """The top-level loop of the function `stmt` is in, or None."""
        for top in self.fn.body:
            inside = syntax.statements(top)
            if any(s is stmt for s in inside):
                return top if any(isinstance(s, (gast.For, gast.While)) and any(
                    t is stmt for t in syntax.statements(s)) for s in inside) else None
        return None

    def _find(self):
        """(block, creation, filling loop), [(block, push)], the reversed loop."""
        made, pushes, reading, filling = None, [], None, None
        for block in syntax.blocks(self.fn.body):
            for s in block:
                if (isinstance(s, gast.Assign) and syntax.is_name(s.targets[0], self.tape)
                        and isinstance(s.value, gast.List)):
                    made = (block, s)
                elif (isinstance(s, gast.Expr) and isinstance(s.value, gast.Call)
                      and isinstance(s.value.func, gast.Attribute)
                      and syntax.is_name(s.value.func.value, self.tape)
                      and s.value.func.attr == "append"):
                    pushes.append((block, s))
                elif (isinstance(s, gast.For) and isinstance(s.iter, gast.Call)
                      and any(syntax.is_name(a, self.tape) for a in s.iter.args)):
                    reading = (block, s)
        if made is None:
            return None, pushes, reading
        inside = {id(p) for _, p in pushes}
        for s in syntax.statements(self.fn):
            if isinstance(s, (gast.For, gast.While)) and s is not (reading or (0, 0))[1]:
                own = {id(n) for n in own_statements(s.body)}
                if own & inside:
                    filling = s
        if filling is None:
            return None, pushes, reading
        return (made[0], made[1], filling), pushes, reading

    def _trip_count(self, loop):
        """`len(range(...))` of a `for` over `range` with atoms for bounds, or None."""
        it = getattr(loop, "iter", None)
        if (isinstance(loop, gast.For) and isinstance(it, gast.Call) and not it.keywords
                and self.ctx.resolve(it.func) is range and all(map(syntax.is_atom, it.args))):
            return f"{self.ctx.bind('len')}({syntax.unparse(it)})"
        return None

    def _grow(self, groups, names, rows, np_):
        """Statements that double the tapes when they are full (the arrays: a list
        grows as it is appended to)."""
        groups = {t: cols for t, cols in groups.items() if t != OBJECTS}
        if not groups:
            return []
        first = names[next(iter(groups))]
        body = []
        for t, cols in groups.items():
            bigger = self.namer.fresh("_s2s_bigger")
            shape = (syntax.parse_expr(f"2 * {rows}") if len(cols) == 1 else
                     syntax.parse_expr(f"(2 * {rows}, {len(cols)})"))
            dtype = "" if t == FLOAT else f", dtype={np_}.{_DTYPES[t]}"
            body += [syntax.assign(bigger, syntax.parse_expr(
                         f"{np_}.empty({syntax.unparse(shape)}{dtype})")),
                     syntax.parse(f"{bigger}[:{rows}] = {names[t]}").body[0],
                     syntax.assign(names[t], syntax.name(bigger))]
        full = syntax.parse_expr(f"{rows} == {self.ctx.bind('len')}({first})")
        return [syntax.if_(full, body)]

    def _read_back(self, reading, groups, names, rows, targets, start, same, index):
        """The reversed loop reading the rows from the last down (to `start`, the name of
        the first row of this run of the loop, and then the rows are `start`); `same`:
        {position: the position whose column it reads, or "row" for the loop's index,
        `index` computed from the row}."""
        block, loop = reading
        row = self.namer.fresh("_s2s_row")
        cells, unpack = {}, None
        for t, cols in groups.items():
            if t == OBJECTS:     # one read of the row, unpacked into the targets
                item = gast.Subscript(value=syntax.name(names[t]), slice=syntax.name(row),
                                      ctx=gast.Load())
                stores = [syntax.name(targets[pos], store=True) for pos in cols]
                unpack = syntax.assign(stores[0] if len(stores) == 1 else
                                       syntax.tuple_(stores, store=True), item)
                for pos in cols:
                    cells[pos] = syntax.name(targets[pos])
                continue
            for k, pos in enumerate(cols):
                where = syntax.name(row) if len(cols) == 1 else syntax.tuple_(
                    [syntax.name(row), syntax.const(k)])
                cells[pos] = gast.Subscript(value=syntax.name(names[t]), slice=where,
                                            ctx=gast.Load())
        reads = [] if unpack is None else [unpack]
        objects = set(groups.get(OBJECTS, ()))
        for pos, target in enumerate(targets):
            if pos in objects:
                continue
            if same.get(pos) == "row":
                value = syntax.parse_expr(index[1].format(row=row))
            else:
                value = syntax.copied(cells[same.get(pos, pos)])
            reads.append(syntax.assign(target, value))
        last = "-1" if start is None else f"{start} - 1"
        back = syntax.parse_expr(f"{self.ctx.bind('range')}({rows} - 1, {last}, -1)")
        new = [syntax.located(syntax.for_(row, back, reads + loop.body), loop)]
        if start is not None:
            new.append(syntax.located(syntax.assign(rows, syntax.name(start)), loop))
        i = block.index(loop)
        block[i:i + 1] = new


def _factor_accumulations(block, adjoints, types, resolve):
    """`block` (a straight run, not the blocks nested in it) with each run of two or
    more accumulations `x += g_k * c_k` into one place, every `g_k` a multiple of one
    adjoint `g` of numbers, as `x += g * (c_1 + c_2 + ...)`; whether it did."""
    multiples = {}      # adjoint name -> (g, its multiple of g: numbers and names)
    k = 0
    factored = False
    while k < len(block):
        s = block[k]
        if _accumulation(s):
            end = k + 1
            while end < len(block) and _accumulation(block[end]) and syntax.unparse(
                    block[end].target) == syntax.unparse(s.target):
                end += 1
            terms = [_multiple(t.value, multiples, adjoints, types, resolve) for t in block[k:end]]
            seeds = {t[0] for t in terms if t is not None}
            if end - k > 1 and None not in terms and len(seeds) == 1:
                total = terms[0][1]
                for _, c in terms[1:]:
                    total = _plus(total, c)
                value = gast.BinOp(left=syntax.name(seeds.pop()), op=gast.Mult(),
                                   right=total)
                block[k:end] = [syntax.located(gast.AugAssign(
                    target=s.target, op=gast.Add(), value=value), s)]
                factored = True
                k += 1
                continue
        if not isinstance(s, (gast.Assign, gast.AugAssign)) or syntax.is_comment(s):
            if not syntax.is_comment(s):
                multiples.clear()
            k += 1
            continue
        target = s.targets[0] if isinstance(s, gast.Assign) else s.target
        made = None
        if isinstance(s, gast.Assign) and isinstance(target, gast.Name) and \
                target.id in adjoints and types.of_name(target.id) == FLOAT:
            made = _multiple(s.value, multiples, adjoints, types, resolve) or (
                target.id, syntax.const(1.0))
        stored = set(syntax.names_stored(target))
        multiples = {n: (g, c) for n, (g, c) in multiples.items() if n not in stored
                     and g not in stored and not stored & set(syntax.names_loaded(c))}
        if made is not None:
            multiples[target.id] = made
        k += 1
    return factored


def _accumulation(s):
    return isinstance(s, gast.AugAssign) and isinstance(s.op, gast.Add)


def _multiple(e, multiples, adjoints, types, resolve):
    """(g, c) when expression `e` is `g * c`, `g` an adjoint of `multiples`, `c` a number
    computed from names, numbers and `math`'s functions, no adjoint nor array element;
    else None."""
    if isinstance(e, gast.Name):
        return multiples.get(e.id)
    if isinstance(e, gast.UnaryOp) and isinstance(e.op, gast.USub):
        m = _multiple(e.operand, multiples, adjoints, types, resolve)
        return m and (m[0], _minus(m[1]))
    if not isinstance(e, gast.BinOp):
        return None
    if isinstance(e.op, (gast.Add, gast.Sub)):
        left = _multiple(e.left, multiples, adjoints, types, resolve)
        right = _multiple(e.right, multiples, adjoints, types, resolve)
        if left is None or right is None or left[0] != right[0]:
            return None
        return left[0], _plus(left[1], right[1] if isinstance(e.op, gast.Add)
                              else _minus(right[1]))
    def factor(x):      # a number the adjoints do not change, computed again later
        return types.of(x) in (FLOAT, INT) and all(
            not isinstance(n, gast.Subscript) and not (
                isinstance(n, gast.Name) and n.id in adjoints) and not (
                isinstance(n, gast.Call) and not _pure(resolve(n.func)))
            for n in syntax.walk(x))
    if isinstance(e.op, gast.Mult):
        for m, x in ((e.left, e.right), (e.right, e.left)):
            got = _multiple(m, multiples, adjoints, types, resolve) if factor(x) else None
            if got is not None:
                return got[0], _times(got[1], x)
    if isinstance(e.op, gast.Div) and factor(e.right):
        got = _multiple(e.left, multiples, adjoints, types, resolve)
        return got and (got[0], _over(got[1], e.right))
    return None


def _minus(c):
    if isinstance(c, gast.Constant):
        return syntax.const(-c.value)
    if isinstance(c, gast.UnaryOp) and isinstance(c.op, gast.USub):
        return c.operand
    return gast.UnaryOp(op=gast.USub(), operand=c)


def _plus(a, b):
    if isinstance(b, gast.UnaryOp) and isinstance(b.op, gast.USub):
        return gast.BinOp(left=a, op=gast.Sub(), right=b.operand)
    return gast.BinOp(left=a, op=gast.Add(), right=b)


def _times(c, x):
    if isinstance(c, gast.Constant) and c.value in (1, -1):
        return syntax.copied(x) if c.value == 1 else _minus(syntax.copied(x))
    if isinstance(c, gast.UnaryOp) and isinstance(c.op, gast.USub):
        return _minus(_times(c.operand, x))
    return gast.BinOp(left=c, op=gast.Mult(), right=syntax.copied(x))


def _over(c, x):
    if isinstance(c, gast.UnaryOp) and isinstance(c.op, gast.USub):
        return _minus(_over(c.operand, x))
    return gast.BinOp(left=c, op=gast.Div(), right=syntax.copied(x))


def _drop_fresh_copies(block, ctx):
    """`block` without the copies `a = np.copy(a)` of an array `a` made in it by NumPy
    (`np.zeros_like`, ...) and since then only written element by element: it is the
    code's own already."""
    fresh = {}      # name -> position of the statement that made it
    for k, s in enumerate(block):
        if syntax.is_comment(s):
            continue
        if not isinstance(s, gast.Assign):
            fresh.clear()
            continue
        target = s.targets[0]
        value = s.value
        if isinstance(target, gast.Name) and isinstance(value, gast.Call):
            made = ctx.resolve(value.func)
            if (made is np.copy and len(value.args) == 1
                    and syntax.is_name(value.args[0], target.id) and target.id in fresh):
                block[k] = None
                continue
            if made in (np.zeros_like, np.zeros, np.full, np.empty, np.copy):
                fresh[target.id] = k
                continue
        stored = {syntax.receiver_root(t).id for t in s.targets
                  if isinstance(t, gast.Subscript) and syntax.is_name(syntax.receiver_root(t))}
        loaded = set(syntax.names_loaded(s.value)) | {
            t.id for t in s.targets if isinstance(t, gast.Name)}
        for n in list(fresh):
            if n in loaded or (n in stored and any(
                    n in syntax.names_loaded(t.slice) for t in s.targets
                    if isinstance(t, gast.Subscript))):
                del fresh[n]
    block[:] = [s for s in block if s is not None]


def _drop_owned_copies(fn, copies, ctx):
    """`fn` without the `copies` (`a = np.copy(a)`) of an array `a` that no other name can
    see: each binding of `a` makes an array (`np.zeros`, `np.zeros_like`, `np.copy`), and
    `a` is read only as the array written into (`a[i] += g`), by those copies, or returned
    (`return (a, b)`). Its elements are then written in place."""
    made = (np.zeros, np.zeros_like, np.copy)
    names = {s.targets[0].id for s in copies}
    if not names:
        return
    allowed = set()     # the loads of `a` that cannot make another name for it
    for s in syntax.statements(fn):
        if isinstance(s, (gast.Assign, gast.AugAssign)):
            for t in (s.targets if isinstance(s, gast.Assign) else [s.target]):
                if isinstance(t, gast.Subscript) and isinstance(t.value, gast.Name):
                    allowed.add(id(t.value))
        if isinstance(s, gast.Return) and s.value is not None:
            allowed |= {id(e) for e in (s.value.elts if isinstance(s.value, gast.Tuple)
                                         else [s.value]) if isinstance(e, gast.Name)}
        if isinstance(s, gast.Assign) and isinstance(s.value, gast.Call) and any(
                s is c for c in copies):
            allowed.add(id(s.value.args[0]))
    params = {a.id for a in fn.args.args + fn.args.posonlyargs + fn.args.kwonlyargs}
    owned = names - params
    for s in syntax.statements(fn):
        for node in syntax.walk(s):
            if isinstance(node, gast.Name) and node.id in owned and isinstance(
                    node.ctx, gast.Load) and id(node) not in allowed:
                owned.discard(node.id)
        bound = (s.targets if isinstance(s, gast.Assign) else
                 [s.target] if isinstance(s, (gast.For, gast.AugAssign)) else [])
        for t in (n for t in bound for n in syntax.name_nodes(t)
                  if isinstance(n.ctx, gast.Store)):
            if t.id in owned and not (isinstance(s, gast.Assign) and isinstance(
                    s.value, gast.Call) and ctx.resolve(s.value.func) in made):
                owned.discard(t.id)
    for block in syntax.blocks(fn.body):
        block[:] = [s for s in block if not (any(s is c for c in copies)
                                              and s.targets[0].id in owned)]


def _reuse_reads(stmts, ctx):
    """In each straight run of `stmts` (and of the ifs in it, not of nested loops), a
    read `b = a[i]` of an element read before into a name (`t = a[i]`), with no write to
    `a`, `i` or `t` between, made `b = t`: one value, one column of the tape."""
    seen = {}       # (array, index) -> the name that holds it
    for s in stmts:
        if isinstance(s, gast.If):
            _reuse_reads(s.body, ctx)
            _reuse_reads(s.orelse, ctx)
            seen.clear()
            continue
        if not isinstance(s, gast.Assign) or any(
                isinstance(c, gast.Call) and not _pure(ctx.resolve(c.func))
                for c in syntax.walk(s)):
            seen.clear()
            continue
        written = set(syntax.names_stored(s)) | {
            syntax.receiver_root(t).id for t in s.targets if isinstance(t, gast.Subscript)
            and isinstance(syntax.receiver_root(t), gast.Name)}
        seen = {k: v for k, v in seen.items()
                if not ({k[0], v} | set(k[1]) if isinstance(k[1], tuple) else {k[0], v}) & written}
        value = s.value
        if (isinstance(s.targets[0], gast.Name) and isinstance(value, gast.Subscript)
                and isinstance(value.value, gast.Name) and syntax.is_atom(value.slice)):
            key = (value.value.id, syntax.unparse(value.slice))
            if key in seen:
                s.value = syntax.name(seen[key])
            elif key[1] not in written and key[0] not in written:
                seen[key] = s.targets[0].id


def _pure(fn):
    """Whether a call of `fn` writes into no array: `math`'s functions, NumPy's ufuncs."""
    return getattr(fn, "__module__", None) == "math" or isinstance(fn, np.ufunc)


def _copies(fn, unpacked):
    """{name: the name it copies} of the names bound once, to another name bound once
    (not counting their bindings by `unpacked`, the target of the reversed loop that
    reads them back)."""
    count, skip = {}, {id(n) for n in syntax.name_nodes(unpacked)}
    for n in syntax.name_nodes(fn):
        if isinstance(n.ctx, gast.Store) and id(n) not in skip:
            count[n.id] = count.get(n.id, 0) + 1
    return {s.targets[0].id: s.value.id for s in syntax.statements(fn)
            if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name)
            and isinstance(s.value, gast.Name) and count.get(s.targets[0].id) == 1
            and count.get(s.value.id) == 1}


def _canonical(value, copies):
    while isinstance(value, gast.Name) and value.id in copies:
        value = syntax.name(copies[value.id])
    return value


def values_of(push):
    return _values(push.value.args[0])


def _values(recorded):
    return list(recorded.elts) if isinstance(recorded, gast.Tuple) else [recorded]
