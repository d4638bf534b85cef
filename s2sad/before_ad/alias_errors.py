"""What aliasing's refusals say (before_ad/aliasing.py): the located error for a read of
an old value, for a loop going on over a sequence written into, and for a call writing
in place into memory read before it, each naming the user's lines and what to write."""
import re

import gast

from .. import marks
from .. import syntax
from ..analysis.names import user_name
from ..analysis.value_kinds import ARRAY, CONTAINER, SCALAR
from ..frontend.structure import user_class
from ..rules import runtime, writes
from .callee_effects import returns_its_writes


class AliasErrors:
    """The errors of `aliasing.Aliasing` (which sets `src`, `kinds`, `defs`, `written`)."""

    def refusal(self, name, stale, read):
        line = lambda node: f"line {self.src.lineno(node)}"   # noqa: E731
        shown = user_name(name, self.src)
        write, link = stale.write, stale.link
        if stale.callee is not None:
            found, w, args = stale.callee
            arg = self.argument(w, args)
            obj = w if self.is_object(name) else None
            return self.src.syntax_error(read, (
                f"{shown} is read after {line(write)} ({self.src.line_text(write).strip()}), "
                f"where {found.writing(w, arg)}; {'NumPy' if obj is None else 'Python'} shows that "
                f"write through {shown}, but s2sad follows it only through what "
                f"{found.name}() returns, so the value and the derivative would use the old "
                f"{shown}. {found.instead(arg, obj)}"))
        base = self.written(write)
        looped = self.loop_sequence(name)
        if looped is not None and link is not None:     # (desugar named the sequence)
            return self.src.syntax_error(read, (
                f"the loop at {line(link)} ({self.src.line_text(link).strip()}) goes on "
                f"over {looped} after {line(write)} ({self.src.line_text(write).strip()}) "
                f"writes into it; Python's loop reads the values written, but s2sad reads "
                f"{looped} as it was when the loop started, so the value and the derivative "
                f"could use old values. Loop over a copy ({looped}.copy()), or over the "
                f"indexes (for i in range(len({looped})), reading {looped}[i])"))
        made = f" ({line(link)}: {self.src.line_text(link).strip()})" if link else ""
        if marks.PRIM.of(getattr(write.value, "func", None)) is runtime.attr_set:
            return self.src.syntax_error(read, (
                f"{shown} is read after {line(write)} ({self.src.line_text(write).strip()}) "
                f"changes an attribute of the object it shares{made}; "
                f"Python shows the change through {shown}, but s2sad follows it only through "
                f"the name written ({user_name(base, self.src)}), so the value and the "
                f"derivative would use the old {shown}. Read the object through "
                f"{user_name(base, self.src)} after the write, or give {shown} a copy where "
                "it is made (copy.copy(obj))"))
        listed = self.kinds.kind.get(base) == CONTAINER or (
            marks.PRIM.of(getattr(write.value, "func", None)) is runtime.append)
        kind = self.container_word(write) if listed and not stale.element else "array"
        what = f"array {user_name(base, self.src)} holds, which" if stale.element else kind
        return self.src.syntax_error(read, (
            f"{shown} is read after {line(write)} ({self.src.line_text(write).strip()}) "
            f"writes into the {what} it shares memory with{made}; "
            f"{'Python' if listed else 'NumPy'} shows the write "
            f"through {shown}, but s2sad follows a write only through the name written, so "
            f"the value and the derivative would use the old {shown}. Make the copy "
            f"explicit where the other name is made (.copy()), or read the {kind} "
            "written again after the write"))

    @staticmethod
    def container_word(write):
        """What the write `write` into a container writes into: a list (an append), a dict
        (an item at a string), or either."""
        value = write.value
        prim = marks.PRIM.of(getattr(value, "func", None))
        if prim is runtime.append:
            return "list"
        if prim is writes.setitem and isinstance(value.args[1], gast.Constant) and isinstance(
                value.args[1].value, str):
            return "dict"
        return "list or dict"

    def given(self, v, objects):
        """Whether `v`, a call of `_s2s_attr_set`, changes an object the function was
        given (a parameter's, or one a parameter holds), outside a version of a callee
        that returns the objects it changes (before_ad.attribute_writes)."""
        if marks.PRIM.of(getattr(v, "func", None)) is not runtime.attr_set:
            return False
        return self.given_to(objects)

    def given_to(self, objects):
        """Whether `objects`, which a write changes, hold an object the function was
        given, outside a version of a callee that returns what it changes."""
        if returns_its_writes(self.src.fn):
            return False
        for o in objects:
            while isinstance(o, tuple) and o[:1] == ("in",):
                o = o[1]
            if o in self.params and self.made_kind.get(o) not in (ARRAY, SCALAR):
                return True     # (not an array an object holds: `P(x)` holds x)
        return False

    def check_rebound(self, w, found, args, held, written, s, rebound):
        """Refuse the call `s` of a function that changes its arguments by assigning their
        attributes or elements (its write `w`, into the memory `written` through its
        argument `args[w.param]`) unless it is a call of the version that returns what it
        changes (`rebound`, before_ad.attribute_writes: a call that is not a statement of
        its own on names, `objs[0].step(dt)`, changes the object in place); or if that
        memory is an object the function was given, or is shared with another argument
        (`p.meet(p)`: the function would change one object, the version two copies)."""
        if not rebound and all(x.rebinds for x in found.writes):
            raise self.src.syntax_error(s, (
                f"{self.src.line_text(s).strip()}: {found.writing(w)}; s2sad differentiates "
                "such a call where it is a statement of its own and each argument the "
                f"function changes is a name: {found.instead(self.argument(w, args), w)}, "
                f"the object read through that name after it"))
        if rebound and self.given_to(written):
            raise self.argument_changed(s, self.argument(w, args))
        other = next((p for p, h in held.items() if p != w.param and h.objects & written),
                     None) if rebound else None
        if other is not None:
            raise self.src.syntax_error(s, (
                f"{self.src.line_text(s).strip()}: {found.name}() changes its argument "
                f"{w.param!r}, which shares memory with its argument {other!r} here; s2sad "
                f"differentiates the call where the arguments {found.name}() changes are "
                "apart from the others. Pass a copy (copy.copy(obj), a.copy()) for one of "
                "them"))

    def argument_changed(self, s, shown):
        """The error for a change of an attribute of `shown`, an object the function was
        given."""
        return self.src.syntax_error(s, (
            f"{self.src.line_text(s).strip()} changes an attribute of {shown}, an object "
            f"{self.src.name}() is given; calling {self.src.name}() changes it, but its "
            "derivative never changes the objects it is given, so after a derivative call "
            f"{shown} would not be what {self.src.name}() leaves. Change a new object "
            "(made in the function), or return the new value; a method that changes self "
            "is differentiated where it is called in the function"))

    def attribute_added(self, s, held):
        """`held` if `s`, the `t += v` of `obj.x += v` (`t = obj.x` before), writes into an
        array, which NumPy changes in place where every other name for it sees the
        change: refused where `held` is an array; where its kind is not known, taken as
        a number, and checked at run time (`check_attributes`)."""
        error = self.src.syntax_error(s, augmented_attribute(self.src.line_text(s)))
        if self.kinds.kind.get(held) != ARRAY:
            if not self.summarising:
                self.attribute_checks[id(s)] = (held, error)
            return None
        if self.reading == "raise":
            raise error
        return held

    def check_attributes(self, fn):
        """Before each `t += v` of `obj.x += v` whose `t` may be an array: a check that
        raises the located error if it is one (`refuse_view`)."""
        if not self.attribute_checks:
            return
        check = self.ctx.runtime("refuse_view")
        for block in syntax.blocks(fn.body):
            for k in range(len(block) - 1, -1, -1):
                found = self.attribute_checks.get(id(block[k]))
                if found is not None:
                    error = self.ctx.bind("_s2s_array_error", obj=found[1])
                    block.insert(k, syntax.located(syntax.expr_stmt(syntax.call(
                        check, [syntax.name(found[0]), syntax.name(error)])), block[k]))

    def is_object(self, name):
        """Whether `name` holds an instance of the user's class (where known)."""
        kind = self.kinds.kind.get(name)
        return isinstance(kind, type) and user_class(kind)

    def loop_sequence(self, name):
        """The user's name for the sequence a loop goes over, if `name` is the name
        desugar gave it (`seq = A` for `for i, row in enumerate(A)`), else None."""
        defs = self.defs.get(name, ())
        v = defs[0].value if len(defs) == 1 else None
        if isinstance(v, gast.Call) and marks.PRIM.of(v.func) is runtime.sequence:
            v = v.args[0]       # (`seq = _s2s_sequence(A)`: A itself, for an array)
        if (not isinstance(v, gast.Name) or user_name(name, self.src) != name
                or not self.src.line_text(defs[0]).lstrip().startswith("for ")
                or name in {n.id for n in syntax.name_nodes(self.src.node)}):
            return None
        return user_name(v.id, self.src)

    def read_before(self, w, found, args, call, reader):
        """The error for a call that writes in place into memory read before it, whose old
        values the derivative of reverse mode may read after it."""
        arg = args.get(w.param)
        obj = w if isinstance(arg, gast.Name) and self.is_object(arg.id) else None
        return self.src.syntax_error(call, (
            f"{self.src.line_text(call).strip()}: {found.writing(w)}, into memory that line "
            f"{self.src.lineno(reader)} ({self.src.line_text(reader).strip()}) reads before "
            "the call; the gradient reads the values from before the call, which the call "
            f"changes in place. {found.instead(self.argument(w, args), obj)}"))

    def argument(self, w, args):
        """The user's name for the argument of the parameter a callee's `w` writes into."""
        arg = args.get(w.param)
        if isinstance(arg, gast.Subscript) and isinstance(arg.value, gast.Name):
            return user_name(arg.value.id, self.src) + syntax.unparse(arg)[len(arg.value.id):]
        return user_name(arg.id, self.src) if isinstance(arg, gast.Name) else w.param


def augmented_attribute(line):
    """What the error for `obj.x += v` (the line's text), where obj.x is an array, says."""
    text = line.strip()
    found = re.match(r"([\w.]+)\s*(\*\*|//|>>|<<|[-+*/@%&|^])=\s*(.+)", text)
    value = found and (found[3] if re.fullmatch(r"[\w.]+", found[3]) else f"({found[3]})")
    instead = f"{found[1]} = {found[1]} {found[2]} {value}" if found else "obj.x = obj.x + v"
    return (f"{text}: the attribute holds an array, which NumPy changes in place (every "
            "other name for that array sees the change), but s2sad cannot tell here which "
            f"other names hold it. Write the attribute as a new value ({instead})")
