"""The marks a pass leaves on syntax nodes for a later one: each declared once, here, with
what it means, the modules that set it and those that read it. A pass reads a mark with
`MARK.of(node)` (its default when the node has none) and sets it with `MARK.put(node,
value)`; `tests/test_marks.py` checks that every `s2s_*` attribute put on a node is
declared here, that the modules named use it, and that no module outside this one
spells a mark's attribute.

A function s2sad makes (a nested function lifted out of its parent, a checkpointed
loop's step, a `Version` of a callee resolved) carries its record (`Lifted`,
`LoopBody`, `Version`), which says where its code came from: `RECORD`, declared here
in the same way, sets it (`RECORD.put(fn, record)`) and reads it (`RECORD.of(fn)`,
None for a function s2sad did not make). It is not a mark of a node: a name that
denotes such a function carries the function (`PRIM`) and, when the code binds it
under its own name, `LIFTED`.

>>> import gast
>>> from s2sad import marks
>>> s = gast.Pass()
>>> marks.PHI.of(s), marks.PHI.put(s), marks.PHI.of(s)
(False, None, True)
>>> marks.PHI.set_by
('before_ad/wengert.py', 'before_ad/resolve_calls.py', 'ad/forward_mode.py')
"""
from __future__ import annotations

from typing import Any


class Mark:
    """One mark: the node attribute `attr`, its `default`, what it says (`what`), the
    modules that set it (`set_by`) and those that read it (`read_by`)."""
    __slots__ = ("attr", "default", "what", "set_by", "read_by")

    def __init__(self, attr, what, set_by, read_by, default: Any = False):
        self.attr, self.what, self.default = attr, what, default
        self.set_by, self.read_by = tuple(set_by), tuple(read_by)

    def of(self, node):
        """The mark of `node`, else the default."""
        return getattr(node, self.attr, self.default)

    def has(self, node) -> bool:
        """Whether `node` carries the mark (of any value, None included)."""
        return hasattr(node, self.attr)

    def put(self, node, value=True):
        """Mark `node` with `value`."""
        setattr(node, self.attr, value)

    def __repr__(self):
        return f"<mark {self.attr}>"


class FunctionRecord(Mark):
    """The record a function s2sad made carries (not a node's mark): read with `of(fn)`,
    None when s2sad did not make `fn`."""
    __slots__ = ()

    def __repr__(self):
        return f"<record {self.attr}>"


# -- Wengert form -----------------------------------------------------------------------
AUGMENTED = Mark(
    "s2s_augmented", "the assignment was an augmented one of a name (`x += t`), the last "
    "of those Wengert form makes of it (\"attribute\": of the name that holds an attribute, "
    "`obj.x += t`)", ["before_ad/desugar.py", "before_ad/wengert.py",
                      "before_ad/attribute_writes.py"],
    ["before_ad/wengert.py", "before_ad/aliasing.py"])
AUGMENTED_ELEMENT = Mark(
    "s2s_augmented_element", "the assignment was an augmented one of an element (`a[i] "
    "+= t`)", ["before_ad/desugar.py"], ["before_ad/wengert.py"])
ELEMENT = Mark(
    "s2s_element", "on the write of an element, the name of the element read that it "
    "updates; on an adjoint's element update (element_adjoints), True",
    ["before_ad/wengert.py", "after_ad/element_adjoints.py"],
    ["before_ad/aliasing.py", "after_ad/element_adjoints.py"], default=None)
INDEX = Mark(
    "s2s_index", "on `_s2s_setitem(a, i, v)`, the index as the user wrote it",
    ["before_ad/wengert.py"], ["before_ad/aliasing.py", "trace_recording.py"], default=None)
INIT = Mark(
    "s2s_init", "the assignment only binds a name before a loop or branch assigns it "
    "(`x = None`), so that every path binds it", ["before_ad/wengert.py", "ad/tapes.py",
                                                  "before_ad/resolve_calls.py"],
    ["ad/inplace.py", "after_ad/optimize.py", "before_ad/resolve_calls.py",
     "after_ad/native_tapes.py", "analysis/value_kinds.py", "analysis/shapes.py",
     "ad/batching.py"])
LOOP = Mark(
    "s2s_loop", "on an init of a loop's counter, the loop: only reads after it need it",
    ["before_ad/wengert.py"], ["after_ad/optimize.py"], default=None)
PHI = Mark(
    "s2s_phi", "the assignment at the end of a loop's body that carries a value to the "
    "next iteration (`x = x_3`)", ["before_ad/wengert.py", "before_ad/resolve_calls.py",
                                   "ad/forward_mode.py"],
    ["ad/forward_mode.py", "ad/tapes.py", "ad/inplace.py", "after_ad/optimize.py",
     "before_ad/resolve_calls.py", "trace_recording.py"])
TEMPORARY = Mark(
    "s2s_temporary", "the name is a temporary of Wengert form (not the user's)",
    ["before_ad/wengert.py", "ad/forward_mode.py"],
    ["ad/forward_mode.py", "before_ad/common_subexpressions.py",
     "after_ad/inline_temporaries.py", "analysis/names.py"])
BUILTIN = Mark(
    "s2s_builtin", "the called name is the builtin it spells (`len`, `range`)",
    ["analysis/operations.py"],
    ["analysis/operations.py", "ad/reverse_mode.py", "ad/forward_mode.py"])
VIEW = Mark(
    "s2s_view", "on a call of a Python function of the user's, the argument its result "
    "shares memory with (None: none)", ["before_ad/aliasing.py"], ["ad/inplace.py"],
    default=None)

