"""Complex values: differentiate them where every rule they reach holds for them,
refuse them where one does not, and check at run time the values whose type only the run
tells.

Takes the function in Wengert form. A forward data flow over the names (to a fixed point
over loops) finds whether each holds

- a complex value: a complex literal (`1j`), `complex(...)`, a function of `cmath`, a
  complex NumPy type (`np.complex128(...)`) or dtype (`dtype=complex`,
  `.astype("complex64")`), `np.fft` (and `scipy.fft`), `np.emath` (`np.lib.scimath`), a
  complex global or closure value, a complex number or array argument (the code is
  specialised on its class, and an array's dtype, see compilation.arg_types_of), an
  item of a container argument that is complex (the code is specialised on which are:
  an item read at a constant index or field has its leaf's state, one read at a computed
  index is complex if all it may be are, and unknown if some are real), and what is
  computed from one, but its modulus, phase, real or imaginary part (`abs(z)`,
  `np.angle(z)`, `z.real`);
- a value of unknown type: an argument of a type the code is not specialised on (an
  array of another library, an item of a container of real values), what a function without a rule returns (`np.roots(p)`,
  `np.linalg.eig(a)`, a library's), or a Python function called with no differentiated
  argument (which runs as it is), a field of an object, and what is computed from one;
- a real value: the rest. Arguments specialised as floats, ints or arrays are real: the
  guards test their class, and the dtype of the arrays (the context's `assumed_real`
  names those not differentiated that the code reads, for the guards to test); a Python
  function called with differentiated values is compiled with this pass too, which
  checks what it returns; a rule of the user's (`defvjp`, `custom_vjp`) is trusted.

Where a complex value meets a differentiated one (`np.exp(1j * x)`, `z * x` for a
complex `z`), the statement's rule must say what it does with complex values
(`Primitive.complex`, declared in rules/complex_numbers.py; docs/complex.md has the
convention): True, its templates hold for them (holomorphic functions, sums, products,
moves, `np.fft`); `FROM_REAL`, they hold, of real arguments (`np.fft.rfft`); or a
primitive that takes its place (`np.abs(z)` becomes `_s2s_abs_(z)`, whose rule is the
derivative of the modulus; so do `np.imag` and `np.angle`, constants of real values,
where a differentiated complex value reaches them). A differentiated real value the
statement reads goes through `_s2s_as_complex` first (but to a `FROM_REAL` rule), whose
adjoint is the real part of the complex one, and so does a real value bound to a name
that holds a complex value elsewhere. Anywhere else (a rule for real values only,
`np.emath`, `np.sign` of a complex value, a write into an array, a function called with one), and where the function
returns a complex value (but to `grad(f, holomorphic=True)` and forward mode, see
`Options.complex_output`), compilation stops with a
located `ComplexValueError` that says where the complex value comes from and what to
write instead; so do `np.linalg.eig`, `np.linalg.eigvals` and `np.roots` of a
differentiated value, which give complex values for some real ones. A value of unknown
type that such a statement computes with is checked just before it, at run time (once,
before the loops that do not bind it), by `_s2s_check_real(v, _s2s_file, line)`, which
raises that error if it is complex; so is a value of unknown type the function returns,
which a caller takes as real. Code whose values are all real, as code of floats and
arrays is, gets no check and no change.

>>> print(show("complex_values", '''
... def f(x):
...     z = np.exp(1j * x)
...     return np.sum(np.abs(z * x))
... ''', arrays=True))
def f(x):
    x_c = _s2s_as_complex(x)
    t = 1j * x_c
    z = np.exp(t)
    x_c_1 = _s2s_as_complex(x)
    t_1 = z * x_c_1
    t_2 = _s2s_abs_(t_1)
    y = np.sum(t_2)
    return y
>>> import s2sad
>>> try:
...     show("complex_values", '''
... def f(x):
...     return np.sum(np.abs(np.emath.sqrt(x)))
... ''', arrays=True)
... except s2sad.ComplexValueError as exc:
...     print(str(exc).split(": ", 1)[1].split(";")[0])
np.emath.sqrt() (np.emath gives complex values for some real arguments) makes a complex value of x, which s2sad differentiates
>>> print(show("complex_values", '''
... def f(x, p):
...     r = np.roots(p)
...     return np.sum(x * r[0])
... ''', arrays=True))
def f(x, p):
    r = np.roots(p)
    t = r[0]
    _s2s_check_real(t, _s2s_file, 4)
    t_1 = x * t
    y = np.sum(t_1)
    return y
"""
import cmath
import itertools
import operator

import gast
import numpy as np

from .. import marks, syntax
from ..analysis.operations import COPY, CUSTOM, NONDIFF, PACK, USER, call_arguments
from ..compilation import COMPLEX_NUMBERS, SPECIALISED, complex_key, complex_leaves_key
from ..errors import ComplexValueError
from ..frontend.source import MISSING
from ..rules import complex_linalg, complex_numbers, registry, runtime
from ..rules.arrays import is_duck_array_type

