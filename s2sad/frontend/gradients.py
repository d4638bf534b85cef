"""Derivatives called inside a differentiated function: what stands for them.

A gradient made by `grad` or `value_and_grad` that differentiated code calls is a call
of a Python function that stands for it (`gradient_function`): the driver
differentiates the gradient code of its primal in its place (the code `grad(grad(f))`
differentiates), with respect to every argument that carries a derivative, the ones the
gradient is not taken with respect to included. So `grad(h, wrt=0)(y, x)` in a function
differentiated with respect to `x` is differentiated with respect to `x` too, and so is
the gradient of a nested function or lambda, whose lifted version reads the values it
closes over as arguments; `grad(grad(f, i), j)` is `grad(g, j)`, with `g` standing for
`grad(f, i)`. A `jvp(f, primals, tangents)` called there is a call of a function that
stands for `f`'s `f_jvp` (`jvp_function`), and `jacfwd(f, i)(x)`, `hvp(f, i)(x, v)` and
`hessian(f, i)(x)` (`jacfwd(grad(f, i), i)`) calls of Python functions written with such
a function (`forward_function`). `jacrev(f, i)(x)` and the pullback of `vjp(f, x)` are
written with the gradient of `f`'s cotangent function `sum(f(x) * y_bar)`
(`reverse_function`). The other derivatives s2sad makes (`check_grad`, ...) and those
stored rather than called where they are made are refused where they are called
(`refusal`).
"""
import inspect
import weakref

import numpy as np

from ..errors import S2SADError
from .source import function_from_source, identifier, numba_function

#: s2sad's functions that make or compute derivatives, by name (of s2sad.api,
#: s2sad.forward_api, s2sad.jacobian_api and s2sad.hessian_api), and vmap (s2sad.batching_api)
API = {"grad", "value_and_grad", "vjp", "jvp", "jacfwd", "jacrev", "hvp", "hessp", "hessian",
       "check_grad", "vmap"}

#: the derivatives called inside a differentiated function that s2sad differentiates
GRADIENTS = ("grad", "value_and_grad")

#: {name: the API function}: grad, value_and_grad and jvp, which the functions that stand
#: for derivatives made in differentiated code call, and vmap, the batched rules that
#: stand for a vmap called in differentiated code (api.py and batching_api.py declare
#: them: the passes that make those functions are of a lower layer)
MAKERS = {}

#: the derivatives made by forward mode called inside a differentiated function that s2sad
#: differentiates, besides jvp(f, primals, tangents), which computes rather than makes one
FORWARD = ("jacfwd", "hvp", "hessian")

#: the derivatives made by reverse mode called inside a differentiated function that s2sad
#: differentiates (besides the gradients and the pullback of vjp(f, x, ...))
REVERSE = ("jacrev",)

_API_MODULES = ("s2sad.api", "s2sad.forward_api", "s2sad.jacobian_api", "s2sad.hessian_api",
                "s2sad.batching_api")


def api_function(obj):
    """The name of `obj` if it is one of s2sad's functions in `API`, else None."""
    if (inspect.isfunction(obj) and obj.__name__ in API
            and obj.__module__ in _API_MODULES):
        return obj.__name__
    return None


def made_by(obj):
    """The API function that made derivative `obj` (`grad`, `hessian`, `grad_grad`
    for grad(grad(f)), ...), or None if `obj` is no derivative s2sad made."""
    try:
        kind = getattr(obj, "s2s_made_by", None)
    except Exception:       # (an object whose attributes raise: not one of s2sad's)
        return None
    return kind if isinstance(kind, str) and (kind in API or kind in _OTHER_KINDS) else None


#: the kinds of derivatives that are no API function's name: grad(grad(f)), and
#: grad(f, has_aux=True) and value_and_grad(f, has_aux=True)
_OTHER_KINDS = ("grad_grad", "grad_has_aux", "value_and_grad_has_aux")


