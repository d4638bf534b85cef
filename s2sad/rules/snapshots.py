"""Libraries as s2sad found them: what rules and the code s2sad writes read.

The derivative of `np.cos` is `-np.sin(x)`, and generated code reads `np.sin` when it
runs. A user's code that patches NumPy (`np.sin = np.cos`, a test's
`monkeypatch.setattr(np, "exp", ...)`) changes what the user's own calls call, which the
guards see (docs/recompilation.md), but must not change the derivative of another
function. So a rule's template, and a pass that writes a call of NumPy, read a library
through its snapshot: a plain module (no `__getattr__`, so that Python reads its
attributes as fast as `math.sin`) that holds what the library's module held when s2sad
first read it, its public submodules (`np.linalg`, not their own) as their snapshots, and an attribute
that appears later (a submodule NumPy loads on first use, `np.fft`) as first seen.

Generated code calls the snapshot by the user's name for the library (`np`) while the
user's module still holds what the snapshot holds (`agrees`): then the user's own
`np.cos(x)` reads the same object through either, and the guards test that it stays
so. Otherwise the snapshot has a name of its own (`np_1.sin(x)`).

>>> import numpy as np
>>> snap = of(np)
>>> snap.sin is np.sin, live(snap) is np, of(snap) is snap, agrees(snap)
(True, True, True, True)
>>> real, np.sin = np.sin, np.cos
>>> snap.sin is real, agrees(snap)
(True, False)
>>> np.sin = real
"""
import operator
import types

#: The libraries whose modules rules read.
LIBRARIES = ("numpy", "scipy", "math", "cmath")
_snapshots = {}     # module name: its snapshot
_live = {}          # snapshot: _Taken


class _Taken:
    """What a snapshot was taken of: the module, its dictionary's size when last read,
    and the names and the objects (the module's, not the snapshots of submodules) the
    snapshot holds, to test in one pass (`agrees`)."""

    def __init__(self, module):
        self.module, self.size, self.names, self.objects, self.submodules = module, 0, [], [], []


def of(module):
    """The snapshot of `module`, a module of one of the `LIBRARIES` (made at the first
    call); any other object, and a snapshot, unchanged."""
    if (not isinstance(module, types.ModuleType) or module in _live
            or module.__name__.split(".")[0] not in LIBRARIES):
        return module
    snap = _snapshots.get(module.__name__)
    if snap is None:
        snap = _snapshots[module.__name__] = types.ModuleType(module.__name__)
        _live[snap] = _Taken(module)
        _add(snap, vars(module))
    else:
        _added(snap)
    return snap


def live(obj):
    """The module the snapshot `obj` was taken of; any other object unchanged."""
    taken = _live.get(obj) if isinstance(obj, types.ModuleType) else None
    return obj if taken is None else taken.module


def agrees(snap) -> bool:
    """Whether the module of the snapshot `snap` (and each of its public submodules)
    holds no other object than the snapshot under any name (one deleted since, which
    the user's code cannot read, is no matter); an attribute it holds and the snapshot
    does not is added to the snapshot first."""
    taken = _added(snap)
    own = vars(taken.module)
    return all(map(operator.is_, map(own.get, taken.names, taken.objects), taken.objects)) and all(
        map(agrees, taken.submodules))


def _added(snap):
    """The snapshot `snap` with the attributes its module has gained (`_Taken`)."""
    taken = _live[snap]
    own = vars(taken.module)
    if len(own) != taken.size:
        held = vars(snap)
        _add(snap, {k: v for k, v in own.items() if k not in held})
    return taken


def _add(snap, items):
    taken = _live[snap]
    taken.size = len(vars(taken.module))
    for name, value in items.items():
        if name in ("__getattr__", "__dict__"):
            continue
        taken.names.append(name)
        taken.objects.append(value)
        if (isinstance(value, types.ModuleType) and not name.startswith("_")
                and value.__name__ == f"{taken.module.__name__}.{name}"
                and "." not in taken.module.__name__):
            value = of(value)
            taken.submodules.append(value)
        setattr(snap, name, value)
