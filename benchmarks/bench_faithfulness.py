"""Wall time of the faithfulness battery (issue 9): the lesson's 2 seeds and 1000 seeds;
the sanity checks on 100 (issue 33); rollout and flow on 1000 seeds of window.

    python benchmarks/bench_faithfulness.py [--seeds 1000] [--threads 2] [--chunk 64]

Trains the runs first (not timed), then times `faithfulness.battery` on the 180
held-out sequences, float64, CPU: every explainer (IG with its default nodes),
every metric, the random baseline. Targets: 2 seeds <= 2 s after imports (the
first call, cold, is timed too), 1000 seeds <= 60 s on 2 cores; the battery with
the sanity checks on 100 seeds <= 30 s; rollout on 1000 seeds of window <= 10 s.
Prints the lesson's per-seed table at the end.
"""

from __future__ import annotations

import argparse
import os
import time

import pandas as pd
import torch

from pipeline import data
from pipeline.analysis import explainers, faithfulness, sanity
from pipeline.config import Config, compose, validate
from pipeline.core import measures
from pipeline.models import frames, interface
from pipeline.models.parameters import Params
from pipeline.models.train import train


def trained(cfg: Config, frame: pd.DataFrame, seeds: list[int]) -> Params:
    inputs, labels, _ = frames.features(data.split_frame(frame, "train"), cfg.data.steps)
    params = interface.init_params(cfg.data.seed, seeds, cfg.model, cfg.data.steps)
    return train(params, inputs, labels, cfg.train.epochs, cfg.train.lr)[0]


def timed(fn) -> tuple[float, object]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def cpu_timed(fn) -> tuple[float, float, object]:
    """Wall and process CPU seconds: on a shared machine the CPU time shows how much
    of the wall time was this process's own work."""
    cpu = time.process_time()
    wall, result = timed(fn)
    return wall, time.process_time() - cpu, result


def print_table(document: dict) -> None:
    short = {
        "tau_loo": "tau_loo",
        "aopc_comprehensiveness": "comp",
        "aopc_sufficiency": "suff",
        "flips_to_decision": "flips",
        "hit_at_1": "hit@1",
        "marked_rank": "rank",
        "auprc": "auprc",
    }
    for seed, rows in document.items():
        print(f"\nseed {seed}")
        print(f"{'explainer':<22}" + "".join(f"{short[m]:>9}" for m in measures.SCORES))
        for row, values in rows.items():
            print(f"{row:<22}" + "".join(f"{values[m]:>9.4f}" for m in measures.SCORES))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=1000)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--chunk", type=int, default=faithfulness.SEED_CHUNK)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    cfg = Config()
    frame = data.generate(cfg.data)
    inputs, labels, marked = frames.features(data.split_frame(frame, "heldout"), cfg.data.steps)
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, "
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs, "
        f"held-out {tuple(inputs.shape)}, IG n_steps {explainers.IG_STEPS}, "
        f"seed chunk {args.chunk}"
    )

    lesson = trained(cfg, frame, [1, 2])
    cold, document = timed(
        lambda: faithfulness.battery(lesson, inputs, labels, marked, [1, 2], seed_chunk=args.chunk)
    )
    warm = min(
        timed(lambda: faithfulness.battery(lesson, inputs, labels, marked, [1, 2]))[0]
        for _ in range(3)
    )
    print(f"battery, 2 seeds: {cold:.3f} s cold (first call), {warm:.3f} s warm (best of 3)")

    seeds = list(range(1, args.seeds + 1))
    train_s, many = timed(lambda: trained(cfg, frame, seeds))
    wall, cpu, study = cpu_timed(
        lambda: faithfulness.battery(many, inputs, labels, marked, seeds, seed_chunk=args.chunk)
    )
    print(
        f"battery, {args.seeds} seeds: {wall:.3f} s wall, {cpu:.3f} s CPU "
        f"({args.seeds / wall:.1f} seeds/s)"
    )
    print(f"  (training those seeds, not part of the battery: {train_s:.3f} s)")
    gap = max(
        abs(study[seed][row][metric] - value)
        for seed in ("1", "2")
        for row, values in document[seed].items()
        for metric, value in values.items()
    )
    print(f"  seeds 1 and 2 against the 2-seed battery: max abs difference {gap:.1e}")

    first = many.map(lambda t: t[: cfg.faithfulness.sanity_seeds])
    hundred = seeds[: cfg.faithfulness.sanity_seeds]
    battery_s = timed(lambda: faithfulness.battery(first, inputs, labels, marked, hundred))[0]
    checks_s = timed(lambda: sanity.checks(cfg, frame, first, hundred, inputs))[0]
    print(
        f"battery, {len(hundred)} seeds: {battery_s:.3f} s; with the sanity checks (6 "
        f"randomised models, one trained on permuted labels): {battery_s + checks_s:.3f} s"
    )

    window = validate(compose(["model=window"])).model
    layered = interface.init_params(cfg.data.seed, seeds, window, cfg.data.steps)
    for name in ("attention_rollout", "attention_flow"):
        wall = timed(lambda name=name: explainers.EXPLAINERS[name](layered, inputs))[0]
        print(f"{name}, {args.seeds} seeds of window (init parameters): {wall:.3f} s")
    print_table(document)


if __name__ == "__main__":
    main()
