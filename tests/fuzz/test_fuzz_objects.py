"""Fuzz the Python of issue #36 (plain classes, function values and partials, `or`/`and`
values, star forms, dicts, the builtins that stand for loops) with random programs
(generator: object_programs.py).

Usage
-----
    python -m pytest tests/fuzz/test_fuzz_objects.py -q -p no:cacheprovider   # "fast"
    python -m pytest tests/fuzz/test_fuzz_objects.py --hypothesis-profile=long

The profiles are those of tests/fuzz/conftest.py; each test takes a share of the
profile's `max_examples` (SHARES below).

Properties
----------
1. `test_gradient_matches_finite_differences`: the gradient with respect to every
   parameter, through `grad`, `value_and_grad` or `vjp` and its pullback, has the
   structure of its argument (a float, or an `Affine` with float `w` and `b` and its
   constant `k` as it was) and agrees with fourth-order central differences of `f`
   (rtol 1e-5, atol 1e-7) along each float of the arguments; the value agrees with
   `f`'s and the arguments are unchanged. A float is compared only where two central
   differences (steps 1e-4 and 1.25e-5) agree to 3e-6: the programs have kinks and jumps
   (ties of `max`, `min`, `sorted` and `abs`, `divmod`'s remainder), never at random points
   but possibly within a step.
2. `test_forward_mode_matches`: `s2sad.jvp(f, primals, tangents)` with random tangents
   (an `Affine` of tangents for the object) returns `f`'s value and the directional
   derivative of central differences, and agrees with `<gradient, tangent>`.

Any exception from s2sad fails the test and prints the (shrunk) program's source.
"""
import math

import pytest
from hypothesis import event, given, note, settings
from hypothesis import strategies as st

import s2sad

from .object_programs import example_arguments, forget, object_programs

pytestmark = [pytest.mark.fuzz, pytest.mark.filterwarnings("ignore:.*does not depend on")]

SHARES = {"gradient": 0.1, "forward": 0.05}
MAX_STATEMENTS = 8 if settings.get_current_profile_name() == "long" else 4
RTOL, ATOL = 1e-5, 1e-7
SMOOTH_RTOL, SMOOTH_ATOL = 3e-6, 3e-8


def fuzz_settings(share):
    return settings(max_examples=max(2, int(round(settings.default.max_examples
                                                  * SHARES[share]))))


# -- the arguments as a vector of floats, without s2sad ---------------------------------
def flat(args):
    """The floats of `args`, in order (an object's `w` then `b`)."""
    out = []
    for a in args:
        out += [a] if isinstance(a, float) else [a.w, a.b]
    return out


def unflat(args, values):
    """`args` with their floats replaced by `values` (new objects, the same class)."""
    values, out = iter(values), []
    for a in args:
        if isinstance(a, float):
            out.append(next(values))
        else:
            new = type(a).__new__(type(a))
            new.__dict__.update(vars(a), w=next(values), b=next(values))
            out.append(new)
    return out


def central(f, args, direction, h):
    def at(s):
        return f(*unflat(args, [v + s * d for v, d in zip(flat(args), direction)]))
    return (8 * (at(h) - at(-h)) - (at(2 * h) - at(-2 * h))) / (12 * h)


def smooth_directional(f, args, direction):
    """d/dh f(args + h direction) at 0, or None where two steps disagree (a kink or
    jump within a step)."""
    d1, d2 = central(f, args, direction, 1e-4), central(f, args, direction, 1.25e-5)
    if abs(d1 - d2) > SMOOTH_ATOL + SMOOTH_RTOL * abs(d1):
        return None
    return d2


def check_structure(g, arg, name):
    if isinstance(arg, float):
        assert isinstance(g, float), f"gradient of {name}: {g!r} is not a float"
    else:
        assert type(g) is type(arg), f"gradient of {name}: {g!r} is not an {type(arg)}"
        assert isinstance(g.w, float) and isinstance(g.b, float), vars(g)
        assert g.k == arg.k, f"gradient of {name}: its constant k is {g.k!r}"


# -- the properties ---------------------------------------------------------------------
@fuzz_settings("gradient")
@given(program=object_programs(max_statements=MAX_STATEMENTS),
       mode=st.sampled_from(["grad", "value_and_grad", "vjp"]),
       seed=st.integers(0, 7))
def test_gradient_matches_finite_differences(program, mode, seed):
    note(repr(program))
    f = program.load()
    try:
        args = example_arguments(program, f, seed)
        before = flat(args)
        expected = f(*args)
        wrt = tuple(range(len(args)))
        if mode == "grad":
            grads = s2sad.grad(f, wrt=wrt)(*args)
        elif mode == "value_and_grad":
            value, grads = s2sad.value_and_grad(f, wrt=wrt)(*args)
            assert value == pytest.approx(expected, rel=1e-12, abs=1e-12)
        else:
            value, pullback = s2sad.vjp(f, *args)
            assert value == pytest.approx(expected, rel=1e-12, abs=1e-12)
            grads = pullback(1.0)
        assert flat(args) == before, "an argument was changed"
        assert isinstance(grads, tuple) and len(grads) == len(args)
        for g, a, name in zip(grads, args, program.params):
            check_structure(g, a, name)
        for i, got in enumerate(flat(grads)):
            unit = [1.0 if j == i else 0.0 for j in range(len(before))]
            fd = smooth_directional(f, args, unit)
            if fd is None:
                event("a float skipped (not smooth)")
                continue
            assert got == pytest.approx(fd, rel=RTOL, abs=ATOL), f"float {i}"
    finally:
        forget(f)


@fuzz_settings("forward")
@given(program=object_programs(max_statements=MAX_STATEMENTS), seed=st.integers(0, 7),
       data=st.data())
def test_forward_mode_matches(program, seed, data):
    note(repr(program))
    f = program.load()
    try:
        args = example_arguments(program, f, seed)
        n = len(flat(args))
        direction = [k / 8 for k in data.draw(st.lists(st.integers(-8, 8), min_size=n,
                                                       max_size=n), label="tangent")]
        tangent = tuple(unflat(args, direction))
        value, t = s2sad.jvp(f, tuple(args), tangent)
        assert value == pytest.approx(f(*args), rel=1e-12, abs=1e-12)
        fd = smooth_directional(f, args, direction)
        if fd is None:
            event("a program skipped (not smooth)")
        else:
            assert t == pytest.approx(fd, rel=RTOL, abs=ATOL)
        grads = s2sad.grad(f, wrt=tuple(range(len(args))))(*args)
        dot = math.fsum(g * d for g, d in zip(flat(grads), direction))
        assert t == pytest.approx(dot, rel=1e-9, abs=1e-11)
    finally:
        forget(f)
