"""Minimized s2sad bugs found by tests/fuzz.

Each function is a reproducer; CASES lists (function, point) and test_fuzz.py's
`test_found_reproducers` checks `s2sad.grad(f, wrt=all)` against finite differences at
the point as a strict xfail: when a bug is fixed its case XPASSes, which fails the run, so
move the function to a regular regression test then. Every point is one where the
function is smooth, and every function runs without error there in plain Python.

Found by the fuzzer and fixed (or refused with UnsupportedSyntaxError) while it was being
written, so no longer listed: a name assigned in one branch inside a loop read before it
existed (UnboundLocalError); `return` in an `if` with `break` in its `elif` inside a loop
(InternalError: RecursionError); a for-loop variable rebound in its body (NameError or a
gradient summed over all iterations; now refused); tuple-display loops evaluating later
elements after earlier iterations; min/max of three or more arguments counting a tie
once per tied argument; rules that read their result (tanh, exp, ...) reading it after a
loop overwrote the name; a local named `reversed`; a negative constant base losing its
parentheses; a module global named `y` colliding with the output name. Their
regression tests are in tests/test_regressions.py.
"""


# 2. An active variable read in a loop and then overwritten by a constant in the same
#    loop: the first iteration's dependence is dropped (x is taken as inactive).
#    Expected 1; s2sad gives 0. (`s = 0.0; for i in range(2): s = s + x; x = 2.0`
#    gives 0 instead of 1 the same way.)
def read_then_overwritten_by_constant_in_loop(x):
    for i in range(1):
        t = x
        x = 2.0
    return t


#    The same with the constant in an inner while loop that never runs: y is taken as
#    inactive. Expected (0.6, 0) at (0.3, 0.7); s2sad gives (0, 0).
def constant_in_inner_while(y, z):
    for i in range(3):
        while z >= y + 10.0:
            y = 2.0
        z = y * y
    return z


# 3. In nested loops, the adjoint of a variable assigned in the inner loop is reset to
#    zero at every outer iteration of the pullback (`b_bar = 0.0` inside the reversed
#    outer loop), losing the adjoint flowing from later iterations. Expected 1; s2sad 0.
def swap_in_nested_loop(z):
    b = 1.75
    for j in range(2):
        for i in range(1):
            z, b = b, z
    return z


#    The same reset with an early return in the inner loop: y_bar is zeroed and the
#    returned adjoint for y is zeros_like(y). Expected (0, 1) at (0.3, 0.7); s2sad (0, 0).
def return_in_nested_loop_after_constant(x, w):
    for j in range(2):
        for i in range(1):
            if x > 0.0:
                return w
            w = 2.0
    return x


# 7. A zero-trip inner loop (range(i) with i == 0) leaves its loop variable's SSA copy
#    undefined, and a later rebinding of that name in a branch reads it:
#    UnboundLocalError: 'j_1' (the generated `j = j_1` after the inner loop, read by the
#    phi of the if). Expected 1.5 at 0.3.
def zero_trip_inner_loop_variable(x):
    for i in range(2):
        for j in range(i):
            x = x * 1.5
    if x > 0.0:
        x = x + 1.0
    else:
        j = 1
    return x


CASES = [
    (read_then_overwritten_by_constant_in_loop, (1.3,)),
    (constant_in_inner_while, (0.3, 0.7)),
    (swap_in_nested_loop, (0.7,)),
    (return_in_nested_loop_after_constant, (0.3, 0.7)),
    (zero_trip_inner_loop_variable, (0.3,)),
]
