"""Rules for Python's operators, keyed by the `operator` functions the syntax means, and
for the element writes (`a[i] = v`, `lst.append(v)`) the engine rewrites into calls.

One statement per primitive (see registry.define): its parameters, adjoint templates,
forward rule where it is not elementwise, and the kind of value it returns.
"""
import operator

import gast
import numpy as np

from . import runtime
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
define(operator.pow, "x, y", POW_X, "g * ans * _s2s_log_base(x)", namespace=ns, broadcast=True,
       returns="args")
define(operator.mod, "x, y", "g", "-g * (x // y)", broadcast=True, returns="args")
define(operator.neg, "x", "-g", elementwise=True, returns="args")
define(operator.pos, "x", "g", elementwise=True, returns="args")
define(operator.matmul, "a, b", "_s2s_matmul_lhs(g, a, b)", "_s2s_matmul_rhs(g, a, b)",
       namespace=ns, linear=("a", "b"), returns="array")
define(operator.getitem, "x, index", "_s2s_unindex(g, x, index)", namespace=ns, linear="x",
       view="x")   # (a basic index is a view)
define(runtime.setitem, "a, index, v", a="_s2s_zero_at(g, index)",
       v="_s2s_unbroadcast(_s2s_take(g, index), v)", namespace=ns, linear="a, v",
       returns="first")
define(runtime.append, "a, v", a="_s2s_head(g)", v="_s2s_last(g)", namespace=ns,
       linear="a, v")
# the copy of a default a call changes, and its contents kept (see before_ad.desugar)
define(runtime.own_default, "v", "g", linear="v", returns="first")
define(runtime.keep_default, nondiff=True)
# the loops over sequences and dicts that before_ad.desugar writes with indexes
# (a list, tuple or array itself)
define(runtime.sequence, "obj", "_s2s_unsequence(g, obj, 0.0)", namespace=ns,
       tangent="_s2s_unsequence(t, obj, _s2s_zeros_like(ans))", view="obj")
define(runtime.unsequence, "d, obj, zero", linear="d, zero")
define(runtime.keys, nondiff=True)
# the dicts before_ad.desugar builds with computed keys (comprehensions, `dict(zip(k, v))`),
# and `d.get(key, default)`
define(runtime.dict_of, "keys, values", values="_s2s_undict_of(g, keys, values)",
       namespace=ns, linear="values", zero="keys", returns="container", view="values")
define(runtime.dict_get, "d, key, default=None", d="_s2s_unget(g, d, key)",
       default="_s2s_unget_default(g, d, key)", namespace=ns, linear="d, default",
       zero="key", view="d, default")      # (containers.DICT_METHODS: the method `get`)
define(runtime.dict_set, "d, key, v", d="_s2s_undict_set(g, d, key)",
       v="_s2s_dict_set_value(g, key)", namespace=ns, linear="d, v", zero="key",
       returns="container", view="d, v")
# (their adjoints are linear in `g`: forward over reverse, see rules/tangents.py)
define(runtime.undict_set, "g, d, key", linear="g")
define(runtime.dict_set_value, "g, key", linear="g")
define(runtime.undict_of, "g, keys, values", linear="g")
define(runtime.undict, "g, mapping", linear="g")
define(runtime.unget, "g, d, key", linear="g")
define(runtime.unget_default, "g, d, key", linear="g")
define(runtime.unlist, "g, items", linear="g")
define(runtime.list_dot, "t, items, ans", linear="t")
# `+` and `*` of lists and tuples (join, repeat): the engine calls these where an operand
# may be one; they are linear in the adjoints and tangents
define(runtime.unadd, "g, x, y, which", linear="g")
define(runtime.unmul, "g, x, y, which", linear="g")
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
