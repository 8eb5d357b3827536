"""Validation: merge a composed config into the schema and check every value.

conf/ stays plain YAML so that DVC can compose it without importing this
package; `validate` applies the schema afterwards, and every entry point (the
Hydra apps and each DVC stage) goes through it.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import fields, is_dataclass
from pathlib import Path, PurePosixPath
from typing import Any, get_args, get_origin, get_type_hints

import yaml
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from pipeline.config.bounds import (
    SEED_KEYS,
    SEED_RANGE,
    check_generate_memory,
    check_integers,
    check_seeds,
)
from pipeline.config.schema import (
    CONF_DIR,
    DEVICES,
    DTYPES,
    DVC_FILES,
    MAX_CURVE_ROWS,
    MAX_EPOCHS,
    OUTPUT_DIRS,
    OUTPUTS_NAMED,
    PATH_CHARS,
    POSITIONAL,
    TRACKED_STATE,
    Config,
    StudyConfig,
)
from pipeline.errors import ConfigError
from pipeline.kinds import DEBATE_MAX_HEADS, MODEL_KINDS, POOLING_KINDS, TASKS, VARIANTS


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
    _check(
        all(len(part.encode()) <= NAME_MAX for part in parts) and len(value) <= PATH_MAX,
        key,
        f"each part of the path must be at most {NAME_MAX} bytes, the path {PATH_MAX}",
        value if len(value) <= 60 else value[:60] + "...",
    )
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


def _check_no_link(key: str, value: str) -> None:
    """A link anywhere on an output's path would let a write land outside the project or
    on a source (`ln -s .. reports/up`; git commits links, so a clone can carry one)."""
    from pipeline.files import first_link

    link = first_link(value)
    _check(
        link is None,
        key,
        f"must not pass through a symbolic link ({link and link.as_posix()} is one): "
        "outputs are written only to real folders inside the project",
        value,
    )


@functools.cache
def own_keys(kind: str) -> frozenset[str]:
    """The model.* keys a kind's YAML sets (conf/model/<kind>.yaml): the keys it reads,
    checked for that kind alone (model.window bounds data.steps for window only)."""
    path = CONF_DIR / "model" / f"{kind}.yaml"
    document = yaml.safe_load(path.read_text()) if path.exists() else None
    return frozenset(document or {}) - {"defaults", "kind"}


def _overlap(path: PurePosixPath, other: PurePosixPath) -> str | None:
    if path == other:
        return "is also"
    if other in path.parents:
        return "is inside"
    return "holds" if path in other.parents else None


def _check_distinct_paths(cfg: Config) -> None:
    """Every output its own path: two on one path, or one inside another's folder
    (`paths.metrics=reports/training.csv`, `paths.figures=reports/grid`), would let one
    stage's write replace another's output."""
    seen: list[tuple[str, PurePosixPath]] = []
    for item in fields(cfg.paths):
        key, path = f"paths.{item.name}", PurePosixPath(getattr(cfg.paths, item.name))
        for other, other_path in seen:
            overlap = _overlap(path, other_path)
            _check(
                overlap is None,
                key,
                f"{overlap} {other}={other_path.as_posix()!r}: every output needs a path of "
                "its own, not another's and not inside another's folder",
                path.as_posix(),
            )
        seen.append((key, path))


NAME_MAX, PATH_MAX = 255, 1024  # Linux's limit on a file name; a path far below its own
# paths.* that are folders
FOLDER_KEYS = ("figures", "provenance", "grid", "next_lesson", "debate", "debate_figures")


def _check_not_a_folder(key: str, value: str) -> None:
    _check(
        key.removeprefix("paths.") in FOLDER_KEYS or not Path(value).is_dir(),
        key,
        "is a folder; name a file (an output file of this name cannot replace it)",
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
        _check_no_link(f"paths.{item.name}", getattr(cfg.paths, item.name))
        _check_not_a_folder(f"paths.{item.name}", getattr(cfg.paths, item.name))
    _check_distinct_paths(cfg)
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
    check_generate_memory(cfg)  # the generate stage computes no other estimate
    for key in ("d_k", "d_v"):
        value = getattr(model, key)
        _check(value > 0, f"model.{key}", "must be a positive integer", value)
    _check(model.init_scale > 0, "model.init_scale", "must be > 0", model.init_scale)
    _check(
        model.kind in MODEL_KINDS, "model.kind", f"allowed: {', '.join(MODEL_KINDS)}", model.kind
    )
    task = cfg.task.kind
    _check(task in TASKS, "task.kind", f"allowed: {', '.join(TASKS)}", task)
    _check(model.heads >= 1, "model.heads", "must be an integer >= 1", model.heads)
    _check(
        model.positional in POSITIONAL,
        "model.positional",
        f"allowed: {', '.join(POSITIONAL)}",
        model.positional,
    )
    if "window" in own_keys(model.kind):  # a key the other kinds never read
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
    samples = faith.robustness_samples
    _check(samples >= 1, "faithfulness.robustness_samples", "must be an integer >= 1", samples)
    radius = faith.robustness_radius
    _check(
        0 < radius < math.inf,
        "faithfulness.robustness_radius",
        "must be a finite number > 0",
        radius,
    )
    _check(
        faith.sanity_seeds >= 2,
        "faithfulness.sanity_seeds",
        "must be an integer >= 2",
        faith.sanity_seeds,
    )
    grid = cfg.grid
    _check_cells("grid", grid.cells, list(VARIANTS))
    _check(grid.seeds >= 2, "grid.seeds", "must be an integer >= 2", grid.seeds)
    _check(0 < grid.epochs <= MAX_EPOCHS, "grid.epochs", f"must be in 1..{MAX_EPOCHS}", grid.epochs)
    _check(0 < grid.lr < math.inf, "grid.lr", "must be a finite number > 0", grid.lr)
    _check(0 < grid.solved <= 1, "grid.solved", "must be in (0, 1]", grid.solved)
    _check(
        grid.faithfulness_seeds >= 1,
        "grid.faithfulness_seeds",
        "must be an integer >= 1",
        grid.faithfulness_seeds,
    )
    _check_debate(cfg)
    _check_roar(cfg)
    check_seeds(cfg)
    check_integers(cfg)  # after the keys' own bounds, which say more
    _check_tracking(cfg)


def _check_cells(
    group: str,
    cells: dict,
    variants: list[str],
    note: str = "",
    tasks: tuple[list[str], str] | None = None,
) -> None:
    """Each cell of the grid or the debate: one of `tasks` (the names and a note; by
    default every task) and one of `variants`, under the key <task>-<variant>."""
    names, task_note = (list(TASKS), "") if tasks is None else tasks
    for name, cell in cells.items():
        key = f"{group}.cells.{name}"
        allowed_tasks = f"allowed: {', '.join(names)}{task_note}"
        _check(cell.task in names, f"{key}.task", allowed_tasks, cell.task)
        allowed = f"allowed: {', '.join(variants)}{note}"
        _check(cell.variant in variants, f"{key}.variant", allowed, cell.variant)
        # DVC's foreach names the stage and its output after the key (grid@<key>,
        # reports/grid/<key>.json) and the cell writes <task>-<variant>.json: any
        # other key trained, then failed in DVC for the missing output.
        if name != f"{cell.task}-{cell.variant}":
            raise ConfigError(
                f"invalid config value {key}: a cell's key must be its <task>-<variant> "
                f"(DVC names its stage and output after it), here {cell.task}-{cell.variant}"
            )


def _singling_out_tasks(steps: int) -> list[str]:
    """The tasks whose rationale singles out steps: not every step whatever the marked
    one. Where it is every step, deceptive attention's penalty -log(1 - weight on it)
    is infinite and the rationale's hit@1 is 1 whatever the explainer. Probed on at
    most PROBE_STEPS steps, so that the check stays cheap before the size checks run."""
    from pipeline.tasks import rationale_rows

    probe = min(steps, PROBE_STEPS)
    return [
        task
        for task in TASKS
        if not all(all(row) for row in rationale_rows(task, list(range(probe)), probe))
    ]


def _check_debate(cfg: Config) -> None:
    debate = cfg.debate
    # The debate's tests read a logit linear in each head's pooling weights; the exact
    # adversary enumerates steps^heads vertex combinations (pipeline/debate/adversary.py).
    applies = [
        name
        for name, model in VARIANTS.items()
        if model["kind"] in POOLING_KINDS and model.get("heads", 1) <= DEBATE_MAX_HEADS
    ]
    note = f" (pooling linear in its weights, at most {DEBATE_MAX_HEADS} heads)"
    tasks = (_singling_out_tasks(cfg.data.steps), " (a rationale that singles out steps)")
    _check_cells("debate", debate.cells, applies, note, tasks)
    _check(debate.seeds >= 2, "debate.seeds", "must be an integer >= 2", debate.seeds)
    trained = debate.trained_seeds
    _check(trained >= 1, "debate.trained_seeds", "must be an integer >= 1", trained)
    _check(debate.epsilons != [], "debate.epsilons", "must list at least one eps", [])
    for eps in debate.epsilons:
        _check(0 < eps < 1, "debate.epsilons", "each eps must be in (0, 1)", eps)
    count = debate.permutations
    _check(count >= 1, "debate.permutations", "must be an integer >= 1", count)
    for key in ("penalties", "consistent_penalties"):
        values = getattr(debate, key)
        _check(values != [], f"debate.{key}", "must list at least one lam", [])
        for penalty in values:
            ok = 0 <= penalty < math.inf
            _check(ok, f"debate.{key}", "each lam must be a finite number >= 0", penalty)
    start = debate.consistent_start
    _check(0 < start <= 1, "debate.consistent_start", "must be in (0, 1]", start)


PROBE_STEPS = 16  # sequence lengths on which a task's rationale is probed

# MLflow's limit on an experiment's name (mlflow.utils.validation, 2.7 s to import:
# a test checks that the two agree), less the grid's "-next-lesson" experiment suffix.
MAX_EXPERIMENT_NAME = 500
GRID_SUFFIX = "-next-lesson"
DEBATE_SUFFIX = "-debate"  # the attention debate's experiment: shorter than the grid's
TRACKING_SCHEMES = ("sqlite", "file", "http", "https", "postgresql", "mysql")


def _check_roar(cfg: Config) -> None:
    """Remove and retrain's settings; the smoothed explainers' names are checked where
    the battery's rows are known (pipeline/field/roar.py)."""
    roar = cfg.roar
    _check(roar.seeds >= 2, "roar.seeds", "must be an integer >= 2", roar.seeds)
    fractions = list(roar.fractions)
    _check(
        len(fractions) > 0 and all(0 < k < 1 for k in fractions),
        "roar.fractions",
        "must be a non-empty list of fractions in (0, 1)",
        fractions,
    )
    _check(
        fractions == sorted(set(fractions)),
        "roar.fractions",
        "must be increasing, without repeats",
        fractions,
    )
    _check(
        roar.window >= 3 and roar.window % 2 == 1,
        "roar.window",
        "must be an odd integer >= 3",
        roar.window,
    )


