"""Guard bindings: a derivative that the API calls directly (`f_grad`,
`f_value_and_grad`, a guarded `f_jvp`) tests, after the types of its arguments, that
what its compilation resolved is still what it found (frontend/guards.py): the globals
and builtins it read, the attribute chains (`math.sin`), the methods of its arguments'
classes; that no function's code or defaults were assigned since they last held (a flag
that an audit hook raises, see guards.watch); and, when it calls the derivatives of other functions, that their
guards hold (a checker the driver binds). Where one does not hold, it falls back as for
arguments of other types: the derivative is compiled again for the function as it is
now (see docs/recompilation.md).

>>> print(show("guard_bindings", '''
... def f(x):
...     return math.sin(x) * x
... '''))
def f_grad(x):
    if x.__class__ is not float:
        return _s2s_respecialize(x)
    if _s2s_code_changed or math.sin is not _s2s_sin:
        return _s2s_respecialize(x)
    t = math.sin(x)
    # grad of: return math.sin(x) * x
    x_bar = t + x * cos(x)
    return x_bar
"""
from .. import marks
from .. import syntax
from ..analysis.value_kinds import user_class
from ..frontend import guards


def run(fn, ctx):
    """The pass."""
    first = fn.body[0] if fn.body else None
    if marks.TESTS.of(getattr(first, "test", None)) is None:
        return fn

    # the guards on a function's code and defaults test one flag, raised when any is
    # assigned (guards.watch; the driver binds it)
    ctx.code_changed = ctx.namer.fresh("_s2s_code_changed")
    ctx.bindings[ctx.code_changed] = None
    more = [ctx.code_changed]
    # (a global the generated code binds a name of its own to is read from the dict)
    # (and one its closure names: a global of a function it calls that the closure
    # hides, `f` of `lambda x: -f(x)` where `f` is also a module's function)
    taken = set(syntax.names_stored(fn)) | set(ctx.bindings) | {
        a.id for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs} | set(
        getattr(getattr(ctx.src.fn, "__code__", None), "co_freevars", ()))
    more += guards.tests([g for g in ctx.guards if not guards.counted(g)],
                         lambda obj, base: ctx.constant(obj, base),
                         bare=ctx.src.fn.__globals__, taken=taken,
                         class_name=lambda cls: ctx.bind(cls.__name__, obj=cls))
    for param, cls in ctx.types.items():
        if user_class(cls) and cls.__dictoffset__ and "." not in param:
            # (an attribute of the instance hiding a method of its class, which s2sad
            # calls: compilation.arg_types_of refuses it)
            hides = ctx.constant(guards.hides_a_method, "hides_a_method")
            more.append(f"{hides}({param}) is not None")
    if ctx.callees:
        ctx.callee_guards = ctx.namer.fresh("_s2s_callees_hold")
        ctx.bindings[ctx.callee_guards] = None      # (bound by the driver once linked)
        more.append(f"not {ctx.callee_guards}()")
    # (a test of its own, after the arguments': a reader may skip it)
    fn.body.insert(1, syntax.located(syntax.guard(more, first.body[0].value), first))
    return fn
