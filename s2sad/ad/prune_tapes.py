"""PruneTapes: after `optimize`, the tapes of the reversed loops drop the values those
loops no longer read, and a `for` over `range` whose reversed loop needs nothing of an
iteration but its counter runs as `reversed(range(...))`, without a tape (the loops'
plans, `ReverseResult.loops`, do the work: `LoopPlan.prune` and `as_range`)."""


def run(vjp, ctx):
    """The pass: the tapes drop the values the (optimized) reversed loops no longer
    read."""
    for info in ctx.reverse.loops:
        info.prune(ctx)
        info.as_range(vjp, ctx)
    return vjp
