"""`jacfwd(f, backend="numba")` along all its directions in one compiled pass: the numba
backend's `f_jvp` (numba_api.NumbaJvp) rewritten so that the primal runs once and each
tangent statement runs once per direction, `f_jvp_directions(x, ..., x_dot, ...)` with
each tangent a Numba typed list of one tangent per direction.

In each list of statements (a function's body, a branch, a loop's body) the consecutive
tangent statements are gathered into one loop over the directions `_s2s_k`, which runs
after the primal statements between them: a primal statement moves before the tangent
statements above it only when it binds no name they read and writes into no array (a
write, an augmented assignment, a call as a statement, a call of a function of the
user's: what could change a value they read), else it closes the loop before it. Inside
the loop a tangent every occurrence of which is in that loop, first bound there, is a
plain local (one direction's, in the cache while the loop's statements use it); any
other (a parameter's, one a loop carries, one read after the loop) is a typed list with
one item per direction, read and bound at `_s2s_k`, so that each direction's tangents
are bound and share arrays as the single-direction code's do. A call of a callee's
`g_jvp` calls its own such code, its tangents lists; `return (y, y_dot)` returns the list
of `y_dot`s, a new one.

Inside a loop over the directions, a tangent that is zero along a direction is tested at
run time (`_s2s_nonzero`, which stops at its first element not zero) before the
statements it reaches, which are then skipped (`Guard`): the tangent of a hand's bone
along the angle of another finger is zero, and the product of its transform with the
10,000 vertices is not computed. A product, slice or transpose of a zero is a zero; a sum
with a zero is the other term (`_s2s_plus_zero`: of the sum's shape, its primal's); a
zero that lives beyond the loop is made (`_s2s_zeros_like` of its primal). A tangent
exactly zero is taken for a zero, as a symbolic zero is (a product of it with an
infinite or NaN primal is not computed).

What the rewrite does not follow is refused (`Refused`), and `jacfwd` then takes one pass
a direction: a statement that binds a primal and a tangent other than a callee's call, a
primal computed from a tangent, an `if` or loop on a tangent, code that is not plain
statements. (With many directions, the primal once saves the time of the primal in each
pass; the tangent statements still run once a direction.) The rewritten code is kept on
disk as the numba backend's derivatives are (`_on_disk`, native_cache's digest).
"""
from __future__ import annotations

import ast
import copy
import hashlib
import warnings
import weakref

import numpy as np

from . import native_cache
from .frontend.source import function_from_source

K, LOOP = "_s2s_k", "_s2s_directions"     # (the direction, and how many there are)


class Refused(Exception):
    """The code is not of a form the rewrite follows (jacfwd then loops over columns)."""


def compiled(d, made=None):
    """The Numba dispatcher of `f_jvp_directions` for the numba backend's derivative `d`
    (a `driver.Derivative` of forward mode, compiled), its callees' such code made too
    (`made`: {id(derivative): dispatcher or None while it is made}). Raises Refused."""
    import numba
    from numba.typed import List
    if made is None:        # (a call from the API: kept while the derivative lives)
        kept = _kept.get(d)
        if kept is None:
            try:
                kept = _kept[d] = compiled(d, {})
            except Refused as exc:
                kept = _kept[d] = exc
        if isinstance(kept, Refused):
            raise kept
        return kept
    if id(d) in made:
        if made[id(d)] is None:
            raise Refused("recursion")
        return made[id(d)]
    made[id(d)] = None
    dots = getattr(d, "tangent_of", None)
    if not dots or d.tangent_names is None:
        raise Refused("no tangent names")
    code = d.fn.__code__
    if code.co_kwonlyargcount or code.co_flags & 0x0C:        # (*args, **kwargs)
        raise Refused("parameters")
    d.native        # (binds the functions it calls to their Numba dispatchers)
    namespace = dict(d.fn.__globals__)
    for name, cell in zip(code.co_freevars, d.fn.__closure__ or ()):
        namespace[name] = cell.cell_contents
    callees = {}
    for name, callee in d.callees:
        linked = d.linked.get(name)
        if callee.variant.value == "jvp" and linked is not None:
            callees[name] = linked
    tree = ast.parse(d.source)
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef))
    fn.body = _unfused(fn.body)
    source = Rewrite(set(dots.values()) | set(d.tangent_names), list(d.tangent_names),
                     set(callees), set(getattr(d, "native_calls", {})),
                     {t: p for p, t in dots.items()}).function(fn)
    for name, linked in callees.items():
        namespace[name] = compiled(linked, made)
    namespace["List"] = List
    namespace["_s2s_nonzero"], namespace["_s2s_plus_zero"] = _helpers()
    jit = {k: v for k, v in d.jit.items() if k != "cache"}
    py = _on_disk(d, fn.name, source, namespace)
    if py is None:
        py = function_from_source(source, namespace, own=True)
    else:
        jit["cache"] = True
    made[id(d)] = numba.njit(**jit)(py)
    made[id(d)].directions_source = source
    return made[id(d)]


