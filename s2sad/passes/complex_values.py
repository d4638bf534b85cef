"""Complex values: refuse complex numbers where they meet a differentiated value, and
check at run time the values whose type only the run tells.

Takes the function in Wengert form and changes nothing but adding run-time checks
(below). s2sad's rules are those of real numbers (complex support is issue #40): where a
complex value meets a value that depends on the differentiated inputs (`ctx.varied`),
the derivative would be wrong, or a complex number, without a word. A forward data flow
over the names (to a fixed point over loops) finds whether each holds

- a complex value: a complex literal (`1j`), `complex(...)`, a function of `cmath`, a
  complex NumPy type (`np.complex128(...)`) or dtype (`dtype=complex`,
  `.astype("complex64")`), `np.fft` (and `scipy.fft`), `np.emath` (`np.lib.scimath`), a
  complex global or closure value, and what is computed from one, but its modulus,
  phase, real or imaginary part (`abs(z)`, `np.angle(z)`, `z.real`);
- a value of unknown type: an argument of a type the code is not specialised on (a
  complex array is one, see compilation.kinds_of), what a function without a rule
  returns (`np.roots(p)`, `np.linalg.eig(a)`, a library's), or a Python function called
  with no differentiated argument (which runs as it is), a field of an object, and what
  is computed from one;
- a real value: the rest. Arguments specialised as floats, ints or arrays are real: the
  guards test their class, and the dtype of the arrays (the context's `assumed_real`
  names those not differentiated that the code reads, for the guards to test); a Python
  function called with differentiated values is compiled with this pass too, which
  checks what it returns; a rule of the user's (`defvjp`, `custom_vjp`) is trusted.

Where a statement makes a complex value from a differentiated one (`np.exp(1j * x)`,
`x.astype(complex)`, `np.fft.fft(x)`), or computes a differentiated value from a complex
one, compilation stops with a located `ComplexValueError` that says where the complex
value comes from and what to write instead; so do `np.linalg.eig`, `np.linalg.eigvals`
and `np.roots` of a differentiated value, which give complex values for some real ones.
A value of unknown type that such a statement computes with is checked just before it,
at run time (once, before the loops that do not bind it), by
`_s2s_check_real(v, _s2s_file, line)`, which raises that error if it is complex; so is
a value of unknown type the function returns, which a caller takes as real. Code whose
values are all real, as code of floats and arrays is, gets no check.

>>> import s2sad
>>> try:
...     show("complex_values", '''
... def f(x):
...     z = np.exp(1j * x)
...     return np.sum(np.abs(z * x))
... ''', arrays=True)
... except s2sad.ComplexValueError as exc:
...     print(str(exc).split(": ", 1)[1].split(";")[0])
the complex literal 1j makes a complex value of x, which s2sad differentiates
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

from .. import syntax
from ..analysis.operations import COPY, CUSTOM, NONDIFF, PACK, USER
from ..compilation import SPECIALISED
from ..errors import ComplexValueError
from ..frontend.source import MISSING
from ..rules import registry, runtime
from ..rules.arrays import is_duck_array_type

REAL, UNKNOWN = "real", "unknown"


class Complex:
    """The state of a name that holds a complex value: `what` made it, in statement
    `stmt` (None for an argument or a global)."""

    def __init__(self, what, stmt=None):
        self.what, self.stmt = what, stmt


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

#: Functions of np.fft (and scipy.fft) that make no complex value of a real one.
FFT_REAL = {"fftfreq", "rfftfreq", "fftshift", "ifftshift", "next_fast_len"}
#: ... and those that make a real value of a complex one.
FFT_TO_REAL = {"irfft", "irfft2", "irfftn", "hfft"}
#: The functions of cmath that give real numbers.
CMATH_REAL = {"phase", "polar", "isfinite", "isinf", "isnan", "isclose"}

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
    checks = analysis.checks(varied)
    ctx.assumed_real = analysis.assumed(varied)
    if checks:
        _insert(fn, checks, ctx)
        ctx.changed()
    return fn


class _Analysis:
    def __init__(self, fn, ctx):
        self.ctx, self.src = ctx, ctx.src
        self.ops = ctx.ops
        self.params = [a.id for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs]
        self.stmts = [s for s in syntax.statements(fn) if s is not fn]
        # names a check of generated code (differentiated again) already tests
        self.checked = {s.value.args[0].id for s in self.stmts if _is_check(s, ctx)}
        self.state = {p: self.param_state(p) for p in self.params}
        self.fixed_point()

    # -- what each name holds ---------------------------------------------------------
    def param_state(self, p):
        kind = self.ctx.kinds.get(p)
        if isinstance(kind, str):
            return REAL     # a callee's: its caller checked the arguments
        if kind in SPECIALISED or (isinstance(kind, type) and is_duck_array_type(kind)):
            return REAL     # guarded: the class, and for an array its dtype
        return UNKNOWN

    def fixed_point(self):
        changed = True
        while changed:
            changed = False
            for s in self.stmts:
                if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name):
                    target, new = s.targets[0].id, self.made(s)
                elif isinstance(s, gast.For) and isinstance(s.target, gast.Name):
                    target, new = s.target.id, self.joined(s.iter)
                else:
                    continue
                old = self.state.get(target)
                new = new if old is None else join(old, new)
                if old is None or _rank(new) != _rank(old):
                    self.state[target] = new
                    changed = True

    def made(self, s):
        """The state of the value of assignment `s`."""
        op = self.ops.get(s)
        value = s.value
        if op is None:
            return self.joined(value)
        prim = op.prim
        if op.form == NONDIFF and prim is None or _in(prim, REAL_RESULTS) or (
                getattr(prim, "__module__", None) == "math"):
            return REAL
        what = self.complex_op(s, op)
        if what is not None:
            if _name(prim) in FFT_TO_REAL:
                return REAL
            return Complex(what, s)
        if _in(prim, MAYBE_COMPLEX):
            return UNKNOWN
        if op.form == USER:
            return REAL if any(a in self.ctx.varied for a in _names(op.args)) else UNKNOWN
        if op.form == NONDIFF or _structural(op):
            return self.joined(value)
        if not (_known(prim) or op.form == CUSTOM):     # (a rule of the user's, trusted)
            return UNKNOWN      # a function s2sad knows nothing of
        state = self.joined(value)
        if state == UNKNOWN and s.targets[0].id in self.ctx.varied:
            return REAL         # (a differentiated value: `checks` checks the operands)
        return state

    def joined(self, node):
        out = REAL
        for _, state in self.operands(node):
            out = join(out, state)
        return out

    def operands(self, node):
        """(node, state) of the names and global values `node` reads (not the local
        function values it calls)."""
        if isinstance(node, gast.Name):
            if self.src.is_local(node.id):
                if node.id in self.checked:
                    yield node, REAL
                else:
                    yield node, self.state.get(node.id, REAL)
            else:
                yield node, self.object_state(node)
            return
        if isinstance(node, gast.Attribute) and _global_chain(node, self.src):
            yield node, self.object_state(node)
            return
        if isinstance(node, gast.Attribute) and isinstance(node.value, gast.Name) and (
                f"{node.value.id}.{node.attr}" in self.ctx.kinds
                and node.value.id in self.params):
            yield node, REAL     # a field the code is specialised on (and guards)
            return
        for child in gast.iter_child_nodes(node):
            if isinstance(node, gast.Call) and child is node.func and isinstance(
                    child, gast.Name):
                continue
            yield from self.operands(child)

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

    # -- complex operations -------------------------------------------------------------
    def complex_op(self, s, op):
        """What in `s` makes (or works on) complex values, said for a message, or None."""
        value = s.value
        for n in syntax.walk(value):
            if isinstance(n, gast.Constant) and isinstance(n.value, complex):
                return f"the complex literal {n.value!r}"
        prim = op.prim
        spelled = (syntax.unparse(value.func) if isinstance(value, gast.Call)
                   else syntax.unparse(value))
        if prim is complex or (isinstance(prim, type) and issubclass(prim, np.complexfloating)):
            return f"{spelled}(...)"
        module = str(getattr(prim, "__module__", None) or "")
        name = _name(prim)
        if module == "cmath" and name not in CMATH_REAL:
            return f"{spelled}() (cmath works on complex numbers)"
        if module.split(".")[0] in ("numpy", "scipy") and (
                ".fft" in module or "fftpack" in module) and name not in FFT_REAL:
            return f"{spelled}() (a Fourier transform, which gives complex values)"
        if "scimath" in module:
            return f"{spelled}() (np.emath gives complex values for some real arguments)"
        if isinstance(value, gast.Call):
            strings = isinstance(value.func, gast.Attribute) and value.func.attr in (
                "astype", "view") or _in(prim, {np.dtype})
            for k in value.keywords:
                if k.arg == "dtype" and _complex_dtype(self.constant(k.value, True)):
                    return f"dtype={syntax.unparse(k.value)}"
            for a in value.args:
                if _complex_dtype(self.constant(a, strings)):
                    return f"the complex dtype {syntax.unparse(a)}"
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
    def checks(self, varied):
        """[(statement, name)]: the names of unknown type to check before each statement;
        raise for a complex value that meets a differentiated one."""
        out = []
        for s in self.stmts:
            if isinstance(s, gast.Return) and isinstance(s.value, gast.Name):
                out += self.returned(s)
            if not (isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name)
                    and s.targets[0].id in varied):
                continue
            op = self.ops.get(s)
            first = next((n for n in syntax.names_loaded(s.value) if n in varied), None)
            # (a name of the user's, not a temporary of Wengert form)
            first = first if first in self.src.local_names else "a value"
            spelled = syntax.unparse(s.value)
            what = op is not None and self.complex_op(s, op)
            if what:
                raise self.refused(s, f"{what} makes a complex value of {first}, which "
                                      "s2sad differentiates")
            if op is not None and _in(op.prim, MAYBE_COMPLEX):
                raise self.refused(s, f"{spelled} of {first}, which s2sad differentiates, "
                                      "may give complex values", MAYBE_COMPLEX[op.prim])
            structural = op is None or _structural(op)
            for node, state in self.operands(s.value):
                if isinstance(state, Complex):
                    raise self.refused(s, f"{self.complex_value(node, state, s)} meets "
                                          f"{first} here, which s2sad differentiates")
                if state == UNKNOWN and not structural and isinstance(node, gast.Name) \
                        and node.id not in self.checked:
                    out.append((s, node.id))
        return out

    def returned(self, s):
        """The check of the value return statement `s` returns (which a caller that
        differentiates the function takes as real), or raise if it is complex."""
        name = s.value.id
        state = self.state.get(name, REAL) if self.src.is_local(name) else REAL
        if isinstance(state, Complex):
            raise self.refused(s, f"the function returns "
                                  f"{self.complex_value(s.value, state, s)}")
        return [(s, name)] if state == UNKNOWN and name not in self.checked else []

    def complex_value(self, node, state, s):
        """The complex value `node` (of `state`) read in statement `s`, said for a
        message: where it comes from."""
        if state.stmt is None:
            return state.what       # a global: "C, a complex128 array"
        if self.src.lineno(state.stmt) == self.src.lineno(s):
            return f"a complex value ({state.what})"
        return (f"a complex value ({state.what}, line {self.src.lineno(state.stmt)}: "
                f"{self.src.line_text(state.stmt).strip()})")

    def refused(self, s, what, instead=None):
        return ComplexValueError(
            f"{self.src.where(s)}: {what}; complex numbers are not supported yet (s2sad's "
            "rules are those of real numbers, so the derivative would be wrong). "
            f"{instead or INSTEAD}\n    {self.src.line_text(s).strip()}")

    def assumed(self, varied):
        """The array arguments not differentiated (and fields) whose values reach a
        statement with a differentiated value: taken as real, which the guards test."""
        reads = {}
        for s in self.stmts:
            if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name):
                reads.setdefault(s.targets[0].id, set()).update(self.read(s.value))
        reached = set()
        todo = [n for s in self.stmts if isinstance(s, gast.Assign)
                and isinstance(s.targets[0], gast.Name) and s.targets[0].id in varied
                for n in self.read(s.value)]
        while todo:
            n = todo.pop()
            if n not in reached:
                reached.add(n)
                todo.extend(reads.get(n, ()))
        wrt = set(self.ctx.wrt)
        arrays = {p for p, k in self.ctx.kinds.items() if k is np.ndarray or (
            isinstance(k, type) and is_duck_array_type(k))}
        return {p for p in arrays & reached if p not in wrt}

    def read(self, node):
        out = set(syntax.names_loaded(node))
        out |= {f"{n.value.id}.{n.attr}" for n in syntax.walk(node)
                if isinstance(n, gast.Attribute) and isinstance(n.value, gast.Name)}
        return out


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


def _structural(op):
    """Whether `op` moves values into or out of a container without computing with them:
    what it reads is checked where it is computed with."""
    return op.form in (COPY, PACK) or _in(op.prim, {operator.getitem, getattr,
                                                   runtime.setitem, runtime.append})


def _known(prim):
    """Whether s2sad knows `prim`: a rule (then its result is real for real arguments),
    one of its own helpers, or a function that gives real values of real ones."""
    return prim is not None and (registry.primitive(prim) is not None or _in(
        prim, REAL_OF_REAL) or str(getattr(prim, "__module__", None) or "").startswith(
        "s2sad."))


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
