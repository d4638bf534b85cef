import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))

try:
    import scipy  # noqa: F401  (SciPy's rules load once SciPy is imported: the suite tests
    #                           every rule, so they are loaded from the start)
except ImportError:
    pass
from s2sad.rules import registry  # noqa: E402

registry.load_optional()
