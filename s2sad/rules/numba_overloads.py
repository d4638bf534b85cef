"""The Numba versions of the runtime helpers the numba backend's code may call (see
numba_runtime): `numba_NAME` is an overload (numba.extending.overload) of `runtime.NAME`
that picks, from the Numba types of the arguments, the plain NumPy code for them. Each
is a definition of its own, so that `s2sad.export(f, backend="numba")` copies those its
code calls. Importing this module imports Numba and registers them (numba_runtime's
`register` does, when Numba is first used).
"""
import numpy as np
from numba import types
from numba.core.errors import TypingError
from numba.extending import overload, register_jitable

from ..errors import ComplexValueError, CustomRuleError, defined_at
from . import fusion, layout, products, runtime, tangents


def numeric_type(t):
    return isinstance(t, (types.Number, types.Boolean))


def array_type(t, most=2):
    if isinstance(t, types.Array) and t.ndim > most:
        raise TypingError(f"s2sad's numba backend handles arrays of up to {most} axes "
                          f"here, got {t}")
    return isinstance(t, types.Array)


@overload(runtime.unbroadcast)
def numba_unbroadcast(g, x):
    if isinstance(x, types.Array) and isinstance(g, types.Array) and (
            g.ndim > 2 or x.ndim > 2) and g.ndim >= x.ndim:
        return unbroadcast_any(g.ndim, x.ndim)
    if numeric_type(x):
        if numeric_type(g):
            return lambda g, x: g
        if array_type(g):
            return lambda g, x: np.sum(g)
    if array_type(x) and numeric_type(g):
        return lambda g, x: np.full(x.shape, g)
    if array_type(x) and array_type(g) and g.ndim == x.ndim == 1:
        def one(g, x):
            if g.shape[0] == x.shape[0]:
                return g
            return np.full(x.shape, np.sum(g))
        return one
    if array_type(x) and array_type(g) and g.ndim == 2 and x.ndim == 1:
        def rows(g, x):
            s = np.sum(g, axis=0)
            return s if s.shape[0] == x.shape[0] else np.full(x.shape, np.sum(s))
        return rows
    if array_type(x) and array_type(g) and g.ndim == x.ndim == 2:
        def both(g, x):
            out = np.ascontiguousarray(g)
            if x.shape[0] == 1 and out.shape[0] != 1:
                out = np.sum(out, axis=0).reshape((1, out.shape[1]))
            if x.shape[1] == 1 and out.shape[1] != 1:
                out = np.sum(out, axis=1).reshape((out.shape[0], 1))
            return out
        return both
    raise TypingError(f"no native adjoint of a broadcast of {g} to {x}")


def unbroadcast_any(gdim, xdim):
    """The adjoint of a broadcast of an array of `xdim` axes to one of `gdim` (at least
    as many): the leading axes summed, then each axis where x has one element."""
    lines = ["def unbroadcast(g, x):", "    out = np.ascontiguousarray(g)"]
    lines += ["    out = np.sum(out, axis=0)"] * (gdim - xdim)
    for j in range(xdim):
        shape = "".join("1, " if i == j else f"out.shape[{i}], " for i in range(xdim))
        lines += [f"    if x.shape[{j}] == 1 and out.shape[{j}] != 1:",
                  f"        out = np.ascontiguousarray(np.sum(out, axis={j}))"
                  f".reshape(({shape}))" if xdim > 1 else
                  "        out = np.full(1, np.sum(out))"]
    return _made(*lines, "    return out", np=np)


@overload(runtime.add)
def numba_add(a, b):
    if (numeric_type(a) or array_type(a, 3)) and (numeric_type(b) or array_type(b, 3)):
        return lambda a, b: a + b
    if isinstance(a, types.BaseTuple) and isinstance(b, types.BaseTuple) and len(a) == len(b):
        # (the adjoints of a tuple a function returned: element by element)
        return _made("def add_each(a, b):", "    return (" + "".join(
            f"add(a[{k}], b[{k}]), " for k in range(len(a))) + ")", add=runtime.add)
    if isinstance(a, types.List) and isinstance(b, types.List):
        def add_lists(a, b):        # (the adjoints of a list of the function's, item by item)
            if len(a) != len(b):
                raise ValueError("s2sad: adjoints of one list of different lengths")
            return [runtime.add(a[k], b[k]) for k in range(len(a))]
        return add_lists
    raise TypingError(f"no native sum of the adjoints {a} and {b} (the numba backend has "
                      "no containers)")


def basic_index(index):
    """Whether the Numba type `index` selects each element at most once: integers,
    slices, `None`, `...`, a boolean mask, or a tuple of them."""
    items = index.types if isinstance(index, types.BaseTuple) else (index,)
    return all(isinstance(i, (types.Integer, types.SliceType, types.NoneType,
                              types.EllipsisType))
               or isinstance(i, types.Array) and isinstance(i.dtype, types.Boolean)
               for i in items)


