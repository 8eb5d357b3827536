"""The lesson's figures: accuracy, training curves, the attention heatmaps, weight
against ablation effect; and the gap across versions (`python -m pipeline history`).

Drawn through pipeline/reporting/drawing.py, which sets matplotlib up.
"""

from __future__ import annotations

from functools import partial

import pandas as pd
from matplotlib.collections import PatchCollection
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from pipeline.reporting.drawing import Plot, render

MAX_SEEDS_SHOWN = 4  # per-seed pictures of a long seed list would drown the report
MAX_LEGEND_SEEDS = 10
GAP_HISTORY_TITLE = "pipeline history: the gap across versions"


def sorted_weights(steps: pd.DataFrame, seed: int) -> tuple[pd.DataFrame, pd.Series]:
    """One run's held-out weights (N, T), rows sorted by marked step then id."""
    run = steps[steps["seed"] == seed]
    marked = run.loc[run["is_marked"], ["id", "step"]].sort_values(["step", "id"])
    weights = run.pivot(index="id", columns="step", values="weight").loc[marked["id"]]
    return weights, marked["step"].reset_index(drop=True)


def attention_heatmap(figure: Figure, steps: pd.DataFrame, seed: int) -> None:
    weights, marked = sorted_weights(steps, seed)
    ax = figure.subplots()
    image = ax.imshow(
        weights.to_numpy(), aspect="auto", cmap="viridis", vmin=0, vmax=1, interpolation="nearest"
    )
    # Outline the cell of the marked step in every row: where the weight should be.
    boxes = [Rectangle((m - 0.5, row - 0.5), 1, 1) for row, m in enumerate(marked)]
    ax.add_collection(PatchCollection(boxes, facecolor="none", edgecolor="red", linewidth=0.6))
    groups = marked.groupby(marked).apply(lambda rows: rows.index.to_series().mean())
    ax.set_yticks(groups.to_numpy(), labels=[f"m={m}" for m in groups.index])
    ax.set_xticks(range(weights.shape[1]))
    ax.set(xlabel="step", ylabel="held-out sequences, by marked step m")
    ax.set_title(f"Run {seed}: attention weights (red: marked step)")
    figure.colorbar(image, ax=ax, label="weight")


def weight_effect_scatter(
    figure: Figure, steps: pd.DataFrame, seeds: list[int], high: float, low: float
) -> None:
    """Weight against ablation effect, one point per (example, step); the dashed
    lines bound the lower right corner: high weight, little effect."""
    axes = figure.subplots(1, len(seeds), sharex=True, sharey=True, squeeze=False)[0]
    for ax, seed in zip(axes, seeds, strict=True):
        run = steps[steps["seed"] == seed]
        top = run["is_top_weight"].astype(bool)
        ax.scatter(run.loc[~top, "weight"], run.loc[~top, "effect"], s=4, c="0.7", label="other")
        ax.scatter(run.loc[top, "weight"], run.loc[top, "effect"], s=8, c="C1", label="top weight")
        ax.axvline(high, color="0.3", linestyle="--", linewidth=0.8)
        ax.axhline(low, color="0.3", linestyle="--", linewidth=0.8)
        ax.set(title=f"Run {seed}", xlabel="attention weight", xlim=(0, 1))
    axes[0].set_ylabel("ablation effect |change in P(y=1)|")
    axes[0].legend(loc="upper left", fontsize="small")


def training_curves(figure: Figure, curves: pd.DataFrame) -> None:
    """Loss and accuracy per epoch, one line per seed (curves: epoch, seed, loss, accuracy)."""
    loss_ax, accuracy_ax = figure.subplots(1, 2)
    for seed, curve in curves.groupby("seed", sort=False):
        loss_ax.plot(curve["epoch"], curve["loss"], label=f"run {seed}")
        accuracy_ax.plot(curve["epoch"], curve["accuracy"], label=f"run {seed}")
    loss_ax.set(title="Training loss", xlabel="epoch", ylabel="binary cross-entropy")
    accuracy_ax.set(title="Training accuracy", xlabel="epoch", ylabel="accuracy", ylim=(0, 1))
    if curves["seed"].nunique() <= MAX_LEGEND_SEEDS:
        loss_ax.legend(fontsize="small")


def heldout_accuracy(figure: Figure, document: dict) -> None:
    """One bar per run, the baseline dashed, the run-to-run gap as a bracket."""
    seeds = list(document["runs"])
    accuracy = [document["runs"][seed]["heldout_accuracy"] for seed in seeds]
    ax = figure.subplots()
    ax.bar([f"run {seed}" for seed in seeds], accuracy, color="C0")
    ax.axhline(document["data"]["baseline"], color="0.3", linestyle="--", label="baseline")
    low, high = min(accuracy), max(accuracy)
    for level in (low, high):
        ax.axhline(level, color="C3", linewidth=0.8, linestyle=":")
    ax.annotate(
        "",
        xy=(1.02, high),
        xytext=(1.02, low),
        xycoords=("axes fraction", "data"),
        arrowprops={"arrowstyle": "<->", "color": "C3"},
    )
    ax.text(
        1.04,
        (low + high) / 2,
        f"gap\n{document['seed_gap']:.4f}",
        color="C3",
        transform=ax.get_yaxis_transform(),
        va="center",
    )
    ax.set(title="Held-out accuracy", ylabel="accuracy", ylim=(0, 1.05))
    ax.legend(loc="lower left", fontsize="small")


def lesson_figures(
    document: dict, steps: pd.DataFrame, curves: pd.DataFrame, high: float, low: float
) -> list[Plot]:
    """Every figure of the report; per-seed pictures for the first MAX_SEEDS_SHOWN seeds."""
    shown = [int(seed) for seed in document["runs"]][:MAX_SEEDS_SHOWN]
    scatter = partial(weight_effect_scatter, steps=steps, seeds=shown, high=high, low=low)
    width = max(4.5, 0.5 * len(document["runs"]) + 2.5)
    return [
        Plot(
            "heldout_accuracy.png",
            partial(heldout_accuracy, document=document),
            (width, 3.6),
            "Held-out accuracy per run and the run-to-run gap",
            "accuracy",
        ),
        Plot(
            "training.png",
            partial(training_curves, curves=curves),
            (9, 3.6),
            "Training loss and accuracy per epoch",
            "accuracy",
        ),
        *(
            Plot(
                f"attention_seed_{seed}.png",
                partial(attention_heatmap, steps=steps, seed=seed),
                (5.5, 6),
                f"Attention weights, held-out sequences x steps (run {seed})",
                "weights",
            )
            for seed in shown
        ),
        Plot(
            "weight_vs_effect.png",
            scatter,
            (3.2 * len(shown) + 0.6, 3.6),
            "Attention weight against ablation effect",
            "ablation",
        ),
    ]


def gap_history(figure: Figure, versions: list[str], gaps: list[float]) -> None:
    """The run-to-run gap of each recorded version, oldest first."""
    ax = figure.subplots()
    ax.plot(range(len(gaps)), gaps, marker="o")
    ax.set_xticks(range(len(versions)), versions, rotation=30, ha="right")
    ax.set(title="Seed gap across versions", ylabel="run-to-run gap (held-out accuracy)")


def gap_history_png(versions: list[str], gaps: list[float]) -> bytes:
    return render(partial(gap_history, versions=versions, gaps=gaps), (7, 3.5), GAP_HISTORY_TITLE)
