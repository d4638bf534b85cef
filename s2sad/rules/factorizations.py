"""Helpers of the rules for matrix factorizations and powers (`np.linalg.eigh`, `eigvalsh`,
`svd`, `pinv`, `lstsq`, `qr`, `matrix_power`), the derivative of the matrix norms
(`matrix_norm_slope`: of the singular values, and of the row and column sums), and the
adjoints of `np.linalg.solve`, `cholesky` and `inv`, with their tangents.

The reverse rules of most of them are written in their templates (rules/numpy.py) with
NumPy functions that have rules and the small helpers here, each with a forward rule, so
that forward over reverse (`hessian`) goes through them. The tangents too long for a
template are here (`eigh_dot`, `svd_dot`, `qr_dot`, ...). Where eigenvalues (or singular
values) repeat, the derivative of the eigenvectors is undefined: the gaps
1 / (w[j] - w[i]) are then infinite, as in JAX. Generated code reaches these helpers
through `runtime`, which imports them; each helper's forward rule is above its `def`.
"""
import numpy as np

from ..errors import MissingRuleError
from .arrays import asarray
from .products import spread_to
from .pytrees import rebuild, zeros_like
from .reductions import unbroadcast
from .registry import define, helper, helper_adjoint, helpers

ns = {"np": np}


def _t(m):
    return np.swapaxes(m, -1, -2)


def lower_half(m):
    """The lower triangle of `m`, with half its diagonal (Murray's Phi, in the derivatives
    of a Cholesky factor)."""
    return np.tril(m) - 0.5 * np.eye(np.shape(m)[-1]) * m


@helper(linear="g")
def structured(g, ans):
    """The adjoint `g` of a factorization's result `ans` (a tuple of arrays), the 0-d zero
    (see `products.spread_to`) spelled out as zeros of each part."""
    return g if isinstance(g, tuple) else zeros_like(ans)


# (`g` itself: a 0-d `g` is the zero of a value no derivative flows from)
helper_adjoint(structured, params="g, like", zero="like", g="ans_bar")


@helper(linear="g")
def spread(g, like):
    """`g` as an array of the shape of `like` (the 0-d zero spelled out)."""
    return np.broadcast_to(g, np.shape(like)) if np.ndim(g) == 0 else g


helper_adjoint(spread, zero="like", g="_s2s_rebroadcast(ans_bar, g)")


@helper(linear="m")
def symmetrize(m):
    """The symmetric part of the matrices `m`: the derivative with respect to a matrix
    of which only the symmetric part is read (as JAX differentiates `eigh`)."""
    return 0.5 * (m + _t(m))


# (a projection: its own transpose)
helper_adjoint(symmetrize, m="_s2s_symmetrize(_s2s_rebroadcast(ans_bar, m))")


@helper(linear="m")
def mirrored(m, lower=True):
    """The symmetric matrices a function that reads one triangle of `m` factors: the
    lower triangle of `m` (the upper for `lower` False or "U"), mirrored; `m` itself for
    `lower` None. NumPy's `eigh`, `eigvalsh` and `cholesky`, `svd` and `pinv` with
    `hermitian=True`, and SciPy's `cholesky` read only that triangle, so their derivative
    with respect to the other one is zero. Linear in `m`."""
    if lower is None:
        return m
    tri = np.tril(m) if _reads_lower(lower) else np.triu(m)
    return tri + _t(tri) - tri * np.eye(np.shape(m)[-1], dtype=bool)


helper_adjoint(mirrored, zero="lower", m="_s2s_mirrored_adjoint(ans_bar, lower)")


@helper(linear="g")
def mirrored_adjoint(g, lower=True):
    """The adjoint of `mirrored(m, lower)`: `g` on the triangle read, where an entry off
    the diagonal gets the adjoints of both places it is mirrored to. Linear in `g`."""
    if lower is None:
        return g
    both = g + _t(g)
    return (np.tril(both) if _reads_lower(lower) else np.triu(both)) - g * np.eye(
        np.shape(g)[-1], dtype=bool)


# (each the other's transpose)
helper_adjoint(mirrored_adjoint, zero="lower", g="_s2s_mirrored(ans_bar, lower)")


