"""Reverse mode: Wengert form to `f_vjp(x) -> (y, f_pullback)`.

The forward pass is the user's code, with a tape per loop holding only what that loop's
pullback reads and cannot compute again in one operation from other taped values and
values the loop does not change (`recomputable`); the pullback is a closure that runs
the statements' adjoints backwards, mirroring `if`s on their recorded tests and loops by
iterating their tapes in reverse.
Adjoints accumulate out of place; an adjoint that receives nothing is never written.

>>> from s2sad.ad.reverse import Reverse
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
import re
from collections import Counter

import gast

from ..codegen import nodes
from ..errors import InternalError, MissingRuleError
from ..analysis.activity import active_names
from ..analysis.kinds import ARRAY, CONTAINER, SCALAR, Kinds, guarded
from ..analysis.shapes import Shapes, pattern_tests
from ..analysis import primitives
from ..analysis.primitives import COPY, CUSTOM, PACK, USER
from ..frontend.source import MISSING
from .simplify import on_numbers, simplify, with_constant


def warn_unconnected(src, params):
    """Warn that the output of `src`'s function does not depend on `params` (called by
    the API for the function the user differentiates, not for the functions it calls)."""
    import warnings
    for p in params:
        warnings.warn_explicit(
            f"{src.name}(): the output does not depend on {p!r} (through differentiable "
            "operations); its gradient is zero", UnconnectedInputWarning, src.filename,
            src.first_line)


class UnconnectedInputWarning(UserWarning):
    """The output does not depend on a differentiated input; its gradient is zero."""


class Reverse:
    """See the module docstring."""

    def __init__(self, src, namer, wrt, as_tuple=False, kinds=None, recompute=False,
                 patterns=None):
        import numpy as np
        self.src = src
        self.patterns = patterns
        self.recompute = recompute
        self.namer = namer
        self.types = {p: k for p, k in (kinds or {}).items() if isinstance(k, type)}
        self.param_kinds = {p: (ARRAY if k is np.ndarray else SCALAR) if isinstance(k, type)
                            else k for p, k in (kinds or {}).items()}
        self.wrt = list(wrt)
        self.as_tuple = as_tuple or len(self.wrt) > 1
        self.adjoints = {}
        self.helpers = {}
        self.loops = nodes.NodeMap()
        self.lifted = []      # (function, wrt, kinds) of the lifted functions it calls

    def run(self, fn):
        *body, ret = fn.body
        if not isinstance(ret, gast.Return):
            raise InternalError("reverse: Wengert form must end with one return")
        output = ret.value.id if isinstance(ret.value, gast.Name) else None
        self.ops = nodes.NodeMap()
        self.wengert = fn
        self.active = active_names(fn, self.src, self.wrt, output, self.ops)
        self.kinds = Kinds(fn, self.src, self.param_kinds)
        self.shapes = Shapes(fn, self.ops, self.kinds, self.patterns)
        self.straight = _straight_line_names(fn)
        self.bound_before = _bound_before_loops(fn)
        self.assigned = None      # how often each name is assigned (when needed)
        self.uniform = set()
        self.owned = set()
        self.unconnected = [p for p in self.wrt if p not in self.active]
        self.user_calls = nodes.NodeMap()
        self.refuse_mutating_calls(fn)
        self.indexed = {a.id for s in _assigns(fn) for a in _getitem_receivers(s)}
        self.primal_names = {n.id for n in nodes.name_nodes(fn)}
        self.scalar_zeros = False
        # names holding lists (appended to): their adjoints add entrywise, not by `+`
        from ..rules import runtime
        self.containers = {s.targets[0].id for s in _assigns(fn)
                           if isinstance(s.targets[0], gast.Name) and (
                               isinstance(s.value, gast.List) or (
                                   isinstance(s.value, gast.Call) and getattr(
                                       s.value.func, "s2s_prim", None) is runtime.append))}
        self.in_loops = {name for loop in _walk_loops(fn.body)
                         for name in nodes.names_stored(loop)}
        seed = self.adj(output) if output in self.active else self.namer.fresh("y_bar")
        defined = {output} if output in self.active else set()
        # the output is certainly a number: a full reduction, or arithmetic on numbers
        self.scalar_output = any(
            nodes.is_name(s.targets[0], output) and self.ops[s].variant is not None
            and (self.reduced_to_scalar(self.ops[s], self.ops[s].variant.params[0][0],
                                        output) or self.arithmetic_on_numbers(s.value))
            for s in body if isinstance(s, gast.Assign))
        reverse = self.block(body, defined)
        self.updates = _Updates(body, self.src, reverse, self)
        result = [self.fitted(p, defined) for p in self.wrt]
        reverse.append(nodes.ret(nodes.tuple_(result) if self.as_tuple else result[0]))
        pullback = nodes.function(self.namer.fresh(f"{fn.name}_pullback"), [seed], reverse)
        forward = _strip_markers(self.forward(body))
        for n in nodes.name_nodes(nodes.function("_", [], forward)):
            if getattr(n, "s2s_lifted", False):
                self.helpers[n.id] = n.s2s_prim    # a lifted function it runs unchanged
        vjp = nodes.function(self.namer.fresh(f"{fn.name}_vjp"), [], forward + [
            pullback, nodes.ret(nodes.tuple_([ret.value, nodes.name(pullback.name)]))],
            like=fn)
        vjp.s2s_pullback = pullback
        vjp.s2s_loops = list(self.loops.values())
        self.updates.finish(vjp, self.loops)
        from ..passes.optimize import rename_unpacks
        rename_unpacks(pullback, self.namer)
        return vjp

    # -- header -------------------------------------------------------------------------
    def header(self, vjp):
        """Comment lines for the top of the optimized `vjp`: what is differentiated, what
        the pullback keeps of the forward pass, and which rules it uses."""
        import os
        src = self.src
        wrt = ", ".join(p if p in self.active else f"{p} (unconnected)" for p in self.wrt)
        where = ("" if src.filename.startswith("<") else
                 f" ({os.path.basename(src.filename)}:{src.first_line})")
        lines = [f"reverse mode of {src.name}(){where} with respect to {wrt}"]
        kept = []
        pullback = vjp.s2s_pullback
        stored = set(nodes.names_stored(pullback))
        taped = set()
        for info in sorted(self.loops.values(), key=lambda info: src.lineno(info.loop)):
            if info.mode in ("start", "end") and info.pushes:
                taped.add(info.tape)
                pushed = info.pushes[0].args[0]
                values = ", ".join(v.args[0].id if isinstance(v, gast.Call) else v.id for v in (
                    pushed.elts if isinstance(pushed, gast.Tuple) else [pushed]))
                kept.append(f"{values} of each iteration of the loop at line "
                            f"{src.lineno(info.loop)}")
            elif info.mode == "trips":
                taped.add(info.tape)
                kept.append(f"the trip count of the loop at line {src.lineno(info.loop)}")
        closure = sorted({n for n in nodes.names_loaded(pullback)
                          if n in self.primal_names and n not in stored and n not in taped
                          and self.src.is_local(n)}, key=_natural)
        rules = []
        for stmt in _in_order(vjp.body):
            op = self.ops.get(stmt)
            target = stmt.targets[0] if isinstance(stmt, gast.Assign) else None
            if isinstance(target, gast.Tuple):      # `t, t_pullback = g_vjp(...)`
                target = target.elts[0]
            if op is None or target.id not in self.active or op.kind not in (
                    "call", USER, CUSTOM):
                continue
            name = _rule_name(op, self.src)
            if name not in rules:
                rules.append(name)
        self._header = (lines, closure, kept, ["rules: " + ", ".join(rules)] if rules else [])
        self.header_comments = self.rendered_header()
        return self.header_comments

    def rendered_header(self, present=None):
        """The header's comment lines, listing only the values in `present` (all without
        it) among those the pullback reads of the forward pass."""
        first, closure, kept, rules = self._header
        closure = [n for n in closure if present is None or n in present]
        lines = first + ["the pullback reads: " + "; ".join(
            ([", ".join(closure)] if closure else []) + kept) if closure or kept
            else "the pullback reads nothing of the forward pass"] + rules
        return [nodes.comment(part) for line in lines for part in _wrapped(line)]

    def refresh_header(self, fn):
        """Drop from the header of `fn` the values the optimized code no longer names (one
        computed straight into an adjoint's memory)."""
        present = {n.id for n in nodes.name_nodes(fn)}
        old = self.header_comments
        at = next((i for i, s in enumerate(fn.body) if s is old[0]), None)
        if at is None or all(n in present for n in self._header[1]):
            return
        fn.body[at:at + len(old)] = self.header_comments = self.rendered_header(present)

    # -- names ------------------------------------------------------------------------
    def adj(self, n):
        if n not in self.adjoints:
            self.adjoints[n] = self.namer.fresh(f"{n}_bar")
        return self.adjoints[n]

    def fitted(self, p, defined):
        """The adjoint returned for parameter `p` (zeros if it received nothing)."""
        if p not in defined:
            return nodes.call(self.runtime("zeros_like"), [nodes.name(p)])
        if p in self.uniform:
            return self.expanded(nodes.name(self.adj(p)), p)
        if self.scalar_zeros and self.kinds.kind.get(p) == ARRAY:
            # a symbolic zero may reach it: give it the array's shape
            return nodes.call(self.runtime("unbroadcast"), [nodes.name(self.adj(p)),
                                                            nodes.name(p)])
        return nodes.name(self.adj(p))

    def array_positions(self):
        """The positions in the pullback's returned tuple of the gradients of arrays."""
        return {i for i, p in enumerate(self.wrt) if self.kinds.kind.get(p) == ARRAY}

    def array_names(self):
        """The primal names and adjoints that certainly hold arrays."""
        from ..rules import registry
        arrays = {n for n, k in self.kinds.kind.items() if k == ARRAY}
        params = {a.id for a in self.src.node.args.args + self.src.node.args.posonlyargs}
        views = {s.targets[0].id for s in _assigns(self.wengert)
                 if isinstance(s.targets[0], gast.Name)
                 and _view_of(s.value, self.src, registry) in params}
        bars = {self.adjoints[n] for n in arrays if n in self.adjoints}
        return (arrays - views) | bars

    def scalar_names(self):
        """The names that are certainly numbers (see analysis.kinds)."""
        return {n for n, k in self.kinds.kind.items() if k == SCALAR}

    def guarded_types(self):
        """[(parameter, generated-code name of its type)] for the fused function's guard."""
        params = [a.id for a in self.src.node.args.posonlyargs + self.src.node.args.args]
        return [(p, self.helper(self.types[p].__name__, obj=self.types[p]))
                for p in guarded(params, self.types)]

    def runtime(self, name):
        """The generated-code name of runtime helper `name` of s2sad.rules.runtime."""
        from ..rules import runtime
        return self.helper("_s2s_" + name, obj=getattr(runtime, name))

    def helper(self, name, module="builtins", obj=MISSING):
        """The name generated code uses for helper `name` (an object to bind)."""
        if obj is MISSING:
            import importlib
            obj = getattr(importlib.import_module(module), name)
        for bound, value in self.helpers.items():
            if value is obj and (bound == name or bound.startswith(name + "_")):
                return bound
        free = self.src.free_values()
        if name in free and free[name] is obj:
            bound = name
        elif name in self.namer.taken:
            bound = self.namer.fresh(name)
        else:
            bound = name
            self.namer.taken.add(name)
        self.helpers[bound] = obj
        return bound

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
        owned = target in self.straight and self.kinds.kind.get(target) == ARRAY
        in_place = self.added_in_place(bar, expr) if owned else None
        if in_place is not None and (target not in defined or target in self.owned):
            zeros = [] if target in defined else [nodes.assign(bar, nodes.call(
                self.runtime("zeros_like"), [nodes.name(target)]))]
            defined.add(target)
            self.owned.add(target)
            self.uniform.discard(target)
            return [nodes.located(x, origin) for x in zeros + [in_place]]
        if target in defined:
            uniform = uniform and target in self.uniform
            kind = self.kinds.kind.get(target)
            if kind == CONTAINER or (kind != ARRAY and (
                    target in self.indexed or target in self.containers)):
                expr = nodes.call(self.runtime("add"), [nodes.name(bar), expr])
            else:
                expr = nodes.binop(nodes.name(bar), gast.Add(), expr)
        else:
            owned = owned and self.is_runtime_call(expr, "unindex")
        defined.add(target)
        (self.uniform.add if uniform else self.uniform.discard)(target)
        (self.owned.add if owned and not uniform else self.owned.discard)(target)
        return [nodes.located(nodes.assign(bar, expr), origin)]

    def is_runtime_call(self, e, name):
        from ..rules import runtime
        return (isinstance(e, gast.Call) and isinstance(e.func, gast.Name)
                and self.helpers.get(e.func.id) is getattr(runtime, name))

    def added_in_place(self, bar, expr):
        """`bar[index] += g` for `expr` = `_s2s_unindex(g, x, index)`, when `bar` is an
        array the pullback created (nothing else holds it) and `index` selects each
        element at most once."""
        if not self.is_runtime_call(expr, "unindex"):
            return None
        g, _, index = expr.args
        if not primitives.is_basic_index(index, self.kinds):
            return None
        target = gast.Subscript(value=nodes.name(bar), slice=primitives.index_syntax(index),
                                ctx=gast.Store())
        return gast.AugAssign(target=target, op=gast.Add(), value=g)

    def expanded(self, g, target):
        """A uniform adjoint `g` of `target` as the full array."""
        return nodes.call(self.runtime("unreduce"), [g, nodes.name(target)])

    def keeps_uniform(self, op, param, target):
        """Whether the contribution of `op` to `param` may be computed from a uniform
        scalar adjoint of its result `target`: an elementwise operation, same shapes."""
        return op.kind == COPY or (op.kind not in (PACK, USER, CUSTOM)
                                   and op.variant is not None and op.variant.elementwise
                                   and not self.needs_unbroadcast(op, param, target))

    def scalar_valued(self, expr, g):
        """Whether `expr` reads no array but the uniform adjoint `g`."""
        return all(n.id == g or n.id not in self.kinds.local or self.kinds[n] == SCALAR
                   for n in nodes.walk(expr)
                   if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load))

    def assign(self, s, defined):
        target = s.targets[0].id
        if target not in self.active or target not in defined:
            return []
        g = nodes.name(self.adj(target))
        defined.discard(target)
        op = self.ops[s]
        out = []
        uniform = target in self.uniform
        if uniform and not all(self.keeps_uniform(op, p, target) for p, a in op.diff_args()
                               if isinstance(a, gast.Name) and a.id in self.active):
            out.append(nodes.located(nodes.assign(g.id, self.expanded(g, target)), s))
            g, uniform = nodes.name(g.id), False
        if op.kind in (USER, CUSTOM):
            return out + self.user_call(s, op, g, defined)
        # Accumulate into adjoints that exist before starting new ones, so that a copy
        # `a_bar = b_bar` can later be propagated.
        args = sorted(op.diff_args(), key=lambda ia: not (
            isinstance(ia[1], gast.Name) and ia[1].id in defined))
        if op.kind == "call" and op.bound and "v" in op.bound and "index" in op.bound:
            # an element write: read the written element's adjoint before zeroing it
            args.sort(key=lambda ia: ia[0] != "v")
        for param, arg in args:
            if not (isinstance(arg, gast.Name) and arg.id in self.active):
                continue
            reduced = False
            if op.kind == COPY:
                expr = nodes.copied(g)
            elif op.kind == PACK:
                expr = gast.Subscript(value=nodes.copied(g), slice=nodes.const(param),
                                      ctx=gast.Load())
            else:
                reduced = self.reduced_to_scalar(op, param, target)
                expr = self.contribution(op, param, g, target, s, reduced)
            out.extend(self.accumulate(arg.id, expr, defined, s, reduced or (
                uniform and self.scalar_valued(expr, g.id))))
        return out

    def user_call(self, s, op, g, defined):
        """`t = helper(a, b)`: the forward pass calls `helper_vjp`, which also returns
        `helper`'s pullback; the pullback calls that on `t_bar`."""
        active = [i for i, a in enumerate(op.args)
                  if isinstance(a, gast.Name) and a.id in self.active]
        if not active:          # constant arguments: the call is not differentiated
            return []
        prim = op.prim
        if op.kind == CUSTOM and prim.s2s_custom == "vjp":
            return self.custom_vjp_call(s, op, g, defined, active)
        if op.kind == CUSTOM:       # a custom_jvp: reverse mode differentiates its source
            prim = prim.primal
        name = primitives.python_function(prim)[0].__name__
        wrt = tuple(active) if len(active) > 1 else active[0]
        if self.recompute:
            call = self.adjoint_call(s, prim, wrt, g)
        else:
            pullback = self.namer.fresh(f"{name}_pullback")
            self.user_calls[s] = (pullback, self.callee(prim, wrt, op.args))
            self.primal_names.add(pullback)
            call = nodes.call(pullback, [g])
        if len(active) == 1:
            return self.accumulate(op.args[active[0]].id, call, defined, s)
        targets, then = [], []
        for i in active:
            arg = op.args[i].id
            if arg in defined or arg in [t for t, _ in targets]:
                temp = self.namer.fresh(f"{arg}_bar")
                targets.append((arg, temp))
            else:
                targets.append((arg, None))
        names = [temp or self.adj(arg) for arg, temp in targets]
        out = [nodes.located(nodes.assign(nodes.tuple_([nodes.name(n, store=True)
                                                        for n in names], store=True), call), s)]
        for arg, temp in targets:
            if temp is None:
                defined.add(arg)
            else:
                then.extend(self.accumulate(arg, nodes.name(temp), defined, s))
        return out + then

    def adjoint_call(self, s, prim, wrt, g):
        """With `recompute`, `helper_adjoint(t_bar, a, b)` for `t = helper(a, b)`: the
        callee's pullback that runs its forward pass again, a plain function of the
        call's arguments (forward mode can differentiate that, not a closure). Arguments
        bound to the callee (a method's instance) are passed as constants."""
        import inspect
        from .. import pipeline
        fn, args, kwargs = primitives.python_function(prim)
        shift = len(args)
        wrt = tuple(w + shift for w in wrt) if isinstance(wrt, tuple) else wrt + shift
        params = list(inspect.signature(fn).parameters)
        kinds = {p: self.kinds[a] for p, a in zip(params[shift:], s.value.args)}
        adjoint = self.helper(f"{fn.__name__}_adjoint",
                              obj=pipeline.adjoint_of(fn, wrt, kinds))
        bound = [nodes.name(self.helper(f"{fn.__name__}_{p}", obj=a))
                 for p, a in zip(params, args)]
        keywords = [gast.keyword(arg=k, value=nodes.name(self.helper(f"{fn.__name__}_{k}",
                                                                     obj=v)))
                    for k, v in kwargs.items()]
        return nodes.call(adjoint, [g] + bound + nodes.copied(s.value.args),
                          keywords + nodes.copied(s.value.keywords))

    def custom_vjp_call(self, s, op, g, defined, active):
        """`t = f(a, b)` with a custom_vjp: the forward pass calls `fwd`, the pullback
        `bwd`; a cotangent `bwd` returns as a literal None is a symbolic zero (no code),
        one it may return as None at run time becomes zeros."""
        prim = op.prim
        if prim.fwd is None:
            raise MissingRuleError(
                f"{self.src.where(s)}: {prim.__name__} is a custom_vjp without its "
                f"rule; call {prim.__name__}.defvjp(fwd, bwd) first")
        residuals = self.namer.fresh(f"{prim.__name__}_residuals")
        fwd = self.helper(prim.fwd.__name__, obj=prim.fwd)
        bwd = self.helper(prim.bwd.__name__, obj=prim.bwd)
        self.user_calls[s] = (residuals, fwd)
        self.primal_names.add(residuals)
        zeros = _literal_nones(prim.bwd)
        active = [i for i in active if zeros.get(i) != "always"]
        call = nodes.call(bwd, [nodes.name(residuals), g])
        out = []
        if len(active) > 1:     # call bwd once
            cotangents = self.namer.fresh(f"{prim.__name__}_cotangents")
            out.append(nodes.located(nodes.assign(cotangents, call), s))
            call = nodes.name(cotangents)
        for i in active:
            part = gast.Subscript(value=nodes.copied(call), slice=nodes.const(i),
                                  ctx=gast.Load())
            if zeros.get(i) != "never":
                part = nodes.call(self.runtime("cotangent"), [part, nodes.copied(op.args[i])])
            out.extend(self.accumulate(op.args[i].id, part, defined, s))
        return out

    def refuse_mutating_calls(self, fn):
        """A called Python function that changes an argument in place (`a[i] = v`,
        `lst.append(v)`, `a += v` on an array) changes the caller's value behind its back;
        the derivative would miss that, so it is refused."""
        for s in _in_order(fn.body):
            for call in nodes.walk(s):
                if not isinstance(call, gast.Call):
                    continue
                prim = getattr(call.func, "s2s_prim", None) or self.src.resolve(call.func)
                if (prim is not MISSING and primitives.python_function(prim) is not None
                        and primitives.registry.lookup(prim) is None
                        and not getattr(prim, "s2s_custom", False)):
                    self.refuse_mutating_callee(prim, call.args, s)

    def refuse_mutating_callee(self, prim, call_args, s):
        import inspect
        from ..errors import UnsupportedSyntaxError
        from ..frontend import source
        fn, bound, _ = primitives.python_function(prim)
        try:
            callee = source.capture(fn)
        except Exception:       # noqa: BLE001 - no source: compiling it reports that
            return
        params = list(inspect.signature(fn).parameters)[len(bound):]
        local = {p for p, a in zip(params, call_args)
                 if isinstance(a, gast.Name) and self.src.is_local(a.id)}
        # a parameter the callee rebinds (`a = a.copy()`) may be its own value by then
        rebound = {t.id for n in nodes.walk(callee.node)
                   if isinstance(n, (gast.Assign, gast.For))
                   for t in nodes.walk(n.targets[0] if isinstance(n, gast.Assign) else n.target)
                   if isinstance(t, gast.Name) and isinstance(t.ctx, gast.Store)}
        local -= rebound
        # `b += a` changes an array in place but rebinds a number: only known arrays count
        arrays = {p for p, a in zip(params, call_args) if p in local and self.kinds[a] == ARRAY}
        for node in nodes.walk(callee.node):
            name = _mutated_name(node, arrays)
            if name in local:
                raise UnsupportedSyntaxError(
                    f"{callee.name}() changes its argument {name!r} in place "
                    f"({callee.where(node)}); s2sad cannot differentiate a change made "
                    "to the caller's value by another function yet. Return the new value "
                    "instead (e.g. `lst = lst + [v]`, `a = a.copy(); a[i] = v; return a`)",
                    self.src.filename, self.src.lineno(s), 0, self.src.line_text(s))

    def callee(self, prim, wrt, call_args):
        """The generated-code name of the vjp of `prim` for `wrt` (compiled now, unless
        that is a recursive call, then on first use); a method's instance and a partial's
        arguments are bound to it."""
        import functools
        import inspect
        from .. import pipeline
        fn, args, kwargs = primitives.python_function(prim)
        shift = len(args)
        wrt = tuple(w + shift for w in wrt) if isinstance(wrt, tuple) else wrt + shift
        params = list(inspect.signature(fn).parameters)[shift:]
        kinds = {p: self.kinds[a] for p, a in zip(params, call_args)}
        vjp = pipeline.vjp_of(fn, wrt, kinds)
        if hasattr(fn, "s2s_lifted") and (fn, wrt, kinds) not in self.lifted:
            self.lifted.append((fn, wrt, kinds))
        if args or kwargs:
            vjp = functools.partial(vjp, *args, **kwargs)
        return self.helper(f"{fn.__name__}_vjp", obj=vjp)

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
        template = op.variant.uniform if reduced else op.variant.templates[param]
        subst = {"g": g, "ans": nodes.name(target)}
        subst.update(op.bound)
        for free, obj in template.free.items():
            subst[free] = nodes.name(self.helper(free, obj=obj))
        expr = nodes.substitute(template.tree, subst)
        for n in nodes.name_nodes(expr):
            if getattr(n, "s2s_builtin", False):
                n.id = self.helper(n.id)
        arg = op.bound[param]
        if op.variant.broadcast and not reduced and self.needs_unbroadcast(op, param, target):
            expr = nodes.call(self.runtime("unbroadcast"), [expr, nodes.copied(arg)])
        return simplify(on_numbers(expr, lambda n: self.kinds[n] == SCALAR))

    def needs_unbroadcast(self, op, param, target):
        """Whether the contribution to `param` may have another shape than it: not when
        it has the shape of the result `target`, nor when every other operand is a
        scalar or has the same shape (`x * x`, `x[1:] - x[:-1]`)."""
        mine = op.bound[param]
        if self.shapes.same(mine, target):
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
                func = _expr_source(node.func)
                what = (f"the method call {func}() on a differentiated value"
                        if isinstance(node.func, gast.Attribute)
                        else f"the call {func}(), whose function s2sad cannot resolve "
                             "statically,")
            return MissingRuleError(
                f"{where}{what or type(node).__name__} is not supported yet; compute the "
                f"value from the scalars and arrays the function receives{code}")
        spelled = _expr_source(node.func) if isinstance(node, gast.Call) else _label(op.prim)
        if _has_rule(op.prim):
            detail = (f"s2sad's rules for {spelled} do not cover this call "
                      f"({len(op.args)} arguments)")
        elif callable(op.prim) and hasattr(op.prim, "__code__"):
            detail = (f"{spelled} is a Python function, and calls to other Python functions "
                      "are not differentiated yet")
        else:
            detail = f"s2sad has no derivative rule for {spelled}"
        params = _param_names(op.prim, len(op.args))
        templates = ", ".join(f'"g * d{spelled.split(".")[-1]}/d{p}"' for p in params)
        return MissingRuleError(
            f"{where}{detail}; register one with s2sad.defvjp({spelled}, "
            f"\"{', '.join(params)}\", {templates}) (derivatives written out, see "
            f"help(s2sad.defvjp)) or mark it s2sad.nondiff({spelled}){code}")

    def if_(self, s, defined):
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
            return [nodes.located(nodes.if_(nodes.not_(nodes.copied(s.test)), orelse), s)]
        return [nodes.located(nodes.if_(nodes.copied(s.test), then, orelse), s)]

    def zero(self, n):
        """`n_bar = 0.0`, a symbolic zero that arithmetic broadcasts; for an array that no
        loop assigns (so reading it adds nothing to a tape), zeros of its shape, which
        indexing and reshaping rules and the caller need."""
        if self.kinds.kind.get(n) == ARRAY and n not in self.in_loops:
            return nodes.assign(self.adj(n), nodes.call(self.runtime("zeros_like"),
                                                        [nodes.name(n)]))
        if self.kinds.kind.get(n) != SCALAR:
            self.scalar_zeros = True
        return nodes.assign(self.adj(n), nodes.const(0.0))

    def loop(self, s, defined):
        if isinstance(s, gast.For) and not _is_range(s, self) and any(
                isinstance(n, gast.Name) and n.id in self.active for n in nodes.walk(s.iter)):
            raise MissingRuleError(
                f"{self.src.where(s)}: iterating over a differentiated sequence is not "
                "supported yet; loop over range(len(...)) and index it"
                f"\n    {self.src.line_text(s).strip()}")
        info = _LoopInfo(s, self)
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
        loaded = set(nodes.names_loaded(nodes.if_(nodes.const(True), body)))
        stored = set(nodes.names_stored(nodes.if_(nodes.const(True), body)))
        # an adjoint the body reads or writes exists after the reversed loop, and must be
        # zero before it (the body may read it first; the loop may run no iteration)
        pre = sorted((n for n in flowing - defined if self.adj(n) in loaded | stored),
                     key=self.adj)
        if not body:
            return []
        defined.update(pre)
        info.add_inner()
        info.defined_inside.update(self.user_calls[n][0] for n in nodes.walk(s)
                                   if n in self.user_calls)
        # what the reversed body reads of this iteration; a value an inner reversed loop
        # unpacks from its own tape is that loop's business, but the same name read
        # elsewhere in the body still needs this iteration's value
        record = sorted(n for n in _free_loads(body, set())
                        if n in self.primal_names and n in info.defined_inside)
        again = self.recomputable(s, record, info.defined_inside)
        body[:0] = again
        recomputed = {d.targets[0].id for d in again}
        info.plan([n for n in record if n not in recomputed])
        self.loops[s] = info
        return [self.zero(n) for n in pre] + [nodes.located(info.reversed_loop(body), s)]

    def recomputable(self, loop, record, inside):
        """Statements for the top of `loop`'s reversed body that compute again, instead
        of reading from the tape, the values in `record` that are one scalar `+ - * /`
        or sign change of values on the tape or not assigned in the loop (such as `-c`
        of a `c` the loop does not change), computed on every path through the body."""
        if self.assigned is None:
            self.assigned = Counter(nodes.names_stored(self.wengert))
        nested = {n for inner in _walk_loops(loop.body) for n in nodes.names_stored(inner)}

        def available(x):
            return isinstance(x, gast.Constant) or (
                self.kinds[x] == SCALAR and self.src.is_local(x.id)
                and (x.id not in inside or (x.id in record and x.id not in nested)))
        found = []
        for d in loop.body:
            if any(isinstance(x, (gast.Break, gast.Continue, gast.Return))
                   or getattr(x, "s2s_marker", None) == "path_end" for x in _own([d])):
                break           # the statements after it do not run on every path
            operands = _cheap_operands(d.value) if isinstance(d, gast.Assign) else None
            target = d.targets[0] if operands is not None else None
            if (isinstance(target, gast.Name) and target.id in record
                    and self.assigned[target.id] == 1 and self.kinds[target] == SCALAR
                    and all(available(x) for x in operands)):
                found.append(d)
        # a value another one is recomputed from stays on the tape
        taped = {x.id for d in found for x in _cheap_operands(d.value)
                 if isinstance(x, gast.Name)}
        out = []
        for d in found:
            if d.targets[0].id not in taped:
                out.append(nodes.assign(d.targets[0].id, nodes.copied(d.value)))
                out[-1].s2s_recomputed = True
        return out

    # -- forward ----------------------------------------------------------------------
    def forward(self, stmts):
        out = []
        for s in stmts:
            if isinstance(s, gast.If):
                s.body = self.forward(s.body) or [gast.Pass()]
                s.orelse = self.forward(s.orelse)
            elif isinstance(s, (gast.For, gast.While)):
                s.body = self.forward(s.body)
                info = self.loops.get(s)
                if info is not None:
                    out.extend(info.instrument())
            elif self.updates.is_update(s):
                out.extend(self.updates.expand(s))
                continue
            elif s in self.user_calls:
                pullback, vjp = self.user_calls[s]
                s.targets = [nodes.tuple_([nodes.name(s.targets[0].id, store=True),
                                           nodes.name(pullback, store=True)], store=True)]
                s.value = copy.copy(s.value)
                s.value.func = nodes.name(vjp)
            out.append(s)
        return out


