"""Figures as PNG bytes; the only pipeline module that imports matplotlib.

Figures are drawn on a bare `Figure` with an Agg canvas, never through pyplot,
so no global figure state or GUI backend is touched. The bytes are
deterministic: matplotlib's default style (a user's matplotlibrc is ignored),
fixed size and dpi, and no "Software" stamp in the PNG metadata.
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable
from functools import partial
from typing import NamedTuple

import matplotlib.style
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import PatchCollection
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from pipeline.config.cells import cell_label

DPI = 100
MAX_SEEDS_SHOWN = 4  # per-seed pictures of a long seed list would drown the report
MAX_LEGEND_SEEDS = 10


def render(
    draw: Callable[[Figure], None], size: tuple[float, float], title: str | None = None
) -> bytes:
    """PNG bytes; `title` goes into the PNG's Title text (what a command checks before
    it replaces a file: its own earlier output only)."""
    metadata = {"Software": None, **({"Title": title} if title else {})}
    with matplotlib.style.context("default"):
        figure = Figure(figsize=size, dpi=DPI, layout="constrained")
        FigureCanvasAgg(figure)
        draw(figure)
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=DPI, metadata=metadata)
    return buffer.getvalue()


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


class Rendered(NamedTuple):
    section: str  # where report.md shows it: accuracy, weights or ablation
    caption: str
    name: str  # file name
    png: bytes


def lesson_figures(
    document: dict, steps: pd.DataFrame, curves: pd.DataFrame, high: float, low: float
) -> list[Rendered]:
    """Every figure of the report; per-seed pictures for the first MAX_SEEDS_SHOWN seeds."""
    shown = [int(seed) for seed in document["runs"]][:MAX_SEEDS_SHOWN]
    scatter = partial(weight_effect_scatter, steps=steps, seeds=shown, high=high, low=low)
    width = max(4.5, 0.5 * len(document["runs"]) + 2.5)
    return [
        Rendered(
            "accuracy",
            "Held-out accuracy per run and the run-to-run gap",
            "heldout_accuracy.png",
            render(partial(heldout_accuracy, document=document), (width, 3.6)),
        ),
        Rendered(
            "accuracy",
            "Training loss and accuracy per epoch",
            "training.png",
            render(partial(training_curves, curves=curves), (9, 3.6)),
        ),
        *(
            Rendered(
                "weights",
                f"Attention weights, held-out sequences x steps (run {seed})",
                f"attention_seed_{seed}.png",
                render(partial(attention_heatmap, steps=steps, seed=seed), (5.5, 6)),
            )
            for seed in shown
        ),
        Rendered(
            "ablation",
            "Attention weight against ablation effect",
            "weight_vs_effect.png",
            render(scatter, (3.2 * len(shown) + 0.6, 3.6)),
        ),
    ]


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
    ax.set(
        title=f"Held-out accuracy over {len(table)} seeds",
        xlabel="held-out accuracy",
        ylabel="seeds",
    )
    ax.set_yscale("log")
    ax.legend(loc="upper left", fontsize="small")


def ring_lesson_seeds(ax, table: pd.DataFrame, lesson: list[int], x: str, y: str, size: int):
    """Ring the points of the lesson's seeds, one colour each, for the legend."""
    for i, seed in enumerate(lesson):
        row = table[table["seed"] == seed]
        ax.scatter(
            row[x],
            row[y],
            s=size,
            facecolors="none",
            edgecolors=f"C{i + 1}",
            linewidths=1.5,
            label=f"run {seed}",
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


def study_pair_gaps(
    figure: Figure, gaps: list[float], pairs: list[float], observed: float, share: float
) -> None:
    """Share of seed pairs per held-out accuracy gap; at or past the lesson's gap in red."""
    total = sum(pairs)
    shares = [count / total for count in pairs]
    far = [gap >= observed - 1e-9 for gap in gaps]
    width = 0.8 * min((b - a for a, b in zip(gaps, gaps[1:], strict=False)), default=0.01)
    ax = figure.subplots()
    ax.bar(gaps, shares, width=width, color=["C3" if f else "C0" for f in far])
    ax.axvline(observed, color="C3", linestyle="--", label=f"lesson gap {observed:.4f}")
    ax.set(
        title=f"Held-out accuracy gap over all seed pairs ({share:.1%} at least the lesson's)",
        xlabel="|held-out accuracy of seed i - seed j|",
        ylabel="share of pairs",
    )
    ax.set_yscale("log")
    ax.legend(loc="upper right", fontsize="small")


def study_figures(
    table: pd.DataFrame, summary: dict, gaps: tuple[list[float], list[float]], step: float
) -> list[Rendered]:
    """The seed study's figures (section "study" of the report)."""
    lesson = {seed: run["heldout_accuracy"] for seed, run in summary["lesson_seeds"].items()}
    gap = summary["pair_gap"]
    return [
        Rendered(
            "study",
            "Held-out accuracy over the study's seeds, the lesson's runs marked",
            "study_heldout_accuracy.png",
            render(
                partial(study_accuracy_histogram, table=table, lesson=lesson, step=step), (7, 3.6)
            ),
        ),
        Rendered(
            "study",
            "Marker mass against held-out accuracy, one point per seed",
            "study_mass_vs_accuracy.png",
            render(
                partial(study_mass_vs_accuracy, table=table, lesson=[int(s) for s in lesson]),
                (6, 4.5),
            ),
        ),
        Rendered(
            "study",
            "Distribution of the held-out accuracy gap over all pairs of seeds",
            "study_pair_gaps.png",
            render(
                partial(
                    study_pair_gaps,
                    gaps=gaps[0],
                    pairs=gaps[1],
                    observed=gap["observed"],
                    share=gap["p_at_least_observed"],
                ),
                (7, 3.6),
            ),
        ),
    ]


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
) -> list[Rendered]:
    rendered = [
        Rendered(
            "faithfulness",
            "tau_loo against hit@1 per explainer, one point per study run",
            "faithfulness_tau_vs_hit.png",
            render(partial(tau_against_hit, seeds_frame=seeds_frame, lesson=lesson), (10, 6.4)),
        )
    ]
    if summary is not None and "sanity" in summary:
        rendered.append(
            Rendered(
                "faithfulness",
                "the sanity checks: similarity to the trained model's explanation as its "
                "parameters are re-drawn, and under permuted labels",
                "faithfulness_sanity.png",
                render(partial(sanity_similarity, sanity=summary["sanity"]), (10, 4.8)),
            )
        )
    return rendered


