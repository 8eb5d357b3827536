"""Seconds of the exact adversary (pipeline/analysis/adversary.py) on the lesson.

    python benchmarks/bench_adversary.py [--seeds 1000] [--chunk 100]

Trains `--seeds` runs of the default config (timed apart), then solves the exact
adversary on every held-out sequence of every run at each eps of [0.01, 0.05],
`--chunk` runs at a time, and prints the seconds and the median of the maximum JSD.
"""

from __future__ import annotations

import argparse
import time

import torch

from pipeline.analysis.adversary import runs_adversary
from pipeline.config import compose, validate
from pipeline.models import frames, interface
from pipeline.models.train import train
from pipeline.stages import generate

EPSILONS = (0.01, 0.05)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=1000)
    parser.add_argument("--chunk", type=int, default=100)
    args = parser.parse_args()
    cfg = validate(compose())
    frame, _ = generate.run(cfg)
    inputs, labels, _ = frames.split_tensors(cfg, frame, "train", "cpu", torch.float64)
    heldout = frames.split_tensors(cfg, frame, "heldout", "cpu", torch.float64)[0]
    seeds = list(range(1, args.seeds + 1))
    started = time.perf_counter()
    params = interface.init_params(cfg.data.seed, seeds, cfg.model, cfg.data.steps)
    params = train(params, inputs, labels, cfg.train.epochs, cfg.train.lr)[0]
    print(f"trained {args.seeds} runs in {time.perf_counter() - started:.1f} s")
    for eps in EPSILONS:
        started = time.perf_counter()
        maxima = [
            runs_adversary(
                params.map(lambda t, s=start: t[s : s + args.chunk]), heldout, eps
            ).max_jsd
            for start in range(0, args.seeds, args.chunk)
        ]
        seconds = time.perf_counter() - started
        median = float(torch.cat(maxima).median())
        print(
            f"eps {eps}: {args.seeds} runs x {heldout.shape[0]} held-out sequences in "
            f"{seconds:.2f} s (median max JSD {median:.4f}, torch threads "
            f"{torch.get_num_threads()})"
        )


if __name__ == "__main__":
    main()
