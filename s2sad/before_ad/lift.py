"""Lift: nested functions and lambdas become functions of their own (lambda lifting).

Takes a fenced function and leaves one without nested `def` or `lambda`. Each nested
function that is only called (`g(a)`, not returned, stored or passed on) becomes a
separate Python function whose free variables from the enclosing function are extra
parameters, after its own; each call `g(a)` becomes `g(a, x)`. The rest of the
compiler then treats `g` like any function defined at module level: reverse mode calls
its own `g_vjp`, forward mode its `g_jvp`, each compiled from the lifted source, whose
lines are still the lines of the user's file.

A closure reads its free variables when it is called, not when it is defined; the call
passes the values they have at that moment, so the two agree. Default values are
computed where the function is defined (`def g(t, k=2.0 * x)`: `g_k = 2.0 * x` in its
place), and a call that leaves the parameter passes that value.

>>> from s2sad.before_ad.lift import Lift
>>> print(show(Lift, '''
... def f(x):
...     def g(t):
...         return t * x
...     square = lambda t: t * t
...     return g(x) + square(x)
... '''))
def g(t, x):
    return t * x
<BLANKLINE>
def square(t):
    return t * t
<BLANKLINE>
def f(x):
    return g(x, x) + square(x)
"""
import functools
import weakref
from typing import NamedTuple

import gast

from .. import emit, marks, syntax
from ..frontend import guards

#: user function -> (its stamp, lifted functions, signatures)
_lifted = weakref.WeakKeyDictionary()

# methods that change a list, dict or array in place
MUTATORS = {"append", "extend", "insert", "pop", "remove", "clear", "update", "sort",
            "reverse", "setdefault", "popitem", "fill", "resize", "itemset", "put"}


def run(fn, ctx):
    """The pass; the lifted functions' definitions are `ctx.lifted_defs`."""
    lift = Lift(ctx.src, ctx.namer, ctx.bind)
    fn = lift.run(fn)
    ctx.lifted_defs = [marks.RECORD.of(f).node for f in lift.functions.values()]
    return fn