def positions(index):
    """Whether the Numba type `index` is an array of integers of one axis, which may
    select an element more than once."""
    return (isinstance(index, types.Array) and index.ndim == 1
            and isinstance(index.dtype, types.Integer))


@overload(runtime.unindex)
def numba_unindex(g, x, index):
    if array_type(x, 3) and basic_index(index):
        def put(g, x, index):
            out = np.zeros(x.shape)
            out[index] += g
            return out
        return put
    if array_type(x, 3) and positions(index) and (numeric_type(g) or array_type(g, 3)):
        def add_each(g, x, index):      # (`out[index] += g` adds once at a repeat)
            out = np.zeros(x.shape)
            for k in range(index.shape[0]):
                out[index[k]] += g if numeric_g else g[k]
            return out
        numeric_g = numeric_type(g)
        return add_each
    if isinstance(x, types.List) and isinstance(index, types.Integer) and (
            numeric_type(x.dtype) or array_type(x.dtype, 3)):
        def item(g, x, index):      # (a list of zeros with `g` at the item)
            out = [runtime.zeros_like(v) for v in x]
            out[index] = runtime.unbroadcast(g, x[index])
            return out
        return item
    at = getattr(index, "literal_value", None)
    if isinstance(x, types.BaseTuple) and isinstance(at, int) and -len(x) <= at < len(x):
        # (an element of a tuple: the adjoint `g` there, a zero of each other's type)
        parts = []
        for k, t in enumerate(x.types):
            if k == at % len(x):
                parts.append("np.full(x[{0}].shape, g)".format(k)
                             if array_type(t, 3) and numeric_type(g) else "g")
            else:
                parts.append(f"np.zeros(x[{k}].shape)" if array_type(t, 3) else "0.0")
        return _made("def put(g, x, index):", "    return (" + "".join(
            f"{p}, " for p in parts) + ")", np=np)
    raise TypingError(f"no native adjoint of indexing {x} with {index}")


@overload(runtime.zeros_like)
def numba_zeros_like(x):
    if numeric_type(x):
        return lambda x: 0.0
    if array_type(x, 3):
        return lambda x: np.zeros(x.shape)
    raise TypingError(f"no native zeros of {x}")


@overload(runtime.take)
def numba_take(g, index):
    if array_type(g, 3) and basic_index(index):
        if isinstance(index, types.Integer) and g.ndim == 1:
            return lambda g, index: g[index]
        return lambda g, index: g[index].copy()
    if array_type(g, 3) and positions(index):
        def last_writes(g, index):      # (runtime.take: the write that stays)
            out = g[index].copy()
            n = g.shape[0]
            seen = np.zeros(n, np.bool_)
            for k in range(index.shape[0] - 1, -1, -1):
                i = index[k] % n
                if seen[i]:
                    out[k] = 0.0
                seen[i] = True
            return out
        return last_writes
    if array_type(g, 3) and several_positions(index):
        return last_writes_of(g.ndim, index.types)
    raise TypingError(f"no native part of {g} at {index}")


def several_positions(index):
    """Whether the Numba type `index` is a tuple of integers, slices and arrays of
    integers of one axis (at least one array): `a[:, rows, cols]`, which Numba compiles."""
    return isinstance(index, types.BaseTuple) and any(map(positions, index.types)) and all(
        positions(i) or isinstance(i, (types.Integer, types.SliceType)) for i in index.types)


def last_writes_of(ndim, items):
    """`take` of an array of `ndim` axes at a tuple index of the Numba types `items`
    (several_positions): `g[index]` with zeros where a later write of `a[index] = v`
    overwrites, the writes `k` whose arrays give the same element (`rows[k], cols[k]`)."""
    arrays = [j for j, t in enumerate(items) if positions(t)]
    # (the axis of the writes in the result: that of the first array when the arrays
    # are side by side, else the first, as NumPy places it)
    adjacent = arrays == list(range(arrays[0], arrays[-1] + 1))
    before = sum(isinstance(items[j], types.SliceType) for j in range(arrays[0]))
    at = ":, " * (before if adjacent else 0)
    lines = ["def last_writes(g, index):", "    out = g[index].copy()",
             f"    m = index[{arrays[0]}].shape[0]", "    where = np.zeros(m, np.int64)"]
    for j in arrays:
        lines += [f"    if index[{j}].shape[0] != m:",
                  "        raise IndexError('shape mismatch: indexing arrays could not be "
                  "broadcast together')",
                  f"    where = where * g.shape[{j}] + index[{j}] % g.shape[{j}]"]
    size = " * ".join(f"g.shape[{j}]" for j in arrays)
    lines += [f"    seen = np.zeros({size}, np.bool_)",
              "    for k in range(m - 1, -1, -1):",
              "        if seen[where[k]]:",
              f"            out[{at}k] = 0.0",
              "        seen[where[k]] = True",
              "    return out"]
    return _made(*lines, np=np)


