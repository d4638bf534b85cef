"""Complex values: which rules hold for them, and the primitives that take the place of
the others where a complex value reaches them (see docs/complex.md for the convention,
autograd's: the adjoint `g` of a value `w` is the complex number with `dL = Re(g dw)`).

Under that convention the reverse template of a holomorphic function, `g * f'(x)`, is
right for complex values as it is for real ones: those rules declare `complex=True`.
A function that is not holomorphic (`np.abs`, `np.conj`, `np.imag`, `np.angle`) has
another primitive, defined here, which before_ad/complex_values.py calls instead where
an operand is complex, and `as_complex` marks a real value that meets a complex one:
its adjoint is the real part of what reaches it.
"""
import builtins
import cmath
import dataclasses
import numbers
import operator

import numpy as np

from . import calculus, containers, layout, products, pytrees, reductions
from . import numpy as numpy_rules
from . import runtime  # noqa: F401 - the helpers its templates call, declared
from .registry import define, helper

ns = {"np": np}

#: The `complex` of a primitive that takes real arguments and gives complex values
#: (`np.fft.rfft`, which refuses complex ones): its templates hold, and the real values
#: it reads are passed as they are (not through `as_complex`).
FROM_REAL = "from real"


#: The primitives that take the place of others and take the user's file and line too,
#: as their last parameters `file` and `line` (see `located`).
LOCATED = set()

#: {function: the parameters it reads}: the `complex` of a primitive whose replacement
#: depends on the call's constant arguments, a function of {parameter: constant value}
#: that returns it (see `chooses`).
CHOOSERS = {}


def located(fn):
    """Mark the primitive `fn`, which takes the place of another where a complex value
    reaches it, as one that takes the user's file and line too (its last parameters,
    `file` and `line`): the errors its rule raises at run time name them."""
    LOCATED.add(fn)
    return fn


def chooses(*params):
    """Declare a function of {parameter: constant value} of the call (of `params`, by
    position or keyword) that returns the primitive that takes the place of another
    where a complex value reaches it."""
    def declared(fn):
        CHOOSERS[fn] = params
        return fn
    return declared


@helper
def complex_leaves(x):
    """() if no value the structure `x` holds is complex; else ((path, whether it is
    complex), ...) of each of its leaves (and empty structures), in order, a path a tuple
    of steps `("[", key)` (an item of a list, tuple or dict) or `(".", name)` (a field of
    a dataclass or named tuple, or an attribute of a plain or registered class; a child
    of a registered class no attribute is, `("#", i)`): what a derivative is specialised on, and its guard
    tests (compilation.complex_leaves_key)."""
    if not _holds_complex(x):
        return ()
    out = []
    _leaves(x, (), out)
    return tuple(out)


_FLOAT64 = np.dtype(np.float64)


def _holds_complex(x, seen=()):     # (fast: a guard calls it at each call)
    # (`seen`: the structures on the way down, so that one holding itself ends the walk;
    # the guard and the flattening then refuse it, saying so)
    if x.__class__ in (list, tuple, dict):
        for v in x.values() if x.__class__ is dict else x:
            if v.__class__ is float or v.__class__ is np.ndarray and (
                    v.dtype is _FLOAT64 or v.dtype.kind != "c"):
                continue
            if id(v) not in seen and _holds_complex(v, seen + (id(x),)):
                return True
        return False
    if x.__class__ is np.ndarray:
        return x.dtype.kind == "c"
    if isinstance(x, (complex, np.complexfloating)):
        return True
    if isinstance(x, (str, bytes, numbers.Real, np.generic)) or x is None:
        return False
    inner = seen + (id(x),)
    return any(id(v) not in inner and _holds_complex(v, inner) for v in pytrees.children(x))


