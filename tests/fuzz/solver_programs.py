"""Random programs that call SciPy's root finders and minimisers on a function of the
user's, for fuzzing the implicit derivatives of calls that take a user's function
(s2sad/implicit.py, s2sad/scipy_solvers.py, s2sad/scipy_optimisers.py).

`solver_programs()` is a hypothesis strategy whose values are `SolverProgram`s: the text of
a module with a function `f(x, z)` that computes two parameters from x and z (random
smooth expressions, squashed so that k is in [1, 1.5] and c in [-2, 2]), calls one of
`brentq`, `newton`, `fsolve` or `minimize` on a residual (or objective) that reads them,
and returns a smooth function of the solution and the parameters. The residual is
u^3 + k u - c (plus a weak coupling of the two unknowns for fsolve and minimize, whose
objective is the residual's integral), strictly increasing in u, so the root (and the
minimiser) is unique and inside the bracket [-10, 10]. The function passed takes the
forms users write: a module-level function with `args=(k, c)`, the same with `args=`
a name for a tuple made in the function, a lambda or a nested function that reads k and
c, and `functools.partial` (by keyword or by position).

Every solve runs with tight tolerances, so that central differences of the whole program
(the solver run again at each step) are the oracle.
"""
import linecache
from dataclasses import dataclass

from hypothesis import strategies as st

from .programs import _counter

HEADER = '''import functools
import math

import numpy as np
from scipy import optimize

import s2sad


def resid(u, k, c):
    return u ** 3 + k * u - c


def resid_first(k, c, u):
    return u ** 3 + k * u - c


def coupled(u, k, c):
    return u ** 3 + k * u + 0.1 * np.sin(u[::-1]) - c


def energy(u, k, c):
    return np.sum(u ** 4 / 4 + k * u ** 2 / 2 - c * u) - 0.1 * np.cos(u[0]) * np.cos(u[1])


'''

SOLVERS = ("brentq", "newton", "fsolve", "minimize")
FORMS = ("args", "named_args", "lambda", "nested", "partial", "partial_positional")


@dataclass(frozen=True)
class SolverProgram:
    """A generated module (`source`) and the function `f(x, z)`'s name."""

    source: str
    name: str = "f"
    params: tuple = ("x", "z")

    def __repr__(self):
        return f"SolverProgram(source=\n{self.source})"

    def load(self):
        filename = f"<s2sad-fuzz-solvers-{next(_counter)}>"
        linecache.cache[filename] = (len(self.source), None,
                                     self.source.splitlines(True), filename)
        namespace = {"__name__": "s2sad_fuzz_solvers"}
        exec(compile(self.source, filename, "exec"), namespace)
        return namespace[self.name]


def _expr(draw, depth=2):
    """A smooth expression of x and z."""
    if depth == 0 or draw(st.integers(0, 2)) == 0:
        return draw(st.sampled_from(("x", "z", "0.5", "1.3", "-0.7")))
    kind = draw(st.sampled_from(("+", "*", "sin", "cos", "tanh")))
    if kind in ("+", "*"):
        return f"({_expr(draw, depth - 1)} {kind} {_expr(draw, depth - 1)})"
    return f"math.{kind}({_expr(draw, depth - 1)})"


def _function(form, vector, name):
    """(lines defining what is passed, the function argument, the args= text)."""
    base = "energy" if name == "minimize" else ("coupled" if vector else "resid")
    if form == "args":
        return [], base, ", args=(k, c)"
    if form == "named_args":
        return ["    extra = (k, c)"], base, ", args=extra"
    if form == "lambda":
        return [], f"lambda u: {base}(u, k, c)", ""
    if form == "nested":
        return ["    def inner(u):", f"        return {base}(u, k, c)"], "inner", ""
    if form == "partial" or vector:
        return [], f"functools.partial({base}, k=k, c=c)", ""
    return [], "functools.partial(resid_first, k, c)", ""      # (by position, before u)


def _call(solver, fn, args):
    if solver == "brentq":
        return f"optimize.brentq({fn}, -10.0, 10.0{args}, xtol=1e-14)"
    if solver == "newton":
        return f"optimize.newton({fn}, 0.5{args}, tol=1e-14, maxiter=200)"
    if solver == "fsolve":
        return f"optimize.fsolve({fn}, np.array([0.5, -0.5]){args}, xtol=1e-13)"
    return (f"optimize.minimize({fn}, np.array([0.5, -0.5]){args}, method='Newton-CG', "
            "jac=s2sad.grad(energy), hess=s2sad.hessian(energy), tol=1e-12).x")


@st.composite
def solver_programs(draw):
    """Hypothesis strategy of `SolverProgram`s (see the module docstring)."""
    solver = draw(st.sampled_from(SOLVERS))
    form = draw(st.sampled_from(FORMS))
    if solver == "minimize" and form not in ("args", "named_args"):
        form = "args"       # (the exact gradient and Hessian, to converge tightly)
    vector = solver in ("fsolve", "minimize")
    lines = [f"    k = 1.0 + 0.5 * math.tanh({_expr(draw)}) ** 2",
             f"    c = 2.0 * math.tanh({_expr(draw)})"]
    before, fn, args = _function(form, vector, solver)
    lines += before + [f"    u = {_call(solver, fn, args)}"]
    if vector:
        lines.append("    u = u[0] * 1.5 - u[1] * x")
    out = draw(st.sampled_from(("u * x + math.sin(u) * z", "u", "u * u + k * c",
                                "math.cos(u + z) * c")))
    lines.append(f"    return {out}")
    return SolverProgram(HEADER + "def f(x, z):\n" + "\n".join(lines) + "\n")
