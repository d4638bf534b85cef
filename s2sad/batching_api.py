"""`vmap`: a function over a batch of its arguments, compiled source to source.

The function (or the gradient code `grad(f)` runs) goes through the batching transform
(ad/batching.py) for the arguments that carry a batch axis; that code takes each such
argument with its batch axis first and gives each result with its batch axis first,
and `vmap` moves the axes where `in_axes` and `out_axes` say.
"""
from __future__ import annotations

import functools
import inspect
import warnings
import weakref
from typing import Any, Callable

import numpy as np

from . import api, driver, forward_api
from .compilation import NoKey, arg_types_of, call_key
from .errors import BatchingLoopWarning, S2SADError, outside_stacklevel
from .forward_api import gradient_of
from .frontend import gradients
from .frontend.source import function_from_source, identifier
from .hessian_api import hvp
from .options import Options, Variant
from .ad.batching import GENERATORS
from .rules import pytrees, registry, runtime


def vmap(f: Callable, in_axes: Any = 0, out_axes: Any = 0) -> Callable:
    """`f` over a batch: `vmap(f)(xs)` is `f` of each item of `xs` (along axis 0), the
    results stacked along axis 0, computed by one batched function that s2sad writes
    (JAX's `vmap`).

    `in_axes` gives, for each positional argument, the axis its batch runs along, or
    None for an argument every item shares: an int or None for all of them, or a tuple
    with one entry per argument, each an int, None, or a structure like the argument's
    (a dict, list or tuple) of them. `out_axes`, likewise for the result, gives where
    each result's batch axis goes (None: a result that is the same for every item).

    >>> import numpy as np
    >>> import s2sad
    >>> def affine(w, x):
    ...     return np.tanh(np.dot(x, w))
    >>> w, xs = np.array([1.0, -1.0]), np.array([[0.5, 0.25], [1.0, 2.0], [0.0, 1.0]])
    >>> batched = s2sad.vmap(affine, in_axes=(None, 0))
    >>> np.allclose(batched(w, xs), [affine(w, x) for x in xs])
    True

    It composes with `grad` and `value_and_grad` (the batching transform applied to the
    gradient code): per-example gradients are

    >>> def loss(w, x, y):
    ...     return (np.dot(x, w) - y) ** 2
    >>> per_example = s2sad.vmap(s2sad.grad(loss), in_axes=(None, 0, 0))
    >>> ys = np.array([1.0, 0.0, 2.0])
    >>> np.allclose(per_example(w, xs, ys),
    ...             [2 * (np.dot(x, w) - y) * x for x, y in zip(xs, ys)])
    True

    with `hvp` and `hessian` (each item's Hessian, see docs/vmap.md), and with itself
    (`vmap(vmap(f))`, a batch of batches). A primitive without a
    batching rule is applied item by item (a `BatchingLoopWarning` says where); an `if`
    whose test differs across the batch runs both branches and chooses, a `while` runs
    until every item is done, where they may (see docs/vmap.md); other such `if`s and
    `while`s are refused, naming the line."""
    plans = {}      # call_key(args) -> the _Plan for arguments like them
    nested = getattr(f, "s2s_vmap", None) is not None
    hessians = {}   # (which arguments are batched, call_key(args)) -> _hessians' plan

    @functools.wraps(f)
    def batched(*args):
        if nested:
            return _call(f, in_axes, out_axes, args)
        if gradient_of(f) is not None and getattr(f, "s2s_made_by", None) == "hessian":
            return _hessians(f, in_axes, out_axes, args, hessians)
        try:
            key = (registry.version, *map(call_key, args))
        except NoKey:          # (an argument of a kind the key does not read)
            return _call(f, in_axes, out_axes, args)
        plan = plans.get(key)
        if plan is None or not plan.holds():
            if len(plans) > 16:
                plans.clear()
            plan = plans[key] = _plan(f, in_axes, out_axes, args)
        return plan(args)
    batched.s2s_vmap = (f, in_axes, out_axes)
    batched.s2s_made_by = "vmap"
    return batched


