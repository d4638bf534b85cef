"""The compilation context: what one derivative's compilation knows, shared by its passes.

A `Compilation` holds the user's function (`src`), what to differentiate (`wrt`), the
argument types the code is specialised on (`arg_types`, `patterns`), the `options` of the
derivative being made (s2sad.options: its `Variant` and how it is made), the `namer`
every generated name comes from, the `bindings` of the names generated code reads to the
objects they denote (runtime helpers, rule namespaces, the derivatives of called
functions), and the `callees` the driver must compile and link. The analyses of the
function in Wengert form (`ops`, `varied`, `active`, `value_kinds`, `shapes`) and of the
fused gradient's arrays (`array_facts`) are computed on first use and kept; a pass that
computed some itself and changed nothing hands them on (`reuse`: resolve_calls), one that
changes the function before any pass read them drops them (`changed`: record_fields). A
transform leaves its result here too (`reverse`, `forward`), for the passes after it;
once the derivative is compiled, the driver drops what only the passes read
(`compiled`). Every pass has the signature
`run(fn, ctx) -> fn` (see `s2sad.pipeline`).

>>> import math
>>> from s2sad.compilation import Compilation
>>> def f(x, n):
...     return math.sin(x) * n
>>> ctx = Compilation.of(f, wrt=0, arg_types={"x": float})
>>> ctx.wrt, ctx.as_tuple
(['x'], False)
>>> ctx.bind("cos", obj=math.cos), ctx.bind("cos", obj=math.cos)
('cos', 'cos')
>>> ctx.bindings["cos"] is math.cos
True
"""
from __future__ import annotations

import dataclasses
import importlib
import inspect
import numbers
import types
import weakref
from typing import Any, Callable, Union

import gast
import numpy as np

from .analysis.value_kinds import (
    ARRAY, CONTAINER, SCALAR, UNKNOWN, ValueKinds, items_key, user_class)
from .analysis.activity import active_names, definitions, useful_names, varied_names
from .analysis.buffers import ArrayFacts
from .analysis.operations import classify
from .analysis.returned_shapes import returned_patterns, split
from .analysis.shapes import Shapes, pattern
from . import syntax
from .errors import ComplexValueError, S2SADError, defined_at
from .frontend import deferred, fence, guards, source
from .frontend.source import MISSING, FunctionSource
from .frontend import structure
from .frontend.structure import function_value
from .naming import Namer
from .options import Capabilities, Options, Variant
from .rules import complex_numbers, pytrees, runtime, snapshots
from .rules.registry import HELPERS, helper_facts
from .rules.arrays import is_duck_array, is_duck_array_type

#: What to differentiate: a positional parameter's index or name, or a tuple of them.
Wrt = Union[int, str, tuple]

#: The argument types a derivative is specialised on; others are of unknown kind, but for
#: the arrays of libraries NumPy dispatches to (Dask, CuPy: see rules/arrays.py), which are
#: arrays whose type the derivative is specialised on too (`is_duck_array_type`).
SPECIALISED = (float, int, np.float64, np.ndarray, complex, np.complex128)

#: The complex numbers a derivative is specialised on (see docs/complex.md); a complex
#: ndarray is an ndarray with `complex_key` (another library's complex array is of unknown
#: kind: code that reads it checks it, see before_ad/complex_values.py).
COMPLEX_NUMBERS = (complex, np.complex128)


def complex_key(p):
    """The key of a derivative's argument types under which it is specialised on its
    parameter `p` holding a complex ndarray (`{"z": np.ndarray, "z[complex]": True}`):
    the guard tests its dtype's kind, and before_ad/complex_values.py takes it as
    complex."""
    return p + "[complex]"


def complex_leaves_key(p):
    """The key of a derivative's argument types under which it is specialised on the
    values its parameter `p` holds, a structure (a list, tuple, dict, dataclass, ...)
    that holds complex numbers or arrays: `rules.complex_numbers.complex_leaves` of it,
    each leaf's path and whether it is complex, which the guard tests and
    before_ad/complex_values.py reads."""
    return p + "[complex leaves]"


#: The containers whose exact type a derivative is specialised on: their gradients have
#: their structure. (Not named tuples: their fields are, see `arg_types_of`.)
CONTAINERS = (list, tuple, dict)


@dataclasses.dataclass(frozen=True, eq=False)
class Callee:
    """A derivative of another Python function that generated code calls: its `variant`
    (s2sad.options) is `VJP` (its `g_vjp`), `ADJOINT` (its `g_adjoint`, with no closure),
    `STEP` (a `g_adjoint` that reuses memory, for the one step a checkpointed loop
    reverses), `ADVANCE` (a checkpointed loop's step as its sweeps run it, computing into
    its dead temporaries) or `JVP` (its `g_jvp`), for arguments of `arg_types`; `args` and
    `kwargs` are bound to it first (a method's instance, a partial's arguments); `nargs`
    is the number of positional arguments the call passes (for a jvp, whose tangents
    follow them); `patterns`, those a `STEP` or an `ADVANCE` is specialised on under a
    guard of its own (see ad/checkpointed.py); `ndims`, (parameter, number of axes) of
    the array arguments where the caller knows them (`Options.ndims`: the numba
    backend's callees, which Numba dispatches on them)."""
    fn: Callable
    variant: Variant
    wrt: Any
    arg_types: dict | None = None
    args: tuple = ()
    kwargs: dict = dataclasses.field(default_factory=dict)
    nargs: int = 0
    patterns: dict | None = None
    ndims: tuple = ()

    def same(self, other):
        """Whether `other` is the same derivative, with nothing bound to it."""
        return (not (self.args or self.kwargs or other.args or other.kwargs)
                and self.fn is other.fn and (self.variant, self.wrt, self.arg_types,
                                             self.nargs, self.patterns, self.ndims)
                == (other.variant, other.wrt, other.arg_types, other.nargs, other.patterns,
                    other.ndims))


