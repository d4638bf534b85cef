"""Helpers that generated code calls where plain arithmetic will not do."""
import linecache
import numbers

import numpy as np

from ..errors import (
    ComplexValueError, ExceptionPathError, MissingRuleError, NonScalarOutputError, S2SADError)
# (the modules of helpers, each declaring its own: `runtime.NAME` finds any, see __getattr__)
from . import attributes, calculus, factorizations, layout, products, schedules  # noqa: F401
from .arrays import add_at, asarray, is_array, is_duck_array, zeros
from .pytrees import (
    add, carries_derivative, is_record, zeros_like,
    children as _children, field_zero as _field_zero, is_named_tuple as _is_named_tuple,
    fields as _fields, is_zero as _is_zero, node_of as _node_of, rebuild as _rebuild,
    by_attributes as _by_attributes, replace as _replace)
from .containers import described, joined as _joined, repeated as _repeated
from .factorizations import matrix_norm_slope
from .reductions import axes_of as _axes, prod_others, rebroadcast, unbroadcast, unreduce
from .registry import HELPERS, define, helper, helper_adjoint, helpers, jvp

ns = {"np": np}


class Respecialize(Exception):
    """Raised when generated code is called with arguments of other types than it was
    compiled for; the caller compiles (or fetches) the matching version."""


def respecialize(*args, **kwargs):
    """What generated code returns for arguments of other types than it was compiled
    for, passing them on: raise Respecialize. A gradient object binds its own function
    in its copy of the code instead, which compiles the matching version and calls it
    (see api._DerivativeFunction._install)."""
    raise Respecialize


define(respecialize, nondiff=True)      # (it never returns: the way out of a guard)


def exception_path(exc, where):
    """The error generated code raises when the code from the `try` block at `where`
    raised `exc`, which the block's except clause catches (see after_ad/enclose.py)."""
    return ExceptionPathError(
        f"{where}: the code from this try block raised {type(exc).__name__}: {exc}, which "
        "its except clause catches. s2sad differentiates the try block only along the "
        "path on which it raises nothing (its body, else and finally), so there is no "
        "derivative of the path the function takes here (or, if the function's own code "
        "ran without error, the derivative is undefined at this point). Test for the case "
        "with if/else instead of catching the exception to have both paths "
        "differentiated.")


@helper(numba=True)
def check_real(v, filename, line):
    """Nothing if `v` is real; else `ComplexValueError` at `line` of `filename`, the user's
    line where `v` meets a differentiated value: how generated code checks a value whose
    type only the run tells (see before_ad/complex_values.py)."""
    if (v.__class__ is not float and not (v.__class__ in (list, tuple) and set(map(type, v))
            <= {int, float}) and (found := complex_part(v)) is not None):  # (fast: numbers)
        raise complex_value(found, filename, line)


def complex_part(v, depth=0):
    """What makes `v` complex, said for a message ("a complex128 array", "a complex
    number"): `v` itself, or an element of a tuple, list or dict, or a field of a
    dataclass or named tuple it holds; None if nothing does."""
    dtype = getattr(v, "dtype", None)
    if isinstance(v, (complex, np.complexfloating)):
        return f"a {type(v).__name__} number"
    if isinstance(dtype, np.dtype):
        return f"a {dtype.name} array" if dtype.kind == "c" else None
    if depth > 20 or isinstance(v, (str, bytes, numbers.Real)):
        return None
    return next((found for found in (complex_part(item, depth + 1) for item in _children(v))
                 if found is not None), None)


def complex_value(found, filename, line):
    """The `ComplexValueError` of `found` (see `complex_part`) meeting a differentiated
    value at `line` of `filename` (whose text it shows when it can read it)."""
    text = linecache.getline(filename, line).strip()
    where = f"{filename}:{line}"
    return ComplexValueError(
        f"{where}: {found} meets a value s2sad differentiates here, in code compiled for "
        "real values (s2sad could not tell it was complex: a complex array argument, or "
        "what a function without a rule returns), so the derivative would be wrong. "
        "Compute with real values: the real and imaginary parts (np.real(z), np.imag(z)), "
        "or the modulus and phase (np.abs(z), np.angle(z)); docs/complex.md says what "
        "takes complex values"
        + (f"\n    {text}" if text else ""))


@helper(shape_only=(1,), result="of_adjoint", linear="g")
def unattr(g, obj, name):
    """The adjoint of `obj.name`: zeros shaped like `obj` with `g` in field `name` (for
    a registered class, in the child that `obj.name` is, see `child_of`)."""
    if _is_named_tuple(obj):
        return unindex(g, obj, obj._fields.index(name))
    if _by_attributes(type(obj)):
        node = _node_of(type(obj))
        parts, aux = node.flatten(obj)
        k = child_of(node, aux, obj, name)
        out = [_field_zero(v) for v in parts]
        if k is not None and carries_derivative(parts[k]):
            out[k] = unbroadcast(g, parts[k])
        return node.unflatten(aux, out)
    if isinstance(obj, dict) and name in obj:    # (an OptimizeResult: its keys are attributes)
        return unindex(g, obj, name)
    if not is_record(obj):
        raise S2SADError(
            f"reading .{name} of a differentiated {type(obj).__name__}: s2sad differentiates "
            "with respect to fields of dataclasses and named tuples, and the children of "
            f"classes registered with s2sad.register_pytree; make {type(obj).__name__} a "
            "dataclass, register it, or pass it as a non-differentiated argument")
    values = {f: _field_zero(getattr(obj, f)) for f in _fields(obj)}
    value = getattr(obj, name)
    if carries_derivative(value):
        values[name] = unbroadcast(g, value)
    return _replace(obj, values)


