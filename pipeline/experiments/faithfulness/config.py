"""The faithfulness stage's settings (params.yaml's `faithfulness:` group, the battery's:
pipeline/config/battery.py, which every caller of the battery reads), their ranges."""

from __future__ import annotations

from pipeline.config.battery import FaithfulnessConfig
from pipeline.config.intervals import MAX_SEED, POSITIVE, at_least, check

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
    """The re-drawn runs' offset: run k of the randomisation test draws from
    stream((data.seed + offset + k) mod 2**32), never a study run's."""
    redraws = min(cfg.faithfulness.sanity_seeds, cfg.study.seeds)
    offset = cfg.faithfulness.randomisation_offset
    check(
        cfg.study.seeds <= offset <= MAX_SEED - redraws,
        "faithfulness.randomisation_offset",
        f"must be an integer in {cfg.study.seeds}..{MAX_SEED - redraws} (study.seeds to "
        f"2**32-1 - faithfulness.sanity_seeds): a re-drawn run k draws from "
        "stream((data.seed + offset + k) mod 2**32), never a study run's",
        offset,
    )
