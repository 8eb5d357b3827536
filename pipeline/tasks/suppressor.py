"""A suppressor variable: a meter offset that the calibration step reveals.

Every sequence gets an offset o, drawn from its own stream after the marked step
(o = round((u1 + u2 + u3 - 1.5) * OFFSET_SCALE, 3)), and every reading shows
r_t + o: the calibration step 0, 0.0 in the lesson, reads o itself. The label is
the lesson's, on the true reading: y = [r'_m - r'_0 > threshold] = [r_m > threshold].

The offset is drawn independently of r_m and m, so the calibration reading (and
every unmarked reading, r_t + o) carries no information about the label: it is a
suppressor in the sense of Haufe et al. (2014) and XAI-TRIS (Clark et al. 2023),
statistically independent of y, yet a model that subtracts it removes the noise o
from r'_m (tests/tasks/test_suppressor.py shows both on the generated data).

Rationale: the marked step alone; the suppressor, step 0 (`suppressors`), is not in
it. Every metric applies; the grid's cell also reports how much of each
explainer's attribution lands on the suppressor (pipeline/experiments/grid/suppressors.py).
Only a model that can tell step 0 from the other unmarked steps can subtract it
exactly: learned positions (pipeline/experiments/grid/capacity.py's `calibrated_marker`).
"""

from __future__ import annotations

from collections.abc import Callable

from pipeline.tasks import COSINE

OFFSET_SCALE = 3.8  # twice the readings' spread: the offset is the larger noise

# The next lesson's cell on this task (conf/grid/lesson.yaml lists it too).
GRID_VARIANTS = ("posenc_learned",)
HAND_SET = {"posenc_learned": "calibrated_marker"}
CANNOT = {
    **{
        variant: "sees the steps as a set: which unmarked reading is the calibration "
        "step 0 is lost, and swapping it with another unmarked reading changes the label"
        for variant in ("lesson", "sink", "multihead2", "multihead4")
    },
    "posenc_sinusoidal": COSINE,
    **{
        variant: "open (no hand-set model found): the layer and the pooling score steps by "
        "content and window, and step 0's content is an unmarked reading like the others"
        for variant in ("window2", "window3", "window12")
    },
}


def observe(readings: list[float], draw: Callable[[], float]) -> list[float]:
    """The readings as the meter shows them: each plus the sequence's offset."""
    offset = round((draw() + draw() + draw() - 1.5) * OFFSET_SCALE, 3)
    return [round(reading + offset, 3) for reading in readings]


def label(readings: list[float], marked: int, threshold: float) -> int:
    # In thousandths, both readings have 3 decimals: the difference is r_m exactly,
    # and / 1000 gives the float the lesson compares (no rounding moves a tie).
    true = (round(readings[marked] * 1000) - round(readings[0] * 1000)) / 1000
    return int(true > threshold)


def rationale(marked: int, steps: int) -> list[int]:
    return [marked]


def suppressors(marked: int, steps: int) -> list[int]:
    """The steps that carry no label information but cancel noise: step 0."""
    return [0]
