"""The fused gradient: the forward pass and the pullback in one function, as `grad`
(`f_grad`), `value_and_grad` (`f_value_and_grad`) and forward over reverse
(`f_adjoint`) run it, with the guard that checks the argument types; for `grad`, a
value only the function's value needs, whose shape alone a helper reads (its
`shape_only`, registry.HelperFacts), has another of that shape stand in
(ad/shape_stand_ins.py).

>>> print(show("fuse", '''
... def f(x):
...     return sin(x) * x
... '''))
def f_grad(x):
    if x.__class__ is not float:
        return _s2s_respecialize(x)
    t = sin(x)
    y_bar = 1.0
    # grad of: return sin(x) * x
    x_bar = y_bar * t + y_bar * x * cos(x)
    return x_bar
"""
import copy

import gast
import numpy as np

from ..analysis.value_kinds import ARRAY, guarded
from ..analysis.operations import COPY, NONDIFF, PACK
from ..analysis.names import live_names
from ..analysis.shapes import pattern_tests
from .. import marks, syntax
from ..compilation import (Callee, CONTAINERS, complex_key, complex_leaves_key, function_params,
                           parameters)
from ..frontend import structure
from ..options import Variant
from .shape_stand_ins import stand_ins
from .simplify import with_constant


def run(vjp, ctx):
    """The pass (for a fused variant): `f_value_and_grad`, `f_grad`, `f_adjoint` or
    `f_advance`."""
    value = {Variant.GRAD: False, Variant.ADJOINT: "adjoint", Variant.STEP: "adjoint",
             Variant.ADVANCE: "advance"}.get(ctx.variant, True)
    return fuse(vjp, ctx, value=value, guard=ctx.options.guard)


def guarded_types(ctx):
    """[(parameter, generated-code name of its type)] for the fused function's guard."""
    types = ctx.types
    return [(p, ctx.bind(types[p].__name__, obj=types[p]))
            for p in guarded(parameters(ctx.src), types)]


def dtype_tests(ctx, names):
    """The guard's tests of the dtypes of the array parameters among `names`: a complex
    one the code is specialised on stays complex (`complex_key`), a differentiated one
    stays floating (grad refuses others when it compiles, compilation.check_inputs, and
    buffer reuse relies on it), and the others the code takes as real stay so
    (before_ad/complex_values.py)."""
    out = []
    for p in names:
        if ctx.arg_types.get(complex_key(p)):
            out.append(f"{p}.dtype.kind != 'c'")
        elif ctx.param_kinds.get(p) == ARRAY and p in ctx.wrt:
            out.append(f"{p}.dtype.kind != 'f'")
    return out + [f"{p}.dtype.kind == 'c'" for p in names if p in ctx.assumed_real]


def function_tests(ctx):
    """The guard's tests that each parameter the code is specialised on the function
    value of is that function (`nonlinearity is not tanh`, see
    compilation.function_params)."""
    params = parameters(ctx.src)
    return [f"{p} is not {ctx.bind(getattr(fn, '__name__', 'function'), obj=fn)}"
            for p, fn in function_params(ctx.arg_types).items() if p in params]


def leaves_tests(ctx):
    """The guard's tests that the structures the code is specialised on the complex values
    of still hold them, and the same real ones (`compilation.complex_leaves_key`), and
    that a differentiated one that held no complex value holds none."""
    out = []
    for p in parameters(ctx.src):
        leaves = ctx.arg_types.get(complex_leaves_key(p))
        kind = ctx.arg_types.get(p)
        if leaves or p in ctx.wrt and (kind in CONTAINERS or isinstance(kind, type) and (
                structure.user_class(kind))):
            found = f"{ctx.runtime('complex_leaves')}({p})"
            out.append(f"{found} != {ctx.bind(p + '_leaves', obj=leaves)}" if leaves
                       else found)
    return out


def structure_tests(ctx):
    """The guard's tests that the arguments keep the structure the code is specialised
    on (`len(layers) != 2`, `layers[1].__class__ is not Dense`, `layers[1].act is not
    tanh`: see frontend/structure.py), in an order in which each can be read."""
    params, out = parameters(ctx.src), []
    for k in sorted(ctx.structure, key=structure.order):
        expr, kind = structure.place(k)
        value = ctx.structure[k]
        if structure.steps(expr)[0] not in params:
            continue
        if kind == "len":
            out.append(f"{ctx.bind('len', obj=len)}({expr}) != {value}")
        elif kind == "function":
            out.append(f"{expr} is not {ctx.bind(getattr(value, '__name__', 'function'), obj=value)}")
        else:
            out.append(f"{expr}.__class__ is not {ctx.bind(value.__name__, obj=value)}")
    return out


