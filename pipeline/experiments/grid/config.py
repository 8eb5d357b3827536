"""The next lesson's grid's settings (params.yaml's `grid:` group), their ranges and
checks."""

from __future__ import annotations

from dataclasses import dataclass, field

from pipeline.config.cells import GridCell, check_cells, variant_cells
from pipeline.config.intervals import EPOCHS, POSITIVE, Range, at_least
from pipeline.core.kinds import VARIANTS

PATHS = {
    "grid": "reports/grid",  # one <task>-<variant>.json per cell of the next lesson
    "next_lesson": "reports/next_lesson",  # the figures of report.md's "The next lesson"
}
FOLDERS = ("grid", "next_lesson")  # the paths that are folders
REPLACED = ("cells",)  # the configured cells replace the default ones
TRACKING_SUFFIX = "-next-lesson"  # the cells' MLflow experiment: <tracking.experiment><this>


def grid_cells() -> dict[str, GridCell]:
    """The grid's default cells: each task module's GRID_VARIANTS (pipeline/tasks/),
    which conf/grid/lesson.yaml lists as well (DVC composes conf/ alone)."""
    return variant_cells("GRID_VARIANTS")


@dataclass
class Settings:
    """The next lesson's grid (pipeline/experiments/grid/cell.py): task x model cells,
    each a DVC stage grid@<name> (dvc.yaml's foreach over `cells`)."""

    cells: dict[str, GridCell] = field(default_factory=grid_cells)
    seeds: int = 20  # per cell; 1000 for the docs' distributions
    solved: float = 0.95  # a seed solves the task at this held-out accuracy
    shuffle_seed: int = 0  # the shuffled-steps control's permutations
    faithfulness_seeds: int = 100  # each cell's first seeds through the faithfulness battery
    # The cells' training: the lesson's baseline, set here rather than read from train.
    # So an experiment on the lesson's training (`-S train.lr=0.3`) leaves the grid as
    # it is; `-S grid.lr=0.3` moves the grid's.
    epochs: int = 200
    lr: float = 0.6


RANGES = {
    "seeds": at_least(2),
    "solved": Range(0, 1, open_low=True),
    "faithfulness_seeds": at_least(1),
    "epochs": EPOCHS,
    "lr": POSITIVE,
}
RELATIVE: dict[str, str] = {}


def check_settings(cfg) -> None:
    """Each cell: a known task and model variant, under the key <task>-<variant>."""
    check_cells("grid", cfg.grid.cells, list(VARIANTS))
