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
parentheses; a module global named `y` colliding with the output name; a name read and then
overwritten by a constant in a loop losing its adjoint; the adjoint of a name carried by an
inner loop reset at every iteration of the outer one; a for loop that runs no iteration
leaving its variable unbound; an early return beside an inner loop in an untaken branch
(a value read in the outer loop's pullback but unpacked by the inner loop's was not
recorded); an inner `range(k)` reversed with the final k instead of the recorded one. Their regression tests are in tests/test_regressions.py.
"""


# 8. `x ** n` with x == 0.0 and an integer exponent variable n == 0 (found by the long
#    profile): the rule's `n * x ** (n - 1)` evaluates 0.0 ** -1 and raises
#    ZeroDivisionError (Python floats; NumPy would give nan). Expected 1.0 (x ** 0 is 1).
def zero_to_a_zero_power(x):
    n = int(x * 0.0)
    return (x * 0.0) ** n + x


# 9. Found by the long profile, not minimized yet (the obvious smaller variants work):
#    desugaring drops `x -= ...` and the whole `for l` loop after the inner loop, so the
#    function is taken to return None when neither early return is taken (grad raises
#    NonScalarOutputError, vjp gives zeros). Expected d/dz = -0.2248 at the point.
def code_after_an_inner_loop_dropped(x, y, z):
    y = -z
    for j in range(3):
        for ii in range(1):
            s = math.cosh(math.sin(-math.log(1.0 + math.exp(y))))
            if z == x:
                return int(math.sqrt(2.0 + math.cos(y)))
            y = math.tanh(y * z + -0.75)


CASES = [(zero_to_a_zero_power, (0.3,)),
         (code_after_an_inner_loop_dropped,
          (0.32600014142135625, -0.3879996535898385, 0.18100067082039326))]
