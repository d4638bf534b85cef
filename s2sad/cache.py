"""The derivative cache: weakly keyed on the function object.

The inner key holds the mode, the differentiated parameters, and the version of the
rule registry, so registering a rule invalidates every derivative compiled before. A
derivative is handed out only while its guards hold (frontend/guards.py: the globals,
attributes, code, defaults and closure values it was compiled with); one whose guards
fail is compiled again in its place.
"""
import threading
import weakref

from .frontend import source
from .rules import registry

_cache = weakref.WeakKeyDictionary()
_lock = threading.RLock()


def get(fn, key, build):
    full = key + (registry.version,)
    try:
        found = _cache[fn][full]
        if found.holds():
            return found
    except (KeyError, TypeError):
        pass
    with _lock:
        per_fn = _cache.setdefault(fn, {})
        if full not in per_fn or not per_fn[full].holds():
            per_fn[full] = build()
        return per_fn[full]


def peek(fn, key):
    """The derivative stored for `fn` and `key` whose guards hold, or None."""
    try:
        found = _cache[fn][key + (registry.version,)]
    except (KeyError, TypeError):
        return None
    return found if found.holds() else None


def put(fn, key, derivative):
    """Store `derivative` for `fn` and `key` (one the driver compiled as a callee)."""
    with _lock:
        _cache.setdefault(fn, {}).setdefault(key + (registry.version,), derivative)


def clear():
    """Forget every compiled derivative, and the sources read for them."""
    with _lock:
        _cache.clear()
        source.forget()
