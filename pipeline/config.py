"""Structured configs: the schema of conf/ and params.yaml, and its validation.

conf/ stays plain YAML so that DVC can compose it without importing this
package; `validate` applies the schema afterwards, and every entry point (the
Hydra app and each DVC stage) goes through it.
"""

from __future__ import annotations

import math
import os
import re
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields, is_dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import yaml
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from pipeline.errors import ConfigError, PipelineError

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
# One range for every seed, which each of its readers accepts: torch.tensor(seeds) and
# the tables (int64), torch.Generator.manual_seed (study.bootstrap_seed, < 2**64),
# numpy's default_rng (faithfulness.order_seed with each run's seed, >= 0), and the
# lesson's 32-bit stream. Run k draws from stream(data.seed + k), so data.seed + k
# stays in the range too.
MAX_SEED = 2**32 - 1
SEED_KEYS = ("data.seed", "train.seeds", "study.bootstrap_seed", "faithfulness.order_seed")
# The pipeline writes, replaces and deletes its outputs only here (issue 22): never
# a source, config or store file. DVC reads its own files wherever they are, and
# keeps a .gitignore in each output folder, so no path part is hidden or a DVC file.
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
    records it, so an absolute path or a `..` would reach someone else's file.
    Inside, it must be an output (`OUTPUT_DIRS`), not a project file."""
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
    _check(
        PATH_CHARS.fullmatch(value) is not None,
        key,
        "may use only the characters A-Z a-z 0-9 . _ - /",
        value,
    )
    parts = path.parts
    output = (
        len(parts) >= 2
        and parts[0] in OUTPUT_DIRS
        and not any(DVC_FILES.fullmatch(part) for part in parts)
    )
    allowed = f"must be under {OUTPUTS_NAMED}"
    if key == "paths.tracked_state":
        output = output or (len(parts) == 1 and TRACKED_STATE.fullmatch(parts[0]) is not None)
        allowed += ", or be a .mlflow-state*.json file in the project root"  # its default
    _check(
        output,
        key,
        f"{allowed} (outputs only, no hidden or DVC file: never a source, config or store file)",
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


def _check_seeds(cfg: Config) -> None:
    """Every seed in 0..MAX_SEED, and every run's stream(data.seed + k) too: checked
    here, not by a traceback after the runs they seed have trained."""
    seed_range = f"must be an integer in 0..{MAX_SEED} (2**32-1)"
    data_seed = cfg.data.seed
    _check(0 <= data_seed <= MAX_SEED, "data.seed", seed_range, data_seed)
    last = MAX_SEED - data_seed  # the largest run k whose stream(data.seed + k) is in range
    _check(
        all(0 <= seed <= last for seed in cfg.train.seeds),
        "train.seeds",
        f"each seed must be an integer in 0..{last} (= {MAX_SEED} - data.seed): run k draws "
        f"from stream(data.seed + k), and data.seed + k must stay in 0..{MAX_SEED}",
        list(cfg.train.seeds),
    )
    _check(
        cfg.study.seeds <= last,
        "study.seeds",
        f"must be at most {last} (= {MAX_SEED} - data.seed): run k draws from "
        f"stream(data.seed + k), and data.seed + k must stay in 0..{MAX_SEED}",
        cfg.study.seeds,
    )
    for key, value in (
        ("study.bootstrap_seed", cfg.study.bootstrap_seed),
        ("faithfulness.order_seed", cfg.faithfulness.order_seed),
    ):
        _check(0 <= value <= MAX_SEED, key, seed_range, value)


# --- memory -------------------------------------------------------------------------------

DTYPE_BYTES = {"float64": 8, "float32": 4}
DATA_CELL_BYTES = 96  # a (sequence, step) reading: Python float in its row, frame, tensor
PYTHON_FLOAT_BYTES = 32  # an init value is drawn as a Python float, then kept
# Runs per batch of the faithfulness battery (pipeline.faithfulness.SEED_CHUNK; not
# imported: this module stays free of torch).
BATTERY_RUNS = 16


@dataclass(frozen=True)
class MemoryTerm:
    """One dominant allocation: the product of its factors, (label, config key or "",
    value), in bytes."""

    what: str
    factors: tuple[tuple[str, str, int], ...]

    @property
    def bytes(self) -> int:
        return math.prod(value for _, _, value in self.factors)

    def blamed(self, reference: MemoryTerm) -> str:
        """The config key of the factor furthest above its value in `reference` (the
        same term of the defaults): the size to make smaller."""
        ratios = [
            (value / default, key)
            for (_, key, value), (_, _, default) in zip(
                self.factors, reference.factors, strict=True
            )
            if key and default
        ]
        return max(ratios)[1]

    def describe(self) -> str:
        return f"{self.what}: " + " x ".join(f"{label} {value}" for label, _, value in self.factors)


def parameters_per_run(model: ModelConfig, steps: int) -> int:
    """pipeline.variants.parameter_count, without torch (tests check they agree)."""
    channels = 2  # pipeline.model.CHANNELS: the reading and the marked-step indicator
    pooling = (model.d_k + model.d_v) * (channels + 1)  # Wk, Wv, q and w of one head
    heads = model.heads if model.kind == "multihead" else 1
    extras = {
        "sink": 1,
        "posenc": steps * channels if model.positional == "learned" else 0,
        "window": 2 * model.d_k * channels + channels * channels,
    }
    return heads * pooling + 1 + extras.get(model.kind, 0)


def memory_terms(cfg: Config) -> list[MemoryTerm]:
    """The dominant allocations of a configuration, each a product of config sizes.

    The per-element value counts are rounded up from peak memory measured on the
    lesson's sizes (250 runs; multihead with 2 and 8 heads; window 3 and 12;
    ig_steps 1 to 400). Stages run one after another, so the sum is an upper bound.
    """
    data, model, study = cfg.data, cfg.model, cfg.study
    size = ("bytes", "", DTYPE_BYTES[cfg.train.dtype])
    train_n, _, heldout_n = data.split
    steps = ("steps", "data.steps", data.steps)
    heldout = ("held-out", "data.split", heldout_n)
    heads = model.heads if model.kind == "multihead" else 1
    # Per (run, example, step): scores, weights and readouts of each head, and
    # for window the layer's keys, values, scores and weights of each offset.
    pooling = ("values", "model.heads" if heads > 1 else "", 2 + 2 * heads)
    layer = ("values", "model.window", 8 * model.window if model.kind == "window" else 0)
    # Trained and evaluated together: all of train.seeds, or a study chunk.
    lesson_runs, chunk = len(cfg.train.seeds), min(study.chunk, study.seeds)
    runs = (
        "runs",
        "train.seeds" if lesson_runs > chunk else "study.chunk",
        max(lesson_runs, chunk),
    )
    per_run = parameters_per_run(model, data.steps)
    sizes = {"model.d_k": model.d_k, "model.d_v": model.d_v, "data.steps": data.steps}
    if heads > 1:
        sizes["model.heads"] = heads
    parameters = ("parameters per run", max(sizes, key=sizes.__getitem__), per_run)
    examples = train_n + heldout_n
    kept = 10 + 2 * heads  # per-example values the study keeps per held-out example
    return [
        MemoryTerm(
            "the sequences",
            (
                ("sequences", "data.sequences", data.sequences),
                steps,
                ("bytes", "", DATA_CELL_BYTES),
            ),
        ),
        MemoryTerm(
            "the parameters",
            # A batch's init as Python floats, then every study run's trained values.
            (
                parameters,
                ("runs", "study.seeds", runs[2] + study.seeds),
                ("bytes", "", PYTHON_FLOAT_BYTES),
            ),
        ),
        MemoryTerm(
            "training",
            (
                runs,
                ("train examples", "data.split", train_n),
                steps,
                ("values", "", 4 + 2 * heads),
                size,
            ),
        ),
        MemoryTerm(
            "step ablation",
            (runs, heldout, ("masks", "data.steps", data.steps), steps, pooling, size),
        ),
        MemoryTerm(
            "the window layer", (runs, ("examples", "data.split", examples), steps, layer, size)
        ),
        MemoryTerm(
            "integrated gradients",
            (
                ("ig_steps", "faithfulness.ig_steps", cfg.faithfulness.ig_steps),
                ("runs", "", BATTERY_RUNS),
                heldout,
                steps,
                ("values", "", 8 + 2 * heads + layer[2]),
                size,
            ),
        ),
        MemoryTerm(
            "the study's per-example values",
            (
                ("study seeds", "study.seeds", study.seeds),
                ("values", "data.split", heldout_n * kept + train_n),
                size,
                ("copies", "", 2),
            ),
        ),
        MemoryTerm(
            "the bootstrap",
            (
                ("bootstrap", "study.bootstrap", study.bootstrap),
                ("draws", "study.seeds", study.seeds + examples),
                ("bytes", "", 24),
            ),
        ),
    ]


def estimated_bytes(cfg: Config) -> int:
    """About how much memory `cfg` needs at most: the sum of `memory_terms`."""
    return sum(term.bytes for term in memory_terms(cfg))


def byte_size(count: float) -> str:
    """1536 -> '1.5 KiB'."""
    units = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB")
    power = 0
    while count >= 1024 and power < len(units) - 1:
        count, power = count / 1024, power + 1
    return f"{count:.1f}".removesuffix(".0") + f" {units[power]}"


def _check_memory(cfg: Config) -> None:
    """Refuse, before anything runs, a configuration that cannot fit in MAX_BYTES."""
    total = estimated_bytes(cfg)
    if total <= MAX_BYTES:
        return
    terms = memory_terms(cfg)
    largest = max(terms, key=lambda term: term.bytes)
    # The defaults of the same model kind: the same terms, factor by factor.
    reference = Config(model=ModelConfig(kind=cfg.model.kind))
    key = largest.blamed(memory_terms(reference)[terms.index(largest)])
    value: Any = cfg
    for name in key.split("."):
        value = getattr(value, name)
    raise ConfigError(
        f"invalid config value {key}={value!r}: "
        f"needs about {byte_size(total)} ({largest.describe()}), more than the "
        f"{byte_size(MAX_BYTES)} limit"
    )


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
    _check_seeds(cfg)
    experiment = cfg.tracking.experiment
    _check(bool(experiment.strip()), "tracking.experiment", "must be a non-empty name", experiment)
    _check_memory(cfg)  # last: the estimate multiplies sizes checked above


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
        if key.split("[")[0] in SEED_KEYS:  # a float, a string: say what a seed may be
            reason += f"; allowed: an integer in 0..{MAX_SEED} (2**32-1)"
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


def run_hydra_app(main: Callable[[], None]) -> None:
    """Start a Hydra app (`main`, decorated with hydra.main): a YAML syntax error in
    conf/ is one line on stderr and exit code 1, where Hydra prints a long traceback."""
    try:
        check_conf_yaml()
    except PipelineError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(1)
    main()


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