def _unfused(stmts):
    """`stmts` with each run of elementwise statements the numba backend fused into one
    loop (after_ad/native_fuse.py: `if isinstance(_s2s_fusable(...), float) and ...:
    <the loop> else: <the statements>`) as the statements it stands for, which the
    rewrite puts in its loop over the directions (as frontend/source.unfused does for
    gast)."""
    out = []
    for s in stmts:
        if isinstance(s, ast.If) and ast.unparse(s.test).startswith("isinstance(_s2s_fusable"):
            out += _unfused(s.orelse)
        else:
            out.append(s)
    return out


def _on_disk(d, name, source, namespace):
    """The function `name` of `source` defined in a module file of s2sad's cache directory
    (native_cache), so that Numba keeps its machine code on disk, its names `namespace`;
    None where native_cache's digest cannot follow what `d`'s code reads and calls (then
    Numba compiles it in each process). The module is named by that digest, this module's
    source and `source`."""
    key = native_cache._key(d.fn, d.jit, d.native_calls, d.native_late())
    if key is None:
        return None
    with open(__file__) as f:
        own = f.read()
    digest = hashlib.sha256("\n".join((key, own, source)).encode()).hexdigest()[:32]
    module = native_cache.module_on_disk(
        f"s2sad_{name}_{digest}", f"# s2sad: {name}, compiled by Numba and kept on disk\n"
        f"{source}", {k: v for k, v in namespace.items() if not k.startswith("__")})
    if module is None:
        return None
    return module.__dict__[name]


_kept = weakref.WeakKeyDictionary()     # {derivative: its dispatcher, or Refused}


def call(dispatcher, primals, tangents):
    """`(y, [y_dot for each direction])`: `tangents`, arrays whose first axis runs over
    the directions (one per parameter differentiated)."""
    from numba.core.errors import NumbaTypeSafetyWarning
    with warnings.catch_warnings():     # (the lists' item types, inferred after use)
        warnings.simplefilter("ignore", NumbaTypeSafetyWarning)
        return dispatcher(*primals, *map(_rows(), tangents))


def stacked(y, lists):
    """The Jacobian as an array (y's elements, the directions) from `lists`, the typed
    lists of y_dots `call` gave (one a pass, in order), written in Numba code in blocks
    of rows (a row of each column at a time: `np.stack(columns, -1)` writes with a stride
    of the number of directions); None unless `y` and the y_dots are arrays of float64
    of one shape."""
    import numba
    if not (isinstance(y, np.ndarray) and y.dtype == np.float64 and y.ndim and lists):
        return None
    item = lists[0]._numba_type_.item_type
    if not (isinstance(item, numba.types.Array) and item.dtype == numba.float64
            and item.ndim == y.ndim):
        return None
    out = np.empty((y.size, sum(len(cols) for cols in lists)))
    start = 0
    for cols in lists:
        if not _into()(cols, out, start, y.shape):
            return None
        start += len(cols)
    return out


