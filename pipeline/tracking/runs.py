"""Logging a pipeline state: one parent run per state, one child run per seed.

Metric names are namespaced so that MLflow's chart view groups them: `gap/`
(the run-to-run gap, on the parent), `data/` (the data checks), `model/` and each
experiment's (its tracked.py: `study/`, `faithfulness/study/`, ...) on the parent;
`lesson/` (docs/lesson.md, section 4), each experiment's (`faithfulness/`, ...) and
the curves `train/loss`, `train/accuracy` on each seed's run. reports/metrics.json
keeps its own keys: only the MLflow names differ.
"""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Callable
from pathlib import Path

from pipeline.config import PARAMS_FILE, Config
from pipeline.core.kinds import EXPERIMENTS, experiment_part
from pipeline.tracking import record
from pipeline.tracking.client import NewRun, log_once, log_run, source_tags
from pipeline.tracking.state import (
    GAP_DECIMALS,
    MODELS_TAG,
    STATE_TAG,
    PipelineState,
    baseline_config,
    changed_params,
    nested_metrics,
    number_params,
    version_label,
)
from pipeline.tracking.store import locked, store_root, store_uri

# metrics.json's cross-seed keys -> MLflow names; heldout_min/max come from the runs.
GAP_METRICS = {
    "seed_gap": "gap/seed_gap",
    "heldout_accuracy_mean": "gap/heldout_mean",
    "heldout_accuracy_std": "gap/heldout_std",
}
MODEL_METRICS = {"parameters": "model/parameters"}


# Logs each seed's model and returns its local files: registered.log_models, which the
# track stage passes in (the other loggers import no model code through this package).
ModelLogger = Callable[..., list[Path]]


def log_state(state: PipelineState, models: ModelLogger | None = None) -> tuple[str, bool]:
    """Log `state` unless the store has it, with each seed's model through `models`
    when given. Returns (parent run id, newly logged)."""
    uri = store_uri(state.cfg.tracking)
    return locked(uri, lambda: _log_locked(uri, state, models))


def parent_metrics(state: PipelineState) -> dict[str, float]:
    """The parent run's numbers: gap/, data/, model/ and each experiment's."""
    document = state.metrics
    heldout = [run["heldout_accuracy"] for run in document["runs"].values()]
    values = {name: document[key] for key, name in GAP_METRICS.items() if key in document}
    values["gap/heldout_min"], values["gap/heldout_max"] = min(heldout), max(heldout)
    values = {name: round(value, GAP_DECIMALS) for name, value in values.items()}
    if "seed_gap" in document:
        # The UI's chart labels round to 2 decimals (0.1056 and 0.1111 both read 0.11):
        # the gap as a count of held-out sequences (19 against 20) tells them apart.
        sequences = document["seed_gap"] * state.cfg.data.split[2]
        values["gap/sequences"] = round(sequences)
    values.update(nested_metrics(document["data"], "data/"))
    for key, value in document.items():
        if key not in ("data", "runs", *GAP_METRICS):
            values.update(nested_metrics({MODEL_METRICS.get(key, f"lesson/{key}"): value}, ""))
    for name, document in state.experiments.items():  # each experiment's own (tracked.py)
        if document is not None:
            values.update(experiment_part(name, "tracked").parent_metrics(document))
    return values


def experiment_metrics(documents: dict[str, dict | None], seed: str) -> dict[str, float]:
    """Each experiment's numbers of one lesson run (its tracked.py's `run_metrics`)."""
    values: dict[str, float] = {}
    for name, document in documents.items():
        if document is not None:
            values.update(experiment_part(name, "tracked").run_metrics(document, seed))
    return values


def experiment_steps(documents: dict[str, dict | None], seed: str) -> dict:
    """Each experiment's step metrics of one lesson run (its tracked.py's optional
    `run_steps`: key -> (step, value) points, a chart in the UI)."""
    points: dict[str, list[tuple[int, float]]] = {}
    for name, document in documents.items():
        steps = getattr(experiment_part(name, "tracked"), "run_steps", None)
        if document is not None and steps is not None:
            points.update(steps(document, seed))
    return points


