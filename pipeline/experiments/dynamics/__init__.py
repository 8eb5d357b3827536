"""The mechanism over training (issue 62): see emergence.py."""
