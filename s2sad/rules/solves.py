"""Helpers of the SciPy rules (rules/scipy.py) for linear solves with structured matrices
and the matrix exponential: which entries of a matrix a solver reads, the matrix a
Cholesky or LU factor stands for and the adjoint of that map, LU's row pivoting, and the
Fréchet derivative of `expm`.

Each is small and has its forward rule above its `def`, so that forward over reverse
(`hessian`) goes through the reverse rules written with them. The module needs SciPy;
only rules/scipy.py imports it.
"""
import numpy as np
import scipy.linalg

from ..errors import MissingRuleError
from .factorizations import mirrored, mirrored_adjoint
from .registry import helper, helper_adjoint, helpers

ns = {"np": np}


def _t(m):
    return np.swapaxes(m, -1, -2)


@helper(linear=("u", "x"))
def rhs_outer(u, x):
    """`u x^T` summed over the right-hand sides: the adjoint of `a` in `a x = b` is
    `-rhs_outer(b_bar, x)`, with `b_bar` the adjoint of `b`."""
    if np.ndim(x) == 1:
        return np.outer(u, x)
    return u @ _t(x)


# (bilinear: `u x^T`, or the outer product of vectors)
helper_adjoint(rhs_outer, namespace={"np": np},
               u="_s2s_rebroadcast(_s2s_rebroadcast(ans_bar, ans) @ x, u)",
               x="_s2s_rebroadcast(np.swapaxes(_s2s_rebroadcast(ans_bar, ans), -1, -2) @ u, x)")


@helper(linear="m")
def tri_mask(m, lower, unit_diagonal=False):
    """The triangle of `m` a triangular solve reads (without the diagonal if it is a unit
    one): the derivative with respect to the other entries is zero, as in JAX."""
    if lower:
        return np.tril(m, -1 if unit_diagonal else 0)
    return np.triu(m, 1 if unit_diagonal else 0)


# (a projection: its own transpose)
helper_adjoint(tri_mask, zero="lower, unit_diagonal",
               m="_s2s_tri_mask(_s2s_rebroadcast(ans_bar, m), lower, unit_diagonal)")


_SYMMETRIC = ("sym", "symmetric", "her", "hermitian", "pos", "positive definite")
_GENERAL = (None, "gen", "general")


@helper(linear="m")
def as_read(m, assume_a, lower):
    """The matrix `scipy.linalg.solve(m, b, lower=lower, assume_a=assume_a)` solves with:
    for a symmetric kind the triangle it reads mirrored, for a structured one the entries
    of the structure; `m` itself for a general one. Linear in `m`."""
    if assume_a in _GENERAL:
        return m
    if assume_a in _SYMMETRIC:
        return mirrored(m, lower)
    return _structure(m, assume_a)


@helper(linear="g")
def as_read_adjoint(g, assume_a, lower):
    """The adjoint of `as_read` (its transpose): `g` onto the entries that are read."""
    if assume_a in _GENERAL:
        return g
    if assume_a in _SYMMETRIC:
        return mirrored_adjoint(g, lower)
    return _structure(g, assume_a)


# (its transpose; `assume_a` and `lower`, flags, have no derivative)
helper_adjoint(as_read_adjoint, zero="assume_a, lower", g="_s2s_as_read(ans_bar, assume_a, lower)")


def _diagonal(m):
    return m * np.eye(np.shape(m)[-1])


def _structure(m, assume_a):
    if assume_a == "diagonal":
        return _diagonal(m)
    if assume_a == "tridiagonal":
        return np.triu(np.tril(m, 1), -1)
    if assume_a in ("upper triangular", "lower triangular"):
        return tri_mask(m, assume_a == "lower triangular")
    raise MissingRuleError(f"s2sad has no derivative rule for scipy.linalg.solve with "
                           f"assume_a={assume_a!r}; leave it out (a general solve), or "
                           "pass 'sym', 'pos', 'diagonal', 'tridiagonal' or a triangle")


@helper(linear=("d", "c"))
def cho_product(d, c, lower):
    """The tangent of `L L^T` (or `U^T U`) along the tangent `d` of the factor in `c`
    (of `cho_factor`, only its triangle read). Linear in `d` and in `c`."""
    m = np.tril(d) @ _t(np.tril(c)) if lower else _t(np.triu(d)) @ np.triu(c)
    return m + _t(m)


