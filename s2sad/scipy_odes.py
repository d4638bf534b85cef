"""SciPy's ODE solvers called in differentiated code: the Takers (frontend/callables.py)
of `solve_ivp` and `odeint` and the objects that stand for their calls (`Standing`, see
s2sad/implicit.py). Loaded with SciPy's other solvers, once the user's code imported SciPy.

Each call runs as the user wrote it and is refused at run time if the solve failed. Its
derivative with respect to the initial state, the time points and the values the
right-hand side reads (through `args=` or its closure) comes from rules/odes.py: reverse
mode by the adjoint method, forward mode by forward sensitivities, integrated by
`solve_ivp` with the call's method and tolerances, with s2sad's own vjp and jvp of the
right-hand side, compiled once per call's types and cached. Second derivatives (hessian,
hvp) are forward mode over the reverse-mode rule: the adjoint (of the steps, or the
continuous one) of the state and its forward sensitivity together
(`RightHandSide.twice`, `odes.adjoint_tangent`), the times held fixed (their second
derivatives are refused where the user's code calls the solver).
"""
import inspect

import numpy as np
from scipy import integrate

from . import driver, forward_api, implicit
from .compilation import arg_types_of
from .frontend.callables import TAKERS, Taker
from .frontend.source import function_from_source, identifier
from .rules import odes, pytrees


class Parameters:
    """The values `theta` a right-hand side reads (its extra arguments, then the values
    bound to it) that carry a derivative, as one flat vector."""

    def __init__(self, theta):
        self.wrt = [k for k, v in enumerate(theta) if pytrees.carries_derivative(v)]
        self.parts = [pytrees.flatten(theta[k]) for k in self.wrt]
        self.sizes = [[np.size(leaf) if pytrees.carries_derivative(leaf) else 0
                       for leaf in leaves] for leaves, _ in self.parts]
        self.size = sum(map(sum, self.sizes))
        self.numbers = all(not pytrees.is_structure(theta[k]) and np.ndim(theta[k]) == 0
                           for k in self.wrt)

    def flat(self, adjoints):
        """The adjoints of the values, given by value, as one vector."""
        if self.numbers and None not in adjoints:
            return np.array(adjoints, dtype=float)
        out = [np.zeros(0)]
        for adjoint, (_, structure), sizes in zip(adjoints, self.parts, self.sizes):
            for leaf, size in zip(pytrees.leaves_as(adjoint, structure), sizes):
                if size:
                    out.append(np.zeros(size) if leaf is None else np.ravel(leaf))
        return np.concatenate(out).astype(float)

    def split(self, vector):
        """{position in theta: its adjoint} of the vector of adjoints `vector`."""
        out, i = {}, 0
        for k, (leaves, structure), sizes in zip(self.wrt, self.parts, self.sizes):
            parts = []
            for leaf, size in zip(leaves, sizes):
                part = vector[i:i + size]
                i += size
                parts.append(None if not size else float(part[0]) if np.ndim(leaf) == 0
                             else part.reshape(np.shape(leaf)))
            out[k] = pytrees.unflatten(structure, parts)
        return out


