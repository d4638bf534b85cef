"""The registry: one record per primitive, keyed by the primitive object itself.

A `Primitive` record holds everything s2sad knows about one primitive: its reverse rule
(`vjp`), its forward rule (`jvp`), whether its result carries no derivative at all
(`nondiff`), the kind of value it returns (`returns`), which arguments its result may
share memory with (`view`, NumPy views; `copies`, the keyword that makes it a copy after
all; `viewed` finds those arguments in a call), whether it is a reduction (`reduction`),
whether it gives a float for numbers (`floats`), and the array methods and attributes
that mean it (`methods`, `attributes`; `METHODS` and `ATTRIBUTES` find it by name).
`primitive(prim)` gives the record, or None. A rule module declares each primitive in
one statement, `define`:

    define(np.sum, "a, axis=None, dtype=None, out=None, keepdims=False",
           a="_s2s_unreduce(g, a, axis, keepdims)", uniform="g", linear="a",
           reduction=True, method="sum", namespace=ns)

A reverse rule gives, for each differentiable parameter of a primitive, a source
template for the adjoint contribution, written over the parameter names, `g` (the
adjoint of the result) and `ans` (the result): `define(math.sin, "x", "g * cos(x)")`.
The template is inlined into generated code with names substituted, so a pullback reads
`x_bar = y_bar * cos(x)`. Free names in templates (here `cos`) are resolved in the
namespace given at registration; a name `_s2s_NAME` not there is the runtime helper
`NAME` (`HELPERS`: each module of helpers declares its functions, once, with
`helpers(__name__)` at its end, so a template may call any of them by that name; what
s2sad knows about a helper, `HelperFacts`, is declared above its `def` with
`@helper(shape_only=..., result=..., writes=..., numba=..., elementwise=...)`, read with
`helper_facts`, and so is its forward rule, `@helper(linear=...)` or
`@helper(tangent=...)`). A parameter without a template has no derivative (like
ChainRules' `NoTangent`); `nondiff=True` marks a whole primitive. `broadcast=True`
says the primitive broadcasts its arguments like a NumPy ufunc: the engine then sums
each contribution back to its argument's shape where shapes may differ.

A forward rule gives templates over `t`, the tangent of one parameter (`tangent=`), or
the groups of parameters the primitive is linear in (`linear=`). Elementwise primitives
need none: their reverse templates, linear in `g`, give the tangent with `t` for `g`.

`vjp`, `vjp_each`, `jvp`, `linear` and `nondiff` register one part of a record (the
public `s2sad.defvjp`, `s2sad.defjvp` and `s2sad.nondiff` call them). Each registration
bumps `version` and calls the `on_change` listeners.
"""
import contextlib
import copy
import dataclasses
import inspect
import sys
import types

import gast

from ..errors import S2SADError
from . import snapshots

version = 0
#: The runtime helpers, by the name templates and generated code call them (`_s2s_` and
#: the helper's name): every public function and class a module of helpers defines
#: (rules/arrays.py, containers.py, calculus.py, ..., tangents.py; see `helpers`).
HELPERS = {}
#: What to call when a rule changes (the API's gradients forget their compiled code).
_listeners = []
REQUIRED = object()


@dataclasses.dataclass(frozen=True)
class HelperFacts:
    """What s2sad knows about one runtime helper, declared where it is defined (`helper`);
    a helper declared with none has these defaults."""
    #: The positions of the arguments it reads only for their type, shape or structure
    #: (each item of a tuple display there): a stand-in of that shape (`runtime.like`)
    #: serves as well as the value (compilation's `shape_only_args`).
    shape_only: tuple = ()
    #: What its result is: "fresh", a new array (never an argument nor a view of one);
    #: "of_adjoint", its first argument (the adjoint `g`) or a view of it; None, either
    #: (after_ad/distinct_results.py).
    result: str = None
    #: The positions of the arguments it writes into (`arrays.add_at`: 0); a helper
    #: without writes changes no value it is given (after_ad/combine_terms.py).
    writes: tuple = ()
    #: It has a Numba version, `numba_NAME` in rules/numba_overloads.py or
    #: numba_reductions.py, which the numba backend's code may call (numba_runtime.py).
    numba: bool = False
    #: The positions of the arguments it reads element by element, broadcasting them as
    #: NumPy does: `vmap` calls it on batches of them (ad/batching.py), else item by item.
    elementwise: tuple = ()


#: {name in generated code (`_s2s_NAME`): HelperFacts}, one record per runtime helper.
HELPER_FACTS = {}
_RESULTS = (None, "fresh", "of_adjoint")