def _reads_lower(lower):
    """Whether `lower` (a bool, or NumPy's `UPLO` letter) names the lower triangle."""
    return lower.upper() == "L" if isinstance(lower, str) else bool(lower)


@helper(linear="v")
def diag_embed(v):
    """Matrices with the last axis of `v` on their diagonals."""
    v = np.asarray(v)
    return v[..., :, None] * np.eye(v.shape[-1], dtype=np.result_type(v, np.float32))


helper_adjoint(diag_embed, namespace=ns, v="_s2s_rebroadcast(np.diagonal(ans_bar, 0, -2, -1), v)")


@helper(tangent="-ans * ans * (t[..., None, :] - t[..., :, None])")
def eigen_gaps(w):
    """F with F[..., i, j] = 1 / (w[j] - w[i]) off the diagonal and 0 on it."""
    w = np.asarray(w)
    eye = np.eye(w.shape[-1], dtype=bool)
    return np.where(eye, 0.0, 1.0 / np.where(eye, 1.0, w[..., None, :] - w[..., :, None]))


# (F[i, j] moves by -F[i, j]^2 (dw[j] - dw[i]))
helper_adjoint(eigen_gaps, namespace=ns, w=(
    "np.sum(ans_bar * ans * ans, axis=-1) - np.sum(ans_bar * ans * ans, axis=-2)"))


@helper(linear="ans")
def thin(ans, what, where=None):
    """`ans`, the result of a factorization, if its factors are the thin ones whose
    derivative s2sad knows; else a MissingRuleError, located at `where` (the user's file
    and line of the call, which rule templates read as `where`)."""
    square = isinstance(ans, tuple) and (
        ans[0].shape[-1] == ans[-1].shape[-2] if what == "svd"
        else ans[1].shape[-2] == ans[1].shape[-1])
    if not square:
        detail = ("full_matrices=False or of a square matrix (the extra columns "
                  "full_matrices=True adds have no unique derivative); pass "
                  "full_matrices=False" if what == "svd" else
                  "mode='reduced' of a matrix with at least as many rows as columns")
        raise MissingRuleError(f"{where + ': ' if where else ''}s2sad differentiates "
                               f"np.linalg.{what} only with {detail}")
    return ans


helper_adjoint(thin, params="x, what, where=None", zero="what, where", x="ans_bar")


#: The condition number (`n max|a| max|inv(a)|`, within a factor n of the 1-norm's) up
#: to which the cofactors of a matrix are `det(a) * inv(a).T`: their error is about it
#: times the rounding error.
COFACTORS_BY_INVERSE = 1e8


@helper(tangent="_s2s_cofactors_dot(a, d, t)")
def cofactors(a, d):
    """The cofactor matrices of the square matrices `a` (`d`: their determinants), their
    transposed adjugates: the derivative of `np.linalg.det(a)`. `d * inv(a).T` where each
    matrix is well conditioned (see COFACTORS_BY_INVERSE); else, from an SVD `a = U
    diag(s) V^T`, `det(U) det(V) U diag(c) V^T`, `c[i]` the product of the singular values
    but `s[i]` (of a complex `a = U diag(s) V^H`, `det(U) det(V^H) conj(U diag(c) V^H)`):
    exact where `a` is singular too, where inverting raises (one zero singular value
    leaves one product; two or more, none)."""
    inverse = _well_conditioned_inverse(a)
    if inverse is not None:
        return np.asarray(d)[..., None, None] * _t(inverse)
    u, s, vt = np.linalg.svd(a)
    sign = np.sign(np.linalg.det(u) * np.linalg.det(vt))
    u, vt = np.conj(u), np.conj(vt)     # (of a complex `a = U diag(s) V^H`; real: U, V^T)
    return sign[..., None, None] * (u * _others(s)[..., None, :]) @ vt


@helper(tangent=("_s2s_cofactors_adjoint(t, a, d, which)",
                 *["_s2s_no_second_derivative(\"np.linalg.det's adjoint\")"] * 2, None))
