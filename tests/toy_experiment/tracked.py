"""The toy experiment's numbers in MLflow."""

from __future__ import annotations


def parent_metrics(document: dict) -> dict[str, float]:
    return {f"top_weight/{seed}": value for seed, value in document["runs"].items()}


def run_metrics(document: dict, seed: str) -> dict[str, float]:
    return {"top_weight": document["runs"][seed]}
