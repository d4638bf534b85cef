"""Forward mode and second derivatives: jvp, jacfwd, jacrev, hvp, hessian, defjvp."""
from __future__ import annotations

import copy
import inspect
import types
import weakref
from typing import Any, Callable, Sequence

import numpy as np

from . import driver, numba_api, variadic
from .compilation import (Wrt, arg_types_of, default_arg_types, refuse_complex,
                          refuse_complex_but_holomorphic, wrt_indices,
                          wrt_or_argnums)
from .errors import NonScalarOutputError, S2SADError, defined_at, warn_unconnected
from .options import Options, Variant
from . import batched_jacobians as batched
from .rules import pytrees, registry, runtime

_target = driver.target


def compiled(fn, wrt, arg_types=None, guard=False):
    """The compiled `f_jvp` of `fn` for `wrt` (a tuple of indices or names), specialised
    on `arg_types` (see compilation.arg_types_of), through the cache; with `guard`, the
    version that checks its arguments and frees each array after its last use
    (`release`)."""
    return driver.derivative(fn, tuple(wrt), arg_types, Options(
        Variant.JVP, guard=guard, release=guard, complex_output=True))


def _call(d, args, kwargs, tangents):
    return d.fn(*args, **kwargs, **dict(zip(d.tangent_names, tangents)))


def _by_position(f, args, kwargs):
    """(args, kwargs) of a call of `f`, its arguments for parameters that may be passed
    by position passed so (with the defaults of those the call leaves before them):
    what the Hessians and Jacobians index and specialise on."""
    if not kwargs:
        return args, kwargs
    bound = inspect.signature(f).bind(*args, **kwargs)
    bound.apply_defaults()
    return bound.args, bound.kwargs


def _as_one_call(fn, products):
    """[product() for product in `products`], each run on the default values `fn` holds
    before the first: a default object (list, dict, array) that `fn` changes in place,
    which Python keeps from call to call, is given its contents of then again before
    each product, so that they are the derivatives of one call of `fn`, whose change it
    keeps once (see before_ad.desugar's `keep_defaults`)."""
    try:
        defaults = [p.default for p in inspect.signature(fn).parameters.values()
                    if isinstance(p.default, (list, dict, np.ndarray))]
    except (TypeError, ValueError):
        defaults = []
    saved = [copy.deepcopy(d) for d in defaults]
    out = []
    for k, product in enumerate(products):
        for default, contents in zip(defaults, saved) if k else ():
            runtime.keep_default(default, copy.deepcopy(contents))
        out.append(product())
    return out


def jvp(f: Callable, primals: Sequence, tangents: Sequence, *, backend: str | None = None,
        has_aux: bool = False, **kwargs: Any) -> tuple[Any, Any]:
    """`(f(*primals), y_dot)`: the value of `f` and its directional derivative along
    `tangents`, one per positional argument (like `jax.jvp`), in one forward pass.

    >>> import math, s2sad
    >>> def f(x, y):
    ...     return x * y + math.sin(x)
    >>> s2sad.jvp(f, (0.0, 2.0), (1.0, 0.0))        # d/dx at (0, 2)
    (0.0, 3.0)

    The tangent's structure is the output's: an array for an array output, a tuple for
    a tuple. A tangent of a dataclass or named tuple is an instance of the same type.
    A tangent `None` leaves its argument out (a model object, a count); keyword
    arguments are passed through, never differentiated.

    >>> s2sad.jvp(f, (3.0, 2.0), (None, 1.0))       # d/dy, x held fixed
    (6.141120008059867, 3.0)

    For `f` a gradient made by `grad` (`grad(g)`, `grad(grad(g))`, `elementwise_grad(g)`),
    the tangent is forward mode over its gradient code (a Hessian-vector product, as
    `hvp`):

    >>> s2sad.jvp(s2sad.grad(f), (3.0, 2.0), (1.0, 0.0))      # d2f/dx2 = -sin x
    (1.0100075033995546, -0.1411200080598672)

    With `has_aux=True`, `f` returns `(output, aux)` and jvp returns `(output,
    output_dot, aux)`, as JAX's: `aux` is not differentiated.

    >>> def f_and_count(x, y):
    ...     return x * y, "counted"
    >>> s2sad.jvp(f_and_count, (3.0, 2.0), (1.0, 0.0), has_aux=True)
    (6.0, 2.0, 'counted')

    With `backend="numba"`, `f_jvp` is compiled by `numba.njit` (see docs/numba.md); that
    is the default for a `@numba.njit` function `f` (`backend="python"` for Python).
    """
    if has_aux:
        pair, pair_dot = jvp(f, primals, tangents, backend=backend, **kwargs)
        out, aux = split_aux(f, pair, "jvp")
        return out, pair_dot[0], aux
    # the fast path: the f_jvp of f's last call, for n primals and n tangents, which
    # checks their types (and that no tangent is None) itself, raising Respecialize (only
    # calls on the Python backend set it, and only such calls take it)
    ref, version, n, fn = _last
    try:
        fast = (ref() is f and version == registry.version and backend in (None, "python")
                and len(primals) == n == len(tangents))
    except TypeError:       # primals without a length (a generator)
        fast = False
    if fast:
        try:
            return fn(*primals, *tangents, **kwargs) if kwargs else fn(*primals, *tangents)
        except runtime.Respecialize:
            pass
    if numba_api.default_backend(f, backend) == "numba":
        return numba_api.jvp(f, primals, tangents, kwargs)
    return _jvp(f, primals, tangents, kwargs)


