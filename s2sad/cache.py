"""The derivative cache: weakly keyed on the function object.

The inner key holds the mode, the differentiated parameters, and the version of the
rule registry, so registering a rule invalidates every derivative compiled before.
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
        return _cache[fn][full]
    except (KeyError, TypeError):
        pass
    with _lock:
        per_fn = _cache.setdefault(fn, {})
        if full not in per_fn:
            per_fn[full] = build()
        return per_fn[full]


def peek(fn, key):
    """The derivative stored for `fn` and `key`, or None."""
    try:
        return _cache[fn][key + (registry.version,)]
    except (KeyError, TypeError):
        return None


def put(fn, key, derivative):
    """Store `derivative` for `fn` and `key` (one the driver compiled as a callee)."""
    with _lock:
        _cache.setdefault(fn, {}).setdefault(key + (registry.version,), derivative)


def clear():
    """Forget every compiled derivative, and the sources read for them."""
    with _lock:
        _cache.clear()
        source.forget()
