"""Reverse mode: Wengert form to `f_vjp(x) -> (y, f_pullback)`.

The forward pass is the user's code, with a tape per loop holding only what that loop's
pullback reads and cannot compute again in one operation from other taped values and
values the loop does not change (`recomputable`), nor, for arrays, more cheaply from
values taped anyway (`tapes.rematerialized`); the pullback is a closure that runs
the statements' adjoints backwards, mirroring `if`s on their recorded tests and loops by
iterating their tapes in reverse.
Adjoints accumulate out of place; an adjoint that receives nothing is never written.

>>> from s2sad.ad.reverse_mode import Reverse
>>> print(show(Reverse, '''
... def f(x, y):
...     return x * y + sin(x)
... ''', wrt=(0, 1)))
def f_vjp(x, y):
    t = x * y
    t_1 = sin(x)
    y_1 = t + t_1
<BLANKLINE>
    def f_pullback(y_1_bar):
        t_bar = y_1_bar
        t_1_bar = y_1_bar
        x_bar = t_1_bar * cos(x)
        x_bar = x_bar + t_bar * y
        y_bar = t_bar * x
        return (x_bar, y_bar)
    return (y_1, f_pullback)

(The result is called `y_1` because the function already uses `y`. The `optimize` pass
then removes the copies and adds `# grad of:` comments.)
"""
import copy
import dataclasses
import inspect
import math
import operator

import gast
import numpy as np

from .. import marks
from ..analysis import operations
from ..analysis.value_kinds import ARRAY, CONTAINER, SCALAR, sequence_operands, user_class
from ..analysis.names import (NameCounts, as_written, not_in_module, store_counts,
                              unresolved_call)
from ..analysis.operations import COPY, CUSTOM, PACK, USER
from .. import syntax
from ..syntax import unparse
from ..errors import InternalError, MissingRuleError
from ..rules import registry
from ..rules.arrays import is_duck_array_type
from .calls import CallAdjoints
from ..before_ad.checkpointed_loops import is_checkpointed
from .checkpointed import CheckpointedLoop, checkpointed, rename_apart
from .inplace import InPlaceWrites, final_element_reads
from .simplify import doubled, on_numbers, simplify, template_name
from .tapes import (LoopPlan, bound_before_loops, free_loads, is_range, loops_in,
                    nested_stores, own_statements, rematerialized)


def run(fn, ctx):
    """The pass: `f_vjp` for the function `fn` in Wengert form; the transform's result
    is `ctx.reverse`."""
    return Reverse(ctx).run(fn)


@dataclasses.dataclass(eq=False)
class ReverseResult:
    """What the reverse transform made, for the passes after it: the `vjp` and its
    `pullback`; the plans of the loops' tapes; `adjoints`, {primal name: adjoint name};
    `active`, the names that carry a derivative; `primal_names`, the names of the
    forward pass; `straight`, those neither assigned nor read in a branch or a loop;
    `renamed`, the name a value written in place has (see ad/inplace.py);
    `scalar_output`, whether the output is certainly a number; `unconnected`, the
    differentiated parameters the output does not depend on; `differentiated`, the
    operations of the forward pass whose rules the pullback applies, in its order;
    `output`, the name whose adjoint the pullback takes (`Compilation.output`);
    `adjoined`, the calls of the forward pass whose callee's adjoint, which the pullback
    calls, runs them again (see ad/calls.py: the fused variant leaves them out); `header`,
    set by the header pass."""
    vjp: gast.FunctionDef
    pullback: gast.FunctionDef
    loops: list
    adjoints: dict
    active: set
    primal_names: set
    straight: set
    renamed: object
    scalar_output: bool
    unconnected: list
    differentiated: list
    output: str | None = None
    adjoined: object = ()
    header: object = None


