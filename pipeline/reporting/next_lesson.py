"""The next lesson's report: the grid's tables and a reading generated from them.

Seed 004 closes with two questions: can one weight distribution carry two
patterns, and where does attention get the order of steps from? Each answer
below is read off the cells' numbers (reports/grid/*.json): a mean held-out
accuracy with its 95% multi-bootstrap interval, the share of seeds that solve the
task, the majority baseline, and the hand-set model's accuracy (what the kind can
express at all). Where two of these disagree (a high mean that few seeds reach, a
kind that can express the rule but is rarely trained to), the reading says so.
"""

from __future__ import annotations

import pandas as pd

HEADS_TASK = "two_patterns"


def interval(summary: dict) -> str:
    return f"{summary['mean']:.4f} ({summary['ci95_low']:.4f}-{summary['ci95_high']:.4f})"


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
    return frame.to_markdown(index=False, disable_numparse=True)


def find(cells: list[dict], task: str, variant: str) -> dict | None:
    return next((c for c in cells if c["task"] == task and c["variant"] == variant), None)


def overlap(first: dict, second: dict) -> bool:
    return first["ci95_low"] <= second["ci95_high"] and second["ci95_low"] <= first["ci95_high"]


def heads_reading(cells: list[dict]) -> list[str]:
    one, two = find(cells, HEADS_TASK, "lesson"), find(cells, HEADS_TASK, "multihead2")
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
    for cell in cells:
        if "heads" in cell:
            lines.append(
                f"- **Does a second head divide the work?** With {cell['variant']}, "
                f"{cell['heads']['share_divided']:.0%} of seeds have one head focused on the "
                f"marker (marker mass >= 0.5) and another spread out (entropy >= 0.75 of "
                f"log T)."
            )
    return lines


def order_reading(cells: list[dict]) -> list[str]:
    lines = []
    for cell in cells:
        if cell["variant"] != "lesson" or "shuffled" not in cell:
            continue
        accuracy, task = cell["heldout_accuracy"], cell["task"]
        above = accuracy["mean"] - cell["majority_baseline"]
        ordered = cell["above_shuffled"]
        holds_zero = ordered["ci95_low"] <= 0 <= ordered["ci95_high"]
        if above < 0.005:
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
            f"{above:+.4f} against the majority baseline {cell['majority_baseline']:.4f}, and "
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


def next_lesson_markdown(cells: list[dict], images: list[str]) -> str:
    heads = [c for c in cells if c["task"] == HEADS_TASK]
    order = [c for c in cells if c["task"] != HEADS_TASK]
    seeds = sorted({c["seeds"] for c in cells})
    lines = [
        "# The next lesson: a second head, and the order of steps",
        "",
        f"Every cell: seeds 1..{', '.join(map(str, seeds))} on the lesson's sequences and "
        "settings, labelled by the task's rule (docs/next_lesson.md has the rules). Held-out "
        "mean with its 95% multi-bootstrap interval (seeds and examples resampled); "
        "solved: share of seeds with held-out >= 0.95; hand-set: the accuracy of a model "
        "set by hand (pipeline/analysis/capacity.py), 'cannot' where the kind cannot "
        "express the rule.",
        "",
        "## Heads: the two-patterns task",
        "",
        table(heads),
        "",
        *heads_reading(heads),
        "",
        "## Order: absolute and relative position",
        "",
        table(order),
        "",
        *order_reading(order),
        "",
        *[f"![{name}]({name})" for name in images],
        "",
    ]
    return "\n".join(lines)
