"""The next lesson's figures (the next_lesson stage): held-out accuracy per grid
cell, and what each head looks at."""

from __future__ import annotations

from functools import partial

from matplotlib.figure import Figure

from pipeline.config.cells import cell_label
from pipeline.reporting.drawing import Plot, pngs


def grid_accuracy(figure: Figure, cells: list[dict], title: str) -> None:
    """Per cell: every seed's held-out accuracy (dots), the mean (bar), the majority
    baseline (dashed) and the hand-set model's accuracy (star), one row per cell; a
    legend names each mark."""
    ax = figure.subplots()
    marks = {}
    for row, cell in enumerate(cells):
        values = cell["per_seed_heldout_accuracy"]
        marks["one seed"] = ax.scatter(
            values, [row] * len(values), s=8, alpha=0.35, color="tab:blue"
        )
        (marks["mean over seeds"],) = ax.plot(
            [cell["heldout_accuracy"]["mean"]] * 2, [row - 0.3, row + 0.3], color="black"
        )
        (marks["majority baseline"],) = ax.plot(
            [cell["majority_baseline"]] * 2, [row - 0.4, row + 0.4], "--", color="grey"
        )
        if cell["hand_set_accuracy"] is not None:
            marks["hand-set model"] = ax.scatter(
                [cell["hand_set_accuracy"]], [row], marker="*", s=90, color="tab:red"
            )
        if "shuffled" in cell:
            (marks["mean on shuffled steps"],) = ax.plot(
                [cell["shuffled"]["mean"]] * 2, [row - 0.3, row + 0.3], color="tab:orange"
            )
    ax.set_yticks(range(len(cells)), labels=[cell_label(c["task"], c["variant"]) for c in cells])
    ax.set(xlabel="held-out accuracy (share of sequences)", xlim=(0.3, 1.02), title=title)
    ax.invert_yaxis()
    ax.legend(marks.values(), marks.keys(), loc="lower left", fontsize="small")


def heads_scatter(figure: Figure, cells: list[dict]) -> None:
    """Per seed and head of each multi-head cell: marker mass against entropy / log T."""
    ax = figure.subplots()
    for cell in cells:
        mass = [m for seed in cell["heads"]["per_seed_marker_mass"] for m in seed]
        entropy = [e for seed in cell["heads"]["per_seed_entropy"] for e in seed]
        ax.scatter(entropy, mass, s=10, alpha=0.5, label=cell["variant"])
    ax.set(
        xlabel="weight entropy / log T (1: even)", ylabel="marker mass", xlim=(0, 1), ylim=(0, 1)
    )
    ax.set_title("Two patterns: what each head looks at (one dot per seed and head)")
    ax.legend(title="variant")


def next_lesson_plots(heads: list[dict], order: list[dict]) -> list[Plot]:
    plots = [
        Plot(
            "heads_accuracy.png",
            partial(grid_accuracy, cells=heads, title="Two patterns: held-out accuracy by heads"),
            (8, 3.6),
        ),
        Plot(
            "order_accuracy.png",
            partial(grid_accuracy, cells=order, title="Order tasks: held-out accuracy by model"),
            (8, 5),
        ),
    ]
    with_heads = [cell for cell in heads if "heads" in cell]
    if with_heads:
        plots.append(
            Plot("heads_mass_entropy.png", partial(heads_scatter, cells=with_heads), (6, 4))
        )
    return plots


def next_lesson_figures(heads: list[dict], order: list[dict]) -> dict[str, bytes]:
    """The next lesson's PNGs by file name."""
    return pngs(next_lesson_plots(heads, order))
