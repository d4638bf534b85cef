"""The adjoints of products: matrix products (`@`, `np.dot`, `np.inner`, `np.outer`),
`np.einsum` and `np.tensordot`, summed down to their operands' shapes. Generated code
reaches them through `runtime`, which imports them."""
import numpy as np

from .arrays import asarray
from .reductions import unbroadcast
from .registry import helper, helper_adjoint, helpers, jvp

ns = {"np": np}


def _matmul_shape(a, b):
    """The shape of `a @ b`, without computing it."""
    if a.ndim == 1 and b.ndim == 1:
        return ()
    if a.ndim == 1:
        return b.shape[:-2] + b.shape[-1:]
    if b.ndim == 1:
        return a.shape[:-1]
    return np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (a.shape[-2], b.shape[-1])


def spread_to(g, shape):
    """`g` as an array of `shape`: a 0-d adjoint stands for the same value everywhere (a
    symbolic zero reset to 0.0, or the adjoint of a mean), which the adjoints of
    linear algebra need written out.

    The pullback resets the adjoint of an array that a loop rebinds to the number 0.0
    (its shape is not on the tape). Every rule accepts such a 0-d adjoint for a value
    with axes: linear algebra spreads it here; a rule that reshapes, indexes, stacks or
    moves axes returns it unchanged, the 0-d zero of each input, which arithmetic
    broadcasts and the returned gradient gets the parameter's shape from."""
    return np.broadcast_to(g, shape) if np.ndim(g) == 0 and shape != () else g


@helper(shape_only=(1,), result="fresh", numba=True, linear=("g", "b"))
def matmul_lhs(g, a, b):
    """The adjoint of `a` in `a @ b`."""
    a, b = asarray(a), asarray(b)
    g = spread_to(g, _matmul_shape(a, b))
    if b.ndim == 1:
        out = np.expand_dims(g, -1) * b if a.ndim > 1 else g * b
    elif a.ndim == 1:
        out = np.matmul(b, np.expand_dims(g, -1))[..., 0] if b.ndim > 2 else b @ g
    else:
        out = np.matmul(g, np.swapaxes(b, -1, -2))
    return unbroadcast(out, a)


helper_adjoint(matmul_lhs, namespace=ns,      # (bilinear in g and b: see `dot_lhs`)
               g="_s2s_rebroadcast(np.matmul(_s2s_rebroadcast(ans_bar, a), b), g)",
               b="_s2s_matmul_rhs(g, _s2s_rebroadcast(ans_bar, a), b)")


@helper(shape_only=(2,), result="fresh", numba=True, linear=("g", "a"))
def matmul_rhs(g, a, b):
    """The adjoint of `b` in `a @ b`."""
    a, b = asarray(a), asarray(b)
    g = spread_to(g, _matmul_shape(a, b))
    if a.ndim == 1:
        out = np.expand_dims(a, -1) * np.expand_dims(g, -2) if b.ndim > 1 else g * a
    elif b.ndim == 1:
        out = g @ a if a.ndim == 2 else np.matmul(np.swapaxes(a, -1, -2),
                                                   np.expand_dims(g, -1))[..., 0]
    else:
        out = np.matmul(np.swapaxes(a, -1, -2), g)
    return unbroadcast(out, b)


helper_adjoint(matmul_rhs, namespace=ns,
               g="_s2s_rebroadcast(np.matmul(a, _s2s_rebroadcast(ans_bar, b)), g)",
               a="_s2s_matmul_lhs(g, a, _s2s_rebroadcast(ans_bar, b))")


@helper(shape_only=(1,), result="fresh", numba=True, linear=("g", "b"))
def dot_lhs(g, a, b):
    """The adjoint of `a` in `np.dot(a, b)`."""
    a, b = asarray(a), asarray(b)
    if a.ndim == 0 or b.ndim == 0:
        return unbroadcast(g * b, a)
    if b.ndim <= 2:
        return matmul_lhs(g, a, b)
    g = spread_to(g, a.shape[:-1] + b.shape[:-2] + b.shape[-1:])
    # dot sums over the last axis of a and the second-to-last of b
    return np.tensordot(g, b, axes=(list(range(a.ndim - 1, g.ndim)),
                                    [i for i in range(b.ndim) if i != b.ndim - 2]))


