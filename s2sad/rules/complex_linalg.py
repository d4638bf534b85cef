"""`np.linalg` of complex matrices, under autograd's convention (docs/complex.md: the
adjoint `g` of a value `w` is the complex number with `dL = Re(g dw)`).

`solve`, `inv` and `det` are holomorphic: their rules, written with transposes and no
conjugates, hold for complex matrices as they are. The others give real values of
complex ones; each has a primitive of its own here, which before_ad/complex_values.py
calls instead where a complex matrix reaches it:

- `slogdet`: the sign `det / |det|` moves too: `d sign = sign i Im(tr(inv(a) da))`;
- `eigvalsh` of a Hermitian matrix: `d w_k = v_k^H da v_k`, so the adjoint is
  `conj(V) diag(g) V^T`, on the triangle read (an entry off the diagonal stands for
  itself and, conjugated, for its mirror image; the imaginary part of the diagonal is
  not read);
- `svd(a, compute_uv=False)`: `d s_k = Re(u_k^H da v_k)`, the adjoint
  `conj(U diag(g) V^H)`; both adjoints to second order, with any tangent of the vectors
  that keeps them (they do not depend on the phases), transposed by the symmetry of the
  Hessian;
- `eigh` of a Hermitian matrix and `svd` with its factors: each eigenvector (each pair of
  singular vectors) is defined only up to a phase `e^{i phi}`, which NumPy (LAPACK)
  picks by keeping one entry of it real (`_gauge_entries`, `_gauge_pair`). The rules
  differentiate that function: a tangent of the vectors that does not turn them, plus
  the turn that keeps that entry's phase (forward, `hermitian_eigh_dot`,
  `complex_svd_dot`), and its transpose (reverse, `_eigh_adjoint`, `_svd_adjoint`).
  Where that entry is about 0, NumPy's phase is ill-defined: forward mode refuses there,
  at the user's line, and reverse mode where the function depends on the phase (its
  derivative along it, `Im(diag(V^T G))` for `eigh`, is not zero). Second order is
  forward mode over the reverse rules: their tangents along the factors are their own
  code run on value-tangent pairs (`_Dual`);
- `norm`: the norms of the moduli of the entries (the vector norms, `"fro"`, and the
  matrix norms 1, -1, inf and -inf), through the modulus's derivative; the matrix
  norms of singular values (2, -2, `"nuc"`) are refused.
"""
import linecache

import numpy as np

from ..errors import ComplexValueError, MissingRuleError
from . import factorizations
from .complex_numbers import chooses, located
from .factorizations import diag_embed
from .pytrees import rebuild
from .registry import define, helper, helper_adjoint

ns = {"np": np}

# holomorphic (the helpers their templates call, and the tangents of those, too)
for _f in (np.linalg.solve, np.linalg.inv, np.linalg.det, factorizations.solve,
           factorizations.inv, factorizations.inv_adjoint_dot, factorizations.cofactors,
           factorizations.cofactors_adjoint, factorizations.spread,
           factorizations.structured):
    define(_f, complex=True)


@helper
def slogdet(a):
    """`np.linalg.slogdet(a)` of a complex `a`."""
    return np.linalg.slogdet(a)


@helper
def slogdet_dot(a, value, d):
    """The tangent of `value = np.linalg.slogdet(a)` of a complex `a` along `d`."""
    turned = np.trace(np.linalg.solve(a, d), 0, -2, -1)
    return value[0] * 1j * np.imag(turned), np.real(turned)


define(slogdet_dot, "a, value, d", complex=True, tangent=(
    "_s2s_no_second_derivative(\"np.linalg.slogdet's tangent of a complex matrix\")",
    None, None))

_G = "_s2s_structured(g, ans)"
define(slogdet, "a",
       f"(np.asarray({_G}[1]) + 1j * np.imag(np.asarray({_G}[0]) * ans[0]))[..., None, None]"
       " * np.swapaxes(np.linalg.inv(a), -1, -2)",
       namespace=ns, tangent="_s2s_slogdet_dot(a, ans, t)", returns="container", complex=True)


def _hermitian(t, UPLO):
    """The Hermitian matrix `eigh` and `eigvalsh` read from the triangle `UPLO` of `t`."""
    tri = np.tril(t, -1) if UPLO.upper() == "L" else np.triu(t, 1)
    return tri + np.conj(np.swapaxes(tri, -1, -2)) + diag_embed(
        np.real(np.diagonal(t, 0, -2, -1)))


