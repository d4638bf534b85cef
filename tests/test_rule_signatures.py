"""Each rule's signature is its library function's: a rule binds a call's arguments by
the parameters it declares, so a parameter declared at the wrong position gives the
adjoint of another call, silently (np.cross's third positional argument is `axisa`; a
rule that called it `axis` differentiated `np.cross(a, b, 0)` as if both operands' vectors
lay along axis 0). For every NumPy, SciPy and `math` function with a rule whose signature
`inspect` can read, this checks the rule's positional parameters against the function's,
by name and default, and its keyword parameters against the function's keywords."""
import inspect
import math

import numpy as np
import pytest

import s2sad  # noqa: F401 - the built-in rules, registered
from s2sad.rules import registry

#: (function name, parameter): differences that cannot change a derivative, and why.
BENIGN = {
    # NumPy's first parameter is `start_or_stop`, spelled `start` in its documentation
    # and accepted as a keyword; the rule's default step None stands for NumPy's 1
    ("arange", "start"): "the documented spelling", ("arange", "step"): "None is 1",
    # keyword-only in NumPy: a call passing them by position is NumPy's error first
    ("cholesky", "upper"): "keyword-only in NumPy", ("pad", "constant_values"): "a keyword",
    ("prod", "start"): "math.prod's keyword-only start", ("sorted", "reverse"): "a keyword",
    # NumPy 2's spellings of the same positions (a variant of each is declared)
    ("clip", "min"): "NumPy 2's a_min", ("clip", "max"): "NumPy 2's a_max",
    ("reshape", "newshape"): "NumPy's former name of `shape` (both variants are declared)",
    # positional-only in Python
    ("fsum", "iterable"): "positional-only", ("pow", "x"): "positional-only",
    ("pow", "y"): "positional-only",
    ("rot90", "axes"): "None stands for (0, 1) in the rule's templates",
}


def _library_functions():
    registry.load_optional()
    registry.primitive(None)
    for prim, record in list(registry.PRIMITIVES.items()):
        module = getattr(prim, "__module__", None) or ""
        if isinstance(prim, (type, np.ufunc)) or not (
                module.split(".")[0] in ("numpy", "scipy") or prim in vars(math).values()):
            continue
        try:
            signature = inspect.signature(prim)
        except (TypeError, ValueError):
            continue
        yield pytest.param(prim, record, signature, id=f"{module}.{prim.__name__}")


def _no_value(default):
    return default is inspect.Parameter.empty or type(default).__name__ == "_NoValueType"


@pytest.mark.parametrize("prim, record, signature", list(_library_functions()))
def test_a_rules_parameters_are_its_functions(prim, record, signature):
    params = list(signature.parameters.values())
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    variadic = {p.kind for p in params} & {inspect.Parameter.VAR_POSITIONAL,
                                           inspect.Parameter.VAR_KEYWORD}
    found = []
    for rule in (record.vjp, record.jvp):
        for variant in (rule.variants if rule is not None else ()):
            for i, (name, default) in enumerate(variant.params):
                if (prim.__name__, name) in BENIGN:
                    continue
                if i >= variant.positional:
                    if name not in signature.parameters and not variadic:
                        found.append(f"keyword {name!r}: not one of the function's")
                elif i >= len(positional):
                    if not variadic:
                        found.append(f"{name!r} at position {i}: the function has "
                                     f"{len(positional)} positional parameter(s)")
                elif positional[i].name != name:
                    found.append(f"{name!r} at position {i}: the function's is "
                                 f"{positional[i].name!r}")
                elif default is not registry.REQUIRED and not _no_value(positional[i].default) \
                        and not (default is None and positional[i].default is None) \
                        and default != positional[i].default:
                    found.append(f"{name!r}: default {default!r}, the function's "
                                 f"{positional[i].default!r}")
    assert found == []


def test_the_check_finds_a_parameter_at_the_wrong_position():
    """np.cross as its rule once read it: the third positional argument called `axis`."""
    record = registry.Primitive(np.cross)
    record.vjp = registry.Rule(record)
    record.vjp.add(registry.Variant(registry._parse_params("a, b, axis=-1"), {}, False))
    with pytest.raises(AssertionError, match="'axis' at position 2: the function's is 'axisa'"):
        test_a_rules_parameters_are_its_functions(np.cross, record, inspect.signature(np.cross))
