"""Elements read back instead of taped (ad/inplace.py, `final_element_reads`): a loop over
`range` that reads `u[i]` of an array it writes only further on (`u[i + 1] = ...`), or of
an array nothing writes (a view of one too), reads the element back from the array's
final value in the reversed loop, as a hand-written adjoint does; a loop that needs nothing else of an
iteration then runs backwards over `reversed(range(...))`, without a tape.

Each case is checked against central differences in `grad` (fused) and `vjp` (a
closure); the forms where an element changes after it is read (written again at the
same index or behind the read, or after the loop; an array the loop binds anew each
iteration; a write through a view is refused by the aliasing pass) must keep taping, and
give the right gradient too."""
import sys
from pathlib import Path

import numpy as np
import pytest

import s2sad
from numpy_cases import fd_array_grad

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
import workloads as wl  # noqa: E402

H = 0.01
euler = wl.trajectory       # examples/trajectory.py's loss: u[i + 1] from u[i]


def euler_two_back(k, x):
    n = len(x)
    u = np.zeros(n)
    u[0] = 1.0
    u[1] = 0.5
    for i in range(n - 2):
        u[i + 2] = u[i + 1] - k * u[i] * x[i] + 0.1 * np.sin(u[i + 1])
    return np.sum(u * x)


def read_only(w, x):
    s = 0.0
    for i in range(len(x)):
        s = s + w * x[i] ** 2
    return s


def rewritten_in_place(k, x):          # u[i] read, then written at the same index
    u = x.copy()
    for i in range(len(x)):
        u[i] = k * u[i] ** 2
    return np.sum(u)


def read_ahead(k, x):                  # u[i + 1] read, u[i] written: an older value
    u = x.copy()
    for i in range(len(x) - 1):
        u[i] = k * u[i + 1] * u[i]
    return np.sum(u * u)


def written_after(k, observed):        # u[0] written again after the loop
    n = len(observed)
    u = np.zeros(n)
    u[0] = 1.0
    for i in range(n - 1):
        u[i + 1] = u[i] - H * k * u[i] ** 2
    t = np.sum((u - observed) ** 2)
    u[0] = 3.0 * k
    return t + u[0] * u[1]


def through_view(k, x):                # elements of a view of an array nothing writes
    v = x[1:]
    s = 0.0
    for i in range(len(x) - 1):
        s = s + np.sin(k * v[i]) * x[i]
    return s


def with_break(k, x):
    u = np.zeros(len(x))
    u[0] = 0.5
    for i in range(len(x) - 1):
        u[i + 1] = u[i] + k * u[i] * (1.0 - u[i])
        if u[i + 1] > 0.9:
            break
    return np.sum(u * x)


def twice_per_step(k, x):              # two writes ahead of the reads
    n = len(x)
    u = np.zeros(n + 2)
    u[0] = 1.0
    for i in range(n):
        u[i + 1] = u[i] * k
        u[i + 2] = u[i] * x[i]
    return np.sum(u * u)


def rebound_each_step(k, x):           # x is a new array each iteration, read after
    s = 0.0
    for i in range(len(x)):
        x = x * k
        s = s + x[i] ** 2
    return s


def rebound_after_read(k, x):          # y is a new array each iteration, read before
    s = 0.0
    y = x.copy()
    for i in range(len(x)):
        s = s + y[i] * k
        y = y + s
    return s * s