@helper(tangent=("_s2s_hermitian_eigvalsh_adjoint(t, a, UPLO)",
                 "_s2s_hermitian_eigvalsh_adjoint_dot(g, a, t, UPLO)", None))
def hermitian_eigvalsh_adjoint(g, a, UPLO="L"):
    """The adjoint of the complex Hermitian `a` in `np.linalg.eigvalsh(a, UPLO)`:
    `conj(V) diag(g) V^T`, Hermitian, on the triangle read: twice an entry off the
    diagonal (it stands for its mirror image too), the diagonal's real part."""
    v = np.linalg.eigh(a, UPLO)[1]
    b = (np.conj(v) * np.expand_dims(factorizations.spread(g, v[..., 0]), -2)) @ (
        np.swapaxes(v, -1, -2))
    return _triangle_adjoint(b, UPLO)


@helper(params="g, a, d, UPLO='L'",
        tangent=('_s2s_no_second_derivative("np.linalg.eigvalsh\'s adjoint")',) * 3)
def hermitian_eigvalsh_adjoint_dot(g, a, t, UPLO="L"):
    """The tangent of `hermitian_eigvalsh_adjoint(g, a, UPLO)` along `t`, the tangent of
    `a`: `conj(V) diag(g) V^T` does not depend on the phases of the eigenvectors, so
    any tangent of them does, `dV = V (F * (V^H dH V))` (`F` the inverse gaps, `dH` the
    Hermitian matrix read from `t`)."""
    w, v = np.linalg.eigh(a, UPLO)
    dv = v @ (factorizations.eigen_gaps(w) * (np.conj(np.swapaxes(v, -1, -2)) @ _hermitian(
        t, UPLO) @ v))
    gv = np.expand_dims(factorizations.spread(g, w), -2)
    vt, dvt = np.swapaxes(v, -1, -2), np.swapaxes(dv, -1, -2)
    return _triangle_adjoint((np.conj(dv) * gv) @ vt + (np.conj(v) * gv) @ dvt, UPLO)


@helper
def hermitian_eigh_values(a, UPLO="L", file=None, line=None):
    """`hermitian_eigh(a, UPLO)[0]`, where the eigenvectors of that call are not read
    (before_ad/unread_factors.py): the rules of `eigvalsh`, which no phase enters."""
    return np.linalg.eigh(a, UPLO)[0]


@helper
def eigvalsh(a, UPLO="L"):
    """`np.linalg.eigvalsh(a, UPLO)` of a complex Hermitian `a`."""
    return np.linalg.eigvalsh(a, UPLO)


@helper(tangent=("_s2s_eigvalsh_dot(t, a, UPLO)",
                 "_s2s_no_second_derivative(\"np.linalg.eigvalsh of a complex matrix\")", None))
def eigvalsh_dot(d, a, UPLO="L"):
    """The tangent of `np.linalg.eigvalsh(a, UPLO)` of a complex Hermitian `a` along `d`:
    `Re(v_k^H h v_k)` of the Hermitian matrix `h` read from `d`."""
    v = np.linalg.eigh(a, UPLO)[1]
    return np.real(np.sum(np.conj(v) * (_hermitian(d, UPLO) @ v), axis=-2))


# (the transpose along `g` is the tangent of the eigenvalues: Re(v_k^H P v_k), P the
# lower triangle twice and the diagonal, is that of the Hermitian matrix P reads)
# (the transpose along `a` is the tangent along `ans_bar`: the Hessian of <g, eigvalsh(a)>
# is symmetric)
helper_adjoint(hermitian_eigvalsh_adjoint, zero="UPLO", g="_s2s_eigvalsh_dot(ans_bar, a, UPLO)",
               a="_s2s_hermitian_eigvalsh_adjoint_dot(g, a, ans_bar, UPLO)")
for _eigenvalues in (eigvalsh, hermitian_eigh_values):
    define(_eigenvalues, "a, UPLO='L', file=None, line=None" if _eigenvalues is not eigvalsh
           else "a, UPLO='L'", a="_s2s_hermitian_eigvalsh_adjoint(g, a, UPLO)",
           namespace=ns, tangent={"a": "_s2s_eigvalsh_dot(t, a, UPLO)"}, returns="array",
           complex=True)
define(hermitian_eigvalsh_adjoint, complex=True)
define(hermitian_eigvalsh_adjoint_dot, complex=True)
define(eigvalsh_dot, complex=True)


@helper
def singular_values(a, full_matrices=True, compute_uv=True, hermitian=False):
    """`np.linalg.svd(a, compute_uv=False)` of a complex `a`: its singular values (with
    the factors, `complex_svd`)."""
    if hermitian:
        raise MissingRuleError(_HERMITIAN_SVD)
    return np.linalg.svd(a, full_matrices, compute_uv)


