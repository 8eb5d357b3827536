"""Wall time of every model variant (issue 12), after imports.

    python benchmarks/bench_variants.py [--seeds 1000] [--chunk 250] [kinds ...]

Per variant: the whole lesson in process with 2 seeds (data, training, every
metric: generate, train and evaluate as the Hydra app runs them), then `--seeds`
seeds trained and measured like the study (`study.train_seeds`: 200 epochs,
float64, full batch, `--chunk` seeds at a time, every per-seed number). The lesson
trains on its hand-derived fast path, the variants through autograd.
Targets of issue 12 on 2 cores: 2 s for 2 seeds, 60 s for 1000.
"""

from __future__ import annotations

import argparse
import time

import torch

from pipeline import study
from pipeline.config import KINDS, compose, validate
from pipeline.data import generate
from pipeline.stages import evaluate
from pipeline.stages import generate as generate_stage
from pipeline.stages import train as train_stage
from pipeline.variants import parameter_count


def seconds(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def two_seeds(cfg) -> None:
    frame, summary = generate_stage.run(cfg)
    params, _ = train_stage.run(cfg, frame)
    evaluate.run(cfg, frame, summary, params)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("kinds", nargs="*", default=list(KINDS))
    parser.add_argument("--seeds", type=int, default=1000)
    parser.add_argument("--chunk", type=int, default=250)
    args = parser.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} CPU threads")
    print(f"{'variant':<10}{'params':>7}{'2 seeds s':>11}{f'{args.seeds} seeds s':>14}")
    for kind in args.kinds:
        cfg = validate(compose([f"model={kind}", "train.device=cpu", f"study.chunk={args.chunk}"]))
        two_seeds(cfg)  # warm-up: first-call costs are not the variant's
        small = seconds(lambda cfg=cfg: two_seeds(cfg))
        frame = generate(cfg.data)
        seeds = list(range(1, args.seeds + 1))
        large = seconds(
            lambda cfg=cfg, frame=frame, seeds=seeds: study.train_seeds(cfg, frame, seeds)
        )
        count = parameter_count(cfg.model, cfg.data.steps)
        print(f"{kind:<10}{count:>7}{small:>11.2f}{large:>14.1f}", flush=True)


if __name__ == "__main__":
    main()
