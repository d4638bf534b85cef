"""Analyses: facts about code that the transforms and passes read, through the
`Compilation`, which computes each on first use."""