# (`g` into one field: its transpose reads that field)
helper_adjoint(unattr, g="_s2s_rebroadcast(_s2s_attr_dot(ans_bar, obj, name), g)")


@helper(linear="t")
def attr_dot(t, obj, name):
    """The tangent of `obj.name`, `t` the tangent of `obj`: for an instance of a class
    registered with s2sad.register_pytree, the child of `t` in the place of the child
    that `obj.name` is (zero for an attribute that is none of them, see `child_of`);
    else `t.name`."""
    if not _by_attributes(type(obj)):
        return getattr(t, name)
    node = _node_of(type(obj))
    aux = node.flatten(obj)[1]
    k = child_of(node, aux, obj, name)
    if k is None or t is None or _is_zero(t):
        return 0.0
    return node.children_as(t, aux)[k]


_CHILDREN = {}   # (node, attribute) -> (aux, number of children, child): child_of's cache


class _Marker:
    """A stand-in for child `k` of a registered structure (see `child_of`)."""

    __slots__ = ("k",)
    def __init__(self, k):
        self.k = k


def child_of(node, aux, obj, name):
    """Which child of `obj`, an instance of a registered class (its `node`, and `aux` of
    its flatten), its attribute `name` is, as JAX sees it: the attribute `name` of the
    instance its unflatten builds from `aux` with a marker in place of each child. None
    where that is the attribute of `obj` itself, taken from `aux` (a constant), or one
    that carries no derivative; an S2SADError otherwise: an attribute computed from the
    children, or a list of them, whose derivative s2sad cannot tell. (Found once for
    each class, attribute and aux object.)"""
    if hasattr(node, "child"):      # (a plain class: its children are its attributes)
        return node.child(aux, name)
    known = _CHILDREN.get((node, name))
    if known is not None and known[0] is aux[0] and known[1] == aux[1]:
        return known[2]
    try:
        probe = getattr(node.unflatten(aux, [_Marker(k) for k in range(aux[1])]), name)
    except Exception as e:  # noqa: BLE001 - unflatten or the attribute computed on markers
        probe = e
    if type(probe) is _Marker:
        _CHILDREN[node, name] = (aux[0], aux[1], probe.k)
        return probe.k
    value = getattr(obj, name)
    if probe is value or not carries_derivative(value):
        return None
    cls = type(obj).__qualname__
    raise S2SADError(
        f"reading .{name} of a differentiated {cls}: {cls} is registered with "
        f"s2sad.register_pytree, and .{name}, which holds {described(value)}, is neither one "
        "of the children its flatten function returns nor the same object in every "
        f"instance unflatten builds from them (where .{name} is "
        + (f"{type(probe).__name__}: {probe})" if isinstance(probe, Exception) else
           f"{described(probe)})") + f", so s2sad cannot tell its derivative. Return "
        f".{name} itself among the children (a list attribute as the list, not its items), "
        f"with an unflatten that stores each child as the attribute it was read from")


@helper(shape_only=(1,), result="of_adjoint", linear="c")
def cotangent(c, x):
    """A cotangent a custom rule returned for `x`: None means zero."""
    return zeros_like(x) if c is None else c


_NO_DATA = bytes(16)     # the one (read-only) element of every stand-in


@helper(numba=True)
def like(x):
    """A stand-in for array `x` where only its type, shape and dtype are read (`x` of
    `unbroadcast(g, x)` on a loop's tape): an array of its shape and dtype whose axes all
    have stride 0 over 16 zero bytes, so it holds no data. Anything else is itself."""
    if type(x) is np.ndarray and x.ndim and x.dtype.kind in "biufc":
        return np.ndarray(x.shape, x.dtype, _NO_DATA, 0, (0,) * x.ndim)
    return x


define(like, "x", None, zero=("x",), tangent=())          # only its shape is read


@helper(shape_only=(1,), result="fresh", numba=True, linear="g")
def unindex(g, x, index):
    """The adjoint of `x[index]`: zeros shaped like `x` with `g` added at `index`."""
    if type(index) is int:      # the common cases, fast
        if type(x) in _SEQUENCES:
            out = [zeros_like(v) for v in x]
            out[index] = unbroadcast(g, x[index])
            return out if type(x) is list else tuple(out)
        if type(x) is np.ndarray and type(g) in _PLAIN:
            out = np.zeros(x.shape, x.dtype if x.dtype is _FLOAT64 else  # (result_type: slow)
                           np.result_type(x.dtype, np.float32))
            try:
                out[index] = g      # (NumPy broadcasts a `g` no larger than the row)
            except ValueError:
                out[index] = unbroadcast(g, out[index])
            return out
    if isinstance(x, dict):
        out = zeros_like(x)
        out[index] = unbroadcast(g, x[index])
        return out
    if isinstance(x, (tuple, list)):
        out = list(zeros_like(x))
        named = _is_named_tuple(x)
        if isinstance(index, slice):
            positions = range(*index.indices(len(x)))
            # (a 0-d `g`, the zero, for each item: see `products.spread_to`)
            zero = not isinstance(g, (list, tuple)) and np.ndim(g) == 0
            items = zip(positions, [g] * len(positions) if zero else g)
        else:
            items = [(index, g)]
        for i, v in items:
            if not named or carries_derivative(x[i]):
                out[i] = unbroadcast(v, x[i])
        return _rebuild(x, out)
    x = asarray(x)
    out = zeros(x.shape, np.result_type(x.dtype, np.float32), x, g)
    if _basic(index):
        out[index] = unbroadcast(g, out[index])
    elif is_duck_array(out):
        add_at(out, index, g)
    else:
        np.add.at(out, index, g)
    return out


