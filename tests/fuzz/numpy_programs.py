"""Random differentiable NumPy programs, as source text, for fuzzing s2sad.

`numpy_programs()` is a hypothesis strategy whose values are `NumpyProgram`s: the text of
a module `import numpy as np` with one `def f(x, w, v, s)`: one to three float64 array
parameters of small fixed shapes (`(3,)`, `(2, 3)`, `(3, 1)`, `(2,)`, `(1, 3)`) and
sometimes a float parameter `s`. The generator tracks the shape of every value (all of
them have at most two axes of length 1 to 3), so every program is valid and returns a
scalar. The subset:

- elementwise arithmetic `+ - * /` with broadcasting between any two shapes that
  broadcast (scalars included), unary `-`, and the ufuncs `np.sin`, `np.cos`, `np.tanh`,
  `np.arctan`, `np.square`, `np.abs`, `np.exp`/`np.expm1`/`np.sinh` of bounded values,
  `np.log(c + v * v)`, `np.log1p(v * v)`, `np.sqrt(2.0 + np.cos(v))`, divisions by
  `c + np.cos(v)` or `1.0 + v * v`, `np.maximum`/`np.minimum`, `np.where` on comparisons,
  `np.clip` with constant bounds, conditional expressions on a scalar condition, and
  calls of `np.vectorize` of a lambda with a branch (whose `0` first makes an int array);
- reductions, full or along an axis, with or without `keepdims`: `np.sum`, `np.mean`,
  `np.max`, `np.min`, and `np.prod` (of factors of at most 1, exact zeros included),
  also as methods (`v.sum(axis=0)`);
- `@`, `np.dot` and `np.matmul` where the shapes fit (vector-vector, matrix-vector,
  matrix-matrix);
- indexing reads: integers (also negative and loop variables), slices (with negative
  bounds and steps), `None`, `...`, integer lists (with repeats) and constant boolean
  masks (`v[np.array([True, False, True])]`), and data-dependent masks inside a full
  reduction (`np.sum(v[v > 0.5])`);
- shape functions: `reshape` (method and function, also `-1`), `ravel`, `flatten`,
  `.T`, `np.transpose`, `np.swapaxes`, `np.squeeze`, `np.expand_dims`, `np.broadcast_to`,
  `np.flip`, `np.concatenate`, `np.stack`, `np.array` of scalars, `np.zeros`,
  `np.ones`, `np.zeros_like`, `copy`;
- statements: assignments (new names and rebinding with the same shape), element
  writes `a[idx] = e`, `a[idx] += e`, `a[idx] -= e`, `a[idx] *= c` (integer, slice,
  loop-variable, integer-list and mask indices; with `repeats`, also indexes that name
  a position more than once: see `repeated_write_programs`) and whole-array `a += e` / `a *= e`
  only into arrays the function created (`x.copy()`, `np.zeros(...)`, results of
  arithmetic; never a parameter or a view of one), `if`/`else` on a scalar condition
  (`if np.sum(x) > 0.5:`), `for i in range(k)` with array-carried values, and a list
  appended in a loop and then joined with `np.stack`, `np.array` or `np.concatenate`.

By default the program never aliases an array it writes into: a view (a bare name, a
slice, `reshape`, `.T`, ...) of a writable array is copied (`np.copy(...)`) before it
is stored in another name or a list, and a writable name is only rebound to a fresh
array. So Python's reference semantics and s2sad's value semantics agree.

Two options add writes through shared storage, where the two semantics differ (each is
the chance in percent that a program may use the family; the program's `mutation`
says which it uses):

- `views`: a view or alias of a writable array bound to a name (`z = y`, `v = y.view()`,
  `v = y.reshape(-1)`, `v = y.T`, `v = y.ravel()`, `r = y[0]`, `s = y[1:]`, `y[None]`,
  ...; `y[0]` of a vector is a copy), usually followed by a write through the view or
  the base (element and slice assignments `v[i] = e`, `v[i, j] = e`, `v[...] = e`,
  augmented assignments of whole arrays `v *= e`, which NumPy does in place) and a read
  of the other name; and loops over an array's rows (`for row in y:`), whose body
  often writes through `row`. Writes through views also come from the ordinary write
  statements, which may pick a view.
- `writers`: calls that write into a writable array (possibly a view), or into a view
  of it written out (`y[1:].sort()`, `np.exp(y.T, out=y.T)`): `out=` on ufuncs and
  reductions (`np.multiply(a, b, out=y)`, `np.exp(y, out=y)`,
  `np.sum(a, axis=0, out=y)`, `np.clip(a, lo, hi, out=y)`, the output of a ufunc or
  `np.clip` also by position (`np.add(a, b, y)`), sometimes with the result
  bound to a new name, an alias of `y`), in-place methods (`y.sort()`, `y.fill(e)`) and
  writer functions (`np.copyto(y, e)`, also `where=` a comparison, `np.put(y, idx, e)`, `np.add.at(y, idx, e)`,
  `np.subtract.at`).

The generator keeps, for each name, the names that may share its storage, and a write
through one updates the bounds of all. Only storage the function created is written
(a view of a parameter is never writable), so `f` never mutates its arguments.

Every program evaluates without error or overflow for inputs in [-2, 2]: values are
kept bounded (logarithms and square roots see positive arguments, divisors stay away
from zero, `exp` sees bounded arguments, loop-carried values are squashed with
`np.tanh`). `np.max`, `np.abs`, `np.maximum`, masks and comparisons make kinks; the
tests only compare derivatives where `f` is smooth.

Not generated (s2sad limitations or outside the subset): `while` loops,
`break`/`continue`, early returns, integer arrays as parameters, and float32; iterating
over an array (`for row in x`) only with `views`.

No restriction works around an s2sad bug any more: the seven found while this generator
was written (tests/fuzz/found_numpy.py) are fixed, with regression tests in
tests/test_regressions.py, and the generator then lifted the restrictions that had kept
clear of them (constant values stored in branches, arrays read again in the loop that
writes them, `np.prod` with zero factors).

Shrinking produces simpler programs: every choice's first option is the simplest.
"""
import ast
import math
import re
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from hypothesis import strategies as st

from .programs import Choices, forget, load_function

__all__ = ["NumpyProgram", "numpy_programs", "aliasing_programs", "buffer_programs",
           "repeated_write_programs", "forget"]

PARAMS = ("x", "w", "v")
SCALAR_PARAM = "s"
PARAM_SHAPES = ((3,), (2, 3), (3, 1), (2,), (1, 3))
NAMES = ("a", "b", "c", "d", "e", "g", "h", "p", "q", "r", "u", "z")
INDEX_NAMES = ("i", "j", "k")
ROW_NAMES = ("row", "col")
LIST_NAMES = ("parts", "rows", "acc")
# every value has one of these shapes (at most 2 axes, of length 1 to 3)
SHAPES = ((),) + tuple((n,) for n in (1, 2, 3)) + tuple(
    (m, n) for m in (1, 2, 3) for n in (1, 2, 3))

CAP = 4.0          # bound of a stored value (larger ones are squashed)
LIMIT = 20.0       # bound of any subexpression (larger ones are squashed)


@dataclass(frozen=True)
class NumpyProgram:
    """A generated module: `source`, the function `name`, its `params` and their
    `shapes` (`None` for the float parameter); `mutation` names the families of writes
    through shared storage it uses: "views" (views and aliases bound to names, `for row
    in a`), "writers" (`out=`, in-place methods, writer functions)."""

    source: str
    name: str
    params: tuple
    shapes: tuple
    mutation: tuple = ()

    def __repr__(self):
        return (f"NumpyProgram(params={self.params!r}, shapes={self.shapes!r}, "
                f"mutation={self.mutation!r}, source=\n{self.source})")

    def load(self):
        """Exec the module under a fresh fake file name registered in `linecache`
        and return the function (drop it with `forget(fn)`)."""
        return load_function(self.source, self.name)


def _num(v):
    text = repr(float(v))
    return f"(-{text[1:]})" if text.startswith("-") else text


def _size(shape):
    return math.prod(shape)


def _broadcasts_to(a, s):
    """True if shape `a` broadcasts to shape `s` (and the result is `s`)."""
    if len(a) > len(s):
        return False
    return all(p in (1, q) for p, q in zip(a[::-1], s[::-1]))


# -- shape operations: (template with {} for the operand, result shape, kind, bound) -----
#    kind: "view" (may share memory with the operand), "readonly" (a view that cannot
#    be written, even of a fresh operand: `np.broadcast_to`) or "fresh"; bound: how the
#    operand's bound maps to the result's ("same", "sum", "prod").

