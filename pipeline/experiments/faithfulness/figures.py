"""The faithfulness battery's figures: tau_loo against hit@1 per explainer, and the
randomisation sanity checks."""

from __future__ import annotations

from functools import partial

import pandas as pd
from matplotlib.figure import Figure

from pipeline.reporting.drawing import Plot, ring_lesson_seeds


def tau_against_hit(figure: Figure, seeds_frame: pd.DataFrame, lesson: list[int]) -> None:
    """tau_loo against hit@1, one panel per explainer, one point per study run: where
    faithfulness to the ablation and finding the marked step part ways."""
    explainers = [name for name in seeds_frame["explainer"].unique() if name != "random"]
    columns = 3
    rows = -(-len(explainers) // columns)
    axes = figure.subplots(rows, columns, sharex=True, sharey=True, squeeze=False).reshape(-1)
    for ax, name in zip(axes, explainers, strict=False):
        runs = seeds_frame[seeds_frame["explainer"] == name]
        ax.scatter(runs["tau_loo"], runs["hit_at_1"], s=5, c="0.5", alpha=0.5)
        ring_lesson_seeds(ax, runs, lesson, "tau_loo", "hit_at_1", 60)
        ax.set_title(name, fontsize="medium")
        ax.set(xlim=(-1.05, 1.05), ylim=(-0.05, 1.05))
    for ax in axes[len(explainers) :]:
        ax.set_visible(False)
    for ax in axes[::columns]:
        ax.set_ylabel("hit@1 (marked step on top)")
    for ax in axes[-columns:]:
        ax.set_xlabel("tau_loo (order vs ablation)")
    if lesson:
        axes[0].legend(loc="lower left", fontsize="small")


def sanity_similarity(figure: Figure, sanity: dict) -> None:
    """Each explainer's Spearman with the trained model's scores against the cascading
    randomisation step (Adebayo et al. 2018, figure 2's reading), with its 95%
    interval; beside it each group re-drawn alone and the permuted-labels model."""
    tests = sanity["tests"]
    cascade = tests["cascading"]
    others = {**tests["independent"], **tests["labels"]}
    steps = ["trained", *cascade]
    left, right = figure.subplots(
        1, 2, sharey=True, gridspec_kw={"width_ratios": [len(steps), len(others)]}
    )
    for row in next(iter(cascade.values())):
        entries = [cascade[step][row]["spearman"] for step in cascade]
        # An explainer's trained scores against themselves: 1. The random baseline
        # has no trained explanation to start from; it draws fresh noise at each step.
        start = 1 if row == "random" else 0
        means = [1.0] * (1 - start) + [entry["mean"] for entry in entries]
        lows = [1.0] * (1 - start) + [entry["ci95_low"] for entry in entries]
        highs = [1.0] * (1 - start) + [entry["ci95_high"] for entry in entries]
        positions = range(start, len(steps))
        style = "--" if row == "random" else "-"
        (line,) = left.plot(positions, means, style, marker="o", label=row)
        left.fill_between(positions, lows, highs, color=line.get_color(), alpha=0.15)
        alone = [others[step][row]["spearman"]["mean"] for step in others]
        right.plot(range(len(others)), alone, "o", color=line.get_color())
    for ax in (left, right):
        ax.axhline(0.0, color="0.6", linewidth=0.8)
    left.set_xticks(range(len(steps)), steps)
    left.set(
        xlabel="cascading: re-drawn from the output side up to",
        ylabel="Spearman with the trained model's scores",
        ylim=(-0.15, 1.05),
    )
    right.set_xticks(range(len(others)), [*tests["independent"], "permuted labels"])
    right.set(xlabel="one group alone; labels permuted")
    left.legend(loc="lower left", fontsize="small")


def faithfulness_figures(
    seeds_frame: pd.DataFrame, lesson: list[int], summary: dict | None = None
) -> list[Plot]:
    rendered = [
        Plot(
            "faithfulness_tau_vs_hit.png",
            partial(tau_against_hit, seeds_frame=seeds_frame, lesson=lesson),
            (10, 6.4),
            "tau_loo against hit@1 per explainer, one point per study run",
            "faithfulness",
        )
    ]
    if summary is not None and "sanity" in summary:
        rendered.append(
            Plot(
                "faithfulness_sanity.png",
                partial(sanity_similarity, sanity=summary["sanity"]),
                (10, 4.8),
                "the sanity checks: similarity to the trained model's explanation as its "
                "parameters are re-drawn, and under permuted labels",
                "faithfulness",
            )
        )
    return rendered
