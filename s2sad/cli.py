"""The `s2sad` command: show generated derivative source, check gradients.

    s2sad show FILE.py:FUNC [--mode reverse|forward] [--wrt NAME[,NAME]] [--stage STAGE]
               [--backend python|numba]
    s2sad check FILE.py:FUNC --at V [V ...] [--wrt NAME[,NAME]]
    s2sad trace FILE.py:FUNC --at V [V ...] [--wrt NAME[,NAME]] [--format text|markdown|json]
    s2sad graph FILE.py:FUNC [--pullback] [--wrt NAME[,NAME]] [-o OUT.dot|OUT.svg|OUT.png]
    s2sad export FILE.py:FUNC [-o OUT.py] [--mode reverse|forward] [--wrt NAME[,NAME]]
                 [--kind KIND[,KIND]] [--args V [V ...]] [--backend python|numba]

Errors are one line on stderr and exit status 2; `check` exits 1 when the gradient
disagrees with finite differences.
"""
import argparse
import ast
import importlib.util
import inspect
import os
import shlex
import sys

import numpy as np

from . import api, backends, driver, forward_api, graph, numba_api, pipeline
from .export import BACKENDS, KINDS, export
from .compilation import default_arg_types, wrt_indices
from .errors import GradientCheckError, S2SADError
from .trace import trace


class CLIError(Exception):
    pass