def _index_ops(shape):
    """Readable index expressions `{}[...]` of an array of `shape` (at most 2 axes)."""
    ops = []
    if len(shape) == 1:
        n = shape[0]
        ops.append(("{}[0]", (), "fresh"))
        ops.append(("{}[-1]", (), "fresh"))
        if n >= 2:
            ops += [("{}[1:]", (n - 1,), "view"), ("{}[:-1]", (n - 1,), "view"),
                    ("{}[::-1]", (n,), "view"), ("{}[[0, 0, 1]]", (3,), "fresh"),
                    ("{}[[-1, 0]]", (2,), "fresh")]
        if n == 3:
            ops += [("{}[::2]", (2,), "view"), ("{}[1]", (), "fresh"),
                    ("{}[np.array([True, False, True])]", (2,), "fresh"),
                    ("{}[[2, 0]]", (2,), "fresh")]
        ops += [("{}[None]", (1, n), "view"), ("{}[:, None]", (n, 1), "view"),
                ("{}[..., None]", (n, 1), "view")]
    elif len(shape) == 2:
        m, n = shape
        ops += [("{}[0]", (n,), "view"), ("{}[:, 0]", (m,), "view"),
                ("{}[-1]", (n,), "view"), ("{}[:, -1]", (m,), "view"),
                ("{}[0, -1]", (), "fresh"), ("{}[..., 0]", (m,), "view")]
        if m >= 2:
            ops += [("{}[1:]", (m - 1, n), "view"), ("{}[::-1]", (m, n), "view"),
                    ("{}[[1, 0]]", (2, n), "fresh"), ("{}[1, :]", (n,), "view")]
        if n >= 2:
            ops += [("{}[:, 1:]", (m, n - 1), "view"), ("{}[:, :-1]", (m, n - 1), "view"),
                    ("{}[:, [0, 0]]", (m, 2), "fresh"), ("{}[-1, 1]", (), "fresh")]
        if n == 3:
            ops += [("{}[:, ::2]", (m, 2), "view"),
                    ("{}[:, np.array([False, True, True])]", (m, 2), "fresh")]
        if m >= 2 and n >= 2:
            ops += [("{}[[0, 1], [1, 0]]", (2,), "fresh"), ("{}[1:, 1:]", (m - 1, n - 1),
                                                             "view")]
    return [(t, s, k, "same") for t, s, k in ops]


def _reduce_ops(shape):
    if not shape:
        return []
    ops = [("np.sum({})", (), "fresh", "sum"), ("np.mean({})", (), "fresh", "same"),
           ("{}.sum()", (), "fresh", "sum"), ("np.max({})", (), "fresh", "same"),
           ("np.min({})", (), "fresh", "same"), ("{}.mean()", (), "fresh", "same"),
           ("np.prod({})", (), "fresh", "prod")]
    for axis in range(len(shape)):
        rest = shape[:axis] + shape[axis + 1:]
        kept = shape[:axis] + (1,) + shape[axis + 1:]
        for fn, bound in (("sum", "sum"), ("mean", "same"), ("max", "same"),
                          ("min", "same"), ("prod", "prod")):
            ops.append((f"np.{fn}({{}}, axis={axis})", rest, "fresh", bound))
            ops.append((f"np.{fn}({{}}, axis={axis}, keepdims=True)", kept, "fresh", bound))
        ops.append((f"{{}}.sum(axis={axis})", rest, "fresh", "sum"))
        if axis == len(shape) - 1:
            ops.append(("{}.max(axis=-1)", rest, "fresh", "same"))
    return ops


def _shape_ops(shape):
    if len(shape) > 2 or max(shape, default=1) > 3:
        # a stack of 2-axis pieces, or a long concatenation: only reduced
        ops = [("np.sum({})", (), "fresh", "sum"), ("np.mean({})", (), "fresh", "same"),
               ("np.sum({}, axis=0)", shape[1:], "fresh", "sum")]
        return [op for op in ops if op[1] in SHAPES]
    ops = _index_ops(shape) + _reduce_ops(shape)
    if len(shape) == 2:
        t = shape[::-1]
        ops += [("{}.T", t, "view", "same"), ("np.transpose({})", t, "view", "same"),
                ("np.swapaxes({}, 0, 1)", t, "view", "same"),
                ("{}.ravel()", (_size(shape),), "view", "same"),
                ("{}.flatten()", (_size(shape),), "fresh", "same"),
                ("np.flip({}, axis=1)", shape, "view", "same")]
        if 1 in shape:
            ops.append(("np.squeeze({})", tuple(d for d in shape if d != 1), "view", "same"))
    if len(shape) == 1:
        ops += [("np.expand_dims({}, 0)", (1,) + shape, "view", "same"),
                ("np.flip({})", shape, "view", "same")]
    for s in SHAPES:
        if s and s != shape and shape and _size(s) == _size(shape):
            ops.append((f"{{}}.reshape({', '.join(map(str, s))})", s, "view", "same"))
            ops.append((f"np.reshape({{}}, {s!r})", s, "view", "same"))
            if len(s) == 1:
                ops.append(("{}.reshape(-1)", s, "view", "same"))
        if s and s != shape and _broadcasts_to(shape, s):
            ops.append((f"np.broadcast_to({{}}, {s!r})", s, "readonly", "same"))
            ops.append((f"({{}} + np.zeros({s!r}))", s, "fresh", "same"))
            ops.append((f"({{}} * np.ones({s!r}))", s, "fresh", "same"))
    return [op for op in ops if op[1] in SHAPES]


@lru_cache(maxsize=None)
def _paths(src, dst):
    """Sequences of shape operations from `src` to `dst`, shortest first (at most 2
    steps; always at least one for src != dst)."""
    if src == dst:
        return ((),)
    out = []
    for op in _shape_ops(src):
        if op[1] == dst:
            out.append((op,))
    for op in _shape_ops(src):
        if op[1] != dst and op[1] != src:
            for op2 in _shape_ops(op[1]):
                if op2[1] == dst:
                    out.append((op, op2))
    assert out, (src, dst)
    return tuple(out)


def _apply_bound(kind, bound, shape):
    if kind == "sum":
        return bound * max(_size(shape), 1)
    if kind == "prod":
        return bound ** max(_size(shape), 1) if bound > 1 else bound
    return bound


def _view_forms(shape):
    """(template, shape) of views of an array of `shape` bound to a name: the plain
    alias first, then views that share all or part of the storage (`y[0]` of a vector
    is a copy: reading it after a write into `y` sees the old value)."""
    forms = [("{}", shape), ("{}.view()", shape)]
    if len(shape) == 1:
        n = shape[0]
        forms += [("{}.reshape(-1)", shape), ("{}.T", shape), ("{}.ravel()", shape),
                  ("{}[0]", ()), ("{}[None]", (1, n)), ("{}[:, None]", (n, 1)),
                  (f"{{}}.reshape(1, {n})", (1, n))]
        if n >= 2:
            forms += [("{}[1:]", (n - 1,)), ("{}[:-1]", (n - 1,)), ("{}[::-1]", shape)]
        if n == 3:
            forms += [("{}[::2]", (2,))]
    else:
        m, n = shape
        forms += [("{}.T", (n, m)), ("{}[0]", (n,)), ("{}[-1]", (n,)), ("{}[:, 0]", (m,)),
                  ("{}[0, -1]", ()), ("{}.ravel()", (m * n,)), ("{}.reshape(-1)", (m * n,)),
                  (f"{{}}.reshape({n}, {m})", (n, m))]
        if m >= 2:
            forms += [("{}[1:]", (m - 1, n)), ("{}[::-1]", shape)]
        if n >= 2:
            forms += [("{}[:, 1:]", (m, n - 1))]
        if m >= 2 and n >= 2:
            forms += [("{}[1:, :-1]", (m - 1, n - 1))]
    return [(t, s) for t, s in forms if s in SHAPES]


def _reduce_into(shape):
    """(template, source shape) of reductions `np.{fn}(a, axis=..., out=y)` whose result
    has `shape`."""
    out = []
    for k in (1, 2, 3):
        if len(shape) == 1:
            out += [("np.{fn}({a}, axis=0, out={out})", (k,) + shape),
                    ("np.{fn}({a}, axis=1, out={out})", shape + (k,))]
        elif shape[0] == 1:
            out += [("np.{fn}({a}, axis=0, keepdims=True, out={out})", (k, shape[1]))]
        elif shape[1] == 1:
            out += [("np.{fn}({a}, axis=1, keepdims=True, out={out})", (shape[0], k))]
    return [(t, s) for t, s in out if s in SHAPES]


class _E:
    """A generated expression: text, shape, bound of its entries, whether it is a fresh
    array (not a view of a name's storage) and the names it may be a view of."""
    __slots__ = ("text", "shape", "bound", "fresh", "root")

    def __init__(self, text, shape, bound, fresh=True, root=frozenset()):
        self.text, self.shape, self.bound = text, shape, bound
        self.fresh, self.root = fresh, root


