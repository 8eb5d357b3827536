"""reports/headline.json: the few numbers `dvc metrics show` and `dvc exp show` list.

The lesson's gap and its per-run numbers flagged `headline` in
pipeline/core/measures.py with each experiment's numbers of that run (attention's
two faithfulness scores), and each experiment's own entries (the seed study's among
them). Every number here is also in the full files (metrics.json, study/summary.json,
faithfulness.json), which `pipeline diff`
and CI compare in full; this file only chooses what a table of experiments shows.
"""

from __future__ import annotations

from pipeline.core import measures
from pipeline.core.kinds import experiment_part


def headline(metrics: dict, experiments: dict[str, dict | None]) -> dict:
    """{"lesson": ..., "runs": {seed: ...}, and each experiment's entries where its
    stage ran (its section module's `headline`)}: nested, as DVC shows it. A run's
    entries are its flagged metrics, then each experiment's numbers of that run (its
    section module's `run_headline`, where it has one)."""
    ran = {name: results for name, results in experiments.items() if results is not None}
    sections = {name: experiment_part(name, "section") for name in ran}
    entries = {}
    for name, results in ran.items():
        entries.update(sections[name].headline(results))

    def run_entries(seed: str) -> dict:
        values = {}
        for name, results in ran.items():
            if hasattr(sections[name], "run_headline"):
                values.update(sections[name].run_headline(results, seed))
        return values

    return {
        "lesson": {
            "seed_gap": metrics["seed_gap"],
            "heldout_accuracy_mean": metrics["heldout_accuracy_mean"],
        },
        "runs": {
            seed: {
                **{key: run[key] for key in measures.headline()},  # the flagged metrics
                **run_entries(seed),
            }
            for seed, run in metrics["runs"].items()
        },
        **entries,
    }
