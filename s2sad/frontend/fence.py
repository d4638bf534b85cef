"""The fence: reject what s2sad cannot differentiate, before any pass runs.

One message per construct, with the user's file, line, column and a caret, and a
suggestion. Whatever passes the fence is the language the passes are written for.
"""
import contextlib
import warnings

import gast
import numpy as np

from .. import syntax
from .source import MISSING

#: The context managers a `with` block may use: they change only how warnings and
#: floating-point errors are reported, never values (see after_ad/enclose.py).
CONTEXTS = {np.errstate: "np.errstate", warnings.catch_warnings: "warnings.catch_warnings",
            contextlib.nullcontext: "contextlib.nullcontext"}
#: The calls that set up a `warnings.catch_warnings()` block, replayed where its
#: derivative code runs.
WARNING_FILTERS = (warnings.simplefilter, warnings.filterwarnings, warnings.resetwarnings)

REJECTED = {
    gast.AsyncWith: "'async with' is not supported",
    gast.AsyncFor: "'async for' is not supported",
    gast.AsyncFunctionDef: "async functions are not supported",
    gast.Await: "'await' is not supported",
    gast.Yield: "generators ('yield') are not supported; return a value instead",
    gast.YieldFrom: "generators ('yield from') are not supported; return a value instead",
    gast.ClassDef: "class definitions inside a differentiated function are not supported; "
                   "define the class at module level",
    gast.SetComp: "set comprehensions are not supported",
    gast.Nonlocal: "'nonlocal' is not supported: return the value instead",
    gast.Import: "imports inside a differentiated function are not supported; import at "
                 "module level",
    gast.ImportFrom: "imports inside a differentiated function are not supported; import "
                     "at module level",
    gast.Set: "set displays are not supported",
}
if hasattr(gast, "TryStar"):
    REJECTED[gast.TryStar] = "'except*' is not supported; use except"
if hasattr(gast, "Match"):
    REJECTED[gast.Match] = "'match' statements are not supported; use if/elif/else"


def check(src):
    """Raise `UnsupportedSyntaxError` at the first construct outside the subset."""
    fn = src.node
    args = fn.args
    if args.vararg or args.kwarg:
        raise src.syntax_error(fn, f"{fn.name}() takes *args or **kwargs: s2sad compiles it "
                                   "for the arguments of a call (give them: --at in the "
                                   "command line), or list the parameters explicitly")
    declares = False
    for stmt in fn.body:
        for node in syntax.walk(stmt):
            if type(node) not in _CHECKED:
                continue
            message = _problem(node) or _outside_change(node, src) or _block(node, src)
            if message:     # a comprehension's `for` has no place of its own: its target
                where = node.target if isinstance(node, gast.comprehension) else node
                if isinstance(message, tuple):      # (a message about a statement inside)
                    message, where = message
                raise src.syntax_error(where, message)
            declares = declares or type(node) is gast.Global
    if declares:
        _check_globals(fn, src)


#: The node classes `_problem`, `_outside_change` or `_block` may refuse, and `global`:
#: the others are not looked at.
_CHECKED = frozenset(REJECTED) | {
    gast.Starred, gast.Assign, gast.AugAssign, gast.AnnAssign, gast.For, gast.comprehension,
    gast.Delete, gast.Call, gast.Expr, gast.With, gast.Try, gast.Global, gast.Dict}


