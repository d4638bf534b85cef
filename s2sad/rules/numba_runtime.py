"""The runtime helpers the numba backend's code may call, for Numba.

`NATIVE` names the helpers of rules/runtime.py that have a Numba version (in
rules/numba_overloads.py, `numba_NAME` for `runtime.NAME`); after_ad/native_check.py
refuses a call of any other. The versions cover numbers and arrays of up to two axes; a
case outside them (a broadcast of three axes, a sum along an axis) is a typing error
that names the helper and the case. `register()` imports Numba and registers them, once;
`versions()` gives them by helper (what `s2sad.export(f, backend="numba")` copies).
`NATIVE_TANGENTS` names forward mode's helpers (rules/tangents.py) with one.
"""
from . import runtime, tangents

#: The helpers with a Numba version.
NATIVE = frozenset({"add", "unbroadcast", "unindex", "zeros_like", "take", "own",
                    "snapshot", "like", "unreduce", "seed", "matmul_lhs", "matmul_rhs",
                    "setitem", "cotangents", "check_real"})
#: The helpers of forward mode (rules/tangents.py) with a Numba version.
NATIVE_TANGENTS = frozenset({"broadcast_like", "value_and_tangent"})


def register():
    """Register the Numba versions (an optional dependency: imported here, once); the
    module that has them."""
    from . import numba_overloads   # noqa: PLC0415 - Numba, only when it is used
    return numba_overloads


def versions():
    """{runtime helper: its Numba version}, registered."""
    module = register()
    return {**{getattr(runtime, name): getattr(module, f"numba_{name}") for name in NATIVE},
            **{getattr(tangents, name): getattr(module, f"numba_{name}")
               for name in NATIVE_TANGENTS}}
