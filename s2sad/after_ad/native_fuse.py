"""NativeFuse: a run of elementwise statements as one loop over the elements, in the code
Numba compiles (`backend="numba"`).

NumPy computes `t = a * b`, then `u = np.exp(t) + c`, an array each, in a pass over the
elements each; on small arrays (an LSTM's gates) the allocations and the passes are
most of the time. In straight code (a function without `if`, loops or early returns,
`_straight`), this pass takes a straight run of such statements (of names bound to
arrays, `+ - * /`, unary `-`, NumPy's elementwise functions of one argument, numbers;
the adjoint of a broadcast to an array of the run, `_s2s_unbroadcast(g, x)`, and the
sum of two adjoints, `_s2s_add(a, b)`; a call of a function of the user's that returns
one such expression of its parameters, written in its place) and writes it as one loop,
with a number for each value of an element: the values that only the run reads are
never arrays, and those read after it are allocated once and written element by
element. The statements stay beside it, in the `else` of

    if isinstance(_s2s_fusable((a, b), (c,)), float) and _s2s_same_shape((a, b)):

whose first test Numba settles as it compiles the code, from the types (float64 arrays
of one number of axes, one or two, and numbers: rules/fusion.py), so that the loop is
compiled only where it applies, and whose second is the shapes, at run time: the loop
computes what the statements compute, element by element (NumPy's inf and nan
included: a quotient is `np.divide`). Statements that only name parts of arrays or ints
(`t_1 = weight[:b]`, `t_5 = 2 * b`) and read nothing the run binds are moved before it;
accumulations into slices of an array of the derivative's own that no other name sees
(`bias_bar[:b] += t_3_bar`) are moved after it, when nothing the run binds after them
changes what they read. A run none of whose operands is known to be an array
(`_known_arrays`) is left as it is: Numba would compile its loop for no types.

>>> import numpy as np
>>> from s2sad import pipeline
>>> def f(x, y):
...     t = np.exp(x) * y
...     return np.sum(t * t - x)
>>> print(pipeline.stage_source(f, "native_fuse", arg_types={"x": np.ndarray,
...                                                          "y": np.ndarray}))
def f_grad(x, y):
    y_1_bar = 1.0
    if isinstance(_s2s_fusable((x, y), ()), float) and _s2s_same_shape((x, y)):
        # one loop over the elements for the 2 elementwise statements of line 2 (those of the else branch)
        t_1 = np.empty(x.shape)
        t = np.empty(x.shape)
        for _s2s_k in range(x.size):
            t_1_k = np.exp(_s2s_at(x, _s2s_k))
            t_k = t_1_k * _s2s_at(y, _s2s_k)
            _s2s_put(t_1, _s2s_k, t_1_k)
            _s2s_put(t, _s2s_k, t_k)
    else:
        t_1 = np.exp(x)
        t = t_1 * y
    # grad of: return np.sum(t * t - x)
    t_3_bar = _s2s_unreduce(y_1_bar, t)
    if isinstance(_s2s_fusable((t_3_bar, t, t_1, y, x), ()), float) and _s2s_same_shape((t_3_bar, t, t_1, y, x)):
        # one loop over the elements for the 3 elementwise statements of lines 2 to 3 (those of the else branch)
        x_bar = np.empty(t_3_bar.shape)
        for _s2s_k in range(t_3_bar.size):
            t_bar_k = 2 * _s2s_at(t_3_bar, _s2s_k) * _s2s_at(t, _s2s_k)
            t_1_bar_k = t_bar_k * _s2s_at(y, _s2s_k)
            x_bar_k = -_s2s_at(t_3_bar, _s2s_k) + t_1_bar_k * _s2s_at(t_1, _s2s_k)
            _s2s_put(x_bar, _s2s_k, x_bar_k)
    else:
        t_bar = 2 * t_3_bar * t
        # grad of: t = np.exp(x) * y
        t_1_bar = _s2s_unbroadcast(t_bar * y, t_1)
        x_bar = _s2s_unbroadcast(-t_3_bar, x) + t_1_bar * t_1
    return x_bar
<BLANKLINE>
"""
import builtins
import inspect
import textwrap

