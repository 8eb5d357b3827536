"""MLflow tracking: one parent run per pipeline state, one child run per seed.

The only module that imports mlflow. A pipeline state (config, metrics, data and
model hashes) is logged once: its digest is a tag, and a state already in the
store is not logged again. An inter-process file lock serialises store
creation, experiment creation and logging, so parallel `dvc exp` runs on a
fresh SQLite store neither race on the schema nor lose a run.

Metric names are namespaced so that MLflow's chart view groups them: `gap/`
(the run-to-run gap, on the parent), `data/` (the data checks), `model/`,
`study/` and `faithfulness/study/` on the parent; `lesson/` (SPEC section 4),
`faithfulness/` and the curves `train/loss`, `train/accuracy` on each seed's
run. reports/metrics.json keeps its own keys: only the MLflow names differ.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
import warnings
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING

import yaml
from filelock import FileLock, Timeout

from pipeline.config import PARAMS_FILE, PROJECT_ROOT, Config, TrackingConfig, to_container
from pipeline.errors import PipelineError, TrackingError

if TYPE_CHECKING:  # pandas loads on use: the track stage's no-op check needs none
    import pandas as pd

STATE_TAG = "pipeline_state"
# The config groups that shape a number; paths and tracking settings do not.
NUMBER_GROUPS = ("data", "model", "train", "eval", "study", "faithfulness")
UNSHAPING = ("tracking.", "paths.", "hydra.", "hydra/")  # overrides that change no number
SOURCE_PATHS = ("pipeline", "conf", "dvc.yaml", "pyproject.toml")
LOCK_TIMEOUT_S = 120
BATCH = 1000  # MLflow's limit of metrics per log_batch call
SERVER_TIMEOUT_S = 10  # a tracking server whose API does not answer by then is unreachable
# metrics.json's cross-seed keys -> MLflow names; heldout_min/max come from the runs.
GAP_METRICS = {
    "seed_gap": "gap/seed_gap",
    "heldout_accuracy_mean": "gap/heldout_mean",
    "heldout_accuracy_std": "gap/heldout_std",
}
MODEL_METRICS = {"parameters": "model/parameters"}


def store_root() -> Path:
    """The project root, also when DVC runs an experiment in a temporary copy."""
    return Path(os.environ.get("DVC_ROOT") or PROJECT_ROOT)


def store_uri(cfg: TrackingConfig) -> str:
    """tracking.uri, else $MLFLOW_TRACKING_URI (MLflow's convention), else the
    project's SQLite store: a config value wins over the environment."""
    return (
        cfg.uri
        or os.environ.get("MLFLOW_TRACKING_URI")
        or f"sqlite:///{store_root() / 'mlflow.db'}"
    )


def sqlite_file(uri: str) -> Path | None:
    """The database file of a SQLite store URI; None for any other store."""
    return Path(uri.removeprefix("sqlite:///")) if uri.startswith("sqlite:///") else None


def artifact_folder(uri: str | None = None) -> Path:
    """`mlartifacts/` beside a SQLite store's database, else in the project root.

    Beside the store, not the project: a copied project, or clones sharing one store
    through MLFLOW_TRACKING_URI, then keep artifacts with the store that lists them.
    """
    database = sqlite_file(uri) if uri else None
    return (database.absolute().parent if database else store_root()) / "mlartifacts"


def artifact_location(uri: str | None = None) -> str:
    return artifact_folder(uri).as_uri()


def local_path(location: str) -> Path | None:
    """The folder of a file: URI or a plain path; None for a remote location (s3:, ...)."""
    parsed = urllib.parse.urlparse(location)
    if parsed.scheme == "file":
        return Path(urllib.request.url2pathname(parsed.path))
    return Path(location) if not parsed.scheme else None


def check_artifact_location(uri: str, recorded: str) -> None:
    """Refuse a SQLite store whose experiment keeps its artifacts in a local folder not
    beside it: the store was copied or moved, and its runs would write into the
    folder of the project it came from."""
    database, folder = sqlite_file(uri), local_path(recorded)
    expected = artifact_folder(uri)
    if database is None or folder is None or folder.resolve() == expected.resolve():
        return
    raise TrackingError(
        f"cannot write MLflow store {uri}: it records artifacts in {folder}, not beside it "
        f"in {expected}: the store was copied or moved from another project; move it back, "
        f"or delete {database} (and {expected}/) to start a fresh store here"
    )


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
    sequences: pd.DataFrame | None = None  # logged as the runs' dataset input
    report_html: str | None = None  # report.md with its figures embedded
    params_yaml: str | None = None  # params.yaml as the config was read from it
    study: dict | None = None  # the seed study's summary.json
    faithfulness: dict | None = None  # faithfulness.json: per run, explainer and metric
    study_faithfulness: dict | None = None  # the battery over the study's runs
    source: str = "dvc repro: pipeline/stages/track.py"  # what the UI's Source column says

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
    if "sweep" in hashes:  # each job of each sweep is its own run, even when repeated
        content["job"] = [hashes["sweep"], hashes["sweep.job"]]
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
    """What a history row is called: the DVC experiment, the Hydra app's overrides,
    else the commit."""
    if tags.get("dvc.exp_name"):
        return tags["dvc.exp_name"]
    if "overrides" in tags:  # where the run is logged and its files go shape no number
        shaping = [o for o in tags["overrides"].split() if not o.lstrip("+~").startswith(UNSHAPING)]
        return " ".join(shaping) or "defaults"
    commit = tags.get("git.commit", "")[:7] or "no-git"
    return commit + ("-dirty" if tags.get("git.dirty") == "True" else "")


def _metric_batches(values: dict[str, float], curves: pd.DataFrame | None = None):
    from mlflow.entities import Metric

    now = int(time.time() * 1000)
    metrics = [Metric(key, float(value), now, 0) for key, value in values.items()]
    if curves is not None:
        for column in ("loss", "accuracy"):
            metrics += [
                Metric(f"train/{column}", float(value), now, int(step))
                for step, value in zip(curves["epoch"], curves[column], strict=True)
            ]
    for start in range(0, len(metrics), BATCH):
        yield metrics[start : start + BATCH]


GAP_VIEW = "gap"  # #/experiments/<id>/runs?viewStateShareKey=gap opens this view
# MLflow's UI restores a runs view saved as the experiment tag
# mlflow.sharedViewState.<key>: the gap columns, the params that vary between
# versions, and seed runs grouped by version (mean line, min-max band in charts).
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


def _experiment_id(client, uri: str, name: str) -> str:
    from mlflow.exceptions import MlflowException

    experiment = client.get_experiment_by_name(name)
    if experiment is None:
        # A server keeps artifacts where it was told to (its artifact root), a local
        # store beside itself.
        remote = uri.startswith(("http://", "https://"))
        try:
            experiment_id = client.create_experiment(
                name, artifact_location=None if remote else artifact_location(uri)
            )
        except MlflowException:  # another worker of the sweep created it first
            experiment = client.get_experiment_by_name(name)
            if experiment is None:
                raise
            experiment_id = experiment.experiment_id
    else:
        experiment_id = experiment.experiment_id
    if experiment is not None:  # before anything is logged into a folder not its own
        check_artifact_location(uri, experiment.artifact_location)
    if experiment is None or f"mlflow.sharedViewState.{GAP_VIEW}" not in experiment.tags:
        client.set_experiment_tag(
            experiment_id, f"mlflow.sharedViewState.{GAP_VIEW}", json.dumps(GAP_VIEW_STATE)
        )
    return experiment_id


def experiment_id(uri: str, name: str) -> str | None:
    """The id of experiment `name` in the store at `uri`, None when it has none."""
    from mlflow.tracking import MlflowClient

    try:
        found = MlflowClient(tracking_uri=uri).get_experiment_by_name(name)
    except store_errors() as err:
        raise TrackingError(f"cannot read MLflow store {uri}: {first_line(err)}") from err
    return None if found is None else found.experiment_id


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
    dataset=None,
) -> str:
    from mlflow.entities import Param

    run = client.create_run(experiment_id, run_name=name, tags=tags)
    run_id = run.info.run_id
    param_list = [Param(k, v[:6000]) for k, v in params.items()]
    for start in range(0, len(param_list), 100):
        client.log_batch(run_id, params=param_list[start : start + 100])
    for batch in _metric_batches(values, curves):
        client.log_batch(run_id, metrics=batch)
    if dataset is not None:
        client.log_inputs(run_id, datasets=[dataset])
    return run_id