def fuse(vjp, rev, value=True, guard=True):
    """`f_value_and_grad(x) -> (y, x_bar)`: the forward pass, then the pullback inlined
    with its seed, for `value_and_grad` (no closure, one call). It starts by checking
    that the arguments have the types it was specialised for. Without `value`,
    `f_grad(x) -> x_bar` for `grad`, without the forward statements only the value
    needs; with `value="adjoint"`, `f_adjoint(y_bar, x) -> x_bar`, the same with the seed
    as its first parameter (what `recompute` calls)."""
    namer, helper, runtime = rev.namer, rev.helper, rev.runtime
    guards = rev.guarded_types() if guard else ()
    pullback = vjp.s2s_pullback
    check = []
    if guards:
        # a differentiated array must stay floating: grad refuses others when it compiles
        # (api._check_inputs), and buffer reuse relies on it
        floats = [f"{p}.dtype.kind != 'f'" for p, _ in guards
                  if rev.param_kinds.get(p) == ARRAY and p in rev.wrt]
        check = [nodes.guard([f"{p}.__class__ is not {t}" for p, t in guards]
                             + floats, nodes.passing_on(runtime("respecialize"), vjp.args))]
    forward = [s for s in vjp.body[:-1] if s is not pullback]
    result = vjp.body[-1].value.elts[0]
    grads = pullback.body[-1].value
    out, seeded = [], []
    if isinstance(result, gast.Name) and result.id in nodes.names_stored(pullback):
        kept = namer.fresh("value")
        out.append(nodes.assign(kept, copy.deepcopy(result)))
        result = nodes.name(kept)
    r = ast_unparse(vjp.body[-1].value.elts[0])
    seed_name = pullback.args.args[0].id
    if value == "adjoint":
        body = _live(forward + pullback.body[:-1] + [nodes.ret(grads)], rev.ops)
        adjoint = nodes.function(namer.fresh(vjp.name[:-4] + "_adjoint"), [], body, like=vjp)
        params = adjoint.args.posonlyargs or adjoint.args.args
        params.insert(0, gast.Name(id=seed_name, ctx=gast.Param(), annotation=None,
                                   type_comment=None))
        return adjoint
    folded = [with_constant(s, seed_name, 1.0) for s in pullback.body
              ] if rev.scalar_output else [None]
    if None not in folded and not any(nodes.stores(s, seed_name) for s in pullback.body):
        # the output is a full reduction: its adjoint is the number 1.0
        pullback.body = folded
        grads = pullback.body[-1].value
    else:
        if rev.scalar_output:
            seed = nodes.const(1.0)
        else:
            seed = nodes.parse_expr(f"1.0 if {helper('type')}({r}) is {helper('float')} "
                                    f"else {runtime('seed')}({r}, {vjp.name[:-4]!r})")
        seeded.append(nodes.assign(seed_name, seed))
    if value:
        body = (check + forward + out + seeded + pullback.body[:-1]
                + [nodes.ret(nodes.tuple_([result, grads]))])
        fused = nodes.function(namer.fresh(vjp.name[:-4] + "_value_and_grad"), [], body,
                               like=vjp)
        fused.s2s_value = True          # returns (value, gradients)
        return fused
    pullback = _shapes_from_earliest(pullback.body[:-1] + [nodes.ret(grads)], forward, rev)
    body = _live(forward + seeded + pullback, rev.ops)
    return nodes.function(namer.fresh(vjp.name[:-4] + "_grad"), [], check + body, like=vjp)


