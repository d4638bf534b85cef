"""Checkpointed loops: `checkpointed`, which marks a loop for them, and `Revolve`, the
binomial schedule (Griewank and Walther's revolve) that the gradient of such a loop runs;
`Online`, the schedule of a loop that stops at a `break`, whose number of steps is known
only at its end (see its docstring and docs/loops.md).

A gradient of a loop of n steps needs, in reverse order, the state before each step.
Keeping all n states costs n states of memory; keeping only k snapshots and computing
the others again from the nearest snapshot costs time instead. The binomial schedule
places the snapshots so that the steps computed again are the fewest possible for n and
k: `revolve_steps(n, k)` of them (r n - C(k + r, r - 1), for the r with
C(k + r - 1, k) < n <= C(k + r, k)), counting the first sweep's n - 1 advances.

A schedule is a list of reversals: the step reversed, the snapshot its state is computed
from, and the snapshots taken on the way. Generated code reads it as three loops: the
forward sweep saves the snapshots `snapshot_before(i)` names; the reverse sweep, for each
step `i` from the last, restores the snapshot `reverse_sweep()` gives, advances to `i`
(saving snapshots again), runs step `i` taped and then its pullback.

>>> schedule = Revolve(range(6), 2)
>>> [i for i in range(6) if schedule.snapshot_before(i)]     # the forward sweep's
[0, 3, 5]
>>> [(i, start) for i, start in schedule.reverse_sweep()
...  if schedule.advance(start, i) is not None]
[(5, 5), (4, 3), (3, 3), (2, 0), (1, 1), (0, 0)]
>>> schedule.recomputed, revolve_steps(6, 2)     # 1 + 2 again, 5 in the forward sweep
(3, 8)
"""
from __future__ import annotations

import itertools
import math
import sys
from typing import Iterable

import numpy as np

from ..errors import S2SADError
from .registry import helpers


def checkpointed(steps: Iterable[int], snapshots: int) -> Iterable[int]:
    """`steps` (a range, or `itertools.count()`), for `for i in s2sad.checkpointed(range(n),
    snapshots=k):`. The function runs the loop over `steps` as it is; its gradient keeps at
    most `snapshots` states of the loop (the values the body carries from one step to the
    next) and computes the others again on the binomial schedule (see docs/loops.md). A
    loop whose body has a `break` (`for i in s2sad.checkpointed(itertools.count(),
    snapshots=k): ... if done: break`, the form of a `while` loop) does not know its
    number of steps when it starts: its gradient follows an online schedule (`Online`).

    >>> import numpy as np, s2sad
    >>> def simulate(u0, kappa, n):
    ...     u = u0
    ...     for i in s2sad.checkpointed(range(n), snapshots=4):
    ...         u = u + kappa * (np.roll(u, 1) - 2.0 * u + np.roll(u, -1))
    ...     return np.sum(u * u)
    >>> u0 = np.linspace(0.0, 1.0, 8)
    >>> dkappa = s2sad.grad(simulate, wrt=1)(u0, 0.1, 50)
    >>> h = 1e-6
    >>> bool(abs(dkappa - (simulate(u0, 0.1 + h, 50) - simulate(u0, 0.1 - h, 50)) / (2 * h)) < 1e-6)
    True
    """
    if not isinstance(steps, (range, itertools.count)):
        raise S2SADError(f"s2sad.checkpointed(steps, snapshots) takes a range of steps or "
                         f"itertools.count(), not a {type(steps).__name__}: loop over "
                         f"range(len(...)) and index it")
    if isinstance(snapshots, bool) or not isinstance(snapshots, (int, np.integer)) \
            or snapshots < 1:
        raise S2SADError(f"s2sad.checkpointed(..., snapshots={snapshots!r}): the number of "
                         "snapshots is an int of at least 1")
    return steps


def checked_budget(memory):
    """`memory`, the bytes `s2sad.grad(f, memory=...)` gives the snapshots of each of
    its checkpointed loops, if it is a positive number."""
    if isinstance(memory, bool) or not isinstance(memory, (int, float, np.integer,
                                                            np.floating)) or not memory > 0:
        raise S2SADError(f"memory={memory!r}: the memory for the snapshots of checkpointed "
                         "loops is a positive number of bytes")
    return memory


