"""The toy experiment's settings: `top_weight:` in params.yaml."""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.config.intervals import FRACTION, check

PATHS = {"top_weight": "reports/top_weight"}
FOLDERS = ("top_weight",)


@dataclass
class Settings:
    """The toy experiment (tests/toy_experiment/): each lesson run's largest weight."""

    high: float = 0.5  # a largest weight above this counts as high
    note: str = "toy"


RANGES = {"high": FRACTION}
RELATIVE: dict[str, str] = {}


def check_settings(cfg) -> None:
    check(cfg.top_weight.note != "", "top_weight.note", "must not be empty", "")