class Reverse(CallAdjoints):
    """See the module docstring; `ctx` is the `Compilation`."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.src = ctx.src
        self.namer = ctx.namer
        self.recompute = ctx.options.recompute
        self.wrt = list(ctx.wrt)
        self.as_tuple = ctx.as_tuple or len(self.wrt) > 1
        self.adjoints = {}
        self.loops = syntax.NodeMap()

    def run(self, fn):
        *body, ret = fn.body
        if not isinstance(ret, gast.Return):
            raise InternalError("reverse: Wengert form must end with one return")
        output = self.ctx.output     # (with has_aux, the first item of the pair returned)
        self.wengert = fn
        self.ops = self.ctx.ops
        self.active = self.ctx.active
        self.kinds = self.ctx.value_kinds
        self.shapes = self.ctx.shapes
        self.straight = _straight_line_names(fn)
        self.bound_before = bound_before_loops(fn)
        self.assigned = None      # how often each name is assigned (when needed)
        self.uniform = set()
        self.owned = set()
        self.unconnected = [p for p in self.wrt if p not in self.active]
        self.user_calls = syntax.NodeMap()
        self.adjoined = syntax.NodeMap()    # calls whose callee's adjoint runs them again
        self.primal_names = {n.id for n in syntax.name_nodes(fn)}
        self.scalar_zeros = False
        self.in_loops = {name for loop in loops_in(fn.body)
                         for name in syntax.names_stored(loop)}
        seed = self.adj(output) if output in self.active else self.namer.fresh("y_bar")
        defined = {output} if output in self.active else set()
        # the output is certainly a number: a full reduction, or arithmetic on numbers,
        # or a number to the kind analysis (a loop's sum of numbers)
        self.scalar_output = self.kinds.kind.get(output) == SCALAR or any(
            syntax.is_name(s.targets[0], output) and self.ops[s].variant is not None
            and (self.reduced_to_scalar(self.ops[s], self.ops[s].variant.params[0][0],
                                        output) or self.arithmetic_on_numbers(s.value))
            for s in body if isinstance(s, gast.Assign))
        self.computed = self.straight_calls(body)
        reverse = self.block(body, defined)
        self.updates = InPlaceWrites(body, self.src, reverse, self)
        result = [self.blocked(p, self.fitted(p, defined)) for p in self.wrt]
        reverse.append(syntax.ret(syntax.tuple_(result) if self.as_tuple else result[0]))
        pullback = syntax.function(self.namer.fresh(f"{fn.name}_pullback"), [seed], reverse)
        forward = _strip_markers(self.forward_pass(body))
        for n in syntax.name_nodes(syntax.function("_", [], forward)):
            if marks.LIFTED.of(n):
                self.ctx.bindings[n.id] = marks.PRIM.of(n)    # a lifted function it runs unchanged
        vjp = syntax.function(self.namer.fresh(f"{fn.name}_vjp"), [], forward + [
            pullback, syntax.ret(syntax.tuple_([ret.value, syntax.name(pullback.name)]))],
            like=fn)
        self.updates.finish(vjp, self.loops)
        rename_unpacks(pullback, self.namer)
        rename_apart(pullback, self.loops.values(), self.namer, self.ctx.variant.fused)
        self.ctx.reverse = ReverseResult(
            vjp, pullback, list(self.loops.values()), self.adjoints, self.active,
            self.primal_names, self.straight, self.updates.final, self.scalar_output,
            self.unconnected, self.differentiated(vjp.body), output, self.adjoined)
        # the plans are plain data for the passes after it: they let go of the transform
        # (no cycle left for the garbage collector to find either)
        self.updates.rev = None
        for info in self.loops.values():
            info.rev = None
        return vjp

    def differentiated(self, forward):
        """The operations of the statements of `forward` (not in the pullback) whose
        rules the pullback applies: calls of primitives and of functions, in order."""
        out = []
        for s in syntax.in_order(forward):
            op = self.ops.get(s)
            target = s.targets[0] if isinstance(s, gast.Assign) else None
            if isinstance(target, gast.Tuple):      # `t, t_pullback = g_vjp(...)`
                target = target.elts[0]
            if (op is not None and isinstance(target, gast.Name) and target.id in self.active
                    and op.form in ("call", USER, CUSTOM)):
                out.append(op)
        return out

    # -- names ------------------------------------------------------------------------
    def adj(self, n):
        if n not in self.adjoints:
            self.adjoints[n] = self.namer.fresh(f"{n}_bar")
        return self.adjoints[n]

    def blocked(self, p, adjoint):
        """The adjoint `adjoint` returned for `p`, in the blocks of `p` when `p` is an array
        of a library that splits arrays in blocks (Dask's chunks, see runtime.blocks_like)."""
        if not is_duck_array_type(self.ctx.types.get(p)):
            return adjoint
        return syntax.call(self.ctx.runtime("blocks_like"), [adjoint, syntax.name(p)])

    def fitted(self, p, defined):
        """The adjoint returned for parameter `p` (zeros if it received nothing); for a
        list, tuple or dict, in its structure (NumPy gives an array for a list it reads)."""
        if p not in defined:
            return syntax.call(self.ctx.runtime("zeros_like"), [syntax.name(p)])
        if self.kinds.kind.get(p) == CONTAINER:
            return syntax.call(self.ctx.runtime("from_array"), [syntax.name(self.adj(p)),
                                                               syntax.name(p)])
        if p in self.uniform:
            return self.expanded(syntax.name(self.adj(p)), p)
        if (self.scalar_zeros and self.kinds.kind.get(p) == ARRAY
                and p not in self.kinds.assigned):
            # a symbolic zero may reach it: give it the array's shape (that of the
            # argument, which `p` no longer holds once a loop rebinds it)
            return syntax.call(self.ctx.runtime("unbroadcast"), [syntax.name(self.adj(p)),
                                                            syntax.name(p)])
        return syntax.name(self.adj(p))


    # -- pullback ---------------------------------------------------------------------
    def block(self, stmts, defined):
        out = []
        for s in reversed(stmts):
            out.extend(self.stmt(s, defined))
        return out

    def stmt(self, s, defined):
        if isinstance(s, gast.Assign):
            return self.assign(s, defined)
        if isinstance(s, gast.If):
            return self.if_(s, defined)
        if isinstance(s, (gast.For, gast.While)):
            return self.loop(s, defined)
        return []

    def accumulate(self, target, expr, defined, origin, uniform=False):
        """[`target_bar = expr`], or [`target_bar = target_bar + expr`]. A `uniform`
        contribution is a scalar standing for an array of `target`'s shape whose
        elements all equal it; the adjoint stays such a scalar while all its
        contributions are. The adjoint of an array indexed with slices is an array
        of zeros that its elements' adjoints are added into."""
        bar = self.adj(target)
        if uniform and not (target in self.straight and self.kinds.kind.get(target) == ARRAY):
            expr, uniform = self.expanded(expr, target), False
        owned = (target in self.straight and self.kinds.kind.get(target) == ARRAY
                 and not self.ctx.duck_arrays)
        in_place = self.added_in_place(bar, expr) if owned else None
        if in_place is not None and (target not in defined or target in self.owned):
            zeros = [] if target in defined else [syntax.assign(bar, syntax.call(
                self.ctx.runtime("zeros_like"), [syntax.name(target)]))]
            defined.add(target)
            self.owned.add(target)
            self.uniform.discard(target)
            return [syntax.located(x, origin) for x in zeros + [in_place]]
        if target in defined:
            uniform = uniform and target in self.uniform
            if self.kinds.kind.get(target) not in (SCALAR, ARRAY):
                # a value that may be a container (a list, a dict, a dataclass, a value
                # of unknown kind): its adjoints add leaf by leaf (`+` joins lists)
                expr = syntax.call(self.ctx.runtime("add"), [syntax.name(bar), expr])
            else:
                expr = syntax.binop(syntax.name(bar), gast.Add(), expr)
        else:
            owned = owned and self.ctx.is_runtime_call(expr, "unindex")
        defined.add(target)
        (self.uniform.add if uniform else self.uniform.discard)(target)
        (self.owned.add if owned and not uniform else self.owned.discard)(target)
        return [syntax.located(syntax.assign(bar, expr), origin)]

    def added_in_place(self, bar, expr):
        """`bar[index] += g` for `expr` = `_s2s_unindex(g, x, index)`, when `bar` is an
        array the pullback created (nothing else holds it) and `index` selects each
        element at most once. Not for an index of the whole value (`t[()]`, `t[...]`):
        NumPy's arithmetic on 0-d arrays gives a NumPy scalar, whose zero adjoint is a
        number that cannot be written into."""
        if not self.ctx.is_runtime_call(expr, "unindex"):
            return None
        g, _, index = expr.args
        if not operations.is_basic_index(index, self.kinds) or _whole(index):
            return None
        target = gast.Subscript(value=syntax.name(bar), slice=operations.index_syntax(index),
                                ctx=gast.Store())
        return gast.AugAssign(target=target, op=gast.Add(), value=g)

    def expanded(self, g, target):
        """A uniform adjoint `g` of `target` as the full array."""
        return syntax.call(self.ctx.runtime("unreduce"), [g, syntax.name(target)])

    def keeps_uniform(self, op, param, target):
        """Whether the contribution of `op` to `param` may be computed from a uniform
        scalar adjoint of its result `target`: an elementwise operation, same shapes."""
        return op.form == COPY or (op.form not in (PACK, USER, CUSTOM)
                                   and op.variant is not None and op.variant.elementwise
                                   and not self.needs_unbroadcast(op, param, target))

    def scalar_valued(self, expr, g):
        """Whether `expr` reads no array but the uniform adjoint `g`."""
        return all(n.id == g or n.id not in self.kinds.local or self.kinds[n] == SCALAR
                   for n in syntax.walk(expr)
                   if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load))

    def assign(self, s, defined):
        target = s.targets[0].id
        if target not in self.active or target not in defined:
            return []
        g = syntax.name(self.adj(target))
        defined.discard(target)
        op = self.ops[s]
        out = []
        uniform = target in self.uniform
        if uniform and not all(self.keeps_uniform(op, p, target) for p, a in op.diff_args()
                               if isinstance(a, gast.Name) and a.id in self.active):
            out.append(syntax.located(syntax.assign(g.id, self.expanded(g, target)), s))
            g, uniform = syntax.name(g.id), False
        if op.form in (USER, CUSTOM):
            return out + self.user_call(s, op, g, defined)
        # Accumulate into adjoints that exist before starting new ones, so that a copy
        # `a_bar = b_bar` can later be propagated.
        args = sorted(op.diff_args(), key=lambda ia: not (
            isinstance(ia[1], gast.Name) and ia[1].id in defined))
        if op.form == "call" and op.bound and "v" in op.bound and "index" in op.bound:
            # an element write: read the written element's adjoint before zeroing it
            args.sort(key=lambda ia: ia[0] != "v")
        terms = []
        for param, arg in args:
            if not (isinstance(arg, gast.Name) and arg.id in self.active):
                continue
            reduced = False
            if op.form == COPY:
                expr = syntax.copied(g)
            elif op.form == PACK:
                expr = gast.Subscript(value=syntax.copied(g), slice=syntax.const(param),
                                      ctx=gast.Load())
            else:
                reduced = self.reduced_to_scalar(op, param, target)
                expr = self.contribution(op, param, g, target, s, reduced)
            terms.append((arg.id, expr, reduced))
        for arg, expr, reduced in _equal_terms_doubled(terms, self.kinds):
            out.extend(self.accumulate(arg, expr, defined, s, reduced or (
                uniform and self.scalar_valued(expr, g.id))))
        return out

    def arithmetic_on_numbers(self, e):
        """Whether `e` is `a op b` or `-a` on operands that are certainly numbers."""
        if isinstance(e, gast.BinOp) and not isinstance(e.op, gast.MatMult):
            operands = [e.left, e.right]
        elif isinstance(e, gast.UnaryOp) and isinstance(e.op, (gast.USub, gast.UAdd)):
            operands = [e.operand]
        else:
            return False
        return all(self.kinds[a] == SCALAR for a in operands if not isinstance(
            a, gast.Constant) or type(a.value) not in (int, float))

    def reduced_to_scalar(self, op, param, target):
        """Whether `op` reduces the array `param` to the scalar `target` and its rule
        says what each element of the adjoint is."""
        variant = op.variant
        return (variant is not None and variant.uniform is not None
                and param == variant.params[0][0] and self.kinds.kind.get(target) == SCALAR
                and self.kinds[op.bound[param]] == ARRAY)

    def contribution(self, op, param, g, target, s, reduced=False):
        if op.variant is None:
            raise self.missing_rule(op, s)
        if op.prim is getattr and self.kinds[op.bound["obj"]] in (SCALAR, ARRAY):
            kind = "number" if self.kinds[op.bound["obj"]] == SCALAR else "array"
            raise MissingRuleError(
                f"{self.src.where(s)}: reading the attribute .{op.bound['name'].value} of a "
                f"differentiated {kind} is not supported; fields are differentiated for "
                "dataclasses and named tuples\n    " + self.src.line_text(s).strip())
        sequences = sequence_operands(op, self.kinds)
        if sequences:       # `+` joins lists or tuples, `*` repeats one
            helper = "unadd" if op.prim is operator.add else "unmul"
            return syntax.call(self.ctx.runtime(helper), [g] + [
                syntax.copied(a) for a in sequences] + [syntax.const(["x", "y"].index(param))])
        template = op.variant.uniform if reduced else op.variant.templates[param]
        subst = {"where": syntax.const(self.src.where(s)), op.variant.cotangent: g,
                 "ans": syntax.name(target), **op.bound}    # (a parameter may be `where`)
        for free, obj in template.free.items():
            subst[free] = template_name(self.ctx.bind(free, obj=obj), obj)
        expr = syntax.substitute(template.tree, subst)
        for n in syntax.name_nodes(expr):
            if marks.BUILTIN.of(n):
                n.id = self.ctx.bind(n.id)
        if self.computed:
            expr = self.reusing(expr)
        arg = op.bound[param]
        if op.variant.broadcast and not reduced and self.needs_unbroadcast(op, param, target):
            expr = syntax.call(self.ctx.runtime("unbroadcast"), [expr, syntax.copied(arg)])
        return simplify(on_numbers(expr, lambda n: self.kinds[n] == SCALAR))

    def straight_calls(self, body):
        """{(function, its arguments' source): name} of the calls of functions on atoms
        that the straight-line code of the function computes (`t = np.cos(angle)`)."""
        out = {}
        for s in body:
            v = getattr(s, "value", None)
            if not (isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name)
                    and s.targets[0].id in self.straight and isinstance(v, gast.Call)
                    and not v.keywords and all(syntax.is_atom(a) and (
                        not isinstance(a, gast.Name) or a.id in self.straight
                        or not self.src.is_local(a.id)) for a in v.args)):
                continue
            func = self.src.resolve(v.func)
            if callable(func) and _elementwise(func):
                out.setdefault((func, tuple(map(unparse, v.args))), s.targets[0].id)
        return out

    def reusing(self, e):
        """`e` reading the name of each call the straight-line code computes already
        (`angle_bar = ... * np.cos(angle)` where `t = np.cos(angle)`)."""
        if isinstance(e, gast.Call) and not e.keywords:
            func = e.func
            if isinstance(func, gast.Attribute) and isinstance(func.value, gast.Name):
                base = self.ctx.bindings.get(func.value.id)
                func = getattr(base, func.attr, None) if base is not None else None
            else:
                func = self.ctx.resolve(func)
            try:
                name = self.computed.get((func, tuple(map(unparse, e.args))))
            except TypeError:       # (an object that cannot be hashed is no ufunc)
                name = None
            if name is not None:
                return syntax.name(name)
        return syntax.rebuilt(e, self.reusing)

    def needs_unbroadcast(self, op, param, target):
        """Whether the contribution to `param` may have another shape than it: not when
        it has the shape of the result `target` (or the broadcast's pattern), nor when
        every other operand is a scalar or has its shape (`x * x`, `x[1:] - x[:-1]`)."""
        mine, arrays = op.bound[param], [a for a in op.bound.values() if self.kinds[a] != SCALAR]
        if self.shapes.same(mine, target) or self.shapes.result_shaped(mine, arrays):
            return False
        others = [a for p, a in op.bound.items() if p != param]
        return not all(self.kinds[a] == SCALAR or _same(a, mine) or self.shapes.same(a, mine)
                       for a in others)

    def missing_rule(self, op, s):
        """A located MissingRuleError whose first line says what to do."""
        where = f"{self.src.where(s)}: "
        code = f"\n    {self.src.line_text(s).strip()}"
        node = op.node
        if op.prim is None:
            what = {gast.Tuple: "building a tuple of differentiated values",
                    gast.List: "building a list of differentiated values",
                    gast.Subscript: "indexing a differentiated value",
                    gast.Attribute: "reading an attribute of a differentiated value",
                    }.get(type(node))
            if what is None and isinstance(node, gast.Call):
                if not_in_module(node.func, self.src) is not None:
                    return MissingRuleError(f"{where}{not_in_module(node.func, self.src)}{code}")
                func = as_written(node.func, self.wengert, self.src)
                if isinstance(node.func, gast.Attribute):
                    return MissingRuleError(
                        f"{where}the method call {func}() is not supported here: s2sad "
                        "finds a method through the class of its object when it knows "
                        "that class (an argument of a class of yours, an instance built "
                        "in the function, self in a method), and here it does not. Call "
                        "it through its class (ClassName.method(obj, ...)), or, for a "
                        "library's object (scipy's norm(mu, s)), a function that takes the "
                        f"values (norm.logpdf(x, mu, s)){code}")
                what = unresolved_call(node.func, func, self.src) or (
                    f"the call {func}(), whose function s2sad cannot resolve statically,")
            return MissingRuleError(
                f"{where}{what or type(node).__name__} is not supported yet; compute the "
                f"value from the scalars and arrays the function receives{code}")
        spelled = unparse(node.func) if isinstance(node, gast.Call) else _label(op.prim)
        if _has_rule(op.prim):
            covered = " or ".join(f"{spelled}({', '.join(_spelled_param(p) for p in v.params)})"
                                  for v in registry.lookup(op.prim).variants)
            given = ", ".join(f"{k.arg}=" for k in getattr(node, "keywords", ()))
            return MissingRuleError(
                f"{where}s2sad's rules for {spelled} cover the calls {covered}; this one "
                f"passes {len(getattr(node, 'args', ()))} positional argument(s)"
                + (f" and {given}" if given else "") + ", which they do not. Write the "
                "call in one of those forms" + (" (for where=mask, multiply by the mask: "
                                               "np.sum(x * mask))" if "where=" in given
                                               else "")
                + f", or register a rule for it with s2sad.defvjp{code}")
        elif callable(op.prim) and hasattr(op.prim, "__code__"):
            detail = (f"{spelled} is a Python function, and calls to other Python functions "
                      "are not differentiated yet")
        elif inspect.isclass(op.prim) and not user_class(op.prim):
            return MissingRuleError(f"{where}{library_class(op.prim, spelled)}{code}")
        elif inspect.isclass(op.prim):
            return MissingRuleError(
                f"{where}{spelled}(...) builds an object of your class {spelled} from "
                "differentiated values; s2sad differentiates through the fields of "
                "dataclasses and named tuples, and through the constructors of plain "
                "classes whose __init__ only stores its parameters (self.w = w) or "
                f"constants: make {spelled} a @dataclasses.dataclass (or a "
                "typing.NamedTuple), or compute the values before the call and let "
                f"__init__ store them, or keep the values in local variables{code}")
        else:
            detail = f"s2sad has no derivative rule for {spelled}"
        params = _param_names(op.prim, len(op.args))
        if _elementwise(op.prim):
            templates = ", ".join(f'"g * d{spelled.split(".")[-1]}/d{p}"' for p in params)
            return MissingRuleError(
                f"{where}{detail}; register one with s2sad.defvjp({spelled}, "
                f"\"{', '.join(params)}\", {templates}) (derivatives written out, see "
                f"help(s2sad.defvjp)), or mark it s2sad.nondiff({spelled}) if no "
                f"derivative flows through it{code}")
        name, args = "my_" + spelled.split(".")[-1], ", ".join(params)
        skeleton = "\n".join([
            "@s2sad.custom_vjp", f"def {name}({args}):", f"    return {spelled}({args})",
            f"def {name}_fwd({args}):", f"    return {name}({args}), ({args},)",
            f"def {name}_bwd(res, g):", f"    {args}, = res",
            f"    return ({', '.join('...' for _ in params)},)     # the adjoint of "
            f"{' and '.join(params)}, from g", f"{name}.defvjp({name}_fwd, {name}_bwd)"])
        return MissingRuleError(
            f"{where}{detail}; give it a rule with a custom_vjp function that calls it "
            f"(below; see docs/rules.md) and call that function instead, or mark it "
            f"s2sad.nondiff({spelled}) if no derivative flows through it{code}\n"
            + "\n".join("        " + line for line in skeleton.splitlines()))

    def if_(self, s, defined):
        raising = [syntax.always_raises(b) for b in (s.body, s.orelse)]
        if raising.count(True) == 1:    # (a pullback never runs after the arm that raises)
            return self.block(s.orelse if raising[0] else s.body, defined)
        branches = []
        for stmts in (s.body, s.orelse):
            d = set(defined)
            branches.append((self.block(stmts, d), d))
        union = branches[0][1] | branches[1][1]
        for code, d in branches:
            code.extend(self.zero(n) for n in sorted(union - d, key=self.adj))
        defined.clear()
        defined.update(union)
        (then, _), (orelse, _) = branches
        if not then and not orelse:
            return []
        if not then:
            return [syntax.located(syntax.if_(syntax.not_(syntax.copied(s.test)), orelse), s)]
        return [syntax.located(syntax.if_(syntax.copied(s.test), then, orelse), s)]

    def zero(self, n):
        """`n_bar = 0.0`, a symbolic zero that arithmetic broadcasts; for an array no loop
        assigns (reading it adds nothing to a tape), zeros of its shape, which indexing and
        reshaping rules and the caller need; for a list, tuple or dict, of its structure."""
        kind = self.kinds.kind.get(n)
        if (kind == ARRAY and n not in self.in_loops) or kind == CONTAINER:
            # a container's adjoint is indexed (`t_bar = a_bar[0]`): zeros of its
            # structure, whose value a loop records for it
            return syntax.assign(self.adj(n), syntax.call(self.ctx.runtime("zeros_like"),
                                                        [syntax.name(n)]))
        if self.kinds.kind.get(n) != SCALAR:
            self.scalar_zeros = True
        return syntax.assign(self.adj(n), syntax.const(0.0))

    def loop(self, s, defined):
        if isinstance(s, gast.For) and not is_range(s, self.src) and not is_checkpointed(
                s.iter, self.src) and any(
                isinstance(n, gast.Name) and n.id in self.active for n in syntax.walk(s.iter)):
            raise MissingRuleError(
                f"{self.src.where(s)}: iterating over a differentiated sequence is not "
                "supported yet; loop over range(len(...)) and index it"
                f"\n    {self.src.line_text(s).strip()}")
        info = (CheckpointedLoop if checkpointed(s, self) else LoopPlan)(s, self)
        flowing = {n for n in info.read_outside | info.carried_within if n in self.active}
        inner = set(defined) | flowing
        body = self.block(s.body, inner)
        body.extend(self.zero(n) for n in sorted(info.carried_within & self.active - inner,
                                                 key=self.adj))
        target = s.target.id if isinstance(s, gast.For) else None
        if target in defined and target in self.active:
            # each iteration binds the target anew (to a number of range): the value it
            # had before the loop, and its adjoint, end with the first iteration
            body.append(self.zero(target))
        loaded = set(syntax.names_loaded(syntax.if_(syntax.const(True), body)))
        stored = set(syntax.names_stored(syntax.if_(syntax.const(True), body)))
        # an adjoint the body reads or writes exists after the reversed loop, and must be
        # zero before it (the body may read it first; the loop may run no iteration)
        pre = sorted((n for n in flowing - defined if self.adj(n) in loaded | stored),
                     key=self.adj)
        if not body:
            return []
        defined.update(pre)
        info.add_inner()
        info.defined_inside.update(self.user_calls[n][0] for n in syntax.walk(s)
                                   if n in self.user_calls)
        if isinstance(info, CheckpointedLoop):     # snapshots, not a tape
            info.plan()
            self.loops[s] = info
            sweep = syntax.located(info.reversed_loop(body), s)
            return [self.zero(n) for n in pre] + info.prelude + [sweep]
        # what the reversed body reads of this iteration; a value an inner reversed loop
        # unpacks from its own tape is that loop's business, but the same name read
        # elsewhere in the body still needs this iteration's value
        record = sorted(n for n in free_loads(body, set())
                        if n in self.primal_names and n in info.defined_inside)
        again = self.recomputable(s, record, info.defined_inside)
        body[:0] = again
        recomputed = {d.targets[0].id for d in again}
        if isinstance(s, gast.For) and s.target.id not in record and any(
                syntax.is_name(n, s.target.id) for d in again for n in syntax.name_nodes(d)):
            record.append(s.target.id)      # (an element read back at the counter)
        # an array whose elements are read back is read at its final value; other
        # reads of it for its shape alone may read that too (its versions have one shape)
        finals = {d.value.value.id for d in again if marks.READ_BACK.of(d)}
        if finals:
            shape_only = {id(a) for _, a in self.ctx.shape_only_args(body)}
            data = {n.id for d in body if not marks.READ_BACK.of(d)
                    for n in syntax.name_nodes(d) if n.id in finals
                    and isinstance(n.ctx, gast.Load) and id(n) not in shape_only}
            record = [n for n in record if n not in finals - data]
        arrays, carried, record = rematerialized(
            s, [n for n in record if n not in recomputed], self, body, recomputed)
        body[len(again):len(again)] = arrays
        # a value an iteration ends with is the start value of the iteration after:
        # the reversed loop keeps it, from the final value before the first iteration
        ends = [syntax.assign(end, syntax.name(c)) for end, c in sorted(carried.items())]
        for d in ends:
            marks.RECOMPUTED.put(d, True)
        body.extend(ends)
        info.plan(record)
        self.loops[s] = info
        return ([self.zero(n) for n in pre] + [syntax.copied(d) for d in ends]
                + [syntax.located(info.reversed_loop(body), s)])

    def recomputable(self, loop, record, inside):
        """Statements for the top of `loop`'s reversed body that compute again, instead
        of reading from the tape, the values in `record` that are one scalar `+ - * /`
        or sign change of values on the tape or not assigned in the loop (such as `-c`
        of a `c` the loop does not change), or a field of an object the loop does not
        assign (`p.dt`), computed on every path through the body."""
        if self.assigned is None:
            self.assigned = store_counts(self.wengert)
        nested = nested_stores(loop)

        reads = {id(d) for d in final_element_reads(loop, self)}
        free = set()        # elements read back from their array, and values of them

        counter = loop.target.id if isinstance(loop, gast.For) else None

        def available(x):       # (the counter is, recorded if it is not already)
            return isinstance(x, gast.Constant) or (
                self.kinds[x] == SCALAR and self.src.is_local(x.id)
                and (x.id not in inside or x.id in free or x.id == counter
                     or (x.id in record and x.id not in nested)))

        def field_of_invariant(v):      # `p.dt` of a `p` the loop does not assign
            return (isinstance(v, gast.Attribute) and isinstance(v.value, gast.Name)
                    and self.src.is_local(v.value.id) and v.value.id not in inside
                    and registry.ATTRIBUTES.get(v.attr) is None)
        found = []
        for d in loop.body:
            if any(isinstance(x, (gast.Break, gast.Continue, gast.Return))
                   or marks.MARKER.of(x) == "path_end" for x in own_statements([d])):
                break           # the statements after it do not run on every path
            operands = _cheap_operands(d.value) if isinstance(d, gast.Assign) else None
            if id(d) in reads:
                if all(available(x) for x in syntax.name_nodes(d.value.slice)):
                    found.append(d)
                    free.add(d.targets[0].id)
                continue
            if isinstance(d, gast.Assign) and field_of_invariant(d.value):
                operands = []
            elif isinstance(d, gast.Assign) and isinstance(d.value, gast.Name):
                operands = [d.value]    # a copy (`t = p_dt`, a field read at the top)
            target = d.targets[0] if operands is not None else None
            if (isinstance(target, gast.Name) and (target.id in record or all(
                        isinstance(x, gast.Constant) or x.id in free for x in operands))
                    and self.assigned[target.id] == 1 and self.kinds[target] == SCALAR
                    and all(available(x) for x in operands)):
                found.append(d)
                if all(isinstance(x, gast.Constant) or x.id in free for x in operands):
                    free.add(target.id)
        # a value another one is recomputed from stays on the tape, unless it is computed
        # from values the loop does not assign (`dt * drag`) or reads back: then both are
        # computed again
        taped = {x.id for d in found if id(d) not in reads for x in _operands(d.value)
                 if isinstance(x, gast.Name)}
        invariant = set(free)       # (found is in the order of the body)
        for d in found:
            if not any(isinstance(x, gast.Name) and x.id in inside and x.id not in invariant
                       for x in _operands(d.value)):
                invariant.add(d.targets[0].id)
        # the statements that compute what the body reads, and what those read
        out, needed = [], set(record)
        for d in reversed(found):
            name = d.targets[0].id
            if name in needed and (name not in taped or name in invariant):
                out.append(syntax.assign(name, syntax.copied(d.value)))
                marks.RECOMPUTED.put(out[-1], True)
                marks.READ_BACK.put(out[-1], id(d) in reads)
                needed.update(x.id for x in syntax.name_nodes(d.value))
        return out[::-1]

    # -- forward pass ------------------------------------------------------------------
    def forward_pass(self, stmts):
        out = []
        for s in stmts:
            if isinstance(s, gast.If):
                s.body = self.forward_pass(s.body) or [gast.Pass()]
                s.orelse = self.forward_pass(s.orelse)
            elif isinstance(s, (gast.For, gast.While)):
                info = self.loops.get(s)
                if isinstance(info, CheckpointedLoop):
                    out.extend(info.forward_sweep())
                    continue
                s.body = self.forward_pass(s.body)
                if info is not None:
                    out.extend(info.instrument())
            elif self.updates.is_update(s):
                out.extend(self.updates.expand(s))
                continue
            elif s in self.user_calls:
                pullback, vjp = self.user_calls[s]
                s.targets = [syntax.tuple_([syntax.name(s.targets[0].id, store=True),
                                           syntax.name(pullback, store=True)], store=True)]
                s.value = copy.copy(s.value)
                s.value.func = syntax.name(vjp)
            out.append(s)
        return out


