"""Each seed's trained model in MLflow: a logged pyfunc model on the seed's run,
registered as a version of one registered model, with the alias
`run-<seed>-<models>`.

The registered model is named after the experiment (`tracking.experiment`); each
version carries the tags `seed`, `version` (the parent's name), `parent_run` and
`dvc.models_md5`. `<models>` is the first 8 hex digits of the trained models' md5 in
dvc.lock (models/parameters.parquet), so an alias names the models it points at and
never claims to be the workspace's when it is not: the lesson's run 2 is
`run-2-c7111ea2` in every store, and `workspace_uri(2)` reads the workspace's
dvc.lock for its own (after `dvc exp apply` or the way back too, with no stage
run). A plain `run-<seed>` alias, which named the state tracked last and so went
stale after the way back, is removed when a state is logged. A state's models are
logged once: a state found in the store keeps its versions, and only gets the ones
it lacks (a store logged before models were) or their artifacts again (`rm -rf
mlartifacts`).

Each version carries the digest of its model's files (`files_sha256`, record.
tree_digest) from registration. A model's code (`pyfunc.py`) runs when MLflow loads
it, so `load_model` checks a copy of the files against that digest first and refuses
a changed model in one line; the track stage, finding a state's model changed, logs
its files again from the state's parameters.

mlflow is imported inside the functions, as everywhere in this package.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlparse

from pipeline.config import Config
from pipeline.core.errors import PipelineError
from pipeline.tracking.record import tree_digest

if TYPE_CHECKING:
    import pandas as pd

ALIAS = "run-{seed}-{models}"
LEGACY_ALIAS = "run-{seed}"  # the state tracked last: stale after the way back
MODELS_DIGITS = 8
DIGEST_TAG = "files_sha256"  # the version's tag: tree_digest of its model's files
PROGRESS_BAR = "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR"
EXAMPLE_SEQUENCES = 2  # the input example: the first sequences of the data
# What the model's code imports (pipeline.models and its config), pinned as installed;
# the pipeline package itself comes from the repository (`pip install -e .`).
REQUIREMENTS = ("torch", "numpy", "pandas", "omegaconf", "hydra-core", "pyyaml", "numba")


def model_name(cfg: Config) -> str:
    """The registered model's name: the experiment's."""
    return cfg.tracking.experiment


def alias(seed: int | str, models_md5: str) -> str:
    """The alias of seed `seed`'s model among the models whose md5 (dvc.lock) is
    `models_md5`."""
    return ALIAS.format(seed=seed, models=models_md5[:MODELS_DIGITS])


def workspace_uri(seed: int, root: Path | None = None) -> str:
    """`models:/NAME@run-<seed>-<models>` of the workspace's trained models, as its
    params.yaml and dvc.lock name them (neither mlflow nor the store is read)."""
    from pipeline.config import PARAMS_FILE, load_params
    from pipeline.core.errors import ConfigError
    from pipeline.tracking.state import MODELS_TAG, lock_hashes

    root = Path.cwd() if root is None else root
    cfg = load_params(root / PARAMS_FILE)
    models = lock_hashes(root / "dvc.lock", cfg).get(MODELS_TAG)
    if not models:
        raise ConfigError(f"{root / 'dvc.lock'} records no trained models: run `dvc repro`")
    return f"models:/{model_name(cfg)}@{alias(seed, models)}"


def requirements() -> list[str]:
    # Given, not inferred: MLflow's inference loads the model in a subprocess (seconds).
    return [f"{name}=={version(name)}" for name in REQUIREMENTS]


def versions_of(client, name: str, parent: str) -> dict[str, object]:
    """{seed: model version} registered for the parent run `parent`."""
    found = client.search_model_versions(f"name = '{name}' and tags.parent_run = '{parent}'")
    return {v.tags["seed"]: v for v in found}


def logged_model_id(model_version) -> str:
    """The logged model a version was registered from (its source `models:/<id>`; the
    SQLite registry leaves the version's model_id empty)."""
    return model_version.model_id or model_version.source.removeprefix("models:/")


def model_root(client, model_version) -> Path | None:
    """The local folder of a version's logged model; None for a remote store."""
    return _logged_model_root(client, logged_model_id(model_version))


def _logged_model_root(client, model_id: str) -> Path | None:
    location = urlparse(client.get_logged_model(model_id).artifact_location)
    if location.scheme not in ("", "file"):
        return None
    return Path(location.path)


def model_files(client, model_version) -> list[Path]:
    """The local MLmodel file of a version's logged model; [] for a remote store."""
    root = model_root(client, model_version)
    return [] if root is None else [root / "MLmodel"]


class ModelChangedError(PipelineError, RuntimeError):
    """A registered model's files are not those registered: it is not loaded."""


def load_model(model_uri: str, tracking_uri: str | None = None):
    """`mlflow.pyfunc.load_model(model_uri)` for `models:/NAME@ALIAS` or
    `models:/NAME/VERSION`, after checking the model's files against the digest its
    version was registered with: the files are downloaded to a temporary folder,
    checked, and loaded from there, so what runs is what was checked. A changed
    file, or a version with no digest, is refused in one line (ModelChangedError)."""
    import mlflow.artifacts
    import mlflow.pyfunc
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri)
    name, _, which = model_uri.removeprefix("models:/").partition("@")
    if which:
        version = client.get_model_version_by_alias(name, which)
    else:
        name, _, number = model_uri.removeprefix("models:/").partition("/")
        version = client.get_model_version(name, number)
    expected = version.tags.get(DIGEST_TAG)
    if expected is None:
        raise ModelChangedError(
            f"{model_uri} (version {version.version}) has no {DIGEST_TAG} tag: its files "
            "cannot be checked, so it is not loaded (dvc repro registers its models again)"
        )
    with tempfile.TemporaryDirectory() as tmp:
        source = client.get_logged_model(logged_model_id(version)).artifact_location
        with _logging_to(client.tracking_uri):
            local = Path(mlflow.artifacts.download_artifacts(source, dst_path=tmp))
        found = tree_digest(local)
        if found != expected:
            raise ModelChangedError(
                f"{model_uri} (version {version.version}): its files are not those "
                f"registered ({DIGEST_TAG} {found[:12]}, registered {expected[:12]}); "
                "not loaded, since loading runs its code"
            )
        return mlflow.pyfunc.load_model(str(local))


