"""How a derivative is called, as the function is: a default value the function changes
in place (which Python keeps from call to call) is the object the function holds, and a
derivative changes it as one call of the function does; an argument passed by keyword,
of another type than its default, compiles the derivative for that type. Each value is
compared with the function's own, each derivative with central finite differences
(tests/oracle.py) or the analytic formula, in every mode."""
import importlib.util

import numpy as np
import pytest

import s2sad
from numpy_cases import fd_array_grad
from oracle import assert_close, fd_grad


# -- a default the function changes in place ------------------------------------------------
def make_accumulating():
    def accumulating(x, acc=[]):      # noqa: B006 - the default is the point
        acc.append(x)
        return x * len(acc)
    return accumulating


def test_value_and_grad_is_one_call_of_the_function():
    f, twin = make_accumulating(), make_accumulating()
    for n in (1, 2, 3):
        value, gradient = s2sad.value_and_grad(f)(2.0)
        assert value == twin(2.0) == 2.0 * n      # the list grows by one a call
        assert gradient == n                      # d/dx x * n
        assert f.__defaults__[0] == twin.__defaults__[0] == [2.0] * n


def test_every_mode_is_one_call_of_the_function():
    # d/dx x * n = n, d2/dx2 = 0, n counting the call's own append
    f = make_accumulating()
    calls = [lambda n: s2sad.value_and_grad(f)(2.0) == (2.0 * n, n),
             lambda n: s2sad.grad(f)(2.0) == n,
             lambda n: (lambda y, pullback: (y, pullback(1.0)))(*s2sad.vjp(f, 2.0))
             == (2.0 * n, (n,)),
             lambda n: s2sad.jvp(f, (2.0,), (1.0,)) == (2.0 * n, n),
             lambda n: s2sad.hessian(f)(2.0) == 0.0,
             lambda n: s2sad.hvp(f)(2.0, 1.0) == 0.0,
             lambda n: s2sad.grad(s2sad.grad(f))(2.0) == 0.0]
    for n, call in enumerate(calls, 1):
        assert call(n)
        assert f.__defaults__[0] == [2.0] * n


def test_a_default_changed_before_the_derivative_is_called_is_read_as_it_is():
    f = make_accumulating()
    f(1.0)
    f(1.0)
    assert s2sad.value_and_grad(f)(2.0) == (6.0, 3.0)
    assert f.__defaults__[0] == [1.0, 1.0, 2.0]


def test_a_list_passed_is_not_changed():
    f = make_accumulating()
    given = [1.0]
    assert s2sad.value_and_grad(f)(2.0, given) == (4.0, 2.0)
    assert given == [1.0] and f.__defaults__[0] == []


def running_sum(x, total=np.zeros(2)):      # noqa: B008
    total[0] = total[0] + x * x
    total[1] = total[1] + 1.0
    return np.sum(x * total)


def test_an_array_default_in_every_mode():
    start = running_sum.__defaults__[0].copy()
    for _ in range(2):
        before = running_sum.__defaults__[0].copy()

        def fresh(x, before=before):
            return running_sum(x, before.copy())
        x = 0.7
        want = fd_grad(fresh, (x,))
        value, gradient = s2sad.value_and_grad(running_sum)(x)
        assert value == fresh(x)
        assert_close(gradient, want, rtol=1e-6)
        np.testing.assert_array_equal(running_sum.__defaults__[0], before + [x * x, 1.0])
    # vjp keeps the change once, and its pullback reads the values of the call
    before = running_sum.__defaults__[0].copy()
    value, pullback = s2sad.vjp(running_sum, 0.7)
    assert_close(pullback(1.0), (fd_grad(lambda x: running_sum(x, before.copy()), (0.7,)),))
    np.testing.assert_array_equal(running_sum.__defaults__[0], before + [0.49, 1.0])
    assert not np.array_equal(start, running_sum.__defaults__[0])


def squares_kept(x, seen=[]):       # noqa: B006
    seen.append(1.0)
    return np.sum(x * x) * len(seen)


def test_hessians_and_jacobians_are_those_of_one_call():
    # one product per element: each runs on the default of the call, kept once
    for make in (lambda: s2sad.hessian(squares_kept),
                 lambda: s2sad.jacfwd(s2sad.grad(squares_kept))):
        n = len(squares_kept.__defaults__[0]) + 1
        np.testing.assert_allclose(make()(np.ones(3)), 2.0 * n * np.eye(3))
        assert len(squares_kept.__defaults__[0]) == n


def rebinds_its_default(x, acc=[]):     # noqa: B006
    acc.append(x)
    acc = acc[-2:]
    return x * len(acc)


def test_a_default_changed_in_place_and_rebound_is_refused():
    with pytest.raises(s2sad.UnsupportedSyntaxError, match="is assigned here") as info:
        s2sad.grad(rebinds_its_default)(1.0)
    assert info.value.filename == __file__
    assert "acc=None" in str(info.value)


def array_default(x, buf=np.zeros(3)):      # noqa: B008
    buf[0] = buf[0] + x
    return x * buf[0]


def test_the_numba_backend_refuses_a_default_changed_in_place():
    pytest.importorskip("numba", reason="backend='numba' needs Numba")
    with pytest.raises(s2sad.NativeBackendError, match="default value") as info:
        s2sad.grad(array_default, backend="numba")(1.0)
    assert f"{__file__}:" in str(info.value)


MODULE = '''\
def accumulating(x, acc=[]):
    acc.append(x)
    return x * len(acc)
'''