class _V:
    __slots__ = ("shape", "bound", "owned", "kind", "active", "aliases")

    def __init__(self, shape, bound, owned=False, kind="value", active=True,
                 aliases=frozenset()):
        self.shape = shape        # None for an int loop variable
        self.bound = bound        # |entries| <= bound; for an int, the exclusive upper end
        self.owned = owned        # storage the function made (not a parameter's): writable
        self.kind = kind          # "value", "int", "list"
        self.active = active      # depends on a parameter
        self.aliases = aliases    # other names that may share its storage (views, aliases)

    def copy(self):
        return _V(self.shape, self.bound, self.owned, self.kind, self.active, self.aliases)


def _bind(env, name, var, base=None):
    """Bind `name` to `var` in `env` (a dict the caller owns): the name leaves the alias
    sets it was in; with `base`, it is a view of `base`'s storage (and of its aliases')."""
    for n, v in list(env.items()):
        if name in v.aliases:
            v = v.copy()
            v.aliases = v.aliases - {name}
            env[n] = v
    if base is not None:
        group = {n for n in env[base].aliases | {base} if n in env} - {name}
        var.aliases = frozenset(group)
        for n in group:
            v = env[n].copy()
            v.aliases = v.aliases | {name}
            env[n] = v
    env[name] = var


def _written(env, name, bound, active):
    """Record a write into `name`'s storage: its new bound, and every name that may share
    the storage may now hold values up to that bound."""
    for n in {name} | env[name].aliases:
        if n in env:
            v = env[n].copy()
            v.bound = bound if n == name else max(v.bound, bound)
            v.active = v.active or active
            env[n] = v


def _join_envs(envs):
    envs = [e for e in envs if e is not None]
    out = {}
    for n in set(envs[0]).intersection(*envs[1:]):
        vs = [e[n] for e in envs]
        if len({(v.shape, v.kind) for v in vs}) != 1:
            continue
        v = vs[0].copy()
        v.bound = max(x.bound for x in vs)
        v.owned = all(x.owned for x in vs)
        v.active = any(x.active for x in vs)
        v.aliases = frozenset().union(*(x.aliases for x in vs))
        out[n] = v
    return out


