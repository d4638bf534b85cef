"""Kind analysis: which names are certainly scalars, arrays, or containers.

Adjoints of broadcasting operations must be summed back to their argument's shape. The
engine emits that only where it may be needed: two scalars never broadcast, nor does an
array with a scalar. The kinds of the parameters come from the arguments of the call
the derivative is compiled for (the generated code checks them, like JAX specialises on
shapes); everything else follows from the code, and what a call of a function of the
user's returns from that function's code for the call's argument kinds (`returns`).
SCALAR means "has shape ()": Python numbers, and NumPy results of full reductions.

Beside the kinds, the analysis knows which names are certainly ints (a `range`
counter, `len(...)`, sums of ints) and how many axes some arrays have: those NumPy
allocates from a shape (`np.zeros(n)`, `np.ones((n, m))`), their copies and element
writes, arithmetic on them, basic indexes of them, and array arguments whose shape
patterns a guard tests. So an index of a `u = np.zeros(n)` by an int, `u[i]`, is a
number, and its adjoint is no array summed back to a shape.

>>> import numpy as np
>>> from s2sad import pipeline
>>> from s2sad.frontend.source import function_from_source
>>> f = function_from_source('''
... def f(x):
...     u = np.zeros(len(x))
...     a = u[0]
...     b = u[:, None][1]
...     return a + np.sum(b)
... ''', {"np": np})
>>> ctx, _ = pipeline.compilation(f, arg_types={"x": np.ndarray}, until="wengert")
>>> kinds = ctx.value_kinds
>>> [(n, kinds.kind[n], kinds.ndim[n]) for n in ("u", "a", "b")]
[('u', 'array', 1), ('a', 'scalar', 0), ('b', 'array', 1)]

What a function of the user's returns, for the kinds of the call's arguments; the items
of a tuple it returns too (`t = two(x)`, `a = t[0]`, `s = t[1]` in Wengert form):

>>> two = function_from_source('''
... def two(v):
...     return v * 2.0, np.sum(v)
... ''', {"np": np})
>>> g = function_from_source('''
... def g(x):
...     a, s = two(x)
...     return np.sum(a * s)
... ''', {"np": np, "two": two})
>>> ctx, _ = pipeline.compilation(g, arg_types={"x": np.ndarray}, until="wengert")
>>> kinds = ctx.value_kinds
>>> [(n, kinds.kind[n]) for n in ("t", "a", "s")], kinds.items["t"]
([('t', 'container'), ('a', 'array'), ('s', 'scalar')], ('array', 'scalar'))
"""
import collections
import inspect
import numbers

import gast
import numpy as np

from .. import marks, syntax
from ..frontend.source import MISSING
from ..frontend import structure
from ..frontend.structure import user_class
from ..rules import registry

SCALAR, ARRAY, CONTAINER, UNKNOWN = "scalar", "array", "container", "unknown"
SCALARS = "scalars"     # a container of scalars, such as an array's shape
# An instance of a class of the user's (see `user_class`) has that class as its kind: its
# methods are found through it (before_ad/resolve_calls.py).


def items_key(p):
    """The key of a derivative's argument types under which it is specialised on the
    kinds of the items of the tuple its parameter `p` holds: a call of a function of the
    user's passes a tuple whose items its caller knows (a display, what a function
    returns), and the callee's version knows them too."""
    return p + "[:]"


def join(a, b):
    if a is None:
        return b
    return a if a == b or b is None else UNKNOWN


def combine(kinds):
    """The kind of an arithmetic result over operands of `kinds`."""
    kinds = [k for k in kinds if k is not None]
    if ARRAY in kinds:
        return ARRAY
    if kinds and all(k == SCALAR for k in kinds):
        return SCALAR
    return UNKNOWN


def guarded(params, types):
    """The names in `types` ({parameter or "p.field": type}) whose types specialised code
    checks, in order: the parameters `params`, then their fields."""
    fields = sorted(k for k in types if k not in params and k.split(".")[0] in params
                    and not structure.structural(k))
    return [p for p in params if p in types] + fields


