"""The rule registry: derivative rules keyed by the primitive object itself.

A reverse rule is a source template per positional argument, written over the
argument names, `g` (the adjoint of the result) and `ans` (the result):

    vjp(math.sin, "x", "g * cos(x)")

The template is inlined into generated code with names substituted, so a pullback reads
`x_bar = y_bar * cos(x)`. Free names in templates (here `cos`) are resolved in the
namespace given at registration. `None` as a template means "no derivative with respect
to this argument" (like ChainRules' `NoTangent`); `nondiff(prim)` marks a whole primitive.
"""
import gast

from ..errors import S2SADError

RULES = {}
version = 0


class Rule:
    """The rules of one primitive, by number of positional arguments."""

    def __init__(self, prim):
        self.prim = prim
        self.variants = {}
        self.each = None
        self.nondiff = False

    def templates(self, nargs):
        """{param: template or None}, or None when no variant takes `nargs` args."""
        if self.nondiff:
            return {}
        if nargs in self.variants:
            return self.variants[nargs]
        if self.each is not None:
            return {f"{self.each[0]}{i}": self.each[1].renamed(f"{self.each[0]}{i}")
                    for i in range(nargs)}
        return None


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
                                     "neither an argument, 'g', 'ans', nor in its namespace")
                self.free[n.id] = namespace[n.id]

    def renamed(self, param):
        """This template over one argument, with that argument called `param`."""
        import copy
        out = copy.copy(self)
        out.tree = copy.deepcopy(self.tree)
        for n in gast.walk(out.tree):
            if isinstance(n, gast.Name) and n.id == self.param:
                n.id = param
        return out


def vjp(prim, params, *templates, namespace=None):
    """Register reverse rules for `prim` called with the parameters `params`
    (a comma-separated string), one template (or None) per parameter."""
    global version
    names = [p.strip() for p in params.split(",") if p.strip()]
    if len(names) != len(templates):
        raise S2SADError(f"{len(names)} parameters but {len(templates)} templates for "
                         f"{prim!r}")
    namespace = dict(namespace or {})
    rule = RULES.setdefault(prim, Rule(prim))
    rule.nondiff = False
    rule.variants[len(names)] = {
        p: None if t is None else Template(t, names, namespace) for p, t in zip(names, templates)}
    version += 1
    return prim


def vjp_each(prim, param, template, namespace=None):
    """Register one template for every positional argument of a variadic `prim`, used
    when no fixed-arity variant matches; `param` names the argument in `template`."""
    global version
    t = Template(template, [param], dict(namespace or {}))
    t.param = param
    rule = RULES.setdefault(prim, Rule(prim))
    rule.each = (param, t)
    version += 1
    return prim


def nondiff(prim):
    """Declare `prim` non-differentiable: its result never carries a derivative."""
    global version
    RULES.setdefault(prim, Rule(prim)).nondiff = True
    version += 1
    return prim


def lookup(prim):
    try:
        return RULES.get(prim)
    except TypeError:
        return None
