"""An untaken branch never makes a function fail (issue #37).

A statement s2sad refuses inside an arm of an `if` is compiled as a raise of the same
located error where it would run (frontend/deferred.py). The derivative of the paths that
do not reach it is checked against central differences in float64, in each mode;
the path that reaches it raises the error, of the same class, naming this file and the
statement's line, in each mode. The second derivatives are checked against second
central differences, or the analytic formula.
"""
import importlib.util
import inspect
import math
import os
import subprocess
import sys

import numpy as np
import pytest

import s2sad
from s2sad import MissingRuleError, UnsupportedSyntaxError


def assert_close(actual, expected, rtol=1e-6, atol=1e-8):
    if isinstance(expected, tuple):
        assert isinstance(actual, tuple) and len(actual) == len(expected), actual
        for a, e in zip(actual, expected):
            assert_close(a, e, rtol, atol)
        return
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol)


def fd_hessian(f, x, h=1e-4):
    """Second central differences in float64 of `f` at the array `x`."""
    n = len(x)
    out = np.zeros((n, n))
    for k in range(n):
        for m in range(n):
            def at(a, b):
                y = x.copy()
                y[k] += a * h
                y[m] += b * h
                return f(y)
            out[k, m] = (at(1, 1) - at(1, -1) - at(-1, 1) + at(-1, -1)) / (4 * h * h)
    return out


def fd_grad(f, args, wrt):
    """Central differences in float64 of `f` at `args`, for the argument `wrt` (an index:
    an array or a number like the argument) or each of a tuple of them."""
    if isinstance(wrt, tuple):
        return tuple(fd_grad(f, args, i) for i in wrt)
    x = np.asarray(args[wrt], dtype=float)
    out = np.zeros(x.shape)
    for k in np.ndindex(x.shape):
        h = 1e-6 * max(1.0, abs(x[k]))
        up, down = x.copy(), x.copy()
        up[k] += h
        down[k] -= h
        at, below = list(args), list(args)
        at[wrt], below[wrt] = (up, down) if x.ndim else (float(up), float(down))
        out[k] = (f(*at) - f(*below)) / (2 * h)
    return out if x.ndim else float(out)


def big(x):
    y = np.sin(x)
    if np.any(y > 5):                                   # never true for real x
        y = np.apply_along_axis(np.cumsum, 0, y)        # no rule
    return np.sum(y * x)


def gated(x, s):
    y = np.sin(x) * s
    if s > 1.0:
        y = np.apply_along_axis(np.cumsum, 0, y)        # no rule
        y = y * 2.0
    return np.sum(y * x)


def unresolved(x, s):
    y = np.cos(x) * s
    if s > 1.0:
        y = getattr(np, "sin" if s > 9.0 else "cos")(y)  # a call s2sad cannot resolve
    return np.sum(y ** 2)


def chain(x, s):
    y = np.sin(x)
    if s > 10.0:
        y = y * 3.0
    elif s > 5.0:
        y = np.apply_along_axis(np.cumsum, 0, y)        # no rule
    elif s > 2.0:
        y = getattr(np, "sin" if s > 9.0 else "cos")(y)  # a call s2sad cannot resolve
    else:
        y = y * s
    return np.sum(y * x)


def both_arms(x, s):
    y = np.exp(x) * s
    if s > 1.0:
        if s > 2.0:
            y = np.apply_along_axis(np.cumsum, 0, y)    # no rule
        else:
            y = getattr(np, "sin" if s > 9.0 else "cos")(y)  # a call s2sad cannot resolve
    return np.sum(y * y)


def looped(x, s):
    total = 0.0
    for i in range(3):
        total = total + np.sum(np.sin(x) * i)
        if s > i + 5.0:
            total = np.apply_along_axis(np.cumsum, 0, x * total)   # no rule
    return total * s


def whiled(x, s):
    y = x
    k = 0
    while k < 3:
        y = np.sin(y) * s
        if s > k + 1.0:
            y = np.apply_along_axis(np.cumsum, 0, y)    # no rule
            break
        k += 1
    return np.sum(y * x)


def helper(y, s):
    if s > 1.0:
        y = np.apply_along_axis(np.cumsum, 0, y)        # no rule
    return y * s


def calls_helper(x, s):
    y = helper(np.tanh(x), s)
    return np.sum(y * x)


def nested(x, s):
    def inner(y):
        if s > 1.0:
            y = np.apply_along_axis(np.cumsum, 0, y)    # no rule
        return np.sin(y)
    return np.sum(inner(x) * x)


def scalar(x, s):
    y = math.sin(x) * s
    if s > 1.0:
        y = np.apply_along_axis(np.cumsum, 0, y)        # no rule
    return y * x


def at_top(x):
    y = np.apply_along_axis(np.cumsum, 0, x)            # no rule, on every path
    return np.sum(y)


