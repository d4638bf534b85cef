"""Jacobians and Hessians in one batched pass: forward mode (`f_jvp`, or `g_grad_jvp` over
a gradient) batched along its tangents, one unit tangent per element of the inputs, or
reverse mode (`f_adjoint`) batched along its adjoint `y_bar`, one per element of the
output.

The primal computations read no tangent (or adjoint) and stay unbatched (see
ad/batching.py): the function runs once for the whole Jacobian, and what it draws from
a random generator, or changes in place, is drawn or changed once. `jacfwd`, `jacrev`,
`hessian` and `vmap` of `hvp` (jacobian_api.py, hessian_api.py, batching_api.py) call these; where the
batching transform refuses the derivative code (an `if` on a tangent), or would apply
a primitive item by item, they fall back to one pass per direction: as fast as before
this module, and as right (no warning: the user asked for no vmap; docs/vmap.md says
which code batches).

>>> import numpy as np
>>> unit_tangents([np.zeros(2), 0.0])       # two arguments, three directions
[array([[1., 0.],
       [0., 1.],
       [0., 0.]]), array([0., 0., 1.])]
"""
from __future__ import annotations

import inspect
import warnings
import weakref

import numpy as np

from . import driver
from .compilation import NoKey, arg_types_key, arg_types_of, call_key
from .errors import BatchingLoopWarning, InternalError, S2SADError
from .options import Options, Variant
from .rules import batching as batching_rules, pytrees, registry


def unit_tangents(likes):
    """For the templates `likes` (one per argument differentiated: a number, an array, or
    a structure whose leaves that carry no derivative are None, see
    jacobian_api._template), a batch of tangents for each: together, along their first
    axis, one unit tangent per element of all their leaves, in order."""
    sizes = [[0 if leaf is None else int(np.size(leaf)) for leaf in pytrees.leaves(like)]
             for like in likes]
    n, start, out = sum(map(sum, sizes)), 0, []
    for like, leaf_sizes in zip(likes, sizes):
        leaves, structure = pytrees.flatten(like)
        batch = []
        for leaf, size in zip(leaves, leaf_sizes):
            if leaf is None:        # (carries no derivative: a zero tangent)
                batch.append(np.zeros(n))
                continue
            units = np.zeros((n, size))
            units[start:start + size] = np.eye(size)
            batch.append(units.reshape((n,) + np.shape(leaf)))
            start += size
        out.append(pytrees.unflatten(structure, batch) if pytrees.is_structure(like)
                   else batch[0])
    return out


def blocks(parts, out_like, in_like, jacobian, forward=True):
    """The Jacobian from `parts`, the batched derivatives (like `out_like`, each leaf
    with the batch of directions first) along the unit tangents of `in_like`
    (`unit_tangents`) or, not `forward`, the batched adjoints (like `in_like`) along the
    unit adjoints of `out_like`, laid out by `jacobian` (jacobian_api._jacobian)."""
    return jacobian(out_like, in_like, _block_of(parts, out_like, in_like, forward))


def _offsets(like):
    out, start = [], 0
    for leaf in pytrees.leaves(like):
        size = 0 if leaf is None else int(np.size(leaf))
        out.append((start, start + size))
        start += size
    return out


def _floats(x):
    """`x` as an array of floats, or of complex numbers if it holds any (a complex
    output's derivative: its imaginary part is kept)."""
    if type(x) is np.ndarray and x.dtype == np.float64:
        return x
    x = np.asarray(x)
    return x if np.iscomplexobj(x) else x.astype(float, copy=False)


def _block(jac, shape):
    """The block of a number or an array with respect to another: `jac` (its rows or
    columns, laid out) as floats (or complex numbers) of `shape`, a number if it is one."""
    jac = _floats(jac).reshape(shape)
    if not jac.flags.writeable:     # (a view of the unit tangents, or of an argument)
        jac = jac.copy()
    if jac.ndim == 0:
        return complex(jac) if np.iscomplexobj(jac) else float(jac)
    return jac


