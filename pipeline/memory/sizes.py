"""The measured sizes the estimate is built from (the process, its threads, the
heap's growth) and the runs each pass of a stage holds at once (the study's
chunks, the battery's and the debate's passes), from the kind's own factors."""

from __future__ import annotations

import math

from pipeline.config.schema import ModelConfig
from pipeline.models import interface
from pipeline.models.threads import workers

DTYPE_BYTES = {"float64": 8, "float32": 4}
PYTHON_FLOAT_BYTES = 32  # an init value is drawn as a Python float, then kept
# Measured on 2 cores (benchmarks/bench_memory.py): a stage process with torch,
# pandas, numba and matplotlib loaded peaks at 316-392 MiB before its work, up to
# 491 MiB in a fresh clone's first runs (CI); the
# threads that train or explain add their torch and numba state and the heap
# their many chunks leave behind.
PROCESS_BYTES = 480 * 2**20
LIGHT_STAGES = ("generate",)
THREADS_BYTES = 200 * 2**20
# the stages whose work does not run on our threads (every other stage's does)
UNTHREADED_STAGES = ("generate", "train", "evaluate", "report")
# The faithfulness stage runs the battery over every study seed, 16 at a time:
# glibc's heap grows over its many chunks, which the fit of one pair
# (battery_values) does not see (measured on one thread, benchmarks/bench_memory.py:
# window 12 at 2000 seeds peaked at 3853 MiB, 1.06x the fit with the fixed part;
# the lesson at 1000 at 725 to 752 MiB, multihead at 250 at 560).
MANY_CHUNKS_HEAP = 1.3
# A grid cell's battery serves its large blocks from mappings of their own
# (`processes.map_large_blocks`), so it holds no fragmented heap: on 2 cores, one
# thread, its cells peaked at 0.6 to 0.75 of what the heap-mode fit says above the
# process (lesson 503 MiB, multihead4 647-671, window2 786-791, window12 1853).
MAPPED_BATTERY = 0.6
# Runs per batch of the faithfulness battery (pipeline/analysis/faithfulness.py's
# SEED_CHUNK is this one). IG's (n_steps, runs, N, T, C) tensors are the largest:
# 16 runs of the lesson (N = 180, T = 12) keep them near 28 MB in float64; larger
# chunks were slower per run on 1-2 CPU threads (memory traffic), smaller ones add
# per-call overhead.
BATTERY_RUNS = 16
# Runs per pass of the debate's adversary and permutations (pipeline/experiments/debate/cell.py's
# RUN_CHUNK is this one): their (runs, N, candidates or orders, T) tensors stay near
# 60 MB in float64 at the lesson's sizes. Measured on one thread: the lesson's cell
# peaked at 457 MiB, window3's at 575.
DEBATE_RUNS = 25


def candidate_count(slots: int, heads: int) -> int:
    """The exact adversary's candidates per example (pipeline/experiments/debate/adversary.py): the
    slots^heads vertex combinations, and for each head, each of its slots(slots - 1)
    / 2 edges, each combination of the other heads' vertices and both faces of the
    band, a crossing."""
    return slots**heads + heads * slots ** (heads - 1) * slots * (slots - 1)


def pooling_slots(cfg: ModelConfig, steps: int) -> int:
    """K: the slots of each head's pooling softmax, the steps and a sink's slot."""
    return steps + int(interface.sink_slot(cfg))


def adversary_pass(cfg: ModelConfig, steps: int, runs: int, examples: int) -> tuple[int, int]:
    """Runs and examples per pass of the exact adversary: DEBATE_RUNS runs of every
    example for the lesson's 12 steps and one head, fewer as its candidates per
    example grow (3312 for two heads: one run; 933k for four: one example)."""
    heads, slots = interface.pooling_heads(cfg), pooling_slots(cfg, steps)
    per_example = candidate_count(slots, heads) * slots
    budget = DEBATE_RUNS * candidate_count(12, 1) * 12  # per example of every run
    if per_example <= budget:
        return max(1, min(runs, budget // per_example)), examples
    return 1, max(1, min(examples, budget * examples // per_example))


def at_once(chunk: int, runs: int) -> int:
    """Runs in flight when `runs` go `chunk` at a time, one chunk per thread of ours."""
    return min(runs, chunk * workers(math.ceil(runs / chunk)))


def battery_values(model: ModelConfig) -> tuple[int, int]:
    """Per (run, held-out example, step) values the faithfulness battery holds at once:
    per step of integrated gradients' path through the model, and once (the removal
    curves and the other explainers). Fitted to peaks measured at ig_steps 10 to 200
    on the lesson, multihead with 2 and 4 heads, window 2, 3 and 12: the fit stays
    at or above every stage's measured peak (the faithfulness stage's by 12%)."""
    heads, layer = interface.pooling_heads(model), interface.layer_values(model)
    return 16 + 3 * (heads - 1) + layer, 400 + 250 * (heads - 1) + 45 * layer


def kind_key(model: ModelConfig) -> str:
    """The config key that sizes a kind's per-step values: its heads or its window."""
    if interface.pooling_heads(model) > 1:
        return "model.heads"
    return "model.window" if interface.layer_values(model) else ""
