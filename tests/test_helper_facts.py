"""What s2sad knows about a runtime helper is declared with it (registry.HelperFacts:
`@helper(shape_only=..., result=..., writes=..., numba=...)` above its `def`), and the
declarations are true of what the helper does, on sample calls:

- an argument declared `shape_only` can be any value of its shape: the result is the same;
- a helper declared `result="fresh"` returns memory none of its arguments has, and one
  declared `result="of_adjoint"` memory none but its first (the adjoint `g`) has;
- a helper changes none of its arguments but those its `writes` names, and those it does;
- a helper declared `numba=True` has its Numba version, `numba_NAME` in
  rules/numba_overloads.py, and every version there is of a helper so declared.

A helper's rules are declared beside it too, in its own module (its forward rule with
`@helper(linear=...)` or `@helper(tangent=...)`), and every helper that reverse-mode
code calls has a forward rule, or is declared non-differentiable, so that forward mode
applies to that code (`hessian`, forward over reverse).
"""
import collections
import copy
import dataclasses
import pathlib
import re

import numpy as np
import pytest

import s2sad  # noqa: F401 - every module of helpers loaded
from s2sad.errors import S2SADError
from s2sad.rules import registry, runtime

rng = np.random.default_rng(7)
Pair = collections.namedtuple("Pair", "a b")


@dataclasses.dataclass
class Point:
    x: np.ndarray
    y: float


def r(*shape):
    return rng.normal(size=shape)


def spd(n):
    a = r(n, n)
    return a @ a.T + n * np.eye(n)