import gast
import numpy as np

from .. import syntax
from ..options import Variant
from ..analysis.number_types import BOOL, FLOAT, INT
from ..analysis.value_kinds import ARRAY
from ..frontend.source import unfused
from ..rules import fusion, runtime
from ..rules.registry import helper_facts
from .native_tapes import number_types

#: NumPy's elementwise functions of one argument that a fused loop computes of numbers
#: (Numba's versions of them for a number and for an array are the same code).
UNARY = {np.exp, np.log, np.tanh, np.sin, np.cos, np.tan, np.sqrt, np.expm1, np.log1p,
         np.sinh, np.cosh, np.arctan, np.abs, np.negative}
_OPS = (gast.Add, gast.Sub, gast.Mult, gast.Div)
#: Calls that make an array of the derivative's own (an accumulation into it may wait).
_FRESH = {runtime.zeros_like, np.zeros, np.zeros_like, np.empty, np.empty_like, np.ones,
          np.ones_like, np.full, np.full_like}
#: The fewest statements a fused loop stands for.
SHORTEST = 2


def run(fn, ctx):
    """The pass (the numba backend's, after native_tapes)."""
    names = getattr(getattr(ctx.src, "fn", None), "__globals__", {})
    if any(names.get(n, getattr(builtins, n)) is not getattr(builtins, n)
           for n in ("isinstance", "float", "range")):
        return fn       # (the generated code reads them from the user's module)
    if not _straight(fn):
        return fn
    fusion_ = _Fusion(fn, ctx)
    for block in list(syntax.blocks(fn.body)):
        block[:] = fusion_.block(block)
    return fn


class _Run:
    """A run being gathered: its statements (with their positions), the statements moved
    before it (`before`) and after it (`after`), and what it reads and binds."""

    def __init__(self):
        self.stmts, self.before, self.after = [], [], []
        self.made = []              # the parts read by constant indexes, named before
        self.bound = {}             # name -> the position of its last binding
        self.inputs = {}            # name (or its hoisted part) -> "array" | "number"
        self.parts = {}             # (name, index) -> the name of the part moved before
        self.loops = []             # the loop's statements of numbers, in order

    def statements(self):
        return [s for _, s in self.stmts if not syntax.is_comment(s)]