def gap_history(figure: Figure, versions: list[str], gaps: list[float]) -> None:
    """The run-to-run gap of each recorded version, oldest first."""
    ax = figure.subplots()
    ax.plot(range(len(gaps)), gaps, marker="o")
    ax.set_xticks(range(len(versions)), versions, rotation=30, ha="right")
    ax.set(title="Seed gap across versions", ylabel="run-to-run gap (held-out accuracy)")


def gap_history_png(versions: list[str], gaps: list[float]) -> bytes:
    return render(partial(gap_history, versions=versions, gaps=gaps), (7, 3.5), GAP_HISTORY_TITLE)


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


def next_lesson_figures(heads: list[dict], order: list[dict]) -> dict[str, bytes]:
    """The next lesson's PNGs by file name."""
    figures = {
        "heads_accuracy.png": render(
            partial(grid_accuracy, cells=heads, title="Two patterns: held-out accuracy by heads"),
            (8, 3.6),
        ),
        "order_accuracy.png": render(
            partial(grid_accuracy, cells=order, title="Order tasks: held-out accuracy by model"),
            (8, 5),
        ),
    }
    with_heads = [cell for cell in heads if "heads" in cell]
    if with_heads:
        figures["heads_mass_entropy.png"] = render(partial(heads_scatter, cells=with_heads), (6, 4))
    return figures


def binned_line(ax, binned: list[dict], label: str) -> None:
    """A cell's median per bin of the largest weight, at the bins' centres (empty bins
    left out)."""
    shown = [part for part in binned if part["median"] is not None]
    centres = [sum(part["largest_weight"]) / 2 for part in shown]
    ax.plot(centres, [part["median"] for part in shown], "o-", label=label)


def adversary_against_largest(figure: Figure, cells: list[dict]) -> None:
    """Jain & Wallace's figure 3: the adversary's largest JSD against the learned
    distribution's largest weight, the first eps, one line per cell."""
    ax = figure.subplots()
    for cell in cells:
        first = cell["adversary"][0]
        binned_line(ax, first["binned"], cell_label(cell["task"], cell["variant"]))
    ax.axhline(math.log(2), linestyle="--", color="grey", label="ln 2 (the most)")
    eps = cells[0]["adversary"][0]["eps"]
    ax.set(
        xlabel="largest learned weight of the example",
        ylabel="largest JSD within eps (median)",
        xlim=(0, 1),
        ylim=(0, 0.75),
        title=f"Exact adversary, eps {eps:g}: how far the weights can move",
    )
    ax.legend(fontsize="small")


