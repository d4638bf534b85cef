"""Derivative rules, one module per library; the engine holds no library knowledge.

Importing this package registers the built-in tables.
"""
from . import registry  # noqa: F401
from . import operators, math, builtins, numpy  # noqa: F401  (registration side effects)
from . import tangents  # noqa: F401,E402  (forward rules; after the tables it extends)
