"""The next lesson's sections of report.md: the grid's tables and a reading generated
from them, and the suppressors' (suppressors_section.py).

Seed 004 closes with two questions: can one weight distribution carry two
patterns, and where does attention get the order of steps from? Each answer
below is read off the cells' numbers (reports/grid/*.json): a mean held-out
accuracy with its 95% multi-bootstrap interval, the share of seeds that solve the
task, the majority baseline, and the hand-set model's accuracy (what the kind can
express at all). Where two of these disagree (a high mean that few seeds reach, a
kind that can express the rule but is rarely trained to), the reading says so.
The faithfulness table asks of each cell's attention weights what the lesson asked:
do they rank the steps as removing them does (tau_loo, faithfulness), and do they
point at the steps that decide the label (hit@1 against the task's rationale,
plausibility)? Where the two disagree, the reading says so.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from pipeline.core import measures
from pipeline.core.measures import ATTENTION, RANDOM, competitors
from pipeline.experiments.grid.suppressors_section import suppressors
from pipeline.reporting import tables
from pipeline.reporting.faithfulness_reading import covers_zero, paired_clause, paired_entry
from pipeline.reporting.summary import interval
from pipeline.tasks import task_module

CAPTIONS = {  # the figures' captions in report.md (figures.py draws)
    "heads_accuracy.png": "Held-out accuracy per seed on the two-patterns task, one row per model",
    "order_accuracy.png": "Held-out accuracy per seed on the order tasks, against shuffled steps",
    "heads_mass_entropy.png": "Per seed and head: marker mass against the weights' entropy",
}


def is_heads_task(task: str) -> bool:
    """Whether the task module puts its cells in the heads section (EXPERIMENT)."""
    return getattr(task_module(task), "EXPERIMENT", "order") == "heads"


def ordered_cells(cells: list[dict]) -> list[dict]:
    """The heads tasks first, then the order tasks (a task module's ORDERED), each in
    its cells' order."""

    def rank(task: str) -> int:
        return (
            0 if is_heads_task(task) else 1 if getattr(task_module(task), "ORDERED", False) else 2
        )

    return sorted(cells, key=lambda c: (rank(c["task"]), c["task"]))


def experiments(cells: list[dict]) -> tuple[list[dict], list[dict]]:
    """The heads experiment's cells and the order experiment's, in `ordered_cells`' order."""
    cells = ordered_cells(cells)
    heads = [c for c in cells if is_heads_task(c["task"])]
    return heads, [c for c in cells if not is_heads_task(c["task"])]


def hand_set(cell: dict) -> str:
    if cell["hand_set_accuracy"] is not None:
        return f"{cell['hand_set_accuracy']:.4f}"
    return "cannot" if not (cell["hand_set_note"] or "").startswith("open") else "open"


def cell_row(cell: dict) -> dict:
    accuracy = cell["heldout_accuracy"]
    row = {
        "task": cell["task"],
        "model": cell["variant"],
        "held-out mean (95% CI)": interval(accuracy),
        "q05 / median / q95": f"{accuracy['q05']:.3f} / {accuracy['median']:.3f} / "
        f"{accuracy['q95']:.3f}",
        "solved": f"{accuracy['share_solved']:.2f}",
        "majority": f"{cell['majority_baseline']:.4f}",
        "hand-set": hand_set(cell),
    }
    if "shuffled" in cell:
        row["shuffled steps"] = interval(cell["shuffled"])
        row["above shuffled"] = interval(cell["above_shuffled"])
    if "heads" in cell:
        heads = cell["heads"]["per_head"]
        row["per head: marker mass, entropy"] = "; ".join(
            f"{h['marker_mass']:.2f}, {h['entropy']:.2f}" for h in heads
        )
        row["divided"] = f"{cell['heads']['share_divided']:.2f}"
    return row


def table(cells: list[dict]) -> str:
    frame = pd.DataFrame([cell_row(cell) for cell in cells]).fillna("-")
    return tables.markdown(frame, index=False, disable_numparse=True)


def find(cells: list[dict], task: str, variant: str) -> dict | None:
    return next((c for c in cells if c["task"] == task and c["variant"] == variant), None)


def overlap(first: dict, second: dict) -> bool:
    return first["ci95_low"] <= second["ci95_high"] and second["ci95_low"] <= first["ci95_high"]


def heads_reading(cells: list[dict]) -> list[str]:
    task = cells[0]["task"] if cells else None
    one, two = find(cells, task, "lesson"), find(cells, task, "multihead2")
    if one is None or two is None:
        return []
    lines = []
    a, b = one["heldout_accuracy"], two["heldout_accuracy"]
    lines.append(
        f"- **Can one weight distribution carry both patterns?** The capacity says yes: a "
        f"hand-set single head reaches {hand_set(one)} held-out through the softmax's "
        f"normalisation alone. Trained, one head reaches {interval(a)} and solves the task "
        f"(held-out >= 0.95) in {a['share_solved']:.0%} of {one['seeds']} seeds; two heads "
        f"{interval(b)}, {b['share_solved']:.0%} of seeds."
    )
    if overlap(a, b):
        lines.append(
            "  The two intervals overlap: at this many seeds the grid does not tell one "
            "head from two on mean accuracy."
        )
    else:
        better = "two heads" if b["mean"] > a["mean"] else "one head"
        lines.append(f"  The intervals do not overlap: {better} is better on mean accuracy.")
    if a["share_solved"] != b["share_solved"] and (a["mean"] > b["mean"]) != (
        a["share_solved"] > b["share_solved"]
    ):
        lines.append(
            "  The mean and the share of solved seeds disagree on which is better: the "
            "answer depends on the metric."
        )
    lines.append(
        f"  It depends on the seed: one head's seeds range from {a['q05']:.3f} to "
        f"{a['q95']:.3f} (q05-q95), two heads' from {b['q05']:.3f} to {b['q95']:.3f}."
    )
    divided = [
        f"with {cell['variant']}, {cell['heads']['share_divided']:.0%} of seeds"
        for cell in cells
        if "heads" in cell
    ]
    if divided:
        shares = "; ".join(divided)
        lines.append(
            f"- **Does a second head divide the work?** {shares[0].upper()}{shares[1:]} have "
            "one head focused on the marker (marker mass >= 0.5) and another spread out "
            "(entropy >= 0.75 of log T)."
        )
    return lines


def order_reading(cells: list[dict]) -> list[str]:
    lines = []
    for cell in cells:
        if cell["variant"] != "lesson" or "shuffled" not in cell:
            continue
        accuracy, task = cell["heldout_accuracy"], cell["task"]
        lead = accuracy["mean"] - cell["majority_baseline"]
        ordered = cell["above_shuffled"]
        holds_zero = ordered["ci95_low"] <= 0 <= ordered["ci95_high"]
        if lead < 0.005:
            source = "it is no better than predicting the majority class"
        elif holds_zero:
            source = (
                "what it has above the baseline comes from the set of readings, not from "
                "where they sit"
            )
        else:
            source = "that much owes to the order of the steps"
        lines.append(
            f"- **{task}, without positional encoding:** held-out {interval(accuracy)}, "
            f"{lead:+.4f} against the majority baseline {cell['majority_baseline']:.4f}, and "
            f"{interval(ordered)} above the shuffled-steps control"
            f"{' (the interval holds 0)' if holds_zero else ''}: {source}."
        )
        for other in cells:
            if other["task"] != task or other is cell:
                continue
            gap = other.get("gap_to_hand_set")
            expressible = other["hand_set_accuracy"] is not None
            note = (
                f"it can express the rule (hand-set {hand_set(other)}), trained it falls "
                f"{gap:.4f} short"
                if expressible
                else "no hand-set model solves the rule"
            )
            lines.append(
                f"  {other['variant']}: {interval(other['heldout_accuracy'])}, "
                f"{other['heldout_accuracy']['share_solved']:.0%} of seeds solve it; {note}."
            )
    return lines


def above(first: dict, second: dict) -> bool:
    """first's interval lies wholly above second's."""
    return first["ci95_low"] > second["ci95_high"]


def faithfulness_row(cell: dict) -> dict:
    battery = cell["faithfulness"]
    explainers = battery["explainers"]
    attention = explainers[ATTENTION]
    tau, hit = (measures.SCORES[key].label for key in ("tau_loo", "hit_at_1"))
    row = {
        "task": cell["task"],
        "model": cell["variant"],
        "seeds": str(battery["seeds"]),
        f"attention {tau}": interval(attention["tau_loo"]),
        f"random {tau}": f"{explainers[RANDOM]['tau_loo']['mean']:.4f}",
    }
    best = max(
        competitors(list(explainers), "tau_loo"),
        key=lambda name: explainers[name]["tau_loo"]["mean"],
    )
    row[f"best {tau}"] = f"{best} {explainers[best]['tau_loo']['mean']:.4f}"
    if "hit_at_1" in attention:  # only the metrics that apply to the task are there
        row[f"attention {hit}"] = interval(attention["hit_at_1"])
        row[f"random {hit}"] = f"{explainers[RANDOM]['hit_at_1']['mean']:.4f}"
    else:
        row[f"attention {hit}"] = "does not apply"
        row[f"random {hit}"] = "-"
    return row


def faithfulness_table(cells: list[dict]) -> str:
    rows = [faithfulness_row(cell) for cell in cells if "faithfulness" in cell]
    return tables.markdown(pd.DataFrame(rows), index=False, disable_numparse=True) if rows else ""


def faithfulness_reading(cells: list[dict]) -> list[str]:
    """Per cell: is attention faithful (tau_loo above random's), plausible (hit@1
    above random's), and do the two agree."""
    lines = []
    for cell in cells:
        if "faithfulness" not in cell:
            continue
        explainers = cell["faithfulness"]["explainers"]
        attention, chance = explainers[ATTENTION], explainers[RANDOM]
        faithful = above(attention["tau_loo"], chance["tau_loo"])
        name = f"{cell['task']} / {cell['variant']}"
        verdict = (
            "rank the steps as removing them does, better than random (tau_loo)"
            if faithful
            else "rank the steps no better than random against removing them (tau_loo)"
        )
        line = f"- **{name}:** the weights {verdict}"
        if "hit_at_1" in attention:
            plausible = above(attention["hit_at_1"], chance["hit_at_1"])
            line += (
                f"; they {'do' if plausible else 'do not'} point at the steps that decide "
                "the label more often than random (hit@1)"
            )
            if plausible != faithful:
                line += ". The two metrics disagree: " + (
                    "the weights point at the rationale, but removing steps does not "
                    "follow them (plausible, not faithful)"
                    if plausible
                    else "the weights follow what removing steps does, but not the "
                    "steps that decide the label (faithful, not plausible)"
                )
        else:
            line += "; hit@1 does not apply (the rationale is every step)"
        lines.append(line + ".")
    return lines


def beyond_the_weights(cells: list[dict]) -> list[str]:
    """Per cell with a layer or several heads: the explainers that read the weights
    through the layer (rollout, flow) or per head, each against attention, paired on
    the same seeds and examples, on hit@1 where it applies and on tau_loo."""
    higher = measures.higher_is_better()
    lines = []
    for cell in cells:
        battery = cell.get("faithfulness")
        if battery is None:
            continue
        rows = [
            row
            for row in battery["explainers"]
            if row != RANDOM and measures.EXPLAINERS[measures.explainer_of(row)].applies != "every"
        ]
        if not rows:
            continue
        clauses = [
            f"on {metric}, {paired_clause(row, ATTENTION, entry, higher[metric])}"
            for metric in ("hit_at_1", "tau_loo")
            if metric in battery["paired"]
            for row in rows
            for entry in [paired_entry(battery["paired"][metric], row, ATTENTION)]
        ]
        if clauses:
            lines.append(f"- **{cell['task']} / {cell['variant']}:** " + "; ".join(clauses) + ".")
    if not lines:
        return []
    return [
        "Beyond the raw weights (Abnar & Zuidema's attention rollout and flow through the "
        "window layer, and the heads one at a time or at their largest), each against "
        "attention, paired on the same seeds and held-out sequences:",
        *lines,
    ]


def sanity_table(cells: list[dict]) -> str:
    """Per cell, each explainer's Spearman with its trained explanation once every
    parameter group is re-drawn (the sanity checks' full cascade); * where its 95%
    interval covers 0, chance: the explainer passes."""
    rows = []
    for cell in cells:
        checks = cell.get("faithfulness", {}).get("sanity")
        if checks is None:
            continue
        cascade = checks["tests"]["cascading"]
        every = cascade[list(cascade)[-1]]
        row = {"task": cell["task"], "variant": cell["variant"]}
        for name, entries in every.items():
            entry = entries["spearman"]
            row[name] = f"{entry['mean']:.2f}{'*' if covers_zero(entry) else ''}"
        rows.append(row)
    # The declared explainers in the registry's order, random last; per-head rows aside.
    shown = [name for name in [*measures.EXPLAINERS, RANDOM] if any(name in row for row in rows)]
    frame = pd.DataFrame(rows).reindex(columns=["task", "variant", *shown])
    # Spaced names, so that the twelve columns can wrap to the page.
    frame = frame.rename(columns=lambda name: name.replace("_", " "))
    return tables.markdown(frame.fillna("-"), index=False, disable_numparse=True)


def next_lesson_section(cells: list[dict], images: list[str]) -> str:
    """report.md's section: `images` are paths relative to report.md."""
    heads, order = experiments(cells)
    cells = heads + order
    seeds = sorted({c["seeds"] for c in cells})
    battery_seeds = sorted({c["faithfulness"]["seeds"] for c in cells if "faithfulness" in c})
    lines = [
        "## The next lesson: a second head, and the order of steps",
        "",
        f"Every cell: seeds 1..{', '.join(map(str, seeds))} on the lesson's sequences and "
        "settings, labelled by the task's rule (docs/next_lesson.md has the rules). Held-out "
        "mean with its 95% multi-bootstrap interval (seeds and examples resampled); "
        "solved: share of seeds with held-out >= 0.95; hand-set: the accuracy of a model "
        "set by hand (pipeline/analysis/capacity.py), 'cannot' where the kind cannot "
        "express the rule.",
        "",
        "### Heads: the two-patterns task",
        "",
        table(heads),
        "",
        *heads_reading(heads),
        "",
        "### Order: absolute and relative position",
        "",
        table(order),
        "",
        *order_reading(order),
        "",
        "### Do the weights explain the cells' models?",
        "",
        f"The faithfulness battery on each cell's first "
        f"{', '.join(map(str, battery_seeds))} seeds (grid.faithfulness_seeds), mean over "
        "seeds with a 95% bootstrap interval. tau with leave-one-out (tau_loo): Kendall tau "
        "between a score and the "
        "effect of removing each step (faithfulness, against the model); hit@1: the top "
        "step is one that decides the label (plausibility, against the task's rationale: "
        "the marked step; for rise, it and the step before; for two_patterns every step, "
        "where hit@1 is always 1 and does not apply). best: the explainer with the "
        "highest mean, leave-one-out itself aside. reports/grid/<cell>.json has every "
        "explainer and metric.",
        "",
        faithfulness_table(cells),
        "",
        *faithfulness_reading(cells),
        "",
        *beyond_the_weights(cells),
        "",
        "The sanity checks (Adebayo et al. 2018; docs/faithfulness.md) on the same seeds: "
        "each explainer's Spearman with its own scores once every parameter group of the "
        "cell's model is re-drawn from its init, output side first; 1 is unchanged, * marks "
        "an interval that covers 0, chance (a pass). report.md's faithfulness section reads "
        "the lesson's step by step.",
        "",
        sanity_table(cells),
        "",
        *[f"![{CAPTIONS.get(Path(image).name, Path(image).stem)}]({image})\n" for image in images],
        "",
    ]
    return "\n".join(lines)


def next_lesson(results: dict) -> str:
    """The section "The next lesson" from the cells and the next_lesson stage's figures."""
    return next_lesson_section(results["cells"], results["images"]).strip()


def headline(results: dict) -> dict:
    """None: headline.json holds the lesson's numbers and the field's tests'."""
    return {}


# report.md's sections of this experiment: (place among the experiments', section).
SECTIONS = [(10, next_lesson), (60, suppressors)]
