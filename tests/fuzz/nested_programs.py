"""Random scalar programs that call gradients inside the function differentiated, for
fuzzing nested differentiation (perturbation confusion).

`nested_programs()` is a hypothesis strategy whose values are `NestedProgram`s: the text
of a module with a function `inner(y, c, d)` (a smooth expression), its gradient stored
at module level (`dinner = s2sad.grad(inner)`), a helper that calls a function value,
and `f(x, z)`, which computes values from its parameters and calls gradients of `inner`
or of nested functions and lambdas that read those values, in the forms that could
defeat the mechanism (see frontend/gradients.py): a gradient not taken with respect to
the argument the outer derivative flows through (`wrt=1`, or the values a closure
reads), a closure whose values change between its definition and its call or from one
iteration of a loop to the next, a gradient passed as a value, called with keywords,
`value_and_grad`, a lambda in a comprehension that reads the comprehension's variable
(which a module variable of the same name shadows), and a gradient of a function that
calls a gradient.

`NestedProgram.reference` is the same module with every gradient replaced by a
fourth-order central difference of the function (`_fd`), so that the derivative of
`f` can be checked against finite differences of a function that does not use s2sad.

Every expression is smooth (sums, products, sin, cos, tanh) and bounded for inputs in
[-2, 2], so finite differences are trusted everywhere.
"""
import linecache
import re
from dataclasses import dataclass

from hypothesis import strategies as st

from .programs import Choices, _counter, _num

HEADER = '''import math

import s2sad


def _fd(fn, i, args):
    """d fn(*args) / d args[i], by a fourth-order central difference."""
    def at(v):
        return fn(*[v if k == i else a for k, a in enumerate(args)])
    h, v = 1e-3, args[i]
    return (-at(v + 2 * h) + 8 * at(v + h) - 8 * at(v - h) + at(v - 2 * h)) / (12 * h)


def call_with(fn, y, c, d):
    return fn(y, c, d)


shadow = 7.0    # a module variable that a comprehension's variable shadows

'''


@dataclass(frozen=True)
class NestedProgram:
    """A generated module (`source`), the same with finite differences for the gradients
    (`reference`), and the function `f(x, z)`'s name."""

    source: str
    reference: str
    name: str = "f"
    params: tuple = ("x", "z")

    def __repr__(self):
        return f"NestedProgram(source=\n{self.source})"

    def load(self, reference=False):
        text = self.reference if reference else self.source
        filename = f"<s2sad-fuzz-nested-{next(_counter)}>"
        linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
        namespace = {"__name__": "s2sad_fuzz_nested"}
        exec(compile(text, filename, "exec"), namespace)
        return namespace[self.name]