def _leaves(x, path, out):
    node = pytrees.node_of(type(x))
    if node is None:
        out.append((path, isinstance(x, (complex, np.complexfloating)) or (
            getattr(getattr(x, "dtype", None), "kind", None) == "c")))
        return
    children, aux = node.flatten(x)
    if isinstance(x, dict):
        steps = [("[", k) for k in x]
    elif isinstance(x, tuple) and hasattr(x, "_fields") or dataclasses.is_dataclass(x):
        steps = [(".", f) for f in (x._fields if isinstance(x, tuple) else [
            f.name for f in dataclasses.fields(x)])]
    elif isinstance(x, (list, tuple)):
        steps = [("[", i) for i in range(len(x))]
    elif pytrees.by_attributes(type(x)) and not pytrees.registered(type(x)):
        steps = [(".", name) for name in aux[0][1]]
    else:
        steps = [("#", i) for i in range(len(children))]
        for name in getattr(x, "__dict__", ()):     # (the children its attributes are)
            try:
                k = runtime.child_of(node, aux, x, name)
            except Exception:   # noqa: BLE001 - an attribute computed from the children
                k = None
            if k is not None:
                steps[k] = (".", name)
    if not children:
        out.append((path, False))
    for step, child in zip(steps, children):
        _leaves(child, path + (step,), out)


@helper
def as_complex(x):
    """`x`, a real value a complex one meets, as a complex value: its adjoint is the
    real part of the complex adjoint that reaches it. A list or tuple (a row of an array
    display, `[[t, 0.0], [0.0, 1j]]`) item by item."""
    if type(x) in (list, tuple):
        return type(x)([as_complex(v) for v in x])
    return x + 0j


@helper
def abs_(x):
    """`np.abs(x)` of a complex `x`, its modulus."""
    return np.abs(x)


@helper
def angle(x):
    """`np.angle(x)` of a complex `x`, its phase."""
    return np.angle(x)


@helper
def real(x):
    """`np.real(x)` of a complex `x`."""
    return np.real(x)


@helper
def imag(x):
    """`np.imag(x)` of a complex `x`."""
    return np.imag(x)


@helper
def conj(x):
    """`np.conj(x)` of a complex `x`."""
    return np.conj(x)


@helper
def log(x):
    """`np.log(x)` of a complex `x`."""
    return np.log(x)


@helper
def divide(x, y):
    """`np.divide(x, y)` where `x` or `y` is complex."""
    return np.divide(x, y)


@helper
def power(x, y):
    """`x ** y` where `x` or `y` is complex."""
    return x ** y


@helper(tangent="t", adjoint={"a": "ans_bar"})   # (where a != 0, as everywhere it is used)
def nonzero(a):
    """`a` (a modulus), with 1 where it is 0: the divisor of the derivatives of the
    modulus and phase, which are 0 at 0 (as autograd's)."""
    return a + (a == 0)


define(nonzero, complex=True)

# |x|: d|x| = Re(conj(x) dx) / |x|; arg x: d arg x = Im(conj(x) dx) / |x| ** 2
define(as_complex, "x", "np.real(g)", namespace=ns, elementwise=True, linear="x",
       complex=True)
define(abs_, "x", "g * np.conj(x) / _s2s_nonzero(ans)", namespace=ns, elementwise=True,
       tangent="np.real(np.conj(x) * t) / _s2s_nonzero(ans)", complex=True)
define(angle, "x", "g * np.conj(1j * x) / _s2s_nonzero(np.real(x * np.conj(x)))",
       namespace=ns, elementwise=True,
       tangent="np.imag(np.conj(x) * t) / _s2s_nonzero(np.real(x * np.conj(x)))", complex=True)
define(real, "x", "g + 0j", elementwise=True, linear="x", complex=True)   # (a complex adjoint)
define(imag, "x", "-1j * g", elementwise=True, linear="x", complex=True)
define(conj, "x", "np.conj(g)", namespace=ns, elementwise=True, linear="x", complex=True)
define(log, "x", "g / x", elementwise=True, tangent="t / x", complex=True)
define(divide, "x, y", "g / y", "-g * x / (y * y)", broadcast=True,
       tangent=("t / y", "-t * x / (y * y)"), complex=True)
define(power, "x, y", "g * y * x ** (y - 1)", "g * ans * np.log(x)", namespace=ns,
       broadcast=True, tangent=("t * y * x ** (y - 1)", "t * ans * np.log(x)"), complex=True)

# np.complex128(x): x, of a complex x (a real one is passed through `as_complex`)
define(np.complex128, "x", "g", elementwise=True, returns="args", complex=True)
# complex(a, b) = a + ib (of complex a and b too; real ones pass through `as_complex`)
define(builtins.complex, "real=0, imag=0", "g", "1j * g", tangent=("t + 0j", "1j * t"),
       returns="scalar", complex=True)

