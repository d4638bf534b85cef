"""Derivative rules, one module per library; the engine holds no library knowledge.

`registry` holds one record per primitive; `operators`, `math`, `builtins` and `numpy`
declare theirs, one statement each; `tangents` holds forward mode's helpers and the
forward rules of the `runtime` helpers that generated code calls. Importing this
package registers them all.
"""
from . import registry
from . import operators, math, builtins, numpy, tangents  # their registrations

__all__ = ["registry", "operators", "math", "builtins", "numpy", "tangents"]