@helper
def complex_svd_values(a, full_matrices=True, compute_uv=True, hermitian=False, file=None,
                       line=None):
    """`complex_svd(a, ...)[1]`, where the singular vectors of that call are not read
    (before_ad/unread_factors.py): the rules of `singular_values`, which no phase enters."""
    if hermitian:
        raise MissingRuleError(_HERMITIAN_SVD)
    return np.linalg.svd(a, full_matrices, True)[1]


_HERMITIAN_SVD = ("s2sad differentiates np.linalg.svd of a complex matrix without "
                  "hermitian=True only")


@helper(tangent=("_s2s_singular_values_dot(t, a)",
                 "_s2s_no_second_derivative(\"np.linalg.svd of a complex matrix\")"))
def singular_values_dot(d, a):
    """The tangent of the singular values of a complex `a` along `d`: `Re(u_k^H d v_k)`."""
    u, _, vh = np.linalg.svd(a, full_matrices=False)
    return np.real(np.sum(np.conj(u) * (d @ np.conj(np.swapaxes(vh, -1, -2))), axis=-2))


@helper(tangent=("_s2s_singular_values_adjoint(t, a)",
                 "_s2s_singular_values_adjoint_dot(g, a, t)"))
def singular_values_adjoint(g, a):
    """The adjoint of a complex `a` in `np.linalg.svd(a, compute_uv=False)`:
    `conj(U diag(g) V^H)`."""
    return np.conj(factorizations.svd_values_adjoint(g, a))


@helper(params="g, a, d", tangent=(
    '_s2s_no_second_derivative("np.linalg.svd\'s adjoint of a complex matrix")',) * 2)
def singular_values_adjoint_dot(g, a, t):
    """The tangent of `singular_values_adjoint(g, a)` along `t`, the tangent of `a`.
    `U diag(g) V^H` does not depend on the common phase of each pair of singular
    vectors, so any tangent of them that keeps it does: the one that turns none
    (`_svd_tangent`)."""
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    du, _, dv = _svd_tangent(t, u, s, vh)
    d = np.expand_dims(factorizations.spread(g, s), -2)
    return np.conj((du * d) @ vh + (u * d) @ np.conj(np.swapaxes(dv, -1, -2)))


# (the transpose along `a` is the tangent along `ans_bar`: the Hessian of <g, s(a)> is
# symmetric)
helper_adjoint(singular_values_adjoint, g="_s2s_singular_values_dot(ans_bar, a)",
               a="_s2s_singular_values_adjoint_dot(g, a, ans_bar)")
for _values, _params in ((singular_values, ""), (complex_svd_values, ", file=None, line=None")):
    define(_values, "a, full_matrices=True, compute_uv=True, hermitian=False" + _params,
           a="_s2s_singular_values_adjoint(g, a)", namespace=ns,
           tangent={"a": "_s2s_singular_values_dot(t, a)"}, returns="array", complex=True)
define(singular_values_dot, complex=True)
define(singular_values_adjoint, complex=True)
define(singular_values_adjoint_dot, complex=True)


@helper
def norm_of_moduli(x, ord=None, axis=None, keepdims=False):
    """`np.linalg.norm(x, ord, axis, keepdims)` of a complex `x`: the norm of the moduli
    of its entries, but for the matrix norms of singular values (refused)."""
    vector = axis is not None and np.ndim(axis) == 0 or (axis is None and np.ndim(x) == 1)
    if not vector and ord in (2, -2, "nuc"):
        raise MissingRuleError(f"s2sad has no derivative rule for the matrix norm ord={ord!r} "
                               "of a complex matrix: it has 'fro', 1, -1, inf and -inf")
    return np.linalg.norm(np.abs(x), ord, axis, keepdims)


_MODULI = "np.abs(x)"
define(norm_of_moduli, "x, ord=None, axis=None, keepdims=False",
       x=f"_s2s_norm(g, {_MODULI}, ans, ord, axis, keepdims) * np.conj(x) / "
         f"_s2s_nonzero({_MODULI})",
       namespace=ns,
       tangent={"x": f"_s2s_norm_dot(np.real(np.conj(x) * t) / _s2s_nonzero({_MODULI}), "
                     f"{_MODULI}, ans, ord, axis, keepdims)"},
       returns=None, complex=True)