def _into():
    global _INTO
    if _INTO is None:
        import numba
        from numba.typed import List

        @numba.njit(cache=True)
        def into(cols, out, start, shape):
            flat = List()
            for k in range(len(cols)):
                if cols[k].shape != shape:
                    return False
                flat.append(np.ascontiguousarray(cols[k]).reshape(-1))
            for i0 in range(0, out.shape[0], 256):
                i1 = min(i0 + 256, out.shape[0])
                for k in range(len(flat)):
                    column = flat[k]
                    for i in range(i0, i1):
                        out[i, start + k] = column[i]
            return True
        _INTO = into
    return _INTO


_INTO = None


def _rows():
    global _ROWS
    if _ROWS is None:
        import numba
        from numba.typed import List

        @numba.njit
        def rows(a):
            out = List()
            for k in range(a.shape[0]):
                out.append(a[k])
            return out
        _ROWS = rows
    return _ROWS


_ROWS = None


def _names(node, ctx=None):
    """The names `node` reads (ctx ast.Load) or binds (ast.Store), or all."""
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)
            and (ctx is None or isinstance(n.ctx, ctx))}


def _stored(target):
    """The names an assignment target binds or writes into."""
    if isinstance(target, ast.Name):
        return {target.id}
    if isinstance(target, (ast.Tuple, ast.List)):
        return set().union(*map(_stored, target.elts))
    if isinstance(target, (ast.Subscript, ast.Attribute)):
        return _stored(target.value)
    if isinstance(target, ast.Starred):
        return _stored(target.value)
    raise Refused("target")


# NumPy's functions that write into an argument, and the methods of arrays that write
# nothing (any other method may write into its array)
_WRITING = {"copyto", "put", "place", "putmask", "fill_diagonal", "put_along_axis"}
_READING = {"copy", "reshape", "ravel", "flatten", "transpose", "sum", "prod", "dot",
            "astype", "item", "max", "min", "mean", "any", "all", "conj", "nonzero"}


def _may_write(call, users):
    """Whether `call` may write into an array it is given: a function of the user's, a
    call with `out=`, NumPy's functions that write, a method of an array that may."""
    f = call.func
    if any(k.arg == "out" for k in call.keywords):
        return True
    if isinstance(f, ast.Name):
        return f.id in users
    if isinstance(f, ast.Attribute):
        if isinstance(f.value, ast.Name) and f.value.id == "np":
            return f.attr in _WRITING
        return f.attr not in _READING
    return True


def _roots(value):
    """The names whose arrays `value` may be (or be a view of)."""
    if isinstance(value, ast.Name):
        return {value.id}
    if isinstance(value, (ast.Subscript, ast.Attribute, ast.Starred)):
        return _roots(value.value)
    if isinstance(value, (ast.Tuple, ast.List)):
        return set().union(set(), *map(_roots, value.elts))
    if isinstance(value, ast.IfExp):
        return _roots(value.body) | _roots(value.orelse)
    if isinstance(value, (ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp, ast.Constant)):
        return set()
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and (
            value.func.attr == "copy" and not value.args):
        return set()            # (x.copy(): a new array)
    return _names(value)        # (a call: its result may be an argument, or a view of one)


def _sharing(fn):
    """shares(name): the names of `fn` that may hold an array sharing memory with name's
    (those bound from one another: views, the same array, a call's result), for the
    barrier of a write; arithmetic and comparisons make new values."""
    parent = {}

    def root(n):
        while parent.get(n, n) != n:
            n = parent[n]
        return n
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and not isinstance(
                node.value, (ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp, ast.Constant)):
            names = set().union(*map(_stored, node.targets)) | _roots(node.value)
            first = root(next(iter(names))) if names else None
            for n in names:
                parent[root(n)] = first
    groups = {}
    for n in list(parent):
        groups.setdefault(root(n), set()).add(n)
    return lambda n: groups.get(root(n), {n}) | {n}


