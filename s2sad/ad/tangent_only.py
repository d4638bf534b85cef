"""TangentOnly (for `Variant.TANGENT`, what `hvp` runs): `f_jvp` returning the tangent
alone, without the statements only the value needs."""
import builtins

import gast

from .. import syntax
from ..frontend.source import MISSING


_PURE_BUILTINS = (slice, type, float, int, bool, len, abs, min, max, range, tuple)


def run(jvp, ctx):
    """The pass (for `Variant.TANGENT`): `jvp` returning the tangent alone, without the
    statements only the value needs."""
    jvp.body[-1].value = jvp.body[-1].value.elts[1]
    jvp.body = without_dead_code(jvp.body, ctx)
    return jvp


def without_dead_code(body, ctx):
    """`body` without the top-level assignments that nothing after them reads and
    whose value calls only NumPy, `math` or s2sad's runtime helpers (and array
    methods): the value's statements, once `f_jvp` returns the tangent alone (but those
    of a `try` body, which decide whether the function takes its except clause)."""
    def pure(e):
        for n in syntax.walk(e):
            if isinstance(n, gast.Call):
                base = n.func
                while isinstance(base, gast.Attribute):
                    base = base.value
                if not isinstance(base, gast.Name):
                    return False
                obj = ctx.bindings.get(base.id, ctx.src.free_values().get(
                    base.id, getattr(builtins, base.id, MISSING)))
                module = getattr(obj, "__module__", None) or getattr(obj, "__name__", "")
                local = obj is MISSING and isinstance(n.func, gast.Attribute)
                if not (local or obj in _PURE_BUILTINS or str(module).split(".")[0] in (
                        "numpy", "math", "s2sad")):
                    return False
            elif isinstance(n, (gast.Lambda, gast.NamedExpr, gast.Yield, gast.Await)):
                return False
        return True
    out, read = [], set()
    for s in reversed(body):
        if (isinstance(s, gast.Assign) and len(s.targets) == 1
                and isinstance(s.targets[0], gast.Name) and s.targets[0].id not in read
                and pure(s.value) and not ctx.src.in_try(s)):
            continue
        read |= set(syntax.names_loaded(s))
        if isinstance(s, gast.AugAssign) and isinstance(s.target, gast.Name):
            read.add(s.target.id)
        out.append(s)
    return out[::-1]
