"""Structured configs: the schema of conf/ and params.yaml, and its validation.

conf/ stays plain YAML so that DVC can compose it without importing this
package; `validate` applies the schema afterwards, and every entry point (the
Hydra app and each DVC stage) goes through it.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import asdict, dataclass, field, fields, is_dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import yaml
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from pipeline.errors import ConfigError

PROJECT_ROOT = Path(__file__).resolve().parent.parent
CONF_DIR = PROJECT_ROOT / "conf"
PARAMS_FILE = "params.yaml"  # in the project root, where DVC runs every stage
DEVICES = ("auto", "cpu", "cuda")
DTYPES = ("float64", "float32")
# Model variants (issue 12, pipeline.variants): the lesson and four from the glossary.
KINDS = ("lesson", "sink", "multihead", "posenc", "window")
POSITIONAL = ("learned", "sinusoidal")
# Training keeps every epoch of every seed: a row of reports/training.csv and
# two MLflow metric points each, all held in memory first. Past these, the
# curves outgrow what the report, the plots and the store are for.
MAX_EPOCHS = 100_000
MAX_CURVE_ROWS = 1_000_000  # train.epochs x len(train.seeds)


@dataclass
class DataConfig:
    seed: int = 20260218
    sequences: int = 720
    steps: int = 12
    split: list[int] = field(default_factory=lambda: [360, 180, 180])
    threshold: float = 0.35
    first_marked_step: int = 2


@dataclass
class ModelConfig:
    """The classifier. `kind` picks the variant (pipeline.variants); `heads` is read by
    multihead, `positional` by posenc and `window` by window only."""

    kind: str = "lesson"
    d_k: int = 3
    d_v: int = 3
    init_scale: float = 0.9
    heads: int = 2
    positional: str = "learned"
    window: int = 3


@dataclass
class TrainConfig:
    seeds: list[int] = field(default_factory=lambda: [1, 2])
    epochs: int = 200
    lr: float = 0.6
    device: str = "auto"
    dtype: str = "float64"


@dataclass
class EvalConfig:
    high_weight: float = 0.5
    low_effect: float = 0.05


@dataclass
class StudyConfig:
    """The seed study: runs 1..seeds, each from stream(data.seed + k) like train.seeds."""

    seeds: int = 1000
    bootstrap: int = 1000  # multi-bootstrap resamples of the 95% intervals
    bootstrap_seed: int = 0
    chunk: int = 250  # seeds trained and evaluated at once: bounds the memory
    # "i/n": only the i-th of n shards of the seeds (python -m pipeline.study sweeps;
    # python -m pipeline.merge_study joins them); null: every seed.
    shard: str | None = None


@dataclass
class FaithfulnessConfig:
    """The explainer battery (pipeline.faithfulness)."""

    ig_steps: int = 50  # Gauss-Legendre nodes of integrated gradients
    order_seed: int = 0  # the random-order baseline's noise, with each run's seed


@dataclass
class TrackingConfig:
    enabled: bool = True
    uri: str | None = None
    experiment: str = "attention-faithfulness"


@dataclass
class PathsConfig:
    sequences: str = "data/sequences.parquet"
    data_summary: str = "data/summary.json"
    parameters: str = "models/parameters.parquet"
    training_curves: str = "reports/training.csv"
    metrics: str = "reports/metrics.json"
    step_table: str = "reports/steps.csv"
    report: str = "reports/report.md"
    figures: str = "reports/figures"
    step_weights: str = "reports/step_weights.csv"
    study_seeds: str = "reports/study/seeds.parquet"
    study_summary: str = "reports/study/summary.json"
    provenance: str = "reports/provenance"
    faithfulness: str = "reports/faithfulness.json"
    study_faithfulness: str = "reports/study/faithfulness.json"
    study_faithfulness_seeds: str = "reports/study/faithfulness.parquet"
    tracked_state: str = ".mlflow-state.json"


@dataclass
class Config:
    data: DataConfig = field(default_factory=DataConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    study: StudyConfig = field(default_factory=StudyConfig)
    faithfulness: FaithfulnessConfig = field(default_factory=FaithfulnessConfig)
    tracking: TrackingConfig = field(default_factory=TrackingConfig)
    paths: PathsConfig = field(default_factory=PathsConfig)


def _check(ok: bool, key: str, allowed: str, value: Any) -> None:
    if not ok:
        raise ConfigError(f"invalid config value {key}={value!r}: {allowed}")


def _floats(node: Any, prefix: str = ""):
    """(key, value) of every float in a config tree, also inside lists."""
    for item in fields(node):
        key, value = f"{prefix}{item.name}", getattr(node, item.name)
        if is_dataclass(value):
            yield from _floats(value, f"{key}.")
        else:
            for number in value if isinstance(value, list) else [value]:
                if isinstance(number, float):
                    yield key, number


def _check_path(key: str, value: str) -> None:
    """A pipeline file must stay inside the project: DVC writes, deletes and
    records it, so an absolute path or a `..` would reach someone else's file."""
    path = PurePosixPath(value)
    inside = bool(path.parts) and not (
        path.is_absolute() or value.startswith("~") or ".." in path.parts
    )
    _check(
        inside,
        key,
        "must be a relative path inside the project (no absolute path, no '..', not empty)",
        value,
    )