# (weakref to f, registry version, number of primals, f_jvp): jvp's fast path, for the
# function of the last call of jvp, if that call gave every tangent, by position (and f
# is a function, not a method). (Not a dict keyed by id(f): a call of id() is reported to
# audit hooks, and s2sad has one, see frontend/guards.py.)
_last = (lambda: None, None, None, None)

# weakref(f) -> {(first, registry version, *argument types, *tangent types): (f_jvp, names,
# skip)}: jvp's general path, two dict lookups per call instead of reading f's signature
# (which costs more than a small jvp); an entry goes when its function does.
_jvp_calls = {}


def _jvp(f, primals, tangents, kwargs):
    """jvp's general path: the first call, methods, tangents left out, other types."""
    primals, tangents = tuple(primals), tuple(tangents)
    f = variadic.for_call(f, primals, kwargs)
    if len(primals) != len(tangents):
        raise S2SADError(f"jvp needs one tangent per primal: got {len(primals)} primal(s) "
                         f"and {len(tangents)} tangent(s)")
    if getattr(f, "s2s_made_by", None) == "grad_grad":
        f = f.s2s_as_gradient()
    if _gradient(f) is not None:
        return _gradient_tangent(f, primals, tangents, kwargs)
    first = 0
    if type(f) is types.MethodType:   # differentiate the function, not the instance
        f, primals, first = f.__func__, (f.__self__,) + primals, 1
    # the types of the tangents tell which are None (arguments left out)
    key = (first, registry.version, *map(type, primals), *map(type, tangents))
    if kwargs:
        key += tuple(sorted((k, type(v)) for k, v in kwargs.items()))
    per_fn = _calls_of(f)
    entry = per_fn.get(key)
    if entry is None:
        if any(k[1] != registry.version for k in per_fn):
            per_fn.clear()
        entry = per_fn[key] = _jvp_entry(f, primals, tangents, first, kwargs)
    _remember(f, first, primals, entry)
    try:
        return _run(entry, primals, tangents, kwargs)
    except runtime.Respecialize:
        # a field of a dataclass argument changed type, which the key does not see
        entry = per_fn[key] = _jvp_entry(f, primals, tangents, first, kwargs)
        _remember(f, first, primals, entry)
        return _run(entry, primals, tangents, kwargs)


def _gradient_tangent(f, primals, tangents, kwargs):
    """`jvp(f, primals, tangents)` for a gradient `f`, `grad(g, i)`: its value, and
    forward mode over the gradient code of `g` (forward over reverse, as `hvp`) along
    the tangents that are not None."""
    primal, grad_wrt = gradient_of(f)
    target = _target(primal)
    wrt = tuple(k for k, t in enumerate(tangents) if t is not None)
    if not wrt:
        raise S2SADError("jvp needs at least one tangent that is not None")
    refuse_complex(target, wrt, primals, numbers=True)
    d = _gradient_jvp(primal, grad_wrt, wrt, arg_types_of(target, primals, kwargs))
    return f(*primals, **kwargs), _call(d, primals, kwargs, [tangents[k] for k in wrt])


def _run(entry, primals, tangents, kwargs):
    fn, names, skip = entry
    if skip:
        tangents = tuple(t for t in tangents if t is not None)
    if names is None:
        return fn(*primals, *tangents, **kwargs)
    return fn(*primals, **kwargs, **dict(zip(names, tangents)))


def _calls_of(f):
    try:
        return _jvp_calls[weakref.ref(f)]
    except KeyError:
        return _jvp_calls.setdefault(weakref.ref(f, _forget), {})
    except TypeError:   # f is not weakly referable: no cache
        return {}


def _forget(ref, calls=_jvp_calls):
    calls.pop(ref, None)


def _remember(f, first, primals, entry):
    """Make `entry` jvp's fast path for `f` if it can be (see `_last`), else leave none."""
    fn, names, skip = entry
    global _last
    if first or names is not None or skip:
        _last = (lambda: None, None, None, None)
        return
    try:
        _last = (weakref.ref(f), registry.version, len(primals), fn)
    except TypeError:
        pass


def _jvp_entry(f, primals, tangents, first, kwargs):
    """`(f_jvp, names, skip)`: the compiled `f_jvp` for the arguments `primals` (the
    version that checks them), the first `first` of them not differentiated (a method's
    instance), nor those whose tangent is None (then `skip`); `names` are the names of its
    tangent parameters if they must be passed by name, None if by position."""
    if len(primals) == first:
        raise S2SADError("jvp needs the positional arguments to differentiate at")
    wrt = tuple(i for i in range(first, len(primals)) if tangents[i - first] is not None)
    if not wrt:
        raise S2SADError("jvp needs at least one tangent that is not None")
    refuse_complex(f, wrt, primals, numbers=True)
    d = compiled(f, wrt, arg_types_of(_target(f), primals, kwargs), guard=True)
    code = getattr(d.fn, "__code__", None)
    by_position = (code is not None and
                   code.co_varnames[len(primals):code.co_argcount] == tuple(d.tangent_names))
    return d.fn, None if by_position else d.tangent_names, len(wrt) < len(primals) - first


def _wrt(target, wrt):
    many = isinstance(wrt, (tuple, list))
    return many, _indices(target, tuple(wrt) if many else wrt)