def every_arm(x, s):
    if s > 1.0:
        y = np.apply_along_axis(np.cumsum, 0, x)        # no rule
    else:
        y = getattr(np, "sin" if s > 9.0 else "cos")(x)  # a call s2sad cannot resolve
    return np.sum(y)


def in_loop_body(x, s):
    total = 0.0
    for i in range(3):
        total = total + np.sum(np.apply_along_axis(np.cumsum, 0, x))   # no rule
    return total * s


def in_try(x, s):
    y = np.sin(x)
    if s > 1.0:
        try:
            y = np.apply_along_axis(np.cumsum, 0, y)    # no rule
        finally:
            y = y * 2.0
    return np.sum(y)


def _line(fn, text):
    """The line of this file where `fn`'s source has `text`."""
    lines, first = inspect.getsourcelines(fn)
    return first + next(k for k, line in enumerate(lines) if text in line)


def _located(info, fn, text):
    """`info` is of the error refused at the line of `fn` (of the helper it calls, where
    the refused statement is) that has `text`."""
    fn = {calls_helper: helper}.get(fn, fn)
    message = str(info.value)
    assert message.startswith(f"{__file__}:{_line(fn, text)}"), message
    assert "s2sad/" not in message.split("\n")[0]


X = np.array([0.3, -0.7, 1.1])
V = np.array([0.5, 0.25, -1.0])
APPLY = "apply_along_axis(np.cumsum"
VMAP = 'getattr(np, "sin"'

# (function, the argument s where no refused statement runs, where one runs, its text, class)
CASES = [
    (gated, 0.5, 1.5, APPLY, MissingRuleError),
    (unresolved, 0.5, 1.5, VMAP, MissingRuleError),
    (chain, 11.0, 6.0, APPLY, MissingRuleError),
    (chain, 1.5, 3.0, VMAP, MissingRuleError),
    (chain, 1.5, 6.0, APPLY, MissingRuleError),
    (both_arms, 0.5, 2.5, APPLY, MissingRuleError),
    (both_arms, 0.5, 1.5, VMAP, MissingRuleError),
    (looped, 1.0, 6.5, APPLY, MissingRuleError),
    (whiled, 0.5, 2.5, APPLY, MissingRuleError),
    (calls_helper, 0.5, 1.5, APPLY, MissingRuleError),
    (nested, 0.5, 1.5, APPLY, MissingRuleError),
]
IDS = [f"{c[0].__name__}-{c[3][:5]}-{c[1]}-{c[2]}" for c in CASES]


def _of_x(fn, s):
    def f(x):
        return fn(x, s)
    return f


@pytest.mark.parametrize("fn, untaken, taken, text, error", CASES, ids=IDS)
def test_reverse_modes(fn, untaken, taken, text, error):
    expected = fd_grad(fn, (X, untaken), wrt=(0, 1))
    assert_close(s2sad.grad(fn, wrt=(0, 1))(X, untaken), expected)
    value, grads = s2sad.value_and_grad(fn, wrt=(0, 1))(X, untaken)
    assert_close(value, fn(X, untaken))
    assert_close(grads, expected)
    out, pullback = s2sad.vjp(fn, X, untaken)
    assert_close(pullback(1.0)[0], expected[0])
    for derivative in (s2sad.grad(fn, wrt=(0, 1)), s2sad.value_and_grad(fn)):
        with pytest.raises(error) as info:
            derivative(X, taken)
        _located(info, fn, text)
    with pytest.raises(error) as info:
        s2sad.vjp(fn, X, taken)
    _located(info, fn, text)


@pytest.mark.parametrize("fn, untaken, taken, text, error", CASES, ids=IDS)
def test_forward_modes(fn, untaken, taken, text, error):
    f = _of_x(fn, untaken)
    expected = fd_grad(f, (X,), wrt=0)
    out, tangent = s2sad.jvp(f, (X,), (V,))
    assert_close(out, f(X))
    assert_close(tangent, expected @ V)
    assert_close(s2sad.jacfwd(f)(X), expected)
    with pytest.raises(error) as info:
        s2sad.jvp(_of_x(fn, taken), (X,), (V,))
    _located(info, fn, text)
    with pytest.raises(error) as info:
        s2sad.jacfwd(_of_x(fn, taken))(X)
    _located(info, fn, text)


@pytest.mark.parametrize("fn, untaken, taken, text, error", CASES[:4], ids=IDS[:4])
def test_second_derivatives(fn, untaken, taken, text, error):
    f = _of_x(fn, untaken)
    expected = fd_hessian(f, X)
    assert_close(s2sad.hessian(f)(X), expected, rtol=1e-5, atol=1e-6)
    assert_close(s2sad.hvp(f)(X, V), expected @ V, rtol=1e-5, atol=1e-6)
    for second in (s2sad.hessian(_of_x(fn, taken)), s2sad.jacfwd(s2sad.grad(
            _of_x(fn, taken)))):
        with pytest.raises(error) as info:
            second(X)
        _located(info, fn, text)
    with pytest.raises(error) as info:
        s2sad.hvp(_of_x(fn, taken))(X, V)
    _located(info, fn, text)


