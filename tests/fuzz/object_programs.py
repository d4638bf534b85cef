"""Random differentiable programs over objects, function values, dicts and star forms, as
source text, for fuzzing the Python that issue #36 made differentiable.

`object_programs()` is a hypothesis strategy whose values are `ObjectProgram`s: the text
of a module (HEADER: plain classes and helpers, the same in every program; then zero to
two generated helpers `h0(t, u)`, `h1(t, u)` of two floats; then `def f(...)`) whose
parameters are one to three of

- `x`, `y`, floats;
- `m`, an object of the plain class `Affine` (floats `w` and `b`, and an int `k`, a
  constant of its structure);

and sometimes a last parameter `act` whose default is a function (`math.tanh`,
`np.sin`, or a function of the module), read by FUNCTION_READS (the tests call `f`
without it).

Each statement of `f` (and of a helper) adds to the sum `s` one of the forms of READS,
reading floats `{x}`, `{y}` drawn among the parameters, the attributes of `m` and the
helper's parameters:

- plain classes (not dataclasses): objects built in the function from differentiated
  values (`Affine(x, y)`, `Shifted(y, x)`, whose `__init__` is inherited), called
  (`__call__`), their methods, a method that calls another on `self` or calls `self`,
  `super()` in an override, an object passed to a helper (`use(obj, x)`), an object
  argument, methods returning a new instance (`a = a.moved(y)`, in a loop too), methods
  changing their object (`a.step(y)`, one calling another), attribute assignment
  (`a.a = v`, `a.b += v`, in a branch; `setattr(a, "a", v)`, in a method too);
- function values: a function or lambda passed to a helper (`apply(math.sin, x)`), a
  function as a parameter's default (`layer(x)`) or passed in its place, by position or
  keyword, `functools.partial` (keyword and positional bindings, passed on, composed);
- `a or b` and `a and b` as values (operands that are 0.0 or not);
- star forms: `*args` helpers (`total(x, y)`, `weighted(x, *pair)`), `f(*xs)`, `a, *rest
  = xs`, `[*pair, y]`, `zip(*pairs)`;
- dicts: displays, comprehensions, `dict(a=...)`, `d[k] = v`, `d.get(k, default)`,
  `f(**d)` and `f(x, **d)`, `.values()` and `.items()` read by `sum` and by loops;
- builtins that stand for loops: `map` (one and two sequences, a lambda), `max`/`min` of
  a list, with and without `key=`, `sorted(xs, key=...)`, `enumerate(xs, start=1)`,
  `zip`, `divmod`, `list(genexp)`, `tuple(genexp)`.

Every program is valid and returns a float; it is smooth except at ties of `max`, `min`,
`sorted` and `abs` and at the jumps of `divmod`, which the test skips (it compares only
where two central differences agree). Shrinking gives fewer statements and the first
choice of each (an object built and called).
"""
import itertools
import linecache
from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

_counter = itertools.count()

HEADER = '''import functools
import math

import numpy as np


class Affine:
    def __init__(self, w, b):
        self.w = w
        self.b = b
        self.k = 2

    def __call__(self, t):
        return self.w * t + self.b

    def energy(self):
        return self.w * self.w + 0.5 * self.k * self.b

    def twice(self, t):
        return self(self(t)) * 0.5

    def scaled(self, t):
        return self.energy() * t

    def moved(self, t):
        return Affine(self.w + t, self.b * t)

    def step(self, t):
        self.w = self.w + t * self.b
        self.b = self.b - t * math.sin(self.w)

    def pushed(self, t):
        self.step(t)
        self.b += t * self.w
        return self.w * self.b


class Shifted(Affine):
    def __call__(self, t):
        return super().__call__(t) + 0.25 * t * t

    def energy(self):
        return super().energy() + math.sin(self.b)


class Pair:
    def __init__(self, a, b):
        self.a, self.b = a, b

    def dot(self, other):
        return self.a * other.a + self.b * other.b

    def swapped(self):
        return Pair(self.b, self.a)

    def put(self, v):
        setattr(self, "a", v * 2.0)


def use(obj, t):
    return obj(t) * obj.w + obj.energy()


def apply(fn, t):
    return fn(t)


def compose(g, h, t):
    return g(h(t))


def layer(t, act=math.tanh):
    return act(t) * 0.5


def both(g, h, t):
    return g(t) * h(t)


def total(*terms):
    return sum(terms)


def weighted(t, *ws):
    s = 0.0
    for w in ws:
        s = s + w * t
    return s


def poly(t, a=1.0, b=0.5):
    return a * t + b * t * t


def scale(t, c):
    return c * t

'''

