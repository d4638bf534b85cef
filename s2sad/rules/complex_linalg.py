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
  `conj(U diag(g) V^H)`;
- `norm`: the norms of the moduli of the entries (the vector norms, `"fro"`, and the
  matrix norms 1, -1, inf and -inf), through the modulus's derivative; the matrix
  norms of singular values (2, -2, `"nuc"`) are refused.
"""
import numpy as np

from ..errors import MissingRuleError
from . import factorizations
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
                 "_s2s_no_second_derivative(\"np.linalg.eigvalsh of a complex matrix\")",
                 None))
def hermitian_eigvalsh_adjoint(g, a, UPLO="L"):
    """The adjoint of the complex Hermitian `a` in `np.linalg.eigvalsh(a, UPLO)`:
    `conj(V) diag(g) V^T`, Hermitian, on the triangle read: twice an entry off the
    diagonal (it stands for its mirror image too), the diagonal's real part."""
    v = np.linalg.eigh(a, UPLO)[1]
    b = (np.conj(v) * np.expand_dims(factorizations.spread(g, v[..., 0]), -2)) @ (
        np.swapaxes(v, -1, -2))
    tri = np.tril(b, -1) if UPLO.upper() == "L" else np.triu(b, 1)
    return 2 * tri + diag_embed(np.real(np.diagonal(b, 0, -2, -1)))


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
helper_adjoint(hermitian_eigvalsh_adjoint, zero="UPLO", g="_s2s_eigvalsh_dot(ans_bar, a, UPLO)")
define(eigvalsh, "a, UPLO='L'", a="_s2s_hermitian_eigvalsh_adjoint(g, a, UPLO)",
       namespace=ns, tangent={"a": "_s2s_eigvalsh_dot(t, a, UPLO)"}, returns="array",
       complex=True)
define(hermitian_eigvalsh_adjoint, complex=True)
define(eigvalsh_dot, complex=True)


@helper
def singular_values(a, full_matrices=True, compute_uv=True, hermitian=False):
    """`np.linalg.svd(a, ...)` of a complex `a`: its singular values, with
    `compute_uv=False` (of the factors, s2sad has no rule for complex matrices)."""
    if compute_uv or hermitian:
        raise MissingRuleError("s2sad differentiates np.linalg.svd of a complex matrix only "
                               "for its singular values, compute_uv=False (not hermitian=True)")
    return np.linalg.svd(a, compute_uv=False)


@helper(tangent=("_s2s_singular_values_dot(t, a)",
                 "_s2s_no_second_derivative(\"np.linalg.svd of a complex matrix\")"))
def singular_values_dot(d, a):
    """The tangent of the singular values of a complex `a` along `d`: `Re(u_k^H d v_k)`."""
    u, _, vh = np.linalg.svd(a, full_matrices=False)
    return np.real(np.sum(np.conj(u) * (d @ np.conj(np.swapaxes(vh, -1, -2))), axis=-2))


@helper(tangent=("_s2s_singular_values_adjoint(t, a)",
                 "_s2s_no_second_derivative(\"np.linalg.svd of a complex matrix\")"))
def singular_values_adjoint(g, a):
    """The adjoint of a complex `a` in `np.linalg.svd(a, compute_uv=False)`:
    `conj(U diag(g) V^H)`."""
    return np.conj(factorizations.svd_values_adjoint(g, a))


helper_adjoint(singular_values_adjoint, g="_s2s_singular_values_dot(ans_bar, a)")
define(singular_values, "a, full_matrices=True, compute_uv=True, hermitian=False",
       a="_s2s_singular_values_adjoint(g, a)", namespace=ns,
       tangent={"a": "_s2s_singular_values_dot(t, a)"}, returns="array", complex=True)
define(singular_values_dot, complex=True)
define(singular_values_adjoint, complex=True)


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

# not holomorphic: the primitive that takes the place of each where a complex value
# reaches it
for _f, _instead in ((np.linalg.slogdet, slogdet), (np.linalg.eigvalsh, eigvalsh),
                     (np.linalg.svd, singular_values), (np.linalg.norm, norm_of_moduli)):
    define(_f, complex=_instead)
