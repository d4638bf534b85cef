"""The derivatives of an ODE solve by SciPy (`solve_ivp`, `odeint`): reverse mode by the
continuous adjoint method, forward mode by forward sensitivities, each integrated by
`solve_ivp` itself with the user's method and tolerances.

The problem is `y' = f(t, y, p)`, `y(t0) = y0`, observed at the output times `ts` (the
user's `t_eval`, or the solver's own steps). `Rhs` holds `f` at the parameters of the
call and its derivatives, the parameters' as one flat vector (what the rule's caller
flattens the user's `args` and the values the function reads to).

Reverse mode. With `g_k` the adjoint of the output `y(ts[k])`, the adjoint state
`a(t) = dL/dy(t)` solves `a' = -a f_y` backwards, jumping by `g_k` at each output time,
and `p_bar = int a f_p dt`, integrated beside it; then `y0_bar = a(t0)`,
`ts_bar[k] = g_k . f(ts[k], y(ts[k]))` and `t0_bar = -a(t0) . f(t0, y0)`. The adjoint
reads the forward solution, solved once more with SciPy's `OdeSolver` and kept as dense
output for at most `SEGMENT` steps: a longer solve keeps the state at the start of each
segment (a checkpoint) and solves each segment again when the adjoint reaches it, so
the memory does not grow with the number of steps. The adjoint is solved from one jump to
the next, each solve starting with the step the one before would have taken next.

Reverse mode through the steps (`discrete_adjoint`). An explicit Runge-Kutta solve
(`DISCRETE`, at `rtol` at most `DISCRETE_RTOL`) runs with a subclass of its method that
records its steps (`recording`, a `Record`); their adjoint goes back through them as they
were computed, the step sizes held fixed: one vjp of `f` per stage, an output inside a
step read through the step's dense output (y + h K^T P x^j), so the outputs cost no steps.
The record keeps one float a step (its start: the sizes are the differences), a
checkpoint (the state and f) every `HELD` steps and the stages of at most the last two
segments of `HELD` steps; the adjoint takes the steps of each earlier segment again from
its checkpoint, with the recorded sizes and the solver's arithmetic (`_take`: the same
steps, bit for bit), and drops them once through. So the stages held do not grow with the
number of steps (what grows: one float a step, a checkpoint a segment), and a solve of at
most `2 HELD` steps takes none again.

Forward mode. The tangent `s = dy` solves `s' = f_y s + f_p p_dot`, beside `y`, from
`s(t0) = y0_dot - f(t0, y0) t0_dot`; the tangent of an output is
`s(ts[k]) + f(ts[k], y(ts[k])) ts_dot[k]`.

Second derivatives (hessian, hvp: forward mode over the reverse-mode rule,
`adjoint_tangent`). Along the tangents `p_dot` of the parameters and `y0_dot` of the
initial state (the times held fixed), the adjoint's tangent `a_dot` solves
`a_dot' = -a_dot f_y - a (f_yy s + f_yp p_dot)` backwards, jumping by the tangents of the
outputs' adjoints: with `a` it is the adjoint of the system `Y = (y, s)`,
`Y' = (f, f_y s + f_p p_dot)` (`a_dot` the adjoint of `y`, `a` of `s`), seeded with
(g_dot, g), whose parameters' adjoint is (p_bar_dot, p_bar) when `p_dot` counts as
parameters too. So the adjoint of that system gives the first derivative and its tangent
at once, the vjp of its right-hand side being s2sad's forward mode over its gradient of
a . f: the adjoint of its steps, taken again with the recorded sizes (`Record.retaken`,
the tangents of the steps, recorded with checkpoints as the solve's are), where the
gradient is the adjoint of the steps, else its continuous adjoint (`adjoint`).

The solver's own steps (`t_eval=None`) move with the parameters; a derivative at such a
step holding its time fixed would not be the derivative of the result, so only the ends
(`t0` and the final time, both the user's) carry one: reverse mode refuses an adjoint
on an inner step (`InnerStepError`), forward mode gives NaN there.

The module needs SciPy; only the SciPy rules import it.
"""
from array import array
from bisect import bisect_right
from dataclasses import dataclass
from typing import Callable

