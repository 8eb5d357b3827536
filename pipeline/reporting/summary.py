"""The one-line forms of a result that the report, the logs, the apps and `dvc repro`'s
closing summary (answer.py) share. Plain dicts in, text out: no torch, no pandas."""

from __future__ import annotations


def interval(summary: dict) -> str:
    """A mean and its 95% interval, the one form every report, log and doc uses:
    `0.8283 [0.8011, 0.8546]` (a dash between two numbers would read as a minus)."""
    return f"{summary['mean']:.4f} [{summary['ci95_low']:.4f}, {summary['ci95_high']:.4f}]"


def study_line(summary: dict) -> str:
    """The seed study in one line (also what the study app and merge_study print)."""
    gap = summary["pair_gap"]
    return (
        f"{summary['seeds']} seeds: held-out accuracy mean "
        f"{summary['heldout_accuracy']['mean']:.4f}; pairs at least {gap['observed']:.4f} "
        f"apart: {gap['p_at_least_observed']:.4f}"
    )
