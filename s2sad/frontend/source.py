"""Source capture: a function object to its gast tree, file name and absolute lines.

Everything later reports locations through `FunctionSource.locate`, so an error or a
generated comment always names the user's file and the line in it.
"""
import ast
import builtins
import functools
import inspect
import itertools
import linecache
import sys
import math
import textwrap
import types
import weakref

import gast

from .. import marks, syntax
from . import guards, structure
from ..errors import S2SADError, SourceUnavailableError, UnsupportedSyntaxError, defined_at

MISSING = object()

#: {function: (its code, file name, first line, indent, `def` node)}, read once: `capture`
#: hands out copies of the node
_parsed = weakref.WeakKeyDictionary()


class FunctionSource:
    """A parsed user function and where it came from."""

    def __init__(self, fn, node, filename, first_line, indent, origins=None, refused=None):
        self.fn = fn
        self.node = node
        self.filename = filename
        self.first_line = first_line
        self.indent = indent
        self._values = None
        #: the user's functions this source is made from: `fn`, or the function a
        #: nested function was lifted out of, or that a version was specialised from
        self.origins = [fn] if origins is None else origins
        #: the refusals its statements raise at run time, {line: error}, of it or of the
        #: function it was made from (frontend/deferred.py)
        self.refused = refused or {}
        #: what the passes looked up outside the function: {name or (name, attr, ...):
        #: the object found}, for the guards of the derivative (see guards_of)
        self.resolved = {}
        #: the chains of `resolved` a pass read where the user's code does not write them,
        #: and no code s2sad writes reads them again (`np.vectorize`'s `pyfunc`): guarded
        self.read_away = set()
        #: the lists and tuples outside the function whose items' classes the code relies
        #: on (`items_of`): {name or (name, attr, ...): the object}
        self.unrolled = {}
        #: the globals whose structure the code relies on (`structure_of`): {name: object}
        self.structured = {}

    def of(self, fn, node, copy=True):
        """The source of `fn`, a function s2sad made from `node` (a tree read from this
        source: lines still the user's), a copy of `node` unless `copy` is false."""
        return FunctionSource(fn, syntax.copied(node) if copy else node, self.filename,
                              self.first_line, self.indent, self.origins, self.refused)

    @property
    def name(self):
        return self.node.name

    def lineno(self, node):
        """The absolute line of `node` in the user's file."""
        return getattr(node, "lineno", 1) + self.first_line - 1

    def line_text(self, node):
        return linecache.getline(self.filename, self.lineno(node)).rstrip("\n")

    def where(self, node):
        return f"{self.filename}:{self.lineno(node)}"

    def syntax_error(self, node, message):
        offset = getattr(node, "col_offset", 0) + self.indent + 1
        return UnsupportedSyntaxError(message, self.filename, self.lineno(node), offset,
                                      self.line_text(node))

    def resolve(self, expr):
        """The object a `Name` or `a.b.c` attribute chain denotes at definition scope,
        or `MISSING` when it is local to the function or not resolvable. A name a pass
        made for an object carries it (`marks.PRIM`)."""
        prim = marks.PRIM.of(expr)
        if prim is not None:
            return prim
        if isinstance(expr, gast.Attribute):
            attrs, base = [], expr
            while isinstance(base, gast.Attribute) and marks.PRIM.of(base) is None:
                attrs.append(base.attr)
                base = base.value
            if isinstance(base, gast.Name) and marks.PRIM.of(base) is None:
                # (the chain is guarded, not its first name alone)
                value = MISSING if self.is_local(base.id) else dict.get(
                    self.free_values(), base.id, MISSING)
            else:
                value = self.resolve(base)
            for attr in reversed(attrs):
                if value is MISSING:
                    return MISSING
                value = getattr(value, attr, MISSING)
            if value is not MISSING and isinstance(base, gast.Name) and marks.PRIM.of(base) is None:
                self.resolved[(base.id, *reversed(attrs))] = value
            return value
        if not isinstance(expr, gast.Name) or self.is_local(expr.id):
            return MISSING
        return self.free_values().get(expr.id, MISSING)

    def items_of(self, expr):
        """The list or tuple outside the function that the `Name` or attribute chain
        `expr` denotes, or MISSING; the guards of the derivative then test that its
        items keep their classes (code that knows an item's class, `layers[0]`, calls
        the methods of that class)."""
        if not isinstance(expr, (gast.Name, gast.Attribute)):
            return MISSING
        key, base = [], expr
        while isinstance(base, gast.Attribute):
            key.append(base.attr)
            base = base.value
        if not isinstance(base, gast.Name) or self.is_local(base.id):
            return MISSING
        value = self.resolve(expr)
        if type(value) not in (list, tuple):
            return MISSING
        self.unrolled[base.id if not key else (base.id, *reversed(key))] = value
        return value

    def structure_of(self, name):
        """The structure (see frontend/structure.py) of the global or closure value
        `name`; the guards of the derivative then test that it keeps it."""
        value = self.free_values().get(name, MISSING)
        found = structure.of(name, value) if value is not MISSING else {}
        if found and all(k == f"len({name})" or k.startswith(f"{name}[") and k.endswith("]")
                         for k in found):
            self.unrolled[name] = value     # (its items' classes: what `items_of` guards)
        elif found:
            self.structured[name] = value
        return found

    def free_values(self):
        """Values of the names the function reads from outside: closure cells, then
        module globals, then builtins (read at the first call: the passes ask for them
        hundreds of times)."""
        if self._values is not None:
            return self._values
        values = self._values = _Reads(self.resolved)
        code = self.fn.__code__
        for var, cell in zip(code.co_freevars, self.fn.__closure__ or ()):
            try:
                values[var] = cell.cell_contents
            except ValueError:
                pass
        for var in _global_names(code) + code.co_freevars:
            if var in values:
                continue
            if var in self.fn.__globals__:
                values[var] = self.fn.__globals__[var]
            elif hasattr(builtins, var):
                values[var] = getattr(builtins, var)
        return values

    @functools.cached_property
    def blocks(self):
        """The `with` and `try` statements of the function, outermost first, as `Block`s
        (desugaring keeps their bodies; after_ad.enclose puts them back around the code
        made from those lines)."""
        return [Block(n) for n in syntax.walk(self.node)
                if isinstance(n, (gast.With, gast.Try)) and n.body]

    def in_try(self, stmt):
        """Whether generated statement `stmt` comes from the body of a `try`: it may
        raise the exception that decides the path, so it must run even where its value
        is not needed."""
        line = getattr(stmt, "lineno", None)
        return any(isinstance(b.node, gast.Try) and b.holds(line) for b in self.blocks)

    @functools.cached_property
    def local_names(self):
        code = self.fn.__code__
        return set(code.co_varnames) | set(code.co_cellvars)

    def is_local(self, name):
        """Whether `name` is local to the function: one of its own, or one s2sad made
        (generated names never shadow a name the function reads from outside)."""
        return name in self.local_names or name not in self.free_values()