def log_state(state: PipelineState) -> tuple[str, bool]:
    """Log `state` unless the store has it. Returns (parent run id, newly logged)."""
    uri = store_uri(state.cfg.tracking)
    return _locked(uri, lambda: _log_locked(uri, state))


def log_study(
    cfg: Config, summary: dict, tags: dict[str, str], summary_file: Path
) -> tuple[str, bool]:
    """A study job's parent run (python -m pipeline.study): the study/ numbers, its
    lesson seeds' gap as gap/seed_gap, summary.json; no run per study seed. Returns
    (run id, newly logged)."""
    uri = store_uri(cfg.tracking)
    return _locked(uri, lambda: _log_study_locked(uri, cfg, summary, tags, summary_file))


def _locked(uri: str, log):
    """`log()` under the store's inter-process lock, store errors as one line."""
    check_server(uri)
    lock = lock_path(uri)
    check_lock_file(lock, uri)
    store_lock = FileLock(str(lock), timeout=LOCK_TIMEOUT_S)
    try:
        with _waiting_for(store_lock, uri):
            ensure_store(uri)
            return log()
    except Timeout:
        raise TrackingError(
            f"MLflow store {uri} is locked by another process (waited {LOCK_TIMEOUT_S} s "
            f"for {lock})"
        ) from None
    except store_errors() as err:
        raise TrackingError(store_error(uri, err)) from err


