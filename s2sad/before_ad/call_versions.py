"""Versions of a function specialised on a call (before_ad/resolve_calls.py makes the
calls): a function value's parameter replaced by the values bound to it (the parameter
`f` of a call passing `functools.partial(g, x=x_1)` becomes `f_x`, and the body starts
with `f = functools.partial(g, x=f_x)`), `*args` by one parameter per argument (the name
reads as the tuple of them), `**kwargs` by one per keyword (read with `kwargs["k"]`,
`kwargs.get("k", d)`, `"k" in kwargs`, `len(kwargs)`, or passed on as `**kwargs`), and
keyword-only parameters made positional. A version is compiled from the function's own
syntax tree, with the lines of the function in the user's file (its `Version` record
says where it comes from), and kept for the function as long as the function's code,
defaults and closure values stay the same.
"""
import functools
import inspect
import weakref

import gast

from .. import marks
from .. import emit, syntax
from ..frontend import guards, source

#: {function: {how a call uses it: (the function's stamp, the version specialised on
#: that)}}
_versions = weakref.WeakKeyDictionary()

#: literal defaults passed as constants
LITERALS = (int, float, complex, bool, str, type(None))


def version(fn, plan, caller):
    """The version of `fn` for `plan` (see resolve_calls.ResolveCalls.specialised), made
    again when the function's code, defaults or closure values changed; `caller`, the
    source of the function whose call needs it."""
    versions = _versions.setdefault(fn, {})
    key, stamp = guards.keyed(tuple(plan)), guards.stamp(fn)
    made = versions.get(key)
    if made is None or not guards.same(made[0], stamp):
        made = versions[key] = (stamp, _Specialiser(fn, plan, caller).version())
    return made[1]


class _Specialiser:
    """Writes the version of a function for one `plan` (see ResolveCalls.specialised)."""

    def __init__(self, fn, plan, caller):
        self.fn, self.plan = fn, plan
        self.fn_src = source.capture(fn)
        self.node = self.fn_src.node
        self.taken = {n.id for n in syntax.name_nodes(self.node)} | set(
            self.fn_src.free_values())
        self.bindings = {}

    def fresh(self, base):
        k, name = 0, base
        while name in self.taken:
            k += 1
            name = f"{base}_{k}"
        self.taken.add(name)
        return name

    def version(self):
        node, src = self.node, self.fn_src
        defaults = self.current_defaults()
        params, kwonly, kw_defaults, prologue = [], [], [], []
        for step in self.plan:
            how, name = step[0], step[1]
            if how == "value":
                params.append(name)
            elif how == "default" and isinstance(defaults[name], gast.Constant):
                prologue.append(syntax.assign(name, defaults[name]))    # `n = 10`
            elif how == "default":
                kwonly.append(name)
                kw_defaults.append(defaults[name])
            elif how == "function":
                made, lines = self.function_parts(name, step)
                params += made
                prologue += lines
            elif how == "args":
                parts = [self.fresh(f"{name}_{i}") for i in range(step[2])]
                params += parts
                _replace_varargs(node, name, parts, src)
            else:
                parts = {k: self.fresh(f"{name}_{k}") for k in step[2]}
                params += parts.values()
                _replace_kwargs(node, name, parts, src)
        args = node.args
        args.posonlyargs, args.vararg, args.kwarg, args.defaults = [], None, None, []
        args.args = [_param(p) for p in params]
        args.kwonlyargs = [_param(p) for p in kwonly]
        args.kw_defaults = kw_defaults
        for a in args.args + args.kwonlyargs:
            syntax.located(a, node)
        docstring = (node.body and isinstance(node.body[0], gast.Expr)
                     and isinstance(node.body[0].value, gast.Constant))
        at = 1 if docstring else 0
        node.body[at:at] = [syntax.located(s, node.body[at] if node.body[at:] else node)
                            for s in prologue]
        node.returns = None
        fn = self.fn
        bindings = dict(self.bindings)
        for var, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
            try:
                bindings.setdefault(var, cell.cell_contents)
            except ValueError:
                pass
        filename = f"<s2sad: {node.name}, specialised from {src.filename}:{src.first_line}>"
        made = emit.compile_functions([node], bindings, fn, filename)[0]
        made.__qualname__ = fn.__qualname__
        marks.RECORD.put(made, Version(node, src, self.plan))
        return made

    def current_defaults(self):
        """{parameter: an expression of its default}: the function's defaults as they are
        now (`__defaults__`, `__kwdefaults__`), which may not be those its source says."""
        out = {}
        for p in inspect.signature(self.fn).parameters.values():
            if p.default is not p.empty:
                out[p.name] = (syntax.const(p.default) if type(p.default) in LITERALS
                               else self.bind(f"{p.name}_default", p.default))
        return out

    def function_parts(self, name, step):
        """(parameters, statements) that bind `name` to the function value of `step`
        (see `function_step`): `name = partial(value, name_0, name_k=name_k)`, after the
        statements that bind those of its values that are function values themselves."""
        _, _, value, nargs, keywords, nested = step
        nested = dict(nested)
        params, lines, parts = [], [], []
        for key in [*range(nargs), *keywords]:
            part = self.fresh(f"{name}_{key}")
            if key in nested:
                made, inner = self.function_parts(part, nested[key])
                params += made
                lines += inner
            else:
                params.append(part)
            parts.append(part)
        lines.append(self.function_value(name, value, parts[:nargs],
                                         dict(zip(keywords, parts[nargs:]))))
        return params, lines

    def function_value(self, name, value, parts, named):
        """`name = value_name` or `name = partial(value_name, *parts, **named)`."""
        callee = self.bind(getattr(value, "__name__", name), value)
        marks.PRIM.put(callee, value)
        if not parts and not named:
            return syntax.assign(name, callee)
        partial = self.bind("partial", functools.partial)
        marks.PRIM.put(partial, functools.partial)
        return syntax.assign(name, syntax.call(
            partial, [callee] + [syntax.name(p) for p in parts],
            [gast.keyword(arg=k, value=syntax.name(p)) for k, p in named.items()]))

    def bind(self, base, obj):
        for bound, known in self.bindings.items():
            if known is obj:
                return syntax.name(bound)
        name = self.fresh(base if base.isidentifier() else "function")
        self.bindings[name] = obj
        return syntax.name(name)