# -- the tangents of the adjoints of the factors: the same code on pairs -----------------
class _Dual:
    """An array `x` with a tangent `d`, of which `+`, `-`, `*`, `/`, `@` and indexing
    give the value and the tangent (`_conj` and the others below, too): the tangent of
    each adjoint of the factors along the factors is its own code run on these."""
    __array_ufunc__ = None          # (an ndarray on the left defers to the methods here)

    def __init__(self, x, d):
        self.x, self.d = x, d

    def __add__(self, o):
        o = _pair(o)
        return _Dual(self.x + o.x, self.d + o.d)

    __radd__ = __add__

    def __sub__(self, o):
        o = _pair(o)
        return _Dual(self.x - o.x, self.d - o.d)

    def __rsub__(self, o):
        return _pair(o) - self

    def __mul__(self, o):
        o = _pair(o)
        return _Dual(self.x * o.x, self.d * o.x + self.x * o.d)

    __rmul__ = __mul__

    def __matmul__(self, o):
        o = _pair(o)
        return _Dual(self.x @ o.x, self.d @ o.x + self.x @ o.d)

    def __rmatmul__(self, o):
        return _pair(o) @ self

    def __truediv__(self, o):
        o = _pair(o)
        q = self.x / o.x
        return _Dual(q, (self.d - q * o.d) / o.x)

    def __rtruediv__(self, o):
        return _pair(o) / self

    def __neg__(self):
        return _Dual(-self.x, -self.d)

    def __getitem__(self, index):
        return _Dual(self.x[index], self.d[index])


def _pair(o):
    return o if isinstance(o, _Dual) else _Dual(o, np.zeros(np.shape(o)))


def _value(a):
    return a.x if isinstance(a, _Dual) else a


def _linear(f, a):
    """`f(a)` of a function `f` linear in `a`."""
    return _Dual(f(a.x), f(a.d)) if isinstance(a, _Dual) else f(a)


def _t(a):
    return _linear(lambda m: np.swapaxes(m, -1, -2), a)


def _conj(a):
    return _linear(np.conj, a)


def _imag(a):
    return _linear(np.imag, a)


def _diagonal(a):
    return _linear(lambda m: np.diagonal(m, 0, -2, -1), a)


def _where(ok, a, other):
    """`np.where(ok, a, other)`, `other` a constant."""
    if isinstance(a, _Dual):
        return _Dual(np.where(ok, a.x, other), np.where(ok, a.d, 0.0))
    return np.where(ok, a, other)


def _gaps(w):
    """`eigen_gaps(w)`, with its tangent (F[i, j] moves by -F[i, j]^2 (dw[j] - dw[i]))."""
    f = factorizations.eigen_gaps(_value(w))
    if not isinstance(w, _Dual):
        return f
    return _Dual(f, -f * f * (w.d[..., None, :] - w.d[..., :, None]))


def _inverse(s):
    """`1 / s`, 0 where `s` is 0, with its tangent."""
    sx = _value(s)
    inverse = np.where(sx == 0, 0.0, 1.0 / np.where(sx == 0, 1.0, sx))
    return _Dual(inverse, -inverse * inverse * s.d) if isinstance(s, _Dual) else inverse


# -- the factors of eigh and svd, in the phases NumPy picks -----------------------------
# LAPACK's zheevd (eigh) reduces the matrix to a real tridiagonal one with Householder
# reflections that leave the first row (UPLO "L"; the last, "U") alone, so that row of
# the eigenvectors is real; zgesdd (svd) reduces it to a real bidiagonal one likewise,
# which leaves the first row of V (the first column of vh) real, and of a wide matrix
# the first row of U (exactly, or, where it first factors a = L Q, up to rounding).
# Those are the phases differentiated: each vector turns so that its entry there keeps
# its phase (`_turns`).
def _gauge_entries(v, UPLO):
    """The entries of the eigenvectors `v` NumPy's `eigh(a, UPLO)` keeps real."""
    return v[..., 0 if UPLO.upper() == "L" else -1, :]


def _gauge_pair(u, vh):
    """Whether NumPy's `svd` keeps the first row of U real (of a wide matrix) rather than
    that of V, and the entries of the vectors that it keeps real: U's or V's (`u`, `vh`
    ordinary arrays or `_Dual`s)."""
    wide = np.shape(_value(u))[-2] < np.shape(_value(vh))[-1]
    return wide, (u[..., 0, :] if wide else _conj(vh[..., :, 0]))


def _well_defined(x):
    """Where the entry `x` a vector's phase is read from is far enough from 0 for that
    phase to be defined, and real, as `_gauge_entries` says NumPy keeps it (another
    LAPACK may pick the phases otherwise): up to the square root of the precision of
    its dtype."""
    tolerance = np.finfo(np.result_type(x, np.float32)).eps ** 0.5
    return (np.abs(x) > tolerance) & (np.abs(np.imag(x)) <= tolerance * np.abs(x))