def snapshots_within(memory, state):
    """How many snapshots of `state` (the values a checkpointed loop carries) fit in
    `memory` bytes: at least 1."""
    return max(1, int(memory // max(1, _size(state))))


def _size(value):
    """The bytes of `value`: of its arrays' data, and of anything else as Python counts
    them, through tuples, lists and dicts."""
    if isinstance(value, np.ndarray):
        return value.nbytes
    if isinstance(value, (tuple, list)):
        return sum(_size(v) for v in value)
    if isinstance(value, dict):
        return sum(_size(v) for v in value.values())
    return sys.getsizeof(value)


def copied(value):
    """A copy of a value of the loop state that the step changes in place (an array, a
    list, a dict), so that a snapshot of it stays as it was; anything else as it is."""
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, (list, dict)):
        return type(value)(value)
    return value


def revolve_steps(n, k):
    """The fewest step evaluations that reverse `n` steps keeping `k` snapshots (the
    state before the first step among them) need besides the `n` taped steps: revolve's
    count, the forward sweep's `n - 1` included."""
    if n <= 1:
        return 0
    if k == 1:
        return n * (n - 1) // 2
    r = _repetitions(n, k)
    return r * n - math.comb(k + r, r - 1)


def _repetitions(n, k):
    """The r with C(k + r - 1, k) < n <= C(k + r, k): how often the binomial schedule
    runs the step evaluated most often."""
    r = 0
    while math.comb(k + r, k) < n:
        r += 1
    return r


def _split(n, k):
    """Where the binomial schedule of `n` steps with `k` snapshots (k > 1, n > 1) takes
    its next snapshot: the largest first part that keeps the count optimal."""
    r = _repetitions(n, k)
    return max(1, min(math.comb(k + r - 1, k), n - math.comb(k + r - 2, k - 1), n - 1))


def _reversals(n, k):
    """The binomial schedule of `n` steps with `k` snapshots as `Reversals`: for each step
    from the last, the snapshot its state is computed from, the snapshots taken on the
    way there, and whether that restore is the snapshot's last. (Built in lists of ints,
    not of tuples: freed tuples stay in CPython's free lists, which tracemalloc counts.)"""
    steps, starts, saves, offsets = [], [], [], [0]
    pending, start = [], [0]

    def reverse(s, e, k):           # the state before s is current, and kept
        if e - s == 1:
            reversed_step(s)
        elif k == 1:
            for j in range(e - 1, s - 1, -1):
                if j < e - 1:
                    start[0] = s
                    pending.clear()
                reversed_step(j)
        else:
            m = s + _split(e - s, k)
            pending.append(m)
            reverse(m, e, k - 1)
            start[0] = s
            pending.clear()
            reverse(s, m, k)

    def reversed_step(j):
        steps.append(j)
        starts.append(start[0])
        saves.extend(p for p in pending if start[0] <= p < j)
        offsets.append(len(saves))
        pending.clear()

    if n:
        pending.append(0)
        reverse(0, n, k)
    last, restored = [False] * len(steps), set()
    for j in range(len(steps) - 1, -1, -1):
        last[j] = starts[j] not in restored
        restored.add(starts[j])
    return Reversals(steps, starts, saves, offsets, last)


class Reversals:
    """The reversals of a schedule, (step, start, saves, last) each, held in arrays: as
    lists of Python ints, the plan of 2,000 steps took 0.7 MB, most of a state of 10^5
    numbers, which the reverse sweep would hold beside its snapshots."""

    def __init__(self, steps=(), starts=(), saves=(), offsets=(0,), last=()):
        self.step = np.array(steps, dtype=np.int64)
        self.start = np.array(starts, dtype=np.int64)
        self.saves = np.array(saves, dtype=np.int64)
        self.offsets = np.array(offsets, dtype=np.int64)
        self.last = np.array(last, dtype=bool)

    def __len__(self):
        return len(self.step)

    def __getitem__(self, j):
        saves = self.saves[self.offsets[j]:self.offsets[j + 1]]
        return (int(self.step[j]), int(self.start[j]), [int(p) for p in saves],
                bool(self.last[j]))


class _Sweep:
    """The reversals of one reverse sweep, in order, from `parts`: (reversals, the first
    of them taken, the step they are counted from)."""

    def __init__(self, parts):
        self.parts = parts

    def __len__(self):
        return sum(len(rows) - first for rows, first, _ in self.parts)

    def __getitem__(self, j):
        for rows, first, shift in self.parts:
            if j < len(rows) - first:
                step, start, saves, last = rows[first + j]
                return step + shift, start + shift, [q + shift for q in saves], last
            j -= len(rows) - first
        raise IndexError(j)

class Revolve:
    """The binomial schedule of a loop over `steps` (a range) that keeps at most
    `snapshots` states, and the snapshots themselves. Generated code calls it (see the
    module docstring); `recomputed` counts the steps the reverse sweeps ran again. With
    `memory` (bytes, from `s2sad.grad(f, memory=...)`), the number of snapshots is as
    many states as fit in it, known when the first is saved (`snapshots_within`)."""

    def __init__(self, steps, snapshots, memory=None):
        self.steps = checkpointed(steps, snapshots)
        if not isinstance(steps, range):
            raise S2SADError("a checkpointed loop over itertools.count() needs a `break` in "
                             "its body: without one it does not end")
        self.memory = None if memory is None else checked_budget(memory)
        self.kept = {}
        self.recomputed = 0
        self.sweep, self.cursor = _Sweep([]), 0
        self.sweeps = 0
        self.snapshots, self.first, self.plan = None, None, Reversals()
        self.saving = {0} if len(steps) else set()
        if memory is None:
            self.planned(int(snapshots))

    def planned(self, snapshots):
        """Plan the schedule for `snapshots` snapshots."""
        n = len(self.steps)
        self.snapshots = snapshots
        plan = _reversals(n, snapshots)
        self.first = plan[0] if len(plan) else None
        self.plan = plan
        # the forward sweep: the first reversal's snapshots, and the state before the
        # last step (revolve's current state, with which the reverse sweep starts)
        self.saving = set(self.first[2]) | {n - 1} if len(plan) else set()

    def snapshot_before(self, i):
        """Whether the sweep running keeps the state before step `i`."""
        return self.steps.index(i) in self.saving

    def save(self, i, state):
        if self.snapshots is None:
            self.planned(snapshots_within(self.memory, state))
        self.kept[self.steps.index(i)] = state

    def restore(self, i):
        """The state kept before step `i`, where the reversal of the next step starts
        (released after its last use, but the first state); `snapshot_before` then
        names the snapshots to take on the way to that step."""
        step, start, saves, last = self.sweep[self.cursor]
        self.cursor += 1
        p = self.steps.index(i)
        self.saving = set(saves)
        state = self.kept[p]
        if last and p != 0:
            del self.kept[p]
        return state

    def advance(self, start, i):
        """The steps from `start` to `i` (without `i`)."""
        steps = self.steps[self.steps.index(start):self.steps.index(i)]
        self.recomputed += len(steps)
        return steps

    def reverse_sweep(self):
        """For each step `i` from the last: (`i`, the step before which the state its
        state is computed from is kept). (Each `restore` then moves to the next.)"""
        if self.first is None:
            return
        n = len(self.steps)
        if self.sweeps:
            # a pullback called again: only the state before the first step is left;
            # the forward sweep's other snapshots are taken again on the way
            self.kept = {0: self.kept[0]}
            first = (n - 1, 0, [p for p in self.first[2] if p != 0], True)
        else:
            first = (n - 1, n - 1, [], True)
        self.sweeps += 1
        self.sweep, self.cursor = _Sweep([([first], 0, 0), (self.plan, 1, 0)]), 0
        for j in range(len(self.sweep)):
            step, start, _, _ = self.sweep[j]
            yield self.steps[step], self.steps[start]

    def __repr__(self):
        return (f"<revolve schedule of {len(self.steps)} steps, {self.snapshots} snapshots, "
                f"{len(self.kept)} kept>")


def online_snapshots(n, k):
    """The positions of the snapshots the forward sweep of `Online` holds after `n`
    steps with `k` snapshots: every d-th step, d doubling (and every other snapshot
    released) whenever the k are taken and another is due."""
    d, kept = 1, []
    for p in range(n):
        if p % d == 0 and len(kept) == k and k > 1:
            d *= 2
            kept = [q for q in kept if q % d == 0]
        if p % d == 0 and len(kept) < k:
            kept.append(p)
    return kept


def online_segments(n, k):
    """[(start, end, snapshots)]: the parts of the steps before the last that `Online`'s
    reverse sweep reverses, each on the binomial schedule from its own start with that
    many snapshots (its start's among them). The parts start at some of the forward
    sweep's snapshots, chosen (by dynamic programming) for the fewest steps computed
    again, the j-th snapshot leaving k - j snapshots to its part; the others are
    released when the reverse sweep starts."""
    if n <= 1:
        return []
    held = [p for p in online_snapshots(n, k) if p < n - 1]
    ends = held[1:] + [n - 1]
    best = {e: (revolve_steps(e, k), [(0, e, k)]) for e in ends}     # from snapshot 0 alone
    for j in range(1, len(held)):
        start = held[j]
        for e in ends[j:]:
            cost = revolve_steps(e - start, k - j) + best[start][0]
            if cost < best[e][0]:
                best[e] = (cost, best[start][1] + [(start, e, k - j)])
    return best[n - 1][1]


def online_steps(n, k):
    """The steps `Online`'s reverse sweep computes again for a loop that stopped after
    `n` steps (its forward sweep runs the `n` once, as the function does). At most
    revolve_steps(n - 1, k): at most the n - 1 steps of one more forward sweep beyond
    the fewest possible, revolve_steps(n, k) counted from the start."""
    return sum(revolve_steps(e - s, c) for s, e, c in online_segments(n, k))


class Online(Revolve):
    """The schedule of a checkpointed loop that stops at a `break`, so that its number
    of steps is known only at its end: the forward sweep holds at most `snapshots`
    states, equally spaced, doubling the spacing (and releasing every other snapshot)
    when they are all taken (`online_snapshots`), and the state before the step it is
    about to run (the last step's, when the loop stops). The reverse sweep, the number
    of steps now known, reverses the last step from that state and the steps before it
    in parts, each on the binomial schedule (`online_segments`), computing
    `online_steps(n, k)` steps again; a pullback called again follows `Revolve`."""

    def __init__(self, steps, snapshots, memory=None):
        self.given = checkpointed(steps, snapshots)
        self.memory = None if memory is None else checked_budget(memory)
        self.snapshots = int(snapshots) if memory is None else None
        self.steps, self.first, self.count = None, None, 0
        self.kept, self.spacing, self.current = {}, 1, None
        self.indexes = []
        self.recomputed, self.sweeps = 0, 0
        self.sweep, self.cursor = _Sweep([]), 0

    def snapshot_before(self, i):
        if self.steps is not None:
            return super().snapshot_before(i)
        if len(self.indexes) < 2:
            self.indexes.append(i)
        self.count += 1
        return True         # (the state before the step that may be the last)

    def save(self, i, state):
        if self.steps is not None:
            return super().save(i, state)
        if self.snapshots is None:
            self.snapshots = snapshots_within(self.memory, state)
        p, k = self.count - 1, self.snapshots
        self.current = state
        if p % self.spacing == 0 and len(self.kept) == k and k > 1:
            self.spacing *= 2
            self.kept = {q: v for q, v in self.kept.items() if q % self.spacing == 0}
        if p % self.spacing == 0 and len(self.kept) < k:
            self.kept[p] = state

    def reverse_sweep(self):
        if self.steps is None:
            self.stopped()
            if self.count:
                yield from self.online_sweep()
            return
        yield from super().reverse_sweep()

    def stopped(self):
        """The loop has run its `count` steps: the plans of its reverse sweeps."""
        n = self.count
        start, stride = (self.indexes + [0, 1])[0], 1
        if len(self.indexes) == 2:
            stride = self.indexes[1] - self.indexes[0]
        self.steps = range(start, start + n * stride, stride)
        plan = _reversals(n, self.snapshots)
        self.first = plan[0] if len(plan) else None
        self.plan = plan

    def online_sweep(self):
        n = self.count
        segments = online_segments(n, self.snapshots)
        starts = {s for s, _, _ in segments}
        self.kept = {p: v for p, v in self.kept.items() if p in starts or p == 0}
        self.kept[n - 1] = self.current
        self.current = None
        self.sweeps += 1
        self.sweep = _Sweep([([(n - 1, n - 1, [], True)], 0, 0)] + [
            (_reversals(e - s, c), 0, s) for s, e, c in reversed(segments)])
        self.cursor = 0
        for j in range(len(self.sweep)):
            step, start, _, _ = self.sweep[j]
            yield self.steps[step], self.steps[start]

    def __repr__(self):
        if self.steps is None:
            return (f"<online schedule, {self.count} steps so far, {self.snapshots} "
                    f"snapshots, {len(self.kept)} kept>")
        return "<online " + super().__repr__()[1:]


helpers(__name__)