class _Plan:
    """A call of `vmap(f, in_axes, out_axes)` for arguments of one kind (`call_key`):
    the compiled batched code (`code`), and how the arguments and results move. Where
    every batched argument is an array batched along axis 0 and `out_axes` is 0 (`direct`),
    a call checks the batch sizes and calls the code on the arguments as they are."""

    def __init__(self, codes, axes, out_axes, direct, batched):
        self.codes, self.fn, self.axes, self.out_axes = codes, codes[-1].fn, axes, out_axes
        self.direct, self.batched = direct, batched

    def holds(self):
        """Whether the code it calls (and the gradient code batched) is still that of
        the functions as they are now (see CompiledDerivative.holds)."""
        return all(code.holds() for code in self.codes)

    def __call__(self, args):
        if not self.direct:
            n, moved, _ = _batch_first(args, self.axes)
            return _placed(self.fn(*moved), self.out_axes, n)
        n = None
        for i in self.batched:
            m = len(args[i])
            if n is None:
                n = m
            elif m != n:
                raise S2SADError(f"vmap: the batched arguments have batches of different "
                                 f"sizes ({n} and {m})")
        out = self.fn(*args)
        if type(out) is np.ndarray:
            return out.copy() if out.strides[0] == 0 and n > 1 else out
        return _placed(out, 0, n)


class _Loop(_Plan):
    """A call of `vmap(f, ...)` that runs `f` of each item in turn (`_looped` says why:
    `f` draws from a random generator, or is given a complex array). Its codes are
    those it checked (`holds`)."""

    def __init__(self, f, codes, axes, out_axes):
        self.f, self.codes, self.axes, self.out_axes = f, codes, axes, out_axes

    def __call__(self, args):
        n, moved, batched = _batch_first(args, self.axes)
        outs = [self.f(*[pytrees.map(lambda v: v[k], a) if b else a
                         for a, b in zip(moved, batched)]) for k in range(n)]
        leaves = [pytrees.flatten(out)[0] for out in outs]
        stacked = pytrees.unflatten(pytrees.flatten(outs[0])[1],
                                    [np.stack(column) for column in zip(*leaves)])
        return _placed(stacked, self.out_axes, n)


def _looped(f, why, codes, axes, out_axes):
    """The `_Loop` of `f`, after a `BatchingLoopWarning` at the user's line saying `why`."""
    warnings.warn(BatchingLoopWarning(
        f"vmap runs {getattr(f, '__name__', 'the function')} item by item, in a Python "
        f"loop: {why}"), stacklevel=outside_stacklevel())
    return _Loop(f, codes, axes, out_axes)


def _parameter(f, i):
    """The name of `f`'s positional parameter `i` (its position where it has none)."""
    try:
        names = list(inspect.signature(f).parameters)
    except (TypeError, ValueError):
        names = []
    return repr(names[i]) if i < len(names) and names[i] not in ("args", "kwargs") else str(i)


def _plan(f, in_axes, out_axes, args):
    axes = _axes_per_argument(in_axes, args)
    _, moved, batched = _batch_first(args, axes)
    items = [pytrees.map(lambda v: v[0], a) if b else a for a, b in zip(moved, batched)]
    wrt = tuple(i for i, b in enumerate(batched) if b)
    direct = out_axes == 0 and type(out_axes) is int and all(
        ax is None or (ax == 0 and type(ax) is int and type(a) is np.ndarray)
        for a, ax in zip(args, axes))
    complex_ = [i for i, a in enumerate(args) if any(
        np.iscomplexobj(v) for v in pytrees.leaves(a) if isinstance(v, np.ndarray))]
    if complex_:        # (the derivatives a batched function calls take them as real)
        return _looped(f, f"its argument {_parameter(f, complex_[0])} holds a complex "
                       "array, which the batching transform does not batch yet", [], axes,
                       out_axes)
    codes = _batched_code(f, items, wrt)
    drawn = [line for code in codes if code.batching for line in code.batching.draws]
    shared = [i for i, (a, b) in enumerate(zip(args, batched))
              if not b and any(isinstance(v, GENERATORS) for v in pytrees.leaves(a))]
    if drawn or shared:
        why = (f"{drawn[0]}: it draws from a random generator" if drawn else
               f"its argument {_parameter(f, shared[0])} is a random generator, which it "
               "may draw from")
        return _looped(f, f"{why}, and a loop draws anew for each item where one batched "
                       "call would draw once for all of them (pass the batch's draws as a "
                       "batched argument instead)", codes, axes, out_axes)
    return _Plan(codes, axes, out_axes, direct, wrt)