@overload(runtime.own)
def numba_own(g, x):
    if array_type(x, 3):
        if numeric_type(g):
            return lambda g, x: np.full(x.shape, g)
        if array_type(g, 3) and g.ndim == x.ndim:
            return lambda g, x: g.astype(np.float64)
    raise TypingError(f"no native copy of {g} shaped like {x}")


@overload(runtime.snapshot)
def numba_snapshot(v):
    if array_type(v, 3):
        return lambda v: v.copy()
    return lambda v: v


@overload(runtime.like)
def numba_like(x):
    return lambda x: x


def axis_type(axis):
    """Whether the Numba type `axis` is one axis (an integer), not None or a tuple."""
    return isinstance(axis, types.Integer)


def no_axis(axis):
    return axis is None or isinstance(axis, (types.NoneType, types.Omitted))


@overload(runtime.unreduce)
def numba_unreduce(g, x, axis=None, keepdims=False):
    # (an axis left out is its default, None, to the overload; one passed, its type)
    if array_type(x, 3) and numeric_type(g) and (no_axis(axis) or axis_type(axis)):
        # (along an axis: the sum of an array of one axis, or an adjoint of zero)
        return lambda g, x, axis=None, keepdims=False: np.full(x.shape, g)
    if array_type(x, 3) and array_type(g, 3) and axis_type(axis) and g.ndim in (
            x.ndim, x.ndim - 1):        # (g.ndim == x.ndim: keepdims)
        # (x seen as (before, m, after), g as (before, after): each g copied along m, in
        # one loop, where a broadcast add of three axes is Numba's slow general case)
        return _made("def spread(g, x, axis=None, keepdims=False):",
                     *_axis_of(x.ndim),
                     "    a = x",
                     *_around_axis(x.ndim),
                     "    h = np.ascontiguousarray(g).reshape((before, after))",
                     "    out = np.empty((before, m, after), dtype=dtype)",
                     "    for i in range(before):",
                     "        for r in range(m):",
                     "            for j in range(after):",
                     "                out[i, r, j] = h[i, j]",
                     "    return out.reshape(x.shape)", np=np,
                     dtype=np.complex128 if isinstance(g.dtype, types.Complex) else np.float64)
    raise TypingError(f"no native adjoint of a sum of {x} along an axis ({axis})")


@overload(runtime.extremum)
def numba_extremum(g, x, ans, axis=None, keepdims=False):
    # (the adjoint of max/min: `g` shared equally among the elements that attain it)
    if numeric_type(x) and numeric_type(g):
        return lambda g, x, ans, axis=None, keepdims=False: g * 1.0
    if array_type(x, 3) and numeric_type(g) and numeric_type(ans) and no_axis(axis):
        def whole(g, x, ans, axis=None, keepdims=False):
            mask = x == ans
            return np.where(mask, g / np.sum(mask), 0.0)
        return whole
    if array_type(x, 3) and isinstance(ans, types.Array) and axis_type(axis) and (
            numeric_type(g) or array_type(g, 3) and g.ndim == ans.ndim):
        # (x seen as (before, m, after), `ans` and an array `g` as (before, after), with
        # x's axes as with keepdims=True or without: each count, then each share, in
        # loops without temporaries of x's shape)
        return _made("def along(g, x, ans, axis=None, keepdims=False):",
                     *_axis_of(x.ndim),
                     "    a = x",
                     *_around_axis(x.ndim),
                     "    b = np.ascontiguousarray(x).reshape((before, m, after))",
                     "    e = np.ascontiguousarray(ans).reshape((before, after))",
                     "    h = np.ascontiguousarray(g).reshape((before, after))"
                     if isinstance(g, types.Array) else "    h = g",
                     "    out, count = np.empty((before, m, after)), np.empty(after)",
                     "    for i in range(before):",
                     "        count[:] = 0.0",
                     "        for r in range(m):",
                     "            for j in range(after):",
                     "                if b[i, r, j] == e[i, j]:",
                     "                    count[j] += 1.0",
                     "        for j in range(after):",
                     "            c = count[j]",
                     f"            gij = {'h[i, j]' if isinstance(g, types.Array) else 'h'}",
                     "            share, other = gij * (1.0 / c), gij * (0.0 / c)  # g * (mask / c)",
                     "            for r in range(m):",
                     "                out[i, r, j] = share if b[i, r, j] == e[i, j] else other",
                     "    return out.reshape(x.shape)", np=np)
    raise TypingError(f"no native adjoint of an extremum of {x} along an axis ({axis})")


