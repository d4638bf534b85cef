"""Guards: what a derivative took of the world when it was compiled, checked again when it
runs.

A derivative is compiled from the source of a function and of the functions it calls,
with the names they read from outside resolved to objects: module globals, closure
cells, builtins, attributes of modules and objects (`math.sin`, `model.predict`),
methods found through classes, default values, and the code objects themselves. Python
looks all of these up again at every call; compiled code that resolved them once would
keep differentiating the function as it was. So each thing resolved is a `Guard`: where
to read it again (a module's globals, a closure cell or an object, then attributes), and
what was found: the object itself, or, for plain data (numbers, arrays, containers,
instances that are not callable), only its class, which is all the compiled code relies
on (it reads such values where the user's code reads them). A derivative whose guards
no longer hold is compiled again (see s2sad.driver and s2sad.cache); the fast paths
test their own guards inline, in the generated code's first line (`tests`).

>>> import math
>>> def f(x):
...     return math.sin(x) * scale
>>> scale = 2.0
>>> ns = {"scale": 2.0, "math": math}
>>> g = Guard(("global", ns, "scale"), (), float, "class")
>>> holds([g]), ns.update(scale=3.0), holds([g]), ns.update(scale="3"), holds([g])
(True, None, True, None, False)
"""
from __future__ import annotations

import builtins
import functools
import sys
import types
import weakref
from typing import NamedTuple

import numpy as np

from . import structure

MISSING = object()

#: A function's code, defaults or keyword defaults assigned (`f.__code__ = ...`, what
#: IPython's autoreload does): Python reports each such assignment to audit hooks
#: (sys.addaudithook), so the guards on those need not read them at each call. Each
#: compiled derivative that tests them registers here (`watch`) an object whose
#: `code_changed()` makes a test of its code fail (binds one of its constants to `STALE`,
#: or raises a flag); the next call then checks every guard once, and makes the test pass
#: again if they hold.
_watching = weakref.WeakSet()
_FUNCTION_PARTS = ("__code__", "__defaults__", "__kwdefaults__")


def _audit(event, args):
    if event == "object.__setattr__" and args[1] in _FUNCTION_PARTS and not _quiet:
        for watcher in list(_watching):
            watcher.code_changed()


_quiet = []


def set_quietly(fn, attr, value):
    """`setattr(fn, attr, value)` for a function s2sad made itself, which changes no
    function of the user's: not reported to the watchers."""
    _quiet.append(True)
    try:
        setattr(fn, attr, value)
    finally:
        _quiet.pop()


sys.addaudithook(_audit)


class _Stale:
    """What the constant of a derivative's identity test is bound to once a function's
    code or defaults are assigned (see after_ad/guard_bindings.py): no object is it, so
    the test fails and the next call checks every guard."""

    def __repr__(self):
        return "<stale: a function's code or defaults were assigned>"


STALE = _Stale()


def watch(watcher):
    """Call `watcher.code_changed()` at each assignment to a function's code, defaults
    or keyword defaults (as long as `watcher` lives)."""
    _watching.add(watcher)


def counted(g):
    """Whether an assignment to what `g` reads is reported to `watch`'s watchers: a
    function's code, defaults or keyword defaults."""
    return (g.root[0] == "function" and g.how == "is"
            and len(g.attrs) == 1 and g.attrs[0] in _FUNCTION_PARTS)


class Guard(NamedTuple):
    """One thing a derivative resolved: read from `root` (`("global", globals, name)`,
    `("cell", cell)`, `("object", obj)` or `("function", a weak reference to one)`: a
    function's guards do not keep it alive, nor the derivatives cached for it) through the
    attributes `attrs`, it was
    `expected` (`how` "is"), of class `expected` ("class"), the method `expected`,
    a `(function, instance)` pair ("method"), a list or tuple whose items are of the
    classes `expected`, a tuple, in order ("items": see `items`), an object of the
    structure `expected` ("structure": see `structured`), an array equal to the copy
    `expected` ("contents": see `contents`), a `functools.partial` that binds the
    values `expected` ("binds": see `binds`), or a dict of the same keys whose values
    are those of the dict `expected`, by identity ("keywords": a function's keyword
    defaults, see `of_function`)."""
    root: tuple
    attrs: tuple
    expected: object
    how: str

    def __repr__(self):
        kind, held = self.root[0], self.root[1]
        where = (f"global {self.root[2]!r}" if kind == "global" else
                 f"cell of {held.cell_contents!r}" if kind == "cell" and held.cell_contents
                 is not None else f"function {getattr(held(), '__qualname__', None)}"
                 if kind == "function" else
                 f"{kind} {getattr(held, '__qualname__', type(held).__name__)}")
        return f"<guard {where}{''.join('.' + a for a in self.attrs)} {self.how} " \
               f"{getattr(self.expected, '__qualname__', self.expected)!r}>"

    @property
    def identity(self):
        """What tells two guards on the same thing apart."""
        return (self.root[0], *map(id, self.root[1:2]), *self.root[2:], self.attrs) + (
            (self.how,) if self.how in ("items", "structure", "contents", "binds", "keywords")
            else ())
        # (beside the guard of the value)


