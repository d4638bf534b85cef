"""Complex values inside differentiated functions (issue #40; before it, #34 item 4).

A complex value that meets a differentiated one is differentiated where each rule it
reaches declares it holds for complex values (docs/complex.md): those functions are
checked here against central finite differences of the function (tests/oracle.py,
tests/numpy_cases.py), in every mode (np.fft's in tests/test_fft.py). Where a rule does
not (`np.fft.ihfft`, `np.emath`,
`np.linalg.eig`), s2sad refuses with a `ComplexValueError` that names the line of this
file where the value meets it, at compile time where s2sad sees it, at run time where
only the run tells (a complex array argument, `np.roots` of a constant, what a function
called as it is returns). Real code is unchanged. The convention for complex arguments
and the rewritten autograd tests are in tests/test_complex_rules.py.
"""
import cmath
import importlib.util
import inspect
import math
import warnings

import numpy as np
import pytest

import s2sad
from s2sad import ComplexValueError
from s2sad.errors import NativeBackendError
from numpy_cases import compare, fd_array_grad, fd_hessian
from oracle import fd_grad

HAS_NUMBA = importlib.util.find_spec("numba") is not None

C = np.array([1.0 + 2.0j, 0.5j, 1.0])
PHASE = 0.3j
SIGMA_Y = np.array([[0.0, -1j], [1j, 0.0]])
ROTATION = np.array([[0.0, -1.0], [1.0, 0.0]])     # eigenvalues i and -i
SIGNAL = np.array([1.0, 0.0, -1.0, 0.5])


def assert_close(actual, expected, rtol=1e-6, atol=1e-8):
    """Elementwise closeness of a real number or array to the oracle's."""
    assert not np.iscomplexobj(actual), actual
    problem = compare(actual, expected, rtol, atol, "derivative")
    assert problem is None, problem


def line_of(fn, text):
    """`file:line` of the first line of `fn` that holds `text`."""
    lines, start = inspect.getsourcelines(fn)
    k = next(i for i, line in enumerate(lines) if text in line)
    return f"{inspect.getsourcefile(fn)}:{start + k}"


# -- complex values s2sad sees when it compiles -------------------------------------------
def literal(x):
    z = np.exp(1j * x)
    return np.sum(np.abs(z * x))


def literal_elsewhere(x):
    c = np.exp(0.5j)
    return np.sum(np.real(c * x) ** 2)


def complex_call(x):
    z = complex(x[0], 1.0)
    return abs(z) ** 2 + np.sum(x)


def cmath_call(x):
    return cmath.exp(x[0]).real + np.sum(x)


def complex_type(x):
    return np.sum(np.abs(np.complex128(x)))


def dtype_keyword(x):
    z = np.asarray(x, dtype=complex)
    return np.sum(np.abs(z) ** 2)


def dtype_string(x):
    z = np.zeros(3, dtype="complex128") + x
    return np.sum(np.abs(z))


def astype(x):
    return np.sum(np.abs(x.astype(np.complex64)))


def astype_string(x):
    return np.sum(np.abs(x.astype("c16")))


def fourier(x):
    return np.sum(np.abs(np.fft.fft(x)) ** 2)


def hermitian_fourier(x):      # (ihfft has no rule yet)
    return np.sum(np.abs(np.fft.ihfft(x)) ** 2)


def emath(x):
    return np.sum(np.abs(np.emath.sqrt(x - 2.0)))


def scimath(x):
    return np.sum(np.real(np.lib.scimath.log(x)))


def conjugate(x):          # (of a real value: allowed)
    return np.sum(np.real(x * np.conj(x)))


def conjugate_method(x):
    return np.sum(x.conj() * x)


def setitem_complex(x):
    z = np.zeros(3, dtype=complex)
    z[0] = 1j * x[0]
    z[1:] = x[1:] * np.exp(1j * x[:2])
    return np.sum(np.abs(z + 0.5) ** 3)


def global_array(x):
    return np.real(np.sum(C * x))


