"""Flatten, unflatten and add of the structures s2sad meets, with s2sad's pytree module
(`s2sad/rules/pytrees.py`) and with optree if it is installed; and jacfwd and hessian of
a function of a dict of arrays. Run from the repository root: `python bench/pytrees.py`
(about 20 seconds). The numbers are in docs/design.md (Pytrees)."""
import collections
import dataclasses
import operator
import sys
import timeit

import numpy as np

sys.path.insert(0, ".")
import s2sad                                  # noqa: E402
from s2sad.rules import pytrees               # noqa: E402

try:
    import optree
except ImportError:
    optree = None

rng = np.random.default_rng(0)


@dataclasses.dataclass
class Layer:
    W: np.ndarray
    b: np.ndarray
    scale: float


Triple = collections.namedtuple("Triple", "x y z")

CASES = {
    "a float": 1.5,
    "a tuple of 2 arrays": (rng.normal(size=100), rng.normal(size=100)),
    "a list of 10 (W, b) tuples": [(rng.normal(size=(10, 10)), rng.normal(size=10))
                                   for _ in range(10)],
    "a dict of 3 arrays": {"w": rng.normal(size=100), "b": rng.normal(size=10),
                           "c": rng.normal(size=(5, 5))},
    "a dataclass of 3 fields": Layer(rng.normal(size=(10, 10)), rng.normal(size=10), 0.5),
    "a named tuple of 3 floats": Triple(1.0, 2.0, 3.0),
}


def per_call(fn, number=2000, repeat=5):
    """The best time of one call of `fn`, in microseconds."""
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def s2sad_times(x):
    leaves, structure = pytrees.flatten(x)
    return (per_call(lambda: pytrees.flatten(x)),
            per_call(lambda: pytrees.unflatten(structure, leaves)),
            per_call(lambda: pytrees.add(x, x)))


def optree_times(x):
    if dataclasses.is_dataclass(x) and not optree.is_structseq_class(type(x)):
        cls = type(x)
        names = [f.name for f in dataclasses.fields(cls)]
        if cls not in _registered:
            optree.register_pytree_node(
                cls, lambda o: ([getattr(o, n) for n in names], None, names),
                lambda _, children: cls(*children), namespace="s2sad")
            _registered.add(cls)
    options = {"none_is_leaf": True, "namespace": "s2sad"}
    leaves, spec = optree.tree_flatten(x, **options)
    return (per_call(lambda: optree.tree_flatten(x, **options)),
            per_call(lambda: optree.tree_unflatten(spec, leaves)),
            per_call(lambda: optree.tree_map(operator.add, x, x, **options)))


_registered = set()


def energy(p):
    return np.sum(np.tanh(p["W"] @ p["x"] + p["b"]) ** 2) + np.sum(p["x"] ** 4)


def derivative_times():
    p = {"W": rng.normal(size=(4, 5)), "x": rng.normal(size=5), "b": rng.normal(size=4)}
    jac = s2sad.jacfwd(energy)
    hess = s2sad.hessian(energy)
    jac(p), hess(p)
    return per_call(lambda: jac(p), number=20), per_call(lambda: hess(p), number=20)


def main():
    width = max(map(len, CASES))
    head = f"{'structure':<{width}}  s2sad µs: flatten unflatten   add"
    if optree is not None:
        head += f"  | optree {optree.__version__} µs: flatten unflatten   add"
    print(head)
    for name, x in CASES.items():
        line = f"{name:<{width}}  " + "".join(f"{t:>10.2f}" for t in s2sad_times(x))
        if optree is not None:
            line += "  |" + "".join(f"{t:>10.2f}" for t in optree_times(x))
        print(line)
    jac, hess = derivative_times()
    print(f"jacfwd of a function of a dict of 3 arrays (29 inputs): {jac:.0f} µs; "
          f"hessian: {hess:.0f} µs")


if __name__ == "__main__":
    main()
