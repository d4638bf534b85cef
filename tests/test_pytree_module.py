"""s2sad/rules/pytrees.py, the one module that takes values apart into their leaves and
puts them together again: round trips of every kind of structure, map, zeros, the sum of
adjoints, registered classes, and the structures it refuses."""
import collections
import dataclasses

import numpy as np
import pytest

from s2sad.errors import InternalError, S2SADError
from s2sad.rules import pytrees


@dataclasses.dataclass
class Layer:
    W: np.ndarray
    b: np.ndarray
    scale: float
    n: int = 2
    name: str = "layer"


Point = collections.namedtuple("Point", "x y")


class Box:
    """A plain class, registered below: its children are `lo` and `hi`; `label` is aux."""

    def __init__(self, lo, hi, label="box"):
        self.lo, self.hi, self.label = lo, hi, label


pytrees.register(Box, lambda b: ((b.lo, b.hi), b.label),
                 lambda label, children: Box(*children, label))

RNG = np.random.default_rng(4)
W, B = RNG.normal(size=(3, 2)), RNG.normal(size=3)

# (value, its leaves in order)
CASES = {
    "float": (1.5, [1.5]),
    "array": (B, [B]),
    "None": (None, [None]),
    "tuple of arrays": ((W, B), [W, B]),
    "list of (W, b)": ([(W, B), (B, W)], [W, B, B, W]),
    "dict": ({"w": W, "b": B, "c": 2.0}, [W, B, 2.0]),
    "dataclass": (Layer(W, B, 0.5), [W, B, 0.5, 2, "layer"]),
    "named tuple": (Point(1.0, B), [1.0, B]),
    "registered": (Box(B, 2.0), [B, 2.0]),
    "nested": ({"layers": [Layer(W, B, 0.1)], "box": Box(Point(1.0, 2.0), [3.0])},
               [W, B, 0.1, 2, "layer", 1.0, 2.0, 3.0]),
}


def same(a, b):
    """Whether `a` and `b` are equal values of one type, walked without s2sad."""
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        return a.shape == b.shape and np.array_equal(a, b)
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(map(same, a, b))
    if dataclasses.is_dataclass(a):
        return all(same(getattr(a, f.name), getattr(b, f.name))
                   for f in dataclasses.fields(a))
    if isinstance(a, Box):
        return same(a.lo, b.lo) and same(a.hi, b.hi) and a.label == b.label
    return a == b


@pytest.mark.parametrize("name", CASES)
def test_flatten_gives_the_leaves_in_order_and_unflatten_puts_them_back(name):
    value, expected = CASES[name]
    leaves, structure = pytrees.flatten(value)
    assert len(leaves) == len(expected) == structure.size
    assert all(same(a, b) for a, b in zip(leaves, expected))
    assert pytrees.leaves(value) == leaves or all(map(same, pytrees.leaves(value), leaves))
    assert same(pytrees.unflatten(structure, leaves), value)


@pytest.mark.parametrize("name", CASES)
def test_unflatten_puts_other_leaves_in_their_places(name):
    value, expected = CASES[name]
    leaves, structure = pytrees.flatten(value)
    marked = [("leaf", k) for k in range(len(leaves))]
    rebuilt = pytrees.unflatten(structure, marked)
    assert pytrees.leaves_as(rebuilt, structure) == marked


def test_structures_keep_their_types_and_the_order_of_dict_keys():
    value = {"z": Point(1.0, 2.0), "a": [Layer(W, B, 1.0)], "m": (Box(1.0, 2.0, "m"),)}
    leaves, structure = pytrees.flatten(value)
    rebuilt = pytrees.unflatten(structure, leaves)
    assert list(rebuilt) == ["z", "a", "m"]
    assert type(rebuilt["z"]) is Point and type(rebuilt["a"][0]) is Layer
    assert type(rebuilt["m"]) is tuple and rebuilt["m"][0].label == "m"
    assert repr(structure) == "{'z': Point(*, *), 'a': [Layer(*, *, *, *, *)], 'm': (Box(*, *))}"


def test_a_dataclass_is_rebuilt_without_its_init():
    @dataclasses.dataclass
    class Checked:
        x: float

        def __post_init__(self):
            if self.x < 0:
                raise ValueError("negative")
    leaves, structure = pytrees.flatten(Checked(1.0))
    assert pytrees.unflatten(structure, [-2.0]).x == -2.0


def test_unflatten_refuses_another_number_of_leaves():
    _, structure = pytrees.flatten((1.0, [2.0, 3.0]))
    with pytest.raises(S2SADError, match="3 leaves"):
        pytrees.unflatten(structure, [1.0, 2.0])
    with pytest.raises(S2SADError, match="3 leaves"):
        pytrees.unflatten(structure, [1.0, 2.0, 3.0, 4.0])


