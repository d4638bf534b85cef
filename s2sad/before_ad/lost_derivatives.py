"""Lost derivatives: refuse, before differentiating, the code through which a
differentiated value would lose its derivative without a word.

Takes the function in Wengert form and changes nothing. Activity analysis follows a
value through the operations that have a derivative rule, parameter by parameter; what
it cannot see would come out as a zero gradient. So, where a value that depends on the
differentiated inputs (`ctx.varied`) meets one of these, compilation stops with a
located error that says what to write instead:

- a call that writes into an array it is given, which before_ad.write_calls did not
  make an element assignment: a keyword `out=` (with a ufunc's `where=`: `np.divide(a,
  b, out=y, where=b != 0)`), a NumPy function that writes into an argument (`np.put`,
  `np.place`, ...: its record's `writes`), a ufunc's `.at` (`np.maximum.at`), or an
  in-place method (`y.sort()`, `lst.extend(v)`, also through a view: `y[:2].sort()`,
  `h.T.fill(v)`): `UnsupportedSyntaxError`, since the write changes the array behind
  the names that hold it;
- a call, for what it does, of a Python function that gives one of its parameters to
  compiled code s2sad has no rule for and cannot read (`writes_through_compiled_code`),
  given differentiated values and an array of the function's they do not reach, or
  one of its parameters (SciPy's splines fill `out` with `_ppoly.evaluate` in a
  method): it may write into that array, unseen: `UnsupportedSyntaxError`;
- a call of a value that holds differentiated values and that `resolve_calls` could
  not resolve (a `functools.partial` assigned on two paths, an object built from them),
  and a differentiated value passed by keyword to a Python function it could not put
  in its place (a `custom_vjp`'s): `MissingRuleError`;
- a differentiated value passed for a parameter the rule gives no derivative for
  (`np.r_[x, x]`, an index of an object s2sad has no rule for; in forward mode, the
  forward rule, also one registered with `s2sad.defjvp` only, of a Python function too):
  `MissingRuleError`, unless the rule says the derivative is zero there
  (`registry.Variant.zero`: a shape, a dtype, a piecewise-constant choice);
- a call of a library function without a rule, its result unused, given a
  differentiated value and an array, container or object it may change (`setattr(obj,
  name, v)`, `operator.setitem(y, i, v)`): `MissingRuleError`;
- a differentiated value made text (`str(x)`, `repr(x)`, an f-string, `"%g" % x`) where
  the output depends on the text (`float(str(x))`): `MissingRuleError`; text only
  printed or compared loses nothing.

>>> from s2sad import UnsupportedSyntaxError
>>> try:
...     show("lost_derivatives", '''
... def f(x):
...     y = x * 2.0
...     y.sort()
...     return y[0]
... ''', arrays=True)
... except UnsupportedSyntaxError as exc:
...     print(exc.lineno, exc.reason)
4 y.sort() changes y in place, which s2sad cannot differentiate: the derivative would miss the change. Compute a new array instead: y = np.sort(y)
"""
import functools
import inspect

import gast
import numpy as np

from .. import marks, syntax
from ..analysis.names import as_written
from ..analysis import operations
from ..analysis.operations import CALL, CUSTOM, USER, call_arguments, classify
from ..analysis.value_kinds import ARRAY, CONTAINER, SCALAR
from ..errors import MissingRuleError
from ..frontend import source
from ..rules import registry
from .write_calls import out_argument

#: The builtins that make text of a value (`format`, `ascii`: no rule, refused anyway).
TEXT = (str, repr, format, ascii)

#: Methods that change their object in place (of arrays, lists and dicts), and what to
#: write instead.
MUTATING_METHODS = {
    "sort": "{x} = np.sort({x})", "fill": "np.full_like({x}, v)",
    "put": "an np.where or a new array", "partition": "{x} = np.partition({x}, k)",
    "resize": "{x} = np.resize({x}, shape)", "itemset": "{x}[i] = v",
    "setfield": "a new array", "byteswap": "a new array",
    "extend": "{x} = {x} + list(v)", "insert": "a new list", "pop": "a new list",
    "remove": "a new list", "reverse": "{x} = {x}[::-1]", "clear": "a new list",
    "update": "a new dict", "setdefault": "a new dict", "popitem": "a new dict",
    "__setitem__": "{x}[i] = v", "__iadd__": "{x} = {x} + v",
}


