"""Fuzz s2sad with random differentiable NumPy programs (generator: numpy_programs.py).

Usage
-----
    python -m pytest tests/fuzz/test_fuzz_numpy.py -q -p no:cacheprovider      # "fast"
    python -m pytest tests/fuzz/test_fuzz_numpy.py --hypothesis-profile=long -q -p no:cacheprovider
    python -m pytest tests/fuzz/test_fuzz_numpy.py --hypothesis-profile=fast-random
    S2SAD_FUZZ_SHRINK_SECONDS=0 python -m pytest tests/fuzz/test_fuzz_numpy.py   # unshrunk

The profiles are the ones of test_fuzz.py (tests/fuzz/conftest.py): `fast` is
derandomized, `long` and `fast-random` draw new programs each run. Each test takes a share
of the profile's `max_examples` (SHARES below); see the module docstring of
test_fuzz.py for the timings of the scalar tests and this file's SHARES for these.

Properties
----------
1. `test_gradient_matches_finite_differences`: the gradient with respect to every
   parameter (1-3 float64 arrays and maybe a float), through `value_and_grad` or through
   `vjp` and its pullback, agrees with central finite differences entry by entry
   (rtol 1e-5, atol 1e-7) at random inputs in [-2, 2] (a 1e-3 grid plus a different
   irrational offset per entry, so no entry sits on a branch boundary). An entry is only
   compared where `f` is smooth along it (two fourth-order central differences and two
   one-sided second-order differences agree, as in test_fuzz.py); elsewhere it is
   skipped. The value agrees with `f`'s. Each gradient has its input's shape and dtype
   (a float64 array, or a float for the float parameter), and the inputs are unchanged
   afterwards.
2. `test_forward_mode_matches`: `s2sad.jvp(f, primals, tangents)` with a random tangent
   returns `f`'s value and a tangent that agrees with the directional finite difference
   (where `f` is smooth along the direction) and with `<grad, tangent>` from reverse
   mode (the dot-product test; it is skipped only when `f` is not smooth along the
   direction, where the two modes may legitimately pick different one-sided
   derivatives). The inputs and tangents are unchanged afterwards.
3. `test_aliased_memory_is_followed_or_refused`: programs of `aliasing_programs` (an
   array given another name, or not, by views, lists, np.split, masks and helpers,
   written through one name and read through another), checked as in 1 and 2; only
   those where a name shares the memory written may be refused.
4. `test_found_numpy_reproducers`: the minimized bugs in found_numpy.py as strict
   xfails; when one is fixed it XPASSes (and fails): move it to a regular test.
4. `test_repeated_writes_gradient` and `test_repeated_writes_forward_mode`: properties 1
   and 2 for programs whose element writes go through indexes that name a position more
   than once (`repeated_write_programs`), where only the value written last may get the
   adjoint.

Every generated program is in the supported subset: any exception from s2sad fails the
test and prints the (shrunk) program's source. One exception: a program that writes
through shared storage (views and aliases of its arrays written through, `for row in
a`, `out=`, in-place methods, writer functions; `VIEWS` and `WRITERS` below set how
often; `NumpyProgram.mutation`) may instead be refused, with an UnsupportedSyntaxError
or MissingRuleError that names a line of the program. Otherwise its value and
derivatives must be those of the program as Python runs it, with NumPy's aliasing.
Before the derivatives are compared, `f` is run twice on copies of the point: it must
give the same value and leave its arguments unchanged (the finite differences run it
on fresh arrays anyway).
"""
import math
import re

import numpy as np
import pytest
from hypothesis import event, given, note, settings
from hypothesis import strategies as st

import s2sad
from s2sad.errors import MissingRuleError, UnsupportedSyntaxError

from . import found_numpy
from .numpy_programs import (NumpyProgram, aliasing_programs, buffer_programs, forget,
                             numpy_programs, repeated_write_programs)

pytestmark = [pytest.mark.fuzz, pytest.mark.filterwarnings("ignore:.*does not depend on")]