def cofactors_adjoint(b, a, d, which):
    """The adjoint of `a` (`which` 0) or `d` (1) in `cofactors(a, d)` from the adjoint `b`
    of its result, each read on its own (`cofactors` reads `d` only where it inverts
    `a`). The cofactors are the gradient of the determinant: their derivative along
    `a` and `d` together, `cofactors_dot`, is its Hessian, symmetric, which gives that
    of `a` and `d` together; where `d * inv(a).T` was computed, the part of `d`, `<b,
    inv(a).T>`, is taken out of it as the adjoint of `d`."""
    b = np.broadcast_to(b, np.shape(a))
    inverse = _well_conditioned_inverse(a)
    if inverse is None:
        return cofactors_dot(a, d, b) if which == 0 else np.zeros(np.shape(d))
    part = np.sum(b * _t(inverse), axis=(-2, -1))
    if which == 1:
        return part
    d = np.asarray(d)[..., None, None]
    return -d * _t(inverse @ b @ inverse)


helper_adjoint(cofactors, a="_s2s_cofactors_adjoint(ans_bar, a, d, 0)",
               d="_s2s_cofactors_adjoint(ans_bar, a, d, 1)")


def _well_conditioned_inverse(a):
    """`inv(a)` if each matrix of `a` is invertible with a condition number up to
    COFACTORS_BY_INVERSE (of a stack, the largest entries of all), else None."""
    try:
        inverse = np.linalg.inv(a)
    except np.linalg.LinAlgError:
        return None
    condition = np.shape(a)[-1] * np.abs(a).max() * np.abs(inverse).max()
    return inverse if condition <= COFACTORS_BY_INVERSE else None


def cofactors_dot(a, d, t):
    """The tangent of `cofactors(a, d)` along `t`. Where `a` is well conditioned, `C
    tr(inv(a) t) - d (inv(a) t inv(a)).T`. Else, with `a = U diag(s) V^T` and `B = U^T t
    V`, `det(U) det(V) U D V^T`, where D is the first-order term of the cofactors of
    `diag(s) + B`: `D[i, j] = -B[j, i] p[i, j]` off the diagonal and `D[i, i]` the sum
    over k != i of `B[k, k] p[i, k]`, `p[i, k]` the product of the singular values but
    `s[i]` and `s[k]`. No division: finite at singular matrices too."""
    inverse = _well_conditioned_inverse(a)
    if inverse is not None:
        d = np.asarray(d)[..., None, None]
        turned = inverse @ t
        trace = np.trace(turned, 0, -2, -1)[..., None, None]
        return d * trace * _t(inverse) - d * _t(turned @ inverse)
    u, s, vt = np.linalg.svd(a)
    sign = np.sign(np.linalg.det(u) * np.linalg.det(vt))
    u, vt = np.conj(u), np.conj(vt)     # (as in `cofactors`)
    b = _t(u) @ t @ _t(vt)
    n = s.shape[-1]
    p = np.zeros(s.shape + (n,), dtype=np.result_type(s, np.float32))
    for i in range(n):
        without = s.copy()
        without[..., i] = 1.0
        p[..., i, :] = _others(without)
        p[..., i, i] = 0.0
    d = -_t(b) * p + diag_embed(np.sum(p * np.diagonal(b, 0, -2, -1)[..., None, :], -1))
    return sign[..., None, None] * (u @ d @ vt)


def _others(s):
    """`c[..., i]`, the product of the `s[..., j]` but `s[..., i]` (no division)."""
    before, after = np.ones_like(s), np.ones_like(s)
    before[..., 1:] = np.cumprod(s[..., :-1], axis=-1)
    after[..., :-1] = np.cumprod(s[..., :0:-1], axis=-1)[..., ::-1]
    return before * after


def eigh_dot(t, ans):
    """The tangent of `ans = np.linalg.eigh(a)` along `t` (of which the symmetric part
    counts: the rule passes `mirrored(t, UPLO)`)."""
    w, v = ans
    s = _t(v) @ symmetrize(t) @ v
    return rebuild(ans, [np.diagonal(s, 0, -2, -1).copy(), v @ (eigen_gaps(w) * s)])


