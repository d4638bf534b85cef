"""Numerical check of every scalar (operator / math / builtin) rule in the registry.

For each primitive there is a tiny function in this module that applies it,
and sample points inside the primitive's domain.  ``s2sad.grad`` of that
function is compared, for every differentiable argument, with central finite
differences (tests/oracle.py).  For piecewise-constant primitives (floor, int,
round, //, ...) the gradient must be exactly 0.0.

Checks for primitives that are not (yet) in ``registry.RULES`` are skipped, and
``test_every_registered_scalar_rule_has_a_check`` fails when a math / operator /
builtin primitive is registered without a check here.
"""

import builtins
import inspect
import math
import operator
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from oracle import assert_close, fd_partial  # noqa: E402
from warned import allowing_unconnected  # noqa: E402

import s2sad  # noqa: E402
from s2sad.rules import registry  # noqa: E402

RTOL = 1e-6
ATOL = 1e-8


# ---------------------------------------------------------------------------
# Python operators (keyed by the operator-module functions)
# ---------------------------------------------------------------------------

def _add(x, y):
    return x + y


def _sub(x, y):
    return x - y


def _mul(x, y):
    return x * y


def _truediv(x, y):
    return x / y


def _floordiv(x, y):
    return x // y


def _mod(x, y):
    return x % y


def _pow(x, y):
    return x ** y


def _pow_int_exponent(x, n):
    return x ** n


def _pow_const_exponent(x):
    return x ** 3


def _pow_const_base(y):
    return 2.5 ** y


def _neg(x):
    return -x


def _pos(x):
    return +x


def _operator_abs(x):
    return operator.abs(x)


def _iadd(x, y):
    x += y
    return x


def _isub(x, y):
    x -= y
    return x


def _imul(x, y):
    x *= y
    return x


def _itruediv(x, y):
    x /= y
    return x


def _ifloordiv(x, y):
    x //= y
    return x


def _imod(x, y):
    x %= y
    return x


def _ipow(x, y):
    x **= y
    return x


# Comparisons / boolean ops: zero derivative.  The result is added to a
# differentiable expression so that the rule is exercised on active inputs.
def _lt(x, y):
    return 2.0 * x + 3.0 * y + (x < y)


def _le(x, y):
    return 2.0 * x + 3.0 * y + (x <= y)


def _gt(x, y):
    return 2.0 * x + 3.0 * y + (x > y)


def _ge(x, y):
    return 2.0 * x + 3.0 * y + (x >= y)


def _eq(x, y):
    return 2.0 * x + 3.0 * y + (x == y)


def _ne(x, y):
    return 2.0 * x + 3.0 * y + (x != y)


def _not(x):
    return 2.0 * x + (not x)


def _truth(x):
    return 2.0 * x + operator.truth(x)


# Bitwise operators act on ints: piecewise constant, zero derivative.
def _and(x, y):
    return 0.5 * x + 0.25 * y + (int(x) & int(y))


def _or(x, y):
    return 0.5 * x + 0.25 * y + (int(x) | int(y))


def _xor(x, y):
    return 0.5 * x + 0.25 * y + (int(x) ^ int(y))


def _lshift(x, y):
    return 0.5 * x + 0.25 * y + (int(x) << int(y))


def _rshift(x, y):
    return 0.5 * x + 0.25 * y + (int(x) >> int(y))


def _invert(x):
    return 0.5 * x + ~int(x)


def _getitem(x, y):
    t = (x, y, x * y)
    return t[0] * 3.0 + t[2]


# ---------------------------------------------------------------------------
# math functions
# ---------------------------------------------------------------------------

def _exp(x):
    return math.exp(x)


def _exp2(x):
    return math.exp2(x)


def _expm1(x):
    return math.expm1(x)


def _log(x):
    return math.log(x)


def _log_base(x, b):
    return math.log(x, b)


def _log2(x):
    return math.log2(x)


def _log10(x):
    return math.log10(x)


def _log1p(x):
    return math.log1p(x)


def _sqrt(x):
    return math.sqrt(x)


def _cbrt(x):
    return math.cbrt(x)


def _math_pow(x, y):
    return math.pow(x, y)


def _math_pow_neg_base(x, n):
    return math.pow(x, n)


def _sin(x):
    return math.sin(x)


def _cos(x):
    return math.cos(x)


def _tan(x):
    return math.tan(x)


def _asin(x):
    return math.asin(x)


def _acos(x):
    return math.acos(x)