def called_gradient(made):
    """`(standing, bound)` if derivative `made` is a gradient differentiated code can
    call: the function that stands for it (see `gradient_function`) and the objects
    passed before the call's own arguments (the instance of a bound method's gradient);
    else None."""
    bound = ()
    kind = made_by(made)
    if kind == "grad_grad":     # grad(grad(f, i), j): grad(g, j), g standing for grad(f, i)
        made = made.s2s_as_gradient()       # (api.py's _as_gradient)
        kind = made_by(made)
    inner = getattr(made, "s2s_bound", None) if kind else None
    if inner is not None:           # grad(obj.method): the method's function, obj first
        made, bound = inner[0], (inner[1],)
        kind = made_by(made)
    aux = kind in ("grad_has_aux", "value_and_grad_has_aux")
    kind = kind.removesuffix("_has_aux") if aux else kind
    if kind not in GRADIENTS or inspect.ismethod(made.primal):
        return None
    if aux:     # grad(f, has_aux=True): of f's output, the aux values beside it
        output = output_function(made.primal)
        standing = gradient_function(output, made.wrt, kind,
                                     MAKERS[kind](output, wrt=made.wrt))
        return aux_function(kind, standing, made.primal), bound
    return gradient_function(made.primal, made.wrt, kind, made), bound


#: {primal: {(kind, wrt): the function that stands for kind(primal, wrt)}}
_gradients = weakref.WeakKeyDictionary()
_lasting = {}       # the same, for primals without weak references (NumPy's ufuncs)


def gradient_function(primal, wrt, kind, gradient):
    """A Python function that stands for `gradient`, which is `grad(primal, wrt)` (kind
    "grad") or `value_and_grad(primal, wrt)`, where differentiated code calls it: it
    calls `gradient`, and its `s2s_gradient`, `(primal, wrt, kind)`, tells the driver
    to differentiate the gradient code of `primal` (of the variant named `kind`, see
    s2sad.options) in its place."""
    try:
        per_key = _gradients.setdefault(primal, {})
    except TypeError:
        per_key = _lasting.setdefault(primal, {})
    key = (kind, tuple(wrt) if isinstance(wrt, list) else wrt)
    if key not in per_key:
        fn = numba_function(primal) or getattr(primal, "__func__", primal)
        python = inspect.isfunction(fn)
        params = [p for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                  and (python or p.default is p.empty)]
        defaults = {f"_s2s_default_{k}": p.default for k, p in enumerate(params)
                    if p.default is not p.empty}
        spelled = ", ".join(p.name + (f"=_s2s_default_{k}" if p.default is not p.empty
                                      else "") for k, p in enumerate(params))
        args = ", ".join(p.name for p in params)
        standing = function_from_source(
            f"def {identifier(fn)}_{kind}({spelled}):\n    return _s2s_gradient({args})\n",
            {"_s2s_gradient": gradient, **defaults}, own=True)
        standing.__module__ = getattr(fn, "__module__", None) or "__main__"
        standing.s2s_gradient = (primal, wrt, kind)
        per_key[key] = standing
    return per_key[key]


