"""The erasure stage's settings (params.yaml's `erasure:` group), their ranges and checks."""

from __future__ import annotations

from dataclasses import dataclass, field

from pipeline.config.intervals import Range, at_least, check

PATHS = {"erasure": "reports/erasure"}  # paths.erasure: metrics.json and seeds.csv
FOLDERS = ("erasure",)  # the paths that are folders


@dataclass
class Settings:
    """The field's erasure (Serrano & Smith 2019) and disagreement (Krishna et al. 2024)
    tests (docs/field.md): the lesson's runs and the study's first `seeds` runs (every
    run of a smaller study)."""

    seeds: int = 32  # 1000 for every study run (docs/field.md)
    order_seed: int = 0  # the random ranking: default_rng([order_seed, run seed])
    top_k: list[int] = field(default_factory=lambda: [1, 3])  # the agreement metrics' k


RANGES = {"seeds": at_least(2), "top_k": Range(1, integer=True, each="k")}
RELATIVE: dict[str, str] = {}


def check_settings(cfg) -> None:
    """The agreement's k at top-k: at least one (one above data.steps counts every step)."""
    check(cfg.erasure.top_k != [], "erasure.top_k", "must list at least one k", [])