def _bound_to(f):
    """`(function, instance)` for a bound method `f` of a Python function, or for the
    derivative of one (`grad(model.loss)`); else None."""
    if type(f) is types.MethodType and inspect.isfunction(f.__func__):
        return f.__func__, f.__self__
    bound = getattr(f, "s2s_bound", None)
    if bound is not None and not inspect.isfunction(f):
        return bound
    return None


def _of_method(transform, f, wrt, **options):
    """`transform(f, wrt, **options)` for a bound method `f` (see `_bound_to`): the
    transform of its function with respect to the parameters after the instance (`wrt`
    counted from the first of them), called with the instance first, as `grad` does."""
    fn, instance = _bound_to(f)
    if wrt is None:
        wrt = 0
    shifted = (tuple(w + 1 if isinstance(w, int) and w >= 0 else w for w in wrt)
               if isinstance(wrt, (tuple, list)) else
               wrt + 1 if isinstance(wrt, int) and wrt >= 0 else wrt)
    derivative = transform(fn, shifted, **options)

    def of_method(*args, **kwargs):
        return derivative(instance, *args, **kwargs)
    of_method.__name__ = getattr(f, "__name__", "method")
    of_method.__qualname__ = getattr(f, "__qualname__", of_method.__name__)
    of_method.__doc__ = getattr(f, "__doc__", None)
    return of_method


def _indices(fn, wrt):
    """The positional indices `wrt` names (reading the source once per function; the
    cache does not keep the function alive)."""
    try:
        per_fn = _indices_of.setdefault(fn, {})
    except TypeError:       # (not weakly referable)
        return wrt_indices(fn, wrt)
    if wrt not in per_fn:
        per_fn[wrt] = wrt_indices(fn, wrt)
    return per_fn[wrt]


_indices_of = weakref.WeakKeyDictionary()


def split_aux(fn, pair, made_by):
    """`(output, aux)`, the result `pair` of `fn` differentiated with `has_aux=True` (by
    `made_by`, the API function's name); a located error if it is not a pair."""
    if type(pair) is tuple and len(pair) == 2:
        return pair
    target = _target(getattr(fn, "__func__", fn))
    found = (f"a tuple of {len(pair)}" if isinstance(pair, tuple) else
             f"a {type(pair).__name__}")
    raise S2SADError(f"{defined_at(target)}{made_by}({target.__name__}, has_aux=True) needs "
                     f"{target.__name__}() to return a pair (output, aux), as JAX does; it "
                     f"returned {found}")


def fresh_aux(aux):
    """`aux` as a value of its own: its containers rebuilt and its arrays copied, so that
    changing it cannot change what a pullback reads."""
    return pytrees.map(lambda leaf: leaf.copy() if isinstance(leaf, np.ndarray) else leaf,
                       aux)


# -- Jacobians of structures ---------------------------------------------------------------
# An argument or a result is a number, an array, or a pytree of them (rules/pytrees.py): a
# tuple, list, dict, named tuple, dataclass or registered class, nested, whose leaves are
# its numbers and arrays. A template (`_template`) stands for a value: its structure and
# its leaves' shapes, with None for a child of a record that carries no derivative (an
# int, a string, None), which gets no unit tangents and a Jacobian of None, as `grad`
# gives it None.
_is_structure = pytrees.is_structure


def _template(x):
    """What the functions below read of `x`: `pytrees.zeros_like(x)` for a structure,
    `x` itself (its shape) for a number or an array."""
    if not _is_structure(x):
        return x
    try:
        return pytrees.zeros_like(x)
    except RecursionError:
        raise pytrees.cyclic(x) from None


def _basis(like):
    """The unit tangents of template `like`: one per element of each leaf, shaped like
    `like`, zero elsewhere (floats for numbers, 0.0 for the leaves that are None)."""
    if not _is_structure(like):
        return _units(np.shape(like))
    leaves, structure = pytrees.flatten(like)
    zero = [0.0 if leaf is None else leaf for leaf in leaves]
    return (pytrees.unflatten(structure, zero[:k] + [e] + zero[k + 1:])
            for k, leaf in enumerate(leaves) if leaf is not None
            for e in _units(np.shape(leaf)))


def _units(shape):
    """Unit tangents for each element of an array of `shape` (floats for numbers)."""
    for idx in np.ndindex(shape):
        e = np.zeros(shape)
        e[idx] = 1.0
        yield e if shape else 1.0


def _is_scalar(x):
    """Whether `x` is a number or a 0-d array, not a structure."""
    return not _is_structure(x) and np.ndim(x) == 0


def _per_leaf(parts, like):
    """`parts`, one per unit tangent of `_basis(like)`, flattened, in one list per leaf of
    `like` (empty for a leaf that is None)."""
    out, start = [], 0
    for leaf in pytrees.leaves(like):
        n = 0 if leaf is None else np.size(leaf)
        out.append([pytrees.leaves(p) for p in parts[start:start + n]])
        start += n
    return out


def _jacobian(out_like, in_like, block):
    """The Jacobian laid out as JAX lays it out: the structure of `out_like` holding, at
    each leaf `o`, the structure of `in_like` holding, at each leaf `i`, `block(o, i,
    shape)`, the derivative of output leaf o with respect to input leaf i, of shape
    `shape` (o's shape, then i's); None for a leaf that is None."""
    ins, in_structure = pytrees.flatten(in_like)
    outs, out_structure = pytrees.flatten(out_like)
    rows = [None if y is None else pytrees.unflatten(in_structure, [
        None if x is None else block(o, i, np.shape(y) + np.shape(x))
        for i, x in enumerate(ins)]) for o, y in enumerate(outs)]
    return pytrees.unflatten(out_structure, rows)


