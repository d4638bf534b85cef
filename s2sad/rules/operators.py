"""Rules for Python's operators, keyed by the `operator` functions the syntax means. (The
element writes the engine rewrites into calls, `a[i] = v` into `runtime.setitem` and
`lst.append(v)` into `runtime.append`, have their rules beside those helpers.)

One statement per primitive (see registry.define): its parameters, adjoint templates,
forward rule where it is not elementwise, and the kind of value it returns.
"""
import operator

import gast
import numpy as np

from .registry import define

ns = {"np": np}        # (and the runtime helpers, `_s2s_NAME`: see registry.HELPERS)

#: d(x ** y)/dx. At y == 0 it is 0 (x ** 0 is 1), also at x == 0, where the formula
#: would raise 0.0 ** -1; at x == 0 and y < 1 it is what NumPy's float64 power gives
#: (inf, where Python raises); constant exponents fold (`x ** 2` gives `g * 2 * x`).
POW_X = ("(g * y * x ** (y - 1) if y >= 1 else g * y * (x or np.float64(x)) ** (y - 1)) "
         "if y != 0 else 0.0 * x")

define(operator.add, "x, y", "g", "g", broadcast=True, returns="args")
define(operator.sub, "x, y", "g", "-g", broadcast=True, returns="args")
define(operator.mul, "x, y", "g * y", "g * x", broadcast=True, returns="args")
# the quotient rule from the quotient: one multiplication fewer than the reverse rule's
define(operator.truediv, "x, y", "g / y", "-g * x / (y * y)", broadcast=True,
       tangent=("t / y", "-t * ans / y"), returns="args")
define(operator.pow, "x, y", POW_X, "_s2s_exponent_term(g * ans, x)", namespace=ns, broadcast=True,
       returns="args")
define(operator.mod, "x, y", "g", "-g * (x // y)", broadcast=True, returns="args")
define(operator.neg, "x", "-g", elementwise=True, returns="args")
define(operator.pos, "x", "g", elementwise=True, returns="args")
define(operator.matmul, "a, b", "_s2s_matmul_lhs(g, a, b)", "_s2s_matmul_rhs(g, a, b)",
       namespace=ns, linear=("a", "b"), returns="array")
define(operator.getitem, "x, index", "_s2s_unindex(g, x, index)", namespace=ns, linear="x",
       view="x")   # (a basic index is a view)
define(operator.floordiv, nondiff=True, returns="args")
define(operator.invert, nondiff=True)

#: The primitive each operator syntax means.
SYNTAX = {
    gast.Add: operator.add, gast.Sub: operator.sub, gast.Mult: operator.mul,
    gast.Div: operator.truediv, gast.FloorDiv: operator.floordiv, gast.Mod: operator.mod,
    gast.Pow: operator.pow, gast.MatMult: operator.matmul, gast.USub: operator.neg,
    gast.UAdd: operator.pos, gast.Invert: operator.invert, gast.BitAnd: operator.and_,
    gast.BitOr: operator.or_, gast.BitXor: operator.xor, gast.LShift: operator.lshift,
    gast.RShift: operator.rshift,
}
for _op in (operator.and_, operator.or_, operator.xor, operator.lshift, operator.rshift):
    define(_op, nondiff=True)
