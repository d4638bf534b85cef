"""Corpus of ordinary scalar Python functions (floats in, float out).

Each ``Case`` holds:

* ``f``        -- the function (defined at module level in this real .py file),
* ``points``   -- argument tuples at which ``f`` is smooth (no kink or branch
                  boundary within the finite-difference step),
* ``wrt``      -- what to differentiate: an int, a parameter name, or a tuple
                  of them (then the gradient is a tuple),
* ``analytic`` -- optional hand-derived gradient with the same calling
                  convention as ``f`` and the same result shape as
                  ``s2sad.grad(f, wrt)`` (scalar for a single wrt, tuple for a
                  tuple wrt),
* ``kwargs``   -- optional keyword arguments (never differentiated),
* ``rtol``/``atol`` -- tolerances for the comparison.

This module must not depend on s2sad.
"""

import math
from dataclasses import dataclass, field


@dataclass
class Case:
    f: object
    points: list
    wrt: object
    analytic: object = None
    kwargs: dict = field(default_factory=dict)
    rtol: float = 1e-6
    atol: float = 1e-8

    @property
    def name(self):
        return self.f.__name__


# ---------------------------------------------------------------------------
# Straight-line arithmetic
# ---------------------------------------------------------------------------

def add_mul(x, y):
    return x * y + x - y


def sub_div(x, y):
    return (x - y) / (x + y)


def power_ops(x, y):
    return x ** 3 + x ** y + 2.0 ** x


def power_ops_grad(x, y):
    return (3 * x ** 2 + y * x ** (y - 1) + 2.0 ** x * math.log(2.0),
            x ** y * math.log(x))


def unary_ops(x):
    return -x + (+x) * 2 - (-(x * x))


