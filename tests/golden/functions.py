"""Representative functions whose generated derivative source is pinned in *.txt."""
import math
from math import cos, exp, log, sin


def straight_line(x1, x2):
    return math.log(x1) + x1 * x2 - math.sin(x2)


def fan_out(x):
    a = sin(x)
    b = a * a
    c = a * x
    return b + c + exp(a)


def if_else(x, y):
    if x > y:
        z = x * y
    else:
        z = x / y
    return z * z


def for_loop(x):
    t = (1 + x) / 2
    for i in range(10):
        t = (t + x / t) / 2
    return t


def accumulate(x, n=5):
    s = 0.0
    for i in range(n):
        s += x ** 2 * i
    return s


def nested_for(x):
    s = 0.0
    for i in range(3):
        p = 1.0
        for j in range(i + 1):
            p = p * x
        s = s + p
    return s


def while_loop(x):
    n = 0
    while x > 1e-3:
        x = x * 0.5
        n += 1
    return x * n


def break_loop(x):
    s = x
    for i in range(100):
        s = s * cos(s)
        if abs(s) < 1e-3:
            break
    return s


def early_return(x):
    if x < 0:
        return 0.0
    y = log(1 + x)
    if y > 1:
        return y * y
    return y


def lotka_volterra(a, b, c, d):
    u, v = 1.0, 1.0
    h = 0.01
    for step in range(1000):
        du = a * u - b * u * v
        dv = -c * v + d * u * v
        u = u + h * du
        v = v + h * dv
    return u


def comprehension(x):
    return sum([sin(x * k) / k for k in range(1, 6) if k != 3])


def lambda_loop(x):
    step = lambda s: s - 0.1 * (s * s - x)
    s = x
    for i in range(5):
        s = step(s)
    return s


def nested_closure(x, y):
    def spring(t):
        return 0.5 * y * (t - x) ** 2
    return spring(x * 2.0) + spring(y)


def loop_invariant(x, c):
    # the first loop does not change c: its tape holds s, not -c; the second
    # may change c before computing -c, which is taped
    s = x
    for i in range(4):
        s = s * -c + x * s
    for i in range(4):
        if s > 1.0:
            c = c * s
        s = s * -c + x
    return s


def projectile(v0, angle, drag=0.05, dt=0.01):
    # the range of a shot with air drag: grad computes no x (only the output reads
    # it), and starts from the negated adjoints of the drag terms
    vx = v0 * math.cos(angle)
    vy = v0 * math.sin(angle)
    x = 0.0
    for i in range(100):
        speed = math.sqrt(vx * vx + vy * vy)
        vx = vx - dt * drag * speed * vx
        vy = vy - dt * (9.81 + drag * speed * vy)
        x = x + dt * vx
    return x