def _block_of(parts, out_like, in_like, forward):
    """block(o, i, shape) for `_jacobian`: rows of the derivative of output leaf `o` along
    the directions of input leaf `i` (forward), or of input leaf `i` along those of
    output leaf `o` (reverse)."""
    leaves = pytrees.leaves(parts)
    ins, outs = _offsets(in_like), _offsets(out_like)

    def block(o, i, shape):
        if forward:
            lo, hi = ins[i]
            rows = _floats(leaves[o])[lo:hi]
            jac = np.moveaxis(rows.reshape((hi - lo,) + rows.shape[1:]), 0, -1)
        else:
            lo, hi = outs[o]
            jac = _floats(leaves[i])[lo:hi]
        return _block(jac, shape)
    return block


def forward(d, args, kwargs, likes, many, of_gradient, jacobian):
    """The Jacobian with respect to the arguments whose templates are `likes` (a tuple
    of them if `many`) by `d`, the compiled forward mode (`f_jvp`, or, `of_gradient`,
    `g_grad_jvp`, whose Jacobian is a Hessian), batched along one unit tangent per
    element; None where the batching transform refuses that code."""
    plan = forward_plan([d], d, args, kwargs, likes, many, of_gradient, jacobian)
    return None if plan is None else plan(args, kwargs, likes)


def forward_plan(codes, d, args, kwargs, likes, many, of_gradient, jacobian, indices=None):
    """The `Plan` of `forward` (`codes`: the compiled code `d` depends on, `d` last; the
    arguments differentiated are those at `indices`), or None where the batching
    transform refuses `d`."""
    items = {p: pytrees.map(lambda v: v[0], b)
             for p, b in zip(d.tangent_names, unit_tangents(likes))}
    code = d.fn
    params = list(inspect.signature(code).parameters)
    wrt = tuple(params.index(p) for p in d.tangent_names)   # (keyword-only: a loop)
    batched = _batched(code, wrt, arg_types_of(driver.target(code), args, {**kwargs, **items}))
    if batched is None:
        return None
    return Plan([*codes, batched], d.tangent_names, many, jacobian,
                None if of_gradient else 1, indices)


def reverse(target, indices, args, kwargs, arg_types, many, likes, jacobian):
    """The Jacobian of `target` with respect to the arguments `indices` by reverse mode:
    its gradient code (`f_value_and_grad`) batched along the output's adjoint, which
    starts as one unit adjoint per element of the output (ad/batching.py's seeded
    batching): one forward pass, one batched reverse pass. None where the batching
    transform refuses that code, and for arguments that are structures (whose
    adjoints the gradient code gives in their structure; jacrev then takes one pullback
    per row)."""
    plan = reverse_plan(target, indices, arg_types, many, likes, jacobian)
    return None if plan is None else plan(args, kwargs, likes)


def reverse_plan(target, indices, arg_types, many, likes, jacobian):
    """The `Plan` of `reverse`, or None where it gives None."""
    if any(pytrees.is_structure(like) for like in likes):
        return None
    try:
        code = driver.gradient_code(target, tuple(indices) if many else indices[0],
                                    arg_types, Variant.VALUE_AND_GRAD)
    except InternalError:
        raise
    except S2SADError:
        return None
    batched = _batched(code.fn, (), arg_types)
    if batched is None:
        return None
    return Plan([code, batched], None, many, jacobian, None, indices)


