"""The pieces a setting's check is made of, importing nothing of the config: an
experiment's config module (pipeline/experiments/<name>/config.py) declares its
ranges and checks with these while the schema composes it."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import reduce
from typing import Any

from pipeline.core.errors import ConfigError

# Training keeps every epoch of every seed: a row of reports/training.csv and
# two MLflow metric points each, all held in memory first. Past these, the
# curves outgrow what the report, the plots and the store are for.
MAX_EPOCHS = 100_000

# One range for every seed, which each of its readers accepts: torch.tensor(seeds) and
# the tables (int64), torch.Generator.manual_seed (study.bootstrap_seed, < 2**64),
# numpy's default_rng (faithfulness.order_seed with each run's seed, >= 0), and the
# lesson's 32-bit stream. Run k draws from stream(data.seed + k), so data.seed + k
# stays in the range too. Every seed key (pipeline/config/bounds.py's SEED_KEYS, the
# fields named *seed, and train.seeds) takes this range.
MAX_SEED = 2**32 - 1


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


def value_at(cfg: Any, key: str) -> Any:
    """`cfg`'s value of a dotted key (`debate.permutation_seed`)."""
    return reduce(getattr, key.split("."), cfg)


def check(ok: bool, key: str, allowed: str, value: Any) -> None:
    """Refuse `key`'s `value` unless `ok`, in one line: the key, the value, what is
    allowed (every config check's form)."""
    if not ok:
        raise ConfigError(f"invalid config value {key}={value!r}: {allowed}")


def last_run(cfg: Any) -> int:
    """The largest run k whose stream(data.seed + k) is in 0..MAX_SEED."""
    return MAX_SEED - cfg.data.seed
