"""Forward mode: Wengert form to `f_jvp(x, ..., x_dot, ...) -> (y, y_dot)`.

Each statement whose value varies with the differentiated inputs is followed by its
tangent statement; other values get no tangent. A tangent known to be zero is never
computed, only written where a join or a loop needs one for a name that varies on
another path (an item read back from a tape of tuples varies as its position in the
tuples appended does: `tape_positions`). Control flow is kept as it is: a loop over
varied values iterates their tangents alongside, and a call to another Python function
calls its own `g_jvp`.
Tangent parameters follow the primal ones (keyword-only after parameters with
defaults); at the output a zero tangent is materialised.

>>> from s2sad.ad.forward_mode import Forward
>>> print(show(Forward, '''
... def f(x, y):
...     return x * y + sin(x)
... ''', wrt=(0, 1)))
def f_jvp(x, y, x_dot, y_dot):
    t = x * y
    t_dot = x_dot * y + y_dot * x
    t_1 = sin(x)
    t_1_dot = x_dot * cos(x)
    y_1 = t + t_1
    y_1_dot = t_dot + t_1_dot
    return (y_1, y_1_dot)

Loops keep their shape; a carried value's tangent is carried with it:

>>> print(show(Forward, '''
... def f(x):
...     t = (1 + x) / 2
...     for i in range(3):
...         t = (t + x / t) / 2
...     return t
... '''))
def f_jvp(x, x_dot):
    t_1 = 1 + x
    t_1_dot = x_dot
    t = t_1 / 2
    t_dot = t_1_dot / 2
    for i in range(3):
        t_2 = x / t
        t_2_dot = x_dot / t - t_dot * t_2 / t
        t_3 = t + t_2
        t_3_dot = t_dot + t_2_dot
        t = t_3 / 2
        t_dot = t_3_dot / 2
    return (t, t_dot)
"""
import builtins
import dataclasses
import inspect
import operator

import gast

from .. import marks
from ..analysis import operations
from ..analysis.activity import closure, definitions
from ..analysis.names import BlockNames, live_names, not_in_module, rename
from ..analysis.value_kinds import ARRAY, SCALAR, sequence_operands, user_class
from ..analysis.operations import CALL, COPY, CUSTOM, NONDIFF, PACK, USER, classify
from .. import syntax
from ..compilation import Callee
from ..errors import InternalError, MissingRuleError, S2SADError
from ..frontend import source
from ..options import Variant
from ..rules import pytrees, registry, writes
from .reverse_mode import library_class
from .simplify import doubled, negated, on_numbers, simplify, template_name


def run(fn, ctx):
    """The pass: `f_jvp` for the function `fn` in Wengert form; the transform's result
    is `ctx.forward`."""
    return Forward(ctx).run(fn)


@dataclasses.dataclass
class ForwardResult:
    """What the forward transform made: the names of the tangent parameters (those of
    `wrt`, in order) and {name: its tangent's name}."""
    tangent_names: list
    dots: dict


