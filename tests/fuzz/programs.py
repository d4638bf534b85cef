"""Random differentiable scalar Python programs, as source text, for fuzzing s2sad.

`programs()` is a hypothesis strategy whose values are `Program`s: the text of a small
module (`import math`, sometimes a few global constants, and one `def f(x, ...)` with one
to three float parameters) written in the scalar subset s2sad supports:

- assignments (reassignment, shadowing, multiple targets `a = b = e`, tuple unpacking
  and swaps), augmented assignment (`+= -= *= /= **= //= %=`);
- `+ - * / ** // %`, unary `-`/`+`, conditional expressions, `math` functions, and the
  builtins `abs`, `min`, `max` (2 and 3 arguments), `pow`, `float`, `int`, `round`;
- `if`/`elif`/`else` on comparisons (also chained) combined with `and`/`or`/`not`;
- `for` over `range(...)` (constant or integer-variable bounds, also with a start and
  a negative step) and over tuple/list displays, nested loops with loop-carried values,
  `while` loops whose counter guarantees termination, `break`/`continue` inside `if`s,
  early returns inside branches and loops, and (rarely) `for ... else`.

Loop variables are never rebound inside their loop and loops over displays contain no
`break`/`continue` (s2sad refuses both with an `UnsupportedSyntaxError`).

Every program is valid Python, deterministic, and evaluates without error for inputs
in [-2, 2] unless a float overflows (the generator keeps values bounded, so that is rare):
logarithms and square roots only see positive arguments (`math.log(1.0 + v * v)`,
`math.sqrt(2.0 + math.cos(v))`), divisors are bounded away from zero
(`v / (1.5 + math.cos(w))`), `exp` sees bounded arguments, powers use small exponents,
and values carried around loops are squashed (`math.tanh`, factors below 1). Names that
are read are always defined on every path that reaches them, and `range` is only given
integers.

With `names="tricky"` (or `"mixed"`) parameters, locals, loop variables, global
constants and the function itself are also named like the code s2sad generates (`t`,
`t_1`, `x_bar`, `y_bar`, `value`, `_s2s_tape`, `f_pullback`, `reversed`, `cos`, ...).
With `unsupported=True`, one statement outside the subset (a comprehension, `with`,
`lambda`, `del`, ...) is inserted; `Program.unsupported_line` is its line.
`or_and_programs()` also uses `or` and `and` as values (`(a or b)`, `v = v or e`), with
operands that are 0.0 at some points.

Shrinking produces simpler programs: every choice's first option is the simplest.
"""
import ast
import itertools
import linecache
import math
from dataclasses import dataclass, field

from hypothesis import strategies as st

PLAIN_NAMES = ("a", "b", "c", "s", "u", "v", "w", "p", "q", "r", "acc", "z2")
PLAIN_PARAMS = ("x", "y", "z")
PLAIN_INDEX = ("i", "j", "l", "ii")
PLAIN_COUNTERS = ("k", "kk", "k2")
PLAIN_INTS = ("m", "n", "nn")

# Names s2sad generates or binds in generated code (or close to them).
TRICKY_NAMES = (
    "t", "t_1", "t_2", "t_3", "t_bar", "x_bar", "y_bar", "z_bar", "x_1", "y_1", "x_bar_1",
    "value", "value_1", "y", "y_2", "_s2s_tape", "_s2s_tape_1", "_s2s_trips", "_",
    "_1", "f_pullback", "f_vjp", "f_value_and_grad", "f_pullback_1", "reversed",
    "cos", "sin", "exp", "log", "sqrt", "tanh", "copysign", "zeros_like", "seed",
    "exponent_term", "_s2s_log", "ans", "g", "type", "i_bar", "a_bar", "pullback", "result",
    "_s2s_factory", "y_bar_1", "s_bar", "v_1", "returned", "broke", "_s2s_seed",
    "_s2s_zeros_like", "_s2s_Respecialize", "_s2s_respecialize", "i_1", "__1")
TRICKY_FUNCTIONS = ("f", "t", "value", "f_pullback", "f_vjp", "x_bar", "y_bar", "g",
                    "_s2s_tape", "seed", "reversed")
# Module globals that shadow builtins/helpers without the function reading them.
TRICKY_SHADOWS = ("reversed", "zeros_like", "seed", "copysign", "exponent_term", "type")

CAP = 4.0          # bound of an assigned value (larger ones are squashed)
LIMIT = 40.0       # bound of any subexpression (larger ones are squashed)
MAX_TRIPS = 40     # bound of the product of the trip counts of nested loops

_counter = itertools.count()


@dataclass(frozen=True)
class Program:
    """A generated module: `source`, the function `name` and its `params`."""

    source: str
    name: str
    params: tuple
    unsupported_line: int = None
    globals_shadowed: tuple = field(default=())

    def __repr__(self):
        return f"Program(name={self.name!r}, params={self.params!r}, source=\n{self.source})"

    def load(self):
        """Exec the module under a fresh fake file name registered in `linecache`
        (so `inspect.getsource` works) and return the function."""
        return load_function(self.source, self.name)


def load_function(text, name):
    filename = f"<s2sad-fuzz-{next(_counter)}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    namespace = {"__name__": "s2sad_fuzz_program"}
    exec(compile(text, filename, "exec"), namespace)
    return namespace[name]


def forget(fn):
    """Drop `fn`'s source from `linecache` (after s2sad is done with it)."""
    linecache.cache.pop(getattr(getattr(fn, "__code__", None), "co_filename", None), None)


# -- helpers ---------------------------------------------------------------------------

def _num(v):
    """Source of a float constant (negative ones as a unary minus)."""
    text = repr(float(v))
    return f"(-{text[1:]})" if text.startswith("-") else text


class _Var:
    __slots__ = ("kind", "bound")

    def __init__(self, kind, bound):
        self.kind = kind          # "int" (safe in range()) or "float"
        self.bound = bound        # |value| <= bound (heuristically, inside loops)

    def copy(self):
        return _Var(self.kind, self.bound)


def _join_var(a, b):
    return _Var("int" if a.kind == b.kind == "int" else "float", max(a.bound, b.bound))


