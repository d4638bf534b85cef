"""Functions behind bugs found in review; tests/test_regressions.py keeps them fixed."""
import functools, math
import numpy as np

def g(x):
    return np.sin(x).sum()

def h(x):
    if x < 0:
        raise ValueError("negative")
    return x * x

class C:
    def __init__(self):
        self.k = 3.0
    def m(self, x):
        return self.k * x * x

def d(p):
    return p["a"] * 2.0 + p["b"]


def doubled(fn):
    @functools.wraps(fn)
    def wrapper(x):
        return 2 * fn(x)
    return wrapper


@doubled
def decorated(x):
    return x * x


def scale(x, w):
    return x * w


def bias_and_l2(b, X):
    return np.sum(X + b) + np.sum(b * b)


def scale_then_index(a, s):
    y = a * s
    return y[0] + s


def write_through_view(x):
    y = x.copy()
    y[:2] *= x[:2]
    return np.sum(y)


def sorted_top2(x):
    return np.sum(np.sort(x)[-2:])


def builtin_sum(xs):
    return sum(xs) * 2.0


def stencil(x):
    y = np.zeros(len(x))
    y[0] = x[0]
    for i in range(1, len(x)):
        y[i] = y[i - 1] * 0.5 + x[i]
    return np.sum(y * y)


def mixed(x, w):
    return np.sum(x * w)


def over_list(x):
    vals = [x, 2.0 * x]
    s = 0.0
    for v in vals:
        s = s + v * v
    return s

COEFFS2 = (1.0, 2.0)

def over_const(x):
    s = 0.0
    for c in COEFFS2:
        s = s * x + c
    return s

def unroll_changes(a, b):
    for v in (a, b):
        b = b * 2.0
        a = a + v
    return a * b

def reassign_target(x):
    for i in range(3):
        i = x
    return i


def branches_and_loops(x):
    out = x.copy()
    for i in range(1, len(x)):
        if x[i] > x[i - 1]:
            out[i] = out[i - 1] * x[i]
        else:
            out[i] = out[i - 1] + np.sin(x[i])
    return np.sum(out * out)


y = 2.0

def ans_after_loop(x):
    a = math.tanh(x)
    for i in range(2):
        a = a * 2.0
    return a

def neg_base(x):
    return (-1.0) ** 2 * x

def global_y(x):
    return x * y

def shadows(x, reversed=1.0):
    s = x
    for i in range(3):
        s = s * x
    return s * reversed


def zero_trip_then_read(x, y):
    y **= 2
    for j in [math.tanh(x + y), math.hypot(x, 1.0), int(y)]:
        if j > 0.5:
            return x
        k2 = 0
        while k2 > 2 and k2 < 3:
            acc = int(2.0 + math.cos(j * y))
            k2 += 1
    return y


def branch_bound_in_unrolled_loop(x, y):
    y = y + 0.25 * math.sin(y ** 3 * y)
    for j in (0.5 * (x + y), 2.0 * -1.5, math.sqrt(1.5 + math.sin(-1.75))):
        y = math.tanh(y * (x / (1.0 + x * x)) + -1.5)
        if math.hypot(x, 0.25) <= -2.0:
            y -= 0.25 * abs(x * 0.75)
            c = math.tanh(abs(math.log(0.25 + j * j)))
            u = c
    return x


# Found by tests/fuzz (adjoints of loop-carried names, zero-trip loops)
def read_then_overwritten_by_constant_in_loop(x):
    for i in range(1):
        t = x
        x = 2.0
    return t


def sum_then_overwritten_by_constant_in_loop(x):
    s = 0.0
    for i in range(2):
        s = s + x
        x = 2.0
    return s


def constant_in_inner_while(y, z):
    for i in range(3):
        while z >= y + 10.0:
            y = 2.0
        z = y * y
    return z


def swap_in_nested_loop(z):
    b = 1.75
    for j in range(2):
        for i in range(1):
            z, b = b, z
    return z


def return_in_nested_loop_after_constant(x, w):
    for j in range(2):
        for i in range(1):
            if x > 0.0:
                return w
            w = 2.0
    return x


def zero_trip_inner_loop_variable(x):
    for i in range(2):
        for j in range(i):
            x = x * 1.5
    if x > 0.0:
        x = x + 1.0
    else:
        j = 1
    return x


def loop_variable_kept_by_zero_trip_loop(x, n):
    j = 2
    for j in range(n):
        x = x * 1.5
    return x * j


