"""Scaled batched values: the batching transform's (ad/batching.py) simplification of
products by values the batch shares.

A batched value times one the batch shares (`t = x * u`, `x` batched, `u` not) is `x`
scaled by `u`: the statements after it that only scale it further (by shared values,
`-t`, `t / v`, the sum of two values scaled from the same `x`) compute their scale
alone, on unbatched values, and the batched value is computed (`x * scale`, once) only
where a statement reads it otherwise; a sum over every axis of an item of a scaled
value is a matrix product (`_s2s_batch_sum_scaled`: `x @ scale`). So a forward pass
batched along the unit tangents, where every tangent is the tangent of the input times
what the primal computes, costs one product per tangent that is read, not one per
operation: the Hessian of `np.sum(np.log1p(np.exp(X @ w)))` is `X.T * s` (the batched
`X @ w_dot`, scaled) times `X`.

>>> from s2sad.ad.batching import Batching
>>> print(show(Batching, '''
... def f(x, u, v):
...     t = x * u
...     s = -t / v + t * v
...     return np.sum(s)
... ''', wrt=(0,), arrays=True))
def f_batched(x, u, v):
    t_1_scale = -u
    t_2_scale = t_1_scale / v
    t_3_scale = u * v
    s_scale = t_2_scale + t_3_scale
    y = _s2s_batch_sum_scaled(x, s_scale, None)
    return y

Only straight-line statements of the function's body take part, each assigning a name
assigned nowhere else, from a base (`x`) assigned once or a parameter; a statement
that may change an array in place (a method of a value, a call of a Python function, a
keyword `out`) ends the scaling of the values before it (those read after it are
computed where they are assigned).
"""
import dataclasses

import gast

from .. import syntax
from ..analysis.operations import COPY, CUSTOM, USER
from ..analysis.value_kinds import ARRAY, SCALAR
from ..rules import registry

import numpy as np

_NUMBERS = (int, float, complex)


@dataclasses.dataclass
class Scaled:
    """A batched value `base * scale` (the scale a name or a constant the batch shares;
    `number`, whether it is certainly a number), or `-base` (`scale` None, `negated`)."""
    base: str
    scale: gast.expr = None
    negated: bool = False
    number: bool = True     # (whether the scale is certainly a number, not an array)


@dataclasses.dataclass
class Step:
    """What the batching transform emits for one statement: `scale`, the statement that
    computes the new scale (or None), and whether the batched value is computed
    (`needed`); or, for a sum of a scaled value (`total`), the matrix product."""
    target: str
    value: Scaled = None
    scale: gast.stmt = None
    needed: bool = False
    total: gast.expr = None


def plan(batching, body):
    """{id(statement): Step} for the statements of the function's `body` (its top-level
    statements, in Wengert form) that `batching` (the transform) emits scaled."""
    return Planner(batching).run(body)