class Version:
    """Where a specialised version's source comes from (see `source.capture`)."""

    def __init__(self, node, src, plan):
        self.node, self.src, self.plan = node, src, plan

    def source(self, fn, copy=True):
        return self.src.of(fn, self.node, copy)

    def describe(self):
        how = [f"{step[1]}={getattr(step[2], '__name__', step[2])}" if step[0] == "function"
               else f"*{step[1]} of {step[2]} values" if step[0] == "args"
               else f"**{step[1]} with {', '.join(step[2]) or 'no keys'}"
               for step in self.plan if step[0] in ("function", "args", "kwargs")]
        return (f"line {self.src.lineno(self.node)}, specialised for the call"
                + (f" ({'; '.join(how)})" if how else ""))


def _param(name):
    p = syntax.name(name)
    p.ctx = gast.Param()
    return p


def _loads(node, name):
    return [n for n in syntax.walk(node) if isinstance(n, gast.Name) and n.id == name
            and isinstance(n.ctx, gast.Load)]


def _refuse_rebinding(node, name, src, what):
    for n in syntax.walk(node):
        if isinstance(n, gast.Name) and n.id == name and not isinstance(
                n.ctx, (gast.Load, gast.Param)):
            raise src.syntax_error(n, f"{what} {name!r} is assigned in {node.name}(); "
                                      "s2sad reads it as the arguments of the call. Give "
                                      "the new value another name")


def _replace_varargs(node, name, parts, src):
    """`*name` becomes the parameters `parts`: a read of `name` is the tuple of them,
    `f(*name)` passes them one by one."""
    _refuse_rebinding(node, name, src, "the *args parameter")
    for call in [n for n in syntax.walk(node) if isinstance(n, gast.Call)]:
        spliced = []
        for a in call.args:
            if isinstance(a, gast.Starred) and syntax.is_name(a.value, name):
                spliced += [syntax.located(syntax.name(p), a) for p in parts]
            else:
                spliced.append(a)
        call.args = spliced
    for n in _loads(node, name):
        elts = [syntax.located(syntax.name(p), n) for p in parts]
        _swap(node, n, syntax.located(syntax.tuple_(elts), n))


def _replace_kwargs(node, name, parts, src):
    """`**name` becomes the parameters `parts` ({key: parameter}): `name["k"]`,
    `name.get("k", d)`, `"k" in name`, `len(name)` and `f(**name)` read them; any other
    use is refused."""
    _refuse_rebinding(node, name, src, "the **kwargs parameter")
    for n in list(syntax.walk(node)):
        if isinstance(n, gast.Call):
            keywords = []
            for k in n.keywords:
                if k.arg is None and syntax.is_name(k.value, name):
                    keywords += [gast.keyword(arg=key, value=syntax.located(
                        syntax.name(p), k.value)) for key, p in parts.items()]
                else:
                    keywords.append(k)
            n.keywords = keywords
    uses = _loads(node, name)
    parents = {id(c): p for p in syntax.walk(node) for c in gast.iter_child_nodes(p)}
    for n in uses:
        parent = parents.get(id(n))
        grand = parents.get(id(parent))
        new = old = None
        if isinstance(parent, gast.Subscript) and _key(parent.slice) is not None:
            key = _key(parent.slice)
            if key not in parts:
                raise src.syntax_error(parent, f"{name}[{key!r}] is not given in this call "
                                               f"(it gives {sorted(parts) or 'none'})")
            new, old = syntax.name(parts[key]), parent
        elif (isinstance(parent, gast.Attribute) and parent.attr == "get"
              and isinstance(grand, gast.Call) and grand.func is parent and grand.args
              and _key(grand.args[0]) is not None and not grand.keywords):
            key = _key(grand.args[0])
            default = grand.args[1] if len(grand.args) > 1 else syntax.const(None)
            new, old = (syntax.name(parts[key]) if key in parts else default), grand
        elif (isinstance(parent, gast.Compare) and len(parent.ops) == 1
              and isinstance(parent.ops[0], (gast.In, gast.NotIn))
              and parent.comparators[0] is n and _key(parent.left) is not None):
            inside = _key(parent.left) in parts
            new = syntax.const(inside if isinstance(parent.ops[0], gast.In) else not inside)
            old = parent
        elif (isinstance(parent, gast.Call) and syntax.is_name(parent.func, "len")
              and parent.args == [n]):
            new, old = syntax.const(len(parts)), parent
        if new is None:
            raise src.syntax_error(n, (
                f"s2sad reads the **kwargs parameter {name!r} with {name}['key'], "
                f"{name}.get('key', default), 'key' in {name}, len({name}) or passes it on "
                f"as **{name}; write this use of {name!r} in one of those forms"))
        _swap(node, old, syntax.located(new, old))


def _key(e):
    return e.value if isinstance(e, gast.Constant) and isinstance(e.value, str) else None


def _swap(tree, old, new):
    """Put `new` where `old` is in `tree`."""
    for parent in syntax.walk(tree):
        for field, value in gast.iter_fields(parent):
            if value is old:
                setattr(parent, field, new)
                return
            if isinstance(value, list):
                for i, v in enumerate(value):
                    if v is old:
                        value[i] = new
                        return