def guard_patterns(fn, rev, dtypes=()):
    """`fn` (fused, with a guard) also checking the shape patterns its shape classes
    depend on (see analysis.shapes) and the dtypes of the parameters `dtypes`."""
    guard = fn.body[0] if fn.body else None
    tests = getattr(getattr(guard, "test", None), "s2s_tests", None)
    if tests is None or not (rev.shapes.used or dtypes):
        return fn
    import numpy as np
    # a dtype test makes the test that a differentiated array is floating needless
    tests = [t for t in tests if not any(t == f"{p}.dtype.kind != 'f'" for p in dtypes)]
    tests += [t for p in sorted(rev.shapes.used) for t in pattern_tests(p, rev.patterns[p][1])]
    for p in sorted(dtypes):
        dtype = np.dtype(rev.patterns[p][0])
        tests.append(f"{p}.dtype != {rev.helper(dtype.name, obj=dtype)}")
    fn.body[0] = nodes.located(nodes.guard(tests, guard.body[0].value), guard)
    return fn


def shapes_from_earliest(vjp, rev):
    """`vjp` whose pullback reads, where a helper needs only an argument's shape, a
    parameter or a value it reads anyway of that shape (see `_shapes_from_earliest`),
    so that it keeps fewer values of the forward pass alive."""
    pullback = vjp.s2s_pullback
    forward = [s for s in vjp.body if s is not pullback]
    shape_only = {id(arg) for _, arg in _shape_only_args(pullback.body, rev)}
    read = {n.id for n in nodes.name_nodes(pullback)
            if isinstance(n.ctx, gast.Load) and id(n) not in shape_only}
    pullback.body = _shapes_from_earliest(pullback.body, forward, rev, read)
    return vjp


