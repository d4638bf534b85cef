"""Rules for the `math` module, one statement per primitive (see registry.define).

Every function of `math` returns a scalar; those with a rule act on numbers, so their
reverse templates also give their tangents, and give a float for numbers.
"""
import functools
import math

from .operators import POW_X
from .registry import define, primitive, vjp_each
from .runtime import log_base

ns = dict(vars(math), _s2s_log=log_base)
rule = functools.partial(define, namespace=ns, elementwise=True, returns="scalar",
                         floats=True)

rule(math.exp, "x", "g * ans")
rule(math.expm1, "x", "g * (ans + 1)")
rule(math.log, "x", "g / x")
rule(math.log, "x, base", "g / (x * log(base))", "-g * log(x) / (base * log(base) ** 2)")
rule(math.log2, "x", "g / (x * log(2.0))")
rule(math.log10, "x", "g / (x * log(10.0))")
rule(math.log1p, "x", "g / (1 + x)")
rule(math.sqrt, "x", "g / (2 * ans)")
rule(math.pow, "x, y", POW_X, "g * ans * _s2s_log(x)")
rule(math.sin, "x", "g * cos(x)")
rule(math.cos, "x", "-g * sin(x)")
rule(math.tan, "x", "g * (1 + ans * ans)")
rule(math.asin, "x", "g / sqrt(1 - x * x)")
rule(math.acos, "x", "-g / sqrt(1 - x * x)")
rule(math.atan, "x", "g / (1 + x * x)")
rule(math.atan2, "y, x", "g * x / (x * x + y * y)", "-g * y / (x * x + y * y)")
rule(math.sinh, "x", "g * cosh(x)")
rule(math.cosh, "x", "g * sinh(x)")
rule(math.tanh, "x", "g * (1 - ans * ans)")
rule(math.asinh, "x", "g / sqrt(x * x + 1)")
rule(math.acosh, "x", "g / sqrt(x * x - 1)")
rule(math.atanh, "x", "g / (1 - x * x)")
rule(math.hypot, "x, y", "g * x / ans", "g * y / ans")
vjp_each(math.hypot, "x", "g * x / ans")
rule(math.fabs, "x", "g * copysign(1.0, x)")
rule(math.copysign, "x, y", "g * copysign(1.0, x) * copysign(1.0, y)", None, zero="y")
rule(math.fmod, "x, y", "g", "-g * trunc(x / y)")
rule(math.erf, "x", "g * 2 / sqrt(pi) * exp(-x * x)")
rule(math.erfc, "x", "-g * 2 / sqrt(pi) * exp(-x * x)")
rule(math.degrees, "x", "g * (180 / pi)")
rule(math.radians, "x", "g * (pi / 180)")
if hasattr(math, "cbrt"):
    rule(math.cbrt, "x", "g / (3 * ans * ans)")
if hasattr(math, "exp2"):
    rule(math.exp2, "x", "g * ans * log(2.0)")
for _f in (math.gamma, math.lgamma):        # no rule yet, but a float
    define(_f, returns="scalar", floats=True)

for _f in (math.floor, math.ceil, math.trunc, math.isnan, math.isinf, math.isfinite,
           math.isclose, math.factorial, math.gcd, math.comb, math.perm):
    define(_f, nondiff=True, returns="scalar")
for _f in vars(math).values():              # the others: scalars
    if callable(_f) and primitive(_f) is None:
        define(_f, returns="scalar")
