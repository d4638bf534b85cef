"""Emission of generated source and its compilation."""
