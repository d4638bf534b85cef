"""The benchmark harness's own checks, on the scalar workloads (fast; the timings are
not run here): hand gradients and hand tangents against finite differences, s2sad
against them, the hand Hessian-vector product, and the tape reader of bench/run.py."""
import os
import sys

import pytest

import s2sad

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench")
sys.path.insert(0, BENCH)
import run  # noqa: E402  (bench/run.py)
import workloads as wl  # noqa: E402

SCALAR = [w for w in wl.workloads() if w.jvp_hand is not None]


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