helper_adjoint(unindex, zero="index", g="_s2s_rebroadcast(_s2s_rebroadcast(ans_bar, x)[index], g)")


_SEQUENCES, _FLOAT64 = frozenset({tuple, list}), np.dtype(np.float64)
_PLAIN = frozenset({float, np.float64, np.ndarray})


def _basic(index):
    items = index if isinstance(index, tuple) else (index,)
    return all(isinstance(i, (int, slice, type(None), type(Ellipsis))) or (
        isinstance(i, np.integer)) for i in items)


@helper(numba=True)
def seed(y, name):
    """The adjoint 1 of a scalar output `y` of the same type; a clear error otherwise."""
    import numbers
    if is_array(y) and y.shape == ():
        return np.ones_like(y)
    if isinstance(y, np.generic) and np.issubdtype(y.dtype, np.floating):
        return y.dtype.type(1)
    if isinstance(y, numbers.Real) and not isinstance(y, bool):
        return 1.0
    if isinstance(y, numbers.Complex):      # (holomorphic=True: complex_values checks)
        return 1.0
    shape = getattr(y, "shape", None)
    found = f"an array of shape {shape}" if shape is not None else f"a {type(y).__name__}"
    raise NonScalarOutputError(
        f"grad needs a function with a scalar output, but {name}() returned {found}. Use "
        "s2sad.vjp for non-scalar outputs (or reduce the output, e.g. with .sum()).")


class NotAPair(Exception):
    """Raised by `aux_seed` for a result that is not a pair (what the API reports,
    located: it knows which transform the user called)."""


def aux_seed(pair, name):
    """The adjoint of the result `pair` of a function differentiated with has_aux=True,
    `(output, aux)`: 1 for the output (see `seed`), zeros for `aux`, which is not
    differentiated."""
    if type(pair) is not tuple or len(pair) != 2:
        raise NotAPair(pair)
    return seed(pair[0], name), zeros_like(pair[1])


define(aux_seed, nondiff=True)


# the adjoint 1 of a scalar output: a constant, in reverse mode too (gradient code
# differentiated again in reverse mode, `grad(f)` called in a function)
define(seed, "y, name", None, None, zero=("y", "name"), tangent=(), returns="scalar")


# -- NumPy adjoints that are more than one expression -----------------------------------
@helper(shape_only=(0,), tangent=())
def count(x, axis=None):
    """How many elements a reduction of `x` over `axis` combines (a lazy 0-d array for a
    duck array whose lengths along `axis` are not known until it is computed, such as a
    Dask array of unknown chunk sizes)."""
    shape = np.shape(x)
    axes = _axes(axis, len(shape))
    lengths = [shape[a] for a in axes]
    if is_duck_array(x) and any(n != n for n in lengths):      # NaN: not known yet
        return np.max(np.sum(np.ones_like(x, dtype=np.float64), axis=axes))
    return int(np.prod(lengths))


helper_adjoint(count)        # (a count: no derivative; `x` is read for its shape)


@helper(result="fresh", numba=True, linear="g")
def extremum(g, x, ans, axis=None, keepdims=False):
    """The adjoint of max/min: `g` shared equally among the elements that attain it."""
    x = asarray(x)
    if not keepdims and axis is not None and x.ndim:
        axes = _axes(axis, x.ndim)      # g and ans broadcast against x again
        ans = np.expand_dims(ans, axes)
        g = np.expand_dims(g, axes) if np.ndim(g) else g
    mask = x == ans
    dtype = np.result_type(x, np.float32)
    return mask * (g / mask.sum(axis=axis, keepdims=True, dtype=dtype))    # (one x-sized array)


# (the weights, 1/k on the k elements that attain the extremum, are constant where the
# extremum is attained once: the derivative there)
helper_adjoint(extremum, namespace=ns, zero="x, ans", g=(
    "_s2s_rebroadcast(np.sum(_s2s_extremum(1.0, x, ans, axis, keepdims) * ans_bar, "
    "axis=axis, keepdims=keepdims), g)"))


@helper(result="fresh", numba=True, linear=("g", "x"))
def variance(g, x, axis=None, ddof=0, keepdims=False):
    """The adjoint of var(x, axis, ddof)."""
    x = asarray(x)
    centred = x - x.mean(axis=axis, keepdims=True)
    return unreduce(g, x, axis, keepdims) * 2 * centred / (count(x, axis) - ddof)