# share of the profile's max_examples each test runs (fast: 1000 -> 300 programs)
SHARES = {"gradient": 0.2, "forward": 0.1, "repeats": 0.05, "aliasing": 0.1}
MAX_STATEMENTS = 10 if settings.get_current_profile_name() == "long" else 4
RTOL, ATOL = 1e-5, 1e-7                # derivative vs finite differences
DOT_RTOL, DOT_ATOL = 1e-9, 1e-11       # jvp vs <grad, tangent> (both exact), times scale
SMOOTH_RTOL, SMOOTH_ATOL = 3e-6, 3e-8
# s2sad bug 2 of found_numpy.py: an array parameter that only a branch not taken reads
# gets the gradient `0.0` (a float). Tolerated here (as zeros of its shape) so that the
# fuzzer looks further; the strict xfail there says when it is fixed: then set False.
KNOWN_SCALAR_ZERO = False     # fixed; kept as a switch for regressions
# chances (percent) that a program may bind views and aliases of the arrays it writes and
# write through them, and that it may call out=, in-place methods and writer functions
# (numpy_programs.py); 0 turns a family off
VIEWS, WRITERS = 40, 25


def fuzz_settings(share):
    n = max(2, int(round(settings.default.max_examples * SHARES[share])))
    return settings(max_examples=n)


def _offsets(n):
    return [math.sqrt(p) * 1e-7 for p in (2, 3, 5, 7, 11, 13, 17, 19, 23, 29)][:n] + [
        math.sqrt(k + 30) * 1e-7 for k in range(max(0, n - 10))]


def draw_inputs(data, program):
    """One float64 array per array parameter (a float for the float one), entries in
    [-2, 2] on a 1e-3 grid plus a distinct irrational offset each."""
    sizes = [1 if s is None else math.prod(s) for s in program.shapes]
    ks = data.draw(st.lists(st.integers(-2000, 2000), min_size=sum(sizes),
                            max_size=sum(sizes)), label="inputs")
    values = [k / 1000 + o for k, o in zip(ks, _offsets(len(ks)))]
    args, at = [], 0
    for shape, size in zip(program.shapes, sizes):
        chunk = values[at:at + size]
        at += size
        args.append(chunk[0] if shape is None else np.array(chunk).reshape(shape))
    return args


def draw_tangents(data, program):
    out = []
    for shape in program.shapes:
        n = 1 if shape is None else math.prod(shape)
        ks = data.draw(st.lists(st.integers(-8, 8), min_size=n, max_size=n), label="tangent")
        t = [k / 8 for k in ks]
        out.append(t[0] if shape is None else np.array(t).reshape(shape))
    return out


def _real(v):
    if isinstance(v, np.ndarray) and v.shape == () and v.dtype.kind == "f":
        return float(v)
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (float, int, np.floating)):
        raise TypeError(f"f returned {type(v).__name__} {v!r}")
    return float(v)


def smooth_derivative(phi, step=2.0 ** -10):
    """d phi / dh at 0 by finite differences, or None where phi is not smooth enough
    for them to be trusted (or fails nearby); steps from `step` down to `step / 64`."""
    try:
        f0 = phi(0.0)

        def central(h):
            return (-phi(2 * h) + 8 * phi(h) - 8 * phi(-h) + phi(-2 * h)) / (12 * h)

        c1, c2 = central(step), central(step / 8)
        h = step / 64
        fw = (-3 * f0 + 4 * phi(h) - phi(2 * h)) / (2 * h)
        bw = (3 * f0 - 4 * phi(-h) + phi(-2 * h)) / (2 * h)
    except (ArithmeticError, ValueError, FloatingPointError):
        return None
    if not all(math.isfinite(v) for v in (f0, c1, c2, fw, bw)):
        return None
    if max(abs(c1 - c2), abs(fw - c2), abs(bw - c2)) > SMOOTH_ATOL + SMOOTH_RTOL * abs(c2):
        return None
    return c2


def agrees(got, fd):
    return math.isfinite(got) and abs(got - fd) <= ATOL + RTOL * abs(fd)


def _finer_if_needed(got, fd, phi):
    """`fd`, or the derivative of `phi` with much smaller steps when only that agrees
    with `got`: near a kink closer than the usual steps (np.min of values of 1e-13,
    from arguments of 1e-7), only they see the derivative."""
    if agrees(got, fd):
        return fd
    fine = smooth_derivative(phi, 2.0 ** -30)
    if fine is not None and agrees(got, fine):
        event("agrees at finer steps only")
        return fine
    return fd


def along(f, args, direction):
    """h -> f(args + h * direction), direction given per argument."""
    def phi(h):
        moved = [a + h * d for a, d in zip(args, direction)]
        return _real(f(*moved))
    return phi


def unit(args, p, idx):
    return [(1.0 if q == p else 0.0) if not isinstance(a, np.ndarray)
            else _unit_array(a, idx if q == p else None) for q, a in enumerate(args)]


