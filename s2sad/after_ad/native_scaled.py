"""NativeScaled: in the numba backend's code, the gradient of a call differentiated by
its `value_and_grad` (ad/calls.py's `graded_call`) is added into its caller's adjoint
scaled, without the product's array.

The pullback of `t = g(a)`, `t` a number, is `a_bar = t_bar * g_gradient`, an array as
large as `a`, which is then added into parts of the caller's adjoints (through the pieces
of `_s2s_split_like` where `a` was a concatenation) and read no more. Where every read of
that product is such an addition, each addition is `_s2s_add_scaled(x_bar[...],
g_gradient_scale, piece)` (rules/fusion.py): the number times each element, added in
place, and the product is never made. In a recursion (det's expansion by minors) that is
one array less at each call above the leaves.

It applies where
- the gradient is bound only by the graded call and read back from a tape, and no
  statement writes into it, passes it to a function (but the tape's `append`; arithmetic
  of it is an array of its own), takes a view of it or binds another name to it:
  deferring its read to the additions changes nothing;
- the scale is a number computed from names and constants that no statement between the
  product and its last addition binds;
- each addition is `x += p` into an array, or a part of one by slices only (a view, which
  the helper writes through), in the same block as the product, after it.

Forward mode over this code (`hvp(f, backend="numba")`) reads each `_s2s_add_scaled(x, c,
g)` as the `x += c * g` it stands for (frontend/source.py's `unfused`).

>>> import numpy as np
>>> from s2sad import pipeline
>>> from s2sad.backends import NUMBA
>>> def leaf(a):
...     return np.sum(a * a)
>>> def outer(x):
...     total = 0.0
...     for j in range(3):
...         total = total + x[j] * leaf(np.concatenate((x[:j], x[j + 1:])))
...     return total
>>> code = pipeline.stage_source(outer, "native_scaled", arg_types={"x": np.ndarray},
...                              backend=NUMBA)
>>> print(code[code.index("        leaf_gradient_pieces"):])
        leaf_gradient_pieces = _s2s_split_like(leaf_gradient, t_4, 0)
        _s2s_add_scaled(x_bar[j + 1:], t_6_bar, leaf_gradient_pieces[1])
        _s2s_add_scaled(x_bar[:j], t_6_bar, leaf_gradient_pieces[0])
        x_bar[j] += t_7_bar * t_6
    return x_bar
<BLANKLINE>
"""
import gast

from .. import syntax
from ..analysis.number_types import ARRAY
from ..options import Variant
from ..rules import runtime
from .native_tapes import number_types


def run(fn, ctx):
    """The pass (the numba backend's, for reverse mode's code)."""
    if ctx.reverse is None:
        return fn
    graded = {bound for bound, callee in ctx.callees
              if callee.variant is Variant.VALUE_AND_GRAD}
    owned = _owned_gradients(fn, graded)
    if not owned:
        return fn
    _name_products(fn, owned, ctx)
    types = number_types(fn, ctx)
    kinds = ctx.value_kinds.kind
    arrays = {n for n, t in types.types.items() if t == ARRAY} | {
        n for n, k in kinds.items() if k == ARRAY} | {
        bar for p, bar in ctx.reverse.adjoints.items() if kinds.get(p) == ARRAY}
    loads, stores = {}, {}
    for n in syntax.name_nodes(fn):
        (loads if isinstance(n.ctx, gast.Load) else stores).setdefault(n.id, []).append(n)
    for block in syntax.blocks(fn.body):
        for k in range(len(block)):
            if block[k] is not None:
                _rewrite(block, k, owned, (types, arrays), loads, stores, ctx)
        block[:] = [s for s in block if s is not None]
    return fn