@dataclasses.dataclass(eq=False)
class Compilation:
    """See the module docstring."""
    src: FunctionSource
    wrt: list
    as_tuple: bool
    arg_types: dict                             # {parameter: type or kind} (see arg_types_of)
    namer: Namer
    options: Options = Options()
    patterns: dict | None = None                # {parameter: (dtype, shape pattern)}
    #: {tuple parameter: ((dtype, shape pattern) or None, ...)} of its items, which a
    #: caller that knew them specialises a callee's vjp on (analysis/returned_shapes.py)
    item_patterns: dict | None = None
    seed: tuple | None = None                   # (name, value, pattern), see fused.step_guard
    can: Capabilities = Capabilities()          # what the backend's code can do
    bindings: dict = dataclasses.field(default_factory=dict)
    callees: list = dataclasses.field(default_factory=list)   # [(bound name, Callee)]
    lifted: list = dataclasses.field(default_factory=list)    # (fn, wrt, arg_types) called
    lifted_defs: list = dataclasses.field(default_factory=list)
    wengert: gast.FunctionDef | None = None     # the function as the wengert pass left it
    rewrote: bool = False       # set by a pass that rewrote it (see Pass.invalidates)
    reverse: Any = None                         # the reverse transform's ReverseResult
    forward: Any = None                         # the forward transform's ForwardResult
    batching: Any = None                        # the batching transform's BatchingResult
    ndims_relied: set = dataclasses.field(default_factory=set)  # see ValueKinds
    assumed: list = dataclasses.field(default_factory=list)     # Guards a pass added
    callee_guards: str | None = None    # the name of the callees' guards' checker, if read
    code_changed: tuple | None = None   # (name, held, stale): see after_ad/guard_bindings
    assumed_real: set = dataclasses.field(default_factory=set)  # see before_ad/complex_values
    rebound: dict = dataclasses.field(default_factory=dict)     # see before_ad/attribute_writes
    #: The driver's front end for a function this one calls, `front_end(fn, arg_types) ->
    #: (its context, its Wengert form)`, which analyses of calls read (what a callee
    #: returns and writes: before_ad/aliasing.py); None outside the driver.
    front_end: Any = None
    #: What a call of a Python function returns, `returns(call, kinds, ctx, fn) -> (kind,
    #: the kinds of a tuple's items or False)`, `fn` a method call's function or None
    #: (before_ad/callee_effects.returned_kind: from the summary of the function called
    #: with arguments of `kinds`, which its front end makes); None outside the driver.
    returns: Any = None
    #: The code of the adjoint of a callee this one calls, `adjoint_code(callee) -> (its
    #: context, its function after the passes of this one's backend)`, which the numba
    #: backend writes in place of a call of it (after_ad/native_fuse.py); None outside
    #: the driver.
    adjoint_code: Any = None
    _analyses: dict = dataclasses.field(default_factory=dict, repr=False)
    _shape_only: tuple | None = dataclasses.field(default=None, repr=False)

    @classmethod
    def of(cls, fn, wrt=0, arg_types=None, options=Options(), refused=None, **fields):
        """The context for compiling `fn`'s derivative with respect to `wrt` (an index, a
        name, or a tuple of them), specialised on `arg_types` (by default
        `default_arg_types`), with `options`: the front end, which reads `fn`'s source
        and refuses what s2sad does not support (frontend.fence), the statements of
        `refused` ({line: error}) raising their errors (frontend/deferred.py)."""
        arg_types = default_arg_types(fn) if arg_types is None else arg_types
        # the passes run on a copy of the tree (pipeline.compilation); generated code
        # differentiated again has its loops rewritten in the tree itself first
        generated = getattr(getattr(fn, "__code__", None), "co_filename", "").startswith(
            "<s2sad:")
        src = source.capture(fn, copy=options.variant.forward or generated or bool(refused))
        if refused:
            deferred.rewritten(src.node, refused, src.first_line)
            src.refused = {**src.refused, **refused}
        if src.refused:
            fields["bindings"] = {**fields.get("bindings", {}), **deferred.bindings(src)}
        source.prepare_generated(src)
        fence.check(src)
        return cls(src=src, wrt=wrt_names(src, wrt), as_tuple=isinstance(wrt, (tuple, list)),
                   arg_types=arg_types, namer=Namer.for_function(src), options=options,
                   patterns=split(options.patterns)[0] or None,
                   item_patterns=split(options.patterns)[1] or None, **fields)

    @property
    def variant(self) -> Variant:
        """The kind of derivative being made (`options.variant`)."""
        return self.options.variant

    # -- argument types -----------------------------------------------------------------
    @property
    def adjoints_shaped(self) -> bool:
        """Whether each adjoint its code computes has the shape of its value, so that the
        adjoint of an item of a tuple needs no sum back to the item's shape, and the vjps
        it calls may be specialised on the shape patterns of their arguments: a gradient
        specialised on shape patterns (its seed is a number, and its guard tests them),
        and a vjp so specialised by such a caller (analysis/returned_shapes.py), whose
        pullback that caller's code alone calls, with adjoints of this kind."""
        if self.variant in (Variant.GRAD, Variant.VALUE_AND_GRAD):
            return bool(self.options.guard and self.patterns)
        return self.variant is Variant.VJP and bool(self.options.patterns)

    @property
    def types(self) -> dict:
        """{parameter: type} of the parameters specialised on a type."""
        return {p: k for p, k in self.arg_types.items()
                if isinstance(k, type) and not structure.structural(p)}

    @property
    def int_params(self) -> set:
        """The parameters the code is specialised on as ints."""
        return {p for p, k in self.arg_types.items() if k is int}

    @property
    def param_ndims(self) -> dict:
        """{parameter: number of axes} of the array arguments whose shape patterns the
        code is specialised on (a guard tests those it relies on, `ndims_relied`), and
        those of the array parameters of a callee of the numba backend's code that its
        caller proved (`Options.axes`: Numba dispatches on them)."""
        ndims = dict(self.options.axes or ())
        ndims.update({p: len(pat) for p, (_, pat) in (self.patterns or {}).items()})
        return ndims

    @property
    def param_kinds(self) -> dict:
        """{parameter: kind} ("scalar", "array", ...) of the parameters of known kind."""
        return {p: (ARRAY if k is np.ndarray else SCALAR) if k in SPECIALISED else
                ARRAY if is_duck_array_type(k) else CONTAINER if k in CONTAINERS else k
                for p, k in self.arg_types.items()
                if not p.endswith("()") and not structure.structural(p)}

    @property
    def structure(self) -> dict:
        """The structure of the arguments the code is specialised on, deeper than their
        own fields (see frontend/structure.py)."""
        return {p: k for p, k in self.arg_types.items() if structure.structural(p)
                and not p.endswith((items_key(""), complex_key(""), complex_leaves_key("")))}

    @property
    def param_items(self) -> dict:
        """{parameter: the kinds of the items of the tuple it holds} where the caller knew
        them (see analysis.value_kinds.items_key)."""
        return {p[:-len(items_key(""))]: k for p, k in self.arg_types.items()
                if p.endswith(items_key(""))}

    @property
    def duck_arrays(self) -> bool:
        """Whether an argument is an array of another library that NumPy dispatches to
        (a Dask or CuPy array, see rules/arrays.py). The adjoints of arrays are then never
        updated element by element in place (`x_bar[i] += g`): `g` may be such an array,
        which an ndarray cannot hold."""
        return any(is_duck_array_type(k) for k in self.arg_types.values())

    # -- analyses of the function in Wengert form, on first use ---------------------------
    def _analysis(self, name, compute):
        if name not in self._analyses:
            if self.wengert is None:
                raise S2SADError(f"the {name} analysis needs the function in Wengert form")
            self._analyses[name] = compute()
        return self._analyses[name]

    @property
    def ops(self) -> syntax.NodeMap:
        """{assignment: `Op`}, what each statement of Wengert form computes."""
        return self._analysis("ops", lambda: syntax.NodeMap(
            (s, classify(s.value, self.src)) for _, s in definitions(self.wengert.body)))

    @property
    def active(self) -> set:
        """The names that carry a derivative: they depend on `wrt` and the output depends
        on them (analysis.activity)."""
        return self._analysis("active", lambda: active_names(
            self.wengert, self.wrt, self._output(), self.ops))

    @property
    def useful(self) -> set:
        """The names the output depends on differentiably (analysis.activity)."""
        return self._analysis("useful", lambda: useful_names(
            self.wengert, self._output(), self.ops))

    def _output(self):
        """The name of the output: the name the function in Wengert form returns, or
        None; with the option `aux` (has_aux=True), the first item of the pair it
        returns where the pair is built once, in straight-line code (`y = (out, aux)`):
        then `aux` carries no derivative, and no adjoint code is written for it."""
        ret = self.wengert.body[-1]
        name = ret.value.id if isinstance(getattr(ret, "value", None), gast.Name) else None
        if name is not None and self.options.aux:
            built = [s.value for s in self.wengert.body if isinstance(s, gast.Assign)
                     and syntax.is_name(s.targets[0], name)]
            if (len(built) == 1 and isinstance(built[0], gast.Tuple)
                    and len(built[0].elts) == 2 and isinstance(built[0].elts[0], gast.Name)
                    and not any(syntax.stores(s, name) for s in self.wengert.body
                                if not isinstance(s, gast.Assign))):
                return built[0].elts[0].id
        return name

    output = property(_output)

    @property
    def varied(self) -> set:
        """The names that depend differentiably on `wrt` (analysis.activity)."""
        return self._analysis("varied", lambda: varied_names(self.wengert, self.wrt,
                                                             self.ops))

    @property
    def value_kinds(self) -> ValueKinds:
        """Which names are certainly numbers, arrays or containers (analysis.value_kinds)."""
        return self._analysis("kinds", lambda: ValueKinds(
            self.wengert, self.src, self.param_kinds, self.param_ndims, self.ndims_relied,
            self.int_params, self.returned_kind, self.structure, self.param_items))

    def returned_kind(self, call, kinds, fn=None, ndims=()) -> tuple:
        """(the kind of what `call`, of a Python function (of `fn`, for a method call),
        returns when its arguments are of `kinds`, the kinds of the items of a tuple it
        returns or False; see `returns`, UNKNOWN without it). The derivative relies on the
        code they were found from: its guards are this derivative's too. `ndims`: the
        arguments' numbers of axes (None where not known), which the callee's code is
        specialised on where this code's backend specialises its callees so
        (`graded_calls`, the numba backend's: `Callee.ndims`)."""
        if self.returns is None:
            return UNKNOWN, False
        if not self.can.graded_calls or self.variant.forward:
            ndims = ()
        return self.returns(call, kinds, self, fn, ndims)

    @property
    def shapes(self) -> Shapes:
        """Which names certainly have one shape (analysis.shapes)."""
        return self._analysis("shapes", lambda: Shapes(
            self.wengert, self.ops, self.value_kinds, self.patterns, self.item_patterns,
            returns=lambda op, pats: returned_patterns(op, pats, self)))

    @property
    def array_facts(self) -> ArrayFacts:
        """The facts of the fused gradient's arrays that InlineHelpers, CombineTerms
        and ReuseBuffers share (analysis.buffers)."""
        if "array_facts" not in self._analyses:
            self._analyses["array_facts"] = ArrayFacts(self)
        return self._analyses["array_facts"]

    def reuse(self, **analyses):
        """Keep `analyses` ({name: analysis}, the names of `_analysis`), which a pass
        computed of the function in Wengert form as it now is, for the passes after it
        until one changes the function."""
        self._analyses.update(analyses)

    def changed(self):
        """The function in Wengert form changed: its analyses are computed again (the
        driver calls it after a pass that rewrote the function, see `Pass.invalidates`)."""
        self._analyses.clear()

    def compiled(self):
        """Drop what only the passes read (the analyses, the transforms' results), once
        the derivative is compiled: some of it refers back to the context (a transform
        keeps it, the array facts too), and such cycles of hundreds of thousands of
        syntax nodes would wait for the garbage collector, which walks them all."""
        self._analyses.clear()
        self.wengert = self.reverse = self.forward = self.batching = None

    # -- what the derivative took of the world, guarded -------------------------------------
    @property
    def guards(self) -> list:
        """The guards (frontend/guards.py) of what this compilation resolved: those of its
        source (`source.guards_of`) and those the passes added (`assumed`). Code that
        holds the values of globals it was compiled with (`can.frozen_globals`) has its
        data guarded by identity."""
        return guards.unique(source.guards_of(self.src, frozen=self.can.frozen_globals)
                             + self.assumed)

    def assume(self, found: list):
        """Add the guards `found` (a pass relied on what they read)."""
        self.assumed.extend(found)

    def constant(self, obj, base: str) -> str:
        """A name of generated code's own (`_s2s_` and `base`) for the object `obj`, which
        is never the user's name for anything (as `bind` may be)."""
        for bound, value in self.bindings.items():
            if value is obj and bound.startswith("_s2s_"):
                return bound
        if not base.isidentifier():         # (`<lambda>`)
            base = "".join(c if c.isalnum() else "_" for c in base).strip("_") or "value"
        bound = self.namer.fresh("_s2s_" + base)
        self.bindings[bound] = obj
        return bound

    # -- names generated code reads --------------------------------------------------------
    def bind(self, name, module="builtins", obj=MISSING) -> str:
        """The name generated code uses for the object `obj` (by default `name` of
        `module`): `name` itself when free or already the user's name for it, else the
        next free `name_1`, ... (a lambda's `<lambda>` is `lambda_`)"""
        if obj is MISSING:
            obj = getattr(importlib.import_module(module), name)
        obj = snapshots.of(obj)             # (a library as s2sad found it: rules/snapshots.py)
        if not name.isidentifier():         # `<lambda>`
            name = "lambda_"
        for bound, value in self.bindings.items():
            if value is obj and (bound == name or bound.startswith(name + "_")):
                return bound
        free = self.src.free_values()
        if name in free and free[name] is obj or (
                obj is not snapshots.live(obj) and dict.get(free, name) is snapshots.live(obj)
                and snapshots.agrees(obj)):
            bound = name
        else:
            bound = self.namer.fresh(name)
        self.bindings[bound] = obj
        return bound

    def runtime(self, name) -> str:
        """The generated-code name of runtime helper `name` (registry.HELPERS: reverse
        mode's, rules/runtime.py, and forward mode's, rules/tangents.py)."""
        return self.bind("_s2s_" + name, obj=HELPERS["_s2s_" + name])

    def shape_only_args(self, node):
        """(call, argument) for each argument of a runtime helper in `node` (a node or a
        list of them) that the helper reads only for its type, shape or structure
        (its `shape_only`, registry.HelperFacts; each item of a tuple display there)."""
        helpers = self._shape_only_helpers()
        for n in node if isinstance(node, list) else [node]:
            if not any(m.id in helpers for m in syntax.name_nodes(n)):
                continue    # (a search for names, cheaper than a walk of every node)
            for call in syntax.walk(n):
                if not isinstance(call, gast.Call):
                    continue
                for i in helpers.get(getattr(call.func, "id", None), ()):
                    if i < len(call.args):
                        arg = call.args[i]
                        for item in arg.elts if isinstance(arg, gast.Tuple) else [arg]:
                            yield call, item

    def _shape_only_helpers(self):
        """{name generated code binds to a helper with arguments read only for their
        shape: their positions}."""
        known = self._shape_only
        if known is None or known[0] != len(self.bindings):   # (bindings are only added)
            found = {bound: helper_facts(obj) for bound, obj in self.bindings.items()}
            known = self._shape_only = (len(self.bindings), {
                bound: facts.shape_only for bound, facts in found.items()
                if facts is not None and facts.shape_only})
        return known[1]

    def is_runtime_call(self, e, name) -> bool:
        """Whether `e` calls the runtime helper `name`."""
        return (isinstance(e, gast.Call) and isinstance(e.func, gast.Name)
                and self.bindings.get(e.func.id) is getattr(runtime, name))

    def resolve(self, func):
        """The object the name or attribute chain `func` denotes in generated code (a
        binding, or what the user's function sees), or None."""
        if isinstance(func, gast.Name) and func.id in self.bindings:
            return self.bindings[func.id]
        if (isinstance(func, gast.Attribute) and isinstance(func.value, gast.Name)
                and func.value.id in self.bindings):      # `np.float64` of a rule
            return getattr(self.bindings[func.value.id], func.attr, None)
        obj = self.src.resolve(func)
        return None if obj is MISSING else obj

    def call(self, callee: Callee, name: str) -> str:
        """The generated-code name of the derivative `callee`, which the driver compiles
        and binds (see driver.link)."""
        for bound, known in self.callees:
            if known.same(callee) and (bound == name or bound.startswith(name + "_")):
                return bound
        bound = self.namer.fresh(name)
        self.callees.append((bound, callee))
        return bound


