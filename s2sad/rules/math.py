"""Rules for the `math` module."""
import math

import functools

from . import registry
from .operators import POW_X
from .registry import nondiff, vjp_each
from .runtime import log_base

ns = vars(math)
vjp = functools.partial(registry.vjp, elementwise=True)

vjp(math.exp, "x", "g * ans")
vjp(math.expm1, "x", "g * (ans + 1)")
vjp(math.log, "x", "g / x")
vjp(math.log, "x, base", "g / (x * log(base))", "-g * log(x) / (base * log(base) ** 2)",
    namespace=ns)
vjp(math.log2, "x", "g / (x * log(2.0))", namespace=ns)
vjp(math.log10, "x", "g / (x * log(10.0))", namespace=ns)
vjp(math.log1p, "x", "g / (1 + x)")
vjp(math.sqrt, "x", "g / (2 * ans)")
vjp(math.pow, "x, y", POW_X, "g * ans * _s2s_log(x)",
    namespace={"_s2s_log": log_base})
vjp(math.sin, "x", "g * cos(x)", namespace=ns)
vjp(math.cos, "x", "-g * sin(x)", namespace=ns)
vjp(math.tan, "x", "g * (1 + ans * ans)")
vjp(math.asin, "x", "g / sqrt(1 - x * x)", namespace=ns)
vjp(math.acos, "x", "-g / sqrt(1 - x * x)", namespace=ns)
vjp(math.atan, "x", "g / (1 + x * x)")
vjp(math.atan2, "y, x", "g * x / (x * x + y * y)", "-g * y / (x * x + y * y)")
vjp(math.sinh, "x", "g * cosh(x)", namespace=ns)
vjp(math.cosh, "x", "g * sinh(x)", namespace=ns)
vjp(math.tanh, "x", "g * (1 - ans * ans)")
vjp(math.asinh, "x", "g / sqrt(x * x + 1)", namespace=ns)
vjp(math.acosh, "x", "g / sqrt(x * x - 1)", namespace=ns)
vjp(math.atanh, "x", "g / (1 - x * x)")
vjp(math.hypot, "x, y", "g * x / ans", "g * y / ans")
vjp_each(math.hypot, "x", "g * x / ans")
vjp(math.fabs, "x", "g * copysign(1.0, x)", namespace=ns)
vjp(math.copysign, "x, y", "g * copysign(1.0, x) * copysign(1.0, y)", None, namespace=ns)
vjp(math.fmod, "x, y", "g", "-g * trunc(x / y)", namespace=ns)
vjp(math.erf, "x", "g * 2 / sqrt(pi) * exp(-x * x)", namespace=ns)
vjp(math.erfc, "x", "-g * 2 / sqrt(pi) * exp(-x * x)", namespace=ns)
vjp(math.degrees, "x", "g * (180 / pi)", namespace=ns)
vjp(math.radians, "x", "g * (pi / 180)", namespace=ns)
if hasattr(math, "cbrt"):
    vjp(math.cbrt, "x", "g / (3 * ans * ans)")
if hasattr(math, "exp2"):
    vjp(math.exp2, "x", "g * ans * log(2.0)", namespace=ns)

for _f in (math.floor, math.ceil, math.trunc, math.isnan, math.isinf, math.isfinite,
           math.isclose, math.factorial, math.gcd, math.comb, math.perm):
    nondiff(_f)

from .registry import RETURNS as _RETURNS  # noqa: E402
for _name in dir(math):
    if callable(getattr(math, _name)):
        _RETURNS[getattr(math, _name)] = "scalar"
