"""The rules of `np.fft`: the discrete Fourier transforms and their shifts.

Each transform is linear: its tangent is the transform of the tangent, and its adjoint
the transpose (no conjugate, under autograd's convention, docs/complex.md) of the
one-dimensional transforms NumPy applies one axis after another (`steps`), each with the
cropping or zero-padding of `n=` (`s=`) before it. The DFT matrix is symmetric: the
adjoint of `fft` along an axis is `fft` of the adjoint (of `ifft`, `ifft`), cropped or
padded back to the argument's length. `rfft` keeps the first `n // 2 + 1` bins of `fft`
of a real argument: its adjoint is the real part of `fft` of the adjoint padded with
zeros to `n`. `irfft` reads the first `n // 2 + 1` bins `c` (the real parts only of the
first, and of the last for an even `n`) and sums `c_k e^(2 pi i jk/n)` over the bins and
their mirror images: its adjoint is `ifft` of the adjoint, first `n // 2 + 1` bins, each
counted twice but those two.

>>> import numpy as np
>>> g = np.array([1.0, 2.0, -1.0, 0.5, 3.0])
>>> c = np.array([0.3 + 0.1j, -1.0 + 2.0j, 0.5 - 0.5j])
>>> c_bar = fourier_adjoint(g, c, "irfft", 5, -1, None)
>>> # dL = Re(c_bar dc) for L = g . irfft(c, 5), along any dc
>>> dc = np.array([0.2 - 0.7j, 1.1 + 0.4j, -0.3 + 0.9j])
>>> bool(np.isclose(np.real(np.sum(c_bar * dc)), g @ np.fft.irfft(dc, 5)))
True
"""
import numpy as np

from .complex_numbers import FROM_REAL
from .registry import define, helper

ns = {"np": np}

#: The one-dimensional transforms.
ONE_D = ("fft", "ifft", "rfft", "irfft")


def steps(name, shape, s, axes):
    """[(transform, n, axis)]: the one-dimensional transforms (of `ONE_D`) that
    `np.fft.NAME(a, s, axes)` applies to an array `a` of `shape`, in the order NumPy
    applies them (for a one-dimensional `name`, `s` is its `n` and `axes` its `axis`)."""
    rank = len(shape)
    if name in ONE_D:
        axis = axes % rank
        n = s if s is not None else 2 * (shape[axis] - 1) if name == "irfft" else shape[axis]
        return [(name, n, axis)]
    kind = name[:-1]                     # fft2 and fftn: fft
    shapeless = s is None
    if axes is None:
        axes = range(-rank if shapeless else -len(s), 0)
    axes = [int(ax) % rank for ax in np.atleast_1d(axes)]
    s = [shape[ax] for ax in axes] if shapeless else list(np.atleast_1d(s))
    if kind == "irfft" and shapeless:
        s[-1] = 2 * (shape[axes[-1]] - 1)
    s = [shape[ax] if n is None or n == -1 else int(n) for n, ax in zip(s, axes)]
    inner = list(range(len(axes) - 1))
    if kind in ("fft", "ifft"):
        return [(kind, s[i], axes[i]) for i in reversed(inner + [len(axes) - 1])]
    if kind == "rfft":
        return [("rfft", s[-1], axes[-1])] + [("fft", s[i], axes[i]) for i in reversed(inner)]
    return [("ifft", s[i], axes[i]) for i in inner] + [("irfft", s[-1], axes[-1])]


def _fit(x, m, axis):
    """`x` cropped or padded with zeros to length `m` along `axis` (what `n=` does)."""
    k = x.shape[axis]
    if k >= m:
        return np.take(x, np.arange(m), axis=axis)
    pad = [(0, 0)] * x.ndim
    pad[axis] = (0, m - k)
    return np.pad(x, pad)


