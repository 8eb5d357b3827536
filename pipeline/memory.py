"""How much memory each stage of a configuration needs at most, refused before
anything runs.

Every stage is a process of its own (DVC runs them one after another), so the
check is the largest stage's estimate: the interpreter with its libraries, plus
the dominant allocations of that stage, each a product of config sizes. The grid's
cells are stages too (grid@<cell>): the study's machinery on grid.seeds seeds (and
the shuffled control of an order task beside them), then the faithfulness battery
on the first grid.faithfulness_seeds. A stage's estimate is what it keeps
throughout plus its largest phase (training, or the battery), kept at or above
the measured peak and within twice it (benchmarks/bench_memory.py,
tests/test_memory.py).

The kind's own factors (its heads, a layer before the pooling, its parameter
count) come from its module (pipeline/models/interface.py), so the check sits above
both the config and the models, and imports torch: the stages that compute call
`check_memory` after loading their config; the generate stage and the commands
that compute nothing do not. The generate stage's own estimate (its process and the
sequences) is torch-free and checked with the config (pipeline/config/bounds.py).
"""

from __future__ import annotations

import dataclasses
import math

from pipeline import tasks
from pipeline.analysis import registry
from pipeline.config.bounds import (
    LIGHT_PROCESS_BYTES,
    MemoryTerm,
    memory_refusal,
    sequences_term,
)
from pipeline.config.cells import cell_config
from pipeline.config.schema import MAX_BYTES, Config, ModelConfig
from pipeline.errors import ConfigError
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
TRAINING_STAGES = ("study", "faithfulness", "roar")  # stages whose work runs on our threads
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
# Runs per pass of the debate's adversary and permutations (pipeline/debate/cell.py's
# RUN_CHUNK is this one): their (runs, N, candidates or orders, T) tensors stay near
# 60 MB in float64 at the lesson's sizes. Measured on one thread: the lesson's cell
# peaked at 457 MiB, window3's at 575.
DEBATE_RUNS = 25


def candidate_count(slots: int, heads: int) -> int:
    """The exact adversary's candidates per example (pipeline/debate/adversary.py): the
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


def _kind_key(model: ModelConfig) -> str:
    """The config key that sizes a kind's per-step values: its heads or its window."""
    if interface.pooling_heads(model) > 1:
        return "model.heads"
    return "model.window" if interface.layer_values(model) else ""


def study_terms(cfg: Config, seeds: int, seeds_key: str, sets: int = 1) -> list[MemoryTerm]:
    """The study's machinery (pipeline/analysis/seed_study.py) on `seeds` seeds of each of
    `sets` training sets, their chunks sharing our threads."""
    data, model = cfg.data, cfg.model
    size = ("bytes", "", DTYPE_BYTES[cfg.train.dtype])
    train_n, _, heldout_n = data.split
    steps = ("steps", "data.steps", data.steps)
    heldout = ("held-out", "data.split", heldout_n)
    heads = interface.pooling_heads(model)
    chunk = min(cfg.study.chunk, seeds)
    in_flight = min(sets * seeds, chunk * workers(sets * math.ceil(seeds / chunk)))
    runs = ("runs", "study.chunk" if cfg.study.chunk <= seeds else seeds_key, in_flight)
    per_run = interface.parameter_count(model, data.steps)
    sizes = {"model.d_k": model.d_k, "model.d_v": model.d_v, "data.steps": data.steps}
    if heads > 1:
        sizes["model.heads"] = heads
    size_key = max(sizes, key=sizes.__getitem__)  # what a run's parameter count grows with
    layer = interface.layer_values(model)
    # Per-example values the study keeps per held-out example: each declared metric on
    # the held-out split, the kind's own (up to two per head), and 3 more that the
    # measured peaks ask for (benchmarks/bench_memory.py).
    kept = len(registry.on_split("heldout")) + 3 + 2 * heads
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
                heldout,
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
                ("values", _kind_key(model), layer and 8 + layer // 4),
                size,
            ),
            phase="training",
        ),
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