#: f's possible parameters and their kinds.
PARAMS = {"x": "float", "y": "float", "m": "object"}

#: Statements adding to `s` (lists of lines): `{x}`, `{y}` are floats, `{a}`, `{b}`, `{c}`
#: fresh names. The first is the simplest (shrinking goes there).
READS = [
    # plain classes
    ["{a} = Affine({x}, {y})", "s = s + {a}({x})"],
    ["{a} = Affine({x}, 0.5)", "s = s + {a}.twice({y})"],
    ["s = s + Affine({y}, {x}).scaled({x})"],
    ["{a} = Shifted({x}, {y})", "s = s + {a}({y}) + {a}.energy()"],
    ["{a} = Shifted({y}, {x})", "s = s + use({a}, {x})"],
    ["s = s + use(Affine({x}, {y}), {y})"],
    ["{a} = Pair({x}, {y})", "s = s + {a}.dot(Pair({y}, 2.0))"],
    ["{a} = Pair({x}, {y})", "{b} = Affine({a}.a, {a}.b)", "s = s + {b}.energy()"],
    ["s = s + both(math.sin, Affine({y}, 0.5), {x})"],
    # function values and partials
    ["s = s + apply(math.sin, {x})"],
    ["s = s + apply(lambda {a}: {a} * {y}, {x})"],
    ["s = s + layer({x})"],
    ["s = s + layer({x}, math.cos)"],
    ["s = s + layer({x}, act=np.sin)"],
    ["s = s + layer({x}, act=lambda {a}: {a} * {y})"],
    ["{a} = functools.partial(scale, c={y})", "s = s + {a}({x}) + apply({a}, {y})"],
    ["{a} = functools.partial(poly, b={x})", "s = s + apply({a}, {y})"],
    ["{a} = functools.partial(poly, {x})", "s = s + {a}(a={y})"],
    ["s = s + compose(math.tanh, functools.partial(scale, c={x}), {y})"],
    # or / and as values
    ["s = s + ({x} or {y})"],
    ["s = s + ({x} and {y}) * 0.5"],
    ["{a} = {x} * 0.0 or {y}", "s = s + {a} * {x}"],
    ["{a} = 0.0 and {x}", "s = s + {a} + ({a} or {y})"],
    # star forms
    ["s = s + total({x}, {y}, {x} * {y})"],
    ["{a} = [{x}, {y}]", "s = s + total(*{a})"],
    ["s = s + weighted({x}, *({y}, 2.0))"],
    ["{a} = ({x}, {y})", "s = s + scale(*{a})"],
    ["{a}, *{b} = [{x}, {y}, {x} * {y}]", "s = s + {a} * sum({b})"],
    ["{a} = ({x}, 2.0)", "s = s + sum([*{a}, {y}])"],
    ["{a} = [({x}, {y}), ({y}, 2.0)]", "{b}, {c} = zip(*{a})", "s = s + sum({b}) * sum({c})"],
    # dicts
    ["{a} = {{'a': {x}, 'b': {y}}}", "{a}['c'] = {x} * {y}", "s = s + sum({a}.values())"],
    ["{a} = dict(a={x}, b={y})", "for {b}, {c} in {a}.items():", "    s = s + {c} * {c}"],
    ["s = s + poly(**{{'t': {x}, 'b': {y}}})"],
    ["{a} = {{'a': {y}}}", "s = s + poly({x}, **{a})"],
    ["{a} = {{'a': {x}}}", "s = s + {a}.get('z', 1.0) * {a}.get('a', 0.0)"],
    ["{a} = {{{b}: {c} * 2.0 for {b}, {c} in [('p', {x}), ('q', {y})]}}",
     "s = s + {a}['p'] * {a}['q']"],
    ["{a} = {{'a': {x}, 'b': {y}}}", "s = s + sum({b} * {b} for {b} in {a}.values())"],
    ["{a} = {{'p': {x}}}", "{a}['q'] = {y}", "for {b} in {a}.values():", "    s = s + math.sin({b})"],
    # builtins that stand for loops
    ["s = s + max([{x}, {y}, {x} * {y}])"],
    ["s = s + min([{x}, {y}]) * {x}"],
    ["s = s + max([{x}, {y}], key=abs)"],
    ["s = s + sorted([{x}, {y}, 0.1], key=lambda {a}: {a} * {a})[0]"],
    ["s = s + sum(list({a} * {a} for {a} in ({x}, {y})))"],
    ["s = s + tuple({a} * 2.0 for {a} in [{x}, {y}])[1]"],
    ["{a}, {b} = divmod({x} + 3.0, 0.7)", "s = s + {b} * {y}"],
    ["for {a}, {b} in enumerate([{x}, {y}], start=1):", "    s = s + {a} * {b}"],
    ["s = s + sum(map(math.sin, [{x}, {y}]))"],
    ["s = s + sum(map(lambda {a}: {a} * {x}, [{y}, 2.0]))"],
    ["s = s + sum(map(scale, [{x}, {y}], [{y}, 0.5]))"],
    ["for {a}, {b} in zip([{x}, {y}], ({y}, 1.5)):", "    s = s + {a} * {b}"],
    # methods that return a new instance of the class (`state = state.step(dt)`)
    ["{a} = Affine({x}, {y}).moved({x})", "s = s + {a}.energy()"],
    ["{a} = Affine({x}, {y})", "for {b} in range(2):", "    {a} = {a}.moved({y})",
     "s = s + {a}({x})"],
    ["{a} = Pair({x}, {y}).swapped()", "s = s + {a}.dot(Pair({y}, 1.5).swapped())"],
    # methods that change their object, and attribute assignment (issue #34)
    ["{a} = Affine({x}, {y})", "for {b} in range(2):", "    {a}.step({y})",
     "s = s + {a}({x})"],
    ["{a} = Affine({x}, {y})", "{b} = {a}.pushed(0.3)", "s = s + {b} * {a}.energy()"],
    ["{a} = Pair({x}, {y})", "{a}.a = {a}.a * {y}", "{a}.b += {a}.a", "s = s + {a}.dot({a})"],
    ["{a} = Pair(0.0, {y})", "if {x} > 0.5:", "    {a}.a = {x} * {x}", "s = s + {a}.a * {a}.b"],
    # setattr with the name written in the call, as the attribute assignment (issue #34)
    ["{a} = Pair({x}, 1.0)", "setattr({a}, 'b', {a}.a * {y})", "s = s + {a}.a * {a}.b"],
    ["{a} = Pair({y}, 0.5)", "if {x} > 0.5:", "    setattr({a}, 'a', {x} * {y})",
     "s = s + {a}.dot({a})"],
    ["{a} = Pair({x}, {y})", "{a}.put({y} * {x})", "s = s + {a}.a * {a}.b"],
]