class Rewrite:
    """The rewrite of one `f_jvp` (see the module docstring): `tangents` the names of its
    tangents, `params` those of its tangent parameters, `callees` the names of the
    callees' `g_jvp` it calls, `users` those of the user's functions it calls."""

    def __init__(self, tangents, params, callees, users, primal_of=None):
        self.primal_of = primal_of or {}
        self.tangents, self.params, self.callees, self.users = (tangents, params, callees,
                                                                users)
        self.segments = []      # [[statements]]: the loops over the directions
        self.moved_after = {}   # {id(tangent statement): {names bound by primal
        #                          statements after it, moved above its loop}}
        self.where = {}         # {tangent: {segment index or -1 (outside a loop)}}
        self.first_bound = {}   # {tangent: whether its first occurrence binds it}

    def function(self, fn):
        self.shares = _sharing(fn)
        self.unsafe = _written(fn)
        body = self.block(fn.body)
        lists = {t for t, where in self.where.items() if len(where) > 1 or -1 in where
                 or not self.first_bound.get(t, False)} | set(self.params)
        body = self.finished(body, lists)
        given = [f"{p}_given" for p in self.params]
        args = fn.args
        names = [a.arg for a in args.args]
        for p in self.params:
            if p not in names:
                raise Refused("tangent parameter")
            args.args[names.index(p)].arg = f"{p}_given"
        prologue = [f"{LOOP} = len({given[0]})"]
        for p, g in zip(self.params, given):
            prologue += [f"{p} = List()", f"for {K} in range({LOOP}):\n"
                         f"    {p}.append({g}[{K}])"]
        for t in sorted(lists - set(self.params) - self.bound_by_calls):
            prologue.append(f"{t} = List()")
        fn.body = [ast.parse(s).body[0] for s in prologue] + body
        fn.name = fn.name + "_directions"
        fn.decorator_list = []
        return ast.unparse(ast.fix_missing_locations(fn)) + "\n"

    # -- gathering the tangent statements into loops over the directions

    def block(self, stmts):
        out, pending = [], []

        def flush():
            if pending:
                out.append(("loop", len(self.segments)))
                self.segments.append(list(pending))
                for p in pending:
                    self.note(p, len(self.segments) - 1)
                pending.clear()
        for s in stmts:
            kind = self.kind(s)
            if kind == "tangent":
                pending.append(s)
            elif kind == "primal":
                if self.barrier(s, pending):
                    flush()
                for p in pending:   # (it moves before them: names bound after each)
                    self.moved_after.setdefault(id(p), set()).update(_names(s, ast.Store))
                out.append(s)
            elif kind == "call":
                flush()
                self.note(s, -1)
                out.append(s)
            elif kind == "return":
                flush()
                self.note(s.value.elts[1], -1)
                out.append(s)
            else:           # if, for, while, break, continue, pass
                flush()
                for field in ("body", "orelse"):
                    if hasattr(s, field):
                        setattr(s, field, self.block(getattr(s, field)))
                out.append(s)
        flush()
        return out

    def note(self, node, segment):
        """Record where the tangents of statement `node` occur (`segment`, -1 outside the
        loops), and whether each one's first occurrence binds it."""
        reads = _names(node, ast.Load) & self.tangents
        if isinstance(node, ast.AugAssign):         # (it reads what it binds)
            reads |= _stored(node.target) & self.tangents
        for t in (_names(node) & self.tangents):
            self.where.setdefault(t, set()).add(segment)
        for t in reads if segment >= 0 else _names(node) & self.tangents:
            self.first_bound.setdefault(t, False)
        for t in _names(node, ast.Store) & self.tangents:
            self.first_bound.setdefault(t, True)

    def kind(self, s):
        kind = self._kind(s)
        if kind != "call" and not isinstance(s, (ast.If, ast.While, ast.For)) and (
                _names(s) & self.callees):
            raise Refused("a callee's forward mode called otherwise")
        return kind

    def _kind(self, s):
        T = self.tangents
        if isinstance(s, ast.Assign):
            stored = set().union(*map(_stored, s.targets))
            reads = _names(s.value) | set().union(*(_names(t, ast.Load) for t in s.targets))
            if stored <= T:
                return "tangent"
            if not stored & T:
                if reads & T:
                    raise Refused("a primal computed from a tangent")
                return "primal"
            if (len(s.targets) == 1 and isinstance(s.targets[0], ast.Tuple)
                    and isinstance(s.value, ast.Call) and isinstance(s.value.func, ast.Name)
                    and s.value.func.id in self.callees and not s.value.keywords
                    and all(isinstance(e, ast.Name) for e in s.targets[0].elts)
                    and all(isinstance(a, ast.Name) or not _names(a) & T
                            for a in s.value.args)):
                return "call"
            raise Refused("a statement binding a primal and a tangent")
        if isinstance(s, ast.AugAssign):
            if _stored(s.target) <= T:
                return "tangent"
            if _names(s) & T:
                raise Refused("a primal computed from a tangent")
            return "primal"
        if isinstance(s, ast.Expr):
            if _names(s) & T:
                raise Refused("a tangent in an expression statement")
            return "primal"
        if isinstance(s, ast.Return):
            v = s.value
            if not (isinstance(v, ast.Tuple) and len(v.elts) == 2 and not _names(v.elts[0]) & T):
                raise Refused("return")
            return "return"
        if isinstance(s, (ast.If, ast.While)):
            if _names(s.test) & T:
                raise Refused("a test on a tangent")
            return "control"
        if isinstance(s, ast.For):
            if (_names(s.iter) | _names(s.target)) & T or s.orelse:
                raise Refused("a loop over a tangent")
            return "control"
        if isinstance(s, (ast.Break, ast.Continue, ast.Pass)):
            return "control"
        raise Refused(type(s).__name__)

    def barrier(self, s, pending):
        """Whether primal statement `s` must stay after the pending tangent statements."""
        if not pending:
            return False
        read = set().union(*(_names(p, ast.Load) for p in pending))
        if isinstance(s, ast.Assign) and all(isinstance(t, ast.Subscript) and isinstance(
                t.value, ast.Name) for t in s.targets):
            # (a write into an array: a barrier if they read it, or what may share it)
            return any(self.shares(t.value.id) & read for t in s.targets) or any(
                isinstance(n, ast.Call) and _may_write(n, self.users)
                for n in ast.walk(s.value))
        if not (isinstance(s, ast.Assign) and all(isinstance(t, (ast.Name, ast.Tuple))
                                                  for t in s.targets)):
            return True         # (an augmented assignment, a call as a statement)
        if any(isinstance(n, ast.Call) and _may_write(n, self.users)
               for n in ast.walk(s.value)):
            return True
        return bool(set().union(*map(_stored, s.targets)) & read)

    # -- writing the loops, with the tangents that live beyond one loop as lists

    @property
    def bound_by_calls(self):
        return getattr(self, "_by_calls", set())

    def finish(self, s, lists):
        if isinstance(s, tuple):
            return self.loop(self.segments[s[1]], lists)
        if isinstance(s, ast.Assign) and isinstance(s.value, ast.Call) and (
                isinstance(s.value.func, ast.Name) and s.value.func.id in self.callees) and (
                _stored(s.targets[0]) & self.tangents):
            self._by_calls = self.bound_by_calls | (_stored(s.targets[0]) & self.tangents)
            return s        # (its tangents, lists: the callee's code takes and gives lists)
        if isinstance(s, ast.Return):
            r = "_s2s_out"
            value = _Indexed(lists).visit(s.value.elts[1])
            head = ast.parse(f"{r} = List()\nfor {K} in range({LOOP}):\n"
                             f"    {r}.append(0)").body
            head[1].body[0].value.args[0] = value
            s.value.elts[1] = ast.Name(r, ast.Load())
            return head + [s]
        for field in ("body", "orelse"):
            if hasattr(s, field):
                setattr(s, field, self.finished(getattr(s, field), lists))
        return s

    def finished(self, stmts, lists):
        out = []
        for s in stmts:
            made = self.finish(s, lists)
            out.extend(made if isinstance(made, list) else [made])
        return out

    def loop(self, stmts, lists):
        guard = Guard(self, lists).find(stmts)
        if guard is None:
            body = self.bodied(stmts, lists)
        else:
            at, seed, zero = guard
            test = ast.parse(f"if _s2s_nonzero({seed}):\n    pass\nelse:\n    pass").body[0]
            test.test = _Indexed(lists).visit(test.test)
            test.body = self.bodied(stmts[at + 1:], lists)
            test.orelse = self.bodied(zero, lists) or [ast.Pass()]
            body = self.bodied(stmts[:at + 1], lists) + [test]
        return ast.For(ast.Name(K, ast.Store()), ast.parse(f"range({LOOP})").body[0].value,
                       body, [])

    def bodied(self, stmts, lists):
        body = []
        for s in stmts:
            if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(
                    s.targets[0], ast.Name) and s.targets[0].id in lists:
                t = s.targets[0].id
                body += ast.parse(f"_s2s_v = 0\nif {K} < len({t}):\n    {t}[{K}] = _s2s_v\n"
                                  f"else:\n    {t}.append(_s2s_v)").body
                body[-2].value = _Indexed(lists).visit(s.value)
                continue
            if isinstance(s, ast.Assign) and any(
                    isinstance(t, ast.Name) and t.id in lists for t in ast.walk(s.targets[0])
                    if isinstance(getattr(t, "ctx", None), ast.Store)):
                raise Refused("a tuple of tangents bound")
            body.append(_Indexed(lists).visit(s))
        return body