REAL, UNKNOWN = "real", "unknown"


class Complex:
    """The state of a name that holds a complex value: `what` made it, in statement
    `stmt` (None for an argument or a global); of a structure argument that holds complex
    values and real ones, `leaves`, which are (`complex_numbers.complex_leaves`)."""

    def __init__(self, what, stmt=None, leaves=None):
        self.what, self.stmt, self.leaves = what, stmt, leaves


def narrowed(state, step):
    """The state of the value at `step` (see `complex_numbers.complex_leaves`; None, a
    step not known when compiling) of a structure of `state`: complex, real, a structure
    of both, or UNKNOWN where `step` could be one or the other (the item of a list read
    by a computed index)."""
    if not (isinstance(state, Complex) and state.leaves):
        return state
    if step is None:
        inner = [(path[1:], c) for path, c in state.leaves]
    else:
        firsts = {p[0] for p, _ in state.leaves if p}
        if step not in firsts and step[0] == "[" and type(step[1]) is int and step[1] < 0:
            # (of a sequence, from the end)
            step = ("[", step[1] + len({s for s in firsts if type(s[1]) is int}))
        inner = [(path[1:], c) for path, c in state.leaves if path[:1] == (step,)]
        if not inner:   # (not a step the leaves are known by: any of them)
            return narrowed(state, None)
    if not any(c for _, c in inner):
        return REAL
    if all(c for _, c in inner) and (step is None or inner == [((), True)]):
        return Complex(state.what)
    if step is None:
        return UNKNOWN
    return Complex(state.what, leaves=tuple(inner))


def _rank(state):
    return 2 if isinstance(state, Complex) else 1 if state == UNKNOWN else 0


def join(a, b):
    if isinstance(a, Complex):
        return a
    if isinstance(b, Complex):
        return b
    return UNKNOWN if UNKNOWN in (a, b) else REAL


#: Functions whose result is never complex, whatever their arguments (a complex number
#: gives its modulus, phase or a part; the functions of `math` refuse it).
REAL_RESULTS = {abs, len, isinstance, issubclass, type, id, hash, bool, int, float, str,
                repr, callable, hasattr, round, np.abs, np.absolute, np.real, np.imag,
                np.angle, np.iscomplex, np.isreal, np.iscomplexobj, np.isrealobj, np.isnan,
                np.isinf, np.isfinite, np.isclose, np.allclose, np.array_equal, np.shape,
                np.ndim, np.size, np.argmax, np.argmin, np.argsort, np.nonzero,
                np.count_nonzero, np.issubdtype, np.linalg.norm, np.linalg.eigvalsh,
                cmath.phase, cmath.polar, cmath.isfinite, cmath.isinf, cmath.isnan,
                cmath.isclose, complex_numbers.abs_, complex_numbers.angle,
                complex_numbers.real, complex_numbers.imag, complex_linalg.eigvalsh,
                complex_linalg.singular_values, complex_linalg.norm_of_moduli}

#: Functions that return a tuple, the positions of its items that are real whatever the
#: arguments (of a complex matrix, `np.linalg.slogdet`'s logarithm; its sign is complex).
REAL_ITEMS = {complex_linalg.slogdet: (1, -1), complex_linalg.hermitian_eigh: (0, -2),
              complex_linalg.complex_svd: (1, -2)}

#: Functions without a derivative that are constants of complex values too (a function
#: of the shape, or of which numbers are equal, or finite).
CONSTANT_OF_COMPLEX = {len, isinstance, type, id, np.shape, np.ndim, np.size, np.result_type,
                       np.iscomplex, np.isreal, np.iscomplexobj, np.isrealobj, np.isnan,
                       np.isinf, np.isfinite, np.isclose, np.allclose, np.array_equal,
                       np.count_nonzero, np.nonzero, np.zeros_like, np.ones_like,
                       np.empty_like, cmath.isfinite, cmath.isinf, cmath.isnan,
                       cmath.isclose}

#: Functions without a rule that give real values of real arguments.
REAL_OF_REAL = {itertools.count, itertools.repeat, enumerate, zip, reversed}

#: Functions that return complex values for some real arguments: what to write instead.
MAYBE_COMPLEX = {
    np.linalg.eig: "for a symmetric matrix, np.linalg.eigh gives real eigenvalues and "
                   "eigenvectors, which s2sad differentiates",
    np.linalg.eigvals: "for a symmetric matrix, np.linalg.eigvalsh gives real eigenvalues, "
                       "which s2sad differentiates",
    np.roots: "where the roots are real, solve for them with real arithmetic",
}

#: Functions of scipy.linalg whose rules are for real values, which give complex values for
#: some real arguments (a matrix with a negative eigenvalue): what they return is of
#: unknown type, checked at run time where it is computed with.
LINALG_CHECKED = {"logm", "sqrtm"}