import numpy as np
import scipy.integrate

from ..errors import S2SADError


class InnerStepError(S2SADError):
    """A derivative asked of the solution at a step the solver chose (`t_eval=None`)."""


class FailedSolveError(S2SADError):
    """A solve of the derivative's system failed (SciPy's message attached)."""


@dataclass(frozen=True)
class Rhs:
    """`fun(t, y)`, its vector-Jacobian product `vjp(t, y, a) -> (a f_y, a f_p)` (`a f_p`
    flat, of `size`) and its Jacobian-vector product `jvp(t, y, y_dot) -> f_y y_dot + f_p
    p_dot` along the parameters' tangent `p_dot`."""
    fun: Callable
    size: int = 0
    vjp: Callable | None = None
    jvp: Callable | None = None


#: the steps of the forward solution held at once (as dense output) by reverse mode: a
#: longer solve is solved again segment by segment from checkpoints
SEGMENT = 512


@dataclass(frozen=True)
class Solver:
    """How the user's call solves: `method` (a name of `solve_ivp`'s or an `OdeSolver`
    class), `rtol`, `atol` and `max_step`."""
    method: str | type = "RK45"
    rtol: float = 1e-3
    atol: float | np.ndarray = 1e-6
    max_step: float = np.inf

    def start(self, fun, t, y, t_bound, atol=None, first_step=None):
        """The `OdeSolver` of `y' = fun(t, y)` from `(t, y)` towards `t_bound`."""
        method = (getattr(scipy.integrate, self.method) if isinstance(self.method, str)
                  else self.method)
        return method(fun, t, y, t_bound, rtol=self.rtol, max_step=self.max_step,
                      atol=self.atol if atol is None else atol, first_step=first_step)

    def solve(self, fun, t_span, y0, *, atol=None, t_eval=None):
        sol = scipy.integrate.solve_ivp(
            fun, t_span, y0, method=self.method, rtol=self.rtol, max_step=self.max_step,
            atol=self.atol if atol is None else atol, t_eval=t_eval)
        if not sol.success:
            _failed(sol.message)
        return sol

    def scalar_atol(self):
        return float(np.min(self.atol))


def _failed(message):
    raise FailedSolveError(
        f"solve_ivp failed on the derivative's system: {message}; tighter tolerances or "
        f"another method may help")


def _step(solver):
    message = solver.step()
    if solver.status == "failed":
        _failed(message)


def _checkpoints(rhs, solver, t0, y0, t_end):
    """The forward solution from `(t0, y0)` to `t_end` in segments of at most `SEGMENT`
    steps: `[(t, y), ...]` at the start of each and the end, and the first segment's
    dense output (the later ones are solved again when the adjoint reaches them)."""
    points, first = [(t0, y0)], None
    if t_end != t0:
        forward = solver.start(rhs.fun, t0, y0, t_end)
        steps, taken = [], 0
        while forward.status == "running":
            _step(forward)
            taken += 1
            if first is None:
                steps.append((forward.t, forward.dense_output()))
            if taken % SEGMENT == 0 or forward.status == "finished":
                points.append((forward.t, forward.y.copy()))
                if first is None:
                    first, steps = _dense(t0, steps), None
    return points, first


def _dense(t0, steps):
    return scipy.integrate.OdeSolution([t0] + [t for t, _ in steps], [d for _, d in steps])


def _segment(rhs, solver, t_start, y_start, t_end):
    """The dense forward solution on `[t_start, t_end]`, solved again from its start."""
    forward = solver.start(rhs.fun, t_start, y_start, t_end)
    steps = []
    while forward.status == "running":
        _step(forward)
        steps.append((forward.t, forward.dense_output()))
    return _dense(t_start, steps)


