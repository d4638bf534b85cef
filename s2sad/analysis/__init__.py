"""Analyses: facts about code that the transforms and passes read (through the `Compilation`, on first use)."""