class RightHandSide:
    """The user's right-hand side `fn` as s2sad differentiates it at run time: `at(t, y,
    *theta)` calls `fn(t, y, *extra, **bound)` (`fn(y, t, ...)` for odeint's order)."""

    def __init__(self, fn, n_extra, names, tfirst=True):
        extra = [f"a{k}" for k in range(n_extra)]
        bound = [f"b{k}" for k in range(len(names))]
        own = ["t", "y"] if tfirst else ["y", "t"]
        call = ", ".join(own + extra + [f"{n}={b}" for n, b in zip(names, bound)])
        self.at = function_from_source(
            f"def {identifier(fn)}_rhs({', '.join(['t', 'y'] + extra + bound)}):\n"
            f"    return _s2s_fn({call})\n", {"_s2s_fn": fn})
        self.at.__module__ = getattr(fn, "__module__", None) or "__main__"
        # (its value as one flat array, as SciPy reads it: what `twice` differentiates)
        self.flat = function_from_source(
            f"def {identifier(fn)}_flat({', '.join(['t', 'y'] + extra + bound)}):\n"
            f"    return _s2s_ravel(_s2s_array(_s2s_fn({call})))\n",
            {"_s2s_fn": fn, "_s2s_ravel": np.ravel, "_s2s_array": np.array})
        self.flat.__module__ = self.at.__module__
        self._paired = {}       # {wrt: forward over its gradient (`twice`)}

    def at_parameters(self, y0, theta, theta_dots=None):
        """The `odes.Rhs` of the problem at the values `theta` (with their tangents
        `theta_dots` for its jvp, None where none)."""
        params = Parameters(theta)
        wrt = (1,) + tuple(2 + k for k in params.wrt)
        args = (0.0, np.asarray(y0, dtype=float)) + tuple(theta)
        types = arg_types_of(self.at, args)

        def fun(t, y):
            return _vector(self.at(t, y, *theta))
        vjp = jvp = None
        if theta_dots is None:
            pullback_of = driver.derivative(self.at, wrt, types).fn

            def vjp(t, y, a):
                out, pullback = pullback_of(t, y, *theta)
                adjoints = pullback(_shaped_as(a, out))
                return np.ravel(adjoints[0]), params.flat(adjoints[1:])
        else:
            tangent_of = forward_api.compiled(self.at, wrt, types)
            names = tangent_of.tangent_names
            dots = [theta_dots[k] if theta_dots[k] is not None
                    else pytrees.zeros_like(theta[k]) for k in params.wrt]

            def jvp(t, y, y_dot):
                return _vector(tangent_of.fn(t, y, *theta,
                                             **dict(zip(names, [y_dot] + dots)))[1])
        return params, odes.Rhs(fun, params.size, vjp, jvp)

    def twice(self, y0, theta, theta_dots):
        """`(params, rhs)`: the `odes.Rhs` of the problem of `y` and its forward
        sensitivity `s` together, `Y' = F(t, Y) = (f(t, y), f_y s + f_p p_dot)` along the
        tangents `theta_dots` of `theta` (None where none), whose parameters are the
        values' and their tangents' (`params.size` each): the adjoint of that system is
        forward mode over the adjoint of f's (see `odes.adjoint_tangent`)."""
        params, first = self.at_parameters(y0, theta, theta_dots)
        n = np.size(y0)
        wrt = (1,) + tuple(2 + k for k in params.wrt)
        if wrt not in self._paired:
            self._paired[wrt] = implicit.Paired(self.flat, wrt)
        pair = self._paired[wrt]
        dots = tuple(pytrees.zeros_like(v) if d is None else d
                     for v, d in zip(theta, theta_dots))

        def fun(t, y):
            return np.concatenate([first.fun(t, y[:n]), first.jvp(t, y[:n], y[n:])])

        def vjp(t, y, a):
            value, tangent = pair((t, y[:n]) + tuple(theta), a[n:], (0.0, y[n:]) + dots,
                                  a[:n])
            return (np.concatenate([np.ravel(tangent[0]), np.ravel(value[0])]),
                    np.concatenate([params.flat(tangent[1:]), params.flat(value[1:])]))
        return params, odes.Rhs(fun, 2 * params.size, vjp)


def _vector(value):
    """The value of a right-hand side as SciPy reads it: one flat float vector."""
    if type(value) is np.ndarray and value.ndim == 1:
        return value
    return np.concatenate([np.ravel(leaf) for leaf in pytrees.leaves(value)]).astype(float)


def _shaped_as(a, value):
    """The flat adjoint `a` of the value of a right-hand side, in its structure."""
    if isinstance(value, np.ndarray):
        return a.reshape(value.shape)
    leaves, structure = pytrees.flatten(value)
    parts, i = [], 0
    for leaf in leaves:
        size = np.size(leaf)
        parts.append(float(a[i]) if np.ndim(leaf) == 0 else a[i:i + size].reshape(
            np.shape(leaf)))
        i += size
    return pytrees.unflatten(structure, parts)


