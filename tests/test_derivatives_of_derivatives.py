"""Derivatives of derivatives (#36): reverse mode through a gradient called in NumPy code
(MAML's inner step, a gradient penalty, a learning rate tuned through a step), third and
higher derivatives (`grad(grad(grad(f)))`, nested `elementwise_grad`), and the Hessian
with respect to several arguments, each against an analytic derivative or central
differences; and the reverse rules of the runtime helpers that gradient code calls,
each against central differences of the helper on sample calls."""
import dataclasses

import numpy as np
import pytest
import scipy.linalg

import s2sad
from s2sad.rules import registry

from test_helper_facts import SAMPLES, r, spd
from test_rules_numpy import PLANAR_CROSS   # (NumPy before 2.5 takes 2-vectors in np.cross)

SPD = np.array([[2.0, 0.3, 0.1], [0.3, 1.5, 0.2], [0.1, 0.2, 1.8]])
A = np.array([[1.0, 0.4, -0.3], [0.2, 2.0, 0.5], [-0.6, 0.1, 1.2]])
XS, XP = np.array([-0.5, 0.3, 1.7, 3.0, 4.5]), np.array([0.0, 1.0, 2.5, 4.0])

@dataclasses.dataclass
class Field:
    """A record of an array, a number and an int (rules/attributes.py's samples)."""
    a: np.ndarray
    b: float
    k: int


