"""The lesson's published numbers (docs/lesson.md, section 5) and how a run compares.

Shown beside a run of the lesson's configuration in report.md; the tests keep
their own copy in tests/conftest.py, so the oracle is not read back from here.
"""

from __future__ import annotations

from dataclasses import asdict

from pipeline.config import Config
from pipeline.core.kinds import EXPERIMENTS

GOLDEN = {
    "data": {
        "train_positive_rate": 0.3806,
        "heldout_positive_rate": 0.3667,
        "baseline": 0.6333,
        "any_step_above_threshold": 0.9903,
        "max_reading_at_marker": 0.0611,
        "uniform_weight": 0.0833,
    },
    "runs": {
        "1": {
            "train_accuracy": 0.9028,
            "heldout_accuracy": 0.8889,
            "marker_mass": 0.2721,
            "argmax_hit": 0.3444,
            "weight_effect_agreement": 0.5889,
            "top_weight_effect": 0.3318,
            "high_weight": 81,
            "high_weight_low_effect": 27,
        },
        "2": {
            "train_accuracy": 0.9889,
            "heldout_accuracy": 0.9944,
            "marker_mass": 0.9691,
            "argmax_hit": 1.0,
            "weight_effect_agreement": 1.0,
            "top_weight_effect": 0.4081,
            "high_weight": 180,
            "high_weight_low_effect": 43,
        },
    },
    "seed_gap": 0.1056,
    "first_weights": {
        1: "0.00 0.00 0.10 0.00 0.01 0.01 0.00 0.29 0.31 0.00 0.10 0.18",
        2: "0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.00 0.97",
    },
}
LESSON = "lesson"


def is_lesson_config(cfg: Config) -> bool:
    """True when every setting that shapes metrics.json is the lesson's, so the lesson's
    golden values apply. Tracking, output paths and the experiments' groups (which
    read the lesson's runs, never train them) change none of them."""
    mine, lesson = asdict(cfg), asdict(Config())
    ignored = {"tracking", "paths", *EXPERIMENTS}
    return all(mine[key] == lesson[key] for key in mine if key not in ignored)


def golden_mismatches(document: dict) -> list[str]:
    """Numbers that differ from the lesson's at 4 decimals (counts exactly)."""
    pairs = [(f"data {k}", document["data"][k], v) for k, v in GOLDEN["data"].items()]
    for seed, numbers in GOLDEN["runs"].items():
        run = document["runs"].get(seed, {})
        pairs += [(f"run {seed} {k}", run.get(k), v) for k, v in numbers.items()]
    pairs.append(("run-to-run gap", document["seed_gap"], GOLDEN["seed_gap"]))
    return [
        f"{name} ({ours if ours is None else round(ours, 4)} vs {lesson})"
        for name, ours, lesson in pairs
        if ours is None or round(ours, 4) != lesson
    ]
