"""Guard bindings: a derivative that the API calls directly (`f_grad`,
`f_value_and_grad`, a guarded `f_jvp`) tests, after the types of its arguments, that
what its compilation resolved is still what it found (frontend/guards.py): the globals
and builtins it read, the attribute chains (`math.sin`), the methods of its arguments'
classes; that no function's code or defaults were assigned since they last held (an
audit hook makes the first identity test fail, by binding its constant to a stand-in,
or raises a flag tested first where there is none: see guards.watch); and, when it
calls the derivatives of other functions, that their guards hold (a checker the driver
binds). Where one does not hold, it falls back as for
arguments of other types: the derivative is compiled again for the function as it is
now (see docs/recompilation.md).

>>> print(show("guard_bindings", '''
... def f(x):
...     return math.sin(x) * x
... '''))
def f_grad(x):
    if x.__class__ is not float:
        return _s2s_respecialize(x)
    if math.sin is not _s2s_sin:
        return _s2s_respecialize(x)
    t = math.sin(x)
    # grad of: return math.sin(x) * x
    x_bar = t + x * cos(x)
    return x_bar
"""
import re

import gast

from .. import marks
from .. import syntax
from ..analysis.value_kinds import user_class
from ..frontend import guards


def run(fn, ctx):
    """The pass."""
    first = fn.body[0] if fn.body else None
    if marks.TESTS.of(getattr(first, "test", None)) is None:
        return fn

    more = []
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
    _watch_code(fn, ctx, more)
    if ctx.callees:
        ctx.callee_guards = ctx.namer.fresh("_s2s_callees_hold")
        ctx.bindings[ctx.callee_guards] = None      # (bound by the driver once linked)
        more.append(f"not {ctx.callee_guards}()")
    # (a test of its own, after the arguments': a reader may skip it)
    fn.body.insert(1, syntax.located(syntax.guard(more, first.body[0].value), first))
    return fn


def _watch_code(fn, ctx, tests):
    """The guards on a function's code and defaults, which an audit hook watches
    (guards.watch), in `tests`: the constant of an identity test that the driver binds
    to `guards.STALE` when one is assigned, so that the test fails and the next call
    checks every guard (none to test at each call); without one, a flag tested first
    (`_s2s_code_changed`), which the driver raises. `ctx.code_changed` is `(the name,
    its value while the guards hold, its value once one is assigned)`."""
    for i, test in enumerate(tests):
        found = re.fullmatch(r"(.*) is not (_s2s_\w+)", test)
        if found is None or found[2] not in ctx.bindings:
            continue
        carrier = found[2]
        if sum(len(re.findall(rf"\b{carrier}\b", t)) for t in tests) > 1 or any(
                isinstance(n, gast.Name) and n.id == carrier for n in gast.walk(fn)):
            # (one of its own, read nowhere else: the code would read the stand-in)
            carrier = ctx.namer.fresh(carrier)
            ctx.bindings[carrier] = ctx.bindings[found[2]]
            tests[i] = f"{found[1]} is not {carrier}"
        ctx.code_changed = (carrier, ctx.bindings[carrier], guards.STALE)
        return
    flag = ctx.namer.fresh("_s2s_code_changed")
    ctx.bindings[flag] = False
    ctx.code_changed = (flag, False, True)
    tests.insert(0, flag)

