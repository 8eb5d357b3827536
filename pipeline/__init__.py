"""Do attention weights explain the model? The lesson's pipeline as a package."""

import os

from pipeline.core import numerics

# Before anything imports torch or numba: the same kernel paths on every CPU.
numerics.pin()

# OpenMP threads that spin while waiting turn a busy 2-core machine into a 20x
# slowdown of torch's many small batched ops (measured: a 500-seed study took
# 186 s with spinning, 10 s without). Waiting passively costs the wake-ups of many
# small parallel ops, so training's small blocks run on threads of our own instead
# (pipeline/models/threads.py). Set before torch is first imported; a user's own
# OMP_WAIT_POLICY wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