def _call(f, in_axes, out_axes, args):
    inner = getattr(f, "s2s_vmap", None)
    if inner is not None:
        return _nested(inner, in_axes, out_axes, args)
    return _plan(f, in_axes, out_axes, args)(args)


def _batched_code(f, items, wrt):
    """The compiled batched function of `f` (or of the gradient code a `grad` or
    `value_and_grad` of s2sad runs), for arguments like `items`, batched along `wrt`: a
    list of `CompiledDerivative`s, the code batched (if it is s2sad's) and the batched
    code last."""
    options = Options(Variant.BATCHED, guard=False)
    gradient = gradient_of(f)
    kind = getattr(f, "variant", None)
    if gradient is not None and kind in (Variant.GRAD, Variant.VALUE_AND_GRAD):
        primal, grad_wrt = gradient
        target = driver.target(primal)
        arg_types = arg_types_of(target, items)
        code = driver.gradient_code(target, grad_wrt, arg_types, kind)
        return [code, driver.derivative(code.fn, wrt, arg_types, options)]
    if gradient is not None and getattr(f, "s2s_made_by", None) == "hvp":
        return _hvp_code(f, items, wrt, options)
    if getattr(f, "s2s_derivative", False) or getattr(f, "s2s_made_by", None) is not None:
        raise S2SADError(f"vmap batches functions, grad, value_and_grad, hvp and hessian; "
                         f"{getattr(f, '__name__', f)!r} is another derivative of s2sad's")
    target = driver.target(f)
    return [driver.derivative(target, wrt, arg_types_of(target, items), options)]


def _hvp_code(f, items, wrt, options):
    """`_batched_code` of `hvp(primal)`, called as `(*args, v)`: the forward mode of the
    gradient code (`g_grad_jvp(*args, x_dot)`, whose parameters are those of the call)
    batched along `wrt` (several vectors `v`: Hessian-vector products in one pass)."""
    primal, grad_wrt = gradient_of(f)
    target = driver.target(primal)
    *args, _ = items
    if len(args) != len(inspect.signature(target).parameters):
        raise S2SADError(f"vmap of hvp({target.__name__}) needs every argument of "
                         f"{target.__name__} given by position")
    i = forward_api.wrt_indices(target, grad_wrt)[0]
    code = forward_api._gradient_jvp(primal, i, (i,), arg_types_of(target, args))
    arg_types = arg_types_of(driver.target(code.fn), items)
    return [code, driver.derivative(code.fn, wrt, arg_types, options)]


def _hessians(f, in_axes, out_axes, args, made):
    """`vmap(hessian(primal, wrt), in_axes, out_axes)(*args)`: the Hessian of each item,
    its columns the Hessian-vector products along the unit vectors of argument `wrt`:
    `vmap` of `hvp(primal, wrt)` along the batch and those vectors at once (each item
    repeated once per unit vector), one batched pass of the batch's size times the
    size of that argument. `made` keeps its plans by which arguments are batched and
    the arguments' kinds (see `call_key`)."""
    primal, wrt = gradient_of(f)
    target = driver.target(primal)
    if isinstance(wrt, (tuple, list)):
        raise S2SADError(f"vmap of hessian({target.__name__}) differentiates with respect "
                         f"to one argument; got wrt={wrt!r}")
    i = forward_api.wrt_indices(target, wrt)[0]
    n, moved, batched = _batch_first(args, _axes_per_argument(in_axes, args))
    x = moved[i][0] if batched[i] else moved[i]
    if pytrees.is_structure(x):
        raise S2SADError(f"vmap of hessian({target.__name__}) takes the Hessian with "
                         "respect to a number or an array, not a structure")
    shape = np.shape(x)
    d = int(np.prod(shape, dtype=int))
    repeated = [pytrees.map(lambda v: np.repeat(v, d, axis=0), a) if b else a
                for a, b in zip(moved, batched)]
    units = np.tile(np.eye(d).reshape((d,) + shape), (n,) + (1,) * len(shape))
    try:
        key = (registry.version, *batched, *map(call_key, args))
    except NoKey:           # (an argument of a kind the key does not read)
        key = None
    plan = made.get(key, made)      # (made: not looked up yet)
    if plan is made or (plan is not None and not plan.holds()):
        plan = _hessian_plan(primal, wrt, batched, [*repeated, units])
        if key is not None:
            if len(made) > 16:
                made.clear()
            made[key] = plan
    columns = None if plan is None else plan([*repeated, units])
    if columns is None:     # the Hessian of each item, as the loop of hessian gives it
        H = np.stack([f(*[pytrees.map(lambda v: v[k], a) if b else a
                          for a, b in zip(moved, batched)]) for k in range(n)])
    else:
        columns = np.asarray(columns).reshape((n, d) + shape)
        H = np.moveaxis(columns, 1, -1).reshape((n,) + shape + shape)
    return _placed(H, out_axes, n)