def _turns(d, x, what, vectors, file, line):
    """The turn `phi` of each vector, of which `d` is a tangent that does not turn it,
    that keeps the phase of its entry `x`: `-Im(d / x)` (see `_gauge_entries`)."""
    ok = _well_defined(x)
    if not np.all(ok):
        raise _ill_defined(x, ok, what, vectors, file, line, (
            "forward mode (jvp, jacfwd, hvp, hessian) cannot tell whether the function "
            "reads that phase. Differentiate it in reverse mode (grad, value_and_grad, "
            "vjp), which can, or use the eigenvalues or singular values alone "
            "(np.linalg.eigvalsh, svd(a, compute_uv=False))"))
    return -np.imag(d / x)


def _ill_defined(x, ok, what, vectors, file, line, instead):
    """The error where the phase of a vector is not known: where `ok` is False, its entry
    `x` that NumPy keeps real is about 0, or not real."""
    real = np.all(np.where(ok, 0.0, np.abs(np.imag(x))) <= np.finfo(
        np.result_type(x, np.float32)).eps ** 0.5 * np.abs(x))
    why = ("is ill-defined: the entry it keeps real (docs/complex.md) is 0, or nearly, so "
           "the phase jumps with the matrix" if real else
           "is not known: the entry NumPy's LAPACK keeps real (docs/complex.md) is not real"
           " here, so this NumPy picks the phases otherwise")
    return ComplexValueError(
        f"{_place(file, line)}the phase NumPy picks for {vectors} {what} gives of this "
        f"complex matrix {why}; {instead}" + _text(file, line))


@located
@helper
def hermitian_eigh(a, UPLO="L", file=None, line=None):
    """`np.linalg.eigh(a, UPLO)` of a complex Hermitian `a` (called at `line` of `file`)."""
    return np.linalg.eigh(a, UPLO)


@helper(tangent=('_s2s_no_second_derivative("np.linalg.eigh\'s tangent of a complex '
                 'matrix")',) * 2)
def hermitian_eigh_dot(d, factors, UPLO="L", file=None, line=None):
    """The tangent of `factors = np.linalg.eigh(a, UPLO)` of a complex Hermitian `a` along
    `d`: with `C = V^H h V`, `h` the Hermitian matrix read from `d`, `dw = Re diag(C)`
    and `dV = V (F * C) + i V diag(phi)`, `F` the inverse gaps (`eigen_gaps`), `phi`
    the turns that keep the phases NumPy picks (`_turns`)."""
    w, v = factors
    c = np.conj(_t(v)) @ _hermitian(d, UPLO) @ v
    dv = v @ (factorizations.eigen_gaps(w) * c)
    phi = _turns(_gauge_entries(dv, UPLO), _gauge_entries(v, UPLO), "np.linalg.eigh",
                 "an eigenvector", file, line)
    return rebuild(factors, [np.real(np.diagonal(c, 0, -2, -1)),
                             dv + 1j * v * phi[..., None, :]])


@helper(tangent=(
    "_s2s_hermitian_eigh_adjoint(t, factors, UPLO, file, line)",
    "_s2s_hermitian_eigh_adjoint_dot(g, factors, t, UPLO, file, line)"))
def hermitian_eigh_adjoint(g, factors, UPLO="L", file=None, line=None):
    """The adjoint of the complex Hermitian `a` in `factors = np.linalg.eigh(a, UPLO)`, with
    the phases NumPy picks (`_eigh_adjoint`)."""
    g = factorizations.structured(g, factors)
    w, v = factors
    return _eigh_adjoint(factorizations.spread(g[0], w), factorizations.spread(g[1], v), w,
                         v, UPLO, file, line)


@helper(tangent=('_s2s_no_second_derivative("np.linalg.eigh\'s adjoint of a complex '
                 'matrix")',) * 3)
def hermitian_eigh_adjoint_dot(g, factors, d, UPLO="L", file=None, line=None):
    """The tangent of `hermitian_eigh_adjoint(g, factors, ...)` along `d`, the tangent of
    `factors`: the same computation on `_Dual`s."""
    g = factorizations.structured(g, factors)
    d = factorizations.structured(d, factors)
    w, v = (_Dual(x, factorizations.spread(dx, x)) for x, dx in zip(factors, d))
    return _eigh_adjoint(factorizations.spread(g[0], w.x), factorizations.spread(g[1], v.x),
                         w, v, UPLO, file, line).d


