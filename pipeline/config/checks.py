"""Validation: merge a composed config into the schema and check every value.

conf/ stays plain YAML so that DVC can compose it without importing this
package; `validate` applies the schema afterwards, and every entry point (the
Hydra apps and each DVC stage) goes through it. The checks live by idea: each
number's range (ranges.py), the outputs' paths (outputs.py), the cells (cells.py),
the seeds, the integers' ceiling and the generate stage's memory (bounds.py); here
the checks across keys, the MLflow settings, and their order.
"""

from __future__ import annotations

import functools
from dataclasses import fields, is_dataclass
from typing import Any, get_args, get_origin, get_type_hints

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from pipeline.config.bounds import check, check_generate_memory, check_integers, check_seeds
from pipeline.config.outputs import check_paths
from pipeline.config.ranges import allowed, check_ranges
from pipeline.config.schema import (
    DEVICES,
    DTYPES,
    MAX_CURVE_ROWS,
    POSITIONAL,
    Config,
)
from pipeline.core.errors import ConfigError
from pipeline.core.kinds import EXPERIMENTS, MODEL_KINDS, TASKS, declared, experiment_part


@functools.cache
def own_keys(kind: str) -> frozenset[str]:
    """The model.* keys a kind alone reads (its module's OWN_KEYS, read without importing
    it), checked for that kind alone (model.window bounds data.steps for window only)."""
    module = MODEL_KINDS.get(kind)
    return frozenset(declared(module).get("OWN_KEYS", ()) if module else ())


def _check_values(cfg: Config) -> None:
    check_paths(cfg)
    check_ranges(cfg)  # each number in its own range, before any check computes with it
    _check_data(cfg)
    check_generate_memory(cfg)  # the generate stage computes no other estimate
    _check_names(cfg)
    _check_training(cfg)
    check_seeds(cfg)  # before the experiments' checks, which count runs from data.seed
    for name in EXPERIMENTS:  # each experiment's own checks (its config module)
        experiment_part(name, "config").check_settings(cfg)
    check_integers(cfg)  # after the keys' own bounds, which say more
    _check_tracking(cfg)


def _check_data(cfg: Config) -> None:
    data = cfg.data
    check(
        0 <= data.first_marked_step < data.steps,
        "data.first_marked_step",
        f"must be in 0..data.steps-1 = 0..{data.steps - 1}",
        data.first_marked_step,
    )
    check(
        len(data.split) == 3 and all(n > 0 for n in data.split),
        "data.split",
        "must be three positive sizes [train, validation, held-out]",
        list(data.split),
    )
    check(
        sum(data.split) == data.sequences,
        "data.split",
        f"sizes must add up to data.sequences={data.sequences}",
        list(data.split),
    )


def _check_names(cfg: Config) -> None:
    """The settings that name a kind, a task, a device or a dtype."""
    model, train = cfg.model, cfg.train
    check(model.kind in MODEL_KINDS, "model.kind", f"allowed: {', '.join(MODEL_KINDS)}", model.kind)
    check(cfg.task.kind in TASKS, "task.kind", f"allowed: {', '.join(TASKS)}", cfg.task.kind)
    check(
        model.positional in POSITIONAL,
        "model.positional",
        f"allowed: {', '.join(POSITIONAL)}",
        model.positional,
    )
    check(train.device in DEVICES, "train.device", f"allowed: {', '.join(DEVICES)}", train.device)
    check(train.dtype in DTYPES, "train.dtype", f"allowed: {', '.join(DTYPES)}", train.dtype)


def _check_training(cfg: Config) -> None:
    model, train, steps = cfg.model, cfg.train, cfg.data.steps
    if "window" in own_keys(model.kind):  # a key the other kinds never read
        check(
            1 <= model.window <= steps,
            "model.window",
            f"must be in 1..data.steps = 1..{steps}",
            model.window,
        )
    check(len(train.seeds) > 0, "train.seeds", "must be a non-empty list of integers", [])
    check(
        len(set(train.seeds)) == len(train.seeds),
        "train.seeds",
        "must not repeat a seed",
        list(train.seeds),
    )
    rows = train.epochs * len(train.seeds)
    check(
        rows <= MAX_CURVE_ROWS,
        "train.epochs",
        f"epochs x seeds = {rows} curve rows, at most {MAX_CURVE_ROWS}: every epoch of "
        "every seed is kept (training.csv, MLflow)",
        train.epochs,
    )


# MLflow's limit on an experiment's name (mlflow.utils.validation, 2.7 s to import:
# a test checks that the two agree), less the longest suffix of the MLflow experiments
# an experiment's stages log to (its config's TRACKING_SUFFIX).
MAX_EXPERIMENT_NAME = 500
LONGEST_SUFFIX = max(
    (getattr(experiment_part(name, "config"), "TRACKING_SUFFIX", "") for name in EXPERIMENTS),
    key=len,
    default="",
)
TRACKING_SCHEMES = ("sqlite", "file", "http", "https", "postgresql", "mysql")


def _check_tracking(cfg: Config) -> None:
    """Refused before any training: a name MLflow would refuse, and a URI no MLflow
    store has, failed only in the track stage, after every run was trained."""
    experiment, uri = cfg.tracking.experiment, cfg.tracking.uri
    check(bool(experiment.strip()), "tracking.experiment", "must be a non-empty name", experiment)
    longest = MAX_EXPERIMENT_NAME - len(LONGEST_SUFFIX)
    check(
        len(experiment) <= longest,
        "tracking.experiment",
        f"must be at most {longest} characters (MLflow's limit, less the longest "
        f"experiment suffix {LONGEST_SUFFIX!r}); it has {len(experiment)}",
        experiment[:40] + "..." if len(experiment) > 40 else experiment,
    )
    if uri is not None:
        scheme = uri.split("://", 1)[0] if "://" in uri else uri.split(":", 1)[0]
        check(
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


def _merge_error(err: OmegaConfBaseException) -> ConfigError:
    """OmegaConf's refusal (an unknown key, a value of the wrong type) in one line, with
    what is allowed: the section's keys, or the key's range (`train.lr=abc`)."""
    key = getattr(err, "full_key", None) or "?"
    reason = str(err).splitlines()[0]
    keys = _allowed_keys(key)
    if keys and "not in" in reason:  # an unknown key: say which ones exist
        reason += f"; allowed: {', '.join(keys)}"
    elif (values := allowed(key.split("[")[0])) is not None:
        reason += f"; allowed: {values}"
    return ConfigError(f"invalid config value {key}: {reason}")


def validate(raw: DictConfig | dict) -> Config:
    """Merge a composed config into the schema and check every value.

    Returns a typed `Config` object; raises `ConfigError` with a one-line
    message that names the offending key. The memory bound is the stages' own
    (pipeline/memory/: it asks the model kinds, which import torch).
    """
    try:
        schema = OmegaConf.structured(Config)
        for name in EXPERIMENTS:  # its settings that a configured value replaces
            for key in getattr(experiment_part(name, "config"), "REPLACED", ()):
                if OmegaConf.select(OmegaConf.create(raw), f"{name}.{key}") is not None:
                    # The configured entries replace the defaults; a merge would keep
                    # every default cell that conf/ no longer lists, and publish it.
                    setattr(schema[name], key, {})
        merged = OmegaConf.merge(schema, raw)
    except OmegaConfBaseException as err:
        raise _merge_error(err) from None
    cfg: Config = OmegaConf.to_object(merged)  # type: ignore[assignment]
    _check_values(cfg)
    return cfg