#: sample calls of the helpers with a reverse rule that test_helper_facts has none of
MORE_SAMPLES = {
    # (rules/solves.py: x read as samples of dimension 1; rules/incomplete.py: the
    # derivatives of distribution functions in their shape parameters, whose own
    # derivatives in the shape parameters, shape_cdf2 and shape_cdf_dx, have no rule)
    "samples": [(r(3), None, 1.5), (r(2, 2), r(2), np.eye(2))],
    # (of the beta distribution, whose two shape parameters are both numbers: the
    # others' `b` is None, no value to perturb; tests/test_rules_shape_cdfs.py has them)
    "shape_cdf": [("beta", "cdf", 0, 0.3, 1.5, 2.0), ("beta", "logcdf", 1, 0.3, 1.5, 2.0),
                  ("beta", "sf", 1, r(2) * 0.1 + 0.5, 1.5, 2.0)],
    "shape_cdf2": [("beta", "cdf", 0, 0, 0.3, 1.5, 2.0)],
    "shape_cdf_dx": [("beta", "cdf", 0, 0.3, 1.5, 2.0, 0.1)],
    # (of real matrices: the transposes of these, under the convention of complex values,
    # are checked with complex ones in tests/test_complex_linalg.py)
    "hermitian_eigvalsh_adjoint": [(r(3), r(3, 3), "L"), (r(3), r(3, 3), "U")],
    "singular_values_adjoint": [(r(2), r(2, 3)), (r(3), r(4, 3))],
    "rebroadcast": [(r(3), r(2, 3)), (r(2, 3), 1.5), (r(2, 3), r(2, 3))],
    "safe_divide": [(r(2, 3), np.abs(r(3)) + 0.5), (1.5, 2.0)],
    "reshape_like": [(r(6), r(2, 3)), (r(2, 3), r(3, 2))],
    "swapaxes": [(r(2, 3, 4), 0, 2)],
    "moveaxis": [(r(2, 3, 4), 0, -1)],
    "flip": [(r(2, 3), 1), (r(2, 3),)],
    "roll": [(r(5), 2), (r(2, 3), (1, -1), (0, 1))],
    "triu": [(r(3, 3), 1)],
    "tril": [(r(3, 3),)],
    "prod_others": [(r(3, 4), 0), (r(2, 3, 2), (0, 2)), (np.array([0.5, 0.0, 2.0, -1.0]),),
                    (np.array([0.0, 3.0, 0.0]),)],
    "variance": [(r(2), r(2, 3), 1, 1), (r(1, 3), r(2, 3), 0, 0, True)],
    "trace": [(r(2), r(3, 4, 2), 1, 0, 1), (r(2), r(2, 3, 3), -1, 1, 2)],
    "split_like": [(r(2, 4), [r(2, 1), r(2, 3)], 1), (r(5), [r(1, 2), r(3)], None)],
    "unstack": [(r(3, 2), [r(3), r(3)], 1)],
    "vstack": [(r(3, 2), [r(2), r(2, 2)])],
    "retranspose": [(r(2, 3, 4), ((2, 0, 1),))],
    "untranspose": [(r(2, 3, 4), ((2, 0, 1),))],
    "untile": [(r(2, 6), r(1, 3), (2, 2))],
    "unrepeat": [(r(2, 6), r(2, 3), 2, 1), (r(6), r(3), [1, 2, 3])],
    "unsort": [(r(2, 3), r(2, 3), 0), (r(6), r(2, 3), None)],
    "unsum": [(r(3), r(2, 3)), (r(3), [1.5, r(3)])],
    "unmulti_dot": [(r(2, 5), [r(2, 3), r(3, 4), r(4, 5)]), (1.5, [r(3), r(3, 4), r(4)]),
                    (r(4), [r(3), r(3, 4)])],
    "multi_dot_dot": [([r(2, 3), 0.0, r(4, 5)], [r(2, 3), r(3, 4), r(4, 5)]),
                      ([r(3), r(3, 4)], [r(3), r(3, 4)])],
    "unsplit": [([r(2, 3), r(2, 3)], [r(2, 3), r(2, 3)], 1), ([r(3), r(3)], [r(3), r(3)], None),
                ([r(2, 2), r(2, 2)], [r(2, 2), r(2, 2)], None),
                ([r(4), r(0), r(4)], [r(4), r(0), r(4)], 0, [4, 2], r(6))],
    "resplit": [(r(2, 6), [r(2, 2), r(2, 4)], 1), (r(5), [r(2), r(3)], None),
                (r(3, 4), [r(3, 1), r(3, 3)], None), (r(5, 2), [r(2, 2), r(3, 2)]),
                (r(6), [r(4), r(0), r(4)], 0, [4, 2])],
    "unmeshgrid": [([r(4, 3), r(4, 3)], w, r((3, 4)[w]), "xy") for w in (0, 1)]
    + [([r(3, 4, 2)] * 3, w, r((3, 4, 2)[w]), "ij") for w in (0, 1, 2)],
    "remeshgrid": [(r((3, 4)[w]), w, [r(4, 3), r(4, 3)], "xy") for w in (0, 1)]
    + [(r(2), 2, [r(3, 4, 2)] * 3, "ij"), (r(4), 0, [r(4, 3), r(4, 3)], "ij")],
    "unrot90": [(r(2, 3), 1), (r(2, 3, 4), 3, (1, 2)), (r(3, 3), -2)],
    "unappend": [(r(5), r(2), r(3), None, 0), (r(5), r(2), r(3), None, 1),
                 (r(2, 5), r(2, 2), r(2, 3), 1, 1), (r(6), r(2, 2), r(2), None, 0)],
    "unpad": [(r(4, 5), r(2, 3), ((1, 1), (2, 0))), (r(7), r(3), 2, "reflect"),
              (r(6), r(3), (1, 2), "edge")],
    "unpad_constant": [(r(4, 5), r(2, 3), ((1, 1), (2, 0)), 0.5), (r(5), r(3), 1)],
    "uncolumn_stack": [(r(3, 3), [r(3), r(3, 2)])],
    "undiagonal": [(r(2), r(2, 3), 1), (r(2, 3), r(3, 4, 2), 0, 0, 1)],
    "unkron": [(r(4, 6), r(2, 3), r(2, 2), w) for w in (0, 1)] + [
        (r(2, 6), r(3), r(2, 2), w) for w in (0, 1)],
    "uncross": [(r(4, 3), a, b, np.cross(a, b), w) for a, b in [(r(4, 3), r(3))] for w in (0, 1)]
    + [(r(3, 2), a, b, np.cross(a, b, axis=0), w, -1, -1, -1, 0) for a, b in [(r(3, 2), r(3, 2))]
       for w in (0, 1)]
    + [(r(3, 4), a, b, np.cross(a, b, 0, 1, 0), w, 0, 1, 0) for a, b in [(r(3, 4), r(4, 3))]
       for w in (0, 1)]
    + ([(r(4), a, b, a[:, 0] * b[1] - a[:, 1] * b[0], w) for a, b in [(r(4, 2), r(2))]
        for w in (0, 1)]     # (2-vectors, which NumPy 2 deprecates: c their z components)
       + [(r(4, 3), a, b, np.cross(np.pad(a, [(0, 0), (0, 1)]), b), w)
          for a, b in [(r(4, 2), r(3))] for w in (0, 1)] if PLANAR_CROSS else []),
    "untake_along_axis": [(r(2, 2), r(2, 3), np.array([[0, 2], [1, 1]]), 1),
                          (r(4), r(5), np.array([0, 0, 3, 1]), None)],
    "zero_at": [(r(2, 3), (0, slice(None))), (r(4), np.array([0, 2]))],
    "take": [(r(5), np.array([1, 3, 1])), (r(2, 3), (slice(None), 1))],
    "unouter": [(d, r(3), r(4), w) for d in (r(3, 4), r(1, 4), r(3, 1), r(1, 1)) for w in (0, 1)]
    + [(r(2, 3, 4), r(2, 3), r(4), w) for w in (0, 1)],
    "rhs_outer": [(r(3), r(4)), (r(3, 2), r(4, 2)), (r(2, 3, 2), r(2, 4, 2))],
    "tri_mask": [(r(3, 3), True), (r(3, 3), False, True), (r(2, 3, 3), True, True)],
    "unit_lower": [(r(3, 3),), (r(2, 3, 3),)],
    "structured": [((r(2), r(2, 2)), (r(2), r(2, 2)))],
    "spread": [(np.float64(1.5), r(2, 3)), (r(2, 3), r(2, 3))],
    "symmetrize": [(r(3, 3),), (r(2, 3, 3),)],
    "thin": [((r(3, 2), r(2), r(2, 2)), "svd"), ((r(3, 2), r(2, 2)), "qr")],
    "solve": [(r(3, 2), SPD, b, np.linalg.solve(SPD, b), w) for b in [r(3, 2)] for w in (0, 1)]
    + [(r(3, 2), A, b, np.linalg.solve(A, b), w) for b in [r(3, 2)] for w in (0, 1)]
    + [(r(3), A, b, np.linalg.solve(A, b), w) for b in [r(3)] for w in (0, 1)],
    "shaped_as": [([1.0, 2.0, 3.0], r(3)), ((1.0, 2.0), r(2)), (r(3), r(3))],
    "weights_like": [(r(2, 3), r(3), 1), (r(2, 3), r(2, 3)), (r(4), r(4), 0)],
    "trapezoid_weights": [(r(5), np.sort(r(5))), (r(2, 4), np.sort(r(4)), 1.0, 1),
                          (r(3, 4), np.sort(r(3, 4), axis=0), 1.0, 0)],
    "unpolyval": [(r(3), [1.0, -2.0, 0.5], r(3)), (1.5, r(4), 0.7), (r(2, 3), r(3), r(2, 3), 1)],
    "unconvolve": [(r(n), a, v, mode, w) for a, v in [(r(5), r(3)), (r(3), r(5))]
                   for mode, n in [("full", 7), ("same", 5), ("valid", 3)] for w in (0, 1)],
    "uncorrelate": [(r(n), a, v, mode, w) for a, v in [(r(5), r(3)), (r(3), r(5))]
                    for mode, n in [("full", 7), ("same", 5), ("valid", 3)] for w in (0, 1)],
    "unquantile": [(np.float64(1.0), r(7), 0.3), (r(2), r(7), [0.2, 0.9]), (r(3), r(4, 3), 0.5, 0),
                   (r(4, 1), r(4, 3), 0.5, 1, "linear", True), (np.float64(1.0), r(5), 0.3, None, "nearest"),
                   (np.float64(1.0), np.array([0.5, np.nan, -1.0, 2.0]), 0.4, None, "linear",
                    False, True)],
    "unquantile_q": [(np.float64(1.0), r(7), 0.3), (r(2), r(7), np.array([0.2, 0.9])),
                     (np.float64(1.0), r(7), 30.0, None, "linear", False, False, 100),
                     (r(3), r(4, 3), 0.6, 0)],
    "ungradient": [(r(5), r(5)), ([r(3, 4), r(3, 4)], r(3, 4)), (r(5), r(5), (0.5,), None, 2),
                   (r(3, 4), r(3, 4), (), 1), (r(4), r(4), (np.array([0.0, 0.5, 1.5, 1.7]),))],
    "uninterp": [(r(5), XS, XP, r(4)), (r(5), XS, XP, r(4), 1.0, 2.0), (1.3, 2.2, XP, r(4))],
    "dict_set_value": [({"a": r(3), "b": 1.0}, "a")],
    "attr_set_value": [(Field(r(3), 1.0, 2), Field(r(3), 2.0, 1), "a"),
                       (Field(r(2), 1.0, 2), Field(r(2), 2.0, 1), "b")],
    "attr_set_value_back": [(r(3), Field(r(3), 1.0, 2), "a"), (1.5, Field(r(2), 0.5, 1), "b")],
    "unattr_set": [(Field(r(3), 1.0, 2), Field(r(3), 2.0, 1), "a"),
                   (Field(r(2), 1.5, 2), Field(r(2), 2.0, 1), "k")],
    "undict_of": [({"a": r(2), "b": r(2)}, ["a", "b", "a"], [r(2), r(2), r(2)])],
    "undict_set": [({"a": r(2), "b": 1.5, "c": r(3)}, {"a": r(2), "b": 2.0}, "c"),
                   ({"a": r(2), "b": 1.5}, {"a": r(2), "b": 2.0}, "b")],
    "unget": [(r(2), {"a": r(2), "b": 1.0}, "a"), (1.5, {"a": r(2)}, "z")],
    "unget_default": [(r(2), {"a": r(2)}, "a"), (r(2), {"a": r(2)}, "z")],
    "unsequence": [([r(2), 1.0], [r(2), 1.0], [0.0, 0.0]), (r(3), {"a": 1}, r(3))],
    "unsort_list": [([1.0, 2.0, 3.0], [0.3, -0.1, 0.2]), (r(3), [0.3, -0.1, 0.2], True)],
    "exponent_term": [(r(3), np.abs(r(3)) + 0.5), (r(2, 3), np.abs(r(3)) + 0.5), (1.5, 2.5)],
    "nonzero": [(np.abs(r(3)) + 0.5,), (2.5,)],
    "nanvariance": [(r(3), np.array([[1.0, np.nan, 2.0, 0.5], [0.3, -1.0, 2.0, 4.0],
                                     [np.nan, np.nan, 1.0, 2.0]]), 1, 1),
                    (np.float64(1.5), r(5)), (r(3, 1), r(3, 4), 1, 0, True)],
    "linspace_end": [(r(5), 1.0, 2.0, 5, True, 0), (r(2, 5), r(2), 2.0, 5, True, 0, 1), (r(5, 2), r(2), 2.0, 5, False, 1),
                     (r(4, 3), r(2, 1, 3), 2.0, 4, True, 0)],
    "arange_part": [(r(5), 1.5, 4.0, 0.5, 0), (r(5), 1.5, 4.0, 0.5, 2), (r(3), 3.0)],
    "norm": [(g, x, np.linalg.norm(x, *more), *more) for g, x, *more in [
        (np.float64(1.0), r(3)), (r(2), r(2, 3), None, 1), (r(2, 1), r(2, 3), 3, 1, True),
        (np.float64(0.7), r(2, 3), "fro"), (r(3), r(2, 3), 1, 0),
        (np.float64(0.7), r(3, 3), 1)]],
    # (the tangent of np.linalg.norm along u: (u, x, its norm, ord, axis, keepdims))
    "norm_dot": [(u, x, np.linalg.norm(x, *more), *more) for u, x, *more in [
        (r(3), r(3)), (r(2, 3), r(2, 3), None, 1), (r(2, 3), r(2, 3), 3, 1, True),
        (r(2, 3), r(2, 3), "fro"), (r(2, 3), r(2, 3), 1, 0)]],
    "prod_others_dot": [(r(3, 4), r(3, 4), 0), (r(2, 3, 2), r(2, 3, 2), (0, 2)),
                        (np.array([0.5, 0.0, 2.0, -1.0]), r(4))],
    "clip_mask": [(r(4), -0.5, 0.5)],
    "first": [(2.0, 1, 1.0, 2.0, 2.0)],
    "int_zero": [(r(3), float), (r(3), int), (r(2, 2),)],
    "cast_like": [(r(3), r(3).astype(np.float32), np.float32), (r(3), r(3), int)],
    "diag": [(r(3, 3), r(3), 1), (r(2), r(3, 3), -1)],
    "mirrored": [(r(3, 3), True), (r(2, 3, 3), "U"), (r(3, 3), None)],
    "mirrored_adjoint": [(r(3, 3), True), (r(2, 3, 3), "U"), (r(3, 3), None)],
    "diag_embed": [(r(3),), (r(2, 3),)],
    # (well separated: the gaps' reciprocals of random draws can be ill-conditioned)
    "eigen_gaps": [(np.array([0.3, -0.8, 1.4, 2.2]),),
                   (np.array([[0.1, 0.9, 2.0], [-1.0, 0.5, 1.7]]),)],
    "cofactors": [(a, np.linalg.det(a)) for a in (spd(3), r(3, 3), r(2, 3, 3))],
    "eigvalsh_adjoint": [(r(3), spd(3)), (r(3), r(3, 3), "U"), (r(2, 3), r(2, 3, 3))],
    "cholesky": [(r(2, 3, 3), np.linalg.cholesky(np.stack([spd(3), spd(3)])))],
    "inv": [(r(2, 3, 3), np.linalg.inv(r(2, 3, 3))), (np.float64(0.5), np.linalg.inv(r(3, 3)))],
    "as_read_adjoint": [(r(3, 3), kind, lower) for kind in (None, "sym", "diagonal",
                        "tridiagonal", "upper triangular", "lower triangular")
                        for lower in (True, False)],
    "cho_product_adjoint": [(r(3, 3), r(3, 3), True), (r(2, 3, 3), r(2, 3, 3), False)],
    "pivot": [(r(3, 3), np.array([2, 2, 2])), (r(2, 3, 2), np.array([1, 2, 2]))],
    "unpivot": [(r(3, 3), np.array([2, 2, 2])), (r(2, 3, 2), np.array([1, 2, 2]))],
    "lu_product_adjoint": [(r(3, 3), r(3, 3), np.array([2, 1, 2])),
                           (r(2, 3, 3), r(2, 3, 3), np.array([1, 1, 2]))],
    "cov_matrix": [(r(3, 3), r(4, 3)), (1.5, r(3)), (r(3), r(2, 3))],
    "cov_adjoint": [(r(3, 3), r(3, 3)), (r(3, 3), 1.5), (r(3, 3), r(3))],
    "frechet": [(0.3 * r(3, 3), r(3, 3)), (0.3 * r(2, 3, 3), r(2, 3, 3))],
    "unhead": [([1.0, 2.0], [0.5, 1.5, 2.0])],
    "hstack": [(r(2, 5), [r(2, 2), r(2, 3)]), (r(3), [1.0, r(2)])],
    "unhstack": [([r(2), r(3)], r(5), [r(2), r(3)]),
                 ([r(2, 2), r(2, 1)], r(2, 3), [r(2, 2), r(2, 1)])],
    "from_array": [(r(2, 3), [r(3), r(3)]), (1.5, [r(3), 2.0]), (r(2), (1.0, 2.0)),
                   (r(3), r(3).astype(np.float32)), (r(2, 2), [[1.0, 2.0], [3.0, 4.0]])],
    "to_array": [([r(3), r(3)], r(2, 3), [r(3), r(3)]), (r(2), 1.5, [r(3), r(3)]),
                 (r(2), r(2), (1.0, 2.0))],
    "unlast": [(1.5, [0.5, 1.5, 2.0])],
    "lead": [(r(2, 3), r(4)), (r(3), 2.0)],
    "partition_order": [(r(5), np.partition(r(5), 2))],
    "running_source": [(np.maximum.accumulate(r(5)),), (np.minimum.accumulate(r(2, 3), 1), 1)],
    "pair_rows": [(r(4, 2), 0), (r(4, 2), 1)],
    "distance_slope": [(r(3, 1, 4), r(1, 2, 4), metric, p, which)
                       for metric, p in [("euclidean", None), ("sqeuclidean", None),
                                         ("cityblock", None), ("chebyshev", None),
                                         ("minkowski", 3), ("minkowski", 2.5), ("cosine", None)]
                       for which in (0, 1)] + [(r(3, 2), r(3, 2), "euclidean", None, 0)],
    "polygamma": [(0, np.abs(r(3)) + 0.5), (2, 1.5)],
    "polyder_value": [(r(4), r(3), 1), (r(4), 0.7, 2), (r(3), r(2), 4)],
    "midpoints": [(r(5),), (r(3, 4), 0), (r(3, 4), -1)],
    "unmidpoints": [(r(4),), (r(2, 4), 0)],
    "as_column": [(r(3),), (np.float64(1.5),), (r(2, 3),)],
    "unselect": [(r(2, 3), [r(2, 3) > 0, r(3) > 0.5], [r(2, 3), r(3)], 1.5, w) for w in (0, 1)]
    + [(r(4), [r(4) > 0], [r(4)], r(4), w) for w in (0, 1)],
    "undiff": [(r(4),), (r(3), 2), (r(2, 3), 1, 0), (0.0, 1)],
    "cumprod": [(g, x, np.cumprod(x, axis), axis) for g, x, axis in [
        (r(4), r(4), None), (r(2, 3), r(2, 3), 1), (np.float64(0.5), r(3, 2), 0),
        (r(6), r(2, 3), None)]],
    "interp_slope": [(np.array([-1.0, 0.3, 1.5, 2.5, 4.0]), np.array([0.0, 1.0, 2.0, 3.0]),
                      r(4))],
    "uninterp_slope": [(r(5), np.array([-1.0, 0.3, 1.5, 2.5, 4.0]),
                        np.array([0.0, 1.0, 2.0, 3.0]), r(4))],
    "interp_outside": [(r(5), np.array([-1.0, 0.3, 1.5, 2.5, 4.0]), np.array([0.0, 1.0, 3.0]),
                        side) for side in (0, 1)],
    "einsum": [(r(2, 2), "ij,jk->ik", 1, r(2, 3), r(3, 2)), (r(3), "ij,j->i", 0, r(3, 4), r(4)),
               (np.float64(0.5), "ii->", 0, r(3, 3)),
               (r(2, 4), "...j,jk->...k", 0, r(2, 3), r(3, 4)),
               (r(3, 4), "ij,jk,kl->il", 1, r(3, 2), r(2, 5), r(5, 4)),
               (r(3), "ij,j", 1, r(3, 4), r(4)), (r(2, 4), "ij,jk->ik", None, r(2, 3), r(3, 4)),
               (np.float64(0.5), "ij->ji", None, r(2, 3))],
    "undelete": [(r(4), r(2, 3), [1, 4]), (r(2, 2), r(2, 3), 0, 1)],
    "uninsert": [(r(8), r(2, 3), [1, 1], r(2)), (r(3, 3), r(2, 3), 1, r(3), 0)],
    "uninsert_values": [(r(8), r(2, 3), [1, 1], r(2)), (r(3, 3), r(2, 3), 1, r(3), 0),
                        (r(2, 4), r(2, 3), 2, 1.5, 1)],
}