def changes_its_receiver(func):
    """Whether a call of `func` changes in place the value it is a method of, in a way
    Wengert form does not follow: `y.sort()`, `lst.extend(v)`, `acc.items.append(v)`
    (an append to a name, `lst.append(v)`, is followed: see before_ad/wengert.py)."""
    return isinstance(func, gast.Attribute) and (func.attr in MUTATING_METHODS or (
        func.attr == "append" and not isinstance(func.value, gast.Name)))


def run(fn, ctx):
    """The pass: check `fn`, leaving it as it is."""
    varied = ctx.varied
    if not varied:
        return fn
    functions = _function_values(fn)
    texts = []
    for s in syntax.statements(fn):     # (first: the values it leaves unseen look unused)
        if isinstance(s, gast.Expr):
            _refuse_opaque_writes(s, ctx, varied)
    for s in syntax.statements(fn):
        if isinstance(s, gast.Assign) and _made_text(s, ctx, varied):
            texts.append(s)
        if isinstance(s, (gast.Assign, gast.Expr)):
            for call in (n for n in syntax.walk(s.value) if isinstance(n, gast.Call)):
                _refuse_writes(call, s, ctx, varied, fn)
        if isinstance(s, gast.Expr):
            _refuse_unknown_effects(s, ctx, varied, fn)
        if isinstance(s, (gast.Assign, gast.Expr)) and isinstance(s.value, gast.Call):
            _refuse_library_effects(s, ctx, varied, fn)
        if s in ctx.ops:
            _refuse_functions_to_library(ctx.ops[s], s, ctx, varied, functions)
            _refuse_unruled_arguments(ctx.ops[s], s, ctx, varied, fn)
            _refuse_keywords_to_python(ctx.ops[s], s, ctx, varied)
    if texts:
        _refuse_text(texts, ctx, varied)
    return fn


def _made_text(s, ctx, varied):
    """Whether assignment `s` makes text of a varied value."""
    v = s.value
    if not (isinstance(v, gast.JoinedStr)
            or (isinstance(v, gast.Call) and any(ctx.resolve(v.func) is f for f in TEXT))
            or (isinstance(v, gast.BinOp) and isinstance(v.op, gast.Mod)
                and isinstance(v.left, gast.Constant) and isinstance(v.left.value, str))):
        return False
    return any(n.id in varied for n in syntax.name_nodes(v))


def _refuse_text(texts, ctx, varied):
    """Refuse text made of a varied value (`_made_text`) that the output depends on: its
    derivative would be lost in the text."""
    useful = ctx.useful
    for s in texts:
        if s.targets[0].id in useful:
            lost = sorted(n.id for n in syntax.name_nodes(s.value) if n.id in varied)
            raise MissingRuleError(
                f"{ctx.src.where(s)}: {lost[0]} depends on the differentiated inputs and is "
                "made text here, and what the function returns is computed from that text; "
                "s2sad cannot differentiate through text, so the gradient would lose it. "
                f"Compute with the number itself (round({lost[0]}, 3) to round it), or write "
                f"s2sad.stop_gradient({lost[0]}) if no derivative should flow there"
                f"\n    {ctx.src.line_text(s).strip()}")


