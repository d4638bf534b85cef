"""Star forms spelled out, so that the passes after this one see plain calls, displays
and assignments:

- a starred assignment target takes its items by index and slice:
  `first, *rest = xs` is `first = xs[0]` and `rest = [v for v in xs[1:]]` (a list, as
  Python makes it, whatever `xs` is); with targets after the star too (`a, *mid, b = xs`),
  a sequence too short raises `ValueError`, as Python's unpacking does;
- a tuple target with elements in it (`a[i], a[j] = a[j], a[i]`) is its values, each
  bound to a name first, then each target assigned in turn, as Python does;
- `*xs` in a call (`f(*xs)`, `zip(*pairs)`) or a list or tuple display (`[*xs, y]`) is
  the items of `xs` one by one, where s2sad knows their number when it compiles: `xs`
  is a tuple or list display, or a name that every assignment binds to a display of the
  same length and that nothing else changes (no method call on it, no element
  assignment, not passed whole to a call); elsewhere it is refused, with what to write.

>>> print(show("star_forms", '''
... def f(x, xs):
...     args = (x, 2.0 * x)
...     first, *rest = xs
...     return max(*args) + first * sum(rest)
... '''))
def f(x, xs):
    args = (x, 2.0 * x)
    first = xs[0]
    rest = [v for v in xs[1:]]
    return max(args[0], args[1]) + first * sum(rest)
"""
import gast

from .. import syntax

DISPLAYS = (gast.Tuple, gast.List)


def run(fn, ctx):
    """The pass."""
    Starred = gast.Starred
    if any(type(n) is Starred or (type(n) is gast.Assign and _has_element(n.targets[0]))
           for n in syntax.walk(fn)):
        StarForms(ctx, fn).run(fn)
    return fn