def _like(adjoint, value):
    """`adjoint`, a vector, as an adjoint of `value` (an array, or a list or tuple of
    numbers: None in the places of those that carry no derivative)."""
    if isinstance(value, np.ndarray):
        return np.asarray(adjoint, dtype=float).reshape(value.shape)
    if isinstance(value, (list, tuple)):
        return type(value)(float(a) if pytrees.carries_derivative(v) else None
                           for a, v in zip(adjoint, value))
    return float(adjoint[0])


def _dot(dots, name, size):
    """The tangent of the parameter `name` as a vector (zeros where None)."""
    dot = dots.get(name)
    if dot is None:
        return np.zeros(size)
    return np.array([0.0 if d is None else d for d in np.ravel(
        np.asarray(dot, dtype=object))], dtype=float) if isinstance(dot, (list, tuple)) \
        else np.ravel(np.asarray(dot, dtype=float)) * np.ones(size)


class Solve(implicit.Standing):
    """A call of an ODE solver: what its kinds share (the right-hand side, the values it
    reads, the call with its functions bound)."""

    def __init__(self, layout):
        super().__init__(layout)
        self.param, fn, self.names = layout.functions[0]
        self.n_extra = layout.n_args
        self._sides = {}

    def side(self, tfirst=True):
        if tfirst not in self._sides:
            self._sides[tfirst] = RightHandSide(self.layout.function, self.n_extra,
                                                self.names, tfirst)
        return self._sides[tfirst]

    def theta(self, extra, bound):
        return tuple(extra) + tuple(bound[self.param].values())

    def theta_keys(self, extra):
        return [("extra", k) for k in range(len(extra))] + [(self.param, n)
                                                            for n in self.names]

    def call(self, given, extra, bound, **changed):
        kwargs = dict(given, **changed)
        for param, fn, _ in self.layout.functions:
            kwargs[param] = _bound(fn, bound[param])
        if extra:
            kwargs["args"] = tuple(extra)
        return self.layout.library(**kwargs)

    def adjoints(self, side, y0, theta, extra, problem, ys_bar, ts_bar, record=None):
        """{key: adjoint} of the values the right-hand side reads, and (t0_bar, y0_bar,
        ts_bar), for the problem `problem` = (solver, t0, ts, ys, steps): the adjoint of
        the steps of `record` (an `odes.Record`) where the solve took some, else the
        continuous adjoint."""
        solver, t0, ts, ys, steps = problem
        if np.iscomplexobj(ys):
            raise self.refuse("a complex solution: s2sad differentiates ODEs over the reals")
        params, rhs = side.at_parameters(y0, theta)
        y0 = np.asarray(y0, dtype=float)
        try:
            if record:
                t0_bar, y0_bar, p_bar, ts_bar = odes.discrete_adjoint(
                    rhs, record, t0, y0, ts, ys, ys_bar, ts_bar, steps)
            else:
                t0_bar, y0_bar, p_bar, ts_bar = odes.adjoint(
                    rhs, solver, t0, y0, ts, ys, ys_bar, ts_bar, steps)
        except (odes.InnerStepError, odes.FailedSolveError) as e:
            raise type(e)(str(self.refuse(str(e)))) from None
        keys = self.theta_keys(extra)
        out = {keys[k]: a for k, a in params.split(p_bar).items()}
        return out, (t0_bar, y0_bar, ts_bar)

    def adjoints_and_tangents(self, side, y0, theta, extra, dots, problem, ys_dot,
                              ys_bar, ys_bar_dot, ts_bar, ts_bar_dot, times, record=None):
        """`adjoints`' values and their tangents ({key: tangent} and (t0_bar_dot,
        y0_bar_dot, ts_bar_dot)) along the tangents `dots` of the call's values and
        `ys_bar_dot`, `ts_bar_dot` of the adjoints (`odes.adjoint_tangent`); `times`, the
        names of the parameters holding times, whose tangents must be zero."""
        solver, t0, ts, ys, steps = problem
        if np.iscomplexobj(ys):
            raise self.refuse("a complex solution: s2sad differentiates ODEs over the reals")
        given_dots, extra_dots, bound_dots = dots
        for name in times:
            dot = given_dots.get(name)
            if dot is not None and np.any(np.asarray(
                    [0.0 if d is None else d for d in np.ravel(np.asarray(dot, dtype=object))],
                    dtype=float) != 0):
                raise self.refuse_where_called(
                    f"second derivatives with respect to the times ({name}) are not "
                    "supported yet (those with respect to the initial state and the "
                    "values the right-hand side reads are); hold the times fixed, or take "
                    "central differences of s2sad.grad of the function")
        theta_dots = tuple(d if pytrees.carries_derivative(v) else None for v, d in zip(
            theta, tuple(extra_dots) + tuple(bound_dots[self.param].values())))
        params, rhs = side.at_parameters(y0, theta)
        _, twice = side.twice(y0, theta, theta_dots)
        y0 = np.asarray(y0, dtype=float)
        try:
            values, tangents = odes.adjoint_tangent(
                rhs, twice, solver, t0, y0, _dot(given_dots, "y0", len(y0)), ts,
                ys, ys_dot, ys_bar, ys_bar_dot, ts_bar, ts_bar_dot, steps, record or None)
        except (odes.InnerStepError, odes.FailedSolveError) as e:
            raise type(e)(str(self.refuse(str(e)))) from None
        keys = self.theta_keys(extra)
        out = {keys[k]: a for k, a in params.split(values[2]).items()}
        out_dots = {keys[k]: a for k, a in params.split(tangents[2]).items()}
        return (out, values[:2] + values[3:]), (out_dots, tangents[:2] + tangents[3:])

    def tangent_of(self, side, y0, theta, dots, problem, t0_dot, y0_dot, ts_dot):
        solver, t0, ts, ys, steps = problem
        _, extra_dots, bound_dots = dots
        theta_dots = tuple(extra_dots) + tuple(bound_dots[self.param].values())
        _, rhs = side.at_parameters(y0, theta, theta_dots)
        try:
            return odes.tangent(rhs, solver, t0, np.asarray(y0, dtype=float), ts, ys,
                                t0_dot, y0_dot, ts_dot, steps)
        except odes.FailedSolveError as e:
            raise type(e)(str(self.refuse(str(e)))) from None


