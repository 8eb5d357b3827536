"""reports/headline.json: the few numbers `dvc metrics show` and `dvc exp show` list.

The lesson's gap and its per-run numbers flagged `headline` in
pipeline/analysis/registry.py, the study's headline and attention's two
faithfulness scores per run. Every number here is also in the full files
(metrics.json, study/summary.json, faithfulness.json), which `pipeline diff` and
CI compare in full; this file only chooses what a table of experiments shows.
"""

from __future__ import annotations

from pipeline.analysis import registry

# Attention's scores per lesson run: rank agreement with step ablation (faithfulness)
# and the hit rate on the marked step (plausibility).
ATTENTION_NUMBERS = ("tau_loo", "hit_at_1")


def headline(metrics: dict, study: dict, faithfulness: dict, roar: dict | None = None) -> dict:
    """{"lesson": ..., "runs": {seed: ...}, "study": ..., "roar_attention_drop": ...}:
    nested, as DVC shows it. `roar`: reports/roar/metrics.json, whose headline is
    the held-out accuracy drop when each lesson run's attention ranking removes its
    smallest fraction of the steps (docs/field.md)."""
    heldout = study["heldout_accuracy"]
    numbers = {
        "lesson": {
            "seed_gap": metrics["seed_gap"],
            "heldout_accuracy_mean": metrics["heldout_accuracy_mean"],
        },
        "runs": {
            seed: {
                **{key: run[key] for key in registry.headline()},  # the flagged metrics
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
    if roar is not None:
        numbers["roar_attention_drop"] = roar["headline"]["attention_drop"]
    return numbers