#: Functions of np.fft (and scipy.fft) that make no complex value of a real one.
FFT_REAL = {"fftfreq", "rfftfreq", "fftshift", "ifftshift", "next_fast_len"}
#: ... and those that make a real value of a complex one.
FFT_TO_REAL = {"irfft", "irfft2", "irfftn", "hfft"}
#: The functions of cmath that give real numbers.
CMATH_REAL = {"phase", "polar", "isfinite", "isinf", "isnan", "isclose"}

#: The categories of primitives that make complex values (see `_category`), and what
#: the messages say of them after the call.
MAKES_COMPLEX = {
    "complex type": "(...)", "cmath": "() (cmath works on complex numbers)",
    "fft": "() (a Fourier transform, which gives complex values)",
    "to real": "() (a Fourier transform of complex values)",
    "emath": "() (np.emath gives complex values for some real arguments)"}

#: What to write instead of returning a complex value.
HOLOMORPHIC = (
    "Return a real value (np.real(z), np.abs(z) ** 2, ...), or, for a complex function of "
    "a complex argument, use grad(f, holomorphic=True), which gives its derivative f'(z)")

#: What to write instead of the usual complex formulations.
INSTEAD = (
    "np.exp(1j * t) is np.cos(t) + 1j * np.sin(t): carry the real and imaginary parts as "
    "two real values and write the arithmetic on them ((a + ib)(c + id) = (ac - bd) + "
    "i(ad + bc), |a + ib| ** 2 = a ** 2 + b ** 2), or the modulus and phase")


def run(fn, ctx):
    """The pass: check `fn`, adding the checks at run time it needs."""
    ctx.assumed_real = set()
    varied = ctx.varied
    if not varied:
        return fn
    analysis = _Analysis(fn, ctx)
    if analysis.revive():   # (what depends differentiably on what changed)
        ctx.changed()
        analysis = _Analysis(fn, ctx)
    checks = analysis.checks()
    ctx.assumed_real = analysis.assumed()
    if checks:      # (first: a value checked is then passed through as_complex)
        _insert(fn, checks, ctx)
        ctx.rewrote = True
    if analysis.rewrite(fn):
        ctx.rewrote = True
    return fn