class StarForms:
    """See the module docstring."""

    def __init__(self, ctx, fn):
        self.ctx = ctx
        self.src = ctx.src
        self.namer = ctx.namer
        self.lengths = _display_lengths(fn)

    def run(self, fn):
        fn.body = self.block(fn.body)
        return fn

    def block(self, stmts):
        out = []
        for s in stmts:
            for field in ("body", "orelse", "finalbody"):
                if isinstance(getattr(s, field, None), list):
                    setattr(s, field, self.block(getattr(s, field)))
            for h in getattr(s, "handlers", None) or []:
                h.body = self.block(h.body)
            for node in syntax.walk(s):
                if node is not s and isinstance(node, gast.stmt):
                    continue
                self.spread(node)
            if isinstance(s, gast.Assign) and any(_has_star(t) for t in s.targets):
                out.extend(self.unpacked(s))
            elif isinstance(s, gast.Assign) and _has_element(s.targets[0]):
                out.extend(self.element_targets(s))
            else:
                out.append(s)
        return out

    def element_targets(self, s):
        """`a[i], a[j] = a[j], a[i]`: the values first, each into a name, then each target
        assigned in turn, as Python does (a value that is no display of as many items is
        unpacked by index, after the check of its length Python makes)."""
        target, value, out = s.targets[0], s.value, []
        n = len(target.elts)
        if isinstance(value, DISPLAYS) and len(value.elts) == n and not any(
                isinstance(e, gast.Starred) for e in value.elts):
            parts = value.elts
        else:
            seq = self.namer.fresh("seq")
            out.append(syntax.located(syntax.assign(seq, value), s))
            wrong = gast.Compare(
                left=syntax.call(syntax.name(self.ctx.bind("len")), [syntax.name(seq)]),
                ops=[gast.NotEq()], comparators=[syntax.const(n)])
            out.append(syntax.located(syntax.if_(wrong, [gast.Raise(
                exc=syntax.call(syntax.name(self.ctx.bind("ValueError")), [syntax.const(
                    f"cannot unpack into {n} targets: the number of values differs")]),
                cause=None)]), s))
            parts = [syntax.located_within(gast.Subscript(
                value=syntax.name(seq), slice=syntax.const(i), ctx=gast.Load()), s)
                for i in range(n)]
        names = [self.namer.fresh("item") for _ in parts]
        out += [syntax.located(syntax.assign(k, v), s) for k, v in zip(names, parts)]
        for t, k in zip(target.elts, names):
            one = syntax.located(gast.Assign(targets=[t], value=syntax.name(k),
                                             type_comment=None), s)
            out.extend(self.element_targets(one) if _has_element(t) else [one])
        return out

    # -- *xs in calls and displays --------------------------------------------------------
    def spread(self, node):
        """Spell out the `*xs` among the arguments of the call, or the items of the
        display, `node`."""
        if isinstance(node, gast.Call):
            node.args = self.items(node.args, "argument")
        elif isinstance(node, DISPLAYS) and isinstance(node.ctx, gast.Load):
            node.elts = self.items(node.elts, "item")

    def items(self, elts, what):
        if not any(isinstance(e, gast.Starred) for e in elts):
            return elts
        out = []
        for e in elts:
            if not isinstance(e, gast.Starred):
                out.append(e)
                continue
            seq = e.value
            if isinstance(seq, DISPLAYS):
                out.extend(seq.elts)
                continue
            n = self.lengths.get(seq.id) if isinstance(seq, gast.Name) else None
            if n is None:
                raise self.src.syntax_error(
                    e, f"*{syntax.unparse(seq)} as an {what}: s2sad spells out a starred "
                       "value whose number of items it knows when it compiles (a tuple or "
                       "list display, or a name bound only to displays of one length); "
                       "bind the values to a display first (args = (a, b)), or pass them "
                       "one by one")
            out.extend(syntax.located(gast.Subscript(
                value=syntax.name(seq.id), slice=syntax.const(i), ctx=gast.Load()), e)
                for i in range(n))
        return out

    # -- starred targets ----------------------------------------------------------------
    def unpacked(self, s):
        """The assignments that stand for `s`, an assignment with a starred target."""
        out = []
        value = s.value
        if not isinstance(value, gast.Name) or len(s.targets) > 1:
            seq = self.namer.fresh("seq")
            out.append(syntax.located(syntax.assign(seq, value), s))
            value = syntax.name(seq)
        for target in s.targets:
            out.extend(self.bind(target, value, s))
        return out

    def bind(self, target, seq, s):
        """Assignments of the parts of `seq` (a name) to `target`."""
        if not _has_star(target):
            return [syntax.located(gast.Assign(targets=[target], value=syntax.copied(seq),
                                               type_comment=None), s)]
        if not isinstance(target, DISPLAYS):
            raise self.src.syntax_error(target, "this assignment target is not supported")
        star = next((i for i, t in enumerate(target.elts) if isinstance(t, gast.Starred)),
                    None)
        out = []
        if star is None:        # a starred target deeper: `(a, *b), c = ...`
            for i, t in enumerate(target.elts):
                part = self.part(t, seq, syntax.const(i), s, out)
                out.extend(self.bind(t, part, s))
            return out
        after = len(target.elts) - star - 1
        if star and after:
            # Python checks the length before it binds anything
            short = gast.Compare(
                left=syntax.call(syntax.name(self.ctx.bind("len")), [syntax.copied(seq)]),
                ops=[gast.Lt()], comparators=[syntax.const(star + after)])
            message = (f"not enough values to unpack (expected at least {star + after})")
            out.append(syntax.located(syntax.if_(short, [gast.Raise(
                exc=syntax.call(syntax.name(self.ctx.bind("ValueError")),
                                [syntax.const(message)]), cause=None)]), s))
        for i, t in enumerate(target.elts):
            if i < star:
                index = syntax.const(i)
            elif i > star:
                index = syntax.const(i - len(target.elts))
            else:
                v = self.namer.fresh("v")
                upper = None if after == 0 else syntax.const(-after)
                items = gast.ListComp(elt=syntax.name(v), generators=[gast.comprehension(
                    target=syntax.name(v, store=True), iter=gast.Subscript(
                        value=syntax.copied(seq), slice=gast.Slice(
                            lower=syntax.const(star) if star else None, upper=upper,
                            step=None), ctx=gast.Load()), ifs=[], is_async=0)])
                out.append(syntax.located(gast.Assign(
                    targets=[gast.Name(id=t.value.id, ctx=gast.Store(), annotation=None,
                                       type_comment=None)],
                    value=syntax.located_within(items, t), type_comment=None), s))
                continue
            part = self.part(t, seq, index, s, out)
            out.extend(self.bind(t, part, s) if _has_star(t) else [syntax.located(
                gast.Assign(targets=[t], value=part, type_comment=None), s)])
        return out

    def part(self, target, seq, index, s, out):
        """`seq[index]`; held in a new name (appended to `out`) when `target` unpacks it
        further."""
        item = syntax.located_within(gast.Subscript(value=syntax.copied(seq), slice=index,
                                           ctx=gast.Load()), s)
        if not isinstance(target, DISPLAYS):
            return item
        held = self.namer.fresh("part")
        out.append(syntax.located(syntax.assign(held, item), s))
        return syntax.name(held)