class Forward:
    """See the module docstring; `ctx` is the `Compilation`."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.src = ctx.src
        self.namer = ctx.namer
        self.wrt = list(ctx.wrt)
        self.dots = {}
        self.adapters = {}

    def run(self, fn):
        *body, ret = fn.body
        if not isinstance(ret, gast.Return):
            raise InternalError("forward: Wengert form must end with one return")
        self.tangent_names = [self.dot(p) for p in self.wrt]
        self.ctx.forward = ForwardResult(self.tangent_names, self.dots)
        self.free = self.src.free_values()
        self.ops = self.ctx.ops
        self.varied = self.analyse(fn)
        self.kinds = self.ctx.value_kinds
        params = [a.id for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs]
        start = [self.zero_tangent(p, syntax.name(p)) for p in params
                 if p in self.varied and p not in self.wrt]
        body = start + self.block(body)
        y_dot = self.tangent(ret.value)
        body.append(syntax.located(syntax.ret(syntax.tuple_([ret.value, y_dot])), ret))
        jvp = syntax.function(self.namer.fresh(f"{fn.name}_jvp"), [], body, like=fn)
        self.add_tangent_params(jvp.args)
        for n in syntax.name_nodes(jvp):
            if marks.LIFTED.of(n):
                self.ctx.bindings[n.id] = marks.PRIM.of(n)    # its own name: nothing else has it
            elif marks.PRIM.of(n) is not None:
                n.id = self.ctx.bind(n.id, obj=marks.PRIM.of(n))
        _coalesce(jvp, set(self.dots.values()))
        return jvp


    # -- activity: the names that vary with the inputs ------------------------------------
    def analyse(self, fn):
        edges, reads = tape_positions(fn, self.ops)
        for target, s in definitions(fn.body):
            op = self.ops[s]
            if id(s) in reads:
                edges.append((reads[id(s)], target))
                continue
            edges += [(a.id, target) for a in self.sources(op) if isinstance(a, gast.Name)]
        for loop in (n for n in syntax.statements(fn) if isinstance(n, gast.For)):
            edges += [(a.id, loop.target.id) for a in self.iter_sources(loop.iter)
                      if isinstance(a, gast.Name)]
        return closure(set(self.wrt), edges)

    def sources(self, op):
        """The argument atoms a tangent can flow from."""
        if op.form in (COPY, PACK):
            return op.args
        if op.form == NONDIFF:
            return []
        rule = self.rule(op)
        if rule is None:
            return op.args
        variant, bound, _ = rule
        params = set(variant.templates) | {p for g in _groups(variant) for p in g}
        return [a for p, a in bound.items() if p in params]

    def iter_sources(self, it):
        return [it] if isinstance(it, gast.Name) else self.sources(classify(it, self.src))

    def rule(self, op):
        """(variant, binding, tangent placeholder) of `op`'s forward rule, or None."""
        if op.prim is None or op.form in (COPY, PACK, NONDIFF):
            return None
        args, keywords = operations.call_arguments(op, self.src)
        return forward_rule(op.prim, args, keywords)

    # -- names --------------------------------------------------------------------------

    def dot(self, n):
        if n not in self.dots:
            self.dots[n] = self.namer.fresh(f"{n}_dot")
        return self.dots[n]

    def is_varied(self, atom):
        return isinstance(atom, gast.Name) and atom.id in self.varied

    def tangent(self, atom):
        """The tangent of `atom` as an expression (zeros if it has none)."""
        return syntax.name(self.dot(atom.id)) if self.is_varied(atom) else self.zero(atom)

    def zero(self, atom):
        if isinstance(atom, gast.Constant) and type(atom.value) in (int, float):
            return syntax.const(0.0)
        return syntax.call(self.ctx.runtime("zeros_like"), [syntax.copied(atom)])

    def zero_tangent(self, target, value):
        """`target_dot = ...` for a varied `target` whose value here does not vary."""
        if isinstance(value, (gast.Tuple, gast.List)):
            zero = type(value)(elts=[self.zero(a) for a in value.elts], ctx=gast.Load())
        elif isinstance(value, gast.Dict):
            zero = gast.Dict(keys=syntax.copied(value.keys), values=[
                self.zero(a) for a in value.values])
        else:
            zero = self.zero(value if syntax.is_atom(value) else syntax.name(target))
        return syntax.assign(self.dot(target), zero)


    def add_tangent_params(self, args):
        params = [syntax.name(n) for n in self.tangent_names]
        for p in params:
            p.ctx = gast.Param()
        if args.defaults:   # after parameters with defaults, tangents are keyword-only
            args.kwonlyargs = params + args.kwonlyargs
            args.kw_defaults = [None] * len(params) + args.kw_defaults
        else:
            args.args = args.args + params

    # -- statements ---------------------------------------------------------------------
    def block(self, stmts):
        out = []
        for s in stmts:
            if marks.MARKER.of(s):
                continue
            if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name):
                out.extend(self.assign(s))
                continue
            head = self.iterate(s) if isinstance(s, gast.For) else []
            if isinstance(s, (gast.If, gast.For, gast.While)):
                s.body = head + self.block(s.body)
                s.orelse = self.block(s.orelse)
            out.append(s)
        return out

    def assign(self, s):
        target = s.targets[0].id
        if target not in self.varied:
            return [s]
        op = self.ops[s]
        if op.form == CUSTOM and "jvp" in op.prim.s2s_custom and any(
                self.is_varied(a) for a in op.args):
            return [self.custom_call(s, op)]
        if self.calls_user(op):
            return [self.user_call(s, op)]
        expr = self.tangent_expr(op, target, s)
        tangent = (self.zero_tangent(target, s.value) if expr is None
                   else syntax.assign(self.dot(target), expr))
        marks.PHI.put(tangent, marks.PHI.of(s))
        marks.TEMPORARY.put(tangent, marks.TEMPORARY.of(s))
        return [s, syntax.located(tangent, s)]

    def tangent_expr(self, op, target, s):
        if not any(self.is_varied(a) for a in self.sources(op)):
            return None
        if op.form == COPY:
            return self.tangent(op.args[0])
        if op.form == PACK and isinstance(op.node, gast.Dict):
            return gast.Dict(keys=syntax.copied(op.node.keys),
                             values=[self.tangent(a) for a in op.args])
        if op.form == PACK:
            return type(op.node)(elts=[self.tangent(a) for a in op.args], ctx=gast.Load())
        sequences = sequence_operands(op, self.kinds)
        if sequences:       # `+` joins lists or tuples, `*` repeats one
            helper = "join_tangent" if isinstance(op.node.op, gast.Add) else "repeat_tangent"
            return syntax.call(self.ctx.runtime(helper), [syntax.copied(a) for a in sequences]
                               + [self.tangent(a) for a in sequences])
        rule = self.rule(op)
        if rule is None:
            raise self.missing_rule(op, s)
        variant, bound, placeholder = rule
        if op.prim is builtins.getattr and self.may_be_registered(bound["obj"]):
            # the attribute of a registered pytree is one of its children, or a constant
            obj, name = bound["obj"], bound["name"]
            return syntax.call(self.ctx.runtime("attr_dot"), [
                self.tangent(obj), syntax.copied(obj), syntax.copied(name)])
        terms = []
        for group in _groups(variant):
            if any(self.is_varied(bound[p]) for p in group):
                terms.append(syntax.replaced(op.node, {id(bound[p]): self.tangent(bound[p])
                                                 for p in group}))
        for param, template in variant.templates.items():
            if self.is_varied(bound[param]):
                terms.append(self.instantiate(template, placeholder, param, bound, target, s))
        if len(terms) > 1 and isinstance(op.node, gast.Call) and self.kinds.kind.get(
                target) not in (SCALAR, ARRAY):
            # the tangents of a call that may give a tuple or list add part by part (`+`
            # joins them)
            expr = terms[0]
            for term in terms[1:]:
                expr = syntax.call(self.ctx.runtime("add"), [expr, term])
        else:
            expr = _sum(terms)
        return self.broadcast(expr, bound, target) if variant.broadcast else expr

    def may_be_registered(self, obj):
        """Whether `obj` may be an instance of a class registered as a pytree (see
        rules/pytrees.py): of such a class, or of a kind the analysis cannot tell."""
        kind = self.kinds[obj]
        return pytrees.by_attributes(kind) if isinstance(kind, type) else kind not in (
            SCALAR, ARRAY)

    def instantiate(self, template, placeholder, param, bound, target, s):
        subst = {"ans": syntax.name(target), "where": syntax.const(self.src.where(s))}
        subst.update(bound)
        subst[placeholder] = syntax.name(self.dot(bound[param].id))
        for free, obj in template.free.items():
            subst[free] = template_name(self.ctx.bind(free, obj=obj), obj)
        expr = syntax.substitute(template.tree, subst)
        for n in syntax.name_nodes(expr):
            if marks.BUILTIN.of(n):
                n.id = self.ctx.bind(n.id, obj=getattr(builtins, n.id))
        return simplify(on_numbers(expr, lambda n: self.kinds[n] == SCALAR))

    def broadcast(self, expr, bound, target):
        """`expr` broadcast to the result's shape where a broadcasting operation's
        tangent may be smaller than the result (`x_dot` in `x + y` if only `x` varies)."""
        loaded = set(syntax.names_loaded(expr))
        if target in loaded or all(
                self.kinds[a] == SCALAR for a in bound.values() if isinstance(a, gast.Name)
                and a.id not in loaded and self.dots.get(a.id) not in loaded):
            return expr
        return syntax.call(self.ctx.runtime("broadcast_like"), [expr, syntax.name(target)])

    def iterate(self, loop):
        """`for v in xs` over varied `xs` is `for v, v_dot in zip(xs, xs_dot)`; returns
        the statements that start the body."""
        target = loop.target.id
        if target not in self.varied:
            return []
        it = loop.iter
        if not any(self.is_varied(a) for a in self.iter_sources(it)):
            # the target varies through an assignment in the body, not its items
            return [self.zero_tangent(target, syntax.name(target))]
        if isinstance(it, gast.Name):
            it_dot = self.tangent(it)
        else:
            op = classify(it, self.src)
            rule = self.rule(op)
            if rule is None or rule[1] is None or not _groups(rule[0]):
                raise S2SADError(
                    f"{self.src.where(loop)}: forward mode cannot iterate over "
                    f"{_source(it)}, whose items vary with the inputs; loop over "
                    f"range(len(...)) and index instead\n    "
                    f"{self.src.line_text(loop).strip()}")
            variant, bound, _ = rule
            it_dot = syntax.replaced(op.node, {id(bound[p]): self.tangent(bound[p])
                                         for p in _groups(variant)[0]})
        loop.target = syntax.tuple_([syntax.name(target, store=True),
                                    syntax.name(self.dot(target), store=True)], store=True)
        loop.iter = syntax.call(self.ctx.bind("zip", obj=zip), [it, it_dot])
        return []

    # -- calls to other Python functions ------------------------------------------------
    def calls_user(self, op):
        """Whether `op` calls Python code without a forward rule, on varied values."""
        if op.form not in (USER, CUSTOM, CALL) or op.prim is None or self.rule(op):
            return False
        prim = op.prim.primal if op.form == CUSTOM else op.prim
        return (operations.python_function(prim) is not None
                and any(self.is_varied(a) for a in op.args))

    def user_call(self, s, op):
        """`t = g(a, b)`: `t, t_dot = g_jvp(a, b, a_dot)`, `g`'s own forward mode."""
        prim = op.prim.primal if op.form == CUSTOM else op.prim
        fn, args, kwargs = operations.python_function(prim)
        call = s.value
        varied = [i for i, a in enumerate(call.args) if self.is_varied(a)]
        # compiled for the kinds of the arguments here, as reverse mode's callees are
        arg_types = operations.argument_types(prim, call.args, self.kinds)
        key = (id(prim), tuple(varied), len(call.args), tuple(sorted(arg_types.items())))
        if key not in self.adapters:
            wrt = tuple(i + len(args) for i in varied)
            callee = Callee(fn, Variant.JVP, wrt, arg_types, tuple(args), dict(kwargs),
                            len(call.args))
            self.adapters[key] = (self.ctx.call(callee, f"{source.identifier(fn)}_jvp"), prim)
            if marks.RECORD.of(fn) is not None:
                self.ctx.lifted.append((fn, wrt, None))
        name = self.adapters[key][0]
        value = syntax.call(name, [syntax.copied(a) for a in call.args] + [
            syntax.name(self.dot(call.args[i].id)) for i in varied], call.keywords)
        target = s.targets[0].id
        pair = syntax.tuple_([syntax.name(target, store=True),
                             syntax.name(self.dot(target), store=True)], store=True)
        return syntax.located(syntax.assign(pair, value), s)

    def custom_call(self, s, op):
        """`t = f(a, b)` with a custom_jvp: `t, t_dot = f_rule((a, b), (a_dot, b_dot))`."""
        prim, call = op.prim, s.value
        if prim.rule is None:
            raise MissingRuleError(
                f"{self.src.where(s)}: {prim.__name__} is a custom_jvp without its rule; "
                f"define one with @{prim.__name__}.defjvp first"
                f"\n    {self.src.line_text(s).strip()}")
        if call.keywords:
            raise S2SADError(
                f"{self.src.where(s)}: {prim.__name__} is a custom_jvp, whose rule takes "
                "positional arguments only; pass the keyword arguments by position"
                f"\n    {self.src.line_text(s).strip()}")
        rule = self.ctx.bind(prim.rule.__name__, obj=prim.rule)
        value = syntax.call(rule, [syntax.tuple_([syntax.copied(a) for a in call.args]),
                                  syntax.tuple_([self.tangent(a) for a in call.args])])
        # what the rule returns, checked (tangents.value_and_tangent)
        value = syntax.call(self.ctx.runtime("value_and_tangent"), [value, syntax.name(rule)])
        target = s.targets[0].id
        pair = syntax.tuple_([syntax.name(target, store=True),
                             syntax.name(self.dot(target), store=True)], store=True)
        return syntax.located(syntax.assign(pair, value), s)

    def missing_rule(self, op, s):
        what = _source(op.node.func if isinstance(op.node, gast.Call) else op.node)
        rule = getattr(registry.primitive(op.prim), "jvp", None)
        if rule is not None and rule.variants:      # a rule, for other calls
            covered = " or ".join(f"{what}({', '.join(map(_spelled, v.params))})"
                                  for v in rule.variants)
            given = ", ".join(f"{k.arg}=" for k in getattr(op.node, "keywords", ()))
            return MissingRuleError(
                f"{self.src.where(s)}: s2sad's forward rules for {what} cover the calls "
                f"{covered}; this one passes {len(getattr(op.node, 'args', ()))} positional "
                "argument(s)" + (f" and {given}" if given else "") + ", which they do not. "
                "Write the call in one of those forms, or register a rule for it with "
                f"s2sad.defjvp\n    {self.src.line_text(s).strip()}")
        if inspect.isclass(op.prim) and not user_class(op.prim):
            return MissingRuleError(f"{self.src.where(s)}: {library_class(op.prim, what)}\n"
                                    f"    {self.src.line_text(s).strip()}")
        if isinstance(op.node, gast.Call) and not_in_module(op.node.func, self.src):
            return MissingRuleError(f"{self.src.where(s)}: "
                                    f"{not_in_module(op.node.func, self.src)}\n"
                                    f"    {self.src.line_text(s).strip()}")
        return MissingRuleError(
            f"{self.src.where(s)}: s2sad has no forward-mode rule for {what}; register one "
            f"with s2sad.defjvp (see help(s2sad.defjvp)), or mark it s2sad.nondiff\n    "
            f"{self.src.line_text(s).strip()}")