def _refuse_writes(call, s, ctx, varied, fn):
    """Refuse `call` if it writes into an array and touches a varied value, or if what
    it calls is itself a varied value (a partial or an object holding one)."""
    if not varied & set(syntax.names_loaded(call)):
        return
    func, src = call.func, ctx.src
    if isinstance(func, gast.Name) and func.id in varied:
        raise MissingRuleError(
            f"{src.where(s)}: {as_written(func, fn, src)} holds values that depend on the "
            "differentiated "
            "inputs, and s2sad cannot tell which function calling it runs: it knows a "
            "function value made the same way on every path (a function, a method of an "
            "object whose class it knows, a nested function or lambda, or a "
            "functools.partial of these binding the same parameters). Make it the same "
            "way on every path, or call the function it wraps directly, with those values "
            f"as arguments\n    {src.line_text(s).strip()}")
    spelled = syntax.unparse(func)
    out = out_argument(call, ctx.resolve(func))
    if out is not None:
        target = syntax.unparse(out)
        raise src.syntax_error(s, (
            f"{spelled}(..., out={target}) writes its result into {target}, which s2sad "
            f"cannot differentiate: the derivative would miss the write. Assign the result "
            f"instead: {target} = {spelled}(...) without out="))
    record = registry.primitive(ctx.resolve(func))
    if record is not None and record.writes is not None and len(call.args) > record.writes:
        target = syntax.unparse(call.args[record.writes])
        raise src.syntax_error(s, (
            f"{spelled}() writes into {target} in place, which s2sad cannot "
            "differentiate: the derivative would miss the write. Build the new array "
            f"instead (for example with np.where, or {target} = <new value>)"))
    if isinstance(func, gast.Attribute) and func.attr == "at" and isinstance(
            ctx.resolve(func.value), np.ufunc):
        raise src.syntax_error(s, (
            f"{spelled}() changes its first argument in place, which s2sad "
            "differentiates only for np.add.at, np.subtract.at and np.multiply.at into a "
            "local name. "
            "Build the new array instead (np.bincount, np.where, or an explicit loop "
            "that assigns elements)"))
    if not changes_its_receiver(func):
        return
    root = syntax.receiver_root(func.value)
    if root is None and isinstance(func.value, gast.Call):
        # `vars(obj).update(w=v)`, `obj.__dict__.update(...)`: what the call returns may be
        # memory of what it is given (vars(obj) is obj's attributes)
        x = as_written(func.value, fn, src)
        raise src.syntax_error(s, (
            f"{x}.{func.attr}() changes in place what {x} returns, which may be memory of "
            "what it is given (vars(obj) is the attributes of obj), and s2sad cannot "
            "follow that: the derivative would miss the change. Assign what changes "
            "instead (obj.name = v)"))
    if root is not None and ctx.src.is_local(root):
        x = syntax.unparse(func.value)
        if isinstance(func.value, gast.Attribute) and not hasattr(np.ndarray, func.value.attr):
            # `acc.items.append(v)`, `self.history.extend(vs)`: what an object holds
            # (not `h.T.fill(v)`, below)
            raise src.syntax_error(s, (
                f"{x}.{func.attr}() changes in place the value {root} holds as "
                f"{func.value.attr}, which s2sad cannot differentiate: it follows in-place "
                "changes only through local names. Build the value in a local variable "
                f"({func.value.attr} = [...]; {func.value.attr}.{func.attr}(v)) and read "
                "that, or return it"))
        if isinstance(func.value, gast.Name):
            instead = "Compute a new array instead: " + MUTATING_METHODS[func.attr].format(x=x)
            raise src.syntax_error(s, (
                f"{x}.{func.attr}() changes {x} in place, which s2sad cannot differentiate: "
                f"the derivative would miss the change. {instead}"))
        # `h.T.fill(v)`, `y[1:].sort()`, `a.view().fill(v)` write into h, y, a
        raise src.syntax_error(s, (
            f"{x}.{func.attr}() changes {root} in place (through {x}), which s2sad cannot "
            "differentiate: the derivative would miss the change. Compute the new values "
            f"and assign them instead ({root}[...] = <new values>, or {root} = <new array>)"))


def _refuse_unknown_effects(s, ctx, varied, fn):
    """Refuse `obj.m(...)` called for what it does (its result unused) on a value that
    depends on the differentiated inputs, where s2sad did not resolve `m` (a method of
    an object a list or another object holds: `objs[0].step(dt)`, `for o in objs:
    o.step(dt)`): what it changes in the object would be lost without a word."""
    call = s.value
    func = call.func if isinstance(call, gast.Call) else None
    if not (isinstance(func, gast.Attribute) and varied & set(syntax.names_loaded(func.value))):
        return
    if func.attr in registry.METHODS or func.attr in MUTATING_METHODS or func.attr == "append":
        return      # (NumPy's methods and the changes refused above)
    if ctx.resolve(func) not in (None, source.MISSING):
        return
    x = as_written(func.value, fn, ctx.src)
    raise ctx.src.syntax_error(s, (
        f"{x}.{func.attr}() is called for what it does (its result is not used), and s2sad "
        f"does not know what it changes in {x}, which depends on the differentiated "
        "inputs: a change the derivative cannot see would be lost. s2sad follows a method "
        "that changes its object where the object is bound to a name of its own (p = "
        f"make(...); p.{func.attr}(...)), not one a list or another object holds; or make "
        f"{func.attr}() return a new instance and put it back ({x} = "
        f"{x}.{func.attr}(...))"))


