"""Resolve calls: each call of the user's own Python code becomes a call, by position,
of a function whose source s2sad reads.

Takes Wengert form and leaves it. Differentiating a call of a Python function needs the
function (its derivative is compiled from its source) and which argument is which of
its parameters (the derivative is taken by position). This pass finds both where the
function is a value known when compiling:

- a method: `obj.m(a)` where `obj`'s class is known (its kind: a parameter specialised
  on its class, an instance built here, `self` of a method) is `m(obj, a)`, `m` being
  the function the class defines (an instance's own attribute of that name is not
  looked for); `super().m(a)` in a method is `m(self, a)`, `m` being the function the
  class after the method's own (its `__class__`) in the MRO of `self`'s known class
  defines (also where no differentiated value is passed: `super()` runs only in the
  class);
- a function value: a name assigned a module-level function, a nested function or
  lambda (lifted), a method read from an object (`f = obj.m`), or a `functools.partial`
  of one of these (`g = functools.partial(loglik, mu=mu)`: `g(y)` is `loglik(y, mu)`),
  also in a branch or a loop, or on several paths the same way (the same function, the
  same places bound). Where a value bound may change before the call (a name with
  several versions, Wengert's copies of the function value at joins and loop ends), a
  companion name assigned beside each assignment of the function value carries it, so
  that the call reads what was bound when the value it calls was made;
- a parameter the code is specialised on the function value of (`def f(x,
  nonlinearity=np.tanh)`, a function passed or left as the default: see
  compilation.function_params; the guard tests that the argument is that function)
  and never assigned: `nonlinearity(x)` is `tanh(x)`;
- keyword arguments go to their positions (`loglik(y, mu=mu)` is `loglik(y, mu)`).

A call that passes a function value (`integrate(lambda t: x * t, 0.0, 1.0)`), gives a
keyword-only parameter, or goes to a function with `*args` or `**kwargs` calls a version
of the function specialised on the call: a function value's parameter is replaced by
the values bound to it (the lambda's `x` becomes a parameter `f_x`, and the body starts
with `f = functools.partial(lambda_, x=f_x)`, whose calls this pass resolves in turn),
`*args` by one parameter per argument (the name reads as the tuple of them), `**kwargs`
by one per keyword (read with `kwargs["k"]`, `kwargs.get("k", d)`, `"k" in kwargs`, or
passed on as `**kwargs`), and keyword-only parameters become positional. The version's
lines are the lines of the function in the user's file.

>>> print(show("resolve_calls", '''
... import functools
... def loglik(y, mu=0.0, s=1.0):
...     return -(y - mu) ** 2 / (2 * s * s)
... def f(x):
...     mu = 2.0 * x
...     g = functools.partial(loglik, mu=mu)
...     return g(x) + loglik(1.0, s=2.0, mu=mu)
... '''))
def f(x):
    mu = 2.0 * x
    t = loglik(x, mu)
    t_1 = loglik(1.0, mu, 2.0)
    y = t + t_1
    return y

>>> print(show("resolve_calls", '''
... import functools
... def scaled(a, b):
...     return a * b
... def f(x):
...     s = x
...     for i in range(3):
...         g = functools.partial(scaled, b=s)
...         s = s * x
...     return g(x)
... '''))
def f(x):
    s = x
    b = None
    for i in range(3):
        s_1 = s * x
        # path end
        b = s
        s = s_1
    y = scaled(x, b)
    return y
"""
import collections
import dataclasses
import functools
import inspect
import weakref

import gast

from .. import marks
from .. import emit, syntax
from ..analysis import operations
from ..analysis.activity import definitions, varied_names
from ..analysis.value_kinds import ValueKinds, user_class
from ..compilation import function_params, function_value
from ..frontend import callables, gradients, guards, source, structure
from ..frontend.source import MISSING, FunctionSource
from ..rules import pytrees, registry

#: {function: {how a call uses it: (the function's stamp, the version specialised on
#: that)}}
_versions = weakref.WeakKeyDictionary()

#: literal defaults passed as constants
_LITERALS = (int, float, complex, bool, str, type(None))


def run(fn, ctx):
    """The pass."""
    return ResolveCalls(ctx).run(fn)