class _Zero(Exception):
    """A statement a zero tangent reaches that the guard does not follow."""


ZERO = object()      # (a value known to be zero along the direction)

# the calls whose result is a zero where their first operand is one (its shape changed)
_ZERO_METHODS = {"ravel", "copy", "reshape", "transpose", "flatten", "squeeze"}
_ZERO_CALLS = {"_s2s_broadcast_like"}
_FRESH = {"copy", "_s2s_zeros_like", "zeros", "zeros_like", "empty", "ones", "eye", "full",
          "empty_like", "ones_like", "full_like"}


def _seed(s):
    """The tangent statement `s` binds (`t = ...`), or writes an element of (`t[i] = ...`:
    tested after the write), or None."""
    if not (isinstance(s, ast.Assign) and len(s.targets) == 1):
        return None
    t = s.targets[0]
    if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name):
        return t.value.id
    return t.id if isinstance(t, ast.Name) else None


def _product(node):
    """Whether `node` is a product of arrays (`@`, `np.dot` and the like): the work a
    zero test is worth (a test stops at the first element not zero; a zero tested in full
    saves a product that reads it at least once)."""
    if isinstance(node, ast.BinOp):
        return isinstance(node.op, ast.MatMult)
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and (
        node.func.attr in {"dot", "matmul", "outer", "einsum", "tensordot", "kron", "inner"})