def _eigh_adjoint(gw, gv, w, v, UPLO, file, line):
    """The adjoint of the Hermitian matrix from the adjoints `gw` and `gv` of its
    eigenvalues `w` and eigenvectors `v` (arrays, or `_Dual`s along the factors), onto
    the triangle `UPLO` read. The derivative of the function along the turn of each
    eigenvector, `tau = -Im(diag(V^T G))`, flows back through the turn `phi = -Im(dv_r /
    v_r)` that keeps the entry `v_r` NumPy keeps real (`_turns`), as an adjoint `i tau /
    v_r` of that entry; with it the function no longer turns with the phases, and with `F`
    the inverse gaps (`eigen_gaps`) and `P = F * (V^T G) + diag(Re gw)`, the adjoint of the
    Hermitian matrix is `conj(V) P V^T`."""
    m = _t(v) @ gv
    x = _gauge_entries(v, UPLO)
    fix = _phase_adjoint(_imag(_diagonal(m)), x, gv, "np.linalg.eigh", "an eigenvector",
                         file, line)
    m = m + x[..., :, None] * fix[..., None, :]
    p = _gaps(w) * m + factorizations.diag_embed(np.real(gw))
    return _linear(lambda b: _triangle_adjoint(b, UPLO), _conj(v) @ p @ _t(v))


def _phase_adjoint(twisted, x, adjoints, what, vectors, file, line):
    """The adjoint `-i twisted / x` of the entries `x` of the vectors NumPy keeps real
    (`_gauge_entries`), through which the derivative `twisted` of the function along
    their phases flows back; 0 where `x` is about 0 or not real (`_well_defined`), and
    there a ComplexValueError unless `twisted` is 0 up to rounding: up to the square
    root of the precision of its dtype times the size of the `adjoints` of the vectors.
    `twisted` and `x` are arrays, or `_Dual`s (forward over reverse, whose forward pass
    has refused where an `x` is not `_well_defined`)."""
    ok = _well_defined(_value(x))
    if not np.all(ok):
        adjoints = adjoints if isinstance(adjoints, tuple) else (adjoints,)
        scale = sum(float(np.sqrt(np.sum(np.abs(a) ** 2))) for a in adjoints)
        precision = np.finfo(np.result_type(_value(twisted), np.float32)).eps ** 0.5
        if np.max(np.abs(np.where(ok, 0.0, _value(twisted)))) > precision * scale:
            raise _ill_defined(_value(x), ok, what, vectors, file, line, (
                "the function depends on that phase. Compute with what the phases leave "
                "alone: the moduli |v|, products v v^H or U diag(s) V^H, overlaps |u^H x|"))
    return _where(ok, -1j * twisted / _where(ok, x, 1.0), 0.0)


def _triangle_adjoint(b, UPLO):
    """The adjoint of `t` from the adjoint `b` of the Hermitian matrix `_hermitian(t,
    UPLO)`: an entry off the diagonal of the triangle read stands for itself and,
    conjugated, for its mirror image; of the diagonal, its real part is read."""
    both = b + np.conj(np.swapaxes(b, -1, -2))
    tri = np.tril(both, -1) if UPLO.upper() == "L" else np.triu(both, 1)
    return tri + diag_embed(np.real(np.diagonal(b, 0, -2, -1)))


@located
@helper
def complex_svd(a, full_matrices=True, compute_uv=True, hermitian=False, file=None, line=None):
    """`np.linalg.svd(a, full_matrices, compute_uv)` of a complex `a` (called at `line`
    of `file`)."""
    if hermitian:
        raise MissingRuleError(_HERMITIAN_SVD)
    return np.linalg.svd(a, full_matrices, compute_uv)


@helper(tangent=('_s2s_no_second_derivative("np.linalg.svd\'s tangent of a complex '
                 'matrix")',) * 3)
def complex_svd_dot(d, a, factors, compute_uv=True, file=None, line=None):
    """The tangent of `factors = np.linalg.svd(a, ...)` of a complex `a` along `d`: the
    tangent that does not turn the pairs of singular vectors (`_svd_tangent`), and the
    turns `phi` that keep the phases NumPy picks (`_turns`)."""
    if not compute_uv:
        return singular_values_dot(d, a)
    u, s, vh = factorizations.thin(factors, "svd")
    du, ds, dv = _svd_tangent(d, u, s, vh)
    wide, x = _gauge_pair(u, vh)
    phi = 1j * _turns(du[..., 0, :] if wide else dv[..., 0, :], x, "np.linalg.svd",
                      "a pair of singular vectors", file, line)[..., None, :]
    return rebuild(factors, [du + u * phi, ds, np.conj(_t(dv + np.conj(_t(vh)) * phi))])


