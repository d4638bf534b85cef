"""Minimized s2sad bugs found by tests/fuzz/test_fuzz_numpy.py.

Each function is a reproducer; CASES lists (function, arguments) and
`test_found_numpy_reproducers` checks `s2sad.grad(f, wrt=all)` (the gradient of an array
has its shape and dtype, and agrees entry by entry with finite differences) and
`s2sad.jvp` with a tangent of ones against the directional difference, as a strict xfail:
when a bug is fixed its case XPASSes, which fails the run, so move the function to a
regular regression test then (FIXED below), and drop the generator's or the test's
workaround named in the comment. None is open now (CASES, at the end, is empty). Every
function is smooth at its arguments and runs without error there in plain Python.
"""
import numpy as np


# 1. `.T` of an intermediate value is taken as inactive: the adjoint does not flow
#    through it. Expected cos(w); s2sad gives zeros (and jvp 0). The same for
#    `np.sum(x[:, :-1].T)`, `np.broadcast_to(x, (2, 3)).T`, and `a.T` after `a += x`.
#    Workaround in numpy_programs.py: `.T` only on parameters, `np.transpose` otherwise.
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


# 4. An array written in an inner loop and read in the outer loop: in the pullback the
#    read's adjoint replaces the array's adjoint carried from later outer iterations
#    (`h_bar = _s2s_unindex(...)` instead of adding), and the adjoint never reaches the
#    array's definition before the loop (no `x_bar += h_bar`). Expected [3, 1, 0];
#    s2sad gives [2, 0, 0].
#    Workaround in numpy_programs.py: an array written in a loop is not read again until
#    the outermost loop ends (`hidden`).
def write_in_inner_loop_read_in_outer(x):
    h = x * 1.0
    s = 0.0
    for i in range(2):
        for j in range(2):
            h[0] += x[0]
        s = s + h[i]
    return s


# 5. An array written and then read in the same loop body: the forward pass sets the
#    array to None before the loop (`h = None` after `h = x * 1.0`) and crashes with
#    "TypeError: 'NoneType' object does not support item assignment". Expected
#    [0, 2, 0]. (Reading before the write in the body works.) Same workaround as 4.
def write_then_read_in_loop(x):
    h = x * 1.0
    s = 0.0
    for i in range(2):
        h[0] = x[0]
        s = s + h[1]
    return s


# 6. `np.where` broadcasting a reduction's result: the adjoint reaching `np.min(...,
#    axis=1)` (shape (1,)) has the broadcast shape (3,) and the min rule crashes:
#    "ValueError: could not broadcast input array from shape (3,1) into shape (1,2)".
#    Expected (ones(2) at the minimum's entry times the count of v <= 0, zeros(3)).
#    Workaround in numpy_programs.py: the branches of `np.where` have the full shape.
def where_broadcasts_reduction(x, v):
    return np.sum(np.where(v > 0.0, 1.0, np.min(x[None], axis=1)))


# 7. `np.prod` over values one of which is exactly zero (here x - x[-1] at the last
#    entry): the gradient is nan (the rule divides the product by the factor). Expected
#    [-0.05, 0.2, 0.01]. Workaround in numpy_programs.py: `np.prod` of cosines only.
def prod_with_zero_factor(x):
    return np.prod(x - x[-1])


# 8. Found by the long profile (not minimized): a list rebuilt in an outer loop and appended
#    to in inner loops: "TypeError: unsupported operand type(s) for +: 'float' and 'list'"
#    (list adjoints were accumulated with `+`, which concatenates; now `_s2s_add`).
def list_rebuilt_in_outer_loop(x, w):
    parts = []
    for i in range(2):
        parts = []
        for j in range(2):
            parts.append(np.copy(w[None]))
        a = np.sum(np.array(parts))
        for j in range(2):
            u = np.tanh(a)
        parts.append(np.tanh(a + np.zeros((1, 3))))
    a = np.sum(np.stack(parts))
    return np.sum(np.broadcast_to(np.tanh(a), (3, 1)))


# 9. Found by the long profile: an array overwritten in a loop, so that its adjoint is
#    the scalar 0.0 (a symbolic zero) where it meets a smaller operand: 0.0 * t_5, of
#    shape (1,), could not be unbroadcast to the (3,) of `x + w[:, 0]` ("cannot reshape
#    array of size 1 into shape (3,)").
def zero_adjoint_meets_smaller_operand(x, w):
    a = (x + w[:, 0]) * np.sin(np.prod(np.tanh(w), axis=0, keepdims=True).reshape(-1))
    for i in range(2):
        a = np.sin(x)
    return a[0]