class ValueKinds:
    """The kinds of the names of `fn`; `params`, {parameter: kind} of the arguments the
    code is specialised on; `ndims`, {parameter: number of axes} of the array arguments
    whose shape patterns a guard may test: the parameters whose number of axes the
    analysis reads are added to the set `relied`, for the guard to test; `ints`, the
    parameters specialised on `int`; `returns(call, kinds, fn)`, (the kind of what a call
    of a Python function (`fn`, a method's found on its object's class, or None) returns
    when its arguments have the kinds `kinds`, the kinds of its items if it is a tuple,
    else False) (see Compilation.returned_kind; without it,
    UNKNOWN).

    Beside the kind of each name, `items` has the kinds of the items of the tuples some
    hold ({name: kinds}): a tuple display's, a copy's, or what a Python function returns
    (`u, v = two(x)` reads `t = two(x)`, `u = t[0]`), and those of the tuple parameters
    whose caller knew them (`param_items`, see `items_key`); a tuple's items do not
    change."""

    def __init__(self, fn, src, params=None, ndims=None, relied=None, ints=(), returns=None,
                 structure=None, param_items=None):
        self.src = src
        self._node = fn
        self.structure = structure or {}
        self._returns = returns
        self._calls = {}        # {(id(function), its arguments' kinds): what it returns}
        self._found = {}        # {id(call): what `_returned` found}
        self.items = dict(param_items or {})
        self._ndims = ndims or {}
        self._relied = relied if relied is not None else set()
        self.kind = {a.id: UNKNOWN for a in fn.args.args + fn.args.posonlyargs
                     + fn.args.kwonlyargs}
        self.kind.update(params or {})
        # in source order: a kind is joined from its definitions round by round, and
        # one found from an operand not yet known would be joined in too early (`a =
        # 0.5 * t` seen before the branches that define `t` took `a` for a number)
        statements = [fn, *syntax.in_order(fn.body, functions=True)]
        defs = [(n.targets[0].id, n.value) if isinstance(n, gast.Assign)
                else (n.target.id, _target_kind(n, src)) for n in statements
                if (isinstance(n, gast.Assign) and isinstance(n.targets[0], gast.Name))
                or (isinstance(n, gast.For) and isinstance(n.target, gast.Name))]
        # Wengert form's `j = None` for a name a path has not bound (marks.INIT), which
        # the user's code never reads on that path: no fact of the name (a loop counter
        # copied out of a loop that may run no iteration stays an int)
        unbound = {id(n.value) for n in statements if isinstance(n, gast.Assign)
                   and marks.INIT.of(n) and isinstance(n.value, gast.Constant)
                   and n.value.value is None}
        self.assigned = {t for t, _ in defs}
        self.local = self.assigned | set(self.kind)
        self.params = set(self.kind) - self.assigned
        self.paths = {}     # {name: the expression of a parameter or global it is}
        made = collections.Counter(t for t, _ in defs)
        # {name: the tuple display it is bound to, once}
        self._displays = {t: v for t, v in defs if made[t] == 1 and isinstance(v, gast.Tuple)}
        for target, value in defs:
            path = self.path(value) if made[target] == 1 else None
            if path is not None:
                self.paths[target] = path
        # the number of axes of arrays NumPy allocates here, and of what is computed from
        # them, and which names are certainly ints: so that `u[i]` of a `u = np.zeros(n)`
        # is a number (None while unknown yet: a round after may know it)
        self.ndim = {p: (0 if k == SCALAR else self._ndims.get(p, _ANY))
                     for p, k in self.kind.items()}
        self.ints = {p: p in ints for p in self.kind}
        self._settled = False
        self._from = {}     # {name: the parameters its number of axes follows from}
        for self._settled in (False, True):
            if self._settled and None not in self.ndim.values() \
                    and None not in self.ints.values() \
                    and all(self.kind.get(t) is not None for t, _ in defs):
                break       # (nothing is left unknown: the rounds would change nothing)
            changed = True
            while changed:
                changed = False
                for target, value in defs:
                    if id(value) in unbound:
                        continue
                    k = join(self.kind.get(target), self.of(value))
                    if k != self.kind.get(target):
                        self.kind[target] = k
                        changed = True
                    items = _join_items(self.items.get(target), self._items(value))
                    if items != self.items.get(target):
                        self.items[target] = items
                        changed = True
                    if k is None:
                        continue
                    self._reading = set()
                    d = self._ndim(value) if k == ARRAY else 0 if k == SCALAR else _ANY
                    if not self._reading <= self._from.get(target, set()):
                        self._from[target] = self._from.get(target, set()) | self._reading
                        changed = True
                    d = _join_known(self.ndim.get(target), d)
                    i = _join_known(self.ints.get(target),
                                    self.is_int(value) if k == SCALAR else False)
                    if d != self.ndim.get(target) or i != self.ints.get(target):
                        self.ndim[target], self.ints[target] = d, i
                        changed = True

    def ndim_of(self, e):
        """The number of axes of the array `e` computes (see `_ndim`). When it is 0 (an
        element of an array, a number), the parameters whose numbers of axes it follows
        from are added to `relied`, for the guard to test."""
        self._reading = set()
        ndim = self._ndim(e)
        if ndim == 0:
            self._relied.update(self._reading)
        return ndim

    def _ndim(self, e):
        """The number of axes of the array `e` computes: known for arrays NumPy
        allocates with a shape of ints (`np.zeros(n)`, `np.ones((n, m))`), their
        element writes, copies, `*_like` allocations, elementwise arithmetic on them and
        basic indexes of them; else `_ANY` (None while a name is not known yet)."""
        if isinstance(e, str):
            return 0 if e == SCALAR else _ANY
        if isinstance(e, gast.Constant):
            return 0 if isinstance(e.value, (int, float, bool)) else _ANY
        if isinstance(e, gast.Name):
            if e.id in self.local:
                if self.kind.get(e.id) == SCALAR:
                    return 0
                if e.id in self._ndims:
                    self._reading.add(e.id)
                self._reading.update(self._from.get(e.id, ()))
                return self._known(self.ndim.get(e.id), _ANY)
            return _ANY
        if isinstance(e, gast.BinOp) and not isinstance(e.op, gast.MatMult):
            return _widest([self._ndim(e.left), self._ndim(e.right)])
        if isinstance(e, gast.UnaryOp):
            return self._ndim(e.operand)
        if isinstance(e, gast.Subscript):
            return self._indexed(self._ndim(e.value), e.slice)
        if not isinstance(e, gast.Call):
            return _ANY
        if (isinstance(e.func, gast.Attribute) and e.func.attr == "copy" and not e.args
                and not e.keywords and self.of(e.func.value) == ARRAY):
            return self._ndim(e.func.value)         # `a.copy()`
        if (isinstance(e.func, gast.Attribute) and e.func.attr == "reshape" and e.args
                and not e.keywords and self.of(e.func.value) == ARRAY):
            return len(e.args) if len(e.args) > 1 else self._length(e.args[0])
        prim = marks.PRIM.of(e.func) or self.src.resolve(e.func)
        if getattr(type(prim), "__hash__", None) is None:
            prim = None                 # (a callable instance of a class with __eq__ only)
        keywords = {k.arg: k.value for k in e.keywords}
        try:
            if prim in _ALLOCATIONS:
                return self._length(e.args[0] if e.args else keywords["shape"])
            if prim is np.reshape and len(e.args) == 2 and not keywords:
                return self._length(e.args[1])
            if prim in _COPIES and not set(keywords) & {"shape", "ndmin"}:
                return self._ndim(e.args[0] if e.args else keywords["a"])
            if getattr(registry.primitive(prim), "returns", None) == "first":
                return self._ndim(e.args[0])      # an element write: the array written
        except (IndexError, KeyError):
            return _ANY
        if isinstance(prim, np.ufunc) and e.args and not e.keywords:
            return _widest([self._ndim(a) for a in e.args])
        if prim is np.concatenate and len(e.args) == 1 and set(keywords) <= {"axis"}:
            return self._joined(e.args[0])
        return _ANY

    def _joined(self, arrays):
        """The number of axes of `np.concatenate(arrays)`: that of each array of the tuple
        display `arrays` names, where they all have it; else `_ANY`."""
        display = self._displays.get(getattr(arrays, "id", None))
        if display is None or not display.elts or any(
                isinstance(a, gast.Starred) or self.of(a) != ARRAY for a in display.elts):
            return _ANY
        ndims = {self._ndim(a) for a in display.elts}
        if None in ndims:
            return None
        return ndims.pop() if len(ndims) == 1 and 0 not in ndims else _ANY

    def _length(self, shape):
        """The number of axes of an array of shape `shape`: the length of a tuple display
        or of a name's tuple of known items (`t = (n, 3)`, as Wengert form names it), 1
        for an int; else `_ANY` (None while not known yet)."""
        if isinstance(shape, gast.Tuple):
            starred = any(isinstance(e, gast.Starred) for e in shape.elts)
            return _ANY if starred else len(shape.elts)
        items = self._items(shape) if isinstance(shape, gast.Name) else False
        if items is None:
            return None
        if items is not False:
            return len(items)
        return 1 if self._known(self.is_int(shape), False) is True else _ANY

    def _indexed(self, ndim, index):
        """The number of axes of an index of an array of `ndim` axes by `index`: ints
        remove an axis, slices keep one, None adds one; else `_ANY`."""
        if ndim is None or ndim is _ANY:
            return ndim
        parts = index.elts if isinstance(index, gast.Tuple) else [index]
        out, used = ndim, 0
        for p in parts:
            if isinstance(p, gast.Constant) and p.value is None:
                out += 1
                continue
            used += 1
            if isinstance(p, gast.Slice):
                continue
            whole = self.is_int(p)
            if whole is not True:
                return None if whole is None and not self._settled else _ANY
            out -= 1
        return out if used <= ndim else _ANY

    def is_int(self, e):
        """Whether `e` is certainly an int (not a bool): an int constant, the counter of
        a `for` over `range`, `len(...)`, `int(...)`, and sums, differences, products,
        floor quotients and remainders of ints (None while a name is not known yet)."""
        if isinstance(e, str):
            return e == SCALAR      # (the counter of a for over range)
        if isinstance(e, gast.Constant):
            return type(e.value) is int
        if isinstance(e, gast.Name):
            if e.id in self.local:
                return self._known(self.ints.get(e.id), False)
            obj = self.src.resolve(e)
            return isinstance(obj, (int, np.integer)) and not isinstance(obj, bool)
        if isinstance(e, gast.BinOp) and isinstance(e.op, (gast.Add, gast.Sub, gast.Mult,
                                                           gast.FloorDiv, gast.Mod)):
            return _all_true([self.is_int(e.left), self.is_int(e.right)])
        if isinstance(e, gast.UnaryOp) and isinstance(e.op, (gast.USub, gast.UAdd)):
            return self.is_int(e.operand)
        if isinstance(e, gast.Call):
            prim = marks.PRIM.of(e.func) or self.src.resolve(e.func)
            return prim in (len, int) and len(e.args) == 1 and not e.keywords
        return False

    def _called_itself(self, call, fn):
        """(the kind of what the function returns, False) for `call`, a call of the
        function itself with arguments of the kinds (and numbers of axes, ints) of its
        parameters, where the code is specialised on them all: by induction on the depth
        of the recursion, it returns what its other returns give (None while not known
        yet); else None (see `_returned`)."""
        if (fn is MISSING or getattr(self.src, "fn", None) is None or fn is not self.src.fn
                or call.keywords or not self._node.body
                or not isinstance(self._node.body[-1], gast.Return)
                or not isinstance(self._node.body[-1].value, gast.Name)):
            return None
        params = [a.id for a in self._node.args.posonlyargs + self._node.args.args]
        if self._node.args.vararg or self._node.args.kwonlyargs or len(call.args) != len(
                params) or not all(p in self.params for p in params):
            return None
        for p, a in zip(params, call.args):
            kind = self.kind.get(p)
            if kind not in (SCALAR, ARRAY) or self.of(a) != kind:
                return None
            if kind == ARRAY and (self._ndims.get(p) is None
                                  or self._ndim(a) != self._ndims[p]):
                return None
            if kind == SCALAR and self.ints.get(p) != self._known(self.is_int(a), False):
                return None
        kind = self.kind.get(self._node.body[-1].value.id)
        return None if kind is None else (kind, False)

    def _returned(self, call, fn, method=False):
        """(the kind of what `call` of the Python function `fn` returns, the kinds of its
        items or False) (`returns`), None while the kind of an argument is not known yet;
        `method`: `call` is `obj.m(a)`, of `fn` found on `obj`'s class (`m(obj, a)`)."""
        if self._returns is None or fn is MISSING or call.keywords:
            return UNKNOWN, False
        args = [call.func.value, *call.args] if method else call.args
        kinds = tuple(self.of(a) for a in args)
        # (the numbers of axes of its array arguments, where known: the callee's own
        # code then knows them, if the caller's specialisation passes them on)
        reading, self._reading = getattr(self, "_reading", set()), set()
        ndims = tuple(self._ndim(a) if k == ARRAY else _ANY for a, k in zip(args, kinds))
        self._reading = reading
        if None in ndims:
            self._found[id(call)] = None
            return None
        ndims = tuple(d if isinstance(d, int) else None for d in ndims)
        key = (id(fn), kinds, ndims)
        if None not in kinds and key not in self._calls:
            self._calls[key] = self._returns(call, kinds, fn if method else None, ndims)
        self._found[id(call)] = self._calls.get(key)
        return self._found[id(call)]

    def _method_returned(self, call):
        """(what `_returned` finds) for `obj.m(a)`, `m` a function of the user's class of
        `obj` (as if called `m(obj, a)`: resolve_calls makes it so), or UNKNOWN."""
        receiver = call.func.value
        cls = self.of(receiver) if isinstance(receiver, gast.Name) else UNKNOWN
        if cls is None:         # (not known yet)
            return self._known(None, (UNKNOWN, False))
        if not (isinstance(cls, type) and user_class(cls)):
            return UNKNOWN, False
        try:
            fn = inspect.getattr_static(cls, call.func.attr)
        except AttributeError:
            return UNKNOWN, False
        if not inspect.isfunction(fn):
            return UNKNOWN, False
        return self._returned(call, fn, method=True)

    def _items(self, value):
        """The kinds of the items of the tuple `value` makes (None while not known yet),
        or False: not a tuple whose items are known."""
        if isinstance(value, gast.Tuple):
            return tuple(self.of(e) for e in value.elts)
        if isinstance(value, gast.Name):
            if value.id in self.assigned:
                return self.items.get(value.id)
            return self.items.get(value.id, False) if value.id in self.local else False
        if isinstance(value, gast.Call) and id(value) in self._found:
            found = self._found[id(value)]      # (`of` read the call first)
            return found and found[1]
        return False

    def items_of(self, atom):
        """The kinds of the items of the tuple the atom `atom` holds, or None when not
        all are known."""
        items = self._items(atom) if isinstance(atom, gast.Name) else False
        return items if items and all(isinstance(k, str) for k in items) else None

    def _item(self, name, index):
        """The kind of the item `index` of the tuple `name` holds, or False: not known."""
        items = (self.items.get(name) if name in self.assigned else
                 self.items.get(name, False) if name in self.local else False)
        if items is None:
            return self._known(None, UNKNOWN)
        if (items is False or not isinstance(index, gast.Constant)
                or type(index.value) is not int or not -len(items) <= index.value < len(items)):
            return False
        return items[index.value]

    def path(self, e):
        """The expression `e` reads from a parameter (or a global) never assigned here,
        through fields and constant indices (`"model.layers[0]"`), or None."""
        if isinstance(e, gast.Name):
            if e.id in self.params or not self.src.is_local(e.id):
                return e.id
            return self.paths.get(e.id)
        if isinstance(e, gast.Attribute) and isinstance(e.value, gast.Name):
            base = self.path(e.value)
            return None if base is None else f"{base}.{e.attr}"
        if (isinstance(e, gast.Subscript) and isinstance(e.value, gast.Name)
                and isinstance(e.slice, gast.Constant) and type(e.slice.value) is int):
            base = self.path(e.value)
            k = e.slice.value
            if base is not None and k < 0:      # (`layers[-1]`, of a list of known length)
                root = structure.steps(base)[0]
                known = self.structure if root in self.params else self.src.structure_of(root)
                n = known.get(f"len({base})")
                k = k + n if n is not None else -1
            return None if base is None or k < 0 else f"{base}[{k}]"
        return None

    def structure_at(self, e):
        """(the structure known of what the atom `e` reads, the expression it reads; see
        frontend/structure.py): of a parameter's, from the argument types, of a global's,
        from the object, which the derivative's guard then tests."""
        path = self.path(e)
        if path is None:
            return {}, None
        root = structure.steps(path)[0]
        found = self.structure if root in self.params else self.src.structure_of(root)
        return structure.rerooted(found, path, path), path

    def _known(self, value, otherwise):
        """`value`, or `otherwise` for a value not known yet once the rounds settle."""
        return otherwise if value is None and self._settled else value

    def __getitem__(self, atom):
        return self.of(atom)

    def of(self, e):
        if e is None or isinstance(e, str):
            return e or UNKNOWN
        if isinstance(e, gast.Constant):
            return SCALAR if isinstance(e.value, (int, float, bool)) else None
        if isinstance(e, gast.Name):
            if e.id in self.local or self.src.is_local(e.id):
                return self.kind.get(e.id)
            return _kind_of_object(self.src.resolve(e))
        if isinstance(e, gast.Attribute) and not _is_local_ref(e, self.src):
            return _kind_of_object(self.src.resolve(e))
        if isinstance(e, gast.BinOp):
            if isinstance(e.op, gast.MatMult):
                return ARRAY
            kinds = [self.of(e.left), self.of(e.right)]
            if isinstance(e.op, (gast.Add, gast.Mult)) and CONTAINER in kinds:
                return CONTAINER        # lists or tuples joined or repeated
            return combine(kinds)
        if isinstance(e, gast.UnaryOp):
            return combine([self.of(e.operand)])
        if isinstance(e, (gast.Tuple, gast.List, gast.Dict, gast.Set)):
            return CONTAINER
        if isinstance(e, gast.Call):
            prim = marks.PRIM.of(e.func) or self.src.resolve(e.func)
            if isinstance(prim, type) and user_class(prim):
                return prim         # an instance built here: `m = Model(3.0)`
            method = prim is MISSING and isinstance(e.func, gast.Attribute)
            if method:
                prim = registry.METHODS.get(e.func.attr, MISSING)
            record = registry.primitive(prim)
            state = getattr(marks.RECORD.of(prim), "state", None)
            if state is not None and len(state) == 1:   # a checkpointed loop's step
                return self.of(e.args[1])               # (its state, changed)
            if record is None and method:
                found = self._method_returned(e)
                return found and found[0]
            if record is None:
                found = self._called_itself(e, prim) or self._returned(e, prim)
                return found and found[0]
            if record.reduction:        # a full reduction has shape ()
                partial = any(k.arg in ("axis", "keepdims") for k in e.keywords) or (
                    len(e.args) > (0 if method else 1))
                return ARRAY if partial else SCALAR
            if record.returns_if is not None and any(
                    k.arg == record.returns_if[0] and isinstance(k.value, gast.Constant)
                    and k.value.value is True for k in e.keywords):
                return record.returns_if[1]         # `np.linspace(..., retstep=True)`
            if record.returns == "args":
                return combine([self.of(a) for a in e.args])
            if record.returns == "first":       # an element write: the array or list written
                return self.of(e.args[0]) if e.args else UNKNOWN
            if (isinstance(prim, np.ufunc) and e.args and not e.keywords
                    and all(self.of(a) == SCALAR for a in e.args)):
                return SCALAR       # a ufunc of numbers gives a NumPy scalar (shape ())
            return record.returns or UNKNOWN
        if isinstance(e, gast.Attribute):
            field = _field_key(e)
            if field in self.kind and e.value.id not in self.assigned:
                return self.kind[field]     # a field of a dataclass or named tuple argument
            path = self.path(e)
            if path is not None and path in self.structure:
                return _kind_of_class(self.structure[path])    # `model.layers`
            record = registry.primitive(registry.ATTRIBUTES.get(e.attr))
            return (record.returns if record else None) or UNKNOWN
        if isinstance(e, gast.Subscript):
            base = self.of(e.value)
            if base == CONTAINER and isinstance(e.slice, gast.Slice):
                return CONTAINER            # a slice of a list or tuple
            item = self._item(e.value.id, e.slice) if (
                base == CONTAINER and isinstance(e.value, gast.Name)) else False
            if item is not False:
                return item
            path = self.path(e)
            if path is not None and path in self.structure:
                return self.structure[path]     # an item of a list argument: `layers[0]`
            item = _outside_item(self.src, e)
            if item is not MISSING:
                return type(item)           # an item of a list outside: `layers[0]`
            if base == ARRAY:
                ndim = self.ndim_of(e)
                return None if ndim is None else SCALAR if ndim == 0 else ARRAY
            return {SCALARS: SCALAR}.get(base, UNKNOWN)
        if isinstance(e, gast.Compare):       # elementwise on arrays
            return combine([self.of(e.left)] + [self.of(c) for c in e.comparators])
        if isinstance(e, gast.BoolOp):
            return combine([self.of(v) for v in e.values])
        return SCALAR