def _shape_only_args(stmts, rev):
    """(call, argument) for each argument of a runtime helper in `stmts` that the
    helper reads only for its shape, type or structure (runtime.SHAPE_ONLY)."""
    from ..rules import runtime
    for call in (c for s in stmts for c in nodes.walk(s) if isinstance(c, gast.Call)):
        obj = rev.helpers.get(getattr(call.func, "id", None))
        name = getattr(obj, "__name__", None)
        if obj is None or obj is not getattr(runtime, name or "", None):
            continue
        for i in runtime.SHAPE_ONLY.get(name, ()):
            if i < len(call.args):
                yield call, call.args[i]


def _shapes_from_earliest(stmts, forward, rev, among=None):
    """`stmts` reading, where a helper needs only an argument's shape, the first
    parameter or top-level name of `forward` (in `among`, if given) with the same
    shape, so that later ones may be dead."""
    order = [a.id for a in rev.src.node.args.posonlyargs + rev.src.node.args.args]
    order += [s.targets[0].id for s in forward if isinstance(s, gast.Assign)
              and isinstance(s.targets[0], gast.Name) and s.targets[0].id in rev.straight]
    order = [n for n in order if among is None or n in among]
    first = {}
    for n in order:
        if rev.shapes.of(n) is not None:
            first.setdefault(rev.shapes.of(n), n)
    for _, arg in list(_shape_only_args(stmts, rev)):
        if isinstance(arg, gast.Name) and arg.id in rev.straight:
            arg.id = first.get(rev.shapes.of(arg.id), arg.id)
    return stmts