class _Gen(Choices):
    def __init__(self, draw, budget):
        self.draw = draw
        self.budget = budget
        self.trips = 1             # product of the enclosing loops' trip counts
        self.loop_depth = 0
        self.params = ()
        self.views = False         # may bind views and aliases of writable arrays
        self.writers = False       # may call out=, in-place methods and writer functions
        self.repeats = False       # may write through indexes that repeat a position
        self.used = set()          # which of the two families the program uses
        self.fixed = set()         # loop variables over arrays (`for row in a:`) in scope

    def shape(self, env):
        """A shape for a new value: a shape already in use, or any other."""
        used = sorted({v.shape for v in env.values() if v.kind == "value"},
                      key=lambda s: (len(s), s))
        if self.chance(70):
            return self.pick(used)
        return self.pick(SHAPES)

    # -- activity ---------------------------------------------------------------------------
    def active(self, env, e):
        """True if `e` reads a value that depends on a parameter."""
        names = [n for n, v in env.items() if v.kind == "value" and v.active]
        return bool(names) and re.search(rf"\b({'|'.join(names)})\b", e.text) is not None

    # -- expressions ------------------------------------------------------------------------
    def squash(self, e, cap=1.0):
        how = self.pick(("tanh", "sin", "arctan", "scale"))
        if how == "scale" and e.bound > 0:
            factor = cap / e.bound
            factor = 2.0 ** math.floor(math.log2(factor)) if factor < 1 else 1.0
            return _E(f"({_num(factor)} * {e.text})", e.shape, e.bound * factor)
        fn = "tanh" if how == "scale" else how
        bound = math.pi / 2 if fn == "arctan" else 1.0
        return _E(f"np.{fn}({e.text})", e.shape, bound)

    def bounded(self, env, depth, shape, limit):
        e = self.expr(env, depth, shape)
        return self.squash(e, limit) if e.bound > limit else e

    def convert(self, e, shape):
        """`e` reshaped/reduced/indexed/broadcast to `shape`."""
        paths = _paths(e.shape, shape)
        path = paths[self.draw(st.integers(0, len(paths) - 1))]
        for template, new_shape, kind, bound in path:
            if bound == "prod" and e.bound > 1.0:
                e = self.squash(e)        # factors of at most 1 (exact zeros included)
            fresh = kind == "fresh" or (kind == "view" and e.fresh)
            e = _E(template.format(e.text), new_shape, _apply_bound(bound, e.bound, e.shape),
                   fresh=fresh, root=frozenset() if fresh else e.root)
        return e

    def leaf(self, env, shape):
        names = sorted(n for n, v in env.items() if v.kind == "value")
        same = [n for n in names if env[n].shape == shape]
        choice = self.weighted([(6, "same"), (4, "any"), (1, "const"), (1, "loop")])
        if choice == "loop":
            e = self.loop_read(env)
            if e is not None:
                return self.convert(e, shape)
            choice = "any"
        if choice == "same" and same:
            n = self.pick(same)
        elif choice != "const" and names:
            n = self.pick(names)
        elif not shape:
            c = self.const()
            return _E(_num(c), (), abs(c))
        else:
            c = self.const()
            text = (f"np.full({shape!r}, {_num(c)})" if self.chance(50)
                    else f"np.linspace(-1.0, 1.0, {shape[0]})" if len(shape) == 1
                    else f"np.ones({shape!r})")
            return _E(text, shape, max(abs(c), 1.0))
        v = env[n]
        return self.convert(_E(n, v.shape, v.bound, fresh=False, root=frozenset((n,))), shape)

    def loop_read(self, env):
        """`v[i]` (or `v[:, i]`, `v[-1 - i]`) with a loop variable in range."""
        ints = sorted(n for n, v in env.items() if v.kind == "int")
        if not ints:
            return None
        i = self.pick(ints)
        hi = env[i].bound
        arrays = sorted(n for n, v in env.items() if v.kind == "value" and v.shape
                        and (v.shape[0] >= hi or v.shape[-1] >= hi))
        if not arrays:
            return _E(f"(0.5 * {i})", (), 0.5 * hi)
        n = self.pick(arrays)
        shape, bound = env[n].shape, env[n].bound
        forms = []
        if shape[0] >= hi:
            forms += [(f"{n}[{i}]", shape[1:]), (f"{n}[-1 - {i}]", shape[1:])]
        if len(shape) == 2 and shape[1] >= hi:
            forms += [(f"{n}[:, {i}]", shape[:1])]
        text, s = self.pick(forms)
        return _E(text, s, bound, fresh=not s, root=frozenset((n,)) if s else frozenset())

    def broadcast_partner(self, shape):
        """A shape that broadcasts against `shape` to `shape`."""
        options = [shape] + [s for s in SHAPES if s != shape and _broadcasts_to(s, shape)]
        return self.pick(options)

    def expr(self, env, depth, shape):
        if depth <= 0:
            return self.leaf(env, shape)
        kinds = [(4, "leaf"), (5, "arith"), (3, "mul"), (2, "div"), (4, "unary"),
                 (1, "exp"), (2, "log"), (1, "sqrt"), (2, "minmax"), (2, "where"),
                 (2, "matmul"), (3, "reshape"), (1, "join"), (1, "ifexp"), (1, "clip"),
                 (1, "mask_sum"), (1, "neg"), (1, "vectorize")]
        kind = self.weighted(kinds)
        d = depth - 1
        if kind == "leaf":
            return self.leaf(env, shape)
        if kind in ("arith", "mul", "minmax"):
            a = self.expr(env, d, shape)
            b = self.expr(env, d, self.broadcast_partner(shape))
            if self.chance(50):
                a, b = b, a
            if kind == "arith":
                op = self.pick(("+", "-"))
                e = _E(f"({a.text} {op} {b.text})", shape, a.bound + b.bound)
            elif kind == "mul":
                e = _E(f"({a.text} * {b.text})", shape, a.bound * b.bound)
            else:
                fn = self.pick(("maximum", "minimum"))
                e = _E(f"np.{fn}({a.text}, {b.text})", shape, max(a.bound, b.bound))
        elif kind == "div":
            a = self.expr(env, d, shape)
            form = self.pick(("const", "cos", "square"))
            if form == "const":
                c = self.pick((2.0, 4.0, -2.0, 0.5))
                e = _E(f"({a.text} / {_num(c)})", shape, a.bound / abs(c))
            else:
                b = self.expr(env, d, self.broadcast_partner(shape))
                if form == "cos":
                    c = self.pick((1.5, 2.0))
                    e = _E(f"({a.text} / ({_num(c)} + np.cos({b.text})))", shape,
                           a.bound / (c - 1.0))
                else:
                    e = _E(f"({a.text} / (1.0 + {b.text} * {b.text}))", shape, a.bound)
        elif kind == "unary":
            a = self.expr(env, d, shape)
            fn = self.pick(("sin", "tanh", "cos", "arctan", "square", "abs"))
            bound = {"arctan": math.pi / 2, "square": a.bound ** 2, "abs": a.bound}.get(fn, 1.0)
            e = _E(f"np.{fn}({a.text})", shape, bound)
        elif kind == "exp":
            a = self.bounded(env, d, shape, 2.0)
            fn = self.pick(("exp", "expm1", "sinh"))
            e = _E(f"np.{fn}({a.text})", shape, math.exp(a.bound))
        elif kind == "log":
            a = self.bounded(env, d, shape, 6.0)
            form = self.pick(("square", "log1p"))
            if form == "square":
                c = self.pick((1.0, 0.5, 2.0))
                e = _E(f"np.log({_num(c)} + {a.text} * {a.text})", shape,
                       abs(math.log(c)) + math.log1p(a.bound ** 2 / c))
            else:
                e = _E(f"np.log1p({a.text} * {a.text})", shape, math.log1p(a.bound ** 2))
        elif kind == "sqrt":
            a = self.expr(env, d, shape)
            e = _E(f"np.sqrt(2.0 + np.cos({a.text}))", shape, math.sqrt(3.0))
        elif kind == "where":
            c1 = self.expr(env, d, shape)
            c2 = self.expr(env, d, self.broadcast_partner(shape))
            a = self.expr(env, d, shape)
            b = self.expr(env, d, self.broadcast_partner(shape))
            op = self.pick((">", "<", ">="))
            e = _E(f"np.where({c1.text} {op} {c2.text}, {a.text}, {b.text})", shape,
                   max(a.bound, b.bound))
        elif kind == "matmul":
            e = self.matmul(env, d, shape)
        elif kind == "reshape":
            src = self.pick(SHAPES[1:])
            e = self.convert(self.expr(env, d, src), shape)
        elif kind == "join":
            e = self.join(env, d, shape)
        elif kind == "ifexp":
            cond = self.cond(env, d)
            a = self.expr(env, d, shape)
            b = self.expr(env, d, shape)
            e = _E(f"({a.text} if {cond} else {b.text})", shape, max(a.bound, b.bound),
                   a.fresh and b.fresh, a.root | b.root)
        elif kind == "clip":
            a = self.expr(env, d, shape)
            lo = self.pick((-1.0, -0.5, 0.0))
            e = _E(f"np.clip({a.text}, {_num(lo)}, {_num(lo + 1.5)})", shape, 1.5)
        elif kind == "mask_sum" and not shape:
            a = self.expr(env, d, self.pick(SHAPES[1:]))
            c = self.const(-1.0, 1.0)
            e = _E(f"np.sum({a.text}[{a.text} > {_num(c)}])", (),
                   a.bound * _size(a.shape))
        elif kind == "vectorize":
            # (the lambda's `0` where the first element is flat makes an int array, every
            # element truncated: NumPy's dtype is that of the first output)
            a = self.expr(env, d, shape)
            c = self.const(-1.0, 1.0)
            flat = self.pick(("0.0", "0"))
            e = _E(f"(1.0 * np.vectorize(lambda t: 2.0 * np.sin(t) if t > {_num(c)} else "
                   f"{flat})({a.text}))", shape, 2.0)
        else:
            a = self.expr(env, d, shape)
            e = _E(f"(-{a.text})", shape, a.bound)
        if e.bound > LIMIT or not math.isfinite(e.bound):
            e = self.squash(e, 2.0)
        return e

    def matmul(self, env, d, shape):
        k = self.pick((3, 2, 1))
        if not shape:
            ls, rs = (k,), (k,)
        elif len(shape) == 1:
            ls, rs = ((shape[0], k), (k,)) if self.chance(50) else ((k,), (k, shape[0]))
        else:
            ls, rs = (shape[0], k), (k, shape[1])
        a = self.bounded(env, d, ls, 2.0)
        b = self.bounded(env, d, rs, 2.0)
        form = self.pick(("@", "dot", "matmul"))
        text = (f"({a.text} @ {b.text})" if form == "@"
                else f"np.{form}({a.text}, {b.text})")
        return _E(text, shape, k * a.bound * b.bound)

    def join(self, env, d, shape):
        if not shape:
            return self.leaf(env, shape)
        axis = self.pick(tuple(range(len(shape))))
        n = shape[axis]
        if n >= 2 and self.chance(50):
            first = self.pick(tuple(range(1, n)))
            pieces = [shape[:axis] + (m,) + shape[axis + 1:] for m in (first, n - first)]
            parts = [self.expr(env, d, s) for s in pieces]
            text = ", ".join(p.text for p in parts)
            return _E(f"np.concatenate([{text}], axis={axis})", shape,
                      max(p.bound for p in parts))
        piece = shape[:axis] + shape[axis + 1:]
        parts = [self.expr(env, d, piece) for _ in range(n)]
        text = ", ".join(p.text for p in parts)
        if axis == 0 and not piece and self.chance(50):
            return _E(f"np.array([{text}])", shape, max(p.bound for p in parts))
        return _E(f"np.stack([{text}], axis={axis})", shape, max(p.bound for p in parts))

    def cond(self, env, depth):
        a = self.expr(env, max(depth, 0), ())
        op = self.pick((">", "<", ">=", "<="))
        b = _num(self.const(-1.0, 1.0)) if self.chance(60) else self.expr(env, 0, ()).text
        text = f"{a.text} {op} {b}"
        if self.chance(15):
            other = self.expr(env, 0, ())
            text = f"({text}) {self.pick(('and', 'or'))} ({other.text} > 0.0)"
        return text

    # -- statements -------------------------------------------------------------------------
    def block(self, env, indent, depth, most):
        lines = []
        n = self.draw(st.integers(1, most))
        for k in range(n):
            if self.budget <= 0 and k > 0:
                break
            self.budget -= 1
            sub, env = self.statement(env, indent, depth)
            lines += sub
        return lines, env

    def statement(self, env, indent, depth):
        pad = "    " * indent
        owned = [n for n, v in env.items() if v.owned and v.shape]
        kinds = [(6, "assign"), (2, "create"), (3 if owned else 0, "write"),
                 (1 if owned else 0, "augment"), (2 if depth < 2 else 0, "if"),
                 (2 if depth < 2 else 0, "for"), (1 if depth < 2 else 0, "list")]
        if self.writers:
            kinds += [(3, "writer")]
        if self.views:
            kinds += [(4, "view")]
        if self.repeats and owned:
            kinds += [(6, "write")]
        kind = self.weighted([(w, k) for w, k in kinds if w])
        return getattr(self, f"stmt_{kind}")(env, pad, indent, depth)

    def new_name(self, env, pool=NAMES):
        free = [n for n in pool if n not in env]
        return self.pick(free) if free else None

    def rebindable(self, env):
        return sorted(n for n, v in env.items() if v.kind == "value" and n not in PARAMS
                      and n != SCALAR_PARAM and n not in self.fixed)

    def stored(self, env, e, owned_target):
        """The value to store: squashed to CAP, and copied if it is a view of a
        writable array or the target must stay writable."""
        if e.bound > CAP:
            e = self.squash(e, CAP)
        if e.shape and not e.fresh and (owned_target or any(
                n in env and env[n].owned for n in e.root)):
            form = self.pick(("np.copy({})", "{}.copy()"))
            e = _E(form.format(e.text), e.shape, e.bound)
        return e

    def stmt_assign(self, env, pad, indent, depth):
        existing = self.rebindable(env)
        name = None
        if existing and self.chance(50):
            name = self.pick(existing)
        else:
            name = self.new_name(env)
        if name is None:
            return [], env
        old = env.get(name)
        shape = old.shape if old is not None else self.shape(env)
        owned = old.owned if old is not None else False
        depth_e = self.draw(st.integers(0, 3))
        e = self.stored(env, self.expr(env, depth_e, shape), owned)
        active = self.active(env, e)
        env = dict(env)
        _bind(env, name, _V(shape, e.bound, owned or (e.fresh and bool(shape)), active=active))
        return [f"{pad}{name} = {e.text}"], env

    def stmt_create(self, env, pad, indent, depth):
        name = self.new_name(env)
        if name is None:
            return self.stmt_assign(env, pad, indent, depth)
        form = self.pick(("copy", "zeros", "ones", "zeros_like", "np_copy", "array"))
        arrays = sorted(n for n, v in env.items() if v.kind == "value" and v.shape)
        if form in ("copy", "np_copy", "zeros_like") and arrays:
            src = self.pick(arrays)
            shape, bound = env[src].shape, env[src].bound
            text = {"copy": f"{src}.copy()", "np_copy": f"np.copy({src})",
                    "zeros_like": f"np.zeros_like({src})"}[form]
            if form == "zeros_like":
                bound = 0.0
        elif form == "array":
            k = self.pick((3, 2))
            parts = [self.stored(env, self.expr(env, 1, ()), False) for _ in range(k)]
            shape, bound = (k,), max(p.bound for p in parts)
            text = f"np.array([{', '.join(p.text for p in parts)}])"
        else:
            shape = self.pick(SHAPES[1:]) if self.chance(30) else self.pick(
                sorted({v.shape for v in env.values() if v.kind == "value" and v.shape}))
            fn = "ones" if form == "ones" else "zeros"
            text, bound = f"np.{fn}({shape!r})", 1.0 if fn == "ones" else 0.0
        env = dict(env)
        _bind(env, name, _V(shape, bound, True, active=self.active(env, _E(text, shape, bound))
                            and form != "zeros_like"))
        return [f"{pad}{name} = {text}"], env

    def write_index(self, env, shape):
        """(index text, shape of the selected part) for an element write."""
        ints = sorted(n for n, v in env.items() if v.kind == "int" and v.bound <= shape[0])
        options = [("0", shape[1:]), ("-1", shape[1:])]
        if shape[0] >= 2:
            options += [("1:", (shape[0] - 1,) + shape[1:]),
                        (":-1", (shape[0] - 1,) + shape[1:]),
                        ("[1, 0]", (2,) + shape[1:])]
        if shape[0] == 3:
            options += [("np.array([True, False, True])", (2,) + shape[1:])]
        if len(shape) == 2:
            options += [(":, 0", shape[:1]), ("0, -1", ()), (":, 1:", (shape[0], shape[1] - 1))
                        if shape[1] >= 2 else (":, -1", shape[:1])]
        if ints:
            i = self.pick(ints)
            options += [(i, shape[1:]), (f"-1 - {i}", shape[1:])]
        if self.views:
            options += [("...", shape), (":", shape)]
            if len(shape) == 2:
                options += [(f"{shape[0] - 1}, 0", ())]
        if self.repeats and self.chance(60):
            return self.pick(self.repeated_indexes(shape))
        return self.pick(options)

    def repeated_indexes(self, shape):
        """(index text, part shape) of indexes that name a position more than once
        (`repeats`): NumPy keeps the last write there, so only the value written last
        may get the adjoint, and `a[idx] += e` adds `e` once. Integer lists and arrays,
        negative entries that name the same position as others, index arrays made at
        run time, a 2-d index array, pairs of index arrays, and repeated columns."""
        m, rest = shape[0], shape[1:]
        out = [("[0, 0]", (2,) + rest), (f"[{m - 1}, 0, {-m}]", (3,) + rest),
               ("np.array([0, 0, 0])", (3,) + rest),
               (f"np.minimum(np.arange(3), {m - 1})", (3,) + rest),
               (f"np.arange(3) % {m}", (3,) + rest)]
        if not rest:
            out += [(f"np.array([[0, {m - 1}], [0, {-m}]])", (2, 2))]
        else:
            n = rest[0]
            out += [(f"[0, {m - 1}, 0], [{n - 1}, 0, {-1}]", (3,)),
                    (f":, [{n - 1}, {-1}]", (m, 2)), ("[0, 0], 1:" if n >= 2 else "[0, 0], :",
                                                       (2, n - 1 if n >= 2 else n))]
        return out

    def stmt_write(self, env, pad, indent, depth):
        owned = sorted(n for n, v in env.items() if v.owned and v.shape)
        return self.write_into(env, pad, self.pick(owned))

    def write_into(self, env, pad, name):
        """An element or slice write `name[idx] op= e` (through a view, it writes the
        base too)."""
        var = env[name]
        index, part = self.write_index(env, var.shape)
        op = self.weighted([(3, "="), (3, "+="), (1, "-="), (1, "*=")])
        value_shape = self.broadcast_partner(part)
        env = dict(env)
        if op == "*=":
            e = self.bounded(env, self.draw(st.integers(0, 2)), value_shape, 1.0)
            e = _E(f"np.tanh({e.text})", e.shape, 1.0) if self.chance(50) else e
            bound = var.bound
        else:
            limit = 1.0 if self.loop_depth else CAP
            e = self.bounded(env, self.draw(st.integers(0, 2)), value_shape, limit)
            bound = max(var.bound, e.bound) if op == "=" else var.bound + e.bound * self.trips
        lines = [f"{pad}{name}[{index}] {op} {e.text}"]
        return lines + self.written(env, pad, name, bound, self.active(env, e)), env

    def written(self, env, pad, name, bound, active):
        """Record a write into `name` (in `env`, a dict the caller owns), and squash the
        array when its bound grows too large: rebinding it, or, when other names share
        its storage or it is a loop variable, in place."""
        squash = []
        if bound > CAP * 3:
            if env[name].aliases or name in self.fixed:
                squash = [f"{pad}{name}[...] = np.tanh({name})"]
                _written(env, name, bound, active)
            else:
                squash = [f"{pad}{name} = np.tanh({name})"]
            bound = 1.0
        _written(env, name, bound, active)
        return squash

    def stmt_augment(self, env, pad, indent, depth):
        owned = sorted(n for n, v in env.items() if v.owned and v.shape)
        return self.augment_into(env, pad, self.pick(owned))

    def augment_into(self, env, pad, name):
        """`name op= e` on a whole array: NumPy does it in place."""
        var = env[name]
        op = self.pick(("+=", "*=", "-="))
        shape = self.broadcast_partner(var.shape)
        if op == "*=":
            e = self.bounded(env, self.draw(st.integers(0, 2)), shape, 1.0)
            bound = var.bound * e.bound
        else:
            e = self.bounded(env, self.draw(st.integers(0, 2)), shape, 1.0)
            bound = var.bound + e.bound * self.trips
        lines = [f"{pad}{name} {op} {e.text}"]
        env = dict(env)
        return lines + self.written(env, pad, name, bound, self.active(env, e)), env

    # -- views, aliases, out= and writers (`views`, `writers`) --------------------------------
    def stmt_view(self, env, pad, indent, depth):
        """`r = y[0]`, `s = y[1:]`, `v = y.T`, `z = y`, ... of a writable `y`, then (often)
        a write through one of the two names (sometimes then through the other) and a
        read of the other; or (rarely) a loop over the rows of an array."""
        if depth < 2 and self.chance(10):
            return self.stmt_rows(env, pad, indent, depth)
        lines, env, base = self.writable(env, pad, indent, depth)
        name = self.new_name(env)
        if base is None or name is None:
            return lines, env
        var = env[base]
        template, shape = self.pick(_view_forms(var.shape))
        env = dict(env)
        # a view shares the storage; an element (`y[0]` of a vector) is a copy
        _bind(env, name, _V(shape, var.bound, bool(shape), active=var.active),
              base if shape else None)
        self.used.add("views")
        lines.append(f"{pad}{name} = {template.format(base)}")
        if self.chance(80):
            target, other = (name, base) if shape and self.chance(60) else (base, name)
            sub, env = self.write_through(env, pad, target)
            lines += sub
            if shape and self.chance(30):
                # and through the other (a writer into `z = y` after `y[0] = x[0]`)
                sub, env = self.write_through(env, pad, other)
                lines += sub
            if self.chance(70):
                sub, env = self.read_back(env, pad, other)
                lines += sub
        return lines, env

    def write_through(self, env, pad, name):
        """A write into `name`'s storage: an element or slice write, an augmented
        assignment of the whole array, or (with `writers`) a writer call."""
        kind = self.weighted([(3, "write"), (2, "augment"), (2 if self.writers else 0, "call")])
        if kind == "write":
            return self.write_into(env, pad, name)
        if kind == "augment":
            return self.augment_into(env, pad, name)
        return self.writer_into(env, pad, name)

    def read_back(self, env, pad, name):
        """`q = <name, reshaped> op e` in a new name: a read of `name` after a write."""
        new = self.new_name(env)
        if new is None:
            return [], env
        var = env[name]
        shape = self.shape(env)
        read = self.convert(_E(name, var.shape, var.bound, fresh=False,
                               root=frozenset((name,))), shape)
        other = self.expr(env, self.draw(st.integers(0, 1)), self.broadcast_partner(shape))
        op = self.pick(("*", "+"))
        bound = read.bound * other.bound if op == "*" else read.bound + other.bound
        e = self.stored(env, _E(f"({read.text} {op} {other.text})", shape, bound), False)
        env = dict(env)
        _bind(env, new, _V(shape, e.bound, bool(shape), active=self.active(env, e)))
        return [f"{pad}{new} = {e.text}"], env

    def stmt_rows(self, env, pad, indent, depth):
        """`for row in a:` (rows of a matrix are views; entries of a vector are copies),
        with a body that often writes through `row`."""
        arrays = sorted(n for n, v in env.items() if v.kind == "value" and v.shape
                        and n not in self.fixed)
        row = self.new_name(env, ROW_NAMES)
        if not arrays or row is None:
            return self.stmt_assign(env, pad, indent, depth)
        base = self.pick(arrays)
        var = env[base]
        shape = var.shape[1:]
        writable = var.owned and bool(shape)
        inner = dict(env)
        _bind(inner, row, _V(shape, var.bound, writable, active=var.active),
              base if shape else None)
        self.used.add("views")

        def body_fn(e):
            lines = []
            if writable and self.chance(60):
                sub, e = self.write_through(e, pad + "    ", row)
                lines += sub
            sub, e = self.block(e, indent + 1, depth + 1, 2)
            return lines + sub, e

        self.fixed.add(row)
        try:
            body, after = self.loop(inner, indent, depth, var.shape[0], body_fn)
        finally:
            self.fixed.discard(row)
        after.pop(row, None)
        for n, v in env.items():
            if n not in after:
                after[n] = v
        return [f"{pad}for {row} in {base}:"] + body, after

    def writable(self, env, pad, indent, depth):
        """(lines, env, name): a writable array, made first if there is none (then
        `lines` make it; `name` is None if no name is free)."""
        owned = sorted(n for n, v in env.items() if v.owned and v.shape)
        if owned:
            return [], env, self.pick(owned)
        lines, env = self.stmt_create(env, pad, indent, depth)
        owned = sorted(n for n, v in env.items() if v.owned and v.shape)
        return lines, env, self.pick(owned) if owned else None

    def stmt_writer(self, env, pad, indent, depth):
        lines, env, name = self.writable(env, pad, indent, depth)
        if name is None:
            return lines, env
        sub, env = self.writer_into(dict(env), pad, name)
        return lines + sub, env

    def writer_into(self, env, pad, name):
        """A call that writes into `name`, or into a view of it (`name[1:]`, `name.T`,
        ...): a ufunc or reduction with `out=`, an in-place method (`.sort()`,
        `.fill(e)`) or a writer function (`np.copyto`, `np.put`, `np.add.at`)."""
        var = env[name]
        env = dict(env)
        self.used.add("writers")
        target, shape = name, var.shape
        if self.chance(30):
            template, shape = self.pick([(t, s) for t, s in _view_forms(var.shape)
                                         if s and t != "{}"])
            target = template.format(name)
        d = self.draw(st.integers(0, 2))
        limit = 1.0 if self.loop_depth else CAP
        forms = ["ufunc", "unary", "clip", "copyto", "fill", "sort", "put", "add_at"]
        reduced = _reduce_into(shape)
        if reduced:
            forms.append("reduce")
        form = self.pick(forms)
        itself = _E(target, shape, var.bound, fresh=False, root=frozenset((name,)))
        bound, result = var.bound, None
        if form == "ufunc":
            fn = self.pick(("multiply", "add", "subtract"))
            a = itself if self.chance(40) else self.bounded(env, d, shape, 2.0)
            b = self.bounded(env, d, self.broadcast_partner(shape), 2.0)
            bound = a.bound * b.bound if fn == "multiply" else a.bound + b.bound
            # (the output by keyword or by position: a ufunc's first output is its
            # argument after its inputs)
            out = f"out={target}" if self.chance(70) else target
            text = result = f"np.{fn}({a.text}, {b.text}, {out})"
        elif form == "unary":
            fn = self.pick(("tanh", "sin", "exp", "negative"))
            a = itself if self.chance(50) else self.bounded(
                env, d, self.broadcast_partner(shape), 2.0)
            if fn == "exp" and a.bound > 2.0:
                fn = "tanh"
            bound = {"exp": math.exp(a.bound), "negative": a.bound}.get(fn, 1.0)
            text = result = f"np.{fn}({a.text}, out={target})"
        elif form == "clip":
            a = self.expr(env, d, self.broadcast_partner(shape))
            lo = self.pick((-1.0, -0.5, 0.0))
            out = f"out={target}" if self.chance(70) else target    # (np.clip(a, lo, hi, out))
            text = result = f"np.clip({a.text}, {_num(lo)}, {_num(lo + 1.5)}, {out})"
            bound = 1.5
        elif form == "reduce":
            template, src = self.pick(reduced)
            fn = self.pick(("sum", "mean", "max"))
            a = self.bounded(env, d, src, 1.0)
            bound = a.bound * (_size(src) if fn == "sum" else 1)
            text = result = template.format(fn=fn, a=a.text, out=target)
        elif form == "copyto":
            a = self.bounded(env, d, self.broadcast_partner(shape), limit)
            where = ""
            if self.chance(30):
                c = self.expr(env, 0, self.broadcast_partner(shape))
                where = f", where={c.text} > {_num(self.const(-1.0, 1.0))}"
            text, bound = f"np.copyto({target}, {a.text}{where})", max(a.bound, var.bound)
        elif form == "fill":
            a = self.bounded(env, d, (), limit)
            text, bound = f"{target}.fill({a.text})", a.bound
        elif form == "sort":
            axis = self.pick(("", "axis=0")) if len(shape) == 2 else ""
            text = f"{target}.sort({axis})"
        elif form == "put":
            n = _size(shape)
            index = self.pick([[0], [n - 1]] + ([[1, 0], [0, n - 1]] if n >= 2 else [])
                              + ([[0, 2, 1]] if n >= 3 else []))
            a = self.bounded(env, d, self.pick(((), (len(index),))), limit)
            text, bound = f"np.put({target}, {index!r}, {a.text})", a.bound
        else:
            m = shape[0]
            index = self.pick([[0], [0, 0]] + ([[0, 0, 1], [m - 1, 0]] if m >= 2 else []))
            part = self.pick(((), shape[1:]) if shape[1:] else ((),))
            a = self.bounded(env, d, part, 1.0)
            repeats = max(index.count(i) for i in index)
            text = f"np.{self.pick(('add', 'subtract'))}.at({target}, {index!r}, {a.text})"
            bound = var.bound + repeats * a.bound * self.trips
        bound = max(bound, var.bound) if form != "sort" else var.bound
        lines = [f"{pad}{text}"]
        active = self.active(env, _E(text, shape, bound))
        lines += self.written(env, pad, name, bound, active)
        alias = self.new_name(env) if result is not None else None
        if alias is not None and not lines[1:] and self.chance(30):
            # the call returns its `out=` array: bind it, an alias of `name`
            lines = [f"{pad}{alias} = {result}"]
            _bind(env, alias, _V(shape, bound, True, active=active), name)
        return lines, env

    def stmt_if(self, env, pad, indent, depth):
        lines = [f"{pad}if {self.cond(env, self.draw(st.integers(1, 2)))}:"]
        body, env_then = self.block(dict(env), indent + 1, depth + 1, 3)
        lines += body
        if self.chance(50):
            lines.append(f"{pad}else:")
            body, env_else = self.block(dict(env), indent + 1, depth + 1, 3)
            lines += body
        else:
            env_else = env
        return lines, _join_envs([env_then, env_else])

    def loop(self, env, indent, depth, trips, body_fn):
        """Run `body_fn(env)` as a loop body: names defined before keep their shape;
        bounds of carried values are the ones after the body."""
        self.loop_depth += 1
        saved = self.trips
        self.trips *= trips
        try:
            body, end = body_fn(env)
        finally:
            self.loop_depth -= 1
            self.trips = saved
        out = {}
        for n, v in env.items():
            if v.kind == "int" and n in end:
                out[n] = v.copy()
            elif n in end:
                w = v.copy()
                w.bound = max(v.bound, end[n].bound)
                w.owned = v.owned and end[n].owned
                w.active = v.active or end[n].active
                w.aliases = v.aliases | end[n].aliases
                out[n] = w
        return body, out

    def stmt_for(self, env, pad, indent, depth):
        index = self.new_name(env, INDEX_NAMES)
        if index is None:
            return self.stmt_assign(env, pad, indent, depth)
        start, trips = self.pick(((0, 2), (0, 3), (1, 3), (0, 1)))
        args = f"{trips}" if start == 0 else f"{start}, {trips}"
        inner = dict(env)
        inner[index] = _V(None, trips, kind="int")

        def body_fn(e):
            return self.block(e, indent + 1, depth + 1, 3)

        body, after = self.loop(inner, indent, depth, trips - start, body_fn)
        after.pop(index, None)
        for n, v in env.items():
            if n not in after:
                after[n] = v
        # the loop runs at least once: names defined in it are not kept (their bounds
        # are unknown), which keeps the generator simple
        return [f"{pad}for {index} in range({args}):"] + body, after

    def stmt_list(self, env, pad, indent, depth):
        lst = self.new_name(env, LIST_NAMES)
        index = self.new_name(env, INDEX_NAMES)
        name = self.new_name(env)
        if lst is None or index is None or name is None:
            return self.stmt_assign(env, pad, indent, depth)
        trips = self.pick((2, 3))
        piece = self.pick(((), (3,), (2,), (1, 3), (2, 1)) if self.chance(70) else SHAPES)
        inner = dict(env)
        inner[index] = _V(None, trips, kind="int")
        holder = {}

        def body_fn(e):
            lines = []
            if self.chance(40):
                sub, e = self.block(e, indent + 1, depth + 1, 2)
                lines += sub
            value = self.stored(e, self.expr(e, self.draw(st.integers(0, 2)), piece), False)
            if value.shape and not value.fresh:
                value = _E(f"np.copy({value.text})", value.shape, value.bound)
            holder["bound"] = value.bound
            holder["active"] = self.active(e, value)
            lines.append(f"{pad}    {lst}.append({value.text})")
            return lines, e

        body, after = self.loop(inner, indent, depth, trips, body_fn)
        after.pop(index, None)
        joins = [("np.stack({})", (trips,) + piece), ("np.array({})", (trips,) + piece)]
        if piece:
            joins.append(("np.stack({}, axis=-1)", piece + (trips,)))
        if len(piece) == 1 and piece[0] * trips <= 3:
            joins.append(("np.concatenate({})", (piece[0] * trips,)))
        if len(piece) == 2:
            joins.append(("np.concatenate({}, axis=1)", (piece[0], piece[1] * trips)))
        template, shape = self.pick(joins)
        lines = [f"{pad}{lst} = []", f"{pad}for {index} in range({trips}):"] + body
        result = _E(template.format(lst), shape, holder["bound"])
        if shape not in SHAPES:
            result = self.convert(_E(template.format(lst), shape, holder["bound"]),
                                  self.pick(((), (3,))) if len(shape) <= 2 else ())
            shape = result.shape
        lines.append(f"{pad}{name} = {result.text}")
        _bind(after, name, _V(shape, result.bound, bool(shape) and result.fresh,
                              active=holder["active"]))
        return lines, after


