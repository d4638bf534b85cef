"""Program transformations, one per module, run in the order of `s2sad.pipeline`."""
