"""Gradients of control-flow corner cases against finite differences."""
import pytest

import s2sad
from oracle import assert_close, fd_grad
from warned import allowing_unconnected

import corpus_control_flow as c

CASES = [
    (c.conflict, [(0.7,), (-1.2,)]),
    (c.newton_sqrt, [(2.0,), (0.3,), (10.0,)]),
    (c.ret_in_loop, [(0.3,), (2.0,)]),
    (c.nested_break, [(1.2,), (0.5,), (0.9,), (1.6,)]),
    (c.for_else, [(1.5,), (5.0,)]),
    (c.cont, [(1.3,), (-0.4,)]),
    (c.kw, [(0.7,)]),
    (c.fib, [(0.9,)]),
    (c.ifexp, [(0.5,), (-0.5,), (2.0,)]),
    (c.defined_in_loop, [(1.1,)]),
    (c.zero_trip, [(1.5,)]),
    (c.multi, [(1.5,)]),
    (c.unused, [(1.0, 2.0)]),
    (c.nested_while, [(0.8,)]),
    (c.self_ref, [(0.4,)]),
    (c.loop_temp_result, [(0.5,)]),
    (c.early, [(-1.0,), (11.0,), (3.0,)]),
    (c.ret_in_nested, [(0.3,), (0.01,)]),
    (c.chain_cmp, [(0.5,), (2.0,)]),
    (c.swap_loop, [(0.9, 1.1)]),
    (c.while_break, [(0.5,)]),
]
# loops whose reversed body recomputes values instead of reading them from the tape
RECOMPUTING = [
    (c.invariant_in_loop, [(0.7, 1.1), (1.3, -0.8)]),
    (c.invariant_rebound_in_branch, [(0.7, 1.1), (0.3, 0.8), (0.9, -1.2)]),
    (c.rebound_before_use, [(0.7, 1.1), (1.3, 0.8), (1.6, -0.9)]),
    (c.invariant_of_inner_loop, [(0.7, 1.1), (1.3, -0.8)]),
    (c.recompute_after_break, [(0.7, 1.1), (1.3, 0.8), (0.9, -1.2)]),
    (c.recompute_after_continue, [(0.7, 1.1), (1.3, 0.8)]),
    (c.invariant_in_while, [(0.7, 1.1), (0.9, -1.2)]),
    (c.invariant_zero_trips, [(0.7, 1.1)]),
    (c.loop_index_operand, [(0.7, 1.1), (1.3, -0.8)]),
]
CASES += RECOMPUTING


@pytest.mark.parametrize("f, point", [(f, p) for f, ps in CASES for p in ps],
                         ids=lambda v: getattr(v, "__name__", None))
def test_matches_finite_differences(f, point):
    wrt = tuple(range(len(point)))
    with allowing_unconnected(f):
        g = s2sad.grad(f, wrt=wrt)(*point)
    assert_close(g, fd_grad(f, point, wrt), rtol=1e-6)


def test_keyword_arguments_pass_through():
    g = s2sad.grad(c.kw)(0.7, scale=3.0, n=2)
    assert_close(g, fd_grad(lambda x: c.kw(x, scale=3.0, n=2), (0.7,), 0))


def test_pullback_can_be_called_again():
    y, pullback = s2sad.vjp(c.nested_break, 1.2)
    first = pullback(1.0)
    assert pullback(2.0) == (2 * first[0],)
    assert pullback(1.0) == first


def test_regeneration_is_byte_identical():
    from s2sad import driver
    a = driver.build(c.nested_break, 0).source
    b = driver.build(c.nested_break, 0).source
    assert a == b


def test_int_input_gives_float_gradient():
    g = s2sad.grad(c.multi)(2)   # (2x + 1) * 2x has derivative 8x + 2
    assert type(g) is float
    assert g == 18.0


@pytest.mark.parametrize("f, point", [(f, p) for f, ps in RECOMPUTING for p in ps],
                         ids=lambda v: getattr(v, "__name__", None))
def test_pullback_of_recomputing_loops(f, point):
    y, pullback = s2sad.vjp(f, *point)
    assert y == f(*point)
    assert_close(pullback(1.0), fd_grad(f, point, (0, 1)), rtol=1e-6)


def _taped(f, wrt):
    """{tape: the names appended to it} in the source of `f`'s gradient."""
    import re
    out = {}
    for tape, values in re.findall(r"(_s2s_tape\w*)\.append\((.*)\)", s2sad.source(f, wrt=wrt)):
        out.setdefault(tape, set()).update(re.findall(r"\w+", values))
    return out


@pytest.mark.parametrize("f, taped", [
    (c.invariant_in_loop, {"_s2s_tape": {"s"}}),           # not k = -c: c is not assigned
    (c.invariant_in_while, {"_s2s_tape": {"s"}}),          # not k = c * c
    (c.loop_index_operand, {"_s2s_tape": {"i", "s"}}),     # not w = i * c
    # b = a * x moves out of the inner loop (hoist_invariants); the outer loop computes
    # it again from a, which it tapes
    (c.invariant_of_inner_loop, {"_s2s_tape": {"s_1"},
                                 "_s2s_tape_1": {"_s2s_tape", "a", "s"}}),
    (c.recompute_after_continue, {"_s2s_tape": {"m", "m_1", "s", "t"}}),  # not k = c * s
])
def test_tape_leaves_out_what_the_reversed_loop_recomputes(f, taped):
    assert _taped(f, (0, 1)) == taped


def test_rebound_values_stay_on_the_tape():
    # `c` changes in the loop (in a branch), so `k = -c` of that iteration is not
    # loop-invariant: it is recomputed from the c on the tape, or taped itself
    assert _taped(c.invariant_rebound_in_branch, (0, 1)) == {"_s2s_tape": {"c", "s", "t_2"}}
    assert {"c_1", "c", "s"} <= _taped(c.rebound_before_use, (0, 1))["_s2s_tape"]
    # a value computed after a `break` may not exist in every iteration: taped
    assert "m" in _taped(c.recompute_after_break, (0, 1))["_s2s_tape"]


COUNTED = [(c.count_until, (0.3,)), (c.count_until, (1.5,)), (c.zip_with_count, (0.7, 1.3)),
           (c.enumerate_count, (1.3,))]


@pytest.mark.parametrize("f, point", COUNTED, ids=lambda v: getattr(v, "__name__", None))
def test_loops_over_itertools_count(f, point):
    # (desugar made a list of the count: the gradient never returned)
    wrt = tuple(range(len(point)))
    want = fd_grad(f, point, wrt)
    assert_close(s2sad.grad(f, wrt=wrt)(*point), want, rtol=1e-6)
    tangent = s2sad.jvp(f, point, tuple(1.0 for _ in point))[1]
    assert tangent == pytest.approx(sum(want), rel=1e-6)
    if len(point) == 1:
        h = 1e-4
        second = (fd_grad(f, (point[0] + h,), 0) - fd_grad(f, (point[0] - h,), 0)) / (2 * h)
        assert s2sad.hessian(f)(*point) == pytest.approx(second, rel=1e-4, abs=1e-6)


def test_reversed_count_is_refused_where_it_is_written():
    import textwrap
    from s2sad.frontend.source import function_from_source
    f = function_from_source(textwrap.dedent('''
        import itertools
        def f(x):
            for i in reversed(itertools.count()):
                x = x * 2.0
            return x
    '''))
    with pytest.raises(s2sad.UnsupportedSyntaxError, match="reversed"):
        s2sad.grad(f)(1.0)