def _hessian_plan(primal, wrt, batched, args):
    """The `_Plan` of `vmap(hvp(primal, wrt))` for `_hessians`' arguments `args` (the
    vectors last), compiled, not run; None where the batched code would apply a
    primitive item by item (the items are then the batch's size times the size of the
    argument, and a call that draws from a generator, say, would draw for each: each
    item's Hessian is taken in turn instead, as a loop of hessian takes it)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        plan = _plan(hvp(primal, wrt), tuple(0 if b else None for b in batched) + (0,), 0,
                     args)
    looped = [w for w in caught if issubclass(w.category, BatchingLoopWarning)]
    if looped or isinstance(plan, _Loop):
        warnings.warn(BatchingLoopWarning(
            f"vmap of hessian({driver.target(primal).__name__}) takes each item's Hessian "
            f"in turn: {str(looped[0].message).split(': ', 1)[-1]}"), stacklevel=outside_stacklevel())
        return None
    for w in caught:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return plan


def _axes_per_argument(in_axes, args):
    if isinstance(in_axes, (int, type(None))):
        return [in_axes] * len(args)
    if not isinstance(in_axes, (tuple, list)) or len(in_axes) != len(args):
        raise S2SADError(f"vmap: in_axes={in_axes!r} needs an int, None, or one entry per "
                         f"argument ({len(args)} given)")
    return list(in_axes)


def _leaf_axes(spec, value):
    """The axis of each leaf of `value`, from `spec`: an int or None for all of them, or
    a structure like `value`'s."""
    leaves, structure = pytrees.flatten(value)
    if isinstance(spec, (int, type(None))):
        return [spec] * len(leaves)
    spec_leaves, spec_structure = pytrees.flatten(spec)
    if len(spec_leaves) != len(leaves) or repr(spec_structure) != repr(structure):
        raise S2SADError(f"vmap: the axes {spec!r} do not match the structure of the "
                         f"argument, {structure!r}")
    return spec_leaves


def _batch_first(args, axes):
    """`(n, args, batched)`: the size of the batch, the arguments with each batched leaf's
    axis first (a leaf of a batched argument with axis None repeated along it), and
    which arguments are batched."""
    n, moved, batched = None, [], []
    for a, spec in zip(args, axes):
        leaf_axes = _leaf_axes(spec, a)
        leaves, structure = pytrees.flatten(a)
        if all(ax is None for ax in leaf_axes):
            moved.append(a)
            batched.append(False)
            continue
        firsts = []
        for v, ax in zip(leaves, leaf_axes):
            if ax is None:
                firsts.append(None)
                continue
            v = np.moveaxis(np.asarray(v), ax, 0)
            if n is not None and len(v) != n:
                raise S2SADError(f"vmap: the batched arguments have batches of different "
                                 f"sizes ({n} and {len(v)})")
            n = len(v)
            firsts.append(v)
        leaves = [np.broadcast_to(v, (n,) + np.shape(v)) if f is None else f
                  for v, f in zip(leaves, firsts)]
        moved.append(pytrees.unflatten(structure, leaves))
        batched.append(True)
    if n is None:
        raise S2SADError("vmap: no argument is batched (in_axes are all None)")
    return n, moved, batched


