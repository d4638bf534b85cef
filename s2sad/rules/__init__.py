"""Derivative rules, one module per library; the engine holds no library knowledge.

`registry` holds one record per primitive; `operators`, `math`, `builtins` and `numpy`
declare theirs, one statement each; the modules of runtime helpers (`runtime` and those
it imports) declare each helper's rules beside it; `tangents` holds forward mode's own
helpers. Importing this package registers them all; `scipy`'s rules the first time a
lookup misses after the user's code imported SciPy (an optional dependency, whose import
takes a second).
"""
from . import registry
with registry.loading():     # (a template may call a helper of a module loaded later)
    from . import runtime, writes, operators, math, builtins, numpy, tangents  # registrations
    from . import complex_numbers  # noqa: F401  (what the rules above do with complex values)
    from . import fft, complex_linalg  # noqa: F401  (np.fft's, np.linalg's of complex values)
    from . import batching  # noqa: F401  (batching rules, after the primitives they batch)
    from . import fusion  # noqa: F401  (the numba backend's fused loops: after_ad/native_fuse.py)
    from . import namespaces  # noqa: F401  (SciPy's array API: before_ad/array_namespaces.py)
    from . import constructors  # noqa: F401  (dataclasses', named tuples', plain classes')

__all__ = ["registry", "runtime", "writes", "operators", "math", "builtins", "numpy", "tangents"]



def _load_scipy():
    from . import scipy     # noqa: F401  (its registrations; imports SciPy's modules)


# (when the user's code has imported the modules of SciPy they are for)
registry.optional(("scipy.linalg", "scipy.special", "scipy.stats", "scipy.spatial"),
                  _load_scipy)
