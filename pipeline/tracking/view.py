"""The MLflow UI's saved "gap" view, kept as an experiment tag.

MLflow's UI restores a runs view saved as the experiment tag
mlflow.sharedViewState.<key>: the gap columns, the params that vary between
versions, and seed runs grouped by version (mean line, min-max band in charts).
#/experiments/<id>/runs?viewStateShareKey=gap opens it.
"""

from __future__ import annotations

import json

GAP_VIEW = "gap"
VIEW_TAG = f"mlflow.sharedViewState.{GAP_VIEW}"
GAP_VIEW_STATE = {
    "selectedColumns": [
        f"metrics.`{name}`"
        for name in (
            "gap/seed_gap",
            "gap/seed_gap_sequences",
            "gap/heldout_min",
            "gap/heldout_max",
            "gap/heldout_mean",
        )
    ]
    + ["tags.`version`", "attributes.`Description`"],
    "orderByKey": "attributes.start_time",
    "orderByAsc": True,
    "groupBy": {
        "aggregateFunction": "average",
        "groupByKeys": [{"mode": "tag", "groupByData": "version"}],
    },
    "chartsSearchFilter": "gap/",
    "runsHiddenMode": "SHOW_ALL",
}


def save_view(client, experiment_id: str, tags: dict[str, str] | None) -> None:
    """Save the gap view on the experiment unless it has one (`tags`: the
    experiment's tags, None for a new experiment)."""
    if tags is None or VIEW_TAG not in tags:
        client.set_experiment_tag(experiment_id, VIEW_TAG, json.dumps(GAP_VIEW_STATE))
