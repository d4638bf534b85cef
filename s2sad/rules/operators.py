"""Rules for Python's operators, keyed by the `operator` functions the syntax means."""
import operator

import gast

from .registry import nondiff, vjp
from .runtime import log_base

ns = {"_s2s_log": log_base}

vjp(operator.add, "x, y", "g", "g")
vjp(operator.sub, "x, y", "g", "-g")
vjp(operator.mul, "x, y", "g * y", "g * x")
vjp(operator.truediv, "x, y", "g / y", "-g * x / (y * y)")
vjp(operator.pow, "x, y", "g * y * x ** (y - 1)", "g * ans * _s2s_log(x)", namespace=ns)
vjp(operator.mod, "x, y", "g", "-g * (x // y)")
vjp(operator.neg, "x", "-g")
vjp(operator.pos, "x", "g")
nondiff(operator.floordiv)
nondiff(operator.invert)

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
    nondiff(_op)