@dataclasses.dataclass(frozen=True)
class Pass:
    """One pass of the compiler: its `name` (for `--stage`), `run(fn, ctx) -> fn`, what it
    `does`, `when` it runs (a test of the context, such as `ctx.options.release`; always,
    without it), and whether it `invalidates` the analyses of the function in Wengert
    form: it may rewrite that function, and says so when it has (`ctx.rewrote = True`,
    as pythran's transformations set `update`), so that the driver then drops them
    (`Compilation.changed`) and a pass after it computes them anew. A pass that does
    not declare it leaves them true (tests/test_pipeline.py checks both; see
    pipeline.compilation)."""
    name: str
    run: Callable[[gast.FunctionDef, Compilation], gast.FunctionDef]
    does: str
    when: Callable[[Compilation], bool] | None = None
    invalidates: bool = False


# -- what to differentiate, and the argument types to specialise on ----------------------
def parameters(src):
    """The names of the positional parameters of `src`'s function."""
    return [a.id for a in src.node.args.posonlyargs + src.node.args.args]


def wrt_names(src, wrt):
    """Parameter names for `wrt` (an index, a name, or a tuple of them)."""
    params = parameters(src)
    items = wrt if isinstance(wrt, (tuple, list)) else (wrt,)
    out = []
    for w in items:
        if isinstance(w, bool) or not isinstance(w, (int, str)):
            raise S2SADError(f"wrt must be a parameter index or name, got {w!r}")
        if isinstance(w, int):
            if not -len(params) <= w < len(params):
                raise S2SADError(
                    f"wrt={w} is out of range: {src.name}() has {len(params)} positional "
                    f"parameter(s) {params}")
            out.append(params[w])
        elif w in params:
            out.append(w)
        else:
            kwonly = [a.id for a in src.node.args.kwonlyargs]
            hint = " (keyword-only parameters are never differentiated)" if w in kwonly else ""
            raise S2SADError(f"wrt={w!r} is not a positional parameter of {src.name}(); "
                             f"its parameters are {params}{hint}")
    return out