def _problem(node):
    message = REJECTED.get(type(node))     # (node classes have no subclasses)
    if message:
        return message
    if isinstance(node, (gast.Assign, gast.AugAssign, gast.AnnAssign)):
        targets = node.targets if isinstance(node, gast.Assign) else [node.target]
        for target in targets:
            if _starred_twice(target):
                return "multiple starred expressions in one assignment target"
            if isinstance(target, gast.Starred):
                return "a starred assignment target must be in a list or tuple"
            if isinstance(target, gast.Subscript) and isinstance(target.value, gast.Name):
                continue
            if isinstance(target, gast.Attribute) and isinstance(
                    target.value, gast.Name) and len(targets) == 1:
                continue    # (`obj.x = v`: a new version of obj, before_ad.desugar)
            for t in _flat_targets(target):
                if isinstance(t, gast.Subscript) and isinstance(t.value, gast.Name) and (
                        isinstance(node, gast.Assign) and len(targets) == 1):
                    continue        # `a[i], a[j] = a[j], a[i]` (before_ad/star_forms.py)
                if isinstance(t, gast.Subscript):
                    return ("this assignment to an element is not supported; write one "
                            "element assignment a[i] = v per line, on a variable")
                if isinstance(t, gast.Attribute):
                    return ("this assignment to an attribute is not supported; write "
                            "one attribute assignment obj.x = v per line, on a variable")
                if not isinstance(t, gast.Name) and not (
                        isinstance(t, gast.Starred) and isinstance(t.value, gast.Name)):
                    return "this assignment target is not supported"
        if isinstance(node, gast.AnnAssign) and node.value is None:
            return "an annotation without a value is not supported; assign a value"
    if isinstance(node, (gast.For, gast.comprehension)) and not all(
            isinstance(t, gast.Name) for t in _flat_targets(node.target)):
        return ("this for target is not supported; unpack into names (for i, (a, b) in "
                "...), without * or elements")
    if isinstance(node, gast.For):
        return _loop_variable_bound(node)
    if isinstance(node, gast.Delete):
        return _deleted(node)
    if isinstance(node, gast.Dict) and any(k is None for k in node.keys):
        return ("** in a dict display is not supported; write the keys out "
                "({'a': d['a'], 'b': v}, not {**d, 'b': v})")
    if isinstance(node, gast.Starred) and isinstance(node.ctx, gast.Load):
        return None     # (before_ad.star_forms spells out those whose length it knows)
    if isinstance(node, gast.Expr) and not isinstance(
            node.value, (gast.Call, gast.Constant, gast.Yield, gast.YieldFrom, gast.Await)):
        return "an expression statement that is not a call has no effect; remove it"
    return None


def _loop_variable_bound(loop):
    """A message, and the statement it is about, if the body of `loop` binds its loop
    variable: `row += 1.0` (NumPy writes into the sequence where `row` is an array row)
    or `row = ...`."""
    loop_vars = {t.id for t in _flat_targets(loop.target)}
    seq = syntax.unparse(loop.iter)
    for stmt in (s for top in loop.body for s in syntax.walk(top)):
        if isinstance(stmt, gast.AugAssign) and isinstance(stmt.target, gast.Name) and (
                stmt.target.id in loop_vars):
            name = stmt.target.id
            op = syntax.unparse(gast.AugAssign(target=syntax.name("a", store=True),
                                               op=stmt.op, value=syntax.name("b")))
            op = op.split()[1]      # ('a *= b': '*=')
            return (f"{name} {op} ... changes the loop variable {name!r} in place: where "
                    f"{name} is a row of an array {seq}, NumPy writes the new values into "
                    f"{seq} itself, and s2sad follows in-place writes only through "
                    f"indexes (where it is a number, {op} only rebinds it). To change "
                    f"{seq}, loop over indexes (for i in range(len({seq})): {seq}[i] {op} "
                    f"...); to leave {seq} alone, give the new value another name "
                    f"({name}_new = {name} {op[:-1]} ...)", stmt)
        if isinstance(stmt, (gast.Assign, gast.AnnAssign, gast.For)):
            targets = stmt.targets if isinstance(stmt, gast.Assign) else [stmt.target]
            again = next((n.id for t in targets for n in syntax.name_nodes(t)
                          if n.id in loop_vars and isinstance(n.ctx, gast.Store)), None)
            if again is not None:
                return (f"the loop variable {again!r} is bound again in its loop; s2sad "
                        f"takes {again} for the item of {seq} throughout the body. Give the "
                        f"new value another name ({again}_new = ...) and read that after",
                        stmt)
    again = next((n.id for s in loop.body for n in syntax.name_nodes(s)
                  if n.id in loop_vars and isinstance(n.ctx, gast.Store)), None)
    if again is not None:       # (another binding: `:=`, ...)
        return (f"the loop variable {again!r} is bound again in its loop; s2sad takes "
                f"{again} for the item of {seq} throughout the body. Give the new value "
                f"another name ({again}_new = ...) and read that after")
    return None


