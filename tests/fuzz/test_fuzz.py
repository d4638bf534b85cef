"""Fuzz s2sad with random differentiable scalar programs (generator: programs.py).

Usage
-----
    python -m pytest tests/fuzz -q -p no:cacheprovider                # "fast": ~2000 programs
    python -m pytest tests/fuzz --hypothesis-profile=long             # ~20000 programs
    python -m pytest tests/fuzz --hypothesis-profile=fast-random      # fast, new seed each run
    python -m pytest -m "not fuzz"                                    # the suite without these
    python -m pytest tests/fuzz --hypothesis-show-statistics          # skip/branch statistics
    S2SAD_FUZZ_SHRINK_SECONDS=0 python -m pytest tests/fuzz           # report failures unshrunk

Fast takes about 65 s on 2 cores when nothing fails (about 1930 programs of up to 8
statements; long: about 19000 programs of up to 14). A failing test stops at its first
failure and shrinks it for up to S2SAD_FUZZ_SHRINK_SECONDS (default 120; hypothesis's
warning then still says "five minutes").

The `fast` profile is derandomized (same programs every run, so CI failures reproduce);
`long` and `fast-random` are random and keep failures in hypothesis's database. The
profiles are registered in tests/fuzz/conftest.py (S2SAD_FUZZ_PROFILE=NAME also selects
one). Each test takes a share of the profile's `max_examples` (SHARES below).

Properties
----------
1. `test_gradient_matches_finite_differences`: the gradient with respect to all
   parameters, through `grad` or `value_and_grad` (fused code), `vjp` and its
   pullback, or forward mode (`jvp` with each unit tangent), agrees with finite
   differences (rtol 1e-5, atol 1e-7) at random points in
   [-2, 2], and the value agrees with `f`'s. Points sit on a 1e-3 grid shifted by an
   irrational offset, so they never lie exactly on a branch boundary `x == 0.5`. A partial
   derivative is only compared where `f` is smooth along that coordinate: two fourth-order
   central differences (steps 2**-10 and 2**-13) and second-order forward and backward
   differences (step 2**-16) must all agree to 3e-8 + 3e-6 |d|; otherwise that partial
   (not the whole program) is skipped. A kink exactly at the point makes the one-sided
   differences disagree; a kink or jump within a step makes the two central differences
   disagree. Every generated program is in the supported subset, so s2sad must compile
   it: any exception from s2sad (even an `S2SADError`) fails the test, and so does an
   exception from the derivative where `f` itself ran.
   `test_or_and_values_match_finite_differences`: the same for programs that use `or`
   and `and` as values (programs.or_and_programs);
   `test_nested_loops_changing_carried_names`: for programs that start with nested loops
   changing the names the outer loop carries (programs.nested_loop_programs).
2. `test_gradient_with_colliding_names`: the same with names s2sad generates (`t`, `t_1`,
   `x_bar`, `y_bar`, `value`, `_s2s_tape`, `f_pullback`, `reversed`, `cos`, ...) used as
   parameters, locals, loop variables, global constants, the function's own name, and
   module globals shadowing builtins.
3. `test_generated_source_is_deterministic`: `s2sad.source(f)` (or `grad(f).source`) equals
   `driver.build(f2, wrt).source` for a second function object made from the same
   text (`s2sad.source` prints the derivatives of lifted lambdas and specialised callees
   after f's: the start is compared, and the whole with `s2sad.source(f2)`), and compiles. `test_generated_source_ignores_hash_seed` compiles batches of
   programs in two interpreters with different PYTHONHASHSEED and compares the sources.
4. `test_no_undocumented_exception`: s2sad either works or raises an `S2SADError` other than
   `InternalError` (which s2sad itself documents as a bug); `vjp` and its pullback never
   raise where `f` ran, and `vjp` returns `f`'s value. With an unsupported statement
   inserted (comprehension, try, lambda, del, ...) s2sad raises `UnsupportedSyntaxError`
   located at that statement's line (or, in an `if` arm, where the point runs it; where
   `f`'s own check raises before, the derivative raises that too).
5. `test_found_reproducers`: the minimized s2sad bugs in found.py (`grad` and `jvp`
   against finite differences), as strict xfails:
   when a bug is fixed its case XPASSes (and fails), so move it to the regular tests.

A failure prints the program's source (the `Program` repr, and `note`), shrunk by
hypothesis to a small program; save it in found.py with a comment, and report it.
"""
import json
import linecache
import math
import os
import subprocess
import sys
import textwrap

import pytest
from hypothesis import event, given, note, settings
from hypothesis import strategies as st