class _NestedGen(Choices):
    def __init__(self, draw):
        self.draw = draw

    def expr(self, names, depth=2, must=None):
        """A smooth expression of `names`, bounded (by about 4) for bounded names, that
        reads `must` if given."""
        if depth == 0 or self.chance(25):
            text = self.pick(names) if self.chance(75) else _num(self.const(-1.5, 1.5))
        else:
            a, b = self.expr(names, depth - 1), self.expr(names, depth - 1)
            text = self.pick(("({a} * {b})", "({a} + {b})", "math.sin({a} * {b})",
                              "({a} - 0.5 * {b})", "math.tanh({a} + {b})", "math.cos({a})",
                              "({a} * {a} * 0.25)")).format(a=a, b=b)
            if self.chance(20):
                text = f"math.tanh({text})"
        if must is not None and must not in _names_in(text):
            text = f"({text} + {must} * {self.expr(names, depth - 1) if depth else '0.5'})"
        return text

    def program(self):
        inner = self.expr(["y", "_C_", "_D_"], 3, must="y")
        module = [HEADER, "def inner(y, c, d):\n    return "
                  f"{inner.replace('_C_', 'c').replace('_D_', 'd')}\n\n",
                  "dinner = s2sad.grad(inner)\n", "vinner = s2sad.value_and_grad(inner)\n",
                  "dinner_c = s2sad.grad(inner, wrt=1)\n\n\n",
                  f"def calls_dinner(y, c, d):\n    return dinner(y, d, c) * c + "
                  f"{self.expr(['y', 'c', 'd'], 1)}\n\n",
                  "dcalls = s2sad.grad(calls_dinner)\n\n\n"]
        body, reference = [], []

        def line(text, ref=None, indent=1):
            body.append("    " * indent + text)
            reference.append("    " * indent + (text if ref is None else ref))

        line(f"a = {self.expr(['x', 'z'], 2, must='x')}")
        line(f"b = {self.expr(['x', 'z', 'a'], 2)}")
        names = ["x", "z", "a", "b"]
        results = []
        for k in range(self.draw(st.integers(1, 3))):
            g = f"g{k}"
            self.spelling(line, g, names, inner)
            names.append(g)
            results.append(g)
        total = " + ".join(f"{self.pos_const()} * {g}" for g in results)
        line(f"return {total} + {self.expr(names, 1)}")
        source = "".join(module) + "def f(x, z):\n" + "\n".join(body) + "\n"
        ref = "".join(module) + "def f(x, z):\n" + "\n".join(reference) + "\n"
        return NestedProgram(source, ref)

    def pos_const(self):
        return self.pick((1.0, 0.5, -1.5, 2.0))

    def spelling(self, line, g, names, inner):
        """Assign `g` a gradient called in one of the forms, and its reference."""
        y = self.expr(names, 1)
        c, d = self.pick(names), self.pick(names)
        lam = inner.replace("_C_", c).replace("_D_", d)
        kind = self.pick(("stored", "in_place", "wrt_captured", "lambda", "nested_def",
                          "value_and_grad", "keywords", "passed", "rebound", "loop",
                          "comprehension", "three_levels"))
        if kind == "stored":
            line(f"{g} = dinner({y}, {c}, {d})", f"{g} = _fd(inner, 0, ({y}, {c}, {d}))")
        elif kind == "in_place":
            line(f"{g} = s2sad.grad(inner)({y}, {c}, {d})",
                 f"{g} = _fd(inner, 0, ({y}, {c}, {d}))")
        elif kind == "wrt_captured":
            spelled = self.pick((f"dinner_c({y}, {c}, {d})",
                                 f"s2sad.grad(inner, wrt=1)({y}, {c}, {d})",
                                 f"s2sad.grad(inner, wrt='c')({y}, {c}, {d})"))
            line(f"{g} = {spelled}", f"{g} = _fd(inner, 1, ({y}, {c}, {d}))")
        elif kind == "lambda":
            line(f"{g} = s2sad.grad(lambda y: {lam})({y})",
                 f"{g} = _fd(lambda y: {lam}, 0, ({y},))")
        elif kind == "nested_def":
            line(f"def local_{g}(y):")
            line(f"return {lam}", indent=2)
            line(f"{g} = s2sad.grad(local_{g})({y})", f"{g} = _fd(local_{g}, 0, ({y},))")
        elif kind == "value_and_grad":
            spelled = self.pick((f"vinner({y}, {c}, {d})",
                                 f"s2sad.value_and_grad(inner)({y}, {c}, {d})"))
            line(f"v_{g}, w_{g} = {spelled}",
                 f"v_{g}, w_{g} = inner({y}, {c}, {d}), _fd(inner, 0, ({y}, {c}, {d}))")
            line(f"{g} = w_{g} + 0.5 * v_{g}")
        elif kind == "keywords":
            line(f"{g} = dinner(d={d}, y={y}, c={c})", f"{g} = _fd(inner, 0, ({y}, {c}, {d}))")
        elif kind == "passed":
            line(f"{g} = call_with(dinner, {y}, {c}, {d})",
                 f"{g} = _fd(inner, 0, ({y}, {c}, {d}))")
        elif kind == "rebound":     # the closure reads the value at its call
            line(f"def local_{g}(y):")
            line(f"return {lam}", indent=2)
            if c not in ("x", "z"):
                line(f"{c} = math.sin({c} + {_num(self.const(-1.0, 1.0))})")
            line(f"{g} = s2sad.grad(local_{g})({y})", f"{g} = _fd(local_{g}, 0, ({y},))")
        elif kind == "loop":        # a captured value changing from one iteration to the next
            line(f"{g} = 0.0")
            line(f"for i_{g} in range({self.draw(st.integers(1, 3))}):")
            if c not in ("x", "z"):
                line(f"{c} = math.cos({c} + 0.5 * i_{g})", indent=2)
            line(f"{g} = {g} + s2sad.grad(lambda y: {lam})({y} + 0.25 * i_{g})",
                 f"{g} = {g} + _fd(lambda y: {lam}, 0, ({y} + 0.25 * i_{g},))", indent=2)
        elif kind == "comprehension":   # a lambda reading the comprehension's variable
            lam = inner.replace("_C_", "shadow").replace("_D_", d)
            loop = f"for shadow in range({self.draw(st.integers(1, 3))})"
            line(f"{g} = sum([s2sad.grad(lambda y: {lam})({y} + 0.25 * shadow) {loop}])",
                 f"{g} = sum([_fd(lambda y: {lam}, 0, ({y} + 0.25 * shadow,)) {loop}])")
        else:                       # a gradient of a function that calls a gradient
            line(f"{g} = dcalls({y}, {c}, {d})", f"{g} = _fd(_calls_fd, 0, ({y}, {c}, {d}))")


def _names_in(text):
    return set(re.findall(r"[A-Za-z_][A-Za-z_0-9]*", text))


REFERENCE_CALLS = '''

def _calls_fd(y, c, d):
    return _fd(inner, 0, (y, d, c)) * c + CALLS_TAIL
'''


@st.composite
def nested_programs(draw):
    program = _NestedGen(draw).program()
    # the reference of `dcalls`: calls_dinner with its inner gradient by differences
    tail = program.source.split("def calls_dinner(y, c, d):\n    return dinner(y, d, c) * c + ")[1]
    tail = tail.split("\n", 1)[0]
    reference = program.reference + REFERENCE_CALLS.replace("CALLS_TAIL", tail)
    return NestedProgram(program.source, reference)
