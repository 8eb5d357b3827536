"""reports/headline.json: the few numbers `dvc metrics show` and `dvc exp show` list.

The lesson's gap and its per-run numbers flagged `headline` in
pipeline/core/measures.py, attention's two faithfulness scores per run and each
experiment's own entries (the seed study's among them). Every number here is also in the
full files (metrics.json, study/summary.json, faithfulness.json), which `pipeline diff`
and CI compare in full; this file only chooses what a table of experiments shows.
"""

from __future__ import annotations

from pipeline.core import measures
from pipeline.core.kinds import experiment_part

# Attention's scores per lesson run: rank agreement with step ablation (faithfulness)
# and the hit rate on the marked step (plausibility).
ATTENTION_NUMBERS = ("tau_loo", "hit_at_1")


def headline(metrics: dict, faithfulness: dict, experiments: dict[str, dict | None]) -> dict:
    """{"lesson": ..., "runs": {seed: ...}, and each experiment's entries where its
    stage ran (its section module's `headline`)}: nested, as DVC shows it."""
    entries = {}
    for name, document in experiments.items():
        if document is not None:
            entries.update(experiment_part(name, "section").headline(document))
    return {
        "lesson": {
            "seed_gap": metrics["seed_gap"],
            "heldout_accuracy_mean": metrics["heldout_accuracy_mean"],
        },
        "runs": {
            seed: {
                **{key: run[key] for key in measures.headline()},  # the flagged metrics
                **{
                    f"attention_{name}": faithfulness["runs"][seed]["attention"][name]
                    for name in ATTENTION_NUMBERS
                },
            }
            for seed, run in metrics["runs"].items()
        },
        **entries,
    }