SHARD = re.compile(r"(\d+)/(\d+)")


def shard_of(study: StudyConfig) -> tuple[int, int] | None:
    """study.shard as (i, n), None for the whole study. The seeds are cut at chunk
    boundaries, so a shard trains exactly the chunks an unsharded run would."""
    if study.shard is None:
        return None
    match = SHARD.fullmatch(str(study.shard))
    chunks = -(-study.seeds // study.chunk)
    allowed = f"must be i/n with 0 <= i < n <= {chunks} (the study's chunks), or null"
    _check(match is not None, "study.shard", allowed, study.shard)
    index, count = int(match[1]), int(match[2])
    _check(0 <= index < count <= chunks, "study.shard", allowed, study.shard)
    return index, count


def _check_values(cfg: Config) -> None:
    for key, value in _floats(cfg):
        _check(math.isfinite(value), key, "must be a finite number", value)
    for item in fields(cfg.paths):
        _check_path(f"paths.{item.name}", getattr(cfg.paths, item.name))
    data, model, train, ev = cfg.data, cfg.model, cfg.train, cfg.eval
    _check(data.steps >= 2, "data.steps", "must be an integer >= 2", data.steps)
    _check(
        0 <= data.first_marked_step < data.steps,
        "data.first_marked_step",
        f"must be in 0..data.steps-1 = 0..{data.steps - 1}",
        data.first_marked_step,
    )
    _check(data.sequences > 0, "data.sequences", "must be a positive integer", data.sequences)
    _check(
        len(data.split) == 3 and all(n > 0 for n in data.split),
        "data.split",
        "must be three positive sizes [train, validation, held-out]",
        list(data.split),
    )
    _check(
        sum(data.split) == data.sequences,
        "data.split",
        f"sizes must add up to data.sequences={data.sequences}",
        list(data.split),
    )
    for key in ("d_k", "d_v"):
        value = getattr(model, key)
        _check(value > 0, f"model.{key}", "must be a positive integer", value)
    _check(model.init_scale > 0, "model.init_scale", "must be > 0", model.init_scale)
    _check(model.kind in KINDS, "model.kind", f"allowed: {', '.join(KINDS)}", model.kind)
    _check(model.heads >= 1, "model.heads", "must be an integer >= 1", model.heads)
    _check(
        model.positional in POSITIONAL,
        "model.positional",
        f"allowed: {', '.join(POSITIONAL)}",
        model.positional,
    )
    _check(
        1 <= model.window <= data.steps,
        "model.window",
        f"must be in 1..data.steps = 1..{data.steps}",
        model.window,
    )
    _check(len(train.seeds) > 0, "train.seeds", "must be a non-empty list of integers", [])
    _check(
        len(set(train.seeds)) == len(train.seeds),
        "train.seeds",
        "must not repeat a seed",
        list(train.seeds),
    )
    _check(train.epochs > 0, "train.epochs", "must be a positive integer", train.epochs)
    _check(
        train.epochs <= MAX_EPOCHS,
        "train.epochs",
        f"at most {MAX_EPOCHS}: every epoch of every seed is kept (training.csv, MLflow)",
        train.epochs,
    )
    rows = train.epochs * len(train.seeds)
    _check(
        rows <= MAX_CURVE_ROWS,
        "train.epochs",
        f"epochs x seeds = {rows} curve rows, at most {MAX_CURVE_ROWS}: every epoch of "
        "every seed is kept (training.csv, MLflow)",
        train.epochs,
    )
    _check(0 < train.lr < math.inf, "train.lr", "must be a finite number > 0", train.lr)
    _check(train.device in DEVICES, "train.device", f"allowed: {', '.join(DEVICES)}", train.device)
    _check(train.dtype in DTYPES, "train.dtype", f"allowed: {', '.join(DTYPES)}", train.dtype)
    _check(0 < ev.high_weight < 1, "eval.high_weight", "must be in (0, 1)", ev.high_weight)
    _check(0 < ev.low_effect < 1, "eval.low_effect", "must be in (0, 1)", ev.low_effect)
    study = cfg.study
    _check(study.seeds >= 2, "study.seeds", "must be an integer >= 2", study.seeds)
    _check(study.bootstrap >= 1, "study.bootstrap", "must be an integer >= 1", study.bootstrap)
    _check(study.chunk >= 1, "study.chunk", "must be an integer >= 1", study.chunk)
    shard_of(study)
    faith = cfg.faithfulness
    _check(faith.ig_steps >= 1, "faithfulness.ig_steps", "must be an integer >= 1", faith.ig_steps)
    _check(
        faith.order_seed >= 0,
        "faithfulness.order_seed",
        "must be an integer >= 0",
        faith.order_seed,
    )
    experiment = cfg.tracking.experiment
    _check(bool(experiment.strip()), "tracking.experiment", "must be a non-empty name", experiment)


def validate(raw: DictConfig | dict) -> Config:
    """Merge a composed config into the schema and check every value.

    Returns a typed `Config` object; raises `ConfigError` with a one-line
    message that names the offending key.
    """
    try:
        merged = OmegaConf.merge(OmegaConf.structured(Config), raw)
    except OmegaConfBaseException as err:
        key = getattr(err, "full_key", None) or "?"
        reason = str(err).splitlines()[0]
        raise ConfigError(f"invalid config value {key}: {reason}") from None
    cfg: Config = OmegaConf.to_object(merged)  # type: ignore[assignment]
    _check_values(cfg)
    return cfg


def compose(overrides: list[str] | None = None) -> DictConfig:
    """Compose conf/ with Hydra's compose API (what `dvc exp run -S` does)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    try:
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
            return hydra_compose(config_name="config", overrides=overrides or [])
    except Exception:
        check_conf_yaml()  # a YAML syntax error: one line with file, line and column
        raise


def check_conf_yaml(conf_dir: Path = CONF_DIR) -> None:
    """Parse every YAML file of conf/; the first syntax error becomes a one-line
    ConfigError naming the file, line and column (Hydra would print a traceback)."""
    for path in sorted(conf_dir.rglob("*.yaml")):
        try:
            yaml.safe_load(path.read_text())
        except yaml.YAMLError as err:
            raise ConfigError(yaml_error(path, err)) from None


def yaml_error(path: Path, err: yaml.YAMLError) -> str:
    try:
        name = path.resolve().relative_to(PROJECT_ROOT)
    except ValueError:
        name = path
    mark = getattr(err, "problem_mark", None)
    where = f" line {mark.line + 1} column {mark.column + 1}" if mark else ""
    problem = getattr(err, "problem", None) or " ".join(str(err).split())
    context, start = getattr(err, "context", None), getattr(err, "context_mark", None)
    if context and start:
        problem += f" ({context} from line {start.line + 1} column {start.column + 1})"
    return f"invalid YAML in {name}{where}: {problem}"


def load_params(path: Path | None = None) -> Config:
    """Read and validate params.yaml (the DVC stages' view of the config)."""
    path = path or Path.cwd() / PARAMS_FILE
    if not path.exists():
        raise ConfigError(f"missing {path}: run `python -m pipeline.params` to write it")
    try:
        raw = OmegaConf.load(path)
    except yaml.YAMLError as err:
        raise ConfigError(yaml_error(path, err)) from None
    try:
        return validate(raw)
    except ConfigError as err:
        raise ConfigError(f"{err}{_rejected_value_hint(path)}") from None


def _rejected_value_hint(path: Path) -> str:
    """Where params.yaml holds a value that conf/ does not: say so and how to restore it.

    `dvc exp run -S` writes its values into the workspace's params.yaml before any
    stage runs, and leaves them there when a stage rejects one.
    """
    workspace = Path(os.environ.get("DVC_ROOT") or Path.cwd()).resolve()
    if path.resolve() != PROJECT_ROOT / PARAMS_FILE or workspace != PROJECT_ROOT:
        return ""  # a temporary copy of a queued experiment, or a file of a test
    from pipeline.params import composed_yaml  # here: pipeline.params imports this module

    try:
        from_conf = composed_yaml()
    except Exception:  # conf/ itself is invalid: its own error says where
        return ""
    if path.read_text() == from_conf:
        return ""
    return (
        " (params.yaml still holds this value, conf/ does not: a failed `dvc exp run -S` "
        "leaves it there; `python -m pipeline.params` restores params.yaml from conf/)"
    )


def to_container(cfg: Config) -> dict:
    """The config as plain dicts and lists (what OmegaConf.to_container gives for a
    structured config, ~100x faster: the track stage's no-op path calls it often)."""
    return asdict(cfg)