CASES = {
    "euler": (euler, (1.5, 1.0 / (1.0 + 0.7 * H * np.arange(9.0)))),
    "euler_two_back": (euler_two_back, (0.3, np.linspace(0.5, 1.5, 8))),
    "read_only": (read_only, (0.7, np.linspace(-1.0, 2.0, 6))),
    "rewritten_in_place": (rewritten_in_place, (0.9, np.linspace(0.2, 1.2, 5))),
    "read_ahead": (read_ahead, (0.8, np.linspace(0.4, 1.4, 6))),
    "written_after": (written_after, (1.2, np.linspace(1.0, 0.6, 7))),
    "through_view": (through_view, (0.6, np.linspace(-0.5, 0.5, 5))),
    "with_break": (with_break, (2.5, np.linspace(0.1, 1.0, 9))),
    "twice_per_step": (twice_per_step, (0.7, np.linspace(0.3, 0.9, 6))),
    "rebound_each_step": (rebound_each_step, (0.9, np.linspace(0.5, 1.5, 5))),
    "rebound_after_read": (rebound_after_read, (0.9, np.linspace(0.5, 1.5, 5))),
}
#: the cases whose loops read elements back and keep no tape
UNTAPED = {"euler", "euler_two_back", "read_only", "through_view"}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("how", ["grad", "vjp"])
def test_gradient_against_differences(name, how):
    f, args = CASES[name]
    before = [np.copy(a) for a in args]
    if how == "grad":
        got = s2sad.grad(f)(*args)
    else:
        _, pullback = s2sad.vjp(f, *args)
        got = pullback(1.0)[0]
    expected = fd_array_grad(f, args, 0)
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-9)
    for a, b in zip(args, before):
        np.testing.assert_array_equal(a, b)       # the arguments are left alone


@pytest.mark.parametrize("name", sorted(CASES))
def test_tape_only_where_an_element_may_change(name):
    f, args = CASES[name]
    g = s2sad.grad(f)
    g(*args)
    source = g.source
    if name in UNTAPED:
        assert "_s2s_tape" not in source and "reversed(range(" in source, source
    else:
        assert "_s2s_tape" in source, source


def test_euler_writes_in_place_and_reads_back():
    g = s2sad.grad(euler)
    g(*CASES["euler"][1])
    source = g.source
    assert ".copy()" not in source, source          # the writes stay in place
    pullback = source[source.index("for i in reversed(range("):]
    assert "= u[i]" in pullback, source             # the element, read back


def test_a_numpy_float_argument_is_a_number_too():
    # gradient descent turns k into np.float64 (the gradient's type): the code for it is
    # specialised on np.float64 as on float, and reads the states back as well
    f, (k, observed) = CASES["euler"]
    g = s2sad.grad(f)
    got = g(np.float64(k), observed)
    assert "k.__class__ is not float64" in g.source.splitlines()[1], g.source
    assert "_s2s_tape" not in g.source, g.source
    np.testing.assert_allclose(got, fd_array_grad(f, (k, observed), 0), rtol=1e-6)


# -- random element loops -----------------------------------------------------------------
# Loops that read `u[i + r]` and write `u[i + w]` at random offsets, some rebinding an
# array each iteration, some writing `u` after the loop: whatever s2sad reads back or
# tapes, the gradient must match central differences.
from hypothesis import given, settings, strategies as st  # noqa: E402

from s2sad.frontend.source import function_from_source  # noqa: E402


@st.composite
def element_loops(draw):
    start = draw(st.integers(0, 2))
    reads = draw(st.lists(st.integers(-start, 3), min_size=1, max_size=2))
    writes = draw(st.lists(st.integers(0, 3), min_size=1, max_size=2))
    rebind = draw(st.booleans())
    after = draw(st.booleans())
    lines = ["def f(k, x):",
             "    n = len(x)",
             "    u = np.zeros(n + 3)",
             "    u[0] = 0.5",
             "    u[1] = 0.25",
             "    y = x.copy()",
             f"    for i in range({start}, n):"]
    if rebind:
        lines.append("        y = y * k")
    for j, w in enumerate(writes):
        r = reads[j % len(reads)]
        lines.append(f"        u[i + {w}] = u[i + {r}] * k - 0.1 * np.sin(u[i + {reads[0]}])"
                     f" + 0.05 * y[i] * u[i + {r}]")
    if after:
        lines.append("    u[0] = u[0] + k * u[1]")
    lines.append("    return np.sum(u * u) + np.sum(y * u[:n])")
    return "\n".join(lines) + "\n"


@settings(max_examples=60, deadline=None)
@given(element_loops(), st.sampled_from(["grad", "vjp"]))
def test_random_element_loops_against_differences(text, how):
    f = function_from_source(text, {"np": np})
    args = (0.8, np.linspace(0.3, 1.1, 5))
    for wrt in (0, 1):
        if how == "grad":
            got = s2sad.grad(f, wrt=wrt)(*args)
        else:
            _, pullback = s2sad.vjp(f, *args)
            got = pullback(1.0)[wrt]
        expected = fd_array_grad(f, args, wrt)
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-9, err_msg=text)