class Planner:
    def __init__(self, batching):
        self.b = batching
        self.scaled = {}        # name: Scaled
        self.steps = {}         # id(statement): Step
        self.absorbed = {}      # id(statement): the scaled names it reads as scales

    def run(self, body):
        for s in body:
            if not self.safe(s):
                self.scaled.clear()     # (what is read after it is computed where assigned)
                continue
            step = self.step(s) if isinstance(s, gast.Assign) else None
            if step is not None:
                self.steps[id(s)] = step
                if step.value is not None:
                    self.scaled[step.target] = step.value
        read = set()
        for s in self.b.fn.body:        # (a compound statement: all it holds)
            absorbed = self.absorbed.get(id(s), ())
            read.update(n for n in syntax.names_loaded(s) if n not in absorbed)
        for step in self.steps.values():
            step.needed = step.value is not None and step.target in read
        return self.steps

    # -- which statements ---------------------------------------------------------------
    def safe(self, s):
        """Whether `s` changes no array in place: `name = value` of arithmetic, an index,
        or a primitive's call (no method of a local value, no `out=`), or an `if` or a
        loop of such statements."""
        if isinstance(s, (gast.If, gast.For, gast.While)):
            return all(self.safe(t) for t in s.body + s.orelse)
        if isinstance(s, gast.Pass) or syntax.is_comment(s):
            return True
        if not (isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name)):
            return False
        op = self.b.ops[s]
        if op.form in (USER, CUSTOM):
            return False
        value = s.value
        if isinstance(value, gast.Call):
            func = value.func
            if (op.prim is None or registry.primitive(op.prim) is None
                    or any(k.arg == "out" for k in value.keywords)):
                return False
            if isinstance(func, gast.Attribute) and not self.shared_global(func.value):
                return False
        return True

    def shared_global(self, node):
        """Whether `node` is a module's name (`np` of `np.sum`), not a local value."""
        return isinstance(node, gast.Name) and node.id not in self.b.params and (
            self.b.definitions[node.id] == 0)

    def step(self, s):
        target = s.targets[0].id
        if target not in self.b.batched or self.b.definitions[target] != 1 \
                or target in self.b.params:
            return None
        v = s.value
        if isinstance(v, gast.Name) and self.b.ops[s].form == COPY and v.id in self.scaled:
            return self.made(s, target, self.scaled[v.id], [v.id])
        if isinstance(v, gast.UnaryOp) and isinstance(v.op, gast.USub):
            x = self.operand(v.operand)
            if isinstance(x, Scaled) and x.scale is not None:
                return self.made(s, target, Scaled(x.base, number=x.number), [v.operand.id],
                                 gast.UnaryOp(op=gast.USub(), operand=syntax.copied(x.scale)))
            if isinstance(x, str):
                return self.made(s, target, Scaled(x, None, True), [])
            return None
        if isinstance(v, gast.BinOp) and isinstance(v.op, (gast.Mult, gast.Div)):
            return self.product(s, target, v)
        if isinstance(v, gast.BinOp) and isinstance(v.op, (gast.Add, gast.Sub)):
            x, y = self.operand(v.left), self.operand(v.right)
            if (isinstance(x, Scaled) and isinstance(y, Scaled) and x.base == y.base
                    and x.scale is not None and y.scale is not None):
                return self.made(s, target, Scaled(x.base, number=x.number and y.number),
                                 [v.left.id, v.right.id],
                                 syntax.binop(syntax.copied(x.scale), type(v.op)(),
                                              syntax.copied(y.scale)))
            return None
        if isinstance(v, gast.Call):
            return self.total(s, target)
        return None

    def product(self, s, target, v):
        """`x * u`, `u * x` or `x / u` (`x` batched, `u` shared)."""
        left, right = v.left, v.right
        if self.shared(right) and self.b.is_batched(left):
            x, u, first = left, right, True
        elif isinstance(v.op, gast.Mult) and self.shared(left) and self.b.is_batched(right):
            x, u, first = right, left, False
        else:
            return None
        scaled = self.operand(x)
        if scaled is None:
            return None
        if isinstance(scaled, str):         # (a batched value as it is)
            if isinstance(v.op, gast.Div):
                return None
            return self.made(s, target, Scaled(scaled, syntax.copied(u), number=self.number(u)),
                             [])
        if scaled.scale is None:            # -base times u: base times -u
            if isinstance(v.op, gast.Div):
                return None
            return self.made(s, target, Scaled(scaled.base, number=self.number(u)), [x.id],
                             gast.UnaryOp(op=gast.USub(), operand=syntax.copied(u)))
        old, new = syntax.copied(scaled.scale), syntax.copied(u)
        scale = syntax.binop(old, type(v.op)(), new) if first else syntax.binop(
            new, type(v.op)(), old)
        return self.made(s, target, Scaled(scaled.base, number=scaled.number and self.number(u)),
                         [x.id], scale)

    def total(self, s, target):
        """`np.sum(x)` (or along every axis of an item) of a scaled `x`."""
        op = self.b.ops[s]
        bound = op.bound or {}
        if op.prim is not np.sum or "a" not in bound or any(
                not (isinstance(v, gast.Constant) and v.value in (None, False))
                for p, v in bound.items() if p not in ("a", "axis")):
            return None     # (a dtype, keepdims=True, out)
        x = bound["a"]
        axis = bound.get("axis")
        if axis is not None and not (isinstance(axis, gast.Constant) and (
                axis.value is None or type(axis.value) is int)):
            return None
        scaled = self.operand(x) if isinstance(x, gast.Name) else None
        if not isinstance(scaled, Scaled) or scaled.scale is None:
            return None
        self.absorbed[id(s)] = {x.id}
        return Step(target, total=syntax.call(self.b.ctx.runtime("batch_sum_scaled"), [
            syntax.name(scaled.base), syntax.copied(scaled.scale),
            syntax.const(None) if axis is None else syntax.copied(axis)]))

    def made(self, s, target, value, absorbed, scale=None):
        """The Step of `s`, whose value is `value`, reading the scaled names `absorbed`
        as scales; `scale`, the expression of its new scale (named `TARGET_scale`)."""
        self.absorbed[id(s)] = set(absorbed)
        step = Step(target, value)
        if scale is not None:
            name = self.b.namer.fresh(f"{target}_scale")
            step.scale = syntax.located(syntax.assign(name, scale), s)
            value.scale = syntax.name(name)
        return step

    # -- operands -------------------------------------------------------------------------
    def operand(self, node):
        """A batched operand: its `Scaled`, or its name (a base: a number or an array
        assigned once, or a parameter); None for another."""
        if not isinstance(node, gast.Name) or not self.b.is_batched(node):
            return None
        if node.id in self.scaled:
            return self.scaled[node.id]
        if self.b.definitions[node.id] > (0 if node.id in self.b.params else 1):
            return None
        return node.id if self.kind(node) in (SCALAR, ARRAY) else None

    def shared(self, node):
        """Whether `node` is a number or an array the batch shares, a constant or a name
        assigned at most once (a scale read later reads the same value)."""
        if isinstance(node, gast.Constant):
            return type(node.value) in _NUMBERS
        return (isinstance(node, gast.Name) and not self.b.is_batched(node)
                and self.kind(node) in (SCALAR, ARRAY)
                and self.b.definitions[node.id] <= (0 if node.id in self.b.params else 1))

    def number(self, node):
        return isinstance(node, gast.Constant) or self.kind(node) == SCALAR

    def kind(self, node):
        kind = self.b.kinds[node]
        if isinstance(kind, type) and issubclass(kind, (float, int, complex, np.floating)):
            return SCALAR
        if isinstance(kind, type) and issubclass(kind, np.ndarray):
            return ARRAY
        return kind


def emit(batching, step, s):
    """The statements of `s` by its `step`."""
    if step.total is not None:
        s.value = step.total
        return [s]
    out = [step.scale] if step.scale is not None else []
    if step.needed:
        out.append(syntax.located(syntax.assign(step.target, value_of(batching, step.value)), s))
    return out


def value_of(batching, scaled):
    """The batched value of `scaled`: `-base`, or `base * scale` (the base padded to the
    scale's axes where the scale may be an array)."""
    base = syntax.name(scaled.base)
    if scaled.scale is None:
        return gast.UnaryOp(op=gast.USub(), operand=base)
    scale = scaled.scale
    if not scaled.number:
        base = syntax.call(batching.ctx.runtime("batch_pad"), [base, syntax.call(
            batching.numpy_attr("ndim"), [syntax.copied(scale)])])
    return syntax.binop(base, gast.Mult(), syntax.copied(scale))
