"""Emit: gast to Python source with `ast.unparse`; compile with a real file name.

The generated function is built on a factory whose parameters bring in the runtime
helpers and the user's closure values, and runs with the user's module globals, live:
nothing is injected into user modules.
"""
import ast
import re
import linecache
import types

import gast

from . import marks
from . import syntax


def to_source(node):
    """Python source of a gast node, with comment and marker statements as comments."""
    written = {}
    text = ast.unparse(_Shown(written).converted(node))
    for key, tests in written.items():
        text = re.sub(rf"^( *)if {key}:$", lambda m: if_any(m.group(1), tests), text,
                      flags=re.M)
    # Python 3.10's unparser parenthesises tuple targets; later versions do not.
    text = _TUPLE_ASSIGN.sub(r"\1\2 = ", _TUPLE_FOR.sub(r"\1for \2 in ", text))
    return "\n".join(_comment_line(line) if syntax.COMMENT in line else line
                     for line in text.split("\n")) + "\n"


class _Shown:
    """The `ast` tree of a gast tree as it is emitted, made in one visit (what
    `gast.gast_to_ast` makes, less than a third of its time): markers as comments, a
    block of comments with a `pass`, negative numbers (not in lists) as negations, and
    a guard's tests as a name `written` maps to them, emitted as written (ast.unparse
    parenthesises the fourth and later comparisons of a long `or`). A node without a
    line takes its parent's, which is all `ast.unparse` reads of locations."""

    def __init__(self, written):
        self.written = written

    def converted(self, node, line=1):
        kind = type(node)
        made = _CONVERTED.get(kind)
        if made is None:
            made = _CONVERTED[kind] = _conversion(kind)
        cls, fields, located = made
        if not fields and not located:     # contexts and operators: one of each serves
            return cls
        values = node.__dict__
        if located:
            line = values.get("lineno", line)
        if kind is gast.Name:
            new = cls(id=node.id, ctx=_SHARED.get(type(node.ctx)) or self.converted(node.ctx))
        elif kind is gast.arguments:
            new = cls(**{f: self.arguments(values.get(f), f, line) for f in fields})
        else:
            new = cls(**{f: self.field(node, f, values[f], line)
                         for f in fields if f in values})
            if kind is gast.ExceptHandler and node.name is not None:
                new.name = node.name.id
        if located:
            for attribute in _LOCATION:
                if attribute in values:
                    setattr(new, attribute, values[attribute])
            new.lineno = line
        return new

    def field(self, node, field, value, line):
        if type(value) is list:
            if field in ("body", "orelse"):
                value = self.visible(value, field)
            return [self.converted(v, line) if isinstance(v, gast.AST) else v
                    for v in value]
        if not isinstance(value, gast.AST):
            return value
        if field == "test" and type(node) is gast.If and marks.TESTS.of(value):
            key = f"_s2s_written_{len(self.written)}"
            self.written[key] = marks.TESTS.of(value)
            value = syntax.name(key)
        elif (type(value) is gast.Constant and type(value.value) in (int, float)
                and value.value < 0):
            value = syntax.unary(gast.USub(), syntax.const(-value.value))
        return self.converted(value, line)

    def visible(self, stmts, field):
        visible = [_visible(s) for s in stmts]
        if (field == "body" or stmts) and all(syntax.is_comment(s) for s in visible):
            visible.append(gast.Pass())
        return visible

    def arguments(self, value, field, line):
        if field in ("args", "posonlyargs", "kwonlyargs"):
            return [self.arg(a, line) for a in value]
        if field in ("vararg", "kwarg"):
            return self.arg(value, line)
        return [self.converted(v, line) if isinstance(v, gast.AST) else v for v in value]

    def arg(self, name, line):
        if name is None:
            return None
        annotation = name.annotation
        new = ast.arg(arg=name.id, type_comment=name.type_comment, annotation=(
            None if annotation is None else self.converted(annotation, line)))
        for attribute in _LOCATION:
            if hasattr(name, attribute):
                setattr(new, attribute, getattr(name, attribute))
        new.lineno = getattr(name, "lineno", line)
        return new


_CONVERTED = {}
_LOCATION = ("lineno", "col_offset", "end_lineno", "end_col_offset")


def _conversion(kind):
    """(ast class, the fields to convert, whether it has a location) for a gast class:
    the fields both have, as `gast.gast_to_ast` converts them (which leaves out an
    assignment's type comment). For a class without fields or location (a context, an
    operator), its one instance instead of the class."""
    cls = getattr(ast, kind.__name__)
    fields = tuple(f for f in kind._fields if f in cls._fields
                   and not (kind is gast.Assign and f == "type_comment"))
    located = "lineno" in cls._attributes
    return (cls if fields or located else cls()), fields, located


_SHARED = {kind: getattr(ast, kind.__name__)() for kind in (gast.Load, gast.Store, gast.Del)}


def if_any(indent, tests, width=100):
    """`if a or b ...:`, wrapped in parentheses over lines of at most `width`."""
    line = f"{indent}if {' or '.join(tests)}:"
    if len(line) <= width:
        return line
    lines, current = [], f"{indent}if ({tests[0]}"
    for i, t in enumerate(tests[1:], 2):
        closing = 2 if i == len(tests) else 0      # the last line ends with "):"
        if len(current) + len(t) + 4 + closing > width:
            lines.append(current)
            current = f"{indent}        or {t}"
        else:
            current += f" or {t}"
    return "\n".join(lines + [current + "):"])


