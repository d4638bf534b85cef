"""The AD transformations: reverse mode (pullbacks) and, later, forward mode."""
