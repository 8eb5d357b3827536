"""The section "The attention debate" of report.md, from the debate's cells
(reports/debate/<task>-<variant>.json, pipeline/experiments/debate/cell.py): a table per
paper's test and a reading generated from the numbers."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from pipeline.config.cells import cell_label
from pipeline.reporting import tables

LN2 = math.log(2)  # the largest JSD in natural log
CLOSE_TVD = 0.05  # a model-consistent adversary that keeps its outputs this close
CAPTIONS = {  # the debate_figures stage's PNGs (experiments/debate/figures.py)
    "adversary_jsd.png": "the exact adversary's largest JSD against the largest weight",
    "permuted_change.png": "the output's change under permuted weights against the largest weight",
    "deception.png": "deceptive attention: accuracy and the rationale's weight against lam",
    "consistent_adversary.png": "the model-consistent adversary against the seeds' cloud",
}


def spread(summary: dict) -> str:
    """A per-seed number over seeds: its median and the 5-95% range of the seeds."""
    return f"{summary['median']:.4f} [{summary['q05']:.4f}, {summary['q95']:.4f}]"


def mean_interval(summary: dict) -> str:
    """A per-seed number's mean over seeds with its 95% bootstrap interval."""
    low, high = summary["mean_interval"]
    return f"{summary['mean']:.4f} [{low:.4f}, {high:.4f}]"


def name(cell: dict) -> str:
    return cell_label(cell["task"], cell["variant"])


def diverged(row: dict) -> str:
    """The seeds a trained setting left out, diverged: "none" where none did."""
    return ", ".join(map(str, row["diverged_seeds"])) or "none"


def setting_table(
    cells: list[dict], key: str, columns: Callable[[dict, dict], dict[str, str]]
) -> pd.DataFrame:
    """A table of one row per setting a test ran each cell at (the entries of the
    cell's list `key`: an eps, a lam), in order: the cell's name, then
    `columns(cell, entry)`."""
    return pd.DataFrame(
        [{"cell": name(cell), **columns(cell, row)} for cell in cells for row in cell[key]]
    )


def adversary_table(cells: list[dict]) -> pd.DataFrame:
    return setting_table(
        cells,
        "adversary",
        lambda cell, row: {
            "eps": f"{row['eps']:g}",
            "median max JSD": spread(row["median_max_jsd"]),
            "share JSD >= 0.5": spread(row["share_far"]),
            "adversary's weight on the rationale": spread(row["adversary_rationale_weight"]),
            "model's weight on the rationale": spread(cell["learned_rationale_weight"]),
        },
    )


def permutation_table(cells: list[dict]) -> pd.DataFrame:
    rows = []
    for cell in cells:
        bins = cell["permutation"]["binned"]
        row = {
            "cell": name(cell),
            "median abs dp": spread(cell["permutation"]["median_output_change"]),
        }
        for part in bins:
            low, high = part["largest_weight"]
            change = part["median"]
            row[f"largest weight {low:.1f}-{high:.1f}"] = (
                "-" if change is None else f"{change:.4f} (n={part['pairs']})"
            )
        rows.append(row)
    return pd.DataFrame(rows)


def seed_variance_table(cells: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "cell": name(cell),
                "pairs": str(cell["seed_variance"]["pairs"]),
                "JSD between seeds": spread(cell["seed_variance"]["jsd"]),
                "TVD between seeds": spread(cell["seed_variance"]["tvd"]),
            }
            for cell in cells
        ]
    )


def fixed_table(cells: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "cell": name(cell),
                **{
                    f"{kind} attention": mean_interval(cell["fixed_attention"][kind])
                    for kind in ("learned", "uniform", "frozen")
                },
            }
            for cell in cells
        ]
    )


def consistent_table(cells: list[dict]) -> pd.DataFrame:
    return setting_table(
        cells,
        "consistent_adversary",
        lambda _, row: {
            "lam": f"{row['penalty']:g}",
            "TVD to the base": mean_interval(row["tvd"]),
            "JSD to the base": mean_interval(row["jsd"]),
            "held-out accuracy": mean_interval(row["heldout_accuracy"]),
            "diverged (left out)": diverged(row),
        },
    )


