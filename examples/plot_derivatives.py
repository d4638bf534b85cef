"""Plot the Babylonian square root, its derivative computed by s2sad, the analytic
derivative 1 / (2 sqrt x), and the absolute error of s2sad's derivative, over (0, 2].

Run it: python examples/plot_derivatives.py [--out babysqrt.png]

The picture needs matplotlib (pip install matplotlib). Without it, the script prints a
table of the same numbers and says how to get the picture.

Below about x = 1e-5, ten Heron steps from (1 + x) / 2 have not converged yet, so
babysqrt is not sqrt there and its derivative is not 1 / (2 sqrt x): s2sad gives the
exact derivative of the ten steps the code takes. Elsewhere the two agree to rounding.
"""
import argparse
import importlib
import math
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import s2sad  # noqa: E402
from babysqrt import babysqrt  # noqa: E402

dbabysqrt = s2sad.grad(babysqrt)

TABLE_POINTS = (1e-8, 1e-6, 1e-4, 0.01, 0.25, 0.5, 1.0, 1.5, 2.0)


def analytic(x):
    """d sqrt(x) / dx."""
    return 1 / (2 * math.sqrt(x))


def samples(n):
    """n points spread over (0, 2], denser near 0 where the curves bend."""
    return [2 * ((k + 1) / n) ** 4 for k in range(n)]


def table(xs):
    lines = [f"{'x':>8} {'babysqrt':>12} {'s2sad d/dx':>14} {'1/(2 sqrt x)':>14} "
             f"{'abs error':>10}"]
    for x in xs:
        d, exact = dbabysqrt(x), analytic(x)
        lines.append(f"{x:8.2g} {babysqrt(x):12.8f} {d:14.8f} {exact:14.8f} "
                     f"{abs(d - exact):10.1e}")
    return "\n".join(lines)


def _pyplot():
    """matplotlib.pyplot on the Agg backend (no display needed), or None."""
    try:
        # imported by name, so that the example also runs (printing a table) where
        # matplotlib is not installed
        matplotlib = importlib.import_module("matplotlib")
    except ImportError:
        return None
    matplotlib.use("Agg")
    return importlib.import_module("matplotlib.pyplot")


def plot(plt, out):
    xs = samples(400)
    ys = [babysqrt(x) for x in xs]
    ds = [dbabysqrt(x) for x in xs]
    exact = [analytic(x) for x in xs]
    errors = [max(abs(d - e), 1e-17) for d, e in zip(ds, exact)]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(7, 8),
                                      gridspec_kw={"height_ratios": [3, 2]})
    top.plot(xs, ys, label="babysqrt(x)")
    top.plot(xs, [math.sqrt(x) for x in xs], ":", label="sqrt(x)")
    top.plot(xs, ds, label="s2sad.grad(babysqrt)(x)")
    top.plot(xs, exact, "--", label="1 / (2 sqrt x)")
    top.set_xlim(0, 2)
    top.set_ylim(0, 3)
    top.set_xlabel("x")
    top.set_title("The Babylonian square root and its derivative")
    top.legend()
    bottom.loglog(xs, errors, color="tab:red")
    bottom.set_xlabel("x (log scale)")
    bottom.set_ylabel("|s2sad - 1 / (2 sqrt x)|")
    bottom.set_title("Absolute error of the derivative: large only where ten steps "
                     "do not converge", fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="where to save the PNG (default: a new temporary "
                                      "directory)")
    args = parser.parse_args(argv)
    plt = _pyplot()
    if plt is None:
        print(table(TABLE_POINTS))
        print("\nmatplotlib is not installed, so there is no plot; "
              "pip install matplotlib to get one.")
        return 0
    out = args.out or os.path.join(tempfile.mkdtemp(prefix="s2sad-"), "babysqrt.png")
    plot(plt, out)
    print(table(TABLE_POINTS))
    print(f"\nsaved the plot to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
