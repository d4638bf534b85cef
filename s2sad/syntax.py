"""The AST toolkit: the one place where gast nodes are built, walked and printed.

gast changes its node set between versions; building every node here, with keyword
arguments or by parsing a snippet, keeps the rest of s2sad independent of that.
"""
import ast
import copy
import sys

import gast

from . import marks

COMMENT = "__s2s_comment__:"


def name(id, store=False):
    # (what `gast.Name(...)` makes, in a third of its time: its __init__ is Python code,
    # and the passes make thousands of names per transform)
    node = _new(gast.Name)
    node.__dict__.update(id=id, ctx=_new(gast.Store if store else gast.Load),
                         annotation=None, type_comment=None)
    return node


def const(value):
    node = _new(gast.Constant)
    node.__dict__.update(value=value, kind=None)
    return node


def _new(kind):
    return kind.__new__(kind)


def atom(value):
    """A name (given as str) or a constant (anything else) as an expression node."""
    return name(value) if isinstance(value, str) else const(value)


def assign(target, value):
    target = name(target, store=True) if isinstance(target, str) else target
    return gast.Assign(targets=[target], value=value, type_comment=None)


def delete(names):
    return gast.Delete(targets=[gast.Name(id=n, ctx=gast.Del(), annotation=None,
                                          type_comment=None) for n in names])


def expr_stmt(value):
    return gast.Expr(value=value)


def comment(text):
    """A statement that `emit` turns into the line comment `# text`."""
    return expr_stmt(const(COMMENT + text))


def is_comment(stmt):
    """Whether `stmt` is one that `comment` made."""
    value = getattr(stmt, "value", None)
    return (isinstance(stmt, gast.Expr) and isinstance(value, gast.Constant)
            and str(value.value).startswith(COMMENT))


def marker(kind):
    """A placeholder statement that a later pass replaces; `kind` says which."""
    stmt = gast.Pass()
    marks.MARKER.put(stmt, kind)
    return stmt


def tuple_(elts, store=False):
    return gast.Tuple(elts=list(elts), ctx=gast.Store() if store else gast.Load())


def call(func, args=(), keywords=()):
    func = name(func) if isinstance(func, str) else func
    return gast.Call(func=func, args=list(args), keywords=list(keywords))


def attribute(value, attr):
    value = name(value) if isinstance(value, str) else value
    return gast.Attribute(value=value, attr=attr, ctx=gast.Load())


def binop(left, op, right):
    return gast.BinOp(left=left, op=op, right=right)


def unary(op, operand):
    return gast.UnaryOp(op=op, operand=operand)


def not_(operand):
    return unary(gast.Not(), operand)


def if_(test, body, orelse=None):
    """An `if`; the statement lists are used as given (not copied), so a pass can keep
    appending to a branch. `emit` fills empty bodies with `pass`."""
    return gast.If(test=test, body=body, orelse=[] if orelse is None else orelse)


def for_(target, iter, body):
    target = name(target, store=True) if isinstance(target, str) else target
    return gast.For(target=target, iter=iter, body=body, orelse=[], type_comment=None)


def while_(test, body):
    return gast.While(test=test, body=list(body), orelse=[])


def ret(value):
    return gast.Return(value=value)


_DEF = gast.parse("def _():\n    pass").body[0]     # the fields of a `def` in this gast


def function(fname, params, body, like=None):
    """A `def` with positional parameters `params`; `like` lends its full signature."""
    if like is not None:
        args = copied(like.args)
    else:
        args = gast.arguments(args=[name(p, store=False) for p in params], posonlyargs=[],
                              vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None,
                              defaults=[])
        for a in args.args:
            a.ctx = gast.Param()
    node = copied(_DEF)
    node.name = fname
    node.args = args
    node.body = list(body)
    return node


def guard(tests, fallback):
    """`if test or ...: return fallback`, from the tests' source: the start of generated
    code specialised on its arguments, whose `fallback` (see `passing_on`) runs another
    version."""
    test = parse_expr(" or ".join(tests))
    marks.TESTS.put(test, list(tests))      # emitted as written (see emit.to_source)
    return if_(test, [gast.Return(value=fallback)])