#: Reads of the object parameter `{m}` (only where f has one).
OBJECT_READS = [
    ["s = s + {m}({x})"],
    ["s = s + {m}.w * {m}.b"],
    ["s = s + {m}.scaled({x})"],
    ["s = s + {m}.twice({x})"],
    ["s = s + use({m}, {x})"],
    ["s = s + apply({m}, {x})"],
    ["{a} = Pair({m}.w, {x})", "s = s + {a}.dot(Pair({m}.b, 1.5))"],
]


#: Reads of the function value `{act}`, f's last parameter's default (where f has one).
FUNCTION_READS = [
    ["s = s + {act}({x})"],
    ["s = s + apply({act}, {x}) * {y}"],
    ["s = s + layer({x}, {act})"],
    ["s = s + compose({act}, {act}, {x})"],
    ["{a} = functools.partial(compose, {act})", "s = s + {a}(math.sin, {y})"],
]


@dataclass(frozen=True)
class ObjectProgram:
    """A generated module: `source`, and `f`'s parameters (`params`)."""

    source: str
    params: tuple

    def __repr__(self):
        return f"ObjectProgram(params={self.params!r}, source=\n{self.source})"

    def kinds(self):
        return [PARAMS[p] for p in self.params]

    def load(self):
        """Exec the module under a fresh file name registered in `linecache` (so that
        `inspect.getsource` works) and return `f` (its classes are its globals)."""
        filename = f"<s2sad-fuzz-objects-{next(_counter)}>"
        linecache.cache[filename] = (len(self.source), None,
                                     self.source.splitlines(True), filename)
        namespace = {"__name__": "s2sad_fuzz_objects"}
        exec(compile(self.source, filename, "exec"), namespace)
        return namespace["f"]


