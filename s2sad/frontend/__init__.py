"""Source capture, the syntax fence, and name resolution."""
