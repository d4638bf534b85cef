"""Memory against steps: the gradient of a time-stepping loop, plain and checkpointed.

Each step of a reaction-diffusion model computes several arrays of the state's size.
The plain gradient keeps, for every step, what the step's pullback reads; wrapping the
step in `s2sad.checkpoint` keeps only the step's arguments (the state), and the pullback
computes the step again when it reaches it (about one more forward pass). Looping over
`s2sad.checkpointed(range(steps), snapshots=k)` keeps at most k states whatever the
number of steps, and computes the others again on the binomial (revolve) schedule. The
three gradients are the same to rounding.

Run it: python examples/checkpointing.py [--out memory.png]

It prints the peak memory of one gradient call (tracemalloc) for each number of steps.
The picture needs matplotlib (pip install matplotlib); without it, the table is all.
"""
import argparse
import time
import tracemalloc

import numpy as np

import s2sad

POINTS = 20_000


def step(u, kappa):
    lap = np.roll(u, 1) - 2.0 * u + np.roll(u, -1)
    return u + kappa * np.tanh(lap) * np.exp(-u * u)


checkpointed_step = s2sad.checkpoint(step)


def plain(u0, kappa, steps):
    u = u0
    for i in range(steps):
        u = step(u, kappa)
    return np.sum(u * u)


def checkpointed(u0, kappa, steps):
    u = u0
    for i in range(steps):
        u = checkpointed_step(u, kappa)
    return np.sum(u * u)


SNAPSHOTS = 8


def checkpointed_loop(u0, kappa, steps):
    u = u0
    for i in s2sad.checkpointed(range(steps), snapshots=SNAPSHOTS):
        # (the step written out: the gradient's adjoint of one step then releases its
        # temporaries as it goes; a call of `step` would keep them until it returns)
        lap = np.roll(u, 1) - 2.0 * u + np.roll(u, -1)
        u = u + kappa * np.tanh(lap) * np.exp(-u * u)
    return np.sum(u * u)


def measure(f, u0, steps):
    """(peak MB, seconds) of one call of f's gradient, after a call that compiles it."""
    g = s2sad.grad(f, wrt=(0, 1))
    g(u0, 0.1, steps)
    start = time.perf_counter()
    g(u0, 0.1, steps)
    seconds = time.perf_counter() - start
    tracemalloc.start()
    result = g(u0, 0.1, steps)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / 1e6, seconds, result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="write a plot of memory against steps (matplotlib)")
    args = parser.parse_args()
    u0 = np.sin(np.linspace(0.0, 2 * np.pi, POINTS))
    state_mb = u0.nbytes / 1e6
    print(f"state: {POINTS} points, {state_mb:.2f} MB")
    print(f"{'steps':>6} {'plain MB':>9} {'checkpoint MB':>14} {'revolve MB':>11} "
          f"{'plain s':>8} {'checkpoint s':>13} {'revolve s':>10}")
    rows = []
    for steps in (25, 50, 100, 200):
        mb_plain, s_plain, g_plain = measure(plain, u0, steps)
        mb_ck, s_ck, g_ck = measure(checkpointed, u0, steps)
        mb_rv, s_rv, g_rv = measure(checkpointed_loop, u0, steps)
        for g in (g_ck, g_rv):
            np.testing.assert_allclose(g[0], g_plain[0], rtol=1e-10, atol=1e-12)
            assert abs(g[1] - g_plain[1]) <= 1e-10 * abs(g_plain[1])
        rows.append((steps, mb_plain, mb_ck, mb_rv))
        print(f"{steps:>6} {mb_plain:>9.1f} {mb_ck:>14.1f} {mb_rv:>11.1f} {s_plain:>8.3f} "
              f"{s_ck:>13.3f} {s_rv:>10.3f}")
    # the plain gradient keeps several states a step, the checkpointed step about one,
    # the checkpointed loop none: at most SNAPSHOTS states and a few arrays of one step
    per_step = [(rows[-1][c] - rows[0][c]) / (rows[-1][0] - rows[0][0]) / state_mb
                for c in (1, 2, 3)]
    print("states kept per step: plain {:.1f}, checkpoint {:.1f}, revolve {:.2f}".format(
        *per_step))
    print(f"revolve's peak: {max(r[3] for r in rows) / state_mb:.1f} states "
          f"({SNAPSHOTS} snapshots)")
    assert per_step[1] < 0.5 * per_step[0]
    assert per_step[2] < 0.05 * per_step[0]
    assert max(r[3] for r in rows) / state_mb < SNAPSHOTS + 10   # (and one step's adjoint)
    if args.out:
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            print("the picture needs matplotlib: pip install matplotlib")
            return
        fig, ax = plt.subplots(figsize=(6, 3.6))
        steps = [r[0] for r in rows]
        ax.plot(steps, [r[1] for r in rows], "o-", label="plain gradient")
        ax.plot(steps, [r[2] for r in rows], "s-", label="step in s2sad.checkpoint")
        ax.plot(steps, [r[3] for r in rows], "^-",
                label=f"loop over s2sad.checkpointed(..., snapshots={SNAPSHOTS})")
        ax.set_xlabel("time steps")
        ax.set_ylabel("peak memory of one gradient (MB)")
        ax.set_title(f"reaction-diffusion, {POINTS} points ({state_mb:.2f} MB a state)")
        ax.legend()
        ax.grid(alpha=0.3)
        fig.tight_layout()
        fig.savefig(args.out)
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
