"""Plain classes: the user's classes whose instances s2sad takes apart by their attributes
without their being registered (rules/pytrees.py's `_Plain` node), and whose constructor
that only stores gets a rule (rules/registry.py). Imports nothing of s2sad's."""
import abc


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