def _bound(fn, values):
    if not values:
        return fn

    def bound(*args):
        return fn(*args, **values)
    return bound


class SolveIvp(Solve):
    """solve_ivp: its value is an OdeResult, whose `.y` (and `.t`) carry the derivative."""

    def run(self, given, extra, bound):
        method, record = given.get("method", "RK45"), None
        if isinstance(method, str) and method in odes.DISCRETE and np.all(
                np.asarray(given.get("rtol", 1e-3)) <= odes.DISCRETE_RTOL):
            method, record = odes.recording(method)        # (its steps, for the adjoint)
        sol = self.call(given, extra, bound, method=method)
        if not sol.success:
            raise self.refuse(f"the solve failed ({sol.message}), so its solution has no "
                              "derivative; loosen the tolerances or try another method")
        return sol, (np.array(sol.t, dtype=float), np.array(sol.y), record)

    def problem(self, given, point):
        ts, ys = point[:2]
        t_span = given["t_span"]
        solver = odes.Solver(given.get("method", "RK45"), given.get("rtol", 1e-3),
                             given.get("atol", 1e-6), given.get("max_step", np.inf))
        return solver, float(t_span[0]), ts, ys, given.get("t_eval") is None

    def adjoint(self, point, g, given, extra, bound):
        ys_bar, ts_bar = _field(g, "y"), _field(g, "t")
        if ys_bar is None and ts_bar is None:
            return {}
        problem = self.problem(given, point)
        _, _, ts, ys, steps = problem
        ys_bar = np.zeros_like(ys) if ys_bar is None else ys_bar
        out, bars = self.adjoints(self.side(), given["y0"], self.theta(extra, bound), extra,
                                  problem, ys_bar, ts_bar, point[2])
        return self.placed(out, given, steps, *bars)

    @staticmethod
    def placed(out, given, steps, t0_bar, y0_bar, ts_bar):
        """`out` with the adjoints of y0 and the times in their places."""
        out[("given", "y0")] = _like(y0_bar, given["y0"])
        if steps:
            out[("given", "t_span")] = _like([t0_bar + ts_bar[0], ts_bar[-1]],
                                             given["t_span"])
        else:
            out[("given", "t_span")] = _like([t0_bar, 0.0], given["t_span"])
            out[("given", "t_eval")] = _like(ts_bar, given["t_eval"])
        return out

    def tangents(self, point, value, given, extra, bound, dots):
        """The tangents of the value and of `point` (`fwd_rule`'s)."""
        value_dot = self.tangent(point, value, given, extra, bound, dots)
        return value_dot, (value_dot["t"], value_dot["y"], None)

    def adjoint_and_tangent(self, point, point_dot, g, g_dot, given, extra, bound, dots):
        """`adjoint(point, g, ...)` and its tangent (`Solve.adjoints_and_tangents`)."""
        ys_bar, ts_bar = _field(g, "y"), _field(g, "t")
        if ys_bar is None and ts_bar is None:
            return {}, {}
        problem = self.problem(given, point)
        _, _, ts, ys, steps = problem
        ys_bar = np.zeros_like(ys) if ys_bar is None else ys_bar
        (out, bars), (out_dots, bar_dots) = self.adjoints_and_tangents(
            self.side(), given["y0"], self.theta(extra, bound), extra, dots, problem,
            point_dot[1], ys_bar, _field(g_dot, "y"), ts_bar, _field(g_dot, "t"),
            ("t_span", "t_eval"), point[2])
        return (self.placed(out, given, steps, *bars),
                self.placed(out_dots, given, steps, *bar_dots))

    def tangent(self, point, value, given, extra, bound, dots):
        problem = self.problem(given, point)
        _, _, ts, ys, steps = problem
        given_dots = dots[0]
        t_span_dot = _dot(given_dots, "t_span", 2)
        if steps:
            ts_dot = np.full(len(ts), np.nan)
            ts_dot[0], ts_dot[-1] = t_span_dot
        else:
            ts_dot = _dot(given_dots, "t_eval", len(ts))
        ys_dot = self.tangent_of(self.side(), given["y0"], self.theta(extra, bound), dots,
                                 problem, t_span_dot[0], _dot(given_dots, "y0", len(ys)),
                                 ts_dot)
        return _result_tangent(value, y=ys_dot, t=ts_dot)


