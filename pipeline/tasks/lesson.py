"""The lesson's task: is the marked step's reading above the threshold (0.35)?

Rationale: the marked step alone. Every faithfulness metric applies: the
model-based ones (tau_loo, AOPC, flips) and the marked-step ones (hit@1, marked
rank, AUPRC), whose reference is the one step that decides the label.
"""

from __future__ import annotations

from pipeline.tasks import COSINE, ONE_HEAD

# What each model variant can express here (pipeline/experiments/grid/capacity.py builds
# the named hand-set models; docs/next_lesson.md has the derivations).
HAND_SET = {variant: "marker_reading" for variant in (*ONE_HEAD, "multihead2", "multihead4")}
CANNOT = {"posenc_sinusoidal": COSINE}
# The debate's cells: the lesson's model, and window 3, a layer that can carry a
# step's reading to its neighbours (what deceptive attention would need).
DEBATE_VARIANTS = ("lesson", "window3")


def label(readings: list[float], marked: int, threshold: float) -> int:
    return int(readings[marked] > threshold)


def rationale(marked: int, steps: int) -> list[int]:
    return [marked]