def _straight_line_names(fn):
    """Names neither assigned nor read inside an `if` or a loop."""
    nested = set()
    for s in fn.body:
        if isinstance(s, (gast.If, gast.For, gast.While)):
            nested.update(n.id for n in syntax.name_nodes(s))
    everything = {n.id for n in syntax.name_nodes(fn)}
    params = {a.id for a in fn.args.args + fn.args.posonlyargs + fn.args.kwonlyargs}
    return (everything | params) - nested


def _strip_markers(stmts):
    out = []
    for s in stmts:
        if marks.MARKER.of(s):
            continue
        for field in ("body", "orelse"):
            if isinstance(getattr(s, field, None), list):
                setattr(s, field, _strip_markers(getattr(s, field)))
        out.append(s)
    return out


def _whole(index):
    """Whether the index `index` (an `index_value`) is only `...` and `None`, or `()`:
    one that selects the whole of a 0-d value."""
    items = index.elts if isinstance(index, gast.Tuple) else [index]
    return all(isinstance(i, gast.Constant) and (i.value is None or i.value is Ellipsis)
               for i in items)


def _equal_terms_doubled(terms, kinds):
    """The (name, contribution, reduced) of one statement, two equal contributions to
    one name (`g * x` twice, from `x * x`) made one, doubled (`2 * g * x`): where the
    contribution is a number or an array (`kinds`), or arithmetic (`2 *` repeats a
    list)."""
    if len({name for name, _, _ in terms}) == len(terms):
        return terms
    out, first = [], {}
    for name, expr, reduced in terms:
        key = (name, reduced, syntax.unparse(expr))
        if kinds.kind.get(name) not in (SCALAR, ARRAY) and not isinstance(
                expr, (gast.BinOp, gast.UnaryOp)):
            out.append((name, expr, reduced))       # (added with _s2s_add)
        elif first.get(key) is None:
            first[key] = len(out)
            out.append((name, expr, reduced))
        else:
            out[first.pop(key)] = (name, doubled(expr), reduced)
    return out