class _Reads(dict):
    """The free values of a function, noting in `resolved` each one a pass reads."""

    def __init__(self, resolved):
        super().__init__()
        self.resolved = resolved

    def __getitem__(self, name):
        value = super().__getitem__(name)
        self.resolved[name] = value
        return value

    def get(self, name, default=None):
        value = super().get(name, MISSING)
        if value is MISSING:
            return default
        self.resolved[name] = value
        return value


def frozen_reads(fns):
    """The guards, by identity (and arrays by their contents), of the data in the globals
    that the functions `fns` read, and the Python functions of the user's they call read:
    for code that holds the values of its globals (Numba takes each as a constant where
    the code reads it, `if USE:` too, which the passes did not resolve)."""
    out, seen, todo = [], set(), list(fns)
    while todo:
        fn = todo.pop()
        code = getattr(fn, "__code__", None)
        if code is None or id(fn) in seen:
            continue
        seen.add(id(fn))
        space = fn.__globals__
        for name in sorted(_code_names(code)):
            value = space.get(name, MISSING)
            if value is MISSING:
                continue
            if inspect.isfunction(value) and not is_library(value) and not (
                    value.__module__ or "").startswith("s2sad."):
                todo.append(value)
            elif guards.is_data(value):
                out.append(guards.Guard(("global", space, name), (), value, "is"))
                if guards.contents(("global", space, name), (), value) is not None:
                    out.append(guards.contents(("global", space, name), (), value))
    return out


def _code_names(code):
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _code_names(const)
    return names


