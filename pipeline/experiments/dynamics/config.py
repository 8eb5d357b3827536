"""The dynamics stage's settings (params.yaml's `dynamics:` group), their ranges and
checks."""

from __future__ import annotations

from dataclasses import dataclass, field

from pipeline.config.intervals import FRACTION, Range, at_least

PATHS = {"dynamics": "reports/dynamics"}  # paths.dynamics: dynamics.json
FOLDERS = ("dynamics",)  # the paths that are folders


@dataclass
class Settings:
    """The mechanism over training (docs/dynamics.md), read from the seed study's
    per-epoch numbers (reports/study/dynamics.parquet), and two trainings of its own:
    the last-bit flip and the phase diagram."""

    found: float = 0.9  # hit@1 (and held-out accuracy) at or above this counts as found
    # the predictors' epochs (those past train.epochs are left out)
    predict_epochs: list[int] = field(default_factory=lambda: [0, 5])
    claim_resamples: int = 1000  # studies of k seeds drawn per k
    claim_seed: int = 0
    flip_parameter: int = 0  # the initial parameter whose last bit flips (its flat index)
    flip_seeds: int = 200  # the study's first runs trained again (all, where it has fewer)
    phase_lrs: list[float] = field(default_factory=lambda: [0.15, 0.3, 0.6, 1.2, 2.4])
    phase_init_scales: list[float] = field(default_factory=lambda: [0.1, 0.3, 0.9, 1.8, 3.6])
    phase_seeds: int = 20  # seeds per phase cell: 200 for the docs' diagram
    # the two cells of the grid whose paired seeds test "two heads beat one" (the claim
    # is left out where grid.cells lacks either)
    two_heads: str = "two_patterns-multihead2"
    one_head: str = "two_patterns-lesson"


RANGES = {
    "found": FRACTION,
    "predict_epochs": Range(0, integer=True, each="epoch"),
    "claim_resamples": at_least(1),
    "flip_parameter": at_least(0),
    "flip_seeds": at_least(1),
    "phase_lrs": Range(0, 100, open_low=True, each="lr"),
    "phase_init_scales": Range(0, 100, open_low=True, each="scale"),
    "phase_seeds": at_least(2),
}
RELATIVE = {
    "flip_parameter": "below the model's parameter count",
}


def check_settings(cfg) -> None:
    """Nothing across keys: a predictor's epoch past train.epochs is left out, the
    flipped runs are the study's first, and the two-heads claim is left out where the
    grid lacks either cell, so a smaller experiment on train.*, study.* or grid.cells
    needs no change here."""