def wrt_or_argnums(wrt, argnums, default=0):
    """What a transform differentiates: `wrt`, or in its place `argnums`, JAX's spelling
    (positions only: an int or a tuple of ints); `default` if neither is given.

    >>> wrt_or_argnums(None, (0, 2)), wrt_or_argnums("x", None), wrt_or_argnums(None, None)
    ((0, 2), 'x', 0)
    """
    if argnums is None:
        return default if wrt is None else wrt
    if wrt is not None:
        raise S2SADError(f"wrt={wrt!r} and argnums={argnums!r} both say what to "
                         "differentiate (argnums is JAX's spelling of wrt); give one of them")
    many = isinstance(argnums, (tuple, list))
    for a in argnums if many else (argnums,):
        if isinstance(a, (bool, np.bool_)) or not isinstance(a, (int, np.integer)):
            raise S2SADError(f"argnums={argnums!r}: argnums are positions, an int or a "
                             "tuple of ints; name parameters with wrt= instead")
    return tuple(int(a) for a in argnums) if many else int(argnums)


def wrt_indices(fn, wrt):
    """Positional indices of the parameters `wrt` names."""
    src = source.capture(fn, copy=False)
    params = parameters(src)
    return [params.index(n) for n in wrt_names(src, wrt)]


def refuse_complex(fn, indices, args, numbers=False):
    """Refuse, with `ComplexValueError`, a complex argument (or one holding a complex
    value) among the arguments `args` at positional `indices` that `fn` is differentiated
    with respect to; with `numbers`, but a complex number (`complex`, `np.complex128`) or
    ndarray, or a structure of them and real values, which `grad`, `vjp` and `jvp`
    differentiate (docs/complex.md)."""
    for i in indices:
        if numbers and i < len(args) and (complex_argument(args[i]) or pytrees.is_structure(
                args[i])):
            continue
        found = runtime.complex_part(args[i]) if i < len(args) else None
        if found is not None:
            held = "holds" if pytrees.is_structure(args[i]) else "is"
            what = ("complex numbers and NumPy arrays, and structures of them" if numbers
                    else "complex numbers and arrays with grad, value_and_grad, vjp, jvp and"
                         " hvp (the Python backend), and jacfwd and jacrev with "
                         "holomorphic=True, only")
            raise ComplexValueError(
                f"argument {i} of {getattr(fn, '__qualname__', fn)} {held} {found}; s2sad "
                f"differentiates with respect to {what} (docs/complex.md): pass the real "
                "and imaginary parts as real arrays and compute with them")