def helpers(module_name: str) -> dict:
    """Declare the public functions and classes the module `module_name` defines (not those
    it imports) runtime helpers: templates and generated code call each as `_s2s_` and its
    name. A module of helpers ends with `helpers(__name__)`; a helper is declared where it
    is defined, and in no list (those with facts to declare, with `helper` above it).
    Returns {name: helper} for the module."""
    module = sys.modules[module_name]
    found = {}
    for name, obj in vars(module).items():
        if (name.startswith("_") or getattr(obj, "__module__", None) != module_name
                or not callable(obj)):
            continue
        _declare(obj, name)
        found[name] = obj
    return found


def helper(fn=None, *, tangent=None, linear=None, adjoint=None, params=None, namespace=None,
           shape_only=(), result=None, writes=(), numba=False, elementwise=""):
    """Declare the function `fn` a runtime helper (`_s2s_` and its name, see `helpers`)
    where it is defined, with what s2sad knows about it (`HelperFacts`: `shape_only`,
    `result`, `writes`, `numba`, `elementwise` by the parameters' names, "u, x"), and its
    forward rule, which forward over reverse
    (`hessian`) needs of a helper reverse-mode code calls: `tangent`, templates over `t`,
    the tangent of a parameter (a dict by name, a tuple by position, `()` for a constant
    result), or `linear`, the groups of parameters it is linear in ("g"; see `define`).
    The templates are written over `fn`'s own parameters, or `params` where those do not
    do ("*args", or a parameter called `t` or `ans`, which templates mean otherwise), and
    read the names of `fn`'s module (`np`) besides, or `namespace`. A rule module declares
    so a helper that only its rules call (docs/design.md, "Adding an elementwise NumPy
    function", has an example). As a decorator, bare or with options; returns `fn`."""
    if fn is None:
        return lambda f: helper(f, tangent=tangent, linear=linear, adjoint=adjoint, params=params,
                                namespace=namespace, shape_only=shape_only, result=result,
                                writes=writes, numba=numba, elementwise=elementwise)
    if result not in _RESULTS:
        raise S2SADError(f"helper {fn.__name__!r}: result={result!r} is none of {_RESULTS}")
    own = list(inspect.signature(fn).parameters.values())
    each = tuple([p.name for p in own].index(p) for p, _ in _parse_params(elementwise))
    _declare(fn, fn.__name__, HelperFacts(tuple(shape_only), result, tuple(writes), numba, each))
    if tangent is not None or linear is not None:
        params = ", ".join(str(p) for p in own) if params is None else params
        define(fn, params, tangent=tangent, linear=linear,
               namespace=fn.__globals__ if namespace is None else namespace)
    if adjoint is not None:
        helper_adjoint(fn, namespace=fn.__globals__ if namespace is None else namespace,
                       **adjoint)
    return fn


def helper_adjoint(fn, namespace=None, zero=(), params=None, **templates):
    """Declare the reverse rule of the runtime helper `fn`, which reverse mode needs
    where it differentiates code reverse mode generated (a gradient called in a function
    differentiated in reverse mode, `grad(grad(grad(f)))`): for each of its parameters
    that carries a derivative, a template written over `fn`'s own parameters, `ans` (its
    result) and `ans_bar` (the adjoint of its result; not `g`, the name of many helpers'
    first parameter, the adjoint they propagate). The parameters `shape_only` names
    (`HelperFacts`) and those `zero` names have a zero derivative; the others without a
    template must not be given a differentiated value. `params` spells `fn`'s signature
    where `inspect` cannot tell it (`def adjoint(g, *args)`). Declared beside the helper: in
    `@helper(adjoint=...)`, or in a statement after its `def`:

        helper_adjoint(unreduce, namespace=ns,
                       g="_s2s_rebroadcast(np.sum(ans_bar, axis, keepdims=keepdims), g)")

    The rule is made on the first lookup of any primitive (`primitive`), once every
    helper its templates call is declared."""
    zero = tuple(z.strip() for z in zero.split(",")) if isinstance(zero, str) else tuple(zero)
    _PENDING.append((fn, namespace, zero, params, templates))
    return fn


#: [(helper, namespace, zero, params, {param: template})]: the reverse rules of helpers declared
#: and not made yet (`_made_adjoints`).
_PENDING = []


