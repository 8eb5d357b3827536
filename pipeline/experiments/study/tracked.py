"""The seed study's numbers in MLflow: its summary on the parent run (study/); no run
per study seed (a thousand would swamp the UI)."""

from __future__ import annotations

from pipeline.tracking.state import nested_metrics

# Its outputs logged as the parent run's artifacts (paths. keys), under study/.
ARTIFACTS = ("study_summary", "study_seeds")


def parent_metrics(summary: dict) -> dict[str, float]:
    return nested_metrics(summary, "study/")


def run_metrics(summary: dict, seed: str) -> dict[str, float]:
    return {}  # the lesson's runs are the study's too, but logged as the lesson's