@helper
def eigh_values(a, UPLO="L"):
    """`np.linalg.eigh(a, UPLO)[0]`, where the eigenvectors of that call are not read
    (before_ad/unread_factors.py): its rules are those of `eigvalsh`, which derive no
    eigenvector (those are undefined where eigenvalues repeat, the eigenvalues' sum not)."""
    return np.linalg.eigh(a, UPLO)[0]


@helper
def svd_values(a, full_matrices=True, compute_uv=True, hermitian=False):
    """`np.linalg.svd(a, full_matrices, True, hermitian)[1]`, where the singular vectors of
    that call are not read (before_ad/unread_factors.py): the rules of
    `svd(a, compute_uv=False)`."""
    return np.linalg.svd(a, full_matrices, True, hermitian)[1]


define(eigh_values, "a, UPLO='L'", namespace=ns, returns="array",
       a="_s2s_mirrored_adjoint(_s2s_eigvalsh_adjoint(g, a, UPLO), UPLO)",
       tangent={"a": "_s2s_eigvals_dot(_s2s_mirrored(t, UPLO), np.linalg.eigh(a, UPLO)[1])"})
_H = "('L' if hermitian else None)"          # (the triangle svd reads, if one)
define(svd_values, "a, full_matrices=True, compute_uv=True, hermitian=False", namespace=ns,
       returns="array",
       a=f"_s2s_mirrored_adjoint(_s2s_svd_values_adjoint(g, _s2s_mirrored(a, {_H})), {_H})",
       tangent={"a": f"_s2s_svd_dot(_s2s_mirrored(t, {_H}), _s2s_mirrored(a, {_H}), ans, False)"})


def eigvals_dot(t, v):
    """The tangent of the eigenvalues of a symmetric matrix with eigenvectors `v`."""
    return np.diagonal(_t(v) @ symmetrize(t) @ v, 0, -2, -1).copy()


@helper(tangent=("_s2s_eigvalsh_adjoint(t, a, UPLO)", "_s2s_eigvalsh_adjoint_dot(g, a, t, UPLO)"))
def eigvalsh_adjoint(g, a, UPLO="L"):
    """The adjoint of the matrix `mirrored(a, UPLO)` in `np.linalg.eigvalsh(a, UPLO)`:
    v diag(g) v^T."""
    v = np.linalg.eigh(a, UPLO)[1]
    return (v * np.expand_dims(spread(g, v[..., 0]), -2)) @ _t(v)     # (v[..., 0]: w's shape)


@helper(tangent=("_s2s_eigvalsh_adjoint_adjoint(t, g, a, which, UPLO)",
                 "_s2s_eigvalsh_adjoint_adjoint(b, t, a, which, UPLO) if which else 0.0",
                 "_s2s_no_second_derivative(\"np.linalg.eigvalsh's adjoint\")", None, None))
def eigvalsh_adjoint_adjoint(b, g, a, which, UPLO="L"):
    """The adjoint of `g` (`which` 0) or `a` (1) in `eigvalsh_adjoint(g, a, UPLO)` from the
    adjoint `b` of its result. That is the gradient of <g, eigvalsh(a)> with respect to
    the symmetric matrix read: the adjoint of `g` is the tangent of the eigenvalues along
    `b`; that of `a`, the Hessian (symmetric) applied to the symmetric part of `b`, onto
    the triangle read."""
    b = np.broadcast_to(b, np.shape(a))
    if which == 0:
        return eigvals_dot(b, np.linalg.eigh(a, UPLO)[1])
    return mirrored_adjoint(eigvalsh_adjoint_dot(g, a, symmetrize(b), UPLO), UPLO)


helper_adjoint(eigvalsh_adjoint, namespace=ns, zero="UPLO",
               g="_s2s_rebroadcast(_s2s_eigvalsh_adjoint_adjoint(ans_bar, g, a, 0, UPLO), g)",
               a="_s2s_eigvalsh_adjoint_adjoint(ans_bar, g, a, 1, UPLO)")


