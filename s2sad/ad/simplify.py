"""Algebraic clean-up of instantiated rule templates: fold constants (also
`np.negative` of a number), drop `* 1`, keep the branch of a conditional whose test is a
constant."""
import operator

import gast
import numpy as np

from .. import marks
from .. import syntax
from ..analysis.names import store_counts
from ..rules import snapshots

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
            and marks.NUMPY.of(e.func.value) and e.func.attr == "negative"
            and len(e.args) == 1 and not e.keywords and _num(e.args[0])):
        return syntax.const(-e.args[0].value)      # `np.negative(1)`, from a rule's template
    return e


def template_name(name, obj):
    """The node for the name `name` that generated code binds a rule template's free
    name to, `obj`; NumPy's is marked, so that `simplify` can fold its calls."""
    node = syntax.name(name)
    if snapshots.live(obj) is np:
        marks.NUMPY.put(node, True)
    return node


def on_numbers(e, is_number):
    """`e` with each conditional whose test reads a value that may be an array replaced
    by its first branch, and each `a or b` by `a`: an array has no truth value, and its
    operations follow NumPy (`x ** y` for an array `y` is differentiated as `np.power`
    is; `d or np.float64(d)`, a denominator that may be a number 0, is `d`)."""
    syntax.rebuilt(e, lambda child: on_numbers(child, is_number))
    if isinstance(e, (gast.IfExp, gast.BoolOp)):
        test = e.test if isinstance(e, gast.IfExp) else e.values[0]
        called = {id(n.func) for n in syntax.walk(test) if isinstance(n, gast.Call)}
        reads = [n for n in syntax.walk(test) if isinstance(n, gast.Name)
                 and id(n) not in called]      # (not the functions a template calls)
        if all(is_number(n) for n in reads):
            return e
        return e.body if isinstance(e, gast.IfExp) else e.values[0]
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
                marks.UNFOLDED.put(new, True)
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
    return None if any(marks.UNFOLDED.of(n) for n in syntax.walk(out)) else out


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


def negations_pushed(fn, floats, stored, reads=None, fresh=None):
    """`fn` where a float bound once to a negation (`t_bar = -vy_bar`), or to a product
    with one negated factor (`-vy_bar * dt`), is bound to it without the negation, and each read of it flips instead the sum it is a term of (`a + t_bar *
    c` is `a - t_bar * c`, `t_bar * c + a` is `a - t_bar * c`, `-(t_bar * c)` is
    `t_bar * c`); a float bound once to a product it is a factor of (`u_bar = t_bar *
    v`) is flipped the same way, its reads in turn. One negation fewer per group, the
    same values: IEEE negation is exact and rounding symmetric. `floats`, the names
    certainly bound to floats; `stored`, how often `fn` binds each name; `reads(s)`,
    the names a statement of `fn.body` reads, if the caller knows them. A copy
    `t_bar = vy_bar` left behind is read as `vy_bar` where that is the same value.
    A name that now holds the negation of what it held is called `minus_` it
    (`fresh(name)` makes a name no other has)."""
    fresh = fresh or (lambda name: name)
    defs, seeds = {}, []
    for s in syntax.statements(fn):
        if (isinstance(s, gast.Assign) and len(s.targets) == 1
                and isinstance(s.targets[0], gast.Name) and s.targets[0].id in floats
                and stored[s.targets[0].id] == 1):
            defs[s.targets[0].id] = s
            if _negated_factor(s.value) is not None:
                seeds.append(s.targets[0].id)
    if not seeds:
        return fn
    reads = reads or (lambda s: set(syntax.names_loaded(s)))
    readers = {}
    for top in fn.body:
        for n in reads(top) & defs.keys():
            readers.setdefault(n, []).append(top)
    parent, loads, walked = {}, {}, set()

    def loads_of(n):
        """The reads of `n`, the statements holding them walked for `parent`."""
        for top in readers.get(n, ()):
            if id(top) not in walked:
                walked.add(id(top))
                for node in syntax.walk(top):
                    for child in syntax.children(node):
                        parent[id(child)] = node
                    if type(node) is gast.Name and type(node.ctx) is gast.Load \
                            and node.id in defs:
                        loads.setdefault(node.id, []).append(node)
        return loads.get(n, ())
    done = set()
    for seed in seeds:
        if seed in done or _negated_factor(defs[seed].value) is None:
            continue                # (a group before took its negation away)
        group, places = _negated_group(seed, defs, loads_of, parent)
        if group is None:
            continue
        done |= group
        for kind, node, chain in places:
            if kind == "add":
                node.op = gast.Add()
            elif kind == "flip":
                node.op = gast.Sub() if isinstance(node.op, gast.Add) else gast.Add()
            elif kind == "swap":
                node.left, node.right, node.op = node.right, chain, gast.Sub()
            elif kind == "unneg":
                syntax.rebuilt(parent[id(node)], lambda c, n=node, x=chain: x if c is n else c)
                parent[id(chain)] = parent[id(node)]
        s = defs[seed]
        neg = _negated_factor(s.value)
        s.value = _without_negated_factor(s.value)
        if id(neg) in parent:
            parent[id(neg.operand)] = parent[id(neg)]
        if _copy_read_through(fn, s, loads_of(seed)):
            group.discard(seed)
        for n in group:
            new = fresh("minus_" + n)
            defs[n].targets[0].id = new
            for load in loads_of(n):
                load.id = new
    return fn


