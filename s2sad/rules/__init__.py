"""Derivative rules, one module per library; the engine holds no library knowledge.

`registry` holds one record per primitive; `operators`, `math`, `builtins` and `numpy`
declare theirs, one statement each; `tangents` holds forward mode's helpers and the
forward rules of the `runtime` helpers that generated code calls. Importing this
package registers them all; `scipy`'s rules when SciPy imports (it is optional).
"""
from . import registry
from . import operators, math, builtins, numpy, tangents  # their registrations

__all__ = ["registry", "operators", "math", "builtins", "numpy", "tangents"]

try:
    import scipy as _scipy      # (an optional dependency)
except ImportError:
    pass
else:
    from . import scipy
    __all__.append("scipy")