class _Fusion:
    def __init__(self, fn, ctx):
        self.fn, self.ctx = fn, ctx
        self.types = number_types(fn, ctx)
        self.names = set(n.id for n in syntax.name_nodes(fn)) | {a.id for a in (
            fn.args.args if hasattr(fn.args, "args") else []) if hasattr(a, "id")}
        self.loads = {}
        for n in syntax.name_nodes(fn):
            if type(n.ctx) is gast.Load:
                self.loads[n.id] = self.loads.get(n.id, 0) + 1
        self.private = self._private()
        self.inlinable = {}
        self.written = self._written()
        self.ints = self._ints()
        self.inlinable = {}
        self.at = ctx.runtime("at")
        self.elements = set()       # the loop's numbers that are elements of arrays
        self.adjoints = {name: c for name, c in ctx.callees
                         if c.variant is Variant.ADJOINT and not c.args and not c.kwargs}
        self.adjoint_codes = {}
        self.arrays = _known_arrays(ctx)

    def _written(self):
        """The names of arrays the code may write into: `a[i] = v`, `a[i] += v`, `a +=
        v`, the arguments a runtime helper writes into (its `writes`), and those passed
        to a function of the user's. A statement reading or binding one is not fused:
        the loop's arrays are new, where the statements' may share memory with another
        name's."""
        out = set()
        for s in syntax.statements(self.fn):
            targets = s.targets if isinstance(s, gast.Assign) else (
                [s.target] if isinstance(s, gast.AugAssign) else [])
            for t in targets:
                if isinstance(t, gast.Subscript):
                    out |= {n.id for n in syntax.name_nodes(t.value)}
                elif isinstance(s, gast.AugAssign) and syntax.is_name(t):
                    out.add(t.id)
        for n in syntax.walk(self.fn):
            if not isinstance(n, gast.Call):
                continue
            obj = self.ctx.resolve(n.func) if not (
                syntax.is_name(n.func) and n.func.id in dict(self.ctx.callees)) else None
            facts = helper_facts(obj) if obj is not None else None
            if facts is not None:
                positions = facts.writes
            elif inspect.isfunction(getattr(obj, "py_func", obj)) and not getattr(
                    obj, "__module__", "").startswith("s2sad") and self.inlined(obj) is None:
                positions = range(len(n.args))
            else:
                continue
            out |= {n.args[i].id for i in positions
                    if i < len(n.args) and syntax.is_name(n.args[i])}
        return out

    def _ints(self):
        """The names every binding of which is an int of a shape (`b = hidden.shape[0]`,
        `t_5 = 2 * b`), which the number types cannot tell of an argument of unknown
        type."""
        bindings = {}
        for s in syntax.statements(self.fn):
            if isinstance(s, (gast.For, gast.AugAssign)):
                for n in syntax.name_nodes(s.target):
                    if type(n.ctx) is not gast.Load:
                        bindings.setdefault(n.id, []).append(None)
            elif not isinstance(s, (gast.Assign, gast.FunctionDef, gast.If, gast.While)):
                for n in syntax.name_nodes(s):
                    if type(n.ctx) is not gast.Load:
                        bindings.setdefault(n.id, []).append(None)
            if isinstance(s, gast.Assign):
                for t in s.targets:
                    for n in syntax.name_nodes(t):
                        if type(n.ctx) is not gast.Load:
                            bindings.setdefault(n.id, []).append(
                                s.value if syntax.is_name(t) else None)
        for a in self.fn.args.args:
            bindings.setdefault(a.id, []).append(None)
        shapes, ints = set(), set()
        changed = True
        while changed:
            changed = False
            for name, values in bindings.items():
                if name in shapes or name in ints or None in values:
                    continue
                if all(isinstance(v, gast.Attribute) and v.attr == "shape" for v in values):
                    shapes.add(name)
                    changed = True
                elif all(_int_of(v, shapes, ints) for v in values):
                    ints.add(name)
                    changed = True
        return ints

    # -- names ----------------------------------------------------------------------
    def fresh(self, base):
        name, k = base, 1
        while name in self.names:
            name, k = f"{base}_{k}", k + 1
        self.names.add(name)
        return name

    def _private(self):
        """The names bound once, by a call making a new array, that the code reads only
        as the array an element write writes into, or returns: no other name sees the
        array, so a write into it may wait."""
        fresh, stores, other = set(), {}, set()
        allowed = set()
        for s in syntax.statements(self.fn):
            if isinstance(s, gast.Assign) and len(s.targets) == 1 and syntax.is_name(
                    s.targets[0]) and isinstance(s.value, gast.Call) \
                    and self.ctx.resolve(s.value.func) in _FRESH:
                fresh.add(s.targets[0].id)
            if isinstance(s, (gast.Assign, gast.AugAssign)):
                for t in s.targets if isinstance(s, gast.Assign) else [s.target]:
                    if isinstance(t, gast.Subscript) and syntax.is_name(t.value):
                        allowed.add(id(t.value))
            if isinstance(s, gast.Return) and s.value is not None:
                items = s.value.elts if isinstance(s.value, gast.Tuple) else [s.value]
                allowed |= {id(e) for e in items if syntax.is_name(e)}
        for n in syntax.name_nodes(self.fn):
            if type(n.ctx) is gast.Load:
                if id(n) not in allowed:
                    other.add(n.id)
            else:
                stores[n.id] = stores.get(n.id, 0) + 1
        return {n for n in fresh if stores.get(n) == 1 and n not in other}

    # -- blocks ---------------------------------------------------------------------
    def block(self, stmts):
        out, run = [], _Run()
        for k, s in enumerate(stmts):
            if self.take(run, k, s):
                continue
            out += self.finished(run)
            run = _Run()
            if not self.take(run, k, s):
                out.append(s)
        return out + self.finished(run)

    def take(self, run, k, s):
        """Whether `s` (at position `k`) joins `run`: into the loop, before it or after."""
        if syntax.is_comment(s):
            if run.stmts:
                run.stmts.append((k, s))
                return True
            return False
        if self.elementwise(run, k, s):
            return True
        if not run.stmts:
            return False
        return self.moved_before(run, k, s) or self.moved_after(run, k, s)

    def finished(self, run):
        """The statements of `run`: a fused loop and the statements themselves, or (too
        short, or moving a statement would change what it reads) as they were."""
        trailing = []
        while run.stmts and syntax.is_comment(run.stmts[-1][1]):
            trailing.insert(0, run.stmts.pop())
        original = sorted(run.stmts + run.before + run.after + trailing,
                          key=lambda p: p[0])
        if len(run.statements()) < SHORTEST or not self.keeps_order(run) or not any(
                kind == "array" and self.known_array(name)
                for name, kind in run.inputs.items()):
            return [s for _, s in original]
        kept = [s for _, s in trailing]
        return [s for _, s in run.before + run.made] + [self.fused(run)] + [
            s for _, s in run.after] + kept

    def known_array(self, name):
        """Whether the input `name` is known to be an array (a run of numbers alone is
        left as it is: the loop would never be compiled for them, `_s2s_fusable`, and
        only be longer to read)."""
        return name in self.arrays

    def keeps_order(self, run):
        """Whether moving `run.before` and `run.after` keeps what each statement reads."""
        later_binds = {}
        for k, s in run.stmts:
            for n in syntax.names_stored(s):
                later_binds.setdefault(n, []).append(k)
        for k, s in run.after:
            reads = set(syntax.names_loaded(s))
            if any(j > k for n in reads for j in later_binds.get(n, ())):
                return False
            if any(j > k and syntax.names_stored(h)[0] in reads for j, h in run.before):
                return False
        for j, h in run.before:
            target = syntax.names_stored(h)[0]
            if target in later_binds:
                return False
            if any(k < j and target in syntax.names_loaded(s) for k, s in run.stmts):
                return False
        return True

    # -- the three kinds of statement ------------------------------------------------
    def elementwise(self, run, k, s):
        if not (isinstance(s, gast.Assign) and len(s.targets) == 1
                and syntax.is_name(s.targets[0])):
            return False
        target = s.targets[0].id
        if self.types.of_name(target) in (BOOL, INT, FLOAT) or target in self.ints:
            return False
        st = _Statement(run, dict(run.inputs), dict(run.parts), [], [])
        value = self.scalar(s.value, st)
        if value is None:
            return False
        inputs, parts, before = st.inputs, st.parts, st.before
        read = set(syntax.names_loaded(s.value))
        if target in inputs or target in read - set(run.bound):
            return False        # (it reads the value it replaces: not fused)
        if target in self.written or any(
                n in self.written for n, kind in inputs.items() if kind == "array"):
            return False        # (an array written in place: its memory may be shared)
        if isinstance(value, gast.Call) and syntax.is_name(value.func, self.at):
            return False        # (an array as it is: the statement may name it anew)
        if not self.backed(value) and not any(self.backed(v) for _, v in st.pre):
            return False        # (no array: a number, not a statement of the loop)
        if any(n in run.bound for n in self.part_reads(before)):
            return False
        scalar = self.fresh(f"{target}_k")
        run.inputs, run.parts = inputs, parts
        run.made += [(k - 0.5, b) for b in before]
        run.loops += [(None, name, v) for name, v in st.pre]
        run.loops.append((target, scalar, value))
        self.elements.add(scalar)
        run.bound[target] = k
        run.stmts.append((k, s))
        return True

    def part_reads(self, stmts):
        return {n for b in stmts for n in syntax.names_loaded(b)}

    def moved_before(self, run, k, s):
        """`t_1 = weight[:b]`, `t_5 = 2 * b`: parts of arrays and ints, of names the run
        does not bind, may be named before it."""
        if not (isinstance(s, gast.Assign) and len(s.targets) == 1
                and syntax.is_name(s.targets[0])):
            return False
        target = s.targets[0].id
        fresh = (target in self.private and isinstance(s.value, gast.Call)
                 and not s.value.keywords and all(_pure(a) for a in s.value.args))
        if not (_pure(s.value) or fresh):
            return False
        if target in run.bound or target in run.inputs or any(
                n in run.bound for n in syntax.names_loaded(s.value)):
            return False
        run.before.append((k, s))
        return True

    def moved_after(self, run, k, s):
        """`bias_bar[:b] += t_3_bar`: an element write into an array of the derivative's
        own that no other name sees may wait until the run is done."""
        target = s.target if isinstance(s, gast.AugAssign) else (
            s.targets[0] if isinstance(s, gast.Assign) and len(s.targets) == 1 else None)
        if not (isinstance(target, gast.Subscript) and syntax.is_name(target.value)
                and target.value.id in self.private and _pure(s.value)
                and _pure(target.slice)):
            return False
        run.after.append((k, s))
        return True

    # -- expressions ----------------------------------------------------------------
    def scalar(self, e, st):
        """`e` as the expression of numbers that computes one element of it in the loop
        (`st`: what the statement reads and needs, `_Statement`); None if it is not
        elementwise."""
        if isinstance(e, gast.Constant):
            ok = type(e.value) in (int, float)
            return syntax.const(e.value) if ok else None
        if isinstance(e, gast.Name):
            if st.env is not None:
                return syntax.copied(st.env[e.id]) if e.id in st.env else None
            return self.read(e.id, st)
        if isinstance(e, gast.BinOp) and isinstance(e.op, _OPS):
            left, right = self.scalar(e.left, st), self.scalar(e.right, st)
            if left is None or right is None:
                return None
            if isinstance(e.op, gast.Div):
                return syntax.call(self.np("divide"), [left, right])
            return syntax.binop(left, type(e.op)(), right)
        if isinstance(e, gast.UnaryOp) and isinstance(e.op, (gast.USub, gast.UAdd)):
            operand = self.scalar(e.operand, st)
            return None if operand is None else syntax.unary(type(e.op)(), operand)
        if isinstance(e, gast.Subscript) and st.env is None:
            return self.part(e, st)
        if not isinstance(e, gast.Call) or e.keywords:
            return None
        kind = _helper_name(self.resolve(e.func, st))
        if kind == "unbroadcast" and len(e.args) == 2 and syntax.is_name(e.args[1]):
            x = self.scalar(e.args[1], st)     # (the array of the run it is summed to)
            return self.scalar(e.args[0], st) if x is not None and self.backed(x) else None
        if kind == "add" and len(e.args) == 2:
            left, right = self.scalar(e.args[0], st), self.scalar(e.args[1], st)
            if left is None or right is None:
                return None
            return syntax.binop(left, gast.Add(), right)
        obj = self.resolve(e.func, st)
        args = [self.scalar(a, st) for a in e.args]
        if any(a is None for a in args):
            return None
        if obj in UNARY and len(args) == 1:
            return syntax.call(self.np(obj.__name__), args)
        if obj is np.divide and len(args) == 2:
            return syntax.call(self.np("divide"), args)
        body = self.inlined(obj) if st.env is None else None
        if body is not None and len(args) == len(body[0]):
            inner = _Statement(st.run, st.inputs, st.parts, st.before, st.pre)
            inner.env, inner.resolve = dict(zip(body[0], args)), body[2]
            return self.scalar(body[1], inner)
        if st.env is None and syntax.is_name(e.func) and e.func.id in self.adjoints:
            return self.adjoint(self.adjoints[e.func.id], args, st)
        return None

    def backed(self, e):
        """Whether the expression of numbers `e` reads an element of an array (else it is
        a number, and an adjoint summed to it is not elementwise)."""
        return any(isinstance(n, gast.Call) and syntax.is_name(n.func, self.at)
                   or isinstance(n, gast.Name) and n.id in self.elements
                   for n in syntax.walk(e))

    def read(self, name, st):
        """A name the statement reads: the number of the run's value, or an element of an
        array (a number itself) the run reads."""
        run, inputs = st.run, st.inputs
        if name in run.bound:
            return syntax.name(next(s for t, s, _ in reversed(run.loops) if t == name))
        kind = self.types.of_name(name)
        if kind == BOOL:
            return None
        inputs.setdefault(name, "number" if kind in (INT, FLOAT) or name in self.ints
                          else "array")
        if inputs[name] == "number":
            return syntax.name(name)
        return syntax.call(self.at, [syntax.name(name), syntax.name(self.index())])

    def part(self, e, st):
        """`y_bar[1]` (an item of a tuple or a row of an array, by a constant): named
        before the run, and read as an array of it."""
        if not (syntax.is_name(e.value) and isinstance(e.slice, gast.Constant)
                and type(e.slice.value) is int and e.value.id not in st.run.bound):
            return None
        key = (e.value.id, e.slice.value)
        if key not in st.parts:
            name = self.fresh(f"{e.value.id}_{e.slice.value}")
            st.parts[key] = name
            st.before.append(syntax.assign(name, syntax.copied(e)))
        return self.read(st.parts[key], st)

    def resolve(self, func, st):
        """What `func` denotes in the code the statement is of (this function's, or that
        of a function written in its place)."""
        return (st.resolve or self.ctx.resolve)(func)

    def adjoint(self, callee, args, st):
        """The call of the adjoint of a function of the user's that returns one
        elementwise expression (`sigmoid_adjoint(g, x)`): its code, a straight run of
        elementwise statements, computed in the loop."""
        code = self.adjoint_code(callee)
        if code is None or len(args) != len(code[0]):
            return None
        inner = _Statement(st.run, st.inputs, st.parts, st.before, st.pre)
        inner.env, inner.resolve = dict(zip(code[0], args)), code[2]
        for target, value in code[1]:
            if value is None:
                return inner.env.get(target) if target in inner.env else None
            element = self.scalar(value, inner)
            if element is None:
                return None
            name = self.fresh(f"{target}_k")
            st.pre.append((name, element))
            if self.backed(element):
                self.elements.add(name)
            inner.env[target] = syntax.name(name)
        return None

    def adjoint_code(self, callee):
        """(parameters, [(target, value)] ending with (returned name, None), what a name
        of it denotes) of the adjoint of `callee` that this code calls, as the backend
        makes it (`ctx.adjoint_code`), when its function returns one elementwise
        expression and the adjoint is a straight run of statements; else None."""
        if callee in self.adjoint_codes:
            return self.adjoint_codes[callee]
        found = None
        if self.inlined(callee.fn) is not None and self.ctx.adjoint_code is not None:
            made, tree = self.ctx.adjoint_code(callee)
            body = [s for s in unfused(tree.body) if not (
                isinstance(s, gast.Expr) and isinstance(s.value, gast.Constant))]
            steps = []
            for s in body[:-1]:
                if not (isinstance(s, gast.Assign) and len(s.targets) == 1
                        and syntax.is_name(s.targets[0])):
                    steps = None
                    break
                steps.append((s.targets[0].id, s.value))
            last = body[-1] if body else None
            if steps is not None and isinstance(last, gast.Return) and syntax.is_name(
                    last.value):
                found = ([a.id for a in tree.args.args], steps + [(last.value.id, None)],
                         made.resolve)
        self.adjoint_codes[callee] = found
        return found

    def inlined(self, obj):
        """(parameters, returned expression, the values of the names its module binds)
        of a function of the user's whose body returns one expression of its parameters
        (NumPy's functions of them), or None."""
        obj = getattr(obj, "py_func", obj)
        if not inspect.isfunction(obj) or obj.__module__.startswith("s2sad"):
            return None
        if obj not in self.inlinable:
            self.inlinable[obj] = _single_expression(obj)
        return self.inlinable[obj]

    def np(self, attr):
        return syntax.attribute(syntax.name(self.ctx.bind("np", obj=np)), attr)

    def index(self):
        return "_s2s_k"

    # -- the loop -------------------------------------------------------------------
    def fused(self, run):
        """`if <the types and shapes fit>: <the loop> else: <the statements>`."""
        arrays = [n for n, kind in run.inputs.items() if kind == "array"]
        numbers = [n for n, kind in run.inputs.items() if kind == "number"]
        first = arrays[0]
        outside = {}
        for _, s in run.stmts:
            for n in syntax.name_nodes(s):
                if type(n.ctx) is gast.Load:
                    outside[n.id] = outside.get(n.id, 0) + 1
        last = {t: sc for t, sc, _ in run.loops if t is not None}
        results = [t for t in last if self.loads.get(t, 0) > outside.get(t, 0)]
        k = self.index()
        body = []
        for target, scalar, value in run.loops:
            body.append(syntax.assign(scalar, value))
        for t in results:
            body.append(syntax.expr_stmt(syntax.call(self.ctx.runtime("put"), [
                syntax.name(t), syntax.name(k), syntax.name(last[t])])))
        shape = syntax.attribute(syntax.name(first), "shape")
        allocations = [syntax.assign(t, syntax.call(self.np("empty"), [syntax.copied(shape)]))
                       for t in results]
        lines = sorted({s.lineno for _, s in run.stmts if getattr(s, "lineno", None)})
        where = (f"line {lines[0]}" if len(lines) == 1 else
                 f"lines {lines[0]} to {lines[-1]}") if lines else "the statements below"
        statements = run.statements()
        note = syntax.comment(
            f"one loop over the elements for the {len(statements)} elementwise "
            f"statements of {where} (those of the else branch)")
        loop = syntax.for_(k, syntax.call("range", [
            syntax.attribute(syntax.name(first), "size")]), body)
        test = gast.BoolOp(op=gast.And(), values=[
            syntax.call("isinstance", [syntax.call(self.ctx.runtime("fusable"), [
                _tuple(arrays), _tuple(numbers)]), syntax.name("float")]),
            syntax.call(self.ctx.runtime("same_shape"), [_tuple(arrays)])])
        return syntax.if_(test, [note] + allocations + [loop], [s for _, s in run.stmts])


