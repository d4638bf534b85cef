"""Activity analysis: which names carry a derivative.

A name is *varied* if it depends differentiably on a differentiated input, *useful* if
the output depends differentiably on it, and *active* if both. Only active names get
adjoints. Wengert form is SSA but for join and carried names, so a flow-insensitive
fixed point over names is exact enough.
"""
import gast

from .. import syntax


def definitions(stmts):
    """(target name, Op) for every assignment in `stmts`, nested ones included."""
    for s in stmts:
        for n in syntax.statements(s):
            if isinstance(n, gast.Assign) and isinstance(n.targets[0], gast.Name):
                yield n.targets[0].id, n


def varied_names(fn, wrt, ops):
    """The names that depend differentiably on the parameters `wrt`; `ops` holds the
    `Op` of each statement (a `NodeMap`)."""
    return closure(set(wrt), _edges(fn, ops))


def useful_names(fn, output, ops):
    """The names the output depends on differentiably; `ops` holds the `Op` of each
    statement (a `NodeMap`)."""
    return closure({output} if output else set(), [(b, a) for a, b in _edges(fn, ops)])


def active_names(fn, wrt, output, ops):
    """The active names; `ops` holds the `Op` of each statement (a `NodeMap`)."""
    edges = _edges(fn, ops)
    varied = closure(set(wrt), edges)
    useful = closure({output} if output else set(), [(b, a) for a, b in edges])
    return varied & useful


def _edges(fn, ops):
    """(a, b) for each name `b` assigned from `a` through a differentiable operation."""
    edges = []
    for target, stmt in definitions(fn.body):
        for _, a in ops[stmt].diff_args():
            if isinstance(a, gast.Name):
                edges.append((a.id, target))
    for loop in (n for s in fn.body for n in syntax.statements(s) if isinstance(n, gast.For)):
        # the loop variable takes the iterable's values
        edges.extend((n, loop.target.id) for n in syntax.names_loaded(loop.iter))
    return edges


def closure(start, edges):
    """The names reached from `start` along `edges` ((a, b): b from a)."""
    reached = set(start)
    changed = True
    while changed:
        changed = False
        for a, b in edges:
            if a in reached and b not in reached:
                reached.add(b)
                changed = True
    return reached