def complex_argument(x):
    """Whether `x` is a complex number or ndarray, which the code is specialised on
    (`COMPLEX_NUMBERS`, `complex_key`)."""
    return type(x) in COMPLEX_NUMBERS or (type(x) is np.ndarray and x.dtype.kind == "c")


def holomorphic_argument(x):
    """Whether `x` is what `holomorphic=True` differentiates with respect to: a complex
    number or ndarray, or a structure whose leaves all are."""
    if complex_argument(x):
        return True
    leaves = complex_numbers.complex_leaves(x) if pytrees.is_structure(x) else ()
    return bool(leaves) and all(c for _, c in leaves)


def refuse_complex_but_holomorphic(target, indices, args, holomorphic, made_by):
    """Refuse complex arguments at `indices` but with `holomorphic`, which needs them."""
    refuse_complex(target, indices, args, numbers=holomorphic)
    for i in indices if holomorphic else ():
        if not holomorphic_argument(args[i]):
            raise S2SADError(
                f"{defined_at(target)}argument {i} of {target.__qualname__} is a "
                f"{_described(args[i])}: {made_by}(..., holomorphic=True) differentiates "
                "a complex function with respect to complex numbers and arrays (as JAX's); "
                "pass complex(x), or x.astype(complex)")


def _described(x):
    dtype = getattr(x, "dtype", None)
    return f"{type(x).__name__} of {dtype}" if dtype is not None else type(x).__name__


