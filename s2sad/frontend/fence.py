"""The fence: reject what s2sad cannot differentiate, before any pass runs.

One message per construct, with the user's file, line, column and a caret, and a
suggestion. Whatever passes the fence is the language the passes are written for.
"""
import gast

from .. import syntax

REJECTED = {
    gast.Try: "try/except cannot be differentiated; move the error handling outside the "
              "differentiated function",
    gast.With: "'with' blocks are not supported; move the context manager outside the "
               "differentiated function",
    gast.AsyncWith: "'async with' is not supported",
    gast.AsyncFor: "'async for' is not supported",
    gast.AsyncFunctionDef: "async functions are not supported",
    gast.Await: "'await' is not supported",
    gast.Yield: "generators ('yield') are not supported; return a value instead",
    gast.YieldFrom: "generators ('yield from') are not supported; return a value instead",
    gast.ClassDef: "class definitions inside a differentiated function are not supported; "
                   "define the class at module level",
    gast.SetComp: "set comprehensions are not supported",
    gast.DictComp: "dict comprehensions are not supported yet (nor are dict displays); "
                   "keep the values in a list or tuple, or pass the dict as an argument",
    gast.Global: "'global' is not supported: a differentiated function must not rebind "
                 "module variables; return the value instead",
    gast.Nonlocal: "'nonlocal' is not supported: return the value instead",
    gast.Delete: "'del' is not supported; drop the statement",
    gast.Import: "imports inside a differentiated function are not supported; import at "
                 "module level",
    gast.ImportFrom: "imports inside a differentiated function are not supported; import "
                     "at module level",
    gast.NamedExpr: "assignment expressions (:=) are not supported; assign on its own line",
    gast.Starred: "star-arguments (*args) are not supported; pass the values one by one",
    gast.Set: "set displays are not supported",
    gast.Dict: "dict displays are not supported yet",
}
if hasattr(gast, "Match"):
    REJECTED[gast.Match] = "'match' statements are not supported; use if/elif/else"


def check(src):
    """Raise `UnsupportedSyntaxError` at the first construct outside the subset."""
    fn = src.node
    args = fn.args
    if args.vararg or args.kwarg:
        raise src.syntax_error(fn, f"{fn.name}() takes *args or **kwargs, which s2sad does "
                                   "not support; list the parameters explicitly")
    for stmt in fn.body:
        for node in syntax.walk(stmt):
            message = _problem(node) or _outside_change(node, src)
            if message:     # a comprehension's `for` has no place of its own: its target
                where = node.target if isinstance(node, gast.comprehension) else node
                raise src.syntax_error(where, message)


def _problem(node):
    for kind, message in REJECTED.items():
        if isinstance(node, kind):
            return message
    if isinstance(node, (gast.Assign, gast.AugAssign, gast.AnnAssign)):
        targets = node.targets if isinstance(node, gast.Assign) else [node.target]
        for target in targets:
            if isinstance(target, gast.Subscript) and isinstance(target.value, gast.Name):
                continue
            for t in _flat_targets(target):
                if isinstance(t, gast.Subscript):
                    return ("this assignment to an element is not supported; write one "
                            "element assignment a[i] = v per line, on a variable")
                if isinstance(t, gast.Attribute):
                    return ("assignment to an attribute (obj.x = ...) is not supported; "
                            "keep the value in a local variable")
                if not isinstance(t, gast.Name):
                    return "this assignment target is not supported"
        if isinstance(node, gast.AnnAssign) and node.value is None:
            return "an annotation without a value is not supported; assign a value"
    if isinstance(node, (gast.For, gast.comprehension)) and not all(
            isinstance(t, gast.Name) for t in _flat_targets(node.target)):
        return ("this for target is not supported; unpack into names (for i, (a, b) in "
                "...), without * or elements")
    if isinstance(node, gast.For):
        loop_vars = {t.id for t in _flat_targets(node.target)}
        again = next((n.id for s in node.body for n in syntax.name_nodes(s)
                      if n.id in loop_vars and isinstance(n.ctx, gast.Store)), None)
        if again is not None:
            return (f"the loop variable {again!r} is assigned inside its loop; use "
                    "another name for the new value")
    if isinstance(node, gast.Call):
        if any(k.arg is None for k in node.keywords):
            return "**kwargs in a call is not supported; pass keyword arguments by name"
    if isinstance(node, gast.Expr) and not isinstance(
            node.value, (gast.Call, gast.Constant, gast.Yield, gast.YieldFrom, gast.Await)):
        return "an expression statement that is not a call has no effect; remove it"
    return None


def _outside_change(node, src):
    """A message if `node` changes in place an object the function does not own a name
    for (`total.append(x)` or `cache[k] = v` on a module variable): gradient code runs
    on copies and never changes what is outside the function."""
    if isinstance(node, (gast.Assign, gast.AugAssign)):
        target = node.targets[0] if isinstance(node, gast.Assign) else node.target
        how = "assigns to an element of"
    elif (isinstance(node, gast.Expr) and isinstance(node.value, gast.Call)
          and isinstance(node.value.func, gast.Attribute) and node.value.func.attr == "append"):
        target = node.value.func
        how = "appends to"
    else:
        return None
    if not (isinstance(target, (gast.Subscript, gast.Attribute))
            and isinstance(target.value, gast.Name)) or target.value.id in src.local_names:
        return None
    name = target.value.id
    return (f"{src.name}() {how} {name!r}, which is not one of its variables: a "
            "differentiated function must not change objects outside it; work on a local "
            f"copy (mine = list({name}), or {name}.copy() for an array) and return what is "
            "needed")


def _flat_targets(target):
    if isinstance(target, (gast.Tuple, gast.List)):
        for elt in target.elts:
            yield from _flat_targets(elt)
    else:
        yield target
