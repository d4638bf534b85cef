"""How s2sad's transform time grows with the size of the function (issue #19).

Run from the repository root:

    python bench/transform_time.py                  # N = 50 ... 800, about a minute
    python bench/transform_time.py --sizes 50,100,200 --modes grad
    python bench/transform_time.py --dump DIR       # also write the generated sources

It generates functions of N statements (scalar arithmetic with `math` functions, NumPy
array expressions, a branch every 20 statements; the `loop` shape also has a loop over a
fifth of its statements), writes them to a temporary module so that s2sad can read
their source, and times the transform of each: what the driver does on the first call
of a fresh `grad`, `vjp` or `jvp` (s2sad.driver.build, which compiles without
the cache: the passes, printing and compiling the generated source), minimum
of `--repeat` runs. The growth exponent of a row is the slope of log(time) against
log(N), from the previous size; that of a column, fitted over all sizes. 1 is linear.
"""

import argparse
import importlib.util
import math
import os
import random
import sys
import tempfile
import time

import numpy as np

BENCH = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(BENCH))  # the repository's s2sad first
from s2sad import cache, driver  # noqa: E402
from s2sad.compilation import arg_types_of, patterns_of  # noqa: E402
from s2sad.options import Options, Variant  # noqa: E402

SIZES = (50, 100, 200, 400, 800)
SHAPES = ("straight", "loop")
MODES = ("grad", "vjp", "jvp")
WRT = (0, 1)     # x and a
ARGS = (0.3, np.linspace(0.1, 0.9, 5), np.linspace(-0.5, 0.5, 5))

SCALAR = [
    "{s} = math.sin({p}) * {q}",
    "{s} = 0.5 * {p} + 0.25 * {q}",
    "{s} = math.tanh({p} - {q})",
    "{s} = math.exp(-{p} * {p}) + {q}",
    "{s} = math.sqrt(1.0 + {p} * {p}) * 0.5",
    "{s} = {p} * {q} - math.cos({q})",
    "{s} = math.log(1.0 + {p} * {p}) / (1.0 + {q} * {q})",
]
ARRAY = [
    "{v} = np.tanh({u}) * {p} + {w}",
    "{v} = 0.5 * ({u} * {w}) - 0.25 * {u}",
    "{v} = np.sin({u} + b) * {p}",
    "{v} = np.exp(-{u} * {u}) + {w} / (1.0 + {p} * {p})",
]
REDUCE = [
    "{s} = np.sum({u} * {w}) * 0.1",
    "{s} = np.mean(np.cos({u})) + {p}",
    "{s} = np.dot({u}, b) * 0.2",
]


class _Generator:
    """A function body, statement by statement, over scalars `s0, s1, ...` and arrays
    `v0, v1, ...` that each read earlier ones (mostly recent ones)."""

    def __init__(self, seed):
        self.rng = random.Random(seed)
        self.scalars, self.arrays = ["x"], ["a"]
        self.count = 0

    def pick(self, names):
        return names[-1 - min(int(self.rng.expovariate(0.3)), len(names) - 1)]

    def statement(self, indent):
        r = self.rng.random()
        names = {"p": self.pick(self.scalars), "q": self.pick(self.scalars),
                 "u": self.pick(self.arrays), "w": self.pick(self.arrays)}
        self.count += 1
        if r < 0.45:
            template, out = self.rng.choice(SCALAR), self.scalars
        elif r < 0.8:
            template, out = self.rng.choice(ARRAY), self.arrays
        else:
            template, out = self.rng.choice(REDUCE), self.scalars
        target = f"{'s' if out is self.scalars else 'v'}{self.count}"
        line = " " * indent + template.format(s=target, v=target, **names)
        out.append(target)
        return [line]

    def branch(self, indent):
        """An if/else that assigns one scalar and one array on both sides (4 statements)."""
        p, u = self.pick(self.scalars), self.pick(self.arrays)
        self.count += 1
        s, v = f"s{self.count}", f"v{self.count}"
        pad = " " * indent
        lines = [f"{pad}if {p} > 0.0:",
                 f"{pad}    {s} = math.sin({p}) * 0.5",
                 f"{pad}    {v} = {u} * {s}",
                 f"{pad}else:",
                 f"{pad}    {s} = {p} * {p}",
                 f"{pad}    {v} = np.cos({u}) + {s}"]
        self.scalars.append(s)
        self.arrays.append(v)
        return lines, 4

    def loop(self, n):
        """A loop of 5 iterations whose body has `n` statements and carries a scalar
        and an array from one iteration to the next."""
        scalars, arrays = list(self.scalars), list(self.arrays)
        p, u = self.pick(self.scalars), self.pick(self.arrays)
        lines = [f"    t = {p}", f"    m = {u}", "    for i in range(5):"]
        self.scalars.append("t")
        self.arrays.append("m")
        done = 2
        while done < n - 2:
            lines += self.statement(8)
            done += 1
        last_s, last_v = self.pick(self.scalars), self.pick(self.arrays)
        lines += [f"        t = 0.5 * t + 0.1 * math.sin({last_s})",
                  f"        m = 0.5 * m + 0.1 * np.tanh({last_v})"]
        # what the body defined is not read after the loop: only what it carries
        self.scalars, self.arrays = scalars + ["t"], arrays + ["m"]
        return lines, done + 2