def consistent_reading(cell: dict, per_example_jsd: float) -> str:
    """What the model-consistent adversary says beside the per-example one: how far a
    model of the kind moves its attention while its outputs stay close."""
    rows = cell["consistent_adversary"]
    close = [row for row in rows if row["tvd"]["mean"] <= CLOSE_TVD]
    if not close:
        return (
            f"No model-consistent adversary kept its outputs within a mean TVD of "
            f"{CLOSE_TVD:g} of the base's (Wiegreffe & Pinter)"
        )
    best = max(close, key=lambda row: row["jsd"]["mean"])
    reached = best["jsd"]["mean"]
    verdict = (
        "the weights a trained model can have are far more constrained than the "
        "per-example adversary's"
        if reached < per_example_jsd / 2
        else "a trained model can move its attention about as far as the per-example adversary"
    )
    return (
        f"Kept within a mean TVD of {CLOSE_TVD:g} of the base's outputs, a model of the "
        f"same kind moves its attention by a mean JSD of at most {reached:.4f} (lam "
        f"{best['penalty']:g}; Wiegreffe & Pinter), against the per-example adversary's "
        f"{per_example_jsd:.4f}: {verdict}"
    )


def deception_table(cells: list[dict]) -> pd.DataFrame:
    return setting_table(
        cells,
        "deception",
        lambda _, row: {
            "lam": f"{row['penalty']:g}",
            "held-out accuracy": mean_interval(row["heldout_accuracy"]),
            "weight on the rationale": mean_interval(row["rationale_weight"]),
            **{
                f"hit@1 {explainer}": f"{numbers['mean']:.4f}"
                for explainer, numbers in row["hit_at_1"].items()
            },
            "diverged (left out)": diverged(row),
        },
    )


def cell_reading(cell: dict) -> str:
    """What each test says on one cell, against the known rationale."""
    adversary = cell["adversary"][0]
    far = adversary["median_max_jsd"]["median"]
    seeds = cell["seed_variance"]["jsd"]
    fixed = cell["fixed_attention"]
    strongest = cell["deception"][-1]
    hidden = strongest["rationale_weight"]["mean"]
    kept = strongest["heldout_accuracy"]["mean"]
    uniform = fixed["uniform"]["mean"]
    on_rationale = (
        "the model's weight sits on it"
        if cell["learned_rationale_weight"]["median"] >= 0.5
        else "the model's weight is mostly elsewhere"
    )
    frozen, learned = fixed["frozen"]["mean"], fixed["learned"]["mean"]
    carried = (
        "the weights carry what the task needs"
        if frozen >= learned - 0.02
        else "the weights alone do not carry what the model reads"
    )
    found = strongest["hit_at_1"]
    others = {key: numbers["mean"] for key, numbers in found.items() if key != "attention"}
    listed = ", ".join(f"{key} {value:.4f}" for key, value in others.items())
    hiding = (
        f"at lam {strongest['penalty']:g} the weight on the rationale falls to {hidden:.4f} "
        f"and held-out accuracy to {kept:.4f}"
    )
    if learned <= uniform + 0.05:
        hiding += ": the learned weights barely beat uniform ones, so there was little to hide"
    elif kept <= uniform + 0.02:
        hiding += (
            f", about what uniform attention reaches ({uniform:.4f}): this model cannot hide "
            "the rationale from its attention and still use it"
        )
    else:
        hiding += (
            f", above uniform attention's {uniform:.4f}: the model hides the rationale from "
            "its attention and still reads it"
        )
    if max(others.values(), default=0.0) >= 0.5:
        hiding += f". The other explainers still find it there (hit@1: {listed})"
    else:
        hiding += f". Nor do the other explainers find it there (hit@1: {listed})"
    learned_note = (
        f" Uniform pooling does about as well as the learned weights here ({uniform:.4f} "
        f"against {learned:.4f} held out): the output hardly hinges on where the pooling's "
        "weight goes, so the tests below read weights the model barely needs."
        if learned <= uniform + 0.05
        else ""
    )
    return (
        f"- **{name(cell)}** ({cell['seeds']} seeds; {cell['trained_seeds']} per setting "
        f"that trains).{learned_note} The exact adversary (eps {adversary['eps']:g}) "
        f"reaches a median JSD of {far:.4f} (ln 2 = {LN2:.4f} is the most), moving the "
        f"weight on the rationale from {cell['learned_rationale_weight']['median']:.4f} to "
        f"{adversary['adversary_rationale_weight']['median']:.4f}, where two seeds' weights "
        f"differ by a median JSD of {seeds['median']:.4f} (95% of pairs of weights "
        f"below {seeds['q95']:.4f}). By Jain & Wallace's test the weights would not explain the "
        f"output; yet the rationale is known, and {on_rationale}. "
        f"Frozen into a model without attention, the learned weights give held-out accuracy "
        f"{frozen:.4f}, against {learned:.4f} learned and {uniform:.4f} uniform: {carried} "
        f"(Wiegreffe & Pinter). {consistent_reading(cell, far)}. "
        f"Deceptive training (Pruthi et al.): {hiding}."
    )