# (linear in `g`, and in `x` through centring, a symmetric projection)
helper_adjoint(variance, namespace=ns, zero="ddof", g=(
    "_s2s_rebroadcast(np.sum(_s2s_rebroadcast(ans_bar, x) * _s2s_variance(1.0, x, axis, ddof, "
    "True), axis=axis, keepdims=keepdims), g)"), x=(
    "_s2s_variance(1.0, _s2s_rebroadcast(ans_bar, x) * _s2s_unreduce(g, x, axis, keepdims), "
    "axis, ddof, True)"))


@helper(tangent=("_s2s_nanvariance(t, x, axis, ddof, keepdims)",
                 "_s2s_nanvariance(g, np.where(np.isnan(x), np.nan, t), axis, ddof, keepdims)"))
def nanvariance(g, x, axis=None, ddof=0, keepdims=False):
    """The adjoint of np.nanvar(x, axis, ddof): as `variance` over the values that are
    not NaN, 0 at the NaNs (and where no more than `ddof` values are left)."""
    x = asarray(x)
    present = ~np.isnan(x)
    centred = np.where(present, x - np.nanmean(x, axis=axis, keepdims=True), 0.0)
    n = (np.sum(present, axis=axis, keepdims=True) - ddof).astype(centred.dtype)
    return unreduce(g, x, axis, keepdims) * 2 * centred / np.where(n > 0, n, np.inf)


# (`J(x)^T g`, J nanvar's derivative: see docs/design.md, "Where a new piece goes")
helper_adjoint(nanvariance, namespace=ns,
               g=("_s2s_rebroadcast(np.sum(ans_bar * _s2s_nanvariance(1.0, x, axis, ddof, "
                  "keepdims), axis=axis, keepdims=keepdims), g)"),
               x=("_s2s_nanvariance(g, np.where(np.isnan(x), np.nan, ans_bar), axis, ddof, "
                  "keepdims)"))


@helper(numba=True, tangent=("_s2s_safe_divide(t, d)", "-_s2s_safe_divide(n * t, d * d)"),
        elementwise="n, d")
def safe_divide(n, d):
    """`n / d`, and 0 where `d` is 0: the adjoint of a square root or a deviation at 0,
    where s2sad gives the subgradient 0 (the standard deviation of one value, or of
    equal values, is 0 around them)."""
    if is_array(n) or is_array(d):
        zero = asarray(d) == 0
        return np.where(zero, 0.0, n / np.where(zero, 1.0, d))
    return n / d if d != 0 else 0.0 * n


helper_adjoint(safe_divide, n="_s2s_unbroadcast(_s2s_safe_divide(ans_bar, d), n)",
               d="_s2s_unbroadcast(-_s2s_safe_divide(ans_bar * ans, d), d)")


@helper(linear="g")
def linspace_end(g, start, stop, num=50, endpoint=True, which=0, axis=0):
    """The adjoint of `start` (`which` 0) or `stop` (1) of `np.linspace(start, stop,
    num, endpoint, axis=axis)`: each sample is `start + (stop - start) * w`, `w` from 0
    up to 1 (or short of it without the endpoint), along `axis`."""
    g = asarray(g)
    g = np.moveaxis(g, axis, 0) if g.ndim else g
    n = g.shape[0] if g.ndim else 1
    w = np.arange(n) / ((n - 1 if endpoint else n) or 1)
    w = w.reshape((n,) + (1,) * max(g.ndim - 1, 0))
    part = np.sum(g * (w if which else 1 - w), axis=0) if g.ndim else g
    return unbroadcast(part, start if which == 0 else stop)


@helper(shape_only=(1,), linear="b")
def linspace_end_adjoint(b, g, endpoint=True, which=0, axis=0):
    """The adjoint of `g` in `linspace_end(g, start, stop, num, endpoint, which, axis)`
    from the adjoint `b` of its result: `b`, summed down to a sample of `g`, times the
    weight of each sample, `1 - w` for `start` (`which` 0), `w` for `stop` (1)."""
    if np.ndim(g) == 0:
        return rebroadcast(b, g)
    g = np.moveaxis(np.asarray(g), axis, 0)
    n = np.shape(g)[0]
    w = np.arange(n) / ((n - 1 if endpoint else n) or 1)
    w = (w if which else 1 - w).reshape((n,) + (1,) * (np.ndim(g) - 1))
    return np.moveaxis(w * rebroadcast(b, g[0]), 0, axis)


helper_adjoint(linspace_end, zero="start, stop",
               g="_s2s_linspace_end_adjoint(ans_bar, g, endpoint, which, axis)")


@helper(linear="g")
def arange_part(g, start, stop=None, step=None, which=0):
    """The adjoint of `start` (`which` 0) or `step` (2) of `np.arange(start, stop,
    step)`, whose samples are `start + i * step`; with one argument, `np.arange(stop)`,
    the samples are the integers below it: no derivative."""
    if stop is None:
        return 0.0 * np.sum(g)
    g = asarray(g)
    return np.sum(g) if which == 0 else np.sum(g * np.arange(g.shape[0]))


