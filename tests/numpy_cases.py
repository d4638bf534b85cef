"""Sample points and a finite-difference oracle for array-valued inputs.

Nothing in here imports s2sad. ``fd_array_grad`` estimates the gradient of a
scalar function of arrays element by element with ``oracle.fd_partial``
(Richardson-extrapolated central differences in float64); ``Samples`` draws
reproducible sample points inside the domains the NumPy rules need (positive,
inside (-1, 1), away from zero, pairwise separated values for max/min/clip...).
"""

import numbers

import numpy as np

from oracle import fd_partial

__all__ = ["Samples", "fd_array_grad", "as_float64", "compare", "same_value"]


class Samples:
    """Reproducible sample arrays; ``shape=None`` means a Python float."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)

    @staticmethod
    def _out(values, shape):
        if shape is None:
            return float(np.ravel(values)[0])
        return np.asarray(values, dtype=np.float64).reshape(shape)

    @staticmethod
    def _size(shape):
        return 1 if shape is None else int(np.prod(shape, dtype=int))

    def uniform(self, shape, lo, hi):
        return self._out(self.rng.uniform(lo, hi, self._size(shape)), shape)

    def real(self, shape, scale=1.0):
        """Normal samples, clipped to |x| <= 2.5 * scale."""
        v = np.clip(self.rng.standard_normal(self._size(shape)), -2.5, 2.5) * scale
        return self._out(v, shape)

    def away(self, shape, lo=0.3, hi=1.5):
        """Values with lo <= |x| <= hi and a random sign."""
        n = self._size(shape)
        v = self.rng.uniform(lo, hi, n) * self.rng.choice([-1.0, 1.0], n)
        return self._out(v, shape)

    def distinct(self, *shapes, lo=-2.0, hi=2.0):
        """Arrays of the given shapes whose values, all together, are pairwise at least
        0.6 * (hi - lo) / (n - 1) apart: no ties, and no tie crossed by a small step."""
        sizes = [self._size(s) for s in shapes]
        n = sum(sizes)
        grid = np.linspace(lo, hi, n)
        gap = (hi - lo) / max(n - 1, 1)
        v = self.rng.permutation(grid + self.rng.uniform(-0.2, 0.2, n) * gap)
        out, k = [], 0
        for s, m in zip(shapes, sizes):
            out.append(self._out(v[k:k + m], s))
            k += m
        return out[0] if len(out) == 1 else tuple(out)


def as_float64(value):
    """`value` with every float32 array or scalar converted to float64."""
    if isinstance(value, np.ndarray):
        return value.astype(np.float64) if value.dtype == np.float32 else value
    if isinstance(value, np.float32):
        return np.float64(value)
    return value


def fd_array_grad(fn, args, i):
    """d fn(*args) / d args[i] by central differences, shaped like args[i] (float64)."""
    args = tuple(as_float64(a) for a in args)
    x = args[i]
    if isinstance(x, numbers.Real) and not isinstance(x, np.ndarray):
        return fd_partial(fn, args, i)
    x = np.asarray(x, dtype=np.float64)
    out = np.empty(x.shape)
    for idx in np.ndindex(x.shape):
        def at(t, idx=idx):
            y = x.copy()
            y[idx] = t
            shifted = list(args)
            shifted[i] = y
            return fn(*shifted)
        out[idx] = fd_partial(at, (float(x[idx]),), 0)
    return out


def fd_array_grad_central(fn, args, i, h=1e-6):
    """Like `fd_array_grad`, with a plain central difference (for smoothness checks)."""
    args = tuple(as_float64(a) for a in args)
    x = args[i]
    if isinstance(x, numbers.Real) and not isinstance(x, np.ndarray):
        return fd_partial(fn, args, i, method="central", h=h)
    x = np.asarray(x, dtype=np.float64)
    out = np.empty(x.shape)
    for idx in np.ndindex(x.shape):
        def at(t, idx=idx):
            y = x.copy()
            y[idx] = t
            shifted = list(args)
            shifted[i] = y
            return fn(*shifted)
        out[idx] = fd_partial(at, (float(x[idx]),), 0, method="central", h=h)
    return out


def compare(actual, expected, rtol, atol, what):
    """An error message if `actual` is not elementwise close to `expected`, else None."""
    try:
        a = np.asarray(actual, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        return f"{what}: not a numeric array ({type(actual).__name__}: {exc})"
    e = np.asarray(expected, dtype=np.float64)
    if a.shape != e.shape:
        return f"{what}: shape {a.shape}, expected {e.shape}"
    if not np.all(np.isfinite(a)):
        return f"{what}: non-finite values {a!r}"
    err = np.abs(a - e)
    tol = atol + rtol * np.abs(e)
    if np.all(err <= tol):
        return None
    k = np.unravel_index(np.argmax(err - tol), err.shape) if err.shape else ()
    return (f"{what}: worst element {k}: got {a[k]!r}, expected {e[k]!r} (abs err "
            f"{err[k]:.3g} > tol {tol[k]:.3g}); {int(np.sum(err > tol))} of {err.size} "
            f"elements differ.\n  got      {np.array2string(a, precision=6)}\n"
            f"  expected {np.array2string(e, precision=6)}")


def same_value(a, b):
    """Exact equality of two arguments (arrays: dtype, shape and bits; else ==)."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)
                and a.dtype == b.dtype and a.shape == b.shape
                and np.array_equal(a, b, equal_nan=True))
    if isinstance(a, (list, tuple)):
        return (type(a) is type(b) and len(a) == len(b)
                and all(same_value(u, v) for u, v in zip(a, b)))
    return type(a) is type(b) and a == b


