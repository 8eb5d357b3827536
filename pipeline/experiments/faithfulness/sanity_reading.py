"""A plain-language reading of the randomisation sanity checks (Adebayo et al. 2018),
generated from pipeline/analysis/sanity.py's summary."""

from __future__ import annotations

from pipeline.core.measures import RANDOM
from pipeline.reporting.faithfulness_reading import covers_zero

UNCHANGED = 1.0 - 1e-12  # a Spearman at 1 up to its 8 written decimals: the same ranking


def spearman_clause(entry: dict) -> str:
    return f"{entry['mean']:.4f} [{entry['ci95_low']:.4f}, {entry['ci95_high']:.4f}]"


def sanity_reading(sanity: dict) -> list[str]:
    """Which explainers pass the randomisation checks (their similarity after the whole
    cascade falls to chance: its interval covers 0) and which fail, each with the
    steps that leave its scores unchanged and its similarity under permuted labels
    (pipeline/analysis/sanity.py's summary)."""
    tests = sanity["tests"]
    cascade, independent = tests["cascading"], tests["independent"]
    labels = next(iter(tests["labels"].values()))
    steps = list(cascade)
    every = cascade[steps[-1]]

    def spearman(step: dict, row: str) -> dict:
        return step[row]["spearman"]

    rows = sorted(
        (row for row in every if row != RANDOM), key=lambda row: spearman(every, row)["mean"]
    )
    lines = [
        f"Sanity checks (Adebayo et al. 2018) on the first {sanity['seeds']} study runs: the "
        "Spearman correlation of each explainer's step scores with its scores for the same "
        "run with parameters re-drawn from their init, from the output side inwards "
        f"({', '.join(steps)}), mean [95% multi-bootstrap interval]; 1 is an unchanged "
        "ranking, 0 chance. An explainer passes when it falls to chance once every group is "
        "re-drawn (its interval covers 0):",
    ]
    for row in rows:
        entry = spearman(every, row)
        verdict = "passes" if covers_zero(entry) else "fails"
        unchanged = [step for step in steps if spearman(cascade[step], row)["mean"] >= UNCHANGED]
        kept = (
            f"; unchanged (exactly 1) while {' and '.join(unchanged)} are re-drawn"
            if unchanged
            else ""
        )
        weakest = min(independent, key=lambda step: spearman(independent[step], row)["mean"])
        spread = f"runs' 5% to 95%: {entry['q05']:.4f} to {entry['q95']:.4f}"
        lines.append(
            f"- `{row}` {verdict}: {spearman_clause(entry)} with everything re-drawn "
            f"({spread}){kept}; "
            f"alone, re-drawing {weakest} moves it most "
            f"({spearman(independent[weakest], row)['mean']:.4f}); trained on permuted "
            f"labels, {spearman(labels, row)['mean']:.4f}."
        )
    lines.append(
        f"- The random baseline sits at {spearman_clause(spearman(every, RANDOM))}, chance. "
        f"The models trained on permuted labels reach {sanity['label_heldout_accuracy']:.4f} "
        "held-out accuracy on the true labels, against "
        f"{sanity['heldout_majority_share']:.4f} for always answering the majority class."
    )
    return lines