# (the samples' values are not read: `start` and `step` have no derivative here)
helper_adjoint(arange_part, zero="start, stop, step", namespace=ns, g=(
    "(_s2s_rebroadcast(ans_bar, g) if which == 0 else ans_bar * np.arange(np.shape(g)[0])) "
    "if stop is not None else 0.0 * _s2s_rebroadcast(ans_bar, g)"))


@helper(result="of_adjoint", linear="g")
def cumsum(g, x, axis=None):
    """The adjoint of cumsum: a cumulative sum from the end."""
    if np.ndim(g) == 0:
        return g                                    # the zero (see `products.spread_to`)
    if axis is None:
        return np.cumsum(asarray(g)[::-1])[::-1].reshape(np.shape(x))
    return np.flip(np.cumsum(np.flip(g, axis), axis), axis)


helper_adjoint(cumsum, namespace=ns, zero="x",     # (`x` is read for its shape)
               g="_s2s_rebroadcast(np.cumsum(_s2s_rebroadcast(ans_bar, x), axis), g)")


@helper(result="fresh", linear="g")
def trace(g, x, offset=0, axis1=0, axis2=1):
    """The adjoint of np.trace: `g` on the diagonal `offset` of the planes (axis1, axis2)."""
    x = asarray(x)
    out = zeros(x.shape, np.result_type(x, g, np.float32), x, g)
    planes = np.moveaxis(out, (axis1, axis2), (-2, -1))      # a view into `out`
    n, m = planes.shape[-2:]
    rows = np.arange(max(0, -offset), min(n, m - offset))
    planes[..., rows, rows + offset] = np.expand_dims(asarray(g), -1)
    return out


helper_adjoint(trace, namespace=ns, zero="x",      # (`x` is read for its shape)
               g="_s2s_rebroadcast(np.trace(_s2s_rebroadcast(ans_bar, x), offset, axis1, axis2), g)")


@helper(result="of_adjoint", linear="g")
def diag(g, v, k=0):
    """The adjoint of np.diag (in both directions)."""
    v = asarray(v)
    if np.ndim(g) == 0:
        return g                                    # the zero (see `products.spread_to`)
    if v.ndim == 1:
        return np.diagonal(g, offset=k).copy()
    out = zeros(v.shape, np.result_type(v, np.float32), v, g)
    rows = np.arange(len(g)) + max(-k, 0)
    out[rows, rows + k] = g
    return out


helper_adjoint(diag, zero="v", g="_s2s_diag(ans_bar, g, k)")    # (each other's transposes)


@helper(result="fresh", params="g, x, n, ord=None, axis=None, keepdims=False", numba=True,
        tangent=("_s2s_norm(t, x, n, ord, axis, keepdims)",
                 "_s2s_norm_adjoint_dot(g, x, n, t, 0, ord, axis, keepdims)",
                 "_s2s_norm_adjoint_dot(g, x, n, t, 1, ord, axis, keepdims)"))
def norm(g, x, ans, ord=None, axis=None, keepdims=False):
    """The adjoint of np.linalg.norm: vector p-norms (and inf), and the Frobenius norm."""
    x = asarray(x)
    vector = axis is not None and np.ndim(axis) == 0 or (axis is None and x.ndim == 1)
    if not vector and ord not in (None, "fro"):
        pair = (0, 1) if axis is None else tuple(axis)
        return unreduce(g, x, pair, keepdims) * matrix_norm_slope(x, ord, pair)
    if ord in (None, 2, "fro"):
        scale = unreduce(asarray(g) / np.where(ans == 0, 1, ans), x, axis, keepdims)
        return scale * x
    if ord in (np.inf, -np.inf):
        return extremum(g, np.abs(x), ans, axis, keepdims) * np.sign(x)
    p = float(ord)
    safe = np.where(ans == 0, 1, ans)
    scale = unreduce(asarray(g) / safe ** (p - 1), x, axis, keepdims)
    return scale * np.sign(x) * np.abs(x) ** (p - 1)


# (`J(x)^T g`, the norm `n` read as given: those of `x` and `n` transpose the tangents of
# `norm_adjoint_dot`, along `x` symmetric, along `n` one scale per norm)
helper_adjoint(norm, params="g, x, n, ord=None, axis=None, keepdims=False", namespace=ns,
               g=("_s2s_rebroadcast(np.sum(ans_bar * _s2s_norm(1.0, x, n, ord, axis, keepdims), "
                  "axis=axis, keepdims=keepdims), g)"),
               x="_s2s_norm_adjoint_dot(g, x, n, ans_bar, 0, ord, axis, keepdims)",
               n=("_s2s_rebroadcast(np.sum(ans_bar * _s2s_norm_adjoint_dot(g, x, n, 1.0, 1, ord, "
                  "axis, keepdims), axis=axis, keepdims=keepdims), n)"))


@helper(params="g, x, n, s, which, ord=None, axis=None, keepdims=False", numba=True, tangent=(
    "_s2s_norm_adjoint_dot(t, x, n, s, which, ord, axis, keepdims)",
    *["_s2s_no_second_derivative(\"np.linalg.norm's adjoint\")"] * 2,
    "_s2s_norm_adjoint_dot(g, x, n, t, which, ord, axis, keepdims)"))
