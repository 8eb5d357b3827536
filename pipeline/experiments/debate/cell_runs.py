"""The debate's cells in MLflow (the debate_figures stage): one parent run per cell in
`<tracking.experiment>-debate`, its numbers under debate/ (each test's summaries)."""

from __future__ import annotations

from pipeline.experiments.debate.config import TRACKING_SUFFIX
from pipeline.tracking.cell_runs import CellRuns
from pipeline.tracking.state import nested_metrics


def debate_metrics(document: dict) -> dict[str, float]:
    """A debate cell's summaries as debate/... metrics, each eps and lam by its value;
    not every seed's numbers nor the binned tables."""
    adversary_keys = ("median_max_jsd", "share_far", "adversary_rationale_weight")
    numbers = {
        "learned_rationale_weight": document["learned_rationale_weight"],
        "adversary": {
            f"eps_{row['eps']:g}": {key: row[key] for key in adversary_keys}
            for row in document["adversary"]
        },
        "permutation": {
            key: document["permutation"][key] for key in ("median_output_change", "share_peaked")
        },
        "seed_variance": {
            key: value
            for key, value in document["seed_variance"].items()
            if not key.startswith("per_pair_")  # every pair's: the figure's, not MLflow's
        },
        "consistent_adversary": {
            f"lam_{row['penalty']:g}": {key: row[key] for key in ("tvd", "jsd", "heldout_accuracy")}
            for row in document["consistent_adversary"]
        },
        "fixed_attention": document["fixed_attention"],
        "deception": {
            f"lam_{row['penalty']:g}": {
                "heldout_accuracy": row["heldout_accuracy"],
                "rationale_weight": row["rationale_weight"],
                "hit_at_1": row["hit_at_1"],
                "diverged": len(row["diverged_seeds"]),
            }
            for row in document["deception"]
        },
    }
    return nested_metrics(numbers, "debate/")


def debate_note(name: str, document: dict) -> str:
    first = document["adversary"][0]
    return (
        f"{name}: the exact adversary at eps {first['eps']:g} reaches a median JSD of "
        f"{first['median_max_jsd']['median']:.4f} over {document['seeds']} seeds"
    )


RUNS = CellRuns(
    TRACKING_SUFFIX,
    debate_metrics,
    debate_note,
    "python -m pipeline.experiments.debate.debate_figures",
)