def eigvalsh_adjoint_dot(g, a, t, UPLO="L"):
    """The tangent of `eigvalsh_adjoint(g, a, UPLO)` along `t`, the tangent of `a`."""
    ans = np.linalg.eigh(a, UPLO)
    v, dv = ans[1], eigh_dot(mirrored(t, UPLO), ans)[1]
    return 2 * symmetrize((dv * np.expand_dims(spread(g, ans[0]), -2)) @ _t(v))


@helper(tangent=("_s2s_svd_values_adjoint(t, a)", "_s2s_svd_values_adjoint_dot(g, a, t)"))
def svd_values_adjoint(g, a):
    """The adjoint of `a` in `np.linalg.svd(a, compute_uv=False)`: u diag(g) v^T."""
    u, s, vt = np.linalg.svd(a, full_matrices=False)
    return (u * np.expand_dims(spread(g, s), -2)) @ vt


def svd_values_adjoint_dot(g, a, t):
    """The tangent of `svd_values_adjoint(g, a)` along `t`, the tangent of `a`."""
    ans = np.linalg.svd(a, full_matrices=False)
    du, _, dvt = svd_dot(t, a, ans)
    d = np.expand_dims(spread(g, ans[1]), -2)
    return (du * d) @ ans[2] + (ans[0] * d) @ dvt


def svd_dot(t, a, ans, compute_uv=True, where=None):
    """The tangent of `ans = np.linalg.svd(a, ...)` along `t` (JAX's rule, for real
    matrices; `where`, the call's line, for `thin`)."""
    if not compute_uv:
        u, _, vt = np.linalg.svd(a, full_matrices=False)
        return np.diagonal(_t(u) @ t @ _t(vt), 0, -2, -1).copy()
    u, s, vt = thin(ans, "svd", where)
    v = _t(vt)
    ds = _t(u) @ t @ v
    f = eigen_gaps(s * s)
    dss, sds = ds * s[..., None, :], s[..., :, None] * ds
    du = u @ (f * (dss + _t(dss)))
    dv = v @ (f * (sds + _t(sds)))
    m, n = np.shape(a)[-2:]
    inverse = np.where(s == 0, 0.0, 1.0 / np.where(s == 0, 1.0, s))[..., None, :]
    if m > n:
        tv = t @ v
        du = du + (tv - u @ (_t(u) @ tv)) * inverse
    if n > m:
        tu = _t(t) @ u
        dv = dv + (tu - v @ (vt @ tu)) * inverse
    return rebuild(ans, [du, np.diagonal(ds, 0, -2, -1).copy(), _t(dv)])


def qr_dot(t, ans, where=None):
    """The tangent of `ans = np.linalg.qr(a)` along `t` (JAX's rule, for real matrices
    with at least as many rows as columns; `where`, the call's line, for `thin`)."""
    q, r = thin(ans, "qr", where)
    x = _t(np.linalg.solve(_t(r), _t(t)))          # t @ inv(r)
    c = _t(q) @ x
    lower = np.tril(c, -1)
    omega = lower - _t(lower)
    return rebuild(ans, [q @ (omega - c) + x, (c - omega) @ r])


def pinv_dot(t, a, ans):
    """The tangent of `ans = np.linalg.pinv(a)` along `t`, where the rank of `a` stays."""
    p, tt = ans, _t(t)
    pt = _t(p)
    return (-p @ t @ p + p @ (pt @ (tt - tt @ a @ p))
            + (tt @ pt @ p - p @ (a @ (tt @ pt @ p))))


@helper(tangent=("_s2s_power_dot(t, a, n)", "_s2s_power_dot_dot(d, a, n, t)"))
def power_dot(d, a, n):
    """The tangent of `np.linalg.matrix_power(a, n)` (n >= 0) along `d`: the sum of
    a^k d a^(n-1-k)."""
    a = np.asarray(a)
    t = spread(d, a)
    powers = [np.broadcast_to(np.eye(a.shape[-1]), a.shape)]
    for _ in range(n - 1):
        powers.append(powers[-1] @ a)
    out = np.zeros(np.broadcast_shapes(np.shape(t), a.shape),
                   dtype=np.result_type(t, a, np.float32))
    for k in range(n):
        out = out + powers[k] @ t @ powers[n - 1 - k]
    return out