def description(cfg: Config, values: dict[str, float], baseline: Config, label: str) -> str:
    """One line for mlflow.note.content: what changed, and the gap (`values`: the
    parent's metrics)."""
    changes = changed_params(cfg, baseline)
    changed = ", ".join(f"{key} {old}\u2192{new}" for key, (old, new) in changes.items())
    gap = (
        f"gap {values['gap/seed_gap']:.4f} (held-out "
        f"{values['gap/heldout_min']:.4f}\u2013{values['gap/heldout_max']:.4f})"
    )
    return f"{changed or 'no change against ' + label}; {gap}"


def run_tags(state: PipelineState) -> dict[str, str]:
    """Creator and source as mlflow.start_run would set them, and the pipeline's tags."""
    return {**source_tags(state.source), **state.tags}


def dataset_input(state: PipelineState):
    """The sequences as an MLflow dataset, its path as source. The digest is the md5
    of the file's bytes, as DVC records it, whoever logs: the DVC pipeline and the
    Hydra app (which writes no file) name the same data alike."""
    if state.sequences is None:
        return None
    import mlflow.data
    from mlflow.entities import Dataset, DatasetInput, InputTag

    from pipeline.core.files import parquet_bytes

    path = state.cfg.paths.sequences
    digest = hashlib.md5(parquet_bytes(state.sequences)).hexdigest()
    with warnings.catch_warnings():
        # Two registered sources claim a local path (the same class), and integer
        # columns draw a hint about missing values: neither applies here.
        warnings.filterwarnings("ignore", message="The specified dataset source")
        warnings.filterwarnings("ignore", message="Hint: Inferred schema contains integer")
        dataset = mlflow.data.from_pandas(
            state.sequences, source=path, name=Path(path).stem, digest=digest
        )
        described = dataset.to_dict()  # name, digest, source, source type, schema, profile
    entity = Dataset(
        name=described["name"],
        digest=described["digest"],
        source_type=described["source_type"],
        source=described["source"],
        schema=described.get("schema"),
        profile=described.get("profile"),
    )
    return DatasetInput(entity, tags=[InputTag("mlflow.data.context", "training")])


def _log_locked(uri: str, state: PipelineState, log_models: ModelLogger | None) -> tuple[str, bool]:
    models: list[Path] = []

    def logged(client, run: str) -> None:
        files = local_artifacts(client, run, state)
        if missing_artifacts(client, run, state, files):
            _log_artifacts(client, run, state)
            print(f"the artifacts of run {run} were gone: logged them again")
        parent = client.get_run(run)
        children = client.search_runs(
            [parent.info.experiment_id], filter_string=f"tags.mlflow.parentRunId = '{run}'"
        )
        seeds = {child.data.tags["seed"]: child.info.run_id for child in children}
        model_files = _log_models(log_models, client, uri, state, seeds, run, parent.data.tags)
        _remember_run(uri, state, run, files, model_files)

    def new_run(client, experiment_id: str) -> NewRun:
        name = version_label(state.tags)
        baseline, label = baseline_config(store_root())
        values = parent_metrics(state)
        tags = {
            **run_tags(state),
            "version": name,
            "mlflow.note.content": description(state.cfg, values, baseline, label),
        }
        dataset = dataset_input(state)
        # A run without an experiment's results (python -m pipeline.run) has no such
        # params.
        skipped = tuple(f"{name}." for name in EXPERIMENTS if state.experiments.get(name) is None)
        params = {k: v for k, v in number_params(state.cfg).items() if not k.startswith(skipped)}

        def rest(client, parent: str, parent_tags: dict[str, str]) -> None:
            children = _log_children_and_artifacts(
                client, experiment_id, parent, state, parent_tags, dataset
            )
            models.extend(
                _log_models(log_models, client, uri, state, children, parent, parent_tags)
            )

        return NewRun(name, tags, params, values, dataset, rest)

    parent, new = log_once(uri, state.cfg.tracking.experiment, state.digest, new_run, logged)
    if new:
        from mlflow.tracking import MlflowClient

        files = local_artifacts(MlflowClient(uri), parent, state)
        _remember_run(uri, state, parent, files, models)
    return parent, new


