"""Where a derivative of a derivative needs one of s2sad's own runtime helpers
differentiated, and s2sad cannot: the user's line that calls the primitive whose rule
uses the helper.

A rule's templates call runtime helpers (`_s2s_norm_dot`, the tangent of
`np.linalg.norm`). A derivative of higher order (`grad` of a function calling `jvp`, `jvp`
of a `jvp`, `grad(grad(grad(f)))`) differentiates the derivative code, and so the helpers
it calls: by their own rules, or by their source. Where a helper has neither, the error
raised inside s2sad names a line of s2sad's, which the user cannot change. The driver
follows the chain of functions whose derivatives it compiles (`located`): the last of the
user's functions on it, and in that function the call of the primitive whose rule calls
the first helper on the chain, are where the refusal is reported.
"""
from __future__ import annotations

import os
import re

import gast

from . import syntax
from .errors import MissingRuleError
from .frontend import source
from .options import Variant
from .rules import registry

_PACKAGE = os.path.dirname(os.path.abspath(__file__))


def is_own(fn):
    """Whether `fn` is code of s2sad's package (a runtime helper or what it calls)."""
    code = getattr(fn, "__code__", None)
    return code is not None and os.path.abspath(code.co_filename).startswith(_PACKAGE)


def _located_by_user(exc):
    """Whether the message of `exc` starts with a place in the user's code already."""
    place = re.match(r"(\S+):\d+(:\d+)?: ", str(exc))
    return place is not None and not place.group(1).startswith("<") and not (
        os.path.abspath(place.group(1)).startswith(_PACKAGE))


def _primal(fn):
    """The user's function that `fn` stands for: itself, or the primal of derivative code
    (a gradient or a jvp called in differentiated code, of a gradient...); None for
    s2sad's code."""
    while getattr(fn, "s2s_gradient", None) is not None:     # (jvp(grad(f)): f)
        fn = fn.s2s_gradient[0]
    code = getattr(fn, "__code__", None)
    if code is None or is_own(fn) or code.co_filename.startswith("<s2sad"):
        return None
    return fn


def _users_of(helper):
    """The primitives whose rules' templates call the runtime helper `helper`, or call a
    helper whose rules do (`prod_others_dot` is in `prod_others`' rule, in `np.prod`'s)."""
    todo, seen, found = [helper], {id(helper)}, []
    while todo:
        name = f"_s2s_{todo.pop().__name__}"
        for prim, record in list(registry.PRIMITIVES.items()):
            if id(prim) in seen or not any(name in text for text in _templates(record)):
                continue
            seen.add(id(prim))
            (todo if registry.helper_facts(prim) is not None else found).append(prim)
    return found


def _templates(record):
    for rule in (record.jvp, record.vjp):
        for variant in getattr(rule, "variants", None) or ():
            for template in [*variant.templates.values(), variant.uniform]:
                yield getattr(template, "source", "") or ""


def _call_of(fn, prims):
    """(`file:line: `, the line's text, the primitive called) of the first call in `fn`'s
    source of one of `prims`, or of any call (primitive None) if `prims` is empty; None if
    there is none."""
    try:
        src = source.capture(fn, copy=False)
    except Exception:       # noqa: BLE001 - no source: no line to name
        return None
    for n in syntax.walk(src.node):
        if isinstance(n, gast.Call):
            try:
                made = src.resolve(n.func)
            except Exception:       # noqa: BLE001 - not resolvable: not the call
                continue
            prim = next((p for p in prims if made is p), None)
            if prim is not None or not prims:
                return f"{src.where(n)}: ", src.line_text(n).strip(), prim


def _name(prim):
    module = (getattr(prim, "__module__", None) or "").replace("numpy", "np")
    return f"{module}.{getattr(prim, '__name__', prim)}".lstrip(".")


def located(path, variant, exc):
    """The located error for `exc`, raised where the driver compiled the derivative of
    the last function of `path` (the functions from the one differentiated, each calling
    the next), if that function is s2sad's own code; else None (the error stands)."""
    if not path or not is_own(path[-1]) or _located_by_user(exc):
        return None
    first = next(i for i, fn in enumerate(path) if is_own(fn))
    user = next((p for p in map(_primal, reversed(path[:first])) if p is not None), None)
    if user is None:
        return None
    helper = path[first]
    where, line, prim = _call_of(user, _users_of(helper)) or _call_of(user, ()) or (
        "", "", None)
    what = f"{_name(prim)}()" if prim is not None else "a call in this function"
    mode = "forward" if variant is Variant.JVP else "reverse"
    exc = exc.__cause__ or exc      # (the error met, under what the driver said of it)
    # (what failed, without the place in s2sad's code nor its advice)
    reason = re.sub(r"^\S+:\d+(:\d+)?: ", "", str(exc).splitlines()[0]).split("; ")[0]
    return MissingRuleError(
        f"{where}s2sad cannot differentiate {what} as many times as asked here: its "
        f"derivative calls s2sad's runtime helper {helper.__name__}(), which has no "
        f"{mode}-mode rule yet, and whose source {mode} mode cannot differentiate "
        f"({type(exc).__name__}: {reason}). For a second derivative, take a jvp or jacfwd "
        "of a gradient (s2sad.hessian, s2sad.hvp), which every rule has; or write the line "
        "with operations s2sad differentiates to any order; or give your function a rule "
        "of its own (s2sad.custom_jvp, s2sad.custom_vjp)" + (f"\n    {line}" if line else ""))