@overload(tangents.extremum_dot)
def numba_extremum_dot(t, a, ans, axis=None, keepdims=False):
    # (the tangent of max/min: the mean of `t` over the elements that attain it)
    if numeric_type(a) and numeric_type(t):
        return lambda t, a, ans, axis=None, keepdims=False: t * 1.0
    if array_type(a, 3) and numeric_type(ans) and no_axis(axis):
        def whole(t, a, ans, axis=None, keepdims=False):
            mask = a == ans
            return np.sum(np.where(mask, t, 0.0)) / np.sum(mask)
        return whole
    if array_type(a, 3) and isinstance(ans, types.Array) and axis_type(axis) and (
            numeric_type(t) or array_type(t, 3)):
        kept = ans.ndim == a.ndim
        spread = "{0}" if kept else "np.expand_dims({0}, k)"
        back = "np.expand_dims({0}, k)" if kept else "{0}"
        return _made("def along(t, a, ans, axis=None, keepdims=False):",
                     "    k = axis % a.ndim",
                     f"    mask = a == {spread.format('ans')}",
                     "    mean = np.sum(np.where(mask, t, 0.0), axis=k) / np.sum(mask, axis=k)",
                     f"    return {back.format('mean')}", np=np)
    raise TypingError(f"no native tangent of an extremum of {a} along an axis ({axis})")


@overload(tangents.sort_dot)
def numba_sort_dot(t, a, axis=-1):
    # (Numba's np.argsort takes no axis: a vector's order, or each row's, the last axis
    # Numba's np.sort sorts, which takes none either)
    if array_type(a) and a.ndim == 1 and array_type(t) and t.ndim == 1:
        return lambda t, a, axis=-1: t[np.argsort(a)]
    if array_type(a) and a.ndim == 2 and array_type(t) and t.ndim == 2:
        def rows(t, a, axis=-1):
            out = np.empty_like(t)
            for i in range(a.shape[0]):
                out[i] = t[i][np.argsort(a[i])]
            return out
        return rows
    raise TypingError(f"no native tangent of np.sort of {a} along {t}")


@overload(runtime.unsort)
def numba_unsort(g, x, axis=-1):
    # (np.sort's adjoint: `g` put back where each element came from, of a vector, or of
    # each row, the last axis Numba's np.sort sorts)
    if array_type(x) and x.ndim == 1 and array_type(g) and g.ndim == 1:
        def vector(g, x, axis=-1):
            out = np.zeros(x.shape)
            out[np.argsort(x)] = g
            return out
        return vector
    if array_type(x) and x.ndim == 2 and array_type(g) and g.ndim == 2:
        def rows(g, x, axis=-1):
            out = np.zeros(x.shape)
            for i in range(x.shape[0]):
                out[i][np.argsort(x[i])] = g[i]
            return out
        return rows
    raise TypingError(f"no native adjoint of np.sort of {x} from {g}")


def transposed(g, axes, inverse):
    """The code of `untranspose` (`inverse`) or `retranspose` of `g` by `axes` as they
    take them (None, `()`, the axes, or a tuple of them: `x.transpose((1, 0))`)."""
    nested = isinstance(axes, types.BaseTuple) and len(axes) == 1 and isinstance(
        axes[0], types.BaseTuple)
    given, axes = ("axes[0]", axes[0]) if nested else ("axes", axes)
    if numeric_type(g):
        return lambda g, axes=None: g
    if no_axis(axes) or isinstance(axes, types.BaseTuple) and not axes:
        return lambda g, axes=None: np.transpose(g)
    n = getattr(g, "ndim", -1)
    if isinstance(g, types.Array) and isinstance(axes, types.BaseTuple) and len(axes) == n and all(
            isinstance(a, types.Integer) for a in axes):
        back = [f"    q = [0] * {n}", f"    for i in range({n}):", "        q[p[i]] = i"]
        return _made("def transposed(g, axes=None):", f"    p = [a % {n} for a in {given}]",
                     *(back if inverse else ["    q = p"]),
                     f"    return np.transpose(g, ({''.join(f'q[{i}], ' for i in range(n))}))",
                     np=np)


@overload(layout.untranspose)
def numba_untranspose(g, axes=None):
    return transposed(g, axes, inverse=True)


@overload(layout.retranspose)
def numba_retranspose(g, axes=None):
    return transposed(g, axes, inverse=False)


@overload(runtime.reshape_like)
def numba_reshape_like(g, x):
    if numeric_type(x):
        if numeric_type(g):
            return lambda g, x: g
        if array_type(g, 3):
            return lambda g, x: np.sum(g)       # (its one element)
    if array_type(x, 3):
        if numeric_type(g):         # (the zero, or the one element of x)
            return lambda g, x: np.full(x.shape, g)
        if array_type(g, 3):
            return lambda g, x: np.ascontiguousarray(g).reshape(x.shape)
    raise TypingError(f"no native reshape of {g} to the shape of {x}")