# The adjoint of `a` in a product P(a, b) linear in each, `lhs(g, a, b)`, is linear in
# `g` and `b`: its adjoint `ans_bar` is shaped like `a`, and <ans_bar, lhs(g, a, b)> =
# <g, P(ans_bar, b)>, so the adjoint of `g` is P(ans_bar, b) and that of `b` is
# rhs(g, ans_bar, b); and alike for `rhs`.
helper_adjoint(dot_lhs, namespace=ns,
               g="_s2s_rebroadcast(np.dot(_s2s_rebroadcast(ans_bar, a), b), g)",
               b="_s2s_dot_rhs(g, _s2s_rebroadcast(ans_bar, a), b)")


@helper(shape_only=(2,), result="fresh", numba=True, linear=("g", "a"))
def dot_rhs(g, a, b):
    """The adjoint of `b` in `np.dot(a, b)`."""
    a, b = asarray(a), asarray(b)
    if a.ndim == 0 or b.ndim == 0:
        return unbroadcast(g * a, b)
    if b.ndim <= 2:
        return matmul_rhs(g, a, b)
    g = spread_to(g, a.shape[:-1] + b.shape[:-2] + b.shape[-1:])
    out = np.tensordot(a, g, axes=(list(range(a.ndim - 1)), list(range(a.ndim - 1))))
    return np.moveaxis(out, 0, -2)


helper_adjoint(dot_rhs, namespace=ns,
               g="_s2s_rebroadcast(np.dot(a, _s2s_rebroadcast(ans_bar, b)), g)",
               a="_s2s_dot_lhs(g, a, _s2s_rebroadcast(ans_bar, b))")


@helper(result="fresh",
        tangent=("_s2s_inner(t, a, b, which)",
                 "_s2s_inner(g, t, b, which) if which == 1 else _s2s_zeros_like(ans)",
                 "_s2s_inner(g, a, t, which) if which == 0 else _s2s_zeros_like(ans)"))
def inner(g, a, b, which):
    """The adjoint of `a` (which=0) or `b` (which=1) in np.inner (sums the last axes)."""
    a, b = asarray(a), asarray(b)
    if a.ndim == 0 or b.ndim == 0:
        return unbroadcast(g * (b if which == 0 else a), a if which == 0 else b)
    na, nb = a.ndim - 1, b.ndim - 1
    g = spread_to(g, a.shape[:-1] + b.shape[:-1])
    if which == 0:
        return np.tensordot(g, b, axes=(list(range(na, na + nb)), list(range(nb))))
    return np.tensordot(g, a, axes=(list(range(na)), list(range(na))))


# (which=0: bilinear in g and b; which=1: in g and a; see `dot_lhs`)
helper_adjoint(inner, namespace=ns, g=(
    "_s2s_rebroadcast(np.inner(_s2s_rebroadcast(ans_bar, a), b) if which == 0 else "
    "np.inner(a, _s2s_rebroadcast(ans_bar, b)), g)"),
    a="_s2s_zeros_like(a) if which == 0 else _s2s_inner(g, a, _s2s_rebroadcast(ans_bar, b), 0)",
    b="_s2s_zeros_like(b) if which == 1 else _s2s_inner(g, _s2s_rebroadcast(ans_bar, a), b, 1)")


@helper(result="fresh", numba=True)
def einsum(g, subscripts, k, *operands):
    """The adjoint of operand `k` of `np.einsum(subscripts, *operands)`: an einsum of `g`
    with the other operands, summed down where operand `k` was broadcast, and put on
    its diagonal where it repeats a subscript (`"ii->"`). In the interleaved form
    `np.einsum(a, [0, 1], b, [1, 2], [0, 2])`, `subscripts` is the first operand and
    `k` + 1 the position of the operand among the arguments. With `k` None, the einsum of
    the operands itself (`g` unread): the adjoint of `g` in the adjoint of an operand
    (its reverse rule), as each is a partial derivative of the contraction of `g` with
    the einsum."""
    if k is None:
        return np.array(np.einsum(subscripts, *operands))     # (a copy: einsum may give a view)
    if not isinstance(subscripts, str):
        subscripts, operands, k = _interleaved((subscripts,) + operands, k + 1)
    inputs, arrow, output = subscripts.replace(" ", "").partition("->")
    inputs = inputs.split(",")
    if "." in subscripts:
        inputs, output = _without_ellipsis(inputs, output if arrow else None, operands)
    elif not arrow:
        joined = "".join(inputs)
        output = "".join(sorted(c for c in set(joined) if joined.count(c) == 1))
    if np.ndim(g) == 0 and output:
        sizes = {}
        for s, o in zip(inputs, operands):
            for c, n in zip(s, np.shape(o)):
                sizes[c] = max(sizes.get(c, 1), n)
        g = spread_to(g, tuple(sizes[c] for c in output))
    mine, shape = inputs[k], np.shape(operands[k])
    unique = "".join(dict.fromkeys(mine))           # a repeated subscript once
    sizes = [shape[mine.index(c)] for c in unique]
    others = [s for i, s in enumerate(inputs) if i != k]
    present = set(output + "".join(others))
    kept = "".join(c for c in unique if c in present)
    out = np.einsum(",".join([output] + others) + "->" + kept, g,
                    *[o for i, o in enumerate(operands) if i != k])
    out = np.transpose(out, [kept.index(c) for c in unique if c in kept])
    out = np.reshape(out, _in_order(out, unique, kept))
    summed = tuple(i for i, n in enumerate(sizes) if n == 1 and out.shape[i] != 1)
    if summed:                                      # operand k was broadcast there
        out = out.sum(axis=summed, keepdims=True)
    if out.shape != tuple(sizes):
        out = np.broadcast_to(out, sizes).copy()
    if unique == mine:
        return out
    on_diagonal = np.zeros(shape, dtype=np.result_type(out, np.float32))
    np.einsum(f"{mine}->{unique}", on_diagonal)[...] = out  # a writable view of the diagonal
    return on_diagonal