def _sample_calls():
    """{helper name: [arguments of a call]}, for every helper declared with a result
    or shape-only arguments, and those that write."""
    a23, b34, x3, x5 = r(2, 3), r(3, 4), r(3), r(5)
    m = spd(3)
    chol, inverse = np.linalg.cholesky(m), np.linalg.inv(m)
    positive = np.abs(r(4)) + 0.5
    peak = np.array([0.1, 3.0, -1.0, 2.0, 0.5])
    rhs = r(3)
    return {
        "zeros_like": [(a23,), ([x3, 2.0],)],
        "from_array": [(r(2, 3), a23)],
        "to_array": [(r(2, 3), r(2, 3), [x3, r(3)]), ([0.5, -0.2], 1.5, [x3, r(3)])],
        "cumprod": [(r(4), positive, np.cumprod(positive))],
        "unpad": [(r(5), x3, 1)],
        "unbroadcast": [(r(2, 3), x3), (r(2, 3), a23), (r(3), 1.5)],
        "unbroadcast_product": [(r(2, 3), r(2, 3), x3)],
        "unreduce_view": [(r(3), a23, 0)],
        "unreduce": [(r(3), a23, 0), (np.float64(2.0), a23)],
        "matmul_lhs": [(r(2, 4), a23, b34)],
        "matmul_rhs": [(r(2, 4), a23, b34)],
        "dot_lhs": [(r(2, 4), a23, b34)],
        "dot_rhs": [(r(2, 4), a23, b34)],
        "inner": [(r(2, 4), a23, r(4, 3), 0), (r(2, 4), a23, r(4, 3), 1)],
        "einsum": [(r(2, 4), "ij,jk->ik", 0, a23, b34), (r(2, 4), "ij,jk->ik", 1, a23, b34)],
        "tensordot": [(r(2, 4), a23, b34, 1, 0), (r(2, 4), a23, b34, 1, 1)],
        "outer": [(r(2, 3), r(2), x3, 0), (r(2, 3), r(2), x3, 1)],
        "cotangents": [((r(2, 3), r(3)), None, (a23, x3))],
        "unattr": [(r(3), Pair(x3, 2.0), "a"), (r(3), Point(x3, 2.0), "x")],
        "cotangent": [(r(2, 3), a23), (None, a23)],
        "unindex": [(r(2), x5, slice(1, 3)), (r(2), x5, np.array([0, 0]))],
        "prod_others": [(positive,)],
        "count": [(a23, 1), (a23,)],
        "extremum": [(np.float64(1.5), peak, peak.max())],
        "variance": [(np.float64(1.5), x5)],
        "cumsum": [(r(4), r(4))],
        "linspace_end_adjoint": [(r(2), r(5, 2), True, 1), (r(2), r(2, 5), True, 1, 1),
                                 (np.float64(0.5), r(4), False, 0)],
        "trace": [(np.float64(2.0), r(3, 3))],
        "diag": [(r(3, 3), x3), (r(3), r(3, 3))],
        "norm": [(np.float64(1.0), x3, np.linalg.norm(x3))],
        "solve": [(r(3), m, rhs, np.linalg.solve(m, rhs), w) for w in (0, 1)],
        "cholesky": [(np.tril(r(3, 3)), chol)],
        "inv": [(r(3, 3), inverse)],
        "reshape_like": [(r(6), a23)],
        "swapaxes": [(r(2, 3), 0, 1)],
        "moveaxis": [(r(2, 3), 0, 1)],
        "flip": [(r(2, 3), 0)],
        "roll": [(r(2, 3), 1)],
        "triu": [(r(3, 3),)],
        "tril": [(r(3, 3),)],
        "split_like": [(r(5), [r(2), x3])],
        "unstack": [(r(2, 3), [x3, r(3)])],
        "hstack": [(r(5), [r(2), x3])],
        "unhstack": [([r(2), x3], r(5), [r(2), x3]), ([r(2), x3], 0.0, [r(2), x3])],
        "vstack": [(r(2, 3), [x3, r(3)])],
        "untranspose": [(r(3, 2),), (r(2, 3, 4), (1, 2, 0))],
        "retranspose": [(r(3, 2),), (r(2, 3, 4), (1, 2, 0))],
        "untile": [(r(6), x3, 2)],
        "unrepeat": [(r(6), x3, 2)],
        "unsort": [(r(4), r(4))],
        "unsum": [(r(3), [x3, r(3)])],
        "cast_like": [(r(3), x3.astype(np.float32))],
        "zero_at": [(r(5), slice(1, 3)), ([1.0, 2.0, 3.0], 1)],
        "take": [(r(5), slice(1, 3)), (r(5), np.array([1, 1, 3]))],
        "head": [([1.0, 2.0, 3.0],)],
        "last": [([1.0, 2.0, 3.0],)],
        "keep_default": [(np.zeros(3), np.ones(3)), ([1.0], [2.0, 3.0])],
        "add_at": [(np.zeros(3), np.array([0, 0, 2]), np.ones(3))],
        "put": [(np.zeros((2, 3)), 4, 7.0), (np.zeros(3), 1, 2.0)],
        "add_scaled": [(np.zeros((2, 3)), 2.0, r(2, 3)), (np.zeros(3), -1.5, 0.5)],
        "at_slots": [(r(3), [0, 2, 0, 0], r(4), 1.0), (r(2, 3), (np.array([0, 1, 0]), 2), r(3),
                                                        0.0), (r(2, 3), 1, 0.5, 1.0)],
        "at_unslot": [(r(3, 3), r(3), [0, 2, 0, 0], r(4)), (r(2, 3, 2), r(2, 3),
                                                           (np.array([0, 1, 0]), 2), r(3))],
        "unsplit": [([r(2), x3], [r(2), x3], 0, [2], r(5)),
                    ([r(4), r(0), r(4)], [r(4), r(0), r(4)], 0, [4, 2], r(6))],
        "undelete": [(r(4), r(2, 3), [1, 4]), (r(2, 2), r(2, 3), 0, 1)],
        "uninsert": [(r(8), r(2, 3), [1, 1], r(2)), (r(3, 3), r(2, 3), 1, r(3), 0)],
        "uninsert_values": [(r(8), r(2, 3), [1, 1], r(2)), (r(3, 3), r(2, 3), 1, r(3), 0),
                            (r(2, 4), r(2, 3), 2, 1.5, 1)],
        "unrollaxis": [(r(3, 4, 2), 2, 0), (r(2, 4, 3), 0, -1), (np.float64(0.0), 1)],
        "rollaxis": [(r(3, 4, 2), 2, 0), (r(2, 4, 3), 0, -1), (np.float64(0.0), 1)],
        "simpson_weights": [(r(5), None, 0.5), (r(2, 4), r(4), 1.0, -1), (r(3, 2), r(3, 2), 1.0, 0)],
        "rediff": [(r(2), r(3)), (r(2, 2), r(2, 3), 1, 1), (1.5, 0.0)],
        "fourier_adjoint": [(r(4, 3), r(4, 6), "rfft", 4, -1, None),
                            (r(3, 5) + 1j * r(3, 5), r(3, 4) + 0j, "irfft", 5, 1, "ortho"),
                            (r(4, 2, 3), r(3, 2, 4), "fftn", [4, 3], [0, 2], None)],
        "fourier_transpose": [(r(4, 6), r(4, 6), "rfft", 4, -1, None),
                              (r(3, 4) + 1j * r(3, 4), r(3, 4) + 0j, "irfft", 5, 1, "ortho"),
                              (r(3, 2, 4), r(3, 2, 4), "irfftn", [4, 5], [0, 2], None)],
    }