def _visible(s):
    kind = marks.MARKER.of(s)
    return syntax.comment(kind.replace("_", " ")) if kind else s


_TRAILING = re.compile(rf"^(.*\S)\(([^()]*), '{syntax.COMMENT}([^'\\]*)'\)$|"
                       rf'^(.*\S)\(([^()]*), "{syntax.COMMENT}([^"\\]*)"\)$')
_TUPLE_FOR = re.compile(r"^([ \t]*)for \(([^()\n]*)\) in ", re.M)
_TUPLE_ASSIGN = re.compile(r"^([ \t]*)\(([^()\n]*)\) = ", re.M)


def _comment_line(line):
    trailing = _TRAILING.match(line)
    if trailing:        # (a comment as a call's last argument: after the line)
        call, args, text = [g for g in trailing.groups() if g is not None]
        return f"{call}({args})  # {text}"
    stripped = line.lstrip()
    if stripped.lstrip("'\"").startswith(syntax.COMMENT):
        if "\\" in stripped or stripped[:3] in ("'''", '"""') or stripped[0] != stripped[-1]:
            # (the literal's value; literal_eval leaves garbage cycles at each call)
            value = ast.parse(stripped, mode="eval").body.value
        else:
            value = stripped[1:-1]      # (in one kind of quotes, without escapes)
        return line[:len(line) - len(stripped)] + "# " + value[len(syntax.COMMENT):]
    return line


def _unused(filename, source):
    """`filename`, numbered if `linecache` holds other source under it: another version
    of the same generated function (for other parameters or argument types) keeps its
    own lines, for tracebacks and for s2sad reading it again (forward over reverse)."""
    lines, name, k = source.splitlines(True), filename, 1
    while name in linecache.cache and linecache.cache[name][2] != lines:
        k += 1
        name = f"{filename[:-1]} #{k}>"
    return name


def compile_function(fn_node, bindings, user_fn, filename):
    """Compile `fn_node` into a function; `bindings` maps free names to objects."""
    [fn], source = _compile([fn_node], bindings, user_fn, filename)
    return fn, source


def compile_functions(fn_nodes, bindings, user_fn, filename):
    """Compile `fn_nodes` together (each sees the others) into functions."""
    return _compile(fn_nodes, bindings, user_fn, filename)[0]


def _compile(fn_nodes, bindings, user_fn, filename):
    source = "\n".join(to_source(n) for n in fn_nodes)
    filename = _unused(filename, source)
    tree = ast.parse(source, filename)
    bindings = {**_enclosing_names(tree, bindings, user_fn), **bindings}
    params = sorted(bindings)
    factory = ast.parse(f"def _s2s_factory({', '.join(params)}):\n    pass").body[0]
    made = ast.Tuple(elts=[ast.Name(id=n.name, ctx=ast.Load()) for n in fn_nodes],
                     ctx=ast.Load())
    returned = ast.Return(value=made)
    for new in [returned, made, *made.elts]:    # the only nodes without a location
        ast.copy_location(new, factory)
    factory.body = tree.body + [returned]
    module = ast.Module(body=[factory], type_ignores=[])
    code = compile(module, filename, "exec")
    factory_code = next(c for c in code.co_consts if isinstance(c, types.CodeType))
    make = types.FunctionType(factory_code, user_fn.__globals__, "_s2s_factory")
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    fns = make(*(bindings[p] for p in params))
    for fn in fns:
        fn.__qualname__ = fn.__name__
    return fns, source


def _enclosing_names(tree, bindings, user_fn):
    """{name: None} of the names the defaults of the functions of `tree` read that
    neither `bindings` nor the user's module binds: the user's function is nested and
    its default reads a variable of the function around it (`def step(u, body=body)`).
    Python evaluated that default when `def` ran; driver._share_defaults gives the
    compiled function the object the user's function holds, in place of this None."""
    builtins = user_fn.__globals__.get("__builtins__", {})
    builtins = vars(builtins) if isinstance(builtins, types.ModuleType) else builtins
    read = {n.id for f in tree.body if isinstance(f, ast.FunctionDef)
            for d in [*f.args.defaults, *filter(None, f.args.kw_defaults)]
            for n in ast.walk(d) if isinstance(n, ast.Name)}
    return {n: None for n in sorted(read) if n not in bindings
            and n not in user_fn.__globals__ and n not in builtins}


def bind_late(fn, name, value):
    """Bind the free name `name` of the compiled function `fn` (and of the functions
    nested in it, which share the cell) to `value`: how the driver links a derivative to
    those it calls, which may be compiled after it (recursion); and, for a copy of it the
    numba backend's disk cache made (native_cache.cached_copy), that copy's global."""
    code = fn.__code__
    if name in code.co_freevars:
        fn.__closure__[code.co_freevars.index(name)].cell_contents = value
        copy_globals = getattr(fn, "s2s_copy_globals", None)
        if copy_globals is not None:
            copy_globals[name] = value
