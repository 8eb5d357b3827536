"""Absolute position: does the marked step lie in the first half of the sequence?

y = [m < T / 2]; with the lesson's m in 2..11 of T = 12, y = 1 for m in 2..5, so
the majority baseline is about 0.6. The readings play no part. A model without
positional information sees the steps as a set, whose distribution does not
depend on m: it cannot beat the majority baseline (tests/tasks/test_tasks.py shows it
on the generated data: moving the marked step to the other half keeps the set and
flips the label).

Rationale: the marked step (its position). Every metric applies; the rationale
metrics (hit@1, rank, AUPRC) reward finding the marker, which here is where the
answer is read from: its position, not its reading, decides.
"""

from __future__ import annotations

from pipeline.tasks import SET_ORDER

# The next lesson's cells on this task (conf/grid/lesson.yaml lists them too).
GRID_VARIANTS = ("lesson", "posenc_learned", "posenc_sinusoidal", "window3", "window12")
# The debate's cell: learned positions, the one pooling-only kind that can express
# the rule (most of its seeds do not learn it at the lesson's budget; report.md says so).
DEBATE_VARIANTS = ("posenc_learned",)
# What each model variant can express here (pipeline/experiments/grid/capacity.py).
HAND_SET = {"posenc_learned": "learned_halves", "window12": "window_count"}
CANNOT = {
    **{variant: SET_ORDER for variant in ("lesson", "sink", "multihead2", "multihead4")},
    "posenc_sinusoidal": (
        "(sin m, cos m) for m = 2..5 and 6..11 interleave on the circle: no linear readout "
        "separates them"
    ),
    **{
        variant: "every m >= w - 1 sees w positions: m = 5 and m = 6 look alike"
        for variant in ("window2", "window3")
    },
}

ORDERED = True  # the label depends on where steps sit: the grid adds the shuffled control


def label(readings: list[float], marked: int, threshold: float) -> int:
    return int(marked < len(readings) / 2)


def rationale(marked: int, steps: int) -> list[int]:
    return [marked]
