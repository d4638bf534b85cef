"""Algebraic clean-up of instantiated rule templates: fold constants (also
`np.negative` of a number), drop `* 1`, keep the branch of a conditional whose test is a
constant."""
import operator

import gast
import numpy as np

from .. import syntax
from ..analysis.names import store_counts

FOLD = {gast.Add: operator.add, gast.Sub: operator.sub, gast.Mult: operator.mul,
        gast.Div: operator.truediv, gast.Pow: operator.pow}
COMPARE = {gast.Eq: operator.eq, gast.NotEq: operator.ne, gast.Lt: operator.lt,
           gast.LtE: operator.le, gast.Gt: operator.gt, gast.GtE: operator.ge}


def simplify(e):
    if isinstance(e, (gast.Name, gast.Constant)):
        return e
    if isinstance(e, gast.BinOp):
        e.left, e.right = simplify(e.left), simplify(e.right)
        return _binop(e)
    if isinstance(e, gast.UnaryOp):
        e.operand = simplify(e.operand)
        if isinstance(e.op, gast.USub):
            inner = e.operand
            if isinstance(inner, gast.UnaryOp) and isinstance(inner.op, gast.USub):
                return inner.operand
            if _num(inner) and not isinstance(inner.value, bool):
                return syntax.const(-inner.value)
        return e
    if isinstance(e, gast.Compare):
        e.left, e.comparators = simplify(e.left), [simplify(c) for c in e.comparators]
        if (len(e.ops) == 1 and type(e.ops[0]) in COMPARE and _num(e.left)
                and _num(e.comparators[0])):
            return syntax.const(COMPARE[type(e.ops[0])](e.left.value, e.comparators[0].value))
        if (len(e.ops) == 1 and isinstance(e.ops[0], (gast.Is, gast.IsNot))
                and all(isinstance(v, gast.Constant) for v in (e.left, e.comparators[0]))
                and None in (e.left.value, e.comparators[0].value)):
            # `5.0 is None`, from a rule's template with a constant argument
            same = e.left.value is e.comparators[0].value
            return syntax.const(same if isinstance(e.ops[0], gast.Is) else not same)
        return e
    if isinstance(e, gast.IfExp):
        e.test = simplify(e.test)
        if isinstance(e.test, gast.Constant):
            return simplify(e.body if e.test.value else e.orelse)
        e.body, e.orelse = simplify(e.body), simplify(e.orelse)
        return e
    for field, value in gast.iter_fields(e):
        if isinstance(value, gast.AST):
            setattr(e, field, simplify(value))
        elif isinstance(value, list):
            setattr(e, field, [simplify(v) if isinstance(v, gast.AST) else v for v in value])
    if (isinstance(e, gast.Call) and isinstance(e.func, gast.Attribute)
            and getattr(e.func.value, "s2s_numpy", False) and e.func.attr == "negative"
            and len(e.args) == 1 and not e.keywords and _num(e.args[0])):
        return syntax.const(-e.args[0].value)      # `np.negative(1)`, from a rule's template
    return e


def template_name(name, obj):
    """The node for the name `name` that generated code binds a rule template's free
    name to, `obj`; NumPy's is marked, so that `simplify` can fold its calls."""
    node = syntax.name(name)
    if obj is np:
        node.s2s_numpy = True
    return node


def on_numbers(e, is_number):
    """`e` with each conditional whose test reads a value that may be an array replaced
    by its first branch: an array has no truth value, and its operations follow NumPy
    (`x ** y` for an array `y` is differentiated as `np.power` is)."""
    syntax.rebuilt(e, lambda child: on_numbers(child, is_number))
    if isinstance(e, gast.IfExp):
        reads = [n for n in syntax.walk(e.test) if isinstance(n, gast.Name)]
        return e if all(is_number(n) for n in reads) else e.body
    return e


def _num(e):
    return (isinstance(e, gast.Constant) and isinstance(e.value, (int, float))
            and not isinstance(e.value, bool))


def _is(e, value):
    return _num(e) and e.value == value and type(e.value) is type(value) or (
        _num(e) and e.value == value and isinstance(value, int))


def _binop(e):
    left, r, op = e.left, e.right, type(e.op)
    if _num(left) and _num(r) and op in FOLD:
        try:
            value = FOLD[op](left.value, r.value)
            if isinstance(value, (int, float)) and abs(value) < 1e15:
                return syntax.const(value)
        except (ArithmeticError, ValueError):
            pass
    if op is gast.Mult:
        if _is(r, 1):
            return left
        if _is(left, 1):
            return r
        if _is(r, -1):
            return simplify(syntax.unary(gast.USub(), left))
        if _is(left, -1):
            return simplify(syntax.unary(gast.USub(), r))
    if op is gast.Div and _is(r, 1):
        return left
    if op is gast.Pow and _is(r, 1):
        return left
    if op is gast.Add:
        if _is(r, 0):
            return left
        if _is(left, 0):
            return r
    if op is gast.Sub and _is(r, 0):
        return left
    if op in (gast.Mult, gast.Div) and isinstance(left, gast.UnaryOp) and isinstance(
            left.op, gast.USub) and isinstance(r, gast.Constant) and _num(r) and r.value < 0:
        return gast.BinOp(left=left.operand, op=e.op, right=syntax.const(-r.value))
    return e