class Lift:
    """See the module docstring."""

    def __init__(self, src, namer, bind=None):
        self.src = src
        self.namer = namer
        self.bind = bind        # the name generated code reads an object by
        self.functions = {}     # name -> lifted Python function

    def run(self, fn):
        definitions = self.definitions(fn)
        if not definitions:
            return fn
        self.check_uses(fn, definitions)
        made = _lifted.get(self.src.fn)
        if made is None or not guards.same(made[0], guards.stamp(self.src.fn)):
            # (lifted again when the function's code or closure values changed)
            made = _lifted[self.src.fn] = (guards.stamp(self.src.fn),
                                           *self.lift(definitions, fn))
        _, self.functions, signatures = made
        _rewrite_calls(fn, signatures, self.src)
        _mark_calls(fn, self.functions)
        self.pass_as_values(fn, definitions, signatures)
        # each definition gives way to its default values, computed where it was
        kept = {id(stmt): _defaults(node, signatures[name].defaults)
                for name, (stmt, node) in definitions.items()}
        for block in syntax.blocks(fn.body, functions=False):
            if any(id(s) in kept for s in block):
                block[:] = [d for s in block for d in kept.get(id(s), [s])] or [gast.Pass()]
        return fn

    def definitions(self, fn):
        """{name: (defining statement, FunctionDef or Lambda)} of the nested functions
        of `fn`, checking that each is a form that can be lifted."""
        found = {}
        own = list(_own(fn.body))
        if not any(isinstance(n, (gast.FunctionDef, gast.Lambda)) for n in own):
            return found
        assigned_lambdas = set()
        arguments = _arguments(fn)
        taken = ({n.id for n in syntax.name_nodes(fn)} | set(self.src.free_values())
                 | {n.name for n in own if isinstance(n, gast.FunctionDef)})
        for n in own:
            if isinstance(n, gast.FunctionDef):
                self.check_def(n)
                self.define(found, n.name, n, n)
            elif (isinstance(n, gast.Assign) and isinstance(n.value, gast.Lambda)
                  and len(n.targets) == 1 and isinstance(n.targets[0], gast.Name)):
                self.check_def(n.value)
                self.define(found, n.targets[0].id, n, n.value)
                assigned_lambdas.add(id(n.value))
        for n in own:
            if isinstance(n, gast.Lambda) and id(n) not in assigned_lambdas:
                if id(n) not in arguments:
                    raise self.src.syntax_error(
                        n, "a lambda is supported where it is passed to a function "
                           "(integrate(lambda t: x * t, 0.0, 1.0)) or assigned to a name "
                           "that is called or passed on; here it is returned or stored. "
                           "Pass the values it needs to the code that calls it instead")
                self.check_def(n)
                name = next(c for c in ["lam"] + [f"lam_{k}" for k in range(1, len(taken) + 2)]
                            if c not in taken)
                taken.add(name)
                self.define(found, name, n, n)
        if not found:
            return found
        params = {a.id for a in _params(fn)}
        for n in _own(fn.body):
            if (isinstance(n, gast.Name) and n.id in found and not isinstance(n.ctx, gast.Load)
                    and not _defines(found[n.id][0], n)):
                raise self.src.syntax_error(
                    n, f"{n.id!r} names a nested function and is assigned again; give the "
                       "function and the value different names")
        clash = sorted(params & set(found))
        if clash:
            raise self.src.syntax_error(found[clash[0]][0], f"the nested function "
                                        f"{clash[0]!r} has the name of a parameter; rename "
                                        "one of them")
        return found

    def define(self, found, name, stmt, node):
        if name in found:
            raise self.src.syntax_error(
                stmt, f"the nested function {name!r} is defined twice; give each "
                      "definition its own name")
        found[name] = (stmt, node)

    def check_def(self, node):
        args = node.args
        if getattr(node, "decorator_list", None):
            raise self.src.syntax_error(
                node.decorator_list[0], "decorators on nested functions are not "
                "supported; define the function at module level")
        if args.vararg or args.kwarg:
            raise self.src.syntax_error(
                node, "nested functions and lambdas with *args or **kwargs are not "
                      "supported; list the parameters explicitly")

    def check_uses(self, fn, definitions):
        """Each use of a nested function is a direct call, after its definition."""
        called = {id(n.func) for n in syntax.walk(fn) if isinstance(n, gast.Call)}
        arguments = _arguments(fn)
        own = {id(n) for n in _own(fn.body)}
        for n in syntax.walk(fn):
            if not (isinstance(n, gast.Name) and n.id in definitions
                    and isinstance(n.ctx, gast.Load)):
                continue
            if id(n) not in called and not (id(n) in arguments and id(n) in own):
                raise self.src.syntax_error(
                    n, f"the nested function {n.id!r} is used as a value here (returned "
                       "or stored); s2sad differentiates nested functions and lambdas that "
                       "are called, or passed to a function as an argument. Pass it to the "
                       "code that calls it, or define it at module level and pass the "
                       "values it needs as arguments")
            stmt = definitions[n.id][0]
            if id(n) in own and _position(n) < _position(stmt):
                raise self.src.syntax_error(
                    n, f"{n.id!r} is called before its definition; define it first")

    def lift(self, definitions, fn):
        """{name: (lifted function, names of its extra parameters)} of the `definitions`
        of `fn`."""
        body = self.src.node.body
        comprehension_targets = {id(n) for c in _own(body) if isinstance(c, gast.comprehension)
                                 for n in syntax.walk(c.target)}
        scope = {a.id for a in _params(self.src.node)} | {   # the enclosing function's names
            n.id for n in _own(body) if isinstance(n, gast.Name)
            and not isinstance(n.ctx, gast.Load) and id(n) not in comprehension_targets}
        free = {name: _free(node) for name, (_, node) in definitions.items()}
        within = _comprehension_names(fn.body)  # a lambda reads its comprehensions' too
        extras = {name: [v for v in free[name] if (v in scope or v in within.get(id(node), ()))
                         and v not in definitions]
                  for name, (_, node) in definitions.items()}
        changed = True
        while changed:     # a function that calls a sibling passes on its extra values
            changed = False
            for name in definitions:
                for callee in [v for v in free[name] if v in definitions]:
                    for v in extras[callee]:
                        if v not in extras[name]:
                            extras[name].append(v)
                            changed = True
        for name, (_, node) in definitions.items():
            self.check_no_mutation(name, node, extras[name])
        taken = {n.id for n in syntax.name_nodes(self.src.node)} | set(self.src.free_values())
        signatures = {name: Signature([a.id for a in _params(node)], extras[name],
                                      _default_names(name, node, taken))
                      for name, (_, node) in definitions.items()}
        defs = [self.lifted_def(name, node, extras[name])
                for name, (_, node) in definitions.items()]
        for d in defs:
            _rewrite_calls(d, signatures, self.src)
        functions = self.compile(defs)
        for d in defs:
            _mark_calls(d, functions)
            marks.RECORD.put(functions[d.name], Lifted(d, self.src, signatures[d.name]))
        return functions, signatures

    def check_no_mutation(self, name, node, extras):
        """A lifted function receives the values of its free variables, so it must not
        change them in place (`lst.append(v)`, `a[i] = v`): the enclosing function's
        derivative would not see the change."""
        body = node.body if isinstance(node, gast.FunctionDef) else [node.body]
        for n in _own(body):
            target = None
            if isinstance(n, (gast.Assign, gast.AugAssign)):
                targets = n.targets if isinstance(n, gast.Assign) else [n.target]
                target = next((t.value for t in targets if isinstance(t, gast.Subscript)),
                              None)
            elif (isinstance(n, gast.Call) and isinstance(n.func, gast.Attribute)
                  and n.func.attr in MUTATORS):
                target = n.func.value
            if isinstance(target, gast.Name) and target.id in extras:
                raise self.src.syntax_error(
                    n, f"the nested function {name!r} changes {target.id!r} of the "
                       "enclosing function in place, which s2sad cannot differentiate; "
                       "return the new value from the nested function instead")

    def pass_as_values(self, fn, definitions, signatures):
        """A nested function or lambda passed as an argument (`integrate(g, a, b)`) is
        the lifted function with its extra parameters bound: `partial(g, x=x)`, the
        values they have at the call, as the closure would read them."""
        lambdas = {id(node): name for name, (stmt, node) in definitions.items()
                   if stmt is node}
        for call in [n for n in _own(fn.body) if isinstance(n, gast.Call)]:
            for holder, field in [(call.args, i) for i in range(len(call.args))] + [
                    (k, "value") for k in call.keywords]:
                a = holder[field] if isinstance(holder, list) else getattr(holder, field)
                name = lambdas.get(id(a)) or (
                    a.id if isinstance(a, gast.Name) and a.id in definitions else None)
                if name is None:
                    continue
                if signatures[name].defaults:
                    raise self.src.syntax_error(
                        a, f"the nested function {name!r} has default parameter values and "
                           "is passed as a value here; s2sad passes the values it reads from "
                           "the enclosing function, not its defaults. Define it without "
                           "defaults (the code that calls it gives every argument), or at "
                           "module level")
                value = syntax.located(syntax.name(name), a)
                marks.PRIM.put(value, self.functions[name])
                marks.LIFTED.put(value)
                extras = signatures[name].extras
                if extras:
                    partial = syntax.name(self.bind("partial", obj=functools.partial))
                    marks.PRIM.put(partial, functools.partial)
                    value = syntax.located(syntax.call(partial, [value], [
                        gast.keyword(arg=v, value=syntax.located(syntax.name(v), a))
                        for v in extras]), a)
                if isinstance(holder, list):
                    holder[field] = value
                else:
                    setattr(holder, field, value)

    def lifted_def(self, name, node, extra):
        if isinstance(node, gast.Lambda):
            body = [syntax.located(syntax.ret(syntax.copied(node.body)), node.body)]
            lifted = syntax.located(syntax.function(name, [], body, like=node), node)
        else:
            lifted = syntax.copied(node)
        args = lifted.args      # (calls pass every parameter by position: see _positional)
        args.args, args.kwonlyargs = args.args + args.kwonlyargs, []
        args.defaults, args.kw_defaults = [], []
        for v in extra:
            param = syntax.name(v)
            param.ctx = gast.Param()
            lifted.args.args.append(param)
        for a in _params(lifted):
            a.annotation = None
        lifted.returns = None
        return lifted

    def compile(self, defs):
        """The lifted definitions as Python functions (for the calls that run them
        unchanged), closing over the enclosing function's own closure values."""
        fn = self.src.fn
        code = fn.__code__
        bindings = {}
        for var, cell in zip(code.co_freevars, fn.__closure__ or ()):
            try:
                bindings[var] = cell.cell_contents
            except ValueError:
                pass
        names = ", ".join(d.name for d in defs)
        filename = f"<s2sad: {names}, lifted from {fn.__qualname__} in " \
                   f"{self.src.filename}:{self.src.first_line}>"
        compiled = emit.compile_functions(defs, bindings, fn, filename)
        for f in compiled:
            f.__qualname__ = f"{fn.__qualname__}.<locals>.{f.__name__}"
        return {f.__name__: f for f in compiled}