def _same(a, b):
    return isinstance(a, gast.Name) and isinstance(b, gast.Name) and a.id == b.id


def _operands(v):
    """The atoms a recomputed value `v` reads: a copy's name, or `_cheap_operands`."""
    return [v] if isinstance(v, gast.Name) else _cheap_operands(v) or []


def _cheap_operands(v):
    """The operands of `v` if it is one `+`, `-`, `*`, `/` or sign change of atoms, or a
    power by a constant."""
    if isinstance(v, gast.BinOp) and (isinstance(v.op, (gast.Add, gast.Sub, gast.Mult,
                                                        gast.Div)) or (
            isinstance(v.op, gast.Pow) and isinstance(v.right, gast.Constant))):
        operands = [v.left, v.right]
    elif isinstance(v, gast.UnaryOp) and isinstance(v.op, (gast.USub, gast.UAdd)):
        operands = [v.operand]
    else:
        return None
    return operands if all(syntax.is_atom(x) for x in operands) else None


#: What to write instead of a call of a class of Python's that builds, from differentiated
#: values, an object s2sad has no rule for (see `library_class`).
_INSTEAD = {
    map: "it where its items are read whole (sum(map(f, xs)), list(map(f, xs)), a loop "
         "over it), or a list comprehension, [f(v) for v in xs]; a map kept in a variable "
         "is an iterator, which s2sad does not follow",
    filter: "it where its items are read whole (sum(filter(test, xs)), a loop over it), or "
            "a list comprehension with a condition, [v for v in xs if test(v)]",
    enumerate: "a loop over it (for i, v in enumerate(xs): ...), a list comprehension "
               "over it, or list(enumerate(xs)), where s2sad reads it",
    zip: "a loop over it (for a, b in zip(xs, ys): ...), a list comprehension over it, "
         "list(zip(xs, ys)) or an unpacking (a, b = zip(*pairs)), where s2sad reads it",
    reversed: "a loop over it (for v in reversed(xs): ...), or xs[::-1]",
    set: "a list or tuple of the values",
    frozenset: "a list or tuple of the values",
}