class Guard:
    """The test of a tangent zero along a direction, in one loop over the directions: the
    first tangent statement `t = ...` after which the statements that `t` being zero
    makes zero (or simpler) include a product of arrays, and those statements as they are
    where `t` is zero (`find`). A tangent bound zero that lives beyond the loop (a list)
    is made by `_s2s_zeros_like` of its primal; a sum with a zero is `_s2s_plus_zero(the
    other term, its primal)`, which is the other term itself where the shapes agree (so
    neither it nor the other term may be written into: `Rewrite.unsafe`)."""

    def __init__(self, rewrite, lists):
        self.rw, self.lists = rewrite, lists

    def find(self, stmts):
        for i, s in enumerate(stmts[:-1]):
            seed = _seed(s)
            if seed is None:
                continue
            try:
                zero, skipped = self.zeroed(stmts[i + 1:], seed)
            except _Zero:
                continue
            if any(_product(n) for k in skipped for n in ast.walk(k.value)):
                return i, seed, zero
        return None

    def zeroed(self, stmts, seed):
        """`stmts` where `seed` is zero, and the statements made zero or simpler."""
        zeros, out, skipped = {seed}, [], []
        for s in stmts:
            if not _names(s) & zeros:
                out.append(copy.deepcopy(s))
                continue
            if not (isinstance(s, ast.Assign) and len(s.targets) == 1
                    and isinstance(s.targets[0], ast.Name)):
                raise _Zero(s)
            x = s.targets[0].id
            value, summed = self.value(s.value, zeros)
            if value is ZERO and x not in self.lists:
                zeros.add(x)
            elif value is ZERO:
                out.append(self.assign(x, "_s2s_zeros_like", self.primal(x, s)))
            elif summed:
                if x in self.rw.unsafe or _roots(value) & self.rw.unsafe:
                    raise _Zero(s)
                out.append(self.assign(x, "_s2s_plus_zero", value, self.primal(x, s)))
            else:
                out.append(ast.Assign([ast.Name(x, ast.Store())], value))
            if value is not ZERO:
                zeros.discard(x)
            skipped.append(s)
        return [ast.fix_missing_locations(s) for s in out], skipped

    def primal(self, x, s):
        """The primal of tangent `x` as its statement `s` sees it (its shape `x`'s)."""
        p = self.rw.primal_of.get(x)
        if p is None or p in self.rw.tangents or p in self.rw.moved_after.get(id(s), ()):
            raise _Zero(x)      # (none, or bound again before the loop)
        return ast.Name(p, ast.Load())

    @staticmethod
    def assign(x, helper, *args):
        return ast.Assign([ast.Name(x, ast.Store())],
                          ast.Call(ast.Name(helper, ast.Load()), list(args), []))

    def value(self, e, zeros):
        """(`e` where the names `zeros` are zero: ZERO, or an expression; whether it is a
        sum with a zero term left out). Raises _Zero where it does not follow."""
        v = self.term(e, zeros)
        if v is not ZERO and isinstance(e, ast.BinOp) and isinstance(e.op, (ast.Add, ast.Sub)):
            left, right = self.term(e.left, zeros), self.term(e.right, zeros)
            if left is ZERO or right is ZERO:
                return v, True
        return v, False

    def term(self, e, zeros):
        if not _names(e) & zeros:
            return copy.deepcopy(e)
        if isinstance(e, ast.Name):
            return ZERO
        if isinstance(e, (ast.Subscript, ast.Attribute)):
            if isinstance(e, ast.Subscript) and _names(e.slice) & zeros:
                raise _Zero(e)
            if isinstance(e, ast.Attribute) and e.attr != "T":
                raise _Zero(e)
            if self.term(e.value, zeros) is ZERO:
                return ZERO
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, (ast.USub, ast.UAdd)) and (
                self.term(e.operand, zeros) is ZERO):
            return ZERO
        if isinstance(e, ast.Call) and not e.keywords and e.args and not any(
                _names(a) & zeros for a in e.args[1:]):
            f = e.func
            if isinstance(f, ast.Attribute) and f.attr in _ZERO_METHODS and not (
                    _names(e.args[0]) & zeros) and self.term(f.value, zeros) is ZERO:
                return ZERO
            if isinstance(f, ast.Name) and f.id in _ZERO_CALLS and self.term(
                    e.args[0], zeros) is ZERO:
                return ZERO
        if isinstance(e, ast.Call) and not e.args and not e.keywords and isinstance(
                e.func, ast.Attribute) and e.func.attr in _ZERO_METHODS and self.term(
                e.func.value, zeros) is ZERO:
            return ZERO
        if isinstance(e, ast.BinOp):
            left, right = self.term(e.left, zeros), self.term(e.right, zeros)
            if isinstance(e.op, (ast.Mult, ast.MatMult)) and ZERO in (left, right):
                return ZERO
            if isinstance(e.op, ast.Div) and left is ZERO:
                return ZERO
            if isinstance(e.op, (ast.Add, ast.Sub)):
                if left is ZERO and right is ZERO:
                    return ZERO
                if right is ZERO:
                    return left
                if left is ZERO and isinstance(e.op, ast.Add):
                    return right
                if left is ZERO:
                    return ast.UnaryOp(ast.USub(), right)
        raise _Zero(e)