def _stack(parts, shape, axis):
    """The block of shape `shape` whose elements `parts` give along `axis` (-1: columns,
    forward mode; 0: rows, reverse mode); a float (or complex) if it is a scalar."""
    if not parts:
        return np.zeros(shape)
    kind = complex if any(np.iscomplexobj(p) for p in parts) else float
    parts = [np.asarray(p, dtype=kind) for p in parts]
    jac = (np.array(parts) if axis == 0 else np.stack(parts, axis=axis)).reshape(shape)
    return kind(jac) if jac.ndim == 0 else jac


def _assemble(columns, out_like, in_like):
    """The Jacobian from its `columns`, the output tangents for `_basis(in_like)`, each
    like `out_like` (see `_jacobian`)."""
    if not (_is_structure(out_like) or _is_structure(in_like)):     # numbers and arrays
        return _stack(columns, np.shape(out_like) + np.shape(in_like), -1)
    by_input = _per_leaf(columns, in_like)
    return _jacobian(out_like, in_like, lambda o, i, shape: _stack(
        [column[o] for column in by_input[i]], shape, -1))


def _assemble_rows(rows, out_like, x):
    """The Jacobian from its `rows`, the adjoints of argument `x` for `_basis(out_like)`
    (see `_jacobian`)."""
    in_like = _template(x)
    if not (_is_structure(out_like) or _is_structure(in_like)):     # numbers and arrays
        return _stack([runtime.unbroadcast(row, x) for row in rows],
                      np.shape(out_like) + np.shape(x), 0)
    by_output, primals = _per_leaf(rows, out_like), pytrees.leaves(x)
    return _jacobian(out_like, in_like, lambda o, i, shape: _stack(
        [runtime.unbroadcast(row[i], primals[i]) for row in by_output[o]], shape, 0))


def jacfwd(f: Callable, wrt: Wrt | None = None, *, argnums: int | tuple | None = None,
           has_aux: bool = False, holomorphic: bool = False) -> Callable:
    """The Jacobian of `f` with respect to argument(s) `wrt`, by forward mode: one `jvp`
    per input element, so it pays off for few inputs and many outputs. The Jacobian has
    shape `output.shape + input.shape`; a tuple `wrt` gives a tuple of them.

    >>> import numpy as np, s2sad
    >>> def polar(p):
    ...     return np.array([p[0] * np.cos(p[1]), p[0] * np.sin(p[1])])
    >>> s2sad.jacfwd(polar)(np.array([2.0, 0.0]))
    array([[1., 0.],
           [0., 2.]])

    An input or output that is a tuple, list, dict, named tuple or dataclass (nested)
    gives the Jacobian JAX gives: the output's structure, holding at each of its
    numbers and arrays the input's structure (with a tuple `wrt`, the tuple of the
    inputs), holding at each of its numbers and arrays the block of shape
    `out_leaf.shape + in_leaf.shape`; a field that carries no derivative gives None,
    as in `grad`:

    >>> def scaled(p):
    ...     return p["w"] * p["b"]
    >>> s2sad.jacfwd(scaled)({"w": np.array([1.0, 2.0]), "b": 3.0})
    {'w': array([[3., 0.],
           [0., 3.]]), 'b': array([1., 2.])}

    `jacfwd(s2sad.grad(f))` is forward mode over `f`'s generated gradient: the
    Hessian (see `hessian`), with `wrt` the mixed second derivatives.

    `argnums` may stand for `wrt`, as in `grad`. With `has_aux=True`, `f` returns
    `(output, aux)` and the result is `(jacobian, aux)`, as JAX's, `aux` not
    differentiated:

    >>> def polar_and_radius(p):
    ...     return polar(p), p[0]
    >>> J, radius = s2sad.jacfwd(polar_and_radius, has_aux=True)(np.array([2.0, 0.0]))
    >>> J[1], float(radius)
    (array([0., 2.]), 2.0)

    With `holomorphic=True`, `f` is a complex function of complex numbers and the
    Jacobian its complex derivative, as JAX's (see docs/complex.md).
    """
    if variadic.takes_varargs(f):
        return variadic.Derivative(
            f, lambda g: jacfwd(g, wrt, argnums=argnums, has_aux=has_aux), extra=0)
    wrt = wrt_or_argnums(wrt, argnums)
    if _bound_to(f) is not None:
        return _of_method(jacfwd, f, wrt, has_aux=has_aux)

    def jacobian(*args, **kwargs):
        args, kwargs = _by_position(f, args, kwargs)
        gradient = None if has_aux or holomorphic else _gradient(f)
        target = _target(f if gradient is None else gradient[0])
        many, indices = _wrt(target, wrt)
        refuse_complex_but_holomorphic(target, indices, args, holomorphic, "jacfwd")
        arg_types = arg_types_of(target, args)
        likes, cols = [_template(args[i]) for i in indices], []
        jac = None if has_aux or holomorphic else _batched_forward(
            f if gradient is None else gradient, indices, likes, args, kwargs, arg_types,
            many, gradient is not None)
        if jac is not None:
            return jac
        for i, like in zip(indices, likes):
            if gradient is None:
                d = compiled(f, (i,), arg_types)
                cols += [lambda d=d, e=e: _call(d, args, kwargs, (e,)) for e in _basis(like)]
            else:
                d = _gradient_jvp(*gradient, (i,), arg_types)
                cols += [lambda d=d, e=e: (None, _call(d, args, kwargs, (e,)))
                         for e in _basis(like)]
        values_and_cols = _as_one_call(target, cols)
        value = values_and_cols[0][0] if cols else f(*args, **kwargs)
        cols = [col for _, col in values_and_cols]
        if has_aux:
            value, aux = split_aux(f, value, "jacfwd")
            cols = [col[0] for col in cols]
        jac = _assemble(cols, cols[0] if cols else value, tuple(likes) if many else likes[0])
        return (jac, aux) if has_aux else jac
    jacobian.__name__ = f"jacfwd_{getattr(f, '__name__', 'f')}"
    jacobian.s2s_made_by = "jacfwd"
    return jacobian