def _placed(out, out_axes, n):
    """The results of the batched code (each leaf's batch axis first) with their batch
    axes where `out_axes` says."""
    leaves, structure = pytrees.flatten(out)
    axes = _leaf_axes(out_axes, out)
    placed = []
    for v, ax in zip(leaves, axes):
        v = np.asarray(v)
        shared = v.strides[0] == 0 or n == 1
        if ax is None:
            if not shared:
                raise S2SADError("vmap: out_axes is None for a result that differs "
                                 "across the batch")
            placed.append(v[0])
            continue
        placed.append(np.moveaxis(np.array(v) if shared else v, 0, ax))
    return pytrees.unflatten(structure, placed)


def _nested(inner, in_axes, out_axes, args):
    """`vmap(vmap(f, inner_in, inner_out), in_axes, out_axes)(*args)`: both batches as one
    batch of their product's size (`n * m`), then split again."""
    f, inner_in, inner_out = inner
    n, moved, batched = _batch_first(args, _axes_per_argument(in_axes, args))
    items = [pytrees.map(lambda v: v[0], a) if b else a for a, b in zip(moved, batched)]
    inner_axes = _axes_per_argument(inner_in, items)
    m = None
    for a, b, item, spec in zip(moved, batched, items, inner_axes):
        for v, ax in zip(pytrees.flatten(item)[0], _leaf_axes(spec, item)):
            if ax is not None:
                m = np.shape(v)[ax]
    if m is None:
        raise S2SADError("vmap: the inner vmap batches no argument")
    merged, merged_axes = [], []
    for a, b, item, spec in zip(moved, batched, items, inner_axes):
        leaf_axes = _leaf_axes(spec, item)
        leaves, structure = pytrees.flatten(a)
        if not b and all(ax is None for ax in leaf_axes):
            merged.append(a)
            merged_axes.append(None)
            continue
        both = []
        for v, ax in zip(leaves, leaf_axes):
            v = np.asarray(v) if b else np.broadcast_to(v, (n,) + np.shape(v))
            if ax is None:
                v = np.broadcast_to(v[:, None], (n, m) + v.shape[1:])
            else:
                v = np.moveaxis(v, ax + 1 if ax >= 0 else ax, 1)
            both.append(v.reshape((n * m,) + v.shape[2:]))
        merged.append(pytrees.unflatten(structure, both))
        merged_axes.append(0)
    out = _call(f, tuple(merged_axes), 0, merged)
    leaves, structure = pytrees.flatten(out)
    axes = _leaf_axes(inner_out, out)
    if any(ax is None for ax in axes):
        raise S2SADError("vmap: an inner vmap's out_axes None is not supported in a vmap "
                         "of a vmap")
    leaves = [np.moveaxis(np.reshape(v, (n, m) + np.shape(v)[1:]), 1,
                          ax + 1 if ax >= 0 else ax) for v, ax in zip(leaves, axes)]
    return _placed(pytrees.unflatten(structure, leaves), out_axes, n)


