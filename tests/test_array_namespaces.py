"""SciPy's code written for the array API (`xp = array_namespace(y)`, `xp.sum(...)`),
differentiated through NumPy's functions (before_ad/array_namespaces.py), against
central differences in float64 in grad, vjp, jvp and hessian; what it cannot read is
refused at the user's line, never differentiated wrong."""
import numpy as np
import pytest

from optional import require

scipy = require("scipy", "scipy")
from scipy import integrate, signal  # noqa: E402

from numpy_cases import Samples, check_hessian, check_jvp, check_vjp, fd_array_grad  # noqa: E402

import s2sad  # noqa: E402
from s2sad.errors import MissingRuleError, UnsupportedSyntaxError  # noqa: E402
from s2sad.rules import namespaces  # noqa: E402

S = Samples(20261207)
XS = np.sort(S.uniform((7,), 0.0, 2.0))
W = S.real((7,))


def velocity_to_position(v):
    # a scientist's cumulative integral: positions from sampled velocities
    position = integrate.cumulative_trapezoid(v * v, XS[:v.shape[-1]], initial=0)
    return np.sum(position * W[:v.shape[-1]])


def spaced_by_dx(v):
    return np.sum(np.sin(integrate.cumulative_trapezoid(v, dx=0.3)))


def along_rows(m):
    return np.sum(integrate.cumulative_trapezoid(np.exp(m), XS[:m.shape[0]], axis=0) ** 2)


def romberg(v):
    # (2**k + 1 samples)
    return integrate.romb(np.cos(v) * v, dx=0.25)


SCALARS = {
    "cumulative_trapezoid_x": (velocity_to_position, (S.real((7,)),)),
    "cumulative_trapezoid_dx": (spaced_by_dx, (S.real((6,)),)),
    "cumulative_trapezoid_axis0": (along_rows, (S.real((5, 3)),)),
    "romb": (romberg, (S.real((9,)),)),
}


@pytest.mark.parametrize("name", sorted(SCALARS))
def test_grad_matches_central_differences(name):
    fn, args = SCALARS[name]
    g = s2sad.grad(fn)(*args)
    np.testing.assert_allclose(g, fd_array_grad(fn, args, 0), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name", sorted(SCALARS))
def test_vjp_and_jvp_match_central_differences(name):
    fn, args = SCALARS[name]
    check_vjp(fn, args)
    check_jvp(fn, args)


@pytest.mark.parametrize("name", ["cumulative_trapezoid_x", "romb"])
def test_hessian_matches_differences_of_differences(name):
    fn, args = SCALARS[name]
    check_hessian(fn, args[0])


def cumulative_trapezoid_array(v):
    return integrate.cumulative_trapezoid(v ** 3, XS[:v.shape[0]])


def test_an_array_result_in_forward_mode():
    v = S.real((7,))
    jac = s2sad.jacfwd(cumulative_trapezoid_array)(v)
    columns = [fd_array_grad(lambda u, k=k: cumulative_trapezoid_array(u)[k], (v,), 0)
               for k in range(6)]
    np.testing.assert_allclose(jac, np.array(columns), rtol=1e-6, atol=1e-8)


def smoothed(v):
    return np.sum(signal.fftconvolve(v, np.array([0.25, 0.5, 0.25]), mode="same") ** 2)


def test_scipy_code_it_cannot_read_is_refused_at_the_users_line():
    # fftconvolve picks its transforms from the namespace by a branch: not followed
    with pytest.raises(MissingRuleError, match="fftconvolve") as info:
        s2sad.grad(smoothed)(S.real((6,)))
    assert f"{__file__}:{smoothed.__code__.co_firstlineno + 1}" in str(info.value)


def test_the_namespace_of_other_arrays_is_refused():
    error = UnsupportedSyntaxError("not NumPy's")
    assert namespaces.numpy_namespace(namespaces.compat_numpy(), error) is \
        namespaces.compat_numpy()
    with pytest.raises(UnsupportedSyntaxError, match="not NumPy's"):
        namespaces.numpy_namespace(np, error)


def test_scipy_is_not_changed():
    # the derivative calls NumPy's functions; SciPy's own run as they are
    v = S.real((7,))
    before = integrate.cumulative_trapezoid(v * v, XS, initial=0).copy()
    value, _ = s2sad.value_and_grad(velocity_to_position)(v)
    assert value == pytest.approx(velocity_to_position(v), rel=1e-12)
    np.testing.assert_array_equal(integrate.cumulative_trapezoid(v * v, XS, initial=0), before)


def test_export_checks_the_namespace_when_it_runs(tmp_path):
    """The exported module makes the check s2sad's code makes (SciPy's namespace is
    NumPy's), with the same located error, and copies nothing of s2sad's registry."""
    import importlib.util
    v = S.real((9,))
    path = tmp_path / "romberg_exported.py"
    text = s2sad.export(romberg, path, args=(v,))
    assert "import s2sad" not in text and "_s2s_namespace_error = UnsupportedSyntaxError(" in text
    assert "def _s2s_define(" not in text            # (the check declares nothing)
    spec = importlib.util.spec_from_file_location("romberg_exported", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    np.testing.assert_allclose(module.romberg_grad(v), fd_array_grad(romberg, (v,), 0),
                               rtol=1e-7, atol=1e-9)
    with pytest.raises(Exception) as info:
        module._s2s_numpy_namespace(np, module._s2s_namespace_error)
    assert type(info.value).__name__ == "UnsupportedSyntaxError"
    assert "integrate/_quadrature.py:" in str(info.value) and "are not NumPy's" in str(
        info.value)