SAMPLES = _sample_calls()
FACTS = {name[len("_s2s_"):]: facts for name, facts in registry.HELPER_FACTS.items()}


def helper(name):
    return registry.HELPERS["_s2s_" + name]


def arrays_in(v):
    """The arrays in `v` (nested in lists, tuples and records)."""
    if isinstance(v, np.ndarray):
        return [v]
    if isinstance(v, (list, tuple)):
        return [a for item in v for a in arrays_in(item)]
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return [a for f in dataclasses.fields(v) for a in arrays_in(getattr(v, f.name))]
    return []


def shares(result, args):
    return any(np.shares_memory(a, b) for a in arrays_in(result) for b in arrays_in(args))


def same(a, b):
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.shape == b.shape
                and a.dtype == b.dtype and np.array_equal(a, b))
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(same, a, b))
    if dataclasses.is_dataclass(a):
        return type(a) is type(b) and all(same(getattr(a, f.name), getattr(b, f.name))
                                          for f in dataclasses.fields(a))
    return type(a) is type(b) and a == b


def other_of_its_shape(v):
    """A value of the structure, shape and dtype of `v`, with other numbers."""
    if isinstance(v, np.ndarray):
        return (rng.normal(size=v.shape) * 3 + 1).astype(v.dtype)
    if isinstance(v, float):
        return v * 3 + 1
    if isinstance(v, tuple) and hasattr(v, "_fields"):
        return type(v)(*map(other_of_its_shape, v))
    if isinstance(v, (list, tuple)):
        return type(v)(map(other_of_its_shape, v))
    if dataclasses.is_dataclass(v):
        return dataclasses.replace(v, **{f.name: other_of_its_shape(getattr(v, f.name))
                                         for f in dataclasses.fields(v)})
    return v


def calls(fact):
    return [(name, args) for name, facts in FACTS.items() if fact(facts)
            for args in SAMPLES.get(name, ())]


def test_every_helper_declared_with_a_fact_has_a_sample_call():
    declared = {n for n, f in FACTS.items() if f.shape_only or f.result or f.writes}
    assert declared == set(SAMPLES)


def test_the_results_are_the_declared_kinds():
    assert {f.result for f in FACTS.values()} == {None, "fresh", "of_adjoint"}
    with pytest.raises(S2SADError, match="result='new'"):
        registry.helper(lambda g: g, result="new")


@pytest.mark.parametrize("name, args", calls(lambda f: f.shape_only))
def test_an_argument_read_only_for_its_shape_can_be_any_of_its_shape(name, args):
    expected = helper(name)(*copy.deepcopy(args))
    for stand_in in (other_of_its_shape, runtime.like):
        changed = list(copy.deepcopy(args))
        for i in FACTS[name].shape_only:
            if isinstance(changed[i], tuple) and not hasattr(changed[i], "_fields"):
                changed[i] = tuple(map(stand_in, changed[i]))   # (each item of a tuple)
            else:
                changed[i] = stand_in(changed[i])
            assert stand_in is runtime.like or not same(changed[i], args[i])
        assert same(helper(name)(*changed), expected), stand_in


