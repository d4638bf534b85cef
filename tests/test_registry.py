"""The registry keeps everything s2sad knows about a primitive in one record.

Adding a function is one statement (`registry.define`): these tests check that the record
is the only place the engine learns from (a new reduction declared in one statement is
treated like `np.sum`), that the name tables point at records, that the public
registrations make one record each, and that no module outside s2sad/rules keeps a list
of reductions or of float-valued functions of its own.
"""
import ast
import math
import os

import re

import numpy as np
import pytest

import s2sad
from s2sad.frontend.source import function_from_source
from s2sad.rules import registry
from s2sad.rules.numpy import ns as numpy_ns

PACKAGE = os.path.dirname(s2sad.__file__)


@pytest.fixture
def scratch():
    """Primitives a test declares, forgotten (records and names) afterwards."""
    made = []
    yield made
    for prim in made:
        record = registry.PRIMITIVES.pop(prim, None)
        for name in getattr(record, "methods", ()):
            registry.METHODS.pop(name, None)
        for name in getattr(record, "attributes", ()):
            registry.ATTRIBUTES.pop(name, None)
    registry.bump()


def test_the_record_of_np_sum_holds_what_s2sad_knows():
    record = registry.primitive(np.sum)
    (variant,) = record.vjp.variants
    assert variant.uniform.source == "g" and set(variant.templates) == {"a"}
    (tangent,) = record.jvp.variants
    assert tangent.linear == [["a"]] and not tangent.templates
    assert record.reduction and not record.view and not record.nondiff
    assert record.methods == ("sum",) and registry.METHODS["sum"] is np.sum
    assert registry.primitive(np.transpose).view
    assert registry.primitive(np.transpose).attributes == ("T",)
    assert registry.primitive(np.argmax).nondiff
    assert registry.primitive(math.sin).floats and not registry.primitive(math.floor).floats
    assert registry.primitive([]) is None and registry.lookup({}) is None   # unhashable


def test_name_tables_point_at_records():
    for table, field in ((registry.METHODS, "methods"), (registry.ATTRIBUTES, "attributes")):
        assert table
        for name, prim in table.items():
            record = registry.primitive(prim)
            assert record is not None and name in getattr(record, field), name
    for prim, record in registry.PRIMITIVES.items():
        assert record.prim is prim
        for name in record.methods:
            assert registry.METHODS[name] is prim
        for name in record.attributes:
            assert registry.ATTRIBUTES[name] is prim


def test_rule_views_read_the_records():
    assert registry.RULES[np.tanh] is registry.primitive(np.tanh).vjp
    assert registry.JVPS.get(np.sum) is registry.primitive(np.sum).jvp
    assert np.tanh not in registry.JVPS     # elementwise: its reverse rule gives its tangent
    assert [] not in registry.RULES
    assert set(registry.RULES) == {p for p, r in registry.PRIMITIVES.items() if r.vjp}


def test_reductions_have_the_parameters_the_engine_reads():
    reductions = {p for p, r in registry.PRIMITIVES.items() if r.reduction}
    assert {np.sum, np.mean, np.max, np.amin, np.prod, np.var, np.std} <= reductions
    for prim in reductions:      # the engine reads a reduction's `a`, `axis` and `keepdims`
        for variant in registry.primitive(prim).vjp.variants:
            names = [p for p, _ in variant.params]
            assert names[0] == "a" and {"axis", "keepdims"} <= set(names), prim


def _known(node):
    """The record an expression `np.sum` or `math.sin` names, or None."""
    if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
            and node.value.id in ("np", "numpy", "math")):
        module = math if node.value.id == "math" else np
        return registry.primitive(getattr(module, node.attr, None))
    return None


