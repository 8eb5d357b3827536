"""The bounds every integer setting is checked against with the others, torch-free:
the seeds' range, a ceiling on every size and count, and the generate stage's memory.

The full memory estimate (pipeline/memory/) asks the model kinds and so imports
torch; what is checked here runs in the config check (`validate`), before any stage
or app loads torch, so that a huge value is one line at once, not after the start-up.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, is_dataclass
from typing import Any, get_origin, get_type_hints

from pipeline.config.intervals import MAX_SEED, check, last_run, value_at
from pipeline.config.schema import MAX_BYTES, Config
from pipeline.core.errors import ConfigError

# Any size or count above this cannot fit the memory bound: each unit takes at least a
# byte of the stage that holds it (pipeline/memory/ sizes the stages exactly).
MAX_COUNT = MAX_BYTES
DATA_CELL_BYTES = 96  # a (sequence, step) reading: Python float in its row, frame, tensor
# The generate stage loads no torch (pandas and the config only): it peaked at 132
# and 133 MiB (benchmarks/bench_memory.py, 2 cores).
LIGHT_PROCESS_BYTES = 200 * 2**20


def seed_keys(node: type = Config, prefix: str = "") -> tuple[str, ...]:
    """Every seed setting of the schema: a field named `seed` or `*_seed`, and a list
    named `*seeds` (train.seeds). Derived, so that a new seed key cannot escape the
    seed check; `study.seeds` and the other counts of seeds are counts, not seeds."""
    hints = get_type_hints(node)
    keys: list[str] = []
    for item in fields(node):
        key, kind = f"{prefix}{item.name}", hints[item.name]
        if is_dataclass(kind):
            keys += seed_keys(kind, f"{key}.")
        elif item.name.endswith("seed") or (
            item.name.endswith("seeds") and get_origin(kind) is list
        ):
            keys.append(key)
    return tuple(keys)


SEED_KEYS = seed_keys()
SEED_RANGE = f"must be an integer in 0..{MAX_SEED} (2**32-1)"


def check_seeds(cfg: Config) -> None:
    """Every seed in 0..MAX_SEED, and every run's stream(data.seed + k) too: checked
    here, not by a traceback after the runs they seed have trained. One range for all:
    each seed's generator (the lesson's 32-bit stream, numpy's default_rng, torch's
    Generator.manual_seed, int64 tables) accepts it. An experiment's own runs (the
    study's seeds, the faithfulness battery's re-drawn runs) are checked by its
    `check_settings` against `last_run(cfg)`."""
    data_seed = cfg.data.seed
    check(0 <= data_seed <= MAX_SEED, "data.seed", SEED_RANGE, data_seed)
    last = last_run(cfg)
    check(
        all(0 <= seed <= last for seed in cfg.train.seeds),
        "train.seeds",
        f"each seed must be an integer in 0..{last} (= {MAX_SEED} - data.seed): run k draws "
        f"from stream(data.seed + k), and data.seed + k must stay in 0..{MAX_SEED}",
        list(cfg.train.seeds),
    )
    for key in SEED_KEYS:
        if key not in ("data.seed", "train.seeds"):  # checked above, against each other
            value = value_at(cfg, key)
            check(0 <= value <= MAX_SEED, key, SEED_RANGE, value)


def _integers(node: Any, prefix: str = ""):
    """(key, value) of every integer in a config tree, also inside lists (not bools)."""
    for item in fields(node):
        key, value = f"{prefix}{item.name}", getattr(node, item.name)
        if is_dataclass(value):
            yield from _integers(value, f"{key}.")
        else:
            for number in value if isinstance(value, list) else [value]:
                if isinstance(number, int) and not isinstance(number, bool):
                    yield key, number


def check_integers(cfg: Config) -> None:
    """Every integer setting at most MAX_COUNT: the seeds and the epochs have tighter
    bounds of their own, and the memory estimate sizes the rest exactly, but only once
    torch is loaded; `debate.seeds=10**26` is refused here at once."""
    for key, value in _integers(cfg):
        check(
            value <= MAX_COUNT,
            key,
            f"must be at most {MAX_COUNT} (2**33): each unit of a size or count takes at "
            "least a byte, and a configuration may need at most 8 GiB",
            value,
        )


@dataclass(frozen=True)
class MemoryTerm:
    """One dominant allocation: the product of its factors, (label, config key or "",
    value), in bytes."""

    what: str
    factors: tuple[tuple[str, str, int], ...]
    phase: str = ""  # "" lives the whole stage; terms of one phase are freed before the next

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


def sequences_term(cfg: Config) -> MemoryTerm:
    return MemoryTerm(
        "the sequences",
        (
            ("sequences", "data.sequences", cfg.data.sequences),
            ("steps", "data.steps", cfg.data.steps),
            ("bytes", "", DATA_CELL_BYTES),
        ),
    )


def memory_refusal(cfg: Config, stage: str, estimate: int, largest: MemoryTerm, key: str) -> str:
    """The line that refuses a stage over MAX_BYTES, naming the key to make smaller."""
    from pipeline.core.files import byte_size  # pipeline.core.files imports the schema

    return (
        f"invalid config value {key}={value_at(cfg, key)!r}: stage {stage} needs about "
        f"{byte_size(estimate)} ({largest.describe()}), more than the "
        f"{byte_size(MAX_BYTES)} limit"
    )


def check_generate_memory(cfg: Config) -> None:
    """The generate stage's memory (its process and the sequences), refused with the
    config: it loads no torch, so the full estimate (pipeline/memory/) is not its to
    run, and unchecked it ran until killed at data.sequences=10**8. Every other stage
    holds the sequences too, so what this refuses, they would."""
    term = sequences_term(cfg)
    estimate = LIGHT_PROCESS_BYTES + term.bytes
    if estimate > MAX_BYTES:
        key = term.blamed(sequences_term(Config()))
        raise ConfigError(memory_refusal(cfg, "generate", estimate, term, key))