@pytest.mark.parametrize("name, args", calls(lambda f: f.result == "fresh"))
def test_a_fresh_result_shares_no_memory_with_the_arguments(name, args):
    result = helper(name)(*args)
    assert arrays_in(result) and not shares(result, args)


@pytest.mark.parametrize("name, args", calls(lambda f: f.result == "of_adjoint"))
def test_an_adjoints_result_shares_memory_with_no_other_argument(name, args):
    result = helper(name)(*args)
    assert not shares(result, args[1:])


def test_the_adjoints_results_may_be_views_of_it():
    g = r(2, 3)
    assert helper("swapaxes")(g, 0, 1).base is g
    assert helper("unbroadcast")(g, g) is g
    assert helper("reshape_like")(g, np.zeros(6)).base is g


@pytest.mark.parametrize("name, args", calls(lambda f: True))
def test_a_helper_writes_into_the_arguments_it_declares_and_no_other(name, args):
    before = copy.deepcopy(args)
    helper(name)(*args)
    written = FACTS[name].writes
    for i, (old, new) in enumerate(zip(before, args)):
        assert same(old, new) != (i in written), i


def test_combine_terms_moves_no_call_of_a_helper_that_writes():
    from s2sad.after_ad.combine_terms import CombineTerms
    pure = CombineTerms.pure
    known = type("Known", (), {"resolve": lambda self, f: registry.HELPERS.get(f.id)})()
    holder = type("Holder", (), {"known": known})()
    import gast
    call = gast.parse("_s2s_add_at(out, i, g)", mode="eval").body
    assert not pure(holder, call)
    assert pure(holder, gast.parse("_s2s_unbroadcast(g, x)", mode="eval").body)


def test_every_numba_version_is_of_a_helper_declared_numba():
    pytest.importorskip("numba")
    from s2sad.rules import numba_overloads, numba_reductions, numba_runtime
    declared = {n for n, f in FACTS.items() if f.numba}
    versions = [n[len("numba_"):] for m in (numba_overloads, numba_reductions) for n in vars(m)
                if n.startswith("numba_")]
    assert declared == set(versions) and len(versions) == len(set(versions))
    assert {h.__name__ for h in numba_runtime.versions()} == declared


# -- the rules of the helpers --------------------------------------------------------------
GOLDEN = pathlib.Path(__file__).parent / "golden"


def with_scipy_rules():
    """The registry with SciPy's rules loaded (rules/scipy.py, and solves.py's helpers)."""
    pytest.importorskip("scipy")
    import scipy.linalg  # noqa: F401
    registry.load_optional()


def misplaced(helpers):
    """[(name, module)] for each rule of a helper among `helpers` ({name: helper}) that
    `module`, not the helper's own, declared."""
    found = []
    for name, fn in helpers.items():
        record = registry.PRIMITIVES.get(fn)
        for rule in (record.vjp, record.jvp) if record is not None else ():
            for variant in rule.variants if rule is not None else ():
                if variant.declared_in != fn.__module__:
                    found.append((name, variant.declared_in))
    return found


def test_a_helpers_rules_are_declared_in_its_module():
    with_scipy_rules()
    assert registry.helper_facts("_s2s_lu_product") is not None     # (solves.py's)
    assert misplaced(registry.HELPERS) == []


def test_a_rule_declared_away_from_its_helper_is_found():
    def stray(g, x):
        return g
    stray.__module__ = runtime.__name__         # a helper of runtime.py ...
    registry.linear(stray, "g, x", "g")         # ... whose rule this module declares
    try:
        assert misplaced({"_s2s_stray": stray}) == [("_s2s_stray", __name__)]
    finally:
        registry.PRIMITIVES.pop(stray)