@st.composite
def numpy_programs(draw, max_statements=8, max_params=3, views=0, writers=0, repeats=0):
    """Hypothesis strategy of `NumpyProgram`s (see the module docstring). `views` and
    `writers` are the chances in percent that a program may also bind views and aliases
    of the arrays it writes (and write through them), and call `out=`, in-place methods
    and writer functions; `repeats` that its element writes may go through indexes that
    name a position more than once (`repeated_write_programs`); with 0 (the default) the
    programs are the ones of before."""
    n_arrays = draw(st.integers(1, max_params))
    params = list(PARAMS[:n_arrays])
    shapes = [draw(st.sampled_from(PARAM_SHAPES)) for _ in params]
    if draw(st.integers(0, 99)) >= 75:
        params.append(SCALAR_PARAM)
        shapes.append(None)
    env = {p: _V(s if s is not None else (), 2.0) for p, s in zip(params, shapes)}
    budget = draw(st.integers(min(2, max_statements), max_statements))
    gen = _Gen(draw, budget)
    gen.params = tuple(params)
    gen.views = views > 0 and gen.chance(views)
    gen.writers = writers > 0 and gen.chance(writers)
    gen.repeats = repeats > 0 and gen.chance(repeats)
    body, env = gen.block(env, 1, 0, 6)
    shape = gen.shape(env)
    final = gen.expr(env, draw(st.integers(0, 2)), shape)
    if shape:
        fn = gen.pick(("np.sum({})", "np.mean({})", "{}.sum()"))
        final = _E(fn.format(final.text), (), final.bound)
    body.append(f"    return {final.text}")
    text = "\n".join(["import numpy as np", "", f"def f({', '.join(params)}):"] + body) + "\n"
    source = ast.unparse(ast.parse(text)) + "\n"
    return NumpyProgram(source, "f", tuple(params), tuple(shapes),
                        tuple(sorted(gen.used)))