def floordiv_mod(x, y):
    # (x // y) * y + x % y == x, so the gradient is (1, 0).
    return (x // y) * y + x % y


def mod_scale(x, y):
    return (x % y) * x


def mod_scale_grad(x, y):
    return (x % y + x, -math.floor(x / y) * x)


def constants_arith(x):
    a = 2.5
    b = -0.75
    return a * x * x + b * x + 1.0 / 3.0 - 7


def nested_parens(x, y, z):
    return ((x + y) * (y - z)) / (1.0 + z * z) - x / (y * z)


def nested_parens_grad(x, y, z):
    d = 1.0 + z * z
    return ((y - z) / d - 1.0 / (y * z),
            ((y - z) + (x + y)) / d + x / (y * y * z),
            -(x + y) / d - (x + y) * (y - z) * 2 * z / d ** 2 + x / (y * z * z))


# ---------------------------------------------------------------------------
# math functions and builtins
# ---------------------------------------------------------------------------

def log_sin(x1, x2):
    return math.log(x1) + x1 * x2 - math.sin(x2)


def prod_log_sq(x1, x2):
    return x1 * x2 + math.log(x1 ** 2)


def exp_trig(x):
    return math.exp(x) * math.sin(x) + math.cos(x) * math.tan(x)


def exp_trig_grad(x):
    # cos(x) * tan(x) == sin(x)
    return math.exp(x) * (math.sin(x) + math.cos(x)) + math.cos(x)


def polar_mix(x, y):
    return math.sqrt(x * x + y * y) + math.atan2(y, x) + math.hypot(x, y)


def polar_mix_grad(x, y):
    r2 = x * x + y * y
    r = math.sqrt(r2)
    return (2 * x / r - y / r2, 2 * y / r + x / r2)


def special_sum(x):
    return math.tanh(x) + math.atan(x) + math.log1p(x) + math.expm1(x)


def special_sum_grad(x):
    return 1 - math.tanh(x) ** 2 + 1 / (1 + x * x) + 1 / (1 + x) + math.exp(x)


def math_pow_fn(x, y):
    return math.pow(x, y) + pow(y, 2.0)


def math_pow_fn_grad(x, y):
    return (y * x ** (y - 1), x ** y * math.log(x) + 2 * y)


def sigmoid(x):
    return 1.0 / (1.0 + math.exp(-x))


def sigmoid_grad(x):
    s = 1.0 / (1.0 + math.exp(-x))
    return s * (1 - s)


def gaussian_pdf(x, mu, sigma):
    z = (x - mu) / sigma
    return math.exp(-0.5 * z ** 2) / (sigma * math.sqrt(2 * math.pi))


def gaussian_pdf_grad(x, mu, sigma):
    p = gaussian_pdf(x, mu, sigma)
    return (-p * (x - mu) / sigma ** 2,
            p * (x - mu) / sigma ** 2,
            p * ((x - mu) ** 2 / sigma ** 3 - 1 / sigma))


def hyperbolic_mix(x):
    return math.sinh(x) * math.cosh(x) - math.asinh(x) + math.log10(x) + math.log2(x)


def hyperbolic_mix_grad(x):
    return (math.cosh(2 * x) - 1 / math.sqrt(x * x + 1)
            + 1 / (x * math.log(10)) + 1 / (x * math.log(2)))


def nested_calls(x):
    return math.exp(math.sin(math.cos(x)))


def nested_calls_grad(x):
    return math.exp(math.sin(math.cos(x))) * math.cos(math.cos(x)) * -math.sin(x)


def abs_minmax(x, y):
    return abs(x - y) + min(x, y) * max(x, y)


def abs_minmax_grad(x, y):
    s = 1.0 if x > y else -1.0
    return (s + y, -s + x)


def builtin_pow_float(x, y):
    return pow(x, y) + float(x) * 2


def builtin_pow_float_grad(x, y):
    return (y * x ** (y - 1) + 2, x ** y * math.log(x))


def int_round_consts(x):
    # int/round are piecewise constant: only the 3 * x term has a slope.
    return int(x) + round(x) + round(x, 2) + x * 3


def softmax2(x, y):
    m = max(x, y)
    ex = math.exp(x - m)
    ey = math.exp(y - m)
    return ex / (ex + ey)


def softmax2_grad(x, y):
    s = 1.0 / (1.0 + math.exp(y - x))
    return (s * (1 - s), -s * (1 - s))


def logsumexp3(a, b, c):
    m = max(max(a, b), c)
    return m + math.log(math.exp(a - m) + math.exp(b - m) + math.exp(c - m))


def logsumexp3_grad(a, b, c):
    z = math.exp(a) + math.exp(b) + math.exp(c)
    return (math.exp(a) / z, math.exp(b) / z, math.exp(c) / z)


def hypot_log(x, y):
    return math.log(math.hypot(x, y))


def hypot_log_grad(x, y):
    r2 = x * x + y * y
    return (x / r2, y / r2)


def trig_identity(x):
    # == 1 everywhere: the gradient is 0.
    return math.sin(x) ** 2 + math.cos(x) ** 2


def floor_frac(x):
    y = x * 10
    k = int(y)
    frac = y - k
    return frac * frac + math.floor(x)


def floor_frac_grad(x):
    y = x * 10
    return 2 * (y - int(y)) * 10


# ---------------------------------------------------------------------------
# Reassignment, shadowing, augmented assignment, unpacking
# ---------------------------------------------------------------------------

def reassign(x):
    y = x * x
    y = y + x
    y = math.sin(y)
    return y


def reassign_grad(x):
    return math.cos(x * x + x) * (2 * x + 1)


def shadowing(x, y):
    x = x * y
    y = x + y
    x = y * x
    return x


def shadowing_grad(x, y):
    # x_final = (x*y + y) * (x*y) = x^2 y^2 + x y^2
    return (2 * x * y * y + y * y, 2 * x * x * y + 2 * x * y)


def augassign(x, y):
    z = x
    z += y
    z -= 0.5 * x
    z *= y
    z /= x
    z **= 2
    return z


def augassign_grad(x, y):
    u = 0.5 * y + y * y / x
    return (2 * u * (-y * y / (x * x)), 2 * u * (0.5 + 2 * y / x))


def fib_like(x, y):
    a, b = x, y
    for i in range(5):
        a, b = b, a + b
    return a * b


def fib_like_grad(x, y):
    # a = 3x + 5y, b = 5x + 8y
    return (30 * x + 49 * y, 49 * x + 80 * y)


def multi_target(x):
    a = b = x * 2
    a = a + 1.0
    return a * b


def multi_target_grad(x):
    return 8 * x + 2


def swap_unpack(x, y):
    x, y = y, x
    return x - 2 * y


# ---------------------------------------------------------------------------
# Branches
# ---------------------------------------------------------------------------

def piecewise_if(x):
    if x > 1:
        return x * x
    elif x > 0:
        y = math.sin(x)
    else:
        y = -x ** 3
    return y


def piecewise_if_grad(x):
    if x > 1:
        return 2 * x
    if x > 0:
        return math.cos(x)
    return -3 * x * x


def nested_if(x, y):
    if x > 0:
        if y > 0:
            r = x * y
        else:
            r = x - y
    else:
        if y > x:
            r = y * y
        else:
            r = x
    return r * 2


def nested_if_grad(x, y):
    if x > 0:
        return (2 * y, 2 * x) if y > 0 else (2.0, -2.0)
    return (0.0, 4 * y) if y > x else (2.0, 0.0)


def cond_expr(x, y):
    z = x * y if x > y else x + y
    return z + (x if y > 0 else -x)


def cond_expr_grad(x, y):
    dz = (y, x) if x > y else (1.0, 1.0)
    dx = 1.0 if y > 0 else -1.0
    return (dz[0] + dx, dz[1])


def bool_ops(x, y):
    if (x > 0 and y > 0) or not (x < -1):
        r = x * y
    else:
        r = x + y
    return r


def chained_cmp(x):
    if 0 < x < 1:
        return x * x * (1 - x)
    return math.log(abs(x)) * x


def chained_cmp_grad(x):
    if 0 < x < 1:
        return 2 * x - 3 * x * x
    return math.log(abs(x)) + 1


def elif_spline(x):
    if x < -1.0:
        y = -x - 0.5
    elif x < 0.0:
        y = 0.5 * x * x
    elif x <= 1.0:
        y = 0.5 * x * x + x * x * x
    else:
        y = 2.5 * x - 1.0
    return y


def elif_spline_grad(x):
    if x < -1.0:
        return -1.0
    if x < 0.0:
        return x
    if x <= 1.0:
        return x + 3 * x * x
    return 2.5


def multiple_returns(x, y):
    if x > y:
        return x - y
    if x < 0:
        return x * y
    return y * y + x


def multiple_returns_grad(x, y):
    if x > y:
        return (1.0, -1.0)
    if x < 0:
        return (y, x)
    return (1.0, 2 * y)


def early_return_guard(x):
    if x <= 0:
        return 0.0
    return x * math.log(x)


def sinc(x):
    if abs(x) < 1e-8:
        return 1.0
    return math.sin(x) / x


def sinc_grad(x):
    return (x * math.cos(x) - math.sin(x)) / (x * x)


def relu_net(x, w1, w2):
    h = max(0.0, w1 * x)
    return w2 * h + min(h, 1.0)


def min_max_chain(x, y, z):
    return min(max(x, y), z) * max(min(x, z), y)


# ---------------------------------------------------------------------------
# for loops
# ---------------------------------------------------------------------------

def babylonian_sqrt(x):
    t = (1 + x) / 2
    for i in range(10):
        t = (t + x / t) / 2
    return t


def sqrt_grad(x):
    return 0.5 / math.sqrt(x)


def cube_loop(x):
    c = 1.0
    for i in range(3):
        c *= x
    return c


def cube_loop_grad(x):
    return 3 * x * x


def horner_const(x):
    r = 0.0
    for c in [2.0, -3.0, 0.5, 1.0]:
        r = r * x + c
    return r


def horner_const_grad(x):
    return 6 * x * x - 6 * x + 0.5


def horner_args(x, a0, a1, a2):
    r = 0.0
    for c in (a2, a1, a0):
        r = r * x + c
    return r


def horner_args_grad(x, a0, a1, a2):
    return (2 * a2 * x + a1, 1.0, x, x * x)


def loop_tuple_vars(x, y):
    s = 0.0
    for w in (x, y, 2.0):
        s = s + w * w * x
    return s


def loop_tuple_vars_grad(x, y):
    return (3 * x * x + y * y + 4.0, 2 * x * y)


def nested_loops(x):
    s = 0.0
    for i in range(3):
        for j in range(4):
            s += x ** i * (j + 1)
    return s


def nested_loops_grad(x):
    return 10.0 * (1 + 2 * x)


def loop_with_index(x):
    s = 0.0
    for i in range(1, 6):
        s += math.sin(i * x) / i
    return s


def loop_with_index_grad(x):
    return sum(math.cos(i * x) for i in range(1, 6))


def lotka_volterra(prey, pred, a, b):
    dt = 0.01
    x = prey
    y = pred
    for step in range(50):
        dx = a * x - b * x * y
        dy = -0.8 * y + 0.3 * x * y
        x = x + dt * dx
        y = y + dt * dy
    return x + 2.0 * y


def logistic_map(r, x0, n=12):
    x = x0
    for i in range(n):
        x = r * x * (1 - x)
    return x


def euler_decay(k, y0):
    dt = 0.01
    y = y0
    for i in range(100):
        y = y + dt * (-k * y)
    return y


def euler_decay_grad(k, y0):
    return (y0 * 100 * (1 - 0.01 * k) ** 99 * (-0.01), (1 - 0.01 * k) ** 100)


def gradient_descent(x0, lr):
    t = x0
    for i in range(20):
        t = t - lr * 2 * (t - 3.0)
    return t


def gradient_descent_grad(x0, lr):
    q = 1 - 2 * lr
    return ((q ** 20), (x0 - 3.0) * 20 * q ** 19 * -2)


def trapezoid_integral(a, n=50):
    h = 1.0 / n
    s = 0.5 * (1.0 + math.exp(-a))
    for i in range(1, n):
        t = i * h
        s += math.exp(-a * t * t)
    return s * h


def polar_to_cart(r, th):
    x = r * math.cos(th)
    y = r * math.sin(th)
    return x * y + x


def polar_to_cart_grad(r, th):
    c, s = math.cos(th), math.sin(th)
    return (2 * r * c * s + c, r * r * (c * c - s * s) - r * s)


def projectile_range(v0, angle, g=9.81):
    return v0 * v0 * math.sin(2 * angle) / g


def projectile_range_grad(v0, angle, g=9.81):
    return (2 * v0 * math.sin(2 * angle) / g, 2 * v0 * v0 * math.cos(2 * angle) / g)


def compound_interest(principal, rate, years=10):
    total = principal
    for year in range(years):
        total *= 1 + rate
    return total


def compound_interest_grad(principal, rate, years=10):
    return ((1 + rate) ** years, principal * years * (1 + rate) ** (years - 1))


# ---------------------------------------------------------------------------
# while loops, break, continue, returns in loops
# ---------------------------------------------------------------------------

def newton_sqrt(x):
    t = x
    while abs(t * t - x) > 1e-12 * x:
        t = 0.5 * (t + x / t)
    return t


def newton_cbrt(a):
    t = 1.0
    it = 0
    while it < 100:
        step = (t * t * t - a) / (3 * t * t)
        t = t - step
        it += 1
        if abs(step) < 1e-14 * abs(t):
            break
    return t


def cbrt_grad(a):
    return 1.0 / (3.0 * a ** (2.0 / 3.0))


def bisection_newton(x):
    lo = 0.0
    hi = max(1.0, x)
    while hi - lo > 1e-2:
        mid = 0.5 * (lo + hi)
        if mid * mid < x:
            lo = mid
        else:
            hi = mid
    t = 0.5 * (lo + hi)
    for i in range(8):
        t = t - (t * t - x) / (2 * t)
    return t


def log_range_reduction(x):
    n = 0
    while x > 2.0:
        x = x / 2
        n += 1
    return math.log(x) + n * math.log(2.0)


def log_range_reduction_grad(x):
    return 1.0 / x


def loop_break(x):
    s = 0.0
    for i in range(100):
        s += x / (i + 1)
        if s > 3:
            break
    return s


def loop_continue(x):
    s = 0.0
    for i in range(6):
        if i % 2 == 0:
            continue
        s += x ** i
    return s


def loop_continue_grad(x):
    return 1 + 3 * x ** 2 + 5 * x ** 4


def return_in_loop(x):
    for i in range(10):
        x = x * 1.5
        if x > 5:
            return x - i
    return -x


def while_counter(x):
    n = 0
    t = x
    while t < 100:
        t = t * t + 1
        n += 1
    return t / n


def while_true_break(x):
    t = 1.0
    while True:
        t_new = math.cos(t) * x
        if abs(t_new - t) < 1e-15:
            break
        t = t_new
    return t


def fixed_point_grad(x):
    # t = x cos(t)  =>  dt/dx = cos(t) / (1 + x sin(t))
    t = while_true_break(x)
    return math.cos(t) / (1 + x * math.sin(t))


def nested_while_for(x):
    total = 0.0
    k = 1
    while k < 4:
        for j in range(k):
            total += x ** k / (j + 1)
        k += 1
    return total


def nested_while_for_grad(x):
    # k=1: x; k=2: x^2 * 1.5; k=3: x^3 * (11/6)
    return 1 + 3 * x + 5.5 * x * x


# ---------------------------------------------------------------------------
# Constants and inputs that do not affect the output
# ---------------------------------------------------------------------------

def constant_fn(x):
    return 3.0


constant_fn.unconnected = ('x',)


def unused_input(x, y):
    return x * x + 1.0


unused_input.unconnected = ('y',)


def unused_input_grad(x, y):
    return (2 * x, 0.0)


def dead_code(x, y):
    z = y * 100
    w = x * 2
    z = z + w
    return w + 1


dead_code.unconnected = ('y',)


def dead_code_grad(x, y):
    return (2.0, 0.0)


def branch_only_input(x, y):
    # y only selects a branch: its gradient is 0.
    if y > 0:
        return x * 3.0
    return x * -1.0


branch_only_input.unconnected = ('y',)


def branch_only_input_grad(x, y):
    return (3.0 if y > 0 else -1.0, 0.0)


def atan2_quadrants(x, y):
    return math.atan2(y, x) * x


def atan2_quadrants_grad(x, y):
    r2 = x * x + y * y
    return (math.atan2(y, x) - x * y / r2, x * x / r2)


CORPUS = [
    # straight-line arithmetic
    Case(add_mul, [(1.5, -2.0), (0.3, 0.7), (-4.0, 2.5)], (0, 1),
         lambda x, y: (y + 1, x - 1)),
    Case(sub_div, [(1.5, 2.0), (0.3, 0.7), (-4.0, 2.5)], (0, 1),
         lambda x, y: (2 * y / (x + y) ** 2, -2 * x / (x + y) ** 2)),
    Case(power_ops, [(1.5, 2.0), (0.3, 0.7), (2.2, -1.3)], (0, 1), power_ops_grad),
    Case(unary_ops, [(1.5,), (-0.3,), (4.0,)], 0, lambda x: 1 + 2 * x),
    Case(floordiv_mod, [(5.3, 2.0), (-3.7, 1.5), (7.1, -2.5)], (0, 1),
         lambda x, y: (1.0, 0.0)),
    Case(mod_scale, [(5.3, 2.0), (-3.7, 1.5), (7.1, -2.5)], (0, 1), mod_scale_grad),
    Case(constants_arith, [(1.5,), (-0.3,), (4.0,)], (0,), lambda x: (5.0 * x - 0.75,)),
    Case(nested_parens, [(1.5, 2.0, 0.5), (0.3, 0.7, -1.2), (-2.0, 1.1, 3.0)],
         (0, 1, 2), nested_parens_grad),
    # math functions and builtins
    Case(log_sin, [(1.5, 2.0), (0.3, 0.7), (4.0, -2.5)], (0, 1),
         lambda x1, x2: (1 / x1 + x2, x1 - math.cos(x2))),
    Case(prod_log_sq, [(1.5, 2.0), (0.3, 0.7), (-4.0, -2.5)], ("x1", "x2"),
         lambda x1, x2: (x2 + 2 / x1, x1)),
    Case(exp_trig, [(0.5,), (-1.2,), (2.0,)], "x", exp_trig_grad),
    Case(polar_mix, [(1.0, 1.0), (-1.5, 0.5), (0.3, -2.0)], (0, 1), polar_mix_grad),
    Case(special_sum, [(0.5,), (-0.4,), (2.0,)], 0, special_sum_grad),
    Case(math_pow_fn, [(1.5, 2.0), (0.3, 0.7), (2.2, -1.3)], (0, 1), math_pow_fn_grad),
    Case(sigmoid, [(0.5,), (-3.0,), (2.0,)], 0, sigmoid_grad),
    Case(gaussian_pdf, [(0.5, 0.0, 1.0), (-1.0, 0.3, 2.0), (2.0, 1.5, 0.7)],
         ("x", "mu", "sigma"), gaussian_pdf_grad),
    Case(hyperbolic_mix, [(0.5,), (1.3,), (2.0,)], 0, hyperbolic_mix_grad),
    Case(nested_calls, [(0.5,), (-1.3,), (2.0,)], 0, nested_calls_grad),
    Case(abs_minmax, [(1.5, -2.0), (0.3, 0.7), (-4.0, 2.5)], (0, 1), abs_minmax_grad),
    Case(builtin_pow_float, [(1.5, 2.0), (0.3, 0.7), (2.2, -1.3)], (0, 1),
         builtin_pow_float_grad),
    Case(int_round_consts, [(1.23,), (2.71,), (-0.42,)], 0, lambda x: 3.0),
    Case(softmax2, [(1.5, -2.0), (0.3, 0.7), (-4.0, 2.5)], (0, 1), softmax2_grad),
    Case(logsumexp3, [(1.5, -2.0, 0.1), (0.3, 0.7, 0.5), (-4.0, 2.5, 1.0)], (0, 1, 2),
         logsumexp3_grad),
    Case(hypot_log, [(1.5, -2.0), (0.3, 0.7), (-4.0, 2.5)], (0, 1), hypot_log_grad),
    Case(trig_identity, [(0.5,), (-1.3,), (2.0,)], 0, lambda x: 0.0),
    Case(floor_frac, [(1.234,), (2.71,), (-0.43,)], 0, floor_frac_grad),
    Case(atan2_quadrants, [(1.0, 1.0), (-1.0, 0.5), (-0.5, -2.0)], (0, 1),
         atan2_quadrants_grad),
    # reassignment, shadowing, augmented assignment, unpacking
    Case(reassign, [(0.5,), (-1.3,), (2.0,)], 0, reassign_grad),
    Case(shadowing, [(1.5, -2.0), (0.3, 0.7), (-4.0, 2.5)], (0, 1), shadowing_grad),
    Case(augassign, [(1.5, -2.0), (0.3, 0.7), (-4.0, 2.5)], (0, 1), augassign_grad),
    Case(fib_like, [(1.5, -2.0), (0.3, 0.7), (-4.0, 2.5)], (0, 1), fib_like_grad),
    Case(multi_target, [(0.5,), (-1.3,), (2.0,)], 0, multi_target_grad),
    Case(swap_unpack, [(1.5, -2.0), (0.3, 0.7)], ("x", "y"), lambda x, y: (-2.0, 1.0)),
    # branches
    Case(piecewise_if, [(2.0,), (0.5,), (-1.2,)], 0, piecewise_if_grad),
    Case(nested_if, [(1.0, 2.0), (1.0, -2.0), (-1.0, 0.5), (-1.0, -2.0)], (0, 1),
         nested_if_grad),
    Case(cond_expr, [(2.0, 1.0), (0.5, 1.5), (1.0, -2.0)], (0, 1), cond_expr_grad),
    Case(bool_ops, [(1.0, 2.0), (-0.5, -2.0), (-2.0, 0.5), (-2.0, -3.0)], (0, 1),
         lambda x, y: (y, x) if (x > 0 and y > 0) or not (x < -1) else (1.0, 1.0)),
    Case(chained_cmp, [(0.3,), (2.5,), (-1.5,)], 0, chained_cmp_grad),
    Case(elif_spline, [(-2.0,), (-0.5,), (0.5,), (3.0,)], 0, elif_spline_grad),
    Case(multiple_returns, [(2.0, 1.0), (-1.0, 0.5), (0.5, 1.5)], (0, 1),
         multiple_returns_grad),
    Case(early_return_guard, [(0.5,), (2.0,), (-1.0,)], 0,
         lambda x: 0.0 if x <= 0 else math.log(x) + 1),
    Case(sinc, [(0.5,), (-1.3,), (2.0,)], 0, sinc_grad),
    Case(relu_net, [(1.5, 0.5, 2.0), (1.5, -0.5, 2.0), (0.4, 0.3, -1.0)], (0, 1, 2)),
    Case(min_max_chain, [(1.0, 2.0, 3.0), (3.0, 1.0, 2.0), (0.5, -1.0, -2.0)], (0, 1, 2)),
    # for loops
    Case(babylonian_sqrt, [(2.0,), (0.7,), (9.0,)], 0, sqrt_grad),
    Case(cube_loop, [(0.5,), (-1.3,), (2.0,)], 0, cube_loop_grad),
    Case(horner_const, [(0.5,), (-1.3,), (2.0,)], 0, horner_const_grad),
    Case(horner_args, [(0.5, 1.0, 2.0, 3.0), (-1.3, 0.2, -0.7, 1.1)], (0, 1, 2, 3),
         horner_args_grad),
    Case(loop_tuple_vars, [(1.5, -2.0), (0.3, 0.7)], (0, 1), loop_tuple_vars_grad),
    Case(nested_loops, [(0.5,), (-1.3,), (2.0,)], 0, nested_loops_grad),
    Case(loop_with_index, [(0.5,), (-1.3,), (2.0,)], 0, loop_with_index_grad),
    Case(lotka_volterra, [(1.0, 0.5, 1.1, 0.4), (2.0, 1.5, 0.7, 0.3)], (0, 1, 2, 3)),
    Case(logistic_map, [(2.5, 0.3), (3.2, 0.6), (1.5, 0.1)], ("r", "x0")),
    Case(logistic_map, [(2.5, 0.3), (3.2, 0.6)], (0, 1), kwargs={"n": 5}),
    Case(euler_decay, [(0.5, 1.0), (2.0, -3.0)], (0, 1), euler_decay_grad),
    Case(gradient_descent, [(0.5, 0.1), (7.0, 0.3)], (0, 1), gradient_descent_grad),
    Case(trapezoid_integral, [(0.5,), (2.0,)], 0),
    Case(polar_to_cart, [(1.5, 0.3), (0.7, 2.0)], (0, 1), polar_to_cart_grad),
    Case(projectile_range, [(10.0, 0.3), (25.0, 0.7)], (0, 1), projectile_range_grad),
    Case(projectile_range, [(10.0, 0.3), (25.0, 0.7)], (0, 1), projectile_range_grad,
         kwargs={"g": 1.62}),
    Case(compound_interest, [(100.0, 0.05), (2.5, 0.2)], (0, 1), compound_interest_grad),
    # while loops, break, continue, returns inside loops
    Case(newton_sqrt, [(2.0,), (0.7,), (9.0,)], 0, sqrt_grad),
    Case(newton_cbrt, [(2.0,), (0.7,), (27.5,)], 0, cbrt_grad),
    Case(bisection_newton, [(2.0,), (0.7,), (9.0,)], 0, sqrt_grad),
    Case(log_range_reduction, [(1.5,), (5.0,), (100.0,)], 0, log_range_reduction_grad),
    Case(loop_break, [(1.0,), (0.5,), (2.3,)], 0),
    Case(loop_continue, [(0.5,), (-1.3,), (2.0,)], 0, loop_continue_grad),
    Case(return_in_loop, [(1.0,), (0.01,), (-2.0,)], 0),
    Case(while_counter, [(1.5,), (3.0,), (0.5,)], 0),
    Case(while_true_break, [(0.5,), (0.8,)], 0, fixed_point_grad),
    Case(nested_while_for, [(0.5,), (-1.3,), (2.0,)], 0, nested_while_for_grad),
    # constants and inputs that do not affect the output
    Case(constant_fn, [(0.5,), (2.0,)], 0, lambda x: 0.0),
    Case(unused_input, [(1.5, -2.0), (0.3, 0.7)], (0, 1), unused_input_grad),
    Case(dead_code, [(1.5, -2.0), (0.3, 0.7)], (0, 1), dead_code_grad),
    Case(branch_only_input, [(1.5, -2.0), (0.3, 0.7)], (0, 1), branch_only_input_grad),
]
