"""The marks passes leave on syntax nodes (s2sad/marks.py): each declared once, set and
read only by the modules its declaration names, and never by its attribute's name."""
import os
import re

import pytest

from s2sad import marks

PACKAGE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "s2sad")

#: The marks of nodes and the record of a function s2sad made, by attribute.
DECLARED = {**marks.ALL, marks.RECORD.attr: marks.RECORD}

#: The attributes s2sad gives the functions and derivatives its API makes (not nodes, and
#: not functions its passes make: those carry marks.RECORD).
ON_FUNCTIONS = {"s2s_gradient", "s2s_made_by", "s2s_custom", "s2s_derivative", "s2s_guards",
                "s2s_watcher", "s2s_bound", "s2s_tangents", "s2s_not_differentiable",
                "s2s_forward_over_reverse", "s2s_as_gradient", "s2s_forward", "s2s_vmap",
                "s2s_checkpoint", "s2s_sites", "s2s_partial", "s2s_partial_binds",
                "s2s_copy_globals", "s2s_own_call", "s2s_vmap_of"}


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


@pytest.mark.parametrize("attr", sorted(DECLARED))
def test_each_mark_is_set_and_read_where_it_says_and_nowhere_else(attr):
    mark, name = DECLARED[attr], NAMES[attr]
    assert mark.what and mark.set_by and mark.read_by
    setting = re.compile(rf"\bmarks\.{name}\.put\(|\bmark\.put\(")
    reading = re.compile(rf"\bmarks\.{name}\.(of|has)\(|\bmark\.(of|has)\(")
    loops = re.compile(rf"\bmarks\.{name}\b")
    setters = {m for m, text in SOURCES.items() if setting.search(text) and loops.search(text)}
    readers = {m for m, text in SOURCES.items() if reading.search(text) and loops.search(text)}
    assert set(mark.set_by) <= setters, f"{attr}: declared setters that do not set it"
    assert set(mark.read_by) <= readers, f"{attr}: declared readers that do not read it"
    assert setters <= set(mark.set_by), f"{attr}: undeclared setters"
    assert readers <= set(mark.read_by) | set(mark.set_by), f"{attr}: undeclared readers"


def test_no_mark_is_set_or_read_by_its_attribute_name():
    """No module but marks.py spells a mark's attribute: not `node.s2s_prim`, not
    `getattr(node, "s2s_prim", None)`, not `setattr(fn, "s2s_record", r)`."""
    spelled = {m: sorted(a for a in DECLARED if re.search(rf"[.\"']{a}\b", text))
               for m, text in SOURCES.items()}
    assert not {m: a for m, a in spelled.items() if a}


def test_every_s2s_attribute_outside_marks_is_one_of_a_function_the_api_makes():
    """Any other `s2s_*` attribute (`x.s2s_new = ...`, `getattr(x, "s2s_new")`) is a mark
    of a node that marks.py does not declare."""
    spelled = {m: sorted(set(re.findall(r"[.\"'](s2s_[a-z_]+)\b", text)) - ON_FUNCTIONS)
               for m, text in SOURCES.items()}
    assert not {m: a for m, a in spelled.items() if a}


def test_the_record_of_a_function_is_not_a_mark_of_a_node():
    def step():
        pass
    assert marks.RECORD.attr not in marks.ALL and marks.RECORD.of(step) is None
    assert marks.RECORD.of(None) is None and marks.RECORD.of(len) is None
    marks.RECORD.put(step, "its record")
    assert marks.RECORD.of(step) == "its record"