def _made_adjoints():
    """Make the reverse rules of helpers declared since the last lookup."""
    while _PENDING:
        fn, namespace, zero, params, templates = _PENDING.pop(0)
        spec = _parse_params(params or ", ".join(
            str(p) for p in inspect.signature(fn).parameters.values()
            if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)))
        names = [n for n, _ in spec]
        facts = helper_facts(fn) or HelperFacts()
        zero += tuple(names[i] for i in facts.shape_only
                      if i < len(names) and names[i] not in templates)
        variant = _reverse(fn, spec, (), templates, dict(namespace or {}), False, False,
                           None, zero, cotangent="ans_bar")
        variant.declared_in = fn.__module__     # (made at a lookup: declared beside fn)
        record = _record(fn)
        _rule(record, "vjp").add(variant)
        record.nondiff = False
        if looked_up(fn):   # (else nothing compiled has read its record: no `bump`)
            bump()


def _libraries_as_found(module_name):
    """The module of s2sad's `module_name`, which defines runtime helpers, reads the
    libraries it imported through their snapshots (rules/snapshots.py), as templates do:
    a user's code that patches NumPy (`np.linalg.inv = ...`) changes no helper's result."""
    module = sys.modules.get(module_name)
    if module_name in _AS_FOUND or module is None or not module_name.startswith("s2sad."):
        return
    _AS_FOUND.add(module_name)
    for name, value in list(vars(module).items()):
        if isinstance(value, types.ModuleType):
            setattr(module, name, snapshots.of(value))


_AS_FOUND = set()


def _declare(fn, name, facts=None):
    """Register `fn` as the helper `_s2s_NAME`, with `facts` (its own, if declared before:
    a module's `helpers` meets the helpers `helper` declared)."""
    key = "_s2s_" + name
    if _pending is None:        # (else at the end of `loading`)
        _libraries_as_found(fn.__module__)
    else:
        _pending_modules.add(fn.__module__)
    if HELPERS.get(key, fn) is not fn:
        raise S2SADError(f"two runtime helpers are named {name!r}: "
                         f"{HELPERS[key].__module__}'s and {fn.__module__}'s")
    HELPERS[key] = fn
    if facts is not None:
        HELPER_FACTS[key] = facts
    else:
        HELPER_FACTS.setdefault(key, HelperFacts())


def helper_facts(fn):
    """The `HelperFacts` of the runtime helper `fn` (the object, or its name in generated
    code, `_s2s_NAME`), or None if it is no runtime helper."""
    if isinstance(fn, str):
        return HELPER_FACTS.get(fn)
    key = "_s2s_" + str(getattr(fn, "__name__", ""))
    return HELPER_FACTS.get(key) if HELPERS.get(key) is fn and fn is not None else None


#: While s2sad's rule modules load (`loading`), the templates that call a runtime helper
#: not declared yet, [(Template, name)]: a rule stands beside its helper, and may call a
#: helper of a module imported after it (`arrays.asarray`'s adjoint, `pytrees.from_array`),
#: or defined further down its own; `loading` finds them all when the modules are loaded.
_pending = None
#: While they load, the modules that declared runtime helpers: once loaded, they read the
#: libraries as found (`_libraries_as_found`; their own statements may read a submodule
#: that a statement after the first helper's imports, `np.random`).
_pending_modules = set()


class Template:
    """A parsed derivative expression and the objects its free names denote."""

    def __init__(self, source, params, namespace, cotangent="g"):
        self.source = source
        self.tree = gast.parse(source, mode="eval").body
        bound = set(params) | {cotangent, "ans", "where"}     # (where: the call's line)
        self.free = {}
        for n in gast.walk(self.tree):
            if isinstance(n, gast.Name) and n.id not in bound:
                found = snapshots.of(namespace.get(n.id, HELPERS.get(n.id)))
                if found is None and _pending is not None and n.id.startswith("_s2s_"):
                    _pending.append((self, n.id))
                    continue
                if found is None:
                    raise _unknown(source, n.id, cotangent)
                self.free[n.id] = found

    def renamed(self, old, new):
        out = copy.copy(self)
        out.tree = copy.deepcopy(self.tree)
        for n in gast.walk(out.tree):
            if isinstance(n, gast.Name) and n.id == old:
                n.id = new
        return out


def _unknown(source, name, cotangent="g"):
    return S2SADError(f"rule template {source!r} uses {name!r}, which is neither a "
                      f"parameter, {cotangent!r}, 'ans', a runtime helper (_s2s_NAME) nor "
                      "in its namespace")


