"""MLflow tracking: one parent run per pipeline state, one child run per seed.

The only module that imports mlflow. A pipeline state (config, metrics, data and
model hashes) is logged once: its digest is a tag, and a state already in the
store is not logged again. An inter-process file lock serialises store
creation, experiment creation and logging, so parallel `dvc exp` runs on a
fresh SQLite store neither race on the schema nor lose a run.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import time
from contextlib import closing
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING

import yaml
from filelock import FileLock, Timeout

from pipeline.config import PROJECT_ROOT, Config, TrackingConfig, to_container
from pipeline.errors import TrackingError

if TYPE_CHECKING:  # pandas loads on use: the track stage's no-op check needs none
    import pandas as pd

STATE_TAG = "pipeline_state"
# The config groups that shape a number; paths and tracking settings do not.
NUMBER_GROUPS = ("data", "model", "train", "eval", "study", "faithfulness")
SOURCE_PATHS = ("pipeline", "conf", "dvc.yaml", "pyproject.toml")
LOCK_TIMEOUT_S = 120
BATCH = 1000  # MLflow's limit of metrics per log_batch call


def store_root() -> Path:
    """The project root, also when DVC runs an experiment in a temporary copy."""
    return Path(os.environ.get("DVC_ROOT") or PROJECT_ROOT)


def store_uri(cfg: TrackingConfig) -> str:
    return cfg.uri or f"sqlite:///{store_root() / 'mlflow.db'}"


def artifact_location() -> str:
    return (store_root() / "mlartifacts").as_uri()


def lock_path(uri: str) -> Path:
    """A lock file beside a SQLite store, else in the project root."""
    if uri.startswith("sqlite:///"):
        return Path(uri.removeprefix("sqlite:///") + ".lock")
    return store_root() / f".mlflow-{hashlib.sha256(uri.encode()).hexdigest()[:12]}.lock"


@dataclass
class PipelineState:
    """Everything one parent run records, read from the pipeline's outputs."""

    cfg: Config
    metrics: dict
    curves: pd.DataFrame  # epoch, seed, loss, accuracy
    tags: dict[str, str]
    artifacts: list[Path] = field(default_factory=list)
    study: dict | None = None  # the seed study's summary.json
    faithfulness: dict | None = None  # faithfulness.json: per run, explainer and metric
    study_faithfulness: dict | None = None  # the battery over the study's runs

    @property
    def digest(self) -> str:
        battery = {"runs": self.faithfulness, "study": self.study_faithfulness}
        return state_digest(self.cfg, self.metrics, self.tags, self.study, battery)


def state_digest(
    cfg: Config,
    metrics: dict,
    hashes: dict[str, str],
    study: dict | None = None,
    faithfulness: dict | None = None,
) -> str:
    """What identifies a state: the number-shaping config, the metrics, the study
    summary, the faithfulness battery, and the dvc.lock hashes of data and models
    (`lock_hashes`)."""
    config = to_container(cfg)
    content = {
        "config": {group: config[group] for group in NUMBER_GROUPS},
        "metrics": metrics,
        "study": study,
        "faithfulness": faithfulness,
        "data": hashes.get("dvc.data_md5"),
        "models": hashes.get("dvc.models_md5"),
    }
    return hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()


def logged_run(uri: str, experiment: str, digest: str) -> str | None:
    """The parent run that holds `digest`, read straight from a SQLite store without
    importing mlflow (the track stage runs on every `dvc repro`, so this check is
    its no-op path). None when the store, the experiment or the state is missing,
    or the store cannot be read this way: then `log_state` decides."""
    if not uri.startswith("sqlite:///"):
        return None
    path = Path(uri.removeprefix("sqlite:///"))
    if not path.is_file():
        return None
    query = (
        "SELECT runs.run_uuid FROM runs"
        " JOIN experiments ON experiments.experiment_id = runs.experiment_id"
        " JOIN tags ON tags.run_uuid = runs.run_uuid"
        " WHERE experiments.name = ? AND runs.lifecycle_stage = 'active'"
        " AND tags.key = ? AND tags.value = ? LIMIT 1"
    )
    try:
        with closing(sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, timeout=5)) as db:
            row = db.execute(query, (experiment, STATE_TAG, digest)).fetchone()
    except sqlite3.Error:
        return None
    return row[0] if row else None