@helper(linear=("s", "c"))
def cho_product_adjoint(s, c, lower):
    """The adjoint of `cho_product` along `t`: the adjoint of the factor from the adjoint
    `s` of the matrix. Linear in `s` and in `c`."""
    both = s + _t(s)
    return np.tril(both @ np.tril(c)) if lower else np.triu(np.triu(c) @ both)


# (bilinear in `s` and `c`)
helper_adjoint(cho_product_adjoint, namespace=ns, zero="lower", s=(
    "np.tril(ans_bar) @ np.swapaxes(np.tril(c), -1, -2) + np.tril(c) @ "
    "np.swapaxes(np.tril(ans_bar), -1, -2) if lower else np.swapaxes(np.triu(c), -1, -2) @ "
    "np.triu(ans_bar) + np.swapaxes(np.triu(ans_bar), -1, -2) @ np.triu(c)"), c=(
    "np.tril((s + np.swapaxes(s, -1, -2)) @ np.tril(ans_bar)) if lower else "
    "np.triu(np.triu(ans_bar) @ (s + np.swapaxes(s, -1, -2)))"))


def _permutation(piv):
    """The rows of `a` in the order `lu_factor`'s LAPACK pivots `piv` put them."""
    perm = np.arange(len(piv))
    for i, p in enumerate(piv):
        perm[i], perm[p] = perm[p], perm[i]
    return perm


@helper(linear="m")
def unpivot(m, piv):
    """`P^T m` for `a = P L U`: the rows of `m` in pivoted order."""
    return m[..., _permutation(piv), :]


helper_adjoint(unpivot, zero="piv", m="_s2s_pivot(ans_bar, piv)")      # (a permutation: its inverse)


@helper(linear="m")
def pivot(m, piv):
    """`P m`, the inverse of `unpivot`."""
    out = np.empty_like(m)
    out[..., _permutation(piv), :] = m
    return out


helper_adjoint(pivot, zero="piv", m="_s2s_unpivot(ans_bar, piv)")


@helper(tangent="np.tril(t, -1)")
def unit_lower(lu):
    """The unit lower triangular factor L packed in `lu`."""
    return np.tril(lu, -1) + np.eye(np.shape(lu)[-1])


helper_adjoint(unit_lower, namespace={"np": np}, lu="np.tril(_s2s_rebroadcast(ans_bar, lu), -1)")


@helper(tangent=(
    "_s2s_lu_product(t, lu, piv)",
    "_s2s_pivot(np.tril(d, -1) @ np.triu(t) + np.tril(t, -1) @ np.triu(d), piv)"))
def lu_product(d, lu, piv):
    """The tangent of `a = P L U` along the tangent `d` of the packed factors `lu`."""
    return pivot(np.tril(d, -1) @ np.triu(lu) + unit_lower(lu) @ np.triu(d), piv)


@helper(tangent=(
    "_s2s_lu_product_adjoint(t, lu, piv)",
    "np.tril(_s2s_unpivot(s, piv) @ np.swapaxes(np.triu(t), -1, -2), -1) + "
    "np.triu(np.swapaxes(np.tril(t, -1), -1, -2) @ _s2s_unpivot(s, piv))"))
def lu_product_adjoint(s, lu, piv):
    """The adjoint of `lu_product` along `t`: of the packed factors, from the adjoint `s`
    of `a`."""
    r = unpivot(s, piv)
    return np.tril(r @ _t(np.triu(lu)), -1) + np.triu(_t(unit_lower(lu)) @ r)


# (linear in `s`, its transpose `lu_product`; linear in the triangles of `lu` besides)
helper_adjoint(lu_product_adjoint, namespace=ns, zero="piv",
               s="_s2s_lu_product(ans_bar, lu, piv)", lu=(
    "np.triu(np.swapaxes(np.tril(ans_bar, -1), -1, -2) @ _s2s_unpivot(s, piv)) + "
    "np.tril(_s2s_unpivot(s, piv) @ np.swapaxes(np.triu(ans_bar), -1, -2), -1)"))