def _join_envs(envs):
    """Names defined in every env, with joined kinds and bounds."""
    envs = [e for e in envs if e is not None]
    if not envs:
        return None
    names = set(envs[0])
    for e in envs[1:]:
        names &= set(e)
    out = {}
    for n in names:
        v = envs[0][n].copy()
        for e in envs[1:]:
            v = _join_var(v, e[n])
        out[n] = v
    return out


class _Loop:
    def __init__(self, kind, index, trips, protected):
        self.kind = kind              # "for" or "while"
        self.index = index            # loop variable (for) or None
        self.trips = trips            # product of trip counts up to and incl. this loop
        self.protected = protected    # names the body must not assign
        self.exit_envs = []           # envs at each break
        self.assigned = {}            # name -> _Var joined over every assignment inside


class Choices:
    """Hypothesis choices for a generator with a `draw`; the first option is the
    simplest, so shrinking simplifies."""

    def pick(self, options):
        return self.draw(st.sampled_from(options))

    def weighted(self, pairs):
        """One of the (weight, option) pairs; shrinks towards the first."""
        total = sum(w for w, _ in pairs)
        r = self.draw(st.integers(0, total - 1))
        for w, opt in pairs:
            if r < w:
                return opt
            r -= w
        raise AssertionError

    def chance(self, percent):
        """True with probability `percent`/100; shrinks to False."""
        return self.draw(st.integers(0, 99)) >= 100 - percent

    def const(self, lo=-2.0, hi=2.0, step=0.25):
        """A multiple of `step` in [lo, hi]; shrinks to 0.5 (then lo, lo + step, ...)."""
        grid = [lo + j * step for j in range(int(round((hi - lo) / step)) + 1)]
        return ([0.5] + grid)[self.draw(st.integers(0, len(grid)))]


