"""Derivative rules, one module per library; the engine holds no library knowledge.

Importing this package registers the built-in tables.
"""
from . import registry  # noqa: F401
from . import operators, math, builtins, numpy  # noqa: F401  (registration side effects)