X = np.arange(6.0).reshape(3, 2) / 5
W = np.array([0.3, -0.2])


def central(f, x, h=1e-6):
    """The gradient of scalar `f` at `x` by central differences."""
    x = np.asarray(x, float)
    g = np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e.flat[i] = h
        g.flat[i] = (f(x + e) - f(x - e)) / (2 * h)
    return g if x.ndim else float(g)


def loss(w, x):
    return np.sum((x @ w) ** 2)


def tanh_loss(w, x):
    return np.mean(np.tanh(x @ w) ** 2) + 0.5 * np.sum(w[1:] * w[:-1])


dloss = s2sad.grad(loss)
dtanh_loss = s2sad.grad(tanh_loss)


def maml(w):
    w2 = w - 0.1 * dloss(w, X)
    return loss(w2, X)


def penalised(w):
    g = dtanh_loss(w, X)
    return tanh_loss(w, X) + 0.3 * np.sum(g * g)


def tuned(rate):
    w2 = W - rate * dtanh_loss(W, X)
    return tanh_loss(w2, X)


@pytest.mark.parametrize("f, x", [(maml, W), (penalised, W), (tuned, 0.7)],
                         ids=["maml", "gradient_penalty", "learning_rate"])
def test_reverse_mode_through_a_gradient_in_numpy_code(f, x):
    assert np.allclose(s2sad.grad(f)(x), central(f, x), rtol=1e-6, atol=1e-8)


