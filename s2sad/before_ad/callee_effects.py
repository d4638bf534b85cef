"""What a called Python function does with the memory of its arguments: which of them
its result may share memory with (a view of an argument, an element of one, a new list
holding one; or new memory of its own), and which it writes into (`def scale(a): a *=
2.0`). before_ad/aliasing.py reads these `Summary`s at each call, in both modes, as it
reads a primitive's record for what its result is a view of; and which argument a call
of a primitive or method changes in place as it runs (`changed_in_place`: `y.sort()`).

A summary is found by the aliasing pass's own data flow over the function's Wengert
form, which the driver's front end makes (`ctx.front_end`); where that form cannot be
made (unsupported syntax, library code), from its source (`_scanned`): the result may
share memory with any argument, and the parameters it changes in place without
rebinding them are written.

>>> import numpy as np
>>> from s2sad import pipeline
>>> from s2sad.before_ad import aliasing
>>> from s2sad.frontend.source import function_from_source
>>> scale = function_from_source('''
... def scale(a):
...     b = a[1:]
...     b *= 3.0
...     return b
... ''', {"np": np})
>>> ctx, _ = pipeline.compilation(scale, (), {"a": "array"}, until="resolve_calls",
...                               passes=pipeline.FRONT)
>>> found = aliasing.summary(scale, {"a": "array"}, ctx)
>>> sorted(found.returns), [(w.param, w.text) for w in found.writes]
([], [('a', 'b *= 3.0')])
"""
import dataclasses
import inspect
import operator
import weakref

import gast
import numpy as np

from .. import marks, syntax
from ..analysis import operations
from ..analysis.value_kinds import ARRAY, CONTAINER, SCALAR, UNKNOWN
from ..compilation import arg_types_key
from ..errors import S2SADError
from ..frontend import guards, source
from ..frontend.structure import user_class
from ..rules import registry, runtime
from .lost_derivatives import MUTATING_METHODS, changes_its_receiver, opaque_call_given
from .write_calls import out_argument
from .resolve_calls import Version

#: Python functions whose result holds no memory of their arguments.
FRESH = (len, int, float, bool, complex, str, repr, isinstance, type, id, hash, range,
         print, round, abs, sum, divmod, pow, runtime.snapshot)

#: Python functions that make a new list or tuple of what their argument holds.
REGROUPING = (list, tuple, sorted)

#: Methods no record describes whose result is new memory.
FRESH_METHODS = {"tolist"}


@dataclasses.dataclass(frozen=True)
class Written:
    """A write into an argument, in a called function: the term of the memory written
    (see `Summary`), the parameter it is reached from, where and what the write is, and
    whether it writes only where the argument is an array (`a += v` of a parameter of
    unknown kind, which rebinds a number), and whether it assigns an attribute or an
    element (`obj.x = v`, `a[i] = v`: a new version of the object or array in Wengert
    form, which a version of the function can return, before_ad/attribute_writes.py)."""
    term: tuple
    param: str
    where: str
    text: str
    array_only: bool = False
    rebinds: bool = False


@dataclasses.dataclass(frozen=True)
class Summary:
    """What a Python function does with the memory of its arguments, in terms of its
    parameters: ("arg", p) is the memory of parameter p, ("in", t) of an element of
    t, ("holds", terms) a new list or tuple holding those. `returns`: the terms its
    result may share memory with (none: new memory); `writes`: the `Written` into them;
    `kind`: the kind of its result, where certain (value_kinds's ARRAY, ...), or None;
    `items`: the kinds of the items of the tuple it returns, where known (see
    ValueKinds.items), or False."""
    name: str
    returns: frozenset = frozenset()
    writes: tuple = ()
    kind: str = None
    items: tuple | bool = False

    def writing(self, w, memory=None):
        """The write `w`, for an error: `scale() writes into its argument 'a' in place
        (file:line: a *= 2.0)`, and with `memory` (the caller's name), `, the memory of y`."""
        of = f", the memory of {memory}" if memory else ""
        return (f"{self.name}() writes into its argument {w.param!r} in place ({w.where}: "
                f"{w.text}){of}")

    def instead(self, memory, obj=None):
        """What to write instead of the call, for an error (`obj`: `memory` is an
        instance of the user's class, the parameter `obj.param` of the write `obj`)."""
        call = (f"{memory}.{self.name}(...)" if obj is not None and obj.param == "self"
                else f"{self.name}(...)")
        if self.writes and all(w.rebinds for w in self.writes):
            return (f"Call {call} in a statement of its own ({call}, or r = {call}), "
                    "where s2sad rebinds what it changes")
        if obj is not None:
            call = (f"{memory}.{self.name}(...)" if obj.param == "self" else
                    f"{self.name}({memory}, ...)")
            return (f"Make {self.name}() return a new instance instead of changing the "
                    f"attributes of {obj.param!r}, and rebind it ({memory} = {call})")
        return (f"Pass {self.name}() a copy ({memory}.copy()), or make it return the new "
                f"value and use what it returns ({memory} = {self.name}(...))")


