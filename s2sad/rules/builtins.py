"""Rules for Python builtins, one statement per primitive (see registry.define)."""
import builtins
import math

import numpy as np

from . import runtime  # noqa: F401 - the helpers its templates call, declared
from .operators import POW_X
from .registry import define

ns = {"copysign": math.copysign, "np": np}

define(builtins.abs, "x", "g * copysign(1.0, x)", namespace=ns, elementwise=True,
       returns="args")
define(builtins.pow, "x, y", POW_X, "_s2s_exponent_term(g * ans, x)", namespace=ns,
       tangent=(POW_X.replace("g", "t"), "_s2s_exponent_term(t * ans, x)"), returns="args")
define(builtins.max, "x, y", "g * (x >= y)", "g * (x < y)",
       tangent=("t * (x >= y)", "t * (x < y)"), returns="args")
define(builtins.min, "x, y", "g * (x <= y)", "g * (x > y)",
       tangent=("t * (x <= y)", "t * (x > y)"), returns="args")
# With three or more arguments, the derivative goes to the first argument that attains
# the result, the one Python returns.
for _n in range(3, 9):
    _params = ", ".join(f"x{i}" for i in range(_n))
    for _f in (builtins.max, builtins.min):
        define(_f, _params, *[f"g * _s2s_first(ans, {i}, {_params})" for i in range(_n)],
               namespace=ns,
               tangent=[f"t * _s2s_first(ans, {i}, {_params})" for i in range(_n)])
define(builtins.float, "x", "g", elementwise=True, returns="scalar")
define(builtins.sum, "iterable, start=0", "_s2s_unsum(g, iterable)", "g", namespace=ns,
       linear="iterable, start")
define(builtins.getattr, "obj, name", "_s2s_unattr(g, obj, name)", namespace=ns,
       linear="obj")                                 # `p.a`, a field of an object
define(builtins.reversed, "seq", linear="seq")
# (no `key=`: a call with one matches no variant and is refused)
define(builtins.sorted, "iterable, reverse=False", "_s2s_unsort_list(g, iterable, reverse)",
       namespace=ns, tangent="_s2s_sort_list_dot(t, iterable, reverse)", returns="container")

# `list(x)` and `tuple(x)` of a list or tuple, of an array (its rows) or of a dict (its
# keys, which carry no derivative)
for _f in (builtins.list, builtins.tuple):
    define(_f, "iterable", "_s2s_unlist(g, iterable)", namespace=ns,
           tangent="_s2s_list_dot(t, iterable, ans)", returns="container", view="iterable")

# `dict(d)`, a copy (before_ad.dicts writes the other calls of dict as displays and
# `_s2s_dict_of`)
define(builtins.dict, "mapping", "_s2s_undict(g, mapping)", namespace=ns, linear="mapping",
       returns="container", view="mapping")

for _f in (builtins.int, builtins.round, builtins.bool, builtins.len):
    define(_f, nondiff=True, returns="scalar")
for _f in (builtins.range, builtins.print, builtins.isinstance, builtins.str, builtins.repr,
           builtins.hash, builtins.id, builtins.type):
    define(_f, nondiff=True)
