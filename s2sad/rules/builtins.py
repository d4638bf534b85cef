"""Rules for Python builtins."""
import builtins
import math

from .operators import POW_X
from .registry import nondiff, returns, vjp
from . import runtime
from .runtime import log_base

vjp(builtins.abs, "x", "g * copysign(1.0, x)", namespace=vars(math), elementwise=True)
vjp(builtins.pow, "x, y", POW_X, "g * ans * _s2s_log(x)",
    namespace={"_s2s_log": log_base})
vjp(builtins.max, "x, y", "g * (x >= y)", "g * (x < y)")
vjp(builtins.min, "x, y", "g * (x <= y)", "g * (x > y)")
# With three or more arguments, the gradient goes to the first argument that attains the
# result, the one Python returns.
for _n in range(3, 9):
    _params = ", ".join(f"x{i}" for i in range(_n))
    for _f in (builtins.max, builtins.min):
        vjp(_f, _params, *[f"g * _s2s_first(ans, {i}, {_params})" for i in range(_n)],
            namespace={"_s2s_first": runtime.first})
vjp(builtins.float, "x", "g", elementwise=True)
vjp(builtins.sum, "iterable, start=0", "_s2s_unsum(g, iterable)", "g",
    namespace={"_s2s_unsum": runtime.unsum})
vjp(builtins.getattr, "obj, name", "_s2s_unattr(g, obj, name)",
    namespace={"_s2s_unattr": runtime.unattr})      # `p.a`, a field of an object

for _f in (builtins.int, builtins.round, builtins.bool, builtins.len, builtins.range,
           builtins.print, builtins.isinstance, builtins.str, builtins.repr,
           builtins.hash, builtins.id, builtins.type):
    nondiff(_f)

returns("scalar", builtins.float, builtins.int, builtins.round, builtins.len, builtins.bool)
returns("args", builtins.abs, builtins.pow, builtins.max, builtins.min)
