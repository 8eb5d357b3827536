"""The roar stage's numbers in MLflow: its headline on the parent run
(roar/attention_drop/<run>, roar/rationale_drop)."""

from __future__ import annotations

from pipeline.tracking.state import nested_metrics


def parent_metrics(document: dict) -> dict[str, float]:
    return nested_metrics(document["headline"], "roar/")


def run_metrics(document: dict, seed: str) -> dict[str, float]:
    return {}  # a lesson run's ranking is one of many the stage retrains on
