"""report.md's section on suppressor variables: each explainer's attribution on the
suppressor of the grid's cells whose task declares one (pipeline/tasks/suppressor.py),
for the trained runs and the hand-set model that uses the suppressor by construction.

No torch: numbers in, Markdown out.
"""

from __future__ import annotations

import pandas as pd

from pipeline.reporting import tables
from pipeline.reporting.summary import interval

MODELS = {"trained": "trained runs", "hand_set": "hand-set model"}


def shares_table(shares: dict) -> pd.DataFrame:
    rows = [
        {
            "explainer": row,
            "on the suppressor": interval(parts["suppressor"]),
            "on the rationale": interval(parts["rationale"]),
            "elsewhere": interval(parts["other"]),
            "top step is the suppressor": f"{parts['top_is_suppressor']['mean']:.4f}",
        }
        for row, parts in shares.items()
    ]
    return pd.DataFrame(rows)


def reading(cell: dict) -> str:
    """What the shares say against the known answer: the suppressor is not in the
    rationale, yet a model that cancels the noise with it must be explained by it."""
    lines = []
    trained, hand = cell["suppressors"]["trained"], cell["suppressors"].get("hand_set")
    accuracy = cell["heldout_accuracy"]["mean"]
    loo = trained.get("loo", {}).get("suppressor", {}).get("mean")
    lines.append(
        f"- The trained runs reach {accuracy:.4f} held-out (the hand-set model "
        f"{cell['hand_set_accuracy']:.4f}, the majority {cell['majority_baseline']:.4f})"
        + (
            f"; dropping step 0 carries {loo:.4f} of their leave-one-out effect mass "
            "(an even spread would give 1/T)."
            if loo is not None
            else "."
        )
    )
    if hand is not None:
        high = [row for row, parts in hand.items() if parts["suppressor"]["mean"] >= 0.25]
        low = [row for row, parts in hand.items() if parts["suppressor"]["mean"] < 0.25]
        lines.append(
            "- The hand-set model subtracts step 0's reading exactly, so a faithful "
            "explanation of it must show step 0, although the true rationale (the marked "
            f"step) excludes it. Explainers with at least a quarter of their mass on the "
            f"suppressor: {', '.join(high) or 'none'}; below: {', '.join(low) or 'none'}. "
            "Scored against the rationale, the first look wrong and the second right; against "
            "the model, whose logit moves with r'_m - r'_0 and so as much with step 0 as with "
            "the marked step, the second under-report it (XAI-TRIS's point, Clark et al. 2023)."
        )
    return "\n".join(lines)


def suppressor_section(cells: list[dict]) -> str:
    """The section "Suppressor variables", one part per cell that has the numbers."""
    cells = [cell for cell in cells if "suppressors" in cell]
    if not cells:
        return ""
    parts = [
        "## Suppressor variables: attribution on a step that carries no label information",
        "The suppressor task adds one offset to every reading of a sequence and shows it "
        "alone at the calibration step 0; the label is the lesson's, on the true reading, "
        "so step 0 is independent of the label (a suppressor, Haufe et al. 2014; XAI-TRIS, "
        "Clark et al. 2023) but cancels the offset. Shares of each explainer's |attribution| "
        "per example, means over runs and held-out sequences with 95% multi-bootstrap "
        "intervals (docs/field.md).",
    ]
    for cell in cells:
        parts.append(f"### {cell['task']} x {cell['variant']}")
        for key, label in MODELS.items():
            if key in cell["suppressors"]:
                table = shares_table(cell["suppressors"][key])
                parts += [f"{label}:", tables.markdown(table, index=False, disable_numparse=True)]
        parts.append(reading(cell))
    return "\n\n".join(parts)


def suppressors(results: dict) -> str:
    """The section "Suppressor variables": the cells on a task with a suppressor channel
    ("" where none has one)."""
    return suppressor_section(results["cells"])