def is_data(value):
    """Whether `value` is plain data, whose class is all compiled code relies on: not a
    module, a class, a function or another callable object (those it resolves)."""
    return not callable(value) and not isinstance(value, types.ModuleType)


def guard(root, attrs, value, frozen=False):
    """The guard that `root` then `attrs` reads `value` (see `Guard`). With `frozen`,
    data is guarded by identity too (for code that holds the values it was compiled
    with, as Numba holds a global's value)."""
    if isinstance(value, types.MethodType):
        return Guard(root, attrs, (value.__func__, value.__self__), "method")
    if attrs and isinstance(value, (types.BuiltinMethodType, types.MethodWrapperType)) and (
            not isinstance(value.__self__, types.ModuleType)):
        # (`np.add.outer`, made anew at each read: what it is bound to is what counts)
        return guard(root, attrs[:-1], value.__self__, frozen)
    if is_data(value) and not frozen:
        return Guard(root, attrs, type(value), "class")
    return Guard(root, attrs, value, "is")


def items(root, attrs, value):
    """The guard that `root` then `attrs` reads the list or tuple `value` of the length
    and the items' classes it has now (for a loop over it unrolled, whose code calls the
    methods of each item's class)."""
    return Guard(root, attrs, item_classes(value), "items")


def structured(root, value):
    """The guard that `root` reads an object of the structure `value` has now (the
    classes of the objects it holds, the lengths of its lists of them, the functions
    stored in them: see frontend/structure.py), which the code compiled for it relies on."""
    return Guard(root, (), structure.key(value), "structure")


def contents(root, attrs, value):
    """The guard that `root` then `attrs` reads an array equal to `value` as it is now (a
    copy), or a tuple (of tuples) of such arrays, for code that holds the values it was
    compiled with: Numba takes a global array into the compiled code as a constant, so a
    write into it (`w[0] = 2.0`) must compile the derivative again. None for a value that
    holds no NumPy array."""
    if not _holds_array(value):
        return None
    return Guard(root, attrs, _snapshot(value), "contents")


def _holds_array(value):
    return type(value) is np.ndarray or (type(value) is tuple and any(
        _holds_array(v) for v in value))


def _snapshot(value):
    if type(value) is np.ndarray:
        return value.copy()
    if type(value) is tuple:
        return tuple(_snapshot(v) for v in value)
    return value


def same_contents(value, expected):
    """Whether `value` is equal to the snapshot `expected` (see `contents`): arrays element
    by element (NaN equal to NaN), of the same shape and dtype; tuples item by item;
    anything else by identity."""
    if type(expected) is np.ndarray:
        return (value.__class__ is np.ndarray and value.shape == expected.shape
                and value.dtype == expected.dtype
                and np.array_equal(value, expected, equal_nan=value.dtype.kind in "fc"))
    if type(expected) is tuple:
        return (type(value) is tuple and len(value) == len(expected)
                and all(same_contents(v, e) for v, e in zip(value, expected)))
    return value is expected


def binds(root, attrs, value):
    """The guard that `root` then `attrs` reads a `functools.partial` binding the
    function, positional values and keyword values `value` binds now (each by identity),
    or None if `value` is no partial: compiled code took them in when it was compiled
    (`power(x, p=3.0)` for `cube = partial(power, p=3.0)`), and a partial's `keywords`
    is a dict the user may change in place (`cube.keywords["p"] = 4.0`)."""
    if not isinstance(value, functools.partial):
        return None
    return Guard(root, attrs, bound_by(value), "binds")


def bound_by(p):
    """What the `functools.partial` `p` binds: its function, its positional values and a
    copy of its keywords (compare with `same_binding`)."""
    return p.func, p.args, dict(p.keywords)