def jacrev(f: Callable, wrt: Wrt | None = None, *, argnums: int | tuple | None = None,
           has_aux: bool = False, holomorphic: bool = False) -> Callable:
    """The Jacobian of `f` with respect to argument(s) `wrt`, by reverse mode: one
    pullback per output element, so it pays off for many inputs and few outputs. Same
    result as `jacfwd`, also for structures; `argnums`, `has_aux` and `holomorphic` are
    those of `jacfwd`.

    >>> import numpy as np, s2sad
    >>> def polar(p):
    ...     return np.array([p[0] * np.cos(p[1]), p[0] * np.sin(p[1])])
    >>> s2sad.jacrev(polar)(np.array([2.0, 0.0]))
    array([[1., 0.],
           [0., 2.]])
    """
    if variadic.takes_varargs(f):
        return variadic.Derivative(
            f, lambda g: jacrev(g, wrt, argnums=argnums, has_aux=has_aux), extra=0)
    wrt = wrt_or_argnums(wrt, argnums)
    if _bound_to(f) is not None:
        return _of_method(jacrev, f, wrt, has_aux=has_aux)

    def jacobian(*args, **kwargs):
        args, kwargs = _by_position(f, args, kwargs)
        target = _target(f)
        many, indices = _wrt(target, wrt)
        refuse_complex_but_holomorphic(target, indices, args, holomorphic, "jacrev")
        arg_types = arg_types_of(target, args)
        jac = None if has_aux or holomorphic else batched.reverse(
            target, indices, args, kwargs, arg_types, many,
            [_template(args[i]) for i in indices], _jacobian)
        if jac is not None:
            return jac
        derivative = driver.derivative(f, tuple(indices), arg_types,
                                       Options(complex_output=holomorphic))
        y, pullback = warn_unconnected(derivative).fn(*args, **kwargs)
        if has_aux:
            (y, aux), pulled = split_aux(f, y, "jacrev"), pullback
            aux_bar = pytrees.zeros_like(aux)

            def pullback(y_bar):
                return pulled((y_bar, aux_bar))
        y_like = _template(y)
        rows = [pullback(e) for e in _basis(y_like)]
        if many:
            jac = _assemble_rows(rows, y_like, tuple(args[i] for i in indices))
        else:
            jac = _assemble_rows([row[0] for row in rows], y_like, args[indices[0]])
        return (jac, aux) if has_aux else jac
    jacobian.__name__ = f"jacrev_{getattr(f, '__name__', 'f')}"
    jacobian.s2s_made_by = "jacrev"
    return jacobian


def _batched_forward(f, indices, likes, args, kwargs, arg_types, many, of_gradient):
    """batched_jacobians.forward for `f` (or, `of_gradient`, the gradient `(primal, wrt)`:
    a Hessian) with respect to the arguments `indices`, whose templates are `likes`."""
    d = _gradient_jvp(*f, indices, arg_types) if of_gradient else compiled(
        f, indices, arg_types)
    return batched.forward(d, args, kwargs, likes, many, of_gradient, _jacobian)


def _grad_jvp(f, wrt, args):
    """`(i, d)`: the index `i` of parameter `wrt` and the compiled forward mode `d`, along
    that parameter, of `f`'s gradient code, for `args`; `d` returns `g_dot`, the
    Hessian times the tangent."""
    if isinstance(wrt, (tuple, list)):
        raise S2SADError("hvp differentiates with respect to one argument; got "
                         f"wrt={wrt!r} (s2sad.hessian(f, wrt={tuple(wrt)!r}) gives the "
                         "blocks of the Hessian with respect to several)")
    target = _target(f)
    i = _indices(target, wrt)[0]
    refuse_complex(target, [i], args)
    return i, _gradient_jvp(f, i, (i,), arg_types_of(target, args))


def gradient_code(f, arg_types=None):
    """The compiled gradient code (`g_grad`, without its argument-type guard, calling
    other Python functions through their `h_adjoint`, see driver.gradient_code) that
    forward over reverse differentiates for gradient `f` (see `gradient_of`), for
    arguments of `arg_types` (by default, those `source` assumes)."""
    primal, grad_wrt = gradient_of(f)
    return _gradient_code(_target(primal), grad_wrt, arg_types)


def _gradient_code(target, grad_wrt, arg_types=None):
    return warn_unconnected(driver.gradient_code(target, grad_wrt, arg_types))


