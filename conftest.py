"""Doctest set-up shared by the package, the docs and the tests."""
import importlib.util
import os

import numpy as np
import pytest

from s2sad import pipeline
from s2sad.frontend.source import function_from_source


def show(stage, text, wrt=0, arrays=False):
    """The source of the function in `text` after the pass `stage` (a pass name, or a
    pass class, named after it), for arguments that are numbers (with `arrays`, NumPy
    arrays; `np` is NumPy in `text`)."""
    name = stage if isinstance(stage, str) else stage.__name__.lower()
    fn = function_from_source(text, {"np": np})
    arg_types = {p: np.ndarray if arrays else float
                 for p in fn.__code__.co_varnames[:fn.__code__.co_argcount]}
    mode = ("forward" if name in ("forward", "tangent_only", "guard") else
            "batched" if name == "batching" else "reverse")
    return pipeline.stage_source(fn, name, wrt, arg_types, mode=mode).rstrip("\n")


def pytest_configure(config):
    """A complex value cast to a real one (NumPy's ComplexWarning) fails the test that
    made it: in s2sad's code it is a derivative's imaginary part lost, silently.

    The rules of optional libraries (SciPy) load as s2sad loads them, inside
    `registry.loading()`, before pytest imports their modules to collect their doctests:
    their templates name runtime helpers declared further down (imported first by the
    collection, `s2sad/rules/solves.py` failed on `_s2s_frechet2`)."""
    config.addinivalue_line("filterwarnings", "error::" + _COMPLEX_WARNING)
    try:
        import scipy.integrate, scipy.linalg, scipy.optimize, scipy.special, scipy.stats  # noqa: E401, F401
    except ImportError:
        return
    from s2sad.rules import registry
    registry.load_optional()


#: (NumPy 1.25 moved it to numpy.exceptions, and NumPy 2 removed the old name)
_COMPLEX_WARNING = ("numpy.exceptions.ComplexWarning" if hasattr(np, "exceptions")
                    else "numpy.ComplexWarning")


@pytest.fixture(autouse=True)
def _doctest_namespace(doctest_namespace):
    doctest_namespace["show"] = show


#: The numba backend's disk cache (s2sad/native_cache.py) is off unless asked for: each
#: test compiles what it tests (tests/test_numba_cache.py tests the cache, in processes
#: of its own), and the suite writes nothing in the user's home.
os.environ.setdefault("S2SAD_CACHE_DIR", "")

#: docs/numba.md runs Numba: skipped where Numba, an optional dependency, is missing.
collect_ignore = [] if importlib.util.find_spec("numba") else ["docs/numba.md"]
