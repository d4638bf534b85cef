"""The first call of the numba backend's derivatives of GradBench's evals (gradbench/evals),
each in a fresh process: s2sad's transform and Numba's compile, without the disk cache,
with an empty one (which it fills), and with the one filled (a later process), and the
time of a call after it. Run from the repository's root:

    python bench/numba_first_call.py [EVAL ...]

It prints one Markdown line per eval (seconds; the last column microseconds a call).
"""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: {eval: (function, input)}: small inputs, the sizes of the tests
INPUTS = {
    "lse": ("gradient", {"x": [0.5, -1.0, 2.0, 0.3, 1.1]}),
    "llsq": ("gradient", {"x": [0.5, -1.0, 2.0, 0.3], "n": 9}),
    "ode": ("gradient", {"x": [0.5, 0.2, 0.8, 0.3], "s": 3}),
    "det": ("gradient", {"A": [2.0, -1.0, 0.5, 0.3, 1.5, -2.0, 1.0, 0.7, 0.4], "ell": 3}),
    "kmeans": ("dir", {"centroids": [[0.1, 0.2], [0.9, 0.5], [0.4, 0.8]],
                       "points": [[0.0, 0.1], [1.0, 0.4], [0.5, 0.9], [0.2, 0.3]]}),
}

ONE = r"""
import json, sys, time
start = time.perf_counter()
from gradbench import evals
import numba  # noqa: F401
imported = time.perf_counter() - start
name, function, input = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
fn = evals.load(name).functions("numba")[function]
args = fn.prepare(input)
start = time.perf_counter()
fn.run(*args)
first = time.perf_counter() - start
start = time.perf_counter()
for _ in range(100):
    fn.run(*args)
call = (time.perf_counter() - start) / 100
print(json.dumps({"import": imported, "first": first, "call": call}))
"""


def measure(name, cache):
    function, input = INPUTS[name]
    env = dict(os.environ, S2SAD_CACHE_DIR=cache, NUMBA_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-c", ONE, name, function, json.dumps(input)],
                          env=env, cwd=ROOT, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(names):
    print("| eval | imports | first call, no disk cache | first call, cache empty | "
          "first call, cache filled | a call (µs) |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name in names:
        with tempfile.TemporaryDirectory() as cache:
            off = measure(name, "")
            empty = measure(name, cache)
            filled = measure(name, cache)
        print(f"| {name} | {filled['import']:.2f} | {off['first']:.2f} | {empty['first']:.2f} "
              f"| {filled['first']:.2f} | {filled['call'] * 1e6:.1f} (no cache: "
              f"{off['call'] * 1e6:.1f}) |", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:] or list(INPUTS))