def _block(node, src):
    """A message if `node` is a `with` or `try` s2sad cannot differentiate."""
    if isinstance(node, gast.With):
        for item in node.items:
            if item.optional_vars is not None:
                return ("'with ... as name' is not supported; use the context manager "
                        "without 'as', or move the with block outside the differentiated "
                        "function and call the function inside it")
            expr = item.context_expr
            manager = src.resolve(expr.func) if isinstance(expr, gast.Call) else MISSING
            if not any(manager is m for m in CONTEXTS):
                return ("'with' is supported for context managers that change only how "
                        "warnings and floating-point errors are reported ("
                        + ", ".join(CONTEXTS.values()) + "); this one could change values "
                        "or skip code, which the derivative would not follow. Move the "
                        "with block outside the differentiated function: call the "
                        "function inside it")
            local = _local_name(expr, src)
            if local:
                return (f"the arguments of a with block's context manager must not read "
                        f"the function's variables (here {local!r}): the derivative enters "
                        "the context again and cannot see them there; use constants")
    if isinstance(node, gast.Try):
        for handler in node.handlers:
            if handler.type is not None and _local_name(handler.type, src):
                return ("an except clause must name exception classes defined outside the "
                        "function (ValueError, np.linalg.LinAlgError)")
        if node.finalbody:
            jump = next((n for part in (node.body, node.orelse, node.finalbody)
                         for n in _jumps_out(part)), None)
            if jump is None:
                jump = next((n for h in node.handlers for n in _jumps_out(h.body)), None)
            if jump is not None:
                return ("a return, break or continue inside a try with a finally clause "
                        "is not supported; set a variable and jump after the try statement")
    return None


def _local_name(expr, src):
    return next((n.id for n in syntax.walk(expr)
                 if isinstance(n, gast.Name) and src.is_local(n.id)), None)


def _jumps_out(stmts):
    """The returns in `stmts`, and the breaks and continues not inside a loop of them."""
    todo = [(s, False) for s in stmts]
    while todo:
        n, in_loop = todo.pop()
        if isinstance(n, gast.Return) or (isinstance(n, (gast.Break, gast.Continue))
                                          and not in_loop):
            yield n
        if not isinstance(n, (gast.FunctionDef, gast.Lambda)):
            loop = in_loop or isinstance(n, (gast.For, gast.While))
            todo.extend((c, loop) for c in syntax.children(n))


def _deleted(node):
    for target in node.targets:
        if isinstance(target, gast.Subscript):
            return ("'del' of an element changes a list, dict or array in place, which "
                    "s2sad does not differentiate; build a new one without the element: "
                    "lst = [lst[j] for j in range(len(lst)) if j != i] for a list, "
                    "a = np.concatenate([a[:i], a[i + 1:]]) for an array")
        if not isinstance(target, gast.Name):
            return ("'del' of an attribute changes an object in place, which s2sad does "
                    "not differentiate; keep the value in a local variable instead")
    return None


