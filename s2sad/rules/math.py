"""Rules for the `math` module, one statement per primitive (see registry.define).

Every function of `math` returns a scalar; those with a rule act on numbers, so their
reverse templates also give their tangents, and give a float for numbers.
"""
import functools
import math

import numpy as np

from .operators import POW_X
from .registry import define, primitive, vjp_each
from . import runtime  # noqa: F401 - the helpers its templates call, declared

ns = dict(vars(math), np=np)
rule = functools.partial(define, namespace=ns, elementwise=True, returns="scalar",
                         floats=True)

rule(math.exp, "x", "g * ans")
rule(math.expm1, "x", "g * (ans + 1)")
rule(math.log, "x", "g / x")
rule(math.log, "x, base", "g / (x * log(base))", "-g * log(x) / (base * log(base) ** 2)")
rule(math.log2, "x", "g / (x * log(2.0))")
rule(math.log10, "x", "g / (x * log(10.0))")
rule(math.log1p, "x", "g / (1 + x)")
# A denominator that may be 0 is `d or np.float64(d)`: where it is 0, NumPy's float64
# division gives inf, -inf or nan (and warns), where Python's would raise
# ZeroDivisionError; elsewhere it costs a test of truth
rule(math.sqrt, "x", "g / (2 * (ans or np.float64(ans)))")
rule(math.pow, "x, y", POW_X, "_s2s_exponent_term(g * ans, x)")
rule(math.sin, "x", "g * cos(x)")
rule(math.cos, "x", "-g * sin(x)")
rule(math.tan, "x", "g * (1 + ans * ans)")
rule(math.asin, "x", "g / (sqrt(1 - x * x) or np.float64(0.0))")
rule(math.acos, "x", "-g / (sqrt(1 - x * x) or np.float64(0.0))")
rule(math.atan, "x", "g / (1 + x * x)")
rule(math.atan2, "y, x", "g * x / (x * x + y * y or np.float64(0.0))",
     "-g * y / (x * x + y * y or np.float64(0.0))")
rule(math.sinh, "x", "g * cosh(x)")
rule(math.cosh, "x", "g * sinh(x)")
rule(math.tanh, "x", "g * (1 - ans * ans)")
rule(math.asinh, "x", "g / sqrt(x * x + 1)")
rule(math.acosh, "x", "g / (sqrt(x * x - 1) or np.float64(0.0))")
rule(math.atanh, "x", "g / (1 - x * x)")
rule(math.hypot, "x, y", "g * x / (ans or np.float64(0.0))",
     "g * y / (ans or np.float64(0.0))")
vjp_each(math.hypot, "x", "g * x / (ans or np.float64(0.0))", namespace=ns)
rule(math.fabs, "x", "g * copysign(1.0, x)")
rule(math.copysign, "x, y", "g * copysign(1.0, x) * copysign(1.0, y)", None, zero="y")
rule(math.fmod, "x, y", "g", "-g * trunc(x / y)")
# x - ans is the multiple of y taken away: (x - ans) / y is the integer remainder rounds to
rule(math.remainder, "x, y", "g", "-g * (x - ans) / y")
rule(math.erf, "x", "g * 2 / sqrt(pi) * exp(-x * x)")
rule(math.erfc, "x", "-g * 2 / sqrt(pi) * exp(-x * x)")
rule(math.degrees, "x", "g * (180 / pi)")
rule(math.radians, "x", "g * (pi / 180)")
if hasattr(math, "cbrt"):
    rule(math.cbrt, "x", "g / (3 * ans * ans or np.float64(0.0))")
if hasattr(math, "exp2"):
    rule(math.exp2, "x", "g * ans * log(2.0)")
rule(math.gamma, "x", "g * ans * _s2s_polygamma(0, x)")
rule(math.lgamma, "x", "g * _s2s_polygamma(0, x)")       # log|Γ|: digamma for x < 0 too
# functions of sequences of numbers; the adjoint of a sequence is one of its type, made
# from an array (one template per sequence: tangents add up, and `+` would join them)
_DIST = ("_s2s_shaped_as({0}, _s2s_safe_divide(g, ans) * (np.asarray({0}, dtype=np.float64) - "
         "np.asarray({1}, dtype=np.float64)))")
define(math.dist, "p, q", _DIST.format("p", "q"), _DIST.format("q", "p"),
       tangent=("_s2s_dist_dot(t, p, q, ans)", "-_s2s_dist_dot(t, p, q, ans)"),
       namespace=ns, returns="scalar", floats=True)
define(math.prod, "iterable, start=1", "_s2s_shaped_as(iterable, g * start * "
       "_s2s_prod_others(np.asarray(iterable, dtype=np.float64)))", "g * prod(iterable)",
       tangent=("_s2s_prod_dot(t, iterable, start)", "t * prod(iterable)"), namespace=ns,
       returns="scalar")
define(math.fsum, "iterable", "_s2s_unsum(g, iterable)", namespace=ns, linear="iterable",
       returns="scalar", floats=True)

for _f in (math.floor, math.ceil, math.trunc, math.isnan, math.isinf, math.isfinite,
           math.isclose, math.factorial, math.gcd, math.comb, math.perm):
    define(_f, nondiff=True, returns="scalar")
for _f in vars(math).values():              # the others: scalars
    if callable(_f) and primitive(_f) is None:
        define(_f, returns="scalar")