def _unit_array(a, idx):
    e = np.zeros_like(a)
    if idx is not None:
        e[idx] = 1.0
    return e


def _fail(program, message):
    pytest.fail(f"{message}\n--- program ---\n{program.source}", pytrace=False)


def _close(a, b):
    return a == b or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def _copies(args):
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def _check_unchanged(program, args, before, what):
    for name, a, b in zip(program.params, args, before):
        if isinstance(a, np.ndarray) and not np.array_equal(a, b):
            _fail(program, f"{what} changed the argument {name!r}: {b!r} became {a!r}")


def _value(program, f, args):
    """f(*args) as a float, or None where f fails or is not finite (skipped). `f` must
    leave its arguments unchanged and give the same value again (else the generator
    has a bug: the finite differences would not be those of one function)."""
    before = _copies(args)
    try:
        with np.errstate(all="ignore"):
            value = _real(f(*args))
            again = _real(f(*_copies(before)))
    except (ArithmeticError, ValueError):
        event("f raises at the point")
        return None
    _check_unchanged(program, args, before, "f itself (a generator bug)")
    if not (value == again or (math.isnan(value) and math.isnan(again))):
        _fail(program, f"f is not deterministic (a generator bug): {value!r}, then {again!r}")
    if not math.isfinite(value):
        event("f is not finite at the point")
        return None
    return value


def _location(exc):
    """(file, line) an error names: its attributes, or the `file:line` its message
    starts with."""
    if getattr(exc, "lineno", None):
        return exc.filename, exc.lineno
    found = re.match(r"(<[^>]*>|[^:\s]+):(\d+)", str(exc))
    return (found.group(1), int(found.group(2))) if found else (None, None)


def refused(program, f, exc):
    """Whether `exc` is a refusal the program may get: it writes through shared storage
    (`program.mutation`), and s2sad raised an UnsupportedSyntaxError or a MissingRuleError
    that names a line of the function."""
    if not program.mutation or not isinstance(exc, (UnsupportedSyntaxError,
                                                    MissingRuleError)):
        return False
    filename, line = _location(exc)
    if filename != f.__code__.co_filename or not (
            f.__code__.co_firstlineno <= line <= len(program.source.splitlines())):
        return False
    event(f"refused ({type(exc).__name__}; {' and '.join(program.mutation)})")
    return True


def _check_structure(program, grads, args, what):
    if not isinstance(grads, tuple) or len(grads) != len(args):
        _fail(program, f"{what} returned {grads!r} for {len(args)} parameters")
    for name, g, a in zip(program.params, grads, args):
        if KNOWN_SCALAR_ZERO and isinstance(a, np.ndarray) and type(g) is float and g == 0.0:
            event("known bug: float 0.0 as the gradient of an array")
            continue
        if isinstance(a, np.ndarray):
            ok = (isinstance(g, np.ndarray) and g.shape == a.shape and g.dtype == a.dtype)
        else:
            ok = isinstance(g, (float, np.floating)) or (
                isinstance(g, np.ndarray) and g.shape == () and g.dtype == np.float64)
        if not ok:
            _fail(program, f"{what}: the gradient of {name!r} is {type(g).__name__} "
                           f"{getattr(g, 'shape', '')} {getattr(g, 'dtype', '')} {g!r}; "
                           f"expected the shape and dtype of {a!r}")


def check_gradients(program, args, via):
    note(program.source)
    event(f"uses: {' and '.join(program.mutation) or 'no writes through shared storage'}")
    f = program.load()
    wrt = tuple(range(len(args)))
    try:
        value = _value(program, f, args)
        if value is None:
            return
        before = _copies(args)
        try:
            if via == "grad":
                got, grads = s2sad.value_and_grad(f, wrt=wrt)(*args)
            else:
                got, pullback = s2sad.vjp(f, *args)
                grads = pullback(1.0)
        except Exception as exc:   # noqa: BLE001 - any failure is a finding
            if refused(program, f, exc):
                return
            _fail(program, f"s2sad.{via} failed: {type(exc).__name__}: {exc}\nat {args!r}")
        _check_unchanged(program, args, before, f"s2sad.{via}")
        _check_structure(program, grads, args, f"s2sad.{via}")
        if not _close(_real(got), value):
            _fail(program, f"s2sad.{via} value {got!r} != f(...) = {value!r}\nat {args!r}")
        compared = 0
        for p, (a, g) in enumerate(zip(args, grads)):
            for idx in (np.ndindex(a.shape) if isinstance(a, np.ndarray) else [()]):
                fd = smooth_derivative(along(f, args, unit(args, p, idx)))
                if fd is None:
                    event("entry skipped (not smooth)")
                    continue
                compared += 1
                got_p = float(g[idx] if isinstance(g, np.ndarray) else g)
                fd = _finer_if_needed(got_p, fd, along(f, args, unit(args, p, idx)))
                if not agrees(got_p, fd):
                    _fail(program, f"gradient mismatch ({via}) for {program.params[p]!r}"
                                   f"{list(idx) if idx else ''}: s2sad gives {got_p!r}, "
                                   f"finite differences give {fd!r}\nat {args!r}\n"
                                   f"all s2sad gradients: {grads!r}")
        event(f"entries compared: {min(compared, 8)}{'+' if compared >= 8 else ''}")
    finally:
        forget(f)