import s2sad
from s2sad import driver
from s2sad.errors import InternalError, S2SADError, UnsupportedSyntaxError
from s2sad.options import Options, Variant

from . import found
from .programs import forget, nested_loop_programs, or_and_programs, programs

pytestmark = [pytest.mark.fuzz,
              # programs that ignore a parameter are fine here
              pytest.mark.filterwarnings("ignore:.*does not depend on")]

# share of the profile's max_examples each test runs (fast: 1000 -> ~2030 programs)
SHARES = {"gradient": 0.85, "names": 0.4, "determinism": 0.1, "exceptions": 0.55,
          "hashseed": 0.002, "rebinding": 0.15, "or_and": 0.15, "nested": 0.1}
HASHSEED_BATCH = 15
# statements per program: compile time grows quickly with size (fast stays in budget)
MAX_STATEMENTS = 14 if settings.get_current_profile_name() == "long" else 8
RTOL, ATOL = 1e-5, 1e-7          # gradient vs finite differences
SMOOTH_RTOL, SMOOTH_ATOL = 3e-6, 3e-8
OFFSETS = (math.sqrt(2) * 1e-7, math.sqrt(3) * 2e-7, math.sqrt(5) * 3e-7)


def fuzz_settings(share):
    n = max(2, int(round(settings.default.max_examples * SHARES[share])))
    return settings(max_examples=n)


def point_strategy(n):
    """Points in [-2, 2]^n on a 1e-3 grid plus small irrational offsets."""
    return st.tuples(*[st.integers(-2000, 2000).map(lambda k, o=OFFSETS[i]: k / 1000 + o)
                       for i in range(n)])


# -- the finite-difference oracle --------------------------------------------------------

def _real(v):
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TypeError(f"f returned {type(v).__name__} {v!r}")
    return float(v)


def smooth_partial(f, point, i):
    """d f / d point[i] by finite differences, or None where f is not smooth enough
    along coordinate i for finite differences to be trusted (or f fails nearby)."""
    x = point[i]

    def at(v):
        p = list(point)
        p[i] = v
        return _real(f(*p))

    try:
        f0 = at(x)

        def central(h):
            return (-at(x + 2 * h) + 8 * at(x + h) - 8 * at(x - h) + at(x - 2 * h)) / (12 * h)

        c1, c2 = central(2.0 ** -10), central(2.0 ** -13)
        h = 2.0 ** -16
        fw = (-3 * f0 + 4 * at(x + h) - at(x + 2 * h)) / (2 * h)
        bw = (3 * f0 - 4 * at(x - h) + at(x - 2 * h)) / (2 * h)
    except (ArithmeticError, ValueError):
        return None
    values = (f0, c1, c2, fw, bw)
    if not all(math.isfinite(v) for v in values):
        return None
    tol = SMOOTH_ATOL + SMOOTH_RTOL * abs(c2)
    if max(abs(c1 - c2), abs(fw - c2), abs(bw - c2)) > tol:
        return None
    return c2


def _fail(program, message):
    pytest.fail(f"{message}\n--- program ---\n{program.source}", pytrace=False)


def _close(a, b, rel=1e-9, abs_=1e-12):
    return a == b or math.isclose(a, b, rel_tol=rel, abs_tol=abs_)


def check_gradients(program, points, via="grad"):
    """Property 1 for one program at some points, through `grad` (the fused f_grad),
    `value_and_grad` (f_value_and_grad) or `vjp` (f_vjp and its pullback). Returns the
    number of partial derivatives compared."""
    note(program.source)
    f = program.load()
    try:
        return compare_gradients(program, f, derivative(f, via), points, via)
    finally:
        forget(f)


def derivative(f, via):
    """`vg(*point) -> (value, gradient)` of `f` with respect to all its parameters,
    through `via` ("grad", "value_and_grad", "vjp" or "jvp"); for the first two, one
    derivative object made here and called at each point."""
    wrt = tuple(range(f.__code__.co_argcount))
    if via == "value_and_grad":
        return s2sad.value_and_grad(f, wrt=wrt)
    if via == "grad":     # f_grad, without the value: the value from f itself
        df = s2sad.grad(f, wrt=wrt)
        return lambda *point: (f(*point), df(*point))
    if via == "vjp":
        def vg(*point):
            y, pullback = s2sad.vjp(f, *point)
            return y, pullback(1.0)
        return vg

    def vg(*point):       # forward mode: one jvp per parameter, with a unit tangent
        dots = []
        for i in range(len(point)):
            y, y_dot = s2sad.jvp(f, point, tuple(float(i == k) for k in wrt))
            dots.append(y_dot)
        return y, tuple(dots)
    return vg