def library_class(cls, spelled):
    """Why a call `spelled(...)` of `cls`, a class of Python's or of a library, is
    refused on differentiated values, and what to write instead."""
    if issubclass(cls, np.generic):
        instead = (f"np.asarray(x, dtype={spelled}) (or x.astype({spelled}) for an array), "
                   "whose derivative s2sad knows")
    else:
        instead = _INSTEAD.get(cls, "functions s2sad has rules for on the values, or give "
                                    f"{spelled} a rule (s2sad.defvjp, s2sad.defjvp)")
    return (f"{spelled}(...) makes an object of the type {_label(cls)} from differentiated "
            f"values, which s2sad has no derivative rule for; write {instead}")


def _label(prim):
    mod = getattr(prim, "__module__", None)
    name = getattr(prim, "__qualname__", None) or repr(prim)
    return f"{mod}.{name}" if mod and mod != "builtins" else name


def _elementwise(prim):
    """Whether `prim` acts on each number by itself: a NumPy ufunc, or a function of
    `math` or `cmath` (whose rule is then `g` times a derivative per argument)."""
    return isinstance(prim, np.ufunc) or getattr(prim, "__module__", None) in (
        "math", "cmath") or getattr(prim, "__self__", None) is math


def _param_names(prim, n):
    try:
        names = [p.name for p in inspect.signature(prim).parameters.values()
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        names = []
    return names[:n] if len(names) >= n else ["x", "y", "z", "u", "v", "w"][:n]


def _spelled_param(param):
    name, default = param
    return name if default is registry.REQUIRED else f"{name}={default!r}"


def _has_rule(prim):
    return registry.lookup(prim) is not None


def rename_unpacks(pullback, namer):
    """A reversed loop rebinds the values it reads from its tape; where the pullback
    also reads those names outside the loop (final values), rename them in the loop."""
    loops = [n for n in syntax.statements(pullback) if isinstance(n, gast.For)]
    names = NameCounts(pullback) if loops else None     # (counted where there are loops)
    for loop in loops:
        inside, found = None, None
        for name in sorted(set(syntax.names_stored(loop.target))):
            inside = inside or NameCounts(loop)
            if names.loads[name] > inside.loads[name]:
                new = namer.fresh(name)
                if found is None:   # the names of the target and the body, found once
                    found = _names_by_id([loop.target] + loop.body)
                    assigned = {id(t.targets[0]) for block in syntax.blocks(loop.body)
                                for t in block if isinstance(t, gast.Assign)
                                and isinstance(t.targets[0], gast.Name)}
                nodes = found.pop(name, [])
                for n in nodes:
                    n.id = new
                found.setdefault(new, []).extend(nodes)
                # the counts move to the new name, as if counted again
                loads = sum(isinstance(n.ctx, gast.Load) for n in nodes)
                assigns = sum(id(n) in assigned for n in nodes)
                for counts in (names, inside):
                    counts.loads[name] -= loads
                    counts.loads[new] += loads
                    counts.assigns[name] -= assigns
                    counts.assigns[new] += assigns


def _names_by_id(nodes):
    """{name: its `Name` nodes} in `nodes`."""
    out = {}
    for node in nodes:
        for n in syntax.name_nodes(node):
            out.setdefault(n.id, []).append(n)
    return out