# -- the transforms ------------------------------------------------------------------------
MARKER = Mark(
    "s2s_marker", "a placeholder statement a later pass replaces (`path_end`, ...)",
    ["syntax.py"], ["ad/forward_mode.py", "ad/checkpointed.py", "ad/tapes.py",
                    "ad/reverse_mode.py", "ad/inplace.py", "emit.py", "graph.py",
                    "trace_recording.py"], default=None)
RECOMPUTED = Mark(
    "s2s_recomputed", "a statement of the forward pass computed again at the top of a "
    "reversed loop, which prune_tapes drops if nothing reads it",
    ["ad/reverse_mode.py", "ad/tapes.py"], ["ad/tapes.py"])
READ_BACK = Mark(
    "s2s_read_back", "a value a reversed loop reads back from an array's final value "
    "instead of a tape (ad/inplace.py's final_element_reads)", ["ad/reverse_mode.py"],
    ["ad/reverse_mode.py", "ad/inplace.py"])
DEFINES = Mark(
    "s2s_defines", "on a write in place, the name of Wengert form it stands for",
    ["ad/inplace.py"], ["ad/inplace.py", "ad/tapes.py"], default=None)
UNCOMMENTED = Mark(
    "s2s_uncommented", "no `# grad of:` comment over the statement (a checkpointed "
    "loop's sweeps)", ["ad/checkpointed.py"], ["after_ad/optimize.py"])
TESTS = Mark(
    "s2s_tests", "on a guard's test, the tests as written, emitted so",
    ["syntax.py"], ["emit.py", "ad/header.py", "after_ad/guard_patterns.py",
                    "after_ad/guard_bindings.py", "analysis/buffers.py"], default=None)
LIKE = Mark(
    "s2s_like", "on an array inline_helpers made, its fact (shape class and dtype)",
    ["after_ad/inline_helpers.py"], ["after_ad/inline_helpers.py", "analysis/buffers.py"],
    default=None)

# -- within one pass -------------------------------------------------------------------------
CONSUMED = Mark(
    "s2s_consumed", "an iterator a loop or a call consumes", ["before_ad/desugar.py"],
    ["before_ad/desugar.py"])
JUMP = Mark(
    "s2s_jump", "a `return` made of a jump (break, continue, an early return)",
    ["before_ad/desugar.py"], ["before_ad/desugar.py"])
GRADIENT_MADE = Mark(
    "s2s_gradient_made", "a gradient made by the call and called at once",
    ["before_ad/gradient_calls.py"], ["before_ad/gradient_calls.py"])
NUMPY = Mark(
    "s2s_numpy", "the name is NumPy's module", ["ad/simplify.py"], ["ad/simplify.py"])
UNFOLDED = Mark(
    "s2s_unfolded", "an expression simplification could not fold", ["ad/simplify.py"],
    ["ad/simplify.py"])

# -- on names: the objects they denote ---------------------------------------------------------
PRIM = Mark(
    "s2s_prim", "on a name or attribute, the object it denotes (a lifted function, a "
    "runtime helper, a method resolved), whatever the user's names",
    ["before_ad/iteration.py", "before_ad/array_namespaces.py", "before_ad/builtin_calls.py",
     "before_ad/dicts.py",
     "before_ad/lift.py", "before_ad/attribute_writes.py",
     "before_ad/checkpointed_loops.py", "before_ad/write_calls.py",
     "before_ad/wengert.py", "before_ad/gradient_calls.py", "before_ad/resolve_calls.py",
     "before_ad/unread_factors.py",
     "before_ad/call_versions.py", "before_ad/complex_values.py"],
    ["frontend/source.py", "analysis/operations.py", "analysis/value_kinds.py",
     "analysis/shapes.py", "before_ad/aliasing.py", "before_ad/alias_errors.py",
     "before_ad/shared_memory.py", "before_ad/certain_axes.py",
     "before_ad/callee_effects.py",
     "before_ad/common_subexpressions.py", "before_ad/lost_derivatives.py",
     "after_ad/tangents_late.py", "ad/reverse_mode.py", "ad/forward_mode.py", "ad/tapes.py",
     "ad/inplace.py", "ad/checkpointed.py", "ad/batching.py", "trace_recording.py"],
    default=None)
LIFTED = Mark(
    "s2s_lifted", "on a name (with PRIM), that the function it denotes is one s2sad made "
    "(lifted, a loop's step), which the generated code binds under the name it has",
    ["before_ad/lift.py", "before_ad/checkpointed_loops.py", "before_ad/resolve_calls.py"],
    ["before_ad/lost_derivatives.py", "before_ad/checkpointed_loops.py",
     "ad/reverse_mode.py", "ad/forward_mode.py", "ad/batching.py", "trace_recording.py"])

# -- on the functions s2sad makes, not on nodes ------------------------------------------------
RECORD = FunctionRecord(
    "s2s_record", "on a function s2sad made, its record: before_ad/lift.py's Lifted (a "
    "nested function lifted), checkpointed_loops' LoopBody (a loop's step), call_versions' "
    "Version (a callee resolved)",
    ["before_ad/lift.py", "before_ad/checkpointed_loops.py", "before_ad/call_versions.py",
     "before_ad/resolve_calls.py", "before_ad/attribute_writes.py"],
    ["frontend/source.py", "analysis/value_kinds.py", "before_ad/lift.py",
     "before_ad/resolve_calls.py", "before_ad/gradient_calls.py", "before_ad/callee_effects.py",
     "ad/calls.py", "ad/forward_mode.py", "ad/fused.py", "ad/checkpointed.py",
     "ad/batching.py", "ad/header.py", "driver.py", "api.py"], default=None)

#: Every mark of a node, by attribute.
ALL = {m.attr: m for m in globals().values() if type(m) is Mark}
