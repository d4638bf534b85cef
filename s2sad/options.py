"""What a compilation makes: the kind of derivative (`Variant`) and the options it is made
with (`Options`), typed values that the driver keys its cache on and the passes read
from the context (`ctx.options`).

>>> from s2sad.options import Options, Variant
>>> grad = Options(Variant.GRAD, release=True)
>>> grad.variant.fused, grad.variant.forward, grad.guard
(True, False, True)
>>> Variant.TANGENT.forward
True
"""
from __future__ import annotations

import dataclasses
import enum


class Variant(enum.Enum):
    """The kind of derivative, named as its generated function is (`f_vjp`, `f_grad`, ...).

    Reverse mode: `VJP`, `f_vjp(x) -> (y, f_pullback)`; the fused gradients, one function
    without a closure: `VALUE_AND_GRAD`, `GRAD`, `ADJOINT` (`f_adjoint(y_bar, x) ->
    x_bar`, what forward mode can differentiate), `STEP` (the adjoint of a checkpointed
    loop's step, which reuses memory) and `ADVANCE` (that step as the loop's sweeps run
    it). Forward mode: `JVP`, `f_jvp(x, x_dot) -> (y, y_dot)`, and `TANGENT`, the same
    returning the tangent alone (what `hvp` runs). Batching: `BATCHED`,
    `f_batched(x, ...)`, the function over a batch of its arguments (what `vmap` runs;
    not a derivative, made by the same compiler)."""
    VJP = "vjp"
    VALUE_AND_GRAD = "value_and_grad"
    GRAD = "grad"
    ADJOINT = "adjoint"
    STEP = "step"
    ADVANCE = "advance"
    JVP = "jvp"
    TANGENT = "tangent"
    BATCHED = "batched"

    @property
    def forward(self) -> bool:
        """Whether it is made by forward mode."""
        return self in (Variant.JVP, Variant.TANGENT)

    @property
    def fused(self) -> bool:
        """Whether it is a fused gradient: the pullback inlined after the forward pass."""
        return self in (Variant.VALUE_AND_GRAD, Variant.GRAD, Variant.ADJOINT, Variant.STEP,
                        Variant.ADVANCE)

    @property
    def called(self) -> bool:
        """Whether the API calls it itself (`grad`, `value_and_grad`, `jvp`), so that its
        guard also tests what the compilation resolved (after_ad/guard_bindings.py)."""
        return self in (Variant.VALUE_AND_GRAD, Variant.GRAD, Variant.JVP, Variant.TANGENT)


@dataclasses.dataclass(frozen=True)
class Options:
    """How a derivative is made: its `variant`; `release`, whether its code reuses memory
    (buffers of dead temporaries, `del` after the last use); `guard`, whether it starts by
    checking the types of its arguments (and, for a fused gradient, the shape `patterns`
    it is specialised on: {parameter: (dtype, shape pattern)}, see
    compilation.patterns_of); `guard_bindings`, whether that guard also tests the values
    the compilation resolved (globals, code, defaults: frontend/guards.py); `recompute`,
    whether calls of other Python functions go through their `g_adjoint` (code forward
    mode can differentiate: forward over reverse); `memory`, the bytes a checkpointed
    loop's snapshots may take; `jit`, numba.njit's options as (name, value) pairs; `aux`,
    whether the function returns a pair `(output, aux)` of which only the output is
    differentiated (`has_aux=True`: the seed is 1 for the output and zeros for `aux`);
    `complex_output`, whether the caller takes a complex output (`grad(f,
    holomorphic=True)`, forward mode called by the API, see docs/complex.md; not a callee,
    whose caller takes what it returns as real); `ndims`, (parameter, number of axes)
    pairs of array arguments, for the numba backend, whose code Numba compiles for that
    many axes (it dispatches on them, so the code may rely on them without a guard);
    `axes`, those of them that the value kinds read too (a callee's, which its caller's
    value kinds proved: ad/calls.py's `known_ndims`)."""
    variant: Variant = Variant.VJP
    release: bool = False
    guard: bool = True
    guard_bindings: bool = True
    recompute: bool = False
    patterns: dict | None = dataclasses.field(default=None, compare=False)
    memory: float | None = None
    jit: tuple = ()
    aux: bool = False
    complex_output: bool = False
    ndims: tuple = ()
    axes: tuple = ()

    @property
    def key(self) -> tuple:
        """The options as a key of the cache."""
        return (self.variant.value, self.release, self.guard, self.guard_bindings,
                self.recompute, tuple(sorted((self.patterns or {}).items())), self.memory,
                self.jit, self.aux, self.complex_output, self.ndims, self.axes)


@dataclasses.dataclass(frozen=True)
class Capabilities:
    """What the code a backend compiles can do (s2sad.backends), which the passes read
    from the context (`ctx.can`) instead of asking which backend it is: `reversed`, it
    may call `reversed(range(...))`; `tape_arrays`, its loops' tapes are arrays of
    numbers (after_ad/native_tapes.py), where a column costs next to nothing and whose
    rows forward mode over such code writes in place; `merges_subexpressions`, its
    compiler merges common subexpressions itself; `frozen_globals`, it holds the values
    of the globals it was compiled with (so data is guarded by identity);
    `built_derivatives`, it compiles the Python functions s2sad writes for the jacfwd,
    jacrev, hessian and hvp and the pullback of the vjp called in differentiated code
    (frontend/gradients.py: lists of columns, a call of the API's jvp); `graded_calls`,
    a call of a function of the user's that returns a number is differentiated by its
    `g_value_and_grad` in the forward sweep, its pullback the product of the result's
    adjoint and that gradient (ad/calls.py), not by `g_adjoint`, which runs `g` again."""
    reversed: bool = True
    tape_arrays: bool = False
    merges_subexpressions: bool = False
    frozen_globals: bool = False
    built_derivatives: bool = True
    graded_calls: bool = False