#: Libraries whose functions read what they are given and change none of it (logging a
#: differentiated array, plotting it, warning about it): not refused.
READ_ONLY = frozenset({"logging", "warnings", "pprint", "matplotlib", "seaborn"})


def _refuse_library_effects(s, ctx, varied, fn):
    """Refuse a call of a function of a library that has no rule (`setattr(obj, name,
    v)`, `operator.setitem(y, i, v)`, `vars(obj).update(w=v)`) where its result is not
    used and it is given a value that depends on the differentiated inputs, with an
    array, a container or an object it may change: what it changes there would be lost
    without a word (a used result needs a rule, and is refused where it has none). A call
    given only numbers and constants (`logging.debug("%s", y)`) changes none of the
    function's values."""
    call = s.value
    if isinstance(s, gast.Assign) and (len(s.targets) != 1 or not isinstance(
            s.targets[0], gast.Name) or s.targets[0].id in ctx.useful):
        return
    op = ctx.ops.get(s) or classify(call, ctx.src)
    if op.form != CALL or op.variant is not None or op.prim in (None, source.MISSING) or (
            registry.primitive(op.prim) is not None):
        return      # (an unresolved method: see _refuse_unknown_effects)
    module = getattr(op.prim, "__module__", None) or ""
    if module.split(".")[0] in READ_ONLY or module.startswith("numpy.testing"):
        return      # (logging, warnings, plotting: they read what they are given)
    args = list(call.args) + [k.value for k in call.keywords]
    if isinstance(call.func, gast.Attribute):
        args.insert(0, call.func.value)     # (a method: its object too)
    given = [a for a in args if varied & set(syntax.names_loaded(a))]
    if not given:
        return
    kinds = ctx.value_kinds
    if all(kinds[a] == SCALAR for a in args if a in given or isinstance(a, gast.Name)
           and ctx.src.is_local(a.id)):
        return
    spelled = syntax.unparse(call.func)
    lost = as_written(given[0], fn, ctx.src)
    raise MissingRuleError(
        f"{ctx.src.where(s)}: {spelled}() is given {lost}, which depends on the "
        "differentiated inputs, and s2sad has no rule for it: what it changes in the "
        "arrays, containers or objects it is given would be lost without a word. Write "
        "the change as Python s2sad follows (obj.name = v for setattr, y[i] = v for "
        f"operator.setitem, a new object instead of an update), or pass "
        f"s2sad.stop_gradient({lost}) if no derivative should flow there"
        f"\n    {ctx.src.line_text(s).strip()}")


def _refuse_opaque_writes(s, ctx, varied):
    """Refuse a call, for what it does (its result unused), of a Python function that gives
    a parameter to compiled code s2sad has no rule for and cannot read (a C or Cython
    function: SciPy's `_ppoly.evaluate(c, x, xs, 0, True, out)` in `PPoly._evaluate`; a
    direct call of one is `_refuse_library_effects`'s), given values that depend on the
    differentiated inputs and an array
    of the function's that they do not, which the result then depends on, or one of its
    parameters (its caller may read it): the call likely writes into that array, and
    the derivative would not see the write."""
    call = s.value
    if not isinstance(call, gast.Call) or not varied & set(syntax.names_loaded(call)):
        return
    obj = marks.PRIM.of(call.func) or ctx.resolve(call.func)
    func = call.func
    if obj in (None, source.MISSING) and isinstance(func, gast.Attribute) and isinstance(
            func.value, gast.Name) and isinstance(ctx.types.get(func.value.id), type):
        obj = getattr(ctx.types[func.value.id], func.attr, None)    # (`self._evaluate`)
    if obj in (None, source.MISSING, print) or registry.primitive(obj) is not None:
        return      # (a rule, or no derivative declared: s2sad.nondiff)
    python = operations.python_function(obj)
    if python is None or not writes_through_compiled_code(python[0]):
        return      # (a library's function called here: _refuse_library_effects)
    args = [*call.args, *(k.value for k in call.keywords)]
    params = {a.id for a in ctx.src.node.args.args + ctx.src.node.args.posonlyargs
              + ctx.src.node.args.kwonlyargs}
    kinds = ctx.value_kinds.kind
    buffers = sorted((a.id for a in args if isinstance(a, gast.Name) and a.id not in varied
                      and (a.id in params or ctx.src.is_local(a.id) and (
                          a.id in ctx.useful or kinds.get(a.id) in (ARRAY, CONTAINER)))),
                     key=lambda name: name in params)     # (the function's own first)
    if not buffers:
        return
    spelled = syntax.unparse(call.func)
    raise ctx.src.syntax_error(s, (
        f"{spelled}() is called for what it does (its result is not used) with values that "
        f"depend on the differentiated inputs and with {buffers[0]}, which the result (or "
        f"the caller) then reads: it may write into {buffers[0]}, and s2sad, which has no "
        f"rule for {spelled} (or for the compiled code it calls) and cannot read that code, "
        f"would miss that write. Give {spelled} a rule "
        "(a custom_vjp function that calls it, docs/rules.md), or compute the values with "
        "NumPy"))