def log_models(
    client,
    uri: str,
    cfg: Config,
    parameters: pd.DataFrame,
    sequences: pd.DataFrame,
    children: dict[str, str],
    parent: str,
    tags: dict[str, str],
) -> list[Path]:
    """Log and register the model of each seed in `children` ({seed: child run}) that
    `parent` has no version of yet, log again the artifacts of those whose files are
    gone, and point the aliases at this parent's versions. Returns the local MLmodel
    files (the store's record checks that they still exist)."""
    with _logging_to(uri):
        return _log_models(client, cfg, parameters, sequences, children, parent, tags)


@contextmanager
def _logging_to(uri: str) -> Iterator[None]:
    """MLflow's model logging, and the registry's check of a version's source, read the
    tracking URI from MLflow's global setting only: set to `uri` here, then put back,
    with $MLFLOW_TRACKING_URI, which setting it writes and clearing it unsets. Without
    MLflow's notes on each model (its input example checked, its files copied, with a
    progress bar): the stage prints one line per state."""
    from mlflow.tracking._tracking_service import utils

    names = ("mlflow.pyfunc", "mlflow.models")
    levels = [logging.getLogger(name).level for name in names]
    saved = {name: os.environ.get(name) for name in (PROGRESS_BAR, "MLFLOW_TRACKING_URI")}
    previous = utils._tracking_uri
    os.environ[PROGRESS_BAR] = "false"
    for name in names:
        logging.getLogger(name).setLevel(logging.WARNING)
    utils.set_tracking_uri(uri)
    try:
        yield
    finally:
        utils.set_tracking_uri(previous)
        for name, level in zip(names, levels, strict=True):
            logging.getLogger(name).setLevel(level)
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _log_models(client, cfg, parameters, sequences, children, parent, tags) -> list[Path]:
    from mlflow.exceptions import MlflowException

    from pipeline.models.frames import features
    from pipeline.tracking.state import MODELS_TAG, STATE_TAG

    name = model_name(cfg)
    example = features(sequences.head(EXAMPLE_SEQUENCES), cfg.data.steps)[0].numpy()
    with suppress(MlflowException):  # it exists
        client.create_registered_model(name)
    existing = versions_of(client, name, parent)
    files = []
    for seed, child in children.items():
        row = parameters[parameters["seed"] == int(seed)].iloc[0]
        model_version = existing.get(seed)
        if model_version is None:
            model_id = _new_model(client, child, row)
            _log_model(cfg, row, example, child, model_id)
            version_tags = {**tags, "seed": seed, "parent_run": parent}
            root = _logged_model_root(client, model_id)
            if root is not None:
                version_tags[DIGEST_TAG] = tree_digest(root)
            model_version = client.create_model_version(
                name, f"models:/{model_id}", run_id=child, tags=version_tags, model_id=model_id
            )
        else:
            _check_files(client, cfg, row, example, model_version, seed)
        # Without dvc.lock (a state logged outside DVC) the state's digest names them.
        models = model_version.tags.get(MODELS_TAG) or tags.get(MODELS_TAG) or tags[STATE_TAG]
        client.set_registered_model_alias(name, alias(seed, models), model_version.version)
        with suppress(MlflowException):  # a store from before: the stale plain alias
            client.delete_registered_model_alias(name, LEGACY_ALIAS.format(seed=seed))
        files += model_files(client, model_version)
    return files


