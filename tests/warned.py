"""The warnings test cases cause on purpose. pyproject.toml makes an
`UnconnectedInputWarning` an error in the test suite; a test of a function whose output
does not depend on some parameters (`f.unconnected`, their names) runs it inside
`allowing_unconnected(f)`, which checks that a warning names only those. (Whether the
warning comes at all depends on what was compiled before: a derivative warns once.)"""
import contextlib
import warnings

import s2sad


@contextlib.contextmanager
def allowing_unconnected(f, names=None):
    names = getattr(f, "unconnected", ()) if names is None else names
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    for w in caught:
        expected = issubclass(w.category, s2sad.UnconnectedInputWarning) and any(
            f"depend on '{n}'" in str(w.message) for n in names)
        if not expected:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
