"""Enclose: the code made from a `with` or `try` block's body runs inside that block again.

Desugaring keeps only the body of a `with` block, and of a `try` statement the path on
which nothing raises (body, `else`, `finally`). Takes a derivative that any other pass
has finished (a vjp and its pullback, a fused gradient, or a jvp) and leaves it with
each run of consecutive statements made from the lines of such a body (the
statement, its adjoint or its tangent, and the `# grad of:` comment over them)
enclosed again:

- in the same `with` (the fence allows only context managers that change how warnings
  and floating-point errors are reported, such as `np.errstate`), with the calls that
  set up a `warnings.catch_warnings()` block (`warnings.simplefilter(...)`) replayed
  at the top of a run that does not make them itself: the derivative of a line runs
  under the context its line runs under;
- in a `try` whose handler, for the exceptions the user's handlers catch, raises
  `ExceptionPathError`: the derivative follows the path without exceptions, so when
  the code of the `try` body raises one at run time (in the function's own statements,
  or in their derivatives), it says so instead of differentiating a path the function
  did not take.

>>> print(show("enclose", '''
... def f(x):
...     y = x * 2.0
...     with np.errstate(divide="ignore"):
...         z = np.log(y)
...     return np.sum(z * x)
... ''', arrays=True))
def f_vjp(x):
    y = x * 2.0
    with np.errstate(divide='ignore'):
        z = np.log(y)
    t = z * x
    y_1 = np.sum(t)
<BLANKLINE>
    def f_pullback(y_1_bar):
        with np.errstate(divide='ignore'):
            # grad of: z = np.log(y)
            y_bar = y_1_bar * x / y
        # grad of: y = x * 2.0
        x_bar = y_1_bar * z + y_bar * 2.0
        return x_bar
    return (y_1, f_pullback)
"""
import gast

from .. import syntax
from ..frontend import fence, source


def run(fn, ctx):
    """The pass."""
    blocks = ctx.src.blocks
    if blocks:
        fn.body = Enclose(ctx, blocks).enclosed(fn.body, frozenset())
    return fn


class Enclose:
    """See the module docstring."""

    def __init__(self, ctx, blocks):
        self.ctx = ctx
        self.src = ctx.src
        self.blocks = blocks
        self.error = None       # the name of the exception in the handlers

    def inside(self, s):
        """The blocks whose body the line of statement `s` is in, outermost first."""
        if isinstance(s, gast.FunctionDef):
            return []
        line = getattr(s, "lineno", None)
        return [b for b in self.blocks if b.holds(line)]

    def enclosed(self, stmts, entered):
        """`stmts` (a block of statements inside the blocks `entered`), each run of
        statements from another block's body enclosed in it."""
        lines = self.lines(stmts)
        for s, inside in zip(stmts, lines):
            entered_here = frozenset() if isinstance(s, gast.FunctionDef) else (
                entered | set(inside))
            for field in ("body", "orelse"):
                part = getattr(s, field, None)
                if isinstance(part, list) and part:
                    setattr(s, field, self.enclosed(part, entered_here))
        return self.enclosed_runs(stmts, lines, entered)

    def enclosed_runs(self, stmts, lines, entered):
        """The runs of `stmts` (whose children are done) in the blocks not yet entered."""
        out, i = [], 0
        while i < len(stmts):
            block = next((b for b in lines[i] if b not in entered), None)
            if block is None:
                out.append(stmts[i])
                i += 1
                continue
            j = i
            while j < len(stmts) and block in lines[j]:
                j += 1
            inner = self.enclosed_runs(stmts[i:j], lines[i:j], entered | {block})
            out.append(syntax.located(self.wrapper(block, inner), block.node))
            i = j
        return out

    def lines(self, stmts):
        """The blocks of each statement; a comment belongs with the statement after it."""
        out, following = [None] * len(stmts), []
        for k in range(len(stmts) - 1, -1, -1):
            s = stmts[k]
            if syntax.is_comment(s) and not hasattr(s, "lineno"):
                grad_of = s.value.value.startswith(syntax.COMMENT + "grad of:")
                out[k] = following if grad_of else []
            else:
                out[k] = following = self.inside(s)
        return out

    def wrapper(self, block, body):
        if isinstance(block.node, gast.With):
            return gast.With(items=syntax.copied(block.node.items),
                             body=self.set_up(block, body), type_comment=None)
        return self.guarded(block, body)

    def set_up(self, block, body):
        """`body` after the calls that set up the warning filters of `block`, unless it
        makes them itself."""
        calls = []
        for s in block.node.body:
            if not (isinstance(s, gast.Expr) and isinstance(s.value, gast.Call) and any(
                    self.src.resolve(s.value.func) is f for f in fence.WARNING_FILTERS)):
                break
            calls.append(s)
        made = {getattr(n, "lineno", None) for s in body for n in syntax.walk(s)}
        if not calls or any(c.lineno in made for c in calls):
            return body
        return [syntax.located(syntax.copied(c), c) for c in calls] + body

    def guarded(self, block, body):
        """`try: body` whose handler reports the exception path of `block`."""
        types = []
        for handler in block.node.handlers:
            if handler.type is None:
                types.append(syntax.name("Exception"))
            elif isinstance(handler.type, gast.Tuple):
                types.extend(syntax.copied(handler.type.elts))
            else:
                types.append(syntax.copied(handler.type))
        caught = types[0] if len(types) == 1 else syntax.tuple_(types)
        if self.error is None:
            self.error = self.ctx.namer.fresh("exc")
        error = self.error
        report = syntax.call(self.ctx.runtime("exception_path"),
                             [syntax.name(error), syntax.const(self.where(block))])
        handler = gast.ExceptHandler(type=caught, name=syntax.name(error, store=True),
                                     body=[gast.Raise(exc=report, cause=None)])
        return gast.Try(body=body, handlers=[handler], orelse=[], finalbody=[])

    def where(self, block):
        """`file:line` of the user's `try` (through generated code differentiated again)."""
        if source.is_generated(self.src):
            for handler in block.node.handlers:
                for n in syntax.walk(handler):
                    if (isinstance(n, gast.Call) and len(n.args) == 2
                            and isinstance(n.args[1], gast.Constant)
                            and isinstance(n.args[1].value, str)):
                        return n.args[1].value
        return self.src.where(block.node)
