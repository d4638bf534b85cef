"""Calls in reverse mode: to other Python functions (through their own derivatives,
which the driver compiles), and to `custom_vjp` functions (through their `fwd` and `bwd`).
(A callee that changes its arguments in place is refused in both modes, where another
name reads the memory it changes: before_ad/aliasing.py.)
"""
import ast
import inspect
import textwrap

import gast

from ..analysis import operations
from ..analysis.operations import CUSTOM
from ..analysis.returned_shapes import given_patterns, ints_known, positional
from ..analysis.value_kinds import ARRAY, SCALAR, UNKNOWN
from .. import marks, syntax
from ..compilation import Callee
from ..options import Variant
from ..errors import MissingRuleError
from ..frontend import source


class CallAdjoints:
    """The part of `Reverse` (see ad/reverse_mode.py) that differentiates calls."""

    def user_call(self, s, op, g, defined):
        """`t = helper(a, b)`: the forward pass calls `helper_vjp`, which also returns
        `helper`'s pullback; the pullback calls that on `t_bar`."""
        active = [i for i, a in enumerate(op.args)
                  if isinstance(a, gast.Name) and a.id in self.active]
        if not active:          # constant arguments: the call is not differentiated
            return []
        prim = op.prim
        if op.form == CUSTOM and "vjp" in prim.s2s_custom and not (
                getattr(prim, "s2s_checkpoint", False) and self.ctx.variant is Variant.STEP):
            return self.custom_vjp_call(s, op, g, defined, active)
        if op.form == CUSTOM:
            # a custom_jvp alone: reverse mode differentiates its source; so it does a
            # checkpoint called in the step of a checkpointed loop, whose adjoint computes
            # the step again already (the checkpoint's pullback would compute it a second time)
            prim = prim.primal
        name = source.identifier(operations.python_function(prim)[0])
        wrt = tuple(active) if len(active) > 1 else active[0]
        graded = self.recompute and op.form != CUSTOM and self.graded_call(s, prim, wrt, g)
        if graded:
            call = graded
        elif self.recompute:
            call = self.adjoint_call(s, prim, wrt, g)
        elif self.ctx.variant is Variant.STEP and self.returned_only(s):
            # (the step of a checkpointed loop whose result is the callee's: its adjoint
            # of the same kind, which reuses memory, in the place of its pullback)
            call = self.adjoint_call(s, prim, wrt, g, Variant.STEP)
            self.adjoined[s] = True
        else:
            pullback = self.namer.fresh(f"{name}_pullback")
            self.user_calls[s] = (pullback, self.callee(prim, wrt, op.args))
            self.primal_names.add(pullback)
            call = syntax.call(pullback, [g])
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
        out = [syntax.located(syntax.assign(syntax.tuple_([syntax.name(n, store=True)
                                                        for n in names], store=True), call), s)]
        for arg, temp in targets:
            if temp is None:
                defined.add(arg)
            else:
                then.extend(self.accumulate(arg, syntax.name(temp), defined, s))
        return out + then

    def graded_call(self, s, prim, wrt, g):
        """Where the backend differentiates so (`graded_calls`, the numba backend's), for
        `t = helper(a, b)` binding a number: the forward sweep calls
        `helper_value_and_grad`, `t, helper_grad = helper_value_and_grad(a, b)`, and the
        pullback is `t_bar * helper_grad` (a tuple of such products for several `wrt`),
        since a number's adjoint scales its gradient. `helper_adjoint` would run the
        callee's forward sweep again: a recursion of depth d then costs about d times its
        primal. None where it does not apply (a result that may not be a float, an argument
        differentiated that may be a list or a tuple, arguments bound to the callee, the
        step of a checkpointed loop)."""
        if not (self.ctx.can.graded_calls and self.ctx.variant is not Variant.STEP
                and isinstance(s, gast.Assign) and len(s.targets) == 1
                and isinstance(s.targets[0], gast.Name)):
            return None
        target = s.targets[0].id
        if self.kinds.kind.get(target) != SCALAR or self.kinds.ints.get(target) is not False:
            return None
        fn, args, kwargs = operations.python_function(prim)
        if args or kwargs or s.value.keywords:
            return None
        # (numbers and arrays: the gradient along a list or a tuple is no product)
        if any(self.kinds.kind.get(s.value.args[i].id) not in (SCALAR, ARRAY)
               for i in (wrt if isinstance(wrt, tuple) else (wrt,))):
            return None
        arg_types = operations.argument_types(prim, s.value.args, self.kinds)
        name = source.identifier(fn)
        grads = self.namer.fresh(f"{name}_gradient")
        self.user_calls[s] = (grads, self.ctx.call(
            Callee(fn, Variant.VALUE_AND_GRAD, wrt, arg_types,
                   ndims=self.known_ndims(fn, s.value.args)), f"{name}_value_and_grad"))
        self.primal_names.add(grads)
        if not isinstance(wrt, tuple):
            return gast.BinOp(left=syntax.copied(g), op=gast.Mult(), right=syntax.name(grads))
        return syntax.tuple_([gast.BinOp(left=syntax.copied(g), op=gast.Mult(), right=gast.Subscript(
            value=syntax.name(grads), slice=syntax.const(i), ctx=gast.Load()))
            for i in range(len(wrt))])

    def adjoint_call(self, s, prim, wrt, g, variant=Variant.ADJOINT):
        """With `recompute`, `helper_adjoint(t_bar, a, b)` for `t = helper(a, b)`: the
        callee's pullback that runs its forward pass again, a plain function of the
        call's arguments (forward mode can differentiate that, not a closure). Arguments
        bound to the callee (a method's instance) are passed as constants. With `variant`
        STEP, the callee's adjoint that reuses memory (see `returned_only`), specialised
        on the shape patterns of the arguments that are parameters this one is
        specialised on."""
        fn, args, kwargs = operations.python_function(prim)
        shift = len(args)
        wrt = tuple(w + shift for w in wrt) if isinstance(wrt, tuple) else wrt + shift
        params = list(inspect.signature(fn).parameters)
        arg_types = operations.argument_types(prim, s.value.args, self.kinds)
        patterns = None
        if variant is Variant.STEP and self.ctx.patterns and not (args or kwargs):
            given = {p: self.ctx.patterns.get(getattr(a, "id", None))
                     for p, a in zip(params, s.value.args)}
            patterns = {p: pat for p, pat in given.items() if pat is not None} or None
        adjoint = self.ctx.call(Callee(fn, variant, wrt, arg_types, patterns=patterns,
                                       ndims=self.known_ndims(fn, s.value.args)),
                                f"{source.identifier(fn)}_adjoint")
        bound = [syntax.name(self.ctx.bind(f"{source.identifier(fn)}_{p}", obj=a))
                 for p, a in zip(params, args)]
        keywords = [gast.keyword(arg=k, value=syntax.name(self.ctx.bind(f"{source.identifier(fn)}_{k}",
                                                                       obj=v)))
                    for k, v in kwargs.items()]
        return syntax.call(adjoint, [g] + bound + syntax.copied(s.value.args),
                          keywords + syntax.copied(s.value.keywords))

    def known_ndims(self, fn, call_args):
        """(parameter, number of axes) of the parameters of `fn` that `call_args` (by
        position) pass arrays of a known number of axes, for a backend whose callees are
        specialised on them (`graded_calls`, the numba backend's; else none)."""
        if not self.ctx.can.graded_calls:
            return ()
        params = positional(fn, len(call_args)) or ()
        return tuple(sorted(
            (p, self.kinds.ndim[a.id]) for p, a in zip(params, call_args)
            if isinstance(a, gast.Name) and self.kinds.kind.get(a.id) == ARRAY
            and isinstance(self.kinds.ndim.get(a.id), int)))

    def returned_only(self, s):
        """Whether `s`, `t = helper(a, b)` at the top level of the function, binds the
        value it returns and nothing else reads, after which nothing binds `a` or `b`
        again: its adjoint (which returns no value) then stands for its vjp and pullback,
        and reads the arguments as they were at the call."""
        body = self.wengert.body
        if not (isinstance(s, gast.Assign) and len(s.targets) == 1
                and isinstance(s.targets[0], gast.Name) and any(b is s for b in body)
                and not s.value.keywords):
            return False
        after = body[next(i for i, b in enumerate(body) if b is s) + 1:]
        result, args = s.targets[0].id, {getattr(a, "id", None) for a in s.value.args}
        *rest, ret = after or [None]
        return (isinstance(ret, gast.Return) and syntax.is_name(ret.value, result)
                and not any(result in syntax.names_loaded(r) or args & set(
                    syntax.names_stored(r)) for r in rest)
                and not args & set(syntax.names_stored(s)))

    def custom_vjp_call(self, s, op, g, defined, active):
        """`t = f(a, b)` with a custom_vjp: the forward pass calls `fwd`, the pullback
        `bwd`; a cotangent `bwd` returns as a literal None is a symbolic zero (no code),
        one it may return as None at run time becomes zeros."""
        prim = op.prim
        if prim.fwd is None:
            raise MissingRuleError(
                f"{self.src.where(s)}: {prim.__name__} is a custom_vjp without its "
                f"rule; call {prim.__name__}.defvjp(fwd, bwd) first")
        residuals = self.namer.fresh(f"{source.identifier(prim)}_residuals")
        fwd = self.ctx.bind(prim.fwd.__name__, obj=prim.fwd)
        bwd = self.ctx.bind(prim.bwd.__name__, obj=prim.bwd)
        self.user_calls[s] = (residuals, fwd)
        self.primal_names.add(residuals)
        zeros = _literal_nones(prim.bwd)
        active = [i for i in active if zeros.get(i) != "always"]
        # what bwd returns, checked against the arguments whose cotangents are read
        # (runtime.cotangents; None for the others)
        call = syntax.call(self.ctx.runtime("cotangents"), [
            syntax.call(bwd, [syntax.name(residuals), g]), syntax.name(bwd),
            syntax.tuple_([syntax.copied(a) if i in active else syntax.const(None)
                           for i, a in enumerate(op.args)])])
        out = []
        if len(active) > 1:     # call bwd once
            cotangents = self.namer.fresh(f"{source.identifier(prim)}_cotangents")
            out.append(syntax.located(syntax.assign(cotangents, call), s))
            call = syntax.name(cotangents)
        for i in active:
            part = gast.Subscript(value=syntax.copied(call), slice=syntax.const(i),
                                  ctx=gast.Load())
            # (a position the literals lack: never None, the check refuses them)
            if zeros.get(i, "never" if zeros else None) != "never":
                part = syntax.call(self.ctx.runtime("cotangent"), [part, syntax.copied(op.args[i])])
            out.extend(self.accumulate(op.args[i].id, part, defined, s))
        return out

    def callee(self, prim, wrt, call_args):
        """The generated-code name of the vjp of `prim` for `wrt`, which the driver
        compiles; a method's instance and a partial's arguments are bound to it."""
        fn, args, kwargs = operations.python_function(prim)
        shift = len(args)
        wrt = tuple(w + shift for w in wrt) if isinstance(wrt, tuple) else wrt + shift
        arg_types = operations.argument_types(prim, call_args, self.kinds)
        if marks.RECORD.of(fn) is not None and (fn, wrt, arg_types) not in self.ctx.lifted:
            self.ctx.lifted.append((fn, wrt, arg_types))
        patterns = self.callee_patterns(fn, call_args) if not (args or kwargs) else None
        if patterns:
            arg_types = ints_known(arrays_known(arg_types, patterns),
                                   positional(fn, len(call_args)), call_args, self.kinds)
        return self.ctx.call(Callee(fn, Variant.VJP, wrt, arg_types, tuple(args),
                                    dict(kwargs), patterns=patterns),
                             f"{source.identifier(fn)}_vjp")

    def callee_patterns(self, fn, call_args):
        """The shape patterns the vjp of `fn` called with the atoms `call_args` is
        specialised on (analysis/returned_shapes.py's `given_patterns`): those the shape
        analysis knows of the arrays it is passed, and of the arrays in the tuples it is
        passed, where this derivative's adjoints have the shapes of their values
        (`Compilation.adjoints_shaped`), and which its guard, or its caller's, then
        tests. None: none known."""
        ctx = self.ctx
        if not ctx.adjoints_shaped:
            return None
        params = positional(fn, len(call_args))
        if params is None:
            return None
        found = [ctx.shapes.argument_pattern(a) for a in call_args]
        patterns = given_patterns(params, found)
        for a, pat in zip(call_args, found):
            if pat is not None:
                ctx.shapes.rely_on_argument(a)
        return patterns or None


def _literal_nones(fn):
    """{position: "always" | "never" | "sometimes"} for the tuples `fn` returns as
    literals: whether each position is the constant None in every return, in none, or
    in some (then it may be None at run time). Empty if the source is unreadable or a
    return is not a tuple literal."""
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


def arrays_known(arg_types, patterns):
    """`arg_types` in which a value of unknown kind (an argument, an item of a tuple) is
    an array where `patterns` give it axes (a number has none)."""
    out = dict(arg_types)
    for p, pat in patterns.items():
        if p.endswith("[:]") and isinstance(out.get(p), tuple):
            out[p] = tuple(ARRAY if k == UNKNOWN and item is not None and item[1] else k
                           for k, item in zip(out[p], pat))
        elif out.get(p) == UNKNOWN and pat[1]:
            out[p] = ARRAY
    return out
