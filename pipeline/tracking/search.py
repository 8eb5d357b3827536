"""Reading the logged states back: parent and child runs as frames."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pipeline.core.errors import TrackingError
from pipeline.tracking.state import STATE_TAG
from pipeline.tracking.store import check_server, store_error, store_errors

if TYPE_CHECKING:
    import pandas as pd


def search_parent_runs(uri: str, experiment: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(parent runs, child runs) of completely logged states, as frames with
    mlflow.search_runs' columns (run_id, start_time, metrics.*, params.*, tags.*).

    Through MlflowClient, not mlflow.search_runs: that one reads the global tracking
    URI, and mlflow.set_tracking_uri also exports MLFLOW_TRACKING_URI to every
    later subprocess (a `dvc repro` started afterwards would log to this store).
    """
    import pandas as pd
    from mlflow.tracking import MlflowClient

    check_server(uri)
    if uri.startswith("sqlite:///") and not Path(uri.removeprefix("sqlite:///")).exists():
        raise TrackingError(
            f"cannot read MLflow store {uri}: no such database "
            "(`dvc repro -sf track` logs the workspace's state to it)"
        )
    try:
        client = MlflowClient(tracking_uri=uri)
        found = client.get_experiment_by_name(experiment)
        runs = [] if found is None else all_runs(client, found.experiment_id)
    except store_errors() as err:
        raise TrackingError(store_error(uri, err, "read")) from err
    frame = pd.DataFrame(
        [
            {
                "run_id": run.info.run_id,
                "status": run.info.status,
                "start_time": run.info.start_time,
                **{f"metrics.{k}": v for k, v in run.data.metrics.items()},
                **{f"params.{k}": v for k, v in run.data.params.items()},
                **{f"tags.{k}": v for k, v in run.data.tags.items()},
            }
            for run in runs
        ]
    )
    if frame.empty or f"tags.{STATE_TAG}" not in frame:
        return frame.iloc[:0], frame.iloc[:0]
    parents = frame[frame[f"tags.{STATE_TAG}"].notna()]
    parent_ids = frame.get("tags.mlflow.parentRunId", pd.Series(index=frame.index, dtype=object))
    children = frame[parent_ids.isin(parents["run_id"])]
    return parents, children


def all_runs(client, experiment_id: str) -> list:
    """Every active run of the experiment, page by page."""
    runs, token = [], None
    while True:
        page = client.search_runs([experiment_id], max_results=1000, page_token=token)
        runs += list(page)
        token = page.token
        if not token:
            return runs