class Odeint(Solve):
    """odeint (LSODA, ODEPACK's): its value is the solution at `t`, an array of one row per
    time; with full_output=True, (that array, its information)."""

    def run(self, given, extra, bound):
        full = given.get("full_output", False)
        ys, info = self.call(given, extra, bound, full_output=True)
        if info["message"] != "Integration successful.":
            raise self.refuse(f"the solve failed ({info['message']}), so its solution has "
                              "no derivative; loosen the tolerances or raise mxstep")
        return ((ys, info) if full else ys), (np.array(given["t"], dtype=float), ys.T)

    def problem(self, given, point):
        ts, ys = point
        tolerance = 1.49012e-8                          # (odeint's default)
        rtol, atol = given.get("rtol"), given.get("atol")
        hmax = given.get("hmax", 0.0)
        solver = odes.Solver("LSODA", tolerance if rtol is None else rtol,
                             tolerance if atol is None else atol, hmax or np.inf)
        return solver, ts[0], ts, ys, False

    def adjoint(self, point, g, given, extra, bound):
        if given.get("full_output", False):
            g = g[0]
        if g is None:
            return {}
        problem = self.problem(given, point)
        out, bars = self.adjoints(self.side(given.get("tfirst", False)), given["y0"],
                                  self.theta(extra, bound), extra, problem,
                                  np.transpose(g), None)
        return self.placed(out, given, *bars)

    @staticmethod
    def placed(out, given, t0_bar, y0_bar, ts_bar):
        """`out` with the adjoints of y0 and the times in their places."""
        ts_bar = np.array(ts_bar, dtype=float)
        ts_bar[0] += t0_bar
        out[("given", "y0")] = _like(y0_bar, given["y0"])
        out[("given", "t")] = _like(ts_bar, given["t"])
        return out

    def tangents(self, point, value, given, extra, bound, dots):
        """The tangents of the value and of `point` (`fwd_rule`'s)."""
        value_dot = self.tangent(point, value, given, extra, bound, dots)
        ys_dot = value_dot[0] if isinstance(value, tuple) else value_dot
        return value_dot, (_dot(dots[0], "t", len(point[0])), np.transpose(ys_dot))

    def adjoint_and_tangent(self, point, point_dot, g, g_dot, given, extra, bound, dots):
        """`adjoint(point, g, ...)` and its tangent (`Solve.adjoints_and_tangents`)."""
        if given.get("full_output", False):
            g, g_dot = g[0], None if g_dot is None else g_dot[0]
        if g is None:
            return {}, {}
        problem = self.problem(given, point)
        (out, bars), (out_dots, bar_dots) = self.adjoints_and_tangents(
            self.side(given.get("tfirst", False)), given["y0"], self.theta(extra, bound),
            extra, dots, problem, point_dot[1], np.transpose(g),
            None if g_dot is None else np.transpose(g_dot), None, None, ("t",))
        return self.placed(out, given, *bars), self.placed(out_dots, given, *bar_dots)

    def tangent(self, point, value, given, extra, bound, dots):
        problem = self.problem(given, point)
        ts, ys = point
        ts_dot = _dot(dots[0], "t", len(ts))
        ys_dot = self.tangent_of(self.side(given.get("tfirst", False)), given["y0"],
                                 self.theta(extra, bound), dots, problem, ts_dot[0],
                                 _dot(dots[0], "y0", len(ys)), ts_dot).T
        return (ys_dot, None) if isinstance(value, tuple) else ys_dot