class Lifted:
    """Where a lifted function's source comes from: its `def` node, with line numbers
    in the user's file, for `source.capture`."""

    def __init__(self, node, src, signature):
        self.node, self.src = node, src
        self.params, self.extras = signature[:2]      # (a Signature, or a pair)

    def source(self, fn, copy=True):
        return self.src.of(fn, self.node, copy)

    def describe(self):
        extras = ", ".join(self.extras)
        return (f"nested in {self.src.name} (line {self.src.lineno(self.node)}), lifted"
                + (f": {extras} passed in" if extras else ""))



def _rewrite_calls(tree, signatures, src):
    """`g(a)` becomes `g(a, x)` for each call in `tree` of a lifted `g` with extra
    parameter `x`, its keyword arguments bound to positions."""
    for call in [n for n in syntax.walk(tree) if isinstance(n, gast.Call)]:
        if isinstance(call.func, gast.Name) and call.func.id in signatures:
            params, extras, defaults = signatures[call.func.id]
            if any(k.arg is None for k in call.keywords):
                if defaults:
                    raise src.syntax_error(
                        call, f"{call.func.id}() has default parameter values and this call "
                              "passes **d: give the arguments by name instead (k=d['k'])")
                # `g(a, **d)`: desugar passes d's keys as keywords, resolve_calls puts them
                # in their places; the extras go by name meanwhile
                call.keywords += [syntax.located(gast.keyword(arg=v, value=syntax.name(v)), call)
                                  for v in extras]
                continue
            call.args, call.keywords = _positional(call, params, defaults, src)
            call.args += [syntax.located(syntax.name(v), call) for v in extras]


