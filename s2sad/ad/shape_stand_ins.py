"""Shape stand-ins: where a runtime helper reads an argument only for its shape (its
`shape_only`, registry.HelperFacts: `_s2s_unbroadcast(g, x)`, `_s2s_count(x)`,
`_s2s_unreduce(g, x)`), the argument is the value whose shape it takes, unless another
value of that shape, alive anyway, can stand in for it, so that the code keeps no more
values alive: in a vjp's pullback, a parameter it reads anyway (this pass); in a fused
gradient, for a value only the function's value needs, the first of its shape computed
anyway (`fuse`, with `stand_ins`)."""
import gast

from .. import syntax
from ..analysis.value_kinds import CONTAINER
from ..compilation import parameters


def run(vjp, ctx):
    """The pass: `vjp` whose pullback, where a helper needs only a value's shape and reads
    nothing else of that value, reads a parameter of that shape it reads anyway, so that
    the closure keeps no more values alive; else the value itself."""
    pullback = ctx.reverse.pullback
    args = list(ctx.shape_only_args(pullback.body))
    if not args:
        return vjp
    read = _read_for_values(pullback.body, args)
    params = parameters(ctx.src)
    stand_ins(args, ctx, read | set(params), [p for p in params if p in read])
    return vjp


def _read_for_values(stmts, args):
    """The names `stmts` read other than as the arguments `args` ((call, argument) pairs of
    `Compilation.shape_only_args`, which read a value's shape alone)."""
    shape_only = {id(arg) for _, arg in args}
    return {n.id for s in stmts for n in syntax.name_nodes(s)
            if isinstance(n.ctx, gast.Load) and id(n) not in shape_only}


def stand_ins(args, ctx, kept, candidates):
    """Of `args`, the (call, argument) pairs of `Compilation.shape_only_args` (a helper that
    reads the argument only for its shape, its `shape_only`), each argument the value
    whose shape it takes: that value, if in `kept`, else the first of `candidates` with
    its shape; [(argument, the value it stands in for)] of those."""
    kind, shapes, straight = ctx.value_kinds.kind, ctx.shapes, ctx.reverse.straight
    first = {}
    # (a list and the array NumPy makes of it have one shape, not one structure)
    for n in candidates:
        if kind.get(n) != CONTAINER and shapes.of(n) is not None:
            first.setdefault(shapes.of(n), n)
    stood_in = []
    for _, arg in args:
        if (isinstance(arg, gast.Name) and arg.id in straight and arg.id not in kept
                and kind.get(arg.id) != CONTAINER):
            other = first.get(shapes.of(arg.id), arg.id)
            if other != arg.id:
                stood_in.append((arg, arg.id))
                arg.id = other
    return stood_in
