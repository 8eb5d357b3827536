"""The mechanism over training (issue 62)."""