class _Gen(Choices):
    """Draws one program. Statements are text lines; expressions are (text, bound)."""

    def __init__(self, draw, names, budget, allow_for_else):
        self.draw = draw
        self.tricky = names
        self.budget = budget
        self.allow_for_else = allow_for_else
        self.loops = []
        self.reserved = set()
        self.in_display = 0     # inside a loop over a display: no break/continue
        self.helpers = []       # (name, number of parameters, bound of the result)

    def pos_const(self):
        return self.pick((1.0, 0.5, 2.0, 1.5, 0.25, 3.0))

    # -- names --------------------------------------------------------------------------
    def name_pool(self, plain):
        if self.tricky == "plain":
            return plain
        if self.tricky == "tricky":
            return TRICKY_NAMES
        return plain + TRICKY_NAMES

    def new_name(self, env, plain=PLAIN_NAMES):
        pool = [n for n in self.name_pool(plain) if n not in env and n not in self.reserved]
        if not pool:
            return None
        n = self.pick(pool)
        return n

    def assignable(self, env, kind="float"):
        """Existing names a statement here may rebind."""
        loop = self.loops[-1] if self.loops else None
        out = []
        for n, v in env.items():
            if n in self.reserved:
                continue
            if any(n in lp.protected or n == lp.index for lp in self.loops):
                continue      # counters, and loop variables (s2sad refuses rebinding them)
            if loop is not None and v.kind == "int" and kind != "int":
                continue      # an int of an enclosing scope stays int inside loops
            out.append(n)
        return sorted(out)

    def target(self, env, kind="float"):
        """A name to assign: an existing one (reassignment/shadowing) or a new one."""
        existing = self.assignable(env, kind)
        if existing and self.chance(55):
            return self.pick(existing)
        n = self.new_name(env)
        if n is None:
            return self.pick(existing) if existing else None
        return n

    def record(self, env, name, var):
        env[name] = var
        for lp in self.loops:
            prev = lp.assigned.get(name)
            lp.assigned[name] = var.copy() if prev is None else _join_var(prev, var)

    # -- expressions --------------------------------------------------------------------
    def readable(self, env, kind=None):
        return sorted(n for n, v in env.items() if kind is None or v.kind == kind)

    def leaf(self, env):
        names = self.readable(env)
        floats = [n for n in names if env[n].kind == "float"]
        choice = self.weighted([(6, "float"), (2, "const"), (2, "any")])
        if choice == "float" and floats:
            n = self.pick(floats)
        elif choice == "any" and names:
            n = self.pick(names)
        elif names and choice != "const":
            n = self.pick(names)
        else:
            c = self.const()
            return _num(c), abs(c)
        return n, env[n].bound

    def squash(self, text, bound, cap=1.0):
        how = self.pick(("tanh", "atan", "sin", "scale"))
        if how == "scale" and bound > 0:
            factor = cap / bound
            factor = 2.0 ** math.floor(math.log2(factor)) if factor < 1 else 1.0
            return f"({_num(factor)} * {text})", bound * factor
        if how == "atan":
            return f"math.atan({text})", math.pi / 2
        if how == "sin":
            return f"math.sin({text})", 1.0
        return f"math.tanh({text})", 1.0

    def bounded(self, env, depth, limit):
        text, b = self.expr(env, depth)
        if b > limit:
            text, b = self.squash(text, b, limit)
        return text, b

    def expr(self, env, depth):
        if depth <= 0:
            return self.leaf(env)
        kind = self.weighted([
            (4, "leaf"), (5, "arith"), (3, "mul"), (2, "div"), (3, "unary_math"),
            (1, "exp"), (1, "log"), (1, "sqrt"), (1, "pow"), (2, "builtin"),
            (1, "neg"), (1, "ifexp"), (1, "mod"), (1, "more_math"),
            (2 if self.helpers else 0, "call")])
        d = depth - 1
        if kind == "leaf":
            return self.leaf(env)
        if kind == "call":
            name, n, bound = self.pick(self.helpers)
            args = [self.bounded(env, d, 2.0)[0] for _ in range(n)]
            return f"{name}({', '.join(args)})", bound
        if kind == "arith":
            (a, ba), (b, bb) = self.expr(env, d), self.expr(env, d)
            op = self.pick(("+", "-"))
            text, bound = f"({a} {op} {b})", ba + bb
        elif kind == "mul":
            (a, ba), (b, bb) = self.expr(env, d), self.expr(env, d)
            text, bound = f"({a} * {b})", ba * bb
        elif kind == "div":
            a, ba = self.expr(env, d)
            form = self.pick(("const", "cos", "square", "abs"))
            if form == "const":
                c = self.pick((2.0, 4.0, -2.0, 3.0, 0.5, -8.0))
                text, bound = f"({a} / {_num(c)})", ba / abs(c)
            elif form == "cos":
                b, _ = self.expr(env, d)
                fn = self.pick(("cos", "sin", "tanh"))
                c = self.pick((1.5, 2.0, 3.0))
                text, bound = f"({a} / ({_num(c)} + math.{fn}({b})))", ba / (c - 1.0)
            elif form == "square":
                b, _ = self.expr(env, d)
                text, bound = f"({a} / (1.0 + ({b}) * ({b})))", ba
            else:
                b, _ = self.expr(env, d)
                text, bound = f"({a} / (1.0 + abs({b})))", ba
        elif kind == "unary_math":
            a, ba = self.expr(env, d)
            fn = self.pick(("sin", "cos", "tanh", "atan", "erf", "asinh"))
            text = f"math.{fn}({a})"
            bound = {"atan": math.pi / 2, "asinh": math.asinh(ba)}.get(fn, 1.0)
        elif kind == "exp":
            a, ba = self.bounded(env, d, 2.0)
            fn = self.pick(("exp", "expm1", "sinh", "cosh", "exp2"))
            if fn == "exp2":
                text, bound = f"(2.0 ** ({a}))", 2.0 ** ba
            else:
                text, bound = f"math.{fn}({a})", math.exp(ba)
        elif kind == "log":
            a, ba = self.bounded(env, d, 6.0)
            form = self.pick(("square", "sin", "log1p", "softplus", "log2", "base"))
            if form == "square":
                c = self.pos_const()
                text = f"math.log({_num(c)} + ({a}) * ({a}))"
                bound = abs(math.log(c)) + math.log1p(ba * ba / c)
            elif form == "sin":
                text, bound = f"math.log(2.0 + math.sin({a}))", math.log(3.0)
            elif form == "log1p":
                text, bound = f"math.log1p(({a}) * ({a}))", math.log1p(ba * ba)
            elif form == "softplus":
                a, ba = self.bounded(env, d, 3.0)
                text, bound = f"math.log(1.0 + math.exp({a}))", math.log1p(math.exp(ba))
            elif form == "log2":
                fn = self.pick(("log2", "log10"))
                text, bound = f"math.{fn}(1.5 + math.cos({a}))", 1.5
            else:
                text, bound = f"math.log(1.0 + ({a}) * ({a}), 2.0)", math.log2(1 + ba * ba)
        elif kind == "sqrt":
            a, ba = self.bounded(env, d, 6.0)
            form = self.pick(("square", "cos", "hypot", "cbrt"))
            if form == "square":
                c = self.pos_const()
                text, bound = f"math.sqrt({_num(c)} + ({a}) * ({a}))", math.sqrt(c + ba * ba)
            elif form == "cos":
                text, bound = f"math.sqrt(2.0 + math.cos({a}))", math.sqrt(3.0)
            elif form == "hypot":
                c = self.pos_const()
                text, bound = f"math.hypot({a}, {_num(c)})", ba + c
            else:
                text, bound = f"math.cbrt(1.5 + math.sin({a}))", 1.4
        elif kind == "pow":
            form = self.pick(("square", "cube", "pow2", "float_exp", "int_var", "active_exp",
                              "sqrt_pow", "math_pow"))
            if form in ("square", "cube", "pow2", "float_exp"):
                a, ba = self.bounded(env, d, 3.0)
                if form == "square":
                    text, bound = f"({a}) ** 2", ba ** 2
                elif form == "cube":
                    text, bound = f"({a}) ** 3", ba ** 3
                elif form == "pow2":
                    n = self.pick((2, 3))
                    text, bound = f"pow({a}, {n})", ba ** n
                else:
                    text, bound = f"({a}) ** 2.0", ba ** 2
            elif form == "int_var":
                ints = [n for n in self.readable(env, "int") if env[n].bound <= 6]
                a, ba = self.bounded(env, d, 1.5)
                if ints:
                    n = self.pick(ints)
                    text, bound = f"({a}) ** {n}", max(1.0, ba) ** env[n].bound
                else:
                    text, bound = f"({a}) ** 2", ba ** 2
            elif form == "active_exp":
                a, ba = self.bounded(env, d, 2.0)
                base = self.pick(("1.5 + math.sin", "2.0 + math.cos", "1.0 + math.tanh"))
                b, _ = self.expr(env, d)
                if base.startswith("1.0"):
                    b = f"(({b}) * ({b}) + 0.5)"      # base (0, 2): keep it positive
                text, bound = f"({base}({b})) ** ({a})", 3.0 ** ba
            elif form == "sqrt_pow":
                a, ba = self.bounded(env, d, 6.0)
                e = self.pick((0.5, 1.5, -0.5))
                text, bound = f"(1.0 + ({a}) * ({a})) ** {_num(e)}", (1 + ba * ba) ** max(e, 0)
            else:
                a, ba = self.bounded(env, d, 2.0)
                b, _ = self.expr(env, d)
                text, bound = f"math.pow(2.0 + math.cos({b}), {a})", 3.0 ** ba
        elif kind == "builtin":
            fn = self.pick(("abs", "min", "max", "float", "int", "round", "min3", "max3",
                            "round2", "fabs", "floatint"))
            a, ba = self.expr(env, d)
            if fn in ("min", "max"):
                b, bb = self.expr(env, d)
                text, bound = f"{fn}({a}, {b})", max(ba, bb)
            elif fn in ("min3", "max3"):
                (b, bb), (c, bc) = self.expr(env, d), self.expr(env, d)
                text, bound = f"{fn[:3]}({a}, {b}, {c})", max(ba, bb, bc)
            elif fn == "round":
                text, bound = f"round({a})", ba + 1
            elif fn == "round2":
                text, bound = f"round({a}, 1)", ba + 0.1
            elif fn == "fabs":
                text, bound = f"math.fabs({a})", ba
            elif fn == "floatint":
                text, bound = f"float(int({a}))", ba
            else:
                text, bound = f"{fn}({a})", ba
        elif kind == "neg":
            a, ba = self.expr(env, d)
            text, bound = f"({self.pick(('-', '+'))}{a})", ba
        elif kind == "ifexp":
            cond = self.cond(env, d)
            (a, ba), (b, bb) = self.expr(env, d), self.expr(env, d)
            text, bound = f"({a} if {cond} else {b})", max(ba, bb)
        elif kind == "mod":
            a, ba = self.expr(env, d)
            form = self.pick(("mod", "floordiv", "mod_active", "fmod"))
            if form == "mod":
                c = self.pick((1.5, 1.0, 0.75, 2.0))
                text, bound = f"({a} % {_num(c)})", c
            elif form == "floordiv":
                c = self.pick((1.0, 0.5, 2.0))
                text, bound = f"({a} // {_num(c)})", ba / c + 1
            elif form == "mod_active":
                b, _ = self.expr(env, d)
                text, bound = f"({a} % (1.5 + math.cos({b})))", 2.5
            else:
                c = self.pick((1.5, 0.75))
                text, bound = f"math.fmod({a}, {_num(c)})", c
        else:   # more_math
            form = self.pick(("atan2", "tanh_sinh", "copysign", "hypot2", "erfc",
                              "degrees", "trunc"))
            a, ba = self.expr(env, d)
            if form == "atan2":
                b, _ = self.expr(env, d)
                text, bound = f"math.atan2({a}, 1.5 + math.cos({b}))", math.pi / 2
            elif form == "tanh_sinh":
                text, bound = f"math.tanh(math.sinh({self.squash(a, ba)[0]}))", 1.0
            elif form == "copysign":
                b, _ = self.expr(env, d)
                text, bound = f"math.copysign({a}, {b})", ba
            elif form == "hypot2":
                b, bb = self.expr(env, d)
                text, bound = f"math.hypot({a}, {b}, 0.5)", ba + bb + 0.5
            elif form == "erfc":
                text, bound = f"math.erfc({a})", 2.0
            elif form == "degrees":
                text, bound = f"math.radians(math.degrees({a}))", ba
            else:
                text, bound = f"math.trunc({a})", ba
        if bound > LIMIT or not math.isfinite(bound):
            text, bound = self.squash(text, bound, 2.0)
        return text, bound

    def cond(self, env, depth):
        kind = self.weighted([(6, "cmp"), (1, "chain"), (1, "and"), (1, "or"), (1, "not"),
                              (1, "int")])
        d = max(depth - 1, 0)
        if kind == "cmp" or depth <= 0:
            a, _ = self.expr(env, d)
            op = self.pick(("<", ">", "<=", ">=", "!=", "=="))
            if self.chance(50):
                b = _num(self.const())
            else:
                b, _ = self.expr(env, d)
            return f"({a} {op} {b})"
        if kind == "chain":
            a, _ = self.expr(env, d)
            lo = self.const(-2.0, 0.0)
            return f"({_num(lo)} < {a} <= {_num(lo + self.pick((1.0, 0.5, 2.0)))})"
        if kind in ("and", "or"):
            return f"({self.cond(env, d)} {kind} {self.cond(env, d)})"
        if kind == "not":
            return f"(not {self.cond(env, d)})"
        ints = self.readable(env, "int")
        if not ints:
            return self.cond(env, 0)
        n = self.pick(ints)
        form = self.pick(("even", "eq", "gt"))
        if form == "even":
            return f"({n} % 2 == 0)"
        if form == "eq":
            return f"({n} == {self.pick((1, 0, 2))})"
        return f"({n} > {self.pick((1, 0, 2))})"

    # -- statements ---------------------------------------------------------------------
    def block(self, env, indent, depth):
        """Lines of a block; returns (lines, env at the end or None if it never falls
        through, env after the leading statements that cannot jump)."""
        lines = []
        prefix_env = dict(env)
        jumped = False
        n_stmts = self.draw(st.integers(1, 4 if depth > 0 else 6))
        for k in range(n_stmts):
            if self.budget <= 0 and k > 0:
                break
            self.budget -= 1
            stmt_lines, env, may_jump = self.statement(env, indent, depth)
            lines.extend(stmt_lines)
            if env is None:
                return lines, None, prefix_env
            if may_jump:
                jumped = True
            if not jumped:
                prefix_env = dict(env)
        return lines, env, prefix_env

    def statement(self, env, indent, depth):
        """(lines, env after or None, whether it may jump out: return/break/continue)."""
        pad = "    " * indent
        in_loop = bool(self.loops)
        choices = [(8, "assign"), (4, "update"), (4, "aug"), (2, "unpack"), (1, "multi"),
                   (1, "int")]
        if depth < 3:
            choices += [(4, "if"), (3, "for"), (1, "for_display"), (2, "while")]
        choices += [(1, "return"), (1, "guard")]
        if in_loop and not self.in_display:
            choices += [(2, "jump")]
        kind = self.weighted(choices)
        if kind in ("if", "for", "for_display", "while") and self.loops and \
                self.loops[-1].trips * 4 > MAX_TRIPS and kind != "if":
            kind = "assign"
        return getattr(self, "stmt_" + kind)(env, pad, indent, depth)

    def assigned_value(self, env, depth=3):
        text, bound = self.expr(env, self.draw(st.integers(1, depth)))
        if bound > CAP:
            text, bound = self.squash(text, bound, CAP)
        return text, bound

    def stmt_assign(self, env, pad, indent, depth):
        name = self.target(env)
        if name is None:
            return [], env, False
        text, bound = self.assigned_value(env)
        env = dict(env)
        self.record(env, name, _Var("float", bound))
        return [f"{pad}{name} = {text}"], env, False

    def stmt_int(self, env, pad, indent, depth):
        """An integer variable, later usable as a range bound."""
        name = self.target(env, kind="int")
        if name is None:
            return [], env, False
        a, _ = self.expr(env, 1)
        form = self.pick(("int", "round", "const"))
        if form == "const":
            text, bound = str(self.pick((2, 3, 1, 0))), 3
        elif form == "round":
            text, bound = f"round(1.5 + math.sin({a}))", 3
        else:
            text, bound = f"int(2.0 + math.cos({a}))", 3
        env = dict(env)
        self.record(env, name, _Var("int", bound))
        return [f"{pad}{name} = {text}"], env, False

    def stmt_update(self, env, pad, indent, depth):
        """A value updated from itself, as loop-carried values are."""
        names = [n for n in self.assignable(env) if env[n].kind == "float"]
        if not names:
            return self.stmt_assign(env, pad, indent, depth)
        name = self.pick(names)
        e, be = self.expr(env, self.draw(st.integers(0, 2)))
        form = self.pick(("damped", "tanh", "sin", "mix", "ratio"))
        if form == "damped":
            c = self.pick((0.5, 0.25, -0.5, 0.75))
            text = f"{_num(c)} * {name} + {e}"
            bound = abs(c) * env[name].bound + be
        elif form == "tanh":
            text, bound = f"math.tanh({name} * {e} + {_num(self.const())})", 1.0
        elif form == "sin":
            text, bound = f"math.sin({name}) * {e}", be
        elif form == "mix":
            text, bound = f"{name} + 0.25 * math.sin({e} * {name})", env[name].bound + 0.25
        else:
            text = f"{name} / (1.5 + math.cos({e})) + 0.1"
            bound = env[name].bound * 2 + 0.1
        if bound > CAP:
            text, bound = self.squash(text, bound, CAP)
        env = dict(env)
        self.record(env, name, _Var("float", bound))
        return [f"{pad}{name} = {text}"], env, False

    def stmt_multi(self, env, pad, indent, depth):
        a = self.target(env)
        env2 = dict(env)
        env2[a] = _Var("float", 0.0)     # so the second target differs
        b = self.target(env2)
        if a is None or b is None or a == b:
            return self.stmt_assign(env, pad, indent, depth)
        text, bound = self.assigned_value(env)
        env = dict(env)
        self.record(env, a, _Var("float", bound))
        self.record(env, b, _Var("float", bound))
        return [f"{pad}{a} = {b} = {text}"], env, False

    def stmt_unpack(self, env, pad, indent, depth):
        floats = [n for n in self.assignable(env) if env[n].kind == "float"]
        env = dict(env)
        if len(floats) >= 2 and self.chance(40):
            # a swap or rotation of existing variables
            k = 3 if len(floats) >= 3 and self.chance(30) else 2
            names = []
            for _ in range(k):
                names.append(self.pick([n for n in floats if n not in names]))
            rotated = names[1:] + names[:1]
            old = {n: env[n] for n in names}
            for n, src in zip(names, rotated):
                self.record(env, n, old[src].copy())
            return [f"{pad}{', '.join(names)} = {', '.join(rotated)}"], env, False
        targets = []
        probe = dict(env)
        for _ in range(self.pick((2, 3))):
            n = self.target(probe)
            if n is None or n in targets:
                break
            targets.append(n)
            probe[n] = _Var("float", 0.0)
        if len(targets) < 2:
            return self.stmt_assign(env, pad, indent, depth)
        values = [self.assigned_value(env, 1) for _ in targets]
        for n, (_, b) in zip(targets, values):
            self.record(env, n, _Var("float", b))
        rhs = ", ".join(t for t, _ in values)
        if self.chance(20):
            rhs = f"({rhs})"
        return [f"{pad}{', '.join(targets)} = {rhs}"], env, False

    def stmt_aug(self, env, pad, indent, depth):
        names = [n for n in self.assignable(env) if env[n].kind == "float"]
        if not names:
            return self.stmt_assign(env, pad, indent, depth)
        name = self.pick(names)
        old = env[name].bound
        trips = self.loops[-1].trips if self.loops else 1
        op = self.pick(("+=", "*=", "-=", "/=", "**=", "%=", "//="))
        if op in ("+=", "-="):
            limit = 0.5 if self.loops else CAP
            text, b = self.bounded(env, self.draw(st.integers(0, 2)), limit)
            bound = old + b * trips
        elif op == "*=":
            form = self.pick(("cos", "const", "tanh", "any"))
            if form == "const":
                c = self.pick((0.5, -0.75, 0.9, 1.5))
                text, bound = _num(c), old * abs(c)
            elif form == "any" and not self.loops:
                text, b = self.bounded(env, 1, 2.0)
                bound = old * b
            else:
                a, _ = self.expr(env, 1)
                text, bound = f"math.{'cos' if form == 'cos' else 'tanh'}({a})", old
        elif op == "/=":
            a, _ = self.expr(env, 1)
            c = self.pick((1.5, 2.0))
            text, bound = f"({_num(c)} + math.sin({a}))", old / (c - 1.0)
            if self.loops:
                text, bound = f"(2.0 + math.sin({a}))", old
        elif op == "**=":
            if old > 2.0 or self.loops:
                return [f"{pad}{name} = math.tanh({name})"], self._set(env, name, 1.0), False
            text, bound = "2", old * old
        elif op == "%=":
            c = self.pick((1.5, 1.0))
            text, bound = _num(c), c
        else:
            c = self.pick((0.5, 1.0))
            text, bound = _num(c), old / c + 1
        env = self._set(env, name, bound)
        lines = [f"{pad}{name} {op} {text}"]
        if bound > CAP * (3 if self.loops else 1):
            lines.append(f"{pad}{name} = math.tanh({name})")
            env = self._set(env, name, 1.0)
        return lines, env, False

    def _set(self, env, name, bound):
        env = dict(env)
        self.record(env, name, _Var("float", bound))
        return env

    def stmt_return(self, env, pad, indent, depth):
        if depth < 3 and self.chance(75):
            cond = self.cond(env, 1)
            value, _ = self.expr(env, self.draw(st.integers(0, 2)))
            return [f"{pad}if {cond}:", f"{pad}    return {value}"], env, True
        if not self.loops and depth == 0:
            return self.stmt_assign(env, pad, indent, depth)   # keep the rest reachable
        value, _ = self.expr(env, 2)
        return [f"{pad}return {value}"], None, True

    def stmt_guard(self, env, pad, indent, depth):
        """A check that raises, as a solver's `if n > maxiter: raise ...` (an arm that
        raises: what follows runs after the `if`); mostly above the value's bound, so
        that it never fires, else at a drawn condition (the point is then skipped where
        it fires)."""
        floats = [n for n in self.readable(env) if env[n].kind == "float"]
        if floats and self.chance(70):
            name = self.pick(floats)
            cond = f"abs({name}) > {_num(env[name].bound + 1.0)}"
        else:
            cond = self.cond(env, 1)
        return [f"{pad}if {cond}:", f'{pad}    raise ValueError("diverged")'], env, False

    def stmt_jump(self, env, pad, indent, depth):
        loop = self.loops[-1]
        what = self.pick(("break", "continue"))
        if what == "continue" and loop.kind == "while" and not loop.continue_ok:
            what = "break"
        lines = []
        bare = self.chance(10)
        if bare:
            jump_pad = pad
        else:
            lines.append(f"{pad}if {self.cond(env, 1)}:")
            jump_pad = pad + "    "
            if self.chance(30):     # an assignment right before the jump
                sub, env2, _ = self.stmt_assign(env, jump_pad, indent + 1, depth + 1)
                lines.extend(sub)
                env_at_jump = env2
            else:
                env_at_jump = env
        if bare:
            env_at_jump = env
        lines.append(f"{jump_pad}{what}")
        if what == "break":
            loop.exit_envs.append(env_at_jump)
        return lines, (None if bare else env), True

    def stmt_if(self, env, pad, indent, depth):
        lines = [f"{pad}if {self.cond(env, 2)}:"]
        body, env_then, _ = self.block(dict(env), indent + 1, depth + 1)
        lines += body
        ends = [env_then]
        n_elif = self.weighted([(5, 0), (2, 1), (1, 2)])
        for _ in range(n_elif):
            lines.append(f"{pad}elif {self.cond(env, 2)}:")
            body, e, _ = self.block(dict(env), indent + 1, depth + 1)
            lines += body
            ends.append(e)
        if self.chance(60):
            lines.append(f"{pad}else:")
            body, e, _ = self.block(dict(env), indent + 1, depth + 1)
            lines += body
            ends.append(e)
        else:
            ends.append(env)
        return lines, _join_envs(ends), True if any(
            ("return" in line or "break" in line or "continue" in line)
            for line in lines[1:]) else False

    def _range(self, env):
        """(text of the range arguments, trip count bound, guaranteed >= 1 trip)."""
        ints = [n for n in self.readable(env, "int") if env[n].bound <= 4]
        form = self.weighted([(6, "n"), (2, "start"), (1, "step"), (1, "down"), (2, "var")])
        if form == "var" and ints:
            n = self.pick(ints)
            if self.chance(50):
                return f"{n}", env[n].bound, False
            return f"{n} + 1", env[n].bound + 1, True
        if form == "start":
            a = self.pick((1, 0, 2))
            b = a + self.pick((2, 1, 3))
            return f"{a}, {b}", b - a, True
        if form == "step":
            return "0, 5, 2", 3, True
        if form == "down":
            return "3, 0, -1", 3, True
        n = self.pick((3, 2, 1, 4))
        return f"{n}", n, True

    def loop_body(self, env, indent, depth, loop):
        self.loops.append(loop)
        try:
            body, end_env, prefix_env = self.block(dict(env), indent + 1, depth + 1)
        finally:
            self.loops.pop()
        return body, end_env, prefix_env

    def _after_loop(self, env, loop, prefix_env, at_least_once, extra=()):
        """Env after a loop: what was defined before it (kinds/bounds joined with every
        assignment inside), plus the body's jump-free prefix if it surely ran once."""
        out = {}
        for n, v in env.items():
            a = loop.assigned.get(n)
            out[n] = v.copy() if a is None else _join_var(v, a)
        if at_least_once and prefix_env is not None:
            for n in prefix_env:
                if n not in out:
                    out[n] = loop.assigned.get(n, prefix_env[n]).copy()
        for n, v in extra:
            out[n] = v if n not in loop.assigned else _join_var(v, loop.assigned[n])
        # propagate the inner loop's assignments to the enclosing loops
        for n, v in loop.assigned.items():
            for lp in self.loops:
                prev = lp.assigned.get(n)
                lp.assigned[n] = v.copy() if prev is None else _join_var(prev, v)
        return out

    def stmt_for(self, env, pad, indent, depth):
        args, trips, once = self._range(env)
        index = self.new_name(env, PLAIN_INDEX)
        if index is None:
            return self.stmt_assign(env, pad, indent, depth)
        outer = self.loops[-1].trips if self.loops else 1
        loop = _Loop("for", index, outer * max(trips, 1), set())
        inner = dict(env)
        inner[index] = _Var("int", max(trips, 3))
        body, end_env, prefix_env = self.loop_body(inner, indent, depth, loop)
        lines = [f"{pad}for {index} in range({args}):"] + body
        idx_var = loop.assigned.get(index, _Var("int", max(trips, 3)))
        extra = [(index, _join_var(_Var("int", max(trips, 3)), idx_var))] if once else []
        after = self._after_loop(env, loop, prefix_env, once, extra)
        if self.allow_for_else and self.chance(8):
            # `else` runs when the loop did not break: rebind a name defined either way
            names = [n for n in self.assignable(after) if after[n].kind == "float"]
            lines.append(f"{pad}else:")
            if names:
                name = self.pick(names)
                text, bound = self.assigned_value(after, 1)
                lines.append(f"{pad}    {name} = {text}")
                after = self._set(after, name, max(bound, after[name].bound))
            else:
                lines.append(f"{pad}    pass")
        return lines, after, True

    def stmt_for_display(self, env, pad, indent, depth):
        k = self.pick((2, 3, 1))
        items = [self.assigned_value(env, 1) for _ in range(k)]
        var = self.new_name(env, PLAIN_INDEX)
        if var is None:
            return self.stmt_assign(env, pad, indent, depth)
        outer = self.loops[-1].trips if self.loops else 1
        loop = _Loop("for", var, outer * k, set())
        inner = dict(env)
        inner[var] = _Var("float", max(b for _, b in items))
        # s2sad unrolls these loops and rejects break/continue anywhere in them
        self.in_display += 1
        try:
            body, end_env, prefix_env = self.loop_body(inner, indent, depth, loop)
        finally:
            self.in_display -= 1
        open_, close = ("[", "]") if self.chance(40) else ("(", ")")
        tail = "," if k == 1 and open_ == "(" else ""
        lines = [f"{pad}for {var} in {open_}{', '.join(t for t, _ in items)}{tail}{close}:"]
        lines += body
        extra = [(var, inner[var])]
        return lines, self._after_loop(env, loop, prefix_env, True, extra), True

    def stmt_while(self, env, pad, indent, depth):
        counter = self.new_name(env, PLAIN_COUNTERS)
        if counter is None:
            return self.stmt_assign(env, pad, indent, depth)
        n = self.pick((3, 2, 4))
        outer = self.loops[-1].trips if self.loops else 1
        loop = _Loop("while", None, outer * n, {counter})
        form = self.weighted([(4, "cond"), (1, "plain")] +
                             ([] if self.in_display else [(1, "true")]))
        inner = dict(env)
        inner[counter] = _Var("int", n)
        lines = [f"{pad}{counter} = 0"]
        if form == "true":
            lines.append(f"{pad}while True:")
            lines.append(f"{pad}    {counter} += 1")
            lines.append(f"{pad}    if {counter} > {n}:")
            lines.append(f"{pad}        break")
            loop.continue_ok = True
        else:
            cond = f"{counter} < {n}"
            if form == "cond":
                extra = self.cond(inner, 1)
                cond = f"{cond} and {extra}" if self.chance(70) else f"{extra} and {cond}"
            lines.append(f"{pad}while {cond}:")
            loop.continue_ok = self.chance(50)
            if loop.continue_ok:
                lines.append(f"{pad}    {counter} += 1")
        loop.exit_envs.append(inner)
        body, end_env, prefix_env = self.loop_body(inner, indent, depth, loop)
        lines += body
        if not loop.continue_ok and end_env is not None:
            lines.append(f"{pad}    {counter} += 1")
        env_after = self._after_loop(env, loop, None, False, [(counter, _Var("int", n + 1))])
        return lines, env_after, True


