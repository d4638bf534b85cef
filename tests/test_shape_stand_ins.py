"""Shape stand-ins name the value whose shape they take (#35).

A runtime helper that reads an argument only for its shape (its `shape_only`:
`_s2s_unbroadcast(g, x)`, `_s2s_count(x)`, `_s2s_unreduce(g, x)`, ...) computing the
adjoint `x_bar` reads `x`, the value whose shape it takes, and no unrelated value of the
same shape. Two exceptions keep memory and time: where the pullback reads nothing else of
`x`, a parameter of that shape (alive anyway, its pattern tested by the guard) may stand
in; and a fused `f_grad` that does not compute `x` at all (only the function's value
needs it) reads a value of that shape it has. `stand_in_problems` checks this with
Python's parser on generated code; the gradients are checked against central
differences elsewhere (tests/test_golden.py, the corpora), and here for the examples
whose stand-ins changed.
"""
import ast
import glob
import os
import re
import warnings

import numpy as np
import pytest

import s2sad
from s2sad import api, compilation, driver, pipeline
from s2sad.options import Options, Variant
from s2sad.rules import registry

from corpus_scalar import CORPUS
from example_functions import EXAMPLES
from golden import functions as golden_functions, functions_numpy as golden_numpy
from numpy_cases import fd_array_grad

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: The helpers' arguments read only for their shape, as declared with each helper
#: (registry.HelperFacts; tests/test_helper_facts.py checks the declarations).
SHAPE_ONLY = {name[len("_s2s_"):]: facts.shape_only
              for name, facts in registry.HELPER_FACTS.items() if facts.shape_only}


def _primal(adjoint):
    found = re.fullmatch(r"(?:minus_)?(.+)_bar(?:_\d+)?", adjoint)
    return found.group(1) if found else None


def _unpacked(fn):
    """{name a reversed loop unpacks from its tape: the name the forward loop recorded}."""
    out = {}
    for loop in ast.walk(fn):
        if not (isinstance(loop, ast.For) and isinstance(loop.iter, ast.Call)
                and getattr(loop.iter.func, "id", None) == "reversed"
                and isinstance(loop.iter.args[0], ast.Name)):
            continue
        tape = loop.iter.args[0].id
        pushed = [c.args[0] for c in ast.walk(fn) if isinstance(c, ast.Call)
                  and isinstance(c.func, ast.Attribute) and c.func.attr == "append"
                  and getattr(c.func.value, "id", None) == tape]
        if not pushed:
            continue
        items = pushed[0].elts if isinstance(pushed[0], ast.Tuple) else [pushed[0]]
        targets = loop.target.elts if isinstance(loop.target, ast.Tuple) else [loop.target]
        for v, t in zip(items, targets):
            v = v.args[0] if isinstance(v, ast.Call) else v     # (`_s2s_like(x)`)
            if isinstance(t, ast.Name) and isinstance(v, ast.Name):
                out[t.id] = v.id
    return out


def stand_in_problems(text):
    """The statements of `text` computing an adjoint `x_bar` whose shape-only helper
    arguments are not `x`, a parameter, or (where the code does not compute `x`) some
    value it computes."""
    out = []
    for fn in ast.parse(text).body:
        if not isinstance(fn, ast.FunctionDef):
            continue
        params = {a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs}
        computed = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)
                    and isinstance(n.ctx, ast.Store)}
        unpacked = _unpacked(fn)
        for s in ast.walk(fn):
            if not (isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name)):
                continue
            primal = _primal(s.targets[0].id)
            if primal is None:
                continue
            for call in ast.walk(s.value):
                helper = getattr(call, "func", None)
                if not (isinstance(call, ast.Call) and isinstance(helper, ast.Name)
                        and helper.id.startswith("_s2s_")):
                    continue
                for i in SHAPE_ONLY.get(helper.id[len("_s2s_"):], ()):
                    arg = call.args[i] if i < len(call.args) else None
                    if not isinstance(arg, ast.Name) or arg.id in params:
                        continue
                    if primal in computed and (unpacked.get(arg.id, arg.id)
                                               != unpacked.get(primal, primal)):
                        out.append(f"{fn.name}: {ast.unparse(s)}")
    return out


def test_the_checker_finds_an_unrelated_stand_in():
    # the line: the adjoint of t_10 summed down to the shape of t_2
    text = ("def f_vjp(x, w):\n    t_2 = np.exp(x)\n    t_10 = np.log(t_2 * w)\n"
            "    def f_pullback(g):\n        t_10_bar = _s2s_unbroadcast(g * w, t_2)\n"
            "        return t_10_bar\n    return (t_10, f_pullback)\n")
    assert stand_in_problems(text) == ["f_vjp: t_10_bar = _s2s_unbroadcast(g * w, t_2)"]
    assert stand_in_problems(text.replace("w, t_2)", "w, t_10)")) == []
    assert stand_in_problems(text.replace("w, t_2)", "w, x)")) == []   # a parameter