def repeated_write_programs(max_statements=8):
    """Programs whose element writes may name a position more than once (`a[[0, 0]] = e`,
    `a[np.minimum(np.arange(3), 1)] += e`, `a[[0, 2, -3], [1, 0, -1]] = e`, ...), often
    several, in loops and branches too, with views and aliases of the arrays sometimes."""
    return numpy_programs(max_statements=max_statements, views=20, repeats=100).filter(
        lambda p: _REPEATED_WRITE.search(p.source) is not None)


#: A write through one of `_Gen.repeated_indexes` (as `ast.unparse` spells it).
_REPEATED_WRITE = re.compile(r"^\s*\w+\[(\[0, 0\]|\[\d, 0, -\d\]|np\.array\(\[|np\.minimum\("
                             r"|np\.arange\(3\) %|\[0, \d, 0\], |:, \[)[^\n]*\] [-+*]?= ", re.M)


def example_arguments(program, seed=0):
    """Arguments in [-2, 2] for a program (for quick manual runs)."""
    rng = np.random.default_rng(seed)
    return [float(rng.uniform(-2, 2)) if s is None else rng.uniform(-2, 2, s)
            for s in program.shapes]


# -- programs that alias memory and write into it (before_ad/aliasing.py) -----------------------
#: Helpers a program may define and call: (source, whether the result shares the memory
#: of its argument, whether it writes into its argument).
ALIAS_HELPERS = {
    "fresh": ("def fresh(v):\n    out = np.zeros_like(v)\n    out[0] = v[0] ** 2\n"
              "    return out\n", False, False),
    "doubled": ("def doubled(v):\n    return v * 2.0\n", False, False),
    "tail": ("def tail(v):\n    return v[1:]\n", True, False),
    "same": ("def same(v):\n    w = v\n    return w\n", True, False),
    "scale": ("def scale(a):\n    a *= 2.0\n", False, True),
    "scale_tail": ("def scale_tail(a):\n    b = a[1:]\n    b *= 3.0\n", False, True),
    "scaled": ("def scaled(a):\n    a *= 2.0\n    return a\n", False, True),
    # (writes by a NumPy call: before_ad/write_calls.py and callee_effects see them)
    "scale_copyto": ("def scale_copyto(a):\n    np.copyto(a, a * 2.0)\n", False, True),
    "scale_out": ("def scale_out(a):\n    np.multiply(a, 2.0, out=a)\n", False, True),
    "scale_position": ("def scale_position(a):\n    np.multiply(a, 2.0, a)\n", False, True),
}

