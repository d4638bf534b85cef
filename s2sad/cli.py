"""The `s2sad` command: show generated derivative source, check gradients.

    s2sad show FILE.py:FUNC [--mode reverse|forward|batched] [--wrt NAME[,NAME]] [--stage STAGE]
               [--backend python|numba] [--at V [V ...]]
    s2sad check FILE.py:FUNC --at V [V ...] [--wrt NAME[,NAME]]
    s2sad trace FILE.py:FUNC --at V [V ...] [--wrt NAME[,NAME]] [--format text|markdown|json]
    s2sad graph FILE.py:FUNC [--pullback] [--wrt NAME[,NAME]] [-o OUT.dot|OUT.svg|OUT.png]
    s2sad export FILE.py:FUNC [-o OUT.py] [--mode reverse|forward] [--wrt NAME[,NAME]]
                 [--kind KIND[,KIND]] [--at V [V ...]] [--backend python|numba]

`--at` gives the arguments, one value per positional parameter (or the first few): for
`check` and `trace` the point (numbers as floats), for `show` and `export` the values whose
types the code is specialised on (2 an int, 2.0 a float). `--args` is the same option.

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
from .compilation import arg_types_of, default_arg_types, patterns_of, wrt_indices
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


POINT = ("the point: one value per positional parameter, a number (passed as a float) or "
         "an array written as a list in quotes ('[1.0, 2.0]')")
TYPES = ("example arguments, one per positional parameter (or the first few), whose types "
         "the code is specialised on: numbers (2 is an int, 2.0 a float) or arrays written "
         "as lists in quotes ('[1.0, 2.0]'); default: floats, or float arrays when the "
         "function uses NumPy (export: numbers or arrays)")


def _at(parser, text, required=False):
    """The arguments' values, `--at V [V ...]` (`--args` the same), in every command
    that takes them."""
    parser.add_argument("--at", "--args", dest="at", nargs="+", metavar="V",
                        required=required, help=text + "; --args is the same option")


def _parser():
    parser = argparse.ArgumentParser(prog="s2sad", description="Source-to-source automatic "
                                     "differentiation for Python.")
    sub = parser.add_subparsers(dest="command", required=True)
    show = sub.add_parser("show", help="print the generated derivative source")
    show.add_argument("target", metavar="FILE.py:FUNC", nargs="?")
    show.add_argument("--mode", choices=["reverse", "forward", "batched"], default="reverse",
                      help="batched: the function vmap runs, batched along --wrt (--at: "
                           "the values of one item)")
    show.add_argument("--wrt", help="parameters to differentiate, comma-separated "
                                    "(default: the first)")
    show.add_argument("--stage", metavar="PASS", choices=["list"] + list(dict.fromkeys(
        pipeline.stage_names() + pipeline.stage_names("forward")
        + pipeline.stage_names("batched"))),
        help="print the code after this pass instead; 'list' lists the passes")
    show.add_argument("--backend", choices=["python", "numba"], default="python",
                      help="numba: the code grad(f, backend='numba') (with --mode forward, "
                           "jvp(f, ..., backend='numba')) compiles with numba.njit")
    _at(show, TYPES)
    show.set_defaults(run=_show)
    check = sub.add_parser("check", help="compare the gradient with finite differences")
    check.add_argument("target", metavar="FILE.py:FUNC")
    _at(check, POINT, required=True)
    check.add_argument("--wrt", help="parameters to differentiate (default: all)")
    check.set_defaults(run=_check)
    trace = sub.add_parser("trace", help="print the evaluation trace: every intermediate "
                                         "value and its adjoint")
    trace.add_argument("target", metavar="FILE.py:FUNC")
    _at(trace, POINT, required=True)
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
    _at(exported, TYPES)
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
    gradient = forward_api.gradient_of(fn) if args.mode == "forward" else None
    primal = gradient[0] if gradient else getattr(fn, "primal", fn)
    target = driver.target(primal)
    # the types of --at's values, or those s2sad.source assumes
    at = None if args.at is None else _arguments(target, args.at)
    arg_types = default_arg_types(target) if at is None else arg_types_of(target, at)
    if args.mode == "batched":
        # the function vmap runs, batched along wrt
        if args.backend == "numba":
            raise CLIError("--mode batched prints vmap's code, which the Python backend runs")
        text = pipeline.stage_source(primal, args.stage, wrt, arg_types, mode="batched")
    elif args.backend == "numba" and gradient:
        # hvp(f, backend="numba"): forward mode of the numba backend's gradient code
        grad_wrt = gradient[1]
        tangents = wrt_indices(target, _wrt(args.wrt, getattr(fn, "s2s_tangents", 0)))
        d = numba_api.gradient_code_jvp(primal, wrt_indices(target, grad_wrt)[0],
                                        tangents, arg_types, args.stage)
        text = d if args.stage else d.source
    elif args.backend == "numba":
        text = pipeline.stage_source(primal, args.stage, wrt, arg_types, mode=args.mode,
                                     backend=backends.NUMBA)
    elif gradient:
        # a gradient: forward mode of the gradient code it runs (forward over reverse),
        # by default along the tangent of a second derivative
        wrt = _wrt(args.wrt, getattr(fn, "s2s_tangents", 0))
        if args.stage:
            text = pipeline.stage_source(forward_api.gradient_code(fn, arg_types).fn,
                                         args.stage, wrt, arg_types, mode="forward")
        else:
            text = api.source(fn, mode="forward", wrt=wrt, at=at)
    elif args.stage:
        # (a pass of the fused gradient's own: grad's code for these arguments' shapes)
        patterns = None if at is None else patterns_of(target, at)
        text = pipeline.stage_source(primal, args.stage, wrt, arg_types, mode=args.mode,
                                     patterns=patterns)
    else:
        text = api.source(primal, mode=args.mode, wrt=wrt, at=at)
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
    _count(fn, point)
    try:
        fn(*point)
    except Exception as exc:  # the user's function fails at this point
        arrays = ("; if it takes arrays, write them as lists in quotes: " + ARRAYS
                  if not any(isinstance(v, np.ndarray) for v in point) else "")
        raise CLIError(f"{fn.__name__}({', '.join(at)}) raised {type(exc).__name__}: {exc}; "
                       f"choose a point in its domain{arrays}") from None
    return point


def _count(fn, values, fewer=False):
    """Refuse `values` (of --at) that are not one per positional parameter of `fn`, or
    one for each of the first few: those without a default, or (with `fewer`) any."""
    params = inspect.signature(fn).parameters.values()
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = [] if fewer else [p for p in positional if p.default is p.empty]
    if not len(required) <= len(values) <= len(positional):
        expected = (str(len(required)) if len(required) == len(positional)
                    else f"{len(required)} to {len(positional)}" if required
                    else f"at most {len(positional)}")
        raise CLIError(f"{fn.__name__}() takes {expected} positional value(s), but --at "
                       f"gave {len(values)}")


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
    values = None if args.at is None else _arguments(driver.target(fn), args.at)
    words = ["s2sad", "export", args.target] + (["-o", args.output] if args.output else [])
    words += ["--mode", args.mode] if args.mode != "reverse" else []
    for option in ("wrt", "kind"):
        if getattr(args, option):
            words += [f"--{option}", getattr(args, option)]
    backend = ["--backend", args.backend] if args.backend != "python" else []
    at = ["--at", *args.at] if args.at else []
    text = export(fn, args.output, mode=args.mode, wrt=_wrt(args.wrt, 0), kind=args.kind,
                  args=values, backend=args.backend,
                  command=" ".join(shlex.quote(w) for w in words + at + backend),
                  command_without_at=" ".join(shlex.quote(w) for w in words + backend))
    if args.output:
        print(f"wrote {args.output}")
    else:
        print(text, end="")
    return 0


def _arguments(fn, at):
    """The example arguments of --at for `show` and `export`, whose types the code is
    specialised on, checked against `fn`'s positional parameters (the first few: the
    others are then of unknown type)."""
    values = tuple(_example(v) for v in at)
    _count(fn, values, fewer=True)
    return values


def _example(text):
    """An example argument of --at: a number as written (int or float), or an array from
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
    raise CLIError(f"--at takes numbers (2 is an int, 2.0 a float) or arrays written as "
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
