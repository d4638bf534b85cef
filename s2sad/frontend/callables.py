"""Calls of library functions that take a user's function (SciPy's root finders,
optimisers, quadrature and ODE solvers): what stands for them.

A call such as `brentq(resid, 0.0, 5.0, args=(p,))` inside a differentiated function is
refused as library code s2sad cannot read, unless the library function has a `Taker`:
then before_ad/gradient_calls.py rewrites it to a call of the object its `make` returns
for the call's `Layout` (the user's function, the parameters given, the extra arguments
and the values bound to the function), with every value the call reads as one positional
argument: the parameters given (`a`, `b`, `xtol=...`), then the items of `args=`, then
the values bound to each function passed (the values a lambda or nested function reads
from the enclosing function, a `functools.partial`'s keywords). So the differentiated
values the function reads, through `args=` or its closure, are arguments of that call, and
the derivative flows to them as through any call. The object is a custom rule with both
modes (`s2s_custom = ("vjp", "jvp")`: `fwd` and `bwd` as a `custom_vjp`'s, `rule` as a
`custom_jvp`'s), and its rules call the derivatives s2sad makes of the user's function at
run time (s2sad/implicit.py).

The takers of a library are declared by a module of the API layer (their rules call the
driver), loaded the first time a lookup misses after the user's code imported the
library (`optional`), as the rules of SciPy are (rules/registry.py).
"""
import dataclasses
import inspect
import re
import sys
from typing import Callable

from ..errors import UnsupportedSyntaxError


@dataclasses.dataclass(frozen=True)
class Taker:
    """What s2sad knows of a library function that takes a user's function."""
    function: str                   # the parameter that takes the function differentiated
    make: Callable                  # make(layout) -> the object that stands for the call
    args: str | None = "args"       # the parameter of extra arguments passed to the function
    functions: tuple = ()           # other parameters that take a function (fprime=, jac=)
    refused: dict = dataclasses.field(default_factory=dict)   # {parameter: why}
    signature: inspect.Signature | None = None      # (of the library function, if unreadable)


@dataclasses.dataclass(frozen=True)
class Layout:
    """A call of `library` (a function with a `Taker`) in the user's code: the arguments
    of the call that stands for it are the values of the parameters `given`, then
    `n_args` extra arguments, then the values bound to each function of `functions`
    (`(parameter, function, names bound)`, the one differentiated first)."""
    library: Callable
    given: tuple
    n_args: int
    functions: tuple

    @property
    def function(self):
        """The user's function the call's derivative is taken through."""
        return self.functions[0][1]

    def split(self, values):
        """({parameter: value} given, the extra arguments, {parameter: {name: value}}
        bound to each function) of the arguments of a call that stands for this one."""
        given = dict(zip(self.given, values))
        k = len(self.given)
        extra = tuple(values[k:k + self.n_args])
        k += self.n_args
        bound = {}
        for param, _, names in self.functions:
            bound[param] = dict(zip(names, values[k:k + len(names)]))
            k += len(names)
        return given, extra, bound


#: {library function: its Taker}
TAKERS = {}

#: [(modules, loader)]: the modules that declare the takers of optional libraries
_OPTIONAL = []


def optional(modules, loader):
    """Declare that `loader()` declares the takers of the functions of `modules` (module
    names), to be called once the user's code has imported one of them."""
    _OPTIONAL.append((modules, loader))


def taker(obj):
    """The Taker of the library function `obj`, or None."""
    try:
        found = TAKERS.get(obj)
    except TypeError:       # (unhashable)
        return None
    if found is None and _OPTIONAL and callable(obj):
        for entry in [e for e in _OPTIONAL if any(sys.modules.get(m) is not None
                                                  for m in e[0])]:
            _OPTIONAL.remove(entry)
            entry[1]()
        found = TAKERS.get(obj)
    return found


def signature(library):
    """The parameters of `library`, as its Taker declares them or Python reads them."""
    declared = TAKERS[library].signature
    return declared if declared is not None else inspect.signature(library)


def called_at(rule, src, s):
    """Record, in the list `rule.s2s_sites` of a rule that has one (what stands for a
    call, a `custom_root`), where the statement `s` of the user's function `src` calls it:
    a refusal of second derivatives through it names that line (`not_differentiable`)."""
    sites = getattr(rule, "s2s_sites", None)
    if isinstance(sites, list):
        site = (f"{src.filename}:{src.first_line}", (
            src.filename, src.lineno(s), getattr(s, "col_offset", 0) + src.indent + 1,
            src.line_text(s)))
        if site not in sites:
            sites.append(site)


def not_differentiable(helper, src, s):
    """The refusal of the statement `s` of `src`, a call of `helper`, a helper of a rule
    that has no derivative (a solver's rules, checkpoint's): located at the user's call of
    the rule in the function whose derivative's code `src` is (recorded by `called_at`
    when that derivative was compiled), else at `s`."""
    made_from = re.sub(r" #\d+>$", ">", src.filename)    # (a second compile of one name)
    here = [place for origin, place in getattr(helper, "s2s_sites", ())
            if made_from.endswith(f" from {origin}>")]
    if here:
        return UnsupportedSyntaxError(helper.s2s_not_differentiable, *here[0])
    return src.syntax_error(s, helper.s2s_not_differentiable)