def norm_adjoint_dot(g, x, n, t, which, ord=None, axis=None, keepdims=False):
    """The tangent of `norm(g, x, n, ord, axis, keepdims)` (the adjoint of `n =
    np.linalg.norm(x, ord, axis, keepdims)`) along `x` (which=0) or `n` (which=1): for
    the 2-norm and the Frobenius norm, the vector p-norms, and 0 where the adjoint is
    piecewise constant (the vector 1, inf and -inf norms, the matrix 1, -1, inf and -inf
    norms). The matrix norms of singular values have no second derivative rule."""
    x = np.asarray(x)
    vector = axis is not None and np.ndim(axis) == 0 or (axis is None and x.ndim == 1)
    if ord in (None, "fro") or (ord == 2 and vector):
        if which == 0:
            return norm(g, t, n, ord, axis, keepdims)
        return norm(-g * t / n, x, n, ord, axis, keepdims)
    if ord in (1, np.inf, -np.inf) or (not vector and ord == -1):
        return np.zeros(x.shape, np.result_type(x, np.float32))
    if not vector:
        raise MissingRuleError(f"s2sad has no second derivative rule for the matrix norm "
                               f"ord={ord!r} (forward over reverse); the Frobenius norm and "
                               "the matrix 1, -1, inf and -inf norms have one")
    p = float(ord)
    if which == 1:           # the adjoint is proportional to n ** (1 - p)
        return norm(g * (1 - p) * t / np.where(n == 0, 1, n), x, n, ord, axis, keepdims)
    scale = unreduce(np.asarray(g) / np.where(n == 0, 1, n) ** (p - 1), x, axis, keepdims)
    return scale * (p - 1) * np.abs(x) ** (p - 2) * t


@helper(shape_only=(1,), result="of_adjoint", numba=True, linear="g")
def reshape_like(g, x):
    """`g` in the shape of `x`: the adjoint of a reshape of `x`."""
    if np.ndim(g) == 0 and np.size(x) != 1:
        return g                                    # the zero (see `products.spread_to`)
    return np.reshape(g, np.shape(x))


helper_adjoint(reshape_like, namespace=ns,
               g="_s2s_reshape_like(ans_bar, g) if np.ndim(g) else _s2s_rebroadcast(ans_bar, g)")


def _on_axes(op):
    """`op(g, *args)` for the adjoint `g`, for an `op` that moves, flips or masks the
    axes of `g`; the 0-d zero (see `products.spread_to`) passes through."""
    def adjoint(g, *args):
        return g if np.ndim(g) == 0 else op(g, *args)
    adjoint.__name__ = adjoint.__qualname__ = op.__name__
    adjoint.__doc__ = f"`np.{op.__name__}(g, ...)`, or the 0-d zero `g` (see `products.spread_to`)."
    return adjoint


swapaxes, moveaxis, flip, roll, triu, tril = map(_on_axes, (
    np.swapaxes, np.moveaxis, np.flip, np.roll, np.triu, np.tril))
for _adjoint, _params in [(swapaxes, "g, axis1, axis2"), (moveaxis, "g, source, destination"),
                         (flip, "g, axis=None"), (roll, "g, shift, axis=None"),
                         (triu, "g, k=0"), (tril, "g, k=0")]:
    # (`g` itself when 0-d, else a view of it)
    helper(_adjoint, result="of_adjoint", linear="g", params=_params)
# (each moves or masks the elements of `g`: its transpose moves them back)
helper_adjoint(swapaxes, params="g, axis1, axis2", g="_s2s_swapaxes(ans_bar, axis1, axis2)")
helper_adjoint(moveaxis, params="g, source, destination",
               g="_s2s_moveaxis(ans_bar, destination, source)")
helper_adjoint(flip, params="g, axis=None", g="_s2s_flip(ans_bar, axis)")
helper_adjoint(roll, params="g, shift, axis=None", namespace=ns,
               g="_s2s_roll(ans_bar, np.negative(shift), axis)")
helper_adjoint(triu, params="g, k=0", g="_s2s_triu(ans_bar, k)")
helper_adjoint(tril, params="g, k=0", g="_s2s_tril(ans_bar, k)")


@helper(result="of_adjoint", numba=True, linear="g")
def split_like(g, arrays, axis=0):
    """The adjoint of concatenating `arrays` along `axis`: the pieces of `g` (slices, which
    every array library has; Dask has no `np.split`)."""
    if np.ndim(g) == 0:
        return [g] * len(arrays)                    # the zero (see `products.spread_to`)
    if axis is None:
        ends = np.cumsum([np.size(a) for a in arrays]).tolist()
        pieces = split_like(np.ravel(g), [range(n) for n in np.diff([0] + ends)])
        return [np.reshape(p, np.shape(a)) for p, a in zip(pieces, arrays)]
    before = (slice(None),) * (axis % np.ndim(g))
    pieces, lo = [], 0
    for a in arrays:
        hi = lo + np.shape(a)[axis]
        pieces.append(g[before + (slice(lo, hi),)])
        lo = hi
    return pieces


# (the transposes of taking `g` apart: joining the adjoints of the pieces)
helper_adjoint(split_like, namespace=ns, zero="arrays",
               g="_s2s_rebroadcast(np.concatenate(ans_bar, axis), g)")