def writes_through_compiled_code(fn, seen=()):
    """Whether the Python function `fn`, or one it calls, gives one of its parameters to
    compiled code s2sad cannot read, for what that does (`opaque_call_given`)."""
    if fn in seen:
        return False
    try:
        src = source.capture(fn, copy=False)
    except Exception:       # noqa: BLE001 - no source: nothing s2sad differentiates
        return False
    params = {a.id for a in src.node.args.args + src.node.args.posonlyargs
              + src.node.args.kwonlyargs}
    for node in syntax.walk(src.node):
        if opaque_call_given(node, src, params):
            return True
        if isinstance(node, gast.Expr) and isinstance(node.value, gast.Call):
            obj = src.resolve(node.value.func)
            python = None if obj is source.MISSING or registry.primitive(obj) is not None \
                else operations.python_function(obj)
            if python is None and isinstance(node.value.func, gast.Attribute) and isinstance(
                    node.value.func.value, gast.Name) and node.value.func.value.id == "self":
                method = getattr(_class_of_self(fn), node.value.func.attr, None)
                python = operations.python_function(method) if method else None
            if python is not None and writes_through_compiled_code(python[0], seen + (fn,)):
                return True
    return False


def _class_of_self(fn):
    """The class a method `fn` is defined in (from its qualified name), or None."""
    owner = getattr(inspect.getmodule(fn), fn.__qualname__.split(".")[0], None)
    return owner if isinstance(owner, type) else None


def opaque_call_given(node, src, params):
    """Whether `node` is a call, for what it does (its result unused), of compiled code
    s2sad has no rule for and cannot read (a C or Cython function: SciPy's
    `_ppoly.evaluate(c, x, xs, nu, ext, out)`), given one of `params`, the parameters of
    the function `src`: it may write into it."""
    if not (isinstance(node, gast.Expr) and isinstance(node.value, gast.Call)):
        return False
    call = node.value
    if not any(isinstance(a, gast.Name) and a.id in params
               for a in [*call.args, *(k.value for k in call.keywords)]):
        return False
    obj = src.resolve(call.func)
    return (obj is not source.MISSING and callable(obj) and registry.primitive(obj) is None
            and operations.python_function(obj) is None and obj is not print)


def _function_values(fn):
    """The names of `fn` that hold a nested function or lambda (lifted, passed on as
    `partial(lam, x=x)`, see before_ad/lift.py)."""
    out = set()
    for s in syntax.statements(fn):
        if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name):
            v = s.value
            if marks.LIFTED.of(v) or (
                    isinstance(v, gast.Call) and marks.PRIM.of(v.func)
                    is functools.partial and marks.LIFTED.of(v.args[0])):
                out.add(s.targets[0].id)
    return out


