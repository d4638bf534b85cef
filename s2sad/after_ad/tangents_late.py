"""TangentsLate (forward mode, with the option `release`): in straight-line code at the
top of `f_jvp`, each tangent computed just before its first use, so that arrays are
freed sooner (then insert_dels deletes each after its last use)."""
import gast

from .. import marks, syntax
from ..rules import registry


def run(jvp, ctx):
    """The pass (forward mode, with the option `release`): in straight-line code at the top of
    `f_jvp`, each tangent statement moves down to just before the first statement that
    reads what it binds, so that a value's last use (`y = np.sum(t_9)`) comes before
    the tangents computed after it and its array is freed first."""
    tangents = set(ctx.forward.dots.values())

    def pure(c):        # a runtime helper, or a function with a rule that writes no argument
        helper = ctx.bindings.get(c.func.id) if isinstance(c.func, gast.Name) else None
        if getattr(helper, "__module__", "").startswith("s2sad.rules."):
            return True
        return registry.writes_nothing(marks.PRIM.of(c.func)
                                       or ctx.src.resolve(c.func))
    body, out, straight = jvp.body, [], []
    for s in body + [None]:
        if s is not None and isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name) \
                and all(pure(c) for c in syntax.walk(s.value) if isinstance(c, gast.Call)):
            straight.append(s)
            continue
        out += _sunk(straight, tangents)
        straight = []
        if s is not None:
            out.append(s)
    jvp.body = out
    return jvp


def _sunk(run, tangents):
    """The assignments `run` with each one binding a name of `tangents` just before the
    first one that reads it (at the end when none does), the others in order."""
    out = []
    for s in reversed(run):
        target = s.targets[0].id
        if target not in tangents:
            out.insert(0, s)
            continue
        at = next((i for i, t in enumerate(out) if target in syntax.names_loaded(t)),
                  len(out))
        out.insert(at, s)
    return out