def forget(fn):
    linecache.cache.pop(getattr(getattr(fn, "__code__", None), "co_filename", None), None)


class _Names:
    def __init__(self):
        self.n = 0

    def fresh(self):
        self.n += 1
        return f"v{self.n}"


def _body(draw, floats, obj, helpers, n, names, act=None):
    """`n` statements adding to `s`: reads of the floats `floats` (expressions), of the
    object `obj` and the function value `act` (names, or None), and calls of the
    `helpers` (names of h(t, u))."""
    out = []
    kinds = {"read": READS, "object": OBJECT_READS, "function": FUNCTION_READS}
    for _ in range(n):
        x = draw(st.sampled_from(floats), label="x")
        y = draw(st.sampled_from(floats), label="y")
        what = draw(st.sampled_from(["read"] + (["object"] if obj else [])
                                    + (["function"] if act else [])
                                    + (["helper"] if helpers else [])), label="statement")
        if what == "helper":
            h = draw(st.sampled_from(helpers), label="helper")
            out.append(f"s = s + {h}({x}, {y}) * 0.5")
            continue
        lines = draw(st.sampled_from(kinds[what]), label=what)
        a, b, c = names.fresh(), names.fresh(), names.fresh()
        out += [line.format(x=x, y=y, m=obj, act=act, a=a, b=b, c=c) for line in lines]
    return out


@st.composite
def object_programs(draw, max_statements=4):
    """Programs over floats and an object, built of the forms of READS and OBJECT_READS
    (see the module docstring)."""
    params = draw(st.lists(st.sampled_from(sorted(PARAMS)), min_size=1, max_size=3,
                           unique=True), label="parameters")
    lines = [HEADER]
    helpers = []
    for k in range(draw(st.integers(0, 2), label="helpers")):
        body = _body(draw, ["t", "u"], None, list(helpers),
                     draw(st.integers(1, 2), label="helper size"), _Names())
        lines += [f"def h{k}(t, u):", "    s = 0.0"] + ["    " + b for b in body]
        lines += ["    return s", "", ""]
        helpers.append(f"h{k}")
    floats = [p for p in params if PARAMS[p] == "float"]
    obj = "m" if "m" in params else None
    if obj:
        floats += ["m.w", "m.b"]
    act = draw(st.sampled_from([None, "act"]), label="a function as a default")
    default = draw(st.sampled_from(["math.tanh", "np.sin", "half_cos"]), label="default")
    body = _body(draw, floats, obj, helpers,
                 draw(st.integers(1, max_statements), label="statements"), _Names(), act)
    signature = ", ".join(params) + (f", act={default}" if act else "")
    if act and default == "half_cos":
        lines += ["def half_cos(t):", "    return math.cos(t) * 0.5", "", ""]
    lines += [f"def f({signature}):", "    s = 0.0"]
    lines += ["    " + b for b in body] + ["    return s", ""]
    return ObjectProgram("\n".join(lines), tuple(params))


def example_arguments(program, f, seed=0):
    """Arguments for `program` (whose loaded function is `f`) from a generator seeded
    with `seed`: floats in [-1.5, 1.5], and an `Affine` of such floats."""
    rng = np.random.default_rng(seed)
    out = []
    for kind in program.kinds():
        if kind == "float":
            out.append(float(rng.uniform(-1.5, 1.5)))
        else:
            out.append(f.__globals__["Affine"](float(rng.uniform(-1.5, 1.5)),
                                               float(rng.uniform(-1.5, 1.5))))
    return out