def check_fused(f, args, wrt, which):
    """Check `s2sad.grad` (`which="grad"`) or `s2sad.value_and_grad` of `f` at `args`
    against central differences: the gradients, their memory (never an argument's), the
    arguments left unchanged, the value, and a second call giving the same gradients."""
    import pytest
    import s2sad
    before = [np.copy(a) for a in args]

    def run():
        if which == "grad":
            return s2sad.grad(f, wrt)(*args)
        value, got = s2sad.value_and_grad(f, wrt)(*args)
        assert value == pytest.approx(f(*[np.copy(a) for a in args]), rel=1e-12)
        return got
    got = run()
    single = not isinstance(wrt, tuple)
    for i, g in zip((wrt,) if single else wrt, (got,) if single else got):
        error = compare(g, fd_array_grad(f, args, i), 1e-6, 1e-8, f"d{f.__name__}/d{i}")
        assert error is None, error
        assert not any(np.shares_memory(g, a) for a in args)
    for a, b in zip(args, before):
        assert np.array_equal(a, b)          # inputs untouched
    again = run()
    for g, h in zip((got,) if single else got, (again,) if single else again):
        assert np.array_equal(g, h)


# -- the oracle of the rule tables in every mode (test_rules_modes, test_rules_scipy) --------
def params(table):
    """pytest parameters (fn, args) of a table {name: (fn, {label: args})}."""
    import pytest
    return [pytest.param(fn, args, id=f"{name}[{label}]")
            for name, (fn, sets) in table.items() for label, args in sets.items()]


def directional(f, args, v, h=1e-3):
    """d/ds f(args + s v) at 0, by Richardson-extrapolated central differences."""
    def at(s):
        return np.asarray(f(*[a + s * d for a, d in zip(args, v)]), dtype=np.float64)
    return (8 * (at(h) - at(-h)) - (at(2 * h) - at(-2 * h))) / (12 * h)


def random_like(x, rng):
    """A random direction (or cotangent) of the shape of `x`, in [-1, 1]."""
    return float(rng.uniform(-1, 1)) if np.ndim(x) == 0 and not isinstance(
        x, np.ndarray) else rng.uniform(-1, 1, np.shape(x))