class _OrAndGen(_Gen):
    """Also `or` and `and` as values, not only in tests: `(a or b)`, chains of three,
    operands that are 0.0 at some points (`max(a, 0.0)`, `int(a)`, `0.0`), so that
    either operand may be the value, and the default idiom `v = v or e` after a branch
    that may set `v` to 0.0."""

    def expr(self, env, depth):
        if depth > 0 and self.chance(12):
            return self.or_and(env, depth - 1)
        return super().expr(env, depth)

    def or_and(self, env, depth):
        operands = [self.falsy_at_times(env, depth) for _ in range(self.pick((2, 3)))]
        op = f" {self.pick(('or', 'and'))} "
        return f"({op.join(t for t, _ in operands)})", max(b for _, b in operands)

    def falsy_at_times(self, env, depth):
        a, bound = self.expr(env, depth)
        form = self.pick(("plain", "max", "min", "zero", "int"))
        if form == "zero":
            return "0.0", 0.0
        if form in ("max", "min"):
            return f"{form}({a}, 0.0)", bound
        return (f"int({a})", bound) if form == "int" else (a, bound)

    def statement(self, env, indent, depth):
        names = [n for n in self.assignable(env) if env[n].kind == "float"]
        if not names or not self.chance(10):
            return super().statement(env, indent, depth)
        pad, name = "    " * indent, self.pick(names)
        e, bound = self.assigned_value(env, 2)
        lines = [f"{pad}if {self.cond(env, 1)}:", f"{pad}    {name} = 0.0",
                 f"{pad}{name} = {name} or {e}"]
        return lines, self._set(env, name, max(bound, env[name].bound)), False


