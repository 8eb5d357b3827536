"""Two patterns: is the marked reading above the sequence's mean reading?

y = [r_m > mean_t r_t], the mean over all T steps (step 0's 0.0 included). The
marked step and the general level enter with opposite signs: one head can focus
on the marker and another spread over every step; a single softmax has only its
normalisation (the marked score against the log-sum-exp of the others, which
approaches their mean as the scores flatten). Equivalently r_m > mean_{t != m} r_t.

Rationale: every step (the marked one with weight 1 - 1/T, each other one through
the mean with -1/T). The model-based metrics (tau_loo, AOPC, flips) apply. The
rationale metrics (hit@1, rank, AUPRC) do not: against every step they are
constant (1, T, 1), so the grid's battery leaves them out.
"""

from __future__ import annotations

from pipeline.tasks import COSINE, ONE_HEAD

EXPERIMENT = "heads"  # the next lesson's section: a second head
# The next lesson's cells on this task (conf/grid/lesson.yaml lists them too).
GRID_VARIANTS = ("lesson", "sink", "multihead2", "multihead4")
# What each model variant can express here (pipeline/experiments/grid/capacity.py).
HAND_SET = {
    **{variant: "softmax_normalisation" for variant in ONE_HEAD},
    "multihead2": "two_heads",
    "multihead4": "two_heads",
}
CANNOT = {"posenc_sinusoidal": COSINE}


def label(readings: list[float], marked: int, threshold: float) -> int:
    return int(readings[marked] > sum(readings) / len(readings))


def rationale(marked: int, steps: int) -> list[int]:
    return list(range(steps))
