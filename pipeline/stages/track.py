"""Stage track: log the pipeline's state to MLflow (once per distinct state).

DVC runs it when anything it logs changes, or when its marker (paths.tracked_state)
is missing: a fresh clone, a pulled experiment. DVC cannot see inside the store, so
the stage asks it whether the state is there: a store deleted or replaced, or the
run deleted, gets the state again (at once with `dvc repro -sf track`). When the
store has the state, the stage reads metrics.json and dvc.lock and the store's
record (pipeline/tracking/record.py), and is done in a fraction of a second (neither
mlflow nor pandas nor torch is imported).
"""

from __future__ import annotations

import shlex
from pathlib import Path

import yaml

from pipeline import tracking
from pipeline.config import (
    PARAMS_FILE,
    Config,
    TrackingConfig,
    load_params,
    provenance,
    validate,
)
from pipeline.config.results import experiment_results
from pipeline.core.files import read_csv, read_json, read_parquet, require, write_json
from pipeline.core.kinds import EXPERIMENTS, experiment_part, has_part
from pipeline.reporting import answer
from pipeline.stages import entry
from pipeline.tracking.store import PRIVATE_FILE, PRIVATE_FOLDER

# dvc.yaml's second output of this stage, where MLflow keeps the artifacts.
ARTIFACTS_MARKER = "mlartifacts/.tracked.json"


def read_state(cfg: Config, root: Path) -> tracking.PipelineState:
    # The device train.device resolves to here: no output file names it, since the
    # outputs are the same bytes on every device (docs/pipeline.md).
    from pipeline.core.device import resolve_device

    curves = read_csv(cfg.paths.training_curves)
    tags = {
        **tracking.git_tags(root),
        **tracking.lock_hashes(root / "dvc.lock", cfg),
        **tracking.environment_tags(resolve_device(cfg.train.device).type),
    }
    candidates = [
        cfg.paths.metrics,
        cfg.paths.step_table,
        cfg.paths.training_curves,
        cfg.paths.report,
        cfg.paths.figures,
        *(
            getattr(cfg.paths, key)
            for name in EXPERIMENTS
            if has_part(name, "tracked")
            for key in getattr(experiment_part(name, "tracked"), "ARTIFACTS", ())
        ),
    ]
    return tracking.PipelineState(
        cfg=cfg,
        metrics=read_json(cfg.paths.metrics),
        curves=curves,
        tags=tags,
        artifacts=[Path(p) for p in candidates if Path(p).exists()],
        sequences=read_parquet(cfg.paths.sequences),
        parameters=read_parquet(cfg.paths.parameters),  # each seed's model (registered.py)
        report_html=require(Path(cfg.paths.report_html)).read_text(),
        params_yaml=params_snapshot(cfg),
        experiments=experiment_results(cfg, "tracked"),
    )


def params_snapshot(cfg: Config) -> str:
    """params.yaml's text, checked to be the params this stage started with: the run's
    params and its params.yaml artifact then cannot disagree."""
    text = Path(PARAMS_FILE).read_text()
    provenance.check_params_unchanged(cfg, "track", validate(yaml.safe_load(text)))
    return text


def log_once(cfg: Config, metrics: dict) -> str:
    """Log the pipeline's state unless the store has it; returns the store's URI."""
    provenance.verify_inputs(cfg, "track")
    root, uri = Path.cwd(), tracking.store_uri(cfg.tracking)
    hashes = tracking.lock_hashes(root / "dvc.lock", cfg)
    battery = tracking.battery_documents(experiment_results(cfg, "tracked"))
    digest = tracking.state_digest(cfg, metrics, hashes, None, battery)
    run_id = tracking.logged_run(uri, cfg.tracking.experiment, digest)
    logged = False
    if run_id is None:
        state = read_state(cfg, root)
        from pipeline.tracking import registered  # the models' code: not on the no-op path

        run_id, logged = tracking.log_state(state, registered.log_models)
    # A params.yaml rewritten while this stage ran (`dvc exp run -S` during a repro)
    # would be recorded in dvc.lock beside outputs made from the old values.
    provenance.check_params_unchanged(cfg, "track")
    print(f"{'logged' if logged else 'already logged'}: run {run_id} in {uri}")
    write_marker(cfg)
    return uri


def write_marker(cfg: Config) -> None:
    """The stage's outputs: which experiment the workspace logs to, null when tracking
    is off. Not the state's digest: after `dvc exp run` and the way back to the lesson
    (README), a digest would stay the experiment's while dvc.lock records the lesson's,
    and `dvc status` would call the stage changed; the store holds the states.

    The same document also inside `mlartifacts/` (ARTIFACTS_MARKER, the folder 0700
    and the file 0600 as the store's): `rm -rf mlartifacts` deletes it, so DVC sees
    this stage's output gone and the next `dvc repro` logs the artifacts again. DVC
    can see no such file for `rm mlflow.db` (a file holds no file); the commands that
    read the store say to run `dvc repro -sf track` (docs/tracking.md)."""
    experiment = cfg.tracking.experiment if cfg.tracking.enabled else None
    write_json(cfg.paths.tracked_state, {"experiment": experiment})
    marker = Path(ARTIFACTS_MARKER)
    marker.parent.mkdir(mode=PRIVATE_FOLDER, exist_ok=True)
    write_json(marker, {"experiment": experiment})
    marker.chmod(PRIVATE_FILE)


def main() -> None:
    cfg = load_params()  # computes nothing: no memory bound, no torch
    if not cfg.tracking.enabled:
        print("tracking disabled (tracking.enabled=false)")
        write_marker(cfg)
        return
    metrics = read_json(cfg.paths.metrics)
    uri = log_once(cfg, metrics)
    print(answer.answer(cfg, metrics, experiment_results(cfg, "tracked"), ui_hint(cfg, uri)))


def ui_hint(cfg: Config, uri: str) -> str:
    """The command that opens the UI on this run's store; every value quoted, so a
    pasted hint runs nothing else (an experiment named `x; touch f`)."""
    if uri != f"sqlite:///{tracking.store_root() / 'mlflow.db'}":  # another store
        return f"mlflow ui --backend-store-uri {shlex.quote(uri)}, view {tracking.GAP_VIEW!r}"
    if cfg.tracking.experiment != TrackingConfig().experiment:
        return f"python -m pipeline ui --experiment {shlex.quote(cfg.tracking.experiment)}"
    return "python -m pipeline ui"


if __name__ == "__main__":
    entry(main)
