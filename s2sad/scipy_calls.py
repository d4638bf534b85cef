"""The Takers (frontend/callables.py) of SciPy's functions that take a user's function,
declared the first time a lookup misses after the user's code imported SciPy (s2sad's
`__init__` registers `declare`), so that `import s2sad` imports no SciPy: root finders
(scipy_solvers.py), minimisers (scipy_optimisers.py), quadrature (scipy_quadrature.py) and
ODE solvers (scipy_odes.py).
"""
from . import scipy_odes, scipy_optimisers, scipy_quadrature, scipy_solvers


def declare():
    """Declare the Takers of SciPy's functions."""
    scipy_solvers.declare()
    scipy_optimisers.declare()
    scipy_quadrature.declare()
    scipy_odes.declare()