def fuse(vjp, ctx, value=True, guard=True):
    """`f_value_and_grad(x) -> (y, x_bar)`: the forward pass, then the pullback inlined
    with its seed, for `value_and_grad` (no closure, one call). It starts by checking
    that the arguments have the types it was specialised for. Without `value`,
    `f_grad(x) -> x_bar` for `grad`, without the forward statements only the value
    needs; with `value="adjoint"`, `f_adjoint(y_bar, x) -> x_bar`, the same with the seed
    as its first parameter (what `recompute` calls)."""
    namer, helper, runtime = ctx.namer, ctx.bind, ctx.runtime
    guards = guarded_types(ctx) if guard else ()
    functions = function_tests(ctx) + structure_tests(ctx) + leaves_tests(ctx) if guard else []
    pullback = ctx.reverse.pullback
    check = []
    if guards or functions:
        # a differentiated array must stay floating: grad refuses others when it compiles
        # (compilation.check_inputs), and buffer reuse relies on it
        floats = dtype_tests(ctx, [p for p, _ in guards])
        check = [syntax.guard([f"{p}.__class__ is not {t}" for p, t in guards]
                             + floats + functions,
                             syntax.passing_on(runtime("respecialize"), vjp.args))]
    forward = [s for s in vjp.body[:-1] if s is not pullback]
    result = vjp.body[-1].value.elts[0]
    grads = pullback.body[-1].value
    out, seeded = [], []
    if isinstance(result, gast.Name) and result.id in syntax.names_stored(pullback):
        kept = namer.fresh("value")
        out.append(syntax.assign(kept, copy.deepcopy(result)))
        result = syntax.name(kept)
    r = syntax.unparse(vjp.body[-1].value.elts[0])
    # has_aux, the pair built where the compiler sees it: the seed is the output's alone
    paired = ctx.options.aux and ctx.reverse.output != r
    r = ctx.reverse.output if paired else r
    seed_name = pullback.args.args[0].id
    if value == "advance":
        return advance(vjp, ctx, forward, result)
    if value == "adjoint":
        body = _live(forward + pullback.body[:-1] + [syntax.ret(grads)], ctx)
        adjoint = syntax.function(namer.fresh(vjp.name[:-4] + "_adjoint"), [], body, like=vjp)
        params = adjoint.args.posonlyargs or adjoint.args.args
        params.insert(0, gast.Name(id=seed_name, ctx=gast.Param(), annotation=None,
                                   type_comment=None))
        value = result.id if isinstance(result, gast.Name) else None
        seed_name, value = state_seed(adjoint, ctx, seed_name, value)
        if guard and ctx.patterns:
            adjoint.body.insert(0, step_guard(adjoint, ctx, seed_name, value))
        return adjoint
    folded = [with_constant(s, seed_name, 1.0) for s in pullback.body
              ] if ctx.reverse.scalar_output and (paired or not ctx.options.aux) else [None]
    if None not in folded and not any(syntax.stores(s, seed_name) for s in pullback.body):
        # the output is a full reduction: its adjoint is the number 1.0
        pullback.body = folded
        grads = pullback.body[-1].value
    else:
        if ctx.options.aux and not paired:
            # (has_aux: the output's seed 1, zeros for aux; a clear error if not a pair)
            seed = syntax.parse_expr(f"{runtime('aux_seed')}({r}, {vjp.name[:-4]!r})")
        elif ctx.reverse.scalar_output:
            seed = syntax.const(1.0)
        else:
            seed = syntax.parse_expr(f"1.0 if {helper('type')}({r}) is {helper('float')} "
                                    f"else {runtime('seed')}({r}, {vjp.name[:-4]!r})")
        seeded.append(syntax.assign(seed_name, seed))
    if value:
        body = (check + forward + out + seeded + pullback.body[:-1]
                + [syntax.ret(syntax.tuple_([result, grads]))])
        fused = syntax.function(namer.fresh(vjp.name[:-4] + "_value_and_grad"), [], body,
                               like=vjp)
        return fused
    pullback = pullback.body[:-1] + [syntax.ret(grads)]
    memo = {}       # (what each statement binds and reads, for the analyses of liveness)
    # a value only the function's value needs, whose shape alone a helper reads: a
    # parameter of that shape stands in, or the first value of it computed anyway
    args = list(ctx.shape_only_args(pullback))
    if args:
        params = parameters(ctx.src)
        shape_only = [arg for _, arg in list(ctx.shape_only_args(forward + seeded)) + args
                      if isinstance(arg, gast.Name)]
        computed = _computed(forward + seeded + pullback, ctx, memo, shape_only)
        order = [s.targets[0].id for s in forward if isinstance(s, gast.Assign)
                 and isinstance(s.targets[0], gast.Name)
                 and s.targets[0].id in ctx.reverse.straight]
        stood_in = stand_ins(args, ctx, computed | set(params),
                             params + [n for n in order if n in computed] + order)
        if stood_in:
            # (the values the stand-ins' shapes are read from may need the value itself)
            computed = _computed(forward + seeded + pullback, ctx, dict(memo))
            for arg, value in stood_in:
                if value in computed:
                    arg.id = value
    body = _live(forward + seeded + pullback, ctx, memo)
    return syntax.function(namer.fresh(vjp.name[:-4] + "_grad"), [], check + body, like=vjp)


