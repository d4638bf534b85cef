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
- keyword arguments go to their positions (`loglik(y, mu=mu)` is `loglik(y, mu)`);
- a method of a distribution frozen in the function (`d = norm(mu, s)`, a call of an
  object whose methods have rules, `scipy.stats.norm`): `d.logpdf(y)` is
  `norm.logpdf(y, loc=mu, scale=s)`, the parameters named as the method's rule names them
  (a frozen distribution is a function value of a kind: bound to names, carried through
  branches and loops the same way, but passed to a function as it is).

A call that passes a function value (`integrate(lambda t: x * t, 0.0, 1.0)`), gives a
keyword-only parameter, or goes to a function with `*args` or `**kwargs` calls a version
of the function specialised on the call: a function value's parameter is replaced by
the values bound to it (the lambda's `x` becomes a parameter `f_x`, and the body starts
with `f = functools.partial(lambda_, x=f_x)`, whose calls this pass resolves in turn),
`*args` by one parameter per argument (the name reads as the tuple of them), `**kwargs`
by one per keyword (read with `kwargs["k"]`, `kwargs.get("k", d)`, `"k" in kwargs`, or
passed on as `**kwargs`), and keyword-only parameters become positional. The version's
lines are the lines of the function in the user's file (before_ad/call_versions.py writes
the versions).

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
import types

import gast
import numpy as np

from .. import marks
from .. import syntax
from ..analysis import operations
from ..analysis.activity import definitions, varied_names
from ..analysis.value_kinds import ARRAY, ValueKinds, user_class
from ..compilation import function_params, function_value
from ..frontend import callables, gradients, guards, source, structure
from ..frontend.source import MISSING
from ..rules import pytrees, registry, snapshots
from .call_versions import LITERALS, Version
from . import call_versions

#: NumPy as s2sad found it (rules/snapshots.py).
_NP = snapshots.of(np)



def run(fn, ctx):
    """The pass."""
    return ResolveCalls(ctx).run(fn)


@dataclasses.dataclass
class Known:
    """A function value known when compiling: the callable `fn` (a Python function, a
    bound method, a primitive, a partial object) with the atoms `args` and `keywords`
    bound to it first; or, `frozen`, a distribution frozen by calling it (`norm(mu, s)`:
    `fn` the distribution, `args` and `keywords` its parameters)."""
    fn: object
    args: list = dataclasses.field(default_factory=list)
    keywords: dict = dataclasses.field(default_factory=dict)
    frozen: bool = False

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
        if (isinstance(e, gast.Attribute) and isinstance(e.value, gast.Name)
                and e.value.id in self.assignments):
            known = self.known_name(e.value.id)
            if known is not None and known.frozen:
                return _frozen_method(known, e.attr)     # `d.logpdf` of `d = norm(mu, s)`
        if isinstance(e, gast.Call) and _distribution(self.prim(e.func)) and not any(
                isinstance(a, gast.Starred) for a in e.args) and not any(
                k.arg is None for k in e.keywords):
            return Known(self.prim(e.func), list(e.args), {k.arg: k.value for k in e.keywords},
                         frozen=True)
        if isinstance(e, gast.Call) and getattr(self.prim(e.func), "s2s_checkpoint", None) \
                and isinstance(self.prim(e.func), type) and len(e.args) == 1 \
                and not e.keywords and isinstance(self.prim(e.args[0]), types.FunctionType):
            return Known(self.prim(e.func).of(self.prim(e.args[0])))  # s2sad.checkpoint(step)
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
        if first is None or any(k is None or k.fn is not first.fn or k.frozen != first.frozen
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
                                  {k: syntax.name(named[n][k]) for k in first.keywords},
                                  first.frozen)
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
        if not isinstance(atom, (gast.Name, gast.Attribute)):
            return False
        known = self.known_value(atom)
        return known is not None and not known.frozen      # (a frozen distribution: passed)

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
        if (len(call.args) == 1 and not call.keywords and self.prim(func) is abs
                and self.kinds[call.args[0]] == ARRAY):
            # (the builtin `abs` of an array is NumPy's: its rule, not math.copysign's)
            marks.PRIM.put(func, _NP.abs)
            self.changed = True
            return
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
        called = self.prim(func)        # (Python's: a method bound to an object outside)
        obj = called.__self__ if inspect.ismethod(called) and called.__func__ is fn else called
        if user_class(type(obj)) and any(vars(k).get(fn.__name__) is fn
                                         for k in type(obj).__mro__):
            self.methods_through(obj, s)
        if getattr(fn, "s2s_not_differentiable", None):   # (a rule's own helper: checkpoint's)
            raise callables.not_differentiable(fn, self.src, s)
        if getattr(fn, "s2s_own_call", False):    # (a custom_vjp's __call__, checkpoint's)
            raise self.src.syntax_error(s, _own_object(target))
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

    def methods_through(self, obj, s):
        """For the call `s` of a method of the object `obj` outside the function, whose
        derivative finds the methods it calls on `self` through the class: refuse an
        attribute of `obj`'s own that hides one (Python calls it), and guard that none
        comes to (each method as `obj` reads it)."""
        hidden = guards.hides_a_method(obj)
        if hidden is not None:
            cls = type(obj).__qualname__
            raise self.src.syntax_error(s, (
                f"this calls a method of a {cls} object that has an attribute {hidden!r} of "
                f"its own, which hides the method {cls}.{hidden}() that Python would "
                "otherwise call; s2sad finds the methods a method calls on self through "
                f"its class. Set the function on the class ({cls}.{hidden} = ...), or pass "
                "it as an argument"))
        self.ctx.assume(guards.methods_through(obj))

    def set_call(self, call, fn, args, keywords):
        record = marks.RECORD.of(fn)
        lifted = record is not None and not isinstance(record, Version)
        owner = getattr(fn, "__self__", None)       # (a distribution's method: norm_logpdf)
        base = (f"{owner.name}_{fn.__name__}" if _distribution(owner)
                and isinstance(getattr(owner, "name", None), str) else fn.__name__)
        name = fn.__name__ if lifted else self.ctx.bind(base, obj=fn)
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
        if type(value) in LITERALS:
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
        return call_versions.version(fn, plan, self.src), args


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