class _NestedGen(_Gen):
    """Programs whose body starts with a loop whose body starts with a loop (a `for` or a
    `while` each, sometimes in an `if`, sometimes with a third loop inside it) whose
    first statements update or swap the parameters: names both loops carry, changed by
    the inner loop before anything reads them, and mostly read right after it (#34: the
    outer loop's pullback read the value its iteration started with). The rest is drawn
    as usual (more loops, reads before the inner loop, jumps)."""

    def __init__(self, *args):
        super().__init__(*args)
        self.script = ["loop", "inner"] + (["inner"] if self.chance(25) else []) + [
            "update"] * self.pick((1, 2))
        self.changed = []

    def statement(self, env, indent, depth):
        if not self.script:
            return super().statement(env, indent, depth)
        step, pad = self.script.pop(0), "    " * indent
        if step == "update":
            return self.update(env, pad, indent, depth)
        if step == "loop":
            return self.loop(env, pad, indent, depth)
        if self.chance(20):
            lines = [f"{pad}if {self.cond(env, 1)}:"]
            self.script.insert(0, "loop")
            sub, then, _ = self.statement(env, indent + 1, depth + 1)
            lines, after, jumps = lines + sub, _join_envs([then, env]), True
        else:
            lines, after, jumps = self.loop(env, pad, indent, depth)
        names = [n for n in self.changed if n in self.assignable(after)
                 and after[n].kind == "float"]
        if names and self.chance(85):
            # a nonlinear read of a name the inner loop changed, right after it
            n = self.pick(names)
            other = self.pick(self.readable(after, "float"))
            form = self.pick(("square", "product", "tanh"))
            if form == "tanh":
                text, bound = f"math.tanh({n} * {other} + {_num(self.const())})", 1.0
            elif form == "square":
                text, bound = f"{n} * {n} * 0.5", after[n].bound ** 2 * 0.5
            else:
                text, bound = f"{n} * {other} + {n}", after[n].bound * (
                    after[other].bound + 1.0)
            if bound > CAP:
                text, bound = self.squash(text, bound, CAP)
            lines.append(f"{pad}{n} = {text}")
            after = self._set(after, n, bound)
        return lines, after, jumps

    def loop(self, env, pad, indent, depth):
        if self.pick(("for", "while")) == "for":
            return self.stmt_for(env, pad, indent, depth)
        return self.stmt_while(env, pad, indent, depth)

    def update(self, env, pad, indent, depth):
        floats = [n for n in self.assignable(env) if env[n].kind == "float"]
        if len(floats) >= 2 and self.chance(35):
            a = self.pick(floats)
            b = self.pick([n for n in floats if n != a])
            after = dict(env)
            self.record(after, a, env[b].copy())
            self.record(after, b, env[a].copy())
            self.changed += [a, b]
            return [f"{pad}{a}, {b} = {b}, {a}"], after, False
        lines, after, jumps = self.stmt_update(env, pad, indent, depth)
        self.changed += [n for n in floats if after.get(n) is not env[n]]
        return lines, after, jumps