@contextlib.contextmanager
def loading():
    """`with loading():` around the imports of s2sad's rule modules (rules/__init__.py, an
    optional library's rules): their templates may call runtime helpers declared later
    in the block, each found at its end (an S2SADError names one declared nowhere)."""
    global _pending
    if _pending is not None:        # (within another: that one finds them)
        yield
        return
    _pending = []
    try:
        yield
        waiting = _pending
    finally:
        _pending = None
    for module_name in sorted(_pending_modules):
        _libraries_as_found(module_name)
    _pending_modules.clear()
    for template, name in waiting:
        if name not in HELPERS:
            raise _unknown(template.source, name)
        template.free[name] = HELPERS[name]


def _declaring_module():
    """The name of the module whose statement declares a rule (the first caller outside
    this module): `Variant.declared_in`."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__") == __name__:
        frame = frame.f_back
    return None if frame is None else frame.f_globals.get("__name__")


class Variant:
    """One signature of a primitive and the templates of its parameters."""

    def __init__(self, params, templates, broadcast, elementwise=False, uniform=None,
                 linear=None, zero=(), cotangent="g"):
        #: The module whose statement declared it (`_declaring_module`; a runtime helper's
        #: rules stand beside the helper, in its module: tests/test_helper_facts.py).
        self.declared_in = None
        self.params = params              # [(name, default or REQUIRED)]
        #: The name the reverse templates give the adjoint of the result: "g", or
        #: "ans_bar" in a helper's (`adjoint`), whose first parameter is often `g`.
        self.cotangent = cotangent
        #: How many of them a call may pass by position (those after a `*` in the
        #: signature are keyword-only: `np.einsum`'s `optimize`).
        self.positional = getattr(params, "positional", len(params))
        self.templates = templates        # {name: Template}
        #: Parameters whose derivative is zero although a differentiated value may be
        #: passed: they give only a shape or dtype (`np.full_like`'s `a`), or a choice
        #: that is piecewise constant (`np.where`'s `condition`). A differentiated value
        #: passed for any other parameter without a template is refused
        #: (before_ad/lost_derivatives.py).
        self.zero = frozenset(zero)
        self.broadcast = broadcast
        self.elementwise = elementwise or broadcast
        self.uniform = uniform            # Template of a full reduction's adjoint, or None
        self.linear = linear              # forward: the groups of parameters it is linear in

    def bind(self, args, keywords):
        """{param: argument node} for a call, or None if the call does not fit."""
        names = [p for p, _ in self.params]
        if len(args) > self.positional or any(k not in names for k in keywords):
            return None
        bound = dict(zip(names, args))
        for k, v in keywords.items():
            if k in bound:
                return None
            bound[k] = v
        for name, default in self.params:
            if name not in bound:
                if default is REQUIRED:
                    return None
                bound[name] = gast.Constant(value=default, kind=None)
        return bound


class Rule:
    """The reverse or the forward rule of one primitive: its variants, tried in order."""

    def __init__(self, record):
        self.record = record
        self.prim = record.prim
        self.variants = []
        self.each = None

    @property
    def nondiff(self):
        """Its record's `nondiff`, for readers that hold the rule."""
        return self.record.nondiff

    def match(self, args, keywords):
        """(Variant, binding) for a call, or (None, None)."""
        for variant in self.variants:
            bound = variant.bind(args, keywords)
            if bound is not None:
                return variant, bound
        if self.each is not None and not keywords:
            param, template, broadcast = self.each
            names = [f"{param}{i}" for i in range(len(args))]
            variant = Variant([(n, REQUIRED) for n in names],
                              {n: template.renamed(param, n) for n in names}, broadcast, True)
            return variant, dict(zip(names, args))
        return None, None

    def add(self, variant):
        """Add `variant`, in place of one with the same parameter names."""
        names = [p for p, _ in variant.params]
        self.variants = [v for v in self.variants if [p for p, _ in v.params] != names]
        self.variants.append(variant)


