"""The study stage's settings (params.yaml's `study:` group), their ranges and checks."""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.config.intervals import at_least
from pipeline.config.shards import shard_of

PATHS = {
    "study_seeds": "reports/study/seeds.parquet",
    "study_params": "reports/study/params.parquet",
    "study_summary": "reports/study/summary.json",
}
FOLDERS = ()  # the paths that are folders


@dataclass
class Settings:
    """The seed study: runs 1..seeds, each from stream(data.seed + k) like train.seeds."""

    seeds: int = 1000
    bootstrap: int = 1000  # multi-bootstrap resamples of the 95% intervals
    bootstrap_seed: int = 0
    chunk: int = 250  # seeds trained and evaluated at once: bounds the memory
    # "i/n": only the i-th of n shards of the seeds (python -m pipeline.study sweeps;
    # python -m pipeline merge_study joins them); null: every seed.
    shard: str | None = None


RANGES = {"seeds": at_least(2), "bootstrap": at_least(1), "chunk": at_least(1)}
RELATIVE: dict[str, str] = {}


def check_settings(cfg) -> None:
    """study.shard: i/n over the study's chunks, or null (`shard_of`)."""
    shard_of(cfg.study)
