"""The seed study: the run-to-run gap as a distribution over many init seeds.

Runs 1..study.seeds each start from stream(data.seed + k), exactly as
train.seeds does, and train on the lesson's data with the model/train
settings, study.chunk seeds at a time. Every per-seed number of the lesson
(docs/lesson.md) is kept per seed; the summary says how they spread, how often two
seeds differ by at least the lesson's gap, and where the lesson's seeds
(train.seeds) rank. A study may run in shards (pipeline/analysis/study_shards.py).
The DVC stage is pipeline/experiments/study/stage.py, the Hydra app pipeline/study.py.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import pandas as pd
import torch
from tqdm import tqdm

from pipeline.analysis import epochs, metrics, stats
from pipeline.config import (
    Config,
    shard_of,
)
from pipeline.core import measures, ties
from pipeline.core.errors import ConfigError, DivergenceError
from pipeline.memory.device import pieces, training_piece
from pipeline.memory.study import chunk_runs
from pipeline.models import frames, interface
from pipeline.models.parameters import Params, to_flat
from pipeline.models.threads import available, run_jobs, workers
from pipeline.models.train import (
    History,
    device_and_dtype,
    finite_runs,
    joined,
    runs_together,
    train,
)

NAMED_DIVERGED = 20  # seeds listed in a divergence error; the count is always given
# A trained chunk: its diverged seeds, else its flat parameters, per-example values and
# (the study's dynamics) per-epoch values.
ChunkResult = tuple[list[int], torch.Tensor, dict[str, torch.Tensor], dict[str, torch.Tensor]]


@dataclass(frozen=True)
class SeedRuns:
    """Trained runs and their per-example values (metrics.example_values), on the CPU."""

    seeds: list[int]
    params: torch.Tensor  # (S, P) in init order
    values: dict[str, torch.Tensor]  # name -> (S, N)
    # name -> (epochs + 1, S): analysis/epochs.py's per-epoch numbers, where asked
    epochs: dict[str, torch.Tensor] = field(default_factory=dict)


def train_seeds(
    cfg: Config,
    frame: pd.DataFrame,
    seeds: list[int],
    progress: bool = False,
    heldout_only: bool = False,
    dynamics: bool = False,
) -> SeedRuns:
    """Train and evaluate `seeds`, cfg.study.chunk at a time.

    A chunk's runs do not interact, so the chunk size only bounds the memory
    (numbers agree to float64 rounding). The chunks run on threads of our own, each
    on one torch thread (pipeline/models/threads.py): a chunk's numbers are those of
    OMP_NUM_THREADS=1, however many run at once. Seeds that diverge are all named.
    With `heldout_only`, the values are held-out accuracy alone (the grid's shuffled
    control needs no more, and the ablations are most of an evaluation's time). With
    `dynamics`, every epoch is measured too (`SeedRuns.epochs`: the seed study's).
    """
    return train_sets(cfg, [(frame, heldout_only)], seeds, progress, dynamics)[0]


def train_sets(
    cfg: Config,
    sets: list[tuple[pd.DataFrame, bool]],
    seeds: list[int],
    progress: bool = False,
    dynamics: bool = False,
) -> list[SeedRuns]:
    """`train_seeds` on each (frame, heldout_only) of `sets` (the grid's cell and its
    shuffled control share the threads).

    The chunks (`memory.chunk_runs`: study.chunk on the CPU, what the GPU holds on
    cuda) are evaluated one job each; their training runs first, on the CPU in pieces
    that give every thread of ours work (`memory.device.training_piece`: 1000 seeds on
    16 threads are 16 jobs, not 4), on cuda a chunk at once. A piece trains each run
    to the bits its chunk would (its runs never meet, the kind's blocks stay whole),
    so the grouping moves no byte.
    """
    device, dtype = device_and_dtype(cfg.train)
    size = chunk_runs(cfg, len(seeds), len(sets))
    chunks = [seeds[start : start + size] for start in range(0, len(seeds), size)]
    tensors = [
        (
            frames.split_tensors(cfg, frame, "train", device, dtype)[:2],
            frames.split_tensors(cfg, frame, "heldout", device, dtype),
            heldout_only,
        )
        for frame, heldout_only in sets
    ]
    together = runs_together(cfg.model, *tensors[0][0])
    piece = training_piece(size, len(sets) * len(seeds), available(), together, device)
    # Every set's chunks in order; each chunk's pieces in order.
    work = [(chunk, data) for data in tensors for chunk in chunks]
    with tqdm(total=len(work), desc="study", unit="chunk", disable=not progress) as bar:
        jobs = [
            partial(train_runs, cfg, part, data[0], dynamics)
            for c, data in work
            for part in pieces(c, piece)
        ]
        trained = iter(run_jobs(jobs, workers(len(jobs))))
        joined = [joined_runs([next(trained) for _ in pieces(c, piece)]) for c, _ in work]

        def evaluate(chunk: list[int], data, runs: tuple[Params, list[bool], History]):
            result = evaluate_chunk(cfg, chunk, *runs, *data)
            bar.update()
            return result

        jobs = [
            partial(evaluate, c, data, runs) for (c, data), runs in zip(work, joined, strict=True)
        ]
        results = run_jobs(jobs, workers(len(jobs)))
    diverged = sorted({seed for chunk_diverged, *_ in results for seed in chunk_diverged})
    if diverged:
        named = ", ".join(map(str, diverged[:NAMED_DIVERGED]))
        more = ", ..." if len(diverged) > NAMED_DIVERGED else ""
        raise DivergenceError(
            f"study diverged: seeds {named}{more} ({len(diverged)} of {len(seeds)}) reached "
            f"NaN or inf (train.lr={cfg.train.lr}); lower train.lr"
        )
    per_set = [results[i : i + len(chunks)] for i in range(0, len(results), len(chunks))]
    return [
        SeedRuns(
            seeds=list(seeds),
            params=torch.cat([params for _, params, _, _ in part]),
            values={name: torch.cat([v[name] for _, _, v, _ in part]) for name in part[0][2]},
            epochs={name: torch.cat([e[name] for *_, e in part], 1) for name in part[0][3]},
        )
        for part in per_set
    ]


def train_runs(
    cfg: Config,
    seeds: list[int],
    train_split: tuple[torch.Tensor, torch.Tensor],
    trajectory: bool = False,
) -> tuple[Params, list[bool], History]:
    """`seeds` trained from their init (a piece of a chunk), whether each run's loss
    and parameters stayed finite, and the training's history (every epoch's
    parameters with `trajectory`)."""
    dtype, device = train_split[0].dtype, train_split[0].device
    initial = interface.init_params(cfg.data.seed, seeds, cfg.model, cfg.data.steps, dtype, device)
    trained, history = train(
        initial,
        *train_split,
        cfg.train.epochs,
        cfg.train.lr,
        check=False,
        trajectory=trajectory,
    )
    return trained, finite_runs(history.loss, trained).tolist(), history


def joined_runs(
    parts: list[tuple[Params, list[bool], History]],
) -> tuple[Params, list[bool], History]:
    """A chunk's pieces, trained, as one set of runs (`train.joined`'s blocks)."""
    params, history = joined([(params, history) for params, _, history in parts])
    return params, [ok for _, finite, _ in parts for ok in finite], history


def evaluate_chunk(
    cfg: Config,
    chunk: list[int],
    trained: Params,
    finite: list[bool],
    history: History,
    train_split: tuple[torch.Tensor, torch.Tensor],
    heldout: tuple[torch.Tensor, ...],
    heldout_only: bool,
) -> ChunkResult:
    """One chunk of `train_sets`, trained: its diverged seeds, else its parameters
    (S, P), per-example values and (where training kept them) per-epoch values on
    the CPU."""
    diverged = [seed for seed, ok in zip(chunk, finite, strict=True) if not ok]
    if diverged:  # the study fails; no values, only the seeds to name
        return diverged, torch.empty(0), {}, {}
    if heldout_only:
        logits, _ = interface.forward(trained, heldout[0])
        values = {"heldout_accuracy": metrics.correct(logits, heldout[1])}
    else:
        values, _, _ = metrics.example_values(trained, train_split, heldout, cfg.eval)
    per_epoch = {}
    if history.params is not None:
        every = cfg.study.agreement_every
        per_epoch = epochs.epoch_values(history, trained, train_split, heldout, every)
    return (
        [],
        to_flat(trained).cpu(),
        {name: value.cpu() for name, value in values.items()},
        {name: value.cpu() for name, value in per_epoch.items()},
    )


def seeds_table(runs: SeedRuns, cfg: Config) -> pd.DataFrame:
    """One row per seed: every per-seed number, then the trained parameters."""
    numbers = metrics.per_run(runs.values)
    table = pd.DataFrame({"seed": runs.seeds})
    for name in numbers:  # the lesson's numbers, then the variant's own
        table[name] = numbers[name].numpy()
    names = interface.flat_names(cfg.model, cfg.data.steps)
    parameters = pd.DataFrame(runs.params.numpy(), columns=names)
    return pd.concat([table, parameters], axis=1)


def heldout_accuracy(runs: SeedRuns) -> dict[int, float]:
    values = metrics.per_run(runs.values)["heldout_accuracy"].tolist()
    return dict(zip(runs.seeds, values, strict=True))


def outside_accuracy(cfg: Config, frame: pd.DataFrame) -> dict[int, float]:
    """Held-out accuracy of the train.seeds runs outside 1..study.seeds, trained here
    (train.seeds may name any seed)."""
    outside = [seed for seed in cfg.train.seeds if not 1 <= seed <= cfg.study.seeds]
    return heldout_accuracy(train_seeds(cfg, frame, outside)) if outside else {}


def lesson_accuracy(cfg: Config, runs: SeedRuns, outside: dict[int, float]) -> dict[int, float]:
    """Held-out accuracy of each train.seeds run: from the study's runs (1..study.seeds)
    or from `outside_accuracy`."""
    accuracy = heldout_accuracy(runs) | outside
    return {seed: accuracy[seed] for seed in cfg.train.seeds}


def study_seeds(study: Any) -> list[int]:
    """The seeds a run trains: 1..study.seeds, or its shard's whole chunks."""
    seeds = list(range(1, study.seeds + 1))
    shard = shard_of(study)
    if shard is None:
        return seeds
    index, count = shard
    chunks = -(-study.seeds // study.chunk)
    first, last = index * chunks // count, (index + 1) * chunks // count
    return seeds[first * study.chunk : last * study.chunk]


def summarized(runs: SeedRuns) -> list[str]:
    """The declared means (measures.means), then the variant's own numbers (sink mass,
    per-head marker mass and argmax hit), all held-out means."""
    return [*measures.means(), *metrics.variant_names(runs.values)]


def bootstrap_intervals(
    runs: SeedRuns, cfg: Config, names: list[str] | None = None
) -> dict[str, tuple[float, float]]:
    """The 95% multi-bootstrap interval of each summarized mean (or of `names`).

    Each resample draws seeds, held-out examples and training examples with
    replacement (in that order, from torch.Generator(study.bootstrap_seed)); every
    held-out number of a resample uses the same draws.
    """
    resamples = cfg.study.bootstrap
    generator = torch.Generator().manual_seed(cfg.study.bootstrap_seed)
    heldout_size = runs.values["heldout_accuracy"].shape[1]
    seed_counts = stats.resample_counts(len(runs.seeds), resamples, generator)
    heldout_counts = stats.resample_counts(heldout_size, resamples, generator)
    train_counts = None  # drawn last: without training values, the others stay the same
    on_train = [key for key in measures.means() if measures.METRICS[key].split == "train"]
    if on_train and on_train[0] in runs.values:
        train_size = runs.values[on_train[0]].shape[1]
        train_counts = stats.resample_counts(train_size, resamples, generator)
    intervals = {}
    for name in names or summarized(runs):
        examples = train_counts if name in on_train else heldout_counts
        means = stats.multi_bootstrap_means(runs.values[name], seed_counts, examples)
        intervals[name] = stats.interval(means)
    return intervals


def summarize(runs: SeedRuns, cfg: Config, lesson: dict[int, float]) -> dict:
    """summary.json: distribution of each per-seed number, pair gap, lesson seeds."""
    numbers = metrics.per_run(runs.values)
    intervals = bootstrap_intervals(runs, cfg)
    document: dict = {"seeds": len(runs.seeds)}
    for name in summarized(runs):
        low, high = intervals[name]
        document[name] = {**stats.describe(numbers[name]), "ci95_low": low, "ci95_high": high}
    heldout = numbers["heldout_accuracy"]
    above_half = ties.above(numbers["marker_mass"], 0.5).to(torch.float64).mean()
    document["share_marker_mass_above_half"] = float(above_half)
    observed = metrics.across_seeds(list(lesson.values()))["seed_gap"]
    document["pair_gap"] = stats.pair_gap(heldout, observed)
    document["lesson_seeds"] = {
        str(seed): {
            "heldout_accuracy": accuracy,
            "percentile": stats.share_strictly_below(heldout, accuracy),
        }
        for seed, accuracy in lesson.items()
    }
    return document


def run(cfg: Config, frame: pd.DataFrame, progress: bool = False) -> tuple[pd.DataFrame, dict]:
    """The whole study: (one row per seed, summary.json)."""
    return outcome(cfg, frame, study_runs(cfg, frame, progress))


def study_runs(
    cfg: Config, frame: pd.DataFrame, progress: bool = False, dynamics: bool = False
) -> SeedRuns:
    """Runs 1..study.seeds trained and evaluated (every epoch too, with `dynamics`)."""
    if cfg.study.shard is not None:
        raise ConfigError(
            f"invalid config value study.shard={cfg.study.shard!r}: a shard has no summary of "
            "its own; shard with `python -m pipeline.study -m study.shard=...`, join with "
            "`python -m pipeline merge_study`"
        )
    return train_seeds(cfg, frame, study_seeds(cfg.study), progress, dynamics=dynamics)


def outcome(cfg: Config, frame: pd.DataFrame, runs: SeedRuns) -> tuple[pd.DataFrame, dict]:
    """(one row per seed, summary.json) of the study's trained runs."""
    lesson = lesson_accuracy(cfg, runs, outside_accuracy(cfg, frame))
    return seeds_table(runs, cfg), summarize(runs, cfg, lesson)


def show_progress() -> bool:
    """A progress bar on a terminal; CI logs stay quiet."""
    return sys.stderr.isatty()
