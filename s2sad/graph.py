"""The computational graph of a function's Wengert form, or of its generated pullback,
as Graphviz DOT text.

Nodes are operations (labelled with the statement that performs it), edges are the
variables that flow between them (labelled with the variable's name). Inputs are
ellipses, the result is a double octagon; loops and branches are clusters. A dashed edge
carries a value around a loop to the next iteration. In the graph of a pullback, the
values it reads from the forward pass are dashed ellipses.

>>> import math
>>> from s2sad import graph
>>> def f(x1, x2):
...     return math.log(x1) + x1 * x2 - math.sin(x2)
>>> print(graph.dot(f))
digraph "f" {
  graph [label="f (Wengert form)", labelloc=t, fontname="Helvetica"];
  node [fontname="Helvetica", fontsize=11];
  edge [fontname="Helvetica", fontsize=9];
  n0 [label="x1", shape=ellipse];
  n1 [label="x2", shape=ellipse];
  n2 [label="t = math.log(x1)", shape=box];
  n3 [label="t_1 = x1 * x2", shape=box];
  n4 [label="t_2 = t + t_1", shape=box];
  n5 [label="t_3 = math.sin(x2)", shape=box];
  n6 [label="y = t_2 - t_3", shape=box];
  n7 [label="return y", shape=doubleoctagon];
  n0 -> n2 [label="x1"];
  n0 -> n3 [label="x1"];
  n1 -> n3 [label="x2"];
  n2 -> n4 [label="t"];
  n3 -> n4 [label="t_1"];
  n1 -> n5 [label="x2"];
  n4 -> n6 [label="t_2"];
  n5 -> n6 [label="t_3"];
  n6 -> n7 [label="y"];
}
<BLANKLINE>

`render(text, "out.svg")` runs Graphviz's `dot` program (when it is installed) to draw
it; `s2sad graph FILE.py:FUNC -o out.svg` does both from the shell.
"""
import os
import shutil
import subprocess

import gast

from . import marks
from . import pipeline
from .frontend import source
from . import emit, syntax
from .errors import S2SADError

__all__ = ["dot", "function_dot", "render", "FORMATS"]

#: output formats by file extension: DOT text, or drawn by Graphviz
FORMATS = {".dot": None, ".gv": None, ".svg": "svg", ".png": "png", ".pdf": "pdf"}


def dot(fn, wrt=None, pullback=False):
    """DOT text for `fn`'s Wengert form, or (with `pullback`) for the pullback s2sad
    generates for it, differentiated with respect to `wrt` (default: every positional
    parameter)."""
    if not pullback:
        _, node = pipeline.compilation(fn, (), until="wengert")
        return function_dot(node, f"{node.name} (Wengert form)")
    src = source.capture(fn)
    params = [a.id for a in src.node.args.posonlyargs + src.node.args.args]
    if wrt is None:
        wrt = tuple(params)
    if isinstance(wrt, (tuple, list)) and not wrt:
        raise S2SADError(f"{src.name}() has no positional parameter to differentiate, so "
                         "it has no pullback")
    ctx, vjp = pipeline.compilation(fn, wrt)
    src = ctx.src
    inner = [s for s in vjp.body if isinstance(s, gast.FunctionDef)]
    if not inner:
        raise S2SADError(f"s2sad generated no pullback for {src.name}()")
    pb = inner[0]
    outer = {a.id for a in vjp.args.posonlyargs + vjp.args.args + vjp.args.kwonlyargs}
    for s in vjp.body:
        if s is not pb:
            outer.update(syntax.names_stored(s))
    return function_dot(pb, f"{pb.name} (pullback of {src.name})", outer=outer)


def function_dot(fn, title=None, outer=()):
    """DOT text for the gast FunctionDef `fn`; `outer` names values it reads from an
    enclosing function (drawn as dashed inputs)."""
    g = _Graph(outer)
    g.function(fn)
    return g.text(fn.name, title or fn.name)


def render(text, path):
    """Write DOT `text` to `path`: as text for .dot/.gv, drawn by Graphviz's `dot` for
    .svg/.png/.pdf. Raises `S2SADError` with a one-line message when that cannot be done."""
    ext = os.path.splitext(path)[1].lower()
    if ext not in FORMATS:
        raise S2SADError(f"cannot write a graph to {path}: use a file ending in "
                         f"{', '.join(FORMATS)}")
    fmt = FORMATS[ext]
    if fmt is None:
        try:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        except OSError as exc:
            raise S2SADError(f"cannot write {path}: {exc.strerror or exc}") from None
        return
    exe = shutil.which("dot")
    if exe is None:
        raise S2SADError(f"drawing {path} needs Graphviz's `dot` program, which is not "
                         f"installed; install Graphviz, or write DOT text with -o "
                         f"{os.path.splitext(path)[0]}.dot")
    done = subprocess.run([exe, f"-T{fmt}", "-o", path], input=text.encode("utf-8"),
                          capture_output=True, timeout=120)
    if done.returncode != 0:
        err = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise S2SADError(f"dot failed to draw {path}: {err[0] if err else 'no message'}")