def _owned_gradients(fn, graded):
    """The names bound only as the gradient of a graded call (`t, g = f_value_and_grad(a)`)
    or read back from a tape, that nothing writes into, passes to a function (but the
    tape's `append`), takes a view of or binds another name to."""
    bound, other = set(), set()
    for s in syntax.statements(fn):
        value, targets = getattr(s, "value", None), getattr(s, "targets", None)
        if isinstance(s, gast.Assign) and isinstance(value, gast.Call) and syntax.is_name(
                value.func) and value.func.id in graded and isinstance(
                    targets[0], gast.Tuple) and len(targets[0].elts) == 2:
            bound |= {e.id for e in targets[0].elts[1:] if isinstance(e, gast.Name)}
            other |= set(syntax.names_stored(targets[0].elts[0]))
            continue
        if isinstance(s, gast.Assign) and isinstance(value, gast.Subscript) and \
                syntax.is_name(value.value) and value.value.id.startswith("_s2s_tape"):
            continue        # (read back: what the forward sweep pushed)
        for t in targets or [getattr(s, "target", None)]:
            if t is not None:   # (bound otherwise, or written into)
                other |= {n.id for n in syntax.name_nodes(t)}
        if isinstance(s, gast.Assign) and syntax.is_name(value):
            other.add(value.id)         # (another name for it)
    pushed = set()
    for c in syntax.walk(fn):
        if isinstance(c, gast.Call) and isinstance(c.func, gast.Attribute) and \
                c.func.attr == "append":
            pushed |= {id(a) for a in c.args}
        elif isinstance(c, gast.Call) and not (syntax.is_name(c.func) and c.func.id in graded):
            other |= {n for a in [c.func] + c.args + [k.value for k in c.keywords]
                      for n in _direct(a)}
        elif isinstance(c, (gast.Subscript, gast.Attribute)) and syntax.is_name(c.value):
            other.add(c.value.id)       # (a view of it)
    for c in syntax.walk(fn):
        if isinstance(c, (gast.Tuple, gast.List)) and id(c) not in pushed and isinstance(
                c.ctx, gast.Load):
            other |= {e.id for e in c.elts if isinstance(e, gast.Name)}
    return bound - other


def _direct(e):
    """The names `e` reads other than as an operand of arithmetic, whose result is an
    array of its own."""
    if isinstance(e, gast.Name):
        return {e.id}
    if isinstance(e, (gast.BinOp, gast.UnaryOp)):
        return set()
    return {n for c in syntax.children(e) for n in _direct(c)}


def _name_products(fn, owned, ctx):
    """A product of a graded gradient added (`x += c * g`) or split
    (`_s2s_split_like(c * g, ...)`) as it is made, named first: `g_scaled = c * g`."""
    for block in syntax.blocks(fn.body):
        k = 0
        while k < len(block):
            s = block[k]
            at = None
            if isinstance(s, gast.AugAssign) and isinstance(s.op, gast.Add):
                at = (s, "value")
            elif (isinstance(s, gast.Assign) and isinstance(s.value, gast.Call)
                  and s.value.args and ctx.resolve(s.value.func) is runtime.split_like):
                at = (s.value.args, 0)
            e = at and (getattr(*at) if at[0] is s else at[0][at[1]])
            g = [x for x in (getattr(e, "left", None), getattr(e, "right", None))
                 if syntax.is_name(x) and x.id in owned]
            if isinstance(e, gast.BinOp) and isinstance(e.op, gast.Mult) and g:
                name = ctx.namer.fresh(f"{g[0].id}_scaled")
                block.insert(k, syntax.located(syntax.assign(
                    syntax.name(name, store=True), e), s))
                if at[0] is s:
                    s.value = syntax.name(name)
                else:
                    at[0][at[1]] = syntax.name(name)
                k += 1
            k += 1


