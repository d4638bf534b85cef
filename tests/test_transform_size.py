"""A transform's work grows linearly with the size of the function (issue #19).

Not timed (machines are noisy): what is counted is the work itself. A pass that
scans a block, or the whole function, again for each statement reads four times as
many names for twice as many statements; so the names the passes read
(`syntax.name_nodes`) are counted for generated functions of 100 and 200 statements
with a loop (bench/transform_time.py), whose transform used to read 3.2 to 3.6 times
as many for the larger. The analyses whose cost was not in reading names are tested
directly, and the cycles of references a build leaves for the garbage collector are
counted (thousands of closures once, one per copy of a tree; and the build's syntax
trees, which its context, reverse transform and loop plans kept in a cycle).
"""
import os
import sys

import numpy as np
import pytest

import s2sad
from s2sad import syntax
from s2sad.frontend import source
from s2sad.naming import Namer
from s2sad.after_ad import peephole

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench")
sys.path.insert(0, BENCH)
import transform_time  # noqa: E402  (bench/transform_time.py)


@pytest.fixture(scope="module")
def loops(tmp_path_factory):
    sizes = (100, 200)
    sources = {f"loop_{n}": transform_time.function_source(f"loop_{n}", n, "loop")
               for n in sizes}
    fns = transform_time.load(sources, str(tmp_path_factory.mktemp("transform_size")))
    return [fns[f"loop_{n}"] for n in sizes]


@pytest.mark.parametrize("mode", transform_time.MODES)
def test_names_read_grow_linearly(loops, mode, monkeypatch):
    read = []
    name_nodes = syntax.name_nodes

    def counted(node):
        found = name_nodes(node)
        read[-1] += len(found)
        return found
    monkeypatch.setattr(syntax, "name_nodes", counted)
    for fn in loops:
        read.append(0)
        transform_time.transform(fn, mode)
    assert read[1] / read[0] < 2.5, read


def test_floats_are_found_in_one_visit_of_an_expression(monkeypatch):
    # `certainly_float` once visited each operand twice: 2**16 calls for a product of
    # depth 16 in the fused gradient
    calls = []
    certainly_float = peephole.Peephole.certainly_float

    def counted(self, e, floats):
        calls.append(e)
        return certainly_float(self, e, floats)
    monkeypatch.setattr(peephole.Peephole, "certainly_float", counted)
    text = ("def f(x, a):\n    s = x\n"
            + "".join(f"    s = s * 1.5 + {k}.0 * x\n" for k in range(16))
            + "    return np.sum(a * s)\n")
    f = source.function_from_source(text, {"np": np})
    s2sad.grad(f, wrt=(0, 1))(0.3, np.ones(3))
    assert 0 < len(calls) < 1000


def test_fresh_names_do_not_search_from_the_start():
    class Counted(set):
        tests = 0

        def __contains__(self, name):
            Counted.tests += 1
            return super().__contains__(name)
    namer = Namer()
    namer.taken = Counted(namer.taken)
    names = [namer.fresh("t") for _ in range(1000)]
    assert names[:3] == ["t", "t_1", "t_2"] and len(set(names)) == 1000
    assert Counted.tests < 3000


@pytest.mark.parametrize("mode", transform_time.MODES)
def test_a_build_leaves_no_cycles_per_statement(loops, mode):
    # a closure that calls itself (syntax.copied's once) is a cycle of references, left
    # to the garbage collector at each call: thousands per build, which it then walked
    import gc
    transform_time.transform(loops[0], mode)        # rules and caches made once
    # (and a build of the one measured: what earlier tests left for a build to let go
    # of, derivatives of other functions, goes then, not in the build measured)
    transform_time.transform(loops[1], mode)
    gc.collect()
    collecting = gc.isenabled()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        transform_time.transform(loops[1], mode)
        gc.collect()
        # (s2sad's closures: generated functions of other tests' derivatives, which a
        # bounded cache lets go of during the build, are no cycles the build makes)
        functions = [o for o in gc.garbage if type(o).__name__ == "function"
                     and o.__module__.startswith("s2sad") and "<locals>" in o.__qualname__]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if collecting:
            gc.enable()
    assert len(functions) < 20, sorted({f.__qualname__ for f in functions})


@pytest.fixture(scope="module")
def straight(tmp_path_factory):
    source = transform_time.function_source("straight_200", 200, "straight")
    fns = transform_time.load({"straight_200": source},
                              str(tmp_path_factory.mktemp("transform_size_straight")))
    return fns["straight_200"]


@pytest.mark.parametrize("mode", transform_time.MODES)
@pytest.mark.parametrize("shape", ["straight", "loop"])
def test_a_build_leaves_its_syntax_trees_to_reference_counting(straight, loops, shape,
                                                                 mode):
    # the context of a build and its reverse transform referred to each other (the
    # transform keeps the context, its results the in-place writes and the loops'
    # plans, which keep the transform): tens of thousands of syntax nodes waited for the
    # garbage collector, which walked them all when it was on again after the build
    import gc
    import gast
    fn = straight if shape == "straight" else loops[1]
    transform_time.transform(fn, mode)        # rules and caches made once
    gc.collect()
    collecting = gc.isenabled()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        transform_time.transform(fn, mode)
        gc.collect()
        nodes = sum(isinstance(o, gast.AST) for o in gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if collecting:
            gc.enable()
    assert nodes < 100, nodes


def test_the_fused_gradient_analyses_its_arrays_twice(loops, monkeypatch):
    # the array facts (analysis/buffers.py) of the fused gradient, each loop's body to a
    # fixed point: found by inline_helpers, which reuse_buffers starts from when nothing
    # changed since, and again after reuse_buffers' rewrites (once a third time between)
    from s2sad.analysis import buffers
    analysed = []
    analyse, loop = buffers.ArrayFacts.analyse, buffers.ArrayFacts.loop

    def counted_analyse(self, body, *args, **kwargs):
        analysed.append("function")
        return analyse(self, body, *args, **kwargs)

    def counted_loop(self, s, facts):
        analysed.append("loop")
        return loop(self, s, facts)
    monkeypatch.setattr(buffers.ArrayFacts, "analyse", counted_analyse)
    monkeypatch.setattr(buffers.ArrayFacts, "loop", counted_loop)
    transform_time.transform(loops[1], "grad")
    # (two loops: the forward pass's and the pullback's)
    assert (analysed.count("function"), analysed.count("loop")) == (2, 4), analysed


def test_shape_classes_find_a_binding_by_bisection():
    # peephole's ShapeClasses looked for the last binding of a name before a statement by
    # testing each statement before it, from every read: quadratic in the block (a
    # fused gradient's sums distributed over their reads)
    text = "def f(a, b):\n" + "".join(
        "    u = a * b\n" if k % 3 == 0 else f"    v_{k} = u + a\n" for k in range(300))
    body = syntax.parse(text).body[0].body
    tested = []

    def stores_of(s):
        tested.append(s)
        return set(syntax.names_stored(s))
    stored = {"a": 1, "b": 1, "u": 100}
    classes = peephole.ShapeClasses(body, stored, lambda e: False, lambda e, h: False,
                                    stores_of)
    u = syntax.name("u")
    for at in range(1, len(body)):
        last = max(j for j in range(at) if j % 3 == 0)     # u's binding before `at`
        assert classes.of(u, at) == ("name", "u", last)
    assert classes.of(u, 0) is None       # (bound more than once, not before the block)
    assert len(tested) == len(body)