def _check_tracking(cfg: Config) -> None:
    """Refused before any training: a name MLflow would refuse, and a URI no MLflow
    store has, failed only in the track stage, after every run was trained."""
    experiment, uri = cfg.tracking.experiment, cfg.tracking.uri
    _check(bool(experiment.strip()), "tracking.experiment", "must be a non-empty name", experiment)
    longest = MAX_EXPERIMENT_NAME - len(GRID_SUFFIX)
    _check(
        len(experiment) <= longest,
        "tracking.experiment",
        f"must be at most {longest} characters (MLflow's limit, less the grid's "
        f"{GRID_SUFFIX!r}); it has {len(experiment)}",
        experiment[:40] + "..." if len(experiment) > 40 else experiment,
    )
    if uri is not None:
        scheme = uri.split("://", 1)[0] if "://" in uri else uri.split(":", 1)[0]
        _check(
            scheme.split("+")[0] in TRACKING_SCHEMES,
            "tracking.uri",
            f"allowed: a URI of scheme {', '.join(s + '://' for s in TRACKING_SCHEMES)}, "
            "or unset for the project's store",
            uri,
        )


def _allowed_keys(key: str) -> list[str]:
    """The keys of the config section that holds `key` (`data.foo` -> data's keys)."""
    node: Any = Config
    for part in key.split(".")[:-1]:
        if get_origin(node) is dict:  # a named entry (grid.cells.<name>): its value type
            node = get_args(node)[1]
        else:
            node = get_type_hints(node).get(part) if is_dataclass(node) else None
    return [item.name for item in fields(node)] if is_dataclass(node) else []


