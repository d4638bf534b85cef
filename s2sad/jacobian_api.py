"""Jacobians: jacfwd and jacrev, and the layout of Jacobians of structures (which the
Hessians of hessian_api.py share)."""
from __future__ import annotations

from typing import Callable

import numpy as np

from . import batched_jacobians as batched
from . import driver, variadic
from .compilation import Wrt, arg_types_of, refuse_complex_but_holomorphic, wrt_or_argnums
from .errors import S2SADError, warn_unconnected
from .forward_api import (_as_one_call, _bound_to, _by_position, _call, _gradient,
                          _gradient_code, _gradient_jvp, _of_method, _target, _wrt,
                          compiled, split_aux)
from .numba_api import NumbaJvp, check_backend
from .options import Options
from .rules import pytrees, runtime


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
           has_aux: bool = False, holomorphic: bool = False,
           backend: str | None = None) -> Callable:
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

    With `holomorphic=True`, `f` is a complex function of complex numbers or arrays and
    the Jacobian its complex derivative, as JAX's (see docs/complex.md).

    With `backend="numba"`, each column is forward mode's `f_jvp` compiled by
    `numba.njit`, along one unit tangent (see docs/numba.md), for numbers and arrays.
    """
    if backend is not None and check_backend(backend) == "numba":
        return _numba_jacfwd(f, wrt_or_argnums(wrt, argnums), has_aux, holomorphic)
    if variadic.takes_varargs(f):
        return variadic.Derivative(
            f, lambda g: jacfwd(g, wrt, argnums=argnums, has_aux=has_aux), extra=0)
    wrt = wrt_or_argnums(wrt, argnums)
    if _bound_to(f) is not None:
        return _of_method(jacfwd, f, wrt, has_aux=has_aux)

    def plan(args, kwargs):
        gradient = _gradient(f)
        target = _target(f if gradient is None else gradient[0])
        many, indices = _wrt(target, wrt)
        refuse_complex_but_holomorphic(target, indices, args, False, "jacfwd")
        return _forward_plan(f if gradient is None else gradient, indices, args, kwargs,
                             arg_types_of(target, args), many, gradient is not None)
    plans = batched.Plans(plan)

    def jacobian(*args, **kwargs):
        args, kwargs = _by_position(f, args, kwargs)
        known = None if has_aux or holomorphic else plans.get(args, kwargs)
        if known is not None:
            jac = known(args, kwargs, [_template(args[i]) for i in known.indices])
            if jac is not None:
                return jac
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

    def plan(args, kwargs):
        target = _target(f)
        many, indices = _wrt(target, wrt)
        refuse_complex_but_holomorphic(target, indices, args, False, "jacrev")
        return batched.reverse_plan(target, indices, arg_types_of(target, args), many,
                                    [_template(args[i]) for i in indices], _jacobian)
    plans = batched.Plans(plan)

    def jacobian(*args, **kwargs):
        args, kwargs = _by_position(f, args, kwargs)
        known = None if has_aux or holomorphic else plans.get(args, kwargs)
        if known is not None:
            jac = known(args, kwargs, [_template(args[i]) for i in known.indices])
            if jac is not None:
                return jac
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


def _forward_plan(f, indices, args, kwargs, arg_types, many, of_gradient):
    """The batched_jacobians.Plan of `_batched_forward` for arguments like `args` (its
    `indices` set), or None where the batching transform refuses the code."""
    if of_gradient:
        codes = [_gradient_code(_target(f[0]), f[1], arg_types)]
        d = _gradient_jvp(*f, indices, arg_types)
    else:
        codes, d = [], compiled(f, indices, arg_types)
    return batched.forward_plan([*codes, d], d, args, kwargs,
                                [_template(args[i]) for i in indices], many, of_gradient,
                                _jacobian, indices)


def _numba_jacfwd(f, wrt, has_aux, holomorphic):
    """`jacfwd(f, wrt, backend="numba")`: the columns of an array argument in one pass,
    the primal once and each tangent statement once per direction (numba_directions),
    else one column a unit tangent, each by `f_jvp` compiled by Numba once for the
    arguments' kinds (numba_api.NumbaJvp)."""
    for given, name in ((has_aux, "has_aux=True"), (holomorphic, "holomorphic=True"),
                        (_gradient(f) is not None, "a gradient (forward over reverse)"),
                        (variadic.takes_varargs(f), "a function of *args"),
                        (_bound_to(f) is not None, "a bound method")):
        if given:
            raise S2SADError(f'jacfwd(f, backend="numba") of {getattr(f, "__name__", f)}: '
                             f"{name} is the Python backend's (jacfwd without backend=)")

    def plan(args, kwargs):
        many, indices = _wrt(_target(f), wrt)
        return _NumbaColumns(many, [NumbaJvp(f, args, (i,), kwargs) for i in indices],
                             indices)
    plans = batched.Plans(plan)

    def jacobian(*args, **kwargs):
        args, kwargs = _by_position(f, args, kwargs)
        columns = plans.get(args, kwargs) or plan(args, kwargs)
        likes = [_template(args[i]) for i in columns.indices]
        value, cols = None, []
        for code, like in zip(columns.codes, likes):
            # (all at once where it can; for one argument, the Jacobian itself where
            # the columns can be written into it in Numba code)
            together = code.columns(args, like, kwargs, stacked=not columns.many)
            if together is not None and isinstance(together[1], np.ndarray):
                return together[1]
            if together is not None:
                value, along = together
                cols.extend(along)
                continue
            for e in _basis(like):
                value, column = code(args, (e,), kwargs)
                cols.append(column)
        if not cols:
            value = f(*args, **kwargs)
        return _assemble(cols, cols[0] if cols else value,
                         tuple(likes) if columns.many else likes[0])
    jacobian.__name__ = f"jacfwd_{getattr(f, '__name__', 'f')}"
    jacobian.s2s_made_by = "jacfwd"
    return jacobian


class _NumbaColumns:
    """The `NumbaJvp` of each argument a numba backend's `jacfwd` differentiates (a
    batched_jacobians.Plans plan)."""

    def __init__(self, many, codes, indices):
        self.many, self.codes, self.indices = many, codes, indices

    def holds(self):
        return all(code.holds() for code in self.codes)