def _atan(x):
    return math.atan(x)


def _atan2(x, y):
    return math.atan2(x, y)


def _sinh(x):
    return math.sinh(x)


def _cosh(x):
    return math.cosh(x)


def _tanh(x):
    return math.tanh(x)


def _asinh(x):
    return math.asinh(x)


def _acosh(x):
    return math.acosh(x)


def _atanh(x):
    return math.atanh(x)


def _hypot(x, y):
    return math.hypot(x, y)


def _hypot3(x, y, z):
    return math.hypot(x, y, z)


def _dist(x1, y1, x2, y2):
    return math.dist((x1, y1), (x2, y2))


def _fabs(x):
    return math.fabs(x)


def _copysign(x, y):
    return math.copysign(x, y)


def _erf(x):
    return math.erf(x)


def _erfc(x):
    return math.erfc(x)


def _gamma(x):
    return math.gamma(x)


def _lgamma(x):
    return math.lgamma(x)


def _degrees(x):
    return math.degrees(x)


def _radians(x):
    return math.radians(x)


def _floor(x):
    return math.floor(x)


def _ceil(x):
    return math.ceil(x)


def _trunc(x):
    return math.trunc(x)


def _fmod(x, y):
    return math.fmod(x, y)


def _remainder(x, y):
    return math.remainder(x, y)


def _ldexp(x, i):
    return math.ldexp(x, i)


def _frexp_mantissa(x):
    m, e = math.frexp(x)
    return m


def _modf_frac(x):
    frac, whole = math.modf(x)
    return frac * 2.0 + whole


def _fsum(x, y):
    return math.fsum([x, y, x * y])


def _prod(x, y):
    return math.prod((x, y, 1.5))


def _nextafter(x, y):
    return math.nextafter(x, y)


def _ulp(x):
    return 2.0 * x + math.ulp(x)


def _isfinite(x):
    return 2.0 * x + math.isfinite(x)


def _isinf(x):
    return 2.0 * x + math.isinf(x)


def _isnan(x):
    return 2.0 * x + math.isnan(x)


def _isclose(x, y):
    return x * y + math.isclose(x, y)


# Integer-valued math functions: only the explicit linear term has a slope.
def _factorial(x):
    return 0.5 * x + math.factorial(int(x))


def _isqrt(x):
    return 0.5 * x + math.isqrt(int(x))


def _comb(x, y):
    return 0.5 * x + 0.25 * y + math.comb(int(x), int(y))


def _perm(x, y):
    return 0.5 * x + 0.25 * y + math.perm(int(x), int(y))


def _gcd(x, y):
    return 0.5 * x + 0.25 * y + math.gcd(int(x), int(y))


def _lcm(x, y):
    return 0.5 * x + 0.25 * y + math.lcm(int(x), int(y))


# ---------------------------------------------------------------------------
# builtins
# ---------------------------------------------------------------------------

def _abs(x):
    return abs(x)


def _min(x, y):
    return min(x, y)


def _min3(x, y, z):
    return min(x, y, z)


def _max(x, y):
    return max(x, y)


def _max3(x, y, z):
    return max(x, y, z)


def _builtin_pow(x, y):
    return pow(x, y)


def _float(x):
    return float(x)


def _int(x):
    return int(x)


def _round(x):
    return round(x)


def _round_ndigits(x):
    return round(x, 2)


def _sum(x, y):
    return sum((x, y, x * y))


def _divmod(x, y):
    q, r = divmod(x, y)
    return q * 10.0 + r


def _bool(x):
    return 2.0 * x + bool(x)


# Non-numeric builtins (no derivative) applied to active values.  Their
# results only enter through expressions that are locally constant in x, so
# central differences give the exact expected gradient.
def _len(x, y):
    return 2.0 * x + 3.0 * y + len((x, y, x * y))


def _range(x):
    s = 0.0
    for i in range(int(x)):
        s = s + x * i
    return s


def _print(x):
    print("s2sad print check:", x)
    return 2.0 * x


def _hash(x):
    return 2.0 * x + (hash(x) == hash(x))


def _id(x):
    return 2.0 * x + (id(x) > 0)


def _isinstance(x):
    return 2.0 * x + isinstance(x, float)


def _type(x):
    return 2.0 * x + (type(x) is float)


def _repr(x):
    return 2.0 * x + (repr(x) != "")


def _str(x):
    return 2.0 * x + (str(x) != "")