@pytest.mark.parametrize("s", [0.5, 1.5])
def test_grad_of_grad(s):
    second = s2sad.grad(s2sad.grad(scalar))
    if s < 1.0:
        expected = s * (2 * math.cos(0.4) - 0.4 * math.sin(0.4))    # of sin(x) * s * x
        assert_close(second(0.4, s), expected)
        return
    with pytest.raises(MissingRuleError) as info:
        second(0.4, s)
    _located(info, scalar, APPLY)


def test_the_issue_example():
    assert_close(s2sad.grad(big)(X), fd_grad(big, (X,), wrt=0))


def test_shown_as_a_raise_with_its_reason():
    text = s2sad.source(gated)
    line = _line(gated, APPLY)
    assert (f"raise _s2s_refused({line})  # MissingRuleError when this runs: s2sad has no "
            "derivative rule for np.apply_along_axis\n") in text
    forward, pullback = text.split("def gated_pullback")
    assert f"_s2s_refused({line})" in forward and "_s2s_refused" not in pullback
    assert "y * 2.0" not in forward     # (the statement after the refused one, in its arm)


def test_a_refusal_on_every_path_stays_a_refusal_when_compiling():
    with pytest.raises(MissingRuleError) as info:
        s2sad.grad(at_top)(X)
    _located(info, at_top, APPLY)
    with pytest.raises(MissingRuleError) as info:
        s2sad.grad(in_loop_body)(X, 0.5)
    _located(info, in_loop_body, APPLY)
    for grad in (s2sad.grad(every_arm), s2sad.jacfwd(every_arm)):
        with pytest.raises(MissingRuleError) as info:
            grad(X, 0.5)
        _located(info, every_arm, VMAP)


def aliased(x, s):
    y = x * 2.0
    v = y[0:2]
    if s > 1.0:
        v *= s                                          # a write y would see
    return np.sum(y * x)


def test_a_write_in_a_branch_that_a_read_after_it_sees_stays_a_refusal():
    with pytest.raises(UnsupportedSyntaxError) as info:
        s2sad.grad(aliased)(X, 0.5)     # (located at the read, outside the branch)
    _located(info, aliased, "return np.sum(y * x)")


def test_a_refusal_in_a_try_block_stays_a_refusal_when_compiling():
    with pytest.raises(MissingRuleError) as info:
        s2sad.grad(in_try)(X, 0.5)
    _located(info, in_try, APPLY)


def test_an_unsupported_form_in_a_branch_is_deferred():
    def f(x, s):
        y = x * s
        if s > 1.0:
            async def g():      # (a form the front end refuses)
                return 1
        return np.sum(y * y)
    assert_close(s2sad.grad(f)(X, 0.5), fd_grad(f, (X, 0.5), wrt=0))
    with pytest.raises(UnsupportedSyntaxError) as info:
        s2sad.grad(f)(X, 1.5)
    _located(info, f, "async def g")
    assert info.value.lineno == _line(f, "async def g")


@pytest.mark.parametrize("s", [0.5, 1.5])
def test_numba_backend(s):
    pytest.importorskip("numba")
    f = s2sad.grad(scalar, wrt=(0, 1), backend="numba")
    if s < 1.0:
        assert_close(f(0.4, s), fd_grad(scalar, (0.4, s), wrt=(0, 1)))
        out, tangent = s2sad.jvp(scalar, (0.4, s), (1.0, 0.5), backend="numba")
        assert_close(tangent, np.dot(fd_grad(scalar, (0.4, s), wrt=(0, 1)), [1.0, 0.5]))
        return
    with pytest.raises(MissingRuleError) as info:
        f(0.4, s)
    _located(info, scalar, APPLY)
    with pytest.raises(MissingRuleError) as info:
        s2sad.jvp(scalar, (0.4, s), (1.0, 0.5), backend="numba")
    _located(info, scalar, APPLY)


def dicts(x, s):
    y = np.sin(x)
    if s > 1.0:
        d = {"a": y, "b": y * 2.0}                      # no dict in the numba backend
        y = d["a"] + d["b"]
    return np.sum(y * x)


