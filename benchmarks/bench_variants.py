"""Wall time of every model kind (issue 12), after imports.

    python benchmarks/bench_variants.py [--seeds 1000] [--chunk 250] [--threads N] [kinds ...]

Per variant: the whole lesson in process with 2 seeds (data, training, every
metric: generate, train and evaluate as the Hydra app runs them), then `--seeds`
seeds trained and measured like the study (`seed_study.train_seeds`: 200 epochs,
float64, full batch, `--chunk` seeds at a time, every per-seed number). The lesson
trains on its hand-derived fast path, the variants through autograd.
Targets of issue 12 on 2 cores: 2 s for 2 seeds, 60 s for 1000. Each time is
printed as wall and CPU seconds (this process, all threads): on a shared machine
the CPU time says what the work costs, the wall time what it took.
"""

from __future__ import annotations

import argparse
import time

import torch

from pipeline.analysis import seed_study
from pipeline.config import compose, validate
from pipeline.core.kinds import MODEL_KINDS as KINDS
from pipeline.data import generate
from pipeline.models.interface import parameter_count
from pipeline.stages import evaluate
from pipeline.stages import generate as generate_stage
from pipeline.stages import train as train_stage


def seconds(fn) -> tuple[float, float]:
    """(wall, CPU) seconds of fn()."""
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def two_seeds(cfg) -> None:
    frame, summary = generate_stage.run(cfg)
    params, _ = train_stage.run(cfg, frame)
    evaluate.run(cfg, frame, summary, params)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("kinds", nargs="*", default=list(KINDS))
    parser.add_argument("--seeds", type=int, default=1000)
    parser.add_argument("--chunk", type=int, default=250)
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} CPU threads")
    print(f"{'':<17}{'2 seeds':>17}{f'{args.seeds} seeds':>19}")
    print(f"{'variant':<10}{'params':>7}{'wall s':>9}{'CPU s':>8}{'wall s':>11}{'CPU s':>8}")
    for kind in args.kinds:
        cfg = validate(compose([f"model={kind}", "train.device=cpu", f"study.chunk={args.chunk}"]))
        two_seeds(cfg)  # warm-up: first-call costs are not the variant's
        small = seconds(lambda cfg=cfg: two_seeds(cfg))
        frame = generate(cfg.data)
        seeds = list(range(1, args.seeds + 1))
        large = seconds(
            lambda cfg=cfg, frame=frame, seeds=seeds: seed_study.train_seeds(cfg, frame, seeds)
        )
        count = parameter_count(cfg.model, cfg.data.steps)
        print(
            f"{kind:<10}{count:>7}{small[0]:>9.2f}{small[1]:>8.2f}{large[0]:>11.1f}"
            f"{large[1]:>8.1f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
