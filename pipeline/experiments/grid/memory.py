"""The memory terms of the grid's cells: each a stage of its own (grid@<cell>), the
study's machinery then its tests."""

from __future__ import annotations

from pipeline import tasks
from pipeline.config.bounds import MemoryTerm, sequences_term
from pipeline.config.cells import cell_config
from pipeline.config.schema import Config
from pipeline.memory.battery import battery_terms, per_example_scores_term, sanity_terms
from pipeline.memory.sizes import MAPPED_BATTERY
from pipeline.memory.study import study_terms


def grid_cell_terms(cfg: Config, task: str, variant: str) -> list[MemoryTerm]:
    """A grid cell (pipeline/experiments/grid/cell.py): the study on grid.seeds seeds,
    beside it the shuffled control of an order task, then the battery."""
    cell = cell_config(cfg, task, variant, cfg.grid)
    sets = 2 if getattr(tasks.task_module(task), "ORDERED", False) else 1
    battery_runs = min(cfg.grid.faithfulness_seeds, cfg.grid.seeds)
    key = (
        "grid.seeds" if cfg.grid.seeds <= cfg.grid.faithfulness_seeds else "grid.faithfulness_seeds"
    )
    return [
        sequences_term(cell),
        *study_terms(cell, cfg.grid.seeds, "grid.seeds", sets),
        *battery_terms(cell, battery_runs, key, MAPPED_BATTERY),
        per_example_scores_term(cell, battery_runs, key, phase="battery"),
        *sanity_terms(cell, battery_runs, key),
    ]


def stage_terms(cfg: Config) -> dict[str, list[MemoryTerm]]:
    """Each cell's stage's terms, by its name in dvc.yaml (grid@<cell>); the
    next_lesson stage only reads the cells' files."""
    return {
        f"grid@{name}": grid_cell_terms(cfg, cell.task, cell.variant)
        for name, cell in cfg.grid.cells.items()
    }