# -- the forms of the code of many functions -------------------------------------------------
GOLDEN = sorted(p for p in glob.glob(os.path.join(ROOT, "tests", "golden", "*.txt"))
                if not os.path.basename(p).startswith("forward."))


@pytest.mark.parametrize("path", GOLDEN, ids=os.path.basename)
def test_golden_stand_ins(path):
    with open(path) as f:
        assert stand_in_problems(f.read()) == []


@pytest.mark.parametrize("name, f", EXAMPLES, ids=[n for n, _ in EXAMPLES])
def test_stand_ins_of_the_examples(name, f):
    # the vjp and the fused gradient, for the arguments s2sad.source assumes
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for stage in ("enclose", None):
            try:
                text = pipeline.stage_source(f, stage)
            except s2sad.S2SADError:
                continue
            assert stand_in_problems(text) == [], text


@pytest.mark.parametrize("case", CORPUS, ids=[c.name for c in CORPUS])
def test_stand_ins_of_the_scalar_corpus(case):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", s2sad.UnconnectedInputWarning)
        assert stand_in_problems(s2sad.source(case.f, wrt=case.wrt)) == []


RNG = np.random.default_rng(5)
ARRAYS = [
    (golden_numpy.logistic_loss, (RNG.normal(size=3), RNG.normal(size=(8, 3)),
                                  (RNG.random(8) > 0.5) * 1.0)),
    (golden_numpy.mlp_loss, (RNG.normal(size=(4, 5)), RNG.normal(size=5),
                             RNG.normal(size=(5, 3)), RNG.normal(size=3),
                             RNG.normal(size=(6, 4)), np.eye(3)[RNG.integers(0, 3, 6)])),
    (golden_numpy.relax, (RNG.normal(size=5), RNG.uniform(2.0, 3.0, 5))),
    (golden_functions.nested_closure, (2.0, 5.0)),
]


@pytest.mark.parametrize("f, point", ARRAYS, ids=[f.__name__ for f, _ in ARRAYS])
def test_stand_ins_for_arrays(f, point):
    arg_types = compilation.arg_types_of(f, point)
    wrt = tuple(range(len(point)))[:-1] or 0
    texts = [api._with_lifted(driver.build(f, wrt, arg_types, Options(Variant.VJP)), "reverse")]
    for make in (s2sad.grad, s2sad.value_and_grad):
        derivative = make(f, wrt=wrt)
        derivative(*point)
        texts.append(derivative.source)
    for text in texts:
        assert stand_in_problems(text) == [], text


# -- the cases, and what the exceptions keep ------------------------------------------
LOSS = dict(EXAMPLES)["logistic_regression.loss"]


def test_the_vjp_sums_down_to_the_shape_of_the_value_it_differentiates():
    text = s2sad.source(LOSS)
    assert "t_10_bar = _s2s_unbroadcast(t_11_bar * t_7, t_10)" in text
    assert "t_5_bar = _s2s_unbroadcast(t_6_bar * y, t_5)" in text
    assert "log_likelihood_bar = -t_13_bar / _s2s_count(log_likelihood)" in text


def test_the_fused_gradient_counts_the_elements_of_the_value_it_averages():
    text = pipeline.stage_source(LOSS, None)
    assert "log_likelihood_bar = -t_13_bar / _s2s_count(log_likelihood)" in text
    assert "_s2s_unbroadcast_product(t_11_bar, t_7, t_10)" in text


def test_the_examples_gradient_still_matches_finite_differences():
    rng = np.random.default_rng(0)
    X, w, y = rng.normal(size=(6, 3)), rng.normal(size=3), (rng.random(6) > 0.5) * 1.0
    b, lam = np.array(0.3), np.array(0.1)       # (arrays: the kinds source assumes)
    got = s2sad.grad(LOSS, wrt=(0, 1))(w, b, X, y, lam)
    for i, g in enumerate(got):
        np.testing.assert_allclose(g, fd_array_grad(LOSS, (w, b, X, y, lam), i),
                                   rtol=1e-6, atol=1e-9)


def test_a_parameter_stands_in_for_a_value_grad_does_not_compute():
    # `np.mean(t_2)`'s count: `t_2` is only the value's, and `y` has its shape
    x = (np.ones(3), np.ones((8, 3)), np.ones(8))
    g = s2sad.grad(golden_numpy.logistic_loss)
    g(*x)
    assert "_s2s_count(y)" in g.source and "= np.logaddexp(" not in g.source


def mean_of_sine(x):
    return np.mean(np.sin(x) + 1.0)


def test_the_vjp_reads_a_parameter_of_the_shape_rather_than_keep_a_value():
    # `t_1 = t + 1.0` has the shape of `x`, which the pullback reads anyway (for cos)
    text = s2sad.source(mean_of_sine)
    assert "t_1_bar = y_bar / _s2s_count(x)" in text
    assert "the pullback reads: x\n" in text
    x = np.linspace(0.1, 0.9, 5)
    np.testing.assert_allclose(s2sad.vjp(mean_of_sine, x)[1](1.0)[0],
                               fd_array_grad(mean_of_sine, (x,), 0), rtol=1e-7)
