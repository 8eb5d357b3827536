"""The mechanism over training's figures: per-epoch curves with seed bands and the
lesson's runs, the emergence epochs, and the phase diagram."""

from __future__ import annotations

from functools import partial

from matplotlib.figure import Figure

from pipeline.reporting.drawing import Plot

PANELS = {
    "heldout_accuracy": "held-out accuracy",
    "marker_mass": "marker mass",
    "argmax_hit": "hit@1 (top weight on the marked step)",
}


def curves_figure(figure: Figure, curves: dict) -> None:
    """One panel per number: the median over seeds, the 5%-95% band, runs 1 and 2."""
    axes = figure.subplots(1, len(PANELS), sharex=True)
    for ax, (name, label) in zip(axes, PANELS.items(), strict=True):
        entry = curves[name]
        epochs = entry["epochs"]
        ax.fill_between(epochs, entry["q05"], entry["q95"], color="0.85", label="5%-95% of seeds")
        ax.plot(epochs, entry["median"], color="0.3", label="median")
        runs = [key for key in entry if key.startswith("run ")]
        for i, run in enumerate(runs):
            ax.plot(epochs, entry[run], color=f"C{i}", label=run)
        ax.set(title=label, xlabel="epoch", ylim=(0, 1.02))
    axes[0].legend(loc="lower right", fontsize="small")


def emergence_figure(figure: Figure, per_seed: list[int], never: float) -> None:
    """How many seeds settle on the marked step at each epoch."""
    reached = [epoch for epoch in per_seed if epoch >= 0]
    ax = figure.subplots()
    ax.hist(reached, bins=40, color="C0")
    ax.set(
        title=f"Epoch at which hit@1 settles ({never:.1%} of seeds never)",
        xlabel="epoch",
        ylabel="seeds",
    )


def phase_figure(figure: Figure, phases: dict) -> None:
    """Share of seeds that find the marked step, learning rate x init scale."""
    ax = figure.subplots()
    image = ax.imshow(phases["share_found"], vmin=0, vmax=1, cmap="viridis", origin="lower")
    ax.set_xticks(range(len(phases["lrs"])), [f"{lr:g}" for lr in phases["lrs"]])
    ax.set_yticks(range(len(phases["init_scales"])), [f"{s:g}" for s in phases["init_scales"]])
    for row, values in enumerate(phases["share_found"]):
        for column, share in enumerate(values):
            shade = "k" if share > 0.6 else "w"  # dark on viridis' light end
            ax.text(column, row, f"{share:.2f}", ha="center", va="center", color=shade, fontsize=8)
    ax.set(title="Share of seeds that find the marked step", xlabel="lr", ylabel="init scale")
    figure.colorbar(image, ax=ax)


def dynamics_figures(document: dict) -> list[Plot]:
    """The section's figures (section "dynamics" of the report)."""
    return [
        Plot(
            "dynamics_curves.png",
            partial(curves_figure, curves=document["curves"]),
            (11, 3.4),
            "Per-epoch held-out accuracy, marker mass and hit@1: median and 5%-95% band over "
            "the study's seeds, with the lesson's runs",
            "dynamics",
        ),
        Plot(
            "dynamics_emergence.png",
            partial(
                emergence_figure,
                per_seed=document["emergence"]["per_seed"],
                never=document["emergence"]["share_never"],
            ),
            (6, 3.4),
            "The epoch at which each seed's hit@1 settles at or above the threshold",
            "dynamics",
        ),
        Plot(
            "dynamics_phases.png",
            partial(phase_figure, phases=document["phases"]),
            (5.5, 4.5),
            "Phase diagram: which story wins over the learning rate and the init scale",
            "dynamics",
        ),
    ]