def permutation_against_largest(figure: Figure, cells: list[dict]) -> None:
    """Jain & Wallace's figure 4: the median output change under permuted weights
    against the largest weight, one line per cell."""
    ax = figure.subplots()
    for cell in cells:
        binned_line(ax, cell["permutation"]["binned"], cell_label(cell["task"], cell["variant"]))
    ax.set(
        xlabel="largest learned weight of the example",
        ylabel="median |p(permuted) - p| (median)",
        xlim=(0, 1),
        ylim=(0, 1),
        title="Permuted attention: how far the output moves",
    )
    ax.legend(fontsize="small")


def deception_against_penalty(figure: Figure, cells: list[dict]) -> None:
    """Pruthi et al.'s trade-off: held-out accuracy and the weight on the rationale
    against lam (symlog), one line per cell; uniform attention's accuracy dashed."""
    accuracy_ax, weight_ax = figure.subplots(1, 2)
    for cell in cells:
        label = cell_label(cell["task"], cell["variant"])
        rows = cell["deception"]
        penalties = [row["penalty"] for row in rows]
        (line,) = accuracy_ax.plot(
            penalties, [row["heldout_accuracy"]["mean"] for row in rows], "o-", label=label
        )
        accuracy_ax.axhline(
            cell["fixed_attention"]["uniform"]["mean"], linestyle="--", color=line.get_color()
        )
        weight_ax.plot(penalties, [row["rationale_weight"]["mean"] for row in rows], "o-")
    for ax in (accuracy_ax, weight_ax):
        ax.set_xscale("symlog", linthresh=0.1)
        ax.set_xlim(left=0)
        ax.set_xlabel("lam (penalty on the rationale's weight)")
    accuracy_ax.set(ylabel="held-out accuracy (mean over seeds)", ylim=(0.5, 1.02))
    accuracy_ax.set_title("Accuracy (dashed: uniform attention)", fontsize="medium")
    weight_ax.set(ylabel="weight on the rationale (mean)", ylim=(0, 1))
    weight_ax.set_title("What the attention shows", fontsize="medium")
    accuracy_ax.legend(fontsize="small")


def consistent_against_seeds(figure: Figure, cells: list[dict]) -> None:
    """Wiegreffe & Pinter's figure: TVD against JSD to a base run, the seed pairs'
    cloud (dots, each pair's held-out means) and the model-consistent adversary at
    each lam (a line), one colour per cell."""
    ax = figure.subplots()
    for cell in cells:
        label = cell_label(cell["task"], cell["variant"])
        seeds = cell["seed_variance"]
        dots = ax.scatter(seeds["per_pair_jsd"], seeds["per_pair_tvd"], s=8, alpha=0.35)
        rows = cell["consistent_adversary"]
        ax.plot(
            [row["jsd"]["mean"] for row in rows],
            [row["tvd"]["mean"] for row in rows],
            "o-",
            color=dots.get_facecolor()[0][:3],
            label=f"{label}: adversary, lam " + ", ".join(f"{r['penalty']:g}" for r in rows),
        )
    ax.set(
        xlabel="JSD of the weights to the base run (held-out mean)",
        ylabel="TVD of the outputs to the base run (held-out mean)",
        xlim=(0, 0.7),
        ylim=(0, 0.7),
        title="Model-consistent adversary against two seeds (dots: seed pairs)",
    )
    ax.legend(fontsize="small")


def debate_figures(cells: list[dict]) -> dict[str, bytes]:
    """The attention debate's PNGs by file name, each drawn as its paper draws it."""
    return {
        "adversary_jsd.png": render(partial(adversary_against_largest, cells=cells), (6, 4)),
        "permuted_change.png": render(partial(permutation_against_largest, cells=cells), (6, 4)),
        "deception.png": render(partial(deception_against_penalty, cells=cells), (9, 3.8)),
        "consistent_adversary.png": render(
            partial(consistent_against_seeds, cells=cells), (6, 4.5)
        ),
    }
