"""The toy experiment's section of report.md and its headline entry."""

from __future__ import annotations


def section(document: dict) -> str:
    rows = ", ".join(f"run {seed} {value:.4f}" for seed, value in document["runs"].items())
    return f"## Largest weights\n\nMean largest pooling weight: {rows}."


SECTIONS = [(45, section)]  # between remove and retrain (40) and causal abstraction (50)


def headline(document: dict) -> dict:
    return {"top_weight": document["runs"]}
