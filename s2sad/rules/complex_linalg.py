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
  singular vectors) is defined only up to a phase `e^{i phi}`, so only a function that
  does not depend on those phases has a derivative (`|v|^2`, `v v^H`, `U diag(s) V^H`,
  `|u^H x|`). The adjoint is that of such a function; the pullback checks that the
  function is one (the imaginary part of `diag(V^T G)`, the derivative along the phases,
  is zero, as PyTorch checks) and raises a `ComplexValueError` at the user's line if
  not. Forward mode has no such check (the tangent of a vector depends on how its phase
  moves, which a function of it may read), so it refuses them;
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
define(eigvalsh, "a, UPLO='L'", a="_s2s_hermitian_eigvalsh_adjoint(g, a, UPLO)",
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
    vectors, so any tangent of them that keeps it does: with `C = U^H t V` and `F` the
    inverse gaps of `s^2`, `dU = U Wu + (I - U U^H) t V S^-1`, `dV = V Wv + (I - V V^H)
    t^H U S^-1`, `Wu = F * (C S + S C^H)`, `Wv = F * (S C + C^H S)` off the diagonal and
    `+-i Im(C_kk) / 2 s_k` on it."""
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    uh, v = np.conj(np.swapaxes(u, -1, -2)), np.conj(np.swapaxes(vh, -1, -2))
    c = uh @ t @ v
    ch = np.conj(np.swapaxes(c, -1, -2))
    f = factorizations.eigen_gaps(s * s)
    inverse = np.where(s == 0, 0.0, 1.0 / np.where(s == 0, 1.0, s))
    turn = diag_embed(0.5j * np.imag(np.diagonal(c, 0, -2, -1)) * inverse)
    du = u @ (f * (c * s[..., None, :] + s[..., :, None] * ch) + turn)
    dv = v @ (f * (s[..., :, None] * c + ch * s[..., None, :]) - turn)
    m, n = np.shape(a)[-2:]
    if m > n:
        du = du + (t @ v - u @ (c)) * inverse[..., None, :]
    if n > m:
        th = np.conj(np.swapaxes(t, -1, -2))
        du_v = (th @ u - v @ ch) * inverse[..., None, :]
        dv = dv + du_v
    d = np.expand_dims(factorizations.spread(g, s), -2)
    return np.conj((du * d) @ vh + (u * d) @ np.conj(np.swapaxes(dv, -1, -2)))


# (the transpose along `a` is the tangent along `ans_bar`: the Hessian of <g, s(a)> is
# symmetric)
helper_adjoint(singular_values_adjoint, g="_s2s_singular_values_dot(ans_bar, a)",
               a="_s2s_singular_values_adjoint_dot(g, a, ans_bar)")
define(singular_values, "a, full_matrices=True, compute_uv=True, hermitian=False",
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

# -- the factors of eigh and svd: functions of them that do not depend on the phases ---
@located
@helper
def hermitian_eigh(a, UPLO="L", file=None, line=None):
    """`np.linalg.eigh(a, UPLO)` of a complex Hermitian `a` (called at `line` of `file`)."""
    return np.linalg.eigh(a, UPLO)


@helper(tangent=("_s2s_phase_tangent(\"np.linalg.eigh's adjoint\", file, line)",) * 3)
def hermitian_eigh_adjoint(g, a, ans, UPLO="L", file=None, line=None):
    """The adjoint of the complex Hermitian `a` in `ans = np.linalg.eigh(a, UPLO)`, of a
    function that does not depend on the phases of the eigenvectors (checked: the
    imaginary part of `diag(V^T G)` is zero). With `F` the inverse gaps
    (`eigen_gaps`), `P = F * (V^T G) + diag(Re g_w)`, the adjoint of the Hermitian matrix
    is `conj(V) P V^T`, and that of `a` the part the triangle read gives."""
    g = factorizations.structured(g, ans)
    w, v = ans
    gv = factorizations.spread(g[1], v)
    m = np.swapaxes(v, -1, -2) @ gv
    _gauge(np.imag(np.diagonal(m, 0, -2, -1)), gv, "np.linalg.eigh", "an eigenvector", file,
           line)
    p = factorizations.eigen_gaps(w) * m + diag_embed(np.real(factorizations.spread(g[0], w)))
    return _triangle_adjoint(np.conj(v) @ p @ np.swapaxes(v, -1, -2), UPLO)


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


@helper(tangent=("_s2s_phase_tangent(\"np.linalg.svd's adjoint\", file, line)",) * 3)
def complex_svd_adjoint(g, a, ans, compute_uv=True, file=None, line=None):
    """The adjoint of a complex `a` in `ans = np.linalg.svd(a, ...)`, of a function that
    does not depend on the common phase of each pair of singular vectors (checked: the
    imaginary part of `diag(U^H Gu + V^H Gv)` is zero, `Gu = conj(G_U)`, `Gv = G_Vh^T`,
    the adjoints in the convention `dL = Re(tr(G^H dX))`, in which the adjoint is
    `U X V^H + (I - U U^H) Gu S^-1 V^H + U S^-1 Gv^H (I - V V^H)`, `X = F * (J - J^H) S +
    S F * (K - K^H) + diag(Re g_s + i Im(J_kk - K_kk) / 2 s_k)`, `J = U^H Gu`, `K =
    V^H Gv`, `F` the inverse gaps of `s^2`); returned conjugated, in s2sad's."""
    if not compute_uv:
        return singular_values_adjoint(g, a)
    g = factorizations.structured(g, ans)
    u, s, vh = factorizations.thin(ans, "svd")
    uh, v = np.conj(np.swapaxes(u, -1, -2)), np.conj(np.swapaxes(vh, -1, -2))
    gu = np.conj(factorizations.spread(g[0], u))
    gv = np.swapaxes(factorizations.spread(g[2], vh), -1, -2)
    j, k = uh @ gu, vh @ gv
    dj, dk = np.diagonal(j, 0, -2, -1), np.diagonal(k, 0, -2, -1)
    _gauge(np.imag(dj + dk), (gu, gv), "np.linalg.svd", "a pair of singular vectors", file,
           line)
    f = factorizations.eigen_gaps(s * s)
    inverse = np.where(s == 0, 0.0, 1.0 / np.where(s == 0, 1.0, s))
    x = (f * (j - np.conj(np.swapaxes(j, -1, -2)))) * s[..., None, :] + s[..., :, None] * (
        f * (k - np.conj(np.swapaxes(k, -1, -2)))) + diag_embed(
        np.real(factorizations.spread(g[1], s)) + 0.5j * np.imag(dj - dk) * inverse)
    out = u @ x @ vh
    m, n = np.shape(a)[-2:]
    if m > n:
        out = out + ((gu - u @ (uh @ gu)) * inverse[..., None, :]) @ vh
    if n > m:
        gvh = np.conj(np.swapaxes(gv, -1, -2))
        out = out + u @ ((gvh - (gvh @ v) @ vh) * inverse[..., :, None])
    return np.conj(out)


def _gauge(twisted, adjoints, what, vectors, file, line):
    """Raise unless `twisted`, the derivative of the function along the phase of each
    vector (`vectors` of `what`), is zero up to rounding: up to the square root of the
    precision of its dtype times the size of the adjoints of the vectors."""
    adjoints = adjoints if isinstance(adjoints, tuple) else (adjoints,)
    scale = sum(float(np.sqrt(np.sum(np.abs(a) ** 2))) for a in adjoints)
    precision = np.finfo(np.result_type(twisted, np.float32)).eps ** 0.5
    if np.size(twisted) and np.max(np.abs(twisted)) > precision * scale:
        raise ComplexValueError(
            f"{_place(file, line)}the function depends on the phase of {vectors} "
            f"{what} gives of a complex matrix (each is defined only up to a factor "
            "e^(i phi), which NumPy picks), so its derivative is that of NumPy's pick. "
            "Compute with what the "
            "phases leave alone: the moduli |v|, products v v^H or U diag(s) V^H, overlaps "
            "|u^H x| (docs/complex.md)" + _text(file, line))


@helper(tangent=())       # (it raises: a constant)
def phase_tangent(what, file=None, line=None):
    """Raise: forward mode refuses the eigenvectors and singular vectors of complex
    matrices, whose tangents depend on how their phases move (see the module
    docstring)."""
    raise ComplexValueError(
        f"{_place(file, line)}forward mode (jvp, jacfwd, hvp, hessian) of {what} of a "
        "complex matrix: the phase of each of its vectors is NumPy's pick, and forward mode "
        "cannot tell whether the function reads it. Differentiate in reverse mode (grad, "
        "value_and_grad, vjp), which checks, or use the eigenvalues or singular values "
        "alone (np.linalg.eigvalsh, svd(a, compute_uv=False))" + _text(file, line))


def _place(file, line):
    return f"{file}:{line}: " if file is not None else ""


def _text(file, line):
    text = linecache.getline(file, line).strip() if file is not None else ""
    return f"\n    {text}" if text else ""


define(phase_tangent, nondiff=True)
_PHASE = "_s2s_phase_tangent({!r}, file, line)"
define(hermitian_eigh, "a, UPLO='L', file=None, line=None",
       a="_s2s_hermitian_eigh_adjoint(g, a, ans, UPLO, file, line)", namespace=ns,
       tangent={"a": _PHASE.format("np.linalg.eigh")}, returns="container", complex=True)
define(complex_svd, "a, full_matrices=True, compute_uv=True, hermitian=False, file=None, "
       "line=None", a="_s2s_complex_svd_adjoint(g, a, ans, compute_uv, file, line)",
       namespace=ns, tangent={"a": _PHASE.format("np.linalg.svd")}, returns=None,
       complex=True)
# (second derivatives: refused, as forward mode, which they would need, refuses)
_TWICE = "_s2s_phase_tangent({!r}, file, line)"
helper_adjoint(hermitian_eigh_adjoint, zero="UPLO, file, line",
               **dict.fromkeys(("g", "a", "ans"), _TWICE.format("np.linalg.eigh's adjoint")))
helper_adjoint(complex_svd_adjoint, zero="compute_uv, file, line",
               **dict.fromkeys(("g", "a", "ans"), _TWICE.format("np.linalg.svd's adjoint")))
define(hermitian_eigh_adjoint, complex=True)
define(complex_svd_adjoint, complex=True)


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