# 10. Found by the long profile: the same scalar zero as the adjoint of a reduction over
#    axis 1 (`np.prod(..., axis=1)`): "AxisError: axis 1 is out of bounds for array of
#    dimension 1" when it was spread back over the reduced axis.
def zero_adjoint_of_an_axis_reduction(v):
    a = np.prod(np.tanh(np.expand_dims(v, 0)), axis=1)
    for i in range(2):
        a = a + a
        for j in range(2):
            a = np.linspace(-1.0, 1.0, 1) + v[:1]
    return a[0]


# 11. Found by the second long run: the same scalar zero as the adjoint of `@`:
#    "matmul: Input operand 1 does not have enough dimensions (has 0 ...)". The adjoints
#    of `@`, `np.dot` and `np.einsum` now spread a 0-d adjoint to the product's shape
#    (12 and 13 are the same for einsum and a 3-d np.dot, written by hand).
def zero_adjoint_of_a_matmul(x):
    a = x
    a = np.tanh(np.sum(a, axis=0, keepdims=True)) @ a[None]
    for i in range(2):
        a = np.copy(x)
    return a[0]


def zero_adjoint_of_an_einsum(x, w):
    a = np.einsum("ij,jk->ik", x, w)
    for i in range(2):
        a = np.copy(x) * 2.0
    return a[0, 0]


def zero_adjoint_of_a_dot(x, w):
    a = np.dot(x, w)
    for i in range(2):
        a = x[:, 0] * 3.0
    return a[0]


# 14. Found by the third long run (forward-mode test, through its gradient check): an
#    array rebound in an inner loop has the adjoint 0.0 there, and the adjoint of
#    `np.stack` indexed it: "IndexError: index 1 is out of bounds for axis 0 with size 1".
#    Expected (zeros(3), 1.0). Fixed with 15: every rule that reshapes, indexes, stacks
#    or moves the axes of its adjoint passes a 0-d one on (tests/test_zero_adjoints.py
#    checks each rule so).
def stack_in_inner_loop(v, s):
    a = v
    for i in range(2):
        for j in range(2):
            a = np.stack([s, s, s], axis=0)
    return a[0]


# 15. Found by the third long run: the same zero reaching the adjoint of `np.reshape`:
#    "cannot reshape array of size 1 into shape (1,2)". Expected (0, 0, 1): the last
#    iteration leaves a = [x[2], x[2]].
def reshape_in_loop(x):
    a = np.sin(x[:2])
    for j in range(3):
        a = -a
        a = np.reshape(x[j] + np.zeros((1, 2)), (2,))
    return np.mean(a)



# 16. Found by the fourth long run, on the code specialised on shape patterns and dtypes:
#    "InternalError: ... '<' not supported between instances of 'str' and 'tuple'". The
#    buffer-reuse pass took the dtype of zeros (not a parameter's) for float64, because
#    `np.dtype("float64") == None` is true in NumPy, and listed it among the dtypes for
#    the guard to test. Expected (1.162, 0, 0).
def min_of_strided_slice(x):
    a = np.tanh(x * (x + x))
    return np.min(a[::2])


# 17. Found by the fourth long run (shrunk by the fifth): an element of an array written
#    in place in a loop, when the pullback of the statement that made the array reads
#    it (`np.tanh`'s adjoint reads its result): the loop wrote into that very array, so
#    the adjoint read 4 tanh(2 v) where tanh(2 v) was due. Expected 8 (1 - tanh(2 v)^2)
#    (7.99996798 at v = 1e-3; s2sad gave 7.99948763). Writing in place in a loop now
#    also requires that the pullback reads no state from before the loop.
def write_in_loop_over_a_read_result(v):
    a = np.tanh(v + v)
    for i in range(2):
        a[0] += a[0]
    return a[0]


# 18. Found by the seventh long run: an element write in a branch of a loop, then a read
#    of the array there. The result of the write (`p_2` in Wengert form) is bound to
#    None before the loop, for the tape to record it on every path; written in place,
#    it is named `p`, and `p = None` unbound the array before the loop ran: "TypeError:
#    'NoneType' object does not support item assignment". Expected: the gradient.
def write_in_branch_of_loop(x):
    p = np.sin(x)
    for i in range(1):
        if x[0] < 2.0:
            p[0] = x[1] * x[2]
            p[1:] -= np.tanh(p.mean())
    return np.sum(p)