# Domain points; kept away from kinks, poles and integer/rounding boundaries.
_BINARY = [(1.3, 0.7), (-2.1, 0.4), (0.5, -1.7), (3.2, 2.9)]
_POS_BINARY = [(1.3, 0.7), (0.4, 2.5), (2.2, -1.3), (5.0, 0.5)]
_UNARY = [(0.3,), (-1.7,), (2.4,), (-0.6,)]
_POSITIVE = [(0.3,), (1.7,), (4.2,), (12.5,)]
_UNIT = [(-0.7,), (0.2,), (0.55,), (-0.1,)]
_MOD_POINTS = [(5.3, 2.0), (-5.3, 2.0), (7.1, -2.5), (-3.7, -1.5)]
_NONINT = [(2.3,), (-1.4,), (0.6,), (7.7,)]

# primitive -> (function applying it, sample points[, indices of differentiable args])
CHECKS = {
    # operators
    operator.add: (_add, _BINARY),
    operator.sub: (_sub, _BINARY),
    operator.mul: (_mul, _BINARY),
    operator.truediv: (_truediv, _BINARY),
    operator.floordiv: (_floordiv, _MOD_POINTS),
    operator.mod: (_mod, _MOD_POINTS),
    operator.pow: (_pow, _POS_BINARY),
    operator.neg: (_neg, _UNARY),
    operator.pos: (_pos, _UNARY),
    operator.abs: (_operator_abs, _UNARY),
    operator.iadd: (_iadd, _BINARY),
    operator.isub: (_isub, _BINARY),
    operator.imul: (_imul, _BINARY),
    operator.itruediv: (_itruediv, _BINARY),
    operator.ifloordiv: (_ifloordiv, _MOD_POINTS),
    operator.imod: (_imod, _MOD_POINTS),
    operator.ipow: (_ipow, _POS_BINARY),
    operator.lt: (_lt, _BINARY),
    operator.le: (_le, _BINARY),
    operator.gt: (_gt, _BINARY),
    operator.ge: (_ge, _BINARY),
    operator.eq: (_eq, _BINARY),
    operator.ne: (_ne, _BINARY),
    operator.not_: (_not, _UNARY),
    operator.truth: (_truth, _UNARY),
    operator.getitem: (_getitem, _BINARY),
    operator.and_: (_and, [(5.5, 3.2), (12.3, 7.7)]),
    operator.or_: (_or, [(5.5, 3.2), (12.3, 7.7)]),
    operator.xor: (_xor, [(5.5, 3.2), (12.3, 7.7)]),
    operator.lshift: (_lshift, [(5.5, 3.2), (12.3, 1.7)]),
    operator.rshift: (_rshift, [(5.5, 1.2), (12.3, 2.7)]),
    operator.invert: (_invert, [(5.5,), (-12.3,)]),
    # math
    math.exp: (_exp, _UNARY),
    math.expm1: (_expm1, _UNARY),
    math.log: (_log, _POSITIVE),
    math.log2: (_log2, _POSITIVE),
    math.log10: (_log10, _POSITIVE),
    math.log1p: (_log1p, [(0.3,), (-0.6,), (2.4,), (12.5,)]),
    math.sqrt: (_sqrt, _POSITIVE),
    math.pow: (_math_pow, _POS_BINARY),
    math.sin: (_sin, _UNARY),
    math.cos: (_cos, _UNARY),
    math.tan: (_tan, [(0.3,), (-1.2,), (2.4,), (4.0,)]),
    math.asin: (_asin, _UNIT),
    math.acos: (_acos, _UNIT),
    math.atan: (_atan, _UNARY),
    math.atan2: (_atan2, [(0.3, 0.7), (0.5, -1.2), (-0.8, -0.4), (-1.5, 2.0)]),
    math.sinh: (_sinh, _UNARY),
    math.cosh: (_cosh, _UNARY),
    math.tanh: (_tanh, _UNARY),
    math.asinh: (_asinh, _UNARY),
    math.acosh: (_acosh, [(1.3,), (2.0,), (7.5,)]),
    math.atanh: (_atanh, _UNIT),
    math.hypot: (_hypot, [(0.3, 0.7), (-1.5, 2.0), (3.0, -4.0)]),
    math.dist: (_dist, [(0.3, 0.7, 1.0, -0.5), (-1.5, 2.0, 0.5, 0.5)]),
    math.fabs: (_fabs, _UNARY),
    math.copysign: (_copysign, _BINARY),
    math.erf: (_erf, _UNARY),
    math.erfc: (_erfc, _UNARY),
    math.gamma: (_gamma, [(0.3,), (1.7,), (4.2,), (-1.5,)]),
    math.lgamma: (_lgamma, [(0.3,), (1.7,), (4.2,), (12.5,)]),
    math.degrees: (_degrees, _UNARY),
    math.radians: (_radians, _UNARY),
    math.floor: (_floor, _NONINT),
    math.ceil: (_ceil, _NONINT),
    math.trunc: (_trunc, _NONINT),
    math.fmod: (_fmod, _MOD_POINTS),
    math.remainder: (_remainder, [(5.3, 2.0), (-5.3, 2.0), (7.1, -2.5), (-3.2, -1.5)]),
    math.ldexp: (_ldexp, [(1.3, 3), (-0.7, -2), (2.5, 0)], (0,)),
    math.frexp: (_frexp_mantissa, [(1.3,), (-0.7,), (5.0,)]),
    math.modf: (_modf_frac, [(2.3,), (-1.4,), (0.6,)]),
    math.fsum: (_fsum, _BINARY),
    math.prod: (_prod, _BINARY),
    math.nextafter: (_nextafter, [(1.3, 5.0), (-0.7, -3.0), (2.5, 0.0)]),
    math.ulp: (_ulp, [(1.3,), (-0.7,), (3.0,)]),
    math.isfinite: (_isfinite, _UNARY),
    math.isinf: (_isinf, _UNARY),
    math.isnan: (_isnan, _UNARY),
    math.isclose: (_isclose, _BINARY),
    math.factorial: (_factorial, [(3.5,), (5.2,)]),
    math.isqrt: (_isqrt, [(3.5,), (17.2,)]),
    math.comb: (_comb, [(5.5, 2.3), (7.2, 3.6)]),
    math.perm: (_perm, [(5.5, 2.3), (7.2, 3.6)]),
    math.gcd: (_gcd, [(12.5, 8.3), (7.2, 3.6)]),
    math.lcm: (_lcm, [(12.5, 8.3), (7.2, 3.6)]),
    # builtins
    abs: (_abs, _UNARY),
    min: (_min, _BINARY),
    max: (_max, _BINARY),
    pow: (_builtin_pow, _POS_BINARY),
    float: (_float, _UNARY),
    int: (_int, _NONINT),
    round: (_round, _NONINT),
    sum: (_sum, _BINARY),
    divmod: (_divmod, _MOD_POINTS),
    bool: (_bool, _UNARY),
    len: (_len, _BINARY),
    range: (_range, [(3.5,), (5.2,), (0.7,)]),
    print: (_print, [(1.3,)]),
    hash: (_hash, _UNARY),
    id: (_id, _UNARY),
    isinstance: (_isinstance, _UNARY),
    type: (_type, _UNARY),
    repr: (_repr, _UNARY),
    str: (_str, _UNARY),
}

