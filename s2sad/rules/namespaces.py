"""What before_ad/array_namespaces.py needs of SciPy's array API: its `array_namespace`,
which carries no derivative (a namespace is not a value), SciPy's NumPy namespace, and the
run-time check that the namespace found is that one. SciPy is optional: nothing here
imports it; the functions look in `sys.modules` for what the user's code imported."""
import sys

import numpy as np

from .registry import define, helper, looked_up

#: The modules that define `array_namespace`, by SciPy version (its own, since 1.15, and
#: the vendored array_api_compat's).
_MAKERS = ("scipy._lib._array_api", "scipy._lib.array_api_compat")
_declared = set()


def namespace_makers():
    """SciPy's `array_namespace` functions, declared without derivative, or () where
    SciPy's array API modules are not imported."""
    found = _makers()
    for f in found:
        if id(f) not in _declared:
            _declared.add(id(f))
            define(f, nondiff=True, quiet=not looked_up(f))
    return found


def _makers():
    """SciPy's `array_namespace` functions (what an exported module's check reads: it
    declares nothing)."""
    found = []
    for name in _MAKERS:
        f = getattr(sys.modules.get(name), "array_namespace", None)
        if f is not None and not any(f is g for g in found):
            found.append(f)
    return tuple(found)


def compat_numpy():
    """The namespace SciPy's `array_namespace` gives for NumPy's arrays (asked of it: SciPy
    imports that namespace on the first call), or None where SciPy's array API modules
    are not imported."""
    makers = _makers()
    if not makers:
        return None
    if not _numpy_namespace:
        _numpy_namespace.append(makers[0](np.zeros(0)))
    return _numpy_namespace[0]


_numpy_namespace = []


@helper
def numpy_namespace(namespace, error):
    """`namespace` (SciPy's `array_namespace` of a function's arrays), which must be
    SciPy's NumPy namespace, whose functions the derivative calls (`np.sum` for
    `xp.sum`): otherwise `error`."""
    if namespace is not compat_numpy():
        raise error
    return namespace


define(numpy_namespace, nondiff=True)
