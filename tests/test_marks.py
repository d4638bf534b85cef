"""The marks passes leave on syntax nodes (s2sad/marks.py): each declared once, set and
read only by the modules its declaration names, and never by its attribute's name."""
import os
import re

import pytest

from s2sad import marks

PACKAGE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "s2sad")

#: The marks on nodes and on the objects they denote, still set and read as attributes.
ATTRIBUTES = {"s2s_prim", "s2s_lifted"}


def _sources():
    out = {}
    for folder, _, files in os.walk(PACKAGE):
        for name in files:
            if name.endswith(".py") and name != "marks.py":
                path = os.path.join(folder, name)
                out[os.path.relpath(path, PACKAGE).replace(os.sep, "/")] = open(path).read()
    return out


SOURCES = _sources()
NAMES = {m.attr: name for name, m in vars(marks).items() if isinstance(m, marks.Mark)}


@pytest.mark.parametrize("attr", sorted(marks.ALL))
def test_each_mark_is_set_and_read_where_it_says_and_nowhere_else(attr):
    mark, name = marks.ALL[attr], NAMES[attr]
    assert mark.what and mark.set_by and mark.read_by
    if attr in ATTRIBUTES:
        setting = re.compile(rf"\.{attr}\b[^=\n]*=[^=]|\.{attr}\s*=[^=]")
        reading = re.compile(rf"\b{attr}\b")
    else:
        setting = re.compile(rf"\bmarks\.{name}\.put\(|\bmark\.put\(")
        reading = re.compile(rf"\bmarks\.{name}\.(of|has)\(|\bmark\.(of|has)\(")
        loops = re.compile(rf"\bmarks\.{name}\b")
    setters = {m for m, text in SOURCES.items() if setting.search(text)
               and (attr in ATTRIBUTES or loops.search(text))}
    readers = {m for m, text in SOURCES.items() if reading.search(text)
               and (attr in ATTRIBUTES or loops.search(text))}
    assert set(mark.set_by) <= setters, f"{attr}: declared setters that do not set it"
    assert set(mark.read_by) <= readers, f"{attr}: declared readers that do not read it"
    if attr not in ATTRIBUTES:
        assert setters <= set(mark.set_by), f"{attr}: undeclared setters"
        assert readers <= set(mark.read_by) | set(mark.set_by), f"{attr}: undeclared readers"


def test_no_mark_is_set_or_read_by_its_attribute_name():
    spelled = {m: sorted(a for a in marks.ALL if a not in ATTRIBUTES
                         and re.search(rf"[.\"']{a}\b", text))
               for m, text in SOURCES.items()}
    assert not {m: a for m, a in spelled.items() if a}


def test_every_attribute_put_on_a_node_is_a_declared_mark():
    put = {a for text in SOURCES.values()
           for a in re.findall(r"\b[a-z_\]\)]+\.(s2s_[a-z_]+) = ", text)}
    # (the attributes s2sad gives functions and derivatives, not nodes)
    on_functions = {"s2s_gradient", "s2s_made_by", "s2s_custom", "s2s_derivative",
                    "s2s_guards", "s2s_watcher", "s2s_bound", "s2s_tangents",
                    "s2s_not_differentiable", "s2s_forward_over_reverse", "s2s_as_gradient"}
    assert put - on_functions <= set(marks.ALL)