def _spelled(param):
    name, default = param
    return name if default is registry.REQUIRED else f"{name}={default!r}"


def forward_rule(prim, args, keywords):
    """(variant, binding, tangent placeholder) of the forward rule of a call to `prim`:
    a registered one, else the reverse rule's if it is elementwise (its templates are
    linear in `g`, the placeholder), else None."""
    record = registry.primitive(prim)
    if record is None:
        return None
    for rule, placeholder in ((record.jvp, "t"), (None if record.nondiff else record.vjp, "g")):
        if rule is not None:
            variant, bound = rule.match(args, keywords)
            if variant is not None and (placeholder == "t" or variant.elementwise):
                return variant, bound, placeholder
    return None


def _groups(variant):
    return getattr(variant, "linear", None) or []


def _sum(terms):
    """`terms` added up, with `a + -b` written `a - b`, and two equal terms (`x_dot * x`
    twice, from `x * x`) as one, doubled."""
    if len(terms) == 2 and _same_names(*terms) and (
            syntax.unparse(terms[0]) == syntax.unparse(terms[1])):
        return doubled(terms[0])
    expr = terms[0]
    for term in terms[1:]:
        positive = negated(term)
        expr = (syntax.binop(expr, gast.Sub(), positive) if positive is not None
                else syntax.binop(expr, gast.Add(), term))
    return expr