def battery_terms(cfg: Config, runs: int, runs_key: str, heap: float = 1.0) -> list[MemoryTerm]:
    """The faithfulness battery (pipeline/analysis/faithfulness.py) on `runs` runs:
    integrated gradients' path, and the rest beside it. `heap` scales the fit, which
    was made with the battery's blocks in the heap: above 1 for what many chunks in
    turn leave there, below 1 where the blocks are mapped (MAPPED_BATTERY). The
    battery writes each chunk's results into tables allocated before the first, so
    no chunk's survivors pin the heap behind it (on one thread, the faithfulness
    stage's 63 chunks peaked at 725 to 752 MiB; keeping each chunk's own results,
    at 1057 to 2103 MiB)."""
    per_ig_step, once = (math.ceil(values * heap) for values in battery_values(cfg.model))
    in_flight = at_once(BATTERY_RUNS, runs)
    shared = (
        ("runs", runs_key, in_flight),
        ("held-out", "data.split", cfg.data.split[2]),
        ("steps", "data.steps", cfg.data.steps),
    )
    size = ("bytes", "", DTYPE_BYTES[cfg.train.dtype])
    ig_steps = ("ig_steps", "faithfulness.ig_steps", cfg.faithfulness.ig_steps)
    key = _kind_key(cfg.model)
    return [
        MemoryTerm(
            "integrated gradients",
            (*shared, ig_steps, ("values", key, per_ig_step), size),
            phase="battery",
        ),
        MemoryTerm("the battery's curves", (*shared, ("values", key, once), size), phase="battery"),
    ]


def per_example_scores_term(cfg: Config, runs: int, runs_key: str, phase: str = "") -> MemoryTerm:
    """The battery's values per (run, held-out example), every row and metric, kept for
    the paired comparisons (pipeline/analysis/paired.py): at most every declared
    explainer, one row per head, and the random order."""
    rows = len(registry.EXPLAINERS) + interface.pooling_heads(cfg.model) + 1
    return MemoryTerm(
        "the battery's per-example scores",
        (
            ("runs", runs_key, runs),
            ("held-out", "data.split", cfg.data.split[2]),
            ("rows", "", rows),
            ("metrics", "", len(registry.SCORES)),
            ("bytes", "", 8),
        ),
        phase,
    )


def sanity_terms(cfg: Config, runs: int, runs_key: str) -> list[MemoryTerm]:
    """The sanity checks (pipeline/analysis/sanity.py) on `runs` runs: the trained and
    one randomised model's scores of every row, and the label-randomised models'
    training (the study's machinery); their explain passes are the battery's chunks,
    counted there."""
    rows = len(registry.EXPLAINERS) + interface.pooling_heads(cfg.model) + 1
    scores = MemoryTerm(
        "the sanity checks' scores",
        (
            ("runs", runs_key, runs),
            ("held-out", "data.split", cfg.data.split[2]),
            ("steps", "data.steps", cfg.data.steps),
            ("rows", "", rows),
            ("models", "", 2),
            ("bytes", "", 8),
        ),
        phase="sanity",
    )
    # Trained before the battery (a grid cell) or after it, never beside it: after a
    # cell's mapped battery, training in the heap peaked rise-window3's cell at 1307
    # MiB, before it at 874 (benchmarks/bench_memory.py, one thread).
    training = [
        dataclasses.replace(term, phase="labels")
        for term in study_terms(cfg, runs, runs_key)
        if term.phase == "training"
    ]
    return [scores, *training]


def robustness_term(cfg: Config) -> MemoryTerm:
    """captum's sensitivity_max and infidelity (pipeline/analysis/robustness.py) on one
    run at a time: integrated gradients' path over every perturbed copy of the
    held-out sequences, with its gradients and captum's copies of it."""
    faith = cfg.faithfulness
    return MemoryTerm(
        "the robustness metrics",
        (
            ("perturbations", "faithfulness.robustness_samples", faith.robustness_samples),
            ("ig_steps", "faithfulness.ig_steps", faith.ig_steps),
            ("held-out", "data.split", cfg.data.split[2]),
            ("steps", "data.steps", cfg.data.steps),
            ("channels", "", 2),
            ("copies", "", 4),
            ("bytes", "", 8),
        ),
        phase="robustness",
    )


