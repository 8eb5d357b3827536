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


# The tasks in the order the grid lists its cells: heads (two_patterns) before order
# (absolute and relative position), then the tasks no cell of these names.
TASK_ORDER = ("two_patterns", "first_half", "rise", "suppressor")


def grid_cells() -> dict[str, GridCell]:
    """The grid's default cells: each task module's GRID_VARIANTS (pipeline/tasks/),
    heads before order (TASK_ORDER), as conf/grid/lesson.yaml lists them."""
    cells = variant_cells("GRID_VARIANTS")
    rank = {task: place for place, task in enumerate(TASK_ORDER)}
    return dict(sorted(cells.items(), key=lambda item: rank.get(item[1].task, len(rank))))


@dataclass
class Settings:
    """The next lesson's grid (docs/next_lesson.md): one DVC stage grid@<name> per cell,
    each a seed distribution. Heads: the two-patterns task; order: absolute and
    relative position. A variant is a name of pipeline/core/kinds.py.
    1000 seeds per cell for the docs' distributions: dvc exp run -S grid.seeds=1000"""

    cells: dict[str, GridCell] = field(default_factory=grid_cells)
    seeds: int = 20  # per cell
    solved: float = 0.95  # a seed solves the task at this held-out accuracy
    shuffle_seed: int = 0  # the shuffled-steps control's permutations
    faithfulness_seeds: int = 100  # the first seeds of each cell scored by the faithfulness battery
    # The cells' training, the lesson's baseline (train.epochs and train.lr) set here:
    # `dvc exp run -S train.lr=0.3` leaves the grid as it is; -S grid.lr=0.3 moves it.
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