def _natural(name):
    """A sort key that puts t_2 before t_12."""
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name)]


def _live(body, ops):
    """`body` without the top-level assignments nobody reads whose value is a name, a
    constant, syntax or a call of a primitive with a derivative rule."""
    loads = [set(nodes.names_loaded(s)) for s in body]
    changed = True
    while changed:
        changed = False
        for i in range(len(body) - 1, -1, -1):
            s = body[i]
            if not (isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name)):
                continue
            op = ops.get(s)
            pure = op is not None and (op.kind in (COPY, PACK) or op.variant is not None
                                       or (op.kind == primitives.NONDIFF and op.prim is None))
            target = s.targets[0].id
            if pure and not any(target in read for read in loads[i + 1:]):
                del body[i], loads[i]
                changed = True
    return body


def ast_unparse(node):
    import ast
    return ast.unparse(gast.gast_to_ast(node))


class _Updates:
    """Element assignments and appends: functional in Wengert form (`a_1 =
    setitem(a, i, v)`), emitted in place (`a[i] = v`) when the array or list belongs to
    the function and the pullback never reads a state it overwrites; otherwise on a copy,
    so that inputs are never mutated and recorded states stay intact."""

    def __init__(self, body, src, pullback, rev):
        from ..rules import runtime
        self.prims = (runtime.setitem, runtime.append)
        self.stmts = [n for s in body for n in nodes.statements(s) if self.is_update(n)]
        self.old = {id(s): s.value.args[0].id for s in self.stmts}
        self.owned = _owned(body, src, self.prims)
        self.in_place = {}
        self.rev = rev
        self.pullback = nodes.if_(nodes.const(True), pullback)
        self.loop_of = {}
        self.updates_in = {}        # {id(loop): the ids of the updates inside it}
        for loop in _walk_loops(body):
            for n in nodes.statements(loop):
                if self.is_update(n):
                    self.loop_of[id(n)] = loop     # walk order: the innermost wins
                    self.updates_in.setdefault(id(loop), set()).add(id(n))
        self.classes = _alias_classes(body, self.stmts, src)
        self.order = {}
        for i, n in enumerate(n for b in body for n in nodes.statements(b)):
            if isinstance(n, gast.Assign) and isinstance(n.targets[0], gast.Name):
                self.order.setdefault(n.targets[0].id, i)
            if self.is_update(n):
                self.order[id(n)] = i

    def final(self, n):
        """The name `n` has once each in-place result is named after the object it
        updates (see `finish`)."""
        return n

    def safe(self, s):
        """Whether writing in place cannot change a state the pullback reads."""
        old = self.old[id(s)]
        if old not in self.owned:
            return False
        loop = self.loop_of.get(id(s))
        info = self.rev.loops.get(loop) if loop is not None else None
        aliases = self.classes.get(old, {old})
        earlier = {n for n in aliases if self.order.get(n, -1) < self.order[id(s)]}
        if info is None:
            return not self.value_loads(self.pullback, earlier | {old})
        # in a loop: nor may the pullback read a state from before the loop (the value
        # of `np.tanh` that its own pullback reads, before `a[0] += ...` in the loop)
        before = {n for n in earlier if n not in info.defined_inside}
        if self.value_loads(self.pullback, before):
            return False
        read = {n for n in aliases if self.value_loads(info.reversed, {n})}
        kept = self.kept_apart(loop, info, aliases, read)
        if kept is None:
            return False
        info.snapshots.update(kept)
        return True

    def kept_apart(self, loop, info, aliases, read):
        """The elements of the array that the reversed loop reads (`read`, names bound in
        the loop to `a[i + c]`, `i` the loop's counter) when each is certainly apart from
        every element the loop writes (`a[i + d]`, `d != c`): recorded as copies at the
        end of the iteration (`_s2s_snapshot`, which copies an array and leaves a number
        as it is), they let the loop write the array in place. None when another value
        of the array is read."""
        if not (read and isinstance(loop, gast.For) and _is_range(loop, self.rev)
                and isinstance(loop.target, gast.Name)):
            return None if read else set()
        counter = loop.target.id
        defs = {}
        for n in nodes.statements(loop):
            if isinstance(n, gast.Assign) and isinstance(n.targets[0], gast.Name):
                defs.setdefault(n.targets[0].id, []).append(n.value)

        def offset(e):
            if isinstance(e, gast.Name) and e.id != counter and len(defs.get(e.id, [])) == 1:
                e = defs[e.id][0]
            if nodes.is_name(e, counter):
                return 0
            if (isinstance(e, gast.BinOp) and isinstance(e.op, (gast.Add, gast.Sub))
                    and nodes.is_name(e.left, counter) and isinstance(e.right, gast.Constant)
                    and type(e.right.value) is int):
                return e.right.value if isinstance(e.op, gast.Add) else -e.right.value
            return None
        inside = self.updates_in.get(id(loop), set())
        written = [offset(w.value.args[1]) for w in self.stmts
                   if id(w) in inside and self.old[id(w)] in aliases]
        args = loop.iter.args
        start = 0 if len(args) == 1 else getattr(args[0], "value", None)
        if (None in written or counter in self.assigned_in(loop) or len(args) > 2
                or type(start) is not int):
            return None
        for n in read:
            value = defs.get(n, [None])
            if not (n in info.record and len(value) == 1 and isinstance(value[0], gast.Subscript)
                    and isinstance(value[0].value, gast.Name) and value[0].value.id in aliases):
                return None
            at = offset(value[0].slice)
            # no index below 0: `a[i - 1]` at i = 0 would be the last element
            if at is None or at in written or start + min([at] + written) < 0:
                return None
        return read

    def assigned_in(self, loop):
        return set(nodes.names_stored(nodes.if_(nodes.const(True), loop.body)))

    def value_loads(self, node, names):
        """Loads of `names` in `node` other than as shape-only helper arguments."""
        from ..rules import runtime
        skip = set()
        for call in nodes.walk(node):
            if isinstance(call, gast.Call) and isinstance(call.func, gast.Name):
                obj = self.rev.helpers.get(call.func.id)
                name = getattr(obj, "__name__", None)
                if obj is getattr(runtime, name or "", None) and name in runtime.SHAPE_ONLY:
                    skip.update(id(a) for i, a in enumerate(call.args)
                                if i in runtime.SHAPE_ONLY[name])
        return any(isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)
                   and n.id in names and id(n) not in skip for n in nodes.walk(node))

    def is_update(self, s):
        return (isinstance(s, gast.Assign) and isinstance(s.value, gast.Call)
                and getattr(s.value.func, "s2s_prim", None) in self.prims)

    def expand(self, s):
        new, call = s.targets[0].id, s.value
        old = call.args[0].id
        self.in_place[id(s)] = in_place = self.safe(s)
        target = old if in_place else new
        out = [] if in_place else [nodes.assign(new, nodes.call(nodes.attribute(old, "copy")))]
        if hasattr(call, "s2s_index"):
            write = nodes.assign(gast.Subscript(value=nodes.name(target), slice=call.s2s_index,
                                                ctx=gast.Store()), call.args[2])
        else:
            write = nodes.expr_stmt(nodes.call(nodes.attribute(target, "append"),
                                               [call.args[1]]))
        write.s2s_defines = new         # the name the write stands for (renamed later)
        return [nodes.located(x, s) for x in out + [write]]

    def finish(self, vjp, loops):
        """Name each in-place result after the object it updates."""
        renames = {s.targets[0].id: self.old[id(s)] for s in self.stmts
                   if self.in_place.get(id(s))}
        if not renames:
            return

        def final(n):
            while n in renames:
                n = renames[n]
            return n
        self.final = final
        # `p_2 = None` binds, before a loop, a result some paths of the loop make; named
        # `p`, it must not unbind the `p` the loop updates
        inits = {id(s) for s in nodes.walk(vjp) if getattr(s, "s2s_init", False)
                 and nodes.is_name(s.targets[0]) and s.targets[0].id in renames}
        for n in nodes.walk(vjp):
            if isinstance(n, gast.Name) and n.id in renames:
                n.id = final(n.id)
        params = {a.id for a in vjp.args.posonlyargs + vjp.args.args + vjp.args.kwonlyargs}
        for block in nodes.blocks(vjp.body):
            kept, bound = [], set(params)
            for s in block:
                if isinstance(s, gast.Assign) and isinstance(s.value, gast.Name) and \
                        nodes.is_name(s.targets[0], s.value.id):
                    continue
                if id(s) in inits and s.targets[0].id in bound:
                    continue
                kept.append(s)
                if isinstance(s, gast.Assign):
                    bound.update(nodes.names_stored(s))
            block[:] = kept