@dataclasses.dataclass(eq=False)
class Primitive:
    """Everything s2sad knows about one primitive."""
    prim: object
    vjp: Rule = None            # the reverse rule, or None
    jvp: Rule = None            # the forward rule, or None (elementwise: from `vjp`)
    nondiff: bool = False       # its result never carries a derivative
    #: What it returns: "scalar", "array", "container", "scalars" (a container of
    #: scalars, such as a shape), "args" (the kind of its arguments, as arithmetic does)
    #: or "first" (the kind of its first argument); None if unknown.
    returns: str = None
    #: (keyword, kind): what it returns instead when the keyword is given as True
    #: (`np.linspace(..., retstep=True)`: ("retstep", "container")), or None.
    returns_if: tuple = None
    #: The parameters whose memory its result may share (a NumPy view: `np.reshape`'s
    #: ("a",)); with `returns="container"`, a container of views (`np.split`). Empty: its
    #: result is new memory, of its own.
    view: tuple = ()
    #: With `returns="container"`: the position of the argument saying where it cuts the
    #: array (`np.split`'s 1), whose views share no memory when the cuts are in order.
    disjoint: int = None
    #: (keyword, default): the keyword that makes the result a copy when true, and its
    #: value when not given (`x.astype(float, copy=False)` is `x` itself when `x` is float
    #: already: ("copy", True)), or None.
    copies: tuple = None
    #: It reduces its first argument `a` along `axis` (keeping them with `keepdims`):
    #: its result has shape () when it reduces a whole array (no axis given).
    reduction: bool = False
    #: The parameter whose shape its result has, in every call the rules cover
    #: (`np.roll(a, shift)`: "a"), or None.
    shaped: str = None
    floats: bool = False        # it gives a float for numbers (`math.sin`)
    #: The position of the argument it writes into (`np.copyto(dst, src)`: 0), or None.
    writes: int = None
    methods: tuple = ()         # the array methods that mean it: `x.sum()`
    attributes: tuple = ()      # the array attributes that mean it: `x.T`
    #: Its batching rule (`batching`), or None: elementwise primitives and reductions
    #: batch without one (ad/batching.py).
    batch: "BatchRule" = None
    #: What it does with complex values (before_ad/complex_values.py): None, its rules
    #: are for real values only; True, they hold for complex values too (holomorphic
    #: templates, under the convention of docs/complex.md); `complex_numbers.FROM_REAL`,
    #: they hold and its arguments are real (`np.fft.rfft`); or the primitive that takes
    #: its place where a complex value reaches it (`np.abs`: `complex_numbers.abs_`).
    complex: object = None


#: The records, {prim: Primitive}.
PRIMITIVES = {}
#: Array methods and attributes, by name: `x.sum(...)` means `METHODS["sum"](x, ...)`.
METHODS = {}
ATTRIBUTES = {}


#: [(modules, loader)]: the rule modules of optional libraries, each loaded the first
#: time a lookup misses after the user's code has imported one of its modules (see
#: `optional`).
_OPTIONAL = []


def optional(modules, loader):
    """Register `loader`, which imports the rules of the functions of `modules` (module
    names: `("scipy.linalg", "scipy.special")`), to run on the first lookup that misses
    once one of them is imported: `import s2sad` does not import SciPy, whose import
    takes a second, and neither does a process that imported only `scipy` itself (as
    Numba does)."""
    _OPTIONAL.append((modules, loader))


def load_optional():
    """Load the rules of every optional library the process has imported. They change
    nothing compiled (no `bump`: the caches keyed by `version` keep their code) unless
    they touch the record of a primitive looked up before (found or not), or what a
    method or attribute's name means."""
    global _touched
    for entry in [e for e in _OPTIONAL if any(sys.modules.get(m) is not None
                                              for m in e[0])]:
        _OPTIONAL.remove(entry)
        names, _touched = (dict(METHODS), dict(ATTRIBUTES)), set()
        try:
            with loading():
                entry[1]()
        finally:
            touched, _touched = _touched, None
        if any(map(looked_up, touched)) or names != (METHODS, ATTRIBUTES):
            bump()


_touched = None     # (while optional rules load: the primitives whose records they touch)
_LOOKED_UP = set()  # (the ids of the primitives looked up: `looked_up`)


def writes_nothing(prim):
    """Whether `prim` is a primitive s2sad knows that writes into none of its arguments
    (so a call of it changes no value: it may move, or repeat, without a difference)."""
    record = primitive(prim)
    return record is not None and record.writes is None


def viewed(record, args, keywords):
    """The arguments of a call of `record`'s primitive (the nodes `args`, and `keywords`
    by name) whose memory its result may share: those its `view` names, or every one when
    no signature of its rules binds the call; none when the call copies (`copies`: the
    keyword, given or by default, a true constant)."""
    if record is None or not record.view:
        return []
    given = list(args) + list(keywords.values())
    bound = next((b for rule in (record.vjp, record.jvp) if rule is not None
                  for b in (v.bind(args, keywords) for v in rule.variants) if b is not None),
                 None)
    if bound is None:
        return given
    if record.copies is not None:
        key, default = record.copies
        value = bound.get(key, keywords.get(key))
        copied = default if value is None else getattr(value, "value", None) \
            if isinstance(value, gast.Constant) else None
        if copied:
            return []
    return [bound[p] for p in record.view if any(bound.get(p) is a for a in given)]