# its forward rule, one signature for each number of operands up to six: linear in `g`,
# and in each operand but the `k`-th (in the interleaved form, `k` + 1 is the position
# of the operand among subscripts, a, b, ...)
_EINSUM = ["subscripts", "a", "b", "c", "d", "e", "f"]


def _swapped(p, args):
    """einsum's call over `args` with `t` in place of the argument `p`."""
    out = ["t" if q == p else q for q in args]
    return f"_s2s_einsum(g, {out[0]}, k, {', '.join(out[1:])})"


def _replaced(args, by):
    """einsum's `subscripts` and operands `args` with `by` in place of the `k`-th."""
    return [f"({by} if k == {i - 1} else {q})" for i, q in enumerate(args)]


# its rules, one signature for each number of operands up to six: linear in `g` (unread
# for `k` None), and in each operand but the `k`-th (in the interleaved form, `k` + 1 is
# the position of the operand among subscripts, a, b, ...). Its reverse rule: the adjoint
# of `g` is the einsum with the adjoint of the result in place of the `k`-th operand, and
# that of another operand its adjoint in that einsum (for `k` None, its adjoint in the
# einsum, with the adjoint of the result for `g`): its rules close on themselves
for _n in range(2, len(_EINSUM) + 1):
    _args = _EINSUM[:_n]
    _listed = ", ".join(_args[1:])
    jvp(einsum, "g, subscripts, k, " + _listed,
        f"_s2s_einsum(t, subscripts, k, {_listed}) if k is not None else _s2s_zeros_like(ans)",
        **{p: f"{_swapped(p, _args)} if k != {i - 1} else _s2s_zeros_like(ans)"
           for i, p in enumerate(_args)})
    _subscripts, *_operands = _replaced(_args, "ans_bar")
    _operands = ", ".join(_operands)
    helper_adjoint(einsum, params="g, subscripts, k, " + _listed, g=(
        f"_s2s_rebroadcast(_s2s_einsum(g, {_subscripts}, None, {_operands}), g) "
        "if k is not None else _s2s_zeros_like(g)"),
        **{p: (f"(_s2s_einsum(g, {_subscripts}, {i - 1}, {_operands}) if k != {i - 1} "
               f"else _s2s_zeros_like({p})) if k is not None "
               f"else _s2s_einsum(ans_bar, subscripts, {i - 1}, {_listed})")
           for i, p in enumerate(_args)})


def _interleaved(args, position):
    """(subscripts, operands, k) of the interleaved einsum `np.einsum(*args)`: operands
    and sublists of integers (and `...`) alternating, then an optional output sublist;
    `k` is the operand at argument `position`. Integers 0-25 are the letters A-Z and
    26-51 a-z, in the order NumPy sorts them for an implicit output."""
    import string
    letters = string.ascii_uppercase + string.ascii_lowercase

    def spelled(sublist):
        return "".join("..." if i is Ellipsis else letters[i] for i in sublist)

    operands, sublists = args[0:len(args) - len(args) % 2:2], args[1::2]
    spec = ",".join(spelled(s) for s in sublists[:len(operands)])
    if len(args) % 2:
        spec += "->" + spelled(args[-1])
    return spec, operands, position // 2


