"""The schema of conf/ and params.yaml: one dataclass per config group, and the
constants that bound their values. Every default is declared once: here, or for an
experiment's group in its own config module (pipeline/experiments/<name>/config.py,
found through pipeline/core/kinds.py's EXPERIMENTS). `python -m pipeline.params
--defaults` writes conf/ from them, each field's comments kept
(pipeline/config/conf_files.py), and params.yaml is Hydra's compose of conf/.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields, make_dataclass
from typing import Any

from pipeline.config.battery import FaithfulnessConfig  # noqa: F401 (pipeline.config's name)
from pipeline.config.intervals import MAX_SEED  # noqa: F401 (the schema's bound, declared below it)
from pipeline.core.kinds import EXPERIMENTS, experiment_part
from pipeline.core.paths import PROJECT_ROOT

CONF_DIR = PROJECT_ROOT / "conf"
PARAMS_FILE = "params.yaml"  # in the project root, where DVC runs every stage
DEVICES = ("auto", "cpu", "cuda")
DTYPES = ("float64", "float32")
POSITIONAL = ("learned", "sinusoidal")
MAX_CURVE_ROWS = 1_000_000  # train.epochs x len(train.seeds)
# The pipeline writes, replaces and deletes its outputs only here, never a source,
# config or store file: those are what a run must not lose. DVC reads its own files
# wherever they are, and keeps a .gitignore in each output folder, so no path part
# is hidden or a DVC file.
OUTPUT_DIRS = ("data", "models", "reports")
OUTPUTS_NAMED = f"{', '.join(d + '/' for d in OUTPUT_DIRS[:-1])} or {OUTPUT_DIRS[-1]}/"
PATH_CHARS = re.compile(r"[A-Za-z0-9._/-]+")  # also keeps paths inert in report.md's HTML
DVC_FILES = re.compile(r"\..*|dvc\.yaml|dvc\.lock|.*\.dvc")
# paths.tracked_state's default, .mlflow-state.json, sits in the project root.
TRACKED_STATE = re.compile(r"\.mlflow-state[A-Za-z0-9._-]*\.json")
# What a configuration may need at most (`estimated_bytes`): well above the estimate
# for the lesson, every variant and a 10000-seed study (< 2 GiB), far below what an
# unbounded size asks for.
MAX_BYTES = 8 * 2**30


BASE_NUMBER_GROUPS = (
    "data", "task", "model", "train", "eval",
)  # fmt: skip


@dataclass
class DataConfig:
    seed: int = 20260218
    sequences: int = 720
    steps: int = 12
    # train, validation (unused by the lesson), held-out
    split: list[int] = field(default_factory=lambda: [360, 180, 180])
    threshold: float = 0.35
    first_marked_step: int = 2  # the marked step is drawn from first_marked_step..steps-1


@dataclass
class TaskConfig:
    """How the lesson's sequences are labelled: `kind` picks the module
    (pipeline/tasks/, one per task)."""

    kind: str = "lesson"


@dataclass
class ModelConfig:
    """The classifier. `kind` picks the module (pipeline/models/, one per kind); a key
    that one kind alone reads (`heads`, `positional`, `window`) is in its module's
    OWN_KEYS."""

    kind: str = "lesson"
    d_k: int = 3
    d_v: int = 3
    init_scale: float = 0.9
    heads: int = 2
    positional: str = "learned"
    window: int = 3


@dataclass
class TrainConfig:
    # run k starts from stream(data.seed + k)
    seeds: list[int] = field(default_factory=lambda: [1, 2])
    epochs: int = 200
    lr: float = 0.6
    device: str = "auto"  # auto | cpu | cuda
    dtype: str = "float64"  # float64 | float32


@dataclass
class EvalConfig:
    high_weight: float = 0.5
    low_effect: float = 0.05


@dataclass
class TrackingConfig:
    enabled: bool = True
    uri: str | None = None  # null: sqlite:///<project root>/mlflow.db
    experiment: str = "attention-faithfulness"


# paths.*: the lesson's outputs, then each experiment's (its PATHS), then StatePaths.
@dataclass
class BasePaths:
    sequences: str = "data/sequences.parquet"
    data_summary: str = "data/summary.json"
    parameters: str = "models/parameters.parquet"
    training_curves: str = "reports/training.csv"
    metrics: str = "reports/metrics.json"
    step_table: str = "reports/steps.csv"
    report: str = "reports/report.md"
    report_html: str = "reports/report.html"  # the same page, figures embedded: open in a browser
    headline: str = "reports/headline.json"  # the few numbers `dvc metrics show` lists
    figures: str = "reports/figures"
    step_weights: str = "reports/step_weights.csv"
    # <stage>.json: the params and output hashes of its last run
    provenance: str = "reports/provenance"


# paths.* that name no output: after the experiments' outputs in conf/config.yaml.
@dataclass
class StatePaths:
    tracked_state: str = ".mlflow-state.json"  # git-ignored: a fresh clone's repro logs to MLflow


def _experiment_settings() -> dict[str, Any]:
    """Each experiment's config module, by its group's name (pipeline/core/kinds.py)."""
    return {name: experiment_part(name, "config") for name in EXPERIMENTS}


# An experiment's settings are its own group; its outputs' paths are under paths,
# in conf/config.yaml's order (which params.yaml keeps).
_EXPERIMENTS = _experiment_settings()
PathsConfig = make_dataclass(
    "PathsConfig",
    [
        *(
            (key, str, field(default=path))
            for config in _EXPERIMENTS.values()
            for key, path in config.PATHS.items()
        ),
        *((item.name, item.type, field(default=item.default)) for item in fields(StatePaths)),
    ],
    bases=(BasePaths,),
)
# The config groups that shape a number; paths and tracking settings do not.
NUMBER_GROUPS = (*BASE_NUMBER_GROUPS, *_EXPERIMENTS)
Config = make_dataclass(
    "Config",
    [
        ("data", DataConfig, field(default_factory=DataConfig)),
        ("task", TaskConfig, field(default_factory=TaskConfig)),
        ("model", ModelConfig, field(default_factory=ModelConfig)),
        ("train", TrainConfig, field(default_factory=TrainConfig)),
        ("eval", EvalConfig, field(default_factory=EvalConfig)),
        *(
            (name, config.Settings, field(default_factory=config.Settings))
            for name, config in _EXPERIMENTS.items()
        ),
        ("tracking", TrackingConfig, field(default_factory=TrackingConfig)),
        ("paths", PathsConfig, field(default_factory=PathsConfig)),
    ],
)
PathsConfig.__module__ = Config.__module__ = __name__  # where pickle and OmegaConf look
