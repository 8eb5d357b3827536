"""The faithfulness stage's settings (params.yaml's `faithfulness:` group, the battery's:
pipeline/config/battery.py, which every caller of the battery reads), their ranges."""

from __future__ import annotations

from pipeline.config.battery import FaithfulnessConfig
from pipeline.config.intervals import POSITIVE, at_least

PATHS = {
    "faithfulness": "reports/faithfulness.json",
    "study_faithfulness": "reports/study/faithfulness.json",
    "study_faithfulness_seeds": "reports/study/faithfulness.parquet",
}
FOLDERS = ()  # the paths that are folders

Settings = FaithfulnessConfig

RANGES = {
    "ig_steps": at_least(1),
    "sanity_seeds": at_least(2),
    "robustness_samples": at_least(1),
    "robustness_radius": POSITIVE,
}
RELATIVE = {
    "randomisation_offset": "an integer in study.seeds..2**32-1 - faithfulness.sanity_seeds"
}


def check_settings(cfg) -> None:
    """None across keys of its own: the re-drawn runs' offset is a seed, checked with the
    seeds (pipeline/config/bounds.py), the ranges by RANGES."""