def passing_on(func, args):
    """`func(a, b, *rest, k=k, **kw)`: a call of `func` with the parameters `args` (a
    gast.arguments) as the function received them."""
    positional = [name(a.id) for a in args.posonlyargs + args.args]
    if args.vararg is not None:
        positional.append(gast.Starred(value=name(args.vararg.id), ctx=gast.Load()))
    keywords = [gast.keyword(arg=a.id, value=name(a.id)) for a in args.kwonlyargs]
    if args.kwarg is not None:
        keywords.append(gast.keyword(arg=None, value=name(args.kwarg.id)))
    return call(func, positional, keywords)


def parse_expr(src):
    return gast.parse(src, mode="eval").body


def parse(src):
    """`gast.parse(src)`, in a third of its time: the `ast` tree converted in one visit,
    as `gast.ast_to_gast` converts it."""
    return _from_ast(ast.parse(src))


_LOCATION = ("lineno", "col_offset", "end_lineno", "end_col_offset")
_TYPE_PARAMS = () if sys.version_info >= (3, 12) else (
    gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)     # (gast has them before)


def _from_ast(node):
    values = node.__dict__
    name = type(node).__name__
    if name == "Name":
        new = gast.Name(id=node.id, ctx=_from_ast(node.ctx), annotation=None,
                        type_comment=None)
    elif name == "arg":
        new = gast.Name(id=node.arg, ctx=gast.Param(), annotation=_converted(
            node.annotation), type_comment=node.type_comment)
    else:
        kind = getattr(gast, name)
        new = kind.__new__(kind)
        fields = new.__dict__
        for field in node._fields:
            if field in values:
                fields[field] = _converted(values[field])
        if kind in _TYPE_PARAMS:
            fields["type_params"] = []
        elif name == "ExceptHandler" and node.name:
            fields["name"] = gast.Name(id=node.name, ctx=gast.Store(), annotation=None,
                                       type_comment=None)
        elif name in ("TypeVar", "TypeVarTuple", "ParamSpec") and sys.version_info < (3, 13):
            fields["default_value"] = None
    for attribute in _LOCATION:
        if attribute in values:
            setattr(new, attribute, values[attribute])
    return new


def _converted(value):
    if isinstance(value, ast.AST):
        return _from_ast(value)
    if type(value) is list:
        return [_converted(v) for v in value]
    return value


def is_name(node, id=None):
    return isinstance(node, gast.Name) and (id is None or node.id == id)


def is_atom(node):
    return isinstance(node, (gast.Name, gast.Constant))


def receiver_root(e):
    """The name a method's receiver is reached from, through attributes, indexes and
    method calls (`h` for `h.T`, `y[1:]`, `a.view()`, `q.reshape(-1)`), or None."""
    while True:
        if isinstance(e, (gast.Attribute, gast.Subscript)):
            e = e.value
        elif isinstance(e, gast.Call) and isinstance(e.func, gast.Attribute):
            e = e.func.value
        else:
            return e.id if isinstance(e, gast.Name) else None


def counter_offset(e, counter, defs):
    """`k` when the index `e` is `counter + k` or `counter - k` (also through a name
    with one definition in `defs`, {name: [values]}), else None."""
    if isinstance(e, gast.Name) and e.id != counter and len(defs.get(e.id, [])) == 1:
        e = defs[e.id][0]
    if is_name(e, counter):
        return 0
    if (isinstance(e, gast.BinOp) and isinstance(e.op, (gast.Add, gast.Sub))
            and is_name(e.left, counter) and isinstance(e.right, gast.Constant)
            and type(e.right.value) is int):
        return e.right.value if isinstance(e.op, gast.Add) else -e.right.value
    return None


def as_store(target):
    """A copy of the assignment target `target` (read as an expression) to store into:
    its names stored, the base and index of a subscript read."""
    if isinstance(target, (gast.Tuple, gast.List)):
        return type(target)(elts=[as_store(e) for e in target.elts], ctx=gast.Store())
    t = copied(target)
    t.ctx = gast.Store()
    for n in walk(t.value if isinstance(t, gast.Subscript) else t):
        if hasattr(n, "ctx") and n is not t:
            n.ctx = gast.Load()
    return t