def primitive(prim):
    """The record of `prim`, or None (also for an unhashable object). A dataclass or
    named tuple class, or a plain class, has one made on first use (rules/constructors.py)."""
    if _PENDING:
        _made_adjoints()
    try:
        record = PRIMITIVES.get(prim)
    except TypeError:
        return None
    _LOOKED_UP.add(id(prim))
    if record is None and _OPTIONAL:
        load_optional()
        record = PRIMITIVES.get(prim)
    if record is None and isinstance(prim, type) and _constructor is not None:
        record = _constructor(prim)
    return record


def constructed_by(maker):
    """Make the record of a class's constructor on its first lookup by `maker(cls)` (the
    record, or None): rules/constructors.py's, which defines rules (so imports this)."""
    global _constructor
    _constructor = maker


_constructor = None


def looked_up(prim):
    """Whether `prim` has been looked up (`primitive`): a rule made for it now may change
    what was compiled; one made for a primitive never looked up changes nothing. (By id:
    an id reused by a later object only bumps the version once more.)"""
    return id(prim) in _LOOKED_UP


def lookup(prim):
    """The reverse rule of `prim` (its record's `vjp`), or None."""
    return getattr(primitive(prim), "vjp", None)


def define(prim, params=None, *adjoints, namespace=None, broadcast=False, elementwise=False,
           uniform=None, tangent=None, linear=None, nondiff=False, returns=None, view=(),
           copies=None, reduction=False, shaped=None, floats=False, writes=None, zero=(),
           method=(), attribute=(), quiet=False, complex=None, returns_if=None, disjoint=None,
           **by_name):
    """Declare what s2sad knows about `prim` in one statement; returns `prim`.

    `params` ("x, axis=None, ...") is the signature of the variant the rules are for
    (parameters after a `*` are keyword-only, as in Python).
    Adjoint templates, by position (None for no derivative) or by parameter name, give
    its reverse rule (see `vjp` for `broadcast`, `elementwise` and `uniform`). Its forward
    rule is `tangent`, templates over `t` (one string for the first parameter, a tuple
    by position, or a dict by name; `()` for a constant), or `linear`, the groups of
    parameters it is linear in ("a" or "a, v" for one group, ("a", "b") for two: see
    `linear`). A primitive with several signatures takes one statement per signature.
    `zero` names the parameters without templates whose derivative is zero although a
    differentiated value may be passed (see `Variant.zero`). The other keywords fill in
    its record (see `Primitive`): `method` and `attribute` are names (a string or a
    tuple of them) that `METHODS` and `ATTRIBUTES` map to it; `view` names the
    parameters whose memory the result may share ("a", or "x0, x1"); `writes` is the
    position of the argument the primitive writes into; `complex`, what it does with
    complex values. `quiet` leaves compiled derivatives alone (for a rule made on first
    use)."""
    if tangent is not None and linear is not None:
        raise S2SADError(f"{prim!r}: a forward rule is either templates or linear groups")
    spec = None if params is None else _parse_params(params)
    if spec is None and (adjoints or by_name or uniform is not None or tangent is not None
                         or linear is not None):
        raise S2SADError(f"rules for {prim!r} need its parameters")
    ns = dict(namespace or {})
    reverse = forward = None
    if adjoints or by_name or uniform is not None:
        reverse = _reverse(prim, spec, adjoints, by_name, ns, broadcast, elementwise, uniform,
                           zero)
    if isinstance(tangent, dict):
        forward = _forward(prim, spec, (), tangent, ns)
    elif tangent is not None:
        positional = (tangent,) if isinstance(tangent, str) else tuple(tangent)
        forward = _forward(prim, spec, positional, {}, ns)
    elif linear is not None:
        forward = _linear(spec, (linear,) if isinstance(linear, str) else tuple(linear))
    record = _record(prim)
    if reverse is not None:
        _rule(record, "vjp").add(reverse)
        record.nondiff = False
    if forward is not None:
        _rule(record, "jvp").add(forward)
    if nondiff:
        _rule(record, "vjp")
        record.nondiff = True
    if returns is not None:
        record.returns = returns
    if view:
        record.view = tuple(dict.fromkeys(record.view + _names(view, split=True)))
    if copies is not None:
        record.copies = copies
    record.disjoint = record.disjoint if disjoint is None else disjoint
    if returns_if is not None:
        record.returns_if = returns_if
    record.reduction |= reduction
    if shaped is not None:
        record.shaped = shaped
    record.floats |= floats
    if writes is not None:
        record.writes = writes
    if complex is not None:
        record.complex = complex
    for name in _names(method):
        record.methods = _spelled(METHODS, name, record, "methods")
    for name in _names(attribute):
        record.attributes = _spelled(ATTRIBUTES, name, record, "attributes")
    if not quiet:      # (a rule made on first use changes nothing compiled)
        bump()
    return prim


