"""The runtime helpers the numba backend's code may call, for Numba.

A helper declared with `numba=True` (registry.HelperFacts) has a Numba version, in
rules/numba_overloads.py or rules/numba_reductions.py (NumPy's products, reductions and
writes): `numba_NAME` for the helper `NAME`; after_ad/native_check.py
refuses a call of any other. The versions cover numbers and arrays of up to two axes; a
case outside them (a broadcast of three axes, a sum along an axis) is a typing error
that names the helper and the case. `register()` imports Numba and registers them, once;
`versions()` gives them by helper (what `s2sad.export(f, backend="numba")` copies). It
registers rules/numba_numpy.py's too: NumPy's functions Numba lacks, for the primal and
the derivatives.
"""
import sys

from . import fusion, runtime, tangents  # noqa: F401 - every helper declared, with its facts
from .registry import HELPER_FACTS, HELPERS


def native():
    """{name: helper} of the helpers with a Numba version (`numba=True`)."""
    return {key[len("_s2s_"):]: HELPERS[key] for key, facts in HELPER_FACTS.items()
            if facts.numba}


def register():
    """Register the Numba versions (an optional dependency: imported here, once; the
    module of NumPy's functions Numba lacks imports the others first); the module that
    has most of them (and the constants numba_api reads)."""
    from . import numba_numpy  # noqa: PLC0415, F401 - Numba, only when it is used
    return sys.modules[f"{__package__}.numba_overloads"]


def versions():
    """{runtime helper: its Numba version}, registered."""
    modules = (register(), sys.modules[f"{__package__}.numba_reductions"])
    return {helper: next(getattr(m, f"numba_{name}") for m in modules
                         if hasattr(m, f"numba_{name}")) for name, helper in native().items()}