def check_inputs(fn, target, wrt, args, kwargs=None, holomorphic=False):
    """Refuse, clearly, inputs s2sad cannot differentiate with respect to `wrt` (checked
    when `fn`, of function `target`, is compiled); with `holomorphic`, real ones."""
    params = list(inspect.signature(target).parameters)
    for i in wrt_indices(target, wrt):
        if i >= len(args) and params[i] not in (kwargs or {}):
            continue
        x = args[i] if i < len(args) else kwargs[params[i]]
        dtype = getattr(x, "dtype", None)
        refuse_complex(fn, [i], args, numbers=True)
        if holomorphic and not holomorphic_argument(x):
            raise S2SADError(
                f"{defined_at(target)}argument {i} of {fn.__qualname__} is a "
                f"{_described(x)}: grad(..., holomorphic=True) differentiates a complex "
                "function with respect to complex numbers and arrays (as JAX's); pass "
                "complex(x), or x.astype(complex)")
        if complex_argument(x):
            continue
        if dtype is not None and not np.issubdtype(dtype, np.floating):
            raise S2SADError(
                f"argument {i} of {fn.__qualname__} is an array of {dtype}, which carries no "
                "derivative; pass a float array (x.astype(float)) or leave it out of wrt")
        held = _cycle(x)
        if held is not None:
            raise S2SADError(
                f"argument {i} of {fn.__qualname__} holds a {type(held).__name__} object that "
                "holds itself (an attribute refers back to it); s2sad takes the objects it "
                "differentiates with respect to apart by their attributes, down to numbers "
                f"and arrays. Register {type(held).__name__} with s2sad.register_pytree, "
                "with a flatten that leaves the back reference out of the children, or "
                "leave the argument out of wrt")
        odd = _opaque(x)
        if odd is not None:
            raise S2SADError(
                f"argument {i} of {fn.__qualname__} is or holds a {type(odd).__name__} object; "
                "s2sad differentiates with respect to numbers, arrays, and tuples, lists, "
                "dicts, dataclasses, named tuples, registered classes and plain classes "
                "of them (whose instances keep their attributes in their __dict__: no "
                "__slots__, no built-in base class, no __getattr__ or __setattr__). Make "
                f"{type(odd).__name__} a dataclass, register it with s2sad.register_pytree, "
                "or leave the argument out of wrt (its attributes can still be read)")


