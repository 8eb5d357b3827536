"""Each numeric setting's allowed range, declared once: the config check tests every
value against it, and a value of the wrong type (`train.lr=abc`, which OmegaConf
refuses before any check runs) is told the same range.

A range that depends on another key (`data.first_marked_step` on `data.steps`) is
checked where both are known (pipeline/config/checks.py, bounds.py); `RELATIVE` says
it in words for the type error.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from pipeline.config.bounds import SEED_KEYS, SEED_RANGE, check, value_at
from pipeline.config.schema import MAX_EPOCHS, Config


@dataclass(frozen=True)
class Range:
    """An interval of allowed values, finite always; `integer` for a count or size.
    `each` names a list's items ("eps": "each eps must be in (0, 1)"); `why` says why
    the upper bound is where it is, to a value above it."""

    low: float | None = None
    high: float | None = None
    open_low: bool = False  # low itself is not allowed
    open_high: bool = False
    integer: bool = False
    each: str = ""
    why: str = ""

    def allows(self, value: float) -> bool:
        if not math.isfinite(value):
            return False
        above = self.low is None or (value > self.low if self.open_low else value >= self.low)
        below = self.high is None or (value < self.high if self.open_high else value <= self.high)
        return above and below

    def __str__(self) -> str:
        if self.integer:  # whole bounds, closed
            low, high = int(self.low or 0), None if self.high is None else int(self.high)
            return f"an integer >= {low}" if high is None else f"an integer in {low}..{high}"
        if self.low is None:
            return "a finite number"
        if self.high is None:
            return f"a finite number {'>' if self.open_low else '>='} {self.low:g}"
        left, right = "(" if self.open_low else "[", ")" if self.open_high else "]"
        return f"in {left}{self.low:g}, {self.high:g}{right}"

    def refusal(self, value: float) -> str:
        """What the error says after the key and `value`: `why` for a value above."""
        text = f"{'each ' + self.each + ' ' if self.each else ''}must be {self}"
        above = self.high is not None and value > self.high
        return f"{text} ({self.why})" if self.why and above else text


def at_least(low: int) -> Range:
    return Range(low, integer=True)


POSITIVE = Range(0, open_low=True)  # a finite number > 0
FRACTION = Range(0, 1, open_low=True, open_high=True)  # in (0, 1)
EPOCHS = Range(
    1, MAX_EPOCHS, integer=True, why="every epoch of every seed is kept: training.csv, MLflow"
)

# Every numeric key whose range is its own; tests/test_ranges.py checks that each
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
    "study.seeds": at_least(2),
    "study.bootstrap": at_least(1),
    "study.chunk": at_least(1),
    "faithfulness.ig_steps": at_least(1),
    "faithfulness.sanity_seeds": at_least(2),
    "faithfulness.robustness_samples": at_least(1),
    "faithfulness.robustness_radius": POSITIVE,
    "grid.seeds": at_least(2),
    "grid.solved": Range(0, 1, open_low=True),
    "grid.faithfulness_seeds": at_least(1),
    "grid.epochs": EPOCHS,
    "grid.lr": POSITIVE,
    "debate.seeds": at_least(2),
    "debate.trained_seeds": at_least(1),
    "debate.epsilons": Range(0, 1, open_low=True, open_high=True, each="eps"),
    "debate.permutations": at_least(1),
    "debate.penalties": Range(0, each="lam"),
    "debate.consistent_penalties": Range(0, each="lam"),
    "debate.consistent_start": Range(0, 1, open_low=True),
    "erasure.seeds": at_least(2),
    "erasure.top_k": Range(1, integer=True, each="k"),
    "abstraction.seeds": at_least(1),
    "abstraction.hidden": at_least(1),
    "abstraction.blocks": at_least(1),
    "abstraction.pairs": at_least(1),
    "abstraction.epochs": Range(
        1, MAX_EPOCHS, integer=True, why="each step of the maps' fit runs in turn"
    ),
    "abstraction.lr": POSITIVE,
    "abstraction.implements": Range(0, 1, open_low=True),
    "roar.seeds": at_least(2),
    "roar.fractions": Range(0, 1, open_low=True, open_high=True, each="fraction"),
}

# The ranges that depend on another key, in words.
RELATIVE: dict[str, str] = {
    "data.split": "three integers >= 1 [train, validation, held-out] adding up to data.sequences",
    "data.first_marked_step": "an integer in 0..data.steps-1",
    "model.window": "an integer in 1..data.steps",
    "abstraction.dims": "an integer in 1..model.d_v-1",
    "roar.window": "an odd integer in 3..2*data.steps-1",
    "train.seeds": "distinct integers, each in 0..4294967295 - data.seed",
    "faithfulness.randomisation_offset": (
        "an integer in study.seeds..2**32-1 - faithfulness.sanity_seeds"
    ),
}


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