def adjoint(rhs, solver, t0, y0, ts, ys, ys_bar, ts_bar=None, steps=False):
    """`(t0_bar, y0_bar, p_bar, ts_bar)`: the adjoints of the start time, the initial
    state, the parameters and the output times, given the solution `ys` (n x len(ts)) at
    `ts` and the adjoint `ys_bar` of it (and `ts_bar` of `ts`, added on). With `steps`,
    `ts` are the solver's steps (`ts[0]` is `t0`, `ts[-1]` the final time): an adjoint of
    an inner step is refused."""
    n = len(y0)
    ys_bar, ts_bar, outputs = _outputs_read(rhs, n, ts, ys, ys_bar, ts_bar, steps)
    later = [k for k in outputs[::-1] if ys_bar[:, k].any()]     # where the adjoint jumps
    points, first = _checkpoints(rhs, solver, t0, y0, ts[later[0]] if later else t0)
    z = np.zeros(n + rhs.size)
    first_step = None
    atol = solver.scalar_atol()
    for j in range(len(points) - 1, 0, -1):
        (t_start, y_start), (t_end, _) = points[j - 1], points[j]
        # (read through a list emptied after the segment: SciPy's solvers are reference
        # cycles, which the garbage collector may free long after)
        dense = [_segment(rhs, solver, t_start, y_start, t_end) if j > 1 else first]

        def backwards(t, z, dense=dense):
            y_bar, p_bar = rhs.vjp(t, dense[0](t), z[:n])
            return -np.concatenate([np.ravel(y_bar), np.ravel(p_bar)])
        t = t_end
        while t != t_start:
            while later and ts[later[0]] == t:
                z[:n] += ys_bar[:, later.pop(0)]
            stop = ts[later[0]] if later and _between(ts[later[0]], t_start, t) else t_start
            back = solver.start(backwards, t, z, stop, atol=atol,
                                first_step=first_step and min(first_step, abs(stop - t)))
            while back.status == "running":
                _step(back)
            # the next solve starts with the step this one would take next (SciPy's
            # solvers but LSODA keep it as h_abs), not by guessing one again
            first_step = getattr(back, "h_abs", None)
            z, t = back.y, stop
        dense[0] = None
    for k in later:
        z[:n] += ys_bar[:, k]
    a, p_bar = z[:n], z[n:]
    return -a @ rhs.fun(t0, y0), a, p_bar, ts_bar


#: the explicit Runge-Kutta methods (of SciPy's) whose steps reverse mode differentiates
#: as they were taken (the discrete adjoint: `recording`, `discrete_adjoint`)
DISCRETE = ("RK45", "RK23")

#: the loosest `rtol` at which reverse mode takes the adjoint of the steps: at looser ones
#: the derivative of the computed solution is further from the exact one than the
#: continuous adjoint is (on Lotka-Volterra, 1.2e-2 against 7.7e-3 at 1e-4, 0.14 against
#: 2.4e-2 at 1e-3; 1.7e-4 against 3.7e-4 at 1e-5)
DISCRETE_RTOL = 1e-5

#: the steps of a segment of a recorded solve: the solve keeps a checkpoint at the start of
#: each, the stages of at most the last two segments' steps, and the adjoint takes the
#: steps of an earlier segment again from its checkpoint (`Record`)
HELD = 32

#: the floats of the stages a segment holds at most: a large state has shorter segments
RECORDED = 1 << 20


