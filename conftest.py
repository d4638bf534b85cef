"""Doctest set-up shared by the package, the docs and the tests."""
import pytest

from s2sad.testing import show


@pytest.fixture(autouse=True)
def _doctest_namespace(doctest_namespace):
    doctest_namespace["show"] = show