def _mark_calls(tree, functions):
    """Let the names of calls to lifted functions carry the function (`marks.PRIM`)."""
    for call in [n for n in syntax.walk(tree) if isinstance(n, gast.Call)]:
        if isinstance(call.func, gast.Name) and call.func.id in functions:
            marks.PRIM.put(call.func, functions[call.func.id])
            marks.LIFTED.put(call.func)


def _positional(call, params, defaults, src):
    """The call's arguments for `params` in order (the names holding the `defaults` of
    those it leaves); the keywords of other parameters."""
    if len(call.args) > len(params):
        raise src.syntax_error(call, f"{call.func.id}() takes {len(params)} positional "
                                     f"argument(s) but this call gives {len(call.args)}")
    args = list(call.args) + [None] * (len(params) - len(call.args))
    rest = []
    for k in call.keywords:
        if k.arg in params:
            args[params.index(k.arg)] = k.value
        else:
            rest.append(k)
    args = [syntax.located(syntax.name(defaults[p]), call) if a is None and p in defaults
            else a for p, a in zip(params, args)]
    missing = [p for p, a in zip(params, args) if a is None]
    if missing:
        raise src.syntax_error(call, f"this call of {call.func.id}() gives no value for "
                                     f"its parameter {missing[0]!r}")
    return args, rest