def nested_loop_programs(names="plain", max_statements=12, max_params=3):
    """`programs` that start with nested loops changing the names the outer loop carries
    (see `_NestedGen`)."""
    return programs(names=names, max_statements=max_statements, max_params=max_params,
                    generator=_NestedGen)


# `continue` is fine in for loops; `while` loops set it per loop.
_Loop.continue_ok = True

# Statements s2sad documents as unsupported (UnsupportedSyntaxError at their line); drop
# one from here when s2sad starts supporting it.
UNSUPPORTED = (
    "{v} = sum({{w * 2.0 for w in ({v}, 1.0)}})",
    "fuzz_terms = (w * 2.0 for w in ({v}, 1.0))",
    "{v} = (lambda w: w * 2.0)({v})",
    "{v} = {{**{{'a': {v}}}}}['a']",
    "{v} = {{{v}, 1.0}}.pop()",
    "del {v}.real",
    "with open('x') as fh:\n    pass",
    "with open('x'):\n    pass",
    "class C:\n    pass",
    "def helper(*ws):\n    return ws",
    "import os",
    "{v} + 1.0",
)


@st.composite
def programs(draw, names="plain", max_statements=12, max_params=3, unsupported=False,
             allow_for_else=True, generator=None, max_helpers=2):
    """Hypothesis strategy of `Program`s (see the module docstring); `generator`, a
    subclass of `_Gen`, draws the function's body; at most `max_helpers` module-level
    helper functions."""
    if names == "mixed":
        names = draw(st.sampled_from(("plain", "tricky")))
    n_params = draw(st.integers(1, max_params))
    budget = draw(st.integers(min(3, max_statements), max_statements))
    gen = (generator or _Gen)(draw, names, budget, allow_for_else)
    if names == "tricky":
        params, pool = [], TRICKY_NAMES + PLAIN_PARAMS
        for _ in range(n_params):
            params.append(draw(st.sampled_from([n for n in pool if n not in params])))
        fname = draw(st.sampled_from([n for n in TRICKY_FUNCTIONS if n not in params]))
    else:
        params = list(PLAIN_PARAMS[:n_params])
        fname = "f"
    gen.reserved = {fname}
    env = {p: _Var("float", 2.0) for p in params}
    header = ["import math", ""]
    shadows = ()
    if names == "tricky":
        # global constants the function reads, and globals shadowing builtins it does not
        n_globals = draw(st.integers(0, 2))
        for _ in range(n_globals):
            g = draw(st.sampled_from([n for n in TRICKY_NAMES if n not in env
                                      and n != fname and n not in gen.reserved]))
            c = gen.const(-1.0, 1.0)
            header.append(f"{g} = {_num(c)}")
            env[g] = _Var("float", abs(c))
            gen.reserved.add(g)
        if draw(st.integers(0, 99)) >= 60:
            shadows = tuple(sorted(set(draw(st.lists(
                st.sampled_from([n for n in TRICKY_SHADOWS if n not in gen.reserved
                                 and n not in params and n != fname]), min_size=1,
                max_size=2)))))
            for g in shadows:
                header.append(f"{g} = 0.5")
                gen.reserved.add(g)
        if len(header) > 2:
            header.append("")
    # module-level helper functions f calls (their parameters see values in [-2, 2])
    for k in range(draw(st.integers(0, max_helpers))):
        hname = f"h{k + 1}" if names == "plain" else draw(st.sampled_from(
            [n for n in TRICKY_FUNCTIONS if n != fname and n not in gen.reserved
             and n not in params]))
        hparams = list(("a", "b")[:draw(st.integers(1, 2))])
        hgen = _Gen(draw, "plain", draw(st.integers(1, 3)), allow_for_else)
        hgen.helpers = list(gen.helpers)        # a helper may call the ones before it
        hgen.reserved = {hname} | gen.reserved
        hbody, hend, _ = hgen.block({a: _Var("float", 2.0) for a in hparams}, 1, 0)
        bound = 2.0
        if hend is not None:
            value, vb = hgen.bounded(hend, draw(st.integers(0, 2)), 2.0)
            hbody.append(f"    return {value}")
            bound = max(bound, vb)
        else:
            bound = 1e6     # its returns are unbounded as far as the caller knows
        header += [f"def {hname}({', '.join(hparams)}):"] + hbody + [""]
        gen.reserved.add(hname)
        gen.helpers.append((hname, len(hparams), bound))
    body, end_env, _ = gen.block(dict(env), 1, 0)
    if end_env is not None:
        value, _ = gen.expr(end_env, draw(st.integers(0, 3)))
        body.append(f"    return {value}")
    unsupported_line = None
    if unsupported:
        template = draw(st.sampled_from(UNSUPPORTED))
        stmt = template.format(v=params[0])
        at = draw(st.integers(0, len(body) - 1))
        indent = body[at][:len(body[at]) - len(body[at].lstrip())]
        if body[at].rstrip().endswith(":"):
            indent += "    "
            at += 1
        pieces = [indent + s for s in stmt.split("\n")]
        body[at:at] = pieces
    text = "\n".join(header + [f"def {fname}({', '.join(params)}):"] + body) + "\n"
    tree = ast.parse(text)          # normalise parentheses; validates the text
    source = ast.unparse(tree) + "\n"
    if unsupported:
        unsupported_line = _find_unsupported(source, fname)
    return Program(source, fname, tuple(params), unsupported_line, shadows)


def or_and_programs(names="plain", max_statements=12, max_params=3):
    """`programs` whose expressions also take `or` and `and` values (see `_OrAndGen`)."""
    return programs(names=names, max_statements=max_statements, max_params=max_params,
                    generator=_OrAndGen)


_UNSUPPORTED_NODES = (ast.SetComp, ast.GeneratorExp, ast.Lambda, ast.Dict, ast.Set,
                      ast.Delete, ast.With, ast.ClassDef, ast.Import)


def _find_unsupported(source, fname):
    fn = next(n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef)
              and n.name == fname)
    lines = []
    for node in ast.walk(fn):
        if isinstance(node, _UNSUPPORTED_NODES) or (
                isinstance(node, ast.FunctionDef) and node is not fn) or (
                isinstance(node, ast.Expr) and not isinstance(node.value, ast.Call)):
            lines.append(node.lineno)
    return min(lines) if lines else None
