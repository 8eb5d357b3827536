"""The abstraction stage's settings (params.yaml's `abstraction:` group), their ranges
and checks."""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.config.intervals import MAX_EPOCHS, POSITIVE, Range, at_least, check

PATHS = {"abstraction": "reports/abstraction"}  # paths.abstraction: abstraction.json
FOLDERS = ("abstraction",)  # the paths that are folders


@dataclass
class Settings:
    """Causal abstraction (docs/field.md): interchange interventions on the context
    vector of the study's first runs, trained and at their init, with a linear map
    (DAS's rotation) and a non-linear one (rotation + RevNet coupling blocks).
    1000 seeds for the docs' distributions: dvc exp run -S abstraction.seeds=1000"""

    seeds: int = 20  # the study's first runs (at most study.seeds)
    dims: int = 1  # aligned coordinates of the context vector (d_v = 3)
    hidden: int = 8  # the non-linear map's coupling MLPs' width
    blocks: int = 2  # its additive coupling blocks
    pairs: int = 256  # (base, source) training pairs, drawn from the training split
    pair_seed: int = 0
    map_seed: int = 0  # each run's map init draws from default_rng([map_seed, run seed])
    epochs: int = 200  # full-batch Adam steps on the pairs
    lr: float = 0.05
    implements: float = 0.9  # an IIA this high counts as "implements the algorithm"


RANGES = {
    "seeds": at_least(1),
    "hidden": at_least(1),
    "blocks": at_least(1),
    "pairs": at_least(1),
    "epochs": Range(1, MAX_EPOCHS, integer=True, why="each step of the maps' fit runs in turn"),
    "lr": POSITIVE,
    "implements": Range(0, 1, open_low=True),
}
RELATIVE = {"dims": "an integer in 1..model.d_v-1"}


def check_settings(cfg) -> None:
    """The aligned subspace of the context vector: at least one axis, not all of them."""
    dims, d_v = cfg.abstraction.dims, cfg.model.d_v
    check(1 <= dims < d_v, "abstraction.dims", f"must be in 1..{d_v - 1} (model.d_v - 1)", dims)