def vjp(prim, params, *templates, namespace=None, broadcast=False, elementwise=False,
        uniform=None, **by_name):
    """Register reverse rules for `prim` called with `params` ("x, axis=None, ..."):
    templates by position (None for no derivative) or by parameter name. `elementwise`
    says the result has the shape of the arguments, element by element. `uniform` is
    for reductions: the value, the same for every element, of the first parameter's
    adjoint when the call reduces its array to a scalar (`"g"` for a sum). Generated
    code then keeps that adjoint a scalar for as long as the arrays it meets are
    elementwise operations of the same shape. A parameter whose template is None has
    a zero derivative (ChainRules' NoTangent): a differentiated value may be passed
    there, and gets none (this is the rule `s2sad.defvjp` writes)."""
    spec = _parse_params(params)
    given = dict(zip([n for n, _ in spec], templates), **by_name)
    zero = [n for n, t in given.items() if t is None]
    variant = _reverse(prim, spec, templates, by_name, dict(namespace or {}), broadcast,
                       elementwise, uniform, zero)
    record = _record(prim)
    _rule(record, "vjp").add(variant)
    record.nondiff = False
    bump()
    return prim


def vjp_each(prim, param, template, namespace=None, broadcast=False):
    """Register one template for every positional argument of a variadic `prim`, used
    when no fixed signature matches; `param` names the argument in `template`."""
    each = (param, Template(template, [param], dict(namespace or {})), broadcast)
    _rule(_record(prim), "vjp").each = each
    bump()
    return prim


def nondiff(prim):
    """Declare `prim` non-differentiable: its result never carries a derivative."""
    return define(prim, nondiff=True)


def jvp(prim, params, *templates, namespace=None, **by_name):
    """Register forward rules for `prim` called with `params`: templates by position or
    parameter name, written over the parameter names, `t` (the tangent of that
    parameter) and `ans` (the result). The engine sums the contributions of the
    arguments that carry a tangent; a parameter without a template contributes none."""
    variant = _forward(prim, _parse_params(params), templates, by_name, dict(namespace or {}))
    _rule(_record(prim), "jvp").add(variant)
    bump()
    return prim


def linear(prim, params, *groups):
    """Register the forward rule of `prim`, linear in each group of parameters ("a, v"):
    the tangent is `prim` called with the tangents of a group in place of its arguments
    (zeros for those without), summed over the groups. `np.dot` is linear in "a" and in
    "b" (two groups); `setitem(a, index, v)` in "a, v" jointly (one group)."""
    variant = _linear(_parse_params(params), groups)
    _rule(_record(prim), "jvp").add(variant)
    bump()
    return prim


@dataclasses.dataclass
class BatchRule:
    """How a primitive applies when some of its arguments carry a batch axis (`vmap`):
    `template`, written over the parameters (each batched one with its batch axis first)
    and `PARAM_axis` (0 for a batched argument, None for another), gives the result with
    its batch axis first; with `unbatched`, the result carries no batch axis (`len`, a
    shape)."""
    variant: Variant
    template: Template
    unbatched: bool = False


def batching(prim, params, template, namespace=None, unbatched=False):
    """Register the batching rule of `prim` called with `params` (see `BatchRule`):
    `batching(np.dot, "a, b", "_s2s_batch_dot(a, a_axis, b, b_axis)")`."""
    spec = _parse_params(params)
    free = [n for n, _ in spec] + [f"{n}_axis" for n, _ in spec]
    _record(prim).batch = BatchRule(Variant(spec, {}, False), Template(
        template, free, dict(namespace or {})), unbatched)
    bump()
    return prim


def bump():
    """Invalidate every compiled derivative (a rule changed elsewhere)."""
    global version
    if _touched is not None:        # (optional rules loading: `load_optional` decides)
        return
    version += 1
    for listener in _listeners:
        listener()


def on_change(listener):
    """Call `listener()` whenever a rule changes."""
    _listeners.append(listener)


# -- building records -------------------------------------------------------------------
def _record(prim):
    if _touched is not None:
        _touched.add(prim)
    record = PRIMITIVES.get(prim)
    if record is None:
        record = PRIMITIVES[prim] = Primitive(prim)
    return record