def _twice(n, axis, ndim):
    """irfft's weights of its `n // 2 + 1` bins along `axis`: 2 (the bin and its mirror
    image), but 1 for the first, and the last of an even `n`."""
    twice = np.full(n // 2 + 1, 2.0)
    twice[0] = 1.0
    if n % 2 == 0:
        twice[-1] = 1.0
    shape = [1] * ndim
    shape[axis] = n // 2 + 1
    return twice.reshape(shape)


def _step_adjoint(g, kind, n, m, axis, norm):
    """The adjoint of the argument (of length `m` along `axis`) of the one-dimensional
    transform `kind` to length `n`, of the adjoint `g` of its result."""
    if kind == "fft":
        return _fit(np.fft.fft(g, axis=axis, norm=norm), m, axis)
    if kind == "ifft":
        return _fit(np.fft.ifft(g, axis=axis, norm=norm), m, axis)
    if kind == "rfft":       # (its real part is the adjoint: rfft's argument is real)
        return _fit(np.fft.fft(g, n, axis=axis, norm=norm), m, axis)
    bins = _fit(np.fft.ifft(g, axis=axis, norm=norm), n // 2 + 1, axis)     # irfft
    return _fit(bins * _twice(n, axis, np.ndim(g)), m, axis)


def _step_transpose(x, kind, n, axis, norm):
    """The transpose of `_step_adjoint` (of `x` shaped like the argument)."""
    if kind in ("fft", "ifft"):
        return getattr(np.fft, kind)(x, n, axis=axis, norm=norm)
    if kind == "rfft":
        return _fit(np.fft.fft(x, n, axis=axis, norm=norm), n // 2 + 1, axis)
    return np.fft.ifft(_fit(x, n // 2 + 1, axis) * _twice(n, axis, np.ndim(x)), n,
                       axis=axis, norm=norm)


def _lengths(name, a, s, axes):
    """[(transform, n, axis, m)]: `steps`, each with the length `m` of its argument."""
    shape = list(np.shape(a))
    out = []
    for kind, n, axis in steps(name, shape, s, axes):
        out.append((kind, n, axis, shape[axis]))
        shape[axis] = n // 2 + 1 if kind == "rfft" else n
    return out


@helper(shape_only=(1,), result="fresh", linear="g",
        adjoint=dict(g="_s2s_fourier_transpose(ans_bar, a, name, s, axes, norm)"))
def fourier_adjoint(g, a, name, s, axes, norm):
    """The adjoint of `a` in `np.fft.NAME(a, s, axes, norm)` (a one-dimensional `name`:
    `s` is its `n`, `axes` its `axis`), complex; of `rfft` and its n-d forms, the
    adjoint is its real part."""
    g = np.asarray(g)
    for kind, n, axis, m in reversed(_lengths(name, a, s, axes)):
        g = _step_adjoint(g, kind, n, m, axis, norm)
    return g


@helper(shape_only=(1,), result="fresh", linear="x",
        adjoint=dict(x="_s2s_fourier_adjoint(ans_bar, a, name, s, axes, norm)"))
def fourier_transpose(x, a, name, s, axes, norm):
    """The transpose of `fourier_adjoint(g, a, name, s, axes, norm)`, of `x` shaped like
    `a`: the transform itself, but of `rfft`'s and `irfft`'s steps, which it takes as
    complex-linear maps (`rfft` of complex values too)."""
    x = np.asarray(x)
    for kind, n, axis, _ in _lengths(name, a, s, axes):
        x = _step_transpose(x, kind, n, axis, norm)
    return x


define(fourier_adjoint, complex=True)
define(fourier_transpose, complex=True)


def _transform(prim, params, name, complex=True):
    """The rules of the transform `np.fft.NAME`, with `params`, its signature."""
    s, axes = ("n", "axis") if name in ONE_D else ("s", "axes")
    adjoint = f"_s2s_fourier_adjoint(g, a, {name!r}, {s}, {axes}, norm)"
    if complex is FROM_REAL:
        adjoint = f"np.real({adjoint})"
    define(prim, params, adjoint, namespace=ns, linear="a", returns="array",
           complex=complex)


for _name in ("fft", "ifft", "irfft"):
    _transform(getattr(np.fft, _name), "a, n=None, axis=-1, norm=None", _name)
for _name in ("fft2", "ifft2", "irfft2"):
    _transform(getattr(np.fft, _name), "a, s=None, axes=(-2, -1), norm=None", _name)
for _name in ("fftn", "ifftn", "irfftn"):
    _transform(getattr(np.fft, _name), "a, s=None, axes=None, norm=None", _name)
_transform(np.fft.rfft, "a, n=None, axis=-1, norm=None", "rfft", FROM_REAL)
_transform(np.fft.rfft2, "a, s=None, axes=(-2, -1), norm=None", "rfft2", FROM_REAL)
_transform(np.fft.rfftn, "a, s=None, axes=None, norm=None", "rfftn", FROM_REAL)

# the shifts, rolls by half the length: each is the other's transpose
define(np.fft.fftshift, "x, axes=None", "np.fft.ifftshift(g, axes)", namespace=ns,
       linear="x", returns="array", shaped="x", complex=True)
define(np.fft.ifftshift, "x, axes=None", "np.fft.fftshift(g, axes)", namespace=ns,
       linear="x", returns="array", shaped="x", complex=True)
