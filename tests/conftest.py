import os
import sys

import pytest
from _pytest.doctest import DoctestModule

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))

from optional import BrokenDependency  # noqa: E402

try:
    import scipy  # noqa: F401  (SciPy's rules load once SciPy is imported: the suite tests
    #                           every rule, so they are loaded from the start)
except ImportError:
    pass
from s2sad.rules import registry  # noqa: E402

registry.load_optional()


class BrokenDependencyItem(pytest.Item):
    """Stands for the tests of a module whose optional library is installed but broken."""

    def __init__(self, *, message, **kwargs):
        super().__init__(**kwargs)
        self.message = message

    def runtest(self):
        pytest.fail(self.message, pytrace=False)

    def reportinfo(self):
        return self.path, None, f"{self.name}: {self.message}"


class DependencyModule(pytest.Module):
    """A test module; one whose optional library is broken (tests/optional.py) collects
    as one failing test rather than as an error that interrupts the collection."""

    def collect(self):
        try:
            return super().collect()
        except BrokenDependency as error:
            return [BrokenDependencyItem.from_parent(self, name="optional_dependency",
                                                     message=str(error))]


def pytest_pycollect_makemodule(module_path, parent):
    return DependencyModule.from_parent(parent, path=module_path)


@pytest.hookimpl(hookwrapper=True)
def pytest_collect_file(file_path, parent):
    """The test modules hold no doctests: `--doctest-modules` (for the package and the
    docs) does not import them a second time."""
    outcome = yield
    outcome.force_result([c for c in outcome.get_result() if not isinstance(c, DoctestModule)])
