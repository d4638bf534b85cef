"""The passes after AD: clean-ups and memory reuse of generated code, the guards of
what was resolved, `with` and `try` blocks put back, the code Numba compiles; one per
module, run in the order of `s2sad.pipeline`."""
