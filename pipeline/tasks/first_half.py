"""Absolute position: does the marked step lie in the first half of the sequence?

y = [m < T / 2]; with the lesson's m in 2..11 of T = 12, y = 1 for m in 2..5, so
the majority baseline is about 0.6. The readings play no part. A model without
positional information sees the steps as a set, whose distribution does not
depend on m: it cannot beat the majority baseline (tests/test_tasks.py shows it
on the generated data: moving the marked step to the other half keeps the set and
flips the label).

Rationale: the marked step (its position). Every metric applies; the rationale
metrics (hit@1, rank, AUPRC) reward finding the marker, which here is where the
answer is read from: its position, not its reading, decides.
"""

from __future__ import annotations

ORDERED = True  # the label depends on where steps sit: the grid adds the shuffled control


def label(readings: list[float], marked: int, threshold: float) -> int:
    return int(marked < len(readings) / 2)


def rationale(marked: int, steps: int) -> list[int]:
    return [marked]