def function_source(name, n, shape, seed=0):
    """The source of a function `name(x, a, b)` of about `n` statements."""
    g = _Generator(seed)
    lines = [f"def {name}(x, a, b):"]
    loop_at = n * 2 // 5 if shape == "loop" else -1
    done = 0
    while done < n - 1:
        if done >= loop_at >= 0:
            more, k = g.loop(n // 5)
            loop_at = -1
        elif done % 20 == 19:
            more, k = g.branch(4)
        else:
            more, k = g.statement(4), 1
        lines += more
        done += k
    lines.append(f"    return {g.scalars[-1]} + np.sum({g.arrays[-1]}) + "
                 f"{g.scalars[-2]} * {g.scalars[-3]}")
    return "\n".join(lines) + "\n"


def load(sources, directory):
    """The functions of `sources` ({name: source}), from one module in `directory`."""
    path = os.path.join(directory, "transform_time_functions.py")
    with open(path, "w") as f:
        f.write("import math\n\nimport numpy as np\n\n\n" + "\n\n".join(sources.values()))
    spec = importlib.util.spec_from_file_location("transform_time_functions", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return {name: getattr(module, name) for name in sources}


def transform(fn, mode):
    """The compiled derivative `mode` of `fn` as the API's first call makes it."""
    arg_types = arg_types_of(fn, ARGS)
    if mode == "grad":
        return driver.build(fn, WRT, arg_types, Options(Variant.GRAD, release=True,
                                                        patterns=patterns_of(fn, ARGS)))
    if mode == "vjp":
        return driver.build(fn, WRT, arg_types)
    return driver.build(fn, WRT, arg_types, Options(Variant.JVP))


def seconds(fn, mode, repeat, clock=time.perf_counter):
    best = math.inf
    for _ in range(repeat):
        cache.clear()   # the source is read and parsed again too
        t0 = clock()
        transform(fn, mode)
        best = min(best, clock() - t0)
    return best


def exponent(sizes, times):
    """The least-squares slope of log(time) against log(N)."""
    xs, ys = np.log(sizes), np.log(times)
    return float(np.polyfit(xs, ys, 1)[0])


def check(fn):
    """The generated derivatives run and agree (the gradient's `x` component against
    the jvp along `x`)."""
    import s2sad
    gx, ga = s2sad.grad(fn, wrt=WRT)(*ARGS)
    _, dx = s2sad.jvp(fn, ARGS, (1.0, np.zeros(5), None))
    assert abs(gx - dx) <= 1e-9 * max(1.0, abs(gx)), (fn.__name__, gx, dx)
    assert np.all(np.isfinite(ga)), fn.__name__


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument("--shapes", default=",".join(SHAPES))
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--repeat", type=int, default=3,
                        help="runs per timing, the minimum is kept (one above 400 "
                             "statements)")
    parser.add_argument("--cpu-time", action="store_true",
                        help="time in process CPU time, steadier on a busy machine")
    parser.add_argument("--dump", metavar="DIR",
                        help="write each generated derivative's source to DIR")
    parser.add_argument("--check", action="store_true",
                        help="also run each gradient and compare it with jvp")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    shapes, modes = args.shapes.split(","), args.modes.split(",")
    clock = time.process_time if args.cpu_time else time.perf_counter

    with tempfile.TemporaryDirectory() as tmp:
        names = {(shape, n): f"{shape}_{n}" for shape in shapes for n in sizes}
        fns = load({name: function_source(name, n, shape)
                    for (shape, n), name in names.items()}, tmp)
        print(f"transform time, ms ({'CPU' if args.cpu_time else 'wall'} time, minimum of "
              f"{args.repeat}, of 1 above 400 statements; growth exponent from the previous "
              "size)")
        header = ["shape", "N"] + [f"{m} ms" for m in modes] + [f"{m} exp" for m in modes]
        rows, table = [], {}
        for shape in shapes:
            for k, n in enumerate(sizes):
                fn = fns[names[shape, n]]
                if args.check:
                    check(fn)
                row = [shape, str(n)]
                for mode in modes:
                    repeat = args.repeat if n <= 400 else 1
                    table[shape, n, mode] = seconds(fn, mode, repeat, clock)
                    row.append(f"{table[shape, n, mode] * 1e3:.0f}")
                    if args.dump:
                        os.makedirs(args.dump, exist_ok=True)
                        with open(os.path.join(args.dump, f"{shape}_{n}_{mode}.py"),
                                  "w") as f:
                            f.write(transform(fn, mode).source)
                for mode in modes:
                    row.append("-" if k == 0 else "{:.2f}".format(exponent(
                        sizes[k - 1:k + 1], [table[shape, m, mode] for m in sizes[k - 1:k + 1]])))
                rows.append(row)
                print_row(row, header, first=not rows[:-1])
            if len(sizes) > 1:
                fit = [exponent(sizes, [table[shape, n, m] for n in sizes]) for m in modes]
                print_row([shape, "fit", *["" for _ in modes], *[f"{e:.2f}" for e in fit]],
                          header)


def print_row(row, header, first=False):
    widths = [max(8, len(h)) for h in header]
    if first:
        print("| " + " | ".join(h.ljust(w) if i == 0 else h.rjust(w)
                                for i, (h, w) in enumerate(zip(header, widths))) + " |")
        print("|" + "|".join("-" * (w + 1) + (":" if i else "-")
                             for i, w in enumerate(widths)) + "|")
    print("| " + " | ".join(c.ljust(w) if i == 0 else c.rjust(w)
                            for i, (c, w) in enumerate(zip(row, widths))) + " |", flush=True)


if __name__ == "__main__":
    main()