@contextmanager
def _waiting_for(lock: FileLock, uri: str) -> Iterator[None]:
    """Hold `lock`; when another process holds it, say so before waiting (a repro
    that seems to hang is waiting for a sweep or another experiment to log)."""
    try:
        lock.acquire(timeout=0)
    except Timeout:
        print(f"waiting for {lock.lock_file}: another process is logging to {uri}", flush=True)
        lock.acquire()
    try:
        yield
    finally:
        lock.release()


def ensure_store(uri: str) -> None:
    """Create a missing SQLite store whole or not at all.

    MLflow migrates a new database in many steps; Ctrl-C between two of them left a
    store that every later call refused (`table _alembic_tmp_... already exists`).
    The schema is built under a temporary name and linked into place, so the store
    path holds either nothing or a complete store. Callers hold the store's lock.
    """
    if not uri.startswith("sqlite:///"):
        return
    path = Path(uri.removeprefix("sqlite:///"))
    if path.exists():
        return
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

    # A new name each time: MLflow caches what it knows of a database URI per process.
    partial = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        SqlAlchemyStore(f"sqlite:///{partial}", artifact_location(uri)).engine.dispose()
        os.link(partial, path)  # never replaces a store another process made meanwhile
    except FileExistsError:
        pass
    finally:
        partial.unlink(missing_ok=True)


