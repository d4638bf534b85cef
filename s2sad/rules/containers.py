"""Helpers for the values s2sad differentiates through that are not arrays, beyond what
`pytrees` does for every structure: what a loop over a sequence or a dict indexes
(`sequence`, `keys`), the adjoints of joined, repeated and sorted sequences and of a
record's field, and the check of what custom rules return against the values they were
given (`cotangents`, `misfit`). Generated code reaches them through `runtime`, which
imports them."""
import numpy as np

from ..errors import CustomRuleError, defined_at
from .arrays import is_array
from .pytrees import carries_derivative, is_zero, node_of, rebuild, zeros_like
from .registry import define, helper, helper_adjoint, helpers


@helper(shape_only=(2,), numba=True, tangent="t")
def cotangents(c, bwd, args):
    """`c`, what `bwd`, the backward function of a custom_vjp, returned for a call with
    the positional arguments `args` (None for those whose cotangents are not read), once
    it is seen to fit them: a tuple with one cotangent per argument, None or of the
    argument's structure and shape (see `misfit`; the number 0 for an array becomes
    zeros of its shape); else a CustomRuleError that names `bwd`."""
    if type(c) is tuple and len(c) == len(args):
        for d, x in zip(c, args):
            if d is None or x is None or type(x) is float is type(d) or plainly_fits(d, x):
                continue
            return _cotangents(c, bwd, args)
        return c
    return _cotangents(c, bwd, args)


def _cotangents(c, bwd, args):
    """`cotangents`, beyond its common cases."""
    if isinstance(c, (tuple, list)) and len(c) == len(args):
        for i, (d, x) in enumerate(zip(c, args)):
            found = misfit(d, x)
            if found is not None:
                raise custom_rule_error(
                    bwd, "the backward function of a custom_vjp", f"returned as the cotangent "
                    f"of argument {i} {found}. Return each cotangent in the structure and "
                    "shape of its argument (None, or np.zeros_like(x), for zero)")
            if d is not None and is_array(x) and np.ndim(x) and np.ndim(d) == 0:
                c = (*c[:i], zeros_like(x), *c[i + 1:])       # (a zero: see misfit)
        return c
    n = len(args)
    raise custom_rule_error(
        bwd, "the backward function of a custom_vjp",
        f"returned {described(c)} for a call with {n} positional argument{'s' * (n != 1)}; "
        f"it returns a tuple of {n} cotangent{'s' * (n != 1)}, one per argument, None for "
        f"one without a derivative" + (" (`return (x_bar,)`, not `return x_bar`)"
                                       if n == 1 else ""))


def plainly_fits(d, x):
    """The common cases of `misfit` that fit, found quickly: a float for a float, an
    array of floats of its shape for an array of floats."""
    t = type(x)
    if t is float:
        return type(d) is float or type(d) is np.float64
    return (t is np.ndarray and type(d) is np.ndarray and d.shape == x.shape
            and d.dtype.kind == "f" and x.dtype.kind == "f")


def custom_rule_error(rule, what, message):
    """The CustomRuleError of `rule` (`what` it is), located at its `def`."""
    name = getattr(rule, "__qualname__", None) or repr(rule)
    return CustomRuleError(f"{defined_at(rule)}{name}, {what}, {message}")


def misfit(d, x):
    """Why `d` cannot be the cotangent or tangent of a value `x` (a custom rule's result,
    see `cotangents`): "<what d is> where <what> was expected", or None where it
    fits: None (no derivative), anything for a value without derivatives (an int, an
    integer array, an object), and otherwise the structure of `x` (tuple, list, dict,
    dataclass, registered class) holding numbers where it holds numbers and arrays of their shape where it
    holds arrays (of floats or ints, complex only for complex values; the number 0 also
    for an array, a zero that broadcasts)."""
    if d is None or not carries_derivative(x):
        return None
    if is_array(x) or isinstance(x, (float, complex, np.inexact)):
        return _leaf_misfit(d, np.shape(x), np.iscomplexobj(x))
    node = node_of(type(x))
    if isinstance(x, (tuple, list)):
        if not isinstance(d, (tuple, list)) or len(d) != len(x):
            return f"{described(d)} where a {type(x).__name__} of {len(x)} was expected"
        parts = enumerate(zip(d, x))
    elif isinstance(x, dict):
        if not isinstance(d, dict) or set(d) != set(x):
            keys = sorted(x, key=repr)
            return f"{described(d)} where a dict with the keys {keys} was expected"
        parts = ((k, (d[k], v)) for k, v in x.items())
    else:
        own, aux = node.flatten(x)
        given = node.children_as(d, aux) if type(d) is type(x) else None
        if given is None:
            return f"{described(d)} where a {type(x).__name__} was expected"
        names = getattr(node, "fields", range(len(own)))
        parts = zip(names, zip(given, own))
    for key, (dk, xk) in parts:
        found = misfit(dk, xk)
        if found is not None:
            return f"at {key!r}: {found}"
    return None


