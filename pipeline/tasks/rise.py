"""Relative order: did the marked reading rise from the step before it?

y = [r_m > r_{m-1}]. The label needs the step next to the marked one, whichever
it is: absolute positions alone do not say which step that is.

Rationale: the marked step and the one before it. Every metric applies: the
rationale metrics score both steps (hit@1: the top step is one of them; rank:
how far down the ranking both are; AUPRC against the pair).
"""

from __future__ import annotations

ORDERED = True  # the label depends on where steps sit: the grid adds the shuffled control


def label(readings: list[float], marked: int, threshold: float) -> int:
    return int(readings[marked] > readings[marked - 1])


def rationale(marked: int, steps: int) -> list[int]:
    return [marked - 1, marked]
