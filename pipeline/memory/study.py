"""The study's machinery (pipeline/analysis/seed_study.py) as memory terms: what the
study stage holds, and what every stage that trains seeds the same way holds (the
grid's and the debate's cells, the sanity checks' label-randomised models)."""

from __future__ import annotations

import math

from pipeline.config.bounds import MemoryTerm
from pipeline.config.schema import Config
from pipeline.core import measures
from pipeline.memory.device import study_chunk
from pipeline.memory.sizes import DTYPE_BYTES, PYTHON_FLOAT_BYTES, kind_key
from pipeline.models import interface
from pipeline.models.threads import workers


def chunk_terms(cfg: Config, runs: tuple[str, str, int]) -> list[MemoryTerm]:
    """What training and evaluating a chunk of `runs` runs holds on train.device (the
    phase DEVICE_PHASES names): its temporaries, each a product of its runs."""
    data, model = cfg.data, cfg.model
    size = ("bytes", "", DTYPE_BYTES[cfg.train.dtype])
    train_n, _, heldout_n = data.split
    steps = ("steps", "data.steps", data.steps)
    heads = interface.pooling_heads(model)
    layer = interface.layer_values(model)
    return [
        MemoryTerm(
            "training",
            (
                runs,
                ("train examples", "data.split", train_n),
                steps,
                ("values", "", 4 + 2 * heads),
                size,
            ),
            phase="training",
        ),
        MemoryTerm(
            "step ablation",
            (
                runs,
                ("held-out", "data.split", heldout_n),
                ("masks", "data.steps", data.steps),
                steps,
                ("values", "", 1 + heads),
                size,
            ),
            phase="training",
        ),
        MemoryTerm(
            "the window layer",
            (
                runs,
                ("examples", "data.split", train_n + heldout_n),
                steps,
                ("values", kind_key(model), layer and 8 + layer // 4),
                size,
            ),
            phase="training",
        ),
    ]


def run_bytes(cfg: Config) -> int:
    """What one run of a chunk holds on train.device: the bytes that size a GPU's chunks."""
    return sum(term.bytes for term in chunk_terms(cfg, ("runs", "", 1)))


def chunk_runs(cfg: Config, seeds: int, sets: int = 1) -> int:
    """Runs per chunk of the study's machinery on `seeds` seeds of each of `sets`
    training sets: study.chunk on the CPU, as many as the GPU's memory holds on cuda."""
    return min(max(1, seeds), study_chunk(cfg, sets * seeds, run_bytes(cfg)))


def study_terms(cfg: Config, seeds: int, seeds_key: str, sets: int = 1) -> list[MemoryTerm]:
    """The study's machinery (pipeline/analysis/seed_study.py) on `seeds` seeds of each of
    `sets` training sets, their chunks sharing our threads. Training runs in pieces of
    a chunk (`device.training_piece`), fewer runs in flight than the chunks'."""
    data, model = cfg.data, cfg.model
    size = ("bytes", "", DTYPE_BYTES[cfg.train.dtype])
    train_n, _, heldout_n = data.split
    heads = interface.pooling_heads(model)
    chunk = chunk_runs(cfg, seeds, sets)
    in_flight = min(sets * seeds, chunk * workers(sets * math.ceil(seeds / chunk)))
    runs = ("runs", "study.chunk" if cfg.study.chunk <= seeds else seeds_key, in_flight)
    per_run = interface.parameter_count(model, data.steps)
    sizes = {"model.d_k": model.d_k, "model.d_v": model.d_v, "data.steps": data.steps}
    if heads > 1:
        sizes["model.heads"] = heads
    size_key = max(sizes, key=sizes.__getitem__)  # what a run's parameter count grows with
    # Per-example values the study keeps per held-out example: each declared metric on
    # the held-out split, the kind's own (up to two per head), and 3 more that the
    # measured peaks ask for (benchmarks/bench_memory.py).
    kept = len(measures.on_split("heldout")) + 3 + 2 * heads
    return [
        MemoryTerm(
            "the parameters",
            # A batch's init as Python floats, then every run's trained values.
            (
                ("parameters per run", size_key, per_run),
                ("runs", seeds_key, in_flight + sets * seeds),
                ("bytes", "", PYTHON_FLOAT_BYTES),
            ),
        ),
        *chunk_terms(cfg, runs),
        MemoryTerm(
            "the per-example values",
            (
                ("seeds", seeds_key, sets * seeds),
                ("values", "data.split", heldout_n * kept + train_n),
                size,
                ("copies", "", 2),
            ),
        ),
        MemoryTerm(
            "the bootstrap",
            (
                ("bootstrap", "study.bootstrap", cfg.study.bootstrap),
                ("draws", seeds_key, seeds + data.sequences),
                ("bytes", "", 24),
            ),
        ),
    ]