def guards_of(src, frozen=False):
    """The guards (see frontend/guards.py) on what a derivative compiled from `src` took
    of the world: what its origins are made of (code, defaults, closure values), each
    global or builtin the passes looked up, each attribute chain they resolved; for
    s2sad's own generated code differentiated again, the guards of the derivative that
    made it (`s2s_guards`). With `frozen`, data by identity too (see guards.guard), and
    arrays by their contents (see guards.contents)."""
    if is_generated(src):
        return list(getattr(src.fn, "s2s_guards", ()))
    out = [g for fn in src.origins for g in guards.of_function(fn)]
    cells = {}
    for fn in src.origins:
        code = getattr(fn, "__code__", None)
        if code is not None:
            cells.update(zip(code.co_freevars, fn.__closure__ or ()))
    own = {}     # the closure of a function s2sad made (lifted, specialised): its
    #             values come from the origin's, or from what the caller resolved
    code = src.fn.__code__
    if src.fn not in src.origins:
        own = dict(zip(code.co_freevars, src.fn.__closure__ or ()))
    space = src.fn.__globals__
    written = _written(src.node)
    if src.filename.startswith("<s2sad-own-"):
        written = set()     # (its globals are its own: see function_from_source)
    for key, value in src.resolved.items():
        name, attrs = (key, ()) if isinstance(key, str) else (key[0], key[1:])
        if (name, *attrs) not in written and key not in src.read_away:
            continue        # (read by code s2sad wrote, which reads it again when it runs)
        if attrs and not callable(value) and is_library(space.get(name)):
            continue        # (a library's constant: np.pi, math.inf)
        if name in cells or name in own:
            if not attrs:
                continue        # (the cell's value is guarded with the origin)
            root = ("cell", cells.get(name) or own[name])
        else:
            root = ("global", space, name)
        out.append(guards.guard(root, attrs, value, frozen))
        if guards.binds(root, attrs, value) is not None:
            out.append(guards.binds(root, attrs, value))
        if frozen and guards.contents(root, attrs, value) is not None:
            out.append(guards.contents(root, attrs, value))
    if frozen:      # (a cell's value is guarded with the origin, by identity)
        out += [g for g in (guards.contents(("cell", c), (), c.cell_contents)
                            for c in cells.values() if _full(c)) if g is not None]
    for key, value in src.unrolled.items():
        name, attrs = (key, ()) if isinstance(key, str) else (key[0], key[1:])
        root = (("cell", cells.get(name) or own[name]) if name in cells or name in own
                else ("global", space, name))
        out.append(guards.items(root, attrs, value))
    for name, value in src.structured.items():
        root = (("cell", cells.get(name) or own[name]) if name in cells or name in own
                else ("global", space, name))
        out.append(guards.structured(root, value))
    return guards.unique(out)


def _full(cell):
    """Whether the closure cell `cell` holds a value."""
    try:
        cell.cell_contents
    except ValueError:
        return False
    return True


def _written(node):
    """The names and attribute chains of names (`("np", "linalg", "solve")`) that the
    source of `node` reads."""
    out = set()
    for n in syntax.walk(node):
        if isinstance(n, gast.Attribute):
            path = [n.attr]
            base = n.value
            while isinstance(base, gast.Attribute):
                path.append(base.attr)
                base = base.value
            if isinstance(base, gast.Name):
                out.add((base.id, *reversed(path)))
        elif isinstance(n, gast.Name):
            out.add((n.id,))
    return out


class Block:
    """A `with` or `try` statement of a function, and the lines of its body (relative,
    like the lines of every node s2sad makes)."""

    def __init__(self, node):
        self.node = node
        self.first = node.body[0].lineno
        self.last = max(getattr(n, "end_lineno", None) or getattr(n, "lineno", self.first)
                        for s in node.body for n in syntax.walk(s))

    def holds(self, line):
        return line is not None and self.first <= line <= self.last


def _global_names(code):
    """The global names `code` and the code nested in it (comprehensions, lambdas,
    nested functions) read."""
    names = code.co_names
    for const in code.co_consts:
        if inspect.iscode(const):
            names += _global_names(const)
    return names


def numba_function(fn):
    """The Python function a Numba dispatcher (`@numba.njit`) compiles, or None (also
    for a derivative s2sad made of one, which has its attributes: functools.wraps)."""
    py_func = getattr(fn, "py_func", None)
    return py_func if inspect.isfunction(py_func) and hasattr(fn, "targetoptions") and (
        not getattr(fn, "s2s_derivative", False)) else None


