"""Every NumPy rule accepts the 0-d zero adjoint of an array rebound in a loop.

When a loop rebinds an array without reading its old value, the pullback resets the
old value's adjoint to the number `0.0`, a symbolic zero (the array's shape is not on
the tape). That zero then reaches the rule of the statement that computed the value in
the previous iteration. Arithmetic broadcasts it; a rule that reshapes, indexes, stacks
or transposes its adjoint must return a zero too, not fail on the missing axes.

For each check of tests/test_rules_numpy.py, its function is rewritten so that the value
inside the final reduction is computed twice in a loop:

    def stack_fn(a, b):                    def stack_fn(a, b):
        return np.sum(np.stack([a, b])         for _ in range(2):
                      * W24)                       r = np.stack([a, b])
                                               return np.sum(r * W24)

and the gradient of the rewritten function is compared with central finite differences
(it is the original's gradient; the first iteration contributes nothing).
"""
import ast
import importlib.util
import inspect
import textwrap

import pytest

import test_rules_numpy as rules
from numpy_cases import compare, fd_array_grad


def _hoisted(node):
    """The subexpression of the returned value to compute in the loop, or None: the
    factor of a weighted sum (`np.sum(E * W)`), else the reduction's argument."""
    if not isinstance(node, ast.Call) or not node.args:
        return None
    arg = node.args[0]
    if isinstance(arg, ast.BinOp) and isinstance(arg.op, ast.Mult):
        for side, other in ((arg.left, arg.right), (arg.right, arg.left)):
            if isinstance(other, ast.Name) and other.id.startswith("W"):
                return (arg, "left" if side is arg.left else "right")
    return (node, "args")


def _rewritten(fn):
    """The source of `fn` with the value in its final reduction computed in a loop, or
    None when the function does not have that shape."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    func = tree.body[0]
    ret = func.body[-1]
    found = _hoisted(ret.value) if isinstance(ret, ast.Return) else None
    if found is None:
        return None
    parent, field = found
    expr = parent.args[0] if field == "args" else getattr(parent, field)
    if isinstance(expr, ast.Name) or isinstance(expr, ast.Constant):
        return None
    name = ast.Name(id="r_", ctx=ast.Load())
    if field == "args":
        parent.args[0] = name
    else:
        setattr(parent, field, name)
    loop = ast.parse("for _ in range(2):\n    r_ = 0").body[0]
    loop.body[0].value = expr
    func.body[-1:-1] = [loop]
    func.decorator_list = []
    return ast.unparse(ast.fix_missing_locations(tree))


def _params():
    out = []
    for c in rules.CASES:
        label, args = list(c.argsets.items())[-1]
        if c.xfail.get(label) or _rewritten(c.fn) is None:
            continue
        out.append(pytest.param(c, args, id=rules._check_id(c, label)))
    return out


PARAMS = _params()


def test_most_checks_are_rewritten():
    assert len(PARAMS) > 0.8 * len(rules.CASES), (len(PARAMS), len(rules.CASES))


@pytest.fixture(scope="module")
def module(tmp_path_factory):
    """One module with every rewritten function (s2sad reads their source)."""
    path = tmp_path_factory.mktemp("zero_adjoints") / "rewritten_rules.py"
    parts = ["from test_rules_numpy import *\n"]
    parts += [_rewritten(p.values[0].fn) for p in PARAMS]
    path.write_text("\n\n".join(parts) + "\n")
    spec = importlib.util.spec_from_file_location("rewritten_rules", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("case, args", PARAMS)
def test_rule_accepts_the_zero_of_a_rebound_array(module, case, args):
    fn = getattr(module, case.fn.__name__)
    grads = rules._grads(fn, args)
    failures = []
    for i, (g, x) in enumerate(zip(grads, args)):
        expected = fd_array_grad(case.fn, args, i)
        what = f"d/d arg{i}"
        kind = rules._kind_error(g, x, rules.np.float64, what)
        value = compare(g, expected, case.rtol, case.atol, what) if kind is None else None
        failures += [m for m in (kind, value) if m]
    assert not failures, "\n".join(failures)
