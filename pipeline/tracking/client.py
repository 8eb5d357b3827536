"""What every logger does through MLflow's client: the experiment, finding a
logged state, one run with its params, metrics and dataset, completing a run.

mlflow is imported inside the functions: the track stage's no-op check imports
this package without it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pipeline.tracking.state import STATE_TAG
from pipeline.tracking.store import artifact_location, check_artifact_location
from pipeline.tracking.view import save_view

PENDING_TAG = "pipeline_pending_state"  # a run's state until `complete` adds STATE_TAG

if TYPE_CHECKING:
    import pandas as pd

BATCH = 1000  # MLflow's limit of metrics per log_batch call


def metric_batches(
    values: dict[str, float],
    curves: pd.DataFrame | None = None,
    steps: dict[str, list[tuple[int, float]]] | None = None,
):
    """MLflow Metrics in batches: `values` at step 0, the training curves and each
    experiment's step metrics (`steps`: key -> (step, value) points) at their steps."""
    from mlflow.entities import Metric

    now = int(time.time() * 1000)
    metrics = [Metric(key, float(value), now, 0) for key, value in values.items()]
    if curves is not None:
        for column in ("loss", "accuracy"):
            metrics += [
                Metric(f"train/{column}", float(value), now, int(step))
                for step, value in zip(curves["epoch"], curves[column], strict=True)
            ]
    for key, points in (steps or {}).items():
        metrics += [Metric(key, float(value), now, int(step)) for step, value in points]
    for start in range(0, len(metrics), BATCH):
        yield metrics[start : start + BATCH]


def experiment(client, uri: str, name: str) -> str:
    """The id of experiment `name`, created (with the gap view) when missing."""
    from mlflow.exceptions import MlflowException

    found = client.get_experiment_by_name(name)
    if found is None:
        # A server keeps artifacts where it was told to (its artifact root), a local
        # store beside itself.
        remote = uri.startswith(("http://", "https://"))
        try:
            experiment_id = client.create_experiment(
                name, artifact_location=None if remote else artifact_location(uri)
            )
        except MlflowException:  # another worker of the sweep created it first
            found = client.get_experiment_by_name(name)
            if found is None:
                raise
            experiment_id = found.experiment_id
    else:
        experiment_id = found.experiment_id
    if found is not None:  # before anything is logged into a folder not its own
        check_artifact_location(uri, found.artifact_location)
    save_view(client, experiment_id, None if found is None else found.tags)
    return experiment_id


def find_state(client, experiment_id: str, digest: str) -> str | None:
    """The active run that carries state `digest`, through MLflow's search."""
    runs = client.search_runs(
        [experiment_id], filter_string=f"tags.{STATE_TAG} = '{digest}'", max_results=1
    )
    return runs[0].info.run_id if runs else None


def start_state(client, experiment_id: str, digest: str) -> dict[str, str]:
    """Before logging state `digest`: the runs an interrupted log of the same state left
    RUNNING (kill -9, a full disk under the store) are closed as KILLED, in one line.
    Returns the tag that marks the new runs as this state's: only `complete` adds the
    state tag, so history, compare and the gap view never count a partial run."""
    abandoned = client.search_runs(
        [experiment_id],
        filter_string=f"tags.{PENDING_TAG} = '{digest}' and attributes.status = 'RUNNING'",
        max_results=1000,
    )
    for run in abandoned:
        client.set_terminated(run.info.run_id, "KILLED")
    if abandoned:
        print(
            f"closed {len(abandoned)} run(s) that an interrupted log of this state left "
            "RUNNING, as KILLED"
        )
    return {PENDING_TAG: digest}


def source_tags(source: str) -> dict[str, str]:
    """Creator and source as mlflow.start_run would set them."""
    from mlflow.tracking.context.registry import resolve_tags

    # MlflowClient.create_run does not resolve these itself; the source's name
    # would be the path of a DVC temporary copy for queued experiments.
    return resolve_tags({"mlflow.source.name": source})


def log_run(
    client,
    experiment_id: str,
    name: str,
    tags: dict,
    params: dict,
    values: dict,
    curves: pd.DataFrame | None = None,
    dataset=None,
    steps: dict[str, list[tuple[int, float]]] | None = None,
) -> str:
    from mlflow.entities import Param

    run = client.create_run(experiment_id, run_name=name, tags=tags)
    run_id = run.info.run_id
    param_list = [Param(k, v[:6000]) for k, v in params.items()]
    for start in range(0, len(param_list), 100):
        client.log_batch(run_id, params=param_list[start : start + 100])
    for batch in metric_batches(values, curves, steps):
        client.log_batch(run_id, metrics=batch)
    if dataset is not None:
        client.log_inputs(run_id, datasets=[dataset])
    return run_id


def complete(client, run: str, digest: str, log_rest) -> None:
    """log_rest(), then the state tag: a failure marks the run FAILED, and since only
    a complete run carries the state, a failed attempt is retried."""
    try:
        log_rest()
    except BaseException:
        client.set_terminated(run, "FAILED")
        raise
    client.set_tag(run, STATE_TAG, digest)
    client.set_terminated(run)


@dataclass(frozen=True)
class NewRun:
    """A run `log_once` logs: its name, tags, params and numbers, and `rest`, what goes
    in before the run is complete (child runs, artifacts), given the client, the run
    id and the run's tags (the pending-state tag included)."""

    name: str
    tags: dict[str, str]
    params: dict[str, str]
    values: dict[str, float]
    dataset: object = None
    rest: Callable[[object, str, dict[str, str]], None] = lambda client, run, tags: None


def log_once(
    uri: str,
    experiment_name: str,
    digest: str,
    new_run: Callable[[object, str], NewRun],
    logged: Callable[[object, str], None] | None = None,
) -> tuple[str, bool]:
    """Log state `digest` once in the experiment: (run id, newly logged).

    Where a complete run already carries the state, `logged(client, run)` (if given)
    and that run. Otherwise the runs an interrupted log of the state left are closed
    (`start_state`), `new_run(client, experiment id)` is logged, then its `rest`;
    only then does the run carry the state (`complete`). The caller holds the store's
    lock (`store.locked`)."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    experiment_id = experiment(client, uri, experiment_name)
    existing = find_state(client, experiment_id, digest)
    if existing:
        if logged is not None:
            logged(client, existing)
        return existing, False
    run = new_run(client, experiment_id)
    tags = {**start_state(client, experiment_id, digest), **run.tags}
    run_id = log_run(
        client, experiment_id, run.name, tags, run.params, run.values, dataset=run.dataset
    )
    complete(client, run_id, digest, lambda: run.rest(client, run_id, tags))
    return run_id, True