def _svd_tangent(t, u, s, vh):
    """The tangent of the thin SVD `u diag(s) vh` of a complex matrix along `t` that
    turns no pair of singular vectors (`Im(u_k^H du_k + v_k^H dv_k) = 0`): `du, ds, dv`.
    With `C = U^H t V` and `F` the inverse gaps of `s^2`, `ds = Re diag(C)`, `dU = U Wu +
    (I - U U^H) t V S^-1`, `dV = V Wv + (I - V V^H) t^H U S^-1`, `Wu = F * (C S + S C^H)`,
    `Wv = F * (S C + C^H S)` off the diagonal and `+-i Im(C_kk) / 2 s_k` on it."""
    uh, v = np.conj(_t(u)), np.conj(_t(vh))
    c = uh @ t @ v
    ch = np.conj(_t(c))
    f = factorizations.eigen_gaps(s * s)
    inverse = _inverse(s)
    turn = diag_embed(0.5j * np.imag(np.diagonal(c, 0, -2, -1)) * inverse)
    du = u @ (f * (c * s[..., None, :] + s[..., :, None] * ch) + turn)
    dv = v @ (f * (s[..., :, None] * c + ch * s[..., None, :]) - turn)
    m, n = np.shape(u)[-2], np.shape(vh)[-1]
    if m > n:
        du = du + (t @ v - u @ c) * inverse[..., None, :]
    if n > m:
        dv = dv + (np.conj(_t(t)) @ u - v @ ch) * inverse[..., None, :]
    return du, np.real(np.diagonal(c, 0, -2, -1)), dv


@helper(tangent=(
    "_s2s_complex_svd_adjoint(t, a, factors, compute_uv, file, line)",
    "_s2s_singular_values_adjoint_dot(g, a, t) if not compute_uv else 0.0",
    "_s2s_complex_svd_adjoint_dot(g, factors, t, file, line) if compute_uv else 0.0"))
def complex_svd_adjoint(g, a, factors, compute_uv=True, file=None, line=None):
    """The adjoint of a complex `a` in `factors = np.linalg.svd(a, ...)`, with the phases
    NumPy picks (`_svd_adjoint`)."""
    if not compute_uv:
        return singular_values_adjoint(g, a)
    g = factorizations.structured(g, factors)
    u, s, vh = factorizations.thin(factors, "svd")
    return _svd_adjoint(*_svd_adjoints(g, u, s, vh), u, s, vh, file, line)


@helper(tangent=('_s2s_no_second_derivative("np.linalg.svd\'s adjoint of a complex '
                 'matrix")',) * 3)
def complex_svd_adjoint_dot(g, factors, d, file=None, line=None):
    """The tangent of `complex_svd_adjoint(g, a, factors)` along `d`, the tangent of `factors`:
    the same computation on `_Dual`s."""
    g = factorizations.structured(g, factors)
    d = factorizations.structured(d, factors)
    u, s, vh = factorizations.thin(factors, "svd")
    dual = [_Dual(x, factorizations.spread(dx, x)) for x, dx in zip((u, s, vh), d)]
    return _svd_adjoint(*_svd_adjoints(g, u, s, vh), *dual, file, line).d


def _svd_adjoints(g, u, s, vh):
    """The adjoints of the thin factors in the convention `dL = Re(tr(G^H dX))`:
    `Gu = conj(G_U)`, `g_s`, `Gv = G_Vh^T`."""
    return (np.conj(factorizations.spread(g[0], u)), factorizations.spread(g[1], s),
            _t(factorizations.spread(g[2], vh)))