def power_dot_dot(d, a, n, s):
    """The tangent of `power_dot(d, a, n)` along `s`, the tangent of `a`."""
    a = np.asarray(a)
    t = spread(d, a)
    out = 0.0
    for k in range(n):
        left = np.linalg.matrix_power(a, k)
        right = np.linalg.matrix_power(a, n - 1 - k)
        out = out + power_dot(s, a, k) @ t @ right + left @ t @ power_dot(s, a, n - 1 - k)
    return out


class Parts(tuple):
    """A tuple of tangents whose `+` adds them part by part: the forward rule of a
    function of several arguments with a tuple result sums one of these for each
    argument that varies (`np.linalg.lstsq`)."""

    def __add__(self, other):
        return Parts(u + v for u, v in zip(self, other))

    def __sub__(self, other):
        return Parts(u - v for u, v in zip(self, other))


def _columns(b):
    """`b` as columns, and whether it was a vector."""
    b = np.asarray(b)
    return (b[:, None], True) if b.ndim == 1 else (b, False)


def lstsq_dot(t, a, b, ans, which):
    """The part of the tangent of `ans = np.linalg.lstsq(a, b)` from the tangent `t` of
    `a` (`which` 0) or `b` (1), as `Parts`, where the rank of `a` stays: x = pinv(a) b,
    the residuals |b - a x|^2, the rank (constant) and the singular values of `a`."""
    p = np.linalg.pinv(a)
    x, vector = _columns(ans[0])
    bc, _ = _columns(b)
    r = bc - a @ x
    if which == 0:
        dx = pinv_dot(t, a, p) @ bc
        dres = -2 * np.sum(r * (t @ x), axis=0)     # (a^T r = 0 where it has residuals)
        ds = svd_dot(t, a, np.linalg.svd(a, compute_uv=False), compute_uv=False)
    else:
        dx = p @ _columns(t)[0]
        dres = 2 * np.sum(r * _columns(t)[0], axis=0)
        ds = np.zeros_like(ans[3])
    dres = dres if np.size(ans[1]) else np.zeros_like(ans[1])
    return Parts([dx[:, 0] if vector else dx, dres, 0, ds])


@helper(params="g, a, b, x, which",
        tangent=("_s2s_lstsq_adjoint(t, a, b, x, which)",
                 *["_s2s_no_second_derivative('np.linalg.lstsq')"] * 3))
def lstsq_adjoint(g, a, b, ans, which):
    """The adjoint of `a` (`which` 0) or `b` (1) in `ans = np.linalg.lstsq(a, b)`, where
    the rank of `a` stays (see `lstsq_dot`)."""
    g = structured(g, ans)
    p = np.linalg.pinv(a)
    x, vector = _columns(ans[0])
    bc, _ = _columns(b)
    xb = spread(g[0], ans[0])
    xb = xb[:, None] if vector else xb
    r = bc - a @ x
    rb = spread(g[1], ans[1]) if np.size(ans[1]) else np.zeros(x.shape[-1])
    if which == 1:
        out = _t(p) @ xb + 2 * r * rb
        return out[:, 0] if vector else out
    gp = xb @ _t(bc)                               # the adjoint of pinv(a)
    pt = _t(p)
    gt = _t(gp)
    xx, yy = gt @ p @ pt, pt @ p @ gt
    out = -pt @ gp @ pt + xx - a @ (p @ xx) + yy - (yy @ p) @ a
    out = out - 2 * (r * rb) @ _t(x)
    u, _, vt = np.linalg.svd(a, full_matrices=False)
    return out + (u * spread(g[3], ans[3])[..., None, :]) @ vt


def no_second_derivative(name):
    """Raise: s2sad has no second derivative of `name`."""
    raise MissingRuleError(f"s2sad has no second derivative of {name} (forward mode over "
                           "its reverse rule)")