# 19. Found by the long profile (fixed): reverse mode gave 0.0495 for d/dx[0, 1], where
#    central differences and jvp give 0.00111. The inner loop wrote `a[0, -1] += ...` in
#    place although the outer loop's pullback reads `np.tanh`'s result, which is `a`
#    again in the next iteration (minimised: tests/test_regressions.py,
#    test_a_recorded_result_is_not_written_by_the_next_iteration_of_an_outer_loop).
def nested_loop_write_then_rebinding_branch(x, s):
    a = np.where(x.sum(axis=1).reshape(1, 2) > np.broadcast_to(s, (2,))[None],
                 np.mean(x, axis=0, keepdims=True)[:, np.array([False, True, True])],
                 np.broadcast_to(s, (1, 2)))
    for i in range(2):
        for j in range(2):
            a[0, -1] += np.sin(s)
        if np.maximum(np.max(np.min(a, axis=1), axis=0) if s > np.prod(
                np.sin(a[0]), axis=0) else s, s - s) < a[:, i][-1]:
            a += np.arctan(a / (2.0 + np.cos(s)))
            a = np.maximum(np.sqrt(2.0 + np.cos(a + s)), np.prod(np.sin(np.sum(
                (s + np.zeros((3, 1))).T / (2.0 + np.cos(np.mean(np.swapaxes(x, 0, 1)))),
                axis=1, keepdims=True)), axis=0))
            a = np.tanh(np.maximum(np.dot(a, a[0, -1] * np.ones((2, 2))),
                                   np.prod(np.sin(a * np.ones((2, 2))), axis=1) / 4.0))
    return a.sum()


# 20. Found by the long profile at the end of session 40 (fixed; on main before it too): a
#    crash, not a wrong number. The reverse-mode code bound the carried `c_1` to None
#    before the loop (grad: "'>=' not supported between instances of 'NoneType' and
#    'NoneType'", vjp: "'NoneType' object does not support item assignment"); jvp was
#    right. The tape's initialisation of `c_3`, a result of the taken branch only, was
#    renamed `c_1` when the element writes went in place (ad/inplace.py), and kept: the
#    copy `c_1 = c` made for the write before the loop did not count as binding `c_1`.
def fancy_write_in_one_branch_where_in_the_other(w, v, s):
    c = np.ones((2,))
    c[np.arange(3) % 2] += np.sum(c, axis=0) * np.ones((1,)) / 4.0
    for i in range(3):
        if np.minimum(s, s) > s:
            c[-1] += np.arctan(s)
            c[np.array([[0, 1], [0, -2]])] += np.ones((1, 1))
        else:
            c = np.where((v[:, i] * np.ones((2, 1)))[:, -1]
                         >= np.broadcast_to(c, (1, 2)).max(axis=-1), w, s)
    return np.sum(c / 4.0)


# fixed: kept as regression tests (checked the same way, not as xfails)
FIXED = [
    (zero_adjoint_of_a_matmul, (np.array([0.1, 0.2, 0.3]),)),
    (zero_adjoint_of_an_einsum, (np.array([[0.1, 0.2], [0.3, 0.4]]), np.ones((2, 2)))),
    (zero_adjoint_of_a_dot, (np.array([[0.1, 0.2], [0.3, 0.4]]), np.ones((2, 2, 2)))),
    (zero_adjoint_meets_smaller_operand,
     (np.array([0.1, 0.2, 0.3]), np.array([[0.2], [0.3], [0.4]]))),
    (zero_adjoint_of_an_axis_reduction, (np.array([0.3, 0.5]),)),
    (list_rebuilt_in_outer_loop, (np.array([0.5, 0.25]), np.array([0.3, -0.2, 0.1]))),
    (transpose_of_intermediate, (np.array([[0.2, 0.5, -0.4], [0.9, -1.2, 0.3]]),)),
    (unused_branch_array_gradient, (np.array([0.5, 0.25]), np.array([[0.3, 0.2]]))),
    (write_then_constant_in_branch, (np.array([0.5, 1.5]),)),
    (write_in_inner_loop_read_in_outer, (np.array([0.5, 0.25, 0.3]),)),
    (write_then_read_in_loop, (np.array([0.5, 0.25, 0.3]),)),
    (where_broadcasts_reduction, (np.array([0.5, 0.25]), np.array([-0.3, 0.2, -0.1]))),
    (prod_with_zero_factor, (np.array([0.5, 0.25, 0.3]),)),
    (stack_in_inner_loop, (np.array([0.1, 0.2, 0.3]), 0.5)),
    (reshape_in_loop, (np.array([0.1, 0.2, 0.3]),)),
    (min_of_strided_slice, (np.array([0.3, -0.2, 0.5]),)),
    (write_in_loop_over_a_read_result, (np.array([0.3, 0.5]),)),
    (write_in_branch_of_loop, (np.array([0.5, 0.25, 0.3]),)),
    (nested_loop_write_then_rebinding_branch,
     (np.array([[-0.03699986, -0.04999983, 1.10800022],
                [-1.07699974, 0.51200033, -0.55999964]]), -0.5519995876894375)),
    (fancy_write_in_one_branch_where_in_the_other,
     (np.array([1.00026458e-03, 3.31662479e-07]),
      np.array([[1.00036056e-03, -1.45699959e+00, -5.32999564e-01]]), 0.19400047958315234)),
]


# open reproducers (strict xfails)
CASES = [
]