class BatchedCall(api.custom_vjp):
    """`vmap(f, in_axes, out_axes)(x, ...)` called in differentiated code (made by
    gradient_calls from `loop`, the loop over the items frontend.gradients writes), a
    custom rule in both modes: `fwd` runs the batched function, `bwd` the batched
    gradient of f's cotangent function (`vmap(grad(cotangent))`, each item's pullback of
    its cotangent in one pass), the adjoints of the arguments the batch shares summed
    over it, and `rule` the batched jvp of f. `fwd` and `bwd` have batched forward rules
    too (forward over reverse: `hvp`, `hessian`), and a source that reverse mode reads,
    through the loop (`_Rule`). Where the batching transform refuses a derivative's code,
    they run the loop's."""

    s2s_custom = ("vjp", "jvp")

    def __init__(self, loop):
        super().__init__(loop)
        f, params, extras, in_axes, out_axes, where = loop.s2s_vmap_of
        axes = tuple(in_axes) + (None,) * len(extras)
        outs = out_axes if isinstance(out_axes, tuple) else (out_axes,)
        batched = vmap(f, axes, out_axes)
        cotangent = _cotangent(f, len(axes), len(outs), isinstance(out_axes, tuple))
        gradients_of = {}     # wrt -> vmap of cotangent's gradient with respect to wrt

        def fwd(*args):
            return _one_per_axis(batched(*args), out_axes, where), args

        def bwd(args, g):
            wrt = tuple(i for i, a in enumerate(args) if runtime.carries_derivative(a))
            if not wrt:
                return (None,) * len(args)
            if wrt not in gradients_of:
                gradients_of[wrt] = vmap(api.grad(cotangent, wrt=wrt), axes + outs, tuple(
                    0 if axes[i] is None else axes[i] for i in wrt))
            try:
                with warnings.catch_warnings():     # (of s2sad's own code: the numbers hold)
                    warnings.simplefilter("ignore", BatchingLoopWarning)
                    found = gradients_of[wrt](*args, *(g if len(outs) > 1 else (g,)))
            except S2SADError:      # (a gradient code the batching transform refuses)
                found = driver.derivative(loop, wrt, arg_types_of(loop, args)).fn(
                    *args)[1](g)
                found = tuple(found) if isinstance(found, tuple) else (found,)
            else:
                found = tuple(np.sum(v, axis=0) if axes[i] is None else v
                              for i, v in zip(wrt, found))
            adjoints = dict(zip(wrt, found))
            return tuple(adjoints.get(i) for i in range(len(args)))
        jvps = {}     # wrt -> vmap of f's jvp along the arguments wrt

        def rule(primals, tangents):
            wrt = tuple(i for i, (a, t) in enumerate(zip(primals, tangents))
                        if t is not None and runtime.carries_derivative(a))
            if not wrt:
                value = _one_per_axis(batched(*primals), out_axes, where)
                return value, pytrees.zeros_like(value)
            if wrt not in jvps:
                jvps[wrt] = vmap(gradients.jvp_function(f, wrt, forward_api.jvp),
                                 axes + tuple(axes[i] for i in wrt), (out_axes, out_axes))
            try:
                value, tangent = jvps[wrt](*primals, *(tangents[i] for i in wrt))
                return _one_per_axis(value, out_axes, where), tangent
            except S2SADError:      # (a tangent code the batching transform refuses)
                return forward_api.jvp(loop, tuple(primals), tuple(
                    t if i in wrt else None for i, t in enumerate(tangents)))
        pairs = {}    # wrt -> vmap of the jvp of cotangent's gradient with respect to wrt

        def fwd_rule(primals, tangents):
            value, value_dot = rule(primals, tangents)
            return (value, tuple(primals)), (value_dot, tuple(tangents))

        def bwd_rule(primals, tangents):
            try:
                return batched_bwd_rule(primals, tangents)
            except S2SADError:      # (a derivative's code the batching transform refuses)
                (args, g), (dots, g_dot) = primals, tangents
                dots = tuple(pytrees.zeros_like(a) if d is None else d
                             for a, d in zip(args, dots))
                g_dot = pytrees.zeros_like(g) if g_dot is None else g_dot
                return forward_api.jvp(self.bwd.primal, (tuple(args), g), (dots, g_dot))

        def batched_bwd_rule(primals, tangents):
            (args, g), (dots, g_dot) = primals, tangents
            wrt = tuple(i for i, a in enumerate(args) if runtime.carries_derivative(a))
            if not wrt:
                return (None,) * len(args), (None,) * len(args)
            per = tuple(0 if axes[i] is None else axes[i] for i in wrt)
            if wrt not in pairs:
                along = wrt + tuple(range(len(args), len(args) + len(outs)))
                standing = gradients.called_gradient(api.grad(cotangent, wrt=wrt))[0]
                pairs[wrt] = vmap(gradients.jvp_function(standing, along, forward_api.jvp),
                                  axes + outs + tuple(axes[i] for i in wrt) + outs,
                                  (per, per))
            gs, g_dots = (g, g_dot) if len(outs) > 1 else ((g,), (g_dot,))
            g_dots = tuple(pytrees.zeros_like(b) if d is None else d
                           for b, d in zip(gs, g_dots))
            dots = tuple(pytrees.zeros_like(args[i]) if dots[i] is None else dots[i]
                         for i in wrt)
            with warnings.catch_warnings():     # (of s2sad's own code: the numbers hold)
                warnings.simplefilter("ignore", BatchingLoopWarning)
                found, found_dot = pairs[wrt](*args, *gs, *dots, *g_dots)
            summed = [tuple(np.sum(v, axis=0) if axes[i] is None else v
                            for i, v in zip(wrt, part)) for part in (found, found_dot)]
            return tuple(tuple(dict(zip(wrt, part)).get(i) for i in range(len(args)))
                         for part in summed)
        name = loop.__name__
        for helper, role in ((fwd, "fwd"), (bwd, "bwd"), (rule, "jvp")):
            helper.__name__ = helper.__qualname__ = f"{name}_{role}"
        self.rule = rule
        # (forward over reverse-mode code that calls them runs their batched rules;
        # reverse mode over it reads their source, which calls the loop)
        self.fwd = _Rule(fwd, fwd_rule, _loop_source(loop, len(axes), "fwd"))
        self.bwd = _Rule(bwd, bwd_rule, _loop_source(loop, len(axes), "bwd"))

    @classmethod
    def of(cls, loop):
        """The one BatchedCall of the loop `loop` (see frontend.gradients.vmap_function)."""
        made = cls.__dict__.get("_made")
        if made is None:
            made = cls._made = weakref.WeakKeyDictionary()
        if loop not in made:
            made[loop] = cls(loop)
        return made[loop]


