"""Shape analysis: which names certainly have the same shape.

The adjoint of a broadcasting operation is summed back to each argument's shape unless
the shapes are known to be equal. The shape of a name is known as the broadcast of a set
of shapes: a parameter's own, or that of an index of an array by constant slices that
trim as many elements from each axis (`x[1:]` and `x[:-1]` have the same shape). An
elementwise operation (`2 * x`, `np.tanh(x)`, `x + y`) has the broadcast of the sets of
its array operands, so that `y * z` and `(y * z) - np.exp(z)` have the same shape. Only
names assigned once are classified; a name assigned in several places (a loop-carried
value) has a shape of its own.

>>> import gast
>>> from s2sad.frontend import source
>>> def f(x):
...     a = x[1:]
...     b = x[:-1]
...     c = a * b
...     d = 2.0 * c
...     return d
>>> shapes = same_shape_in(f)
>>> shapes.same("d", "a"), shapes.same("d", "x")
(True, False)
"""
import gast

from ..codegen import nodes
from .kinds import ARRAY, SCALAR


class Shapes:
    """See the module docstring; `ops` are the statements' `Op`s, `kinds` their `Kinds`."""

    def __init__(self, fn, ops, kinds):
        assigned = {}
        for n in nodes.walk(fn):
            if isinstance(n, gast.Assign) and isinstance(n.targets[0], gast.Name):
                assigned.setdefault(n.targets[0].id, []).append(n)
            elif isinstance(n, (gast.For, gast.AugAssign)):
                for t in nodes.walk(n.target):
                    if isinstance(t, gast.Name):
                        assigned.setdefault(t.id, []).extend([None, None])
        self.kinds = kinds
        self.cls = {}
        self.many = {n for n, defs in assigned.items() if len(defs) > 1}
        for s in (n for n in nodes.walk(fn) if isinstance(n, gast.Assign)):
            target = s.targets[0]
            if isinstance(target, gast.Name) and target.id not in self.many:
                key = self._key(s.value, ops.get(s))
                if key is not None:
                    self.cls[target.id] = key

    def of(self, name):
        """A set of shapes whose broadcast is the shape of `name` (None for unknown)."""
        if name in self.many:
            return None
        return self.cls.get(name, frozenset([("name", name)]))

    def same(self, a, b):
        """Whether names (or name nodes) `a` and `b` certainly have the same shape."""
        a, b = (getattr(v, "id", v) for v in (a, b))
        if not (isinstance(a, str) and isinstance(b, str)):
            return False
        ka, kb = self.of(a), self.of(b)
        return a == b or (ka is not None and ka == kb)

    def _key(self, value, op):
        if isinstance(value, gast.Name):
            return self.of(value.id)
        if (isinstance(value, gast.Subscript) and isinstance(value.value, gast.Name)
                and self.kinds[value.value] == ARRAY):
            index = trims(value.slice)
            base = self.of(value.value.id)
            return None if index is None or base is None else frozenset(
                [("index", base, index)])
        variant = getattr(op, "variant", None)
        if variant is None or not variant.elementwise:
            return None
        shaped = [a for a in op.bound.values() if self.kinds[a] != SCALAR]
        if not shaped or not all(isinstance(a, gast.Name) for a in shaped):
            return None
        keys = [self.of(a.id) for a in shaped]
        return None if None in keys else frozenset().union(*keys)


def trims(index):
    """A key for a constant basic index that determines the shape it selects from an
    array of a given shape: per axis, an int removes it, and a slice `a:-b` keeps
    `max(n - a - b, 0)` of `n` elements."""
    items = index.elts if isinstance(index, gast.Tuple) else [index]
    out = []
    for item in items:
        if _int(item) is not None:
            out.append("int")
            continue
        if not isinstance(item, gast.Slice) or item.step is not None:
            return None
        lower = 0 if item.lower is None else _int(item.lower)
        upper = 0 if item.upper is None else _int(item.upper)
        if lower is None or upper is None or lower < 0 or upper > 0 or (
                item.upper is not None and upper == 0):
            return None
        out.append(lower - upper)
    return tuple(out)


def _int(e):
    if isinstance(e, gast.Constant) and type(e.value) is int:
        return e.value
    if (isinstance(e, gast.UnaryOp) and isinstance(e.op, gast.USub)
            and isinstance(e.operand, gast.Constant) and type(e.operand.value) is int):
        return -e.operand.value
    return None


def same_shape_in(fn):
    """The `Shapes` of `fn` in Wengert form, its parameters arrays (for examples)."""
    from .. import pipeline
    from .activity import definitions
    from .kinds import ARRAY, Kinds
    from .primitives import classify
    src, node, _ = pipeline.stages(fn, stop="wengert")
    ops = nodes.NodeMap((s, classify(s.value, src)) for _, s in definitions(node.body))
    return Shapes(node, ops, Kinds(node, src, {a.id: ARRAY for a in node.args.args}))
