"""The module-level names of a piece of Python source, and renaming them in its text.

An exported module (see `s2sad.export`) is made of pieces of source from several
places: generated derivatives, the user's functions, s2sad's runtime helpers. Each reads
names that denote module-level objects, and two places may use one name for different
objects (or two names for one). `module_names` finds, in the text of module-level
statements, every use of a name that is looked up at module level: at module level
itself, and in a function wherever no enclosing function binds the name (Python's rule,
with class bodies invisible to the functions in them). `renamed` rewrites those uses
in the text itself, so that comments and layout are kept.

>>> text = '''
... def f(x):
...     t = cos(x)          # cos is global, t and x are not
...     def g(cos):
...         return cos + t
...     return g(t) + [cos for cos in (x,)][0]
... '''
>>> [(n.id, n.lineno) for n in module_names(text).reads]
[('cos', 3)]
>>> print(renamed(text, {"cos": "_cos", "f": "f_1"}), end="")
<BLANKLINE>
def f_1(x):
    t = _cos(x)          # cos is global, t and x are not
    def g(cos):
        return cos + t
    return g(t) + [cos for cos in (x,)][0]
"""
import ast
import dataclasses
import re

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.ListComp,
           ast.SetComp, ast.DictComp, ast.GeneratorExp)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


@dataclasses.dataclass
class ModuleNames:
    """The uses of module-level names in a text: `reads` and `writes` (Name nodes, at
    module level or global in a function), and `defs` (the module-level `def` and
    `class` statements, whose names they bind)."""
    tree: ast.Module
    reads: list
    writes: list
    defs: list


def module_names(text):
    """The `ModuleNames` of `text`, module-level statements."""
    tree = ast.parse(text)
    finder = _Finder()
    for stmt in tree.body:
        finder.visit(stmt)
    defs = [s for s in tree.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                   ast.ClassDef))]
    return ModuleNames(tree, finder.reads, finder.writes, defs)


def renamed(text, names, edits=()):
    """`text` with each use of a module-level name in `names` ({old: new}) renamed, and
    `edits` ([(line, start, end, text)], columns in characters) made."""
    found = module_names(text)
    lines = text.splitlines(True)
    edits = list(edits) + [(n.lineno, column(lines, n.lineno, n.col_offset),
              column(lines, n.lineno, n.end_col_offset), names[n.id])
             for n in found.reads + found.writes if names.get(n.id, n.id) != n.id]
    for d in found.defs:
        if names.get(d.name, d.name) != d.name:
            line = lines[d.lineno - 1]
            start = re.compile(r"(async\s+)?(def|class)\s+").match(
                line, column(lines, d.lineno, d.col_offset)).end()
            edits.append((d.lineno, start, start + len(d.name), names[d.name]))
    for line, start, end, new in sorted(edits, reverse=True):
        lines[line - 1] = lines[line - 1][:start] + new + lines[line - 1][end:]
    return "".join(lines)


def column(lines, lineno, offset):
    """The character column of the UTF-8 byte `offset` in line `lineno` (ast's)."""
    return len(lines[lineno - 1].encode("utf-8")[:offset].decode("utf-8"))


def identifiers(text):
    """Every name `text` uses or binds, in any scope (what a new name must not be)."""
    tree = ast.parse(text)
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            out.add(node.id)
        elif isinstance(node, ast.arg):
            out.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, ast.alias):
            out.add((node.asname or node.name).split(".")[0])
    return out


class _Finder(ast.NodeVisitor):
    """Collects the Name nodes that denote module-level names, walking scopes as Python
    resolves them: a stack of (is a class, names bound in the scope)."""

    def __init__(self):
        self.reads, self.writes, self.scopes = [], [], []

    def visit_Name(self, node):
        if self._is_global(node.id):
            (self.reads if isinstance(node.ctx, ast.Load) else self.writes).append(node)

    def _is_global(self, name):
        for depth, (is_class, bound) in enumerate(reversed(self.scopes)):
            if is_class and depth:      # a class body is not a scope of its methods
                continue
            if name in bound:
                return False
        return True

    def _function(self, node, args, body):
        for d in getattr(node, "decorator_list", []):
            self.visit(d)
        for default in args.defaults + [d for d in args.kw_defaults if d is not None]:
            self.visit(default)
        for a in _all_args(args):
            if a.annotation is not None:
                self.visit(a.annotation)
        if getattr(node, "returns", None) is not None:
            self.visit(node.returns)
        params = {a.arg for a in _all_args(args)}
        self.scopes.append((False, params | _bound(body if isinstance(body, list) else [body])))
        for stmt in body if isinstance(body, list) else [body]:
            self.visit(stmt)
        self.scopes.pop()

    def visit_FunctionDef(self, node):
        self._function(node, node.args, node.body)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node):
        self._function(node, node.args, node.body)

    def visit_ClassDef(self, node):
        for n in node.decorator_list + node.bases + [k.value for k in node.keywords]:
            self.visit(n)
        self.scopes.append((True, _bound(node.body)))
        for stmt in node.body:
            self.visit(stmt)
        self.scopes.pop()

    def _comprehension(self, node):
        first, *others = node.generators
        self.visit(first.iter)          # evaluated in the enclosing scope
        targets = {n.id for g in node.generators for n in ast.walk(g.target)
                   if isinstance(n, ast.Name)}
        self.scopes.append((False, targets))
        for g in node.generators:
            self.visit(g.target)
            if g is not first:
                self.visit(g.iter)
            for test in g.ifs:
                self.visit(test)
        for part in ("elt", "key", "value"):
            if hasattr(node, part):
                self.visit(getattr(node, part))
        self.scopes.pop()

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _comprehension


def _all_args(args):
    return (args.posonlyargs + args.args + args.kwonlyargs
            + [a for a in (args.vararg, args.kwarg) if a is not None])


def _bound(stmts):
    """The names a function or class body binds (not in its nested scopes), less those it
    declares global or nonlocal."""
    bound, declared = set(), set()
    todo = list(stmts)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            declared.update(node.names)
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.alias):
            bound.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.NamedExpr):
            bound.add(node.target.id)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            todo.extend(node.decorator_list)      # evaluated here, the body is not
            continue
        if isinstance(node, ast.Lambda):
            continue
        if isinstance(node, _COMPREHENSIONS):       # only its := targets bind here
            todo.extend(n for n in ast.walk(node) if isinstance(n, ast.NamedExpr))
            continue
        todo.extend(ast.iter_child_nodes(node))
    return bound - declared