def global_number(x):
    return np.sum(np.real(PHASE * x))


def closure_of(c):
    def inner(x):
        return np.sum(np.real(c * x))
    return inner


closure = closure_of(2.0 - 1.0j)


def eigen(x):
    w, v = np.linalg.eig(np.outer(x, x) + np.eye(3))
    return np.sum(np.real(w))


def roots_of_x(x):
    return np.sum(np.real(np.roots(x)))


def qubit(theta):
    """The expectation of sigma_y in the state cos(a/2)|0> + e^(ib) sin(a/2)|1>."""
    psi = np.array([np.cos(theta[0] / 2), np.sin(theta[0] / 2)])
    psi = psi * np.array([1.0, np.exp(1j * theta[1])])
    return np.real(np.conj(psi) @ SIGMA_Y @ psi)


def qubit_real(theta):
    """`qubit` with real arithmetic: <sigma_y> = sin(a) sin(b)."""
    return np.sin(theta[0]) * np.sin(theta[1])


SUPPORTED = [literal, literal_elsewhere, complex_call, cmath_call, complex_type, dtype_keyword,
             dtype_string, astype_string, setitem_complex, global_array, global_number,
             closure, qubit, fourier]

REFUSED = [
    (hermitian_fourier, "np.fft.ihfft", "Fourier"),
    (emath, "np.emath.sqrt", "np.emath"),
    (scimath, "scimath.log", "np.emath"),
    (eigen, "np.linalg.eig", "np.linalg.eigh"),
    (roots_of_x, "np.roots", "may give complex values"),
]

MODES = ["grad", "value_and_grad", "vjp", "jvp", "jacfwd", "jacrev", "hessian", "hvp",
         "export"]


def derivative(mode, f, args, wrt=0, tmp_path=None):
    """The derivative of `f` at `args` by `mode`, with respect to argument `wrt`."""
    x = args[wrt]
    if mode == "grad":
        return s2sad.grad(f, wrt=wrt)(*args)
    if mode == "value_and_grad":
        return s2sad.value_and_grad(f, wrt=wrt)(*args)
    if mode == "vjp":
        y, pullback = s2sad.vjp(f, *args)
        return pullback(1.0)[wrt]
    if mode == "jvp":
        tangents = [np.ones_like(a) if i == wrt else None for i, a in enumerate(args)]
        return s2sad.jvp(f, args, tangents)
    if mode == "jacfwd":
        return s2sad.jacfwd(f, wrt=wrt)(*args)
    if mode == "jacrev":
        return s2sad.jacrev(f, wrt=wrt)(*args)
    if mode == "hessian":
        return s2sad.hessian(f, wrt=wrt)(*args)
    if mode == "hvp":
        return s2sad.hvp(f, wrt=wrt)(*args, np.ones_like(x))
    if mode == "export":
        return s2sad.export(f, None if tmp_path is None else tmp_path / "f.py", wrt=wrt,
                            args=args)
    raise AssertionError(mode)