def located(new, old):
    """`new` with the source location of `old`; returns `new`."""
    for attr in ("lineno", "col_offset", "end_lineno", "end_col_offset"):
        if hasattr(old, attr):
            setattr(new, attr, getattr(old, attr))
    return new


def located_within(new, old):
    """`new`, and each expression or statement in it that has no location yet (the nodes a
    pass made), with the source location of `old`; returns `new`."""
    for n in walk(new):
        if n is new or isinstance(n, (gast.expr, gast.stmt)) and not hasattr(n, "lineno"):
            located(n, old)
    return new


#: Fields that never hold a node, and those that hold no name either (contexts and
#: operators), left out by `walk` and `name_nodes`; the fields of each class they visit.
_SCALARS = frozenset({"id", "attr", "arg", "kind", "type_comment", "conversion", "is_async",
                      "simple", "level", "module"})
_NAMELESS = _SCALARS | {"ctx", "op", "ops"}
_WALKED, _NAMED = {gast.Constant: ()}, {gast.Constant: ()}    # a constant holds no node


def walk(node):
    """`gast.walk(node)`, in the same order (breadth first), faster: the passes walk
    statements thousands of times per transform. What a field holds is queued without
    a test but for a number or string, and what is not a node is then passed over."""
    todo = [node]
    AST, walked, atoms = gast.AST, _WALKED, _ATOMIC
    for n in todo:
        kind = n.__class__
        fields = walked.get(kind)
        if fields is None:
            if not isinstance(n, AST):
                continue
            fields = _walked(kind)
        if fields:
            get = n.__dict__.get
            for field in fields:
                value = get(field)
                if value.__class__ is list:
                    todo.extend(value)
                elif value.__class__ not in atoms:
                    todo.append(value)
        yield n


def _walked(kind):
    """The fields of a node of type `kind` that may hold nodes (kept in `_WALKED`)."""
    fields = _WALKED[kind] = tuple(f for f in kind._fields if f not in _SCALARS)
    return fields


def children(node):
    """`list(gast.iter_child_nodes(node))`, faster (see `walk`)."""
    kind = type(node)
    fields = _WALKED.get(kind)
    if fields is None:
        fields = _walked(kind)
    out, get, AST = [], node.__dict__.get, gast.AST
    for field in fields:
        value = get(field)
        if type(value) is list:
            out.extend([v for v in value if isinstance(v, AST)])
        elif isinstance(value, AST):
            out.append(value)
    return out


def name_nodes(node):
    """The `Name` nodes of `node`, in the order of `walk`, which this visits only the
    nodes that may hold one of (not contexts, operators, or a name's own fields). What
    a field holds is queued without a test: what is not a node (None, a string, a
    number) has no fields to visit."""
    out, todo = [], [node]
    Name, named = gast.Name, _NAMED
    for n in todo:
        kind = type(n)
        if kind is Name:
            out.append(n)
            annotation = n.__dict__.get("annotation")
            if annotation is not None:
                todo.append(annotation)
            continue
        fields = named.get(kind)
        if fields is None:
            fields = named[kind] = tuple(f for f in n._fields if f not in _NAMELESS) \
                if isinstance(n, gast.AST) else ()
        if fields:
            get = n.__dict__.get
            for field in fields:
                value = get(field)
                if type(value) is list:
                    todo.extend(value)
                elif value is not None:
                    todo.append(value)
    return out


def values(node):
    """The nodes of `node` in the order of `walk` but for contexts and operators (those
    `name_nodes` goes through), as a list: two fifths fewer nodes than `walk` for
    code that looks for names and calls."""
    out, todo = [], [node]
    AST, valued = gast.AST, _VALUED
    for n in todo:
        kind = type(n)
        fields = valued.get(kind)
        if fields is None:
            if not isinstance(n, AST):
                continue
            fields = _valued(kind)
        out.append(n)
        if fields:
            get = n.__dict__.get
            for field in fields:
                value = get(field)
                if type(value) is list:
                    todo.extend(value)
                elif value is not None:
                    todo.append(value)
    return out