def _gradient_jvp(f, grad_wrt, wrt, arg_types):
    """The compiled forward mode, along parameters `wrt` (indices), of the `f_grad` that
    `grad(f, grad_wrt)` runs (forward over reverse), for arguments of `arg_types`, through
    the cache. The gradient code is compiled without its argument-type guard (the
    callers pick the version by the arguments' types) and calls other functions
    through their adjoints (see `gradient_code`). Without the value, it computes no
    tangent of the value but those the gradient's tangent needs."""
    grad = _gradient_code(_target(f), grad_wrt, arg_types)
    return driver.derivative(grad.fn, tuple(wrt), arg_types, Options(
        Variant.TANGENT, guard=False, complex_output=True))


def gradient_of(f):
    """`(primal, wrt)` if `f` is a gradient made by s2sad whose forward mode is forward
    over reverse (made by `grad`, `value_and_grad`, `hvp` or `hessian`), else None."""
    if getattr(f, "s2s_forward_over_reverse", False):
        return f.primal, f.wrt
    return None


def _gradient(f):
    """`(primal, wrt)` if `f` is `grad(primal, wrt)` (which runs the gradient code,
    `Variant.GRAD`), whose Jacobian is forward mode over that code, else None."""
    return gradient_of(f) if getattr(f, "variant", None) is Variant.GRAD else None


def source(f, wrt=None, at=None):
    """The forward-mode source `s2sad.source(f, mode="forward", wrt=wrt, at=at)` gives:
    `f_jvp` for a function, and for a gradient `grad(g)` (or `value_and_grad`, `hvp`,
    `hessian`, `grad(grad(g))` of `g`) the forward mode of the gradient code it runs,
    `g_grad_jvp`, with tangents for `g`'s parameters `wrt` (by default those
    of the second derivative's tangent, the first parameter for a gradient)."""
    if wrt is None:
        wrt = getattr(f, "s2s_tangents", 0)
    wrt = tuple(wrt) if isinstance(wrt, (tuple, list)) else (wrt,)
    gradient = gradient_of(f)
    if gradient is None:
        arg_types = None if at is None else arg_types_of(_target(f), at)
        return compiled(f, wrt, arg_types).source
    primal, grad_wrt = gradient
    target = _target(primal)
    arg_types = default_arg_types(target) if at is None else arg_types_of(target, at)
    indices = tuple(wrt_indices(target, wrt))
    return _gradient_jvp(primal, grad_wrt, indices, arg_types).source


def _mark_gradient(derivative, f, wrt, kind, tangents=None):
    """Name `derivative` (made by `hvp`, `hessian` or `grad(grad(f))`) and mark it as
    forward over reverse of `f`'s gradient with respect to `wrt`, with tangents along
    `tangents` (by default `wrt`), for `source(derivative, mode="forward")` and the CLI."""
    derivative.__name__ = derivative.__qualname__ = f"{kind}_{getattr(f, '__name__', 'f')}"
    derivative.primal, derivative.wrt = f, wrt
    derivative.s2s_tangents = wrt if tangents is None else tangents
    derivative.s2s_derivative = derivative.s2s_forward_over_reverse = True
    derivative.s2s_made_by = kind
    return derivative


def second_derivative(df, wrt):
    """`grad(grad(f, i), j)`: forward mode over the generated gradient of `f` (forward
    over reverse), for a scalar derivative df/dx_i.

    >>> import s2sad
    >>> def f(x, y):
    ...     return x ** 3 * y
    >>> s2sad.grad(s2sad.grad(f))(2.0, 5.0)          # d2f/dx2 = 6 x y
    60.0
    >>> s2sad.grad(s2sad.grad(f), wrt=1)(2.0, 5.0)   # d2f/dx dy = 3 x^2
    12.0

    A third derivative, `grad(grad(grad(f)))`, is forward mode over the reverse mode of
    the gradient code (see api.py's `_as_gradient`), and so on for higher ones:

    >>> s2sad.grad(s2sad.grad(s2sad.grad(f)))(2.0, 5.0)     # 6 y
    30.0
    """
    if isinstance(df.wrt, (tuple, list)) or isinstance(wrt, (tuple, list)):
        raise S2SADError("grad(grad(f)) takes one parameter at each level; use "
                         "s2sad.hessian for all second derivatives at once")

    def second(*args, **kwargs):
        args, kwargs = _by_position(df.primal, args, kwargs)
        target = _target(df.primal)
        i = wrt_indices(target, df.wrt)[0]
        j = wrt_indices(target, wrt)[0]
        _check_scalar_gradient(target, i, args[i])
        refuse_complex(target, [i, j], args)
        d = _gradient_jvp(df.primal, i, (j,), arg_types_of(target, args))
        if _is_scalar(args[j]):
            return _call(d, args, kwargs, (1.0,))
        like = _template(args[j])
        return _assemble(_as_one_call(target, [lambda e=e: _call(d, args, kwargs, (e,))
                                               for e in _basis(like)]), 0.0, like)
    return _mark_gradient(second, df.primal, df.wrt, "grad_grad", tangents=wrt)


def _check_scalar_gradient(target, i, x):
    """Refuse `grad(grad(f))` where the inner gradient, like argument `i`, is not a
    number: the outer `grad` needs a scalar."""
    if _is_scalar(x):
        return
    name = target.__qualname__
    found = (f"an array of shape {np.shape(x)}" if isinstance(x, np.ndarray) else
             f"a {type(x).__name__}")
    parameter = list(inspect.signature(target).parameters)[i]
    raise NonScalarOutputError(
        f"grad(grad({name})): the inner gradient, like argument {parameter!r}, is {found}, "
        f"not a scalar, and grad needs a scalar output; use s2sad.hessian({name}) or "
        f"s2sad.jacfwd(s2sad.grad({name})) for its derivatives")


