"""The MLflow UI's saved "gap" view, kept as an experiment tag.

MLflow's UI restores a runs view saved as the experiment tag
mlflow.sharedViewState.<key>: the gap columns, the descriptions, and seed runs
grouped by version (mean line, min-max band in charts); its charts are the gap
twice, gap/seed_gap (bars labelled at 2 decimals) and gap/sequences.
#/experiments/<id>/runs?viewStateShareKey=gap opens it, and the Views menu lists
it: the menu shows only tags in its saved-view envelope (name, createdAt, the
state as a JSON string); the link opens the envelope and a bare state alike.
"""

from __future__ import annotations

import json

GAP_VIEW = "gap"
VIEW_TAG = f"mlflow.sharedViewState.{GAP_VIEW}"
GAP_VIEW_STATE = {
    "selectedColumns": [f"metrics.`{name}`" for name in ("gap/seed_gap", "gap/sequences")]
    + ["attributes.`Description`"],
    # Completely logged runs only: a run that an interrupted log left (KILLED) never
    # counts in the gap.
    "searchFilter": "attributes.status = 'FINISHED'",
    "orderByKey": "attributes.start_time",
    "orderByAsc": True,
    "groupBy": {
        "aggregateFunction": "average",
        "groupByKeys": [{"mode": "tag", "groupByData": "version"}],
    },
    # The UI's chart search matches a substring: gap/seed_gap and gap/sequences, not
    # the held-out accuracies (gap/heldout_*).
    "chartsSearchFilter": "gap/se",
    "runsHiddenMode": "SHOW_ALL",
}
VIEW_VALUE = json.dumps(
    {"name": GAP_VIEW, "createdAt": 0, "updatedAt": 0, "state": json.dumps(GAP_VIEW_STATE)}
)


def save_view(client, experiment_id: str, tags: dict[str, str] | None) -> None:
    """Save the gap view on the experiment unless it has this one (`tags`: the
    experiment's tags, None for a new experiment): an older store's gets replaced."""
    if tags is None or tags.get(VIEW_TAG) != VIEW_VALUE:
        client.set_experiment_tag(experiment_id, VIEW_TAG, VIEW_VALUE)


def save_gap_view(uri: str, experiment_id: str) -> None:
    """Write the current gap view onto the experiment: a store logged before the view
    was listed in the Views menu, or before it charted gap/sequences, gets
    it without a new run."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    save_view(client, experiment_id, client.get_experiment(experiment_id).tags)