def _cycle(x, path=()):
    """The first object in `x` that holds itself, through the values pytrees takes
    apart (a plain object whose attribute refers back to it), or None."""
    if not pytrees.is_structure(x):
        return None
    if any(x is p for p in path):
        return x
    return next((found for found in (_cycle(c, path + (x,)) for c in pytrees.children(x))
                 if found is not None), None)


def _opaque(x):
    """The first object in `x` s2sad cannot give an adjoint of, or None."""
    if x is None or isinstance(x, (numbers.Number, np.ndarray, np.generic, str)) or (
            is_duck_array(x)):
        return None
    if isinstance(x, (tuple, list)):
        return next((o for o in map(_opaque, x) if o is not None), None)
    if isinstance(x, dict):
        return _opaque(list(x.values()))
    return None if pytrees.is_structure(x) else x


def arg_types_of(fn, args, kwargs=None):
    """{parameter: type} for the arguments (positional `args`, and those of `kwargs`
    passed by keyword) whose exact type s2sad specialises on (float, int, real ndarrays,
    the arrays of other libraries NumPy dispatches to, lists, tuples and dicts, and the
    user's classes, whose methods are found through them), and for the defaults of the
    parameters the call leaves; {"p.a": type} for such fields of dataclass and named
    tuple arguments; {"p()": function} for the functions given or left as defaults
    (see `function_params`); the structure of lists of the user's objects and of such
    objects (`"layers[0]": Dense`, `"model.layers[1].act()": np.tanh`, see
    frontend/structure.py); other arguments are of unknown kind."""
    signature = parameters_of(fn)
    given = _given(signature, args, kwargs)
    arg_types = {p: type(a) for p, a in given.items()
                 if _specialised(a) or user_class(type(a)) or type(a) in CONTAINERS}
    arg_types.update({complex_key(p): True for p, a in given.items()
                      if type(a) is np.ndarray and _complex(a)})
    for p, a in given.items():
        if pytrees.is_structure(a) and (leaves := complex_numbers.complex_leaves(a)):
            arg_types[complex_leaves_key(p)] = leaves
    for p, a in given.items():
        if user_class(type(a)):
            _refuse_hidden_methods(fn, p, a)
    left = {p: signature[p].default for p in signature if p not in given and signature[
        p].kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)}
    for p in signature:        # a default the call leaves, as the guard sees it
        default = signature[p].default
        if (p not in given and signature[p].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
                and type(default) in SPECIALISED):
            arg_types[p] = type(default)
            if type(default) is np.ndarray and _complex(default):
                arg_types[complex_key(p)] = True
    for p, value in [*given.items(), *left.items()]:
        if function_value(value):
            arg_types[f"{p}()"] = value     # (see function_params)
    # an object of the user's classes left as a default (`model=Model()`): as if given
    objects = {**given, **{p: a for p, a in left.items() if user_class(type(a))}}
    for p, a in objects.items():
        if p not in given:
            arg_types[p] = type(a)
            _refuse_hidden_methods(fn, p, a)
        for field in _record_fields(a):
            value = getattr(a, field)
            if type(value) in SPECIALISED and not _complex(value):
                arg_types[f"{p}.{field}"] = type(value)
        found = structure.of(p, a)
        for k, v in found.items():
            if user_class(v):
                _refuse_hidden_methods(fn, k, _read(a, k[len(p):]))
        arg_types.update(found)
    return arg_types


class NoKey(Exception):
    """A value of a kind `call_key` does not read."""


def call_key(x):
    """What code compiled for an argument `x` depends on, cheaply (what `vmap` and the
    Jacobians look their code up by, at each call, instead of `arg_types_of`): its type,
    and for an array its dtype and number of axes (an item of a batch of vectors is a
    number), for a dict, list or tuple those of its items; `NoKey` for another kind of
    value (a user's object, whose fields the compilation reads), which takes the
    caller's general path."""
    t = type(x)
    if t is np.ndarray:
        return t, x.dtype, x.ndim
    if t in _NUMBERS or x is None:
        return t
    if t is dict:
        return t, tuple((k, call_key(v)) for k, v in x.items())
    if t is tuple or t is list:
        return t, tuple(map(call_key, x))
    raise NoKey


_NUMBERS = (float, int, bool, np.float64, np.float32, np.int64, np.int32, np.bool_, str)


