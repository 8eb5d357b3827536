"""The abstraction stage's numbers in MLflow: the mean IIA per condition and map on the
parent run."""

from __future__ import annotations

from pipeline.experiments.abstraction.section import iia_means
from pipeline.tracking.state import nested_metrics


def parent_metrics(document: dict) -> dict[str, float]:
    return nested_metrics(iia_means(document), "abstraction/")


def run_metrics(document: dict, seed: str) -> dict[str, float]:
    return {}  # the stage measures the study's runs, not the lesson's