def hvp(f: Callable, wrt: Wrt | None = None, *, backend: str | None = None,
        argnums: int | tuple | None = None) -> Callable:
    """The Hessian-vector product of scalar function `f`: `hvp(f)(*args, v)` is the
    Hessian of `f` with respect to argument `wrt`, at `args`, times `v`. Exact: forward
    mode applied to the generated gradient code (forward over reverse), at the cost of
    a few gradients, without forming the Hessian.

    >>> import s2sad
    >>> def f(x, y):
    ...     return x ** 3 * y
    >>> s2sad.hvp(f)(2.0, 5.0, 1.0)                # d2f/dx2 = 6 x y
    60.0

    With `backend="numba"`, the forward mode of the numba backend's gradient code,
    compiled by `numba.njit` (see docs/numba.md); that is the default for a
    `@numba.njit` function `f`. `argnums` may stand for `wrt`, as in `grad`. For SciPy's
    order of arguments, `(x, v, *args)`, see `hessp`.
    """
    if variadic.takes_varargs(f):
        return variadic.Derivative(
            f, lambda g: hvp(g, wrt, backend=backend, argnums=argnums), extra=1)
    wrt = wrt_or_argnums(wrt, argnums)
    if _bound_to(f) is not None:
        return _of_method(hvp, f, wrt, backend=backend)
    backend = numba_api.default_backend(f, backend)
    compiled_for = {}   # (argument types, registry version) -> the compiled code

    def product(*args, **kwargs):
        *args, v = args
        args, kwargs = _by_position(f, args, kwargs)
        # (complex arrays are of a kind of their own: see compilation.arg_types_of)
        key = (tuple(map(type, args)), registry.version,
               tuple(getattr(getattr(a, "dtype", None), "kind", None) == "c" for a in args))
        d = compiled_for.get(key)
        if d is not None and not all(type(a) in (float, int, np.ndarray) for a in args):
            arg_types_of(_target(f), args)      # (refuses an attribute hiding a method)
        if d is None or not d.holds():      # (made before a binding it resolved changed)
            if len(compiled_for) > 16:
                compiled_for.clear()
            d = compiled_for[key] = _product(f, wrt, args, backend)
        return d(*args, v, **kwargs)
    return _mark_gradient(product, f, wrt, "hvp")


def _product(f, wrt, args, backend):
    """`product(*args, v, **kwargs)`: the Hessian of `f` with respect to `wrt` at `args`,
    times `v`, compiled for the types of `args` by `backend`; `product.holds()` tells
    whether the bindings its code resolved are still those it was compiled with."""
    if backend == "numba":
        if isinstance(wrt, (tuple, list)):
            raise S2SADError("hessian and hvp differentiate with respect to one argument; "
                             f"got wrt={wrt!r}")
        return numba_api.gradient_jvp(f, _indices(_target(f), wrt)[0], args)
    d = _grad_jvp(f, wrt, args)[1]

    def product(*args, **kwargs):
        return _call(d, args[:-1], kwargs, args[-1:])
    product.holds = d.holds
    return product


def hessian(f: Callable, wrt: Wrt | None = None, *, backend: str | None = None,
            argnums: int | tuple | None = None) -> Callable:
    """The Hessian of scalar function `f` with respect to argument `wrt` (shape
    `x.shape + x.shape`), exactly: one Hessian-vector product per element of `x`.

    >>> import numpy as np, s2sad
    >>> def rosenbrock(x):
    ...     return (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2
    >>> s2sad.hessian(rosenbrock)(np.array([1.0, 1.0]))
    array([[ 802., -400.],
           [-400.,  200.]])

    For `x` a tuple, list, dict, named tuple or dataclass, the Hessian is nested like
    JAX's: `H[k1][k2]`, of shape `x[k1].shape + x[k2].shape`, is the block of second
    derivatives with respect to `x[k1]` and `x[k2]` (a float for two numbers):

    >>> def energy(p):
    ...     return np.sum(p["w"] ** 2) * p["b"] + p["b"] ** 3
    >>> H = s2sad.hessian(energy)({"w": np.array([1.0, 2.0]), "b": 0.5})
    >>> H["w"]["w"], H["w"]["b"], H["b"]["b"]       # 2 b I, 2 w, 6 b
    (array([[1., 0.],
           [0., 1.]]), array([2., 4.]), 3.0)

    With a tuple `wrt`, the Hessian with respect to those arguments is nested the same
    way, as JAX's: the tuple of rows `(H[0], H[1], ...)`, `H[k][l]` the block of second
    derivatives with respect to argument `wrt[k]` then `wrt[l]` (`hvp` takes one
    argument):

    >>> def f(x, y):
    ...     return x * x * y
    >>> s2sad.hessian(f, wrt=(0, 1))(2.0, 3.0)     # ((2 y, 2 x), (2 x, 0))
    ((6.0, 4.0), (4.0, 0.0))

    With `backend="numba"`, each product is the numba backend's `hvp` (see
    docs/numba.md), for numbers and arrays; that is the default for a `@numba.njit`
    function `f`. `argnums` may stand for `wrt`, as in `grad`.
    """
    if variadic.takes_varargs(f):
        return variadic.Derivative(
            f, lambda g: hessian(g, wrt, backend=backend, argnums=argnums), extra=0)
    wrt = wrt_or_argnums(wrt, argnums)
    if _bound_to(f) is not None:
        return _of_method(hessian, f, wrt, backend=backend)
    backend = numba_api.default_backend(f, backend)

    def hess(*args, **kwargs):
        args, kwargs = _by_position(f, args, kwargs)
        if backend == "numba":
            product = _product(f, wrt, args, backend)      # (refuses a tuple wrt)
            like = _template(args[_indices(_target(f), wrt)[0]])
            return _assemble([product(*args, e, **kwargs) for e in _basis(like)], like, like)
        if isinstance(wrt, (tuple, list)):
            return _blocks(f, wrt, args, kwargs)
        i, d = _grad_jvp(f, wrt, args)
        like = _template(args[i])
        H = _batched_forward((f, i), (i,), [like], args, kwargs, arg_types_of(
            _target(f), args), False, True)
        if H is not None:
            return H
        return _assemble(_as_one_call(_target(f), [lambda e=e: _call(d, args, kwargs, (e,))
                                                   for e in _basis(like)]), like, like)
    return _mark_gradient(hess, f, wrt, "hessian")


