"""The lesson's synthetic meter-reading sequences (docs/lesson.md section 1).

Each sequence has one marked step. The lesson's label says whether the reading at
that step exceeds the threshold, and no other step touches it; another task
(pipeline/tasks/) labels the same sequences by its own rule.
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from pipeline import tasks
from pipeline.config import DataConfig

MASK32 = 0xFFFFFFFF
# (name, weight) in the lesson's order; seed 004 calls them kuzey, guney, dogu, bati, merkez.
REGIONS = (("north", 0.28), ("south", 0.22), ("east", 0.18), ("west", 0.14), ("centre", 0.18))
SPLITS = ("train", "validation", "heldout")


def stream(t: int) -> Callable[[], float]:
    """The lesson's per-integer random stream: a hashed seed driving a 32-bit LCG."""
    x = ((t ^ (t >> 16)) * 2246822507) & MASK32
    x = ((x ^ (x >> 13)) * 3266489909) & MASK32
    state = (x ^ (x >> 16)) & MASK32

    def next_uniform() -> float:
        nonlocal state
        state = (state * 1664525 + 1013904223) & MASK32
        return state / 4294967296

    return next_uniform


def pick_region(u: float) -> str:
    """First region whose cumulative weight exceeds u (the last one if none)."""
    total = 0.0
    for name, weight in REGIONS:
        total += weight
        if u < total:
            return name
    return REGIONS[-1][0]


def reading_columns(steps: int) -> list[str]:
    return [f"reading_{t}" for t in range(steps)]


def generate(cfg: DataConfig, task: str = "lesson") -> pd.DataFrame:
    """All sequences in generation order, one row each, labelled by `task`'s rule."""
    module = tasks.task_module(task)
    rule, observe = module.label, getattr(module, "observe", None)
    span = cfg.steps - cfg.first_marked_step
    split_names = [name for name, size in zip(SPLITS, cfg.split, strict=True) for _ in range(size)]
    rows = []
    for i in range(cfg.sequences):
        draw = stream(cfg.seed + i)
        region = pick_region(draw())
        # Step 0 is the calibration reading, identical (0.0) in every sequence.
        readings = [0.0] + [
            round((draw() + draw() + draw() - 1.5) * 1.9, 3) for _ in range(cfg.steps - 1)
        ]
        marked = cfg.first_marked_step + int(draw() * span)
        if observe is not None:  # the task's own view of the readings, drawn after m
            readings = observe(readings, draw)
        label = rule(readings, marked, cfg.threshold)
        rows.append([i, split_names[i], region, *readings, marked, label])
    columns = ["id", "split", "region", *reading_columns(cfg.steps), "marked_step", "label"]
    return pd.DataFrame(rows, columns=columns)


def split_frame(frame: pd.DataFrame, split: str) -> pd.DataFrame:
    return frame[frame["split"] == split].reset_index(drop=True)


def summarize(frame: pd.DataFrame, cfg: DataConfig) -> dict[str, float | int]:
    """The lesson's data checks: why the task needs the marked step and nothing else."""
    train, heldout = split_frame(frame, "train"), split_frame(frame, "heldout")
    candidates = reading_columns(cfg.steps)[cfg.first_marked_step :]
    heldout_rate = float(heldout["label"].mean())
    # argmax keeps the first maximum, like the lesson's max(range, key=...).
    largest_step = heldout[candidates].to_numpy().argmax(axis=1) + cfg.first_marked_step
    return {
        "sequences": len(frame),
        "train_positive_rate": float(train["label"].mean()),
        "heldout_positive_rate": heldout_rate,
        "baseline": max(heldout_rate, 1.0 - heldout_rate),
        "any_step_above_threshold": float((frame[candidates] > cfg.threshold).any(axis=1).mean()),
        "max_reading_at_marker": float((largest_step == heldout["marked_step"].to_numpy()).mean()),
        "uniform_weight": 1.0 / cfg.steps,
    }
