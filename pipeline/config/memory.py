"""How much memory a configuration needs at most, refused before anything runs.

The kind's own factors (its heads, a layer before the pooling, its parameter
count) come from its module (pipeline/models/interface.py), so this check imports
torch: entry points that compute nothing (the track stage, the tracking commands)
validate with `sizes=False`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from pipeline.config.schema import MAX_BYTES, Config, ModelConfig
from pipeline.errors import ConfigError
from pipeline.files import byte_size
from pipeline.models import interface
from pipeline.models.threads import workers

DTYPE_BYTES = {"float64": 8, "float32": 4}
DATA_CELL_BYTES = 96  # a (sequence, step) reading: Python float in its row, frame, tensor
PYTHON_FLOAT_BYTES = 32  # an init value is drawn as a Python float, then kept
# Runs per batch of the faithfulness battery (pipeline.analysis.faithfulness.SEED_CHUNK,
# which imports this module's callers; tests check they agree).
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


def at_once(chunk: int, runs: int) -> int:
    """Runs in flight when `runs` go `chunk` at a time, one chunk per thread of ours."""
    return chunk * workers(math.ceil(runs / chunk))


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
    heads = interface.pooling_heads(model)
    # Per (run, example, step): scores, weights and readouts of each head, and
    # for window the layer's keys, values, scores and weights of each offset.
    pooling = ("values", "model.heads" if heads > 1 else "", 2 + 2 * heads)
    layer = ("values", "model.window", interface.layer_values(model))
    # Trained and evaluated together: all of train.seeds, or the study chunks that
    # run at once (one per thread, pipeline/models/threads.py).
    lesson_runs = len(cfg.train.seeds)
    study_runs = at_once(min(study.chunk, study.seeds), study.seeds)
    runs = (
        "runs",
        "train.seeds" if lesson_runs > study_runs else "study.chunk",
        max(lesson_runs, study_runs),
    )
    battery_runs = at_once(BATTERY_RUNS, study.seeds)
    per_run = interface.parameter_count(model, data.steps)
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
                ("runs", "", battery_runs),
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


def check_memory(cfg: Config) -> None:
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
