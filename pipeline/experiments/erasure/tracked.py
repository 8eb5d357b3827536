"""The erasure stage's numbers in MLflow: the study's means on the parent run, each
lesson run's on its child."""

from __future__ import annotations

from pipeline.tracking.state import field_metrics


def parent_metrics(document: dict) -> dict[str, float]:
    return field_metrics(document["study"], "erasure/study/")


def run_metrics(document: dict, seed: str) -> dict[str, float]:
    return field_metrics(document["runs"].get(seed, {}), "erasure/")