def positional(primal):
    """`primal`, or where a positional parameter of it has a default value, a function
    of the same positional parameters without defaults that calls it (`h_positional`):
    what `jvp_function` and the cotangent function differentiate, whose parameters take
    every argument by position (the code that calls them passes the defaults)."""
    fn = getattr(primal, "__func__", primal)
    params = [p for p in inspect.signature(fn).parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if all(p.default is p.empty for p in params):
        return primal
    try:
        per_key = _gradients.setdefault(primal, {})
    except TypeError:
        per_key = _lasting.setdefault(primal, {})
    if "positional" not in per_key:
        args = ", ".join(p.name for p in params)
        made = function_from_source(f"def {identifier(fn)}_positional({args}):\n"
                                    f"    return _s2s_primal({args})\n",
                                    {"_s2s_primal": primal}, own=True)
        made.__module__ = getattr(fn, "__module__", None) or "__main__"
        per_key["positional"] = made
    return per_key["positional"]


def output_function(primal):
    """`def f_output(x, ...): return f(x, ...)[0]` for `primal` (`f`), which returns
    `(output, aux)`: what a derivative with `has_aux=True` differentiates (see
    `aux_function`)."""
    try:
        per_key = _gradients.setdefault(primal, {})
    except TypeError:
        per_key = _lasting.setdefault(primal, {})
    if "output" not in per_key:
        fn = getattr(primal, "__func__", primal)
        params = [p for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        defaults = {f"_s2s_default_{k}": p.default for k, p in enumerate(params)
                    if p.default is not p.empty}
        spelled = ", ".join(p.name + (f"=_s2s_default_{k}" if p.default is not p.empty
                                      else "") for k, p in enumerate(params))
        made = function_from_source(
            f"def {identifier(fn)}_output({spelled}):\n"
            f"    return _s2s_primal({', '.join(p.name for p in params)})[0]\n",
            {"_s2s_primal": primal, **defaults}, own=True)
        made.__module__ = getattr(fn, "__module__", None) or "__main__"
        per_key["output"] = made
    return per_key["output"]


def aux_function(kind, standing, primal, tangents=0):
    """A Python function that stands for `kind(primal, ..., has_aux=True)` where
    differentiated code calls it, written with `standing`, what stands for `kind` of
    `output_function(primal)`: with `standing`'s parameters (the last `tangents` of them
    a jvp's tangents), it returns what `standing` returns with the aux values,
    `primal(...)[1]` (computed again), beside it, as JAX does: `(jacobian, aux)`,
    `((value, aux), gradient)` for value_and_grad, `(value, tangent, aux)` for jvp."""
    per_key = _forward.setdefault(standing, {})
    key = ("aux", kind)
    if key not in per_key:
        params = list(inspect.signature(standing).parameters.values())
        defaults = {f"_s2s_default_{k}": p.default for k, p in enumerate(params)
                    if p.default is not p.empty}
        spelled = ", ".join(p.name + (f"=_s2s_default_{k}" if p.default is not p.empty
                                      else "") for k, p in enumerate(params))
        args = ", ".join(p.name for p in params)
        aux = f"_s2s_primal({', '.join(p.name for p in params[:len(params) - tangents])})[1]"
        returned = {"value_and_grad": f"(value, {aux}), gradient",
                    "jvp": f"value, tangent, {aux}"}.get(kind, f"derivative, {aux}")
        unpacked = {"value_and_grad": "value, gradient", "jvp": "value, tangent"}.get(
            kind, "derivative")
        made = function_from_source(
            f"def {standing.__name__}_aux({spelled}):\n"
            f"    {unpacked} = _s2s_derivative({args})\n"
            f"    return {returned}\n",
            {"_s2s_derivative": standing, "_s2s_primal": primal, **defaults}, own=True)
        made.__module__ = standing.__module__
        made.s2s_forward = kind
        per_key[key] = made
    return per_key[key]


def jvp_function(primal, wrt, jvp):
    """A Python function that stands for `jvp(primal, primals, tangents)` (`jvp`, the
    API's), the tangents that are not None those of the positional arguments `wrt`
    (indices), where differentiated code calls it: it takes `primal`'s positional
    parameters, then one tangent per index of `wrt`, and returns `(value, tangent)`; its
    `s2s_gradient`, `(primal, wrt, "jvp")`, tells the driver to differentiate `primal`'s
    `f_jvp` in its place, whose parameters are the same (of `positional(primal)` where a
    positional parameter has a default: `f_jvp` would take the tangents by keyword)."""
    try:
        per_key = _gradients.setdefault(primal, {})
    except TypeError:
        per_key = _lasting.setdefault(primal, {})
    key = ("jvp", wrt)
    if key not in per_key:
        fn = getattr(primal, "__func__", primal)
        params = [p for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        differentiated = positional(primal)
        names = [p.name for p in params]
        tangents = []
        for i in wrt:
            name = names[i] + "_dot"
            while name in names or name in tangents:
                name += "_"
            tangents.append(name)
        given = dict(zip(wrt, tangents))
        standing = function_from_source(
            f"def {identifier(fn)}_jvp({', '.join(names + tangents)}):\n"
            f"    return _s2s_jvp(_s2s_primal, ({''.join(n + ', ' for n in names)}), "
            f"({''.join(given.get(k, 'None') + ', ' for k in range(len(names)))}))\n",
            {"_s2s_jvp": jvp, "_s2s_primal": differentiated}, own=True)
        standing.__module__ = getattr(fn, "__module__", None) or "__main__"
        standing.s2s_gradient = (differentiated, wrt, "jvp")
        per_key[key] = standing
    return per_key[key]


def forward_function(kind, standing, n, i):
    """A Python function that stands for `jacfwd(f, i)` (kind "jacfwd") or `hvp(f, i)`
    ("hvp") where differentiated code calls it, written with `standing`, the function
    that stands for `jvp(f, ...)` along argument `i` of the `n` positional parameters of
    `f` (for hvp, of `grad(f, i)`): a Python function of `f`'s parameters (hvp's `v`
    after the first `n`, before those a lifted function has after its own) that
    differentiated code reads as it reads the user's code. jacfwd's Jacobian is one
    jvp per element of argument `i`, stacked on the last axes (a number for a number)."""
    per_key = _forward.setdefault(standing, {})
    key = (kind, n, i)
    if key not in per_key:
        params = list(inspect.signature(standing).parameters)[:-1]
        own, extras = params[:n], params[n:]
        x = params[i]
        args = ", ".join(params)
        if kind == "hvp":
            v = "v"
            while v in params:
                v += "_"
            text = (f"def {standing.__name__.removesuffix('_jvp')}_hvp"
                    f"({', '.join(own + [v] + extras)}):\n"
                    f"    return _s2s_jvp_of({args}, {v})[1]\n")
        else:
            text = (f"def {standing.__name__.removesuffix('_jvp')}_jacfwd({args}):\n"
                    f"    if np.ndim({x}) == 0:\n"
                    f"        return _s2s_jvp_of({args}, 1.0)[1]\n"
                    f"    basis = np.eye(np.size({x})).reshape((np.size({x}),) + np.shape({x}))\n"
                    f"    columns = []\n"
                    f"    for e in basis:\n"
                    f"        columns.append(_s2s_jvp_of({args}, e)[1])\n"
                    f"    jacobian = np.stack(columns, axis=-1)\n"
                    f"    return jacobian.reshape(np.shape(columns[0]) + np.shape({x}))\n")
        made = function_from_source(text, {"_s2s_jvp_of": standing, "np": np}, own=True)
        made.__module__ = standing.__module__
        made.s2s_forward = kind
        per_key[key] = made
    return per_key[key]


_forward = weakref.WeakKeyDictionary()      # {jvp's standing: {(kind, n, i): function}}


#: What vmap called inside a differentiated function says of a tuple result and one int
#: out_axes (the loop, and batching_api's batched rules).
ONE_PER_AXIS = ("vmap called inside a differentiated function takes a function that "
                "returns a tuple with out_axes a tuple, one axis per result")


def vmap_function(primal, params, extras, in_axes, out_axes, where=None):
    """A Python function that stands for `vmap(primal, in_axes, out_axes)` where
    differentiated code calls it: a loop over the items of the batch that calls `primal`
    on each and stacks the results, which s2sad reads as it reads the user's code (so
    every mode differentiates it, and the values a nested function reads, `extras`,
    passed by keyword after `params`, carry their derivatives). `params` are the
    positional parameters of `primal` the call gives (the others keep their defaults);
    `in_axes` one int or None per parameter, `out_axes` an int, or a tuple of one
    int per result of a primal that returns a tuple. The batches must have one size, and
    a result a tuple where `out_axes` is one, as `vmap` checks, naming `where` (the
    user's file and line of the call)."""
    per_key = _forward.setdefault(primal, {})
    key = ("vmap", tuple(params), tuple(extras), in_axes, out_axes, where)

    def raised(message):
        return f"raise _s2s_error({(where + ': ' if where else '') + message!r})"
    if key in per_key:
        return per_key[key]
    taken = set(params) | set(extras) | {"np"}

    def fresh(name):
        while name in taken:
            name += "_"
        taken.add(name)
        return name
    size, k, result = fresh("size"), fresh("k"), fresh("result")
    batched = [(p, ax) for p, ax in zip(params, in_axes) if ax is not None]
    first, axis = batched[0]
    lines = []
    for p, ax in batched:       # (an item of a list, tuple or dict is not `p[k]`)
        lines += [f"if isinstance({p}, (list, tuple, dict)):", "    " + raised(
            "vmap called inside a differentiated function batches arrays along an axis, "
            "not lists, tuples or dicts: pass their arrays as arguments of their own")]
    lines.append(f"{size} = np.shape({first})[{axis}]")
    for p, ax in batched[1:]:
        lines += [f"if np.shape({p})[{ax}] != {size}:",
                  "    " + raised("vmap: the batched arguments have batches of different "
                                  "sizes")]
    items = [p if ax is None else f"{p}[{_item_index(ax, k)}]"
             for p, ax in zip(params, in_axes)]
    call = f"_s2s_f({', '.join(items + [f'{e}={e}' for e in extras])})"
    outs = out_axes if isinstance(out_axes, tuple) else (out_axes,)
    stacks = [fresh(f"results_{j}" if isinstance(out_axes, tuple) else "results")
              for j in range(len(outs))]
    lines += [f"{s} = []" for s in stacks]
    lines += [f"for {k} in range({size}):", f"    {result} = {call}"]
    if isinstance(out_axes, tuple):
        lines += [f"    if not isinstance({result}, tuple) or len({result}) != {len(outs)}:",
                  "        " + raised(f"vmap: out_axes={out_axes!r} needs a tuple of "
                                      f"{len(outs)} results")]
        lines += [f"    {s}.append({result}[{j}])" for j, s in enumerate(stacks)]
        returned = "(" + "".join(f"np.stack({s}, axis={ax}), "
                                 for s, ax in zip(stacks, outs)) + ")"
    else:
        lines += [f"    if isinstance({result}, tuple):",
                  "        " + raised(ONE_PER_AXIS),
                  f"    {stacks[0]}.append({result})"]
        returned = f"np.stack({stacks[0]}, axis={out_axes})"
    lines.append(f"return {returned}")
    name = identifier(getattr(primal, "__func__", primal))
    made = function_from_source(
        f"def {name}_vmap({', '.join(list(params) + list(extras))}):\n"
        + "".join(f"    {line}\n" for line in lines),
        {"_s2s_f": primal, "np": np, "_s2s_error": S2SADError}, own=True)
    made.__module__ = getattr(primal, "__module__", None) or "__main__"
    made.s2s_forward = "vmap"
    made.s2s_vmap_of = (primal, tuple(params), tuple(extras), in_axes, out_axes, where)
    per_key[key] = made
    return made


def _item_index(axis, k):
    """The index, spelled, of item `k` of a batch along `axis` (`k`, `:, k`, `..., k`)."""
    if axis >= 0:
        return ":, " * axis + k
    return "..., " + k + ", :" * (-axis - 1)


def tuple_function(kind, primal, parts):
    """A Python function that stands for `kind(primal, wrt)` with a tuple `wrt` where
    differentiated code calls it: it returns the tuple `parts` (nested, for a hessian's
    blocks) of functions that stand for it along each argument, called with its
    parameters, which are theirs."""
    leaves = [p for row in parts for p in (row if isinstance(row, tuple) else (row,))]
    per_key = _forward.setdefault(leaves[0], {})
    key = ("tuple", kind, parts)
    if key not in per_key:
        params = ", ".join(inspect.signature(leaves[0]).parameters)
        names = {}

        def spelled(part):
            if isinstance(part, tuple):
                return "(" + "".join(spelled(p) + ", " for p in part) + ")"
            name = names.setdefault(part, f"_s2s_{len(names)}")
            return f"{name}({params})"
        body = spelled(parts)
        made = function_from_source(
            f"def {identifier(getattr(primal, '__func__', primal))}_{kind}({params}):\n"
            f"    return {body}\n", {n: p for p, n in names.items()}, own=True)
        made.__module__ = leaves[0].__module__
        made.s2s_forward = kind
        per_key[key] = made
    return per_key[key]


def reverse_function(kind, primal, n, i=None):
    """A Python function that stands for `jacrev(primal, i)` (kind "jacrev") where
    differentiated code calls it, or for the pullback of `vjp(primal, ...)` ("vjp"),
    `primal` having `n` positional parameters of its own (a lifted function has the values
    it reads after them; for the pullback, the first `n` of them). Both are written with
    the gradient of `primal`'s cotangent function (`sum(primal(...) * y_bar)`, see
    `_cotangent_function`), which differentiated code calls as it calls any gradient: the
    pullback takes `primal`'s parameters then `y_bar` and returns the tuple of the `n`
    cotangents; jacrev's Jacobian is one pullback per element of the result, stacked on
    the first axes (a gradient for a number)."""
    cotangent = _cotangent_function(primal)
    per_key = _forward.setdefault(cotangent, {})
    key = (kind, n, i)
    if key not in per_key:
        wrt = i if kind == "jacrev" else tuple(range(n))
        pullback = called_gradient(MAKERS["grad"](cotangent, wrt=wrt))[0]
        if kind == "vjp":
            per_key[key] = pullback
            return pullback
        params = list(inspect.signature(cotangent).parameters)[:-1]
        args, x = ", ".join(params), params[i]
        text = (f"def {cotangent.__name__.removesuffix('_cotangent')}_jacrev({args}):\n"
                f"    value = _s2s_primal({args})\n"
                f"    if np.ndim(value) == 0:\n"
                f"        return _s2s_pullback({args}, 1.0)\n"
                f"    basis = np.eye(np.size(value)).reshape((np.size(value),) + "
                f"np.shape(value))\n"
                f"    rows = []\n"
                f"    for e in basis:\n"
                f"        rows.append(_s2s_pullback({args}, e))\n"
                f"    return np.stack(rows).reshape(np.shape(value) + np.shape({x}))\n")
        made = function_from_source(text, {"_s2s_pullback": pullback, "_s2s_primal": primal,
                                           "np": np}, own=True)
        made.__module__ = cotangent.__module__
        made.s2s_forward = kind
        per_key[key] = made
    return per_key[key]


def _cotangent_function(primal):
    """`def f_cotangent(x, ..., y_bar): return np.sum(f(x, ...) * y_bar)` for `primal`
    (`f`), whose gradient is `f`'s pullback of `y_bar` (of all its positional parameters,
    those with a default value too: the code that calls it passes the defaults)."""
    try:
        per_key = _gradients.setdefault(primal, {})
    except TypeError:
        per_key = _lasting.setdefault(primal, {})
    if "cotangent" not in per_key:
        fn = getattr(primal, "__func__", primal)
        params = [p for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        names = [p.name for p in params]
        y_bar = "y_bar"
        while y_bar in names:
            y_bar += "_"
        args = ", ".join(names)
        made = function_from_source(
            f"def {identifier(fn)}_cotangent({args}, {y_bar}):\n"
            f"    return np.sum(_s2s_primal({args}) * {y_bar})\n",
            {"_s2s_primal": positional(primal), "np": np}, own=True)
        made.__module__ = getattr(fn, "__module__", None) or "__main__"
        per_key["cotangent"] = made
    return per_key["cotangent"]


#: what to write instead of each derivative s2sad does not differentiate where it is
#: called
_INSTEAD = {
    "vjp": "y, pullback = s2sad.vjp(f, x) called there, then pullback(y_bar); for a "
           "function with a scalar result, s2sad.grad(f)(x) * y_bar is the pullback of "
           "y_bar, and s2sad.value_and_grad(f)(x) gives the value too",
    "jvp": "s2sad.jvp(f, (x,), (v,)) called there, with f a module-level function or a "
           "nested function or lambda, is its jvp along v",
    "hvp": "s2sad.hvp(f)(x, v) called where it is made, or "
           "s2sad.grad(lambda x: np.sum(s2sad.grad(f)(x) * v))(x)",
    "hessian": "s2sad.hessian(f)(x) or s2sad.jacfwd(s2sad.grad(f))(x) called where it is "
               "made",
    "jacfwd": "s2sad.jacfwd(f)(x) called where it is made; for a function with a scalar "
              "result, s2sad.grad(f) is its Jacobian",
    "check_grad": "call it outside the differentiated function",
    "vmap": "s2sad.vmap(f, in_axes, out_axes)(x, ...) called there, of a module-level "
            "function, a nested function or a lambda, or of grad(f); or a vmap made at "
            "module level, called there",
}
_INSTEAD["jacrev"] = ("s2sad.jacrev(f)(x) or s2sad.jacfwd(f)(x) called where it is made; for "
                      "a function with a scalar result, s2sad.grad(f) is its Jacobian")
_INSTEAD["hessp"] = _INSTEAD["hvp"]
_INSTEAD["grad_has_aux"] = _INSTEAD["value_and_grad_has_aux"] = (
    "call s2sad.grad(f) or s2sad.value_and_grad(f) there, of a function that returns the "
    "output alone, and compute the aux values beside it")


def refusal(kind):
    """The message for a call of the derivative `kind` (an API function's name, or what
    made a derivative) inside a differentiated function."""
    spelled = ("grad(grad(f))" if kind == "grad_grad" else
               f"{kind.removesuffix('_has_aux')}(f, has_aux=True)" if kind.endswith("_has_aux")
               else f"{kind}()")
    return (f"s2sad does not differentiate {spelled} called inside a differentiated "
            "function: it differentiates the gradients grad(f) and value_and_grad(f) "
            "called there (of a module-level function, a method, a nested function or a "
            "lambda), y, pullback = vjp(f, x, ...) and jvp(f, primals, tangents), and "
            "jacfwd(f, i)(x, ...), jacrev(f, i)(x, ...), hvp(f, i)(x, ..., v) and "
            "hessian(f, i)(x, ...) made where they are called. Write it with those: "
            f"{_INSTEAD.get(kind, _INSTEAD['hessian'])}")