#: the class of the functions functools.cache and lru_cache make, which return the
#: values of the function they wrap (`__wrapped__`)
CACHED = type(functools.lru_cache(lambda: None))


def unwrap(fn):
    """The plain Python function behind a bound method, a Numba dispatcher or a function
    functools.cache or lru_cache memoises."""
    if numba_function(fn) is not None:
        return numba_function(fn)
    if getattr(fn, "s2s_derivative", False):
        raise SourceUnavailableError(
            f"{fn!r} is a derivative made by s2sad; of derivatives, s2sad differentiates "
            "grad(f) and its gradients (grad(grad(f)), grad(grad(grad(f))), ...; "
            "elementwise_grad nested), hessian(f) and hvp(f), and grad(f) called in a "
            "differentiated function. Differentiate the original function (its .primal).")
    fn = getattr(fn, "__func__", fn)
    if isinstance(fn, CACHED) and inspect.isfunction(fn.__wrapped__):
        fn = fn.__wrapped__
    while forwards(fn):     # a decorator's wrapper that only calls what it wraps
        fn = fn.__wrapped__
    return fn


def forwards(fn):
    """Whether `fn` is a wrapper (`functools.wraps`, with `__wrapped__`) whose body only
    calls the function it wraps with its arguments, `def w(*args, **kwargs): return
    fn(*args, **kwargs)` or `def w(*args): return fn(*args)` (a docstring aside, or the
    result bound to a name then returned), `fn` a closure variable holding
    `fn.__wrapped__`: the function it wraps is then the code that runs."""
    inner = getattr(fn, "__wrapped__", None)
    code = getattr(fn, "__code__", None)
    if inner is None or not inspect.isfunction(fn) or code is None or (
            code.co_argcount or code.co_kwonlyargcount or code.co_posonlyargcount
            or not code.co_flags & inspect.CO_VARARGS):
        return False
    known = _forwarding.get(code)
    if known is None:
        known = _forwarding[code] = _forwarding_call(code)
    if not known:
        return False
    called = known
    cells = dict(zip(code.co_freevars, fn.__closure__ or ()))
    try:
        return called in cells and cells[called].cell_contents is inner
    except ValueError:
        return False