class _Analysis:
    """What each name of the function in Wengert form holds (see the module docstring)."""

    def __init__(self, fn, ctx):
        self.ctx, self.src, self.ops, self.varied = ctx, ctx.src, ctx.ops, ctx.varied
        self.params = [a.id for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs]
        self.stmts = [s for s in syntax.statements(fn) if s is not fn]
        self.made_by = self.operations_binding()     # {name: its one binding's operation}
        self.operands = {}      # {id(node): [(node, local name or None, state)]}
        self.made_complex = {}  # {id(statement): whether it makes a complex value}
        self.categories = {}    # {id(primitive): its category}
        # names a check of generated code (differentiated again) already tests
        self.checked = {s.value.args[0].id for s in self.stmts if _is_check(s, ctx)}
        self.rebound = {n for s in self.stmts for n in syntax.names_stored(s)}
        self.state = {p: self.param_state(p) for p in self.params}
        # the names bound once to a structure argument, or to a structure it holds read at
        # a constant index or field, whose `leaves` are those of what they hold
        self.exact = {p for p in self.params if isinstance(self.state[p], Complex)
                      and self.state[p].leaves}
        self.fixed_point()

    # -- what each name holds ---------------------------------------------------------
    def param_state(self, p):
        kind = self.ctx.arg_types.get(p)
        if isinstance(kind, str):
            return REAL     # a callee's: its caller checked the arguments
        if kind in COMPLEX_NUMBERS:
            return Complex(f"the complex argument {p}")
        if self.ctx.arg_types.get(complex_key(p)):
            return Complex(f"the complex array argument {p}")
        leaves = self.ctx.arg_types.get(complex_leaves_key(p))
        if leaves and p not in self.rebound:
            return Complex(f"a complex value in the argument {p}", leaves=leaves)
        if leaves:
            return Complex(f"a complex value in the argument {p}")
        if kind in SPECIALISED or (isinstance(kind, type) and is_duck_array_type(kind)):
            return REAL     # guarded: the class, and for an array its dtype
        return UNKNOWN

    def fixed_point(self):
        """The state of each name: the join over its bindings, each the join of what its
        statement makes and of the names it reads (`transfer`), to a fixed point."""
        bindings, state = [], self.state
        for s in self.stmts:    # (in order: an item of a structure read is narrowed)
            if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name):
                bindings.append((s.targets[0].id,) + self.transfer(s))
            elif isinstance(s, gast.For) and isinstance(s.target, gast.Name):
                bindings.append((s.target.id,) + self.joined(s.iter) + (False,))
            else:
                continue
            target, made, names, real = bindings[-1]
            for n in names:
                made = join(made, state.get(n, REAL))
            state[target] = join(state.get(target, REAL), REAL if real and made == UNKNOWN
                                 else made)
        if all(state[n] == REAL for n in state):
            return      # (no value of unknown type or complex: the names read change none)
        changed = True
        while changed:
            changed = False
            for target, made, names, real in bindings:
                new = made
                for n in names:
                    new = join(new, state.get(n, REAL))
                if real and new == UNKNOWN:
                    new = REAL      # (a differentiated value: `checks` checks the operands)
                if _rank(join(state[target], new)) != _rank(state[target]):
                    state[target] = join(state[target], new)
                    changed = True

    def transfer(self, s):
        """(state, names, real): the value of assignment `s` holds the join of `state` and
        of the states of the local `names`; with `real`, unknown is real (its operands are
        checked where it is differentiated)."""
        op = self.ops.get(s)
        if op is None:
            return self.joined(s.value) + (False,)
        kind = self.category(op.prim)
        if op.form == NONDIFF and op.prim is None or kind == "real" or _in(
                self.instead_of(op), REAL_RESULTS) or self.real_item(op):
            return REAL, (), False
        if self.complex_op(s, op):
            if kind == "to real":
                return REAL, (), False
            return Complex(self.complex_op(s, op, said=True), s), (), False
        if kind in ("maybe", "checked"):
            return UNKNOWN, (), False
        if op.form == USER:
            varied = any(a in self.varied for a in _names(op.args))
            return (REAL if varied else UNKNOWN), (), False
        item = self.item_state(op)
        if item is not None:
            if isinstance(item, Complex) and item.leaves and s.targets[0].id in self.made_by:
                self.exact.add(s.targets[0].id)
            return item, (), False
        if op.form == NONDIFF or _structural(op):
            return self.joined(s.value) + (False,)
        if not (kind == "known" or op.form == CUSTOM):  # (a rule of the user's, trusted)
            return UNKNOWN, (), False   # a function s2sad knows nothing of
        return self.joined(s.value) + (s.targets[0].id in self.varied,)

    def item_state(self, op):
        """The state of what `op` reads from a structure argument that holds complex
        values (see `narrowed`): at a constant index or field of a name that holds it,
        bound once, that of that item; else complex if all it holds is, unknown if some
        of it is real; None for another operation."""
        if not (_in(op.prim, {operator.getitem, getattr}) and len(op.args) == 2 and (
                isinstance(op.args[0], gast.Name) and self.src.is_local(op.args[0].id))):
            return None
        name, key = op.args[0].id, op.args[1]
        state = self.state.get(name, REAL)
        if not (isinstance(state, Complex) and state.leaves):
            return None
        if not (name in self.exact and isinstance(key, gast.Constant)):
            return narrowed(state, None)
        return narrowed(state, ("[" if _in(op.prim, {operator.getitem}) else ".", key.value))

    def operations_binding(self):
        """{name: the operation of the statement that binds it}, of the names bound once
        by a primitive."""
        found, twice = {}, set()
        for s in self.stmts:
            for name in syntax.names_stored(s):
                if name in found:
                    twice.add(name)
                op = self.ops.get(s) if isinstance(s, gast.Assign) else None
                found[name] = op if op is not None and op.prim is not None else None
        return {n: op for n, op in found.items() if n not in twice and op is not None}

    def real_item(self, op):
        """Whether `op` reads an item that is real whatever the arguments (`REAL_ITEMS`)
        of what a primitive returned, with a constant index."""
        if not _in(op.prim, {operator.getitem}) or len(op.args) != 2 or not (
                isinstance(op.args[0], gast.Name) and isinstance(op.args[1], gast.Constant)):
            return False
        made = self.made_by.get(op.args[0].id)
        if made is None:
            return False
        instead = self.instead_of(made) or made.prim
        return op.args[1].value in REAL_ITEMS.get(instead, ()) if _in(
            instead, REAL_ITEMS) else False

    def instead_of(self, op):
        """The primitive that takes the place of `op`'s where a complex value reaches it
        (`Primitive.complex`; or what it chooses by the constant arguments of the call,
        `complex_numbers.chooses`), or None."""
        record = registry.primitive(op.prim) if op.prim is not None else None
        if record is None or not callable(record.complex):
            return None
        chooses = complex_numbers.CHOOSERS.get(record.complex)
        if chooses is None:
            return record.complex
        args, keywords = call_arguments(op, self.src) if op.node is not None else (
            op.args, {})
        given = {**dict(zip(chooses, args)), **keywords}
        return record.complex({p: a.value for p, a in given.items()
                               if isinstance(a, gast.Constant)})

    def category(self, prim):
        """What `prim` gives (see `_category`), found once per compilation."""
        found = self.categories.get(id(prim))
        if found is None:
            found = self.categories[id(prim)] = _category(prim)
        return found

    def joined(self, node):
        """(state, names): the join of the global values `node` reads, and the local names
        it reads."""
        out, names = REAL, []
        for _, name, state in self.operands_of(node):
            if name is None:
                out = join(out, state)
            else:
                names.append(name)
        return out, tuple(names)

    def operands_of(self, node):
        """[(node, name, state)]: the local names `node` reads (with state None), but the
        local function values it calls, and the global values, fields the code is
        specialised on and complex literals it reads (name None)."""
        known = self.operands.get(id(node))
        if known is None:
            known = self.operands[id(node)] = list(self._operands(node))
        return known

    def _operands(self, node):
        if isinstance(node, gast.Constant):
            if isinstance(node.value, complex):
                yield node, None, Complex(f"the complex literal {node.value!r}")
            return
        if isinstance(node, gast.Name):
            if not self.src.is_local(node.id):
                yield node, None, self.object_state(node)
            elif node.id in self.checked:
                yield node, None, REAL
            else:
                yield node, node.id, None
            return
        if isinstance(node, gast.Attribute) and _global_chain(node, self.src):
            yield node, None, self.object_state(node)
            return
        if isinstance(node, gast.Attribute) and isinstance(node.value, gast.Name) and (
                f"{node.value.id}.{node.attr}" in self.ctx.arg_types
                and node.value.id in self.params):
            yield node, None, REAL      # a field the code is specialised on (and guards)
            return
        if isinstance(node, gast.BinOp):       # (most statements: one operation on atoms)
            children = (node.left, node.right)
        elif isinstance(node, gast.Call):
            children = ([] if isinstance(node.func, gast.Name) else [node.func]) + node.args + [
                k.value for k in node.keywords]
        else:
            children = gast.iter_child_nodes(node)
        for child in children:
            yield from self._operands(child)

    def object_state(self, node):
        obj = self.resolve(node)
        if obj is MISSING:
            return UNKNOWN
        found = _complex_object(obj)
        if found is not None:
            return Complex(f"{syntax.unparse(node)} ({found})")
        if isinstance(obj, (int, float, str, bytes, type(None), np.ndarray, np.generic,
                            type, np.dtype)) or callable(obj) or _is_module(obj) or (
                isinstance(obj, (list, tuple, dict))):
            return REAL
        return UNKNOWN

    def state_of(self, name):
        return self.state.get(name, REAL)

    # -- complex operations -------------------------------------------------------------
    def complex_op(self, s, op, said=False):
        """Whether `s` makes (or works on) complex values: with `said`, what does, said
        for a message; else True, or None."""
        if not said:
            known = self.made_complex.get(id(s), MISSING)
            if known is MISSING:
                known = self.made_complex[id(s)] = self._complex_op(s, op, False)
            return known
        return self._complex_op(s, op, True)

    def _complex_op(self, s, op, said):
        value = s.value
        for n, _, _ in self.operands_of(value):
            if isinstance(n, gast.Constant):
                return f"the complex literal {n.value!r}" if said else True
        kind = self.category(op.prim)
        if kind in MAKES_COMPLEX:
            return f"{_spelled(value)}{MAKES_COMPLEX[kind]}" if said else True
        if isinstance(value, gast.Call) and (value.keywords or value.args):
            strings = isinstance(value.func, gast.Attribute) and value.func.attr in (
                "astype", "view") or _in(op.prim, {np.dtype})
            for k in value.keywords:
                if k.arg == "dtype" and _complex_dtype(self.constant(k.value, True)):
                    return f"dtype={syntax.unparse(k.value)}" if said else True
            for a in value.args:
                if not (isinstance(a, gast.Name) and self.src.is_local(a.id)) and (
                        _complex_dtype(self.constant(a, strings))):
                    return f"the complex dtype {syntax.unparse(a)}" if said else True
        return None

    def constant(self, node, strings):
        if isinstance(node, gast.Constant):
            return node.value if strings or not isinstance(node.value, str) else None
        if isinstance(node, gast.Name) and self.src.is_local(node.id):
            return None
        if isinstance(node, (gast.Name, gast.Attribute)):
            obj = self.resolve(node)
            return None if obj is MISSING else obj
        return None

    def resolve(self, node):
        """The object a global name or attribute chain denotes, or MISSING."""
        if isinstance(node, gast.Name) and node.id in self.ctx.bindings:
            return self.ctx.bindings[node.id]
        return self.src.resolve(node)

    # -- where complex values meet differentiated ones ---------------------------------
    def checks(self):
        """[(statement, name)]: the names of unknown type to check before each statement;
        raise for a complex value that meets a differentiated one in a statement whose
        rule is for real values only. Record in `self.meeting` the statements where one
        meets a rule that holds for complex values, and in `self.widened` those that bind
        a real value computed from differentiated real ones to a name that holds a
        complex value elsewhere (`y = x` in one branch, `y = z` in the other)."""
        out, varied = [], self.varied
        self.meeting, self.widened = [], []
        for s in self.stmts:
            if isinstance(s, gast.Return) and isinstance(s.value, gast.Name):
                out += self.returned(s)
            if not (isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name)
                    and s.targets[0].id in varied):
                continue
            op = self.ops.get(s)
            meets = False
            if op is not None and self.complex_op(s, op):
                if not self.supported(s, op):
                    raise self.refused(s, f"{self.complex_op(s, op, said=True)} makes a "
                                          f"complex value of {self.first(s)}, which s2sad "
                                          "differentiates", rule=op)
                meets = True
            if op is not None and self.category(op.prim) == "maybe":
                raise self.refused(s, f"{syntax.unparse(s.value)} of {self.first(s)}, which "
                                      "s2sad differentiates, may give complex values",
                                   MAYBE_COMPLEX[op.prim])
            structural = op is None or _structural(op)
            for node, name, state in self.operands_of(s.value):
                state = self.state_of(name) if name is not None else state
                if isinstance(state, Complex):
                    if not self.supported(s, op):
                        raise self.refused(s, f"{self.complex_value(node, state, s)} meets "
                                              f"{self.first(s)} here, which s2sad "
                                              "differentiates", rule=op)
                    meets = True
                if state == UNKNOWN and not structural and name is not None:
                    out.append((s, name))
            if meets:
                self.meeting.append((s, op))
            elif isinstance(self.state_of(s.targets[0].id), Complex) and any(
                    name in varied and self.state_of(name) == REAL
                    for _, name, _ in self.operands_of(s.value)):
                self.widened.append(s)  # (a real value bound to a name that is complex)
        return out

    def supported(self, s, op):
        """Whether the rule of statement `s` (of `op`) takes complex values: it declares
        so (`Primitive.complex`), or it moves values without computing with them."""
        if op is None:
            return False
        if op.form in (COPY, PACK) or _in(op.prim, {operator.getitem, getattr}):
            return True
        record = registry.primitive(op.prim) if op.prim is not None else None
        return record is not None and bool(record.complex)

    def revive(self):
        """Call the primitive that takes the place of one without a derivative for real
        values where a differentiated complex value reaches it (`np.imag(z)`,
        `np.angle(z)`: constants of real values); whether any."""
        found = False
        for s in self.stmts:
            op = self.ops.get(s) if isinstance(s, gast.Assign) else None
            if op is None or op.form != NONDIFF or op.prim is None:
                continue
            record = registry.primitive(op.prim)
            if record is None or not any(
                    isinstance(a, gast.Name) and a.id in self.varied and isinstance(
                        self.state_of(a.id), Complex) for a in op.args):
                continue
            if callable(record.complex):
                self.instead(s, op, self.instead_of(op))
                found = True
            elif not _in(op.prim, CONSTANT_OF_COMPLEX):
                raise self.refused(s, f"{_spelled(s.value)}() of a complex value that "
                                      f"depends on {self.first(s)}, which s2sad "
                                      "differentiates",
                                   "Compute it from np.real(z) and np.imag(z), or np.abs(z)"
                                   " and np.angle(z)", rule=op)
        return found

    def instead(self, s, op, prim):
        """Make statement `s` (of `op`) call `prim` on the same arguments (and, for a
        primitive that takes them, `complex_numbers.located`, the user's file and line)."""
        func = syntax.name(self.ctx.runtime(prim.__name__))
        marks.PRIM.put(func, prim)
        args, keywords = call_arguments(op, self.src) if op.node is not None else (
            op.args, {})
        keywords = [gast.keyword(arg=k, value=syntax.copied(v)) for k, v in keywords.items()]
        if prim in complex_numbers.LOCATED:
            # (the file is bound, not written: see `_insert`)
            keywords += [gast.keyword(arg="file", value=syntax.name(self.ctx.bind(
                "_s2s_file", obj=self.ctx.src.filename))), gast.keyword(
                arg="line", value=syntax.const(self.src.lineno(s)))]
        s.value = syntax.located(syntax.call(func, [syntax.copied(a) for a in args],
                                             keywords), s.value)

    def rewrite(self, fn):
        """Where a complex value meets a rule that holds for complex values: call the
        primitive the rule names instead (`np.abs` of a complex value is
        `_s2s_abs_`), and pass each differentiated real operand through `as_complex`, so
        that its adjoint is the real part of what reaches it."""
        before = {}
        for s, op in self.meeting:
            instead = self.instead_of(op) if op.prim is not None else None
            if instead is not None:
                self.instead(s, op, instead)
            mapping = {name: syntax.name(self.ctx.namer.fresh(name + "_c"))
                       for name in self.real_operands(s, op)}
            if mapping:
                s.value = syntax.substitute(s.value, mapping)
                before[id(s)] = [syntax.located(syntax.assign(
                    syntax.name(new.id, store=True), syntax.call(
                        self.as_complex(), [syntax.name(old)])), s)
                    for old, new in mapping.items()]
        after = {}
        for s in self.widened:     # y = op(x) becomes y_r = op(x); y = as_complex(y_r)
            target = s.targets[0].id
            real = self.ctx.namer.fresh(target + "_r")
            s.targets[0] = syntax.name(real, store=True)
            after[id(s)] = [syntax.located(syntax.assign(syntax.name(target, store=True),
                                                         syntax.call(self.as_complex(), [
                                                             syntax.name(real)])), s)]
        for block in syntax.blocks(fn.body):
            if any(id(t) in before or id(t) in after for t in block):
                block[:] = [u for t in block
                            for u in before.get(id(t), []) + [t] + after.get(id(t), [])]
        return bool(self.meeting or self.widened)

    def first(self, s):
        """The differentiated value statement `s` reads, for a message: a name of the
        user's (not a temporary of Wengert form), or "a value"."""
        first = next((n for n in syntax.names_loaded(s.value) if n in self.varied), None)
        return first if first in self.src.local_names else "a value"

    def returned(self, s):
        """The check of the value return statement `s` returns (which a caller that
        differentiates the function takes as real), or raise if it is complex."""
        name = s.value.id
        state = self.state_of(name) if self.src.is_local(name) else REAL
        if isinstance(state, Complex) and not self.ctx.options.complex_output:
            made = self.complex_value(s.value, state, s)
            made = made if made.startswith("a complex value") else f"a complex value ({made})"
            raise self.refused(s, f"the function returns {made}", HOLOMORPHIC,
                               why="s2sad differentiates functions with a real output")
        return [(s, name)] if state == UNKNOWN and name not in self.checked else []

    def complex_value(self, node, state, s):
        """The complex value `node` (of `state`) read in statement `s`, said for a
        message: where it comes from."""
        if state.stmt is None:
            return state.what       # a global: "C (a complex128 array)"
        if self.src.lineno(state.stmt) == self.src.lineno(s):
            return f"a complex value ({state.what})"
        return (f"a complex value ({state.what}, line {self.src.lineno(state.stmt)}: "
                f"{self.src.line_text(state.stmt).strip()})")

    def real_operands(self, s, op):
        """The differentiated real names statement `s` (of `op`) computes with, in order
        (none where it reads a container's item: the container is what it reads), and
        those of unknown type, which are checked real before it."""
        if op.form == COPY or _in(op.prim, {operator.getitem, getattr}) or (
                op.prim is not None and getattr(registry.primitive(op.prim), "complex", None)
                == complex_numbers.FROM_REAL):
            return []
        names = [name for _, name, _ in self.operands_of(s.value)]
        # (a name of unknown type is checked real just before, see `checks`)
        return list(dict.fromkeys(n for n in names if n is not None and n in self.varied
                                  and self.state_of(n) in (REAL, UNKNOWN)))

    def as_complex(self):
        func = syntax.name(self.ctx.runtime("as_complex"))
        marks.PRIM.put(func, complex_numbers.as_complex)
        return func

    def refused(self, s, what, instead=None, rule=None, why=None):
        named = _spelled(s.value) if rule is not None and rule.prim is not None else None
        if rule is not None and rule.form == USER:
            why = why or (f"s2sad differentiates no call of a Python function ({named}) with "
                          "complex values yet, so the derivative would be wrong")
        why = why or ((f"the rule of {named} is for real values only" if named else
                       "s2sad's rules for it are those of real numbers") + ", so the "
                      "derivative would be wrong (docs/complex.md lists what takes complex "
                      "values)")
        return ComplexValueError(
            f"{self.src.where(s)}: {what}; {why}. {instead or INSTEAD}"
            f"\n    {self.src.line_text(s).strip()}")

    def assumed(self):
        """The array arguments not differentiated (and fields) whose values reach a
        statement with a differentiated value: taken as real, which the guards test."""
        arrays = {p for p, k in self.ctx.arg_types.items() if (k is np.ndarray or (
            isinstance(k, type) and is_duck_array_type(k))) and p not in self.ctx.wrt
            and not self.ctx.arg_types.get(complex_key(p))}
        if not arrays:
            return set()
        reads, todo = {}, []
        for s in self.stmts:
            if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name):
                read = self.read(s.value)
                reads.setdefault(s.targets[0].id, set()).update(read)
                if s.targets[0].id in self.varied:
                    todo.extend(read)
        reached = set()
        while todo:
            n = todo.pop()
            if n not in reached:
                reached.add(n)
                todo.extend(reads.get(n, ()))
        return arrays & reached

    def read(self, node):
        """The local names and the fields of parameters `node` reads."""
        return {name if name is not None else f"{n.value.id}.{n.attr}"
                for n, name, _ in self.operands_of(node) if name is not None or (
                    isinstance(n, gast.Attribute) and isinstance(n.value, gast.Name))}