def _written(fn):
    """The names whose arrays a statement of `fn` may write into other than just after it
    made them (`x = y.copy()` then `x[i] = v`), and the names whose arrays may be theirs
    or views of them (bound from one another other than by arithmetic or a copy)."""
    out, parent = set(), {}

    def root(n):
        while parent.get(n, n) != n:
            n = parent[n]
        return n

    def scan(stmts):
        fresh = set()
        for s in stmts:
            for field in ("body", "orelse"):
                if hasattr(s, field):
                    scan(getattr(s, field))
            if isinstance(s, ast.Assign):
                for t in s.targets:
                    if isinstance(t, ast.Subscript) and not _roots(t) <= fresh:
                        out.update(_roots(t))
                fresh -= _names(s.value)
                made = _made(s.value)
                stored = set().union(*(_stored(t) for t in s.targets
                                       if not isinstance(t, ast.Subscript)))
                names = stored | (set() if made or not stored else _roots(s.value))
                for n in names:
                    parent[root(n)] = root(next(iter(names)))
                fresh -= stored
                if made:
                    fresh |= {t.id for t in s.targets if isinstance(t, ast.Name)}
            elif isinstance(s, ast.AugAssign):
                out.update(_roots(s.target))
            else:
                fresh.clear()
    scan(fn.body)
    roots = {root(n) for n in out}
    return {n for n in parent if root(n) in roots} | out


