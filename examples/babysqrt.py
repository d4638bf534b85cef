"""The Babylonian square root and its derivative, computed by s2sad.

Run it: python examples/babysqrt.py
Show the generated derivative: s2sad show examples/babysqrt.py:babysqrt
"""
import math

import s2sad


def babysqrt(x):
    """sqrt(x) by Heron's (Babylonian) method, ten iterations from (1 + x) / 2."""
    t = (1 + x) / 2
    for i in range(10):
        t = (t + x / t) / 2
    return t


dbabysqrt = s2sad.grad(babysqrt)


def main():
    print(f"{'x':>6} {'babysqrt':>12} {'s2sad d/dx':>14} {'1/(2 sqrt x)':>14} {'error':>9}")
    worst = 0.0
    for x in (0.25, 0.5, 1.0, 2.0, 4.0, 9.0, 16.0):
        exact = 1 / (2 * math.sqrt(x))
        d = dbabysqrt(x)
        worst = max(worst, abs(d - exact))
        print(f"{x:6.2f} {babysqrt(x):12.8f} {d:14.10f} {exact:14.10f} {abs(d - exact):9.1e}")
    assert worst < 1e-9, worst
    print("\nGenerated derivative source:\n")
    print(s2sad.source(babysqrt))


if __name__ == "__main__":
    main()
