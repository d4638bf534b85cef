"""Independent numerical oracle for gradient tests.

Nothing in here imports or relies on s2sad: gradients are estimated with
central finite differences in float64 and compared with a tolerance-aware,
tuple-aware ``assert_close``.

``fd_grad(f, args, wrt)`` mirrors the calling convention of ``s2sad.grad``:

* ``wrt`` is an int index, a parameter name, or a tuple/list of them;
* a single ``wrt`` gives a float, a tuple ``wrt`` gives a tuple of floats.

By default each partial derivative is a Richardson-extrapolated central
difference (error O(h**4)) with the relative step ``h = 1e-4 * max(1, |x|)``;
this is considerably more accurate than a plain central difference with
``h = 1e-6``, whose round-off error is ~1e-10 * |f| / |f'|.  Pass
``method="central"`` for a plain central difference (then the default
relative step is 1e-6).
"""

import inspect
import math
import numbers

import numpy as np

__all__ = ["fd_grad", "fd_partial", "assert_close", "resolve_wrt"]

_DEFAULT_REL_STEP = {"richardson": 1e-4, "central": 1e-6}


def resolve_wrt(f, wrt, nargs):
    """Return ``(single, indices)`` for a ``wrt`` spec of ints and/or names."""
    single = not isinstance(wrt, (tuple, list))
    items = [wrt] if single else list(wrt)
    params = None
    indices = []
    for w in items:
        if isinstance(w, bool):
            raise TypeError(f"wrt entries must be int or str, not bool: {w!r}")
        if isinstance(w, numbers.Integral):
            i = int(w)
            if i < 0:
                i += nargs
        elif isinstance(w, str):
            if params is None:
                params = list(inspect.signature(f).parameters)
            if w not in params:
                raise ValueError(f"{getattr(f, '__name__', f)!s} has no parameter {w!r}")
            i = params.index(w)
        else:
            raise TypeError(f"wrt entries must be int or str, not {type(w).__name__}")
        if not 0 <= i < nargs:
            raise IndexError(
                f"wrt {w!r} refers to argument {i}, but only {nargs} positional "
                "arguments were given")
        indices.append(i)
    return single, indices


def _as_real(value, what="value"):
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{what} must be a real scalar, got {type(value).__name__}: {value!r}")
    return float(value)


def _evaluate(f, args, kwargs):
    return _as_real(f(*args, **kwargs), "function output")


def fd_partial(f, args, i, kwargs=None, h=None, method="richardson"):
    """Central-difference estimate of d f(*args) / d args[i] in float64.

    ``h`` is the *relative* step: the absolute step is ``h * max(1, |x|)``.
    """
    kwargs = dict(kwargs or {})
    if method not in _DEFAULT_REL_STEP:
        raise ValueError(f"unknown method {method!r}")
    rel = _DEFAULT_REL_STEP[method] if h is None else float(h)
    x = float(args[i])
    step = rel * max(1.0, abs(x))

    def at(value):
        shifted = list(args)
        shifted[i] = value
        return _evaluate(f, shifted, kwargs)

    def central(s):
        xp, xm = x + s, x - s
        # Divide by the representable difference, not by 2*s.
        return (at(xp) - at(xm)) / (xp - xm)

    if method == "central":
        return central(step)
    d_h = central(step)
    d_h2 = central(step / 2.0)
    return (4.0 * d_h2 - d_h) / 3.0


def fd_grad(f, args, wrt=0, h=None, kwargs=None, method="richardson"):
    """Finite-difference gradient with the same result shape as ``s2sad.grad``.

    Returns a float when ``wrt`` is a single int/name, and a tuple of floats
    when ``wrt`` is a tuple (or list).
    """
    args = tuple(args)
    single, indices = resolve_wrt(f, wrt, len(args))
    grads = tuple(fd_partial(f, args, i, kwargs=kwargs, h=h, method=method)
                  for i in indices)
    return grads[0] if single else grads


def assert_close(actual, expected, rtol=1e-6, atol=1e-8, _path="value"):
    """Assert ``|actual - expected| <= atol + rtol * |expected|``, elementwise.

    ``expected`` may be a scalar or a (nested) tuple/list of scalars; ``actual``
    must have the same structure (a tuple where a tuple is expected, a scalar
    where a scalar is expected).  NaN only matches NaN, inf only matches the
    same inf.
    """
    if isinstance(expected, (tuple, list)):
        assert isinstance(actual, (tuple, list)), (
            f"{_path}: expected a tuple of {len(expected)} values, got "
            f"{type(actual).__name__}: {actual!r}")
        assert len(actual) == len(expected), (
            f"{_path}: expected {len(expected)} values, got {len(actual)}: {actual!r}")
        for k, (a, e) in enumerate(zip(actual, expected)):
            assert_close(a, e, rtol=rtol, atol=atol, _path=f"{_path}[{k}]")
        return
    assert not isinstance(actual, (tuple, list)), (
        f"{_path}: expected a scalar {expected!r}, got {type(actual).__name__}: {actual!r}")
    try:
        a = _as_real(actual, _path)
    except TypeError as exc:
        raise AssertionError(str(exc)) from None
    e = _as_real(expected, f"expected {_path}")
    if math.isnan(e):
        assert math.isnan(a), f"{_path}: expected nan, got {a!r}"
        return
    if math.isinf(e):
        assert a == e, f"{_path}: expected {e!r}, got {a!r}"
        return
    assert math.isfinite(a), f"{_path}: expected {e!r}, got {a!r}"
    err = abs(a - e)
    tol = atol + rtol * abs(e)
    assert err <= tol, (
        f"{_path}: got {a!r}, expected {e!r} (abs err {err:.3g} > tol {tol:.3g}; "
        f"rtol={rtol:g}, atol={atol:g})")