def _single_expression(fn):
    try:
        tree = syntax.parse(textwrap.dedent(inspect.getsource(fn))).body[0]
    except (OSError, TypeError, SyntaxError):
        return None
    if not isinstance(tree, gast.FunctionDef) or fn.__closure__:
        return None
    args = tree.args
    body = [s for s in tree.body
            if not (isinstance(s, gast.Expr) and isinstance(s.value, gast.Constant))]
    if len(body) != 1 or not isinstance(body[0], gast.Return) or body[0].value is None or (
            args.vararg or args.kwarg or args.kwonlyargs or args.defaults
            or args.posonlyargs):
        return None
    params = [a.id for a in args.args]
    free = set(syntax.names_loaded(body[0].value)) - set(params)
    if not all(fn.__globals__.get(n) is np for n in free):
        return None
    def resolve(func):
        if isinstance(func, gast.Attribute) and syntax.is_name(func.value):
            return getattr(fn.__globals__.get(func.value.id), func.attr, None)
        return fn.__globals__.get(func.id) if syntax.is_name(func) else None
    return params, body[0].value, resolve


class _Statement:
    """What the statement being made a part of the loop reads (`inputs`, `parts` read by
    constant indexes, named `before` the run) and the numbers it needs computed first
    (`pre`); in the code of a function written in its place, the numbers its names
    stand for (`env`) and what a name or attribute of its code denotes (`resolve`)."""

    def __init__(self, run, inputs, parts, before, pre):
        self.run, self.inputs, self.parts, self.before, self.pre = (
            run, inputs, parts, before, pre)
        self.env, self.resolve = None, None


