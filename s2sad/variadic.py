"""Functions given to s2sad that take `*args` or `**kwargs`, differentiated call by call.

For each way of calling such a function (how many positional arguments, which keywords)
s2sad writes a function with those parameters that only calls it, and differentiates
that: the function's own code is then a callee, which s2sad specialises on the call (its
`*args` are parameters of their own, `**kwargs` reads its keys; see
before_ad.resolve_calls). The positional arguments of the call are the positional
parameters of the function written, in order, so `wrt=1`, a `vjp`'s cotangents and a
`jvp`'s tangents mean what they mean for any function; keywords are passed through.

>>> import s2sad
>>> def total(x, *rest, scale=1.0, **extra):
...     return scale * x * sum(rest) + extra.get("shift", 0.0)
>>> s2sad.grad(total, wrt=(0, 2))(2.0, 3.0, 4.0, scale=0.5, shift=1.0)
(3.5, 1.0)
>>> import inspect
>>> print(inspect.getsource(fixed(total, 3, ("scale", "shift"))), end="")
def total(x, rest_0, rest_1, *, scale, shift):
    return _s2s_variadic(x, rest_0, rest_1, scale=scale, shift=shift)
"""
from __future__ import annotations

import functools
import inspect
import keyword
import weakref

from .errors import S2SADError
from .frontend import source

_fixed = weakref.WeakKeyDictionary()     # function -> {(nargs, keywords): function written}


def takes_varargs(fn) -> bool:
    """Whether `fn` is a Python function whose signature has `*args` or `**kwargs`."""
    fn = getattr(fn, "py_func", fn)          # (a @numba.njit function's)
    if not inspect.isfunction(fn) or getattr(fn, "s2s_derivative", False):
        return False
    return any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
               for p in inspect.signature(fn).parameters.values())


def fixed(fn, nargs: int, keywords: tuple):
    """The function that calls `fn` with `nargs` positional arguments and the
    `keywords`, with one parameter for each (`x, rest_0, rest_1, *, scale`)."""
    made = _fixed.setdefault(fn, {})
    key = (nargs, tuple(sorted(keywords)))
    if key not in made:
        made[key] = _write(fn, nargs, key[1])
    return made[key]


def _write(fn, nargs, keywords):
    signature = inspect.signature(fn)
    signature.bind(*[None] * nargs, **dict.fromkeys(keywords))    # (Python's TypeError)
    params = list(signature.parameters.values())
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    star = next((p for p in params if p.kind is p.VAR_POSITIONAL), None)
    names = [p.name for p in positional[:nargs]]
    taken = {p.name for p in params} | set(keywords)
    for i in range(nargs - len(names)):
        name = f"{star.name}_{i}"
        while name in taken:
            name += "_"
        taken.add(name)
        names.append(name)
    odd = [k for k in keywords if not k.isidentifier() or keyword.iskeyword(k)]
    if odd:
        raise S2SADError(f"{fn.__name__}() is called with the keyword {odd[0]!r}, which is not "
                         "a Python name; s2sad differentiates calls whose keywords are names")
    signature = ", ".join(names + (["*"] + list(keywords) if keywords else []))
    passed = ", ".join(names + [f"{k}={k}" for k in keywords])
    text = f"def {fn.__name__}({signature}):\n    return _s2s_variadic({passed})\n"
    made = source.function_from_source(text, {"_s2s_variadic": fn})
    made.__qualname__ = fn.__qualname__
    return made


class Derivative:
    """A derivative of a function that takes `*args` or `**kwargs`: `make(g)` makes the
    derivative (`grad(g, ...)`, ...) of the function `g` written for each way it is
    called."""

    def __init__(self, fn, make, extra=0):
        functools.update_wrapper(self, fn)
        self.primal, self.make, self._made, self._last = fn, make, {}, None
        self.extra = extra      # arguments of the call that are not `fn`'s (hvp's `v`)

    def __call__(self, *args, **kwargs):
        key = (len(args) - self.extra, tuple(sorted(kwargs)))
        d = self._made.get(key)
        if d is None:
            d = self._made[key] = self.make(fixed(self.primal, *key))
        self._last = d
        return d(*args, **kwargs)

    @property
    def source(self):
        """The generated source of the derivative of the last call's function."""
        if self._last is None:
            raise S2SADError("call the derivative first: its code depends on how many "
                             "arguments the call gives, and which keywords")
        return self._last.source

    def __repr__(self):
        return f"<derivative of {self.primal.__qualname__}, for each way it is called>"


def for_call(fn, args, kwargs):
    """`fn`, or for a function with `*args` or `**kwargs`, the one written for this call."""
    return fixed(fn, len(args), tuple(kwargs)) if takes_varargs(fn) else fn