def test_map_applies_a_function_leaf_by_leaf_over_several_values():
    a = {"w": W, "p": Point(1.0, 2.0), "box": Box(B, 3.0)}
    b = {"p": Point(10.0, 20.0), "w": 2 * W, "box": Box(B, 4.0)}     # keys in another order
    out = pytrees.map(lambda u, v: u + v, a, b)
    assert same(out["w"], 3 * W) and out["p"] == Point(11.0, 22.0)
    assert same(out["box"].lo, 2 * B) and out["box"].hi == 7.0 and list(out) == ["w", "p", "box"]
    assert pytrees.map(lambda u: u * 2, 3.0) == 6.0


@pytest.mark.parametrize("other", [
    {"w": W},                                       # a key missing
    {"w": W, "p": (1.0, 2.0), "box": Box(B, 3.0)},    # a tuple for a named tuple
    {"w": W, "p": Point(1.0, 2.0), "box": [B, 3.0]},  # a list for a registered class
    [W, Point(1.0, 2.0), Box(B, 3.0)],              # a list for a dict
])
def test_map_refuses_values_of_another_structure(other):
    a = {"w": W, "p": Point(1.0, 2.0), "box": Box(B, 3.0)}
    with pytest.raises(S2SADError, match="another structure"):
        pytrees.map(lambda u, v: u + v, a, other)


def test_map_takes_a_subtree_where_the_first_value_has_a_leaf():
    out = pytrees.map(lambda u, v: (u, v), [1.0, 2.0], [(3.0, 4.0), {"a": 5.0}])
    assert out == [(1.0, (3.0, 4.0)), (2.0, {"a": 5.0})]


def test_zeros_like_gives_none_for_what_a_record_holds_without_a_derivative():
    z = pytrees.zeros_like({"layer": Layer(W, B, 0.5), "n": 3, "box": Box(B, 7, "b")})
    assert same(z["layer"], Layer(np.zeros((3, 2)), np.zeros(3), 0.0, None, None))
    assert z["n"] == 0.0            # an int in a dict: zero, as in a tuple or list
    assert same(z["box"].lo, np.zeros(3)) and z["box"].hi is None and z["box"].label == "b"
    assert pytrees.zeros_like(np.arange(3)).dtype == np.float64
    assert pytrees.zeros_like(np.ones(2, np.float32)).dtype == np.float32


def test_add_sums_adjoints_leaf_by_leaf_with_none_and_zero_as_zero():
    a = {"layer": Layer(W, B, 0.5, None, None), "box": Box(B, 1.0), "xs": [1.0, None]}
    b = {"box": Box(B, 2.0), "layer": Layer(W, 0.0, 0.25, None, None), "xs": [0.0, 2.0]}
    out = pytrees.add(a, b)
    assert same(out["layer"], Layer(2 * W, B, 0.75, None, None))
    assert same(out["box"].lo, 2 * B) and out["box"].hi == 3.0
    assert out["xs"] == [1.0, 2.0]
    assert pytrees.add(None, a) is a and pytrees.add(a, 0.0) is a
    assert pytrees.add(1.0, 2.0) == 3.0


def test_add_reads_an_array_as_the_rows_of_a_sequence():
    assert same(pytrees.add([1.0, 2.0], np.array([3.0, 4.0])), [4.0, 6.0])
    assert same(pytrees.add(np.array([3.0, 4.0]), (1.0, 2.0)), (4.0, 6.0))


@pytest.mark.parametrize("a, b", [
    ([1.0, 2.0], [1.0, 2.0, 3.0]),
    ({"a": 1.0}, {"b": 1.0}),
    (Layer(W, B, 0.5), Point(1.0, 2.0)),
    (Box(1.0, 2.0), {"lo": 1.0, "hi": 2.0}),
])
def test_add_refuses_adjoints_of_different_structures_as_a_bug_of_s2sad(a, b):
    with pytest.raises(InternalError, match="different structures"):
        pytrees.add(a, b)


def test_from_array_spreads_a_number_over_a_structure():
    out = pytrees.from_array(2.0, {"layer": Layer(W, B, 0.5), "xs": (1.0, 3)})
    # (a number stands for itself in an array's place: a uniform adjoint)
    assert same(out["layer"], Layer(np.array(2.0), np.array(2.0), 2.0, None, None))
    assert out["xs"] == (2.0, 2.0)
    assert same(pytrees.from_array(np.array([1.0, 2.0]), [0.0, 0.0]), [1.0, 2.0])


def test_register_refuses_what_is_not_a_new_kind_of_structure():
    with pytest.raises(S2SADError, match="registers a class"):
        pytrees.register(Box(1.0, 2.0), lambda b: ((), None), lambda a, c: None)
    with pytest.raises(S2SADError, match="takes apart already"):
        pytrees.register(Layer, lambda b: ((), None), lambda a, c: None)
    with pytest.raises(S2SADError, match="two functions"):
        pytrees.register(type("Other", (), {}), None, None)
    assert pytrees.registered(Box) and not pytrees.registered(Layer)
    assert pytrees.is_structure(Box(1.0, 2.0)) and not pytrees.is_structure(object())
