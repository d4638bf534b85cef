"""Rules for Python builtins."""
import builtins
import math

from .registry import nondiff, returns, vjp, vjp_each
from . import runtime
from .runtime import log_base

vjp(builtins.abs, "x", "g * copysign(1.0, x)", namespace=vars(math), elementwise=True)
vjp(builtins.pow, "x, y", "g * y * x ** (y - 1)", "g * ans * _s2s_log(x)",
    namespace={"_s2s_log": log_base})
vjp(builtins.max, "x, y", "g * (x >= y)", "g * (x < y)")
vjp(builtins.min, "x, y", "g * (x <= y)", "g * (x > y)")
vjp_each(builtins.max, "x", "g * (x == ans)")
vjp_each(builtins.min, "x", "g * (x == ans)")
vjp(builtins.float, "x", "g", elementwise=True)
vjp(builtins.sum, "iterable, start=0", "_s2s_unsum(g, iterable)", "g",
    namespace={"_s2s_unsum": runtime.unsum})

for _f in (builtins.int, builtins.round, builtins.bool, builtins.len, builtins.range,
           builtins.print, builtins.isinstance, builtins.str, builtins.repr,
           builtins.hash, builtins.id, builtins.type):
    nondiff(_f)

returns("scalar", builtins.float, builtins.int, builtins.round, builtins.len, builtins.bool)
returns("args", builtins.abs, builtins.pow, builtins.max, builtins.min)
