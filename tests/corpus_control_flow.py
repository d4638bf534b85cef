"""Control-flow corner cases: breaks hidden in branches, returns inside nested loops,
for-else, while True, loop-carried swaps, names read both before and after loops.
Each is checked against finite differences in tests/test_control_flow.py."""
import itertools
import math

def conflict(x):
    t = x
    for i in range(3):
        t = math.sin(t)
    return t * t

def newton_sqrt(a):
    x = a
    while abs(x * x - a) > 1e-12 * a:
        x = (x + a / x) / 2
    return x

def ret_in_loop(x):
    s = 0.0
    for i in range(10):
        s = s + x * i
        if s > 5:
            return s * x
    return -s

def nested_break(x):
    s = x
    for i in range(6):
        if i > 1:
            s = s * 1.5
            if s > 4:
                break
            s = s + x
        s = s * x
    return s

def for_else(x):
    s = x
    for i in range(4):
        s = s * x
        if s > 100:
            break
    else:
        s = s + 1
    return s

def cont(x):
    s = 0.0
    for i in range(6):
        if i % 2 == 0:
            continue
        s += x ** i
    return s

def kw(x, *, scale=2.0, n=3):
    y = x
    for i in range(n):
        y = y * scale + x
    return y

def fib(x):
    a, b = x, 1.0
    for i in range(5):
        a, b = b, a + b
    return a * b

def ifexp(x):
    y = x * x if x > 0 else -x
    return y + (3.0 if x < 1 else x)

def defined_in_loop(x):
    for i in range(3):
        z = x * (i + 1)
    return z * z

def zero_trip(x, n=0):
    s = x
    for i in range(n):
        s = s * 2
    return s * s

def multi(x):
    a = b = x * 2
    a += 1
    return a * b

def unused(x, y):
    return x * 3.0

unused.unconnected = ('y',)   # its output does not depend on y: s2sad warns

def nested_while(x):
    n = 0
    s = x
    while n < 3:
        m = 0
        while m < n:
            s = s + math.sin(s) * x
            m += 1
        n += 1
    return s

def self_ref(x):
    t = x
    for i in range(3):
        t = t * t * 0.5 + x
    return t

def loop_temp_result(x):
    t = x
    for i in range(4):
        t = math.exp(t * 0.3) - x
    return t

def early(x):
    if x < 0:
        return 0.0
    if x > 10:
        return x
    return x * x

def ret_in_nested(x):
    for i in range(5):
        for j in range(5):
            if i * j * x > 3:
                return x * i + j
    return x

def chain_cmp(x):
    if 0 < x < 1:
        return x ** 3
    return x

def swap_loop(x, y):
    for i in range(3):
        x, y = y, x * y
    return x + y

def while_break(x):
    k = 0
    s = x
    while True:
        s = s * 1.1 + x
        k += 1
        if k >= 4:
            break
    return s

# Loops whose tape leaves out what the reversed loop can compute again: values the
# loop does not change (`-c`), and one operation of such values and taped ones.

def invariant_in_loop(x, c):
    s = x
    for i in range(5):
        k = -c
        s = s * k + x * s * 0.5
    return s

def invariant_rebound_in_branch(x, c):
    s = x
    for i in range(6):
        k = -c
        s = s * k + x * s
        if s > 0.2:
            c = c * c * 0.9
    return s

def rebound_before_use(x, c):
    s = x
    for i in range(5):
        if s > 1.0:
            c = c * s
        k = c * x
        s = s * k - 0.3 * s
    return s

def invariant_of_inner_loop(x, c):
    s = x
    for i in range(3):
        a = s * c
        for j in range(2):
            b = a * x
            s = s * b + 0.1
    return s

def recompute_after_break(x, c):
    s = x
    for i in range(8):
        k = c * s
        if k > 2.0:
            break
        m = -k
        s = s + m * x * s
    return s

def recompute_after_continue(x, c):
    s = x
    for i in range(6):
        k = c * s
        if i % 2 == 1:
            s = s * k
            continue
        m = k / x
        s = s + m * s
    return s

def invariant_in_while(x, c):
    s = x
    while s < 5.0:
        k = c * c
        s = s * k + x
    return s

def invariant_zero_trips(x, c, n=0):
    s = x * c
    for i in range(n):
        k = -c
        s = s * k
    return s

def loop_index_operand(x, c):
    s = x
    for i in range(1, 5):
        w = i * c
        s = s * w + x / i
    return s


# -- loops over itertools.count(): a while True that counts ---------------------------------
def count_until(x):
    for i in itertools.count():
        x = 0.5 * x + 1.0
        if x > 1.9:
            break
    return x * i


def zip_with_count(x, c):
    total = 0.0
    for v, k in zip([x, 2.0 * x, x * x, 3.0], itertools.count(1, 2)):
        if k > 5:
            continue
        total = total + c * v * k
    return total


def enumerate_count(x):
    for i, j in enumerate(itertools.count(start=3)):
        if i >= 2:
            return x * j
        x = x * x
