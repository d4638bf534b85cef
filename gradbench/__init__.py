"""s2sad as a GradBench tool: GradBench's evals written in plain NumPy and differentiated by
s2sad, speaking GradBench's JSON-lines protocol (see gradbench/README.md).

`gradbench.tool` answers an eval's messages on stdin and stdout; `gradbench.evals` holds one
module per eval; `gradbench.run` drives an eval program of a local GradBench checkout against
the tool (or one of GradBench's own tools) without Docker; `gradbench.table` runs every eval
by every tool, one line per derivative. s2sad never imports this package.
"""