def _helper_name(obj):
    """The name of the runtime helper `obj`, or None."""
    name = getattr(obj, "__name__", None)
    return name if name and getattr(runtime, name, None) is obj else None


def _int_of(e, shapes, ints):
    """Whether `e` is an int: of a shape, or arithmetic of ints."""
    if isinstance(e, gast.Constant):
        return type(e.value) is int
    if isinstance(e, gast.Name):
        return e.id in ints
    if isinstance(e, gast.Subscript):
        return syntax.is_name(e.value) and e.value.id in shapes and isinstance(
            e.slice, gast.Constant) and type(e.slice.value) is int
    if isinstance(e, gast.Attribute):
        return e.attr in ("size", "ndim")
    if isinstance(e, gast.BinOp) and isinstance(e.op, (gast.Add, gast.Sub, gast.Mult,
                                                       gast.FloorDiv, gast.Mod)):
        return _int_of(e.left, shapes, ints) and _int_of(e.right, shapes, ints)
    return False


def _known_arrays(ctx):
    """The names of the code known to hold arrays: the parameters and values of the
    function the kinds analysis finds arrays (analysis/value_kinds.py: those the call is
    specialised on, NumPy's results of them), and their adjoints and tangents."""
    arrays = {p for p, k in ctx.param_kinds.items() if k == ARRAY}
    arrays |= {p for p, ndim in ctx.options.ndims if ndim}
    if ctx.wengert is not None:
        arrays |= {n for n, k in ctx.value_kinds.kind.items() if k == ARRAY}
    for names in (ctx.reverse.adjoints if ctx.reverse else {},
                  ctx.forward.dots if ctx.forward else {}):
        arrays |= {names[n] for n in list(arrays) if n in names}
    return arrays


def _straight(fn):
    """Whether `fn` is straight code: no `if`, loop, `try` or `with`, one `return`, at
    its end. (Numba settles `isinstance` by typing the function in part first, which
    fails on a name some paths leave unbound: `det` recursing, say. The loops the pass
    makes leave none such.)"""
    body = [s for s in fn.body if not syntax.is_comment(s)]
    return all(not isinstance(s, (gast.If, gast.For, gast.While, gast.Try, gast.With,
                                  gast.Return, gast.FunctionDef)) for s in body[:-1]) and (
        bool(body) and isinstance(body[-1], gast.Return))


def _tuple(names):
    return syntax.tuple_([syntax.name(n) for n in names])


def _pure(e):
    """Whether `e` only reads: names, numbers, arithmetic, indexes and slices, `.shape`."""
    for n in syntax.walk(e):
        if isinstance(n, (gast.Call, gast.Lambda, gast.NamedExpr, gast.Await, gast.Yield,
                          gast.YieldFrom, gast.ListComp, gast.GeneratorExp)):
            return False
        if isinstance(n, gast.Attribute) and n.attr not in ("shape", "size", "ndim"):
            return False
    return True


__all__ = ["run", "fusion"]
