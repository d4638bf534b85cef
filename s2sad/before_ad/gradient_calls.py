"""Gradient calls: the gradients a function calls, made by `grad` or `value_and_grad`,
become calls of the functions that stand for them (frontend.gradients).

Runs at the start of desugar, on a lifted function. A gradient stored in a module
variable (`df(x)`) or made in the function (`s2sad.grad(f)(x)`, `df = s2sad.grad(f)`),
of a module-level function, a method of a module-level object, or a nested function or
lambda, is a call of the function that stands for it: the driver differentiates the
gradient code of `f` there, with respect to every argument that carries a derivative.
A nested function's values from the enclosing function are arguments of its lifted
version (`partial(lam, x=x)`), so the derivative of the enclosing function flows through
them too (no perturbation confusion). A `grad(grad(f))` is a gradient of the function
that stands for `grad(f)` (api.py's `_as_gradient`). Forward mode likewise:
`jvp(f, (x, ...), (x_dot, ...))` is a call of the function that stands for `f`'s
`f_jvp`, with the primals, the values a nested function reads and the tangents that are
not None; `jacfwd(f, i)` and `hvp(f, i)` made here are functions written with it. The
name a specialised version binds a function value to (`f = partial(lam, y=f_y)`, see
resolve_calls) is read as that value; `hessian(f, i)` made here is
`jacfwd(grad(f, i), i)`. Reverse mode: `jacrev(f, i)` made here is a function written
with the gradient of `f`'s cotangent function (frontend.gradients.reverse_function), and
`y, pullback = vjp(f, x, ...)` keeps the primals in names of their own, computes
`y = f(x, ...)`, and makes each `pullback(y_bar)` a call of that gradient with them. A
tuple `wrt` of jacfwd, jacrev or hessian is a function that returns the tuple of those
along each argument (frontend.gradients.tuple_function); `has_aux=True` differentiates
`f`'s output (`f(...)[0]`, frontend.gradients.output_function) and computes the aux
values beside it (aux_function); the positional parameters of `f` a call passes by
keyword, or leaves at their default values, are passed by position (the defaults as
names bound to them). The other derivatives of s2sad (`check_grad`, those stored rather
than called where they are made, ...) are refused where they are called.

A call of a library function that takes a user's function and has a Taker
(frontend/callables.py: `brentq(resid, a, b, args=(p,))`, `quad(lambda t: x * t, 0, 1)`)
is a call, by position, of the object that stands for it, with the parameters given, the
items of `args=` and the values bound to each function passed (read through the same
function values as a gradient's primal), so that the derivative flows through them.

>>> print(show("desugar", '''
... import s2sad
... def h(y, x):
...     return x * y * y
... def f(x):
...     return s2sad.grad(h)(2.0, x) + s2sad.grad(lambda y: x * y * y)(2.0)
... '''))
def f(x):
    return h_grad(2.0, x) + lam_grad(2.0, x=x)
"""
import collections
import functools
import inspect

import gast

from .. import marks
from .. import syntax
from ..errors import NativeBackendError
from ..frontend import callables, gradients
from ..frontend.source import MISSING
from ..options import Variant
from .lift import Lifted

#: the variants whose code calls a vmap's batched rules (batching_api.BatchedCall), not the
#: loop over its items (but forward mode over code to be differentiated again)
_BATCHED = (Variant.VJP, Variant.GRAD, Variant.VALUE_AND_GRAD, Variant.ADJOINT, Variant.JVP,
            Variant.TANGENT)

#: the options of grad and value_and_grad that do not change the numbers
_OPTIONS = ("backend", "memory")


def run(fn, ctx):
    """The rewrite of `fn`'s gradient calls, in place."""
    if any(_derivative(ctx.src.resolve(n.func)) or callables.taker(ctx.src.resolve(n.func))
           for n in syntax.walk(fn) if isinstance(n, gast.Call)):
        calls = GradientCalls(ctx, _function_values(fn), _tuples(fn), fn)
        calls.visit(fn)
        calls.check_pullbacks(fn)
    return fn


def _tuples(fn):
    """{name: length} of the names `fn` assigns once, at its top level, a tuple display
    (not a parameter's: a call before the assignment would read the argument)."""
    assigned = collections.Counter(n.id for n in syntax.walk(fn) if isinstance(
        n, gast.Name) and isinstance(n.ctx, (gast.Store, gast.Del, gast.Param)))
    return {s.targets[0].id: len(s.value.elts) for s in fn.body
            if isinstance(s, gast.Assign) and len(s.targets) == 1
            and isinstance(s.targets[0], gast.Name) and assigned[s.targets[0].id] == 1
            and isinstance(s.value, gast.Tuple)
            and not any(isinstance(e, gast.Starred) for e in s.value.elts)}


def _function_values(fn):
    """{name: value} of the names `fn` assigns once, a function value: a lifted function
    or a `partial` of one, as a version specialised on a function passed starts by
    binding it (`f = partial(lam, y=f_y)`, see resolve_calls)."""
    assigned, values = {}, {}
    for n in syntax.walk(fn):
        if isinstance(n, gast.Name) and isinstance(n.ctx, (gast.Store, gast.Del)):
            assigned[n.id] = assigned.get(n.id, 0) + 1
    for s in fn.body:
        if (isinstance(s, gast.Assign) and len(s.targets) == 1
                and isinstance(s.targets[0], gast.Name) and assigned[s.targets[0].id] == 1
                and (marks.PRIM.of(s.value) is not None or (
                    isinstance(s.value, gast.Call)
                    and marks.PRIM.of(s.value.func) is functools.partial))):
            values[s.targets[0].id] = s.value
    return values


