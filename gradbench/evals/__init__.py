"""One module per GradBench eval, each the eval's README written in plain NumPy/Python as a
user would write it, differentiated by s2sad.

A module offers `functions(backend)`: a dict from the eval's function names (those its
README lists) to `Function`s. `BACKENDS` says which s2sad backends the module offers.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

NAMES = ("hello", "lse", "llsq", "gmm", "kmeans", "ode", "det", "lstm", "ba", "ht",
         "particle", "saddle")


@dataclass(frozen=True)
class Function:
    """One function of an eval: `prepare` turns the message's input into the arguments
    (not timed), `run` computes on them (timed), `encode` turns its result into JSON."""
    prepare: Callable[[Any], tuple]
    run: Callable[..., Any]
    encode: Callable[[Any], Any]


def load(name: str):
    """The module of eval `name`, or KeyError if the tool has none."""
    if name not in NAMES:
        raise KeyError(name)
    return importlib.import_module(f"{__name__}.{name}")


def floats(a) -> Any:
    """An array (or number) as JSON: nested lists of Python floats."""
    return np.asarray(a, dtype=float).tolist()


def primal(f: Callable, backend: str) -> Callable:
    """`f` as the backend runs a primal: compiled by `numba.njit` on the numba backend, so
    that gradient and primal are timed alike (with the functions of the eval it calls, as
    the numba backend compiles them: s2sad.backends.NUMBA.njit_user)."""
    if backend == "numba":
        from s2sad.backends import NUMBA
        return NUMBA.njit_user(f, {})
    return f