def _alias_classes(body, updates, src):
    """{name: the names that may hold the same object or share its memory}, through
    updates, copies and views (indexing, reshapes, transposes)."""
    from ..rules import registry
    parent = {}

    def find(n):
        while parent.get(n, n) != n:
            n = parent[n]
        return n
    for s in updates:
        parent[find(s.targets[0].id)] = find(s.value.args[0].id)
    for s in (n for b in body for n in nodes.statements(b)):
        if not (isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name)):
            continue
        source = _view_of(s.value, src, registry)
        if source is not None:
            parent[find(s.targets[0].id)] = find(source)
    classes = {}
    for n in list(parent) + [find(n) for n in parent]:
        classes.setdefault(find(n), set()).add(n)
    return {n: members for members in classes.values() for n in members}


def _view_of(v, src, registry):
    """The name `v` may share memory with: a copy, an index, a reshape, a transpose."""
    if isinstance(v, gast.Name):
        return v.id
    if isinstance(v, gast.Subscript) and isinstance(v.value, gast.Name):
        return v.value.id
    if isinstance(v, gast.Attribute) and isinstance(v.value, gast.Name):
        return v.value.id if registry.ATTRIBUTES.get(v.attr) in registry.VIEWS else None
    if isinstance(v, gast.Call) and v.args and isinstance(v.args[0], gast.Name):
        prim = src.resolve(v.func)
        if prim in registry.VIEWS:
            return v.args[0].id
    if (isinstance(v, gast.Call) and isinstance(v.func, gast.Attribute)
            and isinstance(v.func.value, gast.Name)
            and registry.METHODS.get(v.func.attr) in registry.VIEWS):
        return v.func.value.id
    return None


def _owned(body, src, updates):
    """Names whose value is an array or list the function created itself (so writing
    into it cannot change an input or a value held elsewhere)."""
    from ..rules import registry
    defs = {}
    for s in (n for b in body for n in nodes.statements(b)):
        if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name):
            defs.setdefault(s.targets[0].id, []).append(s.value)

    def creates(v):
        if isinstance(v, (gast.BinOp, gast.UnaryOp, gast.List, gast.Tuple)):
            return True
        if isinstance(v, gast.Call):
            prim = getattr(v.func, "s2s_prim", None)
            if prim in updates:
                return "old"
            prim = src.resolve(v.func) if prim is None else prim
            if prim is MISSING and isinstance(v.func, gast.Attribute):
                prim = registry.METHODS.get(v.func.attr, MISSING)
            return prim is not MISSING and prim not in registry.VIEWS
        return isinstance(v, gast.Name) and "copy"
    owned = set(defs)
    changed = True
    while changed:
        changed = False
        for name in list(owned):
            for v in defs[name]:
                kind = creates(v)
                if kind is False or (kind == "old" and v.args[0].id not in owned) or (
                        kind == "copy" and v.id not in owned):
                    owned.discard(name)
                    changed = True
                    break
    return owned


