"""What a Wengert statement computes: its primitive, its arguments and its rule."""
import gast

from ..codegen import nodes
from ..frontend.source import MISSING
from ..rules import registry
from ..rules.operators import SYNTAX

COPY = "copy"
NONDIFF = "nondiff"


class Op:
    """The primitive of one statement `name = value`."""

    def __init__(self, kind, args=(), prim=None, params=None, node=None):
        self.kind = kind          # COPY, NONDIFF, or "call"
        self.args = list(args)    # argument atoms, positional
        self.prim = prim          # the primitive object
        self.params = params      # {param name: Template or None} or None if no rule
        self.node = node

    def diff_args(self):
        """(position, atom) of the arguments a derivative may flow through."""
        if self.kind == COPY:
            return list(enumerate(self.args))
        if self.kind == NONDIFF or self.params is None:
            return [] if self.kind == NONDIFF else list(enumerate(self.args))
        return [(i, a) for i, (a, t) in enumerate(zip(self.args, self.params.values()))
                if t is not None]


def classify(value, src):
    """The `Op` of a Wengert right-hand side."""
    if nodes.is_atom(value) or _global_ref(value, src):
        return Op(COPY, [value])
    if isinstance(value, gast.BinOp):
        return _rule_op(SYNTAX.get(type(value.op)), [value.left, value.right], value)
    if isinstance(value, gast.UnaryOp) and not isinstance(value.op, gast.Not):
        return _rule_op(SYNTAX.get(type(value.op)), [value.operand], value)
    if isinstance(value, gast.Call):
        prim = src.resolve(value.func)
        if prim is MISSING:
            receiver = [value.func.value] if isinstance(value.func, gast.Attribute) else []
            return Op("call", receiver + value.args, None, None, value)
        return _rule_op(prim, value.args, value)
    if isinstance(value, (gast.Compare, gast.BoolOp, gast.UnaryOp, gast.JoinedStr)):
        return Op(NONDIFF, node=value)
    return Op("call", [a for a in gast.iter_child_nodes(value) if nodes.is_atom(a)],
              None, None, value)


def _rule_op(prim, args, node):
    rule = registry.lookup(prim)
    if rule is not None and rule.nondiff:
        return Op(NONDIFF, args, prim, node=node)
    params = rule.templates(len(args)) if rule is not None else None
    return Op("call", args, prim, params, node)


def _global_ref(e, src):
    while isinstance(e, gast.Attribute):
        e = e.value
    return isinstance(e, gast.Name) and e.id not in src.local_names
