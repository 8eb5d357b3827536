"""Each numeric setting's allowed range, declared once: the config check tests every
value against it, and a value of the wrong type (`train.lr=abc`, which OmegaConf
refuses before any check runs) is told the same range.

A range that depends on another key (`data.first_marked_step` on `data.steps`) is
checked where both are known (pipeline/config/checks.py, bounds.py); `RELATIVE` says
it in words for the type error.
"""

from __future__ import annotations

from typing import Any

from pipeline.config.bounds import SEED_KEYS, SEED_RANGE
from pipeline.config.intervals import (
    EPOCHS,
    FRACTION,
    POSITIVE,
    Range,
    at_least,
    check,
    value_at,
)
from pipeline.config.schema import Config
from pipeline.core.kinds import EXPERIMENTS, experiment_part

# Every numeric key whose range is its own; tests/config/test_ranges.py checks that each
# numeric key of the schema is here, in RELATIVE or a seed.
RANGES: dict[str, Range] = {
    "data.sequences": at_least(1),
    "data.steps": at_least(2),
    "data.threshold": Range(),
    "model.d_k": at_least(1),
    "model.d_v": at_least(1),
    "model.init_scale": POSITIVE,
    "model.heads": at_least(1),
    "train.epochs": EPOCHS,
    "train.lr": POSITIVE,
    "eval.high_weight": FRACTION,
    "eval.low_effect": FRACTION,
}

# The ranges that depend on another key, in words.
RELATIVE: dict[str, str] = {
    "data.split": "three integers >= 1 [train, validation, held-out] adding up to data.sequences",
    "data.first_marked_step": "an integer in 0..data.steps-1",
    "model.window": "an integer in 1..data.steps",
    "train.seeds": "distinct integers, each in 0..4294967295 - data.seed",
}


# Each experiment's own ranges, under its config group (pipeline/experiments/<name>/config.py).
for _name in EXPERIMENTS:
    _config = experiment_part(_name, "config")
    RANGES.update({f"{_name}.{key}": bound for key, bound in _config.RANGES.items()})
    RELATIVE.update({f"{_name}.{key}": words for key, words in _config.RELATIVE.items()})


def allowed(key: str) -> str | None:
    """What `key` takes, in words, for a value OmegaConf refused by its type; None for
    a key that is not numeric."""
    if key in RANGES:
        text = str(RANGES[key])
        return f"each {RANGES[key].each} {text}" if RANGES[key].each else text
    if key in RELATIVE:
        return RELATIVE[key]
    return SEED_RANGE.removeprefix("must be ") if key in SEED_KEYS else None


def check_ranges(cfg: Config) -> None:
    """Every value of RANGES in its range, each item of a list too. Before the checks
    that compute with the values (the sizes' memory, the rationale probe)."""
    for key, bound in RANGES.items():
        value: Any = value_at(cfg, key)
        for item in value if isinstance(value, list) else [value]:
            check(bound.allows(item), key, bound.refusal(item), item)
