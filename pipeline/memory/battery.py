"""The faithfulness battery's memory terms (pipeline/analysis/faithfulness.py): its
explain passes, the per-example scores it keeps, the sanity checks and the
robustness metrics."""

from __future__ import annotations

import dataclasses
import math

from pipeline.config.bounds import MemoryTerm
from pipeline.config.schema import Config
from pipeline.core import measures
from pipeline.memory.sizes import BATTERY_RUNS, DTYPE_BYTES, at_once, battery_values, kind_key
from pipeline.memory.study import study_terms
from pipeline.models import interface


def battery_terms(cfg: Config, runs: int, runs_key: str, heap: float = 1.0) -> list[MemoryTerm]:
    """The faithfulness battery (pipeline/analysis/faithfulness.py) on `runs` runs:
    integrated gradients' path, and the rest beside it. `heap` scales the fit, which
    was made with the battery's blocks in the heap: above 1 for what many chunks in
    turn leave there, below 1 where the blocks are mapped (MAPPED_BATTERY). The
    battery writes each chunk's results into tables allocated before the first, so
    no chunk's survivors pin the heap behind it (on one thread, the faithfulness
    stage's 63 chunks peaked at 725 to 752 MiB; keeping each chunk's own results,
    at 1057 to 2103 MiB)."""
    per_ig_step, once = (math.ceil(values * heap) for values in battery_values(cfg.model))
    in_flight = at_once(BATTERY_RUNS, runs)
    shared = (
        ("runs", runs_key, in_flight),
        ("held-out", "data.split", cfg.data.split[2]),
        ("steps", "data.steps", cfg.data.steps),
    )
    size = ("bytes", "", DTYPE_BYTES[cfg.train.dtype])
    ig_steps = ("ig_steps", "faithfulness.ig_steps", cfg.faithfulness.ig_steps)
    key = kind_key(cfg.model)
    return [
        MemoryTerm(
            "integrated gradients",
            (*shared, ig_steps, ("values", key, per_ig_step), size),
            phase="battery",
        ),
        MemoryTerm("the battery's curves", (*shared, ("values", key, once), size), phase="battery"),
    ]


def per_example_scores_term(cfg: Config, runs: int, runs_key: str, phase: str = "") -> MemoryTerm:
    """The battery's values per (run, held-out example), every row and metric, kept for
    the paired comparisons (pipeline/analysis/paired.py): at most every declared
    explainer, one row per head, and the random order."""
    rows = len(measures.EXPLAINERS) + interface.pooling_heads(cfg.model) + 1
    return MemoryTerm(
        "the battery's per-example scores",
        (
            ("runs", runs_key, runs),
            ("held-out", "data.split", cfg.data.split[2]),
            ("rows", "", rows),
            ("metrics", "", len(measures.SCORES)),
            ("bytes", "", 8),
        ),
        phase,
    )


def sanity_terms(cfg: Config, runs: int, runs_key: str) -> list[MemoryTerm]:
    """The sanity checks (pipeline/analysis/sanity.py) on `runs` runs: the trained and
    one randomised model's scores of every row, and the label-randomised models'
    training (the study's machinery); their explain passes are the battery's chunks,
    counted there."""
    rows = len(measures.EXPLAINERS) + interface.pooling_heads(cfg.model) + 1
    scores = MemoryTerm(
        "the sanity checks' scores",
        (
            ("runs", runs_key, runs),
            ("held-out", "data.split", cfg.data.split[2]),
            ("steps", "data.steps", cfg.data.steps),
            ("rows", "", rows),
            ("models", "", 2),
            ("bytes", "", 8),
        ),
        phase="sanity",
    )
    # Trained before the battery (a grid cell) or after it, never beside it: after a
    # cell's mapped battery, training in the heap peaked rise-window3's cell at 1307
    # MiB, before it at 874 (benchmarks/bench_memory.py, one thread).
    training = [
        dataclasses.replace(term, phase="labels")
        for term in study_terms(cfg, runs, runs_key)
        if term.phase == "training"
    ]
    return [scores, *training]


def robustness_term(cfg: Config) -> MemoryTerm:
    """captum's sensitivity_max and infidelity (pipeline/analysis/robustness.py) on one
    run at a time: integrated gradients' path over every perturbed copy of the
    held-out sequences, with its gradients and captum's copies of it."""
    faith = cfg.faithfulness
    return MemoryTerm(
        "the robustness metrics",
        (
            ("perturbations", "faithfulness.robustness_samples", faith.robustness_samples),
            ("ig_steps", "faithfulness.ig_steps", faith.ig_steps),
            ("held-out", "data.split", cfg.data.split[2]),
            ("steps", "data.steps", cfg.data.steps),
            ("channels", "", 2),
            ("copies", "", 4),
            ("bytes", "", 8),
        ),
        phase="robustness",
    )