def shuffled_loss(w, x):
    m = np.reshape(np.outer(w, w), (4,))
    return (np.max(np.cumsum(m) * np.roll(m, 1)) + np.std(x @ w)
            + np.sum(np.tensordot(x, w, 1) ** 2))


def transposed_loss(w, x):
    a = np.outer(w, w)
    return (np.sum(np.triu(a.T) * np.flip(a, 0)) + np.inner(w, w) ** 2
            + np.sum(np.swapaxes(x, 0, 1) ** 2 * w[:, None]))


@pytest.mark.parametrize("inner_loss", [shuffled_loss, transposed_loss])
def test_reverse_mode_through_the_gradient_of_array_code(inner_loss):
    """Gradient code calling the helpers of reshapes, transposes, flips, rolls, masks,
    cumulative sums, extrema, a standard deviation and products, in reverse mode."""
    d = s2sad.grad(inner_loss)

    def meta(w):
        return inner_loss(w - 0.1 * d(w, X), X)
    assert np.allclose(s2sad.grad(meta)(W), central(meta, W), rtol=1e-6, atol=1e-8)


def quartic(x):
    return x ** 4


def mixed(x, y):
    return np.sin(x) * y ** 3


def test_third_and_fourth_derivatives():
    d = s2sad.grad
    assert d(d(d(quartic)))(2.0) == pytest.approx(24 * 2.0)
    assert d(d(d(d(quartic))))(2.0) == pytest.approx(24.0)
    x, y = 0.7, 1.3
    assert d(d(d(mixed), wrt=1), wrt=1)(x, y) == pytest.approx(6 * y * np.cos(x))
    assert d(d(d(mixed)))(x, y) == pytest.approx(-np.cos(x) * y ** 3)
    assert d(d(d(mixed), wrt=1))(x, y) == pytest.approx(-3 * y ** 2 * np.sin(x))


def tanh_sum(x):
    return np.sum(np.tanh(x * X)) + np.max(x * X[0]) * x


def test_third_and_fourth_derivatives_of_array_code():
    d = s2sad.grad
    x = 0.7
    t = np.tanh(x * X)
    s = 1 - t ** 2
    assert d(d(d(tanh_sum)))(x) == pytest.approx(np.sum(X ** 3 * (4 * t ** 2 * s - 2 * s ** 2)))
    assert d(d(d(d(tanh_sum))))(x) == pytest.approx(
        np.sum(X ** 4 * (16 * t * s ** 2 - 8 * t ** 3 * s)))


D2 = s2sad.grad(s2sad.grad(quartic))


def stored_second_derivative(x):
    return D2(x) * x            # 12 x^3