#: Python's functions that change their first argument (`setattr(obj, name, v)` by a
#: name not written in the call, `operator.setitem(y, i, v)`, `operator.iadd(y, v)`).
CHANGING_THEIR_FIRST = (setattr, delattr, object.__setattr__, object.__delattr__,
                        operator.setitem, operator.delitem, operator.iadd, operator.isub,
                        operator.imul, operator.itruediv, operator.ifloordiv,
                        operator.ipow, operator.imatmul, operator.imod)


def changed_in_place(call, ctx):
    """The name whose memory `call` changes in place as it runs, or None: the receiver
    of an in-place method (`y.sort()`, `lst.extend(v)`, `t.fill(v)` of a view `t`), the
    array of `out=`, the argument a primitive's record `writes` into (`np.copyto`), the
    first argument of a ufunc's `.at`, or of one of `CHANGING_THEIR_FIRST`."""
    func = call.func
    prim = ctx.resolve(func)
    out = out_argument(call, prim)
    if isinstance(out, gast.Name):
        return out.id
    record = registry.primitive(prim)
    if _changes_its_first(prim) and call.args:
        written = call.args[0]
    elif isinstance(func, gast.Attribute) and func.attr == "at" and isinstance(
            ctx.resolve(func.value), np.ufunc):
        written = call.args[0] if call.args else None
    elif record is not None and record.writes is not None and len(call.args) > record.writes:
        written = call.args[record.writes]
    elif (changes_its_receiver(func) and prim is None
          and registry.METHODS.get(func.attr) is None):
        return syntax.receiver_root(func.value)     # also `a[:2].sort()`, `h.T.fill(v)`
    else:
        written = None
    return written.id if isinstance(written, gast.Name) else None


def _writes_into_an_argument(call, obj):
    """Whether `call`, of `obj` (None if unknown), writes into an array it is given: a
    NumPy call's `out` (by keyword or position), a primitive whose record `writes` into
    an argument (`np.copyto`, `np.put`), a ufunc's `.at`, one of `CHANGING_THEIR_FIRST`
    (`setattr`: see before_ad/write_calls.py)."""
    record = registry.primitive(obj)
    return _changes_its_first(obj) or out_argument(call, obj) is not None or (
        record is not None and record.writes is not None) or (
        isinstance(call.func, gast.Attribute) and call.func.attr == "at")


def _changes_its_first(obj):
    try:
        return any(obj is f for f in CHANGING_THEIR_FIRST)
    except TypeError:
        return False


def python_callee(call, ctx):
    """(function, the names of the parameters the call's arguments go to) if `call`
    calls a Python function s2sad reads (not a primitive, a custom_vjp, or a
    checkpointed loop's step, which changes its state on purpose), else None."""
    prim = marks.PRIM.of(call.func) or ctx.resolve(call.func)
    if (prim is None or registry.primitive(prim) is not None
            or getattr(prim, "s2s_custom", False)
            or hasattr(marks.RECORD.of(prim), "mutated")):
        return None
    python = operations.python_function(prim)
    if python is None:
        return None
    fn, bound, _ = python
    try:
        params = list(inspect.signature(fn).parameters)[len(bound):]
    except (TypeError, ValueError):
        return None
    return fn, params


def effects_callee(call, ctx):
    """`python_callee`, and for a call of an `s2sad.checkpoint`, its function's (which
    its forward pass runs as it is): whose effects on the memory of the call's arguments
    aliasing follows."""
    if checkpoint_call(call, ctx):
        primal = (marks.PRIM.of(call.func) or ctx.resolve(call.func)).primal
        try:
            return primal, list(inspect.signature(primal).parameters)
        except (TypeError, ValueError):
            return None
    return python_callee(call, ctx)


def checkpoint_call(call, ctx):
    """Whether `call` calls an `s2sad.checkpoint` (whose pullback computes its function
    again from copies of the arguments it writes into: the caller rebinds nothing)."""
    prim = marks.PRIM.of(call.func) or ctx.resolve(call.func)
    return getattr(prim, "s2s_checkpoint", False) and not isinstance(prim, type)


