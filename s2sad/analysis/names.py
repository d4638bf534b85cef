"""Name counts: how often each name is loaded and assigned in a tree, kept current as
passes change it (optimize, reverse's renaming of tape unpacks).
"""
from collections import Counter

import gast

from .. import syntax


class NameCounts:
    """How often each name is loaded, and assigned with `=`, in a tree: counted once,
    then kept current by the passes, which `drop` a statement before changing or
    deleting it and `add` it back after (counting by walking the whole tree for each
    name made these passes quadratic in the size of the pullback)."""

    def __init__(self, tree):
        self.loads = Counter()
        self.assigns = Counter()
        self.add(tree)

    def add(self, node, sign=1):
        for n in syntax.name_nodes(node):
            if isinstance(n.ctx, gast.Load):
                self.loads[n.id] += sign
        for block in syntax.blocks([node]):
            for s in block:
                if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name):
                    self.assigns[s.targets[0].id] += sign

    def drop(self, node):
        self.add(node, -1)


class StatementNames:
    """The names each statement of one block loads (how often) and binds, found once per
    statement while the block is scanned; a statement that changes is `forget`ten."""

    def __init__(self):
        self.found = syntax.NodeMap()

    def loads(self, s, name):
        return self.names(s)[0][name]

    def stores(self, s, name):
        return name in self.names(s)[1]

    def names(self, s):
        entry = self.found.get(s)
        if entry is None:
            loads, stores = Counter(), set()
            for n in syntax.name_nodes(s):
                if isinstance(n.ctx, gast.Load):
                    loads[n.id] += 1
                else:
                    stores.add(n.id)
            entry = self.found[s] = (loads, stores)
        return entry

    def forget(self, s):
        self.found[s] = None


def count_loads(node, name):
    return sum(1 for n in syntax.name_nodes(node) if n.id == name
               and isinstance(n.ctx, gast.Load))


def rename(node, old, new):
    for n in syntax.name_nodes(node):
        if n.id == old:
            n.id = new