def check_mode(mode, f, x, tmp_path, rtol=1e-6, atol=1e-8):
    """The derivative of real-valued `f` at real `x` by `mode`, against central
    differences."""
    expected = fd_array_grad(f, (x,), 0)
    got = derivative(mode, f, (x,), tmp_path=tmp_path)
    if mode == "value_and_grad":
        assert_close(got[0], f(x))
        got = got[1]
    if mode == "jvp":
        assert_close(got[1], np.sum(expected), rtol, atol)
    elif mode in ("hessian", "hvp"):
        hessian = fd_hessian(f, x)
        assert_close(got, hessian if mode == "hessian" else hessian @ np.ones_like(x),
                     rtol=1e-4, atol=1e-6)
    elif mode == "export":
        spec = importlib.util.spec_from_file_location("f", tmp_path / "f.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        assert_close(getattr(module, f"{f.__name__}_grad")(x), expected, rtol, atol)
    else:
        assert_close(got, expected, rtol, atol)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f", SUPPORTED, ids=[f.__name__ for f in SUPPORTED])
def test_complex_intermediates(f, mode, tmp_path):
    """A real loss through complex intermediates, in every mode."""
    x = np.array([0.3, 0.7, 1.1]) if f not in (qubit,) else np.array([0.3, 0.7])
    check_mode(mode, f, x, tmp_path)


def test_single_precision_complex():
    """`x.astype(np.complex64)`: computed in single precision, as the function is."""
    x = np.array([0.3, 0.7, 1.1])
    assert_close(s2sad.grad(astype)(x), fd_array_grad(astype, (x,), 0), rtol=1e-2)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f, text, reason", REFUSED, ids=[c[0].__name__ for c in REFUSED])
def test_static_refusal(f, text, reason, mode):
    x = np.array([0.3, 0.7, 1.1])
    with pytest.raises(ComplexValueError) as caught:
        derivative(mode, f, (x,))
    message = str(caught.value)
    assert message.startswith(line_of(f, text) + ": "), message
    assert reason in message, message
    assert "so the derivative would be wrong" in message
    assert message.rstrip().endswith(text) or text in message.splitlines()[-1], message


def sign_of_complex(x):
    return np.sum(np.real(np.sign(np.exp(1j * x) + 0.5)))


def rotate(z, x):
    return z * x


def call_with_complex(x):
    return np.sum(np.real(rotate(np.exp(1j * x), x)))


@pytest.mark.parametrize("f, text, reason", [
    (sign_of_complex, "np.sign", "np.sign() of a complex value"),
    (call_with_complex, "rotate(np.exp(1j * x), x)", "no call of a Python function")])
def test_rule_for_real_values_only(f, text, reason):
    """A complex value that reaches a rule written for real values (np.sign, which has
    no derivative for real values but has one for complex ones), or a Python function
    s2sad would differentiate through, is refused where it does."""
    with pytest.raises(ComplexValueError) as caught:
        s2sad.grad(f)(np.array([0.3, 0.7, 1.1]))
    message = str(caught.value)
    assert message.startswith(line_of(f, text) + ": "), message
    assert reason in message, message


def test_qubit_real_formulation():
    """The refused qubit written with real arithmetic, as the message suggests, against
    finite differences and the analytic derivative (cos a sin b, sin a cos b)."""
    theta = np.array([0.4, 1.3])
    g = s2sad.grad(qubit_real)(theta)
    assert_close(g, fd_array_grad(qubit_real, (theta,), 0))
    assert_close(g, np.array([np.cos(0.4) * np.sin(1.3), np.sin(0.4) * np.cos(1.3)]))


@pytest.mark.skipif(not HAS_NUMBA, reason="Numba is not installed")
def test_static_refusal_numba():
    """The numba backend compiles no complex code yet: refused where it would."""
    def scalar(x):
        return abs(cmath.exp(1j * x) * x)
    with pytest.raises(NativeBackendError) as caught:
        s2sad.grad(scalar, backend="numba")(0.5)
    assert str(caught.value).startswith(line_of(scalar, "cmath.exp") + ": ")


# -- complex values that never meet a differentiated one ------------------------------
def spectrum_weights(x):
    w = np.abs(np.fft.fft(SIGNAL))
    return np.sum(w * x ** 2)


def real_of_constant(x):
    z = np.exp(0.25j) * np.exp(0.5j)
    return np.sum(x * z.real + x ** 2 * np.angle(z) + x ** 3 * np.imag(z))


def unrelated_complex(x):
    z = np.array([1j, 2.0])
    n = len(z)
    return np.sum(x ** 2) * n


@pytest.mark.parametrize("f", [spectrum_weights, real_of_constant, unrelated_complex,
                               conjugate, conjugate_method])
def test_inactive_complex_allowed(f):
    """Complex values that never meet a differentiated one, and the conjugate of a real
    value (the value itself), are differentiated."""
    x = np.array([0.3, -0.7, 1.1, 0.2])
    expected = fd_array_grad(f, (x,), 0)
    assert_close(s2sad.grad(f)(x), expected)
    value, g = s2sad.value_and_grad(f)(x)
    assert_close(value, f(x))
    assert_close(g, expected)
    assert_close(s2sad.vjp(f, x)[1](1.0)[0], expected)
    assert_close(s2sad.jvp(f, (x,), (np.ones(4),))[1], np.sum(expected))
    assert_close(s2sad.hessian(f)(x), fd_hessian(f, x), rtol=1e-4, atol=1e-6)


# -- complex values only the run tells --------------------------------------------------
def phase():
    return np.exp(0.5j)


def from_helper(x):
    c = phase()
    return np.sum(np.real(c * x))


def from_roots(x, p):
    r = np.roots(p)
    return np.sum(x * r[-1])


def from_eig(x):
    w = np.linalg.eig(ROTATION)[0]
    return np.sum(x * w[0])


def not_differentiated(x, c):
    return np.sum(np.real(x * c) ** 2)


def from_list(x, values):
    s = 0.0
    for v in values:
        s = s + np.sum(x * v)
    return s


def returned(x):
    return phase() * np.sum(x)


QUADRATIC = np.array([1.0, 0.0, 4.0])      # roots 2j and -2j
REAL_QUADRATIC = np.array([1.0, -3.0, 2.0])  # roots 2 and 1

RUNTIME = [
    (from_helper, (), "c * x"),
    (from_roots, (QUADRATIC,), "x * r[-1]"),
    (from_eig, (), "x * w[0]"),
    (from_list, ([1.0, 2j],), "x * v"),
    (returned, (), "phase() * "),
]


@pytest.mark.parametrize("mode", [m for m in MODES if m != "export"])
@pytest.mark.parametrize("f, rest, text", RUNTIME,
                         ids=[f"{c[0].__name__}-{i}" for i, c in enumerate(RUNTIME)])
def test_runtime_refusal(f, rest, text, mode):
    args = (np.array([0.3, 0.7, 1.1]),) + rest
    with pytest.raises(ComplexValueError) as caught:
        derivative(mode, f, args)
    message = str(caught.value)
    if mode == "vjp" and rest and not isinstance(rest[0], list):
        # vjp differentiates every positional argument: a complex one is refused first,
        # and np.roots of a differentiated p is refused where it is (a list that holds
        # complex and real numbers, read by a loop, where the loop reads it)
        assert message.startswith("argument 1 of" if np.iscomplexobj(rest[0]) else
                                  line_of(f, "np.roots(p)") + ": "), message
        return
    assert message.startswith(line_of(f, text) + ": "), message
    assert "so the derivative would be wrong" in message


@pytest.mark.parametrize("mode", ["grad", "value_and_grad", "jvp", "jacfwd", "jacrev",
                                  "hessian", "hvp"])
def test_argument_real_then_complex(mode):
    """The code compiled for a real array argument not differentiated is not run for a
    complex one, nor the other way round (the guards test the dtype; the modes without a
    guard compile per kind): each gets its own, right, derivative."""
    x, real, cplx = np.array([0.3, 0.7, 1.1]), np.array([1.0, -2.0, 0.5]), C
    for c in (real, cplx, real, cplx):
        expected = fd_array_grad(not_differentiated, (x, c), 0)
        got = derivative(mode, not_differentiated, (x, c))
        if mode == "value_and_grad":
            assert_close(got[0], not_differentiated(x, c))
            got = got[1]
        if mode == "jvp":
            assert_close(got[1], np.sum(expected))
        elif mode == "hessian":
            assert_close(got, fd_hessian(lambda v: not_differentiated(v, c), x), rtol=1e-4,
                         atol=1e-6)
        elif mode == "hvp":
            hessian = fd_hessian(lambda v: not_differentiated(v, c), x)
            assert_close(got, hessian @ np.ones(3), rtol=1e-4, atol=1e-6)
        else:
            assert_close(got, expected)


@pytest.mark.parametrize("mode", [m for m in MODES if m != "export"])
def test_complex_number_not_differentiated(mode):
    """A complex number argument is of a kind the code is specialised on (the guards
    test its class): the code takes it as complex, and differentiates through it."""
    x = np.array([0.3, 0.7, 1.1])
    f = not_differentiated
    for c in (0.5j, 1.5 - 0.5j):
        got = derivative(mode, f, (x, c))
        expected = fd_array_grad(f, (x, c), 0)
        if mode == "value_and_grad":
            got = got[1]
        if mode == "jvp":
            assert_close(got[1], np.sum(expected))
        elif mode in ("hessian", "hvp"):
            hessian = fd_hessian(lambda v: f(v, c), x)
            assert_close(got, hessian if mode == "hessian" else hessian @ np.ones(3),
                         rtol=1e-4, atol=1e-6)
        else:
            assert_close(got, expected)


def test_roots_real_at_run_time():
    """np.roots gives real roots here: the check passes and the gradient is right."""
    x = np.array([0.3, 0.7])
    expected = fd_array_grad(from_roots, (x, REAL_QUADRATIC), 0)
    assert_close(s2sad.grad(from_roots)(x, REAL_QUADRATIC), expected)
    with pytest.raises(ComplexValueError):
        s2sad.grad(from_roots)(x, QUADRATIC)
    assert_close(s2sad.grad(from_roots)(x, REAL_QUADRATIC), expected)


def test_complex_python_number_not_differentiated():
    def scaled(x, c):
        return math.sin(x) * c
    assert_close(s2sad.grad(scaled)(0.4, 2.0), fd_grad(scaled, (0.4, 2.0)))
    with pytest.raises(ComplexValueError) as caught:
        s2sad.grad(scaled)(0.4, 2.0j)
    assert str(caught.value).startswith(line_of(scaled, "math.sin(x) * c") + ": ")


@pytest.mark.skipif(not HAS_NUMBA, reason="Numba is not installed")
def test_runtime_refusal_numba():
    def scaled(x, c):
        return math.sin(x) * c
    d = s2sad.grad(scaled, backend="numba")
    assert_close(d(0.4, 2.0), fd_grad(scaled, (0.4, 2.0)))
    with pytest.raises(ComplexValueError) as caught:
        d(0.4, 2.0j)
    assert str(caught.value).startswith(line_of(scaled, "math.sin(x) * c") + ": ")
    with pytest.raises(ComplexValueError):
        s2sad.hvp(scaled, backend="numba")(0.4, 2.0j, 1.0)
    with pytest.raises(ComplexValueError):
        s2sad.jvp(scaled, (0.4, 2.0j), (1.0, None), backend="numba")
    with pytest.raises(ComplexValueError):
        d(0.4j, 2.0)


def test_export_checks(tmp_path):
    """An exported module checks what s2sad's code checks, with its own copy of the
    error (it runs without s2sad)."""
    path = tmp_path / "from_roots_derivatives.py"
    x = np.array([0.3, 0.7])
    s2sad.export(from_roots, path, kind="grad", args=(x, REAL_QUADRATIC))
    spec = importlib.util.spec_from_file_location("from_roots_derivatives", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert_close(module.from_roots_grad(x, REAL_QUADRATIC),
                 fd_array_grad(from_roots, (x, REAL_QUADRATIC), 0))
    with pytest.raises(Exception) as caught:
        module.from_roots_grad(x, QUADRATIC)
    assert type(caught.value).__name__ == "ComplexValueError"
    assert str(caught.value).startswith(line_of(from_roots, "x * r[-1]") + ": ")
    with pytest.raises(TypeError):      # exported for a real array p: not a complex one
        module.from_roots_grad(x, QUADRATIC.astype(complex))


# -- arguments to differentiate ----------------------------------------------------------
def sumsq(x):
    return np.sum(x * x)


def sumsq_dict(p):
    return np.sum(p["a"] ** 2)


def sumsq_list(v):
    return v[0] ** 2 + v[1] ** 2


#: The modes that take a complex array to differentiate (tests/test_complex_arrays.py)
TAKE_ARRAYS = ("grad", "value_and_grad", "vjp", "jvp", "hvp")
REFUSED = [(mode, f, x) for f, x in [(sumsq, np.array([1.0, 2j])),
                                     (sumsq_dict, {"a": np.array([1j])}),
                                     (sumsq_list, [1.0, 2j])]
           for mode in MODES if mode not in TAKE_ARRAYS]     # (containers of them too)


@pytest.mark.parametrize("mode, f, x", REFUSED,
                         ids=[f"{f.__name__}-{mode}" for mode, f, _ in REFUSED])
def test_complex_argument_refused(f, x, mode):
    with pytest.raises(ComplexValueError) as caught:
        derivative(mode, f, (x,))
    assert f"argument 0 of {f.__name__}" in str(caught.value)
    assert "s2sad differentiates with respect to complex numbers" in str(caught.value)


def test_second_derivative_refuses_complex():
    def cube(x):
        return x ** 3
    with pytest.raises(ComplexValueError):
        s2sad.grad(s2sad.grad(cube))(1.0j)
    assert_close(s2sad.grad(s2sad.grad(cube))(2.0), 12.0)


# -- real code is unchanged --------------------------------------------------------------
def logistic(w, X, y):
    z = X @ w
    return np.mean(np.logaddexp(0.0, z) - y * z)


def poly(x):
    return x * x + 3.0 * x


def test_real_code_has_no_check():
    assert "_s2s_check_real" not in s2sad.source(poly)
    d = s2sad.grad(poly)
    assert d(2.0) == 7.0
    assert "_s2s_check_real" not in d.source and "dtype" not in d.source
    X, y, w = np.ones((3, 2)), np.array([1.0, 0.0, 1.0]), np.array([0.1, -0.2])
    d = s2sad.grad(logistic)
    assert_close(d(w, X, y), fd_array_grad(logistic, (w, X, y), 0))
    assert "_s2s_check_real" not in d.source
    assert "_s2s_check_real" not in s2sad.source(logistic)
    assert "_s2s_check_real" not in s2sad.source(logistic, mode="forward")


class Subclass(np.ndarray):
    pass


def test_check_hoisted_out_of_loop():
    """The check of a value a loop reads runs once, before the loop."""
    def looped(x, c):
        s = 0.0
        for i in range(3):
            s = s + x * c
        return s
    # (an array of a subclass of ndarray is of unknown kind: complex or not, the run tells)
    text = s2sad.source(looped, at=(1.0, np.array([2j, 1.0]).view(Subclass)))
    assert text.count("_s2s_check_real(c,") == 1
    assert text.index("_s2s_check_real(c,") < text.index("for i in range(3)")
    assert_close(s2sad.grad(looped)(1.0, 2.0), fd_grad(looped, (1.0, 2.0)))


def phases_of_items(p):
    return np.sum(np.real(np.exp(1j * p[0]) * p[1]))


def test_container_items_meeting_complex_values():
    """The items of a tuple to differentiate are of unknown kind, checked real where
    they meet a complex value: their adjoints are the real parts (as a real argument's),
    not complex arrays cast back to real (a ComplexWarning)."""
    p = (np.array([0.3, 0.5]), np.array([1.0, 2.0]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g = s2sad.grad(phases_of_items)(p)
    for k in (0, 1):
        assert g[k].dtype == np.float64
        assert_close(g[k], fd_array_grad(
            lambda v, k=k: phases_of_items(tuple(v if i == k else p[i] for i in (0, 1))),
            (p[k],), 0))
    text = s2sad.source(phases_of_items, at=(p,))
    assert text.index("_s2s_check_real(t,") < text.index("_s2s_as_complex(t)")