def test_a_stored_second_derivative_called_in_a_differentiated_function():
    x = 1.5
    assert s2sad.grad(stored_second_derivative)(x) == pytest.approx(36 * x ** 2)
    assert s2sad.jvp(stored_second_derivative, (x,), (1.0,)) == pytest.approx(
        (12 * x ** 3, 36 * x ** 2))
    assert s2sad.hessian(stored_second_derivative)(x) == pytest.approx(72 * x)


def sin_dot(x):
    return np.sum(np.sin(x) * x)


def test_jvp_of_a_gradient_is_forward_over_reverse():
    x, v = np.array([0.3, 0.5]), np.array([1.0, -1.0])
    value, tangent = s2sad.jvp(s2sad.grad(sin_dot), (x,), (v,))
    assert np.allclose(value, np.cos(x) * x + np.sin(x))
    assert np.allclose(tangent, (2 * np.cos(x) - x * np.sin(x)) * v)
    value, tangent = s2sad.jvp(s2sad.grad(s2sad.grad(quartic)), (2.0,), (0.5,))
    assert (value, tangent) == pytest.approx((48.0, 0.5 * 48.0))
    t = np.tanh(x)
    value, tangent = s2sad.jvp(s2sad.elementwise_grad(np.tanh), (x,), (v,))
    assert np.allclose(tangent, -2 * t * (1 - t ** 2) * v)


def weighted_distance(c, p, w):
    return w * np.sum(np.min(np.sum((p[:, None, :] - c[None]) ** 2, axis=2), axis=1)
                      * np.sum(c ** 3))


def test_jvp_of_a_gradient_gives_both_from_one_pass(monkeypatch):
    """jvp(grad(f)) returns the gradient and its tangent from one pass of forward mode
    over the gradient code (the gradient function itself is not called), each against
    central differences: with respect to one argument and to two, and a tangent None."""
    rng = np.random.default_rng(5)
    c, p, w = rng.normal(size=(3, 2)), rng.normal(size=(7, 2)), 1.5
    vc, vp = rng.normal(size=(3, 2)), rng.normal(size=(7, 2))
    g, g2 = s2sad.grad(weighted_distance), s2sad.grad(weighted_distance, wrt=(0, 1))
    expected = g(c, p, w)
    monkeypatch.setattr(type(g), "__call__", lambda *a, **k: pytest.fail("a second pass"))
    value, tangent = s2sad.jvp(g, (c, p, w), (vc, None, None))
    gradient = central(lambda v: weighted_distance(v, p, w), c)
    assert np.allclose(value, gradient, rtol=1e-6) and np.allclose(value, expected)
    def along(gradient_at, h=1e-4):     # the derivative of a gradient along e
        return (gradient_at(h) - gradient_at(-h)) / (2 * h)
    assert np.allclose(tangent, along(lambda e: central(
        lambda v: weighted_distance(v, p, w), c + e * vc)), rtol=1e-5, atol=1e-6)
    (gc, gp), (tc, tp) = s2sad.jvp(g2, (c, p, w), (vc, vp, None))
    assert np.allclose(gc, gradient) and np.allclose(
        gp, central(lambda v: weighted_distance(c, v, w), p), rtol=1e-6)
    assert np.allclose(tc, along(lambda e: central(
        lambda v: weighted_distance(v, p + e * vp, w), c + e * vc)), rtol=1e-5, atol=1e-6)
    assert np.allclose(tp, along(lambda e: central(
        lambda v: weighted_distance(c + e * vc, v, w), p + e * vp)), rtol=1e-5, atol=1e-6)


def test_the_fourth_derivative_of_tanh_elementwise():
    eg = s2sad.elementwise_grad
    x = np.linspace(-1.5, 1.5, 7)
    t = np.tanh(x)
    s = 1 - t ** 2
    exact = [s, -2 * t * s, 4 * t ** 2 * s - 2 * s ** 2, 16 * t * s ** 2 - 8 * t ** 3 * s]
    f = np.tanh
    for k in range(4):
        f = eg(f)
        assert np.allclose(f(x), exact[k], rtol=1e-12, atol=1e-12), k + 1


def test_elementwise_grad_of_python_code():
    def softplus(x):
        return np.log1p(np.exp(x))
    x = np.array([-1.0, 0.0, 2.0])
    sig = 1 / (1 + np.exp(-x))
    assert np.allclose(s2sad.elementwise_grad(softplus)(x), sig)
    d2 = s2sad.elementwise_grad(s2sad.elementwise_grad(softplus))
    assert np.allclose(d2(x), sig * (1 - sig))


def test_hessian_with_respect_to_a_tuple_is_a_nested_tuple_of_blocks():
    def f(x, y):
        return x * x * y
    assert s2sad.hessian(f, wrt=(0, 1))(2.0, 3.0) == ((6.0, 4.0), (4.0, 0.0))

    def g(x, y):
        return np.sum(x ** 2 * y[0]) + y[1] ** 3 * np.sum(x)
    x, y = np.array([1.0, 2.0, 3.0]), np.array([0.5, 2.0])
    (hxx, hxy), (hyx, hyy) = s2sad.hessian(g, wrt=(0, 1))(x, y)
    assert np.allclose(hxx, 2 * y[0] * np.eye(3))
    assert np.allclose(hxy, np.stack([2 * x, np.full(3, 3 * y[1] ** 2)], axis=1))
    assert np.allclose(hyx, hxy.T)
    assert np.allclose(hyy, [[0.0, 0.0], [0.0, 6 * y[1] * np.sum(x)]])
    blocks = s2sad.jacfwd(s2sad.grad(g, wrt=(0, 1)), wrt=(0, 1))(x, y)     # the same
    for row, expected in zip(blocks, ((hxx, hxy), (hyx, hyy))):
        assert all(np.allclose(b, e) for b, e in zip(row, expected))


def test_hvp_with_respect_to_a_tuple_is_refused():
    with pytest.raises(s2sad.S2SADError, match="hvp differentiates with respect to one"):
        s2sad.hvp(lambda x, y: x * y, wrt=(0, 1))(1.0, 2.0, 1.0)


# -- the reverse rules of the runtime helpers ---------------------------------------------
def _adjoint_rules():
    """{helper name: its reverse rule's variants}, for the helpers that have one."""
    registry.primitive(None)        # (makes the rules declared since)
    out = {}
    for name, fn in registry.HELPERS.items():
        rule = getattr(registry.primitive(fn), "vjp", None)
        if rule is not None and rule.variants and rule.variants[0].cotangent == "ans_bar":
            out[name[len("_s2s_"):]] = rule.variants
    return out


ADJOINTS = _adjoint_rules()


def _evaluate(template, bound):
    import gast
    tree = gast.gast_to_ast(gast.Expression(body=template.tree))
    code = compile(__import__("ast").fix_missing_locations(tree), "<template>", "eval")
    return eval(code, {**template.free, **bound})