def validate(raw: DictConfig | dict) -> Config:
    """Merge a composed config into the schema and check every value.

    Returns a typed `Config` object; raises `ConfigError` with a one-line
    message that names the offending key. The memory bound is the stages' own
    (pipeline/memory.py: it asks the model kinds, which import torch).
    """
    try:
        schema = OmegaConf.structured(Config)
        if OmegaConf.select(OmegaConf.create(raw), "grid.cells") is not None:
            # The configured cells replace the defaults; a merge would keep every
            # default cell that conf/ no longer lists, and publish it as current.
            schema.grid.cells = {}
        if OmegaConf.select(OmegaConf.create(raw), "debate.cells") is not None:
            schema.debate.cells = {}
        merged = OmegaConf.merge(schema, raw)
    except OmegaConfBaseException as err:
        key = getattr(err, "full_key", None) or "?"
        reason = str(err).splitlines()[0]
        allowed = _allowed_keys(key)
        if allowed and "not in" in reason:  # an unknown key: say which ones exist
            reason += f"; allowed: {', '.join(allowed)}"
        if key.split("[")[0] in SEED_KEYS:  # a float, a string: say what a seed may be
            reason += f"; allowed: {SEED_RANGE.removeprefix('must be ')}"
        raise ConfigError(f"invalid config value {key}: {reason}") from None
    cfg: Config = OmegaConf.to_object(merged)  # type: ignore[assignment]
    _check_values(cfg)
    return cfg