def _q(text):
    return '"' + (str(text).replace("\\", "\\\\").replace('"', '\\"')
                  .replace("\n", "\\n")) + '"'


def _src(node):
    return emit.to_source(node).strip()


class _Cluster:
    def __init__(self, ident, label, style):
        self.ident, self.label, self.style = ident, label, style
        self.items = []          # node ids and sub-clusters, in order


class _Loop:
    def __init__(self):
        self.exits = []          # environments at `break`
        self.nexts = []          # environments at `continue`


def _merge(*envs):
    out = {}
    for env in envs:
        if env is None:
            continue
        for name, defs in env.items():
            out[name] = out.get(name, frozenset()) | defs
    return out


class _Graph:
    """Nodes per statement, edges by reaching definitions over structured control flow."""

    def __init__(self, outer=()):
        self.outer = set(outer)
        self.labels = []         # (label, attributes)
        self.by_stmt = {}
        self.edges = {}          # (from, to, variable) -> attributes
        self.root = _Cluster(None, None, None)
        self.clusters = {}
        self.imported = {}
        self.stack = [self.root]
        self.repeating = 0       # > 0 while a loop body is walked again with the values
        #                          of the previous iteration: new edges are loop-carried

    # -- nodes, clusters and edges --------------------------------------------------------
    def node(self, key, label, attrs):
        if key is not None and key in self.by_stmt:
            return self.by_stmt[key]
        ident = len(self.labels)
        self.labels.append((label, attrs))
        self.stack[-1].items.append(ident)
        if key is not None:
            self.by_stmt[key] = ident
        return ident

    def cluster(self, key, label, style):
        if key not in self.clusters:
            c = _Cluster(len(self.clusters), label, style)
            self.clusters[key] = c
            self.stack[-1].items.append(c)
        return self.clusters[key]

    def uses(self, target, expr_nodes, env):
        names = []
        for e in expr_nodes:
            if e is not None:
                names += syntax.names_loaded(e)
        for name in dict.fromkeys(names):
            defs = env.get(name)
            if defs is None and name in self.outer:
                if name not in self.imported:
                    saved, self.stack = self.stack, [self.root]
                    self.imported[name] = self.node(
                        ("outer", name), name, {"shape": "ellipse", "style": "dashed"})
                    self.stack = saved
                defs = {self.imported[name]}
            for d in sorted(defs or ()):
                attrs = {"label": name}
                if self.repeating:
                    attrs.update(style="dashed", constraint="false")
                self.edges.setdefault((d, target, name), attrs)

    # -- statements -------------------------------------------------------------------
    def function(self, fn):
        env = {}
        for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs:
            env[a.id] = frozenset({self.node(("param", a.id), a.id, {"shape": "ellipse"})})
        self.block(fn.body, env, None)

    def block(self, stmts, env, loop):
        """Add `stmts`; return the environment where control falls off the end, or
        None when every path jumps."""
        for s in stmts:
            if marks.MARKER.of(s) or isinstance(s, (gast.Pass, gast.FunctionDef)):
                continue
            if isinstance(s, gast.Expr) and isinstance(s.value, gast.Constant) and \
                    isinstance(s.value.value, str):
                continue
            if isinstance(s, (gast.Assign, gast.AugAssign, gast.AnnAssign)):
                n = self.node(id(s), _src(s), {"shape": "box"})
                targets = s.targets if isinstance(s, gast.Assign) else [s.target]
                reads = [s.value] + [t for t in targets if not isinstance(t, gast.Name)]
                if isinstance(s, gast.AugAssign):
                    reads.append(gast.Name(id=s.target.id, ctx=gast.Load(), annotation=None,
                                           type_comment=None)
                                 if isinstance(s.target, gast.Name) else s.target)
                self.uses(n, reads, env)
                for t in targets:
                    for name in syntax.names_stored(t):
                        env[name] = frozenset({n})
            elif isinstance(s, gast.Expr):
                n = self.node(id(s), _src(s), {"shape": "box"})
                self.uses(n, [s.value], env)
            elif isinstance(s, gast.If):
                env = self.if_(s, env, loop)
                if env is None:
                    return None
            elif isinstance(s, (gast.For, gast.While)):
                env = self.loop(s, env)
            elif isinstance(s, gast.Return):
                label = "return" if s.value is None else f"return {_src(s.value)}"
                n = self.node(id(s), label, {"shape": "doubleoctagon"})
                self.uses(n, [s.value], env)
                return None
            elif isinstance(s, (gast.Break, gast.Continue)):
                self.node(id(s), "break" if isinstance(s, gast.Break) else "continue",
                          {"shape": "plaintext"})
                if loop is not None:
                    (loop.exits if isinstance(s, gast.Break) else loop.nexts).append(dict(env))
                return None
            elif isinstance(s, gast.Raise):
                n = self.node(id(s), _src(s), {"shape": "octagon"})
                self.uses(n, [s.exc], env)
                return None
            else:
                n = self.node(id(s), _src(s).splitlines()[0], {"shape": "box"})
                self.uses(n, [s], env)
        return env

    def if_(self, s, env, loop):
        c = self.cluster(id(s), f"if {_src(s.test)}", "dashed")
        self.stack.append(c)
        test = self.node(id(s), f"if {_src(s.test)}", {"shape": "diamond"})
        self.uses(test, [s.test], env)
        outs = []
        for name, stmts in (("then", s.body), ("else", s.orelse)):
            if not _visible(stmts):
                outs.append(dict(env))
                continue
            branch = self.cluster((id(s), name), name, "dotted")
            self.stack.append(branch)
            outs.append(self.block(stmts, dict(env), loop))
            self.stack.pop()
        self.stack.pop()
        live = [o for o in outs if o is not None]
        return _merge(*live) if live else None

    def loop(self, s, env):
        header = (f"for {_src(s.target)} in {_src(s.iter)}" if isinstance(s, gast.For)
                  else f"while {_src(s.test)}")
        c = self.cluster(id(s), header, "rounded")
        self.stack.append(c)
        head = self.node(id(s), header, {"shape": "hexagon" if isinstance(s, gast.For)
                                         else "diamond"})
        if isinstance(s, gast.For):
            self.uses(head, [s.iter], env)
        entry = dict(env)
        first = True
        while True:
            if not first:
                self.repeating += 1
            ctx = _Loop()
            inside = dict(entry)
            if isinstance(s, gast.For):
                for name in syntax.names_stored(s.target):
                    inside[name] = frozenset({head})
            else:
                self.uses(head, [s.test], entry)
            end = self.block(s.body, inside, ctx)
            if not first:
                self.repeating -= 1
            first = False
            new = _merge(entry, end, *ctx.nexts)
            if new == entry:
                break
            entry = new
        self.stack.pop()
        out = _merge(entry, *ctx.exits)
        if isinstance(s, gast.For):
            for name in syntax.names_stored(s.target):
                out[name] = out.get(name, frozenset()) | {head}
        if s.orelse:
            out = self.block(s.orelse, out, None) or out
        return out

    # -- text -------------------------------------------------------------------------
    def text(self, name, title):
        lines = [f"digraph {_q(name)} {{",
                 f"  graph [label={_q(title)}, labelloc=t, fontname=\"Helvetica\"];",
                 "  node [fontname=\"Helvetica\", fontsize=11];",
                 "  edge [fontname=\"Helvetica\", fontsize=9];"]
        self.write(self.root, lines, "  ")
        for (a, b, _), attrs in self.edges.items():
            lines.append(f"  n{a} -> n{b} [{_attrs(attrs)}];")
        lines.append("}")
        return "\n".join(lines) + "\n"

    def write(self, cluster, lines, pad):
        for item in cluster.items:
            if isinstance(item, _Cluster):
                lines.append(f"{pad}subgraph cluster_{item.ident} {{")
                lines.append(f"{pad}  label={_q(item.label)};")
                lines.append(f"{pad}  style={item.style}; color=gray50;")
                self.write(item, lines, pad + "  ")
                lines.append(f"{pad}}}")
            else:
                label, attrs = self.labels[item]
                lines.append(f"{pad}n{item} [{_attrs(dict(label=label, **attrs))}];")


def _attrs(attrs):
    return ", ".join(f"{k}={_q(v) if k == 'label' else v}" for k, v in attrs.items())


def _visible(stmts):
    return [s for s in stmts if not marks.MARKER.of(s)
            and not isinstance(s, gast.Pass)]