def flatten(tree: dict, prefix: str = "") -> dict[str, str]:
    flat: dict[str, str] = {}
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(flatten(value, f"{name}."))
        else:
            flat[name] = json.dumps(value) if isinstance(value, list) else str(value)
    return flat


def git_tags(root: Path) -> dict[str, str]:
    def git(*args: str) -> str:
        result = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)
        return result.stdout.strip() if result.returncode == 0 else ""

    commit = git("rev-parse", "HEAD")
    # Code and config only: DVC rewrites params.yaml, dvc.lock and the outputs
    # before this stage runs, so they would mark every run dirty.
    dirty = bool(git("status", "--porcelain", "--untracked-files=no", "--", *SOURCE_PATHS))
    return {"mlflow.source.git.commit": commit, "git.commit": commit, "git.dirty": str(dirty)}


def lock_hashes(lock_file: Path, cfg: Config) -> dict[str, str]:
    """md5 of the data and the models as recorded in dvc.lock."""
    if not lock_file.exists():
        return {}
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml: ~10x faster
    stages = yaml.load(lock_file.read_text(), Loader=loader).get("stages", {})  # noqa: S506
    wanted = {"dvc.data_md5": cfg.paths.sequences, "dvc.models_md5": cfg.paths.parameters}
    found = {}
    for tag, path in wanted.items():
        for stage in stages.values():
            for out in stage.get("outs", []):
                if out.get("path") == path:
                    found[tag] = out.get("md5", "")
    return found


def environment_tags(device: str) -> dict[str, str]:
    tags = {"torch_version": version("torch"), "device": device}
    for env, tag in (("DVC_EXP_NAME", "dvc.exp_name"), ("DVC_EXP_BASELINE_REV", "dvc.baseline")):
        if os.environ.get(env):
            tags[tag] = os.environ[env]
    return tags


def version_label(tags: dict[str, str]) -> str:
    """What a history row is called: the DVC experiment, else the commit."""
    if tags.get("dvc.exp_name"):
        return tags["dvc.exp_name"]
    commit = tags.get("git.commit", "")[:7] or "no-git"
    return commit + ("-dirty" if tags.get("git.dirty") == "True" else "")


def _metric_batches(values: dict[str, float], curves: pd.DataFrame | None = None):
    from mlflow.entities import Metric

    now = int(time.time() * 1000)
    metrics = [Metric(key, float(value), now, 0) for key, value in values.items()]
    if curves is not None:
        for column in ("loss", "accuracy"):
            metrics += [
                Metric(f"train_{column}_curve", float(value), now, int(step))
                for step, value in zip(curves["epoch"], curves[column], strict=True)
            ]
    for start in range(0, len(metrics), BATCH):
        yield metrics[start : start + BATCH]


def _experiment_id(client, name: str) -> str:
    experiment = client.get_experiment_by_name(name)
    if experiment is not None:
        return experiment.experiment_id
    return client.create_experiment(name, artifact_location=artifact_location())


def _find_state(client, experiment_id: str, digest: str) -> str | None:
    runs = client.search_runs(
        [experiment_id], filter_string=f"tags.{STATE_TAG} = '{digest}'", max_results=1
    )
    return runs[0].info.run_id if runs else None


def _log_run(
    client,
    experiment_id: str,
    name: str,
    tags: dict,
    params: dict,
    values: dict,
    curves: pd.DataFrame | None = None,
) -> str:
    from mlflow.entities import Param

    run = client.create_run(experiment_id, run_name=name, tags=tags)
    run_id = run.info.run_id
    param_list = [Param(k, v[:6000]) for k, v in params.items()]
    for start in range(0, len(param_list), 100):
        client.log_batch(run_id, params=param_list[start : start + 100])
    for batch in _metric_batches(values, curves):
        client.log_batch(run_id, metrics=batch)
    return run_id