@overload(runtime.split_like, prefer_literal=True)
def numba_split_like(g, arrays, axis=0):
    # (the pieces of `g` as a tuple, one per array joined: their number is in the type)
    n = len(arrays) if isinstance(arrays, types.BaseTuple) else 0
    given = getattr(axis, "literal_value", 0 if no_axis(axis) else None)
    if n and numeric_type(g):       # (the zero for each)
        return _made("def split(g, arrays, axis=0):", "    return (" + "g, " * n + ")")
    if n and array_type(g, 3) and isinstance(given, int):
        before = ":, " * (given % g.ndim)
        lines = ["def split(g, arrays, axis=0):", "    lo = 0"]
        for k in range(n):
            lines += [f"    hi = lo + arrays[{k}].shape[{given}]",
                      f"    p{k} = g[{before}lo:hi]", "    lo = hi"]
        lines.append(f"    return ({''.join(f'p{k}, ' for k in range(n))})")
        return _made(*lines)
    raise TypingError(f"no native adjoint of a concatenation of {arrays} along axis {axis}")


@overload(runtime.uncross, prefer_literal=True)
def numba_uncross(g, a, b, c, which, axisa=-1, axisb=-1, axisc=-1, axis=None):
    # (3-vectors along the last axis, np.cross's defaults: b × g for `a`, g × a for `b`,
    # summed back where the operand was broadcast; `which` a constant of the rule's)
    side = getattr(which, "literal_value", None)
    axes = [getattr(t, "literal_value", -1 if no_axis(t) else None)
            for t in (axisa, axisb, axisc)]
    if side not in (0, 1) or axes != [-1, -1, -1] or not no_axis(axis) or not (
            array_type(a) and array_type(b)):
        raise TypingError(f"no native adjoint of np.cross of {a} and {b} along axes "
                          f"{axisa}, {axisb}, {axisc}, {axis}: s2sad's takes 3-vectors "
                          "along the last axis")
    x = "a" if side == 0 else "b"
    if numeric_type(g):     # (an adjoint of zero)
        return _made("def uncross(g, a, b, c, which, axisa=-1, axisb=-1, axisc=-1, "
                     "axis=None):", f"    return np.zeros({x}.shape)", np=np)
    if not array_type(g):
        raise TypingError(f"no native adjoint of np.cross for an adjoint {g}")
    product = "np.cross(b, g)" if side == 0 else "np.cross(g, a)"
    return _made(
        "def uncross(g, a, b, c, which, axisa=-1, axisb=-1, axisc=-1, axis=None):",
        "    if a.shape[-1] != 3 or b.shape[-1] != 3:",
        "        raise ValueError(\"s2sad's adjoint of np.cross for Numba takes 3-vectors\")",
        f"    return unbroadcast({product}, {x})", np=np, unbroadcast=runtime.unbroadcast)


# -- np.einsum, which Numba lacks, and its adjoint: loops over the subscripts ---------------
def einsum_parts(subscripts, operands):
    """(inputs, output) of the literal `subscripts` of an einsum over the Numba types
    `operands`; None where these loops do not apply (an ellipsis, a subscript repeated in
    one operand or in the output, a count of subscripts that is not an operand's axes, an
    operand that is not an array or number of floats or integers)."""
    text = getattr(subscripts, "literal_value", None)
    if not isinstance(text, str) or "." in text:
        return None
    inputs, arrow, output = text.replace(" ", "").partition("->")
    inputs = inputs.split(",")
    if not arrow:
        joined = "".join(inputs)
        output = "".join(sorted(c for c in set(joined) if joined.count(c) == 1))
    if len(inputs) != len(operands) or len(set(output)) != len(output) or not all(
            (s + output).isalpha() for s in inputs):
        return None
    for s, t in zip(inputs, operands):
        dtype = t.dtype if isinstance(t, types.Array) else t
        if (len(set(s)) != len(s) or len(s) != getattr(t, "ndim", 0)
                or not isinstance(dtype, (types.Integer, types.Float))):
            return None
    return inputs, output


def contraction(inputs, names, output, shaped=None):
    """The lines of the loops that compute `np.einsum` of the arrays (or numbers) `names`
    with the subscripts `inputs` to `output` (a number for ""), as `out`; the length of an
    output subscript no input has is read from the array `shaped` (a pair: its name and
    its subscripts). Lengths that differ are a ValueError, as in NumPy."""
    lines, sizes = [], {}
    for s, name in list(zip(inputs, names)) + ([shaped[::-1]] if shaped else []):
        for axis, c in enumerate(s):
            if c in sizes:
                lines += [f"    if {name}.shape[{axis}] != {sizes[c]}:",
                          "        raise ValueError('einsum: operands of different lengths "
                          f"along subscript {c}')"]
            else:
                sizes[c] = f"{name}.shape[{axis}]"
    summed = [c for c in dict.fromkeys("".join(inputs)) if c not in output]
    at = ", ".join(f"i_{c}" for c in output)
    lines.append(f"    out = np.zeros(({''.join(f'{sizes[c]}, ' for c in output)}))"
                 if output else "    out = 0.0")
    depth = "    "
    for c in output:
        lines.append(f"{depth}for i_{c} in range({sizes[c]}):")
        depth += "    "
    lines.append(f"{depth}total = 0.0")
    inner = depth
    for c in summed:
        lines.append(f"{inner}for i_{c} in range({sizes[c]}):")
        inner += "    "
    product = " * ".join(f"{n}[{', '.join(f'i_{c}' for c in s)}]" if s else n
                         for s, n in zip(inputs, names))
    lines.append(f"{inner}total += {product}")
    lines.append(f"{depth}out[{at}] = total" if output else f"{depth}out = total")
    return lines + ["    return out"]