@helper(tangent=("_s2s_frechet2(a, t, e)", "_s2s_frechet(a, t)"))
def frechet(a, e):
    """The Fréchet derivative of `expm` at `a` along `e`: d/ds expm(a + s e) at 0, the
    upper right block of expm([[a, e], [0, a]])."""
    n = np.shape(a)[-1]
    return scipy.linalg.expm(_blocks([[a, e], [None, a]], n))[..., :n, n:]


def frechet2(a, d, e):
    """The derivative of `frechet(a, e)` along `d` in `a`: the upper right block of
    the exponential of the 4x4 block matrix of Higham and Relton (2014)."""
    n = np.shape(a)[-1]
    z = _blocks([[a, d, e, None], [None, a, None, e], [None, None, a, d],
                 [None, None, None, a]], n)
    return scipy.linalg.expm(z)[..., :n, 3 * n:]


@helper(tangent=("_s2s_frechet_adjoint(t, a, e, which)",
                 *["_s2s_no_second_derivative(\"scipy.linalg.expm's adjoint\")"] * 2, None))
def frechet_adjoint(b, a, e, which):
    """The adjoint of `a` (`which` 0) or `e` (1) in `frechet(a, e)`, the upper right block
    of `expm(M)`, `M = [[a, e], [0, a]]`, from the adjoint `b` of its result: the adjoint
    of `M` is `K = frechet(M^T, [[0, b], [0, 0]])` (the Fréchet derivative's transpose is
    the derivative at the transposed matrix); `a`'s is the sum of K's diagonal blocks, `e`'s
    its upper right block."""
    n = np.shape(a)[-1]
    b = np.broadcast_to(b, np.broadcast_shapes(np.shape(a), np.shape(e)))
    k = frechet(_t(_blocks([[a, e], [None, a]], n)), _blocks([[None, b], [None, None]], n))
    return k[..., :n, :n] + k[..., n:, n:] if which == 0 else k[..., :n, n:]


helper_adjoint(frechet, a="_s2s_frechet_adjoint(ans_bar, a, e, 0)",
               e="_s2s_frechet_adjoint(ans_bar, a, e, 1)")


def _blocks(rows, n):
    parts = [p for row in rows for p in row if p is not None]
    batch = np.broadcast_shapes(*(np.shape(p)[:-2] for p in parts))
    k = len(rows)
    out = np.zeros(batch + (k * n, k * n), dtype=np.result_type(*parts, np.float64))
    for i, row in enumerate(rows):
        for j, p in enumerate(row):
            if p is not None:
                out[..., i * n:(i + 1) * n, j * n:(j + 1) * n] = p
    return out


@helper(linear="cov")
def cov_matrix(cov, x):
    """The covariance matrix `multivariate_normal` makes of `cov` for samples `x`: the
    lower triangle of `cov` mirrored (SciPy reads no other), `cov` times the identity
    for a number, the diagonal matrix of a vector."""
    if np.ndim(cov) == 2:
        return mirrored(cov, True)
    eye = np.eye(np.shape(x)[-1])
    return cov * eye if np.ndim(cov) == 0 else cov[..., None] * eye


helper_adjoint(cov_matrix, zero="x", cov="_s2s_cov_adjoint(ans_bar, cov)")


@helper(linear="g")
def cov_adjoint(g, cov):
    """The adjoint of `cov_matrix` along `cov`, from the adjoint `g` of the matrix."""
    if np.ndim(cov) == 2:
        return mirrored_adjoint(g, True)
    return np.trace(g) if np.ndim(cov) == 0 else np.diagonal(g).copy()


# (`g`, the adjoint of the matrix, gives the matrices' size)
helper_adjoint(cov_adjoint, zero="cov", g="_s2s_cov_matrix(ans_bar, g)")


@helper(linear="x")
def samples(x, mean, cov):
    """`x` as `multivariate_normal` and `multivariate_t` read it, samples along its last
    axis: of dimension 1 (`mean` None or of size 1, `cov` a number or of size 1), a
    number or a vector holds one sample per element."""
    one = np.size(mean) == 1 if mean is not None else np.size(cov) == 1
    return np.reshape(x, (-1, 1)) if one and np.ndim(x) <= 1 else x


helper_adjoint(samples, namespace=ns, zero="mean, cov", x="np.reshape(ans_bar, np.shape(x))")


helpers(__name__)