def negated(e):
    """`e'` if `e` is `-e'` up to a product or quotient (`-a * b`, `a * -b`), else None."""
    if isinstance(e, gast.UnaryOp) and isinstance(e.op, gast.USub):
        return e.operand
    if isinstance(e, gast.BinOp) and isinstance(e.op, (gast.Mult, gast.Div)):
        if _num(e.right) and e.right.value < 0:
            return syntax.binop(e.left, e.op, syntax.const(-e.right.value))
        inner = negated(e.left)
        if inner is not None:
            return syntax.binop(inner, e.op, e.right)
        inner = negated(e.right)
        if inner is not None:
            return syntax.binop(e.left, e.op, inner)
    return None


def doubled(e):
    """`e + e` as `2 * e`, with a product `a * b` written `2 * a * b`: exactly the sum,
    since doubling rounds nothing."""
    if isinstance(e, gast.BinOp) and isinstance(e.op, gast.Mult):
        return syntax.binop(syntax.binop(syntax.const(2), gast.Mult(), e.left), gast.Mult(),
                            e.right)
    return syntax.binop(syntax.const(2), gast.Mult(), e)


def fold_negation(e):
    """`-a * 2` as `a * -2`, throughout `e`: one operation less on arrays."""
    for n in syntax.walk(e):
        if (isinstance(n, gast.BinOp) and isinstance(n.op, (gast.Mult, gast.Div))
                and isinstance(n.left, gast.UnaryOp) and isinstance(n.left.op, gast.USub)
                and _num(n.right) and not isinstance(n.right.value, bool)):
            n.left, n.right = n.left.operand, syntax.const(-n.right.value)
    return e


def with_constant(stmt, name, value):
    """`stmt` with `name` read as the number `value`, products and quotients of numbers
    folded (`y_bar * 2 * t` with `y_bar` 1.0 is `2.0 * t`); None if some read of `name`
    does not fold into another number (`simplify` would write `1.0 * t` as `t`, which
    is not the same for an integer array)."""
    def replaced(node):
        if type(node) is gast.Name:
            if node.id == name and isinstance(node.ctx, gast.Load):
                new = syntax.const(value)
                new.s2s_unfolded = True
                return new
            return node
        syntax.rebuilt(node, replaced)
        if (isinstance(node, gast.BinOp) and _num(node.left) and _num(node.right)
                and type(node.op) in FOLD and not isinstance(node.op, gast.Pow)):
            try:
                return syntax.const(FOLD[type(node.op)](node.left.value, node.right.value))
            except ArithmeticError:
                pass
        return node
    if not any(n.id == name for n in syntax.name_nodes(stmt)):
        return stmt
    out = replaced(syntax.copied(stmt))
    return None if any(getattr(n, "s2s_unfolded", False) for n in syntax.walk(out)) else out


def halves_cancelled(fn, reads=None, stored=None):
    """`fn` where a name bound once to `e / (2 * d)` and read only as `2 * n` (the
    adjoint of a square root, read by the doubled terms of a sum of squares:
    `t_bar = s_bar / (2 * s)`, then `2 * t_bar * vx`) is bound to `e / d` and read as
    `n`: three operations fewer, the same values (a factor of 2 scales exactly).
    `reads(s)`, the names a statement of `fn.body` reads, and `stored`, how often `fn`
    binds each name, if the caller knows them; only the statements of `fn.body` that
    hold the binding and the reads are walked."""
    halved = {}
    for top in fn.body:
        for s in syntax.statements(top):
            if (isinstance(s, gast.Assign) and len(s.targets) == 1
                    and isinstance(s.targets[0], gast.Name) and isinstance(s.value, gast.BinOp)
                    and isinstance(s.value.op, gast.Div) and _doubling(s.value.right) is not None):
                halved[s.targets[0].id] = (s, top)
    if not halved:
        return fn
    if stored is None:
        stored = store_counts(fn)
    reads = reads or (lambda s: set(syntax.names_loaded(s)))
    readers = {}
    for top in fn.body:
        for n in reads(top) & halved.keys():
            readers.setdefault(n, []).append(top)
    for n, (s, top) in halved.items():
        if stored[n] != 1:
            continue
        tops = [top] + [r for r in readers.get(n, ()) if r is not top]
        loads = doubled = 0
        for e in (e for t in tops for e in syntax.walk(t)):
            if type(e) is gast.Name and e.id == n and type(e.ctx) is gast.Load:
                loads += 1
            elif type(e) is gast.BinOp:
                inner = _doubling(e)
                doubled += type(inner) is gast.Name and inner.id == n
        if not loads or loads != doubled:
            continue
        s.value.right = _doubling(s.value.right)

        def undoubled(e, n=n):
            inner = _doubling(e)
            if type(inner) is gast.Name and inner.id == n:
                return syntax.name(n)
            return syntax.rebuilt(e, undoubled)
        for t in tops:
            syntax.rebuilt(t, undoubled)
    return fn


def _doubling(e):
    """`x` for `2 * x` or `x * 2`, else None."""
    if isinstance(e, gast.BinOp) and isinstance(e.op, gast.Mult):
        if _is(e.left, 2):
            return e.right
        if _is(e.right, 2):
            return e.left
    return None