def grid_cell_terms(cfg: Config, task: str, variant: str) -> list[MemoryTerm]:
    """A grid cell (pipeline/analysis/grid.py): the study on grid.seeds seeds, beside
    it the shuffled control of an order task, then the battery."""
    cell = cell_config(cfg, task, variant)
    sets = 2 if getattr(tasks.task_module(task), "ORDERED", False) else 1
    battery_runs = min(cfg.grid.faithfulness_seeds, cfg.grid.seeds)
    key = (
        "grid.seeds" if cfg.grid.seeds <= cfg.grid.faithfulness_seeds else "grid.faithfulness_seeds"
    )
    return [
        sequences_term(cell),
        *study_terms(cell, cfg.grid.seeds, "grid.seeds", sets),
        *battery_terms(cell, battery_runs, key, MAPPED_BATTERY),
        per_example_scores_term(cell, battery_runs, key, phase="battery"),
        *sanity_terms(cell, battery_runs, key),
    ]


def debate_cell_terms(cfg: Config, task: str, variant: str) -> list[MemoryTerm]:
    """A debate cell (pipeline/debate/cell.py): the study's machinery on debate.seeds
    seeds, then the tests one after the other, their large blocks mapped: the
    adversary's candidate distributions and the permutations' shuffled weights (a
    chunk of runs at a time), and the battery behind deception's hit@1."""
    cell = cell_config(cfg, task, variant)
    steps = cell.data.steps
    runs = min(DEBATE_RUNS, cfg.debate.seeds)
    heads, slots = interface.pooling_heads(cell.model), pooling_slots(cell.model, steps)
    adversary_runs, adversary_examples = adversary_pass(
        cell.model, steps, cfg.debate.seeds, cell.data.split[2]
    )
    size = ("bytes", "", DTYPE_BYTES[cell.train.dtype])
    return [
        sequences_term(cell),
        *study_terms(cell, cfg.debate.seeds, "debate.seeds"),
        MemoryTerm(
            "the adversary",
            (
                ("runs", "debate.seeds", adversary_runs),
                ("held-out", "data.split", adversary_examples),
                ("candidates", "data.steps", candidate_count(slots, heads)),
                ("slots", "data.steps", slots),
                size,
            ),
            phase="adversary",
        ),
        MemoryTerm(
            "the permutations",
            (
                ("runs", "debate.seeds", runs),
                ("held-out", "data.split", cell.data.split[2]),
                ("orders", "debate.permutations", cfg.debate.permutations),
                ("heads", "model.heads", heads),
                ("steps", "data.steps", steps),
                size,
            ),
            phase="permutations",
        ),
        # Deception's hit@1: the battery's explainers on every lam's runs in one pass,
        # its blocks mapped.
        *battery_terms(
            cell,
            len(cfg.debate.penalties) * min(cfg.debate.trained_seeds, cfg.debate.seeds),
            "debate.trained_seeds",
            MAPPED_BATTERY,
        ),
    ]


def roar_sets(cfg: Config) -> int:
    """The training sets remove and retrain trains at most (pipeline/field/roar.py): the
    unmodified one and one per ranking and fraction, every declared explainer's rows
    (a per-head one's per head) and the smoothed ones per lesson run, and two that read
    no model. Rankings that remove the same steps share a set, so it is often fewer."""
    heads = interface.pooling_heads(cfg.model)
    rows = sum(heads if e.per_head else 1 for e in registry.EXPLAINERS.values())
    per_run = rows + len(cfg.roar.smoothed)
    return 1 + len(cfg.roar.fractions) * (len(cfg.train.seeds) * per_run + 2)


def roar_terms(cfg: Config) -> list[MemoryTerm]:
    """Remove and retrain: the rankings of the train.seeds runs (the battery's explainers),
    the modified sequences, the study's training of roar.seeds runs per set, and each
    set's held-out correct (its training keeps held-out accuracy alone)."""
    sets = ("sets", "roar.fractions", roar_sets(cfg))
    train_n, _, heldout_n = cfg.data.split
    parameters, training = study_terms(cfg, cfg.roar.seeds, "roar.seeds", sets[2])[:2]
    size = ("bytes", "", DTYPE_BYTES[cfg.train.dtype])
    seeds, heldout = ("seeds", "roar.seeds", cfg.roar.seeds), ("held-out", "data.split", heldout_n)
    return [
        sequences_term(cfg),
        parameters,
        training,
        MemoryTerm(
            "the modified sequences",
            (
                sets,
                ("sequences", "data.split", train_n + heldout_n),
                ("columns", "data.steps", cfg.data.steps + 5),
                ("bytes", "", 8),
            ),
        ),
        MemoryTerm("the per-example values", (sets, seeds, heldout, size)),
        *battery_terms(cfg, len(cfg.train.seeds), "train.seeds"),
    ]


