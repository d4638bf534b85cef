"""The numba backend's disk cache (s2sad/native_cache.py): a later process loads the
machine code Numba kept on disk instead of compiling it (Numba's own count of the loads it
made, not a timing), and its derivative is right (against the formula); a change of what
the code reads (a global's value) is a new entry, never the old code; a derivative that
calls another derivative is kept too, its digest following the derivatives and the user's
functions it calls (a changed callee is a new entry). Each case runs in fresh processes, as
a user's next session would, with its own cache directory.
"""
import json
import os
import subprocess
import sys

import pytest

from optional import require

require("numba", "numba")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: A user's module: a gradient called from Python and from an `@numba.njit` function, and
#: a gradient whose code calls another function's derivative.
MODULE = '''
import numba
import numpy as np
import s2sad

SCALE = {scale}
WEIGHT = {weight}


def logsumexp(x):
    top = np.max(x)
    return SCALE * (top + np.log(np.sum(np.exp(x - top))))


def inner(x):
    return WEIGHT * np.sum(x ** {power})


def outer(x):
    return inner(np.sin(x))


def det(A):
    n = A.shape[0]
    if n == 1:
        return A[0, 0]
    total = 0.0
    for j in range(n):
        minor = np.concatenate((A[1:, :j], A[1:, j + 1:]), axis=1)
        total = total + (-1.0) ** j * A[0, j] * det(minor)
    return total


def last(A):
    return det(A.reshape(3, 3))


dlse = s2sad.grad(logsumexp, backend="numba")
douter = s2sad.grad(outer, backend="numba")
ddet = s2sad.grad(last, backend="numba")


@numba.njit
def descend(x):
    for _ in range(3):
        x = x - 0.1 * dlse(x)
    return x
'''

RUN = '''
import json, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import user_module as m
from s2sad.compilation import arg_types_of
x = np.array([0.5, -1.0, 2.0])
A = np.array([[2.0, -1.0, 0.5], [0.3, 1.5, -2.0], [1.0, 0.7, 3.0]]).ravel()
out = {"lse": m.dlse(x).tolist(), "descend": m.descend(x).tolist(),
       "outer": m.douter(x).tolist(), "det": m.ddet(A).tolist()}
for name, d, a in (("lse", m.dlse, x), ("outer", m.douter, x), ("det", m.ddet, A)):
    native = d.derivative(arg_types_of(d._target, (a,))).native
    out[name + "_loaded"] = sum(native.stats.cache_hits.values())
    out[name + "_compiled"] = sum(native.stats.cache_misses.values())
    out[name + "_file"] = native.py_func.__code__.co_filename
print(json.dumps(out))
'''


def run(tmp_path, cache, scale=1.0, weight=1.0, power=2):
    """A fresh process that imports the user's module (with `SCALE = scale`, `WEIGHT =
    weight` and `x ** power` in `inner`) and calls its gradients, with the cache directory
    `cache`: what it printed."""
    folder = tmp_path / "user"
    folder.mkdir(exist_ok=True)
    (folder / "user_module.py").write_text(MODULE.format(scale=scale, weight=weight,
                                                         power=power))
    env = dict(os.environ, S2SAD_CACHE_DIR=str(cache),
               PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-c", RUN, str(folder)], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def softmax(x, scale):
    import numpy as np
    e = np.exp(np.asarray(x) - max(x))
    return scale * e / e.sum()


def descended(x, scale):
    import numpy as np
    x = np.asarray(x)
    for _ in range(3):
        x = x - 0.1 * softmax(x, scale)
    return x


def test_a_later_process_loads_the_machine_code_and_its_derivative_is_right(tmp_path):
    import numpy as np
    cache = tmp_path / "cache"
    x = [0.5, -1.0, 2.0]
    first = run(tmp_path, cache)
    assert (first["lse_loaded"], first["lse_compiled"]) == (0, 1)
    assert first["lse_file"].startswith(str(cache))     # (a module of the cache directory)
    second = run(tmp_path, cache)
    assert (second["lse_loaded"], second["lse_compiled"]) == (1, 0)
    # (code that calls another derivative, recursion included: loaded too)
    assert [first[k] for k in ("outer_loaded", "outer_compiled", "det_loaded",
                               "det_compiled")] == [0, 1, 0, 1]
    assert [second[k] for k in ("outer_loaded", "outer_compiled", "det_loaded",
                                "det_compiled")] == [1, 0, 1, 0]
    A = np.array([[2.0, -1.0, 0.5], [0.3, 1.5, -2.0], [1.0, 0.7, 3.0]])
    for out in (first, second):
        np.testing.assert_allclose(out["lse"], softmax(x, 1.0), rtol=1e-12)
        np.testing.assert_allclose(out["descend"], descended(x, 1.0), rtol=1e-12)
        np.testing.assert_allclose(out["outer"], 2 * np.sin(x) * np.cos(x), rtol=1e-12)
        assert out["outer_file"].startswith(str(cache))
        # (the gradient of a determinant: its cofactors, det(A) A^-T)
        np.testing.assert_allclose(out["det"], (np.linalg.det(A) * np.linalg.inv(A).T).ravel(),
                                   rtol=1e-12)


@pytest.mark.parametrize("change", [{"weight": 3.0}, {"power": 4}])
def test_a_changed_callee_is_a_new_entry_not_the_old_code(tmp_path, change):
    # a global the function called reads, or its code: the caller's digest follows it
    import numpy as np
    cache = tmp_path / "cache"
    x = np.array([0.5, -1.0, 2.0])
    first = run(tmp_path, cache)
    changed = run(tmp_path, cache, **change)
    assert (changed["outer_loaded"], changed["outer_compiled"]) == (0, 1)
    assert changed["outer_file"] != first["outer_file"]
    weight, power = change.get("weight", 1.0), change.get("power", 2)
    np.testing.assert_allclose(changed["outer"],
                               weight * power * np.sin(x) ** (power - 1) * np.cos(x),
                               rtol=1e-12)
    # (the functions nothing changed in: loaded)
    assert (changed["lse_loaded"], changed["det_loaded"]) == (1, 1)


def test_a_changed_global_is_a_new_entry_not_the_old_code(tmp_path):
    import numpy as np
    cache = tmp_path / "cache"
    x = [0.5, -1.0, 2.0]
    run(tmp_path, cache, scale=1.0)
    changed = run(tmp_path, cache, scale=3.0)
    assert (changed["lse_loaded"], changed["lse_compiled"]) == (0, 1)
    np.testing.assert_allclose(changed["lse"], softmax(x, 3.0), rtol=1e-12)
    assert changed["lse_file"] != run(tmp_path, cache, scale=1.0)["lse_file"]


def test_an_empty_cache_directory_turns_it_off(tmp_path):
    import numpy as np
    out = run(tmp_path, "")
    assert out["lse_loaded"] == 0 and not out["lse_file"].endswith(".py")
    np.testing.assert_allclose(out["lse"], softmax([0.5, -1.0, 2.0], 1.0), rtol=1e-12)


@pytest.mark.parametrize("value, described", [
    (2.5, True), ((1, "a", None), True), (__import__("numpy").float64(2.0), True),
    (len, True), (object(), False), (lambda x: x, False)])
def test_what_the_digest_can_settle(value, described):
    from s2sad import native_cache
    assert (native_cache._described(value) is not None) is described