def _insert(fn, checks, ctx):
    """Add `_s2s_check_real(name, _s2s_file, line)` before each statement of `checks`,
    hoisted out of the loops that do not bind the name, once per block while it is not
    bound again."""
    check = ctx.runtime("check_real")
    # the file is bound, not written: two functions with the same source make the same code
    filename = ctx.bind("_s2s_file", obj=ctx.src.filename)
    parents = {}
    for block in syntax.blocks(fn.body):
        for s in block:
            if isinstance(s, (gast.For, gast.While, gast.If)):
                for t in s.body + s.orelse:
                    parents[id(t)] = s
    where = {}
    for s, name in checks:
        anchor = s
        while id(anchor) in parents:
            parent = parents[id(anchor)]
            if not isinstance(parent, (gast.For, gast.While)) or syntax.stores(parent, name):
                break
            anchor = parent
        names = where.setdefault(id(anchor), [])
        if name not in [n for n, _ in names]:
            names.append((name, s))

    def made(name, meeting):
        return syntax.located(syntax.expr_stmt(syntax.call(check, [
            syntax.name(name), syntax.name(filename),
            syntax.const(ctx.src.lineno(meeting))])), meeting)
    _place(fn.body, where, set(), made)


def _place(block, where, checked, made):
    """`block` with the checks `where` holds ({id(statement): [(name, meeting statement)]})
    before their statements, but of the names `checked` before them."""
    out = []
    for s in block:
        for name, meeting in where.get(id(s), ()):
            if name not in checked:
                checked.add(name)
                out.append(made(name, meeting))
        inner = checked - set(syntax.names_stored(s)) if isinstance(
            s, (gast.For, gast.While)) else checked
        if isinstance(s, (gast.For, gast.While, gast.If)):
            s.body = _place(s.body, where, set(inner), made)
            s.orelse = _place(s.orelse, where, set(inner), made)
        checked -= set(syntax.names_stored(s))
        out.append(s)
    block[:] = out
    return block


