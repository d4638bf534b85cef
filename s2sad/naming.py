"""Deterministic, collision-free names for generated code.

Every name the user's function already uses is reserved up front; a generated name
takes the first free one of `base`, `base_1`, `base_2`, ...
"""
from . import syntax


class Namer:
    def __init__(self, reserved=()):
        self.taken = set(reserved)
        self.tried = {}     # base -> the k of the last name given for it (all before taken)

    @classmethod
    def for_function(cls, src):
        """Reserve every name `src`'s function mentions and every name it can see."""
        used = {n.id for n in syntax.name_nodes(src.node)}
        return cls(used | set(src.free_values()) | {src.name})

    def fresh(self, base):
        k = self.tried.get(base, 0)
        candidate = f"{base}_{k}" if k else base
        while candidate in self.taken:
            k += 1
            candidate = f"{base}_{k}"
        self.taken.add(candidate)
        self.tried[base] = k
        return candidate

    def version(self, base):
        """A name for a new SSA version of `base`: `base` itself if still free."""
        return self.fresh(base)