def parameters_of(fn):
    """`inspect.signature(fn).parameters`, read once for a Python function while its
    code and defaults are those it was read with (a call of `inspect.signature` costs
    more than a small derivative: the Jacobians and Hessians read it at each call)."""
    if type(fn) is not types.FunctionType or "__wrapped__" in fn.__dict__ or (
            "__signature__" in fn.__dict__):
        return inspect.signature(fn).parameters
    seen = (fn.__code__, fn.__defaults__, fn.__kwdefaults__)
    try:
        held, params = _parameters[fn]
    except KeyError:
        held = None
    except TypeError:       # (not weakly referable, or not hashable)
        return inspect.signature(fn).parameters
    if held is None or any(a is not b for a, b in zip(held, seen)):
        params = inspect.signature(fn).parameters
        _parameters[fn] = (seen, params)
    return params


# function -> ((its __code__, __defaults__, __kwdefaults__), its parameters): see
# parameters_of (an entry goes when its function does)
_parameters = weakref.WeakKeyDictionary()


def _read(obj, steps):
    """What the steps of a structure key (`".layers[1]"`) read from `obj`."""
    for step in structure.steps("_" + steps)[1]:
        obj = obj[step] if isinstance(step, int) else getattr(obj, step)
    return obj


def function_params(arg_types):
    """{parameter: function} of the parameters the code is specialised on the function
    value of: the keys `"p()"` of `arg_types` (see `arg_types_of`)."""
    return {k[:-2]: v for k, v in (arg_types or {}).items() if k.endswith("()")}


def _refuse_hidden_methods(fn, param, obj):
    """Refuse an argument one of whose attributes, set on the instance, hides a method its
    class defines: Python calls the instance's, and s2sad finds methods through the
    class (as it compiles for the class of an argument, not for the object)."""
    name = guards.hides_a_method(obj)
    if name is not None:
        raise S2SADError(
            f"{defined_at(fn)}the argument {param!r} of {fn.__qualname__}() has an attribute "
            f"{name!r} of its own, which hides the method {type(obj).__qualname__}."
            f"{name}() that Python would otherwise call; s2sad finds the methods of an "
            "argument through its class. Set the function on the class "
            f"({type(obj).__qualname__}.{name} = ...), or pass it as an argument")


def _specialised(a):
    """Whether the code is specialised on the type of argument `a`: a number, or an
    ndarray, or a real array of another library (a complex one is of unknown kind: code
    that reads it checks it, see before_ad/complex_values.py)."""
    return (type(a) in SPECIALISED or is_duck_array_type(type(a))) and (
        not _complex(a) or type(a) in COMPLEX_NUMBERS or type(a) is np.ndarray)


def _complex(a):
    dtype = getattr(a, "dtype", None)
    return dtype is not None and getattr(dtype, "kind", None) == "c"


def patterns_of(fn, args, kwargs=None):
    """{parameter: (dtype, shape pattern)} of the real array arguments (positional `args`,
    and those of `kwargs` passed by keyword; see analysis.shapes.pattern), ndarrays and
    others: each one's dtype, how many axes it has and which have length 1, which
    broadcasting depends on."""
    given = _given(parameters_of(fn), args, kwargs)
    return {p: pattern(a) for p, a in given.items()
            if (type(a) is np.ndarray or is_duck_array_type(type(a))) and not _complex(a)}


def _given(signature, args, kwargs):
    """{parameter: argument} of a call with positional `args` and keyword `kwargs`."""
    given = dict(zip(signature, args))
    for p, a in (kwargs or {}).items():
        if p in signature and p not in given:
            given[p] = a
    return given


def default_arg_types(fn):
    """The argument types `source(f)` assumes without arguments: floats, or arrays when the
    function uses NumPy."""
    src = source.capture(fn, copy=False)
    uses_numpy = any(getattr(v, "__name__", "") == "numpy" or
                     getattr(v, "__module__", "") and str(getattr(v, "__module__", ""))
                     .startswith("numpy") for v in src.free_values().values())
    return {p: np.ndarray if uses_numpy else float for p in parameters(src)}


def _record_fields(x):
    """The fields of a named tuple or dataclass `x`; the attributes of an instance of a
    registered class that are its children (see runtime.child_of)."""
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return x._fields
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return [f.name for f in dataclasses.fields(x)]
    if pytrees.by_attributes(type(x)):
        node = pytrees.node_of(type(x))
        aux = node.flatten(x)[1]
        return [name for name in getattr(x, "__dict__", ()) if _child(node, aux, x, name)]
    return ()


def _child(node, aux, x, name):
    try:
        return runtime.child_of(node, aux, x, name) is not None
    except S2SADError:      # (refused where the function reads it)
        return False


def wrt_key(wrt):
    return tuple(wrt) if isinstance(wrt, (tuple, list)) else wrt


def arg_types_key(arg_types):
    # a user's class stands for itself: two classes may have one name
    return tuple(sorted((p, k.__name__ if k in SPECIALISED else k)
                        for p, k in (arg_types or {}).items()))


def patterns_key(patterns):
    return tuple(sorted((patterns or {}).items()))