def returned_kind(call, kinds, ctx, summarise, fn=None, ndims=()):
    """(the value kind of what `call` returns, the kinds of its items or False; see
    ValueKinds): `call` is a call by position of a Python function s2sad reads, with
    arguments of the value kinds `kinds`; the kind its summary for them found
    (`summarise(fn, {parameter: kind}, ctx)`, see `summary`) where it is SCALAR, ARRAY or
    CONTAINER; else UNKNOWN (a kind that depends on the path, on a call of itself, or on
    a parameter the call passes by keyword or through `*args`). `fn`: the function of a
    method call `obj.m(a)` (found on `obj`'s class; `kinds` are those of `obj, a`);
    `ndims`: the arguments' numbers of axes (None where not known), which the summary
    is then specialised on."""
    callee = python_callee(call, ctx) if fn is None else (
        fn, list(inspect.signature(fn).parameters))
    if callee is None or call.keywords or any(isinstance(a, gast.Starred)
                                              for a in call.args):
        return UNKNOWN, False
    fn, params = callee
    signature = inspect.signature(fn).parameters
    positional = [p for p in params if signature[p].kind in (
        inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    if len(kinds) > len(positional):
        return UNKNOWN, False       # (`*args`)
    axes = {p: d for p, d in zip(positional, ndims) if d is not None}
    found = (summarise(fn, dict(zip(positional, kinds)), ctx, axes) if axes
             else summarise(fn, dict(zip(positional, kinds)), ctx))
    if found.kind not in (SCALAR, ARRAY, CONTAINER) and not (
            isinstance(found.kind, type) and user_class(found.kind)):
        return UNKNOWN, False       # (an instance of the user's class: `return Sim(...)`)
    return found.kind, found.items if found.kind == CONTAINER else False


#: {function: (whether its source may write into memory, the guards of what that was
#: found from, their checker)}, see `may_write`
_writing = weakref.WeakKeyDictionary()


def may_write(callee, ctx=None):
    """Whether the function of `callee` ((fn, params) or None) may write into memory, by
    its source: an element or attribute assignment, an augmented assignment, an
    in-place method, or a call of a Python function that may (a first look, before the
    data flow of `summary`). Kept while the guards of what it read hold (its code, the
    functions its calls resolve to, and theirs), which the compilation `ctx` relies on
    too."""
    if callee is None:
        return False
    found, relied = _may_write(callee[0], ())
    if ctx is not None:
        ctx.assume(relied)
    return found


def _may_write(fn, seen):
    """(whether `fn` may write into memory, the guards of what that was found from)."""
    known = _writing.get(fn)
    if known is not None and known[2]():
        return known[0], known[1]
    if fn in seen:          # (its own look finds what it writes)
        return False, []
    try:
        src = source.capture(fn, copy=False)
    except Exception:       # noqa: BLE001 - no source: nothing s2sad differentiates
        return False, []
    found, relied = False, []
    params = {a.id for a in src.node.args.args + src.node.args.posonlyargs
              + src.node.args.kwonlyargs}
    for node in syntax.walk(src.node):
        if mutated_name(node, None) is not None or opaque_call_given(node, src, params):
            found = True
            break
        if isinstance(node, gast.Call):
            obj = src.resolve(node.func)
            if _writes_into_an_argument(node, None if obj is source.MISSING else obj):
                found = True        # (np.copyto(dst, v), np.multiply(a, b, out=dst))
                break
            if obj is not source.MISSING and registry.primitive(obj) is None and (
                    operations.python_function(obj) is not None):
                inner, inner_relied = _may_write(operations.python_function(obj)[0],
                                                 seen + (fn,))
                relied += inner_relied
                if inner:
                    found = True
                    break
    relied = guards.unique(guards.of_function(fn) + source.guards_of(src) + relied)
    if not seen:            # (a look cut short at a call of a caller is not kept)
        _writing[fn] = (found, relied, guards.checker(relied))
    return found, relied


#: {function: {(arg_types, registry version): (Summary, the guards of what it was found
#: from, their checker)}}; `_pending`: the guesses for the summaries being found (a
#: function that calls itself)
_summaries = weakref.WeakKeyDictionary()
_pending = {}


def summary(fn, arg_types, ctx, analyse, ndims=None):
    """The `Summary` of the Python function `fn` called with arguments of `arg_types`
    ({parameter: kind}): `analyse(node, its ctx)` -> (returns, writes, kind) over its Wengert
    form (which the driver's front end makes: `ctx.front_end`), or, where that cannot
    be made, what its source says (`_scanned`). A function that calls itself is found
    from a guess that it writes and returns nothing, again until the guess is what it
    finds. The caller's derivative relies on what the summary was found from: its
    guards are the caller's too (`ctx.assume`). `ndims`: {parameter: number of axes} of
    array arguments its code is specialised on too, if given."""
    key = (arg_types_key(arg_types), tuple(sorted((ndims or {}).items())), registry.version)
    known = _summaries.get(fn, {}).get(key)
    if known is not None and known[2]():
        ctx.assume(known[1])
        return known[0]
    pending = (id(fn), key)
    if pending in _pending:
        _pending[pending][1] = True
        return _pending[pending][0]
    guess = Summary(_name(fn))
    relied = guards.of_function(fn)
    for _ in range(5):
        _pending[pending] = [guess, False]
        try:
            found, relied = _analysed(fn, arg_types, ctx, analyse, ndims)
        finally:
            used = _pending.pop(pending)[1]
        if found == guess or not used:
            break
        guess = found
    else:
        found = _scanned(fn, arg_types)
    relied = guards.unique(relied)
    _summaries.setdefault(fn, {})[key] = (found, relied, guards.checker(relied))
    ctx.assume(relied)
    return found


def _analysed(fn, arg_types, ctx, analyse, ndims=None):
    """(the Summary of `fn`, the guards of what it was found from)."""
    if ctx.front_end is None or source.is_library(fn):
        return _scanned(fn, arg_types), guards.of_function(fn)
    try:
        inner, node = (ctx.front_end(fn, arg_types, ndims) if ndims
                       else ctx.front_end(fn, arg_types))
    except S2SADError:
        return _scanned(fn, arg_types), guards.of_function(fn)
    returns, writes, kind = analyse(node, inner)
    out = node.body[-1]     # (Wengert form returns once, at the end)
    items = inner.value_kinds.items.get(out.value.id, False) if isinstance(
        getattr(out, "value", None), gast.Name) else False
    if items:
        items = tuple(k if k in (SCALAR, ARRAY, CONTAINER, None) or (
            isinstance(k, type) and user_class(k)) else UNKNOWN for k in items)
    return (Summary(_name(fn), frozenset(returns),
                    tuple(sorted(writes, key=lambda w: repr(w.term))), kind, items or False),
            inner.guards)


def _scanned(fn, arg_types):
    """What the source of `fn` says, where its data flow cannot be made: its result may
    share memory with any argument, and it writes into the parameters it changes in
    place (`a[i] = v`, `a.append(v)`, `a += v` of an array or a list) without rebinding
    them first."""
    name = _name(fn)
    try:
        src = source.capture(fn, copy=False)
        params = list(inspect.signature(fn).parameters)
    except Exception:       # noqa: BLE001 - no source: nothing is known
        return Summary(name)
    rebound = {t.id for n in syntax.walk(src.node) if isinstance(n, (gast.Assign, gast.For))
               for t in syntax.walk(n.targets[0] if isinstance(n, gast.Assign) else n.target)
               if isinstance(t, gast.Name) and isinstance(t.ctx, gast.Store)}
    arrays = {p for p in params if arg_types.get(p) in (ARRAY, CONTAINER)}
    writes = {}
    for node in syntax.walk(src.node):
        changed = mutated_name(node, arrays)
        if changed in params and changed not in rebound and changed not in writes:
            writes[changed] = Written(("arg", changed), changed, src.where(node),
                                      src.line_text(node).strip())
    return Summary(name, frozenset(("arg", p) for p in params), tuple(writes.values()))


def mutated_name(node, augmented):
    """The name `node` changes in place, if it does: `a[i] = v`, `a.x = v`, `a[i] += v`,
    `a.append(v)` and the other in-place methods, or `a += v` where `a` is in `augmented`
    (None: any name)."""
    targets = (node.targets if isinstance(node, gast.Assign) else
               [node.target] if isinstance(node, gast.AugAssign) else [])
    for t in targets:
        while isinstance(t, (gast.Subscript, gast.Attribute)):
            if isinstance(t.value, gast.Name):
                return t.value.id
            t = t.value
    if isinstance(node, gast.AugAssign) and isinstance(node.target, gast.Name) and (
            augmented is None or node.target.id in augmented):
        return node.target.id
    if (isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute)
            and (node.func.attr in MUTATING_METHODS or node.func.attr == "append")):
        return syntax.receiver_root(node.func.value)   # also `a[1:].sort()`, `a.T.fill(v)`
    return None


def params_in(term):
    """The parameters a term (see `Summary`) is reached from."""
    if term[0] == "arg":
        return [term[1]]
    if term[0] == "in":
        return params_in(term[1])
    return [p for t in sorted(term[1], key=repr) for p in params_in(t)]


def root(term):
    """The parameter a term of an argument's memory or of an element of it is reached
    from; None for a new list holding them."""
    while term[0] == "in":
        term = term[1]
    return term[1] if term[0] == "arg" else None


def _name(fn):
    return getattr(fn, "__name__", "the function")


class Returning(Version):
    """Where the version of a function that returns what it changes comes from (see
    before_ad/attribute_writes.py's `returning`): its `def` node, with line numbers in
    the user's file."""

    def __init__(self, node, src, original, written):
        super().__init__(node, src, ())
        self.original, self.written = original, written

    def describe(self):
        return (f"line {self.src.lineno(self.node)}, returning what it changes in "
                f"{', '.join(self.written)}")


def returns_its_writes(fn):
    """Whether `fn` is the version of a function that returns what it changes (see
    `Returning`)."""
    return isinstance(marks.RECORD.of(fn), Returning)