_VALUED = {gast.Constant: ()}


def _valued(kind):
    """The fields of a node of type `kind` that `values` visits (kept in `_VALUED`)."""
    fields = _VALUED[kind] = tuple(f for f in kind._fields if f not in _NAMELESS)
    return fields


def statements(node):
    """The statements of `node` (`node` too, if one), in the order of `walk`, which this
    visits no expression for: statements are only ever in `body` and `orelse` lists
    (fence refuses try, with and match)."""
    out, todo = [], [node]
    for n in todo:
        if isinstance(n, gast.stmt):
            out.append(n)
        for field in ("body", "orelse"):
            inner = getattr(n, field, None)
            if type(inner) is list:
                todo.extend(inner)
    return out


def names_loaded(node):
    return [n.id for n in name_nodes(node) if type(n.ctx) is gast.Load]


def names_stored(node):
    return [n.id for n in name_nodes(node) if type(n.ctx) in (gast.Store, gast.Param)]


_ATOMIC = frozenset({str, int, float, bool, complex, bytes, type(None)})


def copied(node):
    """`copy.deepcopy(node)` for a tree, four times as fast: the passes copy expressions
    thousands of times per transform."""
    return _copied(node, {})


def loaded(target):
    """A copy of the assignment target `target` read instead of written (every `ctx` a
    Load): `x`, `x[i]`, `a.b` on the right of a statement."""
    out = copied(target)
    for n in walk(out):
        if hasattr(n, "ctx"):
            n.ctx = gast.Load()
    return out


def _copied(x, memo):
    # a function of its own, not a closure calling itself: that would be a cycle of
    # references, left for the garbage collector, at each copy
    if type(x) in _ATOMIC:
        return x
    done = memo.get(id(x))
    if done is not None:
        return done
    if isinstance(x, gast.AST):
        kind = type(x)
        new = memo[id(x)] = kind.__new__(kind)     # (gast's __init__ is Python code)
        fields = new.__dict__
        for k, v in x.__dict__.items():
            fields[k] = v if type(v) in _ATOMIC else _copied(v, memo)
        return new
    if type(x) is list:
        new = memo[id(x)] = []
        new.extend([_copied(v, memo) for v in x])
        return new
    return _copied_value(x, memo)


def _copied_value(x, memo):
    """A copy of `x`, which a node holds and is no node: a tuple, dict or set is copied;
    any other object (a function, a class, an instance of the user's classes, an array
    that generated code refers to as a constant) is the program's own, and the copy of
    the node refers to it too: a deep copy of it would be a snapshot that the user's
    later writes into the object (`model.w[0] = 2.0`) cannot reach."""
    if isinstance(x, (tuple, dict, set, frozenset)):
        return copy.deepcopy(x, memo)
    return x


def substitute(expr, mapping):
    """A copy of `expr` with each name in `mapping` replaced by (a copy of) its node,
    made in one visit (the rules' templates are instantiated thousands of times)."""
    return _substituted(expr, mapping, {})


def _substituted(x, mapping, memo):
    # `_copied`, but a name of `mapping` is a new copy of its node
    if type(x) in _ATOMIC:
        return x
    if type(x) is gast.Name and x.id in mapping:
        return copied(mapping[x.id])
    done = memo.get(id(x))
    if done is not None:
        return done
    if isinstance(x, gast.AST):
        kind = type(x)
        new = memo[id(x)] = kind.__new__(kind)
        fields = new.__dict__
        for k, v in x.__dict__.items():
            fields[k] = v if type(v) in _ATOMIC else _substituted(v, mapping, memo)
        return new
    if type(x) is list:
        new = memo[id(x)] = []
        new.extend([_substituted(v, mapping, memo) for v in x])
        return new
    return _copied_value(x, memo)


