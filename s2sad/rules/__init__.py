"""Derivative rules, one module per library; the engine holds no library knowledge.

`registry` holds one record per primitive; `operators`, `math`, `builtins` and `numpy`
declare theirs, one statement each; `tangents` holds forward mode's helpers and the
forward rules of the `runtime` helpers that generated code calls. Importing this
package registers them all; `scipy`'s rules the first time a lookup misses after the
user's code imported SciPy (an optional dependency, whose import takes a second).
"""
from . import registry
from . import operators, math, builtins, numpy, tangents  # their registrations

__all__ = ["registry", "operators", "math", "builtins", "numpy", "tangents"]



def _load_scipy():
    from . import scipy     # noqa: F401  (its registrations; imports SciPy's modules)


registry.optional("scipy", _load_scipy)     # when the user's code has imported SciPy
