"""Minimized s2sad bugs found by tests/fuzz.

Each function is a reproducer; CASES lists (function, point) and test_fuzz.py's
`test_found_reproducers` checks `s2sad.grad(f, wrt=all)` and `s2sad.jvp` against finite
differences at the point as a strict xfail: when a bug is fixed its case XPASSes, which fails the run, so
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
recorded); an inner `range(k)` reversed with the final k instead of the recorded one;
`x ** n` with x == 0 and an integer variable n == 0 (the rule's `n * x ** (n - 1)` raised
ZeroDivisionError); maps keyed by `id(node)` that made the generated source depend on
memory addresses; a for loop's variable not ending the adjoint of the value its name held
before the loop; a parameter changed only by an inner loop bound to None before the outer
loop's recording. Their regression tests are in tests/test_regressions.py.

A reproducer saved as "code dropped after an inner loop" turned out to be a wrong copy
(its function returned None at its point, so its xfail could not pass); it was removed
and the long profile is rerun to find the original again.
"""

import functools


# -- found by the forms of #19 (calls of function values, keywords), still open -------------
def _scaled(a, b):
    return a * b


def partial_made_in_a_branch(x):
    # MissingRuleError in both modes: "g holds values that depend on the differentiated
    # inputs, and s2sad cannot tell which function calling it runs ... Assign it once"
    # (it is assigned once); the same partial outside the `if` works
    s = 1.0
    if x > 0.0:
        g = functools.partial(_scaled, b=x)
        s = g(x)
    return s


def partial_made_in_a_loop(x):
    # grad is right; jvp raises MissingRuleError: "s2sad has no forward-mode rule for
    # functools.partial"
    s = 0.0
    for i in range(2):
        g = functools.partial(_scaled, b=x)
        s = s + g(x)
    return s


def _apply(fn, v):
    return fn(v)


def lambda_reads_a_name_set_in_a_loop(x):
    # MissingRuleError in both modes: "s2sad has no derivative rule for partial; register
    # one with s2sad.defvjp(partial, ...)"; also when the name is set in a branch, or
    # rebound in the loop that passes the lambda; a name assigned once works
    s = x
    for i in range(2):
        s = s * x
    return _apply(lambda t: s * t, 1.0)


def lambda_reads_a_name_set_in_a_branch(x):
    s = x
    if x > 0.0:
        s = 2.0 * x
    return _apply(lambda t: s * t, 1.0)


def _square(a):
    return a * a


def keyword_call_in_a_loop_over_a_display(z):
    # MissingRuleError in both modes: "i_1 depends on the differentiated inputs and is
    # passed to _square() by keyword (a=...); s2sad differentiates the arguments of Python
    # functions passed by position only (yet)"; without the keyword call in the display
    # (or with `_square(i)` in the body) it works
    for i in [1.0, _square(a=z)]:
        y = _square(a=i)
    return y


CASES = [
    (partial_made_in_a_branch, (0.7,)),
    (partial_made_in_a_loop, (0.7,)),
    (lambda_reads_a_name_set_in_a_loop, (0.7,)),
    (lambda_reads_a_name_set_in_a_branch, (0.7,)),
    (keyword_call_in_a_loop_over_a_display, (0.7,)),
]