#: The names a form binds, and whether they share the memory of `y`: (statement, {name:
#: "array" | "arrays" (a list of arrays) | "numbers" (a list of numbers)}, aliased,
#: helper or None). Aliased "parts": the names are parts of one split of `y` (cut in
#: order), which share memory with `y` but not with each other: a write into a part
#: with a later read of another part only must be differentiated, not refused.
ALIAS_FORMS = (
    ("z = y", {"z": "array"}, True, None),
    ("z = y[1:]", {"z": "array"}, True, None),
    ("z = y.reshape(2, 2)", {"z": "array"}, True, None),
    ("z = y.astype(float, copy=False)", {"z": "array"}, True, None),
    ("z = y.astype(float)", {"z": "array"}, False, None),
    ("z = y[y > 0.3]", {"z": "array"}, False, None),
    ("z = y[np.argsort(x)]", {"z": "array"}, False, None),
    ("z = y[~(y > 0.3)]", {"z": "array"}, False, None),
    ("a, b = np.split(y, 2)", {"a": "array", "b": "array"}, "parts", None),
    ("a, b = np.hsplit(y, 2)", {"a": "array", "b": "array"}, "parts", None),
    ("a, b = np.split(y, [1])", {"a": "array", "b": "array"}, "parts", None),
    ("a, b, c = np.array_split(y, [1, 3])", {"a": "array", "b": "array", "c": "array"},
     "parts", None),
    ("parts = np.split(y, [3])\n    a = parts[0]\n    b = parts[1]",
     {"a": "array", "b": "array"}, "parts", None),
    ("parts = np.array_split(y, 3)", {"parts": "arrays"}, True, None),
    ("lst = [y, x * 2.0]", {"lst": "arrays"}, True, None),
    ("lst = [y, y]", {"lst": "arrays"}, True, None),
    ("lst = [y] + [x * 2.0]", {"lst": "arrays"}, True, None),
    ("lst = [x[0] * 2.0, x[1]]", {"lst": "numbers"}, False, None),
    ("z = fresh(y)", {"z": "array"}, False, "fresh"),
    ("z = doubled(y)", {"z": "array"}, False, "doubled"),
    ("z = tail(y)", {"z": "array"}, True, "tail"),
    ("z = same(y)", {"z": "array"}, True, "same"),
    ("scale(y)", {}, True, "scale"),
    ("scale(y[1:])", {}, True, "scale"),
    ("lst = [y, x * 2.0]\n    scale(lst[0])", {"lst": "arrays"}, True, "scale"),
    ("lst = [x * 2.0, y]\n    scale_tail(lst[1])", {"lst": "arrays"}, True, "scale_tail"),
    ("scale_tail(y)", {}, True, "scale_tail"),
    ("z = scaled(y)", {"z": "array"}, True, "scaled"),
    ("y = scaled(y)", {}, False, "scaled"),
    ("scale_copyto(y)", {}, True, "scale_copyto"),
    ("scale_out(y[1:])", {}, True, "scale_out"),
    ("scale_position(y)", {}, True, "scale_position"),
)

