"""Fuzz s2sad's complex numbers with random NumPy programs that hold some (generator:
complex_programs.py).

Usage
-----
    python -m pytest tests/fuzz/test_fuzz_complex.py -q -p no:cacheprovider     # "fast"
    python -m pytest tests/fuzz/test_fuzz_complex.py --hypothesis-profile=long -q -p no:cacheprovider

Properties
----------
1. `test_complex_values_are_refused`: where a complex value meets a differentiated one in
   a rule for real values only, `value_and_grad`, `vjp` and `jvp` raise
   `ComplexValueError` naming the module's line where it does (at compile time where
   s2sad can see the complex value, when the derivative runs where only the run shows
   it); never a number.
2. `test_complex_values_allowed`: complex values differentiated through rules that hold
   for them, or that never meet a differentiated value (or only their modulus, phase or
   parts do), leave the derivatives right: the checks of test_fuzz_numpy.py, against
   finite differences, through `value_and_grad` and `vjp`, and `jvp` against the
   directional difference and reverse mode.
"""
import pytest
from hypothesis import event, given, note, settings
from hypothesis import strategies as st

import s2sad
from s2sad.errors import ComplexValueError

from .complex_programs import complex_programs
from .test_fuzz_numpy import (_location, check_forward, check_gradients, draw_inputs,
                              draw_tangents)
from .numpy_programs import forget

pytestmark = [pytest.mark.fuzz, pytest.mark.filterwarnings("ignore:.*does not depend on"),
              pytest.mark.filterwarnings("ignore:Casting complex values")]

# share of the profile's max_examples each test runs (fast: 1000 -> 60 programs)
SHARES = {"refused": 0.04, "allowed": 0.06}


def fuzz_settings(share):
    n = max(2, int(round(settings.default.max_examples * SHARES[share])))
    return settings(max_examples=n)


def _derivatives(f, args):
    wrt = tuple(range(len(args)))
    yield "value_and_grad", lambda: s2sad.value_and_grad(f, wrt=wrt)(*args)
    yield "vjp", lambda: s2sad.vjp(f, *args)[1](1.0)
    yield "jvp", lambda: s2sad.jvp(f, tuple(args), tuple(1.0 * a for a in args))


@fuzz_settings("refused")
@given(case=complex_programs(("refused", "at run time")), data=st.data())
def test_complex_values_are_refused(case, data):
    note(repr(case))
    event(f"form: {case.form}")
    program = case.program
    f = program.load()
    try:
        args = draw_inputs(data, program)
        for mode, derivative in _derivatives(f, args):
            try:
                got = derivative()
            except ComplexValueError as exc:
                where = _location(exc)
                assert where == (f.__code__.co_filename, case.expected_line), (
                    f"{mode}: ComplexValueError names {where}, expected line "
                    f"{case.expected_line}: {exc}\n{program.source}")
                continue
            except Exception as exc:    # noqa: BLE001 - any other failure is a finding
                pytest.fail(f"{mode}: {type(exc).__name__}: {exc}\n{program.source}",
                            pytrace=False)
            pytest.fail(f"{mode} gave {got!r} instead of refusing the complex value "
                        f"({case.form}) at line {case.expected_line}\n{program.source}",
                        pytrace=False)
    finally:
        forget(f)


@fuzz_settings("allowed")
@given(case=complex_programs(("differentiated", "allowed")),
       via=st.sampled_from(("grad", "vjp")),
       data=st.data())
def test_complex_values_allowed(case, via, data):
    note(repr(case))
    event(f"form: {case.form}")
    check_gradients(case.program, draw_inputs(data, case.program), via)
    check_forward(case.program, draw_inputs(data, case.program),
                  draw_tangents(data, case.program))