def table(frame: pd.DataFrame) -> str:
    """A table of text cells, one row per cell of the debate (and eps or lam)."""
    return tables.markdown(frame.set_index("cell"), stralign="right", disable_numparse=True)


def debate_section(cells: list[dict], images: list[str] | None = None) -> str:
    """The section from the debate's cells, in the config's order, and the figures at
    `images` (paths as report.md links them)."""

    lines = [
        "## The attention debate",
        "",
        "Each paper's test of attention as explanation, on runs trained as the grid's "
        "are, on tasks where the steps that decide each label are known "
        "(docs/debate.md). Spreads are the median over seeds [5%, 95% of seeds] (seed "
        "variance: over pairs of seeds and examples); means carry a 95% bootstrap "
        "interval over seeds.",
        "",
        "Adversarial attention, solved exactly (Jain & Wallace 2019): the distribution "
        "furthest in JSD whose output stays within eps.",
        "",
        table(adversary_table(cells)),
        "",
        "Permuted attention (Jain & Wallace 2019): the median change of the output under "
        "random orders of an example's weights, by the example's largest weight.",
        "",
        table(permutation_table(cells)),
        "",
        "Seed variance (Wiegreffe & Pinter 2019): the background for an adversary.",
        "",
        table(seed_variance_table(cells)),
        "",
        "Uniform and frozen attention (Wiegreffe & Pinter 2019): held-out accuracy with "
        "the pooling weights fixed.",
        "",
        table(fixed_table(cells)),
        "",
        "A model-consistent adversary (Wiegreffe & Pinter 2019): a model of the same kind, "
        "started near each base run (debate.consistent_start of the way to its init) and "
        "trained on mean TVD to its outputs minus lam times mean JSD to its weights; "
        "held-out distances to the base.",
        "",
        table(consistent_table(cells)),
        "",
        "Deceptive attention (Pruthi et al. 2020): a penalty lam on the weight of the "
        "rationale; hit@1: the mean share of held-out sequences whose top step by each "
        "explainer is in the rationale.",
        "",
        table(deception_table(cells)),
        "",
        "What the tests say here:",
        "",
        *[cell_reading(cell) for cell in cells],
        "",
        *[
            f"![{CAPTIONS.get(Path(image).name, Path(image).stem)}]({image})\n"
            for image in images or []
        ],
    ]
    return "\n".join(lines)


def attention_debate(results: dict) -> str:
    """The section from the cells and the debate_figures stage's figures."""
    return debate_section(results["cells"], results["images"]).strip()


def headline(results: dict) -> dict:
    """None: headline.json holds the lesson's numbers and the field's tests'."""
    return {}


# report.md's sections of this experiment: (place among the experiments', section).
SECTIONS = [(20, attention_debate)]