def _leaf_misfit(d, shape, complex_):
    kind = getattr(getattr(d, "dtype", None), "kind", None)
    if kind is None:
        kind = {bool: "b", int: "i", float: "f", complex: "c"}.get(type(d))
    expected = "a number" if not shape else f"an array of shape {shape}"
    if kind is None or kind not in "biufc":
        return f"{described(d)} where {expected} was expected"
    if kind == "c" and not complex_:
        return f"{described(d)}, complex, where {expected} of real numbers was expected"
    if np.shape(d) != shape and not (np.shape(d) == () and d == 0):
        return f"{described(d)} where {expected} was expected" + (
            " (a number there only as a zero)" if shape and np.shape(d) == () else "")
    return None


def described(v):
    """A short description of `v` for a message: its kind and shape, or its value."""
    if isinstance(v, (tuple, list, dict)):
        return f"a {type(v).__name__} of {len(v)}"
    shape = getattr(v, "shape", None)
    if shape is not None and shape != ():
        return f"an array of shape {tuple(shape)} ({v.dtype})"
    if isinstance(v, (bool, int, float, complex, np.number, np.bool_)) or shape == ():
        return f"the number {np.asarray(v).item()!r}"
    text = repr(v)
    return f"{type(v).__name__} {text if len(text) < 40 else text[:37] + '...'}"


def joined(x, y):
    return isinstance(x, (list, tuple)) and isinstance(y, (list, tuple))


def repeated(x, y):
    """The list or tuple of `x * y` or `y * x` (a repetition), or None."""
    if isinstance(x, (list, tuple)) and not isinstance(y, (list, tuple)):
        return x
    if isinstance(y, (list, tuple)) and not isinstance(x, (list, tuple)):
        return y
    return None


@helper(numba=True)
def sequence(obj):
    """What a loop over `obj` indexes (before_ad.desugar writes `for v in obj` as a loop
    over indexes): a list, tuple or array itself; the keys of a dict, and the items of
    any other iterable, as a list."""
    return obj if isinstance(obj, (list, tuple)) or is_array(obj) else list(obj)


define(sequence, "obj", "_s2s_unsequence(g, obj, 0.0)",
       tangent="_s2s_unsequence(t, obj, _s2s_zeros_like(ans))", view="obj")


@helper(numba=True)
def unsequence(d, obj, zero):
    """The adjoint or tangent `d` of `sequence(obj)`, for `obj`: `d` where the loop
    indexes `obj` itself, `zero` where it indexes keys, which carry no derivative."""
    return d if isinstance(obj, (list, tuple)) or is_array(obj) else zero


helper_adjoint(unsequence, zero="obj", d="_s2s_unsequence(ans_bar, obj, 0.0)",
               params="d, obj, z", z="_s2s_unsequence(0.0, obj, ans_bar)")


define(unsequence, "d, obj, zero", linear="d, zero")


def keys(d):
    """The keys of the dict `d` as a list (a loop over `d.items()`)."""
    return list(d)


define(keys, nondiff=True)


@helper(numba=True)
def best_index(keys, largest):
    """The position of the item `max(items, key=...)` (`largest`) or `min(...)` picks,
    given the keys of the items: the first of those that attain the extremum."""
    keys = list(keys)
    if not keys:
        raise ValueError(f"{'max' if largest else 'min'}() iterable argument is empty")
    return (max if largest else min)(range(len(keys)), key=keys.__getitem__)


define(best_index, nondiff=True, returns="scalar")