def _negated_group(seed, defs, loads_of, parent):
    """The names that flip with `seed`, and the places their reads flip (kind, the
    node that changes, its operand the flip came from); (None, None) when a read of
    one cannot flip. From a read, the flip climbs through the products and quotients
    the read is a factor of, and through a difference it is the left term of (`p - q`
    is `-(p' + q)` for `p' = -p`), to the sum it is a term of, a negation, or the whole
    value of an assignment (whose name then flips too). No node is reached twice: two
    flipped factors of one product would cancel."""
    group, todo, places, nodes = {seed}, [seed], [], set()
    while todo:
        for load in loads_of(todo.pop()):
            x, up = load, parent.get(id(load))
            while True:
                if id(up) in nodes:
                    return None, None
                nodes.add(id(up))
                if isinstance(up, gast.BinOp) and (isinstance(up.op, gast.Mult) or (
                        isinstance(up.op, gast.Div))):
                    pass                                # the product flips
                elif isinstance(up, gast.BinOp) and isinstance(up.op, gast.Sub) \
                        and up.left is x:
                    places.append(("add", up, x))      # p - q: -(p' + q)
                elif isinstance(up, gast.BinOp) and isinstance(up.op, (gast.Add, gast.Sub)):
                    places.append(("flip" if up.right is x else "swap", up, x))
                    break
                elif isinstance(up, gast.UnaryOp) and isinstance(up.op, gast.USub):
                    places.append(("unneg", up, x))
                    break
                elif isinstance(up, gast.Assign) and up.value is x:
                    target = up.targets[0].id if isinstance(up.targets[0], gast.Name) else None
                    if target not in defs or target in group:
                        return None, None
                    group.add(target)
                    todo.append(target)
                    break
                else:
                    return None, None
                x, up = up, parent.get(id(up))
    return group, places


def _negated_factor(e):
    """The one negation `e` is, or is a factor of through products and quotients
    (`-a`, `-a * b`, `b / -a`), else None."""
    if isinstance(e, gast.UnaryOp) and isinstance(e.op, gast.USub):
        return e
    if isinstance(e, gast.BinOp) and isinstance(e.op, (gast.Mult, gast.Div)):
        found = [f for f in (_negated_factor(e.left), _negated_factor(e.right)) if f is not None]
        return found[0] if len(found) == 1 else None
    return None


def _without_negated_factor(e):
    """`e` with its `_negated_factor` replaced by what it negates."""
    if isinstance(e, gast.UnaryOp):
        return e.operand
    if _negated_factor(e.left) is not None:
        e.left = _without_negated_factor(e.left)
    else:
        e.right = _without_negated_factor(e.right)
    return e


def _copy_read_through(fn, s, loads):
    """Read `x` for the name `s` binds to `x` (`t_bar = vy_bar`), and drop `s`, when
    every read is in an assignment after `s` in the same statement list with nothing
    between binding `x` (then True)."""
    if not isinstance(s.value, gast.Name) or not loads:
        return False
    x = s.value.id
    for block in syntax.blocks(fn.body):
        if not any(t is s for t in block):
            continue
        i = next(k for k, t in enumerate(block) if t is s)
        ids = {id(n) for n in loads}
        remaining = len(ids)
        for t in block[i + 1:]:
            if remaining and isinstance(t, gast.Assign):
                remaining -= sum(id(n) in ids for n in syntax.walk(t.value))
            if remaining and x in syntax.names_stored(t):
                return False
            if not remaining:
                break
        if remaining:
            return False
        for n in loads:
            n.id = x
        block.remove(s)
        return True
    return False
