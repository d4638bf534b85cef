"""The AD transforms: reverse mode (`reverse_mode`, with its calls, tapes, in-place
writes, fused gradient and header) and forward mode (`forward_mode`)."""