@helper(numba=True)
def key_order(keys, reverse=False):
    """The positions of the items in the order `sorted(items, key=..., reverse=...)`
    puts them, given their keys (a stable sort, as Python's)."""
    keys = list(keys)
    return sorted(range(len(keys)), key=keys.__getitem__, reverse=reverse)


define(key_order, nondiff=True)


def dict_of(keys, values):
    """The dict of `keys` and `values` in their order: what a dict comprehension, a dict
    display whose keys are computed and `dict(zip(keys, values))` build (before_ad.desugar
    writes them as calls of it)."""
    return dict(zip(keys, values))


define(dict_of, "keys, values", values="_s2s_undict_of(g, keys, values)",
       linear="values", zero="keys", returns="container", view="values")


def undict_of(g, keys, values):
    """The adjoint of `values` in `dict_of(keys, values)`, `g` the dict's (a dict of
    adjoints, or a zero): the entry of `g` at each key, in the structure of `values` (a
    list, tuple or array); where a key repeats, the dict keeps the last value, and the
    earlier ones get zero."""
    seq = list(values)
    out = [zeros_like(v) for v in seq]
    if not is_zero(g):
        last = {k: i for i, k in zip(range(len(seq)), keys)}
        for k, i in last.items():
            if g[k] is not None:
                out[i] = g[k]
    if is_array(values):
        return np.array(out, dtype=np.result_type(values.dtype, np.float32))
    return rebuild(values, out) if isinstance(values, (tuple, list)) else out


# (the last value of each key: the dict of `ans_bar` keeps the same one)
helper_adjoint(undict_of, zero="keys, values", g="_s2s_dict_of(keys, ans_bar)")


define(undict_of, "g, keys, values", linear="g")


def undict(g, mapping):
    """The adjoint of `mapping` in `dict(mapping)`, a copy of the dict: `g` at its keys
    (zeros of its structure where `g` is a zero)."""
    if not isinstance(mapping, dict):
        raise TypeError(f"s2sad differentiates dict(d) of a dict d; here d is "
                        f"{described(mapping)}: build the dict with a comprehension "
                        "({k: v for k, v in pairs}) or dict(zip(keys, values))")
    return zeros_like(mapping) if is_zero(g) else {k: g[k] for k in mapping}


define(undict, "g, mapping", linear="g")


def dict_set(d, key, v):
    """`d` with `d[key] = v`, as a new dict (what `d[key] = v` on a dict the function
    builds means to AD: before_ad.dicts)."""
    out = dict(d)
    out[key] = v
    return out


define(dict_set, "d, key, v", d="_s2s_undict_set(g, d, key)",
       v="_s2s_dict_set_value(g, key)", linear="d, v", zero="key", returns="container",
       view="d, v")


def undict_set(g, d, key):
    """The adjoint of `d` in `dict_set(d, key, v)`, `g` the new dict's: `g` at `d`'s
    keys, zero at `key` (overwritten) where `d` has it."""
    if is_zero(g):
        return g
    return {k: zeros_like(v) if k == key else g[k] for k, v in d.items()}


# (a projection of `g`, onto the keys of `d` but `key`)
helper_adjoint(undict_set, zero="d, key", g="_s2s_undict_set(ans_bar, g, key)")


define(undict_set, "g, d, key", linear="g")


def dict_set_value(g, key):
    """The adjoint of `v` in `dict_set(d, key, v)`: `g` at `key`."""
    return g if is_zero(g) else g[key]


helper_adjoint(dict_set_value, zero="key", g="_s2s_unget(ans_bar, g, key)")


define(dict_set_value, "g, key", linear="g")


def dict_get(d, key, default=None):
    """`d.get(key, default)`: the primitive whose rules the method call `d.get(...)` of a
    dict uses (`DICT_METHODS`)."""
    return d.get(key, default)


define(dict_get, "d, key, default=None", d="_s2s_unget(g, d, key)",
       default="_s2s_unget_default(g, d, key)", linear="d, default", zero="key",
       view="d, default")      # (DICT_METHODS: the method `get`)


#: The methods of a dict whose primitives have rules, {name: primitive}: a call
#: `d.get(...)` on a value whose class s2sad does not know, after the array methods
#: (registry.METHODS), uses these (analysis.operations.classify).
DICT_METHODS = {"get": dict_get}