def compare_gradients(program, f, vg, points, via):
    """The value and gradient `vg` gives at each of `points` against `f`'s own value and
    finite differences of `f` as it is now (see `check_gradients`)."""
    wrt = tuple(range(len(program.params)))
    compared = 0
    for point in points:
        try:
            value = _real(f(*point))
        except (ArithmeticError, ValueError):
            event("f raises at the point")
            continue
        if not math.isfinite(value):
            continue
        try:
            got_value, grads = vg(*point)
        except Exception as exc:   # noqa: BLE001 - any failure is a finding
            kind = "rejected a program of the supported subset" if isinstance(
                exc, S2SADError) else "failed"
            _fail(program, f"s2sad.{via} {kind} at {point}: {type(exc).__name__}: {exc}")
        if not isinstance(grads, tuple) or len(grads) != len(wrt):
            _fail(program, f"s2sad.{via} returned gradient {grads!r} for wrt={wrt}")
        if not _close(_real(got_value), value):
            _fail(program, f"s2sad.{via} value {got_value!r} != f{point} = {value!r}")
        for i, g in enumerate(grads):
            fd = smooth_partial(f, point, i)
            if fd is None:
                event("partial skipped (not smooth)")
                continue
            compared += 1
            ok = (isinstance(g, (int, float)) and not isinstance(g, bool)
                  and math.isfinite(g) and abs(g - fd) <= ATOL + RTOL * abs(fd))
            if not ok:
                _fail(program, f"gradient mismatch ({via}) at {point}, parameter "
                               f"{program.params[i]!r}: s2sad gives {g!r}, finite "
                               f"differences give {fd!r}\nall s2sad partials: {grads!r}")
    event(f"partials compared: {min(compared, 4)}{'+' if compared >= 4 else ''}")
    return compared


def _points(data, program, most):
    return data.draw(st.lists(point_strategy(len(program.params)), min_size=1,
                              max_size=most), label="points")


# -- 1. gradients ----------------------------------------------------------------------

@fuzz_settings("gradient")
@given(program=programs(names="plain", max_statements=MAX_STATEMENTS),
       via=st.sampled_from(("grad", "value_and_grad", "vjp", "jvp")), data=st.data())
def test_gradient_matches_finite_differences(program, via, data):
    check_gradients(program, _points(data, program, 3), via)


# -- 1b. derivatives of the function as it is now ----------------------------------------

@fuzz_settings("rebinding")
@given(program=programs(names="plain", max_statements=MAX_STATEMENTS),
       other=programs(names="plain", max_statements=MAX_STATEMENTS, max_helpers=0),
       via=st.sampled_from(("grad", "value_and_grad", "vjp", "jvp")),
       scale=st.sampled_from((-1.5, 0.5, 2.0)), data=st.data())
def test_derivatives_follow_redefinitions(program, other, via, scale, data):
    """A derivative made once, then a helper the function calls redefined (in its
    module, as a notebook cell redefines it), then the function's code replaced by
    another program's (as IPython's autoreload replaces it): at each stage the same
    derivative object (and `vjp`, `jvp`) agrees with finite differences of the
    function as it is then (property 1's comparison)."""
    note(program.source)
    f = program.load()
    vg = derivative(f, via)
    try:
        compare_gradients(program, f, vg, _points(data, program, 2), via)
        helpers = [n for n in f.__globals__ if n[:1] == "h" and n[1:].isdigit()]
        if helpers:
            name = data.draw(st.sampled_from(sorted(helpers)), label="redefined")
            params = ", ".join(f.__globals__[name].__code__.co_varnames[
                :f.__globals__[name].__code__.co_argcount])
            cell = (f"_fuzz_old_{name} = {name}\n"
                    f"def {name}({params}):\n"
                    f"    return {scale} * _fuzz_old_{name}({params}) + 0.25 * a * a\n")
            note(f"--- then ---\n{cell}")
            filename = f"<s2sad-fuzz-cell-{name}-{id(f)}>"
            linecache.cache[filename] = (len(cell), None, cell.splitlines(True), filename)
            exec(compile(cell, filename, "exec"), f.__globals__)
            compare_gradients(program, f, vg, _points(data, program, 2), via)
        if len(other.params) == len(program.params):
            replacement = other.load()
            note(f"--- then f's code is that of ---\n{other.source}")
            f.__code__ = replacement.__code__
            compare_gradients(program, f, vg, _points(data, program, 2), via)
    finally:
        forget(f)