class _LoopInfo:
    """What one loop's pullback needs, and how the forward loop records it."""

    def __init__(self, loop, rev):
        self.loop = loop
        self.rev = rev
        self.carried = {s.targets[0].id for s in _own(loop.body)
                        if getattr(s, "s2s_phi", False)}
        # a name a nested loop carries is carried by this one too if an iteration may
        # read the value the previous one left (its adjoint flows between iterations)
        self.carried_within = self.carried | ({
            s.targets[0].id for s in nodes.walk(loop) if getattr(s, "s2s_phi", False)}
            & _exposed(loop.body, set()))
        stored = set(nodes.names_stored(nodes.if_(nodes.const(True), loop.body)))
        if isinstance(loop, gast.For):
            stored.add(loop.target.id)
        self.defined_inside = stored
        loaded = set(nodes.names_loaded(nodes.if_(nodes.const(True), loop.body)))
        self.read_outside = loaded - stored
        self.created = []
        self.pushes = []
        self.snapshots = set()      # recorded as copies (see _Updates.kept_apart)

    def add_inner(self):
        """Count the tapes of the loops nested in this one (known once they are
        reversed) as defined inside it."""
        for inner in _walk_loops(self.loop.body):
            info = self.rev.loops.get(inner)
            if info is not None:
                self.defined_inside.update(info.created)

    def plan(self, record):
        loop, namer = self.loop, self.rev.namer
        self.record = record
        target = loop.target.id if isinstance(loop, gast.For) else None
        self.range_args = None
        if (isinstance(loop, gast.For) and set(record) <= {target} and _is_range(loop, self.rev)
                and not _breaks(loop.body)):
            self.range_args = loop.iter.args
            self.mode = "range"
            self.record = record
        elif not record:
            self.mode = "trips"
            self.tape = namer.fresh("_s2s_trips")
        else:
            self.tape = namer.fresh("_s2s_tape")
            starts = self.carried | ({target} if target else set())
            self.mode = "start" if set(record) <= starts else "end"
        if self.mode != "range":
            self.created = [self.tape]
            self.rev.primal_names.add(self.tape)

    def reversed_loop(self, body):
        self.reversed = self._reversed_loop(body)
        return self.reversed

    def _reversed_loop(self, body):
        reversed_, range_ = self.rev.helper("reversed"), self.rev.helper("range")
        if self.mode == "range":
            # its own copy of the bounds: the forward loop's get renamed by coalescing
            bounds = nodes.call(range_, nodes.copied(self.range_args))
            if self.record:
                return nodes.for_(self.record[0], nodes.call(reversed_, [bounds]), body)
            return nodes.for_(self.rev.namer.fresh("_"), bounds, body)
        if self.mode == "trips":
            return nodes.for_(self.rev.namer.fresh("_"), nodes.call(range_, [
                nodes.name(self.tape)]), body)
        target = (nodes.name(self.record[0], store=True) if len(self.record) == 1
                  else nodes.tuple_([nodes.name(n, store=True) for n in self.record],
                                    store=True))
        return nodes.for_(target, nodes.call(reversed_, [nodes.name(self.tape)]), body)

    def instrument(self):
        """Statements before the loop; the loop body gets its recording in place."""
        loop = self.loop
        if self.mode == "range":
            return []
        if self.mode == "trips":
            loop.body.insert(0, gast.AugAssign(target=nodes.name(self.tape, store=True),
                                               op=gast.Add(), value=nodes.const(1)))
            return [nodes.assign(self.tape, nodes.const(0))]
        before = [nodes.assign(self.tape, gast.List(elts=[], ctx=gast.Load()))]
        if self.mode == "start":
            loop.body.insert(0, self.push())
            return before
        target = {loop.target.id} if isinstance(loop, gast.For) else set()
        at_start = (set(self.record) - self.defined_inside) | self.carried | target
        partial = set()
        loop.body = _at_path_ends(loop.body, self.push, at_start, self.record, partial)
        # A value defined on some paths only is read back only on those paths; before
        # the first iteration it still needs a binding to be recorded.
        inits = [nodes.assign(n, nodes.const(None))
                 for n in sorted(partial - self.rev.bound_before.get(loop, set()))]
        for init in inits:
            init.s2s_init = True
        return inits + before

    def push(self):
        vals = [nodes.call(self.rev.runtime("snapshot"), [nodes.name(n)])
                if n in self.snapshots else nodes.name(n) for n in self.record]
        value = vals[0] if len(vals) == 1 else nodes.tuple_(vals)
        stmt = nodes.expr_stmt(nodes.call(nodes.attribute(self.tape, "append"), [value]))
        self.pushes.append(stmt.value)
        return stmt

    def prune(self):
        """Drop recorded values the (optimized) reversed loop no longer reads."""
        if self.mode not in ("start", "end") or len(self.record) < 2:
            return
        loop = self.reversed
        read = set(nodes.names_loaded(nodes.if_(nodes.const(True), loop.body)))
        unpacked = nodes.names_stored(loop.target)
        keep = [i for i, n in enumerate(unpacked) if n in read] or [0]
        if len(keep) == len(unpacked):
            return
        names = [unpacked[i] for i in keep]
        loop.target = (nodes.name(names[0], store=True) if len(names) == 1 else
                       nodes.tuple_([nodes.name(n, store=True) for n in names], store=True))
        for call in self.pushes:
            vals = [call.args[0].elts[i] for i in keep]
            call.args[0] = vals[0] if len(vals) == 1 else nodes.tuple_(vals)


def _bound_before_loops(fn):
    """{loop: the names certainly bound when it starts}: the parameters and the names the
    top-level statements before it assign."""
    bound = {a.id for a in fn.args.args + fn.args.posonlyargs + fn.args.kwonlyargs}
    out = nodes.NodeMap()
    for s in fn.body:
        for loop in _walk_loops([s]):
            out[loop] = frozenset(bound)
        if isinstance(s, gast.Assign):
            bound.update(nodes.names_stored(s))
    return out


def _straight_line_names(fn):
    """Names neither assigned nor read inside an `if` or a loop."""
    nested = set()
    for s in fn.body:
        if isinstance(s, (gast.If, gast.For, gast.While)):
            nested.update(n.id for n in nodes.name_nodes(s))
    everything = {n.id for n in nodes.name_nodes(fn)}
    params = {a.id for a in fn.args.args + fn.args.posonlyargs + fn.args.kwonlyargs}
    return (everything | params) - nested


def _strip_markers(stmts):
    out = []
    for s in stmts:
        if getattr(s, "s2s_marker", None):
            continue
        for field in ("body", "orelse"):
            if isinstance(getattr(s, field, None), list):
                setattr(s, field, _strip_markers(getattr(s, field)))
        out.append(s)
    return out


def _literal_nones(fn):
    """{position: "always" | "never"} for the tuples `fn` returns as literals: whether
    each position is the constant None in every return (a position missing, or None in
    some returns only, may be None at run time). Empty if the source is unreadable."""
    import ast
    import inspect
    import textwrap
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return {}
    returns = [n.value for n in ast.walk(tree.body[0]) if isinstance(n, ast.Return)]
    if not returns or not all(isinstance(r, ast.Tuple) for r in returns):
        return {}
    size = len(returns[0].elts)
    if any(len(r.elts) != size for r in returns):
        return {}
    out = {}
    for i in range(size):
        nones = [isinstance(r.elts[i], ast.Constant) and r.elts[i].value is None
                 for r in returns]
        out[i] = "always" if all(nones) else "never" if not any(nones) else "sometimes"
    return out


def _same(a, b):
    return isinstance(a, gast.Name) and isinstance(b, gast.Name) and a.id == b.id


def _assigns(fn):
    return [n for n in nodes.statements(fn) if isinstance(n, gast.Assign)]