def _arguments(fn):
    """The ids of the nodes passed as arguments of the calls in `fn`'s own code."""
    return {id(a) for n in _own(fn.body) if isinstance(n, gast.Call)
            for a in n.args + [k.value for k in n.keywords]}


def _own(stmts):
    """The nodes of `stmts`, not descending into nested functions and lambdas (which
    are yielded themselves)."""
    todo = list(reversed(stmts))
    while todo:
        n = todo.pop()
        yield n
        if isinstance(n, gast.FunctionDef):
            todo.extend(reversed(n.decorator_list + n.args.defaults))
        elif isinstance(n, gast.Lambda):
            todo.extend(reversed(n.args.defaults))
        else:
            todo.extend(reversed(syntax.children(n)))


def _comprehension_names(stmts):
    """{id(lambda): the names the comprehensions around it bind where it is} for the
    lambdas in `stmts` (a comprehension's variables are not the function's, but a lambda
    in the comprehension reads them)."""
    found = {}

    def visit(n, bound):
        if isinstance(n, gast.Lambda):
            found[id(n)] = bound
        elif isinstance(n, (gast.ListComp, gast.SetComp, gast.GeneratorExp, gast.DictComp)):
            names = bound
            for k, g in enumerate(n.generators):
                visit(g.iter, names)        # (the first in the enclosing scope)
                names = names | {t.id for t in syntax.walk(g.target)
                                 if isinstance(t, gast.Name)}
                for test in g.ifs:
                    visit(test, names)
            for part in ("elt", "key", "value"):
                if hasattr(n, part):
                    visit(getattr(n, part), names)
        elif not isinstance(n, gast.FunctionDef):
            for child in syntax.children(n):
                visit(child, bound)
    for s in stmts:
        visit(s, frozenset())
    return found


class Signature(NamedTuple):
    """How the calls of a lifted function pass its arguments: its own `params` (the
    keyword-only ones after the others), the `extras` (values of the enclosing function it
    reads) after them, and the names holding the `defaults` of params that have one."""
    params: list
    extras: list
    defaults: dict


def _default_values(node):
    """{parameter: its default value's expression} of `node` (a FunctionDef or Lambda)."""
    args = node.args
    positional = args.posonlyargs + args.args
    values = dict(zip([a.id for a in positional[len(positional) - len(args.defaults):]],
                      args.defaults))
    values.update((a.id, d) for a, d in zip(args.kwonlyargs, args.kw_defaults)
                  if d is not None)
    return values


def _default_names(name, node, taken):
    """{parameter: the name of the enclosing function holding its default value} for
    the nested function `node` called `name` (`name_param`, made free of `taken`)."""
    out = {}
    for p in _default_values(node):
        base = f"{name}_{p}"
        out[p] = next(c for c in [base] + [f"{base}_{k}" for k in range(1, len(taken) + 2)]
                      if c not in taken)
        taken.add(out[p])
    return out


def _defaults(node, names):
    """The assignments of the default values of `node` to the `names` of
    `_default_names`, where `node` was defined."""
    values = _default_values(node)
    return [syntax.located(syntax.assign(held, syntax.copied(values[p])), values[p])
            for p, held in names.items()]


def _params(fn):
    args = fn.args
    return args.posonlyargs + args.args + args.kwonlyargs


def _free(fn):
    """The names `fn` (a FunctionDef or Lambda) and the functions nested in it read
    from enclosing scopes, in order of first appearance."""
    body = fn.body if isinstance(fn, gast.FunctionDef) else [fn.body]
    local = {a.id for a in _params(fn)}
    reads = []
    for n in _own(body):
        if isinstance(n, gast.FunctionDef):
            local.add(n.name)
            reads += _free(n)
        elif isinstance(n, gast.Lambda):
            reads += _free(n)
        elif isinstance(n, gast.Name):
            if isinstance(n.ctx, gast.Load):
                reads.append(n.id)
            else:
                local.add(n.id)
    return [v for v in dict.fromkeys(reads) if v not in local]


def _defines(stmt, name_node):
    return isinstance(stmt, gast.Assign) and stmt.targets[0] is name_node


def _position(n):
    return (getattr(n, "lineno", 0), getattr(n, "col_offset", 0))
