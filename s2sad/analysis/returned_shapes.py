"""What a function of the user's returns, in shape patterns: the pattern of the array it
returns, or those of the items of the tuple it returns, as a function of the patterns of
the arrays it is passed (and of the arrays in the tuples it is passed).

The shape analysis (analysis/shapes.py) of a caller that knows the patterns of a call's
arguments reads the callee's summary for them: its Wengert form (made by the driver's
front end, `ctx.front_end`) analysed with those patterns. `y = axpy(state, h, d)`, whose
`axpy` returns `state[0] + h * d[0], state[1] + h * d[1]`, gives `y`'s items the patterns
of `state`'s, so that the adjoints of what the caller computes from them need no sum back
to a shape at run time. A pattern that depends on the path the callee takes, or on a call
of itself, is unknown. The caller's derivative relies on the code the summary was found
from: its guards are the caller's too (`ctx.assume`).

>>> import numpy as np
>>> from s2sad import pipeline
>>> from s2sad.options import Options
>>> def axpy(state, h, d):
...     return state[0] + h * d[0], state[1] + h * d[1]
>>> def f(x, v):
...     y = axpy((x, v), 0.5, (v, x))
...     a = y[0]
...     b = a * x
...     return b
>>> vector = ("<f8", (0,))
>>> ctx, _ = pipeline.compilation(f, arg_types={"x": np.ndarray, "v": np.ndarray},
...     options=Options(patterns={"x": vector, "v": vector}), until="wengert")
>>> ctx.shapes.pattern_of("a"), ctx.shapes.same("b", "a")
((0,), True)
"""
import inspect
import weakref

import gast

from ..errors import S2SADError
from ..frontend import guards
from ..rules import registry
from . import operations
from .shapes import Shapes
from .value_kinds import CONTAINER, SCALAR, items_key

#: {function: {key: (patterns found, the guards of what they were found from, checker)}}
_found = weakref.WeakKeyDictionary()
_pending = set()
_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def returned_patterns(op, arg_patterns, ctx):
    """The pattern of the array the call `op` (of a Python function of the user's, by
    position) returns, a list of patterns (None where unknown) for the items of a tuple
    it returns, or None when unknown, given `arg_patterns`, those of its arguments (see
    `Shapes.argument_pattern`)."""
    found = operations.python_function(op.prim)
    if (found is None or found[1] or found[2] or ctx.front_end is None
            or getattr(op.node, "keywords", None)):
        return None
    fn = found[0]
    params = positional(fn, len(op.args))
    if params is None:
        return None
    patterns = given_patterns(params, arg_patterns)
    if not patterns:
        return None
    arg_types = operations.argument_types(op.prim, op.args, ctx.value_kinds)
    key = (tuple(sorted(arg_types.items(), key=lambda kv: kv[0])),
           tuple(sorted(patterns.items())), registry.version)
    try:
        known = _found.get(fn, {}).get(key)
    except TypeError:       # (a value of the structure that cannot be hashed)
        return None
    if known is not None and known[2]():
        ctx.assume(known[1])
        return known[0]
    if (id(fn), key) in _pending:       # (a call of itself: unknown)
        return None
    _pending.add((id(fn), key))
    try:
        out, relied = _analysed(fn, arg_types, patterns, ctx)
    finally:
        _pending.discard((id(fn), key))
    relied = guards.unique(relied)
    _found.setdefault(fn, {})[key] = (out, relied, guards.checker(relied))
    ctx.assume(relied)
    return out


def positional(fn, nargs):
    """The parameters of `fn` that a call by position of `nargs` arguments binds, or None
    when it binds another (`*args`) or its signature is not known."""
    try:
        signature = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return None
    params = list(signature)[:nargs]
    if len(params) < nargs or any(signature[p].kind not in _POSITIONAL for p in params):
        return None
    return params


def given_patterns(params, arg_patterns):
    """The patterns a callee of parameters `params` is specialised on, from those of its
    arguments (`Shapes.argument_pattern`): {parameter: (None, pattern)} for an array,
    {parameter + "[:]": ((None, pattern) or None, ...)} for a tuple (no dtype: the
    caller does not know it)."""
    out = {}
    for p, pat in zip(params, arg_patterns):
        if pat is None:
            continue
        if pat and isinstance(pat[0], (tuple, type(None))):     # a tuple's items
            if any(item is not None for item in pat):
                out[items_key(p)] = tuple(None if item is None else (None, item)
                                          for item in pat)
        else:
            out[p] = (None, pat)
    return out


def _analysed(fn, arg_types, patterns, ctx):
    """(what `returned_patterns` finds, the guards of what it was found from)."""
    try:
        inner, node = ctx.front_end(fn, arg_types)
    except S2SADError:
        return None, guards.of_function(fn)
    plain, items = split(patterns)
    shapes = Shapes(node, inner.ops, inner.value_kinds, plain, items,
                    returns=lambda op, pats: returned_patterns(op, pats, inner))
    relied = list(inner.guards) + list(inner.assumed)
    out = node.body[-1]     # (Wengert form returns once, at the end)
    if not (isinstance(out, gast.Return) and isinstance(out.value, gast.Name)):
        return None, relied
    name = out.value.id
    if name in shapes.items:
        return [shapes.class_pattern(k) for k in shapes.items[name]], relied
    if inner.value_kinds.kind.get(name) in (SCALAR, CONTAINER):
        return None, relied
    return shapes.pattern_of(name), relied


def split(patterns):
    """({parameter: pattern} of the arrays, {parameter: item patterns} of the tuples) of
    the `patterns` a derivative is specialised on (see `given_patterns`)."""
    plain = {p: v for p, v in (patterns or {}).items() if not p.endswith("[:]")}
    items = {p[:-3]: v for p, v in (patterns or {}).items() if p.endswith("[:]")}
    return plain, items