def _random_like(value, rng):
    """Random numbers shaped like `value`: a list, tuple, dict or dataclass item by item."""
    if isinstance(value, dict):
        return {k: _random_like(v, rng) for k, v in value.items()}
    if dataclasses.is_dataclass(value):
        return dataclasses.replace(value, **{f.name: _random_like(getattr(value, f.name), rng)
                                             for f in dataclasses.fields(value)})
    if isinstance(value, (list, tuple)):
        items = [_random_like(v, rng) for v in value]
        return type(value)(*items) if hasattr(value, "_fields") else type(value)(items)
    return rng.normal(size=np.shape(value))


def _moved(x, h, v):
    """`x + h * v`, a list, tuple or dict item by item."""
    if isinstance(x, dict):
        return {k: _moved(a, h, v[k]) for k, a in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x)(_moved(a, h, b) for a, b in zip(x, v))
    if dataclasses.is_dataclass(x):
        return dataclasses.replace(x, **{f.name: _moved(getattr(x, f.name), h, getattr(
            v, f.name)) for f in dataclasses.fields(x) if not isinstance(getattr(x, f.name), int)})
    x = np.asarray(x)
    return x.astype(np.result_type(x.dtype, float), copy=False) + h * v    # (complex stays)


def _dot(a, b):
    """The sum of the products of the numbers of `a` and `b`, shaped alike (`b` a zero
    where a dict `a` has a key that `b` has not)."""
    if isinstance(a, dict):
        return sum(_dot(v, b[k]) for k, v in a.items() if k in b)
    if dataclasses.is_dataclass(a):     # (None: a field without a derivative)
        return sum(_dot(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a)
                   if getattr(a, f.name) is not None and getattr(b, f.name) is not None)
    if isinstance(a, (list, tuple)):
        return sum(_dot(x, y) for x, y in zip(a, b if isinstance(b, (list, tuple)) else
                                              [b] * len(a)))
    return np.sum(a * b)


def _samples():
    for name, variants in sorted(ADJOINTS.items()):
        for args in SAMPLES.get(name, []) + MORE_SAMPLES.get(name, []):
            # (the variant for the number of arguments: einsum has one for each)
            variant = next(v for v in variants if len(args) <= len(v.params) and all(
                default is not registry.REQUIRED for _, default in v.params[len(args):]))
            yield pytest.param(name, variant, args, id=name)


#: The helpers whose reverse rule refuses, naming the user's line (the adjoints of the
#: eigenvectors and singular vectors of complex matrices: no reverse mode over them, the
#: gradient of a gradient; their second derivatives are forward over reverse:
#: tests/test_complex_factors.py, tests/test_complex_vector_gauge.py)
REFUSING = {"hermitian_eigh_adjoint", "complex_svd_adjoint"}


def test_every_helper_with_a_reverse_rule_has_a_sample_call():
    assert sorted(n for n in ADJOINTS if n not in SAMPLES and n not in MORE_SAMPLES
                  and n not in REFUSING) == []


def _ragged(x):
    """Whether `x` is a list of arrays of different shapes (the pieces of `hstack`)."""
    try:
        np.shape(x)
        return False
    except ValueError:
        return isinstance(x, list)


@pytest.mark.parametrize("name, variant, args", list(_samples()))
def test_a_helpers_reverse_rule_is_the_transpose_of_its_derivative(name, variant, args):
    """<ans_bar, d helper along v> = sum over the parameters p with a template of
    <rule_p(ans_bar), v_p>, for random v and ans_bar, by central differences."""
    rng = np.random.default_rng(3)
    fn = registry.HELPERS["_s2s_" + name]
    names = [p for p, _ in variant.params]
    bound = dict(zip(names, args))
    for p, default in variant.params[len(args):]:
        bound[p] = default
    ans = fn(*args)
    ans_bar = _random_like(ans, rng)
    v = {p: _random_like(bound[p], rng) for p in variant.templates
         if not isinstance(bound[p], str)}        # (einsum's subscripts: a string here)

    def along(h):
        moved = dict(bound, **{p: _moved(bound[p], h, v[p]) for p in v})
        return _dot(ans_bar, fn(*[moved[p] for p in names[:len(args)]]))
    single = isinstance(ans, np.ndarray) and ans.dtype == np.float32      # (cast_like)
    h = 1e-2 if single else 1e-6
    expected = (along(h) - along(-h)) / (2 * h)
    given = dict({"ans": ans, "ans_bar": ans_bar}, **bound)    # (a parameter `ans` wins)
    found = sum(_dot(v[p], _evaluate(t, given)) for p, t in variant.templates.items()
                if p in v)
    assert found == pytest.approx(expected, rel=1e-3 if single else 1e-6, abs=1e-8)


@pytest.mark.parametrize("name, args, result", [
    ("cumprod", (r(4), np.array([1.5, 0.0, -0.5, 2.0])), np.cumprod),
    ("cofactors", (r(3, 2) @ r(2, 3),), np.linalg.det)], ids=["cumprod", "cofactors"])
def test_a_reverse_rule_where_the_helper_reads_its_own_argument_alone(name, args, result):
    """`cumprod(g, x, p)` reads `p = cumprod(x)` only where `x` has no zeros, and
    `cofactors(a, d)` `d = det(a)` only where `a` is well conditioned: at a zero (a
    singular matrix) the adjoint of `x` (`a`) is the derivative with `p` (`d`) following
    it, and that of `p` (`d`) zero; against central differences of the helper with `p`
    (`d`) computed from its argument (a polynomial in it, of a low degree)."""
    rng = np.random.default_rng(5)
    fn = registry.HELPERS["_s2s_" + name]
    *lead, x = args
    variant = next(v for v in ADJOINTS[name] if len(v.params) >= len(args) + 1)
    names = [p for p, _ in variant.params]
    ans_bar = rng.normal(size=np.shape(fn(*lead, x, result(x))))
    v = rng.normal(size=np.shape(x))

    def along(h):
        moved = x + h * v
        return np.sum(ans_bar * fn(*lead, moved, result(moved)))
    expected = (along(1e-4) - along(-1e-4)) / 2e-4
    given = dict(variant.params, **dict(zip(names, [*lead, x, result(x)])),
                 ans=fn(*lead, x, result(x)), ans_bar=ans_bar)
    x_name, p_name = names[len(lead)], names[len(lead) + 1]
    assert np.all(_evaluate(variant.templates[p_name], given) == 0)
    found = np.sum(_evaluate(variant.templates[x_name], given) * v)
    assert found == pytest.approx(expected, rel=1e-6, abs=1e-8)


# -- meta-learning steps through the adjoints of NumPy functions -------------------------
V = np.array([0.3, -0.2, 0.5, 0.9])
M = np.array([[2.0, 0.3, 0.1, 0.0], [0.3, 1.5, 0.2, 0.1], [0.1, 0.2, 1.8, 0.4],
              [0.0, 0.1, 0.4, 2.2]])
XP = np.array([0.0, 0.4, 1.0, 1.6])


def stacked(w):
    return np.sum(np.stack([w, w * w], axis=1) ** 3) + np.sum(np.vstack([w, np.sin(w)]) ** 2)