def _blocks(f, wrt, args, kwargs):
    """The Hessian of `f` with respect to the arguments `wrt` (a tuple) at `args`, as
    JAX gives it: the tuple of rows, row k the tuple of blocks `H[k][l]`, the second
    derivatives with respect to argument `wrt[k]` then `wrt[l]`, of shape
    `x_k.shape + x_l.shape` (nested for a structure, as `jacfwd`'s). Column l is forward
    mode along argument `wrt[l]` over the gradient code with respect to all of them."""
    target = _target(f)
    indices = _indices(target, tuple(wrt))
    refuse_complex(target, indices, args)
    arg_types = arg_types_of(target, args)
    likes = tuple(_template(args[i]) for i in indices)
    H = _batched_forward((f, tuple(indices)), indices, likes, args, kwargs, arg_types,
                         True, True)
    if H is not None:
        return H
    columns = []
    for i, like in zip(indices, likes):
        d = _gradient_jvp(f, tuple(indices), (i,), arg_types)
        columns += [lambda d=d, e=e: _call(d, args, kwargs, (e,)) for e in _basis(like)]
    # each column is the tuple of the gradient's tangents, one per argument of `wrt`
    return _assemble(_as_one_call(target, columns), likes, likes)


def hessp(f: Callable, wrt: Wrt | None = None, *, backend: str | None = None,
          argnums: int | tuple | None = None) -> Callable:
    """The Hessian-vector product of scalar function `f` in SciPy's order of arguments:
    `hessp(f)(x, p, *args)` is the Hessian of `f(x, *args)` with respect to `x`, times
    `p`, as `scipy.optimize.minimize(f, x0, args=args, hessp=s2sad.hessp(f))` calls it
    (`hvp(f)(x, *args, p)` computes the same). With `wrt` (or `argnums`) the index `k`
    of another parameter, `p` follows that argument: `hessp(f, k)(a0, ..., ak, p, ...)`.
    `backend` is that of `hvp`.

    >>> import numpy as np, s2sad
    >>> from scipy.optimize import minimize
    >>> def f(x, a):
    ...     return np.sum(a * (x - 1.0) ** 2) + x[0] * x[1]
    >>> result = minimize(f, np.zeros(2), args=(2.0,), method="trust-ncg",
    ...                   jac=s2sad.grad(f), hessp=s2sad.hessp(f))
    >>> np.round(result.x, 6)                  # (4 I + [[0, 1], [1, 0]]) x = (4, 4)
    array([0.8, 0.8])
    """
    if variadic.takes_varargs(f):
        return variadic.Derivative(
            f, lambda g: hessp(g, wrt, backend=backend, argnums=argnums), extra=1)
    wrt = wrt_or_argnums(wrt, argnums)
    if isinstance(wrt, (tuple, list)):
        raise S2SADError("hessp differentiates with respect to one argument, as SciPy's x; "
                         f"got wrt={wrt!r}")
    product = hvp(f, wrt, backend=backend)

    def hessp_of(*args, **kwargs):
        k = _indices(_target(f), wrt)[0] + 1        # (the number of arguments before p)
        if len(args) < k + 1:
            raise S2SADError(f"hessp({getattr(f, '__name__', 'f')}) takes the arguments "
                             f"of {getattr(f, '__name__', 'f')} with the vector p after "
                             f"argument {k - 1} (SciPy's order: x, p, *args); got "
                             f"{len(args)} argument(s)")
        return product(*args[:k], *args[k + 1:], args[k], **kwargs)
    return _mark_gradient(hessp_of, f, wrt, "hessp")


def defjvp(prim: Callable, params: str, *templates: str | None,
           namespace: dict | None = None) -> None:
    """Register the forward-mode rule of `prim` (the counterpart of `defvjp`): for each
    parameter, a Python expression for its contribution to the tangent of the result,
    written over the parameter names, `t` (the tangent of that parameter) and `ans`
    (the result); `None` for no derivative. Other names are looked up in `namespace`.

    >>> import math, s2sad
    >>> def softplus(x):
    ...     return math.log1p(math.exp(x))
    >>> s2sad.defjvp(softplus, "x", "t / (1 + exp(-x))", namespace={"exp": math.exp})
    >>> def loss(w):
    ...     return softplus(3 * w)
    >>> s2sad.jvp(loss, (0.0,), (1.0,))
    (0.6931471805599453, 1.5)
    """
    registry.jvp(prim, params, *templates, namespace=namespace)