def _in_order(out, unique, kept):
    """The shape of `out` (axes in the order of `unique`'s letters that are in `kept`)
    with a 1 for each letter of `unique` that is not."""
    sizes = iter(out.shape)
    return [next(sizes) if c in kept else 1 for c in unique]


def _without_ellipsis(inputs, output, operands):
    """`inputs` and `output` of an einsum with each `...` written as letters (the
    broadcast dimensions, right-aligned); `output` None for the implicit form."""
    import string
    used = set("".join(inputs) + (output or ""))
    free = [c for c in string.ascii_letters if c not in used]
    ranks = [np.ndim(o) - len(s.replace("...", "")) for s, o in zip(inputs, operands)]
    letters = "".join(free[:max(ranks, default=0)])
    inputs = [s.replace("...", letters[len(letters) - r:]) for s, r in zip(inputs, ranks)]
    if output is None:
        joined = "".join(inputs)
        output = letters + "".join(sorted(c for c in set(joined) - set(letters)
                                          if joined.count(c) == 1))
    else:
        output = output.replace("...", letters)
    return inputs, output


@helper(result="fresh",
        tangent=("_s2s_tensordot(t, a, b, axes, which)",
                 "_s2s_tensordot(g, t, b, axes, which) if which == 1 else _s2s_zeros_like(ans)",
                 "_s2s_tensordot(g, a, t, axes, which) if which == 0 else _s2s_zeros_like(ans)"))
def tensordot(g, a, b, axes, which):
    """The adjoint of `a` (which=0) or `b` (which=1) in `np.tensordot(a, b, axes)`."""
    a, b = asarray(a), asarray(b)
    if isinstance(axes, int):
        axes = (list(range(a.ndim - axes, a.ndim)), list(range(axes)))
    ax_a, ax_b = ([axes[0]] if isinstance(axes[0], int) else list(axes[0]),
                  [axes[1]] if isinstance(axes[1], int) else list(axes[1]))
    ax_a, ax_b = [i % a.ndim for i in ax_a], [j % b.ndim for j in ax_b]
    letters = iter("abcdefghijklmnopqrstuvwxyz")
    sa = [next(letters) for _ in range(a.ndim)]
    sb = [next(letters) for _ in range(b.ndim)]
    for i, j in zip(ax_a, ax_b):
        sb[j] = sa[i]
    out = [c for i, c in enumerate(sa) if i not in ax_a] + [
        c for j, c in enumerate(sb) if j not in ax_b]
    spec = f"{''.join(sa)},{''.join(sb)}->{''.join(out)}"
    return einsum(g, spec, which, a, b)


helper_adjoint(tensordot, namespace=ns, g=(
    "_s2s_rebroadcast(np.tensordot(_s2s_rebroadcast(ans_bar, a), b, axes) if which == 0 else "
    "np.tensordot(a, _s2s_rebroadcast(ans_bar, b), axes), g)"),
    a=("_s2s_zeros_like(a) if which == 0 else "
       "_s2s_tensordot(g, a, _s2s_rebroadcast(ans_bar, b), axes, 0)"),
    b=("_s2s_zeros_like(b) if which == 1 else "
       "_s2s_tensordot(g, _s2s_rebroadcast(ans_bar, a), b, axes, 1)"))


@helper(result="of_adjoint",
        tangent=("_s2s_outer(t, a, b, which)",
                 "_s2s_outer(g, t, b, which) if which == 1 else _s2s_zeros_like(ans)",
                 "_s2s_outer(g, a, t, which) if which == 0 else _s2s_zeros_like(ans)"))
def outer(g, a, b, which):
    """The adjoint of `a` (which=0) or `b` (which=1) in np.outer."""
    if np.ndim(g) == 0:
        return g                                    # the zero (see `spread_to`)
    if which == 0:
        return np.reshape(g @ np.ravel(b), np.shape(a))
    return np.reshape(np.ravel(a) @ g, np.shape(b))


helper_adjoint(outer, namespace=ns, g=(
    "_s2s_rebroadcast(np.outer(_s2s_rebroadcast(ans_bar, a), b) if which == 0 else "
    "np.outer(a, _s2s_rebroadcast(ans_bar, b)), g)"),
    a="_s2s_zeros_like(a) if which == 0 else _s2s_outer(g, a, _s2s_rebroadcast(ans_bar, b), 0)",
    b="_s2s_zeros_like(b) if which == 1 else _s2s_outer(g, _s2s_rebroadcast(ans_bar, a), b, 1)")


helpers(__name__)


