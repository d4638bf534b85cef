"""Gradients of control-flow corner cases against finite differences."""
import pytest

import s2sad
from oracle import assert_close, fd_grad

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


@pytest.mark.parametrize("f, point", [(f, p) for f, ps in CASES for p in ps],
                         ids=lambda v: getattr(v, "__name__", None))
def test_matches_finite_differences(f, point):
    wrt = tuple(range(len(point)))
    assert_close(s2sad.grad(f, wrt=wrt)(*point), fd_grad(f, point, wrt), rtol=1e-6)


def test_keyword_arguments_pass_through():
    g = s2sad.grad(c.kw)(0.7, scale=3.0, n=2)
    assert_close(g, fd_grad(lambda x: c.kw(x, scale=3.0, n=2), (0.7,), 0))


def test_pullback_can_be_called_again():
    y, pullback = s2sad.vjp(c.nested_break, 1.2)
    first = pullback(1.0)
    assert pullback(2.0) == (2 * first[0],)
    assert pullback(1.0) == first


def test_regeneration_is_byte_identical():
    from s2sad import pipeline
    a = pipeline.reverse(c.nested_break, 0).source
    b = pipeline.reverse(c.nested_break, 0).source
    assert a == b


def test_int_input_gives_float_gradient():
    g = s2sad.grad(c.multi)(2)   # (2x + 1) * 2x has derivative 8x + 2
    assert type(g) is float
    assert g == 18.0