def _has_element(target):
    """Whether the tuple or list target `target` assigns an element (`a[i], b = ...`)."""
    return isinstance(target, DISPLAYS) and any(
        isinstance(t, gast.Subscript) or _has_element(t) for t in target.elts)


def _has_star(target):
    return isinstance(target, DISPLAYS) and any(
        isinstance(t, gast.Starred) or _has_star(t) for t in target.elts)


def _display_lengths(fn):
    """{name: n} for the names, not parameters, that every assignment binds to a tuple or
    list display of `n` items (no starred item) and nothing else assigns; of a list, also
    that nothing may change in place: no method is called on it, no element or slice
    assigned, not passed whole to a call (only as `*name`), not read by a nested
    function."""
    displays, spoiled, mutable, changed = {}, set(), set(), set()
    params = {a.id for a in fn.args.args + fn.args.posonlyargs + fn.args.kwonlyargs}
    starred = {id(n.value) for n in syntax.walk(fn) if isinstance(n, gast.Starred)}
    for n in syntax.walk(fn):
        if isinstance(n, gast.Assign) and len(n.targets) == 1 and isinstance(
                n.targets[0], gast.Name):
            name, v = n.targets[0].id, n.value
            if isinstance(v, DISPLAYS):
                displays.setdefault(name, []).append(v)
                if isinstance(v, gast.List):
                    mutable.add(name)
            else:
                spoiled.add(name)
        elif isinstance(n, (gast.Assign, gast.AugAssign, gast.AnnAssign, gast.For,
                            gast.comprehension, gast.NamedExpr)):
            targets = n.targets if isinstance(n, gast.Assign) else [n.target]
            for t in targets:
                for m in syntax.walk(t):
                    if isinstance(m, gast.Name) and isinstance(m.ctx, gast.Store):
                        spoiled.add(m.id)
                if isinstance(t, gast.Subscript) and isinstance(t.value, gast.Name):
                    changed.add(t.value.id)
        elif isinstance(n, gast.Call):
            if isinstance(n.func, gast.Attribute) and isinstance(n.func.value, gast.Name):
                changed.add(n.func.value.id)
            for a in n.args + [k.value for k in n.keywords]:
                if isinstance(a, gast.Name) and id(a) not in starred:
                    changed.add(a.id)
        elif isinstance(n, (gast.FunctionDef, gast.Lambda)) and n is not fn:
            changed.update(m.id for m in syntax.walk(n) if isinstance(m, gast.Name))
    spoiled |= changed & mutable
    lengths = {}
    for _ in range(len(displays) + 1):      # (a display may star names bound before it)
        for name, vs in displays.items():
            found = {_length(v, lengths) for v in vs}
            if None not in found and len(found) == 1:
                lengths[name] = found.pop()
            elif len(found - {None}) > 1:
                spoiled.add(name)
    return {k: v for k, v in lengths.items() if k not in spoiled and k not in params}


def _length(display, lengths):
    """The number of items of `display`, its starred names' lengths being `lengths`."""
    n = 0
    for e in display.elts:
        if not isinstance(e, gast.Starred):
            n += 1
        elif isinstance(e.value, DISPLAYS):
            k = _length(e.value, lengths)
            if k is None:
                return None
            n += k
        elif isinstance(e.value, gast.Name) and e.value.id in lengths:
            n += lengths[e.value.id]
        else:
            return None
    return n

