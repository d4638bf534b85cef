"""Minimized s2sad bugs found by tests/fuzz/test_fuzz_numpy.py.

Each function is a reproducer; CASES lists (function, arguments) and
`test_found_numpy_reproducers` checks `s2sad.grad(f, wrt=all)` (the gradient of an array
has its shape and dtype, and agrees entry by entry with finite differences) and
`s2sad.jvp` with a tangent of ones against the directional difference, as a strict xfail:
when a bug is fixed its case XPASSes, which fails the run, so move the function to a
regular regression test then, and drop the generator's or the test's workaround named in
the comment. Every function is smooth at its arguments and runs without error there in
plain Python.
"""
import numpy as np


# 1. `.T` of an intermediate value (not a name of the user's) is taken as inactive: the
#    adjoint does not flow through it. Expected cos(w); s2sad gives zeros (and jvp 0).
#    (`np.sum(x[:, :-1].T)` and `np.broadcast_to(x, (2, 3)).T` the same way.)
#    Workaround in numpy_programs.py: `.T` only on names, `np.transpose` otherwise.
def transpose_of_intermediate(w):
    return np.sum(np.sin(w).T)


# 2. An array parameter read only in a branch that is not taken gets the gradient `0.0`
#    (a float) instead of zeros of its shape. Expected (ones(2), zeros((1, 2))).
#    Workaround: KNOWN_SCALAR_ZERO in test_fuzz_numpy.py.
def unused_branch_array_gradient(x, w):
    return np.sum(x) if np.sum(x) > 0.0 else np.sum(w * w)


# 3. An element write with a slice (`d[:, 0] = x`), then a taken branch rebinding the
#    array to a value that does not depend on the inputs: the adjoint of `d` there is the
#    float 0.0 and the write's pullback crashes in `_s2s_unbroadcast(_s2s_take(0.0, (slice,
#    0)), t)`: "ValueError: cannot reshape array of size 1 into shape (2,)". Expected
#    zeros(2) (the written value is discarded).
#    Workaround in numpy_programs.py: inside branches every stored value depends on a
#    parameter (`activated`).
def write_then_constant_in_branch(x):
    d = np.ones((2, 2))
    d[:, 0] = x
    if x[1] > 1.0:
        d = np.zeros((2, 2))
    return np.sum(d)


CASES = [
    (transpose_of_intermediate, (np.array([[0.2, 0.5, -0.4], [0.9, -1.2, 0.3]]),)),
    (unused_branch_array_gradient, (np.array([0.5, 0.25]), np.array([[0.3, 0.2]]))),
    (write_then_constant_in_branch, (np.array([0.5, 1.5]),)),
]