def same_keywords(value, expected):
    """Whether the dict `value` has the keys of the dict `expected`, each bound to the same
    object."""
    return (type(value) is dict and len(value) == len(expected)
            and all(value.get(k, MISSING) is v for k, v in expected.items()))


def same_binding(value, expected):
    """Whether `value` is a partial that binds the same objects as `expected` (see
    `bound_by`)."""
    func, args, keywords = expected
    return (isinstance(value, functools.partial) and value.func is func
            and len(value.args) == len(args) and all(a is b for a, b in zip(value.args, args))
            and len(value.keywords) == len(keywords)
            and all(value.keywords.get(k, MISSING) is v for k, v in keywords.items()))


def item_classes(value):
    """The classes of the items of `value` (None if it is no list or tuple)."""
    if type(value) not in (list, tuple):
        return None
    return tuple(v.__class__ for v in value)


def read(g):
    """The value `g` reads now, or MISSING."""
    kind = g.root[0]
    try:
        if kind == "global":
            space, name = g.root[1], g.root[2]
            value = space[name] if name in space else getattr(builtins, name, MISSING)
        elif kind == "cell":
            value = g.root[1].cell_contents
        elif kind == "function":
            value = g.root[1]()
            if value is None:
                return MISSING
        else:
            value = g.root[1]
        for attr in g.attrs:
            value = getattr(value, attr)
    except (ValueError, AttributeError, KeyError):
        return MISSING
    return value


def holds(guards):
    """Whether every guard of `guards` still holds (the slow, plain form of `checker`)."""
    for g in guards:
        value = read(g)
        if g.how == "is":
            ok = value is g.expected
        elif g.how == "class":
            ok = value is not MISSING and value.__class__ is g.expected
        elif g.how == "items":
            ok = value is not MISSING and item_classes(value) == g.expected
        elif g.how == "contents":
            ok = value is not MISSING and same_contents(value, g.expected)
        elif g.how == "structure":
            ok = value is not MISSING and structure.key(value) == g.expected
        elif g.how == "binds":
            ok = same_binding(value, g.expected)
        elif g.how == "keywords":
            ok = same_keywords(value, g.expected)
        else:
            ok = (isinstance(value, types.MethodType) and value.__func__ is g.expected[0]
                  and value.__self__ is g.expected[1])
        if not ok:
            return False
    return True


def unique(guards):
    """`guards` without repeats (the first guard on each thing, or a later one on its
    identity where the first tests its class only), and without the guard
    that a global names a module where the attributes read through it are guarded (a
    derivative whose `math.sin` is still `math.sin` is right whatever `math` is)."""
    chained = {(id(g.root[1]), g.root[2]) for g in guards if g.root[0] == "global" and g.attrs}
    seen, out = {}, []
    for g in guards:
        if g.identity in seen:
            kept = out[seen[g.identity]]
            if kept.how == "class" and g.how == "is":
                out[seen[g.identity]] = g   # (the same object: of the same class too)
            continue
        if (not g.attrs and g.root[0] == "global" and isinstance(
                g.expected, types.ModuleType) and (id(g.root[1]), g.root[2]) in chained):
            continue
        seen[g.identity] = len(out)
        out.append(g)
    return out