def _field(g, name):
    """The adjoint of the field `name` in `g`, the adjoint of an OdeResult (a dict, as
    s2sad takes a dict's subclass apart; None where no adjoint reached it)."""
    return g.get(name) if isinstance(g, dict) else getattr(g, name, None)


def _result_tangent(value, **fields):
    """The tangent of an OdeResult `value`: of its type, `fields` in their places, zero or
    None in its other fields."""
    out = type(value).__new__(type(value))
    dict.update(out, pytrees.zeros_like(dict(value)), **fields)
    return out


_EVENTS = ("events see the solution cross a surface at a time that moves with the "
           "parameters, which s2sad does not differentiate; solve up to a time given in "
           "t_span or t_eval instead")
_DENSE = ("dense_output=True returns the solution as a function (.sol), which s2sad does "
          "not differentiate; pass the times you need as t_eval=")


def _solve_ivp_signature():
    """solve_ivp's parameters, with those it takes through `**options` (its methods')."""
    parameters = [p for p in inspect.signature(integrate.solve_ivp).parameters.values()
                  if p.kind is not p.VAR_KEYWORD]
    parameters += [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default)
                   for name, default in (("rtol", 1e-3), ("atol", 1e-6),
                                         ("max_step", np.inf), ("first_step", None),
                                         ("min_step", 0.0), ("jac", None),
                                         ("jac_sparsity", None), ("lband", None),
                                         ("uband", None))]
    return inspect.Signature(parameters)


def declare():
    """Declare the Takers of SciPy's ODE solvers."""
    TAKERS[integrate.solve_ivp] = Taker("fun", implicit.standing(SolveIvp),
                                        functions=("jac",),
                                        refused={"events": _EVENTS, "dense_output": _DENSE},
                                        signature=_solve_ivp_signature())
    TAKERS[integrate.odeint] = Taker("func", implicit.standing(Odeint),
                                     functions=("Dfun",))
