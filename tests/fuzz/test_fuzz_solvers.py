"""Fuzz the implicit derivatives of SciPy's solvers called in a differentiated function
(generator: solver_programs.py): `brentq`, `newton`, `fsolve` and `minimize` on a
residual or objective passed as a module-level function with `args=` (written out or a
name for a tuple), a lambda, a nested function or a `functools.partial`.

`test_solver_gradient_matches_central_differences`: the gradient of `f(x, z)` with
respect to both parameters, through `grad` or `jvp` with each unit tangent, agrees with
fourth-order central differences of the whole program (the solver run again at each step,
with tight tolerances), where two steps agree; and every generated program is supported
(any exception fails the test). SciPy is optional: without it this module is skipped.
The share of the profile's programs is `SHARE` (fast: about 50).
"""
import math

import pytest
from hypothesis import event, given, note, settings
from hypothesis import strategies as st

import s2sad

from .programs import forget
from .test_fuzz_nested import _close, _trusted_fd

pytest.importorskip("scipy.optimize")

from .solver_programs import solver_programs  # noqa: E402

pytestmark = [pytest.mark.fuzz,
              pytest.mark.filterwarnings("ignore:.*does not depend on")]

SHARE = 0.05


@settings(max_examples=max(2, int(round(settings.default.max_examples * SHARE))))
@given(program=solver_programs(), via=st.sampled_from(("grad", "jvp")),
       point=st.tuples(*[st.integers(-1500, 1500).map(lambda k: k / 1000 + 1.3e-7)] * 2))
def test_solver_gradient_matches_central_differences(program, via, point):
    note(program.source)
    f = program.load()
    try:
        expected = tuple(_trusted_fd(f, point, i) for i in range(2))
        if via == "grad":
            got = s2sad.grad(f, wrt=(0, 1))(*point)
        else:
            got = tuple(s2sad.jvp(f, point, tuple(float(k == i) for k in range(2)))[1]
                        for i in range(2))
        note(f"{via}: {got}, central differences: {expected}")
        if None in expected:
            event("a partial derivative skipped: central differences disagree")
        assert all(math.isfinite(g) for g in got), got
        assert all(e is None or _close(g, e) for g, e in zip(got, expected)), (got, expected)
    finally:
        forget(f)
