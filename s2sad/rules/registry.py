"""The rule registry: derivative rules keyed by the primitive object itself.

A reverse rule gives, for each differentiable parameter of a primitive, a source
template for the adjoint contribution, written over the parameter names, `g` (the
adjoint of the result) and `ans` (the result):

    vjp(math.sin, "x", "g * cos(x)")
    vjp(np.sum, "a, axis=None, keepdims=False", a="_s2s_unreduce(g, a, axis, keepdims)")

The template is inlined into generated code with names substituted, so a pullback reads
`x_bar = y_bar * cos(x)`. Free names in templates (here `cos`) are resolved in the
namespace given at registration. A parameter without a template has no derivative (like
ChainRules' `NoTangent`); `nondiff(prim)` marks a whole primitive. `broadcast=True`
says the primitive broadcasts its arguments like a NumPy ufunc: the engine then sums
each contribution back to its argument's shape where shapes may differ.
"""
import copy

import gast

from ..errors import S2SADError

RULES = {}
#: What a primitive returns: "scalar", "array", "container", "args" (the kind of its
#: arguments, as arithmetic does) or "first" (the kind of its first argument).
RETURNS = {}
#: Array methods and attributes, by name: `x.sum(...)` means `METHODS["sum"](x, ...)`.
METHODS = {}
ATTRIBUTES = {}
#: Primitives whose result may share memory with an argument (NumPy views).
VIEWS = set()
version = 0
#: What to call when a rule changes (the API's gradients forget their compiled code).
_listeners = []
REQUIRED = object()


class Template:
    """A parsed derivative expression and the objects its free names denote."""

    def __init__(self, source, params, namespace):
        self.source = source
        self.tree = gast.parse(source, mode="eval").body
        bound = set(params) | {"g", "ans"}
        self.free = {}
        for n in gast.walk(self.tree):
            if isinstance(n, gast.Name) and n.id not in bound:
                if n.id not in namespace:
                    raise S2SADError(f"rule template {source!r} uses {n.id!r}, which is "
                                     "neither a parameter, 'g', 'ans', nor in its namespace")
                self.free[n.id] = namespace[n.id]

    def renamed(self, old, new):
        out = copy.copy(self)
        out.tree = copy.deepcopy(self.tree)
        for n in gast.walk(out.tree):
            if isinstance(n, gast.Name) and n.id == old:
                n.id = new
        return out


class Variant:
    """One signature of a primitive and the templates of its parameters."""

    def __init__(self, params, templates, broadcast, elementwise=False, uniform=None):
        self.params = params              # [(name, default or REQUIRED)]
        self.templates = templates        # {name: Template}
        self.broadcast = broadcast
        self.elementwise = elementwise or broadcast
        self.uniform = uniform            # Template of a full reduction's adjoint, or None

    def bind(self, args, keywords):
        """{param: argument node} for a call, or None if the call does not fit."""
        names = [p for p, _ in self.params]
        if len(args) > len(names) or any(k not in names for k in keywords):
            return None
        bound = dict(zip(names, args))
        for k, v in keywords.items():
            if k in bound:
                return None
            bound[k] = v
        for name, default in self.params:
            if name not in bound:
                if default is REQUIRED:
                    return None
                bound[name] = gast.Constant(value=default, kind=None)
        return bound


class Rule:
    """The rules of one primitive: its variants, tried in order."""

    def __init__(self, prim):
        self.prim = prim
        self.variants = []
        self.each = None
        self.nondiff = False

    def match(self, args, keywords):
        """(Variant, binding) for a call, or (None, None)."""
        for variant in self.variants:
            bound = variant.bind(args, keywords)
            if bound is not None:
                return variant, bound
        if self.each is not None and not keywords:
            param, template, broadcast = self.each
            names = [f"{param}{i}" for i in range(len(args))]
            variant = Variant([(n, REQUIRED) for n in names],
                              {n: template.renamed(param, n) for n in names}, broadcast, True)
            return variant, dict(zip(names, args))
        return None, None


def _parse_params(params):
    out = []
    for part in (p.strip() for p in params.split(",")):
        if not part:
            continue
        name, eq, default = part.partition("=")
        out.append((name.strip(), eval(default, {}) if eq else REQUIRED))
    return out


def returns(kind, *prims):
    """Declare the kind of value `prims` return (see RETURNS)."""
    for prim in prims:
        RETURNS[prim] = kind


