"""Do attention weights explain the model? The lesson's pipeline as a package.

Importing it sets the process's numeric environment, on purpose: the kernel paths and
the threads' wait policy must be fixed before torch or numba load, in every entry
point (a stage, an app, a test, a notebook), or the bytes of an output could follow
the CPU."""

import os

from pipeline.core import numerics

# Before anything imports torch or numba: the same kernel paths on every CPU.
numerics.pin()

# OpenMP threads that spin while waiting turn a busy 2-core machine into a many-fold
# slowdown of torch's many small batched ops (docs/speed.md). Waiting passively costs
# the wake-ups of many small parallel ops, so training's small blocks run on threads
# of our own instead (pipeline/models/threads.py). Set before torch is first imported; a user's own
# OMP_WAIT_POLICY wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