def tests(guards, name, bare=None, class_name=None, taken=()):
    """The Python tests, one per guard, that are true where it does not hold; `name(obj,
    base)` gives the name generated code reads the object `obj` by (`class_name(cls)`
    a class a value must have, by default `name`). A global of the dict `bare` (the
    generated code's own globals) is read by its own name, as the user's code reads it,
    but for the names in `taken`, which the generated code binds itself.

    An attribute of a module that defines `__getattr__` (NumPy) is read from the
    module's dictionary, after one test that the module is the same (see `_by_dict`)."""
    out, modules = [], set()
    for g in guards:
        module = _by_dict(g)
        if module is not None:
            *path, attr = g.attrs
            expr = _reading(g._replace(attrs=tuple(path)), name, bare, taken)
            base = path[-1] if path else g.root[2] if g.root[0] == "global" else "module"
            if expr not in modules:
                modules.add(expr)
                out.append(f"{expr} is not {name(module, base)}")
            out.append(f"{name(vars(module), base + '_dict')}[{attr!r}] is not "
                       f"{name(g.expected, attr.strip('_'))}")
            continue
        if _builtin_read_by_another_name(g, bare, taken):
            # (the generated code has a name of its own for the builtin: the global may
            # not appear, and the builtin stay what it was)
            var = g.root[2]
            out.append(f"{var!r} in {name(bare, 'globals')} or "
                       f"{name(builtins, 'builtins')}.{var} is not {name(g.expected, var)}")
            continue
        expr = _reading(g, name, bare, taken)
        if g.how == "class":
            cls = g.expected
            out.append(f"{expr}.__class__ is not "
                       f"{class_name(cls) if class_name else name(cls, cls.__name__)}")
        elif g.how == "items":
            out.append(f"{name(item_classes, 'item_classes')}({expr}) != "
                       f"{name(g.expected, 'classes')}")
        elif g.how == "contents":
            out.append(f"not {name(same_contents, 'same_contents')}({expr}, "
                       f"{name(g.expected, 'contents')})")
        elif g.how == "structure":
            out.append(f"{name(structure.key, 'structure')}({expr}) != "
                       f"{name(g.expected, 'structure')}")
        elif g.how == "binds":
            out.append(f"not {name(same_binding, 'same_binding')}({expr}, "
                       f"{name(g.expected, 'binding')})")
        elif g.how == "keywords":
            out.append(f"not {name(same_keywords, 'same_keywords')}({expr}, "
                       f"{name(g.expected, 'keywords')})")
        elif g.how == "is" and g.expected is None:
            out.append(f"{expr} is not None")
        elif g.how == "method":     # (what is read may be no method now)
            fn, obj = g.expected
            get = name(getattr, "getattr")
            out.append(f"{get}({expr}, '__func__', None) is not {name(fn, fn.__name__)}")
            out.append(f"{get}({expr}, '__self__', None) is not "
                       f"{name(obj, type(obj).__name__.lower())}")
        else:
            base = (g.attrs[-1].strip("_") if g.attrs else
                    g.root[2] if g.root[0] == "global" else "value")
            out.append(f"{expr} is not {name(g.expected, base)}")
    return out


def _by_dict(g):
    """The module whose attribute `g` tests by identity, if the test reads it from the
    module's dictionary: a module that defines `__getattr__`, such as NumPy, whose
    attributes Python 3.11 reads without the shortcut it takes for other modules' (a
    read from the dictionary costs about half as many instructions). Of a module of exactly `ModuleType`, whose
    class has no attribute of that name, an attribute is the item of its dictionary
    (`__getattr__` is called only for one that is not there)."""
    if g.how != "is" or not g.attrs or g.attrs[-1].startswith("__"):
        return None
    module = read(g._replace(attrs=g.attrs[:-1]))
    if type(module) is not types.ModuleType:
        return None
    own = vars(module)
    return module if "__getattr__" in own and own.get(g.attrs[-1], MISSING) is g.expected \
        else None


def _builtin_read_by_another_name(g, bare, taken):
    """Whether `g` guards a builtin (a global of `bare` that is not there) that the
    generated code reads by a name of its own (in `taken`)."""
    return (g.root[0] == "global" and g.root[1] is bare and g.root[2] in taken
            and not g.attrs and g.how == "is" and g.root[2] not in bare
            and getattr(builtins, g.root[2], MISSING) is g.expected)


def _reading(g, name, bare, taken=()):
    kind = g.root[0]
    if kind == "global":
        space, var = g.root[1], g.root[2]
        if space is bare and var not in taken:
            expr = var
        elif space is bare and var in space:
            expr = f"{name(space, 'globals')}[{var!r}]"     # (a name the code binds itself)
        else:
            expr = f"{name(space, 'globals')}.get({var!r}, {name(builtins, 'builtins')}." \
                   f"__dict__.get({var!r}))"
    elif kind == "cell":
        expr = f"{name(g.root[1], 'cell')}.cell_contents"
    elif kind == "function":
        fn = g.root[1]()
        expr = name(g.root[1], getattr(fn, "__name__", "function")) + "()"
    else:
        obj = g.root[1]
        expr = name(obj, getattr(obj, "__name__", type(obj).__name__))
    return expr + "".join(f".{a}" for a in g.attrs)