def advance(vjp, ctx, forward, result):
    """`f_step_advance`, a checkpointed loop's step `f_step` as its sweeps run it, with
    the release passes after it (so that its temporaries are computed into dead ones):
    its forward pass, returning its result, under the guard of `step_guard` (else the
    step as it is)."""
    name = vjp.name[:-4]
    forward = [s for s in forward if not syntax.is_comment(s)]
    body = _live(forward + [syntax.ret(result)], ctx)
    fn = syntax.function(ctx.namer.fresh(name + "_advance"), [], body, like=vjp)
    comment = syntax.comment("the step of a checkpointed loop, computing into its dead "
                             "temporaries")
    plain = ctx.bind(name, obj=ctx.src.fn)
    fn.body[:0] = [step_guard(fn, ctx, None, None, plain), comment]
    return fn


def state_seed(adjoint, ctx, seed, value):
    """(seed, value): the seed of the adjoint of a checkpointed loop's step and the value
    it is the adjoint of. A step that returns its one state and whether it stopped takes
    the state's adjoint (its caller passes it, see ad/checkpointed.py), not the pair's:
    its unpacking (`u_1_bar = y_bar[0]`) goes, and `u_1_bar` is the parameter."""
    step = marks.RECORD.of(ctx.src.fn)
    if getattr(step, "stop", None) is None or len(step.state) != 1:
        return seed, value
    params = adjoint.args.posonlyargs or adjoint.args.args
    unpack = next((s for s in adjoint.body if isinstance(s, gast.Assign)
                   and isinstance(s.targets[0], gast.Name)
                   and isinstance(s.value, gast.Subscript) and syntax.is_name(s.value.value, seed)
                   and isinstance(s.value.slice, gast.Constant) and s.value.slice.value == 0),
                  None)
    loads = [n for n in syntax.name_nodes(adjoint) if n.id == seed
             and isinstance(n.ctx, gast.Load)]
    if unpack is None or len(loads) != 1:
        state = ctx.namer.fresh(f"{step.state[0]}_bar")
        adjoint.body.insert(0, syntax.assign(seed, syntax.tuple_([syntax.name(state),
                                                                   syntax.const(None)])))
        params[0].id = state
        return state, None
    at = next(i for i, s in enumerate(adjoint.body) if s is unpack)
    lone = at > 0 and syntax.is_comment(adjoint.body[at - 1]) and (
        at + 1 == len(adjoint.body) or syntax.is_comment(adjoint.body[at + 1]))
    del adjoint.body[at - lone:at + 1]      # (and the comment over it alone)
    state = unpack.targets[0].id
    params[0].id = state
    primal = {a: p for p, a in ctx.reverse.adjoints.items()}
    return state, primal.get(state)


