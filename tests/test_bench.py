"""The benchmark harness's own checks, on the scalar workloads, on small instances of
the array loops and on the mixed workloads (fast; the timings are not run here): hand
gradients and hand tangents against finite differences, s2sad against them, the hand
Hessian-vector product, the tape and header readers of bench/run.py, and the choice of
workloads."""
import dataclasses
import os
import sys

import pytest

import s2sad

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench")
sys.path.insert(0, BENCH)
import run  # noqa: E402  (bench/run.py)
import workloads as wl  # noqa: E402

SCALAR = [w for w in wl.workloads() if w.jvp_hand is not None]
LOOPS = wl.array_loops()
MIXED = wl.mixed()


@pytest.mark.parametrize("w", SCALAR, ids=[w.name for w in SCALAR])
def test_scalar_workload_checks(w):
    # each check exits (SystemExit) with a message when a comparison fails
    run.check(w, s2sad, {})
    tangents, peers = run.check_jvp(w, s2sad, {})
    assert tangents == run.direction(len(w.args)) and peers == {}


def test_a_wrong_hand_tangent_is_caught():
    w = SCALAR[0]
    wrong = w._replace(jvp_hand=lambda x, x_dot: (w.f(x), 1.01 * w.jvp_hand(x, x_dot)[1]))
    with pytest.raises(SystemExit, match="disagrees with central finite differences"):
        run.check_jvp(wrong, s2sad, {})


def test_hand_hessian_vector_product():
    import numpy as np
    x, = wl.rosenbrock_args(8, seed=1)
    v = np.random.default_rng(0).standard_normal(8)
    fd = (wl.rosenbrock_hand(x + 1e-6 * v) - wl.rosenbrock_hand(x - 1e-6 * v)) / 2e-6
    np.testing.assert_allclose(wl.rosenbrock_hvp_hand(x, v), fd, rtol=1e-6, atol=1e-6)


def test_tape_reader():
    import re
    g = s2sad.grad(wl.lotka_volterra, wrt=(0, 1, 2, 3))
    g(1.5, 1.0, 3.0, 1.0)
    stored, read = run.tape_values(g.source)
    appended = re.search(r"_s2s_tape\.append\(\((.*)\)\)", g.source).group(1).split(", ")
    unpacked = re.search(r"for (.*) in reversed\(_s2s_tape\)", g.source).group(1).split(", ")
    assert stored == appended and set(read) <= set(unpacked) and "u" in read


@pytest.mark.parametrize("w", LOOPS, ids=[w.name for w in LOOPS])
def test_array_loop_checks_on_the_small_instance(w):
    # the hand gradient against central differences, s2sad.grad and value_and_grad
    # against the hand gradient (the benchmark instance is left to bench/run.py)
    assert w.group == "array-loops" and w.hand_tape
    run.check(w._replace(args=w.small), s2sad, {})


@pytest.mark.parametrize("w", LOOPS, ids=[w.name for w in LOOPS])
def test_a_wrong_array_loop_gradient_is_caught(w):
    def wrong(*args):
        g = w.hand(*args)
        if w.mode == "forward":         # (value, tangent): the tangent off
            return g[0], 1.001 * g[1]
        return (1.001 * g[0],) + tuple(g[1:])
    with pytest.raises(SystemExit, match="disagrees with central finite differences"):
        run.check(w._replace(args=w.small, hand=wrong), None, {})


def test_a_wrong_value_of_a_forward_loop_is_caught():
    w = next(w for w in LOOPS if w.mode == "forward")

    def wrong(*args):
        value, tangent = w.hand(*args)
        return 1.001 * value, tangent
    with pytest.raises(SystemExit, match="disagrees with the function's"):
        run.check(w._replace(args=w.small, hand=wrong), None, {})


@pytest.mark.parametrize("w", MIXED, ids=[w.name for w in MIXED])
def test_mixed_checks(w):
    # the hand gradient against central finite differences (along each float field of
    # a dataclass), s2sad.grad and value_and_grad against the hand gradient
    assert w.group == "mixed" and w.jvp_hand is None and not w.numpy
    run.check(w, s2sad, {})