def _spelled(value):
    return syntax.unparse(value.func) if isinstance(value, gast.Call) else syntax.unparse(value)


def _is_check(s, ctx):
    return (isinstance(s, gast.Expr) and isinstance(s.value, gast.Call)
            and ctx.resolve(s.value.func) is runtime.check_real and s.value.args
            and isinstance(s.value.args[0], gast.Name))


def _complex_object(obj, depth=0):
    """What makes the object `obj` complex (a complex number, dtype or array, or a
    container holding one), said for a message, or None."""
    if _complex_dtype(obj, strings=False):
        return "a complex dtype"
    return runtime.complex_part(obj) if isinstance(
        obj, (complex, np.generic, np.ndarray, list, tuple, dict)) or getattr(
        obj, "dtype", None) is not None else None


def _complex_dtype(obj, strings=True):
    if isinstance(obj, type):
        return obj is complex or issubclass(obj, np.complexfloating)
    if isinstance(obj, np.dtype):
        return obj.kind == "c"
    if strings and isinstance(obj, str):
        try:
            return np.dtype(obj).kind == "c"
        except TypeError:
            return False
    return False


#: Functions that move values into or out of a container without computing with them.
MOVES = {operator.getitem, getattr, runtime.setitem, runtime.append}


def _structural(op):
    """Whether `op` moves values into or out of a container without computing with them:
    what it reads is checked where it is computed with."""
    return op.form in (COPY, PACK) or _in(op.prim, MOVES)


