"""The study stage's settings (params.yaml's `study:` group), their ranges and checks."""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.config.intervals import MAX_SEED, at_least, check, last_run
from pipeline.config.shards import shard_of

PATHS = {
    "study_seeds": "reports/study/seeds.parquet",
    "study_params": "reports/study/params.parquet",
    "study_summary": "reports/study/summary.json",
    "study_dynamics": "reports/study/dynamics.parquet",
}
FOLDERS = ()  # the paths that are folders


@dataclass
class Settings:
    """The seed study: the lesson's per-seed numbers for runs 1..seeds, each run k
    starting from stream(data.seed + k) as train.seeds does, on the lesson's data
    with the model/train settings."""

    seeds: int = 1000
    bootstrap: int = 1000  # resamples of the multi-bootstrap (seeds and held-out examples together)
    bootstrap_seed: int = 0
    chunk: int = 250  # seeds trained at once: bounds the memory; numbers agree to float64 rounding
    # the dynamics' weight-effect agreement every this many epochs (and at the end):
    # its step ablation costs a forward pass per step
    agreement_every: int = 50
    # "i/n": train only shard i of n (python -m pipeline merge_study joins them)
    shard: str | None = None


RANGES = {
    "seeds": at_least(2),
    "bootstrap": at_least(1),
    "chunk": at_least(1),
    "agreement_every": at_least(1),
}
RELATIVE: dict[str, str] = {}


def check_settings(cfg) -> None:
    """study.seeds: every run k draws from stream(data.seed + k), in range; study.shard:
    i/n over the study's chunks, or null (`shard_of`)."""
    last = last_run(cfg)
    check(
        cfg.study.seeds <= last,
        "study.seeds",
        f"must be at most {last} (= {MAX_SEED} - data.seed): run k draws from "
        f"stream(data.seed + k), and data.seed + k must stay in 0..{MAX_SEED}",
        cfg.study.seeds,
    )
    shard_of(cfg.study)