def gradient_failures(grads, args, weighted):
    """The messages of the gradients `grads` (one per argument) that differ from
    central differences of the scalar function `weighted`, or have another shape."""
    failures = []
    for i, (g, x) in enumerate(zip(grads, args)):
        if np.shape(g) != np.shape(x):
            failures.append(f"d/d arg{i}: shape {np.shape(g)}, expected {np.shape(x)}")
        else:
            failures.append(compare(g, fd_array_grad(weighted, args, i), 1e-6, 1e-8,
                                    f"d/d arg{i}"))
    return [m for m in failures if m]


def unsmooth_points(cases):
    """The (id, argument) of the sample points `cases` ([(id, fn, args)]) where two
    difference schemes disagree: a kink, a tie or a jump nearby, where no derivative
    check means anything."""
    bad = []
    for name, fn, args in cases:
        u = np.random.default_rng(5).uniform(-1, 1, np.asarray(fn(*args)).shape)

        def weighted(*a):
            return float(np.sum(u * np.asarray(fn(*a))))
        for i in range(len(args)):
            a, b = fd_array_grad(weighted, args, i), fd_array_grad_central(weighted, args, i)
            if not np.allclose(a, b, rtol=1e-4, atol=1e-6):
                bad.append(f"{name} arg{i}")
    return bad


def fd_hessian(fn, x):
    """The Hessian of `fn` at `x` by central differences of central differences."""
    if not isinstance(x, np.ndarray):
        return fd_array_grad(lambda y: fd_array_grad(fn, (y,), 0), (x,), 0)
    out = np.empty(x.shape + x.shape)
    for idx in np.ndindex(x.shape):
        out[idx] = fd_array_grad(lambda y: fd_array_grad(fn, (y,), 0)[idx], (x,), 0)
    return out


def check_vjp(fn, args):
    """`s2sad.vjp` of `fn` at `args`, for a random cotangent, against central
    differences; a RuntimeWarning (a division by zero, an overflow) is a failure."""
    import warnings

    import s2sad
    rng = np.random.default_rng(5)
    y = fn(*args)
    u = random_like(y, rng) if np.ndim(y) else float(rng.uniform(0.5, 1.5))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        value, pullback = s2sad.vjp(fn, *args)
        grads = pullback(u)
    np.testing.assert_allclose(value, y, rtol=1e-12)
    grads = grads if isinstance(grads, tuple) else (grads,)
    failures = gradient_failures(grads, args, lambda *a: float(np.sum(u * np.asarray(fn(*a)))))
    assert not failures, "\n".join(failures)


def check_jvp(fn, args):
    """`s2sad.jvp` of `fn` at `args`, along a random direction, against Richardson
    central differences."""
    import warnings

    import s2sad
    rng = np.random.default_rng(6)
    v = tuple(random_like(a, rng) for a in args)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        value, tangent = s2sad.jvp(fn, args, v)
    np.testing.assert_allclose(value, fn(*args), rtol=1e-12)
    error = compare(tangent, directional(fn, args, v), 1e-6, 1e-8, "tangent")
    assert error is None, error


def check_hessian(fn, x):
    """`s2sad.hessian` of `fn` at `x` against central differences of central
    differences."""
    import warnings

    import s2sad
    x = x[0] if isinstance(x, tuple) else x
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        h = s2sad.hessian(fn)(x)
    error = compare(h, fd_hessian(fn, x), 1e-5, 2e-5, "hessian")
    assert error is None, error


def identity(obj):
    """What tells rule objects apart: the object, or for a ufunc's method (a new object
    at each `np.add.outer`) the ufunc and the method's name."""
    owner = getattr(obj, "__self__", None)
    if isinstance(owner, np.ufunc):
        return id(owner), obj.__name__
    return id(obj)