def _category(prim):
    """What primitive `prim` gives: "real" (a real value, whatever its arguments), one of
    MAKES_COMPLEX (complex values of real ones), "to real" (a Fourier transform that makes
    real values of complex ones), "maybe" (complex values for some real ones, see
    MAYBE_COMPLEX; "checked", those with rules, see LINALG_CHECKED), "known" (a rule, one of s2sad's own helpers, or a function that
    gives real values of real ones), or "unknown"."""
    module = str(getattr(prim, "__module__", None) or "")
    name = _name(prim)
    if _in(prim, REAL_RESULTS) or module == "math" or (module == "cmath" and
                                                        name in CMATH_REAL):
        return "real"
    if prim is complex or (isinstance(prim, type) and issubclass(prim, np.complexfloating)):
        return "complex type"
    if module == "cmath":
        return "cmath"
    if module.split(".")[0] in ("numpy", "scipy") and (".fft" in module or "fftpack" in module
                                                       ) and name not in FFT_REAL:
        return "to real" if name in FFT_TO_REAL else "fft"
    if "scimath" in module:
        return "emath"
    if _in(prim, MAYBE_COMPLEX):
        return "maybe"
    if module.startswith("scipy.linalg") and name in LINALG_CHECKED:
        return "checked"
    if prim is not None and (registry.primitive(prim) is not None or _in(prim, REAL_OF_REAL)
                             or module.startswith("s2sad.")):
        return "known"
    return "unknown"


def _in(prim, group):
    try:
        return prim in group
    except TypeError:       # an object that cannot be hashed
        return False


def _name(prim):
    return getattr(prim, "__name__", None)


def _names(atoms):
    return [a.id for a in atoms if isinstance(a, gast.Name)]


def _global_chain(node, src):
    while isinstance(node, gast.Attribute):
        node = node.value
    return isinstance(node, gast.Name) and not src.is_local(node.id)


def _is_module(obj):
    return type(obj).__name__ == "module"