#: The methods of a frozen distribution that stand for its distribution's (`d.logpdf(y)`
#: of `d = norm(mu, s)` is `norm.logpdf(y, mu, s)`), where those have rules.
_FROZEN_METHODS = ("logpdf", "pdf", "logpmf", "pmf", "cdf", "logcdf", "sf", "logsf")


def _distribution(obj):
    """Whether calling `obj` freezes a distribution whose methods have rules
    (`scipy.stats.norm`, `stats.multivariate_normal`)."""
    if obj is MISSING or isinstance(obj, type) or not any(
            hasattr(type(obj), m) for m in _FROZEN_METHODS):
        return False
    return any(registry.primitive(getattr(obj, m, None)) is not None for m in _FROZEN_METHODS)


def _frozen_method(known, attr):
    """`Known` for the method `attr` of the frozen distribution `known`: its
    distribution's, the parameters given to the distribution passed after the value by
    the names its rule gives them (`norm(mu, s).logpdf(y)` is `norm.logpdf(y, loc=mu,
    scale=s)`), or None where it has no rule or more parameters than the rule."""
    method = getattr(known.fn, attr, None) if attr in _FROZEN_METHODS else None
    rule = registry.lookup(method) if method is not None else None
    if rule is None or not rule.variants:
        return None
    names = [p for p, _ in rule.variants[0].params][1:]
    if len(known.args) > len(names):
        return None
    return Known(method, [], {**dict(zip(names, known.args)), **known.keywords})


def _assigns(s):
    return isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name)


def _placeholder(s):
    """Whether `s` is Wengert's `name = None` for a name not bound on a path."""
    return (marks.INIT.of(s) and isinstance(s.value, gast.Constant)
            and s.value.value is None)


def _copy_in(s, group):
    return isinstance(s.value, gast.Name) and s.value.id in group


def _own_object(target):
    """Why a call of an object of s2sad's own made in the function differentiated (a
    `checkpoint` of a lambda, a `custom_vjp`) is refused, and what to write."""
    return ("this calls an object of s2sad's (s2sad.checkpoint, custom_vjp, custom_jvp) made "
            "in the function differentiated, of a function s2sad cannot name at module "
            "level: `s2sad.checkpoint(step)(u)` takes a function defined at module level, or "
            "a nested one that reads none of this function's variables; for a lambda or a "
            "closure, define the step at module level with those values as parameters, "
            "decorated with @s2sad.checkpoint (or @s2sad.custom_vjp and its rules)")
