"""The dynamics stage's numbers in MLflow: its headline numbers on the parent run
(dynamics/), and each lesson run's mechanism at every epoch as step metrics on its
child (`dynamics/marker_mass`, `dynamics/hit_at_1`: the UI's chart shows run 2
finding the marked step and run 1 not)."""

from __future__ import annotations

from pipeline.experiments.dynamics.section import headline
from pipeline.tracking.state import nested_metrics


def parent_metrics(document: dict) -> dict[str, float]:
    """The headline numbers; an undefined one (None) is not logged."""
    values = {
        key: value for key, value in headline(document)["dynamics"].items() if value is not None
    }
    return nested_metrics({"dynamics": values}, "")


# The per-epoch numbers logged as step metrics: dynamics.json's curves -> metric key.
STEP_METRICS = {
    "marker_mass": "dynamics/marker_mass",
    "argmax_hit": "dynamics/hit_at_1",
    "heldout_accuracy": "dynamics/heldout_accuracy",
}


def run_metrics(document: dict, seed: str) -> dict[str, float]:
    return {}  # its numbers of a lesson run are per epoch: `run_steps`


def run_steps(document: dict, seed: str) -> dict[str, list[tuple[int, float]]]:
    """The lesson run's per-epoch numbers (where the study trained it) by metric key."""
    points = {}
    for name, key in STEP_METRICS.items():
        curve = document["curves"][name]
        if f"run {seed}" in curve:
            points[key] = list(zip(curve["epochs"], curve[f"run {seed}"], strict=True))
    return points
