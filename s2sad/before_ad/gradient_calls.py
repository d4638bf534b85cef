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
that stands for `grad(f)` (api.py's `_as_gradient`). The other derivatives of s2sad
(`jvp`, `hessian`, ...) are refused where they are called.

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
import functools

import gast

from .. import marks
from .. import syntax
from ..frontend import gradients
from ..frontend.source import MISSING
from .lift import Lifted

#: the options of grad and value_and_grad that do not change the numbers
_OPTIONS = ("backend", "memory")


def run(fn, ctx):
    """The rewrite of `fn`'s gradient calls, in place."""
    if any(_derivative(ctx.src.resolve(n.func)) for n in syntax.walk(fn)
           if isinstance(n, gast.Call)):
        GradientCalls(ctx).visit(fn)
    return fn


def _derivative(obj):
    """Whether `obj` makes or is a derivative of s2sad's."""
    return obj is not MISSING and (gradients.api_function(obj) is not None
                                   or gradients.made_by(obj) is not None)


class GradientCalls(gast.NodeTransformer):
    """See the module docstring."""

    def __init__(self, ctx):
        self.ctx, self.src = ctx, ctx.src
        self.at_once = set()        # the ids of the calls whose result is called at once

    def visit_Call(self, call):
        if isinstance(call.func, gast.Call):
            self.at_once.add(id(call.func))
        self.generic_visit(call)
        made = self.src.resolve(call.func)
        maker = gradients.api_function(made)
        if maker is not None:
            return self.made_here(call, made, maker)
        if marks.GRADIENT_MADE.of(call.func):     # made here, called at once
            made = call.func
            call.func = made.args[0]
            call.args = made.args[1:] + call.args
            call.keywords = made.keywords + call.keywords
            made = marks.PRIM.of(call.func)
        if getattr(made, "s2s_gradient", None) is not None:     # made here
            self.check_keywords(call, made)
            return call
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
        if kind not in gradients.GRADIENTS:
            raise self.src.syntax_error(call, gradients.refusal(kind))
        primal, wrt, options, extras = self.gradient_of(call)
        made = maker(primal, wrt=wrt, **options)
        called = gradients.called_gradient(made)
        if called is None:
            raise self.src.syntax_error(call, gradients.refusal(gradients.made_by(made)))
        standing, bound = called
        if extras and id(call) not in self.at_once:
            names = ", ".join(k.arg for k in extras)
            raise self.src.syntax_error(call, (
                f"{kind}() of a nested function or lambda that reads {names} of the "
                "enclosing function is made here and stored; s2sad differentiates it where "
                f"it is called at once ({kind}(g)(...), when the closure reads {names}). "
                "Call it where it is made, or define the function at module level and pass "
                f"{names} as arguments"))
        name = self.name_of(standing, call)
        if not (bound or extras):
            return name
        partial = syntax.located(syntax.name(self.ctx.bind("partial", obj=functools.partial)),
                                 call)
        marks.PRIM.put(partial, functools.partial)
        made = syntax.located(syntax.call(
            partial, [name] + [self.name_of(b, call) for b in bound], extras), call)
        marks.GRADIENT_MADE.put(made, True)
        return made

    def gradient_of(self, call):
        """(primal, wrt, options, keywords bound to the primal) of `grad(f, wrt, ...)`."""
        given = dict(zip(("f", "wrt"), call.args))
        for k in call.keywords:
            if k.arg is None or k.arg in given:
                raise self.refused(call)
            given[k.arg] = k.value
        if len(call.args) > 2 or "f" not in given or any(
                k not in ("f", "wrt") + _OPTIONS for k in given) or any(
                _constant(v) is MISSING for k, v in given.items() if k != "f"):
            raise self.refused(call)
        wrt = _constant(given["wrt"]) if "wrt" in given else 0
        options = {k: _constant(given[k]) for k in _OPTIONS if k in given}
        f, extras = given["f"], []
        if (isinstance(f, gast.Call) and self.src.resolve(f.func) is functools.partial
                and len(f.args) == 1 and isinstance(self.lifted(f.args[0]), Lifted)):
            f, extras = f.args[0], [syntax.copied(k) for k in f.keywords]
        primal = self.src.resolve(f)
        if primal is MISSING:
            raise self.refused(call, f)
        inner = gradients.called_gradient(primal) if gradients.made_by(primal) else None
        if inner is not None and not inner[1]:      # grad(df), df = grad(g): of its code
            primal = inner[0]
        lifted = self.lifted(f)
        if isinstance(lifted, Lifted):      # a nested function or lambda
            wrt = self.own_wrt(call, wrt, primal, lifted.params)
        return primal, wrt, options, extras

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
        primal = standing.s2s_gradient[0]
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
            "grad(...) called inside a differentiated function must take a function "
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