_ANY = "any"        # a number of axes that is not known
#: NumPy's allocations by shape, and copies and allocations like an array
_ALLOCATIONS = {np.zeros, np.ones, np.empty, np.full}
_COPIES = {np.zeros_like, np.ones_like, np.empty_like, np.full_like, np.copy, np.array,
           np.asarray}


def _join_known(a, b):
    """The join of two facts of one name's definitions: None is not known yet."""
    if a is None:
        return b
    return a if b is None or a == b else _ANY


def _join_items(a, b):
    """The join of the items of two definitions of a name (see `ValueKinds._items`)."""
    if a is None or b is None:
        return b if a is None else a
    if a is False or b is False or len(a) != len(b):
        return False
    return tuple(join(x, y) for x, y in zip(a, b))


def _widest(ndims):
    """The number of axes of a broadcast of operands of `ndims`."""
    if _ANY in ndims:
        return _ANY
    return None if None in ndims else max(ndims)


def _all_true(facts):
    if False in facts:
        return False
    return None if None in facts else True


def sequence_operands(op, kinds):
    """The operand nodes of `op` if it is a `+` that joins lists or tuples or a `*` that
    repeats one (an operand is one), else None."""
    node = op.node
    if (isinstance(node, gast.BinOp) and isinstance(node.op, (gast.Add, gast.Mult))
            and CONTAINER in (kinds[node.left], kinds[node.right])):
        return [node.left, node.right]
    return None