_MUTATING_METHODS = {"append", "extend", "insert", "pop", "remove", "clear", "sort",
                     "reverse", "update", "setdefault", "popitem", "fill", "resize", "put",
                     "itemset", "__setitem__", "__iadd__"}


def _mutated_name(node, arrays):
    """The name `node` changes in place, if it does: `a[i] = v`, `a[i] += v`,
    `a.append(v)`, or `a += v` where `a` is in `arrays` (for numbers it rebinds)."""
    targets = (node.targets if isinstance(node, gast.Assign) else
               [node.target] if isinstance(node, gast.AugAssign) else [])
    for t in targets:
        while isinstance(t, (gast.Subscript, gast.Attribute)):
            if isinstance(t.value, gast.Name):
                return t.value.id
            t = t.value
    if isinstance(node, gast.AugAssign) and isinstance(node.target, gast.Name) and (
            node.target.id in arrays):
        return node.target.id
    if (isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute)
            and node.func.attr in _MUTATING_METHODS and isinstance(node.func.value, gast.Name)):
        return node.func.value.id
    return None


def _free_loads(stmts, bound):
    """Names `stmts` read that are not bound by an enclosing `for` target among them."""
    out = set()
    for s in stmts:
        if isinstance(s, gast.For):
            out |= set(nodes.names_loaded(s.iter)) - bound
            again = {x.targets[0].id for x in s.body if getattr(x, "s2s_recomputed", False)}
            out |= _free_loads(s.body, bound | set(nodes.names_stored(s.target)) | again)
        elif isinstance(s, (gast.If, gast.While)):
            out |= set(nodes.names_loaded(s.test)) - bound
            out |= _free_loads(s.body, bound) | _free_loads(s.orelse, bound)
        else:
            out |= set(nodes.names_loaded(s)) - bound
    return out


def _cheap_operands(v):
    """The operands of `v` if it is one `+`, `-`, `*`, `/` or sign change of atoms."""
    if isinstance(v, gast.BinOp) and isinstance(v.op, (gast.Add, gast.Sub, gast.Mult,
                                                       gast.Div)):
        operands = [v.left, v.right]
    elif isinstance(v, gast.UnaryOp) and isinstance(v.op, (gast.USub, gast.UAdd)):
        operands = [v.operand]
    else:
        return None
    return operands if all(nodes.is_atom(x) for x in operands) else None


def _wrapped(line, width=84):
    """`line` as lines of at most about `width` characters: a long one is broken after
    each of its `;`-separated parts, and between words within a part, with the
    continuation lines indented."""
    import textwrap
    if len(line) <= width:
        return [line]
    parts = line.split("; ")
    out = []
    for k, part in enumerate(parts):
        out += textwrap.wrap(part + (";" if k < len(parts) - 1 else ""), width,
                             initial_indent="    " if k else "", subsequent_indent="    ",
                             break_long_words=False, break_on_hyphens=False)
    return out


def _in_order(stmts):
    """The statements of `stmts` and of the blocks nested in them, in source order."""
    for s in stmts:
        yield s
        for block in ("body", "orelse"):
            if not isinstance(s, gast.FunctionDef):
                yield from _in_order(getattr(s, block, []))


def _getitem_receivers(s):
    """The names `s` indexes or reads a field of: their adjoints are structures."""
    from ..rules import registry
    v = s.value
    if isinstance(v, gast.Subscript) and isinstance(v.value, gast.Name):
        yield v.value
    if (isinstance(v, gast.Attribute) and isinstance(v.value, gast.Name)
            and registry.ATTRIBUTES.get(v.attr) is None):
        yield v.value


def _own(stmts):
    """Statements of `stmts` and of ifs nested in it, not of nested loops."""
    for s in stmts:
        yield s
        if isinstance(s, gast.If):
            yield from _own(s.body)
            yield from _own(s.orelse)


def _exposed(stmts, bound):
    """Names `stmts` may read before assigning them (`bound`: assigned on every path so
    far; updated)."""
    out = set()
    for s in stmts:
        if isinstance(s, gast.If):
            out |= set(nodes.names_loaded(s.test)) - bound
            branches = []
            for body in (s.body, s.orelse):
                b = set(bound)
                out |= _exposed(body, b)
                branches.append(b)
            bound |= branches[0] & branches[1]
        elif isinstance(s, (gast.For, gast.While)):
            head = s.iter if isinstance(s, gast.For) else s.test
            out |= set(nodes.names_loaded(head)) - bound
            inner = set(bound)
            if isinstance(s, gast.For):
                inner |= set(nodes.names_stored(s.target))
            out |= _exposed(s.body, inner)      # what it assigns may not happen
        else:
            out |= set(nodes.names_loaded(s)) - bound
            bound |= set(nodes.names_stored(s))
    return out


def _walk_loops(stmts):
    return [n for s in stmts for n in nodes.statements(s)
            if isinstance(n, (gast.For, gast.While))]


def _breaks(stmts):
    return any(isinstance(s, gast.Break) for s in _own(stmts))


def _is_range(loop, rev):
    it = loop.iter
    return (isinstance(it, gast.Call) and not it.keywords
            and rev.src.resolve(it.func) is range)


def _at_path_ends(stmts, push, defined, record, partial):
    """Replace this loop's path-end markers by `push()`; add to `partial` the recorded
    names that are not defined on every path reaching a marker."""
    defined = set(defined)
    out = []
    for s in stmts:
        if getattr(s, "s2s_marker", None) == "path_end":
            partial.update(set(record) - defined)
            out.append(nodes.located(push(), s))
            continue
        if isinstance(s, gast.If):
            s.body = _at_path_ends(s.body, push, defined, record, partial)
            s.orelse = _at_path_ends(s.orelse, push, defined, record, partial)
            defined |= (_defs(s.body) & _defs(s.orelse))
        else:
            defined |= _defs([s])
        out.append(s)
    return out


def _defs(stmts):
    """Names `stmts` bind, counting in-place writes as binding the name they stand for."""
    tree = nodes.if_(nodes.const(True), stmts)
    return set(nodes.names_stored(tree)) | {
        n.s2s_defines for n in nodes.walk(tree) if hasattr(n, "s2s_defines")}


def annotate(stmts, src, previous=None):
    """Put `# grad of: <line>` over each run of adjoint code from one source line."""
    out = []
    for s in stmts:
        line = getattr(s, "lineno", None)
        if line is not None and line != previous:
            out.append(nodes.comment("grad of: " + src.line_text(s).strip()))
            previous = line
        if isinstance(s, (gast.If, gast.For, gast.While)):
            s.body = annotate(s.body, src, line)
            s.orelse = annotate(s.orelse, src, line)
            previous = None
        out.append(s)
    return out


_SYMBOLS = {gast.Add: "+", gast.Sub: "-", gast.Mult: "*", gast.Div: "/", gast.Pow: "**",
            gast.MatMult: "@", gast.FloorDiv: "//", gast.Mod: "%", gast.USub: "unary -",
            gast.UAdd: "unary +"}


def _rule_name(op, src):
    """How the header names the rule of `op`: as the user spelled the operation."""
    node = op.node
    if isinstance(node, (gast.BinOp, gast.UnaryOp)):
        return _SYMBOLS.get(type(node.op), type(node.op).__name__)
    if isinstance(node, gast.Subscript):
        return "[]"
    if isinstance(node, gast.Attribute):
        return "." + node.attr
    if isinstance(node, gast.Call):
        func = node.func
        root = func
        while isinstance(root, gast.Attribute):
            root = root.value
        if isinstance(func, gast.Attribute) and not (
                isinstance(root, gast.Name) and not src.is_local(root.id)):
            return f".{func.attr}()"        # a method of a local value
        return _expr_source(func)
    return _expr_source(node)


def _label(prim):
    mod = getattr(prim, "__module__", None)
    name = getattr(prim, "__qualname__", None) or repr(prim)
    return f"{mod}.{name}" if mod and mod != "builtins" else name


def _param_names(prim, n):
    import inspect
    try:
        names = [p.name for p in inspect.signature(prim).parameters.values()
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        names = []
    return names[:n] if len(names) >= n else ["x", "y", "z", "u", "v", "w"][:n]


def _has_rule(prim):
    from ..rules import registry
    return registry.lookup(prim) is not None


def _expr_source(node):
    import ast
    return ast.unparse(gast.gast_to_ast(node))