def _forwarding_call(code):
    """The closure variable the function of `code` calls with its `*args, **kwargs`, if
    that is all its body does, else "" (read from its source)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(code)))
    except (OSError, TypeError, SyntaxError, IndentationError):
        return ""
    fn = next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)), None)
    if fn is None or fn.name != code.co_name:
        return ""
    body = fn.body[1:] if fn.body and isinstance(fn.body[0], ast.Expr) and isinstance(
        fn.body[0].value, ast.Constant) and isinstance(fn.body[0].value.value, str) else fn.body
    args, kwargs = fn.args.vararg, fn.args.kwarg
    if len(body) == 2 and isinstance(body[0], ast.Assign) and len(body[0].targets) == 1 and \
            isinstance(body[0].targets[0], ast.Name) and isinstance(body[1], ast.Return) and \
            isinstance(body[1].value, ast.Name) and body[1].value.id == body[0].targets[0].id:
        call = body[0].value                # result = fn(*args, **kwargs); return result
    elif len(body) == 1 and isinstance(body[0], ast.Return):
        call = body[0].value
    else:
        return ""
    keywords = [] if kwargs is None else [kwargs.arg]
    if not (args is not None and isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
            and len(call.args) == 1 and isinstance(call.args[0], ast.Starred)
            and isinstance(call.args[0].value, ast.Name) and call.args[0].value.id == args.arg
            and [k.value.id if k.arg is None and isinstance(k.value, ast.Name) else None
                 for k in call.keywords] == keywords):
        return ""
    return call.func.id


_forwarding = {}    # {a wrapper's code: the name it forwards to, or ""}


def capture(fn, copy=True):
    """Parse `fn`'s source into a `FunctionSource` (read once per function). Its tree is
    a copy of its own, unless `copy` is false: then it is the one kept for `fn`, which
    the caller only reads."""
    fn = unwrap(fn)
    lifted = marks.RECORD.of(fn)
    if lifted is not None:      # a nested function s2sad lifted out of its parent
        return lifted.source(fn, copy)
    if not callable(fn):
        raise S2SADError(f"s2sad differentiates functions; got {type(fn).__name__} {fn!r}")
    if getattr(fn, "s2s_not_differentiable", None):     # s2sad's own, such as checkpoint's
        raise S2SADError(fn.s2s_not_differentiable)
    if getattr(fn, "__wrapped__", None) is not None and inspect.isfunction(fn):
        raise SourceUnavailableError(
            f"{defined_at(fn)}{fn.__qualname__!r} is wrapped by a decorator (it has "
            "__wrapped__) whose wrapper does more than call the function it wraps with "
            "its arguments (`return fn(*args, **kwargs)`), so the function's source is "
            "not the code that runs. Differentiate the undecorated function, or give "
            "what the wrapper adds a rule (s2sad.custom_vjp)")
    if not inspect.isfunction(fn):
        raise SourceUnavailableError(
            f"{getattr(fn, '__qualname__', fn)!r} is not a Python function with source "
            f"(it is a {type(fn).__name__}); s2sad needs Python source to differentiate. "
            "For a builtin or C-extension primitive, register a rule with s2sad.defvjp.")
    parsed = _parsed.get(fn)
    if parsed is None or parsed[0] is not fn.__code__ or parsed[1] is not (
            fn.__defaults__) or parsed[2] is not fn.__kwdefaults__:
        parsed = _parsed[fn] = (fn.__code__, fn.__defaults__, fn.__kwdefaults__,
                                *_parse(fn))
        _defaults_as_now(parsed[-1], fn)
    filename, first_line, indent, node = parsed[3:]
    return FunctionSource(fn, syntax.copied(node) if copy else node, filename, first_line,
                          indent)


def _defaults_as_now(node, fn):
    """The numbers and strings `node`'s source gives as defaults replaced by the values
    `fn` has now, where they differ (`fn.__defaults__` was assigned)."""
    args = node.args
    positional = args.posonlyargs + args.args
    now = {p.name: p.default for p in inspect.signature(fn).parameters.values()
           if p.default is not p.empty}

    def current(param, expr):
        value = now.get(param.id, MISSING)
        try:
            written = ast.literal_eval(gast.gast_to_ast(expr))
        except (ValueError, TypeError, SyntaxError):
            return expr
        if type(value) in (int, float, bool, str, type(None)) and (
                type(written) is not type(value) or written != value):
            return syntax.located(syntax.const(value), expr)
        return expr
    ends = positional[len(positional) - len(args.defaults):]
    args.defaults = [current(a, d) for a, d in zip(ends, args.defaults)]
    args.kw_defaults = [d if d is None else current(a, d)
                        for a, d in zip(args.kwonlyargs, args.kw_defaults)]


def _parse(fn):
    """(file name, first line, indent, `def` node) of function `fn`."""
    filename = inspect.getsourcefile(fn) or getattr(fn.__code__, "co_filename", "<unknown>")
    if fn.__name__ == "<lambda>":
        return _parse_lambda(fn, filename)
    try:
        lines, first_line = _source_lines(fn)
    except (OSError, TypeError) as exc:
        raise SourceUnavailableError(
            f"cannot read the source of {fn.__qualname__!r} (defined in {filename}): {exc}. "
            "Define the function in a .py file (not in a REPL, exec or eval).") from None
    source = "".join(lines)
    indent = len(lines[0]) - len(lines[0].lstrip())
    try:
        tree = syntax.parse(textwrap.dedent(source))
    except SyntaxError as exc:
        raise SourceUnavailableError(
            f"the source of {fn.__qualname__!r} at {filename}:{first_line} does not parse "
            f"on its own ({exc.msg}). Is it a lambda inside a larger expression? "
            "Define it with def.") from None
    node = tree.body[0]
    if isinstance(node, gast.AsyncFunctionDef):
        raise UnsupportedSyntaxError(
            f"{fn.__qualname__!r} is an async function (async def), which s2sad cannot "
            "differentiate: differentiate the plain function its coroutine awaits, defined "
            "with def.", filename, first_line, indent + 1, lines[0])
    if isinstance(node, gast.FunctionDef) and node.name == fn.__code__.co_name:
        node.name = fn.__name__         # (its code was another function's: autoreload)
    if not isinstance(node, gast.FunctionDef) or node.name != fn.__name__:
        raise UnsupportedSyntaxError(
            f"s2sad differentiates functions defined with def; {fn.__qualname__!r} is a "
            "lambda. Define it with def.", filename, first_line, indent + 1, lines[0])
    node.decorator_list = []
    if filename.startswith("<s2sad:"):      # (s2sad's code, differentiated again)
        for block in syntax.blocks(node.body):
            block[:] = unfused(block)
    return filename, first_line, indent, node


def unfused(stmts):
    """`stmts` with each loop that the numba backend fused a run of elementwise statements
    into (after_ad/native_fuse.py: `if isinstance(_s2s_fusable(...), float) and ...:
    <the loop> else: <the statements>`) as the statements it stands for, and each
    `_s2s_add_scaled(x, c, g)` (after_ad/native_scaled.py) as `x += c * g`: what forward
    mode differentiates of the numba gradient's code (`hvp`)."""
    out = []
    for s in stmts:
        call = getattr(s, "value", None) if isinstance(s, gast.Expr) else None
        if (isinstance(call, gast.Call) and syntax.is_name(call.func)
                and call.func.id.startswith("_s2s_add_scaled") and len(call.args) == 3):
            x, c, g = call.args
            out.append(syntax.located(gast.AugAssign(
                target=syntax.as_store(x), op=gast.Add(),
                value=syntax.binop(c, gast.Mult(), g)), s))
            continue
        test = getattr(s, "test", None)
        first = test.values[0] if isinstance(test, gast.BoolOp) else None
        inner = first.args[0] if isinstance(first, gast.Call) and first.args else None
        if (isinstance(s, gast.If) and isinstance(inner, gast.Call)
                and syntax.is_name(first.func, "isinstance") and syntax.is_name(inner.func)
                and inner.func.id.startswith("_s2s_fusable")):
            out += unfused(s.orelse)
        else:
            out.append(s)
    return out


