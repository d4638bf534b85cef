"""The tests' optional dependencies (SciPy, Numba, Dask and distributed).

`require(module, extra)` imports one for a test module. A library that is not installed
skips the module's tests, saying which extra installs it. One that is installed but
fails to import (mismatched versions, a broken install) fails each test of the module
with the import error and the command that repairs it, and the rest of the suite runs:
tests/conftest.py turns the `BrokenDependency` raised here into one failing test per
module instead of a collection error that would stop the whole run.
"""
import importlib
import importlib.util

import pytest


class BrokenDependency(Exception):
    """An optional library is installed but cannot be imported."""


def require(module, extra):
    """The module `module` (e.g. "dask.array"), installed by `pip install -e ".[extra]"`."""
    top = module.partition(".")[0]
    if importlib.util.find_spec(top) is None:
        pytest.skip(f"{top} is not installed (pip install -e \".[{extra}]\")",
                    allow_module_level=True)
    try:
        return importlib.import_module(module)
    except Exception as error:  # noqa: BLE001 - any failure of an installed library
        raise BrokenDependency(
            f"{module} is installed but fails to import ({type(error).__name__}: {error}); "
            f"the installed versions do not fit together: reinstall them in a fresh venv "
            f"with pip install -e \".[{extra}]\"") from error