# Functions added in later Python versions (exp2 and cbrt are 3.11+).
if hasattr(math, "exp2"):
    CHECKS[math.exp2] = (_exp2, _UNARY)
if hasattr(math, "cbrt"):
    CHECKS[math.cbrt] = (_cbrt, [(0.3,), (-1.7,), (8.0,), (-27.5,)])

def _sorted3(a, b, c):
    s = sorted([a, b * c, c])
    return s[0] + 2.0 * s[1] + 3.0 * s[2] * s[2]


def _sorted_reverse(a, b, c):
    s = sorted((a * a, b, math.sin(c)), reverse=True)
    return s[0] - 2.0 * s[1] + 5.0 * s[2]


# Additional call forms for the same primitives: (primitive, fn, points[, wrt]).
EXTRA = [
    (sorted, _sorted3, [(1.0, 2.5, 0.3), (-0.4, 0.7, 1.9), (0.2, -1.3, -0.6)]),
    (sorted, _sorted_reverse, [(1.1, 0.3, 0.2), (-0.4, 0.7, 1.9), (0.2, -1.3, -0.6)]),
    (operator.pow, _pow_int_exponent, [(-1.5, 3), (2.0, -2), (0.7, 5)], (0,)),
    (operator.pow, _pow_const_exponent, [(-1.5,), (2.0,), (0.7,)]),
    (operator.pow, _pow_const_base, [(-1.5,), (2.0,), (0.7,)]),
    (math.pow, _math_pow_neg_base, [(-1.5, 3.0), (-0.7, 2.0), (-2.0, -1.0)], (0,)),
    (math.log, _log_base, [(0.3, 2.0), (4.2, 10.0), (12.5, 0.5)]),
    (math.hypot, _hypot3, [(0.3, 0.7, -1.1), (-1.5, 2.0, 0.5)]),
    (min, _min3, [(1.0, 2.0, 3.0), (3.0, 1.0, 2.0), (2.0, 3.0, -1.0)]),
    (max, _max3, [(1.0, 2.0, 3.0), (3.0, 1.0, 2.0), (2.0, 3.0, -1.0)]),
    (round, _round_ndigits, [(1.234,), (-0.421,), (7.777,)]),
]