def check_server(uri: str) -> None:
    """Fail within SERVER_TIMEOUT_S when a tracking server does not serve its API
    (MLflow's client would retry for minutes, after training), naming the URI.

    The call is the client's own, a one-experiment search: a server answers /health
    while its database is down, its API does not. An error status from 500 up, a
    timeout or a refused connection fails; a 4xx passes as it always did: the server
    is there, and a proxy, a login or an older server without the route answers it
    (MLflow's client, with its credentials, reports what is wrong with its calls)."""
    if not uri.startswith(("http://", "https://")):
        return
    search = urllib.request.Request(
        f"{uri.rstrip('/')}/api/2.0/mlflow/experiments/search",
        data=json.dumps({"max_results": 1}).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(search, timeout=SERVER_TIMEOUT_S):
            return
    except urllib.error.HTTPError as err:
        if err.code < 500:
            return
        reason = f"HTTP {err.code} {err.reason}"
    except (urllib.error.URLError, OSError) as err:
        reason = getattr(err, "reason", err)
    raise TrackingError(f"cannot reach MLflow tracking server {uri}: {reason}") from None


def check_lock_file(lock: Path, uri: str) -> None:
    """FileLock waits its whole timeout on a lock file it cannot create, then blames
    another process; say what is wrong at once."""
    try:
        os.close(os.open(lock, os.O_RDWR | os.O_CREAT, 0o644))
    except OSError as err:
        raise TrackingError(
            f"cannot create the lock file {lock} for MLflow store {uri}: {err.strerror}"
        ) from None


def store_errors() -> tuple[type[BaseException], ...]:
    """What a store that cannot be reached, created or written raises."""
    from mlflow.exceptions import MlflowException
    from sqlalchemy.exc import SQLAlchemyError

    return (MlflowException, SQLAlchemyError, sqlite3.Error, OSError)


# SQLAlchemy puts this note before the database's own error when a query flushes
# pending writes: as the first line it hid the reason (a read-only store).
AUTOFLUSH_NOTE = "(raised as a result of Query-invoked autoflush"
READ_ONLY = "attempt to write a readonly database"  # SQLite's words


def first_line(err: BaseException) -> str:
    """The error's first line that says what went wrong, not SQLAlchemy's autoflush note."""
    lines = [line for line in str(err).splitlines() if line.strip()]
    lines = [line for line in lines if not line.startswith(AUTOFLUSH_NOTE)] or lines
    return lines[0].strip() if lines else type(err).__name__


def read_only_reason(uri: str, err: BaseException, writing: bool = True) -> str | None:
    """Why a SQLite store failed when it is read-only, else None.

    SQLite says "attempt to write a readonly database" for a database it opened
    read-only, but "disk I/O error" when the file turns read-only under an open
    connection (chattr +i); so a failed write also checks the file's own mode
    (os.access sees an immutable file as read-only even for root).
    """
    database = sqlite_file(uri)
    if database is None:
        return None
    if writing and database.exists() and not os.access(database, os.W_OK):
        return f"the database file {database} is read-only"
    if not any(READ_ONLY in str(cause) for cause in causes(err)):
        return None
    if database.parent.is_dir() and not os.access(database.parent, os.W_OK):
        return f"the folder {database.parent} of the database file is read-only"  # no journal
    return f"the database file {database} is read-only"


def causes(err: BaseException) -> list[BaseException]:
    """`err` and the errors it was raised from (MLflow wraps SQLAlchemy's, which wraps
    sqlite3's)."""
    chain: list[BaseException] = []
    while err is not None and all(err is not seen for seen in chain):
        chain.append(err)
        err = err.__cause__ or err.__context__
    return chain


def store_error(uri: str, err: BaseException, action: str = "write") -> str:
    """One line for an error of the store at `uri`: a read-only store said as such."""
    reason = read_only_reason(uri, err, writing=action == "write") or first_line(err)
    return f"cannot {action} MLflow store {uri}: {reason}"


class _RaisedStoreErrors(logging.Filter):
    """MLflow logs the whole traceback of a database error (~140 lines) and then raises
    it; the raised error is reported as one line (store_error), so the log is dropped."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.exc_info is None


# Only this module uses MLflow's store, and every error it raises ends in store_error.
logging.getLogger("mlflow.store.db.utils").addFilter(_RaisedStoreErrors())


def parent_metrics(state: PipelineState) -> dict[str, float]:
    """The parent run's numbers: gap/, data/, model/, study/, faithfulness/study/."""
    document = state.metrics
    heldout = [run["heldout_accuracy"] for run in document["runs"].values()]
    values = {name: document[key] for key, name in GAP_METRICS.items() if key in document}
    values["gap/heldout_min"], values["gap/heldout_max"] = min(heldout), max(heldout)
    if "seed_gap" in document:
        # The UI's chart labels round to 2 decimals (0.1056 and 0.1111 both read 0.11):
        # the gap as a count of held-out sequences (19 against 20) tells them apart.
        sequences = document["seed_gap"] * state.cfg.data.split[2]
        values["gap/seed_gap_sequences"] = round(sequences)
    values.update(nested_metrics(document["data"], "data/"))
    for key, value in document.items():
        if key not in ("data", "runs", *GAP_METRICS):
            values.update(nested_metrics({MODEL_METRICS.get(key, f"lesson/{key}"): value}, ""))
    if state.study is not None:  # no child run per study seed: 1000 would swamp the UI
        values.update(nested_metrics(state.study, "study/"))
    if state.study_faithfulness is not None:
        explainers = state.study_faithfulness["explainers"]
        values.update(nested_metrics(explainers, "faithfulness/study/"))
    return values


def changed_params(cfg: Config, baseline: Config) -> dict[str, tuple[str, str]]:
    """{key: (baseline value, value)} of the number-shaping params that differ."""
    old, new = number_params(baseline), number_params(cfg)
    return {key: (old.get(key, "-"), value) for key, value in new.items() if old.get(key) != value}


def number_params(cfg: Config) -> dict[str, str]:
    """The params a run records: the groups that shape a number, not paths or tracking."""
    config = to_container(cfg)
    return flatten({group: config[group] for group in NUMBER_GROUPS})


def baseline_config(root: Path) -> tuple[Config, str]:
    """What a run is compared with: the DVC experiment's baseline commit's params.yaml,
    else the schema defaults (the lesson)."""
    from pipeline.config import validate

    rev = os.environ.get("DVC_EXP_BASELINE_REV", "")
    if rev:
        shown = subprocess.run(
            ["git", "show", f"{rev}:{PARAMS_FILE}"], cwd=root, capture_output=True, text=True
        )
        if shown.returncode == 0:
            try:
                return validate(yaml.safe_load(shown.stdout)), f"baseline {rev[:7]}"
            except (PipelineError, yaml.YAMLError):  # an older schema: use the defaults
                pass
    return Config(), "the lesson's defaults"


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
    from mlflow.tracking.context.registry import resolve_tags

    # MlflowClient.create_run does not resolve these itself; the source's name
    # would be the path of a DVC temporary copy for queued experiments.
    standard = resolve_tags({"mlflow.source.name": state.source})
    return {**standard, **state.tags}


def dataset_input(state: PipelineState):
    """The sequences as an MLflow dataset, its path as source. The digest is the md5
    of the file's bytes, as DVC records it, whoever logs: the DVC pipeline and the
    Hydra app (which writes no file) name the same data alike."""
    if state.sequences is None:
        return None
    import mlflow.data
    from mlflow.entities import DatasetInput, InputTag

    from pipeline.files import parquet_bytes

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
        entity = dataset._to_mlflow_entity()  # infers the schema
    return DatasetInput(entity, tags=[InputTag("mlflow.data.context", "training")])


def _log_locked(uri: str, state: PipelineState) -> tuple[str, bool]:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    experiment_id = _experiment_id(client, uri, state.cfg.tracking.experiment)
    digest = state.digest
    existing = _find_state(client, experiment_id, digest)
    if existing:
        return existing, False

    name = version_label(state.tags)
    baseline, label = baseline_config(store_root())
    values = parent_metrics(state)
    tags = {
        **run_tags(state),
        "version": name,
        "mlflow.note.content": description(state.cfg, values, baseline, label),
    }
    dataset = dataset_input(state)
    # A run without a study or a battery (python -m pipeline.run) has no such params.
    skipped = tuple(
        f"{group}."
        for group, part in (("study", state.study), ("faithfulness", state.faithfulness))
        if part is None
    )
    params = {k: v for k, v in number_params(state.cfg).items() if not k.startswith(skipped)}
    parent = _log_run(client, experiment_id, name, tags, params, values, dataset=dataset)
    _complete(
        client,
        parent,
        digest,
        lambda: _log_children_and_artifacts(client, experiment_id, parent, state, tags, dataset),
    )
    return parent, True


def _complete(client, run: str, digest: str, log_rest) -> None:
    """log_rest(), then the state tag: a failure marks the run FAILED, and since only
    a complete run carries the state, a failed attempt is retried."""
    try:
        log_rest()
    except BaseException:
        client.set_terminated(run, "FAILED")
        raise
    client.set_tag(run, STATE_TAG, digest)
    client.set_terminated(run)


def _log_study_locked(
    uri: str, cfg: Config, summary: dict, tags: dict[str, str], summary_file: Path
) -> tuple[str, bool]:
    from mlflow.tracking import MlflowClient
    from mlflow.tracking.context.registry import resolve_tags

    client = MlflowClient(tracking_uri=uri)
    experiment_id = _experiment_id(client, uri, cfg.tracking.experiment)
    digest = state_digest(cfg, {}, tags, summary)
    existing = _find_state(client, experiment_id, digest)
    if existing:
        return existing, False
    name = version_label(tags)
    gap = summary["pair_gap"]
    note = (
        f"study of {summary['seeds']} seeds: held-out mean "
        f"{summary['heldout_accuracy']['mean']:.4f}; pairs at least {gap['observed']:.4f} "
        f"apart {gap['p_at_least_observed']:.4f}"
    )
    run_tags = {
        **resolve_tags({"mlflow.source.name": "python -m pipeline.study"}),
        **tags,
        "version": name,
        "mlflow.note.content": note,
    }
    values = {"gap/seed_gap": gap["observed"], **nested_metrics(summary, "study/")}
    run = _log_run(client, experiment_id, name, run_tags, number_params(cfg), values)
    _complete(
        client,
        run,
        digest,
        lambda: client.log_artifact(run, str(summary_file), artifact_path="study"),
    )
    return run, True


def nested_metrics(document: dict, prefix: str) -> dict[str, float]:
    """A JSON tree flattened to metric names, e.g. study/heldout_accuracy/mean."""
    values: dict[str, float] = {}
    for key, value in document.items():
        if isinstance(value, dict):
            values.update(nested_metrics(value, f"{prefix}{key}/"))
        elif isinstance(value, list):
            values.update(nested_metrics(dict(enumerate(value)), f"{prefix}{key}/"))
        else:
            values[f"{prefix}{key}"] = float(value)
    return values


def _log_children_and_artifacts(
    client, experiment_id: str, parent: str, state, parent_tags: dict, dataset
) -> None:
    """A run per lesson seed, named `<version> / seed <k>` and tagged with the version
    and the params that differ from the defaults, so the UI can group by version."""
    battery = (state.faithfulness or {}).get("runs", {})
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
            **nested_metrics(battery.get(seed, {}), "faithfulness/"),
        }
        child = _log_run(
            client,
            experiment_id,
            f"{version} / seed {seed}",
            child_tags,
            {"seed": seed},
            values,
            state.curves[state.curves["seed"] == int(seed)],
            dataset,
        )
        client.set_terminated(child)
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
        raise TrackingError(f"cannot read MLflow store {uri}: no such database")
    try:
        client = MlflowClient(tracking_uri=uri)
        found = client.get_experiment_by_name(experiment)
        runs = [] if found is None else _all_runs(client, found.experiment_id)
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


def _all_runs(client, experiment_id: str) -> list:
    """Every active run of the experiment, page by page."""
    runs, token = [], None
    while True:
        page = client.search_runs([experiment_id], max_results=1000, page_token=token)
        runs += list(page)
        token = page.token
        if not token:
            return runs