def unget(g, d, key):
    """The adjoint of the dict `d` in `d.get(key, default)`: zeros of its structure with
    `g` at `key`, all zeros where `key` is not in `d`."""
    out = zeros_like(_dict(d))
    if key in d:
        out[key] = g
    return out


helper_adjoint(unget, zero="d, key", g="_s2s_rebroadcast(_s2s_dict_get(ans_bar, key, 0.0), g)")


define(unget, "g, d, key", linear="g")


def unget_default(g, d, key):
    """The adjoint of `default` in `d.get(key, default)`: `g` where `key` is not in `d`."""
    return 0.0 if key in _dict(d) else g


helper_adjoint(unget_default, zero="d, key",
               g="_s2s_rebroadcast(_s2s_unget_default(ans_bar, d, key), g)")


define(unget_default, "g, d, key", linear="g")


def _dict(d):
    if not isinstance(d, dict):
        raise TypeError(f"s2sad differentiates .get() of a dict; here it is called on "
                        f"{described(d)}")
    return d


def unlist(g, items):
    """The adjoint of `items` in `list(items)` or `tuple(items)`, `g` the result's: `g`
    in the structure of `items` (a list or tuple; rows for an array); zero for a dict,
    whose keys carry no derivative."""
    if isinstance(items, dict):
        return 0.0
    if not (isinstance(items, (list, tuple)) or is_array(items)):
        raise TypeError(f"s2sad differentiates list(x) and tuple(x) of a list, tuple, array "
                        f"or dict x; here x is {described(items)}: build the list with a "
                        "comprehension ([v for v in x])")
    if is_zero(g):
        return 0.0
    if is_array(items):
        out = np.zeros(np.shape(items), np.result_type(items.dtype, np.float32))
        for i, row in enumerate(g):
            out[i] = row
        return out
    return rebuild(items, [zeros_like(v) if r is None else r for r, v in zip(g, items)])


define(unlist, "g, items", linear="g")


def list_dot(t, items, ans):
    """The tangent of `ans`, `list(items)` or `tuple(items)`, `t` the tangent of `items`
    (of the same kind: a list, an array, a `reversed` of tangents): its entries in a list
    or tuple like `ans`; zeros for the keys of a dict."""
    if isinstance(items, dict):
        return zeros_like(ans)
    return type(ans)(t)


define(list_dot, "t, items, ans", linear="t")


def field(g, name):
    """The adjoint of the field `name` of a record whose adjoint is `g` (a record of
    adjoints, or a zero); a field that carries no derivative has none (None): zero."""
    if is_zero(g):
        return g
    value = getattr(g, name)
    return 0.0 if value is None else value


define(field, "g, name", linear="g")     # (forward over reverse: a tangent's field)


def sorting(items, reverse=False):
    """The positions in `items` of the values `sorted(items, reverse=reverse)` returns,
    in its order: Python's sort is stable, so equal values keep their order (also with
    `reverse=True`)."""
    values = list(items)
    return sorted(range(len(values)), key=values.__getitem__, reverse=reverse)


@helper(linear="g")
def unsort_list(g, items, reverse=False):
    """The adjoint of `items` in `sorted(items, reverse=reverse)`: entry `j` of `g` (the
    sorted list's adjoint) goes back to the place the `j`-th value came from."""
    out = [0.0] * len(items)
    if not is_zero(g):
        for j, i in enumerate(sorting(items, reverse)):
            out[i] = 0.0 if g[j] is None else g[j]
    if is_array(items):
        return np.array(out, dtype=np.result_type(items.dtype, np.float32))
    return rebuild(items, out) if isinstance(items, (tuple, list)) else out


def sort_list_dot(t, items, reverse=False):
    """The tangent of `sorted(items, reverse=reverse)`: `t` in the sorted order."""
    if is_zero(t):
        return [0.0] * len(items)
    return [t[i] for i in sorting(items, reverse)]


define(sort_list_dot, "t, items, reverse=False", linear="t")
# (each entry of `g` back to the place of its value: the transpose takes it from there)
helper_adjoint(unsort_list, zero="items", g="_s2s_sort_list_dot(ans_bar, items, reverse)")


helpers(__name__)
