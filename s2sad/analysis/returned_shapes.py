"""What a function of the user's returns, in shape patterns: the pattern of the array it
returns, or those of the items of the tuple it returns, as a function of the patterns of
the arrays it is passed (and of the arrays in the tuples it is passed).

The shape analysis (analysis/shapes.py) of a caller that knows the patterns of a call's
arguments reads the callee's summary for them: its Wengert form (made by the driver's
front end, `ctx.front_end`) analysed with those patterns. `y = axpy(state, h, d)`, whose
`axpy` returns `state[0] + h * d[0], state[1] + h * d[1]`, gives `y`'s items the patterns
of `state`'s, so that the adjoints of what the caller computes from them need no sum back
to a shape at run time. A callee bound in several places (a result on each path) returns
the pattern all its bindings have, else an unknown one; the number it is passed that the
caller knows an int (`0`, `2 * i + 1`) is an `int` to it (`ints_known`), so that an index
by it removes an axis. A function calling itself returns a guessed pattern, checked
(see `_found_by_guess`). The caller's derivative relies on the code the summary was
found from: its guards are the caller's too (`ctx.assume`).

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

A node of a tree is a row of `leaves`, or the sum or product of two nodes: the guess that
a call of itself returns a row holds on every path.

>>> def node(ops, leaves, i):
...     if ops[i] == 0:
...         return leaves[i]
...     a = node(ops, leaves, 2 * i + 1)
...     b = node(ops, leaves, 2 * i + 2)
...     if ops[i] == 1:
...         return a + b
...     return a * b
>>> def tree(leaves, ops):
...     t = node(ops, leaves, 0)
...     return t
>>> ctx, _ = pipeline.compilation(tree, arg_types={"leaves": np.ndarray, "ops": list},
...     options=Options(patterns={"leaves": ("<f8", (0, 0))}), until="wengert")
>>> ctx.shapes.pattern_of("t")
(0,)
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

#: {function: {key: (patterns found, the guards of what they were found from, checker)}};
#: `_pending`: {(id(function), key): [the guess for a call of itself, whether one was
#: met]} of the summaries being found, in the order they began; `_provisional`, those
#: among them found from another's guess (see `_found_by_guess`)
_found = weakref.WeakKeyDictionary()
_pending = {}
_provisional = set()
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
    arg_types = ints_known(operations.argument_types(op.prim, op.args, ctx.value_kinds),
                           params, op.args, ctx.value_kinds)
    key = (tuple(sorted(arg_types.items(), key=lambda kv: kv[0])),
           tuple(sorted(patterns.items())), registry.version)
    try:
        known = _found.get(fn, {}).get(key)
    except TypeError:       # (a value of the structure that cannot be hashed)
        return None
    if known is not None and known[2]():
        ctx.assume(known[1])
        return known[0]
    pending = (id(fn), key)
    if pending in _pending:         # a call of itself: the guess (see `_found_by_guess`)
        below = list(_pending)[list(_pending).index(pending) + 1:]
        _provisional.update(below)  # (found given the guess: not kept)
        _pending[pending][1] = True
        return _pending[pending][0]
    if any(p[0] == id(fn) for p in _pending):
        return None     # (a call of itself on other patterns: they might never repeat)
    out, relied = _found_by_guess(fn, arg_types, patterns, ctx, pending)
    relied = guards.unique(relied)
    if pending not in _provisional:
        _found.setdefault(fn, {})[key] = (out, relied, guards.checker(relied))
    _provisional.discard(pending)
    ctx.assume(relied)
    return out


def _found_by_guess(fn, arg_types, patterns, ctx, pending):
    """(what `returned_patterns` finds, the guards of what it was found from). A function
    that calls itself with its own arguments' patterns is found with those calls
    unknown; if the array it returns then has one pattern wherever known, that is
    guessed to be what the calls of itself return, and the guess holds if the function
    then returns an array of that pattern wherever it returns (by induction on the
    depth of the calls: the deepest returns without calling itself), else the pattern
    is unknown. What is found from a guess is kept only once the guess holds."""
    guess = None
    relied = []
    for _ in range(2):
        _pending[pending] = [guess, False]
        try:
            out, more, known = _analysed(fn, arg_types, patterns, ctx)
        finally:
            called_itself = _pending.pop(pending)[1]
        relied += more
        if guess is not None:
            return (out if out == guess else None), relied
        if not called_itself or out is not None or known is None:
            return out, relied
        guess = known
    return None, relied


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


def ints_known(arg_types, params, call_args, kinds):
    """`arg_types` in which a number parameter `params` binds to an atom of `call_args`
    that `kinds` know an int (`0`, `2 * i + 1` of an int `i`) is specialised on `int`,
    so that the callee's shape analysis knows an index by it removes an axis."""
    out = dict(arg_types)
    for p, a in zip(params, call_args):
        if out.get(p) == SCALAR and kinds.is_int(a) is True:
            out[p] = int
    return out


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
    """(what `returned_patterns` finds, the guards of what it was found from, the pattern
    of the array it returns where known, if one: see `Shapes.bound_patterns`)."""
    try:
        inner, node = ctx.front_end(fn, arg_types)
    except S2SADError:
        return None, guards.of_function(fn), None
    plain, items = split(patterns)
    shapes = Shapes(node, inner.ops, inner.value_kinds, plain, items,
                    returns=lambda op, pats: returned_patterns(op, pats, inner))
    relied = list(inner.guards) + list(inner.assumed)
    out = node.body[-1]     # (Wengert form returns once, at the end)
    if not (isinstance(out, gast.Return) and isinstance(out.value, gast.Name)):
        return None, relied, None
    name = out.value.id
    if name in shapes.items:
        return [shapes.class_pattern(k) for k in shapes.items[name]], relied, None
    if inner.value_kinds.kind.get(name) in (SCALAR, CONTAINER):
        return None, relied, None
    found = shapes.bound_patterns(name)
    known = {p for p in found if p is not None}
    one = known.pop() if len(known) == 1 else None
    return (one if None not in found else None), relied, one


def split(patterns):
    """({parameter: pattern} of the arrays, {parameter: item patterns} of the tuples) of
    the `patterns` a derivative is specialised on (see `given_patterns`)."""
    plain = {p: v for p, v in (patterns or {}).items() if not p.endswith("[:]")}
    items = {p[:-3]: v for p, v in (patterns or {}).items() if p.endswith("[:]")}
    return plain, items