@overload(np.einsum, prefer_literal=True)
def numpy_einsum(subscripts, *operands):
    parts = einsum_parts(subscripts, operands)
    if parts is None:
        return None
    inputs, output = parts
    names = [f"operands[{k}]" for k in range(len(operands))]
    return _made("def einsum(subscripts, *operands):",
                 *contraction(inputs, names, output), np=np)


@overload(products.einsum, prefer_literal=True)
def numba_einsum(g, subscripts, k, *operands):
    # (operand k's adjoint: the einsum of g with the others, to k's subscripts; None, the
    # einsum itself)
    parts = einsum_parts(subscripts, operands)
    at = getattr(k, "literal_value", None)
    if parts is not None and isinstance(k, (types.NoneType, types.Omitted)):
        inputs, output = parts
        names = [f"operands[{j}]" for j in range(len(operands))]
        return _made("def einsum(g, subscripts, k, *operands):",
                     *contraction(inputs, names, output), np=np)
    if parts is not None and isinstance(at, int) and 0 <= at < len(operands) and (
            numeric_type(g) or isinstance(g, types.Array) and g.ndim == len(parts[1])):
        inputs, output = parts
        others = [j for j in range(len(operands)) if j != at]
        names = ["g"] + [f"operands[{j}]" for j in others]
        return _made("def einsum(g, subscripts, k, *operands):", *contraction(
            [output] + [inputs[j] for j in others], names, inputs[at],
            shaped=(f"operands[{at}]", inputs[at])), np=np)
    raise TypingError(f"no native adjoint of np.einsum({subscripts}, ...) of {operands} "
                      "(s2sad's numba backend takes literal subscripts, without '...' or a "
                      "subscript repeated in one operand)")


def _axis_of(n):
    """Lines of a made function of an array `a` of `n` axes: `k`, its `axis` counted from
    0, or NumPy's error for an axis out of bounds."""
    return [f"    if not -{n} <= axis < {n}:",
            f"        raise ValueError('axis is out of bounds for an array of {n} axes')",
            f"    k = axis % {n}"]


def _around_axis(n):
    """Lines of a made function: the sizes `before` and `after` axis `k` of an array `a` of
    `n` axes, and `m`, its size along `k` (the array seen as (before, m, after))."""
    return ["    before, after = 1, 1",
            f"    for j in range({n}):",
            "        if j < k:",
            "            before *= a.shape[j]",
            "        elif j > k:",
            "            after *= a.shape[j]",
            "    m = a.shape[k]"]


def _made(*lines, **names):
    """The function of the source `lines` (code written for the types at hand), which
    reads `names`."""
    namespace = dict(names)
    exec("\n".join(lines) + "\n", namespace)     # noqa: S102 - code for the types above
    return next(v for k, v in namespace.items() if k != "__builtins__" and k not in names)


#: The start of the typing error of `numba_seed` for an output of more than one element,
#: which the numba backend reports as a NonScalarOutputError (numba_api._not_compiled).
NON_SCALAR = "s2sad: a non-scalar output: "


@overload(runtime.seed)
def numba_seed(y, name):
    if numeric_type(y) or isinstance(y, types.Array) and y.ndim == 0:
        return lambda y, name: 1.0      # (a 0-d array: NumPy's arithmetic gives a number)
    raise TypingError(f"{NON_SCALAR}{y}")


@overload(runtime.matmul_lhs)
def numba_matmul_lhs(g, a, b):
    if not (array_type(a) and array_type(b)):
        raise TypingError(f"no native adjoint of {a} @ {b}")
    if a.ndim == 2 and b.ndim == 1:
        return lambda g, a, b: np.outer(g, b)
    if a.ndim == 2 and b.ndim == 2:
        return lambda g, a, b: g @ np.ascontiguousarray(b.T)
    if a.ndim == 1 and b.ndim == 2:
        return lambda g, a, b: b @ g
    return lambda g, a, b: g * b


