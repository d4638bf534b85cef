"""Random differentiable programs over containers, as source text, for fuzzing how s2sad
adds the adjoints of lists, tuples and dicts (issue #34).

`container_programs()` is a hypothesis strategy whose values are `ContainerProgram`s: the
text of a module (`import math`, `import numpy as np`, a constant `H0`, the helpers
`total(*terms)` and `weigh(w, v, u=0.5)` (HELPERS), zero to three generated helper
functions and one `def f(...)`) whose parameters are one to three of

- `xs`, a list of two or three floats;
- `d`, a dict `{"w": float, "v": float64 array of shape (3,)}`;
- `ts`, a tuple of two float64 arrays of shape (3,);
- `layers`, a list of two `(W, b)` tuples (W of shape (2, 2), b of shape (2,)).

Each parameter is read in several of the ways that defeat a `+` between adjoints: by
index and by key, in loops (`for x in xs`, `enumerate`, `zip(xs, xs)`, `d.items()`,
`d.values()`, `for k in d`, `for W, b in layers`), in comprehensions (`sum([x * x for x
in xs])`, a list of lists by one inside another, or rows filled then appended),
unpacked (`a, b = ts`), copied or rebuilt (`tuple(xs)`, `list(ts)`, `dict(d)`,
a dict display or comprehension of its values, `d.get('w', 1.0)`), by NumPy as an array (`np.sum(np.array(xs) ** 2)`,
`np.append(xs, 0.5)`, `np.tanh(xs)`, `np.dot(xs, xs)`, `np.stack(ts)`,
`np.concatenate(ts)`), and passed whole to helpers (several of them, several times,
a helper calling another with it), and by the builtins that stand for loops (`map`,
`enumerate(..., start=1)`, `divmod`, `max`/`min`/`sorted` with and without `key=`) and
star forms (`a, *rest = xs`, `math.hypot(*pair)`, `[*pair, xs[0]]`, `zip(*pairs)`,
`total(*pair, x)` of a helper with `*args`, `weigh(**d)` of a dict display), and dicts
written to (`d2[k] = v`, also in a loop over `d.items()`) and read by `sum`
(`sum(d.values())`, a generator over `d.items()`).
Every program is valid, smooth where its arguments are drawn (no branches; the picks
of `max` and `sorted` change only at ties, which random arguments do not meet) and
returns a float. Shrinking gives
fewer statements and the first choice of each: a list read by index.
"""
import itertools
import linecache
from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

_counter = itertools.count()

#: The parameters, their kinds, and how to make an argument of each (from a generator).
PARAMS = {
    "xs": "list",
    "d": "dict",
    "ts": "tuple",
    "layers": "layers",
}


def argument(kind, rng, length=3):
    if kind == "list":
        return [float(v) for v in rng.uniform(-1.5, 1.5, size=length)]
    if kind == "dict":
        return {"w": float(rng.uniform(-1.5, 1.5)), "v": rng.uniform(-1.5, 1.5, size=3)}
    if kind == "tuple":
        return (rng.uniform(-1.5, 1.5, size=3), rng.uniform(-1.5, 1.5, size=3))
    return [(rng.uniform(-1, 1, size=(2, 2)), rng.uniform(-1, 1, size=2)) for _ in range(2)]