def stage_terms(cfg: Config) -> dict[str, list[MemoryTerm]]:
    """The dominant allocations of each stage that computes (dvc.yaml's names)."""
    lesson_runs = len(cfg.train.seeds)
    lesson = study_terms(cfg, lesson_runs, "train.seeds")
    by_name = {term.what: term for term in lesson}
    study = study_terms(cfg, cfg.study.seeds, "study.seeds")
    stages = {
        "generate": [sequences_term(cfg)],
        "train": [sequences_term(cfg), by_name["the parameters"], by_name["training"]],
        "evaluate": [sequences_term(cfg), by_name["step ablation"], by_name["the window layer"]],
        "study": [sequences_term(cfg), *study],
        "faithfulness": [
            sequences_term(cfg),
            study[0],  # the study's parameters, read
            per_example_scores_term(cfg, cfg.study.seeds, "study.seeds"),
            *battery_terms(cfg, cfg.study.seeds, "study.seeds", MANY_CHUNKS_HEAP),
            *sanity_terms(
                cfg,
                min(cfg.faithfulness.sanity_seeds, cfg.study.seeds),
                "faithfulness.sanity_seeds",
            ),
            robustness_term(cfg),
        ],
        "report": [sequences_term(cfg), study[4]],  # the study's per-example table, read
        "roar": roar_terms(cfg),
    }
    for name, cell in cfg.grid.cells.items():
        stages[f"grid@{name}"] = grid_cell_terms(cfg, cell.task, cell.variant)
    for name, cell in cfg.debate.cells.items():
        stages[f"debate@{name}"] = debate_cell_terms(cfg, cell.task, cell.variant)
    return stages


def stage_bytes(stage: str, terms: list[MemoryTerm]) -> int:
    """About how much memory a stage needs at most: the process, its threads where it
    trains or explains, what it keeps throughout, and its largest phase (training,
    then the battery: a grid cell frees the one, and returns the freed heap to the
    kernel (`processes.release_freed_memory`), before the other starts)."""
    trains = stage in TRAINING_STAGES or stage.startswith(("grid@", "debate@"))
    threads = THREADS_BYTES if trains else 0
    kept = sum(term.bytes for term in terms if not term.phase)
    phases: dict[str, int] = {}
    for term in terms:
        if term.phase:
            phases[term.phase] = phases.get(term.phase, 0) + term.bytes
    process = LIGHT_PROCESS_BYTES if stage in LIGHT_STAGES else PROCESS_BYTES
    return process + threads + kept + max(phases.values(), default=0)


def stage_estimates(cfg: Config) -> dict[str, int]:
    """Each computing stage's estimated peak, in bytes."""
    return {stage: stage_bytes(stage, terms) for stage, terms in stage_terms(cfg).items()}


def estimated_bytes(cfg: Config) -> int:
    """About how much memory `cfg` needs at most: its largest stage's estimate."""
    return max(stage_estimates(cfg).values())


def _reference_terms(cfg: Config, stage: str) -> list[MemoryTerm]:
    """The same stage's terms on the defaults of the same model kind (a grid cell: the
    same task and variant at the grid's default sizes)."""
    defaults = Config(model=ModelConfig(kind=cfg.model.kind))
    if stage.startswith("grid@"):
        cell = cfg.grid.cells[stage.removeprefix("grid@")]
        return grid_cell_terms(defaults, cell.task, cell.variant)
    if stage.startswith("debate@"):
        cell = cfg.debate.cells[stage.removeprefix("debate@")]
        return debate_cell_terms(defaults, cell.task, cell.variant)
    return stage_terms(defaults)[stage]


def check_memory(cfg: Config) -> None:
    """Refuse, before anything runs, a configuration whose largest stage cannot fit
    in MAX_BYTES, naming the key of its largest allocation."""
    estimates = stage_estimates(cfg)
    stage = max(estimates, key=estimates.__getitem__)
    if estimates[stage] <= MAX_BYTES:
        return
    terms = stage_terms(cfg)[stage]
    largest = max(terms, key=lambda term: term.bytes)
    key = largest.blamed(_reference_terms(cfg, stage)[terms.index(largest)])
    raise ConfigError(memory_refusal(cfg, stage, estimates[stage], largest, key))