class Record:
    """The steps a solve took, kept so that their adjoint can go back through them: the
    start of each step and the end of the last (`times`, one float a step: the steps'
    sizes are their differences, as the solver computed them), at the start of every
    `every` steps a checkpoint (the state and f there, one array), and the steps from
    `first` on as they were computed (`kept`: `(t, h, y, K)` each, its start, its signed
    size, the state at its start and the stages, K[-1] = f at its end). `kept` holds at
    most two segments of steps: at the start of a segment beyond those, the older of them
    is dropped. The steps before `first` are taken again from their checkpoints
    (`backwards`), with the same sizes and the same arithmetic as the solver's, so they
    are the same steps."""

    def __init__(self, method):
        self.method, self.times, self.end = method, array("d"), None
        self.checkpoints, self.kept, self.first, self.every = [], [], 0, None

    def __len__(self):
        return len(self.times)

    def add(self, t, end, y, stages):
        """Record the step from `(t, y)` to the time `end` of stages `stages`."""
        i = len(self.times)
        if self.every is None:          # (the state's size is known from the first step)
            self.every = max(1, min(HELD, RECORDED // (stages.size + y.size)))
        if i % self.every == 0:
            self.checkpoints.append(np.concatenate([y, stages[0]]))   # (y and f, one array)
            if i - self.first == 2 * self.every:
                del self.kept[:self.every]
                self.first += self.every
        self.times.append(t)
        self.end = end
        self.kept.append((t, end - t, y, stages.copy()))

    def end_of(self, i):
        return self.times[i + 1] if i + 1 < len(self.times) else self.end

    def step(self, i):
        """`(t, h)`: the start and signed size of step `i`."""
        return self.times[i], self.end_of(i) - self.times[i]

    def backwards(self, fun):
        """`(i, (t, h, y, K))` for each step, the last first: the kept steps as they were
        computed, the earlier ones taken again by `fun` a segment at a time, from its
        checkpoint (one segment's stages held at once)."""
        for i in range(len(self.kept) - 1, -1, -1):
            yield self.first + i, self.kept[i]
        for j in range(self.first // self.every - 1, -1, -1):
            start = j * self.every
            y, f = np.split(self.checkpoints[j], 2)
            segment = list(_take(fun, self, start, start + self.every, y, f))
            while segment:
                yield start + len(segment) - 1, segment.pop()

    def retaken(self, fun, y0):
        """The Record of the same steps (the same starts and sizes) taken by the system
        `fun` from `y0`: for y and its sensitivity, the tangents of the steps taken."""
        out = Record(self.method)
        for i, (t, _, y, K) in enumerate(_take(fun, self, 0, len(self), y0,
                                                fun(self.times[0], y0))):
            out.add(t, self.end_of(i), y, K)
        return out


def _take(fun, record, start, stop, y, f):
    """The steps `start` to `stop` of `record` taken by `fun` from the state `y` (and f
    there, `f`): `(t, h, y, K)` each, computed as SciPy's Runge-Kutta step computes them
    (`scipy.integrate._ivp.rk.rk_step`), so the same bits as the solve's."""
    tableau = getattr(scipy.integrate, record.method)
    a_, b_, c_, stages = tableau.A, tableau.B, tableau.C, tableau.n_stages
    for i in range(start, min(stop, len(record))):
        t, h = record.step(i)
        K = np.empty((stages + 1, np.size(y)))
        K[0] = f
        for s in range(1, stages):
            K[s] = fun(t + c_[s] * h, y + np.dot(K[:s].T, a_[s, :s]) * h)
        y_new = y + h * np.dot(K[:-1].T, b_)
        K[-1] = f = fun(t + h, y_new)
        yield t, h, y, K
        y = y_new


def recording(method):
    """`(solver class, Record)`: the `OdeSolver` of `method` (one of `DISCRETE`) that
    records its steps in the Record as it takes them, the solve otherwise unchanged."""
    record = Record(method)
    base = getattr(scipy.integrate, method)

    class Recorded(base):
        def _step_impl(self):
            t, y = self.t, self.y
            done, message = super()._step_impl()
            if done:
                record.add(t, self.t, y, self.K)
            return done, message
    Recorded.__name__ = Recorded.__qualname__ = method
    return Recorded, record


def discrete_adjoint(rhs, record, t0, y0, ts, ys, ys_bar, ts_bar=None, at_steps=False):
    """As `adjoint`, but the adjoint of the solve's own steps (`record`'s, a Record),
    each differentiated as it was computed, the step sizes held fixed: one vjp of the
    right-hand side per stage, none per output (an output inside a step is its dense
    output, a polynomial in the stages). The steps the record no longer keeps are taken
    again from its checkpoints, a segment at a time (`Record.backwards`). With
    `at_steps`, the outputs are the steps' ends."""
    tableau = getattr(scipy.integrate, record.method)
    a_, b_, c_, p_ = tableau.A, tableau.B, tableau.C, tableau.P
    stages = tableau.n_stages
    n, m = len(y0), len(ts)
    ys_bar, ts_bar, outputs = _outputs_read(rhs, n, ts, ys, ys_bar, ts_bar, at_steps)
    # the outputs of each step: those up to its end, in the order SciPy reads them (the
    # last step's, all those left)
    direction = 1.0 if record.step(0)[1] > 0 else -1.0
    order = [direction * float(t) for t in ts]      # (increasing)

    def up_to_end_of(i):
        if i < 0:
            return 0
        t, h = record.step(i)
        return bisect_right(order, direction * (t + h))
    end = m         # (the outputs up to the end of the step: all of them, for the last)
    powers = np.arange(1, p_.shape[1] + 1)
    chosen = set(outputs)
    y_bar = np.zeros(n)
    p_bar = np.zeros(rhs.size)
    carry = None            # the adjoint of f at the start of the step after
    for i, (t, h, y, K) in record.backwards(rhs.fun):
        k_bar = np.zeros_like(K)
        if carry is not None:
            k_bar[stages] = carry
        direct = 0.0
        begin = up_to_end_of(i - 1)
        here = [k for k in range(begin, end) if k in chosen]
        end = begin
        if here and at_steps:       # (the outputs are y at the steps' ends)
            for k in here:
                if k == 0:
                    direct = ys_bar[:, k]
                else:
                    y_bar = y_bar + ys_bar[:, k]
        elif here:                  # y(t_k) = y + h K^T P x_k^(1, 2, ...)
            g = ys_bar[:, here]
            x = (ts[here] - t) / h
            direct = g.sum(axis=1)
            k_bar += h * (p_ @ (x[None, :] ** powers[:, None])) @ g.T
        y_new = y + h * (b_ @ K[:stages])
        if k_bar[stages].any():         # f at the end: f(t + h, y_new)
            more, p_more = rhs.vjp(t + h, y_new, k_bar[stages])
            y_bar = y_bar + more
            p_bar += p_more
        k_bar[:stages] += h * b_[:, None] * y_bar
        y_bar = y_bar + direct
        for s in range(stages - 1, 0, -1):
            a = a_[s, :s]
            state = y + h * (a @ K[:s])
            more, p_more = rhs.vjp(t + c_[s] * h, state, k_bar[s])
            y_bar = y_bar + more
            p_bar += p_more
            k_bar[:s] += h * a[:, None] * more
        carry = k_bar[0]
    if carry is not None and carry.any():       # f(t0, y0), the first stage
        more, p_more = rhs.vjp(t0, y0, carry)
        y_bar = y_bar + more
        p_bar += p_more
    return -y_bar @ rhs.fun(t0, y0), y_bar, p_bar, ts_bar


def adjoint_tangent(rhs, twice, solver, t0, y0, y0_dot, ts, ys, ys_dot, ys_bar, ys_bar_dot,
                    ts_bar=None, ts_bar_dot=None, steps=False, recorded=None):
    """`(t0_bar, y0_bar, p_bar, ts_bar)` as `adjoint` gives them, and their tangents along
    `y0_dot`, the parameters' tangent (`twice`'s, the Rhs of the system of y and its
    sensitivity s, see the module's docstring), the outputs' tangents `ys_dot` and the
    adjoints' `ys_bar_dot` and `ts_bar_dot` (None for zero), the times held fixed. With
    `recorded` (the Record of the solve's steps), forward over the adjoint of those steps:
    the system of y and s stepped with the same sizes (`Record.retaken`), and
    `discrete_adjoint` of that."""
    n, m = len(y0), len(ts)
    ys_bar = np.asarray(ys_bar, dtype=float).reshape(n, m)
    ys_bar_dot = np.zeros((n, m)) if ys_bar_dot is None else np.asarray(
        ys_bar_dot, dtype=float).reshape(n, m)
    y0_dot = np.zeros(n) if y0_dot is None else np.asarray(y0_dot, dtype=float)
    ys_dot = np.nan_to_num(np.asarray(ys_dot, dtype=float).reshape(n, m))  # (inner steps)
    start = np.concatenate([y0, y0_dot])
    if recorded:
        t0_bar_dot, y0_bars, p_bars, ts_bar_dot = discrete_adjoint(
            twice, recorded.retaken(twice.fun, start), t0, start, ts,
            np.concatenate([ys, ys_dot]), np.concatenate([ys_bar_dot, ys_bar]), ts_bar_dot,
            steps)
    else:
        both = Solver(solver.method, solver.rtol, np.concatenate(
            [np.broadcast_to(solver.atol, (n,))] * 2), solver.max_step)
        t0_bar_dot, y0_bars, p_bars, ts_bar_dot = adjoint(
            twice, both, t0, start, ts, np.concatenate([ys, ys_dot]),
            np.concatenate([ys_bar_dot, ys_bar]), ts_bar_dot, steps)
    _, ts_bar, _ = _outputs_read(rhs, n, ts, ys, ys_bar, ts_bar, steps)
    size = twice.size // 2
    y0_bar, p_bar = y0_bars[n:], p_bars[size:]
    return ((-y0_bar @ rhs.fun(t0, y0), y0_bar, p_bar, ts_bar),
            (t0_bar_dot, y0_bars[:n], p_bars[:size], ts_bar_dot))


def _between(t, low, high):
    """Whether `t` lies strictly between `low` and `high`, either way round."""
    return min(low, high) < t < max(low, high)


def _only_ends(ys_bar, ts_bar):
    inner = np.any(ys_bar[:, 1:-1] != 0) or np.any(ts_bar[1:-1] != 0)
    if inner:
        raise InnerStepError(
            "the solution at a step solve_ivp chose (t_eval=None) has no derivative: the "
            "steps move with the parameters; pass the times you need as t_eval= (only the "
            "last column, at the final time, and the first have one)")


def tangent(rhs, solver, t0, y0, ts, ys, t0_dot, y0_dot, ts_dot, steps=False):
    """`ys_dot`: the tangent of the solution `ys` at `ts` along `t0_dot`, `y0_dot`, the
    parameters' tangent (`rhs.jvp`'s) and `ts_dot` (None for zero). With `steps`, `ts` are
    the solver's steps: the inner columns are NaN (see the module's docstring)."""
    n, m = len(y0), len(ts)
    y0_dot = np.zeros(n) if y0_dot is None else np.asarray(y0_dot, dtype=float)
    ts_dot = np.zeros(m) if ts_dot is None else np.asarray(ts_dot, dtype=float)
    s0 = y0_dot - rhs.fun(t0, y0) * t0_dot
    outputs = sorted({0, m - 1}) if steps else list(range(m))

    def both(t, w):
        y, s = w[:n], w[n:]
        return np.concatenate([rhs.fun(t, y), rhs.jvp(t, y, s)])
    if ts[-1] == t0:
        s = np.repeat(s0[:, None], len(outputs), axis=1)
    else:
        atol = np.concatenate([np.broadcast_to(solver.atol, (n,))] * 2)
        s = solver.solve(both, (t0, ts[-1]), np.concatenate([y0, s0]), atol=atol,
                         t_eval=ts[outputs]).y[n:]
    ys_dot = np.full((n, m), np.nan)
    for j, k in enumerate(outputs):
        ys_dot[:, k] = s[:, j] + rhs.fun(ts[k], ys[:, k]) * ts_dot[k]
    return ys_dot


def _outputs_read(rhs, n, ts, ys, ys_bar, ts_bar, at_steps):
    """(`ys_bar` as an n x len(ts) array, `ts_bar` with the output times' own adjoints
    added, the indexes of the outputs whose adjoints count): with `at_steps` (the outputs
    are the solver's steps), only the first and the last, an inner one refused."""
    m = len(ts)
    ys_bar = np.asarray(ys_bar, dtype=float).reshape(n, m)
    ts_bar = np.zeros(m) if ts_bar is None else np.array(ts_bar, dtype=float).reshape(m)
    outputs = list(range(m))
    if at_steps:
        _only_ends(ys_bar, ts_bar)
        outputs = sorted({0, m - 1})
    for k in outputs:
        ts_bar[k] += ys_bar[:, k] @ rhs.fun(ts[k], ys[:, k])
    return ys_bar, ts_bar, outputs