@fuzz_settings("or_and")
@given(program=or_and_programs(names="plain", max_statements=MAX_STATEMENTS),
       via=st.sampled_from(("grad", "value_and_grad", "vjp", "jvp")), data=st.data())
def test_or_and_values_match_finite_differences(program, via, data):
    check_gradients(program, _points(data, program, 3), via)


@fuzz_settings("nested")
@given(program=nested_loop_programs(names="plain", max_statements=MAX_STATEMENTS),
       via=st.sampled_from(("grad", "value_and_grad", "vjp", "jvp")), data=st.data())
def test_nested_loops_changing_carried_names(program, via, data):
    check_gradients(program, _points(data, program, 3), via)


# -- 2. names that collide with generated ones ------------------------------------------

@fuzz_settings("names")
@given(program=programs(names="tricky", max_statements=MAX_STATEMENTS),
       via=st.sampled_from(("grad", "value_and_grad", "vjp", "jvp")), data=st.data())
def test_gradient_with_colliding_names(program, via, data):
    check_gradients(program, _points(data, program, 2), via)


# -- 3. determinism ---------------------------------------------------------------------

@fuzz_settings("determinism")
@given(program=programs(names="mixed", max_statements=MAX_STATEMENTS),
       fused=st.booleans())
def test_generated_source_is_deterministic(program, fused):
    note(program.source)
    f, f2 = program.load(), program.load()
    wrt = tuple(range(len(program.params)))
    try:
        try:
            if fused:
                first = s2sad.grad(f, wrt=wrt).source
            else:
                first = s2sad.source(f, wrt=wrt)
            # (`s2sad.source` also prints the derivatives of lifted lambdas and
            # specialised callees after f's; `driver.build` gives f's alone)
            again = driver.build(f2, wrt, options=Options(
                Variant.GRAD if fused else Variant.VJP, release=True)).source
            if not fused:
                again_api = s2sad.source(f2, wrt=wrt)
                if first != again_api:
                    _fail(program, "s2sad.source differs for two function objects with the "
                                   f"same source:\n{first}\n--- again ---\n{again_api}")
                first = first[:len(again)]
        except S2SADError as exc:
            _fail(program, f"s2sad rejected a program of the supported subset: "
                           f"{type(exc).__name__}: {exc}")
        if first != again:
            _fail(program, "the generated source differs for two function objects with "
                           f"the same source:\n{first}\n--- again ---\n{again}")
        try:
            compile(first, "<s2sad generated>", "exec")
        except SyntaxError as exc:
            _fail(program, f"generated source does not compile ({exc}):\n{first}")
    finally:
        forget(f)
        forget(f2)


_HASHSEED_SCRIPT = textwrap.dedent("""
    import json, sys, warnings
    warnings.simplefilter("ignore")
    sys.path.insert(0, sys.argv[1])
    from fuzz.programs import load_function
    from s2sad import driver
    from s2sad.options import Options, Variant
    out = []
    for source, name, n, fused in json.load(sys.stdin):
        f = load_function(source, name)
        try:
            variant = Variant.GRAD if fused == "grad" else (
                Variant.VALUE_AND_GRAD if fused else Variant.VJP)
            out.append(driver.build(f, tuple(range(n)), options=Options(variant)).source)
        except Exception as exc:
            out.append("error: " + type(exc).__name__)
    json.dump(out, sys.stdout)
""")


@fuzz_settings("hashseed")
@given(batch=st.lists(programs(names="mixed", max_statements=MAX_STATEMENTS),
                      min_size=HASHSEED_BATCH, max_size=HASHSEED_BATCH))
def test_generated_source_ignores_hash_seed(batch):
    payload = json.dumps([(p.source, p.name, len(p.params), k % 2 == 0)
                          for k, p in enumerate(batch)])
    tests_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    runs = [subprocess.Popen([sys.executable, "-c", _HASHSEED_SCRIPT, tests_dir],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True,
                             env=dict(os.environ, PYTHONHASHSEED=seed))
            for seed in ("0", "4242")]
    outputs = []
    for run in runs:
        out, err = run.communicate(payload, timeout=600)
        assert run.returncode == 0, err
        outputs.append(json.loads(out))
    for program, a, b in zip(batch, *outputs):
        if a != b:
            _fail(program, "the generated source depends on PYTHONHASHSEED:\n"
                           f"{a}\n--- with another seed ---\n{b}")


# -- 4. no undocumented exception -------------------------------------------------------