@dataclasses.dataclass
class Known:
    """A function value known when compiling: the callable `fn` (a Python function, a
    bound method, a primitive, a partial object) with the atoms `args` and `keywords`
    bound to it first."""
    fn: object
    args: list = dataclasses.field(default_factory=list)
    keywords: dict = dataclasses.field(default_factory=dict)

    def places(self):
        """{place: atom}: the positions of `args`, then the keywords."""
        return {**dict(enumerate(self.args)), **self.keywords}

    def layout(self):
        return tuple(range(len(self.args))) + tuple(sorted(self.keywords))

    def atoms(self):
        return list(self.places().values())


class ResolveCalls:
    """See the module docstring."""

    def __init__(self, ctx):
        self.ctx, self.src = ctx, ctx.src

    def run(self, fn):
        self.kinds = ValueKinds(fn, self.src, self.ctx.param_kinds, self.ctx.param_ndims,
                                self.ctx.ndims_relied, self.ctx.int_params,
                                self.ctx.returned_kind, self.ctx.structure,
                                self.ctx.param_items)
        ops = syntax.NodeMap((s, operations.classify(s.value, self.src))
                             for _, s in definitions(fn.body))
        self.varied = varied_names(fn, self.ctx.wrt, ops)
        self.changed = False    # whether a call or a statement of `fn` changed
        params = [a.id for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs]
        self.params = [a.id for a in fn.args.posonlyargs + fn.args.args]
        self.supers = set()     # the names `t = super()` assigns whose methods are called
        #: the parameters the code is specialised on the function value of (a default
        #: `nonlinearity=np.tanh`, or a function passed), which the guard tests
        self.functions = {p: f for p, f in function_params(self.ctx.arg_types).items()
                          if p in params}
        self.fn = fn
        self.assignments = {p: [fn] for p in params}   # name -> what assigns it
        for s in syntax.statements(fn):
            targets = (s.targets if isinstance(s, gast.Assign) else
                       [s.target] if isinstance(s, gast.For) else [])
            for t in targets:
                for n in syntax.name_nodes(t):
                    self.assignments.setdefault(n.id, []).append(s)
        self.copied = {}        # name -> the names it is copied to or from
        for name, made in list(self.assignments.items()):
            for s in made:
                if _assigns(s) and isinstance(s.value, gast.Name) and (
                        s.value.id in self.assignments):
                    self.copied.setdefault(name, set()).add(s.value.id)
                    self.copied.setdefault(s.value.id, set()).add(name)
        self.positions = syntax.NodeMap((s, (block, k)) for block in syntax.blocks(fn.body)
                                        for k, s in enumerate(block))
        self.reads = collections.Counter(syntax.names_loaded(fn))
        self.known = {}         # name -> its Known, or None
        self.grouped = set()    # the names `carried` has looked at
        self.companions = {}    # assignment -> the companion assignments that go before it
        for name in list(self.assignments):
            self.known_name(name)
        for s in syntax.statements(fn):
            if isinstance(s, gast.Assign) and isinstance(s.value, gast.Attribute):
                self.property_read(s)
            if isinstance(s, (gast.Assign, gast.Expr)) and isinstance(s.value, gast.Call):
                self.resolve(s.value, s)
        for block in syntax.blocks(fn.body):
            block[:] = [c for s in block for c in self.companions.get(s, []) + [s]]
        self.changed |= any(self.companions.values())
        # the assignments of function values and companions no call reads any more
        companions = [c.targets[0].id for made in self.companions.values() for c in made]
        defining = {name: self.assignments[name] for name in companions + sorted(
            self.supers) + [name for name, known in self.known.items() if known is not None]}
        while True:     # (`fn` as `self.reads` counted it, unless something changed)
            read = set(syntax.names_loaded(fn)) if self.changed else set(self.reads)
            unread = {id(s) for name, made in defining.items() if name not in read
                      for s in made}
            if not unread:
                if not self.changed:    # (the passes after it need not compute them again)
                    self.ctx.reuse(kinds=self.kinds, ops=ops, varied=self.varied)
                self.ctx.rewrote = self.changed
                return fn
            self.changed = True
            defining = {name: made for name, made in defining.items() if name in read}
            for block in syntax.blocks(fn.body):
                if any(id(s) in unread for s in block):
                    block[:] = [s for s in block if id(s) not in unread] or [gast.Pass()]

    # -- function values ------------------------------------------------------------------
    def known_value(self, e):
        """The `Known` function value of the atom or right-hand side `e`, or None."""
        if isinstance(e, gast.Name) and e.id in self.functions and len(
                self.assignments.get(e.id, ())) == 1:
            return Known(self.functions[e.id])   # a parameter specialised on its function
        if isinstance(e, gast.Name) and e.id in self.assignments:
            return self.known_name(e.id)
        if isinstance(e, gast.Attribute) and isinstance(e.value, gast.Name):
            method = self.method(e.value, e.attr) or self.super_method(e)
            if method is not None:
                return method
        if isinstance(e, gast.Attribute):
            found, path = self.kinds.structure_at(e)     # a function stored in a field
            if (path is not None and f"{path}()" in found and not self.handed_on(path)
                    and e.attr not in self.stored_attrs):
                return Known(found[f"{path}()"])
        if isinstance(e, gast.Call) and self.prim(e.func) is functools.partial and e.args:
            inner = self.known_value(e.args[0])
            if inner is None or any(k.arg is None for k in e.keywords):
                return None
            return Known(inner.fn, inner.args + e.args[1:],
                         {**inner.keywords, **{k.arg: k.value for k in e.keywords}})
        if isinstance(e, (gast.Name, gast.Attribute)):
            obj = self.prim(e)
            if obj is not MISSING and callable(obj) and not isinstance(obj, type):
                call = getattr(type(obj), "__call__", None)
                if inspect.isfunction(call) and user_class(type(obj)):
                    # an object of the user's class called: its class's __call__, which
                    # may be replaced (`Model.__call__ = ...`) as the object stays
                    self.ctx.assume([guards.guard(("object", type(obj)), ("__call__",),
                                                  call)])
                return Known(obj)
        return None

    @functools.cached_property
    def stored_attrs(self):
        """The names of the attributes the function stores (`self.act = f`)."""
        return {n.attr for n in syntax.walk(self.fn)
                if isinstance(n, gast.Attribute) and not isinstance(n.ctx, gast.Load)}

    def handed_on(self, path):
        """Whether the parameter `path` is read from is handed to code that may change
        what its fields hold (see structure.handed_on)."""
        root = structure.steps(path)[0]
        return root in self.kinds.params and structure.handed_on(self.fn, root, self.ctx.structure)

    def known_name(self, name):
        """The `Known` function value the local `name` holds, or None: the value it is
        assigned (`direct`), or one whose bound values companion names carry (`carried`)."""
        if name not in self.known:
            self.known[name] = None     # a function value made from itself is not known
            known = self.direct(name)
            if known is not None:
                self.known[name] = known
            elif name not in self.grouped:
                self.carried(name)
        return self.known[name]

    def direct(self, name):
        """The `Known` value `name` is assigned, if the values bound keep theirs wherever
        it is read: it is assigned once, from `stable` values, or it is read only in the
        statements that follow its one assignment (besides Wengert's `None` on the paths
        that do not bind it) in its block, and none of them assigns a name bound before
        the last read."""
        made = [s for s in self.assignments[name] if not (_assigns(s) and _placeholder(s))]
        if len(made) != 1 or not _assigns(made[0]):
            return None
        known = self.known_value(made[0].value)
        if known is None:
            return None
        if made == self.assignments[name] and all(self.stable(a) for a in known.atoms()):
            return known
        between = self.until_read(made[0], name)
        if between is None or any(syntax.stores(s, a.id) for s in between
                                  for a in known.atoms() if isinstance(a, gast.Name)):
            return None
        return known

    def until_read(self, made, name):
        """The statements from the assignment `made` of `name` to the last read of `name`
        that may run before that read, if `name` is read in the statements that follow
        `made` in its block only; else None."""
        block, at = self.positions[made]
        reads = [k for k in range(at + 1, len(block))
                 if name in syntax.names_loaded(block[k])]
        if not reads or self.reads[name] != sum(
                syntax.names_loaded(block[k]).count(name) for k in reads):
            return None
        last = block[reads[-1]]
        return block[at + 1:reads[-1]] + ([] if isinstance(last, gast.Assign) else [last])

    def carried(self, name):
        """Make `name` and the names it is copied to or from (Wengert's joins and loop
        copies) function values, if each of their assignments makes one of the same
        function with the same places bound, copies one of them, or is Wengert's `None`
        for a name not bound on a path. Each of these names gets a companion name for
        each value bound, assigned before each of its assignments (the value bound, the
        companion copied, None), so that a call reads the values bound when the function
        value it calls was made, whichever path made it, and however the names bound to
        it changed since."""
        group = self.copies(name)
        self.grouped.update(group)
        for n in group:
            self.known.setdefault(n, None)
        assignments = [s for n in group for s in self.assignments[n]]
        if not all(_assigns(s) for s in assignments):
            return      # a parameter, a loop variable, a tuple unpacked
        makes = {s: self.known_value(s.value) for s in assignments
                 if not _placeholder(s) and not _copy_in(s, group)}
        first = next(iter(makes.values()), None)
        if first is None or any(k is None or k.fn is not first.fn
                                or k.layout() != first.layout() for k in makes.values()):
            return
        changed = True
        while changed:      # the names of the group assigned their value directly
            changed = False
            for n in group:
                if self.known[n] is None:
                    self.known[n] = self.direct(n)
                    changed = changed or self.known[n] is not None
        carried = [n for n in group if self.known[n] is None]
        named = {n: {place: self.ctx.namer.fresh(f"{n}_{place}" if isinstance(place, int)
                                                 else place)
                     for place in first.layout()}
                 for n in carried}
        for n in carried:
            self.known[n] = Known(first.fn, [syntax.name(named[n][i])
                                             for i in range(len(first.args))],
                                  {k: syntax.name(named[n][k]) for k in first.keywords})
        for n in carried:
            for s in self.assignments[n]:
                if _placeholder(s):
                    values = {place: syntax.const(None) for place in first.layout()}
                else:
                    values = (makes[s] if s in makes else self.known[s.value.id]).places()
                companions = self.companions.setdefault(s, [])
                for place, value in values.items():
                    companion = syntax.located(
                        syntax.assign(named[n][place], syntax.copied(value)), s)
                    for mark in (marks.INIT, marks.PHI):
                        if mark.has(s):
                            mark.put(companion, mark.of(s))
                    companions.append(companion)
                    self.assignments.setdefault(named[n][place], []).append(companion)

    def copies(self, name):
        """`name` and the local names it is copied to or from, through copies."""
        group, todo = {name}, [name]
        while todo:
            for m in self.copied.get(todo.pop(), ()):
                if m not in group:
                    group.add(m)
                    todo.append(m)
        return sorted(group)

    def method(self, receiver, attr):
        """`Known` for `receiver.attr`, a method of `receiver`'s known class."""
        cls = self.kinds[receiver]
        if not user_class(cls):
            return None
        try:
            found = inspect.getattr_static(cls, attr)
        except AttributeError:
            return None
        self.ctx.assume([guards.guard(("object", cls), (attr,), getattr(cls, attr))])
        if inspect.isfunction(found):
            return Known(found, [receiver])
        if isinstance(found, (staticmethod, classmethod)):
            return Known(getattr(cls, attr))
        return None

    def super_method(self, e):
        """`Known` for `t.attr` where `t = super()` in a method: the function of that name
        that the class after the method's own (`__class__`) in the MRO of `self`'s known
        class defines, bound to `self` (a static method unbound)."""
        made = self.assignments.get(e.value.id, ())
        if len(made) != 1 or not _assigns(made[0]) or not self.is_super(made[0].value):
            return None
        owner = self.src.free_values().get("__class__")
        cls = self.kinds[syntax.name(self.params[0])] if self.params else None
        if not (user_class(cls) and isinstance(owner, type) and owner in cls.__mro__):
            return None
        for klass in cls.__mro__[cls.__mro__.index(owner) + 1:]:
            if e.attr in vars(klass):
                found = vars(klass)[e.attr]
                self.ctx.assume([guards.guard(("object", klass), (e.attr,),
                                              getattr(klass, e.attr))])
                self.supers.add(e.value.id)
                if inspect.isfunction(found):
                    return Known(found, [syntax.name(self.params[0])])
                if isinstance(found, staticmethod):
                    return Known(found.__func__)
                return None
        return None

    def property_read(self, s):
        """`t = obj.name` where `name` is a property of `obj`'s known plain class (see
        rules/pytrees.py) becomes a call of its getter, `t = name(obj)`, which is
        differentiated through its source."""
        obj, name = s.value.value, s.value.attr
        cls = self.kinds[obj] if isinstance(obj, gast.Name) else None
        if not (user_class(cls) and pytrees.plain(cls) and not pytrees.registered(cls)):
            return
        try:
            found = inspect.getattr_static(cls, name)
        except AttributeError:
            return
        if isinstance(found, property) and inspect.isfunction(found.fget):
            self.ctx.assume([guards.guard(("object", cls), (name,), found)])
            call = syntax.located(gast.Call(func=None, args=[], keywords=[]), s.value)
            self.set_call(call, found.fget, [obj], {})
            s.value = call

    def is_super(self, value):
        """Whether `value` is `super()`, without arguments."""
        return (isinstance(value, gast.Call) and not value.args and not value.keywords
                and self.prim(value.func) is super)

    def stable(self, atom):
        """Whether `atom` keeps its value: a constant, a module-level name, or a name
        assigned once."""
        if not isinstance(atom, gast.Name):
            return True
        return not self.src.is_local(atom.id) or len(self.assignments.get(atom.id, ())) <= 1

    def prim(self, func):
        prim = marks.PRIM.of(func)
        return prim if prim is not None else self.src.resolve(func)

    def is_function_value(self, atom):
        return (isinstance(atom, (gast.Name, gast.Attribute))
                and self.known_value(atom) is not None)

    # -- calls ----------------------------------------------------------------------------
    def resolve(self, call, s):
        """Rewrite `call` as a call by position of a function s2sad reads, if it calls
        Python code through a known function value."""
        func = call.func
        if not self.varied & set(syntax.names_loaded(call)) and isinstance(
                func, gast.Attribute) and isinstance(func.value, gast.Name):
            known = self.super_method(func)     # (called as it is: `super()` cannot run
            if known is not None:               # outside the class)
                self.set_call(call, known.fn, known.args + call.args, {
                    k.arg: k.value for k in call.keywords})
                return
        if not self.varied & set(syntax.names_loaded(call)) or any(
                isinstance(a, gast.Starred) for a in call.args) or any(
                k.arg is None for k in call.keywords):
            return      # a call that is not differentiated runs as it is
        static = not (isinstance(func, gast.Name) and self.known.get(func.id)) and (
            self.prim(func) is not MISSING)
        known = self.known_value(func)
        if isinstance(func, gast.Name) and (known is None or (
                user_class(type(known.fn)) and not getattr(known.fn, "s2s_custom", False)
                and registry.primitive(known.fn) is None
                and self.kinds.structure_at(func)[0])):
            known = self.method(func, "__call__") or known  # an object called: its __call__
        if known is None:
            return
        target, args = known.fn, known.args + call.args
        keywords = {**known.keywords, **{k.arg: k.value for k in call.keywords}}
        if gradients.made_by(target) is not None:     # a derivative passed or bound
            called = gradients.called_gradient(target)
            if called is None:
                raise self.src.syntax_error(s, gradients.refusal(gradients.made_by(target)))
            target, bound = called
            args = [self.atom(b, type(b).__name__.lower()) for b in bound] + args
            static = False
        if isinstance(target, functools.partial) and registry.primitive(target.func):
            # a partial object of a function with a rule (`functools.partial(np.power,
            # x2=2.0)`): that function, called with what the partial binds (guarded)
            name = getattr(target.func, "__name__", "partial")
            args = [self.atom(a, f"{name}_arg") for a in target.args] + args
            keywords = {**{k: self.atom(v, f"{name}_{k}") for k, v in target.keywords.items()},
                        **keywords}
            target, static = target.func, False
        python = operations.python_function(target)
        if (python is None or registry.primitive(target) is not None
                or getattr(target, "s2s_custom", False)):
            callables.called_at(target, self.src, s)
            if not static:          # a primitive called through a value: call it by name
                self.set_call(call, target, args, keywords)
            return
        fn, bound, bound_keywords = python
        if source.is_library(fn):
            return
        if getattr(fn, "s2s_not_differentiable", None):   # (a rule's own helper: checkpoint's)
            raise callables.not_differentiable(fn, self.src, s)
        signature = inspect.signature(fn)
        positional = [p.name for p in signature.parameters.values()
                      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        taken = set(positional[:len(bound) + len(args)]) | set(keywords) | set(bound_keywords)
        for p in signature.parameters.values():     # a function left as a default: passed,
            if p.name not in taken and p.kind in (  # for a version specialised on it
                    p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and function_value(p.default):
                keywords[p.name] = self.atom(p.default, f"{source.identifier(fn)}_{p.name}")
                marks.PRIM.put(keywords[p.name], p.default)
        values = list(args) + [k for k in keywords.values()]
        kinds = {p.kind for p in signature.parameters.values()}
        special = (inspect.Parameter.VAR_POSITIONAL in kinds
                   or inspect.Parameter.VAR_KEYWORD in kinds
                   or any(self.is_function_value(a) and not self.kinds.structure_at(a)[0]
                          for a in values))   # (an object whose structure is known is passed)
        by_keyword = any(not isinstance(v, gast.Constant) for v in keywords.values())
        if static and not special and not by_keyword and not (
                _resolves_to(self.prim(func), fn)
                and any(self.kinds.structure_at(a)[0] for a in args)):
            return      # (a call passing an object whose structure is known is rewritten,
            #             for the callee to know it: see analysis.operations.argument_types)
        # the call's layout, and the defaults passed, come from the function as it is now
        self.ctx.assume(guards.of_function(fn))
        args = [self.atom(a, f"{source.identifier(fn)}_arg") for a in bound] + args
        keywords = {**{k: self.atom(v, f"{source.identifier(fn)}_{k}")
                       for k, v in bound_keywords.items()}, **keywords}
        try:
            binding = signature.bind(*args, **keywords)
        except TypeError as exc:
            raise self.src.syntax_error(s, f"this call of {fn.__name__}() does not match "
                                           f"its parameters: {exc}") from None
        given = binding.arguments
        if special and getattr(fn, "s2s_gradient", None) is not None:
            version, args = self.derivative_specialised(fn, given, s)
            self.set_call(call, version, args, {})
            return
        if special or any(p.kind == p.KEYWORD_ONLY and p.name in given
                          for p in signature.parameters.values()):
            version, args = self.specialised(fn, signature, given)
            self.set_call(call, version, args, {})
            return
        positional = [p for p in signature.parameters.values()
                      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        last = max((i for i, p in enumerate(positional) if p.name in given), default=-1)
        args = [given[p.name] if p.name in given else self.atom(p.default, f"{source.identifier(fn)}_"
                                                                    f"{p.name}")
                for p in positional[:last + 1]]
        self.set_call(call, fn, args, {})

    def set_call(self, call, fn, args, keywords):
        record = marks.RECORD.of(fn)
        lifted = record is not None and not isinstance(record, Version)
        name = fn.__name__ if lifted else self.ctx.bind(fn.__name__, obj=fn)
        self.changed = True
        call.func = syntax.located(syntax.name(name), call)
        marks.PRIM.put(call.func, fn)
        marks.LIFTED.put(call.func, lifted)
        call.args = list(args)
        call.keywords = [gast.keyword(arg=k, value=v) for k, v in keywords.items()]

    def atom(self, value, base):
        """An atom for the object `value` (a default, a bound argument)."""
        if isinstance(value, gast.AST):
            return value
        if type(value) in _LITERALS:
            return syntax.const(value)
        if isinstance(value, type):
            base = value.__name__
        return syntax.name(self.ctx.bind(base, obj=value))

    # -- versions of a function specialised on a call ------------------------------------
    def specialised(self, fn, signature, given):
        """(the version of `fn` for a call binding `given`, the call's arguments)."""
        plan, args = [], []
        for p in signature.parameters.values():
            if p.kind == p.VAR_POSITIONAL:
                plan.append(("args", p.name, len(given.get(p.name, ()))))
                args += list(given.get(p.name, ()))
            elif p.kind == p.VAR_KEYWORD:
                plan.append(("kwargs", p.name, tuple(given.get(p.name, {}))))
                args += list(given.get(p.name, {}).values())
            elif p.name not in given:
                plan.append(("default", p.name))
            elif self.is_function_value(given[p.name]):
                step, values = self.function_step(p.name, given[p.name])
                plan.append(step)
                args += values
            else:
                plan.append(("value", p.name))
                args.append(given[p.name])
        versions = _versions.setdefault(fn, {})
        key, stamp = guards.keyed(tuple(plan)), guards.stamp(fn)
        made = versions.get(key)
        if made is None or not guards.same(made[0], stamp):
            # (made again when the function's code, defaults or closure values changed)
            made = versions[key] = (stamp, _Specialiser(fn, plan, self.src).version())
        return made[1], args


    def derivative_specialised(self, standing, given, s):
        """(a function that stands for the derivative `standing` stands for (see
        frontend.gradients), of the version of its primal specialised on the function
        values the call passes, the call's arguments): `grad(lam)(x, f=f)`, the `lam` of
        a lambda that reads a function passed in, is `grad(lam_1)(x, f_y)`."""
        primal, wrt, kind = standing.s2s_gradient
        signature = inspect.signature(primal)
        names = list(signature.parameters)
        version, args = self.specialised(
            primal, signature, {k: v for k, v in given.items() if k in names})
        params = list(inspect.signature(version).parameters)

        def moved(w):       # (the version's parameters: function values' in their place)
            if isinstance(w, (tuple, list)):
                return tuple(moved(v) for v in w)
            return w if isinstance(w, str) else params.index(names[w])
        wrt = moved(wrt)
        maker = gradients.MAKERS[kind]
        if kind == "jvp":
            made = gradients.jvp_function(version, wrt, maker)
        else:
            made = gradients.gradient_function(version, wrt, kind, maker(version, wrt=wrt))
        if made is None:
            raise self.src.syntax_error(s, f"the jvp of {primal.__name__}() "
                                        "called here needs a version of it without defaults")
        return made, args + [v for k, v in given.items() if k not in names]

    def function_step(self, name, atom):
        """(the plan's step for parameter `name` given the function value `atom`, the
        arguments the version takes for it): the values bound to it, and for each of them
        that is a function value itself (the `f` of `partial(lam, f=f)`, a lambda reading
        a function passed in), its own step in `nested` and its values in their place."""
        known = self.known_value(atom)
        nested, values = [], []
        for key, v in [*enumerate(known.args), *known.keywords.items()]:
            if self.is_function_value(v):
                step, inner = self.function_step(f"{name}_{key}", v)
                nested.append((key, step))
                values += inner
            else:
                values.append(v)
        return ("function", name, known.fn, len(known.args), tuple(known.keywords),
                tuple(nested)), values


def _resolves_to(obj, fn):
    """Whether calling `obj`, what a call's function resolves to, calls the function `fn`
    (a method through its instance, an object through its class's `__call__`)."""
    return getattr(obj, "__func__", None) is fn or (
        user_class(type(obj)) and getattr(type(obj), "__call__", None) is fn)


def _assigns(s):
    return isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name)


def _placeholder(s):
    """Whether `s` is Wengert's `name = None` for a name not bound on a path."""
    return (marks.INIT.of(s) and isinstance(s.value, gast.Constant)
            and s.value.value is None)


def _copy_in(s, group):
    return isinstance(s.value, gast.Name) and s.value.id in group


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
                out[p.name] = (syntax.const(p.default) if type(p.default) in _LITERALS
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
        src = self.src
        node = syntax.copied(self.node) if copy else self.node
        return FunctionSource(fn, node, src.filename, src.first_line, src.indent,
                              src.origins)

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
