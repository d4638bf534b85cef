"""InsertDels: free each array of a fused gradient as soon as nothing reads it any more.

Takes the fused `f_value_and_grad` (forward pass then pullback in one function) and,
after the last top-level statement that mentions an array (a primal value or an
adjoint), deletes the name, so that NumPy returns its buffer before the next
intermediate is allocated: peak memory follows what is live, not everything computed.
Names the function returns, parameters, and names that are not certainly bound there
(bound only inside an `if` or a loop) are left alone; so are scalars. Inside the body
of a top-level loop of straight-line code, an array the body assigns before it reads
it, and that neither the loop's test nor the code after the loop reads, is deleted
after its last use in the body, unless that is the body's last statement: it does not
wait for the next iteration to be replaced.

>>> import numpy as np
>>> from s2sad import driver
>>> from s2sad.options import Options, Variant
>>> def f(x):
...     return np.sum(np.tanh(2.0 * x))
>>> value_and_grad = Options(Variant.VALUE_AND_GRAD, release=True)
>>> print(driver.build(f, options=value_and_grad).source.rstrip())
def f_value_and_grad(x):
    if x.__class__ is not ndarray or x.dtype.kind != 'f':
        return _s2s_respecialize(x)
    if (np is not _s2s_np or _s2s_np_dict['sum'] is not _s2s_sum
            or _s2s_np_dict['tanh'] is not _s2s_tanh):
        return _s2s_respecialize(x)
    # reverse mode of f() with respect to x
    # the pullback reads: t_1
    # rules: *, np.tanh, np.sum
    t = 2.0 * x
    t_1 = np.tanh(t)
    del t
    y = np.sum(t_1)
    y_bar = 1.0
    # grad of: return np.sum(np.tanh(2.0 * x))
    t_bar = y_bar * (1 - t_1 * t_1)
    del t_1
    x_bar = t_bar * 2.0
    del t_bar
    return (y, x_bar)
"""
import gast

from ..ad.inplace import view_of
from ..analysis.buffers import straight_loop
from ..analysis.names import exposed
from ..analysis.value_kinds import ARRAY
from .. import syntax
from ..compilation import parameters


def run(fn, ctx):
    """The pass (with the option `release`). (Forward mode's `f_jvp` too: its values and
    their tangents.)"""
    if ctx.variant.forward:
        return InsertDels(array_names(ctx, ctx.forward.dots)).run(fn)
    numbers = {n for n in ctx.reverse.primal_names if ctx.shapes.pattern_of(n) == ()}
    numbers |= {ctx.reverse.adjoints[n] for n in numbers if n in ctx.reverse.adjoints}
    return InsertDels(array_names(ctx, ctx.reverse.adjoints), numbers).run(fn)


def array_names(ctx, derivatives):
    """The primal names and their `derivatives` ({name: adjoint or tangent}) that
    certainly hold arrays (not views of the parameters)."""
    arrays = {n for n, k in ctx.value_kinds.kind.items() if k == ARRAY}
    params = set(parameters(ctx.src))
    views = {s.targets[0].id for s in syntax.statements(ctx.wengert)
             if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name)
             and view_of(s.value, ctx.src) in params}
    return (arrays - views) | {derivatives[n] for n in arrays if n in derivatives}


class InsertDels:
    """See the module docstring; `arrays` are the names that hold arrays, `numbers` those
    known to hold 0-d values (left alone in loops: deleting them frees nothing)."""

    def __init__(self, arrays, numbers=()):
        self.arrays = set(arrays)
        self.numbers = set(numbers)

    def run(self, fn):
        body = fn.body
        params = {a.id for a in fn.args.args + fn.args.posonlyargs + fn.args.kwonlyargs}
        returned = set(syntax.names_loaded(body[-1])) if isinstance(body[-1], gast.Return) \
            else set(self.arrays)
        bound, last = {}, {}
        for i, s in enumerate(body):
            for n in syntax.name_nodes(s):
                if n.id in self.arrays:
                    last[n.id] = i
            if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name):
                bound.setdefault(s.targets[0].id, i)
        after = {}
        for name in sorted(bound, key=bound.get):
            if (name in self.arrays and name not in params | returned
                    and last[name] < len(body) - 1):
                after.setdefault(last[name], []).append(name)
        fn.body = []
        for i, s in enumerate(body):
            fn.body.append(s)
            if i in after:
                fn.body.append(syntax.delete(after[i]))
            if straight_loop(s):
                # (not the names bound outside loops: this pass may delete those after it)
                self.in_loop(s, exposed(body[i + 1:], set()) | params | returned | set(bound))
        return fn

    def in_loop(self, loop, kept):
        """Delete in `loop`'s body the arrays each iteration assigns before reading them
        after their last use, but those in `kept` or the loop's test reads."""
        start = set(syntax.names_stored(loop.target)) if isinstance(loop, gast.For) else set()
        kept = kept | start | exposed(loop.body, set(start))
        if isinstance(loop, gast.While):
            kept |= set(syntax.names_loaded(loop.test))
        last = {}
        for i, s in enumerate(loop.body):
            for n in syntax.name_nodes(s):
                if n.id in self.arrays and n.id not in kept and n.id not in self.numbers:
                    last[n.id] = i
        after = {}
        for name in sorted(last):
            after.setdefault(last[name], []).append(name)
        # (none after the last statement: the next iteration soon replaces those, and
        # freeing the body's every array at its end lets the allocator hand their memory
        # back to the system, to fault it in again at each iteration)
        after.pop(len(loop.body) - 1, None)
        body = []
        for i, s in enumerate(loop.body):
            body.append(s)
            if i in after:
                body.append(syntax.delete(after[i]))
        loop.body = body