def checker(guards):
    """A function of no arguments that tells whether all of `guards` hold: generated
    code, as the tests of a compiled derivative's first line, for the derivatives a
    derivative calls and for the cache."""
    guards = unique(guards)
    if not guards:
        return _always
    bound = {}

    def name(obj, base):
        for k, v in bound.items():
            if v is obj:
                return k
        k = f"_{len(bound)}"
        bound[k] = obj
        return k
    condition = " or ".join(f"({t})" for t in tests(guards, name))
    params = ", ".join(bound)
    text = (f"def _s2s_factory({params}):\n"
            f"    def bindings_hold():\n"
            f"        try:\n"
            f"            return not ({condition})\n"
            f"        except Exception:\n"
            f"            return False\n"
            f"    return bindings_hold\n")
    namespace = {"__name__": __name__}
    exec(compile(text, "<s2sad: the guards of a derivative>", "exec"), namespace)
    made = namespace["_s2s_factory"](*bound.values())
    made.guards = guards
    return made


def hides_a_method(obj):
    """The name of an attribute of `obj`'s own that hides a method of its class, or None.
    (s2sad compiles the methods an argument's class defines; Python would call the
    instance's attribute.)"""
    own = getattr(obj, "__dict__", None)
    if not own:
        return None
    methods = _method_names(type(obj))
    return next((name for name in own if name in methods), None)


def _method_names(cls):
    methods = _methods.get(cls)
    if methods is None:
        methods = _methods[cls] = {
            name for klass in cls.__mro__ for name, v in vars(klass).items()
            if isinstance(v, (types.FunctionType, staticmethod, classmethod))}
    return methods


_methods = weakref.WeakKeyDictionary()      # {class: the names of its methods}


def methods_through(obj):
    """The guards that `obj` reads each method of its class as its class has it (an
    attribute of its own set later, which would hide one, compiles again)."""
    return [guard(("object", obj), (name,), getattr(obj, name))
            for name in sorted(_method_names(type(obj)))]


def _always():
    return True


_always.guards = []


def stamp(fn):
    """What a Python function's behaviour is made of besides its globals: its code, its
    defaults and the values of its closure cells, for caches keyed by the function
    (compare two with `same`)."""
    cells = []
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            cells.append(cell.cell_contents)
        except ValueError:
            cells.append(MISSING)
    return (getattr(fn, "__code__", None), getattr(fn, "__defaults__", None),
            getattr(fn, "__kwdefaults__", None), *cells)


def same(a, b):
    """Whether the stamps `a` and `b` hold the same objects."""
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))


def of_function(fn):
    """The guards on what `fn` is made of besides its globals: the identity of its code,
    defaults and keyword defaults, and of the value in each closure cell (and what a
    partial there binds); for the function that stands for a partial object (see
    driver.target), what that partial binds."""
    if not isinstance(fn, types.FunctionType):
        return []
    # (defaults that were None need no guard: the compiled code then takes every
    # argument, and a call that leaves one out fails as it would have)
    ref = weakref.ref(fn)
    out = [Guard(("function", ref), (attr,), getattr(fn, attr), "is")
           for attr in ("__code__", "__defaults__", "__kwdefaults__")
           if getattr(fn, attr) is not None]
    if fn.__kwdefaults__:
        # (a dict, which `f.__kwdefaults__["p"] = 3.0` changes in place: no assignment to
        # the function that the audit hook would see; its values are compiled in)
        out.append(Guard(("function", ref), ("__kwdefaults__",), dict(fn.__kwdefaults__),
                         "keywords"))
    for cell in fn.__closure__ or ():
        try:
            out.append(Guard(("cell", cell), (), cell.cell_contents, "is"))
        except ValueError:
            continue
        if binds(("cell", cell), (), cell.cell_contents) is not None:
            out.append(binds(("cell", cell), (), cell.cell_contents))
    made_for = getattr(fn, "s2s_partial", None)     # (what driver.target made for one)
    if made_for is not None and made_for() is not None:
        out.append(binds(("function", made_for), (), made_for()))
    return out


class _Same:
    """A key for an object without a hash (a dataclass instance passed as a function
    value): equal only to a key of the same object, which it keeps alive."""
    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj

    def __eq__(self, other):
        return isinstance(other, _Same) and other.obj is self.obj

    def __hash__(self):
        return id(self.obj)


def keyed(obj):
    """`obj` as a key: a tuple's items in turn, an object without a hash by its identity
    (`_Same`)."""
    if isinstance(obj, tuple):
        return tuple(keyed(o) for o in obj)
    return _Same(obj) if getattr(type(obj), "__hash__", None) is None else obj