def _source_lines(fn):
    """`inspect.getsourcelines(fn)`, without tokenizing the function in Python (a tenth
    of a transform of a long function): the lines up to the next one indented no more
    than the first, when they parse as one statement (a cut inside a string or brackets
    does not), less the blank and comment lines at the end but for the comments indented
    as much as the body (as inspect's); else inspect's."""
    fn = inspect.unwrap(fn)
    lines, start = inspect.findsource(fn)
    indent = _indent(lines[start])
    code = start + 1        # (after the last line of code)
    for k in range(start + 1, len(lines)):
        text = lines[k].lstrip()
        if text and not text.startswith("#"):
            if _indent(lines[k]) <= indent:
                break
            code = k + 1
    else:
        k = len(lines)
    block = lines[start:code]
    if any("\t" in line or "\f" in line for line in lines[start:k]):
        return inspect.getblock(lines[start:]), start + 1
    try:
        tree = ast.parse(textwrap.dedent("".join(block)))
    except SyntaxError:
        return inspect.getblock(lines[start:]), start + 1
    if len(tree.body) != 1 or not hasattr(tree.body[0], "body"):
        return inspect.getblock(lines[start:]), start + 1
    first = tree.body[0].body[0]
    line = lines[start + first.lineno - 1]
    if line[:indent + first.col_offset].strip():
        return block, start + 1         # (the body is on the line of the header)
    column = indent + first.col_offset
    comments = [m for m in range(code, k) if lines[m].lstrip().startswith("#")
                and _indent(lines[m]) >= column]
    return lines[start:comments[-1] + 1] if comments else block, start + 1


def _indent(line):
    return len(line) - len(line.lstrip())


def identifier(fn):
    """A name for code about `fn`: its own, or `lambda_` for a lambda."""
    return fn.__name__ if fn.__name__.isidentifier() else "lambda_"