def _lists_of_knowledge(tree):
    """The literal tuples, lists and sets of two or more reductions or float-valued
    functions, by object (`np.sum, np.mean`) or by name (`"sum", "mean"`)."""
    records = list(registry.PRIMITIVES.values())
    reduction_names = {n for r in records if r.reduction for n in r.methods} | {
        r.prim.__name__ for r in records if r.reduction}
    float_names = {r.prim.__name__ for r in records if r.floats}
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Tuple, ast.List, ast.Set)) or len(node.elts) < 2:
            continue
        for names, field in ((reduction_names, "reduction"), (float_names, "floats")):
            if all(getattr(_known(e), field, False) or (
                    isinstance(e, ast.Constant) and e.value in names) for e in node.elts):
                yield node.lineno, field


def test_no_module_outside_the_rules_lists_reductions_or_float_functions():
    found = []
    for folder, _, files in os.walk(PACKAGE):
        if os.path.relpath(folder, PACKAGE).split(os.sep)[0] == "rules":
            continue
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                with open(path, encoding="utf-8") as f:
                    tree = ast.parse(f.read())
                found += [f"{os.path.relpath(path, PACKAGE)}:{line} lists {what} knowledge"
                          for line, what in _lists_of_knowledge(tree)]
    assert not found, "\n".join(found)


def test_the_scan_finds_the_lists_this_change_removed():
    """The scan above is not vacuous: it finds the tables that were removed."""
    old = ('REDUCTIONS = (np.sum, np.mean, np.max, np.min, np.amax, np.amin, np.prod)\n'
           '_METHODS = ("sum", "max", "min", "mean", "prod")\n'
           '_MATH_FLOATS = {"sin", "cos", "tan", "exp", "log", "sqrt"}\n'
           'OTHER = ("shape", "ndim", "size")\n')
    assert [w for _, w in _lists_of_knowledge(ast.parse(old))] == [
        "reduction", "reduction", "floats"]


def test_tangents_module_holds_forward_machinery_only():
    """The forward rules of library functions are declared with their reverse rules;
    rules/tangents.py registers rules for s2sad's runtime helpers only."""
    with open(os.path.join(PACKAGE, "rules", "tangents.py"), encoding="utf-8") as f:
        tree = ast.parse(f.read())
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)
             and isinstance(n.func, ast.Name) and n.func.id in ("define", "jvp", "linear")]
    assert calls
    own = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}   # (its helpers)
    for call in calls:
        target = call.args[0]
        assert (isinstance(target, ast.Name) and target.id in {"_f"} | own) or (
            isinstance(target, ast.Attribute) and target.value.id == "R"), ast.unparse(call)


REDUCTION = "a, axis=None, dtype=None, out=None, keepdims=False"


def _sum_like(a, axis=None, dtype=None, out=None, keepdims=False):
    return np.sum(a, axis=axis, dtype=dtype, out=out, keepdims=keepdims)


def _module_level(text, namespace):
    return function_from_source(text, dict(namespace, np=np))


def test_a_reduction_declared_in_one_statement_is_treated_like_np_sum(scratch):
    def total(*args, **kwargs):
        return _sum_like(*args, **kwargs)

    def plain(*args, **kwargs):       # the same rules, without `reduction=True`
        return _sum_like(*args, **kwargs)
    for prim, extra in ((total, {"reduction": True, "method": "total"}), (plain, {})):
        scratch.append(prim)
        registry.define(prim, REDUCTION, a="_s2s_unreduce(g, a, axis, keepdims)",
                        uniform="g", linear="a", namespace=numpy_ns, **extra)
    template = ("def f(X, w):\n"
                "    return SUM(np.exp(SUM(X * w, axis=1, keepdims=True) - X) * w)\n")
    point = (np.random.default_rng(0).normal(size=(4, 3)), np.linspace(0.5, 1.5, 3))
    sources = {}
    for name in ("np.sum", "total", "plain"):
        f = _module_level(template.replace("SUM", name), {"total": total, "plain": plain})
        gradient = s2sad.grad(f, wrt=(0, 1))
        gradient(*point)
        # (the guard of what was resolved names the function each resolved)
        code = re.sub(r"    if .*?\n        return _s2s_respecialize\(.*?\)\n", "",
                      gradient.source, flags=re.S)
        sources[name] = code.replace(name, "np.sum")
    assert sources["total"] == sources["np.sum"]
    assert sources["plain"] != sources["np.sum"]
    method = _module_level("def f(x):\n    return (np.tanh(x) * x).total() * 2.0\n", {})
    function = _module_level("def f(x):\n    return np.sum(np.tanh(x) * x) * 2.0\n", {})
    texts = []
    for f in (method, function):
        gradient = s2sad.grad(f)
        gradient(np.linspace(0.1, 1.0, 5))
        texts.append(gradient.source.split("# grad of:")[1].split("\n", 1)[1])
    assert texts[0] == texts[1]     # `x.total()` means `total(x)`, a full reduction


