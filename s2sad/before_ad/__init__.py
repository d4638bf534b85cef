"""The passes before AD: from the user's function to Wengert form, checked, one per
module, run in the order of `s2sad.pipeline`."""