class Plan:
    """A Jacobian (or Hessian) by one batched pass, for the arguments of one kind it was
    made for: the compiled code batched (`codes[-1]`) and the codes it was made from,
    which a caller may keep and call again while `holds()` (the functions they resolved
    are still those they were compiled with; else the caller makes a new plan). Forward
    mode (`lead`, the names of the batched tangent parameters) passes one unit tangent
    per element of the templates `likes`, kept read-only for the next call of the same
    shapes (a pass that would write into them raises, and the caller loops); reverse
    mode (`lead` None) starts from the seed. `part` is the item of the result that
    holds the batched derivatives (1 for `f_jvp`'s `(y, y_dot)`), None for all of
    it; `indices`, those of the arguments differentiated."""

    def __init__(self, codes, lead, many, jacobian, part, indices):
        self.codes, self.fn, self.lead, self.many = codes, codes[-1].fn, lead, many
        self.jacobian, self.part, self.indices, self.units = jacobian, part, indices, {}

    def holds(self):
        return all(code.holds() for code in self.codes)

    def __call__(self, args, kwargs, likes):
        """The Jacobian at `args` and `kwargs` with respect to the arguments whose
        templates are `likes`, or None if the batched pass raises or warns (see
        `_run`)."""
        in_like = tuple(likes) if self.many else likes[0]
        if self.lead is None:
            out = _run(self.fn, args, kwargs)
            if out is None:
                return None
            y, rows = out
            if type(y) is np.ndarray and type(rows) is np.ndarray and not self.many:
                return _block(rows, y.shape[1:] + np.shape(in_like))
            return blocks(rows, pytrees.map(lambda v: v[0], y), in_like, self.jacobian,
                          forward=False)
        out = _run(self.fn, args, {**kwargs, **dict(zip(self.lead, self.tangents(likes)))})
        if out is None:
            return None
        parts = out if self.part is None else out[self.part]
        if type(parts) is np.ndarray and not self.many and not pytrees.is_structure(in_like):
            return _block(parts.transpose((*range(1, parts.ndim), 0)),     # (np.moveaxis)
                          parts.shape[1:] + np.shape(in_like))
        return blocks(parts, pytrees.map(lambda v: v[0], parts), in_like, self.jacobian)

    def tangents(self, likes):
        if any(pytrees.is_structure(like) for like in likes):
            return unit_tangents(likes)
        shapes = tuple(np.shape(like) for like in likes)
        units = self.units.get(shapes)
        if units is None:
            if len(self.units) > 8:
                self.units.clear()
            units = self.units[shapes] = unit_tangents(likes)
            for u in units:
                u.flags.writeable = False
            if len(shapes) == 1 and len(shapes[0]) == 1:    # (np.eye(n): see mark_units)
                batching_rules.mark_units(units[0])
        return units


class Plans:
    """The plans (`Plan`) of one Jacobian or Hessian (`jacfwd(f)`, `hessian(f)`, ...) by
    the kind of its arguments (compilation.call_key: their types, and arrays' dtypes
    and numbers of axes, as `vmap`'s): what a call looks up instead of reading the
    arguments' types (compilation.arg_types_of) and looking the compiled code up, and
    its batched code, at each call. `make(args, kwargs)` makes the plan for arguments
    of a new kind, or gives None (then those calls take the caller's general path);
    a plan whose code no longer holds (a function it resolved was redefined) is made
    again."""

    def __init__(self, make):
        self.make, self.by_kind = make, {}

    def get(self, args, kwargs):
        """The plan for a call with `args` and `kwargs`, or None: none for arguments of
        their kind, or arguments of a kind `call_key` does not read (a user's object,
        whose fields the compilation reads)."""
        try:
            key = (registry.version, *map(call_key, args))
            if kwargs:
                key += tuple(sorted((k, call_key(v)) for k, v in kwargs.items()))
        except NoKey:
            return None
        plan = self.by_kind.get(key, self)      # (self: not looked up yet)
        if plan is self or (plan is not None and not plan.holds()):
            if len(self.by_kind) > 16:
                self.by_kind.clear()
            plan = self.by_kind[key] = self.make(args, kwargs)
        return plan


def _batched(code, wrt, arg_types):
    """The batched derivative of `code`, or None where the batching transform refuses it,
    would apply a primitive of it item by item (the loop over the directions is as fast,
    and warns nothing), or leaves a batched list, tuple or dict (`BatchingResult.plain`).
    A refusal is remembered for `code` (the transform is not tried at each call)."""
    key = (registry.version, wrt, arg_types_key(arg_types))
    refused = _refused.setdefault(code, set())
    if key in refused:
        return None
    made = _tried(code, wrt, arg_types)
    if made is None:
        refused.add(key)
    return made


_refused = weakref.WeakKeyDictionary()      # {code: the keys `_batched` refused it for}


def _tried(code, wrt, arg_types):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            made = driver.derivative(code, wrt, arg_types,
                                     Options(Variant.BATCHED, guard=False))
        except InternalError:
            raise
        except S2SADError:
            return None
    if any(issubclass(w.category, BatchingLoopWarning) for w in caught):
        return None
    for w in caught:            # (the others, as the compilation gave them)
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return made if made.batching.plain else None


def _run(fn, args, kwargs):
    """`fn(*args, **kwargs)`, the batched pass, or None if it raises or warns: the caller
    then takes one pass per direction, which raises or warns as each direction does (the
    batched pass runs a warning's or an exception's line for every direction at once)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out = fn(*args, **kwargs)
        except Exception:       # (the passes per direction raise it again, located)
            return None
    return None if caught else out