def vjp(prim, params, *templates, namespace=None, broadcast=False, elementwise=False,
        uniform=None, **by_name):
    """Register reverse rules for `prim` called with `params` ("x, axis=None, ..."):
    templates by position (None for no derivative) or by parameter name. `elementwise`
    says the result has the shape of the arguments, element by element. `uniform` is
    for reductions: the value, the same for every element, of the first parameter's
    adjoint when the call reduces its array to a scalar (`"g"` for a sum). Generated
    code then keeps that adjoint a scalar for as long as the arrays it meets are
    elementwise operations of the same shape."""
    spec = _parse_params(params)
    names = [n for n, _ in spec]
    if len(templates) > len(names) or any(k not in names for k in by_name):
        raise S2SADError(f"templates do not match the parameters {names} of {prim!r}")
    given = dict(zip(names, templates))
    given.update(by_name)
    ns = dict(namespace or {})
    compiled = {n: Template(t, names, ns) for n, t in given.items() if t is not None}
    rule = RULES.setdefault(prim, Rule(prim))
    rule.nondiff = False
    rule.variants = [v for v in rule.variants if [p for p, _ in v.params] != names]
    uniform = None if uniform is None else Template(uniform, names, ns)
    rule.variants.append(Variant(spec, compiled, broadcast, elementwise, uniform))
    bump()
    return prim


def vjp_each(prim, param, template, namespace=None, broadcast=False):
    """Register one template for every positional argument of a variadic `prim`, used
    when no fixed signature matches; `param` names the argument in `template`."""
    rule = RULES.setdefault(prim, Rule(prim))
    rule.each = (param, Template(template, [param], dict(namespace or {})), broadcast)
    bump()
    return prim


def nondiff(prim):
    """Declare `prim` non-differentiable: its result never carries a derivative."""
    RULES.setdefault(prim, Rule(prim)).nondiff = True
    bump()
    return prim


def bump():
    """Invalidate every compiled derivative (a rule changed elsewhere)."""
    global version
    version += 1
    for listener in _listeners:
        listener()


def on_change(listener):
    """Call `listener()` whenever a rule changes."""
    _listeners.append(listener)


def lookup(prim):
    try:
        return RULES.get(prim)
    except TypeError:
        return None


# -- forward rules ----------------------------------------------------------------------
#: Forward rules, {prim: Rule}. A variant's templates give, per parameter, the
#: contribution of its tangent `t` to the tangent of the result; its `linear` groups name
#: parameters in which the primitive is linear (its tangent is the call itself, on the
#: tangents). Rules flagged `elementwise` need no entry: see s2sad.rules.tangents.
JVPS = {}


def jvp(prim, params, *templates, namespace=None, **by_name):
    """Register forward rules for `prim` called with `params`: templates by position or
    parameter name, written over the parameter names, `t` (the tangent of that
    parameter) and `ans` (the result). The engine sums the contributions of the
    arguments that carry a tangent; a parameter without a template contributes none."""
    spec = _parse_params(params)
    names = [n for n, _ in spec]
    if len(templates) > len(names) or any(k not in names for k in by_name) or "t" in names:
        raise S2SADError(f"tangent templates do not match the parameters {names} of "
                         f"{prim!r} (a parameter must not be called 't', the tangent)")
    given = dict(zip(names, templates))
    given.update(by_name)
    ns = dict(namespace or {})
    compiled = {n: Template(t, names + ["t"], ns) for n, t in given.items() if t is not None}
    return _add_jvp(prim, spec, compiled, [])


def linear(prim, params, *groups):
    """Register the forward rule of `prim`, linear in each group of parameters ("a, v"):
    the tangent is `prim` called with the tangents of a group in place of its arguments
    (zeros for those without), summed over the groups. `np.dot` is linear in "a" and in
    "b" (two groups); `setitem(a, index, v)` in "a, v" jointly (one group)."""
    spec = _parse_params(params)
    names = [n for n, _ in spec]
    groups = [[p.strip() for p in g.split(",")] for g in groups]
    if any(p not in names for g in groups for p in g):
        raise S2SADError(f"linear groups {groups} do not match the parameters {names}")
    return _add_jvp(prim, spec, {}, groups)


def _add_jvp(prim, spec, templates, groups):
    rule = JVPS.setdefault(prim, Rule(prim))
    names = [n for n, _ in spec]
    rule.variants = [v for v in rule.variants if [p for p, _ in v.params] != names]
    variant = Variant(spec, templates, False)
    variant.linear = groups
    rule.variants.append(variant)
    bump()
    return prim