# -- np.linalg.multi_dot([a, b, ..., z]): a @ b @ ... @ z, a 1-D first a row, last a column
def _chain_matrices(arrays):
    """The operands of `multi_dot` as matrices: a 1-D first one a row, a 1-D last one a
    column, as `multi_dot` reads them."""
    mats = [asarray(a) for a in arrays]
    if mats[0].ndim == 1:
        mats[0] = mats[0][None, :]
    if mats[-1].ndim == 1:
        mats[-1] = mats[-1][:, None]
    return mats


def _chain(mats, identity_size):
    """The product of the matrices `mats` (the identity of `identity_size` for none)."""
    if not mats:
        return np.eye(identity_size)
    return mats[0] if len(mats) == 1 else np.linalg.multi_dot(mats)


@helper(tangent=("_s2s_unmulti_dot(t, arrays)", "_s2s_unmulti_dot_dot(g, arrays, t)"))
def unmulti_dot(g, arrays):
    """The adjoints of the operands of `np.linalg.multi_dot(arrays)`: of the i-th, `L^T G
    R^T`, `L` and `R` the products of the operands before and after it, `G` the adjoint
    of the product as a matrix."""
    mats = _chain_matrices(arrays)
    rows, cols = mats[0].shape[0], mats[-1].shape[1]
    g = np.reshape(spread_to(g, np.shape(np.linalg.multi_dot(arrays))
                             if np.ndim(g) == 0 else np.shape(g)), (rows, cols))
    out = []
    for i, a in enumerate(arrays):
        left = _chain(mats[:i], rows)
        right = _chain(mats[i + 1:], cols)
        out.append(np.reshape(left.T @ g @ right.T, np.shape(a)))
    return out


@helper(tangent=("_s2s_unmulti_dot_dot(t, arrays, d)",
                 "_s2s_no_second_derivative(\"np.linalg.multi_dot's adjoint\")",
                 "_s2s_unmulti_dot_dot(g, arrays, t)"))
def unmulti_dot_dot(g, arrays, d):
    """The tangent of `unmulti_dot(g, arrays)` along the tangents `d` of the operands: the
    adjoint of each operand is linear in each of the others, so its tangent is the sum of
    its adjoints with one other operand replaced by its tangent."""
    out = [0.0 * asarray(a) for a in arrays]
    for j, dj in enumerate(d):
        if np.ndim(dj) == 0 and not np.any(dj):
            continue
        replaced = [*arrays[:j], np.broadcast_to(dj, np.shape(arrays[j])), *arrays[j + 1:]]
        for i, adjoint in enumerate(unmulti_dot(g, replaced)):
            if i != j:
                out[i] = out[i] + adjoint
    return out


@helper(tangent=("_s2s_multi_dot_dot(t, arrays)", "_s2s_multi_dot_dot_dot(d, arrays, t)"))
def multi_dot_dot(d, arrays):
    """The tangent of `np.linalg.multi_dot(arrays)` along the tangents `d` of its
    operands (a number 0 for an operand without one): the sum of the products with one
    operand replaced by its tangent."""
    total = 0.0
    for i, di in enumerate(d):
        if np.ndim(di) == 0 and not np.any(di):
            continue
        di = np.broadcast_to(di, np.shape(arrays[i]))
        term = np.linalg.multi_dot([*arrays[:i], di, *arrays[i + 1:]]) if len(arrays) > 2 \
            else (di @ arrays[1] if i == 0 else arrays[0] @ di)
        total = total + term
    return total


@helper
def multi_dot_dot_dot(d, arrays, e):
    """The tangent of `multi_dot_dot(d, arrays)` along `e`, the tangents of the operands:
    the products with two operands replaced, one by its `d`, the other by its `e`."""
    total = 0.0
    for j, ej in enumerate(e):
        if np.ndim(ej) == 0 and not np.any(ej):
            continue
        replaced = [*arrays[:j], np.broadcast_to(ej, np.shape(arrays[j])), *arrays[j + 1:]]
        others = [0.0 if i == j else u for i, u in enumerate(d)]
        total = total + multi_dot_dot(others, replaced)
    return total


# (the adjoint of the product's adjoint pairs the cotangents with the operands as a
# tangent does; of the tangent, as an adjoint does)
helper_adjoint(unmulti_dot, g="_s2s_multi_dot_dot(ans_bar, arrays)",
               arrays="_s2s_unmulti_dot_dot(g, arrays, ans_bar)")
helper_adjoint(multi_dot_dot, d="_s2s_unmulti_dot(ans_bar, arrays)",
               arrays="_s2s_unmulti_dot_dot(ans_bar, arrays, d)")