# holomorphic: the templates hold for complex values
for _f in (operator.add, operator.sub, operator.mul, operator.truediv, operator.neg,
           operator.matmul, np.add, np.subtract, np.multiply, np.negative,
           np.exp, np.sqrt, np.square, np.sin, np.cos, np.tan, np.sinh, np.cosh,
           np.tanh, np.sum, np.mean, np.dot, np.matmul, np.inner, np.outer, np.trace,
           np.array, np.asarray, np.stack, np.concatenate, np.transpose,
           np.reshape, np.ravel, np.ndarray.astype, np.swapaxes,
           # (moves, products and sums of arrays, their adjoints transposes: complex
           # arrays as arguments reach them)
           np.copy, np.where, np.cumsum, np.cumprod, np.prod, np.reciprocal, np.diff,
           np.flip, np.fliplr, np.roll, np.rot90, np.expand_dims, np.squeeze,
           np.atleast_2d, np.diag, np.diagonal, np.tile, np.repeat, np.broadcast_to,
           np.moveaxis, np.triu, np.tril, np.hstack, np.vstack, np.append, np.pad,
           np.einsum, np.tensordot, np.kron, np.ndarray.flatten, numpy_rules._Reshape,
           numpy_rules._Transpose):
    define(_f, complex=True)
# the helpers of reverse-mode code that sum, reshape and multiply adjoints, and the writes
# into arrays and lists (linear, with no conjugate: forward over reverse differentiates
# them with complex values; a complex value written into a real array is its real part,
# in the derivative as in the function)
for _f in (runtime.unbroadcast, runtime.unreduce, runtime.matmul_lhs, runtime.matmul_rhs,
           runtime.dot_lhs, runtime.dot_rhs, runtime.from_array, runtime.to_array,
           runtime.spread_to, runtime.add, runtime.int_zero, runtime.cast_like,
           runtime.cast_tangent, runtime.count, runtime.inner, runtime.outer,
           runtime.rebroadcast, runtime.reshape_like, runtime.split_like, runtime.trace,
           runtime.unstack, runtime.untranspose, runtime.like, runtime.setitem,
           runtime.append, runtime.zero_at, runtime.take, runtime.head, runtime.last,
           runtime.added_at, runtime.unindex, runtime.cumsum, runtime.flip, runtime.roll,
           runtime.diag, runtime.moveaxis, runtime.triu, runtime.tril, runtime.hstack,
           runtime.vstack, layout.undiagonal, layout.untile, layout.unrepeat,
           layout.unkron, layout.unrot90, layout.unpad, layout.unappend, products.einsum,
           products.tensordot, reductions.prod_others, calculus.cumprod, calculus.undiff,
           # (the moves of the loops over containers, of dicts and of fields)
           runtime.unattr, runtime.attr_dot, containers.sequence, containers.unsequence, containers.unlist,
           containers.dict_of, containers.undict_of, containers.undict, containers.dict_set,
           containers.undict_set, containers.dict_set_value, containers.dict_get,
           containers.unget, containers.unget_default):
    define(_f, complex=True)
# not holomorphic: another primitive where a complex value reaches them
for _f, _instead in ((np.abs, abs_), (builtins.abs, abs_), (np.angle, angle),
                     (np.real, real), (np.imag, imag), (np.log, log), (np.divide, divide), (np.conjugate, conj), (operator.pow, power),
                     (np.power, power), (builtins.pow, power)):
    define(_f, complex=_instead)
define(np.real_if_close, "a, tol=100", "g", linear="a", complex=True)

# cmath, of complex numbers
define(cmath.exp, "z", "g * ans", elementwise=True, complex=True)
define(cmath.log, "z", "g / z", elementwise=True, complex=True)
define(cmath.sqrt, "z", "g / (2 * ans)", elementwise=True, complex=True)
define(cmath.sin, "z", "g * cmath.cos(z)", namespace={"cmath": cmath}, elementwise=True,
       complex=True)
define(cmath.cos, "z", "-g * cmath.sin(z)", namespace={"cmath": cmath}, elementwise=True,
       complex=True)
define(cmath.tanh, "z", "g * (1 - ans * ans)", elementwise=True, complex=True)
define(cmath.phase, complex=angle)
