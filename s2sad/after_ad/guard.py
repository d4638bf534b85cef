"""Guard (forward mode, with the option `guard`): the `f_jvp` that `s2sad.jvp` calls
without looking at its arguments tests first the types it was specialised on, and that
no tangent was left out. (A fused gradient's guard is the `fuse` pass's.)"""
from .. import syntax
from ..analysis.value_kinds import ARRAY, guarded
from ..ad.fused import function_tests, leaves_tests, structure_tests
from ..compilation import complex_key, parameters


def run(jvp, ctx):
    """The pass (with the option `guard`): `if x.__class__ is not float or x_dot is None:
    return _s2s_respecialize(x, x_dot)` first, for the `f_jvp` that `s2sad.jvp` calls
    without looking at its arguments: the types it was specialised on, and no tangent
    left out."""
    types = ctx.types
    names = guarded(parameters(ctx.src), types)
    tests = [f"{p}.__class__ is not {ctx.bind(types[p].__name__, obj=types[p])}"
             for p in names]
    # a complex array the code is specialised on stays complex, and the others it reads
    # stay real (before_ad/complex_values.py)
    tests += [f"{p}.dtype.kind != 'c'" for p in names if ctx.arg_types.get(complex_key(p))]
    tests += [f"{p}.dtype.kind == 'c'" for p in names if not ctx.arg_types.get(complex_key(
        p)) and (p in ctx.assumed_real or (p in ctx.wrt and ctx.param_kinds.get(p) == ARRAY))]
    tests += function_tests(ctx) + structure_tests(ctx) + leaves_tests(ctx)
    jvp.body.insert(0, syntax.guard(
        tests + [f"{t} is None" for t in ctx.forward.tangent_names],
        syntax.passing_on(ctx.runtime("respecialize"), jvp.args)))
    return jvp