def step_guard(adjoint, ctx, seed, value, fallback=None):
    """The guard of the adjoint of a checkpointed loop's step specialised on the shape
    patterns of its arguments (the loop state's, as the caller saw them before the loop):
    where an argument or the seed (the adjoint of the state the step returns, which it
    takes to have the state's pattern) has another type or pattern, it calls the step's
    adjoint made for any shapes. Records the seed in `ctx.seed` for the facts of
    analysis/buffers.py."""
    step = marks.RECORD.of(ctx.src.fn)
    state = getattr(step, "state", ())
    patterns = dict(ctx.patterns)
    if seed is not None and value is not None and len(state) == 1 and state[0] in ctx.patterns:
        ctx.seed = (seed, value, ctx.patterns[state[0]][1])
        patterns = {seed: ctx.patterns[state[0]], **patterns}
        ctx.patterns = patterns
    ndarray = ctx.bind("ndarray", obj=np.ndarray)
    tests = [f"{p}.__class__ is not {t}" for p, t in guarded_types(ctx) if p not in patterns]
    tests += function_tests(ctx) + structure_tests(ctx)
    for p, (dtype, pat) in patterns.items():
        dtype = np.dtype(dtype)
        tests += ([f"{p}.__class__ is not {ndarray}"] + pattern_tests(p, pat)
                  + [f"{p}.dtype != {ctx.bind(dtype.name, obj=dtype)}"])
        if p == seed:       # (its memory, which it sums into)
            tests += [f"{p}.base is not None", f"not {p}.flags.writeable"]
    if fallback is None:
        params = parameters(ctx.src)
        wrt = ([params.index(n) for n in ctx.wrt])
        wrt = tuple(wrt) if ctx.as_tuple else wrt[0]
        fallback = ctx.call(Callee(ctx.src.fn, Variant.STEP, wrt, ctx.arg_types),
                            adjoint.name)
    return syntax.guard(tests, syntax.passing_on(fallback, adjoint.args))


def _computed(body, ctx, memo, shape_only=()):
    """The names the top-level assignments of `body` (a fused gradient's, before `_live`)
    bind that `_live` keeps; with `shape_only` (names helpers read only for a shape,
    arguments of theirs), those it would keep if those read nothing. `memo` is that of
    `live_names`; it is left without the statements that read `shape_only`, so that it
    holds for them whatever they read then."""
    ops, src = ctx.ops, ctx.src
    top = {id(s) for s in body} | {id(s) for b in body if isinstance(b, gast.If)
                                   for s in b.body + b.orelse}
    names = [arg.id for arg in shape_only]
    for arg in shape_only:
        arg.id = "_s2s_shape_only"      # (read by nothing, for the liveness below)
    unneeded = set()

    def dead(s, target):
        if id(s) in top and _dead_anywhere(s, ops, src):
            unneeded.add(target)
            return True
        return False
    live_names(body, set(), dead=dead, memo=memo)
    for arg, name in zip(shape_only, names):
        arg.id = name
    # (what a statement binds: from the memo where it holds it, one walk fewer)
    stored = {t for s in body if id(s) in top
              for t in (memo[id(s)][0] if id(s) in memo else syntax.names_stored(s))}
    if shape_only:
        for key in [k for k, (_, reads) in memo.items() if "_s2s_shape_only" in reads]:
            del memo[key]
    return stored - unneeded


def _live(body, ctx, memo=None):
    """`body` without the top-level assignments nobody reads whose value is a name, a
    constant, syntax or a call of a primitive with a derivative rule (but those of a
    `try` body, which decide whether the function takes its except clause), nor the
    top-level `if` statements left with nothing but such assignments (an adjoint's
    result built on two paths, `if stop: y = (x, True)`, which it does not return);
    then, in loops and branches too, the assignments only such assignments read
    (`_without_faint`). `memo` is that of `live_names`."""
    ops, src = ctx.ops, ctx.src
    memo = {} if memo is None else memo
    top = {id(s) for s in body} | {id(s) for b in body if isinstance(b, gast.If)
                                   for s in b.body + b.orelse}

    adjoined = ctx.reverse.adjoined

    def dead(s, target):      # (a call whose adjoint runs it again: see ad/calls.py)
        return id(s) in top and (_dead_anywhere(s, ops, src) or s in adjoined)
    while True:
        live_names(body, set(), delete=True, dead=dead, memo=memo)
        empty = [s for s in body if isinstance(s, gast.If) and not s.body and not s.orelse]
        if not empty:
            break
        body[:] = [s for s in body if not any(s is e for e in empty)]
    return _without_faint(body, lambda s: _dead_anywhere(s, ops, src),
                          lambda f: (ctx.bindings.get(f) or src.free_values().get(f)) is range)


def _dead_anywhere(s, ops, src):
    """Whether assignment `s` may go when nothing reads what it binds: its value is a
    name, a constant, syntax or a call of a primitive with a derivative rule, and it is
    not in the body of a `try`."""
    op = ops.get(s)
    return op is not None and not src.in_try(s) and (
        op.form in (COPY, PACK) or op.variant is not None
        or (op.form == NONDIFF and op.prim is None))