def check_forward(program, args, tangents):
    note(program.source)
    event(f"uses: {' and '.join(program.mutation) or 'no writes through shared storage'}")
    f = program.load()
    wrt = tuple(range(len(args)))
    try:
        value = _value(program, f, args)
        if value is None:
            return
        before, tangents_before = _copies(args), _copies(tangents)
        try:
            got, got_dot = s2sad.jvp(f, tuple(args), tuple(tangents))
        except Exception as exc:   # noqa: BLE001 - any failure is a finding
            if refused(program, f, exc):
                return
            _fail(program, f"s2sad.jvp failed: {type(exc).__name__}: {exc}\nat {args!r}")
        _check_unchanged(program, args, before, "s2sad.jvp")
        _check_unchanged(program, tangents, tangents_before, "s2sad.jvp (tangents)")
        if not _close(_real(got), value):
            _fail(program, f"s2sad.jvp value {got!r} != f(...) = {value!r}\nat {args!r}")
        got_dot = _real(got_dot)
        fd = smooth_derivative(along(f, args, tangents))
        if fd is None:
            event("direction skipped (not smooth)")
            return
        fd = _finer_if_needed(got_dot, fd, along(f, args, tangents))
        if not agrees(got_dot, fd):
            _fail(program, f"jvp mismatch: s2sad gives {got_dot!r}, the directional finite "
                           f"difference gives {fd!r}\nat {args!r}\ntangents {tangents!r}")
        try:
            grads = s2sad.grad(f, wrt=wrt)(*args)
        except Exception as exc:   # noqa: BLE001
            if refused(program, f, exc):
                return
            _fail(program, f"s2sad.grad failed: {type(exc).__name__}: {exc}\nat {args!r}")
        dot = math.fsum(float(np.sum(np.asarray(g) * np.asarray(t)))
                        for g, t in zip(grads, tangents))
        scale = math.fsum(float(np.sum(np.abs(np.asarray(g) * np.asarray(t))))
                          for g, t in zip(grads, tangents))
        if abs(got_dot - dot) > DOT_ATOL + DOT_RTOL * max(scale, abs(dot)) * 100:
            _fail(program, f"jvp {got_dot!r} != <grad, tangent> = {dot!r} (reverse mode)\n"
                           f"at {args!r}\ntangents {tangents!r}\ngradients {grads!r}")
    finally:
        forget(f)


# -- 1. reverse mode ---------------------------------------------------------------------

@fuzz_settings("gradient")
@given(program=numpy_programs(max_statements=MAX_STATEMENTS, views=VIEWS, writers=WRITERS),
       via=st.sampled_from(("grad", "vjp")), data=st.data())
def test_gradient_matches_finite_differences(program, via, data):
    check_gradients(program, draw_inputs(data, program), via)


# -- 2. forward mode ---------------------------------------------------------------------

@fuzz_settings("forward")
@given(program=numpy_programs(max_statements=MAX_STATEMENTS, views=VIEWS, writers=WRITERS),
       data=st.data())
def test_forward_mode_matches(program, data):
    check_forward(program, draw_inputs(data, program), draw_tangents(data, program))


# -- 3. memory that two names share (before_ad/aliasing.py) --------------------------------

@fuzz_settings("aliasing")
@given(program=aliasing_programs(), via=st.sampled_from(("grad", "vjp")), data=st.data())
def test_aliased_memory_is_followed_or_refused(program, via, data):
    # lists of arrays written through the list, np.split's views written then read,
    # helpers that return new arrays or views or write into their argument, masks and
    # index arrays (copies): right in both modes, or (only where a name shares memory)
    # refused at a line of the program
    args = draw_inputs(data, program)
    check_gradients(program, args, via)
    check_forward(program, args, draw_tangents(data, program))


