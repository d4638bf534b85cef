"""Hypothesis profiles and the `fuzz` marker for tests/fuzz (see test_fuzz.py).

Profiles: `fast` (the default; derandomized, ~2000 programs), `fast-random` (the same
with a new seed each run) and `long` (~20000 programs, larger programs). Select one with
`--hypothesis-profile=NAME` (needs tests/fuzz on the command line so that this file is
loaded first) or the environment variable S2SAD_FUZZ_PROFILE=NAME.

S2SAD_FUZZ_SHRINK_SECONDS=N bounds the time hypothesis spends shrinking one failure
(default 120; hypothesis's own limit is 300); 0 reports failures unshrunk.
"""
import os

from hypothesis import HealthCheck, Phase, settings

_common = dict(
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.filter_too_much],
)
_shrink_seconds = int(os.environ.get("S2SAD_FUZZ_SHRINK_SECONDS", "120"))
if _shrink_seconds <= 0:
    _common["phases"] = [p for p in Phase if p not in (Phase.shrink, Phase.explain)]
else:
    try:   # hypothesis internals: only the time limit on shrinking, if it is still there
        from hypothesis.internal.conjecture import engine as _engine
        if hasattr(_engine, "MAX_SHRINKING_SECONDS"):
            _engine.MAX_SHRINKING_SECONDS = _shrink_seconds
    except ImportError:
        pass

# test_fuzz.py gives each test a share of max_examples (one "unit" of programs).
settings.register_profile("fast", max_examples=1000, derandomize=True, database=None,
                          **_common)
settings.register_profile("fast-random", max_examples=1000, **_common)
settings.register_profile("long", max_examples=10000, **_common)


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "fuzz: randomized program-generation tests of s2sad (tests/fuzz); "
                   "deselect with -m 'not fuzz'")
    try:
        chosen = config.getoption("hypothesis_profile")
    except ValueError:
        chosen = None
    if not chosen:
        settings.load_profile(os.environ.get("S2SAD_FUZZ_PROFILE", "fast"))