def repeated(w):
    return np.sum(np.repeat(w, [1, 2, 3, 1]) ** 3 * np.arange(7.0)) + np.sum(
        np.tile(w, 2) ** 3 * np.arange(8.0))


def sorted_values(w):
    return np.sum(np.sort(w * w - w) * np.arange(4.0)) ** 2


def summed_list(w):
    return sum([w[0] * w, w ** 2, np.sin(w)]) @ np.arange(4.0)


def traced(w):
    return np.trace(np.outer(w, w) @ M) ** 2 + np.sum(np.diagonal(np.outer(w, w ** 2)) ** 3)


def padded(w):
    return np.sum(np.pad(w ** 2, (1, 2), "reflect") ** 3) + np.sum(
        np.pad(w, 1, constant_values=w[0]) ** 3)


def taken(w):
    a = w * 2.0
    a[np.array([0, 2, 0])] = w[1:] ** 2
    return np.sum(a ** 3) + np.sum(np.take_along_axis(w ** 2, np.array([3, 0, 0, 2]), 0) ** 2)


def quantiles(w):
    return np.max(w * w) + np.quantile(w * w, 0.3) ** 2 + np.percentile(w, 70.0) * w[0]


def interpolated(w):
    return np.sum(np.interp(np.array([0.2, 0.7, 1.2]), XP, w ** 2) ** 3) + np.sum(
        np.interp(w, XP, np.array([1.0, -0.5, 2.0, 0.3])) ** 2 * w)


def differentiated(w):
    return np.sum(np.gradient(w ** 3) ** 2) + np.sum(np.convolve(w ** 2, w[:3], "same") ** 2)


def solved(w):
    return np.sum(np.linalg.solve(M * w[0], np.outer(w, w[:2])) ** 2) + np.sum(
        np.linalg.solve(M + np.outer(w, w), w ** 2) ** 2)


def transposed(w):
    return np.sum(np.transpose(np.outer(w, w ** 2)) * M) + np.sum(
        np.cross(w[:3], w[1:] ** 2) ** 2) + np.sum(np.kron(w[:2], w[2:] ** 2) ** 2)


def sorted_list(w):
    s = sorted([w[0] * w[1], w[2], w[3] ** 2])
    return s[0] * s[1] + s[2] ** 2 + sum(v * v for v in sorted([w[1], w[0] ** 2])) ** 2


def built_dicts(w):
    p = {"a": w[:2] ** 2, "b": w[2:]}
    p["c"] = p["a"] * p["b"]
    d = {k: v for k, v in zip(["x", "y", "x"], [w[0] ** 2, w[1] * w[2], w[3] ** 3])}
    return (np.sum(p["c"] ** 2) + np.sum(p.get("b", 0.0) ** 3) + np.sum(p.get("z", w[:2]) ** 3)
            + d["x"] * d["y"] + d["x"] ** 2)


def producted(w):
    return np.prod(w * w + 0.5) + np.sum(np.prod(np.outer(w, w) - 0.2, axis=0) * V)


def gridded(w):
    a, b = np.meshgrid(w[:2] ** 2, w[1:])
    return np.sum((a * b) ** 2) + np.var(np.outer(w, w), axis=0) @ V


@pytest.mark.parametrize("inner_loss", [
    stacked, repeated, sorted_values, summed_list, traced, padded, taken, quantiles,
    interpolated, differentiated, solved, transposed, producted, gridded, sorted_list,
    built_dicts])
def test_a_meta_learning_step_through_numpy_functions(inner_loss):
    """`loss(w - lr * grad(loss)(w))`, whose gradient differentiates the adjoints of
    `inner_loss`'s NumPy functions in reverse mode, against central differences of the
    same step taken with a gradient by central differences."""
    d = s2sad.grad(inner_loss)

    def meta(w):
        return inner_loss(w - 0.1 * d(w))

    def meta_by_differences(w):
        return inner_loss(w - 0.1 * central(inner_loss, w, 1e-5))
    expected = central(meta_by_differences, V, 1e-4)
    assert np.allclose(s2sad.grad(meta)(V), expected, rtol=1e-5, atol=1e-6)


def product_step(w):
    return np.prod(w - 0.1 * s2sad.grad(np.prod)(w))


def test_the_hessian_of_a_step_through_a_product():
    """Forward mode over the reverse rule of the adjoint of np.prod (a third derivative of
    the product), against second differences of the step with its analytic gradient."""
    def step(w):
        others = np.array([np.prod(np.delete(w, i)) for i in range(w.size)])
        return np.prod(w - 0.1 * others)
    h, eye = 1e-4, np.eye(V.size) * 1e-4
    expected = [[(step(V + a + b) - step(V + a - b) - step(V - a + b) + step(V - a - b))
                 / (4 * h * h) for b in eye] for a in eye]
    assert np.allclose(s2sad.hessian(product_step)(V), expected, rtol=1e-5, atol=1e-7)


U = np.array([0.5, -1.0, 2.0, 0.25, 1.5, -0.5, 1.0, 0.75])


def repeated_sines(x):
    return np.sum(np.repeat(np.stack([np.sin(x * V[:2]), x * x * V[2:]], axis=1), 2) * U)


def test_the_third_derivative_through_stacks_and_repeats():
    x = 0.7
    third = np.repeat(np.stack([-V[:2] ** 3 * np.cos(x * V[:2]), 0.0 * V[2:]], axis=1), 2)
    assert s2sad.grad(s2sad.grad(s2sad.grad(repeated_sines)))(x) == pytest.approx(
        np.sum(third * U), rel=1e-10)


# -- which helpers gradient code calls have reverse rules ---------------------------------
#: The runtime helpers that reverse rules' templates call (so gradient code may call
#: them) without a reverse rule yet. Reverse mode over gradient code that calls one
#: differentiates the helper's source where it can (`cumsum`: plain NumPy), else it
#: refuses, naming the helper and the user's function (below). The list may only shrink:
#: a helper declared from now on gets its reverse rule beside it (registry.helper_adjoint).
NO_REVERSE_RULE_YET = {
    "lstsq_adjoint", "power_dot", "sinc_slope", "svd_values_adjoint",
}


def _called_by_reverse_templates():
    """The names of the helpers the templates of the built-in reverse rules call (not
    those of the helpers' own reverse rules, nor those of the constructors of dataclasses
    and named tuples, made on first use, whose `_s2s_field` has no reverse rule yet)."""
    registry.load_optional()
    registry.primitive(None)
    names = set()
    for record in list(registry.PRIMITIVES.values()):
        rule = record.vjp
        if rule is None or any(v.cotangent == "ans_bar" for v in rule.variants) or (
                isinstance(record.prim, type)):
            continue
        templates = [t for v in rule.variants
                     for t in [*v.templates.values(), *([v.uniform] if v.uniform else [])]]
        templates += [rule.each[1]] if rule.each else []
        names |= {n[len("_s2s_"):] for t in templates for n in t.free if n.startswith("_s2s_")}
    return names


