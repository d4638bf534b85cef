"""Minimized s2sad bugs found by tests/fuzz.

Each function is a reproducer; CASES lists (function, point) and test_fuzz.py's
`test_found_reproducers` checks `s2sad.grad(f, wrt=all)`, `s2sad.vjp` and `s2sad.jvp` against finite
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

Found by the forms of #19 (calls of function values, keywords) and fixed: a
`functools.partial` made in a branch or a loop (Wengert's join copies gave its name
several assignments, so it was not a known function value), a lambda reading a name set in
a loop or a branch (the name has several versions, so the lambda's partial was not
known), and a keyword call whose argument is the result of a keyword call (a keyword
argument carried no derivative in the activity analysis). Their regression tests are in
tests/test_calls.py (tests/corpus_calls_values.py).

Found by the long profile after #36 and fixed: the fused gradient dropped an inner loop
over `range` whose body it did not need (`for i in range(1): x = 1.5 * x` where only the
pullback of x's later uses matters) although a later statement of the outer loop read its
variable: the pullback read the value `i` had before the inner loop (a wrong gradient,
7.5 for 4.5), or None (a TypeError). Its regression test is in tests/test_regressions.py.

Found by the long profile with colliding names, refused, then fixed: a name that an outer
loop and a loop nested in it both carry, changed by the inner loop before anything read
it, was recorded at the start of the outer iteration, and the outer loop's pullback read
that value where it reads the name after the inner loop (0.62 for 3.09). Its regression
tests are in tests/test_nested_loops.py; `test_nested_loops_changing_carried_names`
generates the form in every profile.

Found by the long profile (on main since before #39's session) and fixed: a loop variable
that a loop running no iteration leaves unbound (`for ii in range(0)`), then a branch that
loops over `ii` again: Wengert form's join copy after the branch (`ii_2 = ii`) read it on
the other path (UnboundLocalError in the vjp, where the user's code never reads `ii`). Its
regression test is in tests/test_regressions.py.

A reproducer saved as "code dropped after an inner loop" turned out to be a wrong copy
(its function returned None at its point, so its xfail could not pass); it was removed
and the long profile is rerun to find the original again.
"""

CASES = []