def test_an_exported_module_keeps_its_own_default(tmp_path):
    (tmp_path / "acc_model.py").write_text(MODULE)
    spec = importlib.util.spec_from_file_location("acc_model", tmp_path / "acc_model.py")
    model = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(model)
    model.accumulating(1.0)
    s2sad.export(model.accumulating, tmp_path / "acc_exported.py", args=(2.0,))
    spec = importlib.util.spec_from_file_location("acc_exported", tmp_path / "acc_exported.py")
    exported = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(exported)
    # the module starts from the default as it was exported, and changes its own
    assert exported.accumulating_value_and_grad(2.0) == (4.0, 2.0)
    assert exported.accumulating_grad(2.0) == 3.0
    assert exported.accumulating_vjp(2.0)[0] == 8.0
    assert model.accumulating.__defaults__[0] == [1.0]


# -- an argument passed by keyword, of another type than its default ------------------------
def scaled(x, k=1):
    return x * k * k


def summed(x, k=1):
    return np.sum(x * k)


def test_grad_of_an_argument_passed_by_keyword_with_another_type():
    # the derivative compiled for k an int recompiles for a float, then for an array
    assert s2sad.grad(scaled, wrt="k")(2.0, k=3.0) == 12.0
    assert s2sad.value_and_grad(scaled, wrt="k")(2.0, k=3.0) == (18.0, 12.0)
    assert s2sad.grad(scaled, wrt="k")(2.0, k=3) == 12
    assert s2sad.grad(scaled)(2.0, k=3.0) == 9.0
    assert s2sad.grad(scaled)(x=2.0, k=3.0) == 9.0
    assert s2sad.grad(scaled, wrt=(0, 1))(x=2.0, k=0.5) == (0.25, 2.0)
    x, k = np.array([0.5, -1.0]), np.array([2.0, 3.0])
    np.testing.assert_allclose(s2sad.grad(summed, wrt="k")(x, k=k), x)
    assert_close(s2sad.grad(summed)(0.5, k=k), fd_grad(lambda x: summed(x, k=k), (0.5,)))
    np.testing.assert_allclose(s2sad.grad(summed, wrt="k")(x, k=k),
                               fd_array_grad(lambda k: summed(x, k=k), (k,), 0))
    np.testing.assert_allclose(s2sad.grad(summed)(x, k=2.5), [2.5, 2.5])
    # and back: each type has its version
    assert s2sad.grad(scaled, wrt="k")(2.0, k=3.0) == 12.0


def test_vjp_with_a_keyword_of_another_type():
    # x's adjoint is summed to x's shape where k broadcasts it
    value, pullback = s2sad.vjp(scaled, 2.0, k=np.ones(2))
    np.testing.assert_allclose(value, [2.0, 2.0])
    assert pullback(np.ones(2)) == (2.0,)
    value, pullback = s2sad.vjp(scaled, 2.0, k=3.0)
    assert (value, pullback(1.0)) == (18.0, (9.0,))


def test_forward_mode_and_second_order_with_keywords_of_another_type():
    assert s2sad.jvp(scaled, (2.0,), (1.0,), k=3.0) == (18.0, 9.0)
    value, tangent = s2sad.jvp(scaled, (2.0,), (1.0,), k=np.ones(2))
    np.testing.assert_allclose(tangent, [1.0, 1.0])
    assert s2sad.jvp(scaled, (2.0,), (1.0,), k=3) == (18, 9)
    assert s2sad.hessian(scaled, wrt="k")(2.0, k=3.0) == 4.0       # 2 x
    assert s2sad.hvp(scaled, wrt="k")(2.0, 1.0, k=3.0) == 4.0
    assert s2sad.grad(s2sad.grad(scaled, wrt="k"), wrt="x")(2.0, k=3.0) == 6.0    # 2 k
    np.testing.assert_allclose(s2sad.jacfwd(scaled)(np.ones(2), k=np.full(2, 2.0)),
                               4.0 * np.eye(2))
    np.testing.assert_allclose(s2sad.jacrev(scaled)(np.ones(2), k=np.full(2, 2.0)),
                               4.0 * np.eye(2))


def keyword_only(x, *, k=1):
    return x * k * k


def test_keyword_only_arguments_of_another_type():
    assert s2sad.grad(keyword_only)(2.0, k=3.0) == 9.0
    assert s2sad.value_and_grad(keyword_only)(2.0, k=0.5) == (0.5, 0.25)
    assert s2sad.grad(keyword_only)(2.0) == 1
    assert s2sad.jvp(keyword_only, (2.0,), (1.0,), k=0.5) == (0.5, 0.25)


def extended(x, acc=[]):        # noqa: B006
    acc += [x]
    return x * len(acc)


def test_an_augmented_assignment_changes_a_list_default_in_place():
    # `acc += [x]` extends the list itself: the default grows by one a call
    for n in (1, 2):
        assert s2sad.value_and_grad(extended)(2.0) == (2.0 * n, n)
        assert extended.__defaults__[0] == [2.0] * n


def weighted(x, w=np.ones(2)):      # noqa: B008
    return np.sum(w * x)


def test_a_default_changed_between_calls_is_read_as_it_is():
    # the derivative's default is the function's object, not the expression again
    x = np.array([0.5, -1.0])
    np.testing.assert_array_equal(s2sad.grad(weighted)(x), [1.0, 1.0])
    weighted.__defaults__[0][:] = [3.0, -2.0]
    np.testing.assert_array_equal(s2sad.grad(weighted)(x), [3.0, -2.0])
    assert s2sad.value_and_grad(weighted)(x)[0] == weighted(x)
    assert s2sad.jvp(weighted, (x,), (np.ones(2),)) == (weighted(x), 1.0)
    weighted.__defaults__[0][:] = 1.0