def _check_globals(fn, src):
    """`global G` is allowed where the function only reads G (it reads module variables
    without the declaration too); assigning G would change the module behind the
    derivative's back."""
    for scope in [fn] + [n for n in syntax.walk(fn) if isinstance(n, gast.FunctionDef)
                         and n is not fn]:
        declared = list(_own(scope, gast.Global))
        if not declared:
            continue
        stored = {}
        for n in _own(scope, (gast.Name,)):
            if not isinstance(n.ctx, gast.Load):
                stored.setdefault(n.id, n)
        for decl in declared:
            for name in decl.names:
                if name in stored:
                    raise src.syntax_error(stored[name], (
                        f"{name!r} is declared global and assigned here: a differentiated "
                        "function must not rebind module variables (its derivative would "
                        f"not); return the new value and assign {name} = ... at the call "
                        "site"))


def _own(scope, kinds):
    """The nodes of `kinds` in `scope`'s own body, not in the functions nested in it."""
    todo = list(scope.body)
    while todo:
        n = todo.pop()
        if isinstance(n, kinds):
            yield n
        if not isinstance(n, (gast.FunctionDef, gast.Lambda)):
            todo.extend(syntax.children(n))


#: the methods that change a list, dict, set or array in place, and those objects
_MUTATORS = {"extend", "insert", "pop", "remove", "clear", "update", "sort", "reverse",
             "setdefault", "popitem", "add", "discard", "fill", "resize", "itemset", "put",
             "__setitem__", "__delitem__"}
_CONTAINERS = (list, dict, set, bytearray, np.ndarray)


def _outside_change(node, src):
    """A message if `node` changes in place an object the function does not own a name
    for (`total.append(x)` or `cache[k] = v` on a module variable): gradient code runs
    on copies and never changes what is outside the function."""
    call = node.value if isinstance(node, gast.Expr) else None
    if isinstance(node, (gast.Assign, gast.AugAssign)):
        target = node.targets[0] if isinstance(node, gast.Assign) else node.target
        how = "assigns to an element of"
    elif (isinstance(call, gast.Call) and isinstance(call.func, gast.Attribute)
          and call.func.attr == "append"):
        target = call.func
        how = "appends to"
    elif (isinstance(call, gast.Call) and isinstance(call.func, gast.Attribute)
          and call.func.attr in _MUTATORS and isinstance(call.func.value, gast.Name)
          and isinstance(src.free_values().get(call.func.value.id), _CONTAINERS)):
        target = call.func
        how = f"calls {call.func.attr}() of"
    elif (isinstance(call, gast.Call) and call.args and isinstance(call.args[0], gast.Name)
          and any(src.resolve(call.func) is f for f in (setattr, delattr))
          and not isinstance(src.free_values().get(call.args[0].id), (type(np), type))):
        target = syntax.attribute(call.args[0], "_")
        how = f"calls {src.resolve(call.func).__name__}() on"
    else:
        return None
    if not (isinstance(target, (gast.Subscript, gast.Attribute))
            and isinstance(target.value, gast.Name)) or target.value.id in src.local_names:
        return None
    name = target.value.id
    value = src.free_values().get(name)
    copy = (f"mine = dict({name})" if isinstance(value, dict) else
            f"mine = list({name})" if isinstance(value, list) else
            f"mine = {name}.copy()" if isinstance(value, (set, np.ndarray)) else
            f"mine = list({name}), or {name}.copy() for an array")
    instead = (f"work on a local copy ({copy}) and return what is needed"
               if value is None or isinstance(value, _CONTAINERS) else
               "keep the new value in a local variable, pass it to the functions that "
               "read it, and return what is needed")
    return (f"{src.name}() {how} {name!r}, which is not one of its variables: a "
            f"differentiated function must not change objects outside it; {instead}")


def _starred_twice(target):
    if not isinstance(target, (gast.Tuple, gast.List)):
        return False
    return sum(isinstance(e, gast.Starred) for e in target.elts) > 1 or any(
        _starred_twice(e) for e in target.elts)


def _flat_targets(target):
    if isinstance(target, (gast.Tuple, gast.List)):
        for elt in target.elts:
            yield from _flat_targets(elt)
    else:
        yield target