def _field_key(e):
    """"p.a" for the attribute read `p.a` of a name, else None."""
    return f"{e.value.id}.{e.attr}" if isinstance(e.value, gast.Name) else None


def _target_kind(loop, src):
    """The kind of a for loop's target: a scalar over range(...)."""
    it = loop.iter
    if isinstance(it, gast.Call) and src.resolve(it.func) is range:
        return SCALAR
    return UNKNOWN


def _is_local_ref(e, src):
    while isinstance(e, gast.Attribute):
        e = e.value
    return isinstance(e, gast.Name) and src.is_local(e.id)


def _outside_item(src, e):
    """The item that `e`, `name[k]` of a constant `k` and a list or tuple `name` (or an
    attribute chain) outside the function, denotes, or MISSING. (A loop over such a
    list is unrolled with these reads, and guarded on its items' classes: see
    before_ad/desugar.py.)"""
    if not (isinstance(e.slice, gast.Constant) and type(e.slice.value) is int
            and isinstance(e.value, (gast.Name, gast.Attribute))):
        return MISSING
    value, k = src.resolve(e.value), e.slice.value
    if type(value) not in (list, tuple) or not -len(value) <= k < len(value) or not (
            user_class(type(value[k]))):
        return MISSING
    return src.items_of(e.value)[k]         # (guarded)


def _kind_of_class(cls):
    return CONTAINER if cls in (list, tuple) else cls


def _kind_of_object(obj):
    if user_class(type(obj)):
        return type(obj)
    if isinstance(obj, np.ndarray):
        return ARRAY
    if isinstance(obj, (numbers.Number, np.generic)):
        return SCALAR
    if isinstance(obj, (tuple, list)):
        return CONTAINER
    return UNKNOWN
