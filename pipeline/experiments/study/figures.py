"""The seed study's figures: held-out accuracy over the seeds, marker mass against
accuracy, and the run-to-run gap over all pairs of seeds."""

from __future__ import annotations

from functools import partial

import pandas as pd
from matplotlib.figure import Figure

from pipeline.reporting.drawing import Plot, ring_lesson_seeds


def log_counts_axes(ax, title: str, xlabel: str, ylabel: str, legend: str) -> None:
    """The axes of a histogram over the seeds or their pairs: counts that span orders
    of magnitude on a log scale, and the marked lines' legend at `legend`."""
    ax.set(title=title, xlabel=xlabel, ylabel=ylabel)
    ax.set_yscale("log")
    ax.legend(loc=legend, fontsize="small")


def study_accuracy_histogram(
    figure: Figure, table: pd.DataFrame, lesson: dict[str, float], step: float
) -> None:
    """How many study seeds reach each held-out accuracy (a multiple of `step`),
    with the lesson's seeds marked."""
    counts = table["heldout_accuracy"].round(9).value_counts().sort_index()
    ax = figure.subplots()
    ax.bar(counts.index, counts.to_numpy(), width=0.8 * step, color="C0")
    for i, (seed, accuracy) in enumerate(lesson.items()):
        ax.axvline(accuracy, color=f"C{i + 1}", linestyle="--", label=f"run {seed}: {accuracy:.4f}")
    log_counts_axes(
        ax, f"Held-out accuracy over {len(table)} seeds", "held-out accuracy", "seeds", "upper left"
    )


def study_mass_vs_accuracy(figure: Figure, table: pd.DataFrame, lesson: list[int]) -> None:
    """Marker mass against held-out accuracy, one point per seed, lesson seeds ringed."""
    ax = figure.subplots()
    ax.scatter(table["marker_mass"], table["heldout_accuracy"], s=6, c="0.5", alpha=0.6)
    ring_lesson_seeds(ax, table, lesson, "marker_mass", "heldout_accuracy", 80)
    ax.axvline(0.5, color="0.3", linestyle=":", linewidth=0.8)
    ax.set(
        title="Where the weight goes and how well a seed does",
        xlabel="marker mass (mean held-out weight on the marked step)",
        ylabel="held-out accuracy",
        xlim=(0, 1),
    )
    if lesson:
        ax.legend(loc="lower right", fontsize="small")


def gap_bins(gaps: list[float], pairs: list[float], step: float) -> pd.Series:
    """Pair counts by gap, the gaps put on their grid of `step` (one held-out sequence):
    written at 8 decimals, one gap can come as two values 1e-8 apart."""
    bins = pd.Series(pairs).groupby([round(gap / step) for gap in gaps]).sum()
    bins.index = bins.index * step
    return bins


def study_pair_gaps(
    figure: Figure,
    gaps: list[float],
    pairs: list[float],
    step: float,
    observed: float,
    share: float,
) -> None:
    """Share of seed pairs per held-out accuracy gap, one bar per multiple of `step`;
    at or past the lesson's gap in red."""
    bins = gap_bins(gaps, pairs, step)
    shares = bins / bins.sum()
    far = [gap >= observed - step / 2 for gap in shares.index]
    ax = figure.subplots()
    ax.bar(
        shares.index, shares.to_numpy(), width=0.8 * step, color=["C3" if f else "C0" for f in far]
    )
    ax.axvline(observed, color="C3", linestyle="--", label=f"lesson gap {observed:.4f}")
    log_counts_axes(
        ax,
        f"Held-out accuracy gap over all seed pairs ({share:.1%} at least the lesson's)",
        "|held-out accuracy of seed i - seed j|",
        "share of pairs",
        "upper right",
    )


def study_figures(
    table: pd.DataFrame, summary: dict, gaps: tuple[list[float], list[float]], step: float
) -> list[Plot]:
    """The seed study's figures (section "study" of the report); `step`: the held-out
    accuracy of one sequence."""
    lesson = {seed: run["heldout_accuracy"] for seed, run in summary["lesson_seeds"].items()}
    gap = summary["pair_gap"]
    pair_gaps = partial(
        study_pair_gaps,
        gaps=gaps[0],
        pairs=gaps[1],
        step=step,
        observed=gap["observed"],
        share=gap["p_at_least_observed"],
    )
    return [
        Plot(
            "study_heldout_accuracy.png",
            partial(study_accuracy_histogram, table=table, lesson=lesson, step=step),
            (7, 3.6),
            "Held-out accuracy over the study's seeds, the lesson's runs marked",
            "study",
        ),
        Plot(
            "study_mass_vs_accuracy.png",
            partial(study_mass_vs_accuracy, table=table, lesson=[int(s) for s in lesson]),
            (6, 4.5),
            "Marker mass against held-out accuracy, one point per seed",
            "study",
        ),
        Plot(
            "study_pair_gaps.png",
            pair_gaps,
            (7, 3.6),
            "Distribution of the held-out accuracy gap over all pairs of seeds",
            "study",
        ),
    ]