def _refuse_functions_to_library(op, s, ctx, varied, functions):
    """Refuse a nested function or lambda passed, with differentiated values, to code
    s2sad does not read (`map`, `sorted(key=...)`, a library's integrator)."""
    if (op.form != CALL or op.variant is not None or not isinstance(op.node, gast.Call)
            or op.prim is functools.partial):
        return
    atoms = [a for a in op.args if isinstance(a, gast.Name)]
    given = [a.id for a in atoms if a.id in functions or marks.LIFTED.of(a)]
    if given and any(a.id in varied for a in atoms):
        spelled = syntax.unparse(op.node.func)
        raise MissingRuleError(
            f"{ctx.src.where(s)}: {spelled}() is given a nested function or lambda and "
            "values that depend on the differentiated inputs; s2sad differentiates a "
            f"function passed to your own Python functions, but not what {spelled}() does "
            "with it. Call the function yourself, in a loop or a comprehension "
            f"([f(a, v) for v in xs]), or in a helper of your own"
            f"\n    {ctx.src.line_text(s).strip()}")


def _refuse_unruled_arguments(op, s, ctx, varied, fn):
    """Refuse a varied value passed for a parameter `op`'s rule has no derivative for:
    in forward mode, the rule forward mode calls (a rule registered for forward mode
    only, `s2sad.defjvp`, is one `op` does not hold)."""
    if op.form not in (CALL, USER):      # (a Python function may have a forward rule)
        return
    variant, bound, zero = op.variant, op.bound, set()
    if ctx.variant.forward and not source.is_generated(ctx.src) and isinstance(
            op.node, gast.Call):
        # (s2sad's own code, differentiated again, calls its helpers for the structure of
        # a value where their rules have no template: the derivative is zero there)
        record = registry.primitive(op.prim) if op.prim is not None else None
        if record is not None and record.jvp is not None:
            matched, matched_bound = record.jvp.match(*call_arguments(op, ctx.src))
            if matched is not None:
                # (a parameter the reverse rule says is zero there is zero in both modes)
                zero = set(variant.zero) if variant is not None else set()
                variant, bound = matched, matched_bound
    if variant is None or op.form == USER and variant is op.variant:
        return      # (a Python function without a forward rule: its source is read)
    linear = {p for group in (variant.linear or ()) for p in group}
    for param, arg in bound.items():
        if param in variant.templates or param in variant.zero or param in linear or (
                param in zero):
            continue
        if param == "index" and _local(op, ctx):
            continue    # an index of a local array is an int (a float fails at run time)
        lost = sorted(n.id for n in syntax.name_nodes(arg) if n.id in varied)
        if lost:
            where, line = ctx.src.where(s), ctx.src.line_text(s).strip()
            spelled, lost = _spelled(op), as_written(syntax.name(lost[0]), fn, ctx.src)
            rule = "s2sad.defjvp" if ctx.variant.forward else "s2sad.defvjp"
            raise MissingRuleError(
                f"{where}: {lost} depends on the differentiated inputs and is passed to "
                f"{spelled} as its parameter {param!r}, for which s2sad's rule has no "
                "derivative, so the gradient would lose it. Pass it where the rule "
                f"differentiates, rewrite the call, or register a rule with {rule}; "
                f"use s2sad.stop_gradient({lost}) if no derivative should flow there"
                f"\n    {line}")


def _local(op, ctx):
    """Whether `op` indexes a value of the function (not a module object like `np.r_`)."""
    base = op.node.value if isinstance(op.node, gast.Subscript) else op.bound.get("a")
    return isinstance(base, gast.Name) and ctx.src.is_local(base.id)


def _refuse_keywords_to_python(op, s, ctx, varied):
    """Refuse a varied value passed by keyword to a Python function differentiated
    through its source: its derivative is taken for positional arguments only."""
    if op.form not in (USER, CUSTOM) or not isinstance(op.node, gast.Call):
        return
    for k in op.node.keywords:
        lost = sorted(n.id for n in syntax.name_nodes(k.value) if n.id in varied)
        if lost:
            func = syntax.unparse(op.node.func)
            raise MissingRuleError(
                f"{ctx.src.where(s)}: {lost[0]} depends on the differentiated inputs and is "
                f"passed to {func}() by keyword ({k.arg}=...); s2sad differentiates the "
                f"arguments of Python functions passed by position only (yet): pass it by "
                f"position, in the order of {func}'s parameters"
                f"\n    {ctx.src.line_text(s).strip()}")


def _spelled(op):
    node = op.node
    if isinstance(node, gast.Call):
        return syntax.unparse(node.func) + "()"
    if isinstance(node, gast.Subscript):
        return f"indexing {syntax.unparse(node.value)}[...]"
    return syntax.unparse(node)