def main(argv=None):
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except (CLIError, S2SADError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        print(f"s2sad: error: {first}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


def _parser():
    parser = argparse.ArgumentParser(prog="s2sad", description="Source-to-source automatic "
                                     "differentiation for Python.")
    sub = parser.add_subparsers(dest="command", required=True)
    show = sub.add_parser("show", help="print the generated derivative source")
    show.add_argument("target", metavar="FILE.py:FUNC", nargs="?")
    show.add_argument("--mode", choices=["reverse", "forward"], default="reverse")
    show.add_argument("--wrt", help="parameters to differentiate, comma-separated "
                                    "(default: the first)")
    show.add_argument("--stage", metavar="PASS", choices=["list"] + list(dict.fromkeys(
        pipeline.stage_names() + pipeline.stage_names("forward"))),
        help="print the code after this pass instead; 'list' lists the passes")
    show.add_argument("--backend", choices=["python", "numba"], default="python",
                      help="numba: the code grad(f, backend='numba') (with --mode forward, "
                           "jvp(f, ..., backend='numba')) compiles with numba.njit")
    show.set_defaults(run=_show)
    check = sub.add_parser("check", help="compare the gradient with finite differences")
    check.add_argument("target", metavar="FILE.py:FUNC")
    check.add_argument("--at", nargs="+", required=True, metavar="V",
                       help="the point: one value per positional parameter, a number "
                            "or an array written as a list in quotes ('[1.0, 2.0]')")
    check.add_argument("--wrt", help="parameters to differentiate (default: all)")
    check.set_defaults(run=_check)
    trace = sub.add_parser("trace", help="print the evaluation trace: every intermediate "
                                         "value and its adjoint")
    trace.add_argument("target", metavar="FILE.py:FUNC")
    trace.add_argument("--at", nargs="+", required=True, metavar="V",
                       help="the point: one value per positional parameter, a number "
                            "or an array written as a list in quotes ('[1.0, 2.0]')")
    trace.add_argument("--wrt", help="parameters to compute adjoints for, comma-separated "
                                     "(default: all)")
    trace.add_argument("--format", choices=["text", "markdown", "json"], default="text")
    trace.set_defaults(run=_trace)
    graph = sub.add_parser("graph", help="print the computational graph as Graphviz DOT, "
                                         "or draw it")
    graph.add_argument("target", metavar="FILE.py:FUNC")
    graph.add_argument("--pullback", action="store_true",
                       help="the graph of the generated pullback instead of the function")
    graph.add_argument("--wrt", help="parameters to differentiate for --pullback, "
                                     "comma-separated (default: all)")
    graph.add_argument("-o", "--output", metavar="OUT",
                       help="write to OUT: .dot or .gv for DOT text, .svg, .png or .pdf "
                            "drawn by Graphviz's dot (default: DOT text on stdout)")
    graph.set_defaults(run=_graph)
    exported = sub.add_parser("export", help="write the derivatives as a Python module "
                                             "that runs without s2sad")
    exported.add_argument("target", metavar="FILE.py:FUNC")
    exported.add_argument("-o", "--output", metavar="OUT.py",
                          help="the module to write (default: standard output)")
    exported.add_argument("--mode", choices=["reverse", "forward"], default="reverse")
    exported.add_argument("--wrt", help="parameters to differentiate, comma-separated "
                                        "(default: the first)")
    exported.add_argument("--kind", help="the derivatives to write, comma-separated: in "
                                         f"reverse mode {', '.join(KINDS['reverse'])} "
                                         "(default: all; with --backend numba: grad, "
                                         "value_and_grad), in forward mode jvp")
    exported.add_argument("--args", nargs="+", metavar="V",
                          help="example arguments, whose types the code is specialised on: "
                               "numbers (2 is an int, 2.0 a float) or arrays written as "
                               "lists in quotes ('[1.0, 2.0]'); default: floats, or float "
                               "arrays when the function uses NumPy")
    exported.add_argument("--backend", default="python",
                          help=f"the code written: {', '.join(BACKENDS)} (numba: "
                               "@numba.njit functions, see docs/numba.md)")
    exported.set_defaults(run=_export)
    return parser


def load(target, derivatives=False):
    """The function `FUNC` of the file in `FILE.py:FUNC`; for a derivative made by s2sad
    (`grad`, `hvp`, ...), the function it differentiates, unless `derivatives`."""
    path, sep, name = target.rpartition(":")
    if not sep or not path or not name:
        raise CLIError(f"expected FILE.py:FUNC, got {target!r}")
    if not os.path.isfile(path):
        raise CLIError(f"no such file: {path}")
    module_name = os.path.splitext(os.path.basename(path))[0]
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(module_name, module)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # the user's module failed to import
        raise CLIError(f"importing {path} failed: {type(exc).__name__}: {exc}") from None
    fn = getattr(module, name, None)
    if fn is None:
        funcs = sorted(k for k, v in vars(module).items()
                       if inspect.isfunction(v) and v.__module__ == module.__name__)
        raise CLIError(f"{path} has no function {name!r}; it defines: {', '.join(funcs)}")
    return fn if derivatives else getattr(fn, "primal", fn)


def _wrt(text, default):
    if not text:
        return default
    names = tuple(w.strip() for w in text.split(",") if w.strip())
    return tuple(int(w) if w.lstrip("-").isdigit() else w for w in names)


def _show(args):
    if args.stage == "list":
        print(pipeline.described())
        return 0
    if args.target is None:
        raise CLIError("show needs the function: FILE.py:FUNC")
    fn = load(args.target, derivatives=True)
    if args.stage and args.stage not in pipeline.stage_names(args.mode):
        raise CLIError(f"--stage {args.stage} is not a pass of {args.mode} mode; its passes "
                       f"are {', '.join(pipeline.stage_names(args.mode))}")
    wrt = _wrt(args.wrt, 0)
    if args.backend == "numba" and args.mode == "forward" and forward_api.gradient_of(fn):
        # hvp(f, backend="numba"): forward mode of the numba backend's gradient code
        primal, grad_wrt = forward_api.gradient_of(fn)
        target = driver.target(primal)
        tangents = wrt_indices(target, _wrt(args.wrt, getattr(fn, "s2s_tangents", 0)))
        d = numba_api.gradient_code_jvp(primal, wrt_indices(target, grad_wrt)[0],
                                        tangents, default_arg_types(target), args.stage)
        text = d if args.stage else d.source
    elif args.backend == "numba":
        text = pipeline.stage_source(getattr(fn, "primal", fn), args.stage,
                                     wrt, mode=args.mode, backend=backends.NUMBA)
    elif args.mode == "forward" and forward_api.gradient_of(fn):
        # a gradient: forward mode of the gradient code it runs (forward over reverse),
        # by default along the tangent of a second derivative
        wrt = _wrt(args.wrt, getattr(fn, "s2s_tangents", 0))
        if args.stage:
            text = pipeline.stage_source(forward_api.gradient_code(fn).fn, args.stage, wrt,
                                         mode="forward")
        else:
            text = api.source(fn, mode="forward", wrt=wrt)
    elif args.stage:
        text = pipeline.stage_source(getattr(fn, "primal", fn), args.stage, wrt,
                                     mode=args.mode)
    else:
        text = api.source(getattr(fn, "primal", fn), mode=args.mode, wrt=wrt)
    print(_highlight(text), end="")
    return 0


def _check(args):
    fn = load(args.target)
    point = _point(fn, args.at)
    wrt = _wrt(args.wrt, tuple(range(len(point))))
    positional = [p for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    try:
        g = api.check_grad(fn, *point, wrt=wrt)
    except GradientCheckError as exc:
        print(f"FAIL {exc}")
        return 1
    names = [positional[i].name for i in wrt_indices(fn, wrt)]
    for n, v in zip(names, g if isinstance(g, tuple) else (g,)):
        print(f"  d/d{n} = {v!r}")
    print(f"OK: the gradient of {fn.__name__} at ({', '.join(args.at)}) matches central "
          "finite differences")
    return 0


ARRAYS = "--at '[1.0, 2.0]' '[[1.0, 0.0], [0.0, 1.0]]'"


def _point(fn, at):
    """The values of --at (numbers, or arrays written as nested lists), checked against
    `fn`'s positional parameters."""
    try:
        point = [_value(v) for v in at]
    except (ValueError, SyntaxError, TypeError):
        raise CLIError(f"--at takes numbers, or arrays written as lists in quotes "
                       f"({ARRAYS}); got {' '.join(at)}") from None
    params = inspect.signature(fn).parameters.values()
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = [p for p in positional if p.default is p.empty]
    if not len(required) <= len(point) <= len(positional):
        expected = (str(len(required)) if len(required) == len(positional)
                    else f"{len(required)} to {len(positional)}")
        raise CLIError(f"{fn.__name__}() takes {expected} positional value(s), but --at "
                       f"gave {len(point)}")
    try:
        fn(*point)
    except Exception as exc:  # the user's function fails at this point
        arrays = ("; if it takes arrays, write them as lists in quotes: " + ARRAYS
                  if not any(isinstance(v, np.ndarray) for v in point) else "")
        raise CLIError(f"{fn.__name__}({', '.join(at)}) raised {type(exc).__name__}: {exc}; "
                       f"choose a point in its domain{arrays}") from None
    return point


def _value(text):
    """A number, or a float array from a nested list ('[[1, 2], [3, 4]]')."""
    value = ast.literal_eval(text)
    if isinstance(value, (list, tuple)):
        out = np.array(value, dtype=np.float64)
        if out.dtype != np.float64 or out.ndim == 0:
            raise ValueError(text)
        return out
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(text)
    return float(value)


def _trace(args):
    fn = load(args.target)
    point = _point(fn, args.at)
    wrt = _wrt(args.wrt, tuple(range(len(point))))
    result = trace(fn, *point, wrt=wrt)
    if args.format == "json":
        print(result.to_json())
    elif args.format == "markdown":
        print(result.to_markdown(), end="")
    else:
        print(result)
    return 0


def _graph(args):
    fn = load(args.target)
    if args.wrt and not args.pullback:
        raise CLIError("--wrt only matters with --pullback (the graph of the function "
                       "does not depend on it)")
    text = graph.dot(fn, wrt=_wrt(args.wrt, None), pullback=args.pullback)
    if not args.output:
        print(text, end="")
        return 0
    graph.render(text, args.output)
    print(f"wrote {args.output}")
    return 0


def _export(args):
    fn = load(args.target)
    values = None if args.args is None else tuple(_example(v) for v in args.args)
    words = ["s2sad", "export", args.target] + (["-o", args.output] if args.output else [])
    words += ["--mode", args.mode] if args.mode != "reverse" else []
    for option in ("wrt", "kind"):
        if getattr(args, option):
            words += [f"--{option}", getattr(args, option)]
    words += ["--args", *args.args] if args.args else []
    words += ["--backend", args.backend] if args.backend != "python" else []
    text = export(fn, args.output, mode=args.mode, wrt=_wrt(args.wrt, 0), kind=args.kind,
                  args=values, backend=args.backend,
                  command=" ".join(shlex.quote(w) for w in words))
    if args.output:
        print(f"wrote {args.output}")
    else:
        print(text, end="")
    return 0


def _example(text):
    """An example argument of --args: a number as written (int or float), or an array from
    a nested list, of the dtype NumPy gives it."""
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        value = None
    if isinstance(value, (list, tuple)):
        array = np.asarray(value)
        if array.ndim and array.dtype.kind in "biuf":
            return array
    elif type(value) in (int, float):
        return value
    raise CLIError(f"--args takes numbers (2 is an int, 2.0 a float) or arrays written as "
                   f"lists in quotes ({ARRAYS[5:]}); got {text}")


def _highlight(text):
    if not sys.stdout.isatty():
        return text
    try:
        from pygments import highlight
        from pygments.formatters import TerminalFormatter
        from pygments.lexers import PythonLexer
    except ImportError:
        return text
    return highlight(text, PythonLexer(), TerminalFormatter())
