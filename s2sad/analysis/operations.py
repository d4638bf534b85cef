"""What a Wengert statement computes: its primitive, its arguments and its rule."""
import functools
import inspect
import operator

import gast

from .. import marks
from .. import syntax
from ..frontend.source import CACHED, MISSING, numba_function
from ..rules import registry
from ..rules.containers import DICT_METHODS
from ..rules.operators import SYNTAX
from ..frontend import structure
from .value_kinds import CONTAINER, SCALAR, items_key, user_class

COPY = "copy"
NONDIFF = "nondiff"
CALL = "call"
PACK = "pack"
USER = "user"       # a call to a Python function without a rule: differentiated itself
CUSTOM = "custom"   # a call to a custom_vjp or custom_jvp function


class Op:
    """The primitive of one statement `name = value`."""

    def __init__(self, form, args=(), prim=None, node=None, variant=None, bound=None):
        self.form = form          # COPY, NONDIFF, CALL, PACK, USER or CUSTOM
        self.args = list(args)    # the argument atoms
        self.prim = prim          # the primitive object, if resolved
        self.node = node
        self.variant = variant    # the matching rule variant, or None (no rule)
        self.bound = bound        # {param: argument node}

    def diff_args(self):
        """(param, atom) of the arguments a derivative may flow through."""
        if self.form == COPY:
            return [(None, self.args[0])]
        if self.form == PACK:       # (by key for a dict display)
            if isinstance(self.node, gast.Dict):
                return [(k.value, a) for k, a in zip(self.node.keys, self.args)]
            return list(enumerate(self.args))
        if self.form in (USER, CUSTOM):     # by position, and by keyword until resolved
            keywords = getattr(self.node, "keywords", ())
            return list(enumerate(self.args)) + [(k.arg, k.value) for k in keywords]
        if self.form == NONDIFF:
            return []
        if self.variant is None:
            return [(None, a) for a in self.args]
        return [(p, a) for p, a in self.bound.items() if p in self.variant.templates]


def classify(value, src):
    """The `Op` of a Wengert right-hand side."""
    if syntax.is_atom(value) or _global_ref(value, src):
        return Op(COPY, [value])
    if isinstance(value, gast.BinOp):
        return _rule_op(SYNTAX.get(type(value.op)), [value.left, value.right], {}, value)
    if isinstance(value, gast.UnaryOp) and not isinstance(value.op, gast.Not):
        return _rule_op(SYNTAX.get(type(value.op)), [value.operand], {}, value)
    if isinstance(value, gast.Call):
        keywords = {k.arg: k.value for k in value.keywords}
        prim = marks.PRIM.of(value.func) or src.resolve(value.func)
        if prim is MISSING and isinstance(value.func, gast.Attribute):
            receiver = [value.func.value]
            method = registry.METHODS.get(value.func.attr) or DICT_METHODS.get(
                value.func.attr)
            if method is None:
                return Op(CALL, receiver + value.args + list(keywords.values()), None, value)
            return _rule_op(method, receiver + value.args, keywords, value)
        if prim is MISSING:
            return Op(CALL, value.args + list(keywords.values()), None, value)
        return _rule_op(prim, value.args, keywords, value)
    if isinstance(value, gast.Attribute):
        prim = registry.ATTRIBUTES.get(value.attr)
        if prim is None:    # a field of an object: `getattr(obj, "name")`
            return _rule_op(getattr, attribute_args(value), {}, value)
        return _rule_op(prim, [value.value], {}, value)
    if isinstance(value, gast.Subscript):
        return _rule_op(operator.getitem, [value.value, index_value(value.slice)], {}, value)
    if isinstance(value, (gast.Tuple, gast.List)):
        return Op(PACK, value.elts, None, value)
    if isinstance(value, gast.Dict):
        return Op(PACK, value.values, None, value)
    if isinstance(value, (gast.Compare, gast.BoolOp, gast.UnaryOp, gast.JoinedStr)):
        return Op(NONDIFF, node=value)
    return Op(CALL, [a for a in gast.iter_child_nodes(value) if syntax.is_atom(a)],
              None, value)


def python_function(prim):
    """(function, arguments bound before the call's own) if `prim` is Python code s2sad
    can differentiate: a function, a bound method, a functools.partial of one, or one
    memoised by functools.cache or lru_cache (whose values are the function's)."""
    if getattr(prim, "s2s_derivative", False):
        return None
    if inspect.isfunction(prim):
        return prim, (), {}
    if numba_function(prim) is not None:        # a @numba.njit function: its py_func
        return numba_function(prim), (), {}
    if inspect.ismethod(prim) and inspect.isfunction(prim.__func__):
        return prim.__func__, (prim.__self__,), {}
    if isinstance(prim, functools.partial) and inspect.isfunction(prim.func):
        return prim.func, prim.args, prim.keywords
    if isinstance(prim, CACHED) and inspect.isfunction(prim.__wrapped__):
        return prim.__wrapped__, (), {}   # (functools.cache, lru_cache: the same values)
    call = getattr(type(prim), "__call__", None)
    if inspect.isfunction(call) and not isinstance(prim, type):
        return call, (prim,), {}      # an instance of a class with a Python __call__
    return None