def _same_names(a, b):
    """Whether `a` and `b` hold the same names as often: what two expressions spelled
    the same do (a test much cheaper than spelling them)."""
    return sorted(n.id for n in syntax.name_nodes(a)) == sorted(
        n.id for n in syntax.name_nodes(b))


def _source(node):
    return syntax.unparse(node)


# -- clean-up: fold a loop's carried copies into the definitions they copy ----------------
def tape_positions(fn, ops):
    """The activity of each position of the tuples a tape holds (a tape of gradient code,
    which forward mode differentiates for `hessian`): `(edges, reads)`, the edges into
    and out of each position (`"tape[k]"`), and {id of `v = item[k]`: its position}, a
    read whose edge from `item` they replace. A tape qualifies when `[]` starts it and it
    grows only by `_s2s_append(tape, t)` of tuples written out (`t = (j, s, ...)`);
    `item` is the target of a loop over it (`reversed(tape)`). So an int or a dtype
    the tape holds beside varied values gets no tangent where it is read back."""
    defined, parent, appended, other = {}, {}, [], set()
    for target, s in definitions(fn.body):
        defined.setdefault(target, []).append(s)

    def find(n):
        while parent.get(n, n) != n:
            n = parent[n]
        return n
    packs = {t: ss[0].value.elts for t, ss in defined.items()
             if len(ss) == 1 and isinstance(ss[0].value, gast.Tuple)}
    for t, ss in defined.items():
        for s in ss:
            op, bound = ops[s], ops[s].bound or {}
            if isinstance(s.value, gast.List) and not s.value.elts:
                continue
            if op.form == COPY and isinstance(s.value, gast.Name):
                parent[find(t)] = find(s.value.id)
            elif (op.prim is writes.append and syntax.is_name(bound.get("a"))
                    and syntax.is_name(bound.get("v")) and bound["v"].id in packs):
                parent[find(t)] = find(bound["a"].id)
                appended.append((t, packs[bound["v"].id]))
            else:
                other.add(t)        # (grown otherwise: one activity for all of it)
    spoiled = {find(t) for t in other}
    tuples = {}
    for t, elts in appended:
        tuples.setdefault(find(t), []).append(elts)
    groups = {t: find(t) for t in defined if find(t) in tuples and find(t) not in spoiled}
    edges, reads, loops = [], {}, {}
    for g, elts in tuples.items():
        edges += [(e.id, f"{g}[{k}]") for each in elts for k, e in enumerate(each)
                  if isinstance(e, gast.Name) and g not in spoiled]
    fors = [n for n in syntax.statements(fn) if isinstance(n, gast.For)]
    targets = [n.id for loop in fors for n in syntax.name_nodes(loop.target)]
    for loop in fors:
        it = loop.iter
        if (isinstance(it, gast.Call) and syntax.is_name(it.func, "reversed")
                and len(it.args) == 1):
            it = it.args[0]
        if (syntax.is_name(it) and it.id in groups and syntax.is_name(loop.target)
                and targets.count(loop.target.id) == 1 and loop.target.id not in defined):
            loops[loop.target.id] = groups[it.id]
    for target, s in definitions(fn.body):
        op = ops[s]
        x, index = (op.bound or {}).get("x"), (op.bound or {}).get("index")
        if (op.prim is operator.getitem and isinstance(x, gast.Name) and x.id in loops
                and isinstance(index, gast.Constant) and type(index.value) is int):
            reads[id(s)] = f"{loops[x.id]}[{index.value}]"
    return edges, reads