@pytest.mark.parametrize("w", MIXED, ids=[w.name for w in MIXED])
def test_a_wrong_mixed_gradient_is_caught(w):
    # each component (each field of a dataclass gradient) is judged on its own: a
    # 1e-3 error in the smallest one is caught
    def wrong(*args):
        g = w.hand(*args)
        if isinstance(g, wl.Launch):
            return dataclasses.replace(g, v0=1.001 * g.v0)
        return (1.001 * g[0],) + tuple(g[1:])
    with pytest.raises(SystemExit, match="disagrees with central finite differences"):
        run.check(w._replace(hand=wrong), None, {})


def test_dataclass_gradients_and_differences_field_by_field():
    p = wl.Launch(20.0, 0.8)
    got = run.as_tuple(wl.projectile_dataclass_hand(p), 0)
    assert [c.shape for c in got] == [(1,)] * 4
    fd = run.central_fd(wl.projectile_dataclass, (p,), 0)
    assert run.close(got, fd, run.FD_RTOL)
    # the field of the positional projectile's v0 and angle, as by projectile_hand
    assert run.close(got[:2], tuple(c.reshape(1) for c in run.as_tuple(
        wl.projectile_hand(20.0, 0.8), (0, 1))), 1e-12)


def test_pullback_reads():
    source = """def f_grad(u, k):
    # reverse mode of f() with respect to u, k
    # the pullback reads: k, u;
    #     lap, t of each iteration of the loop at line 3;
    #     a of each iteration of the loop at line 7
    # rules: np.roll, *
    y = 1
"""
    header = run.pullback_reads(source)
    assert header == ("the pullback reads: k, u; lap, t of each iteration of the loop at "
                      "line 3; a of each iteration of the loop at line 7")
    assert run.per_iteration(header) == [(["lap", "t"], "the loop at line 3"),
                                         (["a"], "the loop at line 7")]
    assert run.pullback_reads("def f(x):\n    return x\n") == ""
    g = s2sad.grad(wl.heat, wrt=(0, 1))
    g(*wl.heat_args(8, 3))
    assert run.pullback_reads(g.source).startswith("the pullback reads")


def test_groups():
    suite = wl.workloads()
    assert [w.name for w in run.select(suite, groups="array-loops")] == [
        "heat", "heat_checkpointed", "heat_checkpointed_call", "rnn", "jacobi", "nbody",
        "trajectory", "trajectory_jvp"]
    assert [w.name for w in run.select(suite, groups="mixed")] == [
        "logsin_np", "projectile", "projectile_dataclass", "oscillator", "rk4_tuple_state",
        "tree", "pair_energy"]
    # the native group's workloads are bench/native.py's (they need Numba), the solvers
    # group's bench/solvers.py's (they need SciPy), the batching group's
    # bench/batching.py's; dask's are made only when Dask is installed
    assert {w.group for w in suite} | {"dask", "native", "solvers", "batching"} == set(
        run.GROUPS)
    assert [w.name for w in run.select(suite, "heat,mlp")] == ["mlp", "heat"]
    assert [w.name for w in run.select(suite, "mlp", "numpy,array-loops")] == ["mlp"]
    with pytest.raises(ValueError, match="unknown group loops"):
        run.select(suite, groups="loops")
    with pytest.raises(ValueError, match="unknown workload mlp"):
        run.select(suite, "mlp", "array-loops")


DASK = wl.dask_group()