@overload(runtime.matmul_rhs)
def numba_matmul_rhs(g, a, b):
    if not (array_type(a) and array_type(b)):
        raise TypingError(f"no native adjoint of {a} @ {b}")
    if a.ndim == 2 and b.ndim == 1:
        # (Aᵀg as gᵀA: BLAS reads A as it lies; a contiguous copy of Aᵀ took longer
        # than the product)
        return lambda g, a, b: g @ a
    if a.ndim == 2 and b.ndim == 2:
        return lambda g, a, b: np.ascontiguousarray(a.T) @ g
    if a.ndim == 1 and b.ndim == 2:
        return lambda g, a, b: np.outer(a, g)
    return lambda g, a, b: g * a


@overload(runtime.setitem)
def numba_setitem(a, index, v):
    if array_type(a, 3):
        def put(a, index, v):
            out = a.copy()
            out[index] = v
            return out
        return put
    raise TypingError(f"no native copy of {a} with an element written")


@overload(runtime.check_real, prefer_literal=True)
def numba_check_real(v, filename, line):
    dtype = v.dtype if isinstance(v, types.Array) else v
    if not isinstance(dtype, types.Complex):
        return lambda v, filename, line: None
    message = str(runtime.complex_value(
        f"a {dtype} {'array' if dtype is not v else 'number'}",
        getattr(filename, "literal_value", "<unknown>"), getattr(line, "literal_value", 0)))

    def refuse(v, filename, line):
        raise ComplexValueError(message)
    return refuse


@overload(tangents.broadcast_like)
def numba_broadcast_like(t, y):
    if numeric_type(y):
        return lambda t, y: t
    if array_type(y, 3) and numeric_type(t):
        return lambda t, y: np.full(y.shape, t)
    if array_type(y, 3) and array_type(t, 3):
        return lambda t, y: np.broadcast_to(t, y.shape)
    raise TypingError(f"no native broadcast of {t} to {y}")


# -- custom rules: what they return, checked (runtime.cotangents, tangents.value_and_tangent)
#: How the TypingError of a custom rule's result whose types do not fit starts: numba_api
#: raises the rest of its line as a CustomRuleError.
CUSTOM_RULE = "s2sad: the custom rule "


@overload(runtime.cotangents)
def numba_cotangents(c, bwd, args):
    rule = _rule(bwd, "the backward function of a custom_vjp")
    n = len(args)
    if not isinstance(c, types.BaseTuple) or len(c) != n:
        raise TypingError(f"{CUSTOM_RULE}{rule}, returned {c} for a call with {n} positional "
                          f"argument(s); it returns a tuple of {n} cotangent(s), one per "
                          "argument, None for one without a derivative")
    return _checked("c, bwd, args", "c", rule, [
        (d, x, f"c[{i}]", f"args[{i}]", f"the cotangent of argument {i}")
        for i, (d, x) in enumerate(zip(c.types, args.types))])


@overload(tangents.value_and_tangent)
def numba_value_and_tangent(result, rule):
    name = _rule(rule, "the rule of a custom_jvp")
    if not isinstance(result, types.BaseTuple) or len(result) != 2:
        raise TypingError(f"{CUSTOM_RULE}{name}, returned {result}; it returns a pair "
                          "(value, tangent): `return y, y_dot`")
    value, tangent = result.types
    if isinstance(tangent, types.NoneType) and isinstance(value, (types.Array, types.Float)):
        raise TypingError(f"{CUSTOM_RULE}{name}, returned None as the tangent of its value")
    return _checked("result, rule", "result", name, [
        (tangent, value, "result[1]", "result[0]", "the tangent of its value")])


def _rule(fn, what):
    """`file:line: name, what` of the rule `fn`, of a Numba dispatcher's type."""
    py = getattr(getattr(fn, "dispatcher", fn), "py_func", None)
    return f"{defined_at(py)}{getattr(py, '__qualname__', fn)}, {what}"


def _checked(params, result, rule, parts):
    """A function of `params` that returns `result` once the `parts` of what the custom
    `rule` returned fit: each (type found, type expected, their spellings, what it is).
    Types that do not fit are a TypingError; arrays are compared by shape when it runs
    (numbers for arrays are zeros), raising a CustomRuleError."""
    lines, messages = [f"def check({params}):"], {}
    for k, (d, x, found, expected, what) in enumerate(parts):
        problem = f"{rule}, returned as {what} "
        if isinstance(d, types.NoneType) or not isinstance(x, (types.Array, types.Float)):
            continue
        if isinstance(x, types.Float):
            if not isinstance(d, types.Number):
                raise TypingError(f"{CUSTOM_RULE}{problem}{d} where a number was expected")
            continue
        if isinstance(d, types.Number):
            messages[f"M{k}"] = (f"{problem}a number other than zero where an array was "
                                 "expected. Return it in the shape of the argument")
            lines.append(f"    if {found} != 0:\n        raise CustomRuleError(M{k})")
        else:
            if not isinstance(d, types.Array) or d.ndim != x.ndim:
                raise TypingError(f"{CUSTOM_RULE}{problem}{d} where an array of {x.ndim} "
                                  "axes was expected")
            messages[f"M{k}"] = (f"{problem}an array of another shape than the argument's. "
                                 "Return it in the shape of the argument")
            lines.append(f"    if {found}.shape != {expected}.shape:\n"
                         f"        raise CustomRuleError(M{k})")
    lines.append(f"    return {result}")
    namespace = {"CustomRuleError": CustomRuleError, **messages}
    exec("\n".join(lines) + "\n", namespace)      # noqa: S102 - code for the types above
    return namespace["check"]


