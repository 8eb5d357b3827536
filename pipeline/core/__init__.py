"""The primitives every other folder stands on; they import nothing above them."""