def _rule(record, field):
    """The record's rule `field` ("vjp" or "jvp"), created if it has none."""
    if getattr(record, field) is None:
        setattr(record, field, Rule(record))
    return getattr(record, field)


class _Params(list):
    """A signature, [(name, default or REQUIRED)], and how many come before a `*`."""
    positional = None


def _parse_params(params):
    out = _Params()
    for part in (p.strip() for p in _top_level(params)):
        if not part:
            continue
        if part == "*":
            out.positional = len(out)
            continue
        name, eq, default = part.partition("=")
        out.append((name.strip(), eval(default, {}) if eq else REQUIRED))
    if out.positional is None:
        out.positional = len(out)
    return out


def _top_level(params):
    """The parts of `params` between its commas outside brackets (a default may be a
    tuple: "a, axes=(-2, -1)")."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(params):
        depth += (c in "([{") - (c in ")]}")
        if c == "," and depth == 0:
            parts.append(params[start:i])
            start = i + 1
    return parts + [params[start:]]


def _reverse(prim, spec, templates, by_name, ns, broadcast, elementwise, uniform, zero=(),
             cotangent="g"):
    names = [n for n, _ in spec]
    if len(templates) > len(names) or any(k not in names for k in by_name):
        raise S2SADError(f"templates do not match the parameters {names} of {prim!r}")
    given = dict(zip(names, templates))
    given.update(by_name)
    compiled = {n: Template(t, names, ns, cotangent) for n, t in given.items()
                if t is not None}
    uniform = None if uniform is None else Template(uniform, names, ns)
    zero = tuple(z.strip() for z in zero.split(",")) if isinstance(zero, str) else zero
    if any(z not in names or z in compiled for z in zero):
        raise S2SADError(f"zero={zero} must name parameters of {prim!r} without templates")
    return _declared(Variant(spec, compiled, broadcast, elementwise, uniform, zero=zero,
                             cotangent=cotangent))


def _forward(prim, spec, templates, by_name, ns):
    names = [n for n, _ in spec]
    if len(templates) > len(names) or any(k not in names for k in by_name) or "t" in names:
        raise S2SADError(f"tangent templates do not match the parameters {names} of "
                         f"{prim!r} (a parameter must not be called 't', the tangent)")
    given = dict(zip(names, templates))
    given.update(by_name)
    compiled = {n: Template(t, names + ["t"], ns) for n, t in given.items() if t is not None}
    return _declared(Variant(spec, compiled, False, linear=[]))


def _linear(spec, groups):
    names = [n for n, _ in spec]
    groups = [[p.strip() for p in g.split(",")] for g in groups]
    if any(p not in names for g in groups for p in g):
        raise S2SADError(f"linear groups {groups} do not match the parameters {names}")
    return _declared(Variant(spec, {}, False, linear=groups))


def _declared(variant):
    variant.declared_in = _declaring_module()
    return variant


def _names(spelling, split=False):
    if isinstance(spelling, str):
        return tuple(n.strip() for n in spelling.split(",")) if split else (spelling,)
    return tuple(spelling or ())


def _spelled(table, name, record, field):
    """`record`'s names in `field` once `table[name]` means its primitive."""
    old = primitive(table.get(name))
    if old is not None and old is not record:
        setattr(old, field, tuple(n for n in getattr(old, field) if n != name))
    table[name] = record.prim
    names = getattr(record, field)
    return names if name in names else names + (name,)


# -- views ------------------------------------------------------------------------------
class _Rules:
    """{prim: Rule}, a read-only view of the records' reverse (`vjp`) or forward (`jvp`)
    rules; `pop` removes one (a test that registered a rule for itself)."""

    def __init__(self, field):
        self.field = field

    def get(self, prim, default=None):
        rule = getattr(primitive(prim), self.field, None)
        return default if rule is None else rule

    def __getitem__(self, prim):
        rule = self.get(prim)
        if rule is None:
            raise KeyError(prim)
        return rule

    def __contains__(self, prim):
        return self.get(prim) is not None

    def __iter__(self):
        return iter([p for p, r in PRIMITIVES.items() if getattr(r, self.field) is not None])

    def __len__(self):
        return len(list(iter(self)))

    def items(self):
        return [(p, getattr(PRIMITIVES[p], self.field)) for p in self]

    def pop(self, prim):
        rule = self[prim]
        setattr(PRIMITIVES[prim], self.field, None)
        if self.field == "vjp":
            PRIMITIVES[prim].nondiff = False
        return rule


#: The reverse and the forward rules, by primitive: views of the records.
RULES = _Rules("vjp")
JVPS = _Rules("jvp")