def matrix_norm_slope(x, ord, axis):
    """The derivative of the matrix norm `np.linalg.norm(x, ord, axis)` (`axis` the pair
    of axes of the matrices) with respect to `x`, one matrix per other index. Where the
    norm is not differentiable it is the subgradient of the formula NumPy computes:
    'nuc' (the sum of the singular values) U @ Vt of the reduced SVD; 2 and -2 the outer
    product of the singular vectors of the largest (smallest) singular value, the mean
    of those products over the singular values equal to it (the vectors those
    `np.linalg.svd` returns); 1 and inf (-1 and -inf) `sign(x)` (0 at 0, as np.abs's
    rule) on the column (row) of the largest (smallest) absolute sum, shared equally
    among the columns (rows) that attain it, as `extremum` shares a max."""
    r, c = (a % x.ndim for a in axis)
    m = np.moveaxis(x, (r, c), (-2, -1))
    if ord in ("nuc", 2, -2):
        u, s, vt = np.linalg.svd(m, full_matrices=False)
        if ord == "nuc":
            out = u @ vt
        else:               # the largest (smallest) singular value, shared among ties
            tied = s == s[..., :1] if ord == 2 else s == s[..., -1:]
            share = tied / np.sum(tied, axis=-1, keepdims=True)
            out = (u * share[..., None, :]) @ vt
    elif ord in (1, -1, np.inf, -np.inf):
        along = -2 if ord in (1, -1) else -1          # summed along the rows or columns
        sums = np.sum(np.abs(m), axis=along, keepdims=True)
        pick = np.max(sums, axis=-1 - (along == -1), keepdims=True) if ord in (1, np.inf) \
            else np.min(sums, axis=-1 - (along == -1), keepdims=True)
        mask = sums == pick
        out = np.sign(m) * (mask / mask.sum(axis=-1 - (along == -1), keepdims=True,
                                            dtype=np.result_type(m, np.float32)))
    else:
        raise MissingRuleError(f"s2sad has no derivative rule for the matrix norm "
                               f"ord={ord!r}: it has 'fro', 'nuc', 2, -2, 1, -1, inf and -inf")
    return np.moveaxis(out, (-2, -1), (r, c))


# -- the adjoints of np.linalg.solve, cholesky and inv, and their tangents ---------------
@helper(result="fresh",
        params="g, a, b, x, which", tangent=(
            "_s2s_solve(t, a, b, x, which)",
            "_s2s_solve(-np.swapaxes(t, -1, -2) @ np.linalg.solve(np.swapaxes(a, -1, -2), g), "
            "a, b, x, which)", None,
            "_s2s_solve(g, a, b, t, which) if which == 0 else _s2s_zeros_like(ans)"))
def solve(g, a, b, ans, which):
    """The adjoint of `a` (which=0) or `b` (which=1) in `x = np.linalg.solve(a, b)`."""
    a = asarray(a)
    b_bar = np.linalg.solve(np.swapaxes(a, -1, -2), spread_to(g, np.shape(ans)))
    if which == 1:
        return unbroadcast(b_bar, b)
    if np.ndim(ans) == a.ndim - 1 and np.ndim(b) == a.ndim - 1:
        return unbroadcast(-np.expand_dims(b_bar, -1) * np.expand_dims(ans, -2), a)
    return unbroadcast(-np.matmul(b_bar, np.swapaxes(ans, -1, -2)), a)


# (with y = solve(a, ans_bar): which=1, ans = inv(a)^T g, is linear in g, and its derivative
# along `a` is -inv(a)^T da^T ans; which=0, ans = -inv(a)^T g x^T, is linear in g and in x,
# and its derivative along `a` is -inv(a)^T da^T ans too; so the adjoint of `a` is -ans y^T
# in both, the adjoint of `a` in `a @ y` from `-ans`)
helper_adjoint(solve, namespace=ns, params="g, a, b, x, which", zero="b", g=(
    "_s2s_rebroadcast(np.linalg.solve(a, _s2s_rebroadcast(ans_bar, b)) if which == 1 else "
    "-np.linalg.solve(a, _s2s_rebroadcast(ans_bar, a) @ x), g)"), a=(
    "-_s2s_matmul_lhs(ans, a, np.linalg.solve(a, _s2s_rebroadcast(ans_bar, ans)))"), x=(
    "-np.swapaxes(_s2s_rebroadcast(ans_bar, a), -1, -2) @ np.linalg.solve("
    "np.swapaxes(a, -1, -2), _s2s_rebroadcast(g, x)) if which == 0 else _s2s_rebroadcast(0.0, x)"))