# Primitives whose gradient is identically zero: checked for exact 0.0.
ZERO_GRAD = {
    operator.floordiv, operator.ifloordiv,
    math.floor, math.ceil, math.trunc,
    int, round,
}

_MODULES = (("operator", operator), ("math", math), ("builtins", builtins))


def primitive_name(obj):
    """'math.sin', 'operator.add', 'builtins.abs', or None if not one of those."""
    for modname, mod in _MODULES:
        names = [n for n, v in vars(mod).items() if v is obj]
        if names:
            names.sort(key=lambda n: (n.startswith("_"), n))
            return f"{modname}.{names[0]}"
    return None


def _check_params():
    params = []
    entries = [(prim, *spec) for prim, spec in CHECKS.items()] + list(EXTRA)
    for entry in entries:
        prim, fn, points = entry[:3]
        wrt = entry[3] if len(entry) > 3 else None
        for k, point in enumerate(points):
            indices = tuple(range(len(point))) if wrt is None else wrt
            params.append(pytest.param(prim, fn, point, indices,
                                       id=f"{primitive_name(prim)}-{fn.__name__}-p{k}"))
    return params


@pytest.mark.parametrize("prim, fn, point, indices", _check_params())
def test_rule_matches_finite_differences(prim, fn, point, indices):
    if prim not in registry.RULES:
        pytest.skip(f"{primitive_name(prim)} has no rule in the registry")
    failures = []
    for i in indices:
        expected = fd_partial(fn, point, i)
        try:
            # a parameter with no derivative here makes the output unconnected to it
            zero = [inspect.signature(fn).parameters] if expected == 0.0 else []
            with allowing_unconnected(fn, [p for ps in zero for p in ps]):
                actual = s2sad.grad(fn, wrt=i)(*point)
            if prim in ZERO_GRAD:
                assert float(actual) == 0.0 and expected == 0.0, (
                    f"expected exactly 0.0 (fd: {expected!r}), got {actual!r}")
            else:
                assert_close(actual, expected, rtol=RTOL, atol=ATOL)
        except Exception as exc:  # collect all arguments before failing
            failures.append(f"d/d arg{i} at {point}: {type(exc).__name__}: {exc}")
    assert not failures, "\n".join(failures)


def test_oracle_sample_points_are_smooth():
    """Without s2sad: FD with two step sizes agree at every sample point."""
    bad = []
    for param in _check_params():
        prim, fn, point, indices = param.values
        for i in indices:
            a = fd_partial(fn, point, i)
            b = fd_partial(fn, point, i, method="central", h=1e-7)
            if not abs(a - b) <= 1e-6 + 1e-4 * abs(a):
                bad.append(f"{param.id} arg{i}: {a!r} vs {b!r}")
            if prim in ZERO_GRAD and a != 0.0:
                bad.append(f"{param.id} arg{i}: expected zero FD, got {a!r}")
    assert not bad, "\n".join(bad)


#: Operators on arrays only; tests/test_rules_numpy.py checks them.
ARRAY_ONLY = {operator.matmul}
# getattr reads fields of dataclasses and named tuples: tests/test_objects.py checks it
# against central differences over their float fields; list, tuple and dict build
# containers: tests/test_dicts.py and test_forward's Jacobian cases check them
# (complex(a, b): tests/test_complex_rules.py, to second order, of real and complex parts)
CHECKED_ELSEWHERE = {getattr, list, tuple, dict, complex}


def test_every_registered_scalar_rule_has_a_check():
    checked = set(CHECKS) | {entry[0] for entry in EXTRA} | ARRAY_ONLY | CHECKED_ELSEWHERE
    missing = sorted(
        name for key in registry.RULES
        if (name := primitive_name(key)) is not None and key not in checked)
    assert not missing, "registered rules without a numeric check: " + ", ".join(missing)