def _fused_kinds(arrays, numbers):
    """Whether a fused loop (rules/fusion.py) applies to the Numba types of the tuples
    `arrays` and `numbers`: float64 arrays of one number of axes (one or two), and
    numbers that are not bools."""
    arrays = getattr(arrays, "types", None)
    numbers = getattr(numbers, "types", None)
    return bool(arrays) and numbers is not None and all(
        isinstance(a, types.Array) and a.dtype == types.float64 and a.ndim in (1, 2)
        and a.ndim == arrays[0].ndim for a in arrays) and all(
        isinstance(n, (types.Float, types.Integer)) for n in numbers)


@overload(fusion.fusable)
def numba_fusable(arrays, numbers):
    if _fused_kinds(arrays, numbers):
        return lambda arrays, numbers: 0.0
    return lambda arrays, numbers: 0


@overload(fusion.same_shape)
def numba_same_shape(arrays):
    kinds = getattr(arrays, "types", ())
    if not kinds or not all(isinstance(a, types.Array) and a.ndim == kinds[0].ndim
                            for a in kinds):
        return lambda arrays: False
    tests = " and ".join(f"arrays[{i}].shape == arrays[0].shape"
                         for i in range(1, len(kinds))) or "True"
    return _made("def same_shape(arrays):", f"    return {tests}")


@overload(fusion.at, inline="always")
def numba_at(x, k):
    if not isinstance(x, types.Array):
        return lambda x, k: x
    if x.ndim == 1:
        return lambda x, k: x[k]
    if x.ndim == 2 and x.layout == "C":     # (without a division per element)
        return lambda x, k: x.flat[k]
    if x.ndim == 2:
        return lambda x, k: x[k // x.shape[1], k % x.shape[1]]
    raise TypingError(f"s2sad's fused loops take arrays of one or two axes, got {x}")


@overload(fusion.put, inline="always")
def numba_put(x, k, v):
    if isinstance(x, types.Array) and x.ndim == 1:
        def one(x, k, v):
            x[k] = v
        return one
    if isinstance(x, types.Array) and x.ndim == 2 and x.layout == "C":
        def flat(x, k, v):
            x.flat[k] = v
        return flat
    if isinstance(x, types.Array) and x.ndim == 2:
        def two(x, k, v):
            x[k // x.shape[1], k % x.shape[1]] = v
        return two
    raise TypingError(f"s2sad's fused loops write arrays of one or two axes, got {x}")



@register_jitable
def _bounds(x):
    """The first byte of the array `x` and the one after its last, by its strides."""
    lo = hi = x.ctypes.data
    for n, step in zip(x.shape, x.strides):
        if step < 0:
            lo += (n - 1) * step
        else:
            hi += (n - 1) * step
    return lo, hi + x.itemsize


@register_jitable
def _apart(a, b):
    """Whether the memory of the arrays `a` and `b` is apart (Numba has no
    `np.shares_memory`)."""
    if a.size == 0 or b.size == 0:
        return True
    a_lo, a_hi = _bounds(a)
    b_lo, b_hi = _bounds(b)
    return a_hi <= b_lo or b_hi <= a_lo


@overload(fusion.add_scaled)
def numba_add_scaled(out, c, g):
    # (element by element where `c` is a number, the shapes one and the memory apart; else
    # NumPy's `+=`, which makes the product first: a broadcast, or `g` a view of `out`)
    if not isinstance(out, types.Array):
        raise TypingError(f"no native scaled addition of {c} times {g} into {out}")
    if not (numeric_type(c) and isinstance(g, types.Array) and g.ndim == out.ndim
            and out.ndim in (1, 2)):
        def add(out, c, g):
            out += c * g
        return add
    loops = (["for i in range(out.shape[0]):", "    out[i] += c * g[i]"] if out.ndim == 1
             else ["for i in range(out.shape[0]):", "    for k in range(out.shape[1]):",
                   "        out[i, k] += c * g[i, k]"])
    return _made("def add(out, c, g):",
                 "    if out.shape != g.shape or not apart(out, g):",
                 "        out += c * g", "        return", *("    " + x for x in loops),
                 apart=_apart)
