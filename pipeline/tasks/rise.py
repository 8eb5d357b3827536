"""Relative order: did the marked reading rise from the step before it?

y = [r_m > r_{m-1}]. The label needs the step next to the marked one, whichever
it is: absolute positions alone do not say which step that is.

Rationale: the marked step and the one before it. Every metric applies: the
rationale metrics score both steps (hit@1: the top step is one of them; rank:
how far down the ranking both are; AUPRC against the pair).
"""

from __future__ import annotations

# The next lesson's cells on this task (conf/grid/lesson.yaml lists them too).
GRID_VARIANTS = ("lesson", "posenc_learned", "posenc_sinusoidal", "window3", "window2")
# The debate's cell: window 2, which can read step m - 1 beside m.
DEBATE_VARIANTS = ("window2",)
# What each model variant can express here (pipeline/experiments/grid/capacity.py).
HAND_SET = {"window2": "window_previous"}
CANNOT = {
    **{
        variant: "sees the steps as a set: which unmarked step is m - 1 is lost"
        for variant in ("lesson", "sink", "multihead2", "multihead4")
    },
    **{
        variant: "each step's score and readout depend on its own input and position "
        "only: nothing marks the step before m"
        for variant in ("posenc_learned", "posenc_sinusoidal")
    },
    **{
        variant: "the w - 1 steps before m score by content alone: m - 1 is not singled out"
        for variant in ("window3", "window12")
    },
}

ORDERED = True  # the label depends on where steps sit: the grid adds the shuffled control


def label(readings: list[float], marked: int, threshold: float) -> int:
    return int(readings[marked] > readings[marked - 1])


def rationale(marked: int, steps: int) -> list[int]:
    return [marked - 1, marked]
