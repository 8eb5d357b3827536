"""The attention debate's figures (the debate_figures stage), each drawn as its
paper draws it."""

from __future__ import annotations

import math
from functools import partial

from matplotlib.figure import Figure

from pipeline.config.cells import cell_label
from pipeline.reporting.drawing import Plot, pngs


def binned_line(ax, binned: list[dict], label: str) -> None:
    """A cell's median per bin of the largest weight, at the bins' centres (empty bins
    left out)."""
    shown = [part for part in binned if part["median"] is not None]
    centres = [sum(part["largest_weight"]) / 2 for part in shown]
    ax.plot(centres, [part["median"] for part in shown], "o-", label=label)


def against_largest_axes(ax, ylabel: str, top: float, title: str) -> None:
    """The axes of Jain & Wallace's figures 3 and 4, a median per bin against the
    example's largest learned weight (0 to 1): the y axis from 0 to `top`, the title,
    the cells' legend."""
    ax.set(
        xlabel="largest learned weight of the example",
        ylabel=ylabel,
        xlim=(0, 1),
        ylim=(0, top),
        title=title,
    )
    ax.legend(fontsize="small")


def adversary_against_largest(figure: Figure, cells: list[dict]) -> None:
    """Jain & Wallace's figure 3: the adversary's largest JSD against the learned
    distribution's largest weight, the first eps, one line per cell."""
    ax = figure.subplots()
    for cell in cells:
        first = cell["adversary"][0]
        binned_line(ax, first["binned"], cell_label(cell["task"], cell["variant"]))
    ax.axhline(math.log(2), linestyle="--", color="grey", label="ln 2 (the most)")
    eps = cells[0]["adversary"][0]["eps"]
    against_largest_axes(
        ax,
        "largest JSD within eps (median)",
        0.75,
        f"Exact adversary, eps {eps:g}: how far the weights can move",
    )


def permutation_against_largest(figure: Figure, cells: list[dict]) -> None:
    """Jain & Wallace's figure 4: the median output change under permuted weights
    against the largest weight, one line per cell."""
    ax = figure.subplots()
    for cell in cells:
        binned_line(ax, cell["permutation"]["binned"], cell_label(cell["task"], cell["variant"]))
    against_largest_axes(
        ax,
        "median |p(permuted) - p| (median)",
        1,
        "Permuted attention: how far the output moves",
    )


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


def debate_plots(cells: list[dict]) -> list[Plot]:
    return [
        Plot("adversary_jsd.png", partial(adversary_against_largest, cells=cells), (6, 4)),
        Plot("permuted_change.png", partial(permutation_against_largest, cells=cells), (6, 4)),
        Plot("deception.png", partial(deception_against_penalty, cells=cells), (9, 3.8)),
        Plot("consistent_adversary.png", partial(consistent_against_seeds, cells=cells), (6, 4.5)),
    ]


def debate_figures(cells: list[dict]) -> dict[str, bytes]:
    """The attention debate's PNGs by file name, each drawn as its paper draws it."""
    return pngs(debate_plots(cells))