def _svd_adjoint(gu, gs, gv, u, s, vh, file, line):
    """The adjoint of a complex matrix `a = U diag(s) V^H` from the adjoints `gu`, `gs`,
    `gv` of its thin factors (`_svd_adjoints`; the factors arrays, or `_Dual`s along
    them), returned conjugated, in s2sad's convention. With `J = U^H Gu`, `K = V^H Gv`,
    the derivative of the function along the turn of each pair of singular vectors is
    `tau = Im(diag(J + K))`; it flows back through the turn that keeps the entry `x` of
    the vectors NumPy keeps real (`_gauge_pair`) as an adjoint `-i tau / conj(x)` of
    that entry; with it the function no longer turns with the phases, and the adjoint is
    `U X V^H + (I - U U^H) Gu S^-1 V^H + U S^-1 Gv^H (I - V V^H)`, `X = F * (J - J^H) S + S
    F * (K - K^H) + diag(Re g_s + i Im(J_kk - K_kk) / 2 s_k)`, `F` the inverse gaps of
    `s^2`."""
    uh, v = _conj(_t(u)), _conj(_t(vh))
    j, k = uh @ gu, vh @ gv
    wide, x = _gauge_pair(u, vh)
    fix = _conj(x)[..., :, None] * _phase_adjoint(
        _imag(_diagonal(j) + _diagonal(k)), _conj(x), (gu, gv), "np.linalg.svd",
        "a pair of singular vectors", file, line)[..., None, :]
    if wide:            # (the adjoint of U's first row: only `j` reads it, as m < n)
        j = j + fix
    else:               # (of V's: only `k` reads it, as m >= n)
        k = k + fix
    f = _gaps(s * s)
    inverse = _inverse(s)
    middle = (f * (j - _conj(_t(j)))) * s[..., None, :] + s[..., :, None] * (
        f * (k - _conj(_t(k)))) + _linear(diag_embed, np.real(gs) + 0.5j * _imag(
            _diagonal(j) - _diagonal(k)) * inverse)
    out = u @ middle @ vh
    m, n = np.shape(_value(u))[-2], np.shape(_value(vh))[-1]
    if m > n:
        out = out + ((gu - u @ (uh @ gu)) * inverse[..., None, :]) @ vh
    if n > m:
        gvh = _conj(_t(gv))
        out = out + u @ ((gvh - (gvh @ v) @ vh) * inverse[..., :, None])
    return _conj(out)


@helper(tangent=())       # (it raises: a constant)
def twice_refused(what, file=None, line=None):
    """Raise: s2sad has no reverse mode over the adjoints of the eigenvectors and
    singular vectors of complex matrices."""
    raise ComplexValueError(
        f"{_place(file, line)}s2sad has no reverse mode over {what} of a complex matrix "
        "(the gradient of a gradient): for second derivatives, use hessian or hvp, which "
        "run forward mode over the gradient" + _text(file, line))


def _place(file, line):
    return f"{file}:{line}: " if file is not None else ""


def _text(file, line):
    text = linecache.getline(file, line).strip() if file is not None else ""
    return f"\n    {text}" if text else ""


define(twice_refused, nondiff=True)
define(hermitian_eigh, "a, UPLO='L', file=None, line=None",
       a="_s2s_hermitian_eigh_adjoint(g, ans, UPLO, file, line)", namespace=ns,
       tangent={"a": "_s2s_hermitian_eigh_dot(t, ans, UPLO, file, line)"},
       returns="container", complex=True)
define(complex_svd, "a, full_matrices=True, compute_uv=True, hermitian=False, file=None, "
       "line=None", a="_s2s_complex_svd_adjoint(g, a, ans, compute_uv, file, line)",
       namespace=ns, tangent={"a": "_s2s_complex_svd_dot(t, a, ans, compute_uv, file, line)"},
       returns=None, complex=True)
# (the gradient of a gradient: refused; hessian runs forward mode over the gradient)
_TWICE = "_s2s_twice_refused({!r}, file, line)"
helper_adjoint(hermitian_eigh_adjoint, zero="UPLO, file, line", **dict.fromkeys(
    ("g", "factors"), _TWICE.format("np.linalg.eigh's adjoint")))
helper_adjoint(complex_svd_adjoint, zero="compute_uv, file, line", **dict.fromkeys(
    ("g", "a", "factors"), _TWICE.format("np.linalg.svd's adjoint")))
for _f in (hermitian_eigh_dot, hermitian_eigh_adjoint, hermitian_eigh_adjoint_dot,
           complex_svd_dot, complex_svd_adjoint, complex_svd_adjoint_dot):
    define(_f, complex=True)


@chooses("a", "full_matrices", "compute_uv", "hermitian")
def svd_instead(constants):
    """What takes the place of `np.linalg.svd` called with the constant arguments
    `constants` where a complex value reaches it: the singular values' primitive with
    `compute_uv=False` (a real result), else `complex_svd`."""
    return singular_values if constants.get("compute_uv", True) is False else complex_svd


# not holomorphic: the primitive that takes the place of each where a complex value
# reaches it
for _f, _instead in ((np.linalg.slogdet, slogdet), (np.linalg.eigvalsh, eigvalsh),
                     (np.linalg.eigh, hermitian_eigh), (np.linalg.svd, svd_instead),
                     (np.linalg.norm, norm_of_moduli)):
    define(_f, complex=_instead)
