"""Helpers that generated code calls where plain arithmetic will not do."""
import math

import numpy as np


def zeros_like(x):
    """The zero adjoint of `x`: 0.0 for a number, a float zero array for an array."""
    if isinstance(x, np.ndarray):
        return np.zeros_like(x, dtype=np.result_type(x.dtype, np.float32))
    if isinstance(x, (tuple, list)):
        return type(x)(zeros_like(v) for v in x)
    return 0.0


def log_base(x):
    """log(x) for the exponent rule of `x ** y`: 0.0 where x == 0 (0 ** y is flat in y)."""
    if isinstance(x, np.ndarray):
        return np.log(np.where(x == 0, 1.0, x))
    return math.log(x) if x != 0 else 0.0


def seed(y, name):
    """The adjoint 1 of a scalar output `y` of the same type; a clear error otherwise."""
    import numbers
    from ..errors import NonScalarOutputError
    if isinstance(y, np.ndarray) and y.shape == ():
        return np.ones_like(y)
    if isinstance(y, np.generic) and np.issubdtype(y.dtype, np.floating):
        return y.dtype.type(1)
    if isinstance(y, numbers.Real) and not isinstance(y, bool):
        return 1.0
    shape = getattr(y, "shape", None)
    found = f"an array of shape {shape}" if shape is not None else f"a {type(y).__name__}"
    raise NonScalarOutputError(
        f"grad needs a function with a scalar output, but {name}() returned {found}. Use "
        "s2sad.vjp for non-scalar outputs (or reduce the output, e.g. with .sum()).")