def argument_types(prim, call_args, kinds):
    """{parameter: type or value kind}, what the version of the Python function of `prim`
    (see `python_function`) called with the atoms `call_args` is specialised on: their
    value kinds in `kinds`, and the class of an instance bound to it (a method's `self`),
    through which the methods it calls are found; and the structure known of each
    (frontend/structure.py: `"self.layers[0]": Dense` for `forward(model, x)`)."""
    fn, bound, _ = python_function(prim)
    params = list(inspect.signature(fn).parameters)
    out = {p: type(a) for p, a in zip(params, bound) if user_class(type(a))}
    for p, a in zip(params[len(bound):], call_args):
        out[p] = kinds[a]
        items = kinds.items_of(a) if out[p] == CONTAINER else None
        if items is not None:
            out[items_key(p)] = items
        found, path = kinds.structure_at(a)
        if path is not None:
            out.update(structure.rerooted(found, path, p))
    return out


def attribute_args(node):
    """The arguments of the primitive an attribute read `node` means: `[obj]` for an
    array attribute (`x.T` is `np.transpose(x)`), `[obj, "name"]` for a field."""
    if registry.ATTRIBUTES.get(node.attr) is not None:
        return [node.value]
    return [node.value, syntax.const(node.attr)]


def index_value(index):
    """An index (`1:n`, `i, ::2`, `...`) as an expression with the same value."""
    if isinstance(index, gast.Slice):
        parts = [p if p is not None else syntax.const(None)
                 for p in (index.lower, index.upper, index.step)]
        call = syntax.call("slice", parts)
        marks.BUILTIN.put(call.func, True)
        return call
    if isinstance(index, gast.Tuple):
        return syntax.tuple_([index_value(e) for e in index.elts])
    return index


def index_syntax(index):
    """The index syntax of an `index_value`: `slice(1, None, None)` is `1:`."""
    if (isinstance(index, gast.Call) and marks.BUILTIN.of(index.func)
            and len(index.args) == 3):
        lower, upper, step = (None if syntax.is_name(a, "None") or (
            isinstance(a, gast.Constant) and a.value is None) else a for a in index.args)
        return gast.Slice(lower=lower, upper=upper, step=step)
    if isinstance(index, gast.Tuple):
        return syntax.tuple_([index_syntax(e) for e in index.elts])
    return index


def is_basic_index(index, kinds):
    """Whether `index` (an `index_value`) selects each element at most once: slices,
    integers and scalars, `...` and `None`."""
    items = index.elts if isinstance(index, gast.Tuple) else [index]
    for item in items:
        if isinstance(item, gast.Call) and marks.BUILTIN.of(item.func):
            parts = item.args
        else:
            parts = [item]
        if not all(isinstance(p, gast.Constant) or kinds[p] == SCALAR for p in parts):
            return False
    return True


def _rule_op(prim, args, keywords, node):
    record = registry.primitive(prim)
    rule = None if record is None else record.vjp
    if getattr(prim, "s2s_custom", False):
        return Op(CUSTOM, args, prim, node)
    if rule is None and python_function(prim) is not None:
        return Op(USER, args, prim, node)
    everything = list(args) + list(keywords.values())
    if rule is not None and record.nondiff:
        return Op(NONDIFF, everything, prim, node)
    if rule is None:
        return Op(CALL, everything, prim, node)
    variant, bound = rule.match(args, keywords)
    return Op(CALL, everything, prim, node, variant, bound)


def _global_ref(e, src):
    while isinstance(e, gast.Attribute):
        e = e.value
    return isinstance(e, gast.Name) and not src.is_local(e.id)


def call_arguments(op, src):
    """The positional arguments and keywords `classify` matched `op`'s rule with (a
    method's receiver first)."""
    node = op.node
    if isinstance(node, gast.BinOp):
        return [node.left, node.right], {}
    if isinstance(node, gast.UnaryOp):
        return [node.operand], {}
    if isinstance(node, gast.Attribute):
        return attribute_args(node), {}
    if isinstance(node, gast.Subscript):
        return [node.value, index_value(node.slice)], {}
    func = node.func
    receiver = []
    if (marks.PRIM.of(func) is None and isinstance(func, gast.Attribute)
            and src.resolve(func) is MISSING):
        receiver = [func.value]
    return receiver + list(node.args), {k.arg: k.value for k in node.keywords}
