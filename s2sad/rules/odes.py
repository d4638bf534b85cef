"""The derivatives of an ODE solve by SciPy (`solve_ivp`, `odeint`): reverse mode by the
continuous adjoint method, forward mode by forward sensitivities, each integrated by
`solve_ivp` itself with the user's method and tolerances.

The problem is `y' = f(t, y, p)`, `y(t0) = y0`, observed at the output times `ts` (the
user's `t_eval`, or the solver's own steps). `Rhs` holds `f` and its derivatives over a
flat vector of parameters `p` (what the rule's caller flattens the user's `args` to).

Reverse mode. With `g_k` the adjoint of the output `y(ts[k])`, the adjoint state
`a(t) = dL/dy(t)` solves `a' = -a f_y` backwards, jumping by `g_k` at each output time,
and `p_bar = int a f_p dt`, integrated beside it; then `y0_bar = a(t0)`,
`ts_bar[k] = g_k . f(ts[k], y(ts[k]))` and `t0_bar = -a(t0) . f(t0, y0)`. Between two
output times the forward solution is solved again from the one before, with
`dense_output=True`, so the memory held is that of one interval's steps (the states at
the output times, which the result holds anyway, are the checkpoints).

Forward mode. The tangent `s = dy` solves `s' = f_y s + f_p p_dot`, beside `y`, from
`s(t0) = y0_dot - f(t0, y0) t0_dot`; the tangent of an output is
`s(ts[k]) + f(ts[k], y(ts[k])) ts_dot[k]`.

The solver's own steps (`t_eval=None`) move with the parameters; a derivative at such a
step holding its time fixed would not be the derivative of the result, so only the ends
(`t0` and the final time, both the user's) carry one: reverse mode refuses an adjoint
on an inner step (`InnerStepError`), forward mode gives NaN there.

The module needs SciPy; only the SciPy rules import it.
"""
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
    """`fun(t, y, p)`, its vector-Jacobian product `vjp(t, y, p, a) -> (a f_y, a f_p)`
    and its Jacobian-vector product `jvp(t, y, p, y_dot, p_dot) -> f_y y_dot + f_p p_dot`,
    `p` a flat float vector."""
    fun: Callable
    vjp: Callable | None = None
    jvp: Callable | None = None


@dataclass(frozen=True)
class Solver:
    """How the user's call solves: `method`, `rtol`, `atol` and SciPy's other options
    that do not change the problem (`max_step`, `first_step`...)."""
    method: str = "RK45"
    rtol: float = 1e-3
    atol: float | np.ndarray = 1e-6
    options: tuple = ()

    def solve(self, fun, t_span, y0, *, atol=None, **kw):
        sol = scipy.integrate.solve_ivp(
            fun, t_span, y0, method=self.method, rtol=self.rtol,
            atol=self.atol if atol is None else atol, **dict(self.options), **kw)
        if not sol.success:
            raise FailedSolveError(
                f"solve_ivp failed on the derivative's system ({self.method}): "
                f"{sol.message}; tighter tolerances or another method may help")
        return sol

    def scalar_atol(self):
        return float(np.min(self.atol))


def _interval(solver, rhs, p, t_start, y_start, t_end):
    """The forward solution on [t_start, t_end] from its checkpoint, as a function of t."""
    if t_start == t_end:
        return lambda t: y_start
    return solver.solve(rhs.fun, (t_start, t_end), y_start, args=(p,), dense_output=True).sol


def adjoint(rhs, solver, t0, y0, p, ts, ys, ys_bar, ts_bar=None, steps=False):
    """`(t0_bar, y0_bar, p_bar, ts_bar)`: the adjoints of the start time, the initial
    state, the parameters and the output times, given the solution `ys` (n x len(ts)) at
    `ts` and the adjoint `ys_bar` of it (and `ts_bar` of `ts`, added on). With `steps`,
    `ts` are the solver's steps (`ts[0]` is `t0`, `ts[-1]` the final time): an adjoint of
    an inner step is refused."""
    n, m = len(y0), len(ts)
    ys_bar = np.asarray(ys_bar, dtype=float).reshape(n, m)
    ts_bar = np.zeros(m) if ts_bar is None else np.array(ts_bar, dtype=float).reshape(m)
    outputs = range(m)
    if steps:
        _only_ends(ys_bar, ts_bar)
        outputs = sorted({0, m - 1})
    a = np.zeros(n)
    p_bar = np.zeros(len(p))
    atol = solver.scalar_atol()
    for i in range(len(outputs) - 1, -1, -1):
        k = outputs[i]
        t_k, y_k = ts[k], ys[:, k]
        a = a + ys_bar[:, k]
        ts_bar[k] += ys_bar[:, k] @ rhs.fun(t_k, y_k, p)
        t_prev, y_prev = (ts[outputs[i - 1]], ys[:, outputs[i - 1]]) if i else (t0, y0)
        if t_prev == t_k:
            continue
        y_of = _interval(solver, rhs, p, t_prev, y_prev, t_k)

        def backwards(t, z, y_of=y_of):
            y_bar, p_bar = rhs.vjp(t, y_of(t), p, z[:n])
            return -np.concatenate([np.ravel(y_bar), np.ravel(p_bar)])
        z = solver.solve(backwards, (t_k, t_prev), np.concatenate([a, p_bar]),
                         atol=atol).y[:, -1]
        a, p_bar = z[:n], z[n:]
    return -a @ rhs.fun(t0, y0, p), a, p_bar, ts_bar


def _only_ends(ys_bar, ts_bar):
    inner = np.any(ys_bar[:, 1:-1] != 0) or np.any(ts_bar[1:-1] != 0)
    if inner:
        raise InnerStepError(
            "the solution at a step solve_ivp chose (t_eval=None) has no derivative: the "
            "steps move with the parameters; pass the times you need as t_eval= (only the "
            "last column, at the final time, and the first have one)")


def tangent(rhs, solver, t0, y0, p, ts, ys, t0_dot, y0_dot, p_dot, ts_dot, steps=False):
    """`ys_dot`: the tangent of the solution `ys` at `ts` along `t0_dot`, `y0_dot`,
    `p_dot` and `ts_dot` (None for zero). With `steps`, `ts` are the solver's steps: the
    inner columns are NaN (see the module's docstring)."""
    n, m = len(y0), len(ts)
    y0_dot = np.zeros(n) if y0_dot is None else np.asarray(y0_dot, dtype=float)
    p_dot = np.zeros(len(p)) if p_dot is None else np.asarray(p_dot, dtype=float)
    ts_dot = np.zeros(m) if ts_dot is None else np.asarray(ts_dot, dtype=float)
    s0 = y0_dot - rhs.fun(t0, y0, p) * t0_dot
    outputs = sorted({0, m - 1}) if steps else list(range(m))

    def both(t, w):
        y, s = w[:n], w[n:]
        return np.concatenate([rhs.fun(t, y, p), rhs.jvp(t, y, p, s, p_dot)])
    if ts[-1] == t0:
        s = np.repeat(s0[:, None], len(outputs), axis=1)
    else:
        atol = np.concatenate([np.broadcast_to(solver.atol, (n,))] * 2)
        s = solver.solve(both, (t0, ts[-1]), np.concatenate([y0, s0]), atol=atol,
                         t_eval=ts[outputs]).y[n:]
    ys_dot = np.full((n, m), np.nan)
    for j, k in enumerate(outputs):
        ys_dot[:, k] = s[:, j] + rhs.fun(ts[k], ys[:, k], p) * ts_dot[k]
    return ys_dot