def _rewrite(block, k, owned, types, loads, stores, ctx):
    """Rewrite the product at `block[k]` and its additions, where it applies."""
    s = block[k]
    if not (isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name)
            and isinstance(s.value, gast.BinOp) and isinstance(s.value.op, gast.Mult)):
        return
    product = s.targets[0].id
    g, scale = s.value.right, s.value.left
    if not (syntax.is_name(g) and g.id in owned):
        g, scale = scale, g
    if not (syntax.is_name(g) and g.id in owned and _number(scale, types)
            and len(stores.get(product, ())) == 1):
        return
    uses = _additions(block, k, product, types, loads, stores, ctx)
    if uses is None:
        return
    split, pieces, adds = uses
    last = max(block.index(t) for t in [a for a, _ in adds] + [split] + pieces
               if t is not None)
    names = set(syntax.names_loaded(scale)) | {g.id}
    if any(t is not None and names & set(syntax.names_stored(t)) for t in block[k + 1:last]):
        return
    if isinstance(scale, (gast.Constant, gast.Name)):
        block[k] = None
    else:
        name = ctx.namer.fresh(f"{g.id}_scale")
        block[k] = syntax.located(syntax.assign(syntax.name(name, store=True), scale), s)
        scale = syntax.name(name)
    if split is not None:
        split.targets[0] = syntax.name(ctx.namer.fresh(f"{g.id}_pieces"), store=True)
        split.value.args[0] = syntax.name(g.id)
        for t in pieces:
            block[block.index(t)] = None
    for add, piece in adds:
        source = syntax.name(g.id) if piece is None else gast.Subscript(
            value=syntax.name(split.targets[0].id), slice=syntax.const(piece),
            ctx=gast.Load())
        block[block.index(add)] = syntax.located(syntax.expr_stmt(syntax.call(
            syntax.name(ctx.runtime("add_scaled")), [syntax.loaded(add.target),
                                                     syntax.copied(scale), source])), add)


def _additions(block, k, product, types, loads, stores, ctx):
    """(the split of `product` or None, the statements taking its pieces, [(addition,
    position of the piece it adds or None)]) when every read of `product` is an addition
    into an array or its slices, directly or through `_s2s_split_like`'s pieces, after
    `block[k]` in `block`; else None."""
    after = [t for t in block[k + 1:] if t is not None]

    def reading(node):
        return next((t for t in after if any(n is node for n in syntax.name_nodes(t))),
                    None)
    split, pieces, adds = None, [], []
    for use in loads.get(product, ()):
        s = reading(use)
        if s is not None and _adds(s, product, types):
            adds.append((s, None))
            continue
        if split is not None or not (
                isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name)
                and isinstance(s.value, gast.Call) and s.value.args
                and ctx.resolve(s.value.func) is runtime.split_like
                and syntax.is_name(s.value.args[0], product)
                and product not in {n.id for a in s.value.args[1:] for n in
                                    syntax.name_nodes(a)}
                and len(stores.get(s.targets[0].id, ())) == 1):
            return None
        split = s
        for read in loads.get(s.targets[0].id, ()):
            t = reading(read)
            if not (isinstance(t, gast.Assign) and isinstance(t.targets[0], gast.Name)
                    and isinstance(t.value, gast.Subscript) and t.value.value is read
                    and isinstance(t.value.slice, gast.Constant)
                    and type(t.value.slice.value) is int
                    and len(stores.get(t.targets[0].id, ())) == 1):
                return None
            pieces.append(t)
            for r in loads.get(t.targets[0].id, ()):
                a = reading(r)
                if a is None or not _adds(a, t.targets[0].id, types):
                    return None
                adds.append((a, t.value.slice.value))
    return (split, pieces, adds) if adds else None


def _adds(s, name, types):
    """Whether `s` is `x += name`, `x` an array or a part of one by slices only."""
    if not (isinstance(s, gast.AugAssign) and isinstance(s.op, gast.Add)
            and syntax.is_name(s.value, name)):
        return False
    t = s.target
    if isinstance(t, gast.Subscript):
        index = t.slice.elts if isinstance(t.slice, gast.Tuple) else [t.slice]
        if not all(isinstance(i, gast.Slice) for i in index):
            return False
        t = t.value
    return syntax.is_name(t) and t.id != name and t.id in types[1]


def _number(e, types):
    """Whether `e` is computed from names and constants by arithmetic, none of them known
    to be an array. (The factor of a graded gradient is the adjoint of the number the
    call returns; the helper's Numba version adds `c * g` as NumPy does where `c` is an
    array all the same.)"""
    if isinstance(e, (gast.Name, gast.Constant)):
        return types[0].of(e) != ARRAY and getattr(e, "id", None) not in types[1]
    if isinstance(e, gast.BinOp) and isinstance(e.op, (gast.Add, gast.Sub, gast.Mult,
                                                        gast.Div)):
        return _number(e.left, types) and _number(e.right, types)
    if isinstance(e, gast.UnaryOp) and isinstance(e.op, gast.USub):
        return _number(e.operand, types)
    return False