def _runs_line(f, point, line):
    """Whether `f(*point)` runs the line `line` of its file (in `f` or a function it
    calls from that file)."""
    ran, filename = [], f.__code__.co_filename

    def in_frame(frame, event, arg):
        if event == "line" and frame.f_lineno == line:
            ran.append(True)
        return in_frame

    def on_call(frame, event, arg):
        return in_frame if frame.f_code.co_filename == filename else None
    previous = sys.gettrace()
    sys.settrace(on_call)
    try:
        f(*point)
    except Exception:   # noqa: BLE001 - (what it raises is another test's concern)
        pass
    finally:
        sys.settrace(previous)
    return bool(ran)


def _raises(f, point):
    """Whether `f(*point)` raises an ArithmeticError or a ValueError (its own check's)."""
    try:
        f(*point)
    except (ArithmeticError, ValueError):
        return True
    except Exception:   # noqa: BLE001 - (what else it raises is another test's concern)
        pass
    return False


def _documented(exc):
    return isinstance(exc, S2SADError) and not isinstance(exc, InternalError)


@fuzz_settings("exceptions")
@given(program=st.one_of(programs(names="mixed", max_statements=MAX_STATEMENTS),
                         programs(names="mixed", max_statements=MAX_STATEMENTS,
                                  unsupported=True)),
       data=st.data())
def test_no_undocumented_exception(program, data):
    note(program.source)
    point = data.draw(point_strategy(len(program.params)), label="point")
    f = program.load()
    wrt = tuple(range(len(program.params)))
    try:
        if program.unsupported_line is not None:
            try:
                s2sad.grad(f, wrt=wrt)(*point)
            except UnsupportedSyntaxError as exc:
                if (exc.lineno, exc.filename) != (program.unsupported_line,
                                                  f.__code__.co_filename):
                    _fail(program, f"UnsupportedSyntaxError at {exc.filename}:{exc.lineno}, "
                                   f"expected line {program.unsupported_line}: {exc}")
                return
            except Exception as exc:   # noqa: BLE001
                if not (isinstance(exc, (ArithmeticError, ValueError)) and _raises(f, point)):
                    _fail(program, f"an unsupported construct gave {type(exc).__name__}: {exc}")
                return      # (f raised before it reached the construct: so did grad)
            # (a refusal of a statement in an `if` arm waits for the arm to run: accepted
            # only where the point does not run the construct's line)
            if _runs_line(f, point, program.unsupported_line):
                _fail(program, f"an unsupported construct (line {program.unsupported_line}) "
                               "was accepted")
            return
        try:
            value = f(*point)
        except (ArithmeticError, ValueError):
            value = None
        try:
            y, pullback = s2sad.vjp(f, *point)
            pullback(1.0)
        except Exception as exc:   # noqa: BLE001
            if _documented(exc):
                event(f"documented error {type(exc).__name__}")
                return
            if value is None and isinstance(exc, (ArithmeticError, ValueError)):
                return      # f itself fails here; so may its derivative
            _fail(program, f"s2sad.vjp at {point} raised an undocumented "
                           f"{type(exc).__name__}: {exc}")
        if value is not None and not _close(y, value):
            _fail(program, f"vjp primal {y!r} != f{point} = {value!r}")
    finally:
        forget(f)


# -- 5. minimized reproducers of bugs found by fuzzing ------------------------------------

def _found_cases():
    return [pytest.param(fn, point, id=fn.__name__, marks=pytest.mark.xfail(
        strict=True, reason="s2sad bug found by fuzzing (tests/fuzz/found.py); when it "
                            "passes, the bug is fixed: move the case to a regular test"))
            for fn, point in found.CASES]


@pytest.mark.parametrize("fn, point", _found_cases())
def test_found_reproducers(fn, point):
    wrt = tuple(range(len(point)))
    grads = s2sad.grad(fn, wrt=wrt)(*point)
    dots = [s2sad.jvp(fn, point, tuple(float(i == k) for k in wrt))[1] for i in wrt]
    pulled = s2sad.vjp(fn, *point)[1](1.0)      # (its code is not the fused gradient's)
    for i, (g, dot) in enumerate(zip(grads, dots)):
        fd = smooth_partial(fn, point, i)
        assert fd is not None, "a reproducer's point must be smooth"
        assert abs(g - fd) <= ATOL + RTOL * abs(fd), (fn.__name__, "grad", i, g, fd)
        assert abs(pulled[i] - fd) <= ATOL + RTOL * abs(fd), (fn.__name__, "vjp", i)
        assert abs(dot - fd) <= ATOL + RTOL * abs(fd), (fn.__name__, "jvp", i, dot, fd)
