"""Wall time of training S seeds at once and of the whole lesson.

    python benchmarks/bench_train.py

Prints one row per (device, S): 200 epochs on the 360 training sequences,
full-batch, float64. Then the full lesson in process (data + both seeds +
every metric), after imports. GPU rows appear when CUDA is present.
"""

from __future__ import annotations

import time

import torch

from pipeline.config import Config
from pipeline.data import generate, split_frame
from pipeline.models.frames import features
from pipeline.models.interface import init_params
from pipeline.models.train import train
from pipeline.stages import evaluate
from pipeline.stages import generate as generate_stage
from pipeline.stages import train as train_stage


def seconds(fn, repeat: int = 3) -> float:
    """Best of `repeat` wall times (the machine is shared and noisy)."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - start)
    return best


def bench_training(device: str, runs: int, cfg: Config) -> float:
    frame = split_frame(generate(cfg.data), "train")
    inputs, labels, _ = features(frame, cfg.data.steps)
    inputs, labels = inputs.to(device), labels.to(device)
    seeds = list(range(1, runs + 1))
    params = init_params(cfg.data.seed, seeds, cfg.model, cfg.data.steps, device=device)
    return seconds(lambda: train(params, inputs, labels, cfg.train.epochs, cfg.train.lr))


def full_lesson(cfg: Config) -> None:
    frame, summary = generate_stage.run(cfg)
    params, _ = train_stage.run(cfg, frame)
    evaluate.run(cfg, frame, summary, params)


def main() -> None:
    cfg = Config()
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    print(f"torch {torch.__version__}, {torch.get_num_threads()} CPU threads")
    print(f"{'device':<8}{'seeds':>7}{'seconds':>10}{'seeds/s':>10}")
    for device in devices:
        for runs in (2, 100, 1000):
            wall = bench_training(device, runs, cfg)
            print(f"{device:<8}{runs:>7}{wall:>10.3f}{runs / wall:>10.1f}")
    for device in devices:
        cfg.train.device = device
        print(
            f"full lesson on {device} (data + 2 seeds + all metrics): "
            f"{seconds(lambda: full_lesson(cfg)):.3f} s"
        )


if __name__ == "__main__":
    main()