def _without_faint(body, removable, is_range):
    """`body` without the assignments, in loops and branches too, to names that only
    such assignments read (`x = x + dt * vx` in a loop, for a `grad` that does not
    return `x`): a binding is needed if a statement other than those reads it, or a
    needed assignment does. A read in a loop after the loop's body bound the name
    unconditionally reads that iteration's binding alone (the reversed loop's `t =
    x[i]`, computed again, does not need the forward loop's). A `for` over `range` left
    with an empty body (`is_range(name)`) goes too."""
    needed, binders, reads = set(), {}, {}
    _needed_reads(body, removable, needed, binders, reads, [], False)
    kept, todo = set(), list(needed)
    while todo:
        for s in binders.pop(todo.pop(), ()):
            if id(s) not in kept:
                kept.add(id(s))
                new = reads[id(s)] - needed
                needed |= new
                todo.extend(new)
    faint = {id(s) for stmts in binders.values() for s in stmts} - kept
    # (a loop's counter read after it, not in another loop over it)
    return _swept(body, faint, is_range, {k[0] for k in needed if len(k) == 1}) \
        if faint else body


def _needed_reads(stmts, removable, needed, binders, reads, loops, top):
    """Add to `needed` the bindings statements of `stmts` read but the assignments
    `removable` accepts, which go in `binders` ({binding: [assignment]}) with what they
    read (`reads`). A binding is `(name,)`, any assignment of the name, or `(name, loop)`,
    those inside `loop` (an id), which a read in the loop reads when the loop's body
    (`top`: `stmts` is it) bound the name before, unconditionally. `loops` holds, per
    enclosing loop, its id and the names its body bound so far (and no `for` inside it
    bound since: `i_1 = i; for i_1 in range(k): ...; read(i_1)` reads the inner loop's
    variable, so that loop stays)."""
    def key(name):
        for loop, bound in reversed(loops):
            if name in bound:
                return (name, loop)
        return (name,)
    for s in stmts:
        if (isinstance(s, gast.Assign) and len(s.targets) == 1
                and isinstance(s.targets[0], gast.Name) and removable(s)):
            name = s.targets[0].id
            reads[id(s)] = {key(n) for n in syntax.names_loaded(s.value)}
            for k in [(name,)] + [(name, loop) for loop, _ in loops]:
                binders.setdefault(k, []).append(s)
        elif isinstance(s, (gast.If, gast.For, gast.While)):
            own = [s.test] if not isinstance(s, gast.For) else [s.target, s.iter]
            needed.update(key(n) for e in own for n in syntax.names_loaded(e))
            if isinstance(s, gast.If):
                _needed_reads(s.body, removable, needed, binders, reads, loops, False)
            else:
                bound = set(syntax.names_stored(s.target)) if isinstance(s, gast.For) else set()
                _needed_reads(s.body, removable, needed, binders, reads,
                              loops + [(id(s), bound)], True)
            _needed_reads(s.orelse, removable, needed, binders, reads, loops, False)
            if isinstance(s, gast.For):     # (a read after it may read its variable)
                for _, bound in loops:
                    bound.difference_update(syntax.names_stored(s.target))
        else:
            needed.update(key(n) for n in syntax.names_loaded(s))
        if top and isinstance(s, gast.Assign) and len(s.targets) == 1 \
                and isinstance(s.targets[0], gast.Name):
            loops[-1][1].add(s.targets[0].id)


def _swept(stmts, faint, is_range, needed):
    """`stmts` without the statements whose ids are in `faint`, and the loops over
    `range` (whose index is not in `needed`) and `if`s that leaves empty."""
    out = []
    for s in stmts:
        if id(s) in faint:
            continue
        if isinstance(s, (gast.If, gast.For, gast.While)):
            s.body = _swept(s.body, faint, is_range, needed)
            s.orelse = _swept(s.orelse, faint, is_range, needed)
            if (isinstance(s, gast.For) and not s.body and not s.orelse
                    and not needed.intersection(syntax.names_stored(s.target))
                    and isinstance(s.iter, gast.Call) and syntax.is_name(s.iter.func)
                    and is_range(s.iter.func.id)
                    and all(syntax.is_atom(a) for a in s.iter.args)):
                continue
            if isinstance(s, gast.If) and not s.body and not s.orelse:
                continue
            s.body = s.body or [gast.Pass()]
        out.append(s)
    return out