@fuzz_settings("aliasing")
@given(program=buffer_programs(), via=st.sampled_from(("grad", "vjp")), data=st.data())
def test_double_buffers_in_loops_are_followed_or_refused(program, via, data):
    # a new buffer made from the one before in each iteration, written, handed on: the
    # buffer of the iteration before is other memory (not refused); a name kept across
    # iterations, or a second name of this iteration's buffer, may be refused
    args = draw_inputs(data, program)
    check_gradients(program, args, via)
    check_forward(program, args, draw_tangents(data, program))


# -- 4. writes through indexes that repeat a position (NumPy keeps the last write) ---------

@fuzz_settings("repeats")
@given(program=repeated_write_programs(max_statements=MAX_STATEMENTS + 2),
       via=st.sampled_from(("grad", "vjp")), data=st.data())
def test_repeated_writes_gradient(program, via, data):
    check_gradients(program, draw_inputs(data, program), via)


@fuzz_settings("repeats")
@given(program=repeated_write_programs(max_statements=MAX_STATEMENTS + 2), data=st.data())
def test_repeated_writes_forward_mode(program, data):
    check_forward(program, draw_inputs(data, program), draw_tangents(data, program))


# -- 5. minimized reproducers --------------------------------------------------------------

def _found_cases():
    return [pytest.param(fn, args, id=fn.__name__, marks=pytest.mark.xfail(
        strict=True, reason="s2sad bug found by fuzzing (tests/fuzz/found_numpy.py); when "
                            "it passes, the bug is fixed: move the case to a regular test"))
            for fn, args in found_numpy.CASES] + [
        pytest.param(fn, args, id=fn.__name__) for fn, args in found_numpy.FIXED]


@pytest.mark.parametrize("fn, args", _found_cases())
def test_found_numpy_reproducers(fn, args):
    wrt = tuple(range(len(args)))
    before = _copies(args)
    grads = s2sad.grad(fn, wrt=wrt)(*args)
    for p, (a, g) in enumerate(zip(args, grads)):
        assert not isinstance(a, np.ndarray) or np.array_equal(a, before[p])
        if isinstance(a, np.ndarray):
            assert isinstance(g, np.ndarray) and (g.shape, g.dtype) == (a.shape, a.dtype), g
        for idx in (np.ndindex(a.shape) if isinstance(a, np.ndarray) else [()]):
            fd = smooth_derivative(along(fn, args, unit(args, p, idx)))
            assert fd is not None, "a reproducer's point must be smooth"
            got = float(g[idx]) if isinstance(g, np.ndarray) else float(g)
            assert abs(got - fd) <= ATOL + RTOL * abs(fd), (fn.__name__, p, idx, got, fd)
    tangents = [np.ones_like(a) if isinstance(a, np.ndarray) else 1.0 for a in args]
    _, dot = s2sad.jvp(fn, tuple(args), tuple(tangents))
    fd = smooth_derivative(along(fn, args, tangents))
    assert fd is not None and abs(float(dot) - fd) <= ATOL + RTOL * abs(fd), (dot, fd)


def test_kink_closer_than_the_steps_is_not_a_finding():
    # found by the long profile: min(a[0], a[2]) of values about 1e-13 switches sides
    # within the coarse steps (1e-3 to 1e-5), whose differences say 0; s2sad's 5.7e-7 is
    # right, and differences with steps of 1e-9 agree with it
    program = NumpyProgram(
        source="import numpy as np\n\ndef f(x, w):\n    a = np.tanh(x * (x + x))\n"
               "    b = np.min(a[::2])\n    return b\n",
        name="f", params=("x", "w"), shapes=((3,), (3, 1)))
    x = np.array([1.41421356e-07, 1.73205081e-07, 2.23606798e-07])
    w = np.array([[2.64575131e-07], [3.31662479e-07], [3.60555128e-07]])
    coarse = smooth_derivative(along(program.load(), [x, w], unit([x, w], 0, (0,))))
    assert coarse is not None and abs(coarse) < 1e-12       # what the coarse steps see

    @settings(max_examples=1, database=None)
    @given(st.just(None))
    def check(_):
        check_gradients(program, [x, w], "grad")           # passes: the fine steps agree
    check()
