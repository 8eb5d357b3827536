"""A pipeline state: what one parent run records, its digest, and the tags and
params read from git, dvc.lock and the config (no mlflow, no pandas at import).

A state (config, metrics, data and model hashes) is logged once: its digest is
the run's `pipeline_state` tag, and a state already in the store is not logged
again.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from pipeline.config import NUMBER_GROUPS, PARAMS_FILE, Config, flatten, to_container
from pipeline.core.errors import PipelineError

if TYPE_CHECKING:  # pandas loads on use: the track stage's no-op check needs none
    import pandas as pd

STATE_TAG = "pipeline_state"
MODELS_TAG = "dvc.models_md5"  # the trained models' md5 in dvc.lock (`lock_hashes`)
UNSHAPING = ("tracking.", "paths.", "hydra.", "hydra/")  # overrides that change no number
SOURCE_PATHS = ("pipeline", "conf", "dvc.yaml", "pyproject.toml")

# The gap/ numbers at the lesson's 4 decimals: the UI's 100-pixel metric columns
# show them whole, a group's "(average)" beside them (docs/tracking.md); metrics.json
# keeps 8.
GAP_DECIMALS = 4


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
    parameters: pd.DataFrame | None = None  # models/parameters.parquet: each seed's model
    # each experiment's results by name, None where its stage has not run
    experiments: dict[str, dict | None] = field(default_factory=dict)
    source: str = "dvc repro: pipeline/stages/track.py"  # what the UI's Source column says

    @property
    def digest(self) -> str:
        battery = battery_documents(self.experiments)
        return state_digest(self.cfg, self.metrics, self.tags, None, battery)


def battery_documents(experiments: dict) -> dict:
    """What a state's digest holds of the experiments: each one's results by name
    (config.results.experiment_results). The track stage's no-op check and the logged
    state both digest this: one definition, or the check never finds the state it
    logged."""
    return dict(experiments)


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


def field_metrics(document: dict, prefix: str) -> dict[str, float]:
    """A field test's numbers (the erasure stage's metrics.json, a run's or the study's
    part), flattened as `nested_metrics`; of a study summary its means only (the
    intervals stay in the JSON), and no None (a share with no example to average).
    MLflow refuses '@' in a name: `feature@3` is logged as `feature_at_3`."""
    values = nested_metrics(_without_none(document), prefix)
    return {
        name.removesuffix("/mean").replace("@", "_at_"): value
        for name, value in values.items()
        if not name.endswith(("/ci95_low", "/ci95_high", "/runs"))
    }


def _without_none(node):
    if isinstance(node, dict):
        return {k: _without_none(v) for k, v in node.items() if v is not None}
    return node


def sanity_metrics(sanity: dict, prefix: str) -> dict[str, float]:
    """The sanity checks' mean Spearman per test, step and row, <prefix><test>/<step>/<row>
    (their intervals and quantiles stay in the JSON: seven numbers for each would
    swamp the UI)."""
    return {
        f"{prefix}{test}/{step}/{row}": entry["spearman"]["mean"]
        for test, steps in sanity["tests"].items()
        for step, rows in steps.items()
        for row, entry in rows.items()
    }


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
    wanted = {"dvc.data_md5": cfg.paths.sequences, MODELS_TAG: cfg.paths.parameters}
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
