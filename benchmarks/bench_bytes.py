"""Residual risk of the written precision: how often does moving every trained
parameter by one ulp, before it is settled, change a committed output?

    python benchmarks/bench_bytes.py [--trials 2000] [--study-trials 50]

Another CPU or kernel path moves what training computes in its last bits; the
pipeline settles the parameters at 8 decimals (pipeline/core/precision.py) and writes
every value at 8 decimals, so such a move reaches an output only when a value sits
within a few ulp of a rounding boundary. This counts, over trials, each with every
parameter moved one ulp up or down at random: the lesson's parameters file,
metrics.json and steps.csv (train + evaluate; a control shows that every trial
moved the parameters' bits), and the 1000-seed study's seeds
and parameters tables and summary. Training runs once; each trial evaluates again.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time

import torch

from pipeline import data
from pipeline.analysis import seed_study
from pipeline.config import compose, validate
from pipeline.core import precision
from pipeline.core.files import parquet_bytes
from pipeline.models import frames, interface
from pipeline.models import train as training
from pipeline.models.parameters import to_flat
from pipeline.stages import evaluate


def one_ulp(tensor: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Every entry moved to its neighbouring float, up or down at random."""
    up = torch.rand(tensor.shape, generator=generator, dtype=torch.float64) < 0.5
    toward = torch.where(up, torch.inf, -torch.inf).to(tensor.dtype)
    return torch.nextafter(tensor, toward)


def digest(payload: bytes) -> str:
    return hashlib.sha256(payload).hexdigest()


def unsettled_training():
    """train() without its settle: the parameters as gradient descent leaves them."""
    training.settle = lambda tensor: tensor


def lesson_outputs(cfg, frame, summary, params) -> dict[str, str]:
    settled = params.map(precision.settle)
    table = frames.params_to_frame(settled, cfg.train.seeds, cfg.model, cfg.data.steps)
    document, steps = evaluate.run(cfg, frame, summary, settled)
    return {
        "control: the unsettled parameters' bits": digest(to_flat(params).numpy().tobytes()),
        "models/parameters.parquet": digest(parquet_bytes(table)),
        "reports/metrics.json": digest(json.dumps(precision.rounded(document)).encode()),
        "reports/steps.csv": digest(precision.rounded_frame(steps).to_csv().encode()),
    }


def study_outputs(cfg, frame) -> dict[str, str]:
    table, summary = seed_study.run(cfg, frame)
    columns = ["seed", *interface.flat_names(cfg.model, cfg.data.steps)]
    return {
        "reports/study/seeds.parquet": digest(parquet_bytes(table)),
        "reports/study/params.parquet": digest(parquet_bytes(table[columns])),
        "reports/study/summary.json": digest(json.dumps(precision.rounded(summary)).encode()),
    }


def count_changes(baseline: dict, trials: list[dict]) -> dict[str, int]:
    return {name: sum(trial[name] != value for trial in trials) for name, value in baseline.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=2000)
    parser.add_argument("--study-trials", type=int, default=50)
    args = parser.parse_args()
    cfg = validate(compose())
    frame = data.generate(cfg.data)
    summary = data.summarize(frame, cfg.data)
    unsettled_training()

    from pipeline.stages import train as train_stage

    raw, _ = train_stage.run(cfg, frame)
    generator = torch.Generator().manual_seed(0)
    baseline = lesson_outputs(cfg, frame, summary, raw)
    started = time.perf_counter()
    trials = [
        lesson_outputs(cfg, frame, summary, raw.map(lambda t: one_ulp(t, generator)))
        for _ in range(args.trials)
    ]
    lesson_seconds = time.perf_counter() - started

    # The study: train every chunk once, then hand each trial's moved parameters
    # back to the study's evaluation through its call of train().
    cached: dict[tuple, tuple] = {}
    real_train = seed_study.train
    move = {"on": False}

    def train_once(params, *rest, **options):
        key = tuple(params.named["q"].reshape(-1)[:8].tolist())  # the chunk's init
        if key not in cached:
            cached[key] = real_train(params, *rest, **options)
        trained, history = cached[key]
        if move["on"]:
            trained = trained.map(lambda t: one_ulp(t, generator))
        return trained.map(precision.settle), history

    seed_study.train = train_once
    study_baseline = study_outputs(cfg, frame)
    move["on"] = True
    started = time.perf_counter()
    study_trials = [study_outputs(cfg, frame) for _ in range(args.study_trials)]
    study_seconds = time.perf_counter() - started

    parameters = interface.parameter_count(cfg.model, cfg.data.steps)
    print("one-ulp moves of every trained parameter before it is settled (8 decimals)")
    print(
        f"lesson: {args.trials} trials x {len(cfg.train.seeds) * parameters} parameters "
        f"({lesson_seconds:.0f} s)"
    )
    for name, changed in count_changes(baseline, trials).items():
        print(f"  {name}: changed in {changed} of {args.trials} trials")
    print(
        f"study: {args.study_trials} trials x {cfg.study.seeds * parameters} parameters "
        f"({study_seconds:.0f} s)"
    )
    for name, changed in count_changes(study_baseline, study_trials).items():
        print(f"  {name}: changed in {changed} of {args.study_trials} trials")


if __name__ == "__main__":
    main()