#: Reads of a parameter `{p}` of each kind, added to the sum `s`: each a list of lines
#: (`{a}`, `{b}`, `{c}`: fresh names).
READS = {
    "list": [
        ["s = s + {p}[0] * {p}[1]"],
        ["s = s + math.sin({p}[-1]) * {p}[0]"],
        ["s = s + sum({p})"],
        ["s = s + sum([{a} * {a} for {a} in {p}])"],
        ["for {a} in {p}:", "    s = s + math.sin({a}) * 0.5"],
        ["for {b}, {a} in enumerate({p}):", "    s = s + {a} * {p}[{b}] * 0.5"],
        ["for {a}, {b} in zip({p}, {p}):", "    s = s + {a} * math.cos({b})"],
        ["s = s + np.sum(np.array({p}) ** 2)"],
        ["s = s + np.sum(np.append({p}, 0.5) ** 2)"],
        ["s = s + np.sum(np.tanh({p}))"],
        ["s = s + np.dot({p}, {p}) * 0.25"],
        ["{a} = tuple({p})", "s = s + {a}[0] * {a}[-1]"],
        ["{a} = list({b} * 2.0 for {b} in {p})", "s = s + sum({a}) * 0.5"],
        ["{a} = {{'first': {p}[0], 'last': {p}[-1]}}", "s = s + {a}['first'] * {a}['last']"],
        ["s = s + sum(map(math.sin, {p}))"],
        ["s = s + sum(map(lambda {a}: {a} * {a}, {p})) * 0.5"],
        ["for {b}, {a} in enumerate({p}, start=1):", "    s = s + {a} * {b} * 0.5"],
        ["{a}, {b} = divmod({p}[0] + 3.0, 7.0)", "s = s + {b} * {p}[-1]"],
        ["s = s + max({p}, key=abs) * {p}[0]"],
        ["s = s + sorted({p}, key=lambda {a}: -{a})[0] * min({p})"],
        ["{a}, *{b} = {p}", "s = s + {a} * sum({b})"],
        ["*{b}, {a} = {p}", "s = s + {a} * {b}[0]"],
        ["{a} = ({p}[0], 2.0 * {p}[1])", "s = s + math.hypot(*{a}) + sum([*{a}, {p}[0]])"],
        ["s = s + max({p}) * {p}[0]"],
        ["{a} = [({p}[0], {p}[-1]), ({p}[1], 2.0)]", "{b}, {c} = zip(*{a})",
         "s = s + sum({b}) * sum({c})"],
        ["{a} = [{p}[0], {p}[-1] * 2.0]", "s = s + total(*{a}, {p}[1]) * {p}[0]"],
        ["{a} = [[{b} * {c} for {c} in {p}] for {b} in {p}]",
         "s = s + sum(sum({b}) for {b} in {a}) * 0.25"],
        ["{a} = []", "for {b} in {p}:", "    {c} = [{b} * {b}]", "    {c}.append(math.sin({b}))",
         "    {a}.append({c})", "s = s + sum({a}[0]) * {a}[-1][1]"],
    ],
    "dict": [
        ["s = s + {p}['w'] * np.sum({p}['v'])"],
        ["s = s + np.sum(np.sin({p}['v']) * {p}['w'])"],
        ["for {a}, {b} in {p}.items():", "    s = s + np.sum(np.tanh({b}))"],
        ["for {a} in {p}:", "    s = s + np.sum({p}[{a}] * {p}[{a}]) * 0.25"],
        ["for {a} in {p}.values():", "    s = s + np.sum(np.cos({a}))"],
        ["{a} = {{'w2': {p}['w'] * 2.0, 'v': np.sin({p}['v'])}}",
         "s = s + {a}['w2'] * np.sum({a}['v'])"],
        ["{a} = {{{b}: {c} * 0.5 for {b}, {c} in {p}.items()}}",
         "s = s + np.sum({a}['v']) * {a}['w']"],
        ["s = s + {p}.get('w', 1.0) * np.sum({p}.get('u', {p}['v']))"],
        ["{a} = dict({p})", "s = s + np.sum({a}['v'] ** 2) * 0.25"],
        ["{a} = dict(w={p}['w'], v={p}['v'] * 2.0)", "s = s + {a}['w'] * np.sum({a}['v'])"],
        ["{a} = dict({p})", "{a}['w'] = {p}['w'] * 3.0", "s = s + {a}['w'] * np.sum({a}['v'])"],
        ["{a} = {{}}", "for {b}, {c} in {p}.items():", "    {a}[{b}] = {c} * 2.0",
         "s = s + np.sum({a}['v']) * {a}['w']"],
        ["{a} = {{'w': {p}['w'], 'v': {p}['v'] * 2.0}}", "s = s + weigh(**{a})"],
        ["s = s + weigh({p}['w'], **{{'v': {p}['v']}})"],
        ["s = s + np.sum(sum({p}.values()))"],
        ["s = s + sum(np.sum({b}) * 0.5 for {a}, {b} in {p}.items())"],
    ],
    "tuple": [
        ["s = s + np.sum({p}[0] * {p}[1])"],
        ["{a}, {b} = {p}", "s = s + np.sum({a} * np.tanh({b}))"],
        ["s = s + np.sum(np.stack({p}) ** 2) * 0.25"],
        ["s = s + np.sum(np.concatenate({p}) * 0.3)"],
        ["for {a} in {p}:", "    s = s + np.sum(np.sin({a}))"],
        ["{a} = list({p})", "s = s + np.sum({a}[0] * {a}[1])"],
        ["{a}, *{b} = {p}", "s = s + np.sum({a} * {b}[0])"],
        ["{a} = ({p}[0], {p}[1])", "s = s + sum({b} * {c} for {b}, {c} in zip(*{a}))"],
    ],
    "layers": [
        ["{a} = H0", "for {b}, {c} in {p}:", "    {a} = np.tanh({b} @ {a} + {c})",
         "s = s + np.sum({a})"],
        ["for {a}, {b} in {p}:", "    s = s + 0.1 * np.sum({a} * {a}) + np.sum({b})"],
        ["s = s + np.sum({p}[0][0] @ {p}[1][1])"],
        ["for {a} in {p}:", "    s = s + np.sum(np.tanh({a}[1]))"],
    ],
}