def test_every_helper_gradient_code_calls_has_both_rules_or_is_listed():
    import scipy.linalg  # noqa: F401 - the rules of SciPy, loaded
    called = _called_by_reverse_templates()
    forward = {n for n in called
               if getattr(registry.primitive(registry.HELPERS["_s2s_" + n]), "jvp", None) is None}
    assert forward == set(), "helpers without a forward rule"
    without = {n for n in called
               if getattr(registry.primitive(registry.HELPERS["_s2s_" + n]), "vjp", None) is None}
    assert without - NO_REVERSE_RULE_YET == set(), "give these a reverse rule"
    assert NO_REVERSE_RULE_YET - without == set(), "these have one now: take them off the list"
    assert {"unbroadcast", "unreduce", "unindex", "matmul_lhs", "matmul_rhs", "dot_lhs",
            "dot_rhs", "count"} <= called - without


def norm_loss(w):
    return np.max(w * w) + np.sum(np.diff(w) ** 3)


dnorm_loss = s2sad.grad(norm_loss)


def norm_meta(w):
    return norm_loss(w - 0.1 * dnorm_loss(w))


def test_reverse_mode_over_a_helper_without_a_reverse_rule_is_refused_naming_it(monkeypatch):
    """Every helper gradient code calls has a reverse rule or a source reverse mode reads
    (above): so undiff's rule is taken away here, and its source (np.diff with `prepend`,
    which has no rule) cannot be differentiated."""
    undiff = registry.primitive(registry.HELPERS["_s2s_undiff"])
    monkeypatch.setattr(undiff, "vjp", None)
    with pytest.raises(s2sad.S2SADError) as info:
        s2sad.grad(norm_meta)(W)
    message = str(info.value)
    call = norm_meta.__code__.co_firstlineno + 1
    assert message.startswith(f"{__file__}:{call}: a call of grad(norm_loss)")
    assert message.endswith("return norm_loss(w - 0.1 * dnorm_loss(w))")
    assert "undiff()" in message
    assert f"{__file__}:{norm_loss.__code__.co_firstlineno}" in message


# -- MAML steps through the NumPy functions whose adjoints are those helpers --------------
def central5(f, x, h=1e-3):
    """The gradient of scalar `f` at `x` by five-point central differences (error of the
    order h^4: nested in itself, the second derivatives of the oracles below stay
    within about 1e-8)."""
    x = np.asarray(x, float)
    g = np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e.flat[i] = h
        g.flat[i] = (-f(x + 2 * e) + 8 * f(x + e) - 8 * f(x - e) + f(x - 2 * e)) / (12 * h)
    return g


def _shifted(w):
    return np.outer(w, w) + np.eye(2) * 2 + np.array([[0.0, 0.3], [0.1, 0.0]])


def cumprod_loss(w):
    return np.sum(np.cumprod(w + 1.5) ** 2) + np.sum(np.cumprod(np.outer(w, w) + 1, axis=1))


def einsum_loss(w):
    m = np.outer(w, w) + np.eye(2)
    return np.einsum("ij,jk,k->", m, m, w) + np.einsum("ii->", m * m)


def inverse_loss(w):
    return np.sum(np.linalg.inv(_shifted(w)) ** 2) + np.linalg.det(_shifted(w)) ** 2


def cholesky_loss(w):
    m = np.outer(w, w) + np.eye(2) * 2
    return np.sum(np.linalg.cholesky(m) ** 3) + np.sum(np.linalg.eigvalsh(m - np.diag(w)) ** 3)


def norm_loss_2(w):
    return np.linalg.norm(X @ w) ** 3 + np.linalg.norm(np.outer(w, w + 1), 3, axis=1).sum()


def nanvar_loss(w):
    return np.nanvar(np.array([w[0], np.nan, w[1], w[0] * w[1]]) ** 2)


def linspace_loss(w):
    return np.sum(np.linspace(w[0], w[1], 5) ** 3) + np.sum(np.hstack([w, w ** 2]) ** 3)


def diag_loss(w):
    return (np.sum(np.diag(np.diag(np.outer(w, w + 1))) ** 2) + np.sum(np.diag(w) ** 3)
            + np.trapezoid(np.exp(np.outer(w, w)).ravel() ** 2))


def list_loss(w):
    out = []
    for x in w:
        out.append(x * x)
    return out[0] * out[1] + out[-1] ** 2 + max(w[0] ** 2, w[1], 0.0) ** 2


def expm_loss(w):
    return np.sum(scipy.linalg.expm(np.outer(w, w + 1)) ** 2)


def diff_loss(w):
    return (np.sum(np.diff(np.concatenate([w, w ** 2]), 2) ** 3)
            + np.sum(np.diff(np.outer(w, w + 1), axis=0) ** 2) + np.sum(np.diff(w) ** 3))


@pytest.mark.parametrize("inner_loss", [
    cumprod_loss, einsum_loss, inverse_loss, cholesky_loss, norm_loss_2, nanvar_loss,
    linspace_loss, diag_loss, list_loss, expm_loss, diff_loss], ids=lambda f: f.__name__)
def test_a_maml_step_through_the_helpers_reverse_rules(inner_loss):
    """`loss(w - lr * grad(loss)(w))` differentiated in reverse mode, its gradient code
    through the helpers' reverse rules (np.cumprod: cumprod; np.einsum: einsum; inv, det,
    cholesky, eigvalsh: inv, cofactors, cholesky, mirrored, eigvalsh_adjoint; norm, nanvar,
    linspace, hstack, np.array of a list, diag, trapezoid, list.append, max; expm:
    frechet; np.diff: undiff), against central differences of the step with a finite-difference gradient
    (no s2sad in the oracle)."""
    d = s2sad.grad(inner_loss)

    def meta(w):
        return inner_loss(w - 0.1 * d(w))
    expected = central5(lambda w: inner_loss(w - 0.1 * central5(inner_loss, w)), W)
    assert np.allclose(s2sad.grad(meta)(W), expected, rtol=1e-6, atol=1e-7)


def test_third_derivative_through_the_helpers_reverse_rules():
    """grad(grad(grad(f))) of a function of np.linalg.inv, np.einsum and np.diag: the
    reverse rules of the reverse rules of inv's, einsum's and diag's helpers, against the
    analytic third derivative."""
    def f(x):
        v = np.array([x, 2.0, x * x])
        m = np.array([[x, 1.0], [0.5, 2.0]])
        return np.linalg.inv(m)[0, 0] + np.einsum("i,i->", v, v) + np.sum(np.diag(v) ** 3)
    d3 = s2sad.grad(s2sad.grad(s2sad.grad(f)))
    x = 0.7
    # inv(m)[0, 0] = 2 / (2x - 0.5); v.v = x^2 + 4 + x^4; the cubes x^3 + 8 + x^6
    exact = -96 / (2 * x - 0.5) ** 4 + 24 * x + 6 + 120 * x ** 3
    assert d3(x) == pytest.approx(exact, rel=1e-10)
