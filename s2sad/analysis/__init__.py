"""Analyses over Wengert form: what each statement computes, and what is active."""