@pytest.mark.parametrize("s", [0.5, 1.5])
def test_numba_backend_refusal_in_a_branch(s):
    pytest.importorskip("numba")
    from s2sad import NativeBackendError
    grad = s2sad.grad(dicts, backend="numba")
    if s < 1.0:
        assert_close(grad(X, s), fd_grad(dicts, (X, s), 0))
        return
    with pytest.raises(NativeBackendError) as info:
        grad(X, s)
    _located(info, dicts, '{"a": y')
    assert_close(s2sad.grad(dicts)(X, s), fd_grad(dicts, (X, s), 0))   # (Python backend)


def test_show_command():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run([sys.executable, "-m", "s2sad", "show",
                          "tests/test_untaken_branches.py:gated", "--wrt", "x,s"],
                         cwd=root, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("def gated_vjp(x, s):")
    assert (f"raise _s2s_refused({_line(gated, APPLY)})  # MissingRuleError when this runs"
            in out.stdout)


def test_export(tmp_path):
    path = tmp_path / "gated_exported.py"
    s2sad.export(gated, path, wrt=(0, 1), args=(X, 0.5))
    text = path.read_text()
    assert "import s2sad" not in text and "class _s2s_refused(Exception):" in text
    spec = importlib.util.spec_from_file_location("gated_exported", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert_close(module.gated_grad(X, 0.5), fd_grad(gated, (X, 0.5), (0, 1)))
    with pytest.raises(Exception) as info:
        module.gated_grad(X, 1.5)
    assert type(info.value).__name__ == "MissingRuleError"
    with pytest.raises(MissingRuleError) as expected:
        s2sad.grad(gated)(X, 1.5)
    assert str(info.value) == str(expected.value)


@pytest.mark.parametrize("s", [0.5, 1.5])
def test_numba_backend_second_derivatives(s):
    pytest.importorskip("numba")
    f = _of_x(gated, s)
    made = [s2sad.hessian(f, backend="numba"), s2sad.jacfwd(f, backend="numba")]
    if s < 1.0:
        expected = fd_hessian(f, X)
        assert_close(made[0](X), expected, rtol=1e-5, atol=1e-6)
        assert_close(s2sad.hvp(f, backend="numba")(X, V), expected @ V, rtol=1e-5, atol=1e-6)
        assert_close(made[1](X), fd_grad(f, (X,), 0))
        return
    for derivative in made:
        with pytest.raises(MissingRuleError) as info:
            derivative(X)
        _located(info, gated, APPLY)
    with pytest.raises(MissingRuleError) as info:
        s2sad.hvp(f, backend="numba")(X, V)
    _located(info, gated, APPLY)


def converged(x, s):
    y = x * s
    n = 0
    while np.sum(y * y) > 0.01:
        y = y * 0.5
        n += 1
        if n > 100:
            raise RuntimeError("no convergence")        # the user's own raise
    return np.sum(y * x)


def converged_or_refused(x, s):
    y = x * s
    n = 0
    while np.sum(y * y) > 0.01:
        y = np.sin(y) * 0.5
        n += 1
        if n > 100:
            y = np.apply_along_axis(np.cumsum, 0, y)    # no rule
    return np.sum(y * x)


@pytest.mark.parametrize("fn", [converged, converged_or_refused])
def test_numba_backend_an_arm_that_raises_in_a_loop(fn):
    # the arm that raises adds nothing to the pullback: no recorded test, no zero adjoint
    # of another type than the one the loop carries (Numba could not unify them)
    pytest.importorskip("numba")
    expected = fd_grad(fn, (X, 1.5), (0, 1))
    assert_close(s2sad.grad(fn, wrt=(0, 1), backend="numba")(X, 1.5), expected)
    assert_close(s2sad.grad(fn, wrt=(0, 1))(X, 1.5), expected)
    f = _of_x(fn, 1.5)
    assert_close(s2sad.hessian(f, backend="numba")(X), fd_hessian(f, X), rtol=1e-5, atol=1e-6)
    pullback = s2sad.source(fn, wrt=(0, 1)).split("_pullback(")[1]
    assert " if " not in pullback and "else" not in pullback     # (nor a test taped for it)


def history(x, s):
    ys = []
    y = x * s
    for i in range(4):
        ys.append(y)
        y = np.sin(y) * 0.5
        if np.any(np.isnan(y)):
            raise ValueError("diverged")                # the user's own raise
    return np.sum(ys[1] * ys[-1])


def test_a_list_appended_to_in_a_loop_that_may_raise():
    # (the append's list was refused as another name's stale list, read after the write)
    expected = fd_grad(history, (X, 1.5), (0, 1))
    assert_close(s2sad.grad(history, wrt=(0, 1))(X, 1.5), expected)
    _, tangent = s2sad.jvp(history, (X, 1.5), (V, 0.5))
    assert_close(tangent, np.dot(expected[0], V) + 0.5 * expected[1])
    f = _of_x(history, 1.5)
    assert_close(s2sad.hessian(f)(X), fd_hessian(f, X), rtol=1e-5, atol=1e-6)
