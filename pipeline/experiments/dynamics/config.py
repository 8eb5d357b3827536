"""The dynamics stage's settings (params.yaml's `dynamics:` group), their ranges and
checks."""

from __future__ import annotations

from dataclasses import dataclass, field

from pipeline.config.intervals import FRACTION, Range, at_least, check

PATHS = {"dynamics": "reports/dynamics"}  # paths.dynamics: dynamics.json
FOLDERS = ("dynamics",)  # the paths that are folders


@dataclass
class Settings:
    """The mechanism over training (docs/dynamics.md), read from the seed study's
    per-epoch numbers (reports/study/dynamics.parquet), and two trainings of its own:
    the last-bit flip and the phase diagram."""

    found: float = 0.9  # hit@1 (and held-out accuracy) at or above this counts as found
    predict_epochs: list[int] = field(default_factory=lambda: [0, 5])  # the predictors' epochs
    claim_resamples: int = 1000  # studies of k seeds drawn per k
    claim_seed: int = 0
    flip_parameter: int = 0  # the initial parameter whose last bit flips (its flat index)
    flip_seeds: int = 200  # the study's first runs trained again with the bit flipped
    phase_lrs: list[float] = field(default_factory=lambda: [0.15, 0.3, 0.6, 1.2, 2.4])
    phase_init_scales: list[float] = field(default_factory=lambda: [0.1, 0.3, 0.9, 1.8, 3.6])
    phase_seeds: int = 20  # seeds per phase cell: 200 for the docs' diagram
    # the two cells of the grid whose paired seeds test "two heads beat one"
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
    "predict_epochs": "each at most train.epochs",
    "flip_parameter": "below the model's parameter count",
    "flip_seeds": "at most study.seeds",
}


def check_settings(cfg) -> None:
    """The predictors' epochs lie within training, the flipped runs within the study;
    the grid's two cells exist."""
    epochs = cfg.train.epochs
    check(
        cfg.dynamics.flip_seeds <= cfg.study.seeds,
        "dynamics.flip_seeds",
        f"must be at most study.seeds ({cfg.study.seeds})",
        cfg.dynamics.flip_seeds,
    )
    check(
        all(epoch <= epochs for epoch in cfg.dynamics.predict_epochs),
        "dynamics.predict_epochs",
        f"each must be at most train.epochs ({epochs})",
        list(cfg.dynamics.predict_epochs),
    )
    for key in ("two_heads", "one_head"):
        name = getattr(cfg.dynamics, key)
        check(
            name in cfg.grid.cells,
            f"dynamics.{key}",
            f"must name a grid cell ({', '.join(cfg.grid.cells)})",
            name,
        )