def _check_files(client, cfg, row, example, model_version, seed: str) -> None:
    """A registered model's local files as registered: gone ones, or changed ones
    (their digest not the version's tag), are logged again from the state's
    parameters, which the state's digest vouches for, and the tag follows."""
    root = model_root(client, model_version)
    if root is None:
        return
    expected = model_version.tags.get(DIGEST_TAG)
    if (root / "MLmodel").is_file() and expected is not None and tree_digest(root) == expected:
        return
    if (root / "MLmodel").is_file() and expected is not None:
        print(
            f"the model files of seed {seed} (version {model_version.version}) had changed: "
            "logged them again"
        )
    shutil.rmtree(root, ignore_errors=True)  # no planted file stays
    _log_model(cfg, row, example, None, logged_model_id(model_version))
    client.set_model_version_tag(
        model_version.name, model_version.version, DIGEST_TAG, tree_digest(root)
    )


def _new_model(client, run: str, row) -> str:
    """A logged model for the seed's run, in the run's experiment (MLflow's model
    logging would put it in the active experiment: the Default one here)."""
    seed = int(row["seed"])
    experiment_id = client.get_run(run).info.experiment_id
    model = client.create_logged_model(
        experiment_id, name=f"seed-{seed}", source_run_id=run, params={"seed": str(seed)}
    )
    return model.model_id


def _log_model(cfg: Config, row, example, run: str | None, model_id: str) -> None:
    """Log one seed's pyfunc into logged model `model_id`, as an output of `run` (None:
    the files again, into a model the run already lists)."""
    import mlflow.pyfunc
    from mlflow.models import Model, infer_signature

    from pipeline.tracking import pyfunc

    document = pyfunc.model_document(row, cfg.model, cfg.data.steps)
    with tempfile.TemporaryDirectory() as tmp:
        path = pyfunc.write_document(document, Path(tmp) / "model.json")
        model = pyfunc.SequenceModel()
        model.load_context(_Context({pyfunc.ARTIFACT: str(path)}))
        signature = infer_signature(example, pyfunc.predict_sequences(model.params, example))
        Model.log(
            artifact_path=None,
            flavor=mlflow.pyfunc,
            name=f"seed-{document['seed']}",
            run_id=run,
            model_id=model_id,
            python_model=pyfunc.__file__,  # models from code: nothing pickled
            artifacts={pyfunc.ARTIFACT: str(path)},
            signature=signature,
            input_example=example,  # (n, T, 2)
            pip_requirements=requirements(),
        )


class _Context:
    """What `load_context` reads of MLflow's context: the artifacts' local paths."""

    def __init__(self, artifacts: dict[str, str]) -> None:
        self.artifacts = artifacts
