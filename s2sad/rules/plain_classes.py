"""Plain classes: the user's classes whose instances s2sad takes apart by their attributes
without their being registered (rules/pytrees.py's `_Plain` node), and whose constructor
that only stores gets a rule (rules/constructors.py), from what `stored_parameters` reads in
its source. Imports nothing of s2sad's."""
import abc
import ast
import inspect
import textwrap


def plain(cls):
    """Whether the instances of `cls` are taken apart by their attributes without being
    registered (`_Plain`): a class made by a `class` statement (of metaclass `type` or
    `abc.ABCMeta`) outside NumPy, SciPy, s2sad and the standard modules it knows, whose
    instances keep their attributes in a `__dict__` of their own: no base but `object`
    is a built-in type (`int`, `dict`, `Exception`, ...), none has `__slots__`, and none
    defines `__getattr__`, `__getattribute__` or `__setattr__` (whose attributes are not
    their `__dict__`'s) or `__new__` (an adjoint is made by `cls.__new__(cls)`)."""
    if type(cls) not in (type, abc.ABCMeta) or cls.__module__.split(".")[0] in _NOT_PLAIN:
        return False
    for base in cls.__mro__[:-1]:
        if not base.__flags__ & _HEAP_TYPE or "__slots__" in base.__dict__ or any(
                name in base.__dict__ for name in _OWN_ATTRIBUTES):
            return False
    return True


_NOT_PLAIN = frozenset({"builtins", "abc", "collections", "functools", "types", "typing",
                        "enum", "numpy", "scipy", "s2sad", "numba", "dask", "cupy"})
_HEAP_TYPE = 1 << 9      # (Py_TPFLAGS_HEAPTYPE: made by a class statement, not in C)
_OWN_ATTRIBUTES = ("__getattr__", "__getattribute__", "__setattr__", "__new__")


def stored_parameters(cls):
    """{parameter: the attribute it is stored in} of a plain class's `__init__` that only
    stores (see rules/constructors.py), else None. The `__init__` may be inherited, and may
    call its base's (`super().__init__(w)`, `Base.__init__(self, w)`) with parameters or
    constants, if that one only stores too."""
    inits = [c for c in cls.__mro__[:-1] if "__init__" in c.__dict__]
    if not inits or any("__new__" in c.__dict__ for c in cls.__mro__[:-1]):
        return None
    return _init_stores(cls, inits)


def _init_stores(cls, inits):
    """`_stored_parameters` of the `__init__` of `inits[0]`, the bases after it that
    define one being `inits[1:]`."""
    init = inits[0].__dict__["__init__"]
    if not inspect.isfunction(init):
        return None
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(init)))
    except (OSError, TypeError, SyntaxError):
        return None
    fn = tree.body[0]
    if not isinstance(fn, ast.FunctionDef) or fn.decorator_list or not fn.args.args:
        return None
    params = [a.arg for a in fn.args.args]
    self, stored, attributes = params[0], {}, set()
    body = fn.body[1:] if (fn.body and isinstance(fn.body[0], ast.Expr) and isinstance(
        fn.body[0].value, ast.Constant) and isinstance(fn.body[0].value.value, str)) \
        else fn.body
    pairs = []      # (target, value); `self.a, self.b = a, b` stores each of a pair
    for s in body:
        if isinstance(s, ast.Pass):
            continue
        base = _base_init_call(s, self, inits[0])
        if base is not None:
            passed = _base_stores(cls, inits[1:], base, self, params[1:])
            if passed is None:
                return None
            pairs += passed
            continue
        if not (isinstance(s, ast.Assign) and len(s.targets) == 1):
            return None
        target, value = s.targets[0], s.value
        if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(
                target.elts) == len(value.elts):
            pairs += zip(target.elts, value.elts)
        else:
            pairs.append((target, value))
    for target, value in pairs:
        if not (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                and target.value.id == self and target.attr not in attributes):
            return None
        attributes.add(target.attr)
        if isinstance(value, ast.Name) and value.id in params[1:] and value.id not in stored:
            stored[value.id] = target.attr
        elif not (isinstance(value, ast.Constant) and isinstance(
                value.value, (int, bool, str, type(None)))):
            return None
    return stored


def _base_init_call(s, self, owner):
    """The call of the statement `s` if it calls the base's `__init__` of the method of
    `owner` whose instance is `self`: `super().__init__(...)`, `super(Owner,
    self).__init__(...)` or `Base.__init__(self, ...)` (its `self` dropped), else None."""
    call = s.value if isinstance(s, ast.Expr) else None
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
            and call.func.attr == "__init__"):
        return None
    on = call.func.value
    if isinstance(on, ast.Call) and isinstance(on.func, ast.Name) and on.func.id == "super" and (
            not on.args or [getattr(a, "id", None) for a in on.args] == [owner.__name__, self]):
        return call
    if (isinstance(on, ast.Name) and call.args and isinstance(call.args[0], ast.Name)
            and call.args[0].id == self and on.id in {b.__name__ for b in owner.__mro__[1:]}):
        return ast.Call(func=call.func, args=call.args[1:], keywords=call.keywords)
    return None


def _base_stores(cls, inits, call, self, params):
    """[(`self.attribute` target, value)]: what the base `__init__` (of `inits[0]`, or
    `object`'s) that `call` calls stores, its values the call's arguments, if each is a
    parameter of `params` or a constant and the base's `__init__` only stores; else None.
    (A parameter of the base's the call leaves stores its default, which is a literal.)"""
    if not inits:       # object.__init__
        return [] if not call.args and not call.keywords else None
    stored = _init_stores(cls, inits)
    if stored is None or any(isinstance(a, ast.Starred) for a in call.args) or any(
            k.arg is None for k in call.keywords):
        return None
    names = list(inspect.signature(inits[0].__dict__["__init__"]).parameters)[1:]
    given = dict(zip(names, call.args))
    given.update((k.arg, k.value) for k in call.keywords)
    if any(not (isinstance(v, ast.Name) and v.id in params or isinstance(v, ast.Constant))
           for v in given.values()):
        return None
    return [(ast.Attribute(value=ast.Name(id=self), attr=attr), given[p])
            for p, attr in stored.items() if p in given]
