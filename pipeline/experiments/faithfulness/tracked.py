"""The battery's numbers in MLflow: over the study on the parent run
(faithfulness/study/, faithfulness/sanity/), each lesson run's on its child
(faithfulness/, faithfulness/robustness/)."""

from __future__ import annotations

from pipeline.tracking.state import nested_metrics, sanity_metrics

# Its outputs logged as the parent run's artifacts (paths. keys); the study's under study/.
ARTIFACTS = ("faithfulness", "study_faithfulness")


def parent_metrics(results: dict) -> dict[str, float]:
    summary = results["study"]
    values = nested_metrics(summary["explainers"], "faithfulness/study/")
    if "sanity" in summary:
        values.update(sanity_metrics(summary["sanity"], "faithfulness/sanity/"))
    return values


def run_metrics(results: dict, seed: str) -> dict[str, float]:
    document = results["runs"]
    return {
        **nested_metrics(document["runs"].get(seed, {}), "faithfulness/"),
        **nested_metrics(document["robustness"].get(seed, {}), "faithfulness/robustness/"),
    }
