"""Seconds and peak GPU memory of training and evaluating many seeds on one CUDA device.

    python benchmarks/bench_gpu.py

What is timed is the seed study's work per seed (pipeline.analysis.seed_study.train_seeds:
200 epochs of training, then every per-seed metric on the held-out set), float64,
for 10^3, 10^5 and 10^6 seeds of the lesson and 10^3 seeds of each variant. The
first case also warms CUDA up and is timed again. scripts/gpu_check.sh runs this.
"""

from __future__ import annotations

import time

import torch

from pipeline import data
from pipeline.analysis import seed_study
from pipeline.config import compose, validate

CASES = [
    ("lesson", 1_000),
    ("lesson", 1_000),
    ("lesson", 100_000),
    ("lesson", 1_000_000),
    ("sink", 1_000),
    ("multihead", 1_000),
    ("posenc", 1_000),
    ("window", 1_000),
]
CHUNK = 5_000  # seeds trained at once: the largest chunk the config's memory check allows


def main() -> None:
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
    print(f"{'model':>10} {'seeds':>9} {'seconds':>8} {'seeds/s':>9} {'peak GPU MiB':>13}")
    for kind, seeds in CASES:
        # The config's memory check bounds a whole study on the CPU (its bootstrap and
        # every per-example number): here only training and the per-seed numbers run,
        # so the seeds are passed explicitly.
        chunk = min(seeds, CHUNK)
        overrides = [f"model={kind}", "train.device=cuda"]
        cfg = validate(compose([*overrides, f"study.seeds={chunk}", f"study.chunk={chunk}"]))
        frame = data.generate(cfg.data)
        torch.cuda.reset_peak_memory_stats()
        torch.cuda.synchronize()
        start = time.perf_counter()
        seed_study.train_seeds(cfg, frame, list(range(1, seeds + 1)))
        torch.cuda.synchronize()
        seconds = time.perf_counter() - start
        peak = torch.cuda.max_memory_allocated() / 2**20
        print(f"{kind:>10} {seeds:>9} {seconds:>8.2f} {seeds / seconds:>9.0f} {peak:>13.0f}")


if __name__ == "__main__":
    main()