@pytest.mark.parametrize("w", DASK, ids=[w.name for w in DASK])
def test_dask_checks(w):
    """The hand gradient against central differences and s2sad on the small instance
    (NumPy), then the whole Dask benchmark on a small instance as Dask arrays, on a
    cluster of threads (the benchmark's is of processes)."""
    import dask.array as da
    run.check(w._replace(args=w.small), s2sad, {})
    small = tuple(da.from_array(s, chunks=len(s) // 2) if isinstance(a, da.Array) else s
                  for s, a in zip(w.small, w.args))
    rows = run.dask_bench([w._replace(args=small)], s2sad, repeat=1, processes=False)
    assert rows[0]["lazy"] and set(rows[0]["times"]) == {"hand", "s2sad"}
    assert "dask goal" in run.dask_report(rows)


def test_without_dask_the_group_is_empty(monkeypatch):
    import builtins
    real = builtins.__import__

    def no_dask(name, *args, **kwargs):
        if name.split(".")[0] in ("dask", "distributed"):
            raise ImportError(name)
        return real(name, *args, **kwargs)
    monkeypatch.setattr(builtins, "__import__", no_dask)
    assert wl.dask_group() == []


def test_native_workload_checks():
    # the hand Numba gradients against central differences, s2sad's numba backend
    # against them and the Python backend; an empty group without Numba
    suite = run.native.workloads()
    if not suite:
        pytest.skip("the native group needs Numba, which is not installed")
    assert [w.name for w in suite] == ["babysqrt1000", "lotka_volterra", "while_loop",
                                      "element_store"]
    for w in suite:
        run.check_native(w, s2sad)
    wrong = suite[0]._replace(hand=lambda x: 1.001 * suite[0].hand(x))
    with pytest.raises(SystemExit, match="disagrees with central finite differences"):
        run.check_native(wrong, s2sad)


def test_solvers_workload_checks():
    pytest.importorskip("scipy")
    import solvers      # (bench/solvers.py)
    for name, f, args, wrt in solvers.WORKLOADS:
        solvers.check(name, s2sad.grad(f, wrt=wrt), f, args, wrt)
    name, f, args, wrt = solvers.WORKLOADS[1]
    with pytest.raises(SystemExit, match="disagrees with central differences"):
        solvers.check(name, lambda *a: 1.01 * s2sad.grad(f, wrt=wrt)(*a), f, args, wrt)
    for name, f, x, v in solvers.SECOND[:3]:       # (the ODE's: bench/solvers.py)
        solvers.check_hvp(name, s2sad.hvp(f), f, x, v, s2sad)
    with pytest.raises(SystemExit, match="disagrees with central differences"):
        solvers.check_hvp(name, lambda *a: 1.01 * s2sad.hvp(f)(*a), f, x, v, s2sad)


def test_batching_references_against_central_differences_and_the_check():
    import numpy as np

    import batching     # (bench/batching.py)
    rng = np.random.default_rng(3)
    q, lengths = rng.normal(size=5), np.array([1.0, 0.8, 0.6, 0.4, 0.2])
    fd = np.stack([(batching.arm(q + e, lengths) - batching.arm(q - e, lengths)) / 2e-6
                   for e in np.eye(5) * 1e-6], -1)
    np.testing.assert_allclose(batching.arm_jacobian_by_hand(q, lengths), fd, rtol=1e-6,
                               atol=1e-8)
    w, X, y = rng.normal(size=4), rng.normal(size=(6, 4)), (rng.random(6) > 0.5) * 1.0
    grad = s2sad.grad(batching.logistic_loss)
    fd = np.stack([(grad(w + e, X, y) - grad(w - e, X, y)) / 2e-6 for e in np.eye(4) * 1e-6])
    np.testing.assert_allclose(batching.logistic_hessian_by_hand(w, X, y), fd, rtol=1e-6)
    with pytest.raises(SystemExit, match="disagrees with the independent one"):
        batching._close("robot_arm", 1.01 * fd, fd)


def test_solvers_memory_table():
    pytest.importorskip("scipy")
    import solvers      # (bench/solvers.py)
    rows = [{"span": 15.0, "steps": 55, "function": 2e-3, "gradient": 6e-3,
             "function_peak": 40e3, "gradient_peak": 90e3},
            {"span": 150.0, "steps": 499, "function": 2e-2, "gradient": 7e-2,
             "function_peak": 95e3, "gradient_peak": 140e3}]
    report = solvers.memory_report(rows)
    assert "(0, 150)    499" in report and "met (1.56x)" in report
    rows[1]["gradient_peak"] = 900e3        # (every step kept: the peak grows)
    assert "missed (10.00x)" in solvers.memory_report(rows)
    assert solvers.peak_memory(bytearray, (1_000_000,)) >= 1_000_000