def _log_models(
    log_models: ModelLogger | None,
    client,
    uri: str,
    state: PipelineState,
    children: dict[str, str],
    parent: str,
    tags: dict,
) -> list[Path]:
    """Each seed's model through `log_models`, where the state has the trained
    parameters; returns the models' local files."""
    if log_models is None or state.parameters is None or state.sequences is None:
        return []
    version_tags = {"version": tags["version"], STATE_TAG: state.digest}
    if tags.get(MODELS_TAG):  # the models' md5 in dvc.lock: their aliases' names
        version_tags[MODELS_TAG] = tags[MODELS_TAG]
    return log_models(
        client, uri, state.cfg, state.parameters, state.sequences, children, parent, version_tags
    )


def artifact_names(state: PipelineState) -> list[str]:
    """The paths, relative to the run's artifact root, of every file `_log_artifacts`
    logs."""
    names = []
    for path in state.artifacts:
        if path.is_dir():
            names += [
                f"{path.name}/{p.relative_to(path).as_posix()}"
                for p in path.rglob("*")
                if p.is_file()
            ]
        elif path.exists():
            names.append(f"study/{path.name}" if path.parent.name == "study" else path.name)
    if state.report_html is not None:
        names.append("report.html")
    if state.params_yaml is not None:
        names.append(PARAMS_FILE)
    return names


def local_artifacts(client, run: str, state: PipelineState) -> list[Path] | None:
    """The files of a run's artifacts in a local artifact store; None for a remote one."""
    from urllib.parse import urlparse

    location = urlparse(client.get_run(run).info.artifact_uri)
    if location.scheme not in ("", "file"):
        return None
    root = Path(location.path)
    return [root / name for name in artifact_names(state)]


def missing_artifacts(client, run: str, state: PipelineState, files: list[Path] | None) -> bool:
    """Whether any artifact of a logged run is gone (`rm -rf mlartifacts`); `files`:
    its `local_artifacts`."""
    if files is not None:
        return not all(path.is_file() for path in files)
    listed = {item.path for item in client.list_artifacts(run)}
    return not {name.split("/")[0] for name in artifact_names(state)} <= listed


def _remember_run(
    uri: str, state: PipelineState, run: str, files: list[Path] | None, models: list[Path]
) -> None:
    """The store's record of `run`, its artifact files and its models' included
    (`record.logged_run`)."""
    paths = [str(f) for f in [*(files or []), *models]]
    # The models' files were checked against their registered digests just now.
    digests = {str(f.parent): record.tree_digest(f.parent) for f in models}
    record.remember(uri, state.cfg.tracking.experiment, state.digest, run, paths, digests)


def _log_children_and_artifacts(
    client, experiment_id: str, parent: str, state, parent_tags: dict, dataset
) -> dict[str, str]:
    """A run per lesson seed, named `<version> / seed <k>` and tagged with the version
    and the params that differ from the defaults, so the UI can group by version.
    Returns {seed: run id}."""
    children = {}
    version = parent_tags["version"]
    differing = {key: new for key, (_, new) in changed_params(state.cfg, Config()).items()}
    inherited = {k: v for k, v in parent_tags.items() if k != "mlflow.note.content"}
    for seed, numbers in state.metrics["runs"].items():
        child_tags = {
            **inherited,
            **differing,
            "mlflow.parentRunId": parent,
            "seed": seed,
            "mlflow.note.content": f"{version}, run {seed} of train.seeds",
        }
        values = {
            **nested_metrics(numbers, "lesson/"),
            **experiment_metrics(state.experiments, seed),
        }
        child = log_run(
            client,
            experiment_id,
            f"{version} / seed {seed}",
            child_tags,
            {"seed": seed},
            values,
            state.curves[state.curves["seed"] == int(seed)],
            dataset,
            experiment_steps(state.experiments, seed),
        )
        client.set_terminated(child)
        children[seed] = child
    _log_artifacts(client, parent, state)
    return children


def _log_artifacts(client, parent: str, state: PipelineState) -> None:
    for path in state.artifacts:
        if path.is_dir():
            client.log_artifacts(parent, str(path), artifact_path=path.name)
        elif path.exists():
            # The study's files under study/: its faithfulness.json is not the lesson's.
            folder = "study" if path.parent.name == "study" else None
            client.log_artifact(parent, str(path), artifact_path=folder)
    if state.report_html is not None:
        client.log_text(parent, state.report_html, "report.html")
    if state.params_yaml is not None:
        client.log_text(parent, state.params_yaml, PARAMS_FILE)