class _Rule:
    """`fast`, a helper of BatchedCall's rule (its `fwd`, `bwd`), as a custom_jvp of
    s2sad's own: forward mode over code that calls it calls `rule(primals, tangents)`,
    reverse mode reads `primal`, a Python function that computes the same through the
    loop (see `_loop_source`)."""

    s2s_custom = ("jvp",)

    def __init__(self, fast, rule, primal):
        self.fast, self.primal = fast, primal
        self.__name__ = self.__qualname__ = fast.__name__

        def jvp(primals, tangents):
            return rule(primals, tangents)
        jvp.__name__ = jvp.__qualname__ = f"{fast.__name__}_jvp"
        self.rule = jvp

    def __call__(self, *args):
        return self.fast(*args)


def _loop_source(loop, n, role):
    """The `fwd` (role) or `bwd` of BatchedCall written with `loop`, of `n` arguments, as
    Python that s2sad reads: `fwd(a0, ...)` returns the loop's value and its arguments,
    `bwd(residuals, g)` the loop's pullback of `g`."""
    args = ", ".join(f"a{k}" for k in range(n))
    if role == "fwd":
        body = f"    return _s2s_loop({args}), ({args},)\n"
    else:
        body = (f"    {args}, = residuals\n"
                f"    y, pullback = _s2s_vjp(_s2s_loop, {args})\n"
                f"    return pullback(g)\n")
    made = function_from_source(
        f"def {loop.__name__}_{role}({args if role == 'fwd' else 'residuals, g'}):\n" + body,
        {"_s2s_loop": loop, "_s2s_vjp": api.vjp}, own=True)
    made.__module__ = __name__      # (s2sad's: export refuses it, as it runs s2sad)
    return made


def _one_per_axis(value, out_axes, where):
    """`value`, refused where it is a tuple and `out_axes` one int (as the loop refuses
    it: the cotangent function reads one result), naming `where`, the call's line."""
    if isinstance(value, tuple) and not isinstance(out_axes, tuple):
        raise S2SADError((where + ": " if where else "") + gradients.ONE_PER_AXIS)
    return value


def _cotangent(f, n, m, many):
    """`def f_cotangent(a0, ..., y_bar0, ...): return np.sum(f(a0, ...) * y_bar0) + ...`,
    `f` of `n` arguments returning `m` results (a tuple, `many`), whose gradient is f's
    pullback of the `y_bar`s."""
    args = [f"a{k}" for k in range(n)]
    bars = [f"y_bar{j}" for j in range(m)]
    value = f"_s2s_f({', '.join(args)})"
    terms = [f"np.sum(y[{j}] * {b})" if many else f"np.sum(y * {b})"
             for j, b in enumerate(bars)]
    made = function_from_source(
        f"def {identifier(f) if hasattr(f, '__name__') else 'f'}_cotangent("
        f"{', '.join(args + bars)}):\n"
        f"    y = {value}\n    return {' + '.join(terms)}\n", {"_s2s_f": f, "np": np},
        own=True)
    made.__module__ = getattr(f, "__module__", None) or "__main__"
    return made


gradients.MAKERS["vmap"] = BatchedCall.of