@helper(result="fresh",
        params="g, L",
        tangent=("_s2s_cholesky(t, L)", "_s2s_cholesky_adjoint_dot(g, L, t)"))
def cholesky(g, ans):
    """The adjoint of `L = np.linalg.cholesky(a)` (a symmetric)."""
    lower = ans
    phi = np.tril(np.swapaxes(lower, -1, -2) @ spread_to(g, np.shape(ans)))
    phi = phi - 0.5 * np.eye(lower.shape[-1], dtype=lower.dtype) * phi
    inv = np.linalg.inv(lower)
    s = np.swapaxes(inv, -1, -2) @ phi @ inv
    return (0.5 * (s + np.swapaxes(s, -1, -2))).astype(lower.dtype, copy=False)


def cholesky_adjoint_dot(g, L, t):
    """The tangent of `cholesky(g, L)` (the adjoint of a Cholesky factor) along `L`."""
    inv = np.linalg.inv(L)
    inv_dot = -inv @ t @ inv
    g = spread_to(g, np.shape(L))
    phi = lower_half(np.tril(_t(L) @ g))
    s_dot = (_t(inv_dot) @ phi @ inv + _t(inv) @ lower_half(np.tril(_t(t) @ g)) @ inv
             + _t(inv) @ phi @ inv_dot)
    return 0.5 * (s_dot + _t(s_dot))


@helper(tangent=("_s2s_cholesky_adjoint(t, g, L, which)",
                 "_s2s_cholesky_adjoint(b, t, L, which) if which else 0.0",
                 "_s2s_no_second_derivative(\"np.linalg.cholesky's adjoint\")", None))
def cholesky_adjoint(b, g, L, which):
    """The adjoint of `g` (`which` 0) or `L` (1) in `cholesky(g, L)` from the adjoint `b`
    of its result. `cholesky(g, L)` is `sym(J^T g)`, J the tangent map of the factor, `J(t)
    = L Phi(L^-1 t L^-T)`: the adjoint of `g` is `J(sym(b))`; that of `L`, with `C = L^-1
    sym(b) L^-T`, `G Phi(C)^T - L^-T (Phi + Phi^T) C`, `Phi = Phi(L^T G)`."""
    inv = np.linalg.inv(L)
    b = np.broadcast_to(b, np.shape(L))
    c = inv @ symmetrize(b) @ _t(inv)
    if which == 0:
        return L @ lower_half(np.tril(c))
    g = spread_to(g, np.shape(L))
    phi = lower_half(np.tril(_t(L) @ g))
    return g @ _t(lower_half(np.tril(c))) - _t(inv) @ (phi + _t(phi)) @ c


helper_adjoint(cholesky, params="g, L",
               g="_s2s_rebroadcast(_s2s_cholesky_adjoint(ans_bar, g, L, 0), g)",
               L="_s2s_cholesky_adjoint(ans_bar, g, L, 1)")


@helper(result="fresh", tangent=("_s2s_inv(t, ans)", "_s2s_inv_adjoint_dot(g, ans, t)"))
def inv(g, ans):
    """The adjoint of `ans = np.linalg.inv(a)`."""
    inverse_t = np.swapaxes(ans, -1, -2)
    return -inverse_t @ spread_to(g, np.shape(ans)) @ inverse_t


# (`-y^T g y^T` is bilinear in `g` and `y`)
helper_adjoint(inv, params="g, y", namespace=ns,
               g="_s2s_rebroadcast(-(y @ ans_bar @ y), g)",
               y=("-(_s2s_spread(g, y) @ np.swapaxes(ans_bar @ y, -1, -2) + "
                  "np.swapaxes(y @ ans_bar, -1, -2) @ _s2s_spread(g, y))"))


def inv_adjoint_dot(g, ans, t):
    """The tangent of `inv(g, ans)` (the adjoint of an inverse `ans`) along `ans`."""
    g = spread_to(g, np.shape(ans))
    return -(_t(t) @ g @ _t(ans) + _t(ans) @ g @ _t(t))


helpers(__name__)