def _made(value):
    """Whether `value` is a new array or number (arithmetic, a copy, an array made); not a
    sum or difference, which a guard may make one of its terms (`_s2s_plus_zero`)."""
    if isinstance(value, ast.BinOp):
        return not isinstance(value.op, (ast.Add, ast.Sub))
    if isinstance(value, (ast.UnaryOp, ast.Compare, ast.BoolOp, ast.Constant)):
        return True
    return isinstance(value, ast.Call) and (
        isinstance(value.func, ast.Attribute) and value.func.attr == "copy"
        or isinstance(value.func, ast.Attribute) and isinstance(value.func.value, ast.Name)
        and value.func.value.id == "np" and value.func.attr in _FRESH
        or isinstance(value.func, ast.Name) and value.func.id in _FRESH)


def _helpers():
    """`_s2s_nonzero(a)`: whether an element of `a` (an array or a number) is not 0 (NaN
    is not); `_s2s_plus_zero(a, like)`: `a` plus a zero of `like`'s shape, `a` itself
    where their shapes agree."""
    global _HELPERS
    if _HELPERS is None:
        import numba
        import numpy as np
        from numba.extending import overload

        @numba.njit
        def nonzero(a):
            for v in np.asarray(a).ravel():
                if v != 0:
                    return True
            return False

        def plus_zero(a, like):
            return a + np.zeros(np.shape(like))

        @overload(plus_zero)
        def _plus_zero(a, like):
            if getattr(a, "ndim", 0) != getattr(like, "ndim", 0):
                return lambda a, like: a + np.zeros(np.shape(like))

            def same(a, like):
                if np.shape(a) == np.shape(like):
                    return a
                return a + np.zeros(np.shape(like))
            return same
        _HELPERS = nonzero, plus_zero
    return _HELPERS


_HELPERS = None


class _Indexed(ast.NodeTransformer):
    """Each occurrence of a tangent held as a list as its item of the direction `_s2s_k`."""

    def __init__(self, lists):
        self.lists = lists

    def visit_Name(self, node):
        if node.id in self.lists:
            return ast.Subscript(ast.Name(node.id, ast.Load()), ast.Name(K, ast.Load()),
                                 node.ctx)
        return node
