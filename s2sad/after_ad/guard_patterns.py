"""Guard patterns: a fused gradient's guard (made by `fuse`, ad/fused.py) also tests the
shape patterns the code is specialised on, where its shape classes depend on them (see
analysis/shapes.py), the number of axes it relied on, and the dtypes buffer reuse
relied on."""
import numpy as np

from .. import marks
from .. import syntax
from ..analysis.shapes import pattern_tests


def run(fn, ctx):
    """The pass: `fn` (fused, with a guard) also checking the shape patterns its shape
    classes depend on (see analysis.shapes) and the dtypes of the parameters that buffer
    reuse relied on."""
    dtypes = ctx.array_facts.used_dtypes if ctx.options.release else ()
    guard = fn.body[0] if fn.body else None
    tests = marks.TESTS.of(getattr(guard, "test", None))
    if tests is None or not (ctx.shapes.used or dtypes or ctx.ndims_relied):
        return fn
    # a dtype test makes the test that an array is floating, or not complex, needless
    tests = [t for t in tests if not any(t in (f"{p}.dtype.kind != 'f'",
                                               f"{p}.dtype.kind == 'c'") for p in dtypes)]
    tests += [t for p in sorted(ctx.shapes.used) for t in pattern_tests(p, ctx.patterns[p][1])
              if t not in tests]
    tests += [f"{p}.ndim != {len(ctx.patterns[p][1])}" for p in sorted(ctx.ndims_relied)
              if f"{p}.ndim != {len(ctx.patterns[p][1])}" not in tests]
    for p in sorted(dtypes):
        dtype = np.dtype(ctx.patterns[p][0])
        if f"{p}.dtype != {ctx.bind(dtype.name, obj=dtype)}" not in tests:
            tests.append(f"{p}.dtype != {ctx.bind(dtype.name, obj=dtype)}")
    fn.body[0] = syntax.located(syntax.guard(tests, guard.body[0].value), guard)
    return fn