ALIAS_BASES = ("np.sin(x)", "np.tanh(x) + 0.5", "x * 1.5", "np.linspace(0.5, 1.5, 4)",
               "np.zeros(4) + np.cos(x)")


@st.composite
def aliasing_programs(draw):
    """Hypothesis strategy of `NumpyProgram`s `def f(x)` (`x` of shape (4,)) that make an
    array `y`, give its memory another name or not (`ALIAS_FORMS`: views of NumPy
    functions and of helpers, the list of views np.split returns, lists holding arrays or
    numbers, copies by masks, index arrays and astype, helpers that make new arrays or
    write into their argument), maybe read `y` first, write through one of the names, and
    return what some of them hold. `mutation` is ("aliasing",) when a name shares the
    memory of `y` (s2sad may refuse the program, naming a line), else () (it must not)."""
    def pick(options):
        return options[draw(st.integers(0, len(options) - 1))]

    def scalar():
        k = draw(st.integers(0, 3))
        return pick((f"x[{k}] ** 2", f"np.cos(x[{k}])", f"0.5 * x[{k}] + 1.0"))

    statement, names, aliased, helper = pick(ALIAS_FORMS)
    lines = [f"    y = {pick(ALIAS_BASES)}"]
    before = draw(st.booleans())
    if before:
        lines.append("    s = np.sum(y * x)")
    lines.append(f"    {statement}")
    writes = [("y", "    y[{}] = {}".format(draw(st.integers(0, 3)), scalar())),
              ("y", f"    y *= {scalar()}")]      # (the name written, the write)
    for name, kind in names.items():
        if kind == "array" and statement.startswith("z = y.reshape"):
            forms = [f"    {name}[1, {draw(st.integers(0, 1))}] = {scalar()}",
                     f"    {name} *= {scalar()}"]
        elif kind == "array" and "y > 0.3" in statement:
            forms = [f"    {name} *= {scalar()}"]     # (a mask may pick no element)
        elif kind == "array":
            forms = [f"    {name}[0] = {scalar()}", f"    {name} *= {scalar()}",
                     f"    {name} += {scalar()}"]
        elif kind == "arrays":
            forms = [f"    {name}[0] += x * x" if name == "lst" else f"    {name}[0] *= 2.0",
                     f"    t = {name}[0]\n    t[1] = {scalar()}",
                     f"    {name}[1] = x * 3.0" if name == "lst" else
                     f"    {name}[1] = {name}[1] * 3.0"]
        else:
            forms = [f"    {name}[0] += {scalar()}", f"    {name}[1] = {scalar()}"]
        writes += [(name, w) for w in forms]
    written = pick(writes) if draw(st.booleans()) else (None, None)
    if written[0] is not None:
        lines.append(written[1])
    reads = [("y", "np.sum(y * x)")]
    for name, kind in names.items():
        reads.append((name, f"np.sum({name} * {name})" if kind == "array" else
                      f"np.sum({name}[0] * x[:{2 if name == 'parts' else 4}])"
                      if kind == "arrays" else f"{name}[0] * {name}[1]"))
    chosen = [r for r in reads if draw(st.booleans())] or [reads[-1]]
    if aliased == "parts":      # (a read of what the write changes through another name)
        aliased = any(r not in (written[0], "y") if written[0] == "y" else r == "y"
                      for r, _ in chosen) if written[0] is not None else False
    chosen = [r for _, r in chosen]
    if before:
        chosen.append("s")
    lines.append(f"    return {' + '.join(chosen)}")
    # (reverse mode refuses a call that writes into memory read before it: the gradient
    # may read the old values, which the call changes when it runs as written)
    aliased = aliased or (before and helper is not None and ALIAS_HELPERS[helper][2])
    helpers = [ALIAS_HELPERS[helper][0]] if helper else []
    text = "\n".join(["import numpy as np", ""] + helpers + ["def f(x):"] + lines) + "\n"
    source = ast.unparse(ast.parse(text)) + "\n"
    return NumpyProgram(source, "f", ("x",), ((4,),), ("aliasing",) if aliased else ())


#: How a loop makes the new buffer of an iteration from `y`, the one before.
BUFFER_FRESH = ("y.copy()", "np.copy(y)", "y * 1.0", "np.zeros_like(y) + y", "np.tanh(y)",
                "np.array(y)")


@st.composite
def buffer_programs(draw):
    """Hypothesis strategy of `NumpyProgram`s `def f(x)` (`x` of shape (4,)) with a loop
    that makes a new buffer `yn` from `y` in each iteration, writes into it (maybe through
    another name, `z = yn`; element writes, `*=`, a swap of two elements, an inner loop
    of a stencil), and hands it on (`y = yn`, `y, yn = yn, y`): the double
    buffers of stencils and time steppers. Names of the buffer of the iteration before
    share no memory with the new one. Some programs keep a name of a buffer across
    iterations (`keep = yn` in the first), or read `z` after a write through `yn` in the
    same iteration: those share memory, `mutation` is ("aliasing",) and s2sad may refuse
    them, naming a line; the others must be differentiated. A third of them make the two
    buffers once, before the loop, and swap them (`y, yn = yn, y`; or, sharing memory,
    `y = yn`, `y, yn = yn, yn`)."""
    def pick(options):
        return options[draw(st.integers(0, len(options) - 1))]

    def scalar(src="y"):
        k = draw(st.integers(0, 3))
        return pick((f"{src}[{k}] * x[{k}]", f"np.cos({src}[{k}])", f"0.5 * {src}[{k}] + x[{k}]"))

    aliased = False
    lines = ["    y = np.sin(x)", "    acc = 0.0"]
    if draw(st.booleans()):
        lines.append("    keep = y")
    preallocated = draw(st.integers(0, 2)) == 0     # (two buffers made once, swapped)
    if preallocated:
        lines.append(f"    yn = {pick(('np.zeros(4)', 'np.cos(x)', 'y.copy()'))}")
    lines.append(f"    for k in range({draw(st.integers(1, 3))}):")
    if not preallocated:
        lines.append(f"        yn = {pick(BUFFER_FRESH)}")
    target = "yn"
    if draw(st.integers(0, 3)) == 0:
        lines.append("        z = yn")
        target = pick(("yn", "z"))
    for _ in range(draw(st.integers(1, 3))):
        form = draw(st.integers(0, 4))
        i = draw(st.integers(0, 3))
        if form == 4:       # (a swap of two elements: both values read before the writes)
            j = draw(st.integers(0, 3))
            lines.append(f"        {target}[{i}], {target}[{j}] = {target}[{j}], "
                         f"{target}[{i}] * x[{j}]")
        elif form == 0:
            lines.append(f"        {target}[{i}] = {scalar()}")
        elif form == 1:
            lines.append(f"        {target}[{i}] += {scalar()}")
        elif form == 2:
            lines.append(f"        {target} *= {pick(('0.9', 'np.tanh(y)', 'x'))}")
        else:
            lines.append(f"        for i in range(1, 3):\n"
                         f"            {target}[i] = y[i] + 0.2 * (y[i - 1] - y[i + 1]) * x[i]")
        if target == "z" or "z = yn" in "\n".join(lines):
            aliased = True      # (`z` and `yn` name one buffer: one is read after)
    if draw(st.integers(0, 3)) == 0:
        lines.append("        keep = yn if k == 0 else keep" if "    keep = y" not in lines
                     else "        keep = keep")
        aliased = aliased or "    keep = y" not in lines
    lines.append(f"        acc = acc + np.sum({pick(('y', 'yn'))} * x)")
    if preallocated:
        end = pick(("        y, yn = yn, y", "        y = yn", "        y, yn = yn, yn"))
        # (then one buffer; or, swapped, `keep` is a buffer the loop writes into later)
        aliased = aliased or end != "        y, yn = yn, y" or "    keep = y" in lines
    else:
        end = pick(("        y = yn", "        y, yn = yn, y", "        y = yn * 1.0"))
    lines.append(end)
    reads = ["np.sum(y * y)", "acc"] + (["np.sum(keep * x)"] if "keep" in "\n".join(lines)
                                       else [])
    chosen = [r for r in reads if draw(st.booleans())] or [reads[0]]
    lines.append(f"    return {' + '.join(chosen)}")
    text = "\n".join(["import numpy as np", "", "def f(x):"] + lines) + "\n"
    source = ast.unparse(ast.parse(text)) + "\n"
    return NumpyProgram(source, "f", ("x",), ((4,),), ("aliasing",) if aliased else ())