def _coalesce(fn, tangents):
    """`w = e; ...; c = w` at a loop's path end is `c = e` when nothing in between reads
    or writes `c` and nothing else reads `w`. Then copies whose value nothing needs are
    dropped (also the join copies of a name defined in one branch only, which would read
    it unbound)."""
    loads = {}
    for n in syntax.names_loaded(fn):
        loads[n] = loads.get(n, 0) + 1
    for loop in [n for n in syntax.statements(fn) if isinstance(n, (gast.For, gast.While))]:
        for block in syntax.blocks(loop.body):
            _coalesce_block(block, loads)
    live_names(fn.body, set(), delete=True, dead=lambda s, target: (
        syntax.is_atom(s.value) or target in tangents))


def _coalesce_block(block, loads):
    index = BlockNames(block)      # (not a scan between each copy and its definition)
    statements, known = index.statements, index.known
    i = 0
    while i < len(block):
        s = block[i]
        if marks.PHI.of(s) and isinstance(s.value, gast.Name):
            c, w = s.targets[0].id, s.value.id
            at = index.position[id(s)]
            earlier = index.binding(w, -1, at)
            j = earlier[-1] if earlier else None
            uses = index.reading(w, j, at) if j is not None else []
            if (j is not None and isinstance(statements[j], gast.Assign)
                    and syntax.is_name(statements[j].targets[0], w)
                    and not index.binding(c, j, at) and not index.reading(c, j, at)
                    and sum(known.loads(statements[k], w) for k in uses) + 1
                    == loads.get(w, 0)):
                index.drop(j)
                statements[j].targets[0].id = c
                index.add(j)
                for k in uses:      # (nothing between binds `w`)
                    rename(statements[k], w, c)
                    index.renamed(k, w, c)
                loads[c] = loads.get(c, 0) + loads.pop(w) - 1
                index.drop(at)
                del block[i]
                continue
        i += 1