def rebuilt(node, f, values_only=False):
    """`node` with each child `c` replaced by `f(c)`, in place, as `gast.NodeTransformer`
    does: the transformations the passes run thousands of times, without a class each.
    (The fields that never hold a node, see `walk`, are not looked at; with
    `values_only`, nor contexts and operators, the fields `values` leaves out: `f` then
    never sees one.)"""
    kind = type(node)
    fields = (_VALUED if values_only else _WALKED).get(kind)
    if fields is None:
        fields = _valued(kind) if values_only else _walked(kind)
    get = node.__dict__.get
    for field in fields:
        value = get(field)
        if type(value) is list:
            value[:] = [f(v) if isinstance(v, gast.AST) else v for v in value]
        elif isinstance(value, gast.AST):
            setattr(node, field, f(value))
    return node


def replace_loads(node, name, make):
    """`node` where each read of the name `name` below it is `make()`, in place (what
    `rebuilt` makes, calling itself down the tree, in a fraction of its time)."""
    todo, AST, Name, Load = [node], gast.AST, gast.Name, gast.Load
    for n in todo:
        kind = type(n)
        fields = _WALKED.get(kind)
        if fields is None:
            fields = _walked(kind)
        values = n.__dict__
        for field in fields:
            value = values.get(field)
            if type(value) is list:
                for i, v in enumerate(value):
                    if type(v) is Name:
                        if v.id == name and type(v.ctx) is Load:
                            value[i] = make()
                    elif isinstance(v, AST):
                        todo.append(v)
            elif type(value) is Name:
                if value.id == name and type(value.ctx) is Load:
                    setattr(n, field, make())
            elif isinstance(value, AST):
                todo.append(value)
    return node


def blocks(stmts, functions=True):
    """`stmts` and every statement list nested in it (not inside nested function
    definitions unless `functions`)."""
    yield stmts
    for s in stmts:
        if not functions and isinstance(s, gast.FunctionDef):
            continue
        for field in ("body", "orelse"):
            inner = getattr(s, field, None)
            if isinstance(inner, list):
                yield from blocks(inner, functions)


def always_raises(block) -> bool:
    """Whether every path through `block` ends in a `raise` (a `return` in it may be
    reached: not so)."""
    for s in block:
        if _returns(s):
            return False
        if isinstance(s, gast.Raise) or isinstance(s, gast.If) and always_raises(
                s.body) and always_raises(s.orelse):
            return True
    return False


def _returns(node):
    return isinstance(node, gast.Return) or any(
        _returns(n) for n in gast.iter_child_nodes(node) if not isinstance(n, gast.FunctionDef))


def stores(node, name):
    """Whether `node` assigns (or binds as a parameter or loop target) `name`."""
    return any(n.id == name and not isinstance(n.ctx, gast.Load) for n in name_nodes(node))


class NodeMap:
    """A mapping keyed by the identity of AST nodes. It keeps its keys alive: a dict
    keyed by `id(node)` would hand a freed node's entry to a new node that happens to
    get the same address, and the generated source would depend on the allocator."""

    def __init__(self, items=()):
        self._items = {}
        for node, value in items:
            self[node] = value

    def __setitem__(self, node, value):
        self._items[id(node)] = (node, value)

    def __getitem__(self, node):
        return self._items[id(node)][1]

    def __contains__(self, node):
        return id(node) in self._items

    def get(self, node, default=None):
        entry = self._items.get(id(node))
        return default if entry is None else entry[1]

    def values(self):
        return [value for _, value in self._items.values()]

    def __len__(self):
        return len(self._items)


def unparse(node):
    """The source of one expression or statement (see codegen.emit for functions)."""
    return ast.unparse(gast.gast_to_ast(node))


def in_order(stmts, functions=False):
    """The statements of `stmts` and of the blocks nested in them, in source order (not
    inside nested functions, unless `functions`)."""
    for s in stmts:
        yield s
        for block in ("body", "orelse"):
            if functions or not isinstance(s, gast.FunctionDef):
                yield from in_order(getattr(s, block, []), functions)


def replaced(node, swap):
    """A copy of `node` with the subtrees whose id is in `swap` replaced."""
    if id(node) in swap:
        return swap[id(node)]
    new = copy.copy(node)
    for field, value in gast.iter_fields(node):
        if isinstance(value, gast.AST):
            setattr(new, field, replaced(value, swap))
        elif isinstance(value, list):
            setattr(new, field, [replaced(v, swap) if isinstance(v, gast.AST) else v
                                 for v in value])
    return new