def reverse_helpers():
    """{name: helper} of the helpers reverse-mode code calls: those the reverse rules'
    templates call, and those in the reverse-mode code of the golden files."""
    names = set()
    for _, rule in registry.RULES.items():
        templates = [t for v in rule.variants for t in [*v.templates.values(), v.uniform]]
        for template in templates + [rule.each[1] if rule.each else None]:
            names |= set(getattr(template, "free", ()))
    for path in GOLDEN.glob("*.txt"):
        if not path.name.startswith("forward."):
            names |= set(re.findall(r"_s2s_\w+", path.read_text()))
    # and those the engine writes itself (ad/reverse_mode.py), whatever the golden files show
    names |= {"_s2s_add", "_s2s_unbroadcast", "_s2s_zeros_like", "_s2s_seed", "_s2s_setitem",
              "_s2s_append", "_s2s_cotangents"}
    return {n: registry.HELPERS[n] for n in names if n in registry.HELPERS}


def test_every_helper_reverse_code_calls_has_a_forward_rule_or_none_to_have():
    with_scipy_rules()
    helpers = reverse_helpers()
    assert {"_s2s_unbroadcast", "_s2s_matmul_lhs", "_s2s_zeros_like", "_s2s_add",
            "_s2s_frechet"} <= set(helpers)
    without = sorted(name for name, fn in helpers.items()
                     if registry.JVPS.get(fn) is None
                     and not getattr(registry.primitive(fn), "nondiff", False))
    assert without == []


# -- helpers vmap calls on a batch (`elementwise`) ------------------------------------------
def _elementwise_calls():
    """{helper name: [arguments of one item's call]}, for every helper declared
    `elementwise`: numbers and arrays, at the values where it chooses (0, negative)."""
    x3 = np.array([0.0, -1.5, 2.0])
    return {
        "exponent_term": [(r(3), np.abs(r(3)) + 0.1), (r(3), x3), (0.0, -2.0), (1.5, 2.0),
                          (r(2, 3), x3)],
        "log_base_dot": [(r(3), x3), (2.0, 0.0), (r(2, 3), x3)],
        "safe_divide": [(r(3), x3), (1.0, 0.0), (r(3), 2.0)],
        "sinc_slope": [(np.array([0.0, 0.01, 1.3]), 1), (np.array([0.0, 0.5]), 2), (0.2, 1)],
        "polygamma": [(1, np.array([0.5, 2.0, 30.0])), (0, 3.5)],
        "clip_mask": [(r(3), -0.5, 0.5), (r(3), x3, None), (0.3, -0.5, None)],
    }


ELEMENTWISE = _elementwise_calls()


def test_every_helper_declared_elementwise_has_a_sample_call():
    assert {n for n, f in FACTS.items() if f.elementwise} == set(ELEMENTWISE)


def _batched_calls():
    """(name, item arguments, the positions batched): each elementwise argument batched
    alone, and all of them at once."""
    for name, samples in ELEMENTWISE.items():
        each = FACTS[name].elementwise
        for args in samples:
            given = [i for i in each if i < len(args) and args[i] is not None]
            for batched in [(i,) for i in given] + [tuple(given)]:
                yield name, args, batched


@pytest.mark.parametrize("name, args, batched", list(_batched_calls()))
def test_an_elementwise_helper_of_a_batch_is_the_helper_of_each_item(name, args, batched):
    """What vmap calls (ad/batching.py): the helper on the batch, each batched argument
    padded to the axes the others' items have, is the stack of its results item by item."""
    from s2sad.rules.batching import batch_pad
    n = 4
    items = [[a * (1.0 + 0.5 * k) if i in batched else a for i, a in enumerate(args)]
             for k in range(n)]
    stacked = [np.stack([np.asarray(item[i]) for item in items]) if i in batched else a
               for i, a in enumerate(args)]
    each = [i for i in FACTS[name].elementwise if i < len(args) and args[i] is not None]
    for i in batched:
        ranks = [np.ndim(args[j]) for j in each if j != i]
        stacked[i] = batch_pad(stacked[i], max(ranks, default=0))
    got = helper(name)(*stacked)
    want = np.stack([np.asarray(helper(name)(*item)) for item in items])
    assert np.shape(got) == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-14)