def square(a):
    return a * a


def helper_of_a_constant_in_a_loop(x):
    for i in range(2):
        if x > 0.0:
            x = square(0.5)
        else:
            x = x * 3.0
    return x


def attribute_of_temporary(x):
    return np.sum((x * 2).T * x)      # `.T` of a temporary was taken for a global: no adjoint


def push_doubled(lst, v):
    lst.append(v * 2.0)


def calls_a_mutating_helper(x):
    lst = [x]
    push_doubled(lst, x)
    return lst[0] + lst[1]


def sort_head(a):
    a[:2].sort()


def calls_a_helper_that_sorts_a_slice(x):
    y = x * 2.0
    sort_head(y)
    return np.sum(y * x)


def set_first_of_copy(a, v):
    a = a.copy()
    a[0] = v
    return a


def calls_a_copying_helper(x):
    a = np.zeros(2)
    a = set_first_of_copy(a, x)
    return np.sum(a * a)


def early_return_beside_inner_loop(x, z):
    # Found by test_gradient_matches_finite_differences (a longer program) and minimized.
    # The branch with the `return` and the inner loop is never taken at the point, yet
    # d/dx is 0.0014530 where central differences give 0.0015404.
    for l in range(3):
        if z > 5.0:
            if z > 6.0:
                return x
            for i in range(4):
                x = math.sin(x)
        else:
            x = math.tanh(x * z + 0.5)
    return x


def inner_range_of_an_outer_counter(x, y):
    k = 0
    while k < 2:
        k += 1
        for l in range(k):
            x = 0.75 * x + y
    return x


def adds_into_a_number_parameter(a, b):
    b += a          # rebinds b (a float): nothing of the caller changes
    return a * b


def calls_a_helper_that_rebinds_a_number(x):
    return adds_into_a_number_parameter(x, adds_into_a_number_parameter(x, x))


def return_in_a_second_inner_loop(x, z):
    for j in range(3):
        for ii in range(1):
            if z == x:
                return 1.0
            x = x * z
        for l in range(3):
            return x
    return x



UNCONNECTED_OUTPUT_AFTER_LOOPS = """\
import math
y_2 = 0.25
result = 0.5

def value(_1, _s2s_zeros_like, log):
    _s2s_zeros_like, _1, log = (_1, log, _s2s_zeros_like)
    _s2s_zeros_like = math.radians(math.degrees(_s2s_zeros_like)) / (1.5 + math.tanh(-2.0))
    g = 0
    while True:
        g += 1
        if g > 2:
            break
        if _s2s_zeros_like > log and _s2s_zeros_like > _1:
            break
        x_bar = _1 - y_2
    for f_vjp in range(0, 3):
        t_bar = math.hypot(0.5, 0.5)
    else:
        _1 = t_bar + 2.0
    _1 //= 1.0
    return math.radians(math.degrees(t_bar))
"""


def polynomial(x, n):
    s = 0.0
    for k in range(n):
        s += (k + 1) * x ** k        # 1 + 2x + 3x^2 + ...
    return s


def zero_to_a_zero_power(x):
    n = int(x * 0.0)                 # found by the fuzzer: (x * 0.0) ** 0 at x == 0.3
    return (x * 0.0) ** n + x


def sum_of_powers(x, n):
    return np.sum(x ** n)


def power_of_arrays(x, y):
    return np.sum(x ** y)


def doubles_its_first(a, b):
    return a * 2.0


def calls_a_helper_with_an_unused_parameter(x, y):
    return doubles_its_first(x, y) + y


def loop_variable_rebinds_a_differentiated_name(x, y):
    b = y
    if x > 0.0:
        for b in range(3):      # found by the long fuzz profile: b is 2 after the loop
            pass
    return b * x


def parameter_changed_only_by_an_inner_loop(x, z):
    k = 0
    while True:                 # found by the long fuzz profile (minimized by hand)
        k += 1
        if k > 2:
            break
        kk = 0
        while kk < 2 and z > 10.0:
            z = z * x
            kk += 1
        x = math.tanh(x + math.atan(z))
    return x * z


def index_from_arithmetic(x):
    # forward mode writes u in place; its index `-1 - j` is a temporary of Wengert form
    # put back into the write (u is not differentiated)
    u = np.zeros(3)
    for i in range(2):
        for j in range(2):
            u[-1 - j] = np.tanh(x[0] * x[1] + j)
    return x[0] * x[1]             # (the fuzzer made such programs)