def log_state(state: PipelineState) -> tuple[str, bool]:
    """Log `state` unless the store has it. Returns (parent run id, newly logged)."""
    uri = store_uri(state.cfg.tracking)
    try:
        with FileLock(str(lock_path(uri)), timeout=LOCK_TIMEOUT_S):
            return _log_locked(uri, state)
    except Timeout:
        raise TrackingError(
            f"MLflow store {uri} is locked by another process (waited {LOCK_TIMEOUT_S} s)"
        ) from None
    except store_errors() as err:
        raise TrackingError(f"cannot write MLflow store {uri}: {first_line(err)}") from err


def store_errors() -> tuple[type[BaseException], ...]:
    """What a store that cannot be reached, created or written raises."""
    from mlflow.exceptions import MlflowException
    from sqlalchemy.exc import SQLAlchemyError

    return (MlflowException, SQLAlchemyError, sqlite3.Error, OSError)


def first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


def _log_locked(uri: str, state: PipelineState) -> tuple[str, bool]:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    experiment_id = _experiment_id(client, state.cfg.tracking.experiment)
    digest = state.digest
    existing = _find_state(client, experiment_id, digest)
    if existing:
        return existing, False

    document = state.metrics
    params = flatten(to_container(state.cfg))
    cross_seed = {k: v for k, v in document.items() if k not in ("data", "runs")}
    parent_values = {**{f"data.{k}": v for k, v in document["data"].items()}, **cross_seed}
    if state.study is not None:  # no child run per study seed: 1000 would swamp the UI
        parent_values.update(nested_metrics(state.study, "study/"))
    if state.study_faithfulness is not None:
        explainers = state.study_faithfulness["explainers"]
        parent_values.update(nested_metrics(explainers, "faithfulness/study/"))
    name = version_label(state.tags)
    parent = _log_run(client, experiment_id, name, state.tags, params, parent_values)
    try:
        _log_children_and_artifacts(client, experiment_id, parent, state)
    except BaseException:
        client.set_terminated(parent, "FAILED")
        raise
    # Last: only a complete run carries the state, so a failed attempt is retried.
    client.set_tag(parent, STATE_TAG, digest)
    client.set_terminated(parent)
    return parent, True


def nested_metrics(document: dict, prefix: str) -> dict[str, float]:
    """A JSON tree flattened to metric names, e.g. study/heldout_accuracy/mean."""
    values: dict[str, float] = {}
    for key, value in document.items():
        if isinstance(value, dict):
            values.update(nested_metrics(value, f"{prefix}{key}/"))
        else:
            values[f"{prefix}{key}"] = float(value)
    return values


def _log_children_and_artifacts(client, experiment_id: str, parent: str, state) -> None:
    battery = (state.faithfulness or {}).get("runs", {})
    for seed, numbers in state.metrics["runs"].items():
        child_tags = {"mlflow.parentRunId": parent, "seed": seed, **state.tags}
        numbers = {**numbers, **nested_metrics(battery.get(seed, {}), "faithfulness/")}
        child = _log_run(
            client,
            experiment_id,
            f"seed {seed}",
            child_tags,
            {"seed": seed},
            numbers,
            state.curves[state.curves["seed"] == int(seed)],
        )
        client.set_terminated(child)
    for path in state.artifacts:
        if path.is_dir():
            client.log_artifacts(parent, str(path), artifact_path=path.name)
        elif path.exists():
            # The study's files under study/: its faithfulness.json is not the lesson's.
            folder = "study" if path.parent.name == "study" else None
            client.log_artifact(parent, str(path), artifact_path=folder)


def search_parent_runs(uri: str, experiment: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(parent runs, child runs) of completely logged states, as mlflow.search_runs frames."""
    import mlflow

    if uri.startswith("sqlite:///") and not Path(uri.removeprefix("sqlite:///")).exists():
        raise TrackingError(f"cannot read MLflow store {uri}: no such database")
    mlflow.set_tracking_uri(uri)
    try:
        runs = mlflow.search_runs(experiment_names=[experiment], output_format="pandas")
    except store_errors() as err:
        raise TrackingError(f"cannot read MLflow store {uri}: {first_line(err)}") from err
    if runs.empty or f"tags.{STATE_TAG}" not in runs:
        return runs.iloc[:0], runs.iloc[:0]
    parents = runs[runs[f"tags.{STATE_TAG}"].notna()]
    children = runs[runs["tags.mlflow.parentRunId"].isin(parents["run_id"])]
    return parents, children