#: Helpers every program defines: `*args`, and keywords that `**d` passes.
HELPERS = '''
def total(*terms):
    return sum(terms)


def weigh(w, v, u=0.5):
    return w * np.sum(v) + u

'''


@dataclass(frozen=True)
class ContainerProgram:
    """A generated module: `source`, and the kinds of `f`'s parameters (`params`)."""

    source: str
    params: tuple

    def __repr__(self):
        return f"ContainerProgram(params={self.params!r}, source=\n{self.source})"

    def kinds(self):
        return [PARAMS[p] for p in self.params]

    def load(self):
        """Exec the module under a fresh file name registered in `linecache` (so that
        `inspect.getsource` works) and return `f`."""
        filename = f"<s2sad-fuzz-containers-{next(_counter)}>"
        linecache.cache[filename] = (len(self.source), None,
                                     self.source.splitlines(True), filename)
        namespace = {"__name__": "s2sad_fuzz_containers"}
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


def _read(draw, kind, p, names):
    lines = draw(st.sampled_from(READS[kind]), label=f"read of a {kind}")
    a, b, c = names.fresh(), names.fresh(), names.fresh()
    return [line.format(p=p, a=a, b=b, c=c) for line in lines]


def _body(draw, params, helpers, n, names):
    """`n` statements adding reads of `params` (name -> kind) to `s`: reads, and calls of
    the `helpers` (kind -> names) that take a parameter's kind."""
    out = []
    for _ in range(n):
        p = draw(st.sampled_from(sorted(params)), label="parameter")
        kind = params[p]
        callable_ = helpers.get(kind, [])
        if callable_ and draw(st.booleans(), label="call a helper"):
            h = draw(st.sampled_from(callable_), label="helper")
            factor = draw(st.sampled_from(["", " * 0.5", " * s0"]), label="factor")
            out.append(f"s = s + {h}({p}){factor}")
        else:
            out += _read(draw, kind, p, names)
    return out


@st.composite
def container_programs(draw, max_statements=4):
    """Programs whose parameters are containers read in many ways (see the module
    docstring)."""
    params = draw(st.lists(st.sampled_from(sorted(PARAMS)), min_size=1, max_size=3,
                           unique=True), label="parameters")
    lines = ["import math", "", "import numpy as np", "", "H0 = np.array([0.3, -0.2])", "",
             HELPERS]
    helpers = {}
    kinds_used = sorted({PARAMS[p] for p in params})
    for k in range(draw(st.integers(0, 3), label="helpers")):
        kind = draw(st.sampled_from(kinds_used), label="helper's kind")
        name = f"h{k}"
        names = _Names()
        size = draw(st.integers(1, 3), label="helper size")
        body = _body(draw, {"q": kind}, helpers, size, names)
        lines += [f"def {name}(q):", "    s = 0.0", "    s0 = 0.7"]
        lines += ["    " + b for b in body]
        lines += ["    return s", "", ""]
        helpers.setdefault(kind, []).append(name)
    names = _Names()
    body = _body(draw, {p: PARAMS[p] for p in params}, helpers,
                 draw(st.integers(1, max_statements), label="statements"), names)
    lines += [f"def f({', '.join(params)}):", "    s = 0.0", "    s0 = 0.7"]
    lines += ["    " + b for b in body] + ["    return s", ""]
    return ContainerProgram("\n".join(lines), tuple(params))


def example_arguments(program, seed=0):
    """Arguments for `program` from a generator seeded with `seed` (lists of three floats,
    or of two for odd seeds)."""
    rng = np.random.default_rng(seed)
    return [argument(kind, rng, length=3 - seed % 2) for kind in program.kinds()]