def _parse_lambda(fn, filename):
    """(file name, first line, indent, `def` node) of lambda `fn`: the `def` of a
    function named after the variable the lambda is assigned to (or `lambda_`) that
    returns the lambda's body, found among the lambdas that start on its line."""
    code = fn.__code__
    line = code.co_firstlineno
    text = "".join(linecache.getlines(filename, fn.__globals__))
    try:
        tree = syntax.parse(text)
    except SyntaxError:
        tree = None
    if not text or tree is None:
        raise SourceUnavailableError(
            f"cannot read the source of the lambda at {filename}:{line}. Define the "
            "function with def in a .py file (not in a REPL, exec or eval).")
    params = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
    found = [n for n in syntax.walk(tree) if isinstance(n, gast.Lambda) and n.lineno == line
             and tuple(a.id for a in n.args.posonlyargs + n.args.args + n.args.kwonlyargs)
             == params]
    if len(found) > 1 and hasattr(code, "co_positions"):    # Python 3.11 and later
        # the one whose span holds every position of its code
        spots = [p for p in code.co_positions() if None not in p and p[:2] + p[2:] != (
            p[0], p[0], p[2], p[2])]        # (not the empty spans of its prologue)
        found = [n for n in found if all(
            (n.lineno, n.col_offset) <= (a, c) and (b, d) <= (n.end_lineno, n.end_col_offset)
            for a, b, c, d in spots)]
        found = [n for n in found if not any(m is not n and m in found for m in syntax.walk(n))]
    if len(found) != 1:
        why = ("no lambda with these parameters starts there" if not found else
               f"{len(found)} lambdas with parameters {', '.join(params)} start there")
        raise SourceUnavailableError(
            f"cannot tell which lambda of {filename}:{line} to differentiate: {why}. Put "
            "the lambda on a line of its own, or define the function with def.")
    node = found[0]
    name = "lambda_"
    for n in syntax.walk(tree):
        if (isinstance(n, gast.Assign) and n.value is node and len(n.targets) == 1
                and isinstance(n.targets[0], gast.Name)):
            name = n.targets[0].id
    body = gast.Return(value=node.body)
    syntax.located(body, node.body)
    fn_node = gast.FunctionDef(name=name, args=node.args, body=[body], decorator_list=[],
                               returns=None, type_comment=None, type_params=[])
    syntax.located(fn_node, node)
    for n in syntax.walk(fn_node):      # lines relative to the lambda's, like a def's
        for attr in ("lineno", "end_lineno"):
            if getattr(n, attr, None) is not None:
                setattr(n, attr, getattr(n, attr) - line + 1)
    return filename, line, 0, fn_node


def forget():
    """Read every function's source again (see `cache.clear`)."""
    _parsed.clear()


def is_generated(src):
    """Whether `src` is s2sad's own generated code (a derivative differentiated again)."""
    return src.filename.startswith("<s2sad:")


def prepare_generated(src):
    """Let forward mode read s2sad's own reverse-mode code (forward over reverse): its
    loops over tapes unpack tuples (`for a, b in reversed(tape)`), which the fence refuses
    from users; give them one loop variable and an unpacking assignment."""
    if not is_generated(src):
        return
    used = {n.id for n in syntax.walk(src.node) if isinstance(n, gast.Name)}
    for loop in [n for n in syntax.walk(src.node) if isinstance(n, gast.For)]:
        if isinstance(loop.target, gast.Tuple):
            item = next(f"_s2s_item_{k}" for k in range(len(used) + 1)
                        if f"_s2s_item_{k}" not in used)
            used.add(item)
            unpack = syntax.located(syntax.assign(loop.target, syntax.name(item)), loop)
            loop.target = syntax.name(item, store=True)
            loop.body.insert(0, unpack)


_counter = itertools.count()


def function_from_source(text, namespace=None, own=False):
    """The last function `text` defines, compiled under a file name of its own whose
    lines `linecache` holds, so that s2sad (and `inspect`) can read its source again.
    `namespace` adds to the globals, which start with `math` and its common functions.
    With `own`, a function s2sad writes for itself (what stands for a derivative called
    in differentiated code), whose globals nothing else reads or binds: a derivative
    that reads it does not guard them (see `guards_of`)."""
    filename = f"<s2sad-{'own' if own else 'example'}-{next(_counter)}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    ns = {"math": math, "sin": math.sin, "cos": math.cos, "exp": math.exp,
          "log": math.log, "sqrt": math.sqrt}
    ns.update(namespace or {})
    before = dict(ns)
    exec(compile(text, filename, "exec"), ns)
    return [v for k, v in ns.items() if before.get(k) is not v and callable(v)][-1]


def is_library(fn):
    """Whether `fn` (a function, or a module) is library code (an installed package or the
    standard library), which the user cannot change: where s2sad cannot differentiate
    it, a rule is what it needs."""
    if isinstance(fn, types.ModuleType):
        module, path = fn.__name__.split(".")[0], getattr(fn, "__file__", None) or ""
        return (module in sys.stdlib_module_names or "site-packages" in path
                or "dist-packages" in path)
    module = (getattr(fn, "__module__", None) or "").split(".")[0]
    path = getattr(getattr(fn, "__code__", None), "co_filename", "")
    return (module in sys.stdlib_module_names or "site-packages" in path
            or "dist-packages" in path)
