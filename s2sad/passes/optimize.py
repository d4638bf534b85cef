"""Optimize: clean up generated derivative code.

(Filled in below; for now the identity.)
"""


class Optimize:
    def __init__(self, src, namer):
        self.src = src
        self.namer = namer

    def run(self, fn):
        return fn
