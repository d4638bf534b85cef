"""Arrays of the libraries NumPy dispatches to (NEP 18's `__array_function__` and NEP 13's
`__array_ufunc__`: Dask, CuPy, ...), which this module calls duck arrays: what tells them
from ndarrays, and the few NumPy calls of the runtime helpers that would turn one into an
ndarray (`np.asarray`, `np.zeros`, `float`), written so that they dispatch instead.
Gradient code calls them, and each has its rules beside it (forward over reverse, and
gradient code differentiated again in reverse mode, read through them).

NumPy's functions and ufuncs hand a duck array to its own library, so the generated code
and the helpers, which are NumPy code, give a Dask array for Dask arrays: the gradient is
one lazy graph, nothing is computed into the client. For an ndarray, a list or a number
these functions are the NumPy ones.

>>> import numpy as np
>>> is_duck_array(np.ones(3)), is_duck_array([1.0]), is_duck_array(2.0)
(False, False, False)
>>> asarray([1.0, 2.0])
array([1., 2.])
>>> zeros((2,), np.float64, np.ones(3))
array([0., 0.])
"""
import functools
import linecache

import numpy as np

from ..errors import MissingRuleError, UnsupportedSyntaxError
from .registry import define, helper, helpers


@functools.lru_cache(maxsize=None)
def is_duck_array_type(cls):
    """Whether instances of `cls` are arrays that NumPy's functions dispatch to another
    library: they implement `__array_function__` and have a shape and a dtype, and are not
    ndarrays or NumPy scalars."""
    return (isinstance(cls, type) and not issubclass(cls, (np.ndarray, np.generic))
            and hasattr(cls, "__array_function__") and hasattr(cls, "__array_ufunc__")
            and hasattr(cls, "shape") and hasattr(cls, "dtype"))


def is_duck_array(x):
    """Whether `x` is a duck array (see `is_duck_array_type`)."""
    return is_duck_array_type(type(x))


define(is_duck_array, nondiff=True)


def is_array(x):
    """Whether `x` is an ndarray or a duck array."""
    return isinstance(x, np.ndarray) or is_duck_array(x)


define(is_array, nondiff=True)


def asarray(x):
    """`np.asarray(x)`, but a duck array as it is (not computed into an ndarray)."""
    return x if is_duck_array(x) else np.asarray(x)


define(asarray, "x", "_s2s_from_array(g, x)", linear="x", view="x")


def vectorized_dtype(outputs, filename, line):
    """The dtype of the array a call of an `np.vectorize` object without `otypes=` makes
    of the `outputs` of its Python function: NumPy's, that of the first output (so that
    `0` first makes an integer array of the outputs, each truncated); the call at `line`
    of `filename` is refused where NumPy's is not one array (several outputs: a tuple)."""
    if not outputs:
        raise ValueError("cannot call `vectorize` on size 0 inputs unless `otypes` is set")
    if isinstance(outputs[0], tuple):
        raise UnsupportedSyntaxError(
            "np.vectorize of a function that returns several values is not differentiated: "
            "vectorize a function for each value", filename, line, None,
            linecache.getline(filename, line))
    return np.asarray(outputs[0]).dtype


define(vectorized_dtype, nondiff=True)


def zeros(shape, dtype, *like):
    """`np.zeros(shape, dtype)`, an array of the library of the first duck array of `like`
    (with its chunks when it has that array's shape), else an ndarray: a helper's new
    array holds values computed from its arguments, and an ndarray cannot hold a lazy
    one."""
    duck = next((a for a in like if is_duck_array(a)), None)
    if duck is None:
        return np.zeros(shape, dtype)
    return np.zeros_like(duck, dtype=dtype, shape=shape)


define(zeros, nondiff=True, returns="array")


def full(shape, value, dtype, like):
    """`np.full(shape, value, dtype)`, in the library of `like` or of `value`, which may
    be a 0-d array of another library (a lazy reduction) and is not read here."""
    if not (is_duck_array(like) or is_duck_array(value)):
        return np.full(shape, value, dtype=dtype)
    return zeros(shape, dtype, like, value) + value


define(full, "shape, value, dtype, like", None, "_s2s_unbroadcast(g, value)", None, None,
       linear="value", zero=("like",), returns="array")


@helper(linear="g")
def blocks_like(g, x):
    """`g`, the gradient of the duck array `x`, split in the blocks of `x` where its
    library splits arrays in blocks (a Dask array's `chunks`: the gradient of a parameter
    held in chunks is held in the same chunks)."""
    chunks = getattr(x, "chunks", None)
    if chunks is None or not hasattr(g, "rechunk") or getattr(g, "chunks", None) == chunks:
        return g
    return g.rechunk(chunks)


def broadcast_shapes(*shapes):
    """`np.broadcast_shapes(*shapes)`, also where a length is not known yet (NaN: a Dask
    array's unknown chunk sizes), which broadcasting keeps."""
    if all(n == n for shape in shapes for n in shape):
        return np.broadcast_shapes(*shapes)
    out = []
    for axis in range(-max(map(len, shapes)), 0):
        lengths = [shape[axis] for shape in shapes if len(shape) >= -axis]
        known = [n for n in lengths if n == n and n != 1]
        out.append(known[0] if known else next((n for n in lengths if n != n), 1))
    return tuple(out)


define(broadcast_shapes, nondiff=True)


@helper(writes=(0,))
def add_at(out, index, g):
    """`np.add.at(out, index, g)` into the zeros `out`, a duck array; for a library
    without `ufunc.at` (Dask), `out[index] = g` where `index` selects no element twice."""
    try:
        np.add.at(out, index, g)
        return
    except TypeError:
        pass
    items = index if isinstance(index, tuple) else (index,)
    arrays = [i for i in items if not isinstance(i, (int, np.integer, slice, type(None)))]
    if (len(arrays) == 1 and not is_duck_array(arrays[0])
            and np.asarray(arrays[0]).dtype.kind in "iu"
            and np.unique(arrays[0]).size == np.size(arrays[0])):
        out[index] = g
        return
    raise MissingRuleError(
        f"the adjoint of indexing a {type(out).__module__.split('.')[0]} array with an "
        "integer array that may select an element twice (or with a mask, or with an "
        "index array of that library) adds into the zeros at repeated places with "
        "np.add.at, which that library does not implement; index with slices, or with "
        "one NumPy array of distinct integers")


def number(x):
    """`float(x)` of a 0-d array (`complex(x)` of a complex one), which a duck array
    stays (a lazy or device value)."""
    if is_duck_array(x):
        return x
    return complex(x) if getattr(x, "dtype", _REAL).kind == "c" else float(x)


_REAL = np.dtype(float)


define(number, "x", "_s2s_reshape_like(g, x)", linear="x")


helpers(__name__)
