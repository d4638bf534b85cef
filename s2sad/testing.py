"""Helpers for s2sad's own doctests and tests: compile a function from a string."""
import itertools
import linecache
import math


_counter = itertools.count()


def function_from_source(text, namespace=None):
    """The last function `text` defines, with its source readable by `inspect`."""
    filename = f"<s2sad-example-{next(_counter)}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    ns = {"math": math, "sin": math.sin, "cos": math.cos, "exp": math.exp,
          "log": math.log, "sqrt": math.sqrt}
    ns.update(namespace or {})
    before = set(ns)
    exec(compile(text, filename, "exec"), ns)
    return [v for k, v in ns.items() if k not in before and callable(v)][-1]


def show(pass_class, text, wrt=0):
    """The source of the function in `text` after the pass `pass_class`."""
    from . import pipeline
    stage = pass_class.__name__.lower()
    return pipeline.stage_source(function_from_source(text), stage, wrt).rstrip("\n")