@helper(result="of_adjoint", linear="g")
def unstack(g, arrays, axis=0):
    """The adjoint of np.stack(arrays, axis)."""
    if np.ndim(g) == 0:
        return [g] * len(arrays)                    # the zero (see `products.spread_to`)
    return [np.take(g, i, axis=axis) for i in range(len(arrays))]


helper_adjoint(unstack, namespace=ns, zero="arrays",
               g="_s2s_rebroadcast(np.stack(ans_bar, axis), g)")


@helper(result="of_adjoint", linear="g")
def hstack(g, arrays):
    if np.ndim(g) == 0:
        return [g] * len(arrays)                    # the zero (see `products.spread_to`)
    flat = [np.atleast_1d(a) for a in arrays]
    axis = 0 if flat[0].ndim == 1 else 1
    return [np.reshape(p, np.shape(a)) for p, a in zip(split_like(g, flat, axis), arrays)]


helper_adjoint(hstack, zero="arrays", g="_s2s_unhstack(ans_bar, g, arrays)")  # (their shapes)


@helper(result="of_adjoint", linear="g")
def vstack(g, arrays):
    if np.ndim(g) == 0:
        return [g] * len(arrays)                    # the zero (see `products.spread_to`)
    rows = [np.atleast_2d(a) for a in arrays]
    return [np.reshape(p, np.shape(a)) for p, a in zip(split_like(g, rows, 0), arrays)]


helper_adjoint(vstack, namespace=ns, zero="arrays", g="_s2s_rebroadcast(np.vstack(ans_bar), g)")


@helper(tangent=(), elementwise="x, lo, hi")
def clip_mask(x, lo, hi):
    """Where `np.clip(x, lo, hi)` passes `x` through."""
    inside = np.asarray(True)
    if lo is not None:
        inside = inside & (asarray(x) >= lo)
    if hi is not None:
        inside = inside & (asarray(x) <= hi)
    return inside


helper_adjoint(clip_mask, zero="x, lo, hi")       # (a mask: no derivative)


def first(ans, i, *xs):
    """1.0 if argument `i` is the first of `xs` equal to `ans` (the one min/max return)."""
    for j, x in enumerate(xs):
        if x == ans:
            return 1.0 if j == i else 0.0
    return 0.0


for _n in range(3, 9):                      # 0 or 1: no tangent
    jvp(first, "ans, i, " + ", ".join(f"x{k}" for k in range(_n)))
    helper_adjoint(first, params="a, i, " + ", ".join(f"x{k}" for k in range(_n)),
                   zero="a, " + ", ".join(f"x{k}" for k in range(_n)))


@helper(result="fresh", linear="g", numba=True)
def unsort(g, x, axis=-1):
    """The adjoint of np.sort: `g` put back where each element came from."""
    x = asarray(x)
    if axis is None:
        out = zeros(x.size, np.result_type(x, np.float32), x, g)
        out[np.argsort(x, axis=None)] = np.ravel(g)
        return out.reshape(x.shape)
    out = zeros(x.shape, np.result_type(x, np.float32), x, g)
    np.put_along_axis(out, np.argsort(x, axis=axis), g, axis=axis)
    return out


# (`g` put where the elements of `x` were: its transpose takes them from there; the order is
# piecewise constant in `x`)
helper_adjoint(unsort, namespace=ns, zero="x", g=(
    "_s2s_rebroadcast(np.take_along_axis(_s2s_rebroadcast(ans_bar, x), "
    "np.argsort(x, axis=axis), axis), g)"))


@helper(result="of_adjoint", numba=True, linear="g")
def unsum(g, items):
    """The adjoint of the builtin sum(items): `g` for every item."""
    if isinstance(items, (list, tuple)):
        return _rebuild(items, [unbroadcast(g, v) for v in items])
    return np.broadcast_to(g, np.shape(items)).copy()


# (`g` for every item: the adjoints of the items summed; for an array of items, over its
# first axis, and down to the shape of `g`)
helper_adjoint(unsum, zero="items", namespace={"sum": sum}, g="_s2s_rebroadcast(sum(ans_bar), g)")


@helper(linear="g")
def int_zero(g, dtype=None):
    """`g`, or zeros of its shape when `dtype` is an integer or boolean type: the adjoint
    of a conversion to `dtype` (`np.array(x, dtype=int)`), which is piecewise constant."""
    if dtype is None or np.issubdtype(np.dtype(dtype), np.inexact):
        return g
    return zeros(np.shape(g), np.float64, g)


# (symmetric; a dtype read back from a tape, which second derivatives differentiate: zero)
helper_adjoint(int_zero, zero="dtype", g="_s2s_int_zero(ans_bar, dtype)")


def cast_tangent(t, dtype=None):
    """The tangent of a conversion to `dtype` of a value whose tangent is `t`: `t` in that
    dtype, or zeros for an integer or boolean type."""
    if dtype is None:
        return t
    if np.issubdtype(np.dtype(dtype), np.inexact):
        return asarray(t).astype(dtype)
    return zeros(np.shape(t), np.float64, t)


@helper(result="of_adjoint", linear="g")
def cast_like(g, x, dtype=None):
    """The adjoint of `x.astype(dtype)`: `g` in the dtype of `x`, or zero when `dtype` is
    an integer or boolean type (the conversion is then piecewise constant)."""
    if dtype is not None and not np.issubdtype(np.dtype(dtype), np.inexact):
        return zeros_like(asarray(x))
    return asarray(g).astype(np.result_type(x), copy=False)


