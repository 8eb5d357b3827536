"""reports/headline.json: the few numbers `dvc metrics show` and `dvc exp show` list.

The lesson's gap and per-run numbers, the study's headline and attention's two
faithfulness scores per run. Every number here is also in the full files
(metrics.json, study/summary.json, faithfulness.json), which `pipeline.diff` and
CI compare in full; this file only chooses what a table of experiments shows.
"""

from __future__ import annotations

# Per lesson run: (metrics.json key, headline key).
RUN_NUMBERS = {
    "heldout_accuracy": "heldout_accuracy",
    "train_accuracy": "train_accuracy",
    "marker_mass": "marker_mass",
    "weight_effect_agreement": "agreement",
    "high_weight_low_effect": "high_weight_low_effect",
}
# Attention's scores per lesson run: rank agreement with step ablation (faithfulness)
# and the hit rate on the marked step (plausibility).
ATTENTION_NUMBERS = ("tau_loo", "hit_at_1")


def headline(metrics: dict, study: dict, faithfulness: dict) -> dict:
    """{"lesson": ..., "runs": {seed: ...}, "study": ...}: nested, as DVC shows it."""
    heldout = study["heldout_accuracy"]
    return {
        "lesson": {
            "seed_gap": metrics["seed_gap"],
            "heldout_accuracy_mean": metrics["heldout_accuracy_mean"],
        },
        "runs": {
            seed: {
                **{short: run[key] for key, short in RUN_NUMBERS.items()},
                **{
                    f"attention_{name}": faithfulness["runs"][seed]["attention"][name]
                    for name in ATTENTION_NUMBERS
                },
            }
            for seed, run in metrics["runs"].items()
        },
        "study": {
            "seeds": study["seeds"],
            "heldout_accuracy_mean": heldout["mean"],
            "heldout_accuracy_ci95_low": heldout["ci95_low"],
            "heldout_accuracy_ci95_high": heldout["ci95_high"],
            "share_pairs_at_least_gap": study["pair_gap"]["p_at_least_observed"],
        },
    }
