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


def headline_numbers(abstraction: dict) -> dict[str, float | None]:
    """The abstraction stage's mean IIA per condition (trained, random) and map, over
    the stable runs: a run whose IIA a nudge of the map's start moves (a chaotic fit,
    docs/field.md) does not decide a headline; left out where no run is stable."""
    return {
        f"iia_{condition}_{name}": entry["stable"][f"iia_{name}"]
        for condition, entry in abstraction["conditions"].items()
        for name in ("linear", "nonlinear")
        if entry["stable"][f"iia_{name}"] is not None
    }


def field_headline(erasure: dict) -> dict:
    """The erasure stage's headline numbers (reports/erasure/metrics.json), study means:
    `erasure` (the top-weight step's flips against a random other step's), `flip`
    (attention's and the random ranking's share of steps erased at the first flip) and
    `agreement` (r between a pair's agreement and both explainers missing the rationale)."""
    study = erasure["study"]
    single, flips = study["erasure"]["attention"], study["flip"]
    return {
        "erasure": {key: single[key]["mean"] for key in ("top_flip", "other_flip")},
        "flip": {
            f"{row}_removed": flips[row]["removed"]["mean"] for row in ("attention", "random")
        },
        "agreement": {
            "r_pairwise_rank_both_wrong": study["disagreement"]["pairs"][
                "r_pairwise_rank_both_wrong"
            ]["mean"]
        },
    }


def headline(
    metrics: dict,
    study: dict,
    faithfulness: dict,
    erasure: dict | None = None,
    abstraction: dict | None = None,
    roar: dict | None = None,
) -> dict:
    """{"lesson": ..., "runs": {seed: ...}, "study": ..., and the field's tests where
    given (docs/field.md): the erasure stage's `field_headline`, the abstraction
    stage's mean IIA per condition and map (`abstraction.iia_*`), and remove and
    retrain's held-out accuracy drop when each lesson run's attention ranking removes
    its smallest fraction of the steps (`roar_attention_drop`)}: nested, as DVC shows it."""
    heldout = study["heldout_accuracy"]
    field = {} if erasure is None else field_headline(erasure)
    if abstraction is not None:
        field["abstraction"] = headline_numbers(abstraction)
    if roar is not None:
        field["roar_attention_drop"] = roar["headline"]["attention_drop"]
    return {
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
        **field,
    }