helper_adjoint(cast_like, zero="x", g="_s2s_cast_like(ans_bar, g, dtype)")   # (in g's dtype)


# -- sequences of numbers (rules/math.py) ----------------------------------------------
def dist_dot(t, p, q, ans):
    """The tangent of `math.dist(p, q)` along `t`, the tangent of `p`."""
    return safe_divide(sum((a - b) * d for a, b, d in zip(p, q, t)), ans)


def prod_dot(t, items, start=1):
    """The tangent of `math.prod(items, start=start)` along `t`, the tangent of `items`."""
    if not len(items):
        return 0.0
    others = prod_others(np.array(items, dtype=np.float64))
    return start * sum(float(o) * d for o, d in zip(np.ravel(others), t))


# -- default values changed in place ----------------------------------------------------
def own_default(v):
    """A copy of `v`, the default object (a list, dict or array) of a parameter that a
    call leaves at its default and the function changes in place: the call works on the
    copy, and `keep_default` gives the default its final contents (before_ad.desugar)."""
    return v.copy()


# (its rules: the copy a call changes; keep_default: no derivative, see before_ad.desugar)
define(own_default, "v", "g", linear="v", returns="first")


@helper(writes=(0,))
def keep_default(default, final):
    """Give `default`, the default object of a parameter that the call left at its
    default, the contents `final` the function leaves in its copy: what the function's
    changes in place leave in it for the next call, as Python keeps them."""
    if final is default:
        return
    if isinstance(default, np.ndarray):
        default[...] = final
    elif isinstance(default, dict):
        default.clear()
        default.update(final)
    else:
        default[:] = final


define(keep_default, nondiff=True)


# -- the + and * of lists and tuples, own, snapshots (the writes: rules/writes.py) ------
@helper(numba=True, linear="g")
def own(g, x):
    """`g`, the adjoint of the array `x`, as an array of its own (a copy, of a floating
    dtype, of `x`'s shape), which a reversed loop then updates in place."""
    x = asarray(x)
    return np.broadcast_to(g, x.shape).astype(np.result_type(g, x.dtype, np.float32))


def unadd(g, x, y, which):
    """The adjoint of operand `which` (0 or 1) of `x + y`: its part of `g` where `+`
    joins two lists or tuples, else `g` summed down to its shape."""
    if not _joined(x, y):
        return unbroadcast(g, (x, y)[which])
    if _is_zero(g):
        return g
    return g[:len(x)] if which == 0 else g[len(x):]


# (`+` and `*` of lists and tuples, join and repeat: the engine calls these where an
# operand may be one; they are linear in the adjoints and tangents)
define(unadd, "g, x, y, which", linear="g")


def unmul(g, x, y, which):
    """The adjoint of operand `which` of `x * y`: where `*` repeats a list or tuple, the
    sum of `g`'s parts for it (none for the count), else the product's adjoint."""
    seq = _repeated(x, y)
    if seq is None:
        return unbroadcast(g * (y, x)[which], (x, y)[which])
    if (x, y)[which] is not seq or _is_zero(g):
        return 0.0
    n = len(seq)
    out = zeros_like(seq)
    for k in range(0, len(g), n):
        out = add(out, g[k:k + n])
    return out


define(unmul, "g, x, y, which", linear="g")


def join_tangent(x, y, x_dot, y_dot):
    """The tangent of `x + y` where `+` may join lists or tuples (a symbolic zero tangent
    stands for zeros of its operand's length)."""
    if not _joined(x, y):
        return x_dot + y_dot
    parts = [zeros_like(v) if _is_zero(d) else d for v, d in ((x, x_dot), (y, y_dot))]
    return type(x)(list(parts[0]) + list(parts[1]))


def repeat_tangent(x, y, x_dot, y_dot):
    """The tangent of `x * y` where `*` may repeat a list or tuple."""
    seq = _repeated(x, y)
    if seq is None:
        return x_dot * y + x * y_dot
    d = x_dot if seq is x else y_dot
    count = y if seq is x else x
    return zeros_like(seq) * count if _is_zero(d) else type(seq)(list(d) * count)


def refuse_view(v, error):
    """Raise `error` if `v`, an index of an array whose number of axes was not known when
    compiling, is a view: the function reads it after a write into that array, which
    the derivative would not see (before_ad.aliasing). A number is a copy: nothing to do."""
    if isinstance(v, np.ndarray):
        raise error


@helper(numba=True, linear="v")
def snapshot(v):
    """`v` as a loop's tape records it: a copy of an array (an element of an array that
    the loop then writes in place), anything else as it is."""
    return v.copy() if is_array(v) else v


helpers(__name__)


def __getattr__(name):
    """The runtime helper `name` of reverse-mode code, wherever it is declared
    (`runtime.add` is pytrees.add; registry.HELPERS): passes find each here, and no
    list names them. Forward mode's own (rules/tangents.py) are not here."""
    found = HELPERS.get("_s2s_" + name)
    if found is None or found.__module__ == __package__ + ".tangents":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return found