def _derivative(obj):
    """Whether `obj` makes or is a derivative of s2sad's."""
    return obj is not MISSING and (gradients.api_function(obj) is not None
                                   or gradients.made_by(obj) is not None)


class GradientCalls(gast.NodeTransformer):
    """See the module docstring."""

    def __init__(self, ctx, function_values, tuples, fn):
        self.ctx, self.src, self.fn = ctx, ctx.src, fn
        self.function_values, self.tuples = function_values, tuples
        self.at_once = set()        # the ids of the calls whose result is called at once
        self.pullbacks = {}         # {name: (its vjp(...) call, the pullback's call)}
        self.filling = {}           # {id(name of a jacfwd made here): see `fill`}

    def visit_Assign(self, s):
        if not (len(s.targets) == 1 and isinstance(s.targets[0], (gast.Tuple, gast.List))
                and len(s.targets[0].elts) in (2, 3)
                and isinstance(s.targets[0].elts[1], gast.Name)
                and isinstance(s.value, gast.Call)
                and gradients.api_function(self.src.resolve(s.value.func)) == "vjp"):
            return self.generic_visit(s)
        self.generic_visit(s.value)
        return self.vjp_statement(s)

    def visit_Call(self, call):
        if isinstance(call.func, gast.Call):
            self.at_once.add(id(call.func))
            if (call.func.args and isinstance(call.func.args[0], gast.Call)
                    and gradients.api_function(self.src.resolve(call.func.func)) == "vmap"):
                self.at_once.add(id(call.func.args[0]))     # vmap(grad(g))(x): grad(g) too
        self.generic_visit(call)
        if id(call.func) in self.filling:
            call = self.fill(call)
        if isinstance(call.func, gast.Name) and call.func.id in self.pullbacks:
            return self.pullback_call(call)
        made = self.src.resolve(call.func)
        maker = gradients.api_function(made)
        if maker is not None:
            return self.made_here(call, made, maker)
        taker = callables.taker(made)
        if taker is not None:
            return self.taking_call(call, made, taker)
        called = call.func.args[0] if marks.GRADIENT_MADE.of(call.func) else call.func
        if getattr(marks.PRIM.of(called), "s2s_forward", None) == "vmap":
            self.vmap_called(call)
        if marks.GRADIENT_MADE.of(call.func):     # made here, called at once
            made = call.func
            call.func = made.args[0]
            call.args = made.args[1:] + call.args
            call.keywords = made.keywords + call.keywords
            made = marks.PRIM.of(call.func)
        if (getattr(made, "s2s_gradient", None) is not None
                or getattr(made, "s2s_forward", None) is not None):     # made here
            if getattr(made, "s2s_forward", None) != "vmap":
                self.check_keywords(call, made)
            else:   # (the values a nested function reads, after the call's: vmap_called)
                call.args, call.keywords = call.args + [k.value for k in call.keywords], []
            return call
        if getattr(made, "s2s_vmap", None) is not None:    # vmap(f, ...) made outside
            f, in_axes, out_axes = made.s2s_vmap
            call.func = self.name_of(self.vmap_function(call, None, f, [], in_axes,
                                                        out_axes), call.func)
            return self.vmap_called(call)
        kind = gradients.made_by(made)
        if kind is None:
            return call
        called = gradients.called_gradient(made)
        if called is None:
            raise self.src.syntax_error(call, gradients.refusal(kind))
        standing, bound = called
        self.check_keywords(call, standing)
        if bound:
            call.func = self.name_of(standing, call.func)
            call.args = [self.name_of(b, call.func) for b in bound] + call.args
        else:
            marks.PRIM.put(call.func, standing)       # (the code keeps the user's name for it)
        return call

    def made_here(self, call, maker, kind):
        """What stands for `maker(f, wrt)` (`call`) made in the function: the function
        that stands for the gradient, or a `partial` of it with the values bound to it
        (the instance of a method, the values a nested function reads)."""
        if kind == "jvp":
            return self.jvp_call(call)
        if kind == "vjp":
            raise self.vjp_refused(call, "is not the value of y, pullback = "
                                         "s2sad.vjp(f, x, ...)")
        if kind == "vmap":
            return self.vmap_made(call)
        if kind not in gradients.GRADIENTS + gradients.FORWARD + gradients.REVERSE:
            raise self.src.syntax_error(call, gradients.refusal(kind))
        if kind not in gradients.GRADIENTS:
            self.check_built(call, kind)
        f, primal, wrt, options, extras = self.gradient_of(call)
        aux = options.pop("has_aux", False)
        if aux and kind == "hvp":
            raise self.jvp_refused(call, "has has_aux=True, which hvp does not take", kind)
        # (with has_aux, of the function's output; the aux values beside it)
        output = gradients.output_function(primal) if aux else primal
        if kind in gradients.FORWARD + gradients.REVERSE:
            standing, bound = self.forward_function(call, kind, f, output, wrt), ()
        else:
            made = maker(output, wrt=wrt, **options)
            called = gradients.called_gradient(made)
            if called is None:
                raise self.src.syntax_error(call, gradients.refusal(gradients.made_by(made)))
            standing, bound = called
        if aux:
            standing = gradients.aux_function(kind, standing, primal)
        if extras and id(call) not in self.at_once:
            names = ", ".join(k.arg for k in extras)
            raise self.src.syntax_error(call, (
                f"{kind}() of a nested function or lambda that reads {names} of the "
                "enclosing function is made here and stored; s2sad differentiates it where "
                f"it is called at once ({kind}(g)(...), when the closure reads {names}). "
                "Call it where it is made, or define the function at module level and pass "
                f"{names} as arguments"))
        name = self.name_of(standing, call)
        if kind in gradients.FORWARD + gradients.REVERSE:
            self.filling[id(name)] = (kind, primal, self.differentiated(
                call, f, primal, functools.partial(self.jvp_refused, kind=kind))[1])
        if not (bound or extras):
            return name
        partial = syntax.located(syntax.name(self.ctx.bind("partial", obj=functools.partial)),
                                 call)
        marks.PRIM.put(partial, functools.partial)
        made = syntax.located(syntax.call(
            partial, [name] + [self.name_of(b, call) for b in bound], extras), call)
        marks.GRADIENT_MADE.put(made, True)
        return made

    def vmap_made(self, call):
        """What stands for `vmap(f, in_axes, out_axes)` (`call`) made in the function: the
        loop frontend.gradients.vmap_function writes, or a `partial` of it with the values
        a nested `f` reads."""
        self.check_built(call, "vmap")
        given = dict(zip(("f", "in_axes", "out_axes"), call.args))
        for k in call.keywords:
            if k.arg not in ("f", "in_axes", "out_axes") or k.arg in given:
                raise self.vmap_refused(call, f"passes {k.arg}=, which vmap() does not take"
                                        if k.arg else "passes **kwargs")
            given[k.arg] = k.value
        if "f" not in given or len(call.args) > 3:
            raise self.vmap_refused(call, "is not vmap(f, in_axes, out_axes)")
        axes = {k: _constant(given[k]) if k in given else 0 for k in ("in_axes", "out_axes")}
        if MISSING in axes.values():
            raise self.vmap_refused(call, "has in_axes or out_axes other than ints, None "
                                          "and tuples of them, written as constants")
        f, extras = given["f"], []
        if isinstance(f, gast.Name) and f.id in self.function_values:
            f = self.function_values[f.id]
        if marks.GRADIENT_MADE.of(f):       # vmap(grad(lam)): its partial(lam_grad, x=x)
            if len(f.args) != 1:
                raise self.vmap_refused(call, "batches the derivative of a bound method")
            f, extras = f.args[0], f.keywords
            primal = marks.PRIM.of(f)
        else:
            f, primal, extras = self.function_of(call, f)
        standing = self.vmap_function(call, f, primal, [k.arg for k in extras],
                                      axes["in_axes"], axes["out_axes"])
        name = self.name_of(standing, call)
        if not extras:
            return name
        if id(call) not in self.at_once:
            names = ", ".join(k.arg for k in extras)
            raise self.vmap_refused(call, f"batches a nested function or lambda that reads "
                                          f"{names} of the enclosing function and is stored: "
                                          "call it where it is made, vmap(g)(x)")
        partial = syntax.located(syntax.name(self.ctx.bind("partial", obj=functools.partial)),
                                 call)
        marks.PRIM.put(partial, functools.partial)
        made = syntax.located(syntax.call(partial, [name], [syntax.copied(k) for k in extras]),
                              call)
        marks.GRADIENT_MADE.put(made, True)
        return made

    def vmap_function(self, call, f, primal, extras, in_axes, out_axes):
        """The function that stands for `vmap(primal, in_axes, out_axes)` (see
        frontend.gradients.vmap_function), `f` its node or None, `extras` the names of the
        values a nested `primal` reads; or the error saying what vmap takes there."""
        if gradients.made_by(primal) is not None and getattr(primal, "s2s_vmap", None) is None:
            called = gradients.called_gradient(primal)      # vmap(df), df = grad(g)
            if called is None or called[1]:
                raise self.vmap_refused(call, "batches a derivative of s2sad's other than "
                                              "grad(g) and value_and_grad(g)")
            primal = called[0]
        standing = (getattr(primal, "s2s_gradient", None) is not None
                    or getattr(primal, "s2s_forward", None) is not None)
        if not standing and (not inspect.isfunction(primal) or getattr(
                primal, "s2s_made_by", None) is not None):
            raise self.vmap_refused(call, "batches no Python function of the user's (a "
                                          "method, a library function, a class, a vmap)")
        lifted = self.lifted(f) if f is not None else None
        if isinstance(lifted, Lifted):
            params = list(lifted.params)
        else:
            params = [p.name for p in inspect.signature(primal).parameters.values()
                      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                      and (standing or p.default is p.empty) and p.name not in extras]
        if isinstance(in_axes, tuple):
            if len(in_axes) > len(params):
                raise self.vmap_refused(call, f"has in_axes={in_axes!r} for the "
                                              f"{len(params)} parameter(s) of the function")
            params = params[:len(in_axes)]
        else:
            in_axes = (in_axes,) * len(params)
        axes = in_axes + (out_axes if isinstance(out_axes, tuple) else (out_axes,))
        if any(ax is None for ax in axes[len(in_axes):]):
            raise self.vmap_refused(call, "has out_axes=None (a result the batch shares): "
                                          "return it batched, out_axes=0, and take its "
                                          "first item")
        if any(ax is not None and (type(ax) is not int) for ax in axes):
            raise self.vmap_refused(call, f"has in_axes={in_axes!r} and out_axes="
                                          f"{out_axes!r}")
        if all(ax is None for ax in in_axes):
            raise self.vmap_refused(call, "batches no argument (in_axes are all None)")
        loop = gradients.vmap_function(primal, params, extras, in_axes, out_axes,
                                       self.src.where(call))
        if self.ctx.variant in _BATCHED and not (
                self.ctx.options.recompute and self.ctx.variant.forward) and (
                getattr(primal, "s2s_vmap_of", None) is None):     # (vmap(vmap(g)): loops)
            return gradients.MAKERS["vmap"](loop)     # (batched fwd and bwd)
        return loop

    def vmap_called(self, call):
        """Refuse keyword arguments in `call`, of what stands for a vmap."""
        if call.keywords or any(isinstance(a, gast.Starred) for a in call.args):
            raise self.vmap_refused(call, "is called with keyword or starred arguments")
        made = call.func.args[0] if marks.GRADIENT_MADE.of(call.func) else call.func
        params = len(inspect.signature(marks.PRIM.of(made)).parameters)
        if marks.GRADIENT_MADE.of(call.func):
            params -= len(call.func.keywords)
        if len(call.args) != params:
            raise self.vmap_refused(call, f"is given {len(call.args)} argument(s) for the "
                                          f"{params} it batches (in_axes as a tuple gives "
                                          "one entry per argument)")
        return call

    def vmap_refused(self, call, why):
        return self.src.syntax_error(call, (
            f"this s2sad.vmap() inside a differentiated function {why}; s2sad "
            "differentiates vmap(f, in_axes, out_axes)(x, ...) there, of a module-level "
            "function, a nested function or a lambda, or of grad(f) or value_and_grad(f), "
            "called with positional arguments, each in_axes entry an int or None (an axis "
            "of an array argument), out_axes an int (a tuple of ints for a function that "
            "returns a tuple)"))

    def taking_call(self, call, library, taker):
        """What stands for `call`, of the library function `library` that takes a user's
        function (see frontend/callables.py): a call by position of the object that
        `taker` makes for its Layout."""
        name = getattr(library, "__name__", "f")
        params = list(callables.signature(library).parameters.values())
        given = {}
        if len(call.args) > len(params) or any(
                isinstance(a, gast.Starred) for a in call.args) or any(
                k.arg is None for k in call.keywords):
            raise self.taking_refused(call, name, "passes *args or **kwargs")
        for p, a in zip(params, call.args):
            given[p.name] = a
        for k in call.keywords:
            if k.arg in given or k.arg not in {p.name for p in params}:
                raise self.taking_refused(call, name, f"passes {k.arg}=, which {name}() "
                                                      "does not take by that name")
            given[k.arg] = k.value
        if taker.function not in given:
            raise self.taking_refused(call, name, f"gives no {taker.function}")
        for param, why in taker.refused.items():
            if param in given and not (isinstance(given[param], gast.Constant)
                                       and given[param].value in (None, False)):
                raise self.src.syntax_error(call, f"{name}(..., {param}=...): {why}")
        extra = []
        if taker.args is not None and taker.args in given:
            items = self.counted(given.pop(taker.args))
            if items is None:
                raise self.taking_refused(call, name, f"passes {taker.args}= as a value "
                                          f"s2sad cannot count (a parameter); write it as "
                                          f"a tuple, {taker.args}=(p, q), or name a tuple "
                                          "made in the function or at module level")
            extra = [syntax.copied(e) for e in items.elts]
        functions, bound = [], []
        for param in (taker.function,) + taker.functions:
            if param not in given or isinstance(given[param], gast.Constant):
                continue        # (None, True, or the name of a method: "2-point")
            fn, names, values = self.taken_function(call, name, given.pop(param))
            functions.append((param, fn, names))
            bound.extend(values)
        layout = callables.Layout(library, tuple(given), len(extra), tuple(functions))
        standing = taker.make(layout)
        args = [syntax.copied(v) for v in given.values()] + extra + bound
        return syntax.located(syntax.call(self.name_of(standing, call), args), call)

    def counted(self, node):
        """The tuple display `node` is, or reads, or None: a name the function assigns a
        tuple display once (`extra = (p, q)`), or that denotes a tuple at module level,
        reads as `(extra[0], extra[1])`, its items at the call."""
        if isinstance(node, (gast.Tuple, gast.List)):
            return node
        if not isinstance(node, gast.Name):
            return None
        n = self.tuples.get(node.id)
        if n is None:
            value = self.src.resolve(node)
            n = len(value) if isinstance(value, tuple) else None
        if n is None:
            return None
        return syntax.located(syntax.tuple_([syntax.located(gast.Subscript(
            value=syntax.copied(node), slice=syntax.const(k), ctx=gast.Load()), node)
            for k in range(n)]), node)

    def taken_function(self, call, name, node):
        """(the function, the names of the values bound to it, their nodes) of the function
        `node` passed to the library function `name`: a function of the user's, a nested
        function or lambda (the values it reads bound), or a `functools.partial` of one
        with keywords."""
        if isinstance(node, gast.Name) and node.id in self.function_values:
            node = self.function_values[node.id]
        bound, positional = [], []
        if (isinstance(node, gast.Call) and self.src.resolve(node.func) is functools.partial
                and node.args and not any(isinstance(a, gast.Starred) for a in node.args)):
            node, positional, bound = node.args[0], node.args[1:], node.keywords
        fn = self.src.resolve(node)
        if not inspect.isfunction(fn) or any(k.arg is None for k in bound):
            raise self.taking_refused(call, name, "passes a function s2sad cannot read: it "
                                      "differentiates through a function of yours, a nested "
                                      "function or lambda, or functools.partial(f, a, k=v) "
                                      "of one")
        # (the positional values bound by position: names 0, 1, ...; see implicit.Function)
        return fn, tuple(range(len(positional))) + tuple(k.arg for k in bound), [
            syntax.copied(v) for v in positional] + [syntax.copied(k.value) for k in bound]

    def taking_refused(self, call, name, why):
        return self.src.syntax_error(call, (
            f"this call of {name}() inside a differentiated function {why}; s2sad "
            f"differentiates {name}(f, ...) called with f a function of yours, a nested "
            "function or lambda, its extra arguments as a tuple (args=(p, q)) and the other "
            "parameters by position or by name"))

    def jvp_call(self, call):
        """What stands for `jvp(f, primals, tangents)` (`call`): a call of the function
        that stands for it (frontend.gradients.jvp_function), with the primals, the
        values a nested function reads, and the tangents that are not None."""
        given = dict(zip(("f", "primals", "tangents"), call.args))
        passed = {}     # (the keyword arguments to f)
        for k in call.keywords:
            if k.arg is None or k.arg in given or k.arg in passed:
                raise self.jvp_refused(call, "passes **kwargs or an argument twice")
            if k.arg in ("f", "primals", "tangents", "backend", "has_aux"):
                given[k.arg] = k.value
            else:
                passed[k.arg] = k.value
        aux = "has_aux" in given and _constant(given["has_aux"])
        if aux not in (True, False):
            raise self.jvp_refused(call, "has a has_aux other than True or False")
        if len(call.args) > 3 or any(k not in given for k in ("f", "primals", "tangents")) or (
                "backend" in given and _constant(given["backend"]) is MISSING):
            raise self.jvp_refused(call, "is not jvp(f, (x, ...), (x_dot, ...))")
        primals, tangents = given["primals"], given["tangents"]
        if not (isinstance(primals, (gast.Tuple, gast.List))
                and isinstance(tangents, (gast.Tuple, gast.List))
                and len(primals.elts) == len(tangents.elts)):
            raise self.jvp_refused(call, "does not give its primals and tangents as two "
                                         "tuples of the same length, (x, ...) and (x_dot, ...)")
        wrt = tuple(k for k, t in enumerate(tangents.elts)
                    if not (isinstance(t, gast.Constant) and t.value is None))
        if not wrt:
            raise self.jvp_refused(call, "has no tangent that is not None")
        f, primal, extras = self.function_of(call, given["f"])
        standing, filled = self.jvp_function(call, f, primal, wrt, len(primals.elts), passed,
                                             aux)
        names = list(inspect.signature(standing).parameters)[-len(wrt):]
        args = [syntax.copied(e) for e in primals.elts] + filled
        dots = [syntax.copied(tangents.elts[k]) for k in wrt]
        if extras:      # (then the tangents by name, after the values read)
            keywords = extras + [gast.keyword(arg=n, value=t) for n, t in zip(names, dots)]
        else:
            args, keywords = args + dots, []
        return syntax.located(syntax.call(self.name_of(standing, call), args, keywords), call)

    def jvp_function(self, call, f, primal, wrt, n, passed, aux=False):
        """(the function that stands for `jvp(primal, ...)` along the arguments `wrt` of
        the `n` primals given (see frontend.gradients.jvp_function), the values of the
        parameters after them: `passed` by keyword or their defaults); with `aux`, of
        `jvp(primal, ..., has_aux=True)`."""
        primal, params = self.differentiated(call, f, primal, self.jvp_refused)
        filled = self.defaults(call, primal, params, n, self.jvp_refused, passed)
        if not aux:
            return gradients.jvp_function(primal, wrt, gradients.MAKERS["jvp"]), filled
        standing = gradients.jvp_function(gradients.output_function(primal), wrt,
                                          gradients.MAKERS["jvp"])
        return gradients.aux_function("jvp", standing, primal, len(wrt)), filled

    def defaults(self, call, primal, params, n, refused, passed=None):
        """The values of the positional parameters `params` of `primal` (Parameters, or
        the names of a lifted function's) after the first `n`, which `call` gives: those
        it passes by keyword (`passed`, {name: node}), else their default values (names
        the generated code binds them to); or the error `refused(call, why)` where one
        has neither."""
        passed = dict(passed or {})
        name = getattr(primal, "__name__", "f")
        out = []
        for p in params[n:]:
            pname = getattr(p, "name", p)
            default = getattr(p, "default", inspect.Parameter.empty)
            if pname in passed:
                out.append(passed.pop(pname))
            elif default is not inspect.Parameter.empty:
                out.append(syntax.located(syntax.name(self.ctx.bind(f"{name}_{pname}",
                                                                    obj=default)), call))
            else:
                break
        if n > len(params) or len(out) < len(params) - n:
            raise refused(call, f"gives {n} primal(s) for the {len(params)} positional "
                                f"parameter(s) of {name}()")
        if passed:
            raise refused(call, f"passes {', '.join(passed)}=, which is not a positional "
                                f"parameter of {name}() after those it gives by position")
        return out

    def forward_function(self, call, kind, f, primal, wrt):
        """The function that stands for `jacfwd(primal, wrt)`, `hvp(primal, wrt)`,
        `hessian(primal, wrt)` or `jacrev(primal, wrt)`; for a tuple `wrt` (not of hvp),
        one that returns the tuple of those along each (the blocks of a hessian nested
        twice: `((H00, H01), (H10, H11))`)."""
        if isinstance(wrt, tuple) and wrt and kind != "hvp":
            if kind == "hessian":
                n = self.positional_count(f, primal)
                rows = []
                for i in wrt:
                    self.forward_function(call, kind, f, primal, i)    # (checks i)
                    gradient = gradients.called_gradient(
                        gradients.MAKERS["grad"](primal, wrt=i))[0]
                    rows.append(tuple(gradients.forward_function(
                        "jacfwd", gradients.jvp_function(gradient, (j,),
                                                         gradients.MAKERS["jvp"]), n, j)
                        for j in wrt))
                return gradients.tuple_function(kind, primal, tuple(rows))
            return gradients.tuple_function(kind, primal, tuple(
                self.forward_function(call, kind, f, primal, i) for i in wrt))
        if not isinstance(wrt, int) or isinstance(wrt, bool):
            raise self.jvp_refused(call, f"has wrt={wrt!r}: give the index of one argument",
                                   kind)
        n = self.positional_count(f, primal)
        if not 0 <= wrt < n:
            raise self.jvp_refused(call, f"has wrt={wrt!r}, not one of the {n} positional "
                                         "parameters", kind)
        if kind == "jacrev":
            return gradients.reverse_function(kind, primal, n, wrt)
        if kind in ("hvp", "hessian"):      # (a hessian is jacfwd(grad(f, i), i))
            primal = gradients.called_gradient(gradients.MAKERS["grad"](primal, wrt=wrt))[0]
        standing = gradients.jvp_function(primal, (wrt,), gradients.MAKERS["jvp"])
        return gradients.forward_function("hvp" if kind == "hvp" else "jacfwd", standing, n,
                                          wrt)

    def fill(self, call):
        """`call`, of what stands for `jacfwd(f, i)`, `jacrev`, `hessian` or `hvp` made
        here (`self.filling`), passing every positional parameter of `f` of its own by
        position: those it passes by keyword, and the default values of those it leaves
        out (before hvp's `v`, which is its last argument)."""
        kind, primal, params = self.filling[id(call.func)]
        given = len(call.args) - (kind == "hvp")
        if any(isinstance(a, gast.Starred) for a in call.args) or any(
                k.arg is None for k in call.keywords) or given < 0:
            return call     # (the driver says what does not match)
        names = {getattr(p, "name", p) for p in params[given:]}
        passed = {k.arg: k.value for k in call.keywords if k.arg in names}
        if given >= len(params) and not passed:
            return call
        call.args[given:given] = self.defaults(call, primal, params, given,
                                               functools.partial(self.jvp_refused, kind=kind),
                                               passed)
        call.keywords = [k for k in call.keywords if k.arg not in passed]
        return call

    def positional_count(self, f, primal):
        """The number of positional parameters of `primal` (`f`'s value) of its own (a
        lifted function has the values it reads after them)."""
        lifted = self.lifted(f)
        if isinstance(lifted, Lifted):
            return len(lifted.params)
        return len([p for p in inspect.signature(getattr(primal, "__func__", primal))
                    .parameters.values() if p.kind in (p.POSITIONAL_ONLY,
                                                       p.POSITIONAL_OR_KEYWORD)])

    def vjp_statement(self, s):
        """`y, pullback = vjp(f, x, ...)` (`s`): the primals (and the values a nested `f`
        reads) kept in names of their own, `y = f(x, ...)`, and the pullback's calls
        `pullback(y_bar)` calls of the function that stands for it
        (frontend.gradients.reverse_function) with the names kept."""
        call = s.value
        self.check_built(call, "vjp")
        if not call.args or any(isinstance(a, gast.Starred) for a in call.args) or any(
                k.arg is None for k in call.keywords):
            raise self.vjp_refused(call, "passes a starred argument or **kwargs")
        options = {k.arg: k.value for k in call.keywords if k.arg in ("backend", "has_aux")}
        aux = "has_aux" in options and _constant(options["has_aux"])
        if aux not in (True, False) or len(s.targets[0].elts) != 2 + aux:
            raise self.vjp_refused(call, "is not y, pullback = s2sad.vjp(f, x, ...) or y, "
                                         "pullback, aux = s2sad.vjp(f, x, ..., has_aux=True)")
        if "backend" in options and _constant(options["backend"]) not in ("python", None):
            raise self.vjp_refused(call, "has a backend other than backend=\"python\"")
        passed = {k.arg: k.value for k in call.keywords if k.arg not in options}
        pullback = s.targets[0].elts[1].id
        if sum(isinstance(n, gast.Name) and n.id == pullback and isinstance(n.ctx, gast.Store)
               for n in syntax.walk(self.fn)) != 1:
            raise self.vjp_refused(call, f"assigns {pullback} elsewhere too")
        f, primal, extras = self.function_of(call, call.args[0])
        n = len(call.args) - 1
        primal, params = self.differentiated(call, f, primal, self.vjp_refused)
        filled = self.defaults(call, primal, params, n, self.vjp_refused, passed)
        standing = gradients.reverse_function(
            "vjp", gradients.output_function(primal) if aux else primal, n)
        stored = {n.id for n in syntax.walk(self.fn) if isinstance(n, gast.Name)
                  and isinstance(n.ctx, gast.Store)} - set(self.function_values)
        out, kept = [], []
        for value in call.args[1:] + filled + [k.value for k in extras]:
            if isinstance(value, gast.Name) and value.id not in stored:
                kept.append(value)      # (a name of one value: a function passed, ...)
                continue
            kept.append(syntax.name(self.ctx.namer.fresh("primal")))
            out.append(syntax.located(syntax.assign(kept[-1].id, value), s))
        n += len(filled)
        args = kept[:n]
        keywords = [gast.keyword(arg=k.arg, value=v) for k, v in zip(extras, kept[n:])]
        value = s.targets[0].elts[0]
        if aux:     # (y, aux = f(x, ...))
            value = syntax.tuple_([value, s.targets[0].elts[2]], store=True)
        out.append(syntax.located(syntax.assign(value, syntax.call(
            syntax.copied(f), [syntax.copied(a) for a in args],
            [syntax.copied(k) for k in keywords])), s))
        y_bar = list(inspect.signature(standing).parameters)[-1]
        self.pullbacks[pullback] = (call, standing, args, keywords, y_bar)
        return out

    def pullback_call(self, call):
        """`pullback(y_bar)` of a `y, pullback = vjp(f, x, ...)`: a call of the function
        that stands for it (see `vjp_statement`)."""
        made, standing, args, keywords, y_bar = self.pullbacks[call.func.id]
        if len(call.args) != 1 or call.keywords or isinstance(call.args[0], gast.Starred):
            raise self.vjp_refused(made, f"has its pullback called with other than one "
                                         f"argument (the cotangent) at line {call.lineno}")
        args = [syntax.copied(a) for a in args]
        keywords = [syntax.copied(k) for k in keywords]
        if keywords:
            keywords.append(gast.keyword(arg=y_bar, value=call.args[0]))
        else:
            args.append(call.args[0])
        return syntax.located(syntax.call(self.name_of(standing, call), args, keywords), call)

    def check_pullbacks(self, fn):
        """Refuse a pullback of `vjp` read other than called after its `vjp(...)`."""
        for n in syntax.walk(fn):
            if (isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)
                    and n.id in self.pullbacks):
                raise self.vjp_refused(self.pullbacks[n.id][0], (
                    f"has its pullback {n.id} read other than called (at line {n.lineno})"))

    def check_built(self, call, kind):
        """Refuse `call` of `kind` (jacfwd, jacrev, hessian, hvp, vjp) where the backend
        does not compile the functions written for it (`can.built_derivatives`)."""
        if not self.ctx.can.built_derivatives:
            raise NativeBackendError(
                f"{self.src.where(call)}: the numba backend cannot compile s2sad.{kind}() "
                "called in a differentiated function (the code s2sad writes for it builds "
                "lists and calls Python functions); differentiate this function with the "
                "Python backend (the default), or write the derivative there with "
                "s2sad.grad(f)(x, ...) or s2sad.jvp(f, (x, ...), (v, ...)), which it "
                f"compiles\n    {self.src.line_text(call).strip()}")

    def differentiated(self, call, f, primal, refused):
        """(the Python function that `call`, a jvp or vjp of `f` whose value is `primal`,
        differentiates: the function a gradient stands for, for `jvp(grad(g), ...)`; its
        positional parameters), or the error `refused(call, why)`."""
        if gradients.made_by(primal) is not None:     # jvp(grad(g), ...): of its code
            inner = gradients.called_gradient(primal)
            if inner is None or inner[1]:
                raise self.src.syntax_error(call, gradients.refusal(gradients.made_by(primal)))
            primal = inner[0]
        if not inspect.isfunction(getattr(primal, "__func__", primal)) or inspect.ismethod(
                primal):
            raise refused(call, "differentiates no Python function of the user's (a method, "
                                "a library function or a class)")
        lifted = self.lifted(f)
        params = (lifted.params if isinstance(lifted, Lifted) else
                  [p for p in inspect.signature(primal).parameters.values()
                   if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)])
        return primal, params

    def vjp_refused(self, call, why):
        return self.src.syntax_error(call, (
            f"this call of s2sad.vjp() inside a differentiated function {why}; s2sad "
            "differentiates y, pullback = s2sad.vjp(f, x, ...) there, of a module-level "
            "function, a nested function or a lambda, with pullback(y_bar) called after it "
            "(for a function with a scalar result, s2sad.grad(f)(x) * y_bar is the "
            "pullback of y_bar too)"))

    def jvp_refused(self, call, why, kind="jvp"):
        return self.src.syntax_error(call, (
            f"this call of s2sad.{kind}() inside a differentiated function {why}; s2sad "
            "differentiates jvp(f, (x, ...), (x_dot, ...)), jacfwd(f, i)(x, ...), "
            "jacrev(f, i)(x, ...), hvp(f, i)(x, ..., v) and hessian(f, i)(x, ...) called "
            "there, of a "
            "module-level function, a nested function or a lambda, the tangents None or "
            "not, has_aux=True or not (but for hvp), i one index or a tuple of them (one "
            "for hvp), f's positional parameters after those given by position passed by "
            "keyword or left at their defaults"))

    def function_of(self, call, f):
        """(f, the function it denotes, the keywords bound to it) of the function `f` a
        derivative is taken of: a lifted function and the values it reads
        (`partial(lam, x=x)`, also through the name a specialised version binds it to)."""
        if isinstance(f, gast.Name) and f.id in self.function_values:
            f = self.function_values[f.id]
        extras = []
        if (isinstance(f, gast.Call) and self.src.resolve(f.func) is functools.partial
                and len(f.args) == 1 and isinstance(self.lifted(f.args[0]), Lifted)):
            f, extras = f.args[0], [syntax.copied(k) for k in f.keywords]
        primal = self.src.resolve(f)
        if primal is MISSING:
            raise self.refused(call, f)
        return f, primal, extras

    def gradient_of(self, call):
        """(f, primal, wrt, options, keywords bound to the primal) of `grad(f, wrt,
        ...)` (also of jacfwd and hvp): the node of the function, the function."""
        given = dict(zip(("f", "wrt"), call.args))
        for k in call.keywords:
            if k.arg is None or k.arg in given:
                raise self.refused(call)
            given[k.arg] = k.value
        if "argnums" in given and "wrt" not in given:
            given["wrt"] = given.pop("argnums")
        if len(call.args) > 2:
            maker = syntax.unparse(call.func)
            raise self.src.syntax_error(call, (
                f"{maker}(f, wrt) takes the function and which argument (at most two "
                f"positional arguments) and returns the derivative's function: call that "
                f"with the point, {maker}(f)(x, ...)"))
        if "f" not in given or any(
                k not in ("f", "wrt", "has_aux") + _OPTIONS for k in given) or any(
                _constant(v) is MISSING for k, v in given.items() if k != "f"):
            raise self.refused(call)
        wrt = _constant(given["wrt"]) if "wrt" in given else 0
        options = {k: _constant(given[k]) for k in _OPTIONS + ("has_aux",) if k in given}
        f, primal, extras = self.function_of(call, given["f"])
        inner = gradients.called_gradient(primal) if gradients.made_by(primal) else None
        if inner is not None and not inner[1]:      # grad(df), df = grad(g): of its code
            primal = inner[0]
        lifted = self.lifted(f)
        if isinstance(lifted, Lifted):      # a nested function or lambda
            wrt = self.own_wrt(call, wrt, primal, lifted.params)
        return f, primal, wrt, options, extras

    def lifted(self, node):
        return marks.RECORD.of(marks.PRIM.of(node))

    def own_wrt(self, call, wrt, primal, params):
        """`wrt`, checked to name the nested function's own parameters (its lifted
        version has the values it reads from the enclosing function after them)."""
        if isinstance(wrt, (tuple, list)):
            return tuple(self.own_wrt(call, w, primal, params) for w in wrt)
        if isinstance(wrt, str) and wrt in params:
            return wrt
        if isinstance(wrt, int) and not isinstance(wrt, bool) and (
                -len(params) <= wrt < len(params)):
            return wrt % len(params)
        own = ", ".join(params) or "none"
        raise self.src.syntax_error(call, (
            f"wrt={wrt!r} is not a parameter of the nested function {primal.__name__}() "
            f"(its parameters: {own}); give the index or name of one of them"))

    def name_of(self, obj, like):
        """A name generated code reads `obj` by."""
        base = getattr(obj, "__name__", None) or type(obj).__name__.lower()
        name = syntax.located(syntax.name(self.ctx.bind(base, obj=obj)), like)
        marks.PRIM.put(name, obj)
        return name

    def check_keywords(self, call, standing):
        """Refuse a keyword argument of the gradient's primal that its standing function
        does not take (a keyword-only parameter)."""
        primal = getattr(standing, "s2s_gradient", (standing,))[0]
        params = standing.__code__.co_varnames[:standing.__code__.co_argcount]
        for k in call.keywords:
            if k.arg is not None and k.arg not in params:
                raise self.src.syntax_error(call, (
                    f"this call of a gradient of {getattr(primal, '__name__', 'f')}() "
                    f"passes {k.arg}=, which is not one of its positional parameters "
                    f"({', '.join(params)}); s2sad differentiates a gradient called inside "
                    "a differentiated function through those: make the parameter "
                    "positional, or leave the keyword-only one at its default"))

    def refused(self, call, f=None):
        method = ""
        if isinstance(f, gast.Attribute) and isinstance(f.value, gast.Name):
            method = (f"; for a method of an object made here, take the gradient of the "
                      f"class's function: s2sad.grad(ClassName.{f.attr}, wrt=1)"
                      f"({f.value.id}, ...) (wrt counts self)")
        elif isinstance(f, gast.Call) and self.src.resolve(f.func) is functools.partial:
            method = ("; for a functools.partial, take the gradient of the function with "
                      "respect to the parameter and pass the others "
                      "(s2sad.grad(h, wrt=1)(x, y) for partial(h, x)), or of a lambda "
                      "(s2sad.grad(lambda y: h(x, y))(y)); the derivative flows through x "
                      "either way")
        return self.src.syntax_error(call, (
            f"{syntax.unparse(call.func)}(...) called inside a differentiated function must "
            "take a function "
            "defined outside it (or a nested function or lambda) and a constant wrt; "
            "define the gradient at module level (df = s2sad.grad(f)) and call df here"
            + method))


def _constant(node):
    """The value of a constant or a tuple of constants, else MISSING."""
    if isinstance(node, gast.Constant):
        return node.value
    if (isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub)
            and isinstance(node.operand, gast.Constant) and type(node.operand.value) is int):
        return -node.operand.value
    if isinstance(node, gast.Tuple):
        values = tuple(_constant(e) for e in node.elts)
        return MISSING if MISSING in values else values
    return MISSING