def test_public_registrations_make_one_record_each(scratch):
    def softplus(x):
        return math.log1p(math.exp(x))

    def frozen(x):
        return x
    scratch += [softplus, frozen]
    calls = []
    registry.on_change(lambda: calls.append(registry.version))
    try:
        before, version = set(registry.PRIMITIVES), registry.version
        s2sad.defvjp(softplus, "x", "g / (1 + exp(-x))", namespace={"exp": math.exp})
        assert set(registry.PRIMITIVES) - before == {softplus}
        assert registry.version == version + 1 and calls == [registry.version]
        record = registry.primitive(softplus)
        assert record.vjp.variants[0].templates["x"].source == "g / (1 + exp(-x))"
        assert record.jvp is None and not record.nondiff
        s2sad.defjvp(softplus, "x", "t / (1 + exp(-x))", namespace={"exp": math.exp})
        assert set(registry.PRIMITIVES) - before == {softplus}
        assert registry.primitive(softplus) is record and record.jvp is not None
        loss = function_from_source("def loss(w):\n    return softplus(2.0 * w)\n",
                                    {"softplus": softplus})
        assert s2sad.jvp(loss, (0.0,), (1.0,))[1] == 1.0
        s2sad.nondiff(frozen)
        assert set(registry.PRIMITIVES) - before == {softplus, frozen}
        assert registry.primitive(frozen).nondiff and len(calls) == 3
        tangent = record.jvp
        assert registry.JVPS.pop(softplus) is tangent and record.jvp is None
    finally:
        registry._listeners.pop()


def test_define_checks_its_arguments():
    with pytest.raises(s2sad.S2SADError, match="parameters"):
        registry.define(object(), None, "g")
    with pytest.raises(s2sad.S2SADError, match="either templates or linear"):
        registry.define(object(), "x", tangent="t", linear="x")
    before = set(registry.PRIMITIVES)
    with pytest.raises(s2sad.S2SADError, match="nor in its namespace"):
        registry.define(object(), "x", "g * undefined(x)")
    assert set(registry.PRIMITIVES) == before       # a failed declaration leaves no record


def sum_and_product(x, y):
    return (x + y, x * y)


def uses_a_pair(x, y):
    s, p = sum_and_product(x, y)
    return s * p


def test_the_tangents_of_a_tuple_valued_primitive_add_part_by_part(scratch):
    # two varied arguments: forward mode adds their tangent tuples, not joins them
    registry.define(sum_and_product, "x, y", "g[0] + g[1] * y", "g[0] + g[1] * x",
                    returns="container", tangent=("(t, t * y)", "(t, t * x)"))
    scratch.append(sum_and_product)
    value, tangent = s2sad.jvp(uses_a_pair, (0.7, -1.3), (1.0, 0.5))
    h = 1e-6
    expected = (uses_a_pair(0.7 + h, -1.3 + 0.5 * h)
                - uses_a_pair(0.7 - h, -1.3 - 0.5 * h)) / (2 * h)
    assert value == pytest.approx(uses_a_pair(0.7, -1.3))
    assert tangent == pytest.approx(expected, rel=1e-7)
